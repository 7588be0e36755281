#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# conf-server.sh FLAVOUR: the server VM of the conformance suite
# (scripts/conformance.sh). Serves generated fixtures over NFS/RDMA with our
# rpcrdma.ko and 32 nfsd threads, counts the Send-path tracepoints of each
# phase the client announces (ctl.py), and on soft-RoCE captures the RoCEv2
# Sends on its NIC for the host to check with tshark (wirecheck.py).
. /work/tests/vm/guest/lib.sh

G=/work/tests/vm/guest
flavour=$1
load_rpcrdma "$flavour"
setup_fabric "$SERVER_IP"
NFSD_THREADS=32 start_nfsd
python3 $G/conformance.py fixtures $EXPORT /results/expected.txt ||
	fail "could not build the fixtures"
log "fixtures: $(du -sh $EXPORT | cut -f1) in $EXPORT, $(wc -l </results/expected.txt) expected results"

# Sends only (BTH opcodes 0x00-0x05 Send First..Only with Immediate, 0x16/0x17
# with Invalidate) and the CM's MADs (UD Send 0x64): every RPC-over-RDMA
# header is in a Send; the RDMA Write/Read payloads would only be bulk.
# soft-RoCE only: over soft-iWARP the messages are MPA/DDP frames inside a
# TCP stream, which the wire check does not decode.
if [ "$FABRIC" = rxe ]; then
	filter="udp dst port 4791 and (udp[8] < 6 or udp[8] = 0x16 or udp[8] = 0x17 or udp[8] = 0x64)"
	dumpcap -q -i eth0 -f "$filter" -w /tmp/roce.pcapng 2>/tmp/dumpcap.log &
	cap=$!
fi
events="svcrdma_post_send svcrdma_send_pullup svcrdma_post_write_chunk svcrdma_post_reply_chunk
	svcrdma_dma_map_page svcrdma_send_err svcrdma_wc_send_err svcrdma_wc_send_flush
	svcrdma_err_chunk svcrdma_err_vers svcrdma_sq_post_err"
log "serving; phases come from the client"
# shellcheck disable=SC2086 # one event per word
timeout 1500 python3 $G/ctl.py serve /results/summary /results/phases.csv $events ||
	fail "phase control ended abnormally"
sleep 1
if [ "$FABRIC" = rxe ]; then
	kill -INT $cap
	wait $cap || true
fi
for s in recv read write sq_starve; do result server_rdma_stat_$s "$(stat_rdma $s)"; done
# The pages, contexts and mappings the Send path holds once the client has
# unmounted everything: only what the open transports keep in their pools.
for p in send_ctxts_live send_pages_held send_sges_mapped; do
	[ -r /sys/module/rpcrdma/parameters/$p ] &&
		result "server_$p" "$(cat /sys/module/rpcrdma/parameters/$p)"
done

# The capture goes to the host, which decodes it with this rootfs's tshark
# natively (scripts/conformance.sh: seconds there, two minutes under TCG).
if [ "$FABRIC" = rxe ]; then
	cp /tmp/roce.pcapng /results/ || fail "cannot copy the capture to /results"
	log "capture: $(du -h /results/roce.pcapng | cut -f1), decoded on the host"
fi
# In the DMA-mapped mode: with knfsd stopped, every transport is freed, and
# every mapping of theirs must be gone.
if [ "$DMA_MAPPED" = 1 ]; then
	rpc.nfsd 0
	dma_mode_check "conformance server $flavour"
fi
result fabric "$FABRIC"
result dma_mapped "$DMA_MAPPED"
result failures $FAILS
exit $FAILS
