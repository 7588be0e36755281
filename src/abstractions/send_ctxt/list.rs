// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`CtxtList`]: the lock-free lists (`llist_head`) a ctxt moves
//! between, and [`CtxtChain`]: what is taken off one at once. Both are the
//! generic [`LlistHead`] and [`Chain`] of `src/rust/kernel/llist.rs`, over
//! ctxts' `sc_node`s, whose items are owned [`Ctxt`]s tied to their
//! transport's lifetime.

use super::*;

/// A lock-free list of send ctxts linked by `sc_node` (`llist_head`).
///
/// # Invariants
///
/// The list's nodes are the `sc_node`s of ctxts of one transport (their
/// `sc_rdma`) that belong to the list (a ctxt on it is owned by no one
/// else). So a ctxt taken off the list can carry the lifetime of the
/// list's borrow.
#[repr(transparent)]
pub(crate) struct CtxtList(LlistHead<CtxtObject>);

impl CtxtList {
    /// # Safety
    ///
    /// `ptr` is an initialised `llist_head` of a transport, live for
    /// `'a`, whose nodes are as the type invariant says.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::llist_head) -> &'a Self {
        // SAFETY: a transparent `LlistHead<CtxtObject>`, itself a
        // transparent `Opaque<llist_head>`, live for `'a`, whose nodes are
        // ctxts' `sc_node`s, the node `CtxtObject` embeds (`# Safety`).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// `llist_add`: adds `ctxt`; true if the list was empty. Any context,
    /// concurrently with other adds and with [`Self::take_all`].
    ///
    /// # Safety
    ///
    /// `ctxt` is a ctxt of the transport this list belongs to.
    #[inline]
    pub(crate) unsafe fn push(&self, ctxt: Ctxt<'_>) -> bool {
        // INVARIANT: a ctxt of the list's transport (`# Safety`), given to
        // the list.
        let c = ctxt.into_object();
        // SAFETY: a live ctxt, owned by nothing else now, which stays
        // allocated until it is taken off (ctxts are freed only from the
        // free list, taken off it first).
        unsafe { self.0.push(c) }
    }

    /// `llist_empty`: whether the list is empty (one load, `READ_ONCE`).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `llist_del_all`: takes every ctxt on the list. An empty list (as
    /// most drains find it) is seen with one load, without the exchange.
    /// The ctxts are the list's transport's, which lives as long as the
    /// list is borrowed.
    ///
    /// # Safety
    ///
    /// No [`Self::pop`] of this list runs meanwhile: `llist.h` allows
    /// `llist_del_all` beside adds and other `llist_del_all`s, but not
    /// beside an unlocked-against-it `llist_del_first` (ABA).
    #[inline]
    pub(crate) unsafe fn take_all(&self) -> CtxtChain<'_> {
        // INVARIANT: the ctxts of the list, now reachable only through the
        // chain; their transport lives while the list is borrowed.
        // SAFETY: no `pop` races it (`# Safety`).
        CtxtChain(unsafe { self.0.take_all() }, PhantomData)
    }

    /// `llist_del_first` under `lock`, which every consumer of this list
    /// takes (`llist_del_first` allows one at a time).
    ///
    /// # Safety
    ///
    /// Every caller of `pop` on this list passes the same lock, and no
    /// [`Self::take_all`] of this list runs meanwhile.
    pub(crate) unsafe fn pop(&self, lock: &SpinLock<()>) -> Option<Ctxt<'_>> {
        let ctxt = {
            let _guard = lock.lock();
            // SAFETY: consumers are serialised by `lock`, and no
            // `llist_del_all` races them (`# Safety`).
            unsafe { self.0.pop_first() }
        };
        // INVARIANT: a ctxt of the list's transport (type invariant), now
        // the caller's alone.
        ctxt.map(|c| Ctxt(c.cast(), PhantomData))
    }
}

/// A private chain of ctxts taken off a [`CtxtList`]; iterating yields
/// them, owned.
///
/// # Invariants
///
/// The chain's objects are ctxts that belong to it, whose transports live
/// for `'r`.
#[must_use = "the ctxts of a chain must be released"]
pub(crate) struct CtxtChain<'r>(Chain<CtxtObject>, PhantomData<&'r Rdma>);

impl<'r> CtxtChain<'r> {
    /// An empty chain.
    pub(crate) fn new() -> Self {
        Self(Chain::new(), PhantomData)
    }

    /// Adds `ctxt` in front.
    pub(crate) fn push(&mut self, ctxt: Ctxt<'r>) {
        // INVARIANT: a ctxt whose transport lives for `'r`, given to the
        // chain.
        let c = ctxt.into_object();
        // SAFETY: a live ctxt owned by nothing else now: on no list or
        // chain.
        unsafe { self.0.push(c) };
    }
}

impl Drop for CtxtChain<'_> {
    /// Drops what the chain still holds, as each [`Ctxt`] drops (a put,
    /// or a refusal that is reported), so that no ctxt is lost unlisted
    /// with an abandoned chain. Every user iterates its chain to the end.
    #[inline]
    fn drop(&mut self) {
        for ctxt in self.by_ref() {
            drop(ctxt);
        }
    }
}

impl<'r> Iterator for CtxtChain<'r> {
    type Item = Ctxt<'r>;

    #[inline]
    fn next(&mut self) -> Option<Ctxt<'r>> {
        // INVARIANT: a ctxt of the chain, whose transport lives for `'r`
        // (type invariant), now the caller's alone.
        self.0.next().map(|c| Ctxt(c.cast(), PhantomData))
    }
}
