//! `h5 table import` / `h5 table append`: Arrow record batches (from CSV or
//! Parquet, see [`crate::table_io`]) into a HEP001 table, batch by batch
//! through the §11 append protocol (each batch is committed by `NROWS`).
//!
//! Arrow → HEP001 columns:
//!
//! | Arrow | column | fill (missing) |
//! |---|---|---|
//! | `Int8`…`Int64`, `UInt8`…`UInt64` | same integer | Table 1 sentinel |
//! | `Float32`, `Float64` | same float | Table 1 sentinel (9.9692099683868690e+36) |
//! | `Float16` | float16 | NaN |
//! | `Boolean` | uint8 0/1, `valid_min` 0 / `valid_max` 1 | 2 (§8.5) |
//! | `Utf8`, `LargeUtf8`, `Dictionary(_, Utf8)` | variable-length UTF-8 | `""` |
//! | `FixedSizeList(n)` of an integer or float type | array datatype of `n` elements | the item's Table 1 sentinel in every element |
//! | `Timestamp(unit, tz)` | int64 counts, `units` `"<unit> since 1970-01-01 00:00:00"` (` UTC` added with a time zone; its name is not kept), `units_vocabulary` `"UDUNITS-2"` | Table 1 sentinel |
//! | `Struct` of the fixed-size types above (nested structs too) | compound: one member per field, named as the field, each of its type above, little-endian, packed in field order (§8.3: the fields are atomic values) | the record of the members' own fills |
//!
//! Export gives the HDF5 types back, so a round trip returns dictionaries
//! as strings, timestamps as `Int64` (with the `units` in the field
//! metadata) and booleans as `UInt8`. A timestamp inside a struct is its
//! int64 counts: `units` is an attribute of the whole column, so the
//! field's unit is not recorded.
//!
//! Nulls become the fill value (a null struct: the whole fill record); a
//! non-null value equal to the fill (say an empty string, or a struct
//! whose fields all hold their fills) is refused with an error naming the
//! column, before the batch is written. HEP001 marks a whole compound
//! element missing or not (§8.5), so a null field (or list item) inside a
//! non-null struct has no stored form: it is refused, naming the column
//! and the field, rather than written as a value that would read back as
//! non-null. Strings, dictionaries and other variable-length types inside
//! a struct are refused too (a compound column's fields are fixed-size
//! here).

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type,
    TimestampMicrosecondType, TimestampMillisecondType, TimestampNanosecondType,
    TimestampSecondType, UInt16Type, UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchReader};
use arrow_schema::{DataType, Fields, TimeUnit};
use h5fmt::format::datatype::CompoundMember;
use h5fmt::Datatype;
use h5table::write::{ColumnData, ColumnSpec, FillSpec, Scalar, TableEditor, TableWriter};

/// How columns are stored.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// Rows per chunk of every column.
    pub chunk_rows: u64,
    /// `"zstd"`, `"deflate"`, `"lz4"` or `"none"`.
    pub compress: String,
    /// Fill values by column name, instead of the mapping's default.
    pub fills: std::collections::HashMap<String, FillSpec>,
    /// `Dictionary` columns stored as HEP001 categorical columns (§8.7), by
    /// name: the labels (a categories dataset of the column's name under
    /// `CATEGORIES`) and `ordered`. Codes are int32 with fill −1 (a null).
    pub categories: std::collections::HashMap<String, (ArrayRef, bool)>,
    /// `INDEX_COLUMNS` (and `_index`, the first).
    pub index_columns: Vec<String>,
    /// The table's `TITLE`.
    pub title: Option<String>,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            chunk_rows: 65_536,
            compress: "zstd".into(),
            fills: std::collections::HashMap::new(),
            categories: std::collections::HashMap::new(),
            index_columns: Vec::new(),
            title: None,
        }
    }
}

/// A column's datatype, fill and optional `valid_min`/`valid_max`.
type Mapping = (Datatype, FillSpec, Option<(Scalar, Scalar)>);

fn dtype_of(t: &DataType) -> Result<Mapping, String> {
    Ok(match t {
        DataType::Int8 => (Datatype::int_le(1, true), FillSpec::Sentinel, None),
        DataType::Int16 => (Datatype::int_le(2, true), FillSpec::Sentinel, None),
        DataType::Int32 => (Datatype::int_le(4, true), FillSpec::Sentinel, None),
        DataType::Int64 => (Datatype::int_le(8, true), FillSpec::Sentinel, None),
        DataType::UInt8 => (Datatype::int_le(1, false), FillSpec::Sentinel, None),
        DataType::UInt16 => (Datatype::int_le(2, false), FillSpec::Sentinel, None),
        DataType::UInt32 => (Datatype::int_le(4, false), FillSpec::Sentinel, None),
        DataType::UInt64 => (Datatype::int_le(8, false), FillSpec::Sentinel, None),
        DataType::Float16 => (Datatype::float_le(2), FillSpec::NaN, None),
        DataType::Float32 => (Datatype::float_le(4), FillSpec::Sentinel, None),
        DataType::Float64 => (Datatype::float_le(8), FillSpec::Sentinel, None),
        DataType::Boolean => (
            Datatype::int_le(1, false),
            FillSpec::Value(Scalar::Int(2)),
            Some((Scalar::Int(0), Scalar::Int(1))),
        ),
        DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View => {
            (Datatype::vlen_utf8(), FillSpec::Sentinel, None)
        }
        DataType::Dictionary(_, v) if matches!(**v, DataType::Utf8 | DataType::LargeUtf8) => {
            (Datatype::vlen_utf8(), FillSpec::Sentinel, None)
        }
        DataType::Timestamp(..) => (Datatype::int_le(8, true), FillSpec::Sentinel, None),
        DataType::FixedSizeList(item, n) => {
            let (base, _, _) = dtype_of(item.data_type())?;
            let one = sentinel_bytes(item.data_type()).ok_or_else(|| {
                format!(
                    "FixedSizeList of {} has no HEP001 column mapping",
                    item.data_type()
                )
            })?;
            let n = usize::try_from(*n).map_err(|_| format!("FixedSizeList size {n}"))?;
            (
                Datatype::Array {
                    dims: vec![n as u64],
                    base: Box::new(base),
                },
                FillSpec::Raw(one.repeat(n)),
                None,
            )
        }
        DataType::Struct(fields) => {
            let (dt, fill) = compound_of(fields)?;
            (dt, FillSpec::Raw(fill), None)
        }
        other => {
            return Err(format!(
                "Arrow type {other} has no HEP001 column mapping yet"
            ))
        }
    })
}

/// The compound datatype of a struct's fields (packed, in field order) and
/// its fill record (each member's own fill).
fn compound_of(fields: &Fields) -> Result<(Datatype, Vec<u8>), String> {
    if fields.is_empty() {
        return Err("a struct without fields has no HEP001 column mapping".into());
    }
    let mut members: Vec<CompoundMember> = Vec::with_capacity(fields.len());
    let mut fill = Vec::new();
    for f in fields {
        let what = |e: String| format!("field {:?}: {e}", f.name());
        if members.iter().any(|m| m.name == *f.name()) {
            return Err(what("the name is used twice in the struct".into()));
        }
        let (dt, bytes) = match f.data_type() {
            DataType::Struct(inner) => compound_of(inner).map_err(what)?,
            t => {
                let (dt, spec, _) = dtype_of(t).map_err(what)?;
                if dt.is_variable_length() {
                    return Err(what(format!(
                        "{t} inside a struct: a compound column's fields are fixed-size, \
                         atomic values here (HEP001 §8.3), not variable-length strings"
                    )));
                }
                (dt, member_fill(t, &spec).map_err(what)?)
            }
        };
        members.push(CompoundMember {
            name: f.name().clone(),
            offset: u32::try_from(fill.len()).map_err(|_| what("struct too large".into()))?,
            dtype: dt,
        });
        fill.extend_from_slice(&bytes);
    }
    let size = u32::try_from(fill.len()).map_err(|_| "struct too large".to_string())?;
    Ok((Datatype::Compound { size, members }, fill))
}

/// The bytes of a struct field's fill (the default of [`dtype_of`]).
fn member_fill(t: &DataType, spec: &FillSpec) -> Result<Vec<u8>, String> {
    match (spec, t) {
        (FillSpec::Raw(b), _) => Ok(b.clone()),
        (FillSpec::NaN, DataType::Float16) => Ok(vec![0x00, 0x7e]), // a binary16 quiet NaN,
        (FillSpec::Value(Scalar::Int(2)), DataType::Boolean) => Ok(vec![2]),
        (FillSpec::Sentinel, DataType::Timestamp(..)) => {
            sentinel_bytes(&DataType::Int64).ok_or_else(|| "no sentinel".into())
        }
        (FillSpec::Sentinel, t) => {
            sentinel_bytes(t).ok_or_else(|| format!("{t} has no fill inside a struct"))
        }
        (_, t) => Err(format!("{t} has no fill inside a struct")),
    }
}

/// The Table 1 sentinel of a numeric Arrow type, as little-endian bytes.
fn sentinel_bytes(t: &DataType) -> Option<Vec<u8>> {
    const FLOAT_FILL: f64 = 9.969_209_968_386_869e36;
    Some(match t {
        DataType::Int8 => (i8::MIN + 1).to_le_bytes().to_vec(),
        DataType::Int16 => (i16::MIN + 1).to_le_bytes().to_vec(),
        DataType::Int32 => (i32::MIN + 1).to_le_bytes().to_vec(),
        DataType::Int64 => (i64::MIN + 1).to_le_bytes().to_vec(),
        DataType::UInt8 => u8::MAX.to_le_bytes().to_vec(),
        DataType::UInt16 => u16::MAX.to_le_bytes().to_vec(),
        DataType::UInt32 => u32::MAX.to_le_bytes().to_vec(),
        DataType::UInt64 => u64::MAX.to_le_bytes().to_vec(),
        #[allow(clippy::cast_possible_truncation)] // the sentinel is a float32 value
        DataType::Float32 => (FLOAT_FILL as f32).to_le_bytes().to_vec(),
        DataType::Float64 => FLOAT_FILL.to_le_bytes().to_vec(),
        _ => return None,
    })
}

/// The little-endian bytes of a primitive array's values.
pub(crate) fn le_bytes(a: &dyn Array) -> Result<Vec<u8>, String> {
    fixed_bytes(a, None)
}

/// The elements of `a` as packed little-endian bytes: numbers, booleans
/// (0/1), timestamps (int64 counts), fixed-size lists of those, structs
/// (records of their fields). With `live`, a null in a live row (`live[i]`)
/// is refused: it has no stored form inside a record.
fn fixed_bytes(a: &dyn Array, live: Option<&[bool]>) -> Result<Vec<u8>, String> {
    if let Some(live) = live {
        if a.null_count() > 0 {
            if let Some(i) = (0..a.len()).find(|&i| live.get(i) == Some(&true) && a.is_null(i)) {
                return Err(format!(
                    "row {i} is null inside a non-null struct: HEP001 marks a whole \
                     compound value missing, not one field (§8.5)"
                ));
            }
        }
    }
    macro_rules! le {
        ($t:ty) => {
            a.as_primitive::<$t>()
                .values()
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect()
        };
    }
    Ok(match a.data_type() {
        DataType::Int8 => le!(Int8Type),
        DataType::Int16 => le!(Int16Type),
        DataType::Int32 => le!(Int32Type),
        DataType::Int64 => le!(Int64Type),
        DataType::UInt8 => le!(UInt8Type),
        DataType::UInt16 => le!(UInt16Type),
        DataType::UInt32 => le!(UInt32Type),
        DataType::UInt64 => le!(UInt64Type),
        DataType::Float32 => le!(Float32Type),
        DataType::Float64 => le!(Float64Type),
        DataType::Float16 => le!(Float16Type),
        DataType::Timestamp(TimeUnit::Second, _) => le!(TimestampSecondType),
        DataType::Timestamp(TimeUnit::Millisecond, _) => le!(TimestampMillisecondType),
        DataType::Timestamp(TimeUnit::Microsecond, _) => le!(TimestampMicrosecondType),
        DataType::Timestamp(TimeUnit::Nanosecond, _) => le!(TimestampNanosecondType),
        DataType::Boolean => {
            let b = a.as_boolean();
            (0..b.len()).map(|i| u8::from(b.value(i))).collect()
        }
        DataType::FixedSizeList(..) => {
            let l = a.as_fixed_size_list();
            let n = usize::try_from(l.value_length()).unwrap_or(0);
            let values = l
                .values()
                .slice(usize::try_from(l.value_offset(0)).unwrap_or(0), l.len() * n);
            let item_live: Option<Vec<bool>> =
                live.map(|v| v.iter().flat_map(|&x| std::iter::repeat_n(x, n)).collect());
            fixed_bytes(values.as_ref(), item_live.as_deref())
                .map_err(|e| format!("list items: {e}"))?
        }
        DataType::Struct(_) => {
            let live: Vec<bool> = match live {
                Some(v) => v.to_vec(),
                None => vec![true; a.len()],
            };
            record_bytes(a.as_struct(), &live)?
        }
        t => {
            return Err(format!(
                "list items of type {t} have no HEP001 column mapping"
            ))
        }
    })
}

/// The records of a struct array (its fields' bytes interleaved row by
/// row, packed as [`compound_of`] lays them out); a null field in a row
/// where `live` is set is refused.
fn record_bytes(s: &arrow_array::StructArray, live: &[bool]) -> Result<Vec<u8>, String> {
    let n = s.len();
    let mut parts = Vec::with_capacity(s.num_columns());
    for (f, c) in s.fields().iter().zip(s.columns()) {
        let b = fixed_bytes(c.as_ref(), Some(live))
            .map_err(|e| format!("field {:?}: {e}", f.name()))?;
        parts.push(b);
    }
    let size: usize = parts.iter().map(|p| p.len() / n.max(1)).sum();
    let mut out = Vec::with_capacity(n * size);
    for i in 0..n {
        for p in &parts {
            let w = p.len() / n.max(1);
            out.extend_from_slice(p.get(i * w..(i + 1) * w).unwrap_or_default());
        }
    }
    Ok(out)
}

/// Refuse a row of record or list data (raw bytes) equal to the column's
/// `fill` that is not marked missing: it would read back as missing (§8.5).
fn refuse_fill_rows(d: &ColumnData, fill: &[u8]) -> Result<(), String> {
    let (values, missing) = match d {
        ColumnData::Masked { values, missing } => (&**values, Some(missing)),
        d => (d, None),
    };
    let ColumnData::Raw(b) = values else {
        return Ok(());
    };
    if fill.is_empty() {
        return Ok(());
    }
    let is_missing = |i: usize| missing.is_some_and(|m| m.get(i) == Some(&true));
    match b
        .chunks_exact(fill.len())
        .enumerate()
        .find(|(i, e)| *e == fill && !is_missing(*i))
    {
        Some((i, _)) => Err(format!(
            "row {i} holds the fill value (every field its fill), so it would read as \
             missing (§8.5): mark it null or choose another fill"
        )),
        None => Ok(()),
    }
}

/// The UDUNITS-2 `units` of a timestamp column.
fn units_of(t: &DataType) -> Option<String> {
    let DataType::Timestamp(unit, tz) = t else {
        return None;
    };
    let unit = match unit {
        TimeUnit::Second => "seconds",
        TimeUnit::Millisecond => "milliseconds",
        TimeUnit::Microsecond => "microseconds",
        TimeUnit::Nanosecond => "nanoseconds",
    };
    let utc = if tz.is_some() { " UTC" } else { "" };
    Some(format!("{unit} since 1970-01-01 00:00:00{utc}"))
}

fn strings(a: &dyn Array) -> Result<Vec<Option<String>>, String> {
    let cast = arrow_cast_utf8(a)?;
    Ok((0..cast.len())
        .map(|i| (!cast.is_null(i)).then(|| cast.value(i).to_string()))
        .collect())
}

fn arrow_cast_utf8(a: &dyn Array) -> Result<arrow_array::StringArray, String> {
    match a.data_type() {
        DataType::Utf8 => Ok(a.as_string::<i32>().clone()),
        DataType::LargeUtf8 => Ok(a.as_string::<i64>().iter().collect()),
        DataType::Utf8View => Ok(a.as_string_view().iter().collect()),
        DataType::Dictionary(k, _) => {
            let any = a.as_any_dictionary();
            let values = arrow_cast_utf8(any.values().as_ref())?;
            let keys = any.normalized_keys();
            let _ = k;
            Ok((0..a.len())
                .map(|i| (!a.is_null(i)).then(|| values.value(keys[i])))
                .collect())
        }
        t => Err(format!("not a string column: {t}")),
    }
}

/// One Arrow array as [`ColumnData`] (nulls as a missing mask).
fn column_data(a: &dyn Array) -> Result<ColumnData, String> {
    macro_rules! prim {
        ($t:ty, $v:ident) => {
            ColumnData::$v(a.as_primitive::<$t>().values().to_vec())
        };
    }
    let data = match a.data_type() {
        DataType::Int8 => prim!(Int8Type, Int8),
        DataType::Int16 => prim!(Int16Type, Int16),
        DataType::Int32 => prim!(Int32Type, Int32),
        DataType::Int64 => prim!(Int64Type, Int64),
        DataType::UInt8 => prim!(UInt8Type, UInt8),
        DataType::UInt16 => prim!(UInt16Type, UInt16),
        DataType::UInt32 => prim!(UInt32Type, UInt32),
        DataType::UInt64 => prim!(UInt64Type, UInt64),
        DataType::Float16 => ColumnData::Float16(
            a.as_primitive::<Float16Type>()
                .values()
                .iter()
                .map(|h| h.to_bits())
                .collect(),
        ),
        DataType::Float32 => prim!(Float32Type, Float32),
        DataType::Float64 => prim!(Float64Type, Float64),
        DataType::Timestamp(unit, _) => match unit {
            TimeUnit::Second => prim!(TimestampSecondType, Int64),
            TimeUnit::Millisecond => prim!(TimestampMillisecondType, Int64),
            TimeUnit::Microsecond => prim!(TimestampMicrosecondType, Int64),
            TimeUnit::Nanosecond => prim!(TimestampNanosecondType, Int64),
        },
        DataType::Boolean => {
            let b = a.as_boolean();
            ColumnData::UInt8((0..b.len()).map(|i| u8::from(b.value(i))).collect())
        }
        DataType::FixedSizeList(..) => ColumnData::Raw(le_bytes(a)?),
        DataType::Struct(_) => {
            let live: Vec<bool> = (0..a.len()).map(|i| a.is_valid(i)).collect();
            ColumnData::Raw(record_bytes(a.as_struct(), &live)?)
        }
        _ => return Ok(ColumnData::Str(strings(a)?)),
    };
    Ok(if a.null_count() > 0 {
        data.with_missing((0..a.len()).map(|i| a.is_null(i)).collect())
    } else {
        data
    })
}

/// Declared categories by column name.
type CategoryMap = std::collections::HashMap<String, (ArrayRef, bool)>;

/// The fill records of the columns written from raw bytes (structs and
/// fixed-size lists), by column name.
type RawFills = std::collections::HashMap<String, Vec<u8>>;

/// A dictionary array's codes into the declared `labels` (int32, null → −1).
fn codes(a: &dyn Array, labels: &ArrayRef) -> Result<ColumnData, String> {
    let d = a.as_any_dictionary();
    let keys = d.normalized_keys();
    let values = d.values();
    // Batch dictionary position → declared label position.
    let map: Vec<i32> = if values.to_data() == labels.to_data() {
        (0..values.len()).map(|i| i as i32).collect()
    } else if values.data_type() == labels.data_type()
        && matches!(labels.data_type(), DataType::Utf8)
    {
        let pos: std::collections::HashMap<&str, i32> = labels
            .as_string::<i32>()
            .iter()
            .enumerate()
            .filter_map(|(i, s)| Some((s?, i as i32)))
            .collect();
        values
            .as_string::<i32>()
            .iter()
            .map(|s| {
                s.and_then(|s| pos.get(s).copied())
                    .ok_or_else(|| format!("dictionary value {s:?} is not a declared category"))
            })
            .collect::<Result<_, _>>()?
    } else {
        return Err("the batch's dictionary is not the declared categories".into());
    };
    let mut missing = Vec::with_capacity(a.len());
    let c = (0..a.len())
        .map(|i| {
            let null = a.is_null(i);
            missing.push(null);
            if null {
                -1
            } else {
                keys.get(i).and_then(|&k| map.get(k)).copied().unwrap_or(-1)
            }
        })
        .collect();
    let data = ColumnData::Int32(c);
    Ok(if missing.iter().any(|&m| m) {
        data.with_missing(missing)
    } else {
        data
    })
}

fn batch_rows(
    b: &RecordBatch,
    cats: &CategoryMap,
    raw_fills: &RawFills,
) -> Result<Vec<(String, ColumnData)>, String> {
    b.schema()
        .fields()
        .iter()
        .zip(b.columns())
        .map(|(f, a)| {
            match cats.get(f.name()) {
                Some((labels, _)) => codes(a.as_ref(), labels),
                None => column_data(a.as_ref()),
            }
            .and_then(|d| match raw_fills.get(f.name()) {
                Some(fill) => refuse_fill_rows(&d, fill).map(|()| d),
                None => Ok(d),
            })
            .map(|d| (f.name().clone(), d))
            .map_err(|e| format!("column {:?}: {e}", f.name()))
        })
        .collect()
}

/// Create table `table_path` in `file` (created when missing) from the
/// batches of `reader`; returns the number of rows imported.
///
/// # Errors
/// A one-line message: unsupported Arrow types, values equal to the fill,
/// an existing table at the path, HDF5 errors. Batches committed before an
/// error stay in the table (each is one §11 append).
pub fn import(
    file: &std::path::Path,
    table_path: &str,
    mut reader: Box<dyn RecordBatchReader + Send>,
    opts: &ImportOptions,
    progress: &dyn Fn(u64),
) -> Result<u64, String> {
    let schema = reader.schema();
    let mut tw = TableWriter::new();
    let mut raw_fills = RawFills::new();
    for f in schema.fields() {
        let categorical = opts.categories.get(f.name());
        let (dt, mut fill, range) = match categorical {
            Some((labels, ordered)) => {
                let what = |e: String| format!("column {:?}: categories: {e}", f.name());
                let (ldt, _, _) = dtype_of(labels.data_type()).map_err(what)?;
                let ldata = column_data(labels.as_ref()).map_err(what)?;
                tw = tw.categories(f.name(), ldt, ldata, *ordered);
                (
                    Datatype::int_le(4, true),
                    FillSpec::Value(Scalar::Int(-1)),
                    None,
                )
            }
            None => dtype_of(f.data_type()).map_err(|e| format!("column {:?}: {e}", f.name()))?,
        };
        if let Some(x) = opts.fills.get(f.name()) {
            fill = x.clone();
        }
        if let FillSpec::Raw(b) = &fill {
            raw_fills.insert(f.name().clone(), b.clone());
        }
        let mut spec = ColumnSpec::new(f.name(), dt)
            .chunk(opts.chunk_rows)
            .fill(fill);
        if let Some((lo, hi)) = range {
            spec = spec.valid_range(lo, hi);
        }
        if categorical.is_some() {
            spec = spec.categorical(f.name());
        }
        if let Some(u) = units_of(f.data_type()) {
            spec = spec.units(&u).units_vocabulary("UDUNITS-2");
        }
        spec = match opts.compress.as_str() {
            "zstd" => spec.shuffle().zstd(3),
            "deflate" | "gzip" => spec.shuffle().deflate(4),
            "lz4" => spec.shuffle().lz4(),
            "none" => spec,
            other => {
                return Err(format!(
                    "--compress {other:?}: expected zstd, deflate, lz4 or none"
                ))
            }
        };
        tw = tw.column(spec);
    }
    if let Some(t) = &opts.title {
        tw = tw.title(t);
    }
    if !opts.index_columns.is_empty() {
        let names: Vec<&str> = opts.index_columns.iter().map(String::as_str).collect();
        tw = tw.index_columns(&names);
    }
    if !file.exists() {
        let w = h5fmt::FileWriter::create(file).map_err(|e| format!("{}: {e}", file.display()))?;
        w.close().map_err(|e| format!("{}: {e}", file.display()))?;
    }
    let mut ed = h5fmt::FileEditor::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let first = reader.next().transpose().map_err(|e| e.to_string())?;
    let first_rows = match &first {
        Some(b) => batch_rows(b, &opts.categories, &raw_fills)?,
        None => Vec::new(),
    };
    let (names, datas): (Vec<String>, Vec<ColumnData>) = first_rows.into_iter().unzip();
    let refs: Vec<(&str, ColumnData)> = names.iter().map(String::as_str).zip(datas).collect();
    tw.create_in(&mut ed, table_path, &refs)
        .map_err(|e| format!("{}: {e}", file.display()))?;
    let mut total = first.as_ref().map_or(0, |b| b.num_rows() as u64);
    progress(total);
    append_batches(
        &mut ed,
        table_path,
        reader,
        &mut total,
        progress,
        &opts.categories,
        &raw_fills,
    )?;
    ed.close().map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(total)
}

/// Append the batches of `reader` to the existing table `table_path` of `file`.
///
/// # Errors
/// As [`import`]; the batch's columns must be the table's.
pub fn append(
    file: &std::path::Path,
    table_path: &str,
    reader: Box<dyn RecordBatchReader + Send>,
    progress: &dyn Fn(u64),
) -> Result<u64, String> {
    let mut ed = h5fmt::FileEditor::open(file).map_err(|e| format!("{}: {e}", file.display()))?;
    let raw_fills: RawFills = {
        let g = ed
            .reader()
            .group(table_path)
            .map_err(|e| format!("{table_path}: {e}"))?;
        let t = h5table::Table::open(&g).map_err(|e| e.to_string())?;
        t.columns()
            .iter()
            .filter(|c| {
                matches!(
                    c.dtype(),
                    Datatype::Compound { .. } | Datatype::Array { .. }
                )
            })
            .map(|c| (c.name().to_string(), c.fill().bytes.clone()))
            .collect()
    };
    let mut total = 0;
    append_batches(
        &mut ed,
        table_path,
        reader,
        &mut total,
        progress,
        &CategoryMap::new(),
        &raw_fills,
    )?;
    ed.close().map_err(|e| format!("{}: {e}", file.display()))?;
    Ok(total)
}

fn append_batches(
    ed: &mut h5fmt::FileEditor,
    table_path: &str,
    reader: Box<dyn RecordBatchReader + Send>,
    total: &mut u64,
    progress: &dyn Fn(u64),
    cats: &CategoryMap,
    raw_fills: &RawFills,
) -> Result<(), String> {
    let mut t = TableEditor::open(ed, table_path).map_err(|e| e.to_string())?;
    for b in reader {
        let b = b.map_err(|e| e.to_string())?;
        if b.num_rows() == 0 {
            continue;
        }
        let (names, datas): (Vec<String>, Vec<ColumnData>) =
            batch_rows(&b, cats, raw_fills)?.into_iter().unzip();
        let refs: Vec<(&str, ColumnData)> = names.iter().map(String::as_str).zip(datas).collect();
        t.append(&refs).map_err(|e| e.to_string())?;
        *total += b.num_rows() as u64;
        progress(*total);
    }
    Ok(())
}
