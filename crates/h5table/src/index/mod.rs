//! Search indexes (§10): discovery, recomputation, verification (§12 item 9,
//! §16) and conservative pruning for the query engine.
//!
//! * [`discover`] lists every search-index dataset of a table with its
//!   column, `KIND`, parameters and validity tokens, plus the structural
//!   findings (§10.1, §10.2, §12 items 3–4).
//! * [`minmax`], [`sorted`], [`bitmap`] and [`bloom`] compute each family
//!   exactly as the spec defines it from a column's rows `[0, NROWS)`, read
//!   the stored form defensively, and answer predicates.
//! * [`verify::verify_table`] recomputes every index and reports the ones
//!   that do not describe their column.
//! * [`prune::ColumnIndexes`] gives candidate rows for a predicate under an
//!   [`prune::IndexPolicy`]; by default ([`prune::IndexPolicy::Ignore`]) no
//!   index is consulted, as §16 requires.
//!
//! Validity tokens (the upstream draft): an index dataset carrying
//! `SOURCE_GENERATION` / `SOURCE_NROWS` that do not match the table's
//! `GENERATION` / `NROWS` is stale and treated as absent, never partly
//! trusted. An index with neither token (older producers) is judged on its
//! content alone.

pub mod bitmap;
pub mod bloom;
pub mod minmax;
pub mod order;
pub mod prune;
pub mod sorted;
pub mod typed;
pub mod verify;

pub use prune::{Candidates, ColumnIndexes, IndexPolicy, Predicate};
pub use verify::verify_table;

use crate::check::{Finding, Severity};
use crate::error::Result;
use crate::model::{attr_bool, attr_refs, attr_string, attr_u64, Table};
use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::{Addr, Attribute, Dataset, Object};

/// The reserved name of the subgroup holding the search indexes (§10.1).
pub const SEARCH_INDEXES: &str = "SEARCH_INDEXES";

/// The only `hash_family` of this revision (§10.7).
pub const HASH_FAMILY: &str = "murmur3_x64_128_double";

/// A search index family (§10.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexKind {
    /// `CHUNK_MINMAX` (§10.4).
    ChunkMinMax,
    /// `SORTED_ROWS` (§10.5).
    SortedRows,
    /// `BITMAP` (§10.6).
    Bitmap,
    /// `CHUNK_BLOOM` (§10.7).
    ChunkBloom,
    /// Any other `KIND` value: listed, never used (§10.3, §13.2).
    Unknown(String),
}

impl IndexKind {
    /// Parse a `KIND` value.
    pub fn parse(s: &str) -> IndexKind {
        match s {
            "CHUNK_MINMAX" => IndexKind::ChunkMinMax,
            "SORTED_ROWS" => IndexKind::SortedRows,
            "BITMAP" => IndexKind::Bitmap,
            "CHUNK_BLOOM" => IndexKind::ChunkBloom,
            other => IndexKind::Unknown(other.to_owned()),
        }
    }
    /// The `KIND` token.
    pub fn as_str(&self) -> &str {
        match self {
            IndexKind::ChunkMinMax => "CHUNK_MINMAX",
            IndexKind::SortedRows => "SORTED_ROWS",
            IndexKind::Bitmap => "BITMAP",
            IndexKind::ChunkBloom => "CHUNK_BLOOM",
            IndexKind::Unknown(s) => s,
        }
    }
    /// The section defining the family (`"§10.4"` …; `"§10.3"` for unknown kinds).
    pub fn section(&self) -> &'static str {
        match self {
            IndexKind::ChunkMinMax => "§10.4",
            IndexKind::SortedRows => "§10.5",
            IndexKind::Bitmap => "§10.6",
            IndexKind::ChunkBloom => "§10.7",
            IndexKind::Unknown(_) => "§10.3",
        }
    }
    /// The sections a finding about wrong content of this family cites:
    /// §12 (item 9), the family's section and §16.
    pub fn tamper_sections(&self) -> &'static str {
        match self {
            IndexKind::ChunkMinMax => "§12, §10.4, §16",
            IndexKind::SortedRows => "§12, §10.5, §16",
            IndexKind::Bitmap => "§12, §10.6, §16",
            IndexKind::ChunkBloom => "§12, §10.7, §16",
            IndexKind::Unknown(_) => "§12, §16",
        }
    }
    /// The sections a structural finding (shape, datatype, attributes) of
    /// this family cites: §12 and the family's section.
    pub fn structure_sections(&self) -> &'static str {
        match self {
            IndexKind::ChunkMinMax => "§12, §10.4",
            IndexKind::SortedRows => "§12, §10.5",
            IndexKind::Bitmap => "§12, §10.6",
            IndexKind::ChunkBloom => "§12, §10.7",
            IndexKind::Unknown(_) => "§12, §10.3",
        }
    }
}

/// The per-family parameters found on an index dataset (attributes; absent
/// or unreadable ones are `None`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IndexParams {
    /// `k` (CHUNK_BLOOM): the number of hash functions.
    pub k: Option<u16>,
    /// `m_bits` (CHUNK_BLOOM): bits per filter.
    pub m_bits: Option<u64>,
    /// `seed` (CHUNK_BLOOM).
    pub seed: Option<u32>,
    /// `hash_family` (CHUNK_BLOOM).
    pub hash_family: Option<String>,
    /// `nan_tail_length` (SORTED_ROWS).
    pub nan_tail_length: Option<u64>,
    /// `fill_tail_length` (SORTED_ROWS).
    pub fill_tail_length: Option<u64>,
    /// `ordered` (SORTED_ROWS, BITMAP).
    pub ordered: Option<bool>,
    /// `exhaustive` (BITMAP, h5col's private attribute): every non-missing
    /// value of the column is among the indexed values.
    pub exhaustive: Option<bool>,
    /// Path of the dataset `VALUES` references (BITMAP), when it resolves.
    pub values: Option<String>,
}

/// Whether an index describes the table's current state (validity tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Validity {
    /// Its tokens match the table's `GENERATION` and `NROWS`.
    Current,
    /// It carries no validity token: judged on its content only.
    Untokened,
    /// Its tokens do not match: treated as absent.
    Stale {
        /// Why, in one line.
        reason: String,
    },
}

/// One search-index dataset of a table (a dataset of `SEARCH_INDEXES`
/// carrying `KIND`).
#[derive(Debug, Clone)]
pub struct IndexInfo {
    /// The column whose `SEARCH_INDEX_LIST` references it (the first, when
    /// several do; `None` when none does).
    pub column: Option<String>,
    /// The dataset's link name in `SEARCH_INDEXES`.
    pub name: String,
    /// HDF5 path of the dataset.
    pub path: String,
    /// The dataset.
    pub dataset: Dataset,
    /// Its family.
    pub kind: IndexKind,
    /// Family parameters.
    pub params: IndexParams,
    /// `SOURCE_GENERATION`, when present.
    pub source_generation: Option<u64>,
    /// `SOURCE_NROWS`, when present.
    pub source_nrows: Option<u64>,
    /// Current, untokened or stale.
    pub validity: Validity,
}

impl IndexInfo {
    /// Whether the index may be consulted at all: a known kind, a column,
    /// and not stale.
    pub fn usable(&self) -> bool {
        self.column.is_some()
            && !matches!(self.kind, IndexKind::Unknown(_))
            && !matches!(self.validity, Validity::Stale { .. })
    }
}

/// What [`discover`] found: the indexes and the structural findings.
#[derive(Debug, Clone, Default)]
pub struct Discovery {
    /// Every dataset of `SEARCH_INDEXES` carrying `KIND`, in link-name order.
    pub indexes: Vec<IndexInfo>,
    /// Accompanying datasets (no `KIND`), by path.
    pub accompanying: Vec<String>,
    /// Structural problems (§10.1, §10.2, §10.6, §12 items 3–4, applicability).
    pub findings: Vec<Finding>,
}

pub(crate) fn finding(path: &str, section: &'static str, message: String) -> Finding {
    Finding {
        path: path.to_owned(),
        section,
        severity: Severity::Error,
        message,
    }
}

pub(crate) fn warning(path: &str, section: &'static str, message: String) -> Finding {
    Finding {
        path: path.to_owned(),
        section,
        severity: Severity::Warning,
        message,
    }
}

fn find_attr<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name() == name)
}

/// The number of data-bearing chunks (§10.4, §10.7): `ceil(nrows /
/// chunk_len)` for a chunked column, 1 for a contiguous or compact one
/// (`chunk_len == None`), 0 when `nrows == 0`.
pub fn chunk_count(nrows: u64, chunk_len: Option<u64>) -> u64 {
    match (nrows, chunk_len) {
        (0, _) => 0,
        (n, Some(c)) if c > 0 => n.div_ceil(c),
        _ => 1,
    }
}

/// The rows of data-bearing chunk `c` (see [`chunk_count`]), clipped to
/// `nrows`; empty past the last one.
pub fn chunk_range(c: u64, nrows: u64, chunk_len: Option<u64>) -> Range<u64> {
    match chunk_len {
        Some(l) if l > 0 => {
            let start = c.saturating_mul(l).min(nrows);
            start..c.saturating_add(1).saturating_mul(l).min(nrows)
        }
        _ if c == 0 => 0..nrows,
        _ => nrows..nrows,
    }
}

/// The half-open row ranges of a column's data-bearing chunks (§10.4,
/// §10.7): `ceil(nrows / chunk_len)` ranges for a chunked column, one for a
/// contiguous or compact one (`chunk_len == None`), none when `nrows == 0`.
/// The last range ends at `nrows`.
pub fn chunk_ranges(nrows: u64, chunk_len: Option<u64>) -> Vec<Range<u64>> {
    (0..chunk_count(nrows, chunk_len))
        .map(|c| chunk_range(c, nrows, chunk_len))
        .collect()
}

/// List the search indexes of a table (§10) and check their structure:
/// `SEARCH_INDEXES` holds only index datasets (with `KIND`) and the
/// accompanying datasets they reference (without `KIND`, §10.1, §12 item 3);
/// every `SEARCH_INDEX_LIST` reference resolves to an index dataset there
/// (§10.2, §12 item 4); each index applies to exactly one column of a
/// datatype its family admits (§10.4–§10.7).
///
/// # Errors
/// HDF5 errors listing the `SEARCH_INDEXES` group. Problems with single
/// datasets or attributes are findings.
pub fn discover(table: &Table) -> Result<Discovery> {
    let mut out = Discovery::default();
    let group = table.group();
    let gpath = table.path();
    // Datasets of SEARCH_INDEXES: (name, dataset, KIND).
    let mut members: Vec<(String, Dataset, Option<String>)> = Vec::new();
    let has_si = group.links()?.iter().any(|l| l.name == SEARCH_INDEXES);
    if has_si {
        match group.member(SEARCH_INDEXES) {
            Ok(Object::Group(si)) => {
                for l in si.links()? {
                    match si.member(&l.name) {
                        Ok(Object::Dataset(ds)) => {
                            let kind = match ds.attrs() {
                                Ok(attrs) => find_attr(&attrs, "KIND").map(|a| {
                                    attr_string(a).unwrap_or_else(|| String::from("<unreadable>"))
                                }),
                                Err(_) => None,
                            };
                            members.push((l.name.clone(), *ds, kind));
                        }
                        Ok(other) => out.findings.push(finding(
                            other.path(),
                            "§12, §10.1",
                            format!(
                                "{SEARCH_INDEXES} may hold only search-index and accompanying \
                                 datasets, but {:?} is not a dataset",
                                l.name
                            ),
                        )),
                        Err(e) => out.findings.push(finding(
                            &format!("{}/{}", si.path(), l.name),
                            "§12, §10.1",
                            format!(
                                "member {:?} of {SEARCH_INDEXES} cannot be opened: {e}",
                                l.name
                            ),
                        )),
                    }
                }
            }
            Ok(other) => out.findings.push(finding(
                other.path(),
                "§10.1",
                format!("{SEARCH_INDEXES} must be a group"),
            )),
            Err(e) => out.findings.push(finding(
                gpath,
                "§10.1",
                format!("{SEARCH_INDEXES} cannot be opened: {e}"),
            )),
        }
    }
    let by_addr = |a: Addr| members.iter().position(|m| m.1.addr() == a);

    // Which columns reference which member.
    let mut referenced_by: Vec<Vec<String>> = alloc::vec![Vec::new(); members.len()];
    for col in table.columns() {
        let cpath = col.dataset().path().to_owned();
        for (i, r) in col.search_index_list.iter().enumerate() {
            match r {
                None => out.findings.push(finding(
                    &cpath,
                    "§12, §10.2",
                    format!("SEARCH_INDEX_LIST[{i}] is a null reference"),
                )),
                Some(a) => match by_addr(*a) {
                    None => out.findings.push(finding(
                        &cpath,
                        "§12, §10.2",
                        format!(
                            "SEARCH_INDEX_LIST[{i}] does not resolve to a dataset in the table's \
                             {SEARCH_INDEXES} group"
                        ),
                    )),
                    Some(m) => {
                        if members[m].2.is_none() {
                            out.findings.push(finding(
                                &cpath,
                                "§12, §10.2",
                                format!(
                                    "SEARCH_INDEX_LIST[{i}] references {}, which carries no KIND \
                                     and so is not a search-index dataset",
                                    members[m].1.path()
                                ),
                            ));
                        } else if !referenced_by[m].contains(&col.name().to_owned()) {
                            referenced_by[m].push(col.name().to_owned());
                        }
                    }
                },
            }
        }
    }

    // Accompanying datasets: referenced by a BITMAP's VALUES. Findings about
    // a BITMAP's own VALUES are kept apart until we know whether that BITMAP
    // is itself some other bitmap's (KIND-carrying) values dataset.
    let mut accompanying = alloc::vec![false; members.len()];
    let mut values_of: Vec<Option<usize>> = alloc::vec![None; members.len()];
    let mut values_findings: Vec<(usize, Finding)> = Vec::new();
    for (i, (_, ds, kind)) in members.iter().enumerate() {
        if kind.as_deref() != Some("BITMAP") {
            continue;
        }
        let refs = ds
            .attrs()
            .ok()
            .and_then(|attrs| find_attr(&attrs, "VALUES").map(attr_refs));
        let mut problem = |section: &'static str, m: String| {
            values_findings.push((i, finding(ds.path(), section, m)));
        };
        match refs {
            None => problem("§10.6", "BITMAP index has no VALUES attribute".into()),
            Some(None) => problem("§5, §10.6", "VALUES is not an object reference".into()),
            Some(Some(refs)) => match refs.first().copied().flatten() {
                None => problem("§10.6", "VALUES is empty or a null reference".into()),
                Some(a) => match by_addr(a) {
                    None => problem(
                        "§12, §10.6",
                        format!(
                            "VALUES does not resolve to a dataset in the table's {SEARCH_INDEXES} group"
                        ),
                    ),
                    Some(v) => {
                        values_of[i] = Some(v);
                        accompanying[v] = true;
                        if members[v].2.is_some() {
                            out.findings.push(finding(
                                members[v].1.path(),
                                "§12, §10.1, §10.6",
                                format!(
                                    "the values dataset of BITMAP {} carries a KIND attribute; an \
                                     accompanying dataset must not",
                                    ds.path()
                                ),
                            ));
                        }
                    }
                },
            },
        }
    }
    out.findings.extend(
        values_findings
            .into_iter()
            .filter(|(i, _)| !accompanying[*i])
            .map(|(_, f)| f),
    );
    for (i, (_, ds, kind)) in members.iter().enumerate() {
        if kind.is_none() {
            if accompanying[i] {
                out.accompanying.push(ds.path().to_owned());
            } else {
                out.findings.push(finding(
                    ds.path(),
                    "§12, §10.1",
                    format!(
                        "dataset in {SEARCH_INDEXES} carries no KIND and is not the accompanying \
                         dataset of any search index"
                    ),
                ));
            }
        }
    }

    for (i, (name, ds, kind)) in members.iter().enumerate() {
        let Some(kind) = kind else { continue };
        let values = values_of[i].map(|v| members[v].1.path().to_owned());
        let info = index_info(
            table,
            name,
            ds,
            kind,
            values,
            &referenced_by[i],
            accompanying[i],
            &mut out.findings,
        );
        out.indexes.push(info);
    }
    Ok(out)
}

/// The [`IndexInfo`] of the search-index dataset `ds` (link `name`, `KIND`
/// value `kind`, `VALUES` resolved to `values`) referenced by the columns
/// `cols`; pushes the findings about it (several columns or none, a
/// datatype its family does not admit). `accompanying`: it is some
/// BITMAP's values dataset (then no column need reference it).
#[allow(clippy::too_many_arguments)]
fn index_info(
    table: &Table,
    name: &str,
    ds: &Dataset,
    kind: &str,
    values: Option<String>,
    cols: &[String],
    accompanying: bool,
    findings: &mut Vec<Finding>,
) -> IndexInfo {
    let kind = IndexKind::parse(kind);
    let attrs = ds.attrs().unwrap_or_default();
    let u = |n: &str| find_attr(&attrs, n).and_then(attr_u64);
    let params = IndexParams {
        k: u("k").and_then(|v| u16::try_from(v).ok()),
        m_bits: u("m_bits"),
        seed: u("seed").and_then(|v| u32::try_from(v).ok()),
        hash_family: find_attr(&attrs, "hash_family").and_then(attr_string),
        nan_tail_length: u("nan_tail_length"),
        fill_tail_length: u("fill_tail_length"),
        ordered: find_attr(&attrs, "ordered").and_then(attr_bool),
        exhaustive: find_attr(&attrs, "exhaustive").and_then(attr_bool),
        values,
    };
    let source_generation = u("SOURCE_GENERATION");
    let source_nrows = u("SOURCE_NROWS");
    let validity = validity(table, source_generation, source_nrows);
    let path = ds.path().to_owned();
    if cols.len() > 1 && !matches!(kind, IndexKind::Unknown(_)) {
        findings.push(finding(
            &path,
            kind.section(),
            format!(
                "a {} index applies to exactly one column, but {} reference it",
                kind.as_str(),
                cols.join(", ")
            ),
        ));
    }
    if cols.is_empty() && !accompanying {
        findings.push(warning(
            &path,
            "§10.2",
            "no column's SEARCH_INDEX_LIST references this search index; it is unused".into(),
        ));
    }
    if let Some(cname) = cols.first() {
        if let Ok(col) = table.column(cname) {
            let dt = col.dtype();
            let ok = match kind {
                IndexKind::ChunkMinMax | IndexKind::SortedRows => order::has_order(dt),
                IndexKind::ChunkBloom => order::has_canonical_bytes(dt),
                _ => true,
            };
            if !ok {
                findings.push(finding(
                    &path,
                    kind.section(),
                    format!(
                        "a {} index is not permitted on column {cname:?}: its datatype has no \
                         HEP001 {}",
                        kind.as_str(),
                        if kind == IndexKind::ChunkBloom {
                            "canonical byte representation"
                        } else {
                            "order"
                        }
                    ),
                ));
            }
        }
    }
    IndexInfo {
        column: cols.first().cloned(),
        name: name.to_owned(),
        path,
        dataset: ds.clone(),
        kind,
        params,
        source_generation,
        source_nrows,
        validity,
    }
}

/// As [`discover`], for the indexes of one column only, opening only the
/// datasets its `SEARCH_INDEX_LIST` references (and their `VALUES`), not
/// every member of `SEARCH_INDEXES`: what a query needs, at the cost of
/// the checks that concern other columns' indexes (a listed index that is
/// also another BITMAP's values dataset is not noticed). The findings are
/// those about the listed indexes. `None` when `SEARCH_INDEXES` holds a
/// link that is not a hard link (then use [`discover`]).
///
/// # Errors
/// HDF5 errors listing the `SEARCH_INDEXES` group; `Usage` for an unknown
/// column.
pub fn discover_column(table: &Table, column: &str) -> Result<Option<Discovery>> {
    let mut out = Discovery::default();
    let col = table.column(column)?;
    let mut refs: Vec<Addr> = col.search_index_list.iter().flatten().copied().collect();
    refs.dedup();
    if refs.is_empty() {
        return Ok(Some(out));
    }
    let group = table.group();
    if !group.links()?.iter().any(|l| l.name == SEARCH_INDEXES) {
        return Ok(Some(out));
    }
    let Ok(Object::Group(si)) = group.member(SEARCH_INDEXES) else {
        return Ok(None);
    };
    // Link name by address.
    let mut names: Vec<(Addr, String)> = Vec::new();
    for l in si.links()? {
        match l.target {
            h5fmt::format::message::LinkTarget::Hard(a) => names.push((a, l.name)),
            _ => return Ok(None),
        }
    }
    let name_of = |a: Addr| names.iter().find(|(x, _)| *x == a).map(|(_, n)| n.as_str());
    let si_path = si.path().trim_end_matches('/').to_owned();
    let file = group.file();
    let mut seen: Vec<Addr> = Vec::new();
    for a in refs {
        if seen.contains(&a) {
            continue;
        }
        seen.push(a);
        let Some(name) = name_of(a) else { continue };
        let Ok(Object::Dataset(ds)) = file.object_at(a, &format!("{si_path}/{name}")) else {
            continue;
        };
        let Some(kind) = ds.attrs().ok().and_then(|attrs| {
            find_attr(&attrs, "KIND")
                .map(|k| attr_string(k).unwrap_or_else(|| String::from("<unreadable>")))
        }) else {
            continue;
        };
        let mut values = None;
        if kind == "BITMAP" {
            let refs = ds
                .attrs()
                .ok()
                .and_then(|attrs| find_attr(&attrs, "VALUES").map(attr_refs));
            let problem = match refs {
                None => Some((
                    "§10.6",
                    String::from("BITMAP index has no VALUES attribute"),
                )),
                Some(None) => Some(("§5, §10.6", "VALUES is not an object reference".into())),
                Some(Some(r)) => match r.first().copied().flatten() {
                    None => Some(("§10.6", "VALUES is empty or a null reference".into())),
                    Some(v) => match name_of(v) {
                        Some(vn) => {
                            values = Some(format!("{si_path}/{vn}"));
                            None
                        }
                        None => Some((
                            "§12, §10.6",
                            format!(
                                "VALUES does not resolve to a dataset in the table's \
                                 {SEARCH_INDEXES} group"
                            ),
                        )),
                    },
                },
            };
            if let Some((section, m)) = problem {
                out.findings.push(finding(ds.path(), section, m));
            }
        }
        let cols: Vec<String> = table
            .columns()
            .iter()
            .filter(|c| c.search_index_list.contains(&Some(a)))
            .map(|c| c.name().to_owned())
            .collect();
        let info = index_info(
            table,
            name,
            &ds,
            &kind,
            values,
            &cols,
            false,
            &mut out.findings,
        );
        out.indexes.push(info);
    }
    Ok(Some(out))
}

fn validity(table: &Table, generation: Option<u64>, nrows: Option<u64>) -> Validity {
    if generation.is_none() && nrows.is_none() {
        return Validity::Untokened;
    }
    if let Some(n) = nrows {
        if n != table.nrows() {
            return Validity::Stale {
                reason: format!(
                    "SOURCE_NROWS {n} is not the table's NROWS {}",
                    table.nrows()
                ),
            };
        }
    }
    if let Some(g) = generation {
        if table.generation != Some(g) {
            return Validity::Stale {
                reason: match table.generation {
                    Some(t) => format!("SOURCE_GENERATION {g} is not the table's GENERATION {t}"),
                    None => format!("SOURCE_GENERATION {g} but the table has no GENERATION"),
                },
            };
        }
    }
    Validity::Current
}
