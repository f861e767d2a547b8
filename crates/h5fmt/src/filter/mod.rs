//! Filters (decode direction): every output is bounded by the expected chunk size.
//!
//! [`decode_chunk`] undoes a dataset's filter pipeline on one stored chunk.
//! Each filter lives in its own module. Bounds: the last filter to be undone
//! (the first one applied on write) may produce at most `expected_len` bytes;
//! an intermediate stage may produce at most [`intermediate_bound`]`(expected_len)`
//! bytes (`expected_len + expected_len / 8 + 4096`), which covers checksums,
//! headers and the small growth of incompressible data inside stacked filters.
//! No filter allocates more than its bound, whatever sizes the stored bytes claim.

mod bitshuffle;
mod blosc;
mod blosc2;
mod bzip2;
mod deflate;
mod deflate_literals;
mod fletcher32;
mod lz4;
mod lzf;
mod nbit;
mod scaleoffset;
mod shuffle;
mod szip;
mod zstd;

use crate::error::{Error, ErrorKind, Result};
use crate::format::message::{Filter, FilterPipeline};

use alloc::format;
use alloc::vec::Vec;
pub use nbit::client_data as nbit_client_data;
pub use scaleoffset::{client_data as scaleoffset_client_data, SO_FLOAT_DSCALE, SO_INT};

/// Filter id of deflate (zlib).
pub const DEFLATE: u16 = 1;
/// Filter id of the byte shuffle.
pub const SHUFFLE: u16 = 2;
/// Filter id of the Fletcher-32 checksum.
pub const FLETCHER32: u16 = 3;
/// Filter id of szip.
pub const SZIP: u16 = 4;
/// Filter id of n-bit packing.
pub const NBIT: u16 = 5;
/// Filter id of scale-offset.
pub const SCALEOFFSET: u16 = 6;
/// Registered filter id of bzip2.
pub const BZIP2: u16 = 307;
/// Registered filter id of LZF.
pub const LZF: u16 = 32000;
/// Registered filter id of Blosc.
pub const BLOSC: u16 = 32001;
/// Registered filter id of LZ4.
pub const LZ4: u16 = 32004;
/// Registered filter id of bitshuffle.
pub const BITSHUFFLE: u16 = 32008;
/// Registered filter id of Zstandard.
pub const ZSTD: u16 = 32015;
/// Registered filter id of Blosc2.
pub const BLOSC2: u16 = 32026;

/// A human-readable name for a filter id (the well-known ones), for messages.
pub fn filter_name(id: u16) -> Option<&'static str> {
    Some(match id {
        DEFLATE => "deflate",
        SHUFFLE => "shuffle",
        FLETCHER32 => "fletcher32",
        SZIP => "szip",
        NBIT => "nbit",
        SCALEOFFSET => "scaleoffset",
        BZIP2 => "bzip2",
        LZF => "lzf",
        BLOSC => "blosc",
        LZ4 => "lz4",
        BITSHUFFLE => "bitshuffle",
        ZSTD => "zstd",
        305 => "lzo",
        32002 => "mafisc",
        32003 => "snappy",
        32006 => "cbf",
        32007 => "jpeg-xr",
        32009 => "spdp",
        32010 => "lpc-rice",
        32011 => "ccsds-123",
        32012 => "jpeg-ls",
        32013 => "zfp",
        32014 => "fpzip",
        32016 => "b3d",
        32017 => "sz",
        32018 => "fcidecomp",
        32019 => "jpeg",
        32020 => "vbz",
        32022 => "subfiling",
        32023 => "bitgroom",
        32024 => "granular bitround",
        32025 => "sz3",
        BLOSC2 => "blosc2",
        32028 => "bitround",
        _ => return None,
    })
}

/// Whether this build can decode filter `id`.
pub fn is_supported(id: u16) -> bool {
    matches!(
        id,
        DEFLATE
            | SHUFFLE
            | FLETCHER32
            | SZIP
            | NBIT
            | SCALEOFFSET
            | BZIP2
            | LZF
            | LZ4
            | ZSTD
            | BITSHUFFLE
            | BLOSC
            | BLOSC2
    )
}

/// The bound on the output of an intermediate pipeline stage for a chunk of
/// `expected_len` decoded bytes: `expected_len + expected_len / 8 + 4096`.
pub fn intermediate_bound(expected_len: usize) -> usize {
    expected_len
        .saturating_add(expected_len / 8)
        .saturating_add(4096)
}

fn describe(f: &Filter) -> alloc::string::String {
    match filter_name(f.id) {
        Some(n) => format!("filter {} ({n})", f.id),
        None => match &f.name {
            Some(n) if !n.is_empty() => format!("filter {} ({n})", f.id),
            _ => format!("filter {}", f.id),
        },
    }
}

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
    let applied = |i: usize| i >= 32 || filter_mask & (1u32 << i) == 0;
    // The first filter of the pipeline that was applied is the last one undone:
    // its output is the chunk itself and is bounded by `expected_len`.
    let first_applied = (0..pipeline.filters.len()).find(|&i| applied(i));
    let mut buf = data;
    for (i, f) in pipeline.filters.iter().enumerate().rev() {
        if !applied(i) {
            continue;
        }
        let bound = if Some(i) == first_applied {
            expected_len
        } else {
            intermediate_bound(expected_len)
        };
        buf = decode_one(f, buf, bound, element_size).map_err(|e| e.context(&describe(f)))?;
        if buf.len() > bound {
            return Err(Error::limit(format!(
                "{}: output of {} bytes exceeds the bound of {bound} bytes",
                describe(f),
                buf.len()
            )));
        }
    }
    Ok(buf)
}

/// As [`decode_chunk`], writing the decoded chunk into `out` (exactly
/// `expected_len` bytes) when the last filter to undo (the first one applied)
/// is the shuffle, deflate or zstd: that filter then writes straight into
/// `out` instead of a temporary that would be copied, and `Ok(None)` is
/// returned. Returns `Ok(Some(data))` (the input back, `out` untouched) when
/// that does not apply; the caller then uses [`decode_chunk`].
///
/// # Errors
/// As [`decode_chunk`]; `Corrupt` when the decoded chunk is not exactly
/// `out.len()` bytes.
pub fn decode_chunk_into(
    pipeline: &FilterPipeline,
    filter_mask: u32,
    data: Vec<u8>,
    element_size: usize,
    out: &mut [u8],
) -> Result<Option<Vec<u8>>> {
    let applied = |i: usize| i >= 32 || filter_mask & (1u32 << i) == 0;
    let Some(first) = (0..pipeline.filters.len()).find(|&i| applied(i)) else {
        return Ok(Some(data));
    };
    let Some(f) = pipeline.filters.get(first) else {
        return Ok(Some(data));
    };
    if !matches!(f.id, SHUFFLE | DEFLATE | ZSTD) || first >= 32 {
        return Ok(Some(data));
    }
    // Undo every filter but the last one (often none), then that one into `out`.
    let rest = if (first + 1..pipeline.filters.len()).any(applied) {
        decode_chunk(
            pipeline,
            filter_mask | (1u32 << first),
            data,
            intermediate_bound(out.len()),
            element_size,
        )?
    } else {
        data
    };
    let res = match f.id {
        SHUFFLE => {
            let es = match f.client_data.first() {
                Some(&n) => usize::try_from(n)
                    .map_err(|_| corrupt("shuffle element size does not fit in memory"))?,
                None => element_size,
            };
            if shuffle::unshuffle_into(&rest, es, out) {
                Ok(())
            } else {
                Err(Error::corrupt(
                    format!(
                        "decoded chunk has {} bytes, expected {}",
                        rest.len(),
                        out.len()
                    ),
                    0,
                ))
            }
        }
        DEFLATE => deflate::decode_into(&rest, out),
        _ => match zstd::decode_into(&rest, out) {
            Ok(n) if n == out.len() => Ok(()),
            Ok(n) => Err(corrupt(format!(
                "zstd data has {n} bytes, expected {}",
                out.len()
            ))),
            Err(e) => Err(e),
        },
    };
    crate::io::recycle(rest);
    res.map_err(|e| e.context(&describe(f)))?;
    Ok(None)
}

/// As [`decode_chunk`] (with `out` `None`) or [`decode_chunk_into`] (with
/// `out` of `expected_len` bytes), for a stored chunk borrowed in place (a
/// memory-mapped file): when the first filter to undo is deflate or zstd it
/// reads `data` where it lies, so the stored bytes are never copied.
///
/// # Errors
/// As [`decode_chunk_into`].
pub fn decode_chunk_borrowed(
    pipeline: &FilterPipeline,
    filter_mask: u32,
    data: &[u8],
    expected_len: usize,
    element_size: usize,
    out: Option<&mut [u8]>,
) -> Result<Option<Vec<u8>>> {
    let applied = |i: usize| i >= 32 || filter_mask & (1u32 << i) == 0;
    let n = pipeline.filters.len();
    let last = (0..n).rev().find(|&i| applied(i));
    let f = last.and_then(|i| pipeline.filters.get(i).map(|f| (i, f)));
    let (i, f) = match f {
        Some((i, f)) if i < 32 && matches!(f.id, DEFLATE | ZSTD) => (i, f),
        _ => {
            // Nothing to read in place: decode from a copy.
            let mut v = crate::io::scratch_buffer(data.len())?;
            v.copy_from_slice(data);
            return finish(pipeline, filter_mask, v, expected_len, element_size, out);
        }
    };
    let only = !(0..i).any(applied);
    let res = match (only, out) {
        (true, Some(o)) => {
            let r = match f.id {
                DEFLATE => deflate::decode_into(data, o),
                _ => match zstd::decode_into(data, o) {
                    Ok(k) if k == o.len() => Ok(()),
                    Ok(k) => Err(corrupt(format!(
                        "zstd data has {k} bytes, expected {}",
                        o.len()
                    ))),
                    Err(e) => Err(e),
                },
            };
            r.map(|()| None)
        }
        (only, out) => {
            let bound = if only {
                expected_len
            } else {
                intermediate_bound(expected_len)
            };
            let v = match f.id {
                DEFLATE => deflate::decode(data, bound),
                _ => zstd::decode(data, bound),
            };
            let v = v.map_err(|e| e.context(&describe(f)))?;
            let mask = filter_mask | (1u32 << i);
            return finish(pipeline, mask, v, expected_len, element_size, out);
        }
    };
    res.map_err(|e| e.context(&describe(f)))
}

/// `out` when `got`, the bytes a prefix decoder wrote into it, is all its
/// `n`; otherwise `out` goes back to the buffer pool and the error (or a
/// `what` stream ending early) is returned.
#[cfg(feature = "std")]
fn prefix_done(out: Vec<u8>, got: Result<usize>, n: usize, what: &str) -> Result<Vec<u8>> {
    match got {
        Ok(k) if k == n => Ok(out),
        Ok(k) => {
            crate::io::recycle(out);
            Err(corrupt(alloc::format!(
                "{what} stream ends after {k} bytes, expected {n} or more"
            )))
        }
        Err(e) => {
            crate::io::recycle(out);
            Err(e)
        }
    }
}

/// The first `n` bytes of a decoded chunk, for readers that need only a
/// chunk's first rows, when the chunk's filters allow stopping early:
/// deflate alone or deflate then fletcher32 (verified over the stored
/// bytes first), or zstd alone (libzstd: whole blocks up to the one
/// holding byte `n`), all applied. `None` when not (decode the whole chunk).
/// Deflate's adler32 covers the whole chunk and is not checked.
///
/// # Errors
/// As [`decode_chunk`] for the filters concerned.
#[cfg(feature = "std")]
pub(crate) fn decode_prefix(
    pipeline: &FilterPipeline,
    filter_mask: u32,
    data: &[u8],
    n: usize,
) -> Result<Option<Vec<u8>>> {
    if filter_mask != 0 {
        return Ok(None);
    }
    let (f, body) = match pipeline.filters.as_slice() {
        [d] if d.id == DEFLATE => (d, data),
        [d, c] if d.id == DEFLATE && c.id == FLETCHER32 => (
            d,
            fletcher32::check(data).map_err(|e| e.context(&describe(c)))?,
        ),
        [z] if z.id == ZSTD => {
            return zstd::decode_prefix(data, n).map_err(|e| e.context(&describe(z)));
        }
        _ => return Ok(None),
    };
    deflate::decode_prefix(body, n)
        .map(Some)
        .map_err(|e| e.context(&describe(f)))
}

/// Undo the rest of `pipeline` on `data`, into `out` when given and possible.
fn finish(
    pipeline: &FilterPipeline,
    filter_mask: u32,
    data: Vec<u8>,
    expected_len: usize,
    element_size: usize,
    out: Option<&mut [u8]>,
) -> Result<Option<Vec<u8>>> {
    let data = match out {
        Some(o) => match decode_chunk_into(pipeline, filter_mask, data, element_size, o)? {
            None => return Ok(None),
            Some(v) => v,
        },
        None => data,
    };
    decode_chunk(pipeline, filter_mask, data, expected_len, element_size).map(Some)
}

/// Undo one filter, producing at most `bound` bytes.
///
/// # Errors
/// As [`decode_chunk`].
pub fn decode_one(f: &Filter, data: Vec<u8>, bound: usize, element_size: usize) -> Result<Vec<u8>> {
    let cd = &f.client_data;
    let from_slice = |r: Result<Vec<u8>>, data: Vec<u8>| {
        crate::io::recycle(data);
        r
    };
    match f.id {
        DEFLATE => from_slice(deflate::decode(&data, bound), data),
        SHUFFLE => {
            let es = match cd.first() {
                Some(&n) => usize::try_from(n)
                    .map_err(|_| corrupt("shuffle element size does not fit in memory"))?,
                None => element_size,
            };
            shuffle::unshuffle(data, es)
        }
        FLETCHER32 => fletcher32::verify(data),
        NBIT => nbit::decode(&data, cd, bound),
        SCALEOFFSET => scaleoffset::decode(data, cd, bound),
        LZF => lzf::decode(&data, bound),
        LZ4 => lz4::decode(&data, bound),
        ZSTD => from_slice(zstd::decode(&data, bound), data),
        BZIP2 => bzip2::decode(&data, bound),
        SZIP => szip::decode(&data, cd, bound),
        BITSHUFFLE => bitshuffle::decode(&data, cd, bound),
        BLOSC => blosc::decode(&data, bound),
        BLOSC2 => blosc2::decode(&data, cd, bound),
        id => Err(Error::unsupported(match filter_name(id) {
            Some(n) => format!("filter {id} ({n}) unsupported"),
            None => format!("filter {id} unsupported"),
        })),
    }
}

/// `Corrupt` without a file offset (filter streams live in memory; the
/// caller adds the chunk's context).
#[cold]
pub(crate) fn corrupt(message: impl Into<alloc::string::String>) -> Error {
    Error::new(ErrorKind::Corrupt, message)
}

/// The big-endian `u32` at `at` (block sizes of the LZ4 and bitshuffle formats).
pub(crate) fn be_u32(d: &[u8], at: usize, what: &str) -> Result<u32> {
    let s = at
        .checked_add(4)
        .and_then(|end| d.get(at..end))
        .ok_or_else(|| corrupt(alloc::format!("{what} header is truncated")))?;
    Ok(u32::from_be_bytes([s[0], s[1], s[2], s[3]]))
}

/// A block stored as its byte count (u32 big-endian) and its bytes at
/// `*pos`, as the LZ4 and bitshuffle filter formats store compressed
/// blocks; `*pos` moves past it.
pub(crate) fn be_sized_block<'a>(data: &'a [u8], pos: &mut usize, what: &str) -> Result<&'a [u8]> {
    let csize = usize::try_from(be_u32(data, *pos, what)?)
        .map_err(|_| corrupt(alloc::format!("{what} block size")))?;
    let start = pos.saturating_add(4);
    let src = start
        .checked_add(csize)
        .and_then(|end| data.get(start..end))
        .ok_or_else(|| {
            corrupt(alloc::format!(
                "{what} block of {csize} bytes at {start} is truncated"
            ))
        })?;
    *pos = start + csize;
    Ok(src)
}

/// The 12-byte header shared by the LZ4 and bitshuffle filter formats: the
/// decoded size (u64 big-endian, checked against `bound`) and the block size
/// in bytes (u32 big-endian).
pub(crate) fn be_size_header(data: &[u8], bound: usize, what: &str) -> Result<(usize, usize)> {
    let hdr = data
        .get(..12)
        .ok_or_else(|| corrupt(alloc::format!("{what} header is truncated")))?;
    let mut t = [0u8; 8];
    t.copy_from_slice(&hdr[..8]);
    let t = u64::from_be_bytes(t);
    let total = usize::try_from(t)
        .ok()
        .filter(|&t| t <= bound)
        .ok_or_else(|| {
            Error::limit(alloc::format!(
                "{what} decoded size {t} exceeds {bound} bytes"
            ))
        })?;
    let block = usize::try_from(be_u32(data, 8, what)?)
        .map_err(|_| corrupt(alloc::format!("{what} block size")))?;
    Ok((total, block))
}

/// Allocate a zeroed output buffer of `len` bytes, failing (not aborting) when
/// the allocator cannot provide it.
pub(crate) fn alloc_zeroed(len: usize) -> Result<Vec<u8>> {
    crate::io::zeroed_buffer(len)
}

/// Run a chunk through `pipeline` in the write direction (first filter
/// first). Writes deflate (1), shuffle (2), fletcher32 (3), n-bit (5) and
/// scale-offset (6) (client data as libhdf5's `set_local` computes them:
/// [`nbit_client_data`], [`scaleoffset_client_data`]; the chunk must be a
/// whole chunk of `client_data[2]` elements), LZ4 (32004,
/// client data: block size in bytes, 0 for the plugin's default) and zstd
/// (32015, client data: level; needs `std`); `element_size` is the
/// shuffle's element size.
///
/// # Errors
/// `Unsupported` for a filter this library cannot encode (zstd without
/// `std`, scale-offset's E-scale method); `Limit` when the compressor
/// fails; `Usage` for n-bit or scale-offset client data that do not
/// describe the chunk.
pub fn encode_chunk(
    pipeline: &FilterPipeline,
    data: Vec<u8>,
    element_size: usize,
) -> Result<Vec<u8>> {
    encode_cow(pipeline, alloc::borrow::Cow::Owned(data), element_size)
}

/// As [`encode_chunk`], reading the chunk from a borrowed buffer (which
/// the caller may then reuse).
///
/// # Errors
/// As [`encode_chunk`].
pub fn encode_chunk_ref(
    pipeline: &FilterPipeline,
    data: &[u8],
    element_size: usize,
) -> Result<Vec<u8>> {
    encode_cow(pipeline, alloc::borrow::Cow::Borrowed(data), element_size)
}

fn encode_cow(
    pipeline: &FilterPipeline,
    data: alloc::borrow::Cow<'_, [u8]>,
    element_size: usize,
) -> Result<Vec<u8>> {
    let mut data = data;
    for f in &pipeline.filters {
        data = alloc::borrow::Cow::Owned(match f.id {
            DEFLATE => {
                #[allow(clippy::cast_possible_truncation)] // level clamped to 0..=9
                let level = f.client_data.first().copied().unwrap_or(6).min(9) as u8;
                deflate::encode(&data, level)
            }
            SHUFFLE => {
                let es = f
                    .client_data
                    .first()
                    .and_then(|&v| usize::try_from(v).ok())
                    .unwrap_or(element_size);
                shuffle::shuffle(&data, es)
            }
            FLETCHER32 => fletcher32::append(data.into_owned()),
            NBIT => nbit::encode(&data, &f.client_data)?,
            SCALEOFFSET => scaleoffset::encode(&data, &f.client_data)?,
            LZ4 => {
                let block = f
                    .client_data
                    .first()
                    .and_then(|&v| usize::try_from(v).ok())
                    .unwrap_or(0);
                lz4::encode(&data, block)
            }
            ZSTD => {
                #[allow(clippy::cast_possible_wrap)] // levels are small; negative ones wrap back
                let level = f.client_data.first().map_or(3, |&v| v as i32);
                zstd::encode(&data, level)?
            }
            id => {
                return Err(Error::unsupported(format!(
                    "writing with filter {id} ({})",
                    filter_name(id).unwrap_or("unknown")
                )))
            }
        });
    }
    Ok(data.into_owned())
}

/// Reusable buffers of one thread encoding chunks with [`encode_chunk_into`].
#[derive(Debug, Default)]
pub struct EncodeScratch {
    shuffled: Vec<u8>,
}

/// Encode the chunk `data` through `pipeline` as [`encode_chunk`] does,
/// into `out`; returns the encoded length: the chunk is `out[..n]` (`out`
/// may be longer). For the common pipelines (an optional shuffle followed
/// by deflate or zstd) the shuffle goes into `scratch` and the compressor
/// writes straight into `out`, so a thread reusing both allocates nothing
/// per chunk; other pipelines take the general path.
///
/// # Errors
/// As [`encode_chunk`].
pub fn encode_chunk_into(
    pipeline: &FilterPipeline,
    data: &[u8],
    element_size: usize,
    scratch: &mut EncodeScratch,
    out: &mut Vec<u8>,
) -> Result<usize> {
    let shuffle_es = |f: &Filter| {
        f.client_data
            .first()
            .and_then(|&v| usize::try_from(v).ok())
            .unwrap_or(element_size)
    };
    let compress = |f: &Filter, input: &[u8], out: &mut Vec<u8>| -> Result<usize> {
        if f.id == DEFLATE {
            #[allow(clippy::cast_possible_truncation)] // level clamped to 0..=9
            let level = f.client_data.first().copied().unwrap_or(6).min(9) as u8;
            Ok(deflate::encode_into(input, level, out))
        } else {
            #[allow(clippy::cast_possible_wrap)] // levels are small; negative ones wrap back
            let level = f.client_data.first().map_or(3, |&v| v as i32);
            zstd::encode_into(input, level, out)
        }
    };
    let codec = |f: &Filter| f.id == DEFLATE || f.id == ZSTD;
    match pipeline.filters.as_slice() {
        [s, c] if s.id == SHUFFLE && codec(c) => {
            shuffle::shuffle_into(data, shuffle_es(s), &mut scratch.shuffled);
            compress(c, &scratch.shuffled, out)
        }
        [c] if codec(c) => compress(c, data, out),
        _ => {
            *out = encode_chunk_ref(pipeline, data, element_size)?;
            Ok(out.len())
        }
    }
}

/// Whether this build can encode filter `id` (see [`encode_chunk`]).
pub fn can_encode(id: u16) -> bool {
    matches!(
        id,
        DEFLATE | SHUFFLE | FLETCHER32 | NBIT | SCALEOFFSET | LZ4 | ZSTD
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pipeline(ids: &[u16]) -> FilterPipeline {
        FilterPipeline {
            filters: ids
                .iter()
                .map(|&id| Filter {
                    id,
                    name: None,
                    flags: 0,
                    client_data: if id == DEFLATE {
                        alloc::vec![6]
                    } else {
                        Vec::new()
                    },
                })
                .collect(),
        }
    }

    fn sample(n: usize) -> Vec<u8> {
        (0..n).map(|i| ((i * 31) ^ (i >> 7)) as u8).collect()
    }

    #[test]
    fn encode_into_reuses_buffers_and_matches_encode_chunk() {
        // Chunks of decreasing then increasing size through the same
        // scratch and output buffers give the same streams as encode_chunk,
        // and decode back (the shuffle to planes is checked independently
        // in shuffle.rs against its definition).
        let mut ids: Vec<&[u16]> =
            alloc::vec![&[SHUFFLE, DEFLATE], &[DEFLATE], &[SHUFFLE, FLETCHER32]];
        if can_encode(ZSTD) {
            ids.push(&[SHUFFLE, ZSTD]);
            ids.push(&[ZSTD]);
        }
        for ids in ids {
            let p = pipeline(ids);
            let mut scratch = EncodeScratch::default();
            let mut out = Vec::new();
            for n in [80_000usize, 1000, 8, 0, 65_541] {
                let data = sample(n);
                let k = encode_chunk_into(&p, &data, 8, &mut scratch, &mut out).unwrap();
                let want = encode_chunk(&p, data.clone(), 8).unwrap();
                assert_eq!(&out[..k], &want[..], "{ids:?} {n}");
                let back = decode_chunk(&p, 0, out[..k].to_vec(), n, 8).unwrap();
                assert_eq!(back, data, "{ids:?} {n}");
            }
        }
    }

    #[test]
    fn deflate_decodes_in_place_exactly() {
        let data = sample(10_000);
        // Stream made by miniz_oxide (a different inflater than the std decoder's).
        let z = miniz_oxide::deflate::compress_to_vec_zlib(&data, 6);
        for ids in [&[DEFLATE][..], &[DEFLATE, FLETCHER32], &[SHUFFLE, DEFLATE]] {
            let p = pipeline(ids);
            let stored = encode_chunk(&p, data.clone(), 4).unwrap();
            let mut out = alloc::vec![0u8; data.len()];
            assert!(decode_chunk_into(&p, 0, stored, 4, &mut out)
                .unwrap()
                .is_none());
            assert_eq!(out, data, "{ids:?}");
        }
        let p = pipeline(&[DEFLATE]);
        // One byte short of the stream: Limit; one byte more: Corrupt.
        let mut small = alloc::vec![0u8; data.len() - 1];
        let e = decode_chunk_into(&p, 0, z.clone(), 1, &mut small).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        let mut big = alloc::vec![0u8; data.len() + 1];
        let e = decode_chunk_into(&p, 0, z.clone(), 1, &mut big).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        // A flipped adler32 byte is caught.
        let mut bad = z.clone();
        if let Some(b) = bad.last_mut() {
            *b ^= 1;
        }
        let mut out = alloc::vec![0u8; data.len()];
        let e = decode_chunk_into(&p, 0, bad, 1, &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        // Truncated stream.
        let e = decode_chunk_into(&p, 0, z[..z.len() / 2].to_vec(), 1, &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
        // Masked deflate (filter 0 not applied): not handled in place.
        assert!(decode_chunk_into(&p, 1, data.clone(), 1, &mut out)
            .unwrap()
            .is_some());
    }

    #[test]
    fn borrowed_input_matches_owned() {
        let data = sample(40_000);
        for ids in [
            &[DEFLATE][..],
            &[SHUFFLE, DEFLATE],
            &[DEFLATE, FLETCHER32],
            &[SHUFFLE, DEFLATE, FLETCHER32],
            &[SHUFFLE],
        ] {
            let p = pipeline(ids);
            let stored = encode_chunk(&p, data.clone(), 8).unwrap();
            for mask in [0u32, 1] {
                // With mask 1 the first filter was not applied on write.
                let stored = if mask == 1 {
                    let q = FilterPipeline {
                        filters: p.filters.iter().skip(1).cloned().collect(),
                    };
                    encode_chunk(&q, data.clone(), 8).unwrap()
                } else {
                    stored.clone()
                };
                let owned = decode_chunk(&p, mask, stored.clone(), data.len(), 8).unwrap();
                assert_eq!(owned, data, "{ids:?} mask {mask}");
                let b = decode_chunk_borrowed(&p, mask, &stored, data.len(), 8, None).unwrap();
                assert_eq!(b.as_deref(), Some(&data[..]), "{ids:?} mask {mask}");
                let mut out = alloc::vec![0u8; data.len()];
                match decode_chunk_borrowed(&p, mask, &stored, data.len(), 8, Some(&mut out))
                    .unwrap()
                {
                    None => assert_eq!(out, data, "{ids:?} mask {mask}"),
                    Some(v) => assert_eq!(v, data, "{ids:?} mask {mask}"),
                }
            }
        }
        // A stream holding more than the chunk: Limit, borrowed or not.
        let p = pipeline(&[DEFLATE]);
        let z = encode_chunk(&p, data.clone(), 1).unwrap();
        let e = decode_chunk_borrowed(&p, 0, &z, data.len() - 1, 1, None).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    }
}
