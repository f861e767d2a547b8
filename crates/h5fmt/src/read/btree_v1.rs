//! Walking version 1 B-trees: group nodes (type 0) and raw-data chunk nodes (type 1).
//!
//! Walks go from the root down (siblings are not followed); every node
//! address is recorded so that a node reached twice is a `Cycle`, each
//! child's level must be its parent's level minus one, the root level is
//! bounded by `ctx.limits.max_btree_depth` and the number of collected
//! entries by `ctx.limits.max_index_entries`.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_CHUNK, NODE_TYPE_GROUP};
use crate::format::symbol_table_node::{SymbolTableEntry, SymbolTableNode};
use crate::io::Storage;
use crate::read::chunks::ChunkRecord;
use crate::read::local_heap::LocalHeap;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// Read a structure at `addr` whose length `need` tells from its first
/// bytes (at least `prefix` of them), in one read when it fits in `guess`
/// bytes (most nodes do), else in a second read of the whole.
fn read_sized(
    st: &Storage,
    addr: Addr,
    prefix: u64,
    guess: u64,
    need: impl Fn(&[u8]) -> Result<u64>,
) -> Result<Vec<u8>> {
    let mut first = st.read_upto(addr, guess.max(prefix))?;
    if (first.len() as u64) < prefix {
        // Fewer bytes than the prefix left in the file: the read reports it.
        return st.read(addr, prefix);
    }
    let len = need(&first)?;
    match usize::try_from(len) {
        Ok(n) if n <= first.len() => {
            first.truncate(n);
            Ok(first)
        }
        _ => st.read(addr, len),
    }
}

/// Read and decode the node at `addr`.
fn read_node(st: &Storage, ctx: Ctx, addr: Addr, chunk_dims: usize) -> Result<BTreeV1Node> {
    let plen = BTreeV1Node::prefix_len(ctx.sizes) as u64;
    let abs = st.absolute(addr, plen)?;
    // Group nodes of the default K (16) take ~0.5 KiB, chunk nodes (K 32)
    // ~1-4 KiB.
    let guess = if chunk_dims == 0 { 1024 } else { 4096 };
    let raw = read_sized(st, addr, plen, guess, |prefix| {
        let (node_type, _level, entries) = BTreeV1Node::peek(prefix, abs)?;
        let len = BTreeV1Node::used_len(node_type, ctx.sizes, chunk_dims, entries)
            .map_err(|e| e.with_offset(abs))?;
        if len > ctx.limits.max_metadata_block {
            return Err(Error::limit(alloc::format!(
                "v1 B-tree node at {addr} of {len} bytes"
            )));
        }
        Ok(len)
    })?;
    BTreeV1Node::decode(&mut Cursor::new(&raw, abs), ctx, chunk_dims)
}

struct Walk {
    visited: BTreeSet<u64>,
    count: u64,
}

impl Walk {
    fn new() -> Self {
        Walk {
            visited: BTreeSet::new(),
            count: 0,
        }
    }
    fn visit(&mut self, st: &Storage, addr: Addr, what: &str) -> Result<()> {
        if addr.is_undef() {
            return Err(Error::corrupt(
                alloc::format!("{what} at the undefined address"),
                u64::MAX,
            ));
        }
        if !self.visited.insert(addr.0) {
            return Err(Error::cycle(
                alloc::format!("{what} at {addr} reached twice"),
                st.base().saturating_add(addr.0),
            ));
        }
        Ok(())
    }
    fn add(&mut self, ctx: Ctx, n: usize) -> Result<()> {
        self.count = self.count.saturating_add(n as u64);
        if self.count > ctx.limits.max_index_entries {
            return Err(Error::limit(alloc::format!(
                "more than {} entries in one B-tree",
                ctx.limits.max_index_entries
            )));
        }
        Ok(())
    }
}

/// Check a node's type and level against what its parent implies.
fn check_node(
    st: &Storage,
    ctx: Ctx,
    node: &BTreeV1Node,
    addr: Addr,
    ty: u8,
    level: Option<u8>,
) -> Result<()> {
    let at = st.base().saturating_add(addr.0);
    if node.node_type != ty {
        return Err(Error::corrupt(
            alloc::format!(
                "v1 B-tree node at {addr} has type {}, expected {ty}",
                node.node_type
            ),
            at,
        ));
    }
    match level {
        Some(l) if node.level != l => Err(Error::corrupt(
            alloc::format!(
                "v1 B-tree node at {addr} has level {}, expected {l}",
                node.level
            ),
            at,
        )),
        None if usize::from(node.level) > ctx.limits.max_btree_depth => {
            Err(Error::limit(alloc::format!(
                "v1 B-tree of depth {} exceeds the limit of {}",
                node.level,
                ctx.limits.max_btree_depth
            )))
        }
        _ => Ok(()),
    }
}

/// All symbol table entries of a group's B-tree, in B-tree (name) order.
///
/// # Errors
/// `Corrupt`, `Truncated`, `Cycle`, `Limit`.
pub fn group_entries(st: &Storage, ctx: Ctx, root: Addr) -> Result<Vec<SymbolTableEntry>> {
    let mut walk = Walk::new();
    let mut out = Vec::new();
    group_node(st, ctx, root, None, &mut walk, &mut out)?;
    Ok(out)
}

/// Addresses of every node of the group B-tree at `root`: (B-tree nodes,
/// symbol table nodes), validated and bounded as [`group_entries`].
///
/// # Errors
/// As [`group_entries`].
pub fn group_tree_nodes(st: &Storage, ctx: Ctx, root: Addr) -> Result<(Vec<Addr>, Vec<Addr>)> {
    let mut walk = Walk::new();
    let mut nodes = Vec::new();
    let mut snods = Vec::new();
    group_tree_walk(st, ctx, root, None, &mut walk, &mut nodes, &mut snods)?;
    Ok((nodes, snods))
}

fn group_tree_walk(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    level: Option<u8>,
    walk: &mut Walk,
    nodes: &mut Vec<Addr>,
    snods: &mut Vec<Addr>,
) -> Result<()> {
    walk.visit(st, addr, "group B-tree node")?;
    let node = read_node(st, ctx, addr, 0)?;
    check_node(st, ctx, &node, addr, NODE_TYPE_GROUP, level)?;
    nodes.push(addr);
    for &child in &node.children {
        if node.level > 0 {
            group_tree_walk(st, ctx, child, Some(node.level - 1), walk, nodes, snods)?;
        } else {
            walk.visit(st, child, "symbol table node")?;
            walk.add(ctx, 1)?;
            snods.push(child);
        }
    }
    Ok(())
}

fn group_node(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    level: Option<u8>,
    walk: &mut Walk,
    out: &mut Vec<SymbolTableEntry>,
) -> Result<()> {
    walk.visit(st, addr, "group B-tree node")?;
    let node = read_node(st, ctx, addr, 0)?;
    check_node(st, ctx, &node, addr, NODE_TYPE_GROUP, level)?;
    for &child in &node.children {
        if node.level > 0 {
            group_node(st, ctx, child, Some(node.level - 1), walk, out)?;
        } else {
            walk.visit(st, child, "symbol table node")?;
            let snod = read_snod(st, ctx, child)?;
            walk.add(ctx, snod.entries.len())?;
            out.extend(snod.entries);
        }
    }
    Ok(())
}

/// The symbol table entry called `name` in a group's B-tree, found by
/// descending the tree (a key is the name of the last entry of the child on
/// its left, names in byte order) instead of listing every entry.
///
/// # Errors
/// `Corrupt`, `Truncated`, `Cycle`, `Limit`.
pub fn group_lookup(
    st: &Storage,
    ctx: Ctx,
    root: Addr,
    heap: &LocalHeap,
    name: &[u8],
) -> Result<Option<SymbolTableEntry>> {
    let mut walk = Walk::new();
    let mut addr = root;
    let mut level = None;
    loop {
        walk.visit(st, addr, "group B-tree node")?;
        let node = read_node(st, ctx, addr, 0)?;
        check_node(st, ctx, &node, addr, NODE_TYPE_GROUP, level)?;
        // The first child whose right key is not below `name`.
        let mut next = None;
        for (i, &child) in node.children.iter().enumerate() {
            let Some(Key::Group { heap_offset }) = node.keys.get(i + 1) else {
                return Err(Error::corrupt(
                    alloc::format!("group B-tree node at {addr} without a group key"),
                    st.base().saturating_add(addr.0),
                ));
            };
            if name <= heap.bytes_at(*heap_offset)? {
                next = Some(child);
                break;
            }
        }
        let Some(child) = next else {
            return Ok(None);
        };
        if node.level == 0 {
            walk.visit(st, child, "symbol table node")?;
            let snod = read_snod(st, ctx, child)?;
            for e in snod.entries {
                if heap.bytes_at(e.name_offset)? == name {
                    return Ok(Some(e));
                }
            }
            return Ok(None);
        }
        level = Some(node.level - 1);
        addr = child;
    }
}

/// Read the symbol table node at `addr` (only its used entries).
///
/// # Errors
/// `Corrupt`, `Truncated`.
pub fn read_snod(st: &Storage, ctx: Ctx, addr: Addr) -> Result<SymbolTableNode> {
    let plen = SymbolTableNode::PREFIX_LEN as u64;
    let abs = st.absolute(addr, plen)?;
    let entry = SymbolTableEntry::encoded_len(ctx.sizes) as u64;
    // Nodes of the default leaf K (4) hold at most 8 entries.
    let raw = read_sized(st, addr, plen, plen + 8 * entry, |prefix| {
        let count = SymbolTableNode::peek_count(prefix, abs)?;
        Ok(plen + u64::from(count) * entry)
    })?;
    SymbolTableNode::decode(&mut Cursor::new(&raw, abs), ctx)
}

/// `Limit` when a chunk B-tree's dataset rank is above the limit.
fn check_rank(ctx: Ctx, rank: usize) -> Result<()> {
    if rank > ctx.limits.max_rank {
        return Err(Error::limit(alloc::format!(
            "rank {rank} exceeds the limit of {}",
            ctx.limits.max_rank
        )));
    }
    Ok(())
}

/// All chunk records of a chunked dataset's B-tree. `rank` is the dataspace
/// rank (keys carry `rank + 1` offsets; the last, the element offset, is dropped).
///
/// # Errors
/// `Corrupt`, `Truncated`, `Cycle`, `Limit`.
pub fn chunk_records(st: &Storage, ctx: Ctx, root: Addr, rank: usize) -> Result<Vec<ChunkRecord>> {
    check_rank(ctx, rank)?;
    let mut walk = Walk::new();
    let mut out = Vec::new();
    chunk_node(st, ctx, root, None, rank, None, &mut walk, &mut out)?;
    Ok(out)
}

/// As [`chunk_records`], descending only into the subtrees that may hold
/// chunks whose offsets lie, in row-major (lexicographic) order, between
/// `first` and `last` (the chunk offsets of a selection's first and last
/// corners): a read of a few chunks reads one path of the tree, not all of
/// it. Records outside that range may still be returned.
///
/// # Errors
/// As [`chunk_records`].
pub fn chunk_records_between(
    st: &Storage,
    ctx: Ctx,
    root: Addr,
    rank: usize,
    first: &[u64],
    last: &[u64],
) -> Result<Vec<ChunkRecord>> {
    check_rank(ctx, rank)?;
    let mut walk = Walk::new();
    let mut out = Vec::new();
    chunk_node(
        st,
        ctx,
        root,
        None,
        rank,
        Some((first, last)),
        &mut walk,
        &mut out,
    )?;
    Ok(out)
}

/// Addresses of every node of the chunk B-tree at `root` (a dataset of
/// rank `rank`), validated and bounded as [`chunk_records`].
///
/// # Errors
/// As [`chunk_records`].
pub fn chunk_tree_nodes(st: &Storage, ctx: Ctx, root: Addr, rank: usize) -> Result<Vec<Addr>> {
    check_rank(ctx, rank)?;
    let mut walk = Walk::new();
    let mut out = Vec::new();
    chunk_tree_walk(st, ctx, root, None, rank, &mut walk, &mut out)?;
    Ok(out)
}

fn chunk_tree_walk(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    level: Option<u8>,
    rank: usize,
    walk: &mut Walk,
    out: &mut Vec<Addr>,
) -> Result<()> {
    walk.visit(st, addr, "chunk B-tree node")?;
    let node = read_node(st, ctx, addr, rank + 1)?;
    check_node(st, ctx, &node, addr, NODE_TYPE_CHUNK, level)?;
    out.push(addr);
    walk.add(ctx, 1)?;
    if node.level > 0 {
        for &child in &node.children {
            chunk_tree_walk(st, ctx, child, Some(node.level - 1), rank, walk, out)?;
        }
    }
    Ok(())
}

/// The first `rank` offsets of a chunk key (lexicographic comparison).
fn key_offsets(key: &Key, rank: usize) -> Option<&[u64]> {
    match key {
        Key::Chunk { offsets, .. } => offsets.get(..rank),
        Key::Group { .. } => None,
    }
}

#[allow(clippy::too_many_arguments)]
fn chunk_node(
    st: &Storage,
    ctx: Ctx,
    addr: Addr,
    level: Option<u8>,
    rank: usize,
    range: Option<(&[u64], &[u64])>,
    walk: &mut Walk,
    out: &mut Vec<ChunkRecord>,
) -> Result<()> {
    walk.visit(st, addr, "chunk B-tree node")?;
    let node = read_node(st, ctx, addr, rank + 1)?;
    check_node(st, ctx, &node, addr, NODE_TYPE_CHUNK, level)?;
    if node.level > 0 {
        for (i, &child) in node.children.iter().enumerate() {
            // Child i holds the chunks from key i up to key i + 1: skip it
            // when that span ends before `first` or starts after `last`.
            // The right key bounds inclusively: libhdf5 leaves the right key
            // of a node's last child equal to the offset of the last chunk
            // it holds (c16_layouts_filters.h5 of the HEP001 corpus, a
            // 286-chunk column: the last chunk sits under such a key).
            // Keys that cannot be read never prune.
            if let Some((first, last)) = range {
                let lo = node.keys.get(i).and_then(|k| key_offsets(k, rank));
                let hi = node.keys.get(i + 1).and_then(|k| key_offsets(k, rank));
                if hi.is_some_and(|h| h < first) || lo.is_some_and(|l| l > last) {
                    continue;
                }
            }
            chunk_node(st, ctx, child, Some(node.level - 1), rank, range, walk, out)?;
        }
        return Ok(());
    }
    walk.add(ctx, node.children.len())?;
    for (key, &child) in node.keys.iter().zip(&node.children) {
        if let Key::Chunk {
            size,
            filter_mask,
            offsets,
        } = key
        {
            out.push(ChunkRecord {
                offsets: offsets.iter().take(rank).copied().collect(),
                addr: child,
                size: u64::from(*size),
                filter_mask: *filter_mask,
            });
        }
    }
    Ok(())
}
