//! PyTables nodes (PyTables file format 2.0, and the 1.x files PyTables
//! still reads): the system attributes of groups and leaves, and the data of
//! `Array`, `CArray`, `EArray` and `VLArray`. `Table`s are read by
//! `crate::rowtable` (feature `arrow`); [`Node::open`] only recognises them.
//!
//! Each node is told by its `CLASS` attribute and checked against its
//! `VERSION`:
//!
//! | `CLASS` | HDF5 object | `VERSION`s known |
//! |---|---|---|
//! | `GROUP` | group | 1.0 |
//! | `TABLE` | rank-1 compound dataset | 1.x, 2.0–2.7 |
//! | `ARRAY` | dataset (any rank, contiguous or chunked) | 1.x, 2.0–2.4 |
//! | `CARRAY` | chunked dataset | 1.0–1.1 |
//! | `EARRAY` | chunked dataset, one dimension extendable (`EXTDIM`) | 1.0–1.4 |
//! | `VLARRAY` | rank-1 dataset of variable-length sequences | 1.0–1.4 |
//!
//! A `CLASS` or `VERSION` outside this table is reported
//! ([`Error::Unrecognized`], or [`Node::Unknown`] from [`Node::open`]),
//! never read by analogy: PyTables' index nodes (`INDEX`, `INDEXARRAY`,
//! `CACHEARRAY`, `LASTROWARRAY`, …) are among them.
//!
//! A `VLArray` row is a sequence of its atom; the `PSEUDOATOM` attribute
//! (format 2.0; `FLAVOR` `"VLString"` / `"Object"` in 1.x files) changes
//! what a row means:
//!
//! | pseudo-atom | stored as | row |
//! |---|---|---|
//! | `vlstring` | `uint8` sequence | [`VlRow::Bytes`] (PyTables writes UTF-8) |
//! | `vlunicode` | `uint32` sequence of UCS-4 code points | [`VlRow::Text`] |
//! | `object` | `uint8` sequence, a Python pickle | [`VlRow::Bytes`], not unpickled |
//!
//! Values are the dataset's, decoded by `h5fmt`, except PyTables' `Time64`
//! atom (an 8-byte `H5T_TIME`: seconds in the high 32 bits, microseconds in
//! the low 32), which reads as the [`Value::F64`] of seconds PyTables reads.
//!
//! Every error names the node; bad attributes (a `CLASS` that is not a
//! string, `EXTDIM` out of range) and bad rows (a heap object that is not
//! there) are errors, never panics.

use crate::error::{Error, Result};
use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::message::link::LinkTarget;
use h5fmt::{Attribute, Dataset, Datatype, File, Group, Object, Value};

/// Section tag of errors about PyTables nodes.
const SECTION: &str = "PyTables";

fn invalid(path: &str, message: impl Into<String>) -> Error {
    Error::invalid(path, SECTION, message)
}

/// A string attribute (fixed or variable length) of the object at `path`,
/// `None` when `attr` is absent (`Err`); an attribute of another type is
/// an error naming the object.
pub(crate) fn string_attr(
    path: &str,
    name: &str,
    attr: h5fmt::Result<Attribute>,
) -> Result<Option<String>> {
    let Ok(a) = attr else {
        return Ok(None);
    };
    if !matches!(
        a.dtype(),
        Datatype::String { .. } | Datatype::VarLenString { .. }
    ) {
        return Err(invalid(
            path,
            format!("attribute {name} is {}, not a string", a.dtype()),
        ));
    }
    if a.is_empty() {
        // PyTables writes "" as a null-dataspace `S1`.
        return Ok(Some(String::new()));
    }
    a.read_string()
        .map(Some)
        .map_err(|e| invalid(path, format!("attribute {name}: {e}")))
}

/// The name PyTables gives the node class of an object whose `CLASS`
/// attribute is `class` (PyTables' class registry: `Table`, `EArray`,
/// `VLArray`, its index nodes, …), `None` for a `CLASS` PyTables does not
/// register (`DIMENSION_SCALE`, `PALETTE`, …). This names what PyTables
/// would open; it does not check the node ([`Node::open`] does).
///
/// ```
/// assert_eq!(h5table::pytables::node_class_name("EARRAY"), Some("EArray"));
/// assert_eq!(h5table::pytables::node_class_name("DIMENSION_SCALE"), None);
/// ```
pub fn node_class_name(class: &str) -> Option<&'static str> {
    Some(match class {
        "GROUP" => "Group",
        "TABLE" => "Table",
        "ARRAY" => "Array",
        "CARRAY" => "CArray",
        "EARRAY" => "EArray",
        "VLARRAY" => "VLArray",
        // H5IM images, which PyTables opens as arrays.
        "IMAGE" => "ImageArray",
        "INDEX" => "Index",
        "INDEXARRAY" => "IndexArray",
        "CACHEARRAY" => "CacheArray",
        "LASTROWARRAY" => "LastRowArray",
        "TINDEX" => "IndexesTableG",
        "DINDEX" => "IndexesDescG",
        // PyTables 1.x indexes.
        "CINDEX" => "OldIndex",
        "IndexArray" => "OldIndexArray",
        "UNIMPLEMENTED" => "UnImplemented",
        "UNKNOWN" => "Unknown",
        _ => return None,
    })
}

/// The file's `PYTABLES_FORMAT_VERSION` (root group attribute), when present.
///
/// # Errors
/// [`Error::Invalid`] when it is not a string; HDF5 errors opening the root.
pub fn format_version(file: &File) -> Result<Option<String>> {
    let root = file.root()?;
    string_attr(
        "/",
        "PYTABLES_FORMAT_VERSION",
        root.attr("PYTABLES_FORMAT_VERSION"),
    )
}

/// `(major, minor)` of a `"M.m"` version string.
fn parse_version(v: &str) -> Option<(u32, u32)> {
    let (a, b) = v.split_once('.')?;
    Some((a.trim().parse().ok()?, b.trim().parse().ok()?))
}

/// Whether `version` is one of `known`: `(major, highest minor)` pairs.
fn version_known(version: &str, known: &[(u32, u32)]) -> bool {
    parse_version(version)
        .is_some_and(|(ma, mi)| known.iter().any(|&(k, top)| k == ma && mi <= top))
}

/// The versions this module reads, per `CLASS`.
fn known_versions(class: &str) -> Option<&'static [(u32, u32)]> {
    Some(match class {
        "GROUP" => &[(1, 0)],
        "TABLE" => &[(1, u32::MAX), (2, 7)],
        "ARRAY" => &[(1, u32::MAX), (2, 4)],
        "CARRAY" => &[(1, 1)],
        "EARRAY" => &[(1, 4)],
        "VLARRAY" => &[(1, 4)],
        _ => return None,
    })
}

/// The system attributes every PyTables node carries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemAttrs {
    /// HDF5 path of the node.
    pub path: String,
    /// `CLASS`.
    pub class: String,
    /// `VERSION` (of the node class, not of the file format).
    pub version: String,
    /// `TITLE`, when present.
    pub title: Option<String>,
    /// `FLAVOR` (leaves: `numpy`, `python`, `numeric`, …), when present.
    pub flavor: Option<String>,
}

impl SystemAttrs {
    /// Read and check the attributes of the object at `path`; `attr` looks
    /// one up by name. `want` lists the classes the caller reads.
    fn read(
        path: &str,
        attr: &dyn Fn(&str) -> h5fmt::Result<Attribute>,
        want: &[&str],
    ) -> Result<SystemAttrs> {
        let class = string_attr(path, "CLASS", attr("CLASS"))?;
        let version = string_attr(path, "VERSION", attr("VERSION"))?;
        let unrecognized = |why: String| Error::Unrecognized {
            path: path.to_string(),
            class: class.clone(),
            version: version.clone(),
            why,
        };
        let Some(c) = class.as_deref() else {
            return Err(unrecognized("no CLASS attribute".into()));
        };
        if !want.contains(&c) {
            return Err(unrecognized(format!("CLASS {c:?} is not one of {want:?}")));
        }
        let Some(v) = version.as_deref() else {
            return Err(unrecognized(format!("{c} without a VERSION attribute")));
        };
        if !known_versions(c).is_some_and(|k| version_known(v, k)) {
            return Err(unrecognized(format!(
                "{c} VERSION {v:?} is not one this reader knows"
            )));
        }
        Ok(SystemAttrs {
            path: path.to_string(),
            class: c.to_string(),
            version: v.to_string(),
            title: string_attr(path, "TITLE", attr("TITLE"))?,
            flavor: string_attr(path, "FLAVOR", attr("FLAVOR"))?,
        })
    }
}

/// A PyTables group (`CLASS "GROUP"`).
#[derive(Debug, Clone)]
pub struct PyGroup {
    /// System attributes (`flavor` is always `None`).
    pub attrs: SystemAttrs,
    /// The group.
    pub group: Group,
}

impl PyGroup {
    /// Open `g` as a PyTables group.
    ///
    /// # Errors
    /// [`Error::Unrecognized`] for a CLASS other than `GROUP` or an unknown
    /// VERSION; [`Error::Invalid`] for system attributes that are not strings.
    pub fn open(g: &Group) -> Result<PyGroup> {
        let attrs = SystemAttrs::read(g.path(), &|n| g.attr(n), &["GROUP"])?;
        Ok(PyGroup {
            attrs,
            group: g.clone(),
        })
    }
}

/// Which of PyTables' homogeneous array classes a dataset is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArrayKind {
    /// `Array`: fixed shape, contiguous or chunked.
    Array,
    /// `CArray`: fixed shape, chunked.
    CArray,
    /// `EArray`: chunked, extendable along [`PyArray::extdim`].
    EArray,
}

impl ArrayKind {
    /// The `CLASS` attribute value.
    pub fn class(self) -> &'static str {
        match self {
            ArrayKind::Array => "ARRAY",
            ArrayKind::CArray => "CARRAY",
            ArrayKind::EArray => "EARRAY",
        }
    }
}

/// A PyTables `Array`, `CArray` or `EArray`: the dataset's values.
#[derive(Debug, Clone)]
pub struct PyArray {
    /// System attributes.
    pub attrs: SystemAttrs,
    /// The class.
    pub kind: ArrayKind,
    /// The extendable dimension (`EXTDIM`; an `EArray` without it: its one
    /// unlimited dimension), `None` for arrays that are not extendable.
    pub extdim: Option<usize>,
    dataset: Dataset,
}

/// `EXTDIM` of `ds` checked against its rank and maximum shape.
fn extdim(ds: &Dataset, kind: ArrayKind) -> Result<Option<usize>> {
    let rank = ds.shape().len();
    let max = ds.maxshape().unwrap_or_default();
    let d = match ds.attr("EXTDIM") {
        Ok(a) => {
            if !matches!(a.dtype(), Datatype::Integer { .. }) || a.len() != 1 {
                return Err(invalid(
                    ds.path(),
                    format!(
                        "attribute EXTDIM is {} of {} elements, not one integer",
                        a.dtype(),
                        a.len()
                    ),
                ));
            }
            let v = a
                .read::<i64>()
                .ok()
                .and_then(|v| v.first().copied())
                .ok_or_else(|| {
                    invalid(ds.path(), "attribute EXTDIM cannot be read as an integer")
                })?;
            // PyTables writes -1 on Arrays that are not extendable.
            if v < 0 && kind != ArrayKind::EArray {
                return Ok(None);
            }
            match usize::try_from(v) {
                Ok(d) if d < rank => d,
                _ => {
                    return Err(invalid(
                        ds.path(),
                        format!("EXTDIM {v} is outside the dataset's {rank} dimensions"),
                    ))
                }
            }
        }
        Err(_) if kind != ArrayKind::EArray => return Ok(None),
        Err(_) => {
            let mut unlimited = max.iter().enumerate().filter(|(_, m)| m.is_none());
            match (unlimited.next(), unlimited.next()) {
                (Some((d, _)), None) => d,
                _ => {
                    return Err(invalid(
                        ds.path(),
                        "EARRAY without EXTDIM and without exactly one unlimited dimension",
                    ))
                }
            }
        }
    };
    if kind == ArrayKind::EArray && max.get(d).is_some_and(Option::is_some) {
        return Err(invalid(
            ds.path(),
            format!("EXTDIM {d} names a dimension that is not extendable"),
        ));
    }
    Ok(Some(d))
}

impl PyArray {
    /// Open `ds` as an `Array`, `CArray` or `EArray`.
    ///
    /// # Errors
    /// [`Error::Unrecognized`] for another CLASS or an unknown VERSION;
    /// [`Error::Invalid`] for system attributes of the wrong type, an
    /// `EXTDIM` that is not an integer naming an extendable dimension.
    pub fn open(ds: &Dataset) -> Result<PyArray> {
        let attrs = SystemAttrs::read(ds.path(), &|n| ds.attr(n), &["ARRAY", "CARRAY", "EARRAY"])?;
        let kind = match attrs.class.as_str() {
            "ARRAY" => ArrayKind::Array,
            "CARRAY" => ArrayKind::CArray,
            _ => ArrayKind::EArray,
        };
        let extdim = extdim(ds, kind)?;
        Ok(PyArray {
            attrs,
            kind,
            extdim,
            dataset: ds.clone(),
        })
    }
    /// The dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }
    /// The shape (`[]` for a scalar array).
    pub fn shape(&self) -> &[u64] {
        self.dataset.shape()
    }
    /// The atom's datatype as stored.
    pub fn dtype(&self) -> &Datatype {
        self.dataset.dtype()
    }
    /// Every element, row-major (a `Time64` atom as [`Value::F64`], see
    /// the module docs).
    ///
    /// # Errors
    /// HDF5 read and decode errors, naming the node.
    pub fn read_values(&self) -> Result<Vec<Value>> {
        let mut values = self
            .dataset
            .read_values()
            .map_err(|e| invalid(self.dataset.path(), e.to_string()))?;
        values.iter_mut().for_each(|v| time64(v, self.dtype()));
        Ok(values)
    }
}

/// PyTables' `Time64` value: an 8-byte `H5T_TIME` holding seconds since
/// the epoch in its high 32 bits and microseconds in its low 32 bits (both
/// signed), as the double of seconds PyTables reads.
pub fn time64_seconds(t: i64) -> f64 {
    // Both halves fit an i32: the shift leaves 32 significant bits, and the
    // low half is reinterpreted as signed (the cast keeps its bits).
    #[allow(clippy::cast_possible_truncation)]
    let (seconds, micros) = ((t >> 32) as i32, t as i32);
    f64::from(seconds) + f64::from(micros) * 1e-6
}

/// [`time64_seconds`] on a decoded `Time64` value in place (also inside
/// array atoms). `Time32` stays the integer it is.
fn time64(v: &mut Value, dt: &Datatype) {
    match (v, dt) {
        (v @ Value::Time(_), Datatype::Time { size: 8, .. }) => {
            if let Value::Time(t) = *v {
                *v = Value::F64(time64_seconds(t));
            }
        }
        (Value::Array(items), Datatype::Array { base, .. }) => {
            items.iter_mut().for_each(|x| time64(x, base));
        }
        // Nested dimensions of one array atom share its base.
        (Value::Array(items), dt) => items.iter_mut().for_each(|x| time64(x, dt)),
        _ => {}
    }
}

/// A `VLArray` pseudo-atom (`PSEUDOATOM` attribute).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PseudoAtom {
    /// `vlstring`: each row is a byte string (`uint8` sequence).
    VlString,
    /// `vlunicode`: each row is a string of UCS-4 code points (`uint32` sequence).
    VlUnicode,
    /// `object`: each row is a Python pickle (`uint8` sequence).
    Object,
}

/// One `VLArray` row.
#[derive(Debug, Clone, PartialEq)]
pub enum VlRow {
    /// The row's atoms (no pseudo-atom); an array atom is a [`Value::Array`].
    Values(Vec<Value>),
    /// A `vlstring` or `object` row's bytes.
    Bytes(Vec<u8>),
    /// A `vlunicode` row.
    Text(String),
}

/// A PyTables `VLArray`: rows of variable length.
#[derive(Debug, Clone)]
pub struct VlArray {
    /// System attributes.
    pub attrs: SystemAttrs,
    /// The pseudo-atom, when the rows are not plain sequences.
    pub pseudo_atom: Option<PseudoAtom>,
    base: Datatype,
    dataset: Dataset,
}

impl VlArray {
    /// Open `ds` as a `VLArray`.
    ///
    /// # Errors
    /// [`Error::Unrecognized`] for another CLASS, an unknown VERSION or
    /// `PSEUDOATOM`; [`Error::Invalid`] for a dataset that is not a rank-1
    /// variable-length sequence, a pseudo-atom over the wrong base type,
    /// attributes of the wrong type.
    pub fn open(ds: &Dataset) -> Result<VlArray> {
        let path = ds.path();
        let attrs = SystemAttrs::read(path, &|n| ds.attr(n), &["VLARRAY"])?;
        let Datatype::VarLenSequence { base, .. } = ds.dtype() else {
            return Err(invalid(
                path,
                format!(
                    "VLARRAY of datatype {}, not a variable-length sequence",
                    ds.dtype()
                ),
            ));
        };
        if ds.shape().len() != 1 {
            return Err(invalid(
                path,
                format!("VLARRAY of rank {}, not 1", ds.shape().len()),
            ));
        }
        let old = parse_version(&attrs.version).is_some_and(|(m, n)| m == 1 && n < 3);
        let pseudo_atom = match string_attr(path, "PSEUDOATOM", ds.attr("PSEUDOATOM"))?.as_deref() {
            Some("vlstring") => Some(PseudoAtom::VlString),
            Some("vlunicode") => Some(PseudoAtom::VlUnicode),
            Some("object") => Some(PseudoAtom::Object),
            Some(other) => {
                return Err(Error::Unrecognized {
                    path: path.to_string(),
                    class: Some(attrs.class),
                    version: Some(attrs.version),
                    why: format!("PSEUDOATOM {other:?} is not one this reader knows"),
                })
            }
            // Before PSEUDOATOM (VLARRAY 1.3), FLAVOR named them.
            None if old => match attrs.flavor.as_deref() {
                Some("VLString") => Some(PseudoAtom::VlString),
                Some("Object") => Some(PseudoAtom::Object),
                _ => None,
            },
            None => None,
        };
        let width = match pseudo_atom {
            None => None,
            Some(PseudoAtom::VlString | PseudoAtom::Object) => Some(1),
            Some(PseudoAtom::VlUnicode) => Some(4),
        };
        if let Some(w) = width {
            if !matches!(**base, Datatype::Integer { .. }) || base.size() != w {
                return Err(invalid(
                    path,
                    format!("pseudo-atom {pseudo_atom:?} over {base}, not a {w}-byte integer"),
                ));
            }
        }
        Ok(VlArray {
            base: (**base).clone(),
            attrs,
            pseudo_atom,
            dataset: ds.clone(),
        })
    }
    /// The dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }
    /// The atom's datatype (the sequences' base type) as stored.
    pub fn atom(&self) -> &Datatype {
        &self.base
    }
    /// The number of rows.
    pub fn nrows(&self) -> u64 {
        self.dataset.shape().first().copied().unwrap_or(0)
    }

    /// Rows `rows`.
    ///
    /// # Errors
    /// [`Error::Usage`] for rows past [`VlArray::nrows`]; [`Error::Invalid`]
    /// naming the node for rows that cannot be read (a heap object that is
    /// missing or short, a `vlunicode` code point that is not a character).
    pub fn read_rows(&self, rows: Range<u64>) -> Result<Vec<VlRow>> {
        let path = self.dataset.path();
        if rows.start > rows.end || rows.end > self.nrows() {
            return Err(Error::usage(format!(
                "{path}: rows {}..{} outside [0, {})",
                rows.start,
                rows.end,
                self.nrows()
            )));
        }
        if rows.start == rows.end {
            return Ok(Vec::new());
        }
        let count = rows.end - rows.start;
        let sel = Selection::Hyperslab(vec![SliceDim {
            start: rows.start,
            stride: 1,
            count,
            block: 1,
        }]);
        let file = self.dataset.file();
        let values = self
            .dataset
            .read_slice_raw(&sel)
            .and_then(|raw| {
                h5fmt::data::decode::decode_elements(
                    self.dataset.dtype(),
                    &raw,
                    count,
                    file.ctx(),
                    &file.heap(),
                )
            })
            .map_err(|e| invalid(path, format!("rows {}..{}: {e}", rows.start, rows.end)))?;
        values
            .into_iter()
            .zip(rows)
            .map(|(v, row)| {
                let Value::Vlen(items) = v else {
                    return Err(invalid(path, format!("row {row} is not a sequence")));
                };
                self.row(items)
                    .map_err(|m| invalid(path, format!("row {row}: {m}")))
            })
            .collect()
    }

    fn row(&self, items: Vec<Value>) -> core::result::Result<VlRow, String> {
        let uint = |v: &Value| match *v {
            Value::UInt(u) => Some(u),
            Value::Int(i) => u64::try_from(i).ok(),
            _ => None,
        };
        match self.pseudo_atom {
            None => {
                let mut items = items;
                items.iter_mut().for_each(|v| time64(v, &self.base));
                Ok(VlRow::Values(items))
            }
            Some(PseudoAtom::VlString | PseudoAtom::Object) => items
                .iter()
                .map(|v| uint(v).and_then(|u| u8::try_from(u).ok()))
                .collect::<Option<Vec<u8>>>()
                .map(VlRow::Bytes)
                .ok_or_else(|| "an element is not a byte".into()),
            Some(PseudoAtom::VlUnicode) => items
                .iter()
                .map(|v| {
                    let u = uint(v).ok_or("an element is not an unsigned integer")?;
                    u32::try_from(u)
                        .ok()
                        .and_then(char::from_u32)
                        .ok_or_else(|| format!("{u:#x} is not a Unicode code point"))
                })
                .collect::<core::result::Result<String, String>>()
                .map(VlRow::Text),
        }
    }
}

/// A PyTables node, by its `CLASS`.
#[derive(Debug, Clone)]
pub enum Node {
    /// `GROUP`.
    Group(PyGroup),
    /// `TABLE`: read it with `crate::rowtable::RowTable` (feature `arrow`).
    Table {
        /// System attributes.
        attrs: SystemAttrs,
        /// The dataset.
        dataset: Box<Dataset>,
    },
    /// `ARRAY`, `CARRAY`, `EARRAY`.
    Array(Box<PyArray>),
    /// `VLARRAY`.
    VlArray(Box<VlArray>),
    /// An object this module does not read: no or another `CLASS`, an
    /// unknown `VERSION` or pseudo-atom, a named datatype.
    Unknown {
        /// HDF5 path.
        path: String,
        /// `CLASS`, when a string.
        class: Option<String>,
        /// `VERSION`, when a string.
        version: Option<String>,
        /// Why it is not read.
        why: String,
    },
}

impl Node {
    /// Recognise `obj`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the object for a known class whose
    /// attributes or layout are wrong (unknown classes and versions are
    /// [`Node::Unknown`], not errors).
    pub fn open(obj: &Object) -> Result<Node> {
        let r =
            match obj {
                Object::Group(g) => PyGroup::open(g).map(Node::Group),
                Object::Dataset(ds) => {
                    match string_attr(ds.path(), "CLASS", ds.attr("CLASS"))?.as_deref() {
                        Some("TABLE") => SystemAttrs::read(ds.path(), &|n| ds.attr(n), &["TABLE"])
                            .map(|attrs| Node::Table {
                                attrs,
                                dataset: ds.clone(),
                            }),
                        Some("VLARRAY") => VlArray::open(ds).map(|v| Node::VlArray(Box::new(v))),
                        _ => PyArray::open(ds).map(|a| Node::Array(Box::new(a))),
                    }
                }
                Object::Datatype(t) => Ok(Node::Unknown {
                    path: t.path().to_string(),
                    class: None,
                    version: None,
                    why: "a named datatype".into(),
                }),
            };
        match r {
            Err(Error::Unrecognized {
                path,
                class,
                version,
                why,
            }) => Ok(Node::Unknown {
                path,
                class,
                version,
                why,
            }),
            r => r,
        }
    }

    /// HDF5 path of the node.
    pub fn path(&self) -> &str {
        match self {
            Node::Group(g) => &g.attrs.path,
            Node::Table { attrs, .. } => &attrs.path,
            Node::Array(a) => &a.attrs.path,
            Node::VlArray(v) => &v.attrs.path,
            Node::Unknown { path, .. } => path,
        }
    }
}

/// Every object reachable from the root through hard links, once each (the
/// first path found), groups before their members, members sorted by name;
/// soft and external links are not followed. Each entry is the object's
/// path and [`Node::open`]'s result, so one broken node does not hide the
/// others.
///
/// # Errors
/// HDF5 errors listing a group or opening an object's header.
pub fn walk(file: &File) -> Result<Vec<(String, Result<Node>)>> {
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    let root = file.root()?;
    seen.insert(root.addr());
    let mut stack = vec![Object::Group(root)];
    while let Some(obj) = stack.pop() {
        let node = Node::open(&obj);
        if let Object::Group(g) = &obj {
            let base = if g.path() == "/" { "" } else { g.path() };
            let mut members = Vec::new();
            for link in g.links()? {
                if let LinkTarget::Hard(addr) = link.target {
                    if seen.insert(addr) {
                        members.push(file.object_at(addr, &format!("{base}/{}", link.name))?);
                    }
                }
            }
            stack.extend(members.into_iter().rev());
        }
        out.push((obj.path().to_string(), node));
    }
    Ok(out)
}
