#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# bench-client.sh CLIENT_IP ROUNDS SECONDS [PROFILE_SECONDS [VERSIONS]]: the client VM of the two-VM
# benchmark (scripts/bench.sh), which drives the whole run. Measures the
# soft-RoCE ceiling with perftest, then for each round has the server load
# the c and then the rust rpcrdma.ko (A B A B ...) over the same link and
# export and runs every job for SECONDS on an NFSv3 and an NFSv4.1 mount
# (VERSIONS, the 5th argument, e.g. "3" for make check's smoke).
# The server's CPU time is read around every job. Every measurement is a
# line of /results/bench.jsonl; scripts/bench_report.py makes the tables.
# With PROFILE_SECONDS, one more pass per flavour profiles the server with
# perf (cpu-clock sampling) during 4 KiB random reads and the metadata job.
. /work/tests/vm/guest/lib.sh

ip=$1 rounds=$2 secs=$3 profile_secs=${4:-0}
# The NFS versions, comma-separated (make check's smoke: NFSv3 alone).
versions=$(echo "${5:-3,4.1}" | tr , ' ')
nvers=$(echo $versions | wc -w)
out=/results/bench.jsonl
: >$out
rsh_client "$ip"
echo "two VMs, 1 vCPU each, joined by a QEMU socket network (TCG); soft-RoCE; NFS versions $versions" >/results/topology

# The server's CPU: busy and total jiffies (USER_HZ), all its CPUs.
srv_busy() { srv "awk '/^cpu / { print \$2 + \$3 + \$4 + \$7 + \$8 }' /proc/stat"; }
emit() { # round flavour vers job value unit srv_cpu_s ops mib
	printf '{"round":%s,"flavour":"%s","vers":"%s","job":"%s","value":%s,"unit":"%s","srv_cpu_s":%s,"ops":%s,"mib":%s}\n' \
		"$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8" "$9" >>$out
}

# The ceiling: RDMA Write and Send bandwidth between the same two rxe
# devices. perftest's own bandwidth columns read 0 under TCG (its cycle
# clock is unusable there), so a fixed amount is timed with the wall clock.
# perftest busy-polls its completion queue; on one vCPU that would starve
# soft-RoCE's kernel threads, which do the actual transfer. So it runs as
# SCHED_IDLE: it polls only when no kernel thread wants the CPU. (-e, to
# sleep on completion events, is not available for RDMA Write.) The amount
# scales with the job length: 400 MiB (~40 s each) for `make bench`'s 5 s
# jobs, 160 MiB for the 2 s jobs of make check's smoke.
PT_N=$((secs * 80))
for t in write send; do
	srv "chrt -i 0 ib_${t}_bw -d rxe0 -s 1048576 -n $PT_N -F </dev/null >/tmp/pt-$t.txt 2>&1 &"
	sleep 2
	t0=$(date +%s.%N)
	if chrt -i 0 ib_${t}_bw -d rxe0 -s 1048576 -n $PT_N -F $SERVER_IP >/results/perftest-$t.txt 2>&1; then
		t1=$(date +%s.%N)
		bw=$(awk -v n=$PT_N -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", n * 1048576 / (b - a) / 1e6 }')
		emit 0 ceiling - "ib_${t}_bw" "$bw" MBps null null null
		log "ceiling ib_${t}_bw: $bw MB/s ($PT_N x 1 MiB)"
	else
		fail "perftest ib_${t}_bw"
	fi
	sleep 1
done

serve() {
	v=$(srv "insmod \$MODULES/$1/rpcrdma.ko && rpc.nfsd 8 &&
		echo 'rdma $RDMA_PORT' >/proc/fs/nfsd/portlist && cat /sys/module/rpcrdma/version") ||
		{ fail "server: loading $1"; return 1; }
	[ "${v##*-}" = "$1" ] || { fail "server runs $v, not the $1 flavour"; return 1; }
}
unserve() {
	srv 'rpc.nfsd 0; n=0; until rmmod rpcrdma 2>/dev/null; do
		n=$((n + 1)); [ $n -gt 30 ] && exit 1; sleep 1; done' ||
		{ fail "server: rpcrdma still busy 30 s after nfsd stopped"; return 1; }
}

# fio_job NAME UNIT BS_KIB ARGS...: prints "value ops mib" (value in UNIT).
fio_job() {
	name=$1 unit=$2 bs=$3
	shift 3
	rc=0
	fio --name="$name" --directory=/mnt/b --filename="bench-$name" --size=64m \
		--direct=1 --ioengine=libaio --time_based --runtime="$secs" --ramp_time=1 \
		--output-format=terse --terse-version=3 "$@" >/tmp/fio.out 2>&1 || rc=$?
	t=$(grep '^3;' /tmp/fio.out | tail -n 1)
	if [ "$rc" != 0 ] || [ -z "$t" ]; then
		echo "fio exit $rc: $(tail -c 400 /tmp/fio.out | tr '\n' ' ')"
		return 1
	fi
	# terse v3: read KiB 6, KiB/s 7, IOPS 8; write KiB 47, KiB/s 48, IOPS 49
	echo "$t" | awk -F';' -v unit="$unit" -v bs="$bs" '{
		kib = $6 + $47; kibps = $7 + $48; iops = $8 + $49
		printf "%.3f %d %.2f\n", (unit == "IOPS") ? iops : kibps / 1024, kib / bs, kib / 1024
	}'
}
# meta: 16 workers stat and open/close 200 files on an actimeo=0 mount
# (every call goes to the server); readdir: 4 workers list their own
# 4000-entry directory, the client's caches dropped before each listing
# (every listing is READDIR on the wire). Concurrent, because a lone RPC
# waits out the fabric's round trip (tens of ms between TCG VMs).
py_job() {
	python3 - "$1" "$secs" <<'PY'
import os, sys, threading, time
job, secs = sys.argv[1], float(sys.argv[2])
workers = 16 if job == "meta" else 4
counts = [0] * workers


def work(w):
    end = time.monotonic() + secs
    i = 0
    while time.monotonic() < end:
        if job == "meta":
            p = f"/mnt/meta/meta/f{(w * 13 + i) % 200 + 1}"
            os.stat(p)
            os.close(os.open(p, os.O_RDONLY))
            counts[w] += 2
        else:
            with open("/proc/sys/vm/drop_caches", "w") as f:
                f.write("3")
            counts[w] += len(os.listdir(f"/mnt/meta/big{w}"))
        i += 1


t0 = time.monotonic()
threads = [threading.Thread(target=work, args=(w,)) for w in range(workers)]
for t in threads:
    t.start()
for t in threads:
    t.join()
ops = sum(counts)
print(f"{ops / (time.monotonic() - t0):.1f} {ops} 0")
PY
}

JOBS="randread4k seqread1m seqwrite1m randwrite4k meta_stat_open readdir"
unit_of() {
	case $1 in
	*4k) echo IOPS ;;
	*1m) echo MiBps ;;
	meta_stat_open) echo opsps ;;
	readdir) echo entriesps ;;
	esac
}
# run_job JOB: prints "value ops mib".
run_job() {
	case $1 in
	randread4k) fio_job $1 IOPS 4 --rw=randread --bs=4k --iodepth=16 ;;
	seqread1m) fio_job $1 MiBps 1024 --rw=read --bs=1m --iodepth=4 ;;
	seqwrite1m) fio_job $1 MiBps 1024 --rw=write --bs=1m --iodepth=4 ;;
	randwrite4k) fio_job $1 IOPS 4 --rw=randwrite --bs=4k --iodepth=16 ;;
	meta_stat_open) py_job meta ;;
	readdir) py_job readdir ;;
	esac
}
r=0
while [ $r -lt "$rounds" ]; do
	r=$((r + 1))
	for f in c rust; do
		serve $f || exit 1
		for vers in $versions; do
			mount_rdma $vers /mnt/b || { fail "mount v$vers ($f)"; continue; }
			MOUNT_OPTS=actimeo=0,nosharecache mount_rdma $vers /mnt/meta ||
				{ fail "metadata mount v$vers ($f)"; umount /mnt/b; continue; }
			for job in $JOBS; do
				b0=$(srv_busy)
				run_job $job >/tmp/job.out || { fail "$job v$vers ($f): $(cat /tmp/job.out)"; continue; }
				b1=$(srv_busy)
				# shellcheck disable=SC2046 # value ops mib
				set -- $(cat /tmp/job.out)
				cpu=$(awk -v a="$b0" -v b="$b1" 'BEGIN { printf "%.2f", (b - a) / 100 }')
				emit $r $f "$vers" "$job" "$1" "$(unit_of $job)" "$cpu" "$2" "$3"
				log "round $r $f v$vers $job: $1 $(unit_of $job) (server cpu ${cpu}s, $2 ops)"
			done
			umount /mnt/meta
			umount /mnt/b
		done
		unserve || exit 1
	done
done
# profile FLAVOUR JOB: perf on the server while JOB runs on NFSv3; the
# report (self time per symbol) goes to /results/profile-FLAVOUR-JOB.txt
# and a line to profile.jsonl: samples in all, in the flavour's own
# Send-path functions, and the job's operations.
PERF_HZ=499
profile() {
	srv "perf record -F $PERF_HZ -e cpu-clock -a -o /tmp/perf.data -- sleep $((profile_secs + 2)) \
		</dev/null >/tmp/perf.log 2>&1 &" || return 1
	secs=$profile_secs
	run_job $2 >/tmp/job.out || return 1
	ops=$(cut -d' ' -f2 /tmp/job.out)
	sleep 3
	srv "perf report -i /tmp/perf.data --no-children --sort sym -n --stdio -q 2>/dev/null" \
		>/results/profile-$1-$2.txt || return 1
	# "  12.34%  123  [k] name": self samples per symbol (idle included, one
	# vCPU); the flavour's own Send-path functions are listed by its build.
	awk -v list="$MODULES/$1/sendpath-symbols.txt" -v f="$1" -v job="$2" -v ops="$ops" -v hz=$PERF_HZ '
		BEGIN { while ((getline s < list) > 0) ours[s] = 1 }
		$3 == "[k]" || $3 == "[.]" { all += $2; if ($4 in ours) send += $2 }
		END {
			printf "{\"flavour\":\"%s\",\"job\":\"%s\",\"samples\":%d,\"sendpath_samples\":%d,\"hz\":%d,\"ops\":%d}\n",
				f, job, all, send, hz, ops
		}' /results/profile-$1-$2.txt >>/results/profile.jsonl
}
if [ "$profile_secs" -gt 0 ]; then
	if srv "command -v perf >/dev/null"; then
		: >/results/profile.jsonl
		for f in c rust; do
			serve $f || exit 1
			mount_rdma 3 /mnt/b && MOUNT_OPTS=actimeo=0,nosharecache mount_rdma 3 /mnt/meta || {
				fail "profile mounts ($f)"; continue; }
			for job in randread4k meta_stat_open; do
				profile $f $job || fail "profile $f $job"
			done
			umount /mnt/meta
			umount /mnt/b
			unserve || exit 1
		done
		pass "bench: server profiles of randread4k and meta_stat_open for c and rust"
	else
		fail "bench: no perf on the server, no profile"
	fi
fi

n=$(grep -c '"flavour":"\(c\|rust\)"' $out || true)
want=$((rounds * 2 * nvers * $(echo $JOBS | wc -w)))
result measurements "$n"
if [ "$n" = "$want" ]; then
	pass "bench: $rounds rounds x c,rust x NFS versions $versions x $(echo $JOBS | wc -w) jobs measured ($n)"
else
	fail "bench: $n of $want measurements"
fi
result failures $FAILS
exit $FAILS
