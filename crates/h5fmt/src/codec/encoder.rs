//! The write-side mirror of [`crate::codec::Cursor`]: a little-endian byte
//! sink with `put_*` accessors, widths taken from [`Sizes`], and the lookup3
//! checksum helpers of the v2-era structures.
//!
//! Appending to a `Vec` cannot go out of bounds; values wider than their
//! field (an address that does not fit in "size of offsets" bytes) are a
//! programming error of the planner, caught by a debug assertion and
//! otherwise truncated to the field width.

use crate::addr::{Addr, Sizes};
use crate::codec::lookup3;
use alloc::vec::Vec;

/// A growable little-endian encoder.
#[derive(Debug, Clone, Default)]
pub struct Encoder {
    buf: Vec<u8>,
}

impl Encoder {
    /// An empty encoder.
    pub fn new() -> Self {
        Encoder { buf: Vec::new() }
    }
    /// An empty encoder with room for `n` bytes.
    pub fn with_capacity(n: usize) -> Self {
        Encoder {
            buf: Vec::with_capacity(n),
        }
    }
    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.buf.len()
    }
    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }
    /// The bytes written so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.buf
    }
    /// The encoded bytes.
    pub fn into_vec(self) -> Vec<u8> {
        self.buf
    }
    /// Append one byte.
    pub fn put_u8(&mut self, v: u8) {
        self.buf.push(v);
    }
    /// Append a little-endian u16.
    pub fn put_u16(&mut self, v: u16) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a little-endian u32.
    pub fn put_u32(&mut self, v: u32) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append a little-endian u64.
    pub fn put_u64(&mut self, v: u64) {
        self.buf.extend_from_slice(&v.to_le_bytes());
    }
    /// Append the low `n` bytes (n ≤ 8) of `v`, little-endian.
    pub fn put_uint(&mut self, v: u64, n: usize) {
        debug_assert!(n <= 8, "field of {n} bytes");
        debug_assert!(
            n >= 8 || v >> (8 * n) == 0,
            "value {v:#x} does not fit in {n} bytes"
        );
        let b = v.to_le_bytes();
        self.buf.extend(b.iter().take(n));
        for _ in 8..n {
            self.buf.push(0);
        }
    }
    /// Append an address in "size of offsets" bytes (UNDEF as all ones).
    pub fn put_addr(&mut self, a: Addr, sizes: Sizes) {
        let n = usize::from(sizes.offsets);
        if a.is_undef() {
            self.put_bytes_repeat(0xff, n);
        } else {
            self.put_uint(a.get(), n);
        }
    }
    /// Append a length in "size of lengths" bytes.
    pub fn put_len(&mut self, v: u64, sizes: Sizes) {
        if v == u64::MAX {
            self.put_bytes_repeat(0xff, usize::from(sizes.lengths));
        } else {
            self.put_uint(v, usize::from(sizes.lengths));
        }
    }
    /// Append raw bytes.
    pub fn put_bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(b);
    }
    /// Append `n` copies of `byte`.
    pub fn put_bytes_repeat(&mut self, byte: u8, n: usize) {
        self.buf.resize(self.buf.len().saturating_add(n), byte);
    }
    /// Append `n` zero bytes.
    pub fn put_zeros(&mut self, n: usize) {
        self.put_bytes_repeat(0, n);
    }
    /// Append zeros until the length is a multiple of `align` (relative to
    /// the encoder's start).
    pub fn pad_to(&mut self, align: usize) {
        if align > 1 {
            let rem = self.buf.len() % align;
            if rem != 0 {
                self.put_zeros(align - rem);
            }
        }
    }
    /// Append a NUL-terminated string.
    pub fn put_cstr(&mut self, s: &str) {
        self.put_bytes(s.as_bytes());
        self.put_u8(0);
    }
    /// Append the lookup3 checksum of everything written since `start`.
    pub fn put_checksum_from(&mut self, start: usize) {
        let sum = lookup3(self.buf.get(start..).unwrap_or(&[]), 0);
        self.put_u32(sum);
    }
}

/// Round `n` up to a multiple of 8.
pub fn align8(n: usize) -> usize {
    n.div_ceil(8) * 8
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::Cursor;

    #[test]
    fn mirrors_the_cursor() {
        let s = Sizes {
            offsets: 4,
            lengths: 2,
        };
        let mut e = Encoder::new();
        e.put_u8(1);
        e.put_u16(0x0203);
        e.put_u32(0x0405_0607);
        e.put_u64(9);
        e.put_uint(0x0a0b0c, 3);
        e.put_addr(Addr(0x1234), s);
        e.put_addr(Addr::UNDEF, s);
        e.put_len(77, s);
        let b = e.into_vec();
        let mut c = Cursor::new(&b, 0);
        assert_eq!(c.read_u8().unwrap(), 1);
        assert_eq!(c.read_u16().unwrap(), 0x0203);
        assert_eq!(c.read_u32().unwrap(), 0x0405_0607);
        assert_eq!(c.read_u64().unwrap(), 9);
        assert_eq!(c.read_uint(3).unwrap(), 0x0a0b0c);
        assert_eq!(c.read_addr(s).unwrap(), Addr(0x1234));
        assert!(c.read_addr(s).unwrap().is_undef());
        assert_eq!(c.read_len(s).unwrap(), 77);
        assert!(c.is_empty());
    }

    #[test]
    fn checksum_matches_reference_vector() {
        let mut e = Encoder::new();
        e.put_bytes(b"xx");
        e.put_bytes(b"Four score and seven years ago");
        e.put_checksum_from(2);
        assert_eq!(&e.as_bytes()[32..], &0x1777_0551u32.to_le_bytes());
    }
}
