// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`Ctxt`]: an owned `struct svc_rdma_send_ctxt`, with its SGE list,
//! transport header buffer, reply pages and WR chain; [`CtxtList`] and
//! [`CtxtChain`]: the lock-free lists it moves between; [`Ledger`]: the
//! record of where it is, kept in front of the C struct; [`SendDone`]: the
//! completion handler that hands a posted ctxt back; [`census`]: what the
//! ctxts hold, for the leak counters.
//!
//! The C struct is shared with `svc_rdma_rw.c` and
//! `svc_rdma_backchannel.c`, so its layout is C's; the ledger precedes it
//! and the SGE array follows it, in the same allocation.
//!
//! This file holds the ctxt itself (allocation, SGEs, header, pages,
//! release); `ledger.rs` the ledger and the walks of every ctxt;
//! `list.rs` the lists; `post.rs` posting and the Send completion's side.

use super::recv_ctxt::{Pcl, RecvCtxt};
use super::rqst::Rqst;
use super::xdr_buf::XdrBuf;
use super::xprt::{Drained, Rdma, SendQueueGone};
use crate::llist::{Chain, HasLlistNode, LlistHead};
use crate::rdma::cq::{self, CompletionHandler, HasCqe, WorkCompletion};
use crate::rdma::device::Device;
use crate::rdma::dma::{MapKind, Mapping, RawMapping};
use crate::sys;
use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ptr::{addr_of, addr_of_mut, null_mut, NonNull};
use kernel::alloc::allocator::Kmalloc;
use kernel::alloc::flags::{__GFP_ZERO, GFP_KERNEL};
use kernel::alloc::{Allocator, Flags, NumaNode};
use kernel::dma::DataDirection;
use kernel::error::code::ENOTCONN;
use kernel::ffi::c_int;
use kernel::num::casts::FromSafeCast;
use kernel::sync::atomic::{atomic_load, Relaxed};
use kernel::sync::SpinLock;
use kernel::types::Opaque;

mod ledger;
mod list;
mod post;

use ledger::*;
use post::SendDone;

pub(crate) use ledger::{
    abandon_unreturned, census, queue_unreturned, release_unreturned_chunk_io, CtxtState,
    HeldAtTeardown,
};
pub(crate) use list::{CtxtChain, CtxtList};
pub(crate) use post::{PartlyPosted, PostFailure, Poster, SendCompletion, SentCtxt};

/// The C send ctxt as an object that embeds the kernel's generic nodes: its
/// `sc_node`, linked on the lock-free lists, and its Send's `ib_cqe`,
/// `sc_cqe`. A type of this crate, because a trait of the kernel crate
/// cannot be implemented for a `bindings` type outside it
/// (`Documentation/intree.rst`).
#[repr(transparent)]
pub(super) struct CtxtObject(Opaque<sys::svc_rdma_send_ctxt>);

// SAFETY: `raw_get_node` returns the address of `sc_node` inside the ctxt
// the object is, always that field, and `from_node` is its inverse
// (`container_of!` on the same field of the same, transparently wrapped,
// struct).
unsafe impl HasLlistNode for CtxtObject {
    #[inline]
    unsafe fn raw_get_node(ptr: *mut Self) -> *mut sys::llist_node {
        // SAFETY: `ptr` points to a ctxt (`# Safety`), so `sc_node` is in
        // bounds.
        unsafe { addr_of_mut!((*ptr.cast::<sys::svc_rdma_send_ctxt>()).sc_node) }
    }

    #[inline]
    unsafe fn from_node(node: *mut sys::llist_node) -> NonNull<Self> {
        // SAFETY: `node` is the `sc_node` of a live ctxt (`# Safety`), so
        // the container is in bounds and not null.
        unsafe {
            NonNull::new_unchecked(kernel::container_of!(
                node,
                sys::svc_rdma_send_ctxt,
                sc_node
            ))
            .cast()
        }
    }
}

// SAFETY: `raw_get_cqe` returns the address of `sc_cqe` inside the ctxt the
// object is, and `from_cqe` is its inverse (`container_of!` on the same
// field of the same, transparently wrapped, struct).
unsafe impl HasCqe for CtxtObject {
    #[inline]
    unsafe fn raw_get_cqe(ptr: *mut Self) -> *mut sys::ib_cqe {
        // SAFETY: `ptr` points to a ctxt (`# Safety`), so `sc_cqe` is in
        // bounds.
        unsafe { addr_of_mut!((*ptr.cast::<sys::svc_rdma_send_ctxt>()).sc_cqe) }
    }

    #[inline]
    unsafe fn from_cqe(cqe: *mut sys::ib_cqe) -> NonNull<Self> {
        // SAFETY: `cqe` is the `sc_cqe` of a live ctxt (`# Safety`), so the
        // container is in bounds and not null.
        unsafe {
            NonNull::new_unchecked(kernel::container_of!(cqe, sys::svc_rdma_send_ctxt, sc_cqe))
                .cast()
        }
    }
}

/// The allocation of a ctxt with `nsges` SGEs: its [`Ledger`], the C
/// struct, its SGE array.
fn ctxt_layout(nsges: usize) -> Option<Layout> {
    let size = size_of::<sys::ib_sge>()
        .checked_mul(nsges)?
        .checked_add(size_of::<sys::svc_rdma_send_ctxt>())?
        .checked_add(LEDGER_SIZE)?;
    let align = align_of::<sys::svc_rdma_send_ctxt>().max(align_of::<Ledger>());
    Layout::from_size_align(size, align).ok()
}

/// The allocations of a ctxt of `rdma`: the ctxt (with SGEs and ledger),
/// its page slots, its header buffer.
fn layouts(rdma: &Rdma) -> Option<(Layout, Layout, Layout)> {
    Some((
        ctxt_layout(rdma.max_send_sges())?,
        Layout::array::<*mut sys::page>(rdma.serv_maxpages()?).ok()?,
        Layout::from_size_align(rdma.max_req_size(), align_of::<u64>()).ok()?,
    ))
}

/// `kmalloc_node`, zeroed or not; `None` on failure. Out of line, as
/// [`kfree`]: both run only when the pool grows or the transport goes.
#[inline(never)]
fn kmalloc(layout: Layout, zeroed: bool, node: i32) -> Option<NonNull<u8>> {
    let flags: Flags = if zeroed {
        GFP_KERNEL | __GFP_ZERO
    } else {
        GFP_KERNEL
    };
    let node = NumaNode::new(node).unwrap_or(NumaNode::NO_NODE);
    Kmalloc::alloc(layout, flags, node).ok().map(NonNull::cast)
}

/// `kfree` of what [`kmalloc`] returned for `layout` (null is accepted).
///
/// # Safety
///
/// `ptr` is null or came from [`kmalloc`] with `layout`, and is not used
/// again.
#[inline(never)]
unsafe fn kfree(ptr: *mut u8, layout: Layout) {
    if let Some(p) = NonNull::new(ptr) {
        // SAFETY: allocated by `Kmalloc` with `layout` (`# Safety`).
        unsafe { Kmalloc::free(p, layout) };
    }
}

/// Frees the memory of a ctxt: its header buffer and page slots (each
/// may be null, for a ctxt whose allocation failed half way), then the
/// allocation of its ledger, struct and SGEs.
///
/// # Safety
///
/// `c` is a ctxt allocated by [`Ctxt::alloc`] of a transport whose
/// [`layouts`] are `l`, not listed, its header mapping undone or never
/// made, and not used again.
unsafe fn free_memory(c: *mut sys::svc_rdma_send_ctxt, l: &(Layout, Layout, Layout)) {
    // SAFETY: the ctxt is live until its allocation is freed, last.
    let (buf, pages) = unsafe { ((*c).sc_xprt_buf, (*c).sc_pages) };
    // SAFETY: null or allocated with `l.2` (`# Safety`), unused now.
    unsafe { kfree(buf.cast(), l.2) };
    // SAFETY: null or allocated with `l.1` (`# Safety`), unused now.
    unsafe { kfree(pages.cast(), l.1) };
    // SAFETY: the ctxt's allocation, from its ledger on, made with `l.0`
    // (`# Safety`); nothing of it is used again.
    unsafe { kfree(ledger_ptr(c).cast(), l.0) };
}

/// A send ctxt owned by its holder. Dropping it puts it back
/// ([`Ctxt::try_put`]); posting it ([`Ctxt::post`]), pushing it on a list
/// or freeing it gives it away instead.
///
/// # Invariants
///
/// - Points to a ctxt allocated by [`Ctxt::alloc`]: its [`Ledger`], the C
///   struct, then `sc_max_send_sges` SGEs of its transport.
/// - `sc_rdma` is its transport, which lives for `'r` (a borrow of the
///   transport, or, for a ctxt made from a C pointer, as long as the
///   caller of [`Ctxt::from_raw`] promised): safe code cannot keep a ctxt
///   past the transport, e.g. in a work item, which needs `'static`.
/// - The holder has exclusive access: the ctxt is on no free list, no
///   CPU code but the holder's writes it, and no WR of its chain is posted
///   (a posted ctxt is a [`SentCtxt`] for its completion, or, partly
///   posted, a [`PartlyPosted`]). Other CPUs do read it while it is in
///   the ledger: the [`census`] and the teardown walks read `sc_rdma`,
///   `num_sge` and `sc_page_count`. So, once the ctxt is listed, no code
///   makes a reference to the whole struct or to `sc_send_wr`: the holder
///   reads and writes fields in place through the pointer, as C does, and
///   writes those two counts as `WRITE_ONCE`.
/// - It has at least one SGE. SGEs `1..num_sge` hold payload mappings not
///   yet undone; SGE 0 holds the header buffer's mapping, made at
///   allocation.
/// - `sc_xprt_buf` points to its own header buffer, of its ledger's
///   `xprt_buf_len` bytes, initialised (zeroed at allocation), which C
///   code never reassigns (a stand-in's is empty).
pub(crate) struct Ctxt<'r>(NonNull<sys::svc_rdma_send_ctxt>, PhantomData<&'r Rdma>);

// SAFETY: a `Ctxt` is an exclusive handle to kernel memory that any thread
// may use (completions run on another CPU than the poster); the `&Rdma` it
// borrows may go along, `Rdma` being `Sync`.
unsafe impl Send for Ctxt<'_> {}

impl<'r> Ctxt<'r> {
    /// Takes ownership of the ctxt at `ptr`; `None` for null.
    ///
    /// # Safety
    ///
    /// `ptr` is null or a ctxt as the type invariant says, whose
    /// transport lives for `'r`, and whose ownership the caller gives up.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::svc_rdma_send_ctxt) -> Option<Self> {
        NonNull::new(ptr).map(|p| Self(p, PhantomData))
    }

    /// Gives up ownership, for a caller that hands the ctxt to C, or
    /// leaves it to its ledger alone (a parked ctxt, [`PartlyPosted`]).
    pub(crate) fn into_raw(self) -> *mut sys::svc_rdma_send_ctxt {
        ManuallyDrop::new(self).0.as_ptr()
    }

    /// Gives up the handle, for a list or chain that takes the ctxt.
    fn into_object(self) -> NonNull<CtxtObject> {
        ManuallyDrop::new(self).0.cast()
    }

    /// The C pointer.
    pub(crate) fn as_ptr(&self) -> *mut sys::svc_rdma_send_ctxt {
        self.0.as_ptr()
    }

    /// The transport this ctxt belongs to.
    pub(crate) fn rdma(&self) -> &'r Rdma {
        // SAFETY: a field of our live ctxt, read in place; `sc_rdma` is
        // written only at allocation, and lives for `'r` (type invariant).
        unsafe { Rdma::from_raw((*self.as_ptr()).sc_rdma) }
    }

    /// `svc_rdma_send_ctxt_alloc`: a new ctxt on the device's NUMA node,
    /// with its header buffer DMA-mapped as SGE 0, every SGE's lkey set,
    /// its Send WR pre-wired, and listed in the ledger. `None` when memory
    /// or the mapping cannot be had. Out of line and cold: a transport
    /// allocates its ctxts once, when its pool grows.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc(rdma: &'r Rdma) -> Option<Self> {
        let device = rdma.device();
        let node = device.numa_node();
        if rdma.max_send_sges() == 0 {
            // No SGE for the header: the transport cannot send at all.
            return None;
        }
        let l = layouts(rdma)?;
        let buf_len = u32::try_from(l.2.size()).ok()?;
        let c = ctxt_of_ledger(kmalloc(l.0, true, node)?.cast::<Ledger>().as_ptr());
        // SAFETY: `c` is inside a zeroed allocation of `l.0` that only this
        // thread knows (the ledger, the C struct, its SGEs), and all-zero
        // is a valid `svc_rdma_send_ctxt` (integers, null pointers, empty
        // unions): ours to initialise in place. The reference ends before
        // the ctxt is listed, where other CPUs may read it.
        let cr = unsafe { &mut *c };
        // The two other buffers are recorded as soon as they are had, so
        // that a failure frees what the ctxt records.
        cr.sc_pages = kmalloc(l.1, true, node).map_or(null_mut(), |p| p.cast().as_ptr());
        // Zeroed: `header_buf` hands it out as initialised bytes (it is
        // allocated once per ctxt, so this costs nothing per reply).
        let buffer = kmalloc(l.2, true, node);
        cr.sc_xprt_buf = buffer.map_or(null_mut(), |b| b.cast().as_ptr());
        let mapping = match buffer {
            Some(b) if !cr.sc_pages.is_null() => {
                // SAFETY: `b` is `l.2.size()` bytes of the direct map
                // (kmalloc), freed only after the mapping is undone (by
                // `free`, or by the drop below when the ctxt is not made).
                unsafe {
                    device
                        .dma()
                        .map_single(b, l.2.size(), DataDirection::ToDevice)
                }
                .ok()
            }
            _ => None,
        };
        let Some(mapping) = mapping else {
            // SAFETY: allocated above with `l`, not listed, not mapped.
            unsafe { free_memory(c, &l) };
            return None;
        };
        // SAFETY: the ledger in front of our new ctxt, zeroed, only ours.
        unsafe { (*ledger_ptr(c)).xprt_buf_len = buf_len };
        rdma.new_send_cid(&mut cr.sc_cid);
        cr.sc_rdma = rdma.as_ptr();
        // The slots allocated above (`serv_maxpages` when `layouts` read it).
        cr.sc_maxpages = l.1.size() / size_of::<*mut sys::page>();
        cr.sc_send_wr.next = null_mut();
        // Writes the `wr_cqe` member of the WR's id union, as C does (the
        // union's other member, `wr_id`, is never read). Through the
        // union's address, where every member of a C union starts: the same
        // whether bindgen made it a Rust `union` (as in a kernel crate that
        // has the RDMA headers) or a struct of `__BindgenUnionField`s.
        let wr_cqe = addr_of_mut!(cr.sc_send_wr.__bindgen_anon_1).cast::<*mut sys::ib_cqe>();
        // SAFETY: the union of our own, not yet posted, WR.
        unsafe { wr_cqe.write(addr_of_mut!(cr.sc_cqe)) };
        cr.sc_send_wr.sg_list = addr_of_mut!(cr.sc_sges).cast();
        cr.sc_send_wr.send_flags = sys::ib_send_flags_IB_SEND_SIGNALED as c_int;
        // SAFETY: initialises the ctxt's own, not yet used, list head.
        unsafe { sys::INIT_LIST_HEAD(addr_of_mut!(cr.sc_write_info_list)) };
        // SAFETY: initialises the ctxt's own `xdr_buf` over its header
        // buffer, `l.2.size()` bytes allocated above.
        unsafe {
            sys::rs_xdr_buf_init(
                addr_of_mut!(cr.sc_hdrbuf),
                cr.sc_xprt_buf.cast(),
                l.2.size(),
            )
        };
        // INVARIANT: allocated by `alloc` with its ledger and the
        // transport's SGE count; `sc_rdma` set; SGE 0 gets the header
        // buffer's mapping just below, before the ctxt is handed out; no
        // payload SGE (`num_sge` 0); the header buffer zeroed; only ours.
        let mut this = Self(NonNull::new(c)?, PhantomData);
        let lkey = rdma.local_dma_lkey();
        for sge in this.sges_mut() {
            sge.lkey = lkey;
        }
        if let Some(sge0) = this.sges_mut().first_mut() {
            // The header's mapping belongs to the ctxt from here: `free`
            // undoes it.
            sge0.addr = mapping.into_raw().addr;
            sge0.length = buf_len;
        }
        // SAFETY: a new ctxt, not yet listed.
        unsafe { ledger_list(c) };
        Some(this)
    }

    /// The SGE list: every ctxt of a transport has `sc_max_send_sges`.
    pub(crate) fn sges(&self) -> &[sys::ib_sge] {
        let n = self.rdma().max_send_sges();
        // SAFETY: `n` SGEs follow the struct (type invariant).
        unsafe { core::slice::from_raw_parts(addr_of!((*self.as_ptr()).sc_sges).cast(), n) }
    }

    /// The SGE list, to fill in. Private: SGE 0 and `1..num_sge` carry
    /// mappings that release undoes (type invariant); only `alloc` and
    /// [`Self::add_payload_sge`] write them.
    fn sges_mut(&mut self) -> &mut [sys::ib_sge] {
        let n = self.rdma().max_send_sges();
        // SAFETY: `n` SGEs follow the struct (type invariant), exclusively
        // ours.
        unsafe { core::slice::from_raw_parts_mut(addr_of_mut!((*self.as_ptr()).sc_sges).cast(), n) }
    }

    /// Prepares a ctxt taken from the pool for a new reply: an empty
    /// header stream, no chunk Writes, no payload SGEs, no pages, a chain
    /// of the Send alone. Opcode, invalidation rkey and SGE lengths are
    /// left: every poster sets them.
    pub(crate) fn reset_for_reply(&mut self) {
        let rdma = self.rdma().as_ptr();
        let c = self.as_ptr();
        // SAFETY: fields of our ctxt that only its holder uses, written in
        // place (type invariant); the stream and header `xdr_buf` are the
        // ctxt's own, which `alloc` set up over its header buffer.
        unsafe {
            (*c).sc_hdrbuf.head[0].iov_len = 0;
            (*c).sc_hdrbuf.len = 0;
            sys::xdr_init_encode(
                addr_of_mut!((*c).sc_stream),
                addr_of_mut!((*c).sc_hdrbuf),
                (*c).sc_xprt_buf.cast(),
                null_mut(),
            )
        };
        // SAFETY: this ctxt's Reply chunk context, idle (the ctxt is held,
        // not posted), on its own transport.
        unsafe { sys::svc_rdma_cc_init(rdma, addr_of_mut!((*c).sc_reply_info.wi_cc)) };
        self.set_num_sge(0);
        self.set_page_count(0);
        // SAFETY: fields of our ctxt that only its holder uses, written in
        // place; the chain starts at the ctxt's own Send WR.
        unsafe {
            (*c).sc_cur_sge_no = 0;
            (*c).sc_sqecount = 1;
            (*c).sc_wr_chain = addr_of_mut!((*c).sc_send_wr);
        }
    }

    /// The layouts of the ctxt's allocations (as [`layouts`] gave them at
    /// allocation), from what the ctxt recorded: its transport's SGE
    /// count, `sc_maxpages`, its ledger's `xprt_buf_len`. Not [`layouts`]:
    /// at teardown the transport's server may be gone (`svc_xprt` holds no
    /// reference on it), and C's teardown never reads it either.
    fn own_layouts(&self) -> Option<(Layout, Layout, Layout)> {
        Some((
            ctxt_layout(self.rdma().max_send_sges())?,
            Layout::array::<*mut sys::page>(self.max_pages()).ok()?,
            Layout::from_size_align(self.header_buf_size(), align_of::<u64>()).ok()?,
        ))
    }

    /// Number of page slots (`sc_maxpages`).
    fn max_pages(&self) -> usize {
        // SAFETY: a field of our live ctxt, read in place; written only at
        // allocation.
        unsafe { (*self.as_ptr()).sc_maxpages }
    }

    /// The header buffer's address (`sc_xprt_buf`).
    fn xprt_buf(&self) -> *mut u8 {
        // SAFETY: a field of our live ctxt, read in place; written only at
        // allocation (type invariant).
        unsafe { (*self.as_ptr()).sc_xprt_buf.cast() }
    }

    /// Length of the transport header buffer (`sc_max_req_size` when the
    /// ctxt was allocated).
    pub(crate) fn header_buf_len(&self) -> u32 {
        // SAFETY: the ledger in front of the ctxt (type invariant), whose
        // `xprt_buf_len` nobody writes after allocation (its invariant).
        unsafe { (*ledger_ptr(self.as_ptr())).xprt_buf_len }
    }

    /// [`Self::header_buf_len`] in bytes as a slice length.
    pub(crate) fn header_buf_size(&self) -> usize {
        usize::from_safe_cast(self.header_buf_len())
    }

    /// The transport header buffer (`sc_max_req_size` bytes).
    pub(crate) fn header_buf(&mut self) -> &mut [u8] {
        let len = self.header_buf_size();
        // SAFETY: `sc_xprt_buf` is the ctxt's buffer of its ledger's
        // `xprt_buf_len` bytes (type invariant), exclusively ours.
        unsafe { core::slice::from_raw_parts_mut(self.xprt_buf(), len) }
    }

    /// The header buffer, and a handle for tracing the ctxt while the
    /// buffer is borrowed: the buffer is an allocation of its own, apart
    /// from the struct the events read.
    pub(crate) fn header_buf_traced(&mut self) -> (&mut [u8], CtxtTracer<'_>) {
        let tracer = CtxtTracer(self.0, PhantomData);
        let len = self.header_buf_size();
        // SAFETY: `sc_xprt_buf` is the ctxt's buffer of its ledger's
        // `xprt_buf_len` bytes (type invariant), exclusively ours, and not part of the
        // struct `tracer` lets events read.
        let buf = unsafe { core::slice::from_raw_parts_mut(self.xprt_buf(), len) };
        (buf, tracer)
    }

    /// Length of the header built so far.
    pub(crate) fn header_len(&self) -> u32 {
        // SAFETY: a field of our live ctxt that only its holder writes,
        // read in place.
        unsafe { (*self.as_ptr()).sc_hdrbuf.len }
    }

    /// Records a header of `len` bytes in `sc_hdrbuf`/`sc_stream`, as C's
    /// `xdr_reserve_space` calls leave them. A length past the buffer is
    /// cut to it.
    pub(crate) fn commit_header(&mut self, len: usize) {
        let len = len.min(self.header_buf_size());
        let end = self.xprt_buf().wrapping_add(len).cast();
        let c = self.as_ptr();
        // SAFETY: fields of our ctxt that only its holder uses, written in
        // place (type invariant).
        unsafe {
            (*c).sc_hdrbuf.head[0].iov_len = len;
            (*c).sc_hdrbuf.len = u32::try_from(len).unwrap_or(u32::MAX);
            (*c).sc_stream.p = end;
        }
    }

    /// Number of SGEs the Send carries (`num_sge`).
    pub(crate) fn num_sge(&self) -> usize {
        usize::try_from(self.num_sge_raw()).unwrap_or(0)
    }

    /// `num_sge` as C has it. A plain read: the holder is its only writer.
    /// The ledger's record of which payload SGEs hold buffer mappings
    /// (see `Ledger::single_sges`).
    fn single_sges(&self) -> u64 {
        // SAFETY: the ledger in front of our live ctxt; the mask is written
        // only by the ctxt's holder, which we are.
        unsafe { (*ledger_ptr(self.as_ptr())).single_sges }
    }

    fn num_sge_raw(&self) -> c_int {
        // SAFETY: a field of our live ctxt, read in place (the census
        // reads it too, but only the holder writes it).
        unsafe { (*self.as_ptr()).sc_send_wr.num_sge }
    }

    /// SGE 0, the header's.
    fn header_sge(&self) -> &sys::ib_sge {
        // SAFETY: every ctxt has at least one SGE (type invariant).
        unsafe { &*addr_of!((*self.as_ptr()).sc_sges).cast::<sys::ib_sge>() }
    }

    /// Starts the SGE list with the header alone, `hdr_len` bytes. Payload
    /// SGEs mapped before are unmapped, not forgotten (the RDMA_ERROR's
    /// path, where a reply may have been mapped).
    pub(crate) fn set_header_sge(&mut self, hdr_len: u32) {
        if self.num_sge_raw() > 1 {
            self.unmap_payload_sges();
        }
        self.set_header_sge_unmapped(hdr_len);
    }

    /// [`Self::set_header_sge`] for a ctxt that holds no payload mapping:
    /// `map_reply_msg`, before its mapper runs (with a pulled-up reply,
    /// the reply behind the header too). On a ctxt that held some it would
    /// forget them, a leak, not a fault: the per-reply path does not pay
    /// for the check (measured: 7 instructions per reply, the test and the
    /// register it takes, past the cost gate's margin for pulled-up
    /// replies). A length past the header buffer is cut to it: the device
    /// reads SGE 0, and must not read past the buffer.
    #[inline]
    pub(crate) fn set_header_sge_unmapped(&mut self, hdr_len: u32) {
        let hdr_len = hdr_len.min(self.header_buf_len());
        let p = self.as_ptr();
        // SAFETY: exclusively ours, and it has at least one SGE (type
        // invariant).
        unsafe { (*addr_of_mut!((*p).sc_sges).cast::<sys::ib_sge>()).length = hdr_len };
        self.set_num_sge(1);
    }

    /// Undoes the payload mappings (SGEs `1..num_sge`), if any, keeping
    /// the header's. Cold: for a caller that starts the SGE list over after
    /// mapping payload, and for a failed reply, whose memory its owner may
    /// free before the ctxt is released.
    #[cold]
    #[inline(never)]
    pub(crate) fn unmap_payload_sges(&mut self) {
        // `num_sge` counts only SGEs that were mapped; never past the array.
        let mapped = self.num_sge().min(self.rdma().max_send_sges());
        if mapped <= 1 {
            return;
        }
        let payload = self.sges().get(1..mapped).unwrap_or_default();
        // SAFETY: SGEs `1..num_sge` hold live payload mappings (type
        // invariant), which no posted WR uses: a held ctxt is not posted;
        // the ledger's mask says which are buffer mappings.
        unsafe { unmap_payload(self.rdma().device(), payload, self.single_sges()) };
        // INVARIANT: only SGE 0, the header's, is mapped now.
        self.set_num_sge(1);
    }

    /// Writes `num_sge` (`WRITE_ONCE`): the [`census`] reads it unlocked,
    /// from another CPU, while the ctxt's holder changes it.
    fn set_num_sge(&mut self, n: i32) {
        let c = self.as_ptr();
        // SAFETY: a field of our ctxt, written as `WRITE_ONCE`.
        unsafe { core::ptr::write_volatile(addr_of_mut!((*c).sc_send_wr.num_sge), n) };
    }

    /// Writes `sc_page_count` (`WRITE_ONCE`), for the same reason.
    fn set_page_count(&mut self, n: c_int) {
        let c = self.as_ptr();
        // SAFETY: a field of our ctxt, written as `WRITE_ONCE`.
        unsafe { core::ptr::write_volatile(addr_of_mut!((*c).sc_page_count), n) };
    }

    /// Test builds (mutations `leak_on_error`, `leak_on_post_error`) only:
    /// drops the last payload SGE from `num_sge`, so that its mapping is
    /// never undone: the leak the DMA-mapped test mode must catch.
    #[cfg(rpcrdma_leak_mutation)]
    pub(crate) fn forget_last_payload_sge(&mut self) {
        let n = self.num_sge_raw();
        if n > 1 {
            self.set_num_sge(n - 1);
        }
    }

    /// Stores a payload mapping in the next SGE, the one `num_sge` counts
    /// to, where `release_io` will undo it, and counts it: SGEs
    /// `1..num_sge` are always the payload mappings, whoever calls this
    /// (no caller picks the index). Gives the mapping back when the array
    /// is full. `sc_cur_sge_no` follows, as in C: the index of the last
    /// SGE used.
    pub(crate) fn add_payload_sge<'m>(&mut self, mapping: Mapping<'m>) -> Result<(), Mapping<'m>> {
        let n = self.num_sge_raw();
        let Ok(length) = u32::try_from(mapping.len()) else {
            return Err(mapping);
        };
        // The kind of payload SGE `n` is bit `n - 1` of the ledger's mask;
        // an SGE past its 64 bits cannot be recorded (no device has so many
        // Send SGEs).
        let Some(bit) = n
            .checked_sub(1)
            .and_then(|b| u32::try_from(b).ok())
            .and_then(|b| 1u64.checked_shl(b))
        else {
            return Err(mapping);
        };
        let Some(sge) = usize::try_from(n)
            .ok()
            .and_then(|i| self.sges_mut().get_mut(i))
        else {
            return Err(mapping);
        };
        // The ctxt owns the mapping from here: `release_io` (or
        // `unmap_payload_sges`) undoes it, with the unmap its kind takes.
        let raw = mapping.into_raw();
        sge.addr = raw.addr;
        sge.length = length;
        let ledger = ledger_ptr(self.as_ptr());
        // SAFETY: the ledger in front of our ctxt; its mask is written only
        // by the ctxt's holder, which we are, and read by its release.
        unsafe {
            if raw.kind == MapKind::Single {
                (*ledger).single_sges |= bit;
            } else {
                (*ledger).single_sges &= !bit;
            }
        }
        // SAFETY: a field of our ctxt that only its holder uses, written
        // in place.
        unsafe { (*self.as_ptr()).sc_cur_sge_no = n };
        // Never wraps: `n` indexes the SGE array.
        self.set_num_sge(n.wrapping_add(1));
        Ok(())
    }

    /// Sends the WR as Send With Invalidate of `inv_rkey`, or as plain
    /// Send when it is 0.
    pub(crate) fn set_send_opcode(&mut self, inv_rkey: u32) {
        let c = self.as_ptr();
        // Field by field: `sc_send_wr` holds `num_sge`, which the census
        // reads, so no reference to the whole WR.
        // SAFETY: the place of a field of our live ctxt; no reference made.
        let wr = unsafe { addr_of_mut!((*c).sc_send_wr) };
        if inv_rkey != 0 {
            // SAFETY: fields of our ctxt's Send WR that only its holder
            // uses, written in place; `ex` is a union of two `u32`s, and
            // writing one is always valid. `invalidate_rkey` through the
            // union's address, where every member of a C union starts
            // (however bindgen shaped the union: see `Ctxt::alloc`).
            unsafe {
                (*wr).opcode = sys::ib_wr_opcode_IB_WR_SEND_WITH_INV;
                addr_of_mut!((*wr).ex).cast::<u32>().write(inv_rkey);
            }
        } else {
            // SAFETY: a field of our ctxt's Send WR that only its holder
            // uses, written in place.
            unsafe { (*wr).opcode = sys::ib_wr_opcode_IB_WR_SEND };
        }
    }

    /// Drops any chunk Writes from the chain: the Send alone goes.
    pub(crate) fn send_only(&mut self) {
        let c = self.as_ptr();
        // SAFETY: fields of our ctxt that only its holder uses, written in
        // place; the chain starts at the ctxt's own Send WR.
        unsafe {
            (*c).sc_wr_chain = addr_of_mut!((*c).sc_send_wr);
            (*c).sc_sqecount = 1;
        }
    }

    /// SQ entries the chain needs (`sc_sqecount`).
    pub(crate) fn sqecount(&self) -> i32 {
        // SAFETY: a field of our live ctxt that only its holder writes,
        // read in place.
        unsafe { (*self.as_ptr()).sc_sqecount }
    }

    /// The completion ID, for tracepoints.
    pub(crate) fn cid(&self) -> &sys::rpc_rdma_cid {
        // SAFETY: a field of our live ctxt, written only at allocation: a
        // shared reference to it alone, for as long as we hold the ctxt.
        unsafe { &*addr_of!((*self.as_ptr()).sc_cid) }
    }

    /// Reply pages held (`sc_page_count`).
    pub(crate) fn page_count(&self) -> usize {
        usize::try_from(self.page_count_raw()).unwrap_or(0)
    }

    /// `sc_page_count` as C has it. A plain read: the holder is its only
    /// writer.
    fn page_count_raw(&self) -> c_int {
        // SAFETY: a field of our live ctxt, read in place (the census
        // reads it too, but only the holder writes it).
        unsafe { (*self.as_ptr()).sc_page_count }
    }

    /// Moves the reply pages of `rqst` into the ctxt's page slots
    /// (`sc_maxpages` of them), to be released with the ctxt, and counts
    /// them. `None`, with nothing moved, if they do not fit or the ctxt
    /// holds pages already (a second move would take the NULL slots the
    /// first one left). The slots and their count are never handed out:
    /// the first `sc_page_count` slots must hold page references, which
    /// the release puts.
    pub(crate) fn take_reply_pages(&mut self, rqst: &mut Rqst) -> Option<()> {
        if self.page_count() != 0 {
            return None;
        }
        let c = self.as_ptr();
        // SAFETY: `sc_pages` holds `sc_maxpages` slots allocated with the
        // ctxt (type invariant), exclusively ours.
        let slots = unsafe { core::slice::from_raw_parts_mut((*c).sc_pages, (*c).sc_maxpages) };
        let moved = rqst.take_reply_pages(slots)?;
        // At most `sc_maxpages`, a C int's worth; checked all the same.
        // INVARIANT: the first `moved` slots hold the references moved in.
        self.set_page_count(c_int::try_from(moved).ok()?);
        Some(())
    }

    /// Undoes the chunk Writes built for this reply: their R/W contexts
    /// (MRs, and DMA mappings of the reply's pages) go back to the
    /// transport, the Write chunk infos are freed. None of them is posted
    /// (type invariant): for a reply that will not be sent, whose pages
    /// the request frees on return, and for the ctxt's release. The two
    /// releases of `svc_rdma_rw.c` do nothing for a ctxt without Write
    /// chunk infos or Reply chunk WRs (their own first tests, which most
    /// replies meet): they are called only when there is work, and a
    /// second call finds none.
    #[inline(always)]
    pub(crate) fn release_chunk_writes(&mut self) {
        let p = self.as_ptr();
        // SAFETY: fields of our live ctxt that only its holder uses (the
        // chain is not posted: type invariant), read in place.
        let (has_write_infos, has_reply_writes) = unsafe {
            (
                !core::ptr::eq(
                    (*p).sc_write_info_list.next,
                    addr_of!((*p).sc_write_info_list),
                ),
                (*p).sc_reply_info.wi_cc.cc_sqecount != 0,
            )
        };
        if !(has_write_infos || has_reply_writes) {
            return;
        }
        if self.rdma().qp().is_null() {
            // Out of line: only a ctxt reclaimed at teardown gets here.
            self.release_chunk_writes_qp_destroyed(has_write_infos, has_reply_writes);
            return;
        }
        self.release_chunk_writes_now(has_write_infos, has_reply_writes);
    }

    /// [`Self::release_chunk_writes`] once teardown destroyed the QP: a
    /// ctxt released then (a completion that came after the final drain,
    /// or a reclaimed one) still lists its Write chunk infos. Teardown
    /// undid their R/W contexts while the QP lived
    /// (`release_unreturned_chunk_io`), so the releases touch no QP and
    /// only free the infos. Were any R/W context left (a caller that
    /// breaks that order), it could not be undone any more
    /// (`rdma_rw_ctx_destroy` needs the QP): it is left allocated and
    /// mapped, with a warning.
    #[cold]
    #[inline(never)]
    fn release_chunk_writes_qp_destroyed(&mut self, has_write_infos: bool, has_reply_writes: bool) {
        // SAFETY: our live ctxt, whose chunk lists only its holder uses
        // (type invariant).
        if unsafe { ledger::chunk_rw_ctxts_undone(self.as_ptr()) } {
            self.release_chunk_writes_now(has_write_infos, has_reply_writes);
        } else {
            kernel::pr_warn!("send ctxt: chunk Writes released after the QP was destroyed: left\n");
        }
    }

    /// The two releases of `svc_rdma_rw.c`, for the chunk Writes the ctxt
    /// has: on a live QP, or on a destroyed one once every R/W context was
    /// undone (their lists are empty, so no QP is touched).
    #[inline(always)]
    fn release_chunk_writes_now(&mut self, has_write_infos: bool, has_reply_writes: bool) {
        let rdma = self.rdma().as_ptr();
        let p = self.as_ptr();
        if has_write_infos {
            // SAFETY: nothing of the chain is posted (type invariant), so
            // the Write chunks' R/W contexts are idle; the infos are the
            // ctxt's own, and the release leaves the list empty.
            unsafe { sys::svc_rdma_write_chunk_release(rdma, p) };
        }
        if has_reply_writes {
            // SAFETY: nothing of the chain is posted (type invariant), so
            // the Reply chunk's R/W contexts are idle; the release leaves
            // their list empty.
            unsafe { sys::svc_rdma_reply_chunk_release(rdma, p) };
        }
    }

    /// `svc_rdma_prepare_write_list`: builds the RDMA Write WRs that carry
    /// the result payloads of `xdr` to the Call's Write chunks, chained
    /// before the ctxt's Send, with DMA mappings of `xdr`'s pages. Returns
    /// a negative errno on failure.
    ///
    /// # Safety
    ///
    /// - The pages of `xdr` stay allocated until those mappings are undone:
    ///   until the ctxt is released (its pages moved into it) once the
    ///   Writes may be posted, or until [`Self::release_chunk_writes`] for
    ///   a reply that is given up.
    /// - The transport's QP is not destroyed (the C code uses it): the
    ///   transport was seen alive ([`Rdma::is_dead`] false) on this
    ///   thread, as teardown marks it dead before it destroys the QP.
    pub(crate) unsafe fn prepare_write_list(&mut self, rctxt: &RecvCtxt, xdr: &XdrBuf) -> c_int {
        // C's loop over the Write chunks does nothing for a Call without
        // any, most of them: no call then.
        if rctxt.write_pcl().is_empty() {
            return 0;
        }
        // SAFETY: the live transport, with its QP (`# Safety`), a Call,
        // our ctxt and the reply, all valid for the call; the pages'
        // lifetime is the caller's (`# Safety`).
        unsafe {
            sys::svc_rdma_prepare_write_list(
                self.rdma().as_ptr(),
                rctxt.as_ptr(),
                self.as_ptr(),
                xdr.as_ptr(),
            )
        }
    }

    /// `svc_rdma_prepare_reply_chunk`: builds the RDMA Write WRs that carry
    /// the reply through the Call's Reply chunk, with DMA mappings of
    /// `xdr`'s pages. Returns the bytes it will write, or a negative errno.
    ///
    /// # Safety
    ///
    /// As for [`Self::prepare_write_list`]: the pages of `xdr` outlive the
    /// mappings made here, and the transport's QP is not destroyed.
    pub(crate) unsafe fn prepare_reply_chunk(
        &mut self,
        write_pcl: &Pcl,
        reply_pcl: &Pcl,
        xdr: &XdrBuf,
    ) -> c_int {
        // SAFETY: the live transport, with its QP, the Call's lists, our
        // ctxt and the reply, all valid for the call; the pages' lifetime
        // is the caller's (`# Safety`).
        unsafe {
            sys::svc_rdma_prepare_reply_chunk(
                self.rdma().as_ptr(),
                write_pcl.as_ptr(),
                reply_pcl.as_ptr(),
                self.as_ptr(),
                xdr.as_ptr(),
            )
        }
    }

    /// The ledger's state word.
    fn state_ptr(&self) -> *mut i32 {
        let ledger = ledger_ptr(self.as_ptr());
        // SAFETY: the ledger precedes the ctxt in its allocation (type
        // invariant); only its field's address is taken.
        unsafe { (*ledger).state.get() }
    }

    /// Where the ledger says the ctxt is (`READ_ONCE`); `None` for a value
    /// no state has.
    pub(crate) fn state(&self) -> Option<CtxtState> {
        // SAFETY: the ledger's state word (`Ledger` invariants), read as
        // `READ_ONCE`.
        CtxtState::from_repr(unsafe { core::ptr::read_volatile(self.state_ptr()) })
    }

    /// Records where the ctxt is going. Private to the layer: the state
    /// word is what teardown trusts to tell whether anybody holds a ctxt
    /// (`queue_unreturned`), so only the layer's own transitions write it.
    fn set_state(&self, state: CtxtState) {
        // SAFETY: the ledger's state word, which only the ctxt's holder
        // (we) writes (`Ledger` invariants); volatile, as `WRITE_ONCE`.
        unsafe { core::ptr::write_volatile(self.state_ptr(), state as i32) };
    }

    /// `svc_rdma_send_ctxt_put` (also what dropping a [`Ctxt`] does):
    /// queues the ctxt on its transport's release list
    /// (`sc_send_release_list`) for the next drain, and on the
    /// empty→non-empty transition enqueues the transport (`XPT_DATA`), so
    /// that an nfsd thread drains the list even on an idle connection.
    /// Callable from the Send completion.
    ///
    /// Only an owned ctxt is put. Any other is refused, its state returned
    /// and nothing touched: a second put of a ctxt (queueing it again would
    /// corrupt the list it is on), and a put of a posted one, which belongs
    /// to its Send completion (releasing it would unmap what the device may
    /// still read, and the completion would queue it a second time). The
    /// completion's own put is [`SentCtxt::put`].
    #[inline]
    pub(crate) fn try_put(self) -> Result<(), CtxtState> {
        let c = ManuallyDrop::new(self).0;
        // SAFETY: we owned the ctxt and give it up here.
        unsafe { Self::queue_for_release(c) }
    }

    /// The work of [`Self::try_put`].
    ///
    /// # Safety
    ///
    /// `c` is a ctxt as the type invariant says, whose owner gives it up.
    #[inline]
    unsafe fn queue_for_release(c: NonNull<sys::svc_rdma_send_ctxt>) -> Result<(), CtxtState> {
        // The ctxt is given away below: only its methods are used, never
        // its drop.
        let this = ManuallyDrop::new(Self(c, PhantomData));
        let state = this.state_ptr();
        // SAFETY: the ledger's state word (`Ledger` invariants), read as
        // `READ_ONCE`: a ctxt put twice may be held by someone else now.
        let was = unsafe { core::ptr::read_volatile(state) };
        if was != CtxtState::Owned as i32 {
            // A value no state has reads as the state nothing may put.
            return Err(CtxtState::from_repr(was).unwrap_or(CtxtState::Free));
        }
        ManuallyDrop::into_inner(this).queue_unchecked(true);
        Ok(())
    }

    /// Queues the ctxt for release (the work of a put once its state
    /// allows it): marks it queued, adds it to its transport's release
    /// list, and, if `enqueue`, enqueues the transport on the
    /// empty→non-empty transition. Every put enqueues; teardown, which
    /// drains the list itself, must not (the transport is being freed).
    #[inline]
    fn queue_unchecked(self, enqueue: bool) {
        let this = ManuallyDrop::new(self);
        // SAFETY: as the holder that puts it, we write the state word.
        unsafe { core::ptr::write_volatile(this.state_ptr(), CtxtState::Queued as i32) };
        // Live for `'r` (`Ctxt` invariant), after the ctxt is given away:
        // not a borrow of the ctxt.
        let rdma = this.rdma();
        // SAFETY: the release list of the ctxt's own transport.
        if unsafe { rdma.released_ctxts().push(ManuallyDrop::into_inner(this)) } && enqueue {
            rdma.set_data_and_enqueue();
        }
    }

    /// Posts the WR chain with `post` (`ib_post_send` or a stand-in), the
    /// Send's completion to be handled by `H`. On success the ctxt belongs
    /// to the completion (marked [`CtxtState::Posted`] before posting,
    /// since the completion may run before `post` returns). `post` first
    /// makes the header SGE's CPU writes visible to the device (C's
    /// `ib_dma_sync_single_for_device` in `svc_rdma_post_send`).
    pub(crate) fn post<H: SendCompletion>(self, post: Poster) -> Result<(), PostFailure<'r>> {
        let rdma = self.rdma();
        let qp = rdma.qp();
        if qp.is_null() {
            // The QP was destroyed at teardown (`Rdma` invariant).
            return Err(PostFailure::NotPosted {
                ret: ENOTCONN.to_errno(),
                ctxt: self,
            });
        }
        let hdr: *const sys::ib_sge = self.header_sge();
        let c = self.as_ptr();
        // SAFETY: the ctxt is ours until posted, and `sc_cqe` is carried
        // only by its Send WR (set at allocation), which is posted below,
        // by this function alone, and completes once: what
        // `SendDone::done` requires of the ctxt it is given. The ctxt is
        // freed only after its completions have run (`Rdma` invariant).
        unsafe { cq::set_done::<SendDone<H>>(self.0.cast::<CtxtObject>()) };
        // SAFETY: exclusively ours until posted.
        let first_wr = unsafe { (*c).sc_wr_chain.cast_const() };
        self.set_state(CtxtState::Posted);
        let ctxt = ManuallyDrop::new(self);
        let mut bad_wr: *const sys::ib_send_wr = first_wr;
        // SAFETY: `post` behaves as `ib_post_send` (`Poster` invariant),
        // given a complete chain of our ctxt on its transport's QP and its
        // header SGE, mapped on that QP's device since allocation; from
        // here the device and the completion may use the ctxt.
        let ret = unsafe { (post.0)(qp, hdr, first_wr, &mut bad_wr) };
        if ret == 0 {
            return Ok(());
        }
        // The Send is the last WR, and it was not posted (the post failed
        // at or before it), so no completion will take the ctxt: it is ours
        // again.
        let ctxt = ManuallyDrop::into_inner(ctxt);
        if bad_wr == first_wr {
            ctxt.set_state(CtxtState::Owned);
            return Err(PostFailure::NotPosted { ret, ctxt });
        }
        // Parked from here, before anyone holds the `PartlyPosted`: one
        // that is forgotten instead of dropped still leaves the ctxt where
        // teardown finds it, to release its R/W contexts and reclaim it.
        ctxt.set_state(CtxtState::Orphan);
        // Count the unposted tail. A driver that reports no bad WR is taken
        // the safe way: something may be in flight.
        let mut unposted = 0i32;
        let mut wr = bad_wr;
        while !wr.is_null() {
            unposted = unposted.saturating_add(1);
            // SAFETY: `wr` is a WR of our chain, which is null-terminated.
            wr = unsafe { (*wr).next };
        }
        Err(PostFailure::Partial {
            ret,
            ctxt: PartlyPosted(ManuallyDrop::new(ctxt)),
            unposted,
        })
    }
}

impl Drop for Ctxt<'_> {
    /// Puts the ctxt ([`Ctxt::try_put`]), so that every early return of
    /// the Send path releases the reply's resources. A refused put is
    /// reported once with a warning. Out of line: it ends every early
    /// return, and the hot put (the Send completion's) has its own copy.
    #[inline(never)]
    fn drop(&mut self) {
        // SAFETY: the ctxt is ours and `drop` gives it up.
        if let Err(was) = unsafe { Self::queue_for_release(self.0) } {
            report_refused_put(was);
        }
    }
}

/// Reports a put that [`Ctxt::try_put`] refused: an error, and a warning
/// with a backtrace the first time. Out of line: never expected to run.
#[cold]
#[inline(never)]
pub(crate) fn report_refused_put(was: CtxtState) {
    kernel::pr_err!("send ctxt put while {}: ignored\n", was.name());
    kernel::do_once_lite! { kernel::warn_on!(true); }
}

/// A ctxt none of whose WRs is in flight any more, so that its I/O
/// resources can be released and its memory freed.
///
/// # Invariants
///
/// No WR of the ctxt's chain is posted and not completed: its completion
/// ran, it was never posted, or its QP is destroyed and its Send CQ's
/// poller stopped ([`SendQueueGone`]).
pub(crate) struct IdleCtxt<'r>(Ctxt<'r>);

impl<'r> IdleCtxt<'r> {
    /// Asserts that nothing of `ctxt` is in flight.
    ///
    /// # Safety
    ///
    /// As the type invariant says.
    pub(crate) unsafe fn assume(ctxt: Ctxt<'r>) -> Self {
        Self(ctxt)
    }

    /// The ctxt.
    pub(crate) fn ctxt(&self) -> &Ctxt<'r> {
        &self.0
    }

    /// Back to a plain owned ctxt.
    pub(crate) fn into_ctxt(self) -> Ctxt<'r> {
        self.0
    }

    /// The I/O resources of a sent (or abandoned) reply, released: the
    /// chunks' R/W contexts, the payload mappings (each first shown to
    /// `trace_unmap`), the reply pages. SGE 0, the header, stays mapped.
    /// The SGE and page counts are zeroed, so that the ctxt holds nothing
    /// in the [`census`].
    #[inline(always)]
    pub(crate) fn release_io(
        &mut self,
        mut trace_unmap: impl FnMut(&sys::rpc_rdma_cid, &sys::ib_sge),
    ) {
        let ctxt = &mut self.0;
        // Nothing of the chain is in flight (type invariant).
        ctxt.release_chunk_writes();
        // `num_sge` counts only SGEs that were mapped; never past the array.
        let mapped = ctxt.num_sge().min(ctxt.rdma().max_send_sges());
        if mapped > 1 {
            let payload = ctxt.sges().get(1..mapped).unwrap_or_default();
            // Each SGE's event, then one call that unmaps them all: the
            // events C fires, in its order, without a call per page.
            for sge in payload {
                trace_unmap(ctxt.cid(), sge);
            }
            // SAFETY: SGEs `1..num_sge` hold live payload mappings (`Ctxt`
            // invariant), unused now (type invariant), of the kinds the
            // ledger's mask records.
            unsafe { unmap_payload(ctxt.rdma().device(), payload, ctxt.single_sges()) };
        }
        if ctxt.page_count() > 0 {
            let pages = sys::release_pages_arg {
                // SAFETY: a field of our live ctxt, read in place; written
                // only at allocation.
                pages: unsafe { (*ctxt.as_ptr()).sc_pages },
            };
            // SAFETY: the first `sc_page_count` slots hold page references
            // moved in from the request; no I/O uses them any more. The
            // argument is C's transparent union, passed as its pointer.
            unsafe { sys::release_pages(pages, ctxt.page_count_raw()) };
        }
        // INVARIANT: no payload mapping and no page is held any more.
        ctxt.set_num_sge(0);
        ctxt.set_page_count(0);
    }

    /// Queues the ctxt on its transport's release list, as a put does but
    /// without enqueueing the transport: for teardown, which releases the
    /// list itself right after (the transport is being freed then, and
    /// must not go back on a queue).
    pub(crate) fn queue_at_teardown(self) {
        self.0.queue_unchecked(false);
    }

    /// Frees the ctxt: unlists it, undoes its header mapping, frees its
    /// buffers. Payload mappings or pages it still held would be leaked:
    /// free only released ctxts (those of the free list).
    pub(crate) fn free(self) {
        let ctxt = ManuallyDrop::new(self.0);
        let Some(l) = ctxt.own_layouts() else {
            return;
        };
        let sge0 = ctxt.header_sge().addr;
        // SAFETY: nothing of the ctxt is in flight (type invariant), so its
        // header mapping, made by `alloc` over the whole buffer (this raw
        // form: `map_single`, `ToDevice`), can go; the buffer is freed
        // after.
        unsafe { ctxt.rdma().device().unmap_raw(header_mapping(sge0, &l)) };
        let c = ctxt.as_ptr();
        // SAFETY: the ctxt was listed at its allocation and is ours.
        unsafe { ledger_unlist(c) };
        // SAFETY: the ctxt was allocated by `alloc` with these layouts
        // (what it recorded then); it is ours, unmapped, unlisted now, and
        // its memory is not used again.
        unsafe { free_memory(c, &l) };
    }
}

/// A handle to trace a [`Ctxt`] while its header buffer is borrowed.
///
/// # Invariants
///
/// Points to the ctxt it was taken from, borrowed for `'a`.
pub(crate) struct CtxtTracer<'a>(NonNull<sys::svc_rdma_send_ctxt>, PhantomData<&'a Ctxt<'a>>);

impl CtxtTracer<'_> {
    /// The C pointer, for the events (which read only its cid).
    pub(crate) fn as_ptr(&self) -> *const sys::svc_rdma_send_ctxt {
        self.0.as_ptr()
    }
}

/// The transport's ctxt lists and the lock of its free list.
impl Rdma {
    /// `sc_send_ctxts`: the pool's free list.
    pub(crate) fn free_ctxts(&self) -> &CtxtList {
        // SAFETY: the free list of this transport holds only its idle send
        // ctxts, linked by `sc_node`.
        unsafe { CtxtList::from_raw(addr_of_mut!((*self.as_ptr()).sc_send_ctxts)) }
    }

    /// `sc_send_release_list`: ctxts put back and not yet released.
    pub(crate) fn released_ctxts(&self) -> &CtxtList {
        // SAFETY: the release list of this transport holds only its queued
        // send ctxts, linked by `sc_node`.
        unsafe { CtxtList::from_raw(addr_of_mut!((*self.as_ptr()).sc_send_release_list)) }
    }

    /// Takes every ctxt queued for release: their Sends completed, or were
    /// never posted.
    pub(crate) fn take_released_ctxts(&self) -> impl Iterator<Item = IdleCtxt<'_>> {
        // SAFETY: nothing pops the release list: it is only added to and
        // emptied whole.
        let queued = unsafe { self.released_ctxts().take_all() };
        // SAFETY: a ctxt is queued only by a put, which the Send completion
        // makes once its chain is done, or an owner makes before posting or
        // after a post that posted nothing: none of them is in flight.
        queued.map(|c| unsafe { IdleCtxt::assume(c) })
    }

    /// Takes every ctxt of the free list at teardown: released, idle.
    /// Only at teardown (`drained`), because `llist_del_all` racing the
    /// locked `llist_del_first` of [`Self::pop_free_ctxt`] is the ABA case
    /// `llist.h` forbids.
    pub(crate) fn take_free_ctxts<'a>(drained: &Drained<'a>) -> impl Iterator<Item = IdleCtxt<'a>> {
        // SAFETY: nothing pops the free list at teardown (`Drained`
        // invariant).
        let free = unsafe { drained.rdma().free_ctxts().take_all() };
        // SAFETY: only released ctxts, none of whose WRs is in flight, are
        // put on the free list.
        free.map(|c| unsafe { IdleCtxt::assume(c) })
    }

    /// `sc_send_lock`: makes [`CtxtList::pop`] on the free list single
    /// consumer, as `llist_del_first` requires.
    pub(crate) fn send_lock(&self) -> &SpinLock<()> {
        // SAFETY: an initialised spinlock of this live transport.
        unsafe { SpinLock::from_raw(addr_of_mut!((*self.as_ptr()).sc_send_lock)) }
    }

    /// Takes an idle ctxt from the free list, owned by the caller.
    pub(crate) fn pop_free_ctxt(&self) -> Option<Ctxt<'_>> {
        // SAFETY: every consumer of the free list pops through here, under
        // `sc_send_lock`, but teardown's `take_free_ctxts`, which runs when
        // no request pops any more (its `# Safety`).
        let ctxt = unsafe { self.free_ctxts().pop(self.send_lock()) }?;
        ctxt.set_state(CtxtState::Owned);
        Some(ctxt)
    }

    /// Returns a released ctxt to the free list.
    ///
    /// # Safety
    ///
    /// `ctxt` is a ctxt of this transport.
    pub(crate) unsafe fn push_free_ctxt(&self, ctxt: IdleCtxt<'_>) {
        let ctxt = ctxt.into_ctxt();
        ctxt.set_state(CtxtState::Free);
        // SAFETY: the free list of the ctxt's own transport (`# Safety`),
        // and the ctxt is idle, owned by nobody once listed.
        unsafe { self.free_ctxts().push(ctxt) };
    }
}

#[cfg(rpcrdma_kunit)]
impl Ctxt<'_> {
    /// Marks the ctxt posted without posting it, for a test that plays a
    /// buggy caller holding a second handle.
    pub(crate) fn mark_posted_for_test(&self) {
        self.set_state(CtxtState::Posted);
    }

    /// The state of the ctxt at `p`, for a test that holds no [`Ctxt`]
    /// of it (`READ_ONCE`).
    ///
    /// # Safety
    ///
    /// `p` is a live ctxt of [`Ctxt::alloc`].
    pub(crate) unsafe fn state_of_raw(p: *mut sys::svc_rdma_send_ctxt) -> Option<CtxtState> {
        // SAFETY: the ledger in front of the live ctxt (`# Safety`).
        CtxtState::from_repr(unsafe { core::ptr::read_volatile((*ledger_ptr(p)).state.get()) })
    }

    /// Chains `n` stand-in chunk Write WRs at `first` before the ctxt's
    /// Send WR, as `svc_rdma_prepare_write_list` would, and counts them in
    /// its SQ entries.
    ///
    /// # Safety
    ///
    /// `first` points to `n` WRs (none when `n` is 0) that no one else
    /// uses, valid until the ctxt is freed.
    pub(crate) unsafe fn chain_writes_for_test(&mut self, first: *mut sys::ib_send_wr, n: usize) {
        let c = self.as_ptr();
        // SAFETY: the Send WR of our own ctxt (type invariant: exclusive).
        let mut next = unsafe { addr_of_mut!((*c).sc_send_wr) };
        for i in (0..n).rev() {
            // SAFETY: `i < n`, within the caller's WRs (`# Safety`).
            let w = unsafe { first.add(i) };
            // SAFETY: one of the caller's WRs, used by no one else.
            unsafe { (*w).next = next };
            next = w;
        }
        // SAFETY: fields of our own ctxt.
        unsafe {
            (*c).sc_wr_chain = next;
            (*c).sc_sqecount = i32::try_from(n).unwrap_or(i32::MAX).saturating_add(1);
        }
    }

    /// Whether `c` is on the list of all ctxts (the ledger's).
    pub(crate) fn is_listed_for_test(c: *mut sys::svc_rdma_send_ctxt) -> bool {
        let _guard = all_ctxts_lock().lock();
        // SAFETY: we hold the lock, and unlist nothing.
        unsafe { listed_ctxts() }.any(|(l, _)| l == c)
    }

    /// Lists again a ctxt that teardown left allocated and unlisted
    /// ([`abandon_unreturned`]), so that the stand-in's drop frees it.
    ///
    /// # Safety
    ///
    /// `c` is a live ctxt of a KUnit stand-in, allocated by [`Ctxt::alloc`]
    /// and unlisted since.
    pub(crate) unsafe fn relist_for_test(c: *mut sys::svc_rdma_send_ctxt) {
        // SAFETY: a live ctxt of `alloc`, not listed (`# Safety`).
        unsafe { ledger_list(c) };
    }

    /// Frees a ctxt of the KUnit stand-in transport `rdma`, wherever the
    /// test left it: the first still listed for it. False when none is
    /// left.
    ///
    /// # Safety
    ///
    /// The test of `rdma` is over: no [`Ctxt`], [`IdleCtxt`] or
    /// [`SentCtxt`] of it exists any more, and nothing of it is posted (the
    /// stand-in posts nothing).
    pub(crate) unsafe fn free_next_for_test(rdma: &Rdma) -> bool {
        let mut found = null_mut();
        {
            let _guard = all_ctxts_lock().lock();
            // SAFETY: we hold the lock; the one ctxt unlisted has been
            // yielded already.
            unsafe {
                if let Some((c, _)) = listed_ctxts().find(|(c, _)| (**c).sc_rdma == rdma.as_ptr()) {
                    sys::rs_list_del((*ledger_ptr(c)).link.get());
                    found = c;
                }
            }
        }
        let Some(ptr) = NonNull::new(found) else {
            return false;
        };
        // The sizes the ctxt recorded, as teardown takes them: not
        // `layouts`, which has none for a transport the test marked dead.
        // `ManuallyDrop`: a drop would put the ctxt back.
        let Some(l) = ManuallyDrop::new(Self(ptr, PhantomData)).own_layouts() else {
            return false;
        };
        // SAFETY: SGE 0 of a ctxt of `alloc` (every ctxt has one), which
        // nothing uses any more.
        let header = unsafe { (*addr_of!((*found).sc_sges).cast::<sys::ib_sge>()).addr };
        // SAFETY: the header buffer's mapping, made by `alloc` over the
        // whole buffer (this raw form: `map_single`, `ToDevice`); the ctxt
        // is unlisted and nothing uses it; the buffer is freed after.
        unsafe { rdma.device().unmap_raw(header_mapping(header, &l)) };
        // SAFETY: allocated by `alloc` for `rdma` (so with `l`), unlisted,
        // unmapped, not used again.
        unsafe { free_memory(found, &l) };
        true
    }
}

/// The raw form of a ctxt's header mapping at `addr`: `alloc` maps the
/// whole header buffer of `l` with `map_single` for `ToDevice`.
fn header_mapping(addr: u64, l: &(Layout, Layout, Layout)) -> RawMapping {
    RawMapping {
        addr,
        len: l.2.size(),
        dir: DataDirection::ToDevice,
        kind: MapKind::Single,
    }
}

/// Undoes the payload mappings stored in `sges` (a reply's SGEs past the
/// header's), in one call of the shim, which loops in C and returns at once
/// on a device without DMA (`rdma_rxe`, `siw`): page fragments with
/// `ib_dma_unmap_page`, kvecs (bit `i` of `single` set for `sges[i]`) with
/// `ib_dma_unmap_single`, as `Fragment::dma_map` made them, for the
/// payload's direction.
///
/// # Safety
///
/// Each of `sges` holds a live payload mapping made on `device` by
/// `Fragment::dma_map`, of the kind `single` records, and handed over with
/// `Mapping::into_raw`; no I/O uses them any more and nothing else undoes
/// them; their memory is still allocated.
unsafe fn unmap_payload(device: &Device, sges: &[sys::ib_sge], single: u64) {
    // SAFETY: live payload mappings of this device, of the kinds `single`
    // says, that no I/O uses any more (`# Safety`), read by the shim for
    // the call only.
    unsafe { sys::rs_ib_dma_unmap_pages(device.as_raw(), sges.as_ptr(), sges.len(), single) };
}
