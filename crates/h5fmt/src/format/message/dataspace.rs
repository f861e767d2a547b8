//! Dataspace message (0x0001), IV.A.2.b: versions 1 and 2.

use crate::codec::Cursor;
use crate::error::Result;
use crate::Ctx;
use alloc::vec::Vec;

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
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
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
