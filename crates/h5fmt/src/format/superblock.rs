//! Superblock, spec section II.A: versions 0–3 (read).
//!
//! * v0/v1: fixed-width fields, then the root group's symbol table entry
//!   (III.C); v1 adds the indexed-storage internal node K.
//! * v2/v3: compact form with the superblock-extension address and a lookup3
//!   checksum over everything before it.
//!
//! # Base address and user blocks
//!
//! The superblock stores a *base address*; all other addresses in the file are
//! relative to it. With a user block the signature is found at 512, 1024, … and
//! libhdf5 writes that offset as the base address. When reading, libhdf5
//! (`H5F__super_read` in `H5Fsuper.c`) compares the stored base address with
//! the offset where it found the signature and, if they differ, *replaces*
//! the base address by the signature offset (adjusting the stored EOF by the
//! difference) — i.e. a file whose user block was added or removed after
//! writing still opens. [`Superblock::base_address`] therefore holds the
//! signature offset, the value libhdf5 uses; the value stored in the file is
//! kept in [`Superblock::stored_base_address`].

use crate::codec::{lookup3, Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::symbol_table_node::SymbolTableEntry;
use crate::io::ReadAt;
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
    /// As in libhdf5 this is the signature offset, whatever the file stores
    /// (see the module documentation).
    pub base_address: u64,
    /// The base address as stored in the file (normally equal to `sig_offset`).
    pub stored_base_address: u64,
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

/// Default indexed-storage internal node K when the superblock does not store one.
pub const DEFAULT_INDEXED_STORAGE_K: u16 = 32;

/// The largest superblock (v1 with 8-byte offsets and lengths) is well under this.
pub const MAX_SUPERBLOCK_SIZE: usize = 256;

fn check_size(v: u8, what: &str, at: u64) -> Result<u8> {
    match v {
        2 | 4 | 8 => Ok(v),
        16 | 32 => Err(
            Error::unsupported(alloc::format!("superblock {what} of {v} bytes")).with_offset(at),
        ),
        _ => Err(Error::corrupt(
            alloc::format!("superblock {what} of {v} bytes"),
            at,
        )),
    }
}

impl Superblock {
    /// Decode a superblock; `cur` starts at the signature, whose absolute
    /// offset is `cur.offset()`. `ctx.sizes` is ignored (the superblock
    /// defines the sizes).
    ///
    /// # Errors
    /// `Corrupt`, `Truncated`, `Checksum` (v2/v3), `Unsupported` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let start = cur.pos();
        let sig_offset = cur.offset();
        let sig = cur.read_array::<8>()?;
        if sig != SIGNATURE {
            return Err(Error::corrupt(
                "not an HDF5 superblock signature",
                sig_offset,
            ));
        }
        let version_at = cur.offset();
        let version = cur.read_u8()?;
        match version {
            0 | 1 => Self::decode_v01(cur, ctx, version, sig_offset),
            2 | 3 => Self::decode_v23(cur, version, sig_offset, start),
            v => Err(Error::unsupported(alloc::format!("superblock version {v}"))
                .with_offset(version_at)),
        }
    }

    fn decode_v01(cur: &mut Cursor<'_>, ctx: Ctx, version: u8, sig_offset: u64) -> Result<Self> {
        let at = cur.offset();
        let fs_version = cur.read_u8()?;
        let root_version = cur.read_u8()?;
        let _reserved = cur.read_u8()?;
        let shared_version = cur.read_u8()?;
        if fs_version != 0 {
            return Err(Error::corrupt(
                alloc::format!("free-space storage version {fs_version}"),
                at,
            ));
        }
        if root_version != 0 {
            return Err(Error::corrupt(
                alloc::format!("root group symbol table entry version {root_version}"),
                at,
            ));
        }
        if shared_version != 0 {
            return Err(Error::corrupt(
                alloc::format!("shared header message format version {shared_version}"),
                at,
            ));
        }
        let so_at = cur.offset();
        let offsets = check_size(cur.read_u8()?, "size of offsets", so_at)?;
        let lengths = check_size(cur.read_u8()?, "size of lengths", so_at.saturating_add(1))?;
        let _reserved = cur.read_u8()?;
        let sizes = Sizes { offsets, lengths };
        let k_at = cur.offset();
        let group_leaf_k = cur.read_u16()?;
        let group_internal_k = cur.read_u16()?;
        if group_leaf_k == 0 || group_internal_k == 0 {
            return Err(Error::corrupt("symbol table node K of zero", k_at));
        }
        let flags = cur.read_u32()?;
        let mut indexed_storage_k = DEFAULT_INDEXED_STORAGE_K;
        if version == 1 {
            let at = cur.offset();
            indexed_storage_k = cur.read_u16()?;
            if indexed_storage_k == 0 {
                return Err(Error::corrupt("indexed storage K of zero", at));
            }
            let _reserved = cur.read_u16()?;
        }
        let stored_base = cur.read_addr(sizes)?;
        let _free_space = cur.read_addr(sizes)?;
        let eof = cur.read_addr(sizes)?;
        let driver_info = cur.read_addr(sizes)?;
        let entry_ctx = Ctx {
            sizes,
            limits: ctx.limits,
        };
        let root_entry = SymbolTableEntry::decode(cur, entry_ctx)?;
        Ok(Superblock {
            version,
            sizes,
            sig_offset,
            base_address: sig_offset,
            stored_base_address: stored_base.get(),
            group_leaf_k,
            group_internal_k,
            indexed_storage_k,
            flags,
            extension: Addr::UNDEF,
            eof,
            driver_info,
            root: root_entry.header,
            root_entry: Some(root_entry),
        })
    }

    fn decode_v23(
        cur: &mut Cursor<'_>,
        version: u8,
        sig_offset: u64,
        start: usize,
    ) -> Result<Self> {
        let so_at = cur.offset();
        let offsets = check_size(cur.read_u8()?, "size of offsets", so_at)?;
        let lengths = check_size(cur.read_u8()?, "size of lengths", so_at.saturating_add(1))?;
        let sizes = Sizes { offsets, lengths };
        let flags = u32::from(cur.read_u8()?);
        let stored_base = cur.read_addr(sizes)?;
        let extension = cur.read_addr(sizes)?;
        let eof = cur.read_addr(sizes)?;
        let root = cur.read_addr(sizes)?;
        let end = cur.pos();
        let sum_at = cur.offset();
        let stored = cur.read_u32()?;
        let covered = cur
            .data()
            .get(start..end)
            .ok_or_else(|| Error::truncated("superblock", sig_offset))?;
        let computed = lookup3(covered, 0);
        if computed != stored {
            return Err(Error::checksum(
                alloc::format!("superblock checksum {stored:#010x}, computed {computed:#010x}"),
                sum_at,
            ));
        }
        Ok(Superblock {
            version,
            sizes,
            sig_offset,
            base_address: sig_offset,
            stored_base_address: stored_base.get(),
            group_leaf_k: 0,
            group_internal_k: 0,
            indexed_storage_k: DEFAULT_INDEXED_STORAGE_K,
            flags,
            extension,
            eof,
            driver_info: Addr::UNDEF,
            root,
            root_entry: None,
        })
    }
}

/// Find the superblock signature: at 0, then 512, 1024, 2048, … (powers of
/// two) while inside the source, as libhdf5's `H5FD_locate_signature` does.
/// Returns the absolute offset of the signature.
///
/// # Errors
/// `Corrupt` when no signature is found ("not an HDF5 file"), `Io`.
pub fn locate(src: &dyn ReadAt) -> Result<u64> {
    let len = src.len();
    let mut buf = [0u8; 8];
    let mut n: u32 = 8;
    loop {
        let addr = if n == 8 {
            0u64
        } else {
            1u64.checked_shl(n).unwrap_or(u64::MAX)
        };
        if n >= 64 || addr.checked_add(8).is_none_or(|e| e > len) {
            break;
        }
        src.read_at(addr, &mut buf)?;
        if buf == SIGNATURE {
            return Ok(addr);
        }
        n += 1;
    }
    Err(Error::corrupt(
        "not an HDF5 file: no superblock signature found",
        0,
    ))
}

impl Superblock {
    /// Encoded size of a superblock of `version` (0, 2 or 3), root symbol
    /// table entry and checksum included.
    pub fn encoded_len(version: u8, sizes: Sizes) -> usize {
        let o = usize::from(sizes.offsets);
        match version {
            0 => 24 + 4 * o + SymbolTableEntry::encoded_len(sizes),
            1 => 28 + 4 * o + SymbolTableEntry::encoded_len(sizes),
            _ => 12 + 4 * o + 4,
        }
    }

    /// Encode the superblock (version 0/1 with `root_entry`, or 2/3 with
    /// its checksum). Written at the file's start; `base_address` is
    /// written as stored.
    ///
    /// # Errors
    /// `Usage` for a version 0/1 superblock without a root entry, or an
    /// unknown version.
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        let start = enc.len();
        let s = self.sizes;
        enc.put_bytes(&SIGNATURE);
        enc.put_u8(self.version);
        match self.version {
            0 | 1 => {
                let entry = self
                    .root_entry
                    .ok_or_else(|| Error::usage("superblock v0/v1 needs the root entry"))?;
                enc.put_bytes(&[0, 0, 0, 0]); // free-space, root entry, reserved, shared header versions
                enc.put_u8(s.offsets);
                enc.put_u8(s.lengths);
                enc.put_u8(0);
                enc.put_u16(self.group_leaf_k);
                enc.put_u16(self.group_internal_k);
                enc.put_u32(self.flags);
                if self.version == 1 {
                    enc.put_u16(self.indexed_storage_k);
                    enc.put_u16(0);
                }
                enc.put_addr(Addr(self.stored_base_address), s);
                enc.put_addr(Addr::UNDEF, s); // free-space info
                enc.put_addr(self.eof, s);
                enc.put_addr(self.driver_info, s);
                entry.encode(
                    enc,
                    Ctx {
                        sizes: s,
                        ..Ctx::default()
                    },
                );
            }
            2 | 3 => {
                enc.put_u8(s.offsets);
                enc.put_u8(s.lengths);
                #[allow(clippy::cast_possible_truncation)] // v2/v3 flags are one byte
                enc.put_u8(self.flags as u8);
                enc.put_addr(Addr(self.stored_base_address), s);
                enc.put_addr(self.extension, s);
                enc.put_addr(self.eof, s);
                enc.put_addr(self.root, s);
                enc.put_checksum_from(start);
            }
            v => return Err(Error::usage(alloc::format!("superblock version {v}"))),
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::symbol_table_node::EntryCache;
    use crate::ErrorKind;
    use alloc::vec::Vec;

    fn v0_bytes(base: u64) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(&SIGNATURE);
        b.extend_from_slice(&[0, 0, 0, 0, 0, 8, 8, 0]);
        b.extend_from_slice(&4u16.to_le_bytes());
        b.extend_from_slice(&16u16.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&base.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&0x1234u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        // root entry
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0x60u64.to_le_bytes());
        b.extend_from_slice(&1u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0x88u64.to_le_bytes());
        b.extend_from_slice(&0x2a8u64.to_le_bytes());
        b
    }

    #[test]
    fn v0_handbuilt() {
        let b = v0_bytes(0);
        let sb = Superblock::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(sb.version, 0);
        assert_eq!(sb.group_leaf_k, 4);
        assert_eq!(sb.group_internal_k, 16);
        assert_eq!(sb.eof, Addr(0x1234));
        assert!(sb.driver_info.is_undef());
        assert_eq!(sb.root, Addr(0x60));
        assert_eq!(sb.indexed_storage_k, 32);
        let e = sb.root_entry.unwrap();
        assert_eq!(
            e.cache,
            EntryCache::Group {
                btree: Addr(0x88),
                heap: Addr(0x2a8)
            }
        );
    }

    #[test]
    fn base_address_is_signature_offset() {
        // stored base 0 but found at 512: libhdf5 uses 512.
        let b = v0_bytes(0);
        let sb = Superblock::decode(&mut Cursor::new(&b, 512), Ctx::default()).unwrap();
        assert_eq!(sb.base_address, 512);
        assert_eq!(sb.stored_base_address, 0);
    }

    #[test]
    fn v0_truncated_and_bad_versions() {
        let b = v0_bytes(0);
        for n in 0..b.len() {
            let r = Superblock::decode(&mut Cursor::new(b.get(..n).unwrap(), 0), Ctx::default());
            assert!(r.is_err(), "prefix {n}");
        }
        let mut bad = b.clone();
        bad[8] = 7;
        assert_eq!(
            Superblock::decode(&mut Cursor::new(&bad, 0), Ctx::default())
                .unwrap_err()
                .kind(),
            ErrorKind::Unsupported
        );
        let mut bad = b.clone();
        bad[13] = 3; // size of offsets
        assert_eq!(
            Superblock::decode(&mut Cursor::new(&bad, 0), Ctx::default())
                .unwrap_err()
                .kind(),
            ErrorKind::Corrupt
        );
    }

    #[test]
    fn v2_checksum() {
        let mut b = Vec::new();
        b.extend_from_slice(&SIGNATURE);
        b.extend_from_slice(&[2, 8, 8, 0]);
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&0x400u64.to_le_bytes());
        b.extend_from_slice(&0x30u64.to_le_bytes());
        let sum = lookup3(&b, 0);
        b.extend_from_slice(&sum.to_le_bytes());
        let sb = Superblock::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(sb.version, 2);
        assert_eq!(sb.root, Addr(0x30));
        assert!(sb.extension.is_undef());
        assert_eq!(sb.eof, Addr(0x400));
        let mut bad = b.clone();
        bad[20] ^= 1;
        assert_eq!(
            Superblock::decode(&mut Cursor::new(&bad, 0), Ctx::default())
                .unwrap_err()
                .kind(),
            ErrorKind::Checksum
        );
    }

    #[test]
    fn locate_powers_of_two() {
        let mut v = alloc::vec![0u8; 2048 + 16];
        v[2048..2056].copy_from_slice(&SIGNATURE);
        assert_eq!(locate(&v).unwrap(), 2048);
        v[1000..1008].copy_from_slice(&SIGNATURE); // not a power of two: ignored
        assert_eq!(locate(&v).unwrap(), 2048);
        let empty: Vec<u8> = Vec::new();
        assert_eq!(locate(&empty).unwrap_err().kind(), ErrorKind::Corrupt);
        let short = alloc::vec![0u8; 600];
        assert!(locate(&short).is_err());
    }
}
