//! Read-timing harness for `cargo xtask bench` (not a test).
//!
//! `bench_read FILE DATASET MODE REPS [WINDOWS]` reads the dataset once as a
//! warm-up and then `REPS` times (`-`: once per line of stdin, see
//! `common::timed_runs`), printing one line per timed read: `seconds bytes
//! cpu_seconds` (the process's user + system CPU time of that read, all
//! threads). MODE is `full` (`read::<T>`, `T` the dataset's float type),
//! `windows` (each window of the text file WINDOWS, one `r0 c0 h w` per
//! line, with `read_slice::<T>`), or `strings` (`read_records::<String>`
//! of variable-length strings); with `-raw` appended, the untyped read of
//! the same: `read_raw`, `read_slice_raw`, or `read_vlen_strings` (one buffer
//! of string bytes plus offsets).

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::File;

mod common;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        eprintln!("usage: bench_read FILE DATASET full|windows|strings[-raw] REPS [WINDOWS]");
        std::process::exit(2);
    }
    let reps = args[3].as_str();
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
        // The dataset's float type: f32 for 4-byte floats, else f64.
        let f32s = ds.dtype().size() == 4;
        match args[2].as_str() {
            "full" if f32s => ds.read::<f32>().expect("read").len() * 4,
            "full" => ds.read::<f64>().expect("read").len() * 8,
            "full-raw" => ds.read_raw().expect("read").len(),
            "windows" => windows
                .iter()
                .map(|w| {
                    if f32s {
                        ds.read_slice::<f32>(w).expect("read_slice").len() * 4
                    } else {
                        ds.read_slice::<f64>(w).expect("read_slice").len() * 8
                    }
                })
                .sum(),
            "windows-raw" => windows
                .iter()
                .map(|w| ds.read_slice_raw(w).expect("read_slice_raw").len())
                .sum(),
            "strings" => {
                let v = ds.read_records::<String>().expect("read_records");
                assert!(!v.is_empty());
                v.len()
            }
            "strings-raw" => {
                let v = ds
                    .read_vlen_strings(&Selection::all(ds.shape()))
                    .expect("read_vlen_strings");
                v.len()
            }
            m => panic!("mode {m}"),
        }
    };
    common::timed_runs(reps, || once() as u64);
}
