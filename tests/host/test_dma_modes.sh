#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# Which DMA-mapped runs boot behind the emulated IOMMU (scripts/lib.sh
# iommu_for, dma_mode_want, dma_mode_of, dma_mode_check): the names in IOMMU_RUNS, split on
# any white space; all of them with DMA_IOMMU=1; and every name make
# check's default list gives is one that a script asks about, so that a
# misspelt name cannot leave its run in swiotlb unnoticed (the run would
# then prove swiotlb, which is what it was asked for). Prints PASS:/FAIL:
# lines and "N passed, N failed".

. "$(dirname "$0")/../../scripts/lib.sh"

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0
pass() { echo "PASS: dma modes: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: dma modes: $*"; FAILED=$((FAILED + 1)); }
expect() { # WHAT GOT WANT
	if [ "$2" = "$3" ]; then pass "$1: $2"; else fail "$1: got '$2', want '$3'"; fi
}

runs=$'faults conformance-siw\n\t\tmutation-double_unmap'
expect "a name at the end of a line of IOMMU_RUNS" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs iommu_for conformance-siw)" 1
expect "a name after a line break and tabs" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs iommu_for mutation-double_unmap)" 1
expect "a name not in IOMMU_RUNS" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs iommu_for conformance-rxe)" 0
expect "a prefix of a name is not the name" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs iommu_for fault)" 0
expect "no IOMMU_RUNS" "$(DMA_IOMMU=0 IOMMU_RUNS='' iommu_for faults)" 0
expect "DMA_IOMMU=1 takes every run behind the IOMMU" "$(DMA_IOMMU=1 IOMMU_RUNS='' iommu_for anything)" 1
expect "dma_mode_want of a listed run" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs dma_mode_want faults)" iommu
expect "dma_mode_want of another" "$(DMA_IOMMU=0 IOMMU_RUNS=$runs dma_mode_want teardown-strand3)" swiotlb

mkdir -p "$T/one" "$T/two" "$T/mixed" "$T/none"
printf 'x=1\ndma_mode=iommu\n' >"$T/one/summary"
printf 'dma_mode=swiotlb\ny=2\ndma_mode=swiotlb\n' >"$T/two/summary"
printf 'dma_mode=swiotlb\ndma_mode=iommu\n' >"$T/mixed/summary"
printf 'x=1\n' >"$T/none/summary"
expect "dma_mode_of one device" "$(dma_mode_of "$T/one")" iommu
expect "dma_mode_of two devices in one mode" "$(dma_mode_of "$T/two")" swiotlb
expect "dma_mode_of a run in two modes (wants neither)" "$(dma_mode_of "$T/mixed")" "iommu swiotlb"
expect "dma_mode_of a run that proved none" "$(dma_mode_of "$T/none")" ""
expect "dma_mode_of a run without a summary" "$(dma_mode_of "$T/missing")" ""
# dma_mode_check: the verdict the scripts give, and its status.
check() { local out rc=0; out=$(DMA_IOMMU=0 IOMMU_RUNS=$runs dma_mode_check "$@") || rc=$?; echo "$rc $out"; }
expect "dma_mode_check of a run in its mode" "$(check "$T/one" faults)" "0 iommu"
expect "dma_mode_check of a run in the other mode" "$(check "$T/two" faults)" "1 ran DMA-mapped swiotlb, not iommu"
expect "dma_mode_check of a run in two modes" "$(check "$T/mixed" teardown-strand3)" "1 ran DMA-mapped iommu swiotlb, not swiotlb"
expect "dma_mode_check of a run that proved none" "$(check "$T/none" teardown-strand3)" "1 ran DMA-mapped in no mode it proved, not swiotlb"

# Every name of make check's default list is one a script asks iommu_for
# about: the soft-RoCE and strand teardowns, faults, the conformance
# fabrics, the mutations of dma-mutations.sh.
default=$(sed -n '/export IOMMU_RUNS=/,/"}/p' "$TOP/scripts/check.sh" | sed 's/.*IOMMU_RUNS-"//; s/"}.*//')
mutations=$(sed -n 's/^ALL=(\(.*\))$/\1/p' "$TOP/scripts/dma-mutations.sh")
known=" teardown-c teardown-rust teardown-strand1 teardown-strand2 teardown-strand3 faults conformance-rxe conformance-siw $(for m in $mutations; do printf 'mutation-%s ' "$m"; done)"
[ -n "$mutations" ] || fail "no ALL=(...) list in scripts/dma-mutations.sh"
n=0
for name in $default; do
	n=$((n + 1))
	case $known in
	*" $name "*) ;;
	*) fail "make check's IOMMU_RUNS names '$name', which no script asks about" ;;
	esac
done
if [ "$n" -gt 0 ]; then
	pass "make check's IOMMU_RUNS: its $n names are runs the scripts ask about"
else
	fail "no default IOMMU_RUNS found in scripts/check.sh"
fi
# The scripts ask with those names.
grep -q 'iommu_for "teardown-strand$strand"' "$TOP/scripts/check.sh" &&
	grep -q 'iommu_for faults' "$TOP/scripts/check.sh" &&
	grep -q 'iommu_for "conformance-$FABRIC"' "$TOP/scripts/conformance.sh" &&
	grep -q 'iommu_for "mutation-$m"' "$TOP/scripts/dma-mutations.sh" &&
	pass "the scripts ask iommu_for with the names listed" ||
	fail "a script no longer asks iommu_for with the names this test knows"

echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
