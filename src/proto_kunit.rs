// SPDX-License-Identifier: GPL-2.0

//! KUnit suite `rpcrdma_rs_proto`: the header encoder vectors of
//! `proto/vectors.rs`, run inside the kernel (the host tests run the same
//! vectors with `cargo test`).

#[cfg(rpcrdma_kunit)]
#[path = "proto/vectors.rs"]
mod vectors;

use kernel::prelude::kunit_tests;

#[kunit_tests(rpcrdma_rs_proto)]
mod tests {
    use super::vectors;

    #[test]
    fn v1_msg_no_chunks() {
        assert_eq!(vectors::v1_msg_no_chunks(), Ok(()));
    }

    #[test]
    fn v2_one_write_chunk() {
        assert_eq!(vectors::v2_one_write_chunk(), Ok(()));
    }

    #[test]
    fn v3_two_segments() {
        assert_eq!(vectors::v3_two_segments(), Ok(()));
    }

    #[test]
    fn v4_unused_write_chunk() {
        assert_eq!(vectors::v4_unused_write_chunk(), Ok(()));
    }

    #[test]
    fn v5_reply_chunk() {
        assert_eq!(vectors::v5_reply_chunk(), Ok(()));
    }

    #[test]
    fn v6_reply_chunk_too_small() {
        assert_eq!(vectors::v6_reply_chunk_too_small(), Ok(()));
    }

    #[test]
    fn v7_err_vers() {
        assert_eq!(vectors::v7_err_vers(), Ok(()));
    }

    #[test]
    fn v8_err_chunk() {
        assert_eq!(vectors::v8_err_chunk(), Ok(()));
    }

    #[test]
    fn v9_overflow() {
        assert_eq!(vectors::v9_overflow(), Ok(()));
    }

    #[test]
    fn v11_count_sges_and_pull_up() {
        assert_eq!(vectors::v11_count_sges_and_pull_up(), Ok(()));
    }

    #[test]
    fn v12_error_ids() {
        assert_eq!(vectors::v12_error_ids(), Ok(()));
    }

    /// The list the host runner loops over holds every vector above.
    #[test]
    fn all_vectors_listed() {
        assert_eq!(vectors::ALL.len(), 11);
        for (_, case) in vectors::ALL {
            assert_eq!(case(), Ok(()));
        }
    }
}
