#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# failfunc.sh FAULTS: the error paths of the production build of the rust
# flavour, failed with the kernel's function error injection
# (/sys/kernel/debug/fail_function, CONFIG_FAIL_FUNCTION of the test
# kernels). The shim marks two entry points ALLOW_ERROR_INJECTION:
#   rs_ib_post_send     fails with -ENOMEM before anything is posted;
#   rs_ib_dma_map_page  returns DMA_MAPPING_ERROR (-1): a reply's page, or
#                       a new ctxt's header, cannot be mapped (only in the
#                       DMA-mapped mode, where the shim maps at all).
# Unlike faults.sh (RPCRDMA_RS_FAULT_INJECTION=y, a build of its own),
# this fails the very code that ships. Under a verifying fio load and
# small direct reads on an NFSv3 mount, FAULTS failures per function
# (every 10th call): each closes the connection, the client reconnects,
# fio verifies; afterwards nothing is left (leak counters, mappings).
. /work/tests/vm/guest/lib.sh

faults=$1
F=/sys/kernel/debug/fail_function
[ -w $F/inject ] || { fail "failfunc: this kernel has no fail_function (CONFIG_FAIL_FUNCTION)"; exit 1; }
load_rpcrdma rust || exit 1
for fn in rs_ib_post_send rs_ib_dma_map_page; do
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
for fn in rs_ib_post_send rs_ib_dma_map_page; do
	case $fn in
	rs_ib_dma_map_page)
		if [ "$DMA_MAPPED" != 1 ]; then
			log "failfunc: $fn skipped: the virtual-DMA mode maps nothing"
			continue
		fi
		retval=-1 ;;
	*) retval=-12 ;;
	esac
	echo "$fn" >$F/inject || { fail "failfunc: cannot arm $fn"; continue; }
	printf %#x "$retval" >$F/$fn/retval
	# The value decides what the caller sees: -1 is DMA_MAPPING_ERROR;
	# any other would pass for an address. Checked before any call fails.
	want=$(printf %x "$retval")
	have=$(cat $F/$fn/retval)
	if [ "$have" != "$want" ]; then
		echo >$F/inject
		fail "failfunc: $fn's retval reads $have, not $want"
		continue
	fi
	c0=$(client_connects)
	t0=$(date +%s)
	echo "$faults" >$F/times
	while [ "$(cat $F/times)" -gt 0 ] && [ $(($(date +%s) - t0)) -lt 240 ]; do
		kill -0 $FIO_PID 2>/dev/null || break
		sleep 1
	done
	n=$((faults - $(cat $F/times)))
	echo 0 >$F/times
	echo "!$fn" >$F/inject
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
rpc.nfsd 0
sleep 1
expect_no_leaks failfunc
if rmmod rpcrdma; then pass "failfunc: rpcrdma unloads"; else fail "failfunc: rpcrdma does not unload"; fi
dma_mode_check failfunc
kmemleak_check failfunc
result failures $FAILS
exit $FAILS
