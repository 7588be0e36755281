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
# records the module's text symbols at each load) for each workload, the
# way scripts/check.sh runs it: the single-VM smoke and the teardown test
# for each flavour, the hostile suite (soft-RoCE, then soft-iWARP) for rust.
# About 7 minutes on 2 cores.
# scripts/coverage_report.py maps the executed addresses back to the
# Send-path functions (build/*-cov/sendpath-symbols.txt, shim-symbols.txt)
# and prints instructions executed / total per function and per flavour,
# and every never-executed block of the rust flavour with its source lines;
# both are kept in $LOGS (coverage-table.txt, coverage-blocks-*.txt).
# COVERAGE_FLOOR=PCT: fail if rust executed less than PCT% of its Send-path
# instructions. Exits non-zero if a run left no coverage data or the report
# fails; a workload's own failure is shown, its coverage still counts.
# The conformance pair is not among the workloads: scripts/vm-pair.sh has
# no way to load a plugin into the server VM alone.

. "$(dirname "$0")/lib.sh"

FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(c rust)
for f in "${FLAVOURS[@]}"; do
	case $f in c|rust) ;; *) die "flavour must be c or rust, not '$f'" ;; esac
done
T0=$SECONDS

check_qemu_plugin_api "the coverage plugin"
P=$TOP/build/coverage
mkdir -p "$P"
cc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -pthread \
	-o "$P/libinsn_coverage.so" "$TOP/tests/profile/insn_coverage.c" || die "the coverage plugin does not build"

# The builds: production (rebuilt when older than the sources or the test
# kernel, as scripts/profile.sh does) and debuginfo, whose Send-path text
# must match.
KB=$(kernel_build)
[ -f "$KB/.build-complete" ] || die "test kernel not built: run scripts/build-kernel.sh"
fresh() { [ -f "$TOP/build/$1/rpcrdma.ko" ] && [ "$TOP/build/$1/rpcrdma.ko" -nt "$KB/.build-complete" ] &&
	[ -z "$(find "$TOP/src" "$TOP/bindings" "$TOP/Kbuild" -newer "$TOP/build/$1/rpcrdma.ko" -print -quit)" ]; }
text_bytes() { awk '{ s += $2 } END { print s + 0 }' "$TOP/build/$1/text-bytes.txt"; }
DEBUGINFO="KCFLAGS=-g KRUSTFLAGS=-Cdebuginfo=2"
for f in "${FLAVOURS[@]}"; do
	if [ "$f" = c ]; then
		prod=c prod_args= cov_args=$DEBUGINFO
	else
		prod=rust-prod prod_args=RPCRDMA_RS_KUNIT=n cov_args="$DEBUGINFO RPCRDMA_RS_KUNIT=n"
	fi
	fresh "$prod" || MODULE_MAKE_ARGS=$prod_args bash "$TOP/scripts/build-module.sh" "$f" "$prod" >/dev/null ||
		die "the $f flavour ($prod) does not build"
	MODULE_MAKE_ARGS=$cov_args bash "$TOP/scripts/build-module.sh" "$f" "$f-cov" >/dev/null ||
		die "the $f flavour with debuginfo ($f-cov) does not build"
	a=$(text_bytes "$prod") b=$(text_bytes "$f-cov")
	echo "    $f Send-path text: $a bytes in $prod, $b bytes in $f-cov (with debuginfo) ($(tr '\n' ' ' <"$TOP/build/$f-cov/text-bytes.txt"))"
	# -g must not change the code; a few bytes of slack for alignment.
	[ $((a > b ? a - b : b - a)) -le 16 ] ||
		die "$f: the debuginfo build's Send-path text ($b bytes) is not the production build's ($a bytes)"
done

# The workloads, one VM at a time, each as scripts/check.sh (or
# scripts/hostile.sh) runs it, with the plugin; timeouts doubled for it.
COV=(-P "$P/libinsn_coverage.so,out=@RUN@/coverage.txt" -e rs_coverage=1)
SPECS=() PROBLEMS=0 LAST_RUN=
# workload FLAVOUR NAME VM-RUN-ARGS...
workload() {
	local f=$1 name=$2 run rc=0 t=$SECONDS
	shift 2
	LAST_RUN=
	run=$(bash "$TOP/scripts/vm-run.sh" "${COV[@]}" -e "rs_module_dir=$f-cov" -n "cov-$name-$f" "$@") || rc=$?
	if [ -z "$run" ] || [ ! -s "$run/coverage.txt" ]; then
		warn "coverage: $name $f left no coverage data (status $rc, ${run:-no run dir})"
		PROBLEMS=$((PROBLEMS + 1))
		return 0
	fi
	echo "    $name $f: status $rc, $(wc -l <"$run/coverage.txt") kernel instructions executed," \
		"$(find "$run" -name 'kallsyms-rpcrdma-*.txt' | wc -l) module load(s), $((SECONDS - t)) s ($run)"
	[ "$rc" = 0 ] || echo "    $name $f: the workload failed (status $rc; $run/guest.log); its coverage counts"
	SPECS+=("$f:$TOP/build/$f-cov:$run")
	LAST_RUN=$run
}
for f in "${FLAVOURS[@]}"; do
	say "coverage: $f workloads"
	workload "$f" smoke -t 1200 smoke "$f" 8 0 3 4.1
	workload "$f" teardown -D -t 1000 teardown "$f" 5
	if [ "$f" = rust ]; then
		# In the DMA-mapped mode, as scripts/hostile.sh runs it.
		workload "$f" hostile -D -t 1800 hostile "$f" 3 siw
		for file in hostile.txt hostile-siw.txt; do
			[ -n "$LAST_RUN" ] || break
			n=$(grep -c '^class=' "$LAST_RUN/$file" 2>/dev/null || true)
			[ "${n:-0}" -ge 20 ] || echo "    hostile $f: only ${n:-0} classes ran ($LAST_RUN/$file)"
		done
	fi
done

say "coverage: report ($((SECONDS - T0)) s so far)"
[ ${#SPECS[@]} -gt 0 ] || die "coverage: no run left coverage data"
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
rc=0
"$PY" "$TOP/scripts/coverage_report.py" --logs "$LOGS" ${COVERAGE_FLOOR:+--floor "$COVERAGE_FLOOR"} "${SPECS[@]}" || rc=$?
echo "    coverage: $((SECONDS - T0)) s in all (${FLAVOURS[*]})"
[ "$rc" = 0 ] && [ "$PROBLEMS" = 0 ]
