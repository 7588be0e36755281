// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Transport header encoders of `svc_rdma_sendto.c`, by the same names.
//!
//! Each returns the number of bytes it appended, or [`Error::MsgSize`] when
//! the header buffer is full (the items before the failing one stay
//! written, as in C; the caller then discards the whole header).

use super::xdr::XdrWriter;
use super::{ErrCode, Error, Proc, Segment, FIXED_HDR_LEN, SEGMENT_LEN};

/// A chunk of the Call's Write list, as the encoders need it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct WriteChunk<'a> {
    /// Bytes of result payload the server placed in this chunk; 0 when the
    /// chunk went unused.
    pub(crate) payload_length: u32,
    /// The chunk's segments, in Call order.
    pub(crate) segments: &'a [Segment],
}

/// The Call's Reply chunk, as [`encode_reply_chunk`] needs it.
#[derive(Debug)]
pub(crate) struct ReplyChunk<'a> {
    /// Total length of the chunk's segments (`ch_length`).
    pub(crate) length: u32,
    /// Set to the reply length once it is known to fit, as C does.
    pub(crate) payload_length: &'a mut u32,
    /// The chunk's segments, in Call order.
    pub(crate) segments: &'a [Segment],
}

/// The four words every transport header starts with.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FixedHeader {
    /// The Call's XID, echoed.
    pub(crate) xid: u32,
    /// The Call's version word, echoed.
    pub(crate) vers: u32,
    /// Credits granted to the client.
    pub(crate) credits: u32,
}

/// Writes xid, vers, credits and `proc`.
pub(crate) fn encode_fixed(
    w: &mut XdrWriter<'_>,
    hdr: &FixedHeader,
    proc_: Proc,
) -> Result<usize, Error> {
    w.put_words(&[hdr.xid, hdr.vers, hdr.credits, proc_ as u32])?;
    Ok(FIXED_HDR_LEN)
}

/// The header of a reply without chunks (no Write chunk, no Reply chunk:
/// most replies): xid, vers, credits, RDMA_MSG, and three "absent" words
/// for the Read list, the Write list and the Reply chunk, in one
/// reservation. The same 28 bytes as [`encode_fixed`], [`encode_read_list`],
/// [`encode_write_list`] of no chunks and [`encode_reply_chunk`] of none
/// (test vector V1); all or nothing is written.
pub(crate) fn encode_no_chunks(w: &mut XdrWriter<'_>, hdr: &FixedHeader) -> Result<usize, Error> {
    w.put_words(&[hdr.xid, hdr.vers, hdr.credits, Proc::Msg as u32, 0, 0, 0])?;
    Ok(FIXED_HDR_LEN + 12)
}

/// `svc_rdma_encode_read_list`: a version 1 reply never carries a Read
/// list, so this is one "absent" word.
pub(crate) fn encode_read_list(w: &mut XdrWriter<'_>) -> Result<usize, Error> {
    w.put_u32(0)?;
    Ok(4)
}

/// `svc_rdma_encode_write_segment`: one segment whose length is the part
/// of `remaining` it carries; `remaining` is reduced by that much.
pub(crate) fn encode_write_segment(
    w: &mut XdrWriter<'_>,
    seg: &Segment,
    remaining: &mut u32,
) -> Result<usize, Error> {
    let length = (*remaining).min(seg.length);
    // The offset is an XDR hyper: high word first.
    w.put_words(&[
        seg.handle,
        length,
        (seg.offset >> 32) as u32,
        seg.offset as u32,
    ])?;
    // `length` is at most `remaining`.
    *remaining = remaining.saturating_sub(length);
    Ok(SEGMENT_LEN)
}

/// Called for each segment encoded, with its index, the segment and the
/// length written for it: the kernel fires `svcrdma_encode_wseg` from it.
/// A type parameter, not a `dyn`: the kernel's closure is a static-key test
/// that must stay inline, as C's tracepoint is.
pub(crate) trait SegmentTrace: FnMut(u32, &Segment, u32) {}
impl<T: FnMut(u32, &Segment, u32)> SegmentTrace for T {}

/// `svc_rdma_encode_write_chunk`: "present", the segment count, then every
/// segment. Segments after the payload ran out are still sent, with length
/// 0: the client counts on the segment count it offered.
// The untraced form is for the vectors (KUnit, host tests) only.
#[allow(dead_code)]
pub(crate) fn encode_write_chunk(
    w: &mut XdrWriter<'_>,
    chunk: &WriteChunk<'_>,
) -> Result<usize, Error> {
    encode_write_chunk_traced(w, chunk, &mut |_, _, _| {})
}

/// [`encode_write_chunk`], reporting each segment to `trace`.
pub(crate) fn encode_write_chunk_traced(
    w: &mut XdrWriter<'_>,
    chunk: &WriteChunk<'_>,
    trace: &mut impl SegmentTrace,
) -> Result<usize, Error> {
    let segcount = u32::try_from(chunk.segments.len()).map_err(|_| Error::MsgSize)?;
    // Two reservations, as in C: "present" stays written if the count fails.
    w.put_u32(1)?;
    w.put_u32(segcount)?;
    let mut len = 8usize;
    let mut remaining = chunk.payload_length;
    // A counter of our own: `(0u32..)` and `enumerate` inherit the kernel's
    // overflow checks, which would put a panic path here.
    let mut segno = 0u32;
    for seg in chunk.segments {
        let before = remaining;
        let seg_len = encode_write_segment(w, seg, &mut remaining)?;
        // Lengths count bytes of the writer's buffer: checked, not panicking.
        len = len.checked_add(seg_len).ok_or(Error::MsgSize)?;
        trace(segno, seg, before.saturating_sub(remaining));
        // At most `segcount`, a u32.
        segno = segno.wrapping_add(1);
    }
    Ok(len)
}

/// `svc_rdma_encode_write_list`: every Write chunk of the Call in Call
/// order, used or not, then the list terminator.
// The untraced form is for the vectors (KUnit, host tests) only.
#[allow(dead_code)]
pub(crate) fn encode_write_list<'a>(
    w: &mut XdrWriter<'_>,
    chunks: impl IntoIterator<Item = WriteChunk<'a>>,
) -> Result<usize, Error> {
    encode_write_list_traced(w, chunks, &mut |_, _, _| {})
}

/// [`encode_write_list`], reporting each segment to `trace`.
pub(crate) fn encode_write_list_traced<'a>(
    w: &mut XdrWriter<'_>,
    chunks: impl IntoIterator<Item = WriteChunk<'a>>,
    trace: &mut impl SegmentTrace,
) -> Result<usize, Error> {
    let mut len = 0usize;
    for chunk in chunks {
        let chunk_len = encode_write_chunk_traced(w, &chunk, trace)?;
        len = len.checked_add(chunk_len).ok_or(Error::MsgSize)?;
    }
    w.put_u32(0)?;
    len.checked_add(4).ok_or(Error::MsgSize)
}

/// The number of reply bytes that went into the Reply chunk: the reply's
/// `reply_len` bytes minus the result payloads that went into Write chunks,
/// each with its XDR padding (the regions `pcl_process_nonpayloads` hands
/// to the Reply chunk's writer; the chunks up to the first unused one).
///
/// Different from C on purpose: 7.3 encodes the Reply chunk as if it held
/// the whole reply (`svc_rdma_prepare_reply_chunk` returns `xdr->len`), so
/// a Call with both a Write list and a Reply chunk (legal, RFC 8166
/// section 3.4.6; the Linux client never sends one) gets segment lengths
/// that overstate what was written, or, when the whole reply exceeds the
/// chunk, a dropped connection. `None` when the payloads exceed the reply,
/// which the Receive path's checks rule out.
pub(crate) fn reply_chunk_bytes<'a>(
    reply_len: u32,
    write_chunks: impl IntoIterator<Item = WriteChunk<'a>>,
) -> Option<u32> {
    let mut left = reply_len;
    for chunk in write_chunks {
        if chunk.payload_length == 0 {
            break;
        }
        let padded = chunk.payload_length.checked_add(3)? & !3;
        left = left.checked_sub(padded)?;
    }
    Some(left)
}

/// `svc_rdma_encode_reply_chunk`: "absent" without a Reply chunk; else the
/// chunk with its segment lengths covering `length` bytes of reply.
///
/// A reply longer than the chunk is [`Error::TooBig`], with nothing written
/// and the chunk untouched, so the caller can answer ERR_CHUNK.
// The untraced form is for the vectors (KUnit, host tests) only.
#[allow(dead_code)]
pub(crate) fn encode_reply_chunk(
    w: &mut XdrWriter<'_>,
    reply: Option<ReplyChunk<'_>>,
    length: u32,
) -> Result<usize, Error> {
    encode_reply_chunk_traced(w, reply, length, &mut |_, _, _| {})
}

/// [`encode_reply_chunk`], reporting each segment to `trace`.
pub(crate) fn encode_reply_chunk_traced(
    w: &mut XdrWriter<'_>,
    reply: Option<ReplyChunk<'_>>,
    length: u32,
    trace: &mut impl SegmentTrace,
) -> Result<usize, Error> {
    let Some(chunk) = reply else {
        w.put_u32(0)?;
        return Ok(4);
    };
    if length > chunk.length {
        return Err(Error::TooBig);
    }
    *chunk.payload_length = length;
    encode_write_chunk_traced(
        w,
        &WriteChunk {
            payload_length: length,
            segments: chunk.segments,
        },
        trace,
    )
}

/// The XID and version an RDMA_ERROR echoes, from the first bytes of the
/// Call as received (`received` holds at most its first eight bytes).
///
/// A message too short to carry an XID gets no answer: past the received
/// bytes the receive buffer holds what an earlier message left there, which
/// the C code echoes to the peer as the XID. A missing version word reads as
/// version 1, for the same reason.
pub(crate) fn error_reply_ids(received: &[u8]) -> Option<(u32, u32)> {
    let xid: [u8; 4] = received.get(0..4)?.try_into().ok()?;
    let vers = match received.get(4..8) {
        Some(v) => u32::from_be_bytes(v.try_into().ok()?),
        None => super::RPCRDMA_VERSION,
    };
    Some((u32::from_be_bytes(xid), vers))
}

/// The RDMA_ERROR header of `svc_rdma_send_error_msg`. ERR_VERS carries
/// the range of versions this server speaks: 1 to 1.
pub(crate) fn encode_error(
    w: &mut XdrWriter<'_>,
    hdr: &FixedHeader,
    code: ErrCode,
) -> Result<usize, Error> {
    let start = w.len();
    encode_fixed(w, hdr, Proc::Error)?;
    match code {
        ErrCode::Vers => w.put_words(&[
            ErrCode::Vers as u32,
            super::RPCRDMA_VERSION,
            super::RPCRDMA_VERSION,
        ])?,
        ErrCode::Chunk => w.put_u32(ErrCode::Chunk as u32)?,
    }
    // The writer only grows.
    Ok(w.len().saturating_sub(start))
}
