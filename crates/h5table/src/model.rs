//! The HEP001 data model: table groups (§7), column datasets (§8), missing
//! values (§8.5), categories (§8.7) and row index columns (§9).

use crate::error::{Error, Result};
use crate::list::ListColumn;
use alloc::borrow::ToOwned;
use alloc::boxed::Box;
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::data::value::Reference;
use h5fmt::format::datatype::Datatype;
use h5fmt::format::message::fill_value::FillState;
use h5fmt::{Addr, Attribute, Dataset, File, Group, Object, Value};

/// The value of the `CLASS` attribute that identifies a table group (§7.1).
pub const CLASS_VALUE: &str = "COLUMN_TABLE";

/// The highest VERSION major this implementation reads (§7.2).
pub const MAJOR: u64 = 1;

/// HEP001's reserved names (§13.2): never column names.
pub const RESERVED_NAMES: &[&str] = &[
    "CATEGORIES",
    "SEARCH_INDEXES",
    "CLASS",
    "VERSION",
    "NROWS",
    "TITLE",
    "INDEX_COLUMNS",
    "SEARCH_INDEX_LIST",
    "valid_min",
    "valid_max",
    "KIND",
    "VALUES",
    "CHUNK_MINMAX",
    "SORTED_ROWS",
    "BITMAP",
    "CHUNK_BLOOM",
];

/// Every HEP001 table group in the file (§7.1: groups whose `CLASS`
/// attribute is the string `COLUMN_TABLE`, and only those), as paths in
/// depth-first order of link names. Each group is visited once, whatever
/// the number of links to it.
///
/// # Errors
/// Decode errors of the root group. Members that cannot be opened (dangling
/// or external links, corrupt headers) are skipped.
pub fn find_tables(file: &File) -> Result<Vec<String>> {
    let root = file.root()?;
    let mut out = Vec::new();
    let mut seen: BTreeSet<u64> = BTreeSet::new();
    let mut stack: Vec<Group> = vec![root];
    seen.insert(stack[0].addr().0);
    while let Some(g) = stack.pop() {
        if is_table_group(&g) {
            out.push(g.path().to_owned());
        }
        let Ok(links) = g.links() else { continue };
        let mut children = Vec::new();
        for l in links {
            if let Ok(Object::Group(c)) = g.member(&l.name) {
                if seen.insert(c.addr().0) {
                    children.push(c);
                }
            }
        }
        // Pushed in reverse so that they pop in name order.
        stack.extend(children.into_iter().rev());
    }
    Ok(out)
}

/// Whether the group carries `CLASS == "COLUMN_TABLE"` (§7.1), whatever the
/// attribute's string type.
pub fn is_table_group(g: &Group) -> bool {
    g.attr("CLASS")
        .ok()
        .and_then(|a| attr_string(&a))
        .is_some_and(|s| s == CLASS_VALUE)
}

/// A string attribute's value (fixed or variable length, first element),
/// with trailing NULs removed.
pub fn attr_string(a: &Attribute) -> Option<String> {
    match a.read_values().ok()?.into_iter().next()? {
        Value::Str(s) => Some(s.trim_end_matches('\0').to_owned()),
        Value::RawStr(b) => Some(
            String::from_utf8_lossy(&b)
                .trim_end_matches('\0')
                .to_owned(),
        ),
        _ => None,
    }
}

/// All elements of a string array attribute.
pub fn attr_strings(a: &Attribute) -> Option<Vec<String>> {
    a.read_values()
        .ok()?
        .into_iter()
        .map(|v| match v {
            Value::Str(s) => Some(s.trim_end_matches('\0').to_owned()),
            Value::RawStr(b) => Some(
                String::from_utf8_lossy(&b)
                    .trim_end_matches('\0')
                    .to_owned(),
            ),
            _ => None,
        })
        .collect()
}

/// An integer attribute's first element as `u64` (negative values refused).
pub fn attr_u64(a: &Attribute) -> Option<u64> {
    match a.read_values().ok()?.into_iter().next()? {
        Value::UInt(u) => Some(u),
        Value::Int(i) => u64::try_from(i).ok(),
        _ => None,
    }
}

/// A HEP001 boolean attribute (§6): `Some(true/false)` for the `FALSE`/`TRUE`
/// enum; other encodings are read by their integer value.
pub fn attr_bool(a: &Attribute) -> Option<bool> {
    match a.read_values().ok()?.into_iter().next()? {
        Value::Enum { code, .. } => Some(code != 0),
        Value::Int(i) => Some(i != 0),
        Value::UInt(u) => Some(u != 0),
        _ => None,
    }
}

/// Whether a datatype is the §6 boolean: an `H5T_STD_I8LE` enum with exactly
/// `FALSE = 0` and `TRUE = 1` (what producers must write).
pub fn is_hep_bool(dt: &Datatype) -> bool {
    *dt == Datatype::bool_enum()
}

/// Whether a datatype reads as a boolean: the consumer rule of the upstream
/// H5Col draft ("The boolean datatype"), any enumeration over a one-byte
/// integer of either signedness and byte order whose members are exactly
/// `FALSE = 0` and `TRUE = 1` (in any declaration order). The §6 boolean
/// ([`is_hep_bool`]) is one of them.
pub fn is_bool_enum(dt: &Datatype) -> bool {
    let Datatype::Enum { base, members } = dt else {
        return false;
    };
    if !matches!(**base, Datatype::Integer { size: 1, .. }) || members.len() != 2 {
        return false;
    }
    let code = |name: &str| {
        members
            .iter()
            .find(|m| m.name == name)
            .and_then(|m| h5fmt::data::decode::integer_code(base, &m.value).ok())
    };
    code("FALSE") == Some(0) && code("TRUE") == Some(1)
}

/// The object addresses of a reference attribute (either reference type).
/// Null references are `None`.
pub fn attr_refs(a: &Attribute) -> Option<Vec<Option<Addr>>> {
    a.read_values()
        .ok()?
        .into_iter()
        .map(|v| match v {
            Value::Ref(Reference::Object(addr)) => Some(Some(addr)),
            Value::Ref(Reference::Null) => Some(None),
            _ => None,
        })
        .collect()
}

fn find_attr<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name() == name)
}

/// Parse a `MAJOR.MINOR[.PATCH]` VERSION string numerically (§7.2).
pub fn parse_version(s: &str) -> Option<(u64, u64, u64)> {
    let mut it = s.trim().split('.');
    let major = it.next()?.trim().parse().ok()?;
    let minor = match it.next() {
        Some(m) => m.trim().parse().ok()?,
        None => 0,
    };
    let patch = match it.next() {
        Some(p) => p.trim().parse().ok()?,
        None => 0,
    };
    if it.next().is_some() {
        return None;
    }
    Some((major, minor, patch))
}

/// What kind of data a column holds, as HEP001 users see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Signed or unsigned integers.
    Int,
    /// IEEE floats (16, 32 or 64 bits).
    Float,
    /// Fixed- or variable-length strings.
    String,
    /// Integer codes into a categories dataset (§8.7).
    Categorical,
    /// An enumeration (the §6 FALSE/TRUE boolean included).
    Enum,
    /// Opaque bytes.
    Opaque,
    /// A compound of atomic fields (§8.3).
    Compound,
    /// Any other datatype, exposed raw (§8.3).
    Other,
}

/// A column's fill value (§8.5), which marks its missing rows.
#[derive(Debug, Clone)]
pub struct Fill {
    /// The fill value's state in the dataset creation properties.
    pub state: FillState,
    /// The fill element as stored (file byte order); empty when not user-defined.
    pub bytes: Vec<u8>,
    /// The decoded fill value, when user-defined.
    pub value: Option<Value>,
    /// Whether the fill is a NaN bit pattern (the `isnan` branch of §8.5).
    pub is_nan: bool,
}

impl Fill {
    /// Whether a fill value was set explicitly (`H5D_FILL_VALUE_USER_DEFINED`), as §8.5 requires.
    pub fn is_user_defined(&self) -> bool {
        self.state == FillState::User && self.value.is_some()
    }
}

/// The categories dataset of a categorical column (§8.7).
#[derive(Debug, Clone)]
pub struct Categories {
    /// HDF5 path of the categories dataset.
    pub path: String,
    /// Its labels in order: the code `i` means `labels[i]`.
    pub labels: Vec<Value>,
    /// The `ordered` boolean, when present.
    pub ordered: Option<bool>,
}

/// One column dataset of a table (§8).
#[derive(Debug, Clone)]
pub struct Column {
    name: String,
    dataset: Dataset,
    kind: ColumnKind,
    fill: Fill,
    /// `valid_min`, when present (§8.5).
    pub valid_min: Option<Value>,
    /// `valid_max`, when present (§8.5).
    pub valid_max: Option<Value>,
    /// The categories of a categorical column.
    pub categories: Option<Categories>,
    /// `units`.
    pub units: Option<String>,
    /// `units_vocabulary`, the column's own or inherited from the table group (§7.4).
    pub units_vocabulary: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// The search-index datasets its `SEARCH_INDEX_LIST` names (§10.2).
    pub search_index_list: Vec<Option<Addr>>,
}

/// Rows of a column: decoded values and the canonical missing test's verdicts (§8.5).
#[derive(Debug, Clone, PartialEq)]
pub struct ColumnSlice {
    /// One value per row.
    pub values: Vec<Value>,
    /// `missing[i]` when row `i` holds the fill value.
    pub missing: Vec<bool>,
}

fn value_is_nan(v: &Value) -> bool {
    match v {
        Value::F32(x) => x.is_nan(),
        Value::F64(x) => x.is_nan(),
        Value::F16(b) => (b & 0x7c00) == 0x7c00 && (b & 0x03ff) != 0,
        _ => false,
    }
}

impl Column {
    pub(crate) fn open(
        ds: Dataset,
        name: &str,
        table_vocab: Option<&str>,
        table: &Group,
    ) -> Result<Column> {
        let attrs = ds.attrs()?;
        let dtype = ds.dtype().clone();
        let fv = ds.fill_value();
        let (bytes, value) = match (&fv.state, &fv.value) {
            (FillState::User, Some(b)) if b.len() as u64 == dtype.size() => {
                let heap = ds.file().heap();
                let v = h5fmt::data::decode::decode_element(&dtype, b, ds.file().ctx(), &heap).ok();
                (b.clone(), v)
            }
            _ => (Vec::new(), None),
        };
        let is_nan = value.as_ref().is_some_and(value_is_nan);
        let fill = Fill {
            state: fv.state,
            bytes,
            value,
            is_nan,
        };
        let first =
            |n: &str| find_attr(&attrs, n).and_then(|a| a.read_values().ok()?.into_iter().next());
        let string = |n: &str| find_attr(&attrs, n).and_then(attr_string);
        let categories = match find_attr(&attrs, "CATEGORIES").and_then(attr_refs) {
            Some(refs) => match refs.first().copied().flatten() {
                Some(addr) => resolve_categories(table, addr)?,
                None => None,
            },
            None => None,
        };
        let kind = match &dtype {
            Datatype::Integer { .. } if categories.is_some() => ColumnKind::Categorical,
            Datatype::Integer { .. } => ColumnKind::Int,
            Datatype::Float { .. } => ColumnKind::Float,
            Datatype::String { .. } | Datatype::VarLenString { .. } => ColumnKind::String,
            Datatype::Enum { .. } => ColumnKind::Enum,
            Datatype::Opaque { .. } => ColumnKind::Opaque,
            Datatype::Compound { .. } => ColumnKind::Compound,
            _ => ColumnKind::Other,
        };
        Ok(Column {
            name: name.to_owned(),
            kind,
            fill,
            valid_min: first("valid_min"),
            valid_max: first("valid_max"),
            categories,
            units: string("units"),
            units_vocabulary: string("units_vocabulary").or_else(|| table_vocab.map(String::from)),
            description: string("description"),
            search_index_list: find_attr(&attrs, "SEARCH_INDEX_LIST")
                .and_then(attr_refs)
                .unwrap_or_default(),
            dataset: ds,
        })
    }

    /// The column name (the dataset's link name).
    pub fn name(&self) -> &str {
        &self.name
    }
    /// The column dataset.
    pub fn dataset(&self) -> &Dataset {
        &self.dataset
    }
    /// The element datatype.
    pub fn dtype(&self) -> &Datatype {
        self.dataset.dtype()
    }
    /// The kind of values.
    pub fn kind(&self) -> ColumnKind {
        self.kind
    }
    /// The fill value (§8.5).
    pub fn fill(&self) -> &Fill {
        &self.fill
    }
    /// The dataset's first-dimension extent (≥ NROWS in a conformant table).
    pub fn extent(&self) -> u64 {
        self.dataset.shape().first().copied().unwrap_or(0)
    }
    /// The chunk length of a chunked column, `None` for contiguous or compact storage.
    pub fn chunk_len(&self) -> Option<u64> {
        match self.dataset.layout() {
            h5fmt::format::message::layout::Layout::Chunked(c) => c.dims.first().copied(),
            _ => None,
        }
    }

    /// The file bytes (file byte order, variable-length descriptors as
    /// stored) of rows `rows`.
    ///
    /// # Errors
    /// `Usage` for rows past the extent; HDF5 read errors.
    pub fn read_raw(&self, rows: Range<u64>) -> Result<Vec<u8>> {
        match self.rows_selection(&rows)? {
            None => Ok(Vec::new()),
            Some(sel) => Ok(self.dataset.read_slice_raw(&sel)?),
        }
    }

    /// The selection of rows `rows` (`None` when empty), checked against
    /// the extent.
    fn rows_selection(&self, rows: &Range<u64>) -> Result<Option<Selection>> {
        if rows.start > rows.end || rows.end > self.extent() {
            return Err(Error::usage(format!(
                "rows {}..{} outside column {:?} of extent {}",
                rows.start,
                rows.end,
                self.name,
                self.extent()
            )));
        }
        if rows.start == rows.end {
            return Ok(None);
        }
        Ok(Some(Selection::Hyperslab(vec![SliceDim {
            start: rows.start,
            stride: 1,
            count: rows.end - rows.start,
            block: 1,
        }])))
    }

    /// As [`Column::read_raw`], into `out` (exactly the rows' bytes): a
    /// scan reuses one buffer for every batch.
    ///
    /// # Errors
    /// As [`Column::read_raw`]; `Usage` when `out` has another size.
    pub fn read_raw_into(&self, rows: Range<u64>, out: &mut [u8]) -> Result<()> {
        match self.rows_selection(&rows)? {
            None => Ok(()),
            Some(sel) => Ok(self.dataset.read_slice_into_raw(&sel, out)?),
        }
    }

    /// Rows `rows` decoded, with the canonical missing test applied to each.
    ///
    /// # Errors
    /// As [`Column::read_raw`], plus element decode errors.
    pub fn read(&self, rows: Range<u64>) -> Result<ColumnSlice> {
        let n = rows.end.saturating_sub(rows.start);
        let raw = self.read_raw(rows)?;
        let file = self.dataset.file();
        let dtype = self.dtype();
        let values =
            h5fmt::data::decode::decode_elements(dtype, &raw, n, file.ctx(), &file.heap())?;
        let missing = self.missing_mask(&raw, &values);
        Ok(ColumnSlice { values, missing })
    }

    /// The canonical missing test (§8.5) over rows given as file bytes and
    /// their decoded values.
    pub fn missing_mask(&self, raw: &[u8], values: &[Value]) -> Vec<bool> {
        let Some(fillv) = &self.fill.value else {
            return vec![false; values.len()];
        };
        if self.fill.is_nan {
            return values.iter().map(value_is_nan).collect();
        }
        if self.dtype().is_variable_length() {
            return values.iter().map(|v| v == fillv).collect();
        }
        let size = self.fill.bytes.len();
        if size == 0 {
            return vec![false; values.len()];
        }
        raw.chunks_exact(size)
            .map(|e| e == self.fill.bytes.as_slice())
            .collect()
    }

    /// The canonical missing test over rows given as file bytes only; for
    /// fixed-size datatypes (variable-length ones need the decoded values:
    /// use [`Column::missing_mask`]).
    pub fn missing_mask_raw(&self, raw: &[u8]) -> Vec<bool> {
        let size = usize::try_from(self.dtype().size()).unwrap_or(0).max(1);
        let n = raw.len() / size;
        if self.fill.value.is_none() {
            return vec![false; n];
        }
        if self.fill.is_nan {
            return match self.dtype() {
                Datatype::Float { order, .. } => raw
                    .chunks_exact(size)
                    .map(|b| {
                        let bits =
                            h5fmt::data::convert::int_value(b, *order, false, 0, (size * 8) as u16);
                        let (exp, man) = match size {
                            2 => (0x7c00i128, 0x03ffi128),
                            4 => (0x7f80_0000, 0x007f_ffff),
                            _ => (0x7ff0_0000_0000_0000, 0x000f_ffff_ffff_ffff),
                        };
                        bits & exp == exp && bits & man != 0
                    })
                    .collect(),
                _ => vec![false; n],
            };
        }
        let fill = self.fill.bytes.as_slice();
        raw.chunks_exact(size).map(|e| e == fill).collect()
    }

    /// Whether one decoded value is missing (for values not read through
    /// [`Column::read`], e.g. query literals).
    pub fn is_missing_value(&self, v: &Value) -> bool {
        match &self.fill.value {
            None => false,
            Some(_) if self.fill.is_nan => value_is_nan(v),
            Some(f) => match (f, v) {
                // Bit equality for floats (§8.5): -0.0 is not 0.0, NaN never equal.
                (Value::F32(a), Value::F32(b)) => a.to_bits() == b.to_bits(),
                (Value::F64(a), Value::F64(b)) => a.to_bits() == b.to_bits(),
                _ => f == v,
            },
        }
    }
}

fn resolve_categories(table: &Group, addr: Addr) -> Result<Option<Categories>> {
    let Ok(Object::Group(cats)) = table.member("CATEGORIES") else {
        return Ok(None);
    };
    for l in cats.links()? {
        if let Ok(Object::Dataset(ds)) = cats.member(&l.name) {
            if ds.addr() == addr {
                let labels = ds.read_values()?;
                let ordered = ds.attr("ordered").ok().and_then(|a| attr_bool(&a));
                return Ok(Some(Categories {
                    path: ds.path().to_owned(),
                    labels,
                    ordered,
                }));
            }
        }
    }
    Ok(None)
}

/// A HEP001 table group, opened leniently: what can be read is read, and
/// [`crate::check`] reports what breaks the rules.
#[derive(Debug, Clone)]
pub struct Table {
    group: Group,
    version: String,
    nrows: u64,
    columns: Vec<Column>,
    list_columns: Vec<ListColumn>,
    /// Every column in logical order.
    order: Vec<Slot>,
    /// `TITLE`.
    pub title: Option<String>,
    /// `description`.
    pub description: Option<String>,
    /// `units_vocabulary` of the table group.
    pub units_vocabulary: Option<String>,
    /// `column-order`, as stored.
    pub column_order: Option<Vec<String>>,
    /// Column names that `INDEX_COLUMNS` designates, outermost first (§9).
    pub index_columns: Vec<String>,
    /// `_index`.
    pub index_name: Option<String>,
    /// The upstream draft's `GENERATION` token, when present.
    pub generation: Option<u64>,
}

impl Table {
    /// Open a table group.
    ///
    /// # Errors
    /// [`Error::NotATable`] without `CLASS == "COLUMN_TABLE"`;
    /// [`Error::UnsupportedVersion`] for a VERSION major above 1;
    /// [`Error::Invalid`] when VERSION or NROWS is missing or unreadable.
    pub fn open(group: &Group) -> Result<Table> {
        let path = group.path().to_owned();
        if !is_table_group(group) {
            return Err(Error::NotATable { path });
        }
        let attrs = group.attrs()?;
        let version = find_attr(&attrs, "VERSION")
            .and_then(attr_string)
            .ok_or_else(|| Error::invalid(&path, "§7.2", "no readable VERSION attribute"))?;
        let (major, _, _) = parse_version(&version).ok_or_else(|| {
            Error::invalid(
                &path,
                "§7.2",
                format!("VERSION {version:?} is not MAJOR.MINOR"),
            )
        })?;
        if major > MAJOR {
            return Err(Error::UnsupportedVersion { path, version });
        }
        let nrows = find_attr(&attrs, "NROWS")
            .ok_or_else(|| Error::invalid(&path, "§7.3", "no NROWS attribute"))
            .and_then(|a| {
                attr_u64(a).ok_or_else(|| {
                    Error::invalid(&path, "§7.3", "NROWS is not a non-negative integer")
                })
            })?;
        let string = |n: &str| find_attr(&attrs, n).and_then(attr_string);
        let units_vocabulary = string("units_vocabulary");
        // Column discovery (§8.2; the upstream draft adds the direct-child
        // groups whose CLASS is LIST_COLUMN).
        let mut found: Vec<AnyColumn> = Vec::new();
        for l in group.links()? {
            match group.member(&l.name) {
                Ok(Object::Dataset(ds)) if ds.shape().len() == 1 => {
                    found.push(AnyColumn::Scalar(Box::new(Column::open(
                        *ds,
                        &l.name,
                        units_vocabulary.as_deref(),
                        group,
                    )?)));
                }
                Ok(Object::Group(g)) if crate::list::is_list_group(&g) => {
                    found.push(AnyColumn::List(Box::new(ListColumn::open(
                        &g,
                        &l.name,
                        units_vocabulary.as_deref(),
                        group,
                    ))));
                }
                _ => {}
            }
        }
        let column_order = find_attr(&attrs, "column-order").and_then(attr_strings);
        if let Some(order) = &column_order {
            let mut ordered = Vec::with_capacity(found.len());
            for name in order {
                if let Some(i) = found.iter().position(|c| c.name() == name) {
                    ordered.push(found.remove(i));
                }
            }
            ordered.append(&mut found);
            found = ordered;
        }
        let mut columns = Vec::new();
        let mut list_columns = Vec::new();
        let mut slots = Vec::with_capacity(found.len());
        for c in found {
            match c {
                AnyColumn::Scalar(c) => {
                    slots.push(Slot::Scalar(columns.len()));
                    columns.push(*c);
                }
                AnyColumn::List(c) => {
                    slots.push(Slot::List(list_columns.len()));
                    list_columns.push(*c);
                }
            }
        }
        let index_columns = find_attr(&attrs, "INDEX_COLUMNS")
            .and_then(attr_refs)
            .unwrap_or_default()
            .into_iter()
            .filter_map(|r| {
                let a = r?;
                columns
                    .iter()
                    .find(|c| c.dataset.addr() == a)
                    .map(|c| c.name.clone())
            })
            .collect();
        Ok(Table {
            version,
            nrows,
            title: string("TITLE"),
            description: string("description"),
            units_vocabulary,
            column_order,
            index_columns,
            index_name: string("_index"),
            generation: find_attr(&attrs, "GENERATION").and_then(attr_u64),
            columns,
            list_columns,
            order: slots,
            group: group.clone(),
        })
    }

    /// The table group.
    pub fn group(&self) -> &Group {
        &self.group
    }
    /// HDF5 path of the table group.
    pub fn path(&self) -> &str {
        self.group.path()
    }
    /// The VERSION attribute as stored.
    pub fn version(&self) -> &str {
        &self.version
    }
    /// The number of rows (`NROWS`, §7.3; never the extents).
    pub fn nrows(&self) -> u64 {
        self.nrows
    }
    /// The column datasets in logical order (`column-order` when present,
    /// else link-name order). List columns are not among them: see
    /// [`Table::list_columns`], and [`Table::all_columns`] for both kinds.
    pub fn columns(&self) -> &[Column] {
        &self.columns
    }
    /// A column dataset by name.
    ///
    /// # Errors
    /// `Usage` naming the column when there is no column dataset of that
    /// name (saying so when it is a list column).
    pub fn column(&self, name: &str) -> Result<&Column> {
        self.columns.iter().find(|c| c.name == name).ok_or_else(|| {
            if self.list_columns.iter().any(|c| c.name() == name) {
                Error::usage(format!(
                    "column {name:?} of table {} is a list column (upstream H5Col draft), \
                     which this operation does not support",
                    self.path()
                ))
            } else {
                Error::usage(format!("table {} has no column {name:?}", self.path()))
            }
        })
    }
    /// The list columns of the upstream H5Col draft (`CLASS = "LIST_COLUMN"`
    /// groups; see [`crate::list`]) in logical order.
    pub fn list_columns(&self) -> &[ListColumn] {
        &self.list_columns
    }
    /// A list column by name.
    ///
    /// # Errors
    /// `Usage` when there is no list column of that name.
    pub fn list_column(&self, name: &str) -> Result<&ListColumn> {
        self.list_columns
            .iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| {
                Error::usage(format!("table {} has no list column {name:?}", self.path()))
            })
    }
    /// Every column, datasets and list columns alike, in logical order
    /// (`column-order` when present; the columns it does not name follow in
    /// link-name order).
    pub fn all_columns(&self) -> Vec<TableColumn<'_>> {
        self.order
            .iter()
            .filter_map(|s| match *s {
                Slot::Scalar(i) => self.columns.get(i).map(TableColumn::Scalar),
                Slot::List(i) => self.list_columns.get(i).map(TableColumn::List),
            })
            .collect()
    }
    /// A column of either kind by name.
    ///
    /// # Errors
    /// `Usage` naming the column when there is none of that name.
    pub fn any_column(&self, name: &str) -> Result<TableColumn<'_>> {
        self.all_columns()
            .into_iter()
            .find(|c| c.name() == name)
            .ok_or_else(|| Error::usage(format!("table {} has no column {name:?}", self.path())))
    }
    /// The number of columns of either kind.
    pub fn ncols(&self) -> usize {
        self.columns.len() + self.list_columns.len()
    }
}

#[derive(Debug, Clone, Copy)]
enum Slot {
    Scalar(usize),
    List(usize),
}

enum AnyColumn {
    Scalar(Box<Column>),
    List(Box<ListColumn>),
}

impl AnyColumn {
    fn name(&self) -> &str {
        match self {
            AnyColumn::Scalar(c) => c.name(),
            AnyColumn::List(c) => c.name(),
        }
    }
}

/// A column of a table, of either kind.
#[derive(Debug, Clone, Copy)]
pub enum TableColumn<'a> {
    /// A column dataset (§8).
    Scalar(&'a Column),
    /// A list column (upstream H5Col draft).
    List(&'a ListColumn),
}

impl<'a> TableColumn<'a> {
    /// The column name.
    pub fn name(&self) -> &'a str {
        match self {
            TableColumn::Scalar(c) => c.name(),
            TableColumn::List(c) => c.name(),
        }
    }
}
