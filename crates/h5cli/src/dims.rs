//! Dimension scales in `h5 ls -l` (text and JSON): whether a dataset is a
//! scale (and its name), the scales attached to each of its dimensions and
//! their labels, and the datasets a scale is attached to.

use h5fmt::read::dimscale;
use h5fmt::{Addr, Dataset, File};
use serde_json::{json, Map, Value as Json};
use std::cell::OnceCell;
use std::collections::HashMap;

/// Paths of the objects of a file by header address, found by one walk
/// from the root the first time a reference must be named.
pub(crate) struct Names<'f> {
    file: &'f File,
    paths: OnceCell<HashMap<Addr, String>>,
}

impl<'f> Names<'f> {
    pub(crate) fn new(file: &'f File) -> Self {
        Names {
            file,
            paths: OnceCell::new(),
        }
    }

    /// The path of the object at `a` (the first the walk reaches), or the
    /// address when no hard link reaches it.
    fn name(&self, a: Addr) -> String {
        let paths = self.paths.get_or_init(|| {
            let mut m = HashMap::new();
            if let Ok(root) = self.file.root() {
                m.insert(root.addr(), "/".to_string());
                for o in root.walk().flatten() {
                    m.entry(o.addr()).or_insert_with(|| o.path().to_string());
                }
            }
            m
        });
        paths.get(&a).cloned().unwrap_or_else(|| format!("<{a}>"))
    }
}

/// What the H5DS attributes of a dataset say, paths resolved.
struct Dims {
    /// `Some(name)` for a scale (`Some(None)` when it has no `NAME`).
    scale: Option<Option<String>>,
    /// Per dimension: scale paths and label.
    dims: Vec<(Vec<String>, String)>,
    /// The (dataset path, dimension) records of a scale.
    referenced_by: Vec<(String, u32)>,
}

fn read(d: &Dataset, names: &Names<'_>) -> h5fmt::Result<Dims> {
    // One pass over the attributes for the datasets H5DS never touched.
    let h5ds = [
        "CLASS",
        dimscale::DIMENSION_LIST,
        dimscale::DIMENSION_LABELS,
        dimscale::REFERENCE_LIST,
    ];
    if !d.attrs()?.iter().any(|a| h5ds.contains(&a.name())) {
        return Ok(Dims {
            scale: None,
            dims: Vec::new(),
            referenced_by: Vec::new(),
        });
    }
    let scale = if d.is_dimension_scale()? {
        Some(d.scale_name()?)
    } else {
        None
    };
    let scales = d.dimension_scales()?;
    let labels = d.dimension_labels()?;
    let dims = scales
        .iter()
        .zip(labels)
        .map(|(s, l)| (s.iter().map(|r| names.name(r.addr)).collect(), l))
        .collect();
    let referenced_by = d
        .scale_references()?
        .iter()
        .map(|r| (names.name(r.dataset), r.dim))
        .collect();
    Ok(Dims {
        scale,
        dims,
        referenced_by,
    })
}

/// The `h5 ls -l` text of the dimension scales of `d`: `  scale "NAME"`
/// (`  scale` without a `NAME`),
/// then `  dimN PATH,PATH "LABEL"` for each dimension with a scale or a
/// label, then, for a scale, `  of PATH:DIM,…` (its `REFERENCE_LIST`: the
/// datasets and dimensions it is attached to); empty when there is nothing
/// to say.
pub(crate) fn text(d: &Dataset, names: &Names<'_>) -> String {
    let info = match read(d, names) {
        Ok(i) => i,
        Err(e) => return format!("  dims ** error: {} **", e.to_string().replace('\n', " ")),
    };
    let mut s = String::new();
    match &info.scale {
        Some(Some(n)) => s.push_str(&format!("  scale {n:?}")),
        Some(None) => s.push_str("  scale"),
        None => {}
    }
    for (i, (scales, label)) in info.dims.iter().enumerate() {
        if scales.is_empty() && label.is_empty() {
            continue;
        }
        s.push_str(&format!("  dim{i}"));
        if !scales.is_empty() {
            s.push_str(&format!(" {}", scales.join(",")));
        }
        if !label.is_empty() {
            s.push_str(&format!(" {label:?}"));
        }
    }
    if !info.referenced_by.is_empty() {
        let of: Vec<String> = info
            .referenced_by
            .iter()
            .map(|(p, dim)| format!("{p}:{dim}"))
            .collect();
        s.push_str(&format!("  of {}", of.join(",")));
    }
    s
}

/// The JSON fields of the dimension scales of `d` for `h5 ls -l --json`:
/// `dimension_scale` (`{"name": …}`, the name null without `NAME`; null
/// for a dataset that is not a scale), `dims` (per dimension
/// `{"scales": [paths], "label": …}`, only when a dimension has either) and
/// `scale_references` (`[{"dataset": path, "dim": i}]`, for a scale), or
/// `dims_error`.
pub(crate) fn json(d: &Dataset, names: &Names<'_>, m: &mut Map<String, Json>) {
    match read(d, names) {
        Ok(info) => {
            m.insert(
                "dimension_scale".into(),
                info.scale.map_or(Json::Null, |n| json!({ "name": n })),
            );
            if info
                .dims
                .iter()
                .any(|(s, l)| !s.is_empty() || !l.is_empty())
            {
                let dims: Vec<Json> = info
                    .dims
                    .iter()
                    .map(|(s, l)| json!({"scales": s, "label": l}))
                    .collect();
                m.insert("dims".into(), Json::Array(dims));
            }
            if !info.referenced_by.is_empty() {
                let r: Vec<Json> = info
                    .referenced_by
                    .iter()
                    .map(|(p, i)| json!({"dataset": p, "dim": i}))
                    .collect();
                m.insert("scale_references".into(), Json::Array(r));
            }
        }
        Err(e) => {
            m.insert("dims_error".into(), json!(e.to_string()));
        }
    }
}
