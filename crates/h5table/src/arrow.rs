//! Arrow export (feature `arrow`): a table's Arrow schema, and its rows as
//! Arrow [`RecordBatch`]es, column by column straight from the file bytes.
//!
//! Every column — column datasets and the upstream H5Col draft's list
//! columns alike ([`Table::all_columns`]) — becomes one nullable [`Field`],
//! in the table's logical order (`column-order`, §7.4), or in the order of a
//! projection. Rows whose value
//! is the column's fill value (the canonical missing test, §8.5) are nulls.
//!
//! # The mapping
//!
//! | HDF5 column (§8.3) | Arrow type | notes |
//! |---|---|---|
//! | integer, 1/2/4/8 bytes, signed or unsigned, either byte order | `Int8`…`Int64`, `UInt8`…`UInt64` (same width and signedness) | integers with padding bits (`bit_offset`/`precision`) are decoded to their value |
//! | IEEE float, 2/4/8 bytes | `Float16`, `Float32`, `Float64` | bits kept exactly (NaN payloads, -0.0); a NaN fill makes every NaN null (§8.5) |
//! | fixed-length string | `Utf8` | trailing padding removed (NULs for NULLTERM/NULLPAD, spaces for SPACEPAD) |
//! | variable-length string | `Utf8` | bytes as stored, from one contiguous buffer (no `String` per row) |
//! | string content that is not UTF-8 (an ASCII column holding bytes ≥ 0x80) | — | an error naming the column and row (never lossy); [`StringMode::Binary`] exports every string column as `Binary` instead |
//! | categorical integer column (§8.7) | `Dictionary(Int32, <labels>)` | values: the categories dataset mapped by this same table (usually `Utf8`); the field's `dict_is_ordered` is the `ordered` attribute; a code outside the labels is an error |
//! | the §6 boolean enum (`H5T_STD_I8LE`, `FALSE = 0`, `TRUE = 1`), and any one-byte enum of exactly `FALSE = 0`, `TRUE = 1` (the H5Col draft's consumer rule), with or without a fill value | `Boolean` | another code is an error |
//! | other enumeration | `Dictionary(Int32, Utf8)` | values: every member name in declaration order (the `MISSING` member included); a code that names no member is an error |
//! | opaque, N bytes | `FixedSizeBinary(N)` | the tag in field metadata `hdf5:opaque_tag` |
//! | compound | `Struct` | one child per member, each mapped by these rules; a missing row is a null struct |
//! | anything else (bitfield, time, reference, array, variable-length sequence, complex, 128-bit integer, non-IEEE float) | `Binary` | each element's file bytes as stored; the HDF5 datatype in field metadata `hdf5:datatype` |
//! | list column ([`crate::list`]), `OFFSETS` 8 bytes wide (the draft's `uint64`) | `LargeList(item)` | a null list (`MASK` FALSE) is null; a nested level is a nested list |
//! | list column with narrower `OFFSETS` (read leniently) | `List(item)` | 2³¹ or more elements in one batch is an error (use fewer rows per batch) |
//! | list items: a leaf `VALUES` dataset | the leaf's datatype mapped by these rules | a missing element (the leaf's fill value) is null; field metadata `hdf5:fill` |
//! | list items: a `STRING_VALUES` group | `LargeUtf8` over 8-byte `OFFSETS`, `Utf8` otherwise | a null string is null; [`StringMode::Binary`]: `LargeBinary`/`Binary` |
//!
//! The offset width decides `List` or `LargeList` (and `Utf8` or `LargeUtf8`)
//! from the datatype alone, so the schema is known before any row is read;
//! offsets are rebased to each batch. A list column's field metadata adds
//! `hdf5:list_kind` (`OFFSETS`).
//!
//! Field metadata: `units`, `units_vocabulary`, `description` (when the
//! column has them), `hdf5:fill` (the fill value as `h5 table cat` prints
//! it) and `hdf5:fill_hex` (its file bytes), `hdf5:categories` (path of the
//! categories dataset). Schema metadata: `hep001:path`, `hep001:version`,
//! `hep001:nrows`, and `TITLE`, `description`, `INDEX_COLUMNS`
//! (comma-separated names) when present.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let file = h5fmt::File::open("events.h5")?;
//! let table = h5table::Table::open(&file.group("/events")?)?;
//! let opts = h5table::arrow::ExportOptions::default();
//! for batch in h5table::arrow::batches(&table, None, 0..table.nrows(), &opts)? {
//!     let batch = batch?; // an arrow_schema::ArrowError on a failed read
//!     println!("{} rows", batch.num_rows());
//! }
//! # Ok(())
//! # }
//! ```

use crate::error::{Error, Result};
use crate::list::{ListColumn, ListLevel, ListValues, RawList, RawValues};
use crate::model::{is_bool_enum, Column, ColumnKind, Table, TableColumn};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, ArrowPrimitiveType, BinaryArray, BooleanArray, DictionaryArray,
    FixedSizeBinaryArray, FixedSizeListArray, LargeBinaryArray, LargeListArray, LargeStringArray,
    ListArray, PrimitiveArray, RecordBatch, RecordBatchOptions, StringArray, StructArray,
};
use arrow_buffer::{BooleanBuffer, Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, DataType, Field, Fields, Schema, SchemaRef};
use core::mem::MaybeUninit;
use core::ops::Range;
use h5fmt::format::datatype::{ByteOrder, Datatype, StringPad};
use h5fmt::{Dataset, Value};
use std::sync::Arc;

/// The column mapping as a Markdown table (the one in this module's
/// documentation), for READMEs and `--help` texts.
pub const MAPPING: &str = "\
| HDF5 column (§8.3) | Arrow type | notes |
|---|---|---|
| integer, 1/2/4/8 bytes, signed or unsigned, either byte order | `Int8`…`Int64`, `UInt8`…`UInt64` (same width and signedness) | integers with padding bits are decoded to their value |
| IEEE float, 2/4/8 bytes | `Float16`, `Float32`, `Float64` | bits kept exactly; a NaN fill makes every NaN null (§8.5) |
| fixed-length string | `Utf8` | trailing padding removed (NULs for NULLTERM/NULLPAD, spaces for SPACEPAD) |
| variable-length string | `Utf8` | bytes as stored, from one contiguous buffer |
| string content that is not UTF-8 | — | an error naming the column and row (never lossy); `StringMode::Binary` exports string columns as `Binary` |
| categorical integer column (§8.7) | `Dictionary(Int32, <labels>)` | values: the categories dataset, mapped by these rules; `dict_is_ordered` = `ordered`; a code outside the labels is an error |
| the §6 boolean enum (`FALSE = 0`, `TRUE = 1`), and any one-byte `FALSE`/`TRUE` enum (H5Col draft) | `Boolean` | another code is an error |
| other enumeration | `Dictionary(Int32, Utf8)` | values: every member name in declaration order; a code naming no member is an error |
| opaque, N bytes | `FixedSizeBinary(N)` | tag in field metadata `hdf5:opaque_tag` |
| compound | `Struct` | one child per member, mapped by these rules; a missing row is a null struct |
| anything else (bitfield, time, reference, array, vlen sequence, complex, 128-bit integer, non-IEEE float) | `Binary` | each element's file bytes; the HDF5 datatype in field metadata `hdf5:datatype` |
| list column (H5Col draft), 8-byte `OFFSETS` (the draft's `uint64`) | `LargeList(item)` | a null list is null; nested levels nest |
| list column with narrower `OFFSETS` | `List(item)` | 2^31 or more elements in one batch is an error |
| list items: leaf `VALUES` | the leaf's datatype mapped by these rules | a missing element (the leaf's fill) is null |
| list items: `STRING_VALUES` | `LargeUtf8` over 8-byte `OFFSETS`, else `Utf8` | a null string is null |
";

/// How string columns are exported.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StringMode {
    /// `Utf8`; a string that is not valid UTF-8 is an error (nothing is
    /// replaced or lost).
    #[default]
    Utf8,
    /// `Binary` (the bytes, padding of fixed-length strings removed), for
    /// columns that may hold non-UTF-8 bytes.
    Binary,
}

/// Options of the export.
#[derive(Debug, Clone)]
pub struct ExportOptions {
    /// Rows per batch (at least 1).
    pub batch_rows: u64,
    /// How string columns (and string labels and members) are exported.
    pub strings: StringMode,
}

impl Default for ExportOptions {
    fn default() -> Self {
        ExportOptions {
            batch_rows: 65_536,
            strings: StringMode::Utf8,
        }
    }
}

/// How one datatype is converted (decided once per column).
#[derive(Debug, Clone)]
enum Plan {
    /// Integer of a standard layout: `size` bytes, all significant.
    Int {
        size: usize,
        signed: bool,
        big: bool,
    },
    /// Integer with padding bits: decoded element by element.
    IntPadded {
        dtype: Datatype,
        signed: bool,
    },
    Float {
        size: usize,
        big: bool,
    },
    FixedStr {
        size: usize,
        pad: StringPad,
        /// The string ends at its first NUL (row tables' NULLTERM strings).
        to_first_nul: bool,
    },
    /// PyTables' `Time64` (row tables only): seconds as a double.
    Time64 {
        big: bool,
    },
    VlenStr {
        dtype: Datatype,
    },
    Categorical {
        code: Datatype,
        labels: ArrayRef,
    },
    Bool {
        code: Datatype,
    },
    Enum {
        code: Datatype,
        members: Vec<i128>,
        names: ArrayRef,
    },
    Opaque {
        size: usize,
    },
    Struct {
        size: usize,
        fields: Fields,
        members: Vec<(usize, usize, Plan)>,
    },
    Raw {
        size: usize,
    },
    /// An array datatype of `len` elements of `esize` bytes (row tables only).
    FixedList {
        len: usize,
        item: Arc<Field>,
        inner: Box<Plan>,
    },
    /// A one-byte bitfield: PyTables' `Bool` (row tables only).
    Bit,
}

/// What a conversion needs besides the bytes.
struct Ctx<'a> {
    dataset: &'a Dataset,
    strings: StringMode,
    /// Column name, for errors.
    column: &'a str,
    /// A compound member of a row-oriented table ([`crate::rowtable`]): array
    /// datatypes become `FixedSizeList`, one-byte bitfields `Boolean`, and
    /// what would be `Binary` is refused.
    row_table: bool,
}

fn usz(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn arrow_err(column: &str, e: ArrowError) -> Error {
    Error::Usage(format!("column {column:?}: Arrow conversion failed: {e}"))
}

impl Plan {
    /// The plan and the Arrow type of `dtype`.
    fn of(dtype: &Datatype, ctx: &Ctx<'_>) -> Result<(Plan, DataType)> {
        let size = usz(dtype.size());
        let string_type = match ctx.strings {
            StringMode::Utf8 => DataType::Utf8,
            StringMode::Binary => DataType::Binary,
        };
        Ok(match dtype {
            Datatype::Integer {
                size: s,
                order,
                signed,
                bit_offset,
                precision,
            } if matches!(s, 1 | 2 | 4 | 8) => {
                let dt = match (s, signed) {
                    (1, true) => DataType::Int8,
                    (2, true) => DataType::Int16,
                    (4, true) => DataType::Int32,
                    (8, true) => DataType::Int64,
                    (1, false) => DataType::UInt8,
                    (2, false) => DataType::UInt16,
                    (4, false) => DataType::UInt32,
                    _ => DataType::UInt64,
                };
                if *bit_offset == 0 && u32::from(*precision) == s * 8 {
                    (
                        Plan::Int {
                            size,
                            signed: *signed,
                            big: *order == ByteOrder::Big,
                        },
                        dt,
                    )
                } else {
                    (
                        Plan::IntPadded {
                            dtype: dtype.clone(),
                            signed: *signed,
                        },
                        dt,
                    )
                }
            }
            Datatype::Float { size: s, order, .. }
                if dtype.is_ieee_standard() && matches!(s, 2 | 4 | 8) =>
            {
                let dt = match s {
                    2 => DataType::Float16,
                    4 => DataType::Float32,
                    _ => DataType::Float64,
                };
                (
                    Plan::Float {
                        size,
                        big: *order == ByteOrder::Big,
                    },
                    dt,
                )
            }
            // libhdf5 converts a NULLTERM string to any other string type
            // (NULLPAD memory strings, as h5py, PyTables and H5TBread_table
            // read them) up to its first NUL: what follows is not the
            // value, even when it is not NUL (uninitialized bytes in files
            // written by C programs).
            Datatype::String { pad, .. } => (
                Plan::FixedStr {
                    size,
                    pad: *pad,
                    to_first_nul: ctx.row_table && *pad == StringPad::NullTerm,
                },
                string_type,
            ),
            // H5T_TIME: libhdf5 has no conversion for the class (h5py cannot
            // read it), so PyTables, which wrote these members (`Time32Col`,
            // `Time64Col`), is the reference: a 4-byte time is the int32 it
            // holds, an 8-byte one the double of seconds of
            // `crate::pytables::time64_seconds`, each in the type's byte order.
            Datatype::Time { size: 4, order, .. } if ctx.row_table => (
                Plan::Int {
                    size,
                    signed: true,
                    big: *order == ByteOrder::Big,
                },
                DataType::Int32,
            ),
            Datatype::Time { size: 8, order, .. } if ctx.row_table => (
                Plan::Time64 {
                    big: *order == ByteOrder::Big,
                },
                DataType::Float64,
            ),
            Datatype::VarLenString { .. } => (
                Plan::VlenStr {
                    dtype: dtype.clone(),
                },
                string_type,
            ),
            d @ Datatype::Enum { .. } if is_bool_enum(d) => (
                Plan::Bool {
                    code: dtype.clone(),
                },
                DataType::Boolean,
            ),
            Datatype::Enum { base, members } => {
                let codes = members
                    .iter()
                    .map(|m| h5fmt::data::decode::integer_code(base, &m.value))
                    .collect::<core::result::Result<Vec<_>, _>>()?;
                let names: ArrayRef = match ctx.strings {
                    StringMode::Utf8 => Arc::new(StringArray::from_iter_values(
                        members.iter().map(|m| m.name.as_str()),
                    )),
                    StringMode::Binary => Arc::new(BinaryArray::from_iter_values(
                        members.iter().map(|m| m.name.as_bytes()),
                    )),
                };
                (
                    Plan::Enum {
                        code: dtype.clone(),
                        members: codes,
                        names,
                    },
                    DataType::Dictionary(Box::new(DataType::Int32), Box::new(string_type)),
                )
            }
            Datatype::Opaque { .. } => (
                Plan::Opaque { size },
                DataType::FixedSizeBinary(i32::try_from(size).unwrap_or(i32::MAX)),
            ),
            Datatype::Compound { members, .. } => {
                let mut fields = Vec::with_capacity(members.len());
                let mut plans = Vec::with_capacity(members.len());
                for m in members {
                    let (plan, dt) = Plan::of(&m.dtype, ctx)?;
                    let msize = usz(m.dtype.size());
                    let off = usz(u64::from(m.offset));
                    if off.checked_add(msize).is_none_or(|e| e > size) {
                        return Err(Error::invalid(
                            ctx.dataset.path(),
                            "§8.3",
                            format!("compound member {:?} runs past the element", m.name),
                        ));
                    }
                    fields.push(Field::new(m.name.clone(), dt, true));
                    plans.push((off, msize, plan));
                }
                let fields = Fields::from(fields);
                (
                    Plan::Struct {
                        size,
                        fields: fields.clone(),
                        members: plans,
                    },
                    DataType::Struct(fields),
                )
            }
            Datatype::Array { dims, base } if ctx.row_table => {
                let (inner, idt) = Plan::of(base, ctx)?;
                let len = dims
                    .iter()
                    .try_fold(1u64, |a, &d| a.checked_mul(d))
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| {
                        Error::invalid(ctx.dataset.path(), "§8.3", "array datatype too large")
                    })?;
                let item = Arc::new(Field::new("item", idt, true));
                (
                    Plan::FixedList {
                        len: usz(len as u64),
                        item: item.clone(),
                        inner: Box::new(inner),
                    },
                    DataType::FixedSizeList(item, len),
                )
            }
            Datatype::Bitfield { size: 1, .. } if ctx.row_table => (Plan::Bit, DataType::Boolean),
            _ if ctx.row_table => {
                return Err(Error::invalid(
                    ctx.dataset.path(),
                    "row table",
                    format!(
                        "field {:?}: datatype {dtype} is not supported (integers, IEEE floats, \
                         strings, enums, one-byte bitfields, arrays and compounds of these are)",
                        ctx.column
                    ),
                ))
            }
            _ => (Plan::Raw { size }, DataType::Binary),
        })
    }

    /// `n` elements from their file bytes `raw`, with `nulls`.
    fn build(
        &self,
        raw: &[u8],
        n: usize,
        nulls: Option<NullBuffer>,
        ctx: &Ctx<'_>,
    ) -> Result<ArrayRef> {
        Ok(match self {
            Plan::Int { size, signed, big } => match (size, signed) {
                (1, true) => prim::<Int8Type, 1>(raw, *big, i8::from_le_bytes, nulls),
                (2, true) => prim::<Int16Type, 2>(raw, *big, i16::from_le_bytes, nulls),
                (4, true) => prim::<Int32Type, 4>(raw, *big, i32::from_le_bytes, nulls),
                (8, true) => prim::<Int64Type, 8>(raw, *big, i64::from_le_bytes, nulls),
                (1, false) => prim::<UInt8Type, 1>(raw, *big, u8::from_le_bytes, nulls),
                (2, false) => prim::<UInt16Type, 2>(raw, *big, u16::from_le_bytes, nulls),
                (4, false) => prim::<UInt32Type, 4>(raw, *big, u32::from_le_bytes, nulls),
                _ => prim::<UInt64Type, 8>(raw, *big, u64::from_le_bytes, nulls),
            },
            Plan::IntPadded { dtype, signed } => {
                let size = usz(dtype.size());
                let codes = raw
                    .chunks_exact(size)
                    .map(|e| h5fmt::data::decode::integer_code(dtype, e))
                    .collect::<core::result::Result<Vec<i128>, _>>()?;
                // The value fits the type's width by construction (precision ≤ size bits).
                match (size, signed) {
                    (1, true) => from_codes::<Int8Type>(&codes, |c| c as i8, nulls),
                    (2, true) => from_codes::<Int16Type>(&codes, |c| c as i16, nulls),
                    (4, true) => from_codes::<Int32Type>(&codes, |c| c as i32, nulls),
                    (8, true) => from_codes::<Int64Type>(&codes, |c| c as i64, nulls),
                    (1, false) => from_codes::<UInt8Type>(&codes, |c| c as u8, nulls),
                    (2, false) => from_codes::<UInt16Type>(&codes, |c| c as u16, nulls),
                    (4, false) => from_codes::<UInt32Type>(&codes, |c| c as u32, nulls),
                    _ => from_codes::<UInt64Type>(&codes, |c| c as u64, nulls),
                }
            }
            Plan::Float { size, big } => match size {
                2 => prim::<Float16Type, 2>(
                    raw,
                    *big,
                    |b| {
                        <Float16Type as ArrowPrimitiveType>::Native::from_bits(u16::from_le_bytes(
                            b,
                        ))
                    },
                    nulls,
                ),
                4 => prim::<Float32Type, 4>(raw, *big, f32::from_le_bytes, nulls),
                _ => prim::<Float64Type, 8>(raw, *big, f64::from_le_bytes, nulls),
            },
            Plan::Time64 { big } => prim::<Float64Type, 8>(
                raw,
                *big,
                |b| crate::pytables::time64_seconds(i64::from_le_bytes(b)),
                nulls,
            ),
            Plan::FixedStr {
                size,
                pad,
                to_first_nul,
            } => {
                let mut data = Vec::with_capacity(raw.len());
                let mut offsets = Vec::with_capacity(n + 1);
                offsets.push(0i32);
                for e in raw.chunks_exact(*size) {
                    let e = if *to_first_nul {
                        e.split(|&b| b == 0).next().unwrap_or(e)
                    } else {
                        e
                    };
                    let keep = match pad {
                        StringPad::SpacePad => e.iter().rposition(|&b| b != b' '),
                        _ => e.iter().rposition(|&b| b != 0),
                    }
                    .map_or(0, |i| i + 1);
                    data.extend_from_slice(e.get(..keep).unwrap_or(e));
                    offsets.push(offset_i32(data.len(), ctx)?);
                }
                strings(data, offsets, nulls, ctx)?
            }
            Plan::VlenStr { dtype } => {
                let (data, offsets, valid) = vlen_buffers(ctx, dtype, raw, n)?;
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                match (ctx.strings, valid) {
                    (StringMode::Binary, _) => Arc::new(
                        BinaryArray::try_new(offsets, Buffer::from_vec(data), nulls)
                            .map_err(|e| arrow_err(ctx.column, e))?,
                    ),
                    (StringMode::Utf8, Err(row)) => return Err(not_utf8(ctx, row)),
                    (StringMode::Utf8, Ok(())) => {
                        // SAFETY: `vlen_buffers` checked that every part of
                        // `data` is valid UTF-8 and that every offset falls
                        // on a character boundary, so every string is valid
                        // UTF-8; the offsets start at 0, never decrease and
                        // end at `data.len()` (OffsetBuffer::new checked the
                        // order), which is what `new_unchecked` requires.
                        Arc::new(unsafe {
                            StringArray::new_unchecked(offsets, Buffer::from_vec(data), nulls)
                        })
                    }
                }
            }
            Plan::Categorical { code, labels } => {
                let nlabels = labels.len() as i128;
                let keys = codes_to_keys(code, raw, nulls.as_ref(), ctx, |c| {
                    (0..nlabels).contains(&c).then_some(c as i32)
                })?;
                Arc::new(
                    DictionaryArray::<Int32Type>::try_new(keys, labels.clone())
                        .map_err(|e| arrow_err(ctx.column, e))?,
                )
            }
            Plan::Enum {
                code,
                members,
                names,
            } => {
                let keys = codes_to_keys(code, raw, nulls.as_ref(), ctx, |c| {
                    members.iter().position(|&m| m == c).map(|i| i as i32)
                })?;
                Arc::new(
                    DictionaryArray::<Int32Type>::try_new(keys, names.clone())
                        .map_err(|e| arrow_err(ctx.column, e))?,
                )
            }
            Plan::Bool { code } => {
                let keys = codes_to_keys(code, raw, nulls.as_ref(), ctx, |c| {
                    matches!(c, 0 | 1).then_some(c as i32)
                })?;
                let values: BooleanBuffer = keys.values().iter().map(|&k| k == 1).collect();
                Arc::new(BooleanArray::new(values, nulls))
            }
            Plan::Opaque { size } => Arc::new(
                FixedSizeBinaryArray::try_new(
                    i32::try_from(*size).unwrap_or(i32::MAX),
                    Buffer::from_vec(raw.to_vec()),
                    nulls,
                )
                .map_err(|e| arrow_err(ctx.column, e))?,
            ),
            Plan::Struct {
                size,
                fields,
                members,
            } => {
                let mut children = Vec::with_capacity(members.len());
                for (off, msize, plan) in members {
                    let mut bytes = Vec::with_capacity(n * msize);
                    for e in raw.chunks_exact(*size) {
                        bytes.extend_from_slice(e.get(*off..off + msize).unwrap_or(&[]));
                    }
                    children.push(plan.build(&bytes, n, None, ctx)?);
                }
                Arc::new(
                    StructArray::try_new_with_length(fields.clone(), children, nulls, n)
                        .map_err(|e| arrow_err(ctx.column, e))?,
                )
            }
            Plan::FixedList { len, item, inner } => {
                let values = inner.build(raw, n * len, None, ctx)?;
                Arc::new(
                    FixedSizeListArray::try_new(
                        item.clone(),
                        i32::try_from(*len).unwrap_or(i32::MAX),
                        values,
                        nulls,
                    )
                    .map_err(|e| arrow_err(ctx.column, e))?,
                )
            }
            Plan::Bit => {
                let values: BooleanBuffer = raw.iter().map(|&b| b != 0).collect();
                Arc::new(BooleanArray::new(values, nulls))
            }
            Plan::Raw { size } => {
                let offsets = OffsetBuffer::from_lengths(core::iter::repeat_n(*size, n));
                Arc::new(
                    BinaryArray::try_new(offsets, Buffer::from_vec(raw.to_vec()), nulls)
                        .map_err(|e| arrow_err(ctx.column, e))?,
                )
            }
        })
    }
}

/// Rows per thread at least when reading variable-length strings.
const VLEN_PART_MIN: usize = 1 << 16;

/// The `n` variable-length strings whose descriptors are `raw` as one byte
/// buffer and `n + 1` offsets, read on several threads when there are many
/// (each part written straight into its place: the descriptors give every
/// part's length first), and whether they are all UTF-8 (`Err(row)`: the
/// first row that is not, when [`StringMode::Utf8`]).
#[allow(clippy::type_complexity)]
fn vlen_buffers(
    ctx: &Ctx<'_>,
    dtype: &Datatype,
    raw: &[u8],
    n: usize,
) -> Result<(Vec<u8>, Vec<i32>, core::result::Result<(), usize>)> {
    use h5fmt::data::decode::{for_each_vlen_string, vlen_strings_len};
    let file = ctx.dataset.file();
    let fctx = file.ctx();
    let esize = usz(dtype.size()).max(1);
    let threads = crate::engine::cores().min(n / VLEN_PART_MIN).clamp(1, 8);
    let per = n.div_ceil(threads).max(1);
    let parts: Vec<&[u8]> = raw
        .get(..n * esize)
        .unwrap_or(&[])
        .chunks(per * esize)
        .collect();
    let mut lens = Vec::with_capacity(parts.len());
    for p in &parts {
        lens.push(usz(vlen_strings_len(
            dtype,
            p,
            (p.len() / esize) as u64,
            fctx,
        )?));
    }
    let total: usize = lens.iter().sum();
    if total as u64 > fctx.limits.max_read_bytes {
        return Err(Error::Hdf5(h5fmt::Error::limit(format!(
            "column {:?}: {total} bytes of strings exceed the read limit",
            ctx.column
        ))));
    }
    offset_i32(total, ctx)?;
    // Neither buffer is zeroed first: the parts write every byte and every
    // offset (checked below) before the lengths are set.
    let mut data: Vec<u8> = Vec::new();
    let mut offsets: Vec<i32> = Vec::new();
    if data.try_reserve_exact(total).is_err() || offsets.try_reserve_exact(n + 1).is_err() {
        return Err(Error::Hdf5(h5fmt::Error::limit(format!(
            "column {:?}: cannot allocate {total} bytes of strings",
            ctx.column
        ))));
    }
    let check = ctx.strings == StringMode::Utf8;
    // Disjoint destinations per part.
    let mut jobs = Vec::with_capacity(parts.len());
    {
        let d = data
            .spare_capacity_mut()
            .get_mut(..total)
            .unwrap_or(&mut []);
        let o = offsets
            .spare_capacity_mut()
            .get_mut(..n + 1)
            .unwrap_or(&mut []);
        let (mut d, mut o) = match o.split_first_mut() {
            Some((first, rest)) => {
                first.write(0);
                (d, rest)
            }
            None => (d, &mut [][..]),
        };
        let mut base = 0usize;
        for (k, p) in parts.iter().enumerate() {
            let rows = p.len() / esize;
            let (dl, ol) = (lens[k].min(d.len()), rows.min(o.len()));
            let (dh, dt) = core::mem::take(&mut d).split_at_mut(dl);
            let (oh, ot) = core::mem::take(&mut o).split_at_mut(ol);
            jobs.push((*p, rows, dh, oh, base, k * per));
            base += lens[k];
            d = dt;
            o = ot;
        }
    }
    type Job<'a> = (
        &'a [u8],
        usize,
        &'a mut [MaybeUninit<u8>],
        &'a mut [MaybeUninit<i32>],
        usize,
        usize,
    );
    let run =
        |(p, rows, dst, offs, base, first): Job<'_>| -> Result<core::result::Result<(), usize>> {
            let heap = file.heap();
            let (mut pos, mut j, mut overrun) = (0usize, 0usize, false);
            for_each_vlen_string(dtype, p, rows as u64, fctx, &heap, &mut |s| {
                match pos.checked_add(s.len()).and_then(|e| dst.get_mut(pos..e)) {
                    Some(t) => {
                        copy_into(t, s);
                        pos += s.len();
                    }
                    None => overrun = true,
                }
                if let Some(o) = offs.get_mut(j) {
                    o.write((base + pos) as i32);
                }
                j += 1;
            })?;
            if overrun || pos != dst.len() || j != rows || rows != offs.len() {
                return Err(Error::Hdf5(h5fmt::Error::corrupt(
                    "variable-length strings longer than their descriptors say",
                    0,
                )));
            }
            // SAFETY: the strings were written one after the other from the
            // start of `dst` with no overrun and end at its length, and one offset
            // was written per row into `offs`, whose length is the row count
            // (checked just above): both are initialized all through.
            let (dst, offs) = unsafe {
                (
                    &*(dst as *const [MaybeUninit<u8>] as *const [u8]),
                    &*(offs as *const [MaybeUninit<i32>] as *const [i32]),
                )
            };
            if !check {
                return Ok(Ok(()));
            }
            let ok = simdutf8::basic::from_utf8(dst).is_ok()
                && offs.iter().all(|&o| {
                    dst.get((o as usize).wrapping_sub(base))
                        .is_none_or(|&b| b & 0xC0 != 0x80)
                });
            if ok {
                return Ok(Ok(()));
            }
            // Find the first bad row of the part.
            let mut start = 0usize;
            for (i, &o) in offs.iter().enumerate() {
                let end = o as usize - base;
                if dst
                    .get(start..end)
                    .is_none_or(|b| core::str::from_utf8(b).is_err())
                {
                    return Ok(Err(first + i));
                }
                start = end;
            }
            Ok(Err(first))
        };
    let results: Vec<Result<core::result::Result<(), usize>>> = if jobs.len() <= 1 {
        jobs.into_iter().map(run).collect()
    } else {
        let run = &run;
        std::thread::scope(|s| {
            let handles: Vec<_> = jobs
                .into_iter()
                .map(|job| s.spawn(move || run(job)))
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join()
                        .unwrap_or_else(|_| Err(Error::usage("a string-reading thread failed")))
                })
                .collect()
        })
    };
    let mut valid = Ok(());
    for r in results {
        if let (Err(row), Ok(())) = (r?, &valid) {
            valid = Err(row);
        }
    }
    if lens.iter().sum::<usize>() != total
        || parts.iter().map(|p| p.len() / esize).sum::<usize>() != n
    {
        return Err(Error::Hdf5(h5fmt::Error::corrupt(
            "variable-length string descriptors shorter than the rows",
            0,
        )));
    }
    // SAFETY: the parts cover `total` bytes and `n` rows one after the
    // other (checked just above), and each part initialized all its bytes
    // and offsets (checked in `run`, which failed otherwise); offset 0 was
    // written before.
    unsafe {
        data.set_len(total);
        offsets.set_len(n + 1);
    }
    Ok((data, offsets, valid))
}

/// `src` into `dst`, which has the same length (callers slice it so), inline for the short strings
/// that dominate string columns: a `memcpy` call per string showed in the
/// profile of the variable-length string export.
#[inline(always)]
fn copy_into(dst: &mut [MaybeUninit<u8>], src: &[u8]) {
    /// The first and the last `N` bytes (overlapping when `src` is shorter
    /// than `2 * N`); `false` when `src` is shorter than `N`.
    #[inline(always)]
    fn ends<const N: usize>(dst: &mut [MaybeUninit<u8>], src: &[u8]) -> bool {
        match (dst.first_chunk_mut::<N>(), src.first_chunk::<N>()) {
            (Some(d), Some(s)) => *d = s.map(MaybeUninit::new),
            _ => return false,
        }
        match (dst.last_chunk_mut::<N>(), src.last_chunk::<N>()) {
            (Some(d), Some(s)) => *d = s.map(MaybeUninit::new),
            _ => return false,
        }
        true
    }
    let done = match src.len() {
        0 => true,
        1..=3 => {
            let n = src.len();
            for i in [0, n / 2, n - 1] {
                if let (Some(d), Some(&s)) = (dst.get_mut(i), src.get(i)) {
                    d.write(s);
                }
            }
            true
        }
        4..=7 => ends::<4>(dst, src),
        8..=16 => ends::<8>(dst, src),
        17..=32 => ends::<16>(dst, src),
        _ => false,
    };
    if !done {
        for (d, &s) in dst.iter_mut().zip(src) {
            d.write(s);
        }
    }
}

/// A primitive array from `N`-byte elements (`from_le` decodes one
/// little-endian element; big-endian elements are reversed first).
fn prim<T: ArrowPrimitiveType, const N: usize>(
    raw: &[u8],
    big: bool,
    from_le: impl Fn([u8; N]) -> T::Native,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let values: Vec<T::Native> = raw
        .chunks_exact(N)
        .map(|c| {
            let mut b: [u8; N] = c.try_into().unwrap_or([0; N]);
            if big {
                b.reverse();
            }
            from_le(b)
        })
        .collect();
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

fn from_codes<T: ArrowPrimitiveType>(
    codes: &[i128],
    f: impl Fn(i128) -> T::Native,
    nulls: Option<NullBuffer>,
) -> ArrayRef {
    let values: Vec<T::Native> = codes.iter().map(|&c| f(c)).collect();
    Arc::new(PrimitiveArray::<T>::new(ScalarBuffer::from(values), nulls))
}

fn offset_i32(len: usize, ctx: &Ctx<'_>) -> Result<i32> {
    i32::try_from(len).map_err(|_| {
        Error::usage(format!(
            "column {:?}: more than 2 GiB of string bytes in one batch; use fewer rows per batch",
            ctx.column
        ))
    })
}

/// Dictionary keys (or boolean codes) from integer codes: `key(code)`,
/// 0 under a null; a non-null code without a key is an error.
fn codes_to_keys(
    code: &Datatype,
    raw: &[u8],
    nulls: Option<&NullBuffer>,
    ctx: &Ctx<'_>,
    key: impl Fn(i128) -> Option<i32>,
) -> Result<PrimitiveArray<Int32Type>> {
    let size = usz(code.size());
    let mut keys = Vec::with_capacity(raw.len() / size.max(1));
    for (i, e) in raw.chunks_exact(size).enumerate() {
        if nulls.is_some_and(|n| n.is_null(i)) {
            keys.push(0);
            continue;
        }
        let c = h5fmt::data::decode::integer_code(code, e)?;
        match key(c) {
            Some(k) => keys.push(k),
            None => {
                return Err(Error::invalid(
                    ctx.dataset.path(),
                    "§8.7",
                    format!(
                        "row {i} of the batch holds code {c}, which names no category or member"
                    ),
                ))
            }
        }
    }
    Ok(PrimitiveArray::new(
        ScalarBuffer::from(keys),
        nulls.cloned(),
    ))
}

/// A `Utf8` (checked) or `Binary` array over `data`/`offsets`.
fn strings(
    data: Vec<u8>,
    offsets: Vec<i32>,
    nulls: Option<NullBuffer>,
    ctx: &Ctx<'_>,
) -> Result<ArrayRef> {
    let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
    match ctx.strings {
        StringMode::Binary => Ok(Arc::new(
            BinaryArray::try_new(offsets, Buffer::from_vec(data), nulls)
                .map_err(|e| arrow_err(ctx.column, e))?,
        )),
        StringMode::Utf8 => {
            // One validation pass (arrow's): the whole buffer, then the
            // offsets on character boundaries. Only when it fails, find the row.
            let values = Buffer::from_vec(data);
            match StringArray::try_new(offsets.clone(), values.clone(), nulls) {
                Ok(a) => Ok(Arc::new(a)),
                Err(_) => {
                    let row = offsets.windows(2).position(|w| {
                        values
                            .get(usz(w[0] as u64)..usz(w[1] as u64))
                            .is_none_or(|b| core::str::from_utf8(b).is_err())
                    });
                    Err(not_utf8(ctx, row.unwrap_or(0)))
                }
            }
        }
    }
}

fn not_utf8(ctx: &Ctx<'_>, row: usize) -> Error {
    Error::invalid(
        ctx.dataset.path(),
        "§8.3",
        format!(
            "row {row} of the batch is not valid UTF-8; export string columns as Binary \
             (StringMode::Binary) to keep such bytes"
        ),
    )
}

/// The canonical missing test (§8.5) on file bytes, as a null buffer
/// (`None` when no row is missing).
fn null_mask(col: &Column, plan: &Plan, raw: &[u8], n: usize) -> Result<Option<NullBuffer>> {
    let fill = col.fill();
    let Some(fillv) = &fill.value else {
        return Ok(None);
    };
    let dtype = col.dtype();
    let size = usz(dtype.size());
    let missing: Vec<bool> = if fill.is_nan {
        let big = matches!(plan, Plan::Float { big: true, .. });
        raw.chunks_exact(size)
            .map(|e| {
                let mut b = e.to_vec();
                if big {
                    b.reverse();
                }
                match size {
                    2 => {
                        let x = u16::from_le_bytes([b[0], b[1]]);
                        (x & 0x7c00) == 0x7c00 && (x & 0x03ff) != 0
                    }
                    4 => f32::from_le_bytes(b.try_into().unwrap_or([0; 4])).is_nan(),
                    _ => f64::from_le_bytes(b.try_into().unwrap_or([0; 8])).is_nan(),
                }
            })
            .collect()
    } else if let Plan::VlenStr { dtype } = plan {
        let want: &[u8] = match fillv {
            Value::Str(s) => s.as_bytes(),
            Value::RawStr(b) => b,
            _ => return Ok(None),
        };
        let file = col.dataset().file();
        let mut m = Vec::with_capacity(n);
        h5fmt::data::decode::for_each_vlen_string(
            dtype,
            raw,
            n as u64,
            file.ctx(),
            &file.heap(),
            &mut |s| m.push(s == want),
        )?;
        m
    } else if dtype.is_variable_length() {
        let file = col.dataset().file();
        let values =
            h5fmt::data::decode::decode_elements(dtype, raw, n as u64, file.ctx(), &file.heap())?;
        col.missing_mask(raw, &values)
    } else {
        if fill.bytes.len() != size {
            return Ok(None);
        }
        raw.chunks_exact(size)
            .map(|e| e == fill.bytes.as_slice())
            .collect()
    };
    if !missing.iter().any(|&m| m) {
        return Ok(None);
    }
    Ok(Some(NullBuffer::from_iter(missing.iter().map(|&m| !m))))
}

/// How one level of a list column is converted.
#[derive(Debug, Clone)]
enum ListPlan {
    /// A list level: `LargeList` over 8-byte offsets, `List` otherwise.
    Level {
        large: bool,
        item: Arc<Field>,
        child: Box<ListPlan>,
        path: String,
    },
    /// Leaf elements, converted as a column of the leaf's datatype.
    Leaf { column: Box<Column>, plan: Plan },
    /// `STRING_VALUES`: `LargeUtf8` (`LargeBinary`) over 8-byte offsets,
    /// `Utf8` (`Binary`) otherwise.
    Strings { large: bool, path: String },
}

impl ListPlan {
    fn of(level: &ListLevel, opts: &ExportOptions) -> Result<(ListPlan, DataType)> {
        let (child, child_dt) = match level.values() {
            ListValues::Leaf(c) => {
                let ctx = Ctx {
                    dataset: c.dataset(),
                    strings: opts.strings,
                    column: c.name(),
                    row_table: false,
                };
                let (plan, dt) = Plan::of(c.dtype(), &ctx)?;
                (
                    ListPlan::Leaf {
                        column: c.clone(),
                        plan,
                    },
                    dt,
                )
            }
            ListValues::Strings(sv) => {
                let large = sv.wide_offsets();
                let dt = match (opts.strings, large) {
                    (StringMode::Utf8, true) => DataType::LargeUtf8,
                    (StringMode::Utf8, false) => DataType::Utf8,
                    (StringMode::Binary, true) => DataType::LargeBinary,
                    (StringMode::Binary, false) => DataType::Binary,
                };
                (
                    ListPlan::Strings {
                        large,
                        path: sv.path().to_string(),
                    },
                    dt,
                )
            }
            ListValues::Lists(inner) => ListPlan::of(inner, opts)?,
        };
        let mut item = Field::new("item", child_dt, true);
        if let ListPlan::Leaf { column, .. } = &child {
            if let Some(v) = &column.fill().value {
                let mut meta = std::collections::HashMap::new();
                meta.insert("hdf5:fill".to_string(), crate::text::format_value(v));
                item = item.with_metadata(meta);
            }
        }
        let item = Arc::new(item);
        let large = level.wide_offsets();
        let dt = if large {
            DataType::LargeList(item.clone())
        } else {
            DataType::List(item.clone())
        };
        Ok((
            ListPlan::Level {
                large,
                item,
                child: Box::new(child),
                path: level.path().to_string(),
            },
            dt,
        ))
    }

    fn build_level(&self, raw: RawList, strings: StringMode) -> Result<ArrayRef> {
        let ListPlan::Level {
            large,
            item,
            child,
            path,
        } = self
        else {
            return Err(Error::usage("list plan and list bytes disagree"));
        };
        let nulls = raw.valid.map(NullBuffer::from_iter);
        let values = child.build_values(raw.child, strings)?;
        let err = |e: ArrowError| arrow_err(path, e);
        Ok(if *large {
            let offsets = offsets_i64(&raw.offsets, path)?;
            Arc::new(LargeListArray::try_new(item.clone(), offsets, values, nulls).map_err(err)?)
        } else {
            let offsets = offsets_i32(&raw.offsets, path)?;
            Arc::new(ListArray::try_new(item.clone(), offsets, values, nulls).map_err(err)?)
        })
    }

    fn build_values(&self, raw: RawValues, strings: StringMode) -> Result<ArrayRef> {
        match (self, raw) {
            (ListPlan::Level { .. }, RawValues::Lists(r)) => self.build_level(*r, strings),
            (ListPlan::Leaf { column, plan }, RawValues::Leaf { raw, n }) => {
                let n = usz(n);
                let nulls = null_mask(column, plan, &raw, n)?;
                let ctx = Ctx {
                    dataset: column.dataset(),
                    strings,
                    column: column.name(),
                    row_table: false,
                };
                plan.build(&raw, n, nulls, &ctx)
            }
            (
                ListPlan::Strings { large, path },
                RawValues::Strings {
                    offsets,
                    chars,
                    valid,
                },
            ) => {
                let nulls = valid.map(NullBuffer::from_iter);
                let data = Buffer::from_vec(chars);
                let err = |e: ArrowError| {
                    Error::invalid(
                        path,
                        crate::list::SECTION,
                        format!(
                            "{e}; export string columns as Binary (StringMode::Binary) to keep \
                             bytes that are not UTF-8"
                        ),
                    )
                };
                Ok(match (strings, *large) {
                    (StringMode::Utf8, true) => Arc::new(
                        LargeStringArray::try_new(offsets_i64(&offsets, path)?, data, nulls)
                            .map_err(err)?,
                    ),
                    (StringMode::Utf8, false) => Arc::new(
                        StringArray::try_new(offsets_i32(&offsets, path)?, data, nulls)
                            .map_err(err)?,
                    ),
                    (StringMode::Binary, true) => Arc::new(
                        LargeBinaryArray::try_new(offsets_i64(&offsets, path)?, data, nulls)
                            .map_err(err)?,
                    ),
                    (StringMode::Binary, false) => Arc::new(
                        BinaryArray::try_new(offsets_i32(&offsets, path)?, data, nulls)
                            .map_err(err)?,
                    ),
                })
            }
            _ => Err(Error::usage("list plan and list bytes disagree")),
        }
    }
}

/// Offsets already checked to start at 0 and never decrease (by
/// [`crate::list`]), as Arrow's 64-bit offsets.
fn offsets_i64(offsets: &[u64], path: &str) -> Result<OffsetBuffer<i64>> {
    let v = offsets
        .iter()
        .map(|&o| i64::try_from(o))
        .collect::<core::result::Result<Vec<i64>, _>>()
        .map_err(|_| {
            Error::invalid(
                path,
                crate::list::SECTION,
                "an offset exceeds the signed 64-bit range of Arrow offsets",
            )
        })?;
    if v.first() != Some(&0) || v.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::invalid(
            path,
            crate::list::SECTION,
            "offsets decrease",
        ));
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

/// As [`offsets_i64`], 32-bit (a batch's elements must number < 2^31).
fn offsets_i32(offsets: &[u64], path: &str) -> Result<OffsetBuffer<i32>> {
    let v = offsets
        .iter()
        .map(|&o| i32::try_from(o))
        .collect::<core::result::Result<Vec<i32>, _>>()
        .map_err(|_| {
            Error::usage(format!(
                "{path}: 2^31 or more list elements in one batch; use fewer rows per batch"
            ))
        })?;
    if v.first() != Some(&0) || v.windows(2).any(|w| w[1] < w[0]) {
        return Err(Error::invalid(
            path,
            crate::list::SECTION,
            "offsets decrease",
        ));
    }
    Ok(OffsetBuffer::new(ScalarBuffer::from(v)))
}

#[derive(Debug, Clone)]
enum Source {
    Scalar {
        column: Box<Column>,
        plan: Plan,
    },
    List {
        column: Box<ListColumn>,
        plan: ListPlan,
    },
}

/// One column's conversion: its field and its plan.
#[derive(Debug, Clone)]
pub struct ColumnExport {
    source: Source,
    field: Arc<Field>,
    strings: StringMode,
}

impl ColumnExport {
    /// The conversion of `column` of `table`, of either kind.
    ///
    /// # Errors
    /// As [`ColumnExport::new`] and [`ColumnExport::new_list`].
    pub fn of(
        table: &Table,
        column: TableColumn<'_>,
        opts: &ExportOptions,
    ) -> Result<ColumnExport> {
        match column {
            TableColumn::Scalar(c) => ColumnExport::new(table, c, opts),
            TableColumn::List(c) => ColumnExport::new_list(c, opts),
        }
    }

    /// The conversion of the list column `column`: `LargeList` when its
    /// `OFFSETS` are 8 bytes wide (the draft's uint64), `List` otherwise,
    /// nested per level; items mapped as columns of the leaf's datatype
    /// (missing elements null), or strings of a `STRING_VALUES` group
    /// (`LargeUtf8` over 8-byte offsets, `Utf8` otherwise); a null list
    /// (`MASK` FALSE) is null.
    ///
    /// # Errors
    /// [`ListColumn::layout`]'s error (an unknown KIND, a malformed group).
    pub fn new_list(column: &ListColumn, opts: &ExportOptions) -> Result<ColumnExport> {
        let (plan, dt) = ListPlan::of(column.layout()?, opts)?;
        let mut meta: BTreeMap<String, String> = BTreeMap::new();
        for (k, v) in [
            ("units", &column.units),
            ("units_vocabulary", &column.units_vocabulary),
            ("description", &column.description),
        ] {
            if let Some(v) = v {
                meta.insert(k.into(), v.clone());
            }
        }
        meta.insert("hdf5:list_kind".into(), crate::list::OFFSETS_KIND.into());
        let field = Field::new(column.name(), dt, true).with_metadata(meta.into_iter().collect());
        Ok(ColumnExport {
            source: Source::List {
                column: Box::new(column.clone()),
                plan,
            },
            field: Arc::new(field),
            strings: opts.strings,
        })
    }

    /// The conversion of `column` of `table`.
    ///
    /// # Errors
    /// HDF5 errors reading a categorical column's labels; a categories
    /// dataset that is not rank 1.
    pub fn new(table: &Table, column: &Column, opts: &ExportOptions) -> Result<ColumnExport> {
        let ctx = Ctx {
            dataset: column.dataset(),
            strings: opts.strings,
            column: column.name(),
            row_table: false,
        };
        let (mut plan, mut dt) = Plan::of(column.dtype(), &ctx)?;
        let mut ordered = false;
        let mut meta: BTreeMap<String, String> = BTreeMap::new();
        if let (ColumnKind::Categorical, Some(cats)) = (column.kind(), &column.categories) {
            let ds = table.group().file().dataset(&cats.path)?;
            let cctx = Ctx {
                dataset: &ds,
                strings: opts.strings,
                column: column.name(),
                row_table: false,
            };
            let (lplan, ldt) = Plan::of(ds.dtype(), &cctx)?;
            let raw = ds.read_raw()?;
            let n = usz(ds.len());
            let labels = lplan.build(&raw, n, None, &cctx)?;
            plan = Plan::Categorical {
                code: column.dtype().clone(),
                labels,
            };
            dt = DataType::Dictionary(Box::new(DataType::Int32), Box::new(ldt));
            ordered = cats.ordered.unwrap_or(false);
            meta.insert("hdf5:categories".into(), cats.path.clone());
        }
        for (k, v) in [
            ("units", &column.units),
            ("units_vocabulary", &column.units_vocabulary),
            ("description", &column.description),
        ] {
            if let Some(v) = v {
                meta.insert(k.into(), v.clone());
            }
        }
        let fill = column.fill();
        if let Some(v) = &fill.value {
            meta.insert("hdf5:fill".into(), crate::text::format_value(v));
            meta.insert("hdf5:fill_hex".into(), crate::text::hex(&fill.bytes));
        }
        match column.dtype() {
            Datatype::Opaque { tag, .. } => {
                meta.insert("hdf5:opaque_tag".into(), tag.clone());
            }
            d if matches!(plan, Plan::Raw { .. }) => {
                meta.insert("hdf5:datatype".into(), format!("{d:?}"));
            }
            _ => {}
        }
        let mut field = Field::new(column.name(), dt, true);
        if ordered {
            field = field.with_dict_is_ordered(true);
        }
        let field = field.with_metadata(meta.into_iter().collect());
        Ok(ColumnExport {
            source: Source::Scalar {
                column: Box::new(column.clone()),
                plan,
            },
            field: Arc::new(field),
            strings: opts.strings,
        })
    }

    /// The Arrow field.
    pub fn field(&self) -> &Arc<Field> {
        &self.field
    }

    /// The column.
    pub fn column(&self) -> TableColumn<'_> {
        match &self.source {
            Source::Scalar { column, .. } => TableColumn::Scalar(column),
            Source::List { column, .. } => TableColumn::List(column),
        }
    }

    /// Rows `rows` as one Arrow array, missing rows null.
    ///
    /// # Errors
    /// As [`Column::read_raw`] and [`ListColumn::read`]; [`Error::Invalid`]
    /// for strings that are not UTF-8 (in [`StringMode::Utf8`]) and codes
    /// that name no category or enum member; corrupt heap objects.
    pub fn array(&self, rows: Range<u64>) -> Result<ArrayRef> {
        let (column, plan) = match &self.source {
            Source::Scalar { column, plan } => (column, plan),
            Source::List { column, plan } => {
                let raw = column.layout()?.read_raw(rows)?;
                return plan.build_level(raw, self.strings);
            }
        };
        let n = usz(rows.end.saturating_sub(rows.start));
        let raw = column.read_raw(rows)?;
        let nulls = null_mask(column, plan, &raw, n)?;
        let ctx = Ctx {
            dataset: column.dataset(),
            strings: self.strings,
            column: column.name(),
            row_table: false,
        };
        plan.build(&raw, n, nulls, &ctx)
    }
}

/// The conversions of `columns` of `table` (all columns in logical order
/// when `None`).
fn exports(
    table: &Table,
    columns: Option<&[&str]>,
    opts: &ExportOptions,
) -> Result<Vec<ColumnExport>> {
    let cols: Vec<TableColumn<'_>> = match columns {
        None => table.all_columns(),
        Some(names) => names
            .iter()
            .map(|n| table.any_column(n))
            .collect::<Result<_>>()?,
    };
    cols.into_iter()
        .map(|c| ColumnExport::of(table, c, opts))
        .collect()
}

fn schema_of(table: &Table, exports: &[ColumnExport]) -> SchemaRef {
    let mut meta: BTreeMap<String, String> = BTreeMap::new();
    meta.insert("hep001:path".into(), table.path().to_string());
    meta.insert("hep001:version".into(), table.version().to_string());
    meta.insert("hep001:nrows".into(), table.nrows().to_string());
    if let Some(t) = &table.title {
        meta.insert("TITLE".into(), t.clone());
    }
    if let Some(d) = &table.description {
        meta.insert("description".into(), d.clone());
    }
    if !table.index_columns.is_empty() {
        meta.insert("INDEX_COLUMNS".into(), table.index_columns.join(","));
    }
    let fields: Vec<Arc<Field>> = exports.iter().map(|e| e.field.clone()).collect();
    Arc::new(Schema::new_with_metadata(
        Fields::from(fields),
        meta.into_iter().collect(),
    ))
}

/// The Arrow schema of `table`, or of the projection `columns` in that
/// order (see the [module documentation](self) for the mapping).
///
/// # Errors
/// `Usage` for an unknown column name; as [`ColumnExport::new`].
pub fn schema(table: &Table, columns: Option<&[&str]>, opts: &ExportOptions) -> Result<SchemaRef> {
    Ok(schema_of(table, &exports(table, columns, opts)?))
}

/// Rows `rows` of `table` (or of the projection `columns`) as one batch.
///
/// # Errors
/// `Usage` for an unknown column or rows past NROWS; as [`ColumnExport::array`].
pub fn read_batch(
    table: &Table,
    columns: Option<&[&str]>,
    rows: Range<u64>,
    opts: &ExportOptions,
) -> Result<RecordBatch> {
    let mut b = batches(table, columns, rows.clone(), opts)?;
    b.batch_rows = rows.end.saturating_sub(rows.start).max(1);
    match b.next_batch()? {
        Some(batch) => Ok(batch),
        None => Ok(RecordBatch::new_empty(b.schema.clone())),
    }
}

/// A reader of `table`'s rows `rows` (within `[0, NROWS)`), projected on
/// `columns` (all, in logical order, when `None`), in batches of
/// `opts.batch_rows` rows.
///
/// # Errors
/// `Usage` for an unknown column or rows past NROWS; as [`ColumnExport::new`].
pub fn batches(
    table: &Table,
    columns: Option<&[&str]>,
    rows: Range<u64>,
    opts: &ExportOptions,
) -> Result<TableBatches> {
    if rows.start > rows.end || rows.end > table.nrows() {
        return Err(Error::usage(format!(
            "rows {}..{} outside table {} of {} rows",
            rows.start,
            rows.end,
            table.path(),
            table.nrows()
        )));
    }
    let exports = exports(table, columns, opts)?;
    Ok(TableBatches {
        schema: schema_of(table, &exports),
        exports,
        next: rows.start,
        end: rows.end,
        batch_rows: opts.batch_rows.max(1),
    })
}

/// Batches of a table's rows (see [`batches`]). An [`Iterator`] of
/// `Result<RecordBatch, ArrowError>` and an
/// [`arrow_array::RecordBatchReader`]; [`TableBatches::next_batch`] gives
/// this crate's errors instead.
#[derive(Debug)]
pub struct TableBatches {
    schema: SchemaRef,
    exports: Vec<ColumnExport>,
    next: u64,
    end: u64,
    batch_rows: u64,
}

impl TableBatches {
    /// The schema of every batch.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// The column conversions, in schema order.
    pub fn columns(&self) -> &[ColumnExport] {
        &self.exports
    }

    /// The next batch, `None` after the last row.
    ///
    /// # Errors
    /// As [`ColumnExport::array`].
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        if self.next >= self.end {
            return Ok(None);
        }
        let hi = self.end.min(self.next.saturating_add(self.batch_rows));
        let rows = self.next..hi;
        let arrays = self
            .exports
            .iter()
            .map(|e| e.array(rows.clone()))
            .collect::<Result<Vec<_>>>()?;
        let opts = RecordBatchOptions::new().with_row_count(Some(usz(hi - self.next)));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), arrays, &opts)
            .map_err(|e| arrow_err("(batch)", e))?;
        self.next = hi;
        Ok(Some(batch))
    }
}

impl Iterator for TableBatches {
    type Item = core::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        match self.next_batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.next = self.end;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl arrow_array::RecordBatchReader for TableBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

/// The conversion of one compound member of a row-oriented table
/// ([`crate::rowtable`]) to Arrow.
#[derive(Debug, Clone)]
pub(crate) struct MemberPlan {
    plan: Plan,
    size: usize,
    /// The member's Arrow type.
    pub(crate) data_type: DataType,
}

impl MemberPlan {
    /// The plan of member `name` of `dataset`'s compound type, of type `dtype`.
    pub(crate) fn of(dataset: &Dataset, name: &str, dtype: &Datatype) -> Result<MemberPlan> {
        let ctx = Ctx {
            dataset,
            strings: StringMode::Utf8,
            column: name,
            row_table: true,
        };
        let (plan, data_type) = Plan::of(dtype, &ctx)?;
        Ok(MemberPlan {
            plan,
            size: usz(dtype.size()),
            data_type,
        })
    }

    /// The member's values from its elements' bytes, `raw` (whole elements).
    pub(crate) fn build(&self, dataset: &Dataset, name: &str, raw: &[u8]) -> Result<ArrayRef> {
        self.build_with_nulls(dataset, name, raw, None)
    }

    /// As [`MemberPlan::build`], with the rows where `nulls` is unset null.
    pub(crate) fn build_with_nulls(
        &self,
        dataset: &Dataset,
        name: &str,
        raw: &[u8],
        nulls: Option<NullBuffer>,
    ) -> Result<ArrayRef> {
        let ctx = Ctx {
            dataset,
            strings: StringMode::Utf8,
            column: name,
            row_table: true,
        };
        let n = raw.len().checked_div(self.size).unwrap_or(0);
        self.plan.build(raw, n, nulls, &ctx)
    }
}
