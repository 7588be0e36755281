#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# storm-server.sh FLAVOUR: the server VM of the disconnect storm
# (storm-client.sh drives it over rsh.py). Serves NFS over soft-RoCE with
# our rpcrdma.ko; the client deletes and re-adds this VM's rxe device, and
# reads the leak counters right after each deletion. When the client is
# done: nfsd stops, the counters must be 0, rpcrdma must unload, and on
# the debug kernel kmemleak must find nothing. In the DMA-mapped mode
# (vm-pair.sh -D) each deletion takes the device away with the
# transports' mappings live: afterwards the re-added device's mappings
# must be back to their number at start, with no DMA-API error.
. /work/tests/vm/guest/lib.sh

load_rpcrdma "$1" || exit 1
setup_fabric
start_nfsd || exit 1
# rs_storm_fault=POINT=SPEC (by hand, with rs_module_dir a build with fault
# injection, e.g. a leaking DMA mutant): set from the start.
if [ -n "${rs_storm_fault:-}" ]; then
	echo "${rs_storm_fault#*=}" >"/sys/module/rpcrdma/parameters/${rs_storm_fault%%=*}" ||
		fail "storm: cannot set $rs_storm_fault"
fi
log "server ready; the storm is driven by the client"
python3 /work/tests/vm/guest/rsh.py serve || fail "rsh server ended abnormally"
rpc.nfsd 0
sleep 1
expect_no_leaks storm
if unload_rpcrdma 30; then
	pass "storm: rpcrdma unloads after the storm (waited $UNLOAD_WAIT s)"
else
	fail "storm: rpcrdma still in use 30 s after nfsd stopped"
fi
dma_mode_check storm
kmemleak_check storm
result failures $FAILS
exit $FAILS
