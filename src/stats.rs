// SPDX-License-Identifier: GPL-2.0

//! Leak accounting of the Send path: send ctxts allocated and not yet
//! freed, reply pages held by ctxts, and payload DMA mappings not yet
//! undone. All three must be back to 0 once every RDMA transport is gone;
//! the teardown test checks it. Read through read-only module parameters
//! (the C shim), since the C side of rpcrdma owns module init:
//! `/sys/module/rpcrdma/parameters/{send_ctxts_live,send_pages_held,send_sges_mapped}`.
//!
//! The three are counted when read, over the list of all ctxts
//! ([`census`]), not kept in counters: counters would cost the Send path
//! several atomic updates per reply (each a call to a C helper in a
//! module) for a figure read only by tests and operators.

use kernel::sync::atomic::Atomic;

pub(crate) use crate::abstractions::send_ctxt::census;

/// Send ctxts whose posted Send never completed, reclaimed at transport
/// teardown (see `ctxt::reclaim_unreturned`); not a leak counter, a count
/// of provider faults survived.
pub(crate) static CTXTS_RECLAIMED: Atomic<i64> = Atomic::new(0);

/// Adds `n` (which may be negative) to a counter.
pub(crate) fn add(counter: &Atomic<i64>, n: i64) {
    counter.add(n, kernel::sync::atomic::Relaxed);
}
