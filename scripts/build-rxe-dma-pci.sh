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

exec bash "$(dirname "$0")/build-test-module.sh" rxe-dma-pci rxe rdma_rxe CONFIG_RDMA_RXE "$(dirname "$0")/test-modules/rxe-dma-pci.patch" \
	"rdma_rxe.ko (dma_pci)"
