#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# pair-client.sh CLIENT_IP MiB: the client of a two-VM run. Uses the
# kernel's own rpcrdma.ko (the client side is the same C in every flavour),
# mounts the server over RDMA with NFSv3 and NFSv4.1, and runs a
# checksummed copy, a directory listing and small direct reads.
. /work/tests/vm/guest/lib.sh

ip=$1 mib=$2
modprobe rdma_rxe
modprobe rpcrdma
setup_rxe "$ip"
n=0
until ping -c1 -W1 $SERVER_IP >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -gt 120 ] && { fail "server $SERVER_IP unreachable"; exit 1; }
done
dd if=/dev/urandom of=/tmp/data bs=1M count="$mib" status=none
want=$(sha256sum </tmp/data | cut -d' ' -f1)
for vers in 3 4.1; do
	dir=/mnt/nfs$vers
	tries=0
	until mount_rdma "$vers" "$dir" 2>/dev/null; do
		tries=$((tries + 1))
		[ $tries -gt 60 ] && break
		sleep 2
	done
	if ! mountpoint -q "$dir"; then
		fail "NFSv$vers mount of $SERVER_IP over RDMA"
		continue
	fi
	result "client_v$(echo $vers | tr -d .)_xprt" "$(xprt_of "$dir")"
	cp /tmp/data "$dir/pair-data-$vers"
	mkdir -p "$dir/pair-dir-$vers"
	for i in $(seq 1 40); do : >"$dir/pair-dir-$vers/file-with-a-rather-long-name-number-$i"; done
	umount "$dir"
	mount_rdma "$vers" "$dir"
	have=$(sha256sum <"$dir/pair-data-$vers" | cut -d' ' -f1)
	if [ "$have" = "$want" ]; then
		pass "client NFSv$vers: $mib MiB across the fabric, sha256 equal"
	else
		fail "client NFSv$vers: checksum mismatch"
	fi
	[ "$(ls -l "$dir/pair-dir-$vers" | grep -c file-with)" = 40 ] || fail "client NFSv$vers: listing incomplete"
	for sz in 1000 2000; do
		dd if="$dir/pair-data-$vers" of=/tmp/direct bs=$sz count=1 iflag=direct status=none
		head -c $sz /tmp/data | cmp -s - /tmp/direct || fail "client NFSv$vers: direct read of $sz differs"
	done
	umount "$dir"
done
# Tell the server we are done, whatever happened above.
mount_rdma 3 /mnt/done && : >/mnt/done/.client-done && umount /mnt/done ||
	fail "could not leave the done marker on the server"
result failures $FAILS
exit $FAILS
