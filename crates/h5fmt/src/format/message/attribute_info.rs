//! Attribute info message (0x0015), IV.A.2.v.

use crate::codec::Cursor;
use crate::error::{Error, Result};
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
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("attribute info message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !0x03 != 0 {
            return Err(Error::corrupt(
                alloc::format!("attribute info flags {flags:#x}"),
                flags_at,
            ));
        }
        let max_creation_index = if flags & 0x01 != 0 {
            Some(cur.read_u16()?)
        } else {
            None
        };
        let heap = cur.read_addr(ctx.sizes)?;
        let name_index = cur.read_addr(ctx.sizes)?;
        let order_index = if flags & 0x02 != 0 {
            cur.read_addr(ctx.sizes)?
        } else {
            Addr::UNDEF
        };
        Ok(AttributeInfo {
            max_creation_index,
            heap,
            name_index,
            order_index,
        })
    }
}
