#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kunit-intree.sh: our KUnit suites the way kernel CI runs them. A copy of
# the kernel source made of hard links (the cached tree stays pristine) is
# grafted with scripts/graft-intree.sh, and the kernel's own runner builds
# and boots it:
#
#   tools/testing/kunit/kunit.py run --arch=x86_64 \
#       --kunitconfig=net/sunrpc/xprtrdma/.kunitconfig --make_options LLVM=-19
#
# kunit.py asks QEMU for KVM first; where nested KVM is slower than TCG (as
# on our CI machines) a wrapper first in PATH drops "-accel kvm". Set
# KUNIT_KVM=1 to let QEMU use KVM. The build is cached and incremental.
# Behind `make check-intree` and the intree phase of `make check`.

. "$(dirname "$0")/lib.sh"

T=$CACHE/intree
KSRC=$(kernel_src)
TREE=$T/linux-$KVER_PKG
[ -f "$KSRC/Makefile" ] || die "no kernel source: run scripts/setup.sh"
if [ ! -f "$TREE/.copy-complete" ]; then
	say "in-tree: hard-link copy of $KSRC"
	rm -rf "$TREE"
	mkdir -p "$T"
	cp -al "$KSRC" "$TREE"
	touch "$TREE/.copy-complete"
fi
bash "$TOP/scripts/graft-intree.sh" "$TREE"

WRAP=$T/qemu-tcg
mkdir -p "$WRAP"
cat >"$WRAP/qemu-system-x86_64" <<'EOT'
#!/bin/sh
# kunit.py passes "-accel kvm -accel hvf -accel tcg": keep only tcg.
for a in "$@"; do
	shift
	case $accel$a in
	-accel) accel=accel:; continue ;;
	accel:kvm | accel:hvf) accel=; continue ;;
	accel:*) accel=; set -- "$@" -accel "$a"; continue ;;
	esac
	set -- "$@" "$a"
done
exec /usr/bin/qemu-system-x86_64 "$@"
EOT
chmod +x "$WRAP/qemu-system-x86_64"
[ "${KUNIT_KVM:-0}" = 1 ] || export PATH=$WRAP:$PATH

say "in-tree: kunit.py run (builds the kunit kernel: ~10 min cold on 2 cores)"
cd "$TREE"
rc=0
rm -f "$T/kunit.json"
ARCH_K=${KUNIT_ARCH:-x86_64}
BUILD=$T/build
[ "$ARCH_K" = x86_64 ] || BUILD=$T/build-$ARCH_K
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
	--may-skip lost_wakeup_in_c_reservation || rc=1
exit $rc
