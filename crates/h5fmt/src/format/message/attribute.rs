//! Attribute message (0x000C), IV.A.2.m: versions 1–3.

use crate::codec::Cursor;
use crate::error::Result;
use crate::format::datatype::Datatype;
use crate::format::message::dataspace::Dataspace;
use crate::format::message::shared::SharedMessage;
use crate::Ctx;
use alloc::string::String;
use alloc::vec::Vec;

/// The datatype of an attribute: inline, or shared (a committed datatype or a SOHM entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaybeShared<T> {
    /// Stored in the message.
    Inline(T),
    /// A reference to a shared message.
    Shared(SharedMessage),
}

/// An attribute message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeMessage {
    /// Name.
    pub name: String,
    /// Datatype.
    pub dtype: MaybeShared<Datatype>,
    /// Dataspace.
    pub space: MaybeShared<Dataspace>,
    /// Raw data (number of elements × datatype size).
    pub data: Vec<u8>,
}

impl AttributeMessage {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
