//! Row-oriented compound tables (PyTables `Table`, HDF5 Table "H5TB"):
//! files written by PyTables and by libhdf5_hl's `H5TBmake_table` /
//! `H5TBappend_records` (ctypes, tests/row_tables.py) read by
//! `h5table::rowtable` with the values those libraries read; `h5 table
//! import … --to` gives a table `h5 table check --strict` accepts; `h5 table
//! export --as pytables|h5tb` is read back by PyTables and by
//! `H5TBread_table` equal to the source, with the attributes
//! `H5TBmake_table` writes.

use arrow_array::Array;
use serde_json::{json, Value as J};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod arrow_canon;
use arrow_canon::canon;
mod corpus_tables;
mod pytables_nodes;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/row_tables.py");

fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv").into());
    PathBuf::from(venv).join("bin/python")
}

fn py(args: &[&str]) -> String {
    let out = Command::new(python())
        .arg(SCRIPT)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "row_tables.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn h5(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .unwrap()
}

/// The generated files, made once per test binary.
fn dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("row_tables");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        py(&["gen", d.to_str().unwrap()]);
        d
    })
}

fn load(name: &str) -> J {
    serde_json::from_str(&std::fs::read_to_string(dir().join(name)).unwrap()).unwrap()
}

/// Every column of `file:path` read by `RowTable` (in batches of 300 rows), canonical.
fn read_ours(file: &Path, path: &str) -> (J, h5table::rowtable::RowTable) {
    let f = h5fmt::File::open(file).unwrap();
    let rt = h5table::rowtable::RowTable::open(&f.dataset(path).unwrap()).unwrap();
    let mut cols: serde_json::Map<String, J> = rt
        .fields()
        .iter()
        .map(|f| (f.name.clone(), J::Array(vec![])))
        .collect();
    for b in rt.batches(300) {
        let b = b.unwrap();
        assert!(b.num_rows() <= 300);
        for (field, c) in b.schema().fields().iter().zip(b.columns()) {
            let J::Array(v) = cols.get_mut(field.name()).unwrap() else {
                unreachable!()
            };
            v.extend((0..c.len()).map(|i| canon(c.as_ref(), i)));
        }
    }
    (J::Object(cols), rt)
}

/// `fill` (our one-element array) against the oracle's (PyTables gives an array column's
/// fill as one element).
fn assert_fill(rt: &h5table::rowtable::RowTable, name: &str, want: &J) {
    let f = rt.fields().iter().find(|f| f.name == name).unwrap();
    let got = canon(f.fill.as_ref().expect("a fill").as_ref(), 0);
    match (&got, want) {
        (J::Array(g), w) if !w.is_array() => {
            assert!(g.iter().all(|x| x == w), "{name}: {got} vs {want}")
        }
        _ => assert_eq!(&got, want, "fill of {name}"),
    }
}

/// Column-by-column equality, reporting the first differing row.
fn assert_cols(got: &J, want: &J, what: &str) {
    let (g, w) = (got.as_object().unwrap(), want.as_object().unwrap());
    assert_eq!(
        g.keys().collect::<Vec<_>>(),
        w.keys().collect::<Vec<_>>(),
        "{what}: columns"
    );
    for (name, wv) in w {
        let (ga, wa) = (g[name].as_array().unwrap(), wv.as_array().unwrap());
        assert_eq!(ga.len(), wa.len(), "{what}: {name}: rows");
        if let Some(i) = (0..wa.len()).find(|&i| ga[i] != wa[i]) {
            panic!("{what}: {name} row {i}: {} vs {}", ga[i], wa[i]);
        }
    }
}

#[test]
fn read_matches_pytables_and_libhdf5_hl() {
    let pt = load("pt.json");
    // `/g/times`: H5T_TIME members (PyTables' Time32Col/Time64Col, one in a nested
    // description before the columns, one an array) and breadth-first fill numbering.
    // `/g/deep`: two levels of nesting; each nested member's fill is its columns' fills.
    for path in ["/g/t", "/g/flat", "/g/times", "/g/deep"] {
        let (cols, rt) = read_ours(&dir().join("pt.h5"), path);
        assert_eq!(rt.flavor(), h5table::rowtable::Flavor::PyTables);
        assert_eq!(json!(rt.nrows()), pt[path]["nrows"]);
        assert_eq!(json!(rt.title()), pt[path]["title"]);
        assert_cols(&cols, &pt[path]["columns"], path);
        for (name, want) in pt[path]["fills"].as_object().unwrap() {
            if name == "e" {
                // PyTables gives an enum's default as its code; ours is the member name.
                assert_eq!(
                    canon(rt.fields()[6].fill.as_ref().unwrap().as_ref(), 0),
                    json!("green")
                );
                continue;
            }
            assert_fill(&rt, name, want);
        }
        for (name, want) in pt[path]["nested_fills"].as_object().unwrap() {
            let (top, rest) = name.split_once('/').unwrap();
            let f = rt.fields().iter().find(|f| f.name == top).unwrap();
            let Some(fill) = &f.fill else {
                // PyTables stores a time's fill as a value, not as its bytes: no record.
                assert_eq!(path, "/g/times", "{name}: no fill");
                continue;
            };
            let mut got = canon(fill.as_ref(), 0);
            for part in rest.split('/') {
                got = got[part].clone();
            }
            match (&got, want) {
                (J::Array(g), w) if !w.is_array() => assert!(g.iter().all(|x| x == w), "{name}"),
                _ => assert_eq!(&got, want, "{path}: fill of {name}"),
            }
        }
    }
    let tb = load("tb.json");
    let (cols, rt) = read_ours(&dir().join("tb.h5"), "/tbl");
    assert_eq!(rt.flavor(), h5table::rowtable::Flavor::H5tb);
    assert_eq!(json!(rt.nrows()), tb["/tbl"]["nrows"]);
    assert_cols(&cols, &tb["/tbl"]["columns"], "/tbl");
    for (i, f) in rt.fields().iter().enumerate() {
        assert_fill(
            &rt,
            &f.name,
            &tb["/tbl"]["attrs"][format!("FIELD_{i}_FILL")]["value"],
        );
    }
}

#[test]
fn broken_tables_are_refused_naming_the_dataset() {
    let bad = dir().join("bad.h5");
    let out = dir().join("bad_out.h5");
    for (name, want) in [
        ("nrows_past", "NROWS 5 is past the dataset's extent 4"),
        ("name_mismatch", "FIELD_1_NAME is \"c\""),
        ("nrows_float", "NROWS is H5T_IEEE_F64LE, not an integer"),
        ("class_int", "attribute CLASS is"),
        ("fill_type", "attribute FIELD_0_FILL is"),
    ] {
        let src = format!("{}:/{name}", bad.display());
        let to = format!("{}:/{name}", out.display());
        let o = h5(&["table", "import", &src, "--to", &to]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{name}: {err}");
        assert!(
            err.contains(&format!("/{name}")) && err.contains(want),
            "{name}: {err}"
        );
    }
    // A string inside a nested compound: HEP001 compound columns hold fixed-size atomic
    // fields (§8.3); refused, naming the column and the field.
    let src = format!("{}:/g/nest_str", dir().join("pt.h5").display());
    let to = format!("{}:/nested", out.display());
    let o = h5(&["table", "import", &src, "--to", &to]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("column \"n\": field \"s\": Utf8 inside a struct"),
        "{err}"
    );
}

/// Import `src` into HEP001, check it strictly, export it both ways; each export must
/// read back (PyTables, H5TBread_table) equal to `want`.
fn round_trip(src: &Path, path: &str, want: &J, tag: &str) -> (J, J) {
    let hep = dir().join(format!("{tag}_hep.h5"));
    let _ = std::fs::remove_file(&hep);
    let o = h5(&[
        "table",
        "import",
        &format!("{}:{path}", src.display()),
        "--to",
        &format!("{}:/t", hep.display()),
        "--chunk-rows",
        "256",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = h5(&["table", "check", "--strict", hep.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let mut back = vec![];
    for (as_, read) in [("pytables", "read_pt"), ("h5tb", "read_tb")] {
        let out = dir().join(format!("{tag}_{as_}.h5"));
        let _ = std::fs::remove_file(&out);
        let dst = format!("{}:/a/b", out.display());
        let o = h5(&[
            "table",
            "export",
            &format!("{}:/t", hep.display()),
            "--as",
            as_,
            &dst,
            "--batch-rows",
            "300",
        ]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let got: J = serde_json::from_str(&py(&[read, out.to_str().unwrap(), "/a/b"])).unwrap();
        assert_cols(&got["columns"], want, &format!("{tag} --as {as_}"));
        back.push(got);
    }
    let tb = back.pop().unwrap();
    (back.pop().unwrap(), tb)
}

/// The attributes `H5TBmake_table` writes for a table of the dtype, title and fills of
/// the H5TB export of `round_trip(…, tag)`.
fn h5tb_reference(tag: &str) -> J {
    let ours = dir().join(format!("{tag}_h5tb.h5"));
    let reference = dir().join(format!("{tag}_ref.h5"));
    let args = [
        "make_tb_like",
        ours.to_str().unwrap(),
        "/a/b",
        reference.to_str().unwrap(),
    ];
    serde_json::from_str(&py(&args)).unwrap()
}

#[test]
fn import_check_export_round_trips() {
    // H5TB → HEP001 → PyTables / H5TB: every value, and libhdf5_hl's own attributes.
    let tb = load("tb.json");
    let want = &tb["/tbl"]["columns"];
    let (_, h5tb) = round_trip(&dir().join("tb.h5"), "/tbl", want, "tb");
    let reference = h5tb_reference("tb");
    assert_eq!(h5tb["attrs"], reference, "attributes vs H5TBmake_table");
    assert_eq!(h5tb["chunked"], json!(true));
    assert_eq!(h5tb["maxshape"], json!([null]));
    // Every source fill was a valid HEP001 fill (no row holds it), so it comes back.
    for i in 0..5 {
        let k = format!("FIELD_{i}_FILL");
        assert_eq!(
            h5tb["attrs"][&k]["value"], tb["/tbl"]["attrs"][&k]["value"],
            "{k}"
        );
    }

    // PyTables → HEP001 → PyTables / H5TB.
    let pt = load("pt.json");
    let want = &pt["/g/flat"]["columns"];
    let (back, _) = round_trip(&dir().join("pt.h5"), "/g/flat", want, "pt");
    assert_eq!(back["nrows"], pt["/g/flat"]["nrows"]);
    assert_eq!(back["title"], json!(""));
    let mut fills = pt["/g/flat"]["fills"].clone();
    // Row 5 of i16 holds its PyTables default -2: not a valid HEP001 fill, so the
    // column gets the HEP001 Table 1 sentinel (MIN + 1).
    fills["i16"] = json!(i16::MIN + 1);
    assert_eq!(back["fills"], fills);
}

#[test]
fn nested_table_round_trips() {
    // PyTables (two levels of nesting) → HEP001 (compound columns) → PyTables / H5TB.
    let pt = load("pt.json");
    let src = &pt["/g/deep"];
    let (back, tb) = round_trip(&dir().join("pt.h5"), "/g/deep", &src["columns"], "deep");
    assert_eq!(back["nrows"], src["nrows"]);
    assert_eq!(back["title"], json!("two levels"));
    // Every PyTables default comes back, the nested columns' included (FIELD_<n>_FILL
    // numbered breadth first).
    assert_eq!(back["fills"], src["fills"]);
    assert_eq!(back["nested_fills"], src["nested_fills"]);
    assert_eq!(tb["nrows"], src["nrows"]);
    // The H5TB export's attributes are what H5TBmake_table writes for its dtype and fills
    // (one FIELD_<n>_FILL per top-level member, a nested one as a compound).
    let reference = h5tb_reference("deep");
    assert_eq!(tb["attrs"], reference, "attributes vs H5TBmake_table");
}

/// Rows `k` of the H5TB test table's layout (tests/row_tables.py `gen`):
/// `id <i4 @0, x <f8 @8, s S5 @16, v <u2[3] @22, be >i8 @32`, 40 bytes.
fn tb_rows(ks: std::ops::Range<i32>) -> (Vec<u8>, Vec<J>) {
    let (mut raw, mut want) = (vec![], vec![]);
    for k in ks {
        let mut r = vec![0u8; 40];
        r[0..4].copy_from_slice(&(10_000 + k).to_le_bytes());
        r[8..16].copy_from_slice(&(f64::from(k) * 0.25).to_le_bytes());
        let s = format!("a{k}");
        r[16..16 + s.len()].copy_from_slice(s.as_bytes());
        let v = [k as u16, k as u16 + 1, 7];
        for (j, x) in v.iter().enumerate() {
            r[22 + 2 * j..24 + 2 * j].copy_from_slice(&x.to_le_bytes());
        }
        r[32..40].copy_from_slice(&(-i64::from(k) * 3).to_be_bytes());
        raw.extend_from_slice(&r);
        want.push(json!({"id": 10_000 + k, "x": f64::from(k) * 0.25, "s": s, "v": v, "be": -i64::from(k) * 3}));
    }
    (raw, want)
}

#[test]
fn h5tb_append_reads_back_in_h5tbread_table() {
    let file = dir().join("tb_append.h5");
    std::fs::copy(dir().join("tb.h5"), &file).unwrap();
    let tb = load("tb.json");
    let mut want = tb["/tbl"]["columns"].clone();
    let mut ed = h5fmt::FileEditor::open(&file).unwrap();
    // Two appends, the second crossing chunk boundaries (chunks of 128 rows).
    let mut total = 700;
    for ks in [0..3, 3..300] {
        let (raw, rows) = tb_rows(ks.clone());
        total = h5table::write::append_records(&mut ed, "/tbl", &raw).unwrap();
        for r in rows {
            for (name, v) in r.as_object().unwrap() {
                want[name].as_array_mut().unwrap().push(v.clone());
            }
        }
    }
    assert_eq!(total, 1000);
    // Refusals: a partial row, a dataset that is not a table.
    let e = h5table::write::append_records(&mut ed, "/tbl", &[0; 41]).unwrap_err();
    assert!(e.to_string().contains("not whole 40-byte rows"), "{e}");
    ed.close().unwrap();
    let got: J = serde_json::from_str(&py(&["read_tb", file.to_str().unwrap(), "/tbl"])).unwrap();
    assert_eq!(got["nrows"], json!(1000));
    assert_cols(&got["columns"], &want, "appended");
    assert_eq!(got["attrs"], tb["/tbl"]["attrs"], "attributes unchanged");
}

#[test]
fn pytables_table_append_reads_back_in_pytables() {
    let file = dir().join("pt_append.h5");
    std::fs::copy(dir().join("pt.h5"), &file).unwrap();
    let pt = load("pt.json");
    let mut want = pt["/g/flat"]["columns"].clone();
    // `/g/flat`: i16 @0, u32 @2, f32 @6, S5 @10, f64[3] @15; 39 bytes.
    let mut raw = vec![];
    for k in 0..50i16 {
        let mut r = vec![0u8; 39];
        r[0..2].copy_from_slice(&(-k).to_le_bytes());
        r[2..6].copy_from_slice(&(u32::from(k.unsigned_abs()) * 1000).to_le_bytes());
        r[6..10].copy_from_slice(&(f32::from(k) / 8.0).to_le_bytes());
        let s = format!("p{k}");
        r[10..10 + s.len()].copy_from_slice(s.as_bytes());
        for j in 0..3 {
            let x = f64::from(k) + f64::from(j as u8) / 2.0;
            r[15 + 8 * j..23 + 8 * j].copy_from_slice(&x.to_le_bytes());
        }
        raw.extend_from_slice(&r);
        for (name, v) in [
            ("i16", json!(-k)),
            ("u32", json!(u32::from(k.unsigned_abs()) * 1000)),
            ("f32", json!(f64::from(k) / 8.0)),
            ("s", json!(s)),
            (
                "arr",
                json!((0..3)
                    .map(|j| f64::from(k) + f64::from(j) / 2.0)
                    .collect::<Vec<_>>()),
            ),
        ] {
            want[name].as_array_mut().unwrap().push(v);
        }
    }
    let mut ed = h5fmt::FileEditor::open(&file).unwrap();
    assert_eq!(
        h5table::write::append_records(&mut ed, "/g/flat", &raw).unwrap(),
        1050
    );
    ed.close().unwrap();
    let got: J =
        serde_json::from_str(&py(&["read_pt", file.to_str().unwrap(), "/g/flat"])).unwrap();
    assert_eq!(got["nrows"], json!(1050));
    assert_cols(&got["columns"], &want, "appended");
    // A dataset whose CLASS is not a string is refused, naming it.
    let bad = dir().join("bad_append.h5");
    std::fs::copy(dir().join("bad.h5"), &bad).unwrap();
    let mut ed = h5fmt::FileEditor::open(&bad).unwrap();
    let e = h5table::write::append_records(&mut ed, "/class_int", &[0; 12]).unwrap_err();
    assert!(
        e.to_string().contains("/class_int") && e.to_string().contains("attribute CLASS is"),
        "{e}"
    );
}

/// An H5TB table carrying an `NROWS` smaller than its extent (libhdf5's own
/// test_table_le.h5 `/table3`: a user attribute `NROWS = 1` over 8 rows):
/// rows are appended after the extent, as PyTables and libhdf5_hl append
/// (neither reads `NROWS`), so every existing row is kept.
#[test]
fn append_after_the_extent_when_nrows_is_smaller() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/corpus/files/wrwilliams__hdf5/hl__test__test_table_le.h5");
    let file = dir().join("nrows_small.h5");
    std::fs::copy(&src, &file).unwrap();
    let before: J =
        serde_json::from_str(&py(&["read_tb", file.to_str().unwrap(), "/table3"])).unwrap();
    assert_eq!(before["nrows"], json!(8));
    assert_eq!(before["attrs"]["NROWS"]["value"], json!([1]));
    // Rows 0..3 again, as stored.
    let raw = {
        let f = h5fmt::File::open(&file).unwrap();
        let ds = f.dataset("/table3").unwrap();
        ds.read_slice_raw(&h5fmt::data::hyperslab::Selection::Hyperslab(vec![
            h5fmt::data::hyperslab::SliceDim {
                start: 0,
                stride: 1,
                count: 3,
                block: 1,
            },
        ]))
        .unwrap()
    };
    let mut ed = h5fmt::FileEditor::open(&file).unwrap();
    assert_eq!(
        h5table::write::append_records(&mut ed, "/table3", &raw).unwrap(),
        11
    );
    ed.close().unwrap();
    let after: J =
        serde_json::from_str(&py(&["read_tb", file.to_str().unwrap(), "/table3"])).unwrap();
    assert_eq!(after["nrows"], json!(11));
    let mut want = before["columns"].clone();
    for (_, col) in want.as_object_mut().unwrap() {
        let c = col.as_array_mut().unwrap();
        let again: Vec<J> = c[..3].to_vec();
        c.extend(again);
    }
    assert_cols(&after["columns"], &want, "appended");
    assert_eq!(after["attrs"]["NROWS"]["value"], json!(11));
}
