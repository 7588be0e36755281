#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# vm-pair.sh [-t TIMEOUT] [-c CPUS] [-e PARAM] [-s PARAM] [-P PLUGIN] [-D] [-C] SERVER_SCRIPT CLIENT_SCRIPT FLAVOUR [CLIENT_ARG...]
#
# Two VMs, as on a real fabric: the server runs tests/vm/guest/SERVER_SCRIPT.sh
# FLAVOUR (NFS over soft-RoCE with our rpcrdma.ko) at 10.11.0.1, the client
# runs CLIENT_SCRIPT.sh 10.11.0.2 CLIENT_ARG... with the kernel's own rpcrdma.
# They are joined by a QEMU socket network on the host's loopback (nothing
# else is reachable from either). Prints "SERVER_RUN CLIENT_RUN" and exits
# non-zero if either guest failed. -e adds a kernel command-line parameter to
# both (repeatable), e.g. rs_fabric=siw for soft-iWARP instead of soft-RoCE.
# -D boots the server VM alone in the DMA-mapped mode (vm-run.sh -D); the
# client stays as it is. -s adds a kernel parameter to the server alone, -P
# loads a TCG plugin into the server alone (vm-run.sh -P; the coverage
# plugin, see lib.sh cov_vm_args). -C joins the two by a second link, for
# rsh.py alone (vm-run.sh CTL_NETDEV), so that the server's fabric NIC can
# be removed and come back under it.

. "$(dirname "$0")/lib.sh"

TIMEOUT=900 CPUS=2 EXTRA=() SERVER_EXTRA=() CTL=0
while getopts t:c:e:s:P:DC o; do
	case $o in
	C) CTL=1 ;;
	t) TIMEOUT=$OPTARG ;;
	c) CPUS=$OPTARG ;;
	e) EXTRA+=(-e "$OPTARG") ;;
	D) SERVER_EXTRA+=(-D) ;;
	s) SERVER_EXTRA+=(-e "$OPTARG") ;;
	P) SERVER_EXTRA+=(-P "$OPTARG") ;;
	*) die "usage: vm-pair.sh [-t TIMEOUT] [-c CPUS] [-e PARAM] [-s PARAM] [-P PLUGIN] [-D] [-C] SERVER_SCRIPT CLIENT_SCRIPT FLAVOUR [CLIENT_ARG...]" ;;
	esac
done
shift $((OPTIND - 1))
SERVER_SCRIPT=${1:?server script} CLIENT_SCRIPT=${2:?client script} FLAVOUR=${3:?flavour}
shift 3
PORT=$((20000 + RANDOM % 20000))
VMRUN=$TOP/scripts/vm-run.sh
out=$(mktemp -d)

# pair CLIENT_ARG...: one run of both guests; their dirs in run_server,
# run_client.
pair() {
	local ctl_server= ctl_client=
	if [ "$CTL" = 1 ]; then
		ctl_server="socket,listen=127.0.0.1:$((PORT + 1))" ctl_client="socket,connect=127.0.0.1:$((PORT + 1))"
	fi
	CTL_NETDEV=$ctl_server bash "$VMRUN" -t "$TIMEOUT" -c "$CPUS" "${EXTRA[@]}" "${SERVER_EXTRA[@]}" -n "$SERVER_SCRIPT-$FLAVOUR" -N "socket,listen=127.0.0.1:$PORT" \
		-M 52:54:00:12:34:01 "$SERVER_SCRIPT" "$FLAVOUR" >"$out/server" &
	server=$!
	sleep 3
	# In its own process group, so that it can be stopped with its QEMU.
	CTL_NETDEV=$ctl_client setsid bash "$VMRUN" -t "$TIMEOUT" -c "$CPUS" "${EXTRA[@]}" -n "$CLIENT_SCRIPT-$FLAVOUR" -N "socket,connect=127.0.0.1:$PORT" \
		-M 52:54:00:12:34:02 "$CLIENT_SCRIPT" 10.11.0.2 "$@" >"$out/client" &
	client=$!
	rc_server=0
	wait $server || rc_server=$?
	# The server normally outlives its client. If it ended first, the client's
	# hard NFS mounts would wait for it forever: give it a minute, then stop it.
	for _ in $(seq 60); do kill -0 $client 2>/dev/null || break; sleep 1; done
	if kill -0 $client 2>/dev/null; then
		warn "vm-pair: the server VM ended first; stopping the client VM"
		kill -TERM -- -$client 2>/dev/null || true
	fi
	rc_client=0
	wait $client || rc_client=$?
	run_client=$(tail -n 1 "$out/client")
	[ -n "$run_client" ] || run_client=$(ls -td "$CACHE/runs/$CLIENT_SCRIPT-$FLAVOUR"-* | head -n 1)
	run_server=$(tail -n 1 "$out/server")
}
# A guest killed by the emulator's stale int3 (vm-run.sh marks its run
# stale-int3; lib.sh stale_int3), or whose kernel stalled before init
# (marked boot-stall), stops the other's test too: both boot again, once.
pair "$@"
if [ -f "$run_server/stale-int3" ] || [ -f "$run_client/stale-int3" ]; then
	warn "vm-pair: a guest trapped on an int3 no longer in memory (multi-threaded TCG, lib.sh stale_int3; $run_server $run_client); booting both again"
	pair "$@"
elif [ -f "$run_server/boot-stall" ] || [ -f "$run_client/boot-stall" ]; then
	warn "vm-pair: a guest's kernel stalled before init (vm-run.sh; $run_server $run_client); booting both again"
	pair "$@"
fi
rm -rf "$out"
echo "$run_server $run_client"
[ "$rc_server" = 0 ] && [ "$rc_client" = 0 ]
