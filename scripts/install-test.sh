#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# install-test.sh: `make install`/`make uninstall` and DKMS, tested on a
# copy of the test kernel's installed modules tree, then in the VM:
#  1. make install INSTALL_MOD_PATH=...: modprobe's resolution (host side)
#     picks updates/rpcrdma.ko; make uninstall: the kernel's own again.
#  2. DKMS in a private mount namespace (/lib/modules, /var/lib/dkms and
#     /usr/src bound to the copy, so the host is untouched): dkms add, build
#     and install of this tree's dkms.conf against the test kernel; a VM
#     booted on that tree loads ours with plain `modprobe rpcrdma` and
#     serves NFS/RDMA; dkms remove; a VM loads the kernel's own again.
# Prints PASS:/FAIL: lines; exits non-zero on any failure.

. "$(dirname "$0")/lib.sh"

KB=$(kernel_build)
KREL=$(cat "$KB/include/config/kernel.release")
T=$CACHE/install-test
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
[ -f "$KB/.modinst/.complete" ] || die "run a VM once first (installs the test kernel's modules)"
command -v dkms >/dev/null || die "dkms is not installed: run scripts/setup.sh"

rm -rf "$T"
mkdir -p "$T/root/lib" "$T/dkms" "$T/src"
cp -a "$KB/.modinst/lib/modules" "$T/root/lib/"
MODS=$T/root/lib/modules
ln -sfn "$KB" "$MODS/$KREL/build"
resolves() { modprobe -d "$T/root" -S "$KREL" --show-depends rpcrdma 2>/dev/null | grep -o '/lib/modules/[^ ]*rpcrdma.ko' | tail -n 1; }

# 1. make install / uninstall
if make -s -C "$TOP" install KDIR="$KB" INSTALL_MOD_PATH="$T/root" >"$LOGS/make-install.log" 2>&1 &&
	[[ $(resolves) == */updates/rpcrdma.ko ]]; then
	pass "make install: modprobe resolves rpcrdma to $(resolves)"
else
	fail "make install: modprobe resolves rpcrdma to '$(resolves)' ($LOGS/make-install.log)"
fi
if make -s -C "$TOP" uninstall KDIR="$KB" INSTALL_MOD_PATH="$T/root" >>"$LOGS/make-install.log" 2>&1 &&
	[[ $(resolves) == */kernel/net/sunrpc/xprtrdma/rpcrdma.ko ]] && [ ! -e "$MODS/$KREL/updates/rpcrdma.ko" ]; then
	pass "make uninstall: modprobe resolves rpcrdma to the kernel's own again"
else
	fail "make uninstall: modprobe resolves rpcrdma to '$(resolves)' ($LOGS/make-install.log)"
fi

# 2. DKMS, as an admin would run it, in a private mount namespace.
ver=$(sed -n 's/^PACKAGE_VERSION="\(.*\)"/\1/p' "$TOP/dkms.conf")
mkdir -p "$T/src/rpcrdma-rs-$ver"
git -C "$TOP" ls-files -z --cached --others --exclude-standard |
	(cd "$TOP" && xargs -0 tar cf - 2>/dev/null) | tar xf - -C "$T/src/rpcrdma-rs-$ver"
in_ns() {
	unshare -m bash -c "mount --bind '$MODS' /lib/modules && mount --bind '$T/dkms' /var/lib/dkms &&
		mount --bind '$T/src' /usr/src && $*"
}
# Mount points for the private namespace (empty directories on the host).
mkdir -p /var/lib/dkms /lib/modules /usr/src
say "dkms: add, build (rust flavour against $KREL) and install rpcrdma-rs/$ver" >&2
if in_ns "dkms add rpcrdma-rs/$ver && { dkms build rpcrdma-rs/$ver -k $KREL ||
	{ cp /var/lib/dkms/rpcrdma-rs/$ver/build/make.log '$LOGS/dkms-make.log'; false; }; } &&
	dkms install rpcrdma-rs/$ver -k $KREL" \
	>"$LOGS/dkms.log" 2>&1 && [[ $(resolves) == */updates/* ]]; then
	pass "dkms install rpcrdma-rs/$ver: modprobe resolves rpcrdma to $(resolves)"
else
	tail -n 15 "$LOGS/dkms.log"
	fail "dkms install rpcrdma-rs/$ver ($LOGS/dkms.log, $LOGS/dkms-make.log; resolves to '$(resolves)')"
fi
vm() { # WANT
	local run rc=0
	run=$(bash "$TOP/scripts/vm-run.sh" -t 300 -n "install-$1" -d "$MODS" install-check "$1") || rc=$?
	relay_guest_log "dkms VM: " "$run"
	[ "$rc" = 0 ] || fail "dkms VM ($1): status $rc ($run)"
}
vm ours
if in_ns "dkms remove rpcrdma-rs/$ver --all" >>"$LOGS/dkms.log" 2>&1 &&
	[[ $(resolves) == */kernel/net/sunrpc/xprtrdma/rpcrdma.ko ]]; then
	pass "dkms remove: modprobe resolves rpcrdma to the kernel's own again"
else
	fail "dkms remove ($LOGS/dkms.log; resolves to '$(resolves)')"
fi
vm intree
[ "$FAILS" = 0 ]
