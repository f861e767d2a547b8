//! Dense links and attributes (fractal heap + v2 B-tree indexes) of
//! existing objects.
//!
//! The whole set of an object's dense links or attributes is kept in memory
//! while it is edited and rebuilt copy-on-write at each commit: a new heap
//! and new indexes (name, plus creation order when the object indexes it)
//! go to fresh space, then the commit rewrites the link or attribute info
//! message in its header chunk (one write), and the old heap and indexes
//! are freed once that commit is complete. Conversions follow libhdf5
//! (`H5G__obj_remove_update_linfo`, `H5O__attr_remove_update`): compact
//! storage turns dense when a link or attribute beyond `max_compact` (or an
//! attribute message above 64 KiB) is added, dense storage turns compact
//! when fewer than `min_dense` remain. When such a conversion touches
//! several header chunks, the chunk holding the info message is written
//! first when turning dense (libhdf5 ignores link and attribute messages
//! once the info message names a heap) and last when turning compact (the
//! old heap stays valid until then).

use super::FileEditor;
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::btree_v2::{decode_record, BTreeV2Header, Record};
use crate::format::fractal_heap::FractalHeapHeader;
use crate::format::free_space::FreeSpaceHeader;
use crate::format::message::{kind, AttributeInfo, Link, LinkInfo};
use crate::read::btree_v2::BTreeV2;
use crate::read::fractal_heap::FractalHeap;
use crate::write::dense::{build, DenseEntry, DenseKind};
use crate::Addr;
use alloc::vec::Vec;

/// `(address, length)` of stored structures.
pub(super) type Extents = Vec<(u64, u64)>;

/// The links or attributes of one object in dense storage, as staged.
#[derive(Debug, Clone)]
pub(super) struct DenseSet {
    pub kind: DenseKind,
    pub entries: Vec<DenseEntry>,
    /// Write a creation-order index.
    pub indexed: bool,
    /// Extents of the storage the file refers to now (freed after the
    /// commit that replaces it).
    pub old: Vec<(u64, u64)>,
    /// Changed since the last commit.
    pub dirty: bool,
    /// Turned dense by this edit: its info chunk is written first.
    pub converted: bool,
}

/// Extents of a v2 B-tree (header and nodes).
pub(super) fn btree_extents(
    st: &crate::io::Storage,
    ctx: crate::Ctx,
    a: Addr,
) -> Result<Vec<(u64, u64)>> {
    let mut out = Vec::new();
    if a.is_undef() {
        return Ok(out);
    }
    let t = BTreeV2::open(st, ctx, a)?;
    out.push((a.get(), BTreeV2Header::encoded_len(ctx.sizes) as u64));
    let ns = u64::from(t.header().node_size);
    for n in t.node_addrs()? {
        out.push((n.get(), ns));
    }
    Ok(out)
}

/// The extents of a fractal heap's huge objects: the records of its
/// huge-object v2 B-tree at `bt` (record types 1–4, each naming the
/// object's address and stored length).
fn huge_objects(st: &crate::io::Storage, ctx: crate::Ctx, bt: Addr) -> Result<Extents> {
    let t = BTreeV2::open(st, ctx, bt)?;
    let rt = t.record_type();
    if !(1..=4).contains(&rt) {
        return Err(Error::corrupt(
            alloc::format!("huge object B-tree of record type {rt}"),
            bt.get(),
        ));
    }
    let mut out = Vec::new();
    for raw in t.records()? {
        let (addr, len) = match decode_record(rt, &raw, ctx, 0, 0)? {
            Record::HugeIndirect { addr, len, .. }
            | Record::HugeIndirectFiltered { addr, len, .. }
            | Record::HugeDirect { addr, len }
            | Record::HugeDirectFiltered { addr, len, .. } => (addr, len),
            _ => continue,
        };
        if let Some(a) = addr.defined() {
            out.push((a.get(), len));
        }
    }
    Ok(out)
}

impl FileEditor {
    /// Read the dense storage an info message names: its entries (in name
    /// index order) and the extents of heap and indexes.
    pub(super) fn read_dense(
        &self,
        kind: DenseKind,
        heap: Addr,
        name_index: Addr,
        order_index: Addr,
    ) -> Result<(Vec<DenseEntry>, Extents)> {
        let st = self.reader.storage();
        let ctx = self.ctx;
        let h = FractalHeap::open(st, ctx, heap)?;
        let tree = BTreeV2::open(st, ctx, name_index)?;
        let mut entries = Vec::new();
        for rec in tree.records()? {
            let short = || Error::corrupt("short dense index record", name_index.get());
            match kind {
                DenseKind::Links => {
                    let id = rec.get(4..).ok_or_else(short)?;
                    let msg = h.get(id)?;
                    let l = Link::decode(&mut Cursor::new(&msg, 0), ctx)?;
                    entries.push(DenseEntry {
                        name: l.name.into_bytes(),
                        msg,
                        order: l.creation_order.unwrap_or(0),
                        flags: 0,
                    });
                }
                DenseKind::Attrs => {
                    let id = rec.get(..8).ok_or_else(short)?;
                    let flags = *rec.get(8).ok_or_else(short)?;
                    let order = rec
                        .get(9..13)
                        .and_then(|b| <[u8; 4]>::try_from(b).ok())
                        .map(u32::from_le_bytes)
                        .ok_or_else(short)?;
                    if flags & crate::format::message::flags::SHARED != 0 {
                        // The id names the shared-message heap, not this
                        // one: the entry keeps the reference (`sohm.rs`).
                        let id = <[u8; 8]>::try_from(id).map_err(|_| short())?;
                        let body = self.sohm_attr_body(&id)?;
                        let a = self.decode_attr(&body)?;
                        entries.push(DenseEntry {
                            name: a.name.into_bytes(),
                            msg: super::sohm::shared_attr_ref(&id),
                            order: u64::from(order),
                            flags,
                        });
                        continue;
                    }
                    let msg = h.get(id)?;
                    let a = self.decode_attr(&msg)?;
                    entries.push(DenseEntry {
                        name: a.name.into_bytes(),
                        msg,
                        order: u64::from(order),
                        flags,
                    });
                }
            }
        }
        let old = self.dense_extents(heap, name_index, order_index)?;
        Ok((entries, old))
    }

    /// Space of dense storage: the heap's header and blocks, its huge
    /// objects and their v2 B-tree, its free-space manager (header and
    /// section list), the name and creation-order indexes. Huge
    /// objects are listed with the rest (see
    /// [`FileEditor::dense_extents_split`] to keep them apart).
    pub(super) fn dense_extents(
        &self,
        heap: Addr,
        name_index: Addr,
        order_index: Addr,
    ) -> Result<Extents> {
        let (mut meta, raw) = self.dense_extents_split(heap, name_index, order_index)?;
        meta.extend(raw);
        Ok(meta)
    }

    /// [`FileEditor::dense_extents`] as (metadata, huge objects): libhdf5
    /// allocates and frees a heap's huge objects as raw data
    /// (`H5FD_MEM_FHEAP_HUGE_OBJ` is `H5FD_MEM_DRAW`), the rest as metadata.
    /// The huge objects are the records of the heap's huge-object B-tree
    /// (`H5HF__huge_delete`: every record's extent, then the tree).
    pub(super) fn dense_extents_split(
        &self,
        heap: Addr,
        name_index: Addr,
        order_index: Addr,
    ) -> Result<(Extents, Extents)> {
        let st = self.reader.storage();
        let ctx = self.ctx;
        let mut old = Vec::new();
        let mut huge = Vec::new();
        if let Some(heap) = heap.defined() {
            let h = FractalHeap::open(st, ctx, heap)?;
            let hh = h.header();
            let hlen = FractalHeapHeader::fixed_len(ctx.sizes) as u64
                + 4
                + if hh.has_filters() {
                    u64::from(ctx.sizes.lengths) + 4 + u64::from(hh.filter_len)
                } else {
                    0
                };
            old.push((heap.get(), hlen));
            for b in h.blocks()? {
                old.push((b.addr.get(), b.len));
            }
            if let Some(bt) = hh.huge_btree.defined() {
                old.extend(btree_extents(st, ctx, bt)?);
                huge = huge_objects(st, ctx, bt)?;
            }
            if let Some(fs) = hh.free_space_manager.defined() {
                // The heap's free-space manager (`H5HF__space_delete` →
                // `H5FS_delete`): its header and section list.
                let n = FreeSpaceHeader::encoded_len(ctx);
                let raw = st.read(fs, n as u64)?;
                let abs = st.base().saturating_add(fs.get());
                let fh = FreeSpaceHeader::decode(&mut Cursor::new(&raw, abs), ctx)?;
                old.push((fs.get(), n as u64));
                if let Some(sa) = fh.sections_addr.defined() {
                    old.push((sa.get(), fh.sections_alloc));
                }
            }
        }
        old.extend(btree_extents(st, ctx, name_index)?);
        old.extend(btree_extents(st, ctx, order_index)?);
        Ok((old, huge))
    }

    /// Point the object's link or attribute info message at `heap` and the
    /// name / creation-order indexes (`Addr::UNDEF` for compact storage),
    /// keeping its other fields and flags. Returns where the message is.
    pub(super) fn set_dense_addrs(
        &mut self,
        a: u64,
        dense: DenseKind,
        heap: Addr,
        name_index: Addr,
        order_index: Addr,
    ) -> Result<super::header::Loc> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        let info_kind = match dense {
            DenseKind::Links => kind::LINK_INFO,
            DenseKind::Attrs => kind::ATTRIBUTE_INFO,
        };
        let (loc, m) = h
            .find(info_kind)
            .ok_or_else(|| Error::corrupt("dense storage without its info message", a))?;
        let indexed = m.data.get(1).is_some_and(|f| f & 0x02 != 0);
        let mut e = Encoder::new();
        match dense {
            DenseKind::Links => {
                let mut info = LinkInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?;
                info.heap = heap;
                info.name_index = name_index;
                info.order_index = order_index;
                info.encode(&mut e, ctx, indexed);
            }
            DenseKind::Attrs => {
                let mut info = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?;
                info.heap = heap;
                info.name_index = name_index;
                info.order_index = order_index;
                info.encode(&mut e, ctx, indexed);
            }
        }
        self.with_header(a, |h, bump| h.replace(loc, e.as_bytes(), bump))?;
        Ok(loc)
    }

    /// Hold `set` as the dense storage of its kind of the object at `a`
    /// (keyed by object and kind: an object's dense links and dense
    /// attributes are separate sets).
    pub(super) fn insert_dense(&mut self, a: u64, set: DenseSet) {
        self.dense_sets.insert((a, set.kind), set);
    }

    /// Rebuild every changed dense set at fresh space and stage its info
    /// message. Called by the commit before any header chunk is encoded.
    pub(super) fn commit_dense(&mut self) -> Result<()> {
        let keys: Vec<(u64, DenseKind)> = self
            .dense_sets
            .iter()
            .filter(|(_, s)| s.dirty)
            .map(|(k, _)| *k)
            .collect();
        for key in keys {
            let a = key.0;
            let Some(set) = self.dense_sets.get(&key).cloned() else {
                continue;
            };
            let sizes = self.ctx.sizes;
            let out = {
                let mut alloc = |n: u64| self.alloc(n);
                build(sizes, set.kind, &set.entries, set.indexed, &mut alloc)?
            };
            let mut extents = Vec::with_capacity(out.writes.len());
            for (addr, bytes) in &out.writes {
                self.write_at(*addr, bytes)?;
                extents.push((*addr, bytes.len() as u64));
            }
            let loc =
                self.set_dense_addrs(a, set.kind, out.heap, out.name_index, out.order_index)?;
            if set.converted {
                self.switch_first.push((a, loc.0));
            }
            self.pending_free.extend(set.old.iter().copied());
            if let Some(s) = self.dense_sets.get_mut(&key) {
                s.old = extents;
                s.dirty = false;
                s.converted = false;
            }
        }
        Ok(())
    }
}
