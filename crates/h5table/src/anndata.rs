//! anndata dataframes as Arrow (feature `arrow`): `adata.obs`, `adata.var`
//! and any group with `encoding-type = "dataframe"` in an `.h5ad` or HDF5
//! file, read as [`RecordBatch`]es and written from them.
//!
//! A dataframe (anndata's "on-disk format", `encoding-version "0.2.0"`) is a
//! group with the attributes `encoding-type`, `encoding-version`, `_index`
//! (the name of the member holding the row index) and `column-order` (the
//! column names, in order). Each column is a member with its own
//! `encoding-type`:
//!
//! | `encoding-type` (version) | on disk | Arrow |
//! |---|---|---|
//! | `array` (0.2.0) | rank-1 dataset: integer (1/2/4/8 bytes), IEEE float (2/4/8), h5py's boolean enum, fixed or variable-length string | same type as [`crate::arrow`] maps it, no nulls (a float NaN stays a NaN) |
//! | `string-array` (0.2.0) | rank-1 string dataset | `Utf8` |
//! | `categorical` (0.2.0) | group: `codes` (signed integers), `categories` (an array as above), attribute `ordered` | `Dictionary(Int32, <categories>)`, code −1 null, `dict_is_ordered` = `ordered` |
//! | `nullable-integer` (0.1.0) | group: `values` (integers), `mask` (booleans, true = missing) | the integer type, masked rows null |
//! | `nullable-boolean` (0.1.0) | group: `values`, `mask` | `Boolean`, masked rows null |
//! | `nullable-string-array` (0.1.0) | group: `values` (strings), `mask` | `Utf8`, masked rows null |
//!
//! A dataset without `encoding-type` is read as `array`. Anything else — an
//! other `encoding-type` or version, a dataframe version other than
//! `0.2.0`, a `column-order` entry that is not a member, a column whose
//! length is not the index's, a code outside the categories, a mask of the
//! wrong length — is an [`Error::Invalid`] naming the object.
//!
//! The index is the first Arrow column, named as `_index` says (anndata's
//! default name is `_index` itself); the schema metadata holds `hdf5:path`
//! and `anndata:index` (that name). When the index is also listed in
//! `column-order` (anndata allows it when the values are equal), it is
//! given once, first.
//!
//! [`DataFrameWriter`] writes the inverse mapping from Arrow batches: the
//! first field is the index; `Dictionary` → `categorical` (int32 codes,
//! null → −1); a *nullable* integer or boolean field → `nullable-integer`
//! / `nullable-boolean`, a nullable string field → `nullable-string-array`
//! (which anndata ≥ 0.11 reads), non-nullable ones → `array` /
//! `string-array`; floats → `array`, nulls written as NaN. A null in a
//! non-nullable field is an error.

use crate::arrow::MemberPlan;
use crate::error::{Error, Result};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, DictionaryArray, Int32Array, RecordBatch, RecordBatchOptions,
    RecordBatchReader,
};
use arrow_buffer::NullBuffer;
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use core::ops::Range;
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::datatype::Datatype;
use h5fmt::write::edit::NewDataset;
use h5fmt::{AttrValue, Attribute, Dataset, FileEditor, Group, Object};
use std::collections::HashMap;
use std::sync::Arc;

/// Section tag of errors about anndata dataframes.
const SECTION: &str = "anndata";

/// The dataframe `encoding-version` read and written.
pub const DATAFRAME_VERSION: &str = "0.2.0";

/// A column's `encoding-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// `array`: a plain dataset.
    Array,
    /// `string-array`: a dataset of strings.
    StringArray,
    /// `categorical`: `codes` + `categories`.
    Categorical,
    /// `nullable-integer`: `values` + `mask`.
    NullableInteger,
    /// `nullable-boolean`: `values` + `mask`.
    NullableBoolean,
    /// `nullable-string-array`: `values` + `mask`.
    NullableStringArray,
}

impl Encoding {
    /// The `encoding-type` attribute value.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Array => "array",
            Encoding::StringArray => "string-array",
            Encoding::Categorical => "categorical",
            Encoding::NullableInteger => "nullable-integer",
            Encoding::NullableBoolean => "nullable-boolean",
            Encoding::NullableStringArray => "nullable-string-array",
        }
    }
    /// The `encoding-version` anndata writes for it.
    pub fn version(self) -> &'static str {
        match self {
            Encoding::Array | Encoding::StringArray | Encoding::Categorical => "0.2.0",
            _ => "0.1.0",
        }
    }
    fn parse(s: &str) -> Option<Encoding> {
        [
            Encoding::Array,
            Encoding::StringArray,
            Encoding::Categorical,
            Encoding::NullableInteger,
            Encoding::NullableBoolean,
            Encoding::NullableStringArray,
        ]
        .into_iter()
        .find(|e| e.name() == s)
    }
    fn is_group(self) -> bool {
        !matches!(self, Encoding::Array | Encoding::StringArray)
    }
}

fn err(path: &str, message: impl Into<String>) -> Error {
    Error::invalid(path, SECTION, message)
}

/// A string attribute (`Ok(None)` when absent; an error naming `owner` when
/// it is not a string).
fn string_attr(a: h5fmt::Result<Attribute>, owner: &str, name: &str) -> Result<Option<String>> {
    let Ok(a) = a else { return Ok(None) };
    match crate::model::attr_string(&a) {
        Some(s) if a.len() == 1 => Ok(Some(s)),
        _ => Err(err(
            owner,
            format!(
                "attribute {name} is {} of {} elements, not a string",
                a.dtype(),
                a.len()
            ),
        )),
    }
}

/// `(encoding-type, encoding-version)` of an object, when it has them.
fn encoding_of(
    get: impl Fn(&str) -> h5fmt::Result<Attribute>,
    path: &str,
) -> Result<Option<(String, String)>> {
    let Some(t) = string_attr(get("encoding-type"), path, "encoding-type")? else {
        return Ok(None);
    };
    let v = string_attr(get("encoding-version"), path, "encoding-version")?.unwrap_or_default();
    Ok(Some((t, v)))
}

/// Whether `g` is an anndata dataframe (`encoding-type = "dataframe"`, any version).
pub fn is_dataframe(g: &Group) -> bool {
    g.attr("encoding-type")
        .ok()
        .and_then(|a| crate::model::attr_string(&a))
        .is_some_and(|t| t == "dataframe")
}

/// One column (or the index) of a dataframe, opened.
#[derive(Debug, Clone)]
pub struct DataFrameColumn {
    /// Column name (the member's name).
    pub name: String,
    /// Its `encoding-type`.
    pub encoding: Encoding,
    /// `ordered` of a categorical column.
    pub ordered: bool,
    /// The dataset holding the values (`codes` of a categorical, `values`
    /// of a nullable column).
    values: Dataset,
    mask: Option<Dataset>,
    categories: Option<ArrayRef>,
    plan: MemberPlan,
    field: Field,
}

/// What an `array` dataset may hold.
fn plain_dtype(dt: &Datatype) -> bool {
    match dt {
        Datatype::Integer { size, .. } => matches!(size, 1 | 2 | 4 | 8),
        Datatype::Float { size, .. } => dt.is_ieee_standard() && matches!(size, 2 | 4 | 8),
        Datatype::String { .. } | Datatype::VarLenString { .. } => true,
        d => crate::model::is_bool_enum(d),
    }
}

fn is_string(dt: &Datatype) -> bool {
    matches!(dt, Datatype::String { .. } | Datatype::VarLenString { .. })
}

/// A rank-1 member dataset of `g`, checked by `ok`.
fn member_dataset(g: &Group, name: &str, what: &str, ok: fn(&Datatype) -> bool) -> Result<Dataset> {
    let path = child(g.path(), name);
    let ds = match g.member(name) {
        Ok(Object::Dataset(d)) => *d,
        Ok(_) => return Err(err(&path, format!("{what} is not a dataset"))),
        Err(_) => return Err(err(g.path(), format!("no {what} member {name:?}"))),
    };
    if ds.shape().len() != 1 {
        return Err(err(
            &path,
            format!("{what} has rank {}, not 1", ds.shape().len()),
        ));
    }
    if !ok(ds.dtype()) {
        return Err(err(
            &path,
            format!(
                "{what} has datatype {}, which this reader does not map",
                ds.dtype()
            ),
        ));
    }
    Ok(ds)
}

fn child(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

fn int_of_size(dt: &Datatype, signed_only: bool) -> bool {
    matches!(dt, Datatype::Integer { size: 1 | 2 | 4 | 8, signed, .. } if *signed || !signed_only)
}

impl DataFrameColumn {
    /// Open member `name` of dataframe `g`.
    fn open(g: &Group, name: &str) -> Result<DataFrameColumn> {
        let path = child(g.path(), name);
        let obj = g.member(name).map_err(|e| {
            err(
                g.path(),
                format!("column-order names {name:?}, which is not a member of the group ({e})"),
            )
        })?;
        let enc = match &obj {
            Object::Dataset(d) => encoding_of(|n| d.attr(n), &path)?,
            Object::Group(sub) => encoding_of(|n| sub.attr(n), &path)?,
            Object::Datatype(_) => return Err(err(&path, "a named datatype, not a column")),
        };
        let encoding = match &enc {
            None => Encoding::Array,
            Some((t, v)) => {
                let e = Encoding::parse(t)
                    .ok_or_else(|| err(&path, format!("unknown encoding-type {t:?}")))?;
                if v != e.version() {
                    return Err(err(
                        &path,
                        format!(
                            "encoding-type {t:?} version {v:?} is not supported (only {:?})",
                            e.version()
                        ),
                    ));
                }
                e
            }
        };
        let sub = match (&obj, encoding.is_group()) {
            (Object::Group(sub), true) => Some(sub),
            (Object::Dataset(_), false) => None,
            _ => {
                return Err(err(
                    &path,
                    format!(
                        "encoding-type {:?} must be a {}",
                        encoding.name(),
                        if encoding.is_group() {
                            "group"
                        } else {
                            "dataset"
                        }
                    ),
                ))
            }
        };
        let mut ordered = false;
        let mut categories = None;
        let mut mask = None;
        let values = match (encoding, sub, &obj) {
            (Encoding::Array | Encoding::StringArray, _, Object::Dataset(d)) => {
                let d = (**d).clone();
                if d.shape().len() != 1 {
                    return Err(err(&path, format!("rank {}, not 1", d.shape().len())));
                }
                let ok = if encoding == Encoding::StringArray {
                    is_string(d.dtype())
                } else {
                    plain_dtype(d.dtype())
                };
                if !ok {
                    return Err(err(
                        &path,
                        format!(
                            "{} of datatype {}, which this reader does not map",
                            encoding.name(),
                            d.dtype()
                        ),
                    ));
                }
                d
            }
            (Encoding::Categorical, Some(sub), _) => {
                let codes = member_dataset(sub, "codes", "codes", |d| int_of_size(d, true))?;
                let cats = member_dataset(sub, "categories", "categories", plain_dtype)?;
                ordered = match sub.attr("ordered") {
                    Ok(a) => crate::model::attr_bool(&a).ok_or_else(|| {
                        err(&path, format!("ordered is {}, not a boolean", a.dtype()))
                    })?,
                    Err(_) => false,
                };
                let raw = cats.read_raw()?;
                let plan = MemberPlan::of(&cats, "categories", cats.dtype())?;
                categories = Some(plan.build(&cats, "categories", &raw)?);
                codes
            }
            (_, Some(sub), _) => {
                let ok: fn(&Datatype) -> bool = match encoding {
                    Encoding::NullableInteger => |d| int_of_size(d, false),
                    Encoding::NullableBoolean => |d| {
                        crate::model::is_bool_enum(d)
                            || matches!(d, Datatype::Integer { size: 1, .. })
                    },
                    _ => is_string,
                };
                let values = member_dataset(sub, "values", "values", ok)?;
                let m = member_dataset(sub, "mask", "mask", |d| {
                    crate::model::is_bool_enum(d) || matches!(d, Datatype::Integer { size: 1, .. })
                })?;
                if m.len() != values.len() {
                    return Err(err(
                        m.path(),
                        format!(
                            "mask has {} elements but values has {}",
                            m.len(),
                            values.len()
                        ),
                    ));
                }
                mask = Some(m);
                values
            }
            _ => return Err(err(&path, "unexpected object kind")),
        };
        let (plan, data_type) = if encoding == Encoding::Categorical {
            let plan = MemberPlan::of(&values, name, values.dtype())?;
            let cats = categories
                .as_ref()
                .map_or(DataType::Utf8, |c| c.data_type().clone());
            (
                plan,
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(cats)),
            )
        } else {
            let plan = MemberPlan::of(&values, name, values.dtype())?;
            let dt = if encoding == Encoding::NullableBoolean {
                DataType::Boolean
            } else {
                plan.data_type.clone()
            };
            (plan, dt)
        };
        let nullable = matches!(
            encoding,
            Encoding::Categorical
                | Encoding::NullableInteger
                | Encoding::NullableBoolean
                | Encoding::NullableStringArray
        );
        let mut field = Field::new(name, data_type, nullable);
        if ordered {
            field = field.with_dict_is_ordered(true);
        }
        Ok(DataFrameColumn {
            name: name.to_string(),
            encoding,
            ordered,
            values,
            mask,
            categories,
            plan,
            field,
        })
    }

    /// The number of rows.
    pub fn len(&self) -> u64 {
        self.values.len()
    }
    /// Whether the column has no rows.
    pub fn is_empty(&self) -> bool {
        self.values.len() == 0
    }
    /// The Arrow field.
    pub fn field(&self) -> &Field {
        &self.field
    }
    /// The categories of a categorical column.
    pub fn categories(&self) -> Option<&ArrayRef> {
        self.categories.as_ref()
    }

    /// Rows `rows` as one Arrow array (one slice read per dataset).
    fn read(&self, rows: &Range<u64>) -> Result<ArrayRef> {
        let raw = read_rows(&self.values, rows)?;
        let nulls = match &self.mask {
            Some(m) => {
                let bytes = read_rows(m, rows)?;
                Some(NullBuffer::from_iter(bytes.iter().map(|&b| b == 0)))
            }
            None => None,
        };
        let path = self.values.path();
        match (self.encoding, &self.categories) {
            (Encoding::Categorical, Some(cats)) => {
                let codes = self.plan.build(&self.values, &self.name, &raw)?;
                let n_cats = i64::try_from(cats.len()).unwrap_or(i64::MAX);
                let mut keys = Vec::with_capacity(codes.len());
                for (i, c) in int_values(codes.as_ref())?.into_iter().enumerate() {
                    keys.push(match c {
                        -1 => None,
                        c if (0..n_cats).contains(&c) => Some(i32::try_from(c).unwrap_or(0)),
                        c => {
                            return Err(err(
                                path,
                                format!(
                                    "code {c} at row {} is outside the {n_cats} categories",
                                    rows.start + i as u64
                                ),
                            ))
                        }
                    });
                }
                let keys = Int32Array::from(keys);
                let d = DictionaryArray::try_new(keys, cats.clone())
                    .map_err(|e| err(path, format!("Arrow dictionary: {e}")))?;
                Ok(Arc::new(d))
            }
            (Encoding::NullableBoolean, _) if !matches!(self.plan.data_type, DataType::Boolean) => {
                // values stored as 1-byte integers: nonzero is true.
                let b =
                    arrow_array::BooleanArray::new(raw.iter().map(|&x| x != 0).collect(), nulls);
                Ok(Arc::new(b))
            }
            _ => self
                .plan
                .build_with_nulls(&self.values, &self.name, &raw, nulls),
        }
    }
}

/// The element bytes of rows `rows` of a rank-1 dataset.
fn read_rows(ds: &Dataset, rows: &Range<u64>) -> Result<Vec<u8>> {
    if rows.is_empty() {
        return Ok(Vec::new());
    }
    Ok(
        ds.read_slice_raw(&Selection::Hyperslab(alloc::vec![SliceDim {
            start: rows.start,
            stride: 1,
            count: rows.end - rows.start,
            block: 1,
        }]))?,
    )
}

/// An integer array's values as `i64` (`u64` above `i64::MAX` saturate).
fn int_values(a: &dyn Array) -> Result<Vec<i64>> {
    macro_rules! ints {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .map(|&v| i64::try_from(v).unwrap_or(i64::MAX))
                .collect()
        };
    }
    Ok(match a.data_type() {
        DataType::Int8 => ints!(Int8Type),
        DataType::Int16 => ints!(Int16Type),
        DataType::Int32 => ints!(Int32Type),
        DataType::Int64 => ints!(Int64Type),
        DataType::UInt8 => ints!(UInt8Type),
        DataType::UInt16 => ints!(UInt16Type),
        DataType::UInt32 => ints!(UInt32Type),
        DataType::UInt64 => ints!(UInt64Type),
        t => return Err(Error::usage(format!("codes of type {t} are not integers"))),
    })
}

/// An anndata dataframe, opened.
#[derive(Debug, Clone)]
pub struct DataFrame {
    path: String,
    index: DataFrameColumn,
    columns: Vec<DataFrameColumn>,
    nrows: u64,
    schema: SchemaRef,
}

impl DataFrame {
    /// Open the dataframe group `g`.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the object: not `encoding-type =
    /// "dataframe"`, an `encoding-version` other than `0.2.0`, a missing or
    /// malformed `_index` / `column-order`, a column as listed in the
    /// module documentation's error cases.
    pub fn open(g: &Group) -> Result<DataFrame> {
        let path = g.path().to_string();
        match encoding_of(|n| g.attr(n), &path)? {
            Some((t, v)) if t == "dataframe" => {
                if v != DATAFRAME_VERSION {
                    return Err(err(
                        &path,
                        format!(
                            "dataframe encoding-version {v:?} is not supported (only {DATAFRAME_VERSION:?})"
                        ),
                    ));
                }
            }
            Some((t, _)) => {
                return Err(err(
                    &path,
                    format!("encoding-type is {t:?}, not \"dataframe\""),
                ))
            }
            None => {
                return Err(err(
                    &path,
                    "no encoding-type attribute (expected \"dataframe\")",
                ))
            }
        }
        let index_name = string_attr(g.attr("_index"), &path, "_index")?
            .ok_or_else(|| err(&path, "no _index attribute"))?;
        let order = match g.attr("column-order") {
            Err(_) => return Err(err(&path, "no column-order attribute")),
            // anndata writes an empty order as an empty float64 array.
            Ok(a) if a.is_empty() => Vec::new(),
            Ok(a) => crate::model::attr_strings(&a)
                .ok_or_else(|| err(&path, format!("column-order is {}, not strings", a.dtype())))?,
        };
        let index = DataFrameColumn::open(g, &index_name)?;
        let nrows = index.len();
        let mut columns = Vec::with_capacity(order.len());
        for name in &order {
            if *name == index_name {
                continue;
            }
            if columns.iter().any(|c: &DataFrameColumn| c.name == *name) {
                return Err(err(&path, format!("column-order lists {name:?} twice")));
            }
            let c = DataFrameColumn::open(g, name)?;
            if c.len() != nrows {
                return Err(err(
                    c.values.path(),
                    format!(
                        "column {name:?} has {} rows but the index {index_name:?} has {nrows}",
                        c.len()
                    ),
                ));
            }
            columns.push(c);
        }
        let mut meta = HashMap::new();
        meta.insert("hdf5:path".to_string(), path.clone());
        meta.insert("anndata:index".to_string(), index_name);
        let schema = Arc::new(Schema::new_with_metadata(
            core::iter::once(&index)
                .chain(&columns)
                .map(|c| c.field.clone())
                .collect::<Vec<_>>(),
            meta,
        ));
        Ok(DataFrame {
            path,
            index,
            columns,
            nrows,
            schema,
        })
    }

    /// The group's path.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// The number of rows (the index's length).
    pub fn nrows(&self) -> u64 {
        self.nrows
    }
    /// The index column.
    pub fn index(&self) -> &DataFrameColumn {
        &self.index
    }
    /// The columns in `column-order` (the index not included).
    pub fn columns(&self) -> &[DataFrameColumn] {
        &self.columns
    }
    /// The Arrow schema of every batch: the index, then the columns.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Rows `rows` as one batch (one slice read per dataset).
    ///
    /// # Errors
    /// [`Error::Usage`] for rows past [`DataFrame::nrows`]; HDF5 read
    /// errors; strings that are not UTF-8; codes outside the categories.
    pub fn read(&self, rows: Range<u64>) -> Result<RecordBatch> {
        if rows.start > rows.end || rows.end > self.nrows {
            return Err(Error::usage(format!(
                "{}: rows {}..{} outside [0, {})",
                self.path, rows.start, rows.end, self.nrows
            )));
        }
        let n = usize::try_from(rows.end - rows.start)
            .map_err(|_| Error::usage("too many rows for one batch"))?;
        let columns = core::iter::once(&self.index)
            .chain(&self.columns)
            .map(|c| c.read(&rows))
            .collect::<Result<Vec<_>>>()?;
        RecordBatch::try_new_with_options(
            self.schema.clone(),
            columns,
            &RecordBatchOptions::new().with_row_count(Some(n)),
        )
        .map_err(|e| err(&self.path, format!("Arrow batch: {e}")))
    }

    /// Every row, `batch_rows` (at least 1) at a time.
    pub fn batches(&self, batch_rows: u64) -> DataFrameBatches {
        DataFrameBatches {
            frame: self.clone(),
            next: 0,
            step: batch_rows.max(1),
        }
    }
}

/// The batches of [`DataFrame::batches`]; a [`RecordBatchReader`].
#[derive(Debug)]
pub struct DataFrameBatches {
    frame: DataFrame,
    next: u64,
    step: u64,
}

impl Iterator for DataFrameBatches {
    type Item = core::result::Result<RecordBatch, ArrowError>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.next >= self.frame.nrows {
            return None;
        }
        let end = self.next.saturating_add(self.step).min(self.frame.nrows);
        let r = self.frame.read(self.next..end);
        self.next = end;
        Some(r.map_err(|e| ArrowError::ExternalError(e.to_string().into())))
    }
}

impl RecordBatchReader for DataFrameBatches {
    fn schema(&self) -> SchemaRef {
        self.frame.schema()
    }
}

/// Options of [`DataFrameWriter`].
#[derive(Debug, Clone)]
pub struct WriteOptions {
    /// Rows per chunk of every dataset (at least 1).
    pub chunk_rows: u64,
    /// Deflate (gzip) level, which every HDF5 reader decodes; `None`: no filter.
    pub deflate: Option<u8>,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            chunk_rows: 65_536,
            deflate: None,
        }
    }
}

/// How one Arrow field is stored.
#[derive(Debug, Clone)]
struct OutColumn {
    name: String,
    encoding: Encoding,
    /// The member (dataset or group) path.
    path: String,
    /// The dataset holding values (or codes).
    values: String,
    /// The HDF5 datatype of `values`.
    dtype: Datatype,
    /// The categories of a categorical column, once the first batch gave them.
    categories: Option<ArrayRef>,
    ordered: bool,
}

/// Writes an anndata dataframe group from Arrow batches (see the
/// [module documentation](self) for the mapping).
///
/// ```no_run
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// # let batch: arrow_array::RecordBatch = todo!();
/// let mut ed = h5fmt::FileEditor::open("out.h5ad")?;
/// let opts = h5table::anndata::WriteOptions::default();
/// let mut w = h5table::anndata::DataFrameWriter::create(&mut ed, "/obs", &batch.schema(), &opts)?;
/// w.write(&mut ed, &batch)?;
/// w.finish(&mut ed)?;
/// ed.close()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DataFrameWriter {
    path: String,
    columns: Vec<OutColumn>,
    nrows: u64,
}

fn hdf5_type(t: &DataType) -> Option<Datatype> {
    Some(match t {
        DataType::Int8 => Datatype::int_le(1, true),
        DataType::Int16 => Datatype::int_le(2, true),
        DataType::Int32 => Datatype::int_le(4, true),
        DataType::Int64 => Datatype::int_le(8, true),
        DataType::UInt8 => Datatype::int_le(1, false),
        DataType::UInt16 => Datatype::int_le(2, false),
        DataType::UInt32 => Datatype::int_le(4, false),
        DataType::UInt64 => Datatype::int_le(8, false),
        DataType::Float16 => Datatype::float_le(2),
        DataType::Float32 => Datatype::float_le(4),
        DataType::Float64 => Datatype::float_le(8),
        DataType::Boolean => Datatype::bool_enum(),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => Datatype::vlen_utf8(),
        _ => return None,
    })
}

fn is_int(t: &DataType) -> bool {
    t.is_integer()
}

fn is_str(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

fn usage_at(path: &str, message: impl core::fmt::Display) -> Error {
    Error::usage(format!("{path}: {message}"))
}

/// Encoding attributes of a member.
fn set_encoding(ed: &mut FileEditor, path: &str, t: &str, v: &str) -> Result<()> {
    ed.set_attr(path, "encoding-type", t)?;
    ed.set_attr(path, "encoding-version", v)?;
    Ok(())
}

/// Split `path` into (parent, name).
fn split(path: &str) -> (&str, &str) {
    match path.rfind('/') {
        Some(0) => ("/", path.get(1..).unwrap_or("")),
        Some(i) => (
            path.get(..i).unwrap_or("/"),
            path.get(i + 1..).unwrap_or(""),
        ),
        None => ("/", path),
    }
}

impl DataFrameWriter {
    /// Create the dataframe group `path` in `ed` (missing parent groups
    /// are created) with one member per field of `schema`; the first field
    /// is the index (`_index` names it), the others are `column-order`.
    ///
    /// # Errors
    /// [`Error::Usage`]: no fields, a field name that is empty, holds `/`,
    /// repeats another or is `_index` for a column; a field type with no
    /// anndata encoding (see the module documentation); an existing object
    /// at `path`; HDF5 errors.
    pub fn create(
        ed: &mut FileEditor,
        path: &str,
        schema: &Schema,
        opts: &WriteOptions,
    ) -> Result<DataFrameWriter> {
        let path = if path.starts_with('/') {
            path.to_string()
        } else {
            format!("/{path}")
        };
        let fields = schema.fields();
        let Some(index) = fields.first() else {
            return Err(usage_at(&path, "a dataframe needs at least an index field"));
        };
        let mut columns: Vec<OutColumn> = Vec::with_capacity(fields.len());
        for (i, f) in fields.iter().enumerate() {
            let name = f.name();
            if name.is_empty() || name.contains('/') || name == "." {
                return Err(usage_at(
                    &path,
                    format!("field name {name:?} cannot be a member name"),
                ));
            }
            if i > 0 && name == "_index" {
                return Err(usage_at(&path, "\"_index\" is reserved for the index"));
            }
            if columns.iter().any(|c| c.name == *name) {
                return Err(usage_at(
                    &path,
                    format!("field name {name:?} appears twice"),
                ));
            }
            let member = child(&path, name);
            let t = f.data_type();
            let (encoding, values, dtype) = match t {
                DataType::Dictionary(_, v) => match hdf5_type(v) {
                    Some(_) if !matches!(**v, DataType::Boolean) => (
                        Encoding::Categorical,
                        child(&member, "codes"),
                        Datatype::int_le(4, true),
                    ),
                    _ => {
                        return Err(usage_at(
                            &path,
                            format!(
                                "field {name:?}: categories of type {v} have no anndata encoding"
                            ),
                        ))
                    }
                },
                t => {
                    let Some(dtype) = hdf5_type(t) else {
                        return Err(usage_at(
                            &path,
                            format!("field {name:?}: Arrow type {t} has no anndata encoding"),
                        ));
                    };
                    let nullable = f.is_nullable();
                    let enc = match t {
                        t if nullable && is_int(t) => Encoding::NullableInteger,
                        DataType::Boolean if nullable => Encoding::NullableBoolean,
                        t if nullable && is_str(t) => Encoding::NullableStringArray,
                        t if is_str(t) => Encoding::StringArray,
                        _ => Encoding::Array,
                    };
                    let values = if enc.is_group() {
                        child(&member, "values")
                    } else {
                        member.clone()
                    };
                    (enc, values, dtype)
                }
            };
            columns.push(OutColumn {
                name: name.clone(),
                encoding,
                path: member,
                values,
                dtype,
                categories: None,
                ordered: f.dict_is_ordered().unwrap_or(false),
            });
        }
        if ed.reader().object(&path).is_ok() {
            return Err(usage_at(&path, "an object exists at this path"));
        }
        // Missing parents, then the group.
        let mut at = String::new();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            let parent = if at.is_empty() {
                "/".to_string()
            } else {
                at.clone()
            };
            at = format!("{at}/{part}");
            if ed.reader().group(&at).is_err() {
                ed.create_group(&parent, part)?;
            }
        }
        let chunk = opts.chunk_rows.max(1);
        let new = |dtype: &Datatype| {
            let mut spec = NewDataset::new(dtype.clone(), &[0])
                .maxshape(&[None])
                .chunks(&[chunk]);
            spec.deflate = opts.deflate;
            spec
        };
        for c in &columns {
            if c.encoding.is_group() {
                ed.create_group(&path, &c.name)?;
                let (gp, vn) = split(&c.values);
                ed.create_dataset(gp, vn, &new(&c.dtype))?;
                let (enc, ver) = if c.encoding == Encoding::Categorical {
                    (Encoding::Array, Encoding::Array.version())
                } else if is_string(&c.dtype) {
                    (Encoding::StringArray, Encoding::StringArray.version())
                } else {
                    (Encoding::Array, Encoding::Array.version())
                };
                set_encoding(ed, &c.values, enc.name(), ver)?;
                if c.encoding == Encoding::Categorical {
                    ed.set_attr(
                        &c.path,
                        "ordered",
                        AttrValue::raw(
                            Datatype::bool_enum(),
                            None,
                            alloc::vec![u8::from(c.ordered)],
                        ),
                    )?;
                } else {
                    ed.create_dataset(&c.path, "mask", &new(&Datatype::bool_enum()))?;
                    set_encoding(
                        ed,
                        &child(&c.path, "mask"),
                        "array",
                        Encoding::Array.version(),
                    )?;
                }
            } else {
                ed.create_dataset(&path, &c.name, &new(&c.dtype))?;
            }
            set_encoding(ed, &c.path, c.encoding.name(), c.encoding.version())?;
        }
        set_encoding(ed, &path, "dataframe", DATAFRAME_VERSION)?;
        ed.set_attr(&path, "_index", index.name().as_str())?;
        let order: Vec<String> = columns.iter().skip(1).map(|c| c.name.clone()).collect();
        if order.is_empty() {
            // What anndata writes for no columns (h5py's empty list).
            ed.set_attr(
                &path,
                "column-order",
                AttrValue::raw(Datatype::float_le(8), Some(alloc::vec![0]), Vec::new()),
            )?;
        } else {
            ed.set_attr(&path, "column-order", order)?;
        }
        Ok(DataFrameWriter {
            path,
            columns,
            nrows: 0,
        })
    }

    /// Rows written so far.
    pub fn nrows(&self) -> u64 {
        self.nrows
    }

    /// Append the rows of `batch` (its fields those given to
    /// [`DataFrameWriter::create`], by position). The first batch with a
    /// dictionary gives a categorical column its categories, even with no
    /// rows (write an empty batch to keep the categories of an empty
    /// dataframe).
    ///
    /// # Errors
    /// [`Error::Usage`] naming the column: a different field count or type,
    /// a null in a non-nullable field, a dictionary whose values differ
    /// from the first batch's; HDF5 errors.
    pub fn write(&mut self, ed: &mut FileEditor, batch: &RecordBatch) -> Result<()> {
        if batch.num_columns() != self.columns.len() {
            return Err(usage_at(
                &self.path,
                format!(
                    "batch has {} fields, the dataframe {}",
                    batch.num_columns(),
                    self.columns.len()
                ),
            ));
        }
        for (c, a) in self.columns.iter_mut().zip(batch.columns()) {
            // An empty batch still gives a categorical column its categories.
            if a.is_empty() && c.encoding != Encoding::Categorical {
                continue;
            }
            write_column(ed, c, a.as_ref())?;
        }
        self.nrows += batch.num_rows() as u64;
        Ok(())
    }

    /// Write what no batch gave (the categories of categorical columns
    /// when there were no rows: empty string categories); returns the row
    /// count.
    ///
    /// # Errors
    /// HDF5 errors.
    pub fn finish(mut self, ed: &mut FileEditor) -> Result<u64> {
        for c in &mut self.columns {
            if c.encoding == Encoding::Categorical && c.categories.is_none() {
                let empty: ArrayRef = Arc::new(arrow_array::StringArray::from(Vec::<&str>::new()));
                write_categories(ed, c, &empty)?;
            }
        }
        Ok(self.nrows)
    }
}

/// The `categories` dataset of a categorical column.
fn write_categories(ed: &mut FileEditor, c: &mut OutColumn, cats: &ArrayRef) -> Result<()> {
    if cats.null_count() > 0 {
        return Err(usage_at(&c.path, "categories hold a null"));
    }
    let dtype = hdf5_type(cats.data_type())
        .ok_or_else(|| usage_at(&c.path, format!("categories of type {}", cats.data_type())))?;
    let n = cats.len() as u64;
    // Variable-length datasets are chunked by the editor; one chunk holds them all.
    let spec = NewDataset::new(dtype.clone(), &[n]).chunks(&[n.max(1)]);
    ed.create_dataset(&c.path, "categories", &spec)?;
    let path = child(&c.path, "categories");
    let enc = if is_string(&dtype) {
        Encoding::StringArray
    } else {
        Encoding::Array
    };
    set_encoding(ed, &path, enc.name(), enc.version())?;
    if n > 0 {
        let bytes = element_bytes(ed, &dtype, cats.as_ref(), &path)?;
        ed.write_box(&path, &[0], &[n], &bytes)?;
    }
    c.categories = Some(cats.clone());
    Ok(())
}

/// Append one Arrow array to its column's datasets.
fn write_column(ed: &mut FileEditor, c: &mut OutColumn, a: &dyn Array) -> Result<()> {
    let n = a.len();
    match c.encoding {
        Encoding::Categorical => {
            let d = a.as_any_dictionary();
            let values = d.values();
            match &c.categories {
                None => write_categories(ed, c, values)?,
                Some(cats) if cats.to_data() == values.to_data() => {}
                Some(_) => {
                    return Err(usage_at(
                        &c.path,
                        "a batch's dictionary differs from the first batch's (categories are written once)",
                    ))
                }
            }
            let keys = d.normalized_keys();
            let codes: Vec<u8> = (0..n)
                .flat_map(|i| {
                    let k = if a.is_null(i) {
                        -1
                    } else {
                        keys.get(i)
                            .and_then(|&k| i32::try_from(k).ok())
                            .unwrap_or(-1)
                    };
                    k.to_le_bytes()
                })
                .collect();
            if n > 0 {
                ed.append_raw(&c.values, &codes)?;
            }
        }
        Encoding::Array | Encoding::StringArray => {
            let is_float = matches!(
                a.data_type(),
                DataType::Float16 | DataType::Float32 | DataType::Float64
            );
            if a.null_count() > 0 && !is_float {
                return Err(usage_at(
                    &c.path,
                    format!(
                        "column {:?} holds nulls but its field is not nullable",
                        c.name
                    ),
                ));
            }
            let bytes = element_bytes(ed, &c.dtype, a, &c.values)?;
            ed.append_raw(&c.values, &bytes)?;
        }
        _ => {
            let bytes = element_bytes(ed, &c.dtype, a, &c.values)?;
            ed.append_raw(&c.values, &bytes)?;
            let mask: Vec<u8> = (0..n).map(|i| u8::from(a.is_null(i))).collect();
            ed.append_raw(&child(&c.path, "mask"), &mask)?;
        }
    }
    Ok(())
}

/// The file bytes of `a` as elements of `dtype` (little-endian; nulls as
/// zero, NaN for floats, `""` for strings; strings stored in the global heap).
fn element_bytes(
    ed: &mut FileEditor,
    dtype: &Datatype,
    a: &dyn Array,
    path: &str,
) -> Result<Vec<u8>> {
    macro_rules! le {
        ($t:ty, $null:expr) => {{
            let p = a.as_primitive::<$t>();
            (0..p.len())
                .flat_map(|i| if p.is_null(i) { $null } else { p.value(i) }.to_le_bytes())
                .collect()
        }};
    }
    Ok(match a.data_type() {
        DataType::Int8 => le!(Int8Type, 0),
        DataType::Int16 => le!(Int16Type, 0),
        DataType::Int32 => le!(Int32Type, 0),
        DataType::Int64 => le!(Int64Type, 0),
        DataType::UInt8 => le!(UInt8Type, 0),
        DataType::UInt16 => le!(UInt16Type, 0),
        DataType::UInt32 => le!(UInt32Type, 0),
        DataType::UInt64 => le!(UInt64Type, 0),
        DataType::Float16 => le!(Float16Type, half_nan()),
        DataType::Float32 => le!(Float32Type, f32::NAN),
        DataType::Float64 => le!(Float64Type, f64::NAN),
        DataType::Boolean => {
            let b = a.as_boolean();
            (0..b.len())
                .map(|i| u8::from(!b.is_null(i) && b.value(i)))
                .collect()
        }
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            let strs: Vec<Vec<u8>> = (0..a.len())
                .map(|i| {
                    if a.is_null(i) {
                        Vec::new()
                    } else {
                        str_value(a, i).as_bytes().to_vec()
                    }
                })
                .collect();
            let mut out = Vec::with_capacity(strs.len() * 16);
            for part in strs.chunks(60_000) {
                out.extend(ed.put_varlen(dtype, part)?);
            }
            out
        }
        t => {
            return Err(usage_at(
                path,
                format!("Arrow type {t} has no anndata encoding"),
            ))
        }
    })
}

fn half_nan() -> <Float16Type as arrow_array::ArrowPrimitiveType>::Native {
    <Float16Type as arrow_array::ArrowPrimitiveType>::Native::NAN
}

/// Row `i` of a string array of any of the three layouts.
fn str_value(a: &dyn Array, i: usize) -> &str {
    match a.data_type() {
        DataType::Utf8 => a.as_string::<i32>().value(i),
        DataType::LargeUtf8 => a.as_string::<i64>().value(i),
        _ => a.as_string_view().value(i),
    }
}
