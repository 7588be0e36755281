#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh [ROUNDS] [SECONDS] [PROFILE_SECONDS]: `make bench`. Builds what
# is missing, boots a server VM and a client VM (1 vCPU each, QEMU socket
# network) and has the server alternate the c and rust rpcrdma.ko over the
# same rxe link and export (ROUNDS rounds, default 5; SECONDS per job,
# default 5), then profiles the server with perf for each flavour
# (PROFILE_SECONDS per job, default 8; 0 skips), and writes results.json,
# table.md and ratios.png into the client's run dir, linked as
# $CACHE/bench/latest.

. "$(dirname "$0")/lib.sh"

ROUNDS=${1:-5} SECS=${2:-5} PROFILE_SECS=${3:-8}
# BENCH_VERSIONS: the NFS versions, comma-separated (make check's smoke: 3).
VERSIONS=${BENCH_VERSIONS:-3,4.1}
NVERS=$(tr , '\n' <<<"$VERSIONS" | grep -c .)
# Debian's interpreter, which Debian's matplotlib is installed for (a
# python3 earlier in PATH, e.g. pyenv's, would not see it).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
bash "$TOP/scripts/setup.sh"
if ! "$PY" -c 'import matplotlib' 2>/dev/null && [ "$(id -u)" = 0 ]; then
	run_logged apt-matplotlib env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y -t bookworm --no-install-recommends python3-matplotlib
fi
bash "$TOP/scripts/build-kernel.sh" >/dev/null
bash "$TOP/scripts/mkrootfs.sh" >/dev/null
bash "$TOP/scripts/build-module.sh" c
bash "$TOP/scripts/build-module.sh" rust
# Per job: SECONDS + 1 s ramp + mount, CPU reads and fio set-up.
jobs=$((ROUNDS * 2 * NVERS * 6))
timeout=$((jobs * (SECS + 5) + ROUNDS * 60 + 4 * (PROFILE_SECS + 15) + 300))
say "bench: $ROUNDS rounds x c,rust x NFS versions $VERSIONS x 6 jobs of ${SECS}s (~$(((jobs * (SECS + 4) + 120) / 60)) min)"
rc=0
pair=$(bash "$TOP/scripts/vm-pair.sh" -t "$timeout" -c 1 bench-server bench-client ab "$ROUNDS" "$SECS" "$PROFILE_SECS" "$VERSIONS") || rc=$?
read -r SRV CLI <<<"$pair"
[ -s "$CLI/bench.jsonl" ] || die "bench: no measurements; logs: $CLI/guest.log $SRV/guest.log"
grep -E '^(PASS|FAIL): ' "$CLI/guest.log" || true
"$PY" "$TOP/scripts/bench_report.py" "$CLI"
mkdir -p "$CACHE/bench"
ln -sfn "$CLI" "$CACHE/bench/latest"
echo "results: $CLI/results.json $CLI/table.md (also $CACHE/bench/latest)"
[ "$rc" = 0 ] || die "bench: a VM reported failures ($CLI/guest.log, $SRV/guest.log)"
