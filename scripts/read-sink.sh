#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# read-sink.sh [--build-only]: what the module fixes (scripts/module-patches/)
# change, on the test kernel in the DMA-mapped mode (swiotlb=force): both
# flavours as every build makes them (with the fixes), and both built
# without them (RPCRDMA_OMIT_FIXES, which reverses them from the test
# kernel's source for that build alone), through tests/vm/guest/read-sink.sh
# in one VM: NFS WRITEs in Read chunks, every byte compared with what knfsd
# wrote (0001, RDMA Read sinks unmapped before knfsd uses them), then the
# rdma_stat_* counters read byte by byte (0002).
#   with the fixes     every byte right, and Read chunks were used; each
#                      counter reads as a prefix of its value
#   without the fixes  wrong bytes in the Read-chunk writes, and counters
#                      read as other digits (each bug shows, so the test can
#                      see it: a run where one does not show fails), the
#                      inline writes right
# This shows both bugs are in the kernel's C, which both flavours link, and
# that the fixes remove them in both. Prints PASS:/FAIL: lines and the four
# modules side by side; exits non-zero on any FAIL.
# --build-only builds the two variants and runs nothing.

. "$(dirname "$0")/lib.sh"

FIX=$(basename "$(module_patches | head -n 1)")
ALL_FIXES=$(module_patches | xargs -n 1 basename | paste -sd' ' -)
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
MODULES=(rust c rust-nofix c-nofix)
for f in rust c; do
	if ! RPCRDMA_OMIT_FIXES=$ALL_FIXES bash "$TOP/scripts/build-module.sh" $f $f-nofix >/dev/null 2>&1; then
		fail "read-sink: the $f build without the module fixes fails ($LOGS/module-$f-nofix.log)"
	fi
done
[ "${1:-}" = --build-only ] && { [ "$FAILS" = 0 ]; exit; }
[ "$FAILS" = 0 ] || exit 1
for m in rust c; do
	[ -f "$TOP/$MODULE_OUT/$m/rpcrdma.ko" ] || bash "$TOP/scripts/build-module.sh" $m >/dev/null
done

rc=0
run=$(bash "$TOP/scripts/vm-run.sh" -D -t 900 -n read-sink read-sink "${MODULES[@]}") || rc=$?
relay_guest_log "read-sink: " "$run"
[ "$rc" = 0 ] || fail "read-sink VM run: status $rc ($run)"
get() { read_sink_value "$run" "$(echo "$1" | tr -- '-/' '__')" "$2"; }
echo "    NFS WRITEs in Read chunks on the test kernel, DMA-mapped (swiotlb=force), each byte checked:"
printf '    %-22s' ""
for m in "${MODULES[@]}"; do printf ' %-30s' "$m"; done
echo
for key in fixes writes read_chunks chunk_bytes chunk_bytes_wrong chunk_files_wrong inline_bytes_wrong counter_reads; do
	printf '    %-22s' "$key"
	for m in "${MODULES[@]}"; do printf ' %-30s' "$(get $m $key | short_fixes | short_counter_reads $key)"; done
	echo
done

for m in "${MODULES[@]}"; do
	case $m in
	*-nofix)
		read_sink_verdict "$run" "${m//-/_}" wrong "read-sink $m (without ${FIX%.patch})"
		counter_verdict "$run" "${m//-/_}" wrong "read-sink $m (without the module fixes)"
		;;
	*)
		read_sink_verdict "$run" "$m" right "read-sink $m (with ${FIX%.patch})"
		counter_verdict "$run" "$m" right "read-sink $m (with the module fixes)"
		;;
	esac
done
[ "$FAILS" = 0 ]
