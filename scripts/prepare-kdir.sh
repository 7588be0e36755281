#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# prepare-kdir.sh KDIR
#
# A distribution's kernel headers (linux-headers-<release>) carry the
# kernel's .config and Module.symvers but not what a Rust module is compiled
# against: the kernel crate's metadata (rust/*.rmeta), the target spec and
# bindgen's parameters; nor the net/sunrpc/xprtrdma sources rpcrdma.ko is
# built from. This script regenerates them once per kernel release from the
# same version's source package (Debian: linux-source-7.3), with the
# headers' .config and the kernel's own toolchain, into a cache dir outside
# the headers, and prints "KDIR KSRC MAKEVARS..." for scripts/build-module.sh.
#
# It refuses, saying what to install or change, when anything would give a
# module the running kernel does not load: no CONFIG_RUST or rpcrdma as a
# module; a rustc other than the one the kernel was built with (v0 symbol
# names carry a hash of rustc's full version string); bindgen or libclang
# missing or another version; a source package of another version; or
# regenerated Rust exports that differ from the headers' Module.symvers.

. "$(dirname "$0")/lib.sh"

HDR=$(readlink -f "${1:?usage: prepare-kdir.sh KDIR}")
cfg() { sed -n "s/^$1=//p" "$HDR/.config" | sed 's/^"\(.*\)"$/\1/'; }

[ -f "$HDR/.config" ] || die "$HDR has no .config: not a kernel build or headers dir (KDIR=)"
[ -f "$HDR/Module.symvers" ] || die "$HDR has no Module.symvers: install the kernel's complete headers package"
KREL=$(cat "$HDR/include/config/kernel.release" 2>/dev/null) ||
	die "$HDR has no include/config/kernel.release"
[ "$(cfg CONFIG_RUST)" = y ] ||
	die "kernel $KREL is built without CONFIG_RUST: no Rust module can run on it; use FLAVOUR=c or a Rust-enabled kernel"
[ "$(cfg CONFIG_SUNRPC_XPRT_RDMA)" = m ] ||
	die "kernel $KREL has CONFIG_SUNRPC_XPRT_RDMA=$(cfg CONFIG_SUNRPC_XPRT_RDMA): rpcrdma must be a module to be replaced"

# The toolchain the kernel was built with, from its own .config.
tc=$(bash "$TOP/scripts/kernel-toolchain.sh" "$HDR") || exit 1
eval "$tc"

# tree KEY: the cache dir of this kernel's regenerated tree, keyed by its
# .config, its source's version and the toolchain.
tree() {
	KEY=$(cat "$HDR/.config" <(echo "$1 $RUSTC_VERSION_TEXT $BINDGEN_VERSION_TEXT") | sha256sum | cut -c1-12)
	K=${RPCRDMA_KERNELS:-$CACHE/kernels}/$KREL-$KEY
}
emit() { echo "$K/build $K/src ${TOOLCHAIN_MAKEVARS[*]}"; }
# Gate, on every build: the Rust symbols the regenerated tree exports must
# be those of the kernel the headers describe.
exports_gate() {
	local ours theirs
	ours=$(sed -nE 's/^EXPORT_SYMBOL_RUST_GPL\(([A-Za-z0-9_]+)\);$/\1/p' "$K"/build/rust/exports_*_generated.h | sort -u)
	theirs=$(awk '$2 ~ /^(_R|rust_)/ { print $2 }' "$HDR/Module.symvers" | sort -u)
	if [ -z "$ours" ] || [ "$ours" != "$theirs" ]; then
		diff <(echo "$ours") <(echo "$theirs") | head -n 10 >&2 || true
		die "the Rust exports regenerated in $K/build ($(echo "$ours" | grep -c .)) differ from $HDR/Module.symvers ($(echo "$theirs" | grep -c .)): another rustc or kernel source than the kernel's (difference above)"
	fi
	say "kernel $KREL: $(echo "$ours" | wc -l) Rust exports regenerated, equal to the headers' Module.symvers" >&2
}
# cached: a tree made before is used as it is (the script ends here).
cached() {
	[ -f "$K/.complete" ] || return 0
	# Trees made before the mark existed get it (their key holds it).
	[ -z "$want_ver" ] || [ -f "$K/.headers-version" ] || echo "$want_ver" >"$K/.headers-version"
	say "kernel $KREL: Rust metadata and sources regenerated before, in $K (cached)" >&2
	exports_gate
	emit
	exit 0
}

series=$(sed -E 's/^([0-9]+\.[0-9]+).*/\1/' <<<"$KREL")
# Debian: the source package must be the kernel package's own version.
pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true; }
want_ver=$(pkgver "linux-headers-$KREL")
# A Debian kernel's tree is keyed by its headers' version, which its source
# must have: a tree made before serves without any source, so that the
# kernel's rebuilds (this package's upgrade, DKMS at boot) keep working
# once linux-source-$series has moved on to a newer point release.
if [ -n "$want_ver" ] && [ -z "${RPCRDMA_KERNEL_SOURCE:-}" ]; then
	tree "$want_ver"
	cached
fi

# The source: the same version's source package, as a tarball or a tree.
SRC_ARCHIVE=${RPCRDMA_KERNEL_SOURCE:-}
if [ -z "$SRC_ARCHIVE" ]; then
	for f in /usr/src/linux-source-$series.tar.xz /usr/src/linux-source-$series.tar.zst \
		/usr/src/linux-source-$series.tar.bz2 /usr/src/linux-source-$series; do
		[ -e "$f" ] && { SRC_ARCHIVE=$f; break; }
	done
fi
[ -n "$SRC_ARCHIVE" ] ||
	die "no kernel source for $KREL: install linux-source-$series of the kernel's version (Debian: apt install linux-source-$series/trixie-backports), or set RPCRDMA_KERNEL_SOURCE= to a source tree or tarball"

have_ver=$(dpkg-query -S "$SRC_ARCHIVE" 2>/dev/null | cut -d: -f1 | head -n 1 | xargs -r -I{} dpkg-query -W -f='${Version}' {} 2>/dev/null || true)
if [ -n "$want_ver" ] && [ -n "$have_ver" ] && [ "$want_ver" != "$have_ver" ]; then
	die "kernel $KREL is version $want_ver but $SRC_ARCHIVE is $have_ver: install the matching source (apt install linux-source-$series=$want_ver) or boot the kernel that matches"
fi
srcver=${have_ver:-$(stat -c %s-%Y "$SRC_ARCHIVE")}
tree "$srcver"
cached

# The tree takes about 2 GB (2058 MB for 7.3.4's amd64 flavour, 1838 MB for
# its cloud flavour, 2026-12-05): refuse before unpacking into a file
# system that cannot hold it, rather than fail half-way and leave a full
# disk behind. RPCRDMA_KERNEL_TREE_MB: the space required, in MB.
need_mb=${RPCRDMA_KERNEL_TREE_MB:-2300}
mkdir -p "$(dirname "$K")"
rm -rf "$K"
free_mb=$(df -Pm "$(dirname "$K")" | awk 'NR == 2 { print $4 }')
[ "${free_mb:-0}" -ge "$need_mb" ] ||
	die "kernel $KREL: regenerating its Rust metadata needs about $need_mb MB in $(dirname "$K"), which has ${free_mb:-no} MB free: free some space there (the trees of kernels no longer installed go by themselves; each release keeps one)"
say "kernel $KREL: regenerating its Rust metadata from $SRC_ARCHIVE ($srcver) into $K (once per release, ~2 min, about 2 GB)" >&2
mkdir -p "$K/build"
if [ -d "$SRC_ARCHIVE" ]; then
	ln -s "$SRC_ARCHIVE" "$K/src"
else
	mkdir -p "$K/src.tmp"
	run_logged kernel-source-unpack tar -C "$K/src.tmp" --strip-components=1 -xf "$SRC_ARCHIVE" >&2
	mv "$K/src.tmp" "$K/src"
fi
src_kver=$(make -s -C "$K/src" kernelversion 2>/dev/null)
[ "${KREL#"$src_kver"}" != "$KREL" ] ||
	die "$SRC_ARCHIVE is kernel $src_kver, the headers are $KREL: install the source of the same version"

cp "$HDR/.config" "$K/build/.config"
KMAKE=(make -C "$K/src" O="$K/build" KERNELRELEASE="$KREL" "${TOOLCHAIN_MAKEVARS[@]}")
run_logged kernel-prepare-config "${KMAKE[@]}" olddefconfig >&2
# The regenerated config must be the kernel's: a difference means another
# toolchain or source (the compiler's version text alone may differ between
# Debian point releases of the same compiler, which does not change the ABI).
d=$(diff <(grep -v '^CONFIG_CC_VERSION_TEXT=' "$HDR/.config" | grep '^CONFIG_') \
	<(grep -v '^CONFIG_CC_VERSION_TEXT=' "$K/build/.config" | grep '^CONFIG_') || true)
[ -z "$d" ] || die "the kernel's .config changes when regenerated here, so this toolchain or source is not the kernel's:
$d"
run_logged kernel-rustavailable "${KMAKE[@]}" rustavailable >&2
progress_logged kernel-modules-prepare "${KMAKE[@]}" -j"$JOBS" modules_prepare >&2

exports_gate
# modpost checks the module against the real kernel's exports; module BTF
# is generated against the real kernel's vmlinux when the headers have it.
cp "$HDR/Module.symvers" "$K/build/Module.symvers"
[ -f "$HDR/vmlinux" ] && ln -sf "$HDR/vmlinux" "$K/build/vmlinux"
# The headers' Debian version the tree was made for, which the Debian
# package's kernel-support and cache pruning read (the key is a hash).
[ -z "$want_ver" ] || echo "$want_ver" >"$K/.headers-version"
touch "$K/.complete"
emit
