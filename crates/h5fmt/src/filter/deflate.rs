//! Deflate filter (id 1): a zlib stream (RFC 1950). With the `c-codecs`
//! feature libdeflate (C) both inflates (one shot: every chunk's decoded size
//! is known) and deflates; with `std` alone, zlib-rs (pure Rust) for both;
//! without `std` (no_std, wasm), `miniz_oxide` for both.

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
    let len = out.len();
    let written = inflate_bounded(data, out)?;
    if written == len {
        Ok(())
    } else {
        Err(super::corrupt(alloc::format!(
            "inflated data has {written} bytes, expected {len}"
        )))
    }
}

/// Inflate the zlib stream at the start of `data` into `out` with
/// libdeflate (the whole output size is known up front, so the one-shot
/// decoder applies: ~1.15x zlib-rs per core on 256 KiB chunks), returning
/// the number of bytes written. Bytes after the stream's end are ignored,
/// as zlib does; the adler32 trailer is verified.
///
/// # Errors
/// `Limit` when the stream holds more than `out.len()` bytes, `Corrupt`
/// when it is invalid, truncated or fails its adler32.
#[cfg(feature = "c-codecs")]
fn inflate_bounded(data: &[u8], out: &mut [u8]) -> Result<usize> {
    use libdeflater::{DecompressionError, Decompressor};
    std::thread_local! {
        // One decompressor (about 10 KiB of tables) per thread, reused.
        static DECOMPRESSOR: core::cell::RefCell<Option<Decompressor>> =
            const { core::cell::RefCell::new(None) };
    }
    let fresh = |out: &mut [u8]| Decompressor::new().zlib_decompress(data, out);
    let res = DECOMPRESSOR.try_with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => Some(
            slot.get_or_insert_with(Decompressor::new)
                .zlib_decompress(data, &mut *out),
        ),
        Err(_) => None,
    });
    let res = match res {
        Ok(Some(r)) => r,
        _ => fresh(out),
    };
    match res {
        Ok(n) => Ok(n),
        // libdeflate reads a truncated stream as if zeros followed, which
        // may also overflow the output: the streaming inflater tells the two
        // apart (error path only).
        Err(DecompressionError::InsufficientSpace) => match streaming(data, out.len()) {
            Err(e) => Err(e),
            Ok(_) => Err(Error::limit(alloc::format!(
                "inflated data exceeds {} bytes",
                out.len()
            ))),
        },
        Err(DecompressionError::BadData) => Err(super::corrupt(
            "invalid deflate stream (bad data, truncated, or adler32 mismatch)",
        )),
    }
}

/// As [`inflate_bounded`] with libdeflate, with zlib-rs (pure Rust, ~1.15x
/// libdeflate's time per byte): one `Finish` call into the whole output.
///
/// # Errors
/// As the `c-codecs` version.
#[cfg(all(feature = "std", not(feature = "c-codecs")))]
fn inflate_bounded(data: &[u8], out: &mut [u8]) -> Result<usize> {
    use zlib_rs::{InflateFlush, Status};
    let ended = with_inflate(|inf| {
        inf.reset(true);
        match inf.decompress(data, &mut *out, InflateFlush::Finish) {
            Ok(Status::StreamEnd) => usize::try_from(inf.total_out()).ok(),
            _ => None,
        }
    });
    match ended {
        Some(n) => Ok(n),
        // Output full, input truncated or invalid: the streaming inflater
        // tells these apart (error path only).
        None => match streaming(data, out.len()) {
            Err(e) => Err(e),
            Ok(_) => Err(super::corrupt("invalid deflate stream")),
        },
    }
}

/// Run `f` on this thread's zlib-rs inflate state (its 32 KiB window
/// included), taken out for the call and put back after; a fresh one on
/// first use (or when a nested call finds it taken).
#[cfg(feature = "std")]
fn with_inflate<T>(f: impl FnOnce(&mut zlib_rs::Inflate) -> T) -> T {
    use zlib_rs::Inflate;
    std::thread_local! {
        static INFLATE: core::cell::Cell<Option<Inflate>> = const { core::cell::Cell::new(None) };
    }
    let mut inf = INFLATE
        .try_with(core::cell::Cell::take)
        .ok()
        .flatten()
        .unwrap_or_else(|| Inflate::new(true, 15));
    let v = f(&mut inf);
    // Fails only while the thread exits; the state is then dropped.
    let _ = INFLATE.try_with(|c| c.set(Some(inf)));
    v
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
    // The buffer is overwritten by the inflater and truncated to what it wrote.
    let mut out = crate::io::scratch_buffer(bound)?;
    match inflate_bounded(data, &mut out) {
        Ok(n) => {
            out.truncate(n);
            Ok(out)
        }
        Err(e) => {
            crate::io::recycle(out);
            Err(e)
        }
    }
}

#[cfg(not(feature = "std"))]
fn imp(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    streaming(data, bound)
}

/// Inflate with `miniz_oxide` (streaming), producing at most `bound` bytes:
/// `Limit` when the stream holds more, `Corrupt` when it ends early or is
/// invalid.
fn streaming(data: &[u8], bound: usize) -> Result<Vec<u8>> {
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

/// Inflate only the first `n` bytes of the zlib stream `data` (a reader
/// that needs only a chunk's first rows), with zlib-rs, which can stop
/// when its output is full. The stream's adler32 covers the whole chunk, so
/// it is not checked here; an invalid stream before byte `n` is an error.
///
/// # Errors
/// `Corrupt` when the stream is invalid or ends (or its input runs out)
/// before `n` bytes.
#[cfg(feature = "std")]
pub(super) fn decode_prefix(data: &[u8], n: usize) -> Result<Vec<u8>> {
    use zlib_rs::InflateFlush;
    let mut out = crate::io::scratch_buffer(n)?;
    let res = with_inflate(|inf| {
        inf.reset(true);
        match inf.decompress(data, &mut out, InflateFlush::SyncFlush) {
            Ok(_) => usize::try_from(inf.total_out())
                .map_err(|_| super::corrupt("inflated size overflows")),
            Err(e) => Err(super::corrupt(alloc::format!(
                "invalid deflate stream ({e:?})"
            ))),
        }
    });
    super::prefix_done(out, res, n, "deflate")
}

/// Deflate `data` into a zlib stream at `level` (0–9): libdeflate with
/// `c-codecs` (about twice zlib's speed at the same level, same or smaller
/// output; level 0 stores), zlib-rs with `std` alone, `miniz_oxide`
/// without `std`; in all, a start without
/// LZ77 matches (the noisy byte planes of shuffled floats) is coded as
/// literals without a match search (`deflate_literals`).
pub(super) fn encode(data: &[u8], level: u8) -> Vec<u8> {
    let mut out = Vec::new();
    let n = encode_into(data, level, &mut out);
    out.truncate(n);
    out
}

/// Deflate `data` into a zlib stream at `level` (0–9) written to the start
/// of `out`; returns its length. `out` is grown to the compression bound
/// and not shrunk, so a buffer reused across chunks is not cleared again.
#[cfg(feature = "c-codecs")]
pub(super) fn encode_into(data: &[u8], level: u8, out: &mut Vec<u8>) -> usize {
    use libdeflater::{CompressionLvl, Compressor};
    std::thread_local! {
        // One compressor per thread and level, reused across chunks.
        static COMPRESSOR: core::cell::RefCell<Option<(u8, Compressor)>> =
            const { core::cell::RefCell::new(None) };
    }
    let level = level.min(9);
    let run = |c: &mut Compressor, out: &mut Vec<u8>| -> Option<usize> {
        {
            // Literal blocks for a match-free start, libdeflate for the rest.
            let mut raw = |rest: &[u8], out: &mut Vec<u8>| -> bool {
                let at = out.len();
                out.resize(at + c.deflate_compress_bound(rest.len()), 0);
                match c.deflate_compress(rest, &mut out[at..]) {
                    Ok(n) => {
                        out.truncate(at + n);
                        true
                    }
                    Err(_) => false,
                }
            };
            if let Some(n) = super::deflate_literals::encode(data, level, out, &mut raw) {
                return Some(n);
            }
        }
        let bound = c.zlib_compress_bound(data.len());
        if out.len() < bound {
            out.resize(bound, 0);
        }
        c.zlib_compress(data, out).ok()
    };
    let fresh = || {
        CompressionLvl::new(i32::from(level))
            .ok()
            .map(Compressor::new)
    };
    let n = COMPRESSOR.with(|cell| match cell.try_borrow_mut() {
        Ok(mut slot) => {
            if slot.as_ref().map(|(l, _)| *l) != Some(level) {
                *slot = fresh().map(|c| (level, c));
            }
            slot.as_mut().and_then(|(_, c)| run(c, out))
        }
        Err(_) => fresh().and_then(|mut c| run(&mut c, out)),
    });
    // Not reachable (bound-sized buffer, valid level); stay correct anyway.
    n.unwrap_or_else(|| {
        *out = miniz_oxide::deflate::compress_to_vec_zlib(data, level);
        out.len()
    })
}

/// As the `c-codecs` version, with zlib-rs (pure Rust).
#[cfg(all(feature = "std", not(feature = "c-codecs")))]
pub(super) fn encode_into(data: &[u8], level: u8, out: &mut Vec<u8>) -> usize {
    let level = level.min(9);
    // Literal blocks for a match-free start, a raw deflate stream for the rest.
    let mut raw = |rest: &[u8], out: &mut Vec<u8>| -> bool {
        let at = out.len();
        out.resize(at + zlib_rs::compress_bound(rest.len()), 0);
        match zlib_deflate(level, false, rest, out.get_mut(at..).unwrap_or_default()) {
            Some(n) => {
                out.truncate(at + n);
                true
            }
            None => false,
        }
    };
    if let Some(n) = super::deflate_literals::encode(data, level, out, &mut raw) {
        return n;
    }
    let bound = zlib_rs::compress_bound(data.len());
    if out.len() < bound {
        out.resize(bound, 0);
    }
    zlib_deflate(level, true, data, out).unwrap_or_else(|| {
        // Not reachable (bound-sized buffer, valid level); stay correct anyway.
        *out = miniz_oxide::deflate::compress_to_vec_zlib(data, level);
        out.len()
    })
}

/// Deflate `data` at `level` into `out` (at least `compress_bound` long) as
/// a zlib stream (`zlib`) or a raw deflate stream; its length, `None` when
/// zlib-rs fails. The deflate states (one per kind of stream, ~270 KiB
/// each) are kept per thread: creating one clears its hash tables.
#[cfg(all(feature = "std", not(feature = "c-codecs")))]
fn zlib_deflate(level: u8, zlib: bool, data: &[u8], out: &mut [u8]) -> Option<usize> {
    use core::cell::Cell;
    use zlib_rs::{Deflate, DeflateFlush, Status};
    std::thread_local! {
        static ZLIB: Cell<Option<(u8, Deflate)>> = const { Cell::new(None) };
        static RAW: Cell<Option<(u8, Deflate)>> = const { Cell::new(None) };
    }
    let key = if zlib { &ZLIB } else { &RAW };
    let mut d = match key.try_with(Cell::take).ok().flatten() {
        Some((l, mut d)) if l == level => {
            d.reset();
            d
        }
        _ => Deflate::new(i32::from(level), zlib, 15),
    };
    let n = match d.compress(data, out, DeflateFlush::Finish) {
        Ok(Status::StreamEnd) => usize::try_from(d.total_out()).ok(),
        _ => None,
    };
    // Fails only while the thread exits; the state is then dropped.
    let _ = key.try_with(|c| c.set(Some((level, d))));
    n
}

/// As the `c-codecs` version, with `miniz_oxide`.
#[cfg(not(feature = "std"))]
pub(super) fn encode_into(data: &[u8], level: u8, out: &mut Vec<u8>) -> usize {
    let level = level.min(9);
    let mut raw = |rest: &[u8], out: &mut Vec<u8>| -> bool {
        out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(rest, level));
        true
    };
    if let Some(n) = super::deflate_literals::encode(data, level, out, &mut raw) {
        return n;
    }
    *out = miniz_oxide::deflate::compress_to_vec_zlib(data, level);
    out.len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_level_round_trips() {
        let data: alloc::vec::Vec<u8> = (0..300_000u32)
            .map(|i| ((i / 7) ^ (i.wrapping_mul(2_654_435_761) >> 27)) as u8)
            .collect();
        for level in 0..=9 {
            let z = super::encode(&data, level);
            // A zlib header (CM 8, check bits) and our inflater gives the data back.
            assert_eq!(z[0] & 0x0f, 8, "level {level}");
            assert_eq!((u16::from(z[0]) << 8 | u16::from(z[1])) % 31, 0);
            assert_eq!(
                super::decode(&z, data.len()).unwrap(),
                data,
                "level {level}"
            );
            // miniz_oxide, an independent inflater, agrees.
            assert_eq!(
                miniz_oxide::inflate::decompress_to_vec_zlib(&z).unwrap(),
                data,
                "level {level}"
            );
        }
        assert!(super::encode(&[], 4).len() >= 6);
    }

    #[cfg(feature = "std")]
    #[test]
    fn prefix_is_the_start_of_the_full_inflate() {
        // Streams made by miniz_oxide (an independent deflater) at several
        // levels, including stored blocks (level 0): every prefix equals
        // the start of the data, and a stream too short is an error.
        let data: alloc::vec::Vec<u8> = (0..200_000u32)
            .map(|i| ((i / 5) ^ (i.wrapping_mul(2_654_435_761) >> 26)) as u8)
            .collect();
        for level in [0u8, 1, 6, 9] {
            let z = miniz_oxide::deflate::compress_to_vec_zlib(&data, level);
            for n in [1usize, 1000, 65_535, 65_536, 100_001, 199_999, 200_000] {
                let p = super::decode_prefix(&z, n).unwrap();
                assert_eq!(p.len(), n);
                assert_eq!(p[..], data[..n], "level {level}, {n} bytes");
            }
            assert!(super::decode_prefix(&z, 200_001).is_err());
            assert!(super::decode_prefix(&z[..z.len() / 2], 150_000).is_err());
        }
        let mut bad = miniz_oxide::deflate::compress_to_vec_zlib(&data, 6);
        bad[1] ^= 0x01; // header check bits
        assert!(super::decode_prefix(&bad, 10).is_err());
    }
}
