#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0
#
# graft-intree.sh KSRC: make kernel tree KSRC build rpcrdma with the Rust
# Send path. Links this project's files under net/sunrpc/xprtrdma/ and adds
# our Kconfig to net/sunrpc/Kconfig; the kernel's own files stay as they are
# (sed -i replaces net/sunrpc/Kconfig by an edited copy, so a tree made of
# hard links to a pristine one keeps that one pristine):
#
#   net/sunrpc/xprtrdma/Kbuild        -> our Kbuild (kbuild prefers it to the
#                                        Makefile, which it includes as
#                                        upstream.mk for the object list)
#   net/sunrpc/xprtrdma/upstream.mk   -> Makefile
#   net/sunrpc/xprtrdma/{src,bindings} -> our sources
#   net/sunrpc/xprtrdma/Kconfig.rust  -> our Kconfig (SUNRPC_XPRT_RDMA_RUST_SENDTO)
#   net/sunrpc/xprtrdma/.kunitconfig  -> for tools/testing/kunit/kunit.py
#
# Running it again is harmless. Undo: remove those links and the "source"
# line from net/sunrpc/Kconfig.

. "$(dirname "$0")/lib.sh"

KSRC=${1:?usage: graft-intree.sh KSRC}
X=$KSRC/net/sunrpc/xprtrdma
[ -f "$X/svc_rdma_sendto.c" ] || die "$KSRC is not a kernel source tree with net/sunrpc/xprtrdma"
ln -sfn "$TOP/Kbuild" "$X/Kbuild"
ln -sfn Makefile "$X/upstream.mk"
ln -sfn "$TOP/src" "$X/src"
ln -sfn "$TOP/bindings" "$X/bindings"
ln -sfn "$TOP/Kconfig" "$X/Kconfig.rust"
ln -sfn "$TOP/.kunitconfig" "$X/.kunitconfig"
line='source "net/sunrpc/xprtrdma/Kconfig.rust"'
grep -qxF "$line" "$KSRC/net/sunrpc/Kconfig" || sed -i "\$a $line" "$KSRC/net/sunrpc/Kconfig"
say "grafted into $KSRC: CONFIG_SUNRPC_XPRT_RDMA_RUST_SENDTO=y selects the Rust Send path"
