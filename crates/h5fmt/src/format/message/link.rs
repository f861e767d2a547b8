//! Link message (0x0006), IV.A.2.g.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};
use alloc::string::String;
use alloc::vec::Vec;

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Hard link to an object header.
    Hard(Addr),
    /// Soft link to a path.
    Soft(String),
    /// External link: file name and object path.
    External {
        /// File name.
        file: String,
        /// Path in that file.
        path: String,
    },
    /// Another user-defined link class (reported, not followed).
    UserDefined {
        /// Link class (≥ 65).
        class: u8,
        /// Raw link data.
        data: Vec<u8>,
    },
}

/// A link message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Link name.
    pub name: String,
    /// Creation order, when stored.
    pub creation_order: Option<u64>,
    /// Target.
    pub target: LinkTarget,
}

impl Link {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
