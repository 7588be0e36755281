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

use crate::sys;
use crate::xprt::Rdma;
use core::mem::{size_of, ManuallyDrop};
use core::ptr::{addr_of_mut, null_mut, NonNull};

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
    let nsges = rdma.max_send_sges();
    let size = size_of::<sys::ib_sge>()
        .checked_mul(nsges)?
        .checked_add(size_of::<sys::svc_rdma_send_ctxt>())?;
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
    // header buffer's mapping made at allocation.
    unsafe {
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

/// `svc_rdma_send_ctxts_destroy`: frees every ctxt on the free list.
///
/// Runs only from `svc_rdma_free`, after `ib_drain_qp` and a final drain,
/// so no completion can run and every released ctxt is on the free list;
/// being the only consumer left, it needs no lock.
pub(crate) fn send_ctxts_destroy(rdma: &Rdma) {
    // Normally released by `svc_rdma_free`'s drain (see `orphan_add`).
    // Found here, they return their R/W contexts after those were
    // destroyed, and those leak: say so once.
    if orphans_release(rdma) > 0 {
        kernel::do_once_lite! { kernel::warn_on!(true); }
    }
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
        // SAFETY: just popped from the free list, so ours.
        unsafe { SendCtxt::from_raw(ctxt)? }
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
    for sge in sges.get(1..mapped).unwrap_or_default() {
        // SAFETY: each SGE past the first was mapped by page_dma_map with
        // this address and length.
        unsafe {
            sys::rs_trace_dma_unmap_page(addr_of_mut!((*ctxt).sc_cid), sge.addr, sge.length);
            sys::rs_ib_dma_unmap_page(rdma.device(), sge.addr, sge.length as usize);
        }
        crate::stats::add(&crate::stats::SGES_MAPPED, -1);
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

/// `svc_rdma_send_ctxt_put`: queues `ctxt` for deferred release. Callable
/// from the Send completion. On the empty→non-empty transition the
/// transport is enqueued (`XPT_DATA`), so an nfsd thread drains the list
/// even on an idle connection.
///
/// # Safety
///
/// The caller owns `ctxt` and does not touch it afterwards.
pub(crate) unsafe fn send_ctxt_put(rdma: &Rdma, ctxt: *mut sys::svc_rdma_send_ctxt) {
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
}

/// Parks a ctxt whose WR chain was only partly posted (see
/// [`crate::sq::post_send`]): its Send will never complete, but posted
/// Writes may still read its mappings, so it can be released only after
/// `svc_rdma_free` has drained the QP: in its `svc_rdma_send_ctxts_drain`
/// call, before `svc_rdma_destroy_rw_ctxts` (the release returns the
/// chunks' R/W contexts to `sc_rw_ctxts`), else in [`send_ctxts_destroy`].
/// The list is global because `svcxprt_rdma` has no field for it; it is
/// only ever non-empty after a post failure, which also closes the
/// connection.
///
/// # Safety
///
/// The caller owns `ctxt` and does not touch it afterwards.
pub(crate) unsafe fn orphan_add(ctxt: *mut sys::svc_rdma_send_ctxt) {
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
