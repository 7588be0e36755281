#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh [all|host|build|kunit|intree|e2e|conformance|install|hostile|hostile-iommu|dma-exhaust|failslab-c|stress|faults|failfunc|dma-mutations|read-sink|storm|bench-smoke|profile-smoke|debian|debug|debug-kunit|debug-storm|debug-failslab|debug-faults|debug-teardown-strand|iommu|iommu-PHASE|coverage]:
# the test suite behind `make check` (all), `make check-debug` (debug;
# debug-kunit, debug-storm [CYCLES], debug-failslab, debug-faults and
# debug-teardown-strand run one of its phases alone) and `make check-iommu`
# (iommu; iommu-teardown, iommu-conformance, ... run one of its phases:
# the test kernel, booted behind an emulated IOMMU).
# Sets up and builds whatever is missing, runs the phases, prints a line per
# check and ends with "N passed, N failed"; exits non-zero on any failure.

# The debug run uses the debug kernel (scripts/kernel-debug.config) for
# everything, including the builds and VMs of the phases it shares. The
# iommu run uses the test kernel, and its DMA-mapped VMs boot behind the
# IOMMU (DMA_IOMMU=1, scripts/vm-run.sh).
case "${1:-}" in
debug | debug-*) export KERNEL_VARIANT=debug ;;
iommu | iommu-*) export DMA_IOMMU=1 ;;
esac
. "$(dirname "$0")/lib.sh"

WHAT=${1:-all}
PASSED=0 FAILED=0
FAILED_NAMES=()
TIMES=()
T_START=$SECONDS
T_START_EPOCH=$(date +%s)

ok()  { PASSED=$((PASSED + 1)); printf 'PASS: %s\n' "$1"; }
bad() { FAILED=$((FAILED + 1)); FAILED_NAMES+=("$1"); printf 'FAIL: %s\n' "$1"; }
# dma_mode_ok RUN NAME WHAT: the DMA-mapped run RUN, called NAME, ran in
# the mode it should (lib.sh iommu_for): its guest proved that mode.
dma_mode_ok() {
	local mode
	if mode=$(dma_mode_check "$1" "$2"); then
		ok "$3: DMA-mapped, $([ "$mode" = iommu ] && echo "behind the emulated IOMMU (strict)" || echo "bounced through swiotlb")"
	else
		bad "$3: its guest $mode ($1)"
	fi
}
# phase NAME CMD...: time a phase; a phase that fails to run counts as one
# failure (its own checks, if any, were counted by CMD).
phase() {
	local name=$1 t0=$SECONDS rc=0 failed=$FAILED
	shift
	say "phase: $name"
	"$@" || rc=$?
	[ "$rc" = 0 ] || [ "$FAILED" != "$failed" ] || bad "phase $name: exit status $rc, and no check of it failed"
	TIMES+=("$(printf '%-24s %5ds %s' "$name" $((SECONDS - t0)) "$([ $rc = 0 ] && echo ok || echo "FAILED ($rc)")")")
	return $rc
}

summary() {
	echo
	say "phase times:"
	printf '    %s\n' "${TIMES[@]}"
	printf '    %-24s %5ds\n' total $((SECONDS - T_START))
	printf '%s\n' "${TIMES[@]}" >"$LOGS/check-times.txt"
	# What ran, at which commit, with what result (the series' cover
	# letter quotes a full run's: scripts/series.sh).
	printf 'what=%s\nrev=%s\ndate=%s\nseconds=%s\nresult=%s passed, %s failed\n' "$WHAT" \
		"$(git -C "$TOP" describe --always --dirty 2>/dev/null || echo unknown)" \
		"$(date -u +%F)" $((SECONDS - T_START)) "$PASSED" "$FAILED" >"$LOGS/check-result-$WHAT.txt"
	if [ ${#FAILED_NAMES[@]} -gt 0 ]; then
		say "failed:"
		printf '    %s\n' "${FAILED_NAMES[@]}"
	fi
	echo "$PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ]
}
# The process groups started in the background (setsid), stopped with us.
BACKGROUND=()
trap 'echo "check.sh: interrupted"; for g in "${BACKGROUND[@]}"; do kill -- -"$g" 2>/dev/null; done; summary; exit 1' INT TERM

# Phases beside the main sequence (make check's budget, testing.rst): a
# TCG guest keeps about one core of two busy, so a one-VM phase can run
# beside another one-VM phase or a build. beside_start runs a phase in its
# own process group with counters of its own, its output held in a file;
# beside_collect waits for it, shows that output whole and adds its
# counts, so the log reads as if the phases had run one after the other.
declare -A BESIDE_PID
beside_start() { # NAME FUNC [ARG...]
	local name=$1 out=$LOGS/beside-$1
	rm -f "$out.out" "$out.state"
	set -m # its own process group, which the trap above can stop
	(
		# Job control only to give this lane a process group of its
		# own: its children stay in it.
		set +m
		trap - INT TERM
		PASSED=0 FAILED=0 FAILED_NAMES=() TIMES=()
		phase "$@"
		{
			echo "$PASSED $FAILED"
			printf 'T %s\n' "${TIMES[@]}"
			[ ${#FAILED_NAMES[@]} = 0 ] || printf 'F %s\n' "${FAILED_NAMES[@]}"
		} >"$out.state"
	) >"$out.out" 2>&1 </dev/null &
	BESIDE_PID[$name]=$!
	set +m
	BACKGROUND+=("${BESIDE_PID[$name]}")
	say "phase $name: started beside the next phases (its output follows when it ends; $out.out)"
}
beside_collect() { # NAME
	local name=$1 out=$LOGS/beside-$1 t0=$SECONDS p f line
	wait "${BESIDE_PID[$name]}" 2>/dev/null || true
	[ $((SECONDS - t0)) -lt 2 ] || echo "    waited $((SECONDS - t0)) s for phase $name"
	cat "$out.out"
	if ! { read -r p f && [ -n "$f" ]; } <"$out.state" 2>/dev/null; then
		bad "phase $name ended without its counts (killed?) ($out.out)"
		return 1
	fi
	PASSED=$((PASSED + p)) FAILED=$((FAILED + f))
	while IFS= read -r line; do
		case $line in
		"T "*) TIMES+=("${line#T } (beside)") ;;
		"F "*) FAILED_NAMES+=("${line#F }") ;;
		esac
	done < <(tail -n +2 "$out.state")
}

do_setup() {
	bash "$TOP/scripts/setup.sh" || { bad "set-up"; return 1; }
}

do_host() {
	local log=$LOGS/host-tests.log rc=0
	(cd "$TOP/tests/host" && cargo test --color never) >"$log" 2>&1 || rc=$?
	local passed failed
	passed=$(sed -nE 's/^test result: .* ([0-9]+) passed; ([0-9]+) failed.*/\1/p' "$log" | paste -sd+ | bc)
	failed=$(sed -nE 's/^test result: .* ([0-9]+) passed; ([0-9]+) failed.*/\2/p' "$log" | paste -sd+ | bc)
	grep -E '^test .* \.\.\. (ok|FAILED)$' "$log" | sed 's/^/    /'
	if [ "$rc" != 0 ] || [ -z "$passed" ] || [ "$passed" = 0 ]; then
		tail -n 30 "$log"
		bad "host tests (cargo test exit $rc, log $log)"
		return 1
	fi
	PASSED=$((PASSED + passed)) FAILED=$((FAILED + failed))
	echo "    host: $passed passed, $failed failed (log $log)"
	# The fixes every build carries to the kernel's C: applied, skipped
	# where the source has them, the build stopped where one does not apply.
	relay_script "" bash "$TOP/tests/host/test_module_patches.sh" || true
	# The package's version follows what it ships (a new .deb under an old
	# version installs as a no-op): the check itself, then its own test.
	relay_script "" bash "$TOP/scripts/shipped-version.sh" check || true
	relay_script "" bash "$TOP/tests/host/test_shipped_version.sh" || true
	# Which DMA-mapped runs boot behind the IOMMU (lib.sh iommu_for).
	relay_script "" bash "$TOP/tests/host/test_dma_modes.sh" || true
	# When a conformance phase's Send errors are the client's closing.
	relay_script "" bash "$TOP/tests/host/test_conformance_checks.sh" || true
	# dma-exhaust's verdict, on pairs of runs that break each of its checks.
	relay_script "" bash "$TOP/tests/host/test_dma_exhaust.sh" || true
	# The conformance suite's wire checker, tested on rows that break each rule.
	local t
	for t in "$TOP"/tests/host/py/test_*.py; do
		if python3 "$t" >"$LOGS/$(basename "$t" .py).log" 2>&1; then
			ok "$(basename "$t"): $(grep -E '^Ran [0-9]+ tests' "$LOGS/$(basename "$t" .py).log")"
		else
			tail -n 20 "$LOGS/$(basename "$t" .py).log"
			bad "$(basename "$t") ($LOGS/$(basename "$t" .py).log)"
		fi
	done
}

# The kernel (test or, with KERNEL_VARIANT=debug, debug), the rootfs and
# both flavours against that kernel.
build_kernel_and_modules() {
	local k=${KERNEL_VARIANT:-test} f rootfs rc=0
	# The rootfs (debootstrap: downloads and package unpacking) beside the
	# kernel build (compilers), not after it.
	bash "$TOP/scripts/mkrootfs.sh" >/dev/null 2>"$LOGS/rootfs.out" &
	rootfs=$!
	bash "$TOP/scripts/build-kernel.sh" >/dev/null || rc=$?
	if ! wait "$rootfs"; then
		tail -n 5 "$LOGS/rootfs.out"
		bad "guest rootfs ($LOGS/rootfs.out)"
		return 1
	fi
	sed -n '$p' "$LOGS/rootfs.out"
	[ "$rc" = 0 ] || { bad "$k kernel build"; return 1; }
	for f in c rust; do
		if bash "$TOP/scripts/build-module.sh" "$f"; then
			ok "rpcrdma.ko builds against the $k kernel, flavour $f"
		else
			bad "rpcrdma.ko builds against the $k kernel, flavour $f"
			return 1
		fi
	done
}

do_build() {
	build_kernel_and_modules || return 1
	if [ "${COVERAGE:-0}" = 1 ]; then
		local f
		for f in ${COV_FLAVOURS:-rust}; do
			if coverage_plugin_build && coverage_build "$f"; then
				ok "coverage: the TCG plugin and build/$f-cov (production, with debuginfo) build"
			else
				bad "coverage: the plugin or build/$f-cov does not build ($LOGS/module-$f-cov.log)"
				COVERAGE=0
			fi
		done
	fi
	# What each flavour links.
	if grep -qx svc_rdma_sendto.o "$TOP/build/c/objects.txt" &&
		! grep -q '_rs\.o$' "$TOP/build/c/objects.txt"; then
		ok "c flavour links svc_rdma_sendto.o and no Rust"
	else
		bad "c flavour object list ($TOP/build/c/objects.txt)"
	fi
	if grep -qx svc_rdma_sendto_rs.o "$TOP/build/rust/objects.txt" &&
		! grep -qx svc_rdma_sendto.o "$TOP/build/rust/objects.txt"; then
		ok "rust flavour links the Rust crate and no svc_rdma_sendto.o"
	else
		bad "rust flavour object list ($TOP/build/rust/objects.txt)"
	fi
	# Every symbol svc_rdma.h declares for svc_rdma_sendto.c is Rust's.
	local want
	want=$(sed -n '/\/\* svc_rdma_sendto.c \*\//,/^$/p' "$(kernel_src)/include/linux/sunrpc/svc_rdma.h" |
		grep -oE 'svc_rdma_[a-z_]+\(' | tr -d '(' | sort -u)
	if [ "$(echo "$want" | wc -l)" -ge 12 ] && [ "$want" = "$(cat "$TOP/build/rust/rust-symbols.txt")" ]; then
		ok "all $(echo "$want" | wc -l) Send-path symbols of svc_rdma.h are defined by the Rust crate"
	else
		bad "Send-path symbols: header declares [$(echo $want)], Rust defines [$(echo $(cat "$TOP/build/rust/rust-symbols.txt"))]"
	fi
	check_c_sendto_switch
	# make check lints in its second lane (side_lane).
	[ "${LINT_BESIDE:-0}" = 1 ] || do_lint
}

# relay_script PREFIX CMD...: run a test script; its PASS:/FAIL: lines count
# as checks here (named with PREFIX), other lines are shown indented.
# Returns the script's exit status; a script that ended without one (killed
# with its subshell) counts as a failure, never as the status of an earlier
# call (which a shared status file left behind once did: a killed debian
# phase passed).
relay_script() {
	local prefix=$1 line rcfile rc
	shift
	rcfile=$(mktemp "$LOGS/relay.rc.XXXXXX")
	while IFS= read -r line; do
		case $line in
		PASS:*) ok "$prefix${line#PASS: }" ;;
		FAIL:*) bad "$prefix${line#FAIL: }" ;;
		*) echo "    $line" ;;
		esac
	# The status by `||`: this subshell inherits `set -e`, which would end
	# it at a failing script before the status is written.
	done < <(
		st=0
		"$@" 2>&1 || st=$?
		echo "$st" >"$rcfile"
	)
	rc=$(cat "$rcfile")
	rm -f "$rcfile"
	if [ -z "$rc" ]; then
		bad "${prefix}$(basename "${2:-$1}") ended without an exit status (killed?)"
		return 1
	fi
	return "$rc"
}

# Lint (scripts/lint.sh, also `make lint`): rustfmt, checkpatch --strict,
# kernel-doc, and a CLIPPY=1 build of the rust flavour with no warning.
do_lint() {
	relay_script "lint: " bash "$TOP/scripts/lint.sh"
}

# The differential build: RPCRDMA_RUST_LINK_C_SENDTO=y links the C file as
# well, its functions renamed to <name>_c, while Rust serves every caller.
# With coverage on, it has build/rust-cov's debuginfo flags, so that the
# functions the KUnit suites leave as they are compile to the same machine
# code as there, and the KUnit run's coverage counts in them
# (coverage_report.py's kunit runs).
kunit_build_args() {
	if cov_wanted rust; then
		echo "RPCRDMA_RUST_LINK_C_SENDTO=y KCFLAGS=-g KRUSTFLAGS=-Cdebuginfo=2"
	else
		echo "RPCRDMA_RUST_LINK_C_SENDTO=y"
	fi
}
check_c_sendto_switch() {
	local rc=0 ko=$TOP/build/rust-with-c/rpcrdma.ko
	MODULE_MAKE_ARGS=$(kunit_build_args) \
		bash "$TOP/scripts/build-module.sh" rust rust-with-c >/dev/null 2>&1 || rc=$?
	if [ "$rc" != 0 ]; then
		bad "rust flavour with RPCRDMA_RUST_LINK_C_SENDTO=y does not build ($LOGS/module-rust-with-c.log)"
		return
	fi
	local syms c_syms
	syms=$(nm --defined-only "$ko")
	c_syms=$(grep -cE ' T svc_rdma_[a-z_]+_c$' <<<"$syms" || true)
	if grep -qx svc_rdma_sendto.o "$TOP/build/rust-with-c/objects.txt" && [ "$c_syms" -ge 12 ] &&
		grep -qE ' T svc_rdma_sendto$' <<<"$syms"; then
		ok "switch RPCRDMA_RUST_LINK_C_SENDTO=y links the C Send path beside Rust ($c_syms C functions as *_c)"
	else
		bad "switch RPCRDMA_RUST_LINK_C_SENDTO=y: object list or *_c symbols wrong ($ko)"
	fi
}

# kunit_suites_built KO: the KUnit suites a module holds (the names of its
# kunit_suite structures, in its read-only data), one per line.
kunit_suites_built() {
	local ko=$1
	# The suite names are NUL-terminated strings of the module; a suite's
	# name is followed in the object by its cases' names, so take those
	# that look like suite names this project uses.
	strings -a "$ko" | grep -xE 'rpcrdma_rs_[a-z_]+|rust_kernel_[a-z_]+' | sort -u
}

# parse_ktap FILE: count the test cases of one KUnit suite.
parse_ktap() {
	local f=$1 suite
	suite=$(basename "$f" .ktap)
	local p n
	p=$(grep -cE '^[[:space:]]+ok [0-9]+ ' "$f" || true)
	n=$(grep -cE '^[[:space:]]+not ok [0-9]+ ' "$f" || true)
	grep -E '^[[:space:]]+(not )?ok [0-9]+ ' "$f" | sed "s/^[[:space:]]*/    $suite: /"
	# (|| true: head's exit may end grep with SIGPIPE under pipefail.)
	grep -E '^[[:space:]]+# .*(Expected|ASSERTION|at src)' "$f" | head -n 20 | sed 's/^/    /' || true
	PASSED=$((PASSED + p)) FAILED=$((FAILED + n))
	if [ "$p" = 0 ] && [ "$n" = 0 ]; then bad "KUnit suite $suite ran no test ($f)"; fi
	if grep -qE '^not ok [0-9]+ ' "$f" && [ "$n" = 0 ]; then bad "KUnit suite $suite failed ($f)"; fi
	# Cross-check with the kernel's own KTAP parser.
	local kp=$(kernel_src)/tools/testing/kunit/kunit.py
	if [ -f "$kp" ]; then
		if ! python3 "$kp" parse "$(realpath "$f")" >"$f.kunitpy" 2>&1; then
			bad "kunit.py parse says suite $suite failed ($f.kunitpy)"
		fi
	fi
}

# The suites run from the differential build (rust flavour plus the C file
# renamed), so that they can replay C's algorithms beside ours. With
# coverage on, under the coverage plugin (a "kunit" run of the report).
do_kunit() {
	local run rc=0 cov=()
	MODULE_MAKE_ARGS=$(kunit_build_args) \
		bash "$TOP/scripts/build-module.sh" rust rust-with-c >/dev/null 2>&1 ||
		{ bad "KUnit: the differential build does not build ($LOGS/module-rust-with-c.log)"; return 1; }
	if cov_wanted rust; then
		coverage_plugin_build
		cov=(-P "$COV_PLUGIN,out=@RUN@/coverage.txt,from=0xffffffffa0000000" -e rs_coverage=1)
	fi
	run=$(bash "$TOP/scripts/vm-run.sh" "${cov[@]}" -t 300 -n kunit kunit rust rust-with-c) || rc=$?
	if [ "$rc" != 0 ]; then
		bad "KUnit VM run (status $rc, logs in $run)"
	elif [ ${#cov[@]} -gt 0 ]; then
		echo "kunit:$TOP/build/rust-with-c:$run" >>"$LOGS/coverage-runs.txt"
	fi
	local n=0 f
	for f in "$run"/kunit/*.ktap; do
		[ -f "$f" ] || continue
		parse_ktap "$f"
		n=$((n + 1))
	done
	[ "$n" -gt 0 ] || bad "no KUnit results in $run/kunit"
	# Every suite the module holds must have reported: one that was not
	# built, or not collected, would pass unseen.
	local suite
	for suite in $(kunit_suites_built "$TOP/build/rust-with-c/rpcrdma.ko"); do
		[ -f "$run/kunit/$suite.ktap" ] || bad "KUnit suite $suite is in the module but reported nothing ($run/kunit)"
	done
	grep -E '^(PASS|FAIL): ' "$run/guest.log" 2>/dev/null | sed 's/^/    guest /'
	check_boot_watchdog
}

# vm-run.sh's boot watchdog: with no time at all to boot (VM_BOOT_LIMIT=0)
# a guest counts as stalled, is booted once more, and the second stall
# fails the run with 124, both runs marked boot-stall.
check_boot_watchdog() {
	local run rc=0 err=$LOGS/boot-watchdog.log
	run=$(VM_BOOT_LIMIT=0 bash "$TOP/scripts/vm-run.sh" -t 60 -n boot-watchdog kunit 2>"$err") || rc=$?
	# The first boot's dir: same vm-run.sh pid, another time, ending -1.
	local pid=${run%-2} first
	pid=${pid##*-}
	first=$(ls -d "$CACHE"/runs/boot-watchdog-*-"$pid"-1 2>/dev/null | head -n 1) || true
	if [ "$rc" = 124 ] && [ -e "$run/boot-stall" ] && [ -e "$first/boot-stall" ] &&
		grep -q 'stalled before init.*booting again' "$err"; then
		ok "VM boot watchdog: a guest that does not reach init is booted once more, then fails (124)"
	else
		bad "VM boot watchdog: exit $rc, runs $first $run ($err)"
	fi
}

# The in-tree form the way kernel CI and a maintainer take it
# (Documentation/intree.rst): scripts/series.sh makes the RFC series from
# this tree, scripts/series-check.sh am applies it with git am onto a clean
# v7.3.4 branch, builds it incrementally (the RDMA core, sunrpc and
# rpcrdma built in, the Send path's choice on Rust) and boots it with the
# kernel's kunit.py: our suites, the abstractions' suites and their
# doctests. Its checks, kunit.py's exit status and our cases from its JSON
# results count. Then series-check.sh boot builds the series' kernel as a
# server runs it (rpcrdma a module) and the conformance suite runs on it.
do_intree() {
	local log=$LOGS/check-intree.log rc=0 p n line series_failed=0
	{ bash "$TOP/scripts/series.sh" && bash "$TOP/scripts/series-check.sh" am; } >"$log" 2>&1 || rc=$?
	grep -E '^    (rpcrdma_rs_[a-z_]+|rust_kernel_llist|rust_kernel_rdma_[a-z]+|doctest [a-z_0-9]+): ' "$log" |
		sed 's/^    /    intree /' || true
	# series-check.sh's own checks, each counted once, by name.
	while IFS= read -r line; do
		case $line in
		PASS:*) ok "intree ${line#PASS: }" ;;
		FAIL:*)
			bad "intree ${line#FAIL: }"
			series_failed=1
			;;
		esac
	done < <(grep -E '^(PASS|FAIL): series' "$log" || true)
	# kunit_summary.py's count of our cases.
	read -r p n < <(sed -nE 's/^([0-9]+) passed, ([0-9]+) failed$/\1 \2/p' "$log" | tail -n 1)
	PASSED=$((PASSED + ${p:-0})) FAILED=$((FAILED + ${n:-0}))
	if [ "$rc" != 0 ] || [ "${p:-0}" = 0 ]; then
		{ grep -E 'Testing complete|Elapsed|ERROR|error:|^!!!' "$log" "$LOGS/series-kunit.log" 2>/dev/null |
			tail -n 5 | sed 's/^/    /'; } || true
		# A failure series-check.sh named is counted already.
		[ "$series_failed" = 1 ] ||
			bad "the series in tree (exit $rc, ${p:-0} of our cases passed; log $log)"
		return 1
	fi
	ok "kunit.py in the series' tree: $(grep -oE 'Ran [0-9]+ tests: .*' "$LOGS/series-kunit.log" | tail -n 1)"

	# The series' kernel booted: built with the test kernel's config and
	# patches and the choice on Rust (series-check.sh boot), then the
	# conformance suite over soft-RoCE against its own rpcrdma.ko,
	# DMA-mapped, wire-checked, in place of a module of ours.
	local boot_log=$LOGS/check-intree-boot.log kb
	rc=0
	bash "$TOP/scripts/series-check.sh" boot >"$boot_log" 2>&1 || rc=$?
	while IFS= read -r line; do
		case $line in
		PASS:*) ok "intree ${line#PASS: }" ;;
		FAIL:*) bad "intree ${line#FAIL: }" ;;
		esac
	done < <(grep -E '^(PASS|FAIL): series' "$boot_log" || true)
	kb=$(tail -n 1 "$boot_log")
	if [ "$rc" != 0 ] || [ ! -f "$kb/.build-complete" ]; then
		grep -q '^FAIL: series' "$boot_log" ||
			bad "intree: the series' kernel to boot (exit $rc; log $boot_log)"
		return 1
	fi
	VM_KERNEL_BUILD=$kb CONF_FABRICS=rxe CONF_TABLE=conformance-intree-table.txt relay_script "intree " bash "$TOP/scripts/conformance.sh" intree
}

# relay_guest PREFIX RUN: count the guest's PASS/FAIL lines as checks
# (lib.sh's relay_guest_log, with this script's counters).
pass() { ok "$@"; }
fail() { bad "$@"; }
relay_guest() { relay_guest_log "$1: " "$2"; }

# smoke FLAVOUR: NFSv3 and NFSv4.1 over RDMA in one VM.
do_e2e_flavour() {
	local flavour=$1 run rc=0
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args "$flavour" trace) -t 600 -n "smoke-$flavour" smoke "$flavour" 8 0 3 4.1) || rc=$?
	cov_note_run "$flavour" "$run"
	relay_guest "e2e $flavour" "$run"
	[ -f "$run/summary" ] && sed 's/^/    /' "$run/summary"
	if [ "$rc" != 0 ]; then
		bad "e2e $flavour VM run (status $rc, logs in $run)"
	fi
	# Nothing may pass without having run: both versions must have verified
	# data, and Send-path tracepoints must have fired. In the rust flavour no
	# C Send-path code is linked, so those replies were sent by Rust.
	local v sends
	for v in v3 v41; do
		if ! grep -qE "^${v}_bytes_verified=[1-9]" "$run/summary" 2>/dev/null; then
			bad "e2e $flavour: no verified bytes for $v"
		fi
		local mapped
		mapped=$(sed -n "s/^${v}_trace_svcrdma_dma_map_page=//p" "$run/summary" 2>/dev/null)
		if [ "${mapped:-0}" -gt 0 ]; then
			ok "e2e $flavour $v: inline replies sent as mapped SGEs ($mapped svcrdma_dma_map_page)"
		else
			bad "e2e $flavour $v: no reply went out as mapped SGEs (svcrdma_dma_map_page = ${mapped:-none})"
		fi
		sends=$(sed -n "s/^${v}_trace_svcrdma_post_send=//p" "$run/summary" 2>/dev/null)
		if [ "${sends:-0}" -gt 0 ]; then
			ok "e2e $flavour $v: $sends replies posted by the $flavour Send path (svcrdma_post_send)"
		else
			bad "e2e $flavour $v: no svcrdma_post_send event during the workload"
		fi
	done
}

# teardown FLAVOUR: server transports torn down under load. The test is
# about Sends in flight at teardown, seen as flushed Send completions;
# whether a stop catches one is timing, so a run that caught none is
# repeated once before the check fails. In the DMA-mapped mode
# (vm-run.sh -D): every mapping of the torn-down transports must be undone.
do_teardown_flavour() {
	local flavour=$1 attempt run rc flushed
	for attempt in 1 2; do
		rc=0
		# shellcheck disable=SC2046 # cov_vm_args' words are options
		run=$(DMA_IOMMU=$(iommu_for "teardown-$flavour") bash "$TOP/scripts/vm-run.sh" $(cov_vm_args "$flavour" trace) \
			-D -t 500 -n "teardown-$flavour" teardown "$flavour" 5) || rc=$?
		cov_note_run "$flavour" "$run"
		flushed=$(sed -n 's/^teardown_trace_svcrdma_wc_send_flush=//p' "$run/summary" 2>/dev/null)
		[ "$rc" = 0 ] && [ "${flushed:-0}" -gt 0 ] && break
		[ "$rc" = 0 ] && echo "    teardown $flavour: no Send was in flight at any stop; running again"
		# A connect request orphaned by the listener's teardown (a bug of
		# svc_rdma_transport.c, both flavours; Documentation/testing.rst)
		# stalls the client for ever: shown, and run once more.
		if [ "$rc" != 0 ] && [ "$attempt" = 1 ] &&
			grep -qE '^teardown_orphaned_connect_requests=[0-9]' "$run/summary" 2>/dev/null; then
			echo "    teardown $flavour: stalled on an orphaned connect request (svc_rdma_transport.c; $run/stall-teardown.txt); running again"
			continue
		fi
		[ "$rc" = 0 ] || break
	done
	relay_guest "teardown $flavour" "$run"
	dma_mode_ok "$run" "teardown-$flavour" "teardown $flavour"
	[ -f "$run/summary" ] && grep -E 'trace|cycles' "$run/summary" | sed 's/^/    /'
	[ "$rc" = 0 ] || bad "teardown $flavour VM run (status $rc, logs in $run)"
	if [ "${flushed:-0}" -gt 0 ]; then
		ok "teardown $flavour: $flushed Send completions flushed by teardown, handled"
	else
		bad "teardown $flavour: no flushed Send completion, the teardown did not catch Sends in flight ($run)"
	fi
}

# teardown_strand STRAND: the teardown test of the rust flavour over
# soft-iWARP whose drain leaves every Send in flight unflushed
# (scripts/build-siw-strand.sh, siw strand_sends): with 1 their completions
# come inside ib_destroy_qp(), with 2 never. siw does this by itself only
# now and then (upstream report 7); here every teardown with Sends in
# flight does, so teardown's handling of ctxts a drain left behind
# (src/ctxt.rs, release_unreturned: QP destroyed early, Send CQ quiesced,
# what completed meanwhile released, what never completed reclaimed) runs
# in the production build, under the coverage plugin. The guest's own
# checks still hold: fio verified, leak counters back to 0, rpcrdma
# unloads, every DMA mapping undone (DMA-mapped mode).
#
# With 3, N1 of the soundness review: the test siw transmits slowly (10 ms
# per WR, so that replies are queued at each of the 4 stops: 5 of 6 stops
# in two trial runs) and flushes all but the last stranded WR 100 ms after
# the drain, and the fault-injection build sleeps 500 ms between
# svc_rdma_free's final drain and the walk over its send ctxts
# (teardown_pause_ms): at the walk some ctxts have completed after the
# final drain, with chunk Writes (reads and READDIRPLUS replies), while
# another is still posted. Teardown must release their R/W contexts while
# the QP lives (before the fix: rdma_rw_ctx_destroy_bvec() on a NULL QP
# once it was destroyed, or, with none posted, the ctxts left on the
# release list for ever), and the window must have been hit. Not under the
# coverage plugin: the fault build is not the one shipped.
do_teardown_strand() {
	local strand=$1 run rc=0 early meanwhile never late flushed vm_args=() cycles=3
	bash "$TOP/scripts/build-siw-strand.sh" >/dev/null 2>"$LOGS/siw-strand.out" ||
		{ bad "teardown siw strand_sends=$strand: siw.ko does not build ($LOGS/siw-strand.out)"; return 1; }
	if [ "$strand" = 3 ]; then
		build_fault_variant >/dev/null 2>&1 ||
			{ bad "teardown siw strand_sends=3: fault-injection build ($LOGS/module-rust-fault.log)"; return 1; }
		vm_args=(-e rs_module_dir=rust-fault -e rs_teardown_pause_ms=500) cycles=4
	else
		# shellcheck disable=SC2207 # cov_vm_args' words are options
		vm_args=($(cov_vm_args rust trace))
	fi
	run=$(DMA_IOMMU=$(iommu_for "teardown-strand$strand") bash "$TOP/scripts/vm-run.sh" "${vm_args[@]}" \
		-D -t 500 -e rs_fabric=siw -e rs_siw_strand="$strand" -n "teardown-strand$strand-rust" teardown rust "$cycles") || rc=$?
	[ "$strand" = 3 ] || cov_note_run rust "$run"
	relay_guest "teardown siw strand_sends=$strand" "$run"
	dma_mode_ok "$run" "teardown-strand$strand" "teardown siw strand_sends=$strand"
	[ -f "$run/summary" ] && grep -E '^teardown_(qp|completed|never|siw)' "$run/summary" | sed 's/^/    /'
	[ "$rc" = 0 ] || bad "teardown siw strand_sends=$strand VM run (status $rc, logs in $run)"
	early=$(sed -n 's/^teardown_qp_destroyed_early=//p' "$run/summary" 2>/dev/null)
	meanwhile=$(sed -n 's/^teardown_completed_meanwhile=//p' "$run/summary" 2>/dev/null)
	never=$(sed -n 's/^teardown_never_completed=//p' "$run/summary" 2>/dev/null)
	late=$(sed -n 's/^teardown_completed_after_drain=//p' "$run/summary" 2>/dev/null)
	flushed=$(sed -n 's/^teardown_siw_flushed_after_drain=//p' "$run/summary" 2>/dev/null)
	local seen=0
	case $strand in
	1) [ "${early:-0}" -gt 0 ] && [ "${meanwhile:-0}" -gt 0 ] && [ "${never:-0}" = 0 ] && seen=1 ;;
	2) [ "${early:-0}" -gt 0 ] && [ "${never:-0}" -gt 0 ] && seen=1 ;;
	3) [ "${early:-0}" -gt 0 ] && [ "${late:-0}" -gt 0 ] && seen=1 ;;
	esac
	if [ "$seen" = 1 ] && [ "$strand" = 3 ]; then
		ok "teardown siw strand_sends=3: $late send ctxts completed between the final drain and teardown's walk ($flushed WRs flushed there), released while the QP lived, in $early teardowns"
	elif [ "$seen" = 1 ]; then
		ok "teardown siw strand_sends=$strand: $early teardowns destroyed the QP early; $meanwhile Sends completed meanwhile, $never never completed and were reclaimed"
	else
		bad "teardown siw strand_sends=$strand: QP destroyed early ${early:-?}, completed meanwhile ${meanwhile:-?}, never completed ${never:-?}, completed after the final drain ${late:-?} ($run)"
	fi
}

do_teardown_strands() {
	do_teardown_strand 1
	do_teardown_strand 2
	do_teardown_strand 3
}

# The teardowns of do_e2e, both flavours and the stranding siw (all in the
# DMA-mapped mode), without its virtual-DMA smoke runs.
do_iommu_teardown() {
	do_teardown_flavour c
	do_teardown_flavour rust
	do_teardown_strands
}

do_e2e() {
	do_e2e_flavour c
	do_e2e_flavour rust
	do_teardown_flavour c
	do_teardown_flavour rust
	do_teardown_strands
}

# The two-VM conformance suite (scripts/conformance.sh), both flavours, over
# soft-RoCE and soft-iWARP; its PASS/FAIL lines count as checks here.
do_conformance() {
	relay_script "" bash "$TOP/scripts/conformance.sh" c rust
}

# The hostile-client suite (scripts/hostile.sh): rust asserted, over
# soft-RoCE, then soft-iWARP; c compared when COMPARE=1.
do_hostile() {
	relay_script "" bash "$TOP/scripts/hostile.sh" 3
}

# The hostile suite once more, each class once, behind the emulated IOMMU
# (strict), both flavours: the exact DMA checks of the test drivers
# (kernel-patches/0004) see every class's mappings, the c flavour's too.
# c's classes are compared, not asserted (hostile-iommu-table.txt); its VM
# run (kernel reports, DMA-API errors, leak counters) is.
do_hostile_iommu() {
	DMA_IOMMU=1 COMPARE=1 HOSTILE_ASSERT_C=1 HOSTILE_SUFFIX=-iommu \
		relay_script "" bash "$TOP/scripts/hostile.sh" 1
}

# Mapping failures that the DMA layer itself produces
# (scripts/dma-exhaust.sh): behind the IOMMU, soft-RoCE mapping through a
# PCI function of its own whose DMA mask leaves few addresses; both
# flavours asserted.
do_dma_exhaust() {
	relay_script "" bash "$TOP/scripts/dma-exhaust.sh" c rust
}

# The C original through failslab as the rust flavour goes through it in
# do_failfunc: slab failures confined to the text of svc_rdma_sendto.o
# (tests/vm/guest/failslab.sh c), under the same verifying load, so that
# the two flavours' allocation-failure paths are compared on one workload.
# Not yet in make check: one run of six (2026-12-07) ended in an EIO that
# fio read through a hard mount, not yet explained (Documentation/testing.rst).
do_failslab_c() {
	local run rc=0
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args c trace) -D -t 900 -n failslab-c failslab 50 c) || rc=$?
	cov_note_run c "$run"
	relay_guest "failslab c" "$run"
	[ -f "$run/summary" ] && grep -E '^failslab_' "$run/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	[ "$rc" = 0 ] || bad "failslab c VM run (status $rc, logs in $run)"
}

# Send Queue exhaustion (4 credits, 32 threads, deep queues) and unload
# safety (refused while mounted; load/unload cycles without leaks), rust.
do_stress() {
	local run rc=0
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args rust trace) -t 600 -n stress-rust stress rust 15 20) || rc=$?
	cov_note_run rust "$run"
	relay_guest "stress rust" "$run"
	[ -f "$run/summary" ] && grep -E '^(sq_|unload_)' "$run/summary" | sed 's/^/    /'
	[ "$rc" = 0 ] || bad "stress rust VM run (status $rc, logs in $run)"
}

# The same on the debug kernel, with the full 50 load/unload cycles
# (kmemleak-checked after the last).
do_stress_debug() {
	local run rc=0
	run=$(bash "$TOP/scripts/vm-run.sh" -t 1800 -n stress-rust stress rust 15 50) || rc=$?
	relay_guest "stress rust" "$run"
	[ -f "$run/summary" ] && grep -E '^(sq_|unload_|kmemleak)' "$run/summary" | sed 's/^/    /'
	[ "$rc" = 0 ] || bad "stress rust VM run (status $rc, logs in $run)"
}

# With coverage on (make check), built as build/rust-cov is but for the
# injection points, so that the functions they leave alone are the same
# machine code and the faults run's coverage counts in them.
build_fault_variant() {
	local args="RPCRDMA_RS_FAULT_INJECTION=y"
	[ "${COVERAGE:-0}" = 1 ] && args="$args RPCRDMA_RS_KUNIT=n KCFLAGS=-g KRUSTFLAGS=-Cdebuginfo=2"
	MODULE_MAKE_ARGS=$args bash "$TOP/scripts/build-module.sh" rust rust-fault
}
# The variants later phases build (fault injection, the DMA mutants, the
# module fixes' A/B builds, the profile's production build without KUnit),
# built ahead in the background at idle priority while the first VM phases
# leave CPU over; the phases' own builds then find them up to date
# (build-module.sh locks a stage while it builds it). The profile's build
# would otherwise be made in its phase, which runs alone.
variants_background_start() {
	setsid bash -c 'nice -n 19 bash -c "$1"' variants \
		"$(declare -f build_fault_variant); TOP=$TOP; build_fault_variant; bash $TOP/scripts/dma-mutations.sh --build-only; bash $TOP/scripts/read-sink.sh --build-only; MODULE_MAKE_ARGS=RPCRDMA_RS_KUNIT=n bash $TOP/scripts/build-module.sh rust rust-prod" \
		>"$LOGS/variants-background.log" 2>&1 </dev/null &
	BACKGROUND+=("$!")
}

# Fault injection (RPCRDMA_RS_FAULT_INJECTION=y build of the rust flavour):
# 100 faults at each point under a verifying load, in the DMA-mapped mode:
# every error path must undo its mappings. `make check` injects only where
# the failfunc phase cannot, on the production build (a failed ctxt get, a
# partial post: posting every WR but the Send); the debug run and `make
# faults` at all four points.
do_faults() {
	local run rc=0
	if ! build_fault_variant >/dev/null 2>&1; then
		bad "fault-injection build ($LOGS/module-rust-fault.log)"
		return 1
	fi
	ok "rpcrdma.ko builds with RPCRDMA_RS_FAULT_INJECTION=y"
	local cov=()
	if cov_wanted rust; then
		coverage_plugin_build
		cov=(-P "$COV_PLUGIN,out=@RUN@/coverage.txt,from=0xffffffffa0000000" -e rs_coverage=1)
	fi
	# shellcheck disable=SC2086 # FAULT_POINTS is a list
	run=$(DMA_IOMMU=$(iommu_for faults) bash "$TOP/scripts/vm-run.sh" "${cov[@]}" -D -t 900 -n faults-rust faults 100 ${FAULT_POINTS:-}) || rc=$?
	[ ${#cov[@]} = 0 ] || [ "$rc" != 0 ] || echo "fault:$TOP/build/rust-fault:$run" >>"$LOGS/coverage-runs.txt"
	relay_guest "faults rust" "$run"
	dma_mode_ok "$run" faults "faults rust"
	[ -f "$run/summary" ] && grep -E '^(injected|reconnects|seconds)_' "$run/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	[ "$rc" = 0 ] || bad "faults rust VM run (status $rc, logs in $run)"
}

# The error paths of the production build (no build of its own): the
# kernel's function error injection fails the shim's posting and mapping
# (tests/vm/guest/failfunc.sh, DMA-mapped mode), then failslab fails the
# allocations made from the Rust object (failslab.sh), each under a
# verifying load.
do_failfunc() {
	local run rc=0
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args rust trace) -D -t 900 -n failfunc-rust failfunc 50) || rc=$?
	cov_note_run rust "$run"
	relay_guest "failfunc rust" "$run"
	[ -f "$run/summary" ] && grep -E '^failfunc_' "$run/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	[ "$rc" = 0 ] || bad "failfunc rust VM run (status $rc, logs in $run)"
	rc=0
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args rust trace) -D -t 900 -n failslab-rust failslab 50) || rc=$?
	cov_note_run rust "$run"
	relay_guest "failslab rust" "$run"
	[ -f "$run/summary" ] && grep -E '^failslab_' "$run/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	[ "$rc" = 0 ] || bad "failslab rust VM run (status $rc, logs in $run)"
}

# Machine-code coverage of the Send path over this run's VM runs (lib.sh
# cov_vm_args; c's beside rust's): scripts/coverage_report.py, which fails
# when rust is below the floor; the never-executed blocks are in
# $LOGS/coverage-blocks-{rust,c}.txt. The floor (Documentation/testing.rst):
# 84.8% and 87.8% measured in two make checks with the teardown phase's siw
# strand runs, which make the teardown of ctxts a drain left behind run at
# every make check (85.7% in one whose strand_sends=2 run crashed early);
# 91.1% at e0f51f2, with the never-called copies gone and four hostile
# classes more; 92.0% at 7bc6967 with the KUnit and faults runs counted.
# Raised 88 -> 95 (issue 43's headline) on 2026-12-07: 95.7% at 3786df9
# (17 runs), the KUnit cases of f4bef60 reaching the defensive paths in
# the shipped functions; the workloads' union moved by 0.1 point between
# make checks, and the floor leaves 0.7 (about 25 instructions) for that.
COVERAGE_FLOOR=${COVERAGE_FLOOR:-95}
# The same, less padding, never-called copies and the blocks that
# tests/profile/coverage-reasons.txt shows unreachable by design (issue 26's
# 95% target, over what can run; the report gives both). 97.0% at e0f51f2.
COVERAGE_FLOOR_CAN_RUN=${COVERAGE_FLOOR_CAN_RUN:-95}
# What that share leaves out is capped, so that it cannot rise by claiming
# more code unreachable: instructions the compiler emitted that no source
# path reaches (padding, never-called copies), and those in blocks
# coverage-reasons.txt claims unreachable by design (5 and 167 in CI at
# f46fa89). Raising a cap is a change of its own, with its reason.
# Raised 170 -> 210 on 2026-12-06: 201 measured at cfbfe22 (cold run's
# runs). 19 of the growth are the teardown fix's defensive branch (a ctxt
# released on a destroyed QP with an R/W context left: put_ctxt's QP
# test, release_chunk_writes_qp_destroyed's warning), and about 14 the
# teardown reclaim (ctxt::reclaim_unreturned) that the compiler now keeps
# out of line, its claimed blocks counted twice as large; to be brought
# back under 170. Lowered 210 -> 70 on 2026-12-07: 59 measured at 3786df9,
# the KUnit cases of f4bef60 reaching most of what was claimed. Raised
# 70 -> 75 on 2026-12-07: 71 measured at 59b9f30, after the
# encoder-failure claim's drifted line numbers were fixed (6f6f3f2): 12
# instructions of that same path had been counted "test missing" since an
# edit moved its lines; the claim for svc_rdma_post_send_err (8) went, a
# KUnit case reaching it.
COVERAGE_MAX_EMITTED=${COVERAGE_MAX_EMITTED:-8}
COVERAGE_MAX_CLAIMED=${COVERAGE_MAX_CLAIMED:-75}
do_coverage() {
	local n
	n=$(wc -l <"$LOGS/coverage-runs.txt" 2>/dev/null || echo 0)
	if [ "${n:-0}" = 0 ]; then
		bad "coverage: no run recorded coverage"
		return 1
	fi
	local a b
	if [ -f "$TOP/build/rust-prod/text-bytes.txt" ]; then
		a=$(awk '{ s += $2 } END { print s + 0 }' "$TOP/build/rust-prod/text-bytes.txt")
		b=$(awk '{ s += $2 } END { print s + 0 }' "$TOP/build/rust-cov/text-bytes.txt")
		# Debuginfo moves a few bytes of codegen: 16 at dc87b38; 48 at
		# cfbfe22 (release_completed and reclaim_unreturned 16 each,
		# put_ctxt 4: the functions the teardown fix changed). A build of
		# other flags or code differs by kilobytes.
		if [ $((a > b ? a - b : b - a)) -le 64 ]; then
			ok "coverage: build/rust-cov's Send-path text is the production build's ($b bytes, rust-prod $a)"
		else
			bad "coverage: build/rust-cov's Send-path text ($b bytes) is not the production build's ($a)"
		fi
	fi
	local rc=0 out share can_run
	# shellcheck disable=SC2046 # one FLAVOUR:BUILD:RUN per line
	out=$(/usr/bin/python3 "$TOP/scripts/coverage_report.py" --logs "$LOGS" --floor "$COVERAGE_FLOOR" \
		--floor-can-run "$COVERAGE_FLOOR_CAN_RUN" --max-emitted "$COVERAGE_MAX_EMITTED" \
		--max-claimed "$COVERAGE_MAX_CLAIMED" $(cat "$LOGS/coverage-runs.txt") 2>&1) || rc=$?
	# The totals and the never-executed instructions by reason; the
	# per-function table and every block are in the files.
	sed -n '/^Totals/,/^$/p' "$LOGS/coverage-table.txt" | sed 's/^/    /'
	sed -n '/^Per run/,/^$/p' "$LOGS/coverage-table.txt" | sed 's/^/    /'
	sed -n '/by reason/,/^$/p' "$LOGS/coverage-blocks-rust.txt" | sed 's/^/    /'
	share=$(echo "$out" | sed -n 's/^PASS: rust Send-path coverage \([0-9.]*\)%.*/\1/p')
	can_run=$(echo "$out" | sed -n 's/^\(PASS\|FAIL\): rust Send-path coverage of what can run \([0-9.]*\)%.*/\2/p')
	# The caps on what the can-run share leaves out.
	local over_cap=0
	while IFS= read -r line; do
		case $line in
		'PASS: rust Send-path instructions left out'*) ok "coverage: ${line#PASS: rust Send-path }" ;;
		'FAIL: rust Send-path instructions left out'*)
			bad "coverage: ${line#FAIL: rust Send-path } ($LOGS/coverage-blocks-rust.txt)"
			over_cap=1
			;;
		esac
	done <<<"$out"
	[ "$over_cap" = 0 ] || return 1
	if echo "$out" | grep -q '^FAIL: rust Send-path coverage of what can run'; then
		bad "coverage: the rust Send path executed $can_run% of what can run (less what coverage-reasons.txt shows unreachable), below the floor of ${COVERAGE_FLOOR_CAN_RUN}% ($LOGS/coverage-blocks-rust.txt)"
		return 1
	fi
	if [ "$rc" = 0 ] && [ -n "$share" ]; then
		ok "coverage: the rust Send path executed $share% of its instructions over $n runs, floor ${COVERAGE_FLOOR}% ($LOGS/coverage-blocks-rust.txt)"
		ok "coverage: and $can_run% of what can run (less padding, never-called copies and what coverage-reasons.txt shows unreachable by design), floor ${COVERAGE_FLOOR_CAN_RUN}%"
	elif [ -n "$share" ]; then
		# Above the floor, but a run recorded nothing (or other problems).
		echo "$out" | grep -E '^  PROBLEM: ' | sed 's/^ */    /'
		bad "coverage: $share% of the rust Send path over $n runs, but the report names problems above ($LOGS/coverage-table.txt)"
		return 1
	else
		echo "$out" | tail -n 5 | sed 's/^/    /'
		bad "coverage: below the floor of ${COVERAGE_FLOOR}% or no report ($LOGS/coverage-table.txt)"
		return 1
	fi
}

# The DMA-mapped mode catches what it is for (scripts/dma-mutations.sh):
# rust builds with a deliberate DMA-API misuse must fail the way they should.
do_dma_mutations() {
	relay_script "" bash "$TOP/scripts/dma-mutations.sh" "$@"
}

# The module fixes (scripts/module-patches/): both flavours with and
# without them, NFS WRITEs in Read chunks verified byte for byte in the
# DMA-mapped mode (0001), then the rdma_stat counters read byte by byte
# (0002) (scripts/read-sink.sh).
do_read_sink() {
	relay_script "" bash "$TOP/scripts/read-sink.sh"
}

# Disconnect storm: the server's rxe device deleted and re-added CYCLES
# times under a verifying load from a client VM, counters 0 after every
# deletion (tests/vm/guest/storm-client.sh drives storm-server.sh). The
# server VM is DMA-mapped (vm-pair.sh -D): each deletion takes the device
# away with the transports' mappings live, and every one must be undone.
# FLAVOUR: rust (the default) or c.
# In the middle cycle the server's NIC itself goes (its PCI function
# removed, storm-client.sh UNPLUG_CYCLE), under a control link of the
# pair's own (vm-pair.sh -C).
do_storm() {
	local cycles=$1 flavour=${2:-rust} runs rc=0 srv cli unplug
	unplug=$(((cycles + 1) / 2))
	runs=$(bash "$TOP/scripts/vm-pair.sh" -D -C -t $((300 + cycles * 30)) storm-server storm-client "$flavour" "$cycles" "$unplug") || rc=$?
	srv=${runs%% *} cli=${runs##* }
	relay_guest "storm $flavour server" "$srv"
	relay_guest "storm $flavour client" "$cli"
	[ -f "$cli/summary" ] && grep -E '^storm_' "$cli/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	if ! grep -qx "storm_cycles=$cycles" "$cli/summary" 2>/dev/null; then
		bad "storm $flavour: $(sed -n 's/^storm_cycles=//p' "$cli/summary" 2>/dev/null || echo no) of $cycles cycles done ($cli)"
		# Where the client stopped, should its script have died silently.
		tail -n 8 "$cli/guest.log" 2>/dev/null | sed 's/^/    client: /'
	fi
	[ "$rc" = 0 ] || bad "storm $flavour VMs (status $rc, logs in $srv $cli)"
}

# failslab confined to the Rust Send path's text (tests/vm/guest/failslab.sh).
do_failslab() {
	local run rc=0
	run=$(bash "$TOP/scripts/vm-run.sh" -t 900 -n failslab-rust failslab 100) || rc=$?
	relay_guest "failslab rust" "$run"
	[ -f "$run/summary" ] && grep -E '^failslab_' "$run/summary" | tr '\n' ' ' | sed 's/^/    /; s/$/\n/'
	[ "$rc" = 0 ] || bad "failslab rust VM run (status $rc, logs in $run)"
}

# A one-round smoke of `make bench`'s end-to-end part (2 s jobs, no perf
# pass, NFSv3 alone: v4.1 runs the same harness code): the harness, not the
# numbers. Every job measured for both flavours, a ceiling, the table, JSON
# and plot written. (The perf
# pass, which cannot rank the flavours, is left to `make bench`; the
# Send path's cost is the instruction profile's, smoked below.)
do_bench_smoke() {
	local log=$LOGS/bench-smoke.log rc=0 run
	BENCH_VERSIONS=3 bash "$TOP/scripts/bench.sh" 1 2 0 >"$log" 2>&1 || rc=$?
	run=$(readlink -f "$CACHE/bench/latest" 2>/dev/null || true)
	relay_guest "bench smoke" "$run"
	if [ "$rc" != 0 ] || [ -z "$run" ] || [ "$(stat -c %Y "$run")" -lt "$((T_START_EPOCH))" ]; then
		tail -n 20 "$log"
		bad "bench smoke: make bench 1 round failed ($log)"
		return 1
	fi
	local rows
	rows=$(grep -cE '^\| v(3|4\.1) \| ' "$run/table.md" || true)
	if [ "$rows" = 6 ] && python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (len(d['jobs']) == 6 and all(v > 0 for v in d['ceiling_MBps'].values()) and len(d['ceiling_MBps']) == 2))" "$run/results.json"; then
		ok "bench smoke: 6 NFSv3 jobs x c,rust measured, ceiling measured, table and JSON written ($run)"
	else
		bad "bench smoke: table has $rows of 6 job rows or the ceiling is missing ($run/table.md)"
	fi
	if [ -s "$run/ratios.png" ]; then
		ok "bench smoke: plot written ($run/ratios.png)"
	else
		bad "bench smoke: no plot ($run/ratios.png; matplotlib missing?)"
	fi
	sed 's/^/    /' "$run/table.md"
}

# A smoke of the instruction profile (scripts/profile.sh, PROFILE_SMOKE=1):
# one boot, 20 RPCs per class and NFS version, both production builds; it
# asserts that every class was counted with Send-path symbols for both
# flavours, never a performance figure.
do_profile_smoke() {
	PROFILE_SMOKE=1 relay_script "" bash "$TOP/scripts/profile.sh"
}

# Debian's stock kernel (scripts/debian-check.sh): the Debian package built
# (lintian) and installed as an admin would, DKMS building it for Debian's
# kernel and another 7.3 flavour and skipping other kernels, the refusals,
# the package's autopkgtest, Debian's vmlinuz running ours and its own
# rpcrdma.ko, then remove, reinstall and purge.
do_debian() {
	relay_script "" bash "$TOP/scripts/debian-check.sh" "${1:-3}"
}

# make check's debian phase in two parts (budget: Documentation/testing.rst).
# The package steps (build, lintian, apt install, DKMS for three kernels,
# refusals, autopkgtest, remove/reinstall/purge) are builds and package
# installs, which need none of this run's builds: they start after set-up,
# in their own session at idle CPU and I/O priority, and take the CPU the
# kernel build and the VM phases leave. The phase at the end replays their
# checks and runs the VMs on Debian's kernel (the hostile suite once per
# class; `make debian` three times).
DEBIAN_BG=
debian_background_start() {
	rm -f "$LOGS/debian-packages.rc"
	say "debian: package build, apt install and DKMS builds start in the background at idle priority ($LOGS/debian-packages.out)"
	setsid bash -c 'nice -n 19 ionice -c 3 bash "$1/scripts/debian-check.sh" packages >"$2/debian-packages.out" 2>&1
		echo $? >"$2/debian-packages.rc.new"; mv "$2/debian-packages.rc.new" "$2/debian-packages.rc"' debian-packages "$TOP" "$LOGS" </dev/null &
	DEBIAN_BG=$!
	DEBIAN_BG_T0=$SECONDS
	BACKGROUND+=("$DEBIAN_BG")
}
do_debian_after_background() {
	local t0=$SECONDS rc
	say "debian: waiting for the package steps started $((SECONDS - DEBIAN_BG_T0)) s ago ($LOGS/debian-packages.out)"
	# Polled, not waited for: this runs in the second lane, a subshell,
	# whose parent started the steps.
	while [ ! -f "$LOGS/debian-packages.rc" ] && kill -0 "$DEBIAN_BG" 2>/dev/null; do sleep 5; done
	wait "$DEBIAN_BG" 2>/dev/null || true
	echo "    waited $((SECONDS - t0)) s for them"
	relay_script "" cat "$LOGS/debian-packages.out"
	rc=$(cat "$LOGS/debian-packages.rc" 2>/dev/null)
	if [ -z "$rc" ]; then
		bad "debian package steps ended without an exit status (killed?) ($LOGS/debian-packages.out)"
	elif [ "$rc" != 0 ]; then
		# Its failures were counted above; the VMs need its modules trees.
		grep -q '^FAIL:' "$LOGS/debian-packages.out" || bad "debian package steps: exit $rc ($LOGS/debian-packages.out)"
	fi
	relay_script "" bash "$TOP/scripts/debian-check.sh" vms 1
}

# make check's two lanes of VM phases after the build (budget:
# Documentation/testing.rst). Each lane runs its own phases in order, then
# takes phases from a pool that both share, so that the lane that ends its
# own first goes on with what is left instead of waiting for the other: the
# two lanes' lengths change with the cache (a cold run's Debian package
# steps are done before the lanes start, a warm run's are not) and with
# each phase's own time. The first lane (the main shell, output as it
# comes) runs the two-VM suites; the second (beside_start, output as a
# block) the lint, the in-tree KUnit build and the one-VM phases.
main_lane() {
	phase e2e do_e2e || true
	phase conformance do_conformance || true
	phase hostile do_hostile || true
	phase hostile-iommu do_hostile_iommu || true
	phase dma-exhaust do_dma_exhaust || true
	pool_lane
}
side_lane() {
	phase lint do_lint || true
	phase intree do_intree || true
	phase stress do_stress || true
	phase faults do_faults || true
	phase failfunc do_failfunc || true
	phase dma-mutations do_dma_mutations || true
	pool_lane
}
# The shared pool, one phase a line (NAME FUNC [ARG...]), in the order they
# are taken. debian needs the package steps started at set-up (it would
# wait for them): it is taken only once they have ended or when nothing else
# is left.
POOL=$LOGS/lane-pool
pool_fill() {
	printf '%s\n' "storm do_storm 6" "storm-c do_storm 3 c" "debian do_debian_after_background" \
		"read-sink do_read_sink" "bench-smoke do_bench_smoke" "install do_install" >"$POOL"
}
# pool_take: print the next phase of the pool and remove it; none: status 1.
pool_take() {
	(
		flock 9
		local line=
		if [ ! -f "$LOGS/debian-packages.rc" ] && [ "$(grep -c . "$POOL")" -gt 1 ]; then
			line=$(grep -v -m 1 '^debian ' "$POOL") || true
		else
			line=$(head -n 1 "$POOL")
		fi
		[ -n "$line" ] || exit 1
		grep -vxF "$line" "$POOL" >"$POOL.new" || true
		mv "$POOL.new" "$POOL"
		echo "$line"
	) 9>"$POOL.lock"
}
pool_lane() {
	local name func args
	while read -r name func args < <(pool_take); do
		# shellcheck disable=SC2086 # ARGs are words
		phase "$name" "$func" $args || true
	done
}

# make install/uninstall and DKMS (scripts/install-test.sh).
do_install() {
	relay_script "install: " bash "$TOP/scripts/install-test.sh"
}

case $WHAT in
all)
	# The runs that only compare (the c flavour and Debian's own module
	# through the hostile suite) assert nothing: `make hostile` and `make
	# debian` run them, `make check` does not (COMPARE=1 puts them back).
	export COMPARE=${COMPARE:-0}
	# The VM runs record machine-code coverage (lib.sh cov_vm_args): rust's
	# for the floor, c's beside it.
	export COVERAGE=${COVERAGE:-1} COV_FLAVOURS=${COV_FLAVOURS:-c rust}
	# failfunc injects the other two on the production build.
	FAULT_POINTS="send_ctxt_get post_mid"
	# The DMA-mapped runs booted behind the emulated IOMMU (strict) instead
	# of swiotlb (lib.sh iommu_for; Documentation/testing.rst): the
	# teardowns over soft-RoCE (both flavours) and the stranding siw's 1
	# and 2, the fault injection, the rust conformance server over
	# soft-iWARP, five mutations that need no bouncing, and
	# reuse_in_flight, which needs the IOMMU's reuse of an IOVA; and the
	# hostile-iommu phase, a pass of its own. The rest stays in swiotlb,
	# which alone catches a missing, short or late sync (stale bytes);
	# wrong_direction and sge_overrun, caught in both modes, run there.
	export IOMMU_RUNS=${IOMMU_RUNS-"teardown-c teardown-rust teardown-strand1 teardown-strand2 faults conformance-siw
		mutation-unmap_in_flight mutation-leak_on_error mutation-leak_on_post_error
		mutation-unmap_wrong_len mutation-double_unmap mutation-reuse_in_flight"}
	LINT_BESIDE=1
	mkdir -p "$LOGS" && : >"$LOGS/coverage-runs.txt"
	phase setup do_setup || { summary; exit 1; }
	debian_background_start
	phase host-tests do_host || true
	if phase build do_build; then
		variants_background_start
		# Two lanes (main_lane, side_lane; budget:
		# Documentation/testing.rst). The second starts with the lint's
		# builds, beside the KUnit VM.
		pool_fill
		beside_start side-lane side_lane
		phase kunit do_kunit || true
		main_lane
		beside_collect side-lane || true
		# Alone: its inclusive counts must not take in the interrupts
		# that a loaded host adds to the guest's windows (beside the
		# other lane, 4 classes failed the gate and a window counted
		# entry code).
		phase profile-smoke do_profile_smoke || true
		[ "$COVERAGE" = 1 ] && { phase coverage do_coverage || true; }
	else
		# Needs no test kernel: it builds against Debian's own.
		phase debian do_debian_after_background || true
	fi
	;;
debug)
	# make check-debug: the reliability suites on the debug kernel (KASAN,
	# lockdep, kmemleak, UBSAN, ...), full length; any report fails the run.
	phase setup do_setup || { summary; exit 1; }
	if phase build-debug build_kernel_and_modules; then
		phase kunit do_kunit || true
		# 30 removals: 27 minutes on this kernel (38 s a cycle, and
		# the VMs' set-up and kmemleak scan); `check.sh debug-storm`
		# runs 100 alone.
		phase storm do_storm 30 || true
		phase e2e-rust do_e2e_flavour rust || true
		# No teardown over soft-RoCE: on this kernel it meets the orphaned
		# connect request of svc_rdma_transport.c every time
		# (Documentation/testing.rst). Over the stranding siw it does not,
		# and KASAN watches the late and the missing Send completions.
		phase teardown-strand do_teardown_strands || true
		phase hostile do_hostile || true
		phase stress do_stress_debug || true
		phase faults do_faults || true
		phase failslab do_failslab || true
	fi
	;;
iommu)
	# make check-iommu: the DMA-mapped phases with the server's NIC behind
	# QEMU's emulated Intel IOMMU (q35, intel-iommu, iommu.strict=1) instead
	# of swiotlb=force: a DMA address is an IOVA of the NIC's domain, and an
	# access through one unmapped reaches no page (the drivers refuse it
	# with a WARNING, kernel-patches/0003). The test kernel serves it
	# (ACPI, INTEL_IOMMU); Documentation/testing.rst says which of these
	# phases `make check` runs.
	phase setup do_setup || { summary; exit 1; }
	if phase build build_kernel_and_modules; then
		phase teardown do_iommu_teardown || true
		phase conformance do_conformance || true
		phase hostile do_hostile || true
		phase faults do_faults || true
		phase failfunc do_failfunc || true
		# Not skip_header_sync, short_sync nor sync_after_post: behind
		# an IOMMU nothing bounces, so a sync has nothing to copy.
		phase dma-mutations do_dma_mutations unmap_in_flight reuse_in_flight leak_on_error leak_on_post_error unmap_wrong_len double_unmap wrong_direction sge_overrun || true
	fi
	;;
iommu-teardown | iommu-conformance | iommu-hostile | iommu-faults | iommu-failfunc | iommu-dma-mutations)
	# One phase of `make check-iommu`, alone.
	phase setup do_setup || { summary; exit 1; }
	if phase build build_kernel_and_modules; then
		case $WHAT in
		iommu-teardown) phase teardown do_iommu_teardown || true ;;
		iommu-conformance) phase conformance do_conformance || true ;;
		iommu-hostile) phase hostile do_hostile || true ;;
		iommu-faults) phase faults do_faults || true ;;
		iommu-failfunc) phase failfunc do_failfunc || true ;;
		iommu-dma-mutations) phase dma-mutations do_dma_mutations "${@:2}" || true ;;
		esac
	fi
	;;
debug-kunit | debug-storm | debug-failslab | debug-teardown-strand | debug-faults)
	# One phase of `make check-debug`, alone (storm: CYCLES, default 100).
	phase setup do_setup || { summary; exit 1; }
	if phase build-debug build_kernel_and_modules; then
		case $WHAT in
		debug-kunit) phase kunit do_kunit || true ;;
		debug-storm) phase storm do_storm "${2:-100}" || true ;;
		debug-failslab) phase failslab do_failslab || true ;;
		debug-teardown-strand) phase teardown-strand do_teardown_strands || true ;;
		debug-faults) phase faults do_faults || true ;;
		esac
	fi
	;;
host) phase setup do_setup && phase host-tests do_host || true ;;
build) phase setup do_setup && phase build do_build || true ;;
kunit) phase setup do_setup && phase build do_build && phase kunit do_kunit || true ;;
intree) phase setup do_setup && phase intree do_intree || true ;;
e2e) phase setup do_setup && phase build do_build && phase e2e do_e2e || true ;;
conformance) phase setup do_setup && phase build do_build && phase conformance do_conformance || true ;;
install) phase setup do_setup && phase build do_build && phase install do_install || true ;;
hostile) phase setup do_setup && phase build do_build && phase hostile do_hostile || true ;;
hostile-iommu) phase setup do_setup && phase build do_build && phase hostile-iommu do_hostile_iommu || true ;;
dma-exhaust) phase setup do_setup && phase build do_build && phase dma-exhaust do_dma_exhaust || true ;;
failslab-c) phase setup do_setup && phase build do_build && phase failslab-c do_failslab_c || true ;;
stress) phase setup do_setup && phase build do_build && phase stress do_stress || true ;;
bench-smoke) phase setup do_setup && phase build do_build && phase bench-smoke do_bench_smoke || true ;;
profile-smoke) phase setup do_setup && phase build do_build && phase profile-smoke do_profile_smoke || true ;;
storm) phase setup do_setup && phase build do_build && { phase storm do_storm "${2:-10}"; phase storm-c do_storm "${2:-10}" c; } || true ;;
teardown-strand)
	# The e2e phase's two runs over the stranding siw, REPEATS times.
	if phase setup do_setup && phase build do_build; then
		for _ in $(seq "${2:-1}"); do phase teardown-strand do_teardown_strands || true; done
	fi
	;;
faults) phase setup do_setup && phase build do_build && phase faults do_faults || true ;;
failfunc) phase setup do_setup && phase build do_build && phase failfunc do_failfunc || true ;;
# The report over the runs that COVERAGE=1 phases recorded so far.
coverage) phase coverage do_coverage || true ;;
dma-mutations) phase setup do_setup && phase build do_build && phase dma-mutations do_dma_mutations "${@:2}" || true ;;
read-sink) phase setup do_setup && phase build do_build && phase read-sink do_read_sink || true ;;
debian) phase setup do_setup && phase debian do_debian "${2:-3}" || true ;;
*) die "usage: check.sh [all|host|build|kunit|intree|e2e|conformance|install|hostile|hostile-iommu|dma-exhaust|failslab-c|stress|faults|failfunc|coverage|dma-mutations [MUTATION...]|read-sink|storm [CYCLES]|teardown-strand [REPEATS]|bench-smoke|profile-smoke|debian [REPS]|debug|debug-kunit|debug-storm [CYCLES]|debug-failslab|debug-faults|debug-teardown-strand|iommu|iommu-teardown|iommu-conformance|iommu-hostile|iommu-faults|iommu-failfunc|iommu-dma-mutations [MUTATION...]]" ;;
esac
summary
