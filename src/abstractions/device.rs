// SPDX-License-Identifier: GPL-2.0

//! [`IbDevice`]: the RDMA device a transport sends through, and
//! [`DmaMapping`]: a streaming DMA mapping for sending, undone on drop.
//!
//! All mappings of the Send path are `DMA_TO_DEVICE`. A mapping is an owned
//! value until it is stored in an SGE of a send ctxt ([`DmaMapping::into_sge`]);
//! from then on the ctxt owns it and undoes it when the ctxt is released
//! (`IdleCtxt::release_io`) or freed.

use crate::sys;
use core::mem::ManuallyDrop;
use core::ptr::NonNull;
use kernel::num::casts::FromSafeCast;
use kernel::types::Opaque;

/// A borrowed `struct ib_device` (opaque in the bindings: only C reads it).
///
/// # Invariants
///
/// The device is registered while borrowed.
#[repr(transparent)]
pub(crate) struct IbDevice(Opaque<sys::ib_device>);

impl IbDevice {
    /// Borrows the device at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a registered `ib_device` that stays registered for
    /// `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::ib_device) -> &'a Self {
        // SAFETY: `IbDevice` is a transparent `Opaque<ib_device>`; the caller
        // guarantees the device lives for `'a`, and Rust never reads it.
        unsafe { &*ptr.cast::<Self>() }
    }

    fn as_ptr(&self) -> *mut sys::ib_device {
        self.0.get()
    }

    /// The NUMA node the device is attached to (may be `NUMA_NO_NODE`).
    pub(crate) fn numa_node(&self) -> i32 {
        // SAFETY: reads the node of a registered device (type invariant of
        // the borrow).
        unsafe { sys::rs_ibdev_to_node(self.as_ptr()) }
    }

    /// Maps `len` bytes at `offset` in `page` for sending. On failure the
    /// error cookie `ib_dma_map_page` returned is given back, for the
    /// tracepoint that reports it.
    ///
    /// # Safety
    ///
    /// `page` is a live page holding `offset..offset + len` (or lowmem
    /// contiguous with it) that stays allocated until the mapping is undone.
    pub(crate) unsafe fn map_page(
        &self,
        page: NonNull<sys::page>,
        offset: u32,
        len: u32,
    ) -> Result<DmaMapping<'_>, u64> {
        // SAFETY: `page` holds the bytes (`# Safety`); the device is
        // registered.
        let addr = unsafe {
            sys::rs_ib_dma_map_page(
                self.as_ptr(),
                page.as_ptr(),
                kernel::ffi::c_ulong::from_safe_cast(offset),
                usize::from_safe_cast(len),
            )
        };
        self.mapping(addr, len)
    }

    /// Maps `len` bytes of lowmem at `addr` for sending, as a page
    /// mapping (through its page: unmapping is per page). On failure the
    /// error cookie is given back.
    ///
    /// # Safety
    ///
    /// `addr..addr + len` is lowmem (the direct map) that stays allocated
    /// until the mapping is undone.
    pub(crate) unsafe fn map_virt(
        &self,
        addr: NonNull<u8>,
        len: u32,
    ) -> Result<DmaMapping<'_>, u64> {
        // SAFETY: the bytes are lowmem (`# Safety`), where `virt_to_page` is
        // valid; the device is registered.
        let addr = unsafe {
            sys::rs_ib_dma_map_virt(
                self.as_ptr(),
                addr.as_ptr().cast(),
                usize::from_safe_cast(len),
            )
        };
        self.mapping(addr, len)
    }

    /// The page mapping the shim returned: `DMA_MAPPING_ERROR` (all ones,
    /// checked by the shim) is a failure, given back as its cookie.
    fn mapping(&self, addr: u64, len: u32) -> Result<DmaMapping<'_>, u64> {
        if addr == u64::MAX {
            return Err(addr);
        }
        // INVARIANT: `addr`/`len` is what the shim's map call on this
        // device returned for it, not the error cookie: a live mapping,
        // owned by the returned value alone.
        Ok(DmaMapping {
            device: self,
            addr,
            len,
        })
    }

    /// Undoes a page mapping that was stored in an SGE.
    ///
    /// # Safety
    ///
    /// `addr`/`len` is a live mapping on this device, made by
    /// [`Self::map_page`] or [`Self::map_virt`] (a ctxt's header buffer,
    /// which `IdleCtxt::free` unmaps) and given up with
    /// [`DmaMapping::into_sge`] or kept by its ctxt, and no I/O uses it any
    /// more.
    #[inline]
    pub(crate) unsafe fn unmap_page(&self, addr: u64, len: u32) {
        // SAFETY: a live page mapping of this registered device that no
        // I/O uses any more (`# Safety`).
        unsafe { sys::rs_ib_dma_unmap_page(self.as_ptr(), addr, usize::from_safe_cast(len)) };
    }

    /// Undoes the page mappings stored in `sges`, in one call (which
    /// returns at once on a device without DMA, as `rxe` and `siw` are).
    ///
    /// # Safety
    ///
    /// As for [`Self::unmap_page`], for each of `sges`.
    pub(crate) unsafe fn unmap_pages(&self, sges: &[sys::ib_sge]) {
        // SAFETY: live page mappings of this registered device that no I/O
        // uses any more (`# Safety`), read by the shim for the call only.
        unsafe { sys::rs_ib_dma_unmap_pages(self.as_ptr(), sges.as_ptr(), sges.len()) };
    }
}

/// A live `DMA_TO_DEVICE` mapping.
///
/// # Invariants
///
/// `addr`/`len` was mapped on `device` by [`IbDevice::map_page`] or
/// [`IbDevice::map_virt`] and is not yet unmapped.
#[must_use = "dropping a mapping unmaps it"]
pub(crate) struct DmaMapping<'a> {
    device: &'a IbDevice,
    addr: u64,
    len: u32,
}

impl DmaMapping<'_> {
    /// The bus address of the mapping.
    pub(crate) fn addr(&self) -> u64 {
        self.addr
    }

    /// Hands the mapping to `sge`, whose owner undoes it (see the module
    /// docs).
    pub(crate) fn into_sge(self, sge: &mut sys::ib_sge) {
        let this = ManuallyDrop::new(self);
        sge.addr = this.addr;
        sge.length = this.len;
    }
}

impl Drop for DmaMapping<'_> {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: the mapping is live and owned by `self` (type invariant).
        unsafe { self.device.unmap_page(self.addr, self.len) };
    }
}
