//! anndata dataframes (`adata.obs`, `adata.var`, any group with
//! `encoding-type = "dataframe"`) into and out of HEP001.
//!
//! Import reads the dataframe with [`h5table::anndata`] in row batches and
//! goes through [`crate::table_import::import`]: the index becomes the
//! first column and the table's `INDEX_COLUMNS` / `_index`; a categorical
//! column becomes a HEP001 categorical column (int32 codes, the categories
//! under `CATEGORIES`, `ordered` kept) whose fill −1 marks anndata's code
//! −1; a nullable column's masked rows become its fill. Each column's fill
//! is the mapping's default (HEP001 Table 1 sentinel, `""` for strings)
//! when no row holds it (a first pass over the rows checks), else another
//! value no row holds; a column whose rows use every value of its type
//! (possible for 1- and 2-byte integers) is refused, as is a 4- or 8-byte
//! integer column holding each of the candidates tried (the sentinel, MIN,
//! MAX, and one past the data's range on either side).
//!
//! Export writes the table with [`h5table::anndata::DataFrameWriter`]: the
//! first `INDEX_COLUMNS` entry (else the first column) is the index; a
//! categorical column becomes `categorical`; an integer, boolean or string
//! column with missing rows becomes `nullable-integer`, `nullable-boolean`
//! or `nullable-string-array` (a first pass finds which), one without
//! becomes `array` / `string-array`; a `uint8` column with `valid_min` 0 and
//! `valid_max` 1 (what import writes for booleans) becomes booleans again.

use crate::table_import::ImportOptions;
use crate::table_rows::split_spec;
use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use h5table::anndata::{DataFrame, DataFrameWriter, WriteOptions};
use h5table::write::{FillSpec, Scalar};
use h5table::Table;
use std::collections::HashSet;
use std::sync::Arc;

/// Whether `src`'s object at `path` is an anndata dataframe group.
pub fn is_dataframe(file: &h5fmt::File, path: &str) -> bool {
    file.group(path)
        .is_ok_and(|g| h5table::anndata::is_dataframe(&g))
}

/// The values seen in a column, to find a fill no row holds.
enum Seen {
    /// 1- and 2-byte integers: every value, by offset from the type's MIN.
    Small {
        min: i128,
        used: Vec<bool>,
    },
    /// Wider integers: the candidates seen, and the range of the data.
    Wide {
        min: i128,
        max: i128,
        cand: Vec<(i128, bool)>,
        lo: Option<i128>,
        hi: Option<i128>,
    },
    /// Floats (as f64) and strings: the candidates seen.
    Floats(Vec<(f64, bool)>, bool),
    Strings(Vec<(String, bool)>),
    /// Needs no search (booleans: fill 2; categoricals: −1).
    None,
}

fn int_range(t: &DataType) -> Option<(i128, i128, i128)> {
    // (MIN, MAX, Table 1 sentinel)
    Some(match t {
        DataType::Int8 => (i8::MIN.into(), i8::MAX.into(), (i8::MIN + 1).into()),
        DataType::Int16 => (i16::MIN.into(), i16::MAX.into(), (i16::MIN + 1).into()),
        DataType::Int32 => (i32::MIN.into(), i32::MAX.into(), (i32::MIN + 1).into()),
        DataType::Int64 => (i64::MIN.into(), i64::MAX.into(), (i64::MIN + 1).into()),
        DataType::UInt8 => (0, u8::MAX.into(), u8::MAX.into()),
        DataType::UInt16 => (0, u16::MAX.into(), u16::MAX.into()),
        DataType::UInt32 => (0, u32::MAX.into(), u32::MAX.into()),
        DataType::UInt64 => (0, u64::MAX.into(), u64::MAX.into()),
        _ => return None,
    })
}

const FLOAT_FILL: f64 = 9.969_209_968_386_869e36;

impl Seen {
    fn of(t: &DataType) -> Seen {
        if let Some((min, max, sentinel)) = int_range(t) {
            return if max - min < 65_536 {
                Seen::Small {
                    min,
                    used: vec![false; usize::try_from(max - min + 1).unwrap_or(0)],
                }
            } else {
                Seen::Wide {
                    min,
                    max,
                    cand: [sentinel, min, max].iter().map(|&c| (c, false)).collect(),
                    lo: None,
                    hi: None,
                }
            };
        }
        match t {
            DataType::Float32 => Seen::Floats(
                [
                    f64::from(FLOAT_FILL as f32),
                    f64::from(f32::MAX),
                    f64::from(f32::MIN),
                ]
                .iter()
                .map(|&c| (c, false))
                .collect(),
                false,
            ),
            DataType::Float64 => Seen::Floats(
                [FLOAT_FILL, f64::MAX, f64::MIN]
                    .iter()
                    .map(|&c| (c, false))
                    .collect(),
                false,
            ),
            DataType::Utf8 | DataType::LargeUtf8 => Seen::Strings(
                ["", "NA", "<NA>", "__missing__", "\u{fffd}"]
                    .iter()
                    .map(|s| (s.to_string(), false))
                    .collect(),
            ),
            _ => Seen::None,
        }
    }

    fn int(&mut self, v: i128) {
        match self {
            Seen::Small { min, used } => {
                if let Some(u) = usize::try_from(v - *min).ok().and_then(|i| used.get_mut(i)) {
                    *u = true;
                }
            }
            Seen::Wide { cand, lo, hi, .. } => {
                for c in cand.iter_mut() {
                    c.1 |= c.0 == v;
                }
                *lo = Some(lo.map_or(v, |l| l.min(v)));
                *hi = Some(hi.map_or(v, |h| h.max(v)));
            }
            _ => {}
        }
    }

    fn add(&mut self, a: &dyn Array) {
        macro_rules! ints {
            ($t:ty) => {
                for v in a.as_primitive::<$t>().iter().flatten() {
                    self.int(i128::from(v));
                }
            };
        }
        match a.data_type() {
            DataType::Int8 => ints!(Int8Type),
            DataType::Int16 => ints!(Int16Type),
            DataType::Int32 => ints!(Int32Type),
            DataType::Int64 => ints!(Int64Type),
            DataType::UInt8 => ints!(UInt8Type),
            DataType::UInt16 => ints!(UInt16Type),
            DataType::UInt32 => ints!(UInt32Type),
            DataType::UInt64 => ints!(UInt64Type),
            DataType::Float32 | DataType::Float64 => {
                let vals: Vec<f64> = if let DataType::Float32 = a.data_type() {
                    a.as_primitive::<Float32Type>()
                        .iter()
                        .flatten()
                        .map(f64::from)
                        .collect()
                } else {
                    a.as_primitive::<Float64Type>().iter().flatten().collect()
                };
                if let Seen::Floats(cand, nan) = self {
                    for v in vals {
                        *nan |= v.is_nan();
                        for c in cand.iter_mut() {
                            c.1 |= c.0 == v;
                        }
                    }
                }
            }
            DataType::Utf8 | DataType::LargeUtf8 => {
                if let Seen::Strings(cand) = self {
                    let strs: Vec<&str> = if let DataType::Utf8 = a.data_type() {
                        a.as_string::<i32>().iter().flatten().collect()
                    } else {
                        a.as_string::<i64>().iter().flatten().collect()
                    };
                    for s in strs {
                        for c in cand.iter_mut() {
                            c.1 |= c.0 == s;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// The fill: `None` keeps the mapping's default; `Err` when none is free.
    fn fill(&self) -> Result<Option<FillSpec>, String> {
        let first_free = |cand: &[(i128, bool)]| cand.iter().position(|c| !c.1);
        match self {
            Seen::Small { min, used } => {
                // The sentinel (MIN + 1 signed, MAX unsigned) first, then the lowest free value.
                let sentinel = if *min < 0 {
                    1
                } else {
                    used.len().saturating_sub(1)
                };
                if used.get(sentinel) == Some(&false) {
                    return Ok(None);
                }
                match used.iter().position(|u| !u) {
                    Some(i) => Ok(Some(FillSpec::Value(Scalar::Int(*min + i as i128)))),
                    None => Err("its rows use every value of its type, so no fill value is \
                                 free to mark missing rows"
                        .into()),
                }
            }
            Seen::Wide {
                min,
                max,
                cand,
                lo,
                hi,
            } => match first_free(cand) {
                Some(0) => Ok(None),
                Some(i) => Ok(cand.get(i).map(|c| FillSpec::Value(Scalar::Int(c.0)))),
                None => match (lo, hi) {
                    (_, Some(h)) if h < max => Ok(Some(FillSpec::Value(Scalar::Int(h + 1)))),
                    (Some(l), _) if l > min => Ok(Some(FillSpec::Value(Scalar::Int(l - 1)))),
                    _ => Err(
                        "its rows hold every fill value tried (the sentinel, MIN, MAX and \
                              one past the data's range), so no fill value is free"
                            .into(),
                    ),
                },
            },
            Seen::Floats(cand, nan) => match cand.iter().position(|c| !c.1) {
                Some(0) => Ok(None),
                _ if !nan => Ok(Some(FillSpec::NaN)),
                Some(i) => Ok(cand.get(i).map(|c| FillSpec::Value(Scalar::Float(c.0)))),
                None => Err("its rows hold NaN and every fill value tried".into()),
            },
            Seen::Strings(cand) => match cand.iter().position(|c| !c.1) {
                Some(0) => Ok(None),
                Some(i) => Ok(cand.get(i).map(|c| FillSpec::Str(c.0.clone()))),
                None => Err("its rows hold every fill string tried".into()),
            },
            Seen::None => Ok(None),
        }
    }
}

/// `h5 table import SRC.h5:/obs --to OUT.h5:/path`: an anndata dataframe
/// into a new HEP001 table; returns the number of rows.
///
/// # Errors
/// A one-line message naming the source object or column.
pub fn import(
    src_file: &std::path::Path,
    file: &h5fmt::File,
    src_path: &str,
    to: &str,
    opts: &mut ImportOptions,
    batch_rows: u64,
) -> Result<u64, String> {
    let (out_file, out_path) = split_spec(to)?;
    let e = |x: h5table::Error| format!("{}: {x}", src_file.display());
    let g = file
        .group(src_path)
        .map_err(|x| format!("{}:{src_path}: {x}", src_file.display()))?;
    let df = DataFrame::open(&g).map_err(e)?;
    let schema = df.schema();
    let mut seen: Vec<Seen> = schema
        .fields()
        .iter()
        .map(|f| Seen::of(f.data_type()))
        .collect();
    if seen.iter().any(|s| !matches!(s, Seen::None)) {
        let step = batch_rows.max(1);
        let mut start = 0;
        while start < df.nrows() {
            let end = start.saturating_add(step).min(df.nrows());
            let b = df.read(start..end).map_err(e)?;
            start = end;
            for (s, a) in seen.iter_mut().zip(b.columns()) {
                s.add(a.as_ref());
            }
        }
    }
    for (f, s) in schema.fields().iter().zip(&seen) {
        let col_path = format!("{}/{}", df.path().trim_end_matches('/'), f.name());
        if let Some(fill) = s.fill().map_err(|m| {
            format!(
                "{}:{col_path}: column {:?}: {m}",
                src_file.display(),
                f.name()
            )
        })? {
            opts.fills.insert(f.name().clone(), fill);
        }
    }
    for c in df.columns() {
        if let Some(cats) = c.categories() {
            opts.categories
                .insert(c.name.clone(), (cats.clone(), c.ordered));
        }
    }
    opts.index_columns = vec![df.index().name.clone()];
    crate::table_import::import(
        out_file,
        out_path,
        Box::new(df.batches(batch_rows)),
        opts,
        &|_| {},
    )
}

/// Whether column `name` of `table` is what import writes for booleans:
/// `uint8` with `valid_min` 0 and `valid_max` 1.
fn is_bool_column(table: &Table, name: &str) -> bool {
    let Ok(c) = table.column(name) else {
        return false;
    };
    let one = |attr: &str| {
        c.dataset()
            .attr(attr)
            .ok()
            .and_then(|a| a.read_values().ok())
            .and_then(|v| v.into_iter().next())
    };
    *c.dtype() == h5fmt::Datatype::int_le(1, false)
        && matches!(one("valid_min"), Some(h5fmt::Value::UInt(0)))
        && matches!(one("valid_max"), Some(h5fmt::Value::UInt(1)))
}

fn to_bool(a: &ArrayRef) -> ArrayRef {
    let u = a.as_primitive::<UInt8Type>();
    Arc::new(BooleanArray::new(
        u.values().iter().map(|&v| v != 0).collect(),
        u.nulls().cloned(),
    ))
}

/// `h5 table export IN.h5:/table --as anndata OUT.h5:/obs`; returns the number of rows.
///
/// # Errors
/// A one-line message: a column with no anndata encoding, an existing
/// object at the output path, HDF5 errors.
pub fn export(table: &Table, out: &str, batch: u64) -> Result<u64, String> {
    let (file, path) = split_spec(out)?;
    let batch = batch.max(1);
    let te = |x: h5table::Error| format!("{}: {x}", table.path());
    let xopts = h5table::arrow::ExportOptions {
        batch_rows: batch,
        ..Default::default()
    };
    let all = h5table::arrow::schema(table, None, &xopts).map_err(te)?;
    if all.fields().is_empty() {
        return Err(format!(
            "{}: a table without columns has no index",
            table.path()
        ));
    }
    let index = table
        .index_columns
        .first()
        .cloned()
        .unwrap_or_else(|| all.field(0).name().clone());
    let mut names: Vec<String> = vec![index.clone()];
    names.extend(
        all.fields()
            .iter()
            .map(|f| f.name().clone())
            .filter(|n| *n != index),
    );
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let schema = h5table::arrow::schema(table, Some(&refs), &xopts).map_err(te)?;
    let bools: Vec<bool> = names.iter().map(|n| is_bool_column(table, n)).collect();
    // Which integer, boolean and string columns have missing rows.
    let probe: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| {
            let t = f.data_type();
            t.is_integer() || matches!(t, DataType::Boolean | DataType::Utf8)
        })
        .map(|(i, _)| i)
        .collect();
    let mut has_nulls: HashSet<usize> = HashSet::new();
    if !probe.is_empty() {
        let cols: Vec<&str> = probe.iter().map(|&i| refs[i]).collect();
        for b in
            h5table::arrow::batches(table, Some(&cols), 0..table.nrows(), &xopts).map_err(te)?
        {
            let b = b.map_err(|x| x.to_string())?;
            for (k, a) in b.columns().iter().enumerate() {
                if a.null_count() > 0 {
                    has_nulls.insert(probe[k]);
                }
            }
        }
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let t = if bools[i] {
                DataType::Boolean
            } else {
                f.data_type().clone()
            };
            let nullable = matches!(t, DataType::Dictionary(..)) || has_nulls.contains(&i);
            let mut g = Field::new(f.name(), t, nullable);
            if let Some(o) = f.dict_is_ordered() {
                g = g.with_dict_is_ordered(o);
            }
            g
        })
        .collect();
    let out_schema = Arc::new(Schema::new(fields));
    let fe = |x: h5fmt::Error| format!("{}:{path}: {x}", file.display());
    let we = |x: h5table::Error| format!("{}: {x}", file.display());
    if !file.exists() {
        let w = h5fmt::FileWriter::create(file).map_err(fe)?;
        w.close().map_err(fe)?;
    }
    let mut ed = h5fmt::FileEditor::open(file).map_err(fe)?;
    let mut w = DataFrameWriter::create(&mut ed, path, &out_schema, &WriteOptions::default())
        .map_err(we)?;
    // No rows: one empty batch still carries the categories.
    let empty = if table.nrows() == 0 {
        let cols = refs
            .iter()
            .map(|n| {
                h5table::arrow::ColumnExport::of(table, table.any_column(n)?, &xopts)?.array(0..0)
            })
            .collect::<Result<Vec<_>, _>>()
            .map_err(te)?;
        Some(RecordBatch::try_new(schema.clone(), cols).map_err(|x| x.to_string())?)
    } else {
        None
    };
    let batches = h5table::arrow::batches(table, Some(&refs), 0..table.nrows(), &xopts)
        .map_err(te)?
        .map(|b| b.map_err(|x| x.to_string()))
        .chain(empty.map(Ok));
    for b in batches {
        let b = b?;
        let cols: Vec<ArrayRef> = b
            .columns()
            .iter()
            .zip(&bools)
            .map(|(a, &is_bool)| if is_bool { to_bool(a) } else { a.clone() })
            .collect();
        let b = RecordBatch::try_new(out_schema.clone(), cols).map_err(|x| x.to_string())?;
        w.write(&mut ed, &b).map_err(we)?;
    }
    let n = w.finish(&mut ed).map_err(we)?;
    ed.close().map_err(fe)?;
    Ok(n)
}
