// SPDX-License-Identifier: GPL-2.0

//! Raw bindings for the Send path, generated at build time by bindgen from
//! `bindings/bindings_helper.h` with the kernel's own parameters. Types the
//! kernel crate already has come from `kernel::bindings`; only module-private
//! ones (`svcxprt_rdma`, `svc_rdma_send_ctxt`, `ib_send_wr`, ...) and our shim's
//! declarations are generated here. Nothing outside the FFI edge uses this.

#![allow(
    dead_code,
    missing_docs,
    non_camel_case_types,
    non_upper_case_globals,
    non_snake_case,
    improper_ctypes,
    unreachable_pub,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::undocumented_unsafe_blocks,
    clippy::as_underscore,
    clippy::cast_lossless,
    clippy::ptr_as_ptr,
    clippy::ref_as_ptr
)]
#![cfg_attr(not(CONFIG_RUSTC_HAS_UNNECESSARY_TRANSMUTES), allow(unknown_lints))]
#![allow(unnecessary_transmutes)]

pub(crate) use kernel::bindings::*;
use kernel::ffi;
#[allow(unused_imports)]
use pin_init::MaybeZeroable;

include!(concat!(
    env!("RPCRDMA_RS_GENERATED"),
    "/sendto_bindings_generated.rs"
));

// The helpers of `src/rust/helpers/`, called under their kernel names
// (`rust_helper_llist_add` as `llist_add`), unless the kernel crate has
// them (`Documentation/intree.rst`).
#[cfg(not(rpcrdma_kernel_abstractions))]
include!(concat!(
    env!("RPCRDMA_RS_GENERATED"),
    "/helpers_generated.rs"
));
