//! Attributes whose messages are shared (SOHM: the superblock extension's
//! shared message table, attribute messages kept once in the SOHM heap and
//! counted by a list or v2 B-tree index), edited in place by `FileEditor`.
//!
//! libhdf5 (through ctypes: h5py does not expose the file creation
//! property list's shared-message settings) makes files whose attributes
//! are all shared: three groups with compact attributes, one of them equal
//! on all three (one heap object, count 3), and two groups with twelve
//! dense attributes equal between them (count 2 each), under a list index,
//! a B-tree index and a list turning B-tree early. Our editor overwrites,
//! deletes and adds attributes (compact, dense, and conversions both ways
//! carrying shared ones); libhdf5 then reads every object's attributes with
//! the expected values, edits the file itself (adding attributes equal to
//! ones whose record we removed or decremented, deleting shared ones), reads
//! again, and finally deletes every attribute: the reference counts are
//! right exactly when libhdf5 then finds every record (no error: never too
//! low) and the index is gone with its heap (H5Fget_info2: no leftover
//! record: never too high). `h5 check` is clean throughout. Crash cuts of
//! shared deletes read as before or after, and libhdf5 can still delete
//! every attribute from each cut file (counts never too low).

use h5fmt::FileEditor;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

mod common;
use common::{assert_checks, cut_runs, run_py};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_sohm", name)
}

const LIB: &str = r#"
import ctypes, glob, sys, json, h5py, numpy as np
from h5py import h5f, h5p
lib = ctypes.CDLL(glob.glob(h5py.__path__[0] + "/../h5py.libs/libhdf5-*.so*")[0])
i64 = ctypes.c_int64
def val(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, np.ndarray):
        return [int(v.size), float(np.asarray(v, dtype='f8').sum())]
    if isinstance(v, (np.integer,)): return int(v)
    if isinstance(v, (np.floating,)): return float(v)
    return v
def view(f):
    out = {}
    def one(name, obj):
        out['/' + name] = {k: val(obj.attrs[k]) for k in obj.attrs}
    one('', f)
    f.visititems(one)
    return out
class IH(ctypes.Structure):
    _fields_ = [('index_size', ctypes.c_uint64), ('heap_size', ctypes.c_uint64)]
class Part(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint), ('a', ctypes.c_uint64), ('b', ctypes.c_uint64)]
class Sohm(ctypes.Structure):
    _fields_ = [('version', ctypes.c_uint), ('hdr_size', ctypes.c_uint64), ('msgs', IH)]
class Info(ctypes.Structure):
    _fields_ = [('sb', Part), ('free', Part), ('sohm', Sohm)]
def sohm_sizes(f):
    info = Info()
    assert lib.H5Fget_info2(i64(f.id.id), ctypes.byref(info)) >= 0
    return [info.sohm.msgs.index_size, info.sohm.msgs.heap_size]
"#;

/// argv: path, list maximum, B-tree minimum.
const GEN: &str = r#"
path, ml, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fcpl = h5p.create(h5p.FILE_CREATE)
assert lib.H5Pset_shared_mesg_nindexes(i64(fcpl.id), ctypes.c_uint(1)) >= 0
assert lib.H5Pset_shared_mesg_index(i64(fcpl.id), ctypes.c_uint(0), ctypes.c_uint(1 << 12), ctypes.c_uint(0)) >= 0
assert lib.H5Pset_shared_mesg_phase_change(i64(fcpl.id), ctypes.c_uint(ml), ctypes.c_uint(mb)) >= 0
with h5py.File(h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    for g in 'abc':
        grp = f.create_group(g)
        grp.attrs['shared'] = np.arange(10, dtype='i4')
        grp.attrs['uniq'] = np.arange(10, dtype='i4') + ord(g)
        grp.attrs['s'] = b'hello there'
    for d in ['dense', 'dense2']:
        grp = f.create_group(d)
        for i in range(12):
            grp.attrs[f'x{i:02}'] = np.arange(8, dtype='f8') + i
    print(json.dumps(sohm_sizes(f)))
"#;

const VIEW: &str = r#"
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps(view(f)))
"#;

/// libhdf5 edits the file: attributes equal to shared ones we dropped or
/// decremented are added (libhdf5 must find or re-create their records),
/// shared ones deleted; prints its view after.
const LIB_EDIT: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    f['b'].attrs['uniq'] = np.arange(10, dtype='i4') + ord('b')
    f['a'].attrs['again'] = np.arange(10, dtype='i4')
    del f['c'].attrs['shared']
    f['dense'].attrs['x03'] = np.arange(8, dtype='f8') + 3
    f['dense2'].attrs['y'] = np.arange(8, dtype='f8') + 8
    del f['dense'].attrs['x08']
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps(view(f)))
"#;

/// libhdf5 deletes every attribute of every object, then reports the SOHM
/// index and heap sizes. The heap size is 0 exactly when libhdf5 deleted
/// the index with its heap, which it does when its last record goes
/// (`H5SM__delete_index`); an empty list index still reports its block size
/// (`H5SM_ih_size` counts `list_size` for list indexes).
const LIB_DELETE_ALL: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    objs = [f]
    f.visititems(lambda n, o: objs.append(o))
    for o in objs:
        for k in list(o.attrs):
            del o.attrs[k]
with h5py.File(sys.argv[1], 'r') as f:
    assert view(f) == {k: {} for k in view(f)}
    print(json.dumps(sohm_sizes(f)))
"#;

const SIZES: &str = r#"
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps(sohm_sizes(f)))
"#;

fn py(script: &str, args: &[&str]) -> Option<Value> {
    let full = format!("{LIB}\n{script}");
    let out = run_py(&full, args)?;
    Some(serde_json::from_str(&out).expect("json"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

fn arr(n: u64, sum: f64) -> Value {
    json!([n, sum])
}

/// `[size, sum]` of `np.arange(n) + k`.
fn arange(n: u64, k: f64) -> Value {
    arr(n, (0..n).map(|i| i as f64 + k).sum())
}

fn set(model: &mut Value, obj: &str, name: &str, v: Value) {
    model[obj][name] = v;
}

fn del(model: &mut Value, obj: &str, name: &str) {
    model[obj]
        .as_object_mut()
        .expect("object")
        .remove(name)
        .expect("attribute in the model");
}

/// Our edits (two sessions) applied to the file and to the model.
fn our_edits(path: &Path, model: &mut Value) {
    let mut ed = FileEditor::open(path).expect("open");
    // Compact: overwrite the message shared by a, b, c (count 3 -> 2),
    // delete b's own one (count 1 -> 0: record removed), add a new one.
    ed.set_attr("/a", "shared", [100i32; 10])
        .expect("overwrite");
    set(model, "/a", "shared", arr(10, 1000.0));
    ed.delete_attr("/b", "uniq").expect("delete");
    del(model, "/b", "uniq");
    ed.set_attr("/a", "new", [1i32, 2, 3]).expect("new");
    set(model, "/a", "new", arr(3, 6.0));
    // Dense: delete and overwrite shared records (count 2 -> 1).
    ed.delete_attr("/dense", "x03").expect("dense delete");
    del(model, "/dense", "x03");
    ed.set_attr("/dense", "x04", [0.5f64; 8])
        .expect("dense overwrite");
    set(model, "/dense", "x04", arr(8, 4.0));
    // Dense -> compact below min_dense: the remaining shared records
    // become shared header messages.
    for i in 0..7 {
        let n = format!("x{i:02}");
        ed.delete_attr("/dense2", &n).expect("dense2 delete");
        del(model, "/dense2", &n);
    }
    // Compact -> dense past max_compact, carrying c's shared messages.
    for i in 0..6 {
        let n = format!("n{i}");
        ed.set_attr("/c", &n, i as i64).expect("c add");
        set(model, "/c", &n, json!(i));
    }
    ed.flush().expect("flush");
    // Name collisions see the shared attributes.
    ed.set_attr("/b", "s", "replaced").expect("overwrite s");
    set(model, "/b", "s", json!("replaced"));
    ed.close().expect("close");
    // Second session: the shared messages and records our commit wrote.
    let mut ed = FileEditor::open(path).expect("reopen");
    ed.delete_attr("/dense2", "x07")
        .expect("delete compact shared we wrote");
    del(model, "/dense2", "x07");
    ed.delete_attr("/c", "uniq")
        .expect("delete dense shared record we wrote");
    del(model, "/c", "uniq");
    ed.set_attr("/dense2", "x08", [2.0f64; 8])
        .expect("overwrite");
    set(model, "/dense2", "x08", arr(8, 16.0));
    assert!(ed.delete_attr("/b", "uniq").is_err(), "deleted twice");
    ed.close().expect("close");
}

fn initial_model() -> Value {
    let mut m = json!({"/": {}});
    for (g, k) in [("/a", 97.0), ("/b", 98.0), ("/c", 99.0)] {
        m[g] = json!({"shared": arange(10, 0.0), "uniq": arange(10, k), "s": "hello there"});
    }
    for d in ["/dense", "/dense2"] {
        let mut o = json!({});
        for i in 0..12 {
            o[format!("x{i:02}")] = arange(8, f64::from(i));
        }
        m[d] = o;
    }
    m
}

#[test]
fn shared_attributes_edited_then_libhdf5() {
    // (name, list maximum, B-tree minimum)
    for (mode, ml, mb) in [("list", 50, 40), ("btree", 0, 0), ("early", 4, 2)] {
        let path = scratch(&format!("{mode}.h5"));
        let Some(sizes) = py(GEN, &[s(&path), &ml.to_string(), &mb.to_string()]) else {
            return;
        };
        assert_ne!(sizes, json!([0, 0]), "{mode}: libhdf5 shared nothing");
        let mut model = initial_model();
        assert_eq!(
            py(VIEW, &[s(&path)]).expect("view"),
            model,
            "{mode}: libhdf5's file"
        );
        let f = h5fmt::File::open(&path).expect("our reader");
        assert_eq!(
            f.group("/dense").expect("g").attrs().expect("attrs").len(),
            12
        );
        drop(f);
        our_edits(&path, &mut model);
        assert_eq!(
            py(VIEW, &[s(&path)]).expect("view"),
            model,
            "{mode}: after our edits"
        );
        assert_checks(&path, false);
        // libhdf5 edits the file itself.
        let edited = py(LIB_EDIT, &[s(&path)]).expect("libhdf5 edit");
        set(&mut model, "/b", "uniq", arange(10, 98.0));
        set(&mut model, "/a", "again", arange(10, 0.0));
        del(&mut model, "/c", "shared");
        set(&mut model, "/dense", "x03", arange(8, 3.0));
        set(&mut model, "/dense2", "y", arange(8, 8.0));
        del(&mut model, "/dense", "x08");
        assert_eq!(edited, model, "{mode}: after libhdf5's edits");
        assert_checks(&path, false);
        // Exact counts: deleting everything empties the index.
        assert_eq!(
            py(LIB_DELETE_ALL, &[s(&path)]).expect("delete all")[1],
            json!(0),
            "{mode}: SOHM heap left after every attribute is gone"
        );
        assert_checks(&path, false);
    }
}

/// A B-tree index losing records until it is below its B-tree minimum
/// (becomes a list) and then empty (deleted with its heap, as libhdf5
/// does); libhdf5 then shares new attributes again.
#[test]
fn btree_index_shrinks_to_list_then_empty() {
    const GEN_SMALL: &str = r#"
path = sys.argv[1]
fcpl = h5p.create(h5p.FILE_CREATE)
assert lib.H5Pset_shared_mesg_nindexes(i64(fcpl.id), ctypes.c_uint(1)) >= 0
assert lib.H5Pset_shared_mesg_index(i64(fcpl.id), ctypes.c_uint(0), ctypes.c_uint(1 << 12), ctypes.c_uint(0)) >= 0
assert lib.H5Pset_shared_mesg_phase_change(i64(fcpl.id), ctypes.c_uint(3), ctypes.c_uint(3)) >= 0
with h5py.File(h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    for g in 'ab':
        f.create_group(g).attrs['same'] = np.arange(5, dtype='i8')
    for i in range(4):
        f['a'].attrs[f'u{i}'] = np.arange(5, dtype='i8') + 10 * i + 10
    print(json.dumps(sohm_sizes(f)))
"#;
    const LIB_ADD: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    f['a'].attrs['back'] = np.arange(5, dtype='i8')
    f['b'].attrs['back'] = np.arange(5, dtype='i8')
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps([view(f), sohm_sizes(f)]))
"#;
    let path = scratch("small.h5");
    let Some(sizes) = py(GEN_SMALL, &[s(&path)]) else {
        return;
    };
    assert_ne!(sizes, json!([0, 0]));
    let btree_size = py(SIZES, &[s(&path)]).expect("sizes")[0].clone();
    assert_ne!(btree_size, json!(8 + 3 * 17), "libhdf5 made a B-tree");
    let mut ed = FileEditor::open(&path).expect("open");
    // 5 records: B-tree. Down to 2 (< 3): a list.
    for i in 0..3 {
        ed.delete_attr("/a", &format!("u{i}")).expect("delete");
    }
    ed.close().expect("close");
    let v = py(VIEW, &[s(&path)]).expect("view");
    assert_eq!(
        v["/a"],
        json!({"same": arange(5, 0.0), "u3": arange(5, 40.0)})
    );
    // libhdf5 sizes a list index by its block: signature, 3 slots of 17
    // bytes, checksum (a B-tree would report its header and node).
    assert_eq!(py(SIZES, &[s(&path)]).expect("sizes")[0], json!(8 + 3 * 17));
    assert_checks(&path, false);
    // Everything: the index and its heap go.
    let mut ed = FileEditor::open(&path).expect("open");
    ed.delete_attr("/a", "u3").expect("delete");
    ed.delete_attr("/a", "same").expect("delete");
    ed.delete_attr("/b", "same").expect("delete");
    ed.close().expect("close");
    let v = py(VIEW, &[s(&path)]).expect("view");
    assert_eq!(v, json!({"/": {}, "/a": {}, "/b": {}}));
    assert_checks(&path, false);
    let out = py(LIB_ADD, &[s(&path)]).expect("libhdf5 add");
    assert_eq!(out[0]["/b"], json!({"back": arange(5, 0.0)}));
    assert_ne!(out[1], json!([0, 0]), "libhdf5 shares again");
    assert_eq!(
        py(LIB_DELETE_ALL, &[s(&path)]).expect("delete all")[1],
        json!(0)
    );
}

/// Every cut of a commit deleting shared attributes of one object (a count
/// decremented and a record removed in one header; a dense record
/// decremented), in a list and in a B-tree index, reads as before or after,
/// and libhdf5 can delete every attribute from it (counts are never too
/// low).
#[test]
fn shared_deletes_are_crash_ordered() {
    type Op = fn(&mut FileEditor) -> h5fmt::Result<()>;
    let ops: [(&str, Op); 2] = [
        ("b", |ed| {
            ed.delete_attr("/b", "shared")?; // count 3 -> 2
            ed.delete_attr("/b", "uniq")?; // count 1 -> 0
            ed.flush()
        }),
        ("dense", |ed| {
            ed.delete_attr("/dense", "x01")?; // dense, count 2 -> 1
            ed.flush()
        }),
    ];
    for (mode, ml, mb) in [("list", 50, 40), ("btree", 0, 0)] {
        let template = scratch(&format!("crash_{mode}.h5"));
        let Some(_) = py(GEN, &[s(&template), &ml.to_string(), &mb.to_string()]) else {
            return;
        };
        let before = py(VIEW, &[s(&template)]).expect("view");
        for (what, op) in ops {
            let (cuts, done) = cut_runs(
                &template,
                |n| scratch(&format!("crash_{mode}_{what}_{n}.h5")),
                1000,
                "never completes",
                op,
            );
            let n = cuts.len();
            let after = py(VIEW, &[s(&done)]).expect("view");
            assert_ne!(before, after);
            let (mut saw_before, mut saw_after) = (0, 0);
            for p in &cuts {
                let v = py(VIEW, &[s(p)]).expect("view");
                if v == before {
                    saw_before += 1;
                } else if v == after {
                    saw_after += 1;
                } else {
                    panic!("{mode} {what}: {} reads as {v}", p.display());
                }
                assert_checks(p, false);
                // Never too low: libhdf5 finds a record for every reference.
                py(LIB_DELETE_ALL, &[s(p)]).expect("libhdf5 deletes all");
            }
            assert!(
                saw_before > 0 && saw_after > 0,
                "{mode} {what}: {saw_before} before, {saw_after} after"
            );
            assert_checks(&done, false);
            assert_eq!(
                py(LIB_DELETE_ALL, &[s(&done)]).expect("delete all")[1],
                json!(0),
                "{mode} {what}: exact counts after the full commit"
            );
            println!("{mode} {what}: {n} writes, {saw_before} cuts before, {saw_after} after");
        }
    }
}

/// A SOHM index that does not validate (a record list whose checksum is
/// wrong) refuses the edit before anything is staged; the file is left
/// byte for byte as it was.
#[test]
fn corrupt_index_refuses_and_leaves_the_file() {
    let path = scratch("corrupt.h5");
    let Some(_) = py(GEN, &[s(&path), "50", "40"]) else {
        return;
    };
    let mut bytes = std::fs::read(&path).expect("read");
    let at = bytes
        .windows(4)
        .position(|w| w == b"SMLI")
        .expect("a record list");
    // The first record's reference count.
    bytes[at + 4 + 5] ^= 0x01;
    std::fs::write(&path, &bytes).expect("write");
    let mut ed = FileEditor::open(&path).expect("open");
    let e = ed.delete_attr("/b", "shared").expect_err("refused");
    assert_eq!(e.kind(), h5fmt::ErrorKind::Checksum, "{e}");
    let e = ed.set_attr("/a", "shared", 1i32).expect_err("refused");
    assert_eq!(e.kind(), h5fmt::ErrorKind::Checksum, "{e}");
    ed.close().expect("close");
    assert_eq!(std::fs::read(&path).expect("read"), bytes);
}
