// SPDX-License-Identifier: GPL-2.0

//! Fault injection into the Send path, compiled in only by
//! `RPCRDMA_RS_FAULT_INJECTION=y` builds (`--cfg rpcrdma_fault_injection`).
//!
//! The points and their control live in the C shim, on the kernel's
//! fault-injection framework: `/sys/module/rpcrdma/parameters/fail_<point>`
//! takes `<interval>,<probability>,<space>,<times>` and reads back how many
//! faults were injected. In other builds every point is a constant `false`
//! and the real `ib_post_send` is used: nothing is left in the fast path.

use crate::abstractions::send_ctxt::Poster;
use crate::sys;

/// A place where a fault can be injected (`enum rs_fault_point`).
#[derive(Clone, Copy)]
#[repr(u32)]
pub(crate) enum Point {
    /// `svc_rdma_send_ctxt_get` finds no ctxt, as if allocation failed.
    CtxtGet = sys::rs_fault_point_RS_FAULT_CTXT_GET,
    /// Mapping a page of the reply for DMA fails.
    DmaMap = sys::rs_fault_point_RS_FAULT_DMA_MAP,
}

/// Whether to fail at `point` now.
#[cfg(rpcrdma_fault_injection)]
pub(crate) fn inject(point: Point) -> bool {
    // SAFETY: the shim checks the point's range and only reads its state.
    unsafe { sys::rs_fault(point as i32) }
}

/// Whether to fail at `point` now: never, in this build.
#[cfg(not(rpcrdma_fault_injection))]
#[inline(always)]
pub(crate) fn inject(_point: Point) -> bool {
    false
}

/// At a transport's teardown, before the walk over its send ctxts: sleeps
/// for the `teardown_pause_ms` module parameter (0 by default), so that a
/// test can have completions arrive after `svc_rdma_free`'s final drain.
/// Only in fault-injection builds; may sleep.
#[cfg(rpcrdma_fault_injection)]
pub(crate) fn teardown_pause() {
    // SAFETY: reads a module parameter and sleeps; called from
    // `svc_rdma_free`'s process context.
    unsafe { sys::rs_fault_teardown_pause() }
}

/// At a transport's teardown: nothing, in this build.
#[cfg(not(rpcrdma_fault_injection))]
#[inline(always)]
pub(crate) fn teardown_pause() {}

/// The `ib_post_send` that Sends go through: in fault-injection builds, a
/// wrapper that may fail at the first WR, or post the chunk Writes and fail
/// the Send (a partial post).
pub(crate) fn post_fn() -> Poster {
    #[cfg(rpcrdma_fault_injection)]
    {
        Poster::FAULTY
    }
    #[cfg(not(rpcrdma_fault_injection))]
    {
        Poster::VERBS
    }
}
