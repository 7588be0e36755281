#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the guest root filesystem with debootstrap into the cache, keyed by a
# hash of this script. The guest mounts it read-only over 9p; the kernel's
# modules, the repo and a results dir come in as further 9p shares, so the
# rootfs never depends on a kernel build. Prints the rootfs dir last.

. "$(dirname "$0")/lib.sh"

SUITE=trixie
MIRROR=http://deb.debian.org/debian
PKGS=nfs-kernel-server,nfs-common,rpcbind,rdma-core,ibverbs-utils,ibverbs-providers,rdmacm-utils,iproute2,fio,perftest,tshark,kmod,procps,iputils-ping,util-linux,attr,acl,python3,python3-pyverbs,ca-certificates,linux-perf

KEY=$(sha256sum "$0" | cut -c1-12)
R=$CACHE/rootfs/$SUITE-$KEY

if [ -f "$R/.rootfs-complete" ]; then
	say "guest rootfs: $R (cached)" >&2
	echo "$R"
	exit 0
fi
[ "$(id -u)" = 0 ] || die "debootstrap needs root"
rm -rf "$R"
mkdir -p "$R"
say "guest rootfs: debootstrap $SUITE into $R (~2-4 min)" >&2
progress_logged debootstrap debootstrap --variant=minbase --include="$PKGS" \
	"$SUITE" "$R" "$MIRROR" >&2

# The only file of ours in the rootfs: a stub init that mounts the 9p shares
# and hands over to the repo's guest-init.sh, so guest logic lives in the repo.
cat >"$R/sbin/rpcrdma-init" <<'EOT'
#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /tmp
o=trans=virtio,version=9p2000.L,msize=262144
mount -t 9p -o $o,ro work /work || echo "rpcrdma-init: cannot mount the repo share"
exec /work/tests/vm/guest-init.sh "$@"
EOT
chmod 755 "$R/sbin/rpcrdma-init"
mkdir -p "$R/work" "$R/results" "$R/lib/modules"
# Services are started by our scripts, not by package maintainer hooks.
rm -f "$R/etc/machine-id"; : >"$R/etc/machine-id"
echo rpcrdma-vm >"$R/etc/hostname"
touch "$R/.rootfs-complete"
say "guest rootfs: $(du -sh "$R" | cut -f1) in $R" >&2
echo "$R"
