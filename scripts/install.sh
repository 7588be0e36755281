#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# install.sh install|uninstall: put build/rust/rpcrdma.ko into (or take it
# out of) /lib/modules/KVER/updates/, where modprobe prefers it to the
# kernel's own rpcrdma.ko, and run depmod. Behind `make install` and
# `make uninstall`; DKMS (dkms.conf) does the same with its own copy.
#   KDIR              kernel build tree (default /lib/modules/$(uname -r)/build)
#   KVER              kernel release (default: KDIR's include/config/kernel.release)
#   INSTALL_MOD_PATH  prefix of /lib/modules, as for the kernel's modules_install

. "$(dirname "$0")/lib.sh"

ACTION=${1:?usage: install.sh install|uninstall}
KDIR=${KDIR:-/lib/modules/$(uname -r)/build}
KVER=${KVER:-$(cat "$KDIR/include/config/kernel.release" 2>/dev/null || uname -r)}
MODDIR=${INSTALL_MOD_PATH:-}/lib/modules/$KVER
DEST=$MODDIR/updates/rpcrdma.ko
[ -d "$MODDIR" ] || die "no $MODDIR: is kernel $KVER installed (KVER=, INSTALL_MOD_PATH=)?"

case $ACTION in
install)
	KO=$TOP/build/rust/rpcrdma.ko
	[ -f "$KO" ] || die "no $KO: run make modules KDIR=$KDIR first"
	have=$(modinfo -F vermagic "$KO" | cut -d' ' -f1)
	[ "$have" = "$KVER" ] || die "$KO is built for $have, not $KVER"
	install -D -m 0644 "$KO" "$DEST"
	say "installed $DEST ($(modinfo -F version "$KO"))"
	;;
uninstall)
	if [ -f "$DEST" ]; then
		rm -f "$DEST"
		rmdir --ignore-fail-on-non-empty "$MODDIR/updates"
		say "removed $DEST"
	else
		say "nothing to remove at $DEST"
	fi
	;;
*) die "usage: install.sh install|uninstall" ;;
esac
depmod ${INSTALL_MOD_PATH:+-b "$INSTALL_MOD_PATH"} "$KVER"
say "modprobe rpcrdma now loads: $(modprobe ${INSTALL_MOD_PATH:+-d "$INSTALL_MOD_PATH"} -S "$KVER" --show-depends rpcrdma 2>/dev/null | grep -o '[^ ]*rpcrdma.ko[^ ]*' | tail -n 1)"
