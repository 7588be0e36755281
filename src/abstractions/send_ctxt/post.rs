// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! Posting a ctxt's WR chain and its completion: [`Poster`], the fixed
//! set of ways to post; [`PostFailure`] and [`PartlyPosted`], what a failed
//! post hands back; [`SendCompletion`] and [`SentCtxt`], what the Send
//! completion handler is given, through the generic `ib_cqe` dispatch of
//! [`cq`].

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
    fn complete<'a>(rdma: &'a Rdma, wc: &'a WorkCompletion, ctxt: SentCtxt<'a>);
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

/// The completion handler [`Ctxt::post`] sets on a ctxt: hands the
/// completion of its Send, and the ctxt, to `H`.
pub(super) struct SendDone<H>(PhantomData<H>);

impl<H: SendCompletion> CompletionHandler for SendDone<H> {
    type Item = CtxtObject;

    /// # Safety
    ///
    /// `item` is a ctxt that [`Ctxt::post`] posted (the only preparer of
    /// this handler, on the ctxt's Send, the last WR of its chain and the
    /// only one that carries `sc_cqe`), and `wc` is its Send's completion,
    /// handled once.
    #[inline]
    unsafe fn done(wc: &WorkCompletion, item: NonNull<CtxtObject>) {
        // SAFETY: the completion of a Send that `Ctxt::post` posted,
        // delivered once (`# Safety`): the ctxt is the handler's now. Its
        // transport, `sc_rdma` (also the CQ's context), is live for this
        // call: its teardown waits for its completions to have run
        // (`ib_drain_qp`, or `Drained::destroy_qp_and_quiesce_send_cq`).
        let ctxt = unsafe { completed_ctxt(wc, item) };
        // Borrowed for the call only, as the ctxt, which the handler gives
        // away.
        let rdma = ctxt.rdma();
        H::complete(rdma, wc, SentCtxt(ctxt));
    }
}

/// The ctxt `item`, owned for the handler's call, which borrows `_wc`.
///
/// # Safety
///
/// As [`SendDone::done`]: `item` is the posted ctxt whose Send completed
/// with `_wc`, taken once; its transport lives while `_wc` is borrowed.
#[inline]
unsafe fn completed_ctxt<'a>(_wc: &'a WorkCompletion, item: NonNull<CtxtObject>) -> Ctxt<'a> {
    // INVARIANT: a ctxt `Ctxt::post` posted, now the caller's, whose
    // transport lives for the borrow (`# Safety`).
    Ctxt(item.cast(), PhantomData)
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
