#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# stress.sh FLAVOUR SECONDS CYCLES: Send Queue exhaustion and unload safety.
#  1. Minimal credits (max_requests 4, so the smallest Send Queue the
#     server sizes), 32 nfsd threads, and a client with deep queues over
#     four connections (nconnect) reading and writing 1 MiB blocks with
#     crc32c verify for SECONDS: I/O must keep progressing and verify, and
#     rdma_stat_sq_starve counts the Sends that had to wait for SQ entries
#     (the ticket path of svc_rdma_sq_wait).
#  2. rmmod while mounted is refused; after umount and nfsd stop the leak
#     counters read 0 and rpcrdma unloads; then CYCLES load/unload cycles,
#     every fifth one serving a mount and a checksummed copy in between.
. /work/tests/vm/guest/lib.sh

flavour=$1 secs=$2 cycles=$3
ko=$MODULES/${rs_module_dir:-$flavour}/rpcrdma.ko
load_rpcrdma "$flavour"
setup_fabric
echo 4 >/proc/sys/sunrpc/svc_rdma/max_requests
NFSD_THREADS=32 start_nfsd
MOUNT_OPTS=nconnect=4 mount_rdma 3 /mnt/s || { fail "NFSv3 nconnect mount"; exit 1; }
starve0=$(stat_rdma sq_starve)
# The leak counters are world-readable: read them all along, as a monitor
# would, while the census they run walks ctxts in use.
(while :; do send_path_leaks >/dev/null; sleep 1; done) &
census=$!
if fio --name=sq --directory=/mnt/s --rw=randrw --bs=1m --size=16m --numjobs=4 \
	--direct=1 --ioengine=libaio --iodepth=32 --runtime="$secs" --time_based \
	--verify=crc32c --verify_backlog=8 --verify_fatal=1 --invalidate=0 \
	--serialize_overlap=1 --verify_state_save=0 --group_reporting \
	--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1; then
	kib=$(grep '^3;' /tmp/fio.out | tail -n 1 | awk -F';' '{ print $6 + $47 }')
	result sq_KiB_verified "$kib"
	[ "${kib:-0}" -gt 0 ] && pass "sq: 1 MiB I/O at depth 4x32 over 4 connections with 4 credits kept going, $kib KiB verified"
else
	tail -n 10 /tmp/fio.out
	fail "sq: fio failed with minimal credits"
fi
kill $census
starved=$(($(stat_rdma sq_starve) - starve0))
result sq_starve "$starved"
if [ "$starved" -gt 0 ]; then
	pass "sq: $starved Sends waited for Send Queue entries (rdma_stat_sq_starve) and were served"
else
	fail "sq: the Send Queue never ran out (rdma_stat_sq_starve 0): the ticket path was not exercised"
fi

# The RDMA device deleted while Sends wait in the SQ line: each waiter
# must give up (its ticket passed on to the next), the connections close,
# and once the device is back the client reconnects and fio goes on
# verifying. The errors an RPC can end with are traced meanwhile, so that
# an I/O error names its layer: the client's RPC layer (its connect
# status and the errors it ends RPCs with), xprtrdma (connects, RDMA_ERROR
# received, marshalling), or the server's NFS (nfsd's write errors; the
# client's WRITEs that end in an error).
gone_events=
for e in sunrpc:rpc_call_rpcerror sunrpc:rpc_connect_status rpcrdma:xprtrdma_device_removal \
	rpcrdma:xprtrdma_op_connect rpcrdma:xprtrdma_connect rpcrdma:xprtrdma_disconnect \
	rpcrdma:xprtrdma_marshal_failed rpcrdma:xprtrdma_err_chunk rpcrdma:xprtrdma_err_vers \
	rpcrdma:xprtrdma_err_unrecognized nfsd:nfsd_write_err nfs:nfs_pgio_error nfs:nfs_writeback_done; do
	[ -d "/sys/kernel/tracing/events/${e%%:*}/${e#*:}" ] && gone_events="$gone_events $e"
done
result sq_gone_events_enabled "$(echo $gone_events | wc -w)"
wb=/sys/kernel/tracing/events/nfs/nfs_writeback_done/filter
[ -w $wb ] && echo 'error < 0' >$wb
gone_errors='rpc_call_rpcerror|nfs_pgio_error|nfs_writeback_done|nfsd_write_err|xprtrdma_err_[a-z]*'

# gone_trace_awk PROGRAM: PROGRAM over the traced lines of gone_events,
# with $ev the event's name (the token after the timestamp).
gone_trace_awk() {
	grep -v '^#' /sys/kernel/tracing/trace | awk -v names="$gone_events" -v errors="^($gone_errors):\$" '
		BEGIN { k = split(names, a, " "); for (i = 1; i <= k; i++) { sub(/.*:/, "", a[i]); want[a[i] ":"] = 1 } }
		{ for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) break
		  ev = $(i + 1); if (!(ev in want)) next }
		'"$1"
}

# sq_gone ATTEMPT: one deletion under load. 0 when fio verified across it;
# 1 when fio failed and the client's RPC layer ended each failed RPC with
# the error its reconnect had failed with (rpc_call_rpcerror after
# rpc_connect_status, same task, same error), with no RDMA_ERROR received
# and no nfsd write error; 2 for any other failure.
sq_gone() {
	trace_start $gone_events
	fio --name=sqgone --directory=/mnt/s --rw=randrw --bs=1m --size=16m --numjobs=4 \
		--direct=1 --ioengine=libaio --iodepth=32 --runtime=20 --time_based \
		--verify=crc32c --verify_backlog=8 --verify_fatal=1 --invalidate=0 \
		--serialize_overlap=1 --verify_state_save=0 --group_reporting \
		--output-format=terse --terse-version=3 >/tmp/fio-gone.out 2>&1 &
	gone_fio=$!
	sleep 3
	# Delete it while Sends wait: when the count of Sends that had to wait
	# grows within half a second (once in 15 runs, a deletion at a fixed
	# 6 s met no waiter, and the give-up path did not run).
	c0=$(client_connects) s0=$(stat_rdma sq_starve) waited=0 polls=0
	while [ $polls -lt 20 ]; do
		sleep 0.5
		s=$(stat_rdma sq_starve)
		[ "$s" -gt "$s0" ] && { waited=1; break; }
		s0=$s polls=$((polls + 1))
	done
	[ $waited = 1 ] || fail "sq: no Send waited for the Send Queue in the 10 s before deleting $dev: the give-up path is not exercised"
	timeout 120 rdma link delete $dev || fail "sq: deleting $dev under load failed or took over 120 s"
	s1=$(stat_rdma sq_starve)
	rdma link add $dev type "$FABRIC" netdev eth0 || fail "sq: re-adding $dev"
	gone_status=0
	fio_status=0
	wait $gone_fio || fio_status=$?
	# Printed even when fio verified: an RPC ended in error can be a
	# read that the NFS client then retried.
	if grep -qE " ($gone_errors):" /sys/kernel/tracing/trace; then
		echo "attempt $1: errors traced across the deletion (events:$gone_events):"
		grep -E " ($gone_errors):" /sys/kernel/tracing/trace | head -n 40
	fi
	if [ $fio_status = 0 ]; then
		c=$(($(client_connects) - c0))
		result sq_gone_reconnects "$c"
		result sq_gone_starved_before "$((s1 - s0))"
		if [ "$c" -gt 0 ]; then
			pass "sq: $dev deleted under SQ exhaustion and re-added; the client reconnected $c times and fio verified"
		else
			fail "sq: $dev deleted under load but the client never reconnected"
		fi
	else
		gone_status=2
		tail -n 10 /tmp/fio-gone.out
		echo "attempt $1: fio failed across the deletion of $dev"
		# A passing run traces only reconnects (connect status, connect,
		# disconnect, device removal, marshalling refused meanwhile).
		echo "these events up to the first error:"
		gone_trace_awk '{ last[n++ % 40] = $0; if (ev ~ errors) exit }
			END { for (j = (n > 40 ? n - 40 : 0); j < n; j++) print last[j % 40] }'
		# Each RPC ended (rpc_call_rpcerror) must have had a connect fail
		# with that very error (rpc_connect_status, same task).
		by_client=$(gone_trace_awk '
			ev == "rpc_connect_status:" && $(i + 3) != "status=0" { st = $(i + 3); sub(/.*=/, "", st); cs[$(i + 2)] = st }
			ev == "rpc_call_rpcerror:" { st = $(i + 3); sub(/.*=/, "", st); if (($(i + 2) in cs) && cs[$(i + 2)] == st) r++; else o++ }
			ev ~ /^(nfsd_write_err|xprtrdma_err_[a-z]*):$/ { o++ }
			END { print (r > 0 && o == 0) ? "yes" : "no" }')
		[ "$by_client" = yes ] && ! grep -q 'verify' /tmp/fio-gone.out && gone_status=1
	fi
	# Off before rpcrdma goes (its events go with it); only these: a
	# coverage run keeps every svcrdma event on (coverage_note_module).
	for e in $gone_events; do echo "!$e" >>/sys/kernel/tracing/set_event; done
	trace_stop
	result sq_gone_events_traced_$1 "$(gone_trace_awk '{ n[ev]++ }
		END { for (e in n) { printf "%s%s%d", s, e, n[e]; s = " " } }')"
	return $gone_status
}

# An RPC the client's own RPC layer ends while its reconnect races the
# device's removal is the client's (net/sunrpc ends an RPC on a connect
# error it does not list as transient), not the server's under test: once,
# it is reported and the deletion repeated; twice, or any other failure,
# fails the phase.
st=0
sq_gone 1 || st=$?
if [ $st = 1 ]; then
	result sq_gone_client_rpc_error 1
	echo "sq: attempt 1 ended by the client's RPC layer (above), not by the server; the deletion once more"
	st=0
	sq_gone 2 || st=$?
fi
[ $st = 0 ] || fail "sq: fio failed across the deletion of $dev$([ $st = 1 ] && echo ", twice by the client's RPC layer")"

if rmmod rpcrdma 2>/dev/null; then
	fail "unload: rmmod rpcrdma succeeded while an NFS/RDMA mount was active"
else
	pass "unload: rmmod rpcrdma refused while mounted"
fi
umount /mnt/s
rpc.nfsd 0
sleep 1
l=$(send_path_leaks)
[ -z "$l" ] || fail "unload: Send path still holds $l after umount and nfsd stop"
unload_rpcrdma 20 || { fail "unload: rpcrdma still in use 20 s after umount and nfsd stop"; exit 1; }
head -c 1048576 /dev/urandom >/tmp/copy
want=$(sha256sum </tmp/copy | cut -d' ' -f1)
i=0 served=0
while [ $i -lt "$cycles" ]; do
	i=$((i + 1))
	insmod "$ko" || { fail "unload: insmod in cycle $i"; break; }
	coverage_note_module
	if [ $((i % 5)) = 0 ]; then
		rpc.nfsd 8
		echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist
		if mount_rdma 3 /mnt/s && cp /tmp/copy /mnt/s/copy && umount /mnt/s &&
			mount_rdma 3 /mnt/s && [ "$(sha256sum </mnt/s/copy | cut -d' ' -f1)" = "$want" ]; then
			served=$((served + 1))
		else
			fail "unload: cycle $i did not serve a verified copy"
		fi
		umount /mnt/s 2>/dev/null
		rpc.nfsd 0
	fi
	l=$(send_path_leaks)
	[ -z "$l" ] || fail "unload: cycle $i left $l"
	unload_rpcrdma 20 || { fail "unload: rpcrdma still in use 20 s into cycle $i"; break; }
done
result unload_cycles "$i"
result unload_cycles_serving "$served"
[ "$i" = "$cycles" ] && [ $FAILS = 0 ] &&
	pass "unload: $cycles load/unload cycles, $served of them serving a verified copy, no leak, no refusal"
kmemleak_check "unload"
result failures $FAILS
exit $FAILS
