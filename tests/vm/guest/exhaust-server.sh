#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# exhaust-server.sh FLAVOUR: the server VM of scripts/dma-exhaust.sh.
# Serves NFS over soft-RoCE with our rpcrdma.ko in the DMA-mapped mode
# behind the IOMMU, soft-RoCE mapping through eth1's PCI function whose DMA
# mask leaves few I/O virtual addresses (rs_dma_pci_bits, lib.sh
# setup_fabric): the client's load (exhaust-client.sh, over rsh.py) makes
# the DMA layer refuse some of this server's mappings. Counts them; when
# the client is done, nfsd stops, the leak counters must drain, rpcrdma
# must unload, every mapping of the device must be gone, and the IOMMU
# must map as many pages of the window as before the load.
. /work/tests/vm/guest/lib.sh

load_rpcrdma "$1" || exit 1
setup_fabric || exit 1
start_nfsd || exit 1
# The pages of the narrowed window that the IOMMU maps, counted in its
# page table by the test rdma_rxe: what DMA-API debugging does not track
# (rdma_rw's chunks linked with dma_iova_link()) is counted too. The MAD
# layer's buffers are mapped now and stay; after rpcrdma's unload the
# count must be this one again.
iova_pages() { cat /sys/module/rdma_rxe/parameters/iova_mapped_pages 2>/dev/null || echo -1; }
iova_start=$(iova_pages)
head -c 1048576 /dev/urandom >$EXPORT/big
head -c 3000 /dev/urandom >$EXPORT/small
# rs_dma_trace=1 also records every DMA map, unmap and sync, and stops
# the trace at the first WARNING, so that a DMA-API report can be traced
# back to the calls that led to it (dma-trace.txt in the run's results).
# Its counts are then lower bounds: the trace stops at a WARNING, and a
# full buffer overwrites its oldest events (dma_trace_overrun counts them).
extra=
[ "${rs_dma_trace:-0}" = 1 ] && extra="dma:dma_map_phys dma:dma_unmap_phys dma:dma_sync_single_for_device
	rpcrdma:svcrdma_dma_unmap_page rpcrdma:svcrdma_send_pullup rpcrdma:svcrdma_wc_send rpcrdma:svcrdma_wc_send_flush
	rpcrdma:svcrdma_sq_post_err rpcrdma:svcrdma_cc_release rpcrdma:svcrdma_post_write_chunk rpcrdma:svcrdma_post_reply_chunk"
# shellcheck disable=SC2086 # one event per word
TRACE_BUFFER_KB=${extra:+65536} trace_start rpcrdma:svcrdma_dma_map_err rpcrdma:svcrdma_dma_map_rw_err \
	rpcrdma:svcrdma_dma_map_page rpcrdma:svcrdma_post_send rpcrdma:svcrdma_send_err rpcrdma:svcrdma_wc_send_err $extra
[ -z "$extra" ] || echo 1 >/proc/sys/kernel/traceoff_on_warning
log "server ready; the load comes from the client"
python3 /work/tests/vm/guest/rsh.py serve || fail "rsh server ended abnormally"
trace_stop
if [ -n "$extra" ]; then
	cp /sys/kernel/tracing/trace /results/dma-trace.txt
	result dma_trace_overrun "$(cat /sys/kernel/tracing/per_cpu/cpu*/stats | awk '$1 == "overrun:" { n += $2 } END { print n + 0 }')"
fi
for e in dma_map_err dma_map_rw_err dma_map_page post_send send_err wc_send_err; do
	result "server_$e" "$(trace_count svcrdma_$e)"
done
grep -m 3 -E ' svcrdma_(dma_map_err|dma_map_rw_err):' /sys/kernel/tracing/trace | sed 's/^ */  /'
rpc.nfsd 0
sleep 1
expect_no_leaks "dma exhaustion"
if unload_rpcrdma 30; then
	result unloaded 1
else
	result unloaded 0
	fail "dma exhaustion: rpcrdma still in use 30 s after nfsd stopped"
fi
iova_end=$(iova_pages)
result iova_mapped_pages_start "$iova_start"
result iova_mapped_pages_end "$iova_end"
[ "$iova_start" -ge 0 ] && [ "$iova_end" = "$iova_start" ] ||
	fail "dma exhaustion: the IOMMU maps $iova_end pages of the window after rpcrdma's unload, $iova_start before the load"
dma_mode_check "dma exhaustion $1"
result dma_api_errors "$(cat $DMA_API/error_count)"
result failures $FAILS
exit $FAILS
