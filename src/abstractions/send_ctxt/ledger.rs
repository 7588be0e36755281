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
        // SAFETY: under the lock every entry is the link of a live ctxt's
        // ledger (listed at allocation, unlisted before free), at the
        // ledger's start; the successor is read before the caller may
        // unlist the entry.
        unsafe {
            let l = kernel::container_of!(link.cast::<Opaque<sys::list_head>>(), Ledger, link);
            link = (*link).next;
            Some((
                ctxt_of_ledger(l),
                core::ptr::read_volatile((*l).state.get()),
            ))
        }
    })
}

/// Takes the ctxts of the transport whose QP `gone` proves destroyed that
/// are marked posted (their completion can no longer come) or parked
/// after a partial post: nothing of them is in flight, and nobody else
/// holds them. `seen` is told the state of every ctxt of the transport
/// not on its free list, taken or not (for the teardown's report).
pub(crate) fn take_unreturned<'a>(
    gone: &SendQueueGone<'a>,
    mut seen: impl FnMut(CtxtState),
) -> impl Iterator<Item = IdleCtxt<'a>> {
    let rdma = gone.rdma().as_ptr();
    let mut taken = CtxtChain::new();
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock and unlist nothing. `sc_rdma` is set before
    // a ctxt is listed and never changes. A posted ctxt belongs to its
    // completion, which `gone` proves can no longer run, and a parked one
    // to its ledger alone: either may become ours.
    unsafe {
        for (c, state) in listed_ctxts() {
            let Some(state) = CtxtState::from_repr(state) else {
                continue;
            };
            if (*c).sc_rdma != rdma || state == CtxtState::Free {
                continue;
            }
            seen(state);
            if may_be_unreturned(state as i32) {
                taken.push(Ctxt(NonNull::new_unchecked(c), PhantomData));
            }
        }
    }
    // INVARIANT: nothing of a taken ctxt can be in flight (`gone`).
    taken.map(IdleCtxt)
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
    // `svc_rdma_cc_release` may run under this lock: it is atomic (unmaps,
    // returns MRs under the QP's irq-safe lock, lists R/W contexts for reuse).
    // SAFETY: lock held, nothing unlisted; the ctxts of `rdma` in these
    // states belong to no thread (a queued one to the drainer, which at
    // teardown is our caller) and their completions leave these lists
    // alone (the function's docs); each write info on `sc_write_info_list`
    // lives until its ctxt's release.
    unsafe {
        for (c, state) in listed_ctxts() {
            if (*c).sc_rdma != r {
                continue;
            }
            if may_be_unreturned(state) {
                found.outstanding = found.outstanding.saturating_add(1);
            } else if state == CtxtState::Queued as i32 {
                found.completed_late = found.completed_late.saturating_add(1);
            } else {
                continue;
            }
            if !qp_live {
                continue;
            }
            let head = addr_of_mut!((*c).sc_write_info_list);
            let mut link = (*head).next;
            while link != head {
                let info = kernel::container_of!(link, sys::svc_rdma_write_info, wi_list);
                sys::svc_rdma_cc_release(
                    r,
                    addr_of_mut!((*info).wi_cc),
                    sys::dma_data_direction::DMA_TO_DEVICE,
                );
                link = (*link).next;
            }
            if (*c).sc_reply_info.wi_cc.cc_sqecount != 0 {
                sys::svc_rdma_cc_release(
                    r,
                    addr_of_mut!((*c).sc_reply_info.wi_cc),
                    sys::dma_data_direction::DMA_TO_DEVICE,
                );
            }
        }
    }
    found
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
    // Only its ledger link is written, which no completion touches.
    unsafe {
        for (c, state) in listed_ctxts() {
            if (*c).sc_rdma == rdma.as_ptr() && may_be_unreturned(state) {
                sys::rs_list_del((*ledger_ptr(c)).link.get());
                n = n.saturating_add(1);
            }
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
    // SAFETY: we hold the lock and unlist nothing, so each listed ctxt is
    // live; its counts, which their holder may be changing, are read with
    // `atomic_load` (`READ_ONCE`) and written with marked stores only: no
    // data race in the LKMM, no torn or invented value.
    unsafe {
        for (c, _) in listed_ctxts() {
            let pages = atomic_load(addr_of_mut!((*c).sc_page_count), Relaxed);
            let sges = atomic_load(addr_of_mut!((*c).sc_send_wr.num_sge), Relaxed);
            n.ctxts = n.ctxts.saturating_add(1);
            n.pages = n.pages.saturating_add(i64::from(pages.max(0)));
            n.sges = n
                .sges
                .saturating_add(i64::from(sges.saturating_sub(1).max(0)));
        }
    }
    n
}
