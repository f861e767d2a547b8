//! External data files message (0x0007), IV.A.2.h.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// One external file slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalFile {
    /// Offset of the file name in the local heap.
    pub name_offset: u64,
    /// Byte offset in the external file.
    pub file_offset: u64,
    /// Bytes of data in this slot (`u64::MAX`-like all-ones = unlimited).
    pub size: u64,
}

/// The external file list of a dataset with external raw storage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExternalFiles {
    /// Local heap holding the file names.
    pub heap: Addr,
    /// Slots in order.
    pub files: Vec<ExternalFile>,
}

impl ExternalFiles {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 {
            return Err(Error::corrupt(
                alloc::format!("external file list version {version}"),
                at,
            ));
        }
        cur.skip(3)?;
        let alloc_at = cur.offset();
        let allocated = cur.read_u16()?;
        let used = cur.read_u16()?;
        if used > allocated {
            return Err(Error::corrupt(
                alloc::format!("external file list uses {used} of {allocated} slots"),
                alloc_at,
            ));
        }
        let heap = cur.read_addr(ctx.sizes)?;
        let slot = 3 * usize::from(ctx.sizes.lengths);
        let n = cur.ensure_count(u64::from(used), slot)?;
        let mut files = Vec::with_capacity(n);
        for _ in 0..n {
            let name_offset = cur.read_len(ctx.sizes)?;
            let file_offset = cur.read_len(ctx.sizes)?;
            let size = cur.read_len(ctx.sizes)?;
            files.push(ExternalFile {
                name_offset,
                file_offset,
                size,
            });
        }
        Ok(ExternalFiles { heap, files })
    }
}
