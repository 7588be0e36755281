// SPDX-License-Identifier: GPL-2.0

//! An RPC-over-RDMA version 1 header decoder written from RFC 8166 §4
//! (not from the encoder under test), used as the oracle of the property
//! tests: what the encoders write must decode to what they were given.

/// A decoded RDMA segment (RFC 8166 §4.1.3 `xdr_rdma_segment`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seg {
    pub handle: u32,
    pub length: u32,
    pub offset: u64,
}

/// A decoded transport header (RFC 8166 §4.2 `rpcrdma_header`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Body {
    /// RDMA_MSG (0) or RDMA_NOMSG (1) with their chunk lists.
    Chunks {
        proc_: u32,
        read_list: Vec<(u32, Seg)>,
        write_list: Vec<Vec<Seg>>,
        reply_chunk: Option<Vec<Seg>>,
    },
    /// RDMA_ERROR ERR_VERS with the supported range.
    ErrVers { low: u32, high: u32 },
    /// RDMA_ERROR ERR_CHUNK.
    ErrChunk,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    pub xid: u32,
    pub vers: u32,
    pub credits: u32,
    pub body: Body,
    /// Bytes the header took.
    pub len: usize,
}

struct Words<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl Words<'_> {
    fn u32(&mut self) -> Result<u32, String> {
        let b = self
            .bytes
            .get(self.pos..self.pos + 4)
            .ok_or_else(|| format!("truncated at byte {}", self.pos))?;
        self.pos += 4;
        Ok(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn u64(&mut self) -> Result<u64, String> {
        let hi = self.u32()? as u64;
        Ok(hi << 32 | self.u32()? as u64)
    }

    /// An XDR optional-data discriminant: exactly 0 or 1.
    fn present(&mut self) -> Result<bool, String> {
        match self.u32()? {
            0 => Ok(false),
            1 => Ok(true),
            v => Err(format!(
                "bad optional discriminant {v} at byte {}",
                self.pos - 4
            )),
        }
    }

    fn segment(&mut self) -> Result<Seg, String> {
        Ok(Seg {
            handle: self.u32()?,
            length: self.u32()?,
            offset: self.u64()?,
        })
    }

    /// `xdr_write_chunk`: a counted array of segments.
    fn write_chunk(&mut self) -> Result<Vec<Seg>, String> {
        let n = self.u32()?;
        if n as usize > self.bytes.len() / 16 {
            return Err(format!("segment count {n} exceeds the header"));
        }
        (0..n).map(|_| self.segment()).collect()
    }
}

/// Decodes one header; any malformation is an error naming it.
pub fn decode(bytes: &[u8]) -> Result<Header, String> {
    let mut w = Words { bytes, pos: 0 };
    let xid = w.u32()?;
    let vers = w.u32()?;
    let credits = w.u32()?;
    let proc_ = w.u32()?;
    let body = match proc_ {
        0 | 1 => {
            let mut read_list = Vec::new();
            while w.present()? {
                let position = w.u32()?;
                read_list.push((position, w.segment()?));
            }
            let mut write_list = Vec::new();
            while w.present()? {
                write_list.push(w.write_chunk()?);
            }
            let reply_chunk = if w.present()? {
                Some(w.write_chunk()?)
            } else {
                None
            };
            Body::Chunks {
                proc_,
                read_list,
                write_list,
                reply_chunk,
            }
        }
        4 => match w.u32()? {
            1 => Body::ErrVers {
                low: w.u32()?,
                high: w.u32()?,
            },
            2 => Body::ErrChunk,
            e => return Err(format!("unknown rdma_error {e}")),
        },
        p => return Err(format!("unexpected rdma_proc {p} in a reply")),
    };
    Ok(Header {
        xid,
        vers,
        credits,
        body,
        len: w.pos,
    })
}
