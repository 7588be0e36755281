#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
#
# gen_bindings.sh BINDGEN OUT HEADER KERNEL_PARAMS ALLOWLIST KERNEL_BINDINGS -- CFLAGS...
#
# Run bindgen on HEADER with the kernel's own parameters (minus cfi_encoding,
# allowed only inside rust/) and our allowlist. Types that kernel::bindings
# already defines are not generated again: a first pass finds which types the
# allowlist pulls in, the second blocklists those the kernel crate has, so
# the crate uses kernel::bindings::list_head and friends, not copies.

set -eu
# The parameter lists hold regexes such as .*: no globbing.
set -f
BINDGEN=$1 OUT=$2 HEADER=$3 KPARAMS=$4 ALLOW=$5 KBIND=$6
shift 6
[ "$1" = "--" ] && shift

params=$(grep -Ev '^#|^$|cfi_encoding' "$KPARAMS")
allow=$(grep -Ev '^#|^$' "$ALLOW")
common="--rust-target 1.85 --use-core --with-derive-default --ctypes-prefix ffi
	--no-layout-tests --no-debug .* --enable-function-attribute-detection"

names() { sed -nE 's/^pub (struct|union|type|enum) ([A-Za-z0-9_]+).*/\2/p' "$1" | sort -u; }

# shellcheck disable=SC2086 # word splitting of the parameter lists is wanted
$BINDGEN "$HEADER" $params $allow $common -o "$OUT.pass1" -- "$@"
names "$KBIND" >"$OUT.kernel"
names "$OUT.pass1" | comm -12 - "$OUT.kernel" >"$OUT.shared"
block=$(paste -sd'|' "$OUT.shared")
# shellcheck disable=SC2086
$BINDGEN "$HEADER" $params $allow ${block:+--blocklist-type "^($block)\$"} $common \
	-o "$OUT" -- "$@"
rm -f "$OUT.pass1" "$OUT.kernel" "$OUT.shared"
