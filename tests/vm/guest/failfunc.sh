#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# failfunc.sh FAULTS: the error paths of the production build of the rust
# flavour, failed with the kernel's function error injection
# (/sys/kernel/debug/fail_function, CONFIG_FAIL_FUNCTION of the test
# kernels). The shim marks the entry points ALLOW_ERROR_INJECTION:
#   rs_ib_post_send     fails with -ENOMEM before anything is posted;
#   dma_map             the module's own helpers of the RDMA abstraction's
#                       mappings, rust_helper_ib_dma_map_page (a reply's
#                       page fragment) and rust_helper_ib_dma_map_single (a
#                       kvec, or a new ctxt's header), armed together,
#                       return DMA_MAPPING_ERROR (-1) (only in the
#                       DMA-mapped mode, where they map at all).
# Unlike faults.sh (RPCRDMA_RS_FAULT_INJECTION=y, a build of its own),
# this fails the very code that ships. Under a verifying fio load and
# small direct reads on an NFSv3 mount, FAULTS failures per function
# (every 10th call): each closes the connection, the client reconnects,
# fio verifies. Then one post of the NFSv4.1 backchannel fails
# (backchannel_post_failure). Afterwards nothing is left (leak counters,
# mappings).
. /work/tests/vm/guest/lib.sh

faults=$1
F=/sys/kernel/debug/fail_function
[ -w $F/inject ] || { fail "failfunc: this kernel has no fail_function (CONFIG_FAIL_FUNCTION)"; exit 1; }
# backchannel_post_failure: the NFSv4.1 backchannel. svc_rdma_bc_sendto
# (svc_rdma_backchannel.c) posts the server's callbacks through the
# exported svc_rdma_post_send and, when that fails, puts its ctxt with the
# exported svc_rdma_send_ctxt_put: their only callers outside our crate.
# One delegation recall (the client reads a file it holds open, so holds a
# read delegation; a local writer breaks it) is made to fail. The
# stack-trace filter of the fault injection (require-start/-end) fails
# only a post made under xprt_rdma_bc_send_request, never nfsd's replies.
# The connection closes; the client reconnects, the file is still read
# and written, and the leak counters at the end see the ctxt put back.
backchannel_post_failure() {
	local sym end c0 n= req lbt io bc_failed K f=/mnt/bc/deleg
	sym=$(awk '$3 == "xprt_rdma_bc_send_request" { print $1; exit }' /proc/kallsyms)
	end=$(sort /proc/kallsyms | awk -v s="$sym" 'f && $1 != s { print $1; exit } $1 == s { f = 1 }')
	if [ -z "$sym" ] || [ -z "$end" ] || [ "$sym" = 0000000000000000 ]; then
		fail "failfunc backchannel: no address for xprt_rdma_bc_send_request in /proc/kallsyms"
		return
	fi
	# Written on the server's side: a file the server holds open for
	# writing is never delegated.
	dd if=/dev/urandom of=$EXPORT/deleg bs=4k count=4 status=none
	# The mount's first connection runs as an admin may set it: 16 KiB
	# Calls (sunrpc.svc_rdma.max_req_size, read when a connection is
	# accepted), so its ctxts have 8 Send SGEs, not 5.
	req=$(cat /proc/sys/sunrpc/svc_rdma/max_req_size)
	echo 16384 >/proc/sys/sunrpc/svc_rdma/max_req_size
	mount_rdma 4.1 /mnt/bc || n=failed
	echo "$req" >/proc/sys/sunrpc/svc_rdma/max_req_size
	[ "${n:-}" != failed ] || { fail "failfunc backchannel: NFSv4.1 mount"; return; }
	# knfsd delegates once the session's backchannel is up: a few tries.
	n=0
	while :; do
		exec 3<$f
		cat <&3 >/dev/null
		grep -qs 'type: deleg' /proc/fs/nfsd/clients/*/states && break
		exec 3<&-
		n=$((n + 1))
		if [ $n -ge 10 ]; then
			umount /mnt/bc
			fail "failfunc backchannel: the client holds no delegation (nothing to recall)"
			return
		fi
		sleep 1
	done
	echo rs_ib_post_send >$F/inject
	printf %#x -12 >$F/rs_ib_post_send/retval
	echo "0x$sym" >$F/require-start
	echo "0x$end" >$F/require-end
	echo 1 >$F/interval
	# Whose post failed: the backchannel's send returns -ENOTCONN then
	# (a return probe; the injection's own stack dump would read as a
	# kernel report).
	K=/sys/kernel/tracing
	echo 'r:rs/bc_send rpcrdma:xprt_rdma_bc_send_request ret=$retval:s32' >>$K/kprobe_events &&
		echo 1 >$K/events/rs/bc_send/enable && echo 1 >$K/tracing_on ||
		fail "failfunc backchannel: no return probe on xprt_rdma_bc_send_request"
	echo 1 >$F/times
	c0=$(client_connects)
	# The recall is sent at once; the writer waits at most the lease
	# break time for the delegation's return.
	lbt=$(cat /proc/sys/fs/lease-break-time)
	echo 2 >/proc/sys/fs/lease-break-time
	timeout 30 sh -c "echo x >>$EXPORT/deleg" || true
	echo "$lbt" >/proc/sys/fs/lease-break-time
	n=0
	while [ "$(cat $F/times)" -gt 0 ] && [ $n -lt 20 ]; do
		sleep 1
		n=$((n + 1))
	done
	n=$((1 - $(cat $F/times)))
	echo 0 >$F/times
	echo "!rs_ib_post_send" >$F/inject
	bc_failed=$(grep -c 'bc_send: .* ret=-107$' $K/trace || true)
	echo 0 >$K/events/rs/bc_send/enable 2>/dev/null || true
	echo '-:rs/bc_send' >>$K/kprobe_events 2>/dev/null || true
	echo 0 >$F/require-start
	echo 18446744073709551615 >$F/require-end
	exec 3<&-
	# The mount works again: a write and its read-back over a new connection.
	if dd if=/dev/urandom of=/tmp/bc.ref bs=4k count=8 status=none &&
		cp /tmp/bc.ref $f.2 && cmp -s /tmp/bc.ref $f.2; then
		io=ok
	else
		io=failed
	fi
	result failfunc_backchannel_injected "$n"
	result failfunc_backchannel_reconnects "$(($(client_connects) - c0))"
	result failfunc_backchannel_sends_failed "$bc_failed"
	if [ "$n" = 1 ] && [ "$bc_failed" -lt 1 ]; then
		fail "failfunc backchannel: the failed post was not a callback's (no xprt_rdma_bc_send_request returned -ENOTCONN)"
	elif [ "$n" = 1 ] && [ $io = ok ]; then
		pass "failfunc backchannel: a delegation recall's post failed; the client reconnected and I/O went on"
	elif [ "$n" = 1 ]; then
		fail "failfunc backchannel: after the failed recall the mount's I/O failed"
	else
		fail "failfunc backchannel: no callback was posted in 20 s (no recall)"
	fi
	timeout 60 umount /mnt/bc || { fail "failfunc backchannel: umount"; umount -l /mnt/bc || true; }
}

load_rpcrdma rust || exit 1
# point_fns POINT: the functions a fault point arms.
point_fns() {
	case $1 in
	dma_map) echo rust_helper_ib_dma_map_page rust_helper_ib_dma_map_single ;;
	*) echo "$1" ;;
	esac
}
for fn in rs_ib_post_send $(point_fns dma_map); do
	grep -q "^$fn[[:space:]].*ERRNO" $F/injectable ||
		{ fail "failfunc: $fn is not error-injectable (not in $F/injectable)"; exit 1; }
done
setup_fabric
start_nfsd
mount_rdma 3 /mnt/ff || { fail "NFSv3 mount"; exit 1; }
start_verifying_load /mnt/ff failfunc
sleep 3
# One line per fault (verbose 1, no stack dump), every 10th call.
echo 1 >$F/verbose
echo 10 >$F/interval
echo 100 >$F/probability
for fn in rs_ib_post_send dma_map; do
	case $fn in
	dma_map)
		if [ "$DMA_MAPPED" != 1 ]; then
			log "failfunc: $fn skipped: the virtual-DMA mode maps nothing"
			continue
		fi
		retval=-1 ;;
	*) retval=-12 ;;
	esac
	armed=
	for f in $(point_fns $fn); do
		echo "$f" >$F/inject || { fail "failfunc: cannot arm $f"; continue; }
		armed="$armed $f"
		printf %#x "$retval" >$F/$f/retval
		# The value decides what the caller sees: -1 is DMA_MAPPING_ERROR;
		# any other would pass for an address. Checked before any call fails.
		want=$(printf %x "$retval")
		have=$(cat $F/$f/retval)
		[ "$have" = "$want" ] || fail "failfunc: $f's retval reads $have, not $want"
	done
	[ -n "$armed" ] || continue
	c0=$(client_connects)
	t0=$(date +%s)
	echo "$faults" >$F/times
	while [ "$(cat $F/times)" -gt 0 ] && [ $(($(date +%s) - t0)) -lt 240 ]; do
		kill -0 $FIO_PID 2>/dev/null || break
		sleep 1
	done
	n=$((faults - $(cat $F/times)))
	echo 0 >$F/times
	for f in $armed; do echo "!$f" >$F/inject; done
	sleep 2
	c=$(($(client_connects) - c0))
	result "failfunc_${fn}_injected" "$n"
	result "failfunc_${fn}_reconnects" "$c"
	result "failfunc_${fn}_seconds" "$(($(date +%s) - t0))"
	if [ "$n" -ge "$faults" ] && [ "$c" -gt 0 ]; then
		pass "failfunc: $n failures of $fn; the client reconnected $c times and I/O went on"
	elif [ "$n" -ge "$faults" ]; then
		fail "failfunc: $n failures of $fn but the connection never closed"
	else
		fail "failfunc: only $n of $faults failures of $fn in 240 s"
	fi
	kill -0 $FIO_PID 2>/dev/null || { fail "failfunc: fio stopped during $fn"; break; }
done
kill $READS_PID
sleep 5
if stop_verifying_fio $FIO_PID failfunc_fio_KiB; then
	pass "failfunc: fio verified its data through every failure ($FIO_KIB KiB)"
else
	fail "failfunc: fio stopped (verify or I/O error)"
fi
umount /mnt/ff
backchannel_post_failure
rpc.nfsd 0
sleep 1
expect_no_leaks failfunc
if rmmod rpcrdma; then pass "failfunc: rpcrdma unloads"; else fail "failfunc: rpcrdma does not unload"; fi
dma_mode_check failfunc
kmemleak_check failfunc
result failures $FAILS
exit $FAILS
