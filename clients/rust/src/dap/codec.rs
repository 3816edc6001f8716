//! DAP's encoding of its messages: the TLS presentation language (RFC 8446 §3): big-endian integers, fixed byte
//! strings, and variable ones after a 2- or 4-byte length. Every read is bounded by what is left; every error says
//! which message and what was short.

use crate::error::{Error, Result};

/// Reads one message from bytes; [`Reader::finish`] refuses trailing bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
    what: &'static str,
}

impl<'a> Reader<'a> {
    /// A reader of `what` (`"a Report"`, named in errors).
    pub(crate) fn new(bytes: &'a [u8], what: &'static str) -> Self {
        Reader { bytes, at: 0, what }
    }

    /// An error about the message being read.
    pub(crate) fn error(&self, message: impl std::fmt::Display) -> Error {
        Error::value(format!("{} is malformed: {message}", self.what))
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.at == self.bytes.len()
    }

    fn take(&mut self, n: usize, field: &str) -> Result<&'a [u8]> {
        let left = self.bytes.len() - self.at;
        if n > left {
            return Err(self.error(format!("{field} needs {n} bytes at offset {}, {left} left", self.at)));
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    pub(crate) fn array<const N: usize>(&mut self, field: &str) -> Result<[u8; N]> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N, field)?);
        Ok(out)
    }

    pub(crate) fn u8(&mut self) -> Result<u8> {
        Ok(self.take(1, "a uint8")?[0])
    }

    pub(crate) fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(self.array("a uint16")?))
    }

    pub(crate) fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_be_bytes(self.array("a uint32")?))
    }

    pub(crate) fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_be_bytes(self.array("a uint64")?))
    }

    /// `opaque field<0..2^16-1>`.
    pub(crate) fn opaque16(&mut self, field: &str) -> Result<&'a [u8]> {
        let n = self.u16()?;
        self.take(usize::from(n), field)
    }

    /// `opaque field<0..2^32-1>`.
    pub(crate) fn opaque32(&mut self, field: &str) -> Result<&'a [u8]> {
        let n = self.u32()?;
        let n = usize::try_from(n).map_err(|_| self.error(format!("{field} is {n} bytes")))?;
        self.take(n, field)
    }

    /// `Ok` when every byte was read, else an error naming how many are left over.
    pub(crate) fn finish(self) -> Result<()> {
        if !self.is_empty() {
            return Err(self.error(format!("{} trailing bytes after offset {}", self.bytes.len() - self.at, self.at)));
        }
        Ok(())
    }
}

/// Writes one message.
#[derive(Default)]
pub(crate) struct Writer(Vec<u8>);

impl Writer {
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.0
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.0.extend_from_slice(b);
    }

    pub(crate) fn u8(&mut self, v: u8) {
        self.0.push(v);
    }

    pub(crate) fn u16(&mut self, v: u16) {
        self.bytes(&v.to_be_bytes());
    }

    pub(crate) fn u64(&mut self, v: u64) {
        self.bytes(&v.to_be_bytes());
    }

    /// `opaque<0..2^16-1>`: an error naming `what` when `b` is longer.
    pub(crate) fn opaque16(&mut self, b: &[u8], what: &str) -> Result<()> {
        let n = u16::try_from(b.len())
            .map_err(|_| Error::value(format!("{what} is {} bytes, over the 65,535 its encoding allows", b.len())))?;
        self.u16(n);
        self.bytes(b);
        Ok(())
    }

    /// `opaque<0..2^32-1>`: an error naming `what` when `b` is longer.
    pub(crate) fn opaque32(&mut self, b: &[u8], what: &str) -> Result<()> {
        let n = u32::try_from(b.len())
            .map_err(|_| Error::value(format!("{what} is {} bytes, over the 2^32 - 1 its encoding allows", b.len())))?;
        self.bytes(&n.to_be_bytes());
        self.bytes(b);
        Ok(())
    }
}
