//! Column data in, element bytes out: [`ColumnData`], fill values
//! ([`FillSpec`], Table 1 sentinels), value ranges ([`Scalar`]).

use crate::error::{Error, Result};
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, StringPad};

/// The rows of one column, as given to [`super::TableWriter::write`],
/// [`super::TableEditor::append`] and [`super::TableEditor::update`].
///
/// One variant per family of Rust values, so that a converter from Arrow
/// arrays (or any columnar source) has one obvious target per array type:
///
/// * integers of any width go to integer columns (range-checked against the
///   column's width and signedness, byte-swapped to its byte order), to
///   categorical columns (the codes, checked against the number of
///   categories) and to enumeration columns (the codes, which must be
///   members);
/// * floats go to float columns of the same width (`Float16` carries
///   IEEE binary16 bit patterns);
/// * [`ColumnData::Str`] goes to fixed-length strings (padded with the
///   column's padding; ASCII columns refuse other characters; longer values
///   are refused, never truncated), to variable-length strings, and to
///   enumeration columns by member name; `None` is a missing row;
/// * [`ColumnData::Raw`] is element bytes exactly as stored (file byte
///   order) for any fixed-size column: opaque, compound, array, … Raw
///   elements equal to the fill value read as missing;
/// * [`ColumnData::Masked`] marks rows of any other variant missing (an
///   Arrow validity bitmap, inverted): those rows are written as the
///   column's fill value whatever the values hold there.
///
/// Non-missing typed values equal to the column's fill value (bit
/// equality, or any NaN when the fill is NaN) are refused: they would read
/// back as missing (§8.5). Mark them missing or choose another fill.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnData {
    /// `i8` values.
    Int8(Vec<i8>),
    /// `i16` values.
    Int16(Vec<i16>),
    /// `i32` values.
    Int32(Vec<i32>),
    /// `i64` values.
    Int64(Vec<i64>),
    /// `u8` values.
    UInt8(Vec<u8>),
    /// `u16` values.
    UInt16(Vec<u16>),
    /// `u32` values.
    UInt32(Vec<u32>),
    /// `u64` values.
    UInt64(Vec<u64>),
    /// IEEE binary16 bit patterns.
    Float16(Vec<u16>),
    /// `f32` values.
    Float32(Vec<f32>),
    /// `f64` values.
    Float64(Vec<f64>),
    /// Strings (fixed or variable length, or enumeration member names);
    /// `None` is missing.
    Str(Vec<Option<String>>),
    /// Element bytes as stored, for any fixed-size datatype.
    Raw(Vec<u8>),
    /// `values` with the rows where `missing[i]` written as the fill value.
    Masked {
        /// The values (any variant but `Masked`).
        values: Box<ColumnData>,
        /// One flag per row.
        missing: Vec<bool>,
    },
}

impl ColumnData {
    /// Strings from `&str`s, none missing.
    pub fn strs(v: &[&str]) -> ColumnData {
        ColumnData::Str(v.iter().map(|s| Some((*s).to_owned())).collect())
    }
    /// `self` with the rows flagged in `missing` marked missing.
    pub fn with_missing(self, missing: Vec<bool>) -> ColumnData {
        ColumnData::Masked {
            values: Box::new(self),
            missing,
        }
    }
    /// The number of rows, when `dtype` gives the size of raw elements.
    pub(crate) fn len_for(&self, dtype: &Datatype) -> Option<u64> {
        Some(match self {
            ColumnData::Int8(v) => v.len() as u64,
            ColumnData::Int16(v) => v.len() as u64,
            ColumnData::Int32(v) => v.len() as u64,
            ColumnData::Int64(v) => v.len() as u64,
            ColumnData::UInt8(v) => v.len() as u64,
            ColumnData::UInt16(v) => v.len() as u64,
            ColumnData::UInt32(v) => v.len() as u64,
            ColumnData::UInt64(v) => v.len() as u64,
            ColumnData::Float16(v) => v.len() as u64,
            ColumnData::Float32(v) => v.len() as u64,
            ColumnData::Float64(v) => v.len() as u64,
            ColumnData::Str(v) => v.len() as u64,
            ColumnData::Raw(b) => {
                let es = dtype.size();
                if es == 0 || dtype.is_variable_length() || !(b.len() as u64).is_multiple_of(es) {
                    return None;
                }
                b.len() as u64 / es
            }
            ColumnData::Masked { values, .. } => values.len_for(dtype)?,
        })
    }
}

/// A numeric value for [`FillSpec`] and the `valid_min`/`valid_max` range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Scalar {
    /// An integer (fits every HDF5 integer width up to 64 bits).
    Int(i128),
    /// A float.
    Float(f64),
}

/// A column's fill value (§8.5), the marker of its missing rows.
#[derive(Debug, Clone, PartialEq, Default)]
pub enum FillSpec {
    /// The recommended sentinel of HEP001 Table 1: `MIN + 1` for signed
    /// integers, `MAX` for unsigned ones, `9.9692099683868690e+36` for
    /// 32- and 64-bit floats, the empty string for strings, the `MISSING`
    /// member for enumerations. Other datatypes (float16, opaque, compound,
    /// enumerations without `MISSING`) have none: give a fill explicitly.
    #[default]
    Sentinel,
    /// A quiet NaN (floats only; permitted, not recommended by §8.5).
    NaN,
    /// A numeric value (integer, enumeration code or float columns).
    Value(Scalar),
    /// A string (string columns).
    Str(String),
    /// An enumeration member by name.
    Member(String),
    /// The element bytes as stored (file byte order), any fixed-size type.
    Raw(Vec<u8>),
}

/// The resolved fill of a column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FillBytes {
    /// One element as stored (for variable-length strings: the descriptor
    /// of the empty string, or left to the writer for another string).
    pub bytes: Vec<u8>,
    /// The fill is a NaN.
    pub is_nan: bool,
    /// For variable-length strings: the fill string.
    pub vlen: Option<Vec<u8>>,
}

/// Element bytes of a column.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Encoded {
    /// Fixed-size elements, file byte order.
    Fixed(Vec<u8>),
    /// Variable-length strings' bytes.
    VarLen(Vec<Vec<u8>>),
}

impl Encoded {
    pub(crate) fn len(&self, es: u64) -> u64 {
        match self {
            Encoded::Fixed(b) => (b.len() as u64).checked_div(es).unwrap_or(0),
            Encoded::VarLen(v) => v.len() as u64,
        }
    }
}

fn usage(m: impl Into<String>) -> Error {
    Error::Usage(m.into())
}

/// Whether HEP001 writing supports columns of this datatype.
pub(crate) fn check_column_dtype(name: &str, dt: &Datatype) -> Result<()> {
    match dt {
        Datatype::VarLenString { .. } => Ok(()),
        _ if dt.is_variable_length() => Err(usage(format!(
            "column {name:?}: variable-length sequences are not written (only variable-length strings)"
        ))),
        _ if dt.has_references() => Err(usage(format!(
            "column {name:?}: reference columns are not written"
        ))),
        _ if dt.size() == 0 => Err(usage(format!("column {name:?}: empty element type"))),
        _ => Ok(()),
    }
}

fn int_parts(dt: &Datatype) -> Option<(u32, ByteOrder, bool)> {
    match dt {
        Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => Some((*size, *order, *signed)),
        _ => None,
    }
}

fn int_range(size: u32, signed: bool) -> Option<(i128, i128)> {
    if size == 0 || size > 8 {
        return None;
    }
    let bits = size * 8;
    Some(if signed {
        (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
    } else {
        (0, (1i128 << bits) - 1)
    })
}

/// The bytes of integer `v` in a `size`-byte integer of `order`, when it fits.
fn int_bytes(v: i128, size: u32, order: &ByteOrder, signed: bool) -> Option<Vec<u8>> {
    let (lo, hi) = int_range(size, signed)?;
    if v < lo || v > hi {
        return None;
    }
    let le = v.to_le_bytes();
    let mut out = le.get(..size as usize)?.to_vec();
    if *order == ByteOrder::Big {
        out.reverse();
    }
    Some(out)
}

fn float_bytes(v: f64, dt: &Datatype) -> Option<Vec<u8>> {
    let Datatype::Float { size, order, .. } = dt else {
        return None;
    };
    let mut out = match size {
        4 => {
            #[allow(clippy::cast_possible_truncation)]
            let f = v as f32;
            f.to_le_bytes().to_vec()
        }
        8 => v.to_le_bytes().to_vec(),
        _ => return None,
    };
    if *order == ByteOrder::Big {
        out.reverse();
    }
    Some(out)
}

fn le_to_order(mut b: Vec<u8>, order: &ByteOrder) -> Vec<u8> {
    if *order == ByteOrder::Big {
        b.reverse();
    }
    b
}

/// Decode a stored integer element to i128.
fn int_value(b: &[u8], order: &ByteOrder, signed: bool) -> Option<i128> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut le = b.to_vec();
    if *order == ByteOrder::Big {
        le.reverse();
    }
    let neg = signed && le.last().is_some_and(|x| x & 0x80 != 0);
    let mut full = [if neg { 0xffu8 } else { 0 }; 16];
    full.get_mut(..le.len())?.copy_from_slice(&le);
    Some(i128::from_le_bytes(full))
}

fn float_value(b: &[u8], dt: &Datatype) -> Option<f64> {
    let Datatype::Float { size, order, .. } = dt else {
        return None;
    };
    let mut le = b.to_vec();
    if *order == ByteOrder::Big {
        le.reverse();
    }
    match size {
        4 => Some(f64::from(f32::from_le_bytes(le.try_into().ok()?))),
        8 => Some(f64::from_le_bytes(le.try_into().ok()?)),
        2 => {
            let bits = u16::from_le_bytes(le.try_into().ok()?);
            Some(f16_to_f64(bits))
        }
        _ => None,
    }
}

fn f16_to_f64(h: u16) -> f64 {
    let sign = if h & 0x8000 != 0 { -1.0 } else { 1.0 };
    let exp = i32::from((h >> 10) & 0x1f);
    let man = f64::from(h & 0x3ff);
    match exp {
        0 => sign * man * 2f64.powi(-24),
        31 if man == 0.0 => sign * f64::INFINITY,
        31 => f64::NAN,
        e => sign * (1.0 + man / 1024.0) * 2f64.powi(e - 15),
    }
}

fn is_nan_bytes(b: &[u8], dt: &Datatype) -> bool {
    float_value(b, dt).is_some_and(f64::is_nan)
}

/// The numeric value of a stored element (integers, enum codes, floats).
pub(crate) fn numeric_value(b: &[u8], dt: &Datatype) -> Option<f64> {
    match dt {
        Datatype::Integer { order, signed, .. } =>
        {
            #[allow(clippy::cast_precision_loss)]
            int_value(b, order, *signed).map(|v| v as f64)
        }
        Datatype::Enum { base, .. } => numeric_value(b, base),
        Datatype::Float { .. } => float_value(b, dt),
        _ => None,
    }
}

/// The integer value of a stored integer (or enum) element.
pub(crate) fn integer_value(b: &[u8], dt: &Datatype) -> Option<i128> {
    match dt {
        Datatype::Integer { order, signed, .. } => int_value(b, order, *signed),
        Datatype::Enum { base, .. } => integer_value(b, base),
        _ => None,
    }
}

/// Encode a scalar into one element of `dt` (integers, enum codes, floats).
pub(crate) fn scalar_bytes(s: Scalar, dt: &Datatype) -> Option<Vec<u8>> {
    match (s, dt) {
        (Scalar::Int(v), Datatype::Integer { .. }) => {
            let (size, order, signed) = int_parts(dt)?;
            int_bytes(v, size, &order, signed)
        }
        (s, Datatype::Enum { base, .. }) => scalar_bytes(s, base),
        (Scalar::Int(v), Datatype::Float { .. }) =>
        {
            #[allow(clippy::cast_precision_loss)]
            float_bytes(v as f64, dt)
        }
        (Scalar::Float(v), Datatype::Float { .. }) => float_bytes(v, dt),
        _ => None,
    }
}

fn pad_string(s: &[u8], size: u32, pad: &StringPad) -> Option<Vec<u8>> {
    let size = size as usize;
    if s.len() > size {
        return None;
    }
    let mut out = s.to_vec();
    let p = if *pad == StringPad::SpacePad { b' ' } else { 0 };
    out.resize(size, p);
    Some(out)
}

/// Resolve a fill specification for a column of datatype `dt`.
pub(crate) fn resolve_fill(name: &str, dt: &Datatype, spec: &FillSpec) -> Result<FillBytes> {
    let bad = |what: &str| usage(format!("column {name:?}: {what}"));
    let fixed = |bytes: Vec<u8>| FillBytes {
        is_nan: is_nan_bytes(&bytes, dt),
        bytes,
        vlen: None,
    };
    match spec {
        FillSpec::Sentinel => match dt {
            Datatype::Integer { size, signed, .. } => {
                let (lo, hi) =
                    int_range(*size, *signed).ok_or_else(|| bad("integer wider than 64 bits"))?;
                let v = if *signed { lo + 1 } else { hi };
                let order = int_parts(dt).map(|p| p.1).unwrap_or(ByteOrder::Little);
                Ok(fixed(
                    int_bytes(v, *size, &order, *signed)
                        .ok_or_else(|| bad("no sentinel for this integer"))?,
                ))
            }
            Datatype::Float { size: 4 | 8, .. } => Ok(fixed(
                float_bytes(9.969_209_968_386_869e36, dt)
                    .ok_or_else(|| bad("no sentinel for this float"))?,
            )),
            Datatype::Float { .. } => Err(bad(
                "float16 has no recommended fill value (§8.5): give FillSpec::NaN or a value",
            )),
            Datatype::String { size, pad, .. } => Ok(fixed(
                pad_string(b"", *size, pad).ok_or_else(|| bad("bad string size"))?,
            )),
            Datatype::VarLenString { .. } => Ok(FillBytes {
                bytes: vec![0; usize::try_from(dt.size()).unwrap_or(0)],
                is_nan: false,
                vlen: Some(Vec::new()),
            }),
            Datatype::Enum { members, .. } => members
                .iter()
                .find(|m| m.name == "MISSING")
                .map(|m| fixed(m.value.clone()))
                .ok_or_else(|| {
                    bad(
                        "an enumeration without a MISSING member has no default fill (§8.5): \
                         add MISSING or give a fill",
                    )
                }),
            _ => Err(bad(
                "this datatype has no recommended fill value (§8.5 Table 1): give one",
            )),
        },
        FillSpec::NaN => match dt {
            Datatype::Float { size, order, .. } => {
                let le = match size {
                    2 => 0x7e00u16.to_le_bytes().to_vec(),
                    4 => f32::NAN.to_le_bytes().to_vec(),
                    8 => f64::NAN.to_le_bytes().to_vec(),
                    _ => return Err(bad("NaN fill for a float of unusual size")),
                };
                Ok(FillBytes {
                    bytes: le_to_order(le, order),
                    is_nan: true,
                    vlen: None,
                })
            }
            _ => Err(bad("a NaN fill needs a float column")),
        },
        FillSpec::Value(s) => {
            let b = scalar_bytes(*s, dt)
                .ok_or_else(|| bad("fill value does not fit the column's datatype"))?;
            if let Datatype::Enum { members, .. } = dt {
                if !members.iter().any(|m| m.value == b) {
                    return Err(bad("fill value is not a member of the enumeration"));
                }
            }
            Ok(fixed(b))
        }
        FillSpec::Str(s) => match dt {
            Datatype::String { size, pad, cset } => {
                if *cset == CharSet::Ascii && !s.is_ascii() {
                    return Err(bad("non-ASCII fill for an ASCII column"));
                }
                Ok(fixed(pad_string(s.as_bytes(), *size, pad).ok_or_else(
                    || bad("fill string longer than the column's strings"),
                )?))
            }
            Datatype::VarLenString { .. } => Ok(FillBytes {
                bytes: vec![0; usize::try_from(dt.size()).unwrap_or(0)],
                is_nan: false,
                vlen: Some(s.as_bytes().to_vec()),
            }),
            _ => Err(bad("a string fill needs a string column")),
        },
        FillSpec::Member(m) => match dt {
            Datatype::Enum { members, .. } => members
                .iter()
                .find(|x| &x.name == m)
                .map(|x| fixed(x.value.clone()))
                .ok_or_else(|| bad("fill member not in the enumeration")),
            _ => Err(bad("a member fill needs an enumeration column")),
        },
        FillSpec::Raw(b) => {
            if dt.is_variable_length() || b.len() as u64 != dt.size() {
                return Err(bad("raw fill is not one element of the column's datatype"));
            }
            Ok(fixed(b.clone()))
        }
    }
}

fn int_data(d: &ColumnData) -> Option<Vec<i128>> {
    Some(match d {
        ColumnData::Int8(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::Int16(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::Int32(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::Int64(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::UInt8(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::UInt16(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::UInt32(v) => v.iter().map(|&x| i128::from(x)).collect(),
        ColumnData::UInt64(v) => v.iter().map(|&x| i128::from(x)).collect(),
        _ => return None,
    })
}

/// What encoding needs to know about a column.
pub(crate) struct Target<'a> {
    pub name: &'a str,
    pub dtype: &'a Datatype,
    pub fill: &'a FillBytes,
    /// For categorical columns: the number of categories.
    pub n_categories: Option<u64>,
}

/// Encode `data` for column `t`, checking types, lengths, ranges and fill
/// collisions.
pub(crate) fn encode(t: &Target<'_>, data: &ColumnData) -> Result<Encoded> {
    let (values, missing) = match data {
        ColumnData::Masked { values, missing } => {
            if matches!(**values, ColumnData::Masked { .. }) {
                return Err(usage(format!("column {:?}: nested Masked data", t.name)));
            }
            (&**values, Some(missing.as_slice()))
        }
        d => (d, None),
    };
    let n = values.len_for(t.dtype).ok_or_else(|| {
        usage(format!(
            "column {:?}: raw bytes are not whole elements",
            t.name
        ))
    })?;
    if let Some(m) = missing {
        if m.len() as u64 != n {
            return Err(usage(format!(
                "column {:?}: {} missing flags for {n} values",
                t.name,
                m.len()
            )));
        }
    }
    let is_missing = |i: usize| missing.is_some_and(|m| m.get(i).copied().unwrap_or(false));
    let bad = |what: String| usage(format!("column {:?}: {what}", t.name));
    let es = usize::try_from(t.dtype.size()).map_err(|_| bad("element too large".into()))?;
    // Typed values that equal the fill would read back as missing.
    let collides = |i: usize, elem: &[u8]| -> Result<()> {
        if is_missing(i) {
            return Ok(());
        }
        let hit = if t.fill.is_nan {
            is_nan_bytes(elem, t.dtype)
        } else {
            elem == t.fill.bytes.as_slice()
        };
        if hit {
            return Err(bad(format!(
                "row {i} holds the fill value, so it would read as missing (§8.5): \
                 mark it missing or choose another fill"
            )));
        }
        Ok(())
    };
    let mut out = Vec::with_capacity(usize::try_from(n).unwrap_or(0).saturating_mul(es));
    // One value per row: the fill where missing, else the value in the
    // column's byte order (refused when it equals the fill). For floats,
    // and for integers of the column's own width and signedness (no range
    // to check, no element allocated).
    macro_rules! same_width {
        ($v:expr, $order:expr) => {
            for (i, x) in $v.iter().enumerate() {
                if is_missing(i) {
                    out.extend_from_slice(&t.fill.bytes);
                    continue;
                }
                let mut e = x.to_le_bytes();
                if *$order == ByteOrder::Big {
                    e.reverse();
                }
                collides(i, &e)?;
                out.extend_from_slice(&e);
            }
        };
    }
    let same_int = |size: u32, signed: bool| {
        t.n_categories.is_none()
            && matches!(t.dtype, Datatype::Integer { size: s, signed: g, .. } if *s == size && *g == signed)
    };
    let order = match t.dtype {
        Datatype::Integer { order, .. } => *order,
        _ => ByteOrder::Little,
    };
    match (values, t.dtype) {
        (ColumnData::Int8(v), _) if same_int(1, true) => same_width!(v, &order),
        (ColumnData::Int16(v), _) if same_int(2, true) => same_width!(v, &order),
        (ColumnData::Int32(v), _) if same_int(4, true) => same_width!(v, &order),
        (ColumnData::Int64(v), _) if same_int(8, true) => same_width!(v, &order),
        (ColumnData::UInt8(v), _) if same_int(1, false) => same_width!(v, &order),
        (ColumnData::UInt16(v), _) if same_int(2, false) => same_width!(v, &order),
        (ColumnData::UInt32(v), _) if same_int(4, false) => same_width!(v, &order),
        (ColumnData::UInt64(v), _) if same_int(8, false) => same_width!(v, &order),
        (ColumnData::Str(v), Datatype::VarLenString { cset, .. }) => {
            let mut elems = Vec::with_capacity(v.len());
            for (i, s) in v.iter().enumerate() {
                match s {
                    Some(s) if !is_missing(i) => {
                        if *cset == CharSet::Ascii && !s.is_ascii() {
                            return Err(bad(format!(
                                "row {i}: non-ASCII string in an ASCII column"
                            )));
                        }
                        if t.fill.vlen.as_deref() == Some(s.as_bytes()) {
                            return Err(bad(format!(
                                "row {i} holds the fill string, so it would read as missing \
                                 (§8.5): use None or choose another fill"
                            )));
                        }
                        elems.push(s.as_bytes().to_vec());
                    }
                    _ => elems.push(t.fill.vlen.clone().unwrap_or_default()),
                }
            }
            return Ok(Encoded::VarLen(elems));
        }
        (ColumnData::Str(v), Datatype::String { size, pad, cset }) => {
            for (i, s) in v.iter().enumerate() {
                match s {
                    Some(s) if !is_missing(i) => {
                        if *cset == CharSet::Ascii && !s.is_ascii() {
                            return Err(bad(format!(
                                "row {i}: non-ASCII string in an ASCII column"
                            )));
                        }
                        let e = pad_string(s.as_bytes(), *size, pad).ok_or_else(|| {
                            bad(format!(
                                "row {i}: string of {} bytes longer than the column's {size}",
                                s.len()
                            ))
                        })?;
                        collides(i, &e)?;
                        out.extend_from_slice(&e);
                    }
                    _ => out.extend_from_slice(&t.fill.bytes),
                }
            }
        }
        (ColumnData::Str(v), Datatype::Enum { members, .. }) => {
            for (i, s) in v.iter().enumerate() {
                match s {
                    Some(s) if !is_missing(i) => {
                        let m = members.iter().find(|m| &m.name == s).ok_or_else(|| {
                            bad(format!("row {i}: {s:?} is not a member of the enumeration"))
                        })?;
                        out.extend_from_slice(&m.value);
                    }
                    _ => out.extend_from_slice(&t.fill.bytes),
                }
            }
        }
        (ColumnData::Raw(b), _) => {
            for (i, e) in b.chunks_exact(es.max(1)).enumerate() {
                out.extend_from_slice(if is_missing(i) { &t.fill.bytes } else { e });
            }
        }
        (ColumnData::Float16(v), Datatype::Float { size: 2, order, .. }) => same_width!(v, order),
        (ColumnData::Float32(v), Datatype::Float { size: 4, order, .. }) => same_width!(v, order),
        (ColumnData::Float64(v), Datatype::Float { size: 8, order, .. }) => same_width!(v, order),
        (d, Datatype::Integer { .. } | Datatype::Enum { .. }) if int_data(d).is_some() => {
            let ints = int_data(d).unwrap_or_default();
            let (base, members) = match t.dtype {
                Datatype::Enum { base, members } => (&**base, Some(members)),
                other => (other, None),
            };
            let (size, order, signed) =
                int_parts(base).ok_or_else(|| bad("enumeration base is not an integer".into()))?;
            for (i, v) in ints.into_iter().enumerate() {
                if is_missing(i) {
                    out.extend_from_slice(&t.fill.bytes);
                    continue;
                }
                let e = int_bytes(v, size, &order, signed).ok_or_else(|| {
                    bad(format!(
                        "row {i}: {v} does not fit the column's integer type"
                    ))
                })?;
                if let Some(ms) = members {
                    if !ms.iter().any(|m| m.value == e) {
                        return Err(bad(format!(
                            "row {i}: code {v} is not an enumeration member"
                        )));
                    }
                } else {
                    collides(i, &e)?;
                }
                if let Some(nc) = t.n_categories {
                    if v < 0 || v >= i128::from(nc) {
                        return Err(bad(format!(
                            "row {i}: category code {v} outside 0..{nc} (§8.7)"
                        )));
                    }
                }
                out.extend_from_slice(&e);
            }
        }
        _ => {
            return Err(bad(format!(
                "{} data does not fit a column of datatype {:?}",
                variant_name(values),
                t.dtype
            )))
        }
    }
    Ok(Encoded::Fixed(out))
}

fn variant_name(d: &ColumnData) -> &'static str {
    match d {
        ColumnData::Int8(_) => "Int8",
        ColumnData::Int16(_) => "Int16",
        ColumnData::Int32(_) => "Int32",
        ColumnData::Int64(_) => "Int64",
        ColumnData::UInt8(_) => "UInt8",
        ColumnData::UInt16(_) => "UInt16",
        ColumnData::UInt32(_) => "UInt32",
        ColumnData::UInt64(_) => "UInt64",
        ColumnData::Float16(_) => "Float16",
        ColumnData::Float32(_) => "Float32",
        ColumnData::Float64(_) => "Float64",
        ColumnData::Str(_) => "Str",
        ColumnData::Raw(_) => "Raw",
        ColumnData::Masked { .. } => "Masked",
    }
}

/// `n` fill elements of a column.
pub(crate) fn fill_rows(dt: &Datatype, fill: &FillBytes, n: u64) -> Result<Encoded> {
    let n = usize::try_from(n).map_err(|_| usage("too many rows"))?;
    if matches!(dt, Datatype::VarLenString { .. }) {
        return Ok(Encoded::VarLen(vec![
            fill.vlen.clone().unwrap_or_default();
            n
        ]));
    }
    let mut out = Vec::with_capacity(n.saturating_mul(fill.bytes.len()));
    for _ in 0..n {
        out.extend_from_slice(&fill.bytes);
    }
    Ok(Encoded::Fixed(out))
}
