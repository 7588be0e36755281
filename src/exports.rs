// SPDX-License-Identifier: GPL-2.0

//! The C entry points of the Send path: the symbols `svc_rdma.h` declares
//! for `svc_rdma_sendto.c`, with their C prototypes and kernel-doc. Each
//! turns raw pointers into this crate's types and calls the Rust function
//! of the same name; the logic is there. The other rpcrdma objects call
//! these exactly as they called the C file.
//!
//! Every definition is checked against the bindgen declaration of the
//! header's prototype (`same_signature!`), and the C shim checks the
//! header against the prototypes assumed here: a drifting prototype fails
//! the build on one side or the other.

use crate::ctxt::{self, SendCtxt};
use crate::sq;
use crate::sys;
use crate::xprt::Rdma;
use kernel::ffi::{c_int, c_uint};

/// Fails to compile unless the header's declaration (from bindgen) and our
/// definition have the same type. Both must be `unsafe extern "C"`: rustc
/// 1.85 does not unify a safe and an unsafe function item.
macro_rules! same_signature {
    ($name:ident) => {
        const _: () = {
            let _ = [sys::$name, $name];
        };
    };
}

/// svc_rdma_send_ctxts_destroy - Release all send_ctxt's for an xprt
/// @rdma: svcxprt_rdma being torn down
///
/// # Safety
///
/// Called by `svc_rdma_free` after `ib_drain_qp` and a final drain.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxts_destroy(rdma: *mut sys::svcxprt_rdma) {
    // SAFETY: the transport is live until svc_rdma_free returns.
    ctxt::send_ctxts_destroy(unsafe { Rdma::from_raw(rdma) });
}
same_signature!(svc_rdma_send_ctxts_destroy);

/// svc_rdma_send_ctxt_get - Get a free send_ctxt
/// @rdma: controlling svcxprt_rdma
///
/// Returns a ready-to-use send_ctxt, or NULL if none are available and a
/// fresh one cannot be allocated. The caller owns it until it posts it or
/// puts it back.
///
/// # Safety
///
/// `rdma` is a live transport; process context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxt_get(
    rdma: *mut sys::svcxprt_rdma,
) -> *mut sys::svc_rdma_send_ctxt {
    // SAFETY: per the contract.
    let rdma = unsafe { Rdma::from_raw(rdma) };
    ctxt::send_ctxt_get(rdma).map_or(core::ptr::null_mut(), SendCtxt::into_raw)
}
same_signature!(svc_rdma_send_ctxt_get);

/// svc_rdma_send_ctxts_drain - Release completed send_ctxts
/// @rdma: controlling svcxprt_rdma
///
/// # Safety
///
/// `rdma` is a live transport; process context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxts_drain(rdma: *mut sys::svcxprt_rdma) {
    // SAFETY: per the contract.
    let rdma = unsafe { Rdma::from_raw(rdma) };
    ctxt::send_ctxts_drain(rdma);
    // From svc_rdma_free, after ib_drain_qp and before
    // svc_rdma_destroy_rw_ctxts: the ctxts parked after a partial post
    // must give their chunks' R/W contexts back now, or they would land on
    // sc_rw_ctxts after it was emptied for the last time and leak. This
    // call is recognised by its transport state (no reference left on a
    // transport marked XPT_DEAD, see `Rdma::is_being_freed`): should a
    // later kernel drain elsewhere in that state, or before ib_drain_qp,
    // the orphans' Writes could still be in flight.
    if rdma.is_being_freed() {
        ctxt::orphans_release(rdma);
    }
}
same_signature!(svc_rdma_send_ctxts_drain);

/// svc_rdma_send_ctxt_put - Queue send_ctxt for deferred release
/// @rdma: controlling svcxprt_rdma
/// @ctxt: send_ctxt to queue for deferred release
///
/// DMA unmap and page release run later in svc_rdma_send_ctxts_drain().
/// On the empty-to-non-empty transition the transport is enqueued, so an
/// idle connection does not keep a completed reply's pages pinned.
///
/// # Safety
///
/// The caller owns `ctxt` and does not touch it afterwards.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxt_put(
    rdma: *mut sys::svcxprt_rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) {
    // SAFETY: per the contract.
    unsafe { ctxt::send_ctxt_put(Rdma::from_raw(rdma), ctxt) };
}
same_signature!(svc_rdma_send_ctxt_put);

/// svc_rdma_wake_send_waiters - manage Send Queue accounting
/// @rdma: controlling transport
/// @avail: Number of additional SQEs that are now available
///
/// # Safety
///
/// `rdma` is a live transport.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_wake_send_waiters(rdma: *mut sys::svcxprt_rdma, avail: c_int) {
    // SAFETY: per the contract.
    sq::wake_send_waiters(unsafe { Rdma::from_raw(rdma) }, avail);
}
same_signature!(svc_rdma_wake_send_waiters);

/// svc_rdma_sq_wait - Wait for SQ slots using fair queuing
/// @rdma: controlling transport
/// @cid: completion ID for tracing
/// @sqecount: number of SQ entries needed
///
/// Return values:
///   %0: SQ slots were reserved successfully
///   %-ENOTCONN: The connection was lost
///
/// # Safety
///
/// `rdma` is a live transport; process context (may sleep).
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_sq_wait(
    rdma: *mut sys::svcxprt_rdma,
    cid: *const sys::rpc_rdma_cid,
    sqecount: c_int,
) -> c_int {
    // SAFETY: per the contract.
    match sq::sq_wait(unsafe { Rdma::from_raw(rdma) }, cid, sqecount) {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
same_signature!(svc_rdma_sq_wait);

/// svc_rdma_post_send_err - Handle ib_post_send failure
/// @rdma: controlling transport
/// @cid: completion ID for tracing
/// @bad_wr: first WR that was not posted
/// @first_wr: first WR in the chain
/// @sqecount: number of SQ entries that were reserved
/// @ret: error code from ib_post_send
///
/// Return values:
///   %0: At least one WR was posted; a completion handles cleanup
///   %-ENOTCONN: No WRs were posted; SQ slots are released
///
/// # Safety
///
/// `rdma` is a live transport.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_post_send_err(
    rdma: *mut sys::svcxprt_rdma,
    cid: *const sys::rpc_rdma_cid,
    bad_wr: *const sys::ib_send_wr,
    first_wr: *const sys::ib_send_wr,
    sqecount: c_int,
    ret: c_int,
) -> c_int {
    // SAFETY: per the contract.
    let rdma = unsafe { Rdma::from_raw(rdma) };
    sq::post_send_err(rdma, cid, bad_wr, first_wr, sqecount, ret)
}
same_signature!(svc_rdma_post_send_err);

/// svc_rdma_post_send - Post a WR chain to the Send Queue
/// @rdma: transport context
/// @ctxt: WR chain to post
///
/// Return values:
///   %0: @ctxt's WR chain was posted (it now belongs to its completion),
///       or was partly posted and parked until the transport is freed
///   %-ENOTCONN: The connection was lost; the caller still owns @ctxt
///
/// # Safety
///
/// `rdma` is a live transport, the caller owns `ctxt`; process context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_post_send(
    rdma: *mut sys::svcxprt_rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) -> c_int {
    // SAFETY: per the contract.
    let (rdma, ctxt) = unsafe { (Rdma::from_raw(rdma), SendCtxt::from_raw(ctxt)) };
    let Some(ctxt) = ctxt else {
        return kernel::error::code::EINVAL.to_errno();
    };
    match sq::post_send(rdma, ctxt) {
        Ok(()) => 0,
        Err((e, ctxt)) => {
            // The C caller keeps ownership on failure and puts it itself.
            ctxt.into_raw();
            e.to_errno()
        }
    }
}
same_signature!(svc_rdma_post_send);

/// svc_rdma_result_payload - special processing for a result payload
/// @rqstp: RPC transaction context
/// @offset: payload's byte offset in @rqstp->rq_res
/// @length: size of payload, in bytes
///
/// Assign the passed-in result payload to the current Write chunk, and
/// advance to cur_result_payload to the next Write chunk, if there is one.
///
/// Return values:
///   %0 if successful or nothing needed to be done
///   %-E2BIG if the payload was larger than the Write chunk
///
/// # Safety
///
/// `rqstp` is the nfsd thread's request, whose `rq_xprt_ctxt` is the
/// receive ctxt of the Call.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_result_payload(
    rqstp: *mut sys::svc_rqst,
    offset: c_uint,
    length: c_uint,
) -> c_int {
    // SAFETY: per the contract.
    let rctxt = unsafe { (*rqstp).rq_xprt_ctxt }.cast::<sys::svc_rdma_recv_ctxt>();
    // SAFETY: the Call's receive ctxt, owned by this thread.
    match unsafe { crate::reply::result_payload(rctxt, offset, length) } {
        Ok(()) => 0,
        Err(e) => e.to_errno(),
    }
}
same_signature!(svc_rdma_result_payload);

/// svc_rdma_map_reply_msg - DMA map the buffer holding RPC message
/// @rdma: controlling transport
/// @sctxt: send_ctxt for the Send WR
/// @write_pcl: Write chunk list provided by client
/// @reply_pcl: Reply chunk provided by client
/// @xdr: prepared xdr_buf containing RPC message
///
/// Returns:
///   %0 (or, as in C, a positive length) if DMA mapping was successful.
///   %-EMSGSIZE if a buffer manipulation problem occurred
///   %-EIO if DMA mapping failed
///   %-E2BIG if the reply is too large for the Send and cannot be pulled up
///
/// The Send WR's num_sge field is set in all cases.
///
/// # Safety
///
/// The caller owns `sctxt`, whose header is built; the lists and `xdr` are
/// the Call's and the reply.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_map_reply_msg(
    rdma: *mut sys::svcxprt_rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    write_pcl: *const sys::svc_rdma_pcl,
    reply_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
) -> c_int {
    // SAFETY: per the contract.
    unsafe { crate::mapping::map_reply_msg(Rdma::from_raw(rdma), sctxt, write_pcl, reply_pcl, xdr) }
}
same_signature!(svc_rdma_map_reply_msg);

/// svc_rdma_send_error_msg - Send an RPC/RDMA v1 error response
/// @rdma: controlling transport context
/// @sctxt: Send context for the response
/// @rctxt: Receive context for incoming bad message
/// @status: negative errno indicating error that occurred
///
/// Given the client-provided Read, Write, and Reply chunks, the server was
/// unable to form a complete reply. Return an RDMA_ERROR message so the
/// client can retire the RPC transaction. @sctxt is consumed in all cases.
///
/// # Safety
///
/// The caller owns `sctxt` and gives it up; `rctxt` is the Call.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_error_msg(
    rdma: *mut sys::svcxprt_rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    status: c_int,
) {
    // SAFETY: per the contract.
    let (rdma, sctxt) = unsafe { (Rdma::from_raw(rdma), SendCtxt::from_raw(sctxt)) };
    if let Some(sctxt) = sctxt {
        // SAFETY: per the contract.
        unsafe { crate::reply::send_error_msg(rdma, sctxt, rctxt, status) };
    }
}
same_signature!(svc_rdma_send_error_msg);

/// svc_rdma_sendto - Transmit an RPC reply
/// @rqstp: processed RPC request, reply XDR already in ::rq_res
///
/// Any resources still associated with @rqstp are released upon return.
/// If no reply message was possible, the connection is closed.
///
/// Returns:
///   %0 if an RPC reply has been successfully posted,
///   %-ENOTCONN if no reply was possible (the connection is closed)
///
/// # Safety
///
/// Called by sunrpc as `xpo_sendto` of an RDMA transport.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_sendto(rqstp: *mut sys::svc_rqst) -> c_int {
    // SAFETY: per the contract.
    unsafe { crate::reply::sendto(rqstp) }
}
same_signature!(svc_rdma_sendto);

/// rs_stat_read - read a Send-path leak counter (for the C shim)
/// @which: 0 live send ctxts, 1 reply pages held, 2 payload SGEs mapped
///
/// Returns the counter, or -1 for an unknown @which.
#[no_mangle]
pub extern "C" fn rs_stat_read(which: c_int) -> i64 {
    use crate::stats::{CTXTS_LIVE, PAGES_HELD, SGES_MAPPED};
    use kernel::sync::atomic::Relaxed;
    match which {
        0 => CTXTS_LIVE.load(Relaxed),
        1 => PAGES_HELD.load(Relaxed),
        2 => SGES_MAPPED.load(Relaxed),
        _ => -1,
    }
}
// A safe function and the header's (unsafe) declaration do not unify in
// `same_signature!` on rustc 1.85, the kernel's minimum: both must coerce
// to the one pointer type written here instead.
const _: [unsafe extern "C" fn(c_int) -> i64; 2] = [sys::rs_stat_read, rs_stat_read];
