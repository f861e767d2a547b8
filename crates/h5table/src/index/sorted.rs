//! `SORTED_ROWS` (§10.5): the stable permutation of rows `[0, NROWS)` by
//! value, then the fill tail, then the NaN tail.

use super::order::{cmp_rows, cmp_values, row_class, RowClass};
use super::prune::Predicate;
use super::IndexInfo;
use crate::model::ColumnSlice;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::format::datatype::Datatype;
use h5fmt::Value;

/// A `SORTED_ROWS` permutation with its tail lengths.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SortedRows {
    /// Row positions in rank order (length NROWS when computed; a stored
    /// dataset may be longer, the excess being residue).
    pub perm: Vec<u64>,
    /// Rows holding NaN, at the very end.
    pub nan_tail_length: u64,
    /// Missing rows that are not NaN, just before the NaN tail.
    pub fill_tail_length: u64,
}

impl SortedRows {
    /// The number of ranks holding ordered (non-missing, non-NaN) values,
    /// given the table's `nrows`; `None` when the tails exceed it.
    pub fn ordered_len(&self, nrows: u64) -> Option<u64> {
        nrows
            .checked_sub(self.nan_tail_length)?
            .checked_sub(self.fill_tail_length)
    }
}

/// Compute the permutation of rows `[0, nrows)` (`slice` holds at least
/// those rows, with the canonical missing mask): ordered values by the HEP001
/// order (`-0 == +0`, strings and opaque byte-wise, enums by code), ties by
/// increasing row; then the missing rows whose value is not NaN (fill
/// tail); then the NaN rows (NaN tail), each tail in increasing row order.
pub fn compute(slice: &ColumnSlice, nrows: u64) -> SortedRows {
    let n = (nrows as usize)
        .min(slice.values.len())
        .min(slice.missing.len());
    let mut perm: Vec<u64> = (0..n as u64).collect();
    // A stable sort: equal keys keep increasing row order.
    perm.sort_by(|&a, &b| {
        cmp_rows(
            (&slice.values[a as usize], slice.missing[a as usize]),
            (&slice.values[b as usize], slice.missing[b as usize]),
        )
    });
    let mut nan = 0;
    let mut fill = 0;
    for i in 0..n {
        match row_class(&slice.values[i], slice.missing[i]) {
            RowClass::Nan => nan += 1,
            RowClass::Fill => fill += 1,
            RowClass::Value => {}
        }
    }
    SortedRows {
        perm,
        nan_tail_length: nan,
        fill_tail_length: fill,
    }
}

/// Read a stored `SORTED_ROWS` dataset: rank 1, an unsigned integer type,
/// at least `nrows` entries, `nan_tail_length` and `fill_tail_length`
/// present, `ordered` true.
///
/// # Errors
/// A message describing the structural problem.
pub fn load(info: &IndexInfo, nrows: u64) -> Result<SortedRows, String> {
    let ds = &info.dataset;
    if ds.shape().len() != 1 {
        return Err(format!("the dataset has rank {}, not 1", ds.shape().len()));
    }
    if !matches!(ds.dtype(), Datatype::Integer { signed: false, .. }) {
        return Err("the datatype is not an unsigned integer".into());
    }
    let len = ds.shape()[0];
    if len < nrows {
        return Err(format!("it has {len} entries, fewer than NROWS = {nrows}"));
    }
    let p = &info.params;
    let (Some(nan), Some(fill)) = (p.nan_tail_length, p.fill_tail_length) else {
        return Err("nan_tail_length and fill_tail_length must both be present".into());
    };
    if p.ordered != Some(true) {
        return Err("the ordered attribute must be present and true".into());
    }
    let values = ds
        .read_values()
        .map_err(|e| format!("cannot be read: {e}"))?;
    let perm = values
        .into_iter()
        .map(|v| match v {
            Value::UInt(u) => Ok(u),
            _ => Err(String::from("an entry is not an unsigned integer")),
        })
        .collect::<Result<Vec<u64>, String>>()?;
    Ok(SortedRows {
        perm,
        nan_tail_length: nan,
        fill_tail_length: fill,
    })
}

/// How a stored permutation differs from the computed one over the first
/// `nrows` ranks (entries past it are permitted residue): `None` when it
/// does not.
pub fn diff(stored: &SortedRows, computed: &SortedRows, nrows: u64) -> Option<String> {
    if stored.nan_tail_length != computed.nan_tail_length {
        return Some(format!(
            "nan_tail_length is {}, the column has {} NaN rows",
            stored.nan_tail_length, computed.nan_tail_length
        ));
    }
    if stored.fill_tail_length != computed.fill_tail_length {
        return Some(format!(
            "fill_tail_length is {}, the column has {} missing non-NaN rows",
            stored.fill_tail_length, computed.fill_tail_length
        ));
    }
    let n = nrows as usize;
    if stored.perm.len() < n || computed.perm.len() < n {
        return Some(format!(
            "it has {} entries, fewer than NROWS = {nrows}",
            stored.perm.len()
        ));
    }
    let bad = (0..n).find(|&i| stored.perm[i] != computed.perm[i])?;
    Some(format!(
        "rank {bad} holds row {}, but the row of rank {bad} is {}",
        stored.perm[bad], computed.perm[bad]
    ))
}

/// Candidate rows for `pred` by binary search over the ordered ranks
/// `[0, ordered_len)` of a permutation, reading values with `value_at(row)`.
/// Returns the rows sorted and deduplicated, all below `nrows`; `None` when
/// the index cannot answer (tails longer than `nrows`, an entry past
/// `nrows`, a literal not ordered against the column's values): the caller
/// must then consider every row.
///
/// # Errors
/// Errors of `value_at`.
pub fn candidate_rows<E>(
    sorted: &SortedRows,
    nrows: u64,
    pred: &Predicate,
    value_at: &mut dyn FnMut(u64) -> Result<Value, E>,
) -> Result<Option<Vec<u64>>, E> {
    let Some(len) = sorted.ordered_len(nrows) else {
        return Ok(None);
    };
    if (sorted.perm.len() as u64) < len {
        return Ok(None);
    }
    let mut ranges: Vec<(u64, u64)> = Vec::new();
    let lits: Vec<(&Value, u8)> = match pred {
        Predicate::Eq(v) => alloc::vec![(v, 0)],
        Predicate::Lt(v) => alloc::vec![(v, 1)],
        Predicate::Le(v) => alloc::vec![(v, 2)],
        Predicate::Gt(v) => alloc::vec![(v, 3)],
        Predicate::Ge(v) => alloc::vec![(v, 4)],
        Predicate::In(vs) => vs.iter().map(|v| (v, 0)).collect(),
    };
    for (lit, op) in lits {
        // First rank whose value is >= lit (strict=false) or > lit (strict=true).
        let mut bound = |strict: bool| -> Result<Option<u64>, E> {
            let (mut lo, mut hi) = (0u64, len);
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                let row = sorted.perm[mid as usize];
                if row >= nrows {
                    return Ok(None);
                }
                let v = value_at(row)?;
                let Some(o) = cmp_values(&v, lit) else {
                    return Ok(None);
                };
                let before = if strict {
                    o != Ordering::Greater
                } else {
                    o == Ordering::Less
                };
                if before {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            Ok(Some(lo))
        };
        let r = match op {
            0 => bound(false)?.zip(bound(true)?),
            1 => bound(false)?.map(|b| (0, b)),
            2 => bound(true)?.map(|b| (0, b)),
            3 => bound(true)?.map(|b| (b, len)),
            _ => bound(false)?.map(|b| (b, len)),
        };
        match r {
            Some(r) => ranges.push(r),
            None => return Ok(None),
        }
    }
    let mut rows: Vec<u64> = Vec::new();
    for (a, b) in ranges {
        for &r in &sorted.perm[a as usize..b.max(a) as usize] {
            if r >= nrows {
                return Ok(None);
            }
            rows.push(r);
        }
    }
    rows.sort_unstable();
    rows.dedup();
    Ok(Some(rows))
}
