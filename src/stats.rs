// SPDX-License-Identifier: GPL-2.0

//! Leak accounting of the Send path: send ctxts allocated and not yet
//! freed, reply pages held by ctxts, and payload DMA mappings not yet
//! undone. All three must be back to 0 once every RDMA transport is gone;
//! the teardown test checks it. Read through read-only module parameters
//! (the C shim), since the C side of rpcrdma owns module init:
//! `/sys/module/rpcrdma/parameters/{send_ctxts_live,send_pages_held,send_sges_mapped}`.

use kernel::sync::atomic::{Atomic, Relaxed};

/// Send ctxts allocated and not freed.
pub(crate) static CTXTS_LIVE: Atomic<i64> = Atomic::new(0);
/// Reply pages moved into send ctxts and not released.
pub(crate) static PAGES_HELD: Atomic<i64> = Atomic::new(0);
/// Payload SGEs DMA-mapped and not unmapped.
pub(crate) static SGES_MAPPED: Atomic<i64> = Atomic::new(0);
/// Send ctxts whose posted Send never completed, reclaimed at transport
/// teardown (see `ctxt::reclaim_unreturned`); not a leak counter, a count
/// of provider faults survived.
pub(crate) static CTXTS_RECLAIMED: Atomic<i64> = Atomic::new(0);

/// Adds `n` (which may be negative) to a counter.
pub(crate) fn add(counter: &Atomic<i64>, n: i64) {
    counter.add(n, Relaxed);
}

/// A count of things as a counter delta.
pub(crate) fn count(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}
