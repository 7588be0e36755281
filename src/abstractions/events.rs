// SPDX-License-Identifier: GPL-2.0

//! The Send path's tracepoints (`include/trace/events/rpcrdma.h`), with
//! arguments the events can always read: borrows of live objects. Each
//! costs a patched-out branch while its event is disabled
//! (`trace.rs`).

use super::rqst::Rqst;
use super::send_ctxt::{Ctxt, CtxtTracer};
use super::trace;
use super::xprt::Rdma;
use crate::proto::Segment;
use crate::rdma::cq::WorkCompletion;
use crate::sys;

/// `svcrdma_sq_full`: a Send waits for SQ entries.
pub(crate) fn sq_full(rdma: &Rdma, cid: &sys::rpc_rdma_cid) {
    // SAFETY: the event reads the borrowed transport and cid during the call.
    unsafe { trace::sq_full(rdma.as_ptr(), cid) }
}

/// `svcrdma_sq_retry`: a waiting Send got its SQ entries.
pub(crate) fn sq_retry(rdma: &Rdma, cid: &sys::rpc_rdma_cid) {
    // SAFETY: the event reads the borrowed transport and cid during the call.
    unsafe { trace::sq_retry(rdma.as_ptr(), cid) }
}

/// `svcrdma_sq_post_err`: `ib_post_send` failed with `status`.
pub(crate) fn sq_post_err(rdma: &Rdma, cid: &sys::rpc_rdma_cid, status: i32) {
    // SAFETY: the event reads the borrowed transport and cid during the call.
    unsafe { trace::sq_post_err(rdma.as_ptr(), cid, status) }
}

/// `svcrdma_wc_send`: a Send completed.
#[inline]
pub(crate) fn wc_send(cid: &sys::rpc_rdma_cid) {
    // SAFETY: the event reads the borrowed cid during the call.
    unsafe { trace::wc_send(cid) }
}

/// `svcrdma_wc_send_flush`: a Send was flushed (the QP is in error).
pub(crate) fn wc_send_flush(wc: &WorkCompletion, cid: &sys::rpc_rdma_cid) {
    // SAFETY: the event reads the borrowed completion and cid during the call.
    unsafe { trace::wc_send_flush(wc.as_raw(), cid) }
}

/// `svcrdma_wc_send_err`: a Send failed.
pub(crate) fn wc_send_err(wc: &WorkCompletion, cid: &sys::rpc_rdma_cid) {
    // SAFETY: the event reads the borrowed completion and cid during the call.
    unsafe { trace::wc_send_err(wc.as_raw(), cid) }
}

/// `svcrdma_post_send`: a WR chain is about to be posted.
pub(crate) fn post_send(ctxt: &Ctxt<'_>) {
    // SAFETY: the event reads the ctxt we hold during the call.
    unsafe { trace::post_send(ctxt.as_ptr()) }
}

/// `svcrdma_dma_unmap_page`: a payload SGE is unmapped.
pub(crate) fn dma_unmap_page(cid: &sys::rpc_rdma_cid, sge: &sys::ib_sge) {
    // SAFETY: the event reads the borrowed cid during the call.
    unsafe { trace::dma_unmap_page(cid, sge.addr, sge.length) }
}

/// `svcrdma_dma_map_page`: `len` bytes were mapped at `addr`.
pub(crate) fn dma_map_page(cid: &sys::rpc_rdma_cid, addr: u64, len: u32) {
    // SAFETY: the event reads the borrowed cid during the call.
    unsafe { trace::dma_map_page(cid, addr, len) }
}

/// `svcrdma_dma_map_err`: mapping `len` bytes failed (`addr` is the
/// error cookie).
pub(crate) fn dma_map_err(cid: &sys::rpc_rdma_cid, addr: u64, len: u32) {
    // SAFETY: the event reads the borrowed cid during the call.
    unsafe { trace::dma_map_err(cid, addr, len) }
}

/// `svcrdma_send_pullup`: `msglen` bytes were copied behind the header.
pub(crate) fn send_pullup(ctxt: &Ctxt<'_>, msglen: u32) {
    // SAFETY: the event reads the ctxt we hold during the call.
    unsafe { trace::send_pullup(ctxt.as_ptr(), msglen) }
}

/// `svcrdma_encode_wseg`: segment `segno` of a chunk was encoded with
/// `length` bytes.
pub(crate) fn encode_wseg(ctxt: &CtxtTracer<'_>, segno: u32, seg: &Segment, length: u32) {
    // SAFETY: the event reads the borrowed ctxt's cid during the call.
    unsafe { trace::encode_wseg(ctxt.as_ptr(), segno, seg.handle, length, seg.offset) }
}

/// `svcrdma_err_vers`: an ERR_VERS answers XID `xid` (host order).
pub(crate) fn err_vers(xid: u32) {
    // SAFETY: the event takes a value.
    unsafe { trace::err_vers(xid.to_be()) }
}

/// `svcrdma_err_chunk`: an ERR_CHUNK answers XID `xid` (host order).
pub(crate) fn err_chunk(xid: u32) {
    // SAFETY: the event takes a value.
    unsafe { trace::err_chunk(xid.to_be()) }
}

/// `svcrdma_send_err`: no reply could be sent for the request.
pub(crate) fn send_err(rqst: &Rqst, status: i32) {
    // SAFETY: the event reads the borrowed request during the call.
    unsafe { trace::send_err(rqst.as_ptr(), status) }
}
