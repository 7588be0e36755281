#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# coverage.sh [FLAVOUR...]   (FLAVOUR: c | rust; default: c rust)
#
# Machine-code coverage of the Send path over real workloads. Builds the TCG
# plugin tests/profile/insn_coverage.c (every guest kernel instruction that
# executes at least once, recorded with multi-threaded TCG, written at exit)
# and a debuginfo build of each flavour (build/c-cov, build/rust-cov: the
# production flags plus -g and -Cdebuginfo=2, rust without its KUnit suites;
# its Send-path text must be the size of the production build's, c and
# rust-prod, which are rebuilt when older than the sources). Then boots one
# VM at a time with the plugin and rs_coverage=1 (tests/vm/guest/lib.sh
# records the module's text symbols at each load; rs_cov_trace=1 enables
# every svcrdma event) for each workload, the way scripts/check.sh runs it:
# the single-VM smoke, the teardown test, the stress test and the hostile
# suite (soft-RoCE, then soft-iWARP) for each flavour; for rust also the
# production build's error paths (failfunc.sh: function error injection
# into the shim; failslab.sh); then the conformance pair over soft-RoCE,
# its server VM recording (vm-pair.sh -P). About 30 minutes on 2 cores.
# `make check` records the rust flavour's coverage over its own runs
# instead (lib.sh cov_vm_args) and asserts its floor.
# scripts/coverage_report.py maps the executed addresses back to the
# Send-path functions (build/*-cov/sendpath-symbols.txt, shim-symbols.txt)
# and prints instructions executed / total per function and per flavour,
# and every never-executed block of the rust flavour with its source lines;
# both are kept in $LOGS (coverage-table.txt, coverage-blocks-*.txt).
# COVERAGE_FLOOR=PCT: fail if rust executed less than PCT% of its Send-path
# instructions; COVERAGE_FLOOR_CAN_RUN=PCT, of those less padding,
# never-called copies and blocks shown unreachable by design. Exits
# non-zero if a run left no coverage data or the report fails; a
# workload's own failure is shown, its coverage still counts.

. "$(dirname "$0")/lib.sh"

FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(c rust)
for f in "${FLAVOURS[@]}"; do
	case $f in c|rust) ;; *) die "flavour must be c or rust, not '$f'" ;; esac
done
T0=$SECONDS

coverage_plugin_build || die "the coverage plugin does not build"

# The builds: production (rebuilt when older than the sources or the test
# kernel, as scripts/profile.sh does) and debuginfo, whose Send-path text
# must match.
KB=$(kernel_build)
[ -f "$KB/.build-complete" ] || die "test kernel not built: run scripts/build-kernel.sh"
fresh() { [ -f "$TOP/build/$1/rpcrdma.ko" ] && [ "$TOP/build/$1/rpcrdma.ko" -nt "$KB/.build-complete" ] &&
	[ -z "$(find "$TOP/src" "$TOP/bindings" "$TOP/Kbuild" -newer "$TOP/build/$1/rpcrdma.ko" -print -quit)" ]; }
text_bytes() { awk '{ s += $2 } END { print s + 0 }' "$TOP/build/$1/text-bytes.txt"; }
for f in "${FLAVOURS[@]}"; do
	if [ "$f" = c ]; then
		prod=c prod_args=
	else
		prod=rust-prod prod_args=RPCRDMA_RS_KUNIT=n
	fi
	fresh "$prod" || MODULE_MAKE_ARGS=$prod_args bash "$TOP/scripts/build-module.sh" "$f" "$prod" >/dev/null ||
		die "the $f flavour ($prod) does not build"
	# The same debuginfo build as make check's (lib.sh).
	coverage_build "$f" || die "the $f flavour with debuginfo ($f-cov) does not build"
	a=$(text_bytes "$prod") b=$(text_bytes "$f-cov")
	echo "    $f Send-path text: $a bytes in $prod, $b bytes in $f-cov (with debuginfo) ($(tr '\n' ' ' <"$TOP/build/$f-cov/text-bytes.txt"))"
	# -g must not change the code; a few bytes of slack for alignment.
	[ $((a > b ? a - b : b - a)) -le 16 ] ||
		die "$f: the debuginfo build's Send-path text ($b bytes) is not the production build's ($a bytes)"
done

# The workloads, one VM at a time, each as scripts/check.sh (or
# scripts/hostile.sh, scripts/conformance.sh) runs it, with the plugin
# (lib.sh cov_vm_args); timeouts doubled for it.
export COVERAGE=1 COV_FLAVOURS="${FLAVOURS[*]}"
: >"$LOGS/coverage-runs.txt"
PROBLEMS=0
# workload FLAVOUR NAME [trace] -- VM-RUN-ARGS...
workload() {
	local f=$1 name=$2 trace= run rc=0 t=$SECONDS
	[ "$3" = trace ] && trace=trace && shift
	shift 3
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(bash "$TOP/scripts/vm-run.sh" $(cov_vm_args "$f" $trace) -n "cov-$name-$f" "$@") || rc=$?
	if [ -z "$run" ] || [ ! -s "$run/coverage.txt" ]; then
		warn "coverage: $name $f left no coverage data (status $rc, ${run:-no run dir})"
		PROBLEMS=$((PROBLEMS + 1))
		return 0
	fi
	cov_note_run "$f" "$run"
	echo "    $name $f: status $rc, $(wc -l <"$run/coverage.txt") module instructions executed," \
		"$(find "$run" -name 'kallsyms-rpcrdma-*.txt' | wc -l) module load(s), $((SECONDS - t)) s ($run)"
	[ "$rc" = 0 ] || echo "    $name $f: the workload failed (status $rc; $run/guest.log); its coverage counts"
}
for f in "${FLAVOURS[@]}"; do
	say "coverage: $f workloads"
	workload "$f" smoke trace -- -t 1200 smoke "$f" 8 0 3 4.1
	workload "$f" teardown trace -- -D -t 1000 teardown "$f" 5
	workload "$f" stress trace -- -t 1200 stress "$f" 15 20
	workload "$f" hostile trace -- -D -t 1800 hostile "$f" 3 siw
	if [ "$f" = rust ]; then
		# The production build's error paths (shim entry points marked
		# ALLOW_ERROR_INJECTION, and failslab on the Rust object).
		workload "$f" failfunc trace -- -D -t 1200 failfunc 50
		workload "$f" failslab trace -- -D -t 1200 failslab 50
	fi
done
# The conformance pair over soft-RoCE, the server recording.
say "coverage: the conformance pair (${FLAVOURS[*]})"
CONF_FABRICS=rxe bash "$TOP/scripts/conformance.sh" "${FLAVOURS[@]}" >"$LOGS/coverage-conformance.log" 2>&1 ||
	echo "    conformance: failed ($LOGS/coverage-conformance.log); its coverage counts"
SPECS=()
while read -r spec; do
	if [ -s "${spec##*:}/coverage.txt" ]; then
		SPECS+=("$spec")
	else
		warn "coverage: ${spec##*:} left no coverage data"
		PROBLEMS=$((PROBLEMS + 1))
	fi
done <"$LOGS/coverage-runs.txt"

say "coverage: report ($((SECONDS - T0)) s so far)"
[ ${#SPECS[@]} -gt 0 ] || die "coverage: no run left coverage data"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
rc=0
"$PY" "$TOP/scripts/coverage_report.py" --logs "$LOGS" ${COVERAGE_FLOOR:+--floor "$COVERAGE_FLOOR"} \
	${COVERAGE_FLOOR_CAN_RUN:+--floor-can-run "$COVERAGE_FLOOR_CAN_RUN"} "${SPECS[@]}" || rc=$?
echo "    coverage: $((SECONDS - T0)) s in all (${FLAVOURS[*]})"
[ "$rc" = 0 ] && [ "$PROBLEMS" = 0 ]
