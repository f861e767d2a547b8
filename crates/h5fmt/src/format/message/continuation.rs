//! Object header continuation message (0x0010), IV.A.2.q.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};

/// Where the next chunk of an object header lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Continuation {
    /// Address of the continuation chunk.
    pub addr: Addr,
    /// Length in bytes.
    pub len: u64,
}

impl Continuation {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let addr = cur.read_addr(ctx.sizes)?;
        let len = cur.read_len(ctx.sizes)?;
        Ok(Continuation { addr, len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode() {
        let ctx = Ctx {
            sizes: crate::Sizes {
                offsets: 4,
                lengths: 2,
            },
            ..Ctx::default()
        };
        let c = Continuation::decode(&mut Cursor::new(&[0x10, 0, 0, 0, 0x40, 0], 0), ctx).unwrap();
        assert_eq!(
            c,
            Continuation {
                addr: Addr(0x10),
                len: 0x40
            }
        );
        assert!(Continuation::decode(&mut Cursor::new(&[0x10, 0, 0, 0, 0x40], 0), ctx).is_err());
    }
}
