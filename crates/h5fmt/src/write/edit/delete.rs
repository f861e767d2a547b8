//! Deleting objects: what an object's last hard link takes with it.
//!
//! libhdf5 deletes an object when its reference count (the v1 header's
//! link count, the v2 header's reference count message, 1 without one)
//! drops to 0 (`H5O_link` → `H5O__delete_oh`): each message's delete
//! callback frees the storage it names, then the header chunks go. The
//! editor frees the same:
//!
//! * the header chunks;
//! * a dataset's raw storage (`H5O__layout_delete`): the contiguous block,
//!   or every chunk and the chunk index's structures (v1 B-tree nodes,
//!   fixed / extensible array blocks, v2 B-tree nodes, an implicit index's
//!   whole storage); compact, external and virtual storage free nothing
//!   (the external files and a virtual dataset's global heap object are
//!   left, a leak);
//! * dense attribute storage (`H5A__dense_delete`): the fractal heap's
//!   header and blocks and the name and creation-order B-trees;
//! * a group's link storage and, through the links, its members
//!   (`H5G__stab_delete`, `H5G__dense_delete`, `H5O__link_delete`): the
//!   local heap, symbol-table B-tree nodes and `SNOD`s, or the dense heap
//!   and B-trees; every hard link of the group drops its target's reference
//!   count, recursively deleting targets whose count reaches 0;
//! * a dataset's committed datatype loses the reference the dataset held.
//!
//! Global heap objects an object refers to (variable-length data) are not
//! freed, as libhdf5 does not free them either. Conservative where libhdf5
//! is not: a structure that does not decode is left in place (a leak,
//! never a double free); the fractal heaps' huge objects and free-space
//! managers, the shared-message heap's reference counts and committed
//! datatypes used by attributes are left untouched (they only leak); no
//! extent is freed that passes the end of file or overlaps space that is
//! already free or pending, or the persistent managers' own structures.
//! Objects still named by object references are deleted all the same, as
//! libhdf5 does.

use super::FileEditor;
use crate::codec::Cursor;
use crate::error::Result;
use crate::format::btree_v1::{BTreeV1Node, NODE_TYPE_CHUNK, NODE_TYPE_GROUP};
use crate::format::local_heap::LocalHeapHeader;
use crate::format::message::shared::{SharedMessage, SharedTarget};
use crate::format::message::{
    flags, kind, AttributeInfo, ChunkIndex, Layout, LinkInfo, LinkTarget, SymbolTableMessage,
};
use crate::format::symbol_table_node::SymbolTableNode;
use crate::read::Object;
use crate::write::dense::DenseKind;
use crate::Addr;
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

/// What one deletion frees: metadata and raw data extents, and the objects
/// already deleted (reached again through another link: skipped).
#[derive(Debug, Default)]
struct Deletion {
    deleted: BTreeSet<u64>,
    /// Objects never deleted here (the group losing the link: its header
    /// is being rewritten; a wrong reference count must not take it).
    keep: BTreeSet<u64>,
    meta: Vec<(u64, u64)>,
    raw: Vec<(u64, u64)>,
}

impl FileEditor {
    /// Drop one hard link of the object at `a` (the link itself is already
    /// staged out): decrement its reference count, or delete it with its
    /// storage and, for a group, its members' links when it was the last.
    /// The space goes to the pending free lists (free after the commit).
    /// `parent` (the group that held the link) is never deleted.
    ///
    /// # Errors
    /// Decode errors of the object's header (nothing is staged then).
    pub(super) fn release_object(&mut self, a: u64, parent: u64) -> Result<()> {
        let mut del = Deletion::default();
        del.keep.insert(parent);
        del.keep.insert(self.reader.superblock().root.get());
        self.drop_link(a, &mut del, 0)?;
        self.free_deleted(del);
        Ok(())
    }

    /// The reference count of the (staged) header at `a`.
    fn ref_count(&mut self, a: u64) -> Result<u32> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        Ok(if h.version == 1 {
            h.chunks
                .first()
                .and_then(|c| c.prefix.get(4..8))
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map_or(1, u32::from_le_bytes)
        } else {
            match h.find(kind::REF_COUNT) {
                Some((_, m)) => {
                    crate::format::message::misc::RefCount::decode(
                        &mut Cursor::new(&m.data, 0),
                        ctx,
                    )?
                    .count
                }
                None => 1,
            }
        })
    }

    fn drop_link(&mut self, a: u64, del: &mut Deletion, depth: usize) -> Result<()> {
        if del.deleted.contains(&a) {
            return Ok(());
        }
        let count = self.ref_count(a)?;
        if count <= 1 && !del.keep.contains(&a) {
            self.delete_object(a, del, depth);
            return Ok(());
        }
        if count == 0 {
            return Ok(());
        }
        let h = self.header(a)?;
        if h.version == 1 {
            if let Some(c) = h.chunks.first_mut() {
                if let Some(b) = c.prefix.get_mut(4..8) {
                    b.copy_from_slice(&(count - 1).to_le_bytes());
                }
                c.dirty = true;
            }
        } else if let Some((loc, _)) = h.find(kind::REF_COUNT) {
            let mut body = alloc::vec![0u8];
            body.extend_from_slice(&(count - 1).to_le_bytes());
            h.replace(loc, &body, &mut |_| 0);
        }
        Ok(())
    }

    /// Delete the object at `a` (its header is staged): collect its
    /// storage into `del` and drop the links it holds. Structures that do
    /// not decode are left (leaked).
    fn delete_object(&mut self, a: u64, del: &mut Deletion, depth: usize) {
        del.deleted.insert(a);
        let Some(h) = self.headers.remove(&a) else {
            return;
        };
        self.datasets.remove(&a);
        self.dtypes.remove(&a);
        self.dense_sets.remove(&(a, DenseKind::Links));
        self.dense_sets.remove(&(a, DenseKind::Attrs));
        let ctx = self.ctx;
        for c in &h.chunks {
            let len = c.prefix.len() + c.cap + if h.version == 2 { 4 } else { 0 };
            del.meta.push((c.addr, len as u64));
        }
        // Dense attributes.
        if let Some((_, m)) = h.find(kind::ATTRIBUTE_INFO) {
            if let Ok(info) = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx) {
                if let Ok(ext) = self.dense_extents(info.heap, info.name_index, info.order_index) {
                    del.meta.extend(ext);
                }
            }
        }
        // Link storage.
        if let Some((_, m)) = h.find(kind::LINK_INFO) {
            if let Ok(info) = LinkInfo::decode(&mut Cursor::new(&m.data, 0), ctx) {
                if let Ok(ext) = self.dense_extents(info.heap, info.name_index, info.order_index) {
                    del.meta.extend(ext);
                }
            }
        }
        if let Some((_, m)) = h.find(kind::SYMBOL_TABLE) {
            if let Ok(stm) = SymbolTableMessage::decode(&mut Cursor::new(&m.data, 0), ctx) {
                if let Ok(ext) = self.stab_extents(&stm) {
                    del.meta.extend(ext);
                }
            }
        }
        // Objects this one holds a link to.
        let mut targets = Vec::new();
        if let Some((_, m)) = h.find(kind::DATATYPE) {
            if m.flags & flags::SHARED != 0 {
                if let Ok(SharedMessage {
                    target: SharedTarget::ObjectHeader(t),
                    ..
                }) = SharedMessage::decode(&mut Cursor::new(&m.data, 0), ctx)
                {
                    targets.push(t.get());
                }
            }
        }
        match self.reader.object_at(Addr(a), "") {
            Ok(Object::Dataset(d)) => {
                if let Ok((meta, raw)) = self.dataset_storage(&d) {
                    del.meta.extend(meta);
                    del.raw.extend(raw);
                }
            }
            Ok(Object::Group(g)) => {
                if let Ok(links) = g.links() {
                    for l in links {
                        if let LinkTarget::Hard(t) = l.target {
                            targets.push(t.get());
                        }
                    }
                }
            }
            _ => {}
        }
        if depth >= self.ctx.limits.max_btree_depth.max(64) {
            // Deeper members leak.
            return;
        }
        for t in targets {
            // A member whose header does not decode is left (leaked).
            let _ = self.drop_link(t, del, depth + 1);
        }
    }

    /// Space of a symbol table: local heap header and data segment, B-tree
    /// nodes and symbol table nodes.
    fn stab_extents(&self, stm: &SymbolTableMessage) -> Result<Vec<(u64, u64)>> {
        let ctx = self.ctx;
        let st = self.reader.storage();
        let mut out = Vec::new();
        let hl = LocalHeapHeader::encoded_len(ctx.sizes) as u64;
        let raw = st.read(stm.heap, hl)?;
        let hh = LocalHeapHeader::decode(&mut Cursor::new(&raw, stm.heap.get()), ctx)?;
        let (nodes, snods) = crate::read::btree_v1::group_tree_nodes(st, ctx, stm.btree)?;
        out.push((stm.heap.get(), hl));
        if let Some(d) = hh.data_addr.defined() {
            out.push((d.get(), hh.data_size));
        }
        let node_len =
            BTreeV1Node::encoded_len(NODE_TYPE_GROUP, ctx.sizes, 0, self.internal_k())? as u64;
        let snod_len = SymbolTableNode::encoded_len(ctx.sizes, self.leaf_k()) as u64;
        out.extend(nodes.into_iter().map(|n| (n.get(), node_len)));
        out.extend(snods.into_iter().map(|n| (n.get(), snod_len)));
        Ok(out)
    }

    /// A dataset's storage: (metadata: index structures, raw data).
    #[allow(clippy::type_complexity)]
    fn dataset_storage(
        &self,
        d: &crate::read::Dataset,
    ) -> Result<(Vec<(u64, u64)>, Vec<(u64, u64)>)> {
        let ctx = self.ctx;
        let st = self.reader.storage();
        let mut meta = Vec::new();
        let mut raw = Vec::new();
        // External storage: the files are not this file's space.
        if d.header().find(kind::EXTERNAL_FILES).is_some() {
            return Ok((meta, raw));
        }
        match d.layout() {
            Layout::Contiguous { addr, size } => {
                if let Some(a) = addr.defined() {
                    raw.push((a.get(), *size));
                }
            }
            Layout::Chunked(c) => {
                let es = usize::try_from(d.dtype().size())
                    .map_err(|_| crate::Error::limit("element size"))?;
                let space = d.space();
                let max = space.max_dims_or_dims();
                let chunk_bytes = super::chunk_len(&c.dims, es)? as u64;
                let ext = super::index::index_extents(st, ctx, c, max, chunk_bytes)?;
                if matches!(c.index, ChunkIndex::Implicit { .. }) {
                    // The chunks are the index's storage.
                    raw.extend(ext);
                    return Ok((meta, raw));
                }
                let records = crate::read::chunks::chunk_records(
                    st,
                    ctx,
                    c,
                    &space.dims,
                    max,
                    es,
                    !d.filters().filters.is_empty(),
                )?;
                if let ChunkIndex::BTreeV1 { addr } = &c.index {
                    if let Some(root) = addr.defined() {
                        let rank = c.dims.len();
                        let nodes = crate::read::btree_v1::chunk_tree_nodes(st, ctx, root, rank)?;
                        let node_len = BTreeV1Node::encoded_len(
                            NODE_TYPE_CHUNK,
                            ctx.sizes,
                            rank + 1,
                            self.istore_k,
                        )? as u64;
                        meta.extend(nodes.into_iter().map(|n| (n.get(), node_len)));
                    }
                }
                meta.extend(ext);
                raw.extend(records.into_iter().map(|r| (r.addr.get(), r.size)));
            }
            _ => {}
        }
        Ok((meta, raw))
    }

    /// Stage the space of a deletion as pending free. What may not be
    /// freed (empty, inside the superblock, past the end of file, over
    /// space already free or pending, over the managers' structures, raw
    /// extents over the deletion's metadata) is left out when the commit's
    /// frees are settled (`settle_free`).
    fn free_deleted(&mut self, mut del: Deletion) {
        super::space::coalesce(&mut del.meta);
        super::space::coalesce(&mut del.raw);
        self.pending_free.extend(del.meta);
        self.pending_free_raw.extend(del.raw);
    }
}
