// SPDX-License-Identifier: GPL-2.0
// Reimplements part of net/sunrpc/xprtrdma/svc_rdma_sendto.c (Linux 7.3,
// GPL-2.0 OR BSD-3-Clause); origin and licence: see svc_rdma_sendto_rs.rs.

//! [`Ctxt`]: an owned `struct svc_rdma_send_ctxt`, with its SGE list,
//! transport header buffer, reply pages and WR chain; [`CtxtList`] and
//! [`CtxtChain`]: the lock-free lists it moves between; [`Ledger`]: the
//! record of where it is, kept in front of the C struct; [`SendWc`]: the
//! work completion that hands a posted ctxt back; [`census`]: what the
//! ctxts hold, for the leak counters.
//!
//! The C struct is shared with `svc_rdma_rw.c` and
//! `svc_rdma_backchannel.c`, so its layout is C's; the ledger precedes it
//! and the SGE array follows it, in the same allocation.

use super::device::{DmaMapping, IbDevice};
use super::recv_ctxt::{Pcl, RecvCtxt};
use super::rqst::Rqst;
use super::xdr_buf::XdrBuf;
use super::xprt::{Drained, Rdma, SendQueueGone};
use crate::sys;
use core::alloc::Layout;
use core::marker::PhantomData;
use core::mem::{align_of, size_of, ManuallyDrop};
use core::ptr::{addr_of, addr_of_mut, null_mut, NonNull};
use kernel::alloc::allocator::Kmalloc;
use kernel::alloc::flags::{__GFP_ZERO, GFP_KERNEL};
use kernel::alloc::{Allocator, Flags, NumaNode};
use kernel::ffi::c_int;
use kernel::num::casts::FromSafeCast;
use kernel::sync::atomic::{atomic_load, Relaxed};
use kernel::sync::SpinLock;
use kernel::types::Opaque;

/// Where a send ctxt is in its life (see `ctxt.rs`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
#[repr(i32)]
pub(crate) enum CtxtState {
    /// Held by one thread (a [`Ctxt`], or lent to C). Zero, so that a
    /// zeroed allocation starts owned by its allocator.
    Owned = 0,
    /// On the transport's free list.
    Free = 1,
    /// Its WR chain was posted: the Send completion owns it.
    Posted = 2,
    /// Put, waiting on `sc_send_release_list` for the next drain.
    Queued = 3,
    /// Parked after a partial post until the transport's QP is drained.
    Orphan = 4,
}

impl CtxtState {
    /// The state's name, for messages.
    fn name(self) -> &'static str {
        match self {
            Self::Owned => "Owned",
            Self::Free => "Free",
            Self::Posted => "Posted",
            Self::Queued => "Queued",
            Self::Orphan => "Orphan",
        }
    }

    /// The state a ledger holds, `None` for a value no state has.
    fn from_repr(v: i32) -> Option<Self> {
        match v {
            0 => Some(Self::Owned),
            1 => Some(Self::Free),
            2 => Some(Self::Posted),
            3 => Some(Self::Queued),
            4 => Some(Self::Orphan),
            _ => None,
        }
    }
}

/// The record every pooled ctxt carries in front of its C struct.
///
/// # Invariants
///
/// - The ctxt it belongs to starts [`LEDGER_SIZE`] bytes after it, in the
///   same allocation.
/// - `link` is on `rs_send_ctxts_all` (under `rs_send_ctxts_all_lock`) from
///   allocation to free.
/// - `state` holds a [`CtxtState`] (as its `i32`). Only the ctxt's current
///   holder writes it (the thread that owns it, the Send completion of a
///   posted one, the drain that releases it), with a volatile store, the
///   `WRITE_ONCE` of C; each handover (a list, a lock, the completion)
///   orders it for the next holder. It is read with volatile loads
///   (`READ_ONCE`) where the holder is not known: a put's check and
///   teardown's census after the QP is drained.
/// - `xprt_buf_len` is the length of the ctxt's header buffer
///   (`sc_xprt_buf`), set before the ctxt is first handed out and never
///   changed.
///
/// Not atomic read-modify-writes: in a module each kernel-crate atomic is
/// a call to a C helper, and the ledger is touched four times per reply.
/// What that gives up: two *concurrent* puts of one ctxt (two holders of
/// it, which `Ctxt` rules out for Rust and C's callers do not do) could
/// both pass the put's check; any later put of a ctxt already put is
/// still refused.
#[repr(C)]
pub(crate) struct Ledger {
    link: Opaque<sys::list_head>,
    state: Opaque<i32>,
    /// Length of `sc_xprt_buf` in bytes. Kept here (in the padding after
    /// `state`, on 64-bit) rather than read through `sc_rdma`
    /// (`sc_max_req_size`, a C `int` to range-check) at each use.
    xprt_buf_len: u32,
}

/// Bytes from a ledger to its ctxt.
const LEDGER_SIZE: usize = size_of::<Ledger>();

// The ctxt follows the ledger: the ledger's size keeps it aligned.
kernel::static_assert!(LEDGER_SIZE % align_of::<sys::svc_rdma_send_ctxt>() == 0);

/// The ledger of the ctxt at `ctxt`.
fn ledger_ptr(ctxt: *mut sys::svc_rdma_send_ctxt) -> *mut Ledger {
    ctxt.cast::<u8>().wrapping_sub(LEDGER_SIZE).cast::<Ledger>()
}

/// The ctxt of the ledger at `ledger`.
fn ctxt_of_ledger(ledger: *mut Ledger) -> *mut sys::svc_rdma_send_ctxt {
    ledger
        .cast::<u8>()
        .wrapping_add(LEDGER_SIZE)
        .cast::<sys::svc_rdma_send_ctxt>()
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
        Layout::array::<*mut sys::page>(rdma.serv_maxpages()).ok()?,
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
/// - Points to a ctxt allocated by [`Ctxt::alloc`] (or KUnit's stand-in,
///   which has the same layout): its [`Ledger`], the C struct, then
///   `sc_max_send_sges` SGEs of its transport.
/// - `sc_rdma` is its transport, which outlives it (`svc_rdma_free`
///   destroys the ctxts first).
/// - The holder has exclusive access: the ctxt is on no list, no CPU
///   code but the holder's touches it, and no WR of its chain is posted
///   (a posted ctxt is a [`SentCtxt`] for its completion, or, partly
///   posted, a [`PartlyPosted`]).
/// - It has at least one SGE. SGEs `1..num_sge` hold payload mappings not
///   yet undone; SGE 0 holds the header buffer's mapping, made at
///   allocation.
/// - `sc_xprt_buf` points to its own header buffer, of its ledger's
///   `xprt_buf_len` bytes, initialised (zeroed at allocation), which C
///   code never reassigns (a stand-in's is empty).
pub(crate) struct Ctxt(NonNull<sys::svc_rdma_send_ctxt>);

// SAFETY: a `Ctxt` is an exclusive handle to kernel memory that any thread
// may use (completions run on another CPU than the poster).
unsafe impl Send for Ctxt {}

impl Ctxt {
    /// Takes ownership of the ctxt at `ptr`; `None` for null.
    ///
    /// # Safety
    ///
    /// `ptr` is null or a ctxt as the type invariant says, whose ownership
    /// the caller gives up.
    pub(crate) unsafe fn from_raw(ptr: *mut sys::svc_rdma_send_ctxt) -> Option<Self> {
        NonNull::new(ptr).map(Self)
    }

    /// Gives up ownership, for a caller that hands the ctxt to C, or
    /// leaves it to its ledger alone (a parked ctxt, [`PartlyPosted`]).
    pub(crate) fn into_raw(self) -> *mut sys::svc_rdma_send_ctxt {
        ManuallyDrop::new(self).0.as_ptr()
    }

    /// The C pointer.
    pub(crate) fn as_ptr(&self) -> *mut sys::svc_rdma_send_ctxt {
        self.0.as_ptr()
    }

    fn raw(&self) -> &sys::svc_rdma_send_ctxt {
        // SAFETY: exclusively ours (type invariant).
        unsafe { self.0.as_ref() }
    }

    fn raw_mut(&mut self) -> &mut sys::svc_rdma_send_ctxt {
        // SAFETY: exclusively ours (type invariant).
        unsafe { self.0.as_mut() }
    }

    /// The transport this ctxt belongs to.
    pub(crate) fn rdma(&self) -> &Rdma {
        // SAFETY: `sc_rdma` outlives the ctxt (type invariant).
        unsafe { Rdma::from_raw(self.raw().sc_rdma) }
    }

    /// `svc_rdma_send_ctxt_alloc`: a new ctxt on the device's NUMA node,
    /// with its header buffer DMA-mapped as SGE 0, every SGE's lkey set,
    /// its Send WR pre-wired, and listed in the ledger. `None` when memory
    /// or the mapping cannot be had. Out of line and cold: a transport
    /// allocates its ctxts once, when its pool grows.
    #[cold]
    #[inline(never)]
    pub(crate) fn alloc(rdma: &Rdma) -> Option<Self> {
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
        // unions): ours to initialise in place.
        let cr = unsafe { &mut *c };
        // The two other buffers are recorded as soon as they are had, so
        // that a failure frees what the ctxt records.
        cr.sc_pages = kmalloc(l.1, true, node).map_or(null_mut(), |p| p.cast().as_ptr());
        // Zeroed: `header_buf` hands it out as initialised bytes (it is
        // allocated once per ctxt, so this costs nothing per reply).
        let buffer = kmalloc(l.2, true, node);
        cr.sc_xprt_buf = buffer.map_or(null_mut(), |b| b.cast().as_ptr());
        let mapping = match buffer {
            // SAFETY: `buffer` is `buf_len` bytes of lowmem (kmalloc),
            // freed only after the mapping is undone (by `free`, or below).
            Some(b) if !cr.sc_pages.is_null() => unsafe { device.map_virt(b, buf_len) }.ok(),
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
        cr.sc_maxpages = rdma.serv_maxpages();
        cr.sc_send_wr.next = null_mut();
        // SAFETY: writes the `wr_cqe` member of the WR's id union, as C
        // does (the union's other member, `wr_id`, is never read).
        unsafe { *cr.sc_send_wr.__bindgen_anon_1.wr_cqe.as_mut() = addr_of_mut!(cr.sc_cqe) };
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
        let mut this = Self(NonNull::new(c)?);
        let lkey = rdma.local_dma_lkey();
        for sge in this.sges_mut() {
            sge.lkey = lkey;
        }
        if let Some(sge0) = this.sges_mut().first_mut() {
            mapping.into_sge(sge0);
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
        let c = self.raw_mut();
        c.sc_hdrbuf.head[0].iov_len = 0;
        c.sc_hdrbuf.len = 0;
        // SAFETY: the ctxt's own stream and header `xdr_buf`, which `alloc`
        // set up over its header buffer (type invariant).
        unsafe {
            sys::xdr_init_encode(
                addr_of_mut!(c.sc_stream),
                addr_of_mut!(c.sc_hdrbuf),
                c.sc_xprt_buf.cast(),
                null_mut(),
            )
        };
        // SAFETY: this ctxt's Reply chunk context, idle (the ctxt is held,
        // not posted), on its own transport.
        unsafe { sys::svc_rdma_cc_init(rdma, addr_of_mut!(c.sc_reply_info.wi_cc)) };
        self.set_num_sge(0);
        self.set_page_count(0);
        let c = self.raw_mut();
        c.sc_cur_sge_no = 0;
        c.sc_sqecount = 1;
        c.sc_wr_chain = addr_of_mut!(c.sc_send_wr);
    }

    /// The layouts of the ctxt's allocations (as [`layouts`] gave them at
    /// allocation), from what the ctxt recorded: its transport's SGE
    /// count, `sc_maxpages`, its ledger's `xprt_buf_len`. Not [`layouts`]:
    /// at teardown the transport's server may be gone (`svc_xprt` holds no
    /// reference on it), and C's teardown never reads it either.
    fn own_layouts(&self) -> Option<(Layout, Layout, Layout)> {
        Some((
            ctxt_layout(self.rdma().max_send_sges())?,
            Layout::array::<*mut sys::page>(self.raw().sc_maxpages).ok()?,
            Layout::from_size_align(self.header_buf_size(), align_of::<u64>()).ok()?,
        ))
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
        unsafe { core::slice::from_raw_parts_mut(self.raw().sc_xprt_buf.cast(), len) }
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
        let buf = unsafe { core::slice::from_raw_parts_mut(self.raw().sc_xprt_buf.cast(), len) };
        (buf, tracer)
    }

    /// Length of the header built so far.
    pub(crate) fn header_len(&self) -> u32 {
        self.raw().sc_hdrbuf.len
    }

    /// Records a header of `len` bytes in `sc_hdrbuf`/`sc_stream`, as C's
    /// `xdr_reserve_space` calls leave them. A length past the buffer is
    /// cut to it.
    pub(crate) fn commit_header(&mut self, len: usize) {
        let len = len.min(self.header_buf_size());
        let c = self.raw_mut();
        c.sc_hdrbuf.head[0].iov_len = len;
        c.sc_hdrbuf.len = u32::try_from(len).unwrap_or(u32::MAX);
        c.sc_stream.p = c.sc_xprt_buf.cast::<u8>().wrapping_add(len).cast();
    }

    /// Number of SGEs the Send carries (`num_sge`).
    pub(crate) fn num_sge(&self) -> usize {
        usize::try_from(self.raw().sc_send_wr.num_sge).unwrap_or(0)
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
        if self.raw().sc_send_wr.num_sge > 1 {
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
    /// replies).
    #[inline]
    pub(crate) fn set_header_sge_unmapped(&mut self, hdr_len: u32) {
        let p = self.as_ptr();
        // SAFETY: exclusively ours, and it has at least one SGE (type
        // invariant).
        unsafe { (*addr_of_mut!((*p).sc_sges).cast::<sys::ib_sge>()).length = hdr_len };
        self.set_num_sge(1);
    }

    /// Undoes the payload mappings (SGEs `1..num_sge`), keeping the
    /// header's. Cold: for a caller that starts the SGE list over after
    /// mapping payload, and for a failed reply, whose memory its owner may
    /// free before the ctxt is released.
    #[cold]
    #[inline(never)]
    pub(crate) fn unmap_payload_sges(&mut self) {
        // `num_sge` counts only SGEs that were mapped; never past the array.
        let mapped = self.num_sge().min(self.rdma().max_send_sges());
        let payload = self.sges().get(1..mapped).unwrap_or_default();
        // SAFETY: SGEs `1..num_sge` hold live payload mappings (type
        // invariant), which no posted WR uses: a held ctxt is not posted.
        unsafe { self.rdma().device().unmap_pages(payload) };
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

    /// Test builds (`RPCRDMA_RS_DMA_MUTATION=leak_on_error`) only: drops
    /// the last payload SGE from `num_sge`, so that its mapping is never
    /// undone: the leak the DMA-mapped test mode must catch.
    #[cfg(rpcrdma_dma_mutation = "leak_on_error")]
    pub(crate) fn forget_last_payload_sge(&mut self) {
        let n = self.raw().sc_send_wr.num_sge;
        if n > 1 {
            self.set_num_sge(n - 1);
        }
    }

    /// Advances `sc_cur_sge_no` and returns it: the index of the next
    /// payload SGE. `None` if it would overflow.
    pub(crate) fn next_sge_no(&mut self) -> Option<usize> {
        let c = self.raw_mut();
        c.sc_cur_sge_no = c.sc_cur_sge_no.checked_add(1)?;
        usize::try_from(c.sc_cur_sge_no).ok()
    }

    /// Stores a payload mapping in SGE `index`, where `release_io` will
    /// undo it, and counts it in `num_sge`. Gives the mapping back if
    /// `index` is past the array.
    pub(crate) fn add_payload_sge<'d>(
        &mut self,
        index: usize,
        mapping: DmaMapping<'d>,
    ) -> Result<(), DmaMapping<'d>> {
        let Some(sge) = self.sges_mut().get_mut(index) else {
            return Err(mapping);
        };
        mapping.into_sge(sge);
        // Never wraps: at most one per SGE of the array (`num_sge` counts
        // only SGEs stored here).
        let n = self.raw().sc_send_wr.num_sge.wrapping_add(1);
        self.set_num_sge(n);
        Ok(())
    }

    /// Sends the WR as Send With Invalidate of `inv_rkey`, or as plain
    /// Send when it is 0.
    pub(crate) fn set_send_opcode(&mut self, inv_rkey: u32) {
        let wr = &mut self.raw_mut().sc_send_wr;
        if inv_rkey != 0 {
            wr.opcode = sys::ib_wr_opcode_IB_WR_SEND_WITH_INV;
            // SAFETY: `ex` is a union of two `u32`s; writing one is always
            // valid.
            unsafe { *wr.ex.invalidate_rkey.as_mut() = inv_rkey };
        } else {
            wr.opcode = sys::ib_wr_opcode_IB_WR_SEND;
        }
    }

    /// Drops any chunk Writes from the chain: the Send alone goes.
    pub(crate) fn send_only(&mut self) {
        let c = self.raw_mut();
        c.sc_wr_chain = addr_of_mut!(c.sc_send_wr);
        c.sc_sqecount = 1;
    }

    /// SQ entries the chain needs (`sc_sqecount`).
    pub(crate) fn sqecount(&self) -> i32 {
        self.raw().sc_sqecount
    }

    /// The completion ID, for tracepoints.
    pub(crate) fn cid(&self) -> &sys::rpc_rdma_cid {
        &self.raw().sc_cid
    }

    /// Reply pages held (`sc_page_count`).
    pub(crate) fn page_count(&self) -> usize {
        usize::try_from(self.raw().sc_page_count).unwrap_or(0)
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

    /// `svc_rdma_prepare_write_list`: builds the RDMA Write WRs that carry
    /// the result payloads of `xdr` to the Call's Write chunks, chained
    /// before the ctxt's Send. Returns a negative errno on failure.
    pub(crate) fn prepare_write_list(&mut self, rctxt: &RecvCtxt, xdr: &XdrBuf) -> c_int {
        // SAFETY: the live transport, a Call, our ctxt and the reply, all
        // valid for the call.
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
    /// the reply through the Call's Reply chunk. Returns the bytes it will
    /// write, or a negative errno.
    pub(crate) fn prepare_reply_chunk(
        &mut self,
        write_pcl: &Pcl,
        reply_pcl: &Pcl,
        xdr: &XdrBuf,
    ) -> c_int {
        // SAFETY: the live transport, the Call's lists, our ctxt and the
        // reply, all valid for the call.
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

    /// Records where the ctxt is going.
    pub(crate) fn set_state(&self, state: CtxtState) {
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
        let this = ManuallyDrop::new(Self(c));
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
        let rdma = this.raw().sc_rdma;
        // SAFETY: the transport outlives its ctxts (`Ctxt` invariant: its
        // teardown destroys them), so it is live for this call, after the
        // ctxt is given away; `rdma` is a copy of the pointer, not a borrow
        // of that ctxt.
        let rdma = unsafe { Rdma::from_raw(rdma) };
        if rdma.released_ctxts().push(ManuallyDrop::into_inner(this)) && enqueue {
            rdma.set_data_and_enqueue();
        }
    }

    /// Posts the WR chain with `post` (`ib_post_send` or a stand-in), the
    /// Send's completion to be handled by `H`. On success the ctxt belongs
    /// to the completion (marked [`CtxtState::Posted`] before posting,
    /// since the completion may run before `post` returns). `post` first
    /// makes the header SGE's CPU writes visible to the device (C's
    /// `ib_dma_sync_single_for_device` in `svc_rdma_post_send`).
    pub(crate) fn post<H: SendCompletion>(self, post: Poster) -> Result<(), PostFailure> {
        let rdma = self.rdma();
        let qp = rdma.qp();
        let hdr: *const sys::ib_sge = self.header_sge();
        let c = self.as_ptr();
        // SAFETY: exclusively ours until posted.
        let first_wr = unsafe {
            (*c).sc_cqe.done = Some(send_done::<H>);
            (*c).sc_wr_chain.cast_const()
        };
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
        ctxt.set_state(CtxtState::Owned);
        if bad_wr == first_wr {
            return Err(PostFailure::NotPosted { ret, ctxt });
        }
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

impl Drop for Ctxt {
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
pub(crate) struct IdleCtxt(Ctxt);

impl IdleCtxt {
    /// Asserts that nothing of `ctxt` is in flight.
    ///
    /// # Safety
    ///
    /// As the type invariant says.
    pub(crate) unsafe fn assume(ctxt: Ctxt) -> Self {
        Self(ctxt)
    }

    /// The ctxt.
    pub(crate) fn ctxt(&self) -> &Ctxt {
        &self.0
    }

    /// Back to a plain owned ctxt.
    pub(crate) fn into_ctxt(self) -> Ctxt {
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
        let rdma = ctxt.rdma().as_ptr();
        let p = ctxt.as_ptr();
        // The two releases of `svc_rdma_rw.c` do nothing for a ctxt without
        // Write chunk infos or Reply chunk WRs (their own first tests, which
        // most replies meet): they are called only when there is work.
        let raw = ctxt.raw();
        let has_write_infos = !core::ptr::eq(raw.sc_write_info_list.next, &raw.sc_write_info_list);
        let has_reply_writes = raw.sc_reply_info.wi_cc.cc_sqecount != 0;
        if has_write_infos {
            // SAFETY: nothing of the chain is in flight (type invariant), so
            // the Write chunks' R/W contexts are idle; the infos are the
            // ctxt's own.
            unsafe { sys::svc_rdma_write_chunk_release(rdma, p) };
        }
        if has_reply_writes {
            // SAFETY: nothing of the chain is in flight (type invariant), so
            // the Reply chunk's R/W contexts are idle.
            unsafe { sys::svc_rdma_reply_chunk_release(rdma, p) };
        }
        // `num_sge` counts only SGEs that were mapped; never past the array.
        let mapped = ctxt.num_sge().min(ctxt.rdma().max_send_sges());
        if mapped > 1 {
            let payload = ctxt.sges().get(1..mapped).unwrap_or_default();
            // Each SGE's event, then one call that unmaps them all: the
            // events C fires, in its order, without a call per page.
            for sge in payload {
                trace_unmap(ctxt.cid(), sge);
            }
            let device: &IbDevice = ctxt.rdma().device();
            // SAFETY: SGEs `1..num_sge` hold live payload mappings (`Ctxt`
            // invariant), unused now (type invariant).
            unsafe { device.unmap_pages(payload) };
        }
        if ctxt.page_count() > 0 {
            let pages = sys::release_pages_arg {
                pages: ctxt.raw().sc_pages,
            };
            // SAFETY: the first `sc_page_count` slots hold page references
            // moved in from the request; no I/O uses them any more. The
            // argument is C's transparent union, passed as its pointer.
            unsafe { sys::release_pages(pages, ctxt.raw().sc_page_count) };
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
        // header mapping, made by `alloc` over the whole buffer, can go.
        unsafe {
            ctxt.rdma()
                .device()
                .unmap_page(sge0, u32::try_from(l.2.size()).unwrap_or(0))
        };
        let c = ctxt.as_ptr();
        // SAFETY: the ctxt was allocated by `alloc` with these layouts
        // (what it recorded then) and listed; it is ours, unmapped now, and
        // its memory is not used again.
        unsafe {
            ledger_unlist(c);
            free_memory(c, &l);
        }
    }
}

/// A handle to trace a [`Ctxt`] while its header buffer is borrowed.
///
/// # Invariants
///
/// Points to the ctxt it was taken from, borrowed for `'a`.
pub(crate) struct CtxtTracer<'a>(NonNull<sys::svc_rdma_send_ctxt>, PhantomData<&'a Ctxt>);

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
    pub(crate) fn take_released_ctxts(&self) -> impl Iterator<Item = IdleCtxt> {
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
    pub(crate) fn take_free_ctxts(drained: &Drained<'_>) -> impl Iterator<Item = IdleCtxt> {
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

    /// Takes an idle ctxt from the free list.
    pub(crate) fn pop_free_ctxt(&self) -> Option<Ctxt> {
        // SAFETY: every consumer of the free list pops through here, under
        // `sc_send_lock`, but teardown's `take_free_ctxts`, which runs when
        // no request pops any more (its `# Safety`).
        unsafe { self.free_ctxts().pop(self.send_lock()) }
    }
}

/// What runs when the Send of a ctxt posted by [`Ctxt::post`] completes.
pub(crate) trait SendCompletion {
    /// Called from the Send CQ's polling context with the transport (the
    /// ctxt's, which is the CQ's context), the work completion and the ctxt, which belongs to
    /// the handler from here on. All three are borrowed for `'a`, the
    /// call: the transport is live while a completion of it runs, because
    /// its teardown waits for its completions (`ib_drain_qp`, or
    /// [`Drained::destroy_qp_and_quiesce_send_cq`]), not for anything a
    /// handler could keep past the call.
    fn complete<'a>(rdma: &'a Rdma, wc: &'a SendWc, ctxt: SentCtxt<'a>);
}

/// A ctxt whose Send completed, handed to its [`SendCompletion`] for the
/// handler's call (`'a`) only.
///
/// # Invariants
///
/// The ctxt's WR chain was posted by [`Ctxt::post`] and its Send has
/// completed: its state is [`CtxtState::Posted`], and nothing but this
/// handle holds it.
pub(crate) struct SentCtxt<'a>(Ctxt, PhantomData<&'a Rdma>);

impl SentCtxt<'_> {
    /// The ctxt.
    pub(crate) fn ctxt(&self) -> &Ctxt {
        &self.0
    }

    /// `svc_rdma_send_ctxt_put` of the completion: the put a posted ctxt
    /// is owed, without [`Ctxt::try_put`]'s check (its state is known).
    #[inline]
    pub(crate) fn put(self) {
        self.0.queue_unchecked(true);
    }
}

/// The `ib_cqe.done` of a posted ctxt: hands its completion, and the ctxt,
/// to `H`.
///
/// # Safety
///
/// Called by the RDMA core with a polled Send work completion whose
/// `wr_cqe` is the `sc_cqe` of a ctxt [`Ctxt::post`] posted, once.
unsafe extern "C" fn send_done<H: SendCompletion>(_cq: *mut sys::ib_cq, wc: *mut sys::ib_wc) {
    // SAFETY: a completion the RDMA core passes to this handler, valid for
    // the call (`# Safety`).
    let wc = unsafe { SendWc::from_raw(wc) };
    // SAFETY: the completion of a Send that `Ctxt::post` posted, delivered
    // once (`# Safety`): the ctxt is the handler's now.
    let ctxt = unsafe { wc.take_ctxt() };
    // SAFETY: the ctxt's transport, `sc_rdma`, which is also the CQ's
    // context (the ib_cq stays opaque here), live for this call: its
    // teardown waits for its completions to have run (`ib_drain_qp`, or
    // `Drained::destroy_qp_and_quiesce_send_cq`). Borrowed for the call
    // only, apart from the ctxt, which the handler gives away.
    let rdma = unsafe { Rdma::from_raw(ctxt.rdma().as_ptr()) };
    H::complete(rdma, wc, SentCtxt(ctxt, PhantomData));
}

/// How [`Ctxt::post`] posts a WR chain: the shim's `rs_ib_post_send`
/// (`ib_post_send`, the header SGE synced for the device first), the
/// fault-injection build's wrapper of it, or a KUnit stand-in. A fixed
/// set, so that posting stays a safe operation.
///
/// # Invariants
///
/// The function behaves as `ib_post_send` on the QP and chain it is
/// given: it posts a prefix of the chain, reports the first WR not posted
/// in `*bad_wr` when it fails, and touches nothing else of the ctxt.
#[derive(Clone, Copy)]
pub(crate) struct Poster(PostFn);

impl Poster {
    /// `rs_ib_post_send`.
    #[cfg_attr(rpcrdma_fault_injection, allow(dead_code))]
    pub(crate) const VERBS: Self = Self(sys::rs_ib_post_send);

    /// `rs_ib_post_send_faulty`: `rs_ib_post_send`, or a failure at the
    /// first WR or at the Send after the Writes, as the fault parameters
    /// say.
    #[cfg(rpcrdma_fault_injection)]
    pub(crate) const FAULTY: Self = Self(sys::rs_ib_post_send_faulty);

    /// A stand-in poster.
    ///
    /// # Safety
    ///
    /// `post` behaves as the type invariant says.
    #[cfg(rpcrdma_kunit)]
    pub(crate) const unsafe fn new(post: PostFn) -> Self {
        Self(post)
    }
}

/// The signature of `ib_post_send` with the header SGE to sync for the
/// device first (the shim's `rs_ib_post_send`).
pub(crate) type PostFn = unsafe extern "C" fn(
    *mut sys::ib_qp,
    *const sys::ib_sge,
    *const sys::ib_send_wr,
    *mut *const sys::ib_send_wr,
) -> i32;

/// A failed [`Ctxt::post`].
pub(crate) enum PostFailure {
    /// Nothing was posted: the ctxt is handed back, owned.
    NotPosted {
        /// What the poster returned.
        ret: i32,
        /// The ctxt, whose Send will never complete.
        ctxt: Ctxt,
    },
    /// Some chunk Writes were posted, the Send was not.
    Partial {
        /// What the poster returned.
        ret: i32,
        /// The ctxt, which posted Writes may still read.
        ctxt: PartlyPosted,
        /// How many WRs of the chain were not posted (a driver that
        /// reports no bad WR is taken the safe way: something may be in
        /// flight).
        unposted: i32,
    },
}

/// A ctxt whose WR chain was only partly posted: some chunk Writes were,
/// its Send (last in the chain) was not. No completion will put it, yet
/// the posted Writes may read its mappings until the QP is drained: it
/// cannot be put or released, only parked ([`Self::park`], which dropping
/// it does too) until transport teardown reclaims it
/// (`ctxt::release_unreturned`).
pub(crate) struct PartlyPosted(ManuallyDrop<Ctxt>);

impl PartlyPosted {
    /// The ctxt, to read.
    pub(crate) fn ctxt(&self) -> &Ctxt {
        &self.0
    }

    /// Parks the ctxt: marked [`CtxtState::Orphan`] and held by nothing
    /// but its ledger, which lists every ctxt, where teardown finds it.
    pub(crate) fn park(self) {
        drop(self);
    }
}

impl Drop for PartlyPosted {
    fn drop(&mut self) {
        self.0.set_state(CtxtState::Orphan);
        // The ctxt is left to its ledger: never put, never dropped.
    }
}

/// A polled work completion of a Send CQ.
///
/// # Invariants
///
/// A completion the RDMA core passed to the Send completion handler,
/// valid while borrowed.
#[repr(transparent)]
pub(crate) struct SendWc(Opaque<sys::ib_wc>);

impl SendWc {
    /// Borrows the completion at `ptr`.
    ///
    /// # Safety
    ///
    /// `ptr` is a completion the RDMA core passes to a Send completion
    /// handler, valid for `'a`.
    unsafe fn from_raw<'a>(ptr: *mut sys::ib_wc) -> &'a Self {
        // SAFETY: a transparent `Opaque<ib_wc>`, valid for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// The C pointer, for tracepoints.
    pub(crate) fn as_ptr(&self) -> *const sys::ib_wc {
        self.0.get()
    }

    /// The completion status (`IB_WC_*`).
    pub(crate) fn status(&self) -> u32 {
        // SAFETY: a field of the valid completion.
        unsafe { (*self.0.get()).status }
    }

    /// The ctxt whose Send completed, now owned by the caller.
    ///
    /// # Safety
    ///
    /// The completion is of a Send posted by [`Ctxt::post`] (its `wr_cqe`
    /// is that ctxt's `sc_cqe`), and is taken once.
    unsafe fn take_ctxt(&self) -> Ctxt {
        // SAFETY: `wr_cqe` is the `sc_cqe` of the posted ctxt (`# Safety`),
        // whose ownership passes to the completion.
        unsafe {
            let cqe = *(*self.0.get()).__bindgen_anon_1.wr_cqe.as_ref();
            Ctxt(NonNull::new_unchecked(kernel::container_of!(
                cqe,
                sys::svc_rdma_send_ctxt,
                sc_cqe
            )))
        }
    }
}

/// A lock-free list of send ctxts linked by `sc_node` (`llist_head`).
///
/// # Invariants
///
/// An initialised `llist_head` whose nodes are the `sc_node`s of ctxts
/// that belong to the list (a ctxt on it is owned by no one else).
#[repr(transparent)]
pub(crate) struct CtxtList(Opaque<sys::llist_head>);

impl CtxtList {
    /// # Safety
    ///
    /// `ptr` is a list as the type invariant says, live for `'a`.
    pub(crate) unsafe fn from_raw<'a>(ptr: *mut sys::llist_head) -> &'a Self {
        // SAFETY: a transparent `Opaque<llist_head>`, live for `'a`.
        unsafe { &*ptr.cast::<Self>() }
    }

    /// `llist_add`: adds `ctxt`; true if the list was empty. Any context,
    /// concurrently with other adds and with [`Self::take_all`].
    pub(crate) fn push(&self, ctxt: Ctxt) -> bool {
        let c = ctxt.into_raw();
        // SAFETY: the node of a ctxt we give to the list.
        unsafe { sys::rs_llist_add(addr_of_mut!((*c).sc_node), self.0.get()) }
    }

    /// `llist_empty`: whether the list is empty (one load, `READ_ONCE`).
    #[inline]
    pub(crate) fn is_empty(&self) -> bool {
        // SAFETY: an initialised list: its `first`, read as `READ_ONCE`.
        unsafe { core::ptr::read_volatile(addr_of!((*self.0.get()).first)) }.is_null()
    }

    /// `llist_del_all`: takes every ctxt on the list. An empty list (as
    /// most drains find it) is seen with `llist_empty`'s one load, without
    /// the exchange.
    ///
    /// # Safety
    ///
    /// No [`Self::pop`] of this list runs meanwhile: `llist.h` allows
    /// `llist_del_all` beside adds and other `llist_del_all`s, but not
    /// beside an unlocked-against-it `llist_del_first` (ABA).
    pub(crate) unsafe fn take_all(&self) -> CtxtChain {
        if self.is_empty() {
            return CtxtChain::new();
        }
        // SAFETY: an initialised list; what it returns is ours.
        let first = unsafe { sys::rs_llist_del_all(self.0.get()) };
        // INVARIANT: the detached nodes are ctxts' `sc_node`s (type
        // invariant), now reachable only through the chain.
        CtxtChain(first)
    }

    /// `llist_del_first` under `lock`, which every consumer of this list
    /// takes (`llist_del_first` allows one at a time).
    ///
    /// # Safety
    ///
    /// Every caller of `pop` on this list passes the same lock, and no
    /// [`Self::take_all`] of this list runs meanwhile.
    pub(crate) unsafe fn pop(&self, lock: &SpinLock<()>) -> Option<Ctxt> {
        let node = {
            let _guard = lock.lock();
            // SAFETY: consumers are serialised by `lock`, and no
            // `llist_del_all` races them (`# Safety`).
            unsafe { sys::llist_del_first(self.0.get()) }
        };
        // SAFETY: a node of this list, which links only ctxts' `sc_node`s
        // (`from_raw`'s contract).
        NonNull::new(node).map(|n| Ctxt(unsafe { ctxt_of(n) }))
    }
}

/// The ctxt whose `sc_node` is `node`.
///
/// # Safety
///
/// `node` is the `sc_node` of a live send ctxt.
unsafe fn ctxt_of(node: NonNull<sys::llist_node>) -> NonNull<sys::svc_rdma_send_ctxt> {
    // SAFETY: `node` is inside a ctxt (`# Safety`), so the container is in
    // bounds and non-null.
    unsafe {
        NonNull::new_unchecked(kernel::container_of!(
            node.as_ptr(),
            sys::svc_rdma_send_ctxt,
            sc_node
        ))
    }
}

/// A private chain of ctxts taken off a [`CtxtList`]; iterating yields
/// them, owned.
///
/// # Invariants
///
/// Null, or the first of a null-terminated chain of `sc_node`s of ctxts
/// that belong to the chain.
#[must_use = "the ctxts of a chain must be released"]
pub(crate) struct CtxtChain(*mut sys::llist_node);

impl CtxtChain {
    /// An empty chain.
    pub(crate) fn new() -> Self {
        Self(null_mut())
    }

    /// Adds `ctxt` in front.
    pub(crate) fn push(&mut self, ctxt: Ctxt) {
        let c = ctxt.into_raw();
        // SAFETY: the node of a ctxt we give to the chain.
        unsafe { (*c).sc_node.next = self.0 };
        // INVARIANT: a ctxt's node in front of the null-terminated chain.
        // SAFETY: `c` is the live ctxt just given to the chain.
        self.0 = unsafe { addr_of_mut!((*c).sc_node) };
    }
}

impl Drop for CtxtChain {
    /// Drops what the chain still holds, as each [`Ctxt`] drops (a put,
    /// or a refusal that is reported), so that no ctxt is lost unlisted
    /// with an abandoned chain. Every user iterates its chain to the end.
    fn drop(&mut self) {
        for ctxt in self.by_ref() {
            drop(ctxt);
        }
    }
}

impl Iterator for CtxtChain {
    type Item = Ctxt;

    fn next(&mut self) -> Option<Ctxt> {
        let node = NonNull::new(self.0)?;
        // SAFETY: a node of our chain (type invariant); its link is read
        // before the ctxt is handed out (its new owner may relink it).
        self.0 = unsafe { (*node.as_ptr()).next };
        // SAFETY: a node of our chain is a ctxt's `sc_node` (type
        // invariant).
        Some(Ctxt(unsafe { ctxt_of(node) }))
    }
}

/// Lists a new ctxt (zeroed, so `Owned`) on the list of all ctxts.
///
/// # Safety
///
/// `c` is a new ctxt, with its ledger, that nobody else knows, not listed.
unsafe fn ledger_list(c: *mut sys::svc_rdma_send_ctxt) {
    let l = ledger_ptr(c);
    let _guard = all_ctxts_lock().lock();
    // SAFETY: the shim's list, changed only under its lock, which we hold;
    // the link is the new ctxt's (`# Safety`).
    unsafe { sys::list_add_tail((*l).link.get(), &raw mut sys::rs_send_ctxts_all) };
}

/// Takes `c` off the list of all ctxts.
///
/// # Safety
///
/// `c` was listed by [`ledger_list`].
unsafe fn ledger_unlist(c: *mut sys::svc_rdma_send_ctxt) {
    let l = ledger_ptr(c);
    let _guard = all_ctxts_lock().lock();
    // SAFETY: the link is on the list (`# Safety`), which we hold the lock
    // of.
    unsafe { sys::rs_list_del((*l).link.get()) };
}

fn all_ctxts_lock() -> &'static SpinLock<()> {
    // SAFETY: the shim's statically initialised lock, live as long as the
    // module.
    unsafe { SpinLock::from_raw(&raw mut sys::rs_send_ctxts_all_lock) }
}

/// Every listed ctxt with its ledger's state (as read, `READ_ONCE`).
///
/// # Safety
///
/// The caller holds [`all_ctxts_lock`] while it iterates. It may unlist
/// a ctxt once it has been yielded (the walk has moved past it), nothing
/// else.
unsafe fn listed_ctxts() -> impl Iterator<Item = (*mut sys::svc_rdma_send_ctxt, i32)> {
    let head = &raw mut sys::rs_send_ctxts_all;
    // SAFETY: the list is initialised and, under its lock (`# Safety`),
    // unchanged.
    let mut link = unsafe { (*head).next };
    core::iter::from_fn(move || {
        if link == head {
            return None;
        }
        // SAFETY: under the lock every entry is the link of a live ctxt's
        // ledger (listed at allocation, unlisted before free), at the
        // ledger's start; the successor is read before the caller may
        // unlist the entry.
        unsafe {
            let l = kernel::container_of!(link.cast::<Opaque<sys::list_head>>(), Ledger, link);
            link = (*link).next;
            Some((
                ctxt_of_ledger(l),
                core::ptr::read_volatile((*l).state.get()),
            ))
        }
    })
}

/// Takes the ctxts of the transport whose QP `gone` proves destroyed that
/// are marked posted (their completion can no longer come) or parked
/// after a partial post: nothing of them is in flight, and nobody else
/// holds them. `seen` is told the state of every ctxt of the transport
/// not on its free list, taken or not (for the teardown's report).
pub(crate) fn take_unreturned(
    gone: &SendQueueGone<'_>,
    mut seen: impl FnMut(CtxtState),
) -> impl Iterator<Item = IdleCtxt> {
    let rdma = gone.rdma().as_ptr();
    let mut taken = CtxtChain::new();
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock and unlist nothing. `sc_rdma` is set before
    // a ctxt is listed and never changes. A posted ctxt belongs to its
    // completion, which `gone` proves can no longer run, and a parked one
    // to its ledger alone: either may become ours.
    unsafe {
        for (c, state) in listed_ctxts() {
            let Some(state) = CtxtState::from_repr(state) else {
                continue;
            };
            if (*c).sc_rdma != rdma || state == CtxtState::Free {
                continue;
            }
            seen(state);
            if may_be_unreturned(state as i32) {
                taken.push(Ctxt(NonNull::new_unchecked(c)));
            }
        }
    }
    // INVARIANT: nothing of a taken ctxt can be in flight (`gone`).
    taken.map(IdleCtxt)
}

/// Whether a ctxt in `state` may still have work requests on its QP that
/// never completed: posted and not completed, or parked after a partial
/// post (whose posted Writes are not covered by a Send completion).
fn may_be_unreturned(state: i32) -> bool {
    state == CtxtState::Posted as i32 || state == CtxtState::Orphan as i32
}

/// At transport teardown, after `ib_drain_qp`: counts the ctxts of `rdma`
/// that are posted and were never completed, or parked after a partial
/// post, and releases their chunks' R/W contexts. Those hold
/// `rdma_rw_ctx`s (MRs of the QP's pool, mappings made on its device),
/// which only a live QP can undo, and teardown is about to destroy it
/// ([`Drained::destroy_qp_and_quiesce_send_cq`]) before it takes the ctxts.
/// The Write chunk infos themselves stay until the ctxt is released: a
/// late Write completion reads their `cc_cqe` and `cc_cid`.
///
/// At teardown (`drained`), nothing posts on the QP any more, and the only
/// code that may still run on those ctxts are their completions
/// (`WcSend`, `svc_rdma_write_done`, `svc_rdma_reply_done`), none of which
/// touches the R/W context lists. The QP is still there: only
/// [`Drained::destroy_qp_and_quiesce_send_cq`] destroys it before
/// `svc_rdma_free` does, and its callers promise to call this first.
pub(crate) fn release_unreturned_chunk_io(drained: &Drained<'_>) -> u32 {
    let mut found = 0u32;
    let r = drained.rdma().as_ptr();
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock and unlist nothing. The ctxts of `rdma` in
    // these states belong to no thread, and their completions leave the
    // lists released here alone (the function's docs), so the lists are
    // ours; each write info on `sc_write_info_list` is live until the
    // ctxt's release. `svc_rdma_cc_release` runs in atomic context (unmaps, returns MRs
    // under the QP's irq-safe lock, lists the R/W contexts for reuse).
    unsafe {
        for (c, state) in listed_ctxts() {
            if (*c).sc_rdma != r || !may_be_unreturned(state) {
                continue;
            }
            found = found.saturating_add(1);
            let head = addr_of_mut!((*c).sc_write_info_list);
            let mut link = (*head).next;
            while link != head {
                let info = kernel::container_of!(link, sys::svc_rdma_write_info, wi_list);
                sys::svc_rdma_cc_release(
                    r,
                    addr_of_mut!((*info).wi_cc),
                    sys::dma_data_direction::DMA_TO_DEVICE,
                );
                link = (*link).next;
            }
            if (*c).sc_reply_info.wi_cc.cc_sqecount != 0 {
                sys::svc_rdma_cc_release(
                    r,
                    addr_of_mut!((*c).sc_reply_info.wi_cc),
                    sys::dma_data_direction::DMA_TO_DEVICE,
                );
            }
        }
    }
    found
}

/// At transport teardown, when its Send CQ could not be shown quiescent:
/// takes the ctxts of `rdma` that may still be completed off the list of
/// all ctxts and leaves their memory to a completion that may never come,
/// as C leaves them (it never looks). Returns how many.
pub(crate) fn abandon_unreturned(rdma: &Rdma) -> u32 {
    let mut n = 0u32;
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock, and unlist only a ctxt already yielded.
    // Only its ledger link is written, which no completion touches.
    unsafe {
        for (c, state) in listed_ctxts() {
            if (*c).sc_rdma == rdma.as_ptr() && may_be_unreturned(state) {
                sys::rs_list_del((*ledger_ptr(c)).link.get());
                n = n.saturating_add(1);
            }
        }
    }
    n
}

/// What the send ctxts of every transport hold: the leak counters.
#[derive(Default, Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct Census {
    /// Ctxts allocated and not freed.
    pub(crate) ctxts: i64,
    /// Reply pages moved into ctxts and not released.
    pub(crate) pages: i64,
    /// Payload SGEs DMA-mapped and not unmapped.
    pub(crate) sges: i64,
}

/// Counts what the listed ctxts hold. Counted where it is, rather than
/// kept in counters the Send path would update per reply: a ctxt holds
/// its pages from the move into it until its release, which zeroes its
/// page count and SGE count ([`IdleCtxt::release_io`]); the header's SGE
/// is not a payload mapping. A snapshot: ctxts in use change under it.
#[inline(never)]
pub(crate) fn census() -> Census {
    let mut n = Census::default();
    let _guard = all_ctxts_lock().lock();
    // SAFETY: we hold the lock and unlist nothing; each listed ctxt is
    // live. Its two counts, which their holder may be changing, are read
    // with the kernel crate's `atomic_load` (`READ_ONCE`), Relaxed: a
    // snapshot for a counter, ordered with nothing. Every write of them is
    // a marked store too, a volatile one (`WRITE_ONCE`: `set_num_sge`,
    // `set_page_count`), because the writes are on the per-reply path,
    // where `atomic_store` would be a call to a C helper on kernels built
    // with GCC (no `CONFIG_RUST_INLINE_HELPERS`, as Debian's): no data race
    // in the LKMM, no torn or invented value.
    unsafe {
        for (c, _) in listed_ctxts() {
            let pages = atomic_load(addr_of_mut!((*c).sc_page_count), Relaxed);
            let sges = atomic_load(addr_of_mut!((*c).sc_send_wr.num_sge), Relaxed);
            n.ctxts = n.ctxts.saturating_add(1);
            n.pages = n.pages.saturating_add(i64::from(pages.max(0)));
            n.sges = n
                .sges
                .saturating_add(i64::from(sges.saturating_sub(1).max(0)));
        }
    }
    n
}

#[cfg(rpcrdma_kunit)]
impl SentCtxt<'_> {
    /// The completion's handle on a posted `ctxt`, for a KUnit case that
    /// plays the Send completion.
    ///
    /// # Safety
    ///
    /// As the type invariant says: `ctxt` is marked posted, and nothing
    /// else will put it.
    pub(crate) unsafe fn assume_for_test(ctxt: Ctxt) -> Self {
        Self(ctxt, PhantomData)
    }
}

#[cfg(rpcrdma_kunit)]
impl Ctxt {
    /// The state of the ctxt at `p`, for a test that holds no [`Ctxt`]
    /// of it (`READ_ONCE`).
    ///
    /// # Safety
    ///
    /// `p` is a live ctxt of [`Ctxt::alloc`] or [`Self::alloc_fake`].
    pub(crate) unsafe fn state_of_raw(p: *mut sys::svc_rdma_send_ctxt) -> Option<CtxtState> {
        // SAFETY: the ledger in front of the live ctxt (`# Safety`).
        CtxtState::from_repr(unsafe { core::ptr::read_volatile((*ledger_ptr(p)).state.get()) })
    }

    /// A KUnit stand-in ctxt of `rdma`: zeroed, listed, with `writes`
    /// chained before its Send WR and no header buffer or pages.
    pub(crate) fn alloc_fake(rdma: &Rdma, writes: &mut [sys::ib_send_wr]) -> Option<Self> {
        let nsges = rdma.max_send_sges();
        if nsges == 0 {
            return None;
        }
        let c = ctxt_of_ledger(kmalloc(ctxt_layout(nsges)?, true, -1)?.cast().as_ptr());
        // SAFETY: a zeroed ctxt, with its ledger, only this test knows.
        unsafe {
            // No header buffer: an empty one (`xprt_buf_len` is 0), whose
            // pointer is not null, as a slice's must not be.
            (*c).sc_xprt_buf = NonNull::<u8>::dangling().as_ptr().cast();
            (*c).sc_rdma = rdma.as_ptr();
            sys::INIT_LIST_HEAD(addr_of_mut!((*c).sc_write_info_list));
            sys::INIT_LIST_HEAD(addr_of_mut!((*c).sc_reply_info.wi_cc.cc_rwctxts));
            (*c).sc_send_wr.sg_list = addr_of_mut!((*c).sc_sges).cast();
            (*c).sc_send_wr.num_sge = 1;
            let mut next = addr_of_mut!((*c).sc_send_wr);
            for w in writes.iter_mut().rev() {
                w.next = next;
                next = w;
            }
            (*c).sc_wr_chain = next;
            (*c).sc_sqecount = i32::try_from(writes.len())
                .unwrap_or(i32::MAX)
                .saturating_add(1);
            ledger_list(c);
        }
        Some(Self(NonNull::new(c)?))
    }

    /// Frees a stand-in of [`Self::alloc_fake`], wherever the test left
    /// it: the first still listed for `rdma`. False when none is left.
    pub(crate) fn free_next_fake(rdma: &Rdma) -> bool {
        let nsges = rdma.max_send_sges();
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
        if found.is_null() {
            return false;
        }
        // SAFETY: a stand-in, unlisted; the test is over, nobody uses it.
        unsafe {
            kfree(
                ledger_ptr(found).cast(),
                ctxt_layout(nsges).unwrap_or(Layout::new::<u8>()),
            )
        };
        true
    }
}
