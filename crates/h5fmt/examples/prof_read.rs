//! Read-timing harness for `cargo xtask bench` (not a test).
//!
//! `bench_read FILE DATASET MODE REPS [WINDOWS]` reads the dataset once as a
//! warm-up and then `REPS` times, printing one line per timed read:
//! `seconds bytes cpu_seconds` (the process's user+system CPU time of that read,
//! all threads, where `/proc/self/stat` is readable; else `-`). MODE is `full` (`read_raw`), `windows` (each window of the
//! text file WINDOWS, one `r0 c0 h w` per line, with `read_slice`), or
//! `strings` (`read_values` of variable-length strings).

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::File;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: bench_read FILE DATASET full|windows|strings REPS [WINDOWS]");
        std::process::exit(2);
    }
    let reps: usize = args[3].parse().expect("REPS");
    let windows: Vec<Selection> = match args.get(4) {
        Some(p) => std::fs::read_to_string(p)
            .expect("windows file")
            .lines()
            .map(|l| {
                let v: Vec<u64> = l.split_whitespace().map(|x| x.parse().unwrap()).collect();
                Selection::Hyperslab(vec![
                    SliceDim {
                        start: v[0],
                        stride: 1,
                        count: v[2],
                        block: 1,
                    },
                    SliceDim {
                        start: v[1],
                        stride: 1,
                        count: v[3],
                        block: 1,
                    },
                ])
            })
            .collect(),
        None => Vec::new(),
    };
    let once = || -> usize {
        // Opening is part of the timed read, as in the h5py script.
        let f = File::open(&args[0]).expect("open");
        let ds = f.dataset(&args[1]).expect("dataset");
        match args[2].as_str() {
            "full" => ds.read_raw().expect("read").len(),
            "windows" => windows
                .iter()
                .map(|w| ds.read_slice(w).expect("read_slice").len())
                .sum(),
            "strings" => {
                let v = ds.read_values().expect("read_values");
                assert!(matches!(v.first(), Some(h5fmt::Value::Str(_))));
                v.len()
            }
            m => panic!("mode {m}"),
        }
    };
    once();
    h5fmt::read::chunks::PROF_CRIT.swap(0, std::sync::atomic::Ordering::Relaxed);
    h5fmt::read::chunks::PROF_SUM.swap(0, std::sync::atomic::Ordering::Relaxed);
    for _ in 0..reps {
        let (t, c) = (Instant::now(), cpu_seconds());
        let n = once();
        let wall = t.elapsed().as_secs_f64();
        match (c, cpu_seconds()) {
            (Some(a), Some(b)) => {
                use std::sync::atomic::Ordering::Relaxed;
                let crit = h5fmt::read::chunks::PROF_CRIT.swap(0, Relaxed) as f64 * 1e-9;
                let sum = h5fmt::read::chunks::PROF_SUM.swap(0, Relaxed) as f64 * 1e-9;
                let cpu = b - a;
                println!(
                    "{wall:.6} {n} cpu {cpu:.3} workers {sum:.3} main {:.3} crit-path {:.3}",
                    cpu - sum,
                    cpu - sum + crit
                )
            }
            _ => println!("{wall:.6} {n} -"),
        }
    }
}

/// User + system CPU time of this process (all threads) in seconds, from
/// `/proc/self/stat` (Linux; clock ticks of 1/100 s).
fn cpu_seconds() -> Option<f64> {
    let s = std::fs::read_to_string("/proc/self/stat").ok()?;
    let f: Vec<&str> = s.rsplit(')').next()?.split_whitespace().collect();
    let user: f64 = f.get(11)?.parse().ok()?;
    let sys: f64 = f.get(12)?.parse().ok()?;
    Some((user + sys) / 100.0)
}
