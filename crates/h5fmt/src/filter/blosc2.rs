//! Blosc2 filter (registered id 32026), as written by the HDF5-Blosc2 plugin
//! (hdf5plugin `Blosc2`, PyTables, b2h5py).
//!
//! Each stored HDF5 chunk is one Blosc2 *contiguous frame* (cframe): a
//! msgpack header (magic `b2frame`, header and frame sizes, the frame's type
//! size and chunk size, then metalayers), the Blosc2 chunks, and an index
//! chunk of 64-bit chunk offsets (relative to the end of the header; an
//! offset whose top bit is set stands for a chunk of zeros, NaNs or
//! uninitialised values that is not stored).
//!
//! Without a `b2nd` (or older `caterva`) metalayer, the decoded HDF5 chunk is
//! the frame's first Blosc2 chunk. With one, the frame holds an
//! N-dimensional array (`shape`, `chunkshape`, `blockshape`): every Blosc2
//! chunk covers `chunkshape` padded up to whole blocks, each block holds
//! `blockshape` items in C order, and the decoded HDF5 chunk is the array
//! (`shape`, C order) without the padding. Client data `[revision, block
//! size, type size, chunk bytes, level, shuffle, codec, rank, dims...]`:
//! when a rank is given, the array's shape must equal those dims.
//!
//! A Blosc2 chunk has a 32-byte header (16 bytes for Blosc1-style chunks):
//! version, codec version, flags (0x01 and 0x04 both set: extended header;
//! 0x02 stored uncompressed; 0x10 blocks not split; bits 5..7 the codec:
//! 0 BloscLZ, 1 LZ4/LZ4HC, 3 zlib, 4 zstd, 6 user-defined), type size,
//! decoded size, block size, stored size (i32 LE); then six filter codes
//! (0 none, 1 shuffle, 2 bitshuffle, 3 delta, 4 truncated precision, which
//! needs no undoing), the user codec, codec meta, six filter metas, a second
//! flags byte (0x01 variable-length blocks: not supported) and the Blosc2
//! flags (0x01 dictionary: not supported; bits 4..6 a special chunk: 1
//! zeros, 2 NaN, 3 one repeated value stored after the header, 4
//! uninitialised, decoded as zeros). A regular chunk continues with the
//! block start offsets (i32 LE) and, per block, one stream, or one per byte
//! of the type when the block is a full one and the "not split" flag is
//! clear. A stream is its size (i32 LE; 0: all zeros; negative with token
//! bit 0: a run of the byte `-size`; equal to its decoded size: stored raw)
//! and the compressed bytes. The filters are undone per block, from the last
//! slot to the first; delta XORs each block with the first decoded block
//! (the first block with its own previous element).

use super::blosc::inflate;
use crate::error::{Error, Result};
use alloc::vec::Vec;

const MIN_HEADER: usize = 16;
const EXT_HEADER: usize = 32;
/// Largest rank of a b2nd array.
const MAX_DIM: usize = 8;
/// Index entries decoded beyond the chunks needed (a plain frame may hold
/// more chunks than the one the filter uses).
const INDEX_SLACK: usize = 8192;

const SPECIAL_ZERO: u8 = 1;
const SPECIAL_NAN: u8 = 2;
const SPECIAL_VALUE: u8 = 3;
const SPECIAL_UNINIT: u8 = 4;

fn corrupt(msg: &str) -> Error {
    super::corrupt(alloc::format!("blosc2: {msg}"))
}

fn unsupported(msg: &str) -> Error {
    Error::unsupported(alloc::format!("blosc2: {msg}"))
}

fn le_i32(d: &[u8], at: usize) -> Result<i32> {
    let s = at
        .checked_add(4)
        .and_then(|end| d.get(at..end))
        .ok_or_else(|| corrupt("chunk is truncated"))?;
    Ok(i32::from_le_bytes([s[0], s[1], s[2], s[3]]))
}

/// A non-negative little-endian i32 as a size.
fn le_size(d: &[u8], at: usize, what: &str) -> Result<usize> {
    usize::try_from(le_i32(d, at)?).map_err(|_| corrupt(&alloc::format!("negative {what}")))
}

/// The fields of a Blosc2 chunk header that decoding needs.
#[derive(Clone, Copy)]
struct Header {
    version: u8,
    flags: u8,
    typesize: usize,
    nbytes: usize,
    blocksize: usize,
    cbytes: usize,
    hlen: usize,
    filters: [u8; 6],
    filters_meta: [u8; 6],
    udcodec: u8,
    dict: bool,
    special: u8,
}

impl Header {
    /// A chunk that is not stored, only named by a special frame offset.
    fn special(special: u8, nbytes: usize, blocksize: usize, typesize: usize) -> Self {
        Header {
            version: 5,
            flags: 0x05,
            typesize,
            nbytes,
            blocksize: blocksize.min(nbytes).max(1),
            cbytes: 0,
            hlen: EXT_HEADER,
            filters: [0; 6],
            filters_meta: [0; 6],
            udcodec: 0,
            dict: false,
            special,
        }
    }

    fn nblocks(&self) -> usize {
        self.nbytes.div_ceil(self.blocksize)
    }

    /// Decoded size of block `j`.
    fn block_len(&self, j: usize) -> usize {
        let left = self.nbytes % self.blocksize;
        if j + 1 == self.nblocks() && left > 0 {
            left
        } else {
            self.blocksize
        }
    }
}

/// Read a chunk header at the start of `c`.
fn parse_header(c: &[u8]) -> Result<Header> {
    let h = c
        .get(..MIN_HEADER)
        .ok_or_else(|| corrupt("chunk header is truncated"))?;
    let (version, flags) = (h[0], h[2]);
    let typesize = usize::from(h[3]);
    let nbytes = le_size(h, 4, "chunk size")?;
    let mut blocksize = le_size(h, 8, "block size")?;
    let cbytes = le_size(h, 12, "stored chunk size")?;
    if typesize == 0 || blocksize == 0 {
        return Err(corrupt("type or block size is zero"));
    }
    if cbytes < MIN_HEADER || cbytes > c.len() {
        return Err(corrupt(&alloc::format!(
            "stored chunk size {cbytes} does not fit the {} bytes available",
            c.len()
        )));
    }
    let mut hd = Header {
        version,
        flags,
        typesize,
        nbytes,
        blocksize,
        cbytes,
        hlen: MIN_HEADER,
        filters: [0; 6],
        filters_meta: [0; 6],
        udcodec: 0,
        dict: false,
        special: 0,
    };
    if flags & 0x05 == 0x05 {
        let x = c
            .get(..EXT_HEADER)
            .filter(|_| cbytes >= EXT_HEADER)
            .ok_or_else(|| corrupt("extended chunk header is truncated"))?;
        hd.hlen = EXT_HEADER;
        hd.filters.copy_from_slice(&x[16..22]);
        hd.udcodec = x[22];
        hd.filters_meta.copy_from_slice(&x[24..30]);
        if version == 3 {
            // Blosc2 alpha left the last slot uninitialised.
            hd.filters[5] = 0;
            hd.filters_meta[5] = 0;
        }
        if x[30] & 0x01 != 0 {
            return Err(unsupported("variable-length blocks"));
        }
        if x[30] != 0 && version > 6 {
            return Err(unsupported(&alloc::format!(
                "chunk format version {version}"
            )));
        }
        hd.dict = x[31] & 0x01 != 0;
        if x[31] & 0x08 != 0 {
            return Err(corrupt("lazy chunk stored in a frame"));
        }
        hd.special = (x[31] >> 4) & 0x07;
    } else {
        // Blosc1-style flags name the filters.
        if flags & 0x08 != 0 {
            hd.filters[4] = 3;
        }
        if flags & 0x04 != 0 {
            hd.filters[5] = 2;
        } else if flags & 0x01 != 0 {
            hd.filters[5] = 1;
        }
    }
    if nbytes > 0 && blocksize > nbytes {
        blocksize = nbytes;
    }
    hd.blocksize = blocksize;
    Ok(hd)
}

/// Fill `blk` with the special value of `h` (from the chunk bytes `c`).
fn fill_special(h: &Header, c: &[u8], blk: &mut [u8]) -> Result<()> {
    match h.special {
        SPECIAL_ZERO | SPECIAL_UNINIT => blk.fill(0),
        SPECIAL_NAN => {
            let nan: &[u8] = match h.typesize {
                4 => &[0x00, 0x00, 0xc0, 0x7f],
                8 => &[0, 0, 0, 0, 0, 0, 0xf8, 0x7f],
                t => return Err(corrupt(&alloc::format!("NaN chunk of {t}-byte items"))),
            };
            for item in blk.chunks_mut(nan.len()) {
                item.copy_from_slice(nan.get(..item.len()).unwrap_or(&[]));
            }
        }
        SPECIAL_VALUE => {
            let v = c
                .get(EXT_HEADER..h.cbytes)
                .filter(|v| !v.is_empty() && h.nbytes.is_multiple_of(v.len()))
                .ok_or_else(|| corrupt("repeated-value chunk has a bad value size"))?;
            for item in blk.chunks_mut(v.len()) {
                item.copy_from_slice(v.get(..item.len()).unwrap_or(&[]));
            }
        }
        s => return Err(corrupt(&alloc::format!("special chunk kind {s}"))),
    }
    Ok(())
}

/// Decode the streams of block `j` (starting at `start` in `c`) into `out`.
fn read_streams(h: &Header, c: &[u8], j: usize, start: usize, out: &mut [u8]) -> Result<()> {
    let last_partial = j + 1 == h.nblocks() && !h.nbytes.is_multiple_of(h.blocksize);
    let nstreams = if h.flags & 0x10 == 0 && !last_partial {
        h.typesize
    } else {
        1
    };
    if !out.len().is_multiple_of(nstreams) {
        return Err(corrupt("block is not a whole number of streams"));
    }
    let neblock = out.len() / nstreams;
    let codec = h.flags >> 5;
    let mut pos = start;
    for dst in out.chunks_exact_mut(neblock.max(1)) {
        let csize = le_i32(c, pos)?;
        pos += 4;
        if csize == 0 {
            dst.fill(0);
        } else if csize < 0 {
            let token = c
                .get(pos)
                .copied()
                .ok_or_else(|| corrupt("stream token is truncated"))?;
            pos += 1;
            if token & 0x01 == 0 {
                return Err(unsupported(&alloc::format!("stream token {token:#x}")));
            }
            let v = u8::try_from(csize.unsigned_abs())
                .map_err(|_| corrupt("run of a value wider than a byte"))?;
            dst.fill(v);
        } else {
            let n = usize::try_from(csize).map_err(|_| corrupt("stream size"))?;
            let src = pos
                .checked_add(n)
                .and_then(|end| c.get(pos..end))
                .ok_or_else(|| corrupt("stream is truncated"))?;
            pos += n;
            if n == dst.len() {
                dst.copy_from_slice(src);
            } else {
                match codec {
                    0 | 1 | 3 | 4 => inflate(codec, src, dst)?,
                    6 => {
                        return Err(unsupported(&alloc::format!(
                            "user-defined codec {}",
                            h.udcodec
                        )))
                    }
                    c => return Err(unsupported(&alloc::format!("codec {c}"))),
                }
            }
        }
    }
    Ok(())
}

/// Element width the delta filter works in for `typesize`-byte items.
fn delta_width(typesize: usize) -> usize {
    match typesize {
        1 | 2 | 4 | 8 => typesize,
        t if t % 8 == 0 => 8,
        _ => 1,
    }
}

/// Undo the delta filter on `blk`: block 0 (`reference` is `None`) against
/// its own previous element, others against the decoded block 0.
fn undelta(blk: &mut [u8], typesize: usize, reference: Option<&[u8]>) {
    let w = delta_width(typesize);
    let body = blk.len() / w * w;
    match reference {
        None => {
            for i in w..body {
                blk[i] ^= blk[i - w];
            }
        }
        Some(r) => {
            for (b, &x) in blk.iter_mut().take(body).zip(r) {
                *b ^= x;
            }
        }
    }
}

/// Decode the chunk `c` with header `h`, giving each decoded block, in order,
/// to `sink(block index, bytes)`.
fn decode_blocks(
    h: &Header,
    c: &[u8],
    sink: &mut dyn FnMut(usize, &[u8]) -> Result<()>,
) -> Result<()> {
    if h.nbytes == 0 {
        return Ok(());
    }
    let nblocks = h.nblocks();
    if h.special != 0 {
        let mut blk = super::alloc_zeroed(h.blocksize)?;
        fill_special(h, c, &mut blk)?;
        for j in 0..nblocks {
            sink(j, blk.get(..h.block_len(j)).unwrap_or(&[]))?;
        }
        return Ok(());
    }
    if h.flags & 0x02 != 0 {
        let body = h
            .hlen
            .checked_add(h.nbytes)
            .filter(|&end| end == h.cbytes)
            .and_then(|end| c.get(h.hlen..end))
            .ok_or_else(|| corrupt("stored chunk size does not match its data"))?;
        for (j, blk) in body.chunks(h.blocksize).enumerate() {
            sink(j, blk)?;
        }
        return Ok(());
    }
    if h.dict {
        return Err(unsupported("codec dictionaries"));
    }
    if nblocks.saturating_mul(4) > h.cbytes.saturating_sub(h.hlen) {
        return Err(corrupt("block offsets are truncated"));
    }
    let mut a = super::alloc_zeroed(h.blocksize)?;
    let mut b = super::alloc_zeroed(h.blocksize)?;
    let uses_delta = h.filters.contains(&3);
    let mut reference: Option<Vec<u8>> = None;
    for j in 0..nblocks {
        let len = h.block_len(j);
        let start = le_size(c, h.hlen + 4 * j, "block offset")?;
        if start == 0 || start >= h.cbytes {
            return Err(corrupt("block offset outside the chunk"));
        }
        let (mut cur, mut spare) = (&mut a, &mut b);
        read_streams(h, c, j, start, cur.get_mut(..len).unwrap_or(&mut []))?;
        for (&f, &meta) in h.filters.iter().zip(&h.filters_meta).rev() {
            let (src, dst) = match (cur.get(..len), spare.get_mut(..len)) {
                (Some(s), Some(d)) => (s, d),
                _ => return Err(corrupt("block")),
            };
            match f {
                0 | 4 => continue,
                1 => {
                    let es = if meta == 0 {
                        h.typesize
                    } else {
                        usize::from(meta)
                    };
                    super::shuffle::unshuffle_into(src, es, dst);
                }
                2 => {
                    let n = len / h.typesize;
                    let m = if h.version == 2 && !n.is_multiple_of(8) {
                        0
                    } else {
                        n - n % 8
                    };
                    let body = m * h.typesize;
                    let (Some((sb, sr)), Some((db, dr))) =
                        (src.split_at_checked(body), dst.split_at_mut_checked(body))
                    else {
                        return Err(corrupt("block"));
                    };
                    super::bitshuffle::untranspose(sb, db, m, h.typesize);
                    dr.copy_from_slice(sr);
                }
                3 => {
                    let r = if j == 0 { None } else { reference.as_deref() };
                    if j > 0 && r.is_none() {
                        return Err(corrupt("delta block without a reference"));
                    }
                    undelta(cur.get_mut(..len).unwrap_or(&mut []), h.typesize, r);
                    continue;
                }
                f => return Err(unsupported(&alloc::format!("filter {f}"))),
            }
            core::mem::swap(&mut cur, &mut spare);
        }
        let out = cur.get(..len).unwrap_or(&[]);
        if j == 0 && uses_delta {
            reference = Some(out.to_vec());
        }
        sink(j, out)?;
    }
    Ok(())
}

/// A little msgpack reader over the frame header.
struct Mp<'a> {
    d: &'a [u8],
    pos: usize,
}

impl<'a> Mp<'a> {
    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let s = self
            .pos
            .checked_add(n)
            .and_then(|end| self.d.get(self.pos..end))
            .ok_or_else(|| corrupt("frame header is truncated"))?;
        self.pos += n;
        Ok(s)
    }

    fn u8(&mut self) -> Result<u8> {
        Ok(self.bytes(1)?[0])
    }

    fn expect(&mut self, marker: u8, what: &str) -> Result<()> {
        if self.u8()? == marker {
            Ok(())
        } else {
            Err(corrupt(&alloc::format!("frame header: bad {what} marker")))
        }
    }

    fn be(&mut self, n: usize) -> Result<u64> {
        Ok(self
            .bytes(n)?
            .iter()
            .fold(0u64, |acc, &b| (acc << 8) | u64::from(b)))
    }

    /// A msgpack int32 / int64 (markers 0xd2 / 0xd3), as a non-negative size.
    fn size(&mut self, marker: u8, what: &str) -> Result<usize> {
        self.expect(marker, what)?;
        let n = if marker == 0xd2 { 4 } else { 8 };
        let v = self.be(n)?;
        let neg = v >> (n * 8 - 1) != 0;
        usize::try_from(v)
            .ok()
            .filter(|_| !neg)
            .ok_or_else(|| corrupt(&alloc::format!("frame {what} out of range")))
    }

    /// A msgpack string (fixstr, str8/16/32).
    fn str(&mut self) -> Result<&'a [u8]> {
        let m = self.u8()?;
        let n = match m {
            0xa0..=0xbf => usize::from(m & 0x1f),
            0xd9 => usize::from(self.u8()?),
            0xda => usize::try_from(self.be(2)?).unwrap_or(usize::MAX),
            0xdb => usize::try_from(self.be(4)?).unwrap_or(usize::MAX),
            _ => return Err(corrupt("frame header: expected a string")),
        };
        self.bytes(n)
    }
}

/// The b2nd metalayer: shape, chunk shape, block shape.
struct Nd {
    shape: Vec<usize>,
    chunk: Vec<usize>,
    block: Vec<usize>,
}

/// Decode a `b2nd` / `caterva` metalayer body.
fn parse_nd(body: &[u8]) -> Result<Nd> {
    let mut m = Mp { d: body, pos: 0 };
    let _array = m.u8()?;
    let _version = m.u8()?;
    let ndim = usize::from(m.u8()?);
    if ndim > MAX_DIM {
        return Err(unsupported(&alloc::format!("b2nd rank {ndim}")));
    }
    let mut dims = |marker: u8| -> Result<Vec<usize>> {
        let _array = m.u8()?;
        (0..ndim)
            .map(|_| m.size(marker, "b2nd dimension"))
            .collect()
    };
    let shape = dims(0xd3)?;
    let chunk = dims(0xd2)?;
    let block = dims(0xd2)?;
    if chunk.iter().chain(&block).any(|&v| v == 0) {
        return Err(corrupt("b2nd chunk or block dimension is zero"));
    }
    if block.iter().zip(&chunk).any(|(b, c)| b > c) {
        return Err(corrupt("b2nd block is larger than its chunk"));
    }
    // Bounds the work per output item (padding included).
    if chunk.iter().zip(&shape).any(|(&c, &s)| c > s.max(1)) {
        return Err(corrupt("b2nd chunk is larger than its array"));
    }
    Ok(Nd {
        shape,
        chunk,
        block,
    })
}

/// What the frame header says.
struct Frame<'a> {
    /// The frame bytes (`..frame size`).
    data: &'a [u8],
    hlen: usize,
    /// Size of the chunks section (the index chunk follows it).
    cbytes: usize,
    typesize: usize,
    chunksize: usize,
    nbytes: usize,
    nd: Option<Nd>,
}

fn parse_frame(data: &[u8]) -> Result<Frame<'_>> {
    let mut m = Mp { d: data, pos: 0 };
    if m.u8()? & 0xf0 != 0x90 || m.str()? != b"b2frame\0" {
        return Err(corrupt("not a Blosc2 frame"));
    }
    let hlen = m.size(0xd2, "header size")?;
    m.expect(0xcf, "frame size")?;
    let flen = usize::try_from(m.be(8)?).unwrap_or(usize::MAX);
    let data = data
        .get(..flen)
        .ok_or_else(|| corrupt("frame is truncated"))?;
    if hlen > flen {
        return Err(corrupt("frame header is larger than the frame"));
    }
    let flags = m.str()?;
    let (general, ftype) = match flags {
        [g, t, _, _] => (*g, *t),
        _ => return Err(corrupt("frame flags")),
    };
    if (general >> 4) & 0x03 != 1 {
        return Err(unsupported("chunk offsets that are not 64-bit"));
    }
    if ftype & 0x0f != 0 {
        return Err(unsupported("sparse frame"));
    }
    let nbytes = m.size(0xd3, "uncompressed size")?;
    let cbytes = m.size(0xd3, "compressed size")?;
    let typesize = m.size(0xd2, "type size")?;
    let _blocksize = m.size(0xd2, "block size")?;
    let chunksize = m.size(0xd2, "chunk size")?;
    if typesize == 0 {
        return Err(corrupt("frame type size is zero"));
    }
    let _threads = m.bytes(6)?;
    let _has_vlmeta = m.u8()?;
    m.expect(0xd8, "filter pipeline")?;
    let _pipeline = m.bytes(17)?;
    let mut nd = None;
    if m.pos < hlen {
        let _array = m.u8()?;
        m.expect(0xcd, "metalayer index")?;
        let _idx = m.be(2)?;
        m.expect(0xde, "metalayer map")?;
        let n = m.be(2)?;
        for _ in 0..n {
            let name = m.str()?;
            let at = m.size(0xd2, "metalayer offset")?;
            if name == b"b2nd" || name == b"caterva" {
                let mut v = Mp { d: data, pos: at };
                v.expect(0xc6, "metalayer content")?;
                let len = usize::try_from(v.be(4)?).unwrap_or(usize::MAX);
                let body = v.bytes(len)?;
                if v.pos > hlen {
                    return Err(corrupt("metalayer outside the frame header"));
                }
                nd = Some(parse_nd(body)?);
                break;
            }
        }
    }
    Ok(Frame {
        data,
        hlen,
        cbytes,
        typesize,
        chunksize,
        nbytes,
        nd,
    })
}

impl Frame<'_> {
    /// The first `need` chunk offsets of the index (relative to the header
    /// end; special ones keep their top byte).
    fn offsets(&self, need: usize) -> Result<Vec<u64>> {
        let at = self
            .hlen
            .checked_add(self.cbytes)
            .filter(|&a| a <= self.data.len())
            .ok_or_else(|| corrupt("chunk index outside the frame"))?;
        let c = self.data.get(at..).unwrap_or(&[]);
        let h = parse_header(c)?;
        let limit = need.saturating_add(INDEX_SLACK).saturating_mul(8);
        if h.nbytes % 8 != 0 || h.nbytes / 8 < need || h.nbytes > limit {
            return Err(corrupt(&alloc::format!(
                "chunk index of {} bytes for {need} chunks",
                h.nbytes
            )));
        }
        let want = need.saturating_mul(8);
        let mut raw = Vec::new();
        raw.try_reserve_exact(want)
            .map_err(|_| Error::limit("blosc2 chunk index cannot be allocated"))?;
        decode_blocks(&h, c, &mut |_, blk| {
            let room = want.saturating_sub(raw.len());
            raw.extend_from_slice(blk.get(..room.min(blk.len())).unwrap_or(&[]));
            Ok(())
        })?;
        Ok(raw
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]))
            .collect())
    }

    /// The header and bytes of the chunk at index offset `off`; a special
    /// offset becomes a chunk of `nbytes` bytes in blocks of `blocksize`.
    fn chunk(&self, off: u64, nbytes: usize, blocksize: usize) -> Result<(Header, &[u8])> {
        if off >> 63 != 0 {
            #[allow(clippy::cast_possible_truncation)] // the top byte
            let special = (off >> 56) as u8 & 0x07;
            if !matches!(special, SPECIAL_ZERO | SPECIAL_NAN | SPECIAL_UNINIT) {
                return Err(corrupt(&alloc::format!("special chunk offset {off:#x}")));
            }
            let h = Header::special(special, nbytes, blocksize, self.typesize.min(255));
            return Ok((h, &[]));
        }
        let c = usize::try_from(off)
            .ok()
            .and_then(|o| o.checked_add(self.hlen))
            .and_then(|o| self.data.get(o..))
            .ok_or_else(|| corrupt("chunk offset outside the frame"))?;
        Ok((parse_header(c)?, c))
    }
}

fn product(dims: &[usize], item: usize) -> Option<usize> {
    dims.iter().try_fold(item, |acc, &d| acc.checked_mul(d))
}

/// Decode one stored HDF5 chunk (a Blosc2 frame), producing at most `bound` bytes.
pub(super) fn decode(data: &[u8], cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    let f = parse_frame(data)?;
    match &f.nd {
        Some(nd) => decode_nd(&f, nd, cd, bound),
        None => {
            let off = f.offsets(1)?;
            let first = off.first().copied().unwrap_or(0);
            let size = if f.chunksize > 0 {
                f.chunksize.min(f.nbytes)
            } else {
                f.nbytes
            };
            let (h, c) = f.chunk(first, size.min(bound.saturating_add(1)), size)?;
            if h.nbytes > bound {
                return Err(Error::limit(alloc::format!(
                    "blosc2 chunk of {} bytes exceeds {bound} bytes",
                    h.nbytes
                )));
            }
            let mut out = Vec::new();
            out.try_reserve_exact(h.nbytes)
                .map_err(|_| Error::limit("blosc2 output cannot be allocated"))?;
            decode_blocks(&h, c, &mut |_, blk| {
                out.extend_from_slice(blk);
                Ok(())
            })?;
            Ok(out)
        }
    }
}

/// Decode a b2nd frame: gather every chunk's blocks into the C-order array.
fn decode_nd(f: &Frame<'_>, nd: &Nd, cd: &[u32], bound: usize) -> Result<Vec<u8>> {
    let ts = f.typesize;
    if let Some(&rank) = cd.get(7) {
        let dims = cd.get(8..).unwrap_or(&[]);
        let same = usize::try_from(rank).is_ok_and(|r| r == nd.shape.len())
            && dims.len() >= nd.shape.len()
            && nd
                .shape
                .iter()
                .zip(dims)
                .all(|(&s, &d)| u64::try_from(s).is_ok_and(|s| s == u64::from(d)));
        if !same {
            return Err(corrupt("b2nd shape differs from the filter's chunk shape"));
        }
    }
    // A rank-0 array is one item.
    let one = [1usize];
    let (shape, chunk, block) = if nd.shape.is_empty() {
        (&one[..], &one[..], &one[..])
    } else {
        (&nd.shape[..], &nd.chunk[..], &nd.block[..])
    };
    let total = product(shape, ts)
        .filter(|&t| t <= bound)
        .ok_or_else(|| Error::limit(alloc::format!("b2nd array exceeds {bound} bytes")))?;
    let block_bytes = product(block, ts)
        .filter(|&b| b <= super::intermediate_bound(bound))
        .ok_or_else(|| Error::limit("b2nd block exceeds the chunk bound"))?;
    let ext: Vec<usize> = chunk
        .iter()
        .zip(block)
        .map(|(&c, &b)| c.div_ceil(b).saturating_mul(b))
        .collect();
    let chunk_bytes = product(&ext, ts).ok_or_else(|| corrupt("b2nd chunk size overflows"))?;
    let grid: Vec<usize> = shape
        .iter()
        .zip(chunk)
        .map(|(&s, &c)| s.div_ceil(c))
        .collect();
    let bgrid: Vec<usize> = ext.iter().zip(block).map(|(&e, &b)| e / b).collect();
    let nchunks = product(&grid, 1).unwrap_or(0);
    let mut out = super::alloc_zeroed(total)?;
    if total == 0 {
        return Ok(out);
    }
    let offsets = f.offsets(nchunks)?;
    let d = shape.len();
    // Item strides of the array (C order).
    let mut stride = alloc::vec![1usize; d];
    for i in (0..d.saturating_sub(1)).rev() {
        stride[i] = stride[i + 1] * shape[i + 1];
    }
    let rows = product(&block[..d - 1], 1).unwrap_or(0);
    let run_len = block[d - 1];
    for (k, &off) in offsets.iter().enumerate() {
        let (h, c) = f.chunk(off, chunk_bytes, block_bytes)?;
        if h.nbytes != chunk_bytes || h.blocksize != block_bytes.min(chunk_bytes) {
            return Err(corrupt(&alloc::format!(
                "b2nd chunk of {} bytes in blocks of {}, expected {chunk_bytes} in {block_bytes}",
                h.nbytes,
                h.blocksize
            )));
        }
        let korig = unravel(k, &grid, chunk);
        decode_blocks(&h, c, &mut |j, blk| {
            // Block origin inside the chunk.
            let borig = unravel(j, &bgrid, block);
            for r in 0..rows {
                // Row r of the block: the index over all but the last dim.
                let mut rem = r;
                let mut at = 0usize;
                let mut inside = true;
                for i in (0..d - 1).rev() {
                    let bi = rem % block[i];
                    rem /= block[i];
                    let local = borig[i] + bi;
                    let a = korig[i] + local;
                    if local >= chunk[i] || a >= shape[i] {
                        inside = false;
                        break;
                    }
                    at += a * stride[i];
                }
                let local = borig[d - 1];
                let a = korig[d - 1] + local;
                if !inside || local >= chunk[d - 1] || a >= shape[d - 1] {
                    continue;
                }
                let n = run_len.min(chunk[d - 1] - local).min(shape[d - 1] - a);
                at += a;
                let src = r * run_len * ts;
                let (Some(s), Some(o)) = (
                    blk.get(src..src + n * ts),
                    out.get_mut(at * ts..(at + n) * ts),
                ) else {
                    return Err(corrupt("b2nd block is truncated"));
                };
                o.copy_from_slice(s);
            }
            Ok(())
        })?;
    }
    Ok(out)
}

/// The origin (in items) of cell `index` of a C-order `grid` of cells of `cell` items.
fn unravel(index: usize, grid: &[usize], cell: &[usize]) -> Vec<usize> {
    let mut rem = index;
    let mut o = alloc::vec![0usize; grid.len()];
    for i in (0..grid.len()).rev() {
        let g = grid[i].max(1);
        o[i] = rem % g * cell[i];
        rem /= g;
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An extended chunk header.
    fn header(flags: u8, ts: u8, nbytes: i32, bs: i32, cbytes: i32, filters: [u8; 6]) -> Vec<u8> {
        let mut h = alloc::vec![5u8, 1, flags, ts];
        for v in [nbytes, bs, cbytes] {
            h.extend(v.to_le_bytes());
        }
        h.extend(filters);
        h.extend([0u8; 10]);
        h
    }

    fn collect(c: &[u8]) -> Result<Vec<u8>> {
        let h = parse_header(c)?;
        let mut out = Vec::new();
        decode_blocks(&h, c, &mut |_, b| {
            out.extend_from_slice(b);
            Ok(())
        })?;
        Ok(out)
    }

    #[test]
    fn memcpyed_and_special_chunks() {
        let mut c = header(0x07, 1, 4, 4, 36, [0; 6]);
        c.extend([1, 2, 3, 4]);
        assert_eq!(collect(&c).unwrap(), [1, 2, 3, 4]);
        // Stored size disagreeing with the data is an error, not a panic.
        c[12] = 35;
        assert!(collect(&c).is_err());
        // A repeated 2-byte value (special kind 3), 6 bytes in blocks of 4.
        let mut c = header(0x05, 2, 6, 4, 34, [0; 6]);
        c[31] = 3 << 4;
        c.extend([7, 8]);
        assert_eq!(collect(&c).unwrap(), [7, 8, 7, 8, 7, 8]);
        // NaN chunk of f32.
        let mut c = header(0x05, 4, 8, 8, 32, [0; 6]);
        c[31] = 2 << 4;
        assert_eq!(collect(&c).unwrap(), [0, 0, 0xc0, 0x7f, 0, 0, 0xc0, 0x7f]);
    }

    #[test]
    fn streams_runs_and_shuffle() {
        // 8 bytes of 2-byte items, one block, split into 2 streams: a run of
        // 5s and a raw stream; then byte-unshuffled.
        let mut c = header(0x05, 2, 8, 8, 0, [0, 0, 0, 0, 0, 1]);
        c.extend(36i32.to_le_bytes()); // block start
        c.extend((-5i32).to_le_bytes());
        c.push(1); // token: run
        c.extend(4i32.to_le_bytes());
        c.extend([1, 2, 3, 4]);
        let n = i32::try_from(c.len()).unwrap();
        c[12..16].copy_from_slice(&n.to_le_bytes());
        assert_eq!(collect(&c).unwrap(), [5, 1, 5, 2, 5, 3, 5, 4]);
        // A block offset past the end is an error.
        c[32] = 200;
        assert!(collect(&c).is_err());
    }

    #[test]
    fn delta_against_first_block() {
        let mut first = [1u8, 2, 3, 4];
        undelta(&mut first, 1, None);
        assert_eq!(first, [1, 3, 0, 4]);
        let mut other = [1u8, 1, 1, 1];
        undelta(&mut other, 1, Some(&first));
        assert_eq!(other, [0, 2, 1, 5]);
    }
}
