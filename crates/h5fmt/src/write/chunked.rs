//! Chunked datasets: splitting the data into chunks, running the filters,
//! streaming the chunks out, and building the chunk index where libhdf5
//! would choose it.

use super::{FileWriter, Format, ISTORE_K};
use crate::codec::Encoder;
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_CHUNK};
use crate::format::datatype::Datatype;
use crate::format::fixed_array;
use crate::format::message::{ChunkIndex, ChunkedLayout, Dataspace, FilterPipeline, Layout};
use crate::Addr;
use alloc::vec::Vec;

/// Build a v1 B-tree bottom-up over `(left key, child)` pairs of level 0
/// and the key right of the last child. Nodes hold at most `cap` children;
/// `alloc` gives each node its address. Returns the root address and the
/// nodes (with sibling pointers) to encode.
pub(super) fn build_btree(
    node_type: u8,
    leaves: Vec<(Key, Addr)>,
    final_key: Key,
    cap: usize,
    alloc: &mut dyn FnMut() -> Addr,
) -> (Addr, Vec<(Addr, BTreeV1Node)>) {
    let mut out = Vec::new();
    let mut level_entries = leaves;
    let mut level = 0u8;
    loop {
        let groups: Vec<Vec<(Key, Addr)>> = level_entries
            .chunks(cap.max(1))
            .map(<[(Key, Addr)]>::to_vec)
            .collect();
        let addrs: Vec<Addr> = groups.iter().map(|_| alloc()).collect();
        let mut parent = Vec::with_capacity(groups.len());
        for (i, g) in groups.iter().enumerate() {
            let right_key = groups
                .get(i + 1)
                .and_then(|n| n.first())
                .map_or_else(|| final_key.clone(), |(k, _)| k.clone());
            let mut keys: Vec<Key> = g.iter().map(|(k, _)| k.clone()).collect();
            keys.push(right_key);
            let node = BTreeV1Node {
                node_type,
                level,
                left: if i == 0 {
                    Addr::UNDEF
                } else {
                    addrs.get(i - 1).copied().unwrap_or(Addr::UNDEF)
                },
                right: addrs.get(i + 1).copied().unwrap_or(Addr::UNDEF),
                keys,
                children: g.iter().map(|(_, a)| *a).collect(),
            };
            let a = addrs.get(i).copied().unwrap_or(Addr::UNDEF);
            if let Some((k, _)) = g.first() {
                parent.push((k.clone(), a));
            }
            out.push((a, node));
        }
        if addrs.len() <= 1 {
            return (addrs.first().copied().unwrap_or(Addr::UNDEF), out);
        }
        level_entries = parent;
        level = level.saturating_add(1);
    }
}

/// One stored chunk.
pub(super) struct StoredChunk {
    pub(super) offsets: Vec<u64>,
    pub(super) addr: Addr,
    pub(super) size: u64,
}

/// Copy the part of chunk `origin` (element coordinates) that lies inside
/// the dataset from `data` into a chunk buffer prefilled with the fill value.
fn gather_chunk(
    data: &[u8],
    dims: &[u64],
    chunk: &[u64],
    origin: &[u64],
    es: usize,
    fill: &[u8],
) -> Vec<u8> {
    let clen: usize = chunk
        .iter()
        .map(|&c| usize::try_from(c).unwrap_or(0))
        .product();
    let mut buf = fill.repeat(clen);
    let rank = dims.len();
    let extent: Vec<u64> = (0..rank)
        .map(|k| {
            let (d, c, o) = (dims[k], chunk[k], origin[k]);
            c.min(d.saturating_sub(o))
        })
        .collect();
    if extent.contains(&0) {
        return buf;
    }
    let last = rank - 1;
    let run = usize::try_from(extent[last]).unwrap_or(0) * es;
    // Iterate over index tuples of the leading dimensions.
    let mut idx = alloc::vec![0u64; last];
    loop {
        let mut src = 0u64;
        let mut dst = 0u64;
        for k in 0..rank {
            let i = if k < last { idx[k] } else { 0 };
            src = src * dims[k] + origin[k] + i;
            dst = dst * chunk[k] + i;
        }
        let (s, d) = (
            usize::try_from(src).unwrap_or(0) * es,
            usize::try_from(dst).unwrap_or(0) * es,
        );
        if let (Some(from), Some(to)) = (data.get(s..s + run), buf.get_mut(d..d + run)) {
            to.copy_from_slice(from);
        }
        // Next tuple.
        let mut k = last;
        loop {
            if k == 0 {
                return buf;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < extent[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Which chunk index libhdf5 (with `libver='latest'`) would pick.
enum IndexKind {
    BTreeV1,
    Single,
    Fixed,
}

fn choose_index(format: Format, space: &Dataspace, chunks: &[u64]) -> IndexKind {
    if format != Format::Latest {
        return IndexKind::BTreeV1;
    }
    let max = space.max_dims.as_deref().unwrap_or(&space.dims);
    let unlimited = max.iter().filter(|&&m| m == Dataspace::UNLIMITED).count();
    match unlimited {
        0 if max == chunks => IndexKind::Single,
        // The fixed array is written over the current grid: only right when
        // the dataset cannot grow (libhdf5 sizes it by the maximum dims).
        0 if max == space.dims.as_slice() => IndexKind::Fixed,
        0 => IndexKind::BTreeV1,
        // Extensible array (one unlimited dimension) and v2 B-tree (more)
        // are not written yet: the v1 B-tree, which every reader knows.
        _ => IndexKind::BTreeV1,
    }
}

/// Write the chunks of `data` (or none, when `data` is `None`) and their
/// index; return the layout message.
#[allow(clippy::too_many_arguments)]
pub(super) fn write_chunked(
    fw: &mut FileWriter,
    dtype: &Datatype,
    space: &Dataspace,
    chunks: &[u64],
    pipeline: Option<&FilterPipeline>,
    data: Option<&[u8]>,
    fill: &[u8],
) -> Result<Layout> {
    let es = usize::try_from(dtype.size()).map_err(|_| Error::usage("element size"))?;
    let dims = &space.dims;
    let mut stored = Vec::new();
    if let Some(data) = data {
        let grid: Vec<u64> = dims
            .iter()
            .zip(chunks)
            .map(|(d, c)| d.div_ceil(*c))
            .collect();
        let total: u64 = grid.iter().product();
        let mut scaled = alloc::vec![0u64; grid.len()];
        for _ in 0..total {
            let origin: Vec<u64> = scaled.iter().zip(chunks).map(|(s, c)| s * c).collect();
            let raw = gather_chunk(data, dims, chunks, &origin, es, fill);
            let bytes = match pipeline {
                Some(p) => crate::filter::encode_chunk(p, raw, es)?,
                None => raw,
            };
            let addr = fw.write_new(&bytes)?;
            stored.push(StoredChunk {
                offsets: origin,
                addr,
                size: bytes.len() as u64,
            });
            // Row-major increment.
            for k in (0..grid.len()).rev() {
                scaled[k] += 1;
                if scaled[k] < grid[k] {
                    break;
                }
                scaled[k] = 0;
            }
        }
    }
    let filtered = pipeline.is_some();
    let chunk_bytes = chunks.iter().product::<u64>().saturating_mul(es as u64);
    let index = match choose_index(fw.format, space, chunks) {
        IndexKind::BTreeV1 => ChunkIndex::BTreeV1 {
            addr: write_btree(fw, chunks, &stored)?,
        },
        IndexKind::Single => {
            let c = stored.first();
            ChunkIndex::SingleChunk {
                addr: c.map_or(Addr::UNDEF, |c| c.addr),
                filtered: filtered.then(|| (c.map_or(0, |c| c.size), 0)),
            }
        }
        IndexKind::Fixed => {
            let grid: u64 = dims
                .iter()
                .zip(chunks)
                .map(|(d, c)| d.div_ceil(*c))
                .product();
            let page_bits = page_bits_for(grid);
            let addr = if stored.is_empty() {
                Addr::UNDEF
            } else {
                write_fixed_array(fw, &stored, filtered, chunk_bytes, page_bits)?
            };
            ChunkIndex::FixedArray { addr, page_bits }
        }
    };
    let single_filtered = matches!(
        index,
        ChunkIndex::SingleChunk {
            filtered: Some(_),
            ..
        }
    );
    Ok(Layout::Chunked(ChunkedLayout {
        dims: chunks.to_vec(),
        element_size: es as u64,
        flags: if single_filtered {
            crate::format::message::layout::FLAG_SINGLE_INDEX_WITH_FILTER
        } else {
            0
        },
        index,
        layout_version: 4,
    }))
}

/// The fixed array's data block page size (log2 of entries): libhdf5's
/// default of 10, raised so that the whole array is one unpaged block.
fn page_bits_for(n: u64) -> u8 {
    let mut bits = 10u8;
    while bits < 31 && (1u64 << bits) < n {
        bits += 1;
    }
    bits
}

pub(super) fn write_btree(
    fw: &mut FileWriter,
    chunks: &[u64],
    stored: &[StoredChunk],
) -> Result<Addr> {
    let Some(last) = stored.last() else {
        return Ok(Addr::UNDEF);
    };
    let ndims = chunks.len() + 1;
    let key = |offsets: &[u64], size: u64| -> Result<Key> {
        let mut o = offsets.to_vec();
        o.push(0);
        Ok(Key::Chunk {
            size: u32::try_from(size).map_err(|_| Error::usage("chunk of 4 GiB or more"))?,
            filter_mask: 0,
            offsets: o,
        })
    };
    let leaves = stored
        .iter()
        .map(|c| Ok((key(&c.offsets, c.size)?, c.addr)))
        .collect::<Result<Vec<_>>>()?;
    let end: Vec<u64> = last
        .offsets
        .iter()
        .zip(chunks)
        .map(|(o, c)| o + c)
        .collect();
    let final_key = key(&end, 0)?;
    let node_len = BTreeV1Node::encoded_len(NODE_TYPE_CHUNK, fw.ctx.sizes, ndims, ISTORE_K)? as u64;
    let mut next = fw.eof;
    let (root, nodes) = build_btree(
        NODE_TYPE_CHUNK,
        leaves,
        final_key,
        2 * usize::from(ISTORE_K),
        &mut || {
            let a = Addr(next);
            next += node_len;
            a
        },
    );
    fw.eof = next;
    for (a, node) in &nodes {
        let mut enc = Encoder::new();
        node.encode(&mut enc, fw.ctx, ndims, ISTORE_K)?;
        fw.sink.write_at(a.get(), enc.as_bytes())?;
    }
    Ok(root)
}

fn write_fixed_array(
    fw: &mut FileWriter,
    stored: &[StoredChunk],
    filtered: bool,
    chunk_bytes: u64,
    page_bits: u8,
) -> Result<Addr> {
    let ctx = fw.ctx;
    let size_len = fixed_array::chunk_size_len(chunk_bytes);
    let entry_len = if filtered {
        usize::from(ctx.sizes.offsets) + size_len + 4
    } else {
        usize::from(ctx.sizes.offsets)
    };
    let hdr = fixed_array::FixedArrayHeader {
        client_id: u8::from(filtered),
        entry_size: u8::try_from(entry_len).map_err(|_| Error::usage("entry size"))?,
        page_bits,
        max_entries: stored.len() as u64,
        data_block: Addr::UNDEF,
    };
    let hdr_len = fixed_array::FixedArrayHeader::encoded_size(ctx) as u64;
    let hdr_addr = fw.alloc(hdr_len);
    let mut entries = Encoder::new();
    for c in stored {
        entries.put_addr(c.addr, ctx.sizes);
        if filtered {
            entries.put_uint(c.size, size_len);
            entries.put_u32(0);
        }
    }
    let mut db = Encoder::new();
    fixed_array::encode_data_block(&mut db, ctx, hdr.client_id, hdr_addr, entries.as_bytes());
    let db_addr = fw.write_new(db.as_bytes())?;
    let mut enc = Encoder::new();
    fixed_array::FixedArrayHeader {
        data_block: db_addr,
        ..hdr
    }
    .encode(&mut enc, ctx);
    fw.sink.write_at(hdr_addr.get(), enc.as_bytes())?;
    Ok(hdr_addr)
}
