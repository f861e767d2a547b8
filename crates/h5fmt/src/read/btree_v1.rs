//! Walking version 1 B-trees: group nodes (type 0) and raw-data chunk nodes (type 1).

use crate::error::{Error, Result};
use crate::format::symbol_table_node::SymbolTableEntry;
use crate::io::Storage;
use crate::read::chunks::ChunkRecord;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// All symbol table entries of a group's B-tree, in B-tree (name) order.
///
/// # Errors
/// `Corrupt`, `Truncated`, `Cycle`, `Limit`.
pub fn group_entries(st: &Storage, ctx: Ctx, root: Addr) -> Result<Vec<SymbolTableEntry>> {
    let _ = (st, ctx);
    Err(Error::unsupported(alloc::format!(
        "v1 B-tree at {root}: not implemented yet"
    )))
}

/// All chunk records of a chunked dataset's B-tree. `rank` is the dataspace
/// rank (keys carry `rank + 1` offsets; the last, the element offset, is dropped).
///
/// # Errors
/// `Corrupt`, `Truncated`, `Cycle`, `Limit`.
pub fn chunk_records(st: &Storage, ctx: Ctx, root: Addr, rank: usize) -> Result<Vec<ChunkRecord>> {
    let _ = (st, ctx, rank);
    Err(Error::unsupported(alloc::format!(
        "v1 B-tree at {root}: not implemented yet"
    )))
}
