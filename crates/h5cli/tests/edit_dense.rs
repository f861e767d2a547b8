//! Dense link and attribute storage (fractal heap + v2 B-tree indexes) in
//! the writer and the in-place editor, cross-checked with h5py (libhdf5):
//! files with dense groups (20 and 3000 links, with and without creation
//! order) and dense attributes (20 small ones, one of 100 KiB) made by h5py
//! are edited by `FileEditor` (links and attributes added and deleted,
//! compact ↔ dense conversions both ways); libhdf5 then reads exactly the
//! expected links (in creation order when tracked) and attribute values,
//! adds and deletes more of them itself in the edited file (so our heaps
//! and B-trees are valid for libhdf5's writer too), and `h5 check` finds
//! nothing. The writer's own dense storage is checked with 5000 links and
//! 2000 attributes.

use h5fmt::{FileEditor, FileWriter};
use std::path::{Path, PathBuf};

mod common;
use common::{assert_clean, cut_runs, run_py};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit_dense", name)
}

/// libhdf5's view: {group path: {"links": [names in iteration order
/// (creation order when tracked, else by name)], "attrs": {name: value or
/// [len, sum] for arrays}}} for every group and dataset.
const VIEW: &str = r#"
import sys, json, h5py, numpy as np
def val(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, np.ndarray):
        return [int(v.size), float(np.asarray(v, dtype='f8').sum())]
    if isinstance(v, (np.integer,)): return int(v)
    if isinstance(v, (np.floating,)): return float(v)
    return v
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    def one(name, obj):
        d = {'attrs': {k: val(obj.attrs[k]) for k in obj.attrs}}
        if isinstance(obj, h5py.Group):
            d['links'] = list(obj.keys())
        out['/' + name] = d
    one('', f)
    f.visititems(one)
print(json.dumps(out))
"#;

fn view(path: &Path) -> Option<serde_json::Value> {
    let out = run_py(VIEW, &[path.to_str().expect("utf-8")])?;
    Some(serde_json::from_str(&out).expect("json"))
}

#[test]
fn writer_dense_5000_links_2000_attrs() {
    let path = scratch("writer_big.h5");
    let mut fw = FileWriter::create_with(&path, h5fmt::Format::Latest).expect("create");
    {
        let mut root = fw.root();
        let mut g = root.create_group("many").expect("group");
        for i in 0..5000 {
            g.create_group(&format!("child{i:05}")).expect("child");
        }
    }
    {
        let mut root = fw.root();
        let mut g = root
            .create_group_with("ordered", h5fmt::write::GroupOptions { track_order: true })
            .expect("group");
        // Reverse name order: iteration by creation order differs from by name.
        for i in (0..300).rev() {
            g.create_group(&format!("o{i:03}")).expect("child");
        }
    }
    {
        let mut root = fw.root();
        let mut a = root.create_group("attrs").expect("group");
        for i in 0..2000i64 {
            a.set_attr(&format!("attr{i:04}"), i * 7).expect("attr");
        }
        a.set_attr("big", (0..20000).map(f64::from).collect::<Vec<_>>())
            .expect("big attr");
    }
    {
        // 1.3 MB of link messages: more than a 4-column doubling table of
        // 512-byte to 64 KiB blocks holds (512 KiB), so the table widens.
        let mut root = fw.root();
        let mut g = root.create_group("wide").expect("group");
        for i in 0..20000 {
            g.link_soft(
                &format!("w{i:05}"),
                &format!("/a/rather/long/soft/link/target/path/number/{i:05}"),
            )
            .expect("soft link");
        }
    }
    fw.close().expect("close");
    assert_clean(&path);
    let f = h5fmt::File::open(&path).expect("open");
    let wide = f.group("/wide").expect("wide");
    assert_eq!(wide.member_names().expect("names").len(), 20000);
    match wide.link("w12345").expect("link").target {
        h5fmt::format::message::LinkTarget::Soft(p) => {
            assert_eq!(p, "/a/rather/long/soft/link/target/path/number/12345")
        }
        t => panic!("{t:?}"),
    }
    assert_eq!(
        f.group("/many")
            .expect("g")
            .member_names()
            .expect("names")
            .len(),
        5000
    );
    let Some(v) = view(&path) else { return };
    let links = v["/many"]["links"].as_array().expect("links");
    assert_eq!(links.len(), 5000);
    for (i, l) in links.iter().enumerate() {
        assert_eq!(l, &serde_json::json!(format!("child{i:05}")));
    }
    let want: Vec<String> = (0..300).rev().map(|i| format!("o{i:03}")).collect();
    assert_eq!(v["/ordered"]["links"], serde_json::json!(want));
    let soft = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r') as f:
    g = f['wide']
    names = list(g.keys())
    assert len(names) == 20000, len(names)
    assert names[0] == 'w00000' and names[-1] == 'w19999'
    for i in (0, 777, 19999):
        l = g.get(f'w{i:05}', getlink=True)
        assert l.path == f'/a/rather/long/soft/link/target/path/number/{i:05}', l.path
    # track_order: tracked and indexed, as h5py's track_order=True.
    flags = f['ordered'].id.get_create_plist().get_link_creation_order()
    assert flags == h5py.h5p.CRT_ORDER_TRACKED | h5py.h5p.CRT_ORDER_INDEXED, flags
print('ok')
"#;
    assert_eq!(
        run_py(soft, &[path.to_str().expect("utf-8")])
            .expect("py")
            .trim(),
        "ok"
    );
    let attrs = v["/attrs"]["attrs"].as_object().expect("attrs");
    assert_eq!(attrs.len(), 2001);
    for i in 0..2000i64 {
        assert_eq!(attrs[&format!("attr{i:04}")], i * 7);
    }
    assert_eq!(
        attrs["big"],
        serde_json::json!([20000, (0..20000).sum::<i64>() as f64])
    );
    // libhdf5 extends and shrinks our heaps and B-trees.
    let more = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    for k in ['zz1', 'zz2', 'aa0']:
        f['many'].create_group(k)
        f['ordered'].create_group(k)
    del f['many/child00000']
    del f['many/child04999']
    del f['ordered/o150']
    f['attrs'].attrs['extra'] = -1
    del f['attrs'].attrs['attr0000']
"#;
    run_py(more, &[path.to_str().expect("utf-8")]).expect("h5py edits");
    let v = view(&path).expect("view");
    let mut want: Vec<String> = (1..4999).map(|i| format!("child{i:05}")).collect();
    want.extend(["zz1", "zz2", "aa0"].map(String::from));
    want.sort();
    assert_eq!(v["/many"]["links"], serde_json::json!(want));
    let mut want: Vec<String> = (0..300)
        .rev()
        .filter(|&i| i != 150)
        .map(|i| format!("o{i:03}"))
        .collect();
    want.extend(["zz1", "zz2", "aa0"].map(String::from));
    assert_eq!(v["/ordered"]["links"], serde_json::json!(want));
    let attrs = v["/attrs"]["attrs"].as_object().expect("attrs");
    assert_eq!(attrs.len(), 2001);
    assert_eq!(attrs["extra"], -1);
    assert!(attrs.get("attr0000").is_none());
    assert_clean(&path);
}

const GEN: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w', libver='latest') as f:
    for name, n, order in [('d20', 20, False), ('d3000', 3000, False), ('o20', 20, True),
                           ('o3000', 3000, True), ('c8', 8, False), ('o8', 8, True)]:
        g = f.create_group(name, track_order=order)
        for i in reversed(range(n)):
            g.create_group(f'g{i:04}')
    a = f.create_group('a20')
    for i in range(20):
        a.attrs[f'a{i:02}'] = i
    b = f.create_group('abig')
    b.attrs['small1'] = 1
    b.attrs['big'] = np.arange(100 * 1024 // 8, dtype='f8')
    b.attrs['small2'] = 2
    c = f.create_group('a8')
    for i in range(8):
        c.attrs[f'a{i}'] = i
    f.create_group('a2').attrs['x'] = 5
    t = f.create_group('ao20', track_order=True)
    for i in reversed(range(20)):
        t.attrs[f't{i:02}'] = i
    t = f.create_group('oc', track_order=True)
    for i in reversed(range(3)):
        t.create_group(f'g{i:04}')
        t.attrs[f'c{i}'] = i
"#;

/// What h5py does to the edited file: in each group add 3 links and delete
/// 2, on each attribute holder add 2 attributes and delete 1.
const H5PY_MORE: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'r+') as f:
    for name in ['d20', 'd3000', 'o20', 'o3000', 'c8', 'o8', 'oc']:
        g = f[name]
        for k in ['py1', 'py2', 'py3']:
            g.create_group(k)
        keys = [k for k in g.keys() if not k.startswith('py')]
        del g[keys[0]]
        del g[keys[-1]]
    for name in ['a20', 'abig', 'a8', 'a2', 'ao20', 'oc']:
        o = f[name]
        o.attrs['pyA'] = 11
        o.attrs['pyB'] = np.arange(3000, dtype='f8')
        del o.attrs[list(o.attrs.keys())[0]]
"#;

/// The model of one group: link names in creation order, tracked or not.
#[derive(Clone, Debug)]
struct GroupModel {
    links: Vec<String>,
    tracked: bool,
}

impl GroupModel {
    fn view(&self) -> serde_json::Value {
        let mut v = self.links.clone();
        if !self.tracked {
            v.sort();
        }
        serde_json::json!(v)
    }
}

#[test]
fn editor_dense_links_and_attributes() {
    let path = scratch("h5py_dense.h5");
    let Some(_) = run_py(GEN, &[path.to_str().expect("utf-8")]) else {
        println!("skipped: no python");
        return;
    };
    let mut groups: std::collections::BTreeMap<&str, GroupModel> = Default::default();
    for (name, n, tracked) in [
        ("d20", 20, false),
        ("d3000", 3000, false),
        ("o20", 20, true),
        ("o3000", 3000, true),
        ("c8", 8, false),
        ("o8", 8, true),
        ("oc", 3, true),
    ] {
        groups.insert(
            name,
            GroupModel {
                links: (0..n).rev().map(|i| format!("g{i:04}")).collect(),
                tracked,
            },
        );
    }
    let mut ed = FileEditor::open(&path).expect("open");
    let ds = h5fmt::write::edit::NewDataset::new(h5fmt::Datatype::int_le(4, true), &[3]);
    // d20: add two, then delete down to 5 links (dense → compact).
    ed.create_group("/d20", "new1").expect("group");
    ed.create_dataset("/d20", "ds", &ds).expect("dataset");
    ed.write("/d20/ds", &[0], &[3], &[7i32, 8, 9])
        .expect("write");
    let m = groups.get_mut("d20").expect("d20");
    m.links.push("new1".into());
    m.links.push("ds".into());
    for i in 0..17 {
        let n = format!("g{i:04}");
        ed.delete_link("/d20", &n).expect("delete");
        m.links.retain(|l| *l != n);
    }
    // Large groups: add and delete.
    for g in ["d3000", "o3000"] {
        let m = groups.get_mut(g).expect("group");
        for i in 0..5 {
            let n = format!("x{i}");
            ed.create_group(&format!("/{g}"), &n).expect("group");
            m.links.push(n);
        }
        for i in (0..3000).step_by(600) {
            let n = format!("g{i:04}");
            ed.delete_link(&format!("/{g}"), &n).expect("delete");
            m.links.retain(|l| *l != n);
        }
    }
    // o20: ordered additions and a delete.
    let m = groups.get_mut("o20").expect("o20");
    for n in ["zz_new", "aa_new"] {
        ed.create_group("/o20", n).expect("group");
        m.links.push(n.into());
    }
    ed.delete_link("/o20", "g0005").expect("delete");
    m.links.retain(|l| l != "g0005");
    // Compact groups at max_compact: one more turns them dense.
    for g in ["c8", "o8"] {
        ed.create_group(&format!("/{g}"), "ninth").expect("group");
        groups.get_mut(g).expect("g").links.push("ninth".into());
    }
    let e = ed.create_group("/d3000", "x1").expect_err("collision");
    assert_eq!(e.kind(), h5fmt::ErrorKind::Usage);
    let e = ed.delete_link("/d3000", "nope").expect_err("missing");
    assert_eq!(e.kind(), h5fmt::ErrorKind::NotFound);

    // Attributes.
    for i in 20..25i64 {
        ed.set_attr("/a20", &format!("a{i:02}"), i).expect("attr");
    }
    ed.set_attr("/a20", "a03", "three").expect("overwrite");
    for i in 5..15 {
        ed.delete_attr("/a20", &format!("a{i:02}"))
            .expect("delete attr");
    }
    let big: Vec<f64> = (0..25_600).map(f64::from).collect();
    ed.set_attr("/abig", "big", big.clone())
        .expect("bigger attr");
    ed.delete_attr("/abig", "small1").expect("delete");
    ed.set_attr("/abig", "small3", 3i64).expect("attr");
    ed.set_attr("/a8", "a8", 8i64).expect("ninth attr");
    let big2: Vec<f64> = (0..12_800).map(|i| f64::from(i) * 0.5).collect();
    ed.set_attr("/a2", "huge", big2.clone())
        .expect("large attr");
    ed.set_attr("/ao20", "new", 100i64).expect("attr");
    // Compact storage with creation order tracked: new entries come last.
    ed.create_group("/oc", "aa").expect("group");
    groups.get_mut("oc").expect("oc").links.push("aa".into());
    ed.set_attr("/oc", "a_new", 9i64).expect("attr");
    ed.delete_attr("/ao20", "t03").expect("delete");
    ed.close().expect("close");
    assert_clean(&path);

    let sum = |v: &[f64]| v.iter().sum::<f64>();
    let mut want_attrs = serde_json::json!({
        "/a20": {},
        "/abig": {"big": [big.len(), sum(&big)], "small2": 2, "small3": 3},
        "/a8": {},
        "/a2": {"x": 5, "huge": [big2.len(), sum(&big2)]},
        "/ao20": {},
        "/oc": {"c2": 2, "c1": 1, "c0": 0, "a_new": 9},
    });
    {
        let a = want_attrs["/a20"].as_object_mut().expect("obj");
        for i in (0..5).chain(15..25) {
            a.insert(format!("a{i:02}"), serde_json::json!(i));
        }
        a.insert("a03".into(), serde_json::json!("three"));
        let a = want_attrs["/a8"].as_object_mut().expect("obj");
        for i in 0..9 {
            a.insert(format!("a{i}"), serde_json::json!(i));
        }
        let a = want_attrs["/ao20"].as_object_mut().expect("obj");
        for i in (0..20).rev().filter(|&i| i != 3) {
            a.insert(format!("t{i:02}"), serde_json::json!(i));
        }
        a.insert("new".into(), serde_json::json!(100));
    }
    let check = |v: &serde_json::Value,
                 groups: &std::collections::BTreeMap<&str, GroupModel>,
                 want_attrs: &serde_json::Value| {
        for (g, m) in groups {
            assert_eq!(v[format!("/{g}")]["links"], m.view(), "links of /{g}");
        }
        for (o, want) in want_attrs.as_object().expect("obj") {
            let got = &v[o]["attrs"];
            // Unordered objects: compare as maps; ordered: also the key order.
            assert_eq!(
                got.as_object().expect("attrs").len(),
                want.as_object().expect("attrs").len(),
                "attributes of {o}: {got}"
            );
            for (k, val) in want.as_object().expect("attrs") {
                assert_eq!(&got[k], val, "attribute {o}/{k}");
            }
            if o == "/ao20" || o == "/oc" {
                let keys: Vec<&String> = got.as_object().expect("attrs").keys().collect();
                let want_keys: Vec<&String> = want.as_object().expect("attrs").keys().collect();
                assert_eq!(keys, want_keys, "attribute order of {o}");
            }
        }
    };
    let v = view(&path).expect("view");
    check(&v, &groups, &want_attrs);
    assert_eq!(v["/d20/ds"]["attrs"], serde_json::json!({}));

    // libhdf5 edits the file we edited.
    run_py(H5PY_MORE, &[path.to_str().expect("utf-8")]).expect("h5py edits");
    for m in groups.values_mut() {
        let mut order = m.view();
        let keys: Vec<String> = order
            .as_array_mut()
            .expect("arr")
            .iter()
            .map(|k| k.as_str().expect("s").to_string())
            .collect();
        let (first, last) = (keys[0].clone(), keys[keys.len() - 1].clone());
        m.links.retain(|l| *l != first && *l != last);
        m.links.extend(["py1", "py2", "py3"].map(String::from));
    }
    for (o, want) in want_attrs.as_object_mut().expect("obj") {
        let w = want.as_object_mut().expect("obj");
        // h5py deletes the first key in its iteration order (by name unless tracked).
        let first = if o == "/ao20" || o == "/oc" {
            w.keys().next().cloned()
        } else {
            let mut k: Vec<String> = w.keys().cloned().collect();
            k.push("pyA".into());
            k.push("pyB".into());
            k.sort();
            k.first().cloned()
        };
        w.insert("pyA".into(), serde_json::json!(11));
        w.insert(
            "pyB".into(),
            serde_json::json!([3000, (0..3000).sum::<i64>() as f64]),
        );
        if let Some(f) = first {
            w.shift_remove(&f);
        }
    }
    let v = view(&path).expect("view");
    check(&v, &groups, &want_attrs);
    assert_clean(&path);
    // Our reader agrees after libhdf5's edits.
    let f = h5fmt::File::open(&path).expect("open");
    let mut names = f.group("/o3000").expect("g").member_names().expect("names");
    let mut want = groups["o3000"].links.clone();
    names.sort();
    want.sort();
    assert_eq!(names, want);
}

const GEN_CRASH: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'w', libver='latest') as f:
    g = f.create_group('c8')
    for i in range(8):
        g.create_group(f'g{i}')
    g = f.create_group('o8', track_order=True)
    for i in reversed(range(8)):
        g.create_group(f'g{i}')
    g = f.create_group('d6')
    for i in range(9):
        g.create_group(f'g{i}')
    for i in range(3):
        del g[f'g{i}']
    g = f.create_group('big')
    for i in range(300):
        g.create_group(f'g{i:03}')
    o = f.create_group('a8')
    for i in range(8):
        o.attrs[f'a{i}'] = i
    o = f.create_group('ad6')
    for i in range(9):
        o.attrs[f'a{i}'] = i
    for i in range(3):
        del o.attrs[f'a{i}']
"#;

/// libhdf5's view of group `argv[1]`'s links and attributes in each file.
const VIEW_MANY: &str = r#"
import sys, json, h5py
out = []
for p in sys.argv[2:]:
    with h5py.File(p, 'r') as f:
        o = f[sys.argv[1]]
        out.append({'links': list(o.keys()), 'attrs': {k: int(o.attrs[k]) for k in o.attrs}})
print(json.dumps(out))
"#;

/// Crash ordering: every operation is cut after each possible number of
/// writes (`fail_writes_after`); libhdf5 must then read either the state
/// before or the state after the operation, never a mix or an error,
/// through compact → dense, dense → compact and dense rebuilds of links
/// and attributes.
#[test]
fn dense_edits_are_crash_ordered() {
    let template = scratch("crash_template.h5");
    let Some(_) = run_py(GEN_CRASH, &[template.to_str().expect("utf-8")]) else {
        return;
    };
    type Op = fn(&mut FileEditor) -> h5fmt::Result<()>;
    let ops: [(&str, Op); 6] = [
        ("/c8", |ed| ed.create_group("/c8", "ninth")),
        ("/o8", |ed| ed.create_group("/o8", "ninth")),
        ("/d6", |ed| ed.delete_link("/d6", "g5")),
        ("/big", |ed| ed.create_group("/big", "new")),
        ("/a8", |ed| {
            ed.set_attr("/a8", "a8", 8i64)?;
            ed.flush()
        }),
        ("/ad6", |ed| {
            ed.delete_attr("/ad6", "a4")?;
            ed.flush()
        }),
    ];
    for (obj, op) in ops {
        let before = run_py(VIEW_MANY, &[obj, template.to_str().expect("utf-8")]).expect("view");
        let (cut_files, done) = cut_runs(
            &template,
            |n| scratch(&format!("crash_{}_{n}.h5", &obj[1..])),
            1000,
            &format!("{obj}: the operation never completes"),
            op,
        );
        let n = cut_files.len();
        assert!(n >= 1, "{obj}: no write");
        let after = run_py(VIEW_MANY, &[obj, done.to_str().expect("utf-8")]).expect("view");
        let before: serde_json::Value = serde_json::from_str(&before).expect("json");
        let after: serde_json::Value = serde_json::from_str(&after).expect("json");
        assert_ne!(before, after, "{obj}: the operation changed nothing");
        let mut args = vec![obj.to_string()];
        args.extend(cut_files.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let cuts = run_py(VIEW_MANY, &args).expect("views");
        let cuts: serde_json::Value = serde_json::from_str(&cuts).expect("json");
        let (mut saw_before, mut saw_after) = (0, 0);
        for (i, v) in cuts.as_array().expect("arr").iter().enumerate() {
            if *v == before[0] {
                saw_before += 1;
            } else if *v == after[0] {
                saw_after += 1;
            } else {
                panic!("{obj}: cut after {i} writes reads as {v}, neither {before} nor {after}");
            }
            // Our reader opens every cut file too.
            let f = h5fmt::File::open(&cut_files[i]).expect("our reader");
            f.object(obj).expect("object");
        }
        assert!(saw_before > 0, "{obj}: no cut before the commit point");
        assert_clean(&done);
        println!("{obj}: {n} writes, {saw_before} cuts before, {saw_after} after");
    }
}

const GEN_STAB: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'w', libver='earliest') as f:
    g = f.create_group('g')
    for i in range(1000):
        g.create_group(f'n{i:04}')
    f.create_group('small').create_group('only')
"#;

/// Symbol-table groups whose B-tree has more than one level (libhdf5's
/// earliest format, 1000 links) take inserts and deletes through a rebuild;
/// one-level trees whose root fills up grow a level. libhdf5 reads the exact
/// link set, edits the group itself afterwards, and every cut of an insert
/// reads as before or after.
#[test]
fn multi_level_symbol_tables() {
    let path = scratch("stab.h5");
    let Some(_) = run_py(GEN_STAB, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    // Crash cuts of one insert and one delete in the multi-level group.
    for (what, op) in [("insert", 0usize), ("delete", 1usize)] {
        let (cuts, _) = cut_runs(
            &path,
            |n| scratch(&format!("stab_cut_{what}_{n}.h5")),
            2000,
            "never completes",
            |ed| {
                if op == 0 {
                    ed.create_group("/g", "m0500x")
                } else {
                    ed.delete_link("/g", "n0500")
                }
            },
        );
        let mut args = vec!["/g".to_string()];
        args.extend(cuts.iter().map(|p| p.display().to_string()));
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let v: serde_json::Value =
            serde_json::from_str(&run_py(VIEW_MANY, &args).expect("views")).expect("json");
        let before: Vec<String> = (0..1000).map(|i| format!("n{i:04}")).collect();
        let mut after = before.clone();
        if op == 0 {
            after.push("m0500x".into());
        } else {
            after.retain(|n| n != "n0500");
        }
        after.sort();
        for (i, cut) in v.as_array().expect("arr").iter().enumerate() {
            let links = &cut["links"];
            assert!(
                *links == serde_json::json!(before) || *links == serde_json::json!(after),
                "{what}: cut {i} reads {} links",
                links.as_array().map_or(0, Vec::len)
            );
        }
    }
    let mut want: Vec<String> = (0..1000).map(|i| format!("n{i:04}")).collect();
    let mut ed = FileEditor::open(&path).expect("open");
    for i in 0..150 {
        let n = format!("x{i:03}");
        ed.create_group("/g", &n).expect("insert");
        want.push(n);
    }
    for i in (0..1000).step_by(7) {
        let n = format!("n{i:04}");
        ed.delete_link("/g", &n).expect("delete");
        want.retain(|l| *l != n);
    }
    // A one-level group grows past its root's capacity (32 nodes of 8).
    let mut small = vec!["only".to_string()];
    for i in 0..300 {
        let n = format!("s{i:03}");
        ed.create_group("/small", &n).expect("insert small");
        small.push(n);
    }
    let e = ed.create_group("/g", "x010").expect_err("collision");
    assert_eq!(e.kind(), h5fmt::ErrorKind::Usage);
    let e = ed.delete_link("/g", "n0000").expect_err("gone");
    assert_eq!(e.kind(), h5fmt::ErrorKind::NotFound);
    ed.close().expect("close");
    assert_clean(&path);
    want.sort();
    small.sort();
    let v = view(&path).expect("view");
    assert_eq!(v["/g"]["links"], serde_json::json!(want));
    assert_eq!(v["/small"]["links"], serde_json::json!(small));
    let more = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'r+') as f:
    for k in ['py1', 'py2']:
        f['g'].create_group(k)
        f['small'].create_group(k)
    del f['g/x005']
    del f['small/s100']
"#;
    run_py(more, &[path.to_str().expect("utf-8")]).expect("h5py edits");
    want.retain(|l| l != "x005");
    small.retain(|l| l != "s100");
    want.extend(["py1", "py2"].map(String::from));
    small.extend(["py1", "py2"].map(String::from));
    want.sort();
    small.sort();
    let v = view(&path).expect("view");
    assert_eq!(v["/g"]["links"], serde_json::json!(want));
    assert_eq!(v["/small"]["links"], serde_json::json!(small));
    assert_clean(&path);
}

const GEN_BOTH: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'w', libver='latest') as f:
    for name, nattrs in [('both', 20), ('links_dense', 2)]:
        g = f.create_group(name)
        for i in range(20):
            g.create_group(f'g{i:02}')
        for i in range(nattrs):
            g.attrs[f'a{i:02}'] = i
"#;

/// One object with dense links and dense (or compact) attributes: link
/// edits and attribute edits interleaved on the same group must each land
/// in their own storage (found by the read_write fuzz target: an attribute
/// set after a link delete went into the group's link heap).
#[test]
fn links_and_attributes_of_one_dense_group() {
    let path = scratch("both_dense.h5");
    let Some(_) = run_py(GEN_BOTH, &[path.to_str().expect("utf-8")]) else {
        println!("skipped: no python");
        return;
    };
    let mut ed = FileEditor::open(&path).expect("open");
    for g in ["/both", "/links_dense"] {
        ed.delete_link(g, "g03").expect("delete link");
        ed.set_attr(g, "new_attr", 42i64)
            .expect("attr after link delete");
        ed.create_group(g, "new_group").expect("group after attr");
        ed.delete_attr(g, "a01").expect("delete attr");
        ed.set_attr(g, "a00", 7i64).expect("overwrite");
        ed.delete_link(g, "g07").expect("delete link");
    }
    ed.close().expect("close");
    assert_clean(&path);
    let v = view(&path).expect("view");
    for (g, nattrs) in [("/both", 20), ("/links_dense", 2)] {
        let mut links: Vec<String> = (0..20)
            .filter(|i| *i != 3 && *i != 7)
            .map(|i| format!("g{i:02}"))
            .collect();
        links.push("new_group".into());
        links.sort();
        assert_eq!(v[g]["links"], serde_json::json!(links), "links of {g}");
        let mut want = serde_json::Map::new();
        for i in (0..nattrs).filter(|i| *i != 1) {
            want.insert(format!("a{i:02}"), serde_json::json!(i));
        }
        want.insert("a00".into(), serde_json::json!(7));
        want.insert("new_attr".into(), serde_json::json!(42));
        let got = v[g]["attrs"].as_object().expect("attrs");
        assert_eq!(got.len(), want.len(), "attributes of {g}: {got:?}");
        for (k, val) in &want {
            assert_eq!(&got[k], val, "attribute {g}/{k}");
        }
    }
}

/// Link names of 64 KiB and more: their link messages fit no object
/// header, so the group goes dense and the message is a huge object of the
/// link heap (found through the heap's type-1 v2 B-tree), as libhdf5 does —
/// written by `FileWriter` (a group of 3 links, and one of 20) and added by
/// `FileEditor` (to a compact and to a dense group made by h5py); libhdf5
/// lists every name and opens the objects behind them.
#[test]
fn link_names_above_64_kib() {
    let long = |c: char, n: usize| std::iter::repeat_n(c, n).collect::<String>();
    let path = scratch("long_links.h5");
    let mut fw = FileWriter::create_with(&path, h5fmt::Format::V18).expect("create");
    {
        let mut root = fw.root();
        let mut few = root.create_group("few").expect("few");
        few.create_group("a").expect("a");
        few.create_group(&long('x', 70_000)).expect("long");
        few.create_group("b").expect("b");
    }
    {
        let mut root = fw.root();
        let mut many = root.create_group("many").expect("many");
        for i in 0..19 {
            many.create_group(&format!("g{i:02}")).expect("g");
        }
        many.create_group(&long('y', 100_000)).expect("long");
    }
    fw.close().expect("close");
    assert_clean(&path);
    let v = view(&path).expect("view");
    let names = |g: &str| -> Vec<String> {
        v[g]["links"]
            .as_array()
            .expect("links")
            .iter()
            .map(|n| n.as_str().expect("name").to_string())
            .collect()
    };
    assert_eq!(names("/few"), ["a", "b", &long('x', 70_000)]);
    let many = names("/many");
    assert_eq!(many.len(), 20);
    assert!(many.contains(&long('y', 100_000)));
    // The editor, on a file made by h5py.
    let src = scratch("long_links_edit.h5");
    let gen = "import sys, h5py\n\
               with h5py.File(sys.argv[1], 'w', libver='latest') as f:\n\
               \x20   f.create_group('compact').create_group('one')\n\
               \x20   d = f.create_group('dense')\n\
               \x20   for i in range(12): d.create_group('g%02d' % i)\n";
    let Some(_) = run_py(gen, &[src.to_str().expect("utf-8")]) else {
        println!("skipped: no python");
        return;
    };
    let mut ed = FileEditor::open(&src).expect("open");
    ed.create_group("/compact", &long('z', 80_000))
        .expect("long link into a compact group");
    ed.create_group("/dense", &long('w', 90_000))
        .expect("long link into a dense group");
    ed.close().expect("close");
    assert_clean(&src);
    let v = view(&src).expect("view");
    let links = |g: &str| v[g]["links"].as_array().expect("links").len();
    assert_eq!(links("/compact"), 2);
    assert_eq!(links("/dense"), 13);
    let has = |g: &str, n: &str| {
        v[g]["links"]
            .as_array()
            .expect("links")
            .iter()
            .any(|x| x.as_str() == Some(n))
    };
    assert!(has("/compact", &long('z', 80_000)));
    assert!(has("/dense", &long('w', 90_000)));
    assert!(v.get(format!("/compact/{}", long('z', 80_000))).is_some());
}
