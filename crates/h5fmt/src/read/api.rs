//! The lazy high-level read API.

use crate::data::convert::convert_slice;
#[cfg(all(feature = "std", target_has_atomic = "64"))]
use crate::data::decode::BudgetPool;
use crate::data::decode::{decode_elements, Budget};
use crate::data::hyperslab::Selection;
use crate::data::native::{bytes_mut, with_native, zeroed_vec, Conv, Native};
use crate::data::{HeapResolver, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::format::datatype::Datatype;
use crate::format::message::attribute::MaybeShared;
use crate::format::message::{
    kind, AttributeInfo, AttributeMessage, Dataspace, ExternalFiles, FillState, FillValue,
    FilterPipeline, Layout, Link as LinkMessage, LinkInfo, LinkTarget, Message, SharedMessage,
    SharedTarget, SpaceKind, SymbolTableMessage,
};
use crate::format::object_header::ObjectHeader;
use crate::format::superblock::Superblock;
use crate::format::symbol_table_node::EntryCache;
use crate::io::{ReadAt, Storage};
use crate::read::btree_v2::BTreeV2;
use crate::read::fractal_heap::FractalHeap;
use crate::read::global_heap::GlobalHeap;
use crate::read::local_heap::LocalHeap;
use crate::read::object_header::read_object_header;
use crate::{Addr, Ctx, Limits};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;

/// How deep shared-message references may chain before we call it corrupt.
const MAX_SHARED_DEPTH: usize = 4;

struct Inner {
    st: Storage,
    ctx: Ctx,
    sb: Superblock,
    sohm: Option<crate::read::sohm::SohmIndexes>,
    #[cfg(feature = "std")]
    dir: Option<std::path::PathBuf>,
}

/// An open HDF5 file. Cheap to clone; every object keeps the file alive.
///
/// Open a file on disk with [`File::open`] (memory-mapped), bytes with
/// [`File::from_bytes`]; reach objects by path with [`File::dataset`],
/// [`File::group`] or [`File::object`].
///
/// ```
/// # fn main() -> h5fmt::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("h5fmt-doc-file-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let path = dir.join("example.h5");
/// // A small file to read (any HDF5 file works the same).
/// let mut w = h5fmt::FileWriter::create(&path)?;
/// w.root().create_dataset("run1/energy").write(&[1.5f32, 2.5, 4.0])?;
/// w.close()?;
///
/// let file = h5fmt::File::open(&path)?;
/// let energy = file.dataset("/run1/energy")?;
/// assert_eq!(energy.shape(), &[3]);
/// assert_eq!(energy.read::<f64>()?, vec![1.5, 2.5, 4.0]);
/// assert_eq!(file.group("run1")?.member_names()?, vec!["energy"]);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct File {
    inner: Arc<Inner>,
}

impl core::fmt::Debug for File {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("File")
            .field("superblock_version", &self.inner.sb.version)
            .field("len", &self.inner.st.len())
            .finish()
    }
}

impl File {
    /// Open the file at `path` (memory-mapped, read-only; a read-only open never writes).
    ///
    /// # Errors
    /// `Io` when the file cannot be opened; any decode error of the superblock.
    #[cfg(feature = "std")]
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<File> {
        Self::open_with_limits(path, Limits::default())
    }

    /// Open the file at `path` with explicit resource limits.
    ///
    /// # Errors
    /// As [`File::open`].
    #[cfg(feature = "std")]
    pub fn open_with_limits(path: impl AsRef<std::path::Path>, limits: Limits) -> Result<File> {
        Self::open_path(path.as_ref(), limits, true)
    }

    /// Open the file at `path` read by positioned reads instead of a memory
    /// map: for one pass over more data than memory (a dump, a copy), where
    /// a map would keep every page read resident in the process until the
    /// file is closed.
    ///
    /// # Errors
    /// As [`File::open`].
    #[cfg(all(feature = "std", unix))]
    pub fn open_unmapped(path: impl AsRef<std::path::Path>, limits: Limits) -> Result<File> {
        Self::open_path(path.as_ref(), limits, false)
    }

    #[cfg(feature = "std")]
    fn open_path(path: &std::path::Path, limits: Limits, map: bool) -> Result<File> {
        let f =
            std::fs::File::open(path).map_err(|e| Error::io(format!("{}: {e}", path.display())))?;
        let mapped = if map {
            crate::io::MmapSource::new(&f).ok()
        } else {
            None
        };
        let src: Arc<dyn ReadAt> = match mapped {
            Some(m) => Arc::new(m),
            None => Arc::new(crate::io::FileSource::new(f)?),
        };
        let mut file = Self::from_source_inner(src, limits)?;
        if let Some(inner) = Arc::get_mut(&mut file.inner) {
            inner.dir = path.parent().map(|p| p.to_path_buf());
        }
        Ok(file)
    }

    /// Open a file held in memory (works without `std`).
    ///
    /// # Errors
    /// Any decode error of the superblock.
    pub fn from_bytes(bytes: impl Into<Vec<u8>>) -> Result<File> {
        Self::from_source(Arc::new(bytes.into()), Limits::default())
    }

    /// Open any byte source with explicit resource limits.
    ///
    /// # Errors
    /// Any decode error of the superblock.
    pub fn from_source(src: Arc<dyn ReadAt>, limits: Limits) -> Result<File> {
        Self::from_source_inner(src, limits)
    }

    fn from_source_inner(src: Arc<dyn ReadAt>, limits: Limits) -> Result<File> {
        let sig_at = crate::format::superblock::locate(&*src)?;
        let st0 = Storage::new(src);
        let bytes = st0.read_upto(Addr(sig_at), 4096)?;
        let ctx0 = Ctx {
            sizes: crate::Sizes::default(),
            limits,
        };
        let sb = Superblock::decode(&mut crate::codec::Cursor::new(&bytes, sig_at), ctx0)?;
        let st = st0.with_base(sb.base_address);
        let ctx = Ctx {
            sizes: sb.sizes,
            limits,
        };
        // A metadata cache image replaces the metadata at its entries' addresses.
        let st = crate::read::mdci::apply(&st, ctx, &sb)?;
        let sohm = crate::read::sohm::SohmIndexes::load(&st, ctx, &sb)?;
        Ok(File {
            inner: Arc::new(Inner {
                st,
                ctx,
                sb,
                sohm,
                #[cfg(feature = "std")]
                dir: None,
            }),
        })
    }

    /// The decoded superblock.
    pub fn superblock(&self) -> &Superblock {
        &self.inner.sb
    }
    /// The decode context (sizes and limits).
    pub fn ctx(&self) -> Ctx {
        self.inner.ctx
    }
    /// The storage (source plus base address).
    pub fn storage(&self) -> &Storage {
        &self.inner.st
    }
    /// The directory of the file, when it was opened by path.
    #[cfg(feature = "std")]
    pub fn dir(&self) -> Option<&std::path::Path> {
        self.inner.dir.as_deref()
    }

    /// The root group.
    ///
    /// # Errors
    /// Decode errors of the root object header.
    pub fn root(&self) -> Result<Group> {
        match self.object_at(self.inner.sb.root, "/")? {
            Object::Group(g) => Ok(g),
            _ => Err(
                Error::corrupt("the root object is not a group", self.inner.sb.root.0)
                    .with_path("/"),
            ),
        }
    }

    /// The object whose header is at `addr`, named `path` in errors.
    ///
    /// # Errors
    /// Decode errors of its object header.
    pub fn object_at(&self, addr: Addr, path: &str) -> Result<Object> {
        let header = read_object_header(&self.inner.st, addr, self.inner.ctx)
            .map_err(|e| e.with_path(path))?;
        let base = ObjectBase {
            file: self.clone(),
            addr,
            path: String::from(path),
            header: Arc::new(header),
        };
        base.classify().map_err(|e| e.with_path(path))
    }

    /// The object at an absolute `path` (following soft links).
    ///
    /// # Errors
    /// `NotFound` when a component is missing; decode errors.
    pub fn object(&self, path: &str) -> Result<Object> {
        self.resolve(path, 0)
    }

    fn resolve(&self, path: &str, hops: usize) -> Result<Object> {
        if hops > self.inner.ctx.limits.max_link_hops {
            return Err(Error::limit("too many soft link hops").with_path(path));
        }
        let mut cur = Object::Group(self.root()?);
        let mut cur_path = String::from("/");
        for comp in path.split('/').filter(|c| !c.is_empty() && *c != ".") {
            let g = match cur {
                Object::Group(g) => g,
                _ => {
                    return Err(
                        Error::not_found(format!("{cur_path} is not a group")).with_path(path)
                    )
                }
            };
            let link = g.link(comp)?;
            let child_path = join_path(&cur_path, comp);
            cur = match link.target {
                LinkTarget::Hard(addr) => self.object_at(addr, &child_path)?,
                LinkTarget::Soft(ref target) => {
                    let abs = if target.starts_with('/') {
                        target.clone()
                    } else {
                        join_path(&cur_path, target)
                    };
                    self.resolve(&abs, hops + 1)?
                }
                LinkTarget::External {
                    ref file,
                    path: ref target,
                } => match crate::read::vds::open_sibling(self, file)? {
                    Some(other) if hops < self.inner.ctx.limits.max_link_hops => {
                        other.resolve(target, hops + 1)?
                    }
                    Some(_) => {
                        return Err(Error::limit("too many link hops").with_path(&child_path))
                    }
                    None => {
                        return Err(Error::not_found(format!(
                            "external link target file {file:?} not found"
                        ))
                        .with_path(&child_path))
                    }
                },
                LinkTarget::UserDefined { .. } => {
                    return Err(
                        Error::unsupported("following user-defined links").with_path(&child_path)
                    )
                }
            };
            cur_path = child_path;
        }
        Ok(cur)
    }

    /// The group at `path`.
    ///
    /// # Errors
    /// `NotFound`, `Usage` when it is not a group, decode errors.
    pub fn group(&self, path: &str) -> Result<Group> {
        match self.object(path)? {
            Object::Group(g) => Ok(g),
            _ => Err(Error::usage("not a group").with_path(path)),
        }
    }

    /// The dataset at `path`.
    ///
    /// # Errors
    /// `NotFound`, `Usage` when it is not a dataset, decode errors.
    pub fn dataset(&self, path: &str) -> Result<Dataset> {
        match self.object(path)? {
            Object::Dataset(d) => Ok(*d),
            _ => Err(Error::usage("not a dataset").with_path(path)),
        }
    }

    /// A resolver for decoding variable-length data and references (global
    /// heap with a small cache; dataspaces of referenced datasets).
    pub fn heap(&self) -> FileHeap {
        FileHeap {
            file: self.clone(),
            heap: GlobalHeap::new(&self.inner.st, self.inner.ctx),
        }
    }

    /// Decode `count` elements of `dtype` from `raw` into values, as
    /// [`decode_elements`] with this file's heap, on several threads when
    /// there are many (see [`File::decode_split`]).
    pub(crate) fn decode_values(
        &self,
        dtype: &Datatype,
        raw: &[u8],
        count: u64,
    ) -> Result<Vec<Value>> {
        let ctx = self.inner.ctx;
        self.decode_split(dtype, raw, count, |part, n, _, heap, budget| {
            crate::data::decode::decode_elements_in(dtype, part, n, ctx, heap, budget)
        })
    }

    /// Decode `count` elements of `dtype` from `raw` with `decode(bytes,
    /// count, index of the first element, heap, budget)`: on several threads,
    /// each with its own heap cache, when there are many elements (std;
    /// strings and other heap data cost an allocation and a heap lookup
    /// each), else at once. The result is the sequential one: the error
    /// returned is that of the first element that fails, and a parallel
    /// decode that runs out of the shared budget (`Limit`, which depends on
    /// the threads' timing) is done again sequentially.
    pub(crate) fn decode_split<T: Send>(
        &self,
        dtype: &Datatype,
        raw: &[u8],
        count: u64,
        decode: impl Fn(&[u8], u64, u64, &FileHeap, &Budget) -> Result<Vec<T>> + Sync,
    ) -> Result<Vec<T>> {
        let ctx = self.inner.ctx;
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        {
            /// Elements per thread at least: below, the threads cost more than they save.
            const PART_MIN: u64 = 1 << 15;
            let threads = crate::io::cores()
                .min(usize::try_from(count / PART_MIN).unwrap_or(usize::MAX))
                .min(8);
            let size = usize::try_from(dtype.size()).unwrap_or(0);
            let n = usize::try_from(count).unwrap_or(usize::MAX);
            let whole = n.checked_mul(size).and_then(|b| raw.get(..b));
            if let (true, true, Some(whole)) = (threads > 1, size > 0, whole) {
                let per = n.div_ceil(threads);
                let (decode, pool) = (&decode, BudgetPool::new(ctx));
                let pool = &pool;
                let run = |k: usize, part: &[u8]| {
                    let first = (k * per) as u64;
                    let n = (part.len() / size) as u64;
                    decode(part, n, first, &self.heap(), &pool.budget())
                };
                let mut parts = whole.chunks(per.saturating_mul(size)).enumerate();
                let (_, first) = parts.next().unwrap_or((0, &[]));
                let done: Vec<Result<Vec<T>>> = std::thread::scope(|s| {
                    let rest: Vec<_> = parts.map(|(k, p)| s.spawn(move || run(k, p))).collect();
                    let mut done = alloc::vec![run(0, first)];
                    done.extend(rest.into_iter().map(|h| {
                        h.join()
                            .unwrap_or_else(|_| Err(Error::limit("a decoding thread failed")))
                    }));
                    done
                });
                let mut out = crate::io::try_vec(n, "decoded elements")?;
                let mut exhausted = false;
                for part in done {
                    match part {
                        Ok(mut v) => out.append(&mut v),
                        Err(e) if e.kind() == crate::ErrorKind::Limit => {
                            exhausted = true;
                            break;
                        }
                        Err(e) => return Err(e),
                    }
                }
                if !exhausted {
                    return Ok(out);
                }
            }
        }
        #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
        let _ = dtype;
        decode(raw, count, 0, &self.heap(), &Budget::new(ctx))
    }

    /// The body of `msg`, fetching it from wherever it is shared.
    fn message_body(&self, msg: &Message, depth: usize) -> Result<Vec<u8>> {
        if !msg.is_shared() {
            return Ok(msg.data.clone());
        }
        if depth >= MAX_SHARED_DEPTH {
            return Err(Error::corrupt("shared message chain too long", msg.offset));
        }
        let shared = SharedMessage::decode(&mut msg.cursor(), self.inner.ctx)?;
        self.shared_body(msg.kind, &shared, depth)
    }

    fn shared_body(&self, kind: u16, shared: &SharedMessage, depth: usize) -> Result<Vec<u8>> {
        match shared.target {
            SharedTarget::ObjectHeader(addr) => {
                let h = read_object_header(&self.inner.st, addr, self.inner.ctx)?;
                let m = h.find(kind).ok_or_else(|| {
                    Error::corrupt(
                        format!("shared message of type {kind} not found in the header at {addr}"),
                        addr.0,
                    )
                })?;
                self.message_body(m, depth + 1)
            }
            SharedTarget::SohmHeap(id) => match &self.inner.sohm {
                Some(s) => s.get(&self.inner.st, self.inner.ctx, kind, &id),
                None => Err(Error::corrupt(
                    "message shared in the SOHM heap, but the file has no SOHM table",
                    0,
                )),
            },
        }
    }

    pub(crate) fn resolve_dtype(&self, d: &MaybeShared<Datatype>) -> Result<Datatype> {
        match d {
            MaybeShared::Inline(t) => Ok(t.clone()),
            MaybeShared::Shared(s) => {
                let body = self.shared_body(kind::DATATYPE, s, 0)?;
                Datatype::decode(&mut crate::codec::Cursor::new(&body, 0), self.inner.ctx)
            }
        }
    }

    pub(crate) fn resolve_space(&self, d: &MaybeShared<Dataspace>) -> Result<Dataspace> {
        match d {
            MaybeShared::Inline(t) => Ok(t.clone()),
            MaybeShared::Shared(s) => {
                let body = self.shared_body(kind::DATASPACE, s, 0)?;
                Dataspace::decode(&mut crate::codec::Cursor::new(&body, 0), self.inner.ctx)
            }
        }
    }
}

fn join_path(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// What every object has: its file, header address, path and decoded header.
#[derive(Clone)]
struct ObjectBase {
    file: File,
    addr: Addr,
    path: String,
    header: Arc<ObjectHeader>,
}

impl ObjectBase {
    fn classify(self) -> Result<Object> {
        let h = &self.header;
        let has = |k| h.find(k).is_some();
        if has(kind::LAYOUT) {
            return Ok(Object::Dataset(Box::new(Dataset::load(self)?)));
        }
        if has(kind::SYMBOL_TABLE)
            || has(kind::LINK_INFO)
            || has(kind::LINK)
            || has(kind::GROUP_INFO)
        {
            return Ok(Object::Group(Group { base: self }));
        }
        if has(kind::DATATYPE) {
            let m = h
                .find(kind::DATATYPE)
                .ok_or_else(|| Error::corrupt("datatype vanished", 0))?;
            let body = self.file.message_body(m, 0)?;
            let dtype = Datatype::decode(
                &mut crate::codec::Cursor::new(&body, m.offset),
                self.file.inner.ctx,
            )?;
            return Ok(Object::Datatype(NamedDatatype { base: self, dtype }));
        }
        // An object header with none of the above: libhdf5 treats a header with no
        // recognisable messages as a group only if it has group messages, so this is
        // an object type we cannot name.
        Err(Error::unsupported(format!(
            "object at {} is neither a group, dataset nor datatype",
            self.addr
        )))
    }

    fn decode_msg<T>(
        &self,
        m: &Message,
        f: impl FnOnce(&mut crate::codec::Cursor<'_>, Ctx) -> Result<T>,
    ) -> Result<T> {
        let body = self.file.message_body(m, 0)?;
        let base = if m.is_shared() { 0 } else { m.offset };
        f(
            &mut crate::codec::Cursor::new(&body, base),
            self.file.inner.ctx,
        )
        .map_err(|e| e.with_path(&self.path))
    }

    fn attributes(&self) -> Result<Vec<Attribute>> {
        let mut out = Vec::new();
        for m in self.header.all(kind::ATTRIBUTE) {
            let a = self.decode_msg(m, AttributeMessage::decode)?;
            out.push(self.make_attr(a)?);
        }
        if let Some(m) = self.header.find(kind::ATTRIBUTE_INFO) {
            let info = self.decode_msg(m, AttributeInfo::decode)?;
            if let Some(heap_addr) = info.heap.defined() {
                let st = &self.file.inner.st;
                let ctx = self.file.inner.ctx;
                let heap =
                    FractalHeap::open(st, ctx, heap_addr).map_err(|e| e.with_path(&self.path))?;
                let tree =
                    BTreeV2::open(st, ctx, info.name_index).map_err(|e| e.with_path(&self.path))?;
                for rec in tree.records().map_err(|e| e.with_path(&self.path))? {
                    let id = rec
                        .get(..8)
                        .ok_or_else(|| Error::corrupt("short attribute name record", 0))?;
                    let flags = rec
                        .get(8)
                        .ok_or_else(|| Error::corrupt("short attribute name record", 0))?;
                    // A shared attribute's record holds its id in the SOHM
                    // heap (`H5SM_reconstitute`), not one in this heap.
                    let bytes = if flags & crate::format::message::flags::SHARED != 0 {
                        let id = <[u8; 8]>::try_from(id)
                            .map_err(|_| Error::corrupt("short attribute name record", 0))?;
                        let shared = SharedMessage {
                            version: 3,
                            target: SharedTarget::SohmHeap(id),
                        };
                        self.file.shared_body(kind::ATTRIBUTE, &shared, 0)
                    } else {
                        heap.get(id)
                    }
                    .map_err(|e| e.with_path(&self.path))?;
                    let a =
                        AttributeMessage::decode(&mut crate::codec::Cursor::new(&bytes, 0), ctx)
                            .map_err(|e| e.with_path(&self.path))?;
                    out.push(self.make_attr(a)?);
                }
            }
        }
        Ok(out)
    }

    fn make_attr(&self, a: AttributeMessage) -> Result<Attribute> {
        let dtype = self
            .file
            .resolve_dtype(&a.dtype)
            .map_err(|e| e.with_path(&self.path))?;
        let space = self
            .file
            .resolve_space(&a.space)
            .map_err(|e| e.with_path(&self.path))?;
        Ok(Attribute {
            file: self.file.clone(),
            owner: self.path.clone(),
            name: a.name,
            dtype,
            space,
            data: a.data,
        })
    }
}

/// Any object reachable in a file.
#[derive(Clone)]
pub enum Object {
    /// A group.
    Group(Group),
    /// A dataset.
    Dataset(Box<Dataset>),
    /// A committed (named) datatype.
    Datatype(NamedDatatype),
}

impl core::fmt::Debug for Object {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Object::Group(g) => write!(f, "Group({})", g.path()),
            Object::Dataset(d) => write!(f, "Dataset({})", d.path()),
            Object::Datatype(t) => write!(f, "Datatype({})", t.path()),
        }
    }
}

impl Object {
    fn base(&self) -> &ObjectBase {
        match self {
            Object::Group(g) => &g.base,
            Object::Dataset(d) => &d.base,
            Object::Datatype(t) => &t.base,
        }
    }
    /// Object header address (identifies the object within the file).
    pub fn addr(&self) -> Addr {
        self.base().addr
    }
    /// The path this object was opened by.
    pub fn path(&self) -> &str {
        &self.base().path
    }
    /// The decoded object header.
    pub fn header(&self) -> &ObjectHeader {
        &self.base().header
    }
    /// All attributes.
    ///
    /// # Errors
    /// Decode errors.
    pub fn attrs(&self) -> Result<Vec<Attribute>> {
        self.base().attributes()
    }
}

/// A link of a group.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Link name.
    pub name: String,
    /// Where it points.
    pub target: LinkTarget,
    /// Creation order, when tracked.
    pub creation_order: Option<u64>,
}

impl From<LinkMessage> for Link {
    fn from(l: LinkMessage) -> Self {
        Link {
            name: l.name,
            target: l.target,
            creation_order: l.creation_order,
        }
    }
}

/// A group: links to other objects, and attributes.
///
/// ```
/// # fn main() -> h5fmt::Result<()> {
/// let mut w = h5fmt::FileWriter::in_memory();
/// let mut root = w.root();
/// root.create_group("a/b")?; // intermediate groups are created
/// root.create_dataset("a/x").write(&[1u8, 2, 3])?;
/// let file = h5fmt::File::from_bytes(w.finish()?)?;
///
/// let a = file.group("a")?;
/// assert_eq!(a.member_names()?, vec!["b", "x"]);
/// assert!(matches!(a.member("x")?, h5fmt::Object::Dataset(_)));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Group {
    base: ObjectBase,
}

impl core::fmt::Debug for Group {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Group({})", self.base.path)
    }
}

impl Group {
    /// The path this group was opened by.
    pub fn path(&self) -> &str {
        &self.base.path
    }
    /// Object header address.
    pub fn addr(&self) -> Addr {
        self.base.addr
    }
    /// The file.
    pub fn file(&self) -> &File {
        &self.base.file
    }
    /// The decoded object header.
    pub fn header(&self) -> &ObjectHeader {
        &self.base.header
    }

    /// All links, sorted by name (byte order).
    ///
    /// # Errors
    /// Decode errors, named with the group path.
    pub fn links(&self) -> Result<Vec<Link>> {
        let mut links = self
            .links_unsorted()
            .map_err(|e| e.with_path(&self.base.path))?;
        links.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
        Ok(links)
    }

    fn links_unsorted(&self) -> Result<Vec<Link>> {
        let file = &self.base.file;
        let st = &file.inner.st;
        let ctx = file.inner.ctx;
        let mut out = Vec::new();
        if let Some(m) = self.base.header.find(kind::SYMBOL_TABLE) {
            let stab = self.base.decode_msg(m, SymbolTableMessage::decode)?;
            let heap = LocalHeap::read(st, ctx, stab.heap)?;
            for e in crate::read::btree_v1::group_entries(st, ctx, stab.btree)? {
                out.push(entry_link(&heap, &e)?);
            }
            return Ok(out);
        }
        for m in self.base.header.all(kind::LINK) {
            out.push(self.base.decode_msg(m, LinkMessage::decode)?.into());
        }
        if let Some(m) = self.base.header.find(kind::LINK_INFO) {
            let info = self.base.decode_msg(m, LinkInfo::decode)?;
            if let Some(heap_addr) = info.heap.defined() {
                let heap = FractalHeap::open(st, ctx, heap_addr)?;
                let tree = BTreeV2::open(st, ctx, info.name_index)?;
                for rec in tree.records()? {
                    out.push(dense_link(&heap, &rec, ctx)?);
                }
            }
        }
        Ok(out)
    }

    /// Names of all links, sorted.
    ///
    /// # Errors
    /// As [`Group::links`].
    pub fn member_names(&self) -> Result<Vec<String>> {
        Ok(self.links()?.into_iter().map(|l| l.name).collect())
    }

    /// The link called `name`.
    ///
    /// # Errors
    /// `NotFound`; decode errors.
    pub fn link(&self, name: &str) -> Result<Link> {
        self.find_link(name)
            .map_err(|e| e.with_path(&self.base.path))?
            .ok_or_else(|| {
                Error::not_found(format!("no link named {name:?}")).with_path(&self.base.path)
            })
    }

    /// Look `name` up the way libhdf5 does: a descent of the symbol-table
    /// B-tree, the compact link messages, or the dense name index by hash,
    /// without listing the whole group.
    fn find_link(&self, name: &str) -> Result<Option<Link>> {
        let file = &self.base.file;
        let st = &file.inner.st;
        let ctx = file.inner.ctx;
        if let Some(m) = self.base.header.find(kind::SYMBOL_TABLE) {
            let stab = self.base.decode_msg(m, SymbolTableMessage::decode)?;
            let heap = LocalHeap::read(st, ctx, stab.heap)?;
            return crate::read::btree_v1::group_lookup(
                st,
                ctx,
                stab.btree,
                &heap,
                name.as_bytes(),
            )?
            .map(|e| entry_link(&heap, &e))
            .transpose();
        }
        for m in self.base.header.all(kind::LINK) {
            let l = self.base.decode_msg(m, LinkMessage::decode)?;
            if l.name == name {
                return Ok(Some(l.into()));
            }
        }
        if let Some(m) = self.base.header.find(kind::LINK_INFO) {
            let info = self.base.decode_msg(m, LinkInfo::decode)?;
            if let Some(heap_addr) = info.heap.defined() {
                let heap = FractalHeap::open(st, ctx, heap_addr)?;
                let tree = BTreeV2::open(st, ctx, info.name_index)?;
                let hash = crate::codec::lookup3(name.as_bytes(), 0);
                // Record type 5 starts with the name's hash (little-endian);
                // a short record compares equal so that decoding reports it.
                let mut by_hash = |rec: &[u8]| {
                    rec.get(..4)
                        .and_then(|h| <[u8; 4]>::try_from(h).ok())
                        .map_or(core::cmp::Ordering::Equal, |h| {
                            u32::from_le_bytes(h).cmp(&hash)
                        })
                };
                for rec in tree.find(&mut by_hash)? {
                    let l = dense_link(&heap, &rec, ctx)?;
                    if l.name == name {
                        return Ok(Some(l));
                    }
                }
            }
        }
        Ok(None)
    }

    /// The object a member link points at (hard and soft links are followed).
    ///
    /// # Errors
    /// `NotFound`, `Unsupported` for external links; decode errors.
    pub fn member(&self, name: &str) -> Result<Object> {
        let path = join_path(&self.base.path, name);
        self.base.file.object(&path)
    }

    /// All attributes.
    ///
    /// # Errors
    /// Decode errors.
    pub fn attrs(&self) -> Result<Vec<Attribute>> {
        self.base.attributes()
    }

    /// The attribute called `name`.
    ///
    /// # Errors
    /// `NotFound`; decode errors.
    pub fn attr(&self, name: &str) -> Result<Attribute> {
        find_attr(self.attrs()?, name, &self.base.path)
    }
}

/// A symbol table entry as a link (soft links keep their value in the
/// scratch pad).
fn entry_link(
    heap: &LocalHeap,
    e: &crate::format::symbol_table_node::SymbolTableEntry,
) -> Result<Link> {
    let target = match e.cache {
        EntryCache::SoftLink { offset } if e.header.is_undef() => {
            LinkTarget::Soft(heap.string_at(u64::from(offset))?)
        }
        _ => LinkTarget::Hard(e.header),
    };
    Ok(Link {
        name: heap.string_at(e.name_offset)?,
        target,
        creation_order: None,
    })
}

/// The link a dense name-index record (type 5: 4-byte hash, heap id) points at.
fn dense_link(heap: &FractalHeap, rec: &[u8], ctx: Ctx) -> Result<Link> {
    let id = rec
        .get(4..)
        .ok_or_else(|| Error::corrupt("short link name record", 0))?;
    let bytes = heap.get(id)?;
    Ok(LinkMessage::decode(&mut crate::codec::Cursor::new(&bytes, 0), ctx)?.into())
}

fn find_attr(attrs: Vec<Attribute>, name: &str, path: &str) -> Result<Attribute> {
    attrs
        .into_iter()
        .find(|a| a.name == name)
        .ok_or_else(|| Error::not_found(format!("no attribute named {name:?}")).with_path(path))
}

/// A committed (named) datatype.
#[derive(Clone)]
pub struct NamedDatatype {
    base: ObjectBase,
    dtype: Datatype,
}

impl NamedDatatype {
    /// The path this datatype was opened by.
    pub fn path(&self) -> &str {
        &self.base.path
    }
    /// The datatype.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }
    /// All attributes.
    ///
    /// # Errors
    /// Decode errors.
    pub fn attrs(&self) -> Result<Vec<Attribute>> {
        self.base.attributes()
    }
}

/// Storage layout class, as reported by `H5Pget_layout`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LayoutClass {
    /// Data in the object header.
    Compact,
    /// One contiguous block (or external files).
    Contiguous,
    /// Chunked.
    Chunked,
    /// Virtual dataset.
    Virtual,
}

/// A dataset: a datatype, a shape and the data.
///
/// Whole reads: [`Dataset::read`] (numbers converted to `T`),
/// [`Dataset::read_raw`] (bytes in the file's type), [`Dataset::read_values`]
/// (any type, as [`crate::Value`]s); parts: [`Dataset::read_slice`] and
/// [`Dataset::read_slice_raw`] with a numpy-style [`Selection`].
///
/// ```
/// use h5fmt::data::hyperslab::Selection;
/// # fn main() -> h5fmt::Result<()> {
/// let mut w = h5fmt::FileWriter::in_memory();
/// let values: Vec<i32> = (0..12).collect();
/// w.root().create_dataset("grid").shape(&[3, 4]).chunks(&[2, 2]).deflate(4).write(&values)?;
/// let file = h5fmt::File::from_bytes(w.finish()?)?;
///
/// let grid = file.dataset("grid")?;
/// assert_eq!(grid.shape(), &[3, 4]);
/// assert_eq!(grid.dtype().to_string(), "H5T_STD_I32LE");
/// let sel = Selection::parse("1:, ::2", grid.shape())?; // rows 1..3, even columns
/// assert_eq!(grid.read_slice::<i64>(&sel)?, vec![4, 6, 8, 10]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Dataset {
    base: ObjectBase,
    dtype: Datatype,
    space: Dataspace,
    layout: Layout,
    pipeline: FilterPipeline,
    fill: FillValue,
    external: Option<ExternalFiles>,
    /// Decoded chunks kept between reads (shared by clones).
    #[cfg(feature = "std")]
    cache: Arc<crate::read::chunk_cache::ChunkCache>,
}

impl core::fmt::Debug for Dataset {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Dataset({})", self.base.path)
    }
}

impl Dataset {
    fn load(base: ObjectBase) -> Result<Dataset> {
        let h = base.header.clone();
        let need = |k: u16, what: &str| {
            h.find(k).ok_or_else(|| {
                Error::corrupt(format!("dataset has no {what} message"), base.addr.0)
            })
        };
        let dtype = base.decode_msg(need(kind::DATATYPE, "datatype")?, Datatype::decode)?;
        // One element is materialized whole (fill value, reads): bound it.
        let limit = base.file.inner.ctx.limits.max_read_bytes;
        if dtype.size() > limit {
            return Err(Error::limit(format!(
                "element of {} bytes exceeds the read limit of {limit}",
                dtype.size()
            ))
            .with_offset(base.addr.0)
            .with_path(&base.path));
        }
        let space = base.decode_msg(need(kind::DATASPACE, "dataspace")?, Dataspace::decode)?;
        let layout = base.decode_msg(need(kind::LAYOUT, "layout")?, Layout::decode)?;
        let pipeline = match h.find(kind::FILTER_PIPELINE) {
            Some(m) => base.decode_msg(m, FilterPipeline::decode)?,
            None => FilterPipeline::default(),
        };
        let fill = if let Some(m) = h.find(kind::FILL_VALUE) {
            base.decode_msg(m, FillValue::decode)?
        } else if let Some(m) = h.find(kind::FILL_VALUE_OLD) {
            base.decode_msg(m, FillValue::decode_old)?
        } else {
            FillValue::absent()
        };
        let external = match h.find(kind::EXTERNAL_FILES) {
            Some(m) => Some(base.decode_msg(m, ExternalFiles::decode)?),
            None => None,
        };
        #[cfg(feature = "std")]
        let cache = Arc::new(crate::read::chunk_cache::ChunkCache::new(
            base.file
                .inner
                .ctx
                .limits
                .cache_bytes
                .min(crate::read::chunk_cache::DEFAULT_CHUNK_CACHE_BYTES),
        ));
        Ok(Dataset {
            base,
            dtype,
            space,
            layout,
            pipeline,
            fill,
            external,
            #[cfg(feature = "std")]
            cache,
        })
    }

    /// The dataset's chunk cache (std): decoded chunks kept between
    /// [`Dataset::read_slice_raw`] calls, so overlapping or repeated selections
    /// decode each chunk once while it stays cached. Its budget starts at
    /// [`crate::read::chunk_cache::DEFAULT_CHUNK_CACHE_BYTES`] (or
    /// [`crate::Limits::cache_bytes`] when smaller); change it with
    /// [`crate::read::chunk_cache::ChunkCache::set_budget`] (0 disables it).
    /// Clones of this dataset share the cache.
    #[cfg(feature = "std")]
    pub fn chunk_cache(&self) -> &crate::read::chunk_cache::ChunkCache {
        &self.cache
    }

    /// The path this dataset was opened by.
    pub fn path(&self) -> &str {
        &self.base.path
    }
    /// Object header address.
    pub fn addr(&self) -> Addr {
        self.base.addr
    }
    /// The file.
    pub fn file(&self) -> &File {
        &self.base.file
    }
    /// The element datatype.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }
    /// The decoded object header.
    pub fn header(&self) -> &ObjectHeader {
        &self.base.header
    }
    /// The dataspace.
    pub fn space(&self) -> &Dataspace {
        &self.space
    }
    /// Current dimensions (`[]` for scalar and null dataspaces).
    pub fn shape(&self) -> &[u64] {
        &self.space.dims
    }
    /// Maximum dimensions (`None` entries are unlimited); `None` for scalar/null.
    pub fn maxshape(&self) -> Option<Vec<Option<u64>>> {
        if self.space.kind != SpaceKind::Simple {
            return None;
        }
        Some(match &self.space.max_dims {
            Some(m) => m
                .iter()
                .map(|&d| {
                    if d == Dataspace::UNLIMITED {
                        None
                    } else {
                        Some(d)
                    }
                })
                .collect(),
            None => self.space.dims.iter().map(|&d| Some(d)).collect(),
        })
    }
    /// The layout message.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }
    /// The layout class.
    pub fn layout_class(&self) -> LayoutClass {
        match (&self.layout, &self.external) {
            (Layout::Compact { .. }, _) => LayoutClass::Compact,
            (Layout::Contiguous { .. }, _) => LayoutClass::Contiguous,
            (Layout::Chunked(_), _) => LayoutClass::Chunked,
            (Layout::Virtual { .. }, _) => LayoutClass::Virtual,
        }
    }
    /// The filter pipeline (empty when none).
    pub fn filters(&self) -> &FilterPipeline {
        &self.pipeline
    }
    /// The fill value message (or the default when the file has none).
    pub fn fill_value(&self) -> &FillValue {
        &self.fill
    }
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.space.num_elements().unwrap_or(0)
    }
    /// Whether the dataset has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// What the chunk reader needs for this dataset.
    fn chunked_request<'a>(
        &'a self,
        layout: &'a crate::format::message::ChunkedLayout,
        element_size: usize,
        fill: &'a [u8],
    ) -> crate::read::chunks::ChunkedRead<'a> {
        crate::read::chunks::ChunkedRead {
            layout,
            pipeline: &self.pipeline,
            dims: &self.space.dims,
            max_dims: self.space.max_dims_or_dims(),
            element_size,
            fill,
        }
    }

    /// The bytes that storage never written reads as: the fill element, except
    /// with fill time "never", where libhdf5 leaves the memory untouched (zeros).
    fn unwritten_bytes(&self) -> Vec<u8> {
        const FILL_TIME_NEVER: u8 = 1;
        if self.fill.fill_time == FILL_TIME_NEVER {
            vec![0u8; self.fill_bytes().len()]
        } else {
            self.fill_bytes()
        }
    }

    /// The fill element bytes (`dtype.size()` bytes): the user value, or zeros.
    pub fn fill_bytes(&self) -> Vec<u8> {
        let n = usize::try_from(self.dtype.size()).unwrap_or(0);
        match (&self.fill.state, &self.fill.value) {
            (FillState::User, Some(v)) if v.len() == n => v.clone(),
            _ => vec![0u8; n],
        }
    }

    /// All attributes.
    ///
    /// # Errors
    /// Decode errors.
    pub fn attrs(&self) -> Result<Vec<Attribute>> {
        self.base.attributes()
    }

    /// The attribute called `name`.
    ///
    /// # Errors
    /// `NotFound`; decode errors.
    pub fn attr(&self, name: &str) -> Result<Attribute> {
        find_attr(self.attrs()?, name, &self.base.path)
    }

    /// The whole dataset's raw bytes in file element layout and byte order,
    /// row-major (`len() * dtype().size()` bytes).
    ///
    /// # Errors
    /// `Limit` when larger than `Limits::max_read_bytes`; decode and filter errors.
    pub fn read_raw(&self) -> Result<Vec<u8>> {
        self.read_raw_inner()
            .map_err(|e| e.with_path(&self.base.path))
    }

    fn read_raw_inner(&self) -> Result<Vec<u8>> {
        let (whole, size) = self.whole()?;
        match whole {
            Whole::Empty => Ok(Vec::new()),
            Whole::Virtual => crate::read::vds::read_virtual(self),
            Whole::External(ext) => self.read_external(ext, size.bytes),
            whole => {
                let elem = usize::try_from(self.dtype.size())
                    .map_err(|_| Error::limit("element too large"))?;
                let mut out = crate::io::large_buffer(size.bytes)?;
                self.read_whole_into(whole, Conv::identity(elem), &mut out)?;
                Ok(out)
            }
        }
    }

    /// The checks of a whole read, made before its output is allocated (in
    /// the order `read_raw` has always made them), and where its bytes are.
    fn whole(&self) -> Result<(Whole<'_>, WholeSize)> {
        let none = WholeSize { count: 0, bytes: 0 };
        if let Layout::Virtual { .. } = self.layout {
            // The extent of a virtual dataset can follow its sources (`vds::virtual_dims`).
            return Ok((Whole::Virtual, none));
        }
        let file = &self.base.file;
        let ctx = file.inner.ctx;
        let elem = self.dtype.size();
        let count = self
            .space
            .num_elements()
            .ok_or_else(|| Error::limit("element count overflows"))?;
        let total = count
            .checked_mul(elem)
            .ok_or_else(|| Error::limit("dataset size overflows"))?;
        if total > ctx.limits.max_read_bytes {
            return Err(Error::limit(format!(
                "dataset of {total} bytes exceeds the read limit of {} bytes \
                 (Limits::max_read_bytes; read it in slices)",
                ctx.limits.max_read_bytes
            )));
        }
        let total_usize =
            usize::try_from(total).map_err(|_| Error::limit("dataset larger than memory"))?;
        if count == 0 {
            return Ok((Whole::Empty, none));
        }
        let whole_size = WholeSize {
            count: usize::try_from(count)
                .map_err(|_| Error::limit("dataset larger than memory"))?,
            bytes: total_usize,
        };
        let whole = match &self.layout {
            Layout::Compact { data } => {
                Whole::Compact(data.get(..total_usize).ok_or_else(|| {
                    Error::corrupt(
                        format!("compact data holds {} bytes, {total} needed", data.len()),
                        self.base.addr.0,
                    )
                })?)
            }
            Layout::Contiguous { addr, size } => {
                if let Some(ext) = &self.external {
                    return Ok((Whole::External(ext), whole_size));
                }
                if addr.is_undef() {
                    return Ok((Whole::Unwritten, whole_size));
                }
                if *size < total {
                    return Err(Error::corrupt(
                        format!("contiguous storage holds {size} bytes, {total} needed"),
                        addr.0,
                    ));
                }
                // Past the end of the file: `Truncated` before allocating.
                file.inner.st.absolute(*addr, total)?;
                Whole::Contiguous(*addr)
            }
            Layout::Chunked(cl) => {
                let elem_usize =
                    usize::try_from(elem).map_err(|_| Error::limit("element too large"))?;
                let req = self.chunked_request(cl, elem_usize, &[]);
                crate::read::chunks::check_whole(ctx, &req)?;
                Whole::Chunked(cl)
            }
            Layout::Virtual { .. } => Whole::Virtual,
        };
        Ok((whole, whole_size))
    }

    /// Read the whole dataset (as [`Dataset::whole`] found it) into `out`,
    /// all zero bytes, of its elements converted by `conv`.
    fn read_whole_into(&self, whole: Whole<'_>, conv: Conv, out: &mut [u8]) -> Result<()> {
        let file = &self.base.file;
        let (st, ctx) = (&file.inner.st, file.inner.ctx);
        match whole {
            Whole::Compact(data) => conv.run(data, out),
            Whole::Contiguous(addr) if conv.is_identity() => st.read_into(addr, out),
            Whole::Contiguous(addr) => read_converted_at(st, addr, conv, out),
            Whole::Unwritten => conv.fill(&self.unwritten_bytes(), out),
            Whole::Chunked(cl) => {
                let fill = self.unwritten_bytes();
                let req = self.chunked_request(cl, conv.src_size(), &fill);
                crate::read::chunks::read_all_into(st, ctx, &req, conv, out)
            }
            Whole::Empty | Whole::Virtual | Whole::External(_) => Err(Error::usage(
                "virtual and external datasets are read by their own paths",
            )),
        }
    }

    #[cfg(feature = "std")]
    fn read_external(&self, ext: &ExternalFiles, total: usize) -> Result<Vec<u8>> {
        use std::io::{Read, Seek, SeekFrom};
        let file = &self.base.file;
        let heap = LocalHeap::read(&file.inner.st, file.inner.ctx, ext.heap)?;
        let mut out = crate::io::zeroed_buffer(total)?;
        let mut pos = 0usize;
        for slot in &ext.files {
            if pos >= total {
                break;
            }
            let name = heap.string_at(slot.name_offset)?;
            let want = usize::try_from(slot.size)
                .unwrap_or(usize::MAX)
                .min(total - pos);
            let path = match &file.inner.dir {
                Some(d) if !std::path::Path::new(&name).is_absolute() => d.join(&name),
                _ => std::path::PathBuf::from(&name),
            };
            let mut f = std::fs::File::open(&path)
                .map_err(|e| Error::io(format!("external file {}: {e}", path.display())))?;
            f.seek(SeekFrom::Start(slot.file_offset))?;
            let dst = out
                .get_mut(pos..pos + want)
                .ok_or_else(|| Error::limit("external slot"))?;
            // A short external file reads as zeros past its end, as in libhdf5.
            let mut got = 0;
            while got < want {
                let n = f.read(&mut dst[got..])?;
                if n == 0 {
                    break;
                }
                got += n;
            }
            pos += want;
        }
        Ok(out)
    }

    #[cfg(not(feature = "std"))]
    fn read_external(&self, _ext: &ExternalFiles, _total: usize) -> Result<Vec<u8>> {
        Err(Error::unsupported(
            "external raw storage needs the std feature",
        ))
    }

    /// The raw bytes (file element layout and byte order) of a selection, row-major
    /// in the selection's [`Selection::out_shape`]. Only the storage the selection
    /// touches is read.
    ///
    /// # Errors
    /// `Usage` when the selection does not fit the dataspace; as [`Dataset::read_raw`].
    pub fn read_slice_raw(&self, sel: &Selection) -> Result<Vec<u8>> {
        self.read_slice_inner(sel)
            .map_err(|e| e.with_path(&self.base.path))
    }

    /// As [`Dataset::read_slice_raw`], into `out`, which must hold exactly the
    /// selection's bytes: a scan reading many selections reuses one buffer
    /// (no allocation, no clearing, the pages already faulted in).
    ///
    /// # Errors
    /// `Usage` when `out` is not of the selection's size; as
    /// [`Dataset::read_slice_raw`].
    pub fn read_slice_into_raw(&self, sel: &Selection, out: &mut [u8]) -> Result<()> {
        let path = |e: Error| e.with_path(&self.base.path);
        let count = self.slice_count(sel).map_err(path)?;
        let elem =
            usize::try_from(self.dtype.size()).map_err(|_| Error::limit("element too large"))?;
        if count.checked_mul(elem) != Some(out.len()) {
            return Err(path(Error::usage(format!(
                "output buffer of {} bytes for a selection of {count} elements of {elem} bytes",
                out.len()
            ))));
        }
        if count > 0 {
            self.read_slice_into(sel, Conv::identity(elem), out)
                .map_err(path)?;
        }
        Ok(())
    }

    fn read_slice_inner(&self, sel: &Selection) -> Result<Vec<u8>> {
        let count = self.slice_count(sel)?;
        let elem =
            usize::try_from(self.dtype.size()).map_err(|_| Error::limit("element too large"))?;
        // Within `max_read_bytes` (`slice_count`).
        let mut out = crate::io::zeroed_buffer(count.saturating_mul(elem))?;
        if count > 0 {
            self.read_slice_into(sel, Conv::identity(elem), &mut out)?;
        }
        Ok(out)
    }

    /// The checks of a selection read, made before its output is
    /// allocated: the number of elements selected.
    fn slice_count(&self, sel: &Selection) -> Result<usize> {
        sel.check(&self.space.dims)?;
        let ctx = self.base.file.inner.ctx;
        let elem = self.dtype.size();
        let count = sel
            .num_elements()
            .ok_or_else(|| Error::limit("selection size overflows"))?;
        let total = count
            .checked_mul(elem)
            .ok_or_else(|| Error::limit("selection size overflows"))?;
        if total > ctx.limits.max_read_bytes {
            return Err(Error::limit(format!(
                "selection of {total} bytes exceeds the read limit of {} bytes",
                ctx.limits.max_read_bytes
            )));
        }
        usize::try_from(count).map_err(|_| Error::limit("selection size overflows"))
    }

    /// Read the selection (checked by [`Dataset::slice_count`], not empty)
    /// into `out`, all zero bytes, of the selected elements converted by `conv`.
    fn read_slice_into(&self, sel: &Selection, conv: Conv, out: &mut [u8]) -> Result<()> {
        let shape = &self.space.dims;
        let file = &self.base.file;
        let ctx = file.inner.ctx;
        let elem = conv.src_size();
        match &self.layout {
            Layout::Contiguous { addr, size } if self.external.is_none() && !addr.is_undef() => {
                // Read only the rows (along dimension 0) that the selection spans.
                let (lo, hi) = sel.bounds(shape.len());
                let row_elems: u64 = shape.iter().skip(1).product();
                let row_bytes = row_elems.saturating_mul(elem as u64);
                let (r0, r1) = match (lo.first(), hi.first()) {
                    (Some(&a), Some(&b)) => (a, b),
                    _ => (0, 1),
                };
                let start = r0.saturating_mul(row_bytes);
                let len = r1
                    .saturating_sub(r0)
                    .saturating_mul(row_bytes)
                    .max(elem as u64);
                if start.saturating_add(len) > *size {
                    return Err(Error::corrupt(
                        "contiguous storage smaller than the dataspace",
                        addr.0,
                    ));
                }
                let at = Addr(
                    addr.0
                        .checked_add(start)
                        .ok_or_else(|| Error::corrupt("address overflow", addr.0))?,
                );
                let mut origin = vec![0u64; shape.len()];
                let mut region = shape.clone();
                if let (Some(o), Some(r)) = (origin.first_mut(), region.first_mut()) {
                    *o = r0;
                    *r = r1.saturating_sub(r0);
                }
                match file.inner.st.slice(at, len) {
                    Some(bytes) => sel.convert_from_region(conv, bytes, &origin, &region, out),
                    None => {
                        let bytes = file.inner.st.read(at, len)?;
                        sel.convert_from_region(conv, &bytes, &origin, &region, out)
                    }
                }
            }
            Layout::Chunked(cl) => {
                let fill = self.unwritten_bytes();
                let req = self.chunked_request(cl, elem, &fill);
                #[cfg(feature = "std")]
                let cache = Some(&*self.cache);
                #[cfg(not(feature = "std"))]
                let cache = None;
                crate::read::chunks::read_selection_into(
                    &file.inner.st,
                    ctx,
                    &req,
                    sel,
                    conv,
                    out,
                    cache,
                )
            }
            _ => {
                let all = self.read_raw_inner()?;
                sel.convert_from_region(conv, &all, &vec![0u64; shape.len()], shape, out)
            }
        }
    }

    /// The one element of a scalar (or one-element) dataset as a native
    /// number of type `T`, converted as [`Dataset::read`] does (h5py's
    /// `ds[()]`).
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// w.root().create_dataset("answer").shape(&[]).write(&[42i32])?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// assert_eq!(file.dataset("answer")?.read_scalar::<f64>()?, 42.0);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `Usage` when the dataset does not hold exactly one element; as
    /// [`Dataset::read`].
    pub fn read_scalar<T: crate::data::convert::H5Native>(&self) -> Result<T> {
        one_element(self.len(), || self.read::<T>()).map_err(|e| e.with_path(&self.base.path))
    }

    /// The whole dataset decoded into values (row-major, flat).
    ///
    /// # Errors
    /// As [`Dataset::read_raw`], plus element decode errors.
    pub fn read_values(&self) -> Result<Vec<Value>> {
        let raw = self.read_raw()?;
        self.base
            .file
            .decode_values(&self.dtype, &raw, self.len())
            .map_err(|e| e.with_path(&self.base.path))
    }

    /// The variable-length strings of a selection (row-major, as
    /// [`Dataset::read_slice_raw`]) as one contiguous byte buffer and offsets,
    /// without a `String` or [`Value`] per element: the fast path for
    /// columnar readers. Bytes are as stored (what [`Dataset::read_values`]
    /// would put in `Value::Str`/`Value::RawStr`); null descriptors read as
    /// empty strings.
    ///
    /// # Errors
    /// `Usage` when the dataset is not of a variable-length string type; as
    /// [`Dataset::read_slice_raw`]; `Corrupt` for bad heap objects; `Limit` when
    /// the strings exceed the read limit.
    pub fn read_vlen_strings(&self, sel: &Selection) -> Result<crate::data::decode::VarBytes> {
        let raw = self.read_slice_raw(sel)?;
        let count = sel
            .num_elements()
            .ok_or_else(|| Error::limit("selection size overflows"))?;
        let file = &self.base.file;
        crate::data::decode::decode_vlen_strings(
            &self.dtype,
            &raw,
            count,
            file.inner.ctx,
            &file.heap(),
        )
        .map_err(|e| e.with_path(&self.base.path))
    }

    /// The whole dataset as native numbers of type `T`, converted from the
    /// file's integer or float type (range-checked).
    ///
    /// # Errors
    /// `Unrepresentable` when the file type or a value does not fit `T`.
    pub fn read<T: crate::data::convert::H5Native>(&self) -> Result<Vec<T>> {
        with_native!(T, |P| self.read_native::<P>().and_then(same_vec))
            .unwrap_or_else(|| self.read_converted())
    }

    /// [`Dataset::read`] into the output, with the raw reads' paths.
    fn read_native<P: Native>(&self) -> Result<Vec<P>> {
        let Some(conv) = Conv::plan::<P>(&self.dtype) else {
            return self.read_converted();
        };
        let (whole, size) = self.whole().map_err(|e| e.with_path(&self.base.path))?;
        match whole {
            Whole::Empty => return Ok(Vec::new()),
            Whole::Virtual | Whole::External(_) => return self.read_converted(),
            _ => {}
        }
        let mut out =
            zeroed_vec::<P>(size.count, true).map_err(|e| e.with_path(&self.base.path))?;
        match self.read_whole_into(whole, conv, bytes_mut(&mut out)) {
            Ok(()) => Ok(out),
            // A value that does not fit: the error names it.
            Err(e) if e.kind() == ErrorKind::Unrepresentable => {
                drop(out);
                self.read_converted()
            }
            Err(e) => Err(e.with_path(&self.base.path)),
        }
    }

    /// [`Dataset::read`] as the raw bytes converted by [`convert_slice`].
    fn read_converted<T: crate::data::convert::H5Native>(&self) -> Result<Vec<T>> {
        let raw = self.read_raw()?;
        convert_slice(&self.dtype, &raw).map_err(|e| e.with_path(&self.base.path))
    }

    /// A selection as native numbers of type `T` (row-major in the
    /// selection's [`Selection::out_shape`]), converted as [`Dataset::read`]
    /// does.
    ///
    /// # Errors
    /// As [`Dataset::read_slice_raw`]; `Unrepresentable` when the file type or
    /// a value does not fit `T`.
    pub fn read_slice<T: crate::data::convert::H5Native>(&self, sel: &Selection) -> Result<Vec<T>> {
        with_native!(T, |P| self.read_slice_native::<P>(sel).and_then(same_vec))
            .unwrap_or_else(|| self.read_slice_converted(sel))
    }

    /// The former name of [`Dataset::read_slice`].
    ///
    /// # Errors
    /// As [`Dataset::read_slice`].
    #[deprecated(note = "renamed `read_slice` (and the raw-bytes read `read_slice_raw`)")]
    pub fn read_slice_as<T: crate::data::convert::H5Native>(
        &self,
        sel: &Selection,
    ) -> Result<Vec<T>> {
        self.read_slice(sel)
    }

    fn read_slice_native<P: Native>(&self, sel: &Selection) -> Result<Vec<P>> {
        let Some(conv) = Conv::plan::<P>(&self.dtype) else {
            return self.read_slice_converted(sel);
        };
        let path = |e: Error| e.with_path(&self.base.path);
        let count = self.slice_count(sel).map_err(path)?;
        let mut out = zeroed_vec::<P>(count, false).map_err(path)?;
        if count == 0 {
            return Ok(out);
        }
        match self.read_slice_into(sel, conv, bytes_mut(&mut out)) {
            Ok(()) => Ok(out),
            Err(e) if e.kind() == ErrorKind::Unrepresentable => {
                drop(out);
                self.read_slice_converted(sel)
            }
            Err(e) => Err(path(e)),
        }
    }

    fn read_slice_converted<T: crate::data::convert::H5Native>(
        &self,
        sel: &Selection,
    ) -> Result<Vec<T>> {
        let raw = self.read_slice_raw(sel)?;
        convert_slice(&self.dtype, &raw).map_err(|e| e.with_path(&self.base.path))
    }

    /// As [`Dataset::read`], and floating-point data also converts to an
    /// integer `T` as numpy's `ds[...].astype(T)` does: truncated toward
    /// zero. [`Dataset::read`] refuses that conversion; this is the explicit
    /// opt-in. NaN, ±infinity and values outside `T`'s range, for which numpy's
    /// result is undefined (it warns "invalid value encountered in cast"), are
    /// an error naming the element.
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// w.root().create_dataset("x").write(&[2.7f64, -2.7, 0.5])?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// let ds = file.dataset("x")?;
    /// assert!(ds.read::<i32>().is_err());
    /// assert_eq!(ds.read_astype::<i32>()?, [2, -2, 0]);
    /// # Ok(())
    /// # }
    /// ```
    ///
    /// # Errors
    /// As [`Dataset::read`]; `Unrepresentable` for a value numpy leaves
    /// undefined.
    pub fn read_astype<T: crate::data::convert::H5Native>(&self) -> Result<Vec<T>> {
        if !self.float_to_int::<T>() {
            return self.read();
        }
        let raw = self.read_raw()?;
        self.cast(&raw)
    }

    /// [`Dataset::read_slice`] converting as [`Dataset::read_astype`].
    ///
    /// # Errors
    /// As [`Dataset::read_astype`].
    pub fn read_slice_astype<T: crate::data::convert::H5Native>(
        &self,
        sel: &Selection,
    ) -> Result<Vec<T>> {
        if !self.float_to_int::<T>() {
            return self.read_slice(sel);
        }
        let raw = self.read_slice_raw(sel)?;
        self.cast(&raw)
    }

    /// Whether a read as `T` converts floats to integers (`T` takes no float).
    fn float_to_int<T: crate::data::convert::H5Native>(&self) -> bool {
        matches!(self.dtype, Datatype::Float { .. }) && T::from_f64(0.0).is_none()
    }

    fn cast<T: crate::data::convert::H5Native>(&self, raw: &[u8]) -> Result<Vec<T>> {
        use crate::data::convert::{convert_slice_with, FloatToInt};
        convert_slice_with(&self.dtype, raw, FloatToInt::Truncate)
            .map_err(|e| e.with_path(&self.base.path))
    }
}

/// What a whole read reads (see [`Dataset::whole`]).
enum Whole<'a> {
    /// No elements.
    Empty,
    /// Read by `vds::read_virtual`.
    Virtual,
    /// Read by `Dataset::read_external`.
    External(&'a ExternalFiles),
    /// The bytes in the object header.
    Compact(&'a [u8]),
    /// The bytes at this address (checked to lie in the file).
    Contiguous(Addr),
    /// Contiguous storage never allocated: all fill.
    Unwritten,
    /// Chunks.
    Chunked(&'a crate::format::message::ChunkedLayout),
}

/// Elements and bytes (file layout) of a whole read.
#[derive(Clone, Copy)]
struct WholeSize {
    count: usize,
    bytes: usize,
}

/// `v` as `Vec<T>` when `P` is `T` (what `with_native!` picked).
fn same_vec<P: 'static, T: 'static>(v: Vec<P>) -> Result<Vec<T>> {
    crate::data::native::same_type(v)
        .ok_or_else(|| Error::usage("typed read: the output type changed"))
}

/// Contiguous file elements at `addr` converted into `out` by `conv`: read
/// in blocks that stay in the cache and converted from there, on several
/// threads for large reads (std), each converting its own part of `out`.
fn read_converted_at(st: &Storage, addr: Addr, conv: Conv, out: &mut [u8]) -> Result<()> {
    /// File bytes per read: at least `io`'s `PREAD_MIN`, so that a
    /// memory-mapped file is read with `pread`, not page faults.
    const BLOCK: usize = 256 << 10;
    let (es, os) = (conv.src_size(), conv.dst_size());
    if es == 0 || os == 0 {
        return Ok(());
    }
    let per_block = (BLOCK / es).max(1);
    let n = out.len() / os;
    // Convert the `dst` output elements from element `first` on: each block
    // read where it goes and converted there (same sizes), or read into a
    // scratch buffer and converted from it.
    let part = |first: usize, dst: &mut [u8]| -> Result<()> {
        let mut scratch = if conv.same_size() {
            Vec::new()
        } else {
            crate::io::scratch_buffer(per_block.min(n).saturating_mul(es))?
        };
        let mut at = u64::try_from(first.saturating_mul(es))
            .ok()
            .and_then(|o| addr.get().checked_add(o))
            .ok_or_else(|| Error::corrupt("address overflows", addr.get()))?;
        for d in dst.chunks_mut(per_block.saturating_mul(os)) {
            let m = (d.len() / os).saturating_mul(es);
            if conv.same_size() {
                st.read_into(Addr(at), d)?;
                conv.run_in_place(d)?;
            } else {
                let s = scratch
                    .get_mut(..m)
                    .ok_or_else(|| Error::corrupt("conversion block", 0))?;
                st.read_into(Addr(at), s)?;
                conv.run(s, d)?;
            }
            at = at.saturating_add(m as u64);
        }
        crate::io::recycle(scratch);
        Ok(())
    };
    #[cfg(feature = "std")]
    {
        /// Output bytes per thread at least.
        const PART_MIN: usize = 8 << 20;
        let threads = crate::io::cores().min(out.len() / PART_MIN).min(16);
        if threads > 1 {
            let per = n.div_ceil(threads).saturating_mul(os);
            let part = &part;
            let results: Vec<Result<()>> = std::thread::scope(|s| {
                let mut parts = out.chunks_mut(per).enumerate();
                let first = parts.next();
                let handles: Vec<_> = parts
                    .map(|(k, d)| s.spawn(move || part(k * (per / os), d)))
                    .collect();
                let mut done = Vec::with_capacity(threads);
                if let Some((_, d)) = first {
                    done.push(part(0, d));
                }
                done.extend(handles.into_iter().map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::corrupt("a conversion thread panicked", 0)))
                }));
                done
            });
            return results.into_iter().collect();
        }
    }
    part(0, out)
}

/// An attribute, fully loaded (attributes are small).
///
/// ```
/// # fn main() -> h5fmt::Result<()> {
/// let mut w = h5fmt::FileWriter::in_memory();
/// let mut root = w.root();
/// root.set_attr("title", "run 1")?;
/// root.set_attr("gains", [0.5f64, 2.0])?;
/// let file = h5fmt::File::from_bytes(w.finish()?)?;
///
/// let root = file.root()?;
/// assert_eq!(root.attr("title")?.read_string()?, "run 1");
/// assert_eq!(root.attr("gains")?.read::<f64>()?, vec![0.5, 2.0]);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Attribute {
    file: File,
    owner: String,
    name: String,
    dtype: Datatype,
    space: Dataspace,
    data: Vec<u8>,
}

impl core::fmt::Debug for Attribute {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "Attribute({} of {})", self.name, self.owner)
    }
}

impl Attribute {
    /// The attribute name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The element datatype.
    pub fn dtype(&self) -> &Datatype {
        &self.dtype
    }
    /// The dataspace.
    pub fn space(&self) -> &Dataspace {
        &self.space
    }
    /// Current dimensions.
    pub fn shape(&self) -> &[u64] {
        &self.space.dims
    }
    /// Raw data bytes in file layout.
    pub fn raw(&self) -> &[u8] {
        &self.data
    }
    /// Number of elements.
    pub fn len(&self) -> u64 {
        self.space.num_elements().unwrap_or(0)
    }
    /// Whether the attribute has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// All values (row-major, flat).
    ///
    /// # Errors
    /// Decode errors, named with the owner path and attribute name.
    pub fn read_values(&self) -> Result<Vec<Value>> {
        let heap = self.file.heap();
        decode_elements(
            &self.dtype,
            &self.data,
            self.len(),
            self.file.inner.ctx,
            &heap,
        )
        .map_err(|e| e.with_path(&self.where_()))
    }
    /// Values as native numbers of type `T`.
    ///
    /// # Errors
    /// `Unrepresentable` when the type or a value does not fit `T`.
    pub fn read<T: crate::data::convert::H5Native>(&self) -> Result<Vec<T>> {
        let n = usize::try_from(self.len().saturating_mul(self.dtype.size())).unwrap_or(usize::MAX);
        let raw = self.data.get(..n).ok_or_else(|| {
            Error::new(
                ErrorKind::Truncated,
                "attribute data shorter than its dataspace",
            )
            .with_path(&self.where_())
        })?;
        crate::data::convert::convert_slice(&self.dtype, raw)
            .map_err(|e| e.with_path(&self.where_()))
    }
    /// The one value of a scalar (or one-element) attribute as a native
    /// number of type `T`, converted as [`Attribute::read`] does.
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// w.root().set_attr("version", 3u16)?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// let v: u64 = file.root()?.attr("version")?.read_scalar()?;
    /// assert_eq!(v, 3);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `Usage` when the attribute does not hold exactly one value; as
    /// [`Attribute::read`].
    pub fn read_scalar<T: crate::data::convert::H5Native>(&self) -> Result<T> {
        one_element(self.len(), || self.read::<T>()).map_err(|e| e.with_path(&self.where_()))
    }
    /// The attribute read into `T`s (row-major, flat), as
    /// [`Dataset::read_records`].
    ///
    /// # Errors
    /// As [`Dataset::read_records`], named with the owner path and
    /// attribute name.
    pub fn read_records<T: crate::data::record::H5Record>(&self) -> Result<Vec<T>> {
        let heap = self.file.heap();
        let cx = crate::data::record::RecordCx::new(self.file.inner.ctx, &heap);
        crate::data::record::read_records(&self.dtype, &self.data, self.len(), &cx)
            .map_err(|e| e.with_path(&self.where_()))
    }
    /// A string attribute as a Rust `String` (fixed or variable length, scalar or first element).
    ///
    /// # Errors
    /// `Unrepresentable` when the attribute is not a string.
    pub fn read_string(&self) -> Result<String> {
        match self.read_values()?.into_iter().next() {
            Some(Value::Str(s)) => Ok(s),
            Some(Value::RawStr(b)) => Ok(String::from_utf8_lossy(&b).to_string()),
            _ => Err(Error::unrepresentable("attribute is not a string").with_path(&self.where_())),
        }
    }
    fn where_(&self) -> String {
        format!("{} (attribute {:?})", self.owner, self.name)
    }
}

/// The value of a one-element read (`len` elements; `read` reads them).
fn one_element<T>(len: u64, read: impl FnOnce() -> Result<Vec<T>>) -> Result<T> {
    if len != 1 {
        return Err(Error::usage(format!(
            "read_scalar needs exactly one element, there are {len}"
        )));
    }
    read()?
        .into_iter()
        .next()
        .ok_or_else(|| Error::usage("read_scalar: no element"))
}

/// The [`HeapResolver`] of a file: global heap objects (cached) and the
/// dataspaces of datasets named by region references.
pub struct FileHeap {
    file: File,
    heap: GlobalHeap,
}

impl HeapResolver for FileHeap {
    fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>> {
        self.heap.global_heap_object(collection, index)
    }

    fn with_global_heap_prefix(
        &self,
        collection: Addr,
        index: u32,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        self.heap.with_global_heap_prefix(collection, index, len, f)
    }

    fn with_global_heap_prefixes(
        &self,
        collection: Addr,
        objects: &[(u32, usize)],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        self.heap.with_global_heap_prefixes(collection, objects, f)
    }

    fn dataset_dims(&self, obj: Addr) -> Result<Vec<u64>> {
        let h = read_object_header(&self.file.inner.st, obj, self.file.inner.ctx)?;
        let m = h
            .find(kind::DATASPACE)
            .ok_or_else(|| Error::corrupt("referenced object has no dataspace", obj.0))?;
        let body = self.file.message_body(m, 0)?;
        Ok(Dataspace::decode(
            &mut crate::codec::Cursor::new(&body, m.offset),
            self.file.inner.ctx,
        )?
        .dims)
    }
}
