// SPDX-License-Identifier: GPL-2.0

//! Kernel-independent core of the Send path: RPC-over-RDMA version 1
//! transport headers (RFC 8166) as the Linux server writes them.
//!
//! Only `core` is used here, so that the same files build inside the kernel
//! crate and in the host test crate (`tests/host`). Errors are [`Error`]
//! values; the FFI edge turns them into the errnos the C callers expect.

pub(crate) mod encode;
pub(crate) mod pullup;
pub(crate) mod xdr;

/// RPC-over-RDMA protocol version 1.
pub(crate) const RPCRDMA_VERSION: u32 = 1;

/// `rdma_proc` values of RFC 8166 §4.2.3 (`enum rpcrdma_proc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum Proc {
    /// The RPC message follows the transport header inline.
    Msg = 0,
    /// The RPC message travels in the Reply chunk.
    NoMsg = 1,
    /// A transport-level error report.
    Error = 4,
}

/// `rdma_error` values of RFC 8166 §4.2.4 (`enum rpcrdma_errcode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum ErrCode {
    /// The Call's version is not supported; followed by the supported range.
    Vers = 1,
    /// The Call's chunks were malformed or too small for the reply.
    Chunk = 2,
}

/// Bytes of the fixed header: xid, vers, credits, proc.
pub(crate) const FIXED_HDR_LEN: usize = 16;
/// Bytes of one encoded RDMA segment: handle, length, 64-bit offset.
pub(crate) const SEGMENT_LEN: usize = 16;

/// Why a Send-path operation failed. Each maps to exactly one errno, the one
/// the C implementation returns in the same situation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Error {
    /// The transport header buffer is full (`-EMSGSIZE`).
    MsgSize,
    /// The reply does not fit the chunk the client offered (`-E2BIG`).
    TooBig,
}

/// One RDMA segment of a chunk, laid out exactly as the kernel's
/// `struct svc_rdma_segment`, so that the FFI edge can view the C array of
/// a `svc_rdma_chunk` as a slice of these (the layout KUnit suite checks it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C)]
pub(crate) struct Segment {
    /// Remote memory handle (R_key).
    pub(crate) handle: u32,
    /// Length of the remote buffer in bytes.
    pub(crate) length: u32,
    /// Remote address.
    pub(crate) offset: u64,
}
