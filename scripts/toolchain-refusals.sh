#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# toolchain-refusals.sh KDIR: the build must refuse, saying what to do,
# rather than build a module the kernel will not load. Runs in the Debian
# build environment (scripts/debian-check.sh) against copies of the real
# headers' KDIR, each changed in one way, and checks that
# scripts/build-module.sh stops with the expected message and leaves no
# rpcrdma.ko. The exports case needs the kernel's regenerated tree cached
# (a real build first). Prints PASS:/FAIL: lines.

. "$(dirname "$0")/lib.sh"

HDR=$(readlink -f "${1:?usage: toolchain-refusals.sh KDIR}")
KREL=$(cat "$HDR/include/config/kernel.release")
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
FAILS=0

# fake NAME: a KDIR like the headers (its .config, Module.symvers, release)
fake() {
	local d=$W/$1
	mkdir -p "$d/include/config"
	cp "$HDR/.config" "$d/.config"
	cp "$HDR/Module.symvers" "$d/Module.symvers"
	echo "$KREL" >"$d/include/config/kernel.release"
	echo "$d"
}

# refuses WHAT KDIR PATTERN [VAR=VALUE...]: the build stops, its message
# matches PATTERN, and no module was produced.
refuses() {
	local what=$1 kdir=$2 pattern=$3 rc=0 out
	shift 3
	rm -f "$TOP/build/rust/rpcrdma.ko"
	out=$(env "$@" KDIR="$kdir" bash "$TOP/scripts/build-module.sh" rust 2>&1) || rc=$?
	if [ "$rc" != 0 ] && grep -qE "$pattern" <<<"$out" && [ ! -f "$TOP/build/rust/rpcrdma.ko" ]; then
		echo "PASS: refuses $what: $(grep -E "$pattern" <<<"$out" | head -n 1 | sed 's/^!!! //' | cut -c1-150)"
	else
		echo "FAIL: $what: exit $rc, expected a message matching '$pattern':"
		tail -n 5 <<<"$out" | sed 's/^/    /'
		FAILS=$((FAILS + 1))
	fi
}

d=$(fake rustc)
sed -i 's/^CONFIG_RUSTC_VERSION_TEXT=.*/CONFIG_RUSTC_VERSION_TEXT="rustc 1.99.0 (000000000 2099-01-01)"/' "$d/.config"
refuses "a rustc other than the kernel's" "$d" "kernel built with 'rustc 1.99.0.*but rustc here is"

d=$(fake bindgen)
sed -i 's/^CONFIG_BINDGEN_VERSION_TEXT=.*/CONFIG_BINDGEN_VERSION_TEXT="bindgen 0.1.0"/' "$d/.config"
refuses "a bindgen other than the kernel's" "$d" "kernel built with 'bindgen 0.1.0'.*install that bindgen"

d=$(fake norust)
sed -i 's/^CONFIG_RUST=y/# CONFIG_RUST is not set/' "$d/.config"
refuses "a kernel without CONFIG_RUST" "$d" "built without CONFIG_RUST"

d=$(fake builtin)
sed -i 's/^CONFIG_SUNRPC_XPRT_RDMA=m/CONFIG_SUNRPC_XPRT_RDMA=y/' "$d/.config"
refuses "a kernel with rpcrdma built in" "$d" "rpcrdma must be a module"

d=$(fake nosource)
echo "7.99.0-fake" >"$d/include/config/kernel.release"
refuses "a kernel whose source package is not installed" "$d" "no kernel source for 7\.99\.0-fake: install linux-source-7\.99"

d=$(fake othersource)
mkdir -p "$W/src-7.3.99"
printf 'VERSION = 7\nPATCHLEVEL = 3\nSUBLEVEL = 99\nkernelversion:\n\t@echo $(VERSION).$(PATCHLEVEL).$(SUBLEVEL)\n' >"$W/src-7.3.99/Makefile"
refuses "a kernel source of another version" "$d" "is kernel 7\.3\.99, the headers are " \
	RPCRDMA_KERNEL_SOURCE="$W/src-7.3.99" RPCRDMA_KERNELS="$W/kernels"

d=$(fake space)
refuses "a cache file system without room for the kernel tree" "$d" \
	"regenerating its Rust metadata needs about 99999999 MB in .* MB free" \
	RPCRDMA_KERNELS="$W/kernels" RPCRDMA_KERNEL_TREE_MB=99999999

d=$(fake exports)
# One Rust export of the kernel renamed: as if built by another rustc.
awk 'BEGIN { FS = OFS = "\t" } !done && $2 ~ /^_R/ { $2 = $2 "x"; done = 1 } { print }' \
	"$HDR/Module.symvers" >"$d/Module.symvers"
refuses "regenerated Rust exports that differ from Module.symvers" "$d" "Rust exports regenerated .* differ from"

[ "$FAILS" = 0 ]
