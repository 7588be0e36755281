// SPDX-License-Identifier: GPL-2.0

//! The C objects the Send path works on, as Rust types.
//!
//! This is the only layer, besides the C entry points in `exports.rs`, that
//! dereferences raw pointers into C structures. Each type here wraps one C
//! object (`Opaque`, `#[repr(transparent)]`, as `rust/kernel` does), states
//! what makes its methods sound (`# Invariants`), and hands out borrows tied
//! to its own lifetime. The Send-path logic above it (`ctxt.rs`, `sq.rs`,
//! `mapping.rs`, `reply.rs`) is written against these types only.
//!
//! - [`xprt::Rdma`]: the transport (`svcxprt_rdma`), with its wait queues;
//! - [`send_ctxt::Ctxt`]: an owned send ctxt, its SGE list, header buffer
//!   and WR chain; [`send_ctxt::CtxtList`] the lock-free lists it moves
//!   between (`send_ctxt::list`); its ledger (`send_ctxt::ledger`);
//! - [`recv_ctxt::RecvCtxt`], [`recv_ctxt::Pcl`], [`recv_ctxt::Chunk`]:
//!   the Call and its parsed chunk lists;
//! - [`rqst::Rqst`]: the nfsd request and the reply pages it holds;
//! - [`xdr_buf::XdrBuf`]: a reply or a region of it, as fragments;
//! - DMA mappings are the kernel crate's `rdma::dma` (or this module's
//!   copy of it, `src/rust/kernel/rdma/dma.rs`): owned values undone when
//!   dropped, handed to a ctxt's SGEs with `Mapping::into_raw`;
//! - [`events`]: the Send path's tracepoints with safe arguments, over
//!   `trace`, which tests each event's static key inline.

pub(crate) mod events;
pub(crate) mod recv_ctxt;
pub(crate) mod rqst;
pub(crate) mod send_ctxt;
mod trace;
pub(crate) mod xdr_buf;
pub(crate) mod xprt;
