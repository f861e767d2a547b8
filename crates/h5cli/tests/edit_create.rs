//! Datasets the in-place editor creates get the chunk index libhdf5 would
//! give them. The oracle is libhdf5 2.0 itself: for files h5py wrote with
//! `libver` earliest / v108 / v110 / latest, h5py opens a copy read-write
//! under each lower library-version bound (h5py's default `earliest`, and
//! v108, v110, v200, latest) and creates a set of chunked datasets (fixed
//! maximum shape over several chunks, one unlimited dimension in 1-D and
//! 3-D, two unlimited dims, a single chunk; each unfiltered and with
//! gzip+shuffle); our editor, set to the matching
//! [`h5fmt::write::Format`], creates the same datasets in another copy.
//! Then (a) our index type, creation parameters, layout version and flags
//! equal libhdf5's, and under a layout-4 bound the object header,
//! dataspace, fill value and filter pipeline message versions too; (b)
//! `h5 check` is clean; (c) h5py reads the values our editor wrote into
//! them; (d) h5py resizes them, writes across the old edge and reads back
//! what a numpy model holds.

use h5fmt::format::message::Layout;
use h5fmt::write::edit::NewDataset;
use h5fmt::write::Format;
use h5fmt::FileEditor;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

mod common;
use common::{assert_clean, run_py};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_create", name)
}

/// Name, shape, maximum shape (`None` unlimited), chunks, gzip+shuffle.
struct Spec {
    name: String,
    shape: Vec<u64>,
    max: Vec<Option<u64>>,
    chunks: Vec<u64>,
    gzip: bool,
}

type Base = (&'static str, Vec<u64>, Vec<Option<u64>>, Vec<u64>);

fn specs() -> Vec<Spec> {
    let base: Vec<Base> = vec![
        ("fixed", vec![10, 6], vec![Some(20), Some(6)], vec![4, 3]),
        ("unlim1", vec![10], vec![None], vec![4]),
        (
            "unlim1_3d",
            vec![5, 4, 3],
            vec![Some(7), None, Some(5)],
            vec![2, 3, 2],
        ),
        ("unlim2", vec![5, 7], vec![None, None], vec![2, 3]),
        ("single", vec![6, 4], vec![Some(6), Some(4)], vec![6, 4]),
    ];
    let mut out = Vec::new();
    for (name, shape, max, chunks) in base {
        for gzip in [false, true] {
            out.push(Spec {
                name: format!("{name}{}", if gzip { "_gz" } else { "" }),
                shape: shape.clone(),
                max: max.clone(),
                chunks: chunks.clone(),
                gzip,
            });
        }
    }
    out
}

/// The file kinds h5py writes and the bounds it reopens them with (`None`:
/// h5py's default, `libver='earliest'`), with the editor format for each.
const KINDS: [&str; 4] = ["earliest", "v108", "v110", "latest"];
const BOUNDS: [(Option<&str>, Format); 5] = [
    (None, Format::Earliest),
    (Some("v108"), Format::V18),
    (Some("v110"), Format::Latest),
    (Some("v200"), Format::V200),
    (Some("latest"), Format::V200),
];

/// `argv[1]` a directory, `argv[2]` the JSON specs, `argv[3]` the JSON
/// list of [kind, bound-or-null]. For each kind h5py writes `base_<kind>.h5`
/// (a group and a small dataset); for each pair, it copies it to
/// `theirs_<kind>_<bound>.h5` and `ours_<kind>_<bound>.h5`, and creates
/// every spec in the first, opened r+ under the bound (fill value -1).
const GEN: &str = r#"
import sys, json, shutil, os, h5py, numpy as np
d, specs, pairs = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
for kind in sorted(set(k for k, _ in pairs)):
    with h5py.File(os.path.join(d, 'base_%s.h5' % kind), 'w', libver=kind) as f:
        f.create_group('g')
        f['x'] = np.arange(5)
for kind, bound in pairs:
    base = os.path.join(d, 'base_%s.h5' % kind)
    tag = '%s_%s' % (kind, bound or 'default')
    theirs = os.path.join(d, 'theirs_%s.h5' % tag)
    shutil.copy(base, theirs)
    shutil.copy(base, os.path.join(d, 'ours_%s.h5' % tag))
    kw = {} if bound is None else {'libver': (bound, 'latest')}
    with h5py.File(theirs, 'r+', **kw) as f:
        for s in specs:
            maxshape = tuple(None if m is None else m for m in s['max'])
            gz = dict(compression='gzip', shuffle=True) if s['gzip'] else {}
            f.create_dataset(s['name'], shape=tuple(s['shape']), maxshape=maxshape,
                             chunks=tuple(s['chunks']), dtype='<f8', fillvalue=-1.0, **gz)
"#;

/// `argv[1]` our file, `argv[2]` a copy for h5py to edit, `argv[3]` the
/// JSON specs. Checks our values (`i * 0.5 + 1` over the shape), then h5py
/// resizes each dataset (+3 per dimension, within the maximum), writes
/// `9000 + i` over the box from `shape - 1` to the new shape and reads
/// back; prints `{name: "ok" | what differs}`.
const CHECK: &str = r#"
import sys, json, h5py, numpy as np
ours, theirs, specs = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
def same(want, got):
    if want.shape != got.shape:
        return 'shape %s, model %s' % (got.shape, want.shape)
    bad = np.argwhere(want != got)
    if len(bad):
        i = tuple(bad[0])
        return '%d values differ, first at %s: %r, model %r' % (len(bad), i, got[i], want[i])
    return 'ok'
out = {}
models = {}
with h5py.File(ours, 'r') as f:
    for s in specs:
        shape = tuple(s['shape'])
        want = (np.arange(int(np.prod(shape)), dtype='<f8') * 0.5 + 1).reshape(shape)
        try:
            out[s['name']] = same(want, f[s['name']][()])
        except Exception as e:
            out[s['name']] = 'ours: ' + repr(e)
        models[s['name']] = want
try:
    with h5py.File(theirs, 'r+') as f:
        for s in specs:
            d = f[s['name']]
            new = tuple(x + 3 if m is None else min(x + 3, m) for x, m in zip(s['shape'], s['max']))
            d.resize(new)
            m = np.full(new, -1.0)
            m[tuple(slice(0, x) for x in s['shape'])] = models[s['name']]
            start = [max(x - 1, 0) for x in s['shape']]
            count = [n - a for n, a in zip(new, start)]
            v = (9000 + np.arange(int(np.prod(count)), dtype='<f8')).reshape(count)
            sl = tuple(slice(a, a + c) for a, c in zip(start, count))
            d[sl] = v
            m[sl] = v
            models[s['name']] = m
    with h5py.File(theirs, 'r') as f:
        for s in specs:
            if out[s['name']] == 'ok':
                out[s['name']] = same(models[s['name']], f[s['name']][()])
                if out[s['name']] != 'ok':
                    out[s['name']] = 'after h5py edit: ' + out[s['name']]
except Exception as e:
    for s in specs:
        out[s['name']] = 'h5py edit: ' + repr(e)
print(json.dumps(out))
"#;

/// The layout key of dataset `name`, and the object header version and the
/// version bytes of its dataspace, fill value and filter pipeline messages.
fn describe(path: &Path, name: &str) -> (String, String) {
    let f = h5fmt::File::open(path).expect("our reader");
    let d = f.dataset(name).expect("dataset");
    let key = match d.layout() {
        Layout::Chunked(c) => {
            let (kind, index, version, flags, dims) = common::layout_key(c);
            format!("{kind} {index:?} layout_v{version} flags={flags} chunk={dims:?}")
        }
        l => panic!("{name}: not chunked: {l:?}"),
    };
    let h = d.header();
    let v = |t: u16| {
        h.messages
            .iter()
            .find(|m| m.kind == t)
            .and_then(|m| m.data.first().copied())
    };
    let versions = format!(
        "header v{} dataspace {:?} fill {:?} pipeline {:?}",
        h.version,
        v(0x01),
        v(0x05),
        v(0x0B)
    );
    (key, versions)
}

/// The index libhdf5 chose for a spec under a layout-4 bound (what the
/// oracle said when this test was written: a sanity check of the oracle).
fn expected_latest(name: &str) -> &'static str {
    let base = name.trim_end_matches("_gz");
    match base {
        "fixed" => "farray",
        "unlim1" | "unlim1_3d" => "earray",
        "unlim2" => "btree2",
        _ => "single",
    }
}

#[test]
fn created_datasets_get_libhdf5s_index() {
    let dir = scratch("files");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    let specs = specs();
    let spec_json: Vec<Value> = specs
        .iter()
        .map(|s| {
            json!({"name": s.name, "shape": s.shape, "max": s.max, "chunks": s.chunks,
                   "gzip": s.gzip})
        })
        .collect();
    let spec_path = scratch("specs.json");
    std::fs::write(&spec_path, Value::Array(spec_json).to_string()).expect("specs");
    let pairs: Vec<(&str, Option<&str>, Format)> = KINDS
        .iter()
        .flat_map(|k| BOUNDS.iter().map(move |(b, f)| (*k, *b, *f)))
        .collect();
    let pair_json: Vec<Value> = pairs.iter().map(|(k, b, _)| json!([k, b])).collect();
    let pair_path = scratch("pairs.json");
    std::fs::write(&pair_path, Value::Array(pair_json).to_string()).expect("pairs");
    if run_py(
        GEN,
        &[
            dir.to_str().expect("utf-8"),
            spec_path.to_str().expect("utf-8"),
            pair_path.to_str().expect("utf-8"),
        ],
    )
    .is_none()
    {
        eprintln!("skipping: no python venv");
        return;
    }
    let mut bad = Vec::new();
    for (kind, bound, format) in &pairs {
        let tag = format!("{kind}_{}", bound.unwrap_or("default"));
        let theirs = dir.join(format!("theirs_{tag}.h5"));
        let ours = dir.join(format!("ours_{tag}.h5"));
        let mut ed = FileEditor::open(&ours).expect("open");
        ed.sync = false;
        ed.set_format(*format);
        for s in &specs {
            let mut spec = NewDataset::new(h5fmt::Datatype::float_le(8), &s.shape)
                .maxshape(&s.max)
                .chunks(&s.chunks)
                .fill(-1.0f64);
            if s.gzip {
                spec = spec.shuffle().deflate(4);
            }
            ed.create_dataset("/", &s.name, &spec).expect("create");
        }
        for s in &specs {
            let n: u64 = s.shape.iter().product();
            let vals: Vec<f64> = (0..n).map(|i| i as f64 * 0.5 + 1.0).collect();
            ed.write(&s.name, &vec![0; s.shape.len()], &s.shape, &vals)
                .expect("write");
        }
        ed.close().expect("close");
        // (a) The index libhdf5 chose for the same creation.
        let layout4 = matches!(format, Format::Latest | Format::V200);
        for s in &specs {
            let (want, want_v) = describe(&theirs, &s.name);
            let (got, got_v) = describe(&ours, &s.name);
            let oracle = if layout4 {
                expected_latest(&s.name)
            } else {
                "btree1"
            };
            assert!(
                want.starts_with(oracle),
                "{tag} {}: libhdf5 chose {want}, not {oracle}",
                s.name
            );
            if got != want {
                bad.push(format!("{tag} {}: ours {got}, libhdf5 {want}", s.name));
            }
            if layout4 && got_v != want_v {
                bad.push(format!("{tag} {}: ours {got_v}, libhdf5 {want_v}", s.name));
            }
        }
        // (b) h5 check.
        assert_clean(&ours);
        // (c), (d): h5py reads ours, then edits a copy.
        let edited = dir.join(format!("edited_{tag}.h5"));
        std::fs::copy(&ours, &edited).expect("copy");
        let out = run_py(
            CHECK,
            &[
                ours.to_str().expect("utf-8"),
                edited.to_str().expect("utf-8"),
                spec_path.to_str().expect("utf-8"),
            ],
        )
        .expect("check");
        let out: Value = serde_json::from_str(&out).expect("json");
        for s in &specs {
            if out[&s.name] != "ok" {
                bad.push(format!("{tag} {}: {}", s.name, out[&s.name]));
            }
        }
        assert_clean(&edited);
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// An earliest-format file whose root group's local heap data segment lies
/// in the unused tail of the root's own B-tree node (both valid for
/// libhdf5: nothing says where a heap's data goes). Prints `ok` when h5py
/// reads the patched file.
const GEN_HEAP_IN_NODE: &str = r#"
import sys, struct, shutil, h5py
ours, theirs = sys.argv[1], sys.argv[2]
with h5py.File(ours, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_group('b')
b = bytearray(open(ours, 'rb').read())
# Superblock v0, 8-byte offsets: internal K at 18, the root symbol table
# entry at 56 (its scratch pad: B-tree address at 80, heap address at 88).
assert b[8] == 0 and b[13] == 8
k = struct.unpack_from('<H', b, 18)[0]
btree, heap = struct.unpack_from('<QQ', b, 80)
assert b[btree:btree + 4] == b'TREE' and b[heap:heap + 4] == b'HEAP'
used = 24 + (2 * struct.unpack_from('<H', b, btree + 6)[0] + 1) * 8
node_len = 24 + (4 * k + 1) * 8
size, _, data = struct.unpack_from('<QQQ', b, heap + 8)
at = (btree + node_len - size) // 8 * 8
assert at >= btree + used, (at, btree, used, size)
b[at:at + size] = b[data:data + size]
struct.pack_into('<Q', b, heap + 24, at)
open(ours, 'wb').write(b)
shutil.copy(ours, theirs)
with h5py.File(ours, 'r') as f:
    assert sorted(f) == ['a', 'b'], sorted(f)
print('ok')
"#;

/// libhdf5 makes the same edits on its copy; then both files are listed
/// by h5py (every path, depth first).
const EDIT_HEAP_IN_NODE: &str = r#"
import sys, h5py
ours, theirs = sys.argv[1], sys.argv[2]
with h5py.File(theirs, 'r+') as f:
    for i in range(4):
        g = f.create_group('g%d' % i)
        g.create_group('x')
for p in (ours, theirs):
    with h5py.File(p, 'r') as f:
        names = []
        f.visit(names.append)
        print(' '.join(names))
"#;

/// A group's heap data segment inside its own B-tree node (a corrupt or
/// hand-made file libhdf5 reads and edits): when an insertion grows the
/// heap, the old segment must not be freed, or the next allocation lands
/// inside the node and the node's next in-place rewrite overwrites it (a
/// fuzz finding: a new group's heap zeroed). libhdf5 edits the same file;
/// h5py must list the same tree in both.
#[test]
fn a_heap_segment_inside_its_groups_btree_node_is_not_reused() {
    let (ours, theirs) = (scratch("heap_in_node.h5"), scratch("heap_in_node_lib.h5"));
    let args = [
        ours.to_str().expect("utf-8"),
        theirs.to_str().expect("utf-8"),
    ];
    let Some(gen) = run_py(GEN_HEAP_IN_NODE, &args) else {
        return;
    };
    assert_eq!(gen.trim(), "ok");
    let mut ed = FileEditor::open(&ours).expect("open");
    for i in 0..4 {
        let name = format!("g{i}");
        ed.create_group("/", &name).expect("create");
        ed.create_group(&format!("/{name}"), "x").expect("create x");
    }
    ed.close().expect("close");
    let out = run_py(EDIT_HEAP_IN_NODE, &args).expect("h5py");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[1].contains("g3/x"), "libhdf5's copy: {}", lines[1]);
    assert_eq!(lines[0], lines[1], "ours (first) against libhdf5's edits");
    assert_clean(&ours);
}

/// An earliest-format file whose superblock's group internal K (`sys.argv[2]`)
/// sizes B-tree nodes far larger than the ones the file holds; libhdf5 is
/// asked to delete `/a` from a copy. Prints what libhdf5 did.
const GEN_BIG_K: &str = r#"
import sys, struct, shutil, h5py
ours, theirs, k = sys.argv[1], sys.argv[2], int(sys.argv[3])
with h5py.File(ours, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_group('b')
b = bytearray(open(ours, 'rb').read())
assert b[8] == 0 and struct.unpack_from('<H', b, 18)[0] == 16
struct.pack_into('<H', b, 18, k)
open(ours, 'wb').write(b)
shutil.copy(ours, theirs)
try:
    with h5py.File(theirs, 'r+') as f:
        del f['a']
    print('deleted')
except Exception as e:
    print('refused', e)
"#;

/// A group B-tree node is rewritten in place at its full size for the
/// superblock's K, as libhdf5 sizes it. When that size runs past the end
/// of file (a K that does not match the file's nodes; a fuzz finding: a
/// 265 KiB node write zeroed the root's heap and a header continuation
/// allocated at the end of file), the edit is refused as `Corrupt` and the
/// file is unchanged; libhdf5 does not make the edit either.
#[test]
fn a_group_node_larger_than_the_file_is_not_rewritten() {
    let (ours, theirs) = (scratch("big_k.h5"), scratch("big_k_lib.h5"));
    let args = [
        ours.to_str().expect("utf-8"),
        theirs.to_str().expect("utf-8"),
        "8464",
    ];
    let Some(lib) = run_py(GEN_BIG_K, &args) else {
        return;
    };
    assert!(lib.starts_with("refused"), "libhdf5: {lib}");
    let before = std::fs::read(&ours).expect("read");
    let mut ed = FileEditor::open(&ours).expect("open");
    let err = ed
        .delete_link("/", "a")
        .expect_err("a node past the end of file");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    let err = ed
        .create_group("/", "c")
        .expect_err("a node past the end of file");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    ed.close().expect("close");
    assert!(
        std::fs::read(&ours).expect("read") == before,
        "the file changed"
    );
}

/// An earliest-format file whose superblock's group *leaf* K is raised so
/// that the root's symbol table node, at its size for that K, still ends
/// within the file but covers the structures written after it (`/a`'s
/// object header among them). libhdf5 is asked to create `/c` in a copy;
/// prints what it did, then whether `/a` and `/b` still open there.
const GEN_BIG_LEAF_K: &str = r#"
import sys, struct, shutil, h5py, numpy as np
ours, theirs = sys.argv[1], sys.argv[2]
with h5py.File(ours, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_group('b')
    f.create_dataset('pad', data=np.arange(1024, dtype='<i4'))
b = bytearray(open(ours, 'rb').read())
assert b[8] == 0 and struct.unpack_from('<H', b, 16)[0] == 4
snod = b.find(b'SNOD')
k = (len(b) - snod - 8) // 80
assert k > 8
struct.pack_into('<H', b, 16, k)
open(ours, 'wb').write(b)
shutil.copy(ours, theirs)
try:
    with h5py.File(theirs, 'r+') as f:
        f.create_group('c')
    print('created')
except Exception as e:
    print('refused', type(e).__name__)
try:
    with h5py.File(theirs, 'r') as f:
        print(sorted(f), f['a'].name, f['b'].name)
except Exception as e:
    print('broken', type(e).__name__)
"#;

/// A symbol table node is rewritten (and freed) at its full size for the
/// superblock's leaf K, as libhdf5 sizes it. When that size covers other
/// structures (a K that does not match the file's nodes; a fuzz finding:
/// creating a link in the root zeroed `/int`'s object header, and the
/// group was lost), the edit is refused as `Corrupt` and the file is
/// unchanged. libhdf5 makes the edit and its copy loses `/a`: what h5py
/// lists of ours afterwards must be the untouched tree.
#[test]
fn a_symbol_table_node_over_other_structures_is_not_rewritten() {
    let (ours, theirs) = (scratch("big_leaf_k.h5"), scratch("big_leaf_k_lib.h5"));
    let args = [
        ours.to_str().expect("utf-8"),
        theirs.to_str().expect("utf-8"),
    ];
    let Some(lib) = run_py(GEN_BIG_LEAF_K, &args) else {
        return;
    };
    println!(
        "libhdf5 on the same file: {}",
        lib.trim().replace('\n', "; ")
    );
    let before = std::fs::read(&ours).expect("read");
    let mut ed = FileEditor::open(&ours).expect("open");
    let err = ed
        .create_group("/", "c")
        .expect_err("a node over other structures");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    let err = ed
        .delete_link("/", "a")
        .expect_err("a node over other structures");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    ed.close().expect("close");
    assert!(
        std::fs::read(&ours).expect("read") == before,
        "the file changed"
    );
    let listed = run_py(
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'r') as f: print(sorted(f), f['a'].name, f['b'].name)",
        &[ours.to_str().expect("utf-8")],
    )
    .expect("h5py");
    assert_eq!(listed.trim(), "['a', 'b', 'pad'] /a /b");
}

/// An earliest-format file (`sys.argv[1]`) whose superblock's end-of-file
/// address is `sys.argv[2]`, smaller than the file; prints what h5py lists
/// of it (the root's attributes and the dataset's values) as JSON.
const GEN_SHORT_EOF: &str = r#"
import sys, struct, json, h5py, numpy as np
path, eoa = sys.argv[1], int(sys.argv[2])
with h5py.File(path, 'w', libver='earliest') as f:
    f.attrs['title'] = np.int32(7)
    f.create_dataset('d', data=np.arange(6, dtype='<f8'))
b = bytearray(open(path, 'rb').read())
assert b[8] == 0 and struct.unpack_from('<Q', b, 40)[0] == len(b)
struct.pack_into('<Q', b, 40, eoa)
open(path, 'wb').write(b)
"#;

/// What h5py reads of the file `sys.argv[1]`: root attributes and `/d`.
const LIST_SHORT_EOF: &str = r#"
import sys, json, h5py
with h5py.File(sys.argv[1], 'r') as f:
    print(json.dumps({'attrs': {k: f.attrs[k].tolist() for k in sorted(f.attrs)},
                      'd': f['d'][...].tolist()}))
"#;

/// A file longer than its superblock's end-of-file address (0, or one
/// inside the root's header): new space must start after the file's last
/// byte (a fuzz finding: with an address of 0 the editor put the root's new
/// header continuation at address 0, and the superblock rewritten at the
/// close went over it; the root no longer read). After attributes are added
/// to the root, h5py reads them and the original values.
#[test]
fn new_space_starts_after_the_last_byte_of_the_file() {
    for eoa in ["0", "100"] {
        let path = scratch(&format!("short_eof_{eoa}.h5"));
        let p = path.to_str().expect("utf-8");
        if run_py(GEN_SHORT_EOF, &[p, eoa]).is_none() {
            return;
        }
        let mut ed = FileEditor::open(&path).expect("open");
        for i in 0..6 {
            // Enough attributes to move the root's messages to a new chunk.
            ed.set_attr("/", &format!("a{i}"), vec![f64::from(i); 8])
                .expect("set_attr");
        }
        ed.close().expect("close");
        let got: Value =
            serde_json::from_str(&run_py(LIST_SHORT_EOF, &[p]).expect("h5py")).expect("json");
        let mut attrs = serde_json::Map::new();
        for i in 0..6 {
            attrs.insert(format!("a{i}"), json!(vec![f64::from(i); 8]));
        }
        attrs.insert("title".into(), json!(7));
        assert_eq!(
            got,
            json!({"attrs": attrs, "d": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}),
            "end-of-file address {eoa}"
        );
    }
}

/// An earliest-format file whose root's local heap data address is moved
/// onto `/b`'s symbol table node (a corrupt file the reader still walks:
/// the root's names read from the node's bytes). Prints `/b`'s node
/// address and size.
const GEN_HEAP_ON_SNOD: &str = r#"
import sys, struct, h5py
path = sys.argv[1]
with h5py.File(path, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_group('b').create_group('x')
b = bytearray(open(path, 'rb').read())
snods = [i for i in range(0, len(b), 8) if b[i:i + 4] == b'SNOD']
heaps = [i for i in range(0, len(b), 8) if b[i:i + 4] == b'HEAP']
root_heap = struct.unpack_from('<Q', b, 0x58)[0]
assert root_heap in heaps and len(snods) >= 2
# The last node is /b's (written after the root's).
struct.pack_into('<Q', b, root_heap + 24, snods[-1])
open(path, 'wb').write(b)
print(snods[-1], 8 + 8 * 40)
"#;

/// A local heap whose data segment lies over another group's symbol table
/// node: when a new name grows the heap, the old segment must not be freed
/// (a fuzz finding: it was, the next allocation went over `/b`'s node and
/// the file no longer walked). The node's bytes are the same after three
/// groups are created in the root.
#[test]
fn a_heap_segment_over_another_groups_node_is_not_freed() {
    let path = scratch("heap_on_snod.h5");
    let Some(gen) = run_py(GEN_HEAP_ON_SNOD, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    let v: Vec<usize> = gen
        .split_whitespace()
        .map(|x| x.parse().expect("number"))
        .collect();
    let (at, len) = (v[0], v[1]);
    let node = std::fs::read(&path).expect("read")[at..at + len].to_vec();
    let mut ed = FileEditor::open(&path).expect("open");
    for i in 0..3 {
        ed.create_group("/", &format!("new{i}")).expect("create");
    }
    ed.close().expect("close");
    let after = std::fs::read(&path).expect("read");
    assert!(
        after[at..at + len] == node[..],
        "/b's symbol table node changed"
    );
}

/// An earliest-format file whose root heap's data size is raised to run to
/// the end of file, over the object headers of the root's members written
/// after it (a corrupt file the reader still reads: the names lie at the
/// start of the segment).
const GEN_HEAP_OVER_HEADERS: &str = r#"
import sys, struct, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_dataset('d', data=np.arange(4, dtype='<i4'))
b = bytearray(open(path, 'rb').read())
heap = struct.unpack_from('<Q', b, 0x58)[0]
assert b[heap:heap + 4] == b'HEAP'
data = struct.unpack_from('<Q', b, heap + 24)[0]
struct.pack_into('<Q', b, heap + 8, len(b) - data)
open(path, 'wb').write(b)
with h5py.File(path, 'r') as f:
    print(sorted(f), f['d'][...].tolist())
"#;

/// A symbol-table group whose heap data covers its members' object headers:
/// a new name moves the heap and frees the old segment, and the next
/// allocations went over the headers (a fuzz finding: `/dset` unreadable
/// after the edits). The insertion is refused as `Corrupt` and the file is
/// unchanged; h5py reads the same members as before.
#[test]
fn a_heap_segment_over_member_headers_is_refused() {
    let path = scratch("heap_over_headers.h5");
    let p = path.to_str().expect("utf-8");
    let Some(before) = run_py(GEN_HEAP_OVER_HEADERS, &[p]) else {
        return;
    };
    assert_eq!(before.trim(), "['a', 'd'] [0, 1, 2, 3]");
    let bytes = std::fs::read(&path).expect("read");
    let mut ed = FileEditor::open(&path).expect("open");
    let err = ed
        .create_group("/", "new")
        .expect_err("a heap over member headers");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    ed.close().expect("close");
    assert!(
        std::fs::read(&path).expect("read") == bytes,
        "the file changed"
    );
    let listed = run_py(
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'r') as f: print(sorted(f), f['d'][...].tolist())",
        &[p],
    )
    .expect("h5py");
    assert_eq!(listed.trim(), "['a', 'd'] [0, 1, 2, 3]");
}

/// An earliest-format file where `/g`'s heap data size is raised by 64
/// bytes, over the object header libhdf5 wrote right after it: `/d`'s, a
/// member of the root, not of `/g` (a version 1 header: no signature).
/// Prints the tree h5py lists and `/d`'s values.
const GEN_HEAP_SIZE_RAISED: &str = r#"
import sys, struct, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, 'w', libver='earliest') as f:
    f.create_group('a')
    f.create_group('g')
    f.create_dataset('d', data=np.arange(4, dtype='<i4'))
b = bytearray(open(path, 'rb').read())
heaps = [i for i in range(0, len(b), 8) if b[i:i + 4] == b'HEAP']
g_heap = heaps[2]
size, _, data = struct.unpack_from('<QQQ', b, g_heap + 8)
assert b[data + size] == 1, 'a version 1 object header follows the heap data'
struct.pack_into('<Q', b, g_heap + 8, size + 64)
open(path, 'wb').write(b)
with h5py.File(path, 'r') as f:
    names = []
    f.visit(names.append)
    print(' '.join(names), f['d'][...].tolist())
"#;

/// A heap whose data size is larger than its names and free list account
/// for (a fuzz finding: a root heap's size raised over a member's header
/// continuation) must not be freed by that size when a new name moves the
/// heap: the bytes past the real segment belong to other structures. After
/// three groups are created in `/g`, h5py reads `/d` and the root's links.
#[test]
fn a_heap_size_beyond_its_names_and_free_list_is_not_freed() {
    let path = scratch("heap_size_raised.h5");
    let p = path.to_str().expect("utf-8");
    let Some(before) = run_py(GEN_HEAP_SIZE_RAISED, &[p]) else {
        return;
    };
    assert_eq!(before.trim(), "a d g [0, 1, 2, 3]");
    let mut ed = FileEditor::open(&path).expect("open");
    for i in 0..3 {
        // Refused (`Corrupt`) or made: either way the rest must survive.
        let _ = ed.create_group("/g", &format!("n{i}"));
    }
    ed.close().expect("close");
    let after = run_py(
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'r') as f: print(f['d'][...].tolist(), sorted(f))",
        &[p],
    )
    .expect("h5py");
    assert!(
        after.starts_with("[0, 1, 2, 3] ['a', 'd', 'g']"),
        "/d or a link lost: {after}"
    );
}

/// An earliest-format file whose last object, the contiguous dataset `d`,
/// is cut in half: the file and its end-of-file address end inside `d`'s
/// data. Prints what libhdf5 gives reading `d` and listing the root.
const GEN_CUT_CONTIG: &str = r#"
import sys, os, struct, h5py, numpy as np
path = sys.argv[1]
with h5py.File(path, 'w', libver='earliest') as f:
    f.create_group('g')
    off = f.create_dataset('d', data=np.arange(2048, dtype='<i4')).id.get_offset()
size = os.path.getsize(path)
assert off + 8192 == size, (off, size)
cut = off + 4096
b = bytearray(open(path, 'rb').read()[:cut])
assert b[8] == 0 and struct.unpack_from('<Q', b, 40)[0] == size
struct.pack_into('<Q', b, 40, cut)
open(path, 'wb').write(b)
with h5py.File(path, 'r') as f:
    print(sorted(f))
    try:
        f['d'][...]
        print('read')
    except Exception as e:
        print('refused', e)
"#;

/// A contiguous dataset whose storage runs past the end of file (a cut or
/// corrupt file; a fuzz finding: a box written there went over a header
/// continuation chunk the editor had allocated at the end of file, and the
/// root group no longer read). libhdf5 refuses to read it; the editor
/// refuses to write it (`Corrupt`), before and after it has grown the
/// file, and the rest of the file stays readable by libhdf5.
#[test]
fn a_contiguous_dataset_past_the_end_of_file_is_not_written() {
    let path = scratch("cut_contig.h5");
    let Some(lib) = run_py(GEN_CUT_CONTIG, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    let lines: Vec<&str> = lib.lines().collect();
    assert_eq!(lines.first(), Some(&"['d', 'g']"), "{lib}");
    assert!(
        lines.get(1).is_some_and(|l| l.starts_with("refused")),
        "{lib}"
    );
    let mut ed = FileEditor::open(&path).expect("open");
    let err = ed
        .write_box("/d", &[0], &[4], &[1u8; 16])
        .expect_err("storage past the end of file");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    // The file grows (a header continuation, a group), then the same write.
    for i in 0..8 {
        ed.set_attr("/", &format!("a{i}"), i as i64).expect("attr");
    }
    for i in 0..6 {
        ed.create_group("/", &format!("h{i}")).expect("group");
    }
    // The last 32 bytes `d` claims: by now the editor's groups are there.
    let err = ed
        .write_box("/d", &[2040], &[8], &[2u8; 32])
        .expect_err("storage past the end of file");
    assert_eq!(err.kind(), h5fmt::ErrorKind::Corrupt, "{err}");
    assert!(err.to_string().contains("past the end of file"), "{err}");
    ed.close().expect("close");
    let out = run_py(
        "import sys, h5py\nwith h5py.File(sys.argv[1], 'r') as f:\n    print(sorted(f), sorted(f.attrs))",
        &[path.to_str().expect("utf-8")],
    )
    .expect("h5py");
    assert_eq!(
        out.trim(),
        "['d', 'g', 'h0', 'h1', 'h2', 'h3', 'h4', 'h5'] ['a0', 'a1', 'a2', 'a3', 'a4', 'a5', 'a6', 'a7']"
    );
}
