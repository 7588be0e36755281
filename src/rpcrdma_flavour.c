// SPDX-License-Identifier: GPL-2.0
/*
 * Names the Send path flavour this rpcrdma.ko was built with, so that a
 * loaded module can be told apart from the kernel's own:
 *   modinfo -F version rpcrdma.ko, or /sys/module/rpcrdma/version
 * gives "<source version>-<flavour>", and the sendto_flavour field gives
 * "c" or "rust". Both are set by Kbuild.
 */
#include <linux/module.h>

MODULE_VERSION(RPCRDMA_VERSION "-" RPCRDMA_FLAVOUR);
MODULE_INFO(sendto_flavour, RPCRDMA_FLAVOUR);
