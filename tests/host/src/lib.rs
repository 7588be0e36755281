// SPDX-License-Identifier: GPL-2.0

//! Host build of the Send path's kernel-independent core. The sources are
//! the module's own (`src/proto`), mounted at the same crate paths, so what
//! is tested here is what the kernel compiles.

#![allow(dead_code)]

#[path = "../../../src/proto/mod.rs"]
pub(crate) mod proto;

#[cfg(test)]
#[path = "../../../src/proto/vectors.rs"]
mod vectors;

#[cfg(test)]
mod decoder;
#[cfg(test)]
mod encode_props;

#[cfg(test)]
mod vector_tests {
    /// The same byte-level vectors the KUnit suite `rpcrdma_rs_proto` runs.
    #[test]
    fn encoder_vectors() {
        let mut failed = Vec::new();
        for (name, case) in super::vectors::ALL {
            if let Err(what) = case() {
                failed.push(format!("{name}: {what}"));
            }
        }
        assert!(failed.is_empty(), "failed vectors: {failed:?}");
        assert_eq!(super::vectors::ALL.len(), 11);
    }
}
