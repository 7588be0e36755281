#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# storm-client.sh CLIENT_IP CYCLES [UNPLUG_CYCLE]: disconnect storm, the
# client VM, which drives it (the server VM runs storm-server.sh and takes
# commands over rsh.py on the fabric's Ethernet, or on a control link of
# its own, vm-pair.sh -C; never over RDMA).
#
# In cycle UNPLUG_CYCLE (with the control link, the server DMA-mapped) the
# server's NIC itself goes instead: its PCI function is removed, which
# takes the net device and the RDMA device with it, and DMA-API debugging
# reports any mapping still live when the driver lets go (lib.sh
# unplug_fabric_nic); the function comes back with rxe0 on it.
#
# Under a verifying fio load on an NFSv3 RDMA mount, the server's soft-RoCE
# device is deleted and re-added CYCLES times, each time with Calls in
# flight. Deleting the device removes every connection on it at once
# (RDMA_CM_EVENT_DEVICE_REMOVAL): the server closes and frees its
# transports, whose Sends complete flushed, before the deletion returns.
# So right after every deletion the Send path's leak counters must read 0.
# The client's own device stays: its transport fails on retransmission
# timeouts and reconnects to the re-added device; fio must go on verifying.
# (Only the server's device is removed: the server is what is tested, and
# the kernel's NFS/RDMA client has its own problems with removal of the
# device under it, see Documentation/testing.rst.)
. /work/tests/vm/guest/lib.sh

ip=$1 cycles=$2 unplug_cycle=${3:-0}
rsh_client "$ip"

mount_rdma 3 /mnt/st || { fail "NFSv3 mount"; exit 1; }
start_verifying_load /mnt/st storm
# Sends flushed by the removals: the storm caught replies in flight.
srv "trace_start rpcrdma:svcrdma_wc_send_flush rpcrdma:svcrdma_wc_send_err" ||
	fail "storm: tracing the server's flushed Sends"
# Both ends' QP modifications, for a stall dump (lib.sh qp_modify_trace).
srv qp_modify_trace || fail "storm: tracing the server's modify_qp"
qp_modify_trace || fail "storm: tracing the client's modify_qp"

# Calls the server has received: proof that I/O runs on the new connection.
calls() { srv 'stat_rdma recv'; }
# The server's first: the client's, behind its hung mount, may not reach
# the disk before the pair is stopped (one CI run kept neither).
stalled() {
	srv 'stall_dump /results/stall-server.txt' || true
	stall_dump /results/stall-client.txt || true
}
t0=$(date +%s)
# before: the client's connects counted right before the last deletion;
# a reconnect is a connect counted after it. (Counted at the start of the
# next cycle instead, the count could already include the reconnect: on
# the debug kernel the re-adding's rsh round trip outlasts it. The wait
# then waited for one more that never came, with I/O running: a false
# stall, see Documentation/testing.rst.)
i=0 leaked=0 maxwait=0 before=0
while [ $i -lt "$cycles" ]; do
	i=$((i + 1))
	[ $((i % 10)) = 1 ] && log "storm: cycle $i of $cycles"
	# Under set -eu a failed query would end the script with no word of
	# why (one CI run lost all results so): fail it by name.
	if ! r=$(calls 2>&1); then
		fail "storm: cycle $i: the server's rsh did not answer: $r"
		break
	fi
	# Wait for the client to reconnect and send Calls again.
	w0=$(date +%s)
	while [ $i -gt 1 ] && [ "$(client_connects)" -le "$before" ] || [ "$(calls || echo 0)" -lt $((r + 20)) ]; do
		[ $(($(date +%s) - w0)) -ge 120 ] && break
		sleep 0.5
	done
	w=$(($(date +%s) - w0))
	[ $w -gt $maxwait ] && maxwait=$w
	if [ $w -ge 120 ]; then
		stalled
		fail "storm: cycle $i: no reconnect with I/O within 120 s (client connects: $before before the deletion, $(client_connects) now; server Calls: $r at the wait's start, $(calls || echo '?') now; stall dumps in the results)"
		break
	fi
	kill -0 $FIO_PID 2>/dev/null || { fail "storm: fio stopped before cycle $i"; break; }
	before=$(client_connects)
	if [ $i = "$unplug_cycle" ]; then
		if ! l=$(srv unplug_fabric_nic); then
			fail "storm: cycle $i: removing the server's NIC: $l"
			break
		fi
		pass "storm: cycle $i: the server's NIC removed under load, no mapping left when its driver let go; back with rxe0 ($(srv 'tail -n 1 /tmp/unplugs'))"
	elif ! l=$(srv 'timeout 120 rdma link delete rxe0 || { echo "deletion failed or took over 120 s"; exit 1; }
			send_path_leaks'); then
		stalled
		fail "storm: cycle $i: server: $l"
		break
	fi
	# Every transport on the device was freed before the deletion returned.
	if [ -n "$l" ]; then
		leaked=$((leaked + 1))
		[ $leaked -le 3 ] && fail "storm: cycle $i: the Send path holds $l with no connection left"
	fi
	[ $i = "$unplug_cycle" ] ||
		srv 'rdma link add rxe0 type rxe netdev eth0' || { fail "storm: cycle $i: re-adding the server's rxe0"; break; }
done
secs=$(($(date +%s) - t0))
result storm_cycles "$i"
result storm_seconds "$secs"
result storm_client_connects "$(client_connects)"
result storm_sends_flushed "$(srv 'trace_stop; trace_count svcrdma_wc_send_flush')"
result storm_sends_failed "$(srv 'trace_count svcrdma_wc_send_err')"
result storm_max_reconnect_s "$maxwait"
result storm_server_qp_modifies "$(srv 'grep -c qp_modify: /sys/kernel/tracing/trace')"
result storm_cycles_leaking "$leaked"
[ "$i" = "$cycles" ] && [ $FAILS = 0 ] &&
	pass "storm: $cycles removals of the server's device under I/O in $secs s, counters 0 after each, the client reconnected every time"
sleep 3
kill $READS_PID || true
if stop_verifying_fio $FIO_PID storm_fio_KiB; then
	pass "storm: fio verified its data through $i disconnect cycles ($FIO_KIB KiB)"
else
	fail "storm: fio stopped (verify or I/O error)"
fi
timeout 120 umount /mnt/st || { fail "storm: umount hangs"; umount -f -l /mnt/st; }
result failures $FAILS
exit $FAILS
