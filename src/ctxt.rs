// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! The send ctxt pool: `svc_rdma_send_ctxt_alloc`, `_get`, `_put`,
//! `_unmap`, `_release`, `_drain` and `_destroy` of the C file.
//!
//! A send ctxt carries one reply: its transport header buffer (DMA-mapped
//! once, for the ctxt's life, as SGE 0), the SGEs of the reply, the pages
//! moved out of the `svc_rqst`, and the Write WR chain for chunks. It is the
//! C `struct svc_rdma_send_ctxt`, shared with `svc_rdma_rw.c` and
//! `svc_rdma_backchannel.c`, so its layout is C's.
//!
//! Life of a ctxt: `get` → owned by one thread as a [`SendCtxt`] → either
//! posted (ownership passes to the Send completion, which `put`s it) or
//! dropped (which `put`s it) → on `sc_send_release_list` → `drain` releases
//! its DMA mappings and pages and returns it to the free list
//! `sc_send_ctxts` → `destroy` frees it when the transport goes away.
//! `sc_node` links it into one of the two lists at a time, never both.
//!
//! Each ctxt also carries a [`Ledger`] after its SGE array (the C struct
//! has no room for it): where the ctxt is in that life, and its link on a
//! module-wide list of all send ctxts. It lets `put` refuse a second put of
//! the same ctxt, which would corrupt the lists, and lets the transport's
//! teardown find ctxts that never came back: one whose Send was posted but
//! whose completion never came (the provider lost it) is reclaimed once
//! `ib_drain_qp` guarantees nothing of it is in flight, where C leaks it.

use crate::sys;
use crate::xprt::Rdma;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ptr::{addr_of, addr_of_mut, null_mut, NonNull};
use kernel::sync::atomic::{Atomic, AtomicType, Relaxed};
use kernel::types::Opaque;

/// Where a send ctxt is in its life (see the module docs).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(i32)]
pub(crate) enum CtxtState {
    /// Held by one thread ([`SendCtxt`], or lent to C). Zero, so that a
    /// zeroed allocation starts owned by its allocator.
    Owned = 0,
    /// On the transport's free list.
    Free = 1,
    /// Its WR chain was posted: the Send completion owns it.
    Posted = 2,
    /// Put, waiting on `sc_send_release_list` for the next drain.
    Queued = 3,
    /// Parked after a partial post until the transport's QP is drained.
    Orphan = 4,
}

// SAFETY: `CtxtState` is `repr(i32)`, so it has `i32`'s size and alignment,
// and every value of it transmutes to an `i32` and back.
unsafe impl AtomicType for CtxtState {
    type Repr = i32;
}

/// The trailing record of every pooled ctxt, after its SGE array.
///
/// # Invariants
///
/// `link` is on `rs_send_ctxts_all` (under `rs_send_ctxts_all_lock`) from
/// allocation to free, for ctxts of [`send_ctxt_alloc`]; `state` is the
/// ctxt's [`CtxtState`].
#[repr(C)]
pub(crate) struct Ledger {
    link: Opaque<sys::list_head>,
    state: Atomic<CtxtState>,
    /// The ctxt this ledger belongs to, set before `link` is listed.
    ctxt: *mut sys::svc_rdma_send_ctxt,
}

// The ledger follows the ctxt and its SGEs: both keep it aligned.
kernel::static_assert!(size_of::<sys::svc_rdma_send_ctxt>() % align_of::<Ledger>() == 0);
kernel::static_assert!(size_of::<sys::ib_sge>() % align_of::<Ledger>() == 0);

/// Byte offset of the ledger in a ctxt with `nsges` SGEs.
fn ledger_offset(nsges: usize) -> Option<usize> {
    size_of::<sys::ib_sge>()
        .checked_mul(nsges)?
        .checked_add(size_of::<sys::svc_rdma_send_ctxt>())
}

/// Size of the allocation of a ctxt with `nsges` SGEs: the C struct, its
/// SGE array, its [`Ledger`].
pub(crate) fn ctxt_alloc_size(nsges: usize) -> Option<usize> {
    ledger_offset(nsges)?.checked_add(size_of::<Ledger>())
}

/// Where the ledger of `ctxt` is.
///
/// # Safety
///
/// `ctxt` is a live ctxt of `rdma`, allocated with [`ctxt_alloc_size`]
/// for `rdma`'s SGE count.
pub(crate) unsafe fn ledger_ptr(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) -> *mut Ledger {
    let offset = ledger_offset(rdma.max_send_sges()).unwrap_or(0);
    // SAFETY: the allocation is at least `offset` bytes longer than the
    // ledger's start (`# Safety`).
    unsafe { ctxt.cast::<u8>().add(offset).cast::<Ledger>() }
}

/// The ledger of `ctxt`.
///
/// # Safety
///
/// As for [`ledger_ptr`]; the returned reference does not outlive the
/// ctxt.
unsafe fn ledger<'a>(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) -> &'a Ledger {
    // SAFETY: the allocation holds a ledger there (`# Safety`); after
    // allocation its fields change only through the atomic or, for the
    // link, under the list lock.
    unsafe { &*ledger_ptr(rdma, ctxt) }
}

/// Lists a new ctxt (zeroed, so `Owned`) on the list of all ctxts.
///
/// # Safety
///
/// As for [`ledger_ptr`]; `ctxt` is not listed yet, and is unlisted by
/// [`unlist`] before it is freed.
pub(crate) unsafe fn list(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: a new ctxt nobody else knows yet (`# Safety`): its ledger
    // can be written in place before it is published under the lock.
    unsafe {
        let l = ledger_ptr(rdma, ctxt);
        (*l).ctxt = ctxt;
        sys::spin_lock(&raw mut sys::rs_send_ctxts_all_lock);
        sys::list_add_tail((*l).link.get(), &raw mut sys::rs_send_ctxts_all);
        sys::spin_unlock(&raw mut sys::rs_send_ctxts_all_lock);
    }
}

/// Takes `ctxt` off the list of all ctxts.
///
/// # Safety
///
/// `ctxt` was listed by [`list`] for `rdma` and is about to be freed.
pub(crate) unsafe fn unlist(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: the link is on the list (`# Safety`), changed only under
    // its lock.
    unsafe {
        let link = ledger(rdma, ctxt).link.get();
        sys::spin_lock(&raw mut sys::rs_send_ctxts_all_lock);
        sys::rs_list_del(link);
        sys::spin_unlock(&raw mut sys::rs_send_ctxts_all_lock);
    }
}

/// Sets the state of `ctxt`, which the caller owns or hands over.
///
/// # Safety
///
/// As for [`ledger`].
pub(crate) unsafe fn set_state(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt, state: CtxtState) {
    // SAFETY: the caller's guarantee (`# Safety`).
    unsafe { ledger(rdma, ctxt) }.state.store(state, Relaxed);
}

/// A send ctxt owned by the current thread: taken from the pool and not
/// yet posted or put back. Dropping it puts it back (deferred release), so
/// every early return of the Send path releases the reply's resources.
pub(crate) struct SendCtxt(NonNull<sys::svc_rdma_send_ctxt>);

impl SendCtxt {
    /// Takes ownership of the ctxt at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a send ctxt of a live transport, allocated by this pool,
    /// owned by the caller (on no list, not posted), and not used by the
    /// caller afterwards.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::svc_rdma_send_ctxt) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    /// Gives up ownership without putting the ctxt back, for a caller
    /// that hands it to C or to a posted WR chain.
    pub(crate) fn into_raw(self) -> *mut sys::svc_rdma_send_ctxt {
        ManuallyDrop::new(self).0.as_ptr()
    }

    /// The C pointer.
    pub(crate) fn as_ptr(&self) -> *mut sys::svc_rdma_send_ctxt {
        self.0.as_ptr()
    }

    /// The transport this ctxt belongs to.
    pub(crate) fn rdma(&self) -> &Rdma {
        // SAFETY: `sc_rdma` is set at allocation and the transport outlives
        // its ctxts (they are destroyed in `svc_rdma_free`).
        unsafe { Rdma::from_raw((*self.as_ptr()).sc_rdma) }
    }
}

impl Drop for SendCtxt {
    fn drop(&mut self) {
        // SAFETY: we own the ctxt; the transport is live (see `rdma()`).
        unsafe { send_ctxt_put(self.rdma(), self.as_ptr()) };
    }
}

/// The SGE array of `ctxt`: every ctxt of a transport has
/// `sc_max_send_sges` of them.
///
/// # Safety
///
/// `ctxt` is a live ctxt of `rdma`, not accessed concurrently.
pub(crate) unsafe fn sges<'a>(
    rdma: &Rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) -> &'a mut [sys::ib_sge] {
    // SAFETY: allocated with `max_send_sges` trailing SGEs (send_ctxt_alloc);
    // exclusive access per the caller.
    unsafe {
        core::slice::from_raw_parts_mut(
            addr_of_mut!((*ctxt).sc_sges).cast::<sys::ib_sge>(),
            rdma.max_send_sges(),
        )
    }
}

/// `svc_rdma_send_ctxt_alloc`: a new ctxt on the device's NUMA node, with
/// its header buffer DMA-mapped and its Send WR pre-wired. `None` when
/// memory or the mapping cannot be had.
pub(crate) fn send_ctxt_alloc(rdma: &Rdma) -> Option<SendCtxt> {
    let device = rdma.device();
    // SAFETY: the transport's device is live while the transport is.
    let node = unsafe { sys::rs_ibdev_to_node(device) };
    let size = ctxt_alloc_size(rdma.max_send_sges())?;
    // SAFETY: plain allocation.
    let ctxt = unsafe { sys::rs_kzalloc_node(size, node) }.cast::<sys::svc_rdma_send_ctxt>();
    if ctxt.is_null() {
        return None;
    }
    // SAFETY: the transport is live.
    let npages = unsafe { sys::rs_svc_serv_maxpages(rdma.as_ptr()) } as usize;
    let Some(pages_size) = npages.checked_mul(size_of::<*mut sys::page>()) else {
        // SAFETY: `ctxt` was allocated above and is not shared.
        unsafe { sys::kfree(ctxt.cast()) };
        return None;
    };
    // SAFETY: plain allocation.
    let pages = unsafe { sys::rs_kzalloc_node(pages_size, node) }.cast::<*mut sys::page>();
    // SAFETY: plain allocation.
    let buffer = unsafe { sys::rs_kmalloc_node(rdma.max_req_size(), node) };
    let mut addr = 0u64;
    let len = rdma.max_req_size();
    let mapped = !buffer.is_null()
        // SAFETY: `buffer` holds `max_req_size` bytes.
        && unsafe { sys::rs_ib_dma_map_single(device, buffer, len, &mut addr) } == 0;
    if pages.is_null() || !mapped {
        if mapped {
            // SAFETY: mapped just above, with this length.
            unsafe { sys::rs_ib_dma_unmap_single(device, addr, rdma.max_req_size()) };
        }
        // SAFETY: each is null or allocated above and not shared; kfree
        // accepts null.
        unsafe {
            sys::kfree(buffer);
            sys::kfree(pages.cast());
            sys::kfree(ctxt.cast());
        }
        return None;
    }

    // SAFETY: `ctxt` is a zeroed allocation of the right size that only
    // this thread knows about.
    unsafe {
        sys::rs_send_cid_init(rdma.as_ptr(), addr_of_mut!((*ctxt).sc_cid));
        (*ctxt).sc_rdma = rdma.as_ptr();
        (*ctxt).sc_pages = pages;
        (*ctxt).sc_maxpages = npages as kernel::ffi::c_ulong;
        let wr = addr_of_mut!((*ctxt).sc_send_wr);
        (*wr).next = null_mut();
        *(*wr).__bindgen_anon_1.wr_cqe.as_mut() = addr_of_mut!((*ctxt).sc_cqe);
        (*wr).sg_list = addr_of_mut!((*ctxt).sc_sges).cast();
        (*wr).send_flags = sys::ib_send_flags_IB_SEND_SIGNALED as kernel::ffi::c_int;
        sys::INIT_LIST_HEAD(addr_of_mut!((*ctxt).sc_write_info_list));
        (*ctxt).sc_xprt_buf = buffer;
        sys::rs_xdr_buf_init(addr_of_mut!((*ctxt).sc_hdrbuf), buffer, rdma.max_req_size());
        let sges = sges(rdma, ctxt);
        if let Some(sge0) = sges.first_mut() {
            sge0.addr = addr;
        }
        for sge in sges {
            sge.lkey = rdma.local_dma_lkey();
        }
        list(rdma, ctxt);
    }
    crate::stats::add(&crate::stats::CTXTS_LIVE, 1);
    // SAFETY: fully initialised and owned by us.
    unsafe { SendCtxt::from_raw(ctxt) }
}

/// Frees one ctxt that is on no list and has no I/O outstanding.
///
/// # Safety
///
/// `ctxt` was allocated by [`send_ctxt_alloc`] for `rdma` and is not used
/// again.
unsafe fn send_ctxt_free(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: per the caller, we are the last user; SGE 0 holds the
    // header buffer's mapping made at allocation, when it was also listed.
    unsafe {
        unlist(rdma, ctxt);
        let sge0 = sges(rdma, ctxt).first().map_or(0, |s| s.addr);
        sys::rs_ib_dma_unmap_single(rdma.device(), sge0, rdma.max_req_size());
        sys::kfree((*ctxt).sc_xprt_buf);
        sys::kfree((*ctxt).sc_pages.cast());
        sys::kfree(ctxt.cast());
    }
    crate::stats::add(&crate::stats::CTXTS_LIVE, -1);
}

/// The ctxt whose `sc_node` is `node`.
fn ctxt_of(node: *mut sys::llist_node) -> *mut sys::svc_rdma_send_ctxt {
    // SAFETY: every node on the send lists is the `sc_node` of a ctxt.
    unsafe { kernel::container_of!(node, sys::svc_rdma_send_ctxt, sc_node) }
}

/// `svc_rdma_send_ctxts_destroy`: frees every ctxt of the transport.
///
/// Runs only from `svc_rdma_free`, after `ib_drain_qp` and a final drain,
/// so no completion can run; being the only user left, it needs no lock.
/// First [`release_at_teardown`] puts the ctxts that never came back on
/// the free list.
pub(crate) fn send_ctxts_destroy(rdma: &Rdma) {
    release_at_teardown(rdma);
    loop {
        // SAFETY: the free list of a live transport.
        let node = unsafe { sys::llist_del_first(addr_of_mut!((*rdma.as_ptr()).sc_send_ctxts)) };
        if node.is_null() {
            break;
        }
        // SAFETY: popped from the free list: nobody else has it.
        unsafe { send_ctxt_free(rdma, ctxt_of(node)) };
    }
}

/// At transport teardown (`svc_rdma_free`, after `ib_drain_qp`: nothing
/// of any ctxt is in flight any more): releases onto the free list the
/// ctxts parked after a partial post ([`orphan_add`]) and those whose Send
/// never completed ([`reclaim_unreturned`]); returns how many.
///
/// Their chunks' R/W contexts go back to `sc_rw_ctxts`, which
/// `svc_rdma_free` has already emptied with `svc_rdma_destroy_rw_ctxts`
/// (it runs before `svc_rdma_send_ctxts_destroy`), so it is called once
/// more; it only frees what the list holds. The QP those contexts refer to
/// is destroyed only after this. Doing this here rather than in the final
/// drain keeps every drain, called once per RPC, free of a teardown test.
pub(crate) fn release_at_teardown(rdma: &Rdma) -> usize {
    let released = orphans_release(rdma).saturating_add(reclaim_unreturned(rdma).posted as usize);
    if released > 0 {
        // SAFETY: the transport is live; its R/W context list holds only
        // idle contexts (the QP is drained).
        unsafe { sys::svc_rdma_destroy_rw_ctxts(rdma.as_ptr()) };
    }
    released
}

/// Pops one ctxt from the free list. `llist_del_first` allows one
/// consumer at a time, hence `sc_send_lock` (all callers are in process
/// context, so a plain spinlock).
fn free_list_pop(rdma: &Rdma) -> *mut sys::svc_rdma_send_ctxt {
    // SAFETY: lock and list of a live transport.
    let node = unsafe {
        let lock = addr_of_mut!((*rdma.as_ptr()).sc_send_lock);
        sys::spin_lock(lock);
        let node = sys::llist_del_first(addr_of_mut!((*rdma.as_ptr()).sc_send_ctxts));
        sys::spin_unlock(lock);
        node
    };
    if node.is_null() {
        null_mut()
    } else {
        ctxt_of(node)
    }
}

/// `svc_rdma_send_ctxt_get`: a ready-to-use ctxt, from the free list, from
/// completed ones not yet released, or newly allocated. May sleep.
pub(crate) fn send_ctxt_get(rdma: &Rdma) -> Option<SendCtxt> {
    if crate::fault::inject(crate::fault::Point::CtxtGet) {
        return None;
    }
    let mut ctxt = free_list_pop(rdma);
    if ctxt.is_null() {
        send_ctxts_drain(rdma);
        ctxt = free_list_pop(rdma);
    }
    let ctxt = if ctxt.is_null() {
        send_ctxt_alloc(rdma)?
    } else {
        // SAFETY: just popped from the free list, so ours; allocated by
        // this pool for `rdma`.
        unsafe {
            set_state(rdma, ctxt, CtxtState::Owned);
            SendCtxt::from_raw(ctxt)?
        }
    };
    let p = ctxt.as_ptr();
    // Per-reply state. Opcode, invalidate rkey and SGE lengths are left:
    // every poster sets them.
    // SAFETY: we own the ctxt.
    unsafe {
        // rpcrdma_set_xdrlen(&sc_hdrbuf, 0)
        (*p).sc_hdrbuf.head[0].iov_len = 0;
        (*p).sc_hdrbuf.len = 0;
        sys::xdr_init_encode(
            addr_of_mut!((*p).sc_stream),
            addr_of_mut!((*p).sc_hdrbuf),
            (*p).sc_xprt_buf.cast(),
            null_mut(),
        );
        sys::svc_rdma_cc_init(rdma.as_ptr(), addr_of_mut!((*p).sc_reply_info.wi_cc));
        (*p).sc_send_wr.num_sge = 0;
        (*p).sc_cur_sge_no = 0;
        (*p).sc_page_count = 0;
        (*p).sc_wr_chain = addr_of_mut!((*p).sc_send_wr);
        (*p).sc_sqecount = 1;
    }
    Some(ctxt)
}

/// `svc_rdma_send_ctxt_unmap`: releases the chunk I/O resources and
/// unmaps the reply's SGEs. SGE 0, the header buffer, stays mapped.
///
/// # Safety
///
/// `ctxt` is owned by the caller and none of its WRs is in flight.
unsafe fn send_ctxt_unmap(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: per the caller, the chunks' rw ctxts are idle.
    unsafe {
        sys::svc_rdma_write_chunk_release(rdma.as_ptr(), ctxt);
        sys::svc_rdma_reply_chunk_release(rdma.as_ptr(), ctxt);
    }
    // SAFETY: nothing of the ctxt is in flight and the caller owns it
    // (`# Safety`), so its SGE array is ours.
    let (num_sge, sges) = unsafe { ((*ctxt).sc_send_wr.num_sge, sges(rdma, ctxt)) };
    // `num_sge` counts only SGEs that were mapped; never trust it past the
    // array.
    let mapped = usize::try_from(num_sge).unwrap_or(0).min(sges.len());
    let payload = sges.get(1..mapped).unwrap_or_default();
    if !payload.is_empty() {
        let device = rdma.device();
        for sge in payload {
            // SAFETY: each SGE past the first was mapped by page_dma_map
            // with this address and length.
            unsafe {
                crate::trace::dma_unmap_page(addr_of_mut!((*ctxt).sc_cid), sge.addr, sge.length);
                sys::rs_ib_dma_unmap_page(device, sge.addr, sge.length as usize);
            }
        }
        let n = i64::try_from(payload.len()).unwrap_or(0);
        crate::stats::add(&crate::stats::SGES_MAPPED, 0i64.saturating_sub(n));
    }
}

/// `svc_rdma_send_ctxt_release`: unmaps, releases the reply's pages, and
/// returns the ctxt to the free list.
///
/// # Safety
///
/// As for [`send_ctxt_unmap`]; the caller does not use `ctxt` afterwards.
unsafe fn send_ctxt_release(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: nothing of the ctxt is in flight and the caller gives it up
    // (`# Safety`): its mappings and pages can go, then the ctxt itself
    // back to the pool.
    unsafe {
        send_ctxt_unmap(rdma, ctxt);
        if (*ctxt).sc_page_count > 0 {
            sys::rs_release_pages((*ctxt).sc_pages, (*ctxt).sc_page_count);
            crate::stats::add(&crate::stats::PAGES_HELD, -i64::from((*ctxt).sc_page_count));
        }
        set_state(rdma, ctxt, CtxtState::Free);
        sys::rs_llist_add(
            addr_of_mut!((*ctxt).sc_node),
            addr_of_mut!((*rdma.as_ptr()).sc_send_ctxts),
        );
    }
}

/// `svc_rdma_send_ctxts_drain`: releases every ctxt whose Send completed.
/// Process context only (it unmaps and frees pages); safe against
/// concurrent drains, since `llist_del_all` hands each ctxt to one of them.
pub(crate) fn send_ctxts_drain(rdma: &Rdma) {
    // SAFETY: the release list of a live transport.
    let mut node =
        unsafe { sys::rs_llist_del_all(addr_of_mut!((*rdma.as_ptr()).sc_send_release_list)) };
    while !node.is_null() {
        // Read the link first: release re-links `sc_node`.
        // SAFETY: `node` is on the list we took, so ours.
        let next = unsafe { (*node).next };
        // SAFETY: its completion ran, so nothing of it is in flight.
        unsafe { send_ctxt_release(rdma, ctxt_of(node)) };
        node = next;
    }
}

/// Takes the first listed ctxt of `rdma` off the list of all ctxts, for
/// the KUnit stand-ins to free whatever a test left; null when none is
/// left.
#[cfg(rpcrdma_kunit)]
pub(crate) fn unlist_next_of(rdma: &Rdma) -> *mut sys::svc_rdma_send_ctxt {
    let head = &raw mut sys::rs_send_ctxts_all;
    let mut found = null_mut();
    // SAFETY: the shim's static list and lock; every entry is the link of
    // a live ctxt's ledger, whose `ctxt` was set before it was listed.
    unsafe {
        sys::spin_lock(&raw mut sys::rs_send_ctxts_all_lock);
        let mut link = (*head).next;
        while link != head {
            let l = kernel::container_of!(link.cast::<Opaque<sys::list_head>>(), Ledger, link);
            if (*(*l).ctxt).sc_rdma == rdma.as_ptr() {
                sys::rs_list_del(link);
                found = (*l).ctxt;
                break;
            }
            link = (*link).next;
        }
        sys::spin_unlock(&raw mut sys::rs_send_ctxts_all_lock);
    }
    found
}

/// What [`reclaim_unreturned`] found of a transport's ctxts outside its
/// free list.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Unreturned {
    /// Posted, yet their completion never came: reclaimed.
    pub(crate) posted: u32,
    /// Owned, queued or parked: left where they are, and still live.
    pub(crate) other: u32,
}

/// At transport teardown, once `ib_drain_qp` has flushed the QP and the
/// final drain and orphan release have run, every ctxt of `rdma` should be
/// on its free list. One still marked `Posted` had its WRs posted and
/// never completed: the provider lost the completion (C leaks such a ctxt
/// with its pages and mappings). Nothing of it can be in flight after the
/// drain, so it is released to the free list here; anything else found is
/// left alone (someone may still hold it) and reported. Logs what it found.
pub(crate) fn reclaim_unreturned(rdma: &Rdma) -> Unreturned {
    let mut found = Unreturned::default();
    let mut posted: *mut sys::llist_node = null_mut();
    let head = &raw mut sys::rs_send_ctxts_all;
    // SAFETY: the shim's static list and lock; every entry is the link of
    // a live ctxt's ledger (listed at allocation, unlisted before free),
    // and the ledger's `ctxt` was set before it was listed.
    unsafe {
        sys::spin_lock(&raw mut sys::rs_send_ctxts_all_lock);
        let mut link = (*head).next;
        while link != head {
            let l = kernel::container_of!(link.cast::<Opaque<sys::list_head>>(), Ledger, link);
            let ctxt = (*l).ctxt;
            if (*ctxt).sc_rdma == rdma.as_ptr() {
                match (*l).state.load(Relaxed) {
                    CtxtState::Free => {}
                    CtxtState::Posted => {
                        // On no list while posted: link it privately.
                        (*ctxt).sc_node.next = posted;
                        posted = addr_of_mut!((*ctxt).sc_node);
                        found.posted = found.posted.saturating_add(1);
                    }
                    _ => found.other = found.other.saturating_add(1),
                }
            }
            link = (*link).next;
        }
        sys::spin_unlock(&raw mut sys::rs_send_ctxts_all_lock);
    }
    while !posted.is_null() {
        // SAFETY: our private chain of `rdma`'s posted ctxts.
        let next = unsafe { (*posted).next };
        let ctxt = ctxt_of(posted);
        // SAFETY: the QP is drained (see above), so nothing of the ctxt is
        // in flight and no completion will take it any more.
        unsafe {
            let cid = addr_of!((*ctxt).sc_cid).read();
            kernel::pr_warn!(
                "transport teardown: Send cq.id={} cid={} ({} WRs, {} pages) posted, never completed: reclaimed\n",
                cid.ci_queue_id,
                cid.ci_completion_id,
                (*ctxt).sc_sqecount,
                (*ctxt).sc_page_count
            );
            send_ctxt_release(rdma, ctxt);
        }
        crate::stats::add(&crate::stats::CTXTS_RECLAIMED, 1);
        posted = next;
    }
    if found.other > 0 {
        kernel::pr_warn!(
            "transport teardown: {} send ctxts still held elsewhere\n",
            found.other
        );
    }
    found
}

/// `svc_rdma_send_ctxt_put`: queues `ctxt` for deferred release. Callable
/// from the Send completion. On the empty→non-empty transition the
/// transport is enqueued (`XPT_DATA`), so an nfsd thread drains the list
/// even on an idle connection.
///
/// A ctxt that is not owned or posted (a second put of the same ctxt) is
/// refused with a warning: queueing it again would corrupt the list it is
/// on.
///
/// # Safety
///
/// The caller owns `ctxt` and does not touch it afterwards.
pub(crate) unsafe fn send_ctxt_put(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: the caller's guarantee (`# Safety`).
    if let Err(was) = unsafe { queue_for_release(rdma, ctxt) } {
        kernel::pr_err!("send ctxt put while {:?}: ignored\n", was);
        kernel::do_once_lite! { kernel::warn_on!(true); }
    }
}

/// The work of [`send_ctxt_put`], which warns when it fails: queues
/// `ctxt` unless it is neither owned nor posted, in which case its state
/// is returned and nothing is touched.
///
/// # Safety
///
/// As for [`send_ctxt_put`].
pub(crate) unsafe fn queue_for_release(
    rdma: &Rdma,
    ctxt: *mut sys::svc_rdma_send_ctxt,
) -> Result<(), CtxtState> {
    // SAFETY: the caller hands over a ctxt of `rdma` (`# Safety`), whose
    // ledger lives as long as it does.
    let state = &unsafe { ledger(rdma, ctxt) }.state;
    // Posted first: most puts come from the Send completion.
    state
        .cmpxchg(CtxtState::Posted, CtxtState::Queued, Relaxed)
        .or_else(|_| state.cmpxchg(CtxtState::Owned, CtxtState::Queued, Relaxed))?;
    // SAFETY: per the caller; the list belongs to the live transport.
    let first = unsafe {
        sys::rs_llist_add(
            addr_of_mut!((*ctxt).sc_node),
            addr_of_mut!((*rdma.as_ptr()).sc_send_release_list),
        )
    };
    if first {
        // SAFETY: the transport is live.
        unsafe { sys::rs_xprt_set_data_and_enqueue(rdma.as_ptr()) };
    }
    Ok(())
}

/// Parks a ctxt whose WR chain was only partly posted (see
/// [`crate::sq::post_send`]): its Send will never complete, but posted
/// Writes may still read its mappings, so it can be released only after
/// `svc_rdma_free` has drained the QP: in [`release_at_teardown`].
/// The list is global because `svcxprt_rdma` has no field for it; it is
/// only ever non-empty after a post failure, which also closes the
/// connection.
///
/// # Safety
///
/// The caller owns `ctxt` and does not touch it afterwards.
pub(crate) unsafe fn orphan_add(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: a ctxt of `rdma` that the caller gives up (`# Safety`).
    unsafe { set_state(rdma, ctxt, CtxtState::Orphan) };
    // SAFETY: the shim's static list; llist_add is safe against concurrent
    // adds and a concurrent (locked) del_all.
    unsafe { sys::rs_llist_add(addr_of_mut!((*ctxt).sc_node), &raw mut sys::rs_orphans) };
}

/// Releases the parked ctxts of `rdma` onto its free list; returns how
/// many. Called only once `svc_rdma_free` has drained the QP
/// (`ib_drain_qp`), so none of their Writes is in flight any more.
///
/// The global list is only taken and sorted under the lock; the releases
/// (DMA unmapping, page puts) run after it is dropped.
pub(crate) fn orphans_release(rdma: &Rdma) -> usize {
    let mut ours: *mut sys::llist_node = null_mut();
    // SAFETY: the shim's static lock: releasers serialise on it, adders
    // (`llist_add`) need none.
    unsafe { sys::spin_lock(&raw mut sys::rs_orphans_lock) };
    // SAFETY: the shim's static list, emptied under its lock.
    let mut node = unsafe { sys::rs_llist_del_all(&raw mut sys::rs_orphans) };
    while !node.is_null() {
        // SAFETY: taken off the list under the lock, so ours to walk.
        let next = unsafe { (*node).next };
        // SAFETY: every orphan node is a parked ctxt's `sc_node`; another
        // transport's ctxt is only compared by its `sc_rdma`, never used.
        if unsafe { (*ctxt_of(node)).sc_rdma } == rdma.as_ptr() {
            // SAFETY: a node we took off the list: relink it privately.
            unsafe { (*node).next = ours };
            ours = node;
        } else {
            // SAFETY: another transport's orphan goes back for its own
            // transport's release.
            unsafe { sys::rs_llist_add(node, &raw mut sys::rs_orphans) };
        }
        node = next;
    }
    // SAFETY: taken above.
    unsafe { sys::spin_unlock(&raw mut sys::rs_orphans_lock) };
    let mut released = 0usize;
    while !ours.is_null() {
        // SAFETY: our private chain of this transport's parked ctxts.
        let next = unsafe { (*ours).next };
        // SAFETY: the transport's QP is drained (see above): nothing of
        // this ctxt is in flight, and nobody else holds it.
        unsafe { send_ctxt_release(rdma, ctxt_of(ours)) };
        released = released.saturating_add(1);
        ours = next;
    }
    released
}
