#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# install-check.sh ours|intree: after an install test changed the modules
# tree shared as /lib/modules, a plain `modprobe rpcrdma` must load ours
# (from updates/) or the kernel's own, with its dependencies.
. /work/tests/vm/guest/lib.sh

want=$1
modprobe rpcrdma || { fail "modprobe rpcrdma"; exit 1; }
file=$(modinfo -n rpcrdma)
version=$(cat /sys/module/rpcrdma/version 2>/dev/null || echo none)
result modprobe_file "$file"
result module_version "$version"
case $want in
ours)
	case $file:$version in
	*/updates/*:*-rust) pass "modprobe rpcrdma loads ours from updates/ ($version)" ;;
	*) fail "modprobe rpcrdma loaded $file, version $version; wanted ours from updates/" ;;
	esac ;;
intree)
	case $file:$version in
	*/updates/*|*:*-rs.*) fail "modprobe rpcrdma still loads $file ($version) after uninstall" ;;
	*/kernel/net/sunrpc/xprtrdma/*) pass "modprobe rpcrdma loads the kernel's own again ($file)" ;;
	*) fail "modprobe rpcrdma loaded $file, not the kernel's own" ;;
	esac ;;
esac
# Ours must also serve: the same soft-RoCE mount as the demo.
setup_fabric
start_nfsd
if mount_rdma 3 /mnt/nfs && echo hello >/mnt/nfs/f && [ "$(cat /mnt/nfs/f)" = hello ] &&
	[ "$(xprt_of /mnt/nfs)" = rdma ]; then
	pass "NFSv3 over RDMA works with the $want module"
else
	fail "NFSv3 over RDMA with the $want module"
fi
umount /mnt/nfs 2>/dev/null
result failures $FAILS
exit $FAILS
