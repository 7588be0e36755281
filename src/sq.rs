// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Send Queue accounting, posting and the Send completion:
//! `svc_rdma_wake_send_waiters`, `svc_rdma_sq_wait`, `svc_rdma_post_send`,
//! `svc_rdma_post_send_err` and `svc_rdma_wc_send` of the C file.
//!
//! Transport lifetime: a posted chain's Send completion ([`wc_send`]) uses the
//! transport after `svc_rdma_sendto` has returned. Linux 7.3 takes no
//! reference for it; the transport stays alive because `svc_rdma_free`
//! calls `ib_drain_qp` before it tears anything down, and `ib_drain_qp`
//! returns only after every posted WR has completed. This crate relies on
//! that too, and keeps one more rule of its own: a chain that was only
//! partly posted never gets a Send completion, so its ctxt is parked until
//! the transport is destroyed (see [`post_send`]).

use crate::ctxt::{self, SendCtxt};
use crate::fault::PostFn;
use crate::sys;
use crate::xprt::Rdma;
use core::ptr::addr_of;
use kernel::error::{code::ENOTCONN, Error};
use kernel::sync::atomic::{Full, Relaxed};

/// `svc_rdma_wake_send_waiters`: returns `avail` SQ entries and wakes a
/// thread waiting for them. The fully ordered add is the barrier the
/// lockless `waitqueue_active` check needs (see `wait.h`), like C's
/// `atomic_add` + `smp_mb__after_atomic`.
pub(crate) fn wake_send_waiters(rdma: &Rdma, avail: i32) {
    rdma.sq_avail().fetch_add(avail, Full);
    // SAFETY: the wait queue of a live transport.
    if unsafe { sys::rs_waitqueue_active(rdma.send_wait()) } {
        // SAFETY: the same wait queue of the live transport.
        unsafe { sys::rs_wake_up(rdma.send_wait()) };
    }
}

/// Takes `n` SQ entries if that many are free, else takes nothing.
///
/// Different from C on purpose (C's `svc_rdma_sq_wait` subtracts first and
/// adds back on failure). C's failed attempt leaves `sc_sq_avail`
/// understated until its undo, and the undo wakes nobody: a ticket holder
/// that re-checks its wait condition inside that window (just woken by a
/// Send completion) goes back to sleep although its entries are free, and
/// with nothing more in flight it sleeps until the connection closes. Here
/// a failed attempt never writes the counter, so `sc_sq_avail` is never
/// below the entries really free, and every increase is a
/// [`wake_send_waiters`]. `Documentation/upstream-reports.rst` has the
/// reproduction (KUnit `rpcrdma_rs_sq`, `lost_wakeup_*`).
pub(crate) fn sq_reserve(rdma: &Rdma, n: i32) -> bool {
    let avail = rdma.sq_avail();
    let mut seen = avail.load(Relaxed);
    loop {
        let Some(left) = seen.checked_sub(n) else {
            return false;
        };
        if left < 0 {
            // Whatever a failed attempt did to the counter must be undone
            // by now: the KUnit suite holds threads here (`test_hook`).
            test_hook::failed_reservation(rdma, n);
            return false;
        }
        // Fully ordered on success, as C's value-returning atomic is.
        match avail.cmpxchg(seen, left, Full) {
            Ok(_) => return true,
            Err(now) => seen = now,
        }
    }
}

/// A delay point for the KUnit suite at the end of a failed reservation,
/// where a competing thread must find the counter as it was.
#[cfg(rpcrdma_kunit)]
pub(crate) mod test_hook {
    use crate::xprt::Rdma;
    use kernel::sync::atomic::{Atomic, Relaxed};
    use kernel::time::{delay::fsleep, Delta};

    /// The transport (address) and reservation size a test holds up.
    static ARMED: (Atomic<usize>, Atomic<i32>) = (Atomic::new(0), Atomic::new(0));

    /// Holds the next failed reservations of `n` entries on `rdma` for
    /// 300 ms each, until [`disarm`].
    pub(crate) fn arm(rdma: &Rdma, n: i32) {
        ARMED.1.store(n, Relaxed);
        ARMED.0.store(rdma.as_ptr() as usize, Relaxed);
    }

    /// Stops holding reservations.
    pub(crate) fn disarm() {
        ARMED.0.store(0, Relaxed);
    }

    pub(super) fn failed_reservation(rdma: &Rdma, n: i32) {
        if ARMED.0.load(Relaxed) == rdma.as_ptr() as usize && ARMED.1.load(Relaxed) == n {
            fsleep(Delta::from_millis(300));
        }
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
        // SAFETY: the transport is live.
        unsafe { sys::rs_wait_sq_ticket(self.rdma.as_ptr(), self.number) };
        !self.rdma.is_closing()
    }
}

impl Drop for SqTicket<'_> {
    fn drop(&mut self) {
        self.rdma.sq_ticket_tail().add(1, Relaxed);
        // wake_up() takes the queue lock unconditionally: no barrier needed.
        // SAFETY: the wait queue of a live transport.
        unsafe { sys::rs_wake_up(self.rdma.sq_ticket_wait()) };
    }
}

/// `svc_rdma_sq_wait`: reserves `sqecount` SQ entries, queueing fairly
/// (first come, first served) behind other waiters when the SQ is full.
/// Fails with `ENOTCONN` when the connection closes while waiting.
pub(crate) fn sq_wait(
    rdma: &Rdma,
    cid: *const sys::rpc_rdma_cid,
    sqecount: i32,
) -> Result<(), Error> {
    if sq_reserve(rdma, sqecount) {
        return Ok(());
    }

    let ticket = SqTicket::take(rdma);
    // SAFETY: a global counter, and a tracepoint reading the live transport.
    unsafe {
        sys::rs_sq_starve_inc();
        crate::trace::sq_full(rdma.as_ptr(), cid);
    }
    if !ticket.wait_turn() {
        return Err(ENOTCONN);
    }
    while !sq_reserve(rdma, sqecount) {
        // SAFETY: the transport is live.
        unsafe { sys::rs_wait_sq_avail(rdma.as_ptr(), sqecount) };
        if rdma.is_closing() {
            return Err(ENOTCONN);
        }
    }
    drop(ticket);
    // SAFETY: a tracepoint reading the live transport.
    unsafe { crate::trace::sq_retry(rdma.as_ptr(), cid) };

    // While this thread waited, Send completions could not enqueue the
    // transport for a release-list drain (no wspace while waiters exist):
    // drain it now.
    ctxt::send_ctxts_drain(rdma);
    Ok(())
}

/// `svc_rdma_post_send_err`: common handling of an `ib_post_send` failure.
/// Closes the connection. Returns 0 if some WR was posted (a completion
/// owns the rest of the work), else gives the entries back and returns
/// `-ENOTCONN`.
pub(crate) fn post_send_err(
    rdma: &Rdma,
    cid: *const sys::rpc_rdma_cid,
    bad_wr: *const sys::ib_send_wr,
    first_wr: *const sys::ib_send_wr,
    sqecount: i32,
    ret: i32,
) -> i32 {
    // SAFETY: a tracepoint reading the live transport.
    unsafe { crate::trace::sq_post_err(rdma.as_ptr(), cid, ret) };
    rdma.deferred_close();
    if bad_wr != first_wr {
        return 0;
    }
    wake_send_waiters(rdma, sqecount);
    ENOTCONN.to_errno()
}

/// `svc_rdma_wc_send`: the Send completion, in the Send CQ's workqueue.
/// Returns the SQ entries of the whole chain (its Writes are done: the Send
/// was posted after them) and queues the ctxt for release; an error closes
/// the connection.
///
/// # Safety
///
/// Called by the RDMA core with a polled Send work completion of a
/// transport's Send CQ (the WC's `wr_cqe` is the `sc_cqe` of a send ctxt
/// that transport posted).
pub(crate) unsafe extern "C" fn wc_send(_cq: *mut sys::ib_cq, wc: *mut sys::ib_wc) {
    // SAFETY: `wr_cqe` is the `sc_cqe` of the posted ctxt, whose ownership
    // the completion now takes.
    let (ctxt, status) = unsafe {
        let cqe = *(*wc).__bindgen_anon_1.wr_cqe.as_ref();
        (
            kernel::container_of!(cqe, sys::svc_rdma_send_ctxt, sc_cqe),
            (*wc).status,
        )
    };
    // The ctxt's transport, the CQ's context (C reads the latter; the CQ is
    // opaque here, the ctxt is not). It outlives its completions because
    // svc_rdma_free drains the QP first (module docs).
    // SAFETY: `sc_rdma` is set at allocation, and the ctxt is ours.
    let rdma = unsafe { Rdma::from_raw((*ctxt).sc_rdma) };
    // SAFETY: the ctxt is ours until put.
    let (sqecount, cid) = unsafe { ((*ctxt).sc_sqecount, addr_of!((*ctxt).sc_cid)) };
    wake_send_waiters(rdma, sqecount);

    if status == sys::ib_wc_status_IB_WC_SUCCESS {
        // SAFETY: the ctxt is still ours.
        unsafe {
            crate::trace::wc_send(cid);
            ctxt::send_ctxt_put(rdma, ctxt);
        }
        return;
    }
    // SAFETY: the ctxt is still ours; not touched after the put.
    unsafe {
        if status != sys::ib_wc_status_IB_WC_WR_FLUSH_ERR {
            crate::trace::wc_send_err(wc, cid);
        } else {
            crate::trace::wc_send_flush(wc, cid);
        }
        ctxt::send_ctxt_put(rdma, ctxt);
    }
    rdma.deferred_close();
}

/// Number of WRs from `wr` to the end of its chain.
///
/// # Safety
///
/// `wr` is null or the head of a valid, null-terminated WR chain.
unsafe fn chain_len(mut wr: *const sys::ib_send_wr) -> i32 {
    let mut n = 0i32;
    while !wr.is_null() {
        n = n.saturating_add(1);
        // SAFETY: `wr` is a non-null WR of a valid chain (`# Safety`).
        wr = unsafe { (*wr).next };
    }
    n
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
/// the ctxt is parked on the module's orphan list (see
/// [`crate::ctxt::orphan_add`]), from which `svc_rdma_free` releases it
/// once `ib_drain_qp` has flushed the posted Writes. Returns 0, as C does: the reply is gone with
/// the connection.
pub(crate) fn post_send(rdma: &Rdma, ctxt: SendCtxt) -> Result<(), (Error, SendCtxt)> {
    let p = ctxt.as_ptr();
    // Snapshot what is needed after posting: from then on a completion
    // may own and recycle the ctxt.
    // SAFETY: we own the ctxt.
    let (cid, sqecount, sge0) = unsafe {
        (
            addr_of!((*p).sc_cid).read(),
            (*p).sc_sqecount,
            (*p).sc_send_wr.sg_list.read(),
        )
    };
    // SAFETY: SGE 0 is the header buffer's persistent mapping.
    unsafe {
        sys::rs_ib_dma_sync_single_for_device(rdma.device(), sge0.addr, sge0.length as usize)
    };

    // Last line of defence: a chain larger than the whole SQ would wait in
    // `sq_wait` until the connection closes (`svc_rdma_sendto` answers an
    // oversized Reply chunk with ERR_CHUNK before getting here). Closing
    // now, with an error `svc_rdma_sendto` does not turn into ERR_CHUNK: the
    // request's pages are already in the ctxt.
    if u32::try_from(sqecount).map_or(true, |n| n > rdma.sq_depth()) {
        rdma.deferred_close();
        return Err((ENOTCONN, ctxt));
    }
    if let Err(e) = sq_wait(rdma, &cid, sqecount) {
        return Err((e, ctxt));
    }
    post_chain(rdma, ctxt, crate::fault::post_fn())
}

/// The posting half of [`post_send`], with its SQ entries reserved:
/// `post` is `ib_post_send`, or a stand-in in the KUnit tests.
pub(crate) fn post_chain(
    rdma: &Rdma,
    ctxt: SendCtxt,
    post: PostFn,
) -> Result<(), (Error, SendCtxt)> {
    let p = ctxt.as_ptr();
    // SAFETY: we own the ctxt. Its Send WR's `wr_cqe` is `sc_cqe` (set at
    // allocation); the handler is set here, where the ctxt goes to the
    // device, so that the pool (`ctxt.rs`) need not know this module.
    let (first_wr, cid, sqecount) = unsafe {
        (*p).sc_cqe.done = Some(wc_send);
        (
            (*p).sc_wr_chain.cast_const(),
            addr_of!((*p).sc_cid).read(),
            (*p).sc_sqecount,
        )
    };
    // SAFETY: a tracepoint reading the ctxt we own.
    unsafe { crate::trace::post_send(p) };
    let mut bad_wr: *const sys::ib_send_wr = first_wr;
    // The chain now belongs to the device; marked before posting, since
    // the completion may run before `post` returns.
    let p = ctxt.into_raw();
    // SAFETY: a ctxt of `rdma`'s pool, handed to the device.
    unsafe { ctxt::set_state(rdma, p, ctxt::CtxtState::Posted) };
    // SAFETY: a fully built chain of our ctxt on the transport's QP.
    let ret = unsafe { post(rdma.qp(), first_wr, &mut bad_wr) };
    if ret == 0 {
        return Ok(());
    }
    if bad_wr == first_wr {
        // Nothing was posted: the ctxt is still ours.
        post_send_err(rdma, &cid, bad_wr, first_wr, sqecount, ret);
        // SAFETY: nothing of the chain is in flight, so the ctxt is ours
        // again.
        let ctxt = unsafe {
            ctxt::set_state(rdma, p, ctxt::CtxtState::Owned);
            SendCtxt::from_raw(p)
        };
        return match ctxt {
            Some(c) => Err((ENOTCONN, c)),
            None => Ok(()),
        };
    }
    // Partial post, see above. (A driver that reports no bad WR is taken
    // the safe way: something may be in flight.)
    // SAFETY: the unposted tail of our chain, or null.
    let unposted = unsafe { chain_len(bad_wr) };
    post_send_err(rdma, &cid, bad_wr, first_wr, sqecount, ret);
    wake_send_waiters(rdma, unposted);
    // SAFETY: the Send was not posted, so no completion will touch `p`.
    unsafe { ctxt::orphan_add(rdma, p) };
    Ok(())
}
