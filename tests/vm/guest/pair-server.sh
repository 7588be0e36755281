#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# pair-server.sh FLAVOUR: the server of a two-VM run (scripts/vm-pair.sh).
# Serves NFS over soft-RoCE with our rpcrdma.ko, captures the RoCEv2
# traffic (UDP 4791) on its NIC, waits for the client to say it is done,
# and decodes the capture with Wireshark's RPC-over-RDMA dissector.
. /work/tests/vm/guest/lib.sh

flavour=$1
load_rpcrdma "$flavour"
setup_rxe "$SERVER_IP"
start_nfsd
events="rpcrdma:svcrdma_post_send rpcrdma:svcrdma_send_pullup rpcrdma:svcrdma_post_write_chunk rpcrdma:svcrdma_post_reply_chunk rpcrdma:svcrdma_dma_map_page"
trace_start $events
dumpcap -q -i eth0 -f "udp port 4791" -w /tmp/roce.pcapng 2>/tmp/dumpcap.log &
cap=$!
log "serving; capturing RoCEv2 on eth0"

# The client leaves a marker in the export when its workload is over.
n=0
until [ -e "$EXPORT/.client-done" ]; do
	n=$((n + 1))
	[ $n -gt 600 ] && { fail "no word from the client in 600 s"; break; }
	sleep 1
done
trace_stop
sleep 1
kill -INT $cap
wait $cap || true
for e in $events; do result "server_trace_${e#rpcrdma:}" "$(trace_count "${e#rpcrdma:}")"; done
for s in recv read write sq_starve; do result server_rdma_stat_$s "$(stat_rdma $s)"; done
cp /tmp/roce.pcapng /results/ 2>/dev/null

# Decode: every RPC-over-RDMA message, and anything the dissector flags.
tshark -r /tmp/roce.pcapng -Y rpcordma -T fields -E separator=, \
	-e frame.number -e ip.src -e rpcordma.xid -e rpcordma.msg_type \
	-e rpcordma.writes_count -e rpcordma.reply_count >/results/rpcordma.csv 2>/tmp/tshark.err
frames=$(tshark -r /tmp/roce.pcapng 2>/dev/null | wc -l)
msgs=$(wc -l </results/rpcordma.csv)
replies=$(grep -c ",$SERVER_IP," /results/rpcordma.csv || true)
# Replies whose result payload went by Write chunk (DDP) leave the NFS
# dissector short of the data it expects there, and it calls them
# malformed: reported, but only the other flagged frames are errors.
flagged="_ws.malformed || _ws.expert.severity == error"
ddp_short=$(tshark -r /tmp/roce.pcapng -Y "($flagged) && rpcordma.writes_count >= 1" 2>/dev/null | wc -l)
malformed=$(tshark -r /tmp/roce.pcapng -Y "($flagged) && !(rpcordma.writes_count >= 1)" 2>/dev/null | wc -l)
result wire_ddp_replies_short_for_nfs_dissector "$ddp_short"
result wire_frames "$frames"
result wire_rpcordma_messages "$msgs"
result wire_server_replies "$replies"
result wire_malformed "$malformed"
for t in 0 1 4; do
	result "wire_server_msg_type_$t" "$(awk -F, -v ip="$SERVER_IP" -v t=$t '$2 == ip && $4 == t' /results/rpcordma.csv | wc -l)"
done
[ "$replies" -gt 0 ] || fail "no RPC-over-RDMA reply from the server was decoded"
[ "$malformed" = 0 ] || fail "$malformed frames malformed or flagged as errors by the dissector"
[ "$replies" -gt 0 ] && [ "$malformed" = 0 ] &&
	pass "wire: $replies server replies decoded by Wireshark's RPC-over-RDMA dissector, none malformed"
result failures $FAILS
exit $FAILS
