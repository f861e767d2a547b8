//! Serialized dataspace selections, as stored in the global heap for region
//! references (old `H5T_STD_REF_DSETREG` and new `H5T_STD_REF` region
//! references) and in virtual dataset layouts.
//!
//! The spec describes them with the region reference encoding (IV.B /
//! "Global Heap" objects); libhdf5 writes them with `H5S_SELECT_SERIALIZE`.
//! Every selection starts with a 4-byte selection type:
//! `0` none, `1` points, `2` hyperslabs, `3` all. Then:
//! - none / all, version 1: 4-byte version, 4 reserved bytes, 4-byte length (0).
//! - points, version 1: version, 4 reserved, length, rank (4), count (4), then
//!   `count × rank` 4-byte coordinates. Version 2: version, encoded size `e`
//!   (1 byte: 2, 4 or 8), rank (4), count (`e`), coordinates (`e` each).
//! - hyperslabs, version 1: version, 4 reserved, length, rank (4), block count
//!   (4), then per block `rank` 4-byte start and `rank` 4-byte end coordinates
//!   (inclusive). Version 2: version, flags (1), length (4), rank (4), then with
//!   the "regular" flag per dimension start, stride, count, block (8 bytes each).
//!   Version 3: version, flags (1), encoded size `e` (1), rank (4), then either
//!   (regular) start/stride/count/block per dimension in `e` bytes each, or a
//!   block count and block corners in `e` bytes each. A count or block of all
//!   ones means "unlimited" (virtual datasets only).
//!
//! [`Selection::encode`] writes them back: none/all version 1; points
//! version 1 (version 2 with `modern` or when a coordinate needs more than
//! 4 bytes); regular hyperslabs version 2 (8-byte values, readable since
//! libhdf5 1.10) or, with `modern`, version 3 with the smallest encoded
//! size; block lists version 1 (version 3 with `modern` or for coordinates
//! above 4 bytes).

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::vec::Vec;

/// "Unlimited" count or block of a regular hyperslab.
pub const UNLIMITED: u64 = u64::MAX;

/// One dimension of a regular hyperslab.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RegularDim {
    /// First selected index.
    pub start: u64,
    /// Distance between block starts.
    pub stride: u64,
    /// Number of blocks ([`UNLIMITED`] possible).
    pub count: u64,
    /// Block length ([`UNLIMITED`] possible).
    pub block: u64,
}

/// A decoded dataspace selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Selection {
    /// Nothing selected.
    None,
    /// The whole extent of the dataspace it is applied to.
    All,
    /// A list of points.
    Points {
        /// Rank of the dataspace.
        rank: usize,
        /// `npoints × rank` coordinates, point after point.
        coords: Vec<u64>,
    },
    /// A regular hyperslab: one [`RegularDim`] per dimension.
    Regular(Vec<RegularDim>),
    /// A list of blocks.
    Blocks {
        /// Rank of the dataspace.
        rank: usize,
        /// Per block, `rank` start then `rank` end coordinates (inclusive).
        corners: Vec<u64>,
    },
}

fn read_enc(cur: &mut Cursor<'_>, enc: usize) -> Result<u64> {
    cur.read_uint(enc)
}

fn read_rank(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<usize> {
    let at = cur.offset();
    let rank = cur.read_u32()?;
    let rank = usize::try_from(rank).unwrap_or(usize::MAX);
    if rank == 0 || rank > ctx.limits.max_rank {
        return Err(Error::corrupt(
            alloc::format!("selection of rank {rank}"),
            at,
        ));
    }
    Ok(rank)
}

fn check_enc(cur: &Cursor<'_>, enc: u8) -> Result<usize> {
    match enc {
        2 | 4 | 8 => Ok(usize::from(enc)),
        _ => Err(cur.corrupt(alloc::format!("selection encoding size {enc}"))),
    }
}

/// Read `n` coordinates of `enc` bytes each, after checking they are present.
fn read_coords(cur: &mut Cursor<'_>, n: u64, enc: usize) -> Result<Vec<u64>> {
    let n = cur.ensure_count(n, enc)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(read_enc(cur, enc)?);
    }
    Ok(v)
}

/// A `Usage` error of the selection encoder.
fn usage(m: &str) -> Error {
    Error::usage(alloc::format!("selection: {m}"))
}

/// `n` as the 32-bit length field of a version 1 selection.
fn len32(n: usize) -> Result<u32> {
    u32::try_from(n).map_err(|_| usage("too large to serialize"))
}

/// Smallest encoded size whose all-ones value ("unlimited") is above every
/// value stored.
fn enc_size(max: u64) -> usize {
    if max < u64::from(u16::MAX) {
        2
    } else if max < u64::from(u32::MAX) {
        4
    } else {
        8
    }
}

/// A point list (`kind` 1) or a hyperslab block list (`kind` 2) of `n`
/// entries of `values`: version 1 (32-bit values) unless `modern` or a
/// value needs more, else version 2 (points) / 3 (hyperslabs, flags 0)
/// with the smallest value size.
fn put_list(
    enc: &mut Encoder,
    kind: u32,
    rank: usize,
    n: usize,
    values: &[u64],
    modern: bool,
) -> Result<()> {
    let max = values.iter().copied().max().unwrap_or(0);
    enc.put_u32(kind);
    if !modern && max <= u64::from(u32::MAX) {
        enc.put_u32(1);
        enc.put_u32(0);
        let body = values
            .len()
            .checked_mul(4)
            .and_then(|b| b.checked_add(8))
            .ok_or_else(|| usage("too large to serialize"))?;
        enc.put_u32(len32(body)?);
        enc.put_u32(len32(rank)?);
        enc.put_u32(len32(n)?);
        for &v in values {
            enc.put_uint(v, 4);
        }
    } else {
        let e = enc_size(max.max(n as u64));
        if kind == 1 {
            enc.put_u32(2);
        } else {
            enc.put_u32(3);
            enc.put_u8(0);
        }
        #[allow(clippy::cast_possible_truncation)] // 2, 4 or 8
        enc.put_u8(e as u8);
        enc.put_u32(len32(rank)?);
        enc.put_uint(n as u64, e);
        for &v in values {
            enc.put_uint(v, e);
        }
    }
    Ok(())
}

impl Selection {
    /// Decode a serialized selection (starting with its 4-byte type).
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` (bad type, version, rank or encoded size).
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let kind = cur.read_u32()?;
        let version = cur.read_u32()?;
        match kind {
            0 | 3 => {
                if version != 1 {
                    return Err(Error::corrupt(
                        alloc::format!("selection version {version}"),
                        at,
                    ));
                }
                cur.skip(8)?;
                Ok(if kind == 0 {
                    Selection::None
                } else {
                    Selection::All
                })
            }
            1 => {
                let (enc, rank, n) = match version {
                    1 => {
                        cur.skip(8)?;
                        let rank = read_rank(cur, ctx)?;
                        (4, rank, u64::from(cur.read_u32()?))
                    }
                    2 => {
                        let e = cur.read_u8()?;
                        let enc = check_enc(cur, e)?;
                        let rank = read_rank(cur, ctx)?;
                        (enc, rank, read_enc(cur, enc)?)
                    }
                    _ => {
                        return Err(Error::corrupt(
                            alloc::format!("point selection version {version}"),
                            at,
                        ))
                    }
                };
                let total = n
                    .checked_mul(rank as u64)
                    .ok_or_else(|| cur.corrupt("point count"))?;
                let coords = read_coords(cur, total, enc)?;
                Ok(Selection::Points { rank, coords })
            }
            2 => {
                let (flags, enc) = match version {
                    1 => {
                        cur.skip(8)?;
                        (0u8, 4usize)
                    }
                    2 => {
                        let flags = cur.read_u8()?;
                        cur.skip(4)?;
                        (flags, 8)
                    }
                    3 => {
                        let flags = cur.read_u8()?;
                        let e = cur.read_u8()?;
                        (flags, check_enc(cur, e)?)
                    }
                    _ => {
                        return Err(Error::corrupt(
                            alloc::format!("hyperslab selection version {version}"),
                            at,
                        ))
                    }
                };
                if flags & !1 != 0 {
                    return Err(cur.corrupt(alloc::format!("hyperslab selection flags {flags:#x}")));
                }
                let rank = read_rank(cur, ctx)?;
                if flags & 1 != 0 {
                    let all_ones = if enc >= 8 {
                        u64::MAX
                    } else {
                        (1u64 << (8 * enc)) - 1
                    };
                    let mut dims = Vec::with_capacity(rank);
                    for _ in 0..rank {
                        let start = read_enc(cur, enc)?;
                        let stride = read_enc(cur, enc)?;
                        let mut count = read_enc(cur, enc)?;
                        let mut block = read_enc(cur, enc)?;
                        if count == all_ones {
                            count = UNLIMITED;
                        }
                        if block == all_ones {
                            block = UNLIMITED;
                        }
                        dims.push(RegularDim {
                            start,
                            stride,
                            count,
                            block,
                        });
                    }
                    Ok(Selection::Regular(dims))
                } else {
                    let nblocks = read_enc(cur, enc)?;
                    let total = nblocks
                        .checked_mul(2 * rank as u64)
                        .ok_or_else(|| cur.corrupt("hyperslab block count"))?;
                    let corners = read_coords(cur, total, enc)?;
                    for b in corners.chunks_exact(2 * rank.max(1)) {
                        let (lo, hi) = b.split_at(rank);
                        if lo.iter().zip(hi).any(|(l, h)| h < l) {
                            return Err(Error::corrupt(
                                "hyperslab block ends before it starts",
                                at,
                            ));
                        }
                    }
                    Ok(Selection::Blocks { rank, corners })
                }
            }
            _ => Err(Error::corrupt(alloc::format!("selection type {kind}"), at)),
        }
    }

    /// Encode the selection (starting with its 4-byte type) in the versions
    /// the module documentation lists; `modern` picks libhdf5 1.12's
    /// versions (points 2, hyperslabs 3) as libhdf5 2.0 writes them under
    /// `libver="latest"`.
    ///
    /// # Errors
    /// `Usage` for a selection [`Selection::decode`] would refuse: rank 0 or
    /// above 32, coordinates that are not a whole number of points or blocks
    /// of the rank, a block ending before it starts, an unlimited count or
    /// block in a block list or a point, a length that does not fit 32 bits.
    pub fn encode(&self, enc: &mut Encoder, modern: bool) -> Result<()> {
        let bad = usage;
        let check_rank = |rank: usize| {
            if rank == 0 || rank > 32 {
                Err(bad("rank must be 1..=32"))
            } else {
                Ok(())
            }
        };
        match self {
            Selection::None | Selection::All => {
                enc.put_u32(if *self == Selection::None { 0 } else { 3 });
                enc.put_u32(1);
                enc.put_zeros(8);
            }
            Selection::Points { rank, coords } => {
                check_rank(*rank)?;
                if !coords.len().is_multiple_of(*rank) {
                    return Err(bad("point coordinates are not a whole number of points"));
                }
                put_list(enc, 1, *rank, coords.len() / rank, coords, modern)?;
            }
            Selection::Regular(dims) => {
                check_rank(dims.len())?;
                if dims
                    .iter()
                    .any(|d| d.start == UNLIMITED || d.stride == UNLIMITED)
                {
                    return Err(bad("an unlimited start or stride"));
                }
                enc.put_u32(2);
                if modern {
                    let max = dims
                        .iter()
                        .flat_map(|d| [d.start, d.stride, d.count, d.block])
                        .filter(|&v| v != UNLIMITED)
                        .max()
                        .unwrap_or(0);
                    let e = enc_size(max);
                    enc.put_u32(3);
                    enc.put_u8(1);
                    enc.put_u8(e as u8);
                    enc.put_u32(len32(dims.len())?);
                    let ones = if e >= 8 {
                        u64::MAX
                    } else {
                        (1u64 << (8 * e)) - 1
                    };
                    for d in dims {
                        for v in [d.start, d.stride, d.count, d.block] {
                            enc.put_uint(if v == UNLIMITED { ones } else { v }, e);
                        }
                    }
                } else {
                    enc.put_u32(2);
                    enc.put_u8(1);
                    enc.put_u32(len32(4 + 32 * dims.len())?);
                    enc.put_u32(len32(dims.len())?);
                    for d in dims {
                        for v in [d.start, d.stride, d.count, d.block] {
                            enc.put_u64(v);
                        }
                    }
                }
            }
            Selection::Blocks { rank, corners } => {
                check_rank(*rank)?;
                if !corners.len().is_multiple_of(2 * rank) {
                    return Err(bad("block corners are not a whole number of blocks"));
                }
                for b in corners.chunks_exact(2 * rank) {
                    let (lo, hi) = b.split_at(*rank);
                    if lo.iter().zip(hi).any(|(l, h)| h < l) {
                        return Err(bad("a block ends before it starts"));
                    }
                }
                put_list(enc, 2, *rank, corners.len() / (2 * rank), corners, modern)?;
            }
        }
        Ok(())
    }

    /// The rank the selection was serialized with (`None` for none/all).
    pub fn rank(&self) -> Option<usize> {
        match self {
            Selection::None | Selection::All => None,
            Selection::Points { rank, .. } | Selection::Blocks { rank, .. } => Some(*rank),
            Selection::Regular(d) => Some(d.len()),
        }
    }

    /// Number of selected elements within a dataspace of dimensions `extent`
    /// (only needed for [`Selection::All`]).
    ///
    /// # Errors
    /// `Usage` when `extent` is needed and missing; `Unsupported` for unlimited
    /// hyperslabs; `Corrupt` on overflow.
    pub fn npoints(&self, extent: Option<&[u64]>) -> Result<u64> {
        let overflow = || Error::corrupt("selection size overflows", 0);
        match self {
            Selection::None => Ok(0),
            Selection::All => {
                let e = extent.ok_or_else(|| {
                    Error::usage("an \"all\" selection needs the dataspace extent")
                })?;
                e.iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .ok_or_else(overflow)
            }
            Selection::Points { rank, coords } => Ok((coords.len() / (*rank).max(1)) as u64),
            Selection::Regular(dims) => dims.iter().try_fold(1u64, |a, d| {
                if d.count == UNLIMITED || d.block == UNLIMITED {
                    return Err(Error::unsupported("unlimited hyperslab selection"));
                }
                a.checked_mul(d.count)
                    .and_then(|a| a.checked_mul(d.block))
                    .ok_or_else(overflow)
            }),
            Selection::Blocks { rank, corners } => {
                let mut total = 0u64;
                for b in corners.chunks_exact(2 * (*rank).max(1)) {
                    let (lo, hi) = b.split_at(*rank);
                    let n = lo
                        .iter()
                        .zip(hi)
                        .try_fold(1u64, |a, (l, h)| {
                            a.checked_mul(h.saturating_sub(*l).checked_add(1)?)
                        })
                        .ok_or_else(overflow)?;
                    total = total.checked_add(n).ok_or_else(overflow)?;
                }
                Ok(total)
            }
        }
    }

    /// The bounding box (low corner, high corner, inclusive) of the selection
    /// within a dataspace of dimensions `extent` (only needed for
    /// [`Selection::All`]); `None` when nothing is selected.
    ///
    /// # Errors
    /// As [`Selection::npoints`].
    pub fn bounds(&self, extent: Option<&[u64]>) -> Result<Option<(Vec<u64>, Vec<u64>)>> {
        if self.npoints(extent)? == 0 {
            return Ok(None);
        }
        let overflow = || Error::corrupt("selection bounds overflow", 0);
        match self {
            Selection::None => Ok(None),
            Selection::All => {
                let e = extent.unwrap_or(&[]);
                Ok(Some((
                    alloc::vec![0; e.len()],
                    e.iter().map(|d| d.saturating_sub(1)).collect(),
                )))
            }
            Selection::Points { rank, coords } => {
                let mut lo = alloc::vec![u64::MAX; *rank];
                let mut hi = alloc::vec![0u64; *rank];
                for p in coords.chunks_exact((*rank).max(1)) {
                    for ((l, h), &c) in lo.iter_mut().zip(hi.iter_mut()).zip(p) {
                        *l = (*l).min(c);
                        *h = (*h).max(c);
                    }
                }
                Ok(Some((lo, hi)))
            }
            Selection::Regular(dims) => {
                let lo = dims.iter().map(|d| d.start).collect();
                let mut hi = Vec::with_capacity(dims.len());
                for d in dims {
                    // start + stride × (count − 1) + block − 1; count, block ≥ 1 here
                    let h = d
                        .stride
                        .checked_mul(d.count.saturating_sub(1))
                        .and_then(|x| x.checked_add(d.start))
                        .and_then(|x| x.checked_add(d.block.saturating_sub(1)))
                        .ok_or_else(overflow)?;
                    hi.push(h);
                }
                Ok(Some((lo, hi)))
            }
            Selection::Blocks { rank, corners } => {
                let mut lo = alloc::vec![u64::MAX; *rank];
                let mut hi = alloc::vec![0u64; *rank];
                for b in corners.chunks_exact(2 * (*rank).max(1)) {
                    let (bl, bh) = b.split_at(*rank);
                    for i in 0..*rank {
                        if let (Some(l), Some(h), Some(x), Some(y)) =
                            (lo.get_mut(i), hi.get_mut(i), bl.get(i), bh.get(i))
                        {
                            *l = (*l).min(*x);
                            *h = (*h).max(*y);
                        }
                    }
                }
                Ok(Some((lo, hi)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn le(v: &[u64], width: usize) -> Vec<u8> {
        v.iter()
            .flat_map(|x| x.to_le_bytes().into_iter().take(width))
            .collect()
    }

    #[test]
    fn hyperslab_version_2_regular() {
        // Hand-built per H5S__hyper_serialize: type 2, version 2, flags 1 (regular),
        // length, rank 2, then start/stride/count/block as 8-byte values.
        let mut b = le(&[2, 2], 4);
        b.push(1);
        b.extend(le(&[64, 2], 4));
        b.extend(le(&[1, 3, 2, 2, 0, 1, 1, 5], 8));
        let s = Selection::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        // rows {1,2} and {4,5}, columns 0..=4
        assert_eq!(s.npoints(None).unwrap(), 20);
        assert_eq!(
            s.bounds(None).unwrap(),
            Some((alloc::vec![1, 0], alloc::vec![5, 4]))
        );
        // an unlimited count (all ones) cannot be sized without an extent
        let mut u = b.clone();
        let n = u.len();
        u[n - 16..n - 8].copy_from_slice(&u64::MAX.to_le_bytes());
        let s = Selection::decode(&mut Cursor::new(&u, 0), Ctx::default()).unwrap();
        assert_eq!(
            s.npoints(None).unwrap_err().kind(),
            crate::ErrorKind::Unsupported
        );
    }

    #[test]
    fn rejects_bad_selections() {
        let ctx = Ctx::default();
        let bad = |b: &[u8]| {
            Selection::decode(&mut Cursor::new(b, 0), ctx)
                .unwrap_err()
                .kind()
        };
        assert_eq!(bad(&le(&[7, 1, 0, 0], 4)), crate::ErrorKind::Corrupt); // type 7
                                                                           // points v1 announcing 2^32-1 points of rank 32 in a few bytes
        let mut p = le(&[1, 1, 0, 0, 32, 0xffff_ffff], 4);
        p.extend([0; 8]);
        assert_eq!(bad(&p), crate::ErrorKind::Truncated);
        // rank 0
        assert_eq!(bad(&le(&[1, 1, 0, 0, 0, 0], 4)), crate::ErrorKind::Corrupt);
        // block whose end precedes its start
        let b = le(&[2, 1, 0, 0, 1, 1, 5, 4], 4);
        assert_eq!(bad(&b), crate::ErrorKind::Corrupt);
    }
}
