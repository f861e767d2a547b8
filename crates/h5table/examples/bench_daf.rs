//! Daf H5DF read benchmark: ours vs h5py/numpy in the same run.
//!
//! usage: bench_daf DIR [N] [REPS]
//!
//! Writes `DIR/bench.h5df` (an axis of N cells, default 4,000,000; a dense
//! f32 vector; a sparse f64 vector with one value in ten) with
//! [`h5table::daf::DafWriter`], then times, after one warm-up, the median of
//! REPS (default 7) runs of, each time from a fresh open of the file:
//!
//! * `dense_slice`: `DafReader::vector_slice::<f32>` (zero-copy from the map)
//!   and a sum over it, vs numpy's `np.memmap` at the dataset's offset
//!   (h5py's `get_offset`) and the same sum;
//! * `dense_copy`: `DafReader::vector_dense` (a copy) vs h5py's `d[()]`;
//! * `sparse`: `DafReader::vector` (nzind + nzval, checked) vs h5py reading
//!   `nzind` and `nzval`.
//!
//! Prints one line per case: our median, h5py's, and h5py / ours.

use h5table::daf::{DafArray, DafReader, DafVector, DafWriter};
use std::process::Command;
use std::time::Instant;

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn time<R>(reps: usize, mut f: impl FnMut() -> R) -> f64 {
    std::hint::black_box(f());
    median(
        (0..reps)
            .map(|_| {
                let t = Instant::now();
                std::hint::black_box(f());
                t.elapsed().as_secs_f64()
            })
            .collect(),
    )
}

const PY: &str = r#"
import sys, time, h5py, numpy as np
path, reps = sys.argv[1], int(sys.argv[2])
def med(f):
    f()
    ts = []
    for _ in range(reps):
        t = time.perf_counter(); f(); ts.append(time.perf_counter() - t)
    return sorted(ts)[len(ts) // 2]
def dense_slice():
    with h5py.File(path, 'r') as f:
        d = f['vectors/cell/x']
        m = np.memmap(path, dtype='<f4', mode='r', offset=d.id.get_offset(), shape=d.shape)
        return float(m.sum(dtype=np.float64))
def dense_copy():
    with h5py.File(path, 'r') as f:
        return f['vectors/cell/x'][()]
def sparse():
    with h5py.File(path, 'r') as f:
        g = f['vectors/cell/s']
        return g['nzind'][()], g['nzval'][()]
for name, f in [('dense_slice', dense_slice), ('dense_copy', dense_copy), ('sparse', sparse)]:
    print(name, med(f))
"#;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let dir = std::path::PathBuf::from(args.get(1).expect("usage: bench_daf DIR [N] [REPS]"));
    let n: usize = args.get(2).map_or(4_000_000, |s| s.parse().unwrap());
    let reps: usize = args.get(3).map_or(7, |s| s.parse().unwrap());
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bench.h5df");
    {
        let names: Vec<String> = (0..n).map(|i| format!("c{i}")).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let x: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.5).collect();
        let nzind: Vec<u64> = (0..n as u64).step_by(10).collect();
        let nzval: Vec<f64> = nzind.iter().map(|&i| i as f64 + 0.25).collect();
        let mut fw = h5fmt::FileWriter::create(&path).unwrap();
        let mut daf = DafWriter::create(&mut fw, "/").unwrap();
        daf.add_axis("cell", &refs).unwrap();
        daf.set_vector("cell", "x", &DafVector::Dense(DafArray::F32(x)))
            .unwrap();
        daf.set_vector(
            "cell",
            "s",
            &DafVector::Sparse {
                len: n as u64,
                nzind,
                nzval: DafArray::F64(nzval),
            },
        )
        .unwrap();
        drop(daf);
        fw.close().unwrap();
    }
    let ours = [
        (
            "dense_slice",
            time(reps, || {
                let file = h5fmt::File::open(&path).unwrap();
                let daf = DafReader::open(&file, "/").unwrap();
                let x = daf.vector_slice::<f32>("cell", "x").unwrap();
                assert!(matches!(x, std::borrow::Cow::Borrowed(_)));
                x.iter().map(|&v| f64::from(v)).sum::<f64>()
            }),
        ),
        (
            "dense_copy",
            time(reps, || {
                let file = h5fmt::File::open(&path).unwrap();
                let daf = DafReader::open(&file, "/").unwrap();
                daf.vector_dense("cell", "x").unwrap().len()
            }),
        ),
        (
            "sparse",
            time(reps, || {
                let file = h5fmt::File::open(&path).unwrap();
                let daf = DafReader::open(&file, "/").unwrap();
                match daf.vector("cell", "s").unwrap() {
                    DafVector::Sparse { nzind, .. } => nzind.len(),
                    DafVector::Dense(_) => unreachable!(),
                }
            }),
        ),
    ];
    let py =
        std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into()) + "/bin/python";
    let out = Command::new(py)
        .arg("-c")
        .arg(PY)
        .arg(&path)
        .arg(reps.to_string())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = String::from_utf8(out.stdout).unwrap();
    println!("n = {n}, reps = {reps} (medians after a warm-up)");
    for ((name, ours), line) in ours.iter().zip(theirs.lines()) {
        let h: f64 = line.split(' ').nth(1).unwrap().parse().unwrap();
        println!(
            "{name:12} ours {:9.3} ms  h5py/numpy {:9.3} ms  h5py/ours {:6.2}",
            ours * 1e3,
            h * 1e3,
            h / ours
        );
    }
    std::fs::remove_file(&path).unwrap();
}
