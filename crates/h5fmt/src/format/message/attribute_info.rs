//! Attribute info message (0x0015), IV.A.2.v.

use super::DenseInfo;
use crate::codec::{Cursor, Encoder};
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
        let d = DenseInfo::decode(cur, ctx, "attribute info", 2)?;
        Ok(AttributeInfo {
            max_creation_index: d.max_creation_index.and_then(|m| u16::try_from(m).ok()),
            heap: d.heap,
            name_index: d.name_index,
            order_index: d.order_index,
        })
    }
}

impl AttributeInfo {
    /// Encode the message body (version 0); `indexed` stores the
    /// creation-order index address (flag bit 1).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, indexed: bool) {
        DenseInfo {
            max_creation_index: self.max_creation_index.map(u64::from),
            heap: self.heap,
            name_index: self.name_index,
            order_index: self.order_index,
        }
        .encode(enc, ctx, 2, indexed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let ctx = Ctx::default();
        let mut b = alloc::vec![0u8, 3, 7, 0];
        for v in [0x10u64, 0x20, 0x30] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        let a = AttributeInfo::decode(&mut Cursor::new(&b, 0), ctx).unwrap();
        assert_eq!(
            a,
            AttributeInfo {
                max_creation_index: Some(7),
                heap: Addr(0x10),
                name_index: Addr(0x20),
                order_index: Addr(0x30)
            }
        );
        let mut b = alloc::vec![0u8, 0];
        b.extend_from_slice(&0x10u64.to_le_bytes());
        b.extend_from_slice(&0x20u64.to_le_bytes());
        let a = AttributeInfo::decode(&mut Cursor::new(&b, 0), ctx).unwrap();
        assert!(a.order_index.is_undef() && a.max_creation_index.is_none());
        assert!(AttributeInfo::decode(&mut Cursor::new(&[0, 8], 0), ctx).is_err());
    }
}
