//! Version 2 B-trees, spec III.A.2: header (`BTHD`), internal nodes (`BTIN`)
//! and leaves (`BTLF`), version 0, all checksummed; plus typed decoders for
//! the record types 1–11.
//!
//! Node capacities follow libhdf5 (`H5B2__hdr_init`): with a prefix of 10
//! bytes (signature, version, type, checksum),
//! - leaves hold `max(0) = (node_size - 10) / record_size` records;
//! - the "number of records in child" field is `enc(max(0))` bytes wide,
//!   where `enc(n) = floor(log2(n)) / 8 + 1` (`H5VM_limit_enc_size`);
//! - an internal node at depth `d >= 1` has child pointers of
//!   `p(d) = size_of_offsets + enc(max(0)) + cum_size(d - 1)` bytes and holds
//!   `max(d) = (node_size - (10 + p(d))) / (record_size + p(d))` records;
//! - `cum(0) = max(0)`, `cum(d) = (max(d) + 1) * cum(d - 1) + max(d)`,
//!   `cum_size(0) = 0`, `cum_size(d) = enc(cum(d))`; the "total number of
//!   records in child" field is present only for children of nodes at depth
//!   > 1 and is `cum_size(d - 1)` bytes wide.

use crate::addr::Sizes;
use crate::codec::{lookup3, Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Signature + version + type + checksum.
const PREFIX: u64 = 10;

/// Bytes needed to encode every value in `0..=n` (`H5VM_limit_enc_size`).
pub fn limit_enc_size(n: u64) -> usize {
    let log2 = if n == 0 {
        0
    } else {
        63 - n.leading_zeros() as usize
    };
    log2 / 8 + 1
}

/// Verify the lookup3 checksum stored right after `data[..len]`.
fn verify_checksum(data: &[u8], len: usize, base: u64, what: &str) -> Result<()> {
    let body = data
        .get(..len)
        .ok_or_else(|| Error::truncated(alloc::format!("{what}: short node"), base))?;
    let stored = len
        .checked_add(4)
        .and_then(|end| data.get(len..end))
        .and_then(|s| <[u8; 4]>::try_from(s).ok())
        .map(u32::from_le_bytes)
        .ok_or_else(|| {
            Error::truncated(
                alloc::format!("{what}: checksum missing"),
                base.saturating_add(len as u64),
            )
        })?;
    let computed = lookup3(body, 0);
    if stored != computed {
        return Err(Error::checksum(
            alloc::format!("{what}: stored checksum {stored:#010x}, computed {computed:#010x}"),
            base.saturating_add(len as u64),
        ));
    }
    Ok(())
}

/// A decoded v2 B-tree header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BTreeV2Header {
    /// Record type (1–11).
    pub record_type: u8,
    /// Size in bytes of every node.
    pub node_size: u32,
    /// Size in bytes of one record.
    pub record_size: u16,
    /// Depth of the tree (0: the root is a leaf).
    pub depth: u16,
    /// Split percent.
    pub split_percent: u8,
    /// Merge percent.
    pub merge_percent: u8,
    /// Root node address (UNDEF for an empty tree).
    pub root: Addr,
    /// Records in the root node.
    pub root_records: u16,
    /// Records in the whole tree.
    pub total_records: u64,
}

impl BTreeV2Header {
    /// Encoded size of the header including its checksum.
    pub fn encoded_len(sizes: Sizes) -> usize {
        4 + 1
            + 1
            + 4
            + 2
            + 2
            + 1
            + 1
            + usize::from(sizes.offsets)
            + 2
            + usize::from(sizes.lengths)
            + 4
    }

    /// Decode and checksum-verify a header.
    ///
    /// # Errors
    /// `Truncated`, `Checksum`; `Corrupt` for a bad signature or version or
    /// impossible node/record sizes.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let len = Self::encoded_len(ctx.sizes);
        let start = cur.pos();
        let window = cur.rest();
        cur.expect_signature(b"BTHD")?;
        verify_checksum(
            window,
            len - 4,
            cur.base().saturating_add(start as u64),
            "v2 B-tree header",
        )?;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("v2 B-tree header version {version}"),
                at,
            ));
        }
        let record_type = cur.read_u8()?;
        let node_size = cur.read_u32()?;
        let record_size = cur.read_u16()?;
        let depth = cur.read_u16()?;
        let split_percent = cur.read_u8()?;
        let merge_percent = cur.read_u8()?;
        let root = cur.read_addr(ctx.sizes)?;
        let root_records = cur.read_u16()?;
        let total_records = cur.read_len(ctx.sizes)?;
        cur.skip(4)?;
        if record_size == 0 || u64::from(node_size) <= PREFIX + u64::from(record_size) {
            return Err(Error::corrupt(
                alloc::format!(
                    "v2 B-tree node size {node_size} cannot hold a record of {record_size} bytes"
                ),
                at,
            ));
        }
        Ok(BTreeV2Header {
            record_type,
            node_size,
            record_size,
            depth,
            split_percent,
            merge_percent,
            root,
            root_records,
            total_records,
        })
    }

    /// Node capacities per depth (see the module documentation).
    ///
    /// # Errors
    /// `Limit` when the depth exceeds `ctx.limits.max_btree_depth`; `Corrupt`
    /// when internal nodes of some depth could hold no record.
    pub fn geometry(&self, ctx: Ctx) -> Result<Geometry> {
        let depth = usize::from(self.depth);
        if depth > ctx.limits.max_btree_depth {
            return Err(Error::limit(alloc::format!(
                "v2 B-tree depth {depth} exceeds the limit of {}",
                ctx.limits.max_btree_depth
            )));
        }
        let node = u64::from(self.node_size);
        let rec = u64::from(self.record_size);
        let leaf_max = node
            .checked_sub(PREFIX)
            .and_then(|room| room.checked_div(rec))
            .filter(|&m| m > 0)
            .ok_or_else(|| Error::corrupt("v2 B-tree leaves hold no record", 0))?;
        let nrec_size = limit_enc_size(leaf_max);
        let mut levels = Vec::with_capacity(depth + 1);
        levels.push(Level {
            max_records: leaf_max,
            cum_max_records: leaf_max,
            cum_size: 0,
        });
        for d in 1..=depth {
            let prev = levels.get(d - 1).copied().unwrap_or(Level {
                max_records: 0,
                cum_max_records: 0,
                cum_size: 0,
            });
            let ptr = u64::from(ctx.sizes.offsets) + nrec_size as u64 + prev.cum_size as u64;
            let max = node
                .checked_sub(PREFIX + ptr)
                .map(|room| room / (rec + ptr))
                .filter(|&m| m > 0)
                .ok_or_else(|| {
                    Error::corrupt(
                        alloc::format!("v2 B-tree internal nodes at depth {d} hold no record"),
                        0,
                    )
                })?;
            let cum = max
                .checked_add(1)
                .and_then(|m| m.checked_mul(prev.cum_max_records))
                .and_then(|c| c.checked_add(max))
                .unwrap_or(u64::MAX);
            levels.push(Level {
                max_records: max,
                cum_max_records: cum,
                cum_size: limit_enc_size(cum),
            });
        }
        Ok(Geometry { levels, nrec_size })
    }
}

/// Capacity of nodes at one depth.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Level {
    /// Maximum records in one node at this depth.
    pub max_records: u64,
    /// Maximum records in a subtree rooted at this depth.
    pub cum_max_records: u64,
    /// Bytes used to encode a record count of a subtree rooted at this depth (0 for leaves).
    pub cum_size: usize,
}

/// Node capacities of a tree, per depth (index 0: leaves).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Geometry {
    /// One entry per depth, `0..=depth`.
    pub levels: Vec<Level>,
    /// Width in bytes of the "number of records in child" field.
    pub nrec_size: usize,
}

impl Geometry {
    /// The level info for `depth`.
    ///
    /// # Errors
    /// `Corrupt` when `depth` is beyond the tree.
    pub fn level(&self, depth: usize) -> Result<Level> {
        self.levels
            .get(depth)
            .copied()
            .ok_or_else(|| Error::corrupt("v2 B-tree node depth beyond the tree", 0))
    }
}

/// A pointer from an internal node to a child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChildPointer {
    /// Child node address.
    pub addr: Addr,
    /// Records in the child node itself.
    pub records: u64,
    /// Records in the child's whole subtree (equal to `records` for leaves).
    pub total_records: u64,
}

fn check_node_prefix(
    cur: &mut Cursor<'_>,
    sig: &[u8; 4],
    record_type: u8,
    what: &str,
) -> Result<()> {
    cur.expect_signature(sig)?;
    let at = cur.offset();
    let version = cur.read_u8()?;
    if version != 0 {
        return Err(Error::corrupt(
            alloc::format!("{what} version {version}"),
            at,
        ));
    }
    let t = cur.read_u8()?;
    if t != record_type {
        return Err(Error::corrupt(
            alloc::format!("{what} has record type {t}, its tree {record_type}"),
            at + 1,
        ));
    }
    Ok(())
}

/// Decode a leaf holding `nrec` records; returns each record's raw bytes.
///
/// # Errors
/// `Truncated`, `Checksum`, `Corrupt`.
pub fn decode_leaf(cur: &mut Cursor<'_>, hdr: &BTreeV2Header, nrec: u64) -> Result<Vec<Vec<u8>>> {
    let window = cur.rest();
    let base = cur.offset();
    check_node_prefix(cur, b"BTLF", hdr.record_type, "v2 B-tree leaf")?;
    let rs = usize::from(hdr.record_size);
    let n = cur.ensure_count(nrec, rs)?;
    let body = 6 + n * rs;
    verify_checksum(window, body, base, "v2 B-tree leaf")?;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(cur.read_bytes(rs)?.to_vec());
    }
    Ok(out)
}

/// Decode an internal node at `depth >= 1` holding `nrec` records; returns
/// the raw records and the `nrec + 1` child pointers.
///
/// # Errors
/// `Truncated`, `Checksum`, `Corrupt`.
pub fn decode_internal(
    cur: &mut Cursor<'_>,
    hdr: &BTreeV2Header,
    geom: &Geometry,
    depth: usize,
    nrec: u64,
    sizes: Sizes,
) -> Result<(Vec<Vec<u8>>, Vec<ChildPointer>)> {
    let window = cur.rest();
    let base = cur.offset();
    check_node_prefix(cur, b"BTIN", hdr.record_type, "v2 B-tree internal node")?;
    if depth == 0 {
        return Err(Error::corrupt("internal node at depth 0", base));
    }
    let rs = usize::from(hdr.record_size);
    let cum_size = if depth > 1 {
        geom.level(depth - 1)?.cum_size
    } else {
        0
    };
    let ptr = usize::from(sizes.offsets) + geom.nrec_size + cum_size;
    let n = cur.ensure_count(nrec, rs)?;
    let body_len = n
        .checked_add(1)
        .and_then(|p| p.checked_mul(ptr))
        .and_then(|p| p.checked_add(6 + n * rs))
        .ok_or_else(|| Error::corrupt("v2 B-tree internal node size overflows", base))?;
    verify_checksum(window, body_len, base, "v2 B-tree internal node")?;
    let mut records = Vec::with_capacity(n);
    for _ in 0..n {
        records.push(cur.read_bytes(rs)?.to_vec());
    }
    let mut children = Vec::with_capacity(n + 1);
    for _ in 0..=n {
        let addr = cur.read_addr(sizes)?;
        let records = cur.read_uint(geom.nrec_size)?;
        let total_records = if depth > 1 {
            cur.read_uint(cum_size)?
        } else {
            records
        };
        children.push(ChildPointer {
            addr,
            records,
            total_records,
        });
    }
    Ok((records, children))
}

/// A typed v2 B-tree record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Record {
    /// Type 1: indirectly accessed, non-filtered huge fractal heap object.
    HugeIndirect {
        /// Object address.
        addr: Addr,
        /// Object length.
        len: u64,
        /// Huge object id (the key).
        id: u64,
    },
    /// Type 2: indirectly accessed, filtered huge object.
    HugeIndirectFiltered {
        /// Filtered object address.
        addr: Addr,
        /// Filtered length.
        len: u64,
        /// Filter mask.
        filter_mask: u32,
        /// De-filtered size.
        size: u64,
        /// Huge object id (the key).
        id: u64,
    },
    /// Type 3: directly accessed, non-filtered huge object.
    HugeDirect {
        /// Object address.
        addr: Addr,
        /// Object length.
        len: u64,
    },
    /// Type 4: directly accessed, filtered huge object.
    HugeDirectFiltered {
        /// Filtered object address.
        addr: Addr,
        /// Filtered length.
        len: u64,
        /// Filter mask.
        filter_mask: u32,
        /// De-filtered size.
        size: u64,
    },
    /// Type 5: link name index of a dense group.
    LinkName {
        /// lookup3 hash of the name.
        hash: u32,
        /// Fractal heap id of the link message.
        heap_id: [u8; 7],
    },
    /// Type 6: link creation-order index of a dense group.
    LinkCreationOrder {
        /// Creation order.
        order: u64,
        /// Fractal heap id of the link message.
        heap_id: [u8; 7],
    },
    /// Type 7, sub-type 0: shared message stored in the index's fractal heap.
    SharedMessageInHeap {
        /// lookup3 hash of the message.
        hash: u32,
        /// Number of objects sharing it.
        refcount: u32,
        /// Fractal heap id.
        heap_id: [u8; 8],
    },
    /// Type 7, sub-type 1: shared message stored in an object header.
    SharedMessageInHeader {
        /// lookup3 hash of the message.
        hash: u32,
        /// Message type.
        message_type: u8,
        /// Index of the message in the object header.
        index: u16,
        /// Object header address.
        header: Addr,
    },
    /// Type 8: attribute name index of dense attribute storage.
    AttributeName {
        /// Fractal heap id of the attribute message.
        heap_id: [u8; 8],
        /// Message flags.
        flags: u8,
        /// Creation order.
        order: u32,
        /// lookup3 hash of the name.
        hash: u32,
    },
    /// Type 9: attribute creation-order index.
    AttributeCreationOrder {
        /// Fractal heap id of the attribute message.
        heap_id: [u8; 8],
        /// Message flags.
        flags: u8,
        /// Creation order.
        order: u32,
    },
    /// Type 10: non-filtered chunk.
    Chunk {
        /// Chunk address.
        addr: Addr,
        /// Scaled offsets (chunk index per dimension), `rank` of them.
        scaled: Vec<u64>,
    },
    /// Type 11: filtered chunk.
    FilteredChunk {
        /// Chunk address.
        addr: Addr,
        /// Stored chunk size.
        size: u64,
        /// Filter mask.
        filter_mask: u32,
        /// Scaled offsets, `rank` of them.
        scaled: Vec<u64>,
    },
}

/// Width of the chunk size field of type-11 records (and of the filtered
/// fixed/extensible array elements): libhdf5 (`H5D__bt2_crt_context`) uses
/// `1 + (floor(log2(chunk_bytes)) + 8) / 8` bytes, at most 8, where
/// `chunk_bytes` is the uncompressed chunk size; layout message version 5
/// (HDF5 2.0) instead always uses "size of lengths" bytes (checked against
/// libhdf5 2.0.0: a 64-byte chunk gives 36-byte records — 8 + 8 + 4 + 2 × 8 —
/// under layout v5 and 30-byte records — 8 + 2 + 4 + 2 × 8 — under v4).
pub fn chunk_size_len(layout_version: u8, chunk_bytes: u64, sizes: Sizes) -> usize {
    if layout_version >= 5 {
        return usize::from(sizes.lengths);
    }
    let log2 = if chunk_bytes == 0 {
        0
    } else {
        63 - chunk_bytes.leading_zeros() as usize
    };
    (1 + (log2 + 8) / 8).min(8)
}

fn scaled(cur: &mut Cursor<'_>, rank: usize) -> Result<Vec<u64>> {
    let n = cur.ensure_count(rank as u64, 8)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(cur.read_u64()?);
    }
    Ok(v)
}

/// Decode one raw record of `record_type`. `rank` (the dataspace rank) is used
/// by types 10 and 11, `chunk_size_len` (see [`chunk_size_len`]) by type 11.
/// The record must be consumed exactly.
///
/// # Errors
/// `Truncated`; `Corrupt` when bytes are left over or a field is invalid;
/// `Unsupported` for an unknown record type.
pub fn decode_record(
    record_type: u8,
    raw: &[u8],
    ctx: Ctx,
    rank: usize,
    chunk_size_len: usize,
) -> Result<Record> {
    let mut cur = Cursor::new(raw, 0);
    let c = &mut cur;
    let s = ctx.sizes;
    let rec = match record_type {
        1 => Record::HugeIndirect {
            addr: c.read_addr(s)?,
            len: c.read_len(s)?,
            id: c.read_len(s)?,
        },
        2 => Record::HugeIndirectFiltered {
            addr: c.read_addr(s)?,
            len: c.read_len(s)?,
            filter_mask: c.read_u32()?,
            size: c.read_len(s)?,
            id: c.read_len(s)?,
        },
        3 => Record::HugeDirect {
            addr: c.read_addr(s)?,
            len: c.read_len(s)?,
        },
        4 => Record::HugeDirectFiltered {
            addr: c.read_addr(s)?,
            len: c.read_len(s)?,
            filter_mask: c.read_u32()?,
            size: c.read_len(s)?,
        },
        5 => Record::LinkName {
            hash: c.read_u32()?,
            heap_id: c.read_array()?,
        },
        6 => Record::LinkCreationOrder {
            order: c.read_u64()?,
            heap_id: c.read_array()?,
        },
        7 => match c.read_u8()? {
            0 => Record::SharedMessageInHeap {
                hash: c.read_u32()?,
                refcount: c.read_u32()?,
                heap_id: c.read_array()?,
            },
            1 => {
                let hash = c.read_u32()?;
                c.skip(1)?;
                Record::SharedMessageInHeader {
                    hash,
                    message_type: c.read_u8()?,
                    index: c.read_u16()?,
                    header: c.read_addr(s)?,
                }
            }
            l => {
                return Err(Error::corrupt(
                    alloc::format!("shared message location {l}"),
                    0,
                ))
            }
        },
        8 => Record::AttributeName {
            heap_id: c.read_array()?,
            flags: c.read_u8()?,
            order: c.read_u32()?,
            hash: c.read_u32()?,
        },
        9 => Record::AttributeCreationOrder {
            heap_id: c.read_array()?,
            flags: c.read_u8()?,
            order: c.read_u32()?,
        },
        10 => Record::Chunk {
            addr: c.read_addr(s)?,
            scaled: scaled(c, rank)?,
        },
        11 => Record::FilteredChunk {
            addr: c.read_addr(s)?,
            size: c.read_uint(chunk_size_len)?,
            filter_mask: c.read_u32()?,
            scaled: scaled(c, rank)?,
        },
        t => {
            return Err(Error::unsupported(alloc::format!(
                "v2 B-tree record type {t}"
            )))
        }
    };
    // Type 7 records are padded to the larger of the two sub-types.
    if record_type != 7 {
        c.finish("v2 B-tree record")?;
    }
    Ok(rec)
}

// ---------------------------------------------------------------------------
// Encoding: a bulk-built tree over records given in key order.

impl BTreeV2Header {
    /// Encode the header with its checksum ([`Self::encoded_len`] bytes).
    pub fn encode(&self, enc: &mut Encoder, sizes: Sizes) {
        let start = enc.len();
        enc.put_bytes(b"BTHD");
        enc.put_u8(0);
        enc.put_u8(self.record_type);
        enc.put_u32(self.node_size);
        enc.put_u16(self.record_size);
        enc.put_u16(self.depth);
        enc.put_u8(self.split_percent);
        enc.put_u8(self.merge_percent);
        enc.put_addr(self.root, sizes);
        enc.put_u16(self.root_records);
        enc.put_len(self.total_records, sizes);
        enc.put_checksum_from(start);
    }
}

/// Parameters of a v2 B-tree to build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BTreeV2Params {
    /// Record type (1–11).
    pub record_type: u8,
    /// Node size in bytes (libhdf5: 2048 for chunk indexes, 512 for dense
    /// link and attribute name indexes).
    pub node_size: u32,
    /// Record size in bytes.
    pub record_size: u16,
    /// Split percent (libhdf5: 100).
    pub split_percent: u8,
    /// Merge percent (libhdf5: 40).
    pub merge_percent: u8,
}

/// A built tree: its header (to be encoded with [`BTreeV2Header::encode`]
/// at the address the caller chose) and its nodes, each `node_size` bytes
/// long (zero padded after the checksum, as libhdf5 reads whole nodes).
#[derive(Debug, Clone)]
pub struct BuiltTree {
    /// The header fields (root address, depth, record counts).
    pub header: BTreeV2Header,
    /// `(address, node bytes)` of every node.
    pub nodes: Vec<(Addr, Vec<u8>)>,
}

/// Build a v2 B-tree over `records` (each `record_size` bytes, already in the
/// tree's key order). `alloc` returns the address of each new node
/// (`node_size` bytes). Leaves and internal nodes are filled evenly to at
/// most their capacity, with the smallest depth that holds every record.
///
/// # Errors
/// `Usage` when a record has the wrong size or nodes cannot hold a record;
/// `Limit` for more records than a tree of depth 64 holds.
pub fn build_tree(
    params: BTreeV2Params,
    records: &[&[u8]],
    sizes: Sizes,
    alloc: &mut dyn FnMut() -> Addr,
) -> Result<BuiltTree> {
    let rs = usize::from(params.record_size);
    if records.iter().any(|r| r.len() != rs) {
        return Err(Error::usage("v2 B-tree record of the wrong size"));
    }
    let n = records.len() as u64;
    let mut header = BTreeV2Header {
        record_type: params.record_type,
        node_size: params.node_size,
        record_size: params.record_size,
        depth: 0,
        split_percent: params.split_percent,
        merge_percent: params.merge_percent,
        root: Addr::UNDEF,
        root_records: 0,
        total_records: n,
    };
    if u64::from(params.node_size) <= PREFIX + u64::from(params.record_size) {
        return Err(Error::usage("v2 B-tree node size cannot hold a record"));
    }
    if n == 0 {
        return Ok(BuiltTree {
            header,
            nodes: Vec::new(),
        });
    }
    // Smallest depth whose subtree capacity holds every record.
    let ctx = Ctx {
        sizes,
        ..Ctx::default()
    };
    let geom = loop {
        let g = BTreeV2Header {
            depth: header.depth,
            ..header
        }
        .geometry(Ctx {
            limits: crate::Limits {
                max_btree_depth: 64,
                ..ctx.limits
            },
            ..ctx
        })
        .map_err(|_| Error::usage("v2 B-tree node size too small for internal nodes"))?;
        if g.level(usize::from(header.depth))?.cum_max_records >= n {
            break g;
        }
        if header.depth >= 64 {
            return Err(Error::limit("too many v2 B-tree records"));
        }
        header.depth += 1;
    };
    let mut b = Builder {
        params,
        geom: &geom,
        sizes,
        alloc,
        nodes: Vec::new(),
    };
    let (root, root_records) = b.subtree(records, usize::from(header.depth))?;
    header.root = root;
    header.root_records =
        u16::try_from(root_records).map_err(|_| Error::usage("v2 B-tree root too large"))?;
    Ok(BuiltTree {
        header,
        nodes: b.nodes,
    })
}

struct Builder<'a, 'b> {
    params: BTreeV2Params,
    geom: &'a Geometry,
    sizes: Sizes,
    alloc: &'b mut dyn FnMut() -> Addr,
    nodes: Vec<(Addr, Vec<u8>)>,
}

impl Builder<'_, '_> {
    /// Build the subtree of `records` rooted at `depth`; returns the root's
    /// address and its own record count.
    fn subtree(&mut self, records: &[&[u8]], depth: usize) -> Result<(Addr, usize)> {
        let node_size = usize::try_from(self.params.node_size)
            .map_err(|_| Error::usage("v2 B-tree node size"))?;
        let mut enc = Encoder::with_capacity(node_size);
        if depth == 0 {
            enc.put_bytes(b"BTLF");
            enc.put_u8(0);
            enc.put_u8(self.params.record_type);
            for r in records {
                enc.put_bytes(r);
            }
            enc.put_checksum_from(0);
            let addr = self.finish_node(enc, node_size)?;
            return Ok((addr, records.len()));
        }
        let below = self.geom.level(depth - 1)?.cum_max_records;
        let max_here = self.geom.level(depth)?.max_records;
        let n = records.len() as u64;
        // k children need k - 1 separating records here; each child holds at most `below`.
        let k = (n + 1).div_ceil(below + 1).max(2);
        if k - 1 > max_here {
            return Err(Error::usage("v2 B-tree subtree over capacity"));
        }
        let in_children = n - (k - 1);
        let (base, extra) = (in_children / k, in_children % k);
        let mut children = Vec::new();
        let mut seps = Vec::new();
        let mut pos = 0usize;
        for i in 0..k {
            #[allow(clippy::cast_possible_truncation)] // ≤ records.len()
            let take = (base + u64::from(i < extra)) as usize;
            let part = records
                .get(pos..pos + take)
                .ok_or_else(|| Error::usage("v2 B-tree split"))?;
            let (addr, own) = self.subtree(part, depth - 1)?;
            children.push((addr, own as u64, take as u64));
            pos += take;
            if i + 1 < k {
                seps.push(
                    *records
                        .get(pos)
                        .ok_or_else(|| Error::usage("v2 B-tree split"))?,
                );
                pos += 1;
            }
        }
        enc.put_bytes(b"BTIN");
        enc.put_u8(0);
        enc.put_u8(self.params.record_type);
        for r in &seps {
            enc.put_bytes(r);
        }
        let cum_size = if depth > 1 {
            self.geom.level(depth - 1)?.cum_size
        } else {
            0
        };
        for (addr, own, total) in children {
            enc.put_addr(addr, self.sizes);
            enc.put_uint(own, self.geom.nrec_size);
            if depth > 1 {
                enc.put_uint(total, cum_size);
            }
        }
        enc.put_checksum_from(0);
        let addr = self.finish_node(enc, node_size)?;
        Ok((addr, seps.len()))
    }

    fn finish_node(&mut self, enc: Encoder, node_size: usize) -> Result<Addr> {
        let mut bytes = enc.into_vec();
        if bytes.len() > node_size {
            return Err(Error::usage("v2 B-tree node overflows its size"));
        }
        bytes.resize(node_size, 0);
        let addr = (self.alloc)();
        self.nodes.push((addr, bytes));
        Ok(addr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Walk a built tree with the decoders; return its records in order.
    fn walk(
        nodes: &[(Addr, alloc::vec::Vec<u8>)],
        hdr: &BTreeV2Header,
        geom: &Geometry,
        addr: Addr,
        nrec: u64,
        depth: usize,
        out: &mut alloc::vec::Vec<alloc::vec::Vec<u8>>,
    ) {
        let bytes = &nodes.iter().find(|(a, _)| *a == addr).unwrap().1;
        assert_eq!(bytes.len(), hdr.node_size as usize);
        assert!(nrec <= geom.level(depth).unwrap().max_records);
        let mut cur = Cursor::new(bytes, addr.get());
        if depth == 0 {
            out.extend(decode_leaf(&mut cur, hdr, nrec).unwrap());
            return;
        }
        let (recs, kids) =
            decode_internal(&mut cur, hdr, geom, depth, nrec, Sizes::default()).unwrap();
        for (i, k) in kids.iter().enumerate() {
            let before = out.len();
            walk(nodes, hdr, geom, k.addr, k.records, depth - 1, out);
            assert_eq!((out.len() - before) as u64, k.total_records);
            if let Some(r) = recs.get(i) {
                out.push(r.clone());
            }
        }
    }

    #[test]
    fn built_trees_decode_in_order() {
        let sizes = Sizes::default();
        // Leaves of 6 records; internal nodes of 2–4 records: depths 0–3.
        for (node_size, n) in [
            (58u32, 0usize),
            (58, 1),
            (58, 6),
            (58, 7),
            (58, 50),
            (58, 400),
            (2048, 5000),
        ] {
            let recs: alloc::vec::Vec<[u8; 8]> =
                (0..n as u64).map(|i| (i * 3).to_le_bytes()).collect();
            let refs: alloc::vec::Vec<&[u8]> = recs.iter().map(|r| &r[..]).collect();
            let mut next = 1000u64;
            let built = build_tree(
                BTreeV2Params {
                    record_type: 10,
                    node_size,
                    record_size: 8,
                    split_percent: 100,
                    merge_percent: 40,
                },
                &refs,
                sizes,
                &mut || {
                    next += u64::from(node_size);
                    Addr(next)
                },
            )
            .unwrap();
            let mut enc = Encoder::new();
            built.header.encode(&mut enc, sizes);
            let hdr =
                BTreeV2Header::decode(&mut Cursor::new(enc.as_bytes(), 0), Ctx::default()).unwrap();
            assert_eq!(hdr, built.header);
            assert_eq!(hdr.total_records, n as u64);
            if n == 0 {
                assert!(hdr.root.is_undef());
                continue;
            }
            let geom = hdr.geometry(Ctx::default()).unwrap();
            let mut out = alloc::vec::Vec::new();
            walk(
                &built.nodes,
                &hdr,
                &geom,
                hdr.root,
                u64::from(hdr.root_records),
                usize::from(hdr.depth),
                &mut out,
            );
            let want: alloc::vec::Vec<alloc::vec::Vec<u8>> =
                recs.iter().map(|r| r.to_vec()).collect();
            assert_eq!(out, want, "node size {node_size}, {n} records");
            if node_size == 58 && n == 400 {
                assert!(hdr.depth >= 2, "depth {}", hdr.depth);
            }
        }
    }

    #[test]
    fn enc_sizes() {
        assert_eq!(limit_enc_size(0), 1);
        assert_eq!(limit_enc_size(255), 1);
        assert_eq!(limit_enc_size(256), 2);
        assert_eq!(limit_enc_size(65535), 2);
        assert_eq!(limit_enc_size(65536), 3);
        let s = Sizes::default();
        assert_eq!(chunk_size_len(4, 64, s), 2);
        assert_eq!(chunk_size_len(4, 255, s), 1 + 15 / 8);
        assert_eq!(chunk_size_len(4, 256, s), 3);
        assert_eq!(chunk_size_len(4, u64::MAX, s), 8);
        assert_eq!(chunk_size_len(5, 64, s), 8);
    }

    #[test]
    fn typed_records() {
        let ctx = Ctx::default();
        let mut raw = alloc::vec::Vec::new();
        raw.extend_from_slice(&0x1234u64.to_le_bytes());
        raw.extend_from_slice(&[0x40, 0x01]);
        raw.extend_from_slice(&2u32.to_le_bytes());
        raw.extend_from_slice(&3u64.to_le_bytes());
        raw.extend_from_slice(&4u64.to_le_bytes());
        let r = decode_record(11, &raw, ctx, 2, 2).unwrap();
        assert_eq!(
            r,
            Record::FilteredChunk {
                addr: Addr(0x1234),
                size: 0x140,
                filter_mask: 2,
                scaled: alloc::vec![3, 4]
            }
        );
        assert_eq!(
            decode_record(11, &raw, ctx, 1, 2).unwrap_err().kind(),
            crate::ErrorKind::Corrupt
        );
        assert_eq!(
            decode_record(11, &raw, ctx, 3, 2).unwrap_err().kind(),
            crate::ErrorKind::Truncated
        );
        let raw = [1, 2, 3, 4, 9, 8, 7, 6, 5, 4, 3];
        assert_eq!(
            decode_record(5, &raw, ctx, 0, 0).unwrap(),
            Record::LinkName {
                hash: 0x04030201,
                heap_id: [9, 8, 7, 6, 5, 4, 3]
            }
        );
        assert_eq!(
            decode_record(12, &raw, ctx, 0, 0).unwrap_err().kind(),
            crate::ErrorKind::Unsupported
        );
    }
}
