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
//!   whole storage); compact and external storage free nothing (the
//!   external files are not this file's);
//! * dense attribute storage (`H5A__dense_delete`): the fractal heap's
//!   header and blocks, its huge objects and their B-tree
//!   (`H5HF__huge_delete`), its free-space manager (`H5HF__space_delete`),
//!   and the name and creation-order B-trees;
//! * a virtual dataset's mapping list in the global heap
//!   (`H5D__virtual_delete` → `H5HG_remove`), removed after the commit;
//! * the references its messages hold in the SOHM indexes
//!   (`H5O__delete_mesg` → `H5SM_delete`, see `sohm.rs`);
//! * a group's link storage and, through the links, its members
//!   (`H5G__stab_delete`, `H5G__dense_delete`, `H5O__link_delete`): the
//!   local heap, symbol-table B-tree nodes and `SNOD`s, or the dense heap
//!   and B-trees; every hard link of the group drops its target's reference
//!   count, recursively deleting targets whose count reaches 0;
//! * a dataset's committed datatype loses the reference the dataset held,
//!   and the committed datatypes of its unshared attributes, compact or
//!   dense, the references those held (`H5O__attr_delete`).
//!
//! Global heap objects an object refers to (variable-length data) are not
//! freed, as libhdf5 does not free them either. Conservative where libhdf5
//! is not: a structure that does not decode is left in place (a leak,
//! never a double free); committed datatypes used by attributes shared in
//! the SOHM heap are left untouched (they only leak); no
//! extent is freed that passes the end of file or overlaps space that is
//! already free or pending, the persistent managers' own structures, or
//! the storage of a dataset or header the editor holds (a corrupt file's
//! objects sharing bytes).
//! Objects still named by object references are deleted all the same, as
//! libhdf5 does.

use super::FileEditor;
use crate::codec::Cursor;
use crate::error::Result;
use crate::format::btree_v1::{BTreeV1Node, NODE_TYPE_CHUNK};
use crate::format::local_heap::LocalHeapHeader;
use crate::format::message::shared::{SharedMessage, SharedTarget};
use crate::format::message::{
    flags, kind, AttributeInfo, ChunkIndex, Layout, LinkInfo, LinkTarget, SymbolTableMessage,
};
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
        del.meta.extend(h.chunk_extents());
        // Read once: both the SOHM drops and the committed datatypes need them.
        let dense = self.dense_attrs(&h);
        self.stage_sohm_drops(a, &h, &dense);
        // Dense attributes.
        if let Some((_, m)) = h.find(kind::ATTRIBUTE_INFO) {
            if let Ok(info) = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx) {
                if let Ok((meta, huge)) =
                    self.dense_extents_split(info.heap, info.name_index, info.order_index)
                {
                    del.meta.extend(meta);
                    del.raw.extend(huge);
                }
            }
        }
        // Link storage.
        if let Some((_, m)) = h.find(kind::LINK_INFO) {
            if let Ok(info) = LinkInfo::decode(&mut Cursor::new(&m.data, 0), ctx) {
                if let Ok((meta, huge)) =
                    self.dense_extents_split(info.heap, info.name_index, info.order_index)
                {
                    del.meta.extend(meta);
                    del.raw.extend(huge);
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
        // Committed datatypes its attributes use (`H5O__attr_delete`).
        targets.extend(attr_committed_types(&h, &dense, ctx));
        match self.reader.object_at(Addr(a), "") {
            Ok(Object::Dataset(d)) => {
                let mut gheap = Vec::new();
                if let Ok((meta, raw)) = self.dataset_storage(&d, &mut gheap) {
                    del.meta.extend(meta);
                    del.raw.extend(raw);
                    self.gheap_removals.extend(gheap);
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

    /// The references the deleted header `h` (at `a`) holds to messages
    /// shared in the SOHM heap (`H5O__delete_mesg` → `H5SM_delete`), staged
    /// to be dropped at the commit: its shared messages of any type, the
    /// shared datatypes and dataspaces of its unshared attributes
    /// (`H5O__attr_delete`), its dense attributes likewise, and the index
    /// records pointing into the header itself (messages shared "here").
    /// References that do not validate are left (a leak).
    fn stage_sohm_drops(
        &mut self,
        a: u64,
        h: &super::header::HeaderImage,
        dense: &[crate::write::dense::DenseEntry],
    ) {
        if !matches!(self.sohm_table(), Ok(Some(_))) {
            return;
        }
        let ctx = self.ctx;
        let mut drops: Vec<(u16, [u8; 8])> = Vec::new();
        for m in h.chunks.iter().flat_map(|c| c.msgs.iter()) {
            if m.flags & flags::SHARED != 0 {
                if let Ok(SharedMessage {
                    target: SharedTarget::SohmHeap(id),
                    ..
                }) = SharedMessage::decode(&mut Cursor::new(&m.data, 0), ctx)
                {
                    drops.push((m.kind, id));
                }
            } else {
                if m.flags & flags::SHAREABLE != 0 {
                    // Shared "here" (`H5O_SHARE_TYPE_HERE`): libhdf5 looks
                    // the message up in the index by its content.
                    if let Some(id) = self.sohm_here_id(m.kind, &m.data) {
                        drops.push((m.kind, id));
                    }
                }
                if m.kind == kind::ATTRIBUTE {
                    drops.extend(super::sohm::attr_components(&m.data, ctx));
                }
            }
        }
        for e in dense {
            if e.flags & flags::SHARED != 0 {
                if let Ok(id) = super::sohm::shared_attr_id(&e.msg, ctx) {
                    drops.push((kind::ATTRIBUTE, id));
                }
            } else {
                drops.extend(super::sohm::attr_components(&e.msg, ctx));
            }
        }
        for (t, id) in drops {
            self.sohm_try_drop(t, id);
        }
        self.sohm_header_gone(a);
    }

    /// The dense attributes of header `h` as stored in the file (none when
    /// it has none or they do not decode).
    fn dense_attrs(&self, h: &super::header::HeaderImage) -> Vec<crate::write::dense::DenseEntry> {
        let Some((_, m)) = h.find(kind::ATTRIBUTE_INFO) else {
            return Vec::new();
        };
        match AttributeInfo::decode(&mut Cursor::new(&m.data, 0), self.ctx) {
            Ok(info) if info.heap.defined().is_some() => self
                .read_dense(
                    DenseKind::Attrs,
                    info.heap,
                    info.name_index,
                    info.order_index,
                )
                .map(|(entries, _)| entries)
                .unwrap_or_default(),
            _ => Vec::new(),
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
        let node_len = self.group_node_len()?;
        let snod_len = self.snod_len();
        out.extend(nodes.into_iter().map(|n| (n.get(), node_len)));
        out.extend(snods.into_iter().map(|n| (n.get(), snod_len)));
        Ok(out)
    }

    /// A dataset's storage: (metadata: index structures, raw data).
    #[allow(clippy::type_complexity)]
    fn dataset_storage(
        &self,
        d: &crate::read::Dataset,
        gheap: &mut Vec<(u64, u16)>,
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
            Layout::Virtual { heap_addr, index } => {
                // The mapping list's global heap object (`H5D__virtual_delete`
                // → `H5HG_remove`): removed after the commit.
                if let (Some(h), Ok(i)) = (heap_addr.defined(), u16::try_from(*index)) {
                    if i != 0 {
                        gheap.push((h.get(), i));
                    }
                }
            }
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
    /// extents over the deletion's metadata, over storage a live object
    /// still uses as far as the editor holds it) is left out when the
    /// commit's frees are settled (`settle_free`). The deleted object's
    /// own structures the editor held (a group's B-tree node, symbol table
    /// nodes, heap header) are released first, extent by extent, before
    /// adjacent extents are merged.
    fn free_deleted(&mut self, mut del: Deletion) {
        for e in &del.meta {
            self.held.remove(e);
        }
        super::space::coalesce(&mut del.meta);
        super::space::coalesce(&mut del.raw);
        self.pending_free.extend(del.meta);
        self.pending_free_raw.extend(del.raw);
    }

    /// The file space the open datasets, the staged headers and the held
    /// structures use, sorted and coalesced (a deleted object's are already
    /// dropped from all three).
    pub(super) fn live_extents(&self) -> Vec<(u64, u64)> {
        let mut live: Vec<(u64, u64)> = self
            .headers
            .values()
            .flat_map(super::header::HeaderImage::chunk_extents)
            .collect();
        for st in self.datasets.values() {
            match st {
                super::DsState::Contig(c) => live.push((c.addr, c.len)),
                super::DsState::Chunked(c) => {
                    live.extend(c.map.values().map(|s| (s.addr, s.size)));
                    live.extend(c.index_extents.iter().copied());
                }
            }
        }
        live.extend(self.held.iter().copied());
        super::space::coalesce(&mut live);
        live
    }

    /// Remove the staged global heap objects (a deleted virtual dataset's
    /// mapping list) from their collections, as libhdf5's `H5HG_remove`
    /// does: a collection left without objects is freed whole (raw data:
    /// `H5FD_MEM_GHEAP` maps to the raw data list), any other is compacted
    /// (the objects after a removed one move down, the free space object
    /// grows at the end) and rewritten in place. Returns those in-place
    /// writes, which the commit makes after the header chunks that dropped
    /// the references (a cut before leaves the objects: a leak). A
    /// collection that does not decode, or lacks the object, is left alone.
    pub(super) fn commit_gheap(&mut self) -> Vec<(u64, Vec<u8>)> {
        use crate::format::global_heap::{decode_collection_size, header_len, object_header_len};
        let mut staged = core::mem::take(&mut self.gheap_removals);
        staged.sort_unstable();
        staged.dedup();
        let mut writes = Vec::new();
        let ctx = self.ctx;
        let mut i = 0;
        while let Some(&(addr, _)) = staged.get(i) {
            let gone: Vec<u16> = staged
                .get(i..)
                .unwrap_or(&[])
                .iter()
                .take_while(|(a, _)| *a == addr)
                .map(|(_, x)| *x)
                .collect();
            i += gone.len();
            let st = self.reader.storage();
            let hl = header_len(ctx.sizes) as u64;
            let Ok(head) = st.read(Addr(addr), hl) else {
                continue;
            };
            let Ok(size) = decode_collection_size(&mut Cursor::new(&head, addr), ctx) else {
                continue;
            };
            if addr
                .checked_add(size)
                .is_none_or(|e| e > self.committed_eof)
                || size > self.ctx.limits.max_read_bytes
            {
                continue;
            }
            let Ok(bytes) = st.read(Addr(addr), size) else {
                continue;
            };
            let Ok(list) = crate::format::global_heap::Collection::decode_list(
                &mut Cursor::new(&bytes, addr),
                ctx,
            ) else {
                continue;
            };
            if !gone.iter().all(|g| list.iter().any(|(idx, _)| idx == g)) {
                continue;
            }
            let mut keep: Vec<_> = list
                .iter()
                .filter(|(idx, _)| !gone.contains(idx))
                .map(|(_, span)| *span)
                .collect();
            if keep.is_empty() {
                self.pending_free_raw.push((addr, size));
                continue;
            }
            // The kept objects in their order in the collection, moved
            // down over the removed ones.
            keep.sort_by_key(|s| s.start);
            let oh = object_header_len(ctx.sizes);
            let mut out = Vec::with_capacity(bytes.len());
            out.extend_from_slice(bytes.get(..hl as usize).unwrap_or(&[]));
            let mut ok = out.len() == hl as usize;
            for s in keep {
                let from = s.start.checked_sub(oh);
                let to = s
                    .len
                    .checked_add(7)
                    .map(|l| l & !7)
                    .and_then(|l| s.start.checked_add(l));
                match from.zip(to).and_then(|(f, t)| bytes.get(f..t)) {
                    Some(b) => out.extend_from_slice(b),
                    None => ok = false,
                }
            }
            let Some(free) = bytes.len().checked_sub(out.len()).filter(|_| ok) else {
                continue;
            };
            if free >= oh {
                let mut e = crate::codec::Encoder::new();
                e.put_u16(0);
                e.put_u16(0);
                e.put_u32(0);
                e.put_len(free as u64, ctx.sizes);
                out.extend_from_slice(e.as_bytes());
            }
            out.resize(bytes.len(), 0);
            writes.push((addr, out));
        }
        writes
    }
}

/// The committed datatypes the unshared attributes of header `h` use,
/// compact and `dense` (each attribute holds one reference). Attributes
/// shared in the SOHM heap keep theirs: the SOHM record owns the message.
fn attr_committed_types(
    h: &super::header::HeaderImage,
    dense: &[crate::write::dense::DenseEntry],
    ctx: crate::Ctx,
) -> Vec<u64> {
    let compact = h
        .chunks
        .iter()
        .flat_map(|c| c.msgs.iter())
        .filter(|m| m.kind == kind::ATTRIBUTE)
        .map(|m| (m.flags, m.data.as_slice()));
    let dense = dense.iter().map(|e| (e.flags, e.msg.as_slice()));
    compact
        .chain(dense)
        .filter(|(fl, _)| fl & flags::SHARED == 0)
        .filter_map(|(_, body)| super::sohm::attr_committed_type(body, ctx))
        .collect()
}
