//! Superblock, spec section II.A: versions 0–3 (read).

use crate::codec::Cursor;
use crate::error::Result;
use crate::format::symbol_table_node::SymbolTableEntry;
use crate::{Addr, Ctx, Sizes};

/// The format signature `\x89HDF\r\n\x1a\n`.
pub const SIGNATURE: [u8; 8] = *b"\x89HDF\r\n\x1a\n";

/// A decoded superblock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Superblock {
    /// Superblock version (0–3).
    pub version: u8,
    /// Sizes of offsets and lengths.
    pub sizes: Sizes,
    /// Absolute offset at which the signature was found (0, 512, 1024, …).
    pub sig_offset: u64,
    /// Base address: absolute offset that relative addresses count from.
    pub base_address: u64,
    /// Group leaf node K (v0/v1).
    pub group_leaf_k: u16,
    /// Group internal node K (v0/v1).
    pub group_internal_k: u16,
    /// Indexed storage internal node K (v1; 32 when absent).
    pub indexed_storage_k: u16,
    /// File consistency flags.
    pub flags: u32,
    /// Superblock extension object header (v2/v3), UNDEF when absent.
    pub extension: Addr,
    /// End-of-file address.
    pub eof: Addr,
    /// Driver information block (v0/v1), UNDEF when absent.
    pub driver_info: Addr,
    /// Root group object header address.
    pub root: Addr,
    /// Root group symbol table entry (v0/v1), with its scratch-pad cache.
    pub root_entry: Option<SymbolTableEntry>,
}

impl Superblock {
    /// Decode a superblock; `cur` starts at the signature, whose absolute
    /// offset is `cur.offset()`.
    ///
    /// # Errors
    /// `Corrupt`, `Truncated`, `Checksum` (v2/v3), `Unsupported` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}

/// Find the superblock signature: at 0, 512, 1024, 2048, … within the source.
///
/// # Errors
/// `Corrupt` when no signature is found.
pub fn locate(src: &dyn crate::io::ReadAt) -> Result<u64> {
    let len = src.len();
    let mut off = 0u64;
    loop {
        if off.saturating_add(8) > len {
            return Err(crate::Error::corrupt("no HDF5 signature found", 0));
        }
        let mut sig = [0u8; 8];
        src.read_at(off, &mut sig)?;
        if sig == SIGNATURE {
            return Ok(off);
        }
        off = if off == 0 { 512 } else { off.saturating_mul(2) };
    }
}
