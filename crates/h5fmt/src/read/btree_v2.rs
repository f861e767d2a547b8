//! Walking version 2 B-trees (`BTHD`/`BTIN`/`BTLF`).

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// An opened v2 B-tree.
#[derive(Debug, Clone)]
pub struct BTreeV2 {
    st: Storage,
    ctx: Ctx,
    addr: Addr,
}

impl BTreeV2 {
    /// Open the B-tree whose header is at `addr`.
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`.
    pub fn open(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        Ok(BTreeV2 {
            st: st.clone(),
            ctx,
            addr,
        })
    }
    /// Record type of this tree.
    pub fn record_type(&self) -> u8 {
        0
    }
    /// Every record's raw bytes, in key order (in-order traversal).
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`, `Cycle`, `Limit`.
    pub fn records(&self) -> Result<Vec<Vec<u8>>> {
        let _ = (&self.st, self.ctx);
        Err(Error::unsupported(alloc::format!(
            "v2 B-tree at {}: not implemented yet",
            self.addr
        )))
    }
}
