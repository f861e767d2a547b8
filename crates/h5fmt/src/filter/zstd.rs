//! Zstandard filter (registered id 32015): one or more zstd frames, decoded
//! with libzstd (`zstd-safe`) on `std` builds and the pure-Rust `ruzstd`
//! without `std` (wasm).

use crate::error::{Error, Result};
use alloc::vec::Vec;
#[cfg(not(feature = "std"))]
use ruzstd::decoding::errors::FrameDecoderError;
#[cfg(not(feature = "std"))]
use ruzstd::decoding::FrameDecoder;

#[cfg(feature = "std")]
pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    // Overwritten by the decoder and truncated to what it wrote.
    let mut out = crate::io::scratch_buffer(bound)?;
    let n = decode_into(data, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Decode zstd frames from `data` into `out`, returning the decoded length.
#[cfg(feature = "std")]
pub(super) fn decode_into(data: &[u8], out: &mut [u8]) -> Result<usize> {
    std::thread_local! {
        // One decompression context per thread, reused across chunks
        // (`ZSTD_decompress` would allocate and initialise one per call).
        static DCTX: core::cell::RefCell<Option<zstd_safe::DCtx<'static>>> =
            const { core::cell::RefCell::new(None) };
    }
    // One-shot decompression of all frames, never writing past `out`.
    let result = DCTX
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => slot
                .get_or_insert_with(zstd_safe::DCtx::create)
                .decompress(out, data),
            Err(_) => zstd_safe::decompress(&mut *out, data),
        })
        .unwrap_or_else(|_| zstd_safe::decompress(&mut *out, data));
    match result {
        Ok(n) => Ok(n),
        Err(code) => {
            let name = zstd_safe::get_error_name(code);
            if name.contains("too small") {
                Err(Error::limit(alloc::format!(
                    "zstd output exceeds {} bytes",
                    out.len()
                )))
            } else {
                Err(super::corrupt(alloc::format!(
                    "invalid zstd stream: {name}"
                )))
            }
        }
    }
}

#[cfg(not(feature = "std"))]
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
#[cfg(not(feature = "std"))]
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

/// Compress `data` into one zstd frame at `level` (libzstd, `std` only).
///
/// # Errors
/// `Unsupported` without `std` (the pure-Rust decoder has no encoder);
/// `Limit` when libzstd fails.
#[cfg(feature = "std")]
pub(super) fn encode(data: &[u8], level: i32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    let n = encode_into(data, level, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Compress `data` into one zstd frame at `level` written to the start of
/// `out`; returns its length. `out` is grown to the compression bound and
/// not shrunk, so a buffer reused across chunks is not cleared again.
///
/// # Errors
/// `Limit` when libzstd fails.
#[cfg(feature = "std")]
pub(super) fn encode_into(data: &[u8], level: i32, out: &mut Vec<u8>) -> Result<usize> {
    std::thread_local! {
        // One compression context per thread, reused across chunks (creating
        // one allocates and clears its tables every time).
        static CCTX: core::cell::RefCell<zstd_safe::CCtx<'static>> =
            core::cell::RefCell::new(zstd_safe::CCtx::create());
    }
    let bound = zstd_safe::compress_bound(data.len());
    if out.len() < bound {
        out.resize(bound, 0);
    }
    let dst = out.as_mut_slice();
    let r = CCTX.with(|c| match c.try_borrow_mut() {
        Ok(mut cctx) => cctx.compress(dst, data, level),
        Err(_) => zstd_safe::compress(dst, data, level),
    });
    r.map_err(|code| {
        Error::limit(alloc::format!(
            "zstd compression failed: {}",
            zstd_safe::get_error_name(code)
        ))
    })
}

/// Compress into `out` (needs `std`).
///
/// # Errors
/// Always `Unsupported`: without `std` there is no zstd encoder.
#[cfg(not(feature = "std"))]
pub(super) fn encode_into(_data: &[u8], _level: i32, _out: &mut Vec<u8>) -> Result<usize> {
    Err(Error::unsupported(
        "writing zstd needs the std feature (libzstd); the no_std build only decodes zstd",
    ))
}

/// Compress `data` into one zstd frame (needs `std`).
///
/// # Errors
/// Always `Unsupported`: without `std` there is no zstd encoder.
#[cfg(not(feature = "std"))]
pub(super) fn encode(_data: &[u8], _level: i32) -> Result<Vec<u8>> {
    Err(Error::unsupported(
        "writing zstd needs the std feature (libzstd); the no_std build only decodes zstd",
    ))
}
