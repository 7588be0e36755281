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
# an I/O error names its layer: the client's transport (connect status,
# RPC errors, RDMA_ERROR received, marshalling) or the server's NFS
# (nfsd's write errors, the client's WRITE replies with an error).
gone_events=
for e in sunrpc:rpc_call_rpcerror sunrpc:rpc_connect_status rpcrdma:xprtrdma_device_removal \
	rpcrdma:xprtrdma_op_connect rpcrdma:xprtrdma_connect rpcrdma:xprtrdma_disconnect \
	rpcrdma:xprtrdma_marshal_failed rpcrdma:xprtrdma_err_chunk rpcrdma:xprtrdma_err_vers \
	rpcrdma:xprtrdma_err_unrecognized nfsd:nfsd_write_err nfs:nfs_pgio_error nfs:nfs_writeback_done; do
	[ -d "/sys/kernel/tracing/events/${e%%:*}/${e#*:}" ] && gone_events="$gone_events $e"
done
wb=/sys/kernel/tracing/events/nfs/nfs_writeback_done/filter
[ -w $wb ] && echo 'error < 0' >$wb
trace_start $gone_events
result sq_gone_events_enabled "$(echo $gone_events | wc -w)"
fio --name=sqgone --directory=/mnt/s --rw=randrw --bs=1m --size=16m --numjobs=4 \
	--direct=1 --ioengine=libaio --iodepth=32 --runtime=20 --time_based \
	--verify=crc32c --verify_backlog=8 --verify_fatal=1 --invalidate=0 \
	--serialize_overlap=1 --verify_state_save=0 --group_reporting \
	--output-format=terse --terse-version=3 >/tmp/fio-gone.out 2>&1 &
gone_fio=$!
sleep 6
c0=$(client_connects) s0=$(stat_rdma sq_starve)
timeout 120 rdma link delete $dev || fail "sq: deleting $dev under load failed or took over 120 s"
s1=$(stat_rdma sq_starve)
rdma link add $dev type "$FABRIC" netdev eth0 || fail "sq: re-adding $dev"
if wait $gone_fio; then
	c=$(($(client_connects) - c0))
	result sq_gone_reconnects "$c"
	result sq_gone_starved_before "$((s1 - s0))"
	if [ "$c" -gt 0 ]; then
		pass "sq: $dev deleted under SQ exhaustion and re-added; the client reconnected $c times and fio verified"
	else
		fail "sq: $dev deleted under load but the client never reconnected"
	fi
else
	tail -n 10 /tmp/fio-gone.out
	fail "sq: fio failed across the deletion of $dev"
	# A passing run traces only reconnects (connect status, connect,
	# disconnect, device removal, marshalling refused while disconnected):
	# the errors first, then the last of the rest.
	echo "errors traced across the deletion (events:$gone_events):"
	grep -E ' (rpc_call_rpcerror|nfs_pgio_error|nfs_writeback_done|nfsd_write_err|xprtrdma_err_[a-z]*):' \
		/sys/kernel/tracing/trace | head -n 40
	echo "the last events traced:"
	grep -v '^#' /sys/kernel/tracing/trace | tail -n 20
fi
# Off before rpcrdma goes: its events go with it.
trace_stop
# Each event's count (the token after the timestamp names it).
result sq_gone_events_traced "$(grep -v '^#' /sys/kernel/tracing/trace |
	awk '{ for (i = 1; i < NF; i++) if ($i ~ /^[0-9]+\.[0-9]+:$/) { n[$(i + 1)]++; break } }
	END { for (e in n) { printf "%s%s%d", s, e, n[e]; s = " " } }')"
echo >/sys/kernel/tracing/set_event

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
