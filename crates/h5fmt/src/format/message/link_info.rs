//! Link info message (0x0002), IV.A.2.c.

use super::DenseInfo;
use crate::codec::{Cursor, Encoder};
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
        let d = DenseInfo::decode(cur, ctx, "link info", 8)?;
        Ok(LinkInfo {
            max_creation_index: d.max_creation_index,
            heap: d.heap,
            name_index: d.name_index,
            order_index: d.order_index,
        })
    }
}

impl LinkInfo {
    /// Encode the message body (version 0). `indexed` stores the
    /// creation-order index address (flag bit 1).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, indexed: bool) {
        DenseInfo {
            max_creation_index: self.max_creation_index,
            heap: self.heap,
            name_index: self.name_index,
            order_index: self.order_index,
        }
        .encode(enc, ctx, 8, indexed);
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
