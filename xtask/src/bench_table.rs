//! `cargo xtask bench table`: the HEP001 table I/O benchmarks (not part of CI).
//!
//! Same data, same run, median of `BENCH_REPS` (default 5) timed runs after
//! a warm-up, ours and the Python reference alternating per benchmark:
//! * (a) Arrow export of a 1M-row variable-length UTF-8 column into one
//!   `StringArray` (`h5table::arrow`, in-process) vs polars `read_parquet`
//!   of that column (in-process);
//! * (b) `h5 table import` of a `BENCH_ROWS`-row (default 10M) Parquet file
//!   of mixed columns, the release CLI timed as a whole process, vs
//!   pyarrow's `read_table` of the same file;
//! * (c) `h5 table cat --format parquet` of the imported table (the CLI,
//!   zstd 3) vs pyarrow's `write_table` (zstd 3) of the same data;
//! * the round trip (b) → (c) is then checked to equal the original with
//!   pyarrow (`Table.equals`, modulo the documented type mappings), and the
//!   benchmark fails when it does not.
//!
//! Data lives in `BENCH_DIR` (default `target/bench/table`), kept between
//! runs; the 10M-row files take ~1 GB.

use super::{cargo, ensure_venv, output, repo_root, run, R};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

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

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Wall-clock seconds of `make()` run to completion `reps` times after a
/// warm-up, each run after `before()`.
fn time_process(reps: usize, mut before: impl FnMut(), make: impl Fn() -> Command) -> R<Vec<f64>> {
    let mut t = Vec::new();
    for i in 0..=reps {
        before();
        let mut cmd = make();
        let start = Instant::now();
        output(&mut cmd)?;
        if i > 0 {
            t.push(start.elapsed().as_secs_f64());
        }
    }
    Ok(t)
}

/// Run the benchmarks.
pub fn task_bench_table(_args: &[String]) -> R {
    let root = repo_root();
    let v = ensure_venv()?;
    let target = target_dir(&root);
    let dir = std::env::var_os("BENCH_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| target.join("bench").join("table"));
    let reps: usize = env_or("BENCH_REPS", 5);
    let nrows: u64 = env_or("BENCH_ROWS", 10_000_000);
    let script = root.join("xtask").join("bench").join("bench_table.py");
    let data = dir.join(format!("{nrows}"));
    run(Command::new(&v.python)
        .arg(&script)
        .arg("gen")
        .arg(&data)
        .arg(nrows.to_string()))?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "h5cli",
        "--bin",
        "h5",
        "--example",
        "bench_table",
    ]))?;
    let ours = target.join("release").join("examples").join("bench_table");
    let h5 = target.join("release").join("h5");
    let p = |n: &str| data.join(n).to_string_lossy().into_owned();
    let reps_s = reps.to_string();
    let py = |args: &[String]| -> R<(u64, Vec<f64>)> {
        times(&output(
            Command::new(&v.python).arg(&script).args(args).arg(&reps_s),
        )?)
    };
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    let mut rows = Vec::new();
    let mut report =
        |name: &str, (n_ours, t_ours): (u64, Vec<f64>), (n_py, t_py): (u64, Vec<f64>)| -> R {
            if n_ours != n_py {
                return Err(format!("{name}: ours {n_ours} rows, reference {n_py}"));
            }
            let (mo, mp) = (median(&t_ours), median(&t_py));
            eprintln!("  {name}: ours {t_ours:?}, reference {t_py:?}");
            rows.push(format!(
                "| {name:<44} | {n_ours:>9} | {:>9.1} | {:>9.1} | {:>6.2}x | {:>11.0} | {:>11.0} |",
                mo * 1e3,
                mp * 1e3,
                mo / mp,
                n_ours as f64 / mo,
                n_py as f64 / mp
            ));
            Ok(())
        };
    // (a) in-process, both sides.
    let a_ours = times(&output(Command::new(&ours).args(s(&[
        "arrow-col",
        &p("vlen.h5"),
        "/t",
        "s",
        &reps_s,
    ])))?)?;
    let a_py = py(&s(&["polars-col", &p("vlen.parquet"), "s"]))?;
    report(
        "(a) 1M vlen UTF-8 → one StringArray vs polars",
        a_ours,
        a_py,
    )?;
    // (b) the import CLI, a new file each run.
    let h5file = data.join("ours.h5");
    let spec = format!("{}:/t", h5file.display());
    let t_import = time_process(
        reps,
        || {
            let _ = std::fs::remove_file(&h5file);
        },
        || {
            let mut c = Command::new(&h5);
            c.args(["table", "import", &spec, "--from", &p("mixed.parquet")]);
            c
        },
    )?;
    let b_py = py(&s(&["pa-read", &p("mixed.parquet")]))?;
    report(
        "(b) h5 table import vs pyarrow read_table",
        (nrows, t_import),
        b_py,
    )?;
    // (c) the export CLI.
    let out = p("ours.parquet");
    let t_cat = time_process(
        reps,
        || {},
        || {
            let mut c = Command::new(&h5);
            c.args(["table", "cat", &spec, "--format", "parquet", "-o", &out]);
            c
        },
    )?;
    let c_py = py(&s(&["pa-write", &p("mixed.parquet"), &p("py.parquet")]))?;
    report(
        "(c) h5 table cat --format parquet vs pyarrow write_table",
        (nrows, t_cat),
        c_py,
    )?;
    let verdict = output(
        Command::new(&v.python)
            .arg(&script)
            .arg("verify")
            .arg(p("mixed.parquet"))
            .arg(&out),
    )?;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\nHEP001 table I/O ({cpus} CPUs, load {}; median of {reps} after a warm-up; ratio = ours / reference)\n",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("| benchmark                                    |      rows |   ours ms |    ref ms |  ratio |   ours rows/s |    ref rows/s |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    println!("\n{}", verdict.trim());
    Ok(())
}
