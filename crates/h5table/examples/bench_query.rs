//! Our side of `cargo xtask bench query`: median seconds of each query on a
//! HEP001 table, as JSON lines `{"query":…, "policy":…, "secs":…, "result":…}`.
//!
//! usage: bench_query FILE TABLE QUERIES.json REPS
//! (QUERIES.json: {"Q1": "where …", …}; Q3 sums `energy` over the matching rows.)

use h5table::query::{IndexPolicy, Query, RunOptions};
use std::time::Instant;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let [file, table, queries, reps] = a.as_slice() else {
        return Err("usage: bench_query FILE TABLE QUERIES.json REPS".into());
    };
    let reps: usize = reps.parse()?;
    let qs: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(&std::fs::read(queries)?)?;
    for policy in [IndexPolicy::Ignore, IndexPolicy::Trust] {
        for (name, w) in &qs {
            let w = w.as_str().ok_or("query")?;
            let run = || -> Result<f64, h5table::Error> {
                // Open per run: no cached state between runs, as polars' scan_parquet.
                let f = h5fmt::File::open(file)?;
                let t = h5table::Table::open(&f.group(table)?)?;
                let q = Query::parse(w)?;
                let (rows, _) = q.run_with(&t, &RunOptions { indexes: policy })?;
                if name == "Q3" {
                    let c = t.column("energy")?;
                    let mut sum = 0f64;
                    let mut i = 0;
                    while i < rows.len() {
                        let start = rows[i];
                        let j = i + rows[i..].partition_point(|&r| r < start + 65536);
                        let raw = c.read_raw(start..rows[j - 1] + 1)?;
                        for &r in &rows[i..j] {
                            let k = usize::try_from(r - start).unwrap_or(0) * 4;
                            sum += f64::from(f32::from_le_bytes([
                                raw[k],
                                raw[k + 1],
                                raw[k + 2],
                                raw[k + 3],
                            ]));
                        }
                        i = j;
                    }
                    return Ok(sum);
                }
                Ok(rows.len() as f64)
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
