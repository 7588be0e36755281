// SPDX-License-Identifier: GPL-2.0

//! RDMA devices.
//!
//! C header: [`include/rdma/ib_verbs.h`](srctree/include/rdma/ib_verbs.h)
//!
//! An upper-layer protocol does not own the `struct ib_device` it works
//! with: the RDMA core registers it, and the protocol's queue pairs,
//! protection domains and connections refer to it until the core tells the
//! protocol to let go (its client's `remove`, or the connection manager's
//! `DEVICE_REMOVAL` event). [`Device`] is that borrowed device.

use crate::bindings;
use crate::types::Opaque;

/// A borrowed `struct ib_device`.
///
/// # Invariants
///
/// The device is valid for DMA mapping while borrowed: registered with the
/// RDMA core (which set up its `dma_device`), or, for a software device
/// without DMA, one whose `dma_device` is null (the core's
/// `ib_uses_virt_dma()`).
#[repr(transparent)]
pub struct Device(Opaque<bindings::ib_device>);

// SAFETY: a `Device` is only read (its `dma_device`, its parent's node) or
// passed to the RDMA core's DMA-mapping functions, which any number of
// threads may call at once on one device; nothing here changes it.
unsafe impl Sync for Device {}

impl Device {
    /// Borrows the device at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` points to a `struct ib_device` that is valid as the type
    /// invariant says for `'a`: for instance the `device` of a protection
    /// domain or queue pair the caller holds.
    #[inline]
    pub unsafe fn from_raw<'a>(ptr: *mut bindings::ib_device) -> &'a Self {
        // SAFETY: `Device` is a transparent `Opaque<ib_device>`; the caller
        // guarantees the device stays valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C device, for the C functions that take it.
    #[inline]
    pub fn as_raw(&self) -> *mut bindings::ib_device {
        self.0.get()
    }

    /// The NUMA node of the device's parent (the NIC), or `NUMA_NO_NODE`
    /// (-1) when it has none: where memory the device works on is best
    /// allocated.
    #[inline]
    pub fn numa_node(&self) -> i32 {
        // SAFETY: reads the parent of a valid device (type invariant).
        unsafe { bindings::ibdev_to_node(self.as_raw()) }
    }

    /// Whether the device does no DMA (`ib_uses_virt_dma()`): a software
    /// device such as `rdma_rxe` or `siw`, whose "DMA addresses" are kernel
    /// virtual addresses that the CPU copies from and to.
    #[inline]
    pub fn uses_virt_dma(&self) -> bool {
        // SAFETY: reads the `dma_device` of a valid device (type invariant),
        // set before registration and unchanged while registered.
        unsafe { bindings::ib_uses_virt_dma(self.as_raw()) }
    }
}
