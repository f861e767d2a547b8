//! `BITMAP` (§10.6): one row of `ceil(NROWS / 8)` bytes per indexed value,
//! bit `r % 8` (LSB first) of byte `r / 8` set when row `r` holds the value.

use super::order::{cmp_values, values_equal};
use super::prune::Predicate;
use super::IndexInfo;
use crate::model::ColumnSlice;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::format::datatype::Datatype;
use h5fmt::{Object, Value};

/// A bitmap index: the indexed values and one bit row per value.
#[derive(Debug, Clone, PartialEq)]
pub struct Bitmap {
    /// The `K` indexed values (the `VALUES` dataset).
    pub values: Vec<Value>,
    /// Bytes per bit row (`ceil(NROWS / 8)` when computed; a stored dataset
    /// may have more, the excess being residue).
    pub row_bytes: usize,
    /// `K × row_bytes` bytes, row-major.
    pub bits: Vec<u8>,
}

impl Bitmap {
    /// Whether row `r` is marked for value `k`.
    pub fn get(&self, k: usize, r: u64) -> bool {
        let i = k * self.row_bytes + (r / 8) as usize;
        (r / 8) < self.row_bytes as u64 && self.bits.get(i).is_some_and(|b| b & (1 << (r % 8)) != 0)
    }
    /// The rows below `nrows` marked for value `k`.
    pub fn rows(&self, k: usize, nrows: u64) -> Vec<u64> {
        (0..nrows).filter(|&r| self.get(k, r)).collect()
    }
}

/// Compute the bitmap of rows `[0, nrows)` over `values` (the indexed
/// values, in order): bit `r` of row `k` is set when the column's value at
/// `r` equals `values[k]` under the HEP001 order (so `-0 == +0`, NaN equals
/// nothing). Missing rows are compared like any other (a fill value listed
/// among the indexed values marks the missing rows).
pub fn compute(slice: &ColumnSlice, nrows: u64, values: &[Value]) -> Bitmap {
    let n = (nrows as usize).min(slice.values.len());
    let row_bytes = n.div_ceil(8);
    let mut bits = alloc::vec![0u8; values.len() * row_bytes];
    for (r, v) in slice.values[..n].iter().enumerate() {
        for (k, x) in values.iter().enumerate() {
            if values_equal(v, x) {
                bits[k * row_bytes + r / 8] |= 1 << (r % 8);
            }
        }
    }
    Bitmap {
        values: values.to_vec(),
        row_bytes,
        bits,
    }
}

/// Read a stored `BITMAP` and its values dataset: rank 2 `uint8` of shape
/// `(K, ≥ ceil(nrows/8))`, `K` the length of the rank-1 values dataset of
/// the column's datatype.
///
/// # Errors
/// A message describing the structural problem.
pub fn load(info: &IndexInfo, column_dtype: &Datatype, nrows: u64) -> Result<Bitmap, String> {
    let lazy = load_lazy(info, column_dtype, nrows)?;
    let shape = info.dataset.shape();
    let bits = info
        .dataset
        .read_raw()
        .map_err(|e| format!("cannot be read: {e}"))?;
    let row_bytes = usize::try_from(shape[1]).map_err(|_| String::from("rows too long"))?;
    if bits.len() as u64 != shape[0].saturating_mul(shape[1]) {
        return Err("the data does not match the shape".into());
    }
    Ok(Bitmap {
        values: lazy.values,
        row_bytes,
        bits,
    })
}

/// A stored `BITMAP` whose values are read and whose bit rows are read
/// only when asked for ([`LazyBitmap::rows`]): an equality query reads one
/// row of `ceil(NROWS / 8)` bytes, not `K` of them.
#[derive(Debug, Clone)]
pub struct LazyBitmap {
    ds: h5fmt::Dataset,
    /// The `K` indexed values (the `VALUES` dataset).
    pub values: Vec<Value>,
}

impl LazyBitmap {
    /// The rows below `nrows` marked for value `k`, in increasing order.
    ///
    /// # Errors
    /// HDF5 errors reading the bit row.
    pub fn rows(&self, k: usize, nrows: u64) -> h5fmt::Result<Vec<u64>> {
        Ok(set_bits(&self.row_bytes(k, nrows)?, nrows))
    }

    /// The first `ceil(nrows / 8)` bytes of bit row `k`.
    ///
    /// # Errors
    /// HDF5 errors reading the bit row.
    pub fn row_bytes(&self, k: usize, nrows: u64) -> h5fmt::Result<Vec<u8>> {
        use h5fmt::data::hyperslab::{Selection, SliceDim};
        let need = nrows.div_ceil(8);
        if need == 0 {
            return Ok(Vec::new());
        }
        let sel = Selection::Hyperslab(alloc::vec![
            SliceDim {
                start: k as u64,
                stride: 1,
                count: 1,
                block: 1,
            },
            SliceDim {
                start: 0,
                stride: 1,
                count: need,
                block: 1,
            },
        ]);
        self.ds.read_slice_raw(&sel)
    }
}

/// The bits of rows `[0, nrows)` of a bit row (`bits`, LSB first) as
/// words, bit `r % 64` of word `r / 64` for row `r`, ORed into `words`
/// (`ceil(nrows / 64)` of them).
pub fn or_into_words(bits: &[u8], nrows: u64, words: &mut [u64]) {
    let need = usize::try_from(nrows.div_ceil(8)).unwrap_or(usize::MAX);
    let bits = &bits[..need.min(bits.len())];
    for (w, c) in words.iter_mut().zip(bits.chunks(8)) {
        let mut a = [0u8; 8];
        a[..c.len()].copy_from_slice(c);
        *w |= u64::from_le_bytes(a);
    }
    if let (Some(last), r) = (words.last_mut(), nrows % 64) {
        if r != 0 {
            *last &= (1u64 << r) - 1;
        }
    }
}

/// Positions below `nrows` of the set bits of `bits` (LSB first).
pub fn set_bits(bits: &[u8], nrows: u64) -> Vec<u64> {
    let ones: usize = bits.iter().map(|b| b.count_ones() as usize).sum();
    let mut out = Vec::with_capacity(ones);
    let mut words = bits.chunks_exact(8);
    let mut base = 0u64;
    for w in &mut words {
        let mut x = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
        while x != 0 {
            out.push(base + u64::from(x.trailing_zeros()));
            x &= x - 1;
        }
        base += 64;
    }
    for &b in words.remainder() {
        let mut x = b;
        while x != 0 {
            out.push(base + u64::from(x.trailing_zeros()));
            x &= x - 1;
        }
        base += 8;
    }
    while out.last().is_some_and(|&r| r >= nrows) {
        out.pop();
    }
    out
}

/// Check a stored `BITMAP`'s structure and read its values dataset (see
/// [`load`]), leaving the bit rows in the file.
///
/// # Errors
/// A message describing the structural problem.
pub fn load_lazy(
    info: &IndexInfo,
    column_dtype: &Datatype,
    nrows: u64,
) -> Result<LazyBitmap, String> {
    let ds = &info.dataset;
    let shape = ds.shape();
    if shape.len() != 2 {
        return Err(format!("the dataset has rank {}, not 2", shape.len()));
    }
    if !matches!(
        ds.dtype(),
        Datatype::Integer {
            size: 1,
            signed: false,
            ..
        }
    ) {
        return Err("the datatype is not uint8".into());
    }
    let need = nrows.div_ceil(8);
    if shape[1] < need {
        return Err(format!(
            "rows have {} bytes, fewer than ceil(NROWS / 8) = {need}",
            shape[1]
        ));
    }
    let Some(vpath) = &info.params.values else {
        return Err("VALUES does not resolve to a values dataset".into());
    };
    let vds = match ds.file().object(vpath) {
        Ok(Object::Dataset(d)) => d,
        _ => return Err(format!("the values dataset {vpath} cannot be opened")),
    };
    if vds.shape().len() != 1 {
        return Err(format!("the values dataset {vpath} is not rank 1"));
    }
    if !super::minmax::same_type(vds.dtype(), column_dtype) {
        return Err(format!(
            "the values dataset {vpath} is not of the column's datatype"
        ));
    }
    if vds.shape()[0] != shape[0] {
        return Err(format!(
            "the bitmap has {} rows but the values dataset {} values",
            shape[0],
            vds.shape()[0]
        ));
    }
    let values = vds
        .read_values()
        .map_err(|e| format!("the values dataset cannot be read: {e}"))?;
    Ok(LazyBitmap {
        ds: ds.clone(),
        values,
    })
}

/// How a stored bitmap differs from the recomputation over rows
/// `[0, nrows)` (bits past `nrows` are residue): `None` when it does not.
pub fn diff(stored: &Bitmap, computed: &Bitmap, nrows: u64) -> Option<String> {
    if stored.values.len() != computed.values.len() {
        return Some("the number of values differs".into());
    }
    for k in 0..computed.values.len() {
        for r in 0..nrows {
            let (s, c) = (stored.get(k, r), computed.get(k, r));
            if s != c {
                return Some(format!(
                    "bit of row {r} for value #{k} ({}) is {}, but the row {} that value",
                    crate::text::format_value(&computed.values[k]),
                    u8::from(s),
                    if c { "holds" } else { "does not hold" }
                ));
            }
        }
    }
    None
}

/// The first non-missing row in `[0, nrows)` not marked for any value: a
/// counter-example to an `exhaustive = true` claim.
pub fn first_unlisted(bitmap: &Bitmap, slice: &ColumnSlice, nrows: u64) -> Option<u64> {
    let n = nrows.min(slice.missing.len() as u64);
    (0..n).find(|&r| {
        !slice.missing[r as usize] && !(0..bitmap.values.len()).any(|k| bitmap.get(k, r))
    })
}

/// Candidate rows for `pred` (sorted, below `nrows`), or `None` when the
/// bitmap cannot answer and every row must be considered. Equality with a
/// listed value gives that value's rows; a literal not listed gives no row
/// only when the bitmap is `exhaustive` (every non-missing value listed);
/// range predicates are answered from the listed values only when
/// exhaustive, and only when every listed value is ordered against the
/// literal.
pub fn candidate_rows(
    bitmap: &Bitmap,
    exhaustive: bool,
    nrows: u64,
    pred: &Predicate,
) -> Option<Vec<u64>> {
    let ks = select_values(&bitmap.values, exhaustive, pred)?;
    let mut rows: Vec<u64> = ks.into_iter().flat_map(|k| bitmap.rows(k, nrows)).collect();
    rows.sort_unstable();
    rows.dedup();
    Some(rows)
}

/// Which of the indexed `values` (by position) a bitmap answers `pred`
/// with, or `None` when it cannot answer (see [`candidate_rows`]).
pub fn select_values(values: &[Value], exhaustive: bool, pred: &Predicate) -> Option<Vec<usize>> {
    let mut ks: Vec<usize> = Vec::new();
    let test = |o: Ordering, p: &Predicate| match p {
        Predicate::Lt(_) => o == Ordering::Less,
        Predicate::Le(_) => o != Ordering::Greater,
        Predicate::Gt(_) => o == Ordering::Greater,
        Predicate::Ge(_) => o != Ordering::Less,
        _ => o == Ordering::Equal,
    };
    let lits: Vec<&Value> = match pred {
        Predicate::In(vs) => vs.iter().collect(),
        Predicate::Eq(v)
        | Predicate::Lt(v)
        | Predicate::Le(v)
        | Predicate::Gt(v)
        | Predicate::Ge(v) => alloc::vec![v],
    };
    let range = !matches!(pred, Predicate::Eq(_) | Predicate::In(_));
    if range && !exhaustive {
        return None;
    }
    for lit in lits {
        let mut found = false;
        for (k, x) in values.iter().enumerate() {
            if range {
                match cmp_values(x, lit) {
                    Some(o) if test(o, pred) => ks.push(k),
                    Some(_) => {}
                    None => return None,
                }
            } else {
                match cmp_values(x, lit) {
                    Some(Ordering::Equal) => {
                        ks.push(k);
                        found = true;
                    }
                    Some(_) => {}
                    // Not comparable (another family, NaN): cannot answer.
                    None => return None,
                }
            }
        }
        if !range && !found && !exhaustive {
            return None;
        }
    }
    ks.sort_unstable();
    ks.dedup();
    Some(ks)
}
