// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_reply`: the `svc_rdma_result_payload` state
//! machine (sendto-map V10) on a receive ctxt with a real chunk list.

use kernel::prelude::kunit_tests;

#[kunit_tests(rpcrdma_rs_reply)]
mod tests {
    use crate::reply::result_payload;
    use crate::sys;
    use core::mem::size_of;
    use core::ptr::{addr_of_mut, null_mut};
    use kernel::error::code::{E2BIG, ENOMEM};
    use kernel::error::Result;

    /// A zeroed receive ctxt whose Write list holds chunks of the given
    /// lengths, with the payload cursor on the first, as after decoding.
    struct Call {
        rctxt: *mut sys::svc_rdma_recv_ctxt,
        chunks: [*mut sys::svc_rdma_chunk; 2],
    }

    impl Call {
        fn new(lengths: [u32; 2]) -> Option<Self> {
            // SAFETY: plain allocations.
            let rctxt = unsafe { sys::rs_kzalloc_node(size_of::<sys::svc_rdma_recv_ctxt>(), -1) }
                .cast::<sys::svc_rdma_recv_ctxt>();
            let mut chunks = [null_mut::<sys::svc_rdma_chunk>(); 2];
            for c in &mut chunks {
                // SAFETY: as above.
                *c = unsafe { sys::rs_kzalloc_node(size_of::<sys::svc_rdma_chunk>(), -1) }.cast();
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
            // SAFETY: allocated in `new` (kfree takes null).
            unsafe {
                for c in self.chunks {
                    sys::kfree(c.cast());
                }
                sys::kfree(self.rctxt.cast());
            }
        }
    }

    #[test]
    fn payload_fits_and_cursor_advances() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            assert_eq!(result_payload(call.rctxt, 120, 4096), Ok(()));
            assert_eq!(call.chunk(0), (120, 4096));
            assert!(call.cursor() == call.chunks[1]);
            assert_eq!(result_payload(call.rctxt, 300, 100), Ok(()));
            assert_eq!(call.chunk(1), (300, 100));
            // Past the last chunk: nothing to assign, nothing fails.
            assert!(call.cursor().is_null());
            assert_eq!(result_payload(call.rctxt, 400, 100), Ok(()));
        }
        Ok(())
    }

    #[test]
    fn too_big_still_advances() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            assert_eq!(result_payload(call.rctxt, 120, 5000), Err(E2BIG));
            // The cursor moved on; the too-small chunk stays unused.
            assert!(call.cursor() == call.chunks[1]);
            assert_eq!(call.chunk(0), (0, 0));
        }
        Ok(())
    }

    #[test]
    fn zero_length_does_not_move() -> Result {
        let call = Call::new([4096, 8192]).ok_or(ENOMEM)?;
        // SAFETY: the Call's own receive ctxt.
        unsafe {
            assert_eq!(result_payload(call.rctxt, 120, 0), Ok(()));
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
            assert_eq!(result_payload(call.rctxt, 0, 100), Ok(()));
        }
        Ok(())
    }
}
