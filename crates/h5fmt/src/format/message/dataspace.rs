//! Dataspace message (0x0001), IV.A.2.b: versions 1 and 2.

use crate::codec::Cursor;
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
