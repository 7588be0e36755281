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

exec bash "$(dirname "$0")/build-test-module.sh" siw-strand siw siw CONFIG_RDMA_SIW "$(dirname "$0")/test-modules/siw-strand-sends.patch" \
	"siw.ko (strand_sends)"
