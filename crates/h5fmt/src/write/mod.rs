//! Writing new HDF5 files that libhdf5 reads back identically.
//!
//! The writer keeps the object tree (groups, links, attributes, dataset
//! headers) in memory and streams raw data as it is produced: dataset data,
//! chunks and chunk indexes go to the end of the file when a dataset is
//! created. [`FileWriter::close`] / [`FileWriter::finish`] then plan the
//! metadata (pass 1: sizes and addresses, appended at the end of the file),
//! encode it with the same `format/` structures the reader decodes (pass 2),
//! and write the superblock last with the final end-of-file address.
//!
//! Every structure is encoded by its `format/` module (`encode` beside
//! `decode`); this module only decides what to write and where.
//!
//! Groups with more than 8 links and objects with more than 8 attributes (or
//! one above 64 KiB) use dense storage in [`Format::V18`] and
//! [`Format::Latest`] (`dense.rs`: a fractal heap of any size and a v2
//! B-tree name index of as many levels as needed; a group whose link
//! messages would not fit a heap stays compact, which libhdf5 reads). Object references are written through
//! [`FileWriter::object_addr`], which fixes a header address early (a stub
//! first chunk continued at close). Committed datatypes, null dataspaces
//! and pre-filtered chunks ([`DatasetBuilder::write_raw_chunks`]) are
//! written.
//!
//! Chunk indexes are chosen as libhdf5 2.0 does under [`Format::Latest`]
//! (single chunk, implicit, fixed array, extensible array, v2 B-tree).
//! Editing existing files is [`crate::FileEditor`] (`edit/`);
//! [`FileWriter::persist_free_space`] creates files whose freed space
//! libhdf5 and the editor record in the file.
//!
//! Virtual datasets ([`DatasetBuilder::virtual_mappings`]) store their
//! mapping list as one global heap object named by a version 4 layout
//! message of class 3, whatever the format preset.
//!
//! Not yet written: creation-order indexes (creation order is tracked, not
//! indexed).

mod chunked;
mod dense;
mod dimscale;
#[cfg(feature = "std")]
pub mod edit;
pub mod sink;
pub mod value;

#[cfg(feature = "std")]
pub use sink::FileSink;
pub use sink::Sink;
pub use value::{compound_dtype, AttrValue, ElementData, H5Member, H5Type};

use crate::codec::Encoder;
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_GROUP};
use crate::format::datatype::Datatype;
use crate::format::global_heap;
use crate::format::local_heap::{build_data_segment, LocalHeapHeader};
use crate::format::message::attribute::MaybeShared;
use crate::format::message::shared::SharedMessage;
use crate::format::message::{
    kind, AttributeInfo, AttributeMessage, Dataspace, FillState, FillValue, Filter, FilterPipeline,
    GroupInfo, Layout, Link, LinkInfo, LinkTarget, Message, SpaceKind, SymbolTableMessage,
};
use crate::format::object_header::ObjectHeader;
use crate::format::superblock::Superblock;
use crate::format::symbol_table_node::{EntryCache, SymbolTableEntry, SymbolTableNode};
use crate::format::vds::{VdsBlock, VdsMapping};
use crate::{Addr, Ctx, Sizes};
use alloc::borrow::Cow;
use alloc::boxed::Box;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// Which generation of the file format to write.
///
/// The default is [`Format::V18`]: it is what libhdf5 2.0 writes by default
/// (library version bounds `v18`…`latest`), every reader built on libhdf5
/// since 1.8 (2008) reads it, and it has checksummed superblock and object
/// headers and link-message groups. [`Format::Earliest`] is for readers that
/// only implement the original format (pyfive, jsfive, old libhdf5);
/// [`Format::Latest`] adds superblock v3 and the layout-4 chunk indexes;
/// [`Format::V200`] is what libhdf5 2.0 writes under `libver='latest'`
/// (or `v200`): as `Latest`, with version 5 layout messages for filtered
/// chunked datasets, which only libhdf5 2.0 and later read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Format {
    /// Superblock v0, object header v1, symbol-table groups (v1 B-tree,
    /// local heap, `SNOD`s), layout v3 with v1 B-tree chunk indexes, datatype
    /// message version 1, attribute message version 1.
    Earliest,
    /// Superblock v2, object header v2, link-message groups with link info
    /// and group info, layout v3, datatype message version 3, attribute
    /// message version 3 (UTF-8 names flagged).
    #[default]
    V18,
    /// Superblock v3, object header v2, fill value message v3, filter
    /// pipeline v2, layout v4 with the chunk index libhdf5 2.0 picks:
    /// single chunk, fixed array, extensible array (one unlimited
    /// dimension) or v2 B-tree (several). libhdf5 1.10 and later read it.
    Latest,
    /// As [`Format::Latest`], with the layout message version 5 of HDF5 2.0
    /// for filtered chunked datasets (the chunk index stores filtered chunk
    /// sizes in "size of lengths" bytes), as libhdf5 2.0 writes them with
    /// library version bounds `v200` or `latest`. Needs libhdf5 ≥ 2.0.
    V200,
}

impl Format {
    fn superblock_version(self) -> u8 {
        match self {
            Format::Earliest => 0,
            Format::V18 => 2,
            Format::Latest | Format::V200 => 3,
        }
    }
    /// Layout version 4 chunk indexes, fill value v3, filter pipeline v2.
    pub(crate) fn layout4(self) -> bool {
        matches!(self, Format::Latest | Format::V200)
    }
    fn header_version(self) -> u8 {
        if self == Format::Earliest {
            1
        } else {
            2
        }
    }
    fn dtype_version(self) -> u8 {
        if self == Format::Earliest {
            1
        } else {
            3
        }
    }
    fn space_version(self) -> u8 {
        if self == Format::Earliest {
            1
        } else {
            2
        }
    }
    fn attr_version(self) -> u8 {
        if self == Format::Earliest {
            1
        } else {
            3
        }
    }
    fn fill_version(self) -> u8 {
        if self.layout4() {
            3
        } else {
            2
        }
    }
    fn pipeline_version(self) -> u8 {
        if self.layout4() {
            2
        } else {
            1
        }
    }
}

/// Group B-tree leaf K (a symbol table node holds 2K entries) and internal
/// K, libhdf5's defaults.
const GROUP_LEAF_K: u16 = 4;
const GROUP_INTERNAL_K: u16 = 16;
/// Chunk B-tree K (the default, which superblock v0 does not store).
const ISTORE_K: u16 = 32;

/// An object (group or dataset) of the file being written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ObjectId(usize);

impl ObjectId {
    /// The root group.
    pub const ROOT: ObjectId = ObjectId(0);
}

#[derive(Debug, Clone)]
enum LinkSpec {
    Hard(ObjectId),
    Soft(String),
    External { file: String, path: String },
}

#[derive(Debug)]
struct GroupNode {
    links: Vec<(String, LinkSpec)>,
    track_order: bool,
}

#[derive(Debug)]
struct DatasetNode {
    dtype: Datatype,
    /// The committed datatype object the datatype message points at.
    committed: Option<ObjectId>,
    space: Dataspace,
    layout: Layout,
    pipeline: Option<FilterPipeline>,
    fill: FillValue,
}

#[derive(Debug)]
enum NodeKind {
    Group(GroupNode),
    Dataset(DatasetNode),
    /// A committed (named) datatype.
    Datatype(Datatype),
}

#[derive(Debug)]
struct Node {
    kind: NodeKind,
    attrs: Vec<AttributeMessage>,
}

/// The global heap collection being filled.
#[derive(Debug)]
struct OpenCollection {
    addr: Addr,
    size: usize,
    objects: Vec<(u16, Vec<u8>)>,
}

/// Group creation options.
#[derive(Debug, Clone, Copy, Default)]
pub struct GroupOptions {
    /// Track and index link creation order, as h5py's `track_order=True`:
    /// the link info message has a maximum creation index, link messages
    /// carry their creation order, and dense storage gets a creation-order
    /// index (v2 B-tree of record type 6). Not available with
    /// [`Format::Earliest`].
    pub track_order: bool,
}

/// Writes a new HDF5 file.
///
/// Objects are created from [`FileWriter::root`] ([`GroupWriter`]); the
/// metadata and the superblock are written by [`FileWriter::close`] (files)
/// or [`FileWriter::finish`] (in memory). libhdf5 and h5py read the result.
///
/// ```
/// # fn main() -> h5fmt::Result<()> {
/// # let dir = std::env::temp_dir().join(format!("h5fmt-doc-writer-{}", std::process::id()));
/// # std::fs::create_dir_all(&dir).unwrap();
/// # let path = dir.join("out.h5");
/// let mut w = h5fmt::FileWriter::create(&path)?;
/// let mut root = w.root();
/// root.set_attr("created_by", "h5fmt")?;
/// let t: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
/// root.create_dataset("signal/t")
///     .chunks(&[256])
///     .shuffle()
///     .deflate(6)
///     .write(&t)?;
/// w.close()?; // errors surface here (a dropped writer finishes the file too)
///
/// let back = h5fmt::File::open(&path)?.dataset("signal/t")?.read::<f64>()?;
/// assert_eq!(back, t);
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # Ok(()) }
/// ```
#[must_use = "a FileWriter writes nothing until it is closed (or dropped)"]
pub struct FileWriter {
    sink: Box<dyn Sink>,
    format: Format,
    ctx: Ctx,
    eof: u64,
    nodes: Vec<Node>,
    heap: Option<OpenCollection>,
    /// Header addresses fixed before close (see [`FileWriter::object_addr`]).
    pins: Vec<Option<Addr>>,
    /// Persistent free-space tracking: the threshold of the File Space
    /// Info message the superblock extension gets.
    free_space: Option<u64>,
    /// Dimension-scale attributes, written at close.
    dims: dimscale::DimScales,
    /// Contiguous raw data of at least `.0` bytes starts at a multiple of
    /// `.1` (see [`FileWriter::set_alignment`]).
    alignment: (u64, u64),
    closed: bool,
}

/// A writer dropped without [`FileWriter::close`] or [`FileWriter::finish`]
/// still writes its metadata and superblock (as `std::io::BufWriter` flushes
/// on drop), so the file is readable; errors at that point cannot be
/// reported and are ignored.
impl Drop for FileWriter {
    fn drop(&mut self) {
        if !self.closed && self.write_metadata().is_ok() {
            let _ = self.sink.flush();
        }
    }
}

impl core::fmt::Debug for FileWriter {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FileWriter")
            .field("format", &self.format)
            .field("eof", &self.eof)
            .field("objects", &self.nodes.len())
            .finish()
    }
}

/// The dataspace message version: the preset's, but 2 for a null dataspace
/// (version 1 cannot describe one; libhdf5 upgrades it the same way).
fn space_version(format: Format, space: &Dataspace) -> u8 {
    if space.kind == SpaceKind::Null {
        2
    } else {
        format.space_version()
    }
}

/// Check the virtual selection of a mapping against the dataset's maximum
/// shape `limit` (`Dataspace::UNLIMITED` for unlimited dimensions).
fn check_virtual_selection(sel: &crate::format::selection::Selection, limit: &[u64]) -> Result<()> {
    use crate::format::selection::{Selection, UNLIMITED};
    if let Some(r) = sel.rank() {
        if r != limit.len() {
            return Err(Error::usage(alloc::format!(
                "selection of rank {r} in a dataset of rank {}",
                limit.len()
            )));
        }
    }
    let beyond = || Error::usage("selection beyond the maximum shape");
    if let Selection::Regular(dims) = sel {
        for (d, &m) in dims.iter().zip(limit) {
            let open = d.count == UNLIMITED || d.block == UNLIMITED;
            if open && m != Dataspace::UNLIMITED {
                return Err(Error::usage(
                    "selection unlimited in a dimension of limited maximum",
                ));
            }
            if d.stride == 0 || (d.count != UNLIMITED && d.block != UNLIMITED && d.count == 0) {
                return Err(Error::usage("hyperslab of stride or count 0"));
            }
            // The highest index of a limited dimension.
            if !open && m != Dataspace::UNLIMITED {
                let hi = d
                    .stride
                    .checked_mul(d.count.saturating_sub(1))
                    .and_then(|x| x.checked_add(d.start))
                    .and_then(|x| x.checked_add(d.block.saturating_sub(1)))
                    .ok_or_else(beyond)?;
                if d.block == 0 || hi >= m {
                    return Err(beyond());
                }
            }
        }
        return Ok(());
    }
    if let Some((_, hi)) = sel.bounds(None).unwrap_or(None) {
        if hi
            .iter()
            .zip(limit)
            .any(|(h, &m)| m != Dataspace::UNLIMITED && *h >= m)
        {
            return Err(beyond());
        }
    }
    Ok(())
}

/// The fill value message of a new dataset: written on allocation
/// (fill time 2), user-defined when `value` is given, else undefined or
/// the default.
fn fill_message(
    format: Format,
    alloc_time: u8,
    value: Option<Vec<u8>>,
    undefined: bool,
) -> FillValue {
    FillValue {
        version: format.fill_version(),
        alloc_time,
        fill_time: 2,
        state: if value.is_some() {
            FillState::User
        } else if undefined {
            FillState::Undefined
        } else {
            FillState::Default
        },
        value,
    }
}

/// The largest message body an object header holds (a 16-bit size, and
/// libhdf5 keeps v1 messages 8-aligned).
pub(crate) const MAX_HEADER_MESSAGE: usize = 0xfff0;

/// Check a link or attribute name: not empty, no '/', not ".".
fn check_name(name: &str, what: &str) -> Result<()> {
    if name.is_empty() || name == "." || name.contains('/') || name.contains('\0') {
        return Err(Error::usage(alloc::format!(
            "invalid {what} name {name:?}: empty, \".\", or containing '/' or NUL"
        )));
    }
    Ok(())
}

impl FileWriter {
    /// A writer into `sink` with `format`.
    pub fn with_sink(sink: Box<dyn Sink>, format: Format) -> Self {
        let sizes = Sizes::default();
        let eof = Superblock::encoded_len(format.superblock_version(), sizes) as u64;
        FileWriter {
            sink,
            format,
            ctx: Ctx {
                sizes,
                ..Ctx::default()
            },
            eof,
            nodes: alloc::vec![Node {
                kind: NodeKind::Group(GroupNode {
                    links: Vec::new(),
                    track_order: false,
                }),
                attrs: Vec::new(),
            }],
            heap: None,
            pins: Vec::new(),
            free_space: None,
            dims: dimscale::DimScales::default(),
            alignment: (1, 1),
            closed: false,
        }
    }

    /// Align the contiguous storage of datasets, as libhdf5's
    /// `H5Pset_alignment(fapl, threshold, alignment)` (h5py's
    /// `File(..., alignment_threshold=, alignment_interval=)`): the raw data
    /// of a contiguous dataset of at least `threshold` bytes starts at a file
    /// address that is a multiple of `alignment`, so a memory map of the file
    /// (mapped at a page boundary) holds it aligned for its element type.
    /// The padding before it stays unused. Metadata, chunks and compact data
    /// are not moved. The default `(1, 1)` aligns nothing; Daf's H5DF files
    /// use `(1, 8)`.
    ///
    /// # Errors
    /// `Usage` when `alignment` is zero.
    pub fn set_alignment(&mut self, threshold: u64, alignment: u64) -> Result<()> {
        if alignment == 0 {
            return Err(Error::usage("alignment must be at least 1"));
        }
        self.alignment = (threshold.max(1), alignment);
        Ok(())
    }

    /// Write the raw data of a contiguous dataset at the end of file, aligned
    /// as [`FileWriter::set_alignment`] asks.
    fn write_raw_data(&mut self, bytes: &[u8]) -> Result<Addr> {
        let (threshold, alignment) = self.alignment;
        if alignment > 1 && bytes.len() as u64 >= threshold {
            let rem = self.eof % alignment;
            if rem != 0 {
                self.eof = self.eof.saturating_add(alignment - rem);
            }
        }
        self.write_new(bytes)
    }

    /// Create the file with persistent free-space managers, as h5py's
    /// `fs_strategy='fsm', fs_persist=True` (libhdf5's
    /// `H5Pset_file_space_strategy(fcpl, H5F_FSPACE_STRATEGY_FSM_AGGR, 1,
    /// threshold)`): the superblock gets an extension holding a File Space
    /// Info message (version 1) naming no managers yet, as libhdf5 writes
    /// it for a file without free space. libhdf5 then records the space
    /// it frees in the file, and so does [`crate::FileEditor`]. The
    /// threshold (smallest section tracked) is 1 unless
    /// [`FileWriter::free_space_threshold`] sets another.
    ///
    /// # Errors
    /// `Usage` for [`Format::Earliest`] (superblock version 0 has no
    /// extension).
    pub fn persist_free_space(&mut self, on: bool) -> Result<()> {
        if !on {
            self.free_space = None;
            return Ok(());
        }
        if self.format == Format::Earliest {
            return Err(Error::usage(
                "persistent free space needs a superblock extension (not Format::Earliest)",
            ));
        }
        self.free_space.get_or_insert(1);
        Ok(())
    }

    /// The smallest free-space section the managers track (h5py's
    /// `fs_threshold`); turns persistent free space on.
    ///
    /// # Errors
    /// As [`FileWriter::persist_free_space`].
    pub fn free_space_threshold(&mut self, threshold: u64) -> Result<()> {
        self.persist_free_space(true)?;
        self.free_space = Some(threshold);
        Ok(())
    }

    /// The superblock extension holding the File Space Info message, at
    /// the end of the file (its "EOA before the managers" is the final
    /// end of file, as libhdf5 writes it).
    fn write_fs_extension(&mut self) -> Result<Addr> {
        let Some(threshold) = self.free_space else {
            return Ok(Addr::UNDEF);
        };
        let ctx = self.ctx;
        let info = |eoa: u64| -> Result<Vec<u8>> {
            let mut e = Encoder::new();
            crate::format::free_space::FileSpaceInfo {
                version: 1,
                strategy: 0,
                persist: true,
                threshold,
                page_size: 4096,
                page_end_threshold: 0,
                eoa_before_fsm: Addr(eoa),
                managers: alloc::vec![Addr::UNDEF; 12],
            }
            .encode(&mut e, ctx)?;
            Ok(e.into_vec())
        };
        let version = self.format.header_version();
        let header = |body: Vec<u8>| ObjectHeader {
            version,
            flags: 0,
            refcount: 1,
            // Flags as libhdf5's: do not share; mark if unknown.
            messages: alloc::vec![Message {
                kind: kind::FSINFO,
                flags: 0x14,
                creation_order: None,
                data: body,
                offset: 0,
            }],
            times: None,
            attr_phase_change: None,
        };
        let len = header(info(0)?).encoded_len() as u64;
        let a = self.alloc(len);
        let h = header(info(self.eof)?);
        let mut enc = Encoder::new();
        h.encode(&mut enc)?;
        self.sink.write_at(a.get(), enc.as_bytes())?;
        Ok(a)
    }

    /// A writer that builds the file in memory; [`FileWriter::finish`]
    /// returns its bytes.
    pub fn in_memory() -> Self {
        Self::in_memory_with(Format::default())
    }

    /// [`FileWriter::in_memory`] with a format preset.
    pub fn in_memory_with(format: Format) -> Self {
        Self::with_sink(Box::new(Vec::<u8>::new()), format)
    }

    /// Create (truncate) a file at `path` in the default format.
    ///
    /// # Errors
    /// `Io` when the file cannot be created.
    #[cfg(feature = "std")]
    pub fn create(path: impl AsRef<std::path::Path>) -> Result<Self> {
        Self::create_with(path, Format::default())
    }

    /// Create (truncate) a file at `path` in `format`.
    ///
    /// # Errors
    /// `Io` when the file cannot be created.
    #[cfg(feature = "std")]
    pub fn create_with(path: impl AsRef<std::path::Path>, format: Format) -> Result<Self> {
        let path = path.as_ref();
        let file = std::fs::File::create(path)
            .map_err(|e| Error::io(alloc::format!("create {}: {e}", path.display())))?;
        Ok(Self::with_sink(Box::new(FileSink::new(file)), format))
    }

    /// The format preset.
    pub fn format(&self) -> Format {
        self.format
    }

    /// The root group.
    pub fn root(&mut self) -> GroupWriter<'_> {
        GroupWriter {
            fw: self,
            id: ObjectId::ROOT,
        }
    }

    /// A group created earlier, by id.
    ///
    /// # Errors
    /// `Usage` when `id` is not a group of this file.
    pub fn group(&mut self, id: ObjectId) -> Result<GroupWriter<'_>> {
        match self.nodes.get(id.0) {
            Some(Node {
                kind: NodeKind::Group(_),
                ..
            }) => Ok(GroupWriter { fw: self, id }),
            _ => Err(Error::usage("not a group of this file")),
        }
    }

    /// The address the object header of `id` will have in the file, fixed
    /// now (for object references written before [`FileWriter::close`]).
    ///
    /// Headers are otherwise placed at close, once their size is known; a
    /// pinned object gets a small first header chunk here that holds only a
    /// continuation message, and its messages go to a continuation block at
    /// close. libhdf5 reads such headers like any other.
    ///
    /// # Errors
    /// `Usage` for an unknown object or a closed file.
    pub fn object_addr(&mut self, id: ObjectId) -> Result<Addr> {
        if self.closed {
            return Err(Error::usage("file already closed"));
        }
        if id.0 >= self.nodes.len() {
            return Err(Error::usage("not an object of this file"));
        }
        if self.pins.len() < self.nodes.len() {
            self.pins.resize(self.nodes.len(), None);
        }
        if let Some(Some(a)) = self.pins.get(id.0) {
            return Ok(*a);
        }
        let len = ObjectHeader::split_stub_len(self.format.header_version(), self.ctx.sizes);
        let a = self.alloc(len as u64);
        if let Some(slot) = self.pins.get_mut(id.0) {
            *slot = Some(a);
        }
        Ok(a)
    }

    /// Store `data` as one object of the global heap and return its heap id
    /// (collection address, object index): what variable-length descriptors
    /// (with a leading element count) and region references point at.
    ///
    /// # Errors
    /// `Usage` on a closed file; `Io`.
    pub fn put_global_heap_object(&mut self, data: &[u8]) -> Result<(Addr, u32)> {
        if self.closed {
            return Err(Error::usage("file already closed"));
        }
        let (a, i) = self.heap_put(data)?;
        Ok((a, u32::from(i)))
    }

    /// The datatype of a committed datatype object.
    fn committed_dtype(&self, id: ObjectId) -> Result<Datatype> {
        match self.nodes.get(id.0).map(|n| &n.kind) {
            Some(NodeKind::Datatype(t)) => Ok(t.clone()),
            _ => Err(Error::usage("not a committed datatype of this file")),
        }
    }

    fn alloc(&mut self, n: u64) -> Addr {
        let a = Addr(self.eof);
        self.eof = self.eof.saturating_add(n);
        a
    }

    fn write_new(&mut self, bytes: &[u8]) -> Result<Addr> {
        let a = self.alloc(bytes.len() as u64);
        self.sink.write_at(a.get(), bytes)?;
        Ok(a)
    }

    fn group_node(&mut self, id: ObjectId) -> Result<&mut GroupNode> {
        match self.nodes.get_mut(id.0).map(|n| &mut n.kind) {
            Some(NodeKind::Group(g)) => Ok(g),
            _ => Err(Error::usage("not a group of this file")),
        }
    }

    fn check_new_link(&mut self, parent: ObjectId, name: &str) -> Result<()> {
        check_name(name, "link")?;
        if self.closed {
            return Err(Error::usage("file already closed"));
        }
        let g = self.group_node(parent)?;
        if g.links.iter().any(|(n, _)| n == name) {
            return Err(Error::usage(alloc::format!("link {name:?} already exists")));
        }
        Ok(())
    }

    fn add_link(&mut self, parent: ObjectId, name: &str, link: LinkSpec) -> Result<()> {
        self.check_new_link(parent, name)?;
        self.group_node(parent)?
            .links
            .push((name.to_string(), link));
        Ok(())
    }

    /// A new object `name` in `parent`. A `name` with slashes is a path:
    /// its missing intermediate groups are created (h5py's
    /// `create_group("a/b/c")`), a leading `/` starts at the root.
    fn add_node(&mut self, parent: ObjectId, name: &str, kind: NodeKind) -> Result<ObjectId> {
        self.check_path(parent, name)?;
        let (parent, name) = self.intermediate_groups(parent, name)?;
        self.check_new_link(parent, name)?;
        let id = ObjectId(self.nodes.len());
        self.nodes.push(Node {
            kind,
            attrs: Vec::new(),
        });
        self.group_node(parent)?
            .links
            .push((name.to_string(), LinkSpec::Hard(id)));
        Ok(id)
    }

    /// Whether a new object can be made at `path` from `parent`, without
    /// changing anything: every intermediate component that exists is a
    /// group, the missing ones are valid names, and the last is a new valid
    /// link name.
    fn check_path(&mut self, parent: ObjectId, path: &str) -> Result<()> {
        match self.walk_path(parent, path, false)? {
            (Some(p), last) => self.check_new_link(p, last),
            (None, _) if self.closed => Err(Error::usage("file already closed")),
            (None, last) => check_name(last, "link"),
        }
    }

    /// The group that holds the last component of `path` (from `parent`)
    /// and that component, creating the groups on the way that do not exist.
    fn intermediate_groups<'p>(
        &mut self,
        parent: ObjectId,
        path: &'p str,
    ) -> Result<(ObjectId, &'p str)> {
        match self.walk_path(parent, path, true)? {
            (Some(p), last) => Ok((p, last)),
            (None, _) => Err(Error::usage(alloc::format!("{path:?}: no group"))),
        }
    }

    /// Follow the groups of `path` (from `parent`; a leading `/` starts at
    /// the root) up to its last component: the group that holds that
    /// component (`None` when one on the way does not exist and `create`
    /// is off; with `create` it is made) and the component.
    fn walk_path<'p>(
        &mut self,
        parent: ObjectId,
        path: &'p str,
        create: bool,
    ) -> Result<(Option<ObjectId>, &'p str)> {
        let (mut at, rel) = match path.strip_prefix('/') {
            Some(rest) => (Some(ObjectId::ROOT), rest),
            None => (Some(parent), path),
        };
        let (dirs, last) = rel.rsplit_once('/').unwrap_or(("", rel));
        for comp in dirs.split('/').filter(|c| !c.is_empty() && *c != ".") {
            check_name(comp, "group")?;
            let Some(p) = at else { continue };
            let link = self
                .group_node(p)?
                .links
                .iter()
                .find(|(n, _)| n == comp)
                .map(|(_, l)| match l {
                    LinkSpec::Hard(id) => Some(*id),
                    _ => None,
                });
            at = match link {
                None if create => Some(self.add_node(
                    p,
                    comp,
                    NodeKind::Group(GroupNode {
                        links: Vec::new(),
                        track_order: false,
                    }),
                )?),
                None => None,
                Some(Some(id))
                    if matches!(
                        self.nodes.get(id.0),
                        Some(Node {
                            kind: NodeKind::Group(_),
                            ..
                        })
                    ) =>
                {
                    Some(id)
                }
                Some(_) => {
                    return Err(Error::usage(alloc::format!(
                        "{comp:?} in {path:?} exists and is not a group"
                    )))
                }
            };
        }
        Ok((at, last))
    }

    /// Store variable-length elements in the global heap and return their
    /// in-file descriptors (length u32, collection address, object index).
    fn place_varlen(&mut self, dtype: &Datatype, elems: &[Vec<u8>]) -> Result<Vec<u8>> {
        let unit = match dtype {
            Datatype::VarLenString { .. } => 1,
            Datatype::VarLenSequence { base, .. } => base.size().max(1),
            _ => {
                return Err(Error::usage(
                    "variable-length data for a type that is not a vlen string or sequence",
                ))
            }
        };
        let sizes = self.ctx.sizes;
        let mut out = Encoder::with_capacity(elems.len() * 16);
        for e in elems {
            let n = e.len() as u64;
            if !n.is_multiple_of(unit) {
                return Err(Error::usage(
                    "vlen sequence bytes not a multiple of the element size",
                ));
            }
            let count =
                u32::try_from(n / unit).map_err(|_| Error::usage("vlen element too long"))?;
            out.put_u32(count);
            if e.is_empty() {
                out.put_addr(Addr(0), sizes);
                out.put_u32(0);
                continue;
            }
            let (addr, index) = self.heap_put(e)?;
            out.put_addr(addr, sizes);
            out.put_u32(u32::from(index));
        }
        Ok(out.into_vec())
    }

    fn heap_put(&mut self, data: &[u8]) -> Result<(Addr, u16)> {
        let sizes = self.ctx.sizes;
        let fits = |c: &OpenCollection| {
            let used = global_heap::header_len(sizes)
                + global_heap::objects_len(
                    sizes,
                    c.objects.iter().map(|(_, d)| d.len()).chain([data.len()]),
                );
            used <= c.size && c.objects.len() < usize::from(u16::MAX - 1)
        };
        if !self.heap.as_ref().is_some_and(fits) {
            self.flush_heap()?;
            let need = global_heap::header_len(sizes)
                + global_heap::objects_len(sizes, [data.len()])
                + global_heap::object_header_len(sizes);
            let size = need.max(global_heap::MIN_COLLECTION_SIZE).div_ceil(8) * 8;
            let addr = self.alloc(size as u64);
            self.heap = Some(OpenCollection {
                addr,
                size,
                objects: Vec::new(),
            });
        }
        let c = self
            .heap
            .as_mut()
            .ok_or_else(|| Error::usage("no heap collection"))?;
        #[allow(clippy::cast_possible_truncation)] // < u16::MAX - 1, checked in `fits`
        let index = c.objects.len() as u16 + 1;
        c.objects.push((index, data.to_vec()));
        Ok((c.addr, index))
    }

    fn flush_heap(&mut self) -> Result<()> {
        if let Some(c) = self.heap.take() {
            let mut enc = Encoder::with_capacity(c.size);
            let objs: Vec<(u16, &[u8])> =
                c.objects.iter().map(|(i, d)| (*i, d.as_slice())).collect();
            global_heap::encode_collection(&mut enc, self.ctx, c.size, &objs)?;
            self.sink.write_at(c.addr.get(), enc.as_bytes())?;
        }
        Ok(())
    }

    /// Element bytes of `value` in the file (vlen data placed in the heap).
    fn element_bytes(&mut self, dtype: &Datatype, n: u64, data: &ElementData) -> Result<Vec<u8>> {
        let expect = n
            .checked_mul(dtype.size())
            .ok_or_else(|| Error::usage("data size overflows"))?;
        match data {
            ElementData::Raw(b) => {
                if b.len() as u64 != expect {
                    return Err(Error::usage(alloc::format!(
                        "{} data bytes given, {n} elements of {} bytes expected",
                        b.len(),
                        dtype.size()
                    )));
                }
                if dtype.is_variable_length() {
                    return Err(Error::usage(
                        "raw bytes for a variable-length type: give the elements instead",
                    ));
                }
                Ok(b.clone())
            }
            ElementData::VarLen(v) => {
                if v.len() as u64 != n {
                    return Err(Error::usage(alloc::format!(
                        "{} elements given, {n} expected",
                        v.len()
                    )));
                }
                self.place_varlen(dtype, v)
            }
            ElementData::File(b) => {
                if b.len() as u64 != expect {
                    return Err(Error::usage(alloc::format!(
                        "{} data bytes given, {n} elements of {} bytes expected",
                        b.len(),
                        dtype.size()
                    )));
                }
                Ok(b.clone())
            }
        }
    }

    /// Set (create or replace) attribute `name` of object `id`.
    ///
    /// # Errors
    /// `Usage` for an invalid name, a wrong element count, or an attribute
    /// message above 64 KiB (dense attribute storage is not written);
    /// datatype encoding errors. The file is unchanged on error.
    pub fn set_attr(
        &mut self,
        id: ObjectId,
        name: &str,
        value: impl Into<AttrValue>,
    ) -> Result<()> {
        self.set_attr_in(id, name, value.into(), false)
    }

    /// Set (create or replace) attribute `name` of object `id` to
    /// `H5T_STD_REF` object references to `targets` (objects of this file,
    /// the attribute's own object included): a 1-D attribute of
    /// `targets.len()` elements, or a scalar when `scalar`. The targets'
    /// header addresses are fixed now ([`FileWriter::object_addr`]), so the
    /// references resolve in the finished file whatever is added later.
    ///
    /// ```
    /// # use h5fmt::FileWriter;
    /// let mut w = FileWriter::in_memory();
    /// let t = w.root().create_group("t")?.id();
    /// let x = w.group(t)?.create_dataset("x").write(&[1i32, 2, 3])?;
    /// w.set_attr_object_refs(t, "INDEX_COLUMNS", &[x], false)?;
    /// # let bytes = w.finish()?;
    /// # Ok::<(), h5fmt::Error>(())
    /// ```
    ///
    /// # Errors
    /// `Usage` for an unknown object, `scalar` with other than one target,
    /// or as [`FileWriter::set_attr`].
    pub fn set_attr_object_refs(
        &mut self,
        id: ObjectId,
        name: &str,
        targets: &[ObjectId],
        scalar: bool,
    ) -> Result<()> {
        if scalar && targets.len() != 1 {
            return Err(Error::usage(
                "a scalar reference attribute takes exactly one target",
            ));
        }
        if self.nodes.get(id.0).is_none() {
            return Err(Error::usage("not an object of this file"));
        }
        let mut addrs = Vec::with_capacity(targets.len());
        for t in targets {
            addrs.push(self.object_addr(*t)?);
        }
        let value = AttrValue::object_refs(&addrs, self.ctx.sizes.offsets, scalar)
            .ok_or_else(|| Error::usage("unsupported size of offsets for references"))?;
        self.set_attr_in(id, name, value, false)
    }

    /// Set (create or replace) attribute `name` of object `id` with a null
    /// dataspace (`H5S_NULL`: a datatype and no value).
    ///
    /// # Errors
    /// As [`FileWriter::set_attr`].
    pub fn set_attr_null(&mut self, id: ObjectId, name: &str, dtype: Datatype) -> Result<()> {
        let value = AttrValue {
            dtype,
            shape: Some(Vec::new()),
            data: ElementData::File(Vec::new()),
        };
        self.set_attr_in(id, name, value, true)
    }

    fn set_attr_in(
        &mut self,
        id: ObjectId,
        name: &str,
        value: AttrValue,
        null: bool,
    ) -> Result<()> {
        // Attribute names are not paths: libhdf5 accepts '/' and '.' in them.
        if name.is_empty() || name.contains('\0') {
            return Err(Error::usage(alloc::format!(
                "invalid attribute name {name:?}: empty or containing NUL"
            )));
        }
        if self.closed {
            return Err(Error::usage("file already closed"));
        }
        if self.nodes.get(id.0).is_none() {
            return Err(Error::usage("not an object of this file"));
        }
        let n = if null {
            0
        } else {
            value
                .num_elements()
                .ok_or_else(|| Error::usage("attribute shape overflows"))?
        };
        let space = match &value.shape {
            _ if null => Dataspace {
                kind: SpaceKind::Null,
                dims: Vec::new(),
                max_dims: None,
            },
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
        // Validate everything (sizes, encodability) before touching the heap.
        if let ElementData::Raw(b) = &value.data {
            if Some(b.len() as u64) != n.checked_mul(value.dtype.size()) {
                return Err(Error::usage(alloc::format!(
                    "attribute {name:?}: {} bytes for {n} elements of {} bytes",
                    b.len(),
                    value.dtype.size()
                )));
            }
        }
        let probe = AttributeMessage {
            name: name.to_string(),
            dtype: MaybeShared::Inline(value.dtype.clone()),
            space: MaybeShared::Inline(space.clone()),
            data: alloc::vec![0; usize::try_from(n.saturating_mul(value.dtype.size())).unwrap_or(usize::MAX)],
        };
        let mut enc = Encoder::new();
        probe.encode(&mut enc, self.ctx, self.format.attr_version())?;
        if enc.len() > MAX_HEADER_MESSAGE && self.format == Format::Earliest {
            return Err(Error::unsupported(
                "attribute above 64 KiB: needs dense attribute storage (Format::V18 or later)",
            ));
        }
        if self.format != Format::Earliest && !dense::fits_dense(enc.len()) {
            return Err(Error::unsupported("an attribute message of 4 GiB or more"));
        }
        let data = self.element_bytes(&value.dtype, n, &value.data)?;
        let msg = AttributeMessage { data, ..probe };
        let node = self
            .nodes
            .get_mut(id.0)
            .ok_or_else(|| Error::usage("not an object of this file"))?;
        if let Some(slot) = node.attrs.iter_mut().find(|a| a.name == name) {
            *slot = msg;
        } else {
            node.attrs.push(msg);
        }
        Ok(())
    }

    /// Write all metadata and the superblock, flush, and return the bytes of
    /// an in-memory file (an empty vector for files on disk).
    ///
    /// # Errors
    /// `Io`; encoding errors.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.write_metadata()?;
        self.sink.flush()?;
        // `Drop` finds the writer closed and does nothing more.
        let sink = core::mem::replace(&mut self.sink, Box::new(Vec::<u8>::new()));
        Ok(sink.into_bytes().unwrap_or_default())
    }

    /// Write all metadata and the superblock and flush (fsync for files).
    ///
    /// A writer dropped without `close` finishes the file too, but can only
    /// ignore the errors; call `close` to see them.
    ///
    /// # Errors
    /// `Io`; encoding errors.
    pub fn close(self) -> Result<()> {
        self.finish().map(|_| ())
    }

    fn refcounts(&self) -> Vec<u32> {
        let mut rc = alloc::vec![0u32; self.nodes.len()];
        if let Some(r) = rc.first_mut() {
            *r = 1;
        }
        for n in &self.nodes {
            if let NodeKind::Group(g) = &n.kind {
                for (_, l) in &g.links {
                    if let LinkSpec::Hard(t) = l {
                        if let Some(c) = rc.get_mut(t.0) {
                            *c = c.saturating_add(1);
                        }
                    }
                }
            }
            // libhdf5 counts each dataset using a committed datatype as a
            // link to it.
            if let NodeKind::Dataset(DatasetNode {
                committed: Some(t), ..
            }) = &n.kind
            {
                if let Some(c) = rc.get_mut(t.0) {
                    *c = c.saturating_add(1);
                }
            }
        }
        rc
    }

    fn write_metadata(&mut self) -> Result<()> {
        if self.closed {
            return Err(Error::usage("file already closed"));
        }
        self.write_dimension_scales()?;
        self.closed = true;
        self.flush_heap()?;
        let rc = self.refcounts();
        // Pass 1: sizes and addresses. Header sizes do not depend on the
        // addresses they contain (fixed width), so placeholder plans suffice.
        let mut plans: Vec<Plan> = self.nodes.iter().map(|_| Plan::default()).collect();
        for i in 0..self.nodes.len() {
            let Some(node) = self.nodes.get(i) else {
                continue;
            };
            if !self.attrs_dense(node)? {
                continue;
            }
            let mut msgs = Vec::with_capacity(node.attrs.len());
            for a in &node.attrs {
                let mut e = Encoder::new();
                a.encode(&mut e, self.ctx, self.format.attr_version())?;
                msgs.push((a.name.clone(), e.into_vec()));
            }
            let refs: Vec<(&str, Vec<u8>)> =
                msgs.iter().map(|(n, m)| (n.as_str(), m.clone())).collect();
            let d = dense::write_attrs(self, &refs)?;
            if let Some(p) = plans.get_mut(i) {
                p.dense_attrs = Some(d);
            }
        }
        for i in 0..self.nodes.len() {
            if let Some(sym) = self.symbol_table_layout(i)? {
                let p = plans.get_mut(i).ok_or_else(|| Error::usage("plan"))?;
                p.heap_addr = Addr(self.eof);
                self.eof += LocalHeapHeader::encoded_len(self.ctx.sizes) as u64;
                p.heap_data_addr = self.alloc(sym.segment.len() as u64);
                let snod_len = SymbolTableNode::encoded_len(self.ctx.sizes, GROUP_LEAF_K) as u64;
                p.snods = (0..sym.snods.len()).map(|_| Addr(0)).collect();
                for a in p.snods.iter_mut() {
                    *a = Addr(self.eof);
                    self.eof += snod_len;
                }
                p.sym = Some(sym);
            }
        }
        for i in 0..self.nodes.len() {
            // Group B-trees: their node addresses depend on the SNOD addresses.
            if let Some(p) = plans.get_mut(i) {
                if let Some(sym) = &p.sym {
                    let leaves: Vec<(Key, Addr)> = sym
                        .snods
                        .iter()
                        .zip(&p.snods)
                        .map(|(s, a)| {
                            (
                                Key::Group {
                                    heap_offset: s.left_key,
                                },
                                *a,
                            )
                        })
                        .collect();
                    let final_key = Key::Group {
                        heap_offset: sym.snods.last().map_or(0, |s| s.right_key),
                    };
                    let node_len = BTreeV1Node::encoded_len(
                        NODE_TYPE_GROUP,
                        self.ctx.sizes,
                        0,
                        GROUP_INTERNAL_K,
                    )? as u64;
                    let mut eof = self.eof;
                    let (root, nodes) = chunked::build_btree(
                        NODE_TYPE_GROUP,
                        leaves,
                        final_key,
                        2 * usize::from(GROUP_INTERNAL_K),
                        &mut || {
                            let a = Addr(eof);
                            eof += node_len;
                            a
                        },
                    );
                    self.eof = eof;
                    p.btree = root;
                    p.btree_nodes = nodes;
                }
            }
        }
        for i in 0..self.nodes.len() {
            let h = self.header(i, &plans, &rc)?;
            let (a, block) = match self.pins.get(i).copied().flatten() {
                Some(pin) => (pin, Some(self.alloc(h.split_block_len() as u64))),
                None => (self.alloc(h.encoded_len() as u64), None),
            };
            if let Some(p) = plans.get_mut(i) {
                p.header = a;
                p.block = block;
            }
        }
        // Dense link storage: its link messages hold the header addresses.
        for i in 0..self.nodes.len() {
            let Some(Node {
                kind: NodeKind::Group(g),
                ..
            }) = self.nodes.get(i)
            else {
                continue;
            };
            if !self.links_dense(g)? {
                continue;
            }
            let mut msgs = Vec::with_capacity(g.links.len());
            for (order, (name, l)) in g.links.iter().enumerate() {
                msgs.push((name.clone(), self.link_message(g, order, name, l, &plans)?));
            }
            let refs: Vec<(&str, Vec<u8>, u64)> = msgs
                .iter()
                .enumerate()
                .map(|(o, (n, m))| (n.as_str(), m.clone(), o as u64))
                .collect();
            // Tracked order is also indexed, as h5py's `track_order=True`
            // asks of libhdf5 (H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED).
            let d = dense::write_links(self, &refs, g.track_order)?;
            if let Some(p) = plans.get_mut(i) {
                p.dense_links = Some(d);
            }
        }
        // Pass 2: encode and write.
        for i in 0..self.nodes.len() {
            let p = plans.get(i).ok_or_else(|| Error::usage("plan"))?;
            let h = self.header(i, &plans, &rc)?;
            if let Some(block) = p.block {
                let (stub, blk) = h.encode_split(block, self.ctx.sizes)?;
                self.sink.write_at(p.header.get(), &stub)?;
                self.sink.write_at(block.get(), &blk)?;
            } else {
                let mut enc = Encoder::new();
                h.encode(&mut enc)?;
                self.sink.write_at(p.header.get(), enc.as_bytes())?;
            }
            if let Some(sym) = &p.sym {
                let ctx = self.ctx;
                let mut enc = Encoder::new();
                LocalHeapHeader {
                    data_size: sym.segment.len() as u64,
                    free_list: Some(sym.free_offset),
                    data_addr: p.heap_data_addr,
                }
                .encode(&mut enc, ctx);
                self.sink.write_at(p.heap_addr.get(), enc.as_bytes())?;
                self.sink.write_at(p.heap_data_addr.get(), &sym.segment)?;
                for (s, a) in sym.snods.iter().zip(&p.snods) {
                    let entries = s
                        .entries
                        .iter()
                        .map(|e| self.symbol_entry(e, &plans))
                        .collect::<Result<Vec<_>>>()?;
                    let mut enc = Encoder::new();
                    SymbolTableNode { entries }.encode(&mut enc, ctx, GROUP_LEAF_K)?;
                    self.sink.write_at(a.get(), enc.as_bytes())?;
                }
                for (a, node) in &p.btree_nodes {
                    let mut enc = Encoder::new();
                    node.encode(&mut enc, ctx, 0, GROUP_INTERNAL_K)?;
                    self.sink.write_at(a.get(), enc.as_bytes())?;
                }
            }
        }
        let extension = self.write_fs_extension()?;
        // The superblock last, with the final end of file.
        let root = plans.first().ok_or_else(|| Error::usage("no root"))?;
        let version = self.format.superblock_version();
        let sb = Superblock {
            version,
            sizes: self.ctx.sizes,
            sig_offset: 0,
            base_address: 0,
            stored_base_address: 0,
            group_leaf_k: GROUP_LEAF_K,
            group_internal_k: GROUP_INTERNAL_K,
            indexed_storage_k: ISTORE_K,
            flags: 0,
            extension,
            eof: Addr(self.eof),
            driver_info: Addr::UNDEF,
            root: root.header,
            root_entry: (version < 2).then_some(SymbolTableEntry {
                name_offset: 0,
                header: root.header,
                cache: if root.sym.is_some() {
                    EntryCache::Group {
                        btree: root.btree,
                        heap: root.heap_addr,
                    }
                } else {
                    EntryCache::None
                },
            }),
        };
        let mut enc = Encoder::new();
        sb.encode(&mut enc)?;
        self.sink.write_at(0, enc.as_bytes())
    }

    fn symbol_entry(&self, e: &SymEntry, plans: &[Plan]) -> Result<SymbolTableEntry> {
        Ok(match &e.link {
            LinkSpec::Hard(t) => {
                let p = plans
                    .get(t.0)
                    .ok_or_else(|| Error::usage("bad link target"))?;
                SymbolTableEntry {
                    name_offset: e.name_offset,
                    header: p.header,
                    cache: if p.sym.is_some() {
                        EntryCache::Group {
                            btree: p.btree,
                            heap: p.heap_addr,
                        }
                    } else {
                        EntryCache::None
                    },
                }
            }
            LinkSpec::Soft(_) => SymbolTableEntry {
                name_offset: e.name_offset,
                header: Addr::UNDEF,
                cache: EntryCache::SoftLink {
                    offset: u32::try_from(e.value_offset)
                        .map_err(|_| Error::usage("local heap above 4 GiB"))?,
                },
            },
            LinkSpec::External { .. } => {
                return Err(Error::unsupported("external link in a symbol-table group"))
            }
        })
    }

    /// For an old-style group: the local heap segment and the symbol table
    /// nodes (entries sorted by name, 2K per node).
    fn symbol_table_layout(&self, i: usize) -> Result<Option<SymLayout>> {
        let Some(Node {
            kind: NodeKind::Group(g),
            ..
        }) = self.nodes.get(i)
        else {
            return Ok(None);
        };
        if !self.uses_symbol_table(g) {
            return Ok(None);
        }
        let mut links: Vec<&(String, LinkSpec)> = g.links.iter().collect();
        links.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
        let mut strings: Vec<&str> = Vec::new();
        for (name, l) in &links {
            strings.push(name);
            if let LinkSpec::Soft(v) = l {
                strings.push(v);
            }
        }
        let (segment, offsets) = build_data_segment(&strings, self.ctx.sizes);
        let free_offset = offsets
            .last()
            .zip(strings.last())
            .map_or(8, |(o, s)| o + ((s.len() as u64 + 1).div_ceil(8) * 8));
        let mut entries = Vec::with_capacity(links.len());
        let mut k = 0;
        for (_, l) in &links {
            let name_offset = offsets.get(k).copied().unwrap_or(0);
            k += 1;
            let value_offset = if matches!(l, LinkSpec::Soft(_)) {
                k += 1;
                offsets.get(k - 1).copied().unwrap_or(0)
            } else {
                0
            };
            entries.push(SymEntry {
                name_offset,
                value_offset,
                link: l.clone(),
            });
        }
        let cap = 2 * usize::from(GROUP_LEAF_K);
        let mut snods = Vec::new();
        let mut prev_right = 0u64;
        let mut iter = entries.into_iter().peekable();
        while iter.peek().is_some() {
            let chunk: Vec<SymEntry> = iter.by_ref().take(cap).collect();
            let right = chunk.last().map_or(0, |e| e.name_offset);
            snods.push(SnodPlan {
                left_key: prev_right,
                right_key: right,
                entries: chunk,
            });
            prev_right = right;
        }
        if snods.is_empty() {
            // libhdf5 always has one (empty) symbol table node.
            snods.push(SnodPlan {
                left_key: 0,
                right_key: 0,
                entries: Vec::new(),
            });
        }
        Ok(Some(SymLayout {
            segment,
            free_offset,
            snods,
        }))
    }

    /// Whether the attributes of `node` go to dense storage: beyond
    /// [`dense::MAX_COMPACT`] of them, or one above 64 KiB (not in
    /// [`Format::Earliest`]).
    fn attrs_dense(&self, node: &Node) -> Result<bool> {
        if self.format == Format::Earliest || node.attrs.is_empty() {
            return Ok(false);
        }
        if node.attrs.len() > dense::MAX_COMPACT {
            return Ok(true);
        }
        for a in &node.attrs {
            let mut e = Encoder::new();
            a.encode(&mut e, self.ctx, self.format.attr_version())?;
            if e.len() > MAX_HEADER_MESSAGE {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Whether the links of group `g` go to dense storage: a link-message
    /// group with more than [`dense::MAX_COMPACT`] links, or with a link
    /// message too large for an object header.
    fn links_dense(&self, g: &GroupNode) -> Result<bool> {
        if self.uses_symbol_table(g) {
            return Ok(false);
        }
        let mut too_big = false;
        for (order, (name, l)) in g.links.iter().enumerate() {
            let len = self.link_message(g, order, name, l, &[])?.len();
            if !dense::fits_dense(len) {
                return Ok(false);
            }
            // A message above 64 KiB fits no header: dense (a huge heap
            // object), as libhdf5 does, however few the links.
            too_big |= len > MAX_HEADER_MESSAGE;
        }
        Ok(too_big || g.links.len() > dense::MAX_COMPACT)
    }

    /// The encoded link message of link `order` of `g` (hard link targets
    /// from `plans`; placeholders of the same size when not planned yet).
    fn link_message(
        &self,
        g: &GroupNode,
        order: usize,
        name: &str,
        l: &LinkSpec,
        plans: &[Plan],
    ) -> Result<Vec<u8>> {
        let target = match l {
            LinkSpec::Hard(t) => LinkTarget::Hard(plans.get(t.0).map_or(Addr(0), |p| p.header)),
            LinkSpec::Soft(p) => LinkTarget::Soft(p.clone()),
            LinkSpec::External { file, path } => LinkTarget::External {
                file: file.clone(),
                path: path.clone(),
            },
        };
        let mut e = Encoder::new();
        Link {
            name: name.to_string(),
            creation_order: g.track_order.then_some(order as u64),
            target,
        }
        .encode(&mut e, self.ctx)?;
        Ok(e.into_vec())
    }

    /// Whether group `g` is an old-style (symbol table) group: in
    /// [`Format::Earliest`], unless it holds an external link, which only a
    /// link message can store (libhdf5 converts such a group the same way).
    fn uses_symbol_table(&self, g: &GroupNode) -> bool {
        self.format == Format::Earliest
            && !g
                .links
                .iter()
                .any(|(_, l)| matches!(l, LinkSpec::External { .. }))
    }

    fn header(&self, i: usize, plans: &[Plan], rc: &[u32]) -> Result<ObjectHeader> {
        let node = self.nodes.get(i).ok_or_else(|| Error::usage("node"))?;
        let plan = plans.get(i).ok_or_else(|| Error::usage("plan"))?;
        let ctx = self.ctx;
        let f = self.format;
        let mut messages = Vec::new();
        let mut push = |kind: u16, flags: u8, enc: Encoder| {
            messages.push(Message {
                kind,
                flags,
                creation_order: None,
                data: enc.into_vec(),
                offset: 0,
            });
        };
        let refcount = rc.get(i).copied().unwrap_or(1).max(1);
        match &node.kind {
            NodeKind::Group(g) => {
                if self.uses_symbol_table(g) {
                    let mut e = Encoder::new();
                    SymbolTableMessage {
                        btree: plan.btree,
                        heap: plan.heap_addr,
                    }
                    .encode(&mut e, ctx);
                    push(kind::SYMBOL_TABLE, 0, e);
                } else {
                    let mut e = Encoder::new();
                    let dense = self.links_dense(g)?;
                    // Placeholder addresses (same size) until the dense
                    // storage is written.
                    let (heap, name_index, order_index) = match plan.dense_links {
                        Some(d) => d,
                        None if dense => (Addr(0), Addr(0), Addr(0)),
                        None => (Addr::UNDEF, Addr::UNDEF, Addr::UNDEF),
                    };
                    LinkInfo {
                        // libhdf5 stores the next creation order to assign.
                        max_creation_index: g.track_order.then_some(g.links.len() as u64),
                        heap,
                        name_index,
                        order_index,
                    }
                    .encode(&mut e, ctx, g.track_order);
                    push(kind::LINK_INFO, 0, e);
                    let mut e = Encoder::new();
                    GroupInfo::default().encode(&mut e, ctx);
                    push(kind::GROUP_INFO, 0, e);
                    if !dense {
                        for (order, (name, l)) in g.links.iter().enumerate() {
                            let mut e = Encoder::new();
                            e.put_bytes(&self.link_message(g, order, name, l, plans)?);
                            push(kind::LINK, 0, e);
                        }
                    }
                }
            }
            NodeKind::Datatype(t) => {
                let mut e = Encoder::new();
                t.encode(&mut e, ctx, f.dtype_version())?;
                push(kind::DATATYPE, 1, e);
            }
            NodeKind::Dataset(d) => {
                let mut e = Encoder::new();
                d.space.encode(&mut e, ctx, space_version(f, &d.space))?;
                push(kind::DATASPACE, 0, e);
                let mut e = Encoder::new();
                match d.committed {
                    Some(t) => {
                        let a = plans.get(t.0).map_or(Addr(0), |p| p.header);
                        SharedMessage::encode_committed(&mut e, ctx, f.dtype_version(), a);
                        push(kind::DATATYPE, 1 | 2, e);
                    }
                    None => {
                        d.dtype.encode(&mut e, ctx, f.dtype_version())?;
                        push(kind::DATATYPE, 1, e);
                    }
                }
                let mut e = Encoder::new();
                d.fill.encode(&mut e, ctx)?;
                push(kind::FILL_VALUE, 1, e);
                if let Some(pl) = &d.pipeline {
                    let mut e = Encoder::new();
                    pl.encode(&mut e, ctx, f.pipeline_version())?;
                    push(kind::FILTER_PIPELINE, 0, e);
                }
                let mut e = Encoder::new();
                d.layout.encode(&mut e, ctx)?;
                push(kind::LAYOUT, 0, e);
            }
        }
        if f != Format::Earliest {
            // libhdf5 counts the attributes of a v2 header through this
            // message (`H5O__attr_count_real`): without it, `H5Oget_info`
            // reports none, even though the messages are there.
            let (heap, name_index) = plan.dense_attrs.unwrap_or((Addr::UNDEF, Addr::UNDEF));
            let mut e = Encoder::new();
            AttributeInfo {
                max_creation_index: None,
                heap,
                name_index,
                order_index: Addr::UNDEF,
            }
            .encode(&mut e, ctx, false);
            push(kind::ATTRIBUTE_INFO, 0, e);
        }
        let dense_attrs = plan.dense_attrs.is_some();
        for a in node.attrs.iter().filter(|_| !dense_attrs) {
            let mut e = Encoder::new();
            a.encode(&mut e, ctx, f.attr_version())?;
            push(kind::ATTRIBUTE, 0, e);
        }
        if f != Format::Earliest && refcount > 1 {
            let mut e = Encoder::new();
            e.put_u8(0);
            e.put_u32(refcount);
            push(kind::REF_COUNT, 0, e);
        }
        Ok(ObjectHeader {
            version: f.header_version(),
            flags: 0,
            refcount,
            messages,
            times: None,
            attr_phase_change: None,
        })
    }
}

#[derive(Debug, Clone)]
struct SymEntry {
    name_offset: u64,
    value_offset: u64,
    link: LinkSpec,
}

#[derive(Debug)]
struct SnodPlan {
    left_key: u64,
    right_key: u64,
    entries: Vec<SymEntry>,
}

#[derive(Debug)]
struct SymLayout {
    segment: Vec<u8>,
    free_offset: u64,
    snods: Vec<SnodPlan>,
}

#[derive(Debug)]
struct Plan {
    header: Addr,
    /// Dense attribute storage: (fractal heap, name index).
    dense_attrs: Option<(Addr, Addr)>,
    /// Dense link storage: (fractal heap, name index).
    dense_links: Option<(Addr, Addr, Addr)>,
    /// The continuation block of a pinned header.
    block: Option<Addr>,
    heap_addr: Addr,
    heap_data_addr: Addr,
    btree: Addr,
    snods: Vec<Addr>,
    btree_nodes: Vec<(Addr, BTreeV1Node)>,
    sym: Option<SymLayout>,
}

impl Default for Plan {
    fn default() -> Self {
        Plan {
            header: Addr(0),
            dense_attrs: None,
            dense_links: None,
            block: None,
            heap_addr: Addr::UNDEF,
            heap_data_addr: Addr::UNDEF,
            btree: Addr::UNDEF,
            snods: Vec::new(),
            btree_nodes: Vec::new(),
            sym: None,
        }
    }
}

/// A group of the file being written.
///
/// ```
/// # fn main() -> h5fmt::Result<()> {
/// let mut w = h5fmt::FileWriter::in_memory();
/// let mut root = w.root();
/// let mut run = root.create_group("runs/2026")?; // creates "runs" too
/// run.set_attr("operator", "ada")?;
/// run.create_dataset("counts").shape(&[2, 2]).write(&[1u32, 2, 3, 4])?;
/// run.link_soft("latest", "/runs/2026/counts")?;
/// let file = h5fmt::File::from_bytes(w.finish()?)?;
/// assert_eq!(file.dataset("runs/2026/latest")?.read::<u32>()?, vec![1, 2, 3, 4]);
/// # Ok(()) }
/// ```
pub struct GroupWriter<'a> {
    fw: &'a mut FileWriter,
    id: ObjectId,
}

impl core::fmt::Debug for GroupWriter<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("GroupWriter").field("id", &self.id).finish()
    }
}

impl<'a> GroupWriter<'a> {
    /// This group's id (for hard links to it).
    pub fn id(&self) -> ObjectId {
        self.id
    }

    /// Create a child group.
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name.
    pub fn create_group(&mut self, name: &str) -> Result<GroupWriter<'_>> {
        self.create_group_with(name, GroupOptions::default())
    }

    /// Create a child group with options.
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name; `Unsupported` for creation
    /// order tracking in [`Format::Earliest`].
    pub fn create_group_with(&mut self, name: &str, opts: GroupOptions) -> Result<GroupWriter<'_>> {
        if opts.track_order && self.fw.format == Format::Earliest {
            return Err(Error::unsupported(
                "link creation order needs link messages (Format::V18 or later)",
            ));
        }
        let id = self.fw.add_node(
            self.id,
            name,
            NodeKind::Group(GroupNode {
                links: Vec::new(),
                track_order: opts.track_order,
            }),
        )?;
        Ok(GroupWriter { fw: self.fw, id })
    }

    /// Add a hard link `name` to an existing object.
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name or an unknown target.
    pub fn link_hard(&mut self, name: &str, target: ObjectId) -> Result<()> {
        if target.0 >= self.fw.nodes.len() {
            return Err(Error::usage("hard link to an unknown object"));
        }
        self.fw.add_link(self.id, name, LinkSpec::Hard(target))
    }

    /// Add a soft link `name` → `path`.
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name or an empty path.
    pub fn link_soft(&mut self, name: &str, path: &str) -> Result<()> {
        if path.is_empty() {
            return Err(Error::usage("empty soft link path"));
        }
        self.fw
            .add_link(self.id, name, LinkSpec::Soft(path.to_string()))
    }

    /// Add an external link `name` → `path` in `file`. In
    /// [`Format::Earliest`] the group then stores its links as link messages
    /// (as libhdf5 does), which needs a reader of HDF5 1.8 or later.
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name or an empty file or path.
    pub fn link_external(&mut self, name: &str, file: &str, path: &str) -> Result<()> {
        if file.is_empty() || path.is_empty() {
            return Err(Error::usage("empty external link file or path"));
        }
        self.fw.add_link(
            self.id,
            name,
            LinkSpec::External {
                file: file.to_string(),
                path: path.to_string(),
            },
        )
    }

    /// Track (or not) the creation order of this group's links (link info
    /// message with a maximum creation index; link messages carry their
    /// order).
    ///
    /// # Errors
    /// `Unsupported` in [`Format::Earliest`].
    pub fn set_track_order(&mut self, on: bool) -> Result<()> {
        if on && self.fw.format == Format::Earliest {
            return Err(Error::unsupported(
                "link creation order needs link messages (Format::V18 or later)",
            ));
        }
        self.fw.group_node(self.id)?.track_order = on;
        Ok(())
    }

    /// Commit `dtype` as a named datatype object `name` in this group;
    /// datasets can then use it ([`DatasetBuilder::committed_dtype`]).
    ///
    /// # Errors
    /// `Usage` for an invalid or existing name; datatype encoding errors.
    pub fn commit_datatype(&mut self, name: &str, dtype: Datatype) -> Result<ObjectId> {
        let mut probe = Encoder::new();
        dtype.encode(&mut probe, self.fw.ctx, self.fw.format.dtype_version())?;
        self.fw.add_node(self.id, name, NodeKind::Datatype(dtype))
    }

    /// Set an attribute of this group (see [`FileWriter::set_attr`]).
    ///
    /// # Errors
    /// As [`FileWriter::set_attr`].
    pub fn set_attr(&mut self, name: &str, value: impl Into<AttrValue>) -> Result<()> {
        self.fw.set_attr(self.id, name, value)
    }

    /// Start a dataset `name` in this group.
    pub fn create_dataset(&mut self, name: &str) -> DatasetBuilder<'_> {
        DatasetBuilder {
            fw: self.fw,
            parent: self.id,
            name: name.to_string(),
            dtype: None,
            shape: None,
            maxshape: None,
            chunks: None,
            deflate: None,
            shuffle: false,
            fletcher32: false,
            zstd: None,
            lz4: false,
            nbit: false,
            scaleoffset: None,
            early_alloc: false,
            fill: None,
            fill_in_file: false,
            raw_chunks: None,
            fill_undefined: false,
            compact: false,
            committed: None,
            pipeline: None,
            null_space: false,
            virtual_map: None,
        }
    }
}

/// The mapping list of a virtual dataset being built.
#[derive(Debug)]
enum VirtualSpec {
    /// Mappings, encoded at creation in the preset's block version.
    Mappings(Vec<VdsMapping>),
    /// An encoded block, decoded (validated) before anything is written.
    Encoded(Vec<u8>),
}

/// A chunk already run through the dataset's filter pipeline (for copying
/// chunks between files without decoding them).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawChunk {
    /// Element coordinates of the chunk's first element (multiples of the
    /// chunk dimensions).
    pub offsets: Vec<u64>,
    /// The filtered bytes, as stored.
    pub bytes: Vec<u8>,
    /// Filters not applied to this chunk: bit `i` set when filter `i` of
    /// the pipeline was skipped (as libhdf5 does for an optional filter
    /// that fails, e.g. LZF on incompressible data); 0 when every filter
    /// was applied.
    pub filter_mask: u32,
}

/// Builds a dataset; finished by one of the `write*` methods or [`DatasetBuilder::create`].
pub struct DatasetBuilder<'a> {
    fw: &'a mut FileWriter,
    parent: ObjectId,
    name: String,
    dtype: Option<Datatype>,
    shape: Option<Vec<u64>>,
    maxshape: Option<Vec<Option<u64>>>,
    chunks: Option<Vec<u64>>,
    deflate: Option<u8>,
    shuffle: bool,
    fletcher32: bool,
    zstd: Option<i32>,
    lz4: bool,
    nbit: bool,
    scaleoffset: Option<i32>,
    early_alloc: bool,
    fill: Option<Vec<u8>>,
    fill_in_file: bool,
    raw_chunks: Option<Vec<RawChunk>>,
    fill_undefined: bool,
    compact: bool,
    committed: Option<ObjectId>,
    pipeline: Option<FilterPipeline>,
    null_space: bool,
    virtual_map: Option<VirtualSpec>,
}

impl core::fmt::Debug for DatasetBuilder<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("DatasetBuilder")
            .field("name", &self.name)
            .finish()
    }
}

impl DatasetBuilder<'_> {
    /// The element datatype (taken from `T` by [`DatasetBuilder::write`]).
    pub fn dtype(mut self, dtype: Datatype) -> Self {
        self.dtype = Some(dtype);
        self
    }
    /// The shape (default: one dimension of the number of elements written).
    pub fn shape(mut self, shape: &[u64]) -> Self {
        self.shape = Some(shape.to_vec());
        self
    }
    /// Maximum shape; `None` for an unlimited dimension (needs chunks).
    pub fn maxshape(mut self, maxshape: &[Option<u64>]) -> Self {
        self.maxshape = Some(maxshape.to_vec());
        self
    }
    /// Chunk shape (makes the dataset chunked).
    pub fn chunks(mut self, chunks: &[u64]) -> Self {
        self.chunks = Some(chunks.to_vec());
        self
    }
    /// Deflate (gzip) at `level` 0–9 (needs chunks).
    pub fn deflate(mut self, level: u8) -> Self {
        self.deflate = Some(level.min(9));
        self
    }
    /// Shuffle filter before compression (needs chunks).
    pub fn shuffle(mut self) -> Self {
        self.shuffle = true;
        self
    }
    /// Fletcher-32 checksum of each chunk (needs chunks).
    pub fn fletcher32(mut self) -> Self {
        self.fletcher32 = true;
        self
    }
    /// Zstandard compression (registered filter 32015, as written by
    /// hdf5plugin's `Zstd(clevel)`) at `level` (needs chunks; readers need
    /// the zstd plugin). Without the `c-codecs` feature the pure-Rust
    /// encoder writes every level at its "Fastest" (about level 1).
    pub fn zstd(mut self, level: i32) -> Self {
        self.zstd = Some(level);
        self
    }
    /// LZ4 compression (registered filter 32004, the HDF5 LZ4 plugin's
    /// format with its default block size, as hdf5plugin's `LZ4()`; needs
    /// chunks; readers need the LZ4 plugin).
    pub fn lz4(mut self) -> Self {
        self.lz4 = true;
        self
    }
    /// The n-bit filter (5, as libhdf5's `H5Pset_nbit`; needs chunks): packs
    /// the significant bits (`precision` from `bit_offset`) of every
    /// integer and float, also inside arrays and compounds (other members
    /// are copied whole). Useful with a datatype of reduced precision (a
    /// [`Datatype::Integer`] or [`Datatype::Float`] whose `precision` is
    /// less than its size in bits); with full-precision types libhdf5's
    /// parameters say "no compression needed" and chunks are stored as
    /// they are. The filter's client data are computed as libhdf5 does
    /// from the datatype and the chunk shape.
    ///
    /// Note: libhdf5 2.0 may refuse to open a dataset of reduced precision
    /// ("unusually large # of unused bits", seen with 12 of 32 bits) unless
    /// the reader relaxes its integrity checks
    /// (`H5Pset_relax_file_integrity_checks`).
    ///
    /// Creation fails with `Usage` for a datatype nbit does not apply to
    /// (at the top level anything but an integer, float, array or
    /// compound; an array of variable-length elements), or together with
    /// [`DatasetBuilder::scaleoffset`].
    pub fn nbit(mut self) -> Self {
        self.nbit = true;
        self
    }
    /// The scale-offset filter (6, as h5py's `scaleoffset=factor`; needs
    /// chunks): for an integer type (1, 2, 4 or 8 bytes) `factor` is the
    /// number of bits kept per value (`H5Z_SO_INT`; 0 lets the filter
    /// compute the minimum per chunk: lossless), for an f32/f64 the number
    /// of decimal digits kept (`H5Z_SO_FLOAT_DSCALE`; lossy: values are
    /// rounded to `10^-factor`). Values equal to the fill value (the
    /// default zero fill counts, as in libhdf5, unless
    /// [`DatasetBuilder::fill_undefined`]) are stored as a marker and read
    /// back as the fill value. The chunks written are libhdf5's byte for
    /// byte.
    ///
    /// Creation fails with `Usage` for other datatypes (strings,
    /// compounds...), integer bits outside `0..=8 * size`, or together with
    /// [`DatasetBuilder::nbit`].
    pub fn scaleoffset(mut self, factor: i32) -> Self {
        self.scaleoffset = Some(factor);
        self
    }
    /// Allocate (and write) every chunk when the dataset is created, as
    /// libhdf5's `H5D_ALLOC_TIME_EARLY` (chunked datasets only; chunks never
    /// written hold the fill value). With [`Format::Latest`], an unfiltered
    /// dataset without unlimited dimensions then gets libhdf5's implicit
    /// chunk index (the chunks stored back to back, no index structure).
    pub fn early_alloc(mut self) -> Self {
        self.early_alloc = true;
        self
    }
    /// A user-defined fill value: the raw bytes of one element.
    pub fn fill_value(mut self, element: &[u8]) -> Self {
        self.fill = Some(element.to_vec());
        self
    }
    /// A user-defined fill value as stored in this file: one element whose
    /// variable-length descriptors and references already point into the
    /// file being written (see [`ElementData::File`]).
    pub fn fill_value_in_file(mut self, element: &[u8]) -> Self {
        self.fill = Some(element.to_vec());
        self.fill_in_file = true;
        self
    }
    /// A user-defined fill value of a [`H5Type`].
    pub fn fill<T: H5Type>(self, v: T) -> Self {
        let b = value::to_bytes(&[v]);
        self.fill_value(&b)
    }
    /// No fill value defined (`H5Pset_fill_value` with a null value):
    /// unwritten elements read as zeros; the fill value message says
    /// "undefined".
    pub fn fill_undefined(mut self) -> Self {
        self.fill_undefined = true;
        self
    }
    /// Use the committed datatype `dtype` (from [`GroupWriter::commit_datatype`]):
    /// the dataset's datatype message points at it.
    pub fn committed_dtype(mut self, dtype: ObjectId) -> Self {
        self.committed = Some(dtype);
        self
    }
    /// A filter pipeline given whole (in place of `deflate`/`shuffle`/
    /// `fletcher32`; needs chunks). Creating the dataset fails with
    /// `Unsupported` when a filter cannot be encoded.
    pub fn filters(mut self, pipeline: FilterPipeline) -> Self {
        self.pipeline = Some(pipeline);
        self
    }
    /// A null dataspace (`H5S_NULL`: no elements, no data).
    pub fn null_space(mut self) -> Self {
        self.null_space = true;
        self
    }
    /// Store the data in the object header (compact layout, < 64 KiB).
    pub fn compact(mut self) -> Self {
        self.compact = true;
        self
    }

    /// Make the dataset virtual: its elements are read from the source
    /// datasets the `mappings` name (source file [`crate::format::vds::SAME_FILE`]
    /// for this file; relative file names are looked up by readers relative
    /// to this file's directory). Finish with [`DatasetBuilder::create`]; the
    /// shape and datatype are required, the maximum shape may be unlimited
    /// (no chunks needed). Unmapped elements read as the fill value.
    ///
    /// The mapping list is one global heap object (block version 1 under
    /// [`Format::V200`], else version 0), the layout message is version 4
    /// class 3 whatever the preset (virtual layouts need it: libhdf5 ≥ 1.10
    /// reads them), allocation time incremental and fill time "if set", as
    /// libhdf5 writes a virtual dataset.
    ///
    /// Creation fails with `Usage` with chunks, filters, a compact layout,
    /// early allocation, data, a null or scalar dataspace, a point
    /// selection (libhdf5 refuses them in virtual datasets), a virtual
    /// selection whose rank is not the dataset's, that reaches beyond the
    /// maximum shape, or unlimited in a dimension whose maximum is not.
    pub fn virtual_mappings(mut self, mappings: Vec<VdsMapping>) -> Self {
        self.virtual_map = Some(VirtualSpec::Mappings(mappings));
        self
    }

    /// As [`DatasetBuilder::virtual_mappings`], with the mapping list given
    /// as the bytes of an encoded Virtual Dataset Global Heap Block
    /// (`crate::format::vds`, version 0 or 1, checksum included). The bytes
    /// are decoded first and checked as the mappings are; they are written
    /// unchanged only when they decode (else creation fails with the decode
    /// error) and re-encoding is not needed.
    pub fn virtual_block(mut self, bytes: Vec<u8>) -> Self {
        self.virtual_map = Some(VirtualSpec::Encoded(bytes));
        self
    }

    /// Size of one element: of the datatype given, or of the committed one.
    fn element_size(&self) -> u64 {
        let committed = self.committed.and_then(|t| self.fw.committed_dtype(t).ok());
        committed
            .as_ref()
            .or(self.dtype.as_ref())
            .map_or(1, Datatype::size)
            .max(1)
    }

    /// Write typed values; the datatype is `T`'s unless set.
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`].
    pub fn write<T: H5Type>(mut self, values: &[T]) -> Result<ObjectId> {
        if self.dtype.is_none() {
            self.dtype = Some(T::dtype());
        }
        let n = values.len() as u64;
        match T::file_bytes(values) {
            Some(b) => self.finish_inner(n, None, Some(b)),
            None => self.finish(n, Some(ElementData::Raw(value::to_bytes(values)))),
        }
    }

    /// Write an `ndarray` array (any dimensionality and memory order): the
    /// dataset takes its shape unless one was set, and its elements in
    /// row-major order (h5py's `create_dataset(data=arr)`).
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// use h5fmt::ndarray::{array, Array2};
    /// let a: Array2<f32> = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// w.root().create_dataset("a").write_array(&a.t())?; // the transpose, 3 x 2
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// let back = file.dataset("a")?.read_array::<f32>()?;
    /// assert_eq!(back, a.t().into_dyn());
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// As [`DatasetBuilder::write`].
    #[cfg(feature = "ndarray")]
    pub fn write_array<T, S, D>(mut self, array: &ndarray::ArrayBase<S, D>) -> Result<ObjectId>
    where
        T: H5Type + Clone,
        S: ndarray::Data<Elem = T>,
        D: ndarray::Dimension,
    {
        if self.shape.is_none() {
            self.shape = Some(array.shape().iter().map(|&d| d as u64).collect());
        }
        let standard = array.as_standard_layout();
        match standard.as_slice() {
            Some(values) => self.write(values),
            None => {
                let values: Vec<T> = standard.iter().cloned().collect();
                self.write(&values)
            }
        }
    }

    /// Write variable-length UTF-8 strings (h5py's `str` dataset).
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`].
    pub fn write_strings(mut self, values: &[&str]) -> Result<ObjectId> {
        if self.dtype.is_none() {
            self.dtype = Some(Datatype::vlen_utf8());
        }
        let v = values.iter().map(|s| s.as_bytes().to_vec()).collect();
        self.finish(values.len() as u64, Some(ElementData::VarLen(v)))
    }

    /// Write variable-length elements (strings or sequences; see [`ElementData::VarLen`]).
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`].
    pub fn write_varlen(self, elems: Vec<Vec<u8>>) -> Result<ObjectId> {
        let n = elems.len() as u64;
        self.finish(n, Some(ElementData::VarLen(elems)))
    }

    /// Write raw element bytes in the file's layout (datatype required).
    ///
    /// # Errors
    /// `Usage` for a missing datatype, a data size that is not the shape's,
    /// a rank mismatch (shape, maxshape, chunks), a maxshape smaller than
    /// the shape, an unlimited dimension or a filter without chunks, an
    /// invalid or existing name. The file is unchanged on error.
    pub fn write_raw(self, bytes: &[u8]) -> Result<ObjectId> {
        let es = self.element_size();
        let n = bytes.len() as u64 / es;
        self.finish_inner(n, None, Some(bytes))
    }

    /// Write element bytes exactly as stored in this file (see
    /// [`ElementData::File`]; the datatype is required): for copying data
    /// whose variable-length descriptors and references were already
    /// placed in this file.
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`].
    pub fn write_file_bytes(self, bytes: Vec<u8>) -> Result<ObjectId> {
        let es = self.element_size();
        let n = bytes.len() as u64 / es;
        self.finish(n, Some(ElementData::File(bytes)))
    }

    /// Write chunks already filtered by the pipeline given with
    /// [`DatasetBuilder::filters`] (each with the mask of the filters it
    /// skipped, [`RawChunk::filter_mask`]), indexed by a v1 B-tree whatever
    /// the format. Chunks not given read as the fill value.
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`]; `Usage` without chunks, for chunk
    /// offsets that are not multiples of the chunk shape or outside the
    /// dataset's extent, or repeated, for a filter mask naming a filter the
    /// pipeline does not have.
    pub fn write_raw_chunks(mut self, chunks: Vec<RawChunk>) -> Result<ObjectId> {
        if self.shape.is_none() || self.chunks.is_none() {
            return Err(Error::usage(
                "a dataset written by chunks needs a shape and chunks",
            ));
        }
        self.raw_chunks = Some(chunks);
        self.finish(0, None)
    }

    /// Create the dataset without data (read back as the fill value).
    ///
    /// # Errors
    /// As [`DatasetBuilder::write_raw`]; the shape is required.
    pub fn create(self) -> Result<ObjectId> {
        if self.shape.is_none() && !self.null_space {
            return Err(Error::usage("a dataset without data needs a shape"));
        }
        self.finish(0, None)
    }

    fn finish(self, n_given: u64, data: Option<ElementData>) -> Result<ObjectId> {
        self.finish_inner(n_given, data, None)
    }

    /// As `finish`, with raw element bytes borrowed from the caller (`raw`,
    /// used when `data` is `None`) so that large data is not copied.
    fn finish_inner(
        self,
        n_given: u64,
        data: Option<ElementData>,
        raw: Option<&[u8]>,
    ) -> Result<ObjectId> {
        let fw = self.fw;
        let dtype = match self.committed {
            Some(t) => {
                let c = fw.committed_dtype(t)?;
                if self.dtype.as_ref().is_some_and(|d| *d != c) {
                    return Err(Error::usage(
                        "dataset datatype differs from its committed datatype",
                    ));
                }
                c
            }
            None => self
                .dtype
                .ok_or_else(|| Error::usage("dataset datatype not set"))?,
        };
        if self.null_space
            && (self.shape.is_some() || self.chunks.is_some() || self.maxshape.is_some())
        {
            return Err(Error::usage(
                "a null dataspace has no shape, maxshape or chunks",
            ));
        }
        if self.null_space && n_given != 0 {
            return Err(Error::usage("a null dataspace holds no data"));
        }
        if self.fill_undefined && self.fill.is_some() {
            return Err(Error::usage("fill value both set and undefined"));
        }
        // Validate the name (a path's missing intermediate groups are made
        // with the dataset) and everything else before writing anything.
        fw.check_path(self.parent, &self.name)?;
        let mut probe = Encoder::new();
        dtype.encode(&mut probe, fw.ctx, fw.format.dtype_version())?;
        let shape = if self.null_space {
            Vec::new()
        } else {
            self.shape.unwrap_or_else(|| alloc::vec![n_given])
        };
        let n = if self.null_space {
            0
        } else {
            shape
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| Error::usage("shape overflows"))?
        };
        if (data.is_some() || raw.is_some()) && n != n_given {
            return Err(Error::usage(alloc::format!(
                "{n_given} elements given for shape {shape:?} ({n} elements)"
            )));
        }
        let max_dims = match &self.maxshape {
            None => None,
            Some(m) => {
                if m.len() != shape.len() {
                    return Err(Error::usage(alloc::format!(
                        "maxshape rank {} differs from shape rank {}",
                        m.len(),
                        shape.len()
                    )));
                }
                let v: Vec<u64> = m
                    .iter()
                    .map(|d| d.unwrap_or(Dataspace::UNLIMITED))
                    .collect();
                if v.iter().zip(&shape).any(|(m, d)| m < d) {
                    return Err(Error::usage("maxshape smaller than shape"));
                }
                Some(v)
            }
        };
        let unlimited = max_dims
            .as_ref()
            .is_some_and(|m| m.contains(&Dataspace::UNLIMITED));
        if let Some(spec) = self.virtual_map {
            let filtered = self.deflate.is_some()
                || self.shuffle
                || self.fletcher32
                || self.zstd.is_some()
                || self.lz4
                || self.nbit
                || self.scaleoffset.is_some()
                || self.pipeline.is_some();
            if self.chunks.is_some() || filtered || self.compact || self.early_alloc {
                return Err(Error::usage(
                    "a virtual dataset has no chunks, filters, compact storage or early allocation",
                ));
            }
            if data.is_some() || raw.is_some() || self.raw_chunks.is_some() {
                return Err(Error::usage(
                    "a virtual dataset holds no data of its own: finish it with create()",
                ));
            }
            if self.null_space || shape.is_empty() {
                return Err(Error::usage(
                    "a virtual dataset needs a simple dataspace of rank ≥ 1",
                ));
            }
            if let Some(f) = &self.fill {
                if f.len() as u64 != dtype.size() {
                    return Err(Error::usage("fill value is not one element"));
                }
                if dtype.is_variable_length() && !self.fill_in_file {
                    return Err(Error::unsupported(
                        "fill values of variable-length types (give one with fill_value_in_file)",
                    ));
                }
            }
            let ctx = fw.ctx;
            let (block, bytes) = match spec {
                VirtualSpec::Mappings(m) => {
                    let block = VdsBlock {
                        version: u8::from(fw.format == Format::V200),
                        mappings: m,
                    };
                    let bytes = block.encode(ctx)?;
                    (block, bytes)
                }
                VirtualSpec::Encoded(b) => {
                    let block = VdsBlock::decode(&mut crate::codec::Cursor::new(&b, 0), ctx)?;
                    (block, b)
                }
            };
            // Never write what does not decode (also for freshly encoded bytes).
            let back = VdsBlock::decode(&mut crate::codec::Cursor::new(&bytes, 0), ctx)?;
            if back != block {
                return Err(Error::usage(
                    "virtual dataset mapping list does not encode reversibly",
                ));
            }
            if block.mappings.is_empty() {
                return Err(Error::usage("a virtual dataset needs at least one mapping"));
            }
            let limit = max_dims.clone().unwrap_or_else(|| shape.clone());
            for (i, m) in block.mappings.iter().enumerate() {
                if [&m.source, &m.virtual_sel]
                    .iter()
                    .any(|s| matches!(s, crate::format::selection::Selection::Points { .. }))
                {
                    return Err(Error::usage(alloc::format!(
                        "virtual mapping {i}: point selections (libhdf5 does not open virtual datasets with them)"
                    )));
                }
                check_virtual_selection(&m.virtual_sel, &limit)
                    .map_err(|e| Error::usage(alloc::format!("virtual mapping {i}: {e}")))?;
            }
            let space = Dataspace {
                kind: SpaceKind::Simple,
                dims: shape,
                max_dims,
            };
            let mut pe = Encoder::new();
            space.encode(&mut pe, ctx, space_version(fw.format, &space))?;
            let (heap_addr, index) = fw.heap_put(&bytes)?;
            let fill = fill_message(fw.format, 3, self.fill, self.fill_undefined);
            return fw.add_node(
                self.parent,
                &self.name,
                NodeKind::Dataset(DatasetNode {
                    dtype,
                    committed: self.committed,
                    space,
                    layout: Layout::Virtual {
                        heap_addr,
                        index: u32::from(index),
                    },
                    pipeline: None,
                    fill,
                }),
            );
        }
        if self.pipeline.is_some()
            && (self.deflate.is_some()
                || self.shuffle
                || self.fletcher32
                || self.zstd.is_some()
                || self.lz4
                || self.nbit
                || self.scaleoffset.is_some())
        {
            return Err(Error::usage(
                "give the filter pipeline whole or through deflate/shuffle/fletcher32/zstd/lz4/nbit/scaleoffset, not both",
            ));
        }
        if self.nbit && self.scaleoffset.is_some() {
            return Err(Error::usage(
                "nbit and scaleoffset cannot be combined (each needs whole elements as input)",
            ));
        }
        let filtered = self.deflate.is_some()
            || self.shuffle
            || self.fletcher32
            || self.zstd.is_some()
            || self.lz4
            || self.nbit
            || self.scaleoffset.is_some()
            || self
                .pipeline
                .as_ref()
                .is_some_and(|p| !p.filters.is_empty());
        if self.chunks.is_none() && (unlimited || filtered) {
            return Err(Error::usage(
                "unlimited dimensions and filters need a chunked layout: set .chunks(..)",
            ));
        }
        if let Some(c) = &self.chunks {
            if c.len() != shape.len() {
                return Err(Error::usage(alloc::format!(
                    "chunk rank {} differs from shape rank {}",
                    c.len(),
                    shape.len()
                )));
            }
            if c.is_empty() || c.contains(&0) || c.iter().any(|&d| d > u64::from(u32::MAX)) {
                return Err(Error::usage(
                    "chunk dimensions must be 1..2^32 and rank ≥ 1",
                ));
            }
            if let Some(m) = &max_dims {
                if c.iter()
                    .zip(m)
                    .any(|(c, m)| *m != Dataspace::UNLIMITED && c > m)
                {
                    return Err(Error::usage("chunk larger than the maximum shape"));
                }
            }
        }
        let es = dtype.size();
        if let Some(f) = &self.fill {
            if f.len() as u64 != es {
                return Err(Error::usage("fill value is not one element"));
            }
            if dtype.is_variable_length() && !self.fill_in_file {
                return Err(Error::unsupported(
                    "fill values of variable-length types (give one with fill_value_in_file)",
                ));
            }
        }
        // The n-bit / scale-offset filter with the parameters libhdf5's
        // "set local" callbacks compute (also recomputed in a pipeline given
        // whole, unless its chunks come already encoded).
        let mut local_filter = None;
        let mut pipeline_given = self.pipeline;
        if let Some(c) = &self.chunks {
            let nelmts = c
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| Error::usage("a chunk of 2^32 elements or more"))?;
            let so_fill = if self.fill_undefined {
                None
            } else {
                Some(
                    self.fill
                        .clone()
                        .unwrap_or_else(|| alloc::vec![0; usize::try_from(es).unwrap_or(0)]),
                )
            };
            let local = |id: u16, factor: i32| -> Result<Filter> {
                let client_data = if id == crate::filter::NBIT {
                    crate::filter::nbit_client_data(&dtype, nelmts)?
                } else {
                    crate::filter::scaleoffset_client_data(
                        &dtype,
                        nelmts,
                        factor,
                        so_fill.as_deref(),
                    )?
                };
                Ok(Filter {
                    id,
                    name: None,
                    flags: 1,
                    client_data,
                })
            };
            if self.nbit {
                local_filter = Some(local(crate::filter::NBIT, 0)?);
            } else if let Some(factor) = self.scaleoffset {
                local_filter = Some(local(crate::filter::SCALEOFFSET, factor)?);
            }
            if let (Some(p), None) = (&mut pipeline_given, &self.raw_chunks) {
                for f in &mut p.filters {
                    if f.id == crate::filter::NBIT || f.id == crate::filter::SCALEOFFSET {
                        #[allow(clippy::cast_possible_wrap)] // a C int
                        let factor = f.client_data.get(1).map_or(0, |&v| v as i32);
                        let given_type = f.client_data.first().copied();
                        let mut n = local(f.id, factor)?;
                        n.flags = f.flags;
                        if f.id == crate::filter::SCALEOFFSET
                            && given_type.is_some_and(|t| Some(&t) != n.client_data.first())
                        {
                            return Err(Error::usage(
                                "scaleoffset scale type does not match the datatype (2 for integers, 0 for floats)",
                            ));
                        }
                        *f = n;
                    }
                }
            }
        }
        let raw_len = match (&data, raw) {
            (Some(ElementData::Raw(b)), _) => Some(b.len()),
            (None, Some(r)) => Some(r.len()),
            _ => None,
        };
        if let Some(len) = raw_len {
            if Some(len as u64) != n.checked_mul(es) {
                return Err(Error::usage(alloc::format!(
                    "{len} data bytes for {n} elements of {es} bytes"
                )));
            }
        }
        if self.compact && (self.chunks.is_some() || n.saturating_mul(es) > 0xf000) {
            return Err(Error::usage(
                "compact datasets are unchunked and below 60 KiB",
            ));
        }
        let space = Dataspace {
            kind: if self.null_space {
                SpaceKind::Null
            } else if shape.is_empty() {
                SpaceKind::Scalar
            } else {
                SpaceKind::Simple
            },
            dims: shape.clone(),
            max_dims,
        };
        let mut pe = Encoder::new();
        space.encode(&mut pe, fw.ctx, space_version(fw.format, &space))?;
        // Now write: data first (streamed), then remember the header.
        // Raw bytes were checked above: borrow or move them (no copy of large data).
        let bytes: Option<Cow<'_, [u8]>> = match (data, raw) {
            (Some(ElementData::Raw(b)), _) if !dtype.is_variable_length() => Some(Cow::Owned(b)),
            (Some(d), _) => Some(Cow::Owned(fw.element_bytes(&dtype, n, &d)?)),
            (None, Some(r)) if !dtype.is_variable_length() => Some(Cow::Borrowed(r)),
            (None, Some(r)) => Some(Cow::Owned(fw.element_bytes(
                &dtype,
                n,
                &ElementData::Raw(r.to_vec()),
            )?)),
            (None, None) => None,
        };
        let mut filters = Vec::new();
        if let Some(f) = local_filter {
            filters.push(f);
        }
        if self.shuffle {
            filters.push(Filter {
                id: 2,
                name: None,
                flags: 1,
                client_data: alloc::vec![u32::try_from(es).unwrap_or(1)],
            });
        }
        if let Some(level) = self.deflate {
            filters.push(Filter {
                id: 1,
                name: None,
                flags: 1,
                client_data: alloc::vec![u32::from(level)],
            });
        }
        if let Some(level) = self.zstd {
            filters.push(Filter {
                id: crate::filter::ZSTD,
                name: None,
                flags: 1,
                #[allow(clippy::cast_sign_loss)] // negative levels as the plugin reads them
                client_data: alloc::vec![level as u32],
            });
        }
        if self.lz4 {
            filters.push(Filter {
                id: crate::filter::LZ4,
                name: None,
                flags: 1,
                client_data: alloc::vec![0],
            });
        }
        if self.fletcher32 {
            filters.push(Filter {
                id: 3,
                name: None,
                flags: 0,
                client_data: Vec::new(),
            });
        }
        let pipeline = match pipeline_given {
            Some(p) => (!p.filters.is_empty()).then_some(p),
            None => (!filters.is_empty()).then_some(FilterPipeline { filters }),
        };
        let fill_elem = self
            .fill
            .clone()
            .unwrap_or_else(|| alloc::vec![0; usize::try_from(es).unwrap_or(0)]);
        let (layout, alloc_time) = if self.compact {
            let data = bytes.map_or_else(
                || fill_elem.repeat(usize::try_from(n).unwrap_or(0)),
                Cow::into_owned,
            );
            (Layout::Compact { data }, 1)
        } else if let (Some(chunks), Some(raw)) = (&self.chunks, &self.raw_chunks) {
            let mut sorted: Vec<&RawChunk> = raw.iter().collect();
            sorted.sort_by(|a, b| a.offsets.cmp(&b.offsets));
            for (i, c) in sorted.iter().enumerate() {
                let aligned = c.offsets.len() == chunks.len()
                    && c.offsets.iter().zip(chunks).all(|(o, c)| o % c == 0);
                let inside = c
                    .offsets
                    .iter()
                    .zip(space.max_dims.as_ref().unwrap_or(&space.dims))
                    .all(|(o, m)| o < m);
                if !aligned || !inside {
                    return Err(Error::usage(alloc::format!(
                        "raw chunk at {:?}: not a chunk of this dataset",
                        c.offsets
                    )));
                }
                if i > 0 && sorted.get(i - 1).is_some_and(|p| p.offsets == c.offsets) {
                    return Err(Error::usage("the same chunk given twice"));
                }
                let nfilters = pipeline.as_ref().map_or(0, |p| p.filters.len());
                if nfilters < 32 && c.filter_mask >> nfilters != 0 {
                    return Err(Error::usage(alloc::format!(
                        "raw chunk at {:?}: filter mask {:#x} names filters the pipeline of {nfilters} does not have",
                        c.offsets, c.filter_mask
                    )));
                }
            }
            let mut stored = Vec::with_capacity(sorted.len());
            for c in sorted {
                let addr = fw.write_new(&c.bytes)?;
                stored.push(chunked::StoredChunk {
                    offsets: c.offsets.clone(),
                    addr,
                    size: c.bytes.len() as u64,
                    filter_mask: c.filter_mask,
                });
            }
            let addr = chunked::write_btree(fw, chunks, &stored)?;
            (
                Layout::Chunked(crate::format::message::ChunkedLayout {
                    dims: chunks.clone(),
                    element_size: es,
                    flags: 0,
                    index: crate::format::message::ChunkIndex::BTreeV1 { addr },
                    layout_version: 3,
                }),
                3,
            )
        } else if let Some(chunks) = &self.chunks {
            let l = chunked::write_chunked(
                fw,
                &dtype,
                &space,
                chunks,
                pipeline.as_ref(),
                bytes.as_deref(),
                &fill_elem,
                self.early_alloc,
            )?;
            (l, if self.early_alloc { 1 } else { 3 })
        } else {
            let size = n.saturating_mul(es);
            let addr = match &bytes {
                Some(b) if !b.is_empty() => fw.write_raw_data(b)?,
                _ => Addr::UNDEF,
            };
            (Layout::Contiguous { addr, size }, 2)
        };
        let fill = fill_message(fw.format, alloc_time, self.fill, self.fill_undefined);
        fw.add_node(
            self.parent,
            &self.name,
            NodeKind::Dataset(DatasetNode {
                dtype,
                committed: self.committed,
                space,
                layout,
                pipeline,
                fill,
            }),
        )
    }
}
