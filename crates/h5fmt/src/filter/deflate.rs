//! Deflate filter (id 1): a zlib stream (RFC 1950). With the `std` feature the
//! inflater is `zlib-rs` (faster); without it, `miniz_oxide`.

use crate::error::{Error, Result};
use alloc::vec::Vec;

/// Inflate `data`, producing at most `bound` bytes.
pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    imp(data, bound)
}

#[cfg(feature = "std")]
fn imp(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    use zlib_rs::{InflateConfig, ReturnCode};
    // One byte of slack tells "more output than allowed" from "input ended early".
    let mut out = super::alloc_zeroed(bound.saturating_add(1))?;
    let (written, rc) = {
        let (s, rc) = zlib_rs::decompress_slice(&mut out, data, InflateConfig::default());
        (s.len(), rc)
    };
    match rc {
        _ if written > bound => Err(Error::limit(alloc::format!(
            "inflated data exceeds {bound} bytes"
        ))),
        ReturnCode::Ok | ReturnCode::StreamEnd => {
            out.truncate(written);
            Ok(out)
        }
        ReturnCode::BufError => Err(super::corrupt("deflate stream is truncated")),
        ReturnCode::MemError => Err(Error::limit("inflate could not allocate its state")),
        rc => Err(super::corrupt(alloc::format!(
            "invalid deflate stream ({rc:?})"
        ))),
    }
}

#[cfg(not(feature = "std"))]
fn imp(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    use miniz_oxide::inflate::TINFLStatus;
    match miniz_oxide::inflate::decompress_to_vec_zlib_with_limit(data, bound) {
        Ok(v) => Ok(v),
        Err(e) => match e.status {
            TINFLStatus::HasMoreOutput => Err(Error::limit(alloc::format!(
                "inflated data exceeds {bound} bytes"
            ))),
            TINFLStatus::FailedCannotMakeProgress | TINFLStatus::NeedsMoreInput => {
                Err(super::corrupt("deflate stream is truncated"))
            }
            TINFLStatus::Adler32Mismatch => Err(super::corrupt("deflate stream: adler32 mismatch")),
            s => Err(super::corrupt(alloc::format!(
                "invalid deflate stream ({s:?})"
            ))),
        },
    }
}

/// Deflate `data` into a zlib stream at `level` (0–9): `zlib-rs` with
/// `std` (zlib's algorithms, about 2× `miniz_oxide`'s speed at level 4),
/// `miniz_oxide` without.
pub(super) fn encode(data: &[u8], level: u8) -> Vec<u8> {
    encode_imp(data, level.min(9))
}

#[cfg(feature = "std")]
fn encode_imp(data: &[u8], level: u8) -> Vec<u8> {
    let mut out = alloc::vec![0u8; zlib_rs::compress_bound(data.len())];
    let (written, rc) = {
        let (s, rc) = zlib_rs::compress_slice(
            &mut out,
            data,
            zlib_rs::DeflateConfig::new(i32::from(level)),
        );
        (s.len(), rc)
    };
    if rc == zlib_rs::ReturnCode::Ok {
        out.truncate(written);
        out
    } else {
        // Not reachable with a compress_bound-sized buffer; stay correct anyway.
        miniz_oxide::deflate::compress_to_vec_zlib(data, level)
    }
}

#[cfg(not(feature = "std"))]
fn encode_imp(data: &[u8], level: u8) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec_zlib(data, level)
}
