//! Object header messages (spec section IV.A.2), one file per message type.
//! Each has `decode(cur, ctx)` that consumes the message body.

pub mod attribute;
pub mod attribute_info;
pub mod continuation;
pub mod dataspace;
pub mod external_files;
pub mod fill_value;
pub mod filter_pipeline;
pub mod group_info;
pub mod layout;
pub mod link;
pub mod link_info;
pub mod misc;
pub mod shared;
pub mod symbol_table;

pub use attribute::AttributeMessage;
pub use attribute_info::AttributeInfo;
pub use continuation::Continuation;
pub use dataspace::{Dataspace, SpaceKind};
pub use external_files::ExternalFiles;
pub use fill_value::{FillState, FillValue};
pub use filter_pipeline::{Filter, FilterPipeline};
pub use group_info::GroupInfo;
pub use layout::{ChunkIndex, ChunkedLayout, Layout};
pub use link::{Link, LinkTarget};
pub use link_info::LinkInfo;
pub use shared::{SharedMessage, SharedTarget};
pub use symbol_table::SymbolTableMessage;

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Message type numbers.
pub mod kind {
    /// NIL (padding).
    pub const NIL: u16 = 0x0000;
    /// Dataspace.
    pub const DATASPACE: u16 = 0x0001;
    /// Link info.
    pub const LINK_INFO: u16 = 0x0002;
    /// Datatype.
    pub const DATATYPE: u16 = 0x0003;
    /// Fill value (old).
    pub const FILL_VALUE_OLD: u16 = 0x0004;
    /// Fill value.
    pub const FILL_VALUE: u16 = 0x0005;
    /// Link.
    pub const LINK: u16 = 0x0006;
    /// External data files.
    pub const EXTERNAL_FILES: u16 = 0x0007;
    /// Data layout.
    pub const LAYOUT: u16 = 0x0008;
    /// Bogus (testing).
    pub const BOGUS: u16 = 0x0009;
    /// Group info.
    pub const GROUP_INFO: u16 = 0x000A;
    /// Filter pipeline.
    pub const FILTER_PIPELINE: u16 = 0x000B;
    /// Attribute.
    pub const ATTRIBUTE: u16 = 0x000C;
    /// Object comment.
    pub const COMMENT: u16 = 0x000D;
    /// Object modification time (old).
    pub const MTIME_OLD: u16 = 0x000E;
    /// Shared message table.
    pub const SOHM_TABLE: u16 = 0x000F;
    /// Object header continuation.
    pub const CONTINUATION: u16 = 0x0010;
    /// Symbol table.
    pub const SYMBOL_TABLE: u16 = 0x0011;
    /// Object modification time.
    pub const MTIME: u16 = 0x0012;
    /// B-tree 'K' values.
    pub const BTREE_K: u16 = 0x0013;
    /// Driver info.
    pub const DRIVER_INFO: u16 = 0x0014;
    /// Attribute info.
    pub const ATTRIBUTE_INFO: u16 = 0x0015;
    /// Object reference count.
    pub const REF_COUNT: u16 = 0x0016;
    /// File space info.
    pub const FSINFO: u16 = 0x0017;
    /// Metadata cache image (superblock extension; the cache image block
    /// then holds the current images of metadata such as object headers).
    pub const MDCI: u16 = 0x0018;
}

/// Message flag bits.
pub mod flags {
    /// Message data is constant.
    pub const CONSTANT: u8 = 0x01;
    /// Message is shared (body is a shared-message reference).
    pub const SHARED: u8 = 0x02;
    /// Message must not be shared.
    pub const DONT_SHARE: u8 = 0x04;
    /// Fail when writing if the type is unknown.
    pub const FAIL_IF_UNKNOWN_WRITE: u8 = 0x08;
    /// Set bit 5 when the type is unknown and the object is modified.
    pub const MARK_IF_UNKNOWN: u8 = 0x10;
    /// Was unknown and the object was modified.
    pub const WAS_UNKNOWN: u8 = 0x20;
    /// Shareable.
    pub const SHAREABLE: u8 = 0x40;
    /// Fail to open if the type is unknown ("fail if unknown always").
    pub const FAIL_IF_UNKNOWN_ALWAYS: u8 = 0x80;
}

/// One raw message of an object header, body not yet decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// Message type number (see [`kind`]).
    pub kind: u16,
    /// Message flags (see [`flags`]).
    pub flags: u8,
    /// Creation order, when the header tracks it.
    pub creation_order: Option<u16>,
    /// The message body.
    pub data: Vec<u8>,
    /// Absolute file offset of the body's first byte.
    pub offset: u64,
}

impl Message {
    /// A cursor over the body that reports absolute offsets.
    pub fn cursor(&self) -> crate::codec::Cursor<'_> {
        crate::codec::Cursor::new(&self.data, self.offset)
    }
    /// Whether the body is a shared-message reference rather than the message itself.
    pub fn is_shared(&self) -> bool {
        self.flags & flags::SHARED != 0
    }
}

/// The body the link info (0x0002) and attribute info (0x0015) messages
/// share: version 0, flags (bit 0: a maximum creation index of
/// `index_bytes` bytes follows; bit 1: the creation-order index address is
/// stored), fractal heap, name index, creation-order index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct DenseInfo {
    pub(crate) max_creation_index: Option<u64>,
    pub(crate) heap: Addr,
    pub(crate) name_index: Addr,
    pub(crate) order_index: Addr,
}

impl DenseInfo {
    /// Decode the shared body; `what` names the message in errors.
    pub(crate) fn decode(
        cur: &mut Cursor<'_>,
        ctx: Ctx,
        what: &str,
        index_bytes: usize,
    ) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("{what} message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !0x03 != 0 {
            return Err(Error::corrupt(
                alloc::format!("{what} flags {flags:#x}"),
                flags_at,
            ));
        }
        let max_creation_index = if flags & 0x01 != 0 {
            Some(cur.read_uint(index_bytes)?)
        } else {
            None
        };
        let heap = cur.read_addr(ctx.sizes)?;
        let name_index = cur.read_addr(ctx.sizes)?;
        let order_index = if flags & 0x02 != 0 {
            cur.read_addr(ctx.sizes)?
        } else {
            Addr::UNDEF
        };
        Ok(DenseInfo {
            max_creation_index,
            heap,
            name_index,
            order_index,
        })
    }

    /// Encode the shared body (version 0); `indexed` stores the
    /// creation-order index address (flag bit 1).
    pub(crate) fn encode(&self, enc: &mut Encoder, ctx: Ctx, index_bytes: usize, indexed: bool) {
        enc.put_u8(0);
        enc.put_u8(u8::from(self.max_creation_index.is_some()) | (u8::from(indexed) << 1));
        if let Some(m) = self.max_creation_index {
            enc.put_uint(m, index_bytes);
        }
        enc.put_addr(self.heap, ctx.sizes);
        enc.put_addr(self.name_index, ctx.sizes);
        if indexed {
            enc.put_addr(self.order_index, ctx.sizes);
        }
    }
}
