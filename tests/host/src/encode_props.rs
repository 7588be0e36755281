// SPDX-License-Identifier: GPL-2.0

//! Property tests: random chunk lists are encoded by the module's encoders
//! and decoded by the independent RFC 8166 decoder.

use crate::decoder::{decode, Body, Seg};
use crate::proto::encode::*;
use crate::proto::xdr::XdrWriter;
use crate::proto::{ErrCode, Error, Proc, Segment};
use proptest::prelude::*;

fn segment() -> impl Strategy<Value = Segment> {
    (any::<u32>(), 0u32..=1 << 20, any::<u64>()).prop_map(|(handle, length, offset)| Segment {
        handle,
        length,
        offset,
    })
}

fn chunk() -> impl Strategy<Value = (Vec<Segment>, u32)> {
    prop::collection::vec(segment(), 1..6).prop_flat_map(|segs| {
        let total: u32 = segs.iter().map(|s| s.length).sum();
        // Payloads from unused (0) to the whole chunk.
        (Just(segs), 0..=total)
    })
}

const HDR: FixedHeader = FixedHeader {
    xid: 0x0102_0304,
    vers: 1,
    credits: 32,
};

/// What the client must see for a chunk carrying `payload` bytes: the
/// segments in order, lengths filling each one before the next.
fn expected(segs: &[Segment], payload: u32) -> Vec<Seg> {
    let mut left = payload;
    segs.iter()
        .map(|s| {
            let length = left.min(s.length);
            left -= length;
            Seg {
                handle: s.handle,
                length,
                offset: s.offset,
            }
        })
        .collect()
}

fn encode_reply(
    buf: &mut [u8],
    writes: &[(Vec<Segment>, u32)],
    reply: Option<&(Vec<Segment>, u32)>,
    reply_len: u32,
) -> (Result<usize, Error>, usize, u32) {
    let mut w = XdrWriter::new(buf);
    let mut payload = 0;
    let rc = (|| {
        let proc_ = if reply.is_some() {
            Proc::NoMsg
        } else {
            Proc::Msg
        };
        let mut n = encode_fixed(&mut w, &HDR, proc_)?;
        n += encode_read_list(&mut w)?;
        n += encode_write_list(
            &mut w,
            writes.iter().map(|(s, p)| WriteChunk {
                payload_length: *p,
                segments: s,
            }),
        )?;
        let reply = reply.map(|(s, _)| ReplyChunk {
            length: s.iter().map(|s| s.length).sum(),
            payload_length: &mut payload,
            segments: s,
        });
        n += encode_reply_chunk(&mut w, reply, reply_len)?;
        Ok(n)
    })();
    let len = w.len();
    (rc, len, payload)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// Every Write chunk comes back in order with its segments, lengths
    /// distributed over them, and the byte count returned is what was
    /// written.
    #[test]
    fn write_list_round_trips(writes in prop::collection::vec(chunk(), 0..4)) {
        let mut buf = vec![0u8; 4096];
        let (rc, len, _) = encode_reply(&mut buf, &writes, None, 0);
        prop_assert_eq!(rc, Ok(len));
        let h = decode(&buf[..len]).map_err(TestCaseError::fail)?;
        prop_assert_eq!(h.len, len);
        prop_assert_eq!((h.xid, h.vers, h.credits), (HDR.xid, HDR.vers, HDR.credits));
        let want: Vec<Vec<Seg>> = writes.iter().map(|(s, p)| expected(s, *p)).collect();
        prop_assert_eq!(h.body, Body::Chunks {
            proc_: 0, read_list: vec![], write_list: want, reply_chunk: None,
        });
    }

    /// A Reply chunk makes RDMA_NOMSG, carries the reply length, and records
    /// it; a reply longer than the chunk is E2BIG.
    #[test]
    fn reply_chunk_round_trips(reply in chunk(), extra in 0u32..3) {
        let total: u32 = reply.0.iter().map(|s| s.length).sum();
        let reply_len = reply.1.saturating_add(extra * 4096);
        let mut buf = vec![0u8; 4096];
        let (rc, len, payload) = encode_reply(&mut buf, &[], Some(&reply), reply_len);
        if reply_len > total {
            prop_assert_eq!(rc, Err(Error::TooBig));
            prop_assert_eq!(payload, 0);
            // The header so far is intact up to the failed Reply chunk.
            prop_assert_eq!(len, 24);
        } else {
            prop_assert_eq!(rc, Ok(len));
            prop_assert_eq!(payload, reply_len);
            let h = decode(&buf[..len]).map_err(TestCaseError::fail)?;
            prop_assert_eq!(h.body, Body::Chunks {
                proc_: 1, read_list: vec![], write_list: vec![],
                reply_chunk: Some(expected(&reply.0, reply_len)),
            });
        }
    }

    /// With any smaller buffer the same header fails with EMSGSIZE, never
    /// writes past the buffer, and never panics.
    #[test]
    fn short_buffers_fail_cleanly(writes in prop::collection::vec(chunk(), 0..3), cut in 0usize..200) {
        let mut big = vec![0u8; 4096];
        let (rc, need, _) = encode_reply(&mut big, &writes, None, 0);
        prop_assert_eq!(rc, Ok(need));
        let cap = need.saturating_sub(cut.max(1));
        let mut buf = vec![0u8; cap];
        let (rc, len, _) = encode_reply(&mut buf, &writes, None, 0);
        prop_assert_eq!(rc, Err(Error::MsgSize));
        prop_assert!(len <= cap);
        // What was written is a prefix of the full header.
        prop_assert_eq!(&buf[..len], &big[..len]);
    }

    /// RDMA_ERROR headers decode to what was asked for.
    #[test]
    fn error_headers_decode(xid in any::<u32>(), vers in any::<u32>(), vers_err in any::<bool>()) {
        let hdr = FixedHeader { xid, vers, credits: 7 };
        let mut buf = [0u8; 64];
        let mut w = XdrWriter::new(&mut buf);
        let code = if vers_err { ErrCode::Vers } else { ErrCode::Chunk };
        let n = encode_error(&mut w, &hdr, code);
        prop_assert_eq!(n, Ok(w.len()));
        let len = w.len();
        let h = decode(&buf[..len]).map_err(TestCaseError::fail)?;
        prop_assert_eq!((h.xid, h.vers, h.credits, h.len), (xid, vers, 7, len));
        prop_assert_eq!(h.body, if vers_err { Body::ErrVers { low: 1, high: 1 } } else { Body::ErrChunk });
    }
}

mod pullup_props {
    use crate::proto::pullup::{
        check_pull_up, one_payload_inline_len, page_fragments, xb_count_sges, Inline, XdrShape,
    };
    use crate::proto::Error;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]

        /// Fragments tile the page data exactly: in order, contiguous, each
        /// inside one page, summing to the length; the SGE count agrees.
        #[test]
        fn fragments_tile_page_data(base in 0u32..100_000, len in 0u32..300_000,
                                    head in 0u32..4096, tail in 0u32..4) {
            const PS: u32 = 4096;
            let mut pos = base as u64;
            let mut n = 0u32;
            for (index, offset, flen) in page_fragments(base, len, PS) {
                prop_assert!(flen > 0 && offset + flen <= PS);
                prop_assert_eq!(index as u64 * PS as u64 + offset as u64, pos);
                pos += flen as u64;
                n += 1;
            }
            prop_assert_eq!(pos, base as u64 + len as u64);
            let s = XdrShape { head_len: head, page_base: base, page_len: len, tail_len: tail };
            prop_assert_eq!(xb_count_sges(&s, PS), n + u32::from(head > 0) + u32::from(tail > 0));
        }

        /// The one-payload shortcut agrees with C's walk (a model of
        /// `pcl_process_nonpayloads` for one used chunk, in C's wrapping
        /// `unsigned int` arithmetic, with `xdr_buf_subsegment`'s check):
        /// whenever it answers, the walk succeeds and its regions add up to
        /// the answer; it declines where the walk fails or wraps, and for a
        /// reply longer than its segments (then the caller walks).
        #[test]
        fn one_payload_len_matches_c_walk(xdr_len in 0u32..20_000, slack in 0u32..8,
                                          short in 0u32..8, position in 0u32..20_000,
                                          payload in 1u32..20_000, huge in any::<bool>()) {
            let position = if huge { u32::MAX - position } else { position };
            // Segments hold the reply and `slack` more, or `short` less.
            let seg_len = (u64::from(xdr_len) + u64::from(slack)).saturating_sub(u64::from(short));
            let subsegment_ok = |base: u32, len: u32| u64::from(base) + u64::from(len) <= seg_len;
            // The C walk.
            let end = position.wrapping_add(payload).wrapping_add(3) & !3;
            let mut total = 0u64;
            let mut ok = true;
            for (base, len) in [(0, position), (end, xdr_len.wrapping_sub(end))] {
                if len == 0 {
                    continue;
                }
                if !subsegment_ok(base, len) {
                    ok = false;
                    break;
                }
                total += u64::from(len);
            }
            let wraps = u64::from(position) + u64::from(payload) + 3 > u64::from(u32::MAX);
            match one_payload_inline_len(xdr_len, seg_len, position, payload) {
                Some(n) => {
                    prop_assert!(ok && !wraps);
                    prop_assert_eq!(u64::from(n), total);
                }
                // Or conservatively, a reply longer than its segments.
                None => prop_assert!(!ok || wraps || u64::from(xdr_len) > seg_len),
            }
        }

        /// The pull-up decision never asks to copy more than the buffer
        /// holds, and never maps more SGEs than the device allows.
        #[test]
        fn pull_up_respects_limits(len in 0u32..20_000, sges in 1u32..40,
                                   max_sges in 2u32..32, max_req in 1024u32..16_384) {
            match check_pull_up(len, sges, max_sges, max_req) {
                Ok(Inline::PullUp) => prop_assert!(len < 512 || len <= max_req),
                Ok(Inline::Map) => prop_assert!(sges < max_sges),
                Err(e) => {
                    prop_assert_eq!(e, Error::TooBig);
                    prop_assert!(len >= 512 && sges >= max_sges && len > max_req);
                }
            }
        }
    }
}

/// The Reply chunk carries the reply minus the result payloads (with their
/// XDR padding) that went into Write chunks, up to the first unused chunk.
#[test]
fn reply_chunk_bytes_excludes_write_payloads() {
    let seg = [Segment { handle: 1, length: 8192, offset: 0 }];
    let wc = |payload_length| WriteChunk { payload_length, segments: &seg };
    // No Write list: the whole reply.
    assert_eq!(reply_chunk_bytes(1000, []), Some(1000));
    // A READ of 4097 bytes: 4100 bytes of padded payload are not in it.
    assert_eq!(reply_chunk_bytes(4300, [wc(4097)]), Some(200));
    assert_eq!(reply_chunk_bytes(4300, [wc(4096)]), Some(204));
    // Chunks after the first unused one are not looked at.
    assert_eq!(reply_chunk_bytes(4300, [wc(4096), wc(0), wc(100)]), Some(204));
    assert_eq!(reply_chunk_bytes(4400, [wc(4096), wc(100)]), Some(204));
    // Payloads larger than the reply: inconsistent, refused.
    assert_eq!(reply_chunk_bytes(100, [wc(4096)]), None);
    assert_eq!(reply_chunk_bytes(u32::MAX, [wc(u32::MAX)]), None);
}

proptest! {
    /// Never more than the reply; equal to it without used Write chunks.
    #[test]
    fn reply_chunk_bytes_bounded(len in any::<u32>(), payloads in prop::collection::vec(0u32..1 << 20, 0..4)) {
        let seg = [Segment { handle: 1, length: 1, offset: 0 }];
        let chunks: Vec<_> = payloads.iter().map(|&p| WriteChunk { payload_length: p, segments: &seg }).collect();
        let used: u64 = payloads.iter().take_while(|&&p| p != 0).map(|&p| (u64::from(p) + 3) & !3).sum();
        match reply_chunk_bytes(len, chunks) {
            Some(n) => prop_assert_eq!(u64::from(n), u64::from(len) - used),
            None => prop_assert!(used > u64::from(len)),
        }
    }
}
