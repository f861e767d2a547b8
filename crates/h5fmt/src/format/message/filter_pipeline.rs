//! Filter pipeline message (0x000B), IV.A.2.l: versions 1 and 2.

use crate::codec::Cursor;
use crate::error::Result;
use crate::Ctx;
use alloc::string::String;
use alloc::vec::Vec;

/// One filter of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Filter id (1 deflate, 2 shuffle, 3 fletcher32, 4 szip, 5 nbit, 6 scaleoffset, ≥ 256 registered).
    pub id: u16,
    /// Optional name.
    pub name: Option<String>,
    /// Flags (bit 0: optional).
    pub flags: u16,
    /// Client data values.
    pub client_data: Vec<u32>,
}

impl Filter {
    /// Whether the filter is optional (may be skipped per chunk via the filter mask).
    pub fn is_optional(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// A dataset's filter pipeline, in the order filters are applied on write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterPipeline {
    /// Filters.
    pub filters: Vec<Filter>,
}

impl FilterPipeline {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
