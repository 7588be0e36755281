// SPDX-License-Identifier: GPL-2.0
// Reimplements the static inlines of include/linux/sunrpc/svc_rdma_pcl.h
// (Linux 7.3, GPL-2.0); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`RecvCtxt`]: the Call being answered (`struct svc_rdma_recv_ctxt`),
//! and its parsed chunk lists: [`Pcl`] (`struct svc_rdma_pcl`) of
//! [`Chunk`]s (`struct svc_rdma_chunk`), which the Receive path built.

use super::xdr_buf::XdrBuf;
use crate::proto::encode::{self, ReplyChunk, WriteChunk};
use crate::proto::Segment;
use crate::sys;
use core::mem::{align_of, offset_of, size_of};
use core::ptr::addr_of_mut;
use kernel::error::Error;
use kernel::ffi::{c_int, c_void};
use kernel::interop::list::CList;
use kernel::num::casts::FromSafeCast;
use kernel::types::Opaque;

// The encoders read the C segment array as `proto::Segment`s.
kernel::static_assert!(size_of::<Segment>() == size_of::<sys::svc_rdma_segment>());
kernel::static_assert!(align_of::<Segment>() == align_of::<sys::svc_rdma_segment>());
kernel::static_assert!(offset_of!(Segment, handle) == offset_of!(sys::svc_rdma_segment, rs_handle));
kernel::static_assert!(offset_of!(Segment, length) == offset_of!(sys::svc_rdma_segment, rs_length));
kernel::static_assert!(offset_of!(Segment, offset) == offset_of!(sys::svc_rdma_segment, rs_offset));

/// The receive ctxt of a Call, borrowed by the nfsd thread answering it.
///
/// # Invariants
///
/// The ctxt holds a received, parsed Call; its chunk lists are initialised
/// and change only through this borrow while it lasts.
#[repr(transparent)]
pub(crate) struct RecvCtxt(Opaque<sys::svc_rdma_recv_ctxt>);

impl RecvCtxt {
    /// Borrows the receive ctxt at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is the receive ctxt of a parsed Call, owned by the caller's
    /// thread for `'a` (nobody else reads or changes it meanwhile).
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::svc_rdma_recv_ctxt) -> &'a mut Self {
        // SAFETY: a transparent `Opaque<svc_rdma_recv_ctxt>`, exclusively
        // ours for `'a` (`# Safety`).
        unsafe { &mut *ptr.cast::<Self>() }
    }

    /// The C pointer, for calls back into C.
    pub(crate) fn as_ptr(&self) -> *mut sys::svc_rdma_recv_ctxt {
        self.0.get()
    }

    /// The Call's XID and version words, from the bytes actually received
    /// (see [`encode::error_reply_ids`]).
    pub(crate) fn xid_vers(&self) -> Option<(u32, u32)> {
        let p = self.as_ptr();
        // SAFETY: a received Call (type invariant): its receive buffer holds
        // `rc_byte_len` bytes, and is longer than the eight read at most.
        let received = unsafe {
            let len = usize::from_safe_cast((*p).rc_byte_len).min(8);
            core::slice::from_raw_parts((*p).rc_recv_buf.cast::<u8>(), len)
        };
        encode::error_reply_ids(received)
    }

    /// The rkey the client asked to invalidate, or 0.
    pub(crate) fn inv_rkey(&self) -> u32 {
        // SAFETY: a plain field of the borrowed ctxt.
        unsafe { (*self.as_ptr()).rc_inv_rkey }
    }

    /// The Call's Write list.
    pub(crate) fn write_pcl(&self) -> &Pcl {
        // SAFETY: an initialised list of the borrowed ctxt (type invariant).
        unsafe { Pcl::from_raw(addr_of_mut!((*self.as_ptr()).rc_write_pcl)) }
    }

    /// The Call's Reply chunk list (zero or one chunk).
    pub(crate) fn reply_pcl(&self) -> &Pcl {
        // SAFETY: an initialised list of the borrowed ctxt (type invariant).
        unsafe { Pcl::from_raw(addr_of_mut!((*self.as_ptr()).rc_reply_pcl)) }
    }

    /// The Write list, and the Reply chunk to update, for encoding a reply
    /// header.
    pub(crate) fn lists_for_reply(&mut self) -> (&Pcl, Option<&mut Chunk>) {
        let p = self.as_ptr();
        // SAFETY: the Write list, a field of the ctxt we borrow; only
        // shared from here on.
        let write = unsafe { Pcl::from_raw(addr_of_mut!((*p).rc_write_pcl)) };
        // SAFETY: the Reply list's first chunk, if any, reached from the
        // raw ctxt pointer we borrow mutably (not from a shared `&Chunk`):
        // it is on its own list, disjoint from the Write list, and ours.
        let chunk = unsafe {
            let head = addr_of_mut!((*p).rc_reply_pcl.cl_chunks);
            let first = (*head).next;
            if core::ptr::eq(first, head) {
                None
            } else {
                Some(
                    &mut *kernel::container_of!(first, sys::svc_rdma_chunk, ch_list)
                        .cast::<Chunk>(),
                )
            }
        };
        (write, chunk)
    }

    /// The Write chunk that the next result payload goes to, advancing
    /// the cursor past it (`rc_cur_result_payload`); `None` once the Write
    /// list is used up.
    pub(crate) fn next_result_payload_chunk(&mut self) -> Option<&mut Chunk> {
        let p = self.as_ptr();
        // SAFETY: a field of the ctxt we borrow mutably: null or a chunk of
        // its Write list (set by the Receive path, moved only here).
        let chunk = unsafe { (*p).rc_cur_result_payload };
        if chunk.is_null() {
            return None;
        }
        // SAFETY: the ctxt's Write list, ours (type invariant), reached
        // from the raw pointer we borrow mutably.
        let write = unsafe { Pcl::from_raw(addr_of_mut!((*p).rc_write_pcl)) };
        // SAFETY: `chunk` is on that list; its successor is read before the
        // chunk is lent out, into a field of the ctxt we borrow mutably.
        unsafe { (*p).rc_cur_result_payload = write.next_raw(chunk) };
        // SAFETY: a chunk of the Write list, ours, lent for as long as the
        // ctxt is borrowed; the cursor has moved past it.
        Some(unsafe { &mut *chunk.cast::<Chunk>() })
    }
}

/// A parsed chunk list.
///
/// # Invariants
///
/// An initialised `list_head` of `svc_rdma_chunk`s linked by `ch_list`,
/// unchanged while borrowed.
#[repr(transparent)]
pub(crate) struct Pcl(Opaque<sys::svc_rdma_pcl>);

impl Pcl {
    /// Borrows the list at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a list as the type invariant says, for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::svc_rdma_pcl) -> &'a Self {
        // SAFETY: a transparent `Opaque<svc_rdma_pcl>`, valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C pointer, for calls back into C.
    pub(crate) fn as_ptr(&self) -> *const sys::svc_rdma_pcl {
        self.0.get()
    }

    fn list(&self) -> &CList<Chunk, { offset_of!(sys::svc_rdma_chunk, ch_list) }> {
        // SAFETY: an initialised list of chunks linked by `ch_list`,
        // unchanged while borrowed (type invariant); `Chunk` is a
        // transparent `svc_rdma_chunk`.
        unsafe { CList::from_raw(addr_of_mut!((*self.0.get()).cl_chunks)) }
    }

    /// `pcl_is_empty`.
    pub(crate) fn is_empty(&self) -> bool {
        self.list().is_empty()
    }

    /// The chunks, in Call order (`pcl_for_each_chunk`).
    pub(crate) fn chunks(&self) -> impl Iterator<Item = &Chunk> + '_ {
        self.list().iter()
    }

    /// `pcl_next_chunk`: the chunk after `chunk`, or null after the last.
    ///
    /// # Safety
    ///
    /// `chunk` is on this list.
    unsafe fn next_raw(&self, chunk: *mut sys::svc_rdma_chunk) -> *mut sys::svc_rdma_chunk {
        // SAFETY: `chunk` is on this list (`# Safety`), so it is live.
        let next = unsafe { (*chunk).ch_list.next };
        // SAFETY: the place of this list's head, which is live.
        if core::ptr::eq(next, unsafe { addr_of_mut!((*self.0.get()).cl_chunks) }) {
            return core::ptr::null_mut();
        }
        // SAFETY: a successor other than the head is another chunk's
        // `ch_list`.
        unsafe { kernel::container_of!(next, sys::svc_rdma_chunk, ch_list) }
    }

    /// The Write chunks as the encoders see them.
    pub(crate) fn write_chunks(&self) -> impl Iterator<Item = WriteChunk<'_>> + '_ {
        self.chunks().map(Chunk::as_write_chunk)
    }

    /// Whether the reply has result payloads in this list's chunks: the
    /// first chunk was used (`pcl_process_nonpayloads`' own first test;
    /// payloads fill the chunks in order).
    pub(crate) fn has_payloads(&self) -> bool {
        self.chunks()
            .next()
            .is_some_and(|c| c.raw().ch_payload_length != 0)
    }

    /// The result payload of a reply with exactly one, as (position,
    /// length): the first chunk is used and the next, if any, is not, so
    /// `pcl_process_nonpayloads` cuts two regions, around it.
    pub(crate) fn single_payload(&self) -> Option<(u32, u32)> {
        let mut chunks = self.chunks();
        let first = chunks.next()?.raw();
        if first.ch_payload_length == 0 {
            return None;
        }
        match chunks.next() {
            Some(next) if next.raw().ch_payload_length != 0 => None,
            _ => Some((first.ch_position, first.ch_payload_length)),
        }
    }

    /// `pcl_process_nonpayloads`: hands `actor` each region of `xdr` that
    /// lies outside the payloads placed in this list's chunks, in order,
    /// until it fails. Returns the last region's result (≥ 0) or the first
    /// failure's negative errno.
    ///
    /// Without result payloads (every reply but READ's) the one region is
    /// the whole reply, and the actor is called here, inline, as the C
    /// function's first test would; only replies with payloads go through
    /// C's region cutting.
    #[inline]
    pub(crate) fn process_nonpayloads<A: RegionActor>(&self, xdr: &XdrBuf, actor: &mut A) -> c_int {
        if !self.has_payloads() {
            return actor.region(xdr).unwrap_or_else(|e| e.to_errno());
        }
        self.process_payload_regions(xdr, actor)
    }

    /// [`Self::process_nonpayloads`] by the C function, which cuts the
    /// regions between the payloads.
    #[inline(never)]
    fn process_payload_regions<A: RegionActor>(&self, xdr: &XdrBuf, actor: &mut A) -> c_int {
        /// The C actor: hands the region to the Rust actor `data` points to.
        ///
        /// # Safety
        ///
        /// `data` is the `A` given to `pcl_process_nonpayloads` below and
        /// `region` a region of its reply, valid for the call.
        unsafe extern "C" fn trampoline<A: RegionActor>(
            region: *const sys::xdr_buf,
            data: *mut c_void,
        ) -> c_int {
            // SAFETY: `data` is our `&mut A`, lent for the duration of the
            // C call (`# Safety`).
            let actor = unsafe { &mut *data.cast::<A>() };
            // SAFETY: a region of the reply, valid for this call.
            let region = unsafe { XdrBuf::from_raw(region) };
            actor.region(region).unwrap_or_else(|e| e.to_errno())
        }
        // SAFETY: the list and the reply are valid for the call; `actor`
        // outlives it and is what `trampoline::<A>` expects.
        unsafe {
            sys::pcl_process_nonpayloads(
                self.as_ptr(),
                xdr.as_ptr(),
                Some(trampoline::<A>),
                core::ptr::from_mut(actor).cast(),
            )
        }
    }
}

/// What [`Pcl::process_nonpayloads`] hands each region to: the actor and
/// its data of `pcl_process_nonpayloads`, as one typed value.
pub(crate) trait RegionActor {
    /// Processes one region of the reply: a non-negative result, or an
    /// error that stops the walk.
    fn region(&mut self, region: &XdrBuf) -> Result<c_int, Error>;
}

/// One chunk of a parsed chunk list.
///
/// # Invariants
///
/// A parsed `svc_rdma_chunk` with `ch_segcount` segments in its trailing
/// array.
#[repr(transparent)]
pub(crate) struct Chunk(Opaque<sys::svc_rdma_chunk>);

impl Chunk {
    fn raw(&self) -> &sys::svc_rdma_chunk {
        // SAFETY: a parsed chunk (type invariant) on a list that is
        // unchanged while borrowed.
        unsafe { &*self.0.get() }
    }

    /// Total length of its segments (`ch_length`).
    pub(crate) fn length(&self) -> u32 {
        self.raw().ch_length
    }

    /// The segments, in Call order.
    pub(crate) fn segments(&self) -> &[Segment] {
        let c = self.0.get();
        // SAFETY: `ch_segcount` segments follow the chunk (type invariant),
        // and `Segment` has `svc_rdma_segment`'s layout (checked above).
        unsafe {
            core::slice::from_raw_parts(
                addr_of_mut!((*c).ch_segments).cast::<Segment>(),
                usize::from_safe_cast((*c).ch_segcount),
            )
        }
    }

    /// The chunk as a Write chunk for the encoders.
    pub(crate) fn as_write_chunk(&self) -> WriteChunk<'_> {
        WriteChunk {
            payload_length: self.raw().ch_payload_length,
            segments: self.segments(),
        }
    }

    /// The chunk as the Reply chunk, whose payload length the encoder sets.
    pub(crate) fn as_reply_chunk(&mut self) -> ReplyChunk<'_> {
        let c = self.0.get();
        // SAFETY: we borrow the chunk mutably; `ch_payload_length` and the
        // segment array are disjoint fields of it.
        unsafe {
            ReplyChunk {
                length: (*c).ch_length,
                payload_length: &mut *addr_of_mut!((*c).ch_payload_length),
                segments: core::slice::from_raw_parts(
                    addr_of_mut!((*c).ch_segments).cast::<Segment>(),
                    usize::from_safe_cast((*c).ch_segcount),
                ),
            }
        }
    }

    /// Records a result payload of `length` bytes at `position` of the
    /// reply in this Write chunk.
    pub(crate) fn set_payload(&mut self, position: u32, length: u32) {
        let c = self.0.get();
        // SAFETY: two plain fields of the chunk we borrow mutably.
        unsafe {
            (*c).ch_position = position;
            (*c).ch_payload_length = length;
        }
    }
}
