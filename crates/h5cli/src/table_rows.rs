//! Row-oriented compound tables (HDF5 Table "H5TB", PyTables `Table`) into
//! and out of HEP001.
//!
//! Import reads the source with [`h5table::rowtable`] in row batches and
//! goes through [`crate::table_import::import`] (the Arrow → HEP001
//! mapping); a non-empty `TITLE` becomes the table's `TITLE`. Each column's
//! HEP001 fill is the source's `FIELD_<n>_FILL` when no row holds that value
//! (a first pass over the rows checks), else the mapping's default (HEP001
//! Table 1 sentinel; `2` for booleans, whose source fill is always a real
//! value); a string column whose rows hold both gets the first of `""`,
//! `"\u{1a}"`, `"\u{1a}\u{1a}"` that no row holds (row tables have no
//! missing values, so any such string will do). A nested compound (an
//! Arrow struct) becomes a compound column (see [`crate::table_import`]);
//! its fill is the source's (H5TB: the member's `FIELD_<n>_FILL`; PyTables:
//! those of its columns) when no row holds it, else the record of the
//! mapping's defaults.
//!
//! Export writes one chunked, extendable compound dataset (members packed in
//! column order) with the attributes `H5TBmake_table` writes — `CLASS
//! "TABLE"`, `VERSION "3.0"`, `TITLE`, `FIELD_<n>_NAME`, `FIELD_<n>_FILL`
//! (each a NUL-terminated ASCII string one byte longer than its text; fills
//! in the member's datatype) — or, for PyTables, `CLASS`, `VERSION "2.7"`,
//! `TITLE`, `FIELD_<n>_NAME`, `FIELD_<n>_FILL` (one per column, nested
//! ones included, numbered breadth first as PyTables reads them — see
//! [`h5table::rowtable::pytables_fill_columns`]; an array column's as one
//! element of its base type) and `NROWS` (int64), strings
//! NUL-terminated UTF-8 of exactly their length (an empty one: one ASCII
//! NUL), plus the group system
//! attributes PyTables writes (`CLASS "GROUP"`, `TITLE`, `VERSION "1.0"`,
//! and `PYTABLES_FORMAT_VERSION "2.1"` on the root of a file we create).
//! Members keep their column's HDF5 datatype, except variable-length strings,
//! which become fixed strings as long as the longest value; a compound
//! column is a nested compound member, so a nested table comes back nested. The dataset's
//! fill value is the row of column fills, so a missing HEP001 value is
//! written as its column's fill. Categorical and list columns are refused.

use arrow_array::{Array, ArrayRef};
use arrow_schema::DataType;
use h5fmt::format::datatype::{CharSet, CompoundMember, Datatype, StringPad};
use h5fmt::write::edit::NewDataset;
use h5fmt::{AttrValue, Value};
use h5table::rowtable::{pytables_fill_columns, RowTable};
use h5table::write::{FillSpec, Scalar};
use h5table::{ColumnKind, Table};

/// Split `FILE:/path` at the last `:/`.
pub fn split_spec(spec: &str) -> Result<(&std::path::Path, &str), String> {
    match spec.rfind(":/") {
        Some(i) => Ok((std::path::Path::new(&spec[..i]), &spec[i + 1..])),
        None => Err(format!("{spec}: expected FILE.h5:/path")),
    }
}

/// The HEP001 fill of a field whose source fill is the one-element `fill`.
fn fill_spec(fill: &dyn Array) -> Option<FillSpec> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::*;
    macro_rules! int {
        ($t:ty) => {
            FillSpec::Value(Scalar::Int(i128::from(fill.as_primitive::<$t>().value(0))))
        };
    }
    Some(match fill.data_type() {
        DataType::Int8 => int!(Int8Type),
        DataType::Int16 => int!(Int16Type),
        DataType::Int32 => int!(Int32Type),
        DataType::Int64 => int!(Int64Type),
        DataType::UInt8 => int!(UInt8Type),
        DataType::UInt16 => int!(UInt16Type),
        DataType::UInt32 => int!(UInt32Type),
        DataType::UInt64 => int!(UInt64Type),
        DataType::Float32 | DataType::Float64 => {
            let v = if let DataType::Float32 = fill.data_type() {
                f64::from(fill.as_primitive::<Float32Type>().value(0))
            } else {
                fill.as_primitive::<Float64Type>().value(0)
            };
            if v.is_nan() {
                FillSpec::NaN
            } else {
                FillSpec::Value(Scalar::Float(v))
            }
        }
        DataType::Utf8 => FillSpec::Str(fill.as_string::<i32>().value(0).to_string()),
        DataType::Dictionary(..) => {
            let d = fill.as_any_dictionary();
            let keys = d.normalized_keys();
            let names = d.values().as_string_opt::<i32>()?;
            FillSpec::Str(names.value(*keys.first()?).to_string())
        }
        DataType::FixedSizeList(..) => {
            let l = fill.as_fixed_size_list();
            FillSpec::Raw(crate::table_import::le_bytes(l.value(0).as_ref()).ok()?)
        }
        DataType::Struct(_) => FillSpec::Raw(crate::table_import::le_bytes(fill).ok()?),
        _ => return None,
    })
}

/// Whether any value of `a` equals the one-element `fill` (any NaN, when
/// the fill is a NaN: HEP001's missing test, §8.5).
fn holds(a: &dyn Array, fill: &dyn Array) -> Result<bool, String> {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float32Type, Float64Type};
    match a.data_type() {
        DataType::Float32 if fill.as_primitive::<Float32Type>().value(0).is_nan() => {
            return Ok(a
                .as_primitive::<Float32Type>()
                .values()
                .iter()
                .any(|v| v.is_nan()))
        }
        DataType::Float64 if fill.as_primitive::<Float64Type>().value(0).is_nan() => {
            return Ok(a
                .as_primitive::<Float64Type>()
                .values()
                .iter()
                .any(|v| v.is_nan()))
        }
        _ => {}
    }
    let cmp =
        arrow_ord::ord::make_comparator(a, fill, Default::default()).map_err(|e| e.to_string())?;
    Ok((0..a.len()).any(|i| cmp(i, 0).is_eq()))
}

/// String fills tried, in order, when the source has none that no row
/// holds: HEP001's recommended `""` (Table 1), then ASCII SUB ("substitute",
/// the control character meant for a value that cannot be represented) —
/// one byte, so a fixed string exported back needs no wider member.
const STRING_FILLS: [&str; 3] = ["", "\u{1a}", "\u{1a}\u{1a}"];

/// Whether a field of this Arrow type becomes a HEP001 string column.
fn is_text(t: &DataType) -> bool {
    matches!(t, DataType::Utf8) || matches!(t, DataType::Dictionary(_, v) if **v == DataType::Utf8)
}

/// A possible HEP001 fill of an imported field.
enum Candidate {
    /// The source's `FIELD_<n>_FILL` (one element) and its HEP001 form.
    Source(ArrayRef, FillSpec),
    /// A string.
    Str(&'static str),
}

impl Candidate {
    fn spec(self) -> FillSpec {
        match self {
            Candidate::Source(_, s) => s,
            Candidate::Str(s) => FillSpec::Str(s.to_string()),
        }
    }

    /// Whether a value of `a` is this fill.
    fn held_by(&self, a: &dyn Array) -> Result<bool, String> {
        use arrow_array::cast::AsArray;
        match self {
            Candidate::Source(fill, _) => holds(a, fill.as_ref()),
            Candidate::Str(s) => Ok(match a.data_type() {
                DataType::Utf8 => a.as_string::<i32>().iter().any(|v| v == Some(*s)),
                DataType::Dictionary(..) => {
                    let d = a.as_any_dictionary();
                    let Some(names) = d.values().as_string_opt::<i32>() else {
                        return Ok(false);
                    };
                    d.normalized_keys()
                        .iter()
                        .any(|&k| k < names.len() && names.value(k) == *s)
                }
                _ => false,
            }),
        }
    }
}

/// `h5 table import SRC.h5:/table --to OUT.h5:/path`: a row table into a
/// new HEP001 table; returns the number of rows.
///
/// # Errors
/// A one-line message naming the source object or column.
pub fn import(
    src: &str,
    to: &str,
    opts: &mut crate::table_import::ImportOptions,
    batch_rows: u64,
    progress: &dyn Fn(u64),
) -> Result<u64, String> {
    let (src_file, src_path) = split_spec(src)?;
    let (out_file, out_path) = split_spec(to)?;
    let file = h5fmt::File::open(src_file).map_err(|e| format!("{}: {e}", src_file.display()))?;
    let ds = file
        .dataset(src_path)
        .map_err(|e| format!("{}:{src_path}: {e}", src_file.display()))?;
    let rt = RowTable::open(&ds).map_err(|e| format!("{}: {e}", src_file.display()))?;
    // Candidate fills per field, best first, each dropped when a row holds
    // it (then it is data, not a marker): the source fill, then, for
    // strings, the HEP001 default "" and alternatives.
    let schema = rt.schema();
    let mut cand: Vec<(String, Vec<Candidate>)> = rt
        .fields()
        .iter()
        .zip(schema.fields())
        .filter_map(|(f, af)| {
            let mut c: Vec<Candidate> = f
                .fill
                .clone()
                .and_then(|fill| Some(Candidate::Source(fill.clone(), fill_spec(fill.as_ref())?)))
                .into_iter()
                .collect();
            if is_text(af.data_type()) {
                c.extend(STRING_FILLS.iter().map(|s| Candidate::Str(s)));
            }
            (!c.is_empty()).then(|| (f.name.clone(), c))
        })
        .collect();
    if !cand.is_empty() {
        for b in rt.batches(batch_rows) {
            let b = b.map_err(|e| e.to_string())?;
            for (name, cs) in &mut cand {
                let col = b
                    .column_by_name(name)
                    .ok_or_else(|| format!("field {name:?} missing from a batch"))?;
                let mut keep = Vec::with_capacity(cs.len());
                for c in cs.drain(..) {
                    if !c.held_by(col.as_ref())? {
                        keep.push(c);
                    }
                }
                *cs = keep;
            }
        }
    }
    opts.title = rt.title().filter(|t| !t.is_empty()).map(str::to_string);
    // A field left without candidates keeps the mapping's default (and a
    // row holding it is refused by the import, naming the column).
    opts.fills = cand
        .into_iter()
        .filter_map(|(n, cs)| Some((n, cs.into_iter().next()?.spec())))
        .collect();
    crate::table_import::import(
        out_file,
        out_path,
        Box::new(rt.batches(batch_rows)),
        opts,
        progress,
    )
}

/// Which convention an export follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowFlavor {
    /// What libhdf5's `H5TBmake_table` writes.
    H5tb,
    /// What PyTables writes for a `Table`.
    PyTables,
}

/// One member of the exported row: where its bytes come from.
struct Member {
    name: String,
    dtype: Datatype,
    offset: usize,
    size: usize,
    fill: Vec<u8>,
    /// Variable-length strings written as fixed ones.
    vlen: bool,
}

/// A fixed string attribute as H5TB (`H5LTset_attribute_string`) or PyTables writes it.
fn str_attr(s: &str, flavor: RowFlavor) -> AttrValue {
    if flavor == RowFlavor::PyTables {
        return h5table::write::pytables::str_attr(s);
    }
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    AttrValue::raw(
        Datatype::String {
            size: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            pad: StringPad::NullTerm,
            cset: CharSet::Ascii,
        },
        None,
        bytes,
    )
}

/// `FIELD_<n>_FILL`: a fill in its datatype; PyTables stores an array
/// column's fill as one element of the base type (when all are equal).
fn fill_attr(dtype: &Datatype, fill: &[u8], flavor: RowFlavor) -> AttrValue {
    if let (RowFlavor::PyTables, Datatype::Array { base, .. }) = (flavor, dtype) {
        let esize = usize::try_from(base.size()).unwrap_or(0);
        if let Some(first) = fill.get(..esize) {
            if esize > 0 && fill.chunks_exact(esize).all(|e| e == first) {
                return AttrValue::raw((**base).clone(), None, first.to_vec());
            }
        }
    }
    AttrValue::raw(dtype.clone(), None, fill.to_vec())
}

fn fixed_str(s: &str, size: usize) -> Vec<u8> {
    let mut b = s.as_bytes().to_vec();
    b.resize(size, 0);
    b
}

/// The members of the row compound, packed in column order.
fn members(table: &Table, batch: u64) -> Result<Vec<Member>, String> {
    if !table.list_columns().is_empty() {
        return Err(format!(
            "{}: list columns have no row-table form",
            table.path()
        ));
    }
    let mut out = Vec::new();
    let mut offset = 0usize;
    for c in table.columns() {
        let what = || format!("{}: column {:?}", table.path(), c.name());
        if c.kind() == ColumnKind::Categorical {
            return Err(format!(
                "{}: categorical columns are not exported to row tables",
                what()
            ));
        }
        let (dtype, fill, vlen) = match c.dtype() {
            Datatype::VarLenString { cset, .. } => {
                let mut longest = 1usize;
                let mut start = 0;
                while start < table.nrows() {
                    let end = (start + batch).min(table.nrows());
                    for v in c
                        .read(start..end)
                        .map_err(|e| format!("{}: {e}", what()))?
                        .values
                    {
                        if let Value::Str(s) = v {
                            longest = longest.max(s.len());
                        }
                    }
                    start = end;
                }
                let fill = match &c.fill().value {
                    Some(Value::Str(s)) => s.clone(),
                    _ => String::new(),
                };
                longest = longest.max(fill.len());
                (
                    Datatype::String {
                        size: u32::try_from(longest)
                            .map_err(|_| format!("{}: strings too long", what()))?,
                        pad: StringPad::NullTerm,
                        cset: *cset,
                    },
                    fixed_str(&fill, longest),
                    true,
                )
            }
            d if d.is_variable_length() || d.has_references() => {
                return Err(format!("{}: datatype {d} has no row-table form", what()))
            }
            d => {
                let size = usize::try_from(d.size()).unwrap_or(usize::MAX);
                let mut fill = c.fill().bytes.clone();
                fill.resize(size, 0);
                (d.clone(), fill, false)
            }
        };
        let size = usize::try_from(dtype.size()).unwrap_or(usize::MAX);
        out.push(Member {
            name: c.name().to_string(),
            dtype,
            offset,
            size,
            fill,
            vlen,
        });
        offset = offset
            .checked_add(size)
            .ok_or_else(|| format!("{}: row too large", table.path()))?;
    }
    if out.is_empty() {
        return Err(format!(
            "{}: a table without columns has no row-table form",
            table.path()
        ));
    }
    Ok(out)
}

/// Rows `[start, end)` of `table` as packed row bytes.
fn rows(
    table: &Table,
    members: &[Member],
    row_size: usize,
    start: u64,
    end: u64,
) -> Result<Vec<u8>, String> {
    let n = usize::try_from(end - start).map_err(|e| e.to_string())?;
    let mut out = vec![0u8; n * row_size];
    for (c, m) in table.columns().iter().zip(members) {
        let err = |e: h5table::Error| format!("{}: column {:?}: {e}", table.path(), c.name());
        if m.vlen {
            let slice = c.read(start..end).map_err(err)?;
            for (r, v) in slice.values.iter().enumerate() {
                let s = match v {
                    Value::Str(s) => s.as_str(),
                    _ => "",
                };
                let at = r * row_size + m.offset;
                if let Some(dst) = out.get_mut(at..at + m.size) {
                    dst.copy_from_slice(&fixed_str(s, m.size));
                }
            }
        } else {
            let raw = c.read_raw(start..end).map_err(err)?;
            for (r, e) in raw.chunks_exact(m.size.max(1)).enumerate() {
                let at = r * row_size + m.offset;
                if let Some(dst) = out.get_mut(at..at + m.size) {
                    dst.copy_from_slice(e);
                }
            }
        }
    }
    Ok(out)
}

/// Create the groups of `path` missing in `ed` (PyTables: with its group attributes).
fn parents(ed: &mut h5fmt::FileEditor, path: &str, flavor: RowFlavor) -> Result<(), String> {
    let mut at = String::new();
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    for p in parts.iter().take(parts.len().saturating_sub(1)) {
        let parent = if at.is_empty() {
            "/".to_string()
        } else {
            at.clone()
        };
        at = format!("{at}/{p}");
        if ed.reader().group(&at).is_ok() {
            continue;
        }
        ed.create_group(&parent, p)
            .map_err(|e| format!("{at}: {e}"))?;
        if flavor == RowFlavor::PyTables {
            h5table::write::pytables::set_system_attrs(ed, &at, "GROUP", "1.0", "", None)
                .map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// `h5 table export IN.h5:/table --as h5tb|pytables OUT.h5:/path`; returns the number of rows.
///
/// # Errors
/// A one-line message: a column with no row-table form, an existing
/// object at the output path, HDF5 errors.
pub fn export(table: &Table, out: &str, flavor: RowFlavor, batch: u64) -> Result<u64, String> {
    let (file, path) = split_spec(out)?;
    let batch = batch.max(1);
    let members = members(table, batch)?;
    let row_size: usize = members.iter().map(|m| m.size).sum();
    let compound: Vec<CompoundMember> = members
        .iter()
        .map(|m| CompoundMember {
            name: m.name.clone(),
            offset: u32::try_from(m.offset).unwrap_or(u32::MAX),
            dtype: m.dtype.clone(),
        })
        .collect();
    let dtype = Datatype::Compound {
        size: u32::try_from(row_size).map_err(|_| "row too large".to_string())?,
        members: compound.clone(),
    };
    let fill_row: Vec<u8> = members
        .iter()
        .flat_map(|m| m.fill.iter().copied())
        .collect();
    let fe = |e: h5fmt::Error| format!("{}:{path}: {e}", file.display());
    let created = !file.exists();
    if created {
        let w = h5fmt::FileWriter::create(file).map_err(fe)?;
        w.close().map_err(fe)?;
    }
    let mut ed = h5fmt::FileEditor::open(file).map_err(fe)?;
    if created && flavor == RowFlavor::PyTables {
        h5table::write::pytables::init_file(&mut ed, "").map_err(|e| e.to_string())?;
    }
    parents(&mut ed, path, flavor)?;
    let (parent, name) = match path.rfind('/') {
        Some(0) => ("/", &path[1..]),
        Some(i) => (&path[..i], &path[i + 1..]),
        None => ("/", path),
    };
    // About 64 KiB per chunk, as PyTables and H5TB users typically choose.
    let chunk = (65_536 / row_size.max(1)).max(1) as u64;
    let mut spec = NewDataset::new(dtype, &[0])
        .maxshape(&[None])
        .chunks(&[chunk]);
    spec.fill = Some(fill_row.clone());
    ed.create_dataset(parent, name, &spec).map_err(fe)?;
    let mut start = 0;
    while start < table.nrows() {
        let end = (start + batch).min(table.nrows());
        let bytes = rows(table, &members, row_size, start, end)?;
        ed.append_raw(path, &bytes).map_err(fe)?;
        start = end;
    }
    let title = table
        .group()
        .attr("TITLE")
        .and_then(|a| a.read_string())
        .unwrap_or_default();
    ed.set_attr(path, "CLASS", str_attr("TABLE", flavor))
        .map_err(fe)?;
    let version = match flavor {
        RowFlavor::H5tb => "3.0",
        RowFlavor::PyTables => "2.7",
    };
    ed.set_attr(path, "VERSION", str_attr(version, flavor))
        .map_err(fe)?;
    ed.set_attr(path, "TITLE", str_attr(&title, flavor))
        .map_err(fe)?;
    for (i, m) in members.iter().enumerate() {
        ed.set_attr(path, &format!("FIELD_{i}_NAME"), str_attr(&m.name, flavor))
            .map_err(fe)?;
    }
    match flavor {
        RowFlavor::H5tb => {
            for (i, m) in members.iter().enumerate() {
                ed.set_attr(
                    path,
                    &format!("FIELD_{i}_FILL"),
                    fill_attr(&m.dtype, &m.fill, flavor),
                )
                .map_err(fe)?;
            }
        }
        // One per column, nested ones included, numbered as PyTables walks them.
        RowFlavor::PyTables => {
            for (i, c) in pytables_fill_columns(&compound).iter().enumerate() {
                let size = usize::try_from(c.dtype.size()).unwrap_or(usize::MAX);
                let fill = fill_row
                    .get(c.offset..c.offset.saturating_add(size))
                    .ok_or_else(|| {
                        format!("{}:{path}: a fill runs past the row", file.display())
                    })?;
                ed.set_attr(
                    path,
                    &format!("FIELD_{i}_FILL"),
                    fill_attr(&c.dtype, fill, flavor),
                )
                .map_err(fe)?;
            }
        }
    }
    if flavor == RowFlavor::PyTables {
        let n = i64::try_from(table.nrows()).map_err(|e| e.to_string())?;
        ed.set_attr(path, "NROWS", n).map_err(fe)?;
    }
    ed.close().map_err(fe)?;
    Ok(table.nrows())
}
