//! Virtual Dataset Global Heap Block, III.F: versions 0 and 1.
//!
//! The mapping list of a virtual dataset is one global heap object, named by
//! the data layout message (class 3). Layout:
//! - version (1 byte: 0, or 1 since HDF5 2.0),
//! - number of entries (size of lengths),
//! - per entry: (version 1 only) a flags byte — bit 0 source filename shared,
//!   bit 1 source dataset name shared, bit 2 source file is the virtual
//!   dataset's own file (no filename stored); the source filename and the
//!   source dataset name, each a NUL-terminated string or, when shared, a
//!   size-of-lengths index of an earlier entry holding the string; the source
//!   selection and the virtual selection (serialized dataspace selections,
//!   see [`crate::format::selection`]),
//! - a lookup3 checksum of everything before it.
//!
//! A source filename of `"."` means the virtual dataset's own file.

use crate::codec::{lookup3, Cursor};
use crate::error::{Error, Result};
use crate::format::selection::Selection;
use crate::Ctx;
use alloc::string::String;
use alloc::vec::Vec;

/// Flag bit (version 1): the source filename is an index of an earlier entry.
pub const FLAG_FILE_SHARED: u8 = 0x01;
/// Flag bit (version 1): the source dataset name is an index of an earlier entry.
pub const FLAG_DATASET_SHARED: u8 = 0x02;
/// Flag bit (version 1): the source is in the virtual dataset's own file.
pub const FLAG_SAME_FILE: u8 = 0x04;

/// The filename libhdf5 uses for "the virtual dataset's own file".
pub const SAME_FILE: &str = ".";

/// One source → virtual mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VdsMapping {
    /// Source filename (may contain printf-style `%b` / `%%`); [`SAME_FILE`]
    /// for the virtual dataset's own file.
    pub file: String,
    /// Source dataset path (may contain printf-style `%b` / `%%`).
    pub dataset: String,
    /// Selection within the source dataset.
    pub source: Selection,
    /// Selection within the virtual dataset.
    pub virtual_sel: Selection,
}

/// A decoded Virtual Dataset Global Heap Block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VdsBlock {
    /// Block encoding version (0 or 1).
    pub version: u8,
    /// The mappings, in stored order.
    pub mappings: Vec<VdsMapping>,
}

/// The smallest encoded entry: two one-byte strings and two 16-byte selections.
const MIN_ENTRY: usize = 2 + 2 * 16;

fn name(cur: &mut Cursor<'_>) -> Result<String> {
    let at = cur.offset();
    let b = cur.read_cstr()?;
    String::from_utf8(b.to_vec())
        .map_err(|_| Error::corrupt("virtual dataset source name is not UTF-8", at))
}

/// A shared name: the index of an earlier entry, whose string `pick` returns.
fn shared(
    cur: &mut Cursor<'_>,
    ctx: Ctx,
    done: &[VdsMapping],
    pick: fn(&VdsMapping) -> &String,
) -> Result<String> {
    let at = cur.offset();
    let i = cur.read_len(ctx.sizes)?;
    usize::try_from(i)
        .ok()
        .and_then(|i| done.get(i))
        .map(|m| pick(m).clone())
        .ok_or_else(|| {
            Error::corrupt(
                alloc::format!(
                    "virtual dataset entry {} shares the name of entry {i}",
                    done.len()
                ),
                at,
            )
        })
}

impl VdsBlock {
    /// Decode a block from the bytes of its global heap object (`cur` spans
    /// exactly the object). The checksum is verified before anything is
    /// returned.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` (version, flags, names, selections, an entry count
    /// larger than the bytes can hold), `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let start = cur.pos();
        let all = cur.data();
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version > 1 {
            return Err(Error::unsupported(alloc::format!(
                "virtual dataset heap block version {version}"
            ))
            .with_offset(at));
        }
        let n = cur.read_len(ctx.sizes)?;
        if n > ctx.limits.max_index_entries {
            return Err(Error::limit(alloc::format!(
                "virtual dataset with {n} mappings"
            )));
        }
        let per = if version == 1 {
            MIN_ENTRY + 1
        } else {
            MIN_ENTRY
        };
        let n = cur.ensure_count(n, per)?;
        let mut mappings: Vec<VdsMapping> = Vec::with_capacity(n);
        for _ in 0..n {
            let flags = if version == 1 { cur.read_u8()? } else { 0 };
            if flags & !(FLAG_FILE_SHARED | FLAG_DATASET_SHARED | FLAG_SAME_FILE) != 0 {
                return Err(cur.corrupt(alloc::format!("virtual dataset mapping flags {flags:#x}")));
            }
            let file = if flags & FLAG_SAME_FILE != 0 {
                String::from(SAME_FILE)
            } else if flags & FLAG_FILE_SHARED != 0 {
                shared(cur, ctx, &mappings, |m| &m.file)?
            } else {
                name(cur)?
            };
            let dataset = if flags & FLAG_DATASET_SHARED != 0 {
                shared(cur, ctx, &mappings, |m| &m.dataset)?
            } else {
                name(cur)?
            };
            let source = Selection::decode(cur, ctx)?;
            let virtual_sel = Selection::decode(cur, ctx)?;
            mappings.push(VdsMapping {
                file,
                dataset,
                source,
                virtual_sel,
            });
        }
        let end = cur.pos();
        let sum_at = cur.offset();
        let stored = cur.read_u32()?;
        let body = all
            .get(start..end)
            .ok_or_else(|| Error::corrupt("virtual dataset block bounds", at))?;
        let computed = lookup3(body, 0);
        if stored != computed {
            return Err(Error::checksum(
                alloc::format!(
                    "virtual dataset heap block checksum {stored:#010x}, computed {computed:#010x}"
                ),
                sum_at,
            ));
        }
        Ok(VdsBlock { version, mappings })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::selection::RegularDim;

    fn with_sum(mut b: Vec<u8>) -> Vec<u8> {
        let s = lookup3(&b, 0);
        b.extend_from_slice(&s.to_le_bytes());
        b
    }

    /// Serialized "all" selection (type 3, version 1, 8 reserved/length bytes).
    fn all() -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&3u32.to_le_bytes());
        v.extend_from_slice(&1u32.to_le_bytes());
        v.extend_from_slice(&[0; 8]);
        v
    }

    /// Regular rank-1 hyperslab, version 3 with 2-byte encoding.
    fn hyper(start: u16, count: u16, block: u16) -> Vec<u8> {
        let mut v = Vec::new();
        v.extend_from_slice(&2u32.to_le_bytes());
        v.extend_from_slice(&3u32.to_le_bytes());
        v.extend_from_slice(&[1, 2]);
        v.extend_from_slice(&1u32.to_le_bytes());
        for x in [start, 1, count, block] {
            v.extend_from_slice(&x.to_le_bytes());
        }
        v
    }

    fn reg(start: u64, count: u64, block: u64) -> Selection {
        Selection::Regular(alloc::vec![RegularDim {
            start,
            stride: 1,
            count,
            block
        }])
    }

    #[test]
    fn version_0_two_entries() {
        let mut b = alloc::vec![0u8];
        b.extend_from_slice(&2u64.to_le_bytes());
        for (f, d, s) in [(&b"src.h5"[..], &b"/a"[..], 0u16), (b".", b"/b", 10)] {
            b.extend_from_slice(f);
            b.push(0);
            b.extend_from_slice(d);
            b.push(0);
            b.extend(all());
            b.extend(hyper(s, 1, 10));
        }
        let b = with_sum(b);
        let blk = VdsBlock::decode(&mut Cursor::new(&b, 100), Ctx::default()).unwrap();
        assert_eq!(blk.version, 0);
        assert_eq!(blk.mappings.len(), 2);
        assert_eq!(blk.mappings[0].file, "src.h5");
        assert_eq!(blk.mappings[0].dataset, "/a");
        assert_eq!(blk.mappings[0].source, Selection::All);
        assert_eq!(blk.mappings[0].virtual_sel, reg(0, 1, 10));
        assert_eq!(blk.mappings[1].file, ".");
        assert_eq!(blk.mappings[1].virtual_sel, reg(10, 1, 10));

        // Any flipped byte of the body fails the checksum (or the decode).
        for i in 0..b.len() {
            let mut m = b.clone();
            m[i] ^= 0x40;
            assert!(VdsBlock::decode(&mut Cursor::new(&m, 0), Ctx::default()).is_err());
        }
        // A count larger than the bytes allow is rejected before allocating.
        let mut m = b.clone();
        m[1..9].copy_from_slice(&u64::MAX.to_le_bytes());
        let e = VdsBlock::decode(&mut Cursor::new(&m, 0), Ctx::default()).unwrap_err();
        assert!(matches!(
            e.kind(),
            crate::ErrorKind::Truncated | crate::ErrorKind::Limit
        ));
    }

    /// Bytes of a version-1 block written by libhdf5 2.0 (h5py 3.16,
    /// `libver=("v200", "latest")`): three mappings of one long-named source,
    /// the second and third sharing filename and dataset name with entry 0.
    #[test]
    fn version_1_shared_names_from_libhdf5() {
        let mut b = alloc::vec![1u8];
        b.extend_from_slice(&3u64.to_le_bytes());
        b.push(0);
        b.extend_from_slice(b"src_long_file_name_for_sharing.h5\0");
        b.extend_from_slice(b"a_very_long_dataset_name_to_share\0");
        b.extend(all());
        b.extend(hyper(0, 1, 10));
        for s in [10u16, 20] {
            b.push(3);
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend_from_slice(&0u64.to_le_bytes());
            b.extend(all());
            b.extend(hyper(s, 1, 10));
        }
        b.extend_from_slice(&[0xf0, 0x16, 0xbc, 0x13]); // checksum as libhdf5 wrote it
        let blk = VdsBlock::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(blk.version, 1);
        assert_eq!(blk.mappings.len(), 3);
        for (k, m) in blk.mappings.iter().enumerate() {
            assert_eq!(m.file, "src_long_file_name_for_sharing.h5");
            assert_eq!(m.dataset, "a_very_long_dataset_name_to_share");
            assert_eq!(m.virtual_sel, reg(10 * k as u64, 1, 10));
        }
    }

    #[test]
    fn version_1_same_file_and_bad_shares() {
        let mut b = alloc::vec![1u8];
        b.extend_from_slice(&1u64.to_le_bytes());
        b.push(FLAG_SAME_FILE);
        b.extend_from_slice(b"/a\0");
        b.extend(all());
        b.extend(hyper(0, 1, 10));
        let ok = with_sum(b.clone());
        let blk = VdsBlock::decode(&mut Cursor::new(&ok, 0), Ctx::default()).unwrap();
        assert_eq!(blk.mappings[0].file, SAME_FILE);
        assert_eq!(blk.mappings[0].dataset, "/a");

        // Entry 0 sharing a name with entry 0 (not yet decoded): corrupt.
        let mut s = alloc::vec![1u8];
        s.extend_from_slice(&1u64.to_le_bytes());
        s.push(FLAG_SAME_FILE | FLAG_DATASET_SHARED);
        s.extend_from_slice(&0u64.to_le_bytes());
        s.extend(all());
        s.extend(hyper(0, 1, 10));
        let s = with_sum(s);
        let e = VdsBlock::decode(&mut Cursor::new(&s, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);

        // Reserved flag bits.
        let mut r = b.clone();
        r[9] = 0x80;
        let r = with_sum(r);
        let e = VdsBlock::decode(&mut Cursor::new(&r, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);

        // Version 2 is not defined.
        let mut v = b;
        v[0] = 2;
        let v = with_sum(v);
        let e = VdsBlock::decode(&mut Cursor::new(&v, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Unsupported);
    }
}
