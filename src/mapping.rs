// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Building the Send SGL: `svc_rdma_map_reply_msg` and its helpers
//! `page_dma_map`, `xb_dma_map`, `xb_count_sges`, `check_pull_up`,
//! `xb_linearize` and `pull_up_reply_msg` (`iov_dma_map` is
//! `Fragment::dma_map` of the abstraction layer).
//!
//! The regions of the reply to send inline are what lies outside the
//! result payloads that went by RDMA Write; `pcl_process_nonpayloads`
//! (svc_rdma_pcl.c) cuts them out and calls an actor per region. The
//! actors here are thin: the fragment arithmetic and the decisions are in
//! [`crate::proto::pullup`], and every SGE index and copy is checked, with
//! an errno, never a panic, where C trusts its earlier count.

use crate::abstractions::events;
use crate::abstractions::recv_ctxt::{Pcl, RegionActor};
use crate::abstractions::send_ctxt::Ctxt;
use crate::abstractions::xdr_buf::{Fragment, XdrBuf, PAGE_SIZE_U32};
use crate::abstractions::xprt::Rdma;
use crate::proto::pullup::{self, Inline, Linearizer, PULLUP_THRESH};
use crate::rdma::dma::Dma;
use kernel::dma::DataDirection;
use kernel::error::{
    code::{E2BIG, EIO, EMSGSIZE},
    Error,
};
use kernel::ffi::c_int;
use kernel::num::casts::FromSafeCast;

/// The direction of a reply's payload mappings: the device reads them.
/// Test build (mutation `wrong_direction`): mapped as if for the device to
/// write, which the DMA-mapped mode's checks must catch (the shim unmaps
/// them the same way).
#[cfg(not(rpcrdma_dma_mutation = "wrong_direction"))]
const PAYLOAD_DIRECTION: DataDirection = DataDirection::ToDevice;
#[cfg(rpcrdma_dma_mutation = "wrong_direction")]
const PAYLOAD_DIRECTION: DataDirection = DataDirection::FromDevice;

/// `svc_rdma_page_dma_map`: maps one fragment of the reply into the
/// ctxt's next SGE. The SGE index is taken before mapping, as in C, and
/// checked against the array, which C does not do: an overrun is `EIO`.
///
/// `dma` is the transport's device's, made once per reply by the caller.
///
/// Out of line, one copy for head, page fragments and tail, as in C.
#[inline(never)]
fn page_dma_map(dma: &Dma<'_>, ctxt: &mut Ctxt<'_>, frag: &Fragment<'_>) -> Result<(), Error> {
    let len = frag.len();
    // SAFETY: the mapping goes into the ctxt's SGEs, and the reply's
    // memory outlives it: this runs only under `map_reply_msg` (the only
    // maker of a `Mapper`), whose callers keep the memory until the ctxt
    // is released when it succeeds (its `# Safety`); when it fails, every
    // payload mapping is undone here first (`mapping_failed`). The
    // direction is `ToDevice` but in the `wrong_direction` test build.
    let Ok(mapping) = (unsafe { frag.dma_map(dma, PAYLOAD_DIRECTION) }) else {
        // The address C's tracepoint reports is the failed call's value,
        // which is always `DMA_MAPPING_ERROR` (all ones).
        events::dma_map_err(ctxt.cid(), u64::MAX, len);
        return Err(mapping_failed(ctxt));
    };
    if crate::fault::inject(crate::fault::Point::DmaMap) {
        // As if the mapping had failed: dropping it undoes it.
        let addr = mapping.dma_address();
        drop(mapping);
        events::dma_map_err(ctxt.cid(), addr, len);
        return Err(mapping_failed(ctxt));
    }
    events::dma_map_page(ctxt.cid(), mapping.dma_address(), len);
    // Counted in `num_sge` only once mapped: release undoes exactly these.
    // Past the SGE array (which the SGE count ruled out) the mapping comes
    // back and is undone by its drop.
    if ctxt.add_payload_sge(mapping).is_err() {
        return Err(mapping_failed(ctxt));
    }
    Ok(())
}

/// A reply whose mapping failed: its payload mappings made so far are
/// undone now. Different from C, which leaves them to the ctxt's release
/// at the next drain: the caller frees the reply's memory when the reply
/// fails, before that. The mapper's failures are all here, so the success
/// path pays nothing for it. Returns the error, `EIO`.
#[cold]
fn mapping_failed(ctxt: &mut Ctxt<'_>) -> Error {
    // Test build: the last payload mapping is forgotten, never undone.
    #[cfg(rpcrdma_dma_mutation = "leak_on_error")]
    ctxt.forget_last_payload_sge();
    ctxt.unmap_payload_sges();
    EIO
}

/// `svc_rdma_xb_dma_map`: maps head, page fragments and tail of one region
/// (`svc_rdma_iov_dma_map` for the kvecs, through their pages, since
/// unmapping is per page). Returns the region's length. A NULL slot in the
/// page array fails it (C would oops on it; skipping it would send fewer
/// bytes than the header says). On any failure the payload mappings made
/// so far are undone ([`mapping_failed`]).
fn xb_dma_map(dma: &Dma<'_>, ctxt: &mut Ctxt<'_>, xdr: &XdrBuf) -> Result<c_int, Error> {
    if let Some(head) = xdr.head() {
        page_dma_map(dma, ctxt, &head)?;
    }
    for frag in xdr.page_fragments() {
        let Some(frag) = frag else {
            return Err(mapping_failed(ctxt));
        };
        page_dma_map(dma, ctxt, &frag)?;
    }
    if let Some(tail) = xdr.tail() {
        page_dma_map(dma, ctxt, &tail)?;
    }
    Ok(c_int::try_from(xdr.len()).unwrap_or(c_int::MAX))
}

/// The mapping actor's data (`svc_rdma_map_data`). Made only by
/// [`map_reply_msg`], whose contract keeps the mapped memory allocated.
struct Mapper<'a, 'c, 'r> {
    dma: Dma<'a>,
    ctxt: &'c mut Ctxt<'r>,
}

impl RegionActor for Mapper<'_, '_, '_> {
    #[inline(never)]
    fn region(&mut self, region: &XdrBuf) -> Result<c_int, Error> {
        xb_dma_map(&self.dma, self.ctxt, region)
    }
}

/// The data of the counting and copying actors (`svc_rdma_pullup_data`).
pub(crate) struct PullupData<'a> {
    pub(crate) length: u32,
    pub(crate) num_sges: u32,
    pub(crate) dest: Option<Linearizer<'a>>,
}

/// `svc_rdma_xb_count_sges`: adds one region's SGEs and length.
pub(crate) fn xb_count_sges(pd: &mut PullupData<'_>, xdr: &XdrBuf) -> Result<c_int, Error> {
    pd.num_sges = pd
        .num_sges
        .saturating_add(pullup::xb_count_sges(&xdr.shape(), PAGE_SIZE_U32));
    pd.length = pd.length.saturating_add(xdr.len());
    Ok(0)
}

/// `svc_rdma_xb_linearize`: copies one region behind what was copied
/// before; a copy past the header buffer is `EMSGSIZE`. Out of line: both
/// of `process_nonpayloads`' ways (the whole reply, or the regions around
/// result payloads) call this one copy.
#[inline(never)]
pub(crate) fn xb_linearize(pd: &mut PullupData<'_>, xdr: &XdrBuf) -> Result<c_int, Error> {
    let dest = pd.dest.as_mut().ok_or(EMSGSIZE)?;
    if let Some(head) = xdr.head() {
        append(dest, &head)?;
    }
    for frag in xdr.page_fragments() {
        append(dest, &frag.ok_or(EIO)?)?;
    }
    if let Some(tail) = xdr.tail() {
        append(dest, &tail)?;
    }
    pd.length = pd.length.saturating_add(xdr.len());
    Ok(0)
}

/// The counting actor.
struct CountSges<'p, 'a>(&'p mut PullupData<'a>);

impl RegionActor for CountSges<'_, '_> {
    #[inline(never)]
    fn region(&mut self, region: &XdrBuf) -> Result<c_int, Error> {
        xb_count_sges(self.0, region)
    }
}

/// The copying actor.
struct Linearize<'p, 'a>(&'p mut PullupData<'a>);

impl RegionActor for Linearize<'_, '_> {
    #[inline]
    fn region(&mut self, region: &XdrBuf) -> Result<c_int, Error> {
        xb_linearize(self.0, region)
    }
}

/// Copies `frag` behind what `dest` holds; `EMSGSIZE` past its end.
fn append(dest: &mut Linearizer<'_>, frag: &Fragment<'_>) -> Result<(), Error> {
    let to = dest
        .reserve(usize::from_safe_cast(frag.len()))
        .map_err(|_| EMSGSIZE)?;
    if frag.copy_to(to) {
        Ok(())
    } else {
        Err(EMSGSIZE)
    }
}

/// `svc_rdma_check_pull_up`: whether the inline part of the reply is
/// mapped or copied behind the header, or too big for either.
///
/// The SGEs matter only from [`pullup::PULLUP_THRESH`] bytes on; below
/// it the reply is always pulled up. Without result payloads the inline
/// part is the whole reply, whose length is known, and with one (a READ)
/// it is the reply less that payload: so a small reply (most are) is
/// decided without counting its fragments, which C always does.
fn check_pull_up(
    rdma: &Rdma,
    sctxt: &Ctxt<'_>,
    write_pcl: &Pcl,
    xdr: &XdrBuf,
) -> Result<Inline, Error> {
    // The inline part's length, where known without walking: the whole
    // reply, or with one payload (a READ) the two regions around it, by
    // arithmetic that gives the count walk's length whenever that walk
    // succeeds.
    let inline_len = if write_pcl.has_payloads() {
        write_pcl
            .single_payload()
            .and_then(|(position, payload_len)| {
                pullup::one_payload_inline_len(xdr.len(), xdr.segments_len(), position, payload_len)
            })
    } else {
        Some(xdr.len())
    };
    if inline_len.is_some_and(|n| sctxt.header_len().saturating_add(n) < PULLUP_THRESH) {
        return Ok(Inline::PullUp);
    }
    let mut pd = PullupData {
        length: sctxt.header_len(),
        num_sges: 1,
        dest: None,
    };
    if write_pcl.process_nonpayloads(xdr, &mut CountSges(&mut pd)) < 0 {
        // Let the mapping path report the problem.
        return Ok(Inline::Map);
    }
    pullup::check_pull_up(
        pd.length,
        pd.num_sges,
        u32::try_from(rdma.max_send_sges()).unwrap_or(u32::MAX),
        sctxt.header_buf_len(),
    )
    .map_err(|_| E2BIG)
}

/// [`xb_linearize`] of a region that is its head alone, inline.
#[inline(always)]
fn linearize_head(pd: &mut PullupData<'_>, xdr: &XdrBuf, head: &Fragment<'_>) -> c_int {
    let Some(dest) = pd.dest.as_mut() else {
        return EMSGSIZE.to_errno();
    };
    if let Err(e) = append(dest, head) {
        return e.to_errno();
    }
    pd.length = pd.length.saturating_add(xdr.len());
    0
}

/// `svc_rdma_pull_up_reply_msg`: copies the inline regions behind the
/// header; SGE 0 then covers both.
fn pull_up_reply_msg(sctxt: &mut Ctxt<'_>, write_pcl: &Pcl, xdr: &XdrBuf) -> c_int {
    let hdrlen = sctxt.header_len();
    let mut pd = PullupData {
        length: 0,
        num_sges: 0,
        dest: sctxt
            .header_buf()
            .get_mut(usize::from_safe_cast(hdrlen)..)
            .map(Linearizer::new),
    };
    // A reply without result payloads that is its head alone (most pulled-up
    // replies: GETATTR, WRITE, ...) is copied here, inline; any other
    // region by `xb_linearize`, out of line, whose call and frame would
    // cost such a reply about 35 instructions.
    let ret = match xdr.head_only() {
        Some(head) if !write_pcl.has_payloads() => linearize_head(&mut pd, xdr, &head),
        _ => write_pcl.process_nonpayloads(xdr, &mut Linearize(&mut pd)),
    };
    if ret < 0 {
        return ret;
    }
    let copied = pd.length;
    sctxt.set_header_sge_unmapped(hdrlen.saturating_add(copied));
    events::send_pullup(sctxt, copied);
    0
}

/// `svc_rdma_map_reply_msg`: builds the Send SGL of a reply: the header,
/// then, unless a Reply chunk carries the reply, its inline part, mapped or
/// pulled up.
///
/// Returns < 0 on failure (`-E2BIG` when the reply can be neither sent
/// inline nor pulled up, `-EIO` on a mapping failure, `-EMSGSIZE`); on
/// success 0 or, like C, the length of the region the last actor mapped
/// (callers test only for < 0). A mapping failure undoes the payload
/// mappings made so far at once (`mapping_failed`); after another failure
/// (the Write list's walk between two mapped regions) some may remain.
///
/// # Safety
///
/// `sctxt` is a ctxt of `rdma` (its mappings are made on `rdma`'s device
/// and undone on the ctxt's). The memory of `xdr` stays allocated until
/// every payload mapping of `sctxt` is undone: by the ctxt's release after
/// a success, and after a failure by that release or
/// [`Ctxt::unmap_payload_sges`], whichever comes first. The mappings do not
/// borrow it.
pub(crate) unsafe fn map_reply_msg(
    rdma: &Rdma,
    sctxt: &mut Ctxt<'_>,
    write_pcl: &Pcl,
    reply_pcl: &Pcl,
    xdr: &XdrBuf,
) -> c_int {
    // The persistently mapped header SGE. `sctxt` holds no payload
    // mapping yet: it comes from `svc_rdma_send_ctxt_get`, and only the
    // mapper below makes any (its callers map a reply once).
    let hdrlen = sctxt.header_len();
    sctxt.set_header_sge_unmapped(hdrlen);
    // With a Reply chunk nothing follows the header in the Send.
    if !reply_pcl.is_empty() {
        return 0;
    }
    match check_pull_up(rdma, sctxt, write_pcl, xdr) {
        Err(e) => e.to_errno(),
        Ok(Inline::PullUp) => pull_up_reply_msg(sctxt, write_pcl, xdr),
        Ok(Inline::Map) => {
            // `ib_uses_virt_dma()` asked once for all the reply's mappings.
            let dma = rdma.device().dma();
            write_pcl.process_nonpayloads(xdr, &mut Mapper { dma, ctxt: sctxt })
        }
    }
}

#[cfg(rpcrdma_kunit)]
#[kernel::prelude::kunit_tests(rpcrdma_rs_pullup)]
mod tests {
    //! The region actors on a real `xdr_buf`: head, page data starting at
    //! an offset and crossing a page boundary, and tail.
    use super::{xb_count_sges, xb_linearize, PullupData};
    use crate::abstractions::xdr_buf::XdrBuf;
    use crate::proto::pullup::Linearizer;
    use crate::sys;
    use kernel::alloc::flags::GFP_KERNEL;
    use kernel::error::code::{EIO, EMSGSIZE};
    use kernel::page::Page;
    use kernel::prelude::*;

    const HEAD: usize = 60;
    const BASE: u32 = 100;
    const PLEN: u32 = 5000; // 3996 bytes in page 0, 1004 in page 1
    const TAIL: usize = 3;

    /// Byte `i` of the reply, as the test lays it out.
    fn pattern(i: usize) -> u8 {
        i.wrapping_mul(7).wrapping_add(3) as u8
    }

    struct Reply {
        head: [u8; HEAD],
        tail: [u8; TAIL],
        /// Owns the pages `page_ptrs` points to.
        _pages: [Page; 2],
        page_ptrs: [*mut sys::page; 2],
        xdr: sys::xdr_buf,
    }

    /// Fills `bytes` with the pattern from reply byte `first` on. Indices
    /// advance with wrapping adds: `enumerate`, `+` and `KVec::push`,
    /// inlined here, would bring overflow checks (panic calls) into the
    /// module even in test code.
    fn fill(bytes: &mut [u8], first: usize) {
        let mut i = first;
        for b in bytes.iter_mut() {
            *b = pattern(i);
            i = i.wrapping_add(1);
        }
    }

    impl Reply {
        fn new() -> Result<KBox<Self>> {
            let mut head = [0u8; HEAD];
            fill(&mut head, 0);
            let mut tail = [0u8; TAIL];
            fill(&mut tail, HEAD.wrapping_add(PLEN as usize));
            let pages = [Page::alloc_page(GFP_KERNEL)?, Page::alloc_page(GFP_KERNEL)?];
            // Page data: reply byte HEAD + k sits at offset BASE + k of the
            // two pages; the rest is 0xee. Written 64 bytes at a time.
            let mut chunk = [0u8; 64];
            let mut k = 0usize;
            while k < 2 * kernel::page::PAGE_SIZE {
                let mut at = k;
                for b in chunk.iter_mut() {
                    *b = if at >= BASE as usize && at < (BASE + PLEN) as usize {
                        pattern(HEAD.wrapping_add(at).wrapping_sub(BASE as usize))
                    } else {
                        0xee
                    };
                    at = at.wrapping_add(1);
                }
                let page = &pages[k / kernel::page::PAGE_SIZE];
                // SAFETY: `chunk` holds its 64 bytes; `write_raw` checks the
                // range in the page.
                unsafe {
                    page.write_raw(chunk.as_ptr(), k % kernel::page::PAGE_SIZE, chunk.len())?
                };
                k = k.wrapping_add(chunk.len());
            }
            let page_ptrs = [pages[0].as_ptr(), pages[1].as_ptr()];
            let mut r = KBox::new(
                Self {
                    head,
                    tail,
                    _pages: pages,
                    page_ptrs,
                    xdr: sys::xdr_buf::default(),
                },
                GFP_KERNEL,
            )?;
            let r_mut = &mut *r;
            r_mut.xdr.head[0].iov_base = r_mut.head.as_mut_ptr().cast();
            r_mut.xdr.head[0].iov_len = HEAD;
            r_mut.xdr.tail[0].iov_base = r_mut.tail.as_mut_ptr().cast();
            r_mut.xdr.tail[0].iov_len = TAIL;
            r_mut.xdr.pages = r_mut.page_ptrs.as_mut_ptr();
            r_mut.xdr.page_base = BASE;
            r_mut.xdr.page_len = PLEN;
            r_mut.xdr.len = (HEAD + PLEN as usize + TAIL) as u32;
            Ok(r)
        }

        fn xdr(&self) -> &XdrBuf {
            // SAFETY: a complete `xdr_buf` of the test's own kvecs and
            // pages, which live as long as `self`.
            unsafe { XdrBuf::from_raw(&self.xdr) }
        }
    }

    /// `n` zero bytes to linearize into.
    fn zeroed(n: usize) -> Result<KVec<u8>> {
        let mut v = KVec::with_capacity(n, GFP_KERNEL)?;
        v.resize(n, 0, GFP_KERNEL)?;
        Ok(v)
    }

    #[test]
    fn count_sges_head_pages_tail() -> Result {
        let r = Reply::new()?;
        let mut pd = PullupData {
            length: 28,
            num_sges: 1,
            dest: None,
        };
        assert_eq!(xb_count_sges(&mut pd, r.xdr()), Ok(0));
        // Header + head + two page fragments + tail.
        assert_eq!(pd.num_sges, 5);
        assert_eq!(pd.length, 28 + HEAD as u32 + PLEN + TAIL as u32);
        Ok(())
    }

    #[test]
    fn linearize_copies_in_order() -> Result {
        let r = Reply::new()?;
        let total = HEAD + PLEN as usize + TAIL;
        let mut dest = zeroed(total + 16)?;
        let mut pd = PullupData {
            length: 0,
            num_sges: 0,
            dest: Some(Linearizer::new(&mut dest)),
        };
        assert_eq!(xb_linearize(&mut pd, r.xdr()), Ok(0));
        assert_eq!(pd.length as usize, total);
        assert_eq!(pd.dest.as_ref().map(|l| l.len()), Some(total));
        // Compared by hand: `enumerate` and `+=` would bring in the kernel's
        // overflow checks (panic calls), even in test code.
        let mut wrong = 0usize;
        let mut i = 0usize;
        for b in dest.iter().take(total) {
            wrong = wrong.saturating_add(usize::from(*b != pattern(i)));
            i = i.wrapping_add(1);
        }
        assert_eq!(wrong, 0);
        // Nothing written past the reply.
        assert!(dest.iter().skip(total).all(|b| *b == 0));
        Ok(())
    }

    #[test]
    fn linearize_refuses_to_overflow() -> Result {
        let r = Reply::new()?;
        let mut dest = zeroed(HEAD + 100)?;
        let mut pd = PullupData {
            length: 0,
            num_sges: 0,
            dest: Some(Linearizer::new(&mut dest)),
        };
        assert_eq!(xb_linearize(&mut pd, r.xdr()), Err(EMSGSIZE));
        assert_eq!(pd.length, 0);
        Ok(())
    }

    /// A NULL slot in the page data is refused, not skipped (issue 27,
    /// D5): a skip would copy 1004 bytes fewer than the reply's length.
    #[test]
    fn linearize_refuses_null_page() -> Result {
        let mut r = Reply::new()?;
        r.page_ptrs[1] = core::ptr::null_mut();
        let total = HEAD + PLEN as usize + TAIL;
        let mut dest = zeroed(total)?;
        let mut pd = PullupData {
            length: 0,
            num_sges: 0,
            dest: Some(Linearizer::new(&mut dest)),
        };
        assert_eq!(xb_linearize(&mut pd, r.xdr()), Err(EIO));
        assert_eq!(pd.length, 0);
        Ok(())
    }
}
