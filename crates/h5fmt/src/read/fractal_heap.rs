//! Reading objects from a fractal heap (`FRHP`/`FHDB`/`FHIB`) by heap id.

use crate::error::{Error, Result};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// An opened fractal heap.
#[derive(Debug, Clone)]
pub struct FractalHeap {
    st: Storage,
    ctx: Ctx,
    addr: Addr,
}

impl FractalHeap {
    /// Open the heap whose header is at `addr`.
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`.
    pub fn open(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        Ok(FractalHeap {
            st: st.clone(),
            ctx,
            addr,
        })
    }
    /// Heap id length in bytes.
    pub fn id_len(&self) -> usize {
        0
    }
    /// The object named by heap id `id` (managed, huge or tiny).
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`, `Unsupported` (e.g. a filter).
    pub fn get(&self, id: &[u8]) -> Result<Vec<u8>> {
        let _ = (&self.st, self.ctx, id);
        Err(Error::unsupported(alloc::format!(
            "fractal heap at {}: not implemented yet",
            self.addr
        )))
    }
}
