//! Our side of `cargo xtask bench query`: median seconds of each query on a
//! HEP001 table, as JSON lines `{"query":…, "policy":…, "secs":…, "result":…}`.
//!
//! usage: bench_query FILE TABLE QUERIES.json REPS POLICY
//! (QUERIES.json: {"Q1": "where …", …}; Q3 sums `energy` over the matching
//! rows; POLICY ignore|trust.)
//!
//! usage: bench_query build SRC DST TABLE
//! copies SRC to DST and builds the benchmark's search indexes there with
//! h5table (ts CHUNK_MINMAX, energy CHUNK_MINMAX + SORTED_ROWS, label
//! BITMAP, id SORTED_ROWS + CHUNK_BLOOM; a column's indexes built together,
//! from one read), one JSON line per column `{"build":…, "secs":…}` and
//! one per index `{"size":…, "index_bytes":…, "column_bytes":…}`.
//! Environment: `BENCH_GENERIC=1` builds on the generic per-row path;
//! `BENCH_ALL_KINDS=COLUMN` then also rebuilds all four families on
//! COLUMN together, timed (`{"build_all_kinds":…, "secs":…}`).

use h5table::query::{IndexPolicy, Query, RunOptions};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    if let [cmd, src, dst, table] = a.as_slice() {
        if cmd == "build" {
            return build(src, dst, table);
        }
    }
    let [file, table, queries, reps, policy] = a.as_slice() else {
        return Err("usage: bench_query FILE TABLE QUERIES.json REPS ignore|trust".into());
    };
    let reps: usize = reps.parse()?;
    let policy = match policy.as_str() {
        "ignore" => IndexPolicy::Ignore,
        "trust" => IndexPolicy::Trust,
        p => return Err(format!("policy {p:?}: ignore or trust").into()),
    };
    let qs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(queries)?)?;
    {
        for (name, w) in &qs {
            let w = w.as_str().ok_or("query")?;
            let run = || -> Result<f64, h5table::Error> {
                // Open per run: no cached state between runs, as polars' scan_parquet.
                let f = h5fmt::File::open(file)?;
                let t = h5table::Table::open(&f.group(table)?)?;
                let q = Query::parse(w)?;
                // Filter, then count or sum (as polars: `filter(…).select(len())`,
                // `filter(…).select(sum(energy))`).
                let (sel, _) = q.select(&t, &RunOptions { indexes: policy })?;
                if name == "Q3" {
                    return t.column("energy")?.sum(&sel);
                }
                Ok(sel.count() as f64)
            };
            run()?; // warm-up
            let mut ts = Vec::new();
            let mut result = 0.0;
            for _ in 0..reps {
                let t0 = Instant::now();
                result = run()?;
                ts.push(t0.elapsed().as_secs_f64());
            }
            ts.sort_by(|a, b| a.total_cmp(b));
            println!(
                "{}",
                serde_json::json!({"query": name, "policy": format!("{policy:?}").to_lowercase(), "secs": ts[ts.len() / 2], "result": result})
            );
        }
    }
    Ok(())
}

/// Build the benchmark's indexes into a copy of `src`, timed one by one.
fn build(src: &str, dst: &str, table: &str) -> Result<(), Box<dyn std::error::Error>> {
    use h5table::write::{IndexSpec, TableEditor};
    std::fs::copy(src, dst)?;
    // The copy's pages reach the disk now, not in the first build's fsync.
    std::fs::File::open(dst)?.sync_all()?;
    // The indexes of one column are built together (one read of it).
    let plan: [(&str, &[IndexSpec]); 4] = [
        ("ts", &[IndexSpec::minmax()]),
        ("energy", &[IndexSpec::minmax(), IndexSpec::sorted()]),
        ("label", &[IndexSpec::bitmap()]),
        ("id", &[IndexSpec::sorted(), IndexSpec::bloom()]),
    ];
    // BENCH_GENERIC=1: the generic per-row `Value` path for every column
    // (what the builds did before the typed paths), for comparison.
    let generic = std::env::var("BENCH_GENERIC").is_ok_and(|v| v == "1");
    h5table::write::force_generic_index_paths(generic);
    let mut ed = h5fmt::FileEditor::open(dst)?;
    let mut te = TableEditor::open(&mut ed, table)?;
    for (col, specs) in plan {
        let kinds: Vec<String> = specs
            .iter()
            .map(|s| s.kind().as_str().to_string())
            .collect();
        let t0 = Instant::now();
        te.build_indexes(col, specs)?;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({"build": format!("{col} {}", kinds.join("+")), "secs": secs})
        );
    }
    if let Ok(col) = std::env::var("BENCH_ALL_KINDS") {
        // All four families on one column, built together.
        let all = [
            IndexSpec::minmax(),
            IndexSpec::sorted(),
            IndexSpec::bitmap(),
            IndexSpec::bloom(),
        ];
        for s in &all {
            te.drop_index(&col, s.kind())?;
        }
        let t0 = Instant::now();
        te.build_indexes(&col, &all)?;
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{}",
            serde_json::json!({"build_all_kinds": col, "secs": secs})
        );
    }
    drop(te);
    ed.close()?;
    // Sizes: logical bytes of each index dataset (and its VALUES) next to its column's.
    let f = h5fmt::File::open(dst)?;
    let t = h5table::Table::open(&f.group(table)?)?;
    let bytes = |d: &h5fmt::Dataset| d.len() * d.dtype().size();
    for info in h5table::index::discover(&t)?.indexes {
        let Some(col) = info.column.clone() else {
            continue;
        };
        let mut ib = bytes(&info.dataset);
        if let Some(v) = &info.params.values {
            if let Ok(h5fmt::Object::Dataset(d)) = f.object(v) {
                ib += bytes(&d);
            }
        }
        let c = t.column(&col)?;
        println!(
            "{}",
            serde_json::json!({"size": format!("{col} {}", info.kind.as_str()), "index_bytes": ib, "column_bytes": bytes(c.dataset())})
        );
    }
    Ok(())
}
