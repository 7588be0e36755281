// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Building and sending replies: `svc_rdma_sendto`, `send_reply_msg`,
//! `save_io_pages`, `send_error_msg` and `result_payload` of the C file.
//!
//! `svc_rdma_sendto` releases every resource of the request on return:
//! the send ctxt is a [`SendCtxt`], which is either posted (the Send
//! completion then releases it and the pages moved into it) or dropped,
//! which queues it for release; and when no reply can be sent the
//! connection is closed, so the client retransmits elsewhere.

use crate::ctxt::{self, SendCtxt};
use crate::mapping;
use crate::pcl;
use crate::proto::encode::{self, FixedHeader, ReplyChunk};
use crate::proto::xdr::XdrWriter;
use crate::proto::{self, ErrCode, Proc, Segment, FIXED_HDR_LEN};
use crate::sq;
use crate::sys;
use crate::xprt::Rdma;
use core::ptr::addr_of_mut;
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

/// The ctxt's transport header buffer, for an encoder.
///
/// # Safety
///
/// The caller owns `ctxt`; the buffer holds `max_req_size` bytes.
unsafe fn header_buf<'a>(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) -> &'a mut [u8] {
    // SAFETY: `sc_xprt_buf` is `max_req_size` bytes, allocated with the
    // ctxt, and the caller owns the ctxt, so nobody else touches the buffer.
    unsafe {
        core::slice::from_raw_parts_mut((*ctxt).sc_xprt_buf.cast::<u8>(), rdma.max_req_size())
    }
}

/// Records a header of `len` bytes in `sc_hdrbuf`/`sc_stream`, as the
/// `xdr_reserve_space` calls of C leave them.
///
/// # Safety
///
/// The caller owns `ctxt`; `len` is within its header buffer.
unsafe fn commit_header(ctxt: *mut sys::svc_rdma_send_ctxt, len: usize) {
    // SAFETY: the caller owns the ctxt, and `len` is within its buffer, so
    // the stream pointer stays inside it.
    unsafe {
        (*ctxt).sc_hdrbuf.head[0].iov_len = len;
        (*ctxt).sc_hdrbuf.len = len as u32;
        (*ctxt).sc_stream.p = (*ctxt).sc_xprt_buf.cast::<u8>().add(len).cast();
    }
}

/// The Call's XID and version words (the first two of its header), from
/// the bytes actually received: `None` for a message shorter than an XID,
/// which the Receive path also hands to `svc_rdma_send_error_msg`.
///
/// # Safety
///
/// `rctxt` is a received Call.
unsafe fn call_xid_vers(rctxt: *const sys::svc_rdma_recv_ctxt) -> Option<(u32, u32)> {
    // SAFETY: per the caller; the receive buffer holds `rc_byte_len` bytes
    // of the Call (and is larger than eight bytes).
    let received = unsafe {
        let len = ((*rctxt).rc_byte_len as usize).min(8);
        core::slice::from_raw_parts((*rctxt).rc_recv_buf.cast::<u8>(), len)
    };
    encode::error_reply_ids(received)
}

/// `svc_rdma_result_payload`: assigns a DDP-eligible result payload
/// (NFS READ or READLINK data, RFC 8267) of `length` bytes at `offset` in
/// the reply to the Call's next Write chunk.
///
/// The cursor moves on even when the payload does not fit, as in C, so a
/// later payload goes to the next chunk; the too-small chunk is then
/// echoed unused. `E2BIG` makes nfsd fail the operation.
///
/// # Safety
///
/// `rctxt` is the receive ctxt of the Call being answered, owned by the
/// calling nfsd thread.
pub(crate) unsafe fn result_payload(
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    offset: u32,
    length: u32,
) -> Result<(), Error> {
    // SAFETY: `rctxt` is the Call's receive ctxt, owned by this thread.
    let chunk = unsafe { (*rctxt).rc_cur_result_payload };
    if length == 0 || chunk.is_null() {
        return Ok(());
    }
    // SAFETY: the cursor is a chunk of the Call's Write list.
    unsafe {
        (*rctxt).rc_cur_result_payload =
            crate::pcl::pcl_next_chunk(addr_of_mut!((*rctxt).rc_write_pcl), chunk);
        if length > (*chunk).ch_length {
            return Err(E2BIG);
        }
        (*chunk).ch_position = offset;
        (*chunk).ch_payload_length = length;
    }
    Ok(())
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
/// # Safety
///
/// `rqstp` is the request being answered, the caller owns `ctxt`.
pub(crate) unsafe fn save_io_pages(
    rqstp: *mut sys::svc_rqst,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) -> Result<(), Error> {
    // SAFETY: per the caller; `rq_next_page` points into `rq_respages`.
    unsafe {
        if (*ctxt).sc_page_count != 0 {
            return Err(EIO);
        }
        let respages = (*rqstp).rq_respages;
        let pages =
            usize::try_from((*rqstp).rq_next_page.offset_from(respages)).map_err(|_| EIO)?;
        if pages > (*ctxt).sc_maxpages {
            return Err(EIO);
        }
        let slots = (*ctxt).sc_pages;
        for i in 0..pages {
            *slots.add(i) = *respages.add(i);
            *respages.add(i) = core::ptr::null_mut();
        }
        // pages <= sc_maxpages, which is a C int's worth.
        (*ctxt).sc_page_count = i32::try_from(pages).map_err(|_| EIO)?;
        crate::stats::add(
            &crate::stats::PAGES_HELD,
            i64::try_from(pages).unwrap_or(i64::MAX),
        );
    }
    Ok(())
}

/// `svc_rdma_send_error_msg`: replaces whatever header was built with an
/// RDMA_ERROR for `status` (`-EPROTONOSUPPORT` → ERR_VERS, else ERR_CHUNK)
/// and sends it alone, without any prepared Write WRs. Does not close the
/// connection.
///
/// # Safety
///
/// `rctxt` is the Call being answered; `sctxt` is consumed.
pub(crate) unsafe fn send_error_msg(
    rdma: &Rdma,
    sctxt: SendCtxt,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    status: i32,
) {
    let p = sctxt.as_ptr();
    // SAFETY: `rctxt` is a received Call (`# Safety`).
    let Some((xid, vers)) = (unsafe { call_xid_vers(rctxt) }) else {
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
    // SAFETY: we own the ctxt.
    let mut w = XdrWriter::new(unsafe { header_buf(rdma, p) });
    if encode::encode_error(&mut w, &hdr, code).is_err() {
        return; // dropping `sctxt` puts it back
    }
    let len = w.len();
    // SAFETY: we own the ctxt; the header is `len` bytes of its buffer.
    unsafe {
        commit_header(p, len);
        match code {
            ErrCode::Vers => crate::trace::err_vers(xid.to_be()),
            ErrCode::Chunk => crate::trace::err_chunk(xid.to_be()),
        }
        // No remote invalidation, only the header, only the Send.
        (*p).sc_send_wr.num_sge = 1;
        (*p).sc_send_wr.opcode = sys::ib_wr_opcode_IB_WR_SEND;
        if let Some(sge0) = ctxt::sges(rdma, p).first_mut() {
            sge0.length = len as u32;
        }
        (*p).sc_wr_chain = addr_of_mut!((*p).sc_send_wr);
        (*p).sc_sqecount = 1;
    }
    // On failure the returned ctxt is dropped, i.e. put back.
    let _ = sq::post_send(rdma, sctxt);
}

/// `svc_rdma_send_reply_msg`: maps the reply, moves its pages into the
/// ctxt, picks Send or Send With Invalidate, and posts.
///
/// # Safety
///
/// `rctxt` and `rqstp` are the Call and request being answered.
unsafe fn send_reply_msg(
    rdma: &Rdma,
    sctxt: SendCtxt,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    rqstp: *mut sys::svc_rqst,
) -> Result<(), (Error, SendCtxt)> {
    let p = sctxt.as_ptr();
    // SAFETY: per the caller; we own the ctxt.
    let ret = unsafe {
        mapping::map_reply_msg(
            rdma,
            p,
            addr_of_mut!((*rctxt).rc_write_pcl),
            addr_of_mut!((*rctxt).rc_reply_pcl),
            addr_of_mut!((*rqstp).rq_res),
        )
    };
    if ret < 0 {
        return Err((Error::from_errno(ret), sctxt));
    }
    // SAFETY: per the caller; we own the ctxt.
    if let Err(e) = unsafe { save_io_pages(rqstp, p) } {
        return Err((e, sctxt));
    }
    // SAFETY: the Call being answered and our ctxt.
    unsafe {
        let inv_rkey = (*rctxt).rc_inv_rkey;
        if inv_rkey != 0 {
            (*p).sc_send_wr.opcode = sys::ib_wr_opcode_IB_WR_SEND_WITH_INV;
            *(*p).sc_send_wr.ex.invalidate_rkey.as_mut() = inv_rkey;
        } else {
            (*p).sc_send_wr.opcode = sys::ib_wr_opcode_IB_WR_SEND;
        }
    }
    sq::post_send(rdma, sctxt)
}

/// Encodes the RDMA_MSG/RDMA_NOMSG header of a reply into `sctxt`.
///
/// # Safety
///
/// `rctxt` is the Call being answered; the caller owns `sctxt`.
unsafe fn encode_reply_header(
    rdma: &Rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    rc_size: u32,
) -> Result<(), Error> {
    // SAFETY: per the caller. A Call that reached nfsd was decoded, so it
    // is longer than its XID; should it not be, nothing can be answered.
    let (xid, vers) = unsafe { call_xid_vers(rctxt) }.ok_or(EINVAL)?;
    let hdr = FixedHeader {
        xid,
        vers,
        credits: u32::from_be(rdma.fc_credits_be()),
    };
    // SAFETY: per the caller; the lists are the Call's, unchanged now.
    let (write_pcl, reply_pcl) = unsafe {
        (
            addr_of_mut!((*rctxt).rc_write_pcl),
            addr_of_mut!((*rctxt).rc_reply_pcl),
        )
    };
    // SAFETY: `reply_pcl` is the Call's parsed Reply chunk list.
    let reply_chunk = unsafe { pcl::pcl_first_chunk(reply_pcl) };
    let proc_ = if reply_chunk.is_null() {
        Proc::Msg
    } else {
        Proc::NoMsg
    };
    let reply = if reply_chunk.is_null() {
        None
    } else {
        // SAFETY: the Call's Reply chunk, ours while answering.
        Some(unsafe {
            ReplyChunk {
                length: (*reply_chunk).ch_length,
                payload_length: &mut (*reply_chunk).ch_payload_length,
                segments: pcl::segments(reply_chunk),
            }
        })
    };
    let mut trace = |segno: u32, seg: &Segment, length: u32| {
        // SAFETY: a tracepoint reading the ctxt we own.
        unsafe { crate::trace::encode_wseg(sctxt, segno, seg.handle, length, seg.offset) };
    };
    // SAFETY: we own the ctxt.
    let mut w = XdrWriter::new(unsafe { header_buf(rdma, sctxt) });
    let r = encode::encode_fixed(&mut w, &hdr, proc_)
        .and_then(|_| encode::encode_read_list(&mut w))
        .and_then(|_| {
            encode::encode_write_list_traced(
                &mut w,
                // SAFETY: the Call's Write list, unchanged while answering.
                unsafe { pcl::write_chunks(write_pcl) },
                &mut trace,
            )
        })
        .and_then(|_| encode::encode_reply_chunk_traced(&mut w, reply, rc_size, &mut trace));
    let len = w.len();
    // Recorded even on failure, as C's stream would be; the ctxt is then
    // discarded anyway.
    // SAFETY: `len` is within the buffer.
    unsafe { commit_header(sctxt, len) };
    r.map(|_| ()).map_err(errno)
}

/// `svc_rdma_sendto`: sends the reply to one RPC Call (`xpo_sendto`).
///
/// Write chunks are written first, then the Reply chunk or the inline reply
/// goes with the transport header in the Send. Returns 0, or `-ENOTCONN`
/// after closing the connection when no reply could be sent. A reply too
/// big for the client's chunks (`-E2BIG`, `-EINVAL`) is answered with
/// ERR_CHUNK instead, keeping the connection.
///
/// # Safety
///
/// `rqstp` is an nfsd thread's request on an RDMA transport, with
/// `rq_xprt_ctxt` the Call's receive ctxt.
pub(crate) unsafe fn sendto(rqstp: *mut sys::svc_rqst) -> i32 {
    // SAFETY: the request references its transport for the whole call
    // (`# Safety`), so the container lives at least as long as `rdma`.
    let rdma = unsafe {
        Rdma::from_raw(kernel::container_of!(
            (*rqstp).rq_xprt,
            sys::svcxprt_rdma,
            sc_xprt
        ))
    };
    // SAFETY: `rqstp` is a live request (`# Safety`).
    let rctxt = unsafe { (*rqstp).rq_xprt_ctxt }.cast::<sys::svc_rdma_recv_ctxt>();

    // SAFETY: the transport is live.
    if unsafe { sys::rs_xprt_is_dead(rdma.as_ptr()) } {
        return drop_connection(rdma, rqstp, ENOTCONN);
    }
    let Some(sctxt) = ctxt::send_ctxt_get(rdma) else {
        return drop_connection(rdma, rqstp, ENOMEM);
    };
    let p = sctxt.as_ptr();
    if rdma.max_req_size() < FIXED_HDR_LEN {
        return put_ctxt(rdma, rqstp, sctxt, EMSGSIZE);
    }
    // SAFETY: the Call, the reply and our ctxt.
    let ret = unsafe {
        sys::svc_rdma_prepare_write_list(rdma.as_ptr(), rctxt, p, addr_of_mut!((*rqstp).rq_res))
    };
    if ret < 0 {
        return put_ctxt(rdma, rqstp, sctxt, Error::from_errno(ret));
    }
    let mut rc_size = 0u32;
    // SAFETY: the Call's Reply chunk list.
    if !unsafe { pcl::pcl_is_empty(addr_of_mut!((*rctxt).rc_reply_pcl)) } {
        // SAFETY: the Call's chunk lists and the reply, which this thread
        // owns while answering, and our ctxt, whose WR chain it extends.
        let ret = unsafe {
            sys::svc_rdma_prepare_reply_chunk(
                rdma.as_ptr(),
                addr_of_mut!((*rctxt).rc_write_pcl),
                addr_of_mut!((*rctxt).rc_reply_pcl),
                p,
                addr_of_mut!((*rqstp).rq_res),
            )
        };
        if ret < 0 {
            // SAFETY: `rqstp` and `rctxt` are the request and Call being
            // answered (`# Safety`).
            return unsafe { send_err(rdma, rqstp, rctxt, sctxt, Error::from_errno(ret)) };
        }
        // Different from C on purpose: 7.3 does not check the chain's size
        // here (the Write chunks and Reads are checked), so a Reply chunk of
        // many small segments on a transport with a small SQ made a chain
        // that `sq_wait` can never reserve: the nfsd thread slept until the
        // connection closed, and every later sender on it behind it. Such a
        // chunk is unusable for this reply, as a too-small one is: ERR_CHUNK.
        // SAFETY: our ctxt.
        let sqecount = unsafe { (*p).sc_sqecount };
        if u32::try_from(sqecount).map_or(true, |n| n > rdma.sq_depth()) {
            // SAFETY: `rqstp` and `rctxt` are the request and Call being
            // answered (`# Safety`).
            return unsafe { send_err(rdma, rqstp, rctxt, sctxt, EINVAL) };
        }
        // SAFETY: the Call's Write list, unchanged while answering.
        let writes = unsafe { pcl::write_chunks(addr_of_mut!((*rctxt).rc_write_pcl)) };
        let Some(n) = u32::try_from(ret)
            .ok()
            .and_then(|len| encode::reply_chunk_bytes(len, writes))
        else {
            return put_ctxt(rdma, rqstp, sctxt, EMSGSIZE);
        };
        rc_size = n;
    }
    // SAFETY: `rctxt` is the Call being answered; we own the ctxt `p`.
    if let Err(e) = unsafe { encode_reply_header(rdma, p, rctxt, rc_size) } {
        return put_ctxt(rdma, rqstp, sctxt, e);
    }
    // SAFETY: `rctxt` and `rqstp` are the Call and request being answered.
    match unsafe { send_reply_msg(rdma, sctxt, rctxt, rqstp) } {
        Ok(()) => 0,
        // SAFETY: the same request and Call, the ctxt handed back.
        Err((e, sctxt)) => unsafe { send_err(rdma, rqstp, rctxt, sctxt, e) },
    }
}

/// The `send_err` label: a reply that does not fit the client's chunks is
/// answered with ERR_CHUNK (RFC 8166 §4.5.3); anything else closes.
///
/// # Safety
///
/// As for [`sendto`].
unsafe fn send_err(
    rdma: &Rdma,
    rqstp: *mut sys::svc_rqst,
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    sctxt: SendCtxt,
    e: Error,
) -> i32 {
    if e != E2BIG && e != EINVAL {
        return put_ctxt(rdma, rqstp, sctxt, e);
    }
    // The pages the prepared Writes map stay until the ctxt is released.
    // SAFETY: `rqstp` is the request being answered and we own `sctxt`.
    if let Err(e) = unsafe { save_io_pages(rqstp, sctxt.as_ptr()) } {
        return put_ctxt(rdma, rqstp, sctxt, e);
    }
    // SAFETY: per the caller; the ctxt is consumed.
    unsafe { send_error_msg(rdma, sctxt, rctxt, e.to_errno()) };
    0
}

/// The `put_ctxt` label: release the ctxt, then close.
fn put_ctxt(rdma: &Rdma, rqstp: *mut sys::svc_rqst, sctxt: SendCtxt, e: Error) -> i32 {
    drop(sctxt);
    drop_connection(rdma, rqstp, e)
}

/// The `drop_connection` label: no reply is possible, so the connection is
/// closed and the client will retransmit. Always `-ENOTCONN`, as in C.
fn drop_connection(rdma: &Rdma, rqstp: *mut sys::svc_rqst, e: Error) -> i32 {
    // SAFETY: a tracepoint reading the request.
    unsafe { crate::trace::send_err(rqstp, e.to_errno()) };
    rdma.deferred_close();
    ENOTCONN.to_errno()
}
