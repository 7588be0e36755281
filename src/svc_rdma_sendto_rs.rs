// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA server Send path of `rpcrdma.ko`, in Rust.
//!
//! This crate takes the place of `net/sunrpc/xprtrdma/svc_rdma_sendto.c`
//! inside the kernel's own rpcrdma module: it is linked with the other,
//! unmodified C objects of `net/sunrpc/xprtrdma`, exports the C symbols they
//! call, and shares their structures (`svc_rdma_send_ctxt`, `svcxprt_rdma`)
//! through bindings generated for the target kernel's configuration.
//!
//! # Origin and licence
//!
//! This crate reimplements `net/sunrpc/xprtrdma/svc_rdma_sendto.c` of
//! Linux 7.3, which is `GPL-2.0 OR BSD-3-Clause`, Copyright (c) 2016-2018
//! Oracle, (c) 2014 Open Grid Computing, Inc., (c) 2005-2006 Network
//! Appliance, Inc. (and, in `abstractions/recv_ctxt.rs`, the inlines of
//! `include/linux/sunrpc/svc_rdma_pcl.h`, `GPL-2.0`, (c) 2020 Oracle). It
//! was written for this project following that file's logic function by
//! function, with its own code and documentation; the files that
//! reimplement a part of it say so under their SPDX line. The crate is
//! distributed under `GPL-2.0`, one of the original's two licences, as is
//! the rest of `rpcrdma.ko`. Where it deliberately differs from the C
//! file, `Documentation/design.rst` lists it.
//!
//! Layout, bottom up:
//! - `sys`: the generated bindings and the C shim's declarations, used only
//!   by the two layers below;
//! - `exports`: the C entry points, which turn their raw pointers into the
//!   types of `abstractions` under the preconditions they document;
//! - `abstractions`: the C objects of the Send path as Rust types with safe
//!   methods and stated invariants (transport, send and receive ctxts,
//!   chunk lists, request, `xdr_buf`, DMA mappings, and the tracepoints,
//!   their static keys tested inline);
//! - `ctxt`, `sq`, `mapping`, `reply`: the C file's logic, in safe Rust
//!   over those types;
//! - `proto`: safe, kernel-independent code (RPC-over-RDMA encoding and
//!   Send planning) that the host tests compile too.
//!
//! Generic abstractions, with no svcrdma knowledge, are the kernel crate's
//! (`kernel::llist`, `kernel::rdma`). A kernel without them gets the same
//! files compiled into this crate: the out-of-tree module's source has them
//! as `src/rust/kernel/`, laid out as in a kernel tree and written against
//! the kernel crate's own paths (`crate::bindings`, `crate::types`, ...),
//! which the crate root then provides (`Documentation/intree.rst`).

mod abstractions;
mod ctxt;
pub mod exports;
#[cfg(rpcrdma_kunit)]
mod fakes;
mod fault;
#[cfg(rpcrdma_kunit)]
mod layout;
mod mapping;
pub(crate) mod proto;
#[cfg(rpcrdma_kunit)]
mod proto_kunit;
mod reply;
#[cfg(rpcrdma_kunit)]
mod reply_kunit;
mod sq;
#[cfg(rpcrdma_kunit)]
mod sq_kunit;
mod stats;
mod sys;

// The generic abstractions of `src/rust/kernel/`, compiled into this
// crate, unless the kernel crate has them (`rpcrdma_kernel_abstractions`,
// set by `Kbuild`). Their items are the kernel crate's public API there, so
// a part this driver does not use is not dead code, and `pub` is what it
// is.
#[cfg(not(rpcrdma_kernel_abstractions))]
#[path = "rust/kernel"]
#[allow(dead_code, unreachable_pub)]
mod kernel_abstractions {
    pub(crate) mod llist;
    pub(crate) mod rdma;
}
#[cfg(rpcrdma_kernel_abstractions)]
use kernel::{llist, rdma};
#[cfg(not(rpcrdma_kernel_abstractions))]
use kernel_abstractions::{llist, rdma};

// The kernel crate's paths, as the files of `src/rust/kernel/` name them
// (`crate::bindings` there is the kernel's `bindings`, which here are the
// kernel crate's plus this crate's generated ones). Which of them the
// compiled code uses depends on the build: KUnit suites and macros that
// this driver does not expand use more.
#[cfg(not(rpcrdma_kernel_abstractions))]
#[allow(unused_imports)]
use kernel::{alloc, container_of, dma, error, page, prelude, types};
#[cfg(not(rpcrdma_kernel_abstractions))]
use sys as bindings;

/// Prefix of this crate's `pr_*!` messages (normally set by `module!`,
/// which this crate does not use: the C side of rpcrdma owns module init).
const __LOG_PREFIX: &[u8] = b"rpcrdma\0";
