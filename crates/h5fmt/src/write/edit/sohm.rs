//! Shared attribute messages (SOHM, spec III.H "Shared Object Header
//! Message Table") of edited files.
//!
//! A file whose superblock extension holds a shared message table may keep
//! attribute messages once, in the fractal heap of the table's attribute
//! index, and refer to them from object headers (a header message flagged
//! shared: version 3 reference of type 1 with the 8-byte heap id) or from
//! dense attribute storage (a name-index record flagged shared whose id is
//! the SOHM heap id). The index (an `SMLI` list block or a v2 B-tree of
//! type 7 records) counts the references of each heap object.
//!
//! The editor resolves such attributes through the SOHM heap (names for
//! lookups and collisions). Overwriting or deleting one removes the
//! reference from its object and drops one reference in the index, as
//! libhdf5's `H5SM_delete` does: the record's count is decremented, and a
//! record reaching 0 is removed. The index is rewritten copy-on-write at
//! the commit: the new list block (libhdf5's size for the table's list
//! maximum, records packed, checksum) or the new B-tree (rebuilt with the
//! old tree's node size and split/merge percentages; records keep their
//! order and bytes, only the count changes) goes to fresh space, and the
//! master table (`SMTB`, one checksummed block) is rewritten in place with
//! the new index address and message count **after** the object header
//! chunks: a process killed in between leaves counts too high (a leak,
//! never too low). The old index is freed after the commit. A B-tree left
//! with fewer records than the table's B-tree minimum becomes a list, and
//! an index left without records is deleted with its heap (addresses
//! undefined), as libhdf5 does.
//!
//! An attribute message whose record is removed drops the references of
//! its own shared datatype and dataspace in turn (`H5O__attr_delete`).
//! Deleting a whole object (`delete.rs`) drops the references of all its
//! messages in every index of the table (`FileEditor::sohm_try_drop`,
//! `sohm_here_id` for messages kept in full but flagged shareable, found
//! by content as `H5SM__message_compare` finds them) and removes the
//! records pointing into its header (`FileEditor::sohm_header_gone`); all
//! changed indexes are rewritten at one commit and switched by one write
//! of the master table.
//!
//! Not done, as leaks (counts never too low): a heap object whose record
//! is removed while other records remain stays in the heap (libhdf5 would
//! free it in the heap's free-space manager). Deleting or overwriting an
//! unshared attribute drops the references of its shared datatype and
//! dataspace (`objects.rs`, as `H5O__attr_delete`).
//!
//! New attributes are written unshared (libhdf5 reads unshared messages in
//! any file, and `H5O__shared_delete` leaves the index alone when it later
//! deletes them): sharing them would need the message hash and comparison
//! of libhdf5's index (`H5SM__message_compare`) and heap insertion.
//!
//! Everything is validated before it is written back: the master table and
//! list checksums, the B-tree's nodes, record type and size, the record
//! count against the table, one index holding attributes, unique heap ids,
//! extents inside the file, and a record with a count of at least the
//! references being dropped. Anything else refuses the edit (before it is
//! staged) and leaves the file unchanged.

use super::FileEditor;
use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::btree_v2::{build_tree, BTreeV2Header, BTreeV2Params};
use crate::format::message::misc::SohmTableMessage;
use crate::format::message::{kind, SharedMessage, SharedTarget};
use crate::format::sohm::{
    encode_list, SohmIndexKind, SohmList, SohmLocation, SohmRecord, SohmTable,
};
use crate::read::btree_v2::BTreeV2;
use crate::read::fractal_heap::FractalHeap;
use crate::read::object_header::read_object_header;
use crate::{Addr, Ctx};
use alloc::vec;
use alloc::vec::Vec;

/// v2 B-tree record type of SOHM indexes.
const REC_SOHM: u8 = 7;

/// The SOHM heap id of a shared attribute message body (a version 3
/// reference of type 1). References of any other form are refused.
///
/// # Errors
/// `Unsupported` for another form; decode errors.
pub(super) fn shared_attr_id(data: &[u8], ctx: Ctx) -> Result<[u8; 8]> {
    let sm = SharedMessage::decode(&mut Cursor::new(data, 0), ctx)?;
    match sm.target {
        SharedTarget::SohmHeap(id) if sm.version == 3 => Ok(id),
        _ => Err(Error::unsupported(
            "shared attribute message not kept in the SOHM heap",
        )),
    }
}

/// The reference body the header holds for the attribute shared under `id`.
pub(super) fn shared_attr_ref(id: &[u8; 8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(10);
    v.push(3);
    v.push(crate::format::message::shared::SHARE_TYPE_SOHM);
    v.extend_from_slice(id);
    v
}

/// One index of a file's SOHM table, loaded and validated.
struct Index {
    /// Position of the index in the table.
    pos: usize,
    /// Record slots in index order: decoded, and their bytes.
    slots: Vec<(SohmRecord, Vec<u8>)>,
    /// Extents of the index (list block, or B-tree header and nodes).
    extents: Vec<(u64, u64)>,
    /// The B-tree's creation parameters (B-tree indexes).
    params: Option<BTreeV2Params>,
    /// Records changed since it was loaded.
    changed: bool,
}

impl Index {
    fn refcount(&self, id: &[u8; 8]) -> Option<u32> {
        self.slots.iter().find_map(|(r, _)| match r.location {
            SohmLocation::Heap { refcount, heap_id } if heap_id == *id => Some(refcount),
            _ => None,
        })
    }

    /// Drop one reference to the heap object `id`: the record's count
    /// goes down, a record reaching 0 is removed. Returns whether it was
    /// removed; `None` when there is no such record or its count is 0.
    fn drop_ref(&mut self, id: &[u8; 8]) -> Option<bool> {
        let i = self.slots.iter().position(
            |(r, _)| matches!(r.location, SohmLocation::Heap { heap_id, .. } if heap_id == *id),
        )?;
        let (rec, raw) = self.slots.get_mut(i)?;
        let SohmLocation::Heap { refcount, heap_id } = rec.location else {
            return None;
        };
        let rc = refcount.checked_sub(1)?;
        self.changed = true;
        if rc == 0 {
            self.slots.remove(i);
            return Some(true);
        }
        // location (1), hash (4), then the count.
        raw.get_mut(5..9)?.copy_from_slice(&rc.to_le_bytes());
        rec.location = SohmLocation::Heap {
            refcount: rc,
            heap_id,
        };
        Some(false)
    }
}

/// The SOHM heap ids of an attribute message's datatype and dataspace when
/// they are shared in the SOHM heap (attribute message versions 2 and 3,
/// flag bits 0 and 1): `(message type, heap id)`. libhdf5 drops these
/// references when it deletes the attribute (`H5O__attr_delete`).
pub(super) fn attr_components(body: &[u8], ctx: Ctx) -> Vec<(u16, [u8; 8])> {
    attr_shared_fields(body, ctx)
        .into_iter()
        .filter_map(|(k, t)| match t {
            SharedTarget::SohmHeap(id) => Some((k, id)),
            SharedTarget::ObjectHeader(_) => None,
        })
        .collect()
}

/// The committed datatype (its object header's address) an attribute
/// message's datatype names, if any. libhdf5 drops the reference the
/// attribute holds to it when it deletes the attribute
/// (`H5O__attr_delete` → `H5O__shared_link_adj`).
pub(super) fn attr_committed_type(body: &[u8], ctx: Ctx) -> Option<u64> {
    attr_shared_fields(body, ctx)
        .into_iter()
        .find_map(|(k, t)| match t {
            SharedTarget::ObjectHeader(a) if k == kind::DATATYPE => Some(a.get()),
            _ => None,
        })
}

/// The shared datatype and dataspace fields of an attribute message
/// (versions 2 and 3, flag bits 0 and 1): `(message type, target)`.
fn attr_shared_fields(body: &[u8], ctx: Ctx) -> Vec<(u16, SharedTarget)> {
    let mut out = Vec::new();
    let mut c = Cursor::new(body, 0);
    let (Ok(version), Ok(fl), Ok(name_len), Ok(dt_len), Ok(ds_len)) = (
        c.read_u8(),
        c.read_u8(),
        c.read_u16(),
        c.read_u16(),
        c.read_u16(),
    ) else {
        return out;
    };
    if !(2..=3).contains(&version) || fl & 3 == 0 {
        return out;
    }
    if version == 3 && c.read_u8().is_err() {
        return out;
    }
    if c.skip(usize::from(name_len)).is_err() {
        return out;
    }
    for (bit, len, k) in [(1u8, dt_len, kind::DATATYPE), (2, ds_len, kind::DATASPACE)] {
        let Ok(field) = c.read_bytes(usize::from(len)) else {
            return out;
        };
        if fl & bit != 0 {
            if let Ok(m) = SharedMessage::decode(&mut Cursor::new(field, 0), ctx) {
                out.push((k, m.target));
            }
        }
    }
    out
}

fn corrupt(msg: &str, at: u64) -> Error {
    Error::corrupt(alloc::format!("SOHM: {msg}"), at)
}

impl FileEditor {
    /// The SOHM master table of the file: (address, table), if any.
    pub(super) fn sohm_table(&self) -> Result<Option<(u64, SohmTable)>> {
        let ctx = self.ctx;
        let Some(ext) = self.reader.superblock().extension.defined() else {
            return Ok(None);
        };
        let st = self.reader.storage();
        let h = read_object_header(st, ext, ctx)?;
        let Some(m) = h.find(kind::SOHM_TABLE) else {
            return Ok(None);
        };
        let msg = SohmTableMessage::decode(&mut m.cursor(), ctx)?;
        let len = SohmTable::encoded_len(msg.num_indexes, ctx) as u64;
        self.check_extent(msg.table.get(), len, "master table")?;
        let bytes = st.read(msg.table, len)?;
        let abs = st.base().saturating_add(msg.table.get());
        let table = SohmTable::decode(&mut Cursor::new(&bytes, abs), msg.num_indexes, ctx)?;
        Ok(Some((msg.table.get(), table)))
    }

    fn check_extent(&self, addr: u64, len: u64, what: &str) -> Result<()> {
        match addr.checked_add(len) {
            Some(end) if end <= self.committed_eof => Ok(()),
            _ => Err(corrupt(
                &alloc::format!("{what} passes the end of file"),
                addr,
            )),
        }
    }

    /// The table and the position of its one index holding messages of
    /// type `msg_type`.
    fn sohm_index_table(&self, msg_type: u16) -> Result<(u64, SohmTable, usize)> {
        let (addr, table) = self
            .sohm_table()?
            .ok_or_else(|| corrupt("shared message in a file without a table", 0))?;
        let pos = index_pos(&table, msg_type)
            .ok_or_else(|| corrupt("no single index holds the message type", addr))?;
        Ok((addr, table, pos))
    }

    /// The table and the position of its one index holding attributes.
    fn sohm_attr_table(&self) -> Result<(u64, SohmTable, usize)> {
        self.sohm_index_table(kind::ATTRIBUTE)
    }

    /// The attribute message shared under `id` in the SOHM heap.
    ///
    /// # Errors
    /// `Corrupt` without a table or attribute index; heap errors.
    pub(super) fn sohm_attr_body(&self, id: &[u8; 8]) -> Result<Vec<u8>> {
        let (addr, table, pos) = self.sohm_attr_table()?;
        let heap = table
            .indexes
            .get(pos)
            .and_then(|i| i.heap_addr.defined())
            .ok_or_else(|| corrupt("shared attribute but the index has no heap", addr))?;
        FractalHeap::open(self.reader.storage(), self.ctx, heap)?.get(id)
    }

    /// Load and validate the index at `pos` of the table.
    fn load_index(&self, table_addr: u64, table: &SohmTable, pos: usize) -> Result<Index> {
        let ctx = self.ctx;
        let st = self.reader.storage();
        let ix = *table
            .indexes
            .get(pos)
            .ok_or_else(|| corrupt("index vanished", table_addr))?;
        let index_addr = ix
            .index_addr
            .defined()
            .ok_or_else(|| corrupt("shared messages but the index is empty", table_addr))?;
        if ix.heap_addr.is_undef() {
            return Err(corrupt("index without a heap", table_addr));
        }
        let slot = SohmRecord::encoded_len(ctx);
        let n = usize::from(ix.num_messages);
        let mut slots = Vec::with_capacity(n);
        let (extents, params) = match ix.kind {
            SohmIndexKind::List => {
                if ix.num_messages > ix.list_cutoff {
                    return Err(corrupt(
                        "list holds more records than its maximum",
                        index_addr.get(),
                    ));
                }
                let list_size = 8 + usize::from(ix.list_cutoff) * slot;
                self.check_extent(index_addr.get(), list_size as u64, "record list")?;
                let used = 8 + n * slot;
                let bytes = st.read(index_addr, used as u64)?;
                let abs = st.base().saturating_add(index_addr.get());
                let list = SohmList::decode(&mut Cursor::new(&bytes, abs), ix.num_messages, ctx)?;
                for (i, r) in list.records.into_iter().enumerate() {
                    let raw = bytes
                        .get(4 + i * slot..4 + (i + 1) * slot)
                        .ok_or_else(|| corrupt("short record list", index_addr.get()))?;
                    slots.push((r, raw.to_vec()));
                }
                (vec![(index_addr.get(), list_size as u64)], None)
            }
            SohmIndexKind::BTree => {
                let t = BTreeV2::open(st, ctx, index_addr)?;
                let h = t.header();
                if h.record_type != REC_SOHM || usize::from(h.record_size) != slot {
                    return Err(corrupt(
                        "index B-tree of another record type or size",
                        index_addr.get(),
                    ));
                }
                if h.total_records != u64::from(ix.num_messages) {
                    return Err(corrupt(
                        "B-tree record count differs from the table",
                        index_addr.get(),
                    ));
                }
                let params = BTreeV2Params {
                    record_type: REC_SOHM,
                    node_size: h.node_size,
                    record_size: h.record_size,
                    split_percent: h.split_percent,
                    merge_percent: h.merge_percent,
                };
                let recs = t.records()?;
                if recs.len() != n {
                    return Err(corrupt(
                        "B-tree record count differs from the table",
                        index_addr.get(),
                    ));
                }
                for raw in recs {
                    let r = SohmRecord::decode(&mut Cursor::new(&raw, index_addr.get()), ctx)?;
                    slots.push((r, raw));
                }
                let ext = super::dense::btree_extents(st, ctx, index_addr)?;
                for (a, l) in &ext {
                    self.check_extent(*a, *l, "index B-tree node")?;
                }
                (ext, Some(params))
            }
        };
        let mut ids: Vec<[u8; 8]> = slots
            .iter()
            .filter_map(|(r, _)| match r.location {
                SohmLocation::Heap { heap_id, .. } => Some(heap_id),
                SohmLocation::ObjectHeader { .. } => None,
            })
            .collect();
        let total = ids.len();
        ids.sort_unstable();
        ids.dedup();
        if ids.len() != total {
            return Err(corrupt(
                "two records name one heap object",
                index_addr.get(),
            ));
        }
        Ok(Index {
            pos,
            slots,
            extents,
            params,
            changed: false,
        })
    }

    /// Check that one more reference to the attribute shared under `id`
    /// can be dropped (a record whose count exceeds the drops already
    /// staged). Call before the edit; stage the drop with
    /// [`FileEditor::sohm_drop`] once the reference is gone.
    ///
    /// # Errors
    /// `Corrupt` / `Unsupported` when the index does not validate.
    pub(super) fn sohm_check_drop(&self, id: &[u8; 8]) -> Result<()> {
        self.sohm_check_drop_of(kind::ATTRIBUTE, id)
    }

    /// [`FileEditor::sohm_check_drop`] for a message of type `msg_type`.
    ///
    /// # Errors
    /// `Corrupt` / `Unsupported` when the index does not validate.
    pub(super) fn sohm_check_drop_of(&self, msg_type: u16, id: &[u8; 8]) -> Result<()> {
        let (table_addr, table, pos) = self.sohm_index_table(msg_type)?;
        let ix = self.load_index(table_addr, &table, pos)?;
        let rc = ix
            .refcount(id)
            .ok_or_else(|| corrupt("shared message without a record in the index", table_addr))?;
        let staged = self
            .sohm_drops
            .iter()
            .filter(|(t, d)| d == id && index_pos(&table, *t) == Some(pos))
            .count();
        if u64::from(rc) <= staged as u64 {
            return Err(corrupt(
                "reference count lower than the references to it",
                table_addr,
            ));
        }
        Ok(())
    }

    /// Stage dropping one reference to the attribute shared under `id`
    /// (applied by the next commit).
    pub(super) fn sohm_drop(&mut self, id: [u8; 8]) {
        self.sohm_drops.push((kind::ATTRIBUTE, id));
    }

    /// Stage dropping one reference to a message of type `msg_type` shared
    /// under `id`, when the index validates and counts more references than
    /// are already staged; else nothing is staged (a leak, as deletions
    /// leave what does not validate). Returns whether it was staged.
    pub(super) fn sohm_try_drop(&mut self, msg_type: u16, id: [u8; 8]) -> bool {
        if self.sohm_check_drop_of(msg_type, &id).is_ok() {
            self.sohm_drops.push((msg_type, id));
            true
        } else {
            false
        }
    }

    /// The heap id of the index record a message kept in full in an object
    /// header but flagged shareable counts in (libhdf5 moves a message
    /// shared "here" to the heap when a second object shares it, and the
    /// first object's message then counts as one of the record's
    /// references): the record of the message's index whose hash is the
    /// message's (lookup3 of its encoding, seeded with its type) and whose
    /// heap object equals it. The body may carry the 8-byte padding of a
    /// version 1 header: shorter encodings without trailing zeros are
    /// tried too. `None` when no heap record matches.
    pub(super) fn sohm_here_id(&self, msg_type: u16, body: &[u8]) -> Option<[u8; 8]> {
        let (table_addr, table, pos) = self.sohm_index_table(msg_type).ok()?;
        let heap = table.indexes.get(pos)?.heap_addr.defined()?;
        let ix = self.load_index(table_addr, &table, pos).ok()?;
        let fh = FractalHeap::open(self.reader.storage(), self.ctx, heap).ok()?;
        let mut n = body.len();
        let min = n.saturating_sub(7);
        loop {
            let cand = body.get(..n)?;
            let hash = crate::codec::lookup3(cand, u32::from(msg_type));
            for (r, _) in &ix.slots {
                if let SohmLocation::Heap { heap_id, .. } = r.location {
                    if r.hash == hash && fh.get(&heap_id).ok().as_deref() == Some(cand) {
                        return Some(heap_id);
                    }
                }
            }
            if n <= min || body.get(n.checked_sub(1)?) != Some(&0) {
                return None;
            }
            n -= 1;
        }
    }

    /// Stage the removal of the index records that point into the deleted
    /// object header at `a` (messages shared "here", `H5SM_IN_OH`), applied
    /// by the next commit.
    pub(super) fn sohm_header_gone(&mut self, a: u64) {
        self.sohm_gone.push(a);
    }

    /// Apply the staged reference drops: write the new indexes to fresh
    /// space and return the master table write (address, bytes) the commit
    /// makes after the header chunks; the old indexes (and an emptied
    /// index's heap) are freed after the commit.
    ///
    /// As libhdf5's `H5SM_delete`: a record's count goes down, a record at
    /// 0 is removed, and an attribute message whose record goes drops the
    /// references of its own shared datatype and dataspace in turn. Records
    /// that name a deleted object header go. Drops that no longer match a
    /// record (a corrupt index) are skipped: a leak, never a count too low.
    pub(super) fn commit_sohm(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        if self.sohm_drops.is_empty() && self.sohm_gone.is_empty() {
            return Ok(None);
        }
        let ctx = self.ctx;
        let drops = core::mem::take(&mut self.sohm_drops);
        let gone = core::mem::take(&mut self.sohm_gone);
        // (The table validated when the drops were staged.)
        let Some((table_addr, mut table)) = self.sohm_table().ok().flatten() else {
            return Ok(None);
        };
        let mut loaded: Vec<Index> = Vec::new();
        // Records in deleted headers: every index may hold some.
        if !gone.is_empty() {
            for pos in 0..table.indexes.len() {
                if table
                    .indexes
                    .get(pos)
                    .is_none_or(|i| i.index_addr.is_undef())
                {
                    continue;
                }
                let Ok(mut ix) = self.load_index(table_addr, &table, pos) else {
                    continue;
                };
                let before = ix.slots.len();
                ix.slots.retain(|(r, _)| {
                    !matches!(r.location, SohmLocation::ObjectHeader { addr, .. } if gone.contains(&addr.get()))
                });
                ix.changed |= ix.slots.len() != before;
                loaded.push(ix);
            }
        }
        let mut queue: Vec<(u16, [u8; 8])> = drops;
        queue.reverse();
        let mut steps = 0usize;
        while let Some((t, id)) = queue.pop() {
            steps += 1;
            if steps > 1 << 20 {
                break;
            }
            let Some(pos) = index_pos(&table, t) else {
                continue;
            };
            if !loaded.iter().any(|ix| ix.pos == pos) {
                let Ok(ix) = self.load_index(table_addr, &table, pos) else {
                    continue;
                };
                loaded.push(ix);
            }
            let Some(ix) = loaded.iter_mut().find(|ix| ix.pos == pos) else {
                continue;
            };
            if ix.drop_ref(&id) != Some(true) || t != kind::ATTRIBUTE {
                continue;
            }
            // The attribute is gone: so are its references.
            let heap = table.indexes.get(pos).and_then(|i| i.heap_addr.defined());
            let body = heap.and_then(|h| {
                FractalHeap::open(self.reader.storage(), ctx, h)
                    .and_then(|fh| fh.get(&id))
                    .ok()
            });
            if let Some(body) = body {
                for c in attr_components(&body, ctx).into_iter().rev() {
                    queue.push(c);
                }
            }
        }
        let mut any = false;
        for ix in loaded.into_iter().filter(|ix| ix.changed) {
            any = true;
            let Some(mut entry) = table.indexes.get(ix.pos).copied() else {
                continue;
            };
            let n = ix.slots.len();
            let slot = SohmRecord::encoded_len(ctx);
            let list_size = 8 + usize::from(entry.list_cutoff) * slot;
            let old_kind = entry.kind;
            if n == 0 {
                // As H5SM__delete_index: the index and its heap go.
                if old_kind == SohmIndexKind::BTree && entry.btree_cutoff > 0 {
                    entry.kind = SohmIndexKind::List;
                }
                let (heap_ext, huge) =
                    self.dense_extents_split(entry.heap_addr, Addr::UNDEF, Addr::UNDEF)?;
                self.pending_free.extend(heap_ext);
                self.pending_free_raw.extend(huge);
                entry.index_addr = Addr::UNDEF;
                entry.heap_addr = Addr::UNDEF;
            } else {
                let as_list = match old_kind {
                    SohmIndexKind::List => true,
                    SohmIndexKind::BTree => {
                        n < usize::from(entry.btree_cutoff) && n <= usize::from(entry.list_cutoff)
                    }
                };
                let raws: Vec<&[u8]> = ix.slots.iter().map(|(_, r)| r.as_slice()).collect();
                if as_list {
                    let img = encode_list(
                        &ix.slots.iter().map(|(_, r)| r.clone()).collect::<Vec<_>>(),
                        list_size,
                        ctx,
                    )?;
                    let a = self.alloc(img.len() as u64);
                    self.write_at(a, &img)?;
                    entry.kind = SohmIndexKind::List;
                    entry.index_addr = Addr(a);
                } else {
                    let params = ix
                        .params
                        .ok_or_else(|| corrupt("B-tree parameters missing", table_addr))?;
                    let node_size = u64::from(params.node_size);
                    let built = {
                        let mut alloc = || Addr(self.alloc(node_size));
                        build_tree(params, &raws, ctx.sizes, &mut alloc)?
                    };
                    for (a, bytes) in &built.nodes {
                        self.write_at(a.get(), bytes)?;
                    }
                    let mut e = crate::codec::Encoder::new();
                    built.header.encode(&mut e, ctx.sizes);
                    debug_assert_eq!(e.len(), BTreeV2Header::encoded_len(ctx.sizes));
                    let a = self.alloc(e.len() as u64);
                    self.write_at(a, e.as_bytes())?;
                    entry.index_addr = Addr(a);
                }
            }
            entry.num_messages =
                u16::try_from(n).map_err(|_| corrupt("record count", table_addr))?;
            if let Some(slot) = table.indexes.get_mut(ix.pos) {
                *slot = entry;
            }
            self.pending_free.extend(ix.extents.iter().copied());
        }
        if !any {
            return Ok(None);
        }
        Ok(Some((table_addr, table.encode(ctx))))
    }
}

/// The position of the one index of `table` holding messages of type
/// `msg_type` (`None` when none or several do).
fn index_pos(table: &SohmTable, msg_type: u16) -> Option<usize> {
    let bit = 1u16.checked_shl(u32::from(msg_type))?;
    let mut found = table
        .indexes
        .iter()
        .enumerate()
        .filter(|(_, i)| i.message_types & bit != 0)
        .map(|(p, _)| p);
    let pos = found.next()?;
    found.next().is_none().then_some(pos)
}
