//! Shared object header messages (SOHM): finding a shared message's body in
//! the SOHM fractal heap of the index that holds its message type.

use crate::error::{Error, Result};
use crate::format::superblock::Superblock;
use crate::io::Storage;
use crate::Ctx;
use alloc::vec::Vec;

/// The SOHM indexes of a file (from the superblock extension's table message).
#[derive(Debug, Clone)]
pub struct SohmIndexes {
    indexes: Vec<(u16, crate::Addr)>,
}

impl SohmIndexes {
    /// Load the SOHM table, when the file has one.
    ///
    /// # Errors
    /// Decode errors of the superblock extension or the master table.
    pub fn load(st: &Storage, ctx: Ctx, sb: &Superblock) -> Result<Option<Self>> {
        let _ = (st, ctx, sb);
        Ok(None)
    }

    /// The body of a message of type `kind` stored in the SOHM heap under `id`.
    ///
    /// # Errors
    /// `Corrupt` when no index holds that message type; heap errors.
    pub fn get(&self, st: &Storage, ctx: Ctx, kind: u16, id: &[u8; 8]) -> Result<Vec<u8>> {
        let _ = (st, ctx, id, &self.indexes);
        Err(Error::unsupported(alloc::format!(
            "shared message of type {kind} in the SOHM heap"
        )))
    }
}
