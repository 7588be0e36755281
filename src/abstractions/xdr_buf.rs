// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`XdrBuf`]: a reply (`struct xdr_buf`: head kvec, page data, tail kvec)
//! or a region of one, read as [`Fragment`]s.

use crate::proto::pullup::{self, XdrShape};
use crate::rdma::dma::{Dma, Mapping};
use crate::sys;
use core::marker::PhantomData;
use core::ptr::NonNull;
use kernel::dma::DataDirection;
use kernel::error::Result;
use kernel::num::casts::FromSafeCast;
use kernel::page::{BorrowedPage, PAGE_SIZE};
use kernel::types::Opaque;

/// `PAGE_SIZE` as the `u32` of lengths and offsets in an `xdr_buf`.
pub(crate) const PAGE_SIZE_U32: u32 = {
    kernel::static_assert!(PAGE_SIZE <= u32::MAX as usize);
    PAGE_SIZE as u32
};

/// A borrowed `struct xdr_buf`.
///
/// # Invariants
///
/// The buffer is valid and unchanged while borrowed: its kvecs point to
/// `iov_len` readable bytes of lowmem, and its page array covers
/// `page_base + page_len` bytes of live pages.
#[repr(transparent)]
pub(crate) struct XdrBuf(Opaque<sys::xdr_buf>);

impl XdrBuf {
    /// Borrows the buffer at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a valid `xdr_buf` as the type invariant says, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *const sys::xdr_buf) -> &'a Self {
        // SAFETY: a transparent `Opaque<xdr_buf>`; validity for `'a` is the
        // caller's guarantee.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C pointer, for calls back into C.
    pub(crate) fn as_ptr(&self) -> *const sys::xdr_buf {
        self.0.get()
    }

    fn raw(&self) -> &sys::xdr_buf {
        // SAFETY: valid and unchanged while borrowed (type invariant).
        unsafe { &*self.0.get() }
    }

    /// Total length in bytes.
    pub(crate) fn len(&self) -> u32 {
        self.raw().len
    }

    /// The bytes its head, pages and tail hold: the limit
    /// `xdr_buf_subsegment` cuts regions against.
    pub(crate) fn segments_len(&self) -> u64 {
        let x = self.raw();
        u64::from_safe_cast(x.head[0].iov_len)
            .saturating_add(u64::from(x.page_len))
            .saturating_add(u64::from_safe_cast(x.tail[0].iov_len))
    }

    /// Its lengths, for the pull-up decisions of [`pullup`].
    pub(crate) fn shape(&self) -> XdrShape {
        let x = self.raw();
        XdrShape {
            head_len: u32::try_from(x.head[0].iov_len).unwrap_or(u32::MAX),
            page_base: x.page_base,
            page_len: x.page_len,
            tail_len: u32::try_from(x.tail[0].iov_len).unwrap_or(u32::MAX),
        }
    }

    /// The head kvec, unless empty.
    pub(crate) fn head(&self) -> Option<Fragment<'_>> {
        Fragment::of_kvec(&self.raw().head[0])
    }

    /// The head kvec when it is all the buffer holds (no page data, an
    /// empty tail), unless empty: most pulled-up replies.
    pub(crate) fn head_only(&self) -> Option<Fragment<'_>> {
        let x = self.raw();
        if x.page_len != 0 || x.tail[0].iov_len != 0 {
            return None;
        }
        self.head()
    }

    /// The tail kvec, unless empty.
    pub(crate) fn tail(&self) -> Option<Fragment<'_>> {
        Fragment::of_kvec(&self.raw().tail[0])
    }

    /// The page data, one fragment per page touched; `None` for a NULL
    /// slot in the page array, which the caller refuses: skipping it would
    /// send fewer bytes than the header announces.
    pub(crate) fn page_fragments(&self) -> impl Iterator<Item = Option<Fragment<'_>>> + '_ {
        let x = self.raw();
        let pages = x.pages;
        pullup::page_fragments(x.page_base, x.page_len, PAGE_SIZE_U32).map(
            move |(index, offset, len)| {
                // SAFETY: the page array covers `page_base + page_len`
                // (type invariant), which `page_fragments` stays within.
                let page = NonNull::new(unsafe { *pages.add(index) })?;
                Some(Fragment {
                    // SAFETY: a page of the buffer's page array, live while
                    // the buffer is borrowed (type invariant), as long as
                    // the fragment.
                    at: At::Page(unsafe { BorrowedPage::from_raw(page) }),
                    offset,
                    len,
                    _buf: PhantomData,
                })
            },
        )
    }
}

enum At<'a> {
    /// In the kernel's direct map, at this address.
    Virt(NonNull<u8>),
    /// In this page, at `offset`.
    Page(BorrowedPage<'a>),
}

/// A contiguous piece of an [`XdrBuf`]: a kvec, or the part of the page
/// data in one page.
///
/// # Invariants
///
/// `len` bytes at `offset` of `at` (or at `at` itself for a kvec) are part of
/// the borrowed buffer, readable, and in lowmem.
pub(crate) struct Fragment<'a> {
    at: At<'a>,
    offset: u32,
    len: u32,
    _buf: PhantomData<&'a XdrBuf>,
}

impl Fragment<'_> {
    fn of_kvec(iov: &sys::kvec) -> Option<Self> {
        let len = u32::try_from(iov.iov_len).ok().filter(|&l| l > 0)?;
        Some(Self {
            at: At::Virt(NonNull::new(iov.iov_base.cast::<u8>())?),
            offset: 0,
            len,
            _buf: PhantomData,
        })
    }

    /// Length in bytes.
    pub(crate) fn len(&self) -> u32 {
        self.len
    }

    /// Maps the fragment with `dma` for `dir`: a page fragment as a page
    /// mapping, a kvec as a buffer mapping (`ib_dma_map_single`, which in
    /// 7.3 is a page mapping through the kvec's page, as C's
    /// `svc_rdma_iov_dma_map` makes it). `ENOMEM` when the DMA layer
    /// refuses.
    ///
    /// # Safety
    ///
    /// The fragment's memory stays allocated until the mapping is undone,
    /// whoever undoes it (the returned value, or the owner of its raw form,
    /// [`Mapping::into_raw`]). `dir` is `ToDevice` (the device reads a
    /// reply), or the memory is the mapping's alone while mapped (the
    /// `wrong_direction` test build breaks this on purpose, to be caught).
    pub(crate) unsafe fn dma_map<'f>(
        &'f self,
        dma: &Dma<'f>,
        dir: DataDirection,
    ) -> Result<Mapping<'f>> {
        let len = usize::from_safe_cast(self.len);
        match &self.at {
            // SAFETY: the page is borrowed with the fragment; `dir` is
            // `ToDevice` or the range is the mapping's alone (`# Safety`).
            At::Page(page) => unsafe {
                dma.map_page_with_direction(page, usize::from_safe_cast(self.offset), len, dir)
            },
            // SAFETY: a kvec of the buffer lies in the direct map (type
            // invariant), allocated until the mapping is undone, and read
            // by the device or the mapping's alone (`# Safety`); kmalloc'd
            // or page memory, so cache-line aligned.
            At::Virt(base) => unsafe { dma.map_single(*base, len, dir) },
        }
    }

    /// Copies the fragment to the start of `to`, which must be at least
    /// as long; returns false, copying nothing, when it is not.
    ///
    /// Reply pages can be page-cache pages that a local writer changes
    /// while the reply is built, so the source is read by C's `memcpy`
    /// ([`copy_racy`]), never as a `&[u8]` or by a Rust read, which would
    /// assert it cannot change; the copy holds some mix of old and new
    /// bytes, as C's would.
    pub(crate) fn copy_to(&self, to: &mut [u8]) -> bool {
        let len = usize::from_safe_cast(self.len);
        let Some(to) = to.get_mut(..len) else {
            return false;
        };
        let src = match &self.at {
            At::Virt(base) => base.as_ptr(),
            // SAFETY: reply pages are lowmem (type invariant), so the page
            // has a kernel address; `offset + len` is within it.
            At::Page(page) => unsafe {
                sys::rs_page_address(page.as_ptr())
                    .cast::<u8>()
                    .add(usize::from_safe_cast(self.offset))
            },
        };
        // SAFETY: `src` is `len` readable bytes of the buffer (type
        // invariant), which `to`, a borrow of the caller's, cannot overlap.
        unsafe { copy_racy(src, to) };
        true
    }
}

/// Copies `to.len()` bytes from `src` into `to` with the kernel's C
/// `memcpy`, for memory that another CPU may write meanwhile. The access is
/// then C's, a plain one under the kernel memory model, where such a race
/// is tolerated and yields some mix of old and new bytes; the same race
/// through a Rust read (`copy_nonoverlapping`, `Page::read_raw`) would be
/// undefined behaviour. The code is the same: both are a call of `memcpy`.
///
/// # Safety
///
/// `src` is valid for reads of `to.len()` bytes and does not overlap `to`.
unsafe fn copy_racy(src: *const u8, to: &mut [u8]) {
    // SAFETY: `src` is readable for `to.len()` bytes and apart from `to`
    // (`# Safety`); `to` is writable for its length, borrowed exclusively.
    unsafe { kernel::bindings::memcpy(to.as_mut_ptr().cast(), src.cast(), to.len()) };
}
