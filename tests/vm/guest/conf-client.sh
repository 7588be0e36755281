#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# conf-client.sh CLIENT_IP FIO_SECONDS: the client VM of the conformance
# suite. The kernel's own NFS client and rpcrdma (the client side is the
# same C in every flavour) drive each Send-path branch of the server in a
# named phase, bracketed with ctl.py so the server counts that phase's
# tracepoints. Every read's sha256 goes to /results/results.txt as
# "KEY@VERSION sha256", checked on the host against the server's
# expectations and against the other flavour's results.
. /work/tests/vm/guest/lib.sh

G=/work/tests/vm/guest
ip=$1 fio_seconds=$2
# Keep going after a failed step, and count failures from subshells too
# (the loops below run in pipelines): every one is named in guest.log.
set +e
: >/tmp/fails
fail() { echo "FAIL: $*"; echo "$*" >>/tmp/fails; }
modprobe rdma_rxe
modprobe rpcrdma
setup_fabric "$ip"
# Why this client would close a connection in the middle of a phase: its
# transport's error events (completions with an error other than a flush,
# a reply it could not take, an RPC timeout, a forced close) and the CM's
# events, kept in the trace buffer and copied to client-trace.txt at the
# end, where the host looks (scripts/conformance.sh).
T=/sys/kernel/tracing
echo 0 >$T/tracing_on
echo 8192 >$T/buffer_size_kb
for e in rpcrdma:xprtrdma_wc_receive rpcrdma:xprtrdma_wc_send rpcrdma:xprtrdma_wc_fastreg \
	rpcrdma:xprtrdma_wc_li rpcrdma:xprtrdma_wc_li_wake rpcrdma:xprtrdma_wc_li_done; do
	echo 'status != 0 && status != 5' >$T/events/${e%%:*}/${e#*:}/filter
	echo "$e" >>$T/set_event
done
for e in rpcrdma:xprtrdma_disconnect rpcrdma:xprtrdma_op_inject_dsc rpcrdma:xprtrdma_post_send_err \
	rpcrdma:xprtrdma_post_recvs_err rpcrdma:xprtrdma_reply_vers_err rpcrdma:xprtrdma_reply_rqst_err \
	rpcrdma:xprtrdma_reply_short_err rpcrdma:xprtrdma_reply_hdr_err rpcrdma:xprtrdma_err_vers \
	rpcrdma:xprtrdma_err_chunk rpcrdma:xprtrdma_err_unrecognized sunrpc:xprt_timer \
	sunrpc:xprt_disconnect_force rdma_cma:cm_event_handler; do
	echo "$e" >>$T/set_event || fail "client trace: no event $e"
done
echo 1 >$T/tracing_on
n=0
until ping -c1 -W1 $SERVER_IP >/dev/null 2>&1; do
	n=$((n + 1))
	[ $n -gt 120 ] && { fail "server $SERVER_IP unreachable"; exit 1; }
done
RES=/results/results.txt
# The reads every version's phases make (KEY FILE OFFSET LENGTH), once.
python3 $G/conformance.py reads >/tmp/reads || fail "conformance.py reads"
: >$RES

# ctl COMMAND...: ctl.py's "send" in bash (/dev/tcp): a Python start costs
# about a second under TCG, and every phase sends two commands. Retries for
# a minute while the server is not yet listening; prints the answer; fails
# unless it starts with "ok".
ctl() {
	bash -c 'for i in $(seq 60); do
		a=$( { echo "$*" >&3 && IFS= read -r -t 300 a <&3 && echo "$a"; } 3<>/dev/tcp/$0/7777) 2>/dev/null &&
			{ echo "$a"; case $a in ok*) exit 0 ;; *) exit 1 ;; esac; }
		sleep 1
	done
	echo "error: no answer from $0 port 7777"; exit 1' "$SERVER_IP" "$@"
}
# stall_dump NAME: what the client waits for in a phase that does not end.
stall_dump() {
	{
		echo "phase $1 open for more than 90 s"
		for t in /sys/kernel/debug/sunrpc/rpc_clnt/*/tasks; do echo "--- $t"; cat "$t"; done
		for p in /proc/[0-9]*; do
			grep -q '^State:.*D' $p/status 2>/dev/null || continue
			echo "--- $p $(cat $p/comm)"; cat $p/stack
		done
		dmesg | tail -n 50
	} >/results/stall-$1-client.txt 2>&1
}
# phase NAME: begin a phase with cold caches, so every read hits the wire.
phase() {
	sync
	echo 3 >/proc/sys/vm/drop_caches
	PHASE=$1
	ctl begin "$PHASE" >/dev/null || fail "$PHASE: the server did not start the phase"
	# Not on our stdout: guest-init's tee would wait for the sleep to end.
	(sleep 90 && stall_dump "$PHASE") >/dev/null 2>&1 &
	WATCHDOG=$!
}
endphase() {
	kill $WATCHDOG 2>/dev/null
	ans=$(ctl end "$PHASE") || fail "$PHASE: the server did not end the phase: $ans"
	echo "$ans" | tr ' ' '\n' | grep -E '\.(svcrdma_post_send|svcrdma_send_pullup|svcrdma_post_write_chunk|svcrdma_post_reply_chunk|svcrdma_dma_map_page|seconds)=' |
		tr '\n' ' ' | sed "s/^/  $PHASE: /; s/$/\n/"
}
# record KEY: the sha256 of stdin, as the result KEY for this version.
record() { echo "$1@v$tag $(sha256sum | cut -d' ' -f1)" >>$RES; }
# dread FILE OFF LEN: O_DIRECT read of LEN bytes at byte offset OFF.
dread() {
	dd if="$1" iflag=direct,skip_bytes,count_bytes skip="$2" count="$3" bs="$3" status=none ||
		fail "$PHASE: direct read of $3 bytes at $2 from $1 failed"
}

wait_mount() { # VERS DIR [OPTS]
	tries=0
	until mount_rdma "$@" 2>/dev/null; do
		tries=$((tries + 1))
		[ $tries -gt 60 ] && { fail "NFSv$1 mount of $SERVER_IP over RDMA"; return 1; }
		sleep 2
	done
}

# On the second fabric (soft-iWARP) v4.1 is left out: its replies take the
# same Send-path branches as v4.2's, and make check has a time budget.
versions="3 4.1 4.2"
[ "$FABRIC" = rxe ] || versions="3 4.2"
for vers in $versions; do
	tag=$(echo $vers | tr -d .)
	d=/mnt/v$tag
	wait_mount $vers $d || continue
	[ "$(xprt_of $d)" = rdma ] || fail "NFSv$vers: client transport is $(xprt_of $d), not rdma"
	log "NFSv$vers mounted: $(mount_opts $d)"

	# Small replies, pulled up into the Send buffer: GETATTR, ACCESS and
	# LOOKUP storms, and tiny reads.
	# (Under TCG a round trip between the VMs takes some 20 ms: every
	# phase keeps its number of RPCs small.)
	phase pullup-v$tag
	stat -c '%n %s' $d/medium/* >/dev/null
	ls -l $d/medium >/dev/null
	cat /tmp/reads | while read -r key file off len; do
		case $key in tiny:*) dread $d/$file $off $len | record $key ;; esac
	done
	endphase

	# Replies that fit inline but are too large to pull up: mapped SGEs.
	phase mapped-v$tag
	cat /tmp/reads | while read -r key file off len; do
		case $key in inline:*) dread $d/$file $off $len | record $key ;; esac
	done
	ls -f $d/medium | grep -v '^\.\.\?$' | LC_ALL=C sort | record list:medium
	endphase

	# READ payloads through Write chunks: 1 byte to 1 MiB, unaligned,
	# short and empty at EOF, whole small files through the page cache.
	phase wchunk-v$tag
	cat /tmp/reads | while read -r key file off len; do
		case $key in wchunk:*) dread $d/$file $off $len | record $key ;; esac
	done
	for f in $d/s*; do record file:${f##*/} <$f; done
	endphase

	phase sparse-v$tag
	record file:sparse.bin <$d/sparse.bin
	endphase

	phase readlink-v$tag
	for l in $d/link-*; do printf %s "$(readlink $l)" | record readlink:${l##*/}; done
	endphase

	# Replies larger than the inline threshold: the Reply chunk. (No ls -l:
	# it would add a GETATTR and an ACL call per entry.)
	phase readdir-v$tag
	ls -f $d/big >/tmp/big.list
	grep -v '^\.\.\?$' /tmp/big.list | LC_ALL=C sort | record list:big
	n=$(grep -c '^entry-' /tmp/big.list)
	[ "$n" = 3000 ] || fail "NFSv$vers: the listing of big has $n of 3000 entries"
	endphase

	phase acl-v$tag
	case $vers in
	3) getfacl -n -p --omit-header $d/acl.bin 2>/tmp/acl.err | record acl:posix ;;
	*) getfattr --absolute-names --only-values -n system.nfs4_acl $d/acl.bin 2>/tmp/acl.err | record acl:nfs4 ;;
	esac
	[ -s /tmp/acl.err ] && fail "NFSv$vers: reading the ACL: $(head -n 2 /tmp/acl.err)"
	endphase

	if [ $vers = 4.2 ]; then
		phase xattr-v$tag
		getfattr --absolute-names --only-values -n user.big $d/xattr.bin | record xattr:user.big
		getfattr --absolute-names -m '^user\.n' $d/xattr.bin | grep '^user\.' | LC_ALL=C sort |
			record xattrnames
		endphase
	fi
	umount $d
done

# WRITE and mixed load: two concurrent mounts, one with nconnect, verifying
# fio on both, and generated files copied in; read back after a remount.
# Mounts and unmounts stay outside the phases, as in the loop above: over
# soft-iWARP a client that closes its connection right after its last reply
# can make siw complete that fully sent Send with LOC_QP_OP_ERR (its
# transmit thread tests tx_suspend, which the peer's FIN sets, after the
# last segment as after any other: siw_qp_sq_proc_tx). That is the device
# reporting a disconnect, not a Send error; the teardown suites test what
# happens to Sends at disconnects.
MOUNT_OPTS=nconnect=4 wait_mount 3 /mnt/w3
wait_mount 4.2 /mnt/w42
log "nconnect mount: $(mount_opts /mnt/w3)"
phase write-mixed
fio_job() { # DIR NAME
	fio --name="$2" --directory="$1" --rw=randrw --bs=16k --size=8m --numjobs=2 \
		--direct=1 --ioengine=libaio --iodepth=16 --runtime="$fio_seconds" --time_based \
		--verify=crc32c --verify_backlog=16 --verify_fatal=1 --invalidate=0 \
		--serialize_overlap=1 --verify_state_save=0 \
		--output-format=terse --terse-version=3 >/tmp/fio-$2.out 2>&1
}
fio_job /mnt/w3 fio-v3 &
p1=$!
fio_job /mnt/w42 fio-v42 &
p2=$!
python3 $G/conformance.py gen 41 4194304 >/mnt/w3/w-4m &
p3=$!
python3 $G/conformance.py gen 42 1234567 >/mnt/w42/w-odd
python3 $G/conformance.py gen 43 1 >/mnt/w42/w-1
wait $p3 || fail "write-mixed: writing w-4m"
for j in 1 2; do
	eval p=\$p$j
	name=$([ $j = 1 ] && echo fio-v3 || echo fio-v42)
	if wait "$p"; then
		kib=$(grep '^3;' /tmp/fio-$name.out | awk -F';' '{ r += $6; w += $47 } END { print r + w }')
		result "${name}_KiB_verified" "$kib"
		pass "write-mixed: $name randrw 16k with crc32c verify, $fio_seconds s, $kib KiB moved"
	else
		tail -n 20 /tmp/fio-$name.out
		fail "write-mixed: $name failed (see guest.log)"
	fi
done
endphase
umount /mnt/w3 /mnt/w42
wait_mount 3 /mnt/w3
wait_mount 4.2 /mnt/w42
phase write-readback
tag=3 record write:w-4m </mnt/w3/w-4m
tag=42 record write:w-odd </mnt/w42/w-odd
tag=42 record write:w-1 </mnt/w42/w-1
endphase
umount /mnt/w3 /mnt/w42

ctl done >/dev/null || fail "the server did not acknowledge the end"
grep -v '^#' $T/trace >/results/client-trace.txt
result results "$(wc -l <$RES)"
FAILS=$(wc -l </tmp/fails)
result failures $FAILS
exit $FAILS
