// SPDX-License-Identifier: GPL-2.0

//! [`Rqst`]: the nfsd request being answered (`struct svc_rqst`): its
//! transport, its encoded reply, and the reply pages it holds.

use super::xdr_buf::XdrBuf;
use super::xprt::Rdma;
use crate::sys;
use core::ptr::addr_of_mut;
use kernel::types::Opaque;

/// A request an nfsd thread is answering on an RDMA transport.
///
/// # Invariants
///
/// The request is owned by the borrowing thread; `rq_xprt` is the
/// `sc_xprt` of a live `svcxprt_rdma` that the request keeps referenced;
/// `rq_res` is its encoded reply; `rq_respages..rq_next_page` are the
/// reply's page slots.
#[repr(transparent)]
pub(crate) struct Rqst(Opaque<sys::svc_rqst>);

impl Rqst {
    /// Borrows the request at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a request as the type invariant says, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::svc_rqst) -> &'a Self {
        // SAFETY: a transparent `Opaque<svc_rqst>`, valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// Borrows the request at `ptr` for the thread answering it, with its
    /// transport as a borrow of its own, so that the request can be
    /// changed (its reply pages taken) while the transport is in use.
    ///
    /// # Safety
    ///
    /// `ptr` is a request as the type invariant says, for `'a`, that no
    /// one else uses meanwhile.
    pub(crate) unsafe fn from_raw_mut<'a>(ptr: *mut sys::svc_rqst) -> (&'a Rdma, &'a mut Self) {
        // SAFETY: a transparent `Opaque<svc_rqst>`, valid for `'a`, used
        // by the caller alone (`# Safety`).
        let rqst = unsafe { &mut *ptr.cast::<Self>() };
        // SAFETY: `rq_xprt` is embedded in a live `svcxprt_rdma` that the
        // request keeps referenced for `'a` (type invariant); the
        // transport is not part of the request.
        let rdma = unsafe { Rdma::from_raw(rqst.rdma().as_ptr()) };
        (rdma, rqst)
    }

    /// The C pointer, for the tracepoints.
    pub(crate) fn as_ptr(&self) -> *mut sys::svc_rqst {
        self.0.get()
    }

    /// The transport the request arrived on.
    pub(crate) fn rdma(&self) -> &Rdma {
        // SAFETY: `rq_xprt` is embedded in a live `svcxprt_rdma` that the
        // request keeps referenced while it is borrowed (type invariant).
        unsafe {
            Rdma::from_raw(kernel::container_of!(
                (*self.as_ptr()).rq_xprt,
                sys::svcxprt_rdma,
                sc_xprt
            ))
        }
    }

    /// The Call's receive ctxt, as the transport stored it.
    pub(crate) fn recv_ctxt_ptr(&self) -> *mut sys::svc_rdma_recv_ctxt {
        // SAFETY: a plain field of the borrowed request.
        unsafe { (*self.as_ptr()).rq_xprt_ctxt.cast() }
    }

    /// The encoded reply (`rq_res`).
    pub(crate) fn res(&self) -> &XdrBuf {
        // SAFETY: the reply is valid and unchanged while the request is
        // borrowed by the thread answering it (type invariant).
        unsafe { XdrBuf::from_raw(addr_of_mut!((*self.as_ptr()).rq_res)) }
    }

    /// Moves the reply's pages into `slots` (from its start), leaving NULL
    /// behind so that the request's own release skips them; returns how
    /// many. Moves nothing and returns `None` if they do not fit. Takes
    /// the request mutably: the reply's page array (`rq_res.pages`) points
    /// into these slots, so no [`XdrBuf`] of [`Self::res`] may be alive.
    pub(crate) fn take_reply_pages(&mut self, slots: &mut [*mut sys::page]) -> Option<usize> {
        let r = self.as_ptr();
        // SAFETY: a field of the live request we borrow mutably.
        let respages = unsafe { (*r).rq_respages };
        // SAFETY: a field of the same request, borrowed mutably; the
        // distance is taken between two slots of its page array (type
        // invariant: `rq_respages <= rq_next_page`, both in the array).
        let n = usize::try_from(unsafe { (*r).rq_next_page.offset_from(respages) }).ok()?;
        let to = slots.get_mut(..n)?;
        // SAFETY: `rq_respages..rq_next_page` are the reply's `n` page
        // slots in the request's page array (type invariant), ours to
        // change while we borrow the request mutably (no `XdrBuf` alive).
        let from = unsafe { core::slice::from_raw_parts_mut(respages, n) };
        for (slot, page) in to.iter_mut().zip(from.iter_mut()) {
            *slot = core::mem::replace(page, core::ptr::null_mut());
        }
        Some(n)
    }
}
