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
//! Nothing here calls an exported function of the RDMA core, so it is
//! available whether `ib_core` is built in or a module. An abstraction that
//! calls into it will need `CONFIG_INFINIBAND=y`: the kernel crate is part
//! of `vmlinux` and cannot call into a module.

pub mod cq;
