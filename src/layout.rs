// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_layout`: the generated bindings against the C
//! compiler. Every size and offset listed in `bindings/layout_fields.h` is
//! computed twice, by bindgen's Rust layout here and by `sizeof`/`offsetof`
//! in the C shim, and must agree, or the Rust Send path would read and write
//! the shared `svc_rdma_send_ctxt`/`svcxprt_rdma` at the wrong places.

#[kunit_tests(rpcrdma_rs_layout)]
mod tests {
    use crate::sys;
    use core::mem::{offset_of, size_of};
    use kernel::prelude::*;
    use kernel::str::CStrExt;

    /// The C table as a slice.
    fn c_table() -> &'static [sys::rs_layout_entry] {
        // SAFETY: the shim defines `rs_layout_table` as a constant array of
        // `rs_layout_table_len` entries that lives as long as the module.
        unsafe {
            core::slice::from_raw_parts(
                sys::rs_layout_table.as_ptr(),
                sys::rs_layout_table_len as usize,
            )
        }
    }

    /// Compares one Rust-side entry with entry `idx` of the C table and
    /// reports a mismatch in the kernel log. Returns true when they agree.
    fn agrees(idx: usize, ty: &str, field: &str, rust_value: usize) -> bool {
        let Some(c) = c_table().get(idx) else {
            pr_err!("layout: {ty}.{field}: no C entry #{idx}\n");
            return false;
        };
        // SAFETY: the C table holds string literals.
        let (c_ty, c_field) = unsafe {
            (
                kernel::str::CStr::from_char_ptr(c.type_),
                kernel::str::CStr::from_char_ptr(c.field),
            )
        };
        if c_ty.to_bytes() != ty.as_bytes() || c_field.to_bytes() != field.as_bytes() {
            pr_err!("layout: entry #{idx} is {c_ty:?}.{c_field:?} in C, {ty}.{field} in Rust\n");
            return false;
        }
        if c.value != rust_value {
            pr_err!(
                "layout: {ty}.{field}: C says {}, bindgen says {rust_value}\n",
                c.value
            );
            return false;
        }
        true
    }

    #[test]
    fn bindings_match_c_layout() {
        let mut idx = 0usize;
        let mut mismatches = 0usize;
        macro_rules! layout_size {
            ($t:ident) => {
                mismatches += usize::from(!agrees(idx, stringify!($t), "", size_of::<sys::$t>()));
                idx += 1;
            };
        }
        macro_rules! layout_field {
            ($t:ident, $f:ident, $($path:tt)+) => {
                mismatches += usize::from(!agrees(
                    idx,
                    stringify!($t),
                    stringify!($f),
                    offset_of!(sys::$t, $($path)+),
                ));
                idx += 1;
            };
        }
        include!("../bindings/layout_checks_generated.rs");

        pr_info!("layout: {idx} sizes and offsets compared, {mismatches} differ\n");
        // Every C entry was compared, none differ, and the list is not empty.
        assert_eq!(idx, c_table().len());
        assert_eq!(mismatches, 0);
        assert!(idx > 0);
    }
}
