// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_reply`: the `svc_rdma_result_payload` state
//! machine (vector V10) on a receive ctxt with a real chunk list, and
//! `save_io_pages` failing closed.

use kernel::prelude::kunit_tests;

#[kunit_tests(rpcrdma_rs_reply)]
mod tests {
    use crate::abstractions::recv_ctxt::RecvCtxt;
    use crate::abstractions::rqst::Rqst;
    use crate::abstractions::send_ctxt::Ctxt;
    use crate::fakes::{zalloc, zfree, FakeRdma};
    use crate::reply::{result_payload, save_io_pages};
    use crate::sys;
    use core::ptr::{addr_of_mut, null_mut};
    use kernel::error::code::{EINVAL, EIO, ENOMEM};
    use kernel::error::Result;

    /// A zeroed receive ctxt whose Write list holds chunks of the given
    /// lengths, with the payload cursor on the first, as after decoding.
    struct Call {
        rctxt: *mut sys::svc_rdma_recv_ctxt,
        chunks: [*mut sys::svc_rdma_chunk; 2],
    }

    impl Call {
        fn new(lengths: [u32; 2]) -> Option<Self> {
            let rctxt = zalloc::<sys::svc_rdma_recv_ctxt>();
            let mut chunks = [null_mut::<sys::svc_rdma_chunk>(); 2];
            for c in &mut chunks {
                *c = zalloc::<sys::svc_rdma_chunk>();
            }
            let call = Self { rctxt, chunks };
            if rctxt.is_null() || chunks.iter().any(|c| c.is_null()) {
                return None;
            }
            // SAFETY: zeroed objects only this test knows.
            unsafe {
                let pcl = addr_of_mut!((*rctxt).rc_write_pcl);
                sys::INIT_LIST_HEAD(addr_of_mut!((*pcl).cl_chunks));
                for (c, len) in chunks.iter().zip(lengths) {
                    (**c).ch_length = len;
                    sys::list_add_tail(addr_of_mut!((**c).ch_list), addr_of_mut!((*pcl).cl_chunks));
                }
                (*pcl).cl_count = 2;
                (*rctxt).rc_cur_result_payload = chunks[0];
            }
            Some(call)
        }

        fn cursor(&self) -> *mut sys::svc_rdma_chunk {
            // SAFETY: ours.
            unsafe { (*self.rctxt).rc_cur_result_payload }
        }

        /// (position, payload length) of chunk `i`.
        fn chunk(&self, i: usize) -> (u32, u32) {
            // SAFETY: ours.
            unsafe {
                (
                    (*self.chunks[i]).ch_position,
                    (*self.chunks[i]).ch_payload_length,
                )
            }
        }
    }

    impl Drop for Call {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` by `zalloc` (or null), no longer
            // used.
            unsafe {
                for c in self.chunks {
                    zfree(c);
                }
                zfree(self.rctxt);
            }
        }
    }

    #[test]
    fn payload_fits_and_cursor_advances() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            result_payload(RecvCtxt::from_raw(call.rctxt), 120, 4096);
            assert_eq!(call.chunk(0), (120, 4096));
            assert!(call.cursor() == call.chunks[1]);
            result_payload(RecvCtxt::from_raw(call.rctxt), 300, 100);
            assert_eq!(call.chunk(1), (300, 100));
            // Past the last chunk: nothing to assign, nothing fails.
            assert!(call.cursor().is_null());
            result_payload(RecvCtxt::from_raw(call.rctxt), 400, 100);
            assert!(call.cursor().is_null());
            assert_eq!(call.chunk(1), (300, 100));
        }
        Ok(())
    }

    #[test]
    fn too_big_still_advances() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            // Not refused (nfsd's error path after a splice read would
            // strand page-cache pages): the payload stays in the reply.
            result_payload(RecvCtxt::from_raw(call.rctxt), 120, 5000);
            // The cursor moved on; the too-small chunk stays unused.
            assert!(call.cursor() == call.chunks[1]);
            assert_eq!(call.chunk(0), (0, 0));
            // The next payload takes the next chunk.
            result_payload(RecvCtxt::from_raw(call.rctxt), 5200, 8192);
            assert_eq!(call.chunk(1), (5200, 8192));
        }
        Ok(())
    }

    #[test]
    fn zero_length_does_not_move() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            result_payload(RecvCtxt::from_raw(call.rctxt), 120, 0);
            assert!(call.cursor() == call.chunks[0]);
            assert_eq!(call.chunk(0), (0, 0));
        }
        Ok(())
    }

    #[test]
    fn no_write_chunks() -> Result {
        let call = Call::new([1, 1]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            (*call.rctxt).rc_cur_result_payload = null_mut();
            result_payload(RecvCtxt::from_raw(call.rctxt), 0, 100);
            assert!(call.cursor().is_null());
            assert_eq!(call.chunk(0), (0, 0));
        }
        Ok(())
    }

    /// A zeroed request whose reply holds `n` (fake, never dereferenced)
    /// pages, and a send ctxt of a stand-in transport (which frees it),
    /// whose 8 page slots count as `room`.
    struct Pages {
        rqstp: *mut sys::svc_rqst,
        respages: [*mut sys::page; 8],
        ctxt: *mut sys::svc_rdma_send_ctxt,
        _rdma: FakeRdma,
    }

    impl Pages {
        fn new(n: usize, room: usize) -> Option<kernel::alloc::KBox<Self>> {
            let rdma = FakeRdma::new(0, 1)?;
            let ctxt = rdma.ctxt(0)?.into_raw();
            let mut p = kernel::alloc::KBox::new(
                Self {
                    rqstp: zalloc::<sys::svc_rqst>(),
                    respages: [null_mut(); 8],
                    ctxt,
                    _rdma: rdma,
                },
                kernel::alloc::flags::GFP_KERNEL,
            )
            .ok()?;
            if p.rqstp.is_null() || n > 8 || room > 8 {
                return None;
            }
            for (i, page) in p.respages.iter_mut().take(n).enumerate() {
                *page = core::ptr::dangling_mut::<sys::page>().wrapping_add(i.wrapping_add(1));
            }
            // SAFETY: a zeroed request and a ctxt only this test knows;
            // the array lives in the box, which does not move. The ctxt has
            // 8 slots (`FakeRdma`'s server); `drop` restores the count.
            unsafe {
                (*p.rqstp).rq_respages = p.respages.as_mut_ptr();
                (*p.rqstp).rq_next_page = p.respages.as_mut_ptr().add(n);
                if (*p.ctxt).sc_maxpages != 8 {
                    return None;
                }
                (*p.ctxt).sc_maxpages = room;
            }
            Some(p)
        }

        /// The ctxt's page slots.
        fn slots(&self) -> [*mut sys::page; 8] {
            let mut slots = [null_mut(); 8];
            // SAFETY: the ctxt's page array holds 8 slots (checked in
            // `new`), which only this test uses.
            unsafe { core::ptr::copy_nonoverlapping((*self.ctxt).sc_pages, slots.as_mut_ptr(), 8) };
            slots
        }

        /// `save_io_pages` on the test's request and ctxt.
        fn save(&self) -> Result {
            // SAFETY: our zeroed request and stand-in ctxt, used by no one
            // else; `save_io_pages` uses only their page fields.
            let (rqst, ctxt) =
                unsafe { (&mut *self.rqstp.cast::<Rqst>(), Ctxt::from_raw(self.ctxt)) };
            let mut ctxt = ctxt.ok_or(EINVAL)?;
            let r = save_io_pages(rqst, &mut ctxt);
            // Lent: `drop` frees it.
            let _ = ctxt.into_raw();
            r
        }

        fn count(&self) -> i32 {
            // SAFETY: ours.
            unsafe { (*self.ctxt).sc_page_count }
        }
    }

    impl Drop for Pages {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` by `zalloc` (or null), no longer
            // used. The ctxt goes with its transport, `_rdma`, with the
            // slot count it was allocated with.
            unsafe {
                zfree(self.rqstp);
                (*self.ctxt).sc_maxpages = 8;
            }
        }
    }

    #[test]
    fn save_io_pages_moves_all_once() -> Result {
        let p = Pages::new(3, 8).ok_or(ENOMEM)?;
        let want = [p.respages[0], p.respages[1], p.respages[2]];
        // SAFETY: our request and ctxt.
        assert_eq!(p.save(), Ok(()));
        assert_eq!(p.count(), 3);
        assert_eq!(&p.slots()[..3], &want[..]);
        assert!(p.respages.iter().all(|page| page.is_null()));
        // A second move would take the NULL slots: refused, nothing changes.
        // SAFETY: the test's own request and ctxt, used by no one else.
        assert_eq!(p.save(), Err(EIO));
        assert_eq!(p.count(), 3);
        assert_eq!(&p.slots()[..3], &want[..]);
        Ok(())
    }

    #[test]
    fn save_io_pages_too_many_moves_none() -> Result {
        let p = Pages::new(5, 4).ok_or(ENOMEM)?;
        // SAFETY: our request and ctxt.
        assert_eq!(p.save(), Err(EIO));
        // Fail closed: every page stays with the request, to be released
        // by it; the ctxt holds none.
        assert_eq!(p.count(), 0);
        assert!(p.slots().iter().all(|page| page.is_null()));
        assert!(p.respages.iter().take(5).all(|page| !page.is_null()));
        Ok(())
    }
}
