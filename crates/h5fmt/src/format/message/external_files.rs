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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots() {
        let mut b = alloc::vec![1u8, 0, 0, 0];
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&0x500u64.to_le_bytes());
        for v in [8u64, 0, 100, 16, 100, u64::MAX] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let e = ExternalFiles::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(e.heap, Addr(0x500));
        assert_eq!(e.files.len(), 2);
        assert_eq!(
            e.files[1],
            ExternalFile {
                name_offset: 16,
                file_offset: 100,
                size: u64::MAX
            }
        );
        let mut bad = b.clone();
        bad[6] = 5; // used > allocated
        assert!(ExternalFiles::decode(&mut Cursor::new(&bad, 0), Ctx::default()).is_err());
        assert!(
            ExternalFiles::decode(&mut Cursor::new(&b[..b.len() - 1], 0), Ctx::default()).is_err()
        );
    }
}
