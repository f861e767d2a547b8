//! [`TableEditor`]: the §11 mutation protocol on an existing file.

use super::data::{encode, Encoded, FillBytes, Target};
use super::index::{create_indexes, refresh_index, AppendIndexes, IndexSpec, Refresh};
use super::{
    check_cat_fill, create_column, normalize, resolve_fill, set_column_attrs, usage, utf8_attr,
    utf8_list, write_encoded, ColumnData, ColumnSpec,
};
use crate::error::{Error, Result};
use crate::index::{discover, IndexInfo, IndexKind, Validity};
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
/// Search indexes (§10) are maintained before every commit, in this order:
/// first every index of the table gets `SOURCE_GENERATION` = the next
/// `GENERATION` (flushed: from then on it is stale for the committed
/// table, so a crash can never leave a current-looking wrong index), then
/// the rows are written, then each index is recomputed where the change
/// touches it (`CHUNK_MINMAX`/`CHUNK_BLOOM`: only the affected chunks;
/// `SORTED_ROWS`/`BITMAP`: rebuilt, or on append deleted when
/// [`AppendIndexes::Drop`] is chosen) and gets `SOURCE_NROWS` (flushed),
/// and last `NROWS`/`GENERATION` are committed. An index this editor cannot
/// maintain (not growable, unusable parameters) is deleted instead
/// (`SEARCH_INDEX_LIST` reference first). Stale and untokened indexes are
/// recomputed in full.
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
    /// Whether the table group has a `GENERATION` attribute.
    has_generation: bool,
    cols: Vec<ColInfo>,
    column_order: Option<Vec<String>>,
    index: Vec<String>,
    append_indexes: AppendIndexes,
}

impl<'a> TableEditor<'a> {
    /// Open the table group at `path` for changes.
    ///
    /// # Errors
    /// [`Error::NotATable`], [`Error::UnsupportedVersion`] (VERSION major
    /// above 1), [`Error::Invalid`] for a missing or corrupt `NROWS` (not a
    /// scalar `uint64`) or columns whose extents differ or fall below
    /// `NROWS`; `Usage` for a table with list columns (upstream H5Col
    /// draft), which this writer does not extend; HDF5 errors.
    pub fn open(ed: &'a mut FileEditor, path: &str) -> Result<TableEditor<'a>> {
        let mut t = TableEditor {
            ed,
            path: normalize(path),
            nrows: 0,
            extent: 0,
            generation: 0,
            has_generation: false,
            cols: Vec::new(),
            column_order: None,
            index: Vec::new(),
            append_indexes: AppendIndexes::default(),
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
        if let Some(l) = table.list_columns().first() {
            // Rows appended to the datasets alone would leave the list
            // columns short of NROWS.
            return Err(Error::usage(format!(
                "{path}: column {:?} is a list column (upstream H5Col draft), which this \
                 writer cannot extend; refusing to change the table",
                l.name()
            )));
        }
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
        self.has_generation = table.generation.is_some();
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

    /// What an append does to `SORTED_ROWS` and `BITMAP` indexes (default
    /// [`AppendIndexes::Rebuild`]).
    pub fn set_append_indexes(&mut self, a: AppendIndexes) {
        self.append_indexes = a;
    }

    /// The table as committed (and flushed) in the file.
    fn table(&self) -> Result<Table> {
        let file = self.ed.reader().clone();
        let group = file.group(&self.path)?;
        Table::open(&group)
    }

    /// The search indexes of known kinds linked from a column, with the
    /// column's position.
    fn index_list(&self) -> Result<Vec<(usize, IndexInfo)>> {
        let t = self.table()?;
        let d = discover(&t)?;
        Ok(d.indexes
            .into_iter()
            .filter(|i| !matches!(i.kind, IndexKind::Unknown(_)))
            .filter_map(|i| {
                let c = i.column.as_ref()?;
                let ci = self.cols.iter().position(|x| &x.name == c)?;
                Some((ci, i))
            })
            .collect())
    }

    /// Set (or delete, when empty) column `ci`'s `SEARCH_INDEX_LIST`.
    fn set_search_list(&mut self, ci: usize, paths: &[String]) -> Result<()> {
        let cp = self.cols[ci].path.clone();
        if paths.is_empty() {
            if self
                .ed
                .reader()
                .dataset(&cp)?
                .attr("SEARCH_INDEX_LIST")
                .is_ok()
            {
                self.ed.delete_attr(&cp, "SEARCH_INDEX_LIST")?;
            }
        } else {
            let t: Vec<&str> = paths.iter().map(String::as_str).collect();
            self.ed
                .set_attr_object_refs(&cp, "SEARCH_INDEX_LIST", &t, false)?;
        }
        Ok(())
    }

    /// Delete indexes: their `SEARCH_INDEX_LIST` references first
    /// (flushed), then the datasets with their `VALUES` datasets.
    fn remove_indexes(&mut self, doomed: &[(usize, IndexInfo)]) -> Result<()> {
        if doomed.is_empty() {
            return Ok(());
        }
        let all = self.index_list()?;
        let mut cols: Vec<usize> = doomed.iter().map(|d| d.0).collect();
        cols.sort_unstable();
        cols.dedup();
        for ci in cols {
            let keep: Vec<String> = all
                .iter()
                .filter(|(c, i)| *c == ci && !doomed.iter().any(|d| d.1.path == i.path))
                .map(|(_, i)| i.path.clone())
                .collect();
            self.set_search_list(ci, &keep)?;
        }
        self.ed.flush()?;
        let sidx = self.child("SEARCH_INDEXES");
        for (_, info) in doomed {
            let mut names = alloc::vec![info.name.clone()];
            if let Some(v) = &info.params.values {
                if let Some(n) = v.strip_prefix(&format!("{sidx}/")) {
                    names.push(n.to_owned());
                }
            }
            for n in names {
                if self.ed.reader().object(&format!("{sidx}/{n}")).is_ok() {
                    self.ed.delete_link(&sidx, &n)?;
                }
            }
        }
        self.ed.flush()?;
        self.refresh()
    }

    /// Step 1 of index maintenance: delete the indexes `drop` selects, give
    /// every other one `SOURCE_GENERATION` = the next `GENERATION`, flush.
    /// Returns the indexes to bring up to date.
    fn begin_indexes(
        &mut self,
        drop: impl Fn(usize, &IndexInfo) -> bool,
    ) -> Result<Vec<(usize, IndexInfo)>> {
        let list = self.index_list()?;
        let (doomed, keep): (Vec<_>, Vec<_>) = list.into_iter().partition(|(c, i)| drop(*c, i));
        self.remove_indexes(&doomed)?;
        if keep.is_empty() {
            return Ok(keep);
        }
        let g = self.generation.saturating_add(1);
        for (_, i) in &keep {
            self.ed.set_attr(&i.path, "SOURCE_GENERATION", g)?;
        }
        self.ed.flush()?;
        Ok(keep)
    }

    /// Step 3: recompute each index as `how` says over rows `[0, nrows)`
    /// (written and flushed), set `SOURCE_NROWS`, flush; indexes that
    /// cannot be maintained are deleted.
    fn finish_indexes(
        &mut self,
        list: &[(usize, IndexInfo)],
        how: impl Fn(usize, &IndexInfo) -> Refresh,
        nrows: u64,
    ) -> Result<()> {
        if list.is_empty() {
            return Ok(());
        }
        let table = self.table()?;
        let mut doomed = Vec::new();
        for (ci, info) in list {
            let col = table.column(&self.cols[*ci].name)?;
            let h = if info.validity == Validity::Current {
                how(*ci, info)
            } else {
                Refresh::Full
            };
            if refresh_index(self.ed, col, info, &h, nrows)? {
                self.ed.set_attr(&info.path, "SOURCE_NROWS", nrows)?;
            } else {
                doomed.push((*ci, info.clone()));
            }
        }
        self.ed.flush()?;
        self.remove_indexes(&doomed)
    }

    /// Chunks of column `ci` covering rows `rows` (for incremental
    /// `CHUNK_MINMAX`/`CHUNK_BLOOM` maintenance); `Full` for an
    /// unchunked column.
    fn chunks_of(&self, ci: usize, rows: core::ops::Range<u64>) -> Refresh {
        match self.cols[ci].chunk {
            Some(l) if l > 0 => Refresh::Chunks(rows.start / l..rows.end.div_ceil(l)),
            _ => Refresh::Full,
        }
    }

    /// Build a search index on a column from its rows `[0, NROWS)` (§10):
    /// the dataset(s) are written with `SOURCE_GENERATION`/`SOURCE_NROWS`
    /// equal to the table's `GENERATION`/`NROWS` and flushed, then linked
    /// from the column's `SEARCH_INDEX_LIST` (a crash before leaves an
    /// unreferenced, unused dataset). `NROWS` and `GENERATION` do not
    /// change.
    ///
    /// # Errors
    /// `Usage` for an unknown column, a family the column's datatype does
    /// not admit, an index of that family already on the column, or a
    /// `BITMAP` over too many distinct values; HDF5 errors.
    pub fn build_index(&mut self, column: &str, spec: IndexSpec) -> Result<()> {
        self.build_indexes(column, &[spec])
    }

    /// Build several search indexes on one column, as
    /// [`TableEditor::build_index`] builds one, from one read of the
    /// column: all are written and flushed, then linked together.
    ///
    /// # Errors
    /// As [`TableEditor::build_index`], also for two specs of one family;
    /// nothing is linked when one fails.
    pub fn build_indexes(&mut self, column: &str, specs: &[IndexSpec]) -> Result<()> {
        let ci = self
            .cols
            .iter()
            .position(|c| c.name == column)
            .ok_or_else(|| usage(format!("table {} has no column {column:?}", self.path)))?;
        let list = self.index_list()?;
        let sidx = self.child("SEARCH_INDEXES");
        for (i, spec) in specs.iter().enumerate() {
            let kind = spec.kind();
            if list.iter().any(|(c, i)| *c == ci && i.kind == kind)
                || specs[..i].iter().any(|s| s.kind() == kind)
            {
                return Err(usage(format!(
                    "column {column:?} already has a {} index",
                    kind.as_str()
                )));
            }
        }
        let table = self.table()?;
        let col = table.column(column)?;
        for spec in specs {
            let kind = spec.kind();
            if !super::index::kind_allowed(&kind, col.dtype()) {
                return Err(usage(format!(
                    "a {} index is not permitted on column {column:?} (§10)",
                    kind.as_str()
                )));
            }
        }
        for spec in specs {
            let name = super::index::index_name(column, &spec.kind());
            // Leftovers of a build killed before it linked them: no column
            // references them (any referenced index of this family was
            // refused above), so they are removed.
            for n in [name.clone(), format!("{name}.VALUES")] {
                let p = format!("{sidx}/{n}");
                if self.ed.reader().object(&p).is_ok() {
                    if list
                        .iter()
                        .any(|(_, i)| i.path == p || i.params.values.as_deref() == Some(p.as_str()))
                    {
                        return Err(usage(format!("{p} exists and is in use")));
                    }
                    self.ed.delete_link(&sidx, &n)?;
                }
            }
        }
        if specs.is_empty() {
            return Ok(());
        }
        if self.ed.reader().object(&sidx).is_err() {
            let p = self.path.clone();
            self.ed.create_group(&p, "SEARCH_INDEXES")?;
        }
        if !self.has_generation {
            // Tokens need a GENERATION to match (without one the index
            // would read as stale): start it at 0, a value no reader
            // compares with anything before this index exists.
            let p = self.path.clone();
            self.ed.set_attr(&p, "GENERATION", 0u64)?;
            self.ed.flush()?;
            self.has_generation = true;
        }
        let table = self.table()?;
        let col = table.column(column)?;
        let new = create_indexes(self.ed, &sidx, col, specs, self.nrows, self.generation)?;
        self.ed.flush()?;
        let mut paths: Vec<String> = list
            .iter()
            .filter(|(c, _)| *c == ci)
            .map(|(_, i)| i.path.clone())
            .collect();
        paths.extend(new);
        self.set_search_list(ci, &paths)?;
        self.ed.flush()?;
        self.refresh()
    }

    /// Recompute every stale or untokened search index of the table (one a
    /// crash during a change left stale, or one written by a producer
    /// without validity tokens) over rows `[0, NROWS)` and give it tokens
    /// equal to the table's `GENERATION`/`NROWS`. Each is first marked
    /// stale (`SOURCE_GENERATION` = the next `GENERATION`, flushed), then
    /// rewritten (flushed), then tokened (flushed). Rows, `NROWS` and
    /// `GENERATION` do not change. Returns how many were rebuilt; indexes
    /// that cannot be maintained are deleted.
    ///
    /// # Errors
    /// HDF5 errors.
    pub fn rebuild_stale_indexes(&mut self) -> Result<usize> {
        let list: Vec<(usize, IndexInfo)> = self
            .index_list()?
            .into_iter()
            .filter(|(_, i)| i.validity != Validity::Current)
            .collect();
        if list.is_empty() {
            return Ok(0);
        }
        if !self.has_generation {
            let p = self.path.clone();
            self.ed.set_attr(&p, "GENERATION", 0u64)?;
            self.ed.flush()?;
            self.has_generation = true;
        }
        let g = self.generation;
        for (_, i) in &list {
            self.ed
                .set_attr(&i.path, "SOURCE_GENERATION", g.saturating_add(1))?;
        }
        self.ed.flush()?;
        let n = self.nrows;
        self.finish_indexes(&list, |_, _| Refresh::Full, n)?;
        let left: Vec<String> = self
            .index_list()?
            .into_iter()
            .filter(|(_, i)| list.iter().any(|(_, l)| l.path == i.path))
            .map(|(_, i)| i.path)
            .collect();
        for p in &left {
            self.ed.set_attr(p, "SOURCE_GENERATION", g)?;
        }
        self.ed.flush()?;
        self.refresh()?;
        Ok(left.len())
    }

    /// Delete a column's search index of family `kind` (its
    /// `SEARCH_INDEX_LIST` reference first, then the dataset and its
    /// `VALUES` dataset). Nothing happens when there is none.
    ///
    /// # Errors
    /// `Usage` for an unknown column; HDF5 errors.
    pub fn drop_index(&mut self, column: &str, kind: IndexKind) -> Result<()> {
        let ci = self
            .cols
            .iter()
            .position(|c| c.name == column)
            .ok_or_else(|| usage(format!("table {} has no column {column:?}", self.path)))?;
        let doomed: Vec<(usize, IndexInfo)> = self
            .index_list()?
            .into_iter()
            .filter(|(c, i)| *c == ci && i.kind == kind)
            .collect();
        self.remove_indexes(&doomed)
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
        let drop_rebuilt = self.append_indexes == AppendIndexes::Drop;
        let list = self.begin_indexes(|_, i| {
            drop_rebuilt && matches!(i.kind, IndexKind::SortedRows | IndexKind::Bitmap)
        })?;
        for (i, e) in &enc {
            self.write_rows(*i, start, e)?;
        }
        self.ed.flush()?;
        let how = |ci: usize, i: &IndexInfo| match i.kind {
            IndexKind::ChunkMinMax | IndexKind::ChunkBloom => self.chunks_of(ci, start..end),
            _ => Refresh::Full,
        };
        let hows: Vec<Refresh> = list.iter().map(|(c, i)| how(*c, i)).collect();
        self.finish_indexes(&list, |ci, i| pick(&list, &hows, ci, i), end)?;
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
        let list = self.begin_indexes(|_, _| false)?;
        let hows: Vec<Refresh> = list
            .iter()
            .map(|(ci, i)| match i.kind {
                IndexKind::ChunkMinMax | IndexKind::ChunkBloom => {
                    match self.chunks_of(*ci, nrows..nrows) {
                        Refresh::Chunks(r)
                            if !nrows.is_multiple_of(self.cols[*ci].chunk.unwrap_or(1).max(1)) =>
                        {
                            Refresh::Chunks(r.start..r.start + 1)
                        }
                        Refresh::Chunks(_) => Refresh::Tokens,
                        other => other,
                    }
                }
                _ => Refresh::Full,
            })
            .collect();
        self.finish_indexes(&list, |ci, i| pick(&list, &hows, ci, i), nrows)?;
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
        let list = self.begin_indexes(|_, _| false)?;
        self.write_rows(i, start, &e)?;
        self.ed.flush()?;
        let end = start + k;
        let hows: Vec<Refresh> = list
            .iter()
            .map(|(ci, ix)| {
                if *ci != i {
                    Refresh::Tokens
                } else if matches!(ix.kind, IndexKind::ChunkMinMax | IndexKind::ChunkBloom) {
                    self.chunks_of(*ci, start..end)
                } else {
                    Refresh::Full
                }
            })
            .collect();
        let n = self.nrows;
        self.finish_indexes(&list, |ci, ix| pick(&list, &hows, ci, ix), n)?;
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
        let list = self.begin_indexes(|_, _| false)?;
        let n = self.nrows;
        self.finish_indexes(&list, |_, _| Refresh::Tokens, n)?;
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
        let list = self.begin_indexes(|_, _| false)?;
        let n = self.nrows;
        self.finish_indexes(&list, |_, _| Refresh::Tokens, n)?;
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

/// The refresh chosen for index `info` of column `ci` in `list`.
fn pick(list: &[(usize, IndexInfo)], hows: &[Refresh], ci: usize, info: &IndexInfo) -> Refresh {
    list.iter()
        .position(|(c, i)| *c == ci && i.path == info.path)
        .and_then(|p| hows.get(p).cloned())
        .unwrap_or(Refresh::Full)
}
