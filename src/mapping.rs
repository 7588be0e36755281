// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Building the Send SGL: `svc_rdma_map_reply_msg` and its helpers
//! `page_dma_map`, `iov_dma_map`, `xb_dma_map`, `xb_count_sges`,
//! `check_pull_up`, `xb_linearize` and `pull_up_reply_msg`.
//!
//! The regions of the reply to send inline are what lies outside the
//! result payloads that went by RDMA Write; `pcl_process_nonpayloads`
//! (svc_rdma_pcl.c) cuts them out and calls an actor per region. The
//! actors here are thin: the fragment arithmetic and the decisions are in
//! [`crate::proto::pullup`], and every SGE index and copy is checked, with
//! an errno, never a panic, where C trusts its earlier count.

use crate::ctxt;
use crate::proto::pullup::{self, Inline, Linearizer, XdrShape};
use crate::sys;
use crate::xprt::Rdma;
use core::ffi::c_void;
use core::ptr::addr_of_mut;
use kernel::error::{
    code::{E2BIG, EIO, EMSGSIZE},
    Error,
};
use kernel::ffi::c_int;
use kernel::page::PAGE_SIZE;

const PAGE_SIZE_U32: u32 = PAGE_SIZE as u32;

/// The shape of an `xdr_buf` region.
///
/// # Safety
///
/// `xdr` is a valid `xdr_buf`.
unsafe fn shape(xdr: *const sys::xdr_buf) -> XdrShape {
    // SAFETY: `xdr` is a valid `xdr_buf` (`# Safety`); only its lengths are
    // read.
    unsafe {
        XdrShape {
            head_len: (*xdr).head[0].iov_len as u32,
            page_base: (*xdr).page_base,
            page_len: (*xdr).page_len,
            tail_len: (*xdr).tail[0].iov_len as u32,
        }
    }
}

/// Calls `f` on each page fragment of `xdr`: (page, offset, length).
///
/// # Safety
///
/// `xdr` is a valid `xdr_buf` whose page array covers its page data.
unsafe fn for_each_fragment(
    xdr: *const sys::xdr_buf,
    mut f: impl FnMut(*mut sys::page, u32, u32) -> Result<(), Error>,
) -> Result<(), Error> {
    // SAFETY: `xdr` is a valid `xdr_buf` (`# Safety`).
    let (pages, base, len) = unsafe { ((*xdr).pages, (*xdr).page_base, (*xdr).page_len) };
    for (index, offset, flen) in pullup::page_fragments(base, len, PAGE_SIZE_U32) {
        // SAFETY: the page array covers `page_base + page_len`.
        let page = unsafe { *pages.add(index) };
        f(page, offset, flen)?;
    }
    Ok(())
}

/// Arguments of the DMA-mapping actor (`struct svc_rdma_map_data`).
struct MapData<'a> {
    rdma: &'a Rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
    /// `rdma`'s device, read once per reply rather than per page.
    device: *mut sys::ib_device,
}

/// `svc_rdma_page_dma_map`: maps `len` bytes at `offset` in `page` into the
/// ctxt's next SGE. The SGE index is taken before mapping, as in C, and
/// checked against the array, which C does not do: an overrun is `EIO`.
fn page_dma_map(
    md: &MapData<'_>,
    page: *mut sys::page,
    offset: u32,
    len: u32,
) -> Result<(), Error> {
    let (rdma, ctxt) = (md.rdma, md.ctxt);
    // SAFETY: the ctxt is owned by the thread building the reply.
    let sge_no = unsafe {
        (*ctxt).sc_cur_sge_no = (*ctxt).sc_cur_sge_no.checked_add(1).ok_or(EIO)?;
        (*ctxt).sc_cur_sge_no
    };
    // SAFETY: the ctxt is owned by this thread, so its SGE array is ours to
    // change.
    let sges = unsafe { ctxt::sges(rdma, ctxt) };
    let sge = usize::try_from(sge_no)
        .ok()
        .and_then(|i| sges.get_mut(i))
        .ok_or(EIO)?;
    let mut addr = 0u64;
    // SAFETY: `page` holds the reply's data at `offset..offset + len`.
    let rc = unsafe {
        sys::rs_ib_dma_map_page(
            md.device,
            page,
            offset as kernel::ffi::c_ulong,
            len as usize,
            &mut addr,
        )
    };
    // SAFETY: tracepoints reading the ctxt's cid.
    let cid = unsafe { addr_of_mut!((*ctxt).sc_cid) };
    if rc == 0 && crate::fault::inject(crate::fault::Point::DmaMap) {
        // As if the mapping had failed: undo it, then take the error path.
        // SAFETY: `addr` was just mapped for `len` bytes.
        unsafe { sys::rs_ib_dma_unmap_page(md.device, addr, len as usize) };
        // SAFETY: `cid` points into our ctxt; the tracepoint only reads it.
        unsafe { crate::trace::dma_map_err(cid, addr, len) };
        return Err(EIO);
    }
    if rc != 0 {
        // SAFETY: `cid` points into our ctxt; the tracepoint only reads it.
        unsafe { crate::trace::dma_map_err(cid, addr, len) };
        return Err(EIO);
    }
    // SAFETY: `cid` points into our ctxt; the tracepoint only reads it.
    unsafe { crate::trace::dma_map_page(cid, addr, len) };
    sge.addr = addr;
    sge.length = len;
    // Counted only once mapped: unmap undoes exactly these. At most the
    // SGE array's length, which `sge_no` was checked against.
    // SAFETY: the ctxt is ours.
    unsafe { (*ctxt).sc_send_wr.num_sge = (*ctxt).sc_send_wr.num_sge.saturating_add(1) };
    crate::stats::add(&crate::stats::SGES_MAPPED, 1);
    Ok(())
}

/// `svc_rdma_iov_dma_map`: maps a kvec (head or tail), if it is not empty,
/// through its page, since unmapping is per page.
fn iov_dma_map(md: &MapData<'_>, iov: &sys::kvec) -> Result<(), Error> {
    if iov.iov_len == 0 {
        return Ok(());
    }
    let offset = (iov.iov_base as usize) & (PAGE_SIZE - 1);
    // SAFETY: a kvec of the reply points into the kernel's direct map.
    let page = unsafe { sys::rs_virt_to_page(iov.iov_base) };
    page_dma_map(md, page, offset as u32, iov.iov_len as u32)
}

/// `svc_rdma_xb_dma_map`: maps head, page fragments and tail of one region.
/// Returns the region's length. Mappings made before a failure stay
/// counted in `num_sge`, so releasing the ctxt undoes them.
///
/// # Safety
///
/// An actor of `pcl_process_nonpayloads`: `xdr` is a region of the reply
/// and `data` the [`MapData`] given with it.
unsafe extern "C" fn xb_dma_map(xdr: *const sys::xdr_buf, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the MapData passed to pcl_process_nonpayloads.
    let md = unsafe { &*data.cast::<MapData<'_>>() };
    // SAFETY: `xdr` is a region of the reply, valid for this call.
    let r = unsafe {
        iov_dma_map(md, &(*xdr).head[0])
            .and_then(|()| {
                for_each_fragment(xdr, |page, off, len| page_dma_map(md, page, off, len))
            })
            .and_then(|()| iov_dma_map(md, &(*xdr).tail[0]))
    };
    match r {
        // SAFETY: `xdr` is the region this actor was called with, valid
        // for the call.
        Ok(()) => unsafe { (*xdr).len as c_int },
        Err(e) => e.to_errno(),
    }
}

/// Arguments of the counting and copying actors (`svc_rdma_pullup_data`).
struct PullupData<'a> {
    length: u32,
    num_sges: u32,
    dest: Option<Linearizer<'a>>,
}

/// `svc_rdma_xb_count_sges`: adds one region's SGEs and length.
///
/// # Safety
///
/// An actor of `pcl_process_nonpayloads`: `xdr` is a region of the reply
/// and `data` the [`PullupData`] given with it.
unsafe extern "C" fn xb_count_sges(xdr: *const sys::xdr_buf, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the PullupData passed to pcl_process_nonpayloads.
    let pd = unsafe { &mut *data.cast::<PullupData<'_>>() };
    // SAFETY: `xdr` is a region of the reply, valid for this call.
    let (s, len) = unsafe { (shape(xdr), (*xdr).len) };
    pd.num_sges = pd
        .num_sges
        .saturating_add(pullup::xb_count_sges(&s, PAGE_SIZE_U32));
    pd.length = pd.length.saturating_add(len);
    0
}

/// `svc_rdma_xb_linearize`: copies one region behind what was copied
/// before; a copy past the header buffer is `EMSGSIZE`.
///
/// # Safety
///
/// As for [`xb_count_sges`].
unsafe extern "C" fn xb_linearize(xdr: *const sys::xdr_buf, data: *mut c_void) -> c_int {
    // SAFETY: `data` is the PullupData passed to pcl_process_nonpayloads.
    let pd = unsafe { &mut *data.cast::<PullupData<'_>>() };
    let Some(dest) = pd.dest.as_mut() else {
        return EMSGSIZE.to_errno();
    };
    // SAFETY: `xdr` is a region of the reply; its kvecs and pages hold
    // its bytes, and reply pages are lowmem (page_address is valid).
    let r = unsafe {
        append_raw(dest, (*xdr).head[0].iov_base.cast(), (*xdr).head[0].iov_len)
            .and_then(|()| {
                for_each_fragment(xdr, |page, off, len| {
                    let base = sys::rs_page_address(page).cast::<u8>().add(off as usize);
                    append_raw(dest, base, len as usize)
                })
            })
            .and_then(|()| append_raw(dest, (*xdr).tail[0].iov_base.cast(), (*xdr).tail[0].iov_len))
    };
    match r {
        Ok(()) => {
            // SAFETY: `xdr` is the region this actor was called with, valid
            // for the call.
            pd.length = pd.length.saturating_add(unsafe { (*xdr).len });
            0
        }
        Err(e) => e.to_errno(),
    }
}

/// Copies `len` bytes at `src` behind what `dest` holds; `EMSGSIZE` past
/// its end.
///
/// The source is read through the raw pointer, never as a `&[u8]`: reply
/// pages can be page-cache pages that a local writer changes while the
/// reply is built. The copy then holds some mix of old and new bytes, as
/// C's `memcpy` would; a shared slice would assert they cannot change.
///
/// # Safety
///
/// `src` is readable for `len` bytes (or `len` is 0).
unsafe fn append_raw(dest: &mut Linearizer<'_>, src: *const u8, len: usize) -> Result<(), Error> {
    if len == 0 {
        return Ok(());
    }
    let to = dest.reserve(len).map_err(|_| EMSGSIZE)?;
    // SAFETY: `src` is readable for `len` bytes (per the caller) and `to`
    // is `len` bytes of our own buffer, which the source cannot overlap.
    unsafe { core::ptr::copy_nonoverlapping(src, to.as_mut_ptr(), len) };
    Ok(())
}

/// `pcl_process_nonpayloads` with a Rust actor and its data.
///
/// # Safety
///
/// `write_pcl` and `xdr` are the Call's Write list and the reply.
unsafe fn process_nonpayloads<T>(
    write_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
    actor: unsafe extern "C" fn(*const sys::xdr_buf, *mut c_void) -> c_int,
    data: &mut T,
) -> c_int {
    // SAFETY: per the caller; `data` outlives the call and is what
    // `actor` expects.
    unsafe {
        sys::pcl_process_nonpayloads(
            write_pcl,
            xdr,
            Some(actor),
            core::ptr::from_mut(data).cast(),
        )
    }
}

/// `svc_rdma_check_pull_up`: whether the inline part of the reply is
/// mapped or copied behind the header, or too big for either.
///
/// # Safety
///
/// As for [`map_reply_msg`].
unsafe fn check_pull_up(
    rdma: &Rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    write_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
) -> Result<Inline, Error> {
    let mut pd = PullupData {
        // SAFETY: the ctxt is ours.
        length: unsafe { (*sctxt).sc_hdrbuf.len },
        num_sges: 1,
        dest: None,
    };
    // SAFETY: `write_pcl` and `xdr` are the Call's Write list and the reply
    // (`# Safety`); `xb_count_sges` takes a `PullupData`, which `pd` is.
    if unsafe { process_nonpayloads(write_pcl, xdr, xb_count_sges, &mut pd) } < 0 {
        // Let the mapping path report the problem.
        return Ok(Inline::Map);
    }
    pullup::check_pull_up(
        pd.length,
        pd.num_sges,
        rdma.max_send_sges() as u32,
        rdma.max_req_size() as u32,
    )
    .map_err(|_| E2BIG)
}

/// `svc_rdma_pull_up_reply_msg`: copies the inline regions behind the
/// header; SGE 0 then covers both.
///
/// # Safety
///
/// As for [`map_reply_msg`].
unsafe fn pull_up_reply_msg(
    rdma: &Rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    write_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
) -> c_int {
    // SAFETY: the ctxt is ours; its header buffer holds `max_req_size`
    // bytes, the first `hdrlen` of which are the transport header.
    let (hdrlen, dest) = unsafe {
        let hdrlen = (*sctxt).sc_hdrbuf.len as usize;
        let buf =
            core::slice::from_raw_parts_mut((*sctxt).sc_xprt_buf.cast::<u8>(), rdma.max_req_size());
        (hdrlen, buf.get_mut(hdrlen..))
    };
    let mut pd = PullupData {
        length: 0,
        num_sges: 0,
        dest: dest.map(Linearizer::new),
    };
    // SAFETY: `write_pcl` and `xdr` are the Call's Write list and the reply
    // (`# Safety`); `xb_linearize` takes a `PullupData`, which `pd` is.
    let ret = unsafe { process_nonpayloads(write_pcl, xdr, xb_linearize, &mut pd) };
    if ret < 0 {
        return ret;
    }
    // SAFETY: the ctxt is ours.
    unsafe {
        if let Some(sge0) = ctxt::sges(rdma, sctxt).first_mut() {
            sge0.length = (hdrlen as u32).saturating_add(pd.length);
        }
        crate::trace::send_pullup(sctxt, pd.length);
    }
    0
}

/// `svc_rdma_map_reply_msg`: builds the Send SGL of a reply: the header,
/// then, unless a Reply chunk carries the reply, its inline part, mapped or
/// pulled up.
///
/// Returns < 0 on failure (`-E2BIG` when the reply can be neither sent
/// inline nor pulled up, `-EIO` on a mapping failure, `-EMSGSIZE`); on
/// success 0 or, like C, the length of the region the last actor mapped
/// (callers test only for < 0).
///
/// # Safety
///
/// `sctxt` is owned by the caller with its header built; `write_pcl`,
/// `reply_pcl` and `xdr` are the Call's chunk lists and the reply.
pub(crate) unsafe fn map_reply_msg(
    rdma: &Rdma,
    sctxt: *mut sys::svc_rdma_send_ctxt,
    write_pcl: *const sys::svc_rdma_pcl,
    reply_pcl: *const sys::svc_rdma_pcl,
    xdr: *const sys::xdr_buf,
) -> c_int {
    // The persistently mapped header SGE.
    // SAFETY: the caller owns `sctxt`, whose SGE 0 is its header buffer's
    // mapping.
    unsafe {
        (*sctxt).sc_send_wr.num_sge = 1;
        let hdrlen = (*sctxt).sc_hdrbuf.len;
        if let Some(sge0) = ctxt::sges(rdma, sctxt).first_mut() {
            sge0.length = hdrlen;
        }
    }
    // With a Reply chunk nothing follows the header in the Send.
    // SAFETY: `reply_pcl` is the Call's parsed Reply chunk list.
    if !unsafe { crate::pcl::pcl_is_empty(reply_pcl) } {
        return 0;
    }
    // SAFETY: our ctxt, the Call's Write list and the reply (`# Safety`).
    match unsafe { check_pull_up(rdma, sctxt, write_pcl, xdr) } {
        Err(e) => e.to_errno(),
        // SAFETY: the same ctxt, list and reply.
        Ok(Inline::PullUp) => unsafe { pull_up_reply_msg(rdma, sctxt, write_pcl, xdr) },
        Ok(Inline::Map) => {
            let mut md = MapData {
                rdma,
                ctxt: sctxt,
                device: rdma.device(),
            };
            // SAFETY: the Write list and the reply; `xb_dma_map` takes a
            // `MapData`, which `md` is.
            unsafe { process_nonpayloads(write_pcl, xdr, xb_dma_map, &mut md) }
        }
    }
}

#[cfg(rpcrdma_kunit)]
#[kernel::prelude::kunit_tests(rpcrdma_rs_pullup)]
mod tests {
    //! The region actors on a real `xdr_buf`: head, page data starting at
    //! an offset and crossing a page boundary, and tail.
    use super::{xb_count_sges, xb_linearize, PullupData};
    use crate::proto::pullup::Linearizer;
    use crate::sys;
    use core::ffi::c_void;
    use kernel::alloc::flags::GFP_KERNEL;
    use kernel::error::code::EMSGSIZE;
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
        head: KVec<u8>,
        tail: KVec<u8>,
        /// Owns the pages `page_ptrs` points to.
        _pages: [Page; 2],
        page_ptrs: [*mut sys::page; 2],
        xdr: sys::xdr_buf,
    }

    impl Reply {
        fn new() -> Result<KBox<Self>> {
            let mut head = KVec::new();
            for i in 0..HEAD {
                head.push(pattern(i), GFP_KERNEL)?;
            }
            let mut tail = KVec::new();
            for i in 0..TAIL {
                tail.push(pattern(HEAD + PLEN as usize + i), GFP_KERNEL)?;
            }
            let pages = [Page::alloc_page(GFP_KERNEL)?, Page::alloc_page(GFP_KERNEL)?];
            // Page data: reply byte HEAD + k sits at offset BASE + k.
            let mut buf = KVec::new();
            for k in 0..(2 * kernel::page::PAGE_SIZE) {
                let v = if k >= BASE as usize && k < (BASE + PLEN) as usize {
                    pattern((HEAD + k).wrapping_sub(BASE as usize))
                } else {
                    0xee
                };
                buf.push(v, GFP_KERNEL)?;
            }
            // SAFETY: `buf` holds two pages of bytes.
            unsafe {
                pages[0].write_raw(buf.as_ptr(), 0, kernel::page::PAGE_SIZE)?;
                pages[1].write_raw(
                    buf.as_ptr().add(kernel::page::PAGE_SIZE),
                    0,
                    kernel::page::PAGE_SIZE,
                )?;
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

        fn data(pd: &mut PullupData<'_>) -> *mut c_void {
            core::ptr::from_mut(pd).cast()
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
        // SAFETY: a valid xdr_buf and the data the actor expects.
        let rc = unsafe { xb_count_sges(&r.xdr, Reply::data(&mut pd)) };
        assert_eq!(rc, 0);
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
        // SAFETY: a complete `xdr_buf` of the test's own pages, and its
        // `PullupData`.
        let rc = unsafe { xb_linearize(&r.xdr, Reply::data(&mut pd)) };
        assert_eq!(rc, 0);
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
        // SAFETY: a complete `xdr_buf` of the test's own pages, and its
        // `PullupData`.
        let rc = unsafe { xb_linearize(&r.xdr, Reply::data(&mut pd)) };
        assert_eq!(rc, EMSGSIZE.to_errno());
        assert_eq!(pd.length, 0);
        Ok(())
    }
}
