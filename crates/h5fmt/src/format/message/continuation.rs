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
