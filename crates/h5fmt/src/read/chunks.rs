//! Chunked datasets: collecting chunk records from any chunk index and
//! assembling the dataset's bytes (with fill values and partial edge chunks).

use crate::error::{Error, Result};
use crate::format::message::{ChunkedLayout, FilterPipeline};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// One allocated chunk.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkRecord {
    /// Element coordinates of the chunk's first element (one per dataspace dimension).
    pub offsets: Vec<u64>,
    /// Address of the stored chunk.
    pub addr: Addr,
    /// Stored (possibly filtered) size in bytes.
    pub size: u64,
    /// Filter mask: bit i set means filter i was not applied.
    pub filter_mask: u32,
}

/// What is needed to read a chunked dataset's bytes.
#[derive(Debug, Clone)]
pub struct ChunkedRead<'a> {
    /// The layout message.
    pub layout: &'a ChunkedLayout,
    /// The filter pipeline (empty when none).
    pub pipeline: &'a FilterPipeline,
    /// Current dataspace dims.
    pub dims: &'a [u64],
    /// Maximum dataspace dims (`u64::MAX` = unlimited), same rank as `dims`.
    pub max_dims: &'a [u64],
    /// Element size in bytes.
    pub element_size: usize,
    /// The fill element (`element_size` bytes) for chunks never written.
    pub fill: &'a [u8],
}

/// Read the whole dataset into a row-major buffer of `product(dims) * element_size` bytes.
///
/// # Errors
/// `Corrupt`, `Truncated`, `Unsupported` (filter), `Checksum`, `Limit`, naming the chunk.
pub fn read_all(st: &Storage, ctx: Ctx, req: &ChunkedRead<'_>) -> Result<Vec<u8>> {
    let _ = (st, ctx, req);
    Err(Error::unsupported("chunked data is not implemented yet"))
}

/// Read the chunks that intersect `sel` and copy the selected elements into
/// `out` (row-major in `sel.out_shape()`, pre-filled with the fill value).
///
/// # Errors
/// As [`read_all`].
pub fn read_selection(
    st: &Storage,
    ctx: Ctx,
    req: &ChunkedRead<'_>,
    sel: &crate::data::hyperslab::Selection,
    out: &mut [u8],
) -> Result<()> {
    // Fallback until per-chunk selection reads land: read everything, then select.
    let all = read_all(st, ctx, req)?;
    let origin = alloc::vec![0u64; req.dims.len()];
    sel.copy_from_region(req.element_size, &all, &origin, req.dims, out)
}
