#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# faults.sh FAULTS [POINT...]: fault injection into the Rust Send path of a
# RPCRDMA_RS_FAULT_INJECTION=y build (build*/rust-fault/rpcrdma.ko), under a
# verifying fio load on an NFSv3 RDMA mount (plus small direct reads, whose
# replies are mapped page by page). For each point (default all four:
# send_ctxt_get dma_map post_first post_mid) FAULTS faults
# are injected (every 10th pass through it fails, up to FAULTS times): the
# affected connection closes, the client reconnects, and fio must go on
# verifying. Afterwards nothing may be left: leak counters 0, rmmod works.
. /work/tests/vm/guest/lib.sh

faults=$1
shift
POINTS=${*:-send_ctxt_get dma_map post_first post_mid}
ko=$MODULES/rust-fault/rpcrdma.ko
P=/sys/module/rpcrdma/parameters
modprobe ib_core
modprobe rdma_cm
modprobe sunrpc
modprobe rdma_rxe
kmemleak_baseline
insmod $ko || { fail "insmod $ko"; exit 1; }
coverage_note_module
[ -w $P/fail_post_mid ] || { fail "$ko has no fault-injection parameters"; exit 1; }
result module_version "$(cat /sys/module/rpcrdma/version)"
setup_fabric
start_nfsd
mount_rdma 3 /mnt/f || { fail "NFSv3 mount"; exit 1; }
start_verifying_load /mnt/f faults
sleep 3
# Time allowed per point. Each fault closes the connection, and the
# client's reconnect takes about 7 s on the debug kernel (93 of 100 fitted
# in 720 s there at commit d70f915), about 2 s on the test kernel.
limit=240
[ -w "$KMEMLEAK" ] && limit=1200
for point in $POINTS; do
	before=$(cat $P/fail_$point)
	c0=$(client_connects)
	t0=$(date +%s)
	echo "10,100,0,$faults" >$P/fail_$point
	n=0
	while [ $(($(date +%s) - t0)) -lt $limit ]; do
		n=$(($(cat $P/fail_$point) - before))
		[ $n -ge "$faults" ] && break
		kill -0 $FIO_PID 2>/dev/null || break
		sleep 1
	done
	echo "1,0,0,0" >$P/fail_$point
	sleep 2
	c=$(($(client_connects) - c0))
	result "injected_$point" "$n"
	result "reconnects_$point" "$c"
	result "seconds_$point" "$(($(date +%s) - t0))"
	if [ $n -ge "$faults" ] && [ $c -gt 0 ]; then
		pass "faults: $n injected at $point; the client reconnected $c times and I/O went on"
	elif [ $n -ge "$faults" ]; then
		fail "faults: $n injected at $point but the connection never closed"
	else
		fail "faults: only $n of $faults injected at $point in $limit s"
	fi
	kill -0 $FIO_PID 2>/dev/null || { fail "faults: fio stopped during $point"; break; }
done
kill $READS_PID
# The load must still be running and verifying after the last fault.
sleep 5
if stop_verifying_fio $FIO_PID fio_KiB; then
	pass "faults: fio verified its data through every injected fault ($FIO_KIB KiB)"
else
	fail "faults: fio stopped (verify error or I/O error)"
fi
umount /mnt/f
rpc.nfsd 0
sleep 1
expect_no_leaks faults
if rmmod rpcrdma; then pass "faults: rpcrdma unloads"; else fail "faults: rpcrdma does not unload"; fi
dma_mode_check faults
kmemleak_check "faults"
result failures $FAILS
exit $FAILS
