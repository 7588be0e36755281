// SPDX-License-Identifier: GPL-2.0

//! Work completions and their dispatch to typed handlers.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! An upper-layer protocol posts a work request with `wr_cqe` pointing to a
//! `struct ib_cqe` embedded in an object of its own (a send context, a
//! receive buffer, a chunk context). When the request completes, the RDMA
//! core polls the completion queue and calls that `ib_cqe`'s `done` with
//! the work completion; C's handler then finds its object with
//! `container_of`.
//!
//! Here the object's type implements [`HasCqe`] (usually through
//! [`impl_has_cqe!`]), a [`CompletionHandler`] says what to do with a
//! completed object, and [`set_done`] stores the `done` function that
//! recovers the object and calls the handler: the raw callback, the
//! `container_of` and the cast back are written once, here.
//!
//! # Examples
//!
//! ```
//! use core::ptr::{addr_of_mut, null_mut, NonNull};
//! use kernel::bindings;
//! use kernel::rdma::cq::{self, CompletionHandler, HasCqe, WorkCompletion};
//!
//! #[derive(Default)]
//! struct Request {
//!     cqe: bindings::ib_cqe,
//!     flushed: bool,
//! }
//! kernel::impl_has_cqe!(Request, cqe);
//!
//! struct RequestDone;
//! impl CompletionHandler for RequestDone {
//!     type Item = Request;
//!     unsafe fn done(wc: &WorkCompletion, req: NonNull<Request>) {
//!         // SAFETY: the request outlives its work request, and nothing
//!         // else touches it while its completion runs (`set_done` below).
//!         unsafe { (*req.as_ptr()).flushed = wc.is_flushed() };
//!     }
//! }
//!
//! let mut req = KBox::new(Request::default(), GFP_KERNEL)?;
//! let item = NonNull::from(&mut *req);
//! // Before posting a work request whose `wr_cqe` is the request's `cqe`:
//! // SAFETY: the request is live until its completion has run, and every
//! // work request posted with this `ib_cqe` is for it.
//! unsafe { cq::set_done::<RequestDone>(item) };
//!
//! // What the RDMA core does when that work request is flushed.
//! let mut wc = bindings::ib_wc {
//!     status: bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
//!     ..Default::default()
//! };
//! // SAFETY: `item` points to the live request; the completion's `wr_cqe`
//! // is written at its id union's address, where every member of a C
//! // union starts, whatever shape bindgen gave the union.
//! unsafe {
//!     addr_of_mut!(wc.__bindgen_anon_1)
//!         .cast::<*mut bindings::ib_cqe>()
//!         .write(Request::raw_get_cqe(item.as_ptr()))
//! };
//! // SAFETY: `item` points to the live request, borrowed nowhere else.
//! if let Some(done) = unsafe { (*item.as_ptr()).cqe.done } {
//!     // SAFETY: the `done` that `set_done` stored, called as the RDMA
//!     // core calls it, with a completion valid for the call.
//!     unsafe { done(null_mut(), &mut wc) };
//! }
//! // SAFETY: the completion has run; `item` points to the live request.
//! assert!(unsafe { item.as_ref() }.flushed);
//! # Ok::<(), Error>(())
//! ```

use crate::bindings;
use crate::types::Opaque;
use core::ptr::{addr_of_mut, NonNull};

/// A polled work completion (`struct ib_wc`).
///
/// # Invariants
///
/// A completion the RDMA core handed to an `ib_cqe`'s `done` function,
/// valid and unchanged while borrowed.
#[repr(transparent)]
pub struct WorkCompletion(Opaque<bindings::ib_wc>);

impl WorkCompletion {
    /// Borrows the completion at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a work completion that stays valid and unchanged
    /// for `'a`, as the one the RDMA core passes to a `done` function is for
    /// that call.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_wc) -> &'a Self {
        // SAFETY: `WorkCompletion` is a transparent `Opaque<ib_wc>`, valid
        // for `'a` by the caller's guarantee.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C completion, for C functions and tracepoints that read it.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::ib_wc {
        self.0.get()
    }

    /// The completion status (`enum ib_wc_status`).
    #[inline]
    pub fn status(&self) -> bindings::ib_wc_status {
        // SAFETY: a field of the completion, valid while borrowed (type
        // invariant).
        unsafe { (*self.0.get()).status }
    }

    /// Whether the work request succeeded (`IB_WC_SUCCESS`).
    #[inline]
    pub fn is_success(&self) -> bool {
        self.status() == bindings::ib_wc_status_IB_WC_SUCCESS
    }

    /// Whether the work request was flushed (`IB_WC_WR_FLUSH_ERR`): the
    /// queue pair went to the error state before it was executed.
    #[inline]
    pub fn is_flushed(&self) -> bool {
        self.status() == bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR
    }

    /// The `ib_cqe` the work request was posted with (`wr_cqe`).
    #[inline]
    pub fn cqe(&self) -> *mut bindings::ib_cqe {
        // SAFETY: the `wr_cqe` member of the id union of a valid completion
        // (type invariant), which is what a completion dispatched through
        // `done` carries; read as a pointer, not dereferenced.
        unsafe { wr_cqe_of(self.0.get()).read() }
    }
}

/// The address of the `wr_cqe` member of `wc`'s id union.
///
/// Every member of a C union starts at the union's address, so this holds
/// whether bindgen made the union a Rust `union` or a struct of
/// `__BindgenUnionField`s (as it does for some targets and versions).
///
/// # Safety
///
/// `wc` points to an allocation that holds an `ib_wc`.
#[inline]
unsafe fn wr_cqe_of(wc: *mut bindings::ib_wc) -> *mut *mut bindings::ib_cqe {
    // SAFETY: `wc` holds an `ib_wc` (`# Safety`), so its union is in bounds;
    // only its address is taken.
    unsafe { addr_of_mut!((*wc).__bindgen_anon_1) }.cast()
}

/// A type with a `struct ib_cqe` embedded in it.
///
/// # Safety
///
/// [`HasCqe::raw_get_cqe`] returns a pointer to an `ib_cqe` field inside
/// the object it is given, and [`HasCqe::from_cqe`] is its inverse: given
/// that field's address, it returns the object's. [`impl_has_cqe!`]
/// implements both for a named field.
pub unsafe trait HasCqe {
    /// The address of the embedded `ib_cqe` of the object at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an allocation that holds a `Self`.
    unsafe fn raw_get_cqe(ptr: *mut Self) -> *mut bindings::ib_cqe;

    /// The object whose embedded `ib_cqe` is at `cqe`.
    ///
    /// # Safety
    ///
    /// `cqe` was returned by [`HasCqe::raw_get_cqe`] for an object that
    /// is still allocated.
    unsafe fn from_cqe(cqe: *mut bindings::ib_cqe) -> NonNull<Self>;
}

/// Implements [`HasCqe`] for a type with an `ib_cqe` field.
///
/// # Examples
///
/// ```
/// use kernel::bindings;
///
/// struct Request {
///     cqe: bindings::ib_cqe,
/// }
/// kernel::impl_has_cqe!(Request, cqe);
/// ```
#[macro_export]
macro_rules! impl_has_cqe {
    ($type:ty, $field:ident) => {
        // SAFETY: `raw_get_cqe` returns the address of the `ib_cqe` field
        // `$field` inside the object, and `from_cqe` is its inverse
        // (`container_of!` on the same field).
        unsafe impl $crate::rdma::cq::HasCqe for $type {
            #[inline]
            unsafe fn raw_get_cqe(ptr: *mut Self) -> *mut $crate::bindings::ib_cqe {
                // SAFETY: `ptr` points to an allocation holding a `Self`
                // (`# Safety`), so the field's address is in bounds.
                unsafe { ::core::ptr::addr_of_mut!((*ptr).$field) }
            }

            #[inline]
            unsafe fn from_cqe(cqe: *mut $crate::bindings::ib_cqe) -> ::core::ptr::NonNull<Self> {
                // SAFETY: `cqe` is the `$field` of a live `Self`
                // (`# Safety`), so its container is in bounds and not null.
                unsafe {
                    ::core::ptr::NonNull::new_unchecked($crate::container_of!(cqe, Self, $field))
                }
            }
        }
    };
}

/// What runs when a work request posted for an [`CompletionHandler::Item`]
/// completes.
pub trait CompletionHandler {
    /// The type whose embedded `ib_cqe` the work requests carry.
    type Item: HasCqe;

    /// Handles the completion `wc` of a work request posted for `item`,
    /// in the completion queue's polling context (softirq, workqueue or
    /// the consumer's own poll, as the queue was allocated).
    ///
    /// # Safety
    ///
    /// `item` is the object whose `ib_cqe` was `wc`'s `wr_cqe`, prepared
    /// with [`set_done`] for this handler; each completion is handled
    /// once. What more `item` may be assumed to be is what the contract
    /// of [`set_done`] for this handler says.
    unsafe fn done(wc: &WorkCompletion, item: NonNull<Self::Item>);
}

/// The `ib_cqe.done` of objects prepared for `H`: finds the object from
/// the completion's `wr_cqe` and hands both to `H`.
///
/// # Safety
///
/// Called by the RDMA core with a polled completion whose `wr_cqe` is the
/// `ib_cqe` of an `H::Item` that [`set_done::<H>`] prepared.
unsafe extern "C" fn done_trampoline<H: CompletionHandler>(
    _cq: *mut bindings::ib_cq,
    wc: *mut bindings::ib_wc,
) {
    // SAFETY: the RDMA core's completion, valid and unchanged for this call
    // (`# Safety`).
    let wc = unsafe { WorkCompletion::from_raw(wc) };
    // SAFETY: `wr_cqe` is the embedded `ib_cqe` of a live `H::Item`
    // (`# Safety`), as `raw_get_cqe` returned it in `set_done`.
    let item = unsafe { H::Item::from_cqe(wc.cqe()) };
    // SAFETY: `item` is the object the completion was posted for, prepared
    // for `H` by `set_done` (`# Safety`), and the RDMA core delivers each
    // completion once.
    unsafe { H::done(wc, item) };
}

/// Prepares `item`'s embedded `ib_cqe` so that the completions of the work
/// requests posted with it are handed to `H`.
///
/// # Safety
///
/// `item` points to a live `H::Item` that nothing else accesses meanwhile,
/// and every work request posted with its `ib_cqe` as `wr_cqe` (until it
/// is prepared again) satisfies what `H::done` requires of its item; the
/// object stays allocated until each of their completions has been
/// handled.
#[inline]
pub unsafe fn set_done<H: CompletionHandler>(item: NonNull<H::Item>) {
    // SAFETY: `item` is a live object (`# Safety`), so its `ib_cqe` is in
    // bounds and ours to write.
    unsafe { (*H::Item::raw_get_cqe(item.as_ptr())).done = Some(done_trampoline::<H>) };
}

#[cfg(CONFIG_RUST_RDMA_KUNIT_TEST)]
#[::kernel::macros::kunit_tests(rust_kernel_rdma_cq)]
mod tests {
    use super::*;
    use crate::prelude::*;
    use core::ptr::null_mut;

    /// An object a work request is posted for, as an upper-layer protocol
    /// has one: an `ib_cqe` among its own fields.
    #[derive(Default)]
    struct Request {
        tag: u32,
        cqe: bindings::ib_cqe,
        done_with: Option<(u32, bindings::ib_wc_status)>,
    }
    crate::impl_has_cqe!(Request, cqe);

    struct RecordDone;

    impl CompletionHandler for RecordDone {
        type Item = Request;

        unsafe fn done(wc: &WorkCompletion, req: NonNull<Request>) {
            // SAFETY: the test's request, live, and touched by nothing
            // else during the call (`set_done`'s contract below).
            let req = unsafe { &mut *req.as_ptr() };
            req.done_with = Some((req.tag, wc.status()));
        }
    }

    /// Plays the RDMA core: calls the `done` of the `ib_cqe` a completion
    /// carries, as `__ib_process_cq` does.
    ///
    /// # Safety
    ///
    /// `wc.wr_cqe` is an `ib_cqe` prepared by `set_done`, whose object is
    /// live.
    unsafe fn poll_one(wc: &mut bindings::ib_wc) {
        // SAFETY: the caller's prepared, live `ib_cqe` (`# Safety`), read
        // from the completion's `wr_cqe`.
        let done = unsafe { (*wr_cqe_of(wc).read()).done };
        if let Some(done) = done {
            // SAFETY: the completion is valid for the call; the CQ is not
            // read by the trampoline.
            unsafe { done(null_mut(), wc) };
        }
    }

    #[test]
    fn completion_reaches_its_object_and_handler() -> Result {
        let mut req = KBox::new(
            Request {
                tag: 7,
                ..Default::default()
            },
            GFP_KERNEL,
        )?;
        let item = NonNull::from(&mut *req);
        // SAFETY: the request is live and ours; the one completion below is
        // for it.
        unsafe { set_done::<RecordDone>(item) };

        let mut wc = bindings::ib_wc {
            status: bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR,
            ..Default::default()
        };
        // SAFETY: writes the `wr_cqe` member of the completion's id union;
        // the request is live.
        unsafe { wr_cqe_of(&mut wc).write(Request::raw_get_cqe(item.as_ptr())) };
        // SAFETY: `wr_cqe` is the request's, prepared above; it is live.
        unsafe { poll_one(&mut wc) };

        assert_eq!(
            req.done_with,
            Some((7, bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR))
        );
        Ok(())
    }

    #[test]
    fn work_completion_reads_status_and_cqe() {
        let mut cqe = bindings::ib_cqe::default();
        let mut wc = bindings::ib_wc {
            status: bindings::ib_wc_status_IB_WC_SUCCESS,
            ..Default::default()
        };
        // SAFETY: writes the `wr_cqe` member of the completion's id union.
        unsafe { wr_cqe_of(&mut wc).write(&mut cqe) };
        // SAFETY: `wc` is valid and unchanged while borrowed.
        let w = unsafe { WorkCompletion::from_raw(&mut wc) };
        assert!(w.is_success());
        assert!(!w.is_flushed());
        assert!(w.cqe() == addr_of_mut!(cqe));

        wc.status = bindings::ib_wc_status_IB_WC_WR_FLUSH_ERR;
        // SAFETY: `wc`, with its new status, is valid and not written while
        // this second borrow lives.
        let w = unsafe { WorkCompletion::from_raw(&mut wc) };
        assert!(!w.is_success());
        assert!(w.is_flushed());
    }

    #[test]
    fn has_cqe_round_trips() {
        let mut req = Request::default();
        let p: *mut Request = &mut req;
        // SAFETY: `p` points to a live `Request`.
        let cqe = unsafe { Request::raw_get_cqe(p) };
        // SAFETY: `cqe` was returned by `raw_get_cqe` for the live request.
        assert!(unsafe { Request::from_cqe(cqe) }.as_ptr() == p);
    }
}
