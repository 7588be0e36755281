#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# vm-pair.sh FLAVOUR [MiB]: two VMs, as on a real fabric: a server serving
# NFS over soft-RoCE with our rpcrdma.ko (FLAVOUR) and capturing the RoCEv2
# traffic, and a client, joined by a QEMU socket network on the host's
# loopback (nothing else is reachable from either). Prints both run dirs
# and exits non-zero if either guest failed.

. "$(dirname "$0")/lib.sh"

FLAVOUR=${1:?usage: vm-pair.sh c|rust [MiB]}
MIB=${2:-8}
PORT=$((20000 + RANDOM % 20000))
VMRUN=$TOP/scripts/vm-run.sh
out=$(mktemp -d)

bash "$VMRUN" -t 700 -n "pair-server-$FLAVOUR" -N "socket,listen=127.0.0.1:$PORT" \
	-M 52:54:00:12:34:01 pair-server "$FLAVOUR" >"$out/server" &
server=$!
sleep 3
rc_client=0
bash "$VMRUN" -t 650 -n "pair-client-$FLAVOUR" -N "socket,connect=127.0.0.1:$PORT" \
	-M 52:54:00:12:34:02 pair-client 10.11.0.2 "$MIB" >"$out/client" || rc_client=$?
rc_server=0
wait $server || rc_server=$?
echo "$(tail -n 1 "$out/server") $(tail -n 1 "$out/client")"
rm -rf "$out"
[ "$rc_server" = 0 ] && [ "$rc_client" = 0 ]
