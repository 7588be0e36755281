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
    use kernel::error::code::{EINVAL, EIO, ENOMEM, ENOTCONN};
    use kernel::error::Result;
    use kernel::sync::atomic::Relaxed;

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

    /// A Write chunk with [`SEGS`] segments, as `pcl_alloc_chunk` lays
    /// one out (the segments follow the chunk, its flexible array).
    const SEGS: usize = 3;
    #[repr(C)]
    struct ChunkWithSegments {
        chunk: sys::svc_rdma_chunk,
        segments: [sys::svc_rdma_segment; SEGS],
    }

    /// A request being answered on a stand-in transport: its Call, of
    /// `call_len` received bytes (an XID and RPC/RDMA version 1), offered
    /// one Write chunk of [`SEGS`] segments that the reply does not use.
    struct Answer {
        rqstp: *mut sys::svc_rqst,
        rctxt: *mut sys::svc_rdma_recv_ctxt,
        chunk: *mut ChunkWithSegments,
        call: [u8; 16],
        reply: [u8; 32],
        rdma: FakeRdma,
    }

    impl Answer {
        fn new(header_buf_size: i32, call_len: u32) -> Option<kernel::alloc::KBox<Self>> {
            let rdma = FakeRdma::new(8, 4)?;
            let mut a = kernel::alloc::KBox::new(
                Self {
                    rqstp: zalloc(),
                    rctxt: zalloc(),
                    chunk: zalloc(),
                    call: [0; 16],
                    reply: [0; 32],
                    rdma,
                },
                kernel::alloc::flags::GFP_KERNEL,
            )
            .ok()?;
            if a.rqstp.is_null() || a.rctxt.is_null() || a.chunk.is_null() {
                return None;
            }
            a.call[..4].copy_from_slice(&0x1234_5678u32.to_be_bytes());
            a.call[4..8].copy_from_slice(&1u32.to_be_bytes());
            let (call, reply) = (a.call.as_mut_ptr(), a.reply.as_mut_ptr());
            // SAFETY: zeroed objects only this test knows, and the fields of
            // our stand-in transport, which only this thread uses; the
            // buffers are in the box, which does not move.
            unsafe {
                (*a.rdma.raw()).sc_max_req_size = header_buf_size;
                let r = a.rctxt;
                (*r).rc_recv_buf = call.cast();
                (*r).rc_byte_len = call_len;
                sys::INIT_LIST_HEAD(addr_of_mut!((*r).rc_reply_pcl.cl_chunks));
                let pcl = addr_of_mut!((*r).rc_write_pcl);
                sys::INIT_LIST_HEAD(addr_of_mut!((*pcl).cl_chunks));
                let c = addr_of_mut!((*a.chunk).chunk);
                (*c).ch_segcount = SEGS as u32;
                (*c).ch_length = 4096 * SEGS as u32;
                for (i, seg) in (*a.chunk).segments.iter_mut().enumerate() {
                    seg.rs_handle = 0x100 + i as u32;
                    seg.rs_length = 4096;
                    seg.rs_offset = 0x1000_0000 * (i as u64 + 1);
                }
                sys::list_add_tail(addr_of_mut!((*c).ch_list), addr_of_mut!((*pcl).cl_chunks));
                (*pcl).cl_count = 1;
                let q = a.rqstp;
                (*q).rq_xprt = addr_of_mut!((*a.rdma.raw()).sc_xprt);
                (*q).rq_xprt_ctxt = r.cast();
                let res = addr_of_mut!((*q).rq_res);
                (*res).head[0].iov_base = reply.cast();
                (*res).head[0].iov_len = 32;
                (*res).len = 32;
                (*res).buflen = 32;
            }
            Some(a)
        }
    }

    impl Answer {
        /// Answers the request: `svc_rdma_sendto`, the exported function.
        fn send(&self) -> i32 {
            // SAFETY: a request being answered on our stand-in, with its
            // Call's receive ctxt and its reply, used by this thread alone.
            unsafe { crate::exports::svc_rdma_sendto(self.rqstp) }
        }

        /// Asserts that `svc_rdma_sendto` returned `ret`, `-ENOTCONN`,
        /// having closed the connection and posted nothing (every SQ
        /// entry is still there).
        fn assert_closed_unposted(&self, ret: i32) {
            assert_eq!(ret, ENOTCONN.to_errno());
            assert!(self.rdma.rdma().is_closing());
            assert_eq!(self.rdma.rdma().sq_avail().load(Relaxed), 8);
        }
    }

    impl Drop for Answer {
        fn drop(&mut self) {
            // SAFETY: allocated in `new` by `zalloc` (or null); the
            // transport's ctxts hold none of them.
            unsafe {
                zfree(self.chunk);
                zfree(self.rctxt);
                zfree(self.rqstp);
            }
        }
    }

    /// `svc_rdma_sendto` when the reply's transport header does not fit
    /// the Send's header buffer (the Call echoed needs 84 bytes: fixed
    /// header, no Read list, a Write list of one 3-segment chunk, no Reply
    /// chunk). A real transport cannot get there (the Call's header, which
    /// holds the chunks echoed, arrived in a Receive buffer of the header
    /// buffer's size); the stand-in's buffer is made 64 bytes to drive the
    /// failure: nothing is posted, the ctxt is put back, and the
    /// connection is closed (`-ENOTCONN`) so that the client retransmits.
    #[test]
    fn sendto_header_too_big_closes() -> Result {
        let a = Answer::new(64, 16).ok_or(ENOMEM)?;
        let ret = a.send();
        a.assert_closed_unposted(ret);
        // The ctxt was put: on the release list, alone.
        // SAFETY: the release list of our stand-in; only this thread uses
        // it.
        unsafe {
            let first = (*a.rdma.raw()).sc_send_release_list.first;
            assert!(!first.is_null());
            assert!((*first).next.is_null());
        }
        Ok(())
    }

    /// A Send header buffer smaller than the fixed transport header (28
    /// bytes; a real one is `sc_max_req_size`, at least 4096): closed
    /// before anything is built.
    #[test]
    fn sendto_header_buffer_below_fixed_header_closes() -> Result {
        let a = Answer::new(16, 16).ok_or(ENOMEM)?;
        let ret = a.send();
        a.assert_closed_unposted(ret);
        Ok(())
    }

    /// The backchannel's entry points given no ctxt: refused with
    /// `-EINVAL`, nothing touched. Called through pointers: the very
    /// functions the module exports, not copies inlined here.
    #[test]
    fn backchannel_entries_refuse_null_ctxt() -> Result {
        let a = Answer::new(4096, 16).ok_or(ENOMEM)?;
        let post: unsafe extern "C" fn(
            *mut sys::svcxprt_rdma,
            *mut sys::svc_rdma_send_ctxt,
        ) -> i32 = core::hint::black_box(crate::exports::svc_rdma_post_send);
        let map: unsafe extern "C" fn(
            *mut sys::svcxprt_rdma,
            *mut sys::svc_rdma_send_ctxt,
            *const sys::svc_rdma_pcl,
            *const sys::svc_rdma_pcl,
            *const sys::xdr_buf,
        ) -> i32 = core::hint::black_box(crate::exports::svc_rdma_map_reply_msg);
        // SAFETY: a live stand-in transport and no ctxt, which both take;
        // the lists and the reply are our request's, valid and unchanged.
        unsafe {
            assert_eq!(post(a.rdma.raw(), null_mut()), EINVAL.to_errno());
            let (r, q) = (a.rctxt, a.rqstp);
            assert_eq!(
                map(
                    a.rdma.raw(),
                    null_mut(),
                    addr_of_mut!((*r).rc_write_pcl),
                    addr_of_mut!((*r).rc_reply_pcl),
                    addr_of_mut!((*q).rq_res),
                ),
                EINVAL.to_errno()
            );
        }
        assert!(!a.rdma.rdma().is_closing());
        assert_eq!(a.rdma.rdma().sq_avail().load(Relaxed), 8);
        Ok(())
    }

    /// The same with room for the header: the Call is shorter than its XID
    /// and version (a Call that nfsd could not have decoded), so there is
    /// nothing to answer with: closed likewise.
    #[test]
    fn sendto_call_without_xid_closes() -> Result {
        let a = Answer::new(4096, 4).ok_or(ENOMEM)?;
        let ret = a.send();
        a.assert_closed_unposted(ret);
        Ok(())
    }

    /// A whole reply built, then its Send refused by the device (the QP
    /// taken away under it, as a teardown on another thread would): the
    /// reply is dropped, its ctxt put back, the connection closed, and the
    /// SQ entries the post reserved given back.
    #[test]
    fn sendto_post_refused_closes() -> Result {
        let a = Answer::new(4096, 16).ok_or(ENOMEM)?;
        a.rdma.set_qp_destroyed(true);
        let ret = a.send();
        a.rdma.set_qp_destroyed(false);
        a.assert_closed_unposted(ret);
        Ok(())
    }
}
