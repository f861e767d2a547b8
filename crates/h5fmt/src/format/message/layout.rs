//! Data layout message (0x0008), IV.A.2.i: versions 1–5.

use crate::codec::Cursor;
use crate::error::Result;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// How chunk addresses are indexed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChunkIndex {
    /// Version 1 B-tree (layout v1–v3, and v4 index type 0 does not exist).
    BTreeV1 {
        /// Root node address.
        addr: Addr,
    },
    /// Single chunk (layout v4/v5 type 1).
    SingleChunk {
        /// Chunk address.
        addr: Addr,
        /// Filtered size and filter mask, when the dataset has filters.
        filtered: Option<(u64, u32)>,
    },
    /// Implicit index (type 2): chunks stored contiguously in order.
    Implicit {
        /// Address of the first chunk.
        addr: Addr,
    },
    /// Fixed array (type 3).
    FixedArray {
        /// Header address.
        addr: Addr,
        /// log2 of elements per data block page.
        page_bits: u8,
    },
    /// Extensible array (type 4).
    ExtensibleArray {
        /// Header address.
        addr: Addr,
        /// Max bits of elements in the index block (stored in the message).
        max_bits: u8,
        /// Index block elements.
        index_elements: u8,
        /// Minimum pointers in a data block.
        min_pointers: u8,
        /// Minimum elements in a data block.
        min_elements: u8,
        /// log2 of max elements in a data block page.
        page_bits: u8,
    },
    /// Version 2 B-tree (type 5).
    BTreeV2 {
        /// Header address.
        addr: Addr,
        /// Node size.
        node_size: u32,
        /// Split percent.
        split_percent: u8,
        /// Merge percent.
        merge_percent: u8,
    },
}

/// Chunked layout properties.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChunkedLayout {
    /// Chunk dimensions in elements (rank of the dataspace; the trailing
    /// element-size dimension of layout v1–v3 is removed and kept in `element_size`).
    pub dims: Vec<u64>,
    /// The element size stored as the last dimension in layout v1–v3 (0 for v4+).
    pub element_size: u64,
    /// Layout v4/v5 flags (bit 0: don't filter partial edge chunks; bit 1: single index with filter).
    pub flags: u8,
    /// Chunk index.
    pub index: ChunkIndex,
}

/// The storage of a dataset's raw data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// Data stored in the message.
    Compact {
        /// The raw data.
        data: Vec<u8>,
    },
    /// One contiguous block (UNDEF address: never allocated).
    Contiguous {
        /// Address.
        addr: Addr,
        /// Size in bytes.
        size: u64,
    },
    /// Chunked.
    Chunked(ChunkedLayout),
    /// Virtual dataset: global heap id of the mapping list.
    Virtual {
        /// Global heap collection address.
        heap_addr: Addr,
        /// Object index in the collection.
        index: u32,
    },
}

impl Layout {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported` version or class.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("not implemented yet"))
    }
}
