#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Idempotent set-up of everything the workbench needs on a Debian 12 host:
# apt packages (pinned to bookworm), the Debian linux-source-7.3 tarball
# extracted into the cache, bindgen-cli into the cache's tool dir and the
# rust-src component. Each step is skipped when its result is already there.

. "$(dirname "$0")/lib.sh"

HOST_PKGS="clang-19 lld-19 llvm-19 libclang-19-dev flex bison bc libelf-dev
libssl-dev debootstrap cpio kmod make gcc libc6-dev python3 rsync zstd xz-utils
dwarves qemu-system-x86 qemu-system-data git ca-certificates debian-archive-keyring dkms
patch busybox-static python3-ply python3-git"

BINDGEN_VERSION=0.72.1
BACKPORTS_LIST=/etc/apt/sources.list.d/rpcrdma-rs-trixie-backports.sources
BACKPORTS_PIN=/etc/apt/preferences.d/rpcrdma-rs-trixie-backports

need_root() { [ "$(id -u)" = 0 ] || die "setup needs root (apt-get); run as root or install: $HOST_PKGS"; }

apt_updated=0
apt_update() {
	[ $apt_updated = 1 ] && return
	run_logged apt-update apt-get update
	apt_updated=1
}

setup_packages() {
	local missing=()
	for p in $HOST_PKGS; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
	done
	if [ ${#missing[@]} = 0 ]; then
		say "host packages: present"
		return
	fi
	need_root
	say "host packages: installing ${missing[*]}"
	apt_update
	run_logged apt-install env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -t bookworm --no-install-recommends "${missing[@]}"
}

# linux-source-7.3 is in trixie-backports only. The source is added with a
# pin of priority 1, so nothing is ever installed or upgraded from it by
# accident; we only 'apt-get download' the one package.
setup_kernel_source() {
	local src; src=$(kernel_src)
	if [ -f "$src/Makefile" ] && [ -f "$src/.extracted" ]; then
		say "kernel source: $src (cached, $(make -s -C "$src" kernelversion 2>/dev/null))"
		return
	fi
	need_root
	if [ ! -f "$BACKPORTS_LIST" ]; then
		cat >"$BACKPORTS_LIST" <<-EOT
		Types: deb
		URIs: http://deb.debian.org/debian
		Suites: trixie-backports
		Components: main
		Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
		EOT
		cat >"$BACKPORTS_PIN" <<-EOT
		Package: *
		Pin: release n=trixie-backports
		Pin-Priority: 1
		EOT
		apt_updated=0
	fi
	apt_update
	local dl=$CACHE/deb
	mkdir -p "$dl"
	if ! ls "$dl"/linux-source-${KVER_PKG}_*.deb >/dev/null 2>&1; then
		say "kernel source: downloading linux-source-$KVER_PKG (~170 MB)"
		(cd "$dl" && run_logged apt-download apt-get download -t trixie-backports "linux-source-$KVER_PKG")
	fi
	say "kernel source: extracting into $src"
	rm -rf "$CACHE/src/deb" "$src"
	mkdir -p "$CACHE/src/deb"
	run_logged deb-extract dpkg-deb -x "$(ls "$dl"/linux-source-${KVER_PKG}_*.deb | tail -n 1)" "$CACHE/src/deb"
	local tarball; tarball=$(ls "$CACHE"/src/deb/usr/src/linux-source-$KVER_PKG.tar.* | head -n 1)
	run_logged kernel-untar tar -C "$CACHE/src" -xf "$tarball"
	rm -rf "$CACHE/src/deb"
	[ -f "$src/Makefile" ] || die "kernel source: $src/Makefile missing after extraction"
	touch "$src/.extracted"
	say "kernel source: $(make -s -C "$src" kernelversion)"
}

setup_rust() {
	command -v rustup >/dev/null || die "rustup not found: install Rust with rustup first"
	if ! rustup component list --installed 2>/dev/null | grep -q '^rust-src'; then
		run_logged rust-src rustup component add rust-src
	fi
	say "rust: $(rustc --version), rust-src present"
	if [ -x "$TOOLS/bin/bindgen" ] && "$TOOLS/bin/bindgen" --version | grep -q " $BINDGEN_VERSION"; then
		say "bindgen: $("$TOOLS/bin/bindgen" --version) (cached)"
		return
	fi
	say "bindgen: building bindgen-cli $BINDGEN_VERSION (~2 min)"
	progress_logged bindgen-install cargo install --locked bindgen-cli \
		--version "$BINDGEN_VERSION" --root "$TOOLS"
	say "bindgen: $("$TOOLS/bin/bindgen" --version)"
}

case "${1:-all}" in
	packages) setup_packages ;;
	source) setup_kernel_source ;;
	rust) setup_rust ;;
	all) setup_packages; setup_kernel_source; setup_rust ;;
	*) die "usage: $0 [packages|source|rust|all]" ;;
esac
