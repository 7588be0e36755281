#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# dma-exhaust.sh [FLAVOUR...]: mapping failures that the DMA layer itself
# produces, aimed at the server's RDMA device (issue 43, item 3), for each
# FLAVOUR (default: c and rust). A server VM behind the emulated IOMMU
# (vm-pair.sh -D, DMA_IOMMU=1), its soft-RoCE mapping through eth1's PCI
# function, which nothing else uses, with a DMA mask of DMA_EXHAUST_BITS
# bits (scripts/build-rxe-dma-pci.sh; guest rs_dma_pci_bits): the
# addresses left to the device's consumers (the Send path, Receives,
# chunk I/O, the MAD layer) are few. A client VM (exhaust-client.sh)
# exhausts them with DMA_EXHAUST_READERS parallel reads of a 1 MiB file
# (256 KiB each, Write chunks) and small inline reads beside them; its own device is a plain one, so every
# refused mapping is the server's. Each flavour must:
#   - have the DMA layer refuse some of the server's own mappings
#     (svcrdma_dma_map_err or svcrdma_dma_map_rw_err > 0): else the
#     window was not exhausted and the run proves nothing;
#   - mount, and still complete reads of both kinds, Write-chunk and
#     inline (the soft mount reconnects after a refused mapping closes the
#     connection);
#   - never return wrong data, and give the client no malformed reply;
#   - leave no kernel report (WARNING, BUG, DMA-API debugging's), no DMA-API
#     error, no mapping of the device that DMA-API debugging tracks after
#     the server stopped, unload, and leave the IOMMU mapping as many pages
#     of the window as before the load (the test rdma_rxe counts them in
#     the page table: rdma_rw's chunks linked through the IOVA API, which
#     DMA-API debugging does not track, are counted too).
# Prints PASS:/FAIL: lines and exits non-zero on any failure.
. "$(dirname "$0")/lib.sh"
FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(c rust)
BITS=${DMA_EXHAUST_BITS:-22}
READERS=${DMA_EXHAUST_READERS:-16}
SECS=${DMA_EXHAUST_SECONDS:-30}
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }

# judge FLAVOUR SERVER_RUN CLIENT_RUN STATUS: the checks of one flavour's
# pair of runs, from their summaries and logs (tests/host/test_dma_exhaust.sh
# runs them on fixtures).
judge() {
	local f=$1 s=$2 c=$3 rc=$4 w="dma exhaustion $1" map_err rw_err ok failed big small reports
	if [ ! -f "$s/summary" ] || [ ! -f "$c/summary" ]; then
		fail "$w: the runs did not finish (status $rc; $s/console.log $c/console.log)"
		return
	fi
	map_err=$(value "$s" server_dma_map_err) rw_err=$(value "$s" server_dma_map_rw_err)
	ok=$(value "$c" reads_ok) failed=$(value "$c" reads_failed)
	big=$(value "$c" big_reads_ok) small=$(value "$c" small_reads_ok)
	reports=$(cat "$s/console.log" "$c/console.log" | grep -cE 'WARNING:|BUG:|DMA-API:|UBSAN:' || true)
	echo "    $f: server mappings refused by the DMA layer: Send path ${map_err:-?}, chunk I/O ${rw_err:-?};" \
		"client reads ${ok:-?} completed, ${failed:-?} failed; kernel reports $reports (status $rc; $s $c)"
	{ grep -E ' svcrdma_dma_map(_rw)?_err:' "$s/guest.log" || true; } | head -n 2 | sed 's/^ */      /'
	if [ "$((${map_err:-0} + ${rw_err:-0}))" -gt 0 ]; then
		pass "$w: the DMA layer refused ${map_err:-0} Send-path and ${rw_err:-0} chunk I/O mappings of the server"
	else
		fail "$w: no mapping of the server was refused: $BITS bits of DMA mask were not exhausted ($s)"
	fi
	if [ "$(value "$c" mount_ok)" = 1 ] && [ "${big:-0}" -gt 0 ] && [ "${small:-0}" -gt 0 ]; then
		pass "$w: mounted, and $ok reads completed ($big through Write chunks, $small inline) beside $failed that failed"
	else
		fail "$w: mount_ok=$(value "$c" mount_ok), ${big:-0} Write-chunk and ${small:-0} inline reads completed: each kind needs one ($c)"
	fi
	if [ "$(value "$c" data_bad)" = 0 ] && [ "$(value "$c" client_bad_replies)" = 0 ] && [ "$(value "$c" failures)" = 0 ]; then
		pass "$w: no wrong data, no malformed reply"
	else
		fail "$w: $(value "$c" data_bad) reads with wrong data, $(value "$c" client_bad_replies) malformed replies, $(value "$c" failures) client failures ($c)"
	fi
	if [ "$reports" = 0 ] && [ "$(value "$s" dma_api_errors)" = 0 ]; then
		pass "$w: no kernel report, DMA-API debugging found no error"
	else
		fail "$w: $reports kernel reports, dma_api_errors=$(value "$s" dma_api_errors) ($s/console.log $c/console.log)"
	fi
	if [ "$rc" = 0 ] && [ "$(value "$s" unloaded)" = 1 ] && [ "$(value "$s" failures)" = 0 ]; then
		pass "$w: the leak counters drained, every tracked mapping released, the IOMMU maps $(value "$s" iova_mapped_pages_end) pages of the window as before the load, rpcrdma unloaded"
	else
		fail "$w: status $rc, unloaded=$(value "$s" unloaded); $(grep -m 2 '^FAIL: ' "$s/guest.log" | tr '\n' ' ')($s/guest.log)"
	fi
}

bash "$TOP/scripts/build-rxe-dma-pci.sh" >/dev/null || die "dma exhaustion: rdma_rxe.ko with dma_pci does not build"
for f in "${FLAVOURS[@]}"; do
	say "dma exhaustion: $f flavour, server VM behind the IOMMU, soft-RoCE through a function of its own with a DMA mask of $BITS bits; client VM with $READERS parallel readers for $SECS s"
	# The flavour's coverage build under COVERAGE=1 (COV_FLAVOURS): its
	# map-error paths run here for real.
	cov=()
	for a in $(cov_vm_args "$f"); do
		case $a in -P|-e) cov+=("${a/-e/-s}") ;; *) cov+=("$a") ;; esac
	done
	rc=0
	runs=$(DMA_IOMMU=1 bash "$TOP/scripts/vm-pair.sh" -t 900 -D -s "rs_dma_pci_bits=$BITS" $([ "${DMA_EXHAUST_TRACE:-0}" = 1 ] && echo "-s rs_dma_trace=1") "${cov[@]}" \
		exhaust-server exhaust-client "$f" "$SECS" "$READERS") || rc=$?
	s=${runs%% *} c=${runs##* }
	cov_note_run "$f" "$s"
	judge "$f" "$s" "$c" "$rc"
done
[ "$FAILS" = 0 ]
