// SPDX-License-Identifier: GPL-2.0

//! Streaming DMA mappings on RDMA devices.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! A work request names the memory it sends from or receives into by the
//! address an RDMA device uses for it. The RDMA core's `ib_dma_*` functions
//! make those addresses: through the DMA API for a device that does DMA,
//! or, for a software device (`rdma_rxe`, `siw`), the kernel virtual
//! address that the CPU will copy from and to. The address is a `u64`, as
//! in every verbs structure (`ib_sge.addr`): a `dma_addr_t` widened, or a
//! kernel pointer.
//!
//! A [`Mapping`] borrows the memory it maps: a page ([`Device::map_page`])
//! or, through an `unsafe` contract, a buffer in the kernel's direct map
//! ([`Device::map_single`]). A [`PageMapping`] owns its page
//! ([`Device::map_owned_page`]). Both undo the mapping when dropped, with
//! the direction they were made for. A mapping whose address goes into a
//! work request is usually handed over with [`Mapping::into_raw`], and
//! undone by its new owner with [`Device::unmap_page`] or
//! [`Device::unmap_single`] once no work request uses it.
//!
//! # Examples
//!
//! ```
//! use kernel::dma::DataDirection;
//! use kernel::page::Page;
//! use kernel::rdma::device::Device;
//!
//! /// Copies `msg` into `page` and maps it for the device to read.
//! fn map_message(dev: &Device, page: &Page, msg: &[u8]) -> Result<(u64, usize)> {
//!     // SAFETY: `msg` is readable for its length, and nothing else uses
//!     // the page before it is mapped.
//!     unsafe { page.write_raw(msg.as_ptr(), 0, msg.len())? };
//!     let mapping = dev.map_page(page, 0, msg.len(), DataDirection::ToDevice)?;
//!     // An SGE of a work request would take the address and length; here
//!     // the mapping is undone when it goes out of scope.
//!     Ok((mapping.dma_address(), mapping.len()))
//! }
//!
//! # use kernel::{alloc::flags, bindings};
//! # // A device without DMA (`dma_device` null), as a software device is.
//! # let raw = KBox::<bindings::ib_device>::new_uninit(GFP_KERNEL | flags::__GFP_ZERO)?;
//! # // SAFETY: zeroed by the allocation; all-zero is a valid `ib_device`
//! # // (integers, pointers, absent callbacks).
//! # let mut raw = unsafe { raw.assume_init() };
//! # // SAFETY: the device lives until the end of the example, and a null
//! # // `dma_device` makes it one without DMA.
//! # let dev = unsafe { Device::from_raw(&mut *raw) };
//! # if dev.uses_virt_dma() {
//! let page = Page::alloc_page(GFP_KERNEL)?;
//! let (addr, len) = map_message(dev, &page, b"hello")?;
//! assert_eq!(len, 5);
//! assert_ne!(addr, 0);
//! # }
//! # Ok::<(), Error>(())
//! ```

use super::device::Device;
use crate::bindings;
use crate::dma::DataDirection;
use crate::error::{code::*, Result};
use crate::page::{Page, PAGE_SIZE};
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

/// Which `ib_dma_map_*` function made a mapping, and so which
/// `ib_dma_unmap_*` undoes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Page,
    Single,
}

/// Maps `len` bytes at `offset` in `page`, or at `addr` (a buffer in the
/// direct map), on `device` for `dir`, and checks the result.
///
/// # Safety
///
/// The memory to map is live, and stays so until the mapping is undone;
/// for [`Kind::Single`], `addr..addr + len` lies in the kernel's direct
/// map. `dir` is not [`DataDirection::None`].
unsafe fn map(device: &Device, what: Target, len: usize, dir: DataDirection) -> Result<u64> {
    let d = device.as_raw();
    let addr = match what {
        // SAFETY: `device` is valid for mapping (type invariant); the page
        // holds `offset..offset + len`, live until the mapping is undone
        // (`# Safety`).
        Target::Page(page, offset) => unsafe {
            bindings::ib_dma_map_page(d, page, offset, len, dir.into())
        },
        // SAFETY: `device` is valid for mapping (type invariant); the
        // buffer is direct-map memory, live until the mapping is undone
        // (`# Safety`).
        Target::Single(addr) => unsafe {
            bindings::ib_dma_map_single(d, addr.as_ptr().cast(), len, dir.into())
        },
    };
    // A device without DMA never fails a mapping (`ib_dma_mapping_error()`
    // is 0 for it), so its check costs no call.
    if device.uses_virt_dma() {
        return Ok(addr);
    }
    // SAFETY: `addr` is what the map call above returned for `device`.
    if unsafe { bindings::ib_dma_mapping_error(d, addr) } != 0 {
        return Err(ENOMEM);
    }
    Ok(addr)
}

/// What [`map`] maps.
enum Target {
    /// A `struct page` (never null: a [`Page`]'s) and an offset in it.
    Page(*mut bindings::page, usize),
    Single(NonNull<u8>),
}

/// Undoes a mapping of `kind`.
///
/// # Safety
///
/// `addr`/`len` is a live mapping on `device`, made for `dir` by the
/// function of `kind`, that no I/O uses any more and nothing else undoes.
unsafe fn unmap(device: &Device, kind: Kind, addr: u64, len: usize, dir: DataDirection) {
    let d = device.as_raw();
    match kind {
        // SAFETY: a live page mapping of this device, for `dir`, unused
        // (`# Safety`).
        Kind::Page => unsafe { bindings::ib_dma_unmap_page(d, addr, len, dir.into()) },
        // SAFETY: a live single mapping of this device, for `dir`, unused
        // (`# Safety`).
        Kind::Single => unsafe { bindings::ib_dma_unmap_single(d, addr, len, dir.into()) },
    }
}

/// Checks what a safe caller asks to map of a page: a direction that moves
/// data, and `offset..offset + len` a non-empty range inside the page.
fn check_page_range(offset: usize, len: usize, dir: DataDirection) -> Result {
    let end = offset.checked_add(len).ok_or(EINVAL)?;
    if len == 0 || end > PAGE_SIZE || dir == DataDirection::None {
        return Err(EINVAL);
    }
    Ok(())
}

impl Device {
    /// Maps `len` bytes at `offset` in `page` for `dir`.
    ///
    /// The range must lie inside the page and not be empty, and `dir` must
    /// move data (not [`DataDirection::None`]): `EINVAL` otherwise. A
    /// mapping the DMA layer refuses (no IOMMU space or bounce buffer
    /// left) is `ENOMEM`.
    pub fn map_page<'a>(
        &'a self,
        page: &'a Page,
        offset: usize,
        len: usize,
        dir: DataDirection,
    ) -> Result<Mapping<'a>> {
        check_page_range(offset, len, dir)?;
        // SAFETY: the page holds the range (checked above) and is borrowed
        // for `'a`, as long as the mapping lives or its raw form is used
        // under `unmap_page`'s contract; `dir` is not `None`.
        let addr = unsafe { map(self, Target::Page(page.as_ptr(), offset), len, dir)? };
        // INVARIANT: mapped on `self` for `dir` by `ib_dma_map_page`,
        // checked; the page is borrowed for the mapping's lifetime.
        Ok(Mapping {
            device: self,
            addr,
            len,
            dir,
            kind: Kind::Page,
            _memory: PhantomData,
        })
    }

    /// Maps `len` bytes of the direct-map buffer at `addr` for `dir`
    /// (`ib_dma_map_single`). `EINVAL` for an empty buffer or
    /// [`DataDirection::None`], `ENOMEM` when the DMA layer refuses.
    ///
    /// # Safety
    ///
    /// `addr..addr + len` is memory of the kernel's direct map (from
    /// `kmalloc` or the page allocator, not `vmalloc`, not a stack), and
    /// stays allocated until the mapping is undone, whoever undoes it (the
    /// returned value, or the owner of its raw form).
    pub unsafe fn map_single(
        &self,
        addr: NonNull<u8>,
        len: usize,
        dir: DataDirection,
    ) -> Result<Mapping<'_>> {
        if len == 0 || dir == DataDirection::None {
            return Err(EINVAL);
        }
        // SAFETY: direct-map memory, live until the mapping is undone
        // (`# Safety`); `dir` is not `None`.
        let addr = unsafe { map(self, Target::Single(addr), len, dir)? };
        // INVARIANT: mapped on `self` for `dir` by `ib_dma_map_single`,
        // checked; the caller keeps the memory for as long as it is mapped.
        Ok(Mapping {
            device: self,
            addr,
            len,
            dir,
            kind: Kind::Single,
            _memory: PhantomData,
        })
    }

    /// Maps `len` bytes at `offset` in `page`, which the mapping takes, for
    /// `dir`. The same checks and errors as [`Device::map_page`]; on an
    /// error the page is freed.
    pub fn map_owned_page(
        &self,
        page: Page,
        offset: usize,
        len: usize,
        dir: DataDirection,
    ) -> Result<PageMapping<'_>> {
        check_page_range(offset, len, dir)?;
        // SAFETY: the page holds the range (checked above); the returned
        // value owns it, so it is live until the mapping is undone.
        let addr = unsafe { map(self, Target::Page(page.as_ptr(), offset), len, dir)? };
        // INVARIANT: mapped on `self` for `dir` by `ib_dma_map_page`,
        // checked; the page is owned by the mapping.
        Ok(PageMapping {
            device: self,
            page,
            addr,
            len,
            dir,
        })
    }

    /// Undoes a page mapping given up with [`Mapping::into_raw`].
    ///
    /// # Safety
    ///
    /// `addr`/`len` is the raw form of a [`Mapping`] made on this device
    /// for `dir` by [`Device::map_page`], not undone yet, and no I/O
    /// uses it any more.
    pub unsafe fn unmap_page(&self, addr: u64, len: usize, dir: DataDirection) {
        // SAFETY: a live page mapping of this device for `dir`, unused
        // (`# Safety`).
        unsafe { unmap(self, Kind::Page, addr, len, dir) }
    }

    /// Undoes a buffer mapping given up with [`Mapping::into_raw`].
    ///
    /// # Safety
    ///
    /// `addr`/`len` is the raw form of a [`Mapping`] made on this device
    /// for `dir` by [`Device::map_single`], not undone yet, and no I/O
    /// uses it any more.
    pub unsafe fn unmap_single(&self, addr: u64, len: usize, dir: DataDirection) {
        // SAFETY: a live single mapping of this device for `dir`, unused
        // (`# Safety`).
        unsafe { unmap(self, Kind::Single, addr, len, dir) }
    }
}

/// A streaming DMA mapping of memory it borrows, undone when dropped.
///
/// # Invariants
///
/// `addr`/`len` was mapped on `device` for `dir` by the function of `kind`
/// (`ib_dma_map_page` for [`Device::map_page`], `ib_dma_map_single` for
/// [`Device::map_single`]), is not an error, is not undone yet, and the
/// memory it maps stays allocated while the value lives (borrowed for
/// `'a`, or by `map_single`'s contract).
#[must_use = "dropping a mapping undoes it"]
pub struct Mapping<'a> {
    device: &'a Device,
    addr: u64,
    len: usize,
    dir: DataDirection,
    kind: Kind,
    _memory: PhantomData<&'a Page>,
}

impl Mapping<'_> {
    /// The address the device uses for the memory.
    #[inline]
    pub fn dma_address(&self) -> u64 {
        self.addr
    }

    /// The length mapped, in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped: never, mappings are not empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The direction the mapping was made for.
    #[inline]
    pub fn direction(&self) -> DataDirection {
        self.dir
    }

    /// Gives up the mapping without undoing it, for a work request's SGE:
    /// its address and length. Whoever stores them undoes the mapping with
    /// [`Device::unmap_page`] (from [`Device::map_page`]) or
    /// [`Device::unmap_single`] (from [`Device::map_single`]) and the same
    /// direction once no I/O uses it, before the memory is freed; or never,
    /// which leaks it.
    #[inline]
    pub fn into_raw(self) -> (u64, usize) {
        let this = ManuallyDrop::new(self);
        (this.addr, this.len)
    }
}

impl Drop for Mapping<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a live mapping of `device` made for `dir` by `kind`'s
        // function (type invariant), owned by `self` alone, which no I/O
        // uses: an I/O would have needed its raw form.
        unsafe { unmap(self.device, self.kind, self.addr, self.len, self.dir) };
    }
}

/// A streaming DMA mapping of a page it owns, undone when dropped (then
/// the page is freed).
///
/// # Invariants
///
/// `addr`/`len` was mapped on `device` for `dir` by `ib_dma_map_page` in
/// `page`, is not an error and is not undone yet.
#[must_use = "dropping a mapping undoes it and frees its page"]
pub struct PageMapping<'a> {
    device: &'a Device,
    page: Page,
    addr: u64,
    len: usize,
    dir: DataDirection,
}

impl PageMapping<'_> {
    /// The address the device uses for the mapped range.
    #[inline]
    pub fn dma_address(&self) -> u64 {
        self.addr
    }

    /// The length mapped, in bytes.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether nothing is mapped: never, mappings are not empty.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The page, for the CPU's reads and writes (`Page::read_raw`,
    /// `Page::write_raw`, whose contracts rule out racing the device).
    #[inline]
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// Undoes the mapping and gives the page back.
    pub fn into_page(self) -> Page {
        let this = ManuallyDrop::new(self);
        // SAFETY: the mapping is live and owned by `this` (type invariant),
        // which no I/O uses: an I/O would have needed a raw form.
        unsafe { unmap(this.device, Kind::Page, this.addr, this.len, this.dir) };
        // SAFETY: `this` is never dropped, so the page is moved out once.
        unsafe { core::ptr::read(&this.page) }
    }
}

impl Drop for PageMapping<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a live page mapping of `device` for `dir` (type
        // invariant), owned by `self` alone and unused by any I/O. The page
        // is freed after this, when the fields drop.
        unsafe { unmap(self.device, Kind::Page, self.addr, self.len, self.dir) };
    }
}

#[cfg(all(CONFIG_RUST_RDMA_KUNIT_TEST, CONFIG_INFINIBAND_VIRT_DMA))]
#[::kernel::macros::kunit_tests(rust_kernel_rdma_dma)]
mod tests {
    use super::*;
    use crate::alloc::{flags, KBox};
    use crate::prelude::*;

    /// A device without DMA (`dma_device` null), as `rdma_rxe` and `siw`
    /// are: its addresses are kernel virtual addresses.
    fn virt_device() -> Result<KBox<bindings::ib_device>> {
        let raw = KBox::<bindings::ib_device>::new_uninit(GFP_KERNEL | flags::__GFP_ZERO)?;
        // SAFETY: zeroed by the allocation; all-zero is a valid
        // `ib_device` (integers, null pointers, absent callbacks).
        Ok(unsafe { raw.assume_init() })
    }

    #[test]
    fn page_mapping_addresses_its_bytes() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        assert!(dev.uses_virt_dma());
        let page = Page::alloc_page(GFP_KERNEL)?;
        let msg = *b"work request payload";
        // SAFETY: `msg` is readable for its length; nothing else uses the page.
        unsafe { page.write_raw(msg.as_ptr(), 16, msg.len())? };
        let m = dev.map_page(&page, 16, msg.len(), DataDirection::ToDevice)?;
        assert_eq!(m.len(), msg.len());
        assert_eq!(m.direction(), DataDirection::ToDevice);
        let addr = usize::try_from(m.dma_address()).map_err(|_| EINVAL)?;
        // SAFETY: without DMA, the address is the kernel address of the
        // mapped bytes, which the page holds while mapped and borrowed.
        let seen = unsafe {
            core::slice::from_raw_parts(core::ptr::with_exposed_provenance::<u8>(addr), msg.len())
        };
        assert_eq!(seen, &msg[..]);
        Ok(())
    }

    #[test]
    fn page_mapping_refuses_what_is_not_in_the_page() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        let page = Page::alloc_page(GFP_KERNEL)?;
        let to = DataDirection::ToDevice;
        assert_eq!(
            dev.map_page(&page, PAGE_SIZE - 8, 9, to).err(),
            Some(EINVAL)
        );
        assert_eq!(dev.map_page(&page, 0, 0, to).err(), Some(EINVAL));
        assert_eq!(dev.map_page(&page, usize::MAX, 2, to).err(), Some(EINVAL));
        let none = DataDirection::None;
        assert_eq!(dev.map_page(&page, 0, 1, none).err(), Some(EINVAL));
        assert!(dev.map_page(&page, PAGE_SIZE - 8, 8, to).is_ok());
        Ok(())
    }

    #[test]
    fn owned_page_comes_back_with_its_bytes() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        let page = Page::alloc_page(GFP_KERNEL)?;
        let m = dev.map_owned_page(page, 0, PAGE_SIZE, DataDirection::FromDevice)?;
        let addr = usize::try_from(m.dma_address()).map_err(|_| EINVAL)?;
        // What a software device does for a receive: the CPU writes at the
        // mapping's address.
        // SAFETY: without DMA, the address is the kernel address of the
        // owned page, writable, and nothing else reads it meanwhile.
        unsafe {
            core::ptr::with_exposed_provenance_mut::<u8>(addr)
                .add(100)
                .write(0x5a)
        };
        let page = m.into_page();
        let mut b = 0u8;
        // SAFETY: `b` is writable for one byte; the page is unmapped and ours.
        unsafe { page.read_raw(&mut b, 100, 1)? };
        assert_eq!(b, 0x5a);
        Ok(())
    }

    #[test]
    fn buffer_mapping_is_the_buffer_and_hands_over() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        let buf = KBox::new([7u8; 64], GFP_KERNEL)?;
        let base = NonNull::from(&*buf).cast::<u8>();
        // SAFETY: `buf` is kmalloc memory, freed after the mapping is
        // undone below.
        let m = unsafe { dev.map_single(base, 64, DataDirection::ToDevice)? };
        assert_eq!(
            Some(m.dma_address()),
            u64::try_from(base.as_ptr().expose_provenance()).ok()
        );
        let (addr, len) = m.into_raw();
        assert_eq!(len, 64);
        // SAFETY: the raw form of the mapping just made by `map_single` for
        // `ToDevice`, unused by any I/O.
        unsafe { dev.unmap_single(addr, len, DataDirection::ToDevice) };
        // SAFETY: an empty buffer is refused before anything is mapped.
        let empty = unsafe { dev.map_single(base, 0, DataDirection::ToDevice) };
        assert_eq!(empty.err(), Some(EINVAL));
        Ok(())
    }
}
