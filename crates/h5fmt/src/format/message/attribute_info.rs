//! Attribute info message (0x0015), IV.A.2.v.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};

/// Where an object keeps its attributes when they are dense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AttributeInfo {
    /// Maximum creation index, when creation order is tracked.
    pub max_creation_index: Option<u16>,
    /// Fractal heap of attribute messages (UNDEF when attributes are compact).
    pub heap: Addr,
    /// v2 B-tree name index (record type 8).
    pub name_index: Addr,
    /// v2 B-tree creation-order index (record type 9), UNDEF when absent.
    pub order_index: Addr,
}

impl AttributeInfo {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
