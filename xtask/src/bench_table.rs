//! `cargo xtask bench table`: the HEP001 table I/O benchmarks (not part of CI).
//!
//! Same data, same run, median of 5 timed runs after a warm-up, ours and
//! the Python reference alternating per benchmark:
//! * (a) Arrow export of a 1M-row variable-length UTF-8 column
//!   (`h5table::arrow`) vs polars `read_parquet` of that column;
//! * (b) 10M-row Parquet → Arrow import reading and `cat --format parquet`
//!   export, rows/s, vs pyarrow's Parquet read and write (zstd) of the same data.

use super::{cargo, ensure_venv, output, repo_root, run, R};
use std::path::{Path, PathBuf};
use std::process::Command;

fn times(log: &str) -> R<(u64, Vec<f64>)> {
    let mut rows = 0;
    let mut t = Vec::new();
    for l in log.lines() {
        if let Some(r) = l.strip_prefix("rows ") {
            rows = r.trim().parse().map_err(|e| format!("{l:?}: {e}"))?;
        } else if let Some(s) = l.strip_prefix("t ") {
            t.push(s.trim().parse().map_err(|e| format!("{l:?}: {e}"))?);
        }
    }
    if t.is_empty() {
        return Err(format!("no timings in {log:?}"));
    }
    Ok((rows, t))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(|a, b| a.total_cmp(b));
    s[s.len() / 2]
}

fn target_dir(root: &Path) -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| root.join("target"))
}

/// Run the benchmarks.
pub fn task_bench_table(_args: &[String]) -> R {
    let root = repo_root();
    let v = ensure_venv()?;
    let target = target_dir(&root);
    let dir = target.join("bench").join("table");
    let script = root.join("xtask").join("bench").join("bench_table.py");
    run(Command::new(&v.python).arg(&script).arg("gen").arg(&dir))?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "h5cli",
        "--example",
        "bench_table",
    ]))?;
    let ours = target.join("release").join("examples").join("bench_table");
    let p = |n: &str| dir.join(n).to_string_lossy().into_owned();
    let py = |args: &[String]| -> R<(u64, Vec<f64>)> {
        times(&output(Command::new(&v.python).arg(&script).args(args))?)
    };
    let us =
        |args: &[String]| -> R<(u64, Vec<f64>)> { times(&output(Command::new(&ours).args(args))?) };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut rows = Vec::new();
    let mut bench = |name: &str, ours_args: Vec<String>, py_args: Vec<String>| -> R {
        let (n_ours, t_ours) = us(&ours_args)?;
        let (n_py, t_py) = py(&py_args)?;
        if n_ours != n_py {
            return Err(format!("{name}: ours {n_ours} rows, reference {n_py}"));
        }
        let (mo, mp) = (median(&t_ours), median(&t_py));
        eprintln!("  {name}: ours {t_ours:?}, reference {t_py:?}");
        rows.push(format!(
            "| {name:<38} | {n_ours:>9} | {:>9.1} | {:>9.1} | {:>6.2}x | {:>11.0} | {:>11.0} |",
            mo * 1e3,
            mp * 1e3,
            mo / mp,
            n_ours as f64 / mo,
            n_py as f64 / mp
        ));
        Ok(())
    };
    bench(
        "(a) 1M vlen UTF-8 → Arrow vs polars",
        s(&["arrow-col", &p("vlen.h5"), "/t", "s"]),
        s(&["polars-col", &p("vlen.parquet"), "s"]),
    )?;
    bench(
        "(b) 10M Parquet → Arrow vs pyarrow read",
        s(&["read-parquet", &p("wide.parquet")]),
        s(&["pa-read", &p("wide.parquet")]),
    )?;
    bench(
        "(b) 10M cat --format parquet vs pyarrow",
        s(&["cat-parquet", &p("wide.h5"), "/t", &p("ours.parquet")]),
        s(&["pa-write", &p("wide.parquet"), &p("py.parquet")]),
    )?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    println!(
        "\nHEP001 table I/O ({cpus} CPUs; median of 5 after a warm-up; ratio = ours / reference)\n"
    );
    println!("| benchmark                              |      rows |   ours ms |    ref ms |  ratio |   ours rows/s |    ref rows/s |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    Ok(())
}
