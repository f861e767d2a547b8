//! Files that claim more data than memory holds (two made by h5py and
//! patched by `testdata/hostile/make.py`, kept in `tests/data/`, and a valid
//! fill-only dataset of 2^40 doubles made by h5py at test time): reading them fails with an error
//! naming the dataset (`Limit` when the size is beyond the read limit), never
//! aborts. h5py is the oracle for each dataset's shape, element size and
//! fill value, and for libhdf5 refusing the patched ones too.

mod common;

use h5fmt::data::hyperslab::Selection;
use h5fmt::{ErrorKind, File, Limits};
use std::path::PathBuf;

/// The script writing a valid, never-written chunked dataset of 2^40
/// doubles with fill value 1.5 (a few KB on disk, 8 TiB read whole). Made
/// at test time rather than kept in `testdata/`: every file there is dumped
/// whole by `corpus_limits`, which streaming 2^40 values cannot do in time.
const FILL_ONLY_HUGE: &str = "import sys, h5py\n\
    with h5py.File(sys.argv[1], 'w', libver='earliest') as f:\n\
    \x20   f.create_dataset('huge', shape=(1 << 40,), dtype='f8', chunks=(1 << 16,), fillvalue=1.5)";

/// A file patched by `testdata/hostile/make.py`, kept beside this test
/// (`tests/data/`): `h5 check` does not flag these, so they are not in
/// `testdata/hostile/`, whose every file `tests/check.rs` wants reported.
fn patched(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

/// h5py's view of `path[name]`: number of elements, element size, and the
/// first element read (or the error libhdf5 gave reading it).
fn h5py_view(path: &std::path::Path, name: &str) -> Option<(u64, u64, String)> {
    let py = common::python()?;
    let out = common::run_py(
        &py,
        "import sys, h5py\n\
         d = h5py.File(sys.argv[1])[sys.argv[2]]\n\
         try:\n    x = d[0]\n    v = str(float(x)) if d.dtype.kind == 'f' else 'read'\n\
         except Exception as e:\n    v = 'error'\n\
         print(d.size, d.id.get_type().get_size(), v)",
        &[path.as_os_str(), name.as_ref()],
    );
    let mut it = out.split_whitespace();
    Some((
        it.next()?.parse().ok()?,
        it.next()?.parse().ok()?,
        it.collect::<Vec<_>>().join(" "),
    ))
}

#[test]
fn fill_only_dataset_beyond_the_read_limit_is_a_limit_error_naming_it() {
    let Some(py) = common::python() else {
        eprintln!("skipping: no python venv");
        return;
    };
    let path = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fill_only_2e40_doubles.h5");
    common::run_py(&py, FILL_ONLY_HUGE, &[path.as_os_str()]);
    let (count, size, first) = h5py_view(&path, "huge").expect("h5py's view of /huge");
    let total = count * size;
    let f = File::open(&path).unwrap();
    let ds = f.dataset("huge").unwrap();
    assert_eq!(ds.len(), count);
    assert!(
        total > Limits::default().max_read_bytes,
        "this machine holds {total} bytes?"
    );
    for e in [ds.read_raw().unwrap_err(), ds.read::<f64>().unwrap_err()] {
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        let text = e.to_string();
        assert!(text.contains("huge"), "{text}");
        assert!(text.contains(&total.to_string()), "{text}");
    }
    // A small slice reads: the fill value, as h5py reads it.
    let v = ds
        .read_slice::<f64>(&Selection::parse("0:4", ds.shape()).unwrap())
        .unwrap();
    let want: f64 = first.parse().unwrap();
    assert_eq!(v, [want; 4]);
    // A slice beyond a lowered limit is refused before allocating.
    let small = Limits {
        max_read_bytes: 1 << 20,
        ..Limits::default()
    };
    let f = File::open_with_limits(&path, small).unwrap();
    let ds = f.dataset("huge").unwrap();
    let e = ds
        .read_slice::<f64>(&Selection::parse("0:200000", ds.shape()).unwrap())
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.to_string().contains("1600000"), "{e}");
}

/// `name` in the hostile file `file`: libhdf5 (h5py) cannot read its first
/// element, and each of our reads `reads` gives an error naming it, of a
/// kind that says why (never an abort).
fn refused(file: &str, name: &str, reads: &dyn Fn(&h5fmt::Dataset) -> Vec<h5fmt::Error>) {
    let path = patched(file);
    if let Some((_, _, first)) = h5py_view(&path, name) {
        assert_eq!(first, "error", "libhdf5 reads it: {first}");
    }
    let f = File::open(&path).unwrap();
    for e in reads(&f.dataset(name).unwrap()) {
        assert!(
            matches!(
                e.kind(),
                ErrorKind::Limit | ErrorKind::Corrupt | ErrorKind::Truncated
            ),
            "{e}"
        );
        assert!(e.to_string().contains(name), "{e}");
    }
}

#[test]
fn vlen_element_claiming_32_gib_is_an_error_not_an_abort() {
    refused("vlen_length_2e32.h5", "seq", &|ds| {
        vec![ds.read_values().unwrap_err()]
    });
}

#[test]
fn global_heap_object_claiming_2e40_bytes_is_an_error_not_an_abort() {
    refused("global_heap_object_2e40_bytes.h5", "str", &|ds| {
        let all = Selection::parse(":", ds.shape()).unwrap();
        vec![
            ds.read_values().unwrap_err(),
            ds.read_vlen_strings(&all).unwrap_err(),
        ]
    });
}
