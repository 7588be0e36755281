# SPDX-License-Identifier: GPL-2.0
# Common settings and helpers for the workbench scripts. Sourced, not run.

set -euo pipefail

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# Everything downloaded or built outside the repo lives here; safe to delete.
CACHE=${RPCRDMA_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/rpcrdma-rs}
KVER_PKG=7.3                      # Debian linux-source-<KVER_PKG>
LLVM_SUFFIX=-19
TOOLS=$CACHE/tools
LOGS=$CACHE/logs
# The workbench's own tools (rustup's, bindgen-cli) come first. Not for a
# build into the system cache (DKMS, as root from apt or a kernel hook):
# there a preserved $HOME (sudo -E, automation) must not supply a root
# build's tools; the distribution's are used, and checked by version.
if [ "$CACHE" != /var/cache/rpcrdma-rs ]; then
	export PATH=$TOOLS/bin:$HOME/.cargo/bin:$PATH
fi
# bindgen loads this libclang (the Debian package depends on libclang-19-dev
# for it).
export LIBCLANG_PATH=/usr/lib/llvm${LLVM_SUFFIX}/lib
mkdir -p "$CACHE" "$TOOLS" "$LOGS"
# Parallel jobs of the kernel and module builds: RPCRDMA_JOBS (dkms.conf
# passes DKMS's parallel_jobs), else one per CPU.
JOBS=${RPCRDMA_JOBS:-$(nproc)}
case $JOBS in '' | *[!0-9]* | 0) JOBS=$(nproc) ;; esac

say()  { printf '==> %s\n' "$*"; }
warn() { printf '!!! %s\n' "$*" >&2; }
die()  { warn "$*"; exit 1; }

# What a guest's kernel prints when one of its checkers finds a problem:
# oops, BUG (KASAN, sleeping in atomic), WARNING (lockdep, list
# corruption), UBSAN, kmemleak. Any of them fails a VM run.
KERNEL_REPORTS='Oops|BUG:|WARNING:|Call Trace:|Kernel panic|UBSAN:|kmemleak: [0-9]+ new suspected|possible (recursive|circular) locking'

# stale_int3 CONSOLE: true when the first report on a guest's console is an
# "Oops: int3" whose trapping byte is no longer an int3 in memory. x86
# patches code (static keys, tracepoints, ftrace) by writing an int3 first
# and the new bytes after it, with a sync of every CPU in between; QEMU's
# multi-threaded TCG (7.2 here) sometimes lets a vCPU run its stale
# translation of that int3 after the patch and the sync are done, and the
# kernel, which no longer expects a trap there, oopses. The "Code:" line
# shows memory at the time of the report: the byte before "<..>" (int3
# reports the address after it) is the patched one, not cc. A real int3 (a
# wild jump into padding, a leftover kprobe) is still cc there. Seen about
# once in 100 boots, anywhere in the core kernel (Documentation/testing.rst).
stale_int3() {
	local console=$1 first code
	first=$(grep -m1 -E "$KERNEL_REPORTS" "$console" 2>/dev/null) || return 1
	case $first in *'Oops: int3'*) ;; *) return 1 ;; esac
	code=$(grep -m1 -A8 'Oops: int3' "$console" | grep -m1 '^Code:') || return 1
	[[ $code =~ ([0-9a-f]{2})\ \<[0-9a-f]{2}\> ]] || return 1
	[ "${BASH_REMATCH[1]}" != cc ]
}

# run_logged NAME CMD...: run CMD with output into $LOGS/NAME.log; on failure
# print the tail and the log's path and exit non-zero. With VERBOSE=1 the
# output is also shown live.
run_logged() {
	local name=$1; shift
	local log=$LOGS/$name.log
	local t0=$SECONDS rc=0
	if [ "${VERBOSE:-0}" = 1 ]; then
		"$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
	else
		"$@" >"$log" 2>&1 || rc=$?
	fi
	if [ "$rc" != 0 ]; then
		tail -n 30 "$log" >&2 || true
		die "$name failed (exit $rc); full log: $log"
	fi
	printf '    %s done in %ds (log: %s)\n' "$name" $((SECONDS - t0)) "$log"
}

# progress_logged NAME CMD...: like run_logged, but prints a heartbeat line
# with the log's last line every 30 s, for steps that take minutes.
progress_logged() {
	local name=$1; shift
	local log=$LOGS/$name.log
	local t0=$SECONDS rc=0 pid
	"$@" >"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		for _ in $(seq 30); do
			sleep 1
			kill -0 "$pid" 2>/dev/null || break
		done
		kill -0 "$pid" 2>/dev/null &&
			printf '    [%s %4ds] %s\n' "$name" $((SECONDS - t0)) \
				"$(tail -n 1 "$log" | cut -c1-100)"
	done
	wait "$pid" || rc=$?
	if [ "$rc" != 0 ]; then
		tail -n 40 "$log" >&2 || true
		die "$name failed (exit $rc); full log: $log"
	fi
	printf '    %s done in %ds (log: %s)\n' "$name" $((SECONDS - t0)) "$log"
}

# The test kernel: source tree, build tree keyed by version + config hash.
# KERNEL_VARIANT=debug adds scripts/kernel-debug.config (KASAN, lockdep,
# kmemleak, ...): a second kernel, with its modules in build-debug/.
# Both kernels have ACPI and the Intel IOMMU: DMA_IOMMU=1 (make
# check-iommu) makes vm-run.sh -D boot a VM whose NICs sit behind QEMU's
# emulated IOMMU, instead of swiotlb; no third kernel.
export KERNEL_VARIANT=${KERNEL_VARIANT:-}
case "$KERNEL_VARIANT" in
"") MODULE_OUT=build ;;
debug) MODULE_OUT=build-debug ;;
*) die "KERNEL_VARIANT must be empty or debug, not '$KERNEL_VARIANT'" ;;
esac
export DMA_IOMMU=${DMA_IOMMU:-0}
kernel_src()  { echo "$CACHE/src/linux-source-$KVER_PKG"; }
config_fragments() {
	echo "$TOP/scripts/kernel.config"
	[ -z "$KERNEL_VARIANT" ] || echo "$TOP/scripts/kernel-$KERNEL_VARIANT.config"
}
# The fixes to the kernel's own net/sunrpc/xprtrdma C that every rpcrdma.ko
# we build carries, shipped (DKMS, make install) and test alike, in the
# order of scripts/module-patches/series (scripts/module-patches.sh applies
# them to a module build's private copy of those files).
module_patches() {
	sed -e 's/#.*//' "$TOP/scripts/module-patches/series" | awk 'NF { print $1 }' |
		sed "s|^|$TOP/scripts/module-patches/|"
}
# The patches of the test kernels, applied to a hard-link copy of the source
# (kernel_build_src), so that kernel_src stays the pristine Debian tree:
# fixes to the kernels themselves and the test drivers' DMA-mapped mode
# (scripts/kernel-patches/), then the module patches above, so that the
# kernel's own tree (the in-tree graft, the C flavour's sources) has the
# fixes too.
kernel_patches() {
	ls "$TOP"/scripts/kernel-patches/*.patch 2>/dev/null || true
	module_patches
}
# patch_diffs PATCH...: what the patches change, without their descriptions
# (from the first "--- " line to the end, less a format-patch signature):
# the kernels are keyed by this, so that editing a commit message does not
# rebuild one.
patch_diffs() {
	local p
	for p in "$@"; do sed -n '/^--- /,$p' "$p" | sed '/^-- $/,$d'; done
}
kernel_build_src() {
	if [ -n "$(kernel_patches)" ]; then
		# shellcheck disable=SC2046 # one path a word
		echo "$(kernel_src)-patched-$(patch_diffs $(kernel_patches) | sha256sum | cut -c1-12)"
	else
		kernel_src
	fi
}
# relay_guest_log PREFIX RUN: a VM run's PASS:/FAIL: lines as checks of the
# calling script (its pass/fail functions), named with PREFIX; failures
# name the run's directory.
relay_guest_log() {
	local line
	while IFS= read -r line; do
		case $line in
		PASS:*) pass "$1${line#PASS: }" ;;
		FAIL:*) fail "$1${line#FAIL: } ($2)" ;;
		esac
	done < <(grep -E '^(PASS|FAIL): ' "$2/guest.log" 2>/dev/null)
}

# short_fixes: a module's fixes as read-sink.sh records them ("NAME (what
# became of it)" each) in a table column's width: "0001:applied".
short_fixes() {
	sed -E 's/([0-9]{4})-[^ ]* \((applied|in the kernel source already|omitted)[^)]*\)+/\1:\2/g;
		s/in the kernel source already/in-source/g'
}

# read_sink_value RUN LABEL KEY: a result of tests/vm/guest/read-sink.sh
# for one module (LABEL: its spec with -, /, @ and . made _).
read_sink_value() { sed -n "s/^rs_$2_$3=//p" "$1/summary" 2>/dev/null | tail -n 1 || true; }
# read_sink_verdict RUN LABEL EXPECT WHO: one module's read-sink results
# judged with the caller's pass/fail, naming WHO: the workload ran (every
# write done, Read chunks used), the inline writes are right, and the
# Read-chunk writes are right (EXPECT right) or, for a module without the
# fix in the DMA-mapped mode, wrong (EXPECT wrong: the bug must show, or
# the runs with the fix prove nothing).
read_sink_verdict() {
	local run=$1 label=$2 expect=$3 who=$4 chunks bytes wrong files inline io
	chunks=$(read_sink_value "$run" "$label" read_chunks) bytes=$(read_sink_value "$run" "$label" chunk_bytes)
	wrong=$(read_sink_value "$run" "$label" chunk_bytes_wrong) files=$(read_sink_value "$run" "$label" chunk_files_wrong)
	inline=$(read_sink_value "$run" "$label" inline_bytes_wrong) io=$(read_sink_value "$run" "$label" io_ok)
	if [ "$io" != 1 ] || [ "${chunks:-0}" = 0 ] || [ "${bytes:-0}" = 0 ]; then
		fail "$who: io_ok=${io:-?}, ${chunks:-no} Read chunks, ${bytes:-no} bytes written in them: the workload did not run as meant ($run)"
		return
	fi
	[ "$inline" = 0 ] || fail "$who: $inline bytes of the inline writes wrong (no Read chunk there) ($run)"
	case $expect:$wrong in
	right:0) pass "$who: $bytes bytes through $chunks Read chunks, every byte right" ;;
	right:*) fail "$who: $wrong of $bytes bytes written wrong, in $files of the Read-chunk writes ($run)" ;;
	wrong:0) fail "$who: every byte of $chunks Read chunks right: the DMA-mapped mode no longer shows the bug, so the runs with the fix prove nothing ($run)" ;;
	*) pass "$who: $wrong of $bytes bytes written wrong, in $files of the Read-chunk writes: the bug reproduced" ;;
	esac
}

# counter_verdict RUN LABEL EXPECT WHO: one module's rdma_stat_* counters
# read byte by byte (tests/vm/guest/read-sink.sh, counter_reads), judged
# with the caller's pass/fail: each read a prefix of the counter's value
# (EXPECT right), or, for a module without scripts/module-patches/0002,
# other digits (EXPECT wrong: the bug must show, or the right reads of the
# fixed modules prove nothing).
counter_verdict() {
	local run=$1 label=$2 expect=$3 who=$4 got
	got=$(read_sink_value "$run" "$label" counter_reads)
	case $expect:$got in
	*:) fail "$who: no rdma_stat_* counter reads recorded ($run)" ;;
	right:ok) pass "$who: the rdma_stat_* counters read byte by byte give their values' first bytes" ;;
	right:*) fail "$who: rdma_stat_* counters read byte by byte as other digits: $got ($run)" ;;
	wrong:ok) fail "$who: the rdma_stat_* counters read right without the fix, so the reads of the fixed modules prove nothing ($run)" ;;
	*) pass "$who: rdma_stat_* counters read byte by byte as other digits ($got): the bug reproduced" ;;
	esac
}
# short_counter_reads KEY: filter; counter_reads in a table column ("ok",
# or "wrong: N" counters), other keys as they are.
short_counter_reads() {
	if [ "$1" = counter_reads ]; then
		awk '{ if ($0 == "ok" || $0 == "") print; else print "wrong: " gsub(/=/, "=") }'
	else
		cat
	fi
}

# hostile_table RUN_ASSERTED RUN_COMPARED OUT [FILE]: the hostile suite's
# outcome per class of two runs side by side (class, expected, first,
# second), marking the classes where they differ; also written to OUT.
# FILE is the runs' result file (hostile.txt, or hostile-siw.txt).
hostile_table() {
	local file=${4:-hostile.txt}
	join -t'|' <(sed -nE 's/^class=([^ ]+) expected=([^ ]+) got=([^ ]+) .*/\1|\2|\3/p' "$1/$file" 2>/dev/null | sort) \
		<(sed -nE 's/^class=([^ ]+) expected=[^ ]+ got=([^ ]+) .*/\1|\2/p' "$2/$file" 2>/dev/null | sort) |
		awk -F'|' '{ printf "    %-30s %-16s %-22s %-22s%s\n", $1, $2, $3, $4, ($3 != $4 ? "  <- differs" : "") }' |
		tee "$3"
}

# Machine-code coverage of the Send path in `make check` (COVERAGE=1, set
# by scripts/check.sh) and `make coverage`: the VM runs of the flavours in
# COV_FLAVOURS (default rust) load build/FLAVOUR-cov (the production build,
# rust with RPCRDMA_RS_KUNIT=n, with debuginfo) under the TCG plugin
# tests/profile/insn_coverage.c, which records module code only (the core
# kernel runs uninstrumented), and are listed in $LOGS/coverage-runs.txt for
# scripts/coverage_report.py. Nothing without COVERAGE=1.
COV_PLUGIN=$TOP/build/coverage/libinsn_coverage.so
coverage_plugin_build() {
	[ -f "$COV_PLUGIN" ] && [ "$COV_PLUGIN" -nt "$TOP/tests/profile/insn_coverage.c" ] && return 0
	check_qemu_plugin_api "the coverage plugin"
	mkdir -p "$(dirname "$COV_PLUGIN")"
	cc -O2 -Wall -Wextra -Werror -shared -fPIC -fvisibility=hidden -pthread \
		-o "$COV_PLUGIN" "$TOP/tests/profile/insn_coverage.c"
}
# coverage_build [FLAVOUR]: build/FLAVOUR-cov (default rust), when older
# than the sources or the kernel.
coverage_build() {
	local f=${1:-rust} ko kb args="KCFLAGS=-g KRUSTFLAGS=-Cdebuginfo=2"
	ko=$TOP/build/$f-cov/rpcrdma.ko kb=$(kernel_build)
	[ -f "$ko" ] && [ "$ko" -nt "$kb/.build-complete" ] &&
		[ -z "$(find "$TOP/src" "$TOP/bindings" "$TOP/Kbuild" -newer "$ko" -print -quit)" ] && return 0
	[ "$f" = rust ] && args="$args RPCRDMA_RS_KUNIT=n"
	MODULE_MAKE_ARGS=$args bash "$TOP/scripts/build-module.sh" "$f" "$f-cov" >/dev/null
}
cov_wanted() { [ "${COVERAGE:-0}" = 1 ] && [[ " ${COV_FLAVOURS:-rust} " = *" $1 "* ]]; }
# cov_vm_args FLAVOUR [trace]: vm-run.sh options of a run that records
# coverage; "trace" also enables every svcrdma event after each load, for
# runs that do not count events themselves.
cov_vm_args() {
	cov_wanted "$1" || return 0
	echo "-P $COV_PLUGIN,out=@RUN@/coverage.txt,from=0xffffffffa0000000 -e rs_coverage=1 -e rs_module_dir=$1-cov${2:+ -e rs_cov_trace=1}"
}
# cov_note_run FLAVOUR RUN: list RUN for the report.
cov_note_run() {
	cov_wanted "$1" && [ -n "$2" ] || return 0
	echo "$1:$TOP/build/$1-cov:$2" >>"$LOGS/coverage-runs.txt"
}

# in_rootfs DIR CMD...: CMD on the host, natively, in the guests' root
# filesystem (the same binaries the VMs run, e.g. tshark), with DIR as
# /results and this tree as /work; the mounts are private to the command.
# Work that takes minutes under TCG takes seconds here.
in_rootfs() {
	local dir=$1 r
	shift
	r=$(bash "$TOP/scripts/mkrootfs.sh" 2>/dev/null) || { warn "in_rootfs: no rootfs"; return 1; }
	unshare -m -- bash -c 'r=$1 dir=$2 top=$3; shift 3
		mount --bind "$dir" "$r/results" && mount -o bind,ro "$top" "$r/work" &&
		mount -t proc proc "$r/proc" && mount --bind /dev "$r/dev" &&
		mount -t tmpfs tmpfs "$r/tmp" && HOME=/tmp exec chroot "$r" "$@"' \
		in_rootfs "$r" "$dir" "$TOP" "$@"
}

# shellcheck disable=SC2046 # one path a word
config_key()  { { config_fragments | xargs cat; patch_diffs $(kernel_patches); } | sha256sum | cut -c1-12; }
# The test kernel's object tree, a subdirectory of the source it is built
# from: Kbuild then names the source "..", so no command line holds an
# absolute path, and a copy of the objects in another tree of the same
# source (scripts/series-check.sh) rebuilds only what its own config and
# patches change.
kernel_build() { echo "$(kernel_build_src)/build-$KVER_PKG-${KERNEL_VARIANT:+$KERNEL_VARIANT-}$(config_key)"; }

# check_qemu_plugin_api WHAT: dies unless this QEMU is 7.2 (plugin interface
# version 1, tests/profile/qemu_plugin_v1.h) and exports every function the
# header declares; WHAT names the plugin in the message.
check_qemu_plugin_api() {
	local qemu qv missing
	qemu=$(command -v qemu-system-x86_64) || die "no qemu-system-x86_64"
	qv=$("$qemu" --version | sed -n 's/^QEMU emulator version \([0-9.]*\).*/\1/p')
	case $qv in 7.2*) ;; *) die "$1 is written for QEMU 7.2's plugin interface (version 1); this QEMU is $qv" ;; esac
	missing=$(comm -23 <(grep -o 'qemu_plugin_[a-z_]*(' "$TOP/tests/profile/qemu_plugin_v1.h" | tr -d '(' | sort -u) \
		<(nm -D --defined-only "$qemu" | awk '{ print $3 }' | sort -u))
	[ -z "$missing" ] || die "this QEMU does not export: $missing"
}

# The DMA-mapped VM runs (vm-run.sh -D) that boot behind QEMU's emulated
# IOMMU instead of swiotlb: every one with DMA_IOMMU=1 (make check-iommu);
# in `make check`, those IOMMU_RUNS names (scripts/check.sh), so that both
# modes run at every check, each with a share of the DMA-mapped runs
# (Documentation/testing.rst says which and why).
# iommu_for NAME: 1 if the run called NAME boots behind the IOMMU, else 0.
iommu_for() {
	local runs
	# shellcheck disable=SC2086 # split on any white space, joined by one
	runs=" $(echo ${IOMMU_RUNS:-}) "
	if [ "$DMA_IOMMU" = 1 ] || [[ "$runs" = *" $1 "* ]]; then echo 1; else echo 0; fi
}
# dma_mode_want NAME: the mode that run's guest must prove (iommu or swiotlb).
dma_mode_want() { if [ "$(iommu_for "$1")" = 1 ]; then echo iommu; else echo swiotlb; fi; }
# dma_mode_of RUN: the modes RUN's guest proved (tests/vm/guest/lib.sh,
# dma_mode_start: one per RDMA device), each named once.
dma_mode_of() { sed -n 's/^dma_mode=//p' "$1/summary" 2>/dev/null | sort -u | paste -sd ' '; }
# dma_mode_check RUN NAME: whether the guest of RUN, the run called NAME,
# proved the one mode it had to run in. Prints that mode; or, with status
# 1, what it proved instead, as "ran DMA-mapped ..., not MODE", for the
# caller's verdict.
dma_mode_check() {
	local want got
	want=$(dma_mode_want "$2") got=$(dma_mode_of "$1")
	if [ "$got" = "$want" ]; then
		echo "$want"
	else
		echo "ran DMA-mapped ${got:-in no mode it proved}, not $want"
		return 1
	fi
}
