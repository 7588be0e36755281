#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# unplug.sh FLAVOUR: the RDMA device's DMA device, the NIC's PCI function,
# removed under a verifying NFS load, in the DMA-mapped mode (vm-run.sh -D),
# as a hot-unplug or a driver unbind does on a real server.
#
# Removing the function unregisters its net device, and so soft-RoCE's
# device (rxe holds the net device until its IB device is gone: the
# removal waits for every ULP, rpcrdma's server and client transports
# among them, to release what it had on it). When the PCI driver is then
# released from the function, DMA-API debugging counts the function's
# mappings still live and reports any as "pending DMA allocations": none
# may be left, of the Send path or of anything else. The function is then
# found again (PCI rescan), the fabric set up on it, the client reconnects
# and the load must go on verifying; at the end nothing may be left, as in
# every DMA-mapped run.
. /work/tests/vm/guest/lib.sh

flavour=${1:-rust}
[ "$DMA_MAPPED" = 1 ] && [ "$DMA_DEBUG" = 1 ] ||
	{ fail "unplug: needs the DMA-mapped mode with DMA-API debugging (vm-run.sh -D)"; exit 1; }
load_rpcrdma "$flavour"
setup_fabric || exit 1
# (dma_mode_start, in setup_fabric, leaves $dev naming the PCI function.)
case $FABRIC in siw) rdev=siw0 ;; *) rdev=rxe0 ;; esac
pci=$(basename "$(readlink -f /sys/class/net/eth0/device/..)")
[ -e "/sys/bus/pci/devices/$pci" ] || { fail "unplug: no PCI function under eth0 ($pci)"; exit 1; }
start_nfsd
mount_rdma 3 /mnt/u || { fail "unplug: NFSv3 mount"; exit 1; }
start_verifying_load /mnt/u unplug
kill -0 $FIO_PID 2>/dev/null || { fail "unplug: fio did not start"; exit 1; }

errors0=$(cat $DMA_API/error_count)
live=$(dma_mappings "$pci")
c0=$(client_connects)
result unplug_mappings_live "$live"
t0=$(date +%s)
if ! timeout 120 sh -c "echo 1 >/sys/bus/pci/devices/$pci/remove"; then
	fail "unplug: removing PCI function $pci took over 120 s"
	dmesg | tail -n 30
	exit 1
fi
result unplug_remove_seconds "$(($(date +%s) - t0))"
[ -e "/sys/bus/pci/devices/$pci" ] && fail "unplug: $pci still present after its removal"
errors=$(($(cat $DMA_API/error_count) - errors0))
result unplug_dma_errors "$errors"
if [ "$errors" = 0 ] && ! dmesg | grep -q 'pending DMA allocations'; then
	pass "unplug: $pci removed under load with $live mappings live: all released before its driver let go (DMA-API debugging: no pending allocation)"
else
	dmesg | grep -B2 -A8 'DMA-API' | head -n 40 | sed 's/^/    /'
	fail "unplug: DMA-API debugging reported $errors errors at the removal of $pci"
fi

# Found again: the same function, a new net device on it.
echo 1 >/sys/bus/pci/rescan
n=0
while ! ls "/sys/bus/pci/devices/$pci"/virtio*/net/ >/dev/null 2>&1 && [ $n -lt 30 ]; do
	sleep 1
	n=$((n + 1))
done
ifname=$(ls "/sys/bus/pci/devices/$pci"/virtio*/net/ 2>/dev/null | head -n 1)
[ -n "$ifname" ] || { fail "unplug: $pci came back with no net device"; exit 1; }
# The mapping counts at start were of the removed function: start again.
: >/tmp/dma-devs
ip addr add "$SERVER_IP"/24 dev "$ifname"
ip link set "$ifname" up
rdma link add $rdev type "$FABRIC" netdev "$ifname" || { fail "unplug: $rdev on $ifname"; exit 1; }
dma_mode_start "$ifname" $rdev
# The client reconnects (its next RPCs), and fio, verifying, goes on.
n=0
while [ "$(client_connects)" -le "$c0" ] && [ $n -lt 120 ]; do
	sleep 1
	n=$((n + 1))
done
c=$(($(client_connects) - c0))
result unplug_reconnects "$c"
result unplug_seconds_to_reconnect "$(($(date +%s) - t0))"
[ "$c" -gt 0 ] || fail "unplug: the client did not reconnect in 120 s after $pci came back"
sleep 10
kill $READS_PID
if stop_verifying_fio $FIO_PID unplug_fio_KiB; then
	pass "unplug: fio verified its data across the removal and return of $pci ($FIO_KIB KiB; $c reconnects)"
else
	fail "unplug: fio stopped across the removal of $pci (verify error or I/O error)"
fi
umount /mnt/u
rpc.nfsd 0
sleep 1
expect_no_leaks unplug
if rmmod rpcrdma; then pass "unplug: rpcrdma unloads"; else fail "unplug: rpcrdma does not unload"; fi
dma_mode_check unplug
kmemleak_check unplug
result failures $FAILS
exit $FAILS
