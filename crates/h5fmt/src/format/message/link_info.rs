//! Link info message (0x0002), IV.A.2.c.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};

/// Where a new-style group keeps its links when they are dense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkInfo {
    /// Maximum creation index, when creation order is tracked.
    pub max_creation_index: Option<u64>,
    /// Fractal heap holding link messages (UNDEF when links are compact).
    pub heap: Addr,
    /// v2 B-tree name index (record type 5).
    pub name_index: Addr,
    /// v2 B-tree creation-order index (record type 6), UNDEF when absent.
    pub order_index: Addr,
}

impl LinkInfo {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
