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
//! - [`device`]: the RDMA device an upper-layer protocol borrows.
//! - [`dma`]: streaming DMA mappings on a device, of pages and buffers, with
//!   their [`DataDirection`](crate::dma::DataDirection), borrowing or
//!   owning what they map.
//!
//! Nothing here calls an exported function of the RDMA core (the `ib_dma_*`
//! functions are inline, over the DMA API), so it is available whether
//! `ib_core` is built in or a module. An abstraction that calls into it
//! will need `CONFIG_INFINIBAND=y`: the kernel crate is part of `vmlinux`
//! and cannot call into a module.

pub mod cq;
pub mod device;
pub mod dma;
