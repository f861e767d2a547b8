//! External data files message (0x0007), IV.A.2.h.

use crate::codec::Cursor;
use crate::error::Result;
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
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
