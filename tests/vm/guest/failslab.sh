#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# failslab.sh FAULTS [FLAVOUR]: slab allocation failures inside the Send
# path (CONFIG_FAILSLAB with the stack-trace filter, on the test and debug
# kernels), of FLAVOUR (rust unless given). The filter's address range is
# exactly the text of the Send path: for rust the Rust object and its C
# shim, for c the object of svc_rdma_sendto.c. Only allocations made from
# it fail (send ctxts, and the R/W contexts and scatterlists
# svc_rdma_rw.c allocates for the Write and Reply chunks), under a
# verifying fio load. FAULTS failures must be injected; each closes
# the connection, the client reconnects, fio verifies, nothing leaks.
. /work/tests/vm/guest/lib.sh

faults=$1 flavour=${2:-rust}
F=/sys/kernel/debug/failslab
[ -w $F/require-start ] || { fail "failslab: this kernel has no failslab stack filter (make check-debug)"; exit 1; }
load_rpcrdma "$flavour" || exit 1
setup_fabric
start_nfsd

# The address range of the Send path's text: for rust the Rust object and
# the C shim, contiguous in the module's text (the crate's hot functions,
# the shim's, then the crate's cold ones, which the linker places after
# them); for c the functions of svc_rdma_sendto.o (scripts/build-module.sh
# lists each flavour's). Checked, not assumed.
build=$MODULES/${rs_module_dir:-$flavour}
if [ "$flavour" = rust ]; then
	cat $build/rust-text-symbols.txt $build/shim-symbols.txt >/tmp/sendpath-syms
else
	cat $build/sendpath-symbols.txt >/tmp/sendpath-syms
fi
syms=/tmp/sendpath-syms
awk '$4 == "[rpcrdma]" && ($2 == "t" || $2 == "T") { print $1, $3 }' /proc/kallsyms |
	sort >/tmp/modsyms
range=$(awk -v list="$syms" '
	BEGIN { while ((getline s < list) > 0) ours[s] = 1 }
	{ addr[NR] = $1; name[NR] = $2; if ($2 in ours) { if (!first) first = NR; last = NR } }
	END {
		if (!first) { print "none"; exit }
		# KASAN gives every object a constructor of that name: one inside
		# the range belongs to the crate or the shim.
		for (i = first; i <= last; i++)
			if (!(name[i] in ours) && name[i] !~ /^asan\.module_[cd]tor$/) { print "foreign", name[i]; exit }
		print addr[first], (last < NR ? addr[last + 1] : "end"), last - first + 1
	}' /tmp/modsyms)
set -- $range
case "$1" in
none|foreign) fail "failslab: cannot find the Send path's text in kallsyms ($range)"; exit 1 ;;
esac
[ "$2" = end ] && { fail "failslab: the Send path is last in the module's text, no end address"; exit 1; }
# 64-bit addresses: beyond the shell's signed arithmetic.
start=0x$1 end=0x$2
result failslab_text_functions "$3"
result failslab_text_bytes "$(python3 -c "print($end - $start)")"
log "failslab: Send path text $1..$2 ($3 functions)"

mount_rdma 3 /mnt/fs || { fail "NFSv3 mount"; exit 1; }
start_verifying_load /mnt/fs failslab
sleep 3
# The error events of both ends too: which one turned a fault into an
# error the application saw, if one did.
trace_start rpcrdma:svcrdma_send_err rpcrdma:svcrdma_err_chunk rpcrdma:svcrdma_err_vers \
	rpcrdma:xprtrdma_err_chunk rpcrdma:xprtrdma_err_vers rpcrdma:xprtrdma_err_unrecognized \
	rpcrdma:xprtrdma_reply_vers_err rpcrdma:xprtrdma_reply_rqst_err rpcrdma:xprtrdma_reply_short_err \
	rpcrdma:xprtrdma_reply_hdr_err nfs:nfs_pgio_error
c0=$(client_connects)
t0=$(date +%s)
# Quiet (a report per fault would read as a kernel problem), sleeping
# allocations included, a quarter of the matching allocations fail.
echo 0 >$F/verbose
echo N >$F/ignore-gfp-wait
echo 32 >$F/stacktrace-depth
echo $start >$F/require-start
echo $end >$F/require-end
echo 1 >$F/interval
echo "$faults" >$F/times
echo 25 >$F/probability
while [ "$(cat $F/times)" -gt 0 ] && [ $(($(date +%s) - t0)) -lt 300 ]; do
	kill -0 $FIO_PID 2>/dev/null || break
	sleep 1
done
echo 0 >$F/probability
n=$((faults - $(cat $F/times)))
secs=$(($(date +%s) - t0))
sleep 2
trace_stop
c=$(($(client_connects) - c0))
result failslab_injected "$n"
result failslab_reconnects "$c"
result failslab_send_err "$(trace_count svcrdma_send_err)"
result failslab_seconds "$secs"
if [ "$n" -ge "$faults" ] && [ "$c" -gt 0 ]; then
	pass "failslab: $n slab failures in the Send path in $secs s; the client reconnected $c times"
elif [ "$n" -ge "$faults" ]; then
	fail "failslab: $n slab failures injected but no connection closed"
else
	fail "failslab: only $n of $faults slab failures injected in 300 s"
fi
kill $READS_PID
sleep 5
if stop_verifying_fio $FIO_PID failslab_fio_KiB; then
	pass "failslab: fio verified its data through every failure ($FIO_KIB KiB)"
else
	fail "failslab: fio stopped (verify or I/O error)"
	grep -v ' svcrdma_send_err:' /sys/kernel/tracing/trace | grep -v '^#' | head -n 20
fi
umount /mnt/fs
rpc.nfsd 0
sleep 1
expect_no_leaks failslab
if rmmod rpcrdma; then pass "failslab: rpcrdma unloads"; else fail "failslab: rpcrdma does not unload"; fi
dma_mode_check failslab
kmemleak_check failslab
result failures $FAILS
exit $FAILS
