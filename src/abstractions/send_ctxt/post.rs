// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Posting a ctxt's WR chain and its completion: [`Poster`], the fixed
//! set of ways to post; [`PostFailure`] and [`PartlyPosted`], what a failed
//! post hands back; [`SendCompletion`], [`SentCtxt`] and [`SendWc`], what
//! the Send completion handler is given.

use super::*;

/// What runs when the Send of a ctxt posted by [`Ctxt::post`] completes.
pub(crate) trait SendCompletion {
    /// Called from the Send CQ's polling context with the transport (the
    /// ctxt's, which is the CQ's context), the work completion and the ctxt, which belongs to
    /// the handler from here on. All three are borrowed for `'a`, the
    /// call: the transport is live while a completion of it runs, because
    /// its teardown waits for its completions (`ib_drain_qp`, or
    /// [`Drained::destroy_qp_and_quiesce_send_cq`]), not for anything a
    /// handler could keep past the call.
    fn complete<'a>(rdma: &'a Rdma, wc: &'a SendWc, ctxt: SentCtxt<'a>);
}

/// A ctxt whose Send completed, handed to its [`SendCompletion`] for the
/// handler's call (`'a`) only.
///
/// # Invariants
///
/// The ctxt's WR chain was posted by [`Ctxt::post`] and its Send has
/// completed: its state is [`CtxtState::Posted`], and nothing but this
/// handle holds it.
pub(crate) struct SentCtxt<'a>(pub(super) Ctxt<'a>);

impl<'a> SentCtxt<'a> {
    /// The ctxt.
    pub(crate) fn ctxt(&self) -> &Ctxt<'a> {
        &self.0
    }

    /// `svc_rdma_send_ctxt_put` of the completion: the put a posted ctxt
    /// is owed, without [`Ctxt::try_put`]'s check (its state is known).
    #[inline]
    pub(crate) fn put(self) {
        self.0.queue_unchecked(true);
    }
}

/// The `ib_cqe.done` of a posted ctxt: hands its completion, and the ctxt,
/// to `H`.
///
/// # Safety
///
/// Called by the RDMA core with a polled Send work completion whose
/// `wr_cqe` is the `sc_cqe` of a ctxt [`Ctxt::post`] posted, once.
pub(super) unsafe extern "C" fn send_done<H: SendCompletion>(
    _cq: *mut sys::ib_cq,
    wc: *mut sys::ib_wc,
) {
    // SAFETY: a completion the RDMA core passes to this handler, valid for
    // the call (`# Safety`).
    let wc = unsafe { SendWc::from_raw(wc) };
    // SAFETY: the completion of a Send that `Ctxt::post` posted, delivered
    // once (`# Safety`): the ctxt is the handler's now. Its transport,
    // `sc_rdma` (also the CQ's context; the ib_cq stays opaque here), is
    // live for this call: its teardown waits for its completions to have
    // run (`ib_drain_qp`, or `Drained::destroy_qp_and_quiesce_send_cq`).
    let ctxt = unsafe { wc.take_ctxt() };
    // Borrowed for the call only, as the ctxt, which the handler gives
    // away.
    let rdma = ctxt.rdma();
    H::complete(rdma, wc, SentCtxt(ctxt));
}

/// How [`Ctxt::post`] posts a WR chain: the shim's `rs_ib_post_send`
/// (`ib_post_send`, the header SGE synced for the device first), the
/// fault-injection build's wrapper of it, or a KUnit stand-in. A fixed
/// set, so that posting stays a safe operation.
///
/// # Invariants
///
/// The function behaves as `ib_post_send` on the QP and chain it is
/// given: it posts a prefix of the chain, reports the first WR not posted
/// in `*bad_wr` when it fails, and touches nothing else of the ctxt.
#[derive(Clone, Copy)]
pub(crate) struct Poster(pub(super) PostFn);

impl Poster {
    /// `rs_ib_post_send`.
    #[cfg_attr(rpcrdma_fault_injection, allow(dead_code))]
    pub(crate) const VERBS: Self = Self(sys::rs_ib_post_send);

    /// `rs_ib_post_send_faulty`: `rs_ib_post_send`, or a failure at the
    /// first WR or at the Send after the Writes, as the fault parameters
    /// say.
    #[cfg(rpcrdma_fault_injection)]
    pub(crate) const FAULTY: Self = Self(sys::rs_ib_post_send_faulty);

    /// A stand-in poster.
    ///
    /// # Safety
    ///
    /// `post` behaves as the type invariant says.
    #[cfg(rpcrdma_kunit)]
    pub(crate) const unsafe fn new(post: PostFn) -> Self {
        Self(post)
    }
}

/// The signature of `ib_post_send` with the header SGE to sync for the
/// device first (the shim's `rs_ib_post_send`).
pub(crate) type PostFn = unsafe extern "C" fn(
    *mut sys::ib_qp,
    *const sys::ib_sge,
    *const sys::ib_send_wr,
    *mut *const sys::ib_send_wr,
) -> i32;

/// A failed [`Ctxt::post`].
pub(crate) enum PostFailure<'r> {
    /// Nothing was posted: the ctxt is handed back, owned.
    NotPosted {
        /// What the poster returned.
        ret: i32,
        /// The ctxt, whose Send will never complete.
        ctxt: Ctxt<'r>,
    },
    /// Some chunk Writes were posted, the Send was not.
    Partial {
        /// What the poster returned.
        ret: i32,
        /// The ctxt, which posted Writes may still read.
        ctxt: PartlyPosted<'r>,
        /// How many WRs of the chain were not posted (a driver that
        /// reports no bad WR is taken the safe way: something may be in
        /// flight).
        unposted: i32,
    },
}

/// A ctxt whose WR chain was only partly posted: some chunk Writes were,
/// its Send (last in the chain) was not. No completion will put it, yet
/// the posted Writes may read its mappings until the QP is drained: it
/// cannot be put or released, only parked ([`Self::park`], which dropping
/// it does too) until transport teardown reclaims it
/// (`ctxt::release_unreturned`).
pub(crate) struct PartlyPosted<'r>(pub(super) ManuallyDrop<Ctxt<'r>>);

impl<'r> PartlyPosted<'r> {
    /// The ctxt, to read.
    pub(crate) fn ctxt(&self) -> &Ctxt<'r> {
        &self.0
    }

    /// Parks the ctxt: marked [`CtxtState::Orphan`] and held by nothing
    /// but its ledger, which lists every ctxt, where teardown finds it.
    pub(crate) fn park(self) {
        drop(self);
    }
}

impl Drop for PartlyPosted<'_> {
    fn drop(&mut self) {
        self.0.set_state(CtxtState::Orphan);
        // The ctxt is left to its ledger: never put, never dropped.
    }
}

/// A polled work completion of a Send CQ.
///
/// # Invariants
///
/// A completion the RDMA core passed to the Send completion handler,
/// valid while borrowed.
#[repr(transparent)]
pub(crate) struct SendWc(pub(super) Opaque<sys::ib_wc>);

impl SendWc {
    /// Borrows the completion at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a completion the RDMA core passes to a Send completion
    /// handler, valid for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut sys::ib_wc) -> &'a Self {
        // SAFETY: a transparent `Opaque<ib_wc>`, valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C pointer, for tracepoints.
    pub(crate) fn as_ptr(&self) -> *const sys::ib_wc {
        self.0.get()
    }

    /// The completion status (`IB_WC_*`).
    pub(crate) fn status(&self) -> u32 {
        // SAFETY: a field of the valid completion.
        unsafe { (*self.0.get()).status }
    }

    /// The ctxt whose Send completed, now owned by the caller.
    ///
    /// # Safety
    ///
    /// The completion is of a Send posted by [`Ctxt::post`] (its `wr_cqe`
    /// is that ctxt's `sc_cqe`), and is taken once; the ctxt's transport
    /// lives while the completion is borrowed (the handler's call).
    unsafe fn take_ctxt(&self) -> Ctxt<'_> {
        // SAFETY: `wr_cqe` is the `sc_cqe` of the posted ctxt (`# Safety`),
        // whose ownership passes to the completion.
        let ctxt = unsafe {
            let cqe = *(*self.0.get()).__bindgen_anon_1.wr_cqe.as_ref();
            NonNull::new_unchecked(kernel::container_of!(cqe, sys::svc_rdma_send_ctxt, sc_cqe))
        };
        // INVARIANT: a ctxt `Ctxt::post` posted, now the caller's, whose
        // transport lives for the borrow (`# Safety`).
        Ctxt(ctxt, PhantomData)
    }
}

#[cfg(rpcrdma_kunit)]
impl<'a> SentCtxt<'a> {
    /// The completion's handle on a posted `ctxt`, for a KUnit case that
    /// plays the Send completion.
    ///
    /// # Safety
    ///
    /// As the type invariant says: `ctxt` is marked posted, and nothing
    /// else will put it.
    pub(crate) unsafe fn assume_for_test(ctxt: Ctxt<'a>) -> Self {
        Self(ctxt)
    }
}
