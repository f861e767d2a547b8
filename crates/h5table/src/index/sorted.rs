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
use h5fmt::data::hyperslab::{Selection, SliceDim};
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

/// Check a stored `SORTED_ROWS` dataset's structure without reading its
/// entries: rank 1, an unsigned integer type, at least `nrows` entries,
/// `nan_tail_length` and `fill_tail_length` present, `ordered` true.
/// Returns the tails as `(nan_tail_length, fill_tail_length)`.
///
/// # Errors
/// A message describing the structural problem.
pub fn check_structure(info: &IndexInfo, nrows: u64) -> Result<(u64, u64), String> {
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
    Ok((nan, fill))
}

/// Read a stored `SORTED_ROWS` dataset whole (see [`check_structure`] for
/// what it must be).
///
/// # Errors
/// A message describing the structural problem.
pub fn load(info: &IndexInfo, nrows: u64) -> Result<SortedRows, String> {
    let (nan, fill) = check_structure(info, nrows)?;
    let mut lazy = LazyPerm::new(info.dataset.clone(), nan, fill);
    let perm = lazy
        .range(0..lazy.len())
        .map_err(|e| format!("cannot be read: {e}"))?;
    Ok(SortedRows {
        perm,
        nan_tail_length: nan,
        fill_tail_length: fill,
    })
}

/// Entries of a permutation by rank: in memory ([`SortedRows`]) or read
/// from the file as the binary search needs them ([`LazyPerm`]).
pub trait PermSource {
    /// The error of reading entries.
    type Error;
    /// The number of entries.
    fn len(&self) -> u64;
    /// Whether there are no entries.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// `nan_tail_length`.
    fn nan_tail_length(&self) -> u64;
    /// `fill_tail_length`.
    fn fill_tail_length(&self) -> u64;
    /// The entries of ranks `ranks` (within `[0, len)`).
    ///
    /// # Errors
    /// Errors reading them.
    fn range(&mut self, ranks: core::ops::Range<u64>) -> Result<Vec<u64>, Self::Error>;
    /// The entry of rank `rank`.
    ///
    /// # Errors
    /// Errors reading it.
    fn get(&mut self, rank: u64) -> Result<u64, Self::Error> {
        Ok(self
            .range(rank..rank + 1)?
            .first()
            .copied()
            .unwrap_or(u64::MAX))
    }
}

/// A [`SortedRows`] as a [`PermSource`].
#[derive(Debug, Clone, Copy)]
pub struct InMemory<'a>(pub &'a SortedRows);

impl PermSource for InMemory<'_> {
    type Error = core::convert::Infallible;
    fn len(&self) -> u64 {
        self.0.perm.len() as u64
    }
    fn nan_tail_length(&self) -> u64 {
        self.0.nan_tail_length
    }
    fn fill_tail_length(&self) -> u64 {
        self.0.fill_tail_length
    }
    fn range(&mut self, ranks: core::ops::Range<u64>) -> Result<Vec<u64>, Self::Error> {
        let a = usize::try_from(ranks.start)
            .unwrap_or(usize::MAX)
            .min(self.0.perm.len());
        let b = usize::try_from(ranks.end)
            .unwrap_or(usize::MAX)
            .min(self.0.perm.len());
        Ok(self.0.perm[a..b.max(a)].to_vec())
    }
    fn get(&mut self, rank: u64) -> Result<u64, Self::Error> {
        Ok(usize::try_from(rank)
            .ok()
            .and_then(|r| self.0.perm.get(r))
            .copied()
            .unwrap_or(u64::MAX))
    }
}

/// A stored permutation read on demand: a binary search touches a few
/// dozen entries (the dataset's chunk cache keeps the chunks it revisits),
/// not the whole dataset.
#[derive(Debug, Clone)]
pub struct LazyPerm {
    ds: h5fmt::Dataset,
    nan: u64,
    fill: u64,
}

impl LazyPerm {
    /// The permutation stored in `ds` (checked by [`check_structure`]) with its tails.
    pub fn new(ds: h5fmt::Dataset, nan_tail_length: u64, fill_tail_length: u64) -> LazyPerm {
        LazyPerm {
            ds,
            nan: nan_tail_length,
            fill: fill_tail_length,
        }
    }
}

impl PermSource for LazyPerm {
    type Error = h5fmt::Error;
    fn len(&self) -> u64 {
        self.ds.shape().first().copied().unwrap_or(0)
    }
    fn nan_tail_length(&self) -> u64 {
        self.nan
    }
    fn fill_tail_length(&self) -> u64 {
        self.fill
    }
    fn range(&mut self, ranks: core::ops::Range<u64>) -> Result<Vec<u64>, h5fmt::Error> {
        let end = ranks.end.min(self.len());
        if ranks.start >= end {
            return Ok(Vec::new());
        }
        let (size, big) = match self.ds.dtype() {
            Datatype::Integer { size, order, .. } => (
                *size as usize,
                *order == h5fmt::format::datatype::ByteOrder::Big,
            ),
            _ => {
                return Err(h5fmt::Error::unsupported(
                    "SORTED_ROWS entries are not integers",
                ))
            }
        };
        if size == 0 || size > 8 {
            return Err(h5fmt::Error::unsupported(format!(
                "SORTED_ROWS entries of {size} bytes"
            )));
        }
        let sel = Selection::Hyperslab(alloc::vec![SliceDim {
            start: ranks.start,
            stride: 1,
            count: end - ranks.start,
            block: 1,
        }]);
        let raw = self.ds.read_slice_raw(&sel)?;
        let mut out = Vec::new();
        out.try_reserve_exact(raw.len() / size)
            .map_err(|_| h5fmt::Error::limit("SORTED_ROWS range too large"))?;
        out.extend(raw.chunks_exact(size).map(|b| {
            let mut v = [0u8; 8];
            if big {
                v[8 - size..].copy_from_slice(b);
                u64::from_be_bytes(v)
            } else {
                v[..size].copy_from_slice(b);
                u64::from_le_bytes(v)
            }
        }));
        Ok(out)
    }
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
    candidate_rows_in(
        &mut InMemory(sorted),
        nrows,
        pred,
        &mut |r| value_at(r),
        &mut |e| match e {},
    )
}

/// [`candidate_rows`] over any [`PermSource`]: entries are read as the
/// search needs them (about 2·log2(NROWS) probes for `=`, the second search
/// confined to the ranks the first one left), then the matching ranks.
/// `perm_err` converts the source's errors.
///
/// # Errors
/// Errors of `value_at` and of the permutation source.
pub fn candidate_rows_in<P: PermSource, E>(
    perm: &mut P,
    nrows: u64,
    pred: &Predicate,
    value_at: &mut dyn FnMut(u64) -> Result<Value, E>,
    perm_err: &mut dyn FnMut(P::Error) -> E,
) -> Result<Option<Vec<u64>>, E> {
    match rank_ranges(perm, nrows, pred, value_at, perm_err)? {
        Some(r) => rows_of_ranks(perm, nrows, &r).map_err(perm_err),
        None => Ok(None),
    }
}

/// The ranks of the rows that may satisfy `pred`, as sorted, disjoint
/// ranges within the ordered ranks; `None` when the index cannot answer
/// (see [`candidate_rows`]). Ranges of several predicates on one column
/// intersect as sets of ranks, so a range predicate `a <= x < b` costs two
/// searches and reads only the ranks between them.
///
/// # Errors
/// Errors of `value_at` and of the permutation source.
pub fn rank_ranges<P: PermSource, E>(
    perm: &mut P,
    nrows: u64,
    pred: &Predicate,
    value_at: &mut dyn FnMut(u64) -> Result<Value, E>,
    perm_err: &mut dyn FnMut(P::Error) -> E,
) -> Result<Option<Vec<core::ops::Range<u64>>>, E> {
    rank_ranges_with(
        perm,
        nrows,
        pred,
        value_at,
        perm_err,
        &mut ProbeMemory::default(),
    )
}

/// The values at the ranks a search probed, kept across the searches of
/// one column's predicates ([`rank_ranges_with`]): each later bound search
/// starts inside the bracket the known ranks leave it, with their values
/// as its ends (no probe of the range's ends, fewer guesses), and a rank is
/// never probed twice. On a compressed column every probe decodes a chunk.
#[derive(Debug, Clone, Default)]
pub struct ProbeMemory {
    /// (rank, value) sorted by rank.
    known: Vec<(u64, Value)>,
}

impl ProbeMemory {
    fn get(&self, rank: u64) -> Option<&Value> {
        self.known
            .binary_search_by_key(&rank, |(r, _)| *r)
            .ok()
            .and_then(|i| self.known.get(i))
            .map(|(_, v)| v)
    }

    fn put(&mut self, rank: u64, v: Value) {
        if let Err(i) = self.known.binary_search_by_key(&rank, |(r, _)| *r) {
            self.known.insert(i, (rank, v));
        }
    }

    /// The number of ranks known.
    pub fn len(&self) -> usize {
        self.known.len()
    }

    /// Whether no rank is known.
    pub fn is_empty(&self) -> bool {
        self.known.is_empty()
    }
}

/// [`rank_ranges`] remembering every probe in `memory`, and starting each
/// bound search from what `memory` already knows (pass the same memory to
/// the searches of one column's predicates, e.g. both ends of a range).
/// The answer is the same as without the memory when the permutation is
/// sorted; probes of an unsorted (tampered) one may differ, never panic.
///
/// # Errors
/// Errors of `value_at` and of the permutation source.
pub fn rank_ranges_with<P: PermSource, E>(
    perm: &mut P,
    nrows: u64,
    pred: &Predicate,
    value_at: &mut dyn FnMut(u64) -> Result<Value, E>,
    perm_err: &mut dyn FnMut(P::Error) -> E,
    memory: &mut ProbeMemory,
) -> Result<Option<Vec<core::ops::Range<u64>>>, E> {
    let Some(len) = nrows
        .checked_sub(perm.nan_tail_length())
        .and_then(|n| n.checked_sub(perm.fill_tail_length()))
    else {
        return Ok(None);
    };
    if perm.len() < len {
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
        // First rank in [lo, hi) whose value is >= lit (strict=false) or
        // > lit (strict=true); also the lowest rank seen holding a value
        // > lit (an upper limit for the other bound). Numeric columns are
        // searched by interpolation (see `Interp`); any probe order keeps
        // the search exact, only the number of probes changes.
        let lit_key = num_key(lit);
        let mut bound = |strict: bool, mut lo: u64, mut hi: u64| -> Result<Option<(u64, u64)>, E> {
            let mut above = hi;
            let mut interp = Interp::new(lit_key, hi - lo);
            // Ranks probed before (another bound, another predicate):
            // narrow the bracket to them, their values its ends.
            let mut seeded = false;
            for (k, v) in &memory.known {
                if *k < lo || *k >= hi {
                    continue;
                }
                let Some(o) = cmp_values(v, lit) else {
                    continue;
                };
                if o == Ordering::Greater {
                    above = above.min(*k);
                }
                let before = if strict {
                    o != Ordering::Greater
                } else {
                    o == Ordering::Less
                };
                if before {
                    lo = *k + 1;
                    interp.lo_key = num_key(v);
                } else {
                    hi = *k;
                    interp.hi_key = num_key(v);
                }
                seeded = true;
            }
            if seeded {
                interp.budget = 2 * (64 - (hi - lo).leading_zeros()) + 4;
            }
            while lo < hi {
                let mid = interp.next(lo, hi);
                let v = match memory.get(mid) {
                    Some(v) => v.clone(),
                    None => {
                        let row = perm.get(mid).map_err(&mut *perm_err)?;
                        if row >= nrows {
                            return Ok(None);
                        }
                        let v = value_at(row)?;
                        memory.put(mid, v.clone());
                        v
                    }
                };
                let Some(o) = cmp_values(&v, lit) else {
                    return Ok(None);
                };
                if o == Ordering::Greater {
                    above = above.min(mid);
                }
                let before = if strict {
                    o != Ordering::Greater
                } else {
                    o == Ordering::Less
                };
                let span = hi - lo;
                if before {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
                interp.probed(mid, before, num_key(&v), span);
            }
            Ok(Some((lo, above)))
        };
        let r = match op {
            0 => match bound(false, 0, len)? {
                Some((a, above)) => bound(true, a, above)?.map(|(b, _)| (a, b)),
                None => None,
            },
            1 => bound(false, 0, len)?.map(|(b, _)| (0, b)),
            2 => bound(true, 0, len)?.map(|(b, _)| (0, b)),
            3 => bound(true, 0, len)?.map(|(b, _)| (b, len)),
            _ => bound(false, 0, len)?.map(|(b, _)| (b, len)),
        };
        match r {
            Some(r) => ranges.push(r),
            None => return Ok(None),
        }
    }
    ranges.retain(|(a, b)| a < b);
    ranges.sort_unstable();
    let mut out: Vec<core::ops::Range<u64>> = Vec::new();
    for (a, b) in ranges {
        match out.last_mut() {
            Some(last) if a <= last.end => last.end = last.end.max(b),
            _ => out.push(a..b),
        }
    }
    Ok(Some(out))
}

/// A value as a number for interpolation (integers and finite floats).
fn num_key(v: &Value) -> Option<f64> {
    let x = match v {
        Value::Int(i) => *i as f64,
        Value::UInt(u) => *u as f64,
        _ => super::order::float_of(v)?,
    };
    x.is_finite().then_some(x)
}

/// Probe order of one bound search over a numeric column: the ranks where
/// the literal would sit were the values between the two nearest probed
/// ranks evenly spread (interpolation search), each such probe followed by
/// one a square root of the span further on the literal's side, so that
/// the bracket closes around it: about 2·log2(log2(n)) probes on evenly
/// spread values, against log2(n) for bisection. Each probe of a
/// compressed column decodes a chunk. After 2·log2(n) + 4 probes (values
/// far from even), it bisects, so the search stays O(log n).
struct Interp {
    lit: Option<f64>,
    /// The keys of the ranks just below the bracket and at its end.
    lo_key: Option<f64>,
    hi_key: Option<f64>,
    /// A follow-up probe chosen by the last interpolation.
    follow: Option<u64>,
    /// Interpolation probes left before bisecting.
    budget: u32,
    /// Whether the last probe was an interpolation.
    guessed: bool,
}

impl Interp {
    /// Spans below this are bisected (a few probes either way).
    const MIN_SPAN: u64 = 32;

    fn new(lit: Option<f64>, span: u64) -> Interp {
        Interp {
            lit,
            lo_key: None,
            hi_key: None,
            follow: None,
            budget: 2 * (64 - span.leading_zeros()) + 4,
            guessed: false,
        }
    }

    /// The next rank to probe in `[lo, hi)` (`lo < hi`).
    fn next(&mut self, lo: u64, hi: u64) -> u64 {
        self.guessed = false;
        let bisect = lo + (hi - lo) / 2;
        let Some(x) = self.lit else { return bisect };
        if hi - lo < Self::MIN_SPAN || self.budget == 0 {
            return bisect;
        }
        self.budget -= 1;
        if let Some(f) = self.follow.take() {
            if (lo..hi).contains(&f) {
                return f;
            }
        }
        let (Some(a), Some(b)) = (self.lo_key, self.hi_key) else {
            // The bracket's end values first.
            return if self.lo_key.is_none() { lo } else { hi - 1 };
        };
        if b.partial_cmp(&a) != Some(Ordering::Greater) {
            return bisect;
        }
        let f = ((x - a) / (b - a)).clamp(0.0, 1.0);
        // Truncation of a value in [0, span]: the guess, clamped into the bracket.
        let m = lo.saturating_add((f * (hi - lo) as f64) as u64);
        self.guessed = true;
        m.clamp(lo, hi - 1)
    }

    /// Record the probe of `mid` (`before`: the literal lies above it),
    /// the probed value's key, and the bracket's span before the probe.
    fn probed(&mut self, mid: u64, before: bool, key: Option<f64>, span: u64) {
        if before {
            self.lo_key = key;
        } else {
            self.hi_key = key;
        }
        if self.guessed && span >= Self::MIN_SPAN {
            // The guess is off by about sqrt(span) ranks on evenly spread
            // values: step that far to the literal's side.
            let d = span.isqrt().max(1);
            self.follow = Some(if before {
                mid.saturating_add(d)
            } else {
                mid.saturating_sub(d)
            });
        }
    }
}

/// The rows of the ranks `ranks`, sorted; `None` when an entry is not
/// below `nrows` (the index cannot answer).
///
/// # Errors
/// Errors of the permutation source.
pub fn rows_of_ranks<P: PermSource>(
    perm: &mut P,
    nrows: u64,
    ranks: &[core::ops::Range<u64>],
) -> Result<Option<Vec<u64>>, P::Error> {
    let mut rows: Vec<u64> = Vec::new();
    for r in ranks {
        for row in perm.range(r.clone())? {
            if row >= nrows {
                return Ok(None);
            }
            rows.push(row);
        }
    }
    rows.sort_unstable();
    rows.dedup();
    Ok(Some(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// xorshift64*: deterministic test data without a dependency.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
        fn unit(&mut self) -> f64 {
            (self.next() >> 11) as f64 / (1u64 << 53) as f64
        }
    }

    /// The rows matching `pred` found by the search, against a filter of
    /// every row (the oracle), and the number of values probed.
    fn check(values: &[Value], sorted: &SortedRows, pred: &Predicate) -> usize {
        let n = values.len() as u64;
        let mut probes = 0usize;
        let got = candidate_rows(sorted, n, pred, &mut |r| {
            probes += 1;
            Ok::<_, ()>(values[r as usize].clone())
        })
        .unwrap()
        .unwrap();
        let want: Vec<u64> = (0..n)
            .filter(|&r| {
                let o = cmp_values(
                    &values[r as usize],
                    match pred {
                        Predicate::Eq(v)
                        | Predicate::Lt(v)
                        | Predicate::Le(v)
                        | Predicate::Gt(v)
                        | Predicate::Ge(v) => v,
                        Predicate::In(_) => unreachable!(),
                    },
                )
                .unwrap();
                match pred {
                    Predicate::Eq(_) => o == Ordering::Equal,
                    Predicate::Lt(_) => o == Ordering::Less,
                    Predicate::Le(_) => o != Ordering::Greater,
                    Predicate::Gt(_) => o == Ordering::Greater,
                    Predicate::Ge(_) => o != Ordering::Less,
                    Predicate::In(_) => unreachable!(),
                }
            })
            .collect();
        assert_eq!(got, want, "{pred:?}");
        probes
    }

    /// The permutation by a plain stable sort (ties by row).
    fn sort(values: &[Value]) -> SortedRows {
        let mut perm: Vec<u64> = (0..values.len() as u64).collect();
        perm.sort_by(|&a, &b| cmp_values(&values[a as usize], &values[b as usize]).unwrap());
        SortedRows {
            perm,
            nan_tail_length: 0,
            fill_tail_length: 0,
        }
    }

    fn preds(lit: Value) -> [Predicate; 5] {
        [
            Predicate::Eq(lit.clone()),
            Predicate::Lt(lit.clone()),
            Predicate::Le(lit.clone()),
            Predicate::Gt(lit.clone()),
            Predicate::Ge(lit),
        ]
    }

    /// The interpolating search finds exactly the rows a filter finds on
    /// evenly spread, skewed, clustered and repetitive values, and probes
    /// no more than a bisection's bound allows (about 3·log2(n) per bound).
    #[test]
    fn search_matches_a_filter_on_any_distribution() {
        let n = 4_000usize;
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut sets: Vec<(&str, Vec<Value>)> = Vec::new();
        sets.push((
            "uniform f32",
            (0..n)
                .map(|_| Value::F32(rng.unit() as f32 * 1000.0))
                .collect(),
        ));
        sets.push((
            "skewed f64",
            (0..n)
                .map(|_| Value::F64(rng.unit().powi(12) * 1e9))
                .collect(),
        ));
        sets.push((
            "clustered i64",
            (0..n)
                .map(|i| {
                    Value::Int(if i % 2 == 0 {
                        (rng.next() % 100) as i64
                    } else {
                        i64::MAX - (rng.next() % 100) as i64
                    })
                })
                .collect(),
        ));
        sets.push((
            "few values u64",
            (0..n).map(|_| Value::UInt(rng.next() % 5)).collect(),
        ));
        sets.push((
            "wide u64",
            (0..n).map(|_| Value::UInt(rng.next())).collect(),
        ));
        let bound = 2 * (3 * 12 + 8);
        for (name, vals) in &sets {
            let sorted = sort(vals);
            let mut lits: Vec<Value> = (0..6)
                .map(|_| vals[(rng.next() % n as u64) as usize].clone())
                .collect();
            lits.push(match &vals[0] {
                Value::F32(_) => Value::F32(500.0),
                Value::F64(_) => Value::F64(3.5),
                Value::Int(_) => Value::Int(1 << 40),
                _ => Value::UInt(3),
            });
            for lit in lits {
                for p in preds(lit) {
                    let probes = check(vals, &sorted, &p);
                    assert!(probes <= bound, "{name} {p:?}: {probes} probes");
                }
            }
        }
        // Evenly spread values: fewer probes than bisection's 12.
        let uni = &sets[0].1;
        let p = check(uni, &sort(uni), &Predicate::Ge(Value::F32(500.0)));
        assert!(p <= 9, "{p} probes on evenly spread values");
        // Both ends of ranges searched with one ProbeMemory: the rows a
        // filter finds; on evenly spread values the second search costs
        // less than the first.
        for (name, vals) in &sets {
            let sorted = sort(vals);
            for _ in 0..8 {
                let mut a = vals[(rng.next() % n as u64) as usize].clone();
                let mut b = vals[(rng.next() % n as u64) as usize].clone();
                if cmp_values(&a, &b) == Some(Ordering::Greater) {
                    core::mem::swap(&mut a, &mut b);
                }
                for (lo, hi) in [
                    (Predicate::Ge(a.clone()), Predicate::Lt(b.clone())),
                    (Predicate::Gt(a.clone()), Predicate::Le(b.clone())),
                    (
                        Predicate::Eq(a.clone()),
                        Predicate::In(alloc::vec![a.clone(), b.clone()]),
                    ),
                ] {
                    let (got, _) = range_search(vals, &sorted, &[&lo, &hi]);
                    let want: Vec<u64> = (0..n as u64)
                        .filter(|&r| [&lo, &hi].iter().all(|p| filter(&vals[r as usize], p)))
                        .collect();
                    assert_eq!(got, want, "{name} {lo:?} {hi:?}");
                }
            }
        }
        let (_, probes) = range_search(
            uni,
            &sort(uni),
            &[
                &Predicate::Ge(Value::F32(500.0)),
                &Predicate::Lt(Value::F32(502.0)),
            ],
        );
        assert!(
            probes[1] < probes[0],
            "probes of the two bounds: {probes:?}"
        );
    }

    /// Whether `v` satisfies `p` (the oracle: a comparison per row).
    fn filter(v: &Value, p: &Predicate) -> bool {
        let o = |l: &Value| cmp_values(v, l).unwrap();
        match p {
            Predicate::Eq(l) => o(l) == Ordering::Equal,
            Predicate::Lt(l) => o(l) == Ordering::Less,
            Predicate::Le(l) => o(l) != Ordering::Greater,
            Predicate::Gt(l) => o(l) == Ordering::Greater,
            Predicate::Ge(l) => o(l) != Ordering::Less,
            Predicate::In(ls) => ls.iter().any(|l| o(l) == Ordering::Equal),
        }
    }

    /// The rows of the predicates' rank ranges intersected, searched with
    /// one `ProbeMemory`, and the values each search probed.
    fn range_search(
        values: &[Value],
        sorted: &SortedRows,
        preds: &[&Predicate],
    ) -> (Vec<u64>, Vec<usize>) {
        let n = values.len() as u64;
        let mut memory = ProbeMemory::default();
        let mut keep = alloc::vec![true; values.len()];
        let mut probes = Vec::new();
        for p in preds {
            let mut k = 0usize;
            let ranges = rank_ranges_with(
                &mut InMemory(sorted),
                n,
                p,
                &mut |r| {
                    k += 1;
                    Ok::<_, ()>(values[r as usize].clone())
                },
                &mut |e| match e {},
                &mut memory,
            )
            .unwrap()
            .unwrap();
            probes.push(k);
            let mut inside = alloc::vec![false; values.len()];
            for r in ranges {
                for rank in r {
                    inside[sorted.perm[rank as usize] as usize] = true;
                }
            }
            for (x, i) in keep.iter_mut().zip(inside) {
                *x &= i;
            }
        }
        let rows = (0..n).filter(|&r| keep[r as usize]).collect();
        (rows, probes)
    }

    /// A permutation that is not sorted (a tampered index under `Trust`)
    /// with a memory of earlier probes: some answer, no panic.
    #[test]
    fn probe_memory_on_an_unsorted_permutation_does_not_panic() {
        let mut rng = Rng(7);
        let vals: Vec<Value> = (0..500)
            .map(|_| Value::Int((rng.next() % 50) as i64))
            .collect();
        let perm: Vec<u64> = (0..500).map(|_| rng.next() % 500).collect();
        let s = SortedRows {
            perm,
            nan_tail_length: 0,
            fill_tail_length: 0,
        };
        let mut memory = ProbeMemory::default();
        for lit in 0..60 {
            for p in preds(Value::Int(lit)) {
                let _ = rank_ranges_with(
                    &mut InMemory(&s),
                    500,
                    &p,
                    &mut |r| Ok::<_, ()>(vals[r as usize].clone()),
                    &mut |e| match e {},
                    &mut memory,
                );
            }
        }
        assert!(!memory.is_empty());
    }
}
