//! Resource bounds as a value, threaded through every decoder.

/// Bounds on what a file may make the reader do. Every allocation sized from
/// file data is checked against the bytes that remain or against one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum dataspace rank.
    pub max_rank: usize,
    /// Maximum object header chunks (continuations) per object header.
    pub max_header_chunks: usize,
    /// Maximum messages per object header.
    pub max_messages: usize,
    /// Maximum B-tree depth (v1 and v2) and fractal-heap indirect depth.
    pub max_btree_depth: usize,
    /// Maximum nesting of datatypes (compound/array/vlen/enum inside each other).
    pub max_datatype_nesting: usize,
    /// Maximum soft/external link hops when resolving one path.
    pub max_link_hops: usize,
    /// Maximum size in bytes of one metadata block read from the file.
    pub max_metadata_block: u64,
    /// Maximum size in bytes of one decoded (decompressed) chunk.
    pub max_chunk_bytes: u64,
    /// Maximum bytes of decoded data materialized by one read call.
    pub max_read_bytes: u64,
    /// Upper bound in bytes of each dataset's chunk cache (std; see
    /// `Dataset::chunk_cache`): its budget starts at the smaller of this and
    /// 4 MiB.
    pub cache_bytes: u64,
    /// Maximum number of objects visited by one walk of the file.
    pub max_objects: usize,
    /// Maximum number of entries (links, attributes, chunks, heap objects) in one index.
    pub max_index_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: 65_536,
            max_messages: 1 << 20,
            max_btree_depth: 64,
            max_datatype_nesting: 32,
            max_link_hops: 40,
            max_metadata_block: 1 << 32,
            max_chunk_bytes: 1 << 32,
            max_read_bytes: 1 << 40,
            cache_bytes: 64 << 20,
            max_objects: 1 << 26,
            max_index_entries: 1 << 40,
        }
    }
}

impl Limits {
    /// No limits beyond what the data itself bounds.
    pub fn unlimited() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: usize::MAX,
            max_messages: usize::MAX,
            max_btree_depth: 1024,
            max_datatype_nesting: 1024,
            max_link_hops: 1024,
            max_metadata_block: u64::MAX,
            max_chunk_bytes: u64::MAX,
            max_read_bytes: u64::MAX,
            cache_bytes: 64 << 20,
            max_objects: usize::MAX,
            max_index_entries: u64::MAX,
        }
    }
    /// Tight limits for fuzzing: small enough that no input can exhaust memory or time.
    pub fn tight() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: 256,
            max_messages: 4096,
            max_btree_depth: 16,
            max_datatype_nesting: 16,
            max_link_hops: 8,
            max_metadata_block: 16 << 20,
            max_chunk_bytes: 16 << 20,
            max_read_bytes: 64 << 20,
            cache_bytes: 4 << 20,
            max_objects: 10_000,
            max_index_entries: 1 << 20,
        }
    }
}
