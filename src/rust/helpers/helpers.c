// SPDX-License-Identifier: GPL-2.0
/*
 * The out-of-tree counterpart of the kernel's rust/helpers/helpers.c: the
 * helper files of src/rust/helpers/, which a kernel tree would list in its
 * own helpers.c, compiled into the module for the abstractions of
 * src/rust/kernel/ (Documentation/intree.rst). Bindings for them are
 * generated as the kernel's rust/Makefile makes its own: rust_helper_foo
 * is called as bindings::foo.
 *
 * Out of tree a helper is an ordinary call, not inlined into Rust: notrace
 * keeps it off ftrace's entry hooks, as the shim's wrappers are.
 */

#include <linux/compiler_types.h>

#define __rust_helper notrace

#include "llist.c"
#include "rdma.c"
