#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# demo.sh [FLAVOUR]: build what is missing, boot a VM with soft-RoCE, load
# our rpcrdma.ko (default: the rust flavour), serve NFS over RDMA and run a
# real client workload against it: a checksummed 32 MiB copy over NFSv3 and
# NFSv4.1, then 20 s of verifying fio. Prints what happened, plainly.

. "$(dirname "$0")/lib.sh"

FLAVOUR=${1:-${FLAVOUR:-rust}}
T0=$SECONDS
bash "$TOP/scripts/setup.sh"
bash "$TOP/scripts/build-kernel.sh" >/dev/null
bash "$TOP/scripts/mkrootfs.sh" >/dev/null
bash "$TOP/scripts/build-module.sh" "$FLAVOUR"

rc=0
RUN=$(bash "$TOP/scripts/vm-run.sh" -t 900 -n "demo-$FLAVOUR" smoke "$FLAVOUR" 32 20 3 4.1) || rc=$?
S=$RUN/summary
[ -f "$S" ] || die "demo: the VM produced no summary; console: $RUN/console.log"
get() { sed -n "s/^$1=//p" "$S" | tail -n 1; }

echo
echo "================ NFS over RDMA demo ================"
echo "Send path flavour : $(get module_flavour)  (rpcrdma version $(get module_version))"
if [ "$FLAVOUR" = rust ]; then
	echo "Send-path symbols : $(wc -l <"$TOP/build/rust/rust-symbols.txt") defined by the Rust crate;" \
		"objects: $(grep -c . "$TOP/build/rust/objects.txt"), svc_rdma_sendto.o" \
		"$(grep -qx svc_rdma_sendto.o "$TOP/build/rust/objects.txt" && echo linked || echo "not linked")"
fi
for v in 3:v3 4.1:v41; do
	vers=${v%%:*} tag=${v##*:}
	echo "NFSv$vers"
	echo "  mount options   : $(get ${tag}_mount_opts)"
	echo "  client transport: $(get ${tag}_client_xprt)"
	echo "  verified        : $(( $(get ${tag}_bytes_verified) / 1048576 )) MiB written and read back, sha256 equal"
	echo "  throughput      : write $(get ${tag}_write_MiBps) MiB/s, read $(get ${tag}_read_MiBps) MiB/s (TCG-emulated CPU)"
	echo "  server counters : rdma_stat_recv +$(get ${tag}_rdma_stat_recv)," \
		"rdma_stat_read +$(get ${tag}_rdma_stat_read), rdma_stat_write +$(get ${tag}_rdma_stat_write)"
	echo "  Send tracepoints: post_send $(get ${tag}_trace_svcrdma_post_send)," \
		"send_pullup $(get ${tag}_trace_svcrdma_send_pullup)," \
		"post_write_chunk $(get ${tag}_trace_svcrdma_post_write_chunk)," \
		"post_reply_chunk $(get ${tag}_trace_svcrdma_post_reply_chunk)," \
		"dma_map_page $(get ${tag}_trace_svcrdma_dma_map_page)"
done
echo "fio, 20 s on NFSv4.1: random 64 KiB writes with crc32c read-back verification:"
echo "  written $(( $(get fio_write_KiB) / 1024 )) MiB at $(get fio_write_KiBps) KiB/s," \
	"verified by reading back $(( $(get fio_read_KiB) / 1024 )) MiB at $(get fio_read_KiBps) KiB/s"
echo "server totals     : $(grep '^total_' "$S" | tr '\n' ' ')"
echo "logs              : $RUN"
if [ "$rc" = 0 ] && [ "$(get failures)" = 0 ]; then
	echo "RESULT: NFS over RDMA served by our rpcrdma.ko ($FLAVOUR) works. ($((SECONDS - T0)) s)"
else
	echo "RESULT: FAILED (guest status $rc); see $RUN/guest.log"
	grep '^FAIL' "$RUN/guest.log" || true
	exit 1
fi
