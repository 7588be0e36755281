#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# scripts/shipped-version.sh on a copy of this tree: it passes as
# committed, fails when a shipped file changes under the same version,
# fails after a version bump that was not recorded, passes once recorded,
# and ignores documentation. Prints PASS:/FAIL: lines and "N passed, N failed".

TOP=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
PASSED=0 FAILED=0
pass() { echo "PASS: shipped-version: $*"; PASSED=$((PASSED + 1)); }
fail() { echo "FAIL: shipped-version: $*"; FAILED=$((FAILED + 1)); }
git -C "$TOP" ls-files -co --exclude-standard -z | (cd "$TOP" && xargs -0 tar cf - 2>/dev/null) | tar xf - -C "$T"
git -C "$T" init -q && git -C "$T" add -A >/dev/null
check() { RPCRDMA_CACHE=$T/.cache bash "$T/scripts/shipped-version.sh" check >"$T/out" 2>&1; }
if check; then pass "the tree as it is: $(cat "$T/out")"; else fail "the tree as it is: $(cat "$T/out")"; fi
echo '# changed' >>"$T/Documentation/admin-guide.rst"
echo 'changed' >>"$T/README.md"
if check; then pass "documentation changed: still the same version's files"; else fail "documentation changed: $(cat "$T/out")"; fi
echo '// changed' >>"$T/src/rpcrdma_flavour.c"
if ! check && grep -q 'changed since version .* and the version did not' "$T/out"; then
	pass "a source file changed under the same version: fails, saying to bump it"
else
	fail "a source file changed under the same version: $(cat "$T/out")"
fi
sed -i 's/^PACKAGE_VERSION=".*"/PACKAGE_VERSION="99.0.0"/' "$T/dkms.conf"
sed -i '1s/(\([^)]*\))/(99.0.0-1)/' "$T/debian/changelog"
if ! check && grep -q 'is not the one recorded' "$T/out"; then
	pass "a version bump not recorded: fails, saying to record it"
else
	fail "a version bump not recorded: $(cat "$T/out")"
fi
RPCRDMA_CACHE=$T/.cache bash "$T/scripts/shipped-version.sh" record >/dev/null 2>&1
if check; then pass "recorded: passes"; else fail "recorded: $(cat "$T/out")"; fi
echo "$PASSED passed, $FAILED failed"
[ "$FAILED" = 0 ]
