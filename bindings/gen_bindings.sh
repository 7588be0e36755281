#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# gen_bindings.sh BINDGEN OUT HEADER KERNEL_RUST_DIR ALLOWLIST KERNEL_BINDINGS \
#                 CC_IS SRCARCH -- CFLAGS...
#
# Run bindgen on HEADER with the kernel's own parameters
# (KERNEL_RUST_DIR/bindgen_parameters, minus cfi_encoding, allowed only
# inside rust/) and our allowlist. Types that kernel::bindings already
# defines are not generated again: a first pass finds which types the
# allowlist pulls in, the second blocklists those the kernel crate has, so
# the crate uses kernel::bindings::list_head and friends, not copies.
#
# CFLAGS are the C flags of this build. For a kernel built with GCC
# (CC_IS=gcc) they are filtered the way the kernel's own rust/Makefile
# filters them before they reach libclang: the list of flags it skips and
# the clang target are read from KERNEL_RUST_DIR/Makefile, so a kernel
# that changes them is followed.

set -eu
# The parameter lists hold regexes such as .*: no globbing.
set -f
BINDGEN=$1 OUT=$2 HEADER=$3 KRUST=$4 ALLOW=$5 KBIND=$6 CC_IS=$7 SRCARCH=$8
shift 8
[ "$1" = "--" ] && shift

die() { echo "gen_bindings.sh: $*" >&2; exit 1; }

params=$(grep -Ev '^#|^$|cfi_encoding' "$KRUST/bindgen_parameters")
allow=$(grep -Ev '^#|^$' "$ALLOW")
common="--rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi
	--no-layout-tests --no-debug .* --enable-function-attribute-detection"

cflags=
if [ "$CC_IS" = gcc ]; then
	# The value of `bindgen_skip_c_flags := ...` with its continuation lines.
	skip=$(sed -n '/^bindgen_skip_c_flags[[:space:]]*:=/,/[^\\]$/p' "$KRUST/Makefile" |
		sed -e 's/^bindgen_skip_c_flags[[:space:]]*:=//' -e 's/\\$//' | tr '\n\t' '  ')
	target=$(sed -n "s/^BINDGEN_TARGET_$SRCARCH[[:space:]]*:=[[:space:]]*//p" \
		"$KRUST/Makefile" | head -n 1)
	[ -n "$skip" ] || die "no bindgen_skip_c_flags in $KRUST/Makefile"
	[ -n "$target" ] || die "no BINDGEN_TARGET_$SRCARCH in $KRUST/Makefile"
	for f in "$@"; do
		keep=1
		for pat in $skip; do
			# make's filter-out patterns: % matches any run of characters.
			# shellcheck disable=SC2254 # the pattern is meant to match
			case $f in $(printf '%s' "$pat" | sed 's/%/*/g')) keep=0; break ;; esac
		done
		[ $keep = 1 ] && cflags="$cflags $f"
	done
	# As rust/Makefile: GCC warnings libclang does not know stay quiet.
	cflags="$cflags -w --target=$target"
else
	cflags="$*"
fi

# Type names an output defines, however it is formatted: bindgen writes one
# long line when rustfmt is not installed (as with Debian's rustc). Also the
# aliases bindgen writes as re-exports ("pub use self::netdev_tx as
# netdev_tx_t"). Never the names of anonymous enums (_bindgen_ty_N): they
# are numbered per run, so the same name in two runs is not the same type,
# and blocklisting ours would drop its constants (XPT_* once the kernel
# crate's bindings had grown past our enum's number).
names() {
	{
		grep -oE '\bpub (struct|union|type|enum) [A-Za-z0-9_]+' "$1" | sed 's/.* //'
		grep -oE '\bpub use self::[A-Za-z0-9_]+ as [A-Za-z0-9_]+' "$1" | sed 's/.* //'
	} | grep -vE '^_bindgen_ty_[0-9]+$' | sort -u
}

# shellcheck disable=SC2086 # word splitting of the parameter lists is wanted
$BINDGEN "$HEADER" $params $allow $common -o "$OUT.pass1" -- $cflags
names "$KBIND" >"$OUT.kernel"
[ -s "$OUT.kernel" ] || die "no type names found in $KBIND"
names "$OUT.pass1" | comm -12 - "$OUT.kernel" >"$OUT.shared"
block=$(paste -sd'|' "$OUT.shared")
# shellcheck disable=SC2086
$BINDGEN "$HEADER" $params $allow ${block:+--blocklist-type "^($block)\$"} $common \
	-o "$OUT" -- $cflags
rm -f "$OUT.pass1" "$OUT.kernel" "$OUT.shared"
