#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# module-patches.sh apply XPRT STAGE
# module-patches.sh status XPRT
#
# The fixes that every rpcrdma.ko we build carries in the kernel's own
# net/sunrpc/xprtrdma C (scripts/module-patches/series), applied to a
# build's private copy of the files they change:
#
#   apply   XPRT is the kernel source's net/sunrpc/xprtrdma, STAGE the
#           module's build dir, which links XPRT's files. Each file a fix
#           changes becomes a real file in STAGE, XPRT's plus the fixes
#           (rewritten only when its content changes, so that an unchanged
#           build stays up to date); a file no longer changed by any fix
#           becomes a link again. Writes STAGE/rpcrdma_fixes.h, which names
#           each fix and what became of it in modinfo's "fixes" field.
#   status  prints, for each fix, whether XPRT already has it, would take
#           it, or conflicts with it; changes nothing.
#
# For each fix, in the series' order, on XPRT's files plus the fixes before
# it:
#   - the kernel source already has it (it reverses cleanly): skipped, with
#     a line saying so (upstream or the distribution merged it);
#   - it applies cleanly (no fuzz; offsets are fine): applied;
#   - otherwise the build stops: a module without the fix is not built.
# RPCRDMA_OMIT_FIXES="FILE..." (test builds only: Documentation/testing.rst)
# builds without the named fixes, reversing them where the source has
# them, to show what they fix; modinfo then says "omitted (test build)".

. "$(dirname "$0")/lib.sh"

MODE=${1:?usage: module-patches.sh apply XPRT STAGE | status XPRT}
XPRT=${2:?usage: module-patches.sh apply XPRT STAGE | status XPRT}
STAGE=${3:-}
case $MODE in
apply) [ -n "$STAGE" ] && [ -d "$STAGE" ] || die "module-patches.sh apply: no build dir '$STAGE'" ;;
status) ;;
*) die "usage: module-patches.sh apply XPRT STAGE | status XPRT" ;;
esac
[ -f "$XPRT/svc_rdma_sendto.c" ] || die "$XPRT is not a kernel's net/sunrpc/xprtrdma"
DIR=$TOP/scripts/module-patches
SERIES=$DIR/series
REL=net/sunrpc/xprtrdma

# The fixes: FILE and STATUS per line of the series.
FIXES=() STATUS=()
while IFS= read -r line; do
	line=${line%%#*}
	read -r file status <<<"$line" || true
	[ -n "$file" ] || continue
	[ -f "$DIR/$file" ] || die "$SERIES names $file, which is not in $DIR"
	case $status in *'"'* | *'\'*) die "$SERIES: the status of $file has a quote or backslash" ;; esac
	FIXES+=("$file") STATUS+=("${status:-upstream status not stated}")
done <"$SERIES"

# The files the fixes change, all in net/sunrpc/xprtrdma.
FILES=()
for f in "${FIXES[@]}"; do
	while read -r path; do
		case $path in
		"$REL"/*) [[ " ${FILES[*]} " == *" ${path#"$REL"/} "* ]] || FILES+=("${path#"$REL"/}") ;;
		*) die "module fix $f changes $path, outside $REL: the module does not build it (a fix to the rest of the kernel belongs in scripts/kernel-patches/)" ;;
		esac
	done < <(sed -n 's|^+++ b/\([^[:space:]]*\).*|\1|p' "$DIR/$f")
done

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/$REL"
for f in "${FILES[@]}"; do
	[ -f "$XPRT/$f" ] || die "the module fixes change $f, which $XPRT does not have"
	cp "$XPRT/$f" "$WORK/$REL/$f"
done

kver=$(cat "$XPRT/../../../include/config/kernel.release" 2>/dev/null ||
	make -s -C "$XPRT/../../.." kernelversion 2>/dev/null || echo "unknown version")
omitted() { [[ " ${RPCRDMA_OMIT_FIXES:-} " == *" $1 "* ]]; }
# p ARGS...: patch on the work copy, strict: no fuzz, no questions.
p() { patch -d "$WORK" -p1 -f -s --fuzz=0 --no-backup-if-mismatch -r - "$@" >/dev/null 2>&1; }
OUTCOME=()
for i in "${!FIXES[@]}"; do
	f=${FIXES[$i]}
	if p -R --dry-run <"$DIR/$f"; then
		if omitted "$f"; then
			p -R <"$DIR/$f" || die "module fix $f: reversing it failed after a clean dry run"
			OUTCOME+=("omitted (test build: reversed from the kernel source)")
		else
			OUTCOME+=("in the kernel source already, skipped")
		fi
	elif p --dry-run <"$DIR/$f"; then
		if omitted "$f"; then
			OUTCOME+=("omitted (test build: not applied)")
		else
			[ "$MODE" = status ] || p <"$DIR/$f" || die "module fix $f: applying it failed after a clean dry run"
			OUTCOME+=("applied")
		fi
	else
		[ "$MODE" = status ] && { OUTCOME+=("DOES NOT APPLY"); continue; }
		patch -d "$WORK" -p1 -f --fuzz=0 --dry-run --no-backup-if-mismatch -r - <"$DIR/$f" 2>&1 | sed 's/^/    /' >&2 || true
		die "module fix ${f%.patch} does not apply to the xprtrdma sources of kernel $kver ($XPRT): the build stops rather than make a module without it. The kernel changed the code it fixes; the fix must be rebased (scripts/module-patches/), or dropped if the kernel fixed it another way."
	fi
done

for i in "${!FIXES[@]}"; do
	say "module fix ${FIXES[$i]%.patch}: ${OUTCOME[$i]}; ${STATUS[$i]}" >&2
done
[ "$MODE" = status ] && exit 0

# Into the build dir: a real file where its content is new, a link to the
# kernel's file where no fix changes it any more.
for f in "${FILES[@]}"; do
	if [ -L "$STAGE/$f" ] || ! cmp -s "$WORK/$REL/$f" "$STAGE/$f"; then
		rm -f "$STAGE/$f"
		cp "$WORK/$REL/$f" "$STAGE/$f"
	fi
done
if [ -f "$STAGE/.module-patches-files" ]; then
	while read -r f; do
		[[ " ${FILES[*]} " == *" $f "* ]] || ln -sfn "$XPRT/$f" "$STAGE/$f"
	done <"$STAGE/.module-patches-files"
fi
printf '%s\n' "${FILES[@]}" >"$STAGE/.module-patches-files"

# modinfo -F fixes: one line per fix.
{
	echo "/* Generated by scripts/module-patches.sh: the fixes this build carries. */"
	for i in "${!FIXES[@]}"; do
		printf 'MODULE_INFO(fixes, "%s: %s; %s");\n' "${FIXES[$i]%.patch}" "${OUTCOME[$i]}" "${STATUS[$i]}"
	done
} >"$WORK/rpcrdma_fixes.h"
cmp -s "$WORK/rpcrdma_fixes.h" "$STAGE/rpcrdma_fixes.h" || cp "$WORK/rpcrdma_fixes.h" "$STAGE/rpcrdma_fixes.h"
