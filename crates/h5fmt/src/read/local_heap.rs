//! Reading local heaps (`HEAP`) of old-style groups and external file lists.

use crate::error::{Error, Result};
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
    /// `Corrupt`, `Truncated`.
    pub fn read(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        let _ = (st, ctx);
        Err(Error::unsupported(alloc::format!(
            "local heap at {addr}: not implemented yet"
        )))
    }
    /// The NUL-terminated string at `offset` in the data segment.
    ///
    /// # Errors
    /// `Corrupt` when `offset` is outside the segment or the string is unterminated.
    pub fn string_at(&self, offset: u64) -> Result<String> {
        let _ = offset;
        Err(Error::unsupported("not implemented yet"))
    }
}
