//! Cross-check against h5py, in-process through pyo3: for every `testdata/` file, h5py's view
//! (objects at their canonical paths, kinds, group member names, attribute names, dataset
//! shapes and numpy dtype strings; `tests/crosscheck_walk.py`) must agree with our dump.
//!
//! For now our side is `h5cli::canon::dump` (paths, shapes, attribute and link names, dtypes
//! mapped to numpy strings); files listed in `expected_failures.txt` or that our dump cannot
//! read yet are counted and skipped. h5py's view is also checked against the reference dump
//! (`testdata/expected/*.canon.json`), so this test exercises the Python side even now.
//!
//! Needs the venv: run through `cargo xtask test`, which sets `H5FMT_VENV`, `PYO3_PYTHON`,
//! `PYTHONHOME` and `PYTHONPATH`. Without `H5FMT_VENV` it prints a skip notice and passes.

mod common;

use std::ffi::CString;

use common::{bounded_dump, cases, Expect, Outcome};
use pyo3::prelude::*;
use serde_json::Value;

const WALK_PY: &str = include_str!("crosscheck_walk.py");

/// h5py's view of the file, as JSON (see `crosscheck_walk.py`).
fn h5py_view(py: Python<'_>, walk: &Bound<'_, PyAny>, path: &str) -> Result<Value, String> {
    let text: String = walk.call1((path,)).and_then(|r| r.extract()).map_err(|e| {
        let tb = e
            .traceback(py)
            .and_then(|t| t.format().ok())
            .unwrap_or_default();
        format!("{e}\n{tb}")
    })?;
    serde_json::from_str(&text).map_err(|e| e.to_string())
}

/// The numpy dtype string h5py gives for a DTYPE, when the mapping is unambiguous.
fn numpy_str(dt: &Value) -> Option<String> {
    let class = dt.get("class")?.as_str()?;
    let size = dt.get("size").and_then(Value::as_u64);
    let order = |d: &Value| match d.get("order").and_then(Value::as_str) {
        _ if d.get("size").and_then(Value::as_u64) == Some(1) => Some("|"),
        Some("le") => Some("<"),
        Some("be") => Some(">"),
        _ => None,
    };
    match class {
        "int" => {
            let signed = dt.get("signed")?.as_bool()?;
            Some(format!(
                "{}{}{}",
                order(dt)?,
                if signed { 'i' } else { 'u' },
                size?
            ))
        }
        "float" if dt.get("nonstandard").is_none() => Some(format!("{}f{}", order(dt)?, size?)),
        "string" => match dt.get("size")? {
            Value::String(s) if s == "vlen" => Some("|O".into()),
            Value::Number(n) => Some(format!("|S{}", n.as_u64()?)),
            _ => None,
        },
        "vlen" | "ref" => Some("|O".into()),
        "opaque" => Some(format!("|V{}", size?)),
        "enum" => {
            let members = dt.get("members")?.as_array()?;
            let is_bool = members.len() == 2
                && members.first()? == &serde_json::json!(["FALSE", 0])
                && members.get(1)? == &serde_json::json!(["TRUE", 1]);
            if is_bool {
                Some("|b1".into())
            } else {
                numpy_str(dt.get("base")?)
            }
        }
        _ => None,
    }
}

fn sorted_keys(v: Option<&Value>) -> Vec<String> {
    let mut k: Vec<String> = v
        .and_then(Value::as_object)
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    k.sort();
    k
}

fn names(v: Option<&Value>) -> Vec<String> {
    let mut k: Vec<String> = v
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    k.sort();
    k
}

/// Differences between h5py's view and a canonical dump (ours or the reference's).
fn compare(view: &Value, canon: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let empty = serde_json::Map::new();
    let objs = canon
        .get("objects")
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let pyobjs = view.as_object().unwrap_or(&empty);
    for p in objs.keys() {
        if !pyobjs.contains_key(p) {
            out.push(format!("{p}: in the dump, not reached by h5py"));
        }
    }
    for (p, v) in pyobjs {
        let Some(o) = objs.get(p) else {
            out.push(format!("{p}: reached by h5py, not in the dump"));
            continue;
        };
        let kind = v.get("kind");
        if kind != o.get("kind") {
            out.push(format!(
                "{p}: kind {:?} (h5py) vs {:?}",
                kind,
                o.get("kind")
            ));
            continue;
        }
        let (a, b) = (names(v.get("attrs")), sorted_keys(o.get("attrs")));
        if a != b {
            out.push(format!("{p}: attributes {a:?} (h5py) vs {b:?}"));
        }
        match kind.and_then(Value::as_str) {
            Some("group") => {
                let (a, b) = (names(v.get("links")), sorted_keys(o.get("links")));
                if a != b {
                    out.push(format!("{p}: links {a:?} (h5py) vs {b:?}"));
                }
            }
            Some("dataset") => {
                if v.get("shape") != o.get("shape") {
                    out.push(format!(
                        "{p}: shape {:?} (h5py) vs {:?}",
                        v.get("shape"),
                        o.get("shape")
                    ));
                }
                let ours = o.get("dtype").and_then(numpy_str);
                let theirs = v.get("dtype").and_then(Value::as_str);
                if let (Some(x), Some(y)) = (ours.as_deref(), theirs) {
                    if x != y {
                        out.push(format!("{p}: dtype {y} (h5py) vs {x}"));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

#[test]
fn crosscheck_h5py() {
    if std::env::var_os("H5FMT_VENV").is_none_or(|v| v.is_empty()) {
        common::summary(
            "crosscheck_h5py",
            "crosscheck_h5py: skipped: run via cargo xtask test (H5FMT_VENV is not set)",
        );
        return;
    }
    let xfail = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/expected_failures.txt"),
    )
    .unwrap_or_default();
    let listed = |key: &str| xfail.lines().any(|l| l.split('\t').next() == Some(key));
    let files: Vec<_> = cases()
        .into_iter()
        .filter(|c| c.key.starts_with("testdata/"))
        .filter_map(|c| match c.expect {
            Expect::Canon(ref e) => Some((c.key.clone(), c.path.clone(), e.clone())),
            Expect::Error(_) => None,
        })
        .collect();
    assert!(!files.is_empty(), "no testdata files with expectations");

    let mut problems = Vec::new();
    let (mut compared, mut skipped) = (0usize, 0usize);
    Python::attach(|py| {
        let code = CString::new(WALK_PY).unwrap_or_default();
        let module = PyModule::from_code(py, &code, c"crosscheck_walk.py", c"crosscheck_walk")
            .unwrap_or_else(|e| panic!("crosscheck_walk.py: {e} (is h5py in PYTHONPATH?)"));
        let walk = module.getattr("walk").unwrap_or_else(|e| panic!("{e}"));
        for (key, path, expected) in &files {
            let view = match h5py_view(py, &walk, &path.to_string_lossy()) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("{key}: h5py walk failed: {e}"));
                    continue;
                }
            };
            // The Python side against the reference dump: validates the walker itself.
            let reference: Value = std::fs::read_to_string(expected)
                .ok()
                .and_then(|t| serde_json::from_str(&t).ok())
                .unwrap_or(Value::Null);
            for d in compare(&view, &reference) {
                problems.push(format!("{key}: h5py vs reference: {d}"));
            }
            if listed(key) {
                skipped += 1;
                continue;
            }
            match bounded_dump(path, common::time_limit()) {
                Outcome::Done(Ok(ours)) => {
                    compared += 1;
                    for d in compare(&view, &ours) {
                        problems.push(format!("{key}: h5py vs ours: {d}"));
                    }
                }
                Outcome::Done(Err(e)) => problems.push(format!("{key}: our dump failed: {e}")),
                Outcome::Panicked(m) => problems.push(format!("{key}: PANIC: {m}")),
                Outcome::TimedOut(d) => {
                    problems.push(format!("{key}: TIMEOUT after {}s", d.as_secs()))
                }
            }
        }
    });
    common::summary(
        "crosscheck_h5py",
        &format!(
            "crosscheck_h5py: {} files walked by h5py, {compared} compared with our dump, \
             {skipped} skipped (expected failures), {} problems",
            files.len(),
            problems.len()
        ),
    );
    for p in &problems {
        println!("  {p}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn compare_finds_differences() {
    use serde_json::json;
    let view = json!({
        "/": {"kind": "group", "attrs": ["x"], "links": ["d"]},
        "/d": {"kind": "dataset", "attrs": [], "shape": [3], "dtype": ">u2"},
    });
    let dt = json!({"class": "int", "size": 2, "order": "be", "signed": false});
    let canon = json!({"format": "h5canon/1", "objects": {
        "/": {"kind": "group", "attrs": {"x": {}}, "links": {"d": {"hard": "/d"}}},
        "/d": {"kind": "dataset", "attrs": {}, "shape": [3], "dtype": dt},
    }});
    assert_eq!(compare(&view, &canon), Vec::<String>::new());
    let mut wrong = canon.clone();
    wrong["objects"]["/d"]["shape"] = json!([4]);
    wrong["objects"]["/d"]["dtype"]["order"] = json!("le");
    wrong["objects"]["/"]["links"] = json!({"e": {"soft": "/d"}});
    let d = compare(&view, &wrong);
    assert_eq!(d.len(), 3, "{d:?}");
    assert_eq!(
        numpy_str(&json!({"class": "float", "size": 2, "order": "le"})).as_deref(),
        Some("<f2")
    );
    assert_eq!(
        numpy_str(&json!({"class": "int", "size": 1, "order": "le", "signed": true})).as_deref(),
        Some("|i1")
    );
    assert_eq!(
        numpy_str(&json!({"class": "string", "size": "vlen", "cset": "utf8", "pad": "nullterm"}))
            .as_deref(),
        Some("|O")
    );
}
