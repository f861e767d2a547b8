//! The query engine against numpy: random tables (h5py) and random WHERE
//! expressions evaluated by `tests/query_oracle.py` with SQL three-valued
//! semantics over HEP001's missing values.

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
        let file = h5fmt::File::open(&path).unwrap();
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
            let got = h5table::query::Query::parse(w)
                .unwrap_or_else(|e| panic!("{w}: {e}"))
                .run(&table)
                .unwrap_or_else(|e| panic!("{w}: {e}"));
            assert_eq!(got, want, "seed {seed}: {w}");
            total += 1;
        }
    }
    assert_eq!(total, 360);
}
