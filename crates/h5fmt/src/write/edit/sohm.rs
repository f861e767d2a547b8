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
//! Not done, as leaks (counts never too low): a heap object whose record
//! is removed while other records remain stays in the heap (libhdf5 would
//! free it in the heap's free-space manager); the shared datatype or
//! dataspace messages inside such an attribute keep their counts; deleting
//! a whole object leaves the counts of its shared attributes
//! (`delete.rs`).
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

/// Attribute message type bit of a SOHM index (`H5O_SHMESG_ATTR_FLAG`).
const ATTR_FLAG: u16 = 1 << kind::ATTRIBUTE;
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

/// The attribute index of a file's SOHM table, loaded and validated.
struct AttrIndex {
    table_addr: u64,
    table: SohmTable,
    /// Position of the attribute index in the table.
    pos: usize,
    /// Record slots in index order: decoded, and their bytes.
    slots: Vec<(SohmRecord, Vec<u8>)>,
    /// Extents of the index (list block, or B-tree header and nodes).
    extents: Vec<(u64, u64)>,
    /// The B-tree's creation parameters (B-tree indexes).
    params: Option<BTreeV2Params>,
}

impl AttrIndex {
    fn refcount(&self, id: &[u8; 8]) -> Option<u32> {
        self.slots.iter().find_map(|(r, _)| match r.location {
            SohmLocation::Heap { refcount, heap_id } if heap_id == *id => Some(refcount),
            _ => None,
        })
    }
}

fn corrupt(msg: &str, at: u64) -> Error {
    Error::corrupt(alloc::format!("SOHM: {msg}"), at)
}

impl FileEditor {
    /// The SOHM master table of the file: (address, table), if any.
    fn sohm_table(&self) -> Result<Option<(u64, SohmTable)>> {
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

    /// The table and the position of its one index holding attributes.
    fn sohm_attr_table(&self) -> Result<(u64, SohmTable, usize)> {
        let (addr, table) = self
            .sohm_table()?
            .ok_or_else(|| corrupt("shared attribute message in a file without a table", 0))?;
        let mut found = table
            .indexes
            .iter()
            .enumerate()
            .filter(|(_, i)| i.message_types & ATTR_FLAG != 0)
            .map(|(p, _)| p);
        let pos = found
            .next()
            .ok_or_else(|| corrupt("no index holds attribute messages", addr))?;
        if found.next().is_some() {
            return Err(corrupt("two indexes hold attribute messages", addr));
        }
        Ok((addr, table, pos))
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

    /// Load and validate the attribute index.
    fn load_attr_index(&self) -> Result<AttrIndex> {
        let ctx = self.ctx;
        let st = self.reader.storage();
        let (table_addr, table, pos) = self.sohm_attr_table()?;
        let ix = *table
            .indexes
            .get(pos)
            .ok_or_else(|| corrupt("index vanished", table_addr))?;
        let index_addr = ix
            .index_addr
            .defined()
            .ok_or_else(|| corrupt("shared attributes but the index is empty", table_addr))?;
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
        Ok(AttrIndex {
            table_addr,
            table,
            pos,
            slots,
            extents,
            params,
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
        let ix = self.load_attr_index()?;
        let rc = ix.refcount(id).ok_or_else(|| {
            corrupt(
                "shared attribute without a record in the index",
                ix.table_addr,
            )
        })?;
        let staged = self.sohm_drops.iter().filter(|d| *d == id).count();
        if u64::from(rc) <= staged as u64 {
            return Err(corrupt(
                "reference count lower than the references to it",
                ix.table_addr,
            ));
        }
        Ok(())
    }

    /// Stage dropping one reference to the attribute shared under `id`
    /// (applied by the next commit).
    pub(super) fn sohm_drop(&mut self, id: [u8; 8]) {
        self.sohm_drops.push(id);
    }

    /// Apply the staged reference drops: write the new index to fresh
    /// space and return the master table write (address, bytes) the commit
    /// makes after the header chunks; the old index (and an emptied
    /// index's heap) is freed after the commit.
    pub(super) fn commit_sohm(&mut self) -> Result<Option<(u64, Vec<u8>)>> {
        if self.sohm_drops.is_empty() {
            return Ok(None);
        }
        let ctx = self.ctx;
        let mut ix = self.load_attr_index()?;
        for id in &self.sohm_drops {
            let i = ix
                .slots
                .iter()
                .position(|(r, _)| matches!(r.location, SohmLocation::Heap { heap_id, .. } if heap_id == *id))
                .ok_or_else(|| corrupt("shared attribute without a record in the index", ix.table_addr))?;
            let Some((rec, raw)) = ix.slots.get_mut(i) else {
                continue;
            };
            let SohmLocation::Heap { refcount, heap_id } = rec.location else {
                continue;
            };
            let rc = refcount.checked_sub(1).ok_or_else(|| {
                corrupt(
                    "reference count lower than the references to it",
                    ix.table_addr,
                )
            })?;
            if rc == 0 {
                ix.slots.remove(i);
            } else {
                rec.location = SohmLocation::Heap {
                    refcount: rc,
                    heap_id,
                };
                // location (1), hash (4), then the count.
                let b = raw
                    .get_mut(5..9)
                    .ok_or_else(|| corrupt("short record", ix.table_addr))?;
                b.copy_from_slice(&rc.to_le_bytes());
            }
        }
        let mut entry = *ix
            .table
            .indexes
            .get(ix.pos)
            .ok_or_else(|| corrupt("index vanished", ix.table_addr))?;
        let n = ix.slots.len();
        let slot = SohmRecord::encoded_len(ctx);
        let list_size = 8 + usize::from(entry.list_cutoff) * slot;
        let old_kind = entry.kind;
        if n == 0 {
            // As H5SM__delete_index: the index and its heap go.
            if old_kind == SohmIndexKind::BTree && entry.btree_cutoff > 0 {
                entry.kind = SohmIndexKind::List;
            }
            let heap_ext = self.dense_extents(entry.heap_addr, Addr::UNDEF, Addr::UNDEF)?;
            self.pending_free.extend(heap_ext);
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
                    .ok_or_else(|| corrupt("B-tree parameters missing", ix.table_addr))?;
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
            u16::try_from(n).map_err(|_| corrupt("record count", ix.table_addr))?;
        if let Some(slot) = ix.table.indexes.get_mut(ix.pos) {
            *slot = entry;
        }
        self.pending_free.extend(ix.extents.iter().copied());
        Ok(Some((ix.table_addr, ix.table.encode(ctx))))
    }
}
