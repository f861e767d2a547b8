//! Validation of tables against HEP001's MUSTs (§5–§13), as structured findings.

use alloc::string::String;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Tolerated when reading leniently (e.g. h5col's deprecated `H5T_STD_REF_OBJ`
    /// references, a NULLPAD `CLASS`); an error under `--strict`.
    Warning,
    /// Breaks a MUST: the table is not conformant.
    Error,
}

/// One problem found in a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// HDF5 path of the offending object (table group, column, attribute owner).
    pub path: String,
    /// The HEP001 section of the rule, e.g. `"§12"`.
    pub section: &'static str,
    /// Warning or error.
    pub severity: Severity,
    /// What is wrong, in one line.
    pub message: String,
}

impl core::fmt::Display for Finding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{s}: {}: {} ({})", self.path, self.message, self.section)
    }
}

use crate::error::Result;
use crate::model::{
    self, attr_refs, attr_string, is_bool_enum, is_hep_bool, parse_version, RESERVED_NAMES,
};
use alloc::borrow::ToOwned;
use alloc::collections::BTreeSet;
use alloc::format;
use alloc::string::ToString;
use alloc::vec::Vec;
use h5fmt::format::datatype::{CharSet, RefKind, StringPad};
use h5fmt::format::message::fill_value::FillState;
use h5fmt::{Addr, Attribute, Datatype, File, Group, Object};

/// What `check` looks at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Report lenient-mode tolerances (deprecated reference type, NULLPAD CLASS) as errors.
    pub strict: bool,
    /// Recompute every search index from its column and compare (§16).
    pub verify_indexes: bool,
}

struct Out<'a> {
    findings: &'a mut Vec<Finding>,
    strict: bool,
}

impl Out<'_> {
    fn err(&mut self, path: &str, section: &'static str, message: impl Into<String>) {
        self.findings.push(Finding {
            path: path.to_owned(),
            section,
            severity: Severity::Error,
            message: message.into(),
        });
    }
    /// A tolerance of lenient readers: an error under `strict`.
    fn lenient(&mut self, path: &str, section: &'static str, message: impl Into<String>) {
        let severity = if self.strict {
            Severity::Error
        } else {
            Severity::Warning
        };
        self.findings.push(Finding {
            path: path.to_owned(),
            section,
            severity,
            message: message.into(),
        });
    }
}

/// Check every table group of a file. A file without any table group gives
/// one §7.1 error.
///
/// # Errors
/// Only when the root group cannot be read; problems inside tables are findings.
pub fn check_file(file: &File, opts: &Options) -> Result<Vec<Finding>> {
    let tables = model::find_tables(file)?;
    let mut findings = Vec::new();
    if tables.is_empty() {
        findings.push(Finding {
            path: "/".into(),
            section: "§7.1",
            severity: Severity::Error,
            message: "no group carries CLASS = \"COLUMN_TABLE\": the file holds no HEP001 table"
                .into(),
        });
    }
    for path in tables {
        match file.group(&path) {
            Ok(g) => findings.extend(check_table(&g, opts)),
            Err(e) => findings.push(Finding {
                path,
                section: "§7.1",
                severity: Severity::Error,
                message: format!("table group cannot be opened: {e}"),
            }),
        }
    }
    Ok(findings)
}

fn is_string(dt: &Datatype) -> bool {
    matches!(dt, Datatype::String { .. } | Datatype::VarLenString { .. })
}

fn is_fixed_string(dt: &Datatype) -> bool {
    matches!(dt, Datatype::String { .. })
}

fn is_scalar(a: &Attribute) -> bool {
    a.shape().is_empty() && a.len() == 1
}

fn ref_kind(a: &Attribute) -> Option<RefKind> {
    match a.dtype() {
        Datatype::Reference { kind, .. } => Some(*kind),
        _ => None,
    }
}

/// Checks the datatype of a reference attribute (§5).
fn check_ref_type(out: &mut Out<'_>, owner: &str, a: &Attribute) {
    match ref_kind(a) {
        Some(RefKind::Std) => {}
        Some(RefKind::Object1) => out.lenient(
            owner,
            "§5",
            format!(
                "attribute {} uses the deprecated H5T_STD_REF_OBJ reference type, not H5T_STD_REF",
                a.name()
            ),
        ),
        _ => out.err(
            owner,
            "§5",
            format!(
                "attribute {} is not an HDF5 object reference (H5T_STD_REF)",
                a.name()
            ),
        ),
    }
}

fn check_hep_bool(out: &mut Out<'_>, owner: &str, a: &Attribute) {
    if !is_hep_bool(a.dtype()) {
        out.err(
            owner,
            "§6",
            format!(
                "boolean attribute {} is not the HEP001 enum (H5T_STD_I8LE, FALSE=0, TRUE=1)",
                a.name()
            ),
        );
    } else if !is_scalar(a) {
        out.err(
            owner,
            "§6",
            format!("boolean attribute {} is not scalar", a.name()),
        );
    }
}

fn group_attrs(g: &Group) -> Vec<Attribute> {
    g.attrs().unwrap_or_default()
}

fn get<'a>(attrs: &'a [Attribute], name: &str) -> Option<&'a Attribute> {
    attrs.iter().find(|a| a.name() == name)
}

/// Check one table group against every MUST of §5–§13 that can be checked.
pub fn check_table(g: &Group, opts: &Options) -> Vec<Finding> {
    let mut findings = Vec::new();
    let mut out = Out {
        findings: &mut findings,
        strict: opts.strict,
    };
    let tp = g.path().to_owned();
    let attrs = group_attrs(g);

    // §7.1 CLASS
    if let Some(a) = get(&attrs, "CLASS") {
        match a.dtype() {
            Datatype::String { size, pad, cset } => {
                if *size != 13 {
                    out.err(&tp, "§7.1", format!("CLASS is a {size}-byte string, not 13 bytes"));
                }
                if *pad != StringPad::NullTerm {
                    out.lenient(&tp, "§7.1", "CLASS is not declared null-terminated (H5T_STR_NULLTERM)");
                }
                if *cset != CharSet::Ascii {
                    out.lenient(&tp, "§7.1", "CLASS is not declared ASCII");
                }
            }
            Datatype::VarLenString { .. } => out.err(
                &tp,
                "§7.1, §13",
                "CLASS is a variable-length string, not a fixed-length 13-byte null-terminated ASCII string",
            ),
            _ => out.err(&tp, "§7.1", "CLASS is not a string"),
        }
        if !is_scalar(a) {
            out.err(&tp, "§7.1", "CLASS is not scalar");
        }
    }

    // §7.2 VERSION
    match get(&attrs, "VERSION") {
        None => out.err(&tp, "§7.2", "no VERSION attribute"),
        Some(a) => {
            if !is_fixed_string(a.dtype()) || !is_scalar(a) {
                out.err(
                    &tp,
                    "§7.2",
                    "VERSION is not a scalar fixed-length ASCII string",
                );
            }
            match attr_string(a) {
                None => out.err(&tp, "§7.2", "VERSION cannot be read as a string"),
                Some(v) => match parse_version(&v) {
                    None => out.err(&tp, "§7.2", format!("VERSION {v:?} is not MAJOR.MINOR")),
                    Some((major, _, _)) if major > model::MAJOR => out.err(
                        &tp,
                        "§7.2",
                        format!("VERSION {v:?}: major {major} is above the implemented major 1; the table must not be processed"),
                    ),
                    Some(_) => {}
                },
            }
        }
    }

    // §7.3 NROWS
    let nrows = match get(&attrs, "NROWS") {
        None => {
            out.err(&tp, "§7.3, §12", "no NROWS attribute");
            None
        }
        Some(a) => {
            let ok_type = matches!(
                a.dtype(),
                Datatype::Integer {
                    size: 8,
                    signed: false,
                    ..
                }
            );
            if !ok_type {
                out.err(
                    &tp,
                    "§7.3, §12",
                    format!(
                        "NROWS datatype is {}, not uint64",
                        crate::text::dtype_name(a.dtype())
                    ),
                );
            }
            if !is_scalar(a) {
                out.err(&tp, "§7.3, §12", "NROWS is not scalar");
            }
            model::attr_u64(a)
        }
    };

    // Children: columns, CATEGORIES, SEARCH_INDEXES, nothing else (§7.6, §8.1, §8.2).
    let mut columns: Vec<(String, h5fmt::Dataset)> = Vec::new();
    // List columns of the upstream H5Col draft (crate::list).
    let mut list_columns: Vec<(String, Group)> = Vec::new();
    let mut cats_group: Option<Group> = None;
    let mut index_group: Option<Group> = None;
    let links = match g.links() {
        Ok(l) => l,
        Err(e) => {
            out.err(&tp, "§7.6", format!("members cannot be listed: {e}"));
            Vec::new()
        }
    };
    for l in &links {
        let cp = child_path(&tp, &l.name);
        match g.member(&l.name) {
            Ok(Object::Dataset(ds)) => {
                if ds.shape().len() == 1 {
                    if RESERVED_NAMES.contains(&l.name.as_str()) {
                        out.err(
                            &cp,
                            "§13, §8.1",
                            format!("column named {:?}, a reserved name", l.name),
                        );
                    }
                    columns.push((l.name.clone(), *ds));
                } else {
                    out.err(
                        &cp,
                        "§7.6, §8.1, §12",
                        format!("rank-{} dataset below the table group: not a column (columns have rank 1)", ds.shape().len()),
                    );
                }
            }
            Ok(Object::Group(sub)) => match l.name.as_str() {
                "CATEGORIES" => cats_group = Some(sub),
                "SEARCH_INDEXES" => index_group = Some(sub),
                _ => {
                    let class = sub.attr("CLASS").ok().and_then(|a| attr_string(&a));
                    match class.as_deref() {
                        Some(crate::list::LIST_COLUMN_CLASS) => {
                            out.lenient(
                                &cp,
                                "§7.6",
                                "an upstream H5Col list column (CLASS=LIST_COLUMN, HEP001 draft \
                                 \"H5Col\" 2026-07), not part of HEP001 1.0; read as a list column",
                            );
                            if RESERVED_NAMES.contains(&l.name.as_str()) {
                                out.err(
                                    &cp,
                                    "§13, §8.1",
                                    format!("column named {:?}, a reserved name", l.name),
                                );
                            }
                            list_columns.push((l.name.clone(), sub));
                        }
                        Some("COLUMN_TABLE") => {
                            out.err(&cp, "§7.6", "another table group nested in this one")
                        }
                        _ => out.err(
                            &cp,
                            "§7.6",
                            "a subgroup that is neither CATEGORIES nor SEARCH_INDEXES",
                        ),
                    }
                }
            },
            Ok(Object::Datatype(_)) => {
                out.err(&cp, "§7.6", "a named datatype below the table group")
            }
            Err(e) => out.err(&cp, "§7.6", format!("member cannot be opened: {e}")),
        }
    }

    // §12 item 2: equal extents ≥ NROWS.
    let extents: BTreeSet<u64> = columns.iter().map(|(_, d)| d.shape()[0]).collect();
    if extents.len() > 1 {
        let list: Vec<String> = columns
            .iter()
            .map(|(n, d)| format!("{n}: {}", d.shape()[0]))
            .collect();
        out.err(
            &tp,
            "§12, §8.1",
            format!("column extents differ ({})", list.join(", ")),
        );
    }
    if let Some(n) = nrows {
        for (name, d) in &columns {
            if d.shape()[0] < n {
                out.err(
                    &child_path(&tp, name),
                    "§12, §7.3",
                    format!("column extent {} < NROWS {n}", d.shape()[0]),
                );
            }
        }
    }
    // List columns: the draft's structural rules (its consistency rules 10 and 11).
    for (_, lg) in &list_columns {
        for (p, m) in crate::list::validate(lg, nrows.unwrap_or(0)) {
            out.err(&p, crate::list::SECTION, m);
        }
    }
    let col_addrs: Vec<(Addr, &str)> = columns
        .iter()
        .map(|(n, d)| (d.addr(), n.as_str()))
        .collect();

    // column-order (§7.4, §12 item 6)
    if let Some(a) = get(&attrs, "column-order") {
        if !is_string(a.dtype()) || a.shape().len() != 1 {
            out.err(&tp, "§7.4", "column-order is not a 1-D string array");
        }
        match model::attr_strings(a) {
            None => out.err(&tp, "§7.4", "column-order cannot be read as strings"),
            Some(order) => {
                let mut seen = BTreeSet::new();
                for n in &order {
                    if !seen.insert(n.as_str()) {
                        out.err(&tp, "§12, §7.4", format!("column-order lists {n:?} twice"));
                    }
                    if !columns.iter().any(|(c, _)| c == n)
                        && !list_columns.iter().any(|(c, _)| c == n)
                    {
                        out.err(
                            &tp,
                            "§12, §7.4, §8.2",
                            format!("column-order lists {n:?}, which is not a column of the table"),
                        );
                    }
                }
                let names = columns
                    .iter()
                    .map(|(c, _)| c)
                    .chain(list_columns.iter().map(|(c, _)| c));
                for c in names {
                    if !seen.contains(c.as_str()) {
                        out.err(
                            &tp,
                            "§12, §7.4",
                            format!("column-order does not list column {c:?}"),
                        );
                    }
                }
            }
        }
    }

    // INDEX_COLUMNS and _index (§7.4, §9, §12 item 7)
    let mut first_index: Option<String> = None;
    if let Some(a) = get(&attrs, "INDEX_COLUMNS") {
        check_ref_type(&mut out, &tp, a);
        if a.shape().len() != 1 {
            out.err(&tp, "§7.4", "INDEX_COLUMNS is not a 1-D array");
        }
        match attr_refs(a) {
            None => out.err(
                &tp,
                "§7.4, §12",
                "INDEX_COLUMNS cannot be read as object references",
            ),
            Some(refs) => {
                for (i, r) in refs.iter().enumerate() {
                    match r {
                        None => out.err(&tp, "§12, §7.4", format!("INDEX_COLUMNS[{i}] is a null reference")),
                        Some(addr) => match col_addrs.iter().find(|(a, _)| a == addr) {
                            Some((_, n)) => {
                                if i == 0 {
                                    first_index = Some((*n).to_string());
                                }
                            }
                            None => out.err(
                                &tp,
                                "§12, §7.4",
                                format!("INDEX_COLUMNS[{i}] does not resolve to a column dataset of the table"),
                            ),
                        },
                    }
                }
            }
        }
    }
    if let Some(a) = get(&attrs, "_index") {
        if !is_fixed_string(a.dtype()) {
            out.err(&tp, "§7.4", "_index is not a fixed-length string");
        }
        if let (Some(idx), Some(first)) = (attr_string(a), &first_index) {
            if &idx != first {
                out.err(
                    &tp,
                    "§12, §7.4",
                    format!("_index is {idx:?} but INDEX_COLUMNS[0] is column {first:?}"),
                );
            }
        }
    }

    // CATEGORIES subgroup (§8.7, §12 item 5)
    let mut cat_datasets: Vec<(Addr, String, u64)> = Vec::new();
    if let Some(cg) = &cats_group {
        for l in cg.links().unwrap_or_default() {
            let p = child_path(cg.path(), &l.name);
            match cg.member(&l.name) {
                Ok(Object::Dataset(ds)) => {
                    if ds.shape().len() != 1 {
                        out.err(&p, "§8.7", "categories dataset is not rank 1");
                    }
                    if let Ok(a) = ds.attr("ordered") {
                        check_hep_bool(&mut out, &p, &a);
                    }
                    cat_datasets.push((ds.addr(), p, ds.shape().first().copied().unwrap_or(0)));
                }
                _ => out.err(
                    &p,
                    "§12, §8.7",
                    "the CATEGORIES group holds something other than a categories dataset",
                ),
            }
        }
    }
    let mut cats_used: BTreeSet<u64> = BTreeSet::new();

    // Attribute types in SEARCH_INDEXES (§10.3, §5, §6); what the datasets are
    // and what points where: crate::index::discover, below.
    if let Some(ig) = &index_group {
        for l in ig.links().unwrap_or_default() {
            let p = child_path(ig.path(), &l.name);
            match ig.member(&l.name) {
                Ok(Object::Dataset(ds)) => {
                    let a = ds.attrs().unwrap_or_default();
                    if let Some(k) = get(&a, "KIND") {
                        if !is_fixed_string(k.dtype()) || !is_scalar(k) {
                            out.err(
                                &p,
                                "§10.3",
                                "KIND is not a scalar fixed-length ASCII string",
                            );
                        }
                    }
                    if let Some(v) = get(&a, "VALUES") {
                        check_ref_type(&mut out, &p, v);
                    }
                    if let Some(o) = get(&a, "ordered") {
                        check_hep_bool(&mut out, &p, o);
                    }
                }
                _ => out.err(
                    &p,
                    "§12, §10.1",
                    "the SEARCH_INDEXES group holds something other than datasets",
                ),
            }
        }
    }
    // Per column (§8.5, §8.6, §8.7, §10.2)
    for (name, ds) in &columns {
        let cp = child_path(&tp, name);
        let cattrs = ds.attrs().unwrap_or_default();
        let dt = ds.dtype();
        let fv = ds.fill_value();
        let fill = match (&fv.state, &fv.value) {
            (FillState::User, Some(v)) if v.len() as u64 == dt.size() => Some(v.clone()),
            _ => None,
        };
        let upstream_bool = is_bool_enum(dt);
        if fill.is_none() {
            if upstream_bool {
                out.lenient(
                    &cp,
                    "§8.5",
                    "boolean enum column without a fill value: an upstream H5Col boolean column \
                     (HEP001 draft \"H5Col\" 2026-07), which has no missing values; HEP001 1.0 \
                     requires a user-defined fill value",
                );
            } else {
                out.err(
                    &cp,
                    "§8.5",
                    "no user-defined fill value (H5Pset_fill_value was not called)",
                );
            }
        }
        let heap = ds.file().heap();
        let decode =
            |b: &[u8]| h5fmt::data::decode::decode_element(dt, b, ds.file().ctx(), &heap).ok();
        let fill_v = fill.as_deref().and_then(decode);
        // valid_min / valid_max
        let vmin = get(&cattrs, "valid_min");
        let vmax = get(&cattrs, "valid_max");
        for a in [vmin, vmax].into_iter().flatten() {
            if a.dtype() != dt {
                out.err(
                    &cp,
                    "§8.5, §8.6",
                    format!("{} does not have the column's datatype", a.name()),
                );
            }
            if !is_scalar(a) {
                out.err(&cp, "§8.6", format!("{} is not scalar", a.name()));
            }
        }
        if let (Some(f), Some(lo), Some(hi)) = (&fill_v, vmin, vmax) {
            let lo = lo.read_values().ok().and_then(|v| v.into_iter().next());
            let hi = hi.read_values().ok().and_then(|v| v.into_iter().next());
            if let (Some(lo), Some(hi)) = (lo, hi) {
                let ge = num_cmp(f, &lo).is_some_and(|o| o != core::cmp::Ordering::Less);
                let le = num_cmp(f, &hi).is_some_and(|o| o != core::cmp::Ordering::Greater);
                if ge && le {
                    out.err(
                        &cp,
                        "§8.5",
                        format!(
                            "fill value {} lies inside [valid_min, valid_max] = [{}, {}]",
                            crate::text::format_value(f),
                            crate::text::format_value(&lo),
                            crate::text::format_value(&hi)
                        ),
                    );
                }
            }
        }
        // Categorical (§8.7)
        if let Some(a) = get(&cattrs, "CATEGORIES") {
            check_ref_type(&mut out, &cp, a);
            if !matches!(dt, Datatype::Integer { .. }) {
                out.err(
                    &cp,
                    "§8.7",
                    "categorical column does not have an integer datatype",
                );
            }
            match attr_refs(a).and_then(|r| r.first().copied().flatten()) {
                None => out.err(
                    &cp,
                    "§12, §8.7",
                    "CATEGORIES is not a resolvable object reference",
                ),
                Some(addr) => match cat_datasets.iter().find(|(a, _, _)| *a == addr) {
                    None => out.err(
                        &cp,
                        "§12, §8.7",
                        "CATEGORIES does not resolve to a dataset in the table's CATEGORIES group",
                    ),
                    Some((_, _, ncats)) => {
                        cats_used.insert(addr.0);
                        if let Some(code) = fill_v.as_ref().and_then(crate::text::as_code) {
                            if code >= 0 && code < i128::from(*ncats) {
                                out.err(
                                    &cp,
                                    "§12, §8.7, §8.5",
                                    format!("categorical fill value {code} collides with a valid code in [0, {ncats})"),
                                );
                            }
                        }
                    }
                },
            }
        }
        // Enum fill should be the MISSING member (§8.5)
        if let (Datatype::Enum { members, .. }, Some(f)) = (dt, &fill) {
            if !upstream_bool && !members.iter().any(|m| &m.value == f) {
                out.lenient(&cp, "§8.5", "enum fill value is not a member of the enum (HEP001 recommends a MISSING member)");
            }
        }
        // SEARCH_INDEX_LIST's reference type (§5); where it points: crate::index::discover.
        if let Some(a) = get(&cattrs, "SEARCH_INDEX_LIST") {
            check_ref_type(&mut out, &cp, a);
        }
    }
    for (addr, p, _) in &cat_datasets {
        if !cats_used.contains(&addr.0) {
            out.err(
                p,
                "§12, §8.7",
                "categories dataset referenced by no categorical column",
            );
        }
    }
    // Reserved names as user attributes on the table group (§13.1 rule 2).
    for a in &attrs {
        if matches!(
            a.name(),
            "CATEGORIES" | "SEARCH_INDEX_LIST" | "KIND" | "VALUES" | "valid_min" | "valid_max"
        ) {
            out.err(
                &tp,
                "§13",
                format!(
                    "reserved name {:?} used as a table-group attribute",
                    a.name()
                ),
            );
        }
    }
    // Search indexes (§10, §12 items 3, 4 and 9, §16): structure always, content on request.
    if let Ok(table) = crate::Table::open(g) {
        let idx = if opts.verify_indexes {
            crate::index::verify_table(&table)
        } else {
            crate::index::discover(&table).map(|d| d.findings)
        };
        match idx {
            Ok(f) => findings.extend(f),
            Err(e) => findings.push(Finding {
                path: tp.clone(),
                section: "§10",
                severity: Severity::Error,
                message: format!("search indexes cannot be read: {e}"),
            }),
        }
    }
    findings
}

/// Order of a fill value against a `valid_min`/`valid_max` value.
fn num_cmp(a: &h5fmt::Value, b: &h5fmt::Value) -> Option<core::cmp::Ordering> {
    crate::index::order::cmp_values(a, b)
}

fn child_path(parent: &str, name: &str) -> String {
    if parent.ends_with('/') {
        format!("{parent}{name}")
    } else {
        format!("{parent}/{name}")
    }
}
