//! anndata dataframes: files written by anndata (tests/anndata_oracle.py,
//! every column encoding, NaN, empty and non-ASCII strings, 0-, 1- and
//! 5-row frames, a frame without columns) read by `h5table::anndata` with
//! the values pandas reads; `DataFrameWriter` output that anndata reads back
//! equal (`pandas.testing.assert_frame_equal`: dtypes, categories, ordered,
//! nulls, index); `h5 table import … --to` gives a table `h5 table check
//! --strict` accepts and `h5 table export --as anndata` gives the original
//! back; broken dataframes are refused with exit 1 and the object's path.

use arrow_array::Array;
use arrow_schema::DataType;
use h5table::anndata::{DataFrame, DataFrameWriter, WriteOptions};
use serde_json::{json, Value as J};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod arrow_canon;
use arrow_canon::canon;

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/anndata_oracle.py");

/// The good dataframes of `src.h5`.
const FRAMES: [&str; 5] = ["/obs", "/var", "/zero", "/one", "/empty"];

fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv").into());
    PathBuf::from(venv).join("bin/python")
}

fn py(args: &[&str]) {
    let out = Command::new(python())
        .arg(SCRIPT)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "anndata_oracle.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
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
        let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("anndata");
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        py(&["gen", d.to_str().unwrap()]);
        d
    })
}

fn open(file: &Path, path: &str) -> DataFrame {
    let f = h5fmt::File::open(file).unwrap();
    DataFrame::open(&f.group(path).unwrap()).unwrap()
}

/// Both directions with two Python processes in all (anndata takes seconds to import): the
/// generator, then one `same` over the frames our writer and `h5 table export` wrote.
#[test]
fn anndata_both_directions() {
    read_matches_pandas();
    let mut pairs = written_frames();
    pairs.extend(import_check_export());
    let args: Vec<&str> = std::iter::once("same")
        .chain(pairs.iter().map(String::as_str))
        .collect();
    py(&args);
}

/// Every good frame (and `/fixed`, fixed-length strings in a plain `array`) read in two-row
/// batches equals what pandas reads.
fn read_matches_pandas() {
    let want: J =
        serde_json::from_str(&std::fs::read_to_string(dir().join("src.json")).unwrap()).unwrap();
    for path in FRAMES.into_iter().chain(["/fixed"]) {
        let w = &want[path];
        let df = open(&dir().join("src.h5"), path);
        let schema = df.schema();
        let index_name = w["index_name"].as_str().unwrap_or("_index");
        assert_eq!(schema.field(0).name(), index_name, "{path}");
        let names: Vec<&String> = schema.fields().iter().skip(1).map(|f| f.name()).collect();
        assert_eq!(json!(names), w["columns"], "{path}: columns");
        let mut cols: Vec<Vec<J>> = vec![Vec::new(); schema.fields().len()];
        // Two rows per batch: slices start past row 0.
        for b in df.batches(2) {
            let b = b.unwrap();
            assert!(b.num_rows() <= 2);
            for (k, c) in b.columns().iter().enumerate() {
                cols[k].extend((0..c.len()).map(|i| canon(c.as_ref(), i)));
            }
        }
        assert_eq!(J::Array(cols[0].clone()), w["index"], "{path}: index");
        for (k, f) in schema.fields().iter().enumerate().skip(1) {
            let name = f.name();
            let what = format!("{path}: {name}");
            assert_eq!(J::Array(cols[k].clone()), w["data"][name], "{what}");
            let kind = match f.data_type() {
                DataType::Dictionary(..) => "categorical",
                _ if f.is_nullable() => "nullable",
                _ => "plain",
            };
            assert_eq!(json!(kind), w["kind"][name], "{what}: kind");
            if kind == "categorical" {
                let c = &df.columns()[k - 1];
                let cats = c.categories().unwrap();
                let labels: Vec<J> = (0..cats.len()).map(|i| canon(cats.as_ref(), i)).collect();
                assert_eq!(
                    J::Array(labels),
                    w["categories"][name],
                    "{what}: categories"
                );
                assert_eq!(json!(c.ordered), w["ordered"][name], "{what}: ordered");
                assert_eq!(f.dict_is_ordered(), Some(c.ordered), "{what}");
            }
        }
    }
}

/// Every good frame read by us and written by `DataFrameWriter`; the pairs for `same`.
fn written_frames() -> Vec<String> {
    let out = dir().join("written.h5");
    let _ = std::fs::remove_file(&out);
    h5fmt::FileWriter::create(&out).unwrap().close().unwrap();
    let mut ed = h5fmt::FileEditor::open(&out).unwrap();
    let opts = WriteOptions {
        chunk_rows: 3,
        deflate: Some(4),
    };
    let mut pairs = Vec::new();
    for path in FRAMES {
        let df = open(&dir().join("src.h5"), path);
        // Nested under a new parent group, from batches of two rows (appends).
        let to = format!("/w{path}");
        let mut w = DataFrameWriter::create(&mut ed, &to, &df.schema(), &opts).unwrap();
        if df.nrows() == 0 {
            w.write(&mut ed, &df.read(0..0).unwrap()).unwrap();
        }
        for b in df.batches(2) {
            w.write(&mut ed, &b.unwrap()).unwrap();
        }
        assert_eq!(w.finish(&mut ed).unwrap(), df.nrows());
        pairs.push(format!(
            "{}:{path}={}:{to}",
            dir().join("src.h5").display(),
            out.display()
        ));
    }
    ed.close().unwrap();
    pairs
}

/// Every good frame through `h5 table import`, `check --strict` and `export --as anndata`;
/// the pairs for `same`.
fn import_check_export() -> Vec<String> {
    let src = dir().join("src.h5");
    let table = dir().join("imported.h5");
    let back = dir().join("exported.h5");
    let _ = std::fs::remove_file(&table);
    let _ = std::fs::remove_file(&back);
    let mut pairs = Vec::new();
    for path in FRAMES {
        let from = format!("{}:{path}", src.display());
        let t = format!("{}:{path}", table.display());
        let o = h5(&["table", "import", &from, "--to", &t, "--batch-rows", "2"]);
        assert!(
            o.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let o = h5(&[
            "table",
            "export",
            &t,
            "--as",
            "anndata",
            &format!("{}:{path}", back.display()),
        ]);
        assert!(
            o.status.success(),
            "{path}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        // A HEP001 column has no "nullable" flag: a nullable column without a missing row
        // (all of /zero's) comes back as a plain one, equal in values.
        let mode = if path == "/zero" { ":values" } else { "" };
        pairs.push(format!("{from}={}:{path}{mode}", back.display()));
    }
    let o = h5(&["table", "check", "--strict", table.to_str().unwrap()]);
    assert!(
        o.status.success(),
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    // The HEP001 side: categories kept, the index is INDEX_COLUMNS, the sentinel-holding
    // int64 column got another fill.
    let f = h5fmt::File::open(&table).unwrap();
    let t = h5table::Table::open(&f.group("/obs").unwrap()).unwrap();
    assert_eq!(t.index_columns, vec!["_index".to_string()]);
    assert_eq!(
        t.column("c").unwrap().kind(),
        h5table::ColumnKind::Categorical
    );
    let i64_fill = t.column("i64").unwrap().fill().value.clone();
    assert_ne!(i64_fill, Some(h5fmt::Value::Int(i64::MIN + 1)));
    pairs
}

#[test]
fn broken_frames_refused_naming_the_object() {
    let out = dir().join("refused.h5");
    let broken = dir().join("broken.h5");
    for (group, object) in [
        ("/version", "/version"),
        ("/ghost", "/ghost"),
        ("/length", "/length/i"),
        ("/codes", "/codes/c/codes"),
        ("/mask", "/mask/ni/mask"),
        ("/encoding", "/encoding/s"),
    ] {
        let o = h5(&[
            "table",
            "import",
            &format!("{}:{group}", broken.display()),
            "--to",
            &format!("{}:/t", out.display()),
        ]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{group}: {err}");
        assert!(err.contains(&format!("{object}:")), "{group}: {err}");
    }
    // A uint8 column using all 256 values leaves no fill to mark missing rows.
    let o = h5(&[
        "table",
        "import",
        &format!("{}:/obs", dir().join("full_u8.h5").display()),
        "--to",
        &format!("{}:/u", out.display()),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("/obs/u") && err.contains("every value"),
        "{err}"
    );
}
