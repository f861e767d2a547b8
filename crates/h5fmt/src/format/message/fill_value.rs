//! Fill value messages: old (0x0004) and new (0x0005, versions 1–3), IV.A.2.e/f.

use crate::codec::Cursor;
use crate::error::Result;
use crate::Ctx;
use alloc::vec::Vec;

/// What `H5Pfill_value_defined` would report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillState {
    /// No fill value defined.
    Undefined,
    /// The library default (all-zero element).
    Default,
    /// A user-defined value.
    User,
}

/// A fill value message, old or new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue {
    /// Message version (0 for the old message).
    pub version: u8,
    /// Space allocation time: 1 early, 2 late, 3 incremental (0 unknown/old).
    pub alloc_time: u8,
    /// Fill write time: 0 on allocation, 1 never, 2 if set.
    pub fill_time: u8,
    /// Defined state.
    pub state: FillState,
    /// The value bytes when `state` is `User`.
    pub value: Option<Vec<u8>>,
}

impl FillValue {
    /// Decode an old fill value message (0x0004).
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode_old(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
    /// Decode a new fill value message (0x0005).
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
