// SPDX-License-Identifier: GPL-2.0

//! Building and sending replies: `svc_rdma_result_payload` so far; the
//! reply path proper (`svc_rdma_sendto`, `map_reply_msg`, `send_error_msg`)
//! still runs in the C file while it is being moved over.

use crate::sys;
use core::ptr::addr_of_mut;
use kernel::error::{code::E2BIG, Error};

/// The chunk after `chunk` in the parsed chunk list `pcl`, or null if
/// `chunk` is the last (`pcl_next_chunk`).
///
/// # Safety
///
/// `chunk` is on the list `pcl`, which nobody changes meanwhile.
unsafe fn pcl_next_chunk(
    pcl: *mut sys::svc_rdma_pcl,
    chunk: *mut sys::svc_rdma_chunk,
) -> *mut sys::svc_rdma_chunk {
    // SAFETY: per the caller, both are live and linked.
    unsafe {
        let next = (*chunk).ch_list.next;
        if next == addr_of_mut!((*pcl).cl_chunks) {
            return core::ptr::null_mut();
        }
        kernel::container_of!(next, sys::svc_rdma_chunk, ch_list)
    }
}

/// `svc_rdma_result_payload`: assigns a DDP-eligible result payload
/// (NFS READ or READLINK data, RFC 8267) of `length` bytes at `offset` in
/// the reply to the Call's next Write chunk.
///
/// The cursor moves on even when the payload does not fit, as in C, so a
/// later payload goes to the next chunk; the too-small chunk is then
/// echoed unused. `E2BIG` makes nfsd fail the operation.
///
/// # Safety
///
/// `rctxt` is the receive ctxt of the Call being answered, owned by the
/// calling nfsd thread.
pub(crate) unsafe fn result_payload(
    rctxt: *mut sys::svc_rdma_recv_ctxt,
    offset: u32,
    length: u32,
) -> Result<(), Error> {
    // SAFETY: per the caller.
    let chunk = unsafe { (*rctxt).rc_cur_result_payload };
    if length == 0 || chunk.is_null() {
        return Ok(());
    }
    // SAFETY: the cursor is a chunk of the Call's Write list.
    unsafe {
        (*rctxt).rc_cur_result_payload =
            pcl_next_chunk(addr_of_mut!((*rctxt).rc_write_pcl), chunk);
        if length > (*chunk).ch_length {
            return Err(E2BIG);
        }
        (*chunk).ch_position = offset;
        (*chunk).ch_payload_length = length;
    }
    Ok(())
}
