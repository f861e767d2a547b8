//! A cursor over a window of file bytes that cannot panic and reports
//! absolute file offsets in its errors.

use crate::addr::{Addr, Sizes};
use crate::error::{Error, Result};

/// A little-endian reader over `data`, whose first byte lives at absolute file
/// offset `base`. Every accessor returns `Result`; nothing indexes.
#[derive(Debug, Clone)]
pub struct Cursor<'a> {
    data: &'a [u8],
    pos: usize,
    base: u64,
}

impl<'a> Cursor<'a> {
    /// A cursor over `data` whose first byte is at absolute offset `base`.
    pub fn new(data: &'a [u8], base: u64) -> Self {
        Cursor { data, pos: 0, base }
    }
    /// Position relative to the start of the window.
    pub fn pos(&self) -> usize {
        self.pos
    }
    /// Absolute file offset of the next byte.
    pub fn offset(&self) -> u64 {
        self.base.saturating_add(self.pos as u64)
    }
    /// Absolute offset of the window's first byte.
    pub fn base(&self) -> u64 {
        self.base
    }
    /// The whole window.
    pub fn data(&self) -> &'a [u8] {
        self.data
    }
    /// Bytes left.
    pub fn remaining(&self) -> usize {
        self.data.len().saturating_sub(self.pos)
    }
    /// Whether no bytes are left.
    pub fn is_empty(&self) -> bool {
        self.remaining() == 0
    }
    /// The unread bytes, without consuming them.
    pub fn rest(&self) -> &'a [u8] {
        self.data.get(self.pos..).unwrap_or(&[])
    }
    /// Move to window position `pos`.
    ///
    /// # Errors
    /// `Truncated` if `pos` lies past the window.
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.data.len() {
            return Err(Error::truncated(
                "seek past end of structure",
                self.base.saturating_add(pos as u64),
            ));
        }
        self.pos = pos;
        Ok(())
    }

    /// Take `n` bytes.
    ///
    /// # Errors
    /// `Truncated` if fewer than `n` bytes remain.
    #[inline]
    pub fn read_bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        match end.and_then(|e| self.data.get(self.pos..e)) {
            Some(s) => {
                self.pos += n;
                Ok(s)
            }
            None => Err(self.eof(n)),
        }
    }
    #[cold]
    fn eof(&self, n: usize) -> Error {
        Error::truncated(
            alloc::format!("need {n} bytes, {} left", self.remaining()),
            self.offset(),
        )
    }
    /// Skip `n` bytes.
    ///
    /// # Errors
    /// `Truncated` if fewer than `n` bytes remain.
    pub fn skip(&mut self, n: usize) -> Result<()> {
        self.read_bytes(n).map(|_| ())
    }
    /// Take a fixed-size array.
    ///
    /// # Errors
    /// `Truncated`.
    #[inline]
    pub fn read_array<const N: usize>(&mut self) -> Result<[u8; N]> {
        let s = self.read_bytes(N)?;
        let mut a = [0u8; N];
        a.copy_from_slice(s);
        Ok(a)
    }
    /// Split off a sub-cursor over the next `n` bytes (the window of a nested structure).
    ///
    /// # Errors
    /// `Truncated`.
    pub fn sub(&mut self, n: usize) -> Result<Cursor<'a>> {
        let base = self.offset();
        let s = self.read_bytes(n)?;
        Ok(Cursor::new(s, base))
    }
    /// Peek at the next byte without consuming it.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn peek_u8(&self) -> Result<u8> {
        self.data.get(self.pos).copied().ok_or_else(|| self.eof(1))
    }
    /// Read a `u8`.
    ///
    /// # Errors
    /// `Truncated`.
    #[inline]
    pub fn read_u8(&mut self) -> Result<u8> {
        Ok(self.read_array::<1>()?[0])
    }
    /// Read a little-endian `u16`.
    ///
    /// # Errors
    /// `Truncated`.
    #[inline]
    pub fn read_u16(&mut self) -> Result<u16> {
        Ok(u16::from_le_bytes(self.read_array()?))
    }
    /// Read a little-endian `u32`.
    ///
    /// # Errors
    /// `Truncated`.
    #[inline]
    pub fn read_u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.read_array()?))
    }
    /// Read a little-endian `u64`.
    ///
    /// # Errors
    /// `Truncated`.
    #[inline]
    pub fn read_u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.read_array()?))
    }
    /// Read an unsigned little-endian integer of `n` bytes (0..=8).
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` if `n > 8`.
    pub fn read_uint(&mut self, n: usize) -> Result<u64> {
        if n > 8 {
            return Err(Error::corrupt(
                alloc::format!("integer of {n} bytes"),
                self.offset(),
            ));
        }
        let s = self.read_bytes(n)?;
        // The common widths (offsets and lengths of 8 and 4 bytes) at once.
        if let Ok(b) = <[u8; 8]>::try_from(s) {
            return Ok(u64::from_le_bytes(b));
        }
        if let Ok(b) = <[u8; 4]>::try_from(s) {
            return Ok(u64::from(u32::from_le_bytes(b)));
        }
        let mut v = 0u64;
        for (i, b) in s.iter().enumerate() {
            v |= u64::from(*b) << (8 * i);
        }
        Ok(v)
    }
    /// Read an address of `sizes.offsets` bytes; all-ones becomes [`Addr::UNDEF`].
    ///
    /// # Errors
    /// `Truncated`.
    pub fn read_addr(&mut self, sizes: Sizes) -> Result<Addr> {
        let n = usize::from(sizes.offsets);
        let v = self.read_uint(n)?;
        let all_ones = if n >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * n)) - 1
        };
        Ok(if v == all_ones { Addr::UNDEF } else { Addr(v) })
    }
    /// Read a length of `sizes.lengths` bytes.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn read_len(&mut self, sizes: Sizes) -> Result<u64> {
        self.read_uint(usize::from(sizes.lengths))
    }
    /// Read a length that is "undefined" when all bits are set (returns `None`).
    ///
    /// # Errors
    /// `Truncated`.
    pub fn read_len_opt(&mut self, sizes: Sizes) -> Result<Option<u64>> {
        let n = usize::from(sizes.lengths);
        let v = self.read_uint(n)?;
        let all_ones = if n >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * n)) - 1
        };
        Ok(if v == all_ones { None } else { Some(v) })
    }
    /// Expect a 4-byte signature such as `b"OHDR"`.
    ///
    /// # Errors
    /// `Corrupt` naming the expected signature.
    pub fn expect_signature(&mut self, sig: &[u8; 4]) -> Result<()> {
        let at = self.offset();
        let got = self.read_array::<4>()?;
        if &got != sig {
            return Err(Error::corrupt(
                alloc::format!(
                    "bad signature: expected {:?}, found {:?}",
                    core::str::from_utf8(sig).unwrap_or("?"),
                    alloc::string::String::from_utf8_lossy(&got)
                ),
                at,
            ));
        }
        Ok(())
    }
    /// Read a NUL-terminated string (the NUL is consumed, not returned).
    ///
    /// # Errors
    /// `Truncated` if no NUL is found.
    pub fn read_cstr(&mut self) -> Result<&'a [u8]> {
        let rest = self.rest();
        match rest.iter().position(|&b| b == 0) {
            Some(i) => {
                let s = self.read_bytes(i)?;
                self.skip(1)?;
                Ok(s)
            }
            None => Err(Error::truncated("unterminated string", self.offset())),
        }
    }
    /// Skip to the next multiple of `align` relative to the window start.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn align(&mut self, align: usize) -> Result<()> {
        if align <= 1 {
            return Ok(());
        }
        let r = self.pos % align;
        if r != 0 {
            self.skip(align - r)?;
        }
        Ok(())
    }
    /// Check that `count` items of at least `min_size` bytes each can still be
    /// read, before allocating for them.
    ///
    /// # Errors
    /// `Truncated` when they cannot.
    pub fn ensure_count(&self, count: u64, min_size: usize) -> Result<usize> {
        let need = count.checked_mul(min_size.max(1) as u64);
        match need {
            Some(n) if n <= self.remaining() as u64 => {
                Ok(usize::try_from(count).unwrap_or(usize::MAX))
            }
            _ => Err(Error::truncated(
                alloc::format!(
                    "{count} entries of {min_size} bytes do not fit in {} bytes",
                    self.remaining()
                ),
                self.offset(),
            )),
        }
    }
    /// Require that the window is fully consumed.
    ///
    /// # Errors
    /// `Corrupt` when bytes are left over.
    pub fn finish(&self, what: &str) -> Result<()> {
        if self.remaining() != 0 {
            return Err(Error::corrupt(
                alloc::format!("{what}: {} unexpected trailing bytes", self.remaining()),
                self.offset(),
            ));
        }
        Ok(())
    }
    /// A `Corrupt` error at the current offset.
    #[cold]
    pub fn corrupt(&self, message: impl Into<alloc::string::String>) -> Error {
        Error::corrupt(message, self.offset())
    }
    /// An `Unsupported` error at the current offset.
    #[cold]
    pub fn unsupported(&self, message: impl Into<alloc::string::String>) -> Error {
        Error::unsupported(message).with_offset(self.offset())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_and_bounds() {
        let d = [1u8, 2, 3, 4, 5, 6, 7, 8, 0xff, 0xff];
        let mut c = Cursor::new(&d, 100);
        assert_eq!(c.read_u16().unwrap(), 0x0201);
        assert_eq!(c.offset(), 102);
        assert_eq!(c.read_uint(3).unwrap(), 0x050403);
        let e = c.read_u64().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Truncated);
        assert_eq!(e.offset(), Some(105));
        c.seek(8).unwrap();
        assert!(c
            .read_addr(Sizes {
                offsets: 2,
                lengths: 2
            })
            .unwrap()
            .is_undef());
        assert!(c.ensure_count(u64::MAX, 8).is_err());
    }
}
