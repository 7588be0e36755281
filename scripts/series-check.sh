#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# series-check.sh [all|am|boot]: builds the series scripts/series.sh made,
# in its kernel tree, and runs the KUnit suites there with the kernel's
# kunit.py (Documentation/intree.rst).
#
# boot (make check's intree phase, after am): the kernel that the phase
# boots for the conformance suite. Branch series-boot is series-am (the
# series as git am applied it) plus one commit of the test kernels' own
# patches (scripts/kernel-patches/: the test drivers' DMA-mapped mode,
# their checks and fixes; scripts/module-patches/: the C fixes every
# rpcrdma.ko carries), which are not part of the series. It is built
# incrementally in build-boot/ (kept, seeded from the test kernel's
# objects) with the test kernel's config and the Send path's choice on
# Rust, rpcrdma a module whose sendto_rs/ replaces svc_rdma_sendto.o. The
# last line of output is the build directory, for scripts/vm-run.sh
# (VM_KERNEL_BUILD).
#
# am (make check's intree phase): git am of the series' patches onto a
# clean v7.3.4 branch, one incremental build (its own build directory,
# kept, seeded from the test kernel's objects) and kunit.py run, the
# checks of the last item below.
#
# all (make series-check):
#
#   - checkpatch --strict on every patch (as in am);
#   - every patch: an incremental build (make, the test kernel's config
#     with the series' KUnit options on, the Send path's Kconfig choice at
#     its default, C) must succeed with no new warning from the files the
#     patch touches;
#   - the last, again with the choice on Rust (rpcrdma a module): it must
#     be linked from sendto_rs/ instead of svc_rdma_sendto.o, with no
#     warning from it; then rpcrdma.ko built out of tree against that
#     kernel must use the kernel crate's abstractions instead of its own
#     copy; then clippy (CLIPPY=1, which rebuilds the kernel crate with
#     clippy first, its command line changed, so the abstractions are
#     linted too) clean on net/sunrpc/xprtrdma/; rustfmtcheck;
#   - kunit.py run with the driver's .kunitconfig added (the RDMA core,
#     sunrpc and rpcrdma built in) and the kernel crate's doctests:
#     rust_kernel_llist, rust_kernel_rdma_cq, the driver's rpcrdma_rs_*
#     suites and the abstractions' doctests must pass.
#
# The build directory (build-series/ in the tree, kept across series.sh
# runs) starts as a copy of the test kernel's objects, as the intree phase
# does, so that a patch rebuilds what it changes, not a kernel. The test
# kernel is built from the source with scripts/kernel-patches/ applied; the
# files those patches change are touched after the copy, so that they are
# rebuilt from the series' own (pristine) source.

. "$(dirname "$0")/lib.sh"

PASSED=0 FAILED=0
ok() { PASSED=$((PASSED + 1)); printf 'PASS: %s\n' "$1"; }
bad() { FAILED=$((FAILED + 1)); printf 'FAIL: %s\n' "$1"; }

KB=$(bash "$TOP/scripts/build-kernel.sh" | tail -n 1)
[ -f "$KB/.build-complete" ] || die "no test kernel build at $KB"
SRC=$(kernel_src)
kver=$(make -s -C "$SRC" kernelversion 2>/dev/null) || die "cannot read the kernel version of $SRC"
TREE=$CACHE/series/linux-$kver
BUILD=build-series
g() { git -C "$TREE" "$@"; }
g rev-parse -q --verify series >/dev/null || die "no series in $TREE: run make series"
MODE=${1:-all}
case $MODE in
all) ;;
am) BUILD=build-am ;;
boot) BUILD=build-boot ;;
*) die "usage: series-check.sh [all|am|boot]" ;;
esac

# seed_build KEY: $BUILD starts as a copy of the test kernel's objects
# unless it was seeded with KEY already; true if it was seeded now.
seed_build() {
	[ "$(cat "$TREE/$BUILD/.seeded-from" 2>/dev/null)" != "$1" ] || return 1
	say "series-check: seeding $TREE/$BUILD with the test kernel's objects"
	rm -rf "${TREE:?}/$BUILD"
	cp -a "$KB" "$TREE/$BUILD"
	rm -rf "$TREE/$BUILD/.modinst" "$TREE/$BUILD/.build-complete"
	echo "$1" >"$TREE/$BUILD/.seeded-from"
}

# boot: the series-am branch and the test kernel's patches, built with the
# test kernel's config and the choice on Rust (see the header).
if [ "$MODE" = boot ]; then
	g rev-parse -q --verify series-am >/dev/null || die "no series-am branch in $TREE: run series-check.sh am"
	# Seeded from the test kernel's objects, which were built from the
	# same patched sources: only what differs from them is rebuilt (a file
	# git checkout writes is newer than its object).
	seed_build "$KB boot" || true
	rm -f "$TREE/$BUILD/.build-complete"
	g checkout -q -f -B series-boot series-am
	for p in $(kernel_patches); do
		patch -d "$TREE" -p1 --no-backup-if-mismatch -s <"$p" >&2 || {
			g checkout -q -f series
			die "series-check: the test kernel patch $p does not apply on series-am"
		}
	done
	g add -A -f -- . ':(exclude)build-*'
	g -c user.name=series-check -c user.email=series-check@localhost commit -q \
		-m "test kernels' own patches (scripts/kernel-patches, scripts/module-patches); not part of the series"
	cp "$KB/.config" "$TREE/$BUILD/.config"
	"$TREE/scripts/config" --file "$TREE/$BUILD/.config" \
		-d SUNRPC_XPRT_RDMA_SENDTO_C -e SUNRPC_XPRT_RDMA_RUST_SENDTO
	log=$LOGS/series-build-boot.log
	x=$TREE/$BUILD/net/sunrpc/xprtrdma
	start=$(date +%s)
	rm -f "$x/rpcrdma.mod"
	say "series-check: building the series' kernel to boot (test config, the Rust choice), log $log"
	if (run_logged series-config-boot make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig) &&
		grep -qx CONFIG_SUNRPC_XPRT_RDMA=m "$TREE/$BUILD/.config" &&
		grep -qx CONFIG_SUNRPC_XPRT_RDMA_RUST_SENDTO=y "$TREE/$BUILD/.config" &&
		make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" -j"$(nproc)" >"$log" 2>&1 &&
		grep -q sendto_rs/svc_rdma_sendto_rs.o "$x/rpcrdma.mod" && ! grep -qw svc_rdma_sendto.o "$x/rpcrdma.mod"; then
		# vm-run.sh installs the modules again for this build.
		rm -rf "$TREE/$BUILD/.modinst"
		touch "$TREE/$BUILD/.build-complete"
		ok "series: the series' kernel with the Rust choice, to boot (git am'd series plus the test kernels' patches), built incrementally ($(($(date +%s) - start)) s)"
	else
		{ grep -E "error" "$log" | head -n 15 | sed 's/^/    /'; } || true
		bad "series: the series' kernel to boot does not build, or rpcrdma.ko does not take sendto_rs/ ($log)"
	fi
	g checkout -q -f series
	echo "series-check: $PASSED passed, $FAILED failed"
	[ "$FAILED" = 0 ] || exit 1
	echo "$TREE/$BUILD"
	exit 0
fi

# The options every patch is built with (the choice at its default; an
# option a patch adds later is dropped by olddefconfig before it), and for
# kunit.py those plus the driver's own .kunitconfig.
OPTIONS=$CACHE/series/series.config
cat >"$OPTIONS" <<'EOF'
CONFIG_KUNIT=y
CONFIG_RUST=y
CONFIG_RUST_KUNIT_TESTS=y
CONFIG_RUST_LLIST_KUNIT_TEST=y
CONFIG_RUST_RDMA_KUNIT_TEST=y
CONFIG_SUNRPC_XPRT_RDMA_SENDTO_C=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
EOF
KUNITCONFIG=$CACHE/series/series.kunitconfig
{
	grep -v SENDTO_C "$OPTIONS"
	echo CONFIG_RUST_KERNEL_DOCTESTS=y
	cat "$TOP/.kunitconfig"
} >"$KUNITCONFIG"

# The build directory's config: the per-patch options for all, the kunit.py
# configuration for am (which then builds only what the series changes).
SEEDCONFIG=$OPTIONS
[ "$MODE" = am ] && SEEDCONFIG=$KUNITCONFIG
seed_build "$KB $(sha256sum <"$SEEDCONFIG" | cut -c1-12)" && SEEDED=1

# What the test kernel's own patches changed: rebuilt from this tree.
touch_patched() {
	local p f
	for p in $(kernel_patches); do
		sed -n 's|^+++ b/||p' "$p"
	done | sort -u | while read -r f; do
		[ -f "$TREE/$f" ] && touch "$TREE/$f"
	done
}

# config: the test kernel's config with the series' KUnit options, made
# again for each patch (an option a later patch adds is unknown before it).
config() {
	(run_logged series-config-merge "$TREE/scripts/kconfig/merge_config.sh" -m -O "$TREE/$BUILD" \
		"$TREE/$BUILD/.config" "$OPTIONS" &&
		run_logged series-config-old make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig)
}

rc=0
base="v$kver"

# checkpatch --strict on every patch: clean but for what is left on purpose,
# the sender's Signed-off-by, and for patches that add files under rust/
# without a MAINTAINERS hunk (the RUST entry's F: rust/ covers them), the
# reminder to check MAINTAINERS.
SERIES_OUT=${SERIES_OUT:-$CACHE/series/out}
mapfile -t patches < <(ls "$SERIES_OUT"/0*.patch 2>/dev/null | grep -v '/0000-' || true)
[ ${#patches[@]} -gt 0 ] || { bad "series: no patches in $SERIES_OUT (make series)"; cp_bad=1; }
for p in "${patches[@]}"; do
	# Debian's python3, which has ply (setup.sh) for checkpatch's spdxcheck.py.
	all=$(cd "$TREE" && PATH=/usr/bin:$PATH perl scripts/checkpatch.pl --strict --terse "$p" 2>&1 || true)
	out=$(grep -E '(ERROR|WARNING|CHECK):' <<<"$all" |
		grep -vE 'ERROR: Missing Signed-off-by|WARNING: added, moved or deleted file\(s\), does MAINTAINERS need updating\?' || true)
	# checkpatch that did not get to its verdict (a "total:" line) is a failure too.
	grep -q '^total: ' <<<"$all" || out=${out:-"checkpatch.pl gave no verdict: $(tail -n 3 <<<"$all")"}
	if [ -n "$out" ]; then
		printf '%s\n' "$out" | head -n 10 | sed 's/^/    /'
		bad "series: checkpatch --strict on ${p##*/}"
		cp_bad=1
	fi
done
[ -n "${cp_bad:-}" ] || ok "series: checkpatch --strict clean on every patch (but the Signed-off-by left to the sender)"
if [ "$MODE" = am ]; then
	# The patches as a maintainer takes them, onto a clean branch.
	g checkout -q -f -B series-am "$base"
	if [ ${#patches[@]} -gt 0 ] &&
		g -c user.name=series-check -c user.email=series-check@localhost \
			am -q --committer-date-is-author-date "${patches[@]}" >"$LOGS/series-am.log" 2>&1; then
		ok "series: git am of ${#patches[@]} patches onto v$kver"
	else
		g am --abort >/dev/null 2>&1 || true
		{ sed 's/^/    /' "$LOGS/series-am.log" 2>/dev/null | head -n 10; } || true
		bad "series: the patches of $SERIES_OUT do not apply with git am onto v$kver"
		rc=1
	fi
	# Later runs find objects built from this tree's own sources.
	[ -z "${SEEDED:-}" ] || touch_patched
else
	# Every run of the loop starts from the test kernel's own config (a run
	# before left the kunit.py configuration here).
	cp "$KB/.config" "$TREE/$BUILD/.config"
	for c in $(g rev-list --reverse "$base..series"); do
		subject=$(g log -1 --format=%s "$c")
		g checkout -q -f "$c"
		touch_patched
		config || { bad "series: configuring for '$subject' failed"; rc=1; break; }
		log=$LOGS/series-build-$(g log -1 --format=%h "$c").log
		start=$(date +%s)
		if make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" -j"$(nproc)" >"$log" 2>&1; then
			# New warnings: those naming a file this patch touches.
			files=$(g diff --name-only "$c^" "$c" | paste -sd'|')
			warns=$(grep -E "warning" "$log" | grep -E "$files" || true)
			if [ -n "$warns" ]; then
				printf '%s\n' "$warns" | head -n 10 | sed 's/^/    /'
				bad "series: '$subject' builds with warnings ($log)"
				rc=1
			else
				ok "series: '$subject' builds incrementally ($(($(date +%s) - start)) s)"
			fi
		else
			{ grep -E "error" "$log" | head -n 15 | sed 's/^/    /'; } || true
			bad "series: '$subject' does not build ($log)"
			rc=1
			break
		fi
	done

	# The driver with the choice on Rust, in the test kernel's config (rpcrdma
	# a module), then clippy on its directory, then rustfmt over the tree.
	if [ $rc = 0 ]; then
		log=$LOGS/series-build-rust-choice.log
		start=$(date +%s)
		x=$TREE/$BUILD/net/sunrpc/xprtrdma
		rm -f "$x/rpcrdma.mod"
		"$TREE/scripts/config" --file "$TREE/$BUILD/.config" \
			-d SUNRPC_XPRT_RDMA_SENDTO_C -e SUNRPC_XPRT_RDMA_RUST_SENDTO \
			-e SUNRPC_XPRT_RDMA_RUST_SENDTO_KUNIT_TEST
		: >"$log"
		if (run_logged series-config-rust make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig) &&
			grep -qx CONFIG_SUNRPC_XPRT_RDMA=m "$TREE/$BUILD/.config" &&
			grep -qx CONFIG_SUNRPC_XPRT_RDMA_RUST_SENDTO=y "$TREE/$BUILD/.config" &&
			make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" -j"$(nproc)" >"$log" 2>&1; then
			warns=$(grep -E "warning" "$log" | grep -E "sendto_rs|xprtrdma/Makefile" || true)
			if [ -n "$warns" ]; then
				printf '%s\n' "$warns" | head -n 10 | sed 's/^/    /'
				bad "series: the Rust choice builds with warnings ($log)"
				rc=1
			elif [ -f "$x/sendto_rs/svc_rdma_sendto_rs.o" ] && grep -q sendto_rs/svc_rdma_sendto_rs.o "$x/rpcrdma.mod" &&
				! grep -qw svc_rdma_sendto.o "$x/rpcrdma.mod"; then
				ok "series: the Rust choice builds rpcrdma.ko from sendto_rs/ ($(($(date +%s) - start)) s)"
			else
				bad "series: the Rust choice did not put sendto_rs/ in place of svc_rdma_sendto.o ($x/rpcrdma.mod)"
				rc=1
			fi
		else
			{ grep -E "error" "$log" | head -n 15 | sed 's/^/    /'; } || true
			bad "series: the Rust choice does not build, or rpcrdma is not a module with it ($log)"
			rc=1
		fi
	fi
	# One set of files, two forms: the module built out of tree against the
	# patched kernel must take the kernel crate's abstractions (Kbuild's
	# rpcrdma_kernel_abstractions), with no copy of its own and the kernel's
	# helpers. Against the kernel of the Rust choice just built (rpcrdma a module;
	# before clippy, which rebuilds the kernel crate but not vmlinux):
	# Kbuild gives the out-of-tree build the C choice whatever the kernel
	# chose, so that RPCRDMA_FLAVOUR alone decides.
	if [ $rc = 0 ]; then
		if KDIR=$TREE/$BUILD bash "$TOP/scripts/build-module.sh" rust rust-series >/dev/null 2>&1; then
			syms=$(nm "$TOP/$MODULE_OUT/rust-series/rpcrdma.ko")
			if grep -qE ' U rust_helper_llist_add$' <<<"$syms" &&
				! grep -qE 'kernel_abstractions|T rust_helper_' <<<"$syms"; then
				ok "series: rpcrdma.ko built against the patched tree uses kernel::llist, kernel::rdma and the kernel's helpers"
			else
				bad "series: rpcrdma.ko built against the patched tree has its own copy of the abstractions"
				rc=1
			fi
		else
			bad "series: rpcrdma.ko does not build against the patched tree ($LOGS/module-rust-series.log)"
			rc=1
		fi
	fi
	if [ $rc = 0 ]; then
		log=$LOGS/series-clippy.log
		if make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" CLIPPY=1 -j"$(nproc)" \
			net/sunrpc/xprtrdma/ >"$log" 2>&1 && ! grep -qE '^(warning|error)' "$log"; then
			ok "series: clippy clean on net/sunrpc/xprtrdma/sendto_rs/"
		else
			{ grep -E -A5 '^(warning|error)' "$log" | head -n 20 | sed 's/^/    /'; } || true
			bad "series: clippy on net/sunrpc/xprtrdma/ ($log)"
			rc=1
		fi
		log=$LOGS/series-rustfmt.log
		if make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" rustfmtcheck >"$log" 2>&1; then
			ok "series: rustfmtcheck clean"
		else
			{ head -n 20 "$log" | sed 's/^/    /'; } || true
			bad "series: rustfmtcheck ($log)"
			rc=1
		fi
	fi


fi
if [ $rc = 0 ]; then
	# kunit.py takes the build's .config as its own when it holds the
	# kunitconfig and last_used_kunitconfig names the same entries.
	(run_logged series-config-kunit "$TREE/scripts/kconfig/merge_config.sh" -m -O "$TREE/$BUILD" \
		"$TREE/$BUILD/.config" "$KUNITCONFIG" &&
		run_logged series-config-kunit-old make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig) ||
		{ bad "series: configuring for kunit.py failed"; rc=1; }
fi
if [ $rc = 0 ]; then
	WRAP=$(bash "$TOP/scripts/qemu-tcg-path.sh" "$CACHE/series/qemu-tcg")
	export PATH=$WRAP:$PATH
	cp "$KUNITCONFIG" "$TREE/$BUILD/last_used_kunitconfig"
	say "series-check: kunit.py run in $TREE"
	rm -f "$CACHE/series/kunit.json"
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py run --arch=x86_64 \
		--kunitconfig="$KUNITCONFIG" --build_dir="$BUILD" \
		--make_options "LLVM=$LLVM_SUFFIX" --jobs="$(nproc)" --timeout=900 \
		--json="$CACHE/series/kunit.json") >"$LOGS/series-kunit.log" 2>&1 || rc=1
	# The C algorithm's replay needs the C file linked beside the Rust one,
	# which only the out-of-tree differential build does.
	if python3 "$TOP/scripts/kunit_summary.py" "$CACHE/series/kunit.json" \
		--suites 'rust_kernel_llist|rust_kernel_rdma_[a-z]+|rpcrdma_rs_.*' \
		--may-skip lost_wakeup_in_c_reservation \
		--expect rust_kernel_llist --expect rust_kernel_rdma_cq --expect rust_kernel_rdma_dma \
		--expect rpcrdma_rs_proto; then
		ok "series: kunit.py in the patched tree: the abstractions' and the driver's suites pass"
	else
		bad "series: kunit.py in the patched tree ($LOGS/series-kunit.log)"
		rc=1
	fi
	# The abstractions' # Examples, run as the kernel crate's doctests
	# (suite rust_doctests_kernel, a case per example: llist.rs has one,
	# rdma/cq.rs two, rdma/dma.rs one).
	if python3 - "$CACHE/series/kunit.json" <<'EOF'; then
import json, re, sys


def cases(group):
    for case in group.get("test_cases", []):
        yield case
    for sub in group.get("sub_groups", []):
        yield from cases(sub)


root = json.load(open(sys.argv[1]))
ours = {"llist": 1, "rdma_cq": 2, "rdma_dma": 1}
seen = {k: 0 for k in ours}
bad = 0
for case in cases(root):
    for k in ours:
        if re.fullmatch(rf"rust_doctest_kernel_(\w+_)?{k}_rs_\d+", case.get("name", "")):
            print(f"    doctest {case['name']}: {case.get('status')}")
            seen[k] += 1
            bad += case.get("status") != "PASS"
sys.exit(1 if bad or any(seen[k] < n for k, n in ours.items()) else 0)
EOF
		ok "series: kunit.py in the patched tree: the abstractions' doctests pass"
	else
		bad "series: the abstractions' doctests in the patched tree ($LOGS/series-kunit.log)"
		rc=1
	fi
fi
g checkout -q -f series

# Not "N passed, N failed": the kunit.py cases' line above is the count
# make check takes.
echo "series-check: $PASSED passed, $FAILED failed"
[ $rc = 0 ] && [ "$FAILED" = 0 ]
