#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# dma-exhaust.sh [FLAVOUR...]: mapping failures that the DMA layer itself
# produces, aimed at the RDMA device (issue 43, item 3), for each FLAVOUR
# (default: c and rust). One VM behind the emulated IOMMU (vm-run.sh -D,
# DMA_IOMMU=1), soft-RoCE mapping through eth1's PCI function, which
# nothing else uses, its DMA mask narrowed to DMA_EXHAUST_BITS bits
# (scripts/build-rxe-dma-pci.sh; guest rs_dma_pci_bits): the addresses
# left to the RDMA device's consumers (the server's Send path, Receives
# and chunk I/O, the client's transport, the MAD layer) are few, and
# tests/vm/guest/dma-mutant.sh with DMA_EXHAUST_READERS parallel 1 MiB
# reads beside small mapped-page reads exhausts them. Each flavour must:
#   - have the DMA layer refuse some of the server's own mappings
#     (svcrdma_dma_map_err or svcrdma_dma_map_rw_err > 0): else the
#     window was not exhausted and the run proves nothing;
#   - mount, and still complete reads (the soft mount reconnects after a
#     refused mapping closes the connection);
#   - never return wrong data, and give the client no malformed reply;
#   - leave no kernel report (WARNING, BUG, DMA-API debugging's), no DMA-API
#     error, no mapping of the device after the server stopped, and unload.
# Prints PASS:/FAIL: lines and exits non-zero on any failure.
. "$(dirname "$0")/lib.sh"
FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(c rust)
BITS=${DMA_EXHAUST_BITS:-23}
READERS=${DMA_EXHAUST_READERS:-8}
SECS=${DMA_EXHAUST_SECONDS:-30}
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }

bash "$TOP/scripts/build-rxe-dma-pci.sh" >/dev/null || die "dma exhaustion: rdma_rxe.ko with dma_pci does not build"
for f in "${FLAVOURS[@]}"; do
	say "dma exhaustion: $f flavour, soft-RoCE behind the IOMMU through a function of its own, DMA mask $BITS bits, $READERS parallel readers for $SECS s"
	rc=0
	# The rust flavour's coverage build under COVERAGE=1 (its map-error
	# paths run here for real).
	dir=$f
	cov_wanted "$f" && dir=$f-cov
	# shellcheck disable=SC2046 # cov_vm_args' words are options
	run=$(DMA_IOMMU=1 bash "$TOP/scripts/vm-run.sh" $(cov_vm_args "$f") -D -t 900 -n "dma-exhaust-$f" \
		-e "rs_dma_pci_bits=$BITS" -e "rs_readers=$READERS" dma-mutant "$dir" "$SECS" -) || rc=$?
	cov_note_run "$f" "$run"
	if [ "$rc" = 124 ] || [ ! -f "$run/summary" ]; then
		fail "dma exhaustion $f: the run did not finish (status $rc, $run/console.log)"
		continue
	fi
	w="dma exhaustion $f"
	map_err=$(value "$run" server_dma_map_err) rw_err=$(value "$run" server_dma_map_rw_err)
	ok=$(value "$run" reads_ok) failed=$(value "$run" reads_failed)
	reports=$(grep -cE 'WARNING:|BUG:|DMA-API:|UBSAN:' "$run/console.log" || true)
	echo "    $f: server mappings refused: Send path ${map_err:-?}, chunk I/O ${rw_err:-?};" \
		"reads ${ok:-?} completed, ${failed:-?} failed; kernel reports $reports ($run)"
	if [ "$((${map_err:-0} + ${rw_err:-0}))" -gt 0 ]; then
		pass "$w: the DMA layer refused ${map_err:-0} Send-path and ${rw_err:-0} chunk I/O mappings of the server"
	else
		fail "$w: no mapping of the server was refused: the window of $BITS bits was not exhausted ($run)"
	fi
	[ "$(value "$run" mount_ok)" = 1 ] && [ "${ok:-0}" -gt 0 ] &&
		pass "$w: mounted, and $ok reads completed beside $failed that failed" ||
		fail "$w: mount_ok=$(value "$run" mount_ok), ${ok:-0} reads completed ($run)"
	[ "$(value "$run" data_ok)" = 1 ] && [ "$(value "$run" client_bad_replies)" = 0 ] &&
		pass "$w: no wrong data, no malformed reply" ||
		fail "$w: data_ok=$(value "$run" data_ok) client_bad_replies=$(value "$run" client_bad_replies) ($run)"
	[ "$reports" = 0 ] && [ "$(value "$run" dma_api_errors)" = 0 ] &&
		pass "$w: no kernel report, DMA-API debugging found no error" ||
		fail "$w: $reports kernel reports, dma_api_errors=$(value "$run" dma_api_errors) ($run/console.log)"
	[ "$(value "$run" unloaded)" = 1 ] && ! grep -q '^FAIL: ' "$run/guest.log" &&
		pass "$w: every mapping released, rpcrdma unloaded" ||
		fail "$w: unloaded=$(value "$run" unloaded); $(grep -m 2 '^FAIL: ' "$run/guest.log" | tr '\n' ' ')($run/guest.log)"
done
[ "$FAILS" = 0 ]
