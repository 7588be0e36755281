// SPDX-License-Identifier: GPL-2.0

//! [`Rdma`]: a `struct svcxprt_rdma`, the RPC-over-RDMA server transport,
//! and [`WaitQueue`], its wait queues.
//!
//! The transport is owned by C (svc_xprt reference counting in sunrpc). The
//! Send path only borrows it, for the length of a call from C:
//! `svc_rdma_sendto` is called with the transport referenced by the nfsd
//! thread, and `svc_rdma_wc_send` runs from the transport's own Send CQ,
//! which `svc_rdma_free` drains (`ib_drain_qp`) before it frees anything.
//! That drain is the transport lifetime rule of the Send path: while a Send
//! may still complete, the transport exists. See `sq.rs` for where it
//! matters.

use crate::rdma::device::Device;
use crate::sys;
use core::ptr::{addr_of, addr_of_mut};
use kernel::sync::atomic::Atomic;
use kernel::types::Opaque;

/// A borrowed RPC-over-RDMA server transport.
///
/// # Invariants
///
/// The transport is live while borrowed, and was fully set up before it was
/// published: the fields read without synchronisation here (sizes, limits,
/// the PD, QP and CM ID) never change afterwards, but for the QP, which
/// [`Drained::destroy_qp_and_quiesce_send_cq`] destroys and clears (NULL)
/// during teardown, on the only thread that uses the transport then, after
/// marking the transport dead (`XPT_DEAD`). So [`Rdma::qp`] may be NULL for
/// a borrow made at teardown, and every use of the QP checks, or requires
/// of its caller that the transport was seen alive ([`Rdma::is_dead`]): a
/// post fails, a chunk's Writes are not built, R/W contexts that only a QP
/// could undo are left, never a NULL dereference.
#[repr(transparent)]
pub(crate) struct Rdma(Opaque<sys::svcxprt_rdma>);

// A transport is shared by design between the nfsd threads that send on
// it and its Send CQ's completion work, on any CPU. What `Rdma`'s methods
// read without synchronisation is fixed after publication (type invariant:
// the QP changes only at teardown, when one thread uses the transport);
// its counters are atomics (`sc_sq_avail`, the SQ tickets, the flag word
// with atomic bit operations); its free list is an `llist` whose one
// popper holds `sc_send_lock`; the ledger is under its own lock.
// SAFETY: `Rdma` gives only shared access, and every access is one of the
// above or a C function (wait queues, C calls) that takes its own lock.
unsafe impl Sync for Rdma {}

impl Rdma {
    /// Borrows the transport at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a published `svcxprt_rdma` that stays alive for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::svcxprt_rdma) -> &'a Self {
        // SAFETY: `Rdma` is a transparent wrapper of `Opaque<svcxprt_rdma>`,
        // which has the layout of `svcxprt_rdma`; the caller guarantees the
        // pointee lives for `'a`. All access goes through raw pointers or
        // atomics, so shared use with C is sound.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C pointer, for calls back into C.
    pub(crate) fn as_ptr(&self) -> *mut sys::svcxprt_rdma {
        self.0.get()
    }

    /// The atomic `int` inside an `atomic_t` field.
    ///
    /// # Safety
    ///
    /// `field` points into this transport.
    unsafe fn atomic(&self, field: *mut sys::atomic_t) -> &Atomic<i32> {
        // SAFETY: `field` points into this live transport (`# Safety`);
        // `atomic_t` is an `int` accessed only atomically by C and by us.
        unsafe { Atomic::from_ptr(addr_of_mut!((*field).counter)) }
    }

    /// `sc_sq_avail`: free Send Queue entries.
    pub(crate) fn sq_avail(&self) -> &Atomic<i32> {
        // SAFETY: a field of this transport.
        unsafe { self.atomic(addr_of_mut!((*self.as_ptr()).sc_sq_avail)) }
    }

    /// `sc_sq_ticket_head`: the next SQ wait ticket to hand out.
    pub(crate) fn sq_ticket_head(&self) -> &Atomic<i32> {
        // SAFETY: a field of this transport.
        unsafe { self.atomic(addr_of_mut!((*self.as_ptr()).sc_sq_ticket_head)) }
    }

    /// `sc_sq_ticket_tail`: the ticket being served.
    pub(crate) fn sq_ticket_tail(&self) -> &Atomic<i32> {
        // SAFETY: a field of this transport.
        unsafe { self.atomic(addr_of_mut!((*self.as_ptr()).sc_sq_ticket_tail)) }
    }

    /// `sc_send_wait`: threads waiting for SQ entries.
    pub(crate) fn send_wait(&self) -> &WaitQueue {
        // SAFETY: an initialised wait queue of this live transport.
        unsafe { WaitQueue::from_raw(addr_of_mut!((*self.as_ptr()).sc_send_wait)) }
    }

    /// `sc_sq_ticket_wait`: ticket holders waiting for their turn.
    pub(crate) fn sq_ticket_wait(&self) -> &WaitQueue {
        // SAFETY: an initialised wait queue of this live transport.
        unsafe { WaitQueue::from_raw(addr_of_mut!((*self.as_ptr()).sc_sq_ticket_wait)) }
    }

    /// `sc_max_req_size`: size of the transport header buffer.
    pub(crate) fn max_req_size(&self) -> usize {
        // SAFETY: constant after publication (type invariant).
        let v = unsafe { (*self.as_ptr()).sc_max_req_size };
        usize::try_from(v).unwrap_or(0)
    }

    /// `sc_max_send_sges`: SGEs a Send WR may carry.
    pub(crate) fn max_send_sges(&self) -> usize {
        // SAFETY: constant after publication (type invariant).
        let v = unsafe { (*self.as_ptr()).sc_max_send_sges };
        usize::try_from(v).unwrap_or(0)
    }

    /// `sc_sq_depth`: Send Queue entries in all; a chain needing more can
    /// never be posted.
    pub(crate) fn sq_depth(&self) -> u32 {
        // SAFETY: constant after publication (type invariant).
        unsafe { (*self.as_ptr()).sc_sq_depth }
    }

    /// `sc_fc_credits`: credits granted, already in wire byte order.
    pub(crate) fn fc_credits_be(&self) -> u32 {
        // SAFETY: constant after publication (type invariant).
        unsafe { (*self.as_ptr()).sc_fc_credits }
    }

    /// The local DMA lkey of the transport's protection domain.
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: `sc_pd` is allocated before publication and freed only
        // after all send ctxts are destroyed.
        unsafe { (*(*self.as_ptr()).sc_pd).local_dma_lkey }
    }

    /// The RDMA device the transport is connected through, read from its
    /// protection domain (C's Send path reads `sc_cm_id->device`; the PD
    /// is allocated on that device, so it is the same one).
    pub(crate) fn device(&self) -> &Device {
        // SAFETY: `sc_pd`, and its device, are set before publication and
        // outlive the transport's send ctxts; the device is registered
        // while the transport holds its PD.
        unsafe { Device::from_raw((*(*self.as_ptr()).sc_pd).device) }
    }

    /// The queue pair Sends are posted on; NULL once teardown destroyed it
    /// (type invariant).
    pub(crate) fn qp(&self) -> *mut sys::ib_qp {
        // SAFETY: a field of the live transport, which changes only at
        // teardown on the thread that then uses the transport (type
        // invariant).
        unsafe { (*self.as_ptr()).sc_qp }
    }

    /// Pages a request can hold (`svc_serv_maxpages`); `None` once the
    /// transport was deleted from its server (`XPT_DEAD`, set before
    /// `svc_rdma_free`): `svc_xprt` holds no reference on its server,
    /// which may be gone by then.
    pub(crate) fn serv_maxpages(&self) -> Option<usize> {
        if self.flags() & (1 << sys::XPT_DEAD) != 0 {
            return None;
        }
        // SAFETY: a transport not deleted yet is still on its server's
        // lists, and the server is freed only after `svc_xprt_destroy_all`
        // has deleted all of them, which runs once its threads (the
        // callers of the Send path) are gone.
        Some(unsafe { sys::rs_svc_serv_maxpages(self.as_ptr()) })
    }

    /// A new completion ID for a send ctxt of this transport.
    pub(crate) fn new_send_cid(&self, cid: &mut sys::rpc_rdma_cid) {
        // SAFETY: reads the transport's Send CQ ID and bumps its counter.
        unsafe { sys::rs_send_cid_init(self.as_ptr(), cid) };
    }

    /// The transport's `XPT_*` flag word, read once as `READ_ONCE` (what
    /// `test_bit` reads: the flags change only through atomic bit
    /// operations).
    fn flags(&self) -> kernel::ffi::c_ulong {
        // SAFETY: a field of the live transport; a volatile read is the
        // `READ_ONCE` of a word other CPUs change atomically.
        unsafe { core::ptr::read_volatile(addr_of!((*self.as_ptr()).sc_xprt.xpt_flags)) }
    }

    /// True once the transport is being closed (`XPT_CLOSE`).
    pub(crate) fn is_closing(&self) -> bool {
        self.flags() & (1 << sys::XPT_CLOSE) != 0
    }

    /// True once the transport is dead or closing (`svc_xprt_is_dead`:
    /// `XPT_DEAD` or `XPT_CLOSE`).
    pub(crate) fn is_dead(&self) -> bool {
        self.flags() & ((1 << sys::XPT_DEAD) | (1 << sys::XPT_CLOSE)) != 0
    }

    /// Closes the connection from any context; the actual teardown runs
    /// later in an nfsd thread.
    pub(crate) fn deferred_close(&self) {
        // SAFETY: the transport is live.
        unsafe { sys::svc_rdma_xprt_deferred_close(self.as_ptr()) }
    }

    /// Sets `XPT_DATA` and enqueues the transport, so that an nfsd thread
    /// comes to it.
    #[inline]
    pub(crate) fn set_data_and_enqueue(&self) {
        // SAFETY: the transport is live.
        unsafe { sys::rs_xprt_set_data_and_enqueue(self.as_ptr()) }
    }

    /// Sleeps until ticket `ticket` is served or the transport closes.
    pub(crate) fn wait_sq_ticket(&self, ticket: i32) {
        let r = self.as_ptr();
        // SAFETY: the transport is live, and the queue and counter are
        // its own; process context (callers sleep).
        unsafe {
            sys::rs_wait_sq(
                r,
                addr_of_mut!((*r).sc_sq_ticket_wait),
                addr_of!((*r).sc_sq_ticket_tail),
                ticket,
                true,
            )
        }
    }

    /// Sleeps until `n` SQ entries are free or the transport closes.
    pub(crate) fn wait_sq_avail(&self, n: i32) {
        let r = self.as_ptr();
        // SAFETY: the transport is live, and the queue and counter are
        // its own; process context (callers sleep).
        unsafe {
            sys::rs_wait_sq(
                r,
                addr_of_mut!((*r).sc_send_wait),
                addr_of!((*r).sc_sq_avail),
                n,
                false,
            )
        }
    }
}

/// Proof that a transport is in its teardown, `svc_rdma_free`, after
/// `ib_drain_qp` and the final drain: no request uses it, nothing posts on
/// its QP or pops its free list, and its holder does not run on the Send
/// CQ's polling work. Only a provider that broke the drain's promise may
/// still complete something (see `ctxt::release_unreturned`). Made only
/// by the unsafe [`Drained::assume`], at the C entry
/// `svc_rdma_send_ctxts_destroy`.
///
/// # Invariants
///
/// As above, for `rdma`, while the value exists.
pub(crate) struct Drained<'a> {
    rdma: &'a Rdma,
}

impl<'a> Drained<'a> {
    /// # Safety
    ///
    /// `rdma` is in its teardown as the type invariant says, for as long
    /// as the returned value exists.
    pub(crate) unsafe fn assume(rdma: &'a Rdma) -> Self {
        // INVARIANT: the caller's promise (`# Safety`).
        Self { rdma }
    }

    /// The transport.
    pub(crate) fn rdma(&self) -> &'a Rdma {
        self.rdma
    }

    /// `svc_rdma_destroy_rw_ctxts`: frees the idle R/W contexts.
    ///
    /// # Safety
    ///
    /// No R/W context is in use: no Write or Read of the transport can
    /// still complete (the QP was drained by a provider that keeps the
    /// drain's promise, or [`Self::destroy_qp_and_quiesce_send_cq`] ran).
    pub(crate) unsafe fn destroy_rw_ctxts(&self) {
        // SAFETY: no R/W context is in use (`# Safety`); the transport's
        // list holds idle ones only, which may be freed.
        unsafe { sys::svc_rdma_destroy_rw_ctxts(self.rdma.as_ptr()) }
    }

    /// Destroys the QP (`ib_destroy_qp`, which `svc_rdma_free` then
    /// skips) and waits until the Send CQ's polling work has handled what
    /// it was given and cannot run again. From then on no Send, Write or
    /// Read of the transport can complete, so memory that only a
    /// completion could still reach may be freed: the returned proof says
    /// so. `None` (the QP destroyed all the same) for a CQ that is not
    /// polled from a workqueue, which `svc_rdma_accept` never creates.
    ///
    /// For the transport teardown of a provider that left Sends
    /// uncompleted after `ib_drain_qp` (see `ctxt::release_unreturned`).
    /// Chunk R/W contexts still held then can no longer be undone and are
    /// left: release them first (`release_unreturned_chunk_io`). Every
    /// later use of the QP through this transport finds it NULL and fails
    /// cleanly (`Rdma` invariant).
    pub(crate) fn destroy_qp_and_quiesce_send_cq(&self) -> Option<SendQueueGone<'a>> {
        // SAFETY: teardown (type invariant): nobody posts on the QP or uses
        // it on another thread, and we are not the CQ's work, which we
        // wait for. The shim clears `sc_qp`, which every user here checks.
        if unsafe { sys::rs_destroy_qp_and_quiesce_send_cq(self.rdma.as_ptr()) } {
            // INVARIANT: the QP is destroyed and the Send CQ's poller is
            // idle and cannot be queued again (nothing can complete).
            Some(SendQueueGone { rdma: self.rdma })
        } else {
            None
        }
    }
}

/// Proof that a transport's QP is destroyed and its Send CQ's poller will
/// not run again: no completion can reach any of its send ctxts, so each
/// of them is idle, whatever its state says. Made by
/// [`Drained::destroy_qp_and_quiesce_send_cq`] (and, for KUnit, by
/// [`SendQueueGone::assume_for_test`]).
///
/// # Invariants
///
/// No work request posted on `rdma`'s QP can complete any more, and no
/// completion handler of its Send CQ is running or will run.
pub(crate) struct SendQueueGone<'a> {
    rdma: &'a Rdma,
}

impl<'a> SendQueueGone<'a> {
    /// The transport.
    pub(crate) fn rdma(&self) -> &'a Rdma {
        self.rdma
    }

    /// For a KUnit stand-in transport, whose QP posts nothing: nothing can
    /// complete but what the test itself completes.
    ///
    /// # Safety
    ///
    /// The caller completes nothing of `rdma` from here on.
    #[cfg(rpcrdma_kunit)]
    pub(crate) unsafe fn assume_for_test(rdma: &'a Rdma) -> Self {
        Self { rdma }
    }
}

/// Counts a Send that had to wait for SQ entries (`svcrdma_stat_sq_starve`).
pub(crate) fn count_sq_starved() {
    // SAFETY: a per-CPU counter of the module, initialised at its load.
    unsafe { sys::rs_sq_starve_inc() }
}

/// A borrowed `wait_queue_head` of a transport.
///
/// # Invariants
///
/// Initialised, and live while borrowed.
#[repr(transparent)]
pub(crate) struct WaitQueue(Opaque<sys::wait_queue_head>);

impl WaitQueue {
    /// # Safety
    ///
    /// `ptr` is an initialised wait queue, live for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut sys::wait_queue_head) -> &'a Self {
        // SAFETY: a transparent `Opaque<wait_queue_head>`, live for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// `waitqueue_active`: whether anyone may be waiting. Lockless: the
    /// caller's fully ordered update of what the waiters test pairs with
    /// the barrier in `prepare_to_wait`.
    pub(crate) fn is_active(&self) -> bool {
        let wq = self.0.get();
        // SAFETY: an initialised queue (type invariant): `list_empty` of its
        // head, whose `next` a volatile read loads once, as `READ_ONCE`.
        let next = unsafe { core::ptr::read_volatile(addr_of!((*wq).head.next)) };
        // SAFETY: projecting a field of the same queue; nothing is read.
        let head = unsafe { addr_of_mut!((*wq).head) };
        !core::ptr::eq(next, head)
    }

    /// `wake_up`: wakes one exclusive waiter and all others.
    #[inline]
    pub(crate) fn wake_up(&self) {
        // SAFETY: an initialised queue (type invariant); `wake_up` is this
        // call with one exclusive waiter and no key.
        unsafe {
            sys::__wake_up(
                self.0.get(),
                kernel::task::TASK_NORMAL,
                1,
                core::ptr::null_mut(),
            )
        };
    }
}
