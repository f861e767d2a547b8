//! Runs of a filtered rank-1 dataset that cover one whole chunk (a
//! query scan's batch, decoded straight into the output) against h5py
//! (libhdf5) as the oracle: h5py writes gzip, shuffle+gzip and fletcher32
//! datasets, one with unwritten chunks (the fill value), and the bytes it
//! reads back; every run read here — one chunk exactly, one chunk with
//! its unwritten neighbours, the partial edge chunk, a chunk from the
//! chunk cache — must equal h5py's bytes for those rows.

mod common;
use common::{python, run_py};
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::File;

const WRITE_PY: &str = r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(3)
n, c = 5500, 1000
a = rng.integers(-2**40, 2**40, n).astype("<i8")
b = (rng.random(n) * 100).astype("<f4")
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("gz", data=a, chunks=(c,), compression="gzip")
    f.create_dataset("sh", data=b, chunks=(c,), compression="gzip", shuffle=True, fletcher32=True)
    s = f.create_dataset("sparse", shape=(n,), dtype="<i8", chunks=(c,), compression="gzip", fillvalue=-7)
    s[2000:3000] = a[2000:3000]
    s[5000:] = a[5000:]
with h5py.File(sys.argv[1], "r") as f:
    for k in ("gz", "sh", "sparse"):
        open(sys.argv[1] + "." + k, "wb").write(f[k][...].tobytes())
"#;

fn run(start: u64, end: u64) -> Selection {
    Selection::Hyperslab(vec![SliceDim {
        start,
        stride: 1,
        count: end - start,
        block: 1,
    }])
}

#[test]
fn whole_chunk_runs_equal_h5py() {
    let Some(py) = python() else {
        eprintln!("skipped: no Python venv with h5py");
        return;
    };
    let path = common::tmp("chunk_runs", "runs.h5");
    run_py(&py, WRITE_PY, &[&path]);
    let f = File::open(&path).unwrap();
    for (name, es) in [("gz", 8u64), ("sh", 4), ("sparse", 8)] {
        let want = std::fs::read(format!("{}.{name}", path.display())).unwrap();
        let ds = f.dataset(name).unwrap();
        let n = ds.shape()[0];
        let mut runs: Vec<(u64, u64)> = (0..6)
            .map(|c| (c * 1000, ((c + 1) * 1000).min(n)))
            .collect();
        // A chunk with unwritten neighbours, and two chunks.
        runs.extend([(1000, 4000), (1500, 3000), (0, 2000), (0, n)]);
        for (a, b) in runs {
            let got = ds.read_slice_raw(&run(a, b)).unwrap();
            let w = &want[(a * es) as usize..(b * es) as usize];
            assert!(got == w, "{name} rows {a}..{b} differ from h5py");
            // Into a caller's buffer, as a scan reads its batches.
            let mut buf = vec![0xA5u8; w.len()];
            ds.read_slice_into_raw(&run(a, b), &mut buf).unwrap();
            assert!(
                buf == w,
                "{name} rows {a}..{b} (into a buffer) differ from h5py"
            );
        }
        // A chunk already in the cache (a one-row read put it there).
        let one = ds.read_slice_raw(&run(3100, 3101)).unwrap();
        assert_eq!(one, want[(3100 * es) as usize..(3101 * es) as usize]);
        let got = ds.read_slice_raw(&run(3000, 4000)).unwrap();
        assert!(
            got == want[(3000 * es) as usize..(4000 * es) as usize],
            "{name} cached chunk"
        );
    }
}
