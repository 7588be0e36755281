// SPDX-License-Identifier: GPL-2.0

//! A bounded writer over a byte buffer: the transport header is built in
//! `sc_xprt_buf`, whose size is fixed (`sc_max_req_size`), so every
//! reservation can fail with [`Error::MsgSize`], as `xdr_reserve_space`
//! does in C; a pulled-up reply is copied behind the header the same way.
//! Nothing is written by a reservation that fails.

use super::Error;

/// Appends big-endian XDR words to a caller-owned buffer.
pub(crate) struct XdrWriter<'a> {
    buf: &'a mut [u8],
    len: usize,
}

impl<'a> XdrWriter<'a> {
    /// A writer that fills `buf` from its start.
    pub(crate) fn new(buf: &'a mut [u8]) -> Self {
        Self { buf, len: 0 }
    }

    /// Bytes written so far.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The bytes written so far (for the test vectors: the Send path itself
    /// hands the buffer to the device by length).
    #[cfg(any(test, rpcrdma_kunit))]
    pub(crate) fn written(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }

    /// Reserves `n` bytes and returns them, or fails without writing.
    pub(crate) fn reserve(&mut self, n: usize) -> Result<&mut [u8], Error> {
        let end = self.len.checked_add(n).ok_or(Error::MsgSize)?;
        let out = self.buf.get_mut(self.len..end).ok_or(Error::MsgSize)?;
        self.len = end;
        Ok(out)
    }

    /// Appends bytes. (The pull-up copies from raw sources through
    /// [`Self::reserve`]; this is for the vectors.)
    #[cfg(any(test, rpcrdma_kunit))]
    pub(crate) fn append(&mut self, src: &[u8]) -> Result<(), Error> {
        self.reserve(src.len())?.copy_from_slice(src);
        Ok(())
    }

    /// Appends one 32-bit word.
    pub(crate) fn put_u32(&mut self, v: u32) -> Result<(), Error> {
        self.reserve(4)?.copy_from_slice(&v.to_be_bytes());
        Ok(())
    }

    /// Appends several words at once: all of them or none.
    pub(crate) fn put_words(&mut self, words: &[u32]) -> Result<(), Error> {
        let out = self.reserve(words.len().checked_mul(4).ok_or(Error::MsgSize)?)?;
        for (dst, w) in out.chunks_exact_mut(4).zip(words) {
            dst.copy_from_slice(&w.to_be_bytes());
        }
        Ok(())
    }
}
