//! Zstandard filter (registered id 32015): one or more zstd frames, decoded
//! with the pure-Rust `ruzstd`.

use crate::error::{Error, Result};
use alloc::vec::Vec;
use ruzstd::decoding::errors::FrameDecoderError;
use ruzstd::decoding::FrameDecoder;

pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    let mut out = super::alloc_zeroed(bound)?;
    let mut dec = FrameDecoder::new();
    match dec.decode_all(data, &mut out) {
        Ok(n) => {
            out.truncate(n);
            Ok(out)
        }
        Err(FrameDecoderError::TargetTooSmall) => Err(Error::limit(alloc::format!(
            "zstd output exceeds {bound} bytes"
        ))),
        Err(e) => Err(super::corrupt(alloc::format!("invalid zstd stream: {e}"))),
    }
}

/// Decode zstd frames from `data` into `out`, returning the decoded length.
pub(super) fn decode_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    let mut dec = FrameDecoder::new();
    match dec.decode_all(data, out) {
        Ok(n) => Ok(n),
        Err(FrameDecoderError::TargetTooSmall) => Err(Error::limit(alloc::format!(
            "zstd output exceeds {} bytes",
            out.len()
        ))),
        Err(e) => Err(super::corrupt(alloc::format!("invalid zstd stream: {e}"))),
    }
}
