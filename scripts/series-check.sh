#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# series-check.sh: builds the series scripts/series.sh made, patch by
# patch, in its kernel tree, and runs the abstractions' KUnit suites there
# with the kernel's kunit.py (Documentation/intree.rst):
#
#   - every patch: an incremental build (make, the test kernel's config
#     with the series' KUnit options on) must succeed with no new warning
#     from the files the patch touches;
#   - the last: kunit.py run, rust_kernel_llist and rust_kernel_rdma_cq
#     must pass.
#
# The build directory (build-series/ in the tree, kept across series.sh
# runs) starts as a copy of the test kernel's objects, as the intree phase
# does, so that a patch rebuilds what it changes, not a kernel. The test
# kernel is built from the source with scripts/kernel-patches/ applied; the
# files those patches change are touched after the copy, so that they are
# rebuilt from the series' own (pristine) source.
#
#   - then rpcrdma.ko, built out of tree against the patched kernel, must
#     use the kernel crate's abstractions instead of its own copy.
#
# Not yet checked: the Rust Kconfig choice on and off (the driver is not in
# the series yet), clippy of the kernel crate (CLIPPY=1).

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

KUNITCONFIG=$CACHE/series/series.kunitconfig
cat >"$KUNITCONFIG" <<'EOF'
CONFIG_KUNIT=y
CONFIG_RUST=y
CONFIG_RUST_KUNIT_TESTS=y
CONFIG_RUST_LLIST_KUNIT_TEST=y
CONFIG_RUST_RDMA_KUNIT_TEST=y
CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y
EOF

seed="$KB $(sha256sum <"$KUNITCONFIG" | cut -c1-12)"
if [ "$(cat "$TREE/$BUILD/.seeded-from" 2>/dev/null)" != "$seed" ]; then
	say "series-check: seeding $TREE/$BUILD with the test kernel's objects"
	rm -rf "${TREE:?}/$BUILD"
	cp -a "$KB" "$TREE/$BUILD"
	rm -rf "$TREE/$BUILD/.modinst" "$TREE/$BUILD/.build-complete"
	echo "$seed" >"$TREE/$BUILD/.seeded-from"
fi

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
	run_logged series-config-merge "$TREE/scripts/kconfig/merge_config.sh" -m -O "$TREE/$BUILD" \
		"$TREE/$BUILD/.config" "$KUNITCONFIG" &&
		run_logged series-config-old make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig
}

rc=0
base="v$kver"
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
		grep -E "error" "$log" | head -n 15 | sed 's/^/    /'
		bad "series: '$subject' does not build ($log)"
		rc=1
		break
	fi
done

if [ $rc = 0 ]; then
	WRAP=$(bash "$TOP/scripts/qemu-tcg-path.sh" "$CACHE/series/qemu-tcg")
	export PATH=$WRAP:$PATH
	cp "$KUNITCONFIG" "$TREE/$BUILD/last_used_kunitconfig"
	say "series-check: kunit.py run in $TREE"
	rm -f "$CACHE/series/kunit.json"
	(cd "$TREE" && python3 tools/testing/kunit/kunit.py run --arch=x86_64 \
		--kunitconfig="$KUNITCONFIG" --build_dir="$BUILD" \
		--make_options "LLVM=$LLVM_SUFFIX" --jobs="$(nproc)" --timeout=900 \
		--json="$CACHE/series/kunit.json" 'rust_kernel_*') >"$LOGS/series-kunit.log" 2>&1 || rc=1
	if python3 "$TOP/scripts/kunit_summary.py" "$CACHE/series/kunit.json" \
		--suites 'rust_kernel_llist|rust_kernel_rdma_cq' \
		--expect rust_kernel_llist --expect rust_kernel_rdma_cq; then
		ok "series: kunit.py in the patched tree: rust_kernel_llist and rust_kernel_rdma_cq pass"
	else
		bad "series: kunit.py in the patched tree ($LOGS/series-kunit.log)"
		rc=1
	fi
fi
g checkout -q -f series

# One set of files, two forms: the module built out of tree against the
# patched kernel must take the kernel crate's abstractions (Kbuild's
# rpcrdma_kernel_abstractions), with no copy of its own and the kernel's
# helpers.
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
echo "$PASSED passed, $FAILED failed"
exit $rc
