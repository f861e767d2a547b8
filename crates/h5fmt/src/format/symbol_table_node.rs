//! Symbol table node (`SNOD`, version 1) and symbol table entry, spec III.B/III.C.
//!
//! The link name offset of an entry is "size of lengths" bytes wide, as
//! libhdf5 encodes it (`H5G_ent_decode`); the specification's table marks it
//! "size of offsets". The two agree in every file whose sizes are equal.

use crate::addr::Sizes;
use crate::codec::{Cursor, Encoder};
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
        let name_offset = cur.read_len(ctx.sizes)?;
        let header = cur.read_addr(ctx.sizes)?;
        let at = cur.offset();
        let cache_type = cur.read_u32()?;
        let _reserved = cur.read_u32()?;
        let mut pad = cur.sub(16)?;
        let cache = match cache_type {
            0 => EntryCache::None,
            1 => EntryCache::Group {
                btree: pad.read_addr(ctx.sizes)?,
                heap: pad.read_addr(ctx.sizes)?,
            },
            2 => EntryCache::SoftLink {
                offset: pad.read_u32()?,
            },
            t => {
                return Err(Error::corrupt(
                    alloc::format!("symbol table entry cache type {t}"),
                    at,
                ))
            }
        };
        Ok(SymbolTableEntry {
            name_offset,
            header,
            cache,
        })
    }

    /// Encoded size of one entry: name offset, header address, cache type,
    /// reserved word and the 16-byte scratch pad.
    pub fn encoded_len(sizes: Sizes) -> usize {
        usize::from(sizes.lengths) + usize::from(sizes.offsets) + 24
    }
}

/// A symbol table node: a leaf of a group's v1 B-tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolTableNode {
    /// Entries in name order.
    pub entries: Vec<SymbolTableEntry>,
}

impl SymbolTableNode {
    /// Bytes before the first entry: signature, version, reserved, symbol count.
    pub const PREFIX_LEN: usize = 8;

    /// Decode a node: the prefix and its `Number of Symbols` entries (the
    /// unused entries up to 2K that follow on disk are not read).
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature, a version other than 1 or a bad entry.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        cur.expect_signature(b"SNOD")?;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 {
            return Err(Error::corrupt(
                alloc::format!("symbol table node version {version}"),
                at,
            ));
        }
        let _reserved = cur.read_u8()?;
        let count = cur.read_u16()?;
        let n = cur.ensure_count(u64::from(count), SymbolTableEntry::encoded_len(ctx.sizes))?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(SymbolTableEntry::decode(cur, ctx)?);
        }
        Ok(SymbolTableNode { entries })
    }

    /// Number of symbols announced by a node prefix (`PREFIX_LEN` bytes), to
    /// size the read of the whole node.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature.
    pub fn peek_count(prefix: &[u8], base: u64) -> Result<u16> {
        let mut cur = Cursor::new(prefix, base);
        cur.expect_signature(b"SNOD")?;
        cur.skip(2)?;
        cur.read_u16()
    }
}

impl SymbolTableEntry {
    /// Encode one entry (the mirror of [`SymbolTableEntry::decode`]).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        enc.put_len(self.name_offset, ctx.sizes);
        enc.put_addr(self.header, ctx.sizes);
        let start = enc.len();
        match self.cache {
            EntryCache::None => {
                enc.put_u32(0);
                enc.put_u32(0);
            }
            EntryCache::Group { btree, heap } => {
                enc.put_u32(1);
                enc.put_u32(0);
                enc.put_addr(btree, ctx.sizes);
                enc.put_addr(heap, ctx.sizes);
            }
            EntryCache::SoftLink { offset } => {
                enc.put_u32(2);
                enc.put_u32(0);
                enc.put_u32(offset);
            }
        }
        enc.put_zeros((start + 24).saturating_sub(enc.len()));
    }
}

impl SymbolTableNode {
    /// On-disk size of a node with room for `2 * leaf_k` entries (libhdf5
    /// always allocates and reads the full node).
    pub fn encoded_len(sizes: Sizes, leaf_k: u16) -> usize {
        Self::PREFIX_LEN + 2 * usize::from(leaf_k) * SymbolTableEntry::encoded_len(sizes)
    }

    /// Encode the node, its unused entries zeroed up to `2 * leaf_k`.
    ///
    /// # Errors
    /// `Usage` when there are more than `2 * leaf_k` entries.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, leaf_k: u16) -> Result<()> {
        let cap = 2 * usize::from(leaf_k);
        if self.entries.len() > cap {
            return Err(Error::usage("symbol table node over capacity"));
        }
        let start = enc.len();
        enc.put_bytes(b"SNOD");
        enc.put_u8(1);
        enc.put_u8(0);
        #[allow(clippy::cast_possible_truncation)] // ≤ 2K ≤ 2^17, checked above against a u16 K
        enc.put_u16(self.entries.len() as u16);
        for e in &self.entries {
            e.encode(enc, ctx);
        }
        let end = start + Self::encoded_len(ctx.sizes, leaf_k);
        enc.put_zeros(end.saturating_sub(enc.len()));
        Ok(())
    }
}
