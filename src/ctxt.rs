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
//! partial post, is reclaimed once the QP is destroyed and its Send CQ's
//! poller stopped, so that nothing of it can complete any more, where C
//! leaks it ([`release_unreturned`]).

use crate::abstractions::events;
use crate::abstractions::send_ctxt::{
    abandon_unreturned, queue_unreturned, release_unreturned_chunk_io, report_refused_put, Ctxt,
    CtxtState, HeldAtTeardown, IdleCtxt,
};
use crate::abstractions::xprt::{Drained, Rdma, SendQueueGone};
use crate::stats;

/// `svc_rdma_send_ctxts_destroy`: frees every ctxt of the transport, at
/// its teardown (`drained`; being the only user left, it needs no lock).
/// First [`release_unreturned`] releases, onto the free list, the ctxts
/// that never came back.
pub(crate) fn send_ctxts_destroy(drained: &Drained<'_>) {
    crate::fault::teardown_pause();
    // Before it quiesces, `release_unreturned` releases the R/W contexts
    // of every ctxt that still has any (posted, parked or completed after
    // the final drain; at teardown nothing posts, so no other can get
    // one): the releases that follow find none to undo.
    release_unreturned(drained, |d| d.destroy_qp_and_quiesce_send_cq());
    for ctxt in Rdma::take_free_ctxts(drained) {
        ctxt.free();
    }
}

/// At transport teardown, after `ib_drain_qp` and the final drain, every
/// ctxt should be back on the free list. Three kinds may not be: one whose
/// Send was posted and never completed (the provider broke the drain's
/// promise, as soft-iWARP does for work requests queued behind a
/// TERMINATE; C leaks such a ctxt with its pages and mappings), one parked
/// after a partial post
/// ([`PartlyPosted`](crate::abstractions::send_ctxt::PartlyPosted)), and
/// one whose completion came after the final drain had run (soft-iWARP
/// flushes its Send Queue again when the connection's socket closes),
/// which sits on the release list. The first two may still be completed
/// late, and a late completion reads the ctxt. So if there are any of the
/// three, the chunks' R/W contexts of all of them are released while the
/// QP lives, then `quiesce` destroys the QP and waits out the Send CQ's
/// poller; what completed late is released as usual, and only what is
/// still unreturned then is reclaimed ([`reclaim_unreturned`], on the
/// proof `quiesce` gives). If `quiesce` gives none, the first two kinds
/// are left allocated and unlisted, as C leaves them. Returns how many
/// ctxts were reclaimed.
///
/// Their chunks' R/W contexts went back to `sc_rw_ctxts`, which
/// `svc_rdma_free` has already emptied with `svc_rdma_destroy_rw_ctxts`
/// (it runs before `svc_rdma_send_ctxts_destroy`), so it is called once
/// more; it only frees what the list holds. Doing all this here rather
/// than in the final drain keeps every drain, called once per RPC, free of
/// a teardown test.
pub(crate) fn release_unreturned<'a>(
    drained: &Drained<'a>,
    quiesce: impl FnOnce(&Drained<'a>) -> Option<SendQueueGone<'a>>,
) -> u32 {
    let rdma = drained.rdma();
    let held = release_unreturned_chunk_io(drained);
    // A ctxt that completed after the final drain is released only once
    // its completion handler has returned, which the quiesce waits for (a
    // completion marks the ctxt queued before it lists it).
    if held.outstanding == 0 && held.completed_late == 0 {
        return 0;
    }
    let Some(gone) = quiesce(drained) else {
        leave_unreturned(drained);
        return 0;
    };
    // What late completions put back while the QP was going away, before
    // the walk, which would count it as held elsewhere.
    release_completed(rdma);
    let found = reclaim_unreturned(&gone);
    release_completed(rdma);
    // SAFETY: the QP is destroyed and its completions quiesced (`gone`):
    // no R/W context is in use.
    unsafe { drained.destroy_rw_ctxts() };
    report_teardown(&held, &found);
    found.posted.saturating_add(found.parked)
}

/// Teardown's way out when the Send CQ cannot be quiesced (not polled from
/// a workqueue, which `svc_rdma_accept` never creates): the ctxts that may
/// still be completed are unlisted and left allocated, as C leaves them,
/// and reported. Out of line and cold: never expected to run, and so the
/// KUnit build runs the very code the shipped module has.
#[cold]
#[inline(never)]
fn leave_unreturned(drained: &Drained<'_>) {
    let n = abandon_unreturned(drained);
    kernel::pr_warn!(
        "transport teardown: {} uncompleted send ctxts left allocated: Send CQ not quiescable\n",
        n
    );
}

/// The kernel log's line for a teardown that found ctxts outside the free
/// list after the final drain (the teardown tests count these lines).
#[cold]
#[inline(never)]
fn report_teardown(held: &HeldAtTeardown, found: &Unreturned) {
    let reclaimed = found.posted.saturating_add(found.parked);
    kernel::pr_warn!(
        "transport teardown: {} send ctxts outstanding after the drain, {} completed after the final drain, QP destroyed early: {} completed meanwhile, {} never completed, {} parked after a partial post\n",
        held.outstanding,
        held.completed_late,
        held.outstanding.saturating_sub(reclaimed),
        found.posted,
        found.parked
    );
}

/// `svc_rdma_send_ctxt_get`: a ready-to-use ctxt, from the free list, from
/// completed ones not yet released, or newly allocated. May sleep.
pub(crate) fn send_ctxt_get(rdma: &Rdma) -> Option<Ctxt<'_>> {
    if crate::fault::inject(crate::fault::Point::CtxtGet) {
        return None;
    }
    let pooled = rdma.pop_free_ctxt().or_else(|| {
        send_ctxts_drain(rdma);
        rdma.pop_free_ctxt()
    });
    let mut ctxt = match pooled {
        Some(c) => c,
        None => Ctxt::alloc(rdma)?,
    };
    ctxt.reset_for_reply();
    Some(ctxt)
}

/// `svc_rdma_send_ctxt_release`: unmaps, releases the reply's pages, and
/// returns the ctxt to the free list. Inline in the drain, its only
/// caller (teardown queues what it releases for a drain too).
///
/// # Safety
///
/// `ctxt` is a ctxt of `rdma`.
#[inline(always)]
unsafe fn release_to_pool(rdma: &Rdma, mut ctxt: IdleCtxt<'_>) {
    ctxt.release_io(events::dma_unmap_page);
    // SAFETY: a ctxt of `rdma` (`# Safety`).
    unsafe { rdma.push_free_ctxt(ctxt) };
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
        // SAFETY: taken off `rdma`'s own release list, which holds only
        // its ctxts (`CtxtList` invariant).
        unsafe { release_to_pool(rdma, ctxt) };
    }
}

/// What [`reclaim_unreturned`] found of a transport's ctxts outside its
/// free list.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Unreturned {
    /// Posted, yet their completion never came: reclaimed.
    pub(crate) posted: u32,
    /// Parked after a partial post, released (see
    /// [`crate::abstractions::send_ctxt::PartlyPosted`]).
    pub(crate) parked: u32,
    /// Owned or queued: left where they are, and still live.
    pub(crate) other: u32,
}

/// Takes the ctxts of the transport whose QP `gone` proves destroyed
/// that are still marked posted (their completion never came: the
/// provider lost it, and it can no longer come) or parked after a partial
/// post, and queues them on the release list for [`release_unreturned`]'s
/// drain. Anything else found outside the free list is left alone
/// (someone may still hold it) and reported.
pub(crate) fn reclaim_unreturned(gone: &SendQueueGone<'_>) -> Unreturned {
    let mut found = Unreturned::default();
    queue_unreturned(
        gone,
        |state| match state {
            CtxtState::Posted => found.posted = found.posted.saturating_add(1),
            CtxtState::Orphan => found.parked = found.parked.saturating_add(1),
            _ => found.other = found.other.saturating_add(1),
        },
        report_reclaimed,
    );
    if found.other > 0 {
        kernel::pr_warn!(
            "transport teardown: {} send ctxts still held elsewhere\n",
            found.other
        );
    }
    found
}

/// Warns about, and counts, a ctxt taken at teardown whose Send never
/// completed (a parked one was expected there, and is not reported).
fn report_reclaimed(ctxt: &Ctxt<'_>) {
    if ctxt.state() != Some(CtxtState::Posted) {
        return;
    }
    let cid = ctxt.cid();
    kernel::pr_warn!(
        "teardown: Send cq.id={} cid={} ({} WRs, {} pages) never completed: reclaimed\n",
        cid.ci_queue_id,
        cid.ci_completion_id,
        ctxt.sqecount(),
        ctxt.page_count()
    );
    stats::add(&stats::CTXTS_RECLAIMED, 1);
}

/// `svc_rdma_send_ctxt_put`: queues `ctxt` for deferred release (see
/// [`Ctxt::try_put`]); dropping a [`Ctxt`] does the same. Callable from the
/// Send completion. A refused put (the ctxt is on a list already) is
/// reported with a warning.
#[inline]
pub(crate) fn send_ctxt_put(ctxt: Ctxt<'_>) {
    if let Err(was) = ctxt.try_put() {
        report_refused_put(was);
    }
}
