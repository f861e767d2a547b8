//! Deflate filter (id 1): a zlib stream (RFC 1950). With the `std` feature the
//! inflater is `zlib-rs` (faster); without it, `miniz_oxide`.

use crate::error::{Error, Result};
use alloc::vec::Vec;

/// Inflate `data`, producing at most `bound` bytes.
pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    imp(data, bound)
}

/// Inflate `data` into `out`, which the stream must fill exactly (the
/// decoded chunk, written in place: no temporary, no copy).
///
/// # Errors
/// `Limit` when the stream holds more than `out.len()` bytes, `Corrupt` when
/// it holds fewer or is invalid (adler32 included).
#[cfg(feature = "std")]
pub(super) fn decode_into(data: &[u8], out: &mut [u8]) -> Result<()> {
    use zlib_rs::{InflateConfig, ReturnCode};
    let len = out.len();
    let (written, rc) = {
        let (s, rc) = zlib_rs::decompress_slice(out, data, InflateConfig::default());
        (s.len(), rc)
    };
    match rc {
        // The output filled up before the stream ended.
        ReturnCode::BufError => Err(Error::limit(alloc::format!(
            "inflated data exceeds {len} bytes"
        ))),
        ReturnCode::Ok | ReturnCode::StreamEnd if written == len => Ok(()),
        ReturnCode::Ok | ReturnCode::StreamEnd => Err(super::corrupt(alloc::format!(
            "inflated data has {written} bytes, expected {len}"
        ))),
        ReturnCode::MemError => Err(Error::limit("inflate could not allocate its state")),
        rc => Err(super::corrupt(alloc::format!(
            "invalid deflate stream ({rc:?})"
        ))),
    }
}

/// Inflate `data` into `out`, which the stream must fill exactly.
///
/// # Errors
/// As the `std` version.
#[cfg(not(feature = "std"))]
pub(super) fn decode_into(data: &[u8], out: &mut [u8]) -> Result<()> {
    let v = imp(data, out.len())?;
    if v.len() != out.len() {
        return Err(super::corrupt(alloc::format!(
            "inflated data has {} bytes, expected {}",
            v.len(),
            out.len()
        )));
    }
    out.copy_from_slice(&v);
    Ok(())
}

#[cfg(feature = "std")]
fn imp(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    use zlib_rs::{InflateConfig, ReturnCode};
    // One byte of slack tells "more output than allowed" from "input ended early".
    // The buffer is overwritten by the inflater and truncated to what it wrote.
    let mut out = crate::io::scratch_buffer(bound.saturating_add(1))?;
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

/// Deflate `data` into a zlib stream at `level` (0–9) with `miniz_oxide`.
pub(super) fn encode(data: &[u8], level: u8) -> Vec<u8> {
    miniz_oxide::deflate::compress_to_vec_zlib(data, level.min(10))
}
