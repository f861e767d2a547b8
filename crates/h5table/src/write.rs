//! Writing HEP001 tables (feature `std`): [`TableWriter`] creates a table
//! group in a new file ([`h5fmt::FileWriter`]) or in an existing one
//! ([`h5fmt::FileEditor`]); [`TableEditor`] changes an existing table by
//! the §11 protocol (append, preallocate, truncate, update cells, add and
//! drop columns), with `NROWS` as the single crash-safe commit point.
//!
//! What is written, attribute by attribute (matching libhdf5-written
//! HEP001 files):
//!
//! * `CLASS`: scalar 13-byte NUL-terminated ASCII `"COLUMN_TABLE"` (§7.1);
//! * `VERSION`: scalar fixed-length ASCII `"1.0"`, sized to the value (§7.2);
//! * `NROWS`, `GENERATION`: scalar `uint64` (§7.3; `GENERATION` starts at 0
//!   and grows by one with every committed change);
//! * `TITLE`, `description`, `units`, `units_vocabulary`, `_index`: scalar
//!   fixed-length UTF-8, NUL-padded, sized to the value;
//! * `column-order`: 1-D fixed-length UTF-8 of the longest name's size;
//! * `INDEX_COLUMNS` (1-D), `CATEGORIES` (scalar): `H5T_STD_REF` object
//!   references (§5), never `H5T_STD_REF_OBJ`;
//! * `ordered`: the §6 boolean enum; `valid_min`/`valid_max`: scalars of
//!   the column's datatype.
//!
//! Every column is a chunked, unlimited rank-1 dataset with a user-defined
//! fill value (§8.5), its own chunk length and filters (§8.4).
//!
//! Search indexes (§10): [`ColumnSpec::index`] (with
//! [`TableWriter::create_in`]) and [`TableEditor::build_index`] write
//! `CHUNK_MINMAX`, `SORTED_ROWS`, `BITMAP` and `CHUNK_BLOOM` ([`IndexSpec`])
//! with the validity tokens `SOURCE_GENERATION`/`SOURCE_NROWS`;
//! [`TableEditor`] keeps them consistent across appends, truncations and
//! updates (see its documentation for the crash-safe order).
//!
//! ```no_run
//! use h5table::write::{IndexSpec, TableEditor};
//! let mut ed = h5fmt::FileEditor::open("events.h5")?;
//! let mut t = TableEditor::open(&mut ed, "/my_table")?;
//! t.build_index("energy", IndexSpec::minmax())?;
//! t.build_index("id", IndexSpec::ChunkBloom { fpr: 0.001, seed: 0 })?;
//! # Ok::<(), h5table::Error>(())
//! ```

mod data;
mod edit;
mod index;
pub mod pytables;
mod rowtable;
pub use rowtable::append_records;

pub use data::{ColumnData, FillSpec, Scalar};
pub use edit::TableEditor;
#[doc(hidden)]
pub use index::force_generic_index_paths;
pub use index::{bloom_size, kind_allowed, minmax_dtype, AppendIndexes, IndexSpec};

use crate::error::{Error, Result};
use crate::model::RESERVED_NAMES;
use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use data::{encode, fill_rows, resolve_fill, Encoded, FillBytes, Target};
use h5fmt::format::datatype::{CharSet, Datatype, StringPad};
use h5fmt::write::edit::NewDataset;
use h5fmt::write::{AttrValue, ObjectId};
use h5fmt::{FileEditor, FileWriter};

/// Default chunk size in bytes when a column gives no chunk length.
const DEFAULT_CHUNK_BYTES: u64 = 64 * 1024;

/// The declaration of one column: datatype, storage, fill value, metadata.
#[derive(Debug, Clone)]
pub struct ColumnSpec {
    name: String,
    dtype: Datatype,
    chunk: Option<u64>,
    deflate: Option<u8>,
    shuffle: bool,
    zstd: Option<i32>,
    lz4: bool,
    fill: FillSpec,
    valid: Option<(Scalar, Scalar)>,
    categories: Option<String>,
    units: Option<String>,
    units_vocabulary: Option<String>,
    description: Option<String>,
    indexes: Vec<IndexSpec>,
}

impl ColumnSpec {
    /// A column `name` of element datatype `dtype` (any fixed-size type or
    /// a variable-length string), default chunking (about 64 KiB per
    /// chunk), no filters, the Table 1 fill value.
    pub fn new(name: &str, dtype: Datatype) -> Self {
        ColumnSpec {
            name: name.to_owned(),
            dtype,
            chunk: None,
            deflate: None,
            shuffle: false,
            zstd: None,
            lz4: false,
            fill: FillSpec::Sentinel,
            valid: None,
            categories: None,
            units: None,
            units_vocabulary: None,
            description: None,
            indexes: Vec::new(),
        }
    }
    /// Build a search index of this kind on the column (§10), after the
    /// rows are written ([`TableWriter::create_in`] only; refused by
    /// [`TableWriter::write`]). At most one index per family and column.
    pub fn index(mut self, spec: IndexSpec) -> Self {
        if !self.indexes.iter().any(|s| s.kind() == spec.kind()) {
            self.indexes.push(spec);
        }
        self
    }
    /// The column name.
    pub fn name(&self) -> &str {
        &self.name
    }
    /// Rows per chunk (at least 1).
    pub fn chunk(mut self, rows: u64) -> Self {
        self.chunk = Some(rows);
        self
    }
    /// Deflate (gzip) at `level` 0–9.
    pub fn deflate(mut self, level: u8) -> Self {
        self.deflate = Some(level);
        self
    }
    /// The shuffle filter (before compression).
    pub fn shuffle(mut self) -> Self {
        self.shuffle = true;
        self
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
    /// The fill value (default [`FillSpec::Sentinel`]).
    pub fn fill(mut self, fill: FillSpec) -> Self {
        self.fill = fill;
        self
    }
    /// The logical value range, written as `valid_min`/`valid_max`; the
    /// fill must lie strictly outside it (§8.5), else writing fails.
    pub fn valid_range(mut self, min: Scalar, max: Scalar) -> Self {
        self.valid = Some((min, max));
        self
    }
    /// Make this integer column categorical: its codes index the
    /// categories dataset `name` declared with [`TableWriter::categories`]
    /// (or, for [`TableEditor::add_column`], existing under `CATEGORIES`).
    pub fn categorical(mut self, categories: &str) -> Self {
        self.categories = Some(categories.to_owned());
        self
    }
    /// `units`.
    pub fn units(mut self, units: &str) -> Self {
        self.units = Some(units.to_owned());
        self
    }
    /// `units_vocabulary`.
    pub fn units_vocabulary(mut self, v: &str) -> Self {
        self.units_vocabulary = Some(v.to_owned());
        self
    }
    /// `description`.
    pub fn description(mut self, d: &str) -> Self {
        self.description = Some(d.to_owned());
        self
    }

    fn chunk_len(&self) -> u64 {
        match self.chunk {
            Some(c) => c,
            None => (DEFAULT_CHUNK_BYTES / self.dtype.size().max(1)).clamp(16, 65536),
        }
    }
}

/// A categories dataset (§8.7) under the table's `CATEGORIES` group.
#[derive(Debug, Clone)]
struct CategoriesSpec {
    name: String,
    dtype: Datatype,
    labels: ColumnData,
    ordered: bool,
}

/// Creates a HEP001 table: declare columns, categories, index columns and
/// table attributes, then [`TableWriter::write`] it into a new file or
/// [`TableWriter::create_in`] an existing one.
///
/// ```
/// use h5table::write::{ColumnData, ColumnSpec, FillSpec, TableWriter};
/// use h5fmt::{Datatype, FileWriter};
///
/// let mut w = FileWriter::in_memory();
/// TableWriter::new()
///     .title("Sample run")
///     .column(ColumnSpec::new("row_id", Datatype::int_le(8, false)).chunk(1024))
///     .column(ColumnSpec::new("energy", Datatype::float_le(4)).units("MeV").deflate(4))
///     .column(ColumnSpec::new("label", Datatype::int_le(1, true)).categorical("labels"))
///     .categories("labels", Datatype::vlen_utf8(), ColumnData::strs(&["a", "b", "c"]), false)
///     .index_columns(&["row_id"])
///     .write_at(&mut w, "/runs/my_table", &[
///         ("row_id", ColumnData::UInt64(vec![10, 11, 12])),
///         ("energy", ColumnData::Float32(vec![1.5, 2.5, 0.0]).with_missing(vec![false, false, true])),
///         ("label", ColumnData::Int8(vec![0, 2, 1])),
///     ])?;
/// let bytes = w.finish()?;
/// let file = h5fmt::File::from_bytes(bytes)?;
/// let table = h5table::Table::open(&file.group("/runs/my_table")?)?;
/// assert_eq!(table.nrows(), 3);
/// # Ok::<(), h5table::Error>(())
/// ```
#[derive(Debug, Clone, Default)]
pub struct TableWriter {
    title: Option<String>,
    description: Option<String>,
    units_vocabulary: Option<String>,
    columns: Vec<ColumnSpec>,
    categories: Vec<CategoriesSpec>,
    index: Vec<String>,
    reserve: u64,
}

/// One prepared column: spec, fill, encoded rows.
struct Prepared<'a> {
    spec: &'a ColumnSpec,
    fill: FillBytes,
    rows: Encoded,
    valid: Option<(Vec<u8>, Vec<u8>)>,
}

pub(crate) fn usage(m: impl Into<String>) -> Error {
    Error::Usage(m.into())
}

/// A scalar fixed-length NUL-padded UTF-8 string sized to the value.
pub(crate) fn utf8_attr(s: &str) -> AttrValue {
    AttrValue::raw(
        Datatype::String {
            size: u32::try_from(s.len().max(1)).unwrap_or(u32::MAX),
            pad: StringPad::NullPad,
            cset: CharSet::Utf8,
        },
        None,
        if s.is_empty() {
            vec![0]
        } else {
            s.as_bytes().to_vec()
        },
    )
}

/// A 1-D fixed-length NUL-padded UTF-8 string array of the longest size.
pub(crate) fn utf8_list(v: &[String]) -> AttrValue {
    let size = v.iter().map(String::len).max().unwrap_or(1).max(1);
    let mut bytes = Vec::with_capacity(size * v.len());
    for s in v {
        bytes.extend_from_slice(s.as_bytes());
        bytes.resize(bytes.len() + size - s.len(), 0);
    }
    AttrValue::raw(
        Datatype::String {
            size: u32::try_from(size).unwrap_or(u32::MAX),
            pad: StringPad::NullPad,
            cset: CharSet::Utf8,
        },
        Some(vec![v.len() as u64]),
        bytes,
    )
}

/// `CLASS`: 13-byte NUL-terminated ASCII (§7.1).
pub(crate) fn class_attr() -> AttrValue {
    let mut b = crate::CLASS_VALUE.as_bytes().to_vec();
    b.push(0);
    AttrValue::raw(
        Datatype::String {
            size: 13,
            pad: StringPad::NullTerm,
            cset: CharSet::Ascii,
        },
        None,
        b,
    )
}

/// Refuse reserved and malformed column names (§8.1, §13.2).
pub(crate) fn check_column_name(name: &str) -> Result<()> {
    if name.is_empty() || name.contains('/') || name.contains('\0') || name == "." {
        return Err(usage(format!(
            "invalid column name {name:?}: empty, \".\", or containing '/' or NUL"
        )));
    }
    if RESERVED_NAMES.contains(&name) {
        return Err(usage(format!(
            "{name:?} is a HEP001 reserved name (§13.2) and cannot name a column"
        )));
    }
    Ok(())
}

fn check_chunk(spec: &ColumnSpec) -> Result<()> {
    if spec.chunk_len() == 0 {
        return Err(usage(format!(
            "column {:?}: chunk length must be at least 1",
            spec.name
        )));
    }
    Ok(())
}

/// `valid_min`/`valid_max` bytes, checking the fill lies strictly outside.
fn resolve_valid(spec: &ColumnSpec, fill: &FillBytes) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
    let Some((lo, hi)) = spec.valid else {
        return Ok(None);
    };
    let bad = |m: &str| usage(format!("column {:?}: {m}", spec.name));
    if !matches!(
        spec.dtype,
        Datatype::Integer { .. } | Datatype::Float { .. }
    ) {
        return Err(bad("valid_min/valid_max need an integer or float column"));
    }
    let lo_b = data::scalar_bytes(lo, &spec.dtype)
        .ok_or_else(|| bad("valid_min does not fit the column's datatype"))?;
    let hi_b = data::scalar_bytes(hi, &spec.dtype)
        .ok_or_else(|| bad("valid_max does not fit the column's datatype"))?;
    let (Some(l), Some(h)) = (
        data::numeric_value(&lo_b, &spec.dtype),
        data::numeric_value(&hi_b, &spec.dtype),
    ) else {
        return Err(bad("unreadable valid range"));
    };
    if l > h {
        return Err(bad("valid_min exceeds valid_max"));
    }
    if !fill.is_nan {
        let inside = match (
            data::integer_value(&fill.bytes, &spec.dtype),
            data::integer_value(&lo_b, &spec.dtype),
            data::integer_value(&hi_b, &spec.dtype),
        ) {
            (Some(f), Some(a), Some(b)) => f >= a && f <= b,
            _ => data::numeric_value(&fill.bytes, &spec.dtype).is_some_and(|f| f >= l && f <= h),
        };
        if inside {
            return Err(bad(
                "the fill value lies inside [valid_min, valid_max]; it must lie strictly outside (§8.5)",
            ));
        }
    }
    Ok(Some((lo_b, hi_b)))
}

impl TableWriter {
    /// An empty declaration.
    pub fn new() -> Self {
        TableWriter::default()
    }
    /// `TITLE`.
    pub fn title(mut self, t: &str) -> Self {
        self.title = Some(t.to_owned());
        self
    }
    /// The table's `description`.
    pub fn description(mut self, d: &str) -> Self {
        self.description = Some(d.to_owned());
        self
    }
    /// The table's `units_vocabulary`.
    pub fn units_vocabulary(mut self, v: &str) -> Self {
        self.units_vocabulary = Some(v.to_owned());
        self
    }
    /// Add a column (the logical order is the order of these calls, written
    /// as `column-order`).
    pub fn column(mut self, spec: ColumnSpec) -> Self {
        self.columns.push(spec);
        self
    }
    /// Declare categories dataset `name` (under `CATEGORIES`) holding
    /// `labels` of datatype `dtype`, with the `ordered` flag. Several
    /// columns may share it.
    pub fn categories(
        mut self,
        name: &str,
        dtype: Datatype,
        labels: ColumnData,
        ordered: bool,
    ) -> Self {
        self.categories.push(CategoriesSpec {
            name: name.to_owned(),
            dtype,
            labels,
            ordered,
        });
        self
    }
    /// The row index columns, outermost first (`INDEX_COLUMNS`, and
    /// `_index` = the first).
    pub fn index_columns(mut self, names: &[&str]) -> Self {
        self.index = names.iter().map(|s| (*s).to_owned()).collect();
        self
    }
    /// Preallocate storage for `rows` more rows past the data, rounded up
    /// to whole chunks of the longest-chunked column (§11.3). `NROWS`
    /// counts only the data.
    pub fn reserve(mut self, rows: u64) -> Self {
        self.reserve = rows;
        self
    }

    /// Validate the declaration and encode every column and the categories.
    #[allow(clippy::type_complexity)]
    fn prepare<'a>(
        &'a self,
        rows: &[(&str, ColumnData)],
    ) -> Result<(
        u64,
        u64,
        Vec<Prepared<'a>>,
        Vec<(&'a CategoriesSpec, Encoded)>,
    )> {
        let mut cats = Vec::new();
        for c in &self.categories {
            if c.name.is_empty() || c.name.contains('/') || c.name.contains('\0') {
                return Err(usage(format!("invalid categories name {:?}", c.name)));
            }
            if self.categories.iter().filter(|x| x.name == c.name).count() > 1 {
                return Err(usage(format!("categories {:?} declared twice", c.name)));
            }
            data::check_column_dtype(&c.name, &c.dtype)?;
            // Labels have no fill of their own; nothing is missing.
            let none = FillBytes {
                bytes: Vec::new(),
                is_nan: false,
                vlen: None,
            };
            let enc = encode(
                &Target {
                    name: &c.name,
                    dtype: &c.dtype,
                    fill: &none,
                    n_categories: None,
                },
                &c.labels,
            )?;
            cats.push((c, enc));
        }
        if self.columns.is_empty() {
            return Err(usage("a table needs at least one column"));
        }
        let mut nrows: Option<u64> = None;
        let mut prepared = Vec::new();
        for spec in &self.columns {
            check_column_name(&spec.name)?;
            check_chunk(spec)?;
            data::check_column_dtype(&spec.name, &spec.dtype)?;
            if self.columns.iter().filter(|c| c.name == spec.name).count() > 1 {
                return Err(usage(format!("column {:?} declared twice", spec.name)));
            }
            let fill = resolve_fill(&spec.name, &spec.dtype, &spec.fill)?;
            let valid = resolve_valid(spec, &fill)?;
            let n_categories = match &spec.categories {
                None => None,
                Some(cn) => {
                    if !matches!(spec.dtype, Datatype::Integer { .. }) {
                        return Err(usage(format!(
                            "categorical column {:?} must have an integer datatype (§8.7)",
                            spec.name
                        )));
                    }
                    let (c, enc) = cats.iter().find(|(c, _)| &c.name == cn).ok_or_else(|| {
                        usage(format!(
                            "column {:?}: no categories {cn:?} declared",
                            spec.name
                        ))
                    })?;
                    let n = enc.len(c.dtype.size());
                    check_cat_fill(&spec.name, &spec.dtype, &fill, n)?;
                    Some(n)
                }
            };
            let given: Vec<&ColumnData> = rows
                .iter()
                .filter(|(n, _)| *n == spec.name)
                .map(|(_, d)| d)
                .collect();
            let enc = match given.as_slice() {
                [] if rows.is_empty() => fill_rows(&spec.dtype, &fill, 0)?,
                [] => {
                    return Err(usage(format!("no data given for column {:?}", spec.name)));
                }
                [d] => encode(
                    &Target {
                        name: &spec.name,
                        dtype: &spec.dtype,
                        fill: &fill,
                        n_categories,
                    },
                    d,
                )?,
                _ => return Err(usage(format!("column {:?} given twice", spec.name))),
            };
            let n = enc.len(spec.dtype.size());
            match nrows {
                Some(m) if m != n => {
                    return Err(usage(format!(
                        "column {:?} has {n} rows, others {m}",
                        spec.name
                    )))
                }
                _ => nrows = Some(n),
            }
            prepared.push(Prepared {
                spec,
                fill,
                rows: enc,
                valid,
            });
        }
        for (n, _) in rows {
            if !self.columns.iter().any(|c| c.name == *n) {
                return Err(usage(format!("data for unknown column {n:?}")));
            }
        }
        for i in &self.index {
            if !self.columns.iter().any(|c| &c.name == i) {
                return Err(usage(format!("index column {i:?} is not a column")));
            }
        }
        for c in &self.categories {
            if !self
                .columns
                .iter()
                .any(|s| s.categories.as_deref() == Some(c.name.as_str()))
            {
                return Err(usage(format!(
                    "categories {:?} back no column (§12 requires every categories dataset be referenced)",
                    c.name
                )));
            }
        }
        let nrows = nrows.unwrap_or(0);
        let extent = if self.reserve == 0 {
            nrows
        } else {
            let c = self
                .columns
                .iter()
                .map(ColumnSpec::chunk_len)
                .max()
                .unwrap_or(1)
                .max(1);
            nrows
                .checked_add(self.reserve)
                .and_then(|x| x.checked_add(c - 1))
                .map(|x| x / c * c)
                .ok_or_else(|| usage("reserved rows overflow"))?
        };
        Ok((nrows, extent, prepared, cats))
    }

    /// Write the table into group `group` of a new file (e.g.
    /// [`ObjectId::ROOT`] for a root table): its columns with `rows` (one
    /// entry per column, equal lengths; an empty slice for an empty
    /// table), categories and attributes, with `NROWS` = the row count and
    /// `GENERATION` = 0.
    ///
    /// # Errors
    /// `Usage` for a bad declaration or data (reserved or duplicate names,
    /// a type mismatch, unequal lengths, a fill inside the valid range or
    /// colliding with a category code, …), found before anything is
    /// written; HDF5 errors.
    pub fn write(
        &self,
        w: &mut FileWriter,
        group: ObjectId,
        rows: &[(&str, ColumnData)],
    ) -> Result<()> {
        if let Some(c) = self.columns.iter().find(|c| !c.indexes.is_empty()) {
            return Err(usage(format!(
                "column {:?} asks for search indexes: they are built in existing files \
                 (TableWriter::create_in, TableEditor::build_index), not by TableWriter::write",
                c.name
            )));
        }
        let (nrows, extent, prepared, cats) = self.prepare(rows)?;
        let mut cat_ids = Vec::new();
        if !cats.is_empty() {
            let cg = w.group(group)?.create_group("CATEGORIES")?.id();
            for (c, enc) in &cats {
                let n = enc.len(c.dtype.size());
                let mut gw = w.group(cg)?;
                let b = gw
                    .create_dataset(&c.name)
                    .dtype(c.dtype.clone())
                    .shape(&[n]);
                let id = match enc {
                    Encoded::Fixed(bytes) => b.write_raw(bytes)?,
                    Encoded::VarLen(v) => b.write_varlen(v.clone())?,
                };
                w.set_attr(id, "ordered", c.ordered)?;
                cat_ids.push((c.name.clone(), id));
            }
        }
        let mut col_ids = Vec::new();
        for p in &prepared {
            let s = p.spec;
            let tail = extent - nrows;
            // A non-empty variable-length fill string lives in the heap.
            let fill_str = p.fill.vlen.clone().unwrap_or_default();
            let in_file =
                if matches!(s.dtype, Datatype::VarLenString { .. }) && !fill_str.is_empty() {
                    let len =
                        u32::try_from(fill_str.len()).map_err(|_| usage("fill string too long"))?;
                    let (addr, idx) = w.put_global_heap_object(&fill_str)?;
                    let mut e = Vec::with_capacity(16);
                    e.extend_from_slice(&len.to_le_bytes());
                    e.extend_from_slice(&addr.get().to_le_bytes());
                    e.extend_from_slice(&idx.to_le_bytes());
                    Some(e)
                } else if matches!(s.dtype, Datatype::VarLenString { .. }) {
                    // The empty string: a zero-length descriptor.
                    Some(p.fill.bytes.clone())
                } else {
                    None
                };
            let mut gw = w.group(group)?;
            let mut b = gw
                .create_dataset(&s.name)
                .dtype(s.dtype.clone())
                .shape(&[extent])
                .maxshape(&[None])
                .chunks(&[s.chunk_len()]);
            if s.shuffle {
                b = b.shuffle();
            }
            if let Some(l) = s.deflate {
                b = b.deflate(l);
            }
            if let Some(l) = s.zstd {
                b = b.zstd(l);
            }
            if s.lz4 {
                b = b.lz4();
            }
            b = match &in_file {
                Some(e) => b.fill_value_in_file(e),
                None => b.fill_value(&p.fill.bytes),
            };
            let id = match &p.rows {
                Encoded::Fixed(bytes) => {
                    let mut all = bytes.clone();
                    if let Encoded::Fixed(t) = fill_rows(&s.dtype, &p.fill, tail)? {
                        all.extend_from_slice(&t);
                    }
                    b.write_raw(&all)?
                }
                Encoded::VarLen(v) => {
                    let mut all = v.clone();
                    if let Encoded::VarLen(t) = fill_rows(&s.dtype, &p.fill, tail)? {
                        all.extend(t);
                    }
                    b.write_varlen(all)?
                }
            };
            if let Some((lo, hi)) = &p.valid {
                w.set_attr(
                    id,
                    "valid_min",
                    AttrValue::raw(s.dtype.clone(), None, lo.clone()),
                )?;
                w.set_attr(
                    id,
                    "valid_max",
                    AttrValue::raw(s.dtype.clone(), None, hi.clone()),
                )?;
            }
            if let Some(cn) = &s.categories {
                if let Some((_, cid)) = cat_ids.iter().find(|(n, _)| n == cn) {
                    w.set_attr_object_refs(id, "CATEGORIES", &[*cid], true)?;
                }
            }
            for (k, v) in [
                ("units", &s.units),
                ("units_vocabulary", &s.units_vocabulary),
                ("description", &s.description),
            ] {
                if let Some(v) = v {
                    w.set_attr(id, k, utf8_attr(v))?;
                }
            }
            col_ids.push((s.name.clone(), id));
        }
        w.set_attr(group, "CLASS", class_attr())?;
        w.set_attr(group, "VERSION", AttrValue::fixed_ascii("1.0"))?;
        w.set_attr(group, "NROWS", nrows)?;
        w.set_attr(group, "GENERATION", 0u64)?;
        let order: Vec<String> = self.columns.iter().map(|c| c.name.clone()).collect();
        w.set_attr(group, "column-order", utf8_list(&order))?;
        if let Some(t) = &self.title {
            w.set_attr(group, "TITLE", utf8_attr(t))?;
        }
        if let Some(t) = &self.description {
            w.set_attr(group, "description", utf8_attr(t))?;
        }
        if let Some(t) = &self.units_vocabulary {
            w.set_attr(group, "units_vocabulary", utf8_attr(t))?;
        }
        if !self.index.is_empty() {
            let ids: Vec<ObjectId> = self
                .index
                .iter()
                .filter_map(|n| col_ids.iter().find(|(c, _)| c == n).map(|(_, id)| *id))
                .collect();
            w.set_attr_object_refs(group, "INDEX_COLUMNS", &ids, false)?;
            w.set_attr(group, "_index", utf8_attr(&self.index[0]))?;
        }
        Ok(())
    }

    /// Create the groups of `path` (absolute; `/` is the root group, which
    /// then becomes the table) in a new file and write the table there as
    /// [`TableWriter::write`] does; returns the table group.
    ///
    /// # Errors
    /// As [`TableWriter::write`]; `Usage` when a group on the path exists
    /// already (a new file's groups cannot be looked up by path).
    pub fn write_at(
        &self,
        w: &mut FileWriter,
        path: &str,
        rows: &[(&str, ColumnData)],
    ) -> Result<ObjectId> {
        // Validate first: nothing is created for a bad declaration.
        self.prepare(rows)?;
        let mut g = ObjectId::ROOT;
        for part in path.split('/').filter(|p| !p.is_empty()) {
            g = w.group(g)?.create_group(part)?.id();
        }
        self.write(w, g, rows)?;
        Ok(g)
    }

    /// Create the table in an existing file at `path` (absolute): the
    /// missing groups of the path are created, the table group must not
    /// exist, or be an empty group that is not a table. Columns of
    /// variable-length strings and the zstd and lz4 filters are not
    /// available in existing files. `CLASS` and `NROWS` are written by the
    /// last commit, so a crash before leaves no table (a group without
    /// `CLASS` is not one).
    ///
    /// # Errors
    /// As [`TableWriter::write`], checked before the file changes; `Usage`
    /// for an existing table or a non-empty group at `path`.
    pub fn create_in(
        &self,
        ed: &mut FileEditor,
        path: &str,
        rows: &[(&str, ColumnData)],
    ) -> Result<()> {
        let (nrows, extent, prepared, cats) = self.prepare(rows)?;
        for c in &self.columns {
            for ix in &c.indexes {
                if !kind_allowed(&ix.kind(), &c.dtype) {
                    return Err(usage(format!(
                        "a {} index is not permitted on column {:?} (§10)",
                        ix.kind().as_str(),
                        c.name
                    )));
                }
            }
        }
        let path = normalize(path);
        match ed.reader().object(&path) {
            Ok(h5fmt::Object::Group(g)) => {
                if crate::model::is_table_group(&g) {
                    return Err(usage(format!("{path} is already a table")));
                }
                if !g.links()?.is_empty() {
                    return Err(usage(format!("{path} is a group that is not empty")));
                }
            }
            Ok(_) => return Err(usage(format!("{path} exists and is not a group"))),
            Err(_) => {
                let mut cur = String::new();
                for part in path.split('/').filter(|p| !p.is_empty()) {
                    let parent = if cur.is_empty() {
                        "/".to_owned()
                    } else {
                        cur.clone()
                    };
                    cur = format!("{cur}/{part}");
                    match ed.reader().object(&cur) {
                        Ok(h5fmt::Object::Group(_)) => {}
                        Ok(_) => return Err(usage(format!("{cur} is not a group"))),
                        Err(_) => ed.create_group(&parent, part)?,
                    }
                }
            }
        }
        let child = |n: &str| {
            if path == "/" {
                format!("/{n}")
            } else {
                format!("{path}/{n}")
            }
        };
        if !cats.is_empty() {
            ed.create_group(&path, "CATEGORIES")?;
            let cpath = child("CATEGORIES");
            for (c, enc) in &cats {
                let n = enc.len(c.dtype.size());
                let mut nd = NewDataset::new(c.dtype.clone(), &[n]);
                if matches!(enc, Encoded::VarLen(_)) {
                    nd = nd.chunks(&[n.max(1)]);
                }
                ed.create_dataset(&cpath, &c.name, &nd)?;
                let cp = format!("{cpath}/{}", c.name);
                write_encoded(ed, &cp, &c.dtype, 0, enc)?;
                ed.set_attr(&cp, "ordered", c.ordered)?;
            }
        }
        for p in &prepared {
            create_column(ed, &path, p.spec, &p.fill, extent)?;
            let cp = child(&p.spec.name);
            write_encoded(ed, &cp, &p.spec.dtype, 0, &p.rows)?;
            set_column_attrs(ed, &path, p.spec, p.valid.as_ref())?;
        }
        ed.flush()?;
        let order: Vec<String> = self.columns.iter().map(|c| c.name.clone()).collect();
        ed.set_attr(&path, "column-order", utf8_list(&order))?;
        if let Some(t) = &self.title {
            ed.set_attr(&path, "TITLE", utf8_attr(t))?;
        }
        if let Some(t) = &self.description {
            ed.set_attr(&path, "description", utf8_attr(t))?;
        }
        if let Some(t) = &self.units_vocabulary {
            ed.set_attr(&path, "units_vocabulary", utf8_attr(t))?;
        }
        if !self.index.is_empty() {
            let targets: Vec<String> = self.index.iter().map(|n| child(n)).collect();
            let t: Vec<&str> = targets.iter().map(String::as_str).collect();
            ed.set_attr_object_refs(&path, "INDEX_COLUMNS", &t, false)?;
            ed.set_attr(&path, "_index", utf8_attr(&self.index[0]))?;
        }
        ed.set_attr(&path, "VERSION", AttrValue::fixed_ascii("1.0"))?;
        ed.set_attr(&path, "NROWS", nrows)?;
        ed.set_attr(&path, "GENERATION", 0u64)?;
        ed.set_attr(&path, "CLASS", class_attr())?;
        ed.flush()?;
        if self.columns.iter().any(|c| !c.indexes.is_empty()) {
            let mut t = TableEditor::open(ed, &path)?;
            for c in &self.columns {
                t.build_indexes(&c.name, &c.indexes)?;
            }
        }
        Ok(())
    }
}

/// The fill of a categorical column must not be a valid code (§12).
pub(crate) fn check_cat_fill(name: &str, dt: &Datatype, fill: &FillBytes, n: u64) -> Result<()> {
    if let Some(f) = data::integer_value(&fill.bytes, dt) {
        if f >= 0 && f < i128::from(n) {
            return Err(usage(format!(
                "categorical column {name:?}: fill value {f} is a valid category code (0..{n}) (§12)"
            )));
        }
    }
    Ok(())
}

/// An absolute path without a trailing slash (`/` for the root).
pub(crate) fn normalize(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        "/".to_owned()
    } else {
        format!("/{}", parts.join("/"))
    }
}

/// Create a column dataset of `extent` fill rows in an existing file.
pub(crate) fn create_column(
    ed: &mut FileEditor,
    table: &str,
    spec: &ColumnSpec,
    fill: &FillBytes,
    extent: u64,
) -> Result<()> {
    let mut nd = NewDataset::new(spec.dtype.clone(), &[extent])
        .maxshape(&[None])
        .chunks(&[spec.chunk_len()]);
    if spec.shuffle {
        nd = nd.shuffle();
    }
    if let Some(l) = spec.deflate {
        nd = nd.deflate(l);
    }
    if let Some(l) = spec.zstd {
        nd = nd.zstd(l);
    }
    if spec.lz4 {
        nd = nd.lz4();
    }
    nd.fill = Some(match &fill.vlen {
        Some(v) if !v.is_empty() && matches!(spec.dtype, Datatype::VarLenString { .. }) => {
            ed.put_varlen(&spec.dtype, core::slice::from_ref(v))?
        }
        _ => fill.bytes.clone(),
    });
    ed.create_dataset(table, &spec.name, &nd)?;
    Ok(())
}

/// Write encoded rows at `start` of the dataset at `path` (variable-length
/// elements go to the global heap first, at most 60000 per collection).
pub(crate) fn write_encoded(
    ed: &mut FileEditor,
    path: &str,
    dtype: &Datatype,
    start: u64,
    enc: &Encoded,
) -> Result<()> {
    match enc {
        Encoded::Fixed(b) => {
            let k = enc.len(dtype.size());
            if k > 0 {
                ed.write_box(path, &[start], &[k], b)?;
            }
        }
        Encoded::VarLen(v) => {
            let mut off = start;
            for part in v.chunks(60_000) {
                let b = ed.put_varlen(dtype, part)?;
                ed.write_box(path, &[off], &[part.len() as u64], &b)?;
                off += part.len() as u64;
            }
        }
    }
    Ok(())
}

/// Stage a column's attributes (categories reference, range, metadata).
pub(crate) fn set_column_attrs(
    ed: &mut FileEditor,
    table: &str,
    spec: &ColumnSpec,
    valid: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<()> {
    let base = if table == "/" {
        String::new()
    } else {
        table.to_owned()
    };
    let cp = format!("{base}/{}", spec.name);
    if let Some((lo, hi)) = valid {
        ed.set_attr(
            &cp,
            "valid_min",
            AttrValue::raw(spec.dtype.clone(), None, lo.clone()),
        )?;
        ed.set_attr(
            &cp,
            "valid_max",
            AttrValue::raw(spec.dtype.clone(), None, hi.clone()),
        )?;
    }
    if let Some(cn) = &spec.categories {
        let target = format!("{base}/CATEGORIES/{cn}");
        ed.set_attr_object_refs(&cp, "CATEGORIES", &[&target], true)?;
    }
    for (k, v) in [
        ("units", &spec.units),
        ("units_vocabulary", &spec.units_vocabulary),
        ("description", &spec.description),
    ] {
        if let Some(v) = v {
            ed.set_attr(&cp, k, utf8_attr(v))?;
        }
    }
    Ok(())
}

impl ColumnSpec {
    pub(crate) fn spec_fill(&self) -> &FillSpec {
        &self.fill
    }
    pub(crate) fn dtype(&self) -> &Datatype {
        &self.dtype
    }
    pub(crate) fn categories_name(&self) -> Option<&str> {
        self.categories.as_deref()
    }
    pub(crate) fn valid_of(&self, fill: &FillBytes) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        resolve_valid(self, fill)
    }
    pub(crate) fn check(&self) -> Result<()> {
        check_column_name(&self.name)?;
        check_chunk(self)?;
        data::check_column_dtype(&self.name, &self.dtype)
    }
}
