//! Cross-check matrix: every chunk index (v1 B-tree, single chunk, implicit,
//! fixed array incl. paged, extensible array, v2 B-tree) × filters {none,
//! gzip+shuffle, fletcher32, gzip+fletcher32, zstd} × {1-D, 3-D with partial edge chunks} ×
//! writers {libver earliest, latest, v200}, with chunks never written (fill).
//!
//! `tests/matrix/gen.py` writes the files with h5py / libhdf5 2.0 + hdf5plugin
//! at test time into a temp dir, together with the bytes h5py reads back for
//! each full dataset and for random hyperslabs (numpy slicing). It also checks
//! from the object header bytes which chunk index libhdf5 chose; the test
//! asserts that our layout decoding agrees, then compares `read_raw` and
//! `read_slice_raw` byte for byte, and typed reads (`read`, `read_slice`:
//! same type, byte-swapped, widened, narrowed) value for value.

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::message::{ChunkIndex, ChunkedLayout, Layout};
use h5fmt::File;
use std::path::{Path, PathBuf};
use std::process::Command;

/// (writer, chunk index, filter, rank).
type Key = (String, String, String, usize);

fn python() -> Option<PathBuf> {
    let mut cands = Vec::new();
    if let Some(v) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(v).join("bin").join("python"));
    }
    cands.push(PathBuf::from("/work/main/.venv/bin/python"));
    cands.into_iter().find(|p| p.exists())
}

fn index_name(ix: &ChunkIndex) -> &'static str {
    match ix {
        ChunkIndex::BTreeV1 { .. } => "btree1",
        ChunkIndex::SingleChunk { .. } => "single",
        ChunkIndex::Implicit { .. } => "implicit",
        ChunkIndex::FixedArray { .. } => "fixed",
        ChunkIndex::ExtensibleArray { .. } => "earray",
        ChunkIndex::BTreeV2 { .. } => "btree2",
    }
}

fn generate(out: &Path) -> bool {
    let Some(py) = python() else {
        println!("chunked_matrix: SKIPPED (no Python venv with h5py; set H5FMT_VENV)");
        return false;
    };
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/matrix/gen.py");
    let _ = std::fs::remove_dir_all(out);
    let st = Command::new(&py)
        .arg(script)
        .arg(out)
        .status()
        .expect("run gen.py");
    assert!(st.success(), "gen.py failed: {st}");
    true
}

/// Typed reads of the whole dataset (`sel` `None`) or a selection equal
/// h5py's bytes `raw` decoded here: the 1-D `<f8` datasets as `f64` (the
/// file's type, decoded straight into the result) and `f32`; the 3-D `>i4`
/// ones as `i32` (byte-swapped), `i64` and `f64` (widened).
fn check_typed(ds: &h5fmt::Dataset, raw: &[u8], sel: Option<&Selection>, what: &str) {
    fn typed<T: h5fmt::data::convert::H5Native + PartialEq + std::fmt::Debug>(
        ds: &h5fmt::Dataset,
        sel: Option<&Selection>,
        want: Vec<T>,
        what: &str,
    ) {
        let got = match sel {
            None => ds.read::<T>(),
            Some(s) => ds.read_slice::<T>(s),
        };
        let got = got.unwrap_or_else(|e| panic!("{what} {sel:?} as {}: {e}", T::NAME));
        assert!(
            got == want,
            "{what} {sel:?}: typed read as {} differs",
            T::NAME
        );
    }
    if ds.dtype().size() == 8 {
        let v: Vec<f64> = raw
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect();
        typed(ds, sel, v.iter().map(|&x| x as f32).collect(), what);
        typed(ds, sel, v, what);
    } else {
        let v: Vec<i32> = raw
            .chunks_exact(4)
            .map(|b| i32::from_be_bytes(b.try_into().unwrap()))
            .collect();
        typed(ds, sel, v.iter().map(|&x| i64::from(x)).collect(), what);
        typed(ds, sel, v.iter().map(|&x| f64::from(x)).collect(), what);
        typed(ds, sel, v, what);
    }
}

#[test]
fn chunked_matrix() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chunked_matrix");
    if !generate(&dir) {
        return;
    }
    let manifest: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let cases = manifest["cases"].as_array().unwrap();
    let mut files: std::collections::BTreeMap<String, File> = Default::default();
    let mut seen: std::collections::BTreeSet<Key> = Default::default();
    let (mut fulls, mut slabs) = (0, 0);
    for c in cases {
        let fname = c["file"].as_str().unwrap();
        let name = c["dataset"].as_str().unwrap();
        let what = format!("{fname}/{name}");
        let file = files
            .entry(fname.to_string())
            .or_insert_with(|| File::open(dir.join(fname)).unwrap());
        let ds = file.dataset(name).unwrap();
        let shape: Vec<u64> = c["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(ds.shape(), &shape[..], "{what}: shape");

        // The chunk index libhdf5 chose (checked from the bytes by gen.py).
        let want = c["index"].as_str().unwrap();
        match ds.layout() {
            Layout::Chunked(ChunkedLayout { index, .. }) => {
                assert_eq!(index_name(index), want, "{what}: chunk index")
            }
            other => panic!("{what}: not chunked: {other:?}"),
        }
        let filt = c["filter"].as_str().unwrap();
        let ids: Vec<u16> = ds.filters().filters.iter().map(|f| f.id).collect();
        let want_ids: &[u16] = match filt {
            "none" => &[],
            "gzip_shuffle" => &[2, 1],
            "fletcher32" => &[3],
            "gzip_fletcher32" => &[1, 3],
            "zstd" => &[32015],
            _ => panic!("{what}: filter {filt}"),
        };
        assert_eq!(ids, want_ids, "{what}: filter pipeline");
        seen.insert((
            c["writer"].as_str().unwrap().to_string(),
            want.to_string(),
            filt.to_string(),
            shape.len(),
        ));

        let full = std::fs::read(dir.join(c["full"].as_str().unwrap())).unwrap();
        let got = ds.read_raw().unwrap_or_else(|e| panic!("{what}: {e}"));
        assert!(got == full, "{what}: read_raw differs from h5py");
        check_typed(&ds, &full, None, &what);
        fulls += 1;

        for s in c["slabs"].as_array().unwrap() {
            let dims: Vec<SliceDim> = s["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    let v: Vec<u64> = d
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect();
                    SliceDim {
                        start: v[0],
                        stride: v[1],
                        count: v[2],
                        block: v[3],
                    }
                })
                .collect();
            let sel = Selection::Hyperslab(dims.clone());
            let want = std::fs::read(dir.join(s["bin"].as_str().unwrap())).unwrap();
            let got = ds
                .read_slice_raw(&sel)
                .unwrap_or_else(|e| panic!("{what} {dims:?}: {e}"));
            assert!(
                got == want,
                "{what}: read_slice_raw {dims:?} differs from numpy slicing"
            );
            check_typed(&ds, &want, Some(&sel), &what);
            slabs += 1;
        }
    }
    // Every writer × index × filter × rank combination that libhdf5 allows.
    let count = |f: &dyn Fn(&Key) -> bool| seen.iter().filter(|k| f(k)).count();
    assert_eq!(
        count(&|k| k.0 == "earliest"),
        5 * 2,
        "earliest: v1 B-tree only"
    );
    for w in ["latest", "v200"] {
        for (ix, n) in [
            ("single", 10),
            ("implicit", 2),
            ("fixed", 10),
            ("earray", 10),
            ("btree2", 5),
        ] {
            assert_eq!(count(&|k| k.0 == w && k.1 == ix), n, "{w} {ix}");
        }
    }
    let line = format!(
        "chunked_matrix: {} datasets ({} writer x index x filter x rank combinations), \
         {fulls} full reads, {slabs} hyperslabs match h5py\n",
        cases.len(),
        seen.len()
    );
    print!("{line}");
    let _ = std::fs::write(
        PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("chunked_matrix.summary"),
        line,
    );
}
