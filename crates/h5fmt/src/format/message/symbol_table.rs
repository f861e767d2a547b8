//! Symbol table message (0x0011), IV.A.2.r.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};

/// An old-style group: a v1 B-tree of symbol table nodes plus a local heap of names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolTableMessage {
    /// v1 B-tree (type 0) root.
    pub btree: Addr,
    /// Local heap of link names.
    pub heap: Addr,
}

impl SymbolTableMessage {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let btree = cur.read_addr(ctx.sizes)?;
        let heap = cur.read_addr(ctx.sizes)?;
        Ok(SymbolTableMessage { btree, heap })
    }
}
