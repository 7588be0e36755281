#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# smoke.sh FLAVOUR MiB FIO_SECONDS VERS...: serve NFS over soft-RoCE with
# our rpcrdma.ko and, for each NFS version, write a checksummed file through
# an RDMA mount, remount, read it back and compare; prove RDMA carried it.
# With FIO_SECONDS > 0, also runs a verifying fio job on the last mount.
. /work/tests/vm/guest/lib.sh

flavour=$1 mib=$2 FIO_SECONDS=$3
shift 3
result flavour "$flavour"
load_rpcrdma "$flavour"
setup_fabric
start_nfsd

dd if=/dev/urandom of=/tmp/data bs=1M count="$mib" status=none
want=$(sha256sum </tmp/data | cut -d' ' -f1)
events="rpcrdma:svcrdma_post_send rpcrdma:svcrdma_send_pullup rpcrdma:svcrdma_post_write_chunk rpcrdma:svcrdma_post_reply_chunk rpcrdma:svcrdma_dma_map_page"
# Small files and a directory whose listing is too big to pull up but fits
# inline: those replies go out as mapped SGEs (svcrdma_dma_map_page).
mkdir -p /tmp/small
head -c 1500 /tmp/data >/tmp/small/f1500
head -c 3000 /tmp/data >/tmp/small/f3000

for vers in "$@"; do
	dir=/mnt/nfs$vers
	tag=v$(echo "$vers" | tr -d .)
	if ! mount_rdma "$vers" "$dir"; then
		fail "NFSv$vers mount over RDMA"
		continue
	fi
	result ${tag}_mount_opts "$(mount_opts "$dir")"
	xprt=$(xprt_of "$dir")
	result ${tag}_client_xprt "$xprt"
	[ "$xprt" = rdma ] || fail "NFSv$vers: client transport is '$xprt', not rdma"

	recv0=$(stat_rdma recv) write0=$(stat_rdma write) read0=$(stat_rdma read)
	trace_start $events
	t0=$(date +%s%N)
	cp /tmp/data "$dir/data"
	cp /tmp/small/f1500 /tmp/small/f3000 "$dir/"
	mkdir -p "$dir/dir"
	for i in $(seq 1 40); do : >"$dir/dir/file-with-a-rather-long-name-number-$i"; done
	sync
	t1=$(date +%s%N)
	umount "$dir"
	mount_rdma "$vers" "$dir"
	t2=$(date +%s%N)
	have=$(sha256sum <"$dir/data" | cut -d' ' -f1)
	t3=$(date +%s%N)
	cmp -s "$dir/f1500" /tmp/small/f1500 && cmp -s "$dir/f3000" /tmp/small/f3000 ||
		fail "NFSv$vers: small files read back differ"
	# Direct small READs expect replies that fit inline: the client offers
	# no Write chunk and the server sends head, page data and tail as SGEs.
	for sz in 1000 2000; do
		dd if="$dir/f3000" of=/tmp/small/direct bs=$sz count=1 iflag=direct status=none
		head -c $sz /tmp/small/f3000 | cmp -s - /tmp/small/direct ||
			fail "NFSv$vers: direct read of $sz bytes differs"
	done
	n=$(ls -l "$dir/dir" | grep -c file-with)
	[ "$n" = 40 ] || fail "NFSv$vers: directory listing has $n of 40 entries"
	trace_stop
	bytes=$((mib * 1024 * 1024))
	result ${tag}_write_MiBps "$(awk -v b=$bytes -v t=$((t1 - t0)) 'BEGIN { printf "%.1f", b / 1048576 / (t / 1e9) }')"
	result ${tag}_read_MiBps "$(awk -v b=$bytes -v t=$((t3 - t2)) 'BEGIN { printf "%.1f", b / 1048576 / (t / 1e9) }')"
	if [ "$have" = "$want" ]; then
		result ${tag}_bytes_verified "$bytes"
		pass "NFSv$vers over RDMA: $mib MiB written, read back, sha256 equal"
	else
		result ${tag}_bytes_verified 0
		fail "NFSv$vers over RDMA: checksum mismatch ($have != $want)"
	fi
	d_recv=$(($(stat_rdma recv) - recv0))
	d_write=$(($(stat_rdma write) - write0))
	result ${tag}_rdma_stat_recv "$d_recv"
	result ${tag}_rdma_stat_write "$d_write"
	result ${tag}_rdma_stat_read "$(($(stat_rdma read) - read0))"
	for e in $events; do
		result "${tag}_trace_${e#rpcrdma:}" "$(trace_count "${e#rpcrdma:}")"
	done
	# The server received the Calls over RDMA and RDMA-wrote the READ data.
	[ "$d_recv" -gt 0 ] || fail "NFSv$vers: rdma_stat_recv did not grow"
	[ "$d_write" -gt 0 ] || fail "NFSv$vers: rdma_stat_write did not grow"
	if [ "$vers" = "$(eval echo \${$#})" ] && [ "$FIO_SECONDS" -gt 0 ]; then
		# Random 64 KiB writes; every 16 of them are read back and checked
		# (crc32c) while the job runs, so reads and writes both cross RDMA.
		if fio --name=demo --directory="$dir" --rw=randwrite --bs=64k --size=16m \
			--direct=1 --ioengine=libaio --iodepth=8 --runtime="$FIO_SECONDS" --time_based \
			--verify=crc32c --verify_backlog=16 --verify_fatal=1 --invalidate=0 \
			--serialize_overlap=1 --verify_state_save=0 \
			--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1; then
			# terse v3: 6 read KiB, 7 read KiB/s, 47 write KiB, 48 write KiB/s
			t=$(grep '^3;' /tmp/fio.out | tail -n 1)
			result fio_read_KiB "$(echo "$t" | cut -d';' -f6)"
			result fio_read_KiBps "$(echo "$t" | cut -d';' -f7)"
			result fio_write_KiB "$(echo "$t" | cut -d';' -f47)"
			result fio_write_KiBps "$(echo "$t" | cut -d';' -f48)"
			pass "fio randwrite 64k with crc32c read-back verify on NFSv$vers"
		else
			cat /tmp/fio.out
			fail "fio on NFSv$vers"
		fi
	fi
	umount "$dir"
done
for s in recv read write sq_starve; do result total_rdma_stat_$s "$(stat_rdma $s)"; done
result failures $FAILS
exit $FAILS
