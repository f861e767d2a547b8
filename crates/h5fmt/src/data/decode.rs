//! Decoding raw element bytes into [`Value`]s.

use crate::data::{HeapResolver, Value};
use crate::error::{Error, Result};
use crate::format::datatype::Datatype;
use crate::Ctx;
use alloc::vec::Vec;

/// Decode one element of `dtype` from `bytes` (exactly `dtype.size()` bytes).
///
/// # Errors
/// `Truncated` when `bytes` is short, `Corrupt`/`Unsupported` from the heap or type.
pub fn decode_element(
    dtype: &Datatype,
    bytes: &[u8],
    ctx: Ctx,
    heap: &dyn HeapResolver,
) -> Result<Value> {
    let _ = (dtype, bytes, ctx, heap);
    Err(Error::unsupported(
        "element decoding is not implemented yet",
    ))
}

/// Decode `count` consecutive elements of `dtype` from `bytes`.
///
/// # Errors
/// As [`decode_element`]; `Truncated` when `bytes` holds fewer than `count` elements.
pub fn decode_elements(
    dtype: &Datatype,
    bytes: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
) -> Result<Vec<Value>> {
    let _ = (dtype, bytes, count, ctx, heap);
    Err(Error::unsupported(
        "element decoding is not implemented yet",
    ))
}
