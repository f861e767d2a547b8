//! Values decoded on several threads (`Dataset::read_values` of many
//! variable-length elements) against h5py (libhdf5) as the oracle: h5py
//! writes the datasets and prints what it reads back; every value must
//! match, in order (as values and as `String` records). Corrupted heap ids in both halves of a dataset must give
//! the error of the first bad element, as a sequential decode does.

mod common;
use common::{python, run_py};
use h5fmt::{ErrorKind, File, Value};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    common::tmp("parallel_decode", name)
}

/// Writes `s` (vlen UTF-8 strings, some empty), `v` (vlen int32 sequences)
/// and `c` (compound of int64 and vlen string), large enough to be split
/// across threads; prints what h5py reads back, one element per line, and
/// finally the byte offset of `s` in the file.
const WRITE_PY: &str = r#"
import sys, h5py, numpy as np
words = ["alpha", "γάμμα", "", "épsilon", "ζ", "theta-θ"]
n = 150_000
s = ["%d:%s" % (i, words[i % 6]) if i % 11 else "" for i in range(n)]
v = [np.arange(i % 5, dtype=np.int32) * (i % 7 - 3) for i in range(100_000)]
ct = np.dtype([("k", "<i8"), ("name", h5py.string_dtype())])
c = np.array([(i * 3 - 7, words[i % 6] * (i % 3)) for i in range(80_000)], dtype=ct)
with h5py.File(sys.argv[1], "w") as f:
    f.create_dataset("s", data=s, dtype=h5py.string_dtype())
    vt = f.create_dataset("v", (len(v),), dtype=h5py.vlen_dtype(np.int32))
    # One write of an object array (element by element took h5py ~25 s).
    va = np.empty(len(v), dtype=object)
    for i, x in enumerate(v):
        va[i] = x
    vt[...] = va
    f.create_dataset("c", data=c)
with h5py.File(sys.argv[1], "r") as f:
    out = []
    out += ["s " + x for x in f["s"].asstr()[...]]
    out += ["v " + " ".join(str(y) for y in x) for x in f["v"][...]]
    out += ["c %d %s" % (k, nm.decode()) for k, nm in f["c"][...]]
    out.append("offset %d" % f["s"].id.get_offset())
    print("\n".join(out))
"#;

/// h5py writes `name` with [`WRITE_PY`]: its path, what h5py read back, and
/// the byte offset of `s`'s elements; `None` without a venv.
fn written(name: &str) -> Option<(PathBuf, String, usize)> {
    let Some(py) = python() else {
        eprintln!("skipped: no Python venv with h5py");
        return None;
    };
    let path = tmp(name);
    let out = run_py(&py, WRITE_PY, &[&path]);
    let offset = out
        .lines()
        .find_map(|l| l.strip_prefix("offset "))
        .unwrap()
        .parse()
        .unwrap();
    Some((path, out, offset))
}

fn str_of(v: &Value) -> String {
    match v {
        Value::Str(s) => s.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

#[test]
fn many_vlen_values_match_h5py_in_order() {
    let Some((path, expect, _)) = written("vlen.h5") else {
        return;
    };
    let f = File::open(&path).unwrap();
    let mut got = Vec::new();
    for v in f.dataset("s").unwrap().read_values().unwrap() {
        got.push(format!("s {}", str_of(&v)));
    }
    for v in f.dataset("v").unwrap().read_values().unwrap() {
        let Value::Vlen(items) = v else {
            panic!("not a sequence: {v:?}")
        };
        let ints: Vec<String> = items
            .iter()
            .map(|x| match x {
                Value::Int(i) => i.to_string(),
                other => panic!("not an int: {other:?}"),
            })
            .collect();
        got.push(format!("v {}", ints.join(" ")));
    }
    for v in f.dataset("c").unwrap().read_values().unwrap() {
        let Value::Compound(m) = v else {
            panic!("not a compound: {v:?}")
        };
        let Value::Int(k) = m[0].1 else {
            panic!("k: {:?}", m[0].1)
        };
        got.push(format!("c {k} {}", str_of(&m[1].1)));
    }
    let want: Vec<&str> = expect
        .lines()
        .filter(|l| !l.starts_with("offset"))
        .collect();
    // Records go through the same split.
    let strings: Vec<String> = f.dataset("s").unwrap().read_records().unwrap();
    let want_s: Vec<&str> = want.iter().filter_map(|l| l.strip_prefix("s ")).collect();
    assert_eq!(strings.len(), want_s.len());
    for (i, (g, w)) in strings.iter().zip(&want_s).enumerate() {
        assert_eq!(g, w, "record {i}");
    }
    // The member read goes through the same decoder.
    let names = f.dataset("c").unwrap().read_field_values("name").unwrap();
    let want_names: Vec<&str> = want
        .iter()
        .filter_map(|l| l.strip_prefix("c "))
        .map(|l| l.split_once(' ').unwrap().1)
        .collect();
    assert_eq!(names.len(), want_names.len());
    for (g, w) in names.iter().zip(&want_names) {
        assert_eq!(&str_of(g), w);
    }
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "line {i}");
    }
}

#[test]
fn first_bad_element_is_reported_across_threads() {
    let Some((path, _, offset)) = written("bad.h5") else {
        return;
    };
    let clean = std::fs::read(&path).unwrap();
    // Each element: length (u32), collection address (u64), object index (u32).
    let with_bad = |elems: &[(usize, u32)]| {
        let mut b = clean.clone();
        for &(e, index) in elems {
            let at = offset + e * 16 + 12;
            b[at..at + 4].copy_from_slice(&index.to_le_bytes());
        }
        let p = tmp(&format!("bad-{}.h5", elems[0].0));
        std::fs::write(&p, b).unwrap();
        let ds = File::open(&p).unwrap().dataset("s").unwrap();
        (ds.read_values(), ds.read_records::<String>())
    };
    // Element 1 (element 0 is the empty string, stored without a heap object).
    for elems in [
        vec![(1, 60_000), (140_000, 60_001)],
        vec![(140_000, 60_001)],
    ] {
        let (values, records) = with_bad(&elems);
        for err in [values.unwrap_err(), records.unwrap_err()] {
            assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
            let msg = err.to_string();
            assert!(
                msg.contains(&format!("no object {}", elems[0].1)),
                "{elems:?}: {msg}"
            );
            assert!(msg.contains("/s"), "{msg}");
        }
        // Records name the element, counted from the start of the dataset.
        let (_, records) = with_bad(&elems);
        let msg = records.unwrap_err().to_string();
        assert!(
            msg.contains(&format!("element {}", elems[0].0)),
            "{elems:?}: {msg}"
        );
    }
}

/// The error of `r`, which must be one (not printing 150 000 values if not).
fn err<T>(r: h5fmt::Result<Vec<T>>) -> h5fmt::Error {
    match r {
        Ok(v) => panic!("{} values, expected an error", v.len()),
        Err(e) => e,
    }
}

/// Every element names the same heap string, so the values outgrow the read
/// limit (`Limits::max_read_bytes`) after 90 000 strings; element 74 000,
/// near the end of the first thread's half, names a missing object. Read
/// sequentially, the missing object comes first (`Corrupt`). The threads
/// share one budget and run out of it together, near element 45 000 of each
/// half: that `Limit` depends on the timing, so the decode is done again
/// sequentially, and the answer must be the sequential one.
#[test]
fn budget_shared_by_threads_gives_the_sequential_answer() {
    let Some((path, _, offset)) = written("budget.h5") else {
        return;
    };
    let mut b = std::fs::read(&path).unwrap();
    let n = 150_000usize;
    let one: [u8; 16] = b[offset + 16..offset + 32].try_into().unwrap();
    let len = u64::from(u32::from_le_bytes(one[..4].try_into().unwrap()));
    assert!(len > 0);
    for e in 2..n {
        b[offset + e * 16..offset + e * 16 + 16].copy_from_slice(&one);
    }
    let shared = tmp("budget-shared.h5");
    std::fs::write(&shared, &b).unwrap();
    b[offset + 74_000 * 16 + 12..offset + 74_000 * 16 + 16]
        .copy_from_slice(&60_000u32.to_le_bytes());
    let bad = tmp("budget-bad.h5");
    std::fs::write(&bad, &b).unwrap();

    let per_value = std::mem::size_of::<Value>() as u64;
    let per_string = std::mem::size_of::<String>() as u64;
    let open = |p: &PathBuf, per: u64| {
        let limits = h5fmt::Limits {
            max_read_bytes: n as u64 * per + 90_000 * len,
            ..Default::default()
        };
        File::open_with_limits(p, limits).unwrap()
    };
    for _ in 0..10 {
        for p in [&shared, &bad] {
            let f = open(p, per_value);
            let ds = f.dataset("s").unwrap();
            let raw = ds.read_raw().unwrap();
            let seq = h5fmt::data::decode::decode_elements(
                ds.dtype(),
                &raw,
                n as u64,
                f.ctx(),
                &f.heap(),
            );
            let (seq, par) = (err(seq), err(ds.read_values()));
            let rec = err(open(p, per_string)
                .dataset("s")
                .unwrap()
                .read_records::<String>());
            if p == &shared {
                // Past the limit: Limit, sequentially and not.
                for e in [&seq, &par, &rec] {
                    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
                }
            } else {
                // The missing object first.
                for e in [&seq, &par, &rec] {
                    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
                    assert!(e.to_string().contains("no object 60000"), "{e}");
                }
            }
        }
    }
    // Within the limit: every value.
    let limits = h5fmt::Limits {
        max_read_bytes: n as u64 * (per_value + len) + (1 << 20),
        ..Default::default()
    };
    let f = File::open_with_limits(&shared, limits).unwrap();
    let v = f.dataset("s").unwrap().read_values().unwrap();
    assert_eq!(v.len(), n);
    assert_eq!(v[2], v[n - 1]);
    let r: Vec<String> = f.dataset("s").unwrap().read_records().unwrap();
    assert_eq!(r.len(), n);
    assert_eq!(Value::Str(r[n - 1].clone()), v[n - 1]);
}
