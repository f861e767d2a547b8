//! Link info message (0x0002), IV.A.2.c.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
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
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("link info message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !0x03 != 0 {
            return Err(Error::corrupt(
                alloc::format!("link info flags {flags:#x}"),
                flags_at,
            ));
        }
        let max_creation_index = if flags & 0x01 != 0 {
            Some(cur.read_u64()?)
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
        Ok(LinkInfo {
            max_creation_index,
            heap,
            name_index,
            order_index,
        })
    }
}

impl LinkInfo {
    /// Encode the message body (version 0). `indexed` stores the
    /// creation-order index address (flag bit 1).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, indexed: bool) {
        let flags = u8::from(self.max_creation_index.is_some()) | (u8::from(indexed) << 1);
        enc.put_u8(0);
        enc.put_u8(flags);
        if let Some(m) = self.max_creation_index {
            enc.put_u64(m);
        }
        enc.put_addr(self.heap, ctx.sizes);
        enc.put_addr(self.name_index, ctx.sizes);
        if indexed {
            enc.put_addr(self.order_index, ctx.sizes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let ctx = Ctx::default();
        let mut b = alloc::vec![0u8, 0];
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        let l = LinkInfo::decode(&mut Cursor::new(&b, 0), ctx).unwrap();
        assert!(l.heap.is_undef() && l.order_index.is_undef() && l.max_creation_index.is_none());
        let mut b = alloc::vec![0u8, 3];
        for v in [9u64, 0x10, 0x20, 0x30] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let l = LinkInfo::decode(&mut Cursor::new(&b, 0), ctx).unwrap();
        assert_eq!(
            l,
            LinkInfo {
                max_creation_index: Some(9),
                heap: Addr(0x10),
                name_index: Addr(0x20),
                order_index: Addr(0x30)
            }
        );
        assert!(LinkInfo::decode(&mut Cursor::new(&[1, 0], 0), ctx).is_err());
        assert!(LinkInfo::decode(&mut Cursor::new(&[0, 4], 0), ctx).is_err());
    }
}
