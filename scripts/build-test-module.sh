#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-test-module.sh NAME DRIVER MODULE CONFIG PATCH WHAT: a test-only
# module, the test kernel's drivers/infiniband/sw/DRIVER with PATCH, built
# out of tree (CONFIG=m) in the cache and keyed by everything it is made of
# (this script, PATCH, the driver's sources and Makefile, the kernel it is
# built against); copied to build/NAME/MODULE.ko (build-debug/ for
# KERNEL_VARIANT=debug). The kernel stays as it is, and the sources are
# copied into the cache and patched there, never into this repository.
# WHAT names the module in the progress line. Prints the module's path.
# (build-siw-strand.sh and build-rxe-dma-pci.sh name their modules' own.)

. "$(dirname "$0")/lib.sh"

[ $# = 6 ] || die "usage: build-test-module.sh NAME DRIVER MODULE CONFIG PATCH WHAT"
name=$1 driver=$2 ko=$3.ko config=$4 patch=$5 what=$6
KDIR=$(kernel_build)
[ -f "$KDIR/Module.symvers" ] || die "no built test kernel at $KDIR: run scripts/build-kernel.sh"
SRC=$(kernel_build_src)/drivers/infiniband/sw/$driver
[ -f "$SRC/Makefile" ] || die "no $driver sources at $SRC"
key=$( { echo "$KDIR $name $config"; cat "$0" "$patch" "$SRC"/*.[ch] "$SRC/Makefile" "$KDIR/Module.symvers" \
	"$KDIR/include/config/kernel.release" "$KDIR/.config"; } | sha256sum | cut -c1-12)
STAGE=$CACHE/modbuild/$name-$key
OUT=$TOP/$MODULE_OUT/$name
if [ ! -f "$STAGE/$ko" ]; then
	rm -rf "$STAGE"
	mkdir -p "$STAGE/drivers/infiniband/sw"
	# Copies, not links: the patch changes them.
	cp -r "$SRC" "$STAGE/drivers/infiniband/sw/$driver"
	patch -s -d "$STAGE" -p1 <"$patch" || die "$name: $patch does not apply to $SRC"
	tc=$(bash "$TOP/scripts/kernel-toolchain.sh" "$KDIR") || exit 1
	eval "$tc"
	say "$what: building against $KDIR" >&2
	run_logged "$name" env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$KDIR" \
		M="$STAGE/drivers/infiniband/sw/$driver" "${TOOLCHAIN_MAKEVARS[@]}" -j"$(nproc)" \
		"$config=m" modules >&2
	cp "$STAGE/drivers/infiniband/sw/$driver/$ko" "$STAGE/$ko"
fi
mkdir -p "$OUT"
cp "$STAGE/$ko" "$OUT/$ko"
echo "$OUT/$ko"
