// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`CtxtList`]: the lock-free lists (`llist_head`) a ctxt moves
//! between, and [`CtxtChain`]: what is taken off one at once.

use super::*;

/// A lock-free list of send ctxts linked by `sc_node` (`llist_head`).
///
/// # Invariants
///
/// An initialised `llist_head` of a transport, whose nodes are the
/// `sc_node`s of that transport's ctxts (`sc_rdma` is it) that belong to
/// the list (a ctxt on it is owned by no one else). So a ctxt taken off
/// the list can carry the lifetime of the list's borrow.
#[repr(transparent)]
pub(crate) struct CtxtList(pub(super) Opaque<sys::llist_head>);

impl CtxtList {
    /// # Safety
    ///
    /// `ptr` is a list as the type invariant says, live for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::llist_head) -> &'a Self {
        // SAFETY: a transparent `Opaque<llist_head>`, live for `'a`.
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
        let c = ctxt.into_raw();
        // SAFETY: the node of a ctxt we give to the list.
        unsafe { sys::rs_llist_add(addr_of_mut!((*c).sc_node), self.0.get()) }
    }

    /// `llist_empty`: whether the list is empty (one load, `READ_ONCE`).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: an initialised list: its `first`, read as `READ_ONCE`.
        unsafe { core::ptr::read_volatile(addr_of!((*self.0.get()).first)) }.is_null()
    }

    /// `llist_del_all`: takes every ctxt on the list. An empty list (as
    /// most drains find it) is seen with `llist_empty`'s one load, without
    /// the exchange. The ctxts are the list's transport's, which lives as
    /// long as the list is borrowed.
    ///
    /// # Safety
    ///
    /// No [`Self::pop`] of this list runs meanwhile: `llist.h` allows
    /// `llist_del_all` beside adds and other `llist_del_all`s, but not
    /// beside an unlocked-against-it `llist_del_first` (ABA).
    pub(crate) unsafe fn take_all(&self) -> CtxtChain<'_> {
        if self.is_empty() {
            return CtxtChain::new();
        }
        // SAFETY: an initialised list; what it returns is ours.
        let first = unsafe { sys::rs_llist_del_all(self.0.get()) };
        // INVARIANT: the detached nodes are ctxts' `sc_node`s (type
        // invariant), now reachable only through the chain.
        CtxtChain(first, PhantomData)
    }

    /// `llist_del_first` under `lock`, which every consumer of this list
    /// takes (`llist_del_first` allows one at a time).
    ///
    /// # Safety
    ///
    /// Every caller of `pop` on this list passes the same lock, and no
    /// [`Self::take_all`] of this list runs meanwhile.
    pub(crate) unsafe fn pop(&self, lock: &SpinLock<()>) -> Option<Ctxt<'_>> {
        let node = {
            let _guard = lock.lock();
            // SAFETY: consumers are serialised by `lock`, and no
            // `llist_del_all` races them (`# Safety`).
            unsafe { sys::llist_del_first(self.0.get()) }
        };
        // SAFETY: a node of this list, which links only ctxts' `sc_node`s
        // (`from_raw`'s contract).
        NonNull::new(node).map(|n| Ctxt(unsafe { ctxt_of(n) }, PhantomData))
    }
}

/// The ctxt whose `sc_node` is `node`.
///
/// # Safety
///
/// `node` is the `sc_node` of a live send ctxt.
pub(super) unsafe fn ctxt_of(node: NonNull<sys::llist_node>) -> NonNull<sys::svc_rdma_send_ctxt> {
    // SAFETY: `node` is inside a ctxt (`# Safety`), so the container is in
    // bounds and non-null.
    unsafe {
        NonNull::new_unchecked(kernel::container_of!(
            node.as_ptr(),
            sys::svc_rdma_send_ctxt,
            sc_node
        ))
    }
}

/// A private chain of ctxts taken off a [`CtxtList`]; iterating yields
/// them, owned.
///
/// # Invariants
///
/// Null, or the first of a null-terminated chain of `sc_node`s of ctxts
/// that belong to the chain, whose transports live for `'r`.
#[must_use = "the ctxts of a chain must be released"]
pub(crate) struct CtxtChain<'r>(
    pub(super) *mut sys::llist_node,
    pub(super) PhantomData<&'r Rdma>,
);

impl<'r> CtxtChain<'r> {
    /// An empty chain.
    pub(crate) fn new() -> Self {
        Self(null_mut(), PhantomData)
    }

    /// Adds `ctxt` in front.
    pub(crate) fn push(&mut self, ctxt: Ctxt<'r>) {
        let c = ctxt.into_raw();
        // SAFETY: the node of a ctxt we give to the chain.
        unsafe { (*c).sc_node.next = self.0 };
        // INVARIANT: a ctxt's node in front of the null-terminated chain.
        // SAFETY: `c` is the live ctxt just given to the chain.
        self.0 = unsafe { addr_of_mut!((*c).sc_node) };
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

    fn next(&mut self) -> Option<Ctxt<'r>> {
        let node = NonNull::new(self.0)?;
        // SAFETY: a node of our chain (type invariant); its link is read
        // before the ctxt is handed out (its new owner may relink it).
        self.0 = unsafe { (*node.as_ptr()).next };
        // SAFETY: a node of our chain is a ctxt's `sc_node` (type
        // invariant).
        Some(Ctxt(unsafe { ctxt_of(node) }, PhantomData))
    }
}
