#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# debian-env.sh env|kernel|chroot CMD...
#
# Debian's stock 7.3 kernel as a target, from Debian's own packages only:
#   env     a Debian trixie system (chroot in the cache) as a server running
#           that kernel has it: its modules (linux-modules-<release>; no
#           vmlinuz, the VMs boot it) and headers, kmod, and the tools
#           a Debian developer builds and tests the package with (debhelper,
#           dh-dkms, lintian, autopkgtest). The module's toolchain (rustc,
#           bindgen, dkms, ...) is not there: installing the package
#           (debian/control's Depends) brings it. Prints its dir
#   minroot a minimal trixie server with trixie-backports and the kernel's
#           headers only (apt, Recommends on), for proving the package's
#           Depends; prints its dir
#   kernel  Debian's unmodified vmlinuz and modules tree from the
#           linux-image package, plus a small initramfs that loads the
#           virtio/9p modules a 9p root needs; prints its dir
#   chroot CMD...  runs CMD inside the build environment (proc, sys and dev
#           bound in a private mount namespace, so the host is untouched);
#           DEBIAN_ENV=<dir printed by env> skips looking it up (~2 s)
# The target is the kernel that trixie-backports' linux-image-amd64 depends
# on; every cache dir is keyed by that package version and this script.

. "$(dirname "$0")/lib.sh"

SUITE=trixie
MIRROR=http://deb.debian.org/debian
# Besides linux-headers-<release> and linux-modules-<release> (the kernel's
# modules, so that DKMS runs depmod and modinfo sees which rpcrdma.ko is in
# force): what the package is built and tested with.
# Nothing of the module's own toolchain: `apt install ./rpcrdma-rs-dkms_*.deb`
# must bring that (scripts/debian-check.sh checks it is absent before).
ENV_PKGS="kmod build-essential debhelper dh-dkms dpkg-dev lintian autopkgtest"
# Modules the initramfs loads so that Debian's kernel can mount a 9p root.
INITRAMFS_MODULES="9pnet_virtio 9p"
# Cache keys: the build environment changes with the package list, the
# kernel dir with this script's initramfs part.
ENV_KEY=$(echo "$SUITE $ENV_PKGS linux-headers linux-modules" | sha256sum | cut -c1-8)
MINROOT_KEY=$(sed -n '/^minimal_root()/,/^}/p' "$0" | sha256sum | cut -c1-8)
KERNEL_KEY=$(sed -n '/^debian_kernel()/,/^}/p' "$0" | cat - <(echo "$INITRAMFS_MODULES") | sha256sum | cut -c1-8)

# The target kernel, as the host's apt sees trixie-backports (scripts/setup.sh
# adds that source with pin priority 1): its version and release name.
target() {
	local deps
	deps=$(apt-cache show "linux-image-amd64/$SUITE-backports" 2>/dev/null |
		sed -n 's/^Depends: //p' | head -n 1)
	DEB_VERSION=$(apt-cache show "linux-image-amd64/$SUITE-backports" 2>/dev/null |
		sed -n 's/^Version: //p' | head -n 1)
	DEB_KREL=$(grep -oE 'linux-image-[0-9][^ ,]*' <<<"$deps" | head -n 1 | sed 's/^linux-image-//')
	[ -n "$DEB_VERSION" ] && [ -n "$DEB_KREL" ] ||
		die "cannot find linux-image-amd64 in $SUITE-backports: run scripts/setup.sh (it adds that source)"
}

# in_chroot DIR CMD...: CMD in DIR with /proc, /sys, /dev bound, privately.
in_chroot() {
	local r=$1
	shift
	unshare -m -- bash -c 'r=$1; shift
		mount -t proc proc "$r/proc" && mount --rbind /sys "$r/sys" &&
		mount --rbind /dev "$r/dev" && mount -t tmpfs tmpfs "$r/tmp" &&
		exec chroot "$r" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
			LANG=C.UTF-8 DEBIAN_FRONTEND=noninteractive "$@"' bash "$r" "$@"
}

# sources DIR: trixie, its updates and backports, as a server taking its
# kernel from trixie-backports has them.
sources() {
	cat >"$1/etc/apt/sources.list.d/debian.sources" <<-EOT
	Types: deb
	URIs: $MIRROR
	Suites: $SUITE $SUITE-updates $SUITE-backports
	Components: main
	Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
	EOT
	rm -f "$1/etc/apt/sources.list"
}

# bootstrap DIR LOG WHAT: a trixie minbase in DIR (made anew), its apt
# sources as a server's (sources), its package lists fetched; LOG names the
# logs, WHAT the progress line.
bootstrap() {
	[ "$(id -u)" = 0 ] || die "debootstrap needs root"
	rm -rf "$1"
	mkdir -p "$1"
	say "$3" >&2
	progress_logged "$2-debootstrap" debootstrap --variant=minbase "$SUITE" "$1" "$MIRROR" >&2
	sources "$1"
	run_logged "$2-apt-update" in_chroot "$1" apt-get update >&2
}

# The environment: a trixie server with its kernel's headers, plus the
# packaging tools; all Debian's.
build_env() {
	target
	local r=$CACHE/debian/env-$SUITE-$DEB_VERSION-$ENV_KEY
	if [ -f "$r/.complete" ]; then
		say "Debian build environment: $r (cached)" >&2
		echo "$r"
		return
	fi
	bootstrap "$r" debian "Debian build environment: debootstrap $SUITE into $r (~1 min)"
	say "Debian build environment: installing linux-headers-$DEB_KREL, linux-modules-$DEB_KREL, debhelper, dh-dkms, lintian, autopkgtest (~2 min)" >&2
	# shellcheck disable=SC2086 # the package list splits
	progress_logged debian-apt-install in_chroot "$r" apt-get install -y --no-install-recommends \
		$ENV_PKGS "linux-headers-$DEB_KREL" "linux-modules-$DEB_KREL" >&2
	in_chroot "$r" dpkg-query -W debhelper dh-dkms lintian "linux-headers-$DEB_KREL" >"$r/.versions"
	touch "$r/.complete"
	say "Debian build environment: ready ($(tr '\t' ' ' <"$r/.versions" | paste -sd, | sed 's/,/, /g'))" >&2
	echo "$r"
}

# A minimal server: trixie's minbase with trixie-backports in its sources
# and the kernel's headers installed as an admin would (apt install
# linux-headers-<release>, Recommends on), nothing else. Installing the
# package into a copy of it proves that its Depends alone bring everything
# a DKMS build needs (the environment above has the packaging tools too,
# which bring a compiler, make, perl, python3...). Prints its dir.
minimal_root() {
	target
	local r=$CACHE/debian/minroot-$SUITE-$DEB_VERSION-$MINROOT_KEY
	if [ -f "$r/.complete" ]; then
		say "Debian minimal root: $r (cached)" >&2
		echo "$r"
		return
	fi
	bootstrap "$r" debian-minroot "Debian minimal root: debootstrap --variant=minbase $SUITE into $r, then linux-headers-$DEB_KREL (~1 min)"
	progress_logged debian-minroot-headers in_chroot "$r" apt-get install -y "linux-headers-$DEB_KREL" >&2
	in_chroot "$r" dpkg-query -W -f '${Package}\n' | wc -l >"$r/.packages"
	touch "$r/.complete"
	echo "$r"
}

# Debian's kernel, unmodified, for the test VMs: vmlinuz and the modules
# tree from the packages linux-image-<release> depends on, and an initramfs
# (busybox) that loads the modules a 9p root needs, then hands over to the
# rootfs's /sbin/rpcrdma-init as the test kernel's boot does.
debian_kernel() {
	target
	local r k deb m
	r=$(build_env)
	k=$CACHE/debian/kernel-$DEB_KREL-$DEB_VERSION-$KERNEL_KEY
	if [ -f "$k/.complete" ]; then
		say "Debian kernel: $k (cached)" >&2
		echo "$k"
		return
	fi
	say "Debian kernel: downloading linux-image-$DEB_KREL's vmlinuz and modules ($DEB_VERSION, ~120 MB)" >&2
	rm -rf "$k" "$r/root/debs"
	mkdir -p "$k/root" "$r/root/debs"
	run_logged debian-kernel-download in_chroot "$r" sh -c "cd /root/debs &&
		apt-get -o APT::Sandbox::User=root download linux-binary-$DEB_KREL \
			linux-modules-$DEB_KREL linux-base-$DEB_KREL" >&2
	for deb in "$r"/root/debs/*.deb; do
		dpkg-deb -x "$deb" "$k/root"
	done
	rm -rf "$r/root/debs"
	ln -s usr/lib "$k/root/lib"
	[ -f "$k/root/lib/modules/$DEB_KREL/vmlinuz" ] || die "no vmlinuz in linux-binary-$DEB_KREL"
	run_logged debian-depmod depmod -b "$k/root" "$DEB_KREL" >&2

	# The initramfs: busybox, the modules (decompressed: busybox insmod
	# reads plain ELF) in dependency order, and /init.
	local ird=$k/initramfs
	mkdir -p "$ird/bin" "$ird/mods"
	cp /usr/bin/busybox "$ird/bin/busybox"
	for m in sh mount mkdir insmod switch_root echo cat; do ln -s busybox "$ird/bin/$m"; done
	: >"$ird/mods/order"
	# shellcheck disable=SC2086
	modprobe -a -d "$k/root" -S "$DEB_KREL" --show-depends $INITRAMFS_MODULES |
		sed -n 's/^insmod \([^ ]*\).*/\1/p' | awk '!seen[$0]++' | while read -r m; do
		xz -dc "$m" >"$ird/mods/$(basename "$m" .xz)"
		basename "$m" .xz >>"$ird/mods/order"
	done
	[ "$(grep -c . "$ird/mods/order")" -ge 2 ] || die "initramfs: module list for $INITRAMFS_MODULES is empty"
	cat >"$ird/init" <<-'EOT'
	#!/bin/sh
	# Load what a 9p root needs, mount it, continue with the rootfs's init.
	mkdir -p /proc /dev /newroot
	mount -t proc proc /proc
	mount -t devtmpfs devtmpfs /dev
	for m in $(cat /mods/order); do insmod /mods/$m || echo "initramfs: insmod $m failed"; done
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=loose,ro rootfs /newroot ||
		{ echo "initramfs: cannot mount the 9p root"; exec sh; }
	mount --move /dev /newroot/dev
	umount /proc
	exec switch_root /newroot /sbin/rpcrdma-init
	EOT
	chmod 755 "$ird/init"
	(cd "$ird" && find . | cpio -o -H newc --quiet | gzip -1) >"$k/initrd.img"
	ln -s "root/lib/modules/$DEB_KREL/vmlinuz" "$k/vmlinuz"
	echo "$DEB_KREL" >"$k/release"
	touch "$k/.complete"
	say "Debian kernel: $DEB_KREL, initramfs with $(paste -sd' ' "$ird/mods/order")" >&2
	echo "$k"
}

case "${1:-}" in
env) build_env ;;
minroot) minimal_root ;;
kernel) debian_kernel ;;
chroot)
	shift
	r=${DEBIAN_ENV:-$(build_env)}
	in_chroot "$r" "$@"
	;;
target) target; echo "$DEB_KREL $DEB_VERSION" ;;
*) die "usage: debian-env.sh env|minroot|kernel|target|chroot CMD..." ;;
esac
