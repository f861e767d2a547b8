//! Data layout message (0x0008), IV.A.2.i: versions 1–5.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// How chunk addresses are indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkIndex {
    /// Version 1 B-tree (layout v1–v3, and v4 index type 0 does not exist).
    BTreeV1 {
        /// Root node address.
        addr: Addr,
    },
    /// Single chunk (layout v4/v5 type 1).
    SingleChunk {
        /// Chunk address.
        addr: Addr,
        /// Filtered size and filter mask, when the dataset has filters.
        filtered: Option<(u64, u32)>,
    },
    /// Implicit index (type 2): chunks stored contiguously in order.
    Implicit {
        /// Address of the first chunk.
        addr: Addr,
    },
    /// Fixed array (type 3).
    FixedArray {
        /// Header address.
        addr: Addr,
        /// log2 of elements per data block page.
        page_bits: u8,
    },
    /// Extensible array (type 4).
    ExtensibleArray {
        /// Header address.
        addr: Addr,
        /// Max bits of elements in the index block (stored in the message).
        max_bits: u8,
        /// Index block elements.
        index_elements: u8,
        /// Minimum pointers in a data block.
        min_pointers: u8,
        /// Minimum elements in a data block.
        min_elements: u8,
        /// log2 of max elements in a data block page.
        page_bits: u8,
    },
    /// Version 2 B-tree (type 5).
    BTreeV2 {
        /// Header address.
        addr: Addr,
        /// Node size.
        node_size: u32,
        /// Split percent.
        split_percent: u8,
        /// Merge percent.
        merge_percent: u8,
    },
}

/// Chunked layout properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedLayout {
    /// Chunk dimensions in elements (rank of the dataspace; the trailing
    /// element-size dimension stored by every layout version is removed and
    /// kept in `element_size`).
    pub dims: Vec<u64>,
    /// The element size stored as the last chunk dimension (all versions).
    pub element_size: u64,
    /// Layout v4/v5 flags (bit 0: don't filter partial edge chunks; bit 1: single index with filter).
    pub flags: u8,
    /// Chunk index.
    pub index: ChunkIndex,
    /// The layout message version (1–5). Version 5 (libhdf5 2.0) changes the
    /// encoding of filtered chunk records in fixed array, extensible array and
    /// v2 B-tree indexes: the chunk size takes "size of lengths" bytes.
    pub layout_version: u8,
}

/// The storage of a dataset's raw data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Data stored in the message.
    Compact {
        /// The raw data.
        data: Vec<u8>,
    },
    /// One contiguous block (UNDEF address: never allocated).
    Contiguous {
        /// Address.
        addr: Addr,
        /// Size in bytes.
        size: u64,
    },
    /// Chunked.
    Chunked(ChunkedLayout),
    /// Virtual dataset: global heap id of the mapping list.
    Virtual {
        /// Global heap collection address.
        heap_addr: Addr,
        /// Object index in the collection.
        index: u32,
    },
}

impl Layout {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported` version or class.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        match version {
            1 | 2 => decode_v12(cur, ctx, version),
            3..=5 => decode_v345(cur, ctx, version),
            v => Err(
                Error::unsupported(alloc::format!("data layout message version {v}"))
                    .with_offset(at),
            ),
        }
    }
}

/// Maximum chunk dimensionality including the element-size dimension
/// (`H5O_LAYOUT_NDIMS` = `H5S_MAX_RANK` + 1).
pub const MAX_LAYOUT_NDIMS: usize = 33;

const CLASS_COMPACT: u8 = 0;
const CLASS_CONTIGUOUS: u8 = 1;
const CLASS_CHUNKED: u8 = 2;
const CLASS_VIRTUAL: u8 = 3;

/// Chunk flag: don't filter partial edge chunks.
pub const FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS: u8 = 0x01;
/// Chunk flag: the single-chunk index stores the filtered size and mask.
pub const FLAG_SINGLE_INDEX_WITH_FILTER: u8 = 0x02;

/// Split chunk dimensions into the dataspace-rank part and the trailing
/// element size, checking that none is zero.
fn split_chunk_dims(mut dims: Vec<u64>, at: u64) -> Result<(Vec<u64>, u64)> {
    if dims.len() < 2 {
        return Err(Error::corrupt(
            alloc::format!("chunked layout with {} dimensions", dims.len()),
            at,
        ));
    }
    if dims.contains(&0) {
        return Err(Error::corrupt("chunk dimension of size zero", at));
    }
    let element_size = dims.pop().unwrap_or(0);
    Ok((dims, element_size))
}

fn read_ndims(cur: &mut Cursor<'_>) -> Result<usize> {
    let at = cur.offset();
    let n = usize::from(cur.read_u8()?);
    if n > MAX_LAYOUT_NDIMS {
        return Err(Error::corrupt(
            alloc::format!("layout dimensionality {n} is too large"),
            at,
        ));
    }
    Ok(n)
}

fn read_u32_dims(cur: &mut Cursor<'_>, n: usize) -> Result<Vec<u64>> {
    cur.ensure_count(n as u64, 4)?;
    let mut dims = Vec::with_capacity(n);
    for _ in 0..n {
        dims.push(u64::from(cur.read_u32()?));
    }
    Ok(dims)
}

fn decode_v12(cur: &mut Cursor<'_>, ctx: Ctx, version: u8) -> Result<Layout> {
    let ndims_at = cur.offset();
    let ndims = read_ndims(cur)?;
    if ndims == 0 {
        return Err(Error::corrupt("layout dimensionality of zero", ndims_at));
    }
    let class_at = cur.offset();
    let class = cur.read_u8()?;
    cur.skip(5)?;
    let addr = match class {
        CLASS_CONTIGUOUS | CLASS_CHUNKED => cur.read_addr(ctx.sizes)?,
        CLASS_COMPACT => Addr::UNDEF,
        c => {
            return Err(Error::corrupt(
                alloc::format!("data layout class {c}"),
                class_at,
            ))
        }
    };
    let dims = read_u32_dims(cur, ndims)?;
    match class {
        CLASS_CONTIGUOUS => {
            // The dimensions are those of the dataspace plus the element size;
            // their product is the storage size. (libhdf5 recomputes it from the
            // dataspace because 32-bit dimensions may have been truncated.)
            let size = dims
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| cur.corrupt("contiguous size overflows"))?;
            Ok(Layout::Contiguous { addr, size })
        }
        CLASS_CHUNKED => {
            let (dims, element_size) = split_chunk_dims(dims, ndims_at)?;
            Ok(Layout::Chunked(ChunkedLayout {
                dims,
                element_size,
                flags: 0,
                index: ChunkIndex::BTreeV1 { addr },
                layout_version: version,
            }))
        }
        _ => {
            let size = usize::try_from(cur.read_u32()?).map_err(|_| cur.corrupt("compact size"))?;
            Ok(Layout::Compact {
                data: cur.read_bytes(size)?.to_vec(),
            })
        }
    }
}

fn decode_v345(cur: &mut Cursor<'_>, ctx: Ctx, version: u8) -> Result<Layout> {
    let class_at = cur.offset();
    let class = cur.read_u8()?;
    match class {
        CLASS_COMPACT => {
            let size = usize::from(cur.read_u16()?);
            Ok(Layout::Compact {
                data: cur.read_bytes(size)?.to_vec(),
            })
        }
        CLASS_CONTIGUOUS => {
            let addr = cur.read_addr(ctx.sizes)?;
            let size = cur.read_len(ctx.sizes)?;
            Ok(Layout::Contiguous { addr, size })
        }
        CLASS_CHUNKED if version == 3 => {
            let ndims_at = cur.offset();
            let ndims = read_ndims(cur)?;
            let addr = cur.read_addr(ctx.sizes)?;
            let dims = read_u32_dims(cur, ndims)?;
            let (dims, element_size) = split_chunk_dims(dims, ndims_at)?;
            Ok(Layout::Chunked(ChunkedLayout {
                dims,
                element_size,
                flags: 0,
                index: ChunkIndex::BTreeV1 { addr },
                layout_version: version,
            }))
        }
        CLASS_CHUNKED => {
            let flags_at = cur.offset();
            let flags = cur.read_u8()?;
            if flags & !(FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS | FLAG_SINGLE_INDEX_WITH_FILTER) != 0
            {
                return Err(Error::corrupt(
                    alloc::format!("chunked layout flags {flags:#x}"),
                    flags_at,
                ));
            }
            let ndims_at = cur.offset();
            let ndims = read_ndims(cur)?;
            let width_at = cur.offset();
            let width = usize::from(cur.read_u8()?);
            if width == 0 || width > 8 {
                return Err(Error::corrupt(
                    alloc::format!("chunk dimension encoded in {width} bytes"),
                    width_at,
                ));
            }
            cur.ensure_count(ndims as u64, width)?;
            let mut dims = Vec::with_capacity(ndims);
            for _ in 0..ndims {
                dims.push(cur.read_uint(width)?);
            }
            let (dims, element_size) = split_chunk_dims(dims, ndims_at)?;
            let type_at = cur.offset();
            let index = match cur.read_u8()? {
                1 => {
                    let filtered = if flags & FLAG_SINGLE_INDEX_WITH_FILTER != 0 {
                        Some((cur.read_len(ctx.sizes)?, cur.read_u32()?))
                    } else {
                        None
                    };
                    ChunkIndex::SingleChunk {
                        addr: cur.read_addr(ctx.sizes)?,
                        filtered,
                    }
                }
                2 => ChunkIndex::Implicit {
                    addr: cur.read_addr(ctx.sizes)?,
                },
                3 => {
                    let page_bits = cur.read_u8()?;
                    ChunkIndex::FixedArray {
                        page_bits,
                        addr: cur.read_addr(ctx.sizes)?,
                    }
                }
                4 => {
                    let max_bits = cur.read_u8()?;
                    let index_elements = cur.read_u8()?;
                    let min_pointers = cur.read_u8()?;
                    let min_elements = cur.read_u8()?;
                    let page_bits = cur.read_u8()?;
                    ChunkIndex::ExtensibleArray {
                        addr: cur.read_addr(ctx.sizes)?,
                        max_bits,
                        index_elements,
                        min_pointers,
                        min_elements,
                        page_bits,
                    }
                }
                5 => {
                    let node_size = cur.read_u32()?;
                    let split_percent = cur.read_u8()?;
                    let merge_percent = cur.read_u8()?;
                    ChunkIndex::BTreeV2 {
                        addr: cur.read_addr(ctx.sizes)?,
                        node_size,
                        split_percent,
                        merge_percent,
                    }
                }
                0 => {
                    return Err(Error::corrupt(
                        "v1 B-tree chunk index in a layout message of version 4 or later",
                        type_at,
                    ))
                }
                t => {
                    return Err(Error::corrupt(
                        alloc::format!("chunk index type {t}"),
                        type_at,
                    ))
                }
            };
            Ok(Layout::Chunked(ChunkedLayout {
                dims,
                element_size,
                flags,
                index,
                layout_version: version,
            }))
        }
        CLASS_VIRTUAL if version >= 4 => {
            let heap_addr = cur.read_addr(ctx.sizes)?;
            let index = cur.read_u32()?;
            Ok(Layout::Virtual { heap_addr, index })
        }
        c => Err(Error::unsupported(alloc::format!(
            "data layout class {c} in a version {version} message"
        ))
        .with_offset(class_at)),
    }
}

impl Layout {
    /// Encode the message body: version 3 for compact, contiguous and v1
    /// B-tree chunked layouts; version 4 (or `layout_version` 5) for the
    /// chunk indexes of layout 4.
    ///
    /// # Errors
    /// `Usage` for compact data of 64 KiB or more, a contiguous size wider
    /// than the size of lengths, a chunk index that the layout version
    /// cannot describe, or a chunk rank above 32.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) -> Result<()> {
        match self {
            Layout::Compact { data } => {
                let n = u16::try_from(data.len())
                    .map_err(|_| Error::usage("compact data of 64 KiB or more"))?;
                enc.put_u8(3);
                enc.put_u8(CLASS_COMPACT);
                enc.put_u16(n);
                enc.put_bytes(data);
            }
            Layout::Contiguous { addr, size } => {
                // Layout versions 1 and 2 store the size as a product of
                // 32-bit dimensions; version 3 stores it in "size of lengths"
                // bytes, which may be narrower.
                let bits = 8 * u32::from(ctx.sizes.lengths);
                if bits < 64 && size >> bits != 0 {
                    return Err(Error::usage(
                        "contiguous size does not fit the file's size of lengths",
                    ));
                }
                enc.put_u8(3);
                enc.put_u8(CLASS_CONTIGUOUS);
                enc.put_addr(*addr, ctx.sizes);
                enc.put_len(*size, ctx.sizes);
            }
            Layout::Chunked(c) => {
                if c.dims.len() + 1 > MAX_LAYOUT_NDIMS {
                    return Err(Error::usage("chunk rank above 32"));
                }
                #[allow(clippy::cast_possible_truncation)] // ≤ 33
                let ndims = (c.dims.len() + 1) as u8;
                if let ChunkIndex::BTreeV1 { addr } = c.index {
                    enc.put_u8(3);
                    enc.put_u8(CLASS_CHUNKED);
                    enc.put_u8(ndims);
                    enc.put_addr(addr, ctx.sizes);
                    for &d in c.dims.iter().chain(core::iter::once(&c.element_size)) {
                        let d = u32::try_from(d)
                            .map_err(|_| Error::usage("chunk dimension of 2^32 or more"))?;
                        enc.put_u32(d);
                    }
                    return Ok(());
                }
                enc.put_u8(c.layout_version.clamp(4, 5));
                enc.put_u8(CLASS_CHUNKED);
                enc.put_u8(c.flags);
                enc.put_u8(ndims);
                let max = c
                    .dims
                    .iter()
                    .copied()
                    .chain([c.element_size])
                    .max()
                    .unwrap_or(1);
                let width = (1..=8usize)
                    .find(|&w| w == 8 || max >> (8 * w) == 0)
                    .unwrap_or(8);
                #[allow(clippy::cast_possible_truncation)] // 1..=8
                enc.put_u8(width as u8);
                for &d in c.dims.iter().chain(core::iter::once(&c.element_size)) {
                    enc.put_uint(d, width);
                }
                match &c.index {
                    ChunkIndex::BTreeV1 { .. } => {}
                    ChunkIndex::SingleChunk { addr, filtered } => {
                        enc.put_u8(1);
                        if let Some((size, mask)) = filtered {
                            enc.put_len(*size, ctx.sizes);
                            enc.put_u32(*mask);
                        }
                        enc.put_addr(*addr, ctx.sizes);
                    }
                    ChunkIndex::Implicit { addr } => {
                        enc.put_u8(2);
                        enc.put_addr(*addr, ctx.sizes);
                    }
                    ChunkIndex::FixedArray { addr, page_bits } => {
                        enc.put_u8(3);
                        enc.put_u8(*page_bits);
                        enc.put_addr(*addr, ctx.sizes);
                    }
                    ChunkIndex::ExtensibleArray {
                        addr,
                        max_bits,
                        index_elements,
                        min_pointers,
                        min_elements,
                        page_bits,
                    } => {
                        enc.put_u8(4);
                        enc.put_u8(*max_bits);
                        enc.put_u8(*index_elements);
                        enc.put_u8(*min_pointers);
                        enc.put_u8(*min_elements);
                        enc.put_u8(*page_bits);
                        enc.put_addr(*addr, ctx.sizes);
                    }
                    ChunkIndex::BTreeV2 {
                        addr,
                        node_size,
                        split_percent,
                        merge_percent,
                    } => {
                        enc.put_u8(5);
                        enc.put_u32(*node_size);
                        enc.put_u8(*split_percent);
                        enc.put_u8(*merge_percent);
                        enc.put_addr(*addr, ctx.sizes);
                    }
                }
            }
            Layout::Virtual { heap_addr, index } => {
                enc.put_u8(4);
                enc.put_u8(3);
                enc.put_addr(*heap_addr, ctx.sizes);
                enc.put_u32(*index);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn dec(b: &[u8]) -> Result<Layout> {
        Layout::decode(&mut Cursor::new(b, 0), Ctx::default())
    }
    fn u32s(v: &[u32]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_le_bytes()).collect()
    }

    #[test]
    fn v1_v2_classes() {
        // contiguous 10x4 of 8-byte elements
        let mut b = alloc::vec![1u8, 3, 1, 0, 0, 0, 0, 0];
        b.extend_from_slice(&0x800u64.to_le_bytes());
        b.extend(u32s(&[10, 4, 8]));
        assert_eq!(
            dec(&b).unwrap(),
            Layout::Contiguous {
                addr: Addr(0x800),
                size: 320
            }
        );
        // chunked
        let mut b = alloc::vec![2u8, 3, 2, 0, 0, 0, 0, 0];
        b.extend_from_slice(&0x900u64.to_le_bytes());
        b.extend(u32s(&[5, 2, 4]));
        let Layout::Chunked(c) = dec(&b).unwrap() else {
            panic!()
        };
        assert_eq!((c.dims.as_slice(), c.element_size), (&[5u64, 2][..], 4));
        assert_eq!(c.index, ChunkIndex::BTreeV1 { addr: Addr(0x900) });
        // compact: no address
        let mut b = alloc::vec![1u8, 2, 0, 0, 0, 0, 0, 0];
        b.extend(u32s(&[2, 1, 2]));
        b.extend_from_slice(&[7, 8]);
        assert_eq!(
            dec(&b).unwrap(),
            Layout::Compact {
                data: alloc::vec![7, 8]
            }
        );
    }

    #[test]
    fn v3() {
        let mut b = alloc::vec![3u8, 0, 3, 0, 1, 2, 3];
        assert_eq!(
            dec(&b).unwrap(),
            Layout::Compact {
                data: alloc::vec![1, 2, 3]
            }
        );
        b.truncate(5);
        assert_eq!(dec(&b).unwrap_err().kind(), ErrorKind::Truncated);
        let mut b = alloc::vec![3u8, 1];
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&400u64.to_le_bytes());
        assert_eq!(
            dec(&b).unwrap(),
            Layout::Contiguous {
                addr: Addr::UNDEF,
                size: 400
            }
        );
        let mut b = alloc::vec![3u8, 2, 2];
        b.extend_from_slice(&0x40u64.to_le_bytes());
        b.extend(u32s(&[16, 8]));
        let Layout::Chunked(c) = dec(&b).unwrap() else {
            panic!()
        };
        assert_eq!((c.dims.as_slice(), c.element_size), (&[16u64][..], 8));
        // zero chunk dimension
        let mut b = alloc::vec![3u8, 2, 2];
        b.extend_from_slice(&0x40u64.to_le_bytes());
        b.extend(u32s(&[0, 8]));
        assert!(dec(&b).is_err());
        // virtual is not a v3 class
        assert_eq!(dec(&[3, 3]).unwrap_err().kind(), ErrorKind::Unsupported);
    }

    fn v4_chunked(version: u8, flags: u8, index: &[u8]) -> Vec<u8> {
        let mut b = alloc::vec![version, 2, flags, 3, 2];
        b.extend_from_slice(&[10, 0, 20, 0, 4, 0]);
        b.extend_from_slice(index);
        b
    }

    #[test]
    fn v4_v5_indexes() {
        let a = 0x1000u64.to_le_bytes();
        let cat = |pre: &[u8]| -> Vec<u8> { pre.iter().chain(a.iter()).copied().collect() };
        let check = |b: Vec<u8>, want: ChunkIndex| {
            let Layout::Chunked(c) = dec(&b).unwrap() else {
                panic!()
            };
            assert_eq!(c.dims, [10, 20]);
            assert_eq!(c.element_size, 4);
            assert_eq!(c.index, want);
        };
        check(
            v4_chunked(4, 0, &cat(&[1])),
            ChunkIndex::SingleChunk {
                addr: Addr(0x1000),
                filtered: None,
            },
        );
        let mut f = alloc::vec![1u8];
        f.extend_from_slice(&77u64.to_le_bytes());
        f.extend_from_slice(&3u32.to_le_bytes());
        check(
            v4_chunked(5, FLAG_SINGLE_INDEX_WITH_FILTER, &cat(&f)),
            ChunkIndex::SingleChunk {
                addr: Addr(0x1000),
                filtered: Some((77, 3)),
            },
        );
        check(
            v4_chunked(4, 0, &cat(&[2])),
            ChunkIndex::Implicit { addr: Addr(0x1000) },
        );
        check(
            v4_chunked(4, 0, &cat(&[3, 10])),
            ChunkIndex::FixedArray {
                addr: Addr(0x1000),
                page_bits: 10,
            },
        );
        check(
            v4_chunked(5, 1, &cat(&[4, 32, 4, 4, 16, 10])),
            ChunkIndex::ExtensibleArray {
                addr: Addr(0x1000),
                max_bits: 32,
                index_elements: 4,
                min_pointers: 4,
                min_elements: 16,
                page_bits: 10,
            },
        );
        let mut bt = alloc::vec![5u8];
        bt.extend_from_slice(&2048u32.to_le_bytes());
        bt.extend_from_slice(&[100, 40]);
        check(
            v4_chunked(4, 0, &cat(&bt)),
            ChunkIndex::BTreeV2 {
                addr: Addr(0x1000),
                node_size: 2048,
                split_percent: 100,
                merge_percent: 40,
            },
        );
        let Layout::Chunked(c) = dec(&v4_chunked(5, 0, &cat(&[2]))).unwrap() else {
            panic!()
        };
        assert_eq!(c.layout_version, 5);
        assert!(dec(&v4_chunked(4, 0, &cat(&[0]))).is_err());
        assert!(dec(&v4_chunked(4, 0, &cat(&[6]))).is_err());
        assert!(dec(&v4_chunked(4, 4, &cat(&[2]))).is_err());
        // dimension width 0
        assert!(dec(&[4, 2, 0, 2, 0]).is_err());
    }

    #[test]
    fn v4_virtual() {
        let mut b = alloc::vec![4u8, 3];
        b.extend_from_slice(&0x2000u64.to_le_bytes());
        b.extend_from_slice(&7u32.to_le_bytes());
        assert_eq!(
            dec(&b).unwrap(),
            Layout::Virtual {
                heap_addr: Addr(0x2000),
                index: 7
            }
        );
        assert_eq!(dec(&[6, 1]).unwrap_err().kind(), ErrorKind::Unsupported);
        assert_eq!(dec(&[5, 4]).unwrap_err().kind(), ErrorKind::Unsupported);
    }
}
