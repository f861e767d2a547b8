//! List columns of the upstream H5Col draft (HEP001 "H5Col", 2026-07): read
//! only, without `std`.
//!
//! HEP001 1.0 (`../shared/specs/000_…txt`) knows only rank-1 column
//! datasets. The newer upstream draft adds *list columns*, which h5col 0.4.0
//! writes. The layout implemented here is the one of
//!
//! * the draft, section "List columns" (and "The boolean datatype", "Column
//!   discovery", `column-order`): `HDFAlliance/heps`, `HEP001/index.md` at
//!   commit `10392e8` (2026-07-09);
//! * h5col 0.4.0 (`HDFGroup/h5col`, tag `v0.4.0`, commit `81da060`):
//!   `src/h5col/lists.py` (`create_list_column`, `read_list_column`,
//!   `validate_list_column`) and `src/h5col/arrow.py` (`list_array`), which
//!   agree with the draft.
//!
//! The layout:
//!
//! ```text
//! <table>/<name>         group, CLASS = "LIST_COLUMN", KIND = "OFFSETS"
//!                        (scalar null-terminated fixed-length ASCII strings);
//!                        optional units, units_vocabulary, description
//!   OFFSETS              rank-1 uint64, extent ≥ L + 1; OFFSETS[0] = 0,
//!                        non-decreasing over [0, L]; entry i is elements
//!                        [OFFSETS[i], OFFSETS[i+1]) of VALUES
//!   MASK      optional   rank-1 boolean enum (int8, FALSE = 0, TRUE = 1),
//!                        extent ≥ L; FALSE = entry i is null (a null list),
//!                        and then OFFSETS[i+1] = OFFSETS[i]
//!   VALUES               exactly one of:
//!                        - a rank-1 dataset (the leaf): any column datatype
//!                          except variable-length ones; a missing element is
//!                          the leaf's fill value (the canonical test, §8.5)
//!                        - a group CLASS = "LIST_COLUMN", KIND = "OFFSETS":
//!                          the same layout one level down (list<list<…>>)
//!                        - a group CLASS = "STRING_VALUES" holding OFFSETS
//!                          (as above), CHARS (rank-1 uint8, the UTF-8 bytes
//!                          back to back: string j is CHARS[OFFSETS[j],
//!                          OFFSETS[j+1])) and an optional MASK (FALSE = a
//!                          null string)
//! ```
//!
//! `L` is `NROWS` at the top level and `OFFSETS_parent[L_parent]` at a nested
//! one; positions past `L` are reserved storage. A list column is a direct
//! child group of the table group, appears in `column-order` like any other
//! column, is never an index column and carries no search index.
//!
//! Reading is lenient where the draft lets consumers be: `OFFSETS` of any
//! unsigned (or non-negative signed) integer width, `MASK` of any one-byte
//! integer or enumeration. Everything that comes from the file is checked
//! before it is used: offsets must be non-decreasing, start at 0 (when read
//! from row 0), and stay within the extent of what they index; a null entry
//! must be empty; a mask holds only 0 and 1. A violation is an
//! [`Error::Invalid`] naming the dataset and [`SECTION`], never a panic.
//! Every buffer sized by an offset is reserved fallibly
//! ([`Vec::try_reserve_exact`]) and read in pieces of at most
//! [`PIECE_BYTES`].

use crate::error::{Error, Result};
use crate::model::{attr_string, Column, ColumnSlice};
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::datatype::Datatype;
use h5fmt::{Dataset, Group, Object, Value};

/// `CLASS` of a list column group (and of a nested list level).
pub const LIST_COLUMN_CLASS: &str = "LIST_COLUMN";
/// `CLASS` of the string-elements group of a list level.
pub const STRING_VALUES_CLASS: &str = "STRING_VALUES";
/// The one list-column `KIND` the draft defines.
pub const OFFSETS_KIND: &str = "OFFSETS";
/// What errors and findings about list columns cite.
pub const SECTION: &str = "H5Col draft: List columns";
/// Nesting levels of a list column read at most (a `VALUES` group linked to
/// an ancestor would otherwise nest forever).
pub const MAX_DEPTH: usize = 32;
/// Largest single read of a list member's elements; a longer span is read
/// in pieces into a buffer reserved fallibly.
pub const PIECE_BYTES: usize = 8 << 20;

/// One list column (a `CLASS = "LIST_COLUMN"` group of the table group).
///
/// Opening never fails on the column's contents: a list column whose
/// structure cannot be read (an unknown `KIND`, a missing member) is listed
/// all the same, and [`ListColumn::layout`] and every read return the
/// reason (the draft: "surface the column as present but unreadable").
#[derive(Debug, Clone)]
pub struct ListColumn {
    name: String,
    group: Group,
    kind: Option<String>,
    layout: core::result::Result<Box<ListLevel>, Error>,
    /// `units` (of the leaf elements).
    pub units: Option<String>,
    /// `units_vocabulary`, the column's own or inherited from the table group.
    pub units_vocabulary: Option<String>,
    /// `description`.
    pub description: Option<String>,
}

/// One level of a list encoding: `OFFSETS`, optional `MASK`, `VALUES`.
#[derive(Debug, Clone)]
pub struct ListLevel {
    path: String,
    offsets: Dataset,
    mask: Option<Dataset>,
    values: ListValues,
}

/// What the `VALUES` member of a level is.
#[derive(Debug, Clone)]
pub enum ListValues {
    /// A leaf dataset; a [`Column`] named `<column>/VALUES…` so that its fill
    /// value, missing test and decoding are those of a column.
    Leaf(Box<Column>),
    /// A `STRING_VALUES` group: UTF-8 strings.
    Strings(Box<StringValues>),
    /// A nested `LIST_COLUMN` level.
    Lists(Box<ListLevel>),
}

/// A `STRING_VALUES` group: `OFFSETS`, `CHARS`, optional `MASK`.
#[derive(Debug, Clone)]
pub struct StringValues {
    path: String,
    offsets: Dataset,
    chars: Dataset,
    mask: Option<Dataset>,
}

/// Entries `[a, b)` of a list level, decoded: `offsets` index `elements`.
#[derive(Debug, Clone, PartialEq)]
pub struct ListSlice {
    /// `len + 1` offsets into `elements`, starting at 0: entry `i` is
    /// elements `offsets[i]..offsets[i + 1]`.
    pub offsets: Vec<u64>,
    /// `missing[i]` when entry `i` is a null list (`MASK[i]` is `FALSE`);
    /// all `false` without a `MASK`. A null entry has no elements.
    pub missing: Vec<bool>,
    /// The elements of the entries, back to back.
    pub elements: ListElements,
}

/// The elements of a [`ListSlice`].
#[derive(Debug, Clone, PartialEq)]
pub enum ListElements {
    /// Scalar elements: leaf values with the leaf's canonical missing test,
    /// or strings ([`Value::Str`], [`Value::RawStr`] when not UTF-8) with
    /// `missing` from the `STRING_VALUES` mask.
    Values(ColumnSlice),
    /// Lists (a nested level).
    Lists(Box<ListSlice>),
}

impl ListSlice {
    /// The number of entries.
    pub fn len(&self) -> usize {
        self.missing.len()
    }
    /// Whether there are no entries.
    pub fn is_empty(&self) -> bool {
        self.missing.is_empty()
    }
    /// The element range of entry `i` (empty for a null entry).
    pub fn range(&self, i: usize) -> Option<Range<usize>> {
        let a = usize::try_from(*self.offsets.get(i)?).ok()?;
        let b = usize::try_from(*self.offsets.get(i + 1)?).ok()?;
        Some(a..b)
    }
}

/// File bytes of entries `[a, b)` of a level (the Arrow export builds its
/// arrays from these).
#[derive(Debug)]
pub(crate) struct RawList {
    /// `n + 1` offsets rebased to start at 0.
    pub offsets: Vec<u64>,
    /// From `MASK`: `true` = present; `None` without a mask.
    pub valid: Option<Vec<bool>>,
    pub child: RawValues,
}

#[derive(Debug)]
pub(crate) enum RawValues {
    /// The leaf's file bytes of `n` elements.
    Leaf {
        raw: Vec<u8>,
        n: u64,
    },
    Strings {
        offsets: Vec<u64>,
        chars: Vec<u8>,
        valid: Option<Vec<bool>>,
    },
    Lists(Box<RawList>),
}

fn child_path(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}

fn class_of(g: &Group) -> Option<String> {
    g.attr("CLASS").ok().and_then(|a| attr_string(&a))
}

/// Whether `g` is a list column group (`CLASS = "LIST_COLUMN"`).
pub fn is_list_group(g: &Group) -> bool {
    class_of(g).as_deref() == Some(LIST_COLUMN_CLASS)
}

fn invalid(path: &str, message: impl Into<String>) -> Error {
    Error::invalid(path, SECTION, message)
}

fn rank1(g: &Group, name: &str, required: bool) -> Result<Option<Dataset>> {
    let p = child_path(g.path(), name);
    match g.member(name) {
        Ok(Object::Dataset(ds)) if ds.shape().len() == 1 => Ok(Some(*ds)),
        Ok(Object::Dataset(ds)) => Err(invalid(
            &p,
            format!("{name} is a rank-{} dataset, not rank 1", ds.shape().len()),
        )),
        Ok(_) => Err(invalid(&p, format!("{name} is not a dataset"))),
        Err(_) if !required => Ok(None),
        Err(e) => Err(invalid(
            g.path(),
            format!("the required member {name} cannot be opened: {e}"),
        )),
    }
}

fn integer_dataset(ds: &Dataset, what: &str) -> Result<()> {
    match ds.dtype() {
        Datatype::Integer { .. } => Ok(()),
        d => Err(invalid(
            ds.path(),
            format!(
                "{what} has datatype {}, not an unsigned integer (uint64)",
                crate::text::dtype_name(d)
            ),
        )),
    }
}

fn one_byte_codes(ds: &Dataset, what: &str) -> Result<()> {
    match ds.dtype() {
        Datatype::Integer { size: 1, .. } => Ok(()),
        Datatype::Enum { base, .. } if matches!(**base, Datatype::Integer { size: 1, .. }) => {
            Ok(())
        }
        d => Err(invalid(
            ds.path(),
            format!(
                "{what} has datatype {}, not a one-byte {}",
                crate::text::dtype_name(d),
                if what == "CHARS" {
                    "integer (uint8)"
                } else {
                    "boolean enum (FALSE = 0, TRUE = 1)"
                }
            ),
        )),
    }
}

impl ListLevel {
    fn open(
        g: &Group,
        column: &str,
        vocab: Option<&str>,
        table: &Group,
        depth: usize,
    ) -> Result<ListLevel> {
        if depth >= MAX_DEPTH {
            return Err(Error::Hdf5(h5fmt::Error::limit(format!(
                "{}: list column nested more than {MAX_DEPTH} levels deep",
                g.path()
            ))));
        }
        let offsets = rank1(g, "OFFSETS", true)?.ok_or_else(|| invalid(g.path(), "no OFFSETS"))?;
        integer_dataset(&offsets, "OFFSETS")?;
        let mask = rank1(g, "MASK", false)?;
        if let Some(m) = &mask {
            one_byte_codes(m, "MASK")?;
        }
        let vp = child_path(g.path(), "VALUES");
        let values = match g.member("VALUES") {
            Ok(Object::Dataset(ds)) => {
                if ds.shape().len() != 1 {
                    return Err(invalid(
                        &vp,
                        format!(
                            "leaf VALUES is a rank-{} dataset, not rank 1",
                            ds.shape().len()
                        ),
                    ));
                }
                let rel = vp
                    .strip_prefix(table.path())
                    .map(|s| s.trim_start_matches('/'))
                    .unwrap_or(column);
                ListValues::Leaf(Box::new(Column::open(*ds, rel, vocab, table)?))
            }
            Ok(Object::Group(sub)) => match class_of(&sub).as_deref() {
                Some(LIST_COLUMN_CLASS) => {
                    let kind = sub.attr("KIND").ok().and_then(|a| attr_string(&a));
                    if kind.as_deref() != Some(OFFSETS_KIND) {
                        return Err(Error::Hdf5(h5fmt::Error::unsupported(format!(
                            "{vp}: nested list level of KIND {kind:?}; only OFFSETS is implemented"
                        ))));
                    }
                    ListValues::Lists(Box::new(ListLevel::open(
                        &sub,
                        column,
                        vocab,
                        table,
                        depth + 1,
                    )?))
                }
                Some(STRING_VALUES_CLASS) => {
                    let offsets =
                        rank1(&sub, "OFFSETS", true)?.ok_or_else(|| invalid(&vp, "no OFFSETS"))?;
                    integer_dataset(&offsets, "OFFSETS")?;
                    let chars =
                        rank1(&sub, "CHARS", true)?.ok_or_else(|| invalid(&vp, "no CHARS"))?;
                    one_byte_codes(&chars, "CHARS")?;
                    let mask = rank1(&sub, "MASK", false)?;
                    if let Some(m) = &mask {
                        one_byte_codes(m, "MASK")?;
                    }
                    ListValues::Strings(Box::new(StringValues {
                        path: vp,
                        offsets,
                        chars,
                        mask,
                    }))
                }
                other => {
                    return Err(invalid(
                        &vp,
                        format!(
                        "VALUES group has CLASS {other:?}, neither LIST_COLUMN nor STRING_VALUES"
                    ),
                    ))
                }
            },
            Ok(_) => return Err(invalid(&vp, "VALUES is neither a dataset nor a group")),
            Err(e) => {
                return Err(invalid(
                    g.path(),
                    format!("the required member VALUES cannot be opened: {e}"),
                ))
            }
        };
        Ok(ListLevel {
            path: g.path().to_owned(),
            offsets,
            mask,
            values,
        })
    }

    /// HDF5 path of the level's group.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// The `OFFSETS` dataset.
    pub fn offsets(&self) -> &Dataset {
        &self.offsets
    }
    /// The `MASK` dataset, when the level has one (null entries are possible).
    pub fn mask(&self) -> Option<&Dataset> {
        self.mask.as_ref()
    }
    /// The `VALUES` member.
    pub fn values(&self) -> &ListValues {
        &self.values
    }
    /// Whether `OFFSETS` is 8 bytes wide (the draft's uint64), which the
    /// Arrow export maps to `LargeList`.
    pub fn wide_offsets(&self) -> bool {
        self.offsets.dtype().size() == 8
    }
    /// The leaf dataset's column (`None` for strings).
    pub fn leaf(&self) -> Option<&Column> {
        match &self.values {
            ListValues::Leaf(c) => Some(c),
            ListValues::Strings(_) => None,
            ListValues::Lists(l) => l.leaf(),
        }
    }

    /// Entries `entries` decoded.
    ///
    /// # Errors
    /// As [`ListColumn::read`].
    pub fn read(&self, entries: Range<u64>) -> Result<ListSlice> {
        decode(self, self.read_raw(entries)?)
    }

    pub(crate) fn read_raw(&self, entries: Range<u64>) -> Result<RawList> {
        let (offsets, valid, span) =
            read_offsets(&self.path, &self.offsets, self.mask.as_ref(), entries)?;
        let child = match &self.values {
            ListValues::Leaf(c) => {
                let ds = c.dataset();
                check_span(&self.path, &span, ds.shape()[0], "VALUES")?;
                RawValues::Leaf {
                    raw: read_fallible(ds, span.clone())?,
                    n: span.end - span.start,
                }
            }
            ListValues::Strings(s) => {
                let (offsets, valid, bytes) =
                    read_offsets(&s.path, &s.offsets, s.mask.as_ref(), span)?;
                check_span(&s.path, &bytes, s.chars.shape()[0], "CHARS")?;
                RawValues::Strings {
                    offsets,
                    chars: read_fallible(&s.chars, bytes)?,
                    valid,
                }
            }
            ListValues::Lists(l) => RawValues::Lists(Box::new(l.read_raw(span)?)),
        };
        Ok(RawList {
            offsets,
            valid,
            child,
        })
    }
}

impl StringValues {
    /// HDF5 path of the `STRING_VALUES` group.
    pub fn path(&self) -> &str {
        &self.path
    }
    /// Whether its `OFFSETS` is 8 bytes wide (Arrow: `LargeUtf8`).
    pub fn wide_offsets(&self) -> bool {
        self.offsets.dtype().size() == 8
    }
    /// Whether it has a `MASK` (null strings are possible).
    pub fn has_mask(&self) -> bool {
        self.mask.is_some()
    }
}

fn check_span(path: &str, span: &Range<u64>, extent: u64, what: &str) -> Result<()> {
    if span.end > extent {
        return Err(invalid(
            path,
            format!(
                "OFFSETS point at elements up to {} but {what} has extent {extent}",
                span.end
            ),
        ));
    }
    Ok(())
}

fn alloc_error(path: &str, bytes: u64) -> Error {
    Error::Hdf5(h5fmt::Error::limit(format!(
        "{path}: cannot allocate {bytes} bytes for a list column read"
    )))
}

/// Elements `rows` of a rank-1 dataset (within its extent) as file bytes,
/// into a buffer reserved fallibly, read in pieces of at most [`PIECE_BYTES`].
fn read_fallible(ds: &Dataset, rows: Range<u64>) -> Result<Vec<u8>> {
    let esize = ds.dtype().size().max(1);
    let n = rows.end.saturating_sub(rows.start);
    let total = n
        .checked_mul(esize)
        .ok_or_else(|| alloc_error(ds.path(), u64::MAX))?;
    let limit = ds.file().ctx().limits.max_read_bytes;
    if total > limit {
        return Err(Error::Hdf5(h5fmt::Error::limit(format!(
            "{}: a list column read of {total} bytes exceeds the read limit {limit}",
            ds.path()
        ))));
    }
    let total_usize = usize::try_from(total).map_err(|_| alloc_error(ds.path(), total))?;
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve_exact(total_usize)
        .map_err(|_| alloc_error(ds.path(), total))?;
    let piece = (PIECE_BYTES as u64 / esize).max(1);
    let mut at = rows.start;
    while at < rows.end {
        let count = piece.min(rows.end - at);
        let sel = Selection::Hyperslab(vec![SliceDim {
            start: at,
            stride: 1,
            count,
            block: 1,
        }]);
        let bytes = ds.read_slice_raw(&sel)?;
        if bytes.len() as u64 != count * esize {
            return Err(Error::Hdf5(h5fmt::Error::corrupt(
                format!("{}: short read of list member elements", ds.path()),
                0,
            )));
        }
        out.extend_from_slice(&bytes);
        at += count;
    }
    Ok(out)
}

fn try_vec<T>(n: usize, path: &str, elem: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n)
        .map_err(|_| alloc_error(path, (n as u64).saturating_mul(elem as u64)))?;
    Ok(v)
}

/// `OFFSETS[a..=b]` checked (and rebased to start at 0), `MASK[a..b]`
/// checked, and the child span `OFFSETS[a]..OFFSETS[b]`.
#[allow(clippy::type_complexity)]
fn read_offsets(
    path: &str,
    offsets: &Dataset,
    mask: Option<&Dataset>,
    entries: Range<u64>,
) -> Result<(Vec<u64>, Option<Vec<bool>>, Range<u64>)> {
    if entries.start > entries.end {
        return Err(Error::usage(format!(
            "{path}: entries {}..{} are not a range",
            entries.start, entries.end
        )));
    }
    let extent = offsets.shape()[0];
    if entries.end >= extent {
        return Err(invalid(
            offsets.path(),
            format!(
                "OFFSETS has extent {extent}, fewer than the {} entries read + 1",
                entries.end
            ),
        ));
    }
    let raw = read_fallible(offsets, entries.start..entries.end + 1)?;
    let dt = offsets.dtype();
    let esize = usize::try_from(dt.size()).unwrap_or(usize::MAX).max(1);
    let n = usize::try_from(entries.end - entries.start).map_err(|_| alloc_error(path, 0))?;
    let mut offs: Vec<u64> = try_vec(n + 1, path, 8)?;
    for (i, e) in raw.chunks_exact(esize).enumerate() {
        let code = h5fmt::data::decode::integer_code(dt, e)?;
        let v = u64::try_from(code).map_err(|_| {
            invalid(
                offsets.path(),
                format!("OFFSETS[{}] = {code} is negative", entries.start + i as u64),
            )
        })?;
        if let Some(&prev) = offs.last() {
            if v < prev {
                return Err(invalid(
                    offsets.path(),
                    format!(
                        "OFFSETS decrease: OFFSETS[{}] = {v} < OFFSETS[{}] = {prev}",
                        entries.start + i as u64,
                        entries.start + i as u64 - 1
                    ),
                ));
            }
        }
        offs.push(v);
    }
    let (first, last) = match (offs.first(), offs.last()) {
        (Some(&f), Some(&l)) => (f, l),
        _ => return Err(invalid(offsets.path(), "OFFSETS read back empty")),
    };
    if entries.start == 0 && first != 0 {
        return Err(invalid(
            offsets.path(),
            format!("OFFSETS[0] = {first}, not 0"),
        ));
    }
    let valid = match mask {
        None => None,
        Some(m) => {
            let mext = m.shape()[0];
            if entries.end > mext {
                return Err(invalid(
                    m.path(),
                    format!(
                        "MASK has extent {mext}, fewer than the {} entries read",
                        entries.end
                    ),
                ));
            }
            let codes = read_fallible(m, entries.clone())?;
            let mut valid: Vec<bool> = try_vec(n, path, 1)?;
            for (i, &c) in codes.iter().enumerate() {
                let row = entries.start + i as u64;
                let present = match c {
                    0 => false,
                    1 => true,
                    _ => {
                        return Err(invalid(
                            m.path(),
                            format!("MASK[{row}] = {c}, neither FALSE (0) nor TRUE (1)"),
                        ))
                    }
                };
                if !present && offs.get(i) != offs.get(i + 1) {
                    return Err(invalid(
                        m.path(),
                        format!(
                            "entry {row} is null (MASK FALSE) but its OFFSETS span is not empty"
                        ),
                    ));
                }
                valid.push(present);
            }
            Some(valid)
        }
    };
    for o in &mut offs {
        *o -= first;
    }
    Ok((offs, valid, first..last))
}

fn decode(level: &ListLevel, raw: RawList) -> Result<ListSlice> {
    let missing = match raw.valid {
        Some(v) => v.into_iter().map(|p| !p).collect(),
        None => vec![false; raw.offsets.len().saturating_sub(1)],
    };
    let elements = match (&level.values, raw.child) {
        (ListValues::Leaf(c), RawValues::Leaf { raw, n }) => {
            ListElements::Values(decode_leaf(c, &raw, n)?)
        }
        (
            ListValues::Strings(s),
            RawValues::Strings {
                offsets,
                chars,
                valid,
            },
        ) => ListElements::Values(decode_strings(&s.path, &offsets, &chars, valid)?),
        (ListValues::Lists(l), RawValues::Lists(r)) => {
            ListElements::Lists(Box::new(decode(l, *r)?))
        }
        _ => return Err(Error::usage("list level and its bytes disagree")),
    };
    Ok(ListSlice {
        offsets: raw.offsets,
        missing,
        elements,
    })
}

/// Elements decoded into a buffer reserved fallibly, a piece at a time.
fn decode_leaf(c: &Column, raw: &[u8], n: u64) -> Result<ColumnSlice> {
    let ds = c.dataset();
    let file = ds.file();
    let esize = usize::try_from(c.dtype().size())
        .unwrap_or(usize::MAX)
        .max(1);
    let count = usize::try_from(n).map_err(|_| alloc_error(ds.path(), n))?;
    let mut values: Vec<Value> = try_vec(count, ds.path(), core::mem::size_of::<Value>())?;
    let heap = file.heap();
    for part in raw.chunks(esize.saturating_mul(65_536)) {
        let k = (part.len() / esize) as u64;
        values.extend(h5fmt::data::decode::decode_elements(
            c.dtype(),
            part,
            k,
            file.ctx(),
            &heap,
        )?);
    }
    let missing = c.missing_mask(raw, &values);
    Ok(ColumnSlice { values, missing })
}

fn decode_strings(
    path: &str,
    offsets: &[u64],
    chars: &[u8],
    valid: Option<Vec<bool>>,
) -> Result<ColumnSlice> {
    let n = offsets.len().saturating_sub(1);
    let mut values: Vec<Value> = try_vec(n, path, core::mem::size_of::<Value>())?;
    for w in offsets.windows(2) {
        let (a, b) = (usize::try_from(w[0]), usize::try_from(w[1]));
        let bytes = match (a, b) {
            (Ok(a), Ok(b)) => chars.get(a..b),
            _ => None,
        }
        .ok_or_else(|| invalid(path, "string OFFSETS outside CHARS"))?;
        values.push(match core::str::from_utf8(bytes) {
            Ok(s) => Value::Str(s.to_owned()),
            Err(_) => Value::RawStr(bytes.to_vec()),
        });
    }
    let missing = match valid {
        Some(v) => v.into_iter().map(|p| !p).collect(),
        None => vec![false; n],
    };
    Ok(ColumnSlice { values, missing })
}

impl ListColumn {
    pub(crate) fn open(g: &Group, name: &str, table_vocab: Option<&str>, table: &Group) -> Self {
        let attrs = g.attrs().unwrap_or_default();
        let string = |n: &str| attrs.iter().find(|a| a.name() == n).and_then(attr_string);
        let kind = string("KIND");
        let units_vocabulary = string("units_vocabulary").or_else(|| table_vocab.map(String::from));
        let layout = match kind.as_deref() {
            Some(OFFSETS_KIND) => {
                ListLevel::open(g, name, units_vocabulary.as_deref(), table, 0).map(Box::new)
            }
            other => Err(Error::Hdf5(h5fmt::Error::unsupported(format!(
                "{}: list column of KIND {other:?}; only OFFSETS is implemented",
                g.path()
            )))),
        };
        ListColumn {
            name: name.to_owned(),
            group: g.clone(),
            units: string("units"),
            description: string("description"),
            units_vocabulary,
            kind,
            layout,
        }
    }

    /// The column name (the group's link name).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The list column group.
    pub fn group(&self) -> &Group {
        &self.group
    }
    /// The `KIND` attribute (`"OFFSETS"` is the only one the draft defines).
    pub fn kind(&self) -> Option<&str> {
        self.kind.as_deref()
    }
    /// The top level of the encoding.
    ///
    /// # Errors
    /// Why the column cannot be read: an unknown `KIND`, a missing or
    /// malformed member, nesting deeper than [`MAX_DEPTH`].
    pub fn layout(&self) -> Result<&ListLevel> {
        match &self.layout {
            Ok(l) => Ok(l),
            Err(e) => Err(e.clone()),
        }
    }
    /// Whether rows can be null lists (the top level has a `MASK`).
    pub fn nullable(&self) -> bool {
        self.layout.as_ref().is_ok_and(|l| l.mask.is_some())
    }
    /// The extent of the top-level `OFFSETS` (≥ NROWS + 1 in a conformant table).
    pub fn offsets_extent(&self) -> Option<u64> {
        self.layout.as_ref().ok().map(|l| l.offsets.shape()[0])
    }

    /// Rows `rows` (within `[0, NROWS)`, which the caller checks) decoded:
    /// per-row offsets into the flat elements, null rows, and the elements
    /// with their own missing flags (leaf fill values, string masks).
    ///
    /// # Errors
    /// [`ListColumn::layout`]'s error; [`Error::Invalid`] ([`SECTION`]) for
    /// offsets that decrease, do not start at 0, or point past what they
    /// index, a `MASK` code other than 0/1, a null entry that is not empty,
    /// extents below the entries read; a `Limit` error when a buffer cannot
    /// be allocated; HDF5 read errors.
    pub fn read(&self, rows: Range<u64>) -> Result<ListSlice> {
        self.layout()?.read(rows)
    }
}

/// Entries per piece when [`validate`] scans `OFFSETS` and `MASK`.
const SCAN_ENTRIES: u64 = 1 << 16;

/// Members a list level may hold.
const LEVEL_MEMBERS: &[&str] = &["OFFSETS", "VALUES", "MASK"];
/// Members a `STRING_VALUES` group may hold.
const STRING_MEMBERS: &[&str] = &["OFFSETS", "CHARS", "MASK"];

fn member_dataset(g: &Group, name: &str) -> Option<Dataset> {
    match g.member(name) {
        Ok(Object::Dataset(ds)) => Some(*ds),
        _ => None,
    }
}

fn check_members(g: &Group, allowed: &[&str], out: &mut Vec<(String, String)>) {
    for l in g.links().unwrap_or_default() {
        if !allowed.contains(&l.name.as_str()) {
            out.push((
                child_path(g.path(), &l.name),
                format!(
                    "unexpected member {:?} (a {} holds only {})",
                    l.name,
                    if allowed.contains(&"CHARS") {
                        "STRING_VALUES group"
                    } else {
                        "list level"
                    },
                    allowed.join(", ")
                ),
            ));
        }
    }
}

/// Checks `OFFSETS` (and `MASK`) of one level holding `count` entries:
/// datatypes, extents, `OFFSETS[0] = 0`, monotone, mask codes, empty null
/// entries. Returns `OFFSETS[count]` (the next level's entry count) when
/// they can be read.
fn scan_level(g: &Group, count: u64, out: &mut Vec<(String, String)>) -> Option<u64> {
    let op = child_path(g.path(), "OFFSETS");
    let Some(offsets) = member_dataset(g, "OFFSETS") else {
        out.push((g.path().to_owned(), "no OFFSETS dataset".into()));
        return None;
    };
    if offsets.shape().len() != 1 {
        out.push((op, "OFFSETS is not rank 1".into()));
        return None;
    }
    if !matches!(
        offsets.dtype(),
        Datatype::Integer {
            size: 8,
            signed: false,
            ..
        }
    ) {
        out.push((
            op.clone(),
            format!(
                "OFFSETS has datatype {}, not uint64",
                crate::text::dtype_name(offsets.dtype())
            ),
        ));
        if !matches!(offsets.dtype(), Datatype::Integer { .. }) {
            return None;
        }
    }
    let mask = member_dataset(g, "MASK");
    match &mask {
        Some(m) if m.shape().len() != 1 => {
            out.push((m.path().to_owned(), "MASK is not rank 1".into()));
            return None;
        }
        Some(m) if !crate::model::is_bool_enum(m.dtype()) => {
            out.push((
                m.path().to_owned(),
                format!(
                    "MASK has datatype {}, not the boolean enum (int8, FALSE = 0, TRUE = 1)",
                    crate::text::dtype_name(m.dtype())
                ),
            ));
            if !matches!(
                m.dtype(),
                Datatype::Integer { size: 1, .. } | Datatype::Enum { .. }
            ) {
                return None;
            }
        }
        _ => {}
    }
    let mut at = 0u64;
    loop {
        let end = count.min(at.saturating_add(SCAN_ENTRIES));
        let last = match read_offsets(g.path(), &offsets, mask.as_ref(), at..end) {
            Ok((_, _, span)) => span.end,
            Err(Error::Invalid { path, message, .. }) => {
                out.push((path, message));
                return None;
            }
            Err(e) => {
                out.push((op, format!("cannot be read: {e}")));
                return None;
            }
        };
        if end >= count {
            return Some(last);
        }
        at = end;
    }
}

/// Structural findings (path, message) of a list column group against the
/// draft's consistency rules 10 and 11, for `nrows` rows: `CLASS`/`KIND`,
/// the members of every level, `OFFSETS` (uint64, extent ≥ L + 1, starts at
/// 0, non-decreasing), `MASK` (the boolean enum, extent ≥ L, codes 0/1,
/// null entries empty), `VALUES` (a rank-1 leaf without variable-length
/// datatypes and extent ≥ its element count, a nested level, or a
/// `STRING_VALUES` group whose `CHARS` is rank-1 uint8 of sufficient extent).
/// Reads `OFFSETS` and `MASK` in pieces.
pub fn validate(g: &Group, nrows: u64) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if g.attr("SEARCH_INDEX_LIST").is_ok() {
        out.push((
            g.path().to_owned(),
            "a list column carries SEARCH_INDEX_LIST (no search index is defined over list columns)"
                .into(),
        ));
    }
    let mut cur = g.clone();
    let mut count = nrows;
    for _ in 0..MAX_DEPTH {
        let kind = cur.attr("KIND").ok().and_then(|a| attr_string(&a));
        match kind.as_deref() {
            Some(OFFSETS_KIND) => {}
            None => {
                out.push((cur.path().to_owned(), "no KIND attribute".into()));
                return out;
            }
            Some(k) => {
                out.push((
                    cur.path().to_owned(),
                    format!(
                        "KIND {k:?} is not implemented (only OFFSETS): the column cannot be read"
                    ),
                ));
                return out;
            }
        }
        check_members(&cur, LEVEL_MEMBERS, &mut out);
        let Some(elements) = scan_level(&cur, count, &mut out) else {
            return out;
        };
        let vp = child_path(cur.path(), "VALUES");
        match cur.member("VALUES") {
            Ok(Object::Dataset(ds)) => {
                if ds.shape().len() != 1 {
                    out.push((vp, "leaf VALUES is not rank 1".into()));
                } else {
                    if ds.dtype().is_variable_length() {
                        out.push((
                            vp.clone(),
                            "leaf VALUES has a variable-length datatype, which is prohibited below a list column"
                                .into(),
                        ));
                    }
                    if ds.shape()[0] < elements {
                        out.push((
                            vp,
                            format!(
                                "leaf VALUES has extent {} < element count {elements}",
                                ds.shape()[0]
                            ),
                        ));
                    }
                }
                return out;
            }
            Ok(Object::Group(sub)) => match class_of(&sub).as_deref() {
                Some(LIST_COLUMN_CLASS) => {
                    cur = sub;
                    count = elements;
                }
                Some(STRING_VALUES_CLASS) => {
                    check_members(&sub, STRING_MEMBERS, &mut out);
                    let Some(bytes) = scan_level(&sub, elements, &mut out) else {
                        return out;
                    };
                    match member_dataset(&sub, "CHARS") {
                        None => out.push((vp, "STRING_VALUES has no CHARS dataset".into())),
                        Some(chars) => {
                            let cp = chars.path().to_owned();
                            if chars.shape().len() != 1
                                || !matches!(
                                    chars.dtype(),
                                    Datatype::Integer {
                                        size: 1,
                                        signed: false,
                                        ..
                                    }
                                )
                            {
                                out.push((cp, "CHARS is not a rank-1 uint8 dataset".into()));
                            } else if chars.shape()[0] < bytes {
                                out.push((
                                    cp,
                                    format!(
                                        "CHARS has extent {} < byte count {bytes}",
                                        chars.shape()[0]
                                    ),
                                ));
                            }
                        }
                    }
                    return out;
                }
                other => {
                    out.push((
                        vp,
                        format!(
                            "VALUES group has CLASS {other:?}, neither LIST_COLUMN nor STRING_VALUES"
                        ),
                    ));
                    return out;
                }
            },
            Ok(_) => {
                out.push((vp, "VALUES is neither a dataset nor a group".into()));
                return out;
            }
            Err(_) => {
                out.push((cur.path().to_owned(), "no VALUES member".into()));
                return out;
            }
        }
    }
    out.push((
        g.path().to_owned(),
        format!("list column nested more than {MAX_DEPTH} levels deep"),
    ));
    out
}
