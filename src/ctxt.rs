// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! The send ctxt pool: `svc_rdma_send_ctxt_alloc`, `_get`, `_put`,
//! `_unmap`, `_release`, `_drain` and `_destroy` of the C file.
//!
//! A send ctxt carries one reply: its transport header buffer (DMA-mapped
//! once, for the ctxt's life, as SGE 0), the SGEs of the reply, the pages
//! moved out of the `svc_rqst`, and the Write WR chain for chunks
//! ([`Ctxt`]).
//!
//! Life of a ctxt: `get` → owned by one thread as a [`Ctxt`] → either
//! posted (ownership passes to the Send completion, which `put`s it) or
//! dropped (which `put`s it) → on `sc_send_release_list` → `drain` releases
//! its DMA mappings and pages and returns it to the free list
//! `sc_send_ctxts` → `destroy` frees it when the transport goes away.
//! `sc_node` links it into one of the two lists at a time, never both.
//!
//! Each ctxt's [`Ledger`](crate::abstractions::send_ctxt::Ledger) records
//! where it is in that life. It lets `put` refuse a second put of the same
//! ctxt, which would corrupt the lists, and lets the transport's teardown
//! find ctxts that never came back: one whose Send was posted but whose
//! completion never came (the provider lost it), or one parked after a
//! partial post, is reclaimed once `ib_drain_qp` guarantees nothing of it
//! is in flight, where C leaks it.

use crate::abstractions::events;
use crate::abstractions::send_ctxt::{
    report_refused_put, take_ctxts_of, Ctxt, CtxtState, IdleCtxt,
};
use crate::abstractions::xprt::Rdma;
use crate::stats;
use kernel::num::casts::FromSafeCast;

/// `svc_rdma_send_ctxts_destroy`: frees every ctxt of the transport.
///
/// Runs only from `svc_rdma_free`, after `ib_drain_qp` and a final drain,
/// so no completion can run; being the only user left, it needs no lock.
/// First [`release_at_teardown`] puts the ctxts that never came back on
/// the free list.
pub(crate) fn send_ctxts_destroy(rdma: &Rdma) {
    release_at_teardown(rdma);
    for ctxt in rdma.take_free_ctxts() {
        ctxt.free();
    }
}

/// At transport teardown (`svc_rdma_free`, after `ib_drain_qp`: nothing
/// of any ctxt is in flight any more): releases onto the free list the
/// ctxts parked after a partial post ([`orphan_add`]) and those whose Send
/// never completed, which [`reclaim_unreturned`] finds and queues on the
/// release list; returns how many. One drain then empties the list.
///
/// Their chunks' R/W contexts go back to `sc_rw_ctxts`, which
/// `svc_rdma_free` has already emptied with `svc_rdma_destroy_rw_ctxts`
/// (it runs before `svc_rdma_send_ctxts_destroy`), so it is called once
/// more; it only frees what the list holds. The QP those contexts refer to
/// is destroyed only after this. Doing this here rather than in the final
/// drain keeps every drain, called once per RPC, free of a teardown test.
pub(crate) fn release_at_teardown(rdma: &Rdma) -> usize {
    let found = reclaim_unreturned(rdma);
    let released = usize::from_safe_cast(found.posted.saturating_add(found.parked));
    if released > 0 {
        release_completed(rdma);
        // SAFETY: we are in `svc_rdma_free` after `ib_drain_qp` (the
        // contract of this function's only production caller).
        unsafe { rdma.destroy_rw_ctxts() };
    }
    released
}

/// `svc_rdma_send_ctxt_get`: a ready-to-use ctxt, from the free list, from
/// completed ones not yet released, or newly allocated. May sleep.
pub(crate) fn send_ctxt_get(rdma: &Rdma) -> Option<Ctxt> {
    if crate::fault::inject(crate::fault::Point::CtxtGet) {
        return None;
    }
    let pooled = rdma.pop_free_ctxt().or_else(|| {
        send_ctxts_drain(rdma);
        rdma.pop_free_ctxt()
    });
    let mut ctxt = match pooled {
        Some(c) => {
            c.set_state(CtxtState::Owned);
            c
        }
        None => Ctxt::alloc(rdma)?,
    };
    ctxt.reset_for_reply();
    Some(ctxt)
}

/// `svc_rdma_send_ctxt_release`: unmaps, releases the reply's pages, and
/// returns the ctxt to the free list. Inline in the drain, its only
/// caller (teardown queues what it releases for a drain too).
#[inline(always)]
fn release_to_pool(rdma: &Rdma, mut ctxt: IdleCtxt) {
    ctxt.release_io(events::dma_unmap_page);
    let ctxt = ctxt.into_ctxt();
    ctxt.set_state(CtxtState::Free);
    rdma.free_ctxts().push(ctxt);
}

/// `svc_rdma_send_ctxts_drain`: releases every ctxt whose Send completed.
/// Process context only (it unmaps and frees pages); safe against
/// concurrent drains, since `llist_del_all` hands each ctxt to one of them.
///
/// Called a few times per RPC (every `xpo_release_ctxt`, and when the pool
/// is empty), mostly finding nothing: that test is inline in the caller.
#[inline]
pub(crate) fn send_ctxts_drain(rdma: &Rdma) {
    if !rdma.released_ctxts().is_empty() {
        release_completed(rdma);
    }
}

/// The releasing half of [`send_ctxts_drain`].
#[inline(never)]
fn release_completed(rdma: &Rdma) {
    for ctxt in rdma.take_released_ctxts() {
        release_to_pool(rdma, ctxt);
    }
}

/// What [`reclaim_unreturned`] found of a transport's ctxts outside its
/// free list.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Unreturned {
    /// Posted, yet their completion never came: reclaimed.
    pub(crate) posted: u32,
    /// Parked after a partial post ([`orphan_add`]): released.
    pub(crate) parked: u32,
    /// Owned or queued: left where they are, and still live.
    pub(crate) other: u32,
}

/// At transport teardown, once `ib_drain_qp` has flushed the QP and the
/// final drain has run, every ctxt of `rdma` should be on its free list
/// or parked. One still marked `Posted` had its WRs posted and never
/// completed: the provider lost the completion (C leaks such a ctxt with
/// its pages and mappings); it is reported. Nothing of either can be in
/// flight after the drain, so both are queued here for release (by
/// [`release_at_teardown`]'s drain); anything else found is left alone
/// (someone may still hold it) and reported.
pub(crate) fn reclaim_unreturned(rdma: &Rdma) -> Unreturned {
    let mut found = Unreturned::default();
    // Taking a posted or parked ctxt is sound only here: after the drain
    // no completion will ever take it, and no Write of it is in flight.
    let taken = take_ctxts_of(rdma, |state| match state {
        CtxtState::Free => false,
        CtxtState::Posted => {
            found.posted = found.posted.saturating_add(1);
            true
        }
        CtxtState::Orphan => {
            found.parked = found.parked.saturating_add(1);
            true
        }
        _ => {
            found.other = found.other.saturating_add(1);
            false
        }
    });
    for ctxt in taken {
        // SAFETY: the QP is drained, so nothing of the ctxt is in flight.
        let ctxt = unsafe { IdleCtxt::assume(ctxt) };
        if ctxt.ctxt().state() == Some(CtxtState::Posted) {
            let cid = ctxt.ctxt().cid();
            kernel::pr_warn!(
                "transport teardown: Send cq.id={} cid={} ({} WRs, {} pages) posted, never completed: reclaimed\n",
                cid.ci_queue_id,
                cid.ci_completion_id,
                ctxt.ctxt().sqecount(),
                ctxt.ctxt().page_count()
            );
            stats::add(&stats::CTXTS_RECLAIMED, 1);
        }
        ctxt.queue_at_teardown();
    }
    if found.other > 0 {
        kernel::pr_warn!(
            "transport teardown: {} send ctxts still held elsewhere\n",
            found.other
        );
    }
    found
}

/// `svc_rdma_send_ctxt_put`: queues `ctxt` for deferred release (see
/// [`Ctxt::try_put`]); dropping a [`Ctxt`] does the same. Callable from the
/// Send completion. A refused put (the ctxt is on a list already) is
/// reported with a warning.
#[inline]
pub(crate) fn send_ctxt_put(ctxt: Ctxt) {
    if let Err(was) = ctxt.try_put() {
        report_refused_put(was);
    }
}

/// Parks a ctxt whose WR chain was only partly posted (see
/// [`crate::sq::post_send`]): its Send will never complete, but posted
/// Writes may still read its mappings, so it can be released only after
/// `svc_rdma_free` has drained the QP: in [`release_at_teardown`]. Marked
/// [`CtxtState::Orphan`] and held by nothing but its ledger, which lists
/// every ctxt: that is where teardown finds it.
pub(crate) fn orphan_add(ctxt: Ctxt) {
    ctxt.set_state(CtxtState::Orphan);
    let _ = ctxt.into_raw();
}
