//! The in-place editor keeps the chunk index type of the datasets it edits:
//! for every index libhdf5 writes under `libver='latest'` (single chunk,
//! implicit, fixed array unpaged and paged, extensible array, v2 B-tree),
//! unfiltered and gzip+shuffle, 1-D (2-D for the v2 B-tree, which needs two
//! unlimited dims) and 3-D with partial edge chunks, h5py writes the file,
//! our editor resizes and writes boxes over three commits, and then
//! (a) h5py reads exactly what a numpy model of the same operations holds,
//! (b) our reader finds the same index type, creation parameters, layout
//! message version and flags as libhdf5 wrote, (c) h5py itself resizes and
//! writes the edited file (libhdf5 modifying our index) and reads back what
//! the model says, (d) `h5 check` is clean. Cut tests stop the commit of
//! an extensible array and a v2 B-tree edit, and of implicit-index edits
//! (whose storage is rewritten whole), after every possible number of
//! writes: libhdf5 reads the state before or after, never anything else.
//! An extensible array large enough for paged data blocks (2048 elements,
//! two pages) is edited sparsely, read back and edited again by h5py.

use h5fmt::format::message::{ChunkedLayout, Dataspace, Layout};
use h5fmt::FileEditor;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};

mod common;
use common::{assert_clean, cut_runs_after, layout_key, run_py};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_index", name)
}

/// One dataset: name, the index libhdf5 picks, shape, maximum shape (`None`
/// unlimited), chunks, growth of unlimited dims in the first edit.
struct Spec {
    name: String,
    index: &'static str,
    shape: Vec<u64>,
    max: Vec<Option<u64>>,
    chunks: Vec<u64>,
    gzip: bool,
    grow: u64,
}

/// Name, index, shape, maximum shape, chunks, growth of unlimited dims.
type Base = (
    &'static str,
    &'static str,
    Vec<u64>,
    Vec<Option<u64>>,
    Vec<u64>,
    u64,
);

fn specs() -> Vec<Spec> {
    let base: Vec<Base> = vec![
        ("single_1d", "single", vec![8], vec![Some(8)], vec![8], 0),
        (
            "single_3d",
            "single",
            vec![3, 4, 5],
            vec![Some(3), Some(4), Some(5)],
            vec![3, 4, 5],
            0,
        ),
        (
            "implicit_1d",
            "implicit",
            vec![10],
            vec![Some(22)],
            vec![4],
            0,
        ),
        (
            "implicit_3d",
            "implicit",
            vec![3, 4, 5],
            vec![Some(5), Some(7), Some(6)],
            vec![2, 3, 4],
            0,
        ),
        ("fa_1d", "farray", vec![10], vec![Some(30)], vec![4], 0),
        (
            "fa_3d",
            "farray",
            vec![3, 4, 5],
            vec![Some(5), Some(7), Some(6)],
            vec![2, 3, 4],
            0,
        ),
        (
            "fapaged_1d",
            "farray",
            vec![100],
            vec![Some(3000)],
            vec![2],
            0,
        ),
        (
            "fapaged_3d",
            "farray",
            vec![5, 6, 4],
            vec![Some(65), Some(40), Some(6)],
            vec![2, 2, 4],
            0,
        ),
        ("ea_1d", "earray", vec![10], vec![None], vec![4], 600),
        (
            "ea_3d",
            "earray",
            vec![5, 4, 3],
            vec![Some(7), None, Some(5)],
            vec![2, 3, 2],
            60,
        ),
        (
            "bt2_2d",
            "btree2",
            vec![5, 7],
            vec![None, None],
            vec![2, 3],
            60,
        ),
        (
            "bt2_3d",
            "btree2",
            vec![5, 4, 3],
            vec![None, None, Some(5)],
            vec![2, 3, 2],
            12,
        ),
    ];
    let mut out = Vec::new();
    for (name, index, shape, max, chunks, grow) in base {
        for gzip in [false, true] {
            if gzip && index == "implicit" {
                continue; // libhdf5 uses the implicit index only unfiltered
            }
            out.push(Spec {
                name: format!("{name}{}", if gzip { "_gz" } else { "" }),
                index,
                shape: shape.clone(),
                max: max.clone(),
                chunks: chunks.clone(),
                gzip,
                grow,
            });
        }
    }
    out
}

/// h5py writes every dataset of `argv[2]` (JSON specs) into `argv[1]` with
/// `libver='latest'`, f8 values `i * 0.5 + 1` over the linear index and
/// fill value -1; implicit indexes through the low-level API (early
/// allocation).
const GEN: &str = r#"
import sys, json, h5py, numpy as np
path, specs = sys.argv[1], json.load(open(sys.argv[2]))
with h5py.File(path, 'w', libver='latest') as f:
    for s in specs:
        shape = tuple(s['shape'])
        data = (np.arange(int(np.prod(shape)), dtype='<f8') * 0.5 + 1).reshape(shape)
        maxshape = tuple(None if m is None else m for m in s['max'])
        if s['index'] == 'implicit':
            dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
            dcpl.set_chunk(tuple(s['chunks']))
            dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
            dcpl.set_fill_value(np.array(-1.0, dtype='<f8'))
            sp = h5py.h5s.create_simple(shape, maxshape)
            dsid = h5py.h5d.create(f.id, s['name'].encode(), h5py.h5t.IEEE_F64LE, sp, dcpl=dcpl)
            h5py.Dataset(dsid)[...] = data
        else:
            kw = dict(compression='gzip', shuffle=True) if s['gzip'] else {}
            f.create_dataset(s['name'], data=data, maxshape=maxshape, chunks=tuple(s['chunks']),
                             fillvalue=-1.0, **kw)
"#;

/// `argv[1]` the file h5py wrote, `argv[2]` the file our editor edited,
/// `argv[3]` a copy of it for h5py to edit, `argv[4]` the JSON operations
/// `{name: {"ours": [...], "h5py": [...]}}` with `{"resize": dims}` and
/// `{"write": [start, count, seed]}` (values `seed + i` row-major over the
/// box). A numpy model applies the operations to the original values
/// (resizing keeps the overlap and fills the rest with -1); prints
/// `{name: "ok" | what differs}` for our edit and then for h5py's own edit
/// of our file.
const CHECK: &str = r#"
import sys, json, h5py, numpy as np
orig, ours, theirs, ops = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
def apply(a, oplist):
    for op in oplist:
        if 'resize' in op:
            b = np.full(tuple(op['resize']), -1.0)
            sl = tuple(slice(0, min(x, y)) for x, y in zip(a.shape, b.shape))
            b[sl] = a[sl]
            a = b
        else:
            start, count, seed = op['write']
            v = (seed + np.arange(int(np.prod(count)), dtype='<f8')).reshape(count)
            a[tuple(slice(s, s + c) for s, c in zip(start, count))] = v
    return a
def read(f, name):
    try:
        return f[name][()]
    except Exception as e:
        return repr(e)
def same(want, got):
    if isinstance(got, str):
        return got
    if want.shape != got.shape:
        return 'shape %s, model %s' % (got.shape, want.shape)
    bad = np.argwhere(want != got)
    if len(bad):
        i = tuple(bad[0])
        return '%d values differ, first at %s: %r, model %r' % (len(bad), i, got[i], want[i])
    return 'ok'
out = {'ours': {}, 'h5py': {}}
models = {}
with h5py.File(orig, 'r') as fo, h5py.File(ours, 'r') as f:
    for name, o in ops.items():
        models[name] = apply(fo[name][()], o['ours'])
        out['ours'][name] = same(models[name], read(f, name))
with h5py.File(theirs, 'r+') as f:
    for name, o in ops.items():
        d = f[name]
        for op in o['h5py']:
            if 'resize' in op:
                d.resize(tuple(op['resize']))
            else:
                start, count, seed = op['write']
                v = (seed + np.arange(int(np.prod(count)), dtype='<f8')).reshape(count)
                d[tuple(slice(s, s + c) for s, c in zip(start, count))] = v
with h5py.File(theirs, 'r') as f:
    for name, o in ops.items():
        out['h5py'][name] = same(apply(models[name], o['h5py']), read(f, name))
print(json.dumps(out))
"#;

fn layout_of(path: &Path, name: &str) -> ChunkedLayout {
    let f = h5fmt::File::open(path).expect("our reader");
    match f.dataset(name).expect("dataset").layout() {
        Layout::Chunked(c) => c.clone(),
        l => panic!("{name}: not chunked: {l:?}"),
    }
}

/// Values `seed + i` over a box of `count`.
fn box_values(count: &[u64], seed: f64) -> Vec<f64> {
    let n: u64 = count.iter().product();
    (0..n).map(|i| seed + i as f64).collect()
}

/// The editor's operations on one dataset (three commits: grow + box across
/// the old edge; shrink + box at the origin; grow a little), and h5py's
/// afterwards (grow by two where the maximum allows, box over the edge).
fn plan(s: &Spec) -> (Vec<Vec<Value>>, Vec<Value>) {
    let max: Vec<u64> = s
        .max
        .iter()
        .map(|m| m.unwrap_or(Dataspace::UNLIMITED))
        .collect();
    let grown: Vec<u64> = s
        .shape
        .iter()
        .zip(&s.max)
        .map(|(&d, m)| match m {
            Some(m) => d + (m - d) * 3 / 4,
            None => d + s.grow,
        })
        .collect();
    let start: Vec<u64> = s.shape.iter().map(|d| d / 2).collect();
    let count: Vec<u64> = grown.iter().zip(&start).map(|(g, a)| g - a).collect();
    let shrunk: Vec<u64> = grown.iter().map(|g| g.saturating_sub(3).max(1)).collect();
    let c2: Vec<u64> = shrunk.iter().map(|d| (*d).min(3)).collect();
    let regrown: Vec<u64> = shrunk
        .iter()
        .zip(&max)
        .map(|(d, m)| (d + 1).min(*m))
        .collect();
    let ours = vec![
        vec![
            json!({"resize": grown}),
            json!({"write": [start, count, 1000]}),
        ],
        vec![
            json!({"resize": shrunk}),
            json!({"write": [vec![0u64; c2.len()], c2, 5000]}),
        ],
        vec![json!({"resize": regrown})],
    ];
    let last: Vec<u64> = regrown
        .iter()
        .zip(&max)
        .map(|(d, m)| (d + 2).min(*m))
        .collect();
    let hstart: Vec<u64> = regrown.iter().map(|d| d.saturating_sub(1)).collect();
    let hcount: Vec<u64> = last.iter().zip(&hstart).map(|(l, a)| l - a).collect();
    let theirs = vec![
        json!({"resize": last}),
        json!({"write": [hstart, hcount, 9000]}),
    ];
    (ours, theirs)
}

fn apply(ed: &mut FileEditor, name: &str, op: &Value) {
    let dims = |v: &Value| -> Vec<u64> { serde_json::from_value(v.clone()).expect("dims") };
    if let Some(r) = op.get("resize") {
        ed.resize(name, &dims(r)).expect("resize");
    } else {
        let w = &op["write"];
        let (start, count) = (dims(&w[0]), dims(&w[1]));
        let seed = w[2].as_f64().expect("seed");
        ed.write(name, &start, &count, &box_values(&count, seed))
            .expect("write");
    }
}

#[test]
fn editing_keeps_every_chunk_index() {
    let specs = specs();
    let spec_json: Vec<Value> = specs
        .iter()
        .map(|s| {
            json!({"name": s.name, "index": s.index, "shape": s.shape, "max": s.max,
                   "chunks": s.chunks, "gzip": s.gzip})
        })
        .collect();
    let spec_path = scratch("specs.json");
    std::fs::write(&spec_path, Value::Array(spec_json).to_string()).expect("specs");
    let orig = scratch("orig.h5");
    if run_py(
        GEN,
        &[
            orig.to_str().expect("utf-8"),
            spec_path.to_str().expect("utf-8"),
        ],
    )
    .is_none()
    {
        eprintln!("skipping: no python venv");
        return;
    }
    // What libhdf5 wrote: the index each dataset should keep.
    let before: Vec<_> = specs
        .iter()
        .map(|s| {
            let k = layout_key(&layout_of(&orig, &s.name));
            assert_eq!(k.0, s.index, "{}: libhdf5 chose {:?}", s.name, k);
            k
        })
        .collect();
    // Paged fixed arrays: more chunks over the maximum dims than a page holds.
    for s in specs.iter().filter(|s| s.name.starts_with("fapaged")) {
        let n: u64 = s
            .max
            .iter()
            .zip(&s.chunks)
            .map(|(m, c)| m.expect("fixed").div_ceil(*c))
            .product();
        assert!(n > 1024, "{}: {n} chunks is not paged", s.name);
    }
    let ours = scratch("ours.h5");
    std::fs::copy(&orig, &ours).expect("copy");
    let plans: Vec<_> = specs.iter().map(plan).collect();
    let mut ed = FileEditor::open(&ours).expect("open");
    for round in 0..3 {
        for (s, (ops, _)) in specs.iter().zip(&plans) {
            for op in &ops[round] {
                apply(&mut ed, &s.name, op);
            }
        }
        ed.flush().expect("flush");
    }
    drop(ed);
    // (b) The same index, parameters, layout version and flags.
    for (s, b) in specs.iter().zip(&before) {
        let after = layout_key(&layout_of(&ours, &s.name));
        assert_eq!(&after, b, "{}: the index changed", s.name);
    }
    // (d) h5 check.
    assert_clean(&ours);
    // (a) and (c): h5py against the numpy model.
    let theirs = scratch("theirs.h5");
    std::fs::copy(&ours, &theirs).expect("copy");
    let mut ops = serde_json::Map::new();
    for (s, (o, t)) in specs.iter().zip(&plans) {
        let flat: Vec<Value> = o.iter().flatten().cloned().collect();
        ops.insert(s.name.clone(), json!({"ours": flat, "h5py": t}));
    }
    let ops_path = scratch("ops.json");
    std::fs::write(&ops_path, Value::Object(ops).to_string()).expect("ops");
    let out = run_py(
        CHECK,
        &[
            orig.to_str().expect("utf-8"),
            ours.to_str().expect("utf-8"),
            theirs.to_str().expect("utf-8"),
            ops_path.to_str().expect("utf-8"),
        ],
    )
    .expect("check");
    let out: Value = serde_json::from_str(&out).expect("json");
    let mut bad = Vec::new();
    for who in ["ours", "h5py"] {
        for s in &specs {
            let r = &out[who][&s.name];
            if r != "ok" {
                bad.push(format!("{who} {}: {r}", s.name));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "h5py disagrees with the model:\n{}",
        bad.join("\n")
    );
    // libhdf5 kept the index type when it modified ours.
    for (s, b) in specs.iter().zip(&before) {
        assert_eq!(
            layout_key(&layout_of(&theirs, &s.name)),
            *b,
            "{}: libhdf5 changed the index",
            s.name
        );
    }
}

/// libhdf5's view of dataset `argv[1]` in each file: shape and values, or
/// the error.
const VIEW: &str = r#"
import sys, json, h5py
out = []
for p in sys.argv[2:]:
    try:
        with h5py.File(p, 'r') as f:
            d = f[sys.argv[1]]
            out.append({'shape': list(d.shape), 'v': d[()].ravel().tolist()})
    except Exception as e:
        out.append({'error': repr(e)})
print(json.dumps(out))
"#;

/// Crash ordering of index rebuilds: the commit of a grow + box write of an
/// extensible array and a v2 B-tree (filtered and not) is cut after every
/// possible number of writes; libhdf5 reads each cut file as before or as
/// after the operation.
#[test]
fn index_rebuilds_are_crash_ordered() {
    cut_test("cut", |s| {
        s.name.starts_with("ea_") || s.name.starts_with("bt2_2d")
    });
}

/// Crash ordering of implicit-index edits, whose whole storage is rewritten
/// to fresh space at the commit: each cut reads as before or after.
#[test]
fn implicit_rewrites_are_crash_ordered() {
    cut_test("cutimp", |s| s.name.starts_with("implicit_"));
}

/// Cut the commit of the first edit round of the specs `keep` selects
/// after every possible number of writes (files named `<tag>_...`).
fn cut_test(tag: &str, keep: impl Fn(&Spec) -> bool) {
    let specs: Vec<Spec> = specs()
        .into_iter()
        .filter(|s| keep(s))
        .map(|mut s| {
            s.grow = s.grow.min(40);
            s
        })
        .collect();
    let spec_json: Vec<Value> = specs
        .iter()
        .map(|s| {
            json!({"name": s.name, "index": s.index, "shape": s.shape, "max": s.max,
                   "chunks": s.chunks, "gzip": s.gzip})
        })
        .collect();
    let spec_path = scratch(&format!("{tag}_specs.json"));
    std::fs::write(&spec_path, Value::Array(spec_json).to_string()).expect("specs");
    let template = scratch(&format!("{tag}_template.h5"));
    if run_py(
        GEN,
        &[
            template.to_str().expect("utf-8"),
            spec_path.to_str().expect("utf-8"),
        ],
    )
    .is_none()
    {
        eprintln!("skipping: no python venv");
        return;
    }
    for s in &specs {
        let (ops, _) = plan(s);
        let name = format!("/{}", s.name);
        let (cuts, done) = cut_runs_after(
            &template,
            |n| scratch(&format!("{tag}_{}_{n}.h5", s.name)),
            5000,
            &format!("{name}: the commit never completes"),
            |ed| {
                for op in &ops[0] {
                    apply(ed, &name, op);
                }
            },
            |ed| ed.flush(),
        );
        let n = cuts.len();
        let view = |paths: &[&PathBuf]| -> Vec<Value> {
            let mut args = vec![name.clone()];
            args.extend(paths.iter().map(|p| p.display().to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let v: Value = serde_json::from_str(&run_py(VIEW, &args).expect("view")).expect("json");
            v.as_array().expect("list").clone()
        };
        let both = view(&[&template, &done]);
        let (before, after) = (&both[0], &both[1]);
        assert!(before.get("error").is_none() && after.get("error").is_none());
        assert_ne!(before, after, "{name}: the edit changed nothing");
        assert_eq!(
            layout_key(&layout_of(&done, &name)),
            layout_key(&layout_of(&template, &name)),
            "{name}: the index changed"
        );
        let refs: Vec<&PathBuf> = cuts.iter().collect();
        let (mut saw_before, mut saw_after) = (0, 0);
        for (i, v) in view(&refs).iter().enumerate() {
            if v == before {
                saw_before += 1;
            } else if v == after {
                saw_after += 1;
            } else {
                panic!("{name}: cut after {i} writes reads as {v}");
            }
            h5fmt::File::open(&cuts[i])
                .and_then(|f| f.dataset(&name).map(|_| ()))
                .expect("our reader");
        }
        assert!(saw_before > 0, "{name}: no cut before the commit point");
        assert_clean(&done);
        println!("{name}: {n} writes cut, {saw_before} read as before, {saw_after} as after");
        for p in cuts {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// h5py writes `argv[1]` (`libver='latest'`): dataset `ea_paged`, f8, shape
/// `argv[2]`, one unlimited dimension, chunks of one element (so element
/// `i` of the extensible array is chunk `i`), fill value -1, with the
/// `[start, count, seed]` boxes of the JSON `argv[3]` written (`seed + i`).
const GEN_SPARSE: &str = r#"
import sys, json, h5py, numpy as np
path, n, boxes = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3])
with h5py.File(path, 'w', libver='latest') as f:
    d = f.create_dataset('ea_paged', shape=(n,), maxshape=(None,), chunks=(1,), dtype='<f8',
                         fillvalue=-1.0)
    for start, count, seed in boxes:
        d[start[0]:start[0] + count[0]] = seed + np.arange(count[0], dtype='<f8')
"#;

/// An extensible array whose data blocks are paged: libhdf5's parameters
/// (4 elements in the index block, data blocks of at least 16 elements,
/// doubling every second super block, pages of 2^10 elements) give super
/// block 13 data blocks of 2048 elements from element 131060 on, two pages
/// each. h5py writes a sparse dataset reaching there (some pages never
/// initialized), our editor writes into an uninitialized page, overwrites
/// h5py's elements, grows the dataset and writes at the new end; h5py reads
/// what the numpy model holds, then edits our index itself.
#[test]
fn paged_extensible_array_edits() {
    // Super block u: 2^(u/2) data blocks of 16 * 2^ceil(u/2) elements.
    let mut start = 4u64; // elements in the index block
    for u in 0..13u32 {
        start += (1u64 << (u / 2)) * 16 * (1u64 << u.div_ceil(2));
    }
    assert_eq!(start, 131_060);
    let dblk = 16u64 << 7; // super block 13's data block elements
    assert!(dblk > 1024, "not paged");
    let n = start + 3 * dblk;
    let pre = json!([
        [[0], [5], 1],
        [[start + 100], [10], 100],
        [[start + dblk + 1500], [7], 200],
    ]);
    let orig = scratch("paged_orig.h5");
    if run_py(
        GEN_SPARSE,
        &[
            orig.to_str().expect("utf-8"),
            &n.to_string(),
            &pre.to_string(),
        ],
    )
    .is_none()
    {
        eprintln!("skipping: no python venv");
        return;
    }
    let name = "ea_paged";
    let before = layout_key(&layout_of(&orig, name));
    assert_eq!(before.0, "earray", "libhdf5 chose {before:?}");
    let ours_ops = vec![
        // Page 1 of the first 2048-element data block: never initialized.
        json!({"write": [[start + 1030], [12], 1000]}),
        // Overwrite part of h5py's elements in page 0.
        json!({"write": [[start + 105], [3], 2000]}),
        json!({"resize": [n + dblk + 10]}),
        json!({"write": [[n + dblk], [10], 3000]}),
    ];
    let theirs_ops = vec![
        json!({"resize": [n + dblk + 20]}),
        json!({"write": [[start + 1040], [4], 9000]}),
        json!({"write": [[n + dblk + 15], [5], 9100]}),
    ];
    let ours = scratch("paged_ours.h5");
    std::fs::copy(&orig, &ours).expect("copy");
    let mut ed = FileEditor::open(&ours).expect("open");
    for op in &ours_ops[..2] {
        apply(&mut ed, name, op);
    }
    ed.flush().expect("flush");
    for op in &ours_ops[2..] {
        apply(&mut ed, name, op);
    }
    ed.flush().expect("flush");
    drop(ed);
    assert_eq!(
        layout_key(&layout_of(&ours, name)),
        before,
        "the index changed"
    );
    assert_clean(&ours);
    let theirs = scratch("paged_theirs.h5");
    std::fs::copy(&ours, &theirs).expect("copy");
    let ops = json!({name: {"ours": ours_ops, "h5py": theirs_ops}});
    let ops_path = scratch("paged_ops.json");
    std::fs::write(&ops_path, ops.to_string()).expect("ops");
    let out = run_py(
        CHECK,
        &[
            orig.to_str().expect("utf-8"),
            ours.to_str().expect("utf-8"),
            theirs.to_str().expect("utf-8"),
            ops_path.to_str().expect("utf-8"),
        ],
    )
    .expect("check");
    let out: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(out["ours"][name], "ok", "h5py reads ours: {out}");
    assert_eq!(out["h5py"][name], "ok", "h5py edits ours: {out}");
    assert_eq!(layout_key(&layout_of(&theirs, name)), before);
    assert_clean(&theirs);
}
