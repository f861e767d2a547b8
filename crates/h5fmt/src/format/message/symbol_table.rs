//! Symbol table message (0x0011), IV.A.2.r.

use crate::codec::{Cursor, Encoder};
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

impl SymbolTableMessage {
    /// Encode the message body: B-tree and local heap addresses.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        enc.put_addr(self.btree, ctx.sizes);
        enc.put_addr(self.heap, ctx.sizes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode() {
        let mut b = 0x88u64.to_le_bytes().to_vec();
        b.extend_from_slice(&0x2a8u64.to_le_bytes());
        let s = SymbolTableMessage::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(
            s,
            SymbolTableMessage {
                btree: Addr(0x88),
                heap: Addr(0x2a8)
            }
        );
    }
}
