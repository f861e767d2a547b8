//! Filters (decode direction): every output is bounded by the expected chunk size.

use crate::error::{Error, Result};
use crate::format::message::FilterPipeline;
use alloc::vec::Vec;

/// Undo `pipeline` on one stored chunk. Filters are applied in reverse order;
/// a filter whose bit is set in `filter_mask` is skipped. `expected_len` is
/// the decoded chunk size in bytes (the bound on every intermediate output);
/// `element_size` is the dataset's element size.
///
/// # Errors
/// `Unsupported` naming a filter id that is not available, `Corrupt` for a bad
/// stream, `Checksum` for a fletcher32 mismatch, `Limit` when output would exceed the bound.
pub fn decode_chunk(
    pipeline: &FilterPipeline,
    filter_mask: u32,
    data: Vec<u8>,
    expected_len: usize,
    element_size: usize,
) -> Result<Vec<u8>> {
    let _ = (filter_mask, expected_len, element_size);
    if pipeline.filters.is_empty() {
        return Ok(data);
    }
    Err(Error::unsupported("filters are not implemented yet"))
}
