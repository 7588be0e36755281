#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/conformance.sh's closed_by_client: a phase's Send errors pass
# only as replies that found their connection closed by the client (all
# svcrdma_send_err -107, the CM's DISCONNECTED first, the client taking
# every reply); anything else stays a failure. Fixtures modelled on the
# make check run of 2026-12-07 that failed on two such replies. Prints
# PASS:/FAIL: lines and "N passed, N failed".

set -e
TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0
pass() { echo "PASS: conformance checks: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: conformance checks: $*"; FAILED=$((FAILED + 1)); }
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }
eval "$(sed -n "/^CLIENT_BAD=/p;/^closed_by_client() {/,/^}/p;/^client_reason() {/,/^}/p" "$TOP/scripts/conformance.sh")"
declare -F closed_by_client client_reason >/dev/null && [ -n "${CLIENT_BAD:-}" ] ||
	{ echo "FAIL: conformance checks: functions not found"; exit 1; }

s=$T/s c=$T/c
# setup [DISCONNECTED_FIRST]: the fixtures, the CM's order as given.
setup() {
	rm -rf "$s" "$c" && mkdir -p "$s" "$c"
	printf 'write-mixed.svcrdma_send_err=2\nwrite-mixed.disconnected_before_error=%s\n' "${1:-1}" >"$s/summary"
	cat >"$s/errors-write-mixed.txt" <<'E'
            nfsd-174     [000] .....   251.608189: svcrdma_send_err: addr=10.11.0.2 xid=0x30b37d3f status=-107
            nfsd-162     [001] .....   251.625296: svcrdma_send_err: addr=10.11.0.2 xid=0xae47a3f8 status=-107
E
	cat >"$c/client-trace.txt" <<'E'
     kworker/0:1-10      [000] .....   103.613898: xprtrdma_disconnect: peer=[10.11.0.1]:20049 rc=0 connection status=1
    kworker/0:1H-112     [000] .....   112.968510: xprt_disconnect_force: peer=[10.11.0.1]:20049 state=CONNECTED|BOUND
    kworker/1:1H-113     [001] .....   116.233019: xprtrdma_wc_send: cq.id=17 cid=92 status=RETRY_EXC_ERR (12/0x0)
     kworker/1:1-37      [001] .....   116.233460: cm_event_handler: cm.id=3 src=10.11.0.2:38195 dst=10.11.0.1:20049 tos=0 DISCONNECTED (10/0)
E
}
expect() { # WHAT WANT(0 passes, 1 fails)
	local got=0
	closed_by_client "$s" "$c" write-mixed || got=1
	if [ "$got" = "$2" ]; then pass "$1"; else fail "$1: closed_by_client returned $got, want $2"; fi
}

setup
expect "-ENOTCONN replies after the client's DISCONNECTED pass" 0
r=$(client_reason "$c")
case $r in
*"xprtrdma_wc_send: cq.id=17 cid=92 status=RETRY_EXC_ERR (12/0x0); 1 forced closes") pass "the client's reason: $r" ;;
*) fail "the client's reason: got '$r'" ;;
esac
setup 0
expect "the server's error first: fails" 1
setup
sed -i '/disconnected_before_error/d' "$s/summary"
expect "a run without the CM's order (older ctl.py): fails" 1
setup
echo "  nfsd-1 [000] .....  251.7: svcrdma_wc_send_err: cq.id=1 cid=2 status=LOC_LEN_ERR (1/0x0)" >>"$s/errors-write-mixed.txt"
expect "another error event in the phase: fails" 1
setup
sed -i '2s/-107/-5/' "$s/errors-write-mixed.txt"
expect "a Send error other than -ENOTCONN: fails" 1
setup
echo "  kworker/0:1H-112 [000] ..... 112.9: xprtrdma_reply_hdr_err: xid=0x1" >>"$c/client-trace.txt"
expect "a reply the client refused: fails" 1
setup
echo "  kworker/0:1H-112 [000] ..... 112.9: xprtrdma_wc_receive: cq.id=1 cid=2 status=LOC_LEN_ERR (1/0x0) received=0" >>"$c/client-trace.txt"
expect "a Receive error on the client: fails" 1
setup
rm "$c/client-trace.txt"
expect "no client trace: fails" 1
setup
: >"$s/errors-write-mixed.txt"
expect "no error lines saved: fails" 1
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
