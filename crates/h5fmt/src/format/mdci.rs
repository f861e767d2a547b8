//! Metadata cache images: the "Metadata Cache Image" message (type 0x0018,
//! version 0, found only in the superblock extension; spec 4.0 "Metadata
//! Cache Image Message") and the metadata cache image block it points to
//! (signature `MDCI`, version 0, lookup3 checksum; layout as libhdf5's
//! `H5Cimage.c` writes it).
//!
//! A writer that closes a file with cache images enabled stores serialized
//! copies of its metadata cache entries, each with its file address, in one
//! block; the entries' own locations may then be stale or never written.
//! Block layout (little-endian):
//!
//! ```text
//! "MDCI" | version u8 (0) | flags u8 (bit 0: resize status follows; unsupported)
//! | image data length (size of lengths) | entry count u32
//! then per entry:
//!   type id u8 | flags u8 | ring u8 | age u8
//!   | flush-dependency child count u16 | dirty child count u16
//!   | flush-dependency parent count u16 | LRU rank i32
//!   | entry address (size of offsets) | entry size (size of lengths)
//!   | parent addresses (count × size of offsets) | entry image (size bytes)
//! then checksum u32 (lookup3 over the image data before it)
//! ```

use crate::codec::{lookup3, Cursor};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Signature of the cache image block.
pub const MDCI_SIGNATURE: [u8; 4] = *b"MDCI";

/// Header flag: adaptive resize status follows the entries (libhdf5 never
/// writes it and refuses it on read).
pub const HEADER_HAVE_RESIZE_STATUS: u8 = 0x01;

/// Entry flag: the entry was dirty when the image was written.
pub const ENTRY_DIRTY: u8 = 0x01;
/// Entry flag: the entry was on the LRU list.
pub const ENTRY_IN_LRU: u8 = 0x02;
/// Entry flag: the entry is a flush-dependency parent.
pub const ENTRY_IS_FD_PARENT: u8 = 0x04;
/// Entry flag: the entry is a flush-dependency child.
pub const ENTRY_IS_FD_CHILD: u8 = 0x08;

/// The metadata cache image message (superblock extension, type 0x0018).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdciMessage {
    /// Message version (0).
    pub version: u8,
    /// Address of the cache image block.
    pub addr: Addr,
    /// Length of the cache image block in bytes.
    pub len: u64,
}

impl MdciMessage {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`; `Unsupported` for a version other than 0.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(cur.unsupported(alloc::format!(
                "metadata cache image message version {version}"
            )));
        }
        let addr = cur.read_addr(ctx.sizes)?;
        let len = cur.read_len(ctx.sizes)?;
        Ok(MdciMessage { version, addr, len })
    }
}

/// One metadata cache entry stored in the image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheImageEntry {
    /// libhdf5's cache client type id (object header, B-tree node, ...).
    pub type_id: u8,
    /// Entry flags (`ENTRY_*`).
    pub flags: u8,
    /// Metadata cache ring.
    pub ring: u8,
    /// Entry age.
    pub age: u8,
    /// Number of flush-dependency children.
    pub fd_child_count: u16,
    /// Number of dirty flush-dependency children.
    pub fd_dirty_child_count: u16,
    /// Addresses of the flush-dependency parents.
    pub fd_parents: Vec<Addr>,
    /// Position in the LRU list (-1 when not on it).
    pub lru_rank: i32,
    /// File address of the entry.
    pub addr: Addr,
    /// The entry's serialized bytes (what belongs at `addr`).
    pub image: Vec<u8>,
}

/// A decoded metadata cache image block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CacheImage {
    /// Header flags.
    pub flags: u8,
    /// The entries, in stored order.
    pub entries: Vec<CacheImageEntry>,
}

/// Fixed part of an entry header, before the variable-size fields.
fn entry_header_len(ctx: Ctx) -> usize {
    1 + 1 + 1 + 1 + 2 + 2 + 2 + 4 + usize::from(ctx.sizes.offsets) + usize::from(ctx.sizes.lengths)
}

impl CacheImage {
    /// Decode a whole cache image block (the cursor holds exactly the block's
    /// bytes, as long as the message says). The checksum is verified before
    /// the entries are decoded.
    ///
    /// # Errors
    /// `Corrupt` (bad signature, counts or sizes), `Checksum`, `Truncated`,
    /// `Unsupported` (another version, a resize status section).
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let block = cur.rest();
        let block_abs = cur.offset();
        cur.expect_signature(&MDCI_SIGNATURE)?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(cur.unsupported(alloc::format!(
                "metadata cache image block version {version}"
            )));
        }
        let flags = cur.read_u8()?;
        if flags & HEADER_HAVE_RESIZE_STATUS != 0 {
            return Err(cur.unsupported("metadata cache image with a resize status section"));
        }
        let data_len_at = cur.offset();
        let data_len = cur.read_len(ctx.sizes)?;
        let count = cur.read_u32()?;
        let header_len = cur.pos();
        // The image data (header, entries, checksum) fills the block's start.
        let data_len = usize::try_from(data_len)
            .ok()
            .filter(|&n| n <= block.len() && n >= header_len.saturating_add(4))
            .ok_or_else(|| {
                Error::corrupt(
                    alloc::format!(
                        "metadata cache image data length {data_len} does not fit the {}-byte block",
                        block.len()
                    ),
                    data_len_at,
                )
            })?;
        let body_len = data_len.saturating_sub(4);
        let body = block.get(..body_len).unwrap_or(&[]);
        let stored = block
            .get(body_len..data_len)
            .and_then(|b| <[u8; 4]>::try_from(b).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::truncated("metadata cache image checksum", block_abs))?;
        let computed = lookup3(body, 0);
        if stored != computed {
            return Err(Error::checksum(
                alloc::format!(
                    "metadata cache image checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                ),
                block_abs.saturating_add(body_len as u64),
            ));
        }
        if count == 0 {
            return Err(cur.corrupt("metadata cache image with no entries"));
        }
        let mut ent = Cursor::new(
            body.get(header_len..).unwrap_or(&[]),
            block_abs.saturating_add(header_len as u64),
        );
        let n = ent.ensure_count(u64::from(count), entry_header_len(ctx).saturating_add(1))?;
        let mut entries = Vec::with_capacity(n);
        for _ in 0..n {
            entries.push(decode_entry(&mut ent, ctx)?);
        }
        ent.finish("metadata cache image")?;
        Ok(CacheImage { flags, entries })
    }
}

fn decode_entry(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<CacheImageEntry> {
    let at = cur.offset();
    let type_id = cur.read_u8()?;
    let flags = cur.read_u8()?;
    let ring = cur.read_u8()?;
    let age = cur.read_u8()?;
    let fd_child_count = cur.read_u16()?;
    let fd_dirty_child_count = cur.read_u16()?;
    if fd_dirty_child_count > fd_child_count {
        return Err(Error::corrupt(
            "cache image entry: more dirty flush-dependency children than children",
            at,
        ));
    }
    let parent_count = cur.read_u16()?;
    let lru_rank = i32::from_le_bytes(cur.read_array::<4>()?);
    let addr = cur.read_addr(ctx.sizes)?;
    if addr.is_undef() {
        return Err(Error::corrupt(
            "cache image entry at the undefined address",
            at,
        ));
    }
    let size_at = cur.offset();
    let size = cur.read_len(ctx.sizes)?;
    if size == 0 {
        return Err(Error::corrupt("cache image entry of size 0", size_at));
    }
    let np = cur.ensure_count(u64::from(parent_count), usize::from(ctx.sizes.offsets))?;
    let mut fd_parents = Vec::with_capacity(np);
    for _ in 0..np {
        let p = cur.read_addr(ctx.sizes)?;
        if p.is_undef() {
            return Err(cur.corrupt("cache image entry: undefined flush-dependency parent"));
        }
        fd_parents.push(p);
    }
    let size = usize::try_from(size)
        .ok()
        .filter(|&s| s <= cur.remaining())
        .ok_or_else(|| {
            Error::truncated(
                alloc::format!(
                    "cache image entry of {size} bytes does not fit in the {} bytes left",
                    cur.remaining()
                ),
                size_at,
            )
        })?;
    let image = cur.read_bytes(size)?.to_vec();
    Ok(CacheImageEntry {
        type_id,
        flags,
        ring,
        age,
        fd_child_count,
        fd_dirty_child_count,
        fd_parents,
        lru_rank,
        addr,
        image,
    })
}
