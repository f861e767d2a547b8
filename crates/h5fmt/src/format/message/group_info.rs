//! Group info message (0x000A), IV.A.2.k.

use crate::codec::Cursor;
use crate::error::Result;
use crate::Ctx;

/// Compact/dense thresholds and size estimates of a new-style group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupInfo {
    /// Maximum links stored compactly, when stored.
    pub max_compact: Option<u16>,
    /// Minimum links stored densely, when stored.
    pub min_dense: Option<u16>,
    /// Estimated number of entries, when stored.
    pub est_entries: Option<u16>,
    /// Estimated link name length, when stored.
    pub est_name_len: Option<u16>,
}

impl GroupInfo {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
