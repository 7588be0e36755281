#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit-intree.sh: our KUnit suites the way kernel CI runs them, with the
# kernel's own runner:
#
#   tools/testing/kunit/kunit.py run --arch=x86_64 \
#       --kunitconfig=net/sunrpc/xprtrdma/.kunitconfig --make_options LLVM=-19
#
# in a hard-link copy of the test kernel's source (the cached tree stays
# untouched) grafted with scripts/graft-intree.sh. Its build dir starts as
# a copy of the test kernel's objects with .kunitconfig merged into that
# kernel's config: kunit.py reuses a .config that holds its kunitconfig
# ("a superset is fine"), and as both trees name their source ".." (lib.sh
# kernel_build) make rebuilds only what the merged options change (sunrpc,
# the RDMA core and rpcrdma built in, with our suites), not a whole kernel.
# Without the seed (KUNIT_SEED=0) kunit.py configures and builds its own
# minimal kernel, as on any other tree: ~9 min cold on 2 cores.
#
# kunit.py asks QEMU for KVM first; where nested KVM is slower than TCG (as
# on our CI machines) a wrapper first in PATH drops "-accel kvm". Set
# KUNIT_KVM=1 to let QEMU use KVM. The build is cached and incremental.
# Behind `make check-intree` and the intree phase of `make check`.

. "$(dirname "$0")/lib.sh"

T=$CACHE/intree
KB=$(bash "$TOP/scripts/build-kernel.sh" | tail -n 1)
SRC=$(kernel_build_src)
KEY=${KB##*/build-}
TREE=$T/linux-$KEY
[ -f "$KB/.build-complete" ] || die "no test kernel build at $KB"
if [ ! -f "$TREE/.copy-complete" ]; then
	say "in-tree: hard-link copy of $SRC"
	rm -rf "$T"/linux-* "$T/build" "$T/build-um"
	mkdir -p "$TREE"
	find "$SRC" -mindepth 1 -maxdepth 1 ! -name 'build-*' -exec cp -al {} "$TREE/" \;
	touch "$TREE/.copy-complete"
fi
bash "$TOP/scripts/graft-intree.sh" "$TREE"

ARCH_K=${KUNIT_ARCH:-x86_64}
BUILD=build
[ "$ARCH_K" = x86_64 ] || BUILD=build-$ARCH_K
[ "${KUNIT_SEED:-1}" = 1 ] || BUILD=build-$ARCH_K-unseeded
KUNITCONFIG=$TREE/net/sunrpc/xprtrdma/.kunitconfig
# What kunit.py adds to the kunitconfig for x86_64 (qemu_configs/x86_64.py).
ARCH_CONFIG="CONFIG_SERIAL_8250=y
CONFIG_SERIAL_8250_CONSOLE=y"
seed="$KB $(sha256sum <"$KUNITCONFIG" | cut -c1-12)"
if [ "$ARCH_K" = x86_64 ] && [ "${KUNIT_SEED:-1}" = 1 ] &&
	[ "$(cat "$TREE/$BUILD/.seeded-from" 2>/dev/null)" != "$seed" ]; then
	say "in-tree: seeding $TREE/$BUILD with the test kernel's objects and config"
	rm -rf "${TREE:?}/$BUILD"
	cp -a "$KB" "$TREE/$BUILD"
	rm -rf "$TREE/$BUILD/.modinst" "$TREE/$BUILD/.build-complete"
	printf '%s\n' "$ARCH_CONFIG" >"$T/arch.config"
	run_logged intree-config-merge "$TREE/scripts/kconfig/merge_config.sh" -m -O "$TREE/$BUILD" \
		"$TREE/$BUILD/.config" "$KUNITCONFIG" "$T/arch.config"
	run_logged intree-config-old make -C "$TREE" O="$BUILD" LLVM="$LLVM_SUFFIX" olddefconfig
	# kunit.py's record of the kunitconfig it last configured for
	# (last_used_kunitconfig in the build dir): the same entries, so that
	# it takes the merged .config as its own instead of starting afresh.
	{ cat "$KUNITCONFIG"; printf '%s\n' "$ARCH_CONFIG"; } >"$TREE/$BUILD/last_used_kunitconfig"
	echo "$seed" >"$TREE/$BUILD/.seeded-from"
fi

WRAP=$(bash "$TOP/scripts/qemu-tcg-path.sh" "$T/qemu-tcg")
[ "${KUNIT_KVM:-0}" = 1 ] || export PATH=$WRAP:$PATH

say "in-tree: kunit.py run"
cd "$TREE"
rc=0
rm -f "$T/kunit.json"
python3 tools/testing/kunit/kunit.py run --arch="$ARCH_K" \
	--kunitconfig=net/sunrpc/xprtrdma/.kunitconfig \
	--build_dir="$BUILD" --make_options "LLVM=$LLVM_SUFFIX" \
	--jobs="$(nproc)" --timeout=900 --json="$T/kunit.json" 2>&1 |
	tee "$LOGS/kunit-intree.log" || rc=$?
# kunit.py's own verdict (its exit status, through pipefail), and our
# suites' cases from its parsed results: every one passed, and some ran.
# The C algorithm's replay needs the C file linked beside ours, which only
# the out-of-tree differential build does (make kunit runs it there).
python3 "$TOP/scripts/kunit_summary.py" "$T/kunit.json" \
	--may-skip lost_wakeup_in_c_reservation \
	--expect rust_kernel_llist --expect rust_kernel_rdma_cq || rc=1
exit $rc
