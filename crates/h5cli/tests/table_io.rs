//! `table_io`: Parquet written from every table of the public HEP001 corpus,
//! read back by pyarrow, equals h5py's reading of the table (cell by cell,
//! nulls where missing); JSON lines; CSV and Parquet import readers.

#[allow(dead_code)]
#[path = "../src/table_io.rs"]
mod table_io;

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    let mut tried = Vec::new();
    for venv in [
        std::env::var("H5FMT_VENV").ok(),
        Some("/work/main/.venv".into()),
    ]
    .into_iter()
    .flatten()
    {
        let p = PathBuf::from(venv).join("bin/python");
        if p.exists() {
            return p;
        }
        tried.push(p);
    }
    panic!("no oracle Python (tried {tried:?}); run `cargo xtask venv` or set H5FMT_VENV");
}

fn run(script: &Path, args: &[&str]) -> serde_json::Value {
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn manifest() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn corpus() -> PathBuf {
    PathBuf::from(
        std::env::var("HEP001_FILES").unwrap_or_else(|_| "/work/shared/hep001/files".into()),
    )
}

fn scratch(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("h5cli-table-io-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn parquet_of_corpus_tables_read_by_pyarrow_equals_h5py() {
    let dir = scratch("corpus");
    let oracle = manifest().join("../h5table/tests/arrow_oracle.py");
    let reader = manifest().join("tests/table_io_cells.py");
    let mut files: Vec<PathBuf> = std::fs::read_dir(corpus())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "h5")
                && p.file_name().unwrap().to_str().unwrap().starts_with('c')
        })
        .collect();
    files.sort();
    let mut tables = 0;
    for path in &files {
        let expected = path.with_extension("expected.json");
        let file = h5fmt::File::open(path).unwrap();
        for tpath in h5table::find_tables(&file).unwrap() {
            let table = h5table::Table::open(&file.group(&tpath).unwrap()).unwrap();
            let out = dir.join(format!("t{tables}.parquet"));
            let opts = table_io::ParquetOptions {
                batch_rows: 50,
                row_group_rows: 120,
                ..Default::default()
            };
            let n = table_io::write_parquet_file(&table, None, None, &out, &opts).unwrap();
            assert_eq!(n, table.nrows());
            let want = run(
                &oracle,
                &[path.to_str().unwrap(), &tpath, expected.to_str().unwrap()],
            );
            let got = run(&reader, &["parquet", out.to_str().unwrap()]);
            assert_eq!(got["nrows"], want["nrows"], "{}:{tpath}", path.display());
            for c in table.columns() {
                let name = c.name();
                assert_eq!(
                    got["columns"][name]["cells"],
                    want["columns"][name]["cells"],
                    "{}:{tpath}/{name} (pyarrow type {})",
                    path.display(),
                    got["types"][name]
                );
            }
            tables += 1;
        }
    }
    assert!(tables >= 20, "{tables} tables");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn projection_row_range_and_json_lines() {
    let dir = scratch("proj");
    let path = corpus().join("c11_categorical.h5");
    let file = h5fmt::File::open(&path).unwrap();
    let table = h5table::Table::open(&file.group("/matches").unwrap()).unwrap();
    let out = dir.join("p.parquet");
    let n = table_io::write_parquet_file(
        &table,
        Some(&["score", "home_team"]),
        Some(10..40),
        &out,
        &table_io::ParquetOptions::default(),
    )
    .unwrap();
    assert_eq!(n, 30);
    let got = run(
        &manifest().join("tests/table_io_cells.py"),
        &["parquet", out.to_str().unwrap()],
    );
    let want = run(
        &manifest().join("../h5table/tests/arrow_oracle.py"),
        &[
            path.to_str().unwrap(),
            "/matches",
            path.with_extension("expected.json").to_str().unwrap(),
        ],
    );
    let cols: Vec<&str> = got["columns"]
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(cols, ["score", "home_team"]);
    for name in cols {
        let w = want["columns"][name]["cells"].as_array().unwrap();
        assert_eq!(
            got["columns"][name]["cells"].as_array().unwrap()[..],
            w[10..40]
        );
    }
    assert!(got["types"]["home_team"]
        .as_str()
        .unwrap()
        .starts_with("dictionary"));
    // JSON lines: one object per row, keys in order, labels for codes, nulls.
    let mut buf = Vec::new();
    let n = table_io::write_json_lines(&table, Some(&["home_team", "score"]), Some(0..5), &mut buf)
        .unwrap();
    assert_eq!(n, 5);
    let text = String::from_utf8(buf).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 5);
    for (i, l) in lines.iter().enumerate() {
        let v: serde_json::Value = serde_json::from_str(l).unwrap();
        let o = v.as_object().unwrap();
        assert_eq!(o.keys().collect::<Vec<_>>(), ["home_team", "score"]);
        assert_eq!(o["home_team"], want["columns"]["home_team"]["cells"][i]);
    }
    // Unknown columns and rows past NROWS fail without writing a file.
    let bad = dir.join("bad.parquet");
    assert!(
        table_io::write_parquet_file(&table, Some(&["nope"]), None, &bad, &Default::default())
            .is_err()
    );
    assert!(table_io::write_parquet_file(
        &table,
        None,
        Some(0..table.nrows() + 1),
        &bad,
        &Default::default()
    )
    .is_err());
    assert!(!bad.exists());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn csv_and_parquet_import_readers() {
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};
    use arrow_array::Array;
    let dir = scratch("import");
    // The corpus CSV of c05 (what `h5 table cat --format csv` prints).
    let csv = corpus().join("c05_custom_fill__custom.csv");
    let mut r = table_io::read_csv(
        &csv,
        &table_io::CsvOptions {
            batch_rows: 7,
            ..Default::default()
        },
    )
    .unwrap();
    let schema = arrow_array::RecordBatchReader::schema(&r);
    let mut rows = 0;
    while let Some(b) = r.next_batch().unwrap() {
        assert!(b.num_rows() <= 7);
        rows += b.num_rows();
    }
    let text = std::fs::read_to_string(&csv).unwrap();
    assert_eq!(rows, text.lines().count() - 1);
    assert!(schema.fields().len() >= 2);
    // Quoted fields, embedded delimiters, quotes and newlines; type inference; nulls.
    let p = dir.join("q.csv");
    std::fs::write(
        &p,
        "i,f,s,b\n1,1.5,\"a,b\",true\n,nan,\"say \"\"hi\"\"\",false\n3,-inf,\"two\nlines\",\n-4,2,,true\n",
    )
    .unwrap();
    let mut r = table_io::read_csv(&p, &Default::default()).unwrap();
    let b = r.next_batch().unwrap().unwrap();
    assert!(r.next_batch().unwrap().is_none());
    assert_eq!(b.num_rows(), 4);
    let i = b.column(0).as_primitive::<Int64Type>();
    assert_eq!((i.value(0), i.is_null(1), i.value(3)), (1, true, -4));
    let f = b.column(1).as_primitive::<Float64Type>();
    assert!(f.value(1).is_nan() && f.value(2) == f64::NEG_INFINITY);
    let s = b.column(2).as_string::<i32>();
    assert_eq!(
        (s.value(0), s.value(1), s.value(2), s.is_null(3)),
        ("a,b", "say \"hi\"", "two\nlines", true)
    );
    assert!(b.column(3).as_boolean().value(0) && b.column(3).is_null(2));
    // A cell that does not fit the inferred type: an error naming the line.
    let p2 = dir.join("bad.csv");
    std::fs::write(&p2, "i\n1\n2\nx\n").unwrap();
    let mut r = table_io::read_csv(
        &p2,
        &table_io::CsvOptions {
            infer_rows: 2,
            ..Default::default()
        },
    )
    .unwrap();
    let e = r.next_batch().unwrap_err();
    assert!(e.to_string().contains("line 4"), "{e}");
    // Parquet written by pyarrow, read back in batches.
    let pq = dir.join("py.parquet");
    let st = Command::new(python())
        .arg("-c")
        .arg(
            "import sys, pyarrow as pa, pyarrow.parquet as pq\n\
             pq.write_table(pa.table({'x': pa.array([1, None, 3] * 100, pa.int32()),\n\
             's': pa.array(['a', 'é', None] * 100)}), sys.argv[1])",
        )
        .arg(&pq)
        .status()
        .unwrap();
    assert!(st.success());
    let mut n = 0;
    let mut nulls = 0;
    for b in table_io::read_parquet(&pq, 64).unwrap() {
        let b = b.unwrap();
        assert!(b.num_rows() <= 64);
        n += b.num_rows();
        nulls += b.column(0).null_count() + b.column(1).null_count();
    }
    assert_eq!((n, nulls), (300, 200));
    let _ = std::fs::remove_dir_all(&dir);
}

/// `--format csv -o FILE` writes CSV (it once wrote JSON lines), the same
/// bytes as the CSV on standard output, which hep001.rs checks against the
/// corpus' expected CSV.
#[test]
fn csv_to_a_file_is_csv() {
    let src = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/hep001/files/c02_ints.h5:/ints"
    );
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("csv_to_a_file.csv");
    let h5 = env!("CARGO_BIN_EXE_h5");
    let st = Command::new(h5)
        .args([
            "table", "cat", src, "--rows", "0:50", "--format", "csv", "-o",
        ])
        .arg(&out)
        .status()
        .unwrap();
    assert!(st.success());
    let stdout = Command::new(h5)
        .args(["table", "cat", src, "--rows", "0:50"])
        .output()
        .unwrap();
    assert!(stdout.status.success());
    let file = std::fs::read(&out).unwrap();
    assert!(
        file.starts_with(b"i8,i16,i32,i64,"),
        "{}",
        String::from_utf8_lossy(&file)
    );
    assert_eq!(file, stdout.stdout);
}
