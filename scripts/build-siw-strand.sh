#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-siw-strand.sh: builds siw.ko of the test kernel with
# scripts/test-modules/siw-strand-sends.patch (module parameter
# strand_sends: a drain leaves the WRs in flight unflushed) out of tree,
# and puts it at build/siw-strand/siw.ko (build-debug/ for
# KERNEL_VARIANT=debug). The kernel stays as it is: only the teardown
# phase loads this siw, in place of the kernel's own, with strand_sends
# set. Its sources are copied from the kernel tree into the cache and
# patched there, never into this repository. Prints the module's path.

. "$(dirname "$0")/lib.sh"

KDIR=$(kernel_build)
[ -f "$KDIR/Module.symvers" ] || die "no built test kernel at $KDIR: run scripts/build-kernel.sh"
SIW=$(kernel_build_src)/drivers/infiniband/sw/siw
[ -f "$SIW/siw_qp.c" ] || die "no siw sources at $SIW"
PATCH=$TOP/scripts/test-modules/siw-strand-sends.patch
# Everything the module is made of: this script, the patch, the siw
# sources and Makefile, and the kernel it is built against.
key=$( { echo "$KDIR"; cat "$0" "$PATCH" "$SIW"/*.[ch] "$SIW/Makefile" "$KDIR/Module.symvers" \
	"$KDIR/include/config/kernel.release" "$KDIR/.config"; } | sha256sum | cut -c1-12)
STAGE=$CACHE/modbuild/siw-strand-$key
OUT=$TOP/$MODULE_OUT/siw-strand
if [ ! -f "$STAGE/siw.ko" ]; then
	rm -rf "$STAGE"
	mkdir -p "$STAGE/drivers/infiniband/sw"
	# Copies, not links: the patch changes them.
	cp -r "$SIW" "$STAGE/drivers/infiniband/sw/siw"
	patch -s -d "$STAGE" -p1 <"$PATCH" || die "siw-strand: $PATCH does not apply to $SIW"
	tc=$(bash "$TOP/scripts/kernel-toolchain.sh" "$KDIR") || exit 1
	eval "$tc"
	say "siw.ko (strand_sends): building against $KDIR" >&2
	run_logged siw-strand env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$KDIR" \
		M="$STAGE/drivers/infiniband/sw/siw" "${TOOLCHAIN_MAKEVARS[@]}" -j"$(nproc)" \
		CONFIG_RDMA_SIW=m modules >&2
	cp "$STAGE/drivers/infiniband/sw/siw/siw.ko" "$STAGE/siw.ko"
fi
mkdir -p "$OUT"
cp "$STAGE/siw.ko" "$OUT/siw.ko"
echo "$OUT/siw.ko"
