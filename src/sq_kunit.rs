// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_sq`: Send Queue accounting single-threaded
//! (the ticket protocol, with wrapping counters), and posting, including
//! the partial-post case that C leaks.

use kernel::prelude::kunit_tests;

#[kunit_tests(rpcrdma_rs_sq)]
mod tests {
    use crate::fakes::FakeRdma;
    use crate::sq;
    use crate::sys;
    use core::ptr::addr_of_mut;
    use kernel::error::code::{EIO, ENOMEM, ENOTCONN};
    use kernel::error::Result;
    use kernel::sync::atomic::Relaxed;

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
        // The failed reservation was undone, the ticket taken and served
        // exactly once, and the starvation counted.
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
        let wr = sys::ib_send_wr::default();
        let rc = sq::post_send_err(f.rdma(), &CID, &wr, &wr, 3, -5);
        assert_eq!(rc, ENOTCONN.to_errno());
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 3);
        assert!(f.rdma().is_closing());
        Ok(())
    }

    /// Stand-in for `ib_post_send` that accepts everything.
    ///
    /// # Safety
    ///
    /// Called as `ib_post_send` is.
    unsafe extern "C" fn post_ok(
        _qp: *mut sys::ib_qp,
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
        wr: *const sys::ib_send_wr,
        bad: *mut *const sys::ib_send_wr,
    ) -> i32 {
        // SAFETY: `bad` is the caller's out-parameter.
        unsafe { *bad = wr };
        EIO.to_errno()
    }

    #[test]
    fn post_chain_success_hands_ctxt_to_completion() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let mut writes = [];
        let c = f.ctxt(&mut writes).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, post_ok).is_ok());
        // Nothing was put back: the completion owns it. Free it here.
        assert!(!f.rdma().is_closing());
        // SAFETY: the stand-in device will never complete it.
        unsafe { sys::kfree(p.cast()) };
        Ok(())
    }

    #[test]
    fn post_chain_nothing_posted_returns_ctxt() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let mut writes = [sys::ib_send_wr::default()];
        let c = f.ctxt(&mut writes).ok_or(ENOMEM)?;
        // A failed post must hand the ctxt back.
        let r = sq::post_chain(f.rdma(), c, post_none);
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

    /// The partial post that C leaks: two chunk Writes and the Send; the
    /// first Write is posted, the rest are not. Nothing may be released
    /// while the transport is in use, the unposted entries come back at
    /// once, and `svc_rdma_free`'s drain must release the ctxt.
    #[test]
    fn post_chain_partial_post_parks_until_free() -> Result {
        let f = FakeRdma::new(0, 4).ok_or(ENOMEM)?;
        let mut writes = [sys::ib_send_wr::default(), sys::ib_send_wr::default()];
        let c = f.ctxt(&mut writes).ok_or(ENOMEM)?;
        let p = c.as_ptr();
        assert!(sq::post_chain(f.rdma(), c, post_one_then_fail).is_ok());
        // Second Write and Send were not posted: 2 of 3 entries back.
        assert_eq!(f.rdma().sq_avail().load(Relaxed), 2);
        assert!(f.rdma().is_closing());
        // Not released early: neither free nor release list has it.
        // SAFETY: lists of our transport.
        unsafe {
            assert!((*f.raw()).sc_send_ctxts.first.is_null());
            assert!((*f.raw()).sc_send_release_list.first.is_null());
        }
        // A drain by an nfsd thread finishing an RPC (the transport holds
        // references) must not release it.
        // SAFETY: our stand-in; one reference, as while serving.
        unsafe { (*f.raw()).sc_xprt.xpt_ref.refcount.refs.counter = 1 };
        // SAFETY: a live stand-in transport, process context.
        unsafe { crate::exports::svc_rdma_send_ctxts_drain(f.raw()) };
        // SAFETY: as above.
        unsafe { assert!((*f.raw()).sc_send_ctxts.first.is_null()) };
        // svc_rdma_free's drain (no reference left, QP drained) releases
        // it onto the free list, before the R/W contexts are destroyed.
        // SAFETY: our stand-in; the last reference dropped.
        unsafe { (*f.raw()).sc_xprt.xpt_ref.refcount.refs.counter = 0 };
        // SAFETY: as above.
        unsafe { crate::exports::svc_rdma_send_ctxts_drain(f.raw()) };
        // SAFETY: as above.
        unsafe {
            let first = (*f.raw()).sc_send_ctxts.first;
            assert!(first == addr_of_mut!((*p).sc_node));
        }
        Ok(())
    }
}
