//! Small messages: comment (0x000D), modification times (0x000E, 0x0012),
//! B-tree 'K' values (0x0013), reference count (0x0016), shared message table (0x000F).

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};
use alloc::string::String;

/// Object comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// The text.
    pub text: String,
}

impl Comment {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}

/// Modification time in seconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModificationTime {
    /// Seconds since 1970-01-01 UTC.
    pub seconds: u64,
}

impl ModificationTime {
    /// Decode the new message (0x0012).
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}

/// Shared message table message (0x000F, in the superblock extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SohmTableMessage {
    /// Address of the master table (SMTB).
    pub table: Addr,
    /// Number of indexes.
    pub num_indexes: u8,
}

impl SohmTableMessage {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
