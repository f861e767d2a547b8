//! Daf H5DF data sets against h5py/numpy (`tests/daf_oracle.py`).
//!
//! The data set is described once, densely, in `tests/daf_spec.json`; the
//! Rust side builds its sparse forms for the writer, the Python side
//! computes the expected on-disk layout (1-based indices, CSC arrays,
//! column-major order) from the same dense values on its own.
//!
//! * Files we write are walked by h5py item by item (`check`), then read
//!   back by our reader, memory-mapped, with zero-copy slices.
//! * Files h5py writes following the text (`write`) are read by our reader
//!   with values equal to the spec.
//! * One file per defect (`bad`) is an error naming the object, never a
//!   panic.

mod common;

use h5table::daf::{
    DafArray, DafEditor, DafMatrix, DafReader, DafScalar, DafType, DafVector, DafWriter,
};
use serde_json::Value as J;
use std::borrow::Cow;
use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/daf_oracle.py")
}

fn spec_path() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/daf_spec.json")
}

fn spec() -> J {
    serde_json::from_str(&std::fs::read_to_string(spec_path()).unwrap()).unwrap()
}

fn oracle(args: &[&str]) -> String {
    let out = Command::new(common::python())
        .arg(script())
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "daf_oracle.py {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn array(t: &str, v: &[J]) -> DafArray {
    fn map<T>(v: &[J], f: impl Fn(&J) -> Option<T>) -> Vec<T> {
        v.iter().map(|x| f(x).unwrap()).collect()
    }
    match t {
        "bool" => DafArray::Bool(map(v, J::as_bool)),
        "i8" => DafArray::I8(map(v, |x| x.as_i64().map(|x| x as i8))),
        "i16" => DafArray::I16(map(v, |x| x.as_i64().map(|x| x as i16))),
        "i32" => DafArray::I32(map(v, |x| x.as_i64().map(|x| x as i32))),
        "i64" => DafArray::I64(map(v, J::as_i64)),
        "u8" => DafArray::U8(map(v, |x| x.as_u64().map(|x| x as u8))),
        "u16" => DafArray::U16(map(v, |x| x.as_u64().map(|x| x as u16))),
        "u32" => DafArray::U32(map(v, |x| x.as_u64().map(|x| x as u32))),
        "u64" => DafArray::U64(map(v, J::as_u64)),
        "f32" => DafArray::F32(map(v, |x| x.as_f64().map(|x| x as f32))),
        "f64" => DafArray::F64(map(v, J::as_f64)),
        "str" => DafArray::Str(map(v, |x| x.as_str().map(String::from))),
        _ => panic!("type {t}"),
    }
}

fn scalar(t: &str, v: &J) -> DafScalar {
    match array(t, std::slice::from_ref(v)) {
        DafArray::Bool(v) => DafScalar::Bool(v[0]),
        DafArray::I8(v) => DafScalar::I8(v[0]),
        DafArray::I16(v) => DafScalar::I16(v[0]),
        DafArray::I32(v) => DafScalar::I32(v[0]),
        DafArray::I64(v) => DafScalar::I64(v[0]),
        DafArray::U8(v) => DafScalar::U8(v[0]),
        DafArray::U16(v) => DafScalar::U16(v[0]),
        DafArray::U32(v) => DafScalar::U32(v[0]),
        DafArray::U64(v) => DafScalar::U64(v[0]),
        DafArray::F32(v) => DafScalar::F32(v[0]),
        DafArray::F64(v) => DafScalar::F64(v[0]),
        DafArray::Str(v) => DafScalar::Str(v[0].clone()),
    }
}

fn is_zero(x: &J) -> bool {
    match x {
        J::Bool(b) => !b,
        J::String(s) => s.is_empty(),
        J::Number(n) => n.as_f64() == Some(0.0),
        _ => panic!("{x}"),
    }
}

fn obj(j: &J) -> Vec<(&String, &J)> {
    j.as_object()
        .map(|m| m.iter().collect())
        .unwrap_or_default()
}

/// Matrix `rows` (row lists) → column-major values.
fn col_major(rows: &[J], nrows: usize, ncols: usize) -> Vec<J> {
    assert_eq!(rows.len(), nrows);
    (0..ncols)
        .flat_map(|c| {
            rows.iter()
                .map(move |row| row.as_array().unwrap()[c].clone())
        })
        .collect()
}

/// The vector property of spec entry `p`, sparse when it says so.
fn vector_of(p: &J) -> DafVector {
    let t = p["type"].as_str().unwrap();
    let dense = p["values"].as_array().unwrap();
    if p["sparse"] != J::Bool(true) {
        return DafVector::Dense(array(t, dense));
    }
    let nz: Vec<usize> = (0..dense.len()).filter(|&i| !is_zero(&dense[i])).collect();
    DafVector::Sparse {
        len: dense.len() as u64,
        nzind: nz.iter().map(|&i| i as u64).collect(),
        nzval: array(t, &nz.iter().map(|&i| dense[i].clone()).collect::<Vec<_>>()),
    }
}

/// The matrix property of spec entry `p`, CSC when it says sparse.
fn matrix_of(p: &J) -> DafMatrix {
    let t = p["type"].as_str().unwrap();
    let rows = p["rows"].as_array().unwrap();
    let nrows = rows.len();
    let ncols = rows[0].as_array().unwrap().len();
    if p["sparse"] != J::Bool(true) {
        return DafMatrix::Dense {
            nrows: nrows as u64,
            ncols: ncols as u64,
            values: array(t, &col_major(rows, nrows, ncols)),
        };
    }
    let (mut colptr, mut rowval, mut vals) = (vec![0u64], vec![], vec![]);
    for c in 0..ncols {
        for (r, row) in rows.iter().enumerate() {
            let x = &row.as_array().unwrap()[c];
            if !is_zero(x) {
                rowval.push(r as u64);
                vals.push(x.clone());
            }
        }
        colptr.push(rowval.len() as u64);
    }
    DafMatrix::Csc {
        nrows: nrows as u64,
        ncols: ncols as u64,
        colptr,
        rowval,
        nzval: array(t, &vals),
    }
}

/// Write spec `s` with our writer into group `group` of a new file.
fn write_ours(path: &Path, group: &str, s: &J) {
    let mut fw = h5fmt::FileWriter::create(path).unwrap();
    {
        let mut daf = DafWriter::create(&mut fw, group).unwrap();
        for (name, sc) in obj(&s["scalars"]) {
            daf.set_scalar(name, &scalar(sc["type"].as_str().unwrap(), &sc["value"]))
                .unwrap();
        }
        for (name, entries) in obj(&s["axes"]) {
            let e: Vec<&str> = entries
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_str().unwrap())
                .collect();
            daf.add_axis(name, &e).unwrap();
        }
        for (axis, props) in obj(&s["vectors"]) {
            for (name, p) in obj(props) {
                daf.set_vector(axis, name, &vector_of(p)).unwrap();
            }
        }
        for (ra, by) in obj(&s["matrices"]) {
            for (ca, props) in obj(by) {
                for (name, p) in obj(props) {
                    daf.set_matrix(ra, ca, name, &matrix_of(p)).unwrap();
                }
            }
        }
    }
    fw.close().unwrap();
}

/// Check a lent slice's values; count it borrowed or copied.
fn lent<T: Clone + PartialEq + std::fmt::Debug>(
    got: Cow<'_, [T]>,
    want: &[T],
    tally: &mut (usize, Vec<String>),
    name: &str,
) {
    assert_eq!(&*got, want, "{name}");
    match got {
        Cow::Borrowed(_) => tally.0 += 1,
        Cow::Owned(_) => tally.1.push(name.to_string()),
    }
}

/// Our reader on `path`/`group` gives the spec's values, the stored kind
/// (dense or sparse) as the spec says; numeric dense properties are lent
/// without a copy when `zero_copy`.
fn compare_with_spec(path: &Path, group: &str, zero_copy: bool) {
    let s = spec();
    let file = h5fmt::File::open(path).unwrap();
    let daf = DafReader::open(&file, group).unwrap();
    assert_eq!(daf.version(), (1, 0));
    let mut names: Vec<String> = obj(&s["scalars"])
        .iter()
        .map(|(k, _)| (*k).clone())
        .collect();
    names.sort();
    assert_eq!(daf.scalar_names().unwrap(), names);
    for (name, sc) in obj(&s["scalars"]) {
        let want = scalar(sc["type"].as_str().unwrap(), &sc["value"]);
        assert_eq!(daf.scalar(name).unwrap(), want, "scalar {name}");
    }
    for (name, entries) in obj(&s["axes"]) {
        let want: Vec<String> = entries
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_str().unwrap().to_string())
            .collect();
        assert_eq!(daf.axis(name).unwrap(), want, "axis {name}");
        assert_eq!(daf.axis_len(name).unwrap(), want.len() as u64);
    }
    let mut tally = (0, Vec::new());
    for (axis, props) in obj(&s["vectors"]) {
        let mut names: Vec<String> = obj(props).iter().map(|(k, _)| (*k).clone()).collect();
        names.sort();
        assert_eq!(daf.vector_names(axis).unwrap(), names);
        for (name, p) in obj(props) {
            let t = p["type"].as_str().unwrap();
            let want = array(t, p["values"].as_array().unwrap());
            let v = daf.vector(axis, name).unwrap();
            let sparse = p["sparse"] == J::Bool(true);
            assert_eq!(
                matches!(v, DafVector::Sparse { .. }),
                sparse,
                "{axis}/{name} kind"
            );
            assert_eq!(v.to_dense().unwrap(), want, "vector {axis}/{name}");
            assert_eq!(daf.vector_dense(axis, name).unwrap(), want);
            if let (false, DafArray::F32(w)) = (sparse, &want) {
                lent(
                    daf.vector_slice::<f32>(axis, name).unwrap(),
                    w,
                    &mut tally,
                    name,
                );
                // The wrong type is a usage error, not a conversion.
                assert!(daf.vector_slice::<f64>(axis, name).is_err());
            }
            if let (false, DafArray::U64(w)) = (sparse, &want) {
                lent(
                    daf.vector_slice::<u64>(axis, name).unwrap(),
                    w,
                    &mut tally,
                    name,
                );
            }
            if sparse && t != "str" && t != "bool" {
                assert!(daf.vector_slice::<i32>(axis, name).is_err());
            }
        }
    }
    for (ra, by) in obj(&s["matrices"]) {
        for (ca, props) in obj(by) {
            for (name, p) in obj(props) {
                let t = p["type"].as_str().unwrap();
                let rows = p["rows"].as_array().unwrap();
                let (nrows, ncols) = (rows.len(), rows[0].as_array().unwrap().len());
                let want = array(t, &col_major(rows, nrows, ncols));
                let m = daf.matrix(ra, ca, name).unwrap();
                let sparse = p["sparse"] == J::Bool(true);
                assert_eq!(
                    matches!(m, DafMatrix::Csc { .. }),
                    sparse,
                    "{ra}/{ca}/{name} kind"
                );
                assert_eq!(m.to_dense().unwrap(), want, "matrix {ra}/{ca}/{name}");
                if let (false, DafArray::F32(w)) = (sparse, &want) {
                    lent(
                        daf.matrix_slice::<f32>(ra, ca, name).unwrap(),
                        w,
                        &mut tally,
                        name,
                    );
                }
                if let (false, DafArray::I64(w)) = (sparse, &want) {
                    lent(
                        daf.matrix_slice::<i64>(ra, ca, name).unwrap(),
                        w,
                        &mut tally,
                        name,
                    );
                }
            }
        }
    }
    if zero_copy {
        assert_eq!(
            tally,
            (4, Vec::<String>::new()),
            "f32/u64 vectors and f32/i64 matrices lent from the map"
        );
    }
    assert_eq!(
        daf.vector("cell", "i8").unwrap().dtype(),
        DafType::I8,
        "types are kept"
    );
}

/// h5py walks the data set at `group` of `path` against the whole spec
/// (layout, types, alignment, values), and our reader reads it as the spec.
fn walked_and_read_as_spec(path: &Path, group: &str) {
    let out = oracle(&[
        "check",
        spec_path().to_str().unwrap(),
        path.to_str().unwrap(),
        group,
    ]);
    assert_eq!(out.trim(), "ok");
    compare_with_spec(path, group, true);
}

#[test]
fn ours_walked_by_h5py_and_read_back() {
    for (file, group) in [("daf_root.h5df", "/"), ("daf_nested.h5dfs", "/sets/first")] {
        let path = common::tmp(file);
        write_ours(&path, group, &spec());
        walked_and_read_as_spec(&path, group);
        std::fs::remove_file(&path).unwrap();
    }
}

/// Properties added by the editor to a file our writer made without them:
/// the file then holds the whole spec, walked by h5py as in
/// `ours_walked_by_h5py_and_read_back` (alignment included).
#[test]
fn editor_adds_properties() {
    let full = spec();
    let added_vectors = ["f32", "u64", "sparse_i32", "sparse_f32_empty", "is_doublet"];
    let added_matrices = [
        ("cell", "gene", "dense_f32"),
        ("cell", "gene", "UMIs"),
        ("gene", "gene", "corr"),
    ];
    let mut partial = full.clone();
    for v in added_vectors {
        partial["vectors"]["cell"]
            .as_object_mut()
            .unwrap()
            .remove(v)
            .unwrap();
    }
    for (r, c, m) in added_matrices {
        partial["matrices"][r][c]
            .as_object_mut()
            .unwrap()
            .remove(m)
            .unwrap();
    }
    let path = common::tmp("daf_edited.h5dfs");
    let group = "/edited";
    write_ours(&path, group, &partial);
    let mut editor = h5fmt::FileEditor::open(&path).unwrap();
    {
        let mut daf = DafEditor::open(&mut editor, group).unwrap();
        for v in added_vectors {
            daf.set_vector("cell", v, &vector_of(&full["vectors"]["cell"][v]))
                .unwrap();
        }
        for (r, c, m) in added_matrices {
            daf.set_matrix(r, c, m, &matrix_of(&full["matrices"][r][c][m]))
                .unwrap();
        }
        let err = daf
            .set_vector(
                "cell",
                "text",
                &vector_of(&full["vectors"]["cell"]["batch"]),
            )
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("string properties are not written by the editor"),
            "{err}"
        );
        assert!(daf
            .set_vector("nope", "x", &vector_of(&full["vectors"]["cell"]["f32"]))
            .is_err());
    }
    editor.close().unwrap();
    walked_and_read_as_spec(&path, group);
    std::fs::remove_file(&path).unwrap();
}

#[test]
fn h5py_written_read_by_us() {
    let path = common::tmp("daf_h5py.h5dfs");
    oracle(&[
        "write",
        spec_path().to_str().unwrap(),
        path.to_str().unwrap(),
        "/by_h5py",
    ]);
    compare_with_spec(&path, "/by_h5py", true);
    std::fs::remove_file(&path).unwrap();
}

/// Read everything the data set holds; the first error.
fn read_all(file: &h5fmt::File, group: &str) -> h5table::Result<()> {
    let daf = DafReader::open(file, group)?;
    for s in daf.scalar_names()? {
        daf.scalar(&s)?;
    }
    let axes = daf.axis_names()?;
    for a in &axes {
        daf.axis(a)?;
        for v in daf.vector_names(a)? {
            daf.vector(a, &v)?.into_dense()?;
        }
    }
    for r in &axes {
        for c in &axes {
            for m in daf.matrix_names(r, c)? {
                daf.matrix(r, c, &m)?.into_dense()?;
            }
        }
    }
    Ok(())
}

#[test]
fn bad_files_are_errors_naming_the_object() {
    let dir = common::tmp("daf_bad");
    std::fs::create_dir_all(&dir).unwrap();
    let listed = oracle(&["bad", dir.to_str().unwrap()]);
    let m = "/ds/matrices/cell/gene/m";
    let v = "/ds/vectors/cell/v";
    let expect: &[(&str, String, &str)] = &[
        (
            "colptr_out_of_range",
            format!("{m}/colptr"),
            "colptr ends at 9",
        ),
        ("colptr_not_monotone", format!("{m}/colptr"), "not monotone"),
        (
            "colptr_not_from_1",
            format!("{m}/colptr"),
            "colptr[0] is 0, not 1",
        ),
        (
            "colptr_short",
            format!("{m}/colptr"),
            "colptr has 2 entries",
        ),
        ("colptr_negative", format!("{m}/colptr"), "non-negative"),
        (
            "rowval_too_big",
            format!("{m}/rowval"),
            "rowval[1] = 4 is outside",
        ),
        (
            "rowval_zero",
            format!("{m}/rowval"),
            "rowval[0] = 0 is outside",
        ),
        (
            "nzval_short",
            format!("{m}/nzval"),
            "2 values for the 3 entries",
        ),
        (
            "nzind_out_of_range",
            format!("{v}/nzind"),
            "nzind[0] = 4 is outside",
        ),
        (
            "nzind_zero",
            format!("{v}/nzind"),
            "nzind[0] = 0 is outside",
        ),
        ("nzind_float", format!("{v}/nzind"), "must be integers"),
        (
            "nzval_length",
            format!("{v}/nzval"),
            "2 values for the 1 positions",
        ),
        (
            "dense_length",
            "/ds/vectors/cell/d".into(),
            "2 values for the 3 entries",
        ),
        (
            "dense_matrix_shape",
            "/ds/matrices/gene/cell/t".into(),
            "[3, 2]",
        ),
        ("version_2_0", "/ds/daf".into(), "version 2.0"),
        ("version_1_1", "/ds/daf".into(), "version 1.1"),
        ("version_float", "/ds/daf".into(), "unsigned integers"),
        ("version_string", "/ds/daf".into(), "unsigned integers"),
        ("version_three", "/ds/daf".into(), "shape [3]"),
        ("version_missing", "/ds".into(), "not a Daf data set"),
        ("version_group", "/ds/daf".into(), "expected a dataset"),
        (
            "scalar_compound",
            "/ds/scalars/c".into(),
            "not a Daf storage type",
        ),
        ("no_axes_group", "/ds/axes".into(), "missing"),
    ];
    let names: Vec<&str> = listed
        .lines()
        .map(|l| l.split(' ').next().unwrap())
        .collect();
    assert_eq!(names, expect.iter().map(|e| e.0).collect::<Vec<_>>());
    for (name, path, what) in expect {
        let file = h5fmt::File::open(dir.join(format!("{name}.h5"))).unwrap();
        let err = read_all(&file, "/ds").expect_err(name).to_string();
        assert!(
            err.starts_with(&format!("{path}: ")) && err.contains(what),
            "{name}: {err:?} should name {path} and say {what:?}"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn writer_refuses_inconsistent_input() {
    let mut fw = h5fmt::FileWriter::in_memory();
    let mut daf = DafWriter::create(&mut fw, "/").unwrap();
    daf.add_axis("a", &["x", "y", "z"]).unwrap();
    assert!(daf.add_axis("b", &["x", "x"]).is_err(), "repeated entries");
    let sparse = |nzind: Vec<u64>, n: usize| DafVector::Sparse {
        len: 3,
        nzind,
        nzval: DafArray::F64(vec![1.0; n]),
    };
    assert!(
        daf.set_vector("a", "v", &sparse(vec![3], 1)).is_err(),
        "nzind out of range"
    );
    assert!(
        daf.set_vector("a", "v", &sparse(vec![1, 1], 2)).is_err(),
        "nzind repeated"
    );
    assert!(
        daf.set_vector("a", "v", &sparse(vec![1], 2)).is_err(),
        "nzval length"
    );
    assert!(
        daf.set_vector("q", "v", &sparse(vec![1], 1)).is_err(),
        "unknown axis"
    );
    assert!(daf
        .set_vector("a", "v", &DafVector::Dense(DafArray::I8(vec![1, 2])))
        .is_err());
    let csc = |colptr: Vec<u64>, rowval: Vec<u64>| DafMatrix::Csc {
        nrows: 3,
        ncols: 3,
        nzval: DafArray::F32(vec![1.0; rowval.len()]),
        colptr,
        rowval,
    };
    assert!(daf
        .set_matrix("a", "a", "m", &csc(vec![0, 1, 0, 1], vec![0]))
        .is_err());
    assert!(daf
        .set_matrix("a", "a", "m", &csc(vec![0, 1, 1, 1], vec![3]))
        .is_err());
    assert!(daf
        .set_matrix("a", "a", "m", &csc(vec![0, 1, 1], vec![0]))
        .is_err());
    daf.set_matrix("a", "a", "m", &csc(vec![0, 1, 1, 2], vec![2, 0]))
        .unwrap();
    drop(daf);
    let file = h5fmt::File::from_bytes(fw.finish().unwrap()).unwrap();
    let daf = DafReader::open(&file, "/").unwrap();
    // Nothing of the refused calls was written.
    assert_eq!(daf.vector_names("a").unwrap(), Vec::<String>::new());
    assert_eq!(daf.matrix_names("a", "a").unwrap(), ["m"]);
}

/// Every single-byte corruption of a small Daf file (ours) reads as values
/// or errors, never a panic.
#[test]
fn corrupted_bytes_never_panic() {
    let mut fw = h5fmt::FileWriter::in_memory();
    {
        let mut daf = DafWriter::create(&mut fw, "/").unwrap();
        daf.set_scalar("n", &DafScalar::I32(3)).unwrap();
        daf.add_axis("a", &["x", "y", "z"]).unwrap();
        daf.set_vector(
            "a",
            "v",
            &DafVector::Sparse {
                len: 3,
                nzind: vec![1],
                nzval: DafArray::F32(vec![2.5]),
            },
        )
        .unwrap();
        daf.set_matrix(
            "a",
            "a",
            "m",
            &DafMatrix::Csc {
                nrows: 3,
                ncols: 3,
                colptr: vec![0, 1, 1, 2],
                rowval: vec![2, 0],
                nzval: DafArray::U8(vec![4, 5]),
            },
        )
        .unwrap();
    }
    let bytes = fw.finish().unwrap();
    let mut outcomes = [0usize; 2];
    for at in 0..bytes.len() {
        let mut b = bytes.clone();
        b[at] ^= 0x55;
        let ok = match h5fmt::File::from_bytes(b) {
            Ok(file) => read_all(&file, "/").is_ok(),
            Err(_) => false,
        };
        outcomes[usize::from(ok)] += 1;
    }
    // Both outcomes occur: padding bytes change nothing, structure bytes do.
    assert!(outcomes[0] > 0 && outcomes[1] > 0, "{outcomes:?}");
}

/// A sparse property's dense size comes from its axis length (file
/// content): a dense vector or matrix beyond the read limit is a `Limit`
/// error, not an allocation of terabytes (or of most of the machine).
#[test]
fn dense_results_beyond_the_read_limit_are_refused() {
    let huge = 1u64 << 40;
    let v = DafVector::Sparse {
        len: huge,
        nzind: vec![huge - 1],
        nzval: DafArray::F64(vec![1.0]),
    };
    let kind = |e: h5table::Error| match e {
        h5table::Error::Hdf5(e) => Some(e.kind()),
        _ => None,
    };
    let err = v.to_dense().expect_err("2^40 values");
    assert!(err.to_string().contains("exceeds the read limit"), "{err}");
    assert_eq!(kind(err), Some(h5fmt::ErrorKind::Limit));
    let m = DafMatrix::Csc {
        nrows: 1 << 20,
        ncols: 1 << 20,
        colptr: std::iter::once(0)
            .chain(std::iter::repeat_n(1, 1 << 20))
            .collect(),
        rowval: vec![0],
        nzval: DafArray::I32(vec![7]),
    };
    assert_eq!(
        kind(m.to_dense().expect_err("2^40 entries")),
        Some(h5fmt::ErrorKind::Limit)
    );
    // Below the limit the same code gives the values.
    let small = DafVector::Sparse {
        len: 4,
        nzind: vec![2],
        nzval: DafArray::F64(vec![1.5]),
    };
    assert_eq!(
        small.to_dense().unwrap(),
        DafArray::F64(vec![0.0, 0.0, 1.5, 0.0])
    );
}
