// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! The C entry points of the Send path: the twelve symbols `svc_rdma.h`
//! declares for `svc_rdma_sendto.c`, with the same C prototypes. Each one
//! turns its raw pointers into this crate's types under the preconditions
//! its `# Safety` section states, and hands over to the Rust function that
//! does the work. The other objects of rpcrdma call them as they called the
//! C file.
//!
//! Every definition is checked against the bindgen declaration of the
//! header's prototype (`same_signature!`), and the C shim checks the
//! header against the prototypes assumed here: a drifting prototype fails
//! the build on one side or the other.

use crate::abstractions::recv_ctxt::{Pcl, RecvCtxt};
use crate::abstractions::rqst::Rqst;
use crate::abstractions::send_ctxt::Ctxt;
use crate::abstractions::xdr_buf::XdrBuf;
use crate::abstractions::xprt::{Drained, Rdma};
use crate::ctxt;
use crate::sq;
use crate::sys;
use kernel::error::from_result;
use kernel::ffi::{c_int, c_uint};

/// Fails to compile unless the header's declaration (from bindgen) and our
/// definition have the same type. Both must be `unsafe extern "C"`: rustc
/// 1.85 does not unify a safe and an unsafe function item. (The kernel's
/// `#[export]` does the same check, but only against `kernel::bindings`,
/// which does not include `svc_rdma.h`.)
macro_rules! same_signature {
    ($name:ident) => {
        const _: () = {
            let _ = [sys::$name, $name];
        };
    };
}

/// `svc_rdma_send_ctxts_destroy`: frees every send ctxt of the transport
/// `rdma` (its pool, and any ctxt parked after a partial post).
///
/// # Safety
///
/// `rdma` points to a transport in `svc_rdma_free`, after `ib_drain_qp` and
/// the final `svc_rdma_send_ctxts_drain`: no request uses it any more, no
/// other thread uses its send ctxts, and only a provider that broke the
/// drain's promise may still complete something (see
/// `ctxt::release_unreturned`). Not called from the Send CQ's work.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxts_destroy(rdma: *mut sys::svcxprt_rdma) {
    // SAFETY: `rdma` is live for this call (it is being freed, by the caller,
    // only after this returns).
    let rdma = unsafe { Rdma::from_raw(rdma) };
    // SAFETY: this is its teardown after the drain, from `svc_rdma_free`'s
    // process context (`# Safety`), for the call; the token does not
    // outlive it.
    let drained = unsafe { Drained::assume(rdma) };
    ctxt::send_ctxts_destroy(&drained);
}
same_signature!(svc_rdma_send_ctxts_destroy);

/// `svc_rdma_send_ctxt_get`: a send ctxt of `rdma` ready for a new reply,
/// taken from the pool (after draining completed ones if it is empty) or
/// newly allocated; NULL when allocation fails. The caller owns the ctxt
/// until it posts it (`svc_rdma_post_send`) or returns it
/// (`svc_rdma_send_ctxt_put`). May sleep.
///
/// # Safety
///
/// `rdma` points to a live transport, and the call is made in process
/// context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxt_get(
    rdma: *mut sys::svcxprt_rdma,
) -> *mut sys::svc_rdma_send_ctxt {
    // SAFETY: `rdma` is live for the call (`# Safety`).
    let rdma = unsafe { Rdma::from_raw(rdma) };
    ctxt::send_ctxt_get(rdma).map_or(core::ptr::null_mut(), Ctxt::into_raw)
}
same_signature!(svc_rdma_send_ctxt_get);

/// `svc_rdma_send_ctxts_drain`: releases the send ctxts of `rdma` whose
/// Sends have completed (DMA unmapping, the reply's pages, the chunks' R/W
/// contexts) back into its pool.
///
/// # Safety
///
/// `rdma` points to a live transport, and the call is made in process
/// context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxts_drain(rdma: *mut sys::svcxprt_rdma) {
    // SAFETY: `rdma` is live for the call (`# Safety`).
    let rdma = unsafe { Rdma::from_raw(rdma) };
    ctxt::send_ctxts_drain(rdma);
}
same_signature!(svc_rdma_send_ctxts_drain);

/// `svc_rdma_send_ctxt_put`: gives `ctxt` back to `rdma`. Cheap enough for
/// a completion handler: it only queues the ctxt, and the costly release
/// happens in the next `svc_rdma_send_ctxts_drain`. When the queue was
/// empty the transport is scheduled, so that even an idle connection
/// releases the pages soon.
///
/// # Safety
///
/// `rdma` points to a live transport; `ctxt` is one of its send ctxts,
/// owned by the caller, who does not use it after the call.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_ctxt_put(
    rdma: *mut sys::svcxprt_rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) {
    // The ctxt names its transport itself (`sc_rdma`), which is `rdma`.
    let _ = rdma;
    // SAFETY: `ctxt` is a send ctxt of a transport live for the call,
    // handed over (`# Safety`).
    if let Some(ctxt) = unsafe { Ctxt::from_raw(ctxt) } {
        ctxt::send_ctxt_put(ctxt);
    }
}
same_signature!(svc_rdma_send_ctxt_put);

/// `svc_rdma_wake_send_waiters`: returns `avail` Send Queue entries of
/// `rdma` (their WRs have completed) and wakes a thread waiting for entries
/// in `svc_rdma_sq_wait`, if there is one. Any context.
///
/// # Safety
///
/// `rdma` points to a live transport.
///
/// Never inlined: the crate's failure paths call this copy (see
/// `sq::wake_send_waiters_outlined`).
#[no_mangle]
#[inline(never)]
pub unsafe extern "C" fn svc_rdma_wake_send_waiters(rdma: *mut sys::svcxprt_rdma, avail: c_int) {
    // SAFETY: `rdma` is live for the call (`# Safety`).
    sq::wake_send_waiters(unsafe { Rdma::from_raw(rdma) }, avail);
}
same_signature!(svc_rdma_wake_send_waiters);

/// `svc_rdma_sq_wait`: reserves `sqecount` Send Queue entries of `rdma`
/// for a WR chain, sleeping in first-come-first-served order behind other
/// waiters when too few are free. Returns 0 once they are reserved, or
/// `-ENOTCONN` if the connection closes first. `cid` only labels the
/// tracepoints.
///
/// # Safety
///
/// `rdma` points to a live transport, `cid` to a completion ID, and the
/// call is made in process context (it may sleep).
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_sq_wait(
    rdma: *mut sys::svcxprt_rdma,
    cid: *const sys::rpc_rdma_cid,
    sqecount: c_int,
) -> c_int {
    // SAFETY: `rdma` is live and `cid` valid for the call (`# Safety`).
    let (rdma, cid) = unsafe { (Rdma::from_raw(rdma), &*cid) };
    from_result(|| sq::sq_wait(rdma, cid, sqecount).map(|()| 0))
}
same_signature!(svc_rdma_sq_wait);

/// `svc_rdma_post_send_err`: what to do when `ib_post_send` returned `ret`
/// for the chain starting at `first_wr`, stopping at `bad_wr`. The
/// connection is closed in any case. If nothing was posted (`bad_wr` is
/// `first_wr`) the `sqecount` reserved entries are given back and
/// `-ENOTCONN` returned; otherwise 0, and the completions of what was
/// posted clean up.
///
/// # Safety
///
/// `rdma` points to a live transport and `cid` to a completion ID; the WR
/// pointers are only compared.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_post_send_err(
    rdma: *mut sys::svcxprt_rdma,
    cid: *const sys::rpc_rdma_cid,
    bad_wr: *const sys::ib_send_wr,
    first_wr: *const sys::ib_send_wr,
    sqecount: c_int,
    ret: c_int,
) -> c_int {
    // SAFETY: `rdma` is live and `cid` valid for the call (`# Safety`).
    let (rdma, cid) = unsafe { (Rdma::from_raw(rdma), &*cid) };
    sq::post_send_err(rdma, cid, bad_wr == first_wr, sqecount, ret)
}
same_signature!(svc_rdma_post_send_err);

/// `svc_rdma_post_send`: reserves Send Queue entries for the WR chain of
/// `ctxt` (chunk Writes, then the Send) and posts it. Returns 0 when the
/// chain was handed to the device, after which `ctxt` belongs to the Send
/// completion; also 0 when only part of it was posted, the connection then
/// being closed and `ctxt` kept until the transport is freed. On an error
/// (`-ENOTCONN`: the connection is closing, or nothing could be posted) the
/// caller still owns `ctxt`.
///
/// # Safety
///
/// `rdma` points to a live transport and `ctxt` to one of its send ctxts
/// with a complete WR chain, owned by the caller, or is NULL (refused with
/// `-EINVAL`); process context.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_post_send(
    rdma: *mut sys::svcxprt_rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) -> c_int {
    // SAFETY: `rdma` is live for the call and the caller lends us `ctxt`,
    // one of its ctxts (`# Safety`); on failure it is given back below.
    let (rdma, ctxt) = unsafe { (Rdma::from_raw(rdma), Ctxt::from_raw(ctxt)) };
    let Some(ctxt) = ctxt else {
        return kernel::error::code::EINVAL.to_errno();
    };
    match sq::post_send(rdma, ctxt) {
        Ok(()) => 0,
        Err((e, ctxt)) => {
            // The C caller keeps ownership on failure and puts it itself.
            let _ = ctxt.into_raw();
            e.to_errno()
        }
    }
}
same_signature!(svc_rdma_post_send);

/// `svc_rdma_result_payload` (`xpo_result_payload`): nfsd reports that the
/// `length` bytes at `offset` of the reply being built are a result payload
/// that may travel by RDMA Write (READ data). It is given to the Call's next
/// unused Write chunk, if the client offered one and it is large enough.
/// Always 0: a payload too long for its chunk stays in the reply (see
/// [`crate::reply::result_payload`] for why this differs from C).
///
/// # Safety
///
/// `rqstp` points to the request an nfsd thread is answering on an RDMA
/// transport; its `rq_xprt_ctxt` is the Call's receive ctxt, which this
/// thread owns.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_result_payload(
    rqstp: *mut sys::svc_rqst,
    offset: c_uint,
    length: c_uint,
) -> c_int {
    // SAFETY: `rqstp` is a live request whose receive ctxt this thread
    // owns (`# Safety`).
    let rctxt = unsafe { RecvCtxt::from_raw(Rqst::from_raw(rqstp).recv_ctxt_ptr()) };
    crate::reply::result_payload(rctxt, offset, length);
    0
}
same_signature!(svc_rdma_result_payload);

/// `svc_rdma_map_reply_msg`: prepares the Send WR of `sctxt` to carry the
/// transport header and the inline part of the reply `xdr` (the parts not
/// sent through the Call's Write chunks `write_pcl`; nothing when the reply
/// goes through the Reply chunk `reply_pcl`), either copied behind the
/// header or DMA-mapped as further SGEs. Returns 0 or, like C, a positive
/// length on success; `-EMSGSIZE` (the reply does not fit the buffers),
/// `-EIO` (mapping failed) or `-E2BIG` (too many pieces for the device and
/// too large to copy). The WR's SGE count is valid either way.
///
/// # Safety
///
/// `rdma` points to a live transport; `sctxt` to its send ctxt, owned by the
/// caller, with the transport header encoded, or is NULL (refused with
/// `-EINVAL`); `write_pcl`, `reply_pcl` and
/// `xdr` to the Call's chunk lists and the reply, unchanged during the call.
/// The memory of `xdr` stays allocated until `sctxt` is released, which
/// undoes its mappings (the backchannel, the only caller, passes empty
/// chunk lists, so a failure has undone them already).
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_map_reply_msg(
    rdma: *mut sys::svcxprt_rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    write_pcl: *const sys::svc_rdma_pcl,
    reply_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
) -> c_int {
    // SAFETY: all valid for the call, `sctxt` (a ctxt of `rdma`) lent by
    // its owner (`# Safety`); the lists and reply are unchanged meanwhile.
    let (rdma, sctxt, write_pcl, reply_pcl, xdr) = unsafe {
        (
            Rdma::from_raw(rdma),
            Ctxt::from_raw(sctxt),
            Pcl::from_raw(write_pcl.cast_mut()),
            Pcl::from_raw(reply_pcl.cast_mut()),
            XdrBuf::from_raw(xdr),
        )
    };
    let Some(mut sctxt) = sctxt else {
        return kernel::error::code::EINVAL.to_errno();
    };
    // SAFETY: `sctxt` is `rdma`'s, and the caller keeps `xdr`'s memory
    // until `sctxt` is released, success or not (`# Safety`).
    let ret = unsafe { crate::mapping::map_reply_msg(rdma, &mut sctxt, write_pcl, reply_pcl, xdr) };
    // Lent, not given: the caller still owns it.
    let _ = sctxt.into_raw();
    ret
}
same_signature!(svc_rdma_map_reply_msg);

/// `svc_rdma_send_error_msg`: answers the Call `rctxt` with an RDMA_ERROR
/// instead of a reply: ERR_VERS when `status` is `-EPROTONOSUPPORT` (an
/// unsupported transport version), ERR_CHUNK otherwise (the client's chunks
/// cannot carry the reply, or its header is malformed). The client can then
/// fail the RPC rather than wait for it. Takes `sctxt` in every case; a
/// message too short to carry an XID gets no answer.
///
/// # Safety
///
/// `rdma` points to a live transport; `sctxt` to its send ctxt, owned by the
/// caller, who gives it up; `rctxt` to the receive ctxt of the Call.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_send_error_msg(
    rdma: *mut sys::svcxprt_rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    status: c_int,
) {
    // SAFETY: `rdma` is live for the call, `sctxt` (one of its ctxts)
    // handed over and `rctxt` the Call being answered, owned by this
    // thread (`# Safety`).
    let (rdma, sctxt, rctxt) = unsafe {
        (
            Rdma::from_raw(rdma),
            Ctxt::from_raw(sctxt),
            RecvCtxt::from_raw(rctxt),
        )
    };
    if let Some(sctxt) = sctxt {
        crate::reply::send_error_msg(rdma, sctxt, rctxt, status);
    }
}
same_signature!(svc_rdma_send_error_msg);

/// `svc_rdma_sendto` (`xpo_sendto`): sends nfsd's reply in `rq_res` to the
/// Call being answered: result payloads by RDMA Write into the client's
/// Write chunks, the rest in the Send or, when the client offered one,
/// through its Reply chunk. A reply the chunks cannot carry is answered with
/// ERR_CHUNK. On return nothing of the request is held any more by this
/// path: the reply's pages belong to the posted Send until it completes.
/// Returns 0, or `-ENOTCONN` when no answer was possible, in which case the
/// connection has been closed so that the client retransmits.
///
/// # Safety
///
/// `rqstp` points to the request an nfsd thread is answering on an RDMA
/// transport (which the request keeps referenced), with the Call's receive
/// ctxt in `rq_xprt_ctxt` and the encoded reply in `rq_res`.
#[no_mangle]
pub unsafe extern "C" fn svc_rdma_sendto(rqstp: *mut sys::svc_rqst) -> c_int {
    // SAFETY: a request being answered on an RDMA transport, whose Call's
    // receive ctxt this thread owns (`# Safety`).
    let (rdma, rqst) = unsafe { Rqst::from_raw_mut(rqstp) };
    // SAFETY: the Call's receive ctxt, owned by this thread (`# Safety`),
    // not part of the request.
    let rctxt = unsafe { RecvCtxt::from_raw(rqst.recv_ctxt_ptr()) };
    crate::reply::sendto(rdma, rqst, rctxt)
}
same_signature!(svc_rdma_sendto);

/// `rs_stat_read`: one of the Send path's leak counters for the C shim's
/// read-only module parameters: `which` 0 is live send ctxts, 1 reply pages
/// held, 2 payload SGEs mapped (all three counted in the ctxts, see
/// [`crate::stats`]), 3 ctxts reclaimed at teardown; -1 for any other
/// `which`.
#[no_mangle]
pub extern "C" fn rs_stat_read(which: c_int) -> i64 {
    use kernel::sync::atomic::Relaxed;
    match which {
        0 => crate::stats::census().ctxts,
        1 => crate::stats::census().pages,
        2 => crate::stats::census().sges,
        3 => crate::stats::CTXTS_RECLAIMED.load(Relaxed),
        _ => -1,
    }
}
// A safe function and the header's (unsafe) declaration do not unify in
// `same_signature!` on rustc 1.85, the kernel's minimum: both must coerce
// to the one pointer type written here instead.
const _: [unsafe extern "C" fn(c_int) -> i64; 2] = [sys::rs_stat_read, rs_stat_read];
