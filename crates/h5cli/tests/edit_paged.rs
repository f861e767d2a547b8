//! The editor on files with paged file-space management (h5py's
//! `fs_strategy='page'`, `fs_page_size`, with and without `fs_persist`):
//! it allocates as libhdf5 does there (small blocks inside pages of one
//! kind, large blocks on page boundaries, the end of file a multiple of the
//! page size). Oracle: h5py (libhdf5) reads every value, with and without
//! its page buffer (`page_buf_size=`), reports chunk and contiguous storage
//! addresses (`get_chunk_info`, `get_offset`) that must keep libhdf5's page
//! rules, then edits the file itself with the page buffer on (append,
//! create, delete) and reads it back; `h5 check` is clean. A cut test shows
//! every commit prefix reads as the old or the new state.

use h5fmt::write::edit::NewDataset;
use h5fmt::{Datatype, FileEditor};
use std::path::{Path, PathBuf};

mod common;
use common::{assert_checks, cut_runs, ints, len, run_lib};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_paged", name)
}

/// h5py writes a paged file: `a` (1000 i8, contiguous), `small` (20 i8),
/// `ch` (4000 f8 in chunks of 500), `tiny` (300 i4 in chunks of 30),
/// attribute `x`, group `g` (`z`), group `big` (12 datasets: dense links
/// under `latest`) and `gone` (700 i8); then deletes `small`.
const GEN: &str = r#"
import sys, h5py, numpy as np
path, persist, ps, libver = sys.argv[1], sys.argv[2] == '1', int(sys.argv[3]), sys.argv[4]
with h5py.File(path, 'w', libver=(libver, 'latest'), fs_strategy='page', fs_page_size=ps,
               fs_persist=persist) as f:
    f['a'] = np.arange(1000, dtype='<i8')
    f['small'] = np.arange(20, dtype='<i8')
    f.create_dataset('ch', data=np.arange(4000, dtype='<f8') * 0.5, chunks=(500,), maxshape=(None,))
    f.create_dataset('tiny', data=np.arange(300, dtype='<i4'), chunks=(30,), maxshape=(None,))
    f.attrs['x'] = 1
    f.create_group('g')['z'] = np.arange(5, dtype='<i8')
    big = f.create_group('big')
    for i in range(12):
        big[f'd{i:02}'] = np.arange(10, dtype='<i8') + i
    f['gone'] = np.arange(700, dtype='<i8')
with h5py.File(path, 'r+') as f:
    del f['small']
"#;

/// Every dataset's values and every attribute, read with the page buffer
/// on (`page_buf_size`) and off, which must agree; plus the storage
/// extents of every dataset (contiguous offset and size, or each chunk's
/// offset and size) and the file's page size.
const READ: &str = r#"
import sys, json, h5py, numpy as np
path = sys.argv[1]
def read(**kw):
    d, st = {}, []
    with h5py.File(path, 'r', **kw) as f:
        ps = f.id.get_create_plist().get_file_space_page_size()
        def attrs(name, obj):
            for k, v in obj.attrs.items():
                v = v.decode() if isinstance(v, bytes) else v
                d['@' + name + '/' + k] = v if isinstance(v, str) else np.asarray(v, dtype='f8').ravel().tolist()
        attrs('', f)
        def visit(name, obj):
            attrs(name, obj)
            if isinstance(obj, h5py.Dataset):
                d[name] = np.asarray(obj[()], dtype='f8').ravel().tolist()
                if obj.chunks is None:
                    off = obj.id.get_offset()
                    if off is not None:
                        st.append([name, off, obj.id.get_storage_size()])
                else:
                    for i in range(obj.id.get_num_chunks()):
                        c = obj.id.get_chunk_info(i)
                        st.append([name, c.byte_offset, c.size])
        f.visititems(visit)
    return d, st, ps
d1, st, ps = read(page_buf_size=4 * 65536)
d2, _, _ = read()
assert d1 == d2, 'page buffer changes what is read'
print(json.dumps({'values': d1, 'storage': st, 'page': ps}))
"#;

/// libhdf5 edits the file with its page buffer on: appends to `ch`,
/// creates `lib` (3000 i8) and `libch` (chunked), deletes `a`, adds an
/// attribute; then reads it back with and without the page buffer.
const LIBHDF5_EDIT: &str = r#"
import sys, h5py, numpy as np
p = sys.argv[1]
with h5py.File(p, 'r+', page_buf_size=4 * 65536) as f:
    d = f['ch']
    n = d.shape[0]
    d.resize((n + 700,))
    d[n:] = np.arange(700) + 0.25
    f['lib'] = np.arange(3000, dtype='<i8') * 3
    f.create_dataset('libch', data=np.arange(900, dtype='<i4'), chunks=(100,), maxshape=(None,))
    del f['a']
    f.attrs['lib_attr'] = np.arange(7)
for kw in ({'page_buf_size': 4 * 65536}, {}):
    with h5py.File(p, 'r', **kw) as f:
        assert 'a' not in f
        assert (f['lib'][()] == np.arange(3000) * 3).all()
        assert (f['libch'][()] == np.arange(900)).all()
        assert (f['ch'][-700:] == np.arange(700) + 0.25).all()
        assert (f.attrs['lib_attr'] == np.arange(7)).all()
        print(f['ch'].shape[0])
"#;

/// libhdf5's view of the file (values, storage extents, page size).
fn read(path: &Path) -> serde_json::Value {
    let s = run_lib(READ, &[path.to_str().expect("utf-8")]).expect("python");
    serde_json::from_str(&s).expect("json")
}

/// The storage libhdf5 reports keeps the page rules: a block of a page or
/// more starts on a page boundary, a smaller one stays inside one page; the
/// end of file (superblock and file length) is a multiple of the page size.
fn assert_paged(path: &Path, v: &serde_json::Value, what: &str) {
    let p = v["page"].as_u64().expect("page size");
    for s in v["storage"].as_array().expect("storage") {
        let (name, off, size) = (
            s[0].as_str().expect("name"),
            s[1].as_u64().expect("offset"),
            s[2].as_u64().expect("size"),
        );
        if size == 0 {
            continue;
        }
        if size >= p {
            assert_eq!(
                off % p,
                0,
                "{what}: {name} at {off} ({size} bytes) not page-aligned"
            );
        } else {
            assert_eq!(
                off / p,
                (off + size - 1) / p,
                "{what}: {name} at {off} ({size} bytes) crosses a page boundary"
            );
        }
    }
    let eof = h5fmt::File::open(path)
        .expect("open")
        .superblock()
        .eof
        .get();
    assert_eq!(eof % p, 0, "{what}: end of file {eof} not page-aligned");
    assert_eq!(len(path), eof, "{what}: file length and end of file");
}

/// The base content (after `GEN`), `ch` holding `ch_len` values.
fn expect_base(v: &serde_json::Value, ch_len: usize, what: &str) {
    let d = &v["values"];
    assert_eq!(d["ch"], ints(ch_len, |i| i as f64 * 0.5), "{what}: ch");
    assert_eq!(d["big/d07"], ints(10, |i| i as f64 + 7.0), "{what}: big");
    assert_eq!(d["@/x"], serde_json::json!([1.0]), "{what}: x");
}

/// Our editor's session on a GEN file: append, create datasets, a group
/// and attributes (one variable-length: a global heap collection), delete
/// two objects, commit.
fn edit(ed: &mut FileEditor) -> h5fmt::Result<()> {
    let more: Vec<f64> = (4000..5000).map(|i| i as f64 * 0.5).collect();
    ed.append("/ch", &more)?;
    let t: Vec<i32> = (300..400).collect();
    ed.append("/tiny", &t)?;
    let vals: Vec<i64> = (0..2000).map(|i| i * 5 - 3).collect();
    let spec = NewDataset::new(Datatype::int_le(8, true), &[2000]);
    ed.create_dataset("/", "new", &spec)?;
    ed.write("/new", &[0], &[2000], &vals)?;
    let spec = NewDataset::new(Datatype::int_le(8, true), &[1000])
        .chunks(&[100])
        .maxshape(&[None]);
    ed.create_dataset("/", "newch", &spec)?;
    let v2: Vec<i64> = (0..1000).map(|i| 1000 - i).collect();
    ed.write("/newch", &[0], &[1000], &v2)?;
    ed.create_group("/", "ng")?;
    let spec = NewDataset::new(Datatype::int_le(8, true), &[50]);
    ed.create_dataset("/ng", "d", &spec)?;
    let v3: Vec<i64> = (0..50).map(|i| i * i).collect();
    ed.write("/ng/d", &[0], &[50], &v3)?;
    ed.set_attr("/", "y", vec![1.5f64, 2.5, 3.5])?;
    ed.set_attr("/ch", "note", "paged file")?;
    ed.delete_link("/", "gone")?;
    ed.delete_link("/", "g")?;
    ed.flush()
}

fn expect_edited(v: &serde_json::Value, what: &str) {
    let d = &v["values"];
    assert_eq!(d["tiny"], ints(400, |i| i as f64), "{what}: tiny");
    assert_eq!(
        d["new"],
        ints(2000, |i| i as f64 * 5.0 - 3.0),
        "{what}: new"
    );
    assert_eq!(
        d["newch"],
        ints(1000, |i| 1000.0 - i as f64),
        "{what}: newch"
    );
    assert_eq!(d["ng/d"], ints(50, |i| (i * i) as f64), "{what}: ng/d");
    assert_eq!(d["@/y"], serde_json::json!([1.5, 2.5, 3.5]), "{what}: y");
    assert_eq!(d["@ch/note"], "paged file", "{what}: note");
    assert!(
        d.get("gone").is_none() && d.get("g/z").is_none(),
        "{what}: deleted"
    );
}

fn gen(path: &Path, persist: bool, page: u64, libver: &str) -> Option<()> {
    let (p, ps) = (if persist { "1" } else { "0" }, page.to_string());
    run_lib(GEN, &[path.to_str().expect("utf-8"), p, &ps, libver]).map(|_| ())
}

/// Every combination of persistence, page size and library version: our
/// edits read back through libhdf5 (page buffer on and off), keep the page
/// rules, pass `h5 check`; libhdf5 then edits the file with its page
/// buffer, and our editor edits it once more.
#[test]
fn editor_edits_paged_files() {
    for persist in [false, true] {
        for page in [512u64, 4096] {
            for libver in ["earliest", "latest"] {
                let what = format!("persist={persist} page={page} {libver}");
                let path = scratch(&format!("e_{persist}_{page}_{libver}.h5"));
                if gen(&path, persist, page, libver).is_none() {
                    return;
                }
                let v0 = read(&path);
                assert_eq!(v0["page"].as_u64(), Some(page), "{what}");
                assert_paged(&path, &v0, &format!("{what} (h5py)"));
                expect_base(&v0, 4000, &what);
                assert_eq!(v0["values"]["g/z"], ints(5, |i| i as f64), "{what}: g/z");
                let mut ed = FileEditor::open(&path).expect("open");
                edit(&mut ed).expect("edit");
                ed.close().expect("close");
                let v = read(&path);
                expect_base(&v, 5000, &what);
                expect_edited(&v, &what);
                assert_paged(&path, &v, &what);
                assert_checks(&path, true);
                let out = run_lib(LIBHDF5_EDIT, &[path.to_str().expect("utf-8")]).expect("python");
                assert!(out.lines().all(|l| l == "5700"), "{what}: {out}");
                assert_checks(&path, true);
                let v = read(&path);
                assert_paged(&path, &v, &format!("{what} (libhdf5 edit)"));
                expect_edited(&v, &format!("{what} (libhdf5 edit)"));
                expect_edited_after(&v, &format!("{what} (libhdf5 edit)"));
                // A second session of ours on libhdf5's result.
                let mut ed = FileEditor::open(&path).expect("reopen");
                ed.append("/libch", &(900..1000).collect::<Vec<i32>>())
                    .expect("append");
                ed.delete_link("/", "new").expect("delete");
                ed.close().expect("close");
                let v = read(&path);
                assert_eq!(v["values"]["libch"], ints(1000, |i| i as f64), "{what}");
                assert!(v["values"].get("new").is_none(), "{what}");
                expect_edited_after(&v, &what);
                assert_paged(&path, &v, &format!("{what} (second session)"));
                assert_checks(&path, true);
            }
        }
    }
}

fn expect_edited_after(v: &serde_json::Value, what: &str) {
    let d = &v["values"];
    assert_eq!(d["lib"], ints(3000, |i| i as f64 * 3.0), "{what}: lib");
    assert_eq!(
        d["newch"],
        ints(1000, |i| 1000.0 - i as f64),
        "{what}: newch"
    );
    let ch = d["ch"].as_array().expect("ch");
    assert_eq!(ch.len(), 5700, "{what}: ch");
    assert_eq!(ch.get(4999), Some(&serde_json::json!(2499.5)), "{what}: ch");
    assert_eq!(ch.get(5699), Some(&serde_json::json!(699.25)), "{what}: ch");
    assert_eq!(d["tiny"], ints(400, |i| i as f64), "{what}: tiny");
    assert_eq!(d["ng/d"], ints(50, |i| (i * i) as f64), "{what}: ng/d");
    assert_eq!(d["@/y"], serde_json::json!([1.5, 2.5, 3.5]), "{what}: y");
    assert_eq!(d["@ch/note"], "paged file", "{what}: note");
    assert_eq!(d["big/d11"], ints(10, |i| i as f64 + 11.0), "{what}: big");
    assert!(d.get("a").is_none(), "{what}: a");
}

/// Crash ordering on a paged file: cut after every write of the session,
/// libhdf5 reads each cut (page buffer on and off) with every object in its
/// old or new state, `h5 check` finds no error, and libhdf5 can edit the
/// cut files with its page buffer.
#[test]
fn paged_commits_are_crash_ordered() {
    let template = scratch("cut_template.h5");
    // Symbol-table groups (`earliest`): under `latest` the root turns
    // dense in this session, and in the intermediate states of that switch
    // our checker (not libhdf5) sees links twice (see the editor's module
    // documentation).
    if gen(&template, true, 512, "earliest").is_none() {
        return;
    }
    let (cuts, done) = cut_runs(
        &template,
        |n| scratch(&format!("cut_{n}.h5")),
        2000,
        "never completes",
        edit,
    );
    let n = cuts.len();
    assert!(n >= 3, "too few writes: {n}");
    let mut all: Vec<&Path> = cuts.iter().map(PathBuf::as_path).collect();
    all.push(&done);
    let (mut old, mut new) = (0, 0);
    for (i, p) in all.iter().enumerate() {
        let v = read(p);
        let n_ch = v["values"]["ch"].as_array().map_or(0, Vec::len);
        assert!(n_ch == 4000 || n_ch == 5000, "cut {i}: {n_ch} elements");
        expect_base(&v, n_ch, &format!("cut {i}"));
        if *p == done.as_path() {
            expect_edited(&v, "done");
            new += 1;
        } else if n_ch == 4000 && v["values"].get("new").is_none() {
            old += 1;
        }
        assert_checks(p, *p == done.as_path());
    }
    assert!(old > 0 && new > 0, "{old} old, {new} new");
    for i in [0, n / 3, n / 2, n.saturating_sub(1), n] {
        let p = all[i.min(all.len() - 1)];
        let q = scratch(&format!("cut_edit_{i}.h5"));
        std::fs::copy(p, &q).expect("copy");
        run_lib(LIBHDF5_EDIT, &[q.to_str().expect("utf-8")]).expect("python");
        assert_checks(&q, true);
    }
}

/// Space freed in a session is reused by the same session on page terms:
/// deleting `gone` (5600 bytes of raw data: a large block) and then
/// creating a dataset of that size puts it at `gone`'s page-aligned
/// address, and the file does not grow; libhdf5 reads and edits it.
#[test]
fn paged_freed_space_is_reused() {
    for persist in [false, true] {
        let path = scratch(&format!("reuse_{persist}.h5"));
        if gen(&path, persist, 512, "latest").is_none() {
            return;
        }
        let v0 = read(&path);
        let gone = v0["storage"]
            .as_array()
            .expect("storage")
            .iter()
            .find(|s| s[0] == "gone")
            .and_then(|s| s[1].as_u64())
            .expect("gone's offset");
        let size0 = len(&path);
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "gone").expect("delete");
        ed.flush().expect("flush");
        let vals: Vec<i64> = (0..700).map(|i| 3 * i + 1).collect();
        let spec = NewDataset::new(Datatype::int_le(8, true), &[700]);
        ed.create_dataset("/", "reuse", &spec).expect("create");
        ed.write("/reuse", &[0], &[700], &vals).expect("write");
        ed.close().expect("close");
        let v = read(&path);
        let at = v["storage"]
            .as_array()
            .expect("storage")
            .iter()
            .find(|s| s[0] == "reuse")
            .and_then(|s| s[1].as_u64());
        assert_eq!(at, Some(gone), "persist={persist}: not in gone's space");
        assert!(len(&path) <= size0 + 2 * 512, "persist={persist}: grew");
        assert_eq!(v["values"]["reuse"], ints(700, |i| 3.0 * i as f64 + 1.0));
        expect_base(&v, 4000, "reuse");
        assert_paged(&path, &v, "reuse");
        assert_checks(&path, true);
        run_lib(LIBHDF5_EDIT, &[path.to_str().expect("utf-8")]).expect("python");
        assert_checks(&path, true);
        let v = read(&path);
        assert_eq!(v["values"]["reuse"], ints(700, |i| 3.0 * i as f64 + 1.0));
    }
}

/// libhdf5 alone (no editor): a paged file with persistent free space and
/// 1 KiB pages, 50 pairs of datasets a little over a page each; 24 of the
/// first of each pair deleted (24 large free sections of distinct sizes);
/// then, in a process of its own killed after 10 s, libhdf5 opens it
/// read-write and creates a dataset of 100 i8. Prints {"hung", "closing",
/// "rc"}.
const LIB_LOOPS: &str = r#"
import sys, json, subprocess, h5py, numpy as np
path = sys.argv[1]
fcpl = h5py.h5p.create(h5py.h5p.FILE_CREATE)
fcpl.set_file_space_strategy(h5py.h5f.FSPACE_STRATEGY_PAGE, True, 1)
fcpl.set_file_space_page_size(1024)
with h5py.File(h5py.h5f.create(path.encode(), h5py.h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    for i in range(50):
        f.create_dataset('d%d' % i, data=np.arange(128 + 3 + 5 * i, dtype='<i8'))
        f.create_dataset('s%d' % i, data=np.arange(129, dtype='<i8'))
with h5py.File(path, 'r+') as f:
    for i in range(24):
        del f['d%d' % i]
EDIT = """
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    f.create_dataset('lib', data=np.arange(100, dtype='<i8'))
    print('closing', flush=True)
"""
try:
    p = subprocess.run([sys.executable, '-c', EDIT, path], capture_output=True, timeout=10)
    print(json.dumps({'hung': False, 'closing': b'closing' in p.stdout, 'rc': p.returncode}))
except subprocess.TimeoutExpired as e:
    said = e.stdout or b''
    if isinstance(said, str):
        said = said.encode()
    print(json.dumps({'hung': True, 'closing': b'closing' in said, 'rc': None}))
"#;

/// The reason the kill test (`edit.rs`, `libhdf5_hang`) may skip its
/// libhdf5 edit of a paged file with persistent free space: libhdf5 2.0
/// loops forever closing such files that it wrote alone (HDFGroup/hdf5#5121:
/// settling its managers, the large-section manager's section list needs
/// about a page and is allocated and freed in a cycle, now as a small
/// block, now as a large one). Should a libhdf5 release fix it, this test
/// fails: the kill test's skip should then go.
#[test]
fn libhdf5_loops_closing_its_own_paged_file() {
    let path = scratch("libhdf5_loops.h5");
    let Some(out) = run_lib(LIB_LOOPS, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    let v: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(
        v,
        serde_json::json!({"hung": true, "closing": true, "rc": null}),
        "libhdf5 no longer loops closing its own paged file: the kill test's skip \
         (edit.rs, libhdf5_hang) can go"
    );
}
