//! Shared message encoding (message flag bit 1), IV.A.2 "shared messages":
//! versions 1–3.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};

/// Where a shared message really lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedTarget {
    /// In another object header (committed datatype): its address.
    ObjectHeader(Addr),
    /// In the shared-object-header-message heap: the 8-byte fractal heap id.
    SohmHeap([u8; 8]),
}

/// A shared-message reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedMessage {
    /// Encoding version (1–3).
    pub version: u8,
    /// Target.
    pub target: SharedTarget,
}

impl SharedMessage {
    /// Decode a shared-message reference body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
