// SPDX-License-Identifier: GPL-2.0

//! [`Rdma`]: the FFI edge's view of a `struct svcxprt_rdma`.
//!
//! The transport is owned by C (svc_xprt reference counting in sunrpc). The
//! Send path only borrows it, for the length of a call from C:
//! `svc_rdma_sendto` is called with the transport referenced by the nfsd
//! thread, and `svc_rdma_wc_send` runs from the transport's own Send CQ,
//! which `svc_rdma_free` drains (`ib_drain_qp`) before it frees anything.
//! That drain is the transport lifetime rule of the Send path: while a Send may still
//! complete, the transport exists. See `sq.rs` for where it matters.

use crate::sys;
use core::ptr::addr_of_mut;
use kernel::sync::atomic::Atomic;
use kernel::types::Opaque;

/// A borrowed RPC-over-RDMA server transport.
#[repr(transparent)]
pub(crate) struct Rdma(Opaque<sys::svcxprt_rdma>);

impl Rdma {
    /// Borrows the transport at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a live `svcxprt_rdma` that stays alive for `'a`.
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
    fn atomic(&self, field: *mut sys::atomic_t) -> &Atomic<i32> {
        // SAFETY: `field` points into this live transport; `atomic_t` is an
        // `int` accessed only atomically by C and by this crate.
        unsafe { Atomic::from_ptr(addr_of_mut!((*field).counter)) }
    }

    /// `sc_sq_avail`: free Send Queue entries.
    pub(crate) fn sq_avail(&self) -> &Atomic<i32> {
        // SAFETY: projecting a field of the live transport.
        self.atomic(unsafe { addr_of_mut!((*self.as_ptr()).sc_sq_avail) })
    }

    /// `sc_sq_ticket_head`: the next SQ wait ticket to hand out.
    pub(crate) fn sq_ticket_head(&self) -> &Atomic<i32> {
        // SAFETY: projecting a field of the live transport.
        self.atomic(unsafe { addr_of_mut!((*self.as_ptr()).sc_sq_ticket_head) })
    }

    /// `sc_sq_ticket_tail`: the ticket being served.
    pub(crate) fn sq_ticket_tail(&self) -> &Atomic<i32> {
        // SAFETY: projecting a field of the live transport.
        self.atomic(unsafe { addr_of_mut!((*self.as_ptr()).sc_sq_ticket_tail) })
    }

    /// `sc_send_wait`: threads waiting for SQ entries.
    pub(crate) fn send_wait(&self) -> *mut sys::wait_queue_head {
        // SAFETY: projecting a field of the live transport.
        unsafe { addr_of_mut!((*self.as_ptr()).sc_send_wait) }
    }

    /// `sc_sq_ticket_wait`: ticket holders waiting for their turn.
    pub(crate) fn sq_ticket_wait(&self) -> *mut sys::wait_queue_head {
        // SAFETY: projecting a field of the live transport.
        unsafe { addr_of_mut!((*self.as_ptr()).sc_sq_ticket_wait) }
    }

    /// `sc_max_req_size`: size of the transport header buffer.
    pub(crate) fn max_req_size(&self) -> usize {
        // SAFETY: set before the transport is published, constant after.
        let v = unsafe { (*self.as_ptr()).sc_max_req_size };
        usize::try_from(v).unwrap_or(0)
    }

    /// `sc_max_send_sges`: SGEs a Send WR may carry.
    pub(crate) fn max_send_sges(&self) -> usize {
        // SAFETY: set before the transport is published, constant after.
        unsafe { (*self.as_ptr()).sc_max_send_sges as usize }
    }

    /// `sc_sq_depth`: Send Queue entries in all; a chain needing more can
    /// never be posted.
    pub(crate) fn sq_depth(&self) -> u32 {
        // SAFETY: set before the transport is published, constant after.
        unsafe { (*self.as_ptr()).sc_sq_depth }
    }

    /// `sc_fc_credits`: credits granted, already in wire byte order.
    pub(crate) fn fc_credits_be(&self) -> u32 {
        // SAFETY: set before the transport is published, constant after.
        unsafe { (*self.as_ptr()).sc_fc_credits }
    }

    /// The local DMA lkey of the transport's protection domain.
    pub(crate) fn local_dma_lkey(&self) -> u32 {
        // SAFETY: `sc_pd` is allocated before the transport is published
        // and freed only after all its send ctxts are destroyed.
        unsafe { (*(*self.as_ptr()).sc_pd).local_dma_lkey }
    }

    /// The RDMA device the transport is connected through.
    pub(crate) fn device(&self) -> *mut sys::ib_device {
        // SAFETY: `sc_cm_id` is set before the transport is published.
        unsafe { sys::rs_rdma_device(self.as_ptr()) }
    }

    /// The queue pair Sends are posted on.
    pub(crate) fn qp(&self) -> *mut sys::ib_qp {
        // SAFETY: set before the transport is published, constant after.
        unsafe { (*self.as_ptr()).sc_qp }
    }

    /// True once the transport is being closed (`XPT_CLOSE`).
    pub(crate) fn is_closing(&self) -> bool {
        // SAFETY: the transport is live.
        unsafe { sys::rs_xprt_is_closing(self.as_ptr()) }
    }

    /// Closes the connection from any context; the actual teardown runs
    /// later in an nfsd thread.
    pub(crate) fn deferred_close(&self) {
        // SAFETY: the transport is live.
        unsafe { sys::svc_rdma_xprt_deferred_close(self.as_ptr()) }
    }
}
