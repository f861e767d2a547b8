//! Daf data sets in HDF5 ("H5DF", the `DataAxesFormats.jl` `H5df` storage
//! format, version 1.0): read with [`DafReader`], write with [`DafWriter`].
//!
//! A Daf data set lives in the root group (a `.h5df` file) or in any group
//! (several per `.h5dfs` file). Under that group:
//!
//! | member | what it holds |
//! |---|---|
//! | `daf` | dataset of two unsigned integers `[major, minor]`, `[1, 0]` |
//! | `scalars/<name>` | scalar dataset (booleans, integers, floats, string) |
//! | `axes/<axis>` | rank-1 dataset of strings, the axis' entry names |
//! | `vectors/<axis>/<name>` | dense: a rank-1 dataset of the axis' length; sparse: a group of `nzind` + `nzval` (or `nztxt` for strings; no values at all for an all-true boolean vector) |
//! | `matrices/<rows>/<cols>/<name>` | dense: a dataset in column-major order; sparse: a group of `colptr` + `rowval` + `nzval` (CSC) |
//!
//! Interpretations, following the Julia implementation where the text
//! leaves something open:
//!
//! - **Indices are 1-based**, as Julia's `SparseVector` and
//!   `SparseMatrixCSC` store them: `nzind` and `rowval` hold 1..=n and
//!   `colptr` starts at 1 and ends at `nnz + 1`. The Rust API is 0-based
//!   ([`DafVector::Sparse`], [`DafMatrix::Csc`]); conversion happens here.
//!   Indices are written as the smallest unsigned integer type that holds
//!   them (Julia's `indtype_for_size`); any integer type is read.
//! - **Dense matrices** have the HDF5 dataspace `[ncols, nrows]`: HDF5.jl
//!   writes dimensions reversed so the bytes are Julia's column-major
//!   layout (h5py shows the transpose of the Daf `(rows, cols)` matrix).
//! - **Element types** are HDF5.jl's: booleans are `H5T_NATIVE_B8`
//!   bitfields (h5py's `bool` enum is read too), integers and IEEE floats
//!   little-endian, strings variable-length UTF-8 (vectors, axes) and a
//!   fixed-length null-terminated UTF-8 string of the value's length (at
//!   least 1) for string scalars, as HDF5.jl writes a `String`.
//! - **The version** is the `daf` *dataset* the text prescribes (not an
//!   attribute); Julia writes it as `UInt8[1, 0]`. A major version other
//!   than 1 or a minor above 0 is refused, as Julia refuses it; any integer
//!   type with non-negative values is accepted for it.
//! - **All-true booleans** concern sparse boolean vectors and matrices:
//!   `nzind` (or `colptr`/`rowval`) without `nzval` means every stored
//!   value is `true`.
//! - **Sparse strings** (`nztxt`) densify to the empty string elsewhere;
//!   Julia writes them for vectors and (beyond the text, which excludes
//!   string matrices) for matrices; both are read and written.
//! - **Alignment**: [`DafWriter`] sets the file's alignment to `(1, 8)`
//!   ([`FileWriter::set_alignment`]), as Julia creates its files, so every
//!   contiguous vector and matrix starts 8-byte aligned and
//!   [`DafReader::vector_slice`] / [`DafReader::matrix_slice`] can lend the
//!   memory-mapped bytes without a copy.
//!
//! Everything read is checked: shapes against the axes, sparse indices in
//! range and increasing, `colptr` starting at 1, monotone and ending at
//! `nnz + 1`; any violation is an [`Error::Invalid`] naming the object.
//! [`DafEditor`] adds numeric and boolean vectors and matrices to a Daf
//! data set of an existing file through [`h5fmt::FileEditor`] (aligned to
//! 8 bytes, as new files are). It does not create data sets, axes, scalars
//! or string properties: the editor creates neither scalar datasets nor
//! contiguous variable-length ones, which those need.

use crate::error::{Error, Result};
use alloc::borrow::Cow;
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use h5fmt::format::datatype::{ByteOrder, CharSet, StringPad};
use h5fmt::format::message::Layout;
use h5fmt::write::edit::NewDataset;
use h5fmt::write::{FileWriter, H5Type, ObjectId};
use h5fmt::{Dataset, Datatype, File, FileEditor, Group, Object, Value};

/// Section tag of errors about Daf data.
const SECTION: &str = "Daf H5DF";

/// The major version of the format read and written.
pub const MAJOR_VERSION: u8 = 1;
/// The highest minor version read; the one written.
pub const MINOR_VERSION: u8 = 0;

/// The element type of a Daf property (Julia's `StorageScalar` types).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DafType {
    /// `Bool`.
    Bool,
    /// `Int8`.
    I8,
    /// `Int16`.
    I16,
    /// `Int32`.
    I32,
    /// `Int64`.
    I64,
    /// `UInt8`.
    U8,
    /// `UInt16`.
    U16,
    /// `UInt32`.
    U32,
    /// `UInt64`.
    U64,
    /// `Float32`.
    F32,
    /// `Float64`.
    F64,
    /// `String`.
    Str,
}

/// A scalar property.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // one variant per `DafType`
pub enum DafScalar {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    F32(f32),
    F64(f64),
    Str(String),
}

/// Values of one element type: a dense vector, the values of a sparse one,
/// or a matrix in column-major order.
#[derive(Debug, Clone, PartialEq)]
#[allow(missing_docs)] // one variant per `DafType`
pub enum DafArray {
    Bool(Vec<bool>),
    I8(Vec<i8>),
    I16(Vec<i16>),
    I32(Vec<i32>),
    I64(Vec<i64>),
    U8(Vec<u8>),
    U16(Vec<u16>),
    U32(Vec<u32>),
    U64(Vec<u64>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Str(Vec<String>),
}

/// Apply `$body` to the vector inside any numeric-or-bool [`DafArray`]
/// variant, strings in `$str`.
macro_rules! each_array {
    ($a:expr, $v:ident => $body:expr, $s:ident => $str:expr) => {
        match $a {
            DafArray::Bool($v) => $body,
            DafArray::I8($v) => $body,
            DafArray::I16($v) => $body,
            DafArray::I32($v) => $body,
            DafArray::I64($v) => $body,
            DafArray::U8($v) => $body,
            DafArray::U16($v) => $body,
            DafArray::U32($v) => $body,
            DafArray::U64($v) => $body,
            DafArray::F32($v) => $body,
            DafArray::F64($v) => $body,
            DafArray::Str($s) => $str,
        }
    };
}

impl DafArray {
    /// The number of values.
    pub fn len(&self) -> usize {
        each_array!(self, v => v.len(), s => s.len())
    }
    /// Whether there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The element type.
    pub fn dtype(&self) -> DafType {
        match self {
            DafArray::Bool(_) => DafType::Bool,
            DafArray::I8(_) => DafType::I8,
            DafArray::I16(_) => DafType::I16,
            DafArray::I32(_) => DafType::I32,
            DafArray::I64(_) => DafType::I64,
            DafArray::U8(_) => DafType::U8,
            DafArray::U16(_) => DafType::U16,
            DafArray::U32(_) => DafType::U32,
            DafArray::U64(_) => DafType::U64,
            DafArray::F32(_) => DafType::F32,
            DafArray::F64(_) => DafType::F64,
            DafArray::Str(_) => DafType::Str,
        }
    }

    /// `n` zero values (false, 0, the empty string) of `dtype`.
    /// `n` zeros (empty strings) of `dtype`. The size comes from the file
    /// (an axis length), so it is bounded like any read: more bytes than
    /// h5fmt's default `max_read_bytes` (half the memory this process may
    /// use) is `Limit`, never an allocation that takes the machine down.
    fn zeros(dtype: DafType, n: usize) -> Result<DafArray> {
        let width = match dtype {
            DafType::Bool | DafType::I8 | DafType::U8 => 1,
            DafType::I16 | DafType::U16 => 2,
            DafType::I32 | DafType::U32 | DafType::F32 => 4,
            DafType::I64 | DafType::U64 | DafType::F64 => 8,
            DafType::Str => core::mem::size_of::<String>() as u64,
        };
        let max = h5fmt::limits::default_max_read_bytes();
        if (n as u64).saturating_mul(width) > max {
            return Err(Error::Hdf5(h5fmt::Error::limit(format!(
                "a dense Daf array of {n} values ({} bytes) exceeds the read limit of {max} bytes",
                (n as u64).saturating_mul(width)
            ))));
        }
        fn z<T: Clone>(v: T, n: usize) -> Result<Vec<T>> {
            let mut out = Vec::new();
            out.try_reserve_exact(n)
                .map_err(|_| Error::usage(format!("{n} values do not fit in memory")))?;
            out.resize(n, v);
            Ok(out)
        }
        Ok(match dtype {
            DafType::Bool => DafArray::Bool(z(false, n)?),
            DafType::I8 => DafArray::I8(z(0, n)?),
            DafType::I16 => DafArray::I16(z(0, n)?),
            DafType::I32 => DafArray::I32(z(0, n)?),
            DafType::I64 => DafArray::I64(z(0, n)?),
            DafType::U8 => DafArray::U8(z(0, n)?),
            DafType::U16 => DafArray::U16(z(0, n)?),
            DafType::U32 => DafArray::U32(z(0, n)?),
            DafType::U64 => DafArray::U64(z(0, n)?),
            DafType::F32 => DafArray::F32(z(0.0, n)?),
            DafType::F64 => DafArray::F64(z(0.0, n)?),
            DafType::Str => DafArray::Str(z(String::new(), n)?),
        })
    }

    /// Set `self[at[i]] = values[i]` for every `i` (same types; positions
    /// checked by the caller).
    fn scatter(&mut self, at: &[usize], values: &DafArray) {
        fn put<T: Clone>(dst: &mut [T], at: &[usize], src: &[T]) {
            for (&i, v) in at.iter().zip(src) {
                if let Some(d) = dst.get_mut(i) {
                    d.clone_from(v);
                }
            }
        }
        match (self, values) {
            (DafArray::Bool(d), DafArray::Bool(s)) => put(d, at, s),
            (DafArray::I8(d), DafArray::I8(s)) => put(d, at, s),
            (DafArray::I16(d), DafArray::I16(s)) => put(d, at, s),
            (DafArray::I32(d), DafArray::I32(s)) => put(d, at, s),
            (DafArray::I64(d), DafArray::I64(s)) => put(d, at, s),
            (DafArray::U8(d), DafArray::U8(s)) => put(d, at, s),
            (DafArray::U16(d), DafArray::U16(s)) => put(d, at, s),
            (DafArray::U32(d), DafArray::U32(s)) => put(d, at, s),
            (DafArray::U64(d), DafArray::U64(s)) => put(d, at, s),
            (DafArray::F32(d), DafArray::F32(s)) => put(d, at, s),
            (DafArray::F64(d), DafArray::F64(s)) => put(d, at, s),
            (DafArray::Str(d), DafArray::Str(s)) => put(d, at, s),
            _ => {}
        }
    }

    fn is_all_true_bool(&self) -> bool {
        matches!(self, DafArray::Bool(v) if v.iter().all(|&b| b))
    }
}

/// A vector property.
#[derive(Debug, Clone, PartialEq)]
pub enum DafVector {
    /// One value per axis entry.
    Dense(DafArray),
    /// The values at increasing 0-based positions `nzind` of a vector of
    /// `len` values, the others zero (false, 0, the empty string). On
    /// disk: `nzind` (1-based) and `nzval`; `nztxt` for strings; for
    /// booleans that are all true, `nzind` alone.
    Sparse {
        /// The vector's length (the axis' length).
        len: u64,
        /// 0-based positions, increasing.
        nzind: Vec<u64>,
        /// The values at those positions.
        nzval: DafArray,
    },
}

impl DafVector {
    /// The element type.
    pub fn dtype(&self) -> DafType {
        match self {
            DafVector::Dense(a) | DafVector::Sparse { nzval: a, .. } => a.dtype(),
        }
    }

    /// The dense values (a sparse vector filled with zeros).
    ///
    /// # Errors
    /// `Usage` when the positions are out of range or the dense vector does
    /// not fit in memory; `Limit` (in [`Error::Hdf5`]) when it is larger
    /// than h5fmt's default read limit.
    pub fn to_dense(&self) -> Result<DafArray> {
        match self {
            DafVector::Dense(a) => Ok(a.clone()),
            sparse => sparse.sparse_to_dense(),
        }
    }

    /// As [`DafVector::to_dense`], without copying dense values.
    ///
    /// # Errors
    /// As [`DafVector::to_dense`].
    pub fn into_dense(self) -> Result<DafArray> {
        match self {
            DafVector::Dense(a) => Ok(a),
            sparse => sparse.sparse_to_dense(),
        }
    }

    fn sparse_to_dense(&self) -> Result<DafArray> {
        match self {
            DafVector::Dense(a) => Ok(a.clone()),
            DafVector::Sparse { len, nzind, nzval } => {
                let n = usize::try_from(*len).map_err(|_| Error::usage("vector too long"))?;
                let at = positions(nzind, n)?;
                let mut out = DafArray::zeros(nzval.dtype(), n)?;
                out.scatter(&at, nzval);
                Ok(out)
            }
        }
    }
}

/// A matrix property of `nrows` (entries of the rows axis) by `ncols`.
#[derive(Debug, Clone, PartialEq)]
pub enum DafMatrix {
    /// All values, column-major (`values[row + col * nrows]`).
    Dense {
        /// Number of rows.
        nrows: u64,
        /// Number of columns.
        ncols: u64,
        /// `nrows * ncols` values, column-major.
        values: DafArray,
    },
    /// Compressed sparse columns (Julia's `SparseMatrixCSC`, 0-based here):
    /// column `c` holds rows `rowval[colptr[c]..colptr[c + 1]]` with values
    /// `nzval[colptr[c]..colptr[c + 1]]`; the others are zero.
    Csc {
        /// Number of rows.
        nrows: u64,
        /// Number of columns.
        ncols: u64,
        /// `ncols + 1` offsets into `rowval`/`nzval`, from 0 to `nnz`.
        colptr: Vec<u64>,
        /// 0-based row of each stored value, increasing within a column.
        rowval: Vec<u64>,
        /// The stored values.
        nzval: DafArray,
    },
}

impl DafMatrix {
    /// The element type.
    pub fn dtype(&self) -> DafType {
        match self {
            DafMatrix::Dense { values: a, .. } | DafMatrix::Csc { nzval: a, .. } => a.dtype(),
        }
    }

    /// The dense values, column-major (a sparse matrix filled with zeros).
    ///
    /// # Errors
    /// `Usage` for an inconsistent CSC structure or a matrix that does not
    /// fit in memory; `Limit` (in [`Error::Hdf5`]) when it is larger than
    /// h5fmt's default read limit.
    pub fn to_dense(&self) -> Result<DafArray> {
        match self {
            DafMatrix::Dense { values, .. } => Ok(values.clone()),
            csc => csc.csc_to_dense(),
        }
    }

    /// As [`DafMatrix::to_dense`], without copying dense values.
    ///
    /// # Errors
    /// As [`DafMatrix::to_dense`].
    pub fn into_dense(self) -> Result<DafArray> {
        match self {
            DafMatrix::Dense { values, .. } => Ok(values),
            csc => csc.csc_to_dense(),
        }
    }

    fn csc_to_dense(&self) -> Result<DafArray> {
        match self {
            DafMatrix::Dense { values, .. } => Ok(values.clone()),
            DafMatrix::Csc {
                nrows,
                ncols,
                colptr,
                rowval,
                nzval,
            } => {
                check_csc(*nrows, *ncols, colptr, rowval, nzval.len(), 0).map_err(Error::Usage)?;
                let n = nrows
                    .checked_mul(*ncols)
                    .and_then(|n| usize::try_from(n).ok())
                    .ok_or_else(|| Error::usage("matrix too large"))?;
                let mut at = Vec::with_capacity(rowval.len());
                for (c, w) in colptr.windows(2).enumerate() {
                    for k in w[0]..w[1] {
                        let r = rowval.get(k as usize).copied().unwrap_or(0);
                        at.push((r + c as u64 * nrows) as usize);
                    }
                }
                let mut out = DafArray::zeros(nzval.dtype(), n)?;
                out.scatter(&at, nzval);
                Ok(out)
            }
        }
    }
}

/// 0-based positions, checked increasing and below `n`.
fn positions(nzind: &[u64], n: usize) -> Result<Vec<usize>> {
    check_nzind(nzind, n as u64, 0).map_err(Error::Usage)?;
    Ok(nzind.iter().map(|&i| i as usize).collect())
}

/// Check sparse-vector positions with base `base` (0 or 1): increasing,
/// in `base..base + len`.
fn check_nzind(nzind: &[u64], len: u64, base: u64) -> core::result::Result<(), String> {
    check_positions(nzind, 0, len, base, "nzind", "the axis")
}

/// Check that `values` (entries `first..` of array `name`) increase and lie
/// in `base..base + n`, `n` the length of `of`.
fn check_positions(
    values: &[u64],
    first: u64,
    n: u64,
    base: u64,
    name: &str,
    of: &str,
) -> core::result::Result<(), String> {
    let mut prev: Option<u64> = None;
    for (k, &i) in (first..).zip(values) {
        if i < base || i - base >= n {
            return Err(format!(
                "{name}[{k}] = {i} is outside {base}..={} ({of} has {n} entries)",
                (base + n).saturating_sub(1)
            ));
        }
        if prev.is_some_and(|p| p >= i) {
            return Err(format!("{name} is not increasing at position {k} ({i})"));
        }
        prev = Some(i);
    }
    Ok(())
}

/// Check a CSC structure with index base `base` (0 or 1).
fn check_csc(
    nrows: u64,
    ncols: u64,
    colptr: &[u64],
    rowval: &[u64],
    nnz: usize,
    base: u64,
) -> core::result::Result<(), String> {
    if colptr.len() as u64 != ncols.saturating_add(1) {
        return Err(format!(
            "colptr has {} entries, not ncols + 1 = {}",
            colptr.len(),
            ncols.saturating_add(1)
        ));
    }
    if rowval.len() != nnz {
        return Err(format!(
            "rowval has {} entries but there are {nnz} values",
            rowval.len()
        ));
    }
    if colptr.first() != Some(&base) {
        return Err(format!(
            "colptr[0] is {}, not {base}",
            colptr.first().copied().unwrap_or(0)
        ));
    }
    let end = nnz as u64 + base;
    if colptr.last() != Some(&end) {
        return Err(format!(
            "colptr ends at {}, not nnz + {base} = {end}",
            colptr.last().copied().unwrap_or(0)
        ));
    }
    for (c, w) in colptr.windows(2).enumerate() {
        let [a, b] = [w[0], w[1]];
        if b < a {
            return Err(format!("colptr is not monotone at column {c} ({a} > {b})"));
        }
        if b > end {
            return Err(format!("colptr[{}] = {b} is beyond nnz + {base}", c + 1));
        }
        let (lo, hi) = (a - base, b - base);
        let rows = usize::try_from(lo)
            .ok()
            .zip(usize::try_from(hi).ok())
            .and_then(|(lo, hi)| rowval.get(lo..hi))
            .ok_or_else(|| format!("colptr[{c}..={}] is beyond rowval", c + 1))?;
        check_positions(rows, lo, nrows, base, "rowval", "the rows axis")
            .map_err(|m| format!("{m} in column {c}"))?;
    }
    Ok(())
}

/// A plain number type a property can be lent as ([`DafReader::vector_slice`]).
pub trait DafNumber: h5fmt::data::convert::H5Native + private::Sealed {
    /// Its Daf element type.
    const TYPE: DafType;
}

mod private {
    pub trait Sealed {}
}

macro_rules! daf_number {
    ($($t:ty => $v:ident),*) => {$(
        impl private::Sealed for $t {}
        impl DafNumber for $t {
            const TYPE: DafType = DafType::$v;
        }
    )*};
}
daf_number!(i8 => I8, i16 => I16, i32 => I32, i64 => I64, u8 => U8, u16 => U16, u32 => U32,
    u64 => U64, f32 => F32, f64 => F64);

/// The Daf element type of an HDF5 datatype, `None` when it has none.
fn daf_type(dtype: &Datatype) -> Option<DafType> {
    match dtype {
        Datatype::Integer { size, signed, .. } => Some(match (size, signed) {
            (1, true) => DafType::I8,
            (2, true) => DafType::I16,
            (4, true) => DafType::I32,
            (8, true) => DafType::I64,
            (1, false) => DafType::U8,
            (2, false) => DafType::U16,
            (4, false) => DafType::U32,
            (8, false) => DafType::U64,
            _ => return None,
        }),
        Datatype::Float { size: 4, .. } if dtype.is_ieee_standard() => Some(DafType::F32),
        Datatype::Float { size: 8, .. } if dtype.is_ieee_standard() => Some(DafType::F64),
        Datatype::Bitfield { size: 1, .. } => Some(DafType::Bool),
        Datatype::Enum { base, members }
            if base.size() == 1
                && members.len() == 2
                && members.iter().all(|m| {
                    (m.name == "FALSE" && m.value == [0]) || (m.name == "TRUE" && m.value == [1])
                }) =>
        {
            Some(DafType::Bool)
        }
        Datatype::String { .. } | Datatype::VarLenString { .. } => Some(DafType::Str),
        _ => None,
    }
}

/// The HDF5.jl datatype of a Daf element type (strings: variable-length).
fn hdf5_type(t: DafType) -> Datatype {
    match t {
        DafType::Bool => Datatype::Bitfield {
            size: 1,
            order: ByteOrder::Little,
            bit_offset: 0,
            precision: 8,
        },
        DafType::I8 => Datatype::int_le(1, true),
        DafType::I16 => Datatype::int_le(2, true),
        DafType::I32 => Datatype::int_le(4, true),
        DafType::I64 => Datatype::int_le(8, true),
        DafType::U8 => Datatype::int_le(1, false),
        DafType::U16 => Datatype::int_le(2, false),
        DafType::U32 => Datatype::int_le(4, false),
        DafType::U64 => Datatype::int_le(8, false),
        DafType::F32 => Datatype::float_le(4),
        DafType::F64 => Datatype::float_le(8),
        DafType::Str => Datatype::vlen_utf8(),
    }
}

fn invalid(path: &str, message: impl Into<String>) -> Error {
    Error::invalid(path, SECTION, message)
}

/// Read a dataset's values as their Daf type.
fn read_array(ds: &Dataset) -> Result<DafArray> {
    let path = ds.path();
    let t = daf_type(ds.dtype()).ok_or_else(|| {
        invalid(
            path,
            format!("element type {:?} is not a Daf storage type", ds.dtype()),
        )
    })?;
    Ok(match t {
        DafType::Bool => DafArray::Bool(ds.read_raw()?.iter().map(|&b| b != 0).collect()),
        DafType::I8 => DafArray::I8(ds.read()?),
        DafType::I16 => DafArray::I16(ds.read()?),
        DafType::I32 => DafArray::I32(ds.read()?),
        DafType::I64 => DafArray::I64(ds.read()?),
        DafType::U8 => DafArray::U8(ds.read()?),
        DafType::U16 => DafArray::U16(ds.read()?),
        DafType::U32 => DafArray::U32(ds.read()?),
        DafType::U64 => DafArray::U64(ds.read()?),
        DafType::F32 => DafArray::F32(ds.read()?),
        DafType::F64 => DafArray::F64(ds.read()?),
        DafType::Str => DafArray::Str(read_strings(ds)?),
    })
}

fn read_strings(ds: &Dataset) -> Result<Vec<String>> {
    ds.read_values()?
        .into_iter()
        .map(|v| match v {
            Value::Str(s) => Ok(s),
            _ => Err(invalid(ds.path(), "a string that is not valid UTF-8")),
        })
        .collect()
}

/// Read an index dataset (`nzind`, `colptr`, `rowval`) of any integer type.
fn read_indices(ds: &Dataset) -> Result<Vec<u64>> {
    match ds.dtype() {
        Datatype::Integer { .. } => {}
        other => {
            return Err(invalid(
                ds.path(),
                format!("indices must be integers, not {other:?}"),
            ))
        }
    }
    ds.read::<u64>()
        .map_err(|e| invalid(ds.path(), format!("indices must be non-negative: {e}")))
}

fn expect_dataset(obj: Object, path: &str) -> Result<Dataset> {
    match obj {
        Object::Dataset(d) => Ok(*d),
        _ => Err(invalid(path, "expected a dataset")),
    }
}

fn expect_group(obj: Object, path: &str) -> Result<Group> {
    match obj {
        Object::Group(g) => Ok(g),
        _ => Err(invalid(path, "expected a group")),
    }
}

/// Whether `group` has a member `name`.
fn has_member(group: &Group, name: &str) -> Result<bool> {
    Ok(group.member_names()?.iter().any(|n| n == name))
}

fn member_dataset(group: &Group, name: &str) -> Result<Dataset> {
    let path = join(group.path(), name);
    if !has_member(group, name)? {
        return Err(invalid(&path, "missing"));
    }
    expect_dataset(group.member(name)?, &path)
}

fn member_group(group: &Group, name: &str) -> Result<Group> {
    let path = join(group.path(), name);
    if !has_member(group, name)? {
        return Err(invalid(&path, "missing"));
    }
    expect_group(group.member(name)?, &path)
}

fn join(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Check the length of a rank-1 dataset.
fn rank1_len(ds: &Dataset) -> Result<u64> {
    match ds.shape() {
        [n] => Ok(*n),
        s => Err(invalid(
            ds.path(),
            format!("expected a vector (rank 1), found shape {s:?}"),
        )),
    }
}

/// A Daf data set in a group of an HDF5 file, read lazily: each call reads
/// only the objects it names.
///
/// ```
/// # fn main() -> h5table::Result<()> {
/// use h5table::daf::{DafArray, DafReader, DafScalar, DafVector, DafWriter};
/// let mut fw = h5fmt::FileWriter::in_memory();
/// {
///     let mut daf = DafWriter::create(&mut fw, "/")?;
///     daf.set_scalar("organism", &DafScalar::Str("human".into()))?;
///     daf.add_axis("cell", &["c1", "c2", "c3"])?;
///     daf.set_vector("cell", "age", &DafVector::Dense(DafArray::F32(vec![1.0, 2.5, 4.0])))?;
/// }
/// let file = h5fmt::File::from_bytes(fw.finish()?)?;
/// let daf = DafReader::open(&file, "/")?;
/// assert_eq!(daf.axis("cell")?, ["c1", "c2", "c3"]);
/// assert_eq!(daf.scalar("organism")?, DafScalar::Str("human".into()));
/// // Borrowed from the file's bytes when aligned, else copied.
/// assert_eq!(&*daf.vector_slice::<f32>("cell", "age")?, [1.0, 2.5, 4.0]);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DafReader {
    file: File,
    root: Group,
    version: (u64, u64),
}

impl DafReader {
    /// Open the Daf data set in the group at `path` (`"/"` for the root)
    /// and check its `daf` version.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the group has no `daf` dataset, when `daf`
    /// is not two non-negative integers, for a major version other than
    /// [`MAJOR_VERSION`] or a minor above [`MINOR_VERSION`], or when one of
    /// `scalars`, `axes`, `vectors`, `matrices` is missing; HDF5 errors.
    pub fn open(file: &File, path: &str) -> Result<DafReader> {
        let root = file.group(path)?;
        let vpath = join(root.path(), "daf");
        if !has_member(&root, "daf")? {
            return Err(invalid(
                root.path(),
                "not a Daf data set: no `daf` version dataset",
            ));
        }
        let ds = expect_dataset(root.member("daf")?, &vpath)?;
        if !matches!(ds.dtype(), Datatype::Integer { .. }) {
            return Err(invalid(
                &vpath,
                format!(
                    "the version must be two unsigned integers, not of type {:?}",
                    ds.dtype()
                ),
            ));
        }
        if ds.shape() != [2] {
            return Err(invalid(
                &vpath,
                format!(
                    "the version must be two integers [major, minor], found shape {:?}",
                    ds.shape()
                ),
            ));
        }
        let v: Vec<u64> = ds
            .read::<u64>()
            .map_err(|e| invalid(&vpath, format!("the version must be non-negative: {e}")))?;
        let version = match v.as_slice() {
            [a, b] => (*a, *b),
            _ => return Err(invalid(&vpath, "the version must be two integers")),
        };
        if version.0 != u64::from(MAJOR_VERSION) || version.1 > u64::from(MINOR_VERSION) {
            return Err(invalid(
                &vpath,
                format!(
                    "incompatible Daf format version {}.{}: this code reads version {MAJOR_VERSION}.{MINOR_VERSION}",
                    version.0, version.1
                ),
            ));
        }
        for g in ["scalars", "axes", "vectors", "matrices"] {
            member_group(&root, g)?;
        }
        Ok(DafReader {
            file: file.clone(),
            root,
            version,
        })
    }

    /// The `daf` version `(major, minor)`.
    pub fn version(&self) -> (u64, u64) {
        self.version
    }

    fn sub(&self, names: &[&str]) -> Result<Group> {
        let mut g = member_group(&self.root, names[0])?;
        for n in &names[1..] {
            g = member_group(&g, n)?;
        }
        Ok(g)
    }

    /// The property `name` in the group `groups` (path under the data set):
    /// its path and object.
    fn property(&self, groups: &[&str], name: &str) -> Result<(String, Object)> {
        let group = self.sub(groups)?;
        let path = join(group.path(), name);
        if !has_member(&group, name)? {
            return Err(invalid(&path, "missing"));
        }
        let obj = group.member(name)?;
        Ok((path, obj))
    }

    /// The names of the scalar properties, sorted.
    ///
    /// # Errors
    /// HDF5 errors.
    pub fn scalar_names(&self) -> Result<Vec<String>> {
        sorted(self.sub(&["scalars"])?.member_names()?)
    }

    /// A scalar property.
    ///
    /// # Errors
    /// [`Error::Invalid`] when missing, not a scalar dataset or of a type
    /// that is not a Daf storage type; HDF5 errors.
    pub fn scalar(&self, name: &str) -> Result<DafScalar> {
        let ds = member_dataset(&self.sub(&["scalars"])?, name)?;
        if !ds.shape().is_empty() && ds.shape() != [1] {
            return Err(invalid(
                ds.path(),
                format!("a scalar must have one value, found shape {:?}", ds.shape()),
            ));
        }
        let a = read_array(&ds)?;
        let one = || invalid(ds.path(), "a scalar must have one value");
        Ok(match a {
            DafArray::Bool(v) => DafScalar::Bool(*v.first().ok_or_else(one)?),
            DafArray::I8(v) => DafScalar::I8(*v.first().ok_or_else(one)?),
            DafArray::I16(v) => DafScalar::I16(*v.first().ok_or_else(one)?),
            DafArray::I32(v) => DafScalar::I32(*v.first().ok_or_else(one)?),
            DafArray::I64(v) => DafScalar::I64(*v.first().ok_or_else(one)?),
            DafArray::U8(v) => DafScalar::U8(*v.first().ok_or_else(one)?),
            DafArray::U16(v) => DafScalar::U16(*v.first().ok_or_else(one)?),
            DafArray::U32(v) => DafScalar::U32(*v.first().ok_or_else(one)?),
            DafArray::U64(v) => DafScalar::U64(*v.first().ok_or_else(one)?),
            DafArray::F32(v) => DafScalar::F32(*v.first().ok_or_else(one)?),
            DafArray::F64(v) => DafScalar::F64(*v.first().ok_or_else(one)?),
            DafArray::Str(v) => DafScalar::Str(v.into_iter().next().ok_or_else(one)?),
        })
    }

    /// The names of the axes, sorted.
    ///
    /// # Errors
    /// HDF5 errors.
    pub fn axis_names(&self) -> Result<Vec<String>> {
        sorted(self.sub(&["axes"])?.member_names()?)
    }

    fn axis_dataset(&self, axis: &str) -> Result<Dataset> {
        let ds = member_dataset(&self.sub(&["axes"])?, axis)?;
        rank1_len(&ds)?;
        if daf_type(ds.dtype()) != Some(DafType::Str) {
            return Err(invalid(ds.path(), "axis entries must be strings"));
        }
        Ok(ds)
    }

    /// The number of entries of an axis.
    ///
    /// # Errors
    /// [`Error::Invalid`] when missing or not a vector of strings.
    pub fn axis_len(&self, axis: &str) -> Result<u64> {
        rank1_len(&self.axis_dataset(axis)?)
    }

    /// The entry names of an axis.
    ///
    /// # Errors
    /// As [`DafReader::axis_len`]; names that are not valid UTF-8.
    pub fn axis(&self, axis: &str) -> Result<Vec<String>> {
        read_strings(&self.axis_dataset(axis)?)
    }

    /// The names of the vector properties of `axis`, sorted.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the axis has no `vectors` group; HDF5 errors.
    pub fn vector_names(&self, axis: &str) -> Result<Vec<String>> {
        sorted(self.sub(&["vectors", axis])?.member_names()?)
    }

    /// A vector property, dense or sparse as stored.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the object for a missing axis or property,
    /// a dense length that is not the axis', `nzind` out of range or not
    /// increasing, `nzval`/`nztxt` of another length than `nzind`, element
    /// types that are not Daf storage types; HDF5 errors.
    pub fn vector(&self, axis: &str, name: &str) -> Result<DafVector> {
        let len = self.axis_len(axis)?;
        let (path, obj) = self.property(&["vectors", axis], name)?;
        match obj {
            Object::Dataset(ds) => {
                check_dense_vector(&ds, len, axis)?;
                Ok(DafVector::Dense(read_array(&ds)?))
            }
            Object::Group(g) => {
                let nzind_ds = member_dataset(&g, "nzind")?;
                rank1_len(&nzind_ds)?;
                let raw = read_indices(&nzind_ds)?;
                check_nzind(&raw, len, 1).map_err(|m| invalid(nzind_ds.path(), m))?;
                let nzind: Vec<u64> = raw.iter().map(|i| i - 1).collect();
                let values = if has_member(&g, "nztxt")? {
                    Some((member_dataset(&g, "nztxt")?, true))
                } else if has_member(&g, "nzval")? {
                    Some((member_dataset(&g, "nzval")?, false))
                } else {
                    None
                };
                let nzval = match values {
                    None => DafArray::Bool(alloc::vec![true; nzind.len()]),
                    Some((ds, text)) => {
                        let n = rank1_len(&ds)?;
                        let a = read_array(&ds)?;
                        if text && a.dtype() != DafType::Str {
                            return Err(invalid(ds.path(), "nztxt must hold strings"));
                        }
                        if n != nzind.len() as u64 || a.len() != nzind.len() {
                            return Err(invalid(
                                ds.path(),
                                format!("{n} values for the {} positions of nzind", nzind.len()),
                            ));
                        }
                        a
                    }
                };
                Ok(DafVector::Sparse { len, nzind, nzval })
            }
            Object::Datatype(_) => Err(invalid(&path, "expected a dataset or a group")),
        }
    }

    /// A vector property as dense values (a sparse one filled with zeros).
    ///
    /// # Errors
    /// As [`DafReader::vector`].
    pub fn vector_dense(&self, axis: &str, name: &str) -> Result<DafArray> {
        self.vector(axis, name)?.into_dense()
    }

    /// A dense numeric vector property as `&[T]` borrowed from the file's
    /// bytes when the file is in memory or memory-mapped, the dataset is
    /// contiguous, its start is aligned for `T` and its byte order is the
    /// machine's; else a copy.
    ///
    /// # Errors
    /// [`Error::Usage`] when the property is sparse or its element type is
    /// not `T`; as [`DafReader::vector`].
    pub fn vector_slice<T: DafNumber>(&self, axis: &str, name: &str) -> Result<Cow<'_, [T]>> {
        let len = self.axis_len(axis)?;
        let (path, obj) = self.property(&["vectors", axis], name)?;
        let Object::Dataset(ds) = obj else {
            return Err(Error::usage(format!(
                "{path}: a sparse vector is not lent as a slice"
            )));
        };
        check_dense_vector(&ds, len, axis)?;
        self.slice_of(&ds)
    }

    /// The names of the matrix properties of `rows_axis` × `columns_axis`,
    /// sorted.
    ///
    /// # Errors
    /// [`Error::Invalid`] when the pair has no group; HDF5 errors.
    pub fn matrix_names(&self, rows_axis: &str, columns_axis: &str) -> Result<Vec<String>> {
        sorted(
            self.sub(&["matrices", rows_axis, columns_axis])?
                .member_names()?,
        )
    }

    /// A matrix property, dense or CSC as stored.
    ///
    /// # Errors
    /// [`Error::Invalid`] naming the object for a dense shape other than
    /// `[ncols, nrows]`, a `colptr` of the wrong length, not starting at 1,
    /// not monotone or not ending at `nnz + 1`, a `rowval` out of range or
    /// not increasing within a column, values of another count; as
    /// [`DafReader::vector`].
    pub fn matrix(&self, rows_axis: &str, columns_axis: &str, name: &str) -> Result<DafMatrix> {
        let nrows = self.axis_len(rows_axis)?;
        let ncols = self.axis_len(columns_axis)?;
        let (path, obj) = self.property(&["matrices", rows_axis, columns_axis], name)?;
        match obj {
            Object::Dataset(ds) => {
                check_dense_matrix(&ds, nrows, ncols)?;
                Ok(DafMatrix::Dense {
                    nrows,
                    ncols,
                    values: read_array(&ds)?,
                })
            }
            Object::Group(g) => {
                let colptr_ds = member_dataset(&g, "colptr")?;
                let rowval_ds = member_dataset(&g, "rowval")?;
                rank1_len(&colptr_ds)?;
                rank1_len(&rowval_ds)?;
                let colptr = read_indices(&colptr_ds)?;
                let rowval = read_indices(&rowval_ds)?;
                let values = if has_member(&g, "nztxt")? {
                    Some(member_dataset(&g, "nztxt")?)
                } else if has_member(&g, "nzval")? {
                    Some(member_dataset(&g, "nzval")?)
                } else {
                    None
                };
                let nzval = match &values {
                    None => DafArray::Bool(alloc::vec![true; rowval.len()]),
                    Some(ds) => {
                        rank1_len(ds)?;
                        read_array(ds)?
                    }
                };
                if nzval.len() != rowval.len() {
                    let at = values.as_ref().map_or(g.path(), |d| d.path());
                    return Err(invalid(
                        at,
                        format!(
                            "{} values for the {} entries of rowval",
                            nzval.len(),
                            rowval.len()
                        ),
                    ));
                }
                check_csc(nrows, ncols, &colptr, &rowval, nzval.len(), 1).map_err(|m| {
                    let at = if m.starts_with("rowval") {
                        rowval_ds.path()
                    } else {
                        colptr_ds.path()
                    };
                    invalid(at, m)
                })?;
                Ok(DafMatrix::Csc {
                    nrows,
                    ncols,
                    colptr: colptr.iter().map(|i| i - 1).collect(),
                    rowval: rowval.iter().map(|i| i - 1).collect(),
                    nzval,
                })
            }
            Object::Datatype(_) => Err(invalid(&path, "expected a dataset or a group")),
        }
    }

    /// A dense numeric matrix property's values, column-major, borrowed as
    /// [`DafReader::vector_slice`] lends them.
    ///
    /// # Errors
    /// [`Error::Usage`] when the property is sparse or not of type `T`; as
    /// [`DafReader::matrix`].
    pub fn matrix_slice<T: DafNumber>(
        &self,
        rows_axis: &str,
        columns_axis: &str,
        name: &str,
    ) -> Result<Cow<'_, [T]>> {
        let nrows = self.axis_len(rows_axis)?;
        let ncols = self.axis_len(columns_axis)?;
        let (path, obj) = self.property(&["matrices", rows_axis, columns_axis], name)?;
        let Object::Dataset(ds) = obj else {
            return Err(Error::usage(format!(
                "{path}: a sparse matrix is not lent as a slice"
            )));
        };
        check_dense_matrix(&ds, nrows, ncols)?;
        self.slice_of(&ds)
    }

    /// The values of `ds` as `&[T]` from the mapped bytes, else copied.
    fn slice_of<T: DafNumber>(&self, ds: &Dataset) -> Result<Cow<'_, [T]>> {
        let found = daf_type(ds.dtype());
        if found != Some(T::TYPE) {
            return Err(Error::usage(format!(
                "{}: the values are {found:?}, not {:?}",
                ds.path(),
                T::TYPE
            )));
        }
        if let Some(s) = self.mapped::<T>(ds) {
            return Ok(Cow::Borrowed(s));
        }
        Ok(Cow::Owned(ds.read::<T>()?))
    }

    /// The contiguous storage of `ds` in the file's in-memory bytes, when
    /// it can be viewed as `[T]` as it is.
    fn mapped<T: DafNumber>(&self, ds: &Dataset) -> Option<&[T]> {
        let native_order = match ds.dtype() {
            Datatype::Integer {
                order,
                bit_offset: 0,
                precision,
                size,
                ..
            } => u32::from(*precision) == size * 8 && *order == ByteOrder::Little,
            Datatype::Float { order, .. } => *order == ByteOrder::Little,
            _ => false,
        };
        if !native_order || !cfg!(target_endian = "little") {
            return None;
        }
        let Layout::Contiguous { addr, size } = ds.layout() else {
            return None;
        };
        let n = usize::try_from(ds.len()).ok()?;
        let bytes_len = n.checked_mul(core::mem::size_of::<T>())?;
        if *size != bytes_len as u64 || addr.is_undef() || !ds.filters().filters.is_empty() {
            return None;
        }
        let st = self.file.storage();
        if st.overlay().is_some() {
            return None;
        }
        let start = usize::try_from(st.absolute(*addr, *size).ok()?).ok()?;
        let bytes = st
            .source()
            .as_slice()?
            .get(start..start.checked_add(bytes_len)?)?;
        if bytes.as_ptr().align_offset(core::mem::align_of::<T>()) != 0 {
            return None;
        }
        // SAFETY: `T` is a primitive integer or float (sealed `DafNumber`), for
        // which every bit pattern is a value; `bytes` is aligned for `T` (checked
        // above), holds exactly `n * size_of::<T>()` bytes, in the machine's byte
        // order (checked above), and lives as long as `&self`, which holds the
        // `File` (and so the `Arc` of the source) the slice borrows from.
        Some(unsafe { core::slice::from_raw_parts(bytes.as_ptr().cast::<T>(), n) })
    }
}

fn check_dense_vector(ds: &Dataset, len: u64, axis: &str) -> Result<()> {
    let n = rank1_len(ds)?;
    if n != len {
        return Err(invalid(
            ds.path(),
            format!("{n} values for the {len} entries of axis {axis:?}"),
        ));
    }
    Ok(())
}

fn check_dense_matrix(ds: &Dataset, nrows: u64, ncols: u64) -> Result<()> {
    if ds.shape() != [ncols, nrows] {
        return Err(invalid(
            ds.path(),
            format!(
                "a dense {nrows} x {ncols} matrix is stored with the HDF5 shape [{ncols}, {nrows}] \
                 (column-major), found {:?}",
                ds.shape()
            ),
        ));
    }
    Ok(())
}

fn sorted(mut v: Vec<String>) -> Result<Vec<String>> {
    v.sort_unstable();
    Ok(v)
}

/// The smallest unsigned type holding `max` (Julia's `indtype_for_size`).
fn index_type(max: u64) -> DafType {
    if max <= u64::from(u8::MAX) {
        DafType::U8
    } else if max <= u64::from(u16::MAX) {
        DafType::U16
    } else if max <= u64::from(u32::MAX) {
        DafType::U32
    } else {
        DafType::U64
    }
}

/// 1-based indices (`values + 1`) as `t`.
fn one_based(values: &[u64], t: DafType) -> DafArray {
    let it = values.iter().map(|&v| v + 1);
    #[allow(clippy::cast_possible_truncation)] // `t` holds the largest value
    match t {
        DafType::U8 => DafArray::U8(it.map(|v| v as u8).collect()),
        DafType::U16 => DafArray::U16(it.map(|v| v as u16).collect()),
        DafType::U32 => DafArray::U32(it.map(|v| v as u32).collect()),
        _ => DafArray::U64(it.collect()),
    }
}

/// Writes a Daf data set into a new file through [`FileWriter`].
///
/// [`DafWriter::create`] writes the `daf` version and the four groups and
/// sets the file's alignment to `(1, 8)`; axes come before the properties
/// that use them.
///
/// ```
/// # fn main() -> h5table::Result<()> {
/// use h5table::daf::{DafArray, DafMatrix, DafReader, DafVector, DafWriter};
/// let mut fw = h5fmt::FileWriter::in_memory();
/// {
///     let mut daf = DafWriter::create(&mut fw, "/sample")?;
///     daf.add_axis("cell", &["c1", "c2", "c3"])?;
///     daf.add_axis("gene", &["g1", "g2"])?;
///     // A sparse boolean vector that is all true: stored as `nzind` alone.
///     daf.set_vector("cell", "is_doublet", &DafVector::Sparse {
///         len: 3,
///         nzind: vec![1],
///         nzval: DafArray::Bool(vec![true]),
///     })?;
///     // A 3 x 2 CSC matrix with two non-zeros: (0, 0) = 5 and (2, 1) = 7.
///     daf.set_matrix("cell", "gene", "UMIs", &DafMatrix::Csc {
///         nrows: 3,
///         ncols: 2,
///         colptr: vec![0, 1, 2],
///         rowval: vec![0, 2],
///         nzval: DafArray::U16(vec![5, 7]),
///     })?;
/// }
/// let file = h5fmt::File::from_bytes(fw.finish()?)?;
/// let daf = DafReader::open(&file, "/sample")?;
/// assert_eq!(
///     daf.vector_dense("cell", "is_doublet")?,
///     DafArray::Bool(vec![false, true, false])
/// );
/// assert_eq!(
///     daf.matrix("cell", "gene", "UMIs")?.to_dense()?,
///     DafArray::U16(vec![5, 0, 0, 0, 0, 7])
/// );
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DafWriter<'w> {
    fw: &'w mut FileWriter,
    scalars: ObjectId,
    axes: ObjectId,
    vectors: ObjectId,
    matrices: ObjectId,
    /// Axis name → (length, `vectors/<axis>`, `matrices/<axis>`).
    axis: BTreeMap<String, (u64, ObjectId, ObjectId)>,
    /// (rows, columns) → `matrices/<rows>/<columns>`.
    pairs: BTreeMap<(String, String), ObjectId>,
}

impl<'w> DafWriter<'w> {
    /// Start a Daf data set in a new group at `path` (intermediate groups
    /// are created; `"/"` is the root group, which must then hold nothing
    /// else).
    ///
    /// # Errors
    /// HDF5 `Usage` errors for a name that exists already.
    pub fn create(fw: &'w mut FileWriter, path: &str) -> Result<Self> {
        let mut id = fw.root().id();
        for part in path.split('/').filter(|p| !p.is_empty()) {
            id = fw.group(id)?.create_group(part)?.id();
        }
        Self::in_group(fw, id)
    }

    /// Start a Daf data set in the (empty) group `group` of `fw`.
    ///
    /// # Errors
    /// HDF5 `Usage` errors when `group` is not a group of `fw` or already
    /// has members of the names Daf uses.
    pub fn in_group(fw: &'w mut FileWriter, group: ObjectId) -> Result<Self> {
        fw.set_alignment(1, 8)?;
        let mut g = fw.group(group)?;
        g.create_dataset("daf")
            .write(&[MAJOR_VERSION, MINOR_VERSION])?;
        let scalars = g.create_group("scalars")?.id();
        let axes = g.create_group("axes")?.id();
        let vectors = g.create_group("vectors")?.id();
        let matrices = g.create_group("matrices")?.id();
        Ok(DafWriter {
            fw,
            scalars,
            axes,
            vectors,
            matrices,
            axis: BTreeMap::new(),
            pairs: BTreeMap::new(),
        })
    }

    /// Write a scalar property.
    ///
    /// # Errors
    /// HDF5 `Usage` errors (an existing name).
    pub fn set_scalar(&mut self, name: &str, value: &DafScalar) -> Result<()> {
        let mut g = self.fw.group(self.scalars)?;
        let b = g.create_dataset(name).shape(&[]);
        match value {
            DafScalar::Bool(v) => b.dtype(hdf5_type(DafType::Bool)).write_raw(&[u8::from(*v)]),
            DafScalar::I8(v) => b.write(&[*v]),
            DafScalar::I16(v) => b.write(&[*v]),
            DafScalar::I32(v) => b.write(&[*v]),
            DafScalar::I64(v) => b.write(&[*v]),
            DafScalar::U8(v) => b.write(&[*v]),
            DafScalar::U16(v) => b.write(&[*v]),
            DafScalar::U32(v) => b.write(&[*v]),
            DafScalar::U64(v) => b.write(&[*v]),
            DafScalar::F32(v) => b.write(&[*v]),
            DafScalar::F64(v) => b.write(&[*v]),
            DafScalar::Str(s) => {
                // HDF5.jl's `String`: fixed length, null-terminated, UTF-8.
                let mut bytes = s.as_bytes().to_vec();
                if bytes.is_empty() {
                    bytes.push(0);
                }
                let size = u32::try_from(bytes.len())
                    .map_err(|_| Error::usage(format!("scalar {name:?} is too long")))?;
                b.dtype(Datatype::String {
                    size,
                    pad: StringPad::NullTerm,
                    cset: CharSet::Utf8,
                })
                .write_raw(&bytes)
            }
        }?;
        Ok(())
    }

    /// Add an axis with its entry names, and its `vectors` and `matrices`
    /// groups (one per pair with every axis, itself included, as Julia
    /// creates them).
    ///
    /// # Errors
    /// [`Error::Usage`] for repeated entry names; HDF5 `Usage` errors for an
    /// existing axis.
    pub fn add_axis(&mut self, name: &str, entries: &[&str]) -> Result<()> {
        let mut seen = alloc::collections::BTreeSet::new();
        if let Some(dup) = entries.iter().find(|e| !seen.insert(**e)) {
            return Err(Error::usage(format!(
                "axis {name:?}: entry {dup:?} appears twice"
            )));
        }
        if self.axis.contains_key(name) {
            return Err(Error::usage(format!("axis {name:?} exists already")));
        }
        self.fw
            .group(self.axes)?
            .create_dataset(name)
            .write_strings(entries)?;
        let vectors = self.fw.group(self.vectors)?.create_group(name)?.id();
        let rows = self.fw.group(self.matrices)?.create_group(name)?.id();
        self.axis
            .insert(name.to_string(), (entries.len() as u64, vectors, rows));
        let others: Vec<(String, ObjectId)> =
            self.axis.iter().map(|(k, v)| (k.clone(), v.2)).collect();
        for (other, other_rows) in others {
            let id = self.fw.group(rows)?.create_group(&other)?.id();
            self.pairs.insert((name.to_string(), other.clone()), id);
            if other != name {
                let id = self.fw.group(other_rows)?.create_group(name)?.id();
                self.pairs.insert((other, name.to_string()), id);
            }
        }
        Ok(())
    }

    fn axis_len(&self, axis: &str) -> Result<(u64, ObjectId)> {
        self.axis
            .get(axis)
            .map(|a| (a.0, a.1))
            .ok_or_else(|| Error::usage(format!("no axis {axis:?} (add it first)")))
    }

    /// Write a vector property of `axis`: dense as a dataset, sparse as a
    /// group of `nzind` (1-based) and `nzval`, `nztxt` for strings, and no
    /// values for booleans that are all true.
    ///
    /// # Errors
    /// [`Error::Usage`] for an unknown axis, a length other than the axis',
    /// positions out of range or not increasing, values of another count;
    /// HDF5 `Usage` errors for an existing name.
    pub fn set_vector(&mut self, axis: &str, name: &str, vector: &DafVector) -> Result<()> {
        let (len, group) = self.axis_len(axis)?;
        check_vector(vector, len, &format!("vector {axis}/{name}"))?;
        match vector {
            DafVector::Dense(a) => put_array(self.fw, group, name, &[len], a),
            DafVector::Sparse { nzind, nzval, .. } => {
                let g = self.fw.group(group)?.create_group(name)?.id();
                let ind = one_based(nzind, index_type(len));
                put_array(self.fw, g, "nzind", &[nzind.len() as u64], &ind)?;
                put_values(self.fw, g, nzval)
            }
        }
    }

    /// Write a matrix property of `rows_axis` × `columns_axis`: dense in
    /// column-major order (HDF5 shape `[ncols, nrows]`), CSC as a group of
    /// `colptr` and `rowval` (1-based) and `nzval` (`nztxt` for strings, no
    /// values for booleans that are all true).
    ///
    /// # Errors
    /// [`Error::Usage`] for unknown axes, sizes other than the axes', an
    /// inconsistent CSC structure; HDF5 `Usage` errors for an existing
    /// name.
    pub fn set_matrix(
        &mut self,
        rows_axis: &str,
        columns_axis: &str,
        name: &str,
        matrix: &DafMatrix,
    ) -> Result<()> {
        let (nrows, _) = self.axis_len(rows_axis)?;
        let (ncols, _) = self.axis_len(columns_axis)?;
        let group = *self
            .pairs
            .get(&(rows_axis.to_string(), columns_axis.to_string()))
            .ok_or_else(|| Error::usage("no such axes pair"))?;
        check_matrix(
            matrix,
            nrows,
            ncols,
            &format!("matrix {rows_axis}/{columns_axis}/{name}"),
        )?;
        match matrix {
            DafMatrix::Dense { values, .. } => {
                put_array(self.fw, group, name, &[ncols, nrows], values)
            }
            DafMatrix::Csc {
                colptr,
                rowval,
                nzval,
                ..
            } => {
                let g = self.fw.group(group)?.create_group(name)?.id();
                let t = index_type(nrows.max(rowval.len() as u64 + 1));
                put_array(self.fw, g, "colptr", &[ncols + 1], &one_based(colptr, t))?;
                put_array(
                    self.fw,
                    g,
                    "rowval",
                    &[rowval.len() as u64],
                    &one_based(rowval, t),
                )?;
                put_values(self.fw, g, nzval)
            }
        }
    }
}

/// Refuse a vector (`what` names it) that does not fit an axis of `len`
/// entries: dense values or a sparse length other than `len`, positions
/// out of order or range, or a value count other than the positions'.
fn check_vector(vector: &DafVector, len: u64, what: &str) -> Result<()> {
    match vector {
        DafVector::Dense(a) if a.len() as u64 != len => Err(Error::usage(format!(
            "{what}: {} values for {len} entries",
            a.len()
        ))),
        DafVector::Dense(_) => Ok(()),
        DafVector::Sparse {
            len: vlen,
            nzind,
            nzval,
        } => {
            if *vlen != len {
                return Err(Error::usage(format!(
                    "{what}: length {vlen} for {len} entries"
                )));
            }
            check_nzind(nzind, len, 0).map_err(|m| Error::usage(format!("{what}: {m}")))?;
            if nzval.len() != nzind.len() {
                return Err(Error::usage(format!(
                    "{what}: {} values for {} positions",
                    nzval.len(),
                    nzind.len()
                )));
            }
            Ok(())
        }
    }
}

/// Refuse a matrix (`what` names it) that does not fit axes of `nrows` ×
/// `ncols` entries: other dimensions, a dense value count other than
/// their product, or an inconsistent CSC structure.
fn check_matrix(matrix: &DafMatrix, nrows: u64, ncols: u64, what: &str) -> Result<()> {
    let (mr, mc) = match matrix {
        DafMatrix::Dense { nrows, ncols, .. } | DafMatrix::Csc { nrows, ncols, .. } => {
            (*nrows, *ncols)
        }
    };
    if (mr, mc) != (nrows, ncols) {
        return Err(Error::usage(format!(
            "{what}: {mr} x {mc} for axes of {nrows} x {ncols} entries"
        )));
    }
    match matrix {
        DafMatrix::Dense { values, .. } => {
            if Some(values.len() as u64) != nrows.checked_mul(ncols) {
                return Err(Error::usage(format!(
                    "{what}: {} values for {nrows} x {ncols}",
                    values.len()
                )));
            }
            Ok(())
        }
        DafMatrix::Csc {
            colptr,
            rowval,
            nzval,
            ..
        } => check_csc(nrows, ncols, colptr, rowval, nzval.len(), 0)
            .map_err(|m| Error::usage(format!("{what}: {m}"))),
    }
}

/// The values of a sparse property: `nztxt` for strings, nothing for
/// all-true booleans, `nzval` otherwise.
fn put_values(fw: &mut FileWriter, group: ObjectId, nzval: &DafArray) -> Result<()> {
    let n = [nzval.len() as u64];
    match nzval {
        a if a.is_all_true_bool() => Ok(()),
        a @ DafArray::Str(_) => put_array(fw, group, "nztxt", &n, a),
        a => put_array(fw, group, "nzval", &n, a),
    }
}

/// Write `values` as a contiguous dataset of `shape`.
fn put_array(
    fw: &mut FileWriter,
    group: ObjectId,
    name: &str,
    shape: &[u64],
    values: &DafArray,
) -> Result<()> {
    let mut g = fw.group(group)?;
    let b = g.create_dataset(name).shape(shape);
    match (values, array_bytes(values)) {
        (_, Some((dtype, bytes))) => b.dtype(dtype).write_raw(&bytes),
        (DafArray::Str(v), None) => {
            let refs: Vec<&str> = v.iter().map(String::as_str).collect();
            b.write_strings(&refs)
        }
        (_, None) => return Err(Error::usage("values without a datatype")),
    }?;
    Ok(())
}

/// The datatype and little-endian bytes of non-string values.
fn array_bytes(values: &DafArray) -> Option<(Datatype, Cow<'_, [u8]>)> {
    fn num<T: H5Type>(v: &[T]) -> (Datatype, Cow<'_, [u8]>) {
        let bytes = match T::file_bytes(v) {
            Some(b) => Cow::Borrowed(b),
            None => Cow::Owned(h5fmt::write::value::to_bytes(v)),
        };
        (T::dtype(), bytes)
    }
    Some(match values {
        DafArray::Bool(v) => (
            hdf5_type(DafType::Bool),
            Cow::Owned(v.iter().map(|&b| u8::from(b)).collect()),
        ),
        DafArray::I8(v) => num(v),
        DafArray::I16(v) => num(v),
        DafArray::I32(v) => num(v),
        DafArray::I64(v) => num(v),
        DafArray::U8(v) => num(v),
        DafArray::U16(v) => num(v),
        DafArray::U32(v) => num(v),
        DafArray::U64(v) => num(v),
        DafArray::F32(v) => num(v),
        DafArray::F64(v) => num(v),
        DafArray::Str(_) => return None,
    })
}

/// Adds numeric and boolean vectors and matrices to the Daf data set of an
/// existing file, through [`FileEditor`], contiguous and 8-byte aligned
/// ([`FileEditor::set_alignment`]). Axes, scalars and string properties are
/// not created (see the module documentation).
///
/// ```no_run
/// # fn main() -> h5table::Result<()> {
/// use h5table::daf::{DafArray, DafEditor, DafVector};
/// let mut editor = h5fmt::FileEditor::open("cells.h5df")?;
/// let mut daf = DafEditor::open(&mut editor, "/")?;
/// let n = daf.axis_len("cell")?;
/// daf.set_vector("cell", "score", &DafVector::Dense(DafArray::F32(vec![0.5; n as usize])))?;
/// editor.close()?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct DafEditor<'e> {
    editor: &'e mut FileEditor,
    root: String,
    axes: BTreeMap<String, u64>,
}

impl<'e> DafEditor<'e> {
    /// The Daf data set in the group at `path` of the file `editor` edits
    /// (its version and axes checked as [`DafReader::open`] does).
    ///
    /// # Errors
    /// As [`DafReader::open`] and [`DafReader::axis_len`].
    pub fn open(editor: &'e mut FileEditor, path: &str) -> Result<Self> {
        let reader = DafReader::open(editor.reader(), path)?;
        let mut axes = BTreeMap::new();
        for a in reader.axis_names()? {
            let n = reader.axis_len(&a)?;
            axes.insert(a, n);
        }
        let root = reader.root.path().trim_end_matches('/').to_string();
        editor.set_alignment(1, 8)?;
        Ok(DafEditor { editor, root, axes })
    }

    /// The number of entries of an axis.
    ///
    /// # Errors
    /// [`Error::Usage`] for an unknown axis.
    pub fn axis_len(&self, axis: &str) -> Result<u64> {
        self.axes
            .get(axis)
            .copied()
            .ok_or_else(|| Error::usage(format!("no axis {axis:?}")))
    }

    /// Write a vector property, stored as [`DafWriter::set_vector`] stores it.
    ///
    /// # Errors
    /// [`Error::Usage`] for strings, and as [`DafWriter::set_vector`]; HDF5
    /// errors of the editor (an existing name).
    pub fn set_vector(&mut self, axis: &str, name: &str, vector: &DafVector) -> Result<()> {
        let len = self.axis_len(axis)?;
        let parent = format!("{}/vectors/{axis}", self.root);
        let what = format!("vector {axis}/{name}");
        check_vector(vector, len, &what)?;
        match vector {
            DafVector::Dense(a) => self.put(&parent, name, &[len], a, &what),
            DafVector::Sparse { nzind, nzval, .. } => {
                self.refuse_strings(nzval, &what)?;
                self.editor.create_group(&parent, name)?;
                let g = format!("{parent}/{name}");
                let ind = one_based(nzind, index_type(len));
                self.put(&g, "nzind", &[nzind.len() as u64], &ind, &what)?;
                if !nzval.is_all_true_bool() {
                    self.put(&g, "nzval", &[nzval.len() as u64], nzval, &what)?;
                }
                Ok(())
            }
        }
    }

    /// Write a matrix property, stored as [`DafWriter::set_matrix`] stores it.
    ///
    /// # Errors
    /// [`Error::Usage`] for strings, and as [`DafWriter::set_matrix`]; HDF5
    /// errors of the editor (an existing name, a missing axes pair group).
    pub fn set_matrix(
        &mut self,
        rows_axis: &str,
        columns_axis: &str,
        name: &str,
        matrix: &DafMatrix,
    ) -> Result<()> {
        let nrows = self.axis_len(rows_axis)?;
        let ncols = self.axis_len(columns_axis)?;
        let parent = format!("{}/matrices/{rows_axis}/{columns_axis}", self.root);
        let what = format!("matrix {rows_axis}/{columns_axis}/{name}");
        check_matrix(matrix, nrows, ncols, &what)?;
        match matrix {
            DafMatrix::Dense { values, .. } => {
                self.put(&parent, name, &[ncols, nrows], values, &what)
            }
            DafMatrix::Csc {
                colptr,
                rowval,
                nzval,
                ..
            } => {
                self.refuse_strings(nzval, &what)?;
                self.editor.create_group(&parent, name)?;
                let g = format!("{parent}/{name}");
                let t = index_type(nrows.max(rowval.len() as u64 + 1));
                self.put(&g, "colptr", &[ncols + 1], &one_based(colptr, t), &what)?;
                let nnz = [rowval.len() as u64];
                self.put(&g, "rowval", &nnz, &one_based(rowval, t), &what)?;
                if !nzval.is_all_true_bool() {
                    self.put(&g, "nzval", &nnz, nzval, &what)?;
                }
                Ok(())
            }
        }
    }

    fn refuse_strings(&self, values: &DafArray, what: &str) -> Result<()> {
        if values.dtype() == DafType::Str {
            return Err(Error::usage(format!(
                "{what}: string properties are not written by the editor (it creates no \
                 contiguous variable-length datasets)"
            )));
        }
        Ok(())
    }

    /// A contiguous dataset `name` in `parent` holding `values`.
    fn put(
        &mut self,
        parent: &str,
        name: &str,
        shape: &[u64],
        values: &DafArray,
        what: &str,
    ) -> Result<()> {
        self.refuse_strings(values, what)?;
        let Some((dtype, bytes)) = array_bytes(values) else {
            return Ok(());
        };
        self.editor
            .create_dataset(parent, name, &NewDataset::new(dtype, shape))?;
        if !bytes.is_empty() {
            let path = format!("{parent}/{name}");
            self.editor
                .write_box(&path, &alloc::vec![0; shape.len()], shape, &bytes)?;
        }
        Ok(())
    }
}
