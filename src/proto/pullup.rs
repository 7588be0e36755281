// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Planning how a reply's inline part is sent: as SGEs gathered from its
//! `xdr_buf` (head, page fragments, tail) or "pulled up", i.e. copied
//! behind the transport header into the ctxt's header buffer. Pure
//! arithmetic over lengths, shared by the DMA mapper, the linearizer and
//! the SGE counter so that they can never disagree on the fragments.

use super::Error;

/// Replies shorter than this are always pulled up: copying them is cheaper
/// than mapping (`RPCRDMA_PULLUP_THRESH`, half the version 1 default inline
/// size).
pub(crate) const PULLUP_THRESH: u32 = 1024 >> 1;

/// The page fragments of `page_len` bytes starting `page_base` bytes into
/// a page array: (page index, offset in page, length), in order.
pub(crate) fn page_fragments(page_base: u32, page_len: u32, page_size: u32) -> PageFragments {
    PageFragments {
        index: page_base.checked_div(page_size).unwrap_or(0) as usize,
        offset: page_base.checked_rem(page_size).unwrap_or(0),
        remaining: page_len,
        page_size,
    }
}

/// The iterator of [`page_fragments`]: a plain struct (as a closure it
/// took 192 more bytes of text over its callers).
///
/// # Invariants
///
/// `offset < page_size`, or both are 0 (a page size of 0 yields nothing).
pub(crate) struct PageFragments {
    index: usize,
    offset: u32,
    remaining: u32,
    page_size: u32,
}

impl Iterator for PageFragments {
    type Item = (usize, u32, u32);

    #[inline]
    fn next(&mut self) -> Option<(usize, u32, u32)> {
        // `offset < page_size` (type invariant): the subtraction never
        // wraps, and `len` is at most `remaining`; the page index cannot
        // reach usize::MAX.
        let len = self.page_size.wrapping_sub(self.offset).min(self.remaining);
        if len == 0 {
            return None;
        }
        let frag = (self.index, self.offset, len);
        self.remaining = self.remaining.wrapping_sub(len);
        self.offset = 0;
        self.index = self.index.wrapping_add(1);
        Some(frag)
    }
}

/// The shape of one `xdr_buf` region, as far as sending it is concerned.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct XdrShape {
    /// Bytes in the head kvec.
    pub(crate) head_len: u32,
    /// Offset of the page data in the first page.
    pub(crate) page_base: u32,
    /// Bytes of page data.
    pub(crate) page_len: u32,
    /// Bytes in the tail kvec.
    pub(crate) tail_len: u32,
}

/// `svc_rdma_xb_count_sges`: SGEs needed to send `x` without copying:
/// one for a non-empty head, one per page fragment, one for a non-empty
/// tail.
pub(crate) fn xb_count_sges(x: &XdrShape, page_size: u32) -> u32 {
    // The fragments of `page_fragments`, counted without walking them: the
    // pages that bytes `offset..offset + page_len` touch (64-bit, so the
    // sum cannot overflow; a page size of 0 counts none).
    let frags = if x.page_len == 0 || page_size == 0 {
        0
    } else {
        let ps = u64::from(page_size);
        let offset = u64::from(x.page_base % page_size);
        // Each term is below 2^32: the sum fits in 64 bits.
        let end = offset
            .wrapping_add(u64::from(x.page_len))
            .wrapping_add(ps - 1);
        u32::try_from(end / ps).unwrap_or(u32::MAX)
    };
    frags
        .saturating_add(u32::from(x.head_len != 0))
        .saturating_add(u32::from(x.tail_len != 0))
}

/// How the inline part of a reply goes out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Inline {
    /// Map its fragments as SGEs behind the header's.
    Map,
    /// Copy it behind the header.
    PullUp,
}

/// The bytes `pcl_process_nonpayloads` hands its actor for a reply whose
/// only result payload is `payload_len` bytes at `position` (one used
/// chunk: the next, if any, is unused): the region before the payload and
/// the one after its XDR-padded end, up to `xdr_len`. `seg_len` is what the
/// reply's head, pages and tail hold, the limit `xdr_buf_subsegment` checks
/// each region against.
///
/// `None` whenever C's walk might not simply succeed with those two
/// regions (an end past the reply, a sum that wraps in C's `unsigned int`,
/// and, conservatively, a reply longer than its segments): the caller
/// then walks as C does.
pub(crate) fn one_payload_inline_len(
    xdr_len: u32,
    seg_len: u64,
    position: u32,
    payload_len: u32,
) -> Option<u32> {
    // `pcl_chunk_end_offset`: `xdr_align_size(position + payload_len)`.
    let end = position.checked_add(payload_len)?.checked_add(3)? & !3;
    if end > xdr_len || u64::from(xdr_len) > seg_len {
        return None;
    }
    // `position <= end <= xdr_len`: neither wraps.
    Some(position.wrapping_add(xdr_len.wrapping_sub(end)))
}

/// `svc_rdma_check_pull_up`: `length` is header plus inline reply bytes,
/// `sges` the SGEs that would take (the header's included).
///
/// Small replies are pulled up; replies with too many fragments are too;
/// but what does not fit the header buffer (`max_req_size`) cannot be, and
/// is [`Error::TooBig`]: the client gets ERR_CHUNK (RFC 8166 §4.5.3).
pub(crate) fn check_pull_up(
    length: u32,
    sges: u32,
    max_send_sges: u32,
    max_req_size: u32,
) -> Result<Inline, Error> {
    if length < PULLUP_THRESH {
        return Ok(Inline::PullUp);
    }
    if sges < max_send_sges {
        return Ok(Inline::Map);
    }
    if length > max_req_size {
        return Err(Error::TooBig);
    }
    Ok(Inline::PullUp)
}

/// The linearizer's destination: copies go behind what was copied before,
/// with the bounds check C does not have; overflow is [`Error::MsgSize`]
/// and copies nothing. The same bounded writer as the header encoders'.
pub(crate) use super::xdr::XdrWriter as Linearizer;
