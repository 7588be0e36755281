#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# exhaust-client.sh CLIENT_IP SECONDS READERS: the client VM of
# scripts/dma-exhaust.sh, with the kernel's own NFS/RDMA client. For
# SECONDS: READERS direct reads of a 1 MiB file at once (256 KiB each,
# Write chunks: a peak of the server's mappings in flight) and, while they run, small direct
# reads answered inline with mapped pages (the server's Send path maps
# them). A soft mount with short timeouts: a mapping the server's DMA
# layer refuses closes the connection, the client reconnects, and reads
# that fail are counted, not the end. Every read that completes must
# return the file's bytes.
. /work/tests/vm/guest/lib.sh

ip=$1 seconds=$2 readers=$3
rsh_client "$ip"
want_big=$(srv "sha256sum <$EXPORT/big | cut -d' ' -f1")
want_small=$(srv "for s in 1000 2000 3000; do head -c \$s $EXPORT/small | sha256sum | cut -d' ' -f1; done" | tr '\n' ' ')
[ -n "$want_big" ] && [ -n "$want_small" ] || { fail "dma exhaustion: no checksums from the server"; exit 1; }
bad="xprtrdma_reply_vers_err xprtrdma_reply_rqst_err xprtrdma_reply_short_err xprtrdma_reply_hdr_err"
# shellcheck disable=SC2046 # one event per word
trace_start $(for e in $bad; do echo "rpcrdma:$e"; done)

mount_ok=0 reads_ok=0 reads_failed=0 data_bad=0 big_ok=0 small_ok=0
# check_read FILE WANT: a completed read's bytes against the file's;
# returns 1 when they differ.
check_read() {
	if [ "$(sha256sum <"$1" | cut -d' ' -f1)" = "$2" ]; then
		reads_ok=$((reads_ok + 1))
	else
		data_bad=$((data_bad + 1))
		echo "data mismatch: $1"
		return 1
	fi
}
any_alive() {
	for p in "$@"; do kill -0 "$p" 2>/dev/null && return 0; done
	return 1
}
if timeout 120 sh -c ". /work/tests/vm/guest/lib.sh; MOUNT_OPTS=soft,timeo=50,retrans=2 mount_rdma 3 /mnt/m"; then
	mount_ok=1
	end=$(($(date +%s) + seconds))
	while [ "$(date +%s)" -lt $end ]; do
		pids=
		for i in $(seq "$readers"); do
			timeout 60 dd if=/mnt/m/big of=/tmp/big.$i bs=256k iflag=direct status=none &
			pids="$pids $!"
		done
		while any_alive $pids; do
			n=0
			for sz in 1000 2000 3000; do
				n=$((n + 1))
				if timeout 60 dd if=/mnt/m/small of=/tmp/small bs=$sz count=1 iflag=direct status=none; then
					check_read /tmp/small "$(echo $want_small | cut -d' ' -f$n)" && small_ok=$((small_ok + 1))
				else
					reads_failed=$((reads_failed + 1))
				fi
			done
		done
		i=0
		for p in $pids; do
			i=$((i + 1))
			if wait "$p"; then
				check_read /tmp/big.$i "$want_big" && big_ok=$((big_ok + 1))
			else
				reads_failed=$((reads_failed + 1))
			fi
		done
	done
	timeout 60 umount -f /mnt/m || timeout 30 umount -l /mnt/m || true
fi
trace_stop
n_bad=0
for e in $bad; do n_bad=$((n_bad + $(trace_count $e))); done
result client_bad_replies "$n_bad"
result mount_ok $mount_ok
result reads_ok $reads_ok
result big_reads_ok $big_ok
result small_reads_ok $small_ok
result reads_failed $reads_failed
result data_bad $data_bad
result failures $FAILS
# The host judges the outcome (scripts/dma-exhaust.sh).
exit 0
