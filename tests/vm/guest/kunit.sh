#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# kunit.sh FLAVOUR [BUILD]: load our rpcrdma.ko (of build dir BUILD, e.g.
# rust-with-c, the differential build that also links the C file), whose
# KUnit suites run at load, and hand every suite's KTAP (debugfs) to the
# host as /results/kunit/<suite>.ktap. The host parses them into pass/fail.
. /work/tests/vm/guest/lib.sh

flavour=${1:-rust}
rs_module_dir=${2:-$flavour}
load_rpcrdma "$flavour"
mkdir -p /results/kunit
n=0
# The driver's suites, and those of the generic abstractions compiled into
# the module (src/rust/kernel/: rust_kernel_llist, rust_kernel_rdma_cq, rust_kernel_rdma_dma).
for d in /sys/kernel/debug/kunit/rpcrdma_rs_* /sys/kernel/debug/kunit/rust_kernel_llist \
	/sys/kernel/debug/kunit/rust_kernel_rdma_*; do
	[ -f "$d/results" ] || continue
	cp "$d/results" "/results/kunit/$(basename "$d").ktap"
	n=$((n + 1))
done
log "collected $n KUnit suites"
[ "$n" -gt 0 ] || fail "no rpcrdma_rs_* KUnit suite ran at module load"
# Unloading must work too, with nothing mounted.
rmmod rpcrdma || fail "rmmod rpcrdma"
exit $FAILS
