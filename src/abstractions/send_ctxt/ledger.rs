// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`Ledger`]: the record of where a send ctxt is in its life, kept in
//! front of the C struct, and the list of every ctxt it links them on;
//! what walks that list: teardown's search for ctxts that never came back
//! and the [`census`] of what the ctxts hold.

use super::*;

/// Where a send ctxt is in its life (see `ctxt.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(i32)]
pub(crate) enum CtxtState {
    /// Held by one thread (a [`Ctxt`], or lent to C). Zero, so that a
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

impl CtxtState {
    /// The state's name, for messages.
    pub(super) fn name(self) -> &'static str {
        match self {
            Self::Owned => "Owned",
            Self::Free => "Free",
            Self::Posted => "Posted",
            Self::Queued => "Queued",
            Self::Orphan => "Orphan",
        }
    }

    /// The state a ledger holds, `None` for a value no state has.
    pub(super) fn from_repr(v: i32) -> Option<Self> {
        match v {
            0 => Some(Self::Owned),
            1 => Some(Self::Free),
            2 => Some(Self::Posted),
            3 => Some(Self::Queued),
            4 => Some(Self::Orphan),
            _ => None,
        }
    }
}

/// The record every pooled ctxt carries in front of its C struct.
///
/// # Invariants
///
/// - The ctxt it belongs to starts [`LEDGER_SIZE`] bytes after it, in the
///   same allocation.
/// - `link` is on `rs_send_ctxts_all` (under `rs_send_ctxts_all_lock`) from
///   allocation to free.
/// - `state` holds a [`CtxtState`] (as its `i32`). Only the ctxt's current
///   holder writes it (the thread that owns it, the Send completion of a
///   posted one, the drain that releases it), with a volatile store, the
///   `WRITE_ONCE` of C; each handover (a list, a lock, the completion)
///   orders it for the next holder. It is read with volatile loads
///   (`READ_ONCE`) where the holder is not known: a put's check and
///   teardown's census after the QP is drained.
/// - `xprt_buf_len` is the length of the ctxt's header buffer
///   (`sc_xprt_buf`), set before the ctxt is first handed out and never
///   changed.
///
/// Not atomic read-modify-writes: in a module each kernel-crate atomic is
/// a call to a C helper, and the ledger is touched four times per reply.
/// What that gives up: two *concurrent* puts of one ctxt (two holders of
/// it, which `Ctxt` rules out for Rust and C's callers do not do) could
/// both pass the put's check; any later put of a ctxt already put is
/// still refused.
#[repr(C)]
pub(crate) struct Ledger {
    pub(super) link: Opaque<sys::list_head>,
    pub(super) state: Opaque<i32>,
    /// Length of `sc_xprt_buf` in bytes. Kept here (in the padding after
    /// `state`, on 64-bit) rather than read through `sc_rdma`
    /// (`sc_max_req_size`, a C `int` to range-check) at each use.
    pub(super) xprt_buf_len: u32,
    /// Bit `i` set: payload SGE `i + 1` holds a buffer mapping (a kvec,
    /// `ib_dma_map_single`), clear: a page mapping. Written by the ctxt's
    /// holder at each `add_payload_sge`, read by the release that undoes
    /// them (`unmap_payload`); only the bits below `num_sge - 1` mean
    /// anything.
    pub(super) single_sges: u64,
}

/// Bytes from a ledger to its ctxt.
pub(super) const LEDGER_SIZE: usize = size_of::<Ledger>();

// The ctxt follows the ledger: the ledger's size keeps it aligned.
kernel::static_assert!(LEDGER_SIZE % align_of::<sys::svc_rdma_send_ctxt>() == 0);

/// The ledger of the ctxt at `ctxt`.
pub(super) fn ledger_ptr(ctxt: *mut sys::svc_rdma_send_ctxt) -> *mut Ledger {
    ctxt.cast::<u8>().wrapping_sub(LEDGER_SIZE).cast::<Ledger>()
}

/// The ctxt of the ledger at `ledger`.
pub(super) fn ctxt_of_ledger(ledger: *mut Ledger) -> *mut sys::svc_rdma_send_ctxt {
    ledger
        .cast::<u8>()
        .wrapping_add(LEDGER_SIZE)
        .cast::<sys::svc_rdma_send_ctxt>()
}

/// Lists a new ctxt (zeroed, so `Owned`) on the list of all ctxts.
///
/// # Safety
///
/// `c` is a new ctxt, with its ledger, that nobody else knows, not listed.
pub(super) unsafe fn ledger_list(c: *mut sys::svc_rdma_send_ctxt) {
    let l = ledger_ptr(c);
    let _guard = all_ctxts_lock().lock();
    // SAFETY: the shim's list, changed only under its lock, which we hold;
    // the link is the new ctxt's (`# Safety`).
    unsafe { sys::list_add_tail((*l).link.get(), &raw mut sys::rs_send_ctxts_all) };
}

/// Takes `c` off the list of all ctxts.
///
/// # Safety
///
/// `c` was listed by [`ledger_list`].
pub(super) unsafe fn ledger_unlist(c: *mut sys::svc_rdma_send_ctxt) {
    let l = ledger_ptr(c);
    let _guard = all_ctxts_lock().lock();
    // SAFETY: the link is on the list (`# Safety`), which we hold the lock
    // of.
    unsafe { sys::rs_list_del((*l).link.get()) };
}

pub(super) fn all_ctxts_lock() -> &'static SpinLock<()> {
    // SAFETY: the shim's statically initialised lock, live as long as the
    // module.
    unsafe { SpinLock::from_raw(&raw mut sys::rs_send_ctxts_all_lock) }
}

/// Every listed ctxt with its ledger's state (as read, `READ_ONCE`).
///
/// # Safety
///
/// The caller holds [`all_ctxts_lock`] while it iterates. It may unlist
/// a ctxt once it has been yielded (the walk has moved past it), nothing
/// else.
pub(super) unsafe fn listed_ctxts() -> impl Iterator<Item = (*mut sys::svc_rdma_send_ctxt, i32)> {
    let head = &raw mut sys::rs_send_ctxts_all;
    // SAFETY: the list is initialised and, under its lock (`# Safety`),
    // unchanged.
    let mut link = unsafe { (*head).next };
    core::iter::from_fn(move || {
        if link == head {
            return None;
        }
        // SAFETY: under the lock every entry is the `link` of a live ctxt's
        // ledger (listed at allocation, unlisted before free).
        let l =
            unsafe { kernel::container_of!(link.cast::<Opaque<sys::list_head>>(), Ledger, link) };
        // SAFETY: the entry is listed, so its successor is too; read
        // before the caller may unlist the entry.
        link = unsafe { (*link).next };
        let c = ctxt_of_ledger(l);
        // SAFETY: the ledger's state word, read as `READ_ONCE`: its holder
        // may be writing it (`WRITE_ONCE`).
        let state = unsafe { core::ptr::read_volatile((*l).state.get()) };
        Some((c, state))
    })
}

/// The transport a listed ctxt belongs to.
///
/// # Safety
///
/// `c` is a live ctxt, listed: its `sc_rdma` was set before it was listed
/// and never changes.
unsafe fn transport_of(c: *mut sys::svc_rdma_send_ctxt) -> *mut sys::svcxprt_rdma {
    // SAFETY: a field of a live ctxt that nobody writes any more (`# Safety`).
    unsafe { (*c).sc_rdma }
}

/// Queues for release the ctxts of the transport whose QP `gone` proves
/// destroyed that are marked posted (their completion can no longer come)
/// or parked after a partial post: nothing of them is in flight, and
/// nobody else holds them. `seen` is told the state of every ctxt of the
/// transport not on its free list, queued or not (for the teardown's
/// report); `taking` is shown each ctxt taken, just before it is queued
/// ([`IdleCtxt::queue_at_teardown`]). The queueing happens here, not in
/// the caller: a taken ctxt handed out (an iterator, as before) could be
/// dropped instead, and its put, refused while it is marked posted, would
/// leave it listed as posted after its transport is freed, for the next
/// transport allocated at that address to take as its own.
pub(crate) fn queue_unreturned<'a>(
    gone: &SendQueueGone<'a>,
    mut seen: impl FnMut(CtxtState),
    mut taking: impl FnMut(&Ctxt<'a>),
) {
    let rdma = gone.rdma().as_ptr();
    let mut taken = CtxtChain::new();
    let guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock and unlist nothing.
    for (c, state) in unsafe { listed_ctxts() } {
        let Some(state) = CtxtState::from_repr(state) else {
            continue;
        };
        // SAFETY: `c` is listed, so live, while we hold the lock.
        if unsafe { transport_of(c) } != rdma || state == CtxtState::Free {
            continue;
        }
        seen(state);
        if may_be_unreturned(state as i32) {
            // SAFETY: a listed ctxt is not NULL. A posted ctxt belongs to
            // its completion, which `gone` proves can no longer run, and a
            // parked one to its ledger alone: either may become ours.
            taken.push(Ctxt(unsafe { NonNull::new_unchecked(c) }, PhantomData));
        }
    }
    drop(guard);
    for ctxt in taken {
        // INVARIANT: nothing of a taken ctxt can be in flight (`gone`).
        let idle = IdleCtxt(ctxt);
        taking(idle.ctxt());
        idle.queue_at_teardown();
    }
}

/// Whether a ctxt in `state` may still have work requests on its QP that
/// never completed: posted and not completed, or parked after a partial
/// post (whose posted Writes are not covered by a Send completion).
pub(super) fn may_be_unreturned(state: i32) -> bool {
    state == CtxtState::Posted as i32 || state == CtxtState::Orphan as i32
}

/// What [`release_unreturned_chunk_io`] found of a transport's ctxts.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct HeldAtTeardown {
    /// Posted and not completed, or parked after a partial post: they may
    /// still complete.
    pub(crate) outstanding: u32,
    /// Completed after the final drain, so still on the release list.
    pub(crate) completed_late: u32,
}

/// At transport teardown, after `ib_drain_qp` and the final drain: counts
/// the ctxts of `rdma` that may still hold chunk I/O, and releases their
/// chunks' R/W contexts. Those are the ctxts posted and never completed,
/// parked after a partial post, or completed after the final drain (a
/// provider that flushes its Send Queue late, as soft-iWARP may): their
/// `rdma_rw_ctx`s (MRs of the QP's pool, mappings made on its device) can
/// only be undone while the QP lives, and teardown is about to destroy it
/// ([`Drained::destroy_qp_and_quiesce_send_cq`]) before it releases them.
/// Afterwards no ctxt of `rdma` holds an R/W context: nothing posts at
/// teardown, and a ctxt that completes after this walk was posted at it.
/// Releasing them twice is harmless: `svc_rdma_cc_release` empties the
/// list it undoes, and the ctxt's own release later finds it empty. The
/// Write chunk infos themselves stay until the ctxt is released: a late
/// Write completion reads their `cc_cqe` and `cc_cid`.
///
/// At teardown (`drained`), nothing posts on the QP any more, nothing
/// drains the release list but teardown itself, and the only code that
/// may still run on those ctxts are their completions (`WcSend`,
/// `svc_rdma_write_done`, `svc_rdma_reply_done`), none of which touches
/// the R/W context lists. The QP is still there unless
/// [`Drained::destroy_qp_and_quiesce_send_cq`] destroyed it, which
/// teardown calls only after this; called after it, this only counts (no
/// R/W context can be undone without the QP).
pub(crate) fn release_unreturned_chunk_io(drained: &Drained<'_>) -> HeldAtTeardown {
    let mut found = HeldAtTeardown::default();
    let r = drained.rdma().as_ptr();
    // Once the QP is destroyed nothing can undo an R/W context: counted,
    // then left (`Rdma` invariant; a second call after the destroy).
    let qp_live = !drained.rdma().qp().is_null();
    let _guard = all_ctxts_lock().lock();
    // SAFETY: lock held, nothing unlisted.
    for (c, state) in unsafe { listed_ctxts() } {
        // SAFETY: `c` is listed, so live, while we hold the lock.
        if unsafe { transport_of(c) } != r {
            continue;
        }
        if may_be_unreturned(state) {
            found.outstanding = found.outstanding.saturating_add(1);
        } else if state == CtxtState::Queued as i32 {
            found.completed_late = found.completed_late.saturating_add(1);
        } else {
            continue;
        }
        if qp_live {
            // SAFETY: a live ctxt of `r` in one of these states belongs to
            // no thread (a queued one to the drainer, which at teardown is
            // our caller), its completions leave its chunk lists alone
            // (the function's docs), and `r`'s QP lives.
            unsafe { release_chunk_rw_ctxts(r, c) };
        }
    }
    found
}

/// Undoes the R/W contexts of a ctxt's Write chunks and Reply chunk
/// (`svc_rdma_cc_release`, which empties what it undoes, so a second
/// release finds nothing). Atomic: it unmaps, returns MRs under the QP's
/// irq-safe lock and lists the R/W contexts for reuse.
///
/// # Safety
///
/// `c` is a live ctxt of the transport `r`, whose chunk lists nobody else
/// uses meanwhile, and `r`'s QP is not destroyed.
unsafe fn release_chunk_rw_ctxts(r: *mut sys::svcxprt_rdma, c: *mut sys::svc_rdma_send_ctxt) {
    // SAFETY: `c` is live (`# Safety`): the place of one of its fields.
    let head = unsafe { addr_of_mut!((*c).sc_write_info_list) };
    // SAFETY: the ctxt's list of Write chunk infos, initialised at its
    // allocation, ours meanwhile (`# Safety`).
    let mut link = unsafe { (*head).next };
    while link != head {
        // SAFETY: each entry is the `wi_list` of a write info that lives
        // until the ctxt's release.
        let info = unsafe { kernel::container_of!(link, sys::svc_rdma_write_info, wi_list) };
        // SAFETY: the info's chunk context, on `r`, whose QP lives
        // (`# Safety`); the release leaves the info listed.
        unsafe {
            sys::svc_rdma_cc_release(
                r,
                addr_of_mut!((*info).wi_cc),
                sys::dma_data_direction::DMA_TO_DEVICE,
            )
        };
        // SAFETY: the entry is still listed, so its successor is too.
        link = unsafe { (*link).next };
    }
    // SAFETY: the ctxt's Reply chunk context, ours meanwhile (`# Safety`).
    let reply_cc = unsafe { addr_of_mut!((*c).sc_reply_info.wi_cc) };
    // SAFETY: `reply_cc` is live; its SQE count is 0 unless the Reply
    // chunk's Writes were built.
    if unsafe { (*reply_cc).cc_sqecount } != 0 {
        // SAFETY: a chunk context on `r`, whose QP lives (`# Safety`).
        unsafe { sys::svc_rdma_cc_release(r, reply_cc, sys::dma_data_direction::DMA_TO_DEVICE) };
    }
}

/// Whether every R/W context of a ctxt's Write chunks and Reply chunk has
/// been undone ([`release_chunk_rw_ctxts`], at teardown while the QP
/// lived): the chunk contexts' lists are empty, so releasing them only
/// frees the Write chunk infos and touches no QP. Only a ctxt released
/// after its QP was destroyed asks, from a cold function.
///
/// # Safety
///
/// `c` is a live ctxt whose chunk lists nobody else uses meanwhile.
#[inline(always)]
pub(super) unsafe fn chunk_rw_ctxts_undone(c: *mut sys::svc_rdma_send_ctxt) -> bool {
    // SAFETY: `c` is live (`# Safety`): the place of one of its fields.
    let head = unsafe { addr_of_mut!((*c).sc_write_info_list) };
    // SAFETY: the ctxt's list of Write chunk infos, initialised at its
    // allocation, ours meanwhile (`# Safety`).
    let mut link = unsafe { (*head).next };
    while link != head {
        // SAFETY: each entry is the `wi_list` of a write info that lives
        // until the ctxt's release.
        let info = unsafe { kernel::container_of!(link, sys::svc_rdma_write_info, wi_list) };
        // SAFETY: the info is live: the list head of its R/W contexts.
        let rw = unsafe { addr_of_mut!((*info).wi_cc.cc_rwctxts) };
        // SAFETY: an initialised list head (`svc_rdma_cc_init`).
        if unsafe { (*rw).next } != rw {
            return false;
        }
        // SAFETY: the entry is listed, so its successor is too.
        link = unsafe { (*link).next };
    }
    // SAFETY: `c` is live: the list head of its Reply chunk's R/W contexts.
    let rw = unsafe { addr_of_mut!((*c).sc_reply_info.wi_cc.cc_rwctxts) };
    // SAFETY: an initialised list head (`svc_rdma_cc_init`, at every reset).
    unsafe { (*rw).next == rw }
}

/// At transport teardown, when its Send CQ could not be shown quiescent:
/// takes the ctxts of `rdma` that may still be completed off the list of
/// all ctxts and leaves their memory to a completion that may never come,
/// as C leaves them (it never looks). Returns how many.
pub(crate) fn abandon_unreturned(drained: &Drained<'_>) -> u32 {
    let rdma = drained.rdma();
    let mut n = 0u32;
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock, and unlist only a ctxt already yielded.
    for (c, state) in unsafe { listed_ctxts() } {
        // SAFETY: `c` is listed, so live, while we hold the lock.
        if unsafe { transport_of(c) } == rdma.as_ptr() && may_be_unreturned(state) {
            // SAFETY: its ledger's link, on the list whose lock we hold and
            // already passed by the walk; no completion touches the link.
            unsafe { sys::rs_list_del((*ledger_ptr(c)).link.get()) };
            n = n.saturating_add(1);
        }
    }
    n
}

/// What the send ctxts of every transport hold: the leak counters.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Census {
    /// Ctxts allocated and not freed.
    pub(crate) ctxts: i64,
    /// Reply pages moved into ctxts and not released.
    pub(crate) pages: i64,
    /// Payload SGEs DMA-mapped and not unmapped.
    pub(crate) sges: i64,
}

/// Counts what the listed ctxts hold. Counted where it is, rather than
/// kept in counters the Send path would update per reply: a ctxt holds
/// its pages from the move into it until its release, which zeroes its
/// page count and SGE count ([`IdleCtxt::release_io`]); the header's SGE
/// is not a payload mapping. A snapshot: ctxts in use change under it.
#[inline(never)]
pub(crate) fn census() -> Census {
    let mut n = Census::default();
    let _guard = all_ctxts_lock().lock();
    // The two counts are read Relaxed: a snapshot for a counter, ordered
    // with nothing. Their writes are volatile (`WRITE_ONCE`: `set_num_sge`,
    // `set_page_count`) rather than `atomic_store`, which is a call to a C
    // helper on kernels built with GCC (no `CONFIG_RUST_INLINE_HELPERS`, as
    // Debian's), on the per-reply path.
    // SAFETY: we hold the lock and unlist nothing.
    for (c, _) in unsafe { listed_ctxts() } {
        // The counts, which their holder may be changing, are read with
        // `atomic_load` (`READ_ONCE`) and written with marked stores only:
        // no data race in the LKMM, no torn or invented value.
        // SAFETY: `c` is listed, so live, while we hold the lock.
        let pages = unsafe { atomic_load(addr_of_mut!((*c).sc_page_count), Relaxed) };
        // SAFETY: `c` is still live under the lock, and its holder writes
        // `num_sge` with marked stores only (`set_num_sge`).
        let sges = unsafe { atomic_load(addr_of_mut!((*c).sc_send_wr.num_sge), Relaxed) };
        n.ctxts = n.ctxts.saturating_add(1);
        n.pages = n.pages.saturating_add(i64::from(pages.max(0)));
        n.sges = n
            .sges
            .saturating_add(i64::from(sges.saturating_sub(1).max(0)));
    }
    n
}
