#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# build-rxe-dma-pci.sh: builds rdma_rxe.ko of the test kernel with
# scripts/test-modules/rxe-dma-pci.patch (module parameters dma_pci and
# dma_mask_bits: map through a PCI function of its own, its DMA mask
# narrowed) out of tree, and puts it at build/rxe-dma-pci/rdma_rxe.ko
# (build-debug/ for KERNEL_VARIANT=debug). The kernel stays as it is:
# only scripts/dma-exhaust.sh loads this rdma_rxe, in place of the
# kernel's own. Its sources are copied from the kernel tree into the
# cache and patched there, never into this repository. Prints the
# module's path.

. "$(dirname "$0")/lib.sh"

KDIR=$(kernel_build)
[ -f "$KDIR/Module.symvers" ] || die "no built test kernel at $KDIR: run scripts/build-kernel.sh"
RXE=$(kernel_build_src)/drivers/infiniband/sw/rxe
[ -f "$RXE/rxe_verbs.c" ] || die "no rxe sources at $RXE"
PATCH=$TOP/scripts/test-modules/rxe-dma-pci.patch
# Everything the module is made of: this script, the patch, the rxe
# sources and Makefile, and the kernel it is built against.
key=$( { echo "$KDIR"; cat "$0" "$PATCH" "$RXE"/*.[ch] "$RXE/Makefile" "$KDIR/Module.symvers" \
	"$KDIR/include/config/kernel.release" "$KDIR/.config"; } | sha256sum | cut -c1-12)
STAGE=$CACHE/modbuild/rxe-dma-pci-$key
OUT=$TOP/$MODULE_OUT/rxe-dma-pci
if [ ! -f "$STAGE/rdma_rxe.ko" ]; then
	rm -rf "$STAGE"
	mkdir -p "$STAGE/drivers/infiniband/sw"
	# Copies, not links: the patch changes them.
	cp -r "$RXE" "$STAGE/drivers/infiniband/sw/rxe"
	patch -s -d "$STAGE" -p1 <"$PATCH" || die "rxe-dma-pci: $PATCH does not apply to $RXE"
	tc=$(bash "$TOP/scripts/kernel-toolchain.sh" "$KDIR") || exit 1
	eval "$tc"
	say "rdma_rxe.ko (dma_pci): building against $KDIR" >&2
	run_logged rxe-dma-pci env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -C "$KDIR" \
		M="$STAGE/drivers/infiniband/sw/rxe" "${TOOLCHAIN_MAKEVARS[@]}" -j"$(nproc)" \
		CONFIG_RDMA_RXE=m modules >&2
	cp "$STAGE/drivers/infiniband/sw/rxe/rdma_rxe.ko" "$STAGE/rdma_rxe.ko"
fi
mkdir -p "$OUT"
cp "$STAGE/rdma_rxe.ko" "$OUT/rdma_rxe.ko"
echo "$OUT/rdma_rxe.ko"
