#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# kernel-toolchain.sh KDIR: the toolchain a module for the kernel at KDIR
# must be built with, taken from the kernel's own .config, as shell
# assignments for eval:
#   TOOLCHAIN_MAKEVARS=(...)  make variables: LLVM=-19 for a clang-built
#                             kernel, CC=<the kernel's gcc> for a GCC-built
#                             one, and RUSTC=, BINDGEN=
#   RUSTC_VERSION_TEXT=...  BINDGEN_VERSION_TEXT=...
# Exits non-zero, saying what to install, when a tool is missing or is
# another version than the kernel's. rustc must match to the letter: v0
# symbol names carry a hash of rustc's full version string, so a module
# built by another rustc imports kernel symbols that do not exist.
# RUSTC= and BINDGEN= in the environment name candidates to try first.

. "$(dirname "$0")/lib.sh"

KDIR=${1:?usage: kernel-toolchain.sh KDIR}
cfg() { sed -n "s/^$1=//p" "$KDIR/.config" | sed 's/^"\(.*\)"$/\1/'; }
[ -f "$KDIR/.config" ] || die "$KDIR has no .config"
vars=()

# C compiler and linker: the family and major version the kernel records.
if [ "$(cfg CONFIG_CC_IS_CLANG)" = y ]; then
	major=$(($(cfg CONFIG_CLANG_VERSION) / 10000))
	if command -v "clang-$major" >/dev/null && command -v "ld.lld-$major" >/dev/null; then
		vars+=("LLVM=-$major")
	elif clang --version 2>/dev/null | grep -qE "clang version $major\."; then
		vars+=("LLVM=1")
	else
		die "kernel built with clang $major ($(cfg CONFIG_CC_VERSION_TEXT)): install clang-$major lld-$major llvm-$major"
	fi
elif [ "$(cfg CONFIG_CC_IS_GCC)" = y ]; then
	gv=$(cfg CONFIG_GCC_VERSION)
	major=$((gv / 10000)) minor=$((gv / 100 % 100))
	# CONFIG_CC_VERSION_TEXT starts with the command, e.g. x86_64-linux-gnu-gcc-14.
	cc=$(cfg CONFIG_CC_VERSION_TEXT | cut -d' ' -f1)
	for c in "$cc" "gcc-$major" gcc; do
		command -v "$c" >/dev/null || continue
		v=$("$c" -dumpfullversion 2>/dev/null || true)
		[ "${v%%.*}" = "$major" ] && { cc=$c; break; }
		cc=
	done
	[ -n "$cc" ] || die "kernel built with $(cfg CONFIG_CC_VERSION_TEXT): install gcc-$major"
	v=$("$cc" -dumpfullversion)
	[ "$(cut -d. -f2 <<<"$v")" = "$minor" ] ||
		warn "kernel built with gcc $major.$minor, using $cc $v"
	vars+=("CC=$cc")
	[ -z "${LLVM:-}" ] || warn "LLVM=$LLVM ignored: the kernel is built with GCC"
else
	die "$KDIR/.config names no compiler (CONFIG_CC_IS_GCC / CONFIG_CC_IS_CLANG)"
fi

# pick VAR WANT CMD...: the first candidate whose --version prints WANT.
pick() {
	local want=$1 c
	shift
	for c in "$@"; do
		[ -n "$c" ] && command -v "$c" >/dev/null || continue
		[ "$("$c" --version 2>/dev/null | head -n 1)" = "$want" ] && { command -v "$c"; return 0; }
	done
	return 1
}
RUSTC_VERSION_TEXT=$(cfg CONFIG_RUSTC_VERSION_TEXT)
BINDGEN_VERSION_TEXT=$(cfg CONFIG_BINDGEN_VERSION_TEXT)
if [ "$(cfg CONFIG_RUST)" = y ]; then
	rustc=$(pick "$RUSTC_VERSION_TEXT" "${RUSTC:-}" rustc /usr/bin/rustc) ||
		die "kernel built with '$RUSTC_VERSION_TEXT', but rustc here is '$(rustc --version 2>/dev/null || echo missing)'.
    A Rust module must be compiled by the kernel's own rustc (its symbol names
    carry a hash of rustc's version). Debian: apt install rustc rust-src (the
    release the kernel was built with); elsewhere set RUSTC= to that rustc."
	sysroot=$("$rustc" --print sysroot)
	[ -d "$sysroot/lib/rustlib/src/rust/library/core" ] ||
		die "$rustc has no Rust library source: install rust-src (Debian: apt install rust-src; rustup: rustup component add rust-src)"
	bindgen=$(pick "$BINDGEN_VERSION_TEXT" "${BINDGEN:-}" bindgen /usr/bin/bindgen) ||
		die "kernel built with '$BINDGEN_VERSION_TEXT', but bindgen here is '$(bindgen --version 2>/dev/null || echo missing)': install that bindgen (Debian: apt install bindgen libclang-dev)"
	vars+=("RUSTC=$rustc" "BINDGEN=$bindgen")
fi
declare -p RUSTC_VERSION_TEXT BINDGEN_VERSION_TEXT
printf 'TOOLCHAIN_MAKEVARS=(%s)\n' "$(printf '%q ' "${vars[@]}")"
