#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# dma-mutant.sh MODULE_DIR SECONDS [FAULT]: a short NFSv3 workload over soft-RoCE in
# the DMA-mapped mode (scripts/vm-run.sh -D) against the rpcrdma.ko of
# build*/MODULE_DIR, a build with one deliberate DMA-API misuse
# (RPCRDMA_RS_DMA_MUTATION, scripts/dma-mutations.sh), to record what the
# mode makes of it; or, MODULE_DIR "c" or "rust", a flavour as it ships
# (by hand, e.g. with a swiotlb pool too small: DMA_SWIOTLB_SLABS of
# vm-run.sh). The workload is bounded (a soft mount with short
# timeouts, every step under a timeout) so that a mutant that breaks the
# replies ends instead of hanging: checksummed writes and reads of a file
# whose replies carry payload pages (small direct reads answered inline
# with mapped pages, and a 1 MiB file), for SECONDS, then teardown. FAULT
# (POINT=SPEC, in a build with fault injection; "-" for none) is set once
# the client has mounted: /sys/module/rpcrdma/parameters/POINT.
#
# It records, for the host to judge (the outcome each mutation must have is
# the host's, not this script's): mount_ok, io_ok, data_ok, the client's
# bad-reply events, DMA-API debugging's error count and the mappings left.
# The checks that the normal flavour must pass (dma_mode_check) run too:
# their FAIL lines are the evidence.
. /work/tests/vm/guest/lib.sh

dir=$1 seconds=$2 fault=${3:--}
flavour=rust
[ "$dir" = c ] && flavour=c
rs_module_dir=$dir load_rpcrdma $flavour || exit 1
setup_fabric
start_nfsd
head -c 1048576 /dev/urandom >$EXPORT/big
head -c 3000 /dev/urandom >$EXPORT/small
want_big=$(sha256sum <$EXPORT/big | cut -d' ' -f1)

bad="xprtrdma_reply_vers_err xprtrdma_reply_rqst_err xprtrdma_reply_short_err xprtrdma_reply_hdr_err"
# shellcheck disable=SC2046 # one event per word
trace_start $(for e in $bad; do echo "rpcrdma:$e"; done) rpcrdma:svcrdma_dma_map_page rpcrdma:svcrdma_post_send \
	rpcrdma:svcrdma_dma_map_err rpcrdma:svcrdma_dma_map_rw_err

P=/sys/module/rpcrdma/parameters
point=${fault%%=*}

mount_ok=0 io_ok=1 data_ok=1
# mismatch FILE SIZE: a read that succeeded with other bytes than the file's;
# the first is kept in /results for a look.
mismatch() {
	[ $data_ok = 0 ] || cp /tmp/direct /tmp/big /results/ 2>/dev/null || true
	data_ok=0
	echo "data mismatch: $1 ($2 bytes), $(head -c "$2" "$EXPORT/$1" | cmp -l - "/tmp/$([ "$1" = small ] && echo direct || echo big)" 2>&1 | wc -l) bytes differ"
}
MOUNT_OPTS=soft,timeo=50,retrans=2
if timeout 120 sh -c ". /work/tests/vm/guest/lib.sh; MOUNT_OPTS=$MOUNT_OPTS mount_rdma 3 /mnt/m"; then
	mount_ok=1
	# A leaking mutant's error path (scripts/dma-mutations.sh says which).
	if [ "$fault" != - ]; then
		echo "${fault#*=}" >"$P/$point" || fail "dma mutant: cannot set $P/$point"
	fi
	end=$(($(date +%s) + seconds))
	while [ "$(date +%s)" -lt $end ]; do
		for sz in 1000 2000 3000; do
			if ! timeout 60 dd if=/mnt/m/small of=/tmp/direct bs=$sz count=1 iflag=direct status=none; then
				io_ok=0
				break 2
			fi
			head -c $sz $EXPORT/small | cmp -s - /tmp/direct || mismatch small $sz
		done
		# To a file first: a read that fails part way is an I/O error,
		# not wrong data.
		if ! timeout 60 dd if=/mnt/m/big of=/tmp/big bs=64k iflag=direct status=none; then
			io_ok=0
			break
		fi
		[ "$(sha256sum </tmp/big | cut -d' ' -f1)" = "$want_big" ] || mismatch big 1048576
	done
	timeout 60 umount -f /mnt/m || timeout 30 umount -l /mnt/m || true
else
	io_ok=0 data_ok=0
fi
trace_stop
n_bad=0
for e in $bad; do
	n=$(trace_count $e)
	result "client_$e" "$n"
	n_bad=$((n_bad + n))
done
result client_bad_replies "$n_bad"
result server_dma_map_page "$(trace_count svcrdma_dma_map_page)"
result server_post_send "$(trace_count svcrdma_post_send)"
result server_dma_map_err "$(trace_count svcrdma_dma_map_err)"
result server_dma_map_rw_err "$(trace_count svcrdma_dma_map_rw_err)"
[ "$fault" = - ] || result "injected_$point" "$(cat "$P/$point")"
result mount_ok $mount_ok
result io_ok $io_ok
result data_ok $data_ok
rpc.nfsd 0
unload_rpcrdma 30 && result unloaded 1 || result unloaded 0
dma_mode_check "dma mutant $dir"
result dma_api_errors "$(cat $DMA_API/error_count)"
result failures $FAILS
# The host judges the outcome: the run itself always ends cleanly.
exit 0
