// SPDX-License-Identifier: GPL-2.0

//! The RPC-over-RDMA server Send path of `rpcrdma.ko`, in Rust.
//!
//! This crate takes the place of `net/sunrpc/xprtrdma/svc_rdma_sendto.c`
//! inside the kernel's own rpcrdma module: it is linked with the other,
//! unmodified C objects of `net/sunrpc/xprtrdma`, exports the C symbols they
//! call, and shares their structures (`svc_rdma_send_ctxt`, `svcxprt_rdma`)
//! through bindings generated for the target kernel's configuration.
//!
//! Layout: [`sys`] is the unsafe FFI edge (generated bindings and the C shim);
//! [`proto`] is safe, kernel-independent code (RPC-over-RDMA encoding and Send
//! planning) that the host tests compile too.

mod ctxt;
pub mod exports;
#[cfg(CONFIG_KUNIT = "y")]
mod fakes;
mod fault;
mod layout;
mod mapping;
mod pcl;
pub(crate) mod proto;
mod proto_kunit;
mod reply;
mod reply_kunit;
mod sq;
mod sq_kunit;
mod stats;
mod sys;
mod xprt;

/// Prefix of this crate's `pr_*!` messages (normally set by `module!`,
/// which this crate does not use: the C side of rpcrdma owns module init).
const __LOG_PREFIX: &[u8] = b"rpcrdma\0";
