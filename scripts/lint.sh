#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# lint.sh: the style checks behind `make lint`, also run by `make check`.
#   rustfmt --check with the kernel's .rustfmt.toml
#   scripts/checkpatch.pl on our C, headers, Rust, Kbuild and Kconfig
#   scripts/kernel-doc -Wall on the C shim (the exported Rust functions are
#     documented in rustdoc, per the kernel's Rust coding guidelines)
#   the guest's and host's Python scripts compile
#   a CLIPPY=1 build of the rust flavour with not one warning, with the
#     KUnit suites and without them (RPCRDMA_RS_KUNIT=n, as DKMS builds it),
#     and the latter, built with the kernel's Rust overflow checks on, must
#     import no core::panicking symbol: no arithmetic, index or conversion
#     in the shipped code can panic (needs the test kernel, or KDIR=;
#     skipped with LINT_NO_CLIPPY=1)
# Prints PASS:/FAIL: per check; exits non-zero on any failure.

. "$(dirname "$0")/lib.sh"

KSRC=${KSRC:-$(kernel_src)}
[ -f "$KSRC/scripts/checkpatch.pl" ] || die "no kernel source at $KSRC: run scripts/setup.sh"
FAILS=0
pass() { echo "PASS: $*"; }
fail() { echo "FAIL: $*"; FAILS=$((FAILS + 1)); }
cd "$TOP"

if rustfmt --edition 2021 --config-path "$KSRC/.rustfmt.toml" --check \
	src/*.rs src/proto/*.rs src/abstractions/*.rs src/rust/kernel/*.rs src/rust/kernel/*/*.rs >"$LOGS/rustfmt.log" 2>&1; then
	pass "rustfmt --check (kernel .rustfmt.toml)"
else
	head -n 20 "$LOGS/rustfmt.log"
	fail "rustfmt --check ($LOGS/rustfmt.log)"
fi

files=(src/*.c src/*.h src/*.rs src/proto/*.rs src/abstractions/*.rs src/abstractions/send_ctxt/*.rs \
	src/rust/kernel/*.rs src/rust/kernel/*/*.rs src/rust/helpers/*.c Kbuild Kconfig src/Makefile)
if perl "$KSRC/scripts/checkpatch.pl" --no-tree --terse --strict -f "${files[@]}" \
	>"$LOGS/checkpatch.log" 2>&1 && ! grep -qE ': (ERROR|WARNING|CHECK):' "$LOGS/checkpatch.log"; then
	pass "checkpatch.pl --strict: ${#files[@]} files clean"
else
	grep -E ': (ERROR|WARNING|CHECK):' "$LOGS/checkpatch.log" | head -n 20
	fail "checkpatch.pl ($LOGS/checkpatch.log)"
fi

if perl "$KSRC/scripts/kernel-doc" -none -Wall src/*.c src/*.h >"$LOGS/kernel-doc.log" 2>&1 &&
	! grep -qiE 'warning|error' "$LOGS/kernel-doc.log"; then
	pass "kernel-doc -Wall on the C shim"
else
	head -n 20 "$LOGS/kernel-doc.log"
	fail "kernel-doc ($LOGS/kernel-doc.log)"
fi

if python3 -m py_compile tests/vm/guest/*.py tests/host/py/*.py scripts/*.py 2>"$LOGS/pycompile.log"; then
	pass "Python scripts compile"
else
	fail "Python scripts ($LOGS/pycompile.log)"
fi

if [ "${LINT_NO_CLIPPY:-0}" != 1 ]; then
	# clippy_build NAME ARGS WHAT: a CLIPPY=1 build of the rust flavour with
	# MODULE_MAKE_ARGS ARGS, as build/NAME, with no warning.
	clippy_build() {
		local log=$LOGS/module-$1.log
		# Force the crate to be compiled again, or an unchanged tree says nothing.
		rm -f "$CACHE"/modbuild/"$1"-*/src/svc_rdma_sendto_rs.o
		if MODULE_MAKE_ARGS="CLIPPY=1 $2" bash scripts/build-module.sh rust "$1" >/dev/null 2>&1 &&
			! grep -qE '^(warning|error)' "$log"; then
			pass "clippy: $3 builds with CLIPPY=1 and no warning"
		else
			grep -E '^(warning|error)' -A4 "$log" | head -n 30
			fail "clippy: $3: warnings or errors ($log)"
		fi
	}
	clippy_build rust-clippy "" "the rust flavour"
	clippy_build rust-nokunit "RPCRDMA_RS_KUNIT=n" "the rust flavour without its KUnit suites"
	kdir=${KDIR:-$(kernel_build)}
	ko=$TOP/build/rust-nokunit/rpcrdma.ko
	panics=$(nm -u "$ko" 2>/dev/null | grep -c 'panicking' || true)
	suites=$(nm "$ko" 2>/dev/null | grep -c 'kunit_rust_wrapper' || true)
	if ! grep -qx 'CONFIG_RUST_OVERFLOW_CHECKS=y' "$kdir/.config"; then
		fail "no-panic check: $kdir is built without CONFIG_RUST_OVERFLOW_CHECKS"
	elif [ -f "$ko" ] && [ "$panics" = 0 ] && [ "$suites" = 0 ]; then
		pass "no panic path: the shipped build (no KUnit, overflow checks on) imports no core::panicking symbol"
	else
		nm -u "$ko" 2>/dev/null | grep panicking | head -n 5
		fail "no-panic check: $panics core::panicking imports, $suites KUnit wrappers in $ko"
	fi
fi
[ "$FAILS" = 0 ]
