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
//! The mapping functions are those of a [`Dma`], a device's handle that
//! asks once whether the device does DMA at all ([`Device::dma`]).
//! A [`Mapping`] borrows the memory it maps: a page, for the device to read
//! ([`Dma::map_page`], safe) or in any direction
//! ([`Dma::map_page_with_direction`], `unsafe`: a device that writes the
//! page needs it to itself), or a buffer in the kernel's direct map
//! ([`Dma::map_single`], `unsafe`: only the caller knows where a buffer
//! lies). A [`PageMapping`] owns its page ([`Dma::map_owned_page`], any
//! direction). Both undo the mapping when dropped, with the direction and
//! the unmap function that match how they were made. A mapping whose address goes into a
//! work request is usually handed over with [`Mapping::into_raw`], and
//! undone by its new owner with [`Device::unmap_raw`] once no work request
//! uses it.
//!
//! # Examples
//!
//! ```
//! use kernel::page::Page;
//! use kernel::rdma::device::Device;
//!
//! /// Copies `msg` into `page` and maps it for the device to read.
//! fn map_message(dev: &Device, page: &Page, msg: &[u8]) -> Result<(u64, usize)> {
//!     // SAFETY: `msg` is readable for its length, and nothing else uses
//!     // the page before it is mapped.
//!     unsafe { page.write_raw(msg.as_ptr(), 0, msg.len())? };
//!     let mapping = dev.dma().map_page(page, 0, msg.len())?;
//!     // An SGE of a work request would take the address and length; here
//!     // the mapping is undone when it goes out of scope.
//!     Ok((mapping.dma_address(), mapping.len()))
//! }
//!
//! # use kernel::{alloc::flags, bindings};
//! # // A device without DMA (`dma_device` null), as a software device is.
//! # if cfg!(CONFIG_INFINIBAND_VIRT_DMA) {
//! # let raw = KBox::<bindings::ib_device>::new_uninit(GFP_KERNEL | flags::__GFP_ZERO)?;
//! # // SAFETY: zeroed by the allocation; all-zero is a valid `ib_device`
//! # // (integers, pointers, absent callbacks).
//! # let mut raw = unsafe { raw.assume_init() };
//! # // SAFETY: the device lives until the end of the example; with
//! # // `CONFIG_INFINIBAND_VIRT_DMA`, a null `dma_device` makes it one
//! # // without DMA, valid for mapping.
//! # let dev = unsafe { Device::from_raw(&mut *raw) };
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
use crate::error::{code::*, Error, Result};
use crate::page::{Page, PAGE_SIZE};
use core::marker::PhantomData;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;

/// Which `ib_dma_map_*` function made a mapping, and so which
/// `ib_dma_unmap_*` undoes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// `ib_dma_map_page`, undone by `ib_dma_unmap_page`.
    Page,
    /// `ib_dma_map_single`, undone by `ib_dma_unmap_single`.
    Single,
}

/// A mapping given up by its owner ([`Mapping::into_raw`]): its address and
/// length, for a work request's SGE, and what undoing it takes
/// ([`Device::unmap_raw`]).
#[derive(Clone, Copy, Debug)]
pub struct RawMapping {
    /// The address the device uses.
    pub addr: u64,
    /// The length mapped, in bytes.
    pub len: usize,
    /// The direction it was made for.
    pub dir: DataDirection,
    /// The function that made it.
    pub kind: MapKind,
}

/// Maps `len` bytes at `offset` in `page`, or at `addr` (a buffer in the
/// direct map), on `device` for `dir`, and checks the result.
///
/// # Safety
///
/// The memory to map is live, and stays so until the mapping is undone;
/// for [`Target::Single`], `addr..addr + len` lies in the kernel's direct
/// map. `dir` is not [`DataDirection::None`]. For a direction in which the
/// device writes, the memory is the mapping's alone while mapped.
#[inline]
unsafe fn map(dma: &Dma<'_>, what: Target, len: usize, dir: DataDirection) -> Result<u64> {
    let d = dma.device.as_raw();
    let addr = match what {
        // SAFETY: the device is valid for mapping (`Device` invariant); the
        // page holds `offset..offset + len`, live until the mapping is
        // undone (`# Safety`).
        Target::Page(page, offset) => unsafe {
            bindings::ib_dma_map_page(d, page, offset, len, dir.into())
        },
        // SAFETY: the device is valid for mapping (`Device` invariant); the
        // buffer is direct-map memory, live until the mapping is undone
        // (`# Safety`).
        Target::Single(addr) => unsafe {
            bindings::ib_dma_map_single(d, addr.as_ptr().cast(), len, dir.into())
        },
    };
    // A device without DMA never fails a mapping (`ib_dma_mapping_error()`
    // is 0 for it), so its check costs no call (`virt`, asked once).
    if dma.virt {
        return Ok(addr);
    }
    // SAFETY: `addr` is what the map call above returned for the device.
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
#[inline]
unsafe fn unmap(device: &Device, kind: MapKind, addr: u64, len: usize, dir: DataDirection) {
    let d = device.as_raw();
    match kind {
        // SAFETY: a live page mapping of this device, for `dir`, unused
        // (`# Safety`).
        MapKind::Page => unsafe { bindings::ib_dma_unmap_page(d, addr, len, dir.into()) },
        // SAFETY: a live single mapping of this device, for `dir`, unused
        // (`# Safety`).
        MapKind::Single => unsafe { bindings::ib_dma_unmap_single(d, addr, len, dir.into()) },
    }
}

/// Checks what a safe caller asks to map of a page: a direction that moves
/// data, and `offset..offset + len` a non-empty range inside the page.
#[inline]
fn check_page_range(offset: usize, len: usize, dir: DataDirection) -> Result {
    let end = offset.checked_add(len).ok_or(EINVAL)?;
    if len == 0 || end > PAGE_SIZE || dir == DataDirection::None {
        return Err(EINVAL);
    }
    Ok(())
}

/// A device's mapping functions, with `ib_uses_virt_dma()` asked once
/// ([`Device::dma`]).
///
/// Each mapping must be checked with `ib_dma_mapping_error()` (DMA-API
/// debugging reports one that was not), which a device without DMA never
/// fails: asked once for a batch of mappings (a reply's fragments), that
/// test spares a call per mapping. The handle is cheap; make one where
/// mappings are made, not one per device.
///
/// # Invariants
///
/// `virt` is `device.uses_virt_dma()`.
#[derive(Clone, Copy)]
pub struct Dma<'a> {
    device: &'a Device,
    virt: bool,
}

impl Device {
    /// The device's mapping functions.
    #[inline]
    pub fn dma(&self) -> Dma<'_> {
        // INVARIANT: `virt` is what the device says, and a device does not
        // change it while valid (`Device` invariant).
        Dma {
            device: self,
            virt: self.uses_virt_dma(),
        }
    }

    /// Undoes a mapping given up with [`Mapping::into_raw`], with the
    /// direction and the unmap function that match how it was made.
    ///
    /// # Safety
    ///
    /// `raw` is what [`Mapping::into_raw`] returned for a mapping made on
    /// this device, not undone yet; no I/O uses it any more, and the memory
    /// it maps is still allocated (undoing a mapping may copy a bounce
    /// buffer back into it).
    pub unsafe fn unmap_raw(&self, raw: RawMapping) {
        // SAFETY: a live mapping of this device, made for `raw.dir` by
        // `raw.kind`'s function, unused, its memory allocated (`# Safety`).
        unsafe { unmap(self, raw.kind, raw.addr, raw.len, raw.dir) }
    }
}

impl<'a> Dma<'a> {
    /// The device.
    #[inline]
    pub fn device(&self) -> &'a Device {
        self.device
    }

    /// Maps `len` bytes at `offset` in `page` for the device to read
    /// ([`DataDirection::ToDevice`]).
    ///
    /// The range must lie inside the page and not be empty: `EINVAL`
    /// otherwise. A mapping the DMA layer refuses (no IOMMU space or bounce
    /// buffer left) is `ENOMEM`. Safe because nothing the device or the DMA
    /// layer does for such a mapping writes the page; a mapping the device
    /// writes needs the page to itself ([`Dma::map_owned_page`], or the
    /// `unsafe` [`Dma::map_page_with_direction`]).
    #[inline]
    pub fn map_page<'p>(&self, page: &'p Page, offset: usize, len: usize) -> Result<Mapping<'p>>
    where
        'a: 'p,
    {
        // SAFETY: `ToDevice`: nothing writes the page for this mapping.
        unsafe { self.map_page_with_direction(page, offset, len, DataDirection::ToDevice) }
    }

    /// Maps `len` bytes at `offset` in `page` for `dir`. The same checks
    /// and errors as [`Dma::map_page`]; `dir` must move data (not
    /// [`DataDirection::None`], which the DMA API does not take): `EINVAL`.
    ///
    /// # Safety
    ///
    /// For [`DataDirection::FromDevice`] and
    /// [`DataDirection::Bidirectional`]: while the mapping lives (and until
    /// its raw form is undone), nothing else reads or writes the mapped
    /// range or the cache lines it touches, and no other mapping covers it:
    /// the device writes it, and so may the DMA layer when the mapping is
    /// undone (a bounce buffer copied back, caches invalidated).
    #[inline]
    pub unsafe fn map_page_with_direction<'p>(
        &self,
        page: &'p Page,
        offset: usize,
        len: usize,
        dir: DataDirection,
    ) -> Result<Mapping<'p>>
    where
        'a: 'p,
    {
        check_page_range(offset, len, dir)?;
        // SAFETY: the page holds the range (checked above) and is borrowed
        // for `'p`, as long as the mapping lives (its raw form is under
        // `unmap_raw`'s contract); `dir` is not `None`; a mapping the
        // device writes has the range to itself (`# Safety`).
        let addr = unsafe { map(self, Target::Page(page.as_ptr(), offset), len, dir)? };
        // INVARIANT: mapped on the device for `dir` by `ib_dma_map_page`,
        // checked; the page is borrowed for the mapping's lifetime.
        Ok(Mapping {
            device: self.device,
            addr,
            len,
            dir,
            kind: MapKind::Page,
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
    /// returned value, or the owner of its raw form). For
    /// [`DataDirection::FromDevice`] and [`DataDirection::Bidirectional`]
    /// the buffer is also the mapping's alone while mapped, as for
    /// [`Dma::map_page_with_direction`], and starts and ends on cache
    /// line boundaries (`kmalloc` memory does).
    pub unsafe fn map_single(
        &self,
        addr: NonNull<u8>,
        len: usize,
        dir: DataDirection,
    ) -> Result<Mapping<'a>> {
        if len == 0 || dir == DataDirection::None {
            return Err(EINVAL);
        }
        // SAFETY: direct-map memory, live until the mapping is undone
        // (`# Safety`); `dir` is not `None`.
        let addr = unsafe { map(self, Target::Single(addr), len, dir)? };
        // INVARIANT: mapped on the device for `dir` by `ib_dma_map_single`,
        // checked; the caller keeps the memory for as long as it is mapped.
        Ok(Mapping {
            device: self.device,
            addr,
            len,
            dir,
            kind: MapKind::Single,
            _memory: PhantomData,
        })
    }

    /// Maps `len` bytes at `offset` in `page`, which the mapping takes, for
    /// `dir`, any direction that moves data: the page is the mapping's
    /// alone. The same checks and errors as
    /// [`Dma::map_page_with_direction`]; on an error the page comes back
    /// with it.
    pub fn map_owned_page(
        &self,
        page: Page,
        offset: usize,
        len: usize,
        dir: DataDirection,
    ) -> core::result::Result<PageMapping<'a>, (Error, Page)> {
        if let Err(e) = check_page_range(offset, len, dir) {
            return Err((e, page));
        }
        // SAFETY: the page holds the range (checked above); the returned
        // value owns it, so it is live and touched by nothing else until
        // the mapping is undone; `dir` is not `None`.
        let addr = match unsafe { map(self, Target::Page(page.as_ptr(), offset), len, dir) } {
            Ok(addr) => addr,
            Err(e) => return Err((e, page)),
        };
        // INVARIANT: mapped on the device for `dir` by `ib_dma_map_page`,
        // checked, in `page`, which the `PageMapping` owns and frees only
        // after the mapping is undone.
        Ok(PageMapping {
            mapping: Mapping {
                device: self.device,
                addr,
                len,
                dir,
                kind: MapKind::Page,
                _memory: PhantomData,
            },
            page,
        })
    }
}

/// A streaming DMA mapping of memory it borrows, undone when dropped.
///
/// # Invariants
///
/// `addr`/`len` was mapped on `device` for `dir` by the function of `kind`
/// (`ib_dma_map_page` for [`Dma::map_page`], `ib_dma_map_single` for
/// [`Dma::map_single`]), is not an error, is not undone yet, and the
/// memory it maps stays allocated while the value lives (borrowed for
/// `'a`, by `map_single`'s contract, or owned by the [`PageMapping`] that
/// holds it).
#[must_use = "dropping a mapping undoes it"]
pub struct Mapping<'a> {
    device: &'a Device,
    addr: u64,
    len: usize,
    dir: DataDirection,
    kind: MapKind,
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

    /// Gives up the mapping without undoing it, for a work request's SGE.
    /// Whoever keeps the [`RawMapping`] undoes it with
    /// [`Device::unmap_raw`] once no I/O uses it, before the memory is
    /// freed; or never, which leaks it.
    #[inline]
    pub fn into_raw(self) -> RawMapping {
        let this = ManuallyDrop::new(self);
        RawMapping {
            addr: this.addr,
            len: this.len,
            dir: this.dir,
            kind: this.kind,
        }
    }
}

impl Drop for Mapping<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: a live mapping of `device` made for `dir` by `kind`'s
        // function (type invariant), owned by `self` alone; posting an I/O
        // on its address is `unsafe`, and that contract keeps the mapping
        // alive for the I/O, so none uses it now. Its memory is still
        // allocated (borrowed for `'a`, or by `map_single`'s contract).
        unsafe { unmap(self.device, self.kind, self.addr, self.len, self.dir) };
    }
}

/// A streaming DMA mapping of a page it owns: undone when dropped, then the
/// page is freed (the fields drop in that order). Its address, length and
/// direction are those of the [`Mapping`] it derefs to.
///
/// # Invariants
///
/// `mapping` maps a range of `page` (so its memory lives as long as it).
#[must_use = "dropping a mapping undoes it and frees its page"]
pub struct PageMapping<'a> {
    mapping: Mapping<'a>,
    page: Page,
}

impl<'a> core::ops::Deref for PageMapping<'a> {
    type Target = Mapping<'a>;

    #[inline]
    fn deref(&self) -> &Mapping<'a> {
        &self.mapping
    }
}

impl PageMapping<'_> {
    /// The page. The CPU must not touch the mapped range while the device
    /// may (`Page::read_raw` and `Page::write_raw` are `unsafe` for such
    /// races), and under a bounce buffer or without cache coherence it sees
    /// the device's writes only once the mapping is undone
    /// ([`PageMapping::into_page`]); this abstraction has no sync yet.
    #[inline]
    pub fn page(&self) -> &Page {
        &self.page
    }

    /// Undoes the mapping and gives the page back.
    pub fn into_page(self) -> Page {
        let Self { mapping, page } = self;
        drop(mapping);
        page
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
        let m = dev.dma().map_page(&page, 16, msg.len())?;
        assert_eq!(m.len(), msg.len());
        assert_eq!(m.direction(), DataDirection::ToDevice);
        let addr = usize::try_from(m.dma_address()).map_err(|_| EINVAL)?;
        // SAFETY: without DMA, the address is the kernel address of the
        // mapped bytes, which the page holds while mapped and borrowed.
        let seen = unsafe {
            core::slice::from_raw_parts(core::ptr::with_exposed_provenance::<u8>(addr), msg.len())
        };
        assert_eq!(seen, &msg[..]);
        let raw = m.into_raw();
        assert_eq!((raw.len, raw.kind), (msg.len(), MapKind::Page));
        // SAFETY: the raw form of the mapping just made, unused by any I/O;
        // the page is still allocated.
        unsafe { dev.unmap_raw(raw) };
        Ok(())
    }

    #[test]
    fn page_mapping_refuses_what_is_not_in_the_page() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        let page = Page::alloc_page(GFP_KERNEL)?;
        assert_eq!(
            dev.dma().map_page(&page, PAGE_SIZE - 8, 9).err(),
            Some(EINVAL)
        );
        assert_eq!(dev.dma().map_page(&page, 0, 0).err(), Some(EINVAL));
        assert_eq!(dev.dma().map_page(&page, usize::MAX, 2).err(), Some(EINVAL));
        // SAFETY: refused before anything is mapped.
        let none = unsafe {
            dev.dma()
                .map_page_with_direction(&page, 0, 1, DataDirection::None)
        };
        assert_eq!(none.err(), Some(EINVAL));
        assert!(dev.dma().map_page(&page, PAGE_SIZE - 8, 8).is_ok());
        // An owned page comes back with the error.
        let Err((e, page)) =
            dev.dma()
                .map_owned_page(page, 1, PAGE_SIZE, DataDirection::FromDevice)
        else {
            return Err(EINVAL);
        };
        assert_eq!(e, EINVAL);
        let Err((e, _page)) = dev.dma().map_owned_page(page, 0, 1, DataDirection::None) else {
            return Err(EINVAL);
        };
        assert_eq!(e, EINVAL);
        Ok(())
    }

    #[test]
    fn owned_page_comes_back_with_its_bytes() -> Result {
        let mut raw = virt_device()?;
        // SAFETY: lives until the end of the test; without DMA.
        let dev = unsafe { Device::from_raw(&mut *raw) };
        let page = Page::alloc_page(GFP_KERNEL)?;
        let m = dev
            .dma()
            .map_owned_page(page, 0, PAGE_SIZE, DataDirection::FromDevice)
            .map_err(|(e, _)| e)?;
        assert_eq!(m.direction(), DataDirection::FromDevice);
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
        let m = unsafe { dev.dma().map_single(base, 64, DataDirection::ToDevice)? };
        assert_eq!(
            Some(m.dma_address()),
            u64::try_from(base.as_ptr().expose_provenance()).ok()
        );
        let raw = m.into_raw();
        assert_eq!(
            (raw.len, raw.kind, raw.dir),
            (64, MapKind::Single, DataDirection::ToDevice)
        );
        // SAFETY: the raw form of the mapping just made, unused by any I/O;
        // `buf` is still allocated.
        unsafe { dev.unmap_raw(raw) };
        // SAFETY: an empty buffer, or no direction, is refused before
        // anything is mapped.
        let empty = unsafe { dev.dma().map_single(base, 0, DataDirection::ToDevice) };
        assert_eq!(empty.err(), Some(EINVAL));
        // SAFETY: `DataDirection::None` is refused before anything is
        // mapped, so nothing reads `buf`.
        let none = unsafe { dev.dma().map_single(base, 64, DataDirection::None) };
        assert_eq!(none.err(), Some(EINVAL));
        Ok(())
    }
}
