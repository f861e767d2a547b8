//! Attributes and links of existing objects: add, overwrite, delete.

use super::dense::DenseSet;
use super::sohm::{shared_attr_id, shared_attr_ref};
use super::{header, usage, FileEditor};
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_GROUP};
use crate::format::datatype::Datatype;
use crate::format::global_heap;
use crate::format::local_heap::{build_data_segment, LocalHeapHeader};
use crate::format::message::attribute::MaybeShared;
use crate::format::message::{
    flags, kind, AttributeInfo, AttributeMessage, Dataspace, GroupInfo, Link, LinkInfo, LinkTarget,
    SpaceKind, SymbolTableMessage,
};
use crate::format::object_header::ObjectHeader;
use crate::format::symbol_table_node::{EntryCache, SymbolTableEntry, SymbolTableNode};
use crate::write::dense::{DenseEntry, DenseKind};
use crate::write::value::{AttrValue, ElementData};
use crate::Addr;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;

fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty()
        || name.contains('\0')
        || (what == "link" && (name.contains('/') || name == "."))
    {
        return Err(usage(alloc::format!("invalid {what} name {name:?}")));
    }
    Ok(())
}

/// Whether a local heap's data segment (names and free blocks, nothing
/// else) holds a metadata signature at an 8-byte boundary: then the segment
/// lies over another structure (a corrupt heap address; a fuzz finding: a
/// root heap over another group's symbol table node), and freeing it would
/// let the next allocation overwrite that structure. Such a segment is left
/// allocated (a leak) instead.
fn holds_signature(seg: &[u8]) -> bool {
    const SIGS: [&[u8; 4]; 22] = [
        b"SNOD", b"TREE", b"HEAP", b"OHDR", b"OCHK", b"GCOL", b"FRHP", b"FHDB", b"FHIB", b"BTHD",
        b"BTIN", b"BTLF", b"FSHD", b"FSSE", b"EAHD", b"EAIB", b"EADB", b"EASB", b"FAHD", b"FADB",
        b"SMTB", b"SMLI",
    ];
    seg.chunks(8)
        .any(|c| c.get(..4).is_some_and(|h| SIGS.iter().any(|s| h == *s)))
}

/// Whether a local heap's data size is accounted for by its names (each
/// with its NUL, padded to 8 bytes) and its free list, as libhdf5 keeps it.
/// A larger size (a corrupt file; a fuzz finding: a root heap's size raised
/// over a member's header continuation, which has no signature) is not
/// trusted as the extent to free when the heap moves: the old segment is
/// left allocated (a leak) instead.
fn heap_accounted(
    seg: &[u8],
    hdr: &LocalHeapHeader,
    names: impl Iterator<Item = u64>,
    len_size: usize,
) -> bool {
    let mut covered = 8u64.min(hdr.data_size);
    for off in names {
        let Some(rest) = usize::try_from(off).ok().and_then(|o| seg.get(o..)) else {
            return false;
        };
        let Some(nul) = rest.iter().position(|&b| b == 0) else {
            return false;
        };
        covered = covered.max((off + nul as u64 + 1).div_ceil(8) * 8);
    }
    let read_len = |o: u64| -> Option<u64> {
        let o = usize::try_from(o).ok()?;
        let b = seg.get(o..o.checked_add(len_size)?)?;
        Some(b.iter().rev().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    };
    let mut at = hdr.free_list.filter(|&o| o != 1);
    let mut blocks = 0;
    while let Some(o) = at {
        blocks += 1;
        let (Some(next), Some(size)) = (read_len(o), read_len(o.saturating_add(len_size as u64)))
        else {
            return false;
        };
        if blocks > 4096 {
            return false;
        }
        covered = covered.max(o.saturating_add(size));
        let undefined = if len_size >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * len_size)) - 1
        };
        at = (next != 1 && next != undefined).then_some(next);
    }
    hdr.data_size <= covered
}

/// A symbol-table group as found in the file.
struct Stab {
    btree_addr: u64,
    root: BTreeV1Node,
    heap_addr: u64,
    heap_hdr: LocalHeapHeader,
    heap: Vec<u8>,
    /// (SNOD address, node) per child of the root, in order.
    snods: Vec<(u64, SymbolTableNode)>,
}

impl Stab {
    fn name_at(&self, off: u64) -> Result<&[u8]> {
        let rest = usize::try_from(off)
            .ok()
            .and_then(|o| self.heap.get(o..))
            .ok_or_else(|| Error::corrupt("link name offset beyond the local heap", off))?;
        let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
        Ok(rest.get(..end).unwrap_or(&[]))
    }
    /// Validate what an insertion relies on (and what name lookups by
    /// readers rely on): one key more than children, names strictly
    /// increasing across the nodes, each node's names within its keys
    /// (above the left key, except in the first node, and at most the right
    /// key). An insertion into a group that breaks this would be unfindable.
    fn check_order(&self) -> Result<()> {
        if self.root.keys.len() != self.snods.len() + 1 {
            return Err(Error::corrupt(
                "group B-tree: keys do not match its children",
                self.btree_addr,
            ));
        }
        let key = |i: usize| -> Result<&[u8]> {
            match self.root.keys.get(i) {
                Some(Key::Group { heap_offset }) => self.name_at(*heap_offset),
                _ => Err(Error::corrupt("group B-tree key", self.btree_addr)),
            }
        };
        let mut prev: Option<&[u8]> = None;
        for (i, (addr, node)) in self.snods.iter().enumerate() {
            let (lo, hi) = (key(i)?, key(i + 1)?);
            for e in &node.entries {
                let name = self.name_at(e.name_offset)?;
                if prev.is_some_and(|p| name <= p) || (i > 0 && name <= lo) || name > hi {
                    return Err(Error::corrupt(
                        "group B-tree or symbol table node names out of order",
                        *addr,
                    ));
                }
                prev = Some(name);
            }
        }
        Ok(())
    }

    fn find(&self, name: &str) -> Result<Option<(usize, usize)>> {
        for (i, (_, n)) in self.snods.iter().enumerate() {
            for (j, e) in n.entries.iter().enumerate() {
                if self.name_at(e.name_offset)? == name.as_bytes() {
                    return Ok(Some((i, j)));
                }
            }
        }
        Ok(None)
    }
}

impl FileEditor {
    fn object_addr(&self, path: &str) -> Result<u64> {
        Ok(self.reader.object(path)?.addr().get())
    }

    pub(super) fn leaf_k(&self) -> u16 {
        let k = self.reader.superblock().group_leaf_k;
        if k == 0 {
            4
        } else {
            k
        }
    }

    /// Bytes of a group B-tree node at its full size for the superblock's
    /// K (as libhdf5 allocates and rewrites it).
    pub(super) fn group_node_len(&self) -> Result<u64> {
        Ok(BTreeV1Node::encoded_len(NODE_TYPE_GROUP, self.ctx.sizes, 0, self.internal_k())? as u64)
    }

    /// Bytes of a symbol table node at its full size for the leaf K.
    pub(super) fn snod_len(&self) -> u64 {
        SymbolTableNode::encoded_len(self.ctx.sizes, self.leaf_k()) as u64
    }

    pub(super) fn internal_k(&self) -> u16 {
        let k = self.reader.superblock().group_internal_k;
        if k == 0 {
            16
        } else {
            k
        }
    }

    /// The compact attribute messages of the (staged) header at `a`:
    /// (location, name, SOHM heap id of a shared message). Dense
    /// attributes are loaded into `dense_sets`.
    #[allow(clippy::type_complexity)]
    fn attr_locs(&mut self, a: u64) -> Result<Vec<((usize, usize), String, Option<[u8; 8]>)>> {
        self.load_dense_attrs(a)?;
        let h = self.header(a)?;
        let msgs: Vec<(header::Loc, u8, Vec<u8>)> = h
            .find_all(kind::ATTRIBUTE)
            .into_iter()
            .map(|(loc, m)| (loc, m.flags, m.data.clone()))
            .collect();
        let mut out = Vec::with_capacity(msgs.len());
        for (loc, fl, data) in msgs {
            let (name, id) = self.attr_name(fl, &data)?;
            out.push((loc, name, id));
        }
        Ok(out)
    }

    /// The name of an attribute message with header flags `fl`, and its
    /// SOHM heap id when it is shared (then resolved through the SOHM heap).
    fn attr_name(&self, fl: u8, data: &[u8]) -> Result<(String, Option<[u8; 8]>)> {
        let ctx = self.ctx;
        if fl & flags::SHARED != 0 {
            let id = shared_attr_id(data, ctx)?;
            let body = self.sohm_attr_body(&id)?;
            let msg = self.decode_attr(&body)?;
            return Ok((msg.name, Some(id)));
        }
        let msg = self.decode_attr(data)?;
        Ok((msg.name, None))
    }

    /// Decode an existing attribute message as the reader does, its shared
    /// (committed) datatype and dataspace resolved: libhdf5 decodes every
    /// attribute of an object before it creates or deletes one
    /// (`H5O__attr_exists`) and refuses the edit when one does not decode,
    /// and an edit must not leave an object whose attributes cannot be read.
    pub(super) fn decode_attr(&self, body: &[u8]) -> Result<AttributeMessage> {
        let msg = AttributeMessage::decode(&mut Cursor::new(body, 0), self.ctx)?;
        if let MaybeShared::Shared(_) = &msg.dtype {
            self.reader.resolve_dtype(&msg.dtype)?;
        }
        if let MaybeShared::Shared(_) = &msg.space {
            self.reader.resolve_space(&msg.space)?;
        }
        Ok(msg)
    }

    /// Load the dense attributes of the object at `a` (once).
    fn load_dense_attrs(&mut self, a: u64) -> Result<()> {
        if self.dense_sets.contains_key(&(a, DenseKind::Attrs)) {
            return Ok(());
        }
        let ctx = self.ctx;
        let h = self.header(a)?;
        let Some((_, m)) = h.find(kind::ATTRIBUTE_INFO) else {
            return Ok(());
        };
        let info = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?;
        if info.heap.is_undef() {
            return Ok(());
        }
        let indexed = h.attr_order_indexed();
        let (entries, old) = self.read_dense(
            DenseKind::Attrs,
            info.heap,
            info.name_index,
            info.order_index,
        )?;
        self.insert_dense(
            a,
            DenseSet {
                kind: DenseKind::Attrs,
                entries,
                indexed,
                old,
                dirty: false,
                converted: false,
            },
        );
        Ok(())
    }

    /// The next attribute creation order of the object at `a` (tracked
    /// objects), counted up in its attribute info message.
    fn next_attr_order(&mut self, a: u64) -> Result<u64> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        if !h.attr_order_tracked() {
            return Ok(0);
        }
        let Some((loc, m)) = h.find(kind::ATTRIBUTE_INFO) else {
            return Ok(0);
        };
        let indexed = m.data.get(1).is_some_and(|f| f & 0x02 != 0);
        let mut info = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?;
        let Some(next) = info.max_creation_index else {
            return Ok(0);
        };
        info.max_creation_index = Some(next.saturating_add(1));
        let mut e = Encoder::new();
        info.encode(&mut e, ctx, indexed);
        self.with_header(a, |h, bump| h.replace(loc, e.as_bytes(), bump))?;
        Ok(u64::from(next))
    }

    /// Move the compact attributes of `a` (plus `extra`) to a new dense set.
    fn attrs_to_dense(&mut self, a: u64, extra: Option<DenseEntry>) -> Result<()> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        if h.version != 2 {
            return Err(Error::unsupported(
                "dense attribute storage in a version 1 object header",
            ));
        }
        let indexed = h.attr_order_indexed();
        let tracked = h.attr_order_tracked();
        let msgs: Vec<(header::Loc, u8, Vec<u8>, u16)> = h
            .find_all(kind::ATTRIBUTE)
            .into_iter()
            .map(|(loc, m)| (loc, m.flags, m.data.clone(), m.co.unwrap_or(0)))
            .collect();
        let has_info = h.find(kind::ATTRIBUTE_INFO).is_some();
        let mut entries = Vec::new();
        let mut locs = Vec::new();
        for (loc, fl, data, co) in msgs {
            let (name, id) = self.attr_name(fl, &data)?;
            entries.push(DenseEntry {
                name: name.into_bytes(),
                // A shared message keeps its SOHM reference (the record's id).
                msg: id.as_ref().map_or(data, shared_attr_ref),
                order: u64::from(co),
                flags: fl,
            });
            locs.push(loc);
        }
        if !has_info {
            let mut e = Encoder::new();
            AttributeInfo {
                max_creation_index: tracked
                    .then(|| u16::try_from(entries.len()).unwrap_or(u16::MAX)),
                heap: Addr::UNDEF,
                name_index: Addr::UNDEF,
                order_index: Addr::UNDEF,
            }
            .encode(&mut e, ctx, indexed);
            self.with_header(a, |h, bump| {
                h.add(kind::ATTRIBUTE_INFO, 0, e.as_bytes(), bump)
            })?;
        }
        let h = self.header(a)?;
        locs.sort_unstable();
        for loc in locs.into_iter().rev() {
            h.remove(loc);
        }
        entries.extend(extra);
        self.insert_dense(
            a,
            DenseSet {
                kind: DenseKind::Attrs,
                entries,
                indexed,
                old: Vec::new(),
                dirty: true,
                converted: true,
            },
        );
        Ok(())
    }

    /// Create or overwrite attribute `name` of the object at `path` with
    /// `H5T_STD_REF` object references to the objects at `targets`
    /// (absolute paths of committed objects: those of the file as opened
    /// and those created in this session, which
    /// [`FileEditor::create_group`] and [`FileEditor::create_dataset`]
    /// commit at once): 1-D of `targets.len()` elements, or a scalar when
    /// `scalar`. Staged until [`FileEditor::flush`] like
    /// [`FileEditor::set_attr`].
    ///
    /// # Errors
    /// `NotFound` for a target or the object; `Usage` for `scalar` with
    /// other than one target; as [`FileEditor::set_attr`].
    pub fn set_attr_object_refs(
        &mut self,
        path: &str,
        name: &str,
        targets: &[&str],
        scalar: bool,
    ) -> Result<()> {
        if scalar && targets.len() != 1 {
            return Err(usage(
                "a scalar reference attribute takes exactly one target",
            ));
        }
        let mut addrs = Vec::with_capacity(targets.len());
        for t in targets {
            addrs.push(Addr(self.object_addr(t)?));
        }
        let value = AttrValue::object_refs(&addrs, self.ctx.sizes.offsets, scalar)
            .ok_or_else(|| usage("unsupported size of offsets for references"))?;
        self.set_attr(path, name, value)
    }

    /// Create or overwrite attribute `name` of the object at `path` (staged
    /// until [`FileEditor::flush`]). Variable-length values go to a new
    /// global heap collection. Dense attribute storage is edited (rebuilt
    /// at the commit); compact storage turns dense past the object's
    /// `max_compact` (8 by default) or for a message above 64 KiB.
    ///
    /// # Errors
    /// `NotFound` for the object; `Usage` for a bad name or a value whose
    /// bytes do not match its shape; `Unsupported` for a message above
    /// 64 KiB in a version 1 object header (no dense storage there).
    pub fn set_attr(&mut self, path: &str, name: &str, value: impl Into<AttrValue>) -> Result<()> {
        let value = value.into();
        check_name(name, "attribute")?;
        let a = self.object_addr(path)?;
        let existing = self.attr_locs(a)?;
        let n = value
            .num_elements()
            .ok_or_else(|| usage("attribute shape overflows"))?;
        let space = match &value.shape {
            None => Dataspace {
                kind: SpaceKind::Scalar,
                dims: Vec::new(),
                max_dims: None,
            },
            Some(d) => Dataspace {
                kind: SpaceKind::Simple,
                dims: d.clone(),
                max_dims: None,
            },
        };
        let v1 = self.header(a)?.version == 1;
        let version = if v1 { 1 } else { 3 };
        let too_big = |len: usize| {
            if v1 && len > crate::write::MAX_HEADER_MESSAGE {
                Err(Error::unsupported(
                    "attribute message above 64 KiB in a version 1 object header",
                ))
            } else if !crate::write::dense::fits_dense(len) {
                Err(Error::unsupported("attribute message of 4 GiB or more"))
            } else {
                Ok(())
            }
        };
        // Validate and size everything before any byte is written.
        let mut probe = AttributeMessage {
            name: name.to_string(),
            dtype: MaybeShared::Inline(value.dtype.clone()),
            space: MaybeShared::Inline(space),
            data: Vec::new(),
        };
        let data = match &value.data {
            ElementData::Raw(b) => {
                if Some(b.len() as u64) != n.checked_mul(value.dtype.size()) {
                    return Err(usage(alloc::format!(
                        "attribute {name:?}: {} bytes for {n} elements of {} bytes",
                        b.len(),
                        value.dtype.size()
                    )));
                }
                b.clone()
            }
            ElementData::VarLen(elems) => {
                if elems.len() as u64 != n {
                    return Err(usage("wrong number of variable-length elements"));
                }
                probe.data = vec![0; elems.len() * (8 + usize::from(self.ctx.sizes.offsets))];
                let mut enc = Encoder::new();
                probe.encode(&mut enc, self.ctx, version)?;
                too_big(enc.len())?;
                self.place_varlen(&value.dtype, elems)?
            }
            // Heap ids and references of another file being written.
            ElementData::File(_) => {
                return Err(usage(
                    "ElementData::File values belong to a FileWriter; give Raw or VarLen data",
                ))
            }
        };
        probe.data = data;
        let mut enc = Encoder::new();
        probe.encode(&mut enc, self.ctx, version)?;
        too_big(enc.len())?;
        let msg = enc.into_vec();
        if let Some(set) = self.dense_sets.get(&(a, DenseKind::Attrs)) {
            let hit = set.entries.iter().position(|e| e.name == name.as_bytes());
            let shared = match hit.and_then(|i| set.entries.get(i)) {
                Some(e) if e.flags & flags::SHARED != 0 => Some(shared_attr_id(&e.msg, self.ctx)?),
                _ => None,
            };
            if let Some(id) = &shared {
                self.sohm_check_drop(id)?;
            }
            if let Some(i) = hit {
                let mut old_body = None;
                if let Some(set) = self.dense_sets.get_mut(&(a, DenseKind::Attrs)) {
                    if let Some(e) = set.entries.get_mut(i) {
                        let old = core::mem::replace(&mut e.msg, msg);
                        if e.flags & flags::SHARED == 0 {
                            old_body = Some(old);
                        }
                        e.flags &= !flags::SHARED;
                        set.dirty = true;
                    }
                }
                if let Some(id) = shared {
                    self.sohm_drop(id);
                }
                if let Some(b) = old_body {
                    self.drop_attr_components(a, &b);
                }
                return Ok(());
            }
            let order = self.next_attr_order(a)?;
            if let Some(set) = self.dense_sets.get_mut(&(a, DenseKind::Attrs)) {
                set.entries.push(DenseEntry {
                    name: name.as_bytes().to_vec(),
                    msg,
                    order,
                    flags: 0,
                });
                set.dirty = true;
            }
            return Ok(());
        }
        let (max_compact, _) = self.header(a)?.attr_phase_change();
        let large = msg.len() > crate::write::MAX_HEADER_MESSAGE;
        let hit = existing.iter().find(|(_, nm, _)| nm == name);
        if let Some((_, _, Some(id))) = hit {
            self.sohm_check_drop(id)?;
        }
        match hit {
            Some((loc, _, id)) if !large => {
                let loc = *loc;
                let old_body = if id.is_none() {
                    self.msg_body(a, loc)
                } else {
                    None
                };
                self.with_header(a, |h, bump| {
                    h.set_flags(loc, 0);
                    h.replace(loc, &msg, bump);
                })?;
                if let Some(id) = id {
                    self.sohm_drop(*id);
                }
                if let Some(b) = old_body {
                    self.drop_attr_components(a, &b);
                }
            }
            Some((loc, _, id)) => {
                // Too large to stay compact: the object turns dense.
                let (ci, mi) = *loc;
                let old_body = if id.is_none() {
                    self.msg_body(a, *loc)
                } else {
                    None
                };
                let co = self
                    .header(a)?
                    .chunks
                    .get(ci)
                    .and_then(|c| c.msgs.get(mi))
                    .and_then(|m| m.co)
                    .unwrap_or(0);
                self.header(a)?.remove(*loc);
                let entry = DenseEntry {
                    name: name.as_bytes().to_vec(),
                    msg,
                    order: u64::from(co),
                    flags: 0,
                };
                self.attrs_to_dense(a, Some(entry))?;
                if let Some(id) = id {
                    self.sohm_drop(*id);
                }
                if let Some(b) = old_body {
                    self.drop_attr_components(a, &b);
                }
            }
            None => {
                let order = self.next_attr_order(a)?;
                if !v1 && (large || existing.len() + 1 > max_compact) {
                    let entry = DenseEntry {
                        name: name.as_bytes().to_vec(),
                        msg,
                        order,
                        flags: 0,
                    };
                    self.attrs_to_dense(a, Some(entry))?;
                } else {
                    let co = u16::try_from(order).unwrap_or(u16::MAX);
                    self.with_header(a, |h, bump| {
                        h.add_co(kind::ATTRIBUTE, 0, &msg, co, bump);
                    })?;
                }
            }
        }
        Ok(())
    }

    /// Delete attribute `name` of the object at `path` (staged). Dense
    /// storage turns compact below the object's `min_dense` (6 by default).
    ///
    /// # Errors
    /// `NotFound` when there is no such attribute.
    pub fn delete_attr(&mut self, path: &str, name: &str) -> Result<()> {
        let a = self.object_addr(path)?;
        let existing = self.attr_locs(a)?;
        if let Some(set) = self.dense_sets.get(&(a, DenseKind::Attrs)) {
            let Some(i) = set.entries.iter().position(|e| e.name == name.as_bytes()) else {
                return Err(Error::not_found(alloc::format!(
                    "{path}: no attribute {name:?}"
                )));
            };
            let shared = match set.entries.get(i) {
                Some(e) if e.flags & flags::SHARED != 0 => Some(shared_attr_id(&e.msg, self.ctx)?),
                _ => None,
            };
            if let Some(id) = &shared {
                self.sohm_check_drop(id)?;
            }
            let mut old_body = None;
            if let Some(set) = self.dense_sets.get_mut(&(a, DenseKind::Attrs)) {
                let e = set.entries.remove(i);
                if e.flags & flags::SHARED == 0 {
                    old_body = Some(e.msg);
                }
                set.dirty = true;
            }
            if let Some(id) = shared {
                self.sohm_drop(id);
            }
            if let Some(b) = old_body {
                self.drop_attr_components(a, &b);
            }
            let (_, min_dense) = self.header(a)?.attr_phase_change();
            self.maybe_to_compact(a, DenseKind::Attrs, min_dense)?;
            return Ok(());
        }
        let Some((loc, _, id)) = existing.into_iter().find(|(_, nm, _)| nm == name) else {
            return Err(Error::not_found(alloc::format!(
                "{path}: no attribute {name:?}"
            )));
        };
        if let Some(id) = &id {
            self.sohm_check_drop(id)?;
        }
        let old_body = if id.is_none() {
            self.msg_body(a, loc)
        } else {
            None
        };
        self.header(a)?.remove(loc);
        if let Some(id) = id {
            self.sohm_drop(id);
        }
        if let Some(b) = old_body {
            self.drop_attr_components(a, &b);
        }
        Ok(())
    }

    /// The body of the message at `loc` of the (staged) header at `a`.
    fn msg_body(&mut self, a: u64, loc: header::Loc) -> Option<Vec<u8>> {
        let h = self.header(a).ok()?;
        Some(h.chunks.get(loc.0)?.msgs.get(loc.1)?.data.clone())
    }

    /// An unshared attribute message `body` of the object at `owner` is
    /// gone: drop the references its shared datatype and dataspace hold in
    /// the SOHM indexes, and the one its committed datatype counts, as
    /// libhdf5's `H5O__attr_delete` does (staged; references that do not
    /// validate are left, a leak).
    fn drop_attr_components(&mut self, owner: u64, body: &[u8]) {
        let objects = self.attr_heap_objects(body);
        self.gheap_removals.extend(objects);
        for (t, id) in super::sohm::attr_components(body, self.ctx) {
            self.sohm_try_drop(t, id);
        }
        if let Some(t) = super::sohm::attr_committed_type(body, self.ctx) {
            // A datatype header that does not decode is left (a leak).
            let _ = self.release_object(t, owner);
        }
    }

    /// The global heap objects (collection address, index) that the
    /// elements of a variable-length attribute message `body` name: an
    /// attribute overwritten or deleted takes them out of their collections
    /// at the next commit (libhdf5 frees an overwritten value's objects in
    /// `H5Awrite`; a deleted attribute's too here, where libhdf5 leaks
    /// them). Only a top-level variable-length string or sequence: nested
    /// ones (in compounds, arrays, sequences of sequences) are left, a leak.
    fn attr_heap_objects(&self, body: &[u8]) -> Vec<(u64, u16)> {
        let Ok(msg) = self.decode_attr(body) else {
            return Vec::new();
        };
        let Ok(dtype) = self.reader.resolve_dtype(&msg.dtype) else {
            return Vec::new();
        };
        if !matches!(
            dtype,
            Datatype::VarLenString { .. } | Datatype::VarLenSequence { .. }
        ) {
            return Vec::new();
        }
        let o = usize::from(self.ctx.sizes.offsets);
        let mut out = Vec::new();
        for e in msg.data.chunks_exact(8 + o) {
            let mut c = Cursor::new(e, 0);
            let (Ok(len), Ok(addr), Ok(index)) =
                (c.read_u32(), c.read_addr(self.ctx.sizes), c.read_u32())
            else {
                continue;
            };
            if len > 0 && !addr.is_undef() && addr.0 != 0 {
                if let Ok(index) = u16::try_from(index) {
                    out.push((addr.0, index));
                }
            }
        }
        out
    }

    /// Turn the dense set of `a` back into messages when fewer than
    /// `min_dense` remain and each fits a header message (as libhdf5).
    fn maybe_to_compact(&mut self, a: u64, kind: DenseKind, min_dense: usize) -> Result<()> {
        let Some(set) = self.dense_sets.get(&(a, kind)) else {
            return Ok(());
        };
        if set.entries.len() >= min_dense
            || set
                .entries
                .iter()
                .any(|e| e.msg.len() > crate::write::MAX_HEADER_MESSAGE)
        {
            return Ok(());
        }
        let Some(set) = self.dense_sets.remove(&(a, kind)) else {
            return Ok(());
        };
        let (msg_kind, info_kind) = match set.kind {
            DenseKind::Links => (kind::LINK, kind::LINK_INFO),
            DenseKind::Attrs => (kind::ATTRIBUTE, kind::ATTRIBUTE_INFO),
        };
        let mut entries = set.entries.clone();
        entries.sort_by_key(|e| e.order);
        for e in &entries {
            let co = u16::try_from(e.order).unwrap_or(u16::MAX);
            self.with_header(a, |h, bump| h.add_co(msg_kind, e.flags, &e.msg, co, bump))?;
        }
        let loc = self.set_dense_addrs(a, set.kind, Addr::UNDEF, Addr::UNDEF, Addr::UNDEF)?;
        let ci = self.header(a)?.find(info_kind).map_or(loc.0, |(l, _)| l.0);
        self.switch_last.push((a, ci));
        self.pending_free.extend(set.old);
        Ok(())
    }

    /// Store variable-length elements (the bytes of each string, or the
    /// packed elements of each sequence) in a new global heap collection
    /// at fresh space, and return their in-file descriptors: the element
    /// bytes of `dtype` to give [`FileEditor::write_box`] for a dataset of
    /// that variable-length type. The collection is referenced only once a
    /// commit writes the data naming it (a crash before leaves unused
    /// space). At most 65534 non-empty elements per call.
    ///
    /// # Errors
    /// `Usage` for a fixed-size `dtype`, lengths that are not multiples of
    /// a sequence's element size, or too many elements; `Io`.
    pub fn put_varlen(&mut self, dtype: &Datatype, elems: &[Vec<u8>]) -> Result<Vec<u8>> {
        self.place_varlen(dtype, elems)
    }

    /// Store variable-length elements in a new global heap collection (at
    /// fresh space, referenced only once the commit writes the attribute).
    fn place_varlen(&mut self, dtype: &Datatype, elems: &[Vec<u8>]) -> Result<Vec<u8>> {
        let unit = match dtype {
            Datatype::VarLenString { .. } => 1,
            Datatype::VarLenSequence { base, .. } => base.size().max(1),
            _ => return Err(usage("variable-length data for a fixed-size type")),
        };
        let sizes = self.ctx.sizes;
        let objs: Vec<&[u8]> = elems
            .iter()
            .filter(|e| !e.is_empty())
            .map(Vec::as_slice)
            .collect();
        if objs.len() >= usize::from(u16::MAX) {
            return Err(usage("too many variable-length elements"));
        }
        let need = global_heap::header_len(sizes)
            + global_heap::objects_len(sizes, objs.iter().map(|o| o.len()))
            + global_heap::object_header_len(sizes);
        let size = need.max(global_heap::MIN_COLLECTION_SIZE).div_ceil(8) * 8;
        let addr = if objs.is_empty() {
            0
        } else {
            self.alloc_gheap(size as u64)
        };
        let mut out = Encoder::new();
        let mut list = Vec::new();
        for e in elems {
            let n = e.len() as u64;
            if !n.is_multiple_of(unit) {
                return Err(usage("vlen bytes not a multiple of the element size"));
            }
            out.put_u32(u32::try_from(n / unit).map_err(|_| usage("vlen element too long"))?);
            if e.is_empty() {
                out.put_addr(Addr(0), sizes);
                out.put_u32(0);
                continue;
            }
            #[allow(clippy::cast_possible_truncation)] // < u16::MAX, checked above
            let index = list.len() as u16 + 1;
            list.push((index, e.as_slice()));
            out.put_addr(Addr(addr), sizes);
            out.put_u32(u32::from(index));
        }
        if !list.is_empty() {
            let mut enc = Encoder::with_capacity(size);
            global_heap::encode_collection(&mut enc, self.ctx, size, &list)?;
            self.write_at(addr, enc.as_bytes())?;
        }
        Ok(out.into_vec())
    }

    // ---- links ----

    /// The compact link messages of the group at `a`: (location, link);
    /// `None` for a symbol-table group. Dense links are loaded into
    /// `dense_sets`.
    fn link_msgs(&mut self, a: u64) -> Result<Option<Vec<(header::Loc, Link)>>> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        if h.find(kind::SYMBOL_TABLE).is_some() {
            return Ok(None);
        }
        let Some((_, m)) = h.find(kind::LINK_INFO) else {
            return Err(usage("not a group"));
        };
        let info = LinkInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?;
        let indexed = m.data.get(1).is_some_and(|f| f & 0x02 != 0);
        let mut out = Vec::new();
        for (loc, m) in h.find_all(kind::LINK) {
            out.push((loc, Link::decode(&mut Cursor::new(&m.data, 0), ctx)?));
        }
        if !info.heap.is_undef() && !self.dense_sets.contains_key(&(a, DenseKind::Links)) {
            let (entries, old) = self.read_dense(
                DenseKind::Links,
                info.heap,
                info.name_index,
                info.order_index,
            )?;
            self.insert_dense(
                a,
                DenseSet {
                    kind: DenseKind::Links,
                    entries,
                    indexed,
                    old,
                    dirty: false,
                    converted: false,
                },
            );
        }
        Ok(Some(out))
    }

    /// The group info limits of the group at `a`: (max compact, min dense).
    fn group_limits(&mut self, a: u64) -> Result<(usize, usize)> {
        let ctx = self.ctx;
        let h = self.header(a)?;
        let gi = match h.find(kind::GROUP_INFO) {
            Some((_, m)) => GroupInfo::decode(&mut Cursor::new(&m.data, 0), ctx)?,
            None => GroupInfo::default(),
        };
        Ok((
            gi.max_compact.map_or(8, usize::from),
            gi.min_dense.map_or(6, usize::from),
        ))
    }

    /// The symbol table message of the group at `a`, its local heap's
    /// header and data segment. The root B-tree node is rewritten in place
    /// at its full size for the superblock's K (as libhdf5 sizes it): a
    /// node that size would run past the end of file is `Corrupt` (a file
    /// whose K does not match its nodes; the write would go over whatever
    /// follows, and over space allocated later at the end of file).
    fn stab_parts(&mut self, a: u64) -> Result<(SymbolTableMessage, LocalHeapHeader, Vec<u8>)> {
        let ctx = self.ctx;
        let st = self.reader.storage().clone();
        let h = self.header(a)?;
        let (_, m) = h
            .find(kind::SYMBOL_TABLE)
            .ok_or_else(|| usage("not a symbol-table group"))?;
        let stm = SymbolTableMessage::decode(&mut Cursor::new(&m.data, 0), ctx)?;
        let node_len = self.group_node_len()?;
        self.check_fits(stm.btree.get(), node_len, "group B-tree node")?;
        let hl = LocalHeapHeader::encoded_len(ctx.sizes) as u64;
        let raw = st.read(stm.heap, hl)?;
        let heap_hdr = LocalHeapHeader::decode(&mut Cursor::new(&raw, stm.heap.get()), ctx)?;
        let heap = crate::read::local_heap::LocalHeap::read(&st, ctx, stm.heap)?.data;
        Ok((stm, heap_hdr, heap))
    }

    fn load_stab(&mut self, a: u64, heap_moves: bool) -> Result<Stab> {
        let ctx = self.ctx;
        let st = self.reader.storage().clone();
        let (stm, heap_hdr, heap) = self.stab_parts(a)?;
        let plen = BTreeV1Node::prefix_len(ctx.sizes) as u64;
        let pre = st.read(stm.btree, plen)?;
        let (ty, level, entries) = BTreeV1Node::peek(&pre, stm.btree.get())?;
        if ty != NODE_TYPE_GROUP {
            return Err(Error::corrupt(
                "group B-tree of the wrong type",
                stm.btree.get(),
            ));
        }
        if level != 0 {
            return Err(Error::unsupported(
                "editing a symbol-table group with more than one B-tree level",
            ));
        }
        let len = BTreeV1Node::used_len(ty, ctx.sizes, 0, entries)?;
        let raw = st.read(stm.btree, len)?;
        let root = BTreeV1Node::decode(&mut Cursor::new(&raw, stm.btree.get()), ctx, 0)?;
        let snod_len = self.snod_len();
        let mut snods = Vec::new();
        for c in &root.children {
            self.check_fits(c.get(), snod_len, "symbol table node")?;
            snods.push((c.get(), crate::read::btree_v1::read_snod(&st, ctx, *c)?));
        }
        let refs: Vec<(u64, &SymbolTableNode)> = snods.iter().map(|(a, n)| (*a, n)).collect();
        self.check_stab_extents(
            &[stm.btree.get()],
            &refs,
            stm.heap.get(),
            &heap_hdr,
            heap_moves,
        )?;
        let node_len = self.group_node_len()?;
        let hl = LocalHeapHeader::encoded_len(ctx.sizes) as u64;
        self.hold(stm.btree.get(), node_len);
        self.hold(stm.heap.get(), hl);
        for (a, _) in &snods {
            self.hold(*a, snod_len);
        }
        let stab = Stab {
            btree_addr: stm.btree.get(),
            root,
            heap_addr: stm.heap.get(),
            heap_hdr,
            heap,
            snods,
        };
        stab.check_order()?;
        Ok(stab)
    }

    /// Stage an in-place write of a structure outside object headers, and
    /// hold its extent (no free overlapping it is settled).
    fn stage_in_place(&mut self, addr: u64, bytes: Vec<u8>) {
        self.hold(addr, bytes.len() as u64);
        self.raw_writes.push((addr, bytes));
    }

    /// `Corrupt` unless `len` bytes at `addr` (a structure the editor may
    /// rewrite in place at that size) end within the file.
    fn check_fits(&self, addr: u64, len: u64, what: &str) -> Result<()> {
        if addr.checked_add(len).is_none_or(|e| e > self.eof) {
            return Err(Error::corrupt(
                alloc::format!("{what}: its size for the superblock's K runs past the end of file"),
                addr,
            ));
        }
        Ok(())
    }

    /// A symbol-table group's nodes are rewritten and freed at their full
    /// size for the superblock's K, which is safe only when those extents
    /// hold nothing else. libhdf5 allocates each node at that size and
    /// zeroes a symbol table node past its entries (its B-tree nodes it
    /// does not: old files keep stale bytes there). So: every symbol table
    /// node's unused entries are zero, and no node's full extent overlaps
    /// another node, the local heap or a member's object header. Otherwise
    /// (a K that does not match the nodes, or nodes laid over other
    /// structures) the group is `Corrupt` for editing, before any write:
    /// rewriting it would overwrite whatever lies in those extents. With
    /// `heap_moves` (an insertion: the heap data goes to a fresh segment
    /// before any node is rewritten, and the old one is not freed) the old
    /// heap data may lie in a node's unused bytes, as libhdf5 tolerates.
    fn check_stab_extents(
        &self,
        btree_nodes: &[u64],
        snods: &[(u64, &SymbolTableNode)],
        heap_addr: u64,
        heap_hdr: &LocalHeapHeader,
        heap_moves: bool,
    ) -> Result<()> {
        let st = self.reader.storage();
        let node_len = self.group_node_len()?;
        let snod_len = self.snod_len();
        let entry_len = SymbolTableEntry::encoded_len(self.ctx.sizes) as u64;
        let mut extents: Vec<(u64, u64, &str)> = Vec::new();
        for &a in btree_nodes {
            self.check_fits(a, node_len, "group B-tree node")?;
            extents.push((a, node_len, "group B-tree node"));
        }
        for &(a, node) in snods {
            self.check_fits(a, snod_len, "symbol table node")?;
            let used = SymbolTableNode::PREFIX_LEN as u64 + node.entries.len() as u64 * entry_len;
            let slack = snod_len
                .checked_sub(used)
                .ok_or_else(|| Error::corrupt("symbol table node: more entries than 2 × K", a))?;
            if st.read(Addr(a + used), slack)?.iter().any(|&b| b != 0) {
                return Err(Error::corrupt(
                    "symbol table node: its unused entries are not zero (the superblock's K \
                     does not match the node, or the node overlaps other data)",
                    a,
                ));
            }
            extents.push((a, snod_len, "symbol table node"));
        }
        let hl = LocalHeapHeader::encoded_len(self.ctx.sizes) as u64;
        extents.push((heap_addr, hl, "local heap"));
        let heap_data = heap_hdr
            .data_addr
            .defined()
            .map(|d| (d.get(), heap_hdr.data_size, "local heap data"));
        if let Some(d) = heap_data.filter(|_| !heap_moves) {
            extents.push(d);
        }
        extents.retain(|e| e.1 > 0);
        extents.sort_unstable();
        for w in extents.windows(2) {
            if let [(a, len, what), (b, _, other)] = w {
                if a.saturating_add(*len) > *b {
                    return Err(Error::corrupt(
                        alloc::format!(
                            "group {what} at its size for the superblock's K overlaps a {other}"
                        ),
                        *a,
                    ));
                }
            }
        }
        // A member's header inside the heap data is corrupt whether or not
        // the heap moves: the old segment would be freed over the header (a
        // fuzz finding: a root heap's data size grown over `/dset`'s header).
        extents.extend(heap_data.filter(|d| heap_moves && d.1 > 0));
        for (_, node) in snods {
            for e in &node.entries {
                let h = e.header.get();
                if let Some((a, _, what)) =
                    extents.iter().find(|(a, len, _)| h >= *a && h - a < *len)
                {
                    return Err(Error::corrupt(
                        alloc::format!("a member's object header lies inside the group's {what}"),
                        *a,
                    ));
                }
            }
        }
        Ok(())
    }

    /// Record that the structure at `addr` (`len` bytes) is live and
    /// rewritten in place by this editor.
    fn hold(&mut self, addr: u64, len: u64) {
        if len > 0 {
            self.held.insert((addr, len));
        }
    }

    fn encode_btree(&self, n: &BTreeV1Node) -> Result<Vec<u8>> {
        let mut enc = Encoder::new();
        n.encode(&mut enc, self.ctx, 0, self.internal_k())?;
        Ok(enc.into_vec())
    }

    fn encode_snod(&self, n: &SymbolTableNode) -> Result<Vec<u8>> {
        let mut enc = Encoder::new();
        n.encode(&mut enc, self.ctx, self.leaf_k())?;
        Ok(enc.into_vec())
    }

    /// Create an empty group `name` in the group at `parent`, and commit.
    ///
    /// # Errors
    /// `Usage` for a bad or existing name; `NotFound` for the parent;
    /// `Unsupported` for a link message above 64 KiB going to dense
    /// storage, shared attribute messages in dense storage, decode errors
    /// of the group's storage. The file is unchanged on error. Compact,
    /// dense and symbol-table groups (any B-tree depth) are supported.
    pub fn create_group(&mut self, parent: &str, name: &str) -> Result<()> {
        let pa = self.check_new_link(parent, name)?;
        let ctx = self.ctx;
        let version = self.header(pa)?.version;
        if self.link_msgs(pa)?.is_some() {
            // A new-style empty group: link info + group info.
            let mut li = Encoder::new();
            LinkInfo {
                max_creation_index: None,
                heap: Addr::UNDEF,
                name_index: Addr::UNDEF,
                order_index: Addr::UNDEF,
            }
            .encode(&mut li, ctx, false);
            let mut gi = Encoder::new();
            GroupInfo::default().encode(&mut gi, ctx);
            let mut msgs = vec![
                (kind::LINK_INFO, li.into_vec()),
                (kind::GROUP_INFO, gi.into_vec()),
            ];
            if version == 2 {
                msgs.push((kind::ATTRIBUTE_INFO, self.empty_attr_info()));
            }
            let child = self.new_header(version, msgs)?;
            self.link_new_object(pa, name, child, EntryCache::None)?;
        } else {
            // An old-style empty group: B-tree root without children, local heap.
            let bt = BTreeV1Node {
                node_type: NODE_TYPE_GROUP,
                level: 0,
                left: Addr::UNDEF,
                right: Addr::UNDEF,
                keys: vec![Key::Group { heap_offset: 0 }],
                children: Vec::new(),
            };
            let bt_bytes = self.encode_btree(&bt)?;
            let bt_addr = self.alloc(bt_bytes.len() as u64);
            self.write_at(bt_addr, &bt_bytes)?;
            let (seg, _) = build_data_segment(&[], ctx.sizes);
            let hl = LocalHeapHeader::encoded_len(ctx.sizes);
            let heap_addr = self.alloc((hl + seg.len()) as u64);
            let mut he = Encoder::new();
            LocalHeapHeader {
                data_size: seg.len() as u64,
                free_list: Some(8),
                data_addr: Addr(heap_addr + hl as u64),
            }
            .encode(&mut he, ctx);
            he.put_bytes(&seg);
            self.write_at(heap_addr, he.as_bytes())?;
            let mut sm = Encoder::new();
            SymbolTableMessage {
                btree: Addr(bt_addr),
                heap: Addr(heap_addr),
            }
            .encode(&mut sm, ctx);
            let child = self.new_header(version, vec![(kind::SYMBOL_TABLE, sm.into_vec())])?;
            self.link_new_object(
                pa,
                name,
                child,
                EntryCache::Group {
                    btree: Addr(bt_addr),
                    heap: Addr(heap_addr),
                },
            )?;
        }
        self.flush()
    }

    fn empty_attr_info(&self) -> Vec<u8> {
        let mut e = Encoder::new();
        AttributeInfo {
            max_creation_index: None,
            heap: Addr::UNDEF,
            name_index: Addr::UNDEF,
            order_index: Addr::UNDEF,
        }
        .encode(&mut e, self.ctx, false);
        e.into_vec()
    }

    /// Validate a new link `name` in `parent` (name, no collision, room in
    /// a symbol table node); returns the parent's header address.
    fn check_new_link(&mut self, parent: &str, name: &str) -> Result<u64> {
        check_name(name, "link")?;
        let pa = self.object_addr(parent)?;
        match self.link_msgs(pa)? {
            Some(links) => {
                let dense_hit = self
                    .dense_sets
                    .get(&(pa, DenseKind::Links))
                    .is_some_and(|s| s.entries.iter().any(|e| e.name == name.as_bytes()));
                if dense_hit || links.iter().any(|(_, l)| l.name == name) {
                    return Err(usage(alloc::format!("{parent}: a link {name:?} exists")));
                }
            }
            None => {
                // Any B-tree depth: the committed group (link operations
                // commit at once) answers the lookup.
                if self.reader.group(parent)?.link(name).is_ok() {
                    return Err(usage(alloc::format!("{parent}: a link {name:?} exists")));
                }
                // Validate a one-level group before anything is allocated
                // for the new object (a refused edit leaves the file as it
                // was); deeper groups are validated by their own path.
                match self.load_stab(pa, true) {
                    Err(e) if e.kind() != crate::ErrorKind::Unsupported => return Err(e),
                    _ => {}
                }
            }
        }
        Ok(pa)
    }

    /// Link the (already written) object at `child` into the group at `pa`.
    fn link_new_object(
        &mut self,
        pa: u64,
        name: &str,
        child: u64,
        cache: EntryCache,
    ) -> Result<()> {
        let ctx = self.ctx;
        let Some(compact) = self.link_msgs(pa)? else {
            // One-level trees with room at the root: in place; else rebuilt.
            match self.load_stab(pa, true) {
                Ok(stab) if self.stab_has_room(&stab, name)? => {
                    return self.stab_insert(stab, name, Addr(child), cache);
                }
                Ok(_) => {}
                Err(e) if e.kind() == crate::ErrorKind::Unsupported => {}
                Err(e) => return Err(e),
            }
            self.stab_rebuild(pa, Some((name, Addr(child), cache)), None)?;
            return Ok(());
        };
        // Creation order: the link info message holds the next one.
        let h = self.header(pa)?;
        let (iloc, im) = h
            .find(kind::LINK_INFO)
            .ok_or_else(|| usage("not a group"))?;
        let indexed = im.data.get(1).is_some_and(|f| f & 0x02 != 0);
        let mut info = LinkInfo::decode(&mut Cursor::new(&im.data, 0), ctx)?;
        let order = info.max_creation_index;
        if let Some(o) = order {
            info.max_creation_index = Some(o.saturating_add(1));
            let mut e = Encoder::new();
            info.encode(&mut e, ctx, indexed);
            self.with_header(pa, |h, bump| h.replace(iloc, e.as_bytes(), bump))?;
        }
        let mut lm = Encoder::new();
        Link {
            name: name.to_string(),
            creation_order: order,
            target: LinkTarget::Hard(Addr(child)),
        }
        .encode(&mut lm, ctx)?;
        let entry = DenseEntry {
            name: name.as_bytes().to_vec(),
            msg: lm.into_vec(),
            order: order.unwrap_or(0),
            flags: 0,
        };
        if let Some(set) = self.dense_sets.get_mut(&(pa, DenseKind::Links)) {
            set.entries.push(entry);
            set.dirty = true;
            return Ok(());
        }
        let (max_compact, _) = self.group_limits(pa)?;
        let fits = |m: &[u8]| crate::write::dense::fits_dense(m.len());
        let h = self.header(pa)?;
        let msgs: Vec<(header::Loc, Vec<u8>)> = h
            .find_all(kind::LINK)
            .into_iter()
            .map(|(l, m)| (l, m.data.clone()))
            .collect();
        // A message too large for a header goes dense (a huge heap object)
        // however few the links.
        let too_big = entry.msg.len() > crate::write::MAX_HEADER_MESSAGE;
        if (compact.len() < max_compact && !too_big)
            || !msgs.iter().all(|(_, m)| fits(m))
            || !fits(&entry.msg)
        {
            self.with_header(pa, |h, bump| h.add(kind::LINK, 0, &entry.msg, bump))?;
            return Ok(());
        }
        // Past max_compact: the group turns dense.
        let mut entries = Vec::with_capacity(msgs.len() + 1);
        for ((loc, l), (_, raw)) in compact.iter().zip(&msgs) {
            let _ = loc;
            entries.push(DenseEntry {
                name: l.name.as_bytes().to_vec(),
                msg: raw.clone(),
                order: l.creation_order.unwrap_or(0),
                flags: 0,
            });
        }
        entries.push(entry);
        let h = self.header(pa)?;
        let mut locs: Vec<header::Loc> = msgs.iter().map(|(l, _)| *l).collect();
        locs.sort_unstable();
        for loc in locs.into_iter().rev() {
            h.remove(loc);
        }
        self.insert_dense(
            pa,
            DenseSet {
                kind: DenseKind::Links,
                entries,
                indexed,
                old: Vec::new(),
                dirty: true,
                converted: true,
            },
        );
        Ok(())
    }

    /// Create dataset `name` in the group at `parent` (its elements read
    /// as the fill value), and commit. Chunked datasets start with no chunk
    /// stored, under the chunk index and layout message version libhdf5
    /// chooses for the editor's [`FileEditor::set_format`] bound (by
    /// default a v1 B-tree, as libhdf5 does for h5py's default bound);
    /// contiguous ones are allocated and filled at once.
    /// Write data afterwards with [`FileEditor::write_box`] or
    /// [`FileEditor::append`].
    ///
    /// Variable-length datatypes are created chunked (chunks required);
    /// write their elements as descriptors from [`FileEditor::put_varlen`].
    ///
    /// # Errors
    /// `Usage` for inconsistent shapes, a bad or existing name, a
    /// variable-length type without chunks; `Unsupported` for zstd in a
    /// build without it; as [`FileEditor::create_group`].
    pub fn create_dataset(&mut self, parent: &str, name: &str, spec: &NewDataset) -> Result<()> {
        let ctx = self.ctx;
        let es = spec.dtype.size();
        if es == 0 {
            return Err(usage(
                "datasets of empty elements are not created by the editor",
            ));
        }
        if spec.dtype.is_variable_length() && spec.chunks.is_none() {
            return Err(usage(
                "variable-length datasets are created chunked by the editor (give chunks)",
            ));
        }
        let rank = spec.shape.len();
        let max: Vec<u64> = match &spec.maxshape {
            Some(m) if m.len() != rank => {
                return Err(usage("maxshape rank differs from the shape"))
            }
            Some(m) => m
                .iter()
                .map(|x| x.unwrap_or(Dataspace::UNLIMITED))
                .collect(),
            None => spec.shape.clone(),
        };
        if spec.shape.iter().zip(&max).any(|(d, m)| d > m) {
            return Err(usage("shape beyond maxshape"));
        }
        if rank == 0 {
            return Err(usage("scalar datasets are not created by the editor"));
        }
        let fill = match &spec.fill {
            Some(f) if f.len() as u64 != es => return Err(usage("fill value of the wrong size")),
            Some(f) => f.clone(),
            None => vec![0; usize::try_from(es).map_err(|_| usage("element size"))?],
        };
        let pipeline = {
            let mut filters = Vec::new();
            if spec.shuffle {
                filters.push(crate::format::message::Filter {
                    id: 2,
                    name: None,
                    flags: 1,
                    client_data: vec![u32::try_from(es).map_err(|_| usage("element size"))?],
                });
            }
            if let Some(level) = spec.deflate {
                filters.push(crate::format::message::Filter {
                    id: 1,
                    name: None,
                    flags: 1,
                    client_data: vec![u32::from(level.min(9))],
                });
            }
            if let Some(level) = spec.zstd {
                if !crate::filter::can_encode(crate::filter::ZSTD) {
                    return Err(Error::unsupported("zstd is not available in this build"));
                }
                filters.push(crate::format::message::Filter {
                    id: crate::filter::ZSTD,
                    name: None,
                    flags: 1,
                    #[allow(clippy::cast_sign_loss)] // negative levels as the plugin reads them
                    client_data: vec![level as u32],
                });
            }
            if spec.lz4 {
                filters.push(crate::format::message::Filter {
                    id: crate::filter::LZ4,
                    name: None,
                    flags: 1,
                    client_data: vec![0],
                });
            }
            crate::format::message::FilterPipeline { filters }
        };
        let chunked = spec.chunks.is_some() || max != spec.shape || !pipeline.filters.is_empty();
        let chunks = match &spec.chunks {
            Some(c) if c.len() != rank || c.contains(&0) => {
                return Err(usage("chunk shape of the wrong rank or with a zero"))
            }
            Some(c) => c.clone(),
            None if chunked => return Err(usage("resizable or filtered datasets need chunks")),
            None => Vec::new(),
        };
        let pa = self.check_new_link(parent, name)?;
        // Under a layout-4 bound libhdf5 writes a version 2 header (with
        // dataspace v2, fill value v3, filter pipeline v2) whatever the
        // file and the parent hold; otherwise the parent's version decides.
        let layout4 = chunked && self.format.layout4();
        let version = if layout4 { 2 } else { self.header(pa)?.version };
        let earliest = version == 1;
        let mut msgs = Vec::new();
        let mut e = Encoder::new();
        let space = Dataspace {
            kind: SpaceKind::Simple,
            dims: spec.shape.clone(),
            max_dims: Some(max),
        };
        space.encode(&mut e, ctx, if earliest { 1 } else { 2 })?;
        msgs.push((kind::DATASPACE, e.into_vec()));
        let mut e = Encoder::new();
        spec.dtype.encode(
            &mut e,
            ctx,
            spec.dtype.min_version().max(if earliest { 1 } else { 3 }),
        )?;
        msgs.push((kind::DATATYPE, e.into_vec()));
        let mut e = Encoder::new();
        crate::format::message::FillValue {
            version: if layout4 { 3 } else { 2 },
            alloc_time: if chunked { 3 } else { 1 },
            fill_time: 2,
            state: if spec.fill.is_some() {
                crate::format::message::FillState::User
            } else {
                crate::format::message::FillState::Default
            },
            value: spec.fill.clone(),
        }
        .encode(&mut e, ctx)?;
        msgs.push((kind::FILL_VALUE, e.into_vec()));
        if !pipeline.filters.is_empty() {
            let mut e = Encoder::new();
            pipeline.encode(&mut e, ctx, if earliest { 1 } else { 2 })?;
            msgs.push((kind::FILTER_PIPELINE, e.into_vec()));
        }
        let layout = if chunked {
            // The writer's choice and creation parameters; no chunk yet.
            crate::format::message::Layout::Chunked(crate::write::chunked::empty_layout(
                self.format,
                &space,
                &chunks,
                es,
                !pipeline.filters.is_empty(),
                false, // incremental allocation: never the implicit index
            ))
        } else {
            let n = spec
                .shape
                .iter()
                .try_fold(es, |a, &d| a.checked_mul(d))
                .ok_or_else(|| usage("dataset size overflows"))?;
            let nu = usize::try_from(n).map_err(|_| usage("dataset too large"))?;
            if n == 0 {
                // No storage, as libhdf5 leaves an empty dataset (it
                // refuses a defined address at the end of file as "invalid
                // dataset size").
                crate::format::message::Layout::Contiguous {
                    addr: Addr::UNDEF,
                    size: 0,
                }
            } else {
                let a = self.alloc_raw(n);
                // Filled in pieces of at most 1 MiB.
                let per = (1usize << 20) / fill.len() * fill.len();
                let block = fill.repeat(per.max(fill.len()) / fill.len());
                let mut at = 0usize;
                while at < nu {
                    let k = block.len().min(nu - at);
                    self.write_at(a + at as u64, block.get(..k).unwrap_or(&[]))?;
                    at += k;
                }
                crate::format::message::Layout::Contiguous {
                    addr: Addr(a),
                    size: n,
                }
            }
        };
        let mut e = Encoder::new();
        layout.encode(&mut e, ctx)?;
        msgs.push((kind::LAYOUT, e.into_vec()));
        if !earliest {
            msgs.push((kind::ATTRIBUTE_INFO, self.empty_attr_info()));
        }
        let child = self.new_header(version, msgs)?;
        self.link_new_object(pa, name, child, EntryCache::None)?;
        self.created.insert(child);
        self.flush()
    }

    /// Write a new object header (one chunk, with room to grow) at fresh space.
    fn new_header(&mut self, version: u8, msgs: Vec<(u16, Vec<u8>)>) -> Result<u64> {
        let mut messages: Vec<crate::format::message::Message> = msgs
            .into_iter()
            .map(|(k, mut data)| {
                if version == 1 {
                    data.resize(data.len().div_ceil(8) * 8, 0);
                }
                crate::format::message::Message {
                    kind: k,
                    flags: 0,
                    creation_order: None,
                    data,
                    offset: 0,
                }
            })
            .collect();
        messages.push(crate::format::message::Message {
            kind: kind::NIL,
            flags: 0,
            creation_order: None,
            data: vec![0; 128],
            offset: 0,
        });
        let oh = ObjectHeader {
            version,
            flags: 0,
            refcount: 1,
            messages,
            times: None,
            attr_phase_change: None,
        };
        let mut enc = Encoder::new();
        oh.encode(&mut enc)?;
        let a = self.alloc(enc.len() as u64);
        self.write_at(a, enc.as_bytes())?;
        Ok(a)
    }

    /// Whether inserting `name` into the one-level tree `stab` keeps the
    /// root within its capacity.
    fn stab_has_room(&self, stab: &Stab, name: &str) -> Result<bool> {
        let cap = 2 * usize::from(self.leaf_k());
        if stab.snods.is_empty() {
            return Ok(true);
        }
        let i = self.stab_target(stab, name)?;
        let full = stab
            .snods
            .get(i)
            .is_some_and(|(_, n)| n.entries.len() >= cap);
        Ok(!(full && stab.root.children.len() >= 2 * usize::from(self.internal_k())))
    }

    /// The child of the root B-tree node that takes `name`.
    fn stab_target(&self, stab: &Stab, name: &str) -> Result<usize> {
        let n = stab.snods.len();
        for i in 0..n {
            let Some(Key::Group { heap_offset }) = stab.root.keys.get(i + 1) else {
                return Err(Error::corrupt("group B-tree key", stab.btree_addr));
            };
            if name.as_bytes() <= stab.name_at(*heap_offset)? {
                return Ok(i);
            }
        }
        Ok(n.saturating_sub(1))
    }

    /// Insert an entry: new heap data segment (fresh) and heap header, the
    /// B-tree root when its keys change, the symbol table node; staged as
    /// in-place writes in that order (each state a valid file).
    fn stab_insert(
        &mut self,
        stab: Stab,
        name: &str,
        target: Addr,
        cache: EntryCache,
    ) -> Result<()> {
        let ctx = self.ctx;
        let off = stab.heap_hdr.data_size;
        let mut seg = stab.heap.clone();
        seg.extend_from_slice(name.as_bytes());
        seg.push(0);
        seg.resize(seg.len().div_ceil(8) * 8, 0);
        let seg_addr = self.alloc(seg.len() as u64);
        self.write_at(seg_addr, &seg)?;
        let mut he = Encoder::new();
        LocalHeapHeader {
            data_size: seg.len() as u64,
            free_list: stab.heap_hdr.free_list,
            data_addr: Addr(seg_addr),
        }
        .encode(&mut he, ctx);
        self.stage_in_place(stab.heap_addr, he.into_vec());
        if let Some(old) = stab.heap_hdr.data_addr.defined() {
            let names = stab
                .snods
                .iter()
                .flat_map(|(_, n)| n.entries.iter().map(|e| e.name_offset));
            let len_size = usize::from(self.ctx.sizes.lengths);
            if !holds_signature(&stab.heap)
                && heap_accounted(&stab.heap, &stab.heap_hdr, names, len_size)
            {
                self.pending_free.push((old.get(), stab.heap_hdr.data_size));
            }
        }
        let entry = SymbolTableEntry {
            name_offset: off,
            header: target,
            cache,
        };
        // Names, the new one included, for ordering.
        let mut heap_view = stab.heap.clone();
        heap_view.resize(usize::try_from(off).unwrap_or(0), 0);
        heap_view.extend_from_slice(seg.get(usize::try_from(off).unwrap_or(0)..).unwrap_or(&[]));
        let name_of = |o: u64| -> Vec<u8> {
            let rest = heap_view
                .get(usize::try_from(o).unwrap_or(usize::MAX)..)
                .unwrap_or(&[]);
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            rest.get(..end).unwrap_or(&[]).to_vec()
        };
        if stab.snods.is_empty() {
            let node = SymbolTableNode {
                entries: vec![entry],
            };
            let bytes = self.encode_snod(&node)?;
            let a = self.alloc(bytes.len() as u64);
            self.write_at(a, &bytes)?;
            let mut root = stab.root.clone();
            root.children = vec![Addr(a)];
            root.keys = vec![
                Key::Group { heap_offset: 0 },
                Key::Group { heap_offset: off },
            ];
            let b = self.encode_btree(&root)?;
            self.stage_in_place(stab.btree_addr, b);
            return Ok(());
        }
        let i = self.stab_target(&stab, name)?;
        let (snod_addr, mut node) = stab.snods.get(i).cloned().ok_or_else(|| usage("no node"))?;
        let pos = node
            .entries
            .iter()
            .position(|e| name_of(e.name_offset).as_slice() > name.as_bytes())
            .unwrap_or(node.entries.len());
        node.entries.insert(pos, entry);
        // The root's upper key of this child must stay ≥ every name in it.
        let mut root = stab.root.clone();
        let mut root_changed = false;
        if i + 1 == stab.snods.len() {
            if let Some(Key::Group { heap_offset }) = stab.root.keys.get(i + 1) {
                if name_of(*heap_offset).as_slice() < name.as_bytes() {
                    if let Some(k) = root.keys.get_mut(i + 1) {
                        *k = Key::Group { heap_offset: off };
                    }
                    root_changed = true;
                }
            }
        }
        let cap = 2 * usize::from(self.leaf_k());
        if node.entries.len() > cap {
            // Split: two new nodes (fresh), then the root points to both.
            let right = SymbolTableNode {
                entries: node.entries.split_off(node.entries.len() / 2),
            };
            let sep = node
                .entries
                .last()
                .map(|e| e.name_offset)
                .ok_or_else(|| usage("empty split"))?;
            let mut addrs = Vec::new();
            for n in [&node, &right] {
                let bytes = self.encode_snod(n)?;
                let a = self.alloc(bytes.len() as u64);
                self.write_at(a, &bytes)?;
                addrs.push(Addr(a));
            }
            root.children.splice(i..=i, addrs);
            root.keys.insert(i + 1, Key::Group { heap_offset: sep });
            let b = self.encode_btree(&root)?;
            self.stage_in_place(stab.btree_addr, b);
            let len = self.snod_len();
            self.pending_free.push((snod_addr, len));
            return Ok(());
        }
        if root_changed {
            let b = self.encode_btree(&root)?;
            self.stage_in_place(stab.btree_addr, b);
        }
        let bytes = self.encode_snod(&node)?;
        self.stage_in_place(snod_addr, bytes);
        Ok(())
    }

    /// Delete link `name` from the group at `parent`, and commit (staged
    /// edits are committed first). When it was the target's last hard
    /// link, the target is deleted as libhdf5 deletes it: its header, its
    /// raw data and chunk index, its dense attributes and, for a group,
    /// its link storage, with every member whose last link it held
    /// (otherwise the target's reference count drops by one). See the
    /// module documentation ("Free space") for what is freed.
    ///
    /// # Errors
    /// `NotFound` when there is no such link; `Unsupported` as for
    /// [`FileEditor::create_group`]. The file is unchanged on error.
    pub fn delete_link(&mut self, parent: &str, name: &str) -> Result<()> {
        // Staged edits are committed first: the objects a deletion frees
        // are then exactly as the file holds them.
        self.flush()?;
        self.paths.clear();
        let pa = self.object_addr(parent)?;
        // The parent's header is written before the headers of the objects
        // that lose a reference (a crash in between leaves a count too
        // high, a leak, never one too low).
        self.header(pa)?;
        let links = self.link_msgs(pa)?;
        let dense_target = match self.dense_sets.get_mut(&(pa, DenseKind::Links)) {
            Some(set) if links.is_some() => {
                let Some(i) = set.entries.iter().position(|e| e.name == name.as_bytes()) else {
                    return Err(Error::not_found(alloc::format!(
                        "{parent}: no link {name:?}"
                    )));
                };
                let e = set.entries.remove(i);
                set.dirty = true;
                Some(Link::decode(&mut Cursor::new(&e.msg, 0), self.ctx)?.target)
            }
            _ => None,
        };
        let target = match links {
            Some(_) if dense_target.is_some() => {
                let (_, min_dense) = self.group_limits(pa)?;
                self.maybe_to_compact(pa, DenseKind::Links, min_dense)?;
                match dense_target {
                    Some(LinkTarget::Hard(a)) => Some(a.get()),
                    _ => None,
                }
            }
            Some(links) => {
                let Some((loc, l)) = links.into_iter().find(|(_, l)| l.name == name) else {
                    return Err(Error::not_found(alloc::format!(
                        "{parent}: no link {name:?}"
                    )));
                };
                self.header(pa)?.remove(loc);
                match l.target {
                    LinkTarget::Hard(a) => Some(a.get()),
                    _ => None,
                }
            }
            None => {
                let stab = match self.load_stab(pa, false) {
                    Ok(s) => s,
                    Err(e) if e.kind() == crate::ErrorKind::Unsupported => {
                        let e = self.stab_rebuild(pa, None, Some(name)).map_err(|e| {
                            if e.kind() == crate::ErrorKind::NotFound {
                                Error::not_found(alloc::format!("{parent}: no link {name:?}"))
                            } else {
                                e
                            }
                        })?;
                        let t = e.and_then(|e| match e.cache {
                            EntryCache::SoftLink { .. } => None,
                            _ => Some(e.header.get()),
                        });
                        if let Some(t) = t {
                            self.release_object(t, pa)?;
                        }
                        return self.flush();
                    }
                    Err(e) => return Err(e),
                };
                let Some((i, j)) = stab.find(name)? else {
                    return Err(Error::not_found(alloc::format!(
                        "{parent}: no link {name:?}"
                    )));
                };
                let (snod_addr, mut node) =
                    stab.snods.get(i).cloned().ok_or_else(|| usage("no node"))?;
                let e = node.entries.remove(j);
                if node.entries.is_empty() {
                    // Drop the child from the root (one write).
                    let mut root = stab.root.clone();
                    root.children.remove(i);
                    if root.children.is_empty() {
                        root.keys = vec![Key::Group { heap_offset: 0 }];
                    } else {
                        root.keys.remove(i + 1);
                    }
                    let b = self.encode_btree(&root)?;
                    self.stage_in_place(stab.btree_addr, b);
                    let len = self.snod_len();
                    self.pending_free.push((snod_addr, len));
                } else {
                    let b = self.encode_snod(&node)?;
                    self.stage_in_place(snod_addr, b);
                }
                match e.cache {
                    EntryCache::SoftLink { .. } => None,
                    _ => Some(e.header.get()),
                }
            }
        };
        if let Some(t) = target {
            self.release_object(t, pa)?;
        }
        self.flush()
    }

    /// Rebuild the symbol-table group at `pa` (any B-tree depth) with `add`
    /// inserted or `remove` taken out: new symbol table nodes and B-tree
    /// nodes at fresh space, the root node rewritten in place (its address
    /// is in the group's header and in cached entries), after the heap
    /// header when a new name grows the heap (so that every state is a
    /// valid group). Returns the removed entry.
    fn stab_rebuild(
        &mut self,
        pa: u64,
        add: Option<(&str, Addr, EntryCache)>,
        remove: Option<&str>,
    ) -> Result<Option<SymbolTableEntry>> {
        let ctx = self.ctx;
        let st = self.reader.storage().clone();
        let (stm, heap_hdr, mut heap) = self.stab_parts(pa)?;
        let (old_nodes, old_snods) = crate::read::btree_v1::group_tree_nodes(&st, ctx, stm.btree)?;
        {
            let mut nodes = Vec::new();
            for a in &old_snods {
                nodes.push((a.get(), crate::read::btree_v1::read_snod(&st, ctx, *a)?));
            }
            let refs: Vec<(u64, &SymbolTableNode)> = nodes.iter().map(|(a, n)| (*a, n)).collect();
            let btree: Vec<u64> = old_nodes.iter().map(|a| a.get()).collect();
            self.check_stab_extents(&btree, &refs, stm.heap.get(), &heap_hdr, add.is_some())?;
        }
        let mut entries = crate::read::btree_v1::group_entries(&st, ctx, stm.btree)?;
        let old_names: Vec<u64> = entries.iter().map(|e| e.name_offset).collect();
        let name_at = |heap: &[u8], off: u64| -> Vec<u8> {
            let rest = usize::try_from(off)
                .ok()
                .and_then(|o| heap.get(o..))
                .unwrap_or(&[]);
            let end = rest.iter().position(|&b| b == 0).unwrap_or(rest.len());
            rest.get(..end).unwrap_or(&[]).to_vec()
        };
        let mut removed = None;
        if let Some(name) = remove {
            let i = entries
                .iter()
                .position(|e| name_at(&heap, e.name_offset) == name.as_bytes())
                .ok_or_else(|| Error::not_found(alloc::format!("no link {name:?}")))?;
            removed = Some(entries.remove(i));
        }
        let mut new_seg = None;
        if let Some((name, target, cache)) = add {
            if entries
                .iter()
                .any(|e| name_at(&heap, e.name_offset) == name.as_bytes())
            {
                return Err(usage(alloc::format!("a link {name:?} exists")));
            }
            let off = heap_hdr.data_size;
            heap.resize(usize::try_from(off).map_err(|_| usage("heap size"))?, 0);
            heap.extend_from_slice(name.as_bytes());
            heap.push(0);
            heap.resize(heap.len().div_ceil(8) * 8, 0);
            entries.push(SymbolTableEntry {
                name_offset: off,
                header: target,
                cache,
            });
            new_seg = Some(heap.clone());
        }
        entries.sort_by_cached_key(|e| name_at(&heap, e.name_offset));
        // Symbol table nodes, filled evenly.
        let cap = 2 * usize::from(self.leaf_k());
        let nn = entries.len().div_ceil(cap);
        let mut leaves = Vec::with_capacity(nn);
        let mut left_key = 0u64;
        let mut final_key = 0u64;
        let mut pos = 0usize;
        for i in 0..nn {
            let take = entries.len() / nn + usize::from(i < entries.len() % nn);
            let part = entries.get(pos..pos + take).unwrap_or(&[]).to_vec();
            pos += take;
            let last = part.last().map_or(0, |e| e.name_offset);
            let bytes = self.encode_snod(&SymbolTableNode { entries: part })?;
            let a = self.alloc(bytes.len() as u64);
            self.write_at(a, &bytes)?;
            leaves.push((
                Key::Group {
                    heap_offset: left_key,
                },
                Addr(a),
            ));
            left_key = last;
            final_key = last;
        }
        let node_len = self.group_node_len()?;
        let fanout = 2 * usize::from(self.internal_k());
        let (root, nodes) = if leaves.is_empty() {
            (
                Addr(stm.btree.get()),
                vec![(
                    Addr(stm.btree.get()),
                    BTreeV1Node {
                        node_type: NODE_TYPE_GROUP,
                        level: 0,
                        left: Addr::UNDEF,
                        right: Addr::UNDEF,
                        keys: vec![Key::Group { heap_offset: 0 }],
                        children: Vec::new(),
                    },
                )],
            )
        } else {
            let mut next = || Addr(self.alloc(node_len));
            crate::write::chunked::build_btree(
                NODE_TYPE_GROUP,
                leaves,
                Key::Group {
                    heap_offset: final_key,
                },
                fanout,
                &mut next,
            )
        };
        if let Some(seg) = new_seg {
            let seg_addr = self.alloc(seg.len() as u64);
            self.write_at(seg_addr, &seg)?;
            let mut he = Encoder::new();
            LocalHeapHeader {
                data_size: seg.len() as u64,
                free_list: heap_hdr.free_list,
                data_addr: Addr(seg_addr),
            }
            .encode(&mut he, ctx);
            self.stage_in_place(stm.heap.get(), he.into_vec());
            if let Some(old) = heap_hdr.data_addr.defined() {
                let old_len = usize::try_from(heap_hdr.data_size).unwrap_or(usize::MAX);
                let old_seg = heap.get(..old_len).unwrap_or(&heap);
                let names = old_names.iter().copied();
                let len_size = usize::from(ctx.sizes.lengths);
                if !holds_signature(old_seg) && heap_accounted(old_seg, &heap_hdr, names, len_size)
                {
                    self.pending_free.push((old.get(), heap_hdr.data_size));
                }
            }
        }
        for (a, node) in &nodes {
            let bytes = self.encode_btree(node)?;
            if *a == root {
                // The root keeps its address: one in-place write, last.
                self.stage_in_place(stm.btree.get(), bytes);
            } else {
                self.write_at(a.get(), &bytes)?;
            }
        }
        if root != stm.btree {
            // The fresh slot the builder chose for the root was never used.
            if root.get() + node_len == self.eof && self.page_size == 0 {
                self.eof = root.get();
            } else {
                self.free.push((root.get(), node_len));
            }
        }
        let snod_len = self.snod_len();
        for n in old_nodes.into_iter().filter(|n| *n != stm.btree) {
            self.pending_free.push((n.get(), node_len));
        }
        for s in old_snods {
            self.pending_free.push((s.get(), snod_len));
        }
        Ok(removed)
    }
}

/// What [`FileEditor::create_dataset`] creates.
#[derive(Debug, Clone)]
pub struct NewDataset {
    /// Element type (fixed size).
    pub dtype: Datatype,
    /// Initial shape.
    pub shape: Vec<u64>,
    /// Maximum shape (`None` per dimension: unlimited); default the shape.
    pub maxshape: Option<Vec<Option<u64>>>,
    /// Chunk shape (needed for resizable or filtered datasets).
    pub chunks: Option<Vec<u64>>,
    /// Deflate level.
    pub deflate: Option<u8>,
    /// Shuffle before deflate.
    pub shuffle: bool,
    /// Fill value bytes (one element); default zeros. For a
    /// variable-length type: the in-file descriptor of the fill
    /// ([`FileEditor::put_varlen`]; zeros are the empty string/sequence).
    pub fill: Option<Vec<u8>>,
    /// Zstandard at this level (registered filter 32015, after deflate).
    pub zstd: Option<i32>,
    /// LZ4 (registered filter 32004, the HDF5 LZ4 plugin's format).
    pub lz4: bool,
}

impl NewDataset {
    /// A contiguous dataset of `shape`.
    pub fn new(dtype: Datatype, shape: &[u64]) -> Self {
        NewDataset {
            dtype,
            shape: shape.to_vec(),
            maxshape: None,
            chunks: None,
            deflate: None,
            shuffle: false,
            fill: None,
            zstd: None,
            lz4: false,
        }
    }
    /// Zstandard at `level`.
    pub fn zstd(mut self, level: i32) -> Self {
        self.zstd = Some(level);
        self
    }
    /// LZ4.
    pub fn lz4(mut self) -> Self {
        self.lz4 = true;
        self
    }
    /// Maximum shape.
    pub fn maxshape(mut self, m: &[Option<u64>]) -> Self {
        self.maxshape = Some(m.to_vec());
        self
    }
    /// Chunk shape.
    pub fn chunks(mut self, c: &[u64]) -> Self {
        self.chunks = Some(c.to_vec());
        self
    }
    /// Deflate at `level`.
    pub fn deflate(mut self, level: u8) -> Self {
        self.deflate = Some(level);
        self
    }
    /// Shuffle.
    pub fn shuffle(mut self) -> Self {
        self.shuffle = true;
        self
    }
    /// Fill value.
    pub fn fill<T: crate::write::H5Type>(mut self, v: T) -> Self {
        self.fill = Some(crate::write::value::to_bytes(&[v]));
        self
    }
}
