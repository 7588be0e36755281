// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Send Queue accounting, posting and the Send completion:
//! `svc_rdma_wake_send_waiters`, `svc_rdma_sq_wait`, `svc_rdma_post_send`,
//! `svc_rdma_post_send_err` and `svc_rdma_wc_send` of the C file.
//!
//! Transport lifetime: a posted chain's Send completion ([`WcSend`]) uses the
//! transport after `svc_rdma_sendto` has returned. Linux 7.3 takes no
//! reference for it; the transport stays alive because `svc_rdma_free`
//! calls `ib_drain_qp` before it tears anything down, and `ib_drain_qp`
//! returns only after every posted WR has completed. This crate relies on
//! that too, and keeps one more rule of its own: a chain that was only
//! partly posted never gets a Send completion, so its ctxt is parked until
//! the transport is destroyed (see [`post_send`]).

use crate::abstractions::events;
use crate::abstractions::send_ctxt::{Ctxt, PostFailure, Poster, SendCompletion, SentCtxt};
use crate::abstractions::xprt::{count_sq_starved, Rdma};
use crate::ctxt;
use crate::rdma::cq::WorkCompletion;
use crate::sys;
use kernel::error::{code::ENOTCONN, Error};
use kernel::sync::atomic::{Full, Relaxed};

/// `svc_rdma_wake_send_waiters`: returns `avail` SQ entries and wakes a
/// thread waiting for them. The fully ordered add is the barrier the
/// lockless `waitqueue_active` check needs (see `wait.h`), like C's
/// `atomic_add` + `smp_mb__after_atomic`.
#[inline]
pub(crate) fn wake_send_waiters(rdma: &Rdma, avail: i32) {
    rdma.sq_avail().fetch_add(avail, Full);
    if rdma.send_wait().is_active() {
        rdma.send_wait().wake_up();
    }
}

/// [`wake_send_waiters`] out of line, for the failure paths: the copy C's
/// callers call. The Send completion keeps its inline copy.
pub(crate) fn wake_send_waiters_outlined(rdma: &Rdma, avail: i32) {
    // SAFETY: `rdma` is a live transport (the borrow's invariant).
    unsafe { crate::exports::svc_rdma_wake_send_waiters(rdma.as_ptr(), avail) };
}

/// Takes `n` SQ entries if that many are free, else takes nothing.
///
/// C's fast path, one atomic subtract, plus one difference on purpose: the
/// undo of a failed attempt is [`wake_send_waiters`], not a bare add. A
/// failed attempt understates `sc_sq_avail` until its undo; a ticket holder
/// that re-checks its wait condition inside that window (just woken by a
/// Send completion) goes back to sleep although its entries are free. In C
/// the undo wakes nobody, so with nothing more in flight the holder sleeps
/// until the connection closes; here the undo wakes it. The wake costs
/// nothing on success (nearly every reservation): it is on the failure
/// path only, where a waiter, if any, is the one ticket holder. A subtract
/// never retries, where a compare-exchange loop would under contention
/// (issue 27, item 6). `Documentation/upstream-reports.rst` has the
/// reproduction (KUnit `rpcrdma_rs_sq`, `lost_wakeup_*`).
pub(crate) fn sq_reserve(rdma: &Rdma, n: i32) -> bool {
    // Fully ordered, as C's value-returning `atomic_sub_return`. The
    // counter wraps as C's does; `n` (an SQE count) is not negative, and
    // the counter never exceeds the SQ depth, so `before >= n` is C's
    // `after >= 0`.
    let before = rdma.sq_avail().fetch_sub(n, Full);
    if before >= n {
        return true;
    }
    undo_failed_reservation(rdma, n);
    false
}

/// Gives back the entries a failed [`sq_reserve`] took, and wakes the
/// ticket holder that may have re-checked in between. Out of line: the
/// fast path keeps only the call.
#[cold]
#[inline(never)]
fn undo_failed_reservation(rdma: &Rdma, n: i32) {
    // The KUnit suite holds a thread here, inside the window, while a
    // waiter re-checks.
    test_hook::failed_reservation(rdma, n);
    // The fully ordered add before the `waitqueue_active` check pairs with
    // the waiter's `set_current_state` before its condition check: either
    // the waiter sees the entries back or this sees the waiter queued. The
    // exported copy: this path is cold, so it need not inline a second one.
    wake_send_waiters_outlined(rdma, n);
}

/// A delay point for the KUnit suite between a failed reservation's
/// subtraction and its undo, the window a waiter must survive.
#[cfg(rpcrdma_kunit)]
pub(crate) mod test_hook {
    use crate::abstractions::xprt::Rdma;
    use kernel::sync::atomic::{Acquire, Atomic, Relaxed, Release};
    use kernel::time::{delay::fsleep, Delta};

    /// The transport (address) and reservation size a test holds up.
    static ARMED: (Atomic<usize>, Atomic<i32>) = (Atomic::new(0), Atomic::new(0));
    /// How many held reservations have reached the hook.
    static HELD: Atomic<i32> = Atomic::new(0);

    /// Holds failed reservations of `n` entries on `rdma` inside their
    /// window until [`disarm`] (at most 10 s, so a failed test cannot
    /// wedge the thread).
    pub(crate) fn arm(rdma: &Rdma, n: i32) {
        HELD.store(0, Relaxed);
        ARMED.1.store(n, Relaxed);
        ARMED.0.store(rdma.as_ptr().addr(), Relaxed);
    }

    /// Whether a held reservation is in its window now.
    pub(crate) fn holding() -> bool {
        HELD.load(Acquire) != 0
    }

    /// Releases the held reservations and stops holding new ones.
    pub(crate) fn disarm() {
        ARMED.0.store(0, Release);
    }

    pub(super) fn failed_reservation(rdma: &Rdma, n: i32) {
        if ARMED.0.load(Relaxed) != rdma.as_ptr().addr() || ARMED.1.load(Relaxed) != n {
            return;
        }
        HELD.fetch_add(1, Release);
        let mut waited = 0;
        while ARMED.0.load(Acquire) == rdma.as_ptr().addr() && waited < 10_000 {
            fsleep(Delta::from_millis(10));
            waited += 10;
        }
        HELD.fetch_sub(1, Release);
    }
}

#[cfg(not(rpcrdma_kunit))]
mod test_hook {
    #[inline(always)]
    pub(super) fn failed_reservation(_rdma: &super::Rdma, _n: i32) {}
}

/// A place in the SQ wait line. Whoever holds ticket N must advance
/// `sc_sq_ticket_tail` exactly once, whether it gets its entries or the
/// connection closes, or every later waiter stalls: dropping the ticket
/// does that, so no path can forget it or do it twice. The counters wrap;
/// they are only compared for equality.
struct SqTicket<'a> {
    rdma: &'a Rdma,
    number: i32,
}

impl<'a> SqTicket<'a> {
    fn take(rdma: &'a Rdma) -> Self {
        let number = rdma.sq_ticket_head().fetch_add(1, Full);
        Self { rdma, number }
    }

    /// Waits until every earlier ticket has been served or the transport
    /// closes; true if it is this ticket's turn.
    fn wait_turn(&self) -> bool {
        self.rdma.wait_sq_ticket(self.number);
        !self.rdma.is_closing()
    }
}

impl Drop for SqTicket<'_> {
    #[inline]
    fn drop(&mut self) {
        self.rdma.sq_ticket_tail().add(1, Relaxed);
        // wake_up() takes the queue lock unconditionally: no barrier needed.
        self.rdma.sq_ticket_wait().wake_up();
    }
}

/// `svc_rdma_sq_wait`: reserves `sqecount` SQ entries, queueing fairly
/// (first come, first served) behind other waiters when the SQ is full.
/// Fails with `ENOTCONN` when the connection closes while waiting.
///
/// The reservation that succeeds at once (nearly every one) is inline in
/// the caller; the wait line is out of line.
#[inline]
pub(crate) fn sq_wait(rdma: &Rdma, cid: &sys::rpc_rdma_cid, sqecount: i32) -> Result<(), Error> {
    if sq_reserve(rdma, sqecount) {
        return Ok(());
    }
    sq_wait_in_line(rdma, cid, sqecount)
}

/// The slow half of [`sq_wait`]: takes a ticket and waits its turn, then
/// for free entries.
#[inline(never)]
fn sq_wait_in_line(rdma: &Rdma, cid: &sys::rpc_rdma_cid, sqecount: i32) -> Result<(), Error> {
    let ticket = SqTicket::take(rdma);
    count_sq_starved();
    events::sq_full(rdma, cid);
    if !ticket.wait_turn() {
        return Err(ENOTCONN);
    }
    while !sq_reserve(rdma, sqecount) {
        rdma.wait_sq_avail(sqecount);
        if rdma.is_closing() {
            return Err(ENOTCONN);
        }
    }
    drop(ticket);
    events::sq_retry(rdma, cid);

    // While this thread waited, Send completions could not enqueue the
    // transport for a release-list drain (no wspace while waiters exist):
    // drain it now.
    ctxt::send_ctxts_drain(rdma);
    Ok(())
}

/// `svc_rdma_post_send_err`: common handling of an `ib_post_send` failure.
/// Closes the connection. Returns 0 if some WR was posted (`nothing_posted`
/// false: a completion owns the rest of the work), else gives the entries
/// back and returns `-ENOTCONN`. Cold: only a failed post gets here.
#[cold]
#[inline(never)]
pub(crate) fn post_send_err(
    rdma: &Rdma,
    cid: &sys::rpc_rdma_cid,
    nothing_posted: bool,
    sqecount: i32,
    ret: i32,
) -> i32 {
    events::sq_post_err(rdma, cid, ret);
    rdma.deferred_close();
    if !nothing_posted {
        return 0;
    }
    wake_send_waiters_outlined(rdma, sqecount);
    ENOTCONN.to_errno()
}

/// `svc_rdma_wc_send`: the Send completion, in the Send CQ's workqueue
/// ([`SendCompletion`] of every ctxt [`post_chain`] posts). Returns the SQ
/// entries of the whole chain (its Writes are done: the Send was posted
/// after them) and queues the ctxt for release; an error closes the
/// connection.
pub(crate) struct WcSend;

impl SendCompletion for WcSend {
    #[inline]
    fn complete<'a>(rdma: &'a Rdma, wc: &'a WorkCompletion, sent: SentCtxt<'a>) {
        let ctxt = sent.ctxt();
        wake_send_waiters(rdma, ctxt.sqecount());

        if wc.is_success() {
            events::wc_send(ctxt.cid());
            sent.put();
            return;
        }
        send_failed(rdma, wc, sent);
    }
}

/// The rest of [`WcSend::complete`] for a Send that failed or was flushed:
/// reports it, puts the ctxt and closes the connection, in C's order (the
/// transport is the CQ's context, not reached through the ctxt). Cold, so
/// that the success path tests the status once.
#[cold]
fn send_failed(rdma: &Rdma, wc: &WorkCompletion, sent: SentCtxt<'_>) {
    let ctxt = sent.ctxt();
    if !wc.is_flushed() {
        events::wc_send_err(wc, ctxt.cid());
    } else {
        events::wc_send_flush(wc, ctxt.cid());
    }
    sent.put();
    rdma.deferred_close();
}

/// `svc_rdma_post_send`: posts the ctxt's chain, RDMA Writes of chunks
/// first and the Send last, after reserving its SQ entries.
///
/// On success the ctxt belongs to the Send completion. On failure before
/// anything was posted it is handed back with the error (`ENOTCONN`).
///
/// Partial post (deliberately different from C, which returns 0 and waits
/// for a Send completion that never comes, leaking the ctxt and its SQ
/// entries): the Send WR is last in the chain, so if `ib_post_send` stops
/// anywhere the Send was not posted and will never complete, while the
/// posted Writes may still be using the ctxt's DMA mappings. The
/// connection is closed, the unposted WRs' entries are returned now, and
/// the ctxt is parked (see [`crate::abstractions::send_ctxt::PartlyPosted`]) until
/// `svc_rdma_free` releases it, once `ib_drain_qp` has flushed the posted
/// Writes. Returns 0, as C does:
/// the reply is gone with the connection.
pub(crate) fn post_send<'r>(rdma: &Rdma, ctxt: Ctxt<'r>) -> Result<(), (Error, Ctxt<'r>)> {
    let sqecount = ctxt.sqecount();
    // Last line of defence: a chain larger than the whole SQ would wait in
    // `sq_wait` until the connection closes (`svc_rdma_sendto` answers an
    // oversized Reply chunk with ERR_CHUNK before getting here). Closing
    // now, with an error `svc_rdma_sendto` does not turn into ERR_CHUNK: the
    // request's pages are already in the ctxt.
    if u32::try_from(sqecount).map_or(true, |n| n > rdma.sq_depth()) {
        rdma.deferred_close();
        return Err((ENOTCONN, ctxt));
    }
    if let Err(e) = sq_wait(rdma, ctxt.cid(), sqecount) {
        return Err((e, ctxt));
    }
    post_chain(rdma, ctxt, crate::fault::post_fn())
}

/// The posting half of [`post_send`], with its SQ entries reserved:
/// `post` is `ib_post_send`, or a stand-in in the KUnit tests.
pub(crate) fn post_chain<'r>(
    rdma: &Rdma,
    ctxt: Ctxt<'r>,
    post: Poster,
) -> Result<(), (Error, Ctxt<'r>)> {
    events::post_send(&ctxt);
    match ctxt.post::<WcSend>(post) {
        Ok(()) => Ok(()),
        Err(f) => post_failed(rdma, f),
    }
}

/// The rest of [`post_chain`] when `ib_post_send` failed: the connection
/// is closed, and the ctxt handed back (nothing posted) or parked (a
/// partial post). Cold, so that the posting path keeps a small frame.
#[cold]
fn post_failed<'r>(rdma: &Rdma, failure: PostFailure<'r>) -> Result<(), (Error, Ctxt<'r>)> {
    match failure {
        PostFailure::NotPosted { ret, ctxt } => {
            // Nothing was posted: the ctxt is still ours.
            // Test build: its last payload mapping is forgotten, never undone.
            #[cfg(rpcrdma_dma_mutation = "leak_on_post_error")]
            let ctxt = {
                let mut ctxt = ctxt;
                ctxt.forget_last_payload_sge();
                ctxt
            };
            post_send_err(rdma, ctxt.cid(), true, ctxt.sqecount(), ret);
            Err((ENOTCONN, ctxt))
        }
        PostFailure::Partial {
            ret,
            ctxt,
            unposted,
        } => {
            // Partial post, see above.
            post_send_err(rdma, ctxt.ctxt().cid(), false, ctxt.ctxt().sqecount(), ret);
            wake_send_waiters_outlined(rdma, unposted);
            ctxt.park();
            Ok(())
        }
    }
}
