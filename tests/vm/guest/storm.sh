#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# storm.sh FLAVOUR CYCLES: disconnect storm. Under a verifying fio load on
# an NFSv3 RDMA mount, the soft-RoCE device is deleted and re-added CYCLES
# times, each time while replies are in flight. Deleting the device removes
# every connection on it at once (RDMA_CM_EVENT_DEVICE_REMOVAL on both
# ends): the server closes and frees its transports, whose Sends complete
# flushed, before the deletion returns. So after every deletion the Send
# path's leak counters must read 0; after every re-add the client must
# reconnect and fio must go on verifying. The wildcard listener is not
# bound to a device and survives.
. /work/tests/vm/guest/lib.sh

flavour=$1 cycles=$2
load_rpcrdma "$flavour"
setup_rxe
start_nfsd
mount_rdma 3 /mnt/st || { fail "NFSv3 mount"; exit 1; }
start_verifying_load /mnt/st storm

# Calls the server has received: proof that I/O runs on the new connection.
calls() { stat_rdma recv; }
# Sends flushed by the removals: the storm caught replies in flight.
trace_start rpcrdma:svcrdma_wc_send_flush rpcrdma:svcrdma_wc_send_err
t0=$(date +%s)
i=0 leaked=0 maxwait=0
while [ $i -lt "$cycles" ]; do
	i=$((i + 1))
	c=$(client_connects)
	r=$(calls)
	# Let the client reconnect and have Calls in flight again.
	w=0
	while [ "$(client_connects)" = "$c" ] || [ "$(calls)" -lt $((r + 20)) ]; do
		[ $i = 1 ] && [ "$(calls)" -ge $((r + 20)) ] && break
		w=$((w + 1))
		[ $w -ge 600 ] && break
		sleep 0.1
	done
	[ $w -gt $maxwait ] && maxwait=$w
	if [ $w -ge 600 ]; then
		fail "storm: cycle $i: no reconnect with I/O within 60 s"
		break
	fi
	kill -0 $FIO_PID 2>/dev/null || { fail "storm: fio stopped before cycle $i"; break; }
	if ! timeout 120 rdma link delete rxe0; then
		fail "storm: cycle $i: deleting rxe0 did not finish in 120 s"
		break
	fi
	# Every transport on the device was freed before the deletion returned.
	l=$(send_path_leaks)
	if [ -n "$l" ]; then
		leaked=$((leaked + 1))
		[ $leaked -le 3 ] && fail "storm: cycle $i: the Send path holds $l with no connection left"
	fi
	rdma link add rxe0 type rxe netdev eth0 || { fail "storm: cycle $i: re-adding rxe0"; break; }
done
secs=$(($(date +%s) - t0))
trace_stop
result storm_cycles "$i"
result storm_seconds "$secs"
result storm_client_connects "$(client_connects)"
result storm_sends_flushed "$(trace_count svcrdma_wc_send_flush)"
result storm_sends_failed "$(trace_count svcrdma_wc_send_err)"
result storm_max_reconnect_ds "$maxwait"
result storm_cycles_leaking "$leaked"
[ "$i" = "$cycles" ] && [ $FAILS = 0 ] &&
	pass "storm: $cycles device removals under I/O in $secs s, counters 0 after each, the client reconnected every time"
sleep 3
kill $READS_PID
if stop_verifying_fio $FIO_PID storm_fio_KiB; then
	pass "storm: fio verified its data through $i disconnect cycles ($FIO_KIB KiB)"
else
	fail "storm: fio stopped (verify or I/O error)"
fi
umount /mnt/st
rpc.nfsd 0
sleep 1
expect_no_leaks storm
if rmmod rpcrdma; then pass "storm: rpcrdma unloads"; else fail "storm: rpcrdma does not unload"; fi
kmemleak_check storm
result failures $FAILS
exit $FAILS
