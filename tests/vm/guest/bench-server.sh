#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# bench-server.sh FLAVOUR: the server VM of the two-VM benchmark
# (scripts/bench.sh). Prepares soft-RoCE, the export and its fixtures
# (a large directory for the READDIR job), then does what the client asks
# over rsh.py: the client loads and unloads the flavours (FLAVOUR is only
# vm-pair.sh's label) and reads this VM's CPU time around every job.
. /work/tests/vm/guest/lib.sh

modprobe ib_core
modprobe rdma_cm
modprobe sunrpc
modprobe rdma_rxe
setup_fabric "$SERVER_IP"
modprobe nfsd
mount -t nfsd nfsd /proc/fs/nfsd
# No delegations: an NFSv4.1 client holding one answers stat and open from
# its cache, and the metadata job would measure the client, not the server.
echo 0 >/proc/sys/fs/leases-enable
echo 10 >/proc/fs/nfsd/nfsv4leasetime
echo 10 >/proc/fs/nfsd/nfsv4gracetime
mkdir -p /run/rpcbind $EXPORT/meta
rpcbind -w
echo "$EXPORT *(rw,sync,no_root_squash,insecure,no_subtree_check,fsid=0)" >/etc/exports
exportfs -ra
rpc.mountd
# READDIR job: 4 directories of 4000 entries with 40-byte names (replies
# need Reply chunks); metadata job: 200 files.
python3 - $EXPORT <<'PY'
import os, sys
for d in range(4):
    os.makedirs(f"{sys.argv[1]}/big{d}")
    for i in range(4000):
        open(f"{sys.argv[1]}/big{d}/entry-{i:06d}-abcdefghijklmnopqrstuvwxyz", "w").close()
for i in range(1, 201):
    open(f"{sys.argv[1]}/meta/f{i}", "w").close()
PY
log "server ready; commands come from the client"
python3 /work/tests/vm/guest/rsh.py serve || fail "rsh server ended abnormally"
rpc.nfsd 0 2>/dev/null || true
result failures $FAILS
exit $FAILS
