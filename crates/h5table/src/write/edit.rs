//! [`TableEditor`]: the §11 mutation protocol on an existing file.

use super::data::{encode, Encoded, FillBytes, Target};
use super::{
    check_cat_fill, create_column, normalize, resolve_fill, set_column_attrs, usage, utf8_attr,
    utf8_list, write_encoded, ColumnData, ColumnSpec,
};
use crate::error::{Error, Result};
use crate::model::{attr_refs, Table};
use alloc::borrow::ToOwned;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;
use h5fmt::format::datatype::Datatype;
use h5fmt::format::message::fill_value::FillState;
use h5fmt::{Addr, FileEditor, Object, Value};

/// What the editor needs of one column.
#[derive(Debug, Clone)]
struct ColInfo {
    name: String,
    path: String,
    dtype: Datatype,
    fill: FillBytes,
    chunk: Option<u64>,
    n_categories: Option<u64>,
    categories_addr: Option<Addr>,
    search: Vec<Addr>,
}

/// Changes an existing HEP001 table in place through a
/// [`h5fmt::FileEditor`], following §11: rows past `NROWS` are reserved
/// storage, new data is written and committed (flushed) first, and
/// `NROWS` (with `GENERATION`, the upstream draft's change token) is
/// written last, in one small in-place attribute overwrite, then flushed.
/// A crash at any point leaves the table as it was before the operation
/// (or after it, once `NROWS` is committed).
///
/// Search indexes (§10) are not maintained: the operations that change
/// rows delete the search indexes of the columns they touch (removing the
/// `SEARCH_INDEX_LIST` reference first, then the index datasets), before
/// committing, as §11.2 step 4 allows.
///
/// Every operation validates its input against the table before the file
/// changes; on error the file is unchanged.
///
/// ```no_run
/// use h5table::write::{ColumnData, TableEditor};
/// let mut ed = h5fmt::FileEditor::open("events.h5")?;
/// let mut t = TableEditor::open(&mut ed, "/my_table")?;
/// t.append(&[("row_id", ColumnData::UInt64(vec![13, 14]))])?;
/// t.truncate(1)?;
/// # Ok::<(), h5table::Error>(())
/// ```
#[derive(Debug)]
pub struct TableEditor<'a> {
    ed: &'a mut FileEditor,
    path: String,
    nrows: u64,
    extent: u64,
    generation: u64,
    cols: Vec<ColInfo>,
    column_order: Option<Vec<String>>,
    index: Vec<String>,
}

impl<'a> TableEditor<'a> {
    /// Open the table group at `path` for changes.
    ///
    /// # Errors
    /// [`Error::NotATable`], [`Error::UnsupportedVersion`] (VERSION major
    /// above 1), [`Error::Invalid`] for a missing or corrupt `NROWS` (not a
    /// scalar `uint64`) or columns whose extents differ or fall below
    /// `NROWS`; HDF5 errors.
    pub fn open(ed: &'a mut FileEditor, path: &str) -> Result<TableEditor<'a>> {
        let mut t = TableEditor {
            ed,
            path: normalize(path),
            nrows: 0,
            extent: 0,
            generation: 0,
            cols: Vec::new(),
            column_order: None,
            index: Vec::new(),
        };
        t.refresh()?;
        Ok(t)
    }

    /// `NROWS` as last committed.
    pub fn nrows(&self) -> u64 {
        self.nrows
    }
    /// The columns' common extent (≥ `NROWS`).
    pub fn extent(&self) -> u64 {
        self.extent
    }
    /// `GENERATION` as last committed (0 when the table has none).
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// Column names in logical order.
    pub fn column_names(&self) -> Vec<String> {
        self.cols.iter().map(|c| c.name.clone()).collect()
    }

    fn child(&self, n: &str) -> String {
        if self.path == "/" {
            format!("/{n}")
        } else {
            format!("{}/{n}", self.path)
        }
    }

    /// Reload the table's state from the committed file.
    fn refresh(&mut self) -> Result<()> {
        let file = self.ed.reader().clone();
        let group = file.group(&self.path)?;
        let table = Table::open(&group)?;
        let path = self.path.clone();
        // NROWS must be a scalar uint64 (§7.3).
        let nrows_attr = group
            .attrs()?
            .into_iter()
            .find(|a| a.name() == "NROWS")
            .ok_or_else(|| Error::invalid(&path, "§7.3", "no NROWS attribute"))?;
        let ok_type = matches!(
            nrows_attr.dtype(),
            Datatype::Integer {
                size: 8,
                signed: false,
                ..
            }
        );
        if !ok_type || !nrows_attr.shape().is_empty() {
            return Err(Error::invalid(
                &path,
                "§7.3",
                "NROWS is not a scalar uint64; refusing to change the table",
            ));
        }
        let mut cols = Vec::new();
        let mut extent = None;
        for c in table.columns() {
            let e = c.extent();
            match extent {
                Some(x) if x != e => {
                    return Err(Error::invalid(
                        &path,
                        "§12",
                        "column extents differ; refusing to change the table",
                    ))
                }
                _ => extent = Some(e),
            }
            let f = c.fill();
            let dtype = c.dtype().clone();
            let fill = if f.state == FillState::User && f.bytes.len() as u64 == dtype.size() {
                FillBytes {
                    bytes: f.bytes.clone(),
                    is_nan: f.is_nan,
                    vlen: match &f.value {
                        Some(Value::Str(s)) => Some(s.as_bytes().to_vec()),
                        Some(Value::RawStr(b)) => Some(b.clone()),
                        _ => None,
                    },
                }
            } else {
                FillBytes {
                    bytes: alloc::vec![0; usize::try_from(dtype.size()).unwrap_or(0)],
                    is_nan: false,
                    vlen: Some(Vec::new()),
                }
            };
            let attrs = c.dataset().attrs()?;
            let categories_addr = attrs
                .iter()
                .find(|a| a.name() == "CATEGORIES")
                .and_then(attr_refs)
                .and_then(|r| r.first().copied().flatten());
            cols.push(ColInfo {
                name: c.name().to_owned(),
                path: self.child(c.name()),
                dtype,
                fill,
                chunk: c.chunk_len(),
                n_categories: c.categories.as_ref().map(|k| k.labels.len() as u64),
                categories_addr,
                search: c.search_index_list.iter().flatten().copied().collect(),
            });
        }
        let extent = extent.unwrap_or(table.nrows());
        if extent < table.nrows() {
            return Err(Error::invalid(
                &path,
                "§12",
                "column extent below NROWS; refusing to change the table",
            ));
        }
        self.nrows = table.nrows();
        self.extent = extent;
        self.generation = table.generation.unwrap_or(0);
        self.cols = cols;
        self.column_order = table.column_order.clone();
        self.index = table.index_columns.clone();
        Ok(())
    }

    /// Encode rows for the named columns; every name must be a column.
    fn encode_rows(
        &self,
        rows: &[(&str, ColumnData)],
        all: bool,
    ) -> Result<(u64, Vec<(usize, Encoded)>)> {
        let mut out = Vec::new();
        let mut n = None;
        for (name, data) in rows {
            let i = self
                .cols
                .iter()
                .position(|c| c.name == *name)
                .ok_or_else(|| usage(format!("table {} has no column {name:?}", self.path)))?;
            if out.iter().any(|(j, _)| *j == i) {
                return Err(usage(format!("column {name:?} given twice")));
            }
            let c = &self.cols[i];
            let enc = encode(
                &Target {
                    name: &c.name,
                    dtype: &c.dtype,
                    fill: &c.fill,
                    n_categories: c.n_categories,
                },
                data,
            )?;
            let k = enc.len(c.dtype.size());
            match n {
                Some(m) if m != k => {
                    return Err(usage(format!("column {name:?} has {k} rows, others {m}")))
                }
                _ => n = Some(k),
            }
            out.push((i, enc));
        }
        if all {
            if let Some(c) = self
                .cols
                .iter()
                .enumerate()
                .find(|(i, _)| !out.iter().any(|(j, _)| j == i))
            {
                return Err(usage(format!("no data given for column {:?}", c.1.name)));
            }
        }
        Ok((n.unwrap_or(0), out))
    }

    /// Check, before anything is staged, that columns `which` can be
    /// written (their filters encoded, their storage edited) and grown to
    /// `extent` rows.
    fn preflight(&mut self, which: &[usize], extent: u64) -> Result<()> {
        for &i in which {
            let Some(c) = self.cols.get(i) else {
                return Err(usage("no such column"));
            };
            let (name, path) = (c.name.clone(), c.path.clone());
            if extent > self.extent {
                if c.chunk.is_none() {
                    return Err(usage(format!(
                        "column {name:?} is not chunked and cannot grow"
                    )));
                }
                let ds = self.ed.reader().dataset(&path)?;
                if let Some(Some(max)) = ds.maxshape().and_then(|m| m.first().copied()) {
                    if max < extent {
                        return Err(usage(format!(
                            "column {name:?} cannot grow to {extent} rows (maximum {max})"
                        )));
                    }
                }
            }
            // Loads the column's storage state: refuses what the editor
            // cannot write (unknown filters, shared messages…).
            self.ed
                .shape(&path)
                .map_err(|e| usage(format!("column {name:?} cannot be written here: {e}")))?;
        }
        Ok(())
    }

    fn write_rows(&mut self, i: usize, start: u64, enc: &Encoded) -> Result<()> {
        let c = &self.cols[i];
        let (path, dtype) = (c.path.clone(), c.dtype.clone());
        write_encoded(self.ed, &path, &dtype, start, enc)
    }

    /// Remove the search indexes of columns `which` (§11.2 step 4): the
    /// `SEARCH_INDEX_LIST` attributes first (committed), then the index
    /// datasets and their accompanying `VALUES` datasets.
    fn drop_search_indexes(&mut self, which: &[usize]) -> Result<()> {
        let mut targets = Vec::new();
        let mut any = false;
        for &i in which {
            let c = &self.cols[i];
            if c.search.is_empty() {
                continue;
            }
            targets.extend(c.search.iter().copied());
            let p = c.path.clone();
            self.ed.delete_attr(&p, "SEARCH_INDEX_LIST")?;
            any = true;
        }
        if !any {
            return Ok(());
        }
        self.ed.flush()?;
        let sidx = self.child("SEARCH_INDEXES");
        let Ok(Object::Group(g)) = self.ed.reader().object(&sidx) else {
            return Ok(());
        };
        // Index datasets still referenced by other columns stay.
        let keep: Vec<Addr> = self
            .cols
            .iter()
            .enumerate()
            .filter(|(i, _)| !which.contains(i))
            .flat_map(|(_, c)| c.search.iter().copied())
            .collect();
        let mut doomed = Vec::new();
        for l in g.links()? {
            if let Ok(Object::Dataset(ds)) = g.member(&l.name) {
                if targets.contains(&ds.addr()) && !keep.contains(&ds.addr()) {
                    doomed.push(l.name.clone());
                    let values = ds
                        .attrs()?
                        .into_iter()
                        .find(|a| a.name() == "VALUES")
                        .and_then(|a| attr_refs(&a))
                        .unwrap_or_default();
                    for v in values.into_iter().flatten() {
                        for l2 in g.links()? {
                            if let Ok(Object::Dataset(d2)) = g.member(&l2.name) {
                                if d2.addr() == v && !doomed.contains(&l2.name) {
                                    doomed.push(l2.name.clone());
                                }
                            }
                        }
                    }
                }
            }
        }
        for n in doomed {
            self.ed.delete_link(&sidx, &n)?;
        }
        Ok(())
    }

    /// Commit `NROWS` = `nrows` and the next `GENERATION`, then flush.
    fn commit(&mut self, nrows: u64) -> Result<()> {
        let p = self.path.clone();
        self.ed.set_attr(&p, "NROWS", nrows)?;
        self.ed
            .set_attr(&p, "GENERATION", self.generation.saturating_add(1))?;
        self.ed.flush()?;
        self.refresh()
    }

    /// Append rows (§11.2): one entry per column, equal lengths. Columns
    /// are extended as needed (spare preallocated capacity is used first),
    /// the rows written and flushed, then `NROWS` committed.
    ///
    /// # Errors
    /// `Usage` for unknown, missing or repeated columns, unequal lengths,
    /// data that does not fit a column; HDF5 errors (e.g. a contiguous
    /// column that cannot grow).
    pub fn append(&mut self, rows: &[(&str, ColumnData)]) -> Result<()> {
        let (k, enc) = self.encode_rows(rows, true)?;
        if k == 0 {
            return Ok(());
        }
        let start = self.nrows;
        let end = start
            .checked_add(k)
            .ok_or_else(|| usage("row count overflows"))?;
        let all: Vec<usize> = (0..self.cols.len()).collect();
        self.preflight(&all, end)?;
        if end > self.extent {
            let paths: Vec<String> = self.cols.iter().map(|c| c.path.clone()).collect();
            for p in paths {
                self.ed.resize(&p, &[end])?;
            }
        }
        self.drop_search_indexes(&all)?;
        for (i, e) in &enc {
            self.write_rows(*i, start, e)?;
        }
        self.ed.flush()?;
        self.commit(end)
    }

    /// Preallocate storage for at least `rows` rows past `NROWS` (§11.3),
    /// extending every column to the same extent, rounded up to whole
    /// chunks of the longest-chunked column. `NROWS` does not change.
    ///
    /// # Errors
    /// `Usage` for contiguous columns; HDF5 errors.
    pub fn reserve(&mut self, rows: u64) -> Result<()> {
        let c = self
            .cols
            .iter()
            .map(|c| c.chunk.unwrap_or(1))
            .max()
            .unwrap_or(1)
            .max(1);
        let target = self
            .nrows
            .checked_add(rows)
            .and_then(|x| x.checked_add(c - 1))
            .map(|x| x / c * c)
            .ok_or_else(|| usage("reserved rows overflow"))?;
        if target <= self.extent {
            return Ok(());
        }
        let all: Vec<usize> = (0..self.cols.len()).collect();
        self.preflight(&all, target)?;
        let paths: Vec<String> = self.cols.iter().map(|c| c.path.clone()).collect();
        for p in paths {
            self.ed.resize(&p, &[target])?;
        }
        self.ed.flush()?;
        self.refresh()
    }

    /// Logical truncation (§11.4): `NROWS` becomes `nrows`; the extents
    /// stay, rows `[nrows, old NROWS)` become reserved storage.
    ///
    /// # Errors
    /// `Usage` when `nrows` exceeds `NROWS`; HDF5 errors.
    pub fn truncate(&mut self, nrows: u64) -> Result<()> {
        if nrows > self.nrows {
            return Err(usage(format!(
                "cannot truncate {} rows to {nrows}: truncation only shrinks",
                self.nrows
            )));
        }
        if nrows == self.nrows {
            return Ok(());
        }
        let all: Vec<usize> = (0..self.cols.len()).collect();
        self.drop_search_indexes(&all)?;
        self.commit(nrows)
    }

    /// Overwrite rows `[start, start + len)` of one column in place
    /// (§11.5; `len` is the data's length, all below `NROWS`). Not atomic
    /// across a crash (§11.5): each chunk is old or new.
    ///
    /// # Errors
    /// `Usage` for an unknown column, rows past `NROWS`, data that does
    /// not fit; HDF5 errors.
    pub fn update(&mut self, column: &str, start: u64, data: ColumnData) -> Result<()> {
        let (k, enc) = self.encode_rows(&[(column, data)], false)?;
        if start.checked_add(k).is_none_or(|e| e > self.nrows) {
            return Err(usage(format!(
                "rows {start}..{} outside the table's {} rows",
                start.saturating_add(k),
                self.nrows
            )));
        }
        let Some((i, e)) = enc.into_iter().next() else {
            return Ok(());
        };
        let extent = self.extent;
        self.preflight(&[i], extent)?;
        self.drop_search_indexes(&[i])?;
        self.write_rows(i, start, &e)?;
        let n = self.nrows;
        self.commit(n)
    }

    /// Add a column (§8): rows `[0, NROWS)` take `rows` when given (of
    /// `NROWS` values), else the column's fill value (missing); its extent
    /// matches the other columns'. Appended to `column-order`. A
    /// categorical column names a categories dataset that exists in the
    /// table's `CATEGORIES` group.
    ///
    /// # Errors
    /// `Usage` for a reserved or existing name, unsupported types, a fill inside the valid range or colliding with a category
    /// code, data of the wrong length; HDF5 errors.
    pub fn add_column(&mut self, spec: ColumnSpec, rows: Option<ColumnData>) -> Result<()> {
        spec.check()?;
        let name = spec.name().to_owned();
        if self.cols.iter().any(|c| c.name == name) {
            return Err(usage(format!("column {name:?} exists")));
        }
        if matches!(name.as_str(), "CATEGORIES" | "SEARCH_INDEXES")
            || self.ed.reader().object(&self.child(&name)).is_ok()
        {
            return Err(usage(format!("{name:?} exists in the table group")));
        }
        let fill = resolve_fill(&name, spec.dtype(), spec.spec_fill())?;
        let valid = spec.valid_of(&fill)?;
        let mut n_categories = None;
        if let Some(cn) = spec.categories_name() {
            if !matches!(spec.dtype(), Datatype::Integer { .. }) {
                return Err(usage(format!(
                    "categorical column {name:?} must have an integer datatype (§8.7)"
                )));
            }
            let cp = format!("{}/{cn}", self.child("CATEGORIES"));
            let Ok(Object::Dataset(ds)) = self.ed.reader().object(&cp) else {
                return Err(usage(format!("no categories dataset {cp}")));
            };
            let n = ds.shape().first().copied().unwrap_or(0);
            check_cat_fill(&name, spec.dtype(), &fill, n)?;
            n_categories = Some(n);
        }
        let enc = match &rows {
            Some(d) => {
                let e = encode(
                    &Target {
                        name: &name,
                        dtype: spec.dtype(),
                        fill: &fill,
                        n_categories,
                    },
                    d,
                )?;
                if e.len(spec.dtype().size()) != self.nrows {
                    return Err(usage(format!(
                        "column {name:?}: {} rows given for a table of {}",
                        e.len(spec.dtype().size()),
                        self.nrows
                    )));
                }
                Some(e)
            }
            None => None,
        };
        let path = self.path.clone();
        create_column(self.ed, &path, &spec, &fill, self.extent)?;
        if let Some(e) = &enc {
            let cp = self.child(&name);
            write_encoded(self.ed, &cp, spec.dtype(), 0, e)?;
        }
        set_column_attrs(self.ed, &path, &spec, valid.as_ref())?;
        let mut order = self.column_names();
        order.push(name);
        self.ed.set_attr(&path, "column-order", utf8_list(&order))?;
        self.ed.flush()?;
        let n = self.nrows;
        self.commit(n)
    }

    /// Drop a column: it leaves `column-order`, `INDEX_COLUMNS` and
    /// `_index` (which then names the new first index column, or goes),
    /// then the dataset is deleted with its search indexes, and its
    /// categories dataset when no other column uses it (and the
    /// `CATEGORIES` group when it becomes empty). The last column cannot
    /// be dropped.
    ///
    /// # Errors
    /// `Usage` for an unknown or the last column; HDF5 errors.
    pub fn drop_column(&mut self, name: &str) -> Result<()> {
        let i = self
            .cols
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| usage(format!("table {} has no column {name:?}", self.path)))?;
        if self.cols.len() == 1 {
            return Err(usage("cannot drop the last column of a table"));
        }
        let path = self.path.clone();
        let order: Vec<String> = self
            .column_names()
            .into_iter()
            .filter(|n| n != name)
            .collect();
        if self.column_order.is_some() || order.len() > 1 {
            self.ed.set_attr(&path, "column-order", utf8_list(&order))?;
        }
        if self.index.iter().any(|n| n == name) {
            let rest: Vec<String> = self
                .index
                .iter()
                .filter(|n| *n != name)
                .map(|n| self.child(n))
                .collect();
            if rest.is_empty() {
                self.ed.delete_attr(&path, "INDEX_COLUMNS")?;
                if self.ed.reader().group(&path)?.attr("_index").is_ok() {
                    self.ed.delete_attr(&path, "_index")?;
                }
            } else {
                let t: Vec<&str> = rest.iter().map(String::as_str).collect();
                self.ed
                    .set_attr_object_refs(&path, "INDEX_COLUMNS", &t, false)?;
                let first = self
                    .index
                    .iter()
                    .find(|n| *n != name)
                    .cloned()
                    .unwrap_or_default();
                self.ed.set_attr(&path, "_index", utf8_attr(&first))?;
            }
        }
        self.ed
            .set_attr(&path, "GENERATION", self.generation.saturating_add(1))?;
        self.ed.flush()?;
        let col = self.cols[i].clone();
        self.drop_search_indexes(&[i])?;
        self.ed.delete_link(&path, name)?;
        if let Some(ca) = col.categories_addr {
            let shared = self
                .cols
                .iter()
                .any(|c| c.name != col.name && c.categories_addr == Some(ca));
            let cpath = self.child("CATEGORIES");
            if !shared {
                if let Ok(Object::Group(g)) = self.ed.reader().object(&cpath) {
                    let mut victim = None;
                    for l in g.links()? {
                        if let Ok(m) = g.member(&l.name) {
                            if m.addr() == ca {
                                victim = Some(l.name.clone());
                            }
                        }
                    }
                    if let Some(v) = victim {
                        self.ed.delete_link(&cpath, &v)?;
                    }
                }
                if let Ok(Object::Group(g)) = self.ed.reader().object(&cpath) {
                    if g.links()?.is_empty() {
                        self.ed.delete_link(&path, "CATEGORIES")?;
                    }
                }
            }
        }
        self.ed.flush()?;
        self.refresh()
    }
}
