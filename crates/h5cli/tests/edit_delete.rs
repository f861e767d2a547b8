//! Deleting an object's last hard link frees its storage, as libhdf5 does:
//! header, raw data (contiguous block, chunks), chunk index, dense
//! attributes, and for a group its link storage and the members whose last
//! link it held. Files come from h5py with persistent free space
//! (`fs_strategy='fsm', fs_persist=True`), so the freed space is visible
//! in the file's managers (or the end of file shrank) after reopening.
//! Oracle: h5py (libhdf5) reads every remaining value and edits the file
//! afterwards; `h5 check` (free space overlapping a structure in use, a
//! chunk among them, is an error) is clean; the freed space takes new data
//! without the file growing. Also: `FileWriter::persist_free_space` files
//! as libhdf5 writes them, and a cut test over delete commits.

use h5fmt::write::edit::NewDataset;
use h5fmt::{Datatype, FileEditor, FileWriter, Format};
use std::path::{Path, PathBuf};

mod common;
use common::{
    all_free, assert_sections_disjoint, cut_runs, fs_info_of, fs_managers, ints, len, py_list,
    run_py,
};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_del", name)
}

/// h5py writes, with persistent free space: `keep` (100 i8), `contig`
/// (2000 i8), `chunked` (4000 f8 in chunks of 500, 12 attributes: dense
/// from `v108` on), group `g` (`x` 1000 i8 contiguous, `y` 1000 i8 in
/// chunks of 250, `sub/z` 500 i8), group `big` (20 datasets of 10 i8:
/// dense links, or a symbol table under `earliest`), `hard` (300 i8) also
/// linked as `g2/alias`, and `tail` (10 i8).
const GEN: &str = r#"
import sys, h5py, numpy as np
path, libver = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=(libver, 'latest'), fs_strategy='fsm', fs_persist=True) as f:
    f['keep'] = np.arange(100, dtype='<i8')
    f['contig'] = np.arange(2000, dtype='<i8')
    c = f.create_dataset('chunked', data=np.arange(4000, dtype='<f8'), chunks=(500,), maxshape=(None,))
    for i in range(12):
        c.attrs[f'at{i:02}'] = np.arange(40) + i
    g = f.create_group('g')
    g['x'] = np.arange(1000, dtype='<i8')
    g.create_dataset('y', data=np.arange(1000, dtype='<i8'), chunks=(250,), maxshape=(None,))
    g.create_group('sub')['z'] = np.arange(500, dtype='<i8')
    big = f.create_group('big')
    for i in range(20):
        big[f'd{i:02}'] = np.arange(10, dtype='<i8') + i
    f['hard'] = np.arange(300, dtype='<i8')
    f.create_group('g2')['alias'] = f['hard']
    f['tail'] = np.arange(10, dtype='<i8')
"#;

/// Raw data bytes of `contig`, `chunked`, `g` and `big`.
const RAW_DELETED: u64 = 16000 + 32000 + (8000 + 8000 + 4000) + 20 * 80;

/// Every dataset's values: {name: [...]} (or {"error": ...}).
const DUMP: &str = r#"
import sys, json, h5py, numpy as np
out = []
for p in sys.argv[1:]:
    try:
        with h5py.File(p, 'r') as f:
            d = {}
            names = []
            f.visit_links(names.append)
            for name in names:
                obj = f.get(name)
                if isinstance(obj, h5py.Dataset) and obj.dtype.kind in 'iuf':
                    d[name] = np.asarray(obj[()], dtype='f8').ravel().tolist()
            if 'g2/alias' in f:
                d['alias_rc'] = h5py.h5o.get_info(f['g2/alias'].id).rc
    except Exception as e:
        d = {'error': repr(e)}
    out.append(d)
print(json.dumps(out))
"#;

/// libhdf5 edits the file: deletes `keep`, adds `more` (3000 i8), grows a
/// chunked dataset if there is one, closes (rewriting the managers), then
/// reads everything back.
const LIBHDF5_EDIT: &str = r#"
import sys, json, h5py, numpy as np
p = sys.argv[1]
with h5py.File(p, 'r+') as f:
    if 'keep' in f:
        del f['keep']
    f['more'] = np.arange(3000, dtype='<i8') * 3
    if 'chunked' in f:
        d = f['chunked']
        n = d.shape[0]
        d.resize((n + 700,))
        d[n:] = np.arange(700) + 5
with h5py.File(p, 'r') as f:
    assert (f['more'][()] == np.arange(3000) * 3).all()
    if 'chunked' in f:
        assert (f["chunked"][-700:] == np.arange(700) + 5).all()
    f.visititems(lambda n, o: o[()] if isinstance(o, h5py.Dataset) else None)
    print(json.dumps({'keys': sorted(f.keys())}))
"#;

/// `h5 check` is clean (see [`common::assert_checks`]) and no listed
/// free-space section overlaps another or the managers' structures.
fn assert_checks(path: &Path, strict: bool) {
    common::assert_checks(path, strict);
    let (ms, structs) = fs_managers(path, false);
    assert_sections_disjoint(&ms, structs, &path.display().to_string());
}

fn libhdf5_edits(path: &Path) {
    let out = run_py(LIBHDF5_EDIT, &[path.to_str().expect("utf-8")]).expect("python");
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert!(v["keys"]
        .as_array()
        .expect("keys")
        .iter()
        .all(|k| k != "keep"));
    assert_checks(path, true);
}

/// The objects `GEN` writes that are still there, with their values.
fn expect_present(v: &serde_json::Value, names: &[&str]) {
    assert!(v.get("error").is_none(), "{v}");
    for n in names {
        let want = match *n {
            "keep" => ints(100, |i| i as f64),
            "contig" => ints(2000, |i| i as f64),
            "chunked" => ints(4000, |i| i as f64),
            "g/x" | "g/y" => ints(1000, |i| i as f64),
            "g/sub/z" => ints(500, |i| i as f64),
            "hard" | "g2/alias" => ints(300, |i| i as f64),
            "tail" => ints(10, |i| i as f64),
            _ => unreachable!(),
        };
        assert_eq!(v[*n], want, "{n}");
    }
}

const LIBVERS: [&str; 3] = ["earliest", "v108", "latest"];

/// Deleting a contiguous dataset, a chunked one (v1 B-tree under
/// `earliest`/`v108`, extensible array under `latest`, with dense
/// attributes from `v108` on), a group of datasets and a subgroup, and a
/// group of 20 datasets (symbol table or dense links) frees at least their
/// raw data: listed by the managers after reopening, or given back at the
/// end of the file. New data of that size then fits without the file
/// growing; libhdf5 reads and edits the result.
#[test]
fn deleting_objects_frees_their_storage() {
    for libver in LIBVERS {
        let path = scratch(&format!("del_{libver}.h5"));
        let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8"), libver]) else {
            return;
        };
        let (free0, size0) = (all_free(&path, false), len(&path));
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "contig").expect("delete contig");
        ed.close().expect("close");
        let (free1, size1) = (all_free(&path, false), len(&path));
        assert!(
            free1 + (size0 - size1.min(size0)) >= free0 + 16000,
            "{libver}: contig: free {free0} → {free1}, size {size0} → {size1}"
        );
        assert_checks(&path, true);
        let mut ed = FileEditor::open(&path).expect("reopen");
        ed.delete_link("/", "chunked").expect("delete chunked");
        ed.delete_link("/", "g").expect("delete g");
        ed.delete_link("/", "big").expect("delete big");
        ed.close().expect("close");
        let (free2, size2) = (all_free(&path, false), len(&path));
        eprintln!("{libver}: free {free0} → {free1} → {free2}, size {size0} → {size1} → {size2}");
        assert!(
            free2 + size0.saturating_sub(size2) >= free0 + RAW_DELETED,
            "{libver}: free {free0} → {free2}, size {size0} → {size2}"
        );
        assert_checks(&path, true);
        let v = &py_list(DUMP, &[&path])[0];
        expect_present(v, &["keep", "hard", "g2/alias", "tail"]);
        for gone in ["contig", "chunked", "g/x", "g/y", "g/sub/z", "big/d00"] {
            assert!(v.get(gone).is_none(), "{libver}: {gone} is still there");
        }
        // New data as large as the largest deleted dataset (32000 bytes of
        // chunks) and the contiguous one fit without the file growing.
        let mut ed = FileEditor::open(&path).expect("reopen");
        let vals: Vec<i64> = (0..2000).map(|i| 3 * i - 1).collect();
        let spec = NewDataset::new(Datatype::int_le(8, true), &[2000]);
        ed.create_dataset("/", "new", &spec).expect("create");
        ed.write("/new", &[0], &[2000], &vals).expect("write");
        let spec = NewDataset::new(Datatype::int_le(8, true), &[4000])
            .chunks(&[500])
            .maxshape(&[None]);
        ed.create_dataset("/", "new_ch", &spec).expect("create");
        let vals2: Vec<i64> = (0..4000).map(|i| 7 - i).collect();
        ed.write("/new_ch", &[0], &[4000], &vals2).expect("write");
        ed.close().expect("close");
        assert!(
            len(&path) <= size0,
            "{libver}: the file grew from {size0} to {}",
            len(&path)
        );
        assert_checks(&path, true);
        let v = &py_list(DUMP, &[&path])[0];
        expect_present(v, &["keep", "hard", "g2/alias", "tail"]);
        assert_eq!(v["new"], ints(2000, |i| 3.0 * i as f64 - 1.0), "{libver}");
        assert_eq!(v["new_ch"], ints(4000, |i| 7.0 - i as f64), "{libver}");
        libhdf5_edits(&path);
    }
}

/// An object with two hard links: deleting one frees nothing (its
/// reference count drops to 1, as h5py reports) and the other still reads;
/// deleting the group holding the second frees the data.
#[test]
fn deleting_one_of_two_hard_links_frees_nothing() {
    for libver in LIBVERS {
        let path = scratch(&format!("hard_{libver}.h5"));
        let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8"), libver]) else {
            return;
        };
        assert_eq!(py_list(DUMP, &[&path])[0]["alias_rc"], 2, "{libver}");
        let (free0, size0) = (all_free(&path, false), len(&path));
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "hard").expect("delete hard");
        ed.close().expect("close");
        assert_eq!(
            (all_free(&path, false), len(&path)),
            (free0, size0),
            "{libver}: space changed"
        );
        assert_checks(&path, true);
        let v = &py_list(DUMP, &[&path])[0];
        assert!(v.get("hard").is_none());
        expect_present(v, &["keep", "contig", "chunked", "g2/alias", "tail"]);
        assert_eq!(v["alias_rc"], 1, "{libver}");
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "g2").expect("delete g2");
        ed.close().expect("close");
        let (free1, size1) = (all_free(&path, false), len(&path));
        assert!(
            free1 + size0.saturating_sub(size1) >= free0 + 2400,
            "{libver}: free {free0} → {free1}, size {size0} → {size1}"
        );
        assert_checks(&path, true);
        let v = &py_list(DUMP, &[&path])[0];
        assert!(v.get("g2/alias").is_none());
        expect_present(v, &["keep", "contig", "chunked", "tail"]);
        libhdf5_edits(&path);
    }
}

/// The editor deletes the link `/t` to a committed datatype holding its
/// last reference: the datatype's header (at least its 8-byte integer
/// message) becomes free space or leaves the end of the file.
fn delete_frees_datatype(path: &Path, libver: &str) {
    let (free0, size0) = (all_free(path, false), len(path));
    let mut ed = FileEditor::open(path).expect("open");
    ed.delete_link("/", "t").expect("delete t");
    ed.close().expect("close");
    let (free1, size1) = (all_free(path, false), len(path));
    assert!(
        free1 + size0.saturating_sub(size1) >= free0 + 16,
        "{libver}: free {free0} → {free1}, size {size0} → {size1}"
    );
}

/// A dataset using a committed datatype holds a reference to it (libhdf5
/// counts it as a link): deleting the dataset drops the datatype's count
/// from 2 to 1 (h5py reports it), and deleting the datatype's link then
/// frees its header.
#[test]
fn deleting_a_dataset_releases_its_committed_datatype() {
    const GEN_T: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver=(sys.argv[2], 'latest'), fs_strategy='fsm', fs_persist=True) as f:
    f['t'] = np.dtype('<i8')
    f.create_dataset('d', data=np.arange(500), dtype=f['t'])
    f['tail'] = np.arange(10, dtype='<i8')
"#;
    const RC: &str = r#"
import sys, json, h5py
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps({'t': h5py.h5o.get_info(f['t'].id).rc if 't' in f else None,
                      'd': 'd' in f, 'tail': f['tail'][()].tolist()}))
"#;
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("dtype_{libver}.h5"));
        let p = path.to_str().expect("utf-8");
        let Some(_) = run_py(GEN_T, &[p, libver]) else {
            return;
        };
        let rc = |p: &str| -> serde_json::Value {
            serde_json::from_str(&run_py(RC, &[p]).expect("python")).expect("json")
        };
        assert_eq!(rc(p)["t"], 2, "{libver}");
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "d").expect("delete d");
        ed.close().expect("close");
        let v = rc(p);
        assert_eq!(v["t"], 1, "{libver}: {v}");
        assert_eq!(v["d"], false);
        assert_checks(&path, true);
        delete_frees_datatype(&path, libver);
        let v = rc(p);
        assert_eq!(v["t"], serde_json::Value::Null);
        assert_eq!(v["tail"], serde_json::json!((0..10).collect::<Vec<i64>>()));
        assert_checks(&path, true);
        libhdf5_edits(&path);
    }
}

/// Attributes using a committed datatype hold a reference to it, as
/// datasets do. Twin files: libhdf5 (h5py) makes each edit in one, the
/// editor in the other, and the datatype's reference count must then be
/// the same: deleting an attribute (compact), overwriting one with an
/// inline type, deleting a group with one and a group with twelve (dense
/// with `latest`), and finally the datatype's link, which frees it.
#[test]
fn deleting_attributes_releases_their_committed_datatype() {
    const GEN_A: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver=(sys.argv[2], 'latest'), fs_strategy='fsm',
               fs_persist=True) as f:
    f['t'] = np.dtype('<i8')
    d = f.create_dataset('d', data=np.arange(5))
    d.attrs.create('b', np.arange(2), dtype=f['t'])
    d.attrs.create('c', np.arange(3), dtype=f['t'])
    g = f.create_group('g')
    g.attrs.create('a', np.arange(3), dtype=f['t'])
    h = f.create_group('h')
    for i in range(12):
        h.attrs.create('x%d' % i, np.arange(i + 1), dtype=f['t'])
    f['tail'] = np.arange(10, dtype='<i8')
"#;
    /// libhdf5 makes step `argv[2]` of the edits below.
    const LIB_STEP: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    step = sys.argv[2]
    if step == 'del_attr':
        del f['d'].attrs['b']
    elif step == 'overwrite':
        f['d'].attrs['c'] = np.arange(4, dtype='<i4')
    elif step in ('g', 'h', 't'):
        del f[step]
"#;
    const RC: &str = r#"
import sys, json, h5py
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps({'t': h5py.h5o.get_info(f['t'].id).rc if 't' in f else None,
                      'dense': h5py.h5o.get_info(f['h'].id).num_attrs if 'h' in f else None,
                      'c': f['d'].attrs['c'].tolist(), 'tail': f['tail'][()].tolist()}))
"#;
    for libver in ["earliest", "latest"] {
        let ours = scratch(&format!("attr_dtype_{libver}.h5"));
        let lib = scratch(&format!("attr_dtype_lib_{libver}.h5"));
        let (o, l) = (ours.to_str().expect("utf-8"), lib.to_str().expect("utf-8"));
        let Some(_) = run_py(GEN_A, &[o, libver]) else {
            return;
        };
        std::fs::copy(&ours, &lib).expect("copy");
        let rc = |p: &str| -> serde_json::Value {
            serde_json::from_str(&run_py(RC, &[p]).expect("python")).expect("json")
        };
        assert_eq!(rc(o)["t"], 1 + 2 + 1 + 12, "{libver}");
        for step in ["del_attr", "overwrite", "g", "h"] {
            run_py(LIB_STEP, &[l, step]).expect("libhdf5 step");
            let mut ed = FileEditor::open(&ours).expect("open");
            match step {
                "del_attr" => ed.delete_attr("/d", "b").expect("delete b"),
                "overwrite" => ed
                    .set_attr("/d", "c", vec![0i32, 1, 2, 3])
                    .expect("overwrite c"),
                _ => ed.delete_link("/", step).expect("delete"),
            }
            ed.close().expect("close");
            let (v, want) = (rc(o), rc(l));
            assert_eq!(v, want, "{libver}, after {step}");
            assert_checks(&ours, true);
        }
        assert_eq!(rc(o)["t"], 1, "{libver}");
        // The last reference: the datatype goes.
        delete_frees_datatype(&ours, libver);
        run_py(LIB_STEP, &[l, "t"]).expect("libhdf5 step");
        assert_eq!(rc(o), rc(l), "{libver}, after t");
        assert_checks(&ours, true);
        libhdf5_edits(&ours);
    }
}

/// Fields of a File Space Info message, and its message flags.
fn fs_info(path: &Path) -> (h5fmt::format::free_space::FileSpaceInfo, u8) {
    fs_info_of(&h5fmt::File::open(path).expect("open"))
}

/// `FileWriter::persist_free_space` writes the File Space Info message
/// libhdf5 writes for `fs_strategy='fsm', fs_persist=True` (compared field
/// by field with an h5py file, the end of file before the managers being
/// each file's size); h5py reports the strategy; libhdf5 edits the file;
/// space our editor frees survives reopening.
#[test]
fn writer_creates_persistent_free_space() {
    const STRATEGY: &str = r#"
import sys, json, h5py
out = []
for p in sys.argv[1:]:
    with h5py.File(p, 'r') as f:
        out.append(list(f.id.get_create_plist().get_file_space_strategy()))
print(json.dumps(out))
"#;
    const REF: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'w', libver=(sys.argv[2], 'latest'), fs_strategy='fsm', fs_persist=True, fs_threshold=int(sys.argv[3])) as f:
    pass
"#;
    assert_eq!(
        FileWriter::in_memory_with(Format::Earliest)
            .persist_free_space(true)
            .map_err(|e| e.kind()),
        Err(h5fmt::ErrorKind::Usage)
    );
    for (format, libver, threshold) in [
        (Format::V18, "v108", 1u64),
        (Format::Latest, "latest", 1),
        (Format::Latest, "latest", 64),
    ] {
        let path = scratch(&format!("writer_{libver}_{threshold}.h5"));
        let mut w = FileWriter::create_with(&path, format).expect("create");
        if threshold == 1 {
            w.persist_free_space(true).expect("persist");
        } else {
            w.free_space_threshold(threshold).expect("threshold");
        }
        let mut root = w.root();
        let vals: Vec<i64> = (0..2000).collect();
        root.create_dataset("keep")
            .write(&vals[..100])
            .expect("keep");
        root.create_dataset("contig").write(&vals).expect("contig");
        root.create_dataset("chunked")
            .chunks(&[500])
            .maxshape(&[None])
            .write(&vals)
            .expect("chunked");
        root.create_dataset("tail")
            .write(&vals[..10])
            .expect("tail");
        w.close().expect("close");
        let reference = scratch(&format!("writer_ref_{libver}_{threshold}.h5"));
        let Some(_) = run_py(
            REF,
            &[
                reference.to_str().expect("utf-8"),
                libver,
                &threshold.to_string(),
            ],
        ) else {
            return;
        };
        let (ours, ours_flags) = fs_info(&path);
        let (theirs, their_flags) = fs_info(&reference);
        assert_eq!(ours_flags, their_flags);
        assert_eq!(ours.eoa_before_fsm.0, len(&path));
        assert_eq!(theirs.eoa_before_fsm.0, len(&reference));
        let mut ours_cmp = ours.clone();
        ours_cmp.eoa_before_fsm = theirs.eoa_before_fsm;
        assert_eq!(ours_cmp, theirs);
        let s = run_py(
            STRATEGY,
            &[
                path.to_str().expect("utf-8"),
                reference.to_str().expect("utf-8"),
            ],
        )
        .expect("python");
        let v: serde_json::Value = serde_json::from_str(&s).expect("json");
        assert_eq!(v[0], serde_json::json!([0, 1, threshold]), "{s}");
        assert_eq!(v[0], v[1]);
        assert_checks(&path, true);
        // Our editor frees `contig` (16000 bytes): listed after reopening.
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "contig").expect("delete");
        ed.close().expect("close");
        // (The new managers may take their own space from it.)
        let structs: u64 = fs_managers(&path, false).1.iter().map(|s| s.1).sum();
        let free = all_free(&path, false);
        assert!(free + structs >= 16000, "{libver}: {free} + {structs}");
        assert_checks(&path, true);
        let mut ed = FileEditor::open(&path).expect("open");
        let size = len(&path);
        // Nearly as large (the managers took a few hundred bytes of it).
        let spec = NewDataset::new(Datatype::int_le(8, true), &[1900]);
        ed.create_dataset("/", "new", &spec).expect("create");
        ed.write("/new", &[0], &[1900], &vals[..1900])
            .expect("write");
        ed.close().expect("close");
        // The data went into the freed space (the new header and managers
        // may not).
        assert!(
            len(&path) <= size + 1024,
            "{libver}: grew {size} → {}",
            len(&path)
        );
        let v = &py_list(DUMP, &[&path])[0];
        assert_eq!(v["new"], ints(1900, |i| i as f64));
        assert_eq!(v["chunked"], ints(2000, |i| i as f64));
        assert_eq!(v["tail"], ints(10, |i| i as f64));
        assert_checks(&path, true);
        libhdf5_edits(&path);
    }
}

/// Cut after every write of two delete commits (a group of datasets and a
/// subgroup, then a chunked dataset with dense attributes): libhdf5 reads
/// every object in its old or new state, `h5 check` finds no free space
/// overlapping a structure, and libhdf5 edits a few cut files.
#[test]
fn delete_commits_are_crash_ordered() {
    for libver in ["earliest", "latest"] {
        let template = scratch(&format!("cut_template_{libver}.h5"));
        let Some(_) = run_py(GEN, &[template.to_str().expect("utf-8"), libver]) else {
            return;
        };
        let op = |ed: &mut FileEditor| -> h5fmt::Result<()> {
            ed.delete_link("/", "g")?;
            ed.delete_link("/", "chunked")?;
            ed.delete_link("/", "hard")
        };
        let (cuts, done) = cut_runs(
            &template,
            |n| scratch(&format!("cut_{libver}_{n}.h5")),
            500,
            "never completes",
            op,
        );
        let n = cuts.len();
        assert!(n >= 3, "too few writes: {n}");
        let mut all: Vec<&Path> = cuts.iter().map(PathBuf::as_path).collect();
        all.push(&done);
        let views = py_list(DUMP, &all);
        let mut states = std::collections::BTreeSet::new();
        for (i, v) in views.iter().enumerate() {
            expect_present(v, &["keep", "contig", "tail", "g2/alias"]);
            let g = v.get("g/x").is_some();
            if g {
                expect_present(v, &["g/x", "g/y", "g/sub/z"]);
            } else {
                assert!(
                    v.get("g/y").is_none() && v.get("g/sub/z").is_none(),
                    "cut {i}"
                );
            }
            let ch = v.get("chunked").is_some();
            if ch {
                expect_present(v, &["chunked"]);
            }
            let hard = v.get("hard").is_some();
            if hard {
                expect_present(v, &["hard"]);
            }
            // The alias loses a reference only once `hard` is gone.
            let rc = v["alias_rc"].as_u64().expect("rc");
            assert!(
                rc == 2 || (!hard && rc == 1),
                "cut {i}: hard {hard}, rc {rc}"
            );
            states.insert((g, ch, hard));
            let p = all[i];
            assert_checks(p, p == done.as_path());
        }
        assert!(
            states.contains(&(true, true, true)) && states.contains(&(false, false, false)),
            "{libver}: {states:?}"
        );
        for s in &states {
            // g goes first, then chunked, then hard.
            assert!(
                (s.0 <= s.1) && (s.1 <= s.2),
                "{libver}: state {s:?} out of order"
            );
        }
        for i in [0, n / 3, n / 2, n.saturating_sub(1), n] {
            let p = all[i.min(all.len() - 1)];
            let q = scratch(&format!("cut_edit_{libver}_{i}.h5"));
            std::fs::copy(p, &q).expect("copy");
            libhdf5_edits(&q);
        }
    }
}

/// Bytes the managers list plus what the file shrank, relative to `base`
/// (free, size).
fn freed(path: &Path, base: (u64, u64)) -> u64 {
    (all_free(path, false) + base.1).saturating_sub(base.0 + len(path))
}

/// Objects with dense attributes holding a 160 000-byte attribute (a huge
/// fractal heap object, stored on its own and tracked by the heap's
/// huge-object B-tree): deleting them frees the huge objects, as libhdf5
/// does (a twin where libhdf5 deletes the same objects frees as much, give
/// or take the small structures); an attribute of that size then fits in
/// the freed space; libhdf5 reads and edits the result.
#[test]
fn deleting_objects_frees_huge_heap_objects() {
    const GEN_HUGE: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='latest', fs_strategy='fsm', fs_persist=True) as f:
    f['head'] = np.arange(10, dtype='<i8')
    d = f.create_dataset('d', data=np.arange(100, dtype='<i8'))
    for i in range(3):
        d.attrs[f'a{i}'] = np.arange(5) + i
    d.attrs['big'] = np.arange(20000, dtype='<f8')
    g = f.create_group('g')
    g.attrs['big'] = np.arange(20000, dtype='<f8') * 2
    f['tail'] = np.arange(10, dtype='<i8')
"#;
    const LIB_DEL: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    del f['d']
    del f['g']
"#;
    const HUGE: u64 = 160_000;
    let path = scratch("huge.h5");
    let twin = scratch("huge_lib.h5");
    let Some(_) = run_py(GEN_HUGE, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    std::fs::copy(&path, &twin).expect("copy");
    // The attributes really are huge objects of dense storage.
    {
        let f = h5fmt::File::open(&path).expect("open");
        let d = f.dataset("/d").expect("d");
        assert!(d
            .header()
            .find(h5fmt::format::message::kind::ATTRIBUTE_INFO)
            .is_some());
    }
    let base = (all_free(&path, false), len(&path));
    let mut ed = FileEditor::open(&path).expect("open");
    ed.delete_link("/", "d").expect("delete d");
    ed.delete_link("/", "g").expect("delete g");
    ed.close().expect("close");
    let ours = freed(&path, base);
    run_py(LIB_DEL, &[twin.to_str().expect("utf-8")]).expect("libhdf5 deletes");
    let theirs = freed(&twin, base);
    eprintln!("huge: ours freed {ours}, libhdf5 {theirs}");
    assert!(theirs >= 2 * HUGE, "libhdf5 freed only {theirs}");
    assert!(ours >= 2 * HUGE + 800, "freed only {ours}");
    assert!(ours + 4096 >= theirs, "ours {ours}, libhdf5 {theirs}");
    assert_checks(&path, true);
    let v = &py_list(DUMP, &[&path])[0];
    assert!(v.get("d").is_none());
    assert_eq!(v["head"], ints(10, |i| i as f64));
    assert_eq!(v["tail"], ints(10, |i| i as f64));
    // A dataset of that size lands in the freed space.
    let size = len(&path);
    let mut ed = FileEditor::open(&path).expect("open");
    let spec = NewDataset::new(Datatype::int_le(8, true), &[20000]);
    ed.create_dataset("/", "new", &spec).expect("create");
    let vals: Vec<i64> = (0..20000).collect();
    ed.write("/new", &[0], &[20000], &vals).expect("write");
    ed.close().expect("close");
    assert!(len(&path) <= size, "grew {size} → {}", len(&path));
    assert_eq!(py_list(DUMP, &[&path])[0]["new"], ints(20000, |i| i as f64));
    assert_checks(&path, true);
    libhdf5_edits(&path);
}

/// The objects of the global heap collection at `addr`: (index, reference
/// count, data), in their order in the collection, and the free space.
fn collection(path: &Path, addr: u64) -> (Vec<(u16, u16, Vec<u8>)>, u64) {
    use h5fmt::codec::Cursor;
    use h5fmt::format::global_heap::{decode_collection_size, Collection};
    let b = std::fs::read(path).expect("read");
    let f = h5fmt::File::from_bytes(b.clone()).expect("open");
    let ctx = f.ctx();
    let at = addr as usize;
    let size = decode_collection_size(&mut Cursor::new(&b[at..], addr), ctx).expect("GCOL");
    let bytes = &b[at..at + size as usize];
    let mut list = Collection::decode_list(&mut Cursor::new(bytes, addr), ctx).expect("objects");
    list.sort_by_key(|o| o.1.start);
    let used = list
        .iter()
        .map(|o| o.1.start + o.1.len.div_ceil(8) * 8)
        .max()
        .unwrap_or(0);
    let objs = list
        .iter()
        .map(|(i, s)| (*i, s.refcount, bytes[s.start..s.start + s.len].to_vec()))
        .collect();
    (objs, size - used as u64)
}

/// The global heap collection holding the mapping list of `/v`.
fn vds_collection(path: &Path) -> u64 {
    let f = h5fmt::File::open(path).expect("open");
    match f.dataset("/v").expect("v").layout() {
        h5fmt::format::message::Layout::Virtual { heap_addr, .. } => heap_addr.0,
        l => panic!("not virtual: {l:?}"),
    }
}

/// h5py writes `src`, virtual dataset `v` mapping it, `head`, `tail` and,
/// with argv[2] `shared`, variable-length strings `s`, `s2` whose global
/// heap objects share the mapping's collection.
const GEN_VDS: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='latest', fs_strategy='fsm', fs_persist=True) as f:
    f['head'] = np.arange(10, dtype='<i8')
    f['src'] = np.arange(100, dtype='<i8')
    layout = h5py.VirtualLayout(shape=(100,), dtype='<i8')
    layout[:] = h5py.VirtualSource(f['src'])
    f.create_virtual_dataset('v', layout)
    if sys.argv[2] == 'shared':
        f['s'] = np.array([b'abc', b'defghijklmnop', b'q'], dtype=object).astype(h5py.string_dtype())
        f['s2'] = np.array([b'x' * 40], dtype=object).astype(h5py.string_dtype())
    f['tail'] = np.arange(10, dtype='<i8')
"#;

/// The strings `s` and `s2`.
const STRINGS: &str = r#"
import sys, json, h5py
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps([[x.decode() for x in f[k][()]] for k in ('s', 's2')]))
"#;

/// Deleting a virtual dataset removes its mapping list from the global
/// heap (`H5D__virtual_delete`): a collection holding nothing else is
/// freed whole (the twin where libhdf5 deletes it frees it too), one shared
/// with variable-length strings is compacted in place exactly as libhdf5
/// compacts it (same objects, counts, data and free space); the strings
/// still read, libhdf5 edits the file.
#[test]
fn deleting_a_virtual_dataset_removes_its_mapping() {
    const LIB_DEL: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    del f['v']
"#;
    for mode in ["alone", "shared"] {
        let path = scratch(&format!("vds_{mode}.h5"));
        let twin = scratch(&format!("vds_{mode}_lib.h5"));
        let Some(_) = run_py(GEN_VDS, &[path.to_str().expect("utf-8"), mode]) else {
            return;
        };
        std::fs::copy(&path, &twin).expect("copy");
        let gcol = vds_collection(&path);
        let (objs0, _) = collection(&path, gcol);
        let base = (all_free(&path, false), len(&path));
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "v").expect("delete v");
        ed.close().expect("close");
        run_py(LIB_DEL, &[twin.to_str().expect("utf-8")]).expect("libhdf5 deletes");
        let (ours, theirs) = (freed(&path, base), freed(&twin, base));
        eprintln!("vds {mode}: ours freed {ours}, libhdf5 {theirs}");
        if mode == "alone" {
            assert_eq!(objs0.len(), 1, "{objs0:?}");
            assert!(theirs >= 4096, "libhdf5 freed only {theirs}");
            assert!(ours >= 4096, "freed only {ours}");
        } else {
            assert!(objs0.len() >= 3, "{objs0:?}");
            let (ours_c, theirs_c) = (collection(&path, gcol), collection(&twin, gcol));
            assert_eq!(ours_c.0.len() + 1, objs0.len());
            assert_eq!(ours_c, theirs_c, "{mode}: collections differ");
            let out = run_py(STRINGS, &[path.to_str().expect("utf-8")]).expect("python");
            assert_eq!(
                out.trim(),
                r#"[["abc", "defghijklmnop", "q"], ["xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"]]"#
            );
        }
        assert_checks(&path, true);
        let v = &py_list(DUMP, &[&path])[0];
        assert!(v.get("v").is_none());
        assert_eq!(v["src"], ints(100, |i| i as f64));
        assert_eq!(v["tail"], ints(10, |i| i as f64));
        libhdf5_edits(&path);
    }
}

/// The address `a` is free in the file at `path`: inside a section its
/// managers list, or past its end.
fn is_free(path: &Path, a: u64) -> bool {
    a >= len(path)
        || fs_managers(path, false)
            .0
            .iter()
            .flat_map(|m| m.1.iter())
            .any(|&(o, n)| o <= a && a < o + n)
}

/// The fractal heap of the dense attributes of `obj`: (huge object
/// addresses, free-space manager header address if any).
fn attr_heap(path: &Path, obj: &str) -> (Vec<u64>, Option<u64>) {
    use h5fmt::codec::Cursor;
    use h5fmt::format::btree_v2::{decode_record, Record};
    use h5fmt::format::message::{kind, AttributeInfo};
    let f = h5fmt::File::open(path).expect("open");
    let ctx = f.ctx();
    let o = f.object(obj).expect("object");
    let m = o
        .header()
        .find(kind::ATTRIBUTE_INFO)
        .expect("dense attributes");
    let info = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx).expect("info");
    let heap =
        h5fmt::read::fractal_heap::FractalHeap::open(f.storage(), ctx, info.heap).expect("heap");
    let h = heap.header();
    let mut huge = Vec::new();
    if let Some(bt) = h.huge_btree.defined() {
        let t = h5fmt::read::btree_v2::BTreeV2::open(f.storage(), ctx, bt).expect("huge B-tree");
        for raw in t.records().expect("records") {
            if let Record::HugeIndirect { addr, .. } =
                decode_record(t.record_type(), &raw, ctx, 0, 0).expect("record")
            {
                huge.push(addr.0);
            }
        }
    }
    (huge, h.free_space_manager.defined().map(|a| a.0))
}

/// Deleting objects whose dense attribute heaps hold huge objects and a
/// free-space manager (left by libhdf5 deleting attributes) frees both:
/// their addresses are free space afterwards, as in a twin where libhdf5
/// deletes the same objects.
#[test]
fn deleting_objects_frees_huge_objects_and_heap_managers() {
    const GEN: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='latest', fs_strategy='fsm', fs_persist=True) as f:
    f['head'] = np.arange(10, dtype='<i8')
    d = f.create_dataset('d', data=np.arange(100, dtype='<i8'))
    for i in range(3):
        d.attrs[f'a{i}'] = np.arange(5) + i
    d.attrs['big'] = np.arange(20000, dtype='<f8')
    g = f.create_group('g')
    for i in range(20):
        g.attrs[f'x{i:02}'] = np.arange(50, dtype='<f8') + i
    f['tail'] = np.arange(10, dtype='<i8')
with h5py.File(sys.argv[1], 'r+') as f:
    for i in range(2, 18, 3):
        del f['g'].attrs[f'x{i:02}']
"#;
    const LIB_DEL: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    del f['d']
    del f['g']
"#;
    let path = scratch("heapfsm.h5");
    let twin = scratch("heapfsm_lib.h5");
    let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    std::fs::copy(&path, &twin).expect("copy");
    let (huge, _) = attr_heap(&path, "/d");
    assert_eq!(huge.len(), 1, "one huge object");
    let (_, fsm) = attr_heap(&path, "/g");
    let fsm = fsm.expect("libhdf5 left a heap free-space manager");
    for a in huge.iter().chain([&fsm]) {
        assert!(!is_free(&path, *a), "{a} free before");
    }
    let mut ed = FileEditor::open(&path).expect("open");
    ed.delete_link("/", "d").expect("delete d");
    ed.delete_link("/", "g").expect("delete g");
    ed.close().expect("close");
    run_py(LIB_DEL, &[twin.to_str().expect("utf-8")]).expect("libhdf5 deletes");
    for (p, who) in [(&twin, "libhdf5"), (&path, "ours")] {
        assert!(is_free(p, huge[0]), "{who}: the huge object is not free");
        assert!(is_free(p, fsm), "{who}: the heap's manager is not free");
    }
    assert_checks(&path, true);
    let v = &py_list(DUMP, &[&path])[0];
    assert!(v.get("d").is_none());
    assert_eq!(v["tail"], ints(10, |i| i as f64));
    libhdf5_edits(&path);
}

/// Every cut of a commit deleting a virtual dataset whose mapping shares
/// its global heap collection with strings (the collection is rewritten
/// in place last): libhdf5 reads the strings and `src`, and `v` either
/// still maps `src` or is gone; `h5 check` is clean; libhdf5 edits a few
/// cut files.
#[test]
fn virtual_dataset_deletes_are_crash_ordered() {
    const VIEW: &str = r#"
import sys, json, h5py
out = []
for p in sys.argv[1:]:
    with h5py.File(p, 'r') as f:
        out.append({'s': [[x.decode() for x in f[k][()]] for k in ('s', 's2')],
                    'v': f['v'][()].tolist() if 'v' in f else None,
                    'src': f['src'][()].tolist()})
print(json.dumps(out))
"#;
    let template = scratch("vds_cut_template.h5");
    let Some(_) = run_py(GEN_VDS, &[template.to_str().expect("utf-8"), "shared"]) else {
        return;
    };
    let (cuts, done) = cut_runs(
        &template,
        |n| scratch(&format!("vds_cut_{n}.h5")),
        200,
        "never completes",
        |ed| {
            ed.delete_link("/", "v")?;
            ed.flush()
        },
    );
    assert!(cuts.len() >= 2, "{} writes", cuts.len());
    let mut all: Vec<&Path> = cuts.iter().map(PathBuf::as_path).collect();
    all.push(&done);
    let args: Vec<&str> = all.iter().map(|p| p.to_str().expect("utf-8")).collect();
    let out = run_py(VIEW, &args).expect("python");
    let views: Vec<serde_json::Value> = serde_json::from_str(&out).expect("json");
    let src: Vec<i64> = (0..100).collect();
    let mut gone = 0;
    for (i, v) in views.iter().enumerate() {
        assert_eq!(
            v["s"],
            serde_json::json!([["abc", "defghijklmnop", "q"], ["x".repeat(40)]]),
            "cut {i}"
        );
        assert_eq!(v["src"], serde_json::json!(src), "cut {i}");
        if v["v"].is_null() {
            gone += 1;
        } else {
            assert_eq!(v["v"], serde_json::json!(src), "cut {i}");
        }
        assert_checks(all[i], all[i] == done.as_path());
    }
    assert!(views.last().is_some_and(|v| v["v"].is_null()));
    assert!(gone >= 2 && gone < views.len(), "{gone} of {}", views.len());
    for p in [all[0], all[all.len() / 2], all[all.len() - 2]] {
        let q = scratch(&format!(
            "vds_cut_edit_{}.h5",
            p.file_name().and_then(|n| n.to_str()).unwrap_or("x")
        ));
        std::fs::copy(p, &q).expect("copy");
        libhdf5_edits(&q);
    }
}

/// h5py writes (`earliest`: version 1 headers, no checksums to patch) a
/// root dataset `u` and a group `g` holding `z` then `h`, each one `<i4`
/// in contiguous storage; prints `u`'s and `z`'s storage addresses and
/// `u`'s header address.
const GEN_SHARED: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='earliest') as f:
    f['u'] = np.array([7], dtype='<i4')
    g = f.create_group('g')
    g['z'] = np.array([1], dtype='<i4')
    g['h'] = np.array([2], dtype='<i4')
    print(f['u'].id.get_offset(), f['g/z'].id.get_offset(), h5py.h5o.get_info(f['u'].id).addr)
"#;

/// libhdf5's view of each file: `u`'s value, whether `g` is there,
/// `new`'s values.
const READ_SHARED: &str = r#"
import sys, json, h5py
out = []
for p in sys.argv[1:]:
    with h5py.File(p, 'r') as f:
        out.append({'u': f['u'][()].tolist(), 'g': 'g' in f,
                    'new': f['new'][()].ravel().tolist() if 'new' in f else None})
print(json.dumps(out))
"#;

/// The file of [`GEN_SHARED`] made corrupt as a fuzzed file was (twice,
/// at `a` and `b`): `u`'s layout message points at `z`'s storage, so two
/// datasets claim the same four bytes (libhdf5 reads `u` as `z`'s value
/// and does not notice).
fn shared_storage_files(a: &Path, b: &Path) -> bool {
    let Some(out) = run_py(GEN_SHARED, &[a.to_str().expect("utf-8")]) else {
        return false;
    };
    let n: Vec<u64> = out
        .split_whitespace()
        .map(|t| t.parse().expect("number"))
        .collect();
    let (u, z, header) = (n[0], n[1], n[2] as usize);
    let mut bytes = std::fs::read(a).expect("read");
    // Contiguous layout message version 3: 3, class 1, address, size 4.
    let mut old = vec![3u8, 1];
    old.extend_from_slice(&u.to_le_bytes());
    old.extend_from_slice(&4u64.to_le_bytes());
    let at = header
        + bytes[header..]
            .windows(old.len())
            .position(|w| w == old)
            .expect("u's layout message");
    bytes[at + 2..at + 10].copy_from_slice(&z.to_le_bytes());
    std::fs::write(a, &bytes).expect("write");
    std::fs::write(b, &bytes).expect("write");
    let v = py_list(READ_SHARED, &[a]);
    assert_eq!(
        v[0]["u"],
        serde_json::json!([1]),
        "the patch makes u read z"
    );
    true
}

/// In a corrupt file where `u` and `g/z` share their storage, a box
/// written to `u` survives deleting `g` and creating a dataset that the
/// freed space would take: the deletion leaves storage an open dataset
/// uses (a leak). Opening `u` for writing after `g`'s deletion freed its
/// bytes is refused (`Corrupt`) before anything is written. Oracle:
/// libhdf5 reads the written value, the new dataset's fill and `g` gone.
#[test]
fn deleting_storage_an_open_dataset_shares_keeps_it() {
    let (written, refused) = (scratch("shared_storage.h5"), scratch("shared_refused.h5"));
    if !shared_storage_files(&written, &refused) {
        return;
    }
    let mut ed = FileEditor::open(&written).expect("open");
    ed.write_box("/u", &[0], &[1], &(-5i32).to_le_bytes())
        .expect("write u");
    ed.delete_link("/", "g").expect("delete g");
    ed.create_dataset(
        "/",
        "new",
        &NewDataset::new(Datatype::int_le(4, true), &[1]),
    )
    .expect("create");
    ed.close().expect("close");

    let mut ed = FileEditor::open(&refused).expect("open");
    ed.delete_link("/", "g").expect("delete g");
    let r = ed.write_box("/u", &[0], &[1], &(-5i32).to_le_bytes());
    ed.close().expect("close");

    let v = py_list(READ_SHARED, &[&written, &refused]);
    assert_eq!(
        v,
        [
            serde_json::json!({"u": [-5], "g": false, "new": [0]}),
            serde_json::json!({"u": [1], "g": false, "new": null}),
        ],
        "libhdf5's view after the edits"
    );
    let err = r.expect_err("u's storage was freed with g/z");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
}
