// SPDX-License-Identifier: GPL-2.0

//! Stand-ins for KUnit: a transport and send ctxts that live in plain
//! memory, enough for the Send path's bookkeeping (SQ accounting, the
//! pool's lists, posting with a stand-in `ib_post_send`). The transport is
//! marked `XPT_BUSY`, as a dead one is, so `svc_xprt_enqueue` leaves it
//! alone. It has what [`Rdma`]'s invariant promises: a device (with no DMA
//! device, so mappings take the IB core's virtual-DMA path, as on
//! soft-RoCE), whose `post_send` posts nothing, a PD and a QP on it, a Send
//! CQ and a server (the shim's `rs_fake_parts_attach`); its ctxts are made
//! by [`Ctxt::alloc`], as the pool makes them.

use crate::abstractions::send_ctxt::Ctxt;
use crate::abstractions::xprt::Rdma;
use crate::sys;
use core::alloc::Layout;
use core::cell::Cell;
use core::ptr::{addr_of_mut, null_mut, NonNull};
use kernel::alloc::allocator::Kmalloc;
use kernel::alloc::flags::{__GFP_ZERO, GFP_KERNEL};
use kernel::alloc::{Allocator, NumaNode};
use kernel::ffi::{c_ulong, c_void};

/// Stand-in chunk Write WRs a test chains before a ctxt's Send WR: at most
/// [`MAX_WRITES`] per ctxt, for at most [`CTXTS_WITH_WRITES`] ctxts.
const MAX_WRITES: usize = 4;
const CTXTS_WITH_WRITES: usize = 8;
type Writes = [[sys::ib_send_wr; MAX_WRITES]; CTXTS_WITH_WRITES];

/// A zeroed `svcxprt_rdma` with its lists, wait queues and free-list lock
/// initialised and its device, PD, QP, Send CQ and server attached.
///
/// # Invariants
///
/// `rdma` is such a transport, `parts` what the shim attached to it and
/// `writes` the WRs chained into its ctxts; all three live until `drop`,
/// which frees every ctxt of the transport first.
pub(crate) struct FakeRdma {
    rdma: NonNull<sys::svcxprt_rdma>,
    parts: NonNull<c_void>,
    /// The stand-in's own QP, which `set_qp_destroyed(false)` gives back.
    qp: *mut sys::ib_qp,
    writes: NonNull<Writes>,
    writes_used: Cell<usize>,
}

impl FakeRdma {
    pub(crate) fn new(sq_avail: i32, max_send_sges: u32) -> Option<Self> {
        let writes = NonNull::new(zalloc::<Writes>())?;
        let Some(p) = NonNull::new(zalloc::<sys::svcxprt_rdma>()) else {
            // SAFETY: allocated just above by `zalloc`, unused.
            unsafe { zfree(writes.as_ptr()) };
            return None;
        };
        let r = p.as_ptr();
        // SAFETY: a zeroed transport only this test knows.
        let parts = unsafe { sys::rs_fake_parts_attach(r) };
        let Some(parts) = NonNull::new(parts) else {
            // SAFETY: allocated above by `zalloc`, unused.
            unsafe { zfree(writes.as_ptr()) };
            // SAFETY: allocated above by `zalloc`, nothing refers to it.
            unsafe { zfree(r) };
            return None;
        };
        // SAFETY: a zeroed transport only this test knows, its device now
        // attached.
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
            // The free list's lock, which `send_ctxt_get` takes (the
            // debug kernel's lockdep refuses an uninitialised one).
            sys::__spin_lock_init(
                addr_of_mut!((*r).sc_send_lock),
                kernel::str::CStrExt::as_char_ptr(c"rs_fake_send_lock"),
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
        // INVARIANT: the transport is set up above, with what the shim
        // attached; the WRs are ours until `drop`.
        Some(Self {
            rdma: p,
            parts,
            // SAFETY: the QP pointer the shim attached just above.
            qp: unsafe { (*r).sc_qp },
            writes,
            writes_used: Cell::new(0),
        })
    }

    pub(crate) fn rdma(&self) -> &Rdma {
        // SAFETY: a complete transport (type invariant) that lives as long
        // as `self`.
        unsafe { Rdma::from_raw(self.rdma.as_ptr()) }
    }

    pub(crate) fn raw(&self) -> *mut sys::svcxprt_rdma {
        self.rdma.as_ptr()
    }

    /// Takes the QP away (`sc_qp` NULL), as teardown leaves a transport
    /// whose QP it destroyed, or gives the stand-in's own QP back.
    pub(crate) fn set_qp_destroyed(&self, destroyed: bool) {
        // SAFETY: a field of our stand-in, which only this thread uses;
        // `qp` is the QP `rs_fake_parts_attach` made, live until `drop`.
        unsafe {
            *addr_of_mut!((*self.raw()).sc_qp) = if destroyed { null_mut() } else { self.qp };
        }
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

    /// A new send ctxt of this transport ([`Ctxt::alloc`]) with `writes`
    /// stand-in chunk Write WRs chained before its Send WR, its SQ entries
    /// counted, as a reply ready to post has them. Freed when
    /// `self` is dropped, wherever the test left it. `None` when memory is
    /// short or more WRs are asked for than the transport holds.
    pub(crate) fn ctxt(&self, writes: usize) -> Option<Ctxt<'_>> {
        let mut ctxt = Ctxt::alloc(self.rdma())?;
        let mut first = NonNull::<sys::ib_send_wr>::dangling().as_ptr();
        if writes > 0 {
            let slot = self.writes_used.get();
            if slot >= CTXTS_WITH_WRITES || writes > MAX_WRITES {
                return None;
            }
            self.writes_used.set(slot.wrapping_add(1));
            // SAFETY: `slot` is in bounds (checked) of the WRs this
            // transport holds (type invariant).
            first = unsafe { addr_of_mut!((*self.writes.as_ptr())[slot]).cast() };
        }
        // SAFETY: `writes` WRs at `first` (none when 0), given to no other
        // ctxt (`writes_used`), live until `drop`, which frees the ctxt
        // first.
        unsafe { ctxt.chain_writes_for_test(first, writes) };
        Some(ctxt)
    }
}

impl Drop for FakeRdma {
    fn drop(&mut self) {
        // Free every ctxt of this transport, on whatever list the test
        // left it (all of them are on the list of all ctxts).
        // SAFETY: the transport is being dropped, so no handle of its ctxts
        // is left (a ctxt borrows the transport, `Ctxt<'r>`; a test that
        // turned one into a pointer gave it up), and the stand-in posts
        // nothing.
        while unsafe { Ctxt::free_next_for_test(self.rdma()) } {}
        // SAFETY: attached in `new`; no ctxt refers to the transport now.
        unsafe { sys::rs_fake_parts_free(self.parts.as_ptr()) };
        // SAFETY: allocated in `new` by `zalloc`; no ctxt chains them now.
        unsafe { zfree(self.writes.as_ptr()) };
        // SAFETY: allocated in `new` by `zalloc`, and no ctxt refers to it
        // any more.
        unsafe { zfree(self.raw()) };
    }
}

/// The running KUnit case's warnings (`WARN*()`), counted instead of
/// printed while this lives (`kunit_start_suppress_warning`): for a case
/// that drives a path whose report is a warning. The run's log, where any
/// WARNING fails the run, stays clean, and the case still sees how many
/// warnings the path gave ([`SuppressedWarnings::end`]).
///
/// # Invariants
///
/// `0` is the handle the shim's begin call returned, not ended yet.
pub(crate) struct SuppressedWarnings(NonNull<c_void>);

impl SuppressedWarnings {
    /// Starts counting; `None` (and the case failed) outside a KUnit case.
    pub(crate) fn begin() -> Option<Self> {
        // SAFETY: no precondition; the handle is ended by `end` or `drop`.
        NonNull::new(unsafe { sys::rs_kunit_suppress_warnings_begin() }).map(Self)
    }

    /// Stops counting; returns how many warnings were suppressed.
    pub(crate) fn end(self) -> i32 {
        let this = core::mem::ManuallyDrop::new(self);
        // SAFETY: a handle not ended yet (type invariant); `this` is not
        // dropped, so it is ended once.
        unsafe { sys::rs_kunit_suppress_warnings_end(this.0.as_ptr()) }
    }
}

impl Drop for SuppressedWarnings {
    fn drop(&mut self) {
        // SAFETY: a handle not ended yet (type invariant), ended once here.
        unsafe { sys::rs_kunit_suppress_warnings_end(self.0.as_ptr()) };
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
