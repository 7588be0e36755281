// SPDX-License-Identifier: GPL-2.0

//! Stand-ins for KUnit: a transport and send ctxts that live in plain
//! memory, enough for the Send path's bookkeeping (SQ accounting, the
//! pool's lists, posting with a stand-in `ib_post_send`). The transport is
//! marked `XPT_BUSY`, as a dead one is, so `svc_xprt_enqueue` leaves it
//! alone. No device: nothing here maps DMA.

use crate::abstractions::send_ctxt::Ctxt;
use crate::abstractions::xprt::Rdma;
use crate::sys;
use core::alloc::Layout;
use core::ptr::{addr_of_mut, null_mut, NonNull};
use kernel::alloc::allocator::Kmalloc;
use kernel::alloc::flags::{__GFP_ZERO, GFP_KERNEL};
use kernel::alloc::{Allocator, NumaNode};
use kernel::ffi::c_ulong;

/// A zeroed `svcxprt_rdma` with its lists and wait queues initialised.
pub(crate) struct FakeRdma(NonNull<sys::svcxprt_rdma>);

impl FakeRdma {
    pub(crate) fn new(sq_avail: i32, max_send_sges: u32) -> Option<Self> {
        let p = NonNull::new(zalloc::<sys::svcxprt_rdma>())?;
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

    /// A send ctxt of this transport with `writes` chained before its
    /// Send WR (stand-ins for chunk Writes), as `svc_rdma_send_ctxt_get`
    /// would hand it out, with an empty header buffer. Freed when `self`
    /// is dropped (never by `IdleCtxt::free`, which frees what
    /// `Ctxt::alloc` allocated).
    pub(crate) fn ctxt(&self, writes: &mut [sys::ib_send_wr]) -> Option<Ctxt> {
        Ctxt::alloc_fake(self.rdma(), writes)
    }
}

impl Drop for FakeRdma {
    fn drop(&mut self) {
        // Free every ctxt of this transport, on whatever list the test
        // left it (all of them are on the list of all ctxts).
        while Ctxt::free_next_fake(self.rdma()) {}
        // SAFETY: allocated in `new` by `zalloc`, and no ctxt refers to it
        // any more.
        unsafe { zfree(self.raw()) };
    }
}

/// A zeroed `T` from kmalloc, or null; freed with [`zfree`].
pub(crate) fn zalloc<T>() -> *mut T {
    Kmalloc::alloc(
        Layout::new::<T>(),
        GFP_KERNEL | __GFP_ZERO,
        NumaNode::NO_NODE,
    )
    .map_or(null_mut(), |p| p.as_ptr().cast())
}

/// Frees what [`zalloc`] returned.
///
/// # Safety
///
/// `p` is null or came from `zalloc::<T>`, and is not used again.
pub(crate) unsafe fn zfree<T>(p: *mut T) {
    if let Some(p) = NonNull::new(p) {
        // SAFETY: allocated by `Kmalloc` with `T`'s layout (`# Safety`).
        unsafe { Kmalloc::free(p.cast(), Layout::new::<T>()) };
    }
}
