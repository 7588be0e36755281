// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_layout`: the generated bindings against the C
//! compiler. Every size and offset listed in `bindings/layout_fields.h` is
//! computed twice, by bindgen's Rust layout here and by `sizeof`/`offsetof`
//! in the C shim, and must agree, or the Rust Send path would read and write
//! the shared `svc_rdma_send_ctxt`/`svcxprt_rdma` at the wrong places.

#[kernel::prelude::kunit_tests(rpcrdma_rs_layout)]
mod tests {
    use crate::sys;
    use core::mem::{offset_of, size_of};
    use kernel::prelude::*;

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

    /// The bytes of the NUL-terminated string at `p`, without the NUL. A
    /// wrapping count: the `CStr` constructors, inlined here, bring an
    /// overflow-checked `len + 1` (a panic path) into the module.
    ///
    /// # Safety
    ///
    /// `p` is a NUL-terminated string that lives as long as the module.
    unsafe fn c_bytes(p: *const u8) -> &'static [u8] {
        let mut n = 0usize;
        // SAFETY: the string is NUL-terminated (`# Safety`): every byte up
        // to its NUL is readable.
        while unsafe { *p.add(n) } != 0 {
            n = n.wrapping_add(1);
        }
        // SAFETY: the `n` bytes before the NUL, alive for the module's life.
        unsafe { core::slice::from_raw_parts(p, n) }
    }

    /// Compares one Rust-side entry with entry `idx` of the C table and
    /// reports a mismatch in the kernel log. Returns true when they agree.
    fn agrees(idx: usize, ty: &str, field: &str, rust_value: usize) -> bool {
        let Some(c) = c_table().get(idx) else {
            pr_err!("layout: {ty}.{field}: no C entry #{idx}\n");
            return false;
        };
        // SAFETY: the C table holds string literals.
        let (c_ty, c_field) = unsafe { (c_bytes(c.type_), c_bytes(c.field)) };
        if c_ty != ty.as_bytes() || c_field != field.as_bytes() {
            pr_err!(
                "layout: entry #{idx} is {}.{} in C, {ty}.{field} in Rust\n",
                kernel::str::BStr::from_bytes(c_ty),
                kernel::str::BStr::from_bytes(c_field)
            );
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
        macro_rules! layout_size {
            ($t:ident) => {
                (stringify!($t), "", size_of::<sys::$t>())
            };
        }
        macro_rules! layout_field {
            ($t:ident, $f:ident, $($path:tt)+) => {
                (stringify!($t), stringify!($f), offset_of!(sys::$t, $($path)+))
            };
        }
        // (type, field, size or offset) as bindgen laid the types out, in
        // the order of bindings/layout_fields.h.
        let rust: &[(&str, &str, usize)] = &include!(concat!(
            env!("RPCRDMA_RS_GENERATED"),
            "/layout_checks_generated.rs"
        ));

        // A counter of our own: `enumerate` and `+=` inherit the kernel's
        // overflow checks (panic calls).
        let mut mismatches = 0usize;
        let mut idx = 0usize;
        for (ty, field, value) in rust {
            mismatches = mismatches.saturating_add(usize::from(!agrees(idx, ty, field, *value)));
            idx = idx.wrapping_add(1);
        }
        pr_info!(
            "layout: {} sizes and offsets compared, {mismatches} differ\n",
            rust.len()
        );
        // Every C entry was compared, none differ, and the list is not empty.
        assert_eq!(rust.len(), c_table().len());
        assert_eq!(mismatches, 0);
        assert!(!rust.is_empty());
    }
}
