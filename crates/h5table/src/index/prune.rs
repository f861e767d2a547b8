//! Conservative pruning with search indexes for the query engine (§10, §16).
//!
//! [`ColumnIndexes::open`] loads the indexes of one column under an
//! [`IndexPolicy`]; [`ColumnIndexes::candidates`] then narrows the rows a
//! predicate may match. The answer is always a superset of the matching
//! rows (under the README's SQL semantics: missing rows and NaN never
//! satisfy a comparison) when the indexes are correct, which
//! [`IndexPolicy::Verify`] checks first and [`IndexPolicy::Trust`] assumes.
//! The engine must still evaluate the predicate on the candidate rows.
//!
//! Predicates are read under the HEP001 index order ([`super::order`]):
//! numbers numerically, strings and opaque values byte-wise (padding of
//! fixed strings stripped), enums and categorical columns by their integer
//! code. An engine comparing enums by member name or categoricals by label
//! must translate the literal to a code first (for `=`/`IN`), or not prune.
//! A numeric literal not exactly representable at the column's width, or a
//! string literal ending in a fixed-length column's padding byte, gets
//! [`Candidates::All`] (see [`literal_is_exact`]): engines differ on how to
//! compare those, and pruning must be safe under either reading.

use super::bitmap::{self, Bitmap, LazyBitmap};
use super::bloom::{self, ChunkBloom};
use super::minmax::{self, MinMaxEntry};
use super::sorted::{self, LazyPerm, SortedRows};
use super::verify::verify_index;
use super::{chunk_count, chunk_range, discover, discover_column, IndexInfo, IndexKind};
use crate::check::{Finding, Severity};
use crate::error::Result;
use crate::model::{Column, ColumnSlice, Table};
use alloc::boxed::Box;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::Value;

/// Whether, and how, search indexes may be consulted (§16).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum IndexPolicy {
    /// Never consult an index (the safe default: indexes are untrusted).
    #[default]
    Ignore,
    /// Recompute each index from its column and use only those that are
    /// correct (saves no I/O; useful for checking and for repeated queries).
    Verify,
    /// Use every structurally valid, current index as stored.
    Trust,
}

/// A predicate on one column: `col OP literal` or `col IN (…)`.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `=`
    Eq(Value),
    /// `<`
    Lt(Value),
    /// `<=`
    Le(Value),
    /// `>`
    Gt(Value),
    /// `>=`
    Ge(Value),
    /// `IN (…)`
    In(Vec<Value>),
}

/// The rows a predicate may match.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Candidates {
    /// Every row `[0, NROWS)` (no index could narrow them).
    All,
    /// Only these rows: sorted, disjoint, non-empty ranges within `[0, NROWS)`.
    Rows(Vec<Range<u64>>),
}

impl Candidates {
    /// Whether `row` is a candidate.
    pub fn contains(&self, row: u64) -> bool {
        match self {
            Candidates::All => true,
            Candidates::Rows(rs) => {
                let i = rs.partition_point(|r| r.end <= row);
                rs.get(i).is_some_and(|r| r.contains(&row))
            }
        }
    }

    /// The number of candidate rows, given the table's `nrows`.
    pub fn count(&self, nrows: u64) -> u64 {
        match self {
            Candidates::All => nrows,
            Candidates::Rows(rs) => rs.iter().map(|r| r.end - r.start).sum(),
        }
    }

    /// Rows of both.
    pub fn intersect(self, other: Candidates) -> Candidates {
        match (self, other) {
            (Candidates::All, o) | (o, Candidates::All) => o,
            (Candidates::Rows(a), Candidates::Rows(b)) => {
                let (mut i, mut j) = (0, 0);
                let mut out: Vec<Range<u64>> = Vec::new();
                while i < a.len() && j < b.len() {
                    let lo = a[i].start.max(b[j].start);
                    let hi = a[i].end.min(b[j].end);
                    if lo < hi {
                        out.push(lo..hi);
                    }
                    if a[i].end < b[j].end {
                        i += 1;
                    } else {
                        j += 1;
                    }
                }
                Candidates::Rows(out)
            }
        }
    }

    /// Candidates from row numbers (any order, duplicates allowed); rows at
    /// or past `nrows` are dropped.
    pub fn from_rows(rows: impl IntoIterator<Item = u64>, nrows: u64) -> Candidates {
        let mut v: Vec<u64> = rows.into_iter().filter(|&r| r < nrows).collect();
        v.sort_unstable();
        v.dedup();
        Candidates::from_sorted_rows(&v)
    }

    /// Candidates from increasing, distinct row numbers (all below NROWS).
    pub fn from_sorted_rows(rows: &[u64]) -> Candidates {
        let mut out: Vec<Range<u64>> = Vec::new();
        for &r in rows {
            match out.last_mut() {
                Some(last) if last.end == r => last.end = r + 1,
                _ => out.push(r..r + 1),
            }
        }
        Candidates::Rows(out)
    }
}

/// The chunks (below `nchunks`) holding a candidate row of `acc`.
fn candidate_chunk_list(
    acc: &Candidates,
    nchunks: u64,
    nrows: u64,
    chunk_len: Option<u64>,
) -> Vec<u64> {
    match (acc, chunk_len) {
        (Candidates::Rows(rs), Some(l)) if l > 0 => {
            let mut out: Vec<u64> = Vec::new();
            for r in rs {
                let (a, b) = (r.start / l, r.end.min(nrows).div_ceil(l).min(nchunks));
                for c in a.max(out.last().map_or(0, |&x| x + 1))..b {
                    out.push(c);
                }
            }
            out
        }
        _ => (0..nchunks).collect(),
    }
}

/// Whether a literal means one value of the column's type whatever the
/// engine's comparison rule: a number exactly representable at the column's
/// width (an engine may compare numerically or cast the literal to the
/// column's type first, as numpy does — they agree only then), a string
/// without trailing padding bytes of a fixed-length column (an engine may or
/// may not strip them). NaN literals pass (no index answers for them).
/// Other literals make [`ColumnIndexes::candidates`] answer
/// [`Candidates::All`].
pub fn literal_is_exact(dtype: &h5fmt::Datatype, v: &Value) -> bool {
    use h5fmt::Datatype as D;
    if super::order::is_nan(v) {
        return true;
    }
    match dtype {
        D::Integer { .. } | D::Float { .. } => super::order::canonical_bytes(dtype, v).is_some(),
        D::String { .. } => {
            let pad = super::order::string_pad_byte(dtype).unwrap_or(0);
            match v {
                Value::Str(s) => s.as_bytes().last() != Some(&pad),
                Value::RawStr(b) => b.last() != Some(&pad),
                _ => true,
            }
        }
        _ => true,
    }
}

/// Rank ranges of one predicate from a `SORTED_ROWS` index, given a value reader.
type RankSearch<'a> = dyn FnMut(&Predicate, &mut dyn FnMut(u64) -> Result<Value>) -> Result<Option<Vec<Range<u64>>>>
    + 'a;

/// A loaded index's content.
#[derive(Debug, Clone)]
enum Loaded {
    MinMax(Vec<MinMaxEntry>),
    Sorted(SortedRows),
    /// Read as the binary search needs it (`Trust`: nothing verified the whole).
    SortedLazy(LazyPerm),
    Bitmap(Bitmap, bool),
    /// Bit rows read when asked for (`Trust`).
    BitmapLazy(LazyBitmap, bool),
    Bloom(ChunkBloom),
    /// Checked, read when consulted (`Trust`: skipped when an exact index answered).
    BloomLazy(Box<IndexInfo>),
}

/// The usable search indexes of one column, loaded under a policy.
#[derive(Debug, Clone)]
pub struct ColumnIndexes {
    column: Column,
    nrows: u64,
    loaded: Vec<(IndexInfo, Loaded)>,
    rejected: Vec<Finding>,
    values: Option<ColumnSlice>,
}

impl ColumnIndexes {
    /// Load the indexes of column `column` of `table`. Under
    /// [`IndexPolicy::Ignore`] none; otherwise every index its
    /// `SEARCH_INDEX_LIST` references that is of a known kind, not stale,
    /// structurally valid and — under [`IndexPolicy::Verify`] — equal to its
    /// recomputation.
    ///
    /// Indexes that cannot be listed, loaded or verified are left out and
    /// explained in [`ColumnIndexes::rejected`]: pruning is optional, so
    /// their failures never fail the query.
    ///
    /// # Errors
    /// `Usage` for an unknown column.
    pub fn open(table: &Table, column: &str, policy: IndexPolicy) -> Result<ColumnIndexes> {
        let col = table.column(column)?.clone();
        let nrows = table.nrows();
        let mut me = ColumnIndexes {
            column: col,
            nrows,
            loaded: Vec::new(),
            rejected: Vec::new(),
            values: None,
        };
        if policy == IndexPolicy::Ignore {
            return Ok(me);
        }
        if nrows > me.column.extent() {
            // Not a conformant table (§12 item 2): no index describes it.
            return Ok(me);
        }
        let d = match discover_column(table, column)
            .transpose()
            .unwrap_or_else(|| discover(table))
        {
            Ok(d) => d,
            Err(e) => {
                // Pruning is optional: no index rather than no query.
                me.rejected.push(super::warning(
                    table.path(),
                    "§10.1",
                    alloc::format!("search indexes cannot be listed: {e}"),
                ));
                return Ok(me);
            }
        };
        let nchunks = chunk_count(nrows, me.column.chunk_len());
        for info in d.indexes {
            if info.column.as_deref() != Some(column) || !info.usable() {
                continue;
            }
            // Structural findings on this index disqualify it.
            let structural: Vec<&Finding> = d
                .findings
                .iter()
                .filter(|f| f.path == info.path && f.severity == Severity::Error)
                .collect();
            if !structural.is_empty() {
                me.rejected.extend(structural.into_iter().cloned());
                continue;
            }
            if policy == IndexPolicy::Verify {
                if me.values.is_none() {
                    match me.column.read(0..nrows) {
                        Ok(s) => me.values = Some(s),
                        Err(e) => {
                            me.rejected.push(super::warning(
                                &info.path,
                                "§16",
                                alloc::format!(
                                    "column {column:?} cannot be read, the index is not verified: {e}"
                                ),
                            ));
                            continue;
                        }
                    }
                }
                let Some(slice) = me.values.as_ref() else {
                    continue;
                };
                let findings = verify_index(table, &me.column, &info, slice);
                let errors: Vec<Finding> = findings
                    .iter()
                    .filter(|f| f.severity == Severity::Error)
                    .cloned()
                    .collect();
                if !errors.is_empty() {
                    me.rejected.extend(errors);
                    continue;
                }
            }
            let dtype = me.column.dtype();
            let loaded = match info.kind {
                IndexKind::ChunkMinMax => minmax::load(&info, dtype).map(Loaded::MinMax),
                IndexKind::SortedRows if policy == IndexPolicy::Trust => {
                    sorted::check_structure(&info, nrows).map(|(nan, fill)| {
                        Loaded::SortedLazy(LazyPerm::new(info.dataset.clone(), nan, fill))
                    })
                }
                IndexKind::SortedRows => sorted::load(&info, nrows).map(Loaded::Sorted),
                IndexKind::Bitmap if policy == IndexPolicy::Trust => {
                    bitmap::load_lazy(&info, dtype, nrows).map(|b| {
                        let exhaustive = info.params.exhaustive == Some(true);
                        Loaded::BitmapLazy(b, exhaustive)
                    })
                }
                IndexKind::Bitmap => bitmap::load(&info, dtype, nrows).map(|b| {
                    let mut exhaustive = info.params.exhaustive == Some(true);
                    if exhaustive && policy == IndexPolicy::Verify {
                        if let Some(s) = &me.values {
                            exhaustive = bitmap::first_unlisted(&b, s, nrows).is_none();
                        }
                    }
                    Loaded::Bitmap(b, exhaustive)
                }),
                IndexKind::ChunkBloom if policy == IndexPolicy::Trust => {
                    bloom::check_structure(&info, nchunks)
                        .map(|()| Loaded::BloomLazy(Box::new(info.clone())))
                }
                IndexKind::ChunkBloom => bloom::load(&info, nchunks).map(Loaded::Bloom),
                IndexKind::Unknown(_) => continue,
            };
            match loaded {
                Ok(l) => me.loaded.push((info, l)),
                Err(m) => me.rejected.push(super::finding(
                    &info.path,
                    info.kind.structure_sections(),
                    m,
                )),
            }
        }
        Ok(me)
    }

    /// The indexes in use.
    pub fn indexes(&self) -> impl Iterator<Item = &IndexInfo> {
        self.loaded.iter().map(|(i, _)| i)
    }

    /// Why the other indexes of the column are not used (structure, or
    /// failed verification).
    pub fn rejected(&self) -> &[Finding] {
        &self.rejected
    }

    /// Whether no index is in use.
    pub fn is_empty(&self) -> bool {
        self.loaded.is_empty()
    }

    /// The rows that may satisfy `pred`: the intersection of what each
    /// index in use allows, never a row at or past NROWS, never dropping a
    /// matching row when the indexes are correct.
    ///
    /// # Errors
    /// HDF5 errors reading column values for a `SORTED_ROWS` binary search.
    pub fn candidates(&self, pred: &Predicate) -> Result<Candidates> {
        Ok(self.candidates_exact(pred)?.0)
    }

    /// As [`ColumnIndexes::candidates`], and whether the candidates are
    /// exactly the rows satisfying `pred` (missing rows excluded) when the
    /// indexes are correct: true when a `SORTED_ROWS` or `BITMAP` index
    /// answered and no value it selected is the column's missing value.
    /// An engine may then skip evaluating `pred`.
    ///
    /// # Errors
    /// As [`ColumnIndexes::candidates`].
    pub fn candidates_exact(&self, pred: &Predicate) -> Result<(Candidates, bool)> {
        self.candidates_all(core::slice::from_ref(pred))
    }

    /// When a `BITMAP` index answers every predicate of `preds` exactly
    /// (see [`ColumnIndexes::candidates_exact`]): the rows satisfying them
    /// all as words (bit `r % 64` of word `r / 64` for row `r`,
    /// `ceil(NROWS / 64)` words), read from its bit rows without listing a
    /// row. `None` when no bitmap answers exactly.
    ///
    /// # Errors
    /// HDF5 errors reading the bit rows.
    pub fn bitmap_words(&self, preds: &[Predicate]) -> Result<Option<Vec<u64>>> {
        let nrows = self.nrows;
        let col = &self.column;
        if preds.is_empty()
            || !preds
                .iter()
                .flat_map(|p| match p {
                    Predicate::In(vs) => vs.iter().collect::<Vec<_>>(),
                    Predicate::Eq(v)
                    | Predicate::Lt(v)
                    | Predicate::Le(v)
                    | Predicate::Gt(v)
                    | Predicate::Ge(v) => alloc::vec![v],
                })
                .all(|v| literal_is_exact(col.dtype(), v))
        {
            return Ok(None);
        }
        for (_, l) in &self.loaded {
            let (values, exhaustive) = match l {
                Loaded::Bitmap(b, x) => (&b.values, *x),
                Loaded::BitmapLazy(b, x) => (&b.values, *x),
                _ => continue,
            };
            // Each row holds one value: predicates meet as value sets.
            let mut ks: Option<Vec<usize>> = None;
            for p in preds {
                let Some(k) = bitmap::select_values(values, exhaustive, p) else {
                    ks = None;
                    break;
                };
                ks = Some(match ks {
                    None => k,
                    Some(prev) => prev.into_iter().filter(|x| k.contains(x)).collect(),
                });
            }
            let Some(ks) = ks else { continue };
            if !ks
                .iter()
                .all(|&k| values.get(k).is_some_and(|v| !col.is_missing_value(v)))
            {
                continue;
            }
            let nw = usize::try_from(nrows.div_ceil(64))
                .map_err(|_| crate::Error::Usage("too many rows".into()))?;
            let mut words: Vec<u64> = Vec::new();
            words
                .try_reserve_exact(nw)
                .map_err(|_| crate::Error::Usage("too many rows".into()))?;
            words.resize(nw, 0);
            for &k in &ks {
                match l {
                    Loaded::Bitmap(b, _) => {
                        let row = b
                            .bits
                            .get(k * b.row_bytes..(k + 1) * b.row_bytes)
                            .unwrap_or(&[]);
                        bitmap::or_into_words(row, nrows, &mut words);
                    }
                    Loaded::BitmapLazy(b, _) => {
                        bitmap::or_into_words(&b.row_bytes(k, nrows)?, nrows, &mut words);
                    }
                    _ => {}
                }
            }
            return Ok(Some(words));
        }
        Ok(None)
    }

    /// The rows that may satisfy every predicate of `preds` (all on this
    /// column), and whether they are exactly the rows satisfying them all
    /// (see [`ColumnIndexes::candidates_exact`]). Predicates meet inside
    /// each index before any row is listed: `SORTED_ROWS` intersects rank
    /// ranges (`a <= x < b` reads only the ranks between its two bounds),
    /// `BITMAP` intersects value sets. An index that would list more than
    /// a sixteenth of the rows without answering exactly, or a
    /// `SORTED_ROWS` range of more than a sixteenth of the ranks, is not
    /// used: a scan is cheaper than listing and sorting that many rows.
    ///
    /// # Errors
    /// HDF5 errors reading index entries or column values.
    pub fn candidates_all(&self, preds: &[Predicate]) -> Result<(Candidates, bool)> {
        let nrows = self.nrows;
        let chunk_len = self.column.chunk_len();
        let nchunks = chunk_count(nrows, chunk_len);
        let limit = nrows / 16;
        let chunks_to_rows = |cs: Vec<u64>| {
            let mut out: Vec<Range<u64>> = Vec::new();
            for c in cs {
                let r = chunk_range(c, nrows, chunk_len);
                match out.last_mut() {
                    Some(last) if last.end == r.start => last.end = r.end,
                    _ if r.start < r.end => out.push(r),
                    _ => {}
                }
            }
            Candidates::Rows(out)
        };
        let lits = |pred: &Predicate| -> Vec<Value> {
            match pred {
                Predicate::In(vs) => vs.clone(),
                Predicate::Eq(v)
                | Predicate::Lt(v)
                | Predicate::Le(v)
                | Predicate::Gt(v)
                | Predicate::Ge(v) => alloc::vec![v.clone()],
            }
        };
        // Predicates whose literals mean one value whatever the engine's
        // comparison rule; the others are left to the scan.
        let usable: Vec<&Predicate> = preds
            .iter()
            .filter(|p| {
                lits(p)
                    .iter()
                    .all(|v| literal_is_exact(self.column.dtype(), v))
            })
            .collect();
        let all_usable = usable.len() == preds.len() && !preds.is_empty();
        let col = &self.column;
        let bitmap_exact = |values: &[Value], ks: &[usize]| {
            ks.iter()
                .all(|&k| values.get(k).is_some_and(|v| !col.is_missing_value(v)))
        };
        let mut acc = Candidates::All;
        let mut exact = false;
        // Row-level indexes first: once one answers exactly, the chunk-level
        // ones (a superset of its rows at best) are not read.
        let row_level = |l: &Loaded| {
            matches!(
                l,
                Loaded::Sorted(_)
                    | Loaded::SortedLazy(_)
                    | Loaded::Bitmap(..)
                    | Loaded::BitmapLazy(..)
            )
        };
        // On a filtered (compressed) column each value a SORTED_ROWS binary
        // search probes costs a chunk decode (some 20 of them for ten
        // million rows): for equality, a Bloom filter (one read, no
        // decode) comes first, and when it leaves a few chunks the scan of
        // those is cheaper than the search.
        let bloom_first = !col.dataset().filters().filters.is_empty()
            && !usable.is_empty()
            && usable
                .iter()
                .all(|p| matches!(p, Predicate::Eq(_) | Predicate::In(_)));
        let is_bloom = |l: &Loaded| matches!(l, Loaded::Bloom(_) | Loaded::BloomLazy(_));
        let first = |l: &Loaded| {
            if bloom_first {
                is_bloom(l)
            } else {
                row_level(l)
            }
        };
        let order = self
            .loaded
            .iter()
            .filter(|(_, l)| first(l))
            .chain(self.loaded.iter().filter(|(_, l)| !first(l)));
        let few = |acc: &Candidates| acc.count(nrows) <= 4 * chunk_len.unwrap_or(nrows).max(1);
        for (_, l) in order {
            if exact && !row_level(l) {
                continue;
            }
            if bloom_first && row_level(l) && acc != Candidates::All && few(&acc) {
                // The Bloom filter left a few chunks: scanning them is cheaper.
                continue;
            }
            match l {
                Loaded::BloomLazy(info) => {
                    // Only the chunks still candidates, only the filter
                    // bytes the literals' bits fall in.
                    for p in &usable {
                        let chunks = candidate_chunk_list(&acc, nchunks, nrows, chunk_len);
                        match bloom::probe_chunks(info, nchunks, self.column.dtype(), &chunks, p) {
                            Ok(cs) => acc = acc.intersect(chunks_to_rows(cs)),
                            // Pruning is optional: an unreadable Bloom filter prunes nothing.
                            Err(_) => break,
                        }
                    }
                }
                Loaded::MinMax(e) => {
                    for p in &usable {
                        acc = acc.intersect(chunks_to_rows(minmax::candidate_chunks(
                            e,
                            nchunks,
                            self.column.fill().is_nan,
                            p,
                        )));
                    }
                }
                Loaded::Bloom(b) => {
                    for p in &usable {
                        acc = acc.intersect(chunks_to_rows(bloom::candidate_chunks(
                            b,
                            self.column.dtype(),
                            nchunks,
                            p,
                        )));
                    }
                }
                Loaded::Bitmap(..) | Loaded::BitmapLazy(..) => {
                    let (values, exhaustive) = match l {
                        Loaded::Bitmap(b, x) => (&b.values, *x),
                        Loaded::BitmapLazy(b, x) => (&b.values, *x),
                        _ => continue,
                    };
                    // Each row holds one value: predicates meet as value sets.
                    let mut ks: Option<Vec<usize>> = None;
                    let mut answered_all = all_usable;
                    for p in &usable {
                        match bitmap::select_values(values, exhaustive, p) {
                            Some(k) => {
                                ks = Some(match ks {
                                    None => k,
                                    Some(prev) => {
                                        prev.into_iter().filter(|x| k.contains(x)).collect()
                                    }
                                });
                            }
                            None => answered_all = false,
                        }
                    }
                    let Some(ks) = ks else { continue };
                    let here_exact = answered_all && bitmap_exact(values, &ks);
                    let mut rows: Vec<u64> = Vec::new();
                    for &k in &ks {
                        match l {
                            Loaded::Bitmap(b, _) => rows.extend(b.rows(k, nrows)),
                            Loaded::BitmapLazy(b, _) => rows.extend(b.rows(k, nrows)?),
                            _ => {}
                        }
                    }
                    if !here_exact && rows.len() as u64 > limit {
                        continue;
                    }
                    if ks.len() > 1 {
                        rows.sort_unstable();
                        rows.dedup();
                    }
                    exact |= here_exact;
                    acc = acc.intersect(Candidates::from_sorted_rows(&rows));
                }
                Loaded::Sorted(_) | Loaded::SortedLazy(_) => {
                    let cached = self.values.as_ref();
                    // The searches of `a <= x` and `x < b` probe the same
                    // rows until their bounds part: each row is read once
                    // (a probe of a compressed column decodes a chunk).
                    let mut probed: Vec<(u64, Value)> = Vec::new();
                    let mut value_at = |r: u64| -> Result<Value> {
                        if let Some(v) = cached.and_then(|s| s.values.get(r as usize)) {
                            return Ok(v.clone());
                        }
                        if let Some((_, v)) = probed.iter().find(|(x, _)| *x == r) {
                            return Ok(v.clone());
                        }
                        let s = col.read(r..r + 1)?;
                        let v = s.values.into_iter().next().ok_or_else(|| {
                            crate::Error::Usage(alloc::format!("row {r} could not be read"))
                        })?;
                        probed.push((r, v.clone()));
                        Ok(v)
                    };
                    // What one predicate's search probed narrows the
                    // next one's (`a <= x < b`: the second bound starts
                    // where the first left off).
                    let mut memory = sorted::ProbeMemory::default();
                    let mut lazy;
                    let mut mem;
                    let perm: &mut RankSearch<'_>;
                    let mut ranks_lazy;
                    let mut ranks_mem;
                    match l {
                        Loaded::SortedLazy(p) => {
                            lazy = p.clone();
                            ranks_lazy =
                                |pr: &Predicate, va: &mut dyn FnMut(u64) -> Result<Value>| {
                                    sorted::rank_ranges_with(
                                        &mut lazy,
                                        nrows,
                                        pr,
                                        va,
                                        &mut |e| crate::Error::from(e),
                                        &mut memory,
                                    )
                                };
                            perm = &mut ranks_lazy;
                        }
                        Loaded::Sorted(s) => {
                            mem = sorted::InMemory(s);
                            ranks_mem =
                                |pr: &Predicate, va: &mut dyn FnMut(u64) -> Result<Value>| {
                                    sorted::rank_ranges_with(
                                        &mut mem,
                                        nrows,
                                        pr,
                                        va,
                                        &mut |e| match e {},
                                        &mut memory,
                                    )
                                };
                            perm = &mut ranks_mem;
                        }
                        _ => continue,
                    }
                    let mut ranks: Option<Candidates> = None;
                    let mut answered_all = all_usable;
                    for p in &usable {
                        match perm(p, &mut value_at)? {
                            Some(r) => {
                                let c = Candidates::Rows(r);
                                ranks = Some(match ranks {
                                    None => c,
                                    Some(prev) => prev.intersect(c),
                                });
                            }
                            None => answered_all = false,
                        }
                    }
                    let Some(Candidates::Rows(ranks)) = ranks else {
                        continue;
                    };
                    let total: u64 = ranks.iter().map(|r| r.end - r.start).sum();
                    if total > limit {
                        continue;
                    }
                    let rows = match l {
                        Loaded::SortedLazy(p) => {
                            sorted::rows_of_ranks(&mut p.clone(), nrows, &ranks)?
                        }
                        Loaded::Sorted(s) => {
                            match sorted::rows_of_ranks(&mut sorted::InMemory(s), nrows, &ranks) {
                                Ok(r) => r,
                                Err(e) => match e {},
                            }
                        }
                        _ => None,
                    };
                    if let Some(rows) = rows {
                        exact |= answered_all;
                        acc = acc.intersect(Candidates::from_sorted_rows(&rows));
                    }
                }
            }
        }
        let exact = exact && acc != Candidates::All;
        Ok((acc, exact))
    }
}
