// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Building and sending replies: `svc_rdma_sendto`, `send_reply_msg`,
//! `save_io_pages`, `send_error_msg` and `result_payload` of the C file.
//!
//! `svc_rdma_sendto` releases every resource of the request on return:
//! the send ctxt is a [`Ctxt`], which is either posted (the Send
//! completion then releases it and the pages moved into it) or dropped,
//! which queues it for release; and when no reply can be sent the
//! connection is closed, so the client retransmits elsewhere.

use crate::abstractions::events;
use crate::abstractions::recv_ctxt::RecvCtxt;
use crate::abstractions::rqst::Rqst;
use crate::abstractions::send_ctxt::Ctxt;
use crate::abstractions::xprt::Rdma;
use crate::ctxt;
use crate::mapping;
use crate::proto::encode::{self, FixedHeader};
use crate::proto::xdr::XdrWriter;
use crate::proto::{self, ErrCode, Proc, Segment, FIXED_HDR_LEN};
use crate::sq;
use kernel::error::{
    code::{E2BIG, EINVAL, EIO, EMSGSIZE, ENOMEM, ENOTCONN, EPROTONOSUPPORT},
    Error,
};

/// The errno of a core error, as C returns it.
fn errno(e: proto::Error) -> Error {
    match e {
        proto::Error::MsgSize => EMSGSIZE,
        proto::Error::TooBig => E2BIG,
    }
}

/// `svc_rdma_result_payload`: assigns a DDP-eligible result payload
/// (NFS READ or READLINK data, RFC 8267) of `length` bytes at `offset` in
/// the reply to the Call's next Write chunk.
///
/// The cursor moves on even when the payload does not fit, as in C, so a
/// later payload goes to the next chunk; the too-small chunk is then
/// echoed unused.
///
/// Different from C on purpose: a payload longer than its chunk is not
/// refused. C returns `-E2BIG`, and nfsd then fails the READ; but when the
/// READ was spliced (an NFSv4 READ that ends its COMPOUND), nfsd 7.3
/// leaves the file's page-cache pages it spliced in `rq_respages`,
/// past the `rq_next_page` it winds back, where the thread takes them for
/// its own reply pages later: a later reply encoded into them overwrites
/// the exported file's cached data (Documentation/upstream-reports.rst,
/// report 10). Here the payload simply stays in the reply, which is sent
/// inline when it fits and is otherwise answered with ERR_CHUNK, as any
/// reply too large for the client's chunks.
pub(crate) fn result_payload(rctxt: &mut RecvCtxt, offset: u32, length: u32) {
    if length == 0 {
        return;
    }
    let Some(chunk) = rctxt.next_result_payload_chunk() else {
        return;
    };
    if length <= chunk.length() {
        chunk.set_payload(offset, length);
    }
}

/// `svc_rdma_save_io_pages`: moves the reply's pages from the request to
/// the ctxt, so they stay until the Send completes, while
/// `svc_rqst_release_pages` skips them (their slots are NULL).
///
/// Fails closed, unlike C, which never checks: if the pages do not fit the
/// ctxt (`sc_maxpages`, a request's worth, so only with corrupted state),
/// nothing is moved and the caller closes the connection instead of
/// sending while pages the Send or its Writes use could be freed. Done at
/// most once per ctxt (a ctxt holding pages refuses more): a second move
/// would take the NULL slots the first one left.
///
/// Out of line: the error path's ERR_CHUNK reply moves pages too, and the
/// move's unrolled loop is not worth two copies.
#[inline(never)]
pub(crate) fn save_io_pages(rqst: &mut Rqst, ctxt: &mut Ctxt<'_>) -> Result<(), Error> {
    ctxt.take_reply_pages(rqst).ok_or(EIO)
}

/// `svc_rdma_send_error_msg`: replaces whatever header was built with an
/// RDMA_ERROR for `status` (`-EPROTONOSUPPORT` → ERR_VERS, else ERR_CHUNK)
/// and sends it alone, without any prepared Write WRs. Does not close the
/// connection.
pub(crate) fn send_error_msg(rdma: &Rdma, mut sctxt: Ctxt<'_>, rctxt: &RecvCtxt, status: i32) {
    let Some((xid, vers)) = rctxt.xid_vers() else {
        // Nothing to answer to; dropping `sctxt` puts it back.
        return;
    };
    let hdr = FixedHeader {
        xid,
        vers,
        credits: u32::from_be(rdma.fc_credits_be()),
    };
    let code = if status == EPROTONOSUPPORT.to_errno() {
        ErrCode::Vers
    } else {
        ErrCode::Chunk
    };
    let mut w = XdrWriter::new(sctxt.header_buf());
    if encode::encode_error(&mut w, &hdr, code).is_err() {
        return; // dropping `sctxt` puts it back
    }
    let len = w.len();
    sctxt.commit_header(len);
    match code {
        ErrCode::Vers => events::err_vers(xid),
        ErrCode::Chunk => events::err_chunk(xid),
    }
    // No remote invalidation, only the header, only the Send.
    sctxt.set_header_sge(u32::try_from(len).unwrap_or(u32::MAX));
    sctxt.set_send_opcode(0);
    sctxt.send_only();
    // On failure the returned ctxt is dropped, i.e. put back.
    let _ = sq::post_send(rdma, sctxt);
}

/// `svc_rdma_send_reply_msg`: maps the reply, moves its pages into the
/// ctxt, picks Send or Send With Invalidate, and posts.
///
/// # Safety
///
/// `sctxt` is a ctxt of `rdma`: the reply is mapped on `rdma`'s device and
/// unmapped on the ctxt's.
unsafe fn send_reply_msg<'r>(
    rdma: &Rdma,
    mut sctxt: Ctxt<'r>,
    rctxt: &RecvCtxt,
    rqst: &mut Rqst,
) -> Result<(), (Error, Ctxt<'r>)> {
    // SAFETY: `sctxt` is `rdma`'s (`# Safety`). On success the reply's
    // pages (its head and tail live in them too) are moved into the ctxt
    // just below and kept until its release. On any failure, that move's included, the error labels
    // undo what is still mapped before the request frees its pages:
    // `put_ctxt` with `unmap_payload_sges`, or, for an RDMA_ERROR,
    // `send_error_msg`'s `set_header_sge`, which undoes them too.
    let ret = unsafe {
        mapping::map_reply_msg(
            rdma,
            &mut sctxt,
            rctxt.write_pcl(),
            rctxt.reply_pcl(),
            rqst.res(),
        )
    };
    if ret < 0 {
        return Err((Error::from_errno(ret), sctxt));
    }
    if let Err(e) = save_io_pages(rqst, &mut sctxt) {
        return Err((e, sctxt));
    }
    sctxt.set_send_opcode(rctxt.inv_rkey());
    sq::post_send(rdma, sctxt)
}

/// Encodes the RDMA_MSG/RDMA_NOMSG header of a reply into `sctxt`.
fn encode_reply_header(
    rdma: &Rdma,
    sctxt: &mut Ctxt<'_>,
    rctxt: &mut RecvCtxt,
    rc_size: u32,
) -> Result<(), Error> {
    // A Call that reached nfsd was decoded, so it is longer than its XID;
    // should it not be, nothing can be answered.
    let (xid, vers) = rctxt.xid_vers().ok_or(EINVAL)?;
    let hdr = FixedHeader {
        xid,
        vers,
        credits: u32::from_be(rdma.fc_credits_be()),
    };
    let (write_pcl, reply_chunk) = rctxt.lists_for_reply();
    // No Write chunk (used or not: every one offered is echoed) and no
    // Reply chunk, as most replies: the whole header in one reservation.
    if reply_chunk.is_none() && write_pcl.is_empty() {
        let mut w = XdrWriter::new(sctxt.header_buf());
        let r = encode::encode_no_chunks(&mut w, &hdr);
        let len = w.len();
        sctxt.commit_header(len);
        return r.map(|_| ()).map_err(errno);
    }
    let proc_ = if reply_chunk.is_some() {
        Proc::NoMsg
    } else {
        Proc::Msg
    };
    let reply = reply_chunk.map(|c| c.as_reply_chunk());
    let (buf, tracer) = sctxt.header_buf_traced();
    let mut trace = |segno: u32, seg: &Segment, length: u32| {
        events::encode_wseg(&tracer, segno, seg, length);
    };
    let mut w = XdrWriter::new(buf);
    let r = encode::encode_fixed(&mut w, &hdr, proc_)
        .and_then(|_| encode::encode_read_list(&mut w))
        .and_then(|_| {
            encode::encode_write_list_traced(&mut w, write_pcl.write_chunks(), &mut trace)
        })
        .and_then(|_| encode::encode_reply_chunk_traced(&mut w, reply, rc_size, &mut trace));
    let len = w.len();
    // Recorded even on failure, as C's stream would be; the ctxt is then
    // discarded anyway.
    sctxt.commit_header(len);
    r.map(|_| ()).map_err(errno)
}

/// `svc_rdma_sendto`: sends the reply to one RPC Call (`xpo_sendto`).
///
/// Write chunks are written first, then the Reply chunk or the inline reply
/// goes with the transport header in the Send. Returns 0, or `-ENOTCONN`
/// after closing the connection when no reply could be sent. A reply too
/// big for the client's chunks (`-E2BIG`, `-EINVAL`) is answered with
/// ERR_CHUNK instead, keeping the connection.
pub(crate) fn sendto(rdma: &Rdma, rqst: &mut Rqst, rctxt: &mut RecvCtxt) -> i32 {
    // Test builds (`RPCRDMA_RS_SLOWDOWN=y`) only: about 160 instructions of
    // wasted work per reply, to show that the cost gate of the profile
    // smoke fails a costlier Send path (Documentation/benchmarks.md).
    #[cfg(rpcrdma_slowdown)]
    for i in 0..40u32 {
        core::hint::black_box(i);
    }
    if rdma.is_dead() {
        return drop_connection(rdma, rqst, ENOTCONN);
    }
    let Some(mut sctxt) = ctxt::send_ctxt_get(rdma) else {
        return drop_connection(rdma, rqst, ENOMEM);
    };
    // C's first `xdr_reserve_space`: room for the fixed header at least.
    if sctxt.header_buf_size() < FIXED_HDR_LEN {
        return put_ctxt(rdma, rqst, sctxt, EMSGSIZE);
    }
    // SAFETY: the reply's pages outlive the Writes' mappings: on success
    // they are moved into the ctxt (`send_reply_msg`, or `save_io_pages`
    // for an RDMA_ERROR) and released with it; every other exit goes
    // through `put_ctxt`, which undoes the Writes before the request frees
    // its pages. The transport was alive at the start of this function
    // (`is_dead`), and only teardown, on its own thread, destroys the QP.
    let ret = unsafe { sctxt.prepare_write_list(rctxt, rqst.res()) };
    if ret < 0 {
        return put_ctxt(rdma, rqst, sctxt, Error::from_errno(ret));
    }
    let mut rc_size = 0u32;
    if !rctxt.reply_pcl().is_empty() {
        // SAFETY: as for the Write list, above.
        let ret =
            unsafe { sctxt.prepare_reply_chunk(rctxt.write_pcl(), rctxt.reply_pcl(), rqst.res()) };
        if ret < 0 {
            return send_err(rdma, rqst, rctxt, sctxt, Error::from_errno(ret));
        }
        // Different from C on purpose: 7.3 does not check the chain's size
        // here (the Write chunks and Reads are checked), so a Reply chunk of
        // many small segments on a transport with a small SQ made a chain
        // that `sq_wait` can never reserve: the nfsd thread slept until the
        // connection closed, and every later sender on it behind it. Such a
        // chunk is unusable for this reply, as a too-small one is: ERR_CHUNK.
        if u32::try_from(sctxt.sqecount()).map_or(true, |n| n > rdma.sq_depth()) {
            return send_err(rdma, rqst, rctxt, sctxt, EINVAL);
        }
        let Some(n) = u32::try_from(ret)
            .ok()
            .and_then(|len| encode::reply_chunk_bytes(len, rctxt.write_pcl().write_chunks()))
        else {
            return put_ctxt(rdma, rqst, sctxt, EMSGSIZE);
        };
        rc_size = n;
    }
    if let Err(e) = encode_reply_header(rdma, &mut sctxt, rctxt, rc_size) {
        return put_ctxt(rdma, rqst, sctxt, e);
    }
    // SAFETY: `sctxt` came from `send_ctxt_get(rdma)`.
    match unsafe { send_reply_msg(rdma, sctxt, rctxt, rqst) } {
        Ok(()) => 0,
        Err((e, sctxt)) => send_err(rdma, rqst, rctxt, sctxt, e),
    }
}

/// The `send_err` label: a reply that does not fit the client's chunks is
/// answered with ERR_CHUNK (RFC 8166 §4.5.3); anything else closes.
#[cold]
fn send_err(rdma: &Rdma, rqst: &mut Rqst, rctxt: &RecvCtxt, mut sctxt: Ctxt<'_>, e: Error) -> i32 {
    if e != E2BIG && e != EINVAL {
        return put_ctxt(rdma, rqst, sctxt, e);
    }
    // The pages the prepared Writes map stay until the ctxt is released.
    if let Err(e) = save_io_pages(rqst, &mut sctxt) {
        return put_ctxt(rdma, rqst, sctxt, e);
    }
    send_error_msg(rdma, sctxt, rctxt, e.to_errno());
    0
}

/// The `put_ctxt` label: release the ctxt, then close.
#[cold]
fn put_ctxt(rdma: &Rdma, rqst: &Rqst, mut sctxt: Ctxt<'_>, e: Error) -> i32 {
    // The request frees its reply pages on return, before the ctxt is
    // released (at the next drain): no mapping of them may outlive them,
    // neither a payload SGE (mapped replies whose pages could not be
    // moved in) nor a chunk Write built for the reply (C leaves those to
    // the release). Nothing was posted.
    sctxt.release_chunk_writes();
    sctxt.unmap_payload_sges();
    drop(sctxt);
    drop_connection(rdma, rqst, e)
}

/// The `drop_connection` label: no reply is possible, so the connection is
/// closed and the client will retransmit. Always `-ENOTCONN`, as in C.
#[cold]
fn drop_connection(rdma: &Rdma, rqst: &Rqst, e: Error) -> i32 {
    events::send_err(rqst, e.to_errno());
    rdma.deferred_close();
    ENOTCONN.to_errno()
}
