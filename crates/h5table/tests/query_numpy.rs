//! The query engine against numpy: random tables (h5py) and random WHERE
//! expressions evaluated by `tests/query_oracle.py` with SQL three-valued
//! semantics over HEP001's missing values. Each table is queried without
//! indexes, then again with every index kind we can build on each column
//! (`SORTED_ROWS` and `BITMAP` answer some queries without a scan) under
//! `--indexes trust` and `verify`: the rows must not change. The same
//! rows as a `Selection` are counted, and each numeric column summed under
//! them (`Column::sum`), against numpy's sums of the non-missing values.

use h5fmt::FileEditor;
use h5table::query::{IndexPolicy, Query, RunOptions};
use h5table::write::{IndexSpec, TableEditor};
use std::path::PathBuf;
use std::process::Command;

fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| {
        let local = concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv");
        local.into()
    });
    let p = PathBuf::from(venv).join("bin/python");
    assert!(
        p.exists(),
        "{} not found: run `cargo xtask venv` (the numpy oracle is required)",
        p.display()
    );
    p
}

#[test]
fn random_queries_match_numpy() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("query_numpy");
    std::fs::create_dir_all(&dir).unwrap();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/query_oracle.py");
    let mut total = 0;
    let mut no_scan = 0;
    for seed in 0..6 {
        let path = dir.join(format!("t{seed}.h5"));
        let out = Command::new(python())
            .args([script, path.to_str().unwrap(), &seed.to_string(), "60"])
            .output()
            .expect("run python");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let indexed = dir.join(format!("t{seed}_indexed.h5"));
        std::fs::copy(&path, &indexed).unwrap();
        let built = build_indexes(&indexed);
        assert!(built >= 10, "only {built} indexes built");
        for (file_path, policies) in [
            (&path, &[IndexPolicy::Ignore][..]),
            // Verify recomputes every index per query: on half the tables.
            (
                &indexed,
                if seed % 2 == 0 {
                    &[IndexPolicy::Trust, IndexPolicy::Verify][..]
                } else {
                    &[IndexPolicy::Trust][..]
                },
            ),
        ] {
            let file = h5fmt::File::open(file_path).unwrap();
            let table = h5table::Table::open(&file.group("/t").unwrap()).unwrap();
            assert_eq!(table.nrows(), v["nrows"].as_u64().unwrap());
            for q in v["queries"].as_array().unwrap() {
                let w = q["where"].as_str().unwrap();
                let want: Vec<u64> = q["rows"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|r| r.as_u64().unwrap())
                    .collect();
                let query = Query::parse(w).unwrap_or_else(|e| panic!("{w}: {e}"));
                for &indexes in policies {
                    let (got, explain) = query
                        .run_with(&table, &RunOptions { indexes })
                        .unwrap_or_else(|e| panic!("{w}: {e}"));
                    assert_eq!(got, want, "seed {seed} {indexes:?}: {w}\n{explain:?}");
                    // The same rows as a Selection, counted and summed under.
                    let (sel, _) = query.select(&table, &RunOptions { indexes }).unwrap();
                    assert_eq!(sel.count(), want.len() as u64, "{w}");
                    assert_eq!(sel.iter().collect::<Vec<_>>(), want, "{w}");
                    for (c, s) in q["sums"].as_object().unwrap() {
                        let got = table.column(c).unwrap().sum(&sel).unwrap();
                        match s.as_f64() {
                            None => assert!(got.is_nan(), "sum {c} {w}: {got}, numpy NaN"),
                            Some(x) => assert!(
                                (got - x).abs() <= 1e-9 * x.abs().max(1.0),
                                "sum {c} {w}: {got}, numpy {x}"
                            ),
                        }
                    }
                    if explain
                        .lines
                        .iter()
                        .any(|l| l.starts_with("answered by the indexes"))
                    {
                        no_scan += 1;
                    }
                    total += 1;
                }
            }
        }
    }
    // 6 tables × 60 queries: plain, indexed under trust, and (3 tables) verify.
    assert_eq!(total, 6 * 60 * 2 + 3 * 60);
    assert!(no_scan > 0, "no query was answered by an index alone");
    eprintln!("query_numpy: {total} runs, {no_scan} answered by indexes without a scan");
}

/// Every index kind on every column that permits it; returns how many.
fn build_indexes(path: &std::path::Path) -> usize {
    let file = h5fmt::File::open(path).unwrap();
    let t = h5table::Table::open(&file.group("/t").unwrap()).unwrap();
    let names: Vec<String> = t.columns().iter().map(|c| c.name().to_string()).collect();
    drop(t);
    drop(file);
    let mut ed = FileEditor::open(path).unwrap();
    let mut te = TableEditor::open(&mut ed, "/t").unwrap();
    let mut built = 0;
    for c in &names {
        for k in [
            IndexSpec::minmax(),
            IndexSpec::sorted(),
            IndexSpec::bitmap(),
            IndexSpec::bloom(),
        ] {
            // Kinds a column's type does not permit (or too many distinct
            // values for a bitmap) are refused: skip them.
            if te.build_index(c, k).is_ok() {
                built += 1;
            }
        }
    }
    drop(te);
    ed.close().unwrap();
    built
}
