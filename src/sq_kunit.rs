// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_sq`: Send Queue accounting single-threaded
//! (the ticket protocol, with wrapping counters), the lost wake-up of C's
//! reservation replayed with two threads against both algorithms (ours
//! wakes the waiter from the undo, C's does not), and posting, including
//! the partial-post case that C leaks.

use kernel::prelude::kunit_tests;

#[kunit_tests(rpcrdma_rs_sq)]
mod tests {
    use crate::abstractions::send_ctxt::{Ctxt, CtxtState, Poster, SentCtxt};
    use crate::abstractions::xprt::{Drained, SendQueueGone};
    use crate::fakes::{FakeRdma, SuppressedWarnings};
    use crate::sq;
    use crate::sys;
    use core::ptr::addr_of_mut;
    use kernel::alloc::flags::GFP_KERNEL;
    use kernel::error::code::{EINVAL, EIO, ENOMEM, ENOTCONN, ETIMEDOUT};
    use kernel::error::Result;
    use kernel::sync::aref::ARef;
    use kernel::sync::atomic::{Acquire, Atomic, Full, Relaxed, Release};
    use kernel::sync::{Arc, SetOnce};
    use kernel::task::Task;
    use kernel::time::{delay::fsleep, Delta};
    use kernel::workqueue;

    /// A completion ID for the tracepoints, which read it when enabled.
    const CID: sys::rpc_rdma_cid = sys::rpc_rdma_cid {
        ci_queue_id: 0,
        ci_completion_id: 0,
    };

    fn starved() -> i64 {
        // SAFETY: reads the module's global counter.
        unsafe { sys::rs_sq_starve_sum() }
    }

    #[test]
    fn fast_path_takes_entries() -> Result {
        let f = FakeRdma::new(10, 4).ok_or(ENOMEM)?;
        let r = f.rdma();
        assert_eq!(sq::sq_wait(r, &CID, 4), Ok(()));
        assert_eq!(r.sq_avail().load(Relaxed), 6);
        assert_eq!(sq::sq_wait(r, &CID, 6), Ok(()));
        assert_eq!(r.sq_avail().load(Relaxed), 0);
        // No ticket was taken.
        assert_eq!(r.sq_ticket_head().load(Relaxed), 0);
        assert_eq!(r.sq_ticket_tail().load(Relaxed), 0);
        Ok(())
    }

    #[test]
    fn full_and_closed_gives_enotconn_and_serves_ticket() -> Result {
        let f = FakeRdma::new(2, 4).ok_or(ENOMEM)?;
        let r = f.rdma();
        f.set_closing();
        let before = starved();
        assert_eq!(sq::sq_wait(r, &CID, 4), Err(ENOTCONN));
        // The failed reservation took nothing, the ticket was taken and
        // served exactly once, and the starvation counted.
        assert_eq!(r.sq_avail().load(Relaxed), 2);
        assert_eq!(r.sq_ticket_head().load(Relaxed), 1);
        assert_eq!(r.sq_ticket_tail().load(Relaxed), 1);
        assert_eq!(starved().wrapping_sub(before), 1);
        Ok(())
    }

    #[test]
    fn ticket_counters_wrap() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let r = f.rdma();
        r.sq_ticket_head().store(i32::MAX, Relaxed);
        r.sq_ticket_tail().store(i32::MAX, Relaxed);
        f.set_closing();
        assert_eq!(sq::sq_wait(r, &CID, 1), Err(ENOTCONN));
        assert_eq!(r.sq_ticket_head().load(Relaxed), i32::MIN);
        assert_eq!(r.sq_ticket_tail().load(Relaxed), i32::MIN);
        Ok(())
    }

    #[test]
    fn wake_returns_entries() -> Result {
        let f = FakeRdma::new(-3, 4).ok_or(ENOMEM)?;
        sq::wake_send_waiters(f.rdma(), 5);
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
        Ok(())
    }

    #[test]
    fn post_send_err_nothing_posted_returns_entries() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let rc = sq::post_send_err(f.rdma(), &CID, true, 3, -5);
        assert_eq!(rc, ENOTCONN.to_errno());
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 3);
        assert!(f.rdma().is_closing());
        Ok(())
    }

    /// What the waiting thread ("B") shares with the test.
    struct Waiter {
        rdma: *mut sys::svcxprt_rdma,
        /// 0 while in `sq_wait`, then 1 (entries reserved) or 2 (error).
        state: Atomic<i32>,
        c_algorithm: bool,
        /// The thread, once it runs: the test watches it go to sleep.
        task: SetOnce<ARef<Task>>,
    }

    impl Waiter {
        fn new(f: &FakeRdma, c_algorithm: bool) -> Result<Arc<Self>> {
            let w = Self {
                rdma: f.raw(),
                state: Atomic::new(0),
                c_algorithm,
                task: SetOnce::new(),
            };
            Ok(Arc::new(w, GFP_KERNEL)?)
        }

        /// Records the calling thread as the waiter's.
        fn set_current(&self) {
            self.task.populate(ARef::from(&**kernel::current!()));
        }

        /// Whether the thread has reported, or sleeps off its CPU (after a
        /// wake-up: it has checked its condition again and gone back to
        /// sleep).
        fn done_or_asleep(&self) -> bool {
            self.state.load(Acquire) != 0
                || self
                    .task
                    .as_ref()
                    // SAFETY: the `ARef` holds a reference on the task.
                    .is_some_and(|t| unsafe { sys::rs_task_asleep(t.as_ptr()) })
        }
    }

    // SAFETY: B uses the transport only through its atomics and wait
    // queues, which are shared with other threads by design, and the test
    // keeps the transport alive until B has reported `state`.
    unsafe impl Send for Waiter {}
    // SAFETY: `state` is atomic and `rdma` is only read; see `Send`.
    unsafe impl Sync for Waiter {}

    #[cfg(rpcrdma_link_c)]
    // `svcxprt_rdma` contains a zero-sized field, which the lint flags in
    // any extern declaration; the generated bindings allow it too.
    #[allow(improper_ctypes)]
    extern "C" {
        // The C file's own functions, renamed by the differential build
        // (Kbuild, RPCRDMA_RUST_LINK_C_SENDTO=y).
        fn svc_rdma_sq_wait_c(
            rdma: *mut sys::svcxprt_rdma,
            cid: *const sys::rpc_rdma_cid,
            sqecount: kernel::ffi::c_int,
        ) -> kernel::ffi::c_int;
        fn svc_rdma_wake_send_waiters_c(rdma: *mut sys::svcxprt_rdma, avail: kernel::ffi::c_int);
    }

    /// `sq_wait` of the algorithm under test.
    fn wait_for(w: &Waiter, n: i32) -> bool {
        if w.c_algorithm {
            #[cfg(rpcrdma_link_c)]
            // SAFETY: a live stand-in transport, process context.
            return unsafe { svc_rdma_sq_wait_c(w.rdma, &CID, n) } == 0;
        }
        // SAFETY: the test keeps the transport alive until `state` is set.
        sq::sq_wait(
            unsafe { crate::abstractions::xprt::Rdma::from_raw(w.rdma) },
            &CID,
            n,
        )
        .is_ok()
    }

    /// A Send completion returning `n` entries, as the algorithm does it.
    fn complete(f: &FakeRdma, c_algorithm: bool, n: i32) {
        if c_algorithm {
            #[cfg(rpcrdma_link_c)]
            // SAFETY: a live stand-in transport.
            unsafe {
                svc_rdma_wake_send_waiters_c(f.raw(), n)
            };
            return;
        }
        sq::wake_send_waiters(f.rdma(), n);
    }

    /// Polls `cond` every 10 ms for up to `ms` milliseconds.
    fn wait_until(ms: i64, cond: impl Fn() -> bool) -> bool {
        let mut waited = 0;
        while !cond() {
            if waited >= ms {
                return false;
            }
            fsleep(Delta::from_millis(10));
            waited += 10;
        }
        true
    }

    /// Replays the lost wake-up (`design.rst`, "SQ reservation"): B holds
    /// the SQ ticket and needs 4 entries, 3 are free; A's reservation of 6
    /// fails; a Send completion returns 2 and wakes B while A's attempt is
    /// still under way. Both algorithms subtract first and add back on
    /// failure, and B re-checks between the two. C's function cannot be
    /// paused, so A's two statements are executed one at a time on the same
    /// counter; ours runs A in a thread held between them (`sq::test_hook`)
    /// until B is back asleep. Returns whether B was left asleep with its
    /// entries free.
    fn lost_wakeup_scenario(c_algorithm: bool) -> Result<bool> {
        let f = FakeRdma::new(3, 4).ok_or(ENOMEM)?;
        let r = f.rdma();
        let w = Waiter::new(&f, c_algorithm)?;
        let b = w.clone();
        workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
            b.set_current();
            let ok = wait_for(&b, 4);
            b.state.store(if ok { 1 } else { 2 }, Release);
        })?;
        // B is asleep on sc_send_wait, holding ticket 0.
        let asleep = wait_until(3000, || r.send_wait().is_active());
        // A's thread, ours only: it uses the transport until it reports.
        let mut a_thread = None;
        // No early return past this point until B (and A) are done with
        // the transport: the scenario's errors are collected instead.
        let mut scenario = || -> Result<bool> {
            if !asleep {
                return Err(ETIMEDOUT);
            }
            let a = Waiter::new(&f, c_algorithm)?;
            if c_algorithm {
                // A, first half: C's atomic_sub_return(6) < 0.
                r.sq_avail().fetch_sub(6, Full);
            } else {
                // A, in another thread, held between its subtraction of 6
                // and its undo until the test disarms the hook.
                sq::test_hook::arm(r, 6);
                let a2 = a.clone();
                workqueue::system_unbound().try_spawn(GFP_KERNEL, move || {
                    // SAFETY: the test keeps the transport alive until A
                    // has reported `state`.
                    let got = sq::sq_reserve(
                        unsafe { crate::abstractions::xprt::Rdma::from_raw(a2.rdma) },
                        6,
                    );
                    a2.state.store(if got { 1 } else { 2 }, Release);
                })?;
                a_thread = Some(a.clone());
                if !wait_until(3000, sq::test_hook::holding) {
                    sq::test_hook::disarm();
                }
            }
            complete(&f, c_algorithm, 2);
            // B runs and re-checks its condition. The wake-up took B's
            // entry off the wait queue (`autoremove_wake_function`) and
            // made it runnable; B puts the entry back before it re-checks,
            // and leaves its CPU only after the check. So once the queue is
            // active again and B sleeps off its CPU (or B is done), B has
            // made its check, however slow the machine.
            let rechecking = wait_until(5000, || {
                (r.send_wait().is_active() && w.done_or_asleep()) || w.state.load(Acquire) != 0
            });
            // Inside the window B saw 3 - 6 + 2 = -1 free entries.
            let in_window = c_algorithm || sq::test_hook::holding();
            if c_algorithm {
                // A, second half: C's atomic_add(6), which wakes nobody.
                r.sq_avail().add(6, Relaxed);
                a.state.store(2, Relaxed);
            }
            // A, second half, ours: the undo, which wakes B; B then takes
            // its entries and reports (a slow machine gets 3 s). C's add
            // woke nobody: B sleeps on.
            sq::test_hook::disarm();
            if !c_algorithm {
                wait_until(3000, || w.state.load(Acquire) != 0);
            }
            // A failed, and B still waits although its 4 entries are free.
            let a_done = wait_until(3000, || a.state.load(Acquire) != 0);
            let stalled = w.state.load(Acquire) == 0 && r.sq_avail().load(Relaxed) >= 4;
            if !rechecking || !in_window {
                Err(ETIMEDOUT)
            } else if a_done && a.state.load(Acquire) == 2 {
                Ok(stalled)
            } else {
                Err(EINVAL)
            }
        };
        let result = scenario();
        // Release B if it still waits: the connection closes.
        r.deferred_close();
        sq::test_hook::disarm();
        // A's hold ends within 10 s of the disarm (`test_hook`).
        let a_gone = a_thread.is_none_or(|a| wait_until(11_000, || a.state.load(Acquire) != 0));
        if !wait_until(3000, || w.state.load(Acquire) != 0) || !a_gone {
            // A thread still uses the transport: leak it rather than free
            // it.
            core::mem::forget(f);
            return Err(ETIMEDOUT);
        }
        result
    }

    /// Ours: B gets its entries as soon as the completion returns them.
    #[test]
    fn lost_wakeup_not_in_rust_reservation() -> Result {
        assert!(!lost_wakeup_scenario(false)?);
        Ok(())
    }

    /// C's: B sleeps on although 5 entries are free (the stall reported
    /// upstream). Only in the differential build, which links the C file.
    #[cfg(rpcrdma_link_c)]
    #[test]
    fn lost_wakeup_in_c_reservation() -> Result {
        assert!(lost_wakeup_scenario(true)?);
        Ok(())
    }

    /// Reservations take exactly what they ask for or nothing.
    #[test]
    fn reserve_takes_all_or_nothing() -> Result {
        let f = FakeRdma::new(5, 4).ok_or(ENOMEM)?;
        let r = f.rdma();
        assert!(!sq::sq_reserve(r, 6));
        assert_eq!(r.sq_avail().load(Relaxed), 5);
        assert!(sq::sq_reserve(r, 5));
        assert_eq!(r.sq_avail().load(Relaxed), 0);
        assert!(!sq::sq_reserve(r, 1));
        assert_eq!(r.sq_avail().load(Relaxed), 0);
        // A counter another path left negative is back where it was.
        r.sq_avail().store(-2, Relaxed);
        assert!(!sq::sq_reserve(r, 1));
        assert_eq!(r.sq_avail().load(Relaxed), -2);
        r.sq_avail().store(i32::MIN, Relaxed);
        assert!(!sq::sq_reserve(r, i32::MAX));
        assert_eq!(r.sq_avail().load(Relaxed), i32::MIN);
        Ok(())
    }

    // SAFETY: `post_ok` behaves as an `ib_post_send` that posts the whole
    // chain, and touches nothing.
    const POST_OK: Poster = unsafe { Poster::new(post_ok) };
    // SAFETY: `post_one_then_fail` reports the second WR of a chain of at
    // least two (every chain the tests give it) as the first not posted,
    // as `ib_post_send` failing there does.
    const POST_ONE_THEN_FAIL: Poster = unsafe { Poster::new(post_one_then_fail) };
    // SAFETY: `post_none` reports the first WR as not posted, posting none.
    const POST_NONE: Poster = unsafe { Poster::new(post_none) };

    /// Stand-in for `ib_post_send` that accepts everything.
    ///
    /// # Safety
    ///
    /// Called as `ib_post_send` is.
    unsafe extern "C" fn post_ok(
        _qp: *mut sys::ib_qp,
        _hdr: *const sys::ib_sge,
        _wr: *const sys::ib_send_wr,
        _bad: *mut *const sys::ib_send_wr,
    ) -> i32 {
        0
    }

    /// Stand-in that posts the first WR of the chain and fails the next.
    ///
    /// # Safety
    ///
    /// Called as `ib_post_send` is, with a chain of at least two WRs.
    unsafe extern "C" fn post_one_then_fail(
        _qp: *mut sys::ib_qp,
        _hdr: *const sys::ib_sge,
        wr: *const sys::ib_send_wr,
        bad: *mut *const sys::ib_send_wr,
    ) -> i32 {
        // SAFETY: the chain built by the test has at least two WRs.
        unsafe { *bad = (*wr).next };
        EIO.to_errno()
    }

    /// Stand-in that posts nothing.
    ///
    /// # Safety
    ///
    /// Called as `ib_post_send` is.
    unsafe extern "C" fn post_none(
        _qp: *mut sys::ib_qp,
        _hdr: *const sys::ib_sge,
        wr: *const sys::ib_send_wr,
        bad: *mut *const sys::ib_send_wr,
    ) -> i32 {
        // SAFETY: `bad` is the caller's out-parameter.
        unsafe { *bad = wr };
        EIO.to_errno()
    }

    /// A payload mapping that finds the ctxt's SGE array full comes back
    /// from `add_payload_sge` and is undone by its drop (the mapper's path,
    /// which the SGE count rules out); the one stored is undone by
    /// `unmap_payload_sges`, with the unmap its kind takes.
    #[test]
    fn payload_sge_past_the_array_comes_back() -> Result {
        // The header's SGE and one payload SGE.
        let f = FakeRdma::new(0, 2).ok_or(ENOMEM)?;
        let mut c = f.ctxt(0).ok_or(ENOMEM)?;
        c.set_header_sge_unmapped(28);
        let page = kernel::page::Page::alloc_page(GFP_KERNEL)?;
        let dma = f.rdma().device().dma();
        assert!(c.add_payload_sge(dma.map_page(&page, 0, 64)?).is_ok());
        assert_eq!(c.num_sge(), 2);
        let back = c.add_payload_sge(dma.map_page(&page, 64, 64)?);
        assert!(back.is_err());
        drop(back);
        assert_eq!(c.num_sge(), 2);
        c.unmap_payload_sges();
        assert_eq!(c.num_sge(), 1);
        Ok(())
    }

    #[test]
    fn post_chain_success_hands_ctxt_to_completion() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(0).ok_or(ENOMEM)?;
        assert!(sq::post_chain(f.rdma(), c, POST_OK).is_ok());
        // Nothing was put back: the completion owns it (`f` frees it).
        assert!(!f.rdma().is_closing());
        // SAFETY: lists of our transport, which only this thread uses.
        unsafe {
            assert!((*f.raw()).sc_send_ctxts.first.is_null());
            assert!((*f.raw()).sc_send_release_list.first.is_null());
        }
        Ok(())
    }

    /// Asserts that `p`, a ctxt of `f`, is queued for release once: alone
    /// on the release list.
    fn assert_queued_alone(f: &FakeRdma, p: *mut sys::svc_rdma_send_ctxt) {
        // SAFETY: the release list of our stand-in and its ctxt, live until
        // `f` goes; only this thread uses them.
        unsafe {
            let first = (*f.raw()).sc_send_release_list.first;
            assert!(first == addr_of_mut!((*p).sc_node));
            assert!((*first).next.is_null());
        }
    }

    /// A ctxt put twice is queued once: the second put would link it into
    /// the list it is already on. (Through `try_put`, the put
    /// without the warning of a dropped ctxt, which would flag the run's
    /// log.)
    #[test]
    fn second_put_is_refused() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let p = f.ctxt(0).ok_or(ENOMEM)?.into_raw();
        // SAFETY: our ctxt, given up by the first put; the second is the
        // fault under test, which must not touch the lists.
        let (first, second) = unsafe { (Ctxt::from_raw(p), Ctxt::from_raw(p)) };
        let (first, second) = (first.ok_or(EINVAL)?, second.ok_or(EINVAL)?);
        assert_eq!(first.try_put(), Ok(()));
        // Refused, and the ctxt (on the release list) left alone.
        assert_eq!(second.try_put(), Err(CtxtState::Queued));
        assert_queued_alone(&f, p);
        Ok(())
    }

    /// A new ctxt of `f`, marked posted, with the second handle to it that
    /// a buggy caller would hold: (the ctxt, its posted handle, the stray).
    fn posted_with_stray(
        f: &FakeRdma,
    ) -> Option<(*mut sys::svc_rdma_send_ctxt, Ctxt<'_>, Ctxt<'_>)> {
        let p = f.ctxt(0)?.into_raw();
        // SAFETY: our ctxt, given up by `into_raw`; the two handles are the
        // caller's, the second the fault its test plays.
        let (posted, stray) = unsafe { (Ctxt::from_raw(p)?, Ctxt::from_raw(p)?) };
        posted.mark_posted_for_test();
        Some((p, posted, stray))
    }

    /// A put of a posted ctxt (a C caller's bug: after a successful post
    /// the ctxt is its Send completion's) is refused and touches nothing;
    /// the completion's own put then queues it once.
    #[test]
    fn put_of_posted_ctxt_is_refused() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let (p, posted, stray) = posted_with_stray(&f).ok_or(ENOMEM)?;
        assert_eq!(stray.try_put(), Err(CtxtState::Posted));
        // SAFETY: the release list of our stand-in, which only this
        // thread uses: still empty.
        unsafe { assert!((*f.raw()).sc_send_release_list.first.is_null()) };
        // The completion's put (`SentCtxt::put`) skips the check.
        // SAFETY: marked posted above; the stray handle was given up.
        unsafe { SentCtxt::assume_for_test(posted) }.put();
        assert_queued_alone(&f, p);
        Ok(())
    }

    /// The reporting puts of a posted ctxt (a C caller's bug): the
    /// exported `svc_rdma_send_ctxt_put`, as the backchannel calls it, and
    /// a dropped [`Ctxt`], as the Send path's early returns put theirs.
    /// Each is refused and touches nothing, and the first is reported with
    /// an error line and one warning (counted here, not printed); later
    /// ones with the error line only. The suite runs once per module load,
    /// the first to report.
    #[test]
    fn refused_put_is_reported_once() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let (p, posted, stray) = posted_with_stray(&f).ok_or(ENOMEM)?;
        // Called through a pointer, as the backchannel calls it: the very
        // function the module exports, not a copy inlined here.
        let put: unsafe extern "C" fn(*mut sys::svcxprt_rdma, *mut sys::svc_rdma_send_ctxt) =
            core::hint::black_box(crate::exports::svc_rdma_send_ctxt_put);
        let warnings = SuppressedWarnings::begin().ok_or(EINVAL)?;
        // SAFETY: a live stand-in transport and its ctxt; the put is the
        // fault under test, refused before it touches anything.
        unsafe { put(f.raw(), p) };
        drop(stray);
        assert_eq!(warnings.end(), 1);
        // SAFETY: the lists of our stand-in, which only this thread uses:
        // the refused puts queued nothing.
        unsafe {
            assert!((*f.raw()).sc_send_release_list.first.is_null());
            assert!((*f.raw()).sc_send_ctxts.first.is_null());
        }
        // SAFETY: marked posted above; the stray handles were given up.
        unsafe { SentCtxt::assume_for_test(posted) }.put();
        // SAFETY: `p` is a ctxt of our stand-in, live until `f` goes.
        assert_eq!(unsafe { Ctxt::state_of_raw(p) }, Some(CtxtState::Queued));
        // Put again once queued: refused, reported without a warning now.
        let warnings = SuppressedWarnings::begin().ok_or(EINVAL)?;
        // SAFETY: our stand-in and its ctxt, now queued: the put is the
        // fault under test, refused before it touches anything.
        unsafe { put(f.raw(), p) };
        assert_eq!(warnings.end(), 0);
        assert_queued_alone(&f, p);
        Ok(())
    }

    /// The last line of defence of `svc_rdma_post_send`: a chain that needs
    /// more SQ entries than the whole Send Queue has would wait for them
    /// until the connection closes. It is refused at once, before any
    /// reservation, and the connection is closed.
    #[test]
    fn post_send_chain_larger_than_sq_closes() -> Result {
        let f = FakeRdma::new(1, 4).ok_or(ENOMEM)?;
        // SAFETY: a field of our stand-in, which only this thread uses.
        unsafe { (*f.raw()).sc_sq_depth = 2 };
        let c = f.ctxt(2).ok_or(ENOMEM)?;
        let r = sq::post_send(f.rdma(), c);
        assert!(r.is_err());
        if let Err((e, c)) = r {
            assert_eq!(e, ENOTCONN);
            drop(c);
        }
        assert!(f.rdma().is_closing());
        // Nothing was reserved.
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 1);
        Ok(())
    }

    #[test]
    fn post_chain_nothing_posted_returns_ctxt() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(1).ok_or(ENOMEM)?;
        // A failed post must hand the ctxt back.
        let r = sq::post_chain(f.rdma(), c, POST_NONE);
        assert!(r.is_err());
        if let Err((e, c)) = r {
            {
                assert_eq!(e, ENOTCONN);
                // All its entries came back, the connection is closing.
                assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
                assert!(f.rdma().is_closing());
                drop(c); // puts it on the release list, freed with `f`
            }
        }
        Ok(())
    }

    /// `ctxt::release_unreturned` of `f`, whose QP "goes" with nothing
    /// completing meanwhile.
    fn release_unreturned_quiet(f: &FakeRdma) -> u32 {
        // SAFETY: teardown of our stand-in, on this thread: nothing else
        // uses it.
        let drained = unsafe { Drained::assume(f.rdma()) };
        crate::ctxt::release_unreturned(&drained, |d| {
            // SAFETY: nothing of the stand-in completes after the proof.
            Some(unsafe { SendQueueGone::assume_for_test(d.rdma()) })
        })
    }

    /// Plays the provider: completes the posted ctxt `p` as flushed,
    /// through the `ib_cqe` its Send WR carries, as the CQ's poller would.
    ///
    /// # Safety
    ///
    /// `p` is a posted ctxt of a stand-in transport, whose Send has not
    /// completed yet.
    unsafe fn complete_flushed(p: *mut sys::svc_rdma_send_ctxt) {
        let mut wc = sys::ib_wc {
            status: sys::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            ..Default::default()
        };
        // SAFETY: `p` is live and posted (`# Safety`); its `sc_cqe` is what
        // the Send WR names, and its `done` was set by `Ctxt::post`.
        unsafe {
            let cqe = addr_of_mut!((*p).sc_cqe);
            // `wr_cqe`, at the start of the id union (as `Ctxt::alloc`
            // writes it).
            addr_of_mut!(wc.__bindgen_anon_1)
                .cast::<*mut sys::ib_cqe>()
                .write(cqe);
            if let Some(done) = (*cqe).done {
                done(core::ptr::null_mut(), &mut wc);
            }
        }
    }

    /// Asserts that `p`, a ctxt of `f`, was released once: alone on the
    /// free list, marked free, with nothing left to release.
    fn assert_released_alone(f: &FakeRdma, p: *mut sys::svc_rdma_send_ctxt) {
        // SAFETY: the lists of our stand-in and its ctxt; only this thread
        // uses them now.
        unsafe {
            let first = (*f.raw()).sc_send_ctxts.first;
            assert!(first == addr_of_mut!((*p).sc_node));
            assert!((*first).next.is_null());
            assert!((*f.raw()).sc_send_release_list.first.is_null());
        }
        // SAFETY: `p` is on our stand-in's free list, live until `f` goes.
        assert_eq!(unsafe { Ctxt::state_of_raw(p) }, Some(CtxtState::Free));
    }

    /// D1 of the liveness review: the provider completes (flushes) a Send
    /// after `ib_drain_qp` returned, as soft-iWARP does when the
    /// connection's socket closes, and before the QP is destroyed. The
    /// completion must find its ctxt live and unreclaimed, and teardown
    /// must release it once, as an ordinary completed ctxt. (Before the fix
    /// teardown reclaimed the ctxt first: the late completion then queued a
    /// ctxt already on the free list, or freed.)
    #[test]
    fn completion_racing_teardown_is_not_reclaimed() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(0).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, POST_OK).is_ok());
        let before = crate::stats::CTXTS_RECLAIMED.load(Relaxed);
        let mut state_when_quiesced = None;
        // SAFETY: teardown of our stand-in on this thread: nothing else
        // uses it.
        let drained = unsafe { Drained::assume(f.rdma()) };
        let reclaimed = crate::ctxt::release_unreturned(&drained, |d| {
            // The "quiesce" completes the one posted ctxt, as the
            // provider's late flush, and only then makes the proof.
            // SAFETY: `p` is live and posted, not reclaimed yet; nothing
            // completes after the proof.
            unsafe {
                state_when_quiesced = Ctxt::state_of_raw(p);
                complete_flushed(p);
                Some(SendQueueGone::assume_for_test(d.rdma()))
            }
        });
        assert_eq!(state_when_quiesced, Some(CtxtState::Posted));
        assert_eq!(reclaimed, 0);
        assert_eq!(crate::stats::CTXTS_RECLAIMED.load(Relaxed), before);
        // The flushed Send closed the connection and gave its SQ entry back.
        assert!(f.rdma().is_closing());
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 1);
        // Released once: alone on the free list, nothing left to release.
        assert_released_alone(&f, p);
        Ok(())
    }

    /// N1 of the soundness review: a Send completes (flushed) after
    /// `svc_rdma_free`'s final drain and before teardown's walk, as
    /// soft-iWARP's late flush may, and it is the only ctxt out. Teardown
    /// must still release it: it waits out the Send CQ's poller (the
    /// completion may be mid-way) and releases it onto the free list.
    /// (Before the fix teardown saw nothing outstanding, returned, and the
    /// ctxt stayed on the release list, never freed; with a second ctxt
    /// still posted, it was released after the QP's destruction, its R/W
    /// contexts undone on a NULL QP.)
    #[test]
    fn completed_after_final_drain_is_released() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(1).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, POST_OK).is_ok());
        // The final drain of `svc_rdma_free`: nothing completed yet.
        // SAFETY: a live stand-in transport, process context.
        unsafe { crate::exports::svc_rdma_send_ctxts_drain(f.raw()) };
        // SAFETY: `p` is live and posted, its Send not completed.
        unsafe { complete_flushed(p) };
        // SAFETY: `p` is a ctxt of our stand-in, live until `f` goes.
        assert_eq!(unsafe { Ctxt::state_of_raw(p) }, Some(CtxtState::Queued));
        let before = crate::stats::CTXTS_RECLAIMED.load(Relaxed);
        let mut quiesced = false;
        // SAFETY: teardown of our stand-in on this thread: nothing else
        // uses it.
        let drained = unsafe { Drained::assume(f.rdma()) };
        let reclaimed = crate::ctxt::release_unreturned(&drained, |d| {
            quiesced = true;
            // SAFETY: nothing of the stand-in completes after the proof.
            Some(unsafe { SendQueueGone::assume_for_test(d.rdma()) })
        });
        assert!(quiesced);
        assert_eq!(reclaimed, 0);
        assert_eq!(crate::stats::CTXTS_RECLAIMED.load(Relaxed), before);
        // Released once, onto the free list.
        assert_released_alone(&f, p);
        Ok(())
    }

    /// N7/N8 of the soundness review: a transport whose QP teardown has
    /// destroyed (`sc_qp` NULL) and which is deleted from its server
    /// (`XPT_DEAD`) is still reachable through a borrow. A post through it
    /// fails cleanly, its SQ entries given back, and no ctxt can be
    /// allocated (the server, whose limits an allocation reads, may be
    /// gone): no NULL QP is dereferenced, no freed server read.
    #[test]
    fn qp_destroyed_at_teardown_fails_cleanly() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(1).ok_or(ENOMEM)?;
        f.set_qp_destroyed(true);
        let r = sq::post_chain(f.rdma(), c, POST_OK);
        assert!(r.is_err());
        if let Err((e, c)) = r {
            assert_eq!(e, ENOTCONN);
            assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
            drop(c);
        }
        // SAFETY: the flags word of our stand-in transport.
        unsafe {
            sys::set_bit(
                sys::XPT_DEAD as kernel::ffi::c_ulong,
                addr_of_mut!((*f.raw()).sc_xprt.xpt_flags),
            )
        };
        assert!(f.rdma().serv_maxpages().is_none());
        assert!(Ctxt::alloc(f.rdma()).is_none());
        f.set_qp_destroyed(false);
        Ok(())
    }

    /// Teardown (`svc_rdma_send_ctxts_destroy`, the export) with a Send
    /// posted and never completed, on a transport whose Send CQ is not
    /// polled from a workqueue (the stand-in's is `IB_POLL_SOFTIRQ`), so
    /// that its poller cannot be waited out: the shim warns once (counted
    /// here, not printed), the posted ctxt is left allocated, unlisted and
    /// untouched, as C leaves it, and the transport is marked dead. The
    /// stand-in's QP is taken away first: its device cannot destroy one.
    #[test]
    fn unquiescable_send_cq_leaves_unreturned_allocated() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(0).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, POST_OK).is_ok());
        f.set_qp_destroyed(true);
        let warnings = SuppressedWarnings::begin().ok_or(EINVAL)?;
        // SAFETY: teardown of our stand-in after its (empty) final drain,
        // on this thread: nothing else uses it, and nothing completes.
        unsafe { crate::exports::svc_rdma_send_ctxts_destroy(f.raw()) };
        assert_eq!(warnings.end(), 1);
        // SAFETY: the flags word of our stand-in, which only this thread
        // changes.
        let flags = unsafe { (*f.raw()).sc_xprt.xpt_flags };
        assert!(flags & (1 << sys::XPT_DEAD) != 0);
        assert!(!Ctxt::is_listed_for_test(p));
        // SAFETY: `p` is live (left allocated), and only this thread uses
        // it.
        assert_eq!(unsafe { Ctxt::state_of_raw(p) }, Some(CtxtState::Posted));
        // SAFETY: `p` is a live ctxt of our stand-in, made by `alloc` and
        // unlisted by the teardown; listed again, `f` frees it.
        unsafe { Ctxt::relist_for_test(p) };
        f.set_qp_destroyed(false);
        Ok(())
    }

    /// As above, through `svc_rdma_post_send`'s own path (SQ entries
    /// reserved, then the post): refused with `ENOTCONN`, the reserved
    /// entries given back.
    #[test]
    fn post_send_on_destroyed_qp_fails_cleanly() -> Result {
        let f = FakeRdma::new(2, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(1).ok_or(ENOMEM)?;
        f.set_qp_destroyed(true);
        let r = sq::post_send(f.rdma(), c);
        assert!(r.is_err());
        if let Err((e, c)) = r {
            assert_eq!(e, ENOTCONN);
            drop(c);
        }
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
        f.set_qp_destroyed(false);
        Ok(())
    }

    /// `svc_rdma_post_send_err`, the handler svc_rdma_rw.c calls when
    /// posting its RDMA Read chain fails, called through a pointer (the
    /// exported function, not an inlined copy). Nothing posted: the
    /// reserved entries come back and it returns `-ENOTCONN`. Part of the
    /// chain posted: the entries stay with the completions to come and it
    /// returns 0. The connection is closed either way.
    #[test]
    fn post_send_err_entry_gives_back_only_unposted_entries() -> Result {
        let post_err: unsafe extern "C" fn(
            *mut sys::svcxprt_rdma,
            *const sys::rpc_rdma_cid,
            *const sys::ib_send_wr,
            *const sys::ib_send_wr,
            i32,
            i32,
        ) -> i32 = core::hint::black_box(crate::exports::svc_rdma_post_send_err);
        // SAFETY: plain C structs, for which all zeroes is a valid value.
        let (cid, wrs): (sys::rpc_rdma_cid, [sys::ib_send_wr; 2]) =
            unsafe { (core::mem::zeroed(), core::mem::zeroed()) };
        let (first, second): (*const sys::ib_send_wr, *const sys::ib_send_wr) = (&wrs[0], &wrs[1]);
        for (bad, expected, avail_after) in [(first, ENOTCONN.to_errno(), 8), (second, 0, 5)] {
            let f = FakeRdma::new(8, 4).ok_or(ENOMEM)?;
            // The caller's reservation of a chain of three.
            f.rdma().sq_avail().fetch_sub(3, Relaxed);
            // SAFETY: a live stand-in transport and a cid valid for the
            // call; the WRs are only compared.
            let ret = unsafe { post_err(f.raw(), &cid, bad, first, 3, EIO.to_errno()) };
            assert_eq!(ret, expected);
            assert!(f.rdma().is_closing());
            assert_eq!(f.rdma().sq_avail().load(Relaxed), avail_after);
        }
        Ok(())
    }

    /// `p`, the only ctxt of `f` not owned by the test, is released by no
    /// drain (an nfsd thread finishing an RPC), only by `svc_rdma_free`'s
    /// teardown (QP drained), onto the free list.
    fn released_only_at_teardown(f: &FakeRdma, p: *mut sys::svc_rdma_send_ctxt) {
        // SAFETY: a live stand-in transport, process context.
        unsafe { crate::exports::svc_rdma_send_ctxts_drain(f.raw()) };
        // SAFETY: lists of our transport, which only this thread uses.
        unsafe {
            assert!((*f.raw()).sc_send_ctxts.first.is_null());
            assert!((*f.raw()).sc_send_release_list.first.is_null());
        }
        assert_eq!(release_unreturned_quiet(f), 1);
        // SAFETY: the free list of our stand-in and the ctxt now on it;
        // only this thread uses them.
        unsafe {
            let first = (*f.raw()).sc_send_ctxts.first;
            assert!(first == addr_of_mut!((*p).sc_node));
            assert!((*first).next.is_null());
        }
    }

    /// The partial post that C leaks: two chunk Writes and the Send; the
    /// first Write is posted, the rest are not. Nothing may be released
    /// while the transport is in use, the unposted entries come back at
    /// once, and `svc_rdma_free`'s teardown must release the ctxt.
    #[test]
    fn post_chain_partial_post_parks_until_free() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(2).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, POST_ONE_THEN_FAIL).is_ok());
        // Second Write and Send were not posted: 2 of 3 entries back.
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
        assert!(f.rdma().is_closing());
        released_only_at_teardown(&f, p);
        Ok(())
    }

    /// A Send posted whose completion never comes (a provider that lost
    /// it): C leaks the ctxt; `svc_rdma_free`'s teardown, after
    /// `ib_drain_qp`, must find it and release it to the free list, and
    /// count it. An owned ctxt is left alone.
    #[test]
    fn posted_without_completion_is_reclaimed_at_free() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let c = f.ctxt(1).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        let owned = f.ctxt(0).ok_or(ENOMEM)?;
        assert!(sq::post_chain(f.rdma(), c, POST_OK).is_ok());
        let before = crate::stats::CTXTS_RECLAIMED.load(Relaxed);
        released_only_at_teardown(&f, p);
        assert_eq!(
            crate::stats::CTXTS_RECLAIMED.load(Relaxed),
            before.saturating_add(1)
        );
        // The counter is the module's: give back what the stand-in added.
        crate::stats::add(&crate::stats::CTXTS_RECLAIMED, -1);
        // Found again by a second look, as `Owned`: reported, not taken.
        // SAFETY: nothing of our stand-in completes from here on.
        let gone = unsafe { SendQueueGone::assume_for_test(f.rdma()) };
        assert_eq!(
            crate::ctxt::reclaim_unreturned(&gone),
            crate::ctxt::Unreturned {
                posted: 0,
                parked: 0,
                other: 1
            }
        );
        let _ = owned.into_raw(); // `f` frees it
        Ok(())
    }

    /// A chain dropped before its end (S22 of the abstractions review):
    /// the ctxts it still holds are dropped as ctxts, i.e. put back, not
    /// lost unlisted.
    #[test]
    fn dropped_chain_puts_what_it_holds() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let first = f.ctxt(0).ok_or(ENOMEM)?;
        let second = f.ctxt(0).ok_or(ENOMEM)?;
        let (p0, p1) = (first.as_ptr(), second.as_ptr());
        let mut chain = crate::abstractions::send_ctxt::CtxtChain::new();
        chain.push(first);
        chain.push(second);
        drop(chain);
        // SAFETY: `p0` and `p1` are ctxts of our stand-in, live until `f`
        // goes.
        unsafe {
            assert_eq!(Ctxt::state_of_raw(p0), Some(CtxtState::Queued));
            assert_eq!(Ctxt::state_of_raw(p1), Some(CtxtState::Queued));
        }
        // SAFETY: the release list of our stand-in; only this thread uses
        // it.
        unsafe {
            let first = (*f.raw()).sc_send_release_list.first;
            assert!(!first.is_null());
            let second = (*first).next;
            assert!(!second.is_null());
            assert!((*second).next.is_null());
        }
        Ok(())
    }
}
