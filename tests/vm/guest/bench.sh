#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh ROUNDS SECONDS: the A/B benchmark in one boot. Measures the
# soft-RoCE ceiling with perftest once, then for each round loads the c and
# the rust rpcrdma.ko in turn (A B A B ...) over the same rxe link and
# export, and runs each job for SECONDS on an NFSv3 RDMA mount. Every
# measurement is a line of /results/bench.jsonl; scripts/bench_report.py
# turns them into ratios with confidence intervals.
# Topology: one VM, client and server sharing its 2 vCPUs.
. /work/tests/vm/guest/lib.sh

rounds=$1 secs=$2
out=/results/bench.jsonl
: >$out
modprobe ib_core
modprobe rdma_cm
modprobe sunrpc
modprobe rdma_rxe
setup_rxe

# busy_jiffies: CPU time spent not idle, all CPUs, in USER_HZ ticks.
busy_jiffies() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 }' /proc/stat; }
emit() { # round flavour job value unit cpu_s ops
	printf '{"round":%s,"flavour":"%s","job":"%s","value":%s,"unit":"%s","cpu_s":%s,"ops":%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "$7" >>$out
}

# The ceiling: RDMA Write and Send bandwidth on the same device.
for t in write send; do
	ib_${t}_bw -d rxe0 -R -D "$secs" -F >/tmp/srv.$t 2>&1 &
	sleep 1
	ib_${t}_bw -d rxe0 -R -D "$secs" -F $SERVER_IP >/tmp/cli.$t 2>&1 || true
	wait || true
	cp /tmp/cli.$t /results/perftest-$t.txt
	# perftest's own BW columns read 0 under TCG (no usable cycle clock):
	# bandwidth from bytes x iterations over the duration instead.
	bw=$(awk -v s="$secs" '$1 == 65536 && $2 ~ /^[0-9]+$/ { printf "%.2f", $1 * $2 / s / 1e6 }' /tmp/cli.$t | tail -n 1)
	emit 0 ceiling "ib_${t}_bw" "${bw:-null}" MBps null null
	log "ceiling ib_${t}_bw: ${bw:-n/a} MB/s"
done

nfsd_up=0
serve() {
	insmod "$MODULES/$1/rpcrdma.ko"
	if [ $nfsd_up = 0 ]; then
		start_nfsd
		nfsd_up=1
	else
		rpc.nfsd 8
		echo "rdma $RDMA_PORT" >/proc/fs/nfsd/portlist
	fi
	mount_rdma 3 /mnt/b
	mkdir -p /mnt/meta
	mount -t nfs -o rdma,port=$RDMA_PORT,vers=3,nolock,actimeo=0,nosharecache \
		$SERVER_IP:$EXPORT /mnt/meta
}
unserve() {
	umount /mnt/meta
	umount /mnt/b
	rpc.nfsd 0
	n=0
	until rmmod rpcrdma 2>/dev/null; do
		n=$((n + 1)); [ $n -gt 30 ] && { fail "rpcrdma busy after round"; exit 1; }
		sleep 1
	done
}

# fio_job NAME UNIT ARGS...: one fio run; prints "value cpu_s ops", the
# value in UNIT (IOPS or MiBps).
fio_job() {
	name=$1 unit=$2
	shift 2
	c0=$(busy_jiffies)
	rc=0
	fio --name="$name" --directory=/mnt/b --filename="bench-$name" --size=64m \
		--direct=1 --ioengine=libaio --time_based --runtime="$secs" --ramp_time=1 \
		--output-format=terse --terse-version=3 "$@" >/tmp/fio.out 2>&1 || rc=$?
	c1=$(busy_jiffies)
	t=$(grep '^3;' /tmp/fio.out | tail -n 1)
	if [ "$rc" != 0 ] || [ -z "$t" ]; then
		echo "fio exit $rc: $(tail -c 400 /tmp/fio.out | tr '\n' ' ')"
		return 1
	fi
	# terse v3: read KiB 6, KiB/s 7, IOPS 8; write KiB 47, KiB/s 48, IOPS 49
	echo "$t" | awk -F';' -v unit="$unit" -v cpu="$((c1 - c0))" '{
		kib = $6 + $47; kibps = $7 + $48; iops = $8 + $49
		v = (unit == "IOPS") ? iops : kibps / 1024
		printf "%.3f %.2f %d\n", v, cpu / 100.0, (unit == "IOPS") ? kib / 4 : kib / 1024
	}'
}

meta_job() {
	mkdir -p /mnt/b/meta
	for i in $(seq 1 200); do : >"/mnt/b/meta/f$i"; done
	c0=$(busy_jiffies)
	python3 - "$secs" <<'PY' >/tmp/meta.out
import os, sys, time
end = time.monotonic() + float(sys.argv[1])
ops = i = 0
while time.monotonic() < end:
    p = f"/mnt/meta/meta/f{i % 200 + 1}"
    os.stat(p)
    os.close(os.open(p, os.O_RDONLY))
    ops += 2
    i += 1
print(ops)
PY
	c1=$(busy_jiffies)
	ops=$(cat /tmp/meta.out)
	awk -v o="$ops" -v s="$secs" -v c="$((c1 - c0))" 'BEGIN { printf "%.1f %.2f %d\n", o / s, c / 100.0, o }'
}

r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	for f in c rust; do
		serve $f
		for spec in "randread4k:--rw=randread --bs=4k --iodepth=16:IOPS" \
			"seqread1m:--rw=read --bs=1m --iodepth=4:MiBps" \
			"seqwrite1m:--rw=write --bs=1m --iodepth=4:MiBps" \
			"randwrite4k:--rw=randwrite --bs=4k --iodepth=16:IOPS"; do
			job=${spec%%:*}; rest=${spec#*:}; args=${rest%:*}; unit=${rest##*:}
			# shellcheck disable=SC2086
			res=$(fio_job "$job" "$unit" $args) || { fail "fio $job ($f): $res"; continue; }
			# shellcheck disable=SC2086
			set -- $res
			emit $r $f "$job" "$1" "$unit" "$2" "$3"
			log "round $r $f $job: $1 $unit (cpu ${2}s, $3 ops)"
		done
		res=$(meta_job) || { fail "meta job ($f)"; res="null null null"; }
		# shellcheck disable=SC2086
		set -- $res
		emit $r $f meta_stat_open "$1" opsps "$2" "$3"
		log "round $r $f meta_stat_open: $1 ops/s"
		unserve
	done
done
pass "bench: $rounds rounds of c and rust, $(wc -l <$out) measurements"
exit $FAILS
