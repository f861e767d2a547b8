//! Symbol table node (`SNOD`) and symbol table entry, spec III.C/III.D.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Cached scratch-pad information of a symbol table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryCache {
    /// Nothing cached.
    None,
    /// The object is a group: its B-tree and local heap.
    Group {
        /// v1 B-tree address.
        btree: Addr,
        /// Local heap address.
        heap: Addr,
    },
    /// The entry is a soft link: offset of its target in the local heap.
    SoftLink {
        /// Local heap offset of the target path.
        offset: u32,
    },
}

/// A symbol table entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SymbolTableEntry {
    /// Offset of the link name in the group's local heap.
    pub name_offset: u64,
    /// Object header address.
    pub header: Addr,
    /// Cache.
    pub cache: EntryCache,
}

impl SymbolTableEntry {
    /// Decode one entry.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let name_offset = cur.read_uint(usize::from(ctx.sizes.offsets))?;
        let header = cur.read_addr(ctx.sizes)?;
        let type_at = cur.offset();
        let cache_type = cur.read_u32()?;
        let _reserved = cur.read_u32()?;
        let mut pad = cur.sub(16)?;
        let cache = match cache_type {
            0 => EntryCache::None,
            1 => {
                let btree = pad.read_addr(ctx.sizes)?;
                let heap = pad.read_addr(ctx.sizes)?;
                EntryCache::Group { btree, heap }
            }
            2 => EntryCache::SoftLink {
                offset: pad.read_u32()?,
            },
            t => {
                return Err(Error::corrupt(
                    alloc::format!("symbol table entry cache type {t}"),
                    type_at,
                ))
            }
        };
        Ok(SymbolTableEntry {
            name_offset,
            header,
            cache,
        })
    }

    /// Encoded size of one entry for `ctx.sizes`.
    pub fn encoded_len(ctx: Ctx) -> usize {
        2 * usize::from(ctx.sizes.offsets) + 8 + 16
    }
}

/// A symbol table node: a leaf of a group's v1 B-tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTableNode {
    /// Entries in name order.
    pub entries: Vec<SymbolTableEntry>,
}
