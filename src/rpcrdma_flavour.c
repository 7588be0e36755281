// SPDX-License-Identifier: GPL-2.0
/*
 * Names the Send path flavour this rpcrdma.ko was built with, so that a
 * loaded module can be told apart from the kernel's own:
 *   modinfo -F version rpcrdma.ko, or /sys/module/rpcrdma/version
 * gives "<source version>-<flavour>", and the sendto_flavour field gives
 * "c" or "rust". Both are set by Kbuild. Out of tree, the "fixes" field
 * names each fix to the kernel's own C that the build carries, and whether
 * it was applied or found in the kernel source already
 * (scripts/module-patches/): modinfo -F fixes rpcrdma.
 */
#include <linux/module.h>

MODULE_VERSION(RPCRDMA_VERSION "-" RPCRDMA_FLAVOUR);
MODULE_INFO(sendto_flavour, RPCRDMA_FLAVOUR);
#ifdef RPCRDMA_FIXES_H
#include "rpcrdma_fixes.h"
#endif
