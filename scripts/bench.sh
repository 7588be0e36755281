#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh [ROUNDS] [SECONDS]: `make bench`. Builds what is missing, boots
# one VM that alternates the c and rust rpcrdma.ko over the same rxe link
# and export (ROUNDS rounds, default 5; SECONDS per job, default 8), and
# writes results.json, table.md and ratios.png into the run dir.

. "$(dirname "$0")/lib.sh"

ROUNDS=${1:-5} SECS=${2:-8}
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
timeout=$((ROUNDS * 2 * (5 * (SECS + 6) + 30) + 300))
rc=0
RUN=$(bash "$TOP/scripts/vm-run.sh" -t "$timeout" -n bench bench "$ROUNDS" "$SECS") || rc=$?
[ -s "$RUN/bench.jsonl" ] || die "bench: no measurements; console: $RUN/console.log"
"$PY" "$TOP/scripts/bench_report.py" "$RUN"
echo "results: $RUN/results.json $RUN/table.md"
[ "$rc" = 0 ] || die "bench: the guest reported failures ($RUN/guest.log)"
