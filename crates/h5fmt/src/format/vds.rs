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
//!
//! [`VdsBlock::encode`] writes both versions back: version 0 with the
//! selections in the versions libhdf5 1.10 reads, version 1 as libhdf5 2.0
//! writes it under `libver="latest"` (same-file flag, a name shared with the
//! first earlier entry holding it when that is shorter than the string,
//! selections in libhdf5 1.12's versions).

use crate::codec::{lookup3, Cursor, Encoder};
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
    /// Encode the block (checksum included) with `self.version` (0 or 1).
    ///
    /// # Errors
    /// `Usage` for a version other than 0 and 1, no mapping, a name that is
    /// empty or contains NUL, a selection [`Selection::encode`] refuses.
    pub fn encode(&self, ctx: Ctx) -> Result<Vec<u8>> {
        if self.version > 1 {
            return Err(Error::usage(alloc::format!(
                "virtual dataset heap block version {}",
                self.version
            )));
        }
        if self.mappings.is_empty() {
            return Err(Error::usage("a virtual dataset needs at least one mapping"));
        }
        for m in &self.mappings {
            for n in [&m.file, &m.dataset] {
                if n.is_empty() || n.contains('\0') {
                    return Err(Error::usage(alloc::format!(
                        "virtual dataset source name {n:?}: empty or containing NUL"
                    )));
                }
            }
        }
        let modern = self.version == 1;
        let lengths = usize::from(ctx.sizes.lengths);
        let mut e = Encoder::new();
        e.put_u8(self.version);
        e.put_len(self.mappings.len() as u64, ctx.sizes);
        for (i, m) in self.mappings.iter().enumerate() {
            let earlier = self.mappings.get(..i).unwrap_or(&[]);
            // The first earlier entry naming the same string, when an index
            // is shorter than the string and its NUL.
            let share = |name: &String, pick: fn(&VdsMapping) -> &String| {
                if !modern || name.len() < lengths {
                    return None;
                }
                earlier.iter().position(|o| pick(o) == name)
            };
            let same = modern && m.file == SAME_FILE;
            let file_at = if same {
                None
            } else {
                share(&m.file, |o| &o.file)
            };
            let ds_at = share(&m.dataset, |o| &o.dataset);
            if modern {
                let mut flags = 0;
                if same {
                    flags |= FLAG_SAME_FILE;
                }
                if file_at.is_some() {
                    flags |= FLAG_FILE_SHARED;
                }
                if ds_at.is_some() {
                    flags |= FLAG_DATASET_SHARED;
                }
                e.put_u8(flags);
            }
            if !same {
                match file_at {
                    Some(j) => e.put_len(j as u64, ctx.sizes),
                    None => e.put_cstr(&m.file),
                }
            }
            match ds_at {
                Some(j) => e.put_len(j as u64, ctx.sizes),
                None => e.put_cstr(&m.dataset),
            }
            m.source.encode(&mut e, modern)?;
            m.virtual_sel.encode(&mut e, modern)?;
        }
        e.put_checksum_from(0);
        Ok(e.into_vec())
    }

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

    /// Mapping blocks written by libhdf5 2.0 (h5py 3.16, `libver="latest"`):
    /// decoding then encoding gives the same bytes.
    #[test]
    fn encode_reproduces_libhdf5_blocks() {
        // src.h5:/a (all) -> [0:10], ".":/x (all) -> [12:17]
        let mixed: &[u8] = &[
            1, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0x73, 0x72, 0x63, 0x2e, 0x68, 0x35, 0, 0x61, 0, 3, 0, 0,
            0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0, 0,
            1, 0, 1, 0, 0x0a, 0, 4, 0x78, 0, 3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0,
            0, 0, 3, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0x0c, 0, 1, 0, 1, 0, 5, 0, 0xc5, 0x24, 0x07, 0x37,
        ];
        // src2.h5:/u [0:unlimited] -> [0:unlimited]
        let unlim: &[u8] = &[
            0, 1, 0, 0, 0, 0, 0, 0, 0, 0x73, 0x72, 0x63, 0x32, 0x2e, 0x68, 0x35, 0, 0x75, 0, 2, 0,
            0, 0, 3, 0, 0, 0, 1, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 1, 0, 2, 0, 0, 0, 3, 0, 0,
            0, 1, 2, 1, 0, 0, 0, 0, 0, 1, 0, 0xff, 0xff, 1, 0, 0xea, 0xd5, 0x43, 0x3d,
        ];
        let blk = VdsBlock::decode(&mut Cursor::new(mixed, 0), Ctx::default()).unwrap();
        assert_eq!(blk.mappings[1].file, SAME_FILE);
        assert_eq!(blk.encode(Ctx::default()).unwrap(), mixed);
        let blk = VdsBlock::decode(&mut Cursor::new(unlim, 0), Ctx::default()).unwrap();
        assert_eq!(
            blk.mappings[0].virtual_sel,
            Selection::Regular(alloc::vec![RegularDim {
                start: 0,
                stride: 1,
                count: crate::format::selection::UNLIMITED,
                block: 1
            }])
        );
        // Version 0 stores selections in version 2 / 1 (8-byte regular):
        // different bytes, same block.
        let mut v1 = blk.clone();
        v1.version = 1;
        let b = v1.encode(Ctx::default()).unwrap();
        let mut v0 = blk.clone();
        v0.version = 0;
        let b0 = v0.encode(Ctx::default()).unwrap();
        assert_ne!(b0, b);
        let back = VdsBlock::decode(&mut Cursor::new(&b0, 0), Ctx::default()).unwrap();
        assert_eq!(back, v0);
    }

    #[test]
    fn encode_shares_names_and_round_trips_every_selection_form() {
        use crate::format::selection::UNLIMITED;
        let long = String::from("a_source_file_with_a_long_name.h5");
        let sels = [
            Selection::All,
            Selection::None,
            Selection::Points {
                rank: 2,
                coords: alloc::vec![0, 1, 5, 7, 1 << 33, 2],
            },
            Selection::Points {
                rank: 1,
                coords: alloc::vec![3, 9],
            },
            Selection::Blocks {
                rank: 2,
                corners: alloc::vec![0, 0, 1, 1, 4, 4, 70000, 5],
            },
            Selection::Blocks {
                rank: 1,
                corners: alloc::vec![0, 1 << 40],
            },
            Selection::Regular(alloc::vec![
                RegularDim {
                    start: 1,
                    stride: 3,
                    count: UNLIMITED,
                    block: 2
                },
                RegularDim {
                    start: 0,
                    stride: 1,
                    count: 1,
                    block: 65535
                },
            ]),
        ];
        for version in [0, 1] {
            let mappings: Vec<VdsMapping> = sels
                .iter()
                .enumerate()
                .map(|(i, s)| VdsMapping {
                    file: if i % 3 == 0 {
                        String::from(SAME_FILE)
                    } else {
                        long.clone()
                    },
                    dataset: alloc::format!("/d{}", i % 2),
                    source: s.clone(),
                    virtual_sel: sels[(i + 1) % sels.len()].clone(),
                })
                .collect();
            let blk = VdsBlock { version, mappings };
            let b = blk.encode(Ctx::default()).unwrap();
            let back = VdsBlock::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
            assert_eq!(back, blk, "version {version}");
            // The long file name is stored once in version 1.
            let n = b
                .windows(long.len())
                .filter(|w| *w == long.as_bytes())
                .count();
            assert_eq!(n, if version == 1 { 1 } else { 4 }, "version {version}");
        }
        // Refused: bad names, bad selections, no mappings, version 2.
        let m = |file: &str, sel: Selection| VdsBlock {
            version: 0,
            mappings: alloc::vec![VdsMapping {
                file: String::from(file),
                dataset: String::from("/d"),
                source: Selection::All,
                virtual_sel: sel,
            }],
        };
        let usage = |b: VdsBlock| b.encode(Ctx::default()).unwrap_err().kind();
        assert_eq!(usage(m("a\0b", Selection::All)), crate::ErrorKind::Usage);
        assert_eq!(usage(m("", Selection::All)), crate::ErrorKind::Usage);
        let bad_block = Selection::Blocks {
            rank: 1,
            corners: alloc::vec![5, 4],
        };
        assert_eq!(usage(m("f", bad_block)), crate::ErrorKind::Usage);
        let ragged = Selection::Points {
            rank: 2,
            coords: alloc::vec![1, 2, 3],
        };
        assert_eq!(usage(m("f", ragged)), crate::ErrorKind::Usage);
        assert_eq!(
            usage(m("f", Selection::Regular(Vec::new()))),
            crate::ErrorKind::Usage
        );
        let mut none = m("f", Selection::All);
        none.mappings.clear();
        assert_eq!(usage(none), crate::ErrorKind::Usage);
        let mut v2 = m("f", Selection::All);
        v2.version = 2;
        assert_eq!(usage(v2), crate::ErrorKind::Usage);
    }
}
