#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/dma-exhaust.sh's judge: a pair of runs passes only when the DMA
# layer refused some of the server's mappings, both kinds of read
# completed, no read returned wrong data, nothing was reported, and the
# server unloaded with its mappings and the IOMMU's page table as before.
# Each fixture below breaks one of these and must fail exactly one check.
# Fixtures modelled on the runs of 2026-12-07. Prints PASS:/FAIL: lines
# and "N passed, N failed".

set -e
TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0
ok() { echo "PASS: dma-exhaust checks: $*"; PASSED=$((PASSED + 1)); }
bad() { echo "FAIL: dma-exhaust checks: $*"; FAILED=$((FAILED + 1)); }
# The judge's own helpers count into FAILS, as in dma-exhaust.sh.
FAILS=0 BITS=22
pass() { echo "  judge: PASS: $*"; }
fail() { echo "  judge: FAIL: $*"; FAILS=$((FAILS + 1)); }
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }
eval "$(sed -n '/^judge() {/,/^}/p' "$TOP/scripts/dma-exhaust.sh")"
declare -F judge >/dev/null || { echo "FAIL: dma-exhaust checks: judge() not found"; exit 1; }

s=$T/s c=$T/c
setup() {
	rm -rf "$s" "$c" && mkdir -p "$s" "$c"
	cat >"$s/summary" <<'E'
server_dma_map_err=0
server_dma_map_rw_err=135
unloaded=1
iova_mapped_pages_start=515
iova_mapped_pages_end=515
dma_api_errors=0
failures=0
E
	cat >"$c/summary" <<'E'
client_bad_replies=0
mount_ok=1
reads_ok=26
big_reads_ok=8
small_reads_ok=18
reads_failed=15
data_bad=0
failures=0
E
	echo "guest-init: exhaust-server.sh exited 0" >"$s/console.log"
	echo "guest-init: exhaust-client.sh exited 0" >"$c/console.log"
	: >"$s/guest.log"
}
# expect WHAT FAILS [STATUS]: the judge's failures on the fixtures.
expect() {
	local out
	FAILS=0
	out=$(judge rust "$s" "$c" "${3:-0}"; echo "fails=$FAILS")
	case $out in
	*"fails=$2") ok "$1 ($2 failed)" ;;
	*) bad "$1: want $2 failed, got: $(echo "$out" | grep -E 'FAIL|fails=' | tr '\n' ' ')" ;;
	esac
}

setup
expect "a good pair passes every check" 0
setup; sed -i 's/^server_dma_map_rw_err=.*/server_dma_map_rw_err=0/' "$s/summary"
expect "no mapping refused: the window was not exhausted" 1
setup; sed -i 's/^server_dma_map_rw_err=.*/server_dma_map_rw_err=0/; s/^server_dma_map_err=.*/server_dma_map_err=2/' "$s/summary"
expect "only Send-path mappings refused still counts" 0
setup; sed -i 's/^big_reads_ok=.*/big_reads_ok=0/' "$c/summary"
expect "no Write-chunk read completed (small reads alone)" 1
setup; sed -i 's/^small_reads_ok=.*/small_reads_ok=0/' "$c/summary"
expect "no inline read completed" 1
setup; sed -i 's/^data_bad=.*/data_bad=1/' "$c/summary"
expect "a read with wrong data" 1
setup; sed -i 's/^client_bad_replies=.*/client_bad_replies=1/' "$c/summary"
expect "a malformed reply" 1
setup; sed -i 's/^failures=.*/failures=1/' "$c/summary"
expect "a failure of the client VM's own" 1
setup; echo "DMA-API: virtio-pci 0000:00:06.0: device driver tries to sync DMA memory it has not allocated" >>"$s/console.log"
expect "a DMA-API report on the server's console" 1
setup; sed -i 's/^dma_api_errors=.*/dma_api_errors=1/' "$s/summary"
expect "a DMA-API error counted" 1
setup; sed -i 's/^unloaded=.*/unloaded=0/' "$s/summary"
expect "rpcrdma not unloaded" 1
setup; sed -i 's/^iova_mapped_pages_end=.*/iova_mapped_pages_end=517/; s/^failures=.*/failures=1/' "$s/summary"
echo "FAIL: dma exhaustion: the IOMMU maps 517 pages of the window after rpcrdma's unload, 515 before the load" >"$s/guest.log"
expect "IOVA pages left mapped (the server's own check)" 1
setup
expect "a VM that ended in error" 1 1
setup; rm "$c/summary"
expect "a run that did not finish" 1
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
