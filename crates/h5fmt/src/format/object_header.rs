//! Object headers, spec IV.A: version 1 and version 2 (`OHDR`/`OCHK`) prefixes
//! and message lists. Continuations are followed by [`crate::read::object_header`].

use crate::format::message::Message;
use alloc::vec::Vec;

/// A fully read object header: all messages of all chunks, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectHeader {
    /// Header version (1 or 2).
    pub version: u8,
    /// v2 flags (0 for v1).
    pub flags: u8,
    /// Object reference count (1 when not stored).
    pub refcount: u32,
    /// Messages in order, NIL and continuation messages included.
    pub messages: Vec<Message>,
}

impl ObjectHeader {
    /// The first message of `kind`.
    pub fn find(&self, kind: u16) -> Option<&Message> {
        self.messages.iter().find(|m| m.kind == kind)
    }
    /// All messages of `kind`.
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.kind == kind)
    }
}
