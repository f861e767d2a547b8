//! `h5 table ls|schema|cat|query|check` on tables with list columns and
//! boolean columns of the upstream H5Col draft: the files and expected values
//! of `crates/h5table/tests/list_oracle.py` (h5py, the draft's layout) and the
//! golden file written by h5col 0.4.0 (`crates/h5table/tests/data`).
//! CSV is parsed by Python's `csv` module, Parquet read back by pyarrow.

use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv").into());
    let p = PathBuf::from(venv).join("bin/python");
    assert!(
        p.exists(),
        "{} missing: run `cargo xtask venv`",
        p.display()
    );
    p
}

fn py(args: &[&std::ffi::OsStr]) -> Vec<u8> {
    let out = Command::new(python()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

fn h5(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .unwrap()
}

fn ok(args: &[&str]) -> String {
    let o = h5(args);
    assert!(
        o.status.success(),
        "h5 {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

fn oracle() -> &'static (PathBuf, J) {
    static O: OnceLock<(PathBuf, J)> = OnceLock::new();
    O.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("table_lists");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../h5table/tests/list_oracle.py");
        let out = py(&[script.as_os_str(), dir.as_os_str()]);
        (dir, serde_json::from_slice(&out).unwrap())
    })
}

fn h5col() -> (PathBuf, J) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../h5table/tests/data");
    let exp = serde_json::from_slice(&std::fs::read(dir.join("h5col_lists.json")).unwrap());
    (dir.join("h5col_lists.h5"), exp.unwrap())
}

/// A cell as printed (JSON number, bool, string, array) in the oracle's
/// form: floats of column `col` as the hex of their bits (`width` bytes).
fn norm(v: &J, width: Option<u8>) -> J {
    match v {
        J::Array(a) => J::Array(a.iter().map(|x| norm(x, width)).collect()),
        J::Number(n) if width.is_some() => {
            let x = n.as_f64().unwrap();
            J::String(if width == Some(4) {
                format!("{:x}", (x as f32).to_bits())
            } else {
                format!("{:x}", x.to_bits())
            })
        }
        v => v.clone(),
    }
}

/// The float width of a column of the two test tables.
fn width(name: &str) -> Option<u8> {
    match name {
        "floats" => Some(4),
        "energies" => Some(8),
        _ => None,
    }
}

fn rows(exp: &J, name: &str) -> Vec<J> {
    let c = &exp["columns"][name];
    c.get("rows").unwrap_or(c).as_array().unwrap().clone()
}

fn names(exp: &J) -> Vec<String> {
    exp["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_owned())
        .collect()
}

/// `h5 table cat --format json` against the expected rows.
fn check_json(spec: &str, exp: &J) {
    let text = ok(&["table", "cat", spec, "--format", "json"]);
    let lines: Vec<J> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len() as u64, exp["nrows"].as_u64().unwrap());
    for name in names(exp) {
        let got: Vec<J> = lines
            .iter()
            .map(|l| norm(&l[&name], width(&name)))
            .collect();
        assert_eq!(got, rows(exp, &name), "{spec} json {name}");
    }
    // Keys in logical order.
    let keys: Vec<&String> = lines[0].as_object().unwrap().keys().collect();
    assert_eq!(keys, names(exp).iter().collect::<Vec<_>>());
}

/// `h5 table cat` (CSV) parsed by Python's csv module: list cells are
/// `[…]` (strings as JSON literals, booleans as their member names), a null
/// list an empty cell.
fn check_csv(spec: &str, exp: &J, dir: &Path) {
    let path = dir.join(format!("{}.csv", exp["nrows"]));
    std::fs::write(&path, ok(&["table", "cat", spec])).unwrap();
    let parsed: Vec<Vec<String>> = serde_json::from_slice(&py(&[
        "-c".as_ref(),
        "import csv, json, sys; print(json.dumps(list(csv.reader(open(sys.argv[1], newline='')))))"
            .as_ref(),
        path.as_os_str(),
    ]))
    .unwrap();
    let header = &parsed[0];
    assert_eq!(header, &names(exp));
    for (k, name) in header.iter().enumerate() {
        let want = rows(exp, name);
        let list = exp["columns"][name]
            .get("arrow")
            .map_or(want.iter().any(J::is_array), |a| {
                a.as_str().unwrap().contains("List")
            });
        for (r, w) in want.iter().enumerate() {
            // A one-column row whose cell is empty is an empty line.
            let cell = parsed[r + 1].get(k).map_or("", String::as_str);
            let got = if !list {
                match cell {
                    "TRUE" => J::Bool(true),
                    "FALSE" => J::Bool(false),
                    c => serde_json::from_str(c).unwrap(),
                }
            } else if cell.is_empty() {
                J::Null
            } else {
                let c = cell.replace("TRUE", "true").replace("FALSE", "false");
                norm(&serde_json::from_str(&c).unwrap(), width(name))
            };
            assert_eq!(&got, w, "{spec} csv {name} row {r}: {cell:?}");
        }
    }
}

/// `h5 table cat --format parquet`, read back by pyarrow.
fn check_parquet(spec: &str, exp: &J, dir: &Path) -> J {
    let path = dir.join(format!("{}.parquet", exp["nrows"]));
    ok(&[
        "table",
        "cat",
        spec,
        "--format",
        "parquet",
        "-o",
        path.to_str().unwrap(),
    ]);
    let script = "import json, sys, pyarrow.parquet as pq\n\
                  t = pq.read_table(sys.argv[1])\n\
                  print(json.dumps({'types': {f.name: str(f.type) for f in t.schema},\n\
                  'cols': {n: t[n].to_pylist() for n in t.column_names}}))";
    let got: J =
        serde_json::from_slice(&py(&["-c".as_ref(), script.as_ref(), path.as_os_str()])).unwrap();
    for name in names(exp) {
        let col: Vec<J> = got["cols"][&name]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| norm(v, width(&name)))
            .collect();
        assert_eq!(col, rows(exp, &name), "{spec} parquet {name}");
    }
    got["types"].clone()
}

#[test]
fn cat_schema_ls_check_h5py_tables() {
    let (dir, exp) = oracle();
    for (file, t) in exp["tables"].as_object().unwrap() {
        let path = dir.join(file);
        let spec = format!("{}:{}", path.display(), t["path"].as_str().unwrap());
        let ncols = names(t).len();
        assert_eq!(
            ok(&["table", "ls", path.to_str().unwrap()]).trim(),
            format!("{} {} {ncols}", t["path"].as_str().unwrap(), t["nrows"])
        );
        check_json(&spec, t);
        check_csv(&spec, t, dir);
        let types = check_parquet(&spec, t, dir);
        let schema = ok(&["table", "schema", &spec]);
        for (name, c) in t["columns"].as_object().unwrap() {
            if let Some(ty) = c.get("type") {
                let line = schema
                    .lines()
                    .find(|l| l.split_whitespace().next() == Some(name.as_str()))
                    .unwrap_or_else(|| panic!("{schema}"));
                assert!(line.contains(ty.as_str().unwrap()), "{line}");
                assert!(line.contains("List"), "{line}");
            }
        }
        if file == "lists.h5" {
            assert_eq!(types["ints"], "large_list<item: int32>");
            assert_eq!(types["tags"], "large_list<item: large_string>");
            assert_eq!(types["pairs"], "large_list<item: large_list<item: int16>>");
            assert_eq!(types["flag"], "bool");
            // Upstream constructs are warnings, not corruption.
            let o = h5(&["table", "check", path.to_str().unwrap()]);
            let out = String::from_utf8_lossy(&o.stdout);
            assert!(o.status.success(), "{out}");
            assert!(out.contains("H5Col list column"), "{out}");
        } else {
            // uint32 OFFSETS (lenient reading): List, not LargeList.
            assert_eq!(types["v"], "list<item: int64>");
        }
    }
}

#[test]
fn query_prints_list_cells() {
    let (dir, exp) = oracle();
    let t = &exp["tables"]["lists.h5"];
    let spec = format!("{}:/runs/t", dir.join("lists.h5").display());
    let csv = ok(&[
        "table",
        "query",
        &spec,
        "--where",
        "id < 3",
        "--format",
        "csv",
        "--columns",
        "id,ints",
    ]);
    let mut lines = csv.lines();
    assert_eq!(lines.next(), Some("id,ints"));
    let ints = rows(t, "ints");
    for (i, line) in lines.enumerate() {
        let cell = line.split_once(',').unwrap().1.trim_matches('"');
        let want = if ints[i].is_null() {
            String::new()
        } else {
            ints[i].to_string().replace(',', ", ")
        };
        assert_eq!(cell, want, "row {i}");
    }
    // A predicate on a list column is refused with a message that says why.
    let o = h5(&["table", "query", &spec, "--where", "ints = 3"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("list column"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn h5col_written_table() {
    let (path, exp) = h5col();
    let spec = format!("{}:/events", path.display());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("table_lists_h5col");
    std::fs::create_dir_all(&dir).unwrap();
    check_json(&spec, &exp);
    check_csv(&spec, &exp, &dir);
    let types = check_parquet(&spec, &exp, &dir);
    assert_eq!(types["passed"], "bool");
    assert_eq!(types["flags"], "large_list<item: bool>");
    let o = h5(&["table", "check", path.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

#[test]
fn damaged_list_column_is_an_error() {
    let (dir, _) = oracle();
    let path = dir.join("c_decrease.h5");
    let spec = format!("{}:/t", path.display());
    for format in ["csv", "json"] {
        let o = h5(&["table", "cat", &spec, "--format", format]);
        assert!(!o.status.success(), "{format}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains("OFFSETS decrease"), "{format}: {err}");
    }
    let o = h5(&["table", "check", path.to_str().unwrap()]);
    assert!(!o.status.success());
}
