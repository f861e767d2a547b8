//! `CHUNK_MINMAX` (§10.4): per data-bearing chunk, the min and max of the
//! non-missing orderable values, the NaN count, the missing count and the
//! number of logical rows.

use super::order::{cmp_values, is_nan, values_equal};
use super::prune::Predicate;
use super::{chunk_ranges, IndexInfo};
use crate::model::ColumnSlice;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::format::datatype::Datatype;
use h5fmt::Value;

/// One `CHUNK_MINMAX` entry (the compound element of §10.4).
#[derive(Debug, Clone, PartialEq)]
pub struct MinMaxEntry {
    /// The least non-missing orderable value; the fill value when there is none.
    /// `None` only in a computed entry of a chunk without orderable values
    /// whose column has no fill value.
    pub min: Option<Value>,
    /// The greatest non-missing orderable value (as `min` otherwise).
    pub max: Option<Value>,
    /// IEEE NaN values in the chunk (whatever the fill).
    pub nan_count: u64,
    /// Missing values in the chunk (the canonical test, §8.5).
    pub fill_count: u64,
    /// Logical rows in the chunk.
    pub n: u64,
}

impl MinMaxEntry {
    /// The number of non-missing orderable values the entry summarises:
    /// `n − fill_count`, less the NaN count when the fill is not NaN
    /// (with a NaN fill every NaN is already missing). Saturating, so a
    /// hostile entry cannot underflow.
    pub fn orderable(&self, fill_is_nan: bool) -> u64 {
        let m = self.n.saturating_sub(self.fill_count);
        if fill_is_nan {
            m
        } else {
            m.saturating_sub(self.nan_count)
        }
    }
}

/// Compute the `CHUNK_MINMAX` entries of rows `[0, nrows)` of a column
/// (`slice` holds at least those rows): one per data-bearing chunk
/// ([`chunk_ranges`]), none when `nrows == 0`. `fill` is the column's fill
/// value (used as min/max of a chunk with no orderable value).
pub fn compute(
    slice: &ColumnSlice,
    nrows: u64,
    chunk_len: Option<u64>,
    fill: Option<&Value>,
) -> Vec<MinMaxEntry> {
    let nrows = nrows
        .min(slice.values.len() as u64)
        .min(slice.missing.len() as u64);
    chunk_ranges(nrows, chunk_len)
        .into_iter()
        .map(|r| {
            let mut e = MinMaxEntry {
                min: None,
                max: None,
                nan_count: 0,
                fill_count: 0,
                n: r.end - r.start,
            };
            let (mut lo, mut hi): (Option<&Value>, Option<&Value>) = (None, None);
            for i in r.start as usize..r.end as usize {
                let v = &slice.values[i];
                let nan = is_nan(v);
                if nan {
                    e.nan_count += 1;
                }
                if slice.missing[i] {
                    e.fill_count += 1;
                }
                if nan || slice.missing[i] {
                    continue;
                }
                if lo.is_none_or(|l| cmp_values(v, l) == Some(Ordering::Less)) {
                    lo = Some(v);
                }
                if hi.is_none_or(|h| cmp_values(v, h) == Some(Ordering::Greater)) {
                    hi = Some(v);
                }
            }
            e.min = lo.or(fill).cloned();
            e.max = hi.or(fill).cloned();
            e
        })
        .collect()
}

/// Read a stored `CHUNK_MINMAX` dataset: rank 1, a compound with `min`,
/// `max` (of the column's element type), `nan_count`, `fill_count` and `n`
/// (unsigned integers). All stored entries are returned, residue included.
///
/// # Errors
/// A message describing the structural problem.
pub fn load(info: &IndexInfo, column_dtype: &Datatype) -> Result<Vec<MinMaxEntry>, String> {
    let ds = &info.dataset;
    if ds.shape().len() != 1 {
        return Err(format!("the dataset has rank {}, not 1", ds.shape().len()));
    }
    let Datatype::Compound { members, .. } = ds.dtype() else {
        return Err("the datatype is not a compound".into());
    };
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    if names != ["min", "max", "nan_count", "fill_count", "n"] {
        return Err(format!(
            "the compound fields are {names:?}, not [min, max, nan_count, fill_count, n]"
        ));
    }
    for m in &members[..2] {
        if !same_type(&m.dtype, column_dtype) {
            return Err(format!(
                "field {:?} is not of the column's element datatype",
                m.name
            ));
        }
    }
    for m in &members[2..] {
        if !matches!(m.dtype, Datatype::Integer { signed: false, .. }) {
            return Err(format!("field {:?} is not an unsigned integer", m.name));
        }
    }
    // One read, then each field decoded for every entry at once (no
    // compound value per entry).
    let raw = ds.read_raw().map_err(|e| format!("cannot be read: {e}"))?;
    let esize = usize::try_from(ds.dtype().size()).unwrap_or(usize::MAX);
    let count = raw.len().checked_div(esize).unwrap_or(0);
    let file = ds.file();
    let mut fields: Vec<Vec<Value>> = Vec::with_capacity(members.len());
    for m in members {
        let (off, size) = (m.offset as usize, m.dtype.size() as usize);
        if off.saturating_add(size) > esize {
            return Err(format!("field {:?} lies outside the element", m.name));
        }
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(count.saturating_mul(size))
            .map_err(|_| String::from("too many entries"))?;
        for e in raw.chunks_exact(esize) {
            bytes.extend_from_slice(&e[off..off + size]);
        }
        let v = h5fmt::data::decode::decode_elements(
            &m.dtype,
            &bytes,
            count as u64,
            file.ctx(),
            &file.heap(),
        )
        .map_err(|e| format!("cannot be read: {e}"))?;
        fields.push(v);
    }
    let [min, max, nc, fc, n] = <[Vec<Value>; 5]>::try_from(fields)
        .map_err(|_| String::from("the compound does not have five fields"))?;
    let u = |i: usize, v: Value| match v {
        Value::UInt(u) => Ok(u),
        _ => Err(format!("entry {i} has a non-integer count")),
    };
    min.into_iter()
        .zip(max)
        .zip(nc.into_iter().zip(fc).zip(n))
        .enumerate()
        .map(|(i, ((min, max), ((nc, fc), n)))| {
            Ok(MinMaxEntry {
                min: Some(min),
                max: Some(max),
                nan_count: u(i, nc)?,
                fill_count: u(i, fc)?,
                n: u(i, n)?,
            })
        })
        .collect()
}

/// Whether two datatypes hold the same values: equal, or the same family and
/// size that differ only in byte order (the decoder resolves it).
pub(crate) fn same_type(a: &Datatype, b: &Datatype) -> bool {
    if a == b {
        return true;
    }
    match (a, b) {
        (
            Datatype::Integer {
                size: s1,
                signed: g1,
                ..
            },
            Datatype::Integer {
                size: s2,
                signed: g2,
                ..
            },
        ) => s1 == s2 && g1 == g2,
        (Datatype::Float { size: s1, .. }, Datatype::Float { size: s2, .. }) => s1 == s2,
        (Datatype::String { .. }, Datatype::String { .. })
        | (Datatype::VarLenString { .. }, Datatype::VarLenString { .. }) => true,
        (Datatype::Opaque { size: s1, .. }, Datatype::Opaque { size: s2, .. }) => s1 == s2,
        (Datatype::Enum { base: b1, .. }, Datatype::Enum { base: b2, .. }) => same_type(b1, b2),
        _ => false,
    }
}

/// How a stored entry differs from the computed one, if it does: `None`
/// when they agree. `min`/`max` agree under the HEP001 order (so `-0` and
/// `+0` are the same); in a chunk with no orderable value they must be the
/// fill (any NaN for a NaN fill).
pub fn diff(stored: &MinMaxEntry, computed: &MinMaxEntry, fill_is_nan: bool) -> Option<String> {
    if stored.n != computed.n {
        return Some(format!(
            "n is {}, the chunk has {} rows",
            stored.n, computed.n
        ));
    }
    if stored.nan_count != computed.nan_count {
        return Some(format!(
            "nan_count is {}, the chunk has {} NaN values",
            stored.nan_count, computed.nan_count
        ));
    }
    if stored.fill_count != computed.fill_count {
        return Some(format!(
            "fill_count is {}, the chunk has {} missing values",
            stored.fill_count, computed.fill_count
        ));
    }
    let none_orderable = computed.orderable(fill_is_nan) == 0;
    for (what, s, c) in [
        ("min", &stored.min, &computed.min),
        ("max", &stored.max, &computed.max),
    ] {
        let ok = match (s, c) {
            (_, None) => true, // no fill to compare against
            (None, Some(_)) => false,
            (Some(s), Some(c)) if none_orderable => {
                if fill_is_nan {
                    is_nan(s)
                } else {
                    values_equal(s, c) || s == c
                }
            }
            (Some(s), Some(c)) => cmp_values(s, c) == Some(Ordering::Equal),
        };
        if !ok {
            return Some(format!(
                "{what} is {}, the chunk's {what} is {}",
                show(s.as_ref()),
                show(c.as_ref())
            ));
        }
    }
    None
}

fn show(v: Option<&Value>) -> String {
    match v {
        Some(v) => crate::text::format_value(v),
        None => "absent".into(),
    }
}

/// The chunks (indexes into `entries`, below `nchunks`) that may hold a row
/// satisfying `pred`: a chunk is skipped only when its entry proves that no
/// non-missing, non-NaN value in it can satisfy the predicate. A literal
/// that is not ordered against the entry (NaN, another family) keeps the
/// chunk. Entries past `nchunks` (residue) are never consulted; chunks with
/// no entry are kept.
pub fn candidate_chunks(
    entries: &[MinMaxEntry],
    nchunks: u64,
    fill_is_nan: bool,
    pred: &Predicate,
) -> Vec<u64> {
    (0..nchunks)
        .filter(|&c| {
            let Some(e) = entries.get(c as usize) else {
                return true;
            };
            if e.orderable(fill_is_nan) == 0 {
                return false;
            }
            let (Some(min), Some(max)) = (&e.min, &e.max) else {
                return true;
            };
            may_match(min, max, pred)
        })
        .collect()
}

fn may_match(min: &Value, max: &Value, pred: &Predicate) -> bool {
    use Ordering::*;
    let lo = |v: &Value| cmp_values(min, v);
    let hi = |v: &Value| cmp_values(max, v);
    let keep = |o: Option<bool>| o.unwrap_or(true);
    match pred {
        Predicate::Eq(v) => keep(lo(v).map(|o| o != Greater)) && keep(hi(v).map(|o| o != Less)),
        Predicate::Lt(v) => keep(lo(v).map(|o| o == Less)),
        Predicate::Le(v) => keep(lo(v).map(|o| o != Greater)),
        Predicate::Gt(v) => keep(hi(v).map(|o| o == Greater)),
        Predicate::Ge(v) => keep(hi(v).map(|o| o != Less)),
        Predicate::In(vs) => vs
            .iter()
            .any(|v| may_match(min, max, &Predicate::Eq(v.clone()))),
    }
}
