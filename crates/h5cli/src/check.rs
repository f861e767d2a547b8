//! `h5 check`: a format validator. Walks every object reachable from the root
//! group (groups, datasets, attributes, committed datatypes) with the reader,
//! keeps walking after a problem, and reports one [`Finding`] per problem with
//! its address and object path.
//!
//! Checks: superblock (EOF address against the file size, base address);
//! every structure decodes (signatures, versions, checksums — verified by the
//! decoders); addresses inside the file; no overlap between allocated
//! structures (object header chunks, local heaps, v1 B-tree and symbol table
//! nodes, fractal heap and v2 B-tree headers, chunks, contiguous data); v1
//! B-tree key order and sibling links; link targets; dataspace / datatype /
//! layout consistency; chunk index consistency (every chunk inside the
//! dataspace, on the chunk grid, once, with a sane size); every attribute and
//! dataset readable, variable-length data with every global heap object
//! it names (each collection read is an allocated structure too); the
//! persistent free-space managers (headers, section
//! lists, and no free section over an allocated structure); fractal heap
//! free-space managers (each single section inside a direct block's data,
//! row sections within the doubling table, totals). Warnings (errors only with `--strict`): unknown message
//! types, dangling soft links, slack after the EOF address, storage larger
//! than needed.

use h5fmt::codec::Cursor;
use h5fmt::data::value::Reference;
use h5fmt::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_CHUNK, NODE_TYPE_GROUP};
use h5fmt::format::free_space::{decode_sections, FileSpaceInfo, FreeSpaceHeader};
use h5fmt::format::message::misc::SohmTableMessage;
use h5fmt::format::message::{
    kind, Continuation, Dataspace, Layout, LinkInfo, LinkTarget, SymbolTableMessage,
};
use h5fmt::format::object_header::{V1Prefix, V2Prefix, MAX_KNOWN_MESSAGE_TYPE, OHDR_SIGNATURE};
use h5fmt::format::sohm::{SohmIndexKind, SohmRecord, SohmTable};
use h5fmt::format::symbol_table_node::{SymbolTableEntry, SymbolTableNode};
use h5fmt::io::Storage;
use h5fmt::read::btree_v2::BTreeV2;
use h5fmt::read::fractal_heap::FractalHeap;
use h5fmt::read::local_heap::LocalHeap;
use h5fmt::read::{LayoutClass, Object};
use h5fmt::{Addr, Ctx, Error, ErrorKind, File, Limits, Value};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::Path;

/// One problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// Absolute file address of the offending structure, where known.
    pub addr: Option<u64>,
    /// Object path (`/` for file-level problems).
    pub path: String,
    /// What is wrong.
    pub message: String,
    /// A warning (only an error under `--strict`).
    pub warning: bool,
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.addr {
            Some(a) => write!(f, "{a:#x} ")?,
            None => write!(f, "- ")?,
        }
        write!(f, "{}: ", self.path)?;
        if self.warning {
            write!(f, "warning: ")?;
        }
        let one_line = self
            .message
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        write!(f, "{one_line}")
    }
}

/// Whether `findings` count as clean (`strict`: warnings too).
pub fn is_clean(findings: &[Finding], strict: bool) -> bool {
    findings.iter().all(|f| f.warning && !strict)
}

/// Limits for checking: generous, but reads bounded so that a hostile file
/// cannot exhaust memory.
pub fn check_limits() -> Limits {
    Limits {
        max_read_bytes: 256 << 20,
        max_metadata_block: 1 << 30,
        max_chunk_bytes: 1 << 30,
        ..Limits::default()
    }
}

/// Check the file at `path`.
pub fn check_path(path: &Path) -> Vec<Finding> {
    match File::open_with_limits(path, check_limits()) {
        Ok(f) => check_file(&f),
        Err(e) => vec![from_error(&e, None, "/", "cannot open file")],
    }
}

/// Check a file held in memory.
pub fn check_bytes(bytes: Vec<u8>) -> Vec<Finding> {
    let src: std::sync::Arc<dyn h5fmt::io::ReadAt> = std::sync::Arc::new(bytes);
    match File::from_source(src, check_limits()) {
        Ok(f) => check_file(&f),
        Err(e) => vec![from_error(&e, None, "/", "cannot open file")],
    }
}

/// Check an open file.
pub fn check_file(file: &File) -> Vec<Finding> {
    let mut c = Checker {
        file,
        st: file.storage().clone(),
        ctx: file.ctx(),
        findings: Vec::new(),
        regions: Vec::new(),
        seen_regions: BTreeSet::new(),
    };
    c.superblock();
    c.extension();
    c.walk();
    c.overlaps();
    c.findings
}

fn from_error(e: &Error, addr: Option<u64>, path: &str, what: &str) -> Finding {
    Finding {
        addr: e.offset().or(addr),
        path: e.path().unwrap_or(path).to_string(),
        message: format!("{what}: {}: {}", e.kind().as_str(), e.message()),
        warning: false,
    }
}

struct Region {
    start: u64,
    len: u64,
    what: String,
    path: String,
}

struct Checker<'a> {
    file: &'a File,
    st: Storage,
    ctx: Ctx,
    findings: Vec<Finding>,
    regions: Vec<Region>,
    seen_regions: BTreeSet<(u64, u64, String)>,
}

/// The file's global heap, noting the collections read through it.
struct NotingHeap {
    heap: h5fmt::read::FileHeap,
    seen: std::cell::RefCell<BTreeSet<Addr>>,
}

impl h5fmt::data::HeapResolver for NotingHeap {
    fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>, Error> {
        self.seen.borrow_mut().insert(collection);
        self.heap.global_heap_object(collection, index)
    }
    fn with_global_heap_prefix(
        &self,
        collection: Addr,
        index: u32,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), Error> {
        self.seen.borrow_mut().insert(collection);
        self.heap.with_global_heap_prefix(collection, index, len, f)
    }
    fn with_global_heap_prefixes(
        &self,
        collection: Addr,
        objects: &[(u32, usize)],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<(), Error> {
        self.seen.borrow_mut().insert(collection);
        self.heap.with_global_heap_prefixes(collection, objects, f)
    }
    fn dataset_dims(&self, obj: Addr) -> Result<Vec<u64>, Error> {
        self.heap.dataset_dims(obj)
    }
}

/// In-order state of a v1 B-tree walk: nodes per level (for sibling links),
/// visited nodes (cycles).
#[derive(Default)]
struct TreeWalk {
    levels: BTreeMap<u8, Vec<(u64, Addr, Addr)>>,
    visited: BTreeSet<u64>,
}

impl Checker<'_> {
    fn err(&mut self, addr: Option<u64>, path: &str, message: impl Into<String>) {
        self.findings.push(Finding {
            addr,
            path: path.to_string(),
            message: message.into(),
            warning: false,
        });
    }
    fn warn(&mut self, addr: Option<u64>, path: &str, message: impl Into<String>) {
        self.findings.push(Finding {
            addr,
            path: path.to_string(),
            message: message.into(),
            warning: true,
        });
    }
    fn error(&mut self, e: &Error, addr: Option<u64>, path: &str, what: &str) {
        self.findings.push(from_error(e, addr, path, what));
    }

    /// Absolute address of relative `a`.
    fn abs(&self, a: Addr) -> u64 {
        self.st.base().saturating_add(a.0)
    }

    /// Record an allocated structure; report it when it runs past the end of
    /// the file. Returns whether it is inside the file.
    fn region(&mut self, a: Addr, len: u64, what: &str, path: &str) -> bool {
        if a.is_undef() {
            return true;
        }
        let start = self.abs(a);
        let end = start.checked_add(len);
        let size = self.st.len();
        if end.is_none_or(|e| e > size) {
            self.err(
                Some(start),
                path,
                format!("{what} of {len} bytes runs past the end of the file ({size} bytes)"),
            );
            return false;
        }
        if len > 0 && self.seen_regions.insert((start, len, what.to_string())) {
            self.regions.push(Region {
                start,
                len,
                what: what.to_string(),
                path: path.to_string(),
            });
        }
        true
    }

    fn superblock(&mut self) {
        let sb = self.file.superblock();
        let size = self.st.len();
        let base = sb.base_address;
        if base > size {
            self.err(
                Some(sb.sig_offset),
                "/",
                format!("base address {base} is past the end of the file ({size} bytes)"),
            );
        }
        if sb.stored_base_address != sb.sig_offset && sb.stored_base_address != 0 {
            self.warn(
                Some(sb.sig_offset),
                "/",
                format!(
                    "stored base address {} differs from the superblock position {}",
                    sb.stored_base_address, sb.sig_offset
                ),
            );
        }
        match sb.eof.defined() {
            None => self.err(Some(sb.sig_offset), "/", "undefined end-of-file address"),
            Some(eof) => {
                // libhdf5 stores the end of the file counted from its first
                // byte (user block included).
                let end = eof.0;
                if end > size {
                    self.err(
                        Some(sb.sig_offset),
                        "/",
                        format!(
                            "end-of-file address {end} is past the end of the file ({size} bytes): truncated"
                        ),
                    );
                } else if end < size {
                    self.warn(
                        Some(sb.sig_offset),
                        "/",
                        format!("{} bytes after the end-of-file address {end}", size - end),
                    );
                }
            }
        }
        for (what, a) in [
            ("superblock extension", sb.extension),
            ("driver info", sb.driver_info),
        ] {
            if let Some(a) = a.defined() {
                if self.abs(a) >= size {
                    self.err(
                        Some(self.abs(a)),
                        "/",
                        format!("{what} address past the end of the file"),
                    );
                }
            }
        }
    }

    /// The superblock extension's header and the shared-message (SOHM)
    /// structures it points at: master table, list or v2 B-tree indexes
    /// and their fractal heaps.
    fn extension(&mut self) {
        let Some(ext) = self.file.superblock().extension.defined() else {
            return;
        };
        let path = "(superblock extension)";
        self.header_regions(ext, path);
        let header = match h5fmt::read::object_header::read_object_header(&self.st, ext, self.ctx) {
            Ok(h) => h,
            Err(e) => {
                self.error(&e, Some(self.abs(ext)), path, "superblock extension");
                return;
            }
        };
        // libhdf5 ignores a file space info message marked as written by
        // software that did not know it (libhdf5 1.10.0 development files).
        if let Some(m) = header
            .find(kind::FSINFO)
            .filter(|m| m.flags & h5fmt::format::message::flags::WAS_UNKNOWN == 0)
        {
            let at = self.abs(ext);
            self.free_space(&m.data, at, path);
        }
        let Some(m) = header.find(kind::SOHM_TABLE) else {
            return;
        };
        let msg = match SohmTableMessage::decode(&mut m.cursor(), self.ctx) {
            Ok(msg) => msg,
            Err(e) => {
                self.error(
                    &e,
                    Some(self.abs(ext)),
                    path,
                    "shared message table message",
                );
                return;
            }
        };
        let len = SohmTable::encoded_len(msg.num_indexes, self.ctx) as u64;
        self.region(msg.table, len, "shared message table", path);
        let table = match self.st.read(msg.table, len).and_then(|b| {
            SohmTable::decode(
                &mut Cursor::new(&b, self.abs(msg.table)),
                msg.num_indexes,
                self.ctx,
            )
        }) {
            Ok(t) => t,
            Err(e) => {
                self.error(&e, Some(self.abs(msg.table)), path, "shared message table");
                return;
            }
        };
        for idx in table.indexes {
            match idx.kind {
                SohmIndexKind::List => {
                    // Prefix, the used records, checksum.
                    let used = 4
                        + u64::from(idx.num_messages) * SohmRecord::encoded_len(self.ctx) as u64
                        + 4;
                    self.region(idx.index_addr, used, "shared message list", path);
                    self.dense_headers(idx.heap_addr, &[], path);
                }
                SohmIndexKind::BTree => {
                    self.dense_headers(idx.heap_addr, &[idx.index_addr], path);
                }
            }
        }
    }

    /// The persistent free-space managers named by the file space info
    /// message: each header (`FSHD`) and section list (`FSSE`) decoded
    /// (signature, version, checksum, back-pointer, counts), both recorded
    /// as allocated structures, and each free section recorded too, so that
    /// free space overlapping an allocated structure is reported.
    fn free_space(&mut self, body: &[u8], at: u64, path: &str) {
        let info = match FileSpaceInfo::decode(&mut Cursor::new(body, at), self.ctx) {
            Ok(i) => i,
            Err(e) => {
                self.error(&e, Some(at), path, "file space info message");
                return;
            }
        };
        if info.version >= 1 && info.strategy == 1 && info.page_size == 0 {
            self.err(Some(at), path, "paged aggregation with a page size of 0");
        }
        let mut seen = BTreeSet::new();
        for (i, a) in info.managers.iter().enumerate() {
            let Some(a) = a.defined() else { continue };
            let abs = self.abs(a);
            if !seen.insert(a.0) {
                self.err(
                    Some(abs),
                    path,
                    format!("free-space manager {i} repeats the header of another manager"),
                );
                continue;
            }
            let client = format!("free-space manager {i} of the file");
            let Some((_, sections)) = self.manager(a, 1, &client, "free-space", path) else {
                continue;
            };
            for s in &sections {
                self.region(Addr(s.offset), s.size, "free-space section", path);
            }
        }
    }

    fn walk(&mut self) {
        let root_addr = self.file.superblock().root;
        let mut seen = BTreeSet::from([root_addr.0]);
        let mut queue = VecDeque::from([(root_addr, "/".to_string())]);
        let max = self.ctx.limits.max_objects;
        // Hard links into each object (the superblock counts for the root),
        // and each object's stored reference count.
        let mut incoming: BTreeMap<u64, u64> = BTreeMap::from([(root_addr.0, 1)]);
        let mut refcounts: Vec<(u64, String, u32)> = Vec::new();
        while let Some((addr, path)) = queue.pop_front() {
            self.header_regions(addr, &path);
            let obj = match self.file.object_at(addr, &path) {
                Ok(o) => o,
                Err(e) => {
                    self.error(&e, Some(self.abs(addr)), &path, "cannot read object");
                    continue;
                }
            };
            refcounts.push((addr.0, path.clone(), obj.header().refcount));
            self.messages(&obj, &path);
            self.attributes(&obj, &path);
            match &obj {
                Object::Group(g) => {
                    self.group_structures(&obj, &path);
                    let links = match g.links() {
                        Ok(l) => l,
                        Err(e) => {
                            self.error(&e, Some(self.abs(addr)), &path, "cannot list links");
                            continue;
                        }
                    };
                    let mut names = BTreeSet::new();
                    for l in links {
                        let lpath = if path == "/" {
                            format!("/{}", l.name)
                        } else {
                            format!("{path}/{}", l.name)
                        };
                        if !names.insert(l.name.clone()) {
                            self.err(Some(self.abs(addr)), &lpath, "duplicate link name");
                        }
                        match &l.target {
                            LinkTarget::Hard(a) => {
                                *incoming.entry(a.0).or_default() += 1;
                                if a.is_undef() || self.abs(*a) >= self.st.len() {
                                    self.err(
                                        Some(self.abs(addr)),
                                        &lpath,
                                        format!("hard link target {a} outside the file"),
                                    );
                                } else if seen.insert(a.0) {
                                    if seen.len() > max {
                                        self.err(None, &lpath, "too many objects (limit)");
                                        return;
                                    }
                                    queue.push_back((*a, lpath));
                                }
                            }
                            LinkTarget::Soft(t) => {
                                if let Err(e) = self.file.object(&lpath) {
                                    self.warn(
                                        Some(self.abs(addr)),
                                        &lpath,
                                        format!("soft link to {t:?} does not resolve: {e}"),
                                    );
                                }
                            }
                            _ => {}
                        }
                    }
                }
                Object::Dataset(d) => self.dataset(d, obj.header(), &path),
                Object::Datatype(t) => {
                    if t.dtype().size() == 0 {
                        self.err(Some(self.abs(addr)), &path, "datatype of size 0");
                    }
                }
            }
        }
        self.refcounts(&incoming, &refcounts);
    }

    /// Reference counts below the number of hard links found (warnings).
    fn refcounts(&mut self, incoming: &BTreeMap<u64, u64>, refcounts: &[(u64, String, u32)]) {
        for (addr, path, rc) in refcounts {
            let links = incoming.get(addr).copied().unwrap_or(0);
            // More is fine: shared messages (committed datatypes) count too.
            if u64::from(*rc) < links {
                self.warn(
                    Some(self.abs(Addr(*addr))),
                    path,
                    format!("reference count {rc}, but {links} hard link(s) found"),
                );
            }
        }
    }

    /// Object header chunk regions: chunk 0 and every continuation block.
    fn header_regions(&mut self, addr: Addr, path: &str) {
        let Ok(head) = self.st.read_upto(addr, 64) else {
            self.err(
                Some(self.abs(addr)),
                path,
                "object header address outside the file",
            );
            return;
        };
        let at = self.abs(addr);
        let len = if head.starts_with(&OHDR_SIGNATURE) {
            V2Prefix::decode(&mut Cursor::new(&head, at)).ok().map(|p| {
                (p.prefix_len as u64)
                    .saturating_add(p.chunk0_size)
                    .saturating_add(4)
            })
        } else {
            V1Prefix::decode(&mut Cursor::new(&head, at))
                .ok()
                .map(|p| 16 + u64::from(p.header_size))
        };
        if let Some(len) = len {
            self.region(addr, len, "object header", path);
        }
    }

    /// Every message: unknown types (warning), continuation blocks, each
    /// known message decodes.
    fn messages(&mut self, obj: &Object, path: &str) {
        for m in &obj.header().messages {
            if m.kind > MAX_KNOWN_MESSAGE_TYPE {
                self.warn(
                    Some(m.offset),
                    path,
                    format!("unknown message type {:#06x}", m.kind),
                );
            }
            if m.kind == kind::CONTINUATION {
                match Continuation::decode(&mut m.cursor(), self.ctx) {
                    Ok(c) => {
                        self.region(c.addr, c.len, "object header continuation", path);
                    }
                    Err(e) => self.error(&e, Some(m.offset), path, "continuation message"),
                }
            }
            if !m.is_shared() {
                if let Err(e) = decode_message(m.kind, &m.data, m.offset, self.ctx) {
                    self.error(
                        &e,
                        Some(m.offset),
                        path,
                        &format!("message type {:#x}", m.kind),
                    );
                }
            }
        }
    }

    fn attributes(&mut self, obj: &Object, path: &str) {
        match obj.attrs() {
            Err(e) => self.error(
                &e,
                Some(self.abs(obj.addr())),
                path,
                "cannot read attributes",
            ),
            Ok(attrs) => {
                for a in attrs {
                    let vals = if a.dtype().is_variable_length() {
                        self.vlen_values(a.dtype(), a.raw(), a.len(), path)
                    } else {
                        a.read_values()
                    };
                    match vals {
                        Err(e) => self.error(
                            &e,
                            Some(self.abs(obj.addr())),
                            path,
                            &format!("attribute {:?} unreadable", a.name()),
                        ),
                        Ok(vals) => self.references(&vals, path),
                    }
                }
            }
        }
    }

    /// Symbol-table groups: local heap, B-tree (order, siblings), symbol
    /// table nodes. Dense groups: fractal heap and v2 B-tree headers.
    fn group_structures(&mut self, obj: &Object, path: &str) {
        let h = obj.header();
        if let Some(m) = h.find(kind::SYMBOL_TABLE) {
            let Ok(stab) = SymbolTableMessage::decode(&mut m.cursor(), self.ctx) else {
                return; // reported by messages()
            };
            let hlen = h5fmt::format::local_heap::LocalHeapHeader::encoded_len(self.ctx.sizes);
            self.region(stab.heap, hlen as u64, "local heap header", path);
            if let Ok(raw) = self.st.read(stab.heap, hlen as u64) {
                if let Ok(hdr) = h5fmt::format::local_heap::LocalHeapHeader::decode(
                    &mut Cursor::new(&raw, self.abs(stab.heap)),
                    self.ctx,
                ) {
                    self.region(hdr.data_addr, hdr.data_size, "local heap data", path);
                    self.free_list(&hdr, self.abs(stab.heap), path);
                }
            }
            let heap = match LocalHeap::read(&self.st, self.ctx, stab.heap) {
                Ok(hp) => Some(hp),
                Err(e) => {
                    self.error(&e, Some(self.abs(stab.heap)), path, "local heap");
                    None
                }
            };
            let mut tw = TreeWalk::default();
            let mut last: Option<Vec<u8>> = None;
            self.group_node(stab.btree, None, heap.as_ref(), &mut tw, &mut last, path, 0);
            self.siblings(&tw, path);
        }
        if let Some(m) = h.find(kind::LINK_INFO) {
            if let Ok(info) = LinkInfo::decode(&mut m.cursor(), self.ctx) {
                self.dense_headers(info.heap, &[info.name_index, info.order_index], path);
            }
        }
        if let Some(m) = h.find(kind::ATTRIBUTE_INFO) {
            if let Ok(info) =
                h5fmt::format::message::AttributeInfo::decode(&mut m.cursor(), self.ctx)
            {
                self.dense_headers(info.heap, &[info.name_index, info.order_index], path);
            }
        }
    }

    /// The local heap's free list: blocks inside the data segment, no cycle.
    fn free_list(&mut self, hdr: &h5fmt::format::local_heap::LocalHeapHeader, at: u64, path: &str) {
        let Ok(data) = self.st.read(hdr.data_addr, hdr.data_size) else {
            return;
        };
        let lsz = usize::from(self.ctx.sizes.lengths);
        // 1 (libhdf5's H5HL_FREE_NULL) or all ones: no (more) free blocks.
        let all_ones = if lsz >= 8 {
            u64::MAX
        } else {
            (1u64 << (8 * lsz)) - 1
        };
        let mut next = hdr.free_list.filter(|&o| o != 1);
        let mut seen = BTreeSet::new();
        while let Some(off) = next {
            let block = usize::try_from(off)
                .ok()
                .and_then(|o| Some((o, o.checked_add(2 * lsz)?)))
                .and_then(|(o, e)| data.get(o..e));
            if !seen.insert(off) {
                self.err(
                    Some(at),
                    path,
                    format!("local heap free list loops at offset {off}"),
                );
                return;
            }
            let Some(block) = block else {
                self.err(
                    Some(at),
                    path,
                    format!(
                        "local heap free block at offset {off} outside the data segment of {} bytes",
                        hdr.data_size
                    ),
                );
                return;
            };
            let mut c = Cursor::new(block, 0);
            let (Ok(nx), Ok(size)) = (c.read_uint(lsz), c.read_uint(lsz)) else {
                return;
            };
            let end = off.saturating_add(size);
            if end > hdr.data_size {
                self.err(
                    Some(at),
                    path,
                    format!("local heap free block [{off}, {end}) runs past the data segment"),
                );
                return;
            }
            next = (nx != 1 && nx != all_ones).then_some(nx);
        }
    }

    /// Dense links/attributes: the fractal heap (header, every direct and
    /// indirect block) and the v2 B-tree indexes (header, every node).
    fn dense_headers(&mut self, heap: Addr, indexes: &[Addr], path: &str) {
        if heap.is_undef() {
            return;
        }
        let fixed = h5fmt::format::fractal_heap::FractalHeapHeader::fixed_len(self.ctx.sizes);
        if let Ok(prefix) = self.st.read(heap, fixed as u64) {
            if let Ok(total) = h5fmt::format::fractal_heap::FractalHeapHeader::total_len(
                &prefix,
                self.abs(heap),
                self.ctx.sizes,
            ) {
                self.region(heap, total as u64, "fractal heap header", path);
            }
        }
        match FractalHeap::open(&self.st, self.ctx, heap)
            .and_then(|h| Ok((h.blocks()?, h.header().clone())))
        {
            Ok((blocks, hdr)) => {
                let mut direct = Vec::new();
                for b in &blocks {
                    let what = if b.indirect {
                        "fractal heap indirect block"
                    } else {
                        direct.push(*b);
                        "fractal heap direct block"
                    };
                    self.region(b.addr, b.len, what, path);
                }
                if let Some(fs) = hdr.free_space_manager.defined() {
                    self.heap_free_space(fs, &hdr, &direct, path);
                }
            }
            Err(e) => self.error(&e, Some(self.abs(heap)), path, "fractal heap"),
        }
        let blen = h5fmt::format::btree_v2::BTreeV2Header::encoded_len(self.ctx.sizes);
        for &index in indexes.iter().filter(|a| !a.is_undef()) {
            self.region(index, blen as u64, "v2 B-tree header", path);
            match BTreeV2::open(&self.st, self.ctx, index)
                .and_then(|t| Ok((t.node_addrs()?, u64::from(t.header().node_size))))
            {
                Ok((nodes, size)) => {
                    for n in nodes {
                        self.region(n, size, "v2 B-tree node", path);
                    }
                }
                Err(e) => self.error(&e, Some(self.abs(index)), path, "v2 B-tree"),
            }
        }
    }

    /// A free-space manager header (`FSHD`) at `a` and its section list
    /// (`FSSE`, none when the header names none): both recorded as
    /// allocated, decoded (signature, version, checksum, back-pointer,
    /// counts), the header's client checked (`client`: 1 the file, 0 a
    /// fractal heap; `who` names the manager in findings, `what` its
    /// structures). `None` after a finding that stops the checks.
    fn manager(
        &mut self,
        a: Addr,
        client: u8,
        who: &str,
        what: &str,
        path: &str,
    ) -> Option<(FreeSpaceHeader, Vec<h5fmt::format::free_space::FreeSection>)> {
        let hlen = FreeSpaceHeader::encoded_len(self.ctx) as u64;
        let abs = self.abs(a);
        if !self.region(a, hlen, &format!("{what} manager header"), path) {
            return None;
        }
        let hdr = match self
            .st
            .read(a, hlen)
            .and_then(|b| FreeSpaceHeader::decode(&mut Cursor::new(&b, abs), self.ctx))
        {
            Ok(h) => h,
            Err(e) => {
                self.error(&e, Some(abs), path, &format!("{what} manager header"));
                return None;
            }
        };
        if hdr.client != client {
            let want = if client == 0 {
                "a fractal heap"
            } else {
                "the file"
            };
            self.err(
                Some(abs),
                path,
                format!("{who} has client {} (not {want})", hdr.client),
            );
            return None;
        }
        let Some(sa) = hdr.sections_addr.defined() else {
            if hdr.serial_sections > 0 {
                self.err(
                    Some(abs),
                    path,
                    format!(
                        "{who} with {} sections but no section list",
                        hdr.serial_sections
                    ),
                );
            }
            return Some((hdr, Vec::new()));
        };
        let sabs = self.abs(sa);
        if !self.region(
            sa,
            hdr.sections_alloc,
            &format!("{what} section list"),
            path,
        ) {
            return None;
        }
        let sections = match self
            .st
            .read(sa, hdr.sections_used)
            .and_then(|b| decode_sections(&mut Cursor::new(&b, sabs), &hdr, a, self.ctx))
        {
            Ok(s) => s,
            Err(e) => {
                self.error(&e, Some(sabs), path, &format!("{what} section list"));
                return None;
            }
        };
        let total = sections.iter().fold(0u64, |t, s| t.saturating_add(s.size));
        if hdr.ghost_sections == 0 && total != hdr.total_space {
            self.err(
                Some(abs),
                path,
                format!(
                    "{what} sections add up to {total} bytes, the header tracks {}",
                    hdr.total_space
                ),
            );
        }
        Some((hdr, sections))
    }

    /// A fractal heap's free-space manager: header and section list decoded
    /// (client 0) and recorded as allocated; each single section inside the
    /// data area of one of the heap's direct blocks, each row section within
    /// the doubling table, and the sections adding up to the header's total.
    fn heap_free_space(
        &mut self,
        a: Addr,
        heap: &h5fmt::format::fractal_heap::FractalHeapHeader,
        direct: &[h5fmt::read::fractal_heap::HeapBlock],
        path: &str,
    ) {
        let Some((hdr, sections)) = self.manager(
            a,
            0,
            "the fractal heap's free-space manager",
            "fractal heap free-space",
            path,
        ) else {
            return;
        };
        let (abs, sabs) = (self.abs(a), self.abs(hdr.sections_addr));
        if hdr.address_bits != heap.max_heap_bits {
            self.err(
                Some(abs),
                path,
                format!(
                    "the fractal heap's free-space manager has a {}-bit address space, the heap {} bits",
                    hdr.address_bits, heap.max_heap_bits
                ),
            );
        }
        // Heap-space extent of each direct block's data area (unfiltered
        // heaps: a filtered block's stored size is not its heap size).
        let prefix = heap.direct_prefix_len(self.ctx.sizes) as u64;
        let areas: Vec<(u64, u64)> = if heap.filter_len == 0 {
            direct
                .iter()
                .map(|b| {
                    (
                        b.offset.saturating_add(prefix),
                        b.offset.saturating_add(b.len),
                    )
                })
                .collect()
        } else {
            Vec::new()
        };
        for s in &sections {
            let end = s.offset.saturating_add(s.size);
            match (s.class, s.heap_rows) {
                (0, _)
                    if heap.filter_len == 0
                        && !areas.iter().any(|&(lo, hi)| s.offset >= lo && end <= hi) =>
                {
                    self.err(
                        Some(sabs),
                        path,
                        format!(
                            "fractal heap free section [{}, {end}) is not inside the data of a direct block",
                            s.offset
                        ),
                    );
                }
                (1 | 3, Some(r)) if r.entries == 0 || r.col >= heap.table_width => {
                    // (The run of empty blocks may span several rows: the
                    // entries are not bounded by the row's width.)
                    self.err(
                        Some(sabs),
                        path,
                        format!(
                            "fractal heap row section at row {}, column {} of {} entries in a table {} wide",
                            r.row, r.col, r.entries, heap.table_width
                        ),
                    );
                }
                _ => {}
            }
            if heap.max_heap_bits < 64 && end > 1u64 << heap.max_heap_bits {
                self.err(
                    Some(sabs),
                    path,
                    format!(
                        "fractal heap free section [{}, {end}) past the heap's 2^{} bytes",
                        s.offset, heap.max_heap_bits
                    ),
                );
            }
        }
    }

    /// Read a v1 B-tree node (used entries only), recording its region.
    fn read_tree_node(
        &mut self,
        addr: Addr,
        chunk_dims: usize,
        path: &str,
    ) -> Result<BTreeV1Node, Error> {
        let plen = BTreeV1Node::prefix_len(self.ctx.sizes) as u64;
        let prefix = self.st.read(addr, plen)?;
        let abs = self.abs(addr);
        let (node_type, _level, entries) = BTreeV1Node::peek(&prefix, abs)?;
        let len = BTreeV1Node::used_len(node_type, self.ctx.sizes, chunk_dims, entries)
            .map_err(|e| e.with_offset(abs))?;
        if len > self.ctx.limits.max_metadata_block {
            return Err(Error::limit(format!("v1 B-tree node of {len} bytes")).with_offset(abs));
        }
        let raw = self.st.read(addr, len)?;
        let node = BTreeV1Node::decode(&mut Cursor::new(&raw, abs), self.ctx, chunk_dims)?;
        self.region(addr, len, "v1 B-tree node", path);
        Ok(node)
    }

    /// Common node checks: cycles, depth, level.
    fn enter_node(
        &mut self,
        tw: &mut TreeWalk,
        addr: Addr,
        expect_level: Option<u8>,
        node: &BTreeV1Node,
        node_type: u8,
        path: &str,
    ) -> bool {
        let abs = self.abs(addr);
        if node.node_type != node_type {
            self.err(
                Some(abs),
                path,
                format!(
                    "v1 B-tree node of type {}, expected {node_type}",
                    node.node_type
                ),
            );
            return false;
        }
        if let Some(l) = expect_level {
            if node.level != l {
                self.err(
                    Some(abs),
                    path,
                    format!(
                        "v1 B-tree node at level {}, its parent expects {l}",
                        node.level
                    ),
                );
                return false;
            }
        }
        tw.levels
            .entry(node.level)
            .or_default()
            .push((abs, node.left, node.right));
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn group_node(
        &mut self,
        addr: Addr,
        level: Option<u8>,
        heap: Option<&LocalHeap>,
        tw: &mut TreeWalk,
        last: &mut Option<Vec<u8>>,
        path: &str,
        depth: usize,
    ) {
        let abs = self.abs(addr);
        if !tw.visited.insert(abs) {
            self.err(Some(abs), path, "group B-tree: node visited twice (cycle)");
            return;
        }
        if depth > self.ctx.limits.max_btree_depth {
            self.err(Some(abs), path, "group B-tree deeper than the limit");
            return;
        }
        let node = match self.read_tree_node(addr, 0, path) {
            Ok(n) => n,
            Err(e) => return self.error(&e, Some(abs), path, "group B-tree node"),
        };
        if !self.enter_node(tw, addr, level, &node, NODE_TYPE_GROUP, path) {
            return;
        }
        for &child in &node.children {
            if node.level > 0 {
                self.group_node(child, Some(node.level - 1), heap, tw, last, path, depth + 1);
            } else {
                self.snod(child, heap, tw, last, path);
            }
        }
    }

    fn snod(
        &mut self,
        addr: Addr,
        heap: Option<&LocalHeap>,
        tw: &mut TreeWalk,
        last: &mut Option<Vec<u8>>,
        path: &str,
    ) {
        let abs = self.abs(addr);
        if !tw.visited.insert(abs) {
            self.err(Some(abs), path, "symbol table node visited twice (cycle)");
            return;
        }
        let snod = match h5fmt::read::btree_v1::read_snod(&self.st, self.ctx, addr) {
            Ok(s) => s,
            Err(e) => return self.error(&e, Some(abs), path, "symbol table node"),
        };
        let len = SymbolTableNode::PREFIX_LEN as u64
            + snod.entries.len() as u64 * SymbolTableEntry::encoded_len(self.ctx.sizes) as u64;
        self.region(addr, len, "symbol table node", path);
        let Some(heap) = heap else { return };
        for e in &snod.entries {
            match heap.bytes_at(e.name_offset) {
                Ok(name) => {
                    if let Some(prev) = last.as_deref() {
                        if prev >= name {
                            self.err(
                                Some(abs),
                                path,
                                format!(
                                    "group B-tree out of order: {:?} after {:?}",
                                    String::from_utf8_lossy(name),
                                    String::from_utf8_lossy(prev)
                                ),
                            );
                        }
                    }
                    *last = Some(name.to_vec());
                }
                Err(e) => self.error(&e, Some(abs), path, "link name"),
            }
        }
    }

    /// Sibling links: per level, in walk (key) order, each node's right
    /// sibling is the next node and the next node's left sibling is it.
    fn siblings(&mut self, tw: &TreeWalk, path: &str) {
        let undef = Addr::UNDEF;
        for (level, nodes) in &tw.levels {
            for (i, &(at, left, right)) in nodes.iter().enumerate() {
                let want_left = if i == 0 {
                    undef
                } else {
                    Addr(nodes[i - 1].0.saturating_sub(self.st.base()))
                };
                let want_right = nodes
                    .get(i + 1)
                    .map_or(undef, |n| Addr(n.0.saturating_sub(self.st.base())));
                if left != want_left {
                    self.err(
                        Some(at),
                        path,
                        format!(
                            "v1 B-tree level {level}: left sibling {left}, expected {want_left}"
                        ),
                    );
                }
                if right != want_right {
                    self.err(
                        Some(at),
                        path,
                        format!(
                            "v1 B-tree level {level}: right sibling {right}, expected {want_right}"
                        ),
                    );
                }
            }
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn chunk_node(
        &mut self,
        addr: Addr,
        level: Option<u8>,
        rank: usize,
        tw: &mut TreeWalk,
        last: &mut Option<Vec<u64>>,
        path: &str,
        depth: usize,
    ) {
        let abs = self.abs(addr);
        if !tw.visited.insert(abs) {
            self.err(Some(abs), path, "chunk B-tree: node visited twice (cycle)");
            return;
        }
        if depth > self.ctx.limits.max_btree_depth {
            self.err(Some(abs), path, "chunk B-tree deeper than the limit");
            return;
        }
        let node = match self.read_tree_node(addr, rank + 1, path) {
            Ok(n) => n,
            Err(e) => return self.error(&e, Some(abs), path, "chunk B-tree node"),
        };
        if !self.enter_node(tw, addr, level, &node, NODE_TYPE_CHUNK, path) {
            return;
        }
        if node.level > 0 {
            for &child in &node.children {
                self.chunk_node(child, Some(node.level - 1), rank, tw, last, path, depth + 1);
            }
            return;
        }
        for key in node.keys.iter().take(node.children.len()) {
            if let Key::Chunk { offsets, .. } = key {
                if let Some(prev) = last.as_deref() {
                    if prev >= offsets.as_slice() {
                        self.err(
                            Some(abs),
                            path,
                            format!("chunk B-tree out of order: chunk {offsets:?} after {prev:?}"),
                        );
                    }
                }
                *last = Some(offsets.clone());
            }
        }
    }

    fn dataset(
        &mut self,
        d: &h5fmt::Dataset,
        header: &h5fmt::format::object_header::ObjectHeader,
        path: &str,
    ) {
        let at = Some(self.abs(d.addr()));
        let space = d.space();
        let esize = d.dtype().size();
        if esize == 0 {
            self.err(at, path, "datatype of size 0");
        }
        if let Some(max) = &space.max_dims {
            for (i, (&n, &m)) in space.dims.iter().zip(max).enumerate() {
                if m != Dataspace::UNLIMITED && n > m {
                    self.err(
                        at,
                        path,
                        format!("dimension {i}: size {n} above its maximum {m}"),
                    );
                }
            }
        }
        let count = space.num_elements();
        let needed = count.and_then(|c| c.checked_mul(esize));
        if needed.is_none() {
            self.err(at, path, "dataset size overflows 64 bits");
        }
        let external = header.find(kind::EXTERNAL_FILES).is_some();
        match d.layout() {
            Layout::Compact { data } => {
                if let Some(n) = needed {
                    let have = data.len() as u64;
                    if have < n {
                        self.err(
                            at,
                            path,
                            format!("compact data holds {have} bytes, {n} needed"),
                        );
                    } else if have != n {
                        self.warn(
                            at,
                            path,
                            format!("compact data holds {have} bytes, {n} needed"),
                        );
                    }
                }
            }
            Layout::Contiguous { addr, size } if !external => {
                if let (Some(n), false) = (needed, addr.is_undef()) {
                    if *size < n {
                        self.err(
                            Some(self.abs(*addr)),
                            path,
                            format!("contiguous storage holds {size} bytes, {n} needed"),
                        );
                    } else if *size != n {
                        self.warn(
                            Some(self.abs(*addr)),
                            path,
                            format!("contiguous storage holds {size} bytes, {n} needed"),
                        );
                    }
                }
                self.region(*addr, *size, "contiguous data", path);
            }
            Layout::Chunked(cl) => self.chunks(d, cl, path),
            _ => {}
        }
        let limit = self.ctx.limits.max_read_bytes;
        let virt = d.layout_class() == LayoutClass::Virtual;
        if let Some(n) = needed.filter(|&n| n > limit) {
            self.warn(
                at,
                path,
                format!("data not read: {n} bytes exceed the check's read limit of {limit}"),
            );
            return;
        }
        let read = if d.dtype().is_variable_length() {
            // Every element's heap objects resolved, their collections checked.
            d.read_raw()
                .and_then(|raw| self.vlen_values(d.dtype(), &raw, d.len(), path))
                .map(|v| self.references(&v, path))
        } else if d.dtype().has_references() {
            d.read_values().map(|v| self.references(&v, path))
        } else {
            d.read_raw().map(drop)
        };
        if let Err(e) = read {
            // Not a defect of this file: a filter we lack, or another file.
            let elsewhere = (external || virt)
                && matches!(
                    e.kind(),
                    ErrorKind::Io | ErrorKind::NotFound | ErrorKind::Limit
                );
            if e.kind() == ErrorKind::Unsupported || elsewhere {
                self.warn(at, path, format!("data not read: {e}"));
            } else {
                self.error(&e, at, path, "data unreadable");
            }
        }
    }

    fn chunks(
        &mut self,
        d: &h5fmt::Dataset,
        cl: &h5fmt::format::message::ChunkedLayout,
        path: &str,
    ) {
        let at = Some(self.abs(d.addr()));
        let dims = &d.space().dims;
        let rank = dims.len();
        if cl.dims.len() != rank {
            self.err(
                at,
                path,
                format!(
                    "chunk rank {} differs from the dataspace rank {rank}",
                    cl.dims.len()
                ),
            );
            return;
        }
        if cl.dims.contains(&0) {
            self.err(
                at,
                path,
                format!("chunk dimensions {:?} contain 0", cl.dims),
            );
            return;
        }
        let esize = d.dtype().size();
        if cl.element_size != 0 && cl.element_size != esize && cl.layout_version < 4 {
            self.warn(
                at,
                path,
                format!(
                    "chunk element size {} differs from the datatype size {esize}",
                    cl.element_size
                ),
            );
        }
        let chunk_bytes = cl
            .dims
            .iter()
            .try_fold(esize, |a, &n| a.checked_mul(n))
            .unwrap_or(u64::MAX);
        if let h5fmt::format::message::ChunkIndex::BTreeV1 { addr } = cl.index {
            if !addr.is_undef() {
                let mut tw = TreeWalk::default();
                let mut last = None;
                self.chunk_node(addr, None, rank, &mut tw, &mut last, path, 0);
                self.siblings(&tw, path);
            }
        }
        let max_dims: Vec<u64> = d.space().max_dims.clone().unwrap_or_else(|| dims.clone());
        let filtered = !d.filters().filters.is_empty();
        let Ok(es) = usize::try_from(esize) else {
            return;
        };
        let recs = match h5fmt::read::chunks::chunk_records(
            &self.st, self.ctx, cl, dims, &max_dims, es, filtered,
        ) {
            Ok(r) => r,
            Err(e) => return self.error(&e, at, path, "chunk index"),
        };
        let mut offsets_seen = BTreeSet::new();
        for r in recs {
            let label = format!("chunk {:?}", r.offsets);
            let cat = Some(self.abs(r.addr));
            for (i, (&o, &c)) in r.offsets.iter().zip(&cl.dims).enumerate() {
                if o % c != 0 {
                    self.err(cat, path, format!("{label}: offset {o} in dimension {i} is not a multiple of the chunk size {c}"));
                }
                // Beyond the current extent of an unlimited dimension: libhdf5
                // leaves such chunks (extensible arrays) and never reads them.
                let cur = dims.get(i).copied().unwrap_or(0);
                let max = max_dims.get(i).copied().unwrap_or(cur);
                if o >= cur {
                    if max != Dataspace::UNLIMITED && o >= max.max(cur) {
                        self.err(
                            cat,
                            path,
                            format!("{label}: outside the dataspace {dims:?}"),
                        );
                    } else {
                        self.warn(
                            cat,
                            path,
                            format!("{label}: beyond the current extent {dims:?}"),
                        );
                    }
                }
            }
            if !offsets_seen.insert(r.offsets.clone()) {
                self.err(cat, path, format!("{label}: stored twice"));
            }
            if r.size == 0 {
                self.err(cat, path, format!("{label}: size 0"));
            } else if !filtered && r.size != chunk_bytes {
                self.err(
                    cat,
                    path,
                    format!(
                        "{label}: {} bytes, unfiltered chunks hold {chunk_bytes}",
                        r.size
                    ),
                );
            } else if filtered && r.size > chunk_bytes.saturating_mul(2).saturating_add(4096) {
                self.err(
                    cat,
                    path,
                    format!(
                        "{label}: {} bytes, far more than the {chunk_bytes} bytes it decodes to",
                        r.size
                    ),
                );
            }
            self.region(r.addr, r.size, &label, path);
        }
    }

    /// Every object reference in `vals` names a readable object.
    fn references(&mut self, vals: &[Value], path: &str) {
        let mut addrs = BTreeSet::new();
        let mut stack: Vec<&Value> = vals.iter().collect();
        while let Some(v) = stack.pop() {
            match v {
                Value::Ref(
                    Reference::Object(a)
                    | Reference::Region { obj: a, .. }
                    | Reference::Attribute { obj: a, .. },
                ) => {
                    addrs.insert(*a);
                }
                Value::Compound(fs) => stack.extend(fs.iter().map(|(_, v)| v)),
                Value::Array(vs) | Value::Vlen(vs) => stack.extend(vs.iter()),
                _ => {}
            }
            if addrs.len() > 10_000 {
                break;
            }
        }
        for a in addrs {
            if a.is_undef() || a.0 == 0 && self.file.superblock().root != a {
                continue; // null references
            }
            if let Err(e) = self.file.object_at(a, "(reference target)") {
                self.err(
                    Some(self.abs(a)),
                    path,
                    format!("reference to {a} does not name an object: {e}"),
                );
            }
        }
    }

    /// Decode `count` elements of a variable-length `dtype` from `raw`,
    /// resolving every global heap object they name (a missing object or a
    /// broken collection is the decode's error), and record each collection
    /// read as an allocated structure (overlaps, past the end of file).
    fn vlen_values(
        &mut self,
        dtype: &h5fmt::format::datatype::Datatype,
        raw: &[u8],
        count: u64,
        path: &str,
    ) -> Result<Vec<Value>, Error> {
        let heap = NotingHeap {
            heap: self.file.heap(),
            seen: std::cell::RefCell::new(BTreeSet::new()),
        };
        let vals = h5fmt::data::decode::decode_elements(dtype, raw, count, self.ctx, &heap);
        let hlen = h5fmt::format::global_heap::header_len(self.ctx.sizes) as u64;
        for a in heap.seen.into_inner() {
            let size = self.st.read(a, hlen).and_then(|head| {
                h5fmt::format::global_heap::decode_collection_size(
                    &mut Cursor::new(&head, self.abs(a)),
                    self.ctx,
                )
            });
            match size {
                Ok(size) => {
                    self.region(a, size, "global heap collection", path);
                }
                // The decode above failed on it too, and says so.
                Err(_) => debug_assert!(vals.is_err()),
            }
        }
        vals
    }

    /// Report overlapping allocated structures.
    fn overlaps(&mut self) {
        let mut rs = std::mem::take(&mut self.regions);
        rs.sort_by_key(|r| (r.start, r.len));
        let mut found = Vec::new();
        let mut widest: Option<usize> = None;
        for (i, r) in rs.iter().enumerate() {
            if let Some(w) = widest {
                let p = &rs[w];
                if r.start < p.start + p.len {
                    found.push(Finding {
                        addr: Some(r.start),
                        path: r.path.clone(),
                        message: format!(
                            "{} [{:#x}, {:#x}) overlaps {} of {} [{:#x}, {:#x})",
                            r.what,
                            r.start,
                            r.start + r.len,
                            p.what,
                            p.path,
                            p.start,
                            p.start + p.len
                        ),
                        warning: false,
                    });
                }
            }
            if widest.is_none_or(|w| r.start + r.len > rs[w].start + rs[w].len) {
                widest = Some(i);
            }
        }
        self.findings.extend(found);
    }
}

/// Decode one (unshared) message body with its typed decoder.
fn decode_message(k: u16, body: &[u8], offset: u64, ctx: Ctx) -> Result<(), Error> {
    use h5fmt::format::message::*;
    let mut cur = Cursor::new(body, offset);
    let c = &mut cur;
    match k {
        kind::DATASPACE => Dataspace::decode(c, ctx).map(drop),
        kind::LINK_INFO => LinkInfo::decode(c, ctx).map(drop),
        kind::DATATYPE => h5fmt::Datatype::decode(c, ctx).map(drop),
        kind::FILL_VALUE_OLD => FillValue::decode_old(c, ctx).map(drop),
        kind::FILL_VALUE => FillValue::decode(c, ctx).map(drop),
        kind::LINK => Link::decode(c, ctx).map(drop),
        kind::EXTERNAL_FILES => ExternalFiles::decode(c, ctx).map(drop),
        kind::LAYOUT => Layout::decode(c, ctx).map(drop),
        kind::GROUP_INFO => GroupInfo::decode(c, ctx).map(drop),
        kind::FILTER_PIPELINE => FilterPipeline::decode(c, ctx).map(drop),
        kind::ATTRIBUTE => AttributeMessage::decode(c, ctx).map(drop),
        kind::CONTINUATION => Continuation::decode(c, ctx).map(drop),
        kind::SYMBOL_TABLE => SymbolTableMessage::decode(c, ctx).map(drop),
        kind::ATTRIBUTE_INFO => AttributeInfo::decode(c, ctx).map(drop),
        _ => Ok(()),
    }
}

/// A finding as a JSON object: `addr` (number or null), `path`, `severity`
/// (`error` or `warning`), `message`.
pub fn finding_json(f: &Finding) -> serde_json::Value {
    serde_json::json!({
        "addr": f.addr,
        "path": f.path,
        "severity": if f.warning { "warning" } else { "error" },
        "message": f.message,
    })
}
