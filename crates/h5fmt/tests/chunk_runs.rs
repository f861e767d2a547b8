//! Runs of a filtered rank-1 dataset that cover one whole chunk (a
//! query scan's batch, decoded straight into the output) against h5py
//! (libhdf5) as the oracle: h5py writes gzip, shuffle+gzip and fletcher32
//! datasets, one with unwritten chunks (the fill value), and the bytes it
//! reads back; every run read here — one chunk exactly, one chunk with
//! its unwritten neighbours, the partial edge chunk, a chunk from the
//! chunk cache — must equal h5py's bytes for those rows; so must single
//! elements of zstd and gzip chunks (binary-search probes).

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
        // A chunk already in the cache (a one-row read of it, the second,
        // put it there).
        for _ in 0..2 {
            let one = ds.read_slice_raw(&run(3100, 3101)).unwrap();
            assert_eq!(one, want[(3100 * es) as usize..(3101 * es) as usize]);
        }
        assert!(
            ds.chunk_cache().stats().entries > 0,
            "{name}: nothing cached"
        );
        let got = ds.read_slice_raw(&run(3000, 4000)).unwrap();
        assert!(
            got == want[(3000 * es) as usize..(4000 * es) as usize],
            "{name} cached chunk"
        );
    }
}

const PROBE_PY: &str = r#"
import sys, h5py, hdf5plugin, numpy as np
rng = np.random.default_rng(5)
n, c = 300_000, 100_000
a = (rng.random(n) * 1000).astype("<f4")
b = rng.integers(0, 2**62, n).astype("<i8")
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("zf", data=a, chunks=(c,), **hdf5plugin.Zstd(clevel=3))
    f.create_dataset("zi", data=b, chunks=(c,), **hdf5plugin.Zstd(clevel=1))
    f.create_dataset("gz", data=b, chunks=(c,), compression="gzip")
with h5py.File(sys.argv[1], "r") as f:
    for k in ("zf", "zi", "gz"):
        open(sys.argv[1] + "." + k, "wb").write(f[k][...].tobytes())
"#;

/// Single-element reads (a binary search's probes) of zstd and gzip
/// chunks of several compressed blocks, against h5py (libhdf5 with
/// hdf5plugin) as the oracle: the first read of a chunk decodes only up to
/// the element and keeps nothing, the second keeps the chunk in the cache,
/// later ones are served from it; every element equals h5py's.
#[test]
fn single_element_probes_equal_h5py() {
    let Some(py) = python() else {
        eprintln!("skipped: no Python venv with h5py");
        return;
    };
    let path = common::tmp("chunk_runs", "probes.h5");
    run_py(&py, PROBE_PY, &[&path]);
    let f = File::open(&path).unwrap();
    for (name, es) in [("zf", 4u64), ("zi", 8), ("gz", 8)] {
        let want = std::fs::read(format!("{}.{name}", path.display())).unwrap();
        let ds = f.dataset(name).unwrap();
        let n = ds.shape()[0];
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rows: Vec<u64> = vec![0, 1, 99_999, 100_000, 199_999, n - 1];
        rows.extend((0..60).map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x % n
        }));
        for (i, &r) in rows.iter().enumerate() {
            let got = ds.read_slice_raw(&run(r, r + 1)).unwrap();
            let w = &want[(r * es) as usize..((r + 1) * es) as usize];
            assert_eq!(got, w, "{name} row {r} (read {i})");
            if i == 0 {
                // A first probe of a chunk keeps nothing.
                assert_eq!(ds.chunk_cache().stats().entries, 0, "{name}");
            }
        }
        // Three chunks, each probed again: cached.
        assert_eq!(ds.chunk_cache().stats().entries, 3, "{name}");
    }
}
