//! Zstandard filter (registered id 32015): one or more zstd frames, decoded
//! and encoded with libzstd (`zstd-safe`) with the `c-codecs` feature and
//! with the pure-Rust `ruzstd` without it (pure-Rust `std` builds, no_std,
//! wasm). ruzstd's encoder implements only its "Fastest" level (about
//! libzstd's level 1), which it then uses for every level.

use crate::error::{Error, Result};
use alloc::vec::Vec;
#[cfg(not(feature = "c-codecs"))]
use ruzstd::decoding::errors::FrameDecoderError;
#[cfg(not(feature = "c-codecs"))]
use ruzstd::decoding::FrameDecoder;

#[cfg(feature = "c-codecs")]
pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    // Overwritten by the decoder and truncated to what it wrote.
    let mut out = crate::io::scratch_buffer(bound)?;
    let n = decode_into(data, &mut out)?;
    out.truncate(n);
    Ok(out)
}

/// Decode zstd frames from `data` into `out`, returning the decoded length.
#[cfg(feature = "c-codecs")]
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

/// The first `n` bytes decoded from the zstd frames in `data` (libzstd
/// streaming, which stops once they are out: the blocks after the one
/// holding byte `n` are not decoded); `None` without `c-codecs`.
///
/// # Errors
/// `Corrupt` for an invalid stream or one ending before `n` bytes.
#[cfg(feature = "c-codecs")]
pub(super) fn decode_prefix(data: &[u8], n: usize) -> Result<Option<Vec<u8>>> {
    use zstd_safe::{InBuffer, OutBuffer, ResetDirective};
    std::thread_local! {
        // A streaming context per thread (its window buffer is reused).
        static SCTX: core::cell::RefCell<Option<zstd_safe::DCtx<'static>>> =
            const { core::cell::RefCell::new(None) };
    }
    let mut out = crate::io::scratch_buffer(n)?;
    let run = |dctx: &mut zstd_safe::DCtx<'static>, out: &mut [u8]| -> Result<usize> {
        dctx.reset(ResetDirective::SessionOnly)
            .map_err(|c| super::corrupt(zstd_safe::get_error_name(c)))?;
        let mut ib = InBuffer::around(data);
        let mut ob = OutBuffer::around(out);
        while ob.pos() < n {
            let before = (ib.pos(), ob.pos());
            dctx.decompress_stream(&mut ob, &mut ib).map_err(|c| {
                super::corrupt(alloc::format!(
                    "invalid zstd stream: {}",
                    zstd_safe::get_error_name(c)
                ))
            })?;
            if (ib.pos(), ob.pos()) == before {
                break; // no progress: truncated frame
            }
        }
        Ok(ob.pos())
    };
    let got = SCTX
        .try_with(|cell| match cell.try_borrow_mut() {
            Ok(mut slot) => run(slot.get_or_insert_with(zstd_safe::DCtx::create), &mut out),
            Err(_) => run(&mut zstd_safe::DCtx::create(), &mut out),
        })
        .unwrap_or_else(|_| run(&mut zstd_safe::DCtx::create(), &mut out));
    super::prefix_done(out, got, n, "zstd").map(Some)
}

/// Without libzstd: no prefix decoding (the caller decodes whole chunks).
#[cfg(all(feature = "std", not(feature = "c-codecs")))]
pub(super) fn decode_prefix(_data: &[u8], _n: usize) -> Result<Option<Vec<u8>>> {
    Ok(None)
}

#[cfg(not(feature = "c-codecs"))]
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
#[cfg(not(feature = "c-codecs"))]
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

/// Compress `data` into one zstd frame at `level` (libzstd).
///
/// # Errors
/// `Limit` when libzstd fails.
#[cfg(feature = "c-codecs")]
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
#[cfg(feature = "c-codecs")]
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

/// Compress `data` into one zstd frame with ruzstd (its "Fastest" level,
/// whatever `level`) written to the start of `out`; returns its length.
///
/// ruzstd leaves the frame content size out of the frame header; the
/// HDF5 zstd filter (hdf5plugin's `H5Zzstd.c`) sizes its output buffer with
/// `ZSTD_getDecompressedSize` and fails without it, so the header is
/// rewritten with the size (RFC 8878 §3.1.1.1).
///
/// # Errors
/// `Unsupported` when ruzstd's frame header is not of the form expected
/// (another ruzstd version).
#[cfg(not(feature = "c-codecs"))]
pub(super) fn encode_into(data: &[u8], _level: i32, out: &mut Vec<u8>) -> Result<usize> {
    let frame =
        ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest);
    // Magic, descriptor, window descriptor: no content size, no dictionary,
    // not single-segment.
    let (head, rest) = frame.split_at_checked(6).unwrap_or((&frame, &[]));
    let [m0, m1, m2, m3, desc, window] = *head else {
        return Err(unexpected_frame());
    };
    if [m0, m1, m2, m3] != 0xFD2F_B528u32.to_le_bytes() || desc & 0xE3 != 0 {
        return Err(unexpected_frame());
    }
    out.clear();
    out.extend_from_slice(&[m0, m1, m2, m3]);
    match u32::try_from(data.len()) {
        Ok(n) => {
            out.extend_from_slice(&[desc | 0x80, window]);
            out.extend_from_slice(&n.to_le_bytes());
        }
        Err(_) => {
            out.extend_from_slice(&[desc | 0xC0, window]);
            out.extend_from_slice(&(data.len() as u64).to_le_bytes());
        }
    }
    out.extend_from_slice(rest);
    Ok(out.len())
}

#[cfg(not(feature = "c-codecs"))]
#[cold]
fn unexpected_frame() -> Error {
    Error::unsupported("ruzstd wrote a zstd frame header of an unexpected form")
}

/// Compress `data` into one zstd frame with ruzstd (see [`encode_into`]).
///
/// # Errors
/// None: the `Result` mirrors the libzstd version.
#[cfg(not(feature = "c-codecs"))]
pub(super) fn encode(data: &[u8], level: i32) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    encode_into(data, level, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    #[cfg(feature = "c-codecs")]
    #[test]
    fn prefix_is_the_start_of_the_full_decode() {
        // Frames of several 128 KiB blocks, and two frames back to back:
        // every prefix equals the start of the data; a stream too short for
        // the prefix, or damaged, is an error.
        let data: alloc::vec::Vec<u8> = (0..400_000u32)
            .map(|i| ((i / 7) ^ (i.wrapping_mul(2_654_435_761) >> 27)) as u8)
            .collect();
        for level in [1, 3, 19] {
            let z = super::encode(&data, level).unwrap();
            for n in [1usize, 1000, 131_071, 131_072, 131_073, 300_001, 400_000] {
                let p = super::decode_prefix(&z, n).unwrap().unwrap();
                assert_eq!(p.len(), n);
                assert!(p[..] == data[..n], "level {level}, {n} bytes");
            }
            assert!(super::decode_prefix(&z, 400_001).is_err());
            assert!(super::decode_prefix(&z[..z.len() / 2], 300_000).is_err());
        }
        let mut two = super::encode(&data[..100_000], 3).unwrap();
        two.extend(super::encode(&data[100_000..], 3).unwrap());
        let p = super::decode_prefix(&two, 250_000).unwrap().unwrap();
        assert!(p[..] == data[..250_000], "two frames");
        let mut bad = super::encode(&data, 3).unwrap();
        bad[0] ^= 0xff; // magic number
        assert!(super::decode_prefix(&bad, 10).is_err());
    }

    #[test]
    fn frames_round_trip_with_their_content_size() {
        let data: alloc::vec::Vec<u8> = (0..300_000u32)
            .map(|i| ((i / 9) ^ (i.wrapping_mul(2_654_435_761) >> 28)) as u8)
            .collect();
        for len in [0usize, 1, 255, 256, 70_000, 300_000] {
            let z = super::encode(&data[..len], 3).unwrap();
            assert_eq!(z[..4], 0xFD2F_B528u32.to_le_bytes());
            // The frame header names the decoded size (what HDF5's zstd
            // filter sizes its buffer by): 4 bytes after the window
            // descriptor (or a single-segment 1..8-byte field with libzstd).
            let desc = z[4];
            let fcs = match (desc >> 6, desc & 0x20 != 0) {
                (0, true) => u64::from(z[5]),
                (1, s) => {
                    u64::from(u16::from_le_bytes([
                        z[6 - usize::from(s)],
                        z[7 - usize::from(s)],
                    ])) + 256
                }
                (2, s) => u64::from(u32::from_le_bytes(
                    z[6 - usize::from(s)..10 - usize::from(s)]
                        .try_into()
                        .unwrap(),
                )),
                (3, s) => u64::from_le_bytes(
                    z[6 - usize::from(s)..14 - usize::from(s)]
                        .try_into()
                        .unwrap(),
                ),
                (f, s) => panic!("no content size (flag {f}, single segment {s})"),
            };
            assert_eq!(fcs, len as u64);
            assert_eq!(super::decode(&z, len).unwrap(), data[..len]);
        }
    }
}
