//! Dataspace message (0x0001), IV.A.2.b: versions 1 and 2.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::vec::Vec;

/// libhdf5's maximum dataspace rank (`H5S_MAX_RANK`).
pub const MAX_RANK: usize = 32;

/// Dataspace class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SpaceKind {
    /// One element, no dimensions.
    Scalar,
    /// An n-dimensional array.
    Simple,
    /// No elements.
    Null,
}

/// The shape of a dataset or attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataspace {
    /// Class.
    pub kind: SpaceKind,
    /// Current dimension sizes (empty for scalar and null).
    pub dims: Vec<u64>,
    /// Maximum sizes, [`Dataspace::UNLIMITED`] for unlimited; `None` when not stored.
    pub max_dims: Option<Vec<u64>>,
}

impl Dataspace {
    /// Marker for an unlimited maximum dimension.
    pub const UNLIMITED: u64 = u64::MAX;

    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Limit` (rank).
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 && version != 2 {
            return Err(Error::corrupt(
                alloc::format!("dataspace message version {version}"),
                at,
            ));
        }
        let rank_at = cur.offset();
        let rank = usize::from(cur.read_u8()?);
        if rank > MAX_RANK {
            return Err(Error::corrupt(
                alloc::format!("dataspace rank {rank} exceeds {MAX_RANK}"),
                rank_at,
            ));
        }
        if rank > ctx.limits.max_rank {
            return Err(Error::limit(alloc::format!(
                "dataspace rank {rank} exceeds the limit {}",
                ctx.limits.max_rank
            ))
            .with_offset(rank_at));
        }
        let flags = cur.read_u8()?;
        let kind = if version == 1 {
            // reserved byte + 4 reserved bytes
            cur.skip(5)?;
            if rank > 0 {
                SpaceKind::Simple
            } else {
                SpaceKind::Scalar
            }
        } else {
            let kind_at = cur.offset();
            match cur.read_u8()? {
                0 => SpaceKind::Scalar,
                1 => SpaceKind::Simple,
                2 => SpaceKind::Null,
                t => {
                    return Err(Error::corrupt(
                        alloc::format!("dataspace type {t}"),
                        kind_at,
                    ))
                }
            }
        };
        if kind != SpaceKind::Simple && rank != 0 {
            return Err(Error::corrupt(
                alloc::format!("{kind:?} dataspace with rank {rank}"),
                rank_at,
            ));
        }
        cur.ensure_count(rank as u64, usize::from(ctx.sizes.lengths))?;
        let mut dims = Vec::with_capacity(rank);
        for _ in 0..rank {
            dims.push(cur.read_len(ctx.sizes)?);
        }
        let max_dims = if flags & 0x01 != 0 {
            cur.ensure_count(rank as u64, usize::from(ctx.sizes.lengths))?;
            let mut m = Vec::with_capacity(rank);
            for _ in 0..rank {
                m.push(cur.read_len_opt(ctx.sizes)?.unwrap_or(Self::UNLIMITED));
            }
            Some(m)
        } else {
            None
        };
        // Version 1 may store a permutation index per dimension; libhdf5 never
        // implemented it and skips the field, as do we.
        if version == 1 && flags & 0x02 != 0 {
            let n = rank
                .checked_mul(usize::from(ctx.sizes.lengths))
                .ok_or_else(|| cur.corrupt("permutation size"))?;
            cur.skip(n)?;
        }
        Ok(Dataspace {
            kind,
            dims,
            max_dims,
        })
    }

    /// The maximum sizes, with the current sizes standing in when none are stored
    /// (libhdf5's `H5Sget_simple_extent_dims` behaviour).
    pub fn max_dims_or_dims(&self) -> &[u64] {
        self.max_dims.as_deref().unwrap_or(&self.dims)
    }

    /// Number of elements (1 for scalar, 0 for null); `None` on overflow.
    pub fn num_elements(&self) -> Option<u64> {
        match self.kind {
            SpaceKind::Null => Some(0),
            SpaceKind::Scalar => Some(1),
            SpaceKind::Simple => self.dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d)),
        }
    }
}

impl Dataspace {
    /// Encode the message body in `version` 1 (earliest format; a scalar is
    /// rank 0, a null dataspace cannot be written) or 2.
    ///
    /// # Errors
    /// `Usage` for a null dataspace in version 1, a rank above 32, or
    /// maximum sizes of another rank or smaller than the current ones.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, version: u8) -> Result<()> {
        if self.dims.len() > MAX_RANK {
            return Err(Error::usage(alloc::format!(
                "rank {} above 32",
                self.dims.len()
            )));
        }
        if let Some(m) = &self.max_dims {
            if m.len() != self.dims.len() || m.iter().zip(&self.dims).any(|(m, d)| m < d) {
                return Err(Error::usage(
                    "maximum shape smaller than the shape, or of another rank",
                ));
            }
        }
        #[allow(clippy::cast_possible_truncation)] // rank ≤ 32
        let rank = self.dims.len() as u8;
        let flags = u8::from(self.max_dims.is_some());
        if version == 1 {
            if self.kind == SpaceKind::Null {
                return Err(Error::usage(
                    "a null dataspace needs dataspace message version 2",
                ));
            }
            enc.put_u8(1);
            enc.put_u8(rank);
            enc.put_u8(flags);
            enc.put_zeros(5);
        } else {
            enc.put_u8(2);
            enc.put_u8(rank);
            enc.put_u8(flags);
            enc.put_u8(match self.kind {
                SpaceKind::Scalar => 0,
                SpaceKind::Simple => 1,
                SpaceKind::Null => 2,
            });
        }
        for &d in &self.dims {
            enc.put_len(d, ctx.sizes);
        }
        if let Some(m) = &self.max_dims {
            for &d in m {
                enc.put_len(d, ctx.sizes);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn dec(b: &[u8]) -> Result<Dataspace> {
        Dataspace::decode(&mut Cursor::new(b, 0), Ctx::default())
    }

    #[test]
    fn v1_simple_with_max_and_permutation() {
        let mut b = alloc::vec![1u8, 2, 0x03, 0, 0, 0, 0, 0];
        for d in [3u64, 4, 10, u64::MAX, 0, 1] {
            b.extend_from_slice(&d.to_le_bytes());
        }
        let mut c = Cursor::new(&b, 0);
        let s = Dataspace::decode(&mut c, Ctx::default()).unwrap();
        assert_eq!(s.kind, SpaceKind::Simple);
        assert_eq!(s.dims, [3, 4]);
        assert_eq!(s.max_dims, Some(alloc::vec![10, Dataspace::UNLIMITED]));
        assert!(c.is_empty(), "permutation consumed");
        assert_eq!(s.num_elements(), Some(12));
    }

    #[test]
    fn v1_rank0_is_scalar() {
        let s = dec(&[1, 0, 0, 0, 0, 0, 0, 0]).unwrap();
        assert_eq!(s.kind, SpaceKind::Scalar);
        assert!(s.dims.is_empty());
        assert_eq!(s.num_elements(), Some(1));
    }

    #[test]
    fn v2_kinds() {
        assert_eq!(dec(&[2, 0, 0, 0]).unwrap().kind, SpaceKind::Scalar);
        let n = dec(&[2, 0, 0, 2]).unwrap();
        assert_eq!(n.kind, SpaceKind::Null);
        assert_eq!(n.num_elements(), Some(0));
        let mut b = alloc::vec![2u8, 1, 1, 1];
        b.extend_from_slice(&5u64.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        let s = dec(&b).unwrap();
        assert_eq!(s.dims, [5]);
        assert_eq!(s.max_dims_or_dims(), [Dataspace::UNLIMITED]);
        assert_eq!(dec(&[2, 0, 0, 3]).unwrap_err().kind(), ErrorKind::Corrupt);
        assert_eq!(dec(&[2, 1, 0, 1]).unwrap_err().kind(), ErrorKind::Truncated);
    }

    #[test]
    fn rank_limits() {
        // rank 33 is beyond libhdf5's H5S_MAX_RANK
        assert_eq!(
            dec(&[1, 33, 0, 0, 0, 0, 0, 0]).unwrap_err().kind(),
            ErrorKind::Corrupt
        );
        let mut ctx = Ctx::default();
        ctx.limits.max_rank = 2;
        let e = Dataspace::decode(&mut Cursor::new(&[2, 3, 0, 1], 0), ctx).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        // 4-byte lengths
        let ctx = Ctx {
            sizes: crate::Sizes {
                offsets: 4,
                lengths: 4,
            },
            ..Ctx::default()
        };
        let s = Dataspace::decode(&mut Cursor::new(&[2, 1, 0, 1, 7, 0, 0, 0], 0), ctx).unwrap();
        assert_eq!(s.dims, [7]);
    }
}
