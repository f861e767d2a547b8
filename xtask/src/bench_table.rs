//! `cargo xtask bench table [vlen] [import] [cat]`: the HEP001 table I/O
//! benchmarks (not part of CI); all three when none is named.
//!
//! Same data, same run, median of `BENCH_REPS` (default 5) timed runs after
//! a warm-up, ours and the Python reference alternating run by run (the
//! order swapping each round), so that load changes hit both sides alike:
//! * (a) `vlen`: Arrow export of a 1M-row variable-length UTF-8 column into
//!   one `StringArray` (`h5table::arrow`, in-process) vs polars
//!   `read_parquet` of that column (in-process); both sides stay running
//!   and time one run per line on their stdin;
//! * (b) `import`: `h5 table import` of a `BENCH_ROWS`-row (default 10M)
//!   Parquet file of mixed columns, the release CLI timed as a whole
//!   process, vs pyarrow's `read_table` of the same file;
//! * (c) `cat`: `h5 table cat --format parquet` of the imported table (the
//!   CLI, zstd 3) vs pyarrow's `write_table` (zstd 3) of the same data;
//! * the round trip (b) → (c) is then checked to equal the original with
//!   pyarrow (`Table.equals`, modulo the documented type mappings), and the
//!   benchmark fails when it does not.
//!
//! Data lives in `BENCH_DIR` (default `target/bench/table`), kept between
//! runs; the 10M-row files take ~1 GB (only (a)'s 60 MB are written when
//! (a) runs alone).

use super::{cargo, ensure_venv, output, repo_root, run, R};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

/// A benchmark side kept running (`… serve`): it warms up, prints
/// `rows N`, then times one run per line on its stdin (`t <secs>`).
struct Served {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    what: String,
}

impl Served {
    /// Start `cmd` and wait for its warm-up; returns it and its row count.
    fn start(mut cmd: Command) -> R<(Served, u64)> {
        let what = super::show(&cmd);
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("cannot run `{what}`: {e}"))?;
        let (stdin, stdout) = (child.stdin.take(), child.stdout.take());
        let stdout = BufReader::new(stdout.ok_or("no stdout")?);
        let mut s = Served {
            child,
            stdin,
            stdout,
            what,
        };
        let l = s.line()?;
        let rows = l
            .strip_prefix("rows ")
            .and_then(|r| r.trim().parse().ok())
            .ok_or_else(|| format!("`{}`: expected `rows N`, got {l:?}", s.what))?;
        Ok((s, rows))
    }

    fn line(&mut self) -> R<String> {
        let mut l = String::new();
        let n = self
            .stdout
            .read_line(&mut l)
            .map_err(|e| format!("`{}`: {e}", self.what))?;
        if n == 0 {
            let status = self.child.wait().map_err(|e| e.to_string())?;
            return Err(format!("`{}` ended ({status})", self.what));
        }
        Ok(l)
    }

    /// Seconds of one timed run.
    fn once(&mut self) -> R<f64> {
        let stdin = self.stdin.as_mut().ok_or("stdin closed")?;
        stdin
            .write_all(b"go\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("`{}`: {e}", self.what))?;
        let l = self.line()?;
        l.strip_prefix("t ")
            .and_then(|t| t.trim().parse().ok())
            .ok_or_else(|| format!("`{}`: expected `t SECONDS`, got {l:?}", self.what))
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stdin.take(); // EOF: the side exits
        let _ = self.child.wait();
    }
}

/// `reps` timings of each side, alternating (`a` first in even rounds, `b`
/// first in odd ones); warm-ups are the sides' own business.
fn alternate(
    reps: usize,
    mut a: impl FnMut() -> R<f64>,
    mut b: impl FnMut() -> R<f64>,
) -> R<(Vec<f64>, Vec<f64>)> {
    let (mut ta, mut tb) = (Vec::new(), Vec::new());
    for i in 0..reps {
        if i % 2 == 0 {
            ta.push(a()?);
            tb.push(b()?);
        } else {
            tb.push(b()?);
            ta.push(a()?);
        }
    }
    Ok((ta, tb))
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

/// Wall-clock seconds of one run of `cmd` to completion.
fn time_process(mut cmd: Command) -> R<f64> {
    let start = Instant::now();
    output(&mut cmd)?;
    Ok(start.elapsed().as_secs_f64())
}

/// Run the benchmarks named in `args` (`vlen`, `import`, `cat`; all when
/// none; `cat` reads what `import` wrote).
pub fn task_bench_table(args: &[String]) -> R {
    const ALL: [&str; 3] = ["vlen", "import", "cat"];
    if let Some(a) = args.iter().find(|a| !ALL.contains(&a.as_str())) {
        return Err(format!(
            "bench table: unknown benchmark {a:?} (choose from {ALL:?})"
        ));
    }
    let want = |name: &str| args.is_empty() || args.iter().any(|a| a == name);
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
    let mixed = want("import") || want("cat");
    run(Command::new(&v.python)
        .arg(&script)
        .arg("gen")
        .arg(&data)
        .arg(if mixed { nrows } else { 0 }.to_string()))?;
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
    // The Python side, serving timed runs.
    let py = |args: &[&str]| -> R<(Served, u64)> {
        let mut c = Command::new(&v.python);
        c.arg(&script).args(args).arg("serve");
        Served::start(c)
    };
    let mut rows = Vec::new();
    let mut report =
        |name: &str, n_ours: u64, n_py: u64, (t_ours, t_py): (Vec<f64>, Vec<f64>)| -> R {
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
    if want("vlen") {
        // (a) in-process, both sides.
        let mut c = Command::new(&ours);
        c.args(["arrow-col", &p("vlen.h5"), "/t", "s", "serve"]);
        let (mut a_ours, n_ours) = Served::start(c)?;
        let (mut a_py, n_py) = py(&["polars-col", &p("vlen.parquet"), "s"])?;
        let t = alternate(reps, || a_ours.once(), || a_py.once())?;
        report(
            "(a) 1M vlen UTF-8 → one StringArray vs polars",
            n_ours,
            n_py,
            t,
        )?;
    }
    let h5file = data.join("ours.h5");
    let spec = format!("{}:/t", h5file.display());
    if want("import") {
        // (b) the import CLI, a new file each run.
        let import = || {
            let _ = std::fs::remove_file(&h5file);
            let mut c = Command::new(&h5);
            c.args(["table", "import", &spec, "--from", &p("mixed.parquet")]);
            time_process(c)
        };
        import()?; // warm-up
        let (mut b_py, n_py) = py(&["pa-read", &p("mixed.parquet")])?;
        let t = alternate(reps, import, || b_py.once())?;
        report("(b) h5 table import vs pyarrow read_table", nrows, n_py, t)?;
    }
    let mut verdict = String::new();
    if want("cat") {
        // (c) the export CLI.
        let out = p("ours.parquet");
        let cat = || {
            let mut c = Command::new(&h5);
            c.args(["table", "cat", &spec, "--format", "parquet", "-o", &out]);
            time_process(c)
        };
        cat()?; // warm-up
        let (mut c_py, n_py) = py(&["pa-write", &p("mixed.parquet"), &p("py.parquet")])?;
        let t = alternate(reps, cat, || c_py.once())?;
        report(
            "(c) h5 table cat --format parquet vs pyarrow write_table",
            nrows,
            n_py,
            t,
        )?;
        verdict = output(
            Command::new(&v.python)
                .arg(&script)
                .arg("verify")
                .arg(p("mixed.parquet"))
                .arg(&out),
        )?;
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!(
        "\nHEP001 table I/O ({cpus} CPUs, load {}; median of {reps} after a warm-up, ours and the reference alternating; ratio = ours / reference)\n",
        load.split_whitespace().take(3).collect::<Vec<_>>().join(" ")
    );
    println!("| benchmark                                    |      rows |   ours ms |    ref ms |  ratio |   ours rows/s |    ref rows/s |");
    println!("|---|---|---|---|---|---|---|");
    for r in rows {
        println!("{r}");
    }
    if !verdict.is_empty() {
        println!("\n{}", verdict.trim());
    }
    Ok(())
}
