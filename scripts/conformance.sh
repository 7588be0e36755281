#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# conformance.sh [FLAVOUR...]: the end-to-end conformance suite (default:
# c and rust), over soft-RoCE and then soft-iWARP (CONF_FABRICS). For each
# fabric and flavour, a server VM with that rpcrdma.ko and a client VM with
# the kernel's own NFS client, joined by a QEMU socket network
# (scripts/vm-pair.sh), run the phases of conf-client.sh. Then, on the host:
#   - each phase's Send-path branch ran (its tracepoint count is > 0), and
#     no Send error or trace overrun occurred;
#   - every read gave the bytes the server's fixtures say it must;
#   - every server reply in the capture passes wirecheck.py (tshark;
#     soft-RoCE only);
#   - the flavours agree: identical client results, and for each Call
#     shape seen by both, the same reply header shapes.
# Prints PASS:/FAIL: lines naming phase, flavour and evidence, a table of
# branch counts per phase, fabric and flavour, and exits non-zero on any failure.
# The flavours are compared on the first fabric, where the wire check and
# the tracepoint parity are; the next fabrics run the rust flavour alone
# (CONF_OTHER_FLAVOURS="c rust" runs both there too).
# CONF_REUSE=1 checks the latest runs again instead of booting VMs.
# Flavour intree is the rpcrdma.ko of the kernel the VMs boot, a kernel
# built from the RFC series (make check's intree phase: VM_KERNEL_BUILD).
# The server VMs run in the DMA-mapped mode (vm-run.sh -D: every mapping
# real, bounced through swiotlb and checked by DMA-API debugging), so the
# wire check and the data checks also catch a reply whose bytes the device
# read before they were synced; CONF_DMA=0 runs them in the plain
# virtual-DMA mode of soft-RoCE and soft-iWARP. A fabric whose run lib.sh's
# iommu_for names ("conformance-FABRIC") has its server behind the emulated
# IOMMU instead of swiotlb (make check: soft-iWARP; make check-iommu: all).

. "$(dirname "$0")/lib.sh"

FLAVOURS=("$@")
[ ${#FLAVOURS[@]} -gt 0 ] || FLAVOURS=(c rust)
# Fabrics: soft-RoCE with the wire check, then soft-iWARP (CONF_FABRICS="rxe").
read -r -a FABRICS <<<"${CONF_FABRICS:-rxe siw}"
FIO_SECONDS=${CONF_FIO_SECONDS:-20}
DMA=${CONF_DMA:-1}
DMA_OPT=()
[ "$DMA" = 1 ] && DMA_OPT=(-D)
# The second fabric's mixed-load phase is shorter: its branches are the same.
FIO_SECONDS_OTHER=${CONF_FIO_SECONDS_OTHER:-8}
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
declare -A SRV CLI
# The server's address on the test network (the guests' lib.sh).
SERVER_IP=$(sed -n 's/^SERVER_IP=//p' "$TOP/tests/vm/guest/lib.sh")

# value RUN KEY: a value from a server run's summary (empty if absent).
value() { sed -n "s/^$2=//p" "$1/summary" 2>/dev/null | tail -n 1; }

# The branch each phase exists to drive: "phase-prefix tracepoint what".
BRANCHES=(
	"pullup- svcrdma_send_pullup inline replies pulled up into the Send buffer"
	"mapped- svcrdma_dma_map_page inline replies sent as mapped SGEs"
	"wchunk- svcrdma_post_write_chunk READ payloads through Write chunks"
	"sparse- svcrdma_post_write_chunk sparse-file READ payloads through Write chunks"
	"readlink- svcrdma_post_reply_chunk READLINK replies through the Reply chunk (the Linux client offers one for READLINK)"
	"readdir- svcrdma_post_reply_chunk READDIR replies through the Reply chunk"
	"acl- svcrdma_post_reply_chunk ACL replies through the Reply chunk"
	"xattr- svcrdma_post_reply_chunk xattr replies through the Reply chunk"
	"write-mixed svcrdma_post_send replies to WRITE and mixed load"
	"write-readback svcrdma_post_write_chunk the written files read back through Write chunks after a remount"
)
ZERO_EVENTS="svcrdma_send_err svcrdma_wc_send_err svcrdma_err_chunk svcrdma_err_vers svcrdma_sq_post_err trace_overrun"

# The client's trace lines (client-trace.txt, conf-client.sh) of a reply
# it could not parse or place, or of a Receive completed in error.
CLIENT_BAD=' (xprtrdma_reply_[a-z]+_err|xprtrdma_err_[a-z]+|xprtrdma_wc_receive):'

# closed_by_client SERVER_RUN CLIENT_RUN PHASE: true if every error event
# of PHASE on the server is a reply that found its connection closed
# (svcrdma_send_err status=-107) and the CM had reported the connection
# DISCONNECTED before the first of them (ctl.py), and the client took
# every reply of the run (client-trace.txt): the client closed it, for a
# reason of its own (a transport retry or RPC timeout when the host stalls
# the VMs), not an error of the server's.
closed_by_client() {
	local s=$1 c=$2 p=$3
	[ "$(value "$s" "$p.disconnected_before_error")" = 1 ] || return 1
	[ -s "$s/errors-$p.txt" ] && [ -f "$c/client-trace.txt" ] || return 1
	grep -vqE ' svcrdma_send_err: .* status=-107$' "$s/errors-$p.txt" && return 1
	! grep -qE "$CLIENT_BAD" "$c/client-trace.txt"
}

# client_reason CLIENT_RUN: what the client logged about it
# (client-trace.txt): its first completion error, or else its first event
# other than the CM's and the closes themselves (every unmount has one),
# and how many forced closes it made.
client_reason() {
	local t=$1/client-trace.txt r
	r=$(grep -m1 -E ' xprtrdma_wc_[a-z_]+:' "$t" ||
		grep -m1 -vE ' (cm_event_handler|xprtrdma_disconnect):' "$t" || true)
	r=$(sed -E 's/^ *[^ ]+ +\[[0-9]+\] [^ ]+ +//' <<<"$r")
	echo "${r:-none recorded}; $(grep -c ' xprt_disconnect_force:' "$t") forced closes"
}

check_flavour() {
	local f=$1 s=${SRV[$1]} c=${CLI[$1]} line
	while IFS= read -r line; do
		case $line in
		PASS:*) pass "conformance $f $FABRIC: ${line#PASS: }" ;;
		FAIL:*) fail "conformance $f $FABRIC: ${line#FAIL: } (logs: $s/guest.log $c/guest.log)" ;;
		esac
	done < <(cat "$s/guest.log" "$c/guest.log" 2>/dev/null | grep -E '^(PASS|FAIL): ')

	local phases
	phases=$(cut -d, -f1 "$s/phases.csv" 2>/dev/null)
	[ -n "$phases" ] || { fail "conformance $f $FABRIC: no phase was run ($s/phases.csv)"; return; }
	local b prefix ev what p n
	for b in "${BRANCHES[@]}"; do
		read -r prefix ev what <<<"$b"
		for p in $(grep "^$prefix" <<<"$phases"); do
			n=$(value "$s" "$p.$ev")
			if [ "${n:-0}" -gt 0 ]; then
				pass "conformance $f $FABRIC $p: $what ($n $ev)"
			else
				fail "conformance $f $FABRIC $p: $what: $ev = ${n:-missing} ($s/summary)"
			fi
		done
	done
	for p in $phases; do
		n=$(value "$s" "$p.svcrdma_post_send")
		[ "${n:-0}" -gt 0 ] || fail "conformance $f $FABRIC $p: no reply was posted (svcrdma_post_send = ${n:-missing})"
		for ev in $ZERO_EVENTS; do
			n=$(value "$s" "$p.$ev")
			[ "${n:-0}" = 0 ] && continue
			if [ "$ev" = svcrdma_send_err ] && closed_by_client "$s" "$c" "$p"; then
				pass "conformance $f $FABRIC $p: $n replies found their connection closed by the client" \
					"(svcrdma_send_err, -ENOTCONN, after the CM's DISCONNECTED and before any error" \
					"of the server's; the client's reason: $(client_reason "$c"))"
				continue
			fi
			fail "conformance $f $FABRIC $p: $ev = $n, expected 0 ($s/summary)"
		done
		# The error events' trace lines of the phase (ctl.py), if any.
		if [ -s "$s/errors-$p.txt" ]; then
			echo "    $p: error events (first $(wc -l <"$s/errors-$p.txt") lines, $s/errors-$p.txt):"
			head -n 4 "$s/errors-$p.txt" | sed 's/^ */      /'
			echo "      the trace before the first: $s/context-$p.txt"
		fi
	done

	# The client took every reply: no reply it could not parse or place,
	# no Receive completed in error (client-trace.txt, conf-client.sh).
	if [ -f "$c/client-trace.txt" ]; then
		local bad
		bad=$(grep -cE "$CLIENT_BAD" "$c/client-trace.txt" || true)
		if [ "$bad" = 0 ]; then
			pass "conformance $f $FABRIC: the client took every reply (no bad reply, no Receive error in $c/client-trace.txt)"
		else
			fail "conformance $f $FABRIC: the client refused replies or saw Receive errors: $bad events," \
				"first: $(grep -m1 -E "$CLIENT_BAD" "$c/client-trace.txt" | sed 's/^ *//') ($c/client-trace.txt)"
		fi
	fi

	# Data: every client result against the server's generated truth.
	local out
	if out=$(python3 "$TOP/tests/vm/guest/conformance.py" check "$s/expected.txt" "$c/results.txt" 2>&1); then
		pass "conformance $f $FABRIC: data verified, $(tail -n 1 <<<"$out")"
	else
		fail "conformance $f $FABRIC: data: $(grep -m3 mismatch <<<"$out" | tr '\n' ' ')$(tail -n 1 <<<"$out") ($c/results.txt, $s/expected.txt)"
	fi

	# Wire: the capture, decoded by tshark and checked by wirecheck.py
	# (soft-RoCE only, see conf-server.sh).
	[ "$FABRIC" = rxe ] || return 0
	local replies viol malformed cmal errs
	replies=$(value "$s" wire_server_replies) viol=$(value "$s" wire_violations)
	malformed=$(value "$s" wire_malformed) cmal=$(value "$s" wire_client_malformed)
	errs=$(value "$s" wire_server_replies_error)
	if [ "${replies:-0}" -gt 0 ] && [ "$viol" = 0 ] && [ "$malformed" = 0 ] && [ "$cmal" = 0 ] && [ "$errs" = 0 ]; then
		pass "conformance $f $FABRIC wire: $replies replies decoded by tshark's rpcordma dissector, each echoes its Call's chunks;" \
			"$(value "$s" wire_server_replies_nomsg) RDMA_NOMSG, $(value "$s" wire_server_replies_write_chunk_used) with a Write chunk used, 0 malformed"
	else
		fail "conformance $f $FABRIC wire: replies=${replies:-none} violations=${viol:-?} malformed=${malformed:-?}" \
			"client_malformed=${cmal:-?} rdma_error=${errs:-?} ($s/wire-errors.txt, capture $s/roce.pcapng)"
		head -n 5 "$s/wire-errors.txt" 2>/dev/null | sed 's/^/    /'
	fi
}

# The C and Rust flavours give the same client-visible results and the
# same reply header shapes for the same Call shapes.
compare_flavours() {
	local a=$1 b=$2
	if cmp -s <(sort "${CLI[$a]}/results.txt") <(sort "${CLI[$b]}/results.txt") &&
		[ -s "${CLI[$a]}/results.txt" ]; then
		pass "conformance $a vs $b $FABRIC: identical client results ($(wc -l <"${CLI[$a]}/results.txt") file contents, listings, links, xattrs, ACLs)"
	else
		fail "conformance $a vs $b $FABRIC: client results differ:" \
			"$(diff <(sort "${CLI[$a]}/results.txt") <(sort "${CLI[$b]}/results.txt") | grep -c '^[<>]') lines" \
			"(${CLI[$a]}/results.txt ${CLI[$b]}/results.txt)"
	fi
	[ "$FABRIC" = rxe ] || return 0
	local out
	if out=$(python3 - "${SRV[$a]}/wire-shapes.csv" "${SRV[$b]}/wire-shapes.csv" "$a" "$b" <<'EOF'
import collections, csv, sys
def load(p):
    shapes, exact = collections.defaultdict(set), collections.defaultdict(set)
    with open(p) as f:
        for r in csv.DictReader(f):
            key = (r["phase"], r["call"])
            shapes[key].add(r["reply"])
            exact[key].update(r["exact_replies"].split("|"))
    return shapes, exact
(sa, ea), (sb, eb) = load(sys.argv[1]), load(sys.argv[2])
common = sorted(set(sa) & set(sb))
bad = [k for k in common if sa[k] != sb[k]]
for k in bad[:5]:
    print(f"  {k[0]} {k[1]}: {sys.argv[3]} {sorted(sa[k])} vs {sys.argv[4]} {sorted(sb[k])}")
# Used lengths may differ where server state differs (an OPEN that grants a
# delegation has a longer reply): reported, not a failure.
inexact = sum(1 for k in common if ea[k] != eb[k])
only = len(set(sa) ^ set(sb))
print(f"{len(common)} Call shapes seen by both, {len(bad)} with different reply shapes; "
      f"{inexact} with different used lengths; {only} seen by one flavour only")
sys.exit(1 if bad or not common else 0)
EOF
	); then
		pass "conformance $a vs $b wire: same reply header shapes, $(tail -n 1 <<<"$out")"
	else
		fail "conformance $a vs $b wire: reply header shapes differ: $(tail -n 1 <<<"$out")" \
			"(${SRV[$a]}/wire-shapes.csv ${SRV[$b]}/wire-shapes.csv)"
		head -n 5 <<<"$out" | sed 's/^/    /'
	fi
}

# Tracepoint parity: in every phase whose workload is deterministic, the
# same Send-path events fire in both flavours (counts are in the table). The
# Send-path events are those the C file fires (the shim defines their
# out-of-line halves for Rust: __DEFINE_RUST_DO_TRACE) and the chunk posts
# sendto causes; Receive-path events are the same C in both flavours, and
# when receives are refilled is a matter of timing. (From 3c98fa5 until
# 2026-12-05 this list looked for trace_ calls the shim no longer makes, so
# parity compared the two chunk events alone.)
SENDPATH_EVENTS=$( (grep -oE '(trace_|__DEFINE_RUST_DO_TRACE\()svcrdma_[a-z_]+' "$TOP/src/svc_rdma_sendto_shim.c" |
	sed -E 's/^(trace_|__DEFINE_RUST_DO_TRACE\()//'
	echo svcrdma_post_write_chunk; echo svcrdma_post_reply_chunk) | sort -u)
[ "$(grep -c . <<<"$SENDPATH_EVENTS")" -ge 10 ] ||
	die "conformance: only $(grep -c . <<<"$SENDPATH_EVENTS") Send-path events found in src/svc_rdma_sendto_shim.c"
sendpath_only() { tr ',' '\n' | grep -Fx "$SENDPATH_EVENTS" | paste -sd, || true; }
compare_events() {
	local a=$1 b=$2 p ea eb bad=0 n=0
	for p in $(cut -d, -f1 "${SRV[$a]}/phases.csv" 2>/dev/null); do
		[ "$p" = write-mixed ] && continue
		ea=$(value "${SRV[$a]}" "$p.events_fired" | sendpath_only)
		eb=$(value "${SRV[$b]}" "$p.events_fired" | sendpath_only)
		n=$((n + 1))
		if [ -z "$ea" ] || [ "$ea" != "$eb" ]; then
			bad=$((bad + 1))
			echo "    $p: $a fired [${ea//,/ }], $b fired [${eb//,/ }]"
		fi
	done
	local all
	all=$(sed -n 's/^[^=]*\.events_fired=//p' "${SRV[$a]}/summary" "${SRV[$b]}/summary" 2>/dev/null |
		sendpath_only | tr ',' '\n' | sort -u | grep -c . || true)
	if [ "$bad" = 0 ] && [ "$n" -gt 0 ]; then
		pass "conformance $a vs $b $FABRIC: tracepoint parity, the same Send-path events fire in all $n deterministic phases ($all distinct events)"
	else
		fail "conformance $a vs $b $FABRIC: tracepoints differ in $bad of $n phases (${SRV[$a]}/summary ${SRV[$b]}/summary)"
	fi
}

table() {
	local p f cols="post_send send_pullup dma_map_page post_write_chunk post_reply_chunk"
	printf '%-14s %-6s %-6s' phase fabric flavour
	for c in $cols seconds; do printf ' %16s' "$c"; done
	echo
	for p in $(cut -d, -f1 "${SRV[${FL[0]}]}/phases.csv" 2>/dev/null); do
		for f in "${FL[@]}"; do
			printf '%-14s %-6s %-6s' "$p" "$FABRIC" "$f"
			for c in $cols; do printf ' %16s' "$(value "${SRV[$f]}" "$p.svcrdma_$c")"; done
			printf ' %16s\n' "$(value "${SRV[$f]}" "$p.seconds")"
		done
	done
}

# wire_decode RUN: the server's capture decoded by the guests' own tshark
# and wirecheck.py, run natively in their rootfs (lib.sh in_rootfs); its
# wire_* results join the run's summary, wire-shapes.csv and
# wire-errors.txt its directory.
wire_decode() {
	local run=$1 out
	sed -i '/^wire_/d' "$run/summary" 2>/dev/null
	if [ ! -s "$run/roce.pcapng" ]; then
		fail "conformance $f $FABRIC wire: no capture ($run/roce.pcapng)"
		return
	fi
	if out=$(in_rootfs "$run" python3 /work/tests/vm/guest/wirecheck.py /results/roce.pcapng \
		/results/phases.csv "$SERVER_IP" /results 2>&1); then
		grep '^wire_' <<<"$out" >>"$run/summary"
	else
		fail "conformance $f $FABRIC wire: wirecheck.py failed: $(tail -n 3 <<<"$out" | tr '\n' ' ')"
	fi
}

# latest_run PREFIX: the newest run dir of PREFIX on this fabric (CONF_REUSE).
latest_run() {
	local d
	for d in $(ls -td "$CACHE/runs/$1"-* 2>/dev/null); do
		[ "$(cat "$d/fabric" 2>/dev/null || echo rxe)" = "$FABRIC" ] && { echo "$d"; return; }
	done
}

mkdir -p "$LOGS"
# CONF_TABLE: the table's file in $LOGS (the intree phase keeps its own).
TABLE=$LOGS/${CONF_TABLE:-conformance-table.txt}
: >"$TABLE"
for FABRIC in "${FABRICS[@]}"; do
	declare -A SRV=() CLI=()
	secs=$FIO_SECONDS
	[ "$FABRIC" = rxe ] || secs=$FIO_SECONDS_OTHER
	FL=("${FLAVOURS[@]}")
	if [ "$FABRIC" != "${FABRICS[0]}" ]; then
		read -r -a other <<<"${CONF_OTHER_FLAVOURS:-rust}"
		FL=()
		for f in "${FLAVOURS[@]}"; do
			[[ " ${other[*]} " = *" $f "* ]] && FL+=("$f")
		done
	fi
	for f in "${FL[@]}"; do
		t0=$SECONDS
		say "conformance: $f flavour over $FABRIC, server and client VMs$([ "$DMA" = 1 ] && echo ", the server DMA-mapped ($(dma_mode_want "conformance-$FABRIC"))") (~4 min under TCG)"
		rc=0
		if [ "${CONF_REUSE:-0}" = 1 ]; then
			# Re-check the latest runs without booting anything (developing the checks).
			runs="$(latest_run "conf-server-$f") $(latest_run "conf-client-$f")"
		else
			# The server VM of the rust flavour records coverage (COVERAGE=1).
			cov=()
			for a in $(cov_vm_args "$f"); do
				case $a in -P|-e) cov+=("${a/-e/-s}") ;; *) cov+=("$a") ;; esac
			done
			runs=$(DMA_IOMMU=$(iommu_for "conformance-$FABRIC") bash "$TOP/scripts/vm-pair.sh" -t 1500 -e "rs_fabric=$FABRIC" "${DMA_OPT[@]}" "${cov[@]}" \
				conf-server conf-client "$f" "$secs") || rc=$?
			cov_note_run "$f" "${runs%% *}"
			for r in $runs; do echo "$FABRIC" >"$r/fabric"; done
		fi
		SRV[$f]=${runs%% *} CLI[$f]=${runs##* }
		echo "    $f $FABRIC: status $rc after $((SECONDS - t0))s; server ${SRV[$f]}, client ${CLI[$f]}"
		[ "$FABRIC" = rxe ] && wire_decode "${SRV[$f]}"
		[ "$rc" = 0 ] || fail "conformance $f $FABRIC: a VM failed (status $rc; ${SRV[$f]}/console.log ${CLI[$f]}/console.log)"
		check_flavour "$f"
		if [ "$(value "${SRV[$f]}" dma_mapped)" != "$DMA" ]; then
			fail "conformance $f $FABRIC: the server ran with dma_mapped=$(value "${SRV[$f]}" dma_mapped), wanted $DMA"
		elif [ "$DMA" = 1 ]; then
			if mode=$(dma_mode_check "${SRV[$f]}" "conformance-$FABRIC"); then
				pass "conformance $f $FABRIC: the server ran DMA-mapped, $mode"
			else
				fail "conformance $f $FABRIC: the server $mode"
			fi
		fi
	done
	if [ ${#FL[@]} -ge 2 ]; then
		compare_flavours "${FL[0]}" "${FL[1]}"
		compare_events "${FL[0]}" "${FL[1]}"
	fi
	table | tee -a "$TABLE" | sed 's/^/    /'
done
[ "$FAILS" = 0 ]
