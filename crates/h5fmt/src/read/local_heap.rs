//! Reading local heaps (`HEAP`) of old-style groups and external file lists.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::local_heap::LocalHeapHeader;
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::string::String;
use alloc::vec::Vec;

/// A local heap's data segment.
#[derive(Debug, Clone)]
pub struct LocalHeap {
    /// The data segment bytes.
    pub data: Vec<u8>,
}

impl LocalHeap {
    /// Read the heap whose header is at `addr`.
    ///
    /// # Errors
    /// `Corrupt`, `Truncated`; `Limit` when the data segment is larger than
    /// `ctx.limits.max_metadata_block`.
    pub fn read(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        let hlen = LocalHeapHeader::encoded_len(ctx.sizes) as u64;
        let raw = st.read(addr, hlen)?;
        let abs = st.absolute(addr, hlen)?;
        let hdr = LocalHeapHeader::decode(&mut Cursor::new(&raw, abs), ctx)?;
        if hdr.data_size > ctx.limits.max_metadata_block {
            return Err(Error::limit(alloc::format!(
                "local heap at {addr}: data segment of {} bytes exceeds the metadata block limit",
                hdr.data_size
            )));
        }
        if hdr.data_size == 0 {
            return Ok(LocalHeap { data: Vec::new() });
        }
        if hdr.data_addr.is_undef() {
            return Err(Error::corrupt(
                alloc::format!("local heap at {addr}: undefined data segment address"),
                abs,
            ));
        }
        let data = st
            .read(hdr.data_addr, hdr.data_size)
            .map_err(|e| e.context("local heap data segment"))?;
        Ok(LocalHeap { data })
    }

    /// The NUL-terminated bytes at `offset` in the data segment (without the NUL).
    ///
    /// # Errors
    /// `Corrupt` when `offset` is outside the segment or the string is unterminated.
    pub fn bytes_at(&self, offset: u64) -> Result<&[u8]> {
        let rest = usize::try_from(offset)
            .ok()
            .and_then(|o| self.data.get(o..))
            .ok_or_else(|| {
                Error::corrupt(
                    alloc::format!(
                        "local heap offset {offset} outside the {}-byte data segment",
                        self.data.len()
                    ),
                    offset,
                )
            })?;
        match rest.iter().position(|&b| b == 0) {
            Some(n) => Ok(rest.get(..n).unwrap_or(&[])),
            None => Err(Error::corrupt(
                alloc::format!("unterminated string at local heap offset {offset}"),
                offset,
            )),
        }
    }

    /// The NUL-terminated string at `offset` in the data segment. Bytes that
    /// are not UTF-8 are replaced by U+FFFD (old files may hold Latin-1 names);
    /// use [`LocalHeap::bytes_at`] for the raw bytes.
    ///
    /// # Errors
    /// `Corrupt` when `offset` is outside the segment or the string is unterminated.
    pub fn string_at(&self, offset: u64) -> Result<String> {
        let b = self.bytes_at(offset)?;
        Ok(String::from_utf8_lossy(b).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_bounds() {
        let h = LocalHeap {
            data: b"\0abc\0de".to_vec(),
        };
        assert_eq!(h.string_at(0).unwrap(), "");
        assert_eq!(h.string_at(1).unwrap(), "abc");
        assert_eq!(h.string_at(2).unwrap(), "bc");
        assert_eq!(
            h.string_at(5).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            h.string_at(7).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            h.string_at(u64::MAX).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
    }
}
