#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-module.sh FLAVOUR [NAME]   (FLAVOUR: c | rust)
#
# Builds rpcrdma.ko of the given flavour out of tree against KDIR (a kernel
# build tree, or a distribution's headers: scripts/prepare-kdir.sh then
# regenerates what they lack) from the xprtrdma sources of KSRC, and puts
# it at build/NAME/rpcrdma.ko (build-debug/NAME for KERNEL_VARIANT=debug; NAME defaults to FLAVOUR; a variant built
# with other MODULE_MAKE_ARGS gets its own NAME). KDIR defaults to the
# cached test kernel, KSRC to KDIR's source tree. Compiler and flags always
# come from the kernel's own config (scripts/kernel-toolchain.sh).
# The kernel's C files are staged as symlinks in the cache, never copied
# into this repository; those that the module fixes change
# (scripts/module-patches/) are staged as patched copies.

. "$(dirname "$0")/lib.sh"

FLAVOUR=${1:?usage: build-module.sh c|rust [NAME]}
NAME=${2:-$FLAVOUR}
case "$FLAVOUR" in c|rust) ;; *) die "flavour must be c or rust, not '$FLAVOUR'";; esac
KDIR=${KDIR:-$(kernel_build)}
[ -f "$KDIR/Module.symvers" ] || die "KDIR=$KDIR is not a built kernel tree (no Module.symvers)"
# A distribution's headers lack the Rust metadata and the xprtrdma sources:
# regenerate them once per kernel release from its source package.
if [ ! -f "$KDIR/rust/bindings/bindings_generated.rs" ] && [ -z "${KSRC:-}" ]; then
	prep=$(bash "$TOP/scripts/prepare-kdir.sh" "$KDIR") || exit 1
	read -r KDIR KSRC _ <<<"$prep"
fi
# The xprtrdma C sources: a build tree made with O= links its source tree
# as KDIR/source; an in-place build tree is its own source.
if [ -z "${KSRC:-}" ]; then
	for KSRC in "$KDIR/source" "$KDIR"; do
		[ -f "$KSRC/net/sunrpc/xprtrdma/svc_rdma_sendto.c" ] && break
	done
fi
XPRT=$KSRC/net/sunrpc/xprtrdma
[ -f "$XPRT/Makefile" ] || die "KSRC=$KSRC has no net/sunrpc/xprtrdma: set KSRC= to the kernel source tree"
# A kernel with rpcrdma built in has no module to replace: kbuild would
# build nothing and say nothing (rpcrdma.o in the kernel's obj-y).
grep -q '^CONFIG_SUNRPC_XPRT_RDMA=m' "$KDIR/.config" ||
	die "KDIR=$KDIR does not build rpcrdma as a module (CONFIG_SUNRPC_XPRT_RDMA=m): there is no module to replace"
if [ "$FLAVOUR" = rust ]; then
	grep -q '^CONFIG_RUST=y' "$KDIR/.config" || die "KDIR=$KDIR is not built with CONFIG_RUST=y"
	[ -f "$KDIR/rust/bindings/bindings_generated.rs" ] || die "KDIR=$KDIR lacks Rust metadata (rust/bindings)"
	# The Rust Send path reaches reply pages through the direct map (Kconfig).
	! grep -q '^CONFIG_HIGHMEM=y' "$KDIR/.config" || die "KDIR=$KDIR has CONFIG_HIGHMEM: the Rust flavour does not support highmem pages; use FLAVOUR=c"
fi
# Compiler, linker, rustc and bindgen: the kernel's own (from its .config).
tc=$(bash "$TOP/scripts/kernel-toolchain.sh" "$KDIR") || exit 1
eval "$tc"

kkey=$(printf "%s %s" "$KDIR" "$TOP" | sha256sum | cut -c1-12)
STAGE=$CACHE/modbuild/$NAME-$kkey
mkdir -p "$STAGE"
# One build of a stage at a time: make check builds some variants in the
# background ahead of the phases that build them again (then up to date).
exec 9>"$STAGE.lock"
flock 9
# Re-link on every build so added or removed files are followed; objects stay.
# The files the module fixes change are real files, left to
# module-patches.sh below.
find "$STAGE" -type l -delete
for f in "$XPRT"/*.c "$XPRT"/*.h; do [ -e "$STAGE/${f##*/}" ] || ln -s "$f" "$STAGE/"; done
ln -s "$XPRT/Makefile" "$STAGE/upstream.mk"
ln -s "$TOP/Kbuild" "$STAGE/Kbuild"
cp -as "$TOP/src" "$TOP/bindings" "$STAGE/"
# The fixes every build carries to the kernel's own C (scripts/module-patches/),
# on this build's copy of the files they change; named in modinfo's "fixes".
bash "$TOP/scripts/module-patches.sh" apply "$XPRT" "$STAGE" || exit 1

version=$(cat "$KDIR/include/config/kernel.release" 2>/dev/null || echo unknown)
# The git revision; a copy without git (DKMS) is named by dkms.conf's version.
rev=$(git -C "$TOP" describe --always --dirty 2>/dev/null ||
	sed -n 's/^PACKAGE_VERSION="\(.*\)"/v\1/p' "$TOP/dkms.conf")
say "rpcrdma.ko ($NAME): building against $KDIR"
say "rpcrdma.ko ($NAME): toolchain ${TOOLCHAIN_MAKEVARS[*]}"
# Its own top-level make: a make that called us (DKMS's make -jN) would
# hand down a jobserver it does not share with this command.
run_logged "module-$NAME" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$KDIR" M="$STAGE" "${TOOLCHAIN_MAKEVARS[@]}" -j"$JOBS" \
	RPCRDMA_FLAVOUR="$FLAVOUR" RPCRDMA_VERSION="$version-rs.$rev" ${MODULE_MAKE_ARGS:-} modules

OUT=$TOP/$MODULE_OUT/$NAME
mkdir -p "$OUT"
cp "$STAGE/rpcrdma.ko" "$OUT/rpcrdma.ko"
# The object list proves what the flavour links.
if [ "$FLAVOUR" = rust ]; then
	# Which of the Send path's C symbols the Rust crate defines itself.
	nm --defined-only "$STAGE/src/svc_rdma_sendto_rs.o" |
		sed -nE 's/^[0-9a-f]+ T (svc_rdma_[a-z_]+)$/\1/p' | sort >"$OUT/rust-symbols.txt"
	# Every function of the Rust object: failslab's stack filter confines
	# slab faults to calls made from these (tests/vm/guest/failslab.sh).
	# Names every object has (KASAN's asan.module_ctor) are left out.
	comm -23 <(nm --defined-only "$STAGE/src/svc_rdma_sendto_rs.o" |
		awk '$2 == "t" || $2 == "T" { print $3 }' | sort -u) \
		<(find "$STAGE" -name '*.o' ! -name svc_rdma_sendto_rs.o ! -name 'rpcrdma*.o' -print0 |
			xargs -0 nm --defined-only 2>/dev/null | awk '$2 == "t" || $2 == "T" { print $3 }' | sort -u) \
		>"$OUT/rust-text-symbols.txt"
fi
# The Send path's own functions in this flavour, for profiles (bench).
if [ "$FLAVOUR" = c ]; then
	nm --defined-only "$STAGE/svc_rdma_sendto.o" |
		awk '$2 == "t" || $2 == "T" { print $3 }' | grep -v '^asan\.' | sort -u >"$OUT/sendpath-symbols.txt"
else
	cp "$OUT/rust-text-symbols.txt" "$OUT/sendpath-symbols.txt"
	# The C shim's functions (the crate's static inlines and macros), and
	# those of the generic abstractions' helpers when the module has its
	# own (src/rust/helpers/; not against a kernel that has them).
	helpers=$STAGE/src/rust/helpers/helpers.o
	[ -f "$helpers" ] || helpers=
	nm --defined-only "$STAGE/src/svc_rdma_sendto_shim.o" ${helpers:+"$helpers"} |
		awk '$2 == "t" || $2 == "T" { print $3 }' | grep -v '^asan\.' | sort -u >"$OUT/shim-symbols.txt"
fi
# Text bytes of the Send path's objects (the profile's code-size table).
if [ "$FLAVOUR" = c ]; then
	size -A "$STAGE/svc_rdma_sendto.o"
else
	size -A "$STAGE/src/svc_rdma_sendto_rs.o" "$STAGE/src/svc_rdma_sendto_shim.o" ${helpers:+"$helpers"}
fi | awk '/^[^ ]/ && /:/ { obj = $1 } $1 ~ /^\.text/ { n[obj] += $2 } END { for (o in n) print o, n[o] }' |
	sed 's|^.*/||; s|:||' | sort >"$OUT/text-bytes.txt"
tr ' ' '\n' <"$STAGE/rpcrdma.mod" | sed '/^$/d' | xargs -n1 basename >"$OUT/objects.txt"
# The headers' Debian version this module was built against: the Debian
# package's kernel hook rebuilds the module when the same release's headers
# come again in another version (a kernel rebuilt in place: a new Debian
# revision, the same release name; no MODVERSIONS would catch a layout
# change, and DKMS keeps a module it has already installed).
headers_ver=$(dpkg-query -W -f='${Version}' "linux-headers-$version" 2>/dev/null || true)
if [ -n "$headers_ver" ]; then
	mkdir -p "$CACHE/built-against"
	echo "$headers_ver" >"$CACHE/built-against/$version"
fi
say "rpcrdma.ko ($NAME): $OUT/rpcrdma.ko, version $(modinfo -F version "$OUT/rpcrdma.ko"), fixes: $(modinfo -F fixes "$OUT/rpcrdma.ko" | sed 's/:.*//' | paste -sd' ')"
