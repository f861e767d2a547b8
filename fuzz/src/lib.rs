//! Fuzz target logic. Each `run` takes arbitrary bytes and must return
//! (never panic, never hang, never allocate without bound). The shims in
//! `fuzz_targets/` call these under libFuzzer; the tests here call them on
//! seeds and pseudo-random bytes so that plain `cargo test` exercises them.

use h5fmt::codec::Cursor;
use h5fmt::{Ctx, Limits, Sizes};

/// Decode contexts chosen by the first input byte, so the fuzzer explores
/// every size-of-offsets/lengths combination under tight limits.
pub fn ctx_from(byte: u8) -> Ctx {
    let sizes = [2u8, 4, 8];
    let offsets = sizes[usize::from(byte % 3)];
    let lengths = sizes[usize::from((byte / 3) % 3)];
    Ctx {
        sizes: Sizes { offsets, lengths },
        limits: Limits::tight(),
    }
}

/// One message decoder per type number, all on the same bytes.
pub mod message {
    use super::*;
    use h5fmt::format::message::*;

    /// Decode `body` as a message of type `kind` (the typed decoders).
    pub fn decode_kind(kind: u16, body: &[u8], ctx: Ctx) {
        let mut cur = Cursor::new(body, 0);
        let _ = match kind {
            0x01 => Dataspace::decode(&mut cur, ctx).map(drop),
            0x02 => LinkInfo::decode(&mut cur, ctx).map(drop),
            0x03 => h5fmt::Datatype::decode(&mut cur, ctx).map(drop),
            0x04 => FillValue::decode_old(&mut cur, ctx).map(drop),
            0x05 => FillValue::decode(&mut cur, ctx).map(drop),
            0x06 => Link::decode(&mut cur, ctx).map(drop),
            0x07 => ExternalFiles::decode(&mut cur, ctx).map(drop),
            0x08 => Layout::decode(&mut cur, ctx).map(drop),
            0x0A => GroupInfo::decode(&mut cur, ctx).map(drop),
            0x0B => FilterPipeline::decode(&mut cur, ctx).map(drop),
            0x0C => AttributeMessage::decode(&mut cur, ctx).map(drop),
            0x0D => misc::Comment::decode(&mut cur, ctx).map(drop),
            0x0F => misc::SohmTableMessage::decode(&mut cur, ctx).map(drop),
            0x10 => Continuation::decode(&mut cur, ctx).map(drop),
            0x11 => SymbolTableMessage::decode(&mut cur, ctx).map(drop),
            0x12 => misc::ModificationTime::decode(&mut cur, ctx).map(drop),
            0x15 => AttributeInfo::decode(&mut cur, ctx).map(drop),
            _ => SharedMessage::decode(&mut cur, ctx).map(drop),
        };
    }

    /// First byte: context; second: message type; rest: body.
    pub fn run(data: &[u8]) {
        let [c, kind, body @ ..] = data else { return };
        decode_kind(u16::from(kind % 24), body, ctx_from(*c));
    }
}

/// A storage over fuzz bytes (base 0).
pub fn storage(bytes: &[u8]) -> h5fmt::io::Storage {
    h5fmt::io::Storage::new(std::sync::Arc::new(bytes.to_vec()))
}

/// The input of the structure targets: `[ctx][param][addr: u32 LE][file bytes]`;
/// the structure under test is at `addr` of the file bytes, so that seeds made
/// from real files keep their child pointers valid.
pub struct StructInput {
    /// Decode context.
    pub ctx: Ctx,
    /// A target-specific parameter byte.
    pub param: u8,
    /// Address of the structure.
    pub addr: h5fmt::Addr,
    /// The file bytes.
    pub st: h5fmt::io::Storage,
}

/// Split a structure-target input (see [`StructInput`]).
pub fn struct_input(data: &[u8]) -> Option<StructInput> {
    let [c, param, a0, a1, a2, a3, rest @ ..] = data else {
        return None;
    };
    Some(StructInput {
        ctx: ctx_from(*c),
        param: *param,
        addr: h5fmt::Addr(u64::from(u32::from_le_bytes([*a0, *a1, *a2, *a3]))),
        st: storage(rest),
    })
}

/// The context byte of [`ctx_from`] for given sizes (for seeds).
pub fn ctx_byte(sizes: Sizes) -> u8 {
    let idx = |n: u8| match n {
        2 => 0u8,
        4 => 1,
        _ => 2,
    };
    idx(sizes.offsets) + 3 * idx(sizes.lengths)
}

/// A box of chunks over a two-dimensional grid, from a parameter byte, for
/// the pruned chunk-index walks: 1 to 128 columns, a single chunk, a row
/// band, a column or a block, near the grid's start or far into it,
/// numbered row-major or (`swizzle` and bit 7) with the second dimension
/// first.
pub fn grid_box(param: u8, swizzle: bool) -> Option<h5fmt::read::chunk_select::GridBox> {
    use h5fmt::read::chunk_select::{GridBox, ScaledBox};
    let p = u64::from(param);
    let cols = 1u64 << (p & 7);
    let rows = (1u64 << 32) / cols;
    // Near the start, or (in chunk numbers) near 40000 or 131500: where
    // large arrays have unpaged and paged data blocks.
    let r0 = [0, 7, 40_000 / cols, 131_500 / cols][(p >> 3 & 3) as usize];
    let c0 = (p >> 5 & 1) * (cols / 2);
    let (lo, hi) = match p >> 6 & 1 {
        0 => ([r0, c0], [r0 + (p >> 3 & 1) * 40, c0 + (p & 1) * 3]),
        _ => ([r0, 0], [r0 + 2, cols - 1]),
    };
    if swizzle && p >> 7 == 1 {
        // Dataspace order (column, row); the row dimension numbered first.
        let bx = ScaledBox::new(vec![lo[1], lo[0]], vec![hi[1], hi[0]])?;
        GridBox::new(&[cols, rows], 1, &bx)
    } else {
        GridBox::new(&[rows, cols], 0, &ScaledBox::new(lo.to_vec(), hi.to_vec())?)
    }
}

/// Object header: prefix, chunks, continuation chain (read layer at address
/// 0 of the input), then every message through its typed decoder.
pub mod object_header {
    use super::*;

    /// A [`StructInput`] with the object header at its address.
    pub fn run(data: &[u8]) {
        let Some(StructInput { ctx, addr, st, .. }) = struct_input(data) else {
            return;
        };
        if let Ok(h) = h5fmt::read::object_header::read_object_header(&st, addr, ctx) {
            for m in &h.messages {
                super::message::decode_kind(m.kind, &m.data, ctx);
            }
        }
        // The format-level pieces on their own, without the read layer.
        let Ok(rest) = st.read_upto(addr, 1 << 16) else {
            return;
        };
        let rest = &rest[..];
        let mut cur = Cursor::new(rest, 0);
        let mut out = Vec::new();
        if rest.starts_with(b"OHDR") {
            if let Ok(p) = h5fmt::format::object_header::V2Prefix::decode(&mut cur) {
                let _ = h5fmt::format::object_header::decode_messages(
                    &mut cur,
                    2,
                    p.flags,
                    ctx.limits.max_messages,
                    &mut out,
                );
            }
        } else if h5fmt::format::object_header::V1Prefix::decode(&mut cur).is_ok() {
            let _ = h5fmt::format::object_header::decode_messages(
                &mut cur,
                1,
                0,
                ctx.limits.max_messages,
                &mut out,
            );
        }
    }
}

/// v1 B-tree: a group tree (with its symbol table nodes) or a chunk tree of
/// some rank, walked from address 0; also one raw node decode.
pub mod btree_v1 {
    use super::*;

    /// A [`StructInput`]; param 0 → group tree, else chunk tree of rank `param % 8`.
    pub fn run(data: &[u8]) {
        let Some(StructInput {
            ctx,
            param,
            addr,
            st,
        }) = struct_input(data)
        else {
            return;
        };
        if param == 0 {
            let _ = h5fmt::read::btree_v1::group_entries(&st, ctx, addr);
            let _ = h5fmt::read::btree_v1::read_snod(&st, ctx, addr);
        } else {
            let rank = usize::from(param % 8);
            let _ = h5fmt::read::btree_v1::chunk_records(&st, ctx, addr, rank);
            if let Ok(rest) = st.read_upto(addr, 1 << 16) {
                let mut cur = Cursor::new(&rest, 0);
                let _ = h5fmt::format::btree_v1::BTreeV1Node::decode(&mut cur, ctx, rank + 1);
            }
        }
    }
}

/// v2 B-tree: header at 0, every node walked, every record decoded as its type.
pub mod btree_v2 {
    use super::*;

    /// A [`StructInput`]; param: rank and chunk-size length for chunk records.
    pub fn run(data: &[u8]) {
        let Some(StructInput {
            ctx,
            param: r,
            addr,
            st,
        }) = struct_input(data)
        else {
            return;
        };
        let Ok(t) = h5fmt::read::btree_v2::BTreeV2::open(&st, ctx, addr) else {
            return;
        };
        let rank = usize::from(r % 6);
        let csl = usize::from(r / 6 % 9);
        let Ok(recs) = t.records() else {
            return;
        };
        for raw in recs.iter().take(256) {
            let _ = h5fmt::format::btree_v2::decode_record(t.record_type(), raw, ctx, rank, csl);
        }
        // The walk pruned to a box of chunks (as for chunk records: keys
        // are the last 8 * rank bytes) reads a subset of the records.
        if rank == 0 {
            return;
        }
        let lo: Vec<u64> = (0..rank as u64).map(|d| (u64::from(r) + d) % 4).collect();
        let hi: Vec<u64> = lo.iter().map(|l| l + u64::from(r % 3) * 5).collect();
        let Some(bx) = h5fmt::read::chunk_select::ScaledBox::new(lo, hi) else {
            return;
        };
        if let Ok(pruned) =
            h5fmt::read::chunk_select::btree_v2_chunk_records_in(&st, ctx, addr, &bx)
        {
            let all: std::collections::BTreeSet<&Vec<u8>> = recs.iter().collect();
            assert!(
                pruned.iter().all(|p| all.contains(p)),
                "pruned v2 B-tree walk found a record the full walk did not"
            );
        }
    }
}

/// Local heap at 0, then a few strings from it.
pub mod local_heap {
    use super::*;

    /// A [`StructInput`]; param: a string offset.
    pub fn run(data: &[u8]) {
        let Some(StructInput {
            ctx,
            param,
            addr,
            st,
        }) = struct_input(data)
        else {
            return;
        };
        if let Ok(h) = h5fmt::read::local_heap::LocalHeap::read(&st, ctx, addr) {
            for off in [0u64, 8, u64::from(param), u64::MAX] {
                let _ = h.string_at(off);
            }
        }
    }
}

/// Global heap collection at 0: the format decoder on the whole input and
/// object lookups through the read layer.
pub mod global_heap {
    use super::*;
    use h5fmt::data::HeapResolver;

    /// A [`StructInput`]; param: an object index.
    pub fn run(data: &[u8]) {
        let Some(StructInput {
            ctx,
            param,
            addr,
            st,
        }) = struct_input(data)
        else {
            return;
        };
        if let Ok(rest) = st.read_upto(addr, 1 << 16) {
            let _ = h5fmt::format::global_heap::Collection::decode(&mut Cursor::new(&rest, 0), ctx);
        }
        let gh = h5fmt::read::global_heap::GlobalHeap::new(&st, ctx);
        for idx in [0u32, 1, 2, u32::from(param), u32::MAX] {
            let _ = gh.global_heap_object(addr, idx);
        }
    }
}

/// Fractal heap: header at 0, objects looked up by ids taken from the end of
/// the input (managed ids walk direct and indirect blocks; huge ids the v2 B-tree).
pub mod fractal_heap {
    use super::*;

    /// A [`StructInput`]; param: number of ids (≤ 8), taken from the end of the bytes.
    pub fn run(data: &[u8]) {
        let Some(StructInput {
            ctx,
            param: k,
            addr,
            st,
        }) = struct_input(data)
        else {
            return;
        };
        let Some(rest) = data.get(6..) else { return };
        let Ok(h) = h5fmt::read::fractal_heap::FractalHeap::open(&st, ctx, addr) else {
            return;
        };
        // The ids of small objects: every offset/length pair of the first block.
        for off in [0u64, 16, 64, 256] {
            let mut id = vec![0u8; h.id_len()];
            if let Some(b) = id.get_mut(1) {
                *b = off as u8;
            }
            if let Some(b) = id.get_mut(h.id_len().saturating_sub(1)) {
                *b = 8;
            }
            let _ = h.get(&id);
        }
        let n = h.id_len().max(1);
        for i in 0..usize::from(k % 9) {
            let Some(end) = rest.len().checked_sub(i * n) else {
                break;
            };
            let Some(id) = end.checked_sub(n).and_then(|s| rest.get(s..end)) else {
                break;
            };
            let _ = h.get(id);
        }
    }
}

/// When both walks succeed, the pruned one must give exactly the full
/// walk's entries inside the box `g` (panics, the finding, otherwise).
fn pruned_is_full_in_box(
    full: h5fmt::Result<Vec<(u64, h5fmt::format::fixed_array::ChunkEntry)>>,
    pruned: h5fmt::Result<Vec<(u64, h5fmt::format::fixed_array::ChunkEntry)>>,
    g: &h5fmt::read::chunk_select::GridBox,
    what: &str,
) {
    if let (Ok(full), Ok(pruned)) = (full, pruned) {
        let want: Vec<_> = full.into_iter().filter(|(i, _)| g.contains(*i)).collect();
        assert_eq!(pruned, want, "pruned {what} walk differs");
    }
}

/// Fixed-array chunk index at 0 (header, data block, pages).
pub mod fixed_array {
    use super::*;

    /// A [`StructInput`] with the array header at its address; the
    /// parameter picks a box of chunks (see [`super::grid_box`]): the walk
    /// pruned to it must give exactly the full walk's entries in the box.
    pub fn run(data: &[u8]) {
        if let Some(StructInput {
            ctx,
            addr,
            st,
            param,
        }) = struct_input(data)
        {
            let full = h5fmt::read::chunks::fixed_array_entries(&st, ctx, addr);
            let Some(g) = super::grid_box(param, false) else {
                return;
            };
            let pruned = h5fmt::read::chunk_select::fixed_array_entries_in(&st, ctx, addr, &g);
            super::pruned_is_full_in_box(full, pruned, &g, "fixed array");
        }
    }
}

/// Extensible-array chunk index at 0 (header, index, super and data blocks).
pub mod extensible_array {
    use super::*;

    /// A [`StructInput`] with the array header at its address; the
    /// parameter picks a box of chunks (see [`super::grid_box`]): the walk
    /// pruned to it must give exactly the full walk's entries in the box.
    pub fn run(data: &[u8]) {
        if let Some(StructInput {
            ctx,
            addr,
            st,
            param,
        }) = struct_input(data)
        {
            let full = h5fmt::read::chunks::extensible_array_entries(&st, ctx, addr);
            let Some(g) = super::grid_box(param, true) else {
                return;
            };
            let pruned = h5fmt::read::chunk_select::extensible_array_entries_in(&st, ctx, addr, &g);
            super::pruned_is_full_in_box(full, pruned, &g, "extensible array");
        }
    }
}

/// Serialized dataspace selections (region references, VDS mappings).
pub mod selection {
    use super::*;

    /// First byte: context; second: extent seed; rest: the selection.
    pub fn run(data: &[u8]) {
        let [c, e, rest @ ..] = data else { return };
        let ctx = ctx_from(*c);
        let Ok(s) = h5fmt::format::selection::Selection::decode(&mut Cursor::new(rest, 0), ctx)
        else {
            return;
        };
        let rank = s.rank().unwrap_or(1);
        let extent: Vec<u64> = (0..rank.min(32))
            .map(|i| u64::from(*e).wrapping_shl(i as u32 % 64).max(1))
            .collect();
        let _ = s.npoints(None);
        let _ = s.bounds(None);
        let _ = s.npoints(Some(&extent));
        let _ = s.bounds(Some(&extent));
        // Encoding what was decoded (both version families) decodes back
        // to the same selection whenever the encoder accepts it.
        for modern in [false, true] {
            let mut enc = h5fmt::codec::Encoder::new();
            if s.encode(&mut enc, modern).is_ok() {
                let back = h5fmt::format::selection::Selection::decode(
                    &mut Cursor::new(enc.as_bytes(), 0),
                    ctx,
                );
                assert_eq!(back.as_ref().ok(), Some(&s), "modern {modern}: {back:?}");
            }
        }
    }
}

/// The virtual-dataset global heap block (mappings with source selections).
pub mod vds {
    use super::*;

    /// First byte: context; rest: the block.
    pub fn run(data: &[u8]) {
        let [c, rest @ ..] = data else { return };
        let ctx = ctx_from(*c);
        if let Ok(b) = h5fmt::format::vds::VdsBlock::decode(&mut Cursor::new(rest, 0), ctx) {
            for m in b.mappings.iter().take(64) {
                let _ = m.virtual_sel.npoints(None);
                let _ = m.source.bounds(None);
            }
            // Re-encoding in either version decodes back to the same
            // mappings whenever the encoder accepts the block.
            for version in [0, 1] {
                let v = h5fmt::format::vds::VdsBlock {
                    version,
                    mappings: b.mappings.clone(),
                };
                if let Ok(bytes) = v.encode(ctx) {
                    let back =
                        h5fmt::format::vds::VdsBlock::decode(&mut Cursor::new(&bytes, 0), ctx);
                    assert_eq!(back.as_ref().ok(), Some(&v), "{back:?}");
                }
            }
        }
    }
}

/// Each filter on its own: arbitrary client data, output bound and element size.
pub mod filters {
    use h5fmt::format::message::Filter;

    /// Byte 0: bound in KiB; byte 1: element size; byte 2: number of client
    /// data values (each 4 bytes, little-endian); then the chunk.
    pub fn run_filter(id: u16, data: &[u8]) {
        let [b, es, n, rest @ ..] = data else { return };
        let n = usize::from(n % 12);
        let Some((cd_bytes, chunk)) = rest.split_at_checked(n * 4) else {
            return;
        };
        let client_data = cd_bytes
            .chunks_exact(4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
            .collect();
        let f = Filter {
            id,
            name: None,
            flags: 0,
            client_data,
        };
        let bound = usize::from(*b) * 1024 + usize::from(*b % 7);
        let es = usize::from(*es % 17);
        let _ = h5fmt::filter::decode_one(&f, chunk.to_vec(), bound, es);
        // The encoder too: the editor encodes chunks of a file's dataset
        // with the client data the file holds, so any parameters and any
        // chunk give a result or an error. What an encoder accepts, its
        // decoder reads back to the same length.
        if h5fmt::filter::can_encode(id) {
            let pipeline = h5fmt::format::message::FilterPipeline {
                filters: vec![f.clone()],
            };
            if let Ok(enc) = h5fmt::filter::encode_chunk(&pipeline, chunk.to_vec(), es) {
                if let Ok(dec) = h5fmt::filter::decode_one(&f, enc, chunk.len(), es) {
                    assert_eq!(dec.len(), chunk.len(), "filter {id}: round trip length");
                    // n-bit and scale-offset keep only the bits their client
                    // data describe; the others give back every byte.
                    let lossy = [h5fmt::filter::NBIT, h5fmt::filter::SCALEOFFSET].contains(&id);
                    assert!(lossy || dec == chunk, "filter {id}: round trip bytes");
                }
            }
        }
    }

    macro_rules! filter_target {
        ($($name:ident = $id:expr),* $(,)?) => {$(
            /// One filter's decoder.
            pub mod $name {
                /// See [`super::run_filter`].
                pub fn run(data: &[u8]) {
                    super::run_filter($id, data);
                }
            }
        )*};
    }
    filter_target!(
        deflate = h5fmt::filter::DEFLATE,
        shuffle = h5fmt::filter::SHUFFLE,
        fletcher32 = h5fmt::filter::FLETCHER32,
        nbit = h5fmt::filter::NBIT,
        scaleoffset = h5fmt::filter::SCALEOFFSET,
        lzf = h5fmt::filter::LZF,
        lz4 = h5fmt::filter::LZ4,
        zstd = h5fmt::filter::ZSTD,
        bzip2 = h5fmt::filter::BZIP2,
        blosc2 = h5fmt::filter::BLOSC2,
    );
}

/// The datatype decoder plus element decoding of whatever it yields.
pub mod datatype {
    use super::*;

    /// First byte: context; then a datatype message; the rest is element data.
    pub fn run(data: &[u8]) {
        let [c, body @ ..] = data else { return };
        let ctx = ctx_from(*c);
        let mut cur = Cursor::new(body, 0);
        if let Ok(t) = h5fmt::Datatype::decode(&mut cur, ctx) {
            let rest = cur.rest();
            let size = t.size().max(1);
            let count = (rest.len() as u64 / size).min(64);
            let _ =
                h5fmt::data::decode::decode_elements(&t, rest, count, ctx, &h5fmt::data::NoHeap);
        }
    }
}

/// The superblock decoder.
pub mod superblock {
    use super::*;

    /// The bytes are a file prefix.
    pub fn run(data: &[u8]) {
        let mut cur = Cursor::new(data, 0);
        let _ = h5fmt::format::superblock::Superblock::decode(&mut cur, ctx_from(0));
    }
}

/// Filter pipeline decoding of one chunk.
pub mod filter {
    use h5fmt::format::message::{Filter, FilterPipeline};

    /// First byte picks the filter, second the expected size (KiB), the rest is the chunk.
    pub fn run(data: &[u8]) {
        let [f, n, chunk @ ..] = data else { return };
        let ids = [1u16, 2, 3, 5, 6, 32000, 32001, 32004, 32008, 32015, 307];
        let id = ids[usize::from(*f) % ids.len()];
        let cd = match id {
            2 => vec![4],
            1 => vec![6],
            _ => vec![],
        };
        let p = FilterPipeline {
            filters: vec![Filter {
                id,
                name: None,
                flags: 0,
                client_data: cd,
            }],
        };
        let expected = usize::from(*n) * 1024;
        let _ = h5fmt::filter::decode_chunk(&p, 0, chunk.to_vec(), expected, 4);
    }
}

/// Whole file: open, walk every object, read every attribute and dataset,
/// under tight limits (the canonical dump does all of that, and so does the
/// typed walk); then `h5 check`'s validator on the same file.
pub mod whole_file {
    use h5fmt::{Error, File, Object, Result};
    use std::sync::Arc;

    /// Open bytes as a file under tight limits.
    ///
    /// # Errors
    /// Any error of opening.
    pub fn open(data: &[u8]) -> Result<File> {
        let src: Arc<dyn h5fmt::io::ReadAt> = Arc::new(data.to_vec());
        File::from_source(src, h5fmt::Limits::tight())
    }

    /// A typed walk: every object reachable by hard links, its attributes
    /// and data (raw, a selection, values); the first error (with its kind) is returned.
    ///
    /// # Errors
    /// The first error met.
    pub fn walk(f: &File) -> Result<()> {
        walk_with(f, true)
    }

    /// [`walk`], decoding datasets' values only with `values` (an editor
    /// writing raw bytes into a reference or variable-length dataset makes
    /// values that do not decode, in a file that is still sound).
    ///
    /// # Errors
    /// The first error met.
    pub fn walk_with(f: &File, values: bool) -> Result<()> {
        let root = f.root()?;
        let mut seen = std::collections::BTreeSet::new();
        seen.insert(root.addr().0);
        let mut queue = std::collections::VecDeque::from([root]);
        let max = f.ctx().limits.max_objects;
        while let Some(g) = queue.pop_front() {
            g.attrs()?
                .iter()
                .try_for_each(|a| a.read_values().map(drop))?;
            for l in g.links()? {
                let h5fmt::format::message::LinkTarget::Hard(addr) = l.target else {
                    continue;
                };
                if !seen.insert(addr.0) {
                    continue;
                }
                if seen.len() > max {
                    return Err(Error::limit("too many objects"));
                }
                let path = format!("{}/{}", g.path().trim_end_matches('/'), l.name);
                match f.object_at(addr, &path)? {
                    Object::Group(sub) => queue.push_back(sub),
                    Object::Dataset(d) => {
                        for a in d.attrs()? {
                            a.read_values()?;
                        }
                        d.read_raw()?;
                        // A small box in the middle: the selection path
                        // (pruned index walks, partial chunks).
                        let dims = d.shape();
                        if !dims.is_empty() && !dims.contains(&0) {
                            let sel = h5fmt::data::hyperslab::Selection::Hyperslab(
                                dims.iter()
                                    .map(|&n| h5fmt::data::hyperslab::SliceDim {
                                        start: n / 2,
                                        stride: 1,
                                        count: (n - n / 2).min(3),
                                        block: 1,
                                    })
                                    .collect(),
                            );
                            d.read_slice_raw(&sel)?;
                        }
                        // Values (many elements decode on several threads).
                        if values {
                            d.read_values()?;
                        }
                    }
                    Object::Datatype(t) => {
                        for a in t.attrs()? {
                            a.read_values()?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// The bytes are a whole file.
    pub fn run(data: &[u8]) {
        if let Ok(f) = open(data) {
            let _ = h5cli::canon::dump_file(&f);
            let _ = walk(&f);
            let _ = h5cli::check::check_file(&f);
        }
    }
}

/// Differential: the same bytes from memory and from a file on disk (mmap or
/// positioned reads) must give the same canonical dump or the same error.
pub mod differential {
    use std::sync::Arc;

    /// The typed walk's error kind (or `None`) and the canonical dump, when
    /// it succeeds (its error text may differ: external file paths resolve
    /// against the file's directory only for files on disk).
    fn outcome(f: h5fmt::Result<h5fmt::File>) -> (Option<h5fmt::ErrorKind>, Option<String>) {
        match f {
            Ok(f) => (
                super::whole_file::walk(&f).err().map(|e| e.kind()),
                h5cli::canon::dump_file(&f)
                    .ok()
                    .map(|j| h5cli::canon::compact(&j)),
            ),
            Err(e) => (Some(e.kind()), None),
        }
    }

    /// The bytes are a whole file. Panics (the finding) on a difference.
    pub fn run(data: &[u8]) {
        let path = std::env::temp_dir().join(format!("h5fuzz-diff-{}.h5", std::process::id()));
        if std::fs::write(&path, data).is_err() {
            return;
        }
        let limits = h5fmt::Limits::tight();
        let src: Arc<dyn h5fmt::io::ReadAt> = Arc::new(data.to_vec());
        let mem = outcome(h5fmt::File::from_source(src, limits));
        let disk = outcome(h5fmt::File::open_with_limits(&path, limits));
        let _ = std::fs::remove_file(&path);
        assert_eq!(mem, disk, "memory and file sources differ");
    }
}

/// Round trip: every message (and superblock) that decodes re-encodes, in
/// the version it was read in, to bytes that decode to the same value.
/// Values an encoder refuses (a typed error) are skipped; a different value
/// after the round trip is a finding (assert).
pub mod roundtrip {
    use super::*;
    use h5fmt::codec::Encoder;
    use h5fmt::format::message::*;

    fn again<T, D>(bytes: &[u8], dec: D) -> Option<T>
    where
        D: Fn(&mut Cursor<'_>) -> h5fmt::Result<T>,
    {
        dec(&mut Cursor::new(bytes, 0)).ok()
    }

    /// Decode `body` as message `kind`, encode, decode again, compare.
    pub fn message(kind: u16, body: &[u8], ctx: Ctx) {
        let version = body.first().copied().unwrap_or(0);
        let mut enc = Encoder::new();
        macro_rules! trip {
            ($ty:ty, $dec:expr, $enc:expr) => {
                trip!($ty, $dec, $enc, |v: $ty| v)
            };
            ($ty:ty, $dec:expr, $enc:expr, $norm:expr) => {{
                let dec = $dec;
                if let Ok(v) = dec(&mut Cursor::new(body, 0)) {
                    #[allow(clippy::redundant_closure_call)]
                    let v: $ty = ($norm)(v);
                    #[allow(clippy::redundant_closure_call)]
                    if ($enc)(&v, &mut enc).is_ok() {
                        let w = again(enc.as_bytes(), dec);
                        assert_eq!(w.as_ref(), Some(&v), "kind {kind:#x}: {:02x?}", body);
                    }
                }
            }};
        }
        match kind {
            0x01 => trip!(
                Dataspace,
                |c: &mut Cursor<'_>| Dataspace::decode(c, ctx),
                |v: &Dataspace, e: &mut Encoder| v.encode(e, ctx, version)
            ),
            0x02 => trip!(
                LinkInfo,
                |c: &mut Cursor<'_>| LinkInfo::decode(c, ctx),
                |v: &LinkInfo, e: &mut Encoder| {
                    v.encode(e, ctx, !v.order_index.is_undef());
                    Ok::<(), h5fmt::Error>(())
                }
            ),
            0x03 => trip!(
                h5fmt::Datatype,
                |c: &mut Cursor<'_>| h5fmt::Datatype::decode(c, ctx),
                |v: &h5fmt::Datatype, e: &mut Encoder| v.encode(e, ctx, version >> 4)
            ),
            0x05 => trip!(
                FillValue,
                |c: &mut Cursor<'_>| FillValue::decode(c, ctx),
                |v: &FillValue, e: &mut Encoder| v.encode(e, ctx),
                // Version 1 is written as version 2 (same fields).
                |mut v: FillValue| {
                    v.version = v.version.max(2);
                    v
                }
            ),
            0x06 => trip!(
                Link,
                |c: &mut Cursor<'_>| Link::decode(c, ctx),
                |v: &Link, e: &mut Encoder| v.encode(e, ctx)
            ),
            0x08 => trip!(
                Layout,
                |c: &mut Cursor<'_>| Layout::decode(c, ctx),
                |v: &Layout, e: &mut Encoder| v.encode(e, ctx),
                // Versions 1 and 2 are written as version 3 (same fields).
                |mut v: Layout| {
                    if let Layout::Chunked(c) = &mut v {
                        c.layout_version = c.layout_version.max(3);
                    }
                    v
                }
            ),
            0x0A => trip!(
                GroupInfo,
                |c: &mut Cursor<'_>| GroupInfo::decode(c, ctx),
                |v: &GroupInfo, e: &mut Encoder| {
                    v.encode(e, ctx);
                    Ok::<(), h5fmt::Error>(())
                }
            ),
            0x0B => trip!(
                FilterPipeline,
                |c: &mut Cursor<'_>| FilterPipeline::decode(c, ctx),
                |v: &FilterPipeline, e: &mut Encoder| v.encode(e, ctx, version)
            ),
            0x11 => trip!(
                SymbolTableMessage,
                |c: &mut Cursor<'_>| SymbolTableMessage::decode(c, ctx),
                |v: &SymbolTableMessage, e: &mut Encoder| {
                    v.encode(e, ctx);
                    Ok::<(), h5fmt::Error>(())
                }
            ),
            0x15 => trip!(
                AttributeInfo,
                |c: &mut Cursor<'_>| AttributeInfo::decode(c, ctx),
                |v: &AttributeInfo, e: &mut Encoder| {
                    v.encode(e, ctx, !v.order_index.is_undef());
                    Ok::<(), h5fmt::Error>(())
                }
            ),
            _ => {}
        }
    }

    /// First byte: context; second: message type (or 0xFF: a superblock);
    /// rest: the body.
    pub fn run(data: &[u8]) {
        let [c, kind, body @ ..] = data else { return };
        if *kind == 0xFF {
            let dec =
                |c: &mut Cursor<'_>| h5fmt::format::superblock::Superblock::decode(c, ctx_from(0));
            if let Ok(sb) = dec(&mut Cursor::new(body, 0)) {
                let mut enc = Encoder::new();
                if sb.encode(&mut enc).is_ok() {
                    assert_eq!(again(enc.as_bytes(), dec).as_ref(), Some(&sb));
                }
            }
            return;
        }
        message(u16::from(kind % 24), body, ctx_from(*c));
    }
}

pub mod read_write;

/// Run fuzz target `name` on `data` (for replaying saved inputs); `false`
/// when there is no such target.
pub fn run_target(name: &str, data: &[u8]) -> bool {
    let f: fn(&[u8]) = match name {
        "superblock" => superblock::run,
        "message" => message::run,
        "datatype" => datatype::run,
        "object_header" => object_header::run,
        "btree_v1" => btree_v1::run,
        "btree_v2" => btree_v2::run,
        "local_heap" => local_heap::run,
        "global_heap" => global_heap::run,
        "fractal_heap" => fractal_heap::run,
        "fixed_array" => fixed_array::run,
        "extensible_array" => extensible_array::run,
        "selection" => selection::run,
        "vds" => vds::run,
        "filter" => filter::run,
        "filter_deflate" => filters::deflate::run,
        "filter_shuffle" => filters::shuffle::run,
        "filter_fletcher32" => filters::fletcher32::run,
        "filter_nbit" => filters::nbit::run,
        "filter_scaleoffset" => filters::scaleoffset::run,
        "filter_lzf" => filters::lzf::run,
        "filter_lz4" => filters::lz4::run,
        "filter_zstd" => filters::zstd::run,
        "filter_bzip2" => filters::bzip2::run,
        "filter_blosc2" => filters::blosc2::run,
        "whole_file" => whole_file::run,
        "differential" => differential::run,
        "roundtrip" => roundtrip::run,
        "read_write" => read_write::run,
        _ => return false,
    };
    f(data);
    true
}

#[cfg(test)]
mod tests {
    /// xorshift64*: deterministic pseudo-random bytes without a dependency.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    fn random_inputs(n: usize, max_len: usize) -> Vec<Vec<u8>> {
        let mut r = rng(0x5eed);
        (0..n)
            .map(|_| {
                let len = (r() as usize) % max_len;
                (0..len).map(|_| r() as u8).collect()
            })
            .collect()
    }

    fn corpus_files(limit: usize) -> Vec<Vec<u8>> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/files");
        let mut out = Vec::new();
        let Ok(owners) = std::fs::read_dir(dir) else {
            return out;
        };
        let mut paths: Vec<_> = owners
            .flatten()
            .flat_map(|o| {
                std::fs::read_dir(o.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
            })
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(b) = std::fs::read(&p) {
                if b.len() < 64 * 1024 {
                    out.push(b);
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        out
    }

    /// Real messages of corpus files and random bodies through the round trip.
    #[test]
    fn roundtrip_smoke() {
        let mut n = 0;
        let files = corpus_files(200);
        for f in &files {
            let Ok(file) = h5fmt::File::from_bytes(f.clone()) else {
                continue;
            };
            let ctx = file.ctx();
            let sig = file.superblock().sig_offset as usize;
            let mut sb = vec![super::ctx_byte(ctx.sizes), 0xFF];
            sb.extend_from_slice(f.get(sig..).unwrap_or(&[]));
            super::roundtrip::run(&sb);
            let mut todo = vec![String::from("/")];
            let mut seen = std::collections::BTreeSet::new();
            while let Some(p) = todo.pop() {
                let Ok(obj) = file.object(&p) else { continue };
                if !seen.insert(obj.addr().0) || seen.len() > 200 {
                    continue;
                }
                for m in &obj.header().messages {
                    super::roundtrip::message(m.kind, &m.data, ctx);
                    n += 1;
                }
                if let h5fmt::Object::Group(g) = obj {
                    for l in g.links().unwrap_or_default() {
                        todo.push(format!("{}/{}", p.trim_end_matches('/'), l.name));
                    }
                }
            }
        }
        for d in random_inputs(20_000, 96) {
            super::roundtrip::run(&d);
        }
        assert!(n > 1000 || files.is_empty(), "only {n} messages");
    }

    #[test]
    fn message_smoke() {
        for d in random_inputs(20_000, 96) {
            super::message::run(&d);
        }
    }

    #[test]
    fn datatype_smoke() {
        for d in random_inputs(20_000, 128) {
            super::datatype::run(&d);
        }
    }

    #[test]
    fn superblock_smoke() {
        for mut d in random_inputs(5_000, 128) {
            if d.len() > 8 {
                d[..8].copy_from_slice(&h5fmt::format::superblock::SIGNATURE);
                d[8] %= 4;
            }
            super::superblock::run(&d);
        }
    }

    #[test]
    fn filter_smoke() {
        for d in random_inputs(5_000, 512) {
            super::filter::run(&d);
        }
    }

    /// Replay saved inputs (crash artifacts) through a target:
    /// `H5_FUZZ_REPLAY="TARGET FILE..." cargo test -p h5fuzz replay_from_env`;
    /// nothing when the variable is unset.
    #[test]
    fn replay_from_env() {
        let Ok(spec) = std::env::var("H5_FUZZ_REPLAY") else {
            return;
        };
        let mut it = spec.split_whitespace();
        let target = it.next().unwrap_or_default();
        for p in it {
            // A relative path is taken from fuzz/ (cargo test's directory).
            let data = std::fs::read(p).unwrap_or_else(|e| panic!("{p}: {e}"));
            assert!(super::run_target(target, &data), "no target {target}");
        }
    }

    /// Every testdata file (hostile ones included) and a sample of the
    /// corpus through the read-write target, with each seed op set and with
    /// a few bit flips.
    #[test]
    fn read_write_smoke() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata");
        let mut files = Vec::new();
        let mut stack = vec![std::path::PathBuf::from(root)];
        while let Some(d) = stack.pop() {
            for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if let Ok(b) = std::fs::read(&p) {
                    if b.len() < 4 << 20 {
                        files.push(b);
                    }
                }
            }
        }
        let n_testdata = files.len();
        assert!(n_testdata > 30, "only {n_testdata} testdata files");
        files.extend(corpus_files(60));
        let mut r = rng(7);
        let (mut opened, mut all_ok, mut verified) = (0, 0, 0);
        for (k, f) in files.iter().enumerate() {
            for v in 0..4 {
                let o = super::read_write::run_outcome(&super::read_write::seed(f, v));
                opened += usize::from(o.opened);
                all_ok += usize::from(o.all_ok);
                verified += o.verified;
            }
            if k < n_testdata || k % 4 == 0 {
                let mut ops = [0u8; super::read_write::OPS];
                ops.iter_mut().for_each(|o| *o = r() as u8);
                super::read_write::run(&[&ops[..], f].concat());
            }
            if !f.is_empty() {
                let mut m = super::read_write::seed(f, 0);
                let i = super::read_write::OPS + (r() as usize) % f.len();
                m[i] ^= 1 << (r() % 8);
                super::read_write::run(&m);
            }
        }
        eprintln!("read_write: {opened} opened, {all_ok} all ok, {verified} edits verified");
        assert!(opened > 100 && all_ok > 20 && verified > 100);
    }

    #[test]
    fn whole_file_smoke_with_bit_flips() {
        let mut r = rng(42);
        for f in corpus_files(40) {
            super::whole_file::run(&f);
            for _ in 0..10 {
                let mut m = f.clone();
                let i = (r() as usize) % m.len();
                m[i] ^= 1 << (r() % 8);
                super::whole_file::run(&m);
            }
        }
    }

    /// Inputs for a structure target: every occurrence of `sig` in small
    /// corpus files (as `[ctx][param][addr][file]`), plus bit-flipped copies.
    fn struct_inputs(sig: &[u8], params: &[u8]) -> Vec<Vec<u8>> {
        let mut r = rng(7);
        let mut out = Vec::new();
        for f in corpus_files(60) {
            let Ok(file) = h5fmt::File::from_bytes(f.clone()) else {
                continue;
            };
            let c = super::ctx_byte(file.ctx().sizes);
            let hits = f
                .windows(sig.len())
                .enumerate()
                .filter(|(_, w)| *w == sig)
                .map(|(i, _)| i)
                .take(4);
            for at in hits {
                for &p in params {
                    let mut v = vec![c, p];
                    v.extend_from_slice(&(at as u32).to_le_bytes());
                    v.extend_from_slice(&f);
                    for _ in 0..8 {
                        let mut m = v.clone();
                        let k = 6 + at + (r() as usize) % 96;
                        if let Some(b) = m.get_mut(k) {
                            *b ^= 1 << (r() % 8);
                        }
                        out.push(m);
                    }
                    out.push(v);
                }
            }
        }
        out
    }

    #[test]
    fn object_header_smoke() {
        let mut n = 0;
        for d in struct_inputs(b"OHDR", &[0]) {
            super::object_header::run(&d);
            n += 1;
        }
        // v1 headers have no signature: the root group of each file.
        for f in corpus_files(40) {
            if let Ok(file) = h5fmt::File::from_bytes(f.clone()) {
                let a = file.superblock().root.0 as u32;
                let mut v = vec![super::ctx_byte(file.ctx().sizes), 0];
                v.extend_from_slice(&a.to_le_bytes());
                v.extend_from_slice(&f);
                super::object_header::run(&v);
                n += 1;
            }
        }
        for d in random_inputs(5_000, 128) {
            super::object_header::run(&d);
        }
        assert!(n > 10, "object header seeds found: {n}");
    }

    #[test]
    fn btree_v1_smoke() {
        let seeds = struct_inputs(b"TREE", &[0, 1, 2]);
        assert!(!seeds.is_empty());
        for d in seeds {
            super::btree_v1::run(&d);
        }
    }

    #[test]
    fn btree_v2_smoke() {
        for d in struct_inputs(b"BTHD", &[0, 13, 40, 14, 26, 38]) {
            super::btree_v2::run(&d);
        }
    }

    #[test]
    fn local_heap_smoke() {
        let seeds = struct_inputs(b"HEAP", &[0, 8]);
        assert!(!seeds.is_empty());
        for d in seeds {
            super::local_heap::run(&d);
        }
    }

    #[test]
    fn global_heap_smoke() {
        for d in struct_inputs(b"GCOL", &[1, 3]) {
            super::global_heap::run(&d);
        }
        for d in random_inputs(2_000, 128) {
            super::global_heap::run(&d);
        }
    }

    #[test]
    fn fractal_heap_smoke() {
        for d in struct_inputs(b"FRHP", &[0, 4, 8]) {
            super::fractal_heap::run(&d);
        }
    }

    #[test]
    fn fixed_and_extensible_array_smoke() {
        // Parameters: boxes of several shapes over grids of 1 to 128
        // columns, row-major and swizzled (see `grid_box`).
        let params = [0, 1, 6, 0x0b, 0x2f, 0x47, 0x5e, 0x8c, 0xc6, 0xff];
        for d in struct_inputs(b"FAHD", &params) {
            super::fixed_array::run(&d);
        }
        for d in struct_inputs(b"EAHD", &params) {
            super::extensible_array::run(&d);
        }
        for d in random_inputs(2_000, 128) {
            super::fixed_array::run(&d);
            super::extensible_array::run(&d);
        }
    }

    /// Struct inputs holding a fixed array (paged, 3000 entries, every
    /// fifth unallocated) and an extensible array (140000 elements, those
    /// in 2000..100000 and every fifth unset; data blocks are paged from
    /// element 131060 on) built with the format encoders, sizes 8/8, for
    /// each parameter, with a few one-bit mutations each.
    fn built_arrays(params: &[u8]) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        use h5fmt::format::extensible_array::{build_array, ExtensibleArrayHeader};
        use h5fmt::format::fixed_array::{encode_data_block_paged, FixedArrayHeader};
        use h5fmt::{Addr, Ctx, Limits, Sizes};
        let sizes = Sizes {
            offsets: 8,
            lengths: 8,
        };
        let ctx = Ctx {
            sizes,
            limits: Limits::default(),
        };
        let addr = |i: u64| if i % 5 == 2 { u64::MAX } else { (i + 1) * 64 };
        let elements = |n: u64| -> Vec<u8> { (0..n).flat_map(|i| addr(i).to_le_bytes()).collect() };
        let hsize = FixedArrayHeader::encoded_size(ctx) as u64;
        let hdr = FixedArrayHeader {
            client_id: 0,
            entry_size: 8,
            page_bits: 10,
            max_entries: 3000,
            data_block: Addr(hsize),
        };
        let mut enc = h5fmt::codec::Encoder::new();
        hdr.encode(&mut enc, ctx);
        encode_data_block_paged(&mut enc, ctx, &hdr, Addr(0), &elements(3000)).unwrap();
        let fa = enc.into_vec();
        let template = ExtensibleArrayHeader {
            client_id: 0,
            element_size: 8,
            max_nelmts_bits: 32,
            index_block_elements: 4,
            data_block_min_elements: 16,
            super_block_min_pointers: 4,
            page_bits: 10,
            num_super_blocks: 0,
            super_blocks_size: 0,
            num_data_blocks: 0,
            data_blocks_size: 0,
            max_index_set: 0,
            num_elements: 0,
            index_block: Addr::UNDEF,
        };
        let n = 140_000;
        let present = |i: u64| addr(i) != u64::MAX && !(2_000..100_000).contains(&i);
        let hsize = ExtensibleArrayHeader::encoded_size(ctx) as u64;
        let mut next = hsize;
        let built = build_array(
            &template,
            Addr(0),
            &elements(n),
            &u64::MAX.to_le_bytes(),
            &present,
            ctx,
            &mut |size| {
                let a = next;
                next += size;
                Addr(a)
            },
        )
        .unwrap();
        let mut ea = vec![0u8; next as usize];
        let mut enc = h5fmt::codec::Encoder::new();
        built.header.encode(&mut enc, ctx);
        ea[..hsize as usize].copy_from_slice(&enc.into_vec());
        for (a, bytes) in &built.blocks {
            ea[a.0 as usize..a.0 as usize + bytes.len()].copy_from_slice(bytes);
        }
        let mut r = rng(11);
        let mut inputs = |file: &[u8]| {
            let mut out = Vec::new();
            for &p in params {
                let mut v = vec![super::ctx_byte(sizes), p, 0, 0, 0, 0];
                v.extend_from_slice(file);
                for _ in 0..4 {
                    let mut m = v.clone();
                    let k = 6 + (r() as usize) % file.len();
                    m[k] ^= 1 << (r() % 8);
                    out.push(m);
                }
                out.push(v);
            }
            out
        };
        (inputs(&fa), inputs(&ea))
    }

    #[test]
    fn pruned_array_walks_match_full_walks() {
        let params = [
            0, 1, 6, 0x0b, 0x11, 0x18, 0x19, 0x1a, 0x2f, 0x47, 0x5e, 0x8c, 0x98, 0xb9, 0xc6, 0xff,
        ];
        let (fa, ea) = built_arrays(&params);
        for d in fa {
            super::fixed_array::run(&d);
        }
        for d in ea {
            super::extensible_array::run(&d);
        }
    }

    #[test]
    fn selection_and_vds_smoke() {
        let w = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        let hyper = [vec![8u8, 10], w(&[2, 1, 0, 28, 2, 1, 0, 0, 3, 4])].concat();
        let mut r = rng(3);
        for _ in 0..2_000 {
            let mut m = hyper.clone();
            let k = (r() as usize) % m.len();
            m[k] = r() as u8;
            super::selection::run(&m);
        }
        for d in random_inputs(5_000, 128) {
            super::selection::run(&d);
            super::vds::run(&d);
        }
        // Valid blocks (every selection form, both versions, every size
        // context), then the same with a selection byte changed and the
        // checksum recomputed: decoding, re-encoding and decoding again agree.
        use h5fmt::format::selection::{RegularDim, Selection};
        use h5fmt::format::vds::{VdsBlock, VdsMapping};
        let sels = [
            Selection::All,
            Selection::None,
            Selection::Blocks {
                rank: 2,
                corners: vec![0, 0, 1, 1, 3, 3, 300, 4],
            },
            Selection::Regular(vec![RegularDim {
                start: 2,
                stride: 3,
                count: u64::MAX,
                block: 1,
            }]),
            Selection::Points {
                rank: 1,
                coords: vec![9, 1 << 20],
            },
        ];
        let mut r = rng(11);
        for c in 0u8..9 {
            let ctx = super::ctx_from(c);
            for version in [0, 1] {
                let mappings: Vec<VdsMapping> = sels
                    .iter()
                    .enumerate()
                    .map(|(i, s)| VdsMapping {
                        file: if i % 2 == 0 {
                            ".".into()
                        } else {
                            "some_file.h5".into()
                        },
                        dataset: "/data/set".into(),
                        source: s.clone(),
                        virtual_sel: sels[(i + 2) % sels.len()].clone(),
                    })
                    .collect();
                let b = VdsBlock { version, mappings }.encode(ctx).unwrap();
                super::vds::run(&[[c].as_slice(), &b].concat());
                for _ in 0..200 {
                    let mut m = b[..b.len() - 4].to_vec();
                    let k = (r() as usize) % m.len();
                    m[k] = r() as u8;
                    let sum = h5fmt::codec::lookup3(&m, 0);
                    m.extend_from_slice(&sum.to_le_bytes());
                    super::vds::run(&[[c].as_slice(), &m].concat());
                }
            }
        }
    }

    #[test]
    fn each_filter_smoke() {
        let targets: [fn(&[u8]); 10] = [
            super::filters::deflate::run,
            super::filters::shuffle::run,
            super::filters::fletcher32::run,
            super::filters::nbit::run,
            super::filters::scaleoffset::run,
            super::filters::lzf::run,
            super::filters::lz4::run,
            super::filters::zstd::run,
            super::filters::bzip2::run,
            super::filters::blosc2::run,
        ];
        for d in random_inputs(2_000, 256) {
            for t in targets {
                t(&d);
            }
        }
    }

    #[test]
    fn blosc2_frame_mutations_smoke() {
        // A real Blosc2 frame (b2nd, padded blocks) with random byte changes.
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../crates/h5fmt/tests/vectors/blosc2_zlib_3d_pad.in"
        );
        let frame = std::fs::read(path).unwrap();
        let mut input = vec![6u8, 8, 0];
        input.extend(&frame);
        super::filters::blosc2::run(&input);
        let mut r = rng(26);
        for _ in 0..3_000 {
            let mut m = input.clone();
            for _ in 0..1 + r() % 4 {
                let k = 3 + (r() as usize) % frame.len();
                m[k] = r() as u8;
            }
            super::filters::blosc2::run(&m);
        }
    }

    #[test]
    fn differential_smoke() {
        for f in corpus_files(10) {
            super::differential::run(&f);
        }
    }
}
