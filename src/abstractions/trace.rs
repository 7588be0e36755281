// SPDX-License-Identifier: GPL-2.0

//! The Send path's tracepoints, fired from Rust at the points and with the
//! arguments of `svc_rdma_sendto.c`.
//!
//! The `rpcrdma:svcrdma_*` events stay C's: declared in
//! `include/trace/events/rpcrdma.h` and created by rpcrdma's `module.c`, so
//! their fields, formats and static keys are the kernel's. As with the
//! kernel crate's `declare_trace!`, each function here tests the event's
//! static key inline (with `CONFIG_JUMP_LABEL`, a no-op that the kernel
//! patches into a jump when the event is enabled; without it, a read of the
//! key's count) and only when it is enabled calls the event's C entry
//! point, `rust_do_trace_svcrdma_<event>()`, which the shim defines. A
//! disabled event costs no call.
//!
//! `declare_trace!` itself cannot be used: it names the event's symbols in
//! `kernel::bindings`, which has none of rpcrdma's. Here they come from our
//! own bindings ([`crate::sys`]): `__tracepoint_svcrdma_<event>` and
//! `rust_do_trace_svcrdma_<event>`, where `<event>` is the function's name.

use crate::sys::{__be32, ib_wc, rpc_rdma_cid, svc_rdma_send_ctxt, svc_rqst, svcxprt_rdma};
use kernel::ffi::{c_int, c_uint};

/// Defines, for each `fn <event>(args);`, an always-inline
/// `pub(crate) unsafe fn <event>(args)` that fires the tracepoint
/// `svcrdma_<event>` with `args` if it is enabled, and does nothing else.
/// Each item carries its own documentation, with a `# Safety` section that
/// says what the event reads.
macro_rules! svcrdma_events {
    ($($(#[$meta:meta])* fn $event:ident($($arg:ident: $ty:ty),* $(,)?);)*) => {$(
        $(#[$meta])*
        #[inline(always)]
        pub(crate) unsafe fn $event($($arg: $ty),*) {
            #[cfg(CONFIG_TRACEPOINTS)]
            {
                // SAFETY: `__tracepoint_svcrdma_<event>` is the `struct
                // tracepoint` that module.c defines for this event, so its
                // `key` is a real static key defined by C, which lives as
                // long as the module: testing it is always sound.
                let enabled = unsafe {
                    kernel::macros::paste!(kernel::static_branch_unlikely!(
                        crate::sys::[<__tracepoint_svcrdma_ $event>],
                        crate::sys::tracepoint,
                        key
                    ))
                };
                if enabled {
                    // SAFETY: the event reads only what this function's
                    // caller vouches for (its `# Safety` section).
                    unsafe {
                        kernel::macros::paste!(crate::sys::[<rust_do_trace_svcrdma_ $event>])(
                            $($arg),*
                        )
                    };
                }
            }
            #[cfg(not(CONFIG_TRACEPOINTS))]
            {
                // No tracepoints in this kernel: the arguments are unused.
                $(let _ = $arg;)*
            }
        }
    )*};
}

svcrdma_events! {
    /// `svcrdma_sq_full`: a Send must wait for Send Queue entries.
    ///
    /// # Safety
    ///
    /// `rdma` points to a live transport (the event reads its `sc_sq_avail`
    /// and `sc_sq_depth`) and `cid` to a completion ID, both valid for the
    /// call.
    fn sq_full(rdma: *const svcxprt_rdma, cid: *const rpc_rdma_cid);

    /// `svcrdma_sq_retry`: a Send that waited got its Send Queue entries.
    ///
    /// # Safety
    ///
    /// `rdma` points to a live transport (the event reads its `sc_sq_avail`
    /// and `sc_sq_depth`) and `cid` to a completion ID, both valid for the
    /// call.
    fn sq_retry(rdma: *const svcxprt_rdma, cid: *const rpc_rdma_cid);

    /// `svcrdma_sq_post_err`: `ib_post_send` failed with `status`.
    ///
    /// # Safety
    ///
    /// `rdma` points to a live transport (the event reads its `sc_sq_avail`
    /// and `sc_sq_depth`) and `cid` to a completion ID, both valid for the
    /// call.
    fn sq_post_err(rdma: *const svcxprt_rdma, cid: *const rpc_rdma_cid, status: c_int);

    /// `svcrdma_wc_send`: a Send completed successfully.
    ///
    /// # Safety
    ///
    /// `cid` points to a completion ID valid for the call (the event reads
    /// its two fields).
    fn wc_send(cid: *const rpc_rdma_cid);

    /// `svcrdma_wc_send_flush`: a Send was flushed (the QP is in error).
    ///
    /// # Safety
    ///
    /// `wc` points to the work completion (the event reads its `status` and
    /// `vendor_err`) and `cid` to a completion ID, both valid for the call.
    fn wc_send_flush(wc: *const ib_wc, cid: *const rpc_rdma_cid);

    /// `svcrdma_wc_send_err`: a Send completed with an error other than a
    /// flush.
    ///
    /// # Safety
    ///
    /// `wc` points to the work completion (the event reads its `status` and
    /// `vendor_err`) and `cid` to a completion ID, both valid for the call.
    fn wc_send_err(wc: *const ib_wc, cid: *const rpc_rdma_cid);

    /// `svcrdma_post_send`: a send ctxt's WR chain is about to be posted.
    ///
    /// # Safety
    ///
    /// `ctxt` points to a send ctxt valid for the call (the event reads its
    /// `sc_cid` and, in `sc_send_wr`, `num_sge`, `opcode` and
    /// `ex.invalidate_rkey`).
    fn post_send(ctxt: *const svc_rdma_send_ctxt);

    /// `svcrdma_dma_unmap_page`: a payload SGE is DMA-unmapped.
    ///
    /// # Safety
    ///
    /// `cid` points to a completion ID valid for the call (the event reads
    /// its two fields; `addr` and `length` are only recorded).
    fn dma_unmap_page(cid: *const rpc_rdma_cid, addr: u64, length: u32);

    /// `svcrdma_dma_map_page`: a page range was DMA-mapped as a payload SGE.
    ///
    /// # Safety
    ///
    /// `cid` points to a completion ID valid for the call (the event reads
    /// its two fields; `addr` and `length` are only recorded).
    fn dma_map_page(cid: *const rpc_rdma_cid, addr: u64, length: u32);

    /// `svcrdma_dma_map_err`: DMA-mapping a page range failed.
    ///
    /// # Safety
    ///
    /// `cid` points to a completion ID valid for the call (the event reads
    /// its two fields; `addr` and `length` are only recorded).
    fn dma_map_err(cid: *const rpc_rdma_cid, addr: u64, length: u32);

    /// `svcrdma_send_pullup`: `msglen` bytes of the reply were copied into
    /// the header buffer.
    ///
    /// # Safety
    ///
    /// `ctxt` points to a send ctxt valid for the call (the event reads its
    /// `sc_cid` and `sc_hdrbuf.len`).
    fn send_pullup(ctxt: *const svc_rdma_send_ctxt, msglen: c_uint);

    /// `svcrdma_encode_wseg`: a Write or Reply chunk segment was encoded in
    /// the reply's header.
    ///
    /// # Safety
    ///
    /// `ctxt` points to a send ctxt valid for the call (the event reads its
    /// `sc_cid`; the other arguments are only recorded).
    fn encode_wseg(
        ctxt: *const svc_rdma_send_ctxt,
        segno: u32,
        handle: u32,
        length: u32,
        offset: u64,
    );

    /// `svcrdma_err_vers`: an `ERR_VERS` reply to the Call with `xid` (in
    /// network byte order).
    ///
    /// # Safety
    ///
    /// Always sound to call: the event reads nothing through a pointer.
    fn err_vers(xid: __be32);

    /// `svcrdma_err_chunk`: an `ERR_CHUNK` reply to the Call with `xid` (in
    /// network byte order).
    ///
    /// # Safety
    ///
    /// Always sound to call: the event reads nothing through a pointer.
    fn err_chunk(xid: __be32);

    /// `svcrdma_send_err`: no reply could be sent for `rqstp`, whose
    /// connection is closed.
    ///
    /// # Safety
    ///
    /// `rqstp` points to a request valid for the call, whose `rq_xprt`
    /// points to a live transport (the event reads `rq_xid` and the
    /// transport's `xpt_remotebuf` string).
    fn send_err(rqstp: *const svc_rqst, status: c_int);
}
