//! Chunk indexes of edited datasets: the space the committed index takes
//! (freed once a commit replaces it) and the sink through which the
//! writer's index encoders put a rebuilt index into fresh space.

use super::FileEditor;
use crate::error::{Error, Result};
use crate::format::extensible_array::ExtensibleArrayHeader;
use crate::format::fixed_array::FixedArrayHeader;
use crate::format::message::{ChunkIndex, ChunkedLayout};
use crate::io::Storage;
use crate::read::chunks as rc;
use crate::write::chunked::IndexSink;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// Index blocks written through the editor: fresh space (recorded, to free
/// when a later commit replaces the index) and counted writes.
pub(super) struct EditSink<'a> {
    pub(super) ed: &'a mut FileEditor,
    pub(super) extents: Vec<(u64, u64)>,
}

impl IndexSink for EditSink<'_> {
    fn alloc_index(&mut self, len: u64) -> Addr {
        let a = self.ed.alloc(len);
        self.extents.push((a, len));
        Addr(a)
    }

    fn write_index(&mut self, addr: Addr, bytes: &[u8]) -> Result<()> {
        self.ed.write_at(addr.get(), bytes)
    }
}

/// The extents (address, length) of the structures of a committed fixed
/// array, extensible array, v2 B-tree or implicit index (chunks excepted,
/// but an implicit index's chunks are its storage: one extent over the
/// maximum dims). Other indexes give none.
///
/// # Errors
/// Decode errors of the index structures.
pub(super) fn index_extents(
    st: &Storage,
    ctx: Ctx,
    layout: &ChunkedLayout,
    max_dims: &[u64],
    chunk_bytes: u64,
) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    match &layout.index {
        ChunkIndex::FixedArray { addr, .. } => {
            let Some(a) = addr.defined() else {
                return Ok(out);
            };
            let hdr = rc::fixed_array_header(st, ctx, a)?;
            out.push((a.get(), FixedArrayHeader::encoded_size(ctx) as u64));
            if let Some(db) = hdr.data_block.defined() {
                let mut len = hdr.data_block_size(ctx)?;
                let es = u64::from(hdr.entry_size);
                for p in 0..hdr.npages() {
                    let page = hdr.page_len(p).saturating_mul(es).saturating_add(4);
                    len = len.saturating_add(page);
                }
                out.push((db.get(), len));
            }
        }
        ChunkIndex::ExtensibleArray { addr, .. } => {
            let Some(a) = addr.defined() else {
                return Ok(out);
            };
            out.push((a.get(), ExtensibleArrayHeader::encoded_size(ctx) as u64));
            let mut seen = BTreeSet::new();
            let Some((hdr, ib)) = rc::extensible_array_open(st, ctx, a, &mut seen)? else {
                return Ok(out);
            };
            out.push((hdr.index_block.get(), hdr.index_block_size(ctx)?));
            let page = hdr
                .page_elements()
                .saturating_mul(u64::from(hdr.element_size))
                .saturating_add(4);
            let dblk_len = |n: u64| -> Result<u64> {
                Ok(hdr
                    .data_block_size(ctx, n)?
                    .saturating_add(hdr.data_block_pages(n).saturating_mul(page)))
            };
            let in_ib = hdr.index_block_super_blocks() as usize;
            for (u, info) in hdr.super_block_info().iter().enumerate() {
                if u < in_ib {
                    for d in 0..info.ndblks {
                        let slot = usize::try_from(info.start_dblk.saturating_add(d))
                            .unwrap_or(usize::MAX);
                        if let Some(dblk) = ib.data_blocks.get(slot).and_then(|x| x.defined()) {
                            out.push((dblk.get(), dblk_len(info.dblk_nelmts)?));
                        }
                    }
                } else {
                    let Some(sb_addr) = ib.super_blocks.get(u - in_ib).and_then(|x| x.defined())
                    else {
                        continue;
                    };
                    let sb =
                        rc::extensible_array_super_block(st, ctx, &hdr, info, sb_addr, &mut seen)?;
                    out.push((sb_addr.get(), hdr.super_block_size(ctx, info)?));
                    for dblk in sb.data_blocks.iter().filter_map(|x| x.defined()) {
                        out.push((dblk.get(), dblk_len(info.dblk_nelmts)?));
                    }
                }
            }
        }
        ChunkIndex::BTreeV2 { addr, .. } => {
            out = super::dense::btree_extents(st, ctx, *addr)?;
        }
        ChunkIndex::Implicit { addr } => {
            let Some(a) = addr.defined() else {
                return Ok(out);
            };
            let n = implicit_chunks(&layout.dims, max_dims)?;
            let len = n
                .checked_mul(chunk_bytes)
                .ok_or_else(|| Error::corrupt("implicit index size overflows", a.get()))?;
            out.push((a.get(), len));
        }
        ChunkIndex::BTreeV1 { .. } | ChunkIndex::SingleChunk { .. } => {}
    }
    Ok(out)
}

/// Chunks of an implicit index: the chunk grid over the maximum dims.
///
/// # Errors
/// `Unsupported` for unlimited maximum dims; `Limit` on overflow.
pub(super) fn implicit_chunks(chunk: &[u64], max_dims: &[u64]) -> Result<u64> {
    chunk
        .iter()
        .zip(max_dims)
        .try_fold(1u64, |acc, (c, m)| {
            if *m == crate::format::message::Dataspace::UNLIMITED {
                return None;
            }
            acc.checked_mul(m.div_ceil((*c).max(1)))
        })
        .ok_or_else(|| Error::unsupported("an implicit chunk index over unlimited or huge dims"))
}
