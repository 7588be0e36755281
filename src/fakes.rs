// SPDX-License-Identifier: GPL-2.0

//! Stand-ins for KUnit: a transport and send ctxts that live in plain
//! memory, enough for the Send path's bookkeeping (SQ accounting, the
//! pool's lists, posting with a stand-in `ib_post_send`). The transport is
//! marked `XPT_BUSY`, as a dead one is, so `svc_xprt_enqueue` leaves it
//! alone. No device: nothing here maps DMA.

use crate::ctxt::SendCtxt;
use crate::sys;
use crate::xprt::Rdma;
use core::mem::size_of;
use core::ptr::{addr_of_mut, NonNull};
use kernel::ffi::c_ulong;

/// A zeroed `svcxprt_rdma` with its lists and wait queues initialised.
pub(crate) struct FakeRdma(NonNull<sys::svcxprt_rdma>);

impl FakeRdma {
    pub(crate) fn new(sq_avail: i32, max_send_sges: u32) -> Option<Self> {
        // SAFETY: plain allocation, any node.
        let p = unsafe { sys::rs_kzalloc_node(size_of::<sys::svcxprt_rdma>(), -1) }
            .cast::<sys::svcxprt_rdma>();
        let p = NonNull::new(p)?;
        let r = p.as_ptr();
        // SAFETY: a zeroed transport only this test knows.
        unsafe {
            // One lock class per wait queue: lockdep rejects a key shared
            // by locks of different names.
            sys::__init_waitqueue_head(
                addr_of_mut!((*r).sc_send_wait),
                kernel::str::CStrExt::as_char_ptr(c"rs_fake_send_wait"),
                kernel::static_lock_class!().as_ptr(),
            );
            sys::__init_waitqueue_head(
                addr_of_mut!((*r).sc_sq_ticket_wait),
                kernel::str::CStrExt::as_char_ptr(c"rs_fake_ticket_wait"),
                kernel::static_lock_class!().as_ptr(),
            );
            sys::set_bit(
                sys::XPT_BUSY as c_ulong,
                addr_of_mut!((*r).sc_xprt.xpt_flags),
            );
            (*r).sc_sq_avail.counter = sq_avail;
            (*r).sc_sq_depth = 128;
            (*r).sc_max_send_sges = max_send_sges;
            (*r).sc_max_req_size = 4096;
        }
        Some(Self(p))
    }

    pub(crate) fn rdma(&self) -> &Rdma {
        // SAFETY: lives as long as `self`.
        unsafe { Rdma::from_raw(self.0.as_ptr()) }
    }

    pub(crate) fn raw(&self) -> *mut sys::svcxprt_rdma {
        self.0.as_ptr()
    }

    /// Sets `XPT_CLOSE`, as a closing connection has it.
    pub(crate) fn set_closing(&self) {
        // SAFETY: the flags word of our transport.
        unsafe {
            sys::set_bit(
                sys::XPT_CLOSE as c_ulong,
                addr_of_mut!((*self.raw()).sc_xprt.xpt_flags),
            )
        };
    }

    /// A send ctxt of this transport with `nwrs` WRs chained before its
    /// Send WR (stand-ins for chunk Writes), as `svc_rdma_send_ctxt_get`
    /// would hand it out; no header buffer.
    pub(crate) fn ctxt(&self, writes: &mut [sys::ib_send_wr]) -> Option<SendCtxt> {
        let size = crate::ctxt::ctxt_alloc_size(self.rdma().max_send_sges())?;
        // SAFETY: plain allocation.
        let c = unsafe { sys::rs_kzalloc_node(size, -1) }.cast::<sys::svc_rdma_send_ctxt>();
        if c.is_null() {
            return None;
        }
        // SAFETY: a zeroed ctxt only this test knows.
        unsafe {
            (*c).sc_rdma = self.raw();
            sys::INIT_LIST_HEAD(addr_of_mut!((*c).sc_write_info_list));
            sys::INIT_LIST_HEAD(addr_of_mut!((*c).sc_reply_info.wi_cc.cc_rwctxts));
            (*c).sc_send_wr.sg_list = addr_of_mut!((*c).sc_sges).cast();
            (*c).sc_send_wr.num_sge = 1;
            let send = addr_of_mut!((*c).sc_send_wr);
            // Link writes[0] -> writes[1] -> ... -> Send.
            let mut next = send;
            for w in writes.iter_mut().rev() {
                w.next = next;
                next = w;
            }
            (*c).sc_wr_chain = next;
            (*c).sc_sqecount = writes.len() as i32 + 1;
            // Listed as the pool lists its own; `drop` unlists and frees.
            crate::ctxt::list(self.rdma(), c);
            SendCtxt::from_raw(c)
        }
    }
}

impl Drop for FakeRdma {
    fn drop(&mut self) {
        // Free every ctxt of this transport, on whatever list the test
        // left it (all of them are on the list of all ctxts).
        loop {
            let c = crate::ctxt::unlist_next_of(self.rdma());
            if c.is_null() {
                break;
            }
            // SAFETY: a ctxt made by `ctxt()`, now unlisted; the test is
            // over, so nobody uses it.
            unsafe { sys::kfree(c.cast()) };
        }
        // SAFETY: allocated in `new`.
        unsafe { sys::kfree(self.raw().cast()) };
    }
}
