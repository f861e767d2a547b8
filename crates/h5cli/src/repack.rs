//! `h5 repack`: read a file with the reader and write it again with the
//! writer — the whole tree reachable from the root group.
//!
//! Groups (with their link creation order tracking), hard links (an object
//! linked several times is written once and linked again), soft and
//! external links, committed datatypes, datasets (shape, maximum shape,
//! compact/contiguous/chunked layout, chunk shape, filter pipeline, fill
//! value) and attributes are copied. Variable-length data is copied into the
//! new file's global heap and references of every kind are remapped to the
//! new object addresses.
//!
//! Virtual datasets are written virtual, with the same mappings (block
//! version of the output preset). Source file names: `"."` (the dataset's
//! own file) is kept — the source datasets are copied under the same paths,
//! so it still names them; absolute names are kept; a relative name, which
//! readers resolve against the directory of the file holding the virtual
//! dataset, is resolved against the SOURCE file's directory and, when the
//! destination is in another directory, rewritten to still reach the same
//! file: the relative path from the destination's directory to the source's
//! directory, followed by the name as stored (so `%b` patterns and `..`
//! keep their meaning; a `%` in the added directory part is written `%%`).
//! When the destination directory is unknown ([`repack_to_bytes`],
//! [`repack_into`]) the source's absolute directory is used instead.
//!
//! External-file datasets are materialized (contiguous). What
//! the writer cannot write (a filter it cannot encode, an attribute that
//! needs dense storage, a reference to an object not reachable from the
//! root) is an error naming the object; the destination is then not
//! created (the file is built under a temporary name and renamed at the end).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Component, Path, PathBuf};

use h5fmt::codec::Cursor;
use h5fmt::data::HeapResolver;
use h5fmt::format::datatype::{Datatype, RefKind};
use h5fmt::format::message::shared::{SharedMessage, SharedTarget};
use h5fmt::format::message::{
    kind, FillState, Filter, FilterPipeline, Layout, LinkInfo, LinkTarget, SpaceKind,
};
use h5fmt::write::{AttrValue, ElementData};
use h5fmt::{Addr, Dataset, File, FileWriter, Format, Group, Object, ObjectId, Sizes};

/// What to do with the filters of the datasets.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum FilterChoice {
    /// Keep each dataset's pipeline.
    #[default]
    Keep,
    /// Remove all filters.
    None,
    /// Use this pipeline for every chunked dataset (and chunk the others
    /// that have at least one element and one dimension). Shuffle's client
    /// data is set to each dataset's element size.
    Set(FilterPipeline),
}

/// Options of `h5 repack`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Format preset of the output.
    pub format: Format,
    /// Filters.
    pub filter: FilterChoice,
    /// Chunk shape for every dataset of the same rank.
    pub chunk: Option<Vec<u64>>,
}

impl Options {
    /// Whether these options change layouts, chunks or filters (the
    /// comparison of dumps must then ignore them).
    pub fn changes_storage(&self) -> bool {
        self.filter != FilterChoice::Keep || self.chunk.is_some()
    }
}

/// Parse a `--format` value.
///
/// # Errors
/// A message for an unknown name.
pub fn parse_format(s: &str) -> Result<Format, String> {
    match s {
        "earliest" => Ok(Format::Earliest),
        "v18" => Ok(Format::V18),
        "latest" => Ok(Format::Latest),
        "v200" => Ok(Format::V200),
        _ => Err(format!(
            "unknown format {s:?} (earliest, v18, latest or v200)"
        )),
    }
}

/// Parse a `--filter` value: `none`, or a comma-separated list of
/// `shuffle`, `gzip[=LEVEL]`, `fletcher32`, `zstd[=LEVEL]`, `lz4`, `nbit`,
/// `scaleoffset=N` (alias `soff=N`; for integers the bits kept, 0 for the
/// minimum per chunk, lossless; for floats the decimal digits kept, lossy),
/// applied in that order of the list, except that n-bit or scale-offset
/// comes first and shuffle next (they need whole elements, as h5py orders
/// them). n-bit and scale-offset exclude each other.
///
/// # Errors
/// A message for an unknown filter, a bad level, or n-bit with
/// scale-offset.
pub fn parse_filter(s: &str) -> Result<FilterChoice, String> {
    if s == "none" {
        return Ok(FilterChoice::None);
    }
    let mut filters = Vec::new();
    let mut shuffle = false;
    let mut first: Option<Filter> = None;
    for item in s.split(',') {
        let (name, arg) = match item.split_once('=') {
            Some((n, a)) => (n, Some(a)),
            None => (item, None),
        };
        let level = |default: u32, max: u32| -> Result<u32, String> {
            match arg {
                None => Ok(default),
                Some(a) => a
                    .parse::<u32>()
                    .ok()
                    .filter(|&l| l <= max)
                    .ok_or_else(|| format!("bad level {a:?} for {name} (0..={max})")),
            }
        };
        let (id, cd, flags) = match name {
            "shuffle" if arg.is_none() => {
                shuffle = true;
                continue;
            }
            "gzip" | "deflate" => (1u16, vec![level(4, 9)?], 1u16),
            "fletcher32" if arg.is_none() => (3, Vec::new(), 0),
            "zstd" => (32015, vec![level(3, 22)?], 1),
            "lz4" if arg.is_none() => (32004, vec![0], 1),
            "nbit" | "scaleoffset" | "soff" => {
                let f = if name == "nbit" {
                    if arg.is_some() {
                        return Err("nbit takes no argument".into());
                    }
                    Filter {
                        id: h5fmt::filter::NBIT,
                        name: None,
                        flags: 1,
                        client_data: Vec::new(),
                    }
                } else {
                    let n = arg
                        .and_then(|a| a.parse::<i32>().ok())
                        .filter(|n| (0..=64).contains(n))
                        .ok_or_else(|| {
                            format!("{name} needs a factor 0..=64 ({name}=N), got {item:?}")
                        })?;
                    #[allow(clippy::cast_sign_loss)] // 0..=64
                    Filter {
                        id: h5fmt::filter::SCALEOFFSET,
                        name: None,
                        flags: 1,
                        // The scale type is set per dataset (integer or float).
                        client_data: vec![u32::MAX, n as u32],
                    }
                };
                if first.is_some() {
                    return Err("give one of nbit and scaleoffset, once".into());
                }
                first = Some(f);
                continue;
            }
            _ => {
                return Err(format!(
                    "unknown filter {item:?} (none, shuffle, gzip=N, fletcher32, zstd=N, lz4, nbit, scaleoffset=N)"
                ))
            }
        };
        filters.push(Filter {
            id,
            name: None,
            flags,
            client_data: cd,
        });
    }
    if shuffle {
        filters.insert(
            0,
            Filter {
                id: 2,
                name: None,
                flags: 1,
                client_data: Vec::new(),
            },
        );
    }
    if let Some(f) = first {
        filters.insert(0, f);
    }
    if filters.is_empty() {
        return Err("empty --filter".into());
    }
    Ok(FilterChoice::Set(FilterPipeline { filters }))
}

/// Parse a `--chunk` value: comma-separated positive dimensions.
///
/// # Errors
/// A message for a value that is not a list of positive integers.
pub fn parse_chunk(s: &str) -> Result<Vec<u64>, String> {
    s.split(',')
        .map(|d| d.trim().parse::<u64>().ok().filter(|&d| d > 0))
        .collect::<Option<Vec<u64>>>()
        .ok_or_else(|| format!("bad --chunk {s:?}: positive integers separated by commas"))
}

/// Counts of what was copied.
#[derive(Debug, Default, Clone, Copy)]
pub struct Stats {
    /// Groups (the root included).
    pub groups: usize,
    /// Datasets.
    pub datasets: usize,
    /// Committed datatypes.
    pub datatypes: usize,
    /// Attributes.
    pub attributes: usize,
}

/// Repack `src` into `dst`.
///
/// # Errors
/// A message naming the object that could not be read or written; `dst` is
/// then left untouched.
pub fn repack(src: &Path, dst: &Path, opts: &Options) -> Result<Stats, String> {
    let file = open_src(src)?;
    let name = dst
        .file_name()
        .ok_or_else(|| format!("{}: not a file name", dst.display()))?;
    let tmp = dst.with_file_name(format!(".{}.repack-tmp", name.to_string_lossy()));
    let fw = FileWriter::create_with(&tmp, opts.format)
        .map_err(|e| format!("{}: {e}", tmp.display()))?;
    let result = (|| {
        let mut r = Repacker::new(&file, fw, opts);
        r.dst_dir = std::fs::canonicalize(&tmp)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf));
        r.run()?;
        let stats = r.stats;
        r.fw.close()
            .map_err(|e| format!("writing {}: {e}", dst.display()))?;
        Ok(stats)
    })();
    match result {
        Ok(s) => {
            std::fs::rename(&tmp, dst).map_err(|e| format!("{}: {e}", dst.display()))?;
            Ok(s)
        }
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            Err(e)
        }
    }
}

/// Repack `src` into the bytes of a new file built in memory.
///
/// # Errors
/// As [`repack`].
pub fn repack_to_bytes(src: &Path, opts: &Options) -> Result<Vec<u8>, String> {
    let file = open_src(src)?;
    let fw = FileWriter::in_memory_with(opts.format);
    let (fw, _) = repack_into(&file, fw, opts)?;
    fw.finish().map_err(|e| format!("writing: {e}"))
}

fn open_src(src: &Path) -> Result<File, String> {
    // Datasets are copied whole: bound what one read may materialize.
    let limits = h5fmt::Limits {
        max_read_bytes: 4 << 30,
        ..h5fmt::Limits::default()
    };
    File::open_with_limits(src, limits).map_err(|e| format!("{}: {e}", src.display()))
}

/// Repack the file `file` into the writer `fw` (which is not closed).
///
/// # Errors
/// As [`repack`].
pub fn repack_into(
    file: &File,
    fw: FileWriter,
    opts: &Options,
) -> Result<(FileWriter, Stats), String> {
    let mut r = Repacker::new(file, fw, opts);
    r.run()?;
    Ok((r.fw, r.stats))
}

struct Deferred {
    parent: ObjectId,
    name: String,
    ds: Dataset,
}

struct Repacker<'a> {
    file: &'a File,
    fw: FileWriter,
    opts: &'a Options,
    heap: h5fmt::read::FileHeap,
    sizes: Sizes,
    /// Source object header address → new object.
    map: BTreeMap<u64, ObjectId>,
    /// Objects whose attributes are copied at the end.
    objects: Vec<(Object, ObjectId)>,
    /// Datasets holding references, written once every other object exists.
    deferred: Vec<Deferred>,
    deferred_addrs: BTreeSet<u64>,
    /// Hard links to deferred datasets: (parent, name, source address).
    pending_links: Vec<(ObjectId, String, u64)>,
    stats: Stats,
    /// The destination's directory (absolute), when known.
    dst_dir: Option<PathBuf>,
}

/// The path leading from the directory `from` to the directory `to` (both
/// absolute and canonical): `..` for each component of `from` after their
/// common prefix, then the rest of `to`.
fn relative_dir(from: &Path, to: &Path) -> PathBuf {
    let a: Vec<Component<'_>> = from.components().collect();
    let b: Vec<Component<'_>> = to.components().collect();
    let common = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let mut out = PathBuf::new();
    for _ in common..a.len() {
        out.push("..");
    }
    for c in b.iter().skip(common) {
        out.push(c.as_os_str());
    }
    out
}

fn err(path: &str, e: impl std::fmt::Display) -> String {
    format!("{path}: {e}")
}

impl<'a> Repacker<'a> {
    fn new(file: &'a File, fw: FileWriter, opts: &'a Options) -> Self {
        Repacker {
            file,
            fw,
            opts,
            heap: file.heap(),
            sizes: file.ctx().sizes,
            map: BTreeMap::new(),
            objects: Vec::new(),
            deferred: Vec::new(),
            deferred_addrs: BTreeSet::new(),
            pending_links: Vec::new(),
            stats: Stats::default(),
            dst_dir: None,
        }
    }

    fn run(&mut self) -> Result<(), String> {
        let root = self.file.root().map_err(|e| err("/", e))?;
        self.map.insert(root.addr().0, ObjectId::ROOT);
        self.objects.push((
            self.file
                .object_at(root.addr(), "/")
                .map_err(|e| err("/", e))?,
            ObjectId::ROOT,
        ));
        self.stats.groups += 1;
        if track_order(&root) && self.opts.format != Format::Earliest {
            self.fw
                .root()
                .set_track_order(true)
                .map_err(|e| err("/", e))?;
        }
        let mut queue = VecDeque::from([(root, ObjectId::ROOT)]);
        while let Some((g, id)) = queue.pop_front() {
            self.copy_links(&g, id, &mut queue)?;
        }
        // Datasets holding references: in rounds, so that one referring to
        // another such dataset waits for it.
        while !self.deferred.is_empty() {
            let mut progress = false;
            let mut last_err = String::new();
            for d in std::mem::take(&mut self.deferred) {
                match self.write_dataset(d.parent, &d.name, &d.ds) {
                    Ok(id) => {
                        progress = true;
                        self.map.insert(d.ds.addr().0, id);
                        self.objects.push((Object::Dataset(Box::new(d.ds)), id));
                    }
                    Err(e) => {
                        last_err = e;
                        self.deferred.push(d);
                    }
                }
            }
            if !progress {
                return Err(last_err);
            }
        }
        for (parent, name, addr) in std::mem::take(&mut self.pending_links) {
            let id = *self
                .map
                .get(&addr)
                .ok_or_else(|| format!("{name}: link to an object that was not copied"))?;
            self.fw
                .group(parent)
                .and_then(|mut g| g.link_hard(&name, id))
                .map_err(|e| err(&name, e))?;
        }
        for (obj, id) in std::mem::take(&mut self.objects) {
            self.copy_attrs(&obj, id)?;
        }
        Ok(())
    }

    fn copy_links(
        &mut self,
        g: &Group,
        id: ObjectId,
        queue: &mut VecDeque<(Group, ObjectId)>,
    ) -> Result<(), String> {
        let gpath = g.path().to_string();
        let mut links = g.links().map_err(|e| err(&gpath, e))?;
        if track_order(g) {
            links.sort_by_key(|l| l.creation_order.unwrap_or(u64::MAX));
        }
        for l in links {
            let path = if gpath == "/" {
                format!("/{}", l.name)
            } else {
                format!("{gpath}/{}", l.name)
            };
            match &l.target {
                LinkTarget::Hard(addr) => {
                    if let Some(&t) = self.map.get(&addr.0) {
                        self.fw
                            .group(id)
                            .and_then(|mut w| w.link_hard(&l.name, t))
                            .map_err(|e| err(&path, e))?;
                        continue;
                    }
                    if self.deferred_addrs.contains(&addr.0) {
                        self.pending_links.push((id, l.name.clone(), addr.0));
                        continue;
                    }
                    let obj = self
                        .file
                        .object_at(*addr, &path)
                        .map_err(|e| err(&path, e))?;
                    let new = match &obj {
                        Object::Group(sub) => {
                            let mut w = self.fw.group(id).map_err(|e| err(&path, e))?;
                            let mut child = w.create_group(&l.name).map_err(|e| err(&path, e))?;
                            if track_order(sub) && self.opts.format != Format::Earliest {
                                child.set_track_order(true).map_err(|e| err(&path, e))?;
                            }
                            let cid = child.id();
                            queue.push_back((sub.clone(), cid));
                            self.stats.groups += 1;
                            cid
                        }
                        Object::Datatype(t) => {
                            let dt = self.dst_dtype(t.dtype()).map_err(|e| err(&path, e))?;
                            self.stats.datatypes += 1;
                            self.fw
                                .group(id)
                                .and_then(|mut w| w.commit_datatype(&l.name, dt))
                                .map_err(|e| err(&path, e))?
                        }
                        Object::Dataset(d) => {
                            if d.dtype().has_references() {
                                self.deferred_addrs.insert(addr.0);
                                self.deferred.push(Deferred {
                                    parent: id,
                                    name: l.name.clone(),
                                    ds: (**d).clone(),
                                });
                                continue;
                            }
                            self.write_dataset(id, &l.name, d)?
                        }
                    };
                    self.map.insert(addr.0, new);
                    self.objects.push((obj, new));
                }
                LinkTarget::Soft(p) => self
                    .fw
                    .group(id)
                    .and_then(|mut w| w.link_soft(&l.name, p))
                    .map_err(|e| err(&path, e))?,
                LinkTarget::External { file, path: p } => self
                    .fw
                    .group(id)
                    .and_then(|mut w| w.link_external(&l.name, file, p))
                    .map_err(|e| err(&path, e))?,
                other => return Err(err(&path, format!("link class not copied: {other:?}"))),
            }
        }
        Ok(())
    }

    /// The datatype in the new file: variable-length and reference types
    /// take the sizes of the new file's addresses.
    fn dst_dtype(&self, dt: &Datatype) -> h5fmt::Result<Datatype> {
        let ctx = h5fmt::Ctx::default();
        let addr = u32::from(ctx.sizes.offsets);
        Ok(match dt {
            Datatype::VarLenSequence { base, .. } => Datatype::VarLenSequence {
                size: 8 + addr,
                base: Box::new(self.dst_dtype(base)?),
            },
            Datatype::VarLenString { pad, cset, .. } => Datatype::VarLenString {
                size: 8 + addr,
                pad: *pad,
                cset: *cset,
            },
            Datatype::Reference { kind, .. } => Datatype::Reference {
                size: match kind {
                    RefKind::Object1 => addr,
                    RefKind::Region1 => addr + 4,
                    RefKind::Std => addr + 10,
                },
                kind: *kind,
            },
            Datatype::Array { dims, base } => Datatype::Array {
                dims: dims.clone(),
                base: Box::new(self.dst_dtype(base)?),
            },
            Datatype::Compound { size, members } => {
                let mut out = Vec::with_capacity(members.len());
                for m in members {
                    let t = self.dst_dtype(&m.dtype)?;
                    if t.size() != m.dtype.size() {
                        return Err(h5fmt::Error::unsupported(
                            "compound with variable-length or reference members in a file \
                             whose addresses are not 8 bytes",
                        ));
                    }
                    out.push(h5fmt::format::datatype::CompoundMember {
                        name: m.name.clone(),
                        offset: m.offset,
                        dtype: t,
                    });
                }
                Datatype::Compound {
                    size: *size,
                    members: out,
                }
            }
            other => other.clone(),
        })
    }

    fn write_dataset(
        &mut self,
        parent: ObjectId,
        name: &str,
        d: &Dataset,
    ) -> Result<ObjectId, String> {
        let path = d.path().to_string();
        let e = |x: h5fmt::Error| err(&path, x);
        let sdt = d.dtype().clone();
        let ddt = self.dst_dtype(&sdt).map_err(e)?;
        let space = d.space();
        let null = space.kind == SpaceKind::Null;
        // Storage never allocated reads as the fill value: create the dataset
        // without data (cheap even for 2^31 elements).
        let is_virtual = matches!(d.layout(), Layout::Virtual { .. });
        // With fill time "never", unwritten elements read as zeros, not as the
        // fill value: such data is written out.
        let empty = null
            || is_virtual
            || (unallocated(d.layout())
                && d.header().find(kind::EXTERNAL_FILES).is_none()
                && d.fill_value().fill_time != 1);
        let raw = if empty {
            None
        } else {
            self.raw_chunks(d).map_err(|x| err(&path, x))?
        };
        let bytes = if empty || raw.is_some() {
            Vec::new()
        } else {
            let raw = d.read_raw().map_err(e)?;
            self.remap(&sdt, &ddt, &raw).map_err(|x| err(&path, x))?
        };
        // Committed datatype used by the source dataset, when already copied.
        let committed = d
            .header()
            .find(kind::DATATYPE)
            .filter(|m| m.flags & 2 != 0)
            .and_then(|m| SharedMessage::decode(&mut Cursor::new(&m.data, 0), self.file.ctx()).ok())
            .and_then(|s| match s.target {
                SharedTarget::ObjectHeader(a) => self.map.get(&a.0).copied(),
                SharedTarget::SohmHeap(_) => None,
            });
        // Heap data and references of a user fill element are copied too.
        let user_fill = match (&d.fill_value().state, &d.fill_value().value) {
            (FillState::User, Some(v)) => {
                let v = v
                    .get(..usize::try_from(sdt.size()).unwrap_or(usize::MAX))
                    .unwrap_or(v);
                Some(self.remap(&sdt, &ddt, v).map_err(|x| err(&path, x))?)
            }
            _ => None,
        };
        // The mappings of a virtual dataset, source file names rewritten.
        let vds_mappings = if is_virtual {
            let mut block = h5fmt::read::vds::mapping_block(d).map_err(e)?;
            for m in &mut block.mappings {
                m.file = self.vds_source_name(&m.file).map_err(|x| err(&path, x))?;
            }
            Some(block.mappings)
        } else {
            None
        };
        let mut w = self.fw.group(parent).map_err(e)?;
        let mut b = w.create_dataset(name).dtype(ddt.clone());
        if let Some(t) = committed {
            b = b.committed_dtype(t);
        }
        let rank = space.dims.len();
        match space.kind {
            SpaceKind::Null => b = b.null_space(),
            SpaceKind::Scalar => b = b.shape(&[]),
            SpaceKind::Simple => {
                b = b.shape(&space.dims);
                if let Some(m) = d.maxshape() {
                    if space.max_dims.is_some() {
                        b = b.maxshape(&m);
                    }
                }
            }
        }
        if let Some(mappings) = vds_mappings {
            match (d.fill_value().state, user_fill) {
                (FillState::Undefined, _) => b = b.fill_undefined(),
                (FillState::User, Some(v)) => b = b.fill_value_in_file(&v),
                _ => {}
            }
            let id = b.virtual_mappings(mappings).create().map_err(e)?;
            self.stats.datasets += 1;
            return Ok(id);
        }
        let n = d.len();
        let mut chunks: Option<Vec<u64>> = match d.layout() {
            Layout::Chunked(c) => Some(c.dims.clone()),
            _ => None,
        };
        let compact = matches!(d.layout(), Layout::Compact { .. });
        if let Some(c) = &self.opts.chunk {
            if c.len() == rank && space.kind == SpaceKind::Simple {
                let fits = d
                    .maxshape()
                    .is_none_or(|m| m.iter().zip(c).all(|(m, c)| m.is_none_or(|m| *c <= m)));
                if fits {
                    chunks = Some(c.clone());
                }
            }
        }
        let pipeline = match &self.opts.filter {
            FilterChoice::Keep => d.filters().clone(),
            FilterChoice::None => FilterPipeline::default(),
            FilterChoice::Set(p) => {
                if chunks.is_none() && space.kind == SpaceKind::Simple && n > 0 && rank > 0 {
                    chunks = Some(space.dims.clone());
                }
                let mut p = p.clone();
                for f in &mut p.filters {
                    if f.id == 2 {
                        f.client_data = vec![u32::try_from(ddt.size()).unwrap_or(1)];
                    }
                    if f.id == h5fmt::filter::SCALEOFFSET {
                        // As libhdf5 (which h5repack's `SOFF` meets at
                        // dataset creation): integers and floats only.
                        let scale_type = match &ddt {
                            Datatype::Integer { .. } => h5fmt::filter::SO_INT,
                            Datatype::Float { .. } => h5fmt::filter::SO_FLOAT_DSCALE,
                            _ => {
                                return Err(format!(
                                    "{path}: scaleoffset applies to integer and float datasets only"
                                ))
                            }
                        };
                        if let Some(t) = f.client_data.first_mut() {
                            *t = scale_type;
                        }
                    }
                }
                // n-bit on a type it does not apply to (strings, enums,
                // references...): libhdf5 stores such elements unchanged,
                // so the dataset keeps its other filters without it.
                if h5fmt::filter::nbit_client_data(&ddt, 1).is_err() {
                    p.filters.retain(|f| f.id != h5fmt::filter::NBIT);
                }
                p
            }
        };
        if let Some(c) = chunks {
            b = b.chunks(&c);
            if !pipeline.filters.is_empty() {
                b = b.filters(pipeline);
            }
        } else if compact
            && self.opts.chunk.is_none()
            && !matches!(self.opts.filter, FilterChoice::Set(_))
        {
            b = b.compact();
        }
        let fill = d.fill_value();
        match (fill.state, user_fill) {
            (FillState::Undefined, _) => b = b.fill_undefined(),
            (FillState::User, Some(v)) => b = b.fill_value_in_file(&v),
            _ => {}
        }
        let id = if let Some(raw) = raw {
            b.write_raw_chunks(raw).map_err(e)?
        } else if empty {
            b.create().map_err(e)?
        } else {
            b.write_file_bytes(bytes).map_err(e)?
        };
        self.stats.datasets += 1;
        Ok(id)
    }

    /// The source file name of a virtual mapping as the destination must
    /// store it (see the module documentation).
    fn vds_source_name(&self, name: &str) -> Result<String, String> {
        if name == h5fmt::format::vds::SAME_FILE || Path::new(name).is_absolute() {
            return Ok(name.to_string());
        }
        let Some(src_dir) = self.file.dir() else {
            return Ok(name.to_string());
        };
        let src_dir = std::fs::canonicalize(if src_dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            src_dir
        })
        .map_err(|e| format!("{}: {e}", src_dir.display()))?;
        let prefix = match &self.dst_dir {
            Some(d) if *d == src_dir => return Ok(name.to_string()),
            Some(d) => relative_dir(d, &src_dir),
            None => src_dir,
        };
        let prefix = prefix.to_str().ok_or_else(|| {
            format!(
                "virtual dataset source directory {} is not UTF-8",
                prefix.display()
            )
        })?;
        let prefix = prefix.replace('%', "%%");
        Ok(if prefix.is_empty() {
            name.to_string()
        } else if prefix.ends_with('/') {
            format!("{prefix}{name}")
        } else {
            format!("{prefix}/{name}")
        })
    }

    /// The stored chunks of a filtered dataset, when they can be copied as
    /// they are: filters kept and the chunk shape unchanged, elements
    /// without heap data or references; each keeps its filter mask (an
    /// optional filter libhdf5 skipped on it stays skipped).
    fn raw_chunks(&self, d: &Dataset) -> h5fmt::Result<Option<Vec<h5fmt::write::RawChunk>>> {
        let Layout::Chunked(c) = d.layout() else {
            return Ok(None);
        };
        let dt = d.dtype();
        if self.opts.filter != FilterChoice::Keep
            || d.filters().filters.is_empty()
            || self
                .opts
                .chunk
                .as_ref()
                .is_some_and(|k| k.len() == c.dims.len())
            || dt.is_variable_length()
            || dt.has_references()
            || c.flags & h5fmt::format::message::layout::FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS != 0
        {
            return Ok(None);
        }
        let es = usize::try_from(dt.size()).map_err(|_| h5fmt::Error::usage("element size"))?;
        let recs = h5fmt::read::chunks::chunk_records(
            self.file.storage(),
            self.file.ctx(),
            c,
            &d.space().dims,
            d.space().max_dims_or_dims(),
            es,
            true,
        )?;
        let mut out = Vec::with_capacity(recs.len());
        for r in recs {
            out.push(h5fmt::write::RawChunk {
                bytes: self.file.storage().read(r.addr, r.size)?,
                offsets: r.offsets,
                filter_mask: r.filter_mask,
            });
        }
        Ok(Some(out))
    }

    fn copy_attrs(&mut self, obj: &Object, id: ObjectId) -> Result<(), String> {
        let path = obj.path().to_string();
        let attrs = obj.attrs().map_err(|e| err(&path, e))?;
        for a in attrs {
            let what = format!("{path} (attribute {:?})", a.name());
            let sdt = a.dtype().clone();
            let ddt = self.dst_dtype(&sdt).map_err(|e| err(&what, e))?;
            let shape = match a.space().kind {
                SpaceKind::Scalar => None,
                SpaceKind::Simple => Some(a.space().dims.clone()),
                SpaceKind::Null => {
                    self.fw
                        .set_attr_null(id, a.name(), ddt)
                        .map_err(|e| err(&what, e))?;
                    self.stats.attributes += 1;
                    continue;
                }
            };
            // Version 1 attribute messages pad the data to 8 bytes.
            let len = a.len().saturating_mul(sdt.size());
            let raw = a
                .raw()
                .get(..usize::try_from(len).unwrap_or(usize::MAX))
                .ok_or_else(|| err(&what, "attribute data shorter than its dataspace"))?;
            let bytes = self.remap(&sdt, &ddt, raw).map_err(|e| err(&what, e))?;
            self.fw
                .set_attr(
                    id,
                    a.name(),
                    AttrValue {
                        dtype: ddt,
                        shape,
                        data: ElementData::File(bytes),
                    },
                )
                .map_err(|e| err(&what, e))?;
            self.stats.attributes += 1;
        }
        Ok(())
    }

    /// Element bytes of `sdt` in the source file → bytes of `ddt` in the new
    /// file (heap data copied, references remapped).
    fn remap(&mut self, sdt: &Datatype, ddt: &Datatype, src: &[u8]) -> h5fmt::Result<Vec<u8>> {
        if !sdt.is_variable_length() && !sdt.has_references() {
            return Ok(src.to_vec());
        }
        let ss = usize::try_from(sdt.size()).map_err(|_| h5fmt::Error::usage("element size"))?;
        let ds = usize::try_from(ddt.size()).map_err(|_| h5fmt::Error::usage("element size"))?;
        if ss == 0 {
            return Ok(Vec::new());
        }
        let n = src.len() / ss;
        let mut out = vec![0u8; n * ds];
        for i in 0..n {
            let s = src
                .get(i * ss..(i + 1) * ss)
                .ok_or_else(|| h5fmt::Error::corrupt("short element data", 0))?;
            let o = out
                .get_mut(i * ds..(i + 1) * ds)
                .ok_or_else(|| h5fmt::Error::usage("output"))?;
            self.remap_elem(sdt, ddt, s, o)?;
        }
        Ok(out)
    }

    fn remap_elem(
        &mut self,
        sdt: &Datatype,
        ddt: &Datatype,
        s: &[u8],
        o: &mut [u8],
    ) -> h5fmt::Result<()> {
        let short = || h5fmt::Error::corrupt("element shorter than its datatype", 0);
        if !sdt.is_variable_length() && !sdt.has_references() {
            let n = o.len().min(s.len());
            o.get_mut(..n)
                .ok_or_else(short)?
                .copy_from_slice(s.get(..n).ok_or_else(short)?);
            return Ok(());
        }
        match (sdt, ddt) {
            (Datatype::Compound { members: sm, .. }, Datatype::Compound { members: dm, .. }) => {
                for (a, b) in sm.iter().zip(dm) {
                    let (so, doff) = (a.offset as usize, b.offset as usize);
                    let sl = usize::try_from(a.dtype.size()).map_err(|_| short())?;
                    let dl = usize::try_from(b.dtype.size()).map_err(|_| short())?;
                    let ss = s.get(so..so + sl).ok_or_else(short)?;
                    let oo = o.get_mut(doff..doff + dl).ok_or_else(short)?;
                    self.remap_elem(&a.dtype, &b.dtype, ss, oo)?;
                }
                Ok(())
            }
            (Datatype::Array { base: sb, .. }, Datatype::Array { base: db, .. }) => {
                let sl = usize::try_from(sb.size()).map_err(|_| short())?;
                let dl = usize::try_from(db.size()).map_err(|_| short())?;
                if sl == 0 {
                    return Ok(());
                }
                for i in 0..s.len() / sl {
                    let ss = s.get(i * sl..(i + 1) * sl).ok_or_else(short)?;
                    let oo = o.get_mut(i * dl..(i + 1) * dl).ok_or_else(short)?;
                    self.remap_elem(sb, db, ss, oo)?;
                }
                Ok(())
            }
            (Datatype::VarLenString { .. }, _) | (Datatype::VarLenSequence { .. }, _) => {
                let mut c = Cursor::new(s, 0);
                let count = c.read_u32()?;
                let addr = c.read_addr(self.sizes)?;
                let index = c.read_u32()?;
                let mut enc = h5fmt::codec::Encoder::new();
                if addr.0 == 0 || addr.is_undef() || count == 0 {
                    enc.put_u32(0);
                    enc.put_addr(Addr(0), Sizes::default());
                    enc.put_u32(0);
                } else {
                    let obj = self.heap.global_heap_object(addr, index)?;
                    let data = match (sdt, ddt) {
                        (
                            Datatype::VarLenSequence { base: sb, .. },
                            Datatype::VarLenSequence { base: db, .. },
                        ) => {
                            let len = u64::from(count)
                                .checked_mul(sb.size())
                                .and_then(|l| usize::try_from(l).ok())
                                .ok_or_else(short)?;
                            let body = obj.get(..len).ok_or_else(|| {
                                h5fmt::Error::corrupt(
                                    "vlen sequence longer than its heap object",
                                    addr.0,
                                )
                            })?;
                            self.remap(sb, db, body)?
                        }
                        _ => {
                            let len = usize::try_from(count).map_err(|_| short())?;
                            obj.get(..len)
                                .ok_or_else(|| {
                                    h5fmt::Error::corrupt(
                                        "vlen string longer than its heap object",
                                        addr.0,
                                    )
                                })?
                                .to_vec()
                        }
                    };
                    let (a, i) = self.fw.put_global_heap_object(&data)?;
                    enc.put_u32(count);
                    enc.put_addr(a, Sizes::default());
                    enc.put_u32(i);
                }
                put(o, enc.as_bytes())
            }
            (Datatype::Reference { kind, .. }, _) => self.remap_ref(*kind, s, o),
            (Datatype::Enum { .. }, _) | (Datatype::Complex { .. }, _) => put(o, s),
            _ => Err(h5fmt::Error::unsupported(format!(
                "copying elements of {sdt:?}"
            ))),
        }
    }

    /// The new address of the object at `addr` in the source.
    fn new_addr(&mut self, addr: Addr) -> h5fmt::Result<Addr> {
        let id = *self.map.get(&addr.0).ok_or_else(|| {
            h5fmt::Error::unsupported(format!(
                "reference to the object at {:#x}, which is not (yet) copied \
                 (not reachable from the root, or a dataset of references referring to another)",
                addr.0
            ))
        })?;
        self.fw.object_addr(id)
    }

    fn remap_ref(&mut self, kind: RefKind, s: &[u8], o: &mut [u8]) -> h5fmt::Result<()> {
        let d = Sizes::default();
        let mut c = Cursor::new(s, 0);
        let mut enc = h5fmt::codec::Encoder::new();
        match kind {
            RefKind::Object1 => {
                let a = c.read_addr(self.sizes)?;
                if a.0 == 0 || a.is_undef() {
                    enc.put_addr(Addr(0), d);
                } else {
                    let n = self.new_addr(a)?;
                    enc.put_addr(n, d);
                }
            }
            RefKind::Region1 => {
                let ha = c.read_addr(self.sizes)?;
                let idx = c.read_u32()?;
                if ha.0 == 0 || ha.is_undef() {
                    enc.put_addr(Addr(0), d);
                    enc.put_u32(0);
                } else {
                    let blob = self.heap.global_heap_object(ha, idx)?;
                    let mut bc = Cursor::new(&blob, 0);
                    let obj = bc.read_addr(self.sizes)?;
                    let rest = blob
                        .get(usize::from(self.sizes.offsets)..)
                        .unwrap_or_default();
                    let mut nb = h5fmt::codec::Encoder::new();
                    nb.put_addr(self.new_addr(obj)?, d);
                    nb.put_bytes(rest);
                    let (a, i) = self.fw.put_global_heap_object(nb.as_bytes())?;
                    enc.put_addr(a, d);
                    enc.put_u32(i);
                }
            }
            RefKind::Std => {
                let rtype = c.read_u8()?;
                let flags = c.read_u8()?;
                if rtype == 0 {
                    // Null reference: all zeros.
                } else if flags & 1 != 0 {
                    return Err(h5fmt::Error::unsupported(
                        "copying references to objects of other files",
                    ));
                } else if rtype == 2 {
                    let obj = token(&mut c, self.sizes)?;
                    enc.put_u8(2);
                    enc.put_u8(0);
                    enc.put_u8(d.offsets);
                    enc.put_addr(self.new_addr(obj)?, d);
                } else {
                    let len = c.read_u32()?;
                    let ha = c.read_addr(self.sizes)?;
                    let idx = c.read_u32()?;
                    let blob = self.heap.global_heap_object(ha, idx)?;
                    let body = usize::try_from(len)
                        .ok()
                        .and_then(|l| blob.get(..l))
                        .ok_or_else(|| {
                            h5fmt::Error::corrupt(
                                "encoded reference longer than its heap object",
                                ha.0,
                            )
                        })?;
                    let mut bc = Cursor::new(body, 0);
                    let obj = token(&mut bc, self.sizes)?;
                    let used = body.len() - bc.remaining();
                    let rest = body.get(used..).unwrap_or_default();
                    let mut nb = h5fmt::codec::Encoder::new();
                    nb.put_u8(d.offsets);
                    nb.put_addr(self.new_addr(obj)?, d);
                    nb.put_bytes(rest);
                    let (a, i) = self.fw.put_global_heap_object(nb.as_bytes())?;
                    enc.put_u8(rtype);
                    enc.put_u8(flags);
                    enc.put_u32(
                        u32::try_from(nb.len())
                            .map_err(|_| h5fmt::Error::usage("reference too long"))?,
                    );
                    enc.put_addr(a, d);
                    enc.put_u32(i);
                }
            }
        }
        put(o, enc.as_bytes())
    }
}

/// An object token of an encoded reference (size byte, then the address in
/// its first bytes).
fn token(c: &mut Cursor<'_>, sizes: Sizes) -> h5fmt::Result<Addr> {
    let n = usize::from(c.read_u8()?);
    let mut t = c.sub(n)?;
    t.read_addr(sizes)
}

/// Copy `b` to the start of `o` (the rest stays zero).
fn put(o: &mut [u8], b: &[u8]) -> h5fmt::Result<()> {
    o.get_mut(..b.len())
        .ok_or_else(|| h5fmt::Error::usage("encoded element longer than its datatype"))?
        .copy_from_slice(b);
    Ok(())
}

/// Whether the dataset's storage was never allocated.
fn unallocated(layout: &Layout) -> bool {
    use h5fmt::format::message::ChunkIndex as C;
    match layout {
        Layout::Contiguous { addr, .. } => addr.is_undef(),
        Layout::Chunked(c) => match &c.index {
            C::BTreeV1 { addr }
            | C::SingleChunk { addr, .. }
            | C::Implicit { addr, .. }
            | C::FixedArray { addr, .. }
            | C::ExtensibleArray { addr, .. }
            | C::BTreeV2 { addr, .. } => addr.is_undef(),
        },
        _ => false,
    }
}

/// Whether a group tracks link creation order (link info message with a
/// maximum creation index).
fn track_order(g: &Group) -> bool {
    g.header()
        .find(kind::LINK_INFO)
        .and_then(|m| LinkInfo::decode(&mut Cursor::new(&m.data, 0), g.file().ctx()).ok())
        .is_some_and(|i| i.max_creation_index.is_some())
}
