#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/module-patches.sh on copies of the pristine kernel source's
# net/sunrpc/xprtrdma (scripts/setup.sh extracts it), staged as
# scripts/build-module.sh stages them: the fixes are applied where the
# source lacks them, skipped where it has them (as once upstream merges
# them), the build stops where one does not apply, and a test build can
# leave one out. Prints PASS:/FAIL: lines and "N passed, N failed".

. "$(dirname "$0")/../../scripts/lib.sh"

PRISTINE=$(kernel_src)/net/sunrpc/xprtrdma
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0
pass() { echo "PASS: module-patches: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: module-patches: $*"; FAILED=$((FAILED + 1)); }
[ -f "$PRISTINE/svc_rdma_recvfrom.c" ] || { fail "no kernel source at $PRISTINE (run scripts/setup.sh)"; echo "0 passed, 1 failed"; exit 1; }

FIX=$(module_patches | head -n 1)
NAME=$(basename "$FIX" .patch)
FILE=svc_rdma_recvfrom.c
# The line the fix adds (read from the patch, not restated here).
ADDED=$(sed -n 's/^+\t\(svc_rdma_cc_release(.*\)$/\1/p' "$FIX" | head -n 1)
[ -n "$ADDED" ] || fail "cannot find the line $NAME adds"

# source NAME: a copy of the pristine xprtrdma as T/NAME/src.
source_copy() { mkdir -p "$T/$1" && cp -r "$PRISTINE" "$T/$1/src"; }
# stage NAME: a build dir linking T/NAME/src's files, as build-module.sh makes it.
stage() {
	mkdir -p "$T/$1/stage"
	find "$T/$1/stage" -type l -delete
	local f
	for f in "$T/$1/src"/*.c "$T/$1/src"/*.h; do [ -e "$T/$1/stage/${f##*/}" ] || ln -s "$f" "$T/$1/stage/"; done
}
apply() { # NAME [ENV...]: the status of module-patches.sh apply; its output in T/NAME/out
	local n=$1
	shift
	stage "$n"
	env "$@" bash "$TOP/scripts/module-patches.sh" apply "$T/$n/src" "$T/$n/stage" >"$T/$n/out" 2>&1
}
# The line is also in svc_rdma_recv_ctxt_put(): a copy with the fix has it once more.
has_fix() { [ "$(grep -cF "$ADDED" "$1")" -gt "$(grep -cF "$ADDED" "$PRISTINE/$FILE")" ]; }
field() { grep -F "\"$NAME: " "$T/$1/stage/rpcrdma_fixes.h" 2>/dev/null; }

# 1. A source without the fix (Debian's 7.3.4 today): applied to a copy.
source_copy plain
if apply plain && [ -f "$T/plain/stage/$FILE" ] && [ ! -L "$T/plain/stage/$FILE" ] &&
	has_fix "$T/plain/stage/$FILE" && ! has_fix "$T/plain/src/$FILE" &&
	[ -L "$T/plain/stage/svc_rdma_rw.c" ] && field plain | grep -q ': applied;'; then
	pass "a source without $NAME: applied to the build's copy of $FILE, the source untouched; modinfo field: $(field plain | sed 's/^MODULE_INFO(fixes, //; s/);$//')"
else
	fail "a source without the fix: $(tail -n 3 "$T/plain/out")"
fi
# 2. Again on the same build dir: nothing rewritten (the build stays up to date).
touch -d '2000-01-01' "$T/plain/stage/$FILE" "$T/plain/stage/rpcrdma_fixes.h" 2>/dev/null || true
before=$(stat -c %Y "$T/plain/stage/$FILE" "$T/plain/stage/rpcrdma_fixes.h" 2>/dev/null | paste -sd' ')
if apply plain && [ "$(stat -c %Y "$T/plain/stage/$FILE" "$T/plain/stage/rpcrdma_fixes.h" | paste -sd' ')" = "$before" ] &&
	has_fix "$T/plain/stage/$FILE"; then
	pass "applied again to the same build dir: $FILE and rpcrdma_fixes.h not rewritten"
else
	fail "applied again: the staged files were rewritten or lost the fix ($(tail -n 2 "$T/plain/out"))"
fi
# 3. A source that has the fix (as once upstream merges it): skipped, said.
source_copy merged
patch -d "$T/merged/src" -p4 -s <"$FIX"
if apply merged && grep -q "module fix $NAME: in the kernel source already, skipped" "$T/merged/out" &&
	cmp -s "$T/merged/stage/$FILE" "$T/merged/src/$FILE" && field merged | grep -q 'in the kernel source already'; then
	pass "a source that has $NAME: skipped, saying '$(grep -m1 "module fix" "$T/merged/out" | sed 's/^==> //; s/;.*//')'"
else
	fail "a source that has the fix: $(tail -n 3 "$T/merged/out")"
fi
# 4. A source whose code changed where the fix goes: the build stops.
source_copy changed
sed -i 's/^\tunsigned int i;$/\tunsigned int i, n;/' "$T/changed/src/$FILE"
grep -q 'unsigned int i, n;' "$T/changed/src/$FILE" || fail "the conflicting change was not made"
if ! apply changed && grep -q "module fix $NAME does not apply" "$T/changed/out" && [ -L "$T/changed/stage/$FILE" ]; then
	pass "a source where $NAME does not apply: the build stops, saying '$(grep -m1 -o 'module fix .* does not apply[^:]*' "$T/changed/out")'"
else
	fail "a conflicting source: exit 0, or no clear message, or a staged copy ($(tail -n 3 "$T/changed/out"))"
fi
# 5. A test build without the fix, on a source that has it: reversed.
if apply merged RPCRDMA_OMIT_FIXES="$(basename "$FIX")" && ! has_fix "$T/merged/stage/$FILE" &&
	cmp -s "$T/merged/stage/$FILE" "$PRISTINE/$FILE" && field merged | grep -q 'omitted (test build'; then
	pass "RPCRDMA_OMIT_FIXES on a source that has $NAME: the build's copy is the source without it"
else
	fail "RPCRDMA_OMIT_FIXES on a source with the fix: $(tail -n 3 "$T/merged/out")"
fi
# 6. ...and back: the next normal build takes the fix up again.
if apply merged && has_fix "$T/merged/stage/$FILE"; then
	pass "the next normal build of that dir has $NAME again"
else
	fail "after an omitting build, the fix did not come back ($(tail -n 3 "$T/merged/out"))"
fi
# 7. status changes nothing.
if bash "$TOP/scripts/module-patches.sh" status "$T/changed/src" >"$T/status.out" 2>&1 &&
	grep -q "module fix $NAME: DOES NOT APPLY" "$T/status.out" && [ ! -e "$T/changed/src/$FILE.orig" ]; then
	pass "status reports a fix that does not apply, and changes nothing"
else
	fail "status: $(cat "$T/status.out")"
fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
