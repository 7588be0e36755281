// SPDX-License-Identifier: GPL-2.0

//! RDMA (InfiniBand verbs) abstractions.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! These are the pieces a Rust RDMA upper-layer protocol (an RPC-over-RDMA
//! transport, an NVMe over RDMA target or host, an iSER initiator) needs
//! from the RDMA core, with no knowledge of any one of them:
//!
//! - [`cq`]: work completions and their dispatch, through the `ib_cqe`
//!   embedded in the object a work request was posted for, to a typed
//!   handler.
//!
//! They are only available when the RDMA core is built in
//! (`CONFIG_INFINIBAND=y`): the kernel crate cannot call into a module.

pub mod cq;
