//! `examples/slice_copy.rs` (read, slice, write, read back) run on files
//! written by h5py, its output checked with h5py: the dataset h5py reads from
//! our file has numpy's shape and the values of numpy's slice of the input,
//! and so does what the example read back.

mod common;
#[allow(dead_code)]
#[path = "../examples/slice_copy.rs"]
mod slice_copy;

use common::{python, run_py, tmp};

const WRITE: &str = r#"
import sys, h5py, numpy as np
rng = np.random.default_rng(7)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("ints", data=rng.integers(-1000, 1000, (50, 40)).astype(">i4"),
                     chunks=(16, 16), compression="gzip", shuffle=True)
    f.create_dataset("g/floats", data=rng.random((30, 20, 6), dtype=np.float32))
"#;

/// numpy's slice of the input and h5py's read of our output, flattened.
const CHECK: &str = r#"
import sys, json, h5py, numpy as np
src, name, spec, out = sys.argv[1:]
def index(p):
    if ":" not in p:
        return slice(int(p), int(p) + 1)
    return slice(*[int(x) if x else None for x in p.split(":")])
with h5py.File(src, "r") as f:
    want = f[name][tuple(index(p) for p in spec.split(","))].astype("<f8")
with h5py.File(out, "r") as f:
    got = f["slice"]
    assert got.dtype == np.dtype("<f8"), got.dtype
    assert got.shape == want.shape, (got.shape, want.shape)
    assert (got[...] == want).all()
print(json.dumps(want.ravel().tolist()))
"#;

#[test]
fn slice_copy_matches_h5py() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let input = tmp("example_slice_copy", "in.h5");
    run_py(&py, WRITE, &[&input]);
    for (name, spec) in [
        ("ints", "5:45:3,::7"),
        ("ints", "7,10:30"),
        ("g/floats", "::4,3:4,1:6:2"),
        ("/g/floats", "29,19,5"),
    ] {
        let output = tmp("example_slice_copy", "out.h5");
        let back = slice_copy::slice_copy(
            input.to_str().unwrap(),
            name,
            spec,
            output.to_str().unwrap(),
        )
        .unwrap();
        let want: Vec<f64> = serde_json::from_str(
            run_py(
                &py,
                CHECK,
                &[
                    input.to_str().unwrap(),
                    name,
                    spec,
                    output.to_str().unwrap(),
                ],
            )
            .trim(),
        )
        .unwrap();
        assert!(!want.is_empty());
        assert_eq!(back, want, "{name}[{spec}]");
    }
    let _ = std::fs::remove_dir_all(input.parent().unwrap());
}
