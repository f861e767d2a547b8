//! Blosc filter (registered id 32001): one Blosc 1 frame per chunk.
//!
//! Frame header (16 bytes): version, codec version, flags, type size,
//! decoded size (u32 LE), block size (u32 LE), frame size (u32 LE). Flags:
//! 0x01 byte shuffle, 0x02 stored uncompressed (the data follows the
//! header), 0x04 bit shuffle, 0x10 blocks are not split, bits 5..7 the codec
//! (0 BloscLZ, 1 LZ4, 3 zlib, 4 zstd; 2 snappy is not supported).
//!
//! Otherwise a table of block start offsets (u32 LE, from the frame start)
//! follows; each block is stored as one stream, or, when it is a full block
//! with at most 16-byte types of at least 128 elements and the "not split"
//! flag is clear, as one stream per byte of the type. Each stream is its
//! compressed size (u32 LE) and the data; a stream whose size equals its
//! decoded size is stored raw. The (bit) shuffle is undone per block.

use crate::error::{Error, Result};
use alloc::vec::Vec;

const MAX_SPLITS: usize = 16;
const MIN_BUFFERSIZE: usize = 128;
/// BloscLZ's longest 13-bit match distance.
const MAX_DISTANCE: usize = 8191;

fn le_u32(d: &[u8], at: usize) -> Result<usize> {
    let s = at
        .checked_add(4)
        .and_then(|end| d.get(at..end))
        .ok_or_else(|| super::corrupt("blosc frame is truncated"))?;
    usize::try_from(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .map_err(|_| super::corrupt("blosc size too large"))
}

/// Decompress one BloscLZ stream into `out`, returning the decoded length.
pub(super) fn blosclz(src: &[u8], out: &mut [u8]) -> Result<usize> {
    let bad = || super::corrupt("invalid blosclz stream");
    let mut ip = 0usize;
    let mut op = 0usize;
    let next = |ip: &mut usize| -> Result<usize> {
        let b = src.get(*ip).copied().ok_or_else(bad)?;
        *ip += 1;
        Ok(usize::from(b))
    };
    if src.is_empty() {
        return Ok(0);
    }
    let mut ctrl = next(&mut ip)? & 31;
    loop {
        if ctrl >= 32 {
            let mut len = (ctrl >> 5) - 1;
            let ofs = (ctrl & 31) << 8;
            if len == 6 {
                loop {
                    let c = next(&mut ip)?;
                    len += c;
                    if c != 255 {
                        break;
                    }
                }
            }
            let code = next(&mut ip)?;
            len += 3;
            let dist = if code == 255 && ofs == 31 << 8 {
                let hi = next(&mut ip)?;
                let lo = next(&mut ip)?;
                (hi << 8) + lo + MAX_DISTANCE + 1
            } else {
                ofs + code + 1
            };
            if dist > op || op + len > out.len() {
                return Err(bad());
            }
            // Forward byte copy: overlapping matches repeat the pattern.
            for i in op..op + len {
                out[i] = out[i - dist];
            }
            op += len;
        } else {
            let n = ctrl + 1;
            let s = src.get(ip..ip + n).ok_or_else(bad)?;
            out.get_mut(op..op + n).ok_or_else(bad)?.copy_from_slice(s);
            ip += n;
            op += n;
        }
        if ip >= src.len() {
            break;
        }
        ctrl = next(&mut ip)?;
    }
    Ok(op)
}

/// Decompress one stream with codec `codec` into `out` (exactly its length).
pub(super) fn inflate(codec: u8, src: &[u8], out: &mut [u8]) -> Result<()> {
    let want = out.len();
    let got = match codec {
        0 => blosclz(src, out)?,
        1 => lz4_flex::block::decompress_into(src, out)
            .map_err(|e| super::corrupt(alloc::format!("invalid lz4 block in blosc: {e}")))?,
        3 => {
            let v = super::deflate::decode(src, want)?;
            let n = v.len();
            out.get_mut(..n)
                .ok_or_else(|| super::corrupt("blosc zlib stream too long"))?
                .copy_from_slice(&v);
            n
        }
        4 => super::zstd::decode_into(src, out)?,
        2 => return Err(Error::unsupported("blosc codec snappy")),
        c => return Err(Error::unsupported(alloc::format!("blosc codec {c}"))),
    };
    if got != want {
        return Err(super::corrupt(alloc::format!(
            "blosc stream decoded to {got} bytes, expected {want}"
        )));
    }
    Ok(())
}

/// Decode one Blosc 1 frame, producing at most `bound` bytes.
pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    let hdr = data
        .get(..16)
        .ok_or_else(|| super::corrupt("blosc header is truncated"))?;
    let flags = hdr[2];
    let typesize = usize::from(hdr[3]);
    let nbytes = le_u32(hdr, 4)?;
    let blocksize = le_u32(hdr, 8)?;
    let cbytes = le_u32(hdr, 12)?;
    if hdr[0] > 2 {
        return Err(Error::unsupported(alloc::format!(
            "blosc frame version {}",
            hdr[0]
        )));
    }
    if nbytes > bound {
        return Err(Error::limit(alloc::format!(
            "blosc decoded size {nbytes} exceeds {bound} bytes"
        )));
    }
    let frame = data
        .get(..cbytes)
        .ok_or_else(|| super::corrupt("blosc frame is truncated"))?;
    if flags & 0x02 != 0 {
        let body = frame
            .get(16..)
            .and_then(|b| b.get(..nbytes))
            .ok_or_else(|| super::corrupt("blosc stored frame is truncated"))?;
        return Ok(body.to_vec());
    }
    if nbytes == 0 {
        return Ok(Vec::new());
    }
    if blocksize == 0 || typesize == 0 {
        return Err(super::corrupt("blosc block or type size is zero"));
    }
    let codec = flags >> 5;
    let dont_split = flags & 0x10 != 0;
    let nblocks = nbytes.div_ceil(blocksize);
    let leftover = nbytes % blocksize;
    if nblocks.saturating_mul(4) > frame.len() {
        return Err(super::corrupt("blosc block table is truncated"));
    }
    let mut out = super::alloc_zeroed(nbytes)?;
    let mut tmp = super::alloc_zeroed(blocksize.min(nbytes))?;
    for j in 0..nblocks {
        let last = j + 1 == nblocks && leftover > 0;
        let bsize = if last { leftover } else { blocksize };
        let mut pos = le_u32(frame, 16 + 4 * j)?;
        let nsplits =
            if !dont_split && typesize <= MAX_SPLITS && bsize / typesize >= MIN_BUFFERSIZE && !last
            {
                typesize
            } else {
                1
            };
        let split = bsize / nsplits;
        let buf = tmp
            .get_mut(..bsize)
            .ok_or_else(|| super::corrupt("blosc block"))?;
        for s in 0..nsplits {
            let csize = le_u32(frame, pos)?;
            pos += 4;
            let src = pos
                .checked_add(csize)
                .and_then(|end| frame.get(pos..end))
                .ok_or_else(|| super::corrupt("blosc stream is truncated"))?;
            pos += csize;
            let dst = buf
                .get_mut(s * split..(s + 1) * split)
                .ok_or_else(|| super::corrupt("blosc block"))?;
            if csize == split {
                dst.copy_from_slice(src);
            } else {
                inflate(codec, src, dst)?;
            }
        }
        let dst = out
            .get_mut(j * blocksize..j * blocksize + bsize)
            .ok_or_else(|| super::corrupt("blosc block"))?;
        if flags & 0x01 != 0 && typesize > 1 {
            dst.copy_from_slice(&super::shuffle::unshuffle(buf.to_vec(), typesize)?);
        } else if flags & 0x04 != 0 && bsize >= typesize {
            let n = bsize / typesize;
            if n % 8 == 0 {
                let body = n * typesize;
                super::bitshuffle::untranspose(&buf[..body], &mut dst[..body], n, typesize);
                dst[body..].copy_from_slice(&buf[body..]);
            } else {
                dst.copy_from_slice(buf);
            }
        } else {
            dst.copy_from_slice(buf);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blosclz_literals_and_matches() {
        // Literal run of 3 ("abc"), then a match of length 3+1=4 at distance 3
        // (ctrl = (len-2+1)<<5 | ofs_hi, code = dist-1), then literal "z".
        let src = [2, b'a', b'b', b'c', (2 << 5), 2, 0, b'z'];
        let mut out = [0u8; 8];
        assert_eq!(blosclz(&src, &mut out).unwrap(), 8);
        assert_eq!(&out, b"abcabcaz");
        // Distance beyond the output so far, and output overflow, are errors.
        assert!(blosclz(&[0, b'a', (2 << 5), 5, 0, b'z'], &mut [0u8; 8]).is_err());
        assert!(blosclz(&src, &mut [0u8; 7]).is_err());
    }
}
