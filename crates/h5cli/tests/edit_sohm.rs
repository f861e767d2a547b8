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

/// argv: path, list maximum, B-tree minimum. Two indexes: attributes, and
/// datatypes, dataspaces, fill values and filter pipelines. Three chunked,
/// compressed datasets of one type and shape with attributes (one equal on
/// all three), a group with twelve dense attributes equal to those of a
/// second group and a member dataset, and a tail dataset.
const GEN_OBJ: &str = r#"
path, ml, mb = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fcpl = h5p.create(h5p.FILE_CREATE)
assert lib.H5Pset_shared_mesg_nindexes(i64(fcpl.id), ctypes.c_uint(2)) >= 0
assert lib.H5Pset_shared_mesg_index(i64(fcpl.id), ctypes.c_uint(0), ctypes.c_uint(1 << 12), ctypes.c_uint(0)) >= 0
types = (1 << 3) | (1 << 1) | (1 << 5) | (1 << 11)
assert lib.H5Pset_shared_mesg_index(i64(fcpl.id), ctypes.c_uint(1), ctypes.c_uint(types), ctypes.c_uint(0)) >= 0
assert lib.H5Pset_shared_mesg_phase_change(i64(fcpl.id), ctypes.c_uint(ml), ctypes.c_uint(mb)) >= 0
with h5py.File(h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    for name in ['d1', 'd2', 'd3']:
        d = f.create_dataset(name, data=np.arange(100, dtype='<i4'), chunks=(50,), compression='gzip')
        d.attrs['same'] = np.arange(4, dtype='i8')
        d.attrs['own'] = np.arange(4, dtype='i8') + ord(name[1])
    for g in ['g', 'g2']:
        grp = f.create_group(g)
        for i in range(12):
            grp.attrs[f'x{i:02}'] = np.arange(6, dtype='f8') + i
    f['g/inner'] = np.arange(10, dtype='<f4')
    f['tail'] = np.arange(5, dtype='<i4')
    print(json.dumps(sohm_sizes(f)))
"#;

/// Every object's attributes and every dataset's values.
const VIEW_OBJ: &str = r#"
with h5py.File(sys.argv[1], 'r') as f:
    v = view(f)
    f.visititems(lambda n, o: v.__setitem__('/' + n + '#', val(o[()])) if isinstance(o, h5py.Dataset) else None)
    print(json.dumps(v))
"#;

/// libhdf5 deletes `d1` and `g`, then reports its SOHM sizes.
const LIB_DEL_OBJ: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    del f['d1']
    del f['g']
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps(sohm_sizes(f)))
"#;

/// libhdf5 deletes every object: exact counts leave no SOHM heap (every
/// index goes with its last record); reports the sizes.
const LIB_DEL_EVERYTHING: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    for k in list(f):
        del f[k]
    for k in list(f.attrs):
        del f.attrs[k]
with h5py.File(sys.argv[1], 'r') as f:
    assert len(f) == 0
    print(json.dumps(sohm_sizes(f)))
"#;

/// The file's SOHM indexes as our reader decodes them: per index its
/// message types, kind, record count, whether it has a heap, and its
/// records (hash, location, count, heap id / header address) in order.
fn sohm_state(path: &Path) -> Value {
    use h5fmt::codec::Cursor;
    use h5fmt::format::message::misc::SohmTableMessage;
    use h5fmt::format::sohm::{SohmIndexKind, SohmList, SohmLocation, SohmRecord, SohmTable};
    let f = h5fmt::File::open(path).expect("open");
    let ctx = f.ctx();
    let st = f.storage();
    let h = h5fmt::read::object_header::read_object_header(st, f.superblock().extension, ctx)
        .expect("extension");
    let m = h
        .find(h5fmt::format::message::kind::SOHM_TABLE)
        .expect("SOHM table");
    let msg = SohmTableMessage::decode(&mut m.cursor(), ctx).expect("table message");
    let len = SohmTable::encoded_len(msg.num_indexes, ctx) as u64;
    let bytes = st.read(msg.table, len).expect("table");
    let table = SohmTable::decode(&mut Cursor::new(&bytes, msg.table.0), msg.num_indexes, ctx)
        .expect("table");
    let show = |r: &SohmRecord| match r.location {
        SohmLocation::Heap { refcount, heap_id } => {
            format!("{:08x} heap {refcount} {heap_id:02x?}", r.hash)
        }
        SohmLocation::ObjectHeader {
            message_type,
            index,
            addr,
        } => format!("{:08x} header {message_type} {index} {}", r.hash, addr.0),
    };
    let mut out = Vec::new();
    for ix in &table.indexes {
        let mut recs = Vec::new();
        if let Some(a) = ix.index_addr.defined() {
            match ix.kind {
                SohmIndexKind::List => {
                    let slot = SohmRecord::encoded_len(ctx);
                    let b = st
                        .read(a, (8 + usize::from(ix.num_messages) * slot) as u64)
                        .expect("list");
                    let l = SohmList::decode(&mut Cursor::new(&b, a.0), ix.num_messages, ctx)
                        .expect("list");
                    recs.extend(l.records.iter().map(show));
                }
                SohmIndexKind::BTree => {
                    let t = h5fmt::read::btree_v2::BTreeV2::open(st, ctx, a).expect("B-tree");
                    for raw in t.records().expect("records") {
                        let r = SohmRecord::decode(&mut Cursor::new(&raw, 0), ctx).expect("record");
                        recs.push(show(&r));
                    }
                }
            }
        }
        out.push(json!({
            "types": ix.message_types,
            "kind": format!("{:?}", ix.kind),
            "n": ix.num_messages,
            "heap": ix.heap_addr.defined().is_some(),
            "records": recs,
        }));
    }
    Value::Array(out)
}

/// Deleting objects whose headers hold shared messages (datasets with
/// shared datatype, dataspace, fill value, filter pipeline and attributes;
/// a group with dense shared attributes and a member) drops their
/// references as libhdf5 does: the SOHM indexes of our file and of a twin
/// where libhdf5 deleted the same objects hold the same records with the
/// same counts (list and B-tree indexes). libhdf5 then reads our file, and
/// deleting everything else leaves no SOHM heap in either (counts never too
/// high nor too low); `h5 check --strict` is clean. (The SOHM heaps
/// differ: libhdf5 also removes a heap object whose record goes, keeping
/// its space in the heap's free-space manager; ours stays, a leak.)
#[test]
fn deleting_objects_drops_their_shared_messages() {
    for (mode, ml, mb) in [("list", 50, 40), ("btree", 0, 0), ("early", 4, 2)] {
        let path = scratch(&format!("objdel_{mode}.h5"));
        let twin = scratch(&format!("objdel_{mode}_lib.h5"));
        let Some(sizes) = py(GEN_OBJ, &[s(&path), &ml.to_string(), &mb.to_string()]) else {
            return;
        };
        assert_ne!(sizes, json!([0, 0]), "{mode}: libhdf5 shared nothing");
        std::fs::copy(&path, &twin).expect("copy");
        let before = sohm_state(&path);
        println!("{mode} before: {before:#}");
        let mut ed = FileEditor::open(&path).expect("open");
        ed.delete_link("/", "d1").expect("delete d1");
        ed.delete_link("/", "g").expect("delete g");
        ed.close().expect("close");
        py(LIB_DEL_OBJ, &[s(&twin)]).expect("libhdf5 deletes");
        let theirs = sohm_state(&twin);
        assert_ne!(before, theirs, "{mode}: libhdf5 changed no record");
        assert_eq!(sohm_state(&path), theirs, "{mode}: SOHM indexes differ");
        assert_eq!(
            py(VIEW_OBJ, &[s(&path)]).expect("view"),
            py(VIEW_OBJ, &[s(&twin)]).expect("view"),
            "{mode}"
        );
        assert_checks(&path, true);
        for p in [&path, &twin] {
            assert_eq!(
                py(LIB_DEL_EVERYTHING, &[s(p)]).expect("delete everything")[1],
                json!(0),
                "{mode}: SOHM heap left after every object is gone ({})",
                p.display()
            );
        }
        assert_checks(&path, true);
    }
}

/// Every cut of two commits deleting objects with shared messages holds the
/// SOHM indexes as before or as after each (the master table switches last: a
/// cut leaves counts too high, never too low): libhdf5 deletes every
/// object from each cut file without error, `h5 check` is clean.
#[test]
fn object_deletes_with_shared_messages_are_crash_ordered() {
    for (mode, ml, mb) in [("list", 50, 40), ("btree", 0, 0)] {
        let template = scratch(&format!("objcut_{mode}.h5"));
        let Some(_) = py(GEN_OBJ, &[s(&template), &ml.to_string(), &mb.to_string()]) else {
            return;
        };
        let before = sohm_state(&template);
        // `delete_link` commits what is staged first: d1's deletion is a
        // commit of its own.
        let mid_file = scratch(&format!("objcut_{mode}_mid.h5"));
        std::fs::copy(&template, &mid_file).expect("copy");
        let mut ed = FileEditor::open(&mid_file).expect("open");
        ed.delete_link("/", "d1").expect("delete d1");
        ed.close().expect("close");
        let mid = sohm_state(&mid_file);
        let (cuts, done) = cut_runs(
            &template,
            |n| scratch(&format!("objcut_{mode}_{n}.h5")),
            1000,
            "never completes",
            |ed| {
                ed.delete_link("/", "d1")?;
                ed.delete_link("/", "g")?;
                ed.flush()
            },
        );
        let after = sohm_state(&done);
        assert_ne!(before, after);
        assert!(cuts.len() >= 3, "{mode}: {} writes", cuts.len());
        for p in &cuts {
            let st = sohm_state(p);
            assert!(
                st == before || st == mid || st == after,
                "{mode}: {}: {st:#}",
                p.display()
            );
            assert_checks(p, false);
            py(LIB_DEL_EVERYTHING, &[s(p)]).expect("libhdf5 deletes everything");
        }
        assert_checks(&done, true);
        assert_eq!(
            py(LIB_DEL_EVERYTHING, &[s(&done)]).expect("delete everything")[1],
            json!(0),
            "{mode}: exact counts after the full commit"
        );
    }
}

/// Unshared attributes whose datatype and dataspace are shared (a file
/// whose only SOHM index holds datatypes and dataspaces): deleting or
/// overwriting one drops those references, as libhdf5's
/// `H5O__attr_delete` does. Our deletions and overwrites (compact and
/// dense) leave the index as libhdf5 leaves it after deleting the same
/// attributes (our overwrites write the new value unshared, adding no
/// reference); libhdf5 reads our values and deleting everything then
/// leaves no SOHM heap.
#[test]
fn unshared_attributes_drop_their_shared_components() {
    const GEN_COMP: &str = r#"
path = sys.argv[1]
fcpl = h5p.create(h5p.FILE_CREATE)
assert lib.H5Pset_shared_mesg_nindexes(i64(fcpl.id), ctypes.c_uint(1)) >= 0
assert lib.H5Pset_shared_mesg_index(i64(fcpl.id), ctypes.c_uint(0), ctypes.c_uint((1 << 3) | (1 << 1)), ctypes.c_uint(0)) >= 0
with h5py.File(h5f.create(path.encode(), h5f.ACC_TRUNC, fcpl=fcpl)) as f:
    a = f.create_group('a')
    a.attrs['p'] = np.arange(4, dtype='i8')
    a.attrs['q'] = np.arange(3, dtype='f8')
    a.attrs['r'] = np.arange(4, dtype='i8') + 1
    d = f.create_group('dense')
    for i in range(12):
        d.attrs[f'x{i:02}'] = np.arange(6, dtype='f8') + i
    print(json.dumps(sohm_sizes(f)))
"#;
    const LIB_DEL_ATTRS: &str = r#"
with h5py.File(sys.argv[1], 'r+') as f:
    for o, k in [('a', 'p'), ('dense', 'x03'), ('a', 'q'), ('dense', 'x05')]:
        del f[o].attrs[k]
print(json.dumps(0))
"#;
    let path = scratch("comp.h5");
    let twin = scratch("comp_lib.h5");
    let Some(sizes) = py(GEN_COMP, &[s(&path)]) else {
        return;
    };
    assert_ne!(sizes, json!([0, 0]), "libhdf5 shared nothing");
    std::fs::copy(&path, &twin).expect("copy");
    let before = sohm_state(&path);
    let mut ed = FileEditor::open(&path).expect("open");
    ed.delete_attr("/a", "p").expect("delete compact");
    ed.delete_attr("/dense", "x03").expect("delete dense");
    ed.set_attr("/a", "q", 7i32).expect("overwrite compact");
    ed.set_attr("/dense", "x05", 8i32).expect("overwrite dense");
    ed.close().expect("close");
    py(LIB_DEL_ATTRS, &[s(&twin)]).expect("libhdf5 deletes");
    let theirs = sohm_state(&twin);
    assert_ne!(before, theirs, "libhdf5 changed no record");
    assert_eq!(sohm_state(&path), theirs, "SOHM index differs");
    let v = py(VIEW, &[s(&path)]).expect("view");
    assert_eq!(v["/a"], json!({"q": 7, "r": arange(4, 1.0)}), "{v}");
    assert_eq!(v["/dense"]["x05"], json!(8));
    assert!(v["/dense"].get("x03").is_none());
    assert_checks(&path, true);
    for p in [&path, &twin] {
        assert_eq!(
            py(LIB_DEL_EVERYTHING, &[s(p)]).expect("delete everything")[1],
            json!(0),
            "SOHM heap left after everything is gone ({})",
            p.display()
        );
    }
}
