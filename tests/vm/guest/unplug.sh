#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# unplug.sh FLAVOUR [MODULE_DIR FAULT]: the RDMA device's DMA device, the
# NIC's PCI function, removed under a verifying NFS load, in the DMA-mapped
# mode (vm-run.sh -D), as a hot-unplug or a driver unbind does on a real
# server. MODULE_DIR loads another build of the flavour (a DMA mutant, to
# show what the check makes of a leaked mapping) and FAULT (POINT=SPEC, as
# dma-mutant.sh takes it) is set before the removal.
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
[ -n "${2:-}" ] && rs_module_dir=$2
fault=${3:--}
[ "$DMA_MAPPED" = 1 ] && [ "$DMA_DEBUG" = 1 ] ||
	{ fail "unplug: needs the DMA-mapped mode with DMA-API debugging (vm-run.sh -D)"; exit 1; }
load_rpcrdma "$flavour"
setup_fabric || exit 1
# (dma_mode_start, in setup_fabric, leaves $dev naming the PCI function.)
case $FABRIC in siw) rdev=siw0 ;; *) rdev=rxe0 ;; esac
pci=$(basename "$(readlink -f /sys/class/net/eth0/device/..)")
[ -e "/sys/bus/pci/devices/$pci" ] || { fail "unplug: no PCI function under eth0 ($pci)"; exit 1; }
start_nfsd
# A major timeout of 10 s, not 60: the client's transport lets go of the
# removed device only once an RPC on it has timed out, and the removal
# waits for it.
MOUNT_OPTS=timeo=100 mount_rdma 3 /mnt/u || { fail "unplug: NFSv3 mount"; exit 1; }
start_verifying_load /mnt/u unplug
kill -0 $FIO_PID 2>/dev/null || { fail "unplug: fio did not start"; exit 1; }
if [ "$fault" != - ]; then
	echo "${fault#*=}" >"/sys/module/rpcrdma/parameters/${fault%%=*}" || fail "unplug: cannot set $fault"
	sleep 10
	result "unplug_injected_${fault%%=*}" "$(cat "/sys/module/rpcrdma/parameters/${fault%%=*}")"
	echo 1,0,0,0 >"/sys/module/rpcrdma/parameters/${fault%%=*}"
fi

errors0=$(cat $DMA_API/error_count)
live=$(dma_mappings "$pci")
c0=$(client_connects)
result unplug_mappings_live "$live"
t0=$(date +%s)
echo 1 >"/sys/bus/pci/devices/$pci/remove" &
remover=$!
n=0
while kill -0 $remover 2>/dev/null && [ $n -lt 150 ]; do
	sleep 1
	n=$((n + 1))
done
if kill -0 $remover 2>/dev/null; then
	fail "unplug: removing PCI function $pci took over 150 s"
	# Who waits for what: every blocked task's stack, and the leak
	# counters (a transport the Send path still pins is never freed, and
	# its connection's removal never ends).
	for p in /proc/[0-9]*; do
		[ "$(awk '{ print $3 }' "$p/stat" 2>/dev/null)" = D ] || continue
		echo "== $(cat "$p/comm") (${p#/proc/})"
		cat "$p/stack" 2>/dev/null
	done >/results/unplug-blocked.txt
	echo "send path: $(send_path_leaks)" >>/results/unplug-blocked.txt
	grep -A12 '^== ' /results/unplug-blocked.txt | head -n 80
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
# The mapping counts recorded at start are of the removed function; the
# one that comes back must return to the same count at the end (rxe's own
# buffers): its own count once re-added may already hold the client's
# reconnect.
read -r _ base0 _ </tmp/dma-devs
: >/tmp/dma-devs
ip addr add "$SERVER_IP"/24 dev "$ifname"
ip link set "$ifname" up
rdma link add $rdev type "$FABRIC" netdev "$ifname" || { fail "unplug: $rdev on $ifname"; exit 1; }
dma_mode_start "$ifname" $rdev
echo "$pci $base0 $rdev" >/tmp/dma-devs
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
