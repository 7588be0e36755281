#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# hostile.sh FLAVOUR REPETITIONS: the hostile-client suite (hostile.py)
# against our rpcrdma.ko while a well-behaved NFSv3 client runs a verifying
# fio on the same server; then the leak counters must be back to zero and
# the module must unload.
. /work/tests/vm/guest/lib.sh

flavour=$1 reps=$2
load_rpcrdma "$flavour"
setup_rxe
start_nfsd
# The export root: a directory whose listing needs a Reply chunk, and a
# file to READ.
mkdir -p $EXPORT/d
for i in $(seq 1 300); do : >"$EXPORT/entry-with-a-long-name-$i"; done
head -c 1048576 /dev/urandom >$EXPORT/data.bin
mount_rdma 3 /mnt/good || { fail "well-behaved NFSv3 mount"; exit 1; }
fio --name=good --directory=/mnt/good --rw=randrw --bs=16k --size=8m \
	--direct=1 --ioengine=libaio --iodepth=8 --runtime=600 --time_based \
	--verify=crc32c --verify_backlog=16 --verify_fatal=1 --invalidate=0 \
	--serialize_overlap=1 --verify_state_save=0 \
	--output-format=terse --terse-version=3 >/tmp/fio.out 2>&1 &
fio_pid=$!
sleep 2

set +e
python3 /work/tests/vm/guest/hostile.py $SERVER_IP $RDMA_PORT "$reps" 2>&1 | tee /results/hostile.txt
# A server with a small Send Queue (new connections only; the
# well-behaved client keeps its own), for the classes that need one.
maxreq=/proc/sys/sunrpc/svc_rdma/max_requests
old_maxreq=$(cat $maxreq)
echo 4 >$maxreq
python3 /work/tests/vm/guest/hostile.py $SERVER_IP $RDMA_PORT "$reps" reply_chunk_exceeds_sq 2>&1 |
	tee -a /results/hostile.txt
echo "$old_maxreq" >$maxreq
set -e
grep -E '^class=' /results/hostile.txt | sed 's/^/RESULT /' >/dev/null
n_ok=$(grep -c ' ok$' /results/hostile.txt || true)
n_fail=$(grep -c ' FAIL$' /results/hostile.txt || true)
result hostile_classes_ok "$n_ok"
result hostile_classes_failed "$n_fail"
grep -E ' FAIL$' /results/hostile.txt | while read -r line; do fail "hostile $flavour: $line"; done
[ "$n_fail" = 0 ] && [ "$n_ok" -gt 20 ] && pass "hostile $flavour: $n_ok classes x $reps behaved as expected, the server kept serving"

if stop_verifying_fio $fio_pid good_client_KiB; then
	pass "hostile $flavour: the well-behaved client's fio verified its data throughout ($FIO_KIB KiB)"
else
	fail "hostile $flavour: the well-behaved client's fio stopped during the hostile run"
fi
umount /mnt/good
rpc.nfsd 0
sleep 2
expect_no_leaks "hostile $flavour"
if rmmod rpcrdma; then
	pass "hostile $flavour: rpcrdma unloads after the hostile run"
else
	fail "hostile $flavour: rpcrdma does not unload"
fi
kmemleak_check "hostile $flavour"
result failures $FAILS
exit $FAILS
