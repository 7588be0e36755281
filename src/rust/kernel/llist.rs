// SPDX-License-Identifier: GPL-2.0

//! Lock-less, NULL-terminated, singly linked lists (`llist`).
//!
//! C header: [`include/linux/llist.h`](srctree/include/linux/llist.h)
//!
//! The objects on an [`LlistHead`] embed a `struct llist_node`
//! ([`HasLlistNode`], usually through [`impl_has_llist_node!`]). Any number
//! of producers add objects with [`LlistHead::push`]; consumers take them
//! all at once with [`LlistHead::take_all`], concurrently with producers
//! and with each other, or one at a time with [`LlistHead::pop_first`],
//! which `llist.h` allows only to one consumer at a time and never beside
//! a [`LlistHead::take_all`]. What is taken is a private [`Chain`], walked
//! without synchronisation.
//!
//! The list does not own its objects: it hands out the `NonNull<T>` that
//! was pushed, and what owning one means is the user's. That keeps the C
//! object's own lifetime rules (an object embedded in a structure C
//! allocates, say) in the user's type, where they are stated.
//!
//! # Examples
//!
//! ```
//! use core::ptr::NonNull;
//! use kernel::bindings;
//! use kernel::llist::LlistHead;
//!
//! #[derive(Default)]
//! struct Buffer {
//!     node: bindings::llist_node,
//!     len: usize,
//! }
//! kernel::impl_has_llist_node!(Buffer, node);
//!
//! // A list head and two buffers, as C code would embed them in its own
//! // objects.
//! let mut head = KBox::new(bindings::llist_head::default(), GFP_KERNEL)?;
//! let mut small = KBox::new(Buffer { len: 512, ..Default::default() }, GFP_KERNEL)?;
//! let mut large = KBox::new(Buffer { len: 4096, ..Default::default() }, GFP_KERNEL)?;
//!
//! // SAFETY: `head` is an initialised, empty `llist_head` that only
//! // `Buffer`s join, and it outlives `free`.
//! let free = unsafe { LlistHead::<Buffer>::from_raw(&mut *head) };
//! // SAFETY: `small` is on no list and stays allocated until it is taken
//! // off below.
//! unsafe { free.push(NonNull::from(&mut *small)) };
//! // SAFETY: as `small`, `large` is on no list and outlives its time on it.
//! unsafe { free.push(NonNull::from(&mut *large)) };
//!
//! // SAFETY: no one calls `pop_first` on this list.
//! let chain = unsafe { free.take_all() };
//! assert!(free.is_empty());
//! let mut lens = [0usize; 2];
//! for (slot, buf) in lens.iter_mut().zip(chain) {
//!     // SAFETY: the buffers outlive the chain, and nothing writes them.
//!     *slot = unsafe { buf.as_ref() }.len;
//! }
//! // Newest first.
//! assert_eq!(lens, [4096, 512]);
//! # Ok::<(), Error>(())
//! ```

use crate::bindings;
use crate::types::Opaque;
use core::marker::PhantomData;
#[cfg(CONFIG_RUST_LLIST_KUNIT_TEST)]
use core::ptr::addr_of_mut;
use core::ptr::{addr_of, null_mut, NonNull};

/// A type with a `struct llist_node` embedded in it.
///
/// # Safety
///
/// [`HasLlistNode::raw_get_node`] returns a pointer to an `llist_node`
/// field inside the object it is given, always the same field, and
/// [`HasLlistNode::from_node`] is its inverse. [`impl_has_llist_node!`]
/// implements both for a named field.
pub unsafe trait HasLlistNode {
    /// The address of the embedded node of the object at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an allocation that holds a `Self`.
    unsafe fn raw_get_node(ptr: *mut Self) -> *mut bindings::llist_node;

    /// The object whose embedded node is at `node`.
    ///
    /// # Safety
    ///
    /// `node` was returned by [`HasLlistNode::raw_get_node`] for an object
    /// that is still allocated.
    unsafe fn from_node(node: *mut bindings::llist_node) -> NonNull<Self>;
}

/// Implements [`HasLlistNode`] for a type with an `llist_node` field.
#[macro_export]
macro_rules! impl_has_llist_node {
    ($type:ty, $field:ident) => {
        // SAFETY: `raw_get_node` returns the address of the `llist_node`
        // field `$field` inside the object, and `from_node` is its inverse
        // (`container_of!` on the same field).
        unsafe impl $crate::llist::HasLlistNode for $type {
            #[inline]
            unsafe fn raw_get_node(ptr: *mut Self) -> *mut $crate::bindings::llist_node {
                // SAFETY: `ptr` points to an allocation holding a `Self`
                // (`# Safety`), so the field's address is in bounds.
                unsafe { ::core::ptr::addr_of_mut!((*ptr).$field) }
            }

            #[inline]
            unsafe fn from_node(
                node: *mut $crate::bindings::llist_node,
            ) -> ::core::ptr::NonNull<Self> {
                // SAFETY: `node` is the `$field` of a live `Self`
                // (`# Safety`), so its container is in bounds and not null.
                unsafe {
                    ::core::ptr::NonNull::new_unchecked($crate::container_of!(node, Self, $field))
                }
            }
        }
    };
}

/// A borrowed `struct llist_head` whose nodes are embedded in `T`s.
///
/// # Invariants
///
/// An initialised list head, and every node on it is the node of a live
/// `T` that was given to the list ([`LlistHead::push`]) and not yet taken
/// off it.
#[repr(transparent)]
pub struct LlistHead<T: HasLlistNode>(Opaque<bindings::llist_head>, PhantomData<T>);

impl<T: HasLlistNode> LlistHead<T> {
    /// Borrows the list head at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to an initialised `llist_head`, live for `'a`, every
    /// node of which is the node of a `T` given to it, as the type
    /// invariant says, by every user of the list, C or Rust.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::llist_head) -> &'a Self {
        // SAFETY: a transparent `Opaque<llist_head>`, live for `'a`
        // (`# Safety`).
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C list head.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::llist_head {
        self.0.get()
    }

    /// Whether the list is empty (`llist_empty`: one load, as
    /// `READ_ONCE`). Another thread may change that the next moment.
    #[inline]
    pub fn is_empty(&self) -> bool {
        // SAFETY: reads `first` of an initialised list (type invariant)
        // once, as `llist_empty` does.
        unsafe { core::ptr::read_volatile(addr_of!((*self.0.get()).first)) }.is_null()
    }

    /// Adds `item` in front (`llist_add`), concurrently with any other
    /// operation on the list. Returns whether the list was empty.
    ///
    /// # Safety
    ///
    /// `item` points to a live `T` that is on no list and that the list
    /// may link until it is taken off; it stays allocated until then.
    #[inline]
    pub unsafe fn push(&self, item: NonNull<T>) -> bool {
        // SAFETY: `item` is live (`# Safety`), so its node is in bounds.
        let node = unsafe { T::raw_get_node(item.as_ptr()) };
        // INVARIANT: the node of a live `T` given to the list (`# Safety`).
        // SAFETY: an initialised list, and a node that is on no list.
        unsafe { bindings::llist_add(node, self.0.get()) }
    }

    /// Takes every object off the list (`llist_del_all`), newest first.
    /// An empty list is seen with one load, without the atomic exchange.
    ///
    /// # Safety
    ///
    /// No [`LlistHead::pop_first`] of this list runs meanwhile (`llist.h`
    /// allows `llist_del_all` beside adds and other `llist_del_all`s only).
    #[inline]
    pub unsafe fn take_all(&self) -> Chain<T> {
        if self.is_empty() {
            return Chain::new();
        }
        // SAFETY: an initialised list; what it returns is detached from it.
        let first = unsafe { bindings::llist_del_all(self.0.get()) };
        // INVARIANT: the detached nodes are nodes of live `T`s (type
        // invariant), now reachable only through the chain.
        Chain {
            first,
            _t: PhantomData,
        }
    }

    /// Takes the newest object off the list (`llist_del_first`).
    ///
    /// # Safety
    ///
    /// The callers of `pop_first` on this list are serialised (a lock they
    /// all take), and no [`LlistHead::take_all`] of this list runs
    /// meanwhile.
    #[inline]
    pub unsafe fn pop_first(&self) -> Option<NonNull<T>> {
        // SAFETY: an initialised list; consumers are serialised and no
        // `llist_del_all` races them (`# Safety`).
        let node = unsafe { bindings::llist_del_first(self.0.get()) };
        // SAFETY: a node of this list, which links only nodes of live `T`s
        // (type invariant).
        NonNull::new(node).map(|n| unsafe { T::from_node(n.as_ptr()) })
    }
}

/// A private, NULL-terminated chain of `T`s: taken off an [`LlistHead`], or
/// built with [`Chain::push`]. Iterating takes the objects off it.
///
/// A chain dropped before it is walked to the end forgets the objects still
/// on it; a user whose objects must not be forgotten wraps it.
///
/// # Invariants
///
/// `first` is null or the first node of a NULL-terminated chain of nodes of
/// live `T`s that belong to the chain.
pub struct Chain<T: HasLlistNode> {
    first: *mut bindings::llist_node,
    _t: PhantomData<T>,
}

impl<T: HasLlistNode> Chain<T> {
    /// An empty chain.
    #[inline]
    pub const fn new() -> Self {
        // INVARIANT: null is the empty chain.
        Self {
            first: null_mut(),
            _t: PhantomData,
        }
    }

    /// Whether the chain is empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.first.is_null()
    }

    /// Adds `item` in front.
    ///
    /// # Safety
    ///
    /// `item` points to a live `T` that is on no list or chain, which this
    /// chain may link until the object is taken off it.
    #[inline]
    pub unsafe fn push(&mut self, item: NonNull<T>) {
        // SAFETY: `item` is live (`# Safety`), so its node is in bounds.
        let node = unsafe { T::raw_get_node(item.as_ptr()) };
        // SAFETY: the node is ours to link (`# Safety`).
        unsafe { (*node).next = self.first };
        // INVARIANT: a live `T`'s node in front of the NULL-terminated
        // chain.
        self.first = node;
    }
}

impl<T: HasLlistNode> Default for Chain<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: HasLlistNode> Iterator for Chain<T> {
    type Item = NonNull<T>;

    #[inline]
    fn next(&mut self) -> Option<NonNull<T>> {
        let node = NonNull::new(self.first)?;
        // SAFETY: a node of our chain (type invariant); its link is read
        // before the object is handed out, since its new owner may relink
        // it.
        self.first = unsafe { (*node.as_ptr()).next };
        // SAFETY: a node of our chain is the node of a live `T` (type
        // invariant).
        Some(unsafe { T::from_node(node.as_ptr()) })
    }
}

#[cfg(CONFIG_RUST_LLIST_KUNIT_TEST)]
#[::kernel::macros::kunit_tests(rust_kernel_llist)]
mod tests {
    use super::*;
    use crate::prelude::*;

    #[derive(Default)]
    struct Item {
        id: u32,
        node: bindings::llist_node,
    }
    crate::impl_has_llist_node!(Item, node);

    /// Three items and an empty list head, in one allocation that stays
    /// put while the list links them.
    #[derive(Default)]
    struct Fixture {
        head: bindings::llist_head,
        items: [Item; 3],
    }

    impl Fixture {
        fn new() -> Result<KBox<Self>> {
            let mut f = KBox::new(Self::default(), GFP_KERNEL)?;
            for (i, item) in f.items.iter_mut().enumerate() {
                item.id = u32::try_from(i)?;
            }
            Ok(f)
        }

        /// The head, as C would hand it over.
        fn head(this: *mut Self) -> *mut bindings::llist_head {
            // SAFETY: `this` points to a live fixture; only the field's
            // address is taken.
            unsafe { addr_of_mut!((*this).head) }
        }

        /// Item `i` (of 0, 1, 2).
        fn item(this: *mut Self, i: usize) -> NonNull<Item> {
            // SAFETY: `this` points to a live fixture and `i` is below 3
            // in every test; only the element's address is taken.
            let p = unsafe { addr_of_mut!((*this).items[i]) };
            // SAFETY: the address of a field of a live allocation.
            unsafe { NonNull::new_unchecked(p) }
        }
    }

    /// The ids of a chain's items in its order (the first four; unused
    /// slots `u32::MAX`), and how many items it had.
    fn ids(chain: Chain<Item>) -> ([u32; 4], usize) {
        let mut ids = [u32::MAX; 4];
        let mut n = 0usize;
        for item in chain {
            // SAFETY: the fixture's items outlive the chain.
            let id = unsafe { item.as_ref() }.id;
            if let Some(slot) = ids.get_mut(n) {
                *slot = id;
            }
            n = n.saturating_add(1);
        }
        (ids, n)
    }

    #[test]
    fn push_then_take_all_gives_newest_first() -> Result {
        let mut f = Fixture::new()?;
        let fp: *mut Fixture = &mut *f;
        // SAFETY: an initialised (empty) head that only `Item`s join.
        let list = unsafe { LlistHead::<Item>::from_raw(Fixture::head(fp)) };
        assert!(list.is_empty());
        for i in 0..3 {
            let item = Fixture::item(fp, i);
            // SAFETY: each item is on no list, and stays put in the boxed
            // fixture.
            let was_empty = unsafe { list.push(item) };
            assert_eq!(was_empty, i == 0);
        }
        assert!(!list.is_empty());
        // SAFETY: no `pop_first` runs.
        let taken = unsafe { list.take_all() };
        assert!(list.is_empty());
        assert_eq!(ids(taken), ([2, 1, 0, u32::MAX], 3));
        // SAFETY: still no `pop_first` of this list anywhere.
        assert!(unsafe { list.take_all() }.is_empty());
        Ok(())
    }

    #[test]
    fn pop_first_takes_the_newest() -> Result {
        let mut f = Fixture::new()?;
        let fp: *mut Fixture = &mut *f;
        // SAFETY: an initialised (empty) head that only `Item`s join.
        let list = unsafe { LlistHead::<Item>::from_raw(Fixture::head(fp)) };
        // SAFETY: one consumer, this test, and no `take_all` meanwhile.
        assert!(unsafe { list.pop_first() }.is_none());
        for i in 0..2 {
            let item = Fixture::item(fp, i);
            // SAFETY: on no list; the fixture stays put.
            unsafe { list.push(item) };
        }
        // SAFETY: this test is the list's one consumer, and no `take_all`
        // runs.
        let first = unsafe { list.pop_first() }.ok_or(EINVAL)?;
        // SAFETY: an item of the fixture, which is live.
        assert_eq!(unsafe { first.as_ref() }.id, 1);
        // SAFETY: the same single consumer, still without `take_all`.
        let second = unsafe { list.pop_first() }.ok_or(EINVAL)?;
        // SAFETY: the fixture's other item, live too.
        assert_eq!(unsafe { second.as_ref() }.id, 0);
        assert!(list.is_empty());
        Ok(())
    }

    #[test]
    fn chain_push_and_walk() -> Result {
        let mut f = Fixture::new()?;
        let fp: *mut Fixture = &mut *f;
        let mut chain = Chain::<Item>::new();
        assert!(chain.is_empty());
        for i in 0..3 {
            let item = Fixture::item(fp, i);
            // SAFETY: on no list or chain; the fixture stays put.
            unsafe { chain.push(item) };
        }
        assert!(!chain.is_empty());
        assert_eq!(ids(chain), ([2, 1, 0, u32::MAX], 3));
        Ok(())
    }
}
