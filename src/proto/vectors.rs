// SPDX-License-Identifier: GPL-2.0

//! Byte-level test vectors of the header encoders (V1-V9), the pull-up copy
//! (V11) and the RDMA_ERROR identifiers (V12), written once and run twice:
//! by the KUnit suite `rpcrdma_rs_proto` in the module and by `cargo test`
//! on the host. Each case returns `Err` naming the first check that failed.
//! (V10, `svc_rdma_result_payload`, needs a receive ctxt: it is the KUnit
//! suite `rpcrdma_rs_reply`.)

// Paths from the crate root: the kernel crate and the host crate both
// mount the core at `crate::proto` and this file beside it.
use crate::proto::encode::*;
use crate::proto::pullup::{
    check_pull_up, page_fragments, xb_count_sges, Inline, Linearizer, XdrShape,
};
use crate::proto::xdr::XdrWriter;
use crate::proto::{ErrCode, Error, Proc, Segment};

/// A failed check: which one.
pub(crate) type Outcome = Result<(), &'static str>;

macro_rules! check {
    ($cond:expr, $what:expr) => {
        if !$cond {
            return Err($what);
        }
    };
}

const HDR: FixedHeader = FixedHeader {
    xid: 0xdead_beef,
    vers: 1,
    credits: 128,
};

/// Builds a complete RDMA_MSG/RDMA_NOMSG header the way `svc_rdma_sendto`
/// does, returning each encoder's return value.
fn build(
    w: &mut XdrWriter<'_>,
    writes: &[WriteChunk<'_>],
    reply: Option<ReplyChunk<'_>>,
    reply_len: u32,
) -> Result<[usize; 4], Error> {
    let proc_ = if reply.is_some() {
        Proc::NoMsg
    } else {
        Proc::Msg
    };
    Ok([
        encode_fixed(w, &HDR, proc_)?,
        encode_read_list(w)?,
        encode_write_list(w, writes.iter().copied())?,
        encode_reply_chunk(w, reply, reply_len)?,
    ])
}

/// V1: RDMA_MSG without chunks is 28 bytes.
pub(crate) fn v1_msg_no_chunks() -> Outcome {
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    let r = build(&mut w, &[], None, 0);
    check!(r == Ok([16, 4, 4, 4]), "V1 return values");
    check!(
        w.written()
            == [
                0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 0, //
                0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
            ],
        "V1 bytes"
    );
    // The one-reservation encoder of the same header: the same bytes.
    let mut buf2 = [0u8; 64];
    let mut w2 = XdrWriter::new(&mut buf2);
    check!(
        encode_no_chunks(&mut w2, &HDR) == Ok(28),
        "V1 encode_no_chunks return"
    );
    check!(w2.written() == w.written(), "V1 encode_no_chunks bytes");
    // Too small a buffer: an error, and nothing written.
    let mut small = [0u8; 27];
    let mut w3 = XdrWriter::new(&mut small);
    check!(
        encode_no_chunks(&mut w3, &HDR) == Err(Error::MsgSize),
        "V1 encode_no_chunks overflow"
    );
    check!(
        w3.len() == 0 && small == [0u8; 27],
        "V1 encode_no_chunks wrote on overflow"
    );
    Ok(())
}

/// V2: one Write chunk, one segment, payload 5000.
pub(crate) fn v2_one_write_chunk() -> Outcome {
    let segs = [Segment {
        handle: 0x1122_3344,
        length: 8192,
        offset: 0x0000_0001_0000_2000,
    }];
    let chunk = WriteChunk {
        payload_length: 5000,
        segments: &segs,
    };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_write_chunk(&mut w, &chunk) == Ok(24),
        "V2 write_chunk length"
    );
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Ok([16, 4, 28, 4]),
        "V2 return values"
    );
    check!(
        w.written()
            == [
                0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 0, //
                0, 0, 0, 0, //
                0, 0, 0, 1, 0, 0, 0, 1, //
                0x11, 0x22, 0x33, 0x44, 0, 0, 0x13, 0x88, 0, 0, 0, 1, 0, 0, 0x20, 0, //
                0, 0, 0, 0, //
                0, 0, 0, 0,
            ],
        "V2 bytes"
    );
    Ok(())
}

/// V3: two segments share a 6000-byte payload as 4096 + 1904.
pub(crate) fn v3_two_segments() -> Outcome {
    let segs = [
        Segment {
            handle: 1,
            length: 4096,
            offset: 0x1000,
        },
        Segment {
            handle: 2,
            length: 4096,
            offset: 0x9000,
        },
    ];
    let chunk = WriteChunk {
        payload_length: 6000,
        segments: &segs,
    };
    let mut buf = [0u8; 128];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Ok([16, 4, 44, 4]),
        "V3 return values"
    );
    check!(
        w.written().get(20..)
            == Some(
                &[
                    0, 0, 0, 1, 0, 0, 0, 2, //
                    0, 0, 0, 1, 0, 0, 0x10, 0, 0, 0, 0, 0, 0, 0, 0x10, 0, //
                    0, 0, 0, 2, 0, 0, 0x07, 0x70, 0, 0, 0, 0, 0, 0, 0x90, 0, //
                    0, 0, 0, 0, //
                    0, 0, 0, 0,
                ][..]
            ),
        "V3 bytes"
    );
    Ok(())
}

/// V4: an unused Write chunk is echoed with zero segment lengths.
pub(crate) fn v4_unused_write_chunk() -> Outcome {
    let segs = [Segment {
        handle: 0xaabb_ccdd,
        length: 4096,
        offset: 0x10,
    }];
    let chunk = WriteChunk {
        payload_length: 0,
        segments: &segs,
    };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Ok([16, 4, 28, 4]),
        "V4 return values"
    );
    check!(
        w.written().get(20..)
            == Some(
                &[
                    0, 0, 0, 1, 0, 0, 0, 1, //
                    0xaa, 0xbb, 0xcc, 0xdd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x10, //
                    0, 0, 0, 0, //
                    0, 0, 0, 0,
                ][..]
            ),
        "V4 bytes"
    );
    Ok(())
}

/// V5: RDMA_NOMSG with a Reply chunk; the chunk records the reply length.
pub(crate) fn v5_reply_chunk() -> Outcome {
    let segs = [Segment {
        handle: 0x55,
        length: 65536,
        offset: 0x7000,
    }];
    let mut payload = 0u32;
    let reply = ReplyChunk {
        length: 65536,
        payload_length: &mut payload,
        segments: &segs,
    };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[], Some(reply), 1200) == Ok([16, 4, 4, 24]),
        "V5 return values"
    );
    check!(
        w.written()
            == [
                0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 1, //
                0, 0, 0, 0, 0, 0, 0, 0, //
                0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 0x55, 0, 0, 0x04, 0xb0, 0, 0, 0, 0, 0, 0, 0x70, 0,
            ],
        "V5 bytes"
    );
    check!(payload == 1200, "V5 ch_payload_length");

    // The two-segment variant: 3000 bytes as 1024 + 1976.
    let segs = [
        Segment {
            handle: 0xa,
            length: 1024,
            offset: 0,
        },
        Segment {
            handle: 0xb,
            length: 4096,
            offset: 0x400,
        },
    ];
    let mut payload = 0u32;
    let reply = ReplyChunk {
        length: 5120,
        payload_length: &mut payload,
        segments: &segs,
    };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_reply_chunk(&mut w, Some(reply), 3000) == Ok(40),
        "V5b return value"
    );
    check!(
        w.written().get(12..16) == Some(&[0, 0, 4, 0][..]),
        "V5b first length"
    );
    check!(
        w.written().get(28..32) == Some(&[0, 0, 0x07, 0xb8][..]),
        "V5b second length"
    );
    check!(payload == 3000, "V5b ch_payload_length");
    Ok(())
}

/// V6: a reply longer than the Reply chunk is E2BIG, and nothing changes.
pub(crate) fn v6_reply_chunk_too_small() -> Outcome {
    let segs = [Segment {
        handle: 0x55,
        length: 1024,
        offset: 0,
    }];
    let mut payload = 77u32;
    let reply = ReplyChunk {
        length: 1024,
        payload_length: &mut payload,
        segments: &segs,
    };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_reply_chunk(&mut w, Some(reply), 1025) == Err(Error::TooBig),
        "V6 E2BIG"
    );
    check!(w.len() == 0, "V6 nothing written");
    check!(payload == 77, "V6 ch_payload_length untouched");
    Ok(())
}

/// V7: ERR_VERS echoes the client's version and offers 1..1.
pub(crate) fn v7_err_vers() -> Outcome {
    let hdr = FixedHeader { vers: 2, ..HDR };
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_error(&mut w, &hdr, ErrCode::Vers) == Ok(28),
        "V7 length"
    );
    check!(
        w.written()
            == [
                0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 2, 0, 0, 0, 0x80, 0, 0, 0, 4, //
                0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1,
            ],
        "V7 bytes"
    );
    Ok(())
}

/// V8: ERR_CHUNK is 20 bytes.
pub(crate) fn v8_err_chunk() -> Outcome {
    let mut buf = [0u8; 64];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_error(&mut w, &HDR, ErrCode::Chunk) == Ok(20),
        "V8 length"
    );
    check!(
        w.written() == [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 1, 0, 0, 0, 0x80, 0, 0, 0, 4, 0, 0, 0, 2],
        "V8 bytes"
    );
    Ok(())
}

/// V9: every item fails with EMSGSIZE exactly when the buffer is full.
pub(crate) fn v9_overflow() -> Outcome {
    let segs = [Segment {
        handle: 1,
        length: 4096,
        offset: 0,
    }];
    let chunk = WriteChunk {
        payload_length: 100,
        segments: &segs,
    };

    // 16 bytes: the fixed header fits, the Read list does not.
    let mut buf = [0u8; 16];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_fixed(&mut w, &HDR, Proc::Msg) == Ok(16),
        "V9 fixed fits in 16"
    );
    check!(
        encode_read_list(&mut w) == Err(Error::MsgSize),
        "V9 read list at 16"
    );
    check!(w.len() == 16, "V9 failed item wrote nothing (16)");

    // 20 bytes, no chunks: the Write list terminator fails.
    let mut buf = [0u8; 20];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[], None, 0) == Err(Error::MsgSize),
        "V9 terminator at 20"
    );
    check!(w.len() == 20, "V9 items before the failure stay (20)");

    // 24 bytes, one chunk: "present" fits, the segment count does not.
    let mut buf = [0u8; 24];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Err(Error::MsgSize),
        "V9 segcount at 24"
    );
    check!(w.len() == 24, "V9 present word stays (24)");

    // 28 bytes, one 1-segment chunk: the 16-byte segment does not fit.
    let mut buf = [0u8; 28];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Err(Error::MsgSize),
        "V9 segment at 28"
    );
    check!(w.len() == 28, "V9 chunk header written (28)");

    // Exactly enough room succeeds: 16 + 4 + (8 + 16 + 4) + 4 = 52.
    let mut buf = [0u8; 52];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        build(&mut w, &[chunk], None, 0) == Ok([16, 4, 28, 4]),
        "V9 exact fit"
    );

    // ERR_VERS needs 28 bytes, ERR_CHUNK 20.
    let mut buf = [0u8; 27];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_error(&mut w, &HDR, ErrCode::Vers) == Err(Error::MsgSize),
        "V9 ERR_VERS at 27"
    );
    let mut buf = [0u8; 19];
    let mut w = XdrWriter::new(&mut buf);
    check!(
        encode_error(&mut w, &HDR, ErrCode::Chunk) == Err(Error::MsgSize),
        "V9 ERR_CHUNK at 19"
    );
    Ok(())
}

/// V11: SGE counting and the pull-up decision.
pub(crate) fn v11_count_sges_and_pull_up() -> Outcome {
    let x = XdrShape {
        head_len: 100,
        page_base: 100,
        page_len: 8192,
        tail_len: 4,
    };
    let mut frags = page_fragments(x.page_base, x.page_len, 4096);
    check!(frags.next() == Some((0, 100, 3996)), "V11 first fragment");
    check!(frags.next() == Some((1, 0, 4096)), "V11 second fragment");
    check!(frags.next() == Some((2, 0, 100)), "V11 third fragment");
    check!(frags.next().is_none(), "V11 three fragments");
    check!(xb_count_sges(&x, 4096) == 5, "V11 five SGEs");
    // With the header's SGE: 6 of at most 5.
    let sges = 1 + xb_count_sges(&x, 4096);
    check!(
        check_pull_up(28 + 400, sges, 5, 4096) == Ok(Inline::PullUp),
        "V11 small: pull up"
    );
    check!(
        check_pull_up(28 + 8300, sges, 5, 4096) == Err(Error::TooBig),
        "V11 too many SGEs, too big"
    );
    check!(
        check_pull_up(28 + 3000, sges, 5, 4096) == Ok(Inline::PullUp),
        "V11 too many SGEs, fits"
    );
    check!(
        check_pull_up(28 + 3000, 4, 5, 4096) == Ok(Inline::Map),
        "V11 few SGEs: map"
    );
    check!(
        check_pull_up(511, 9, 5, 100) == Ok(Inline::PullUp),
        "V11 threshold is 512"
    );
    check!(
        check_pull_up(512, 2, 5, 4096) == Ok(Inline::Map),
        "V11 512 is not below"
    );
    // Empty head and tail take no SGE; a page-aligned run takes one per page.
    let y = XdrShape {
        head_len: 0,
        page_base: 4096,
        page_len: 8192,
        tail_len: 0,
    };
    check!(xb_count_sges(&y, 4096) == 2, "V11 aligned pages");
    check!(
        page_fragments(4096, 8192, 4096).next() == Some((1, 0, 4096)),
        "V11 page_base skips pages"
    );

    // The linearizer copies in order and refuses to overflow.
    let mut buf = [0u8; 8];
    let mut l = Linearizer::new(&mut buf);
    check!(l.append(&[1, 2, 3]) == Ok(()), "V11 copy head");
    check!(l.append(&[4, 5, 6, 7, 8]) == Ok(()), "V11 copy to the end");
    check!(
        l.append(&[9]) == Err(Error::MsgSize),
        "V11 overflow refused"
    );
    check!(l.len() == 8, "V11 nothing copied on overflow");
    check!(buf == [1, 2, 3, 4, 5, 6, 7, 8], "V11 bytes in order");
    Ok(())
}

/// V12: an RDMA_ERROR takes its XID and version only from bytes the client
/// sent; a message shorter than an XID is not answered.
pub(crate) fn v12_error_ids() -> Outcome {
    let call = [0xde, 0xad, 0xbe, 0xef, 0, 0, 0, 2, 0xff, 0xff];
    check!(error_reply_ids(&[]).is_none(), "V12 empty message");
    check!(error_reply_ids(&call[..3]).is_none(), "V12 three bytes");
    check!(
        error_reply_ids(&call[..4]) == Some((0xdead_beef, 1)),
        "V12 XID only: version 1"
    );
    check!(
        error_reply_ids(&call[..7]) == Some((0xdead_beef, 1)),
        "V12 partial version word: version 1"
    );
    check!(
        error_reply_ids(&call[..8]) == Some((0xdead_beef, 2)),
        "V12 XID and version echoed"
    );
    check!(
        error_reply_ids(&call) == Some((0xdead_beef, 2)),
        "V12 bytes past the version ignored"
    );
    Ok(())
}

/// A named vector.
pub(crate) type Vector = (&'static str, fn() -> Outcome);

/// Every vector, by name, for runners that loop.
pub(crate) const ALL: &[Vector] = &[
    ("v1_msg_no_chunks", v1_msg_no_chunks),
    ("v2_one_write_chunk", v2_one_write_chunk),
    ("v3_two_segments", v3_two_segments),
    ("v4_unused_write_chunk", v4_unused_write_chunk),
    ("v5_reply_chunk", v5_reply_chunk),
    ("v6_reply_chunk_too_small", v6_reply_chunk_too_small),
    ("v7_err_vers", v7_err_vers),
    ("v8_err_chunk", v8_err_chunk),
    ("v9_overflow", v9_overflow),
    ("v11_count_sges_and_pull_up", v11_count_sges_and_pull_up),
    ("v12_error_ids", v12_error_ids),
];
