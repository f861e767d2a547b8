//! `h5 table sql` (h5cli feature `sql`; run by `cargo xtask test-sql`).
//!
//! The issue-15 benchmark table at a test size (200,000 rows in 16,384-row
//! chunks: `ts` int64 sorted, `energy` float32 uniform, `label` int32 with 16
//! values, `id` uint64 unique random), written by h5py with search indexes
//! computed by numpy (`xtask/bench/table_query.py`), plus its Parquet copy
//! written by pyarrow. The six queries run through the `h5` binary and are
//! compared with DataFusion over the Parquet copy (read by arrow-rs' Parquet
//! reader into a `MemTable`: another reader, the same engine) and with
//! numpy over the h5py-read columns. Each runs over
//! * the h5py file with its numpy-built indexes, under `--indexes ignore`,
//!   `verify` and `trust`, and its zstd twin;
//! * the table `h5 table import`ed from the Parquet copy (no index), and the
//!   same with every index `TableEditor::build_index` builds;
//! * the h5py file with two indexes corrupted: the default and `verify` give
//!   the right answers, `trust` the corrupted ones (so trust does use them).
//!
//! Then the command's UX: table names, exit status, output formats.

#![cfg(feature = "sql")]

use datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::datasource::MemTable;
use datafusion::prelude::SessionContext;
use h5table::write::{IndexSpec, TableEditor};
use h5table_datafusion::datafusion;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, OnceLock};

const NROWS: u64 = 200_000;
const CHUNK: u64 = 16_384;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The project venv's python: `$H5FMT_VENV` (set by `cargo xtask test-sql`),
/// else `<repo>/.venv`, else `/work/main/.venv`.
fn python() -> PathBuf {
    let cands = std::env::var_os("H5FMT_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .into_iter()
        .chain([repo().join(".venv"), PathBuf::from("/work/main/.venv")]);
    for dir in cands {
        let p = dir.join("bin/python");
        if p.exists() {
            return p;
        }
    }
    panic!("no Python venv with h5py + pyarrow: run `cargo xtask test-sql` (or `cargo xtask venv`)")
}

fn py(args: &[&str]) -> String {
    let out = Command::new(python()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "python {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn h5(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .unwrap()
}

/// Run `h5 ARGS…`, expect success, return stdout.
fn h5_ok(args: &[&str]) -> String {
    let out = h5(args);
    assert!(
        out.status.success(),
        "h5 {args:?}: {:?}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

struct Bench {
    dir: PathBuf,
    meta: serde_json::Value,
}

impl Bench {
    fn path(&self, name: &str) -> String {
        self.dir.join(name).display().to_string()
    }
    fn int(&self, k: &str) -> i64 {
        self.meta[k].as_i64().unwrap()
    }

    /// The six queries of issue 15 (Q1 0.1 % of `ts`, Q4 0.01 % of `energy`).
    fn queries(&self) -> Vec<(&'static str, String)> {
        let ts = format!("ts >= {} AND ts < {}", self.int("ts_lo"), self.int("ts_hi"));
        let energy = "energy >= 500.0 AND energy < 500.1";
        let id = format!("id = {}", self.int("id_x"));
        vec![
            ("Q1", format!("SELECT count(*) FROM t WHERE {ts}")),
            ("Q2", "SELECT count(*) FROM t WHERE label = 3".into()),
            ("Q3", "SELECT sum(energy) FROM t WHERE label = 3".into()),
            ("Q4", format!("SELECT count(*) FROM t WHERE {energy}")),
            ("Q5", format!("SELECT count(*) FROM t WHERE {id}")),
            (
                "Q6",
                format!("SELECT count(*) FROM t WHERE {ts} AND label = 3"),
            ),
        ]
    }

    /// The rows behind the selective queries, for a row-by-row comparison.
    fn row_queries(&self) -> Vec<(&'static str, String)> {
        let ts = format!("ts >= {} AND ts < {}", self.int("ts_lo"), self.int("ts_hi"));
        let all = "SELECT ts, energy, label, id FROM t WHERE";
        vec![
            ("R1", format!("{all} {ts} ORDER BY id")),
            (
                "R4",
                format!("{all} energy >= 500.0 AND energy < 500.1 ORDER BY id"),
            ),
            ("R5", format!("{all} id = {}", self.int("id_x"))),
            ("R6", format!("{all} {ts} AND label = 3 ORDER BY id")),
        ]
    }
}

const CORRUPT: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], "r+") as f:
    si = f["t/SEARCH_INDEXES"]
    b = si["label__bitmap"]
    a = b[...]
    a[3, :] = 0          # label 3 (VALUES[3] == 3) is in no row
    b[...] = a
    m = si["ts__chunk_minmax"]
    r = m[...]
    r["max"] = r["min"]  # every chunk of ts holds only its first value
    m[...] = r
"#;

const NUMPY: &str = r#"
import json, sys, h5py, numpy as np
d = sys.argv[1]
m = json.load(open(d + "/meta.json"))
with h5py.File(d + "/t.h5", "r") as f:
    ts, e, l, i = (f["t/" + c][:] for c in ("ts", "energy", "label", "id"))
q1 = (ts >= m["ts_lo"]) & (ts < m["ts_hi"])
l3 = l == 3
print(json.dumps({
    "Q1": int(q1.sum()), "Q2": int(l3.sum()),
    "Q3": float(e[l3].astype(np.float64).sum()),
    "Q4": int(((e >= 500.0) & (e < 500.1)).sum()),
    "Q5": int((i == np.uint64(m["id_x"])).sum()),
    "Q6": int((q1 & l3).sum()),
}))
"#;

/// Generate the files once per test binary.
fn bench() -> &'static Bench {
    static B: OnceLock<Bench> = OnceLock::new();
    B.get_or_init(|| {
        let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("table_sql");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let gen = repo().join("xtask/bench/table_query.py");
        py(&[
            gen.to_str().unwrap(),
            "gen",
            dir.to_str().unwrap(),
            &NROWS.to_string(),
            &CHUNK.to_string(),
            "numpy-indexes",
        ]);
        let meta =
            serde_json::from_str(&std::fs::read_to_string(dir.join("meta.json")).unwrap()).unwrap();
        let b = Bench { dir, meta };
        // Ours: imported from the Parquet copy (no index) …
        h5_ok(&[
            "table",
            "import",
            &format!("{}:/t", b.path("imported.h5")),
            "--from",
            &b.path("t.parquet"),
            "--chunk-rows",
            &CHUNK.to_string(),
        ]);
        // … and the same with every index h5table builds.
        std::fs::copy(b.path("imported.h5"), b.path("indexed.h5")).unwrap();
        {
            let mut ed = h5fmt::FileEditor::open(b.path("indexed.h5")).unwrap();
            let mut te = TableEditor::open(&mut ed, "/t").unwrap();
            for (col, spec) in [
                ("ts", IndexSpec::ChunkMinMax),
                ("ts", IndexSpec::SortedRows),
                ("energy", IndexSpec::ChunkMinMax),
                ("energy", IndexSpec::SortedRows),
                ("label", IndexSpec::Bitmap { max_values: 64 }),
                ("id", IndexSpec::SortedRows),
                ("id", IndexSpec::ChunkBloom { fpr: 0.01, seed: 0 }),
            ] {
                te.build_index(col, spec).unwrap();
            }
            drop(te);
            ed.close().unwrap();
        }
        // The h5py file with a wrong BITMAP on label and a wrong CHUNK_MINMAX on ts.
        std::fs::copy(b.path("t.h5"), b.path("corrupt.h5")).unwrap();
        py(&["-c", CORRUPT, &b.path("corrupt.h5")]);
        b
    })
}

/// One value of a one-row, one-column CSV answer.
fn scalar(csv: &str) -> &str {
    let mut lines = csv.lines();
    lines.next().expect("a header");
    let v = lines.next().expect("a row");
    assert_eq!(lines.next(), None, "one row: {csv}");
    v
}

fn csv_of(batches: &[RecordBatch]) -> String {
    let opts = FormatOptions::default().with_null("");
    let mut s = String::new();
    for b in batches {
        let f: Vec<_> = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts).unwrap())
            .collect();
        for r in 0..b.num_rows() {
            let row: Vec<String> = f.iter().map(|f| f.value(r).to_string()).collect();
            s.push_str(&row.join(","));
            s.push('\n');
        }
    }
    s
}

/// DataFusion over the Parquet copy: every query's answer, as CSV rows.
fn oracle(b: &Bench) -> BTreeMap<&'static str, String> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let f = std::fs::File::open(b.dir.join("t.parquet")).unwrap();
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .unwrap()
            .build()
            .unwrap();
        let schema = reader.schema();
        let batches: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
        let ctx = SessionContext::new();
        let t = MemTable::try_new(schema, vec![batches]).unwrap();
        ctx.register_table("t", Arc::new(t)).unwrap();
        let mut out = BTreeMap::new();
        for (name, q) in b.queries().into_iter().chain(b.row_queries()) {
            let got = ctx.sql(&q).await.unwrap().collect().await.unwrap();
            out.insert(name, csv_of(&got));
        }
        out
    })
}

fn numpy(b: &Bench) -> serde_json::Value {
    serde_json::from_str(&py(&["-c", NUMPY, b.dir.to_str().unwrap()])).unwrap()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs())
}

/// Our answer to each query over `file` under `--indexes policy`.
fn ours(b: &Bench, file: &str, policy: &str) -> BTreeMap<&'static str, String> {
    let path = b.path(file);
    b.queries()
        .into_iter()
        .chain(b.row_queries())
        .map(|(name, q)| {
            let csv = h5_ok(&["table", "sql", &path, &q, "--indexes", policy]);
            let body = if name.starts_with('Q') {
                format!("{}\n", scalar(&csv))
            } else {
                csv.split_once('\n').unwrap().1.to_string()
            };
            (name, body)
        })
        .collect()
}

/// `got` equals the oracle answers (sums to 1e-9 relative: the summation
/// order differs between partitionings).
fn same(got: &BTreeMap<&str, String>, want: &BTreeMap<&str, String>, what: &str) {
    for (name, w) in want {
        let g = &got[name];
        if *name == "Q3" {
            let (g, w): (f64, f64) = (g.trim().parse().unwrap(), w.trim().parse().unwrap());
            assert!(close(g, w), "{what} {name}: {g} vs DataFusion/Parquet {w}");
        } else {
            assert_eq!(g, w, "{what} {name}");
        }
    }
}

#[test]
fn six_queries_match_datafusion_on_parquet_and_numpy() {
    let b = bench();
    let want = oracle(b);
    let np = numpy(b);
    // DataFusion/Parquet agrees with numpy over the h5py-read columns.
    for (name, _) in b.queries() {
        let w = want[name].trim();
        if name == "Q3" {
            let (w, n) = (w.parse::<f64>().unwrap(), np[name].as_f64().unwrap());
            assert!(close(w, n), "{name}: DataFusion {w} vs numpy {n}");
        } else {
            assert_eq!(w, np[name].to_string(), "{name}: DataFusion vs numpy");
        }
    }
    // The selections are what the benchmark says (Q1 0.1 %, Q4 ~0.01 %, Q5 one row).
    assert_eq!(want["Q1"].trim(), (NROWS / 1000).to_string());
    assert_eq!(want["Q5"].trim(), "1");
    let q4: u64 = want["Q4"].trim().parse().unwrap();
    assert!((5..=60).contains(&q4), "Q4 selects {q4} rows");

    let mut summary = String::from("h5 table sql vs DataFusion on the Parquet copy:\n");
    for (name, q) in b.queries() {
        summary.push_str(&format!("  {name} {q}: {}\n", want[name].trim()));
    }
    for (file, policies) in [
        ("t.h5", &["ignore", "verify", "trust"][..]),
        ("tz.h5", &["ignore", "trust"][..]),
        ("imported.h5", &["ignore", "trust"][..]),
        ("indexed.h5", &["ignore", "verify", "trust"][..]),
        ("corrupt.h5", &["ignore", "verify"][..]),
    ] {
        for p in policies {
            same(&ours(b, file, p), &want, &format!("{file} --indexes {p}"));
            summary.push_str(&format!("  {file} --indexes {p}: same\n"));
        }
    }
    // Trusted, the corrupted indexes do change the answers: trust uses them.
    let bad = ours(b, "corrupt.h5", "trust");
    for name in ["Q1", "Q2", "Q6", "R1", "R6"] {
        assert_ne!(bad[name], want[name], "corrupt.h5 --indexes trust {name}");
    }
    assert_eq!(bad["Q2"].trim(), "0");
    assert_eq!(bad["Q4"], want["Q4"]);
    assert_eq!(bad["Q5"], want["Q5"]);
    summary.push_str("  corrupt.h5 --indexes trust: Q1 Q2 Q3 Q6 differ (the corrupted indexes)\n");
    // The default policy is ignore.
    let q2 = &b.queries()[1].1;
    let dflt = h5_ok(&["table", "sql", &b.path("corrupt.h5"), q2]);
    assert_eq!(format!("{}\n", scalar(&dflt)), want["Q2"]);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    let _ = std::fs::write(dir.join("table_sql.summary.txt"), &summary);
    eprint!("{summary}");
}

#[test]
fn plan_pushes_filters_with_the_policy() {
    let b = bench();
    let q = format!(
        "EXPLAIN SELECT count(*) FROM t WHERE ts >= {} AND ts < {} AND label = 3",
        b.int("ts_lo"),
        b.int("ts_hi")
    );
    let plan = h5_ok(&["table", "sql", &b.path("t.h5"), &q, "--indexes", "verify"]);
    assert!(plan.contains("H5TableScanExec"), "{plan}");
    assert!(plan.contains("indexes=Verify"), "{plan}");
    // No FilterExec: the whole predicate ran in h5table's engine.
    assert!(!plan.contains("FilterExec"), "{plan}");
}

#[test]
fn table_names_and_exit_status() {
    let b = bench();
    let t = b.path("t.h5");
    // The full path, quoted, names the same table.
    let a = h5_ok(&["table", "sql", &t, "SELECT count(*) AS n FROM \"/t\""]);
    assert_eq!(a, format!("n\n{NROWS}\n"));
    // Keywords and functions in any case; identifiers case-sensitive.
    let a = h5_ok(&[
        "table",
        "sql",
        &t,
        "select COUNT(*) AS n FROM t WHERE label = 3",
    ]);
    assert!(a.starts_with("n\n"), "{a}");
    let out = h5(&["table", "sql", &t, "SELECT Label FROM t"]);
    assert_eq!(out.status.code(), Some(2));
    // An unknown table: exit 2, the registered names listed.
    let out = h5(&["table", "sql", &t, "SELECT * FROM events"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("h5: "), "{err}");
    assert!(err.contains(r#"has: t ("/t")"#), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    // SQL syntax, statements that write: exit 2.
    for q in [
        "SELEC 1",
        "SELECT count(*) FROM t WHERE",
        "CREATE TABLE x AS SELECT * FROM t",
        "INSERT INTO t VALUES (1, 2.0, 3, 4)",
        "COPY t TO '/tmp/x.csv'",
        "SET datafusion.execution.batch_size = 1",
    ] {
        let out = h5(&["table", "sql", &t, q]);
        assert_eq!(out.status.code(), Some(2), "{q}: {out:?}");
        assert!(out.stdout.is_empty(), "{q}");
    }
    // A file that cannot be read: exit 1; a file without tables: exit 1.
    let out = h5(&["table", "sql", &b.path("nope.h5"), "SELECT 1"]);
    assert_eq!(out.status.code(), Some(1));
    let out = h5(&["table", "sql", &b.path("t.parquet"), "SELECT 1"]);
    assert_eq!(out.status.code(), Some(1));
    // A bad option value: clap's usage error, 2.
    let out = h5(&["table", "sql", &t, "SELECT 1", "--indexes", "sometimes"]);
    assert_eq!(out.status.code(), Some(2));
    // --help: exit 0, with the naming rule and examples.
    let help = h5_ok(&["table", "sql", "--help"]);
    for s in [
        "Examples:",
        "run1_events",
        "--indexes",
        "--format",
        "Exit status",
    ] {
        assert!(help.contains(s), "{s}: {help}");
    }
}

#[test]
fn nested_tables_are_named_by_their_path() {
    let b = bench();
    let f = b.path("nested.h5");
    let small = b.path("small.csv");
    std::fs::write(&small, "x,s\n1,a\n2,b\n3,\n").unwrap();
    for t in ["/run1/events", "/run1_events", "/top"] {
        h5_ok(&["table", "import", &format!("{f}:{t}"), "--from", &small]);
    }
    let n = |q: &str| h5_ok(&["table", "sql", &f, q]);
    assert_eq!(n("SELECT count(*) AS n FROM top"), "n\n3\n");
    assert_eq!(n("SELECT count(*) AS n FROM \"/run1/events\""), "n\n3\n");
    assert_eq!(n("SELECT count(*) AS n FROM \"/run1_events\""), "n\n3\n");
    // `run1_events` names one of the two (the first in file order).
    assert_eq!(n("SELECT count(*) AS n FROM run1_events"), "n\n3\n");
    let out = h5(&["table", "sql", &f, "SELECT * FROM run1"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2));
    assert!(err.contains("\"/run1/events\""), "{err}");
    assert!(err.contains("top (\"/top\")"), "{err}");
    // Nulls: empty CSV cells, JSON null.
    assert_eq!(n("SELECT x, s FROM top ORDER BY x"), "x,s\n1,a\n2,b\n3,\n");
}

#[test]
fn output_formats() {
    let b = bench();
    let t = b.path("t.h5");
    let q = format!(
        "SELECT ts, energy, label, id FROM t WHERE ts >= {} AND ts < {} AND label = 3 ORDER BY ts",
        b.int("ts_lo"),
        b.int("ts_hi")
    );
    let csv = h5_ok(&["table", "sql", &t, &q, "--format", "csv"]);
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(!rows.is_empty());
    // JSON lines: one object per row, the same values.
    let json = h5_ok(&["table", "sql", &t, &q, "--format", "json"]);
    let objs: Vec<serde_json::Value> = json
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(objs.len(), rows.len());
    for (o, r) in objs.iter().zip(&rows) {
        let cells: Vec<&str> = r.split(',').collect();
        assert_eq!(o["ts"].to_string(), cells[0]);
        assert_eq!(o["label"].to_string(), cells[2]);
        assert_eq!(o["id"].to_string(), cells[3]);
        let e: f32 = cells[1].parse().unwrap();
        assert_eq!(o["energy"].as_f64().unwrap() as f32, e);
    }
    // Types JSON has no form for are their display strings.
    let j = h5_ok(&[
        "table",
        "sql",
        &t,
        "SELECT CAST(1.5 AS DECIMAL(5,2)) AS d, DATE '2024-01-02' AS day, NULL AS nothing",
        "--format",
        "json",
    ]);
    assert_eq!(
        j,
        "{\"d\":\"1.50\",\"day\":\"2024-01-02\",\"nothing\":null}\n"
    );
    // Parquet to a file: read back, the same rows.
    let pq = b.path("answer.parquet");
    h5_ok(&["table", "sql", &t, &q, "--format", "parquet", "-o", &pq]);
    let reader = ParquetRecordBatchReaderBuilder::try_new(std::fs::File::open(&pq).unwrap())
        .unwrap()
        .build()
        .unwrap();
    let back: Vec<RecordBatch> = reader.map(Result::unwrap).collect();
    assert_eq!(
        csv_of(&back),
        rows.iter().map(|r| format!("{r}\n")).collect::<String>()
    );
    // CSV to a file.
    let out = b.path("answer.csv");
    assert_eq!(h5_ok(&["table", "sql", &t, &q, "-o", &out]), "");
    assert_eq!(std::fs::read_to_string(&out).unwrap(), csv);
    // The aligned text table.
    let table = h5_ok(&["table", "sql", &t, &q, "--format", "table"]);
    let lines: Vec<&str> = table.lines().collect();
    assert!(lines[0].starts_with("+--"), "{table}");
    assert!(
        lines[1].contains("| ts ") && lines[1].contains("| id "),
        "{table}"
    );
    assert_eq!(lines.len(), rows.len() + 4, "{table}");
    assert!(lines
        .iter()
        .all(|l| l.chars().count() == lines[0].chars().count()));
    // An empty answer keeps its header.
    let none = h5_ok(&[
        "table",
        "sql",
        &t,
        "SELECT id FROM t WHERE id = 1",
        "--format",
        "table",
    ]);
    assert!(none.contains("| id |"), "{none}");
    assert_eq!(
        h5_ok(&["table", "sql", &t, "SELECT id FROM t WHERE id = 1"]),
        "id\n"
    );
}
