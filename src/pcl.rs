// SPDX-License-Identifier: GPL-2.0
// Reimplements the static inlines of include/linux/sunrpc/svc_rdma_pcl.h
// (Linux 7.3, GPL-2.0); origin and licence: see svc_rdma_sendto_rs.rs.

//! Walking parsed chunk lists (`struct svc_rdma_pcl`, built by the Receive
//! path): the static inlines of `svc_rdma_pcl.h`, and views of a chunk's
//! segments as [`crate::proto::Segment`]s for the encoders.

use crate::proto::encode::WriteChunk;
use crate::proto::Segment;
use crate::sys;
use core::mem::{align_of, offset_of, size_of};
use core::ptr::{addr_of, null_mut};

// The encoders read the C segment array as `proto::Segment`s.
const _: () = {
    assert!(size_of::<Segment>() == size_of::<sys::svc_rdma_segment>());
    assert!(align_of::<Segment>() == align_of::<sys::svc_rdma_segment>());
    assert!(offset_of!(Segment, handle) == offset_of!(sys::svc_rdma_segment, rs_handle));
    assert!(offset_of!(Segment, length) == offset_of!(sys::svc_rdma_segment, rs_length));
    assert!(offset_of!(Segment, offset) == offset_of!(sys::svc_rdma_segment, rs_offset));
};

/// `pcl_is_empty`.
///
/// # Safety
///
/// `pcl` is a valid, initialised chunk list.
pub(crate) unsafe fn pcl_is_empty(pcl: *const sys::svc_rdma_pcl) -> bool {
    // SAFETY: `pcl` is an initialised list (`# Safety`): its head is valid.
    unsafe { (*pcl).cl_chunks.next.cast_const() == addr_of!((*pcl).cl_chunks) }
}

/// `pcl_first_chunk`: the first chunk, or null.
///
/// # Safety
///
/// As for [`pcl_is_empty`].
pub(crate) unsafe fn pcl_first_chunk(pcl: *const sys::svc_rdma_pcl) -> *mut sys::svc_rdma_chunk {
    // SAFETY: an initialised list (`# Safety`); a non-empty one's first
    // entry is the `ch_list` of a chunk.
    unsafe {
        if pcl_is_empty(pcl) {
            return null_mut();
        }
        kernel::container_of!((*pcl).cl_chunks.next, sys::svc_rdma_chunk, ch_list)
    }
}

/// `pcl_next_chunk`: the chunk after `chunk`, or null after the last.
///
/// # Safety
///
/// `chunk` is on the list `pcl`, which nobody changes meanwhile.
pub(crate) unsafe fn pcl_next_chunk(
    pcl: *const sys::svc_rdma_pcl,
    chunk: *mut sys::svc_rdma_chunk,
) -> *mut sys::svc_rdma_chunk {
    // SAFETY: `chunk` is on the unchanging list `pcl` (`# Safety`), so its
    // successor is the head or another chunk's `ch_list`.
    unsafe {
        let next = (*chunk).ch_list.next;
        if next.cast_const() == addr_of!((*pcl).cl_chunks) {
            return null_mut();
        }
        kernel::container_of!(next, sys::svc_rdma_chunk, ch_list)
    }
}

/// The segments of `chunk`.
///
/// # Safety
///
/// `chunk` is a parsed chunk with `ch_segcount` segments, alive and
/// unchanged for `'a`.
pub(crate) unsafe fn segments<'a>(chunk: *const sys::svc_rdma_chunk) -> &'a [Segment] {
    // SAFETY: per the caller; layouts are equal (checked above).
    unsafe {
        core::slice::from_raw_parts(
            addr_of!((*chunk).ch_segments).cast::<Segment>(),
            (*chunk).ch_segcount as usize,
        )
    }
}

/// The chunks of a Write list as the encoders see them, in Call order.
///
/// # Safety
///
/// `pcl` is a valid chunk list, alive and unchanged for `'a`.
pub(crate) unsafe fn write_chunks<'a>(
    pcl: *const sys::svc_rdma_pcl,
) -> impl Iterator<Item = WriteChunk<'a>> + 'a {
    // SAFETY: `pcl` is a valid list, unchanged for `'a` (`# Safety`).
    let mut chunk = unsafe { pcl_first_chunk(pcl) };
    core::iter::from_fn(move || {
        if chunk.is_null() {
            return None;
        }
        let c = chunk;
        // SAFETY: per the caller of `write_chunks`.
        unsafe {
            chunk = pcl_next_chunk(pcl, c);
            Some(WriteChunk {
                payload_length: (*c).ch_payload_length,
                segments: segments(c),
            })
        }
    })
}
