//! Row-oriented compound tables as Arrow (feature `arrow`): the HDF5 Table
//! of libhdf5's high-level library (H5TB) and the PyTables `Table`.
//!
//! Both are one rank-1 dataset of a compound datatype, one element per row,
//! with `CLASS = "TABLE"`, `VERSION`, `TITLE` and `FIELD_<n>_NAME` /
//! `FIELD_<n>_FILL` attributes. They differ in two places, and the flavour
//! is told by the first:
//!
//! | | H5TB (`H5TBmake_table`, `VERSION "3.0"`) | PyTables (`VERSION "2.x"`) |
//! |---|---|---|
//! | `NROWS` | absent | an integer ≤ the extent |
//! | `FIELD_<n>_FILL` numbering | one per top-level member | one per *leaf* column (a complex (`r`, `i`) is one), breadth first: the top level's columns in member order, then those of nested compounds |
//!
//! The row count is the dataset's extent for both: libhdf5_hl
//! (`H5TBget_table_info`) and PyTables (`Table.nrows`) read the extent and
//! neither reads `NROWS` back, so a table whose `NROWS` is smaller (libhdf5's
//! own test files carry a user attribute of that name) has the extent's rows
//! all the same; an `NROWS` that is not an integer or is past the extent is
//! refused as a broken table.
//!
//! Rows are read `batch_rows` at a time with one hyperslab read of the
//! dataset, so memory is bounded by the batch, not by the table.
//!
//! # Field types
//!
//! Each top-level compound member is one Arrow field, mapped as
//! [`crate::arrow`] maps HEP001 columns (integers of 1/2/4/8 bytes in either
//! byte order, IEEE floats of 2/4/8 bytes, fixed and variable-length strings
//! as `Utf8`, h5py's boolean enum as `Boolean`, other enums as
//! `Dictionary(Int32, Utf8)`, opaque as `FixedSizeBinary`), plus:
//!
//! - a one-byte bitfield (PyTables' `BoolCol`) → `Boolean` (nonzero is true);
//! - an array member (`H5T_ARRAY`, any rank) → `FixedSizeList` of its
//!   elements in row-major order (the dimensions are not kept);
//! - a nested compound, complex numbers (`r`, `i`) included → `Struct` with
//!   one child per member (nested fields are **Arrow structs**, not
//!   flattened names);
//! - PyTables' `Time32Col` (a 4-byte `H5T_TIME`) → `Int32` and `Time64Col`
//!   (an 8-byte one: seconds in the high 32 bits, microseconds in the low
//!   32) → `Float64` seconds, the values PyTables reads (libhdf5 has no
//!   conversion for `H5T_TIME`, so PyTables, which writes them, decides).
//!
//! A NULLTERM fixed string ends at its first NUL, as libhdf5 converts it
//! (what h5py, PyTables and `H5TBread_table` read): the bytes after it are
//! not part of the value, even when some are not NUL.
//!
//! Anything else (other times, references, variable-length sequences, 128-bit
//! integers, non-IEEE floats, wider bitfields, nested arrays of those) is
//! refused when the table is opened, with an error naming the dataset and
//! the field. Rows hold no nulls: a row table has no missing-value marker.
//!
//! # Fills
//!
//! [`RowField::fill`] is the member's `FIELD_<n>_FILL` as a one-element
//! array of the field's Arrow type, when the attribute exists. PyTables
//! stores no fill for a nested compound, one per column inside it
//! ([`pytables_fill_columns`]): the member's fill is those placed at their
//! offsets, when each exists and none is a time (else none). A time member's fill
//! is the attribute's value (PyTables stores an int32 for `Time32Col`, the
//! float64 of seconds for `Time64Col`). A fill attribute whose
//! datatype is not the member's is accepted when both are strings (re-padded
//! to the member's size) or both are one-size integer-like types (integer,
//! enum, bitfield: PyTables stores an enum's fill as its base integer), or
//! when the member is an array of the attribute's type (PyTables stores one
//! element, repeated here), and refused otherwise.

use crate::arrow::MemberPlan;
use crate::error::{Error, Result};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use arrow_array::{ArrayRef, RecordBatch, RecordBatchOptions, RecordBatchReader};
use arrow_schema::{ArrowError, Field, Schema, SchemaRef};
use core::ops::Range;
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::datatype::{CompoundMember, Datatype};
use h5fmt::Dataset;
use std::collections::HashMap;
use std::sync::Arc;

/// Section tag of errors about row tables.
const SECTION: &str = "row table";

/// Which convention wrote the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    /// libhdf5's high-level H5TB API: no `NROWS`.
    H5tb,
    /// PyTables: an `NROWS` attribute (PyTables writes it; the row count is still the extent).
    PyTables,
}

/// One top-level member of the row compound.
#[derive(Debug, Clone)]
pub struct RowField {
    /// Member name.
    pub name: String,
    /// Byte offset in the row.
    pub offset: usize,
    /// Member datatype as stored.
    pub dtype: Datatype,
    /// `FIELD_<n>_FILL` as a one-element array of the field's Arrow type.
    pub fill: Option<ArrayRef>,
    plan: MemberPlan,
}

/// An H5TB or PyTables table, opened.
#[derive(Debug, Clone)]
pub struct RowTable {
    dataset: Dataset,
    flavor: Flavor,
    nrows: u64,
    title: Option<String>,
    row_size: usize,
    fields: Vec<RowField>,
    schema: SchemaRef,
}

fn err(ds: &Dataset, message: impl Into<String>) -> Error {
    Error::invalid(ds.path(), SECTION, message)
}

/// A string attribute of `ds`, when present.
fn string_attr(ds: &Dataset, name: &str) -> Result<Option<String>> {
    crate::pytables::string_attr(ds.path(), name, ds.attr(name))
}

/// Whether `ds` is a row table: `CLASS = "TABLE"` on a compound dataset.
pub fn is_row_table(ds: &Dataset) -> bool {
    matches!(ds.dtype(), Datatype::Compound { .. })
        && ds
            .attr("CLASS")
            .and_then(|a| a.read_string())
            .is_ok_and(|c| c == "TABLE")
}

/// A complex number as PyTables stores it: a compound of two floats `r`, `i`.
fn is_complex(dt: &Datatype) -> bool {
    match dt {
        Datatype::Compound { members, .. } => {
            members.len() == 2
                && members
                    .iter()
                    .zip(["r", "i"])
                    .all(|(m, n)| m.name == n && matches!(m.dtype, Datatype::Float { .. }))
        }
        _ => false,
    }
}

/// Whether PyTables sees a member of type `dt` as one column (`Col`), not
/// a nested description.
fn is_col(dt: &Datatype) -> bool {
    !matches!(dt, Datatype::Compound { .. }) || is_complex(dt)
}

/// One column (`Col`) of a PyTables row compound, as
/// [`pytables_fill_columns`] lists them.
#[derive(Debug, Clone, PartialEq)]
pub struct FillColumn {
    /// The index of the top-level member holding the column.
    pub top: usize,
    /// The column's byte offset in the row.
    pub offset: usize,
    /// The column's datatype.
    pub dtype: Datatype,
}

/// The columns of a row compound with `members`, in the order PyTables
/// numbers their `FIELD_<n>_FILL` attributes (column `n` of the list is
/// `FIELD_<n>_FILL`): the order of `Description._f_walk(type="Col")`,
/// breadth first — every column of the top level in member order, then
/// those of each nested compound in the order the walk meets them — so a
/// nested compound before a column does not shift the column's number. A
/// complex number (a compound of two floats `r`, `i`) is one column.
///
/// ```
/// use h5fmt::format::datatype::{CompoundMember, Datatype};
/// let m = |name: &str, offset, dtype| CompoundMember { name: name.into(), offset, dtype };
/// let inner = Datatype::Compound {
///     size: 9,
///     members: vec![m("x", 0, Datatype::float_le(8)), m("y", 8, Datatype::int_le(1, true))],
/// };
/// let cols = h5table::rowtable::pytables_fill_columns(&[
///     m("n", 0, inner),
///     m("a", 9, Datatype::int_le(4, true)),
/// ]);
/// // FIELD_0_FILL is `a`'s, FIELD_1_FILL `n/x`'s, FIELD_2_FILL `n/y`'s.
/// assert_eq!(cols.iter().map(|c| (c.top, c.offset)).collect::<Vec<_>>(), [(1, 9), (0, 0), (0, 8)]);
/// ```
pub fn pytables_fill_columns(members: &[CompoundMember]) -> Vec<FillColumn> {
    let mut out = Vec::new();
    // (top-level member, offset of the compound in the row, its members)
    let mut queue: alloc::collections::VecDeque<(Option<usize>, usize, &[CompoundMember])> =
        alloc::collections::VecDeque::new();
    queue.push_back((None, 0, members));
    while let Some((top, base, ms)) = queue.pop_front() {
        for (i, m) in ms.iter().enumerate() {
            let top = top.unwrap_or(i);
            let offset = base.saturating_add(usize::try_from(m.offset).unwrap_or(usize::MAX));
            match &m.dtype {
                Datatype::Compound { members: inner, .. } if !is_col(&m.dtype) => {
                    queue.push_back((Some(top), offset, inner));
                }
                d => out.push(FillColumn {
                    top,
                    offset,
                    dtype: d.clone(),
                }),
            }
        }
    }
    out
}

/// The `FIELD_<n>_FILL` number PyTables gives top-level member `i` of
/// `members`, when it is a column (see [`pytables_fill_columns`]).
fn pytables_fill_number(members: &[CompoundMember], i: usize) -> Option<usize> {
    let m = members.get(i)?;
    is_col(&m.dtype).then(|| members.iter().take(i).filter(|m| is_col(&m.dtype)).count())
}

/// The fill of nested top-level member `i` of a PyTables row compound:
/// its columns' `FIELD_<n>_FILL`s placed at their offsets, when every one
/// exists and none is a time (PyTables stores those as values, not as the
/// member's bytes).
fn pytables_nested_fill(
    ds: &Dataset,
    members: &[CompoundMember],
    i: usize,
) -> Result<Option<Vec<u8>>> {
    let Some(m) = members.get(i) else {
        return Ok(None);
    };
    let base = usize::try_from(m.offset).unwrap_or(usize::MAX);
    let mut parts = Vec::new();
    for (n, c) in pytables_fill_columns(members).iter().enumerate() {
        if c.top != i {
            continue;
        }
        if time_base(&c.dtype).is_some() {
            return Ok(None);
        }
        let Some(b) = fill_bytes(ds, &format!("FIELD_{n}_FILL"), &c.dtype)? else {
            return Ok(None);
        };
        parts.push((c.offset.saturating_sub(base), b));
    }
    // The record is allocated only as large as its columns' fills reach
    // (plus some trailing padding): the member's size is file content.
    let size = usize::try_from(m.dtype.size()).unwrap_or(usize::MAX);
    let reach = parts
        .iter()
        .map(|(at, b)| at.saturating_add(b.len()))
        .max()
        .unwrap_or(0);
    if size > reach.saturating_add(MAX_TRAILING_PADDING) {
        return Ok(None);
    }
    let mut bytes = alloc::vec![0u8; size];
    for (at, b) in parts {
        match bytes.get_mut(at..at.saturating_add(b.len())) {
            Some(dst) => dst.copy_from_slice(&b),
            None => return Ok(None),
        }
    }
    Ok(Some(bytes))
}

/// Padding after a nested compound's last column beyond which no fill
/// record is built for it (C alignment pads a few bytes; more is no
/// layout a writer chose).
const MAX_TRAILING_PADDING: usize = 4096;

fn integer_like(dt: &Datatype) -> bool {
    matches!(
        dt,
        Datatype::Integer { .. } | Datatype::Enum { .. } | Datatype::Bitfield { .. }
    )
}

/// The fill attribute's bytes as an element of `member`.
fn fill_bytes(ds: &Dataset, attr: &str, member: &Datatype) -> Result<Option<Vec<u8>>> {
    let Ok(a) = ds.attr(attr) else {
        return Ok(None);
    };
    if a.len() != 1 {
        return Err(err(
            ds,
            format!("attribute {attr} has {} elements, not 1", a.len()),
        ));
    }
    let raw = a.raw();
    let size = usize::try_from(member.size()).unwrap_or(usize::MAX);
    let same_size = raw.len() == size;
    match (a.dtype(), member) {
        (d, m) if d == m && same_size => Ok(Some(raw.to_vec())),
        (Datatype::String { .. }, Datatype::String { .. }) => {
            let keep = raw.iter().position(|&b| b == 0).unwrap_or(raw.len());
            let mut v = raw.get(..keep).unwrap_or(raw).to_vec();
            v.resize(size, 0);
            Ok(Some(v))
        }
        (d, m) if integer_like(d) && integer_like(m) && same_size => Ok(Some(raw.to_vec())),
        // PyTables: an array column's fill is one element of its base type.
        (d, Datatype::Array { base, .. }) if **base == *d && !raw.is_empty() => {
            Ok(Some(raw.repeat(size / raw.len())))
        }
        (d, m) => Err(err(
            ds,
            format!("attribute {attr} is {d}, which does not match its field's datatype {m}"),
        )),
    }
}

/// The `H5T_TIME` type of a time member or of the elements of an array of times.
fn time_base(dt: &Datatype) -> Option<&Datatype> {
    match dt {
        Datatype::Time { .. } => Some(dt),
        Datatype::Array { base, .. } => time_base(base),
        _ => None,
    }
}

/// The fill of a PyTables time member (see the `Time` plans of
/// [`crate::arrow`]): PyTables stores a `Time32Col`'s default as an int32
/// and a `Time64Col`'s as the float64 of seconds it reads, one element for
/// an array member — so the attribute is decoded as a value, not as the
/// member's bytes.
fn time_fill(
    ds: &Dataset,
    attr: &str,
    member: &Datatype,
    arrow_type: &arrow_schema::DataType,
) -> Result<Option<ArrayRef>> {
    use arrow_array::{FixedSizeListArray, Float64Array, Int32Array};
    use arrow_schema::DataType;
    let Ok(a) = ds.attr(attr) else {
        return Ok(None);
    };
    let mismatch = || {
        err(
            ds,
            format!(
                "attribute {attr} is {}, which does not match its field's datatype {member}",
                a.dtype()
            ),
        )
    };
    if a.len() != 1 {
        return Err(err(
            ds,
            format!("attribute {attr} has {} elements, not 1", a.len()),
        ));
    }
    let n = usize::try_from(member.size() / time_base(member).map_or(1, |t| t.size().max(1)))
        .unwrap_or(1);
    let values: ArrayRef = match (time_base(member), a.dtype()) {
        (Some(Datatype::Time { size: 4, .. }), Datatype::Integer { .. }) => {
            let v = a
                .read_scalar::<i64>()
                .map_err(|e| err(ds, format!("{attr}: {e}")))?;
            let v = i32::try_from(v).map_err(|_| mismatch())?;
            Arc::new(Int32Array::from(alloc::vec![v; n]))
        }
        (Some(Datatype::Time { size: 8, .. }), Datatype::Float { .. }) => {
            let v = a
                .read_scalar::<f64>()
                .map_err(|e| err(ds, format!("{attr}: {e}")))?;
            Arc::new(Float64Array::from(alloc::vec![v; n]))
        }
        _ => return Err(mismatch()),
    };
    Ok(Some(match arrow_type {
        DataType::FixedSizeList(item, len) => Arc::new(
            FixedSizeListArray::try_new(item.clone(), *len, values, None)
                .map_err(|e| err(ds, format!("{attr}: {e}")))?,
        ),
        _ => values,
    }))
}

impl RowTable {
    /// Open `ds` as a row table.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the dataset: not `CLASS = "TABLE"`, not a
    /// rank-1 compound dataset, a `FIELD_<n>_NAME` that is not the member's
    /// name, a system attribute of the wrong type, `NROWS` negative or past
    /// the extent, a field of an unsupported datatype (see the module docs).
    pub fn open(ds: &Dataset) -> Result<RowTable> {
        match string_attr(ds, "CLASS")? {
            Some(c) if c == "TABLE" => {}
            Some(c) => return Err(err(ds, format!("CLASS is {c:?}, not \"TABLE\""))),
            None => return Err(err(ds, "no CLASS attribute (expected \"TABLE\")")),
        }
        let Datatype::Compound { size, members } = ds.dtype() else {
            return Err(err(
                ds,
                format!("datatype {} is not a compound", ds.dtype()),
            ));
        };
        let [extent] = ds.shape() else {
            return Err(err(ds, format!("rank {}, not 1", ds.shape().len())));
        };
        let flavor;
        let nrows = match ds.attr("NROWS") {
            Ok(a) => {
                flavor = Flavor::PyTables;
                if !matches!(a.dtype(), Datatype::Integer { .. }) || a.len() != 1 {
                    return Err(err(
                        ds,
                        format!("NROWS is {}, not an integer scalar", a.dtype()),
                    ));
                }
                let n = a
                    .read_scalar::<i64>()
                    .map_err(|e| err(ds, format!("NROWS: {e}")))?;
                let n = u64::try_from(n).map_err(|_| err(ds, format!("NROWS is {n}")))?;
                if n > *extent {
                    return Err(err(
                        ds,
                        format!("NROWS {n} is past the dataset's extent {extent}"),
                    ));
                }
                *extent
            }
            Err(_) => {
                flavor = Flavor::H5tb;
                *extent
            }
        };
        let title = string_attr(ds, "TITLE")?;
        let mut fields = Vec::with_capacity(members.len());
        for (i, m) in members.iter().enumerate() {
            if let Some(n) = string_attr(ds, &format!("FIELD_{i}_NAME"))? {
                if n != m.name {
                    return Err(err(
                        ds,
                        format!("FIELD_{i}_NAME is {n:?} but member {i} is {:?}", m.name),
                    ));
                }
            }
            let plan = MemberPlan::of(ds, &m.name, &m.dtype)?;
            let fill_index = match flavor {
                Flavor::H5tb => Some(i),
                Flavor::PyTables => pytables_fill_number(members, i),
            };
            let fill = match fill_index {
                Some(k) => {
                    let attr = format!("FIELD_{k}_FILL");
                    match time_base(&m.dtype) {
                        Some(_) => time_fill(ds, &attr, &m.dtype, &plan.data_type)?,
                        None => match fill_bytes(ds, &attr, &m.dtype)? {
                            Some(b) => Some(plan.build(ds, &m.name, &b)?),
                            None => None,
                        },
                    }
                }
                None if flavor == Flavor::PyTables => match pytables_nested_fill(ds, members, i)? {
                    Some(b) => Some(plan.build(ds, &m.name, &b)?),
                    None => None,
                },
                None => None,
            };
            fields.push(RowField {
                name: m.name.clone(),
                offset: usize::try_from(m.offset).unwrap_or(usize::MAX),
                dtype: m.dtype.clone(),
                fill,
                plan,
            });
        }
        let mut meta = HashMap::new();
        meta.insert("hdf5:path".to_string(), ds.path().to_string());
        meta.insert(
            "hdf5:row_table".to_string(),
            match flavor {
                Flavor::H5tb => "H5TB",
                Flavor::PyTables => "PyTables",
            }
            .to_string(),
        );
        if let Some(t) = &title {
            meta.insert("TITLE".to_string(), t.clone());
        }
        let schema = Arc::new(Schema::new_with_metadata(
            fields
                .iter()
                .map(|f| Field::new(f.name.clone(), f.plan.data_type.clone(), false))
                .collect::<Vec<_>>(),
            meta,
        ));
        Ok(RowTable {
            dataset: ds.clone(),
            flavor,
            nrows,
            title,
            row_size: usize::try_from(*size).unwrap_or(usize::MAX),
            fields,
            schema,
        })
    }

    /// The convention that wrote the table.
    pub fn flavor(&self) -> Flavor {
        self.flavor
    }
    /// The number of rows: the dataset's extent (see the module docs).
    pub fn nrows(&self) -> u64 {
        self.nrows
    }
    /// `TITLE`, when present.
    pub fn title(&self) -> Option<&str> {
        self.title.as_deref()
    }
    /// The top-level members, in declaration order.
    pub fn fields(&self) -> &[RowField] {
        &self.fields
    }
    /// The Arrow schema of every batch (fields not nullable; schema metadata
    /// `hdf5:path`, `hdf5:row_table` = `H5TB` or `PyTables`, and `TITLE`).
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
    /// The dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }

    /// Rows `rows` as one batch (one hyperslab read).
    ///
    /// # Errors
    /// [`Error::Usage`] for rows past [`RowTable::nrows`]; HDF5 read errors;
    /// string fields that are not UTF-8, enum values that name no member.
    pub fn read(&self, rows: Range<u64>) -> Result<RecordBatch> {
        if rows.start > rows.end || rows.end > self.nrows {
            return Err(Error::usage(format!(
                "{}: rows {}..{} outside [0, {})",
                self.dataset.path(),
                rows.start,
                rows.end,
                self.nrows
            )));
        }
        let n = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::usage("too many rows for one batch"))?;
        let raw = if n == 0 {
            Vec::new()
        } else {
            self.dataset
                .read_slice_raw(&Selection::Hyperslab(alloc::vec![SliceDim {
                    start: rows.start,
                    stride: 1,
                    count: rows.end - rows.start,
                    block: 1,
                }]))?
        };
        let mut columns = Vec::with_capacity(self.fields.len());
        for f in &self.fields {
            let msize = usize::try_from(f.dtype.size()).unwrap_or(usize::MAX);
            let end = f.offset.saturating_add(msize);
            let mut bytes = Vec::with_capacity(n.saturating_mul(msize));
            for row in raw.chunks_exact(self.row_size.max(1)) {
                let Some(b) = row.get(f.offset..end) else {
                    return Err(err(
                        &self.dataset,
                        format!("member {:?} runs past the row", f.name),
                    ));
                };
                bytes.extend_from_slice(b);
            }
            columns.push(f.plan.build(&self.dataset, &f.name, &bytes)?);
        }
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| err(&self.dataset, format!("Arrow batch: {e}")))
    }

    /// Every row, `batch_rows` (at least 1) at a time.
    pub fn batches(&self, batch_rows: u64) -> RowBatches {
        RowBatches {
            table: self.clone(),
            next: 0,
            step: batch_rows.max(1),
        }
    }
}

/// The batches of [`RowTable::batches`]; a [`RecordBatchReader`].
#[derive(Debug)]
pub struct RowBatches {
    table: RowTable,
    next: u64,
    step: u64,
}

impl Iterator for RowBatches {
    type Item = core::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.table.nrows {
            return None;
        }
        let end = self.next.saturating_add(self.step).min(self.table.nrows);
        let r = self.table.read(self.next..end);
        self.next = end;
        Some(r.map_err(|e| ArrowError::ExternalError(e.to_string().into())))
    }
}

impl RecordBatchReader for RowBatches {
    fn schema(&self) -> SchemaRef {
        self.table.schema()
    }
}
