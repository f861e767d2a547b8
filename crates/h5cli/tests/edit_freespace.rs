//! Freed file space survives reopening: the editor loads the persistent
//! free-space managers libhdf5 writes (`fs_persist=True`), reuses their
//! space, and records what it frees in managers of the same form. Oracle:
//! h5py (libhdf5) reads every value, then edits the file itself (opening
//! our managers, taking space from them, rewriting them) and reads the
//! result; `h5 check` (which reports free space overlapping allocated
//! structures) is clean; and the file does not grow when new data fits the
//! freed space. A cut test shows every commit prefix reads as the old or
//! the new state.

use h5fmt::write::edit::NewDataset;
use h5fmt::{Datatype, FileEditor};
use std::path::{Path, PathBuf};

mod common;
use common::{
    all_free, assert_checks, assert_sections_disjoint, cut_runs, fs_managers, ints, len, py_list,
    run_py,
};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_fs", name)
}

/// h5py writes `a` (1000 i8), `b` (2000 i8, deleted afterwards, leaving
/// 16000 bytes in the raw data manager), `c` (10 i8) and a chunked `ch`
/// (4000 f8 in chunks of 500), then `tail`, with persistent free space.
const GEN: &str = r#"
import sys, h5py, numpy as np
path, libver = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=(libver, 'latest'), fs_strategy='fsm', fs_persist=True) as f:
    f['a'] = np.arange(1000, dtype='<i8')
    f['b'] = np.arange(2000, dtype='<i8') * 2
    f['c'] = np.arange(10, dtype='<i8')
    f.create_dataset('ch', data=np.arange(4000, dtype='<f8') * 0.5, chunks=(500,), maxshape=(None,))
    f['tail'] = np.arange(100, dtype='<i8') + 7
with h5py.File(path, 'r+') as f:
    del f['b']
"#;

/// Every dataset's values: {name: [...]} (or {"error": ...}).
const DUMP: &str = r#"
import sys, json, h5py, numpy as np
out = []
for p in sys.argv[1:]:
    try:
        with h5py.File(p, 'r') as f:
            d = {}
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    d[name] = np.asarray(obj[()], dtype='f8').ravel().tolist()
            f.visititems(visit)
    except Exception as e:
        d = {'error': repr(e)}
    out.append(d)
print(json.dumps(out))
"#;

/// libhdf5 edits the file: frees `a`, adds `more` (3000 i8) and grows
/// `ch`, closes (rewriting the managers); then it reads everything.
const LIBHDF5_EDIT: &str = r#"
import sys, json, h5py, numpy as np
p = sys.argv[1]
with h5py.File(p, 'r+') as f:
    del f['a']
    f['more'] = np.arange(3000, dtype='<i8') * 3
    d = f['ch']
    n = d.shape[0]
    d.resize((n + 700,))
    d[n:] = np.arange(700) + 0.25
with h5py.File(p, 'r') as f:
    assert (f['more'][()] == np.arange(3000) * 3).all()
    d = f['ch'][()]
    assert (d[-700:] == np.arange(700) + 0.25).all()
    print(json.dumps({'n': int(f['ch'].shape[0]), 'keys': sorted(f.keys())}))
"#;

fn raw_free(path: &Path) -> u64 {
    fs_managers(path, true)
        .0
        .iter()
        .filter(|m| m.0 == 2)
        .flat_map(|m| m.1.iter().map(|s| s.1))
        .sum()
}

fn expect_base(v: &serde_json::Value, ch_len: usize) {
    assert!(v.get("error").is_none(), "{v}");
    assert_eq!(v["a"], ints(1000, |i| i as f64));
    assert_eq!(v["c"], ints(10, |i| i as f64));
    assert_eq!(v["tail"], ints(100, |i| i as f64 + 7.0));
    assert_eq!(v["ch"], ints(ch_len, |i| i as f64 * 0.5));
}

fn libhdf5_edits(path: &Path) {
    let out = run_py(LIBHDF5_EDIT, &[path.to_str().expect("utf-8")]).expect("python");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(v["keys"].as_array().expect("keys").iter().all(|k| k != "a"));
    assert_checks(path, true);
}

fn new_i8(ed: &mut FileEditor, name: &str, vals: &[i64]) {
    let spec = NewDataset::new(Datatype::int_le(8, true), &[vals.len() as u64]);
    ed.create_dataset("/", name, &spec).expect("create");
    ed.write(&format!("/{name}"), &[0], &[vals.len() as u64], vals)
        .expect("write");
}

/// h5py frees `b`; our editor adds a dataset of its size into that space
/// (the file does not grow), the managers stop listing it, and libhdf5
/// reads everything, then edits the file with our managers.
#[test]
fn editor_reuses_libhdf5_free_space() {
    for libver in ["v108", "latest"] {
        let path = scratch(&format!("reuse_{libver}.h5"));
        let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8"), libver]) else {
            return;
        };
        assert!(
            raw_free(&path) >= 16000,
            "{libver}: h5py left no raw free space"
        );
        let size0 = len(&path);
        let vals: Vec<i64> = (0..2000).map(|i| i * 5 - 3).collect();
        let mut ed = FileEditor::open(&path).expect("open");
        new_i8(&mut ed, "new", &vals);
        ed.close().expect("close");
        assert!(
            len(&path) <= size0,
            "{libver}: the file grew from {size0} to {}",
            len(&path)
        );
        assert!(
            raw_free(&path) < 16000,
            "{libver}: the raw space is still listed"
        );
        let v = &py_list(DUMP, &[&path])[0];
        expect_base(v, 4000);
        assert_eq!(v["new"], ints(2000, |i| i as f64 * 5.0 - 3.0));
        assert_checks(&path, true);
        libhdf5_edits(&path);
    }
}

/// Our editor frees chunks (a shrink) and commits; a new session puts a
/// dataset of that size into the space (the file does not grow); libhdf5
/// reads all values and edits the file afterwards.
#[test]
fn freed_space_survives_reopen() {
    for libver in ["v108", "latest"] {
        let path = scratch(&format!("reopen_{libver}.h5"));
        let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8"), libver]) else {
            return;
        };
        let (free0, size0) = (all_free(&path, true), len(&path));
        let mut ed = FileEditor::open(&path).expect("open");
        ed.resize("/ch", &[1000]).expect("shrink");
        ed.close().expect("close");
        let size1 = len(&path);
        // Six chunks of 4000 bytes freed: listed, or given back at the end
        // of the file (less the new chunk index's node, 2 KiB with K = 32,
        // and the managers' own structures).
        let free1 = all_free(&path, true);
        eprintln!("{libver}: free {free0} → {free1}, size {size0} → {size1}");
        assert!(
            free1 + (size0 - size1) + 3000 >= free0 + 24000,
            "{libver}: free {free0} → {free1}, size {size0} → {size1}"
        );
        let v = &py_list(DUMP, &[&path])[0];
        expect_base(v, 1000);
        assert_checks(&path, true);
        // A second session reuses the freed space: a dataset as large as
        // the largest free raw data section.
        let largest = fs_managers(&path, true)
            .0
            .iter()
            .filter(|m| m.0 == 2)
            .flat_map(|m| m.1.iter().map(|s| s.1))
            .max()
            .unwrap_or(0);
        let n = (largest / 8).min(3000) as usize;
        assert!(n >= 1000, "{libver}: largest raw section {largest}");
        let vals: Vec<i64> = (0..n as i64).map(|i| 7 - i).collect();
        let mut ed = FileEditor::open(&path).expect("reopen");
        new_i8(&mut ed, "new", &vals);
        ed.close().expect("close");
        assert!(
            len(&path) <= size1,
            "{libver}: the file grew from {size1} to {}",
            len(&path)
        );
        let v = &py_list(DUMP, &[&path])[0];
        expect_base(v, 1000);
        assert_eq!(v["new"], ints(n, |i| 7.0 - i as f64));
        assert_checks(&path, true);
        libhdf5_edits(&path);
    }
}

/// Free space at the end of the file shrinks it (any superblock version).
#[test]
fn freed_space_at_the_end_shrinks_the_file() {
    const GEN_E: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='earliest') as f:
    f.create_dataset('ch', data=np.arange(100, dtype='<f8'), chunks=(100,), maxshape=(None,))
"#;
    let path = scratch("shrink_earliest.h5");
    let Some(_) = run_py(GEN_E, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    let size0 = len(&path);
    let mut ed = FileEditor::open(&path).expect("open");
    ed.resize("/ch", &[5000]).expect("grow");
    ed.write("/ch", &[100], &[4900], &vec![1.5f64; 4900])
        .expect("write");
    ed.flush().expect("flush");
    assert!(len(&path) >= size0 + 4900 * 8);
    // The shrink frees the chunks and writes a new index at the end of the
    // file; the next commit's index takes the space of the grow's index,
    // and the shrink's index, now free at the end of the file, goes.
    ed.resize("/ch", &[100]).expect("shrink");
    ed.flush().expect("flush");
    let before = len(&path);
    ed.write("/ch", &[0], &[1], &[-1.0f64]).expect("write");
    ed.close().expect("close");
    let shrunk = len(&path);
    assert!(
        shrunk < before,
        "{before} → {shrunk}: the index freed at the end stayed"
    );
    let sb = h5fmt::File::open(&path).expect("open");
    assert_eq!(sb.superblock().eof.get(), shrunk, "end of file address");
    let v = &py_list(DUMP, &[&path])[0];
    assert_eq!(v["ch"], ints(100, |i| if i == 0 { -1.0 } else { i as f64 }));
    assert_checks(&path, true);
}

/// Crash ordering of commits that take space from the managers (a new
/// dataset in the space h5py freed) and free other space (a shrink),
/// rewriting the managers before and after the commit point: cut after
/// every write, libhdf5 reads each object in its old or new state, `h5
/// check` finds no free space overlapping a structure, and libhdf5 can
/// edit the cut files.
#[test]
fn free_space_commits_are_crash_ordered() {
    let template = scratch("cut_template.h5");
    let Some(_) = run_py(GEN, &[template.to_str().expect("utf-8"), "latest"]) else {
        return;
    };
    let vals: Vec<i64> = (0..2000).map(|i| i * 11).collect();
    let op = |ed: &mut FileEditor| -> h5fmt::Result<()> {
        let spec = NewDataset::new(Datatype::int_le(8, true), &[2000]);
        ed.create_dataset("/", "new", &spec)?;
        ed.write("/new", &[0], &[2000], &vals)?;
        ed.resize("/ch", &[2000])?;
        ed.flush()
    };
    let (cuts, done) = cut_runs(
        &template,
        |n| scratch(&format!("cut_{n}.h5")),
        500,
        "never completes",
        op,
    );
    let n = cuts.len();
    assert!(n >= 3, "too few writes: {n}");
    let mut all: Vec<&Path> = cuts.iter().map(PathBuf::as_path).collect();
    all.push(&done);
    let views = py_list(DUMP, &all);
    let (mut old, mut new) = (0, 0);
    for (i, v) in views.iter().enumerate() {
        // Each object is in its old or new state (the commit switches them
        // one write each).
        let n_ch = v["ch"].as_array().map_or(0, Vec::len);
        assert!(n_ch == 2000 || n_ch == 4000, "cut {i}: {n_ch} elements");
        expect_base(v, n_ch);
        // `create_dataset` commits the new dataset filled with zeros; the
        // values are one in-place write into it.
        if v.get("new").is_some() {
            assert!(
                v["new"] == ints(2000, |i| i as f64 * 11.0) || v["new"] == ints(2000, |_| 0.0),
                "cut {i}: {}",
                v["new"]
            );
        }
        if v.get("new").is_some() && n_ch == 2000 {
            new += 1;
        } else if v.get("new").is_none() && n_ch == 4000 {
            old += 1;
        }
        let p = all[i];
        assert_checks(p, p == done.as_path());
        // No listed free space overlaps the managers' own structures or
        // another section (h5 check covers allocated structures).
        let (ms, structs) = fs_managers(p, true);
        assert_sections_disjoint(&ms, structs, &format!("cut {i}"));
    }
    assert!(old > 0 && new > 0, "{old} old, {new} new");
    // libhdf5 edits a few cuts (before, around and after the switches).
    for i in [0, n / 2, n.saturating_sub(2), n.saturating_sub(1), n] {
        let p = all[i.min(all.len() - 1)];
        let q = scratch(&format!("cut_edit_{i}.h5"));
        std::fs::copy(p, &q).expect("copy");
        libhdf5_edits(&q);
    }
}

/// A persistent-free-space file like the kill test's template: `/x` (f64,
/// gzip, chunks of 7) and `/m` (rows of 3 i32), both empty.
const GEN_APPEND: &str = r#"
import sys, h5py
path, libver = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=(libver, 'latest'), fs_strategy='fsm', fs_persist=True) as f:
    f.create_dataset('x', shape=(0,), maxshape=(None,), dtype='<f8', chunks=(7,), compression='gzip', shuffle=True)
    f.create_dataset('m', shape=(0, 3), maxshape=(None, None), dtype='<i4', chunks=(4, 2))
"#;

/// libhdf5 opens each file read-write, adds `lib` (3 i8) and closes (which
/// rewrites the managers); then reads `lib` and `/x` back. Prints `/x`'s
/// lengths.
const LIBHDF5_ADD: &str = r#"
import sys, h5py, numpy as np
out = []
for p in sys.argv[1:]:
    with h5py.File(p, 'r+') as f:
        f.create_dataset('lib', data=np.arange(3, dtype='<i8'))
    with h5py.File(p, 'r') as f:
        assert (f['lib'][()] == np.arange(3)).all()
        x = f['x'][()]
        assert (x == np.arange(len(x))).all()
        out.append(str(len(x)))
print(' '.join(out))
"#;

/// Regression (found by the kill test): the editor wrote section lists
/// whose used size was below their allocated size, which libhdf5 never
/// writes and cannot rewrite (a read-write session that changes such a list
/// fails at close, "size of entry changed", then aborts; reproduced by
/// `edit.rs`'s `child_edits_then_libhdf5_edits`). Here [`fs_managers`] checks
/// the two sizes agree after each of several appending commits, and
/// libhdf5 edits each commit's file and reads it back.
#[test]
fn libhdf5_rewrites_the_editors_managers() {
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("rewrite_{libver}.h5"));
        let p = path.to_str().expect("utf-8");
        run_py(GEN_APPEND, &[p, libver]).expect("python");
        let mut ed = FileEditor::open(&path).expect("open");
        let mut n = 0u64;
        let mut copies = Vec::new();
        let mut lens = Vec::new();
        let mut listed = 0;
        for round in 0..8u64 {
            for k in [5, 13, 9, 7 + round] {
                ed.append("/x", &(n..n + k).map(|i| i as f64).collect::<Vec<_>>())
                    .expect("append x");
                n += k;
                let m: Vec<u8> = (0..3 * k as i32).flat_map(|v| v.to_le_bytes()).collect();
                ed.append_raw("/m", &m).expect("append m");
            }
            ed.set_attr("/x", "n", n as i64).expect("attr");
            ed.flush().expect("flush");
            let c = scratch(&format!("rewrite_{libver}_{round}.h5"));
            std::fs::copy(&path, &c).expect("copy");
            listed += usize::from(!fs_managers(&c, true).0.is_empty());
            assert_checks(&c, true);
            copies.push(c);
            lens.push(n.to_string());
        }
        drop(ed);
        assert!(
            listed >= 4,
            "{libver}: free space listed after {listed} commits"
        );
        let args: Vec<&str> = copies.iter().map(|c| c.to_str().expect("utf-8")).collect();
        let out = run_py(LIBHDF5_ADD, &args).expect("python");
        assert_eq!(out.trim(), lens.join(" "), "{libver}");
        for c in &copies {
            assert_checks(c, true);
            // And the editor goes on from libhdf5's managers.
            let mut ed = FileEditor::open(c).expect("reopen");
            ed.append("/x", &[1.0f64]).expect("append");
            ed.flush().expect("flush");
            drop(ed);
            fs_managers(c, true);
            assert_checks(c, true);
        }
    }
}
