//! In-place editing with `h5fmt::FileEditor`, cross-checked with h5py
//! (libhdf5) and `h5 check`: files written by h5py (libver earliest and
//! latest: v1 B-tree, extensible array, v2 B-tree, fixed array, single chunk,
//! implicit and contiguous layouts) and by our writer are resized, appended
//! to and written into; after every commit libhdf5 reads exactly the values
//! an independent model of the same operations predicts. Bad arguments give
//! typed errors and leave the file byte-for-byte unchanged. A crash test
//! kills an appending child process with SIGKILL at random moments.

use h5cli::check::{check_path, is_clean};
use h5fmt::{ErrorKind, FileEditor};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::{python, run_py};

fn scratch(name: &str) -> PathBuf {
    common::scratch("h5fmt_edit", name)
}

/// Datasets made by h5py: name → (dtype, shape, maxshape (-1 unlimited),
/// chunks or none, options).
const GEN: &str = r#"
import sys, h5py, numpy as np
path, libver = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=libver) as f:
    g = f.create_group('g')
    d = f.create_dataset('ea', data=np.arange(10, dtype='<f8') * 1.5, maxshape=(None,), chunks=(4,),
                         compression='gzip', shuffle=True, fillvalue=-1.0)
    d = g.create_dataset('bt2', data=np.arange(30, dtype='<i4').reshape(5, 6), maxshape=(None, None), chunks=(2, 3))
    d = f.create_dataset('fa', data=np.arange(10, dtype='<i2'), maxshape=(20,), chunks=(3,), fletcher32=True)
    d = f.create_dataset('single', data=np.arange(24, dtype='<f4').reshape(6, 4), maxshape=(6, 4), chunks=(6, 4),
                         compression='gzip')
    d = f.create_dataset('rows', data=np.arange(12, dtype='<f8').reshape(4, 3), maxshape=(None, 3), chunks=(5, 3))
    f.create_dataset('contig', data=np.arange(20, dtype='<f4').reshape(4, 5))
    # implicit index: early allocation, no filters, fixed maximum shape
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_chunk((4,))
    dcpl.set_alloc_time(h5py.h5d.ALLOC_TIME_EARLY)
    sp = h5py.h5s.create_simple((8,), (16,))
    dsid = h5py.h5d.create(f.id, b'implicit', h5py.h5t.STD_I64LE, sp, dcpl=dcpl)
    h5py.Dataset(dsid)[...] = np.arange(8) * 10
    f.attrs['title'] = 'edit me'
"#;

/// h5py's view of every dataset: {path: {"shape": [...], "v": flat values}}.
const DUMP: &str = r#"
import sys, json, h5py, numpy as np
out = {}
for path in sys.argv[1:]:
    d = {}
    try:
        with h5py.File(path, 'r') as f:
            def visit(name, obj):
                if isinstance(obj, h5py.Dataset):
                    v = obj[()]
                    d['/' + name] = {'shape': list(obj.shape), 'v': np.asarray(v, dtype='f8').ravel().tolist()}
            f.visititems(visit)
    except Exception as e:
        d = {'error': repr(e)}
    out[path] = d
print(json.dumps(out))
"#;

fn h5py_dump(paths: &[&Path]) -> Option<serde_json::Value> {
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = run_py(DUMP, &args)?;
    Some(serde_json::from_str(&s).expect("json"))
}

/// An independent model of one dataset: row-major f64 values.
#[derive(Clone, Debug)]
struct Model {
    dims: Vec<u64>,
    v: Vec<f64>,
    fill: f64,
    /// Element type: 'f' or 'i' and byte size.
    ty: (char, usize),
}

fn n_of(d: &[u64]) -> usize {
    d.iter().product::<u64>() as usize
}

fn linear(d: &[u64], idx: &[u64]) -> usize {
    let mut o = 0u64;
    for k in 0..d.len() {
        o = o * d[k] + idx[k];
    }
    o as usize
}

fn each_index(d: &[u64], mut f: impl FnMut(&[u64])) {
    if d.contains(&0) {
        return;
    }
    let mut idx = vec![0u64; d.len()];
    loop {
        f(&idx);
        let mut k = d.len();
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < d[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

impl Model {
    fn resize(&mut self, nd: &[u64]) {
        let mut v = vec![self.fill; n_of(nd)];
        each_index(nd, |i| {
            if i.iter().zip(&self.dims).all(|(a, b)| a < b) {
                v[linear(nd, i)] = self.v[linear(&self.dims, i)];
            }
        });
        self.dims = nd.to_vec();
        self.v = v;
    }
    fn write(&mut self, start: &[u64], count: &[u64], vals: &[f64]) {
        let mut j = 0;
        each_index(count, |i| {
            let at: Vec<u64> = i.iter().zip(start).map(|(a, b)| a + b).collect();
            self.v[linear(&self.dims, &at)] = vals[j];
            j += 1;
        });
    }
    fn bytes(&self, vals: &[f64]) -> Vec<u8> {
        let mut b = Vec::new();
        for &x in vals {
            match self.ty {
                ('f', 8) => b.extend_from_slice(&x.to_le_bytes()),
                ('f', 4) => b.extend_from_slice(&(x as f32).to_le_bytes()),
                ('i', 8) => b.extend_from_slice(&(x as i64).to_le_bytes()),
                ('i', 4) => b.extend_from_slice(&(x as i32).to_le_bytes()),
                ('i', 2) => b.extend_from_slice(&(x as i16).to_le_bytes()),
                t => panic!("type {t:?}"),
            }
        }
        b
    }
}

fn initial_models() -> BTreeMap<&'static str, Model> {
    let m = |dims: &[u64], fill: f64, ty: (char, usize), f: &dyn Fn(usize) -> f64| Model {
        dims: dims.to_vec(),
        v: (0..n_of(dims)).map(f).collect(),
        fill,
        ty,
    };
    let mut out = BTreeMap::new();
    out.insert("/ea", m(&[10], -1.0, ('f', 8), &|i| i as f64 * 1.5));
    out.insert("/g/bt2", m(&[5, 6], 0.0, ('i', 4), &|i| i as f64));
    out.insert("/fa", m(&[10], 0.0, ('i', 2), &|i| i as f64));
    out.insert("/single", m(&[6, 4], 0.0, ('f', 4), &|i| i as f64));
    out.insert("/rows", m(&[4, 3], 0.0, ('f', 8), &|i| i as f64));
    out.insert("/contig", m(&[4, 5], 0.0, ('f', 4), &|i| i as f64));
    out.insert("/implicit", m(&[8], 0.0, ('i', 8), &|i| i as f64 * 10.0));
    out
}

/// Compare h5py's view with the models.
fn assert_matches(path: &Path, models: &BTreeMap<&str, Model>, what: &str) {
    let findings = check_path(path);
    assert!(
        is_clean(&findings, false),
        "{what}: h5 check: {}",
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    // Our reader.
    let f = h5fmt::File::open(path).expect("our reader");
    for (name, m) in models {
        let ds = f.dataset(name).expect("dataset");
        assert_eq!(ds.shape(), &m.dims[..], "{what}: our shape of {name}");
        let v: Vec<f64> = ds.read::<f64>().expect("read");
        assert_eq!(v, m.v, "{what}: our values of {name}");
    }
    let Some(dump) = h5py_dump(&[path]) else {
        eprintln!("skipping h5py check: no python venv");
        return;
    };
    let d = &dump[path.display().to_string()];
    assert!(d.get("error").is_none(), "{what}: h5py: {d}");
    for (name, m) in models {
        let got = &d[*name];
        let shape: Vec<u64> = serde_json::from_value(got["shape"].clone()).expect("shape");
        let v: Vec<f64> = serde_json::from_value(got["v"].clone()).expect("values");
        assert_eq!(shape, m.dims, "{what}: h5py shape of {name}");
        assert_eq!(v, m.v, "{what}: h5py values of {name}");
    }
}

fn vals(n: usize, seed: f64) -> Vec<f64> {
    (0..n).map(|i| seed + i as f64).collect()
}

/// Run the edit script over a file whose datasets match `models`.
fn edit_sequence(path: &Path, mut models: BTreeMap<&'static str, Model>) {
    // 1. Append to every growable dataset, write boxes, commit.
    let mut ed = FileEditor::open(path).expect("open rw");
    for (name, m) in models.iter_mut() {
        match *name {
            "/ea" | "/rows" => {
                let row: usize = m.dims[1..].iter().product::<u64>() as usize;
                let v = vals(7 * row, 100.0);
                ed.append_raw(name, &m.bytes(&v)).expect("append");
                let mut nd = m.dims.clone();
                nd[0] += 7;
                m.resize(&nd);
                let start = {
                    let mut s = vec![0; nd.len()];
                    s[0] = nd[0] - 7;
                    s
                };
                let mut count = nd.clone();
                count[0] = 7;
                m.write(&start, &count, &v);
            }
            "/g/bt2" => {
                ed.resize(name, &[7, 8]).expect("resize");
                m.resize(&[7, 8]);
                let v = vals(12, 500.0);
                ed.write_box(name, &[4, 5], &[3, 3], &m.bytes(&v)[..32])
                    .expect_err("wrong length");
                ed.write_box(name, &[4, 5], &[3, 3], &m.bytes(&vals(9, 500.0)))
                    .expect("box");
                m.write(&[4, 5], &[3, 3], &vals(9, 500.0));
            }
            "/fa" | "/implicit" => {
                ed.resize(name, &[14]).expect("resize");
                m.resize(&[14]);
                ed.write_box(name, &[9], &[4], &m.bytes(&vals(4, 70.0)))
                    .expect("box");
                m.write(&[9], &[4], &vals(4, 70.0));
            }
            "/single" => {
                ed.write_box(name, &[1, 1], &[2, 2], &m.bytes(&vals(4, 9.5)))
                    .expect("box");
                m.write(&[1, 1], &[2, 2], &vals(4, 9.5));
            }
            "/contig" => {
                ed.write_box(name, &[1, 2], &[3, 2], &m.bytes(&vals(6, -3.0)))
                    .expect("box");
                m.write(&[1, 2], &[3, 2], &vals(6, -3.0));
            }
            _ => {}
        }
    }
    // Strided selection and points.
    {
        let m = models.get_mut("/g/bt2").expect("bt2");
        let sel = h5fmt::data::hyperslab::Selection::parse("1:6:2,::3", &m.dims).expect("sel");
        let v = vals(9, 900.0);
        ed.write_selection("/g/bt2", &sel, &m.bytes(&v))
            .expect("strided");
        let mut j = 0;
        for r in [1u64, 3, 5] {
            for c in [0u64, 3, 6] {
                m.write(&[r, c], &[1, 1], &v[j..j + 1]);
                j += 1;
            }
        }
        let m = models.get_mut("/ea").expect("ea");
        let sel = h5fmt::data::hyperslab::Selection::Points(vec![vec![0], vec![16], vec![3]]);
        let v = [7.0, 8.0, 9.0];
        ed.write_selection("/ea", &sel, &m.bytes(&v))
            .expect("points");
        for (p, x) in [0u64, 16, 3].iter().zip(v) {
            m.write(&[*p], &[1], &[x]);
        }
    }
    ed.flush().expect("flush");
    assert_matches(path, &models, "after append");
    // 2. Shrink (partial chunks reset to fill), grow back (fill shows), commit.
    for (name, nd, back) in [
        ("/ea", vec![6u64], vec![13u64]),
        ("/g/bt2", vec![3, 4], vec![6, 9]),
        ("/fa", vec![5], vec![20]),
        ("/rows", vec![2, 3], vec![12, 3]),
    ] {
        ed.resize(name, &nd).expect("shrink");
        let m = models.get_mut(name).expect("model");
        m.resize(&nd);
        ed.resize(name, &back).expect("grow");
        m.resize(&back);
    }
    ed.flush().expect("flush 2");
    assert_matches(path, &models, "after shrink and grow");
    // 3. A few more appends over several commits, then reopen and append.
    for i in 0..3 {
        let v = vals(2 * 3, i as f64);
        ed.append_raw("/rows", &models["/rows"].bytes(&v))
            .expect("append");
        let m = models.get_mut("/rows").expect("model");
        let mut nd = m.dims.clone();
        nd[0] += 2;
        m.resize(&nd);
        m.write(&[nd[0] - 2, 0], &[2, 3], &v);
        ed.flush().expect("flush 3");
    }
    drop(ed);
    let mut ed = FileEditor::open(path).expect("reopen");
    let v = vals(4, 42.0);
    ed.append_raw("/ea", &models["/ea"].bytes(&v))
        .expect("append after reopen");
    let m = models.get_mut("/ea").expect("model");
    let mut nd = m.dims.clone();
    nd[0] += 4;
    m.resize(&nd);
    m.write(&[nd[0] - 4], &[4], &v);
    ed.close().expect("close");
    assert_matches(path, &models, "after reopen");
}

#[test]
fn edit_h5py_files() {
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("h5py_{libver}.h5"));
        if run_py(GEN, &[path.to_str().expect("utf-8"), libver]).is_none() {
            eprintln!("skipping: no python venv");
            return;
        }
        let models = initial_models();
        assert_matches(&path, &models, &format!("{libver}: as written"));
        // The chunk indexes libhdf5 chose, which the editor reads and replaces.
        let f = h5fmt::File::open(&path).expect("open");
        let index = |name: &str| match f.dataset(name).expect("ds").layout() {
            h5fmt::format::message::Layout::Chunked(c) => match c.index {
                h5fmt::format::message::ChunkIndex::BTreeV1 { .. } => "btree1",
                h5fmt::format::message::ChunkIndex::SingleChunk { .. } => "single",
                h5fmt::format::message::ChunkIndex::Implicit { .. } => "implicit",
                h5fmt::format::message::ChunkIndex::FixedArray { .. } => "farray",
                h5fmt::format::message::ChunkIndex::ExtensibleArray { .. } => "earray",
                h5fmt::format::message::ChunkIndex::BTreeV2 { .. } => "btree2",
            },
            _ => "other",
        };
        let got: Vec<&str> = ["/ea", "/g/bt2", "/fa", "/single", "/implicit", "/rows"]
            .iter()
            .map(|n| index(n))
            .collect();
        let want = if libver == "latest" {
            ["earray", "btree2", "farray", "single", "implicit", "earray"]
        } else {
            ["btree1"; 6]
        };
        assert_eq!(got, want, "{libver}");
        drop(f);
        edit_sequence(&path, models);
    }
}

// ---------------------------------------------------------------------------------------------
// Crash safety: SIGKILL an appending child at random moments.

/// Template files for the kill test: `/x` (f64, unlimited, gzip, chunks of 7)
/// and `/m` (rows of 3 i32, two unlimited dims), values = their linear index.
const GEN_KILL: &str = r#"
import sys, h5py, numpy as np
path, libver = sys.argv[1], sys.argv[2]
with h5py.File(path, 'w', libver=libver) as f:
    f.create_dataset('x', shape=(0,), maxshape=(None,), dtype='<f8', chunks=(7,), compression='gzip', shuffle=True)
    f.create_dataset('m', shape=(0, 3), maxshape=(None, None), dtype='<i4', chunks=(4, 2))
"#;

/// Check many killed files in one Python process: every dataset reads and
/// holds its linear index; prints {path: {"x": len, "m": rows} | {"error": ...}}.
const CHECK_KILL: &str = r#"
import sys, json, h5py, numpy as np
out = {}
for path in sys.argv[1:]:
    try:
        with h5py.File(path, 'r') as f:
            x = f['x'][()]; m = f['m'][()]
            ok = (x == np.arange(len(x))).all() and (m.ravel() == np.arange(m.size)).all() and m.shape[1:] == (3,)
            ok = ok and ('n' not in f['x'].attrs or f['x'].attrs['n'] == len(x))
            out[path] = {'x': len(x), 'm': m.shape[0]} if ok else {'error': 'wrong values'}
    except Exception as e:
        out[path] = {'error': repr(e)}
print(json.dumps(out))
"#;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

/// The child: appends to `/x` and `/m` of `H5_EDIT_CHILD` forever, now and
/// then rewriting earlier rows with the same values, setting attribute
/// `n` of `/x` to its length (the same header: the commit must keep the two
/// in step), committing every few appends and printing `FLUSHED <x> <m>`
/// after each commit.
#[test]
fn kill_child() {
    use std::io::Write;
    let Ok(path) = std::env::var("H5_EDIT_CHILD") else {
        return;
    };
    let seed: u64 = std::env::var("H5_EDIT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    let mut rng = Rng(seed | 1);
    let mut ed = FileEditor::open(&path).expect("open");
    let mut nx = ed.shape("/x").expect("x")[0];
    let mut nm = ed.shape("/m").expect("m")[0];
    let mut groups = ed
        .reader()
        .root()
        .expect("root")
        .member_names()
        .expect("names")
        .iter()
        .filter(|n| n.starts_with('c'))
        .count();
    let t = std::time::Instant::now();
    let mut out = std::io::stdout();
    while t.elapsed().as_secs() < 10 {
        for _ in 0..1 + rng.next() % 4 {
            let k = 1 + rng.next() % 20;
            let v: Vec<f64> = (nx..nx + k).map(|i| i as f64).collect();
            ed.append("/x", &v).expect("append x");
            nx += k;
            let r = 1 + rng.next() % 5;
            let v: Vec<i32> = (nm * 3..(nm + r) * 3).map(|i| i as i32).collect();
            ed.append_raw(
                "/m",
                &v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<_>>(),
            )
            .expect("append m");
            nm += r;
            if rng.next().is_multiple_of(3) && nx > 10 {
                let s = rng.next() % (nx - 10);
                let v: Vec<f64> = (s..s + 10).map(|i| i as f64).collect();
                ed.write("/x", &[s], &[10], &v).expect("rewrite x");
            }
        }
        // In the same header as /x's extent: must always agree with it.
        ed.set_attr("/x", "n", nx as i64).expect("attr");
        ed.flush().expect("flush");
        writeln!(out, "FLUSHED {nx} {nm}").expect("stdout");
        out.flush().expect("stdout");
        if rng.next().is_multiple_of(4) {
            // A group (commits at once, nothing else pending): symbol table node splits / link messages.
            let name = format!("c{groups}");
            ed.create_group("/", &name).expect("group");
            writeln!(out, "GROUP {groups}").expect("stdout");
            groups += 1;
        }
        out.flush().expect("stdout");
    }
}

fn kills_wanted() -> usize {
    std::env::var("H5_EDIT_KILLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200)
}

#[test]
fn kill_test() {
    let Some(_) = python() else {
        eprintln!("skipping: no python venv");
        return;
    };
    let kills = kills_wanted();
    let exe = std::env::current_exe().expect("current exe");
    let dir = scratch("kill");
    std::fs::create_dir_all(&dir).expect("dir");
    let mut templates = Vec::new();
    for libver in ["earliest", "latest"] {
        let t = dir.join(format!("template_{libver}.h5"));
        run_py(GEN_KILL, &[t.to_str().expect("utf-8"), libver]).expect("python");
        templates.push(t);
    }
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()));
    let mut batch: Vec<(PathBuf, u64, u64)> = Vec::new();
    let mut total_checked = 0usize;
    let mut total_flushes = 0u64;
    let mut attr_checked = 0usize;
    let mut total_groups = 0usize;
    let start = std::time::Instant::now();
    for i in 0..kills {
        let file = dir.join(format!("k{i}.h5"));
        // Half the runs continue a file killed before (accumulating edits).
        let prev = batch
            .last()
            .filter(|_| rng.next().is_multiple_of(2))
            .map(|b| b.0.clone());
        let src = prev.unwrap_or_else(|| templates[i % 2].clone());
        std::fs::copy(&src, &file).expect("copy");
        let (base_x, base_m) = {
            let f = h5fmt::File::open(&file).expect("open before");
            (
                f.dataset("/x").expect("x").shape()[0],
                f.dataset("/m").expect("m").shape()[0],
            )
        };
        let mut child = Command::new(&exe)
            .args(["kill_child", "--exact", "--nocapture", "--test-threads=1"])
            .env("H5_EDIT_CHILD", &file)
            .env("H5_EDIT_SEED", (rng.next() % 1_000_000).to_string())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("spawn child");
        let delay = 10 + rng.next() % 120;
        std::thread::sleep(std::time::Duration::from_millis(delay));
        child.kill().expect("SIGKILL");
        let out = child.wait_with_output().expect("wait");
        let text = String::from_utf8_lossy(&out.stdout);
        let (mut fx, mut fm) = (base_x, base_m);
        let mut groups_made = 0usize;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("GROUP ") {
                groups_made = groups_made.max(rest.parse::<usize>().expect("number") + 1);
                total_groups += 1;
            }
            if let Some(rest) = line.strip_prefix("FLUSHED ") {
                let mut it = rest.split(' ').map(|s| s.parse::<u64>().expect("number"));
                fx = it.next().expect("x");
                fm = it.next().expect("m");
                total_flushes += 1;
            }
        }
        // Our reader and h5 check, right away.
        let findings = check_path(&file);
        assert!(
            is_clean(&findings, false),
            "kill {i}: h5 check: {}",
            findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
        let f = h5fmt::File::open(&file).expect("open after kill");
        let x: Vec<f64> = f.dataset("/x").expect("x").read().expect("read x");
        let m: Vec<i32> = f.dataset("/m").expect("m").read().expect("read m");
        assert!(
            x.len() as u64 >= fx,
            "kill {i}: /x has {} < {fx} flushed",
            x.len()
        );
        assert!(
            m.len() as u64 >= fm * 3,
            "kill {i}: /m has {} < {fm} rows",
            m.len() / 3
        );
        assert!(
            x.iter().enumerate().all(|(j, &v)| v == j as f64),
            "kill {i}: /x values"
        );
        let names = f.root().expect("root").member_names().expect("names");
        for g in 0..groups_made {
            let n = format!("c{g}");
            assert!(
                names.contains(&n),
                "kill {i}: group {n} reported but missing"
            );
            f.group(&format!("/{n}")).expect("group opens");
        }
        if let Ok(a) = f.dataset("/x").expect("x").attr("n") {
            assert_eq!(
                a.read::<i64>().expect("n"),
                [x.len() as i64],
                "kill {i}: attr n"
            );
            attr_checked += 1;
        }
        assert!(
            m.iter().enumerate().all(|(j, &v)| v == j as i32),
            "kill {i}: /m values"
        );
        batch.push((file, fx, fm));
        if batch.len() == 50 || i + 1 == kills {
            let paths: Vec<&Path> = batch.iter().map(|b| b.0.as_path()).collect();
            let dump = h5py_dump_kill(&paths);
            for (p, fx, fm) in &batch {
                let d = &dump[p.display().to_string()];
                assert!(d.get("error").is_none(), "h5py on {}: {d}", p.display());
                assert!(
                    d["x"].as_u64().expect("x") >= *fx,
                    "h5py: {} /x",
                    p.display()
                );
                assert!(
                    d["m"].as_u64().expect("m") >= *fm,
                    "h5py: {} /m",
                    p.display()
                );
            }
            total_checked += batch.len();
            // Keep the last file as a possible start of the next run.
            let last = batch.pop();
            for (p, _, _) in batch.drain(..) {
                let _ = std::fs::remove_file(p);
            }
            batch.extend(last);
        }
    }
    eprintln!(
        "kill test: {kills} kills, {total_flushes} commits reported, {attr_checked} files with the \
         extent-attribute pair, {total_groups} groups created, {total_checked} files checked with h5py, {:.1}s",
        start.elapsed().as_secs_f64()
    );
    assert!(attr_checked > kills / 2, "few files had a commit");
    assert!(total_checked >= kills);
    assert!(
        total_flushes > kills as u64,
        "the children hardly committed anything"
    );
}

fn h5py_dump_kill(paths: &[&Path]) -> serde_json::Value {
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    serde_json::from_str(&run_py(CHECK_KILL, &args).expect("python")).expect("json")
}

// ---------------------------------------------------------------------------------------------
// Attributes, groups, links.

/// h5py's view of groups and attributes: {path: {"attrs": {...}, "links": [...]}}.
const TREE: &str = r#"
import sys, json, h5py, numpy as np
def val(v):
    if isinstance(v, bytes): return v.decode()
    if isinstance(v, np.ndarray): return [val(x) for x in v.tolist()]
    if isinstance(v, np.generic): return v.item()
    return v
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    def visit(name, obj):
        d = {'attrs': {k: val(obj.attrs[k]) for k in obj.attrs}}
        if isinstance(obj, h5py.Group):
            d['links'] = sorted(obj.keys())
        out['/' + name.lstrip('/')] = d
    visit('', f)
    f.visititems(visit)
print(json.dumps(out))
"#;

fn sha(path: &Path) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(std::fs::read(path).expect("read")).to_vec()
}

fn attrs_and_links(path: &Path, ours_w: bool) {
    let mut ed = FileEditor::open(path).expect("open");
    // Overwrite with the same size, with another size, add, vlen, delete.
    ed.set_attr("/", "title", h5fmt::AttrValue::fixed_ascii("EDIT ME"))
        .expect("same size");
    ed.set_attr("/fa", "scale", 2.5f64).expect("new attr");
    ed.set_attr("/fa", "scale", vec![1i32, 2, 3])
        .expect("resized attr");
    ed.set_attr("/g", "note", "variable length")
        .expect("vlen attr");
    for i in 0..12 {
        // Enough to overflow the header into a continuation chunk.
        ed.set_attr("/ea", &format!("a{i:02}"), vec![i as f64; 3])
            .expect("many attrs");
    }
    ed.set_attr("/ea", "a05", 5i32).expect("overwrite");
    ed.delete_attr("/ea", "a07").expect("delete attr");
    let before = {
        ed.flush().expect("flush");
        sha(path)
    };
    let e = ed.delete_attr("/ea", "nope").expect_err("missing attr");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    ed.flush().expect("flush");
    assert_eq!(sha(path), before, "a failed delete changed the file");
    // Groups and links.
    ed.create_group("/", "newg").expect("group");
    ed.create_group("/g", "sub").expect("nested group");
    ed.create_group("/newg", "inner")
        .expect("group in a new group");
    ed.set_attr("/newg", "n", 7i64).expect("attr on new group");
    let spec = h5fmt::write::edit::NewDataset::new(h5fmt::Datatype::float_le(8), &[0])
        .maxshape(&[None])
        .chunks(&[8])
        .deflate(3)
        .shuffle()
        .fill(-2.0f64);
    ed.create_dataset("/newg", "data", &spec)
        .expect("chunked dataset");
    ed.append("/newg/data", &(0..25).map(f64::from).collect::<Vec<_>>())
        .expect("append to new dataset");
    ed.resize("/newg/data", &[30]).expect("grow new dataset");
    let spec = h5fmt::write::edit::NewDataset::new(h5fmt::Datatype::int_le(4, true), &[3, 4]);
    ed.create_dataset("/g", "c", &spec)
        .expect("contiguous dataset");
    ed.write("/g/c", &[1, 1], &[2, 2], &[5i32, 6, 7, 8])
        .expect("box");
    let e = ed.create_dataset("/g", "c", &spec).expect_err("collision");
    assert_eq!(e.kind(), ErrorKind::Usage);
    let before = {
        ed.flush().expect("flush");
        sha(path)
    };
    let e = ed.create_group("/", "newg").expect_err("collision");
    assert_eq!(e.kind(), ErrorKind::Usage);
    let e = ed.delete_link("/g", "nope").expect_err("missing link");
    assert_eq!(e.kind(), ErrorKind::NotFound);
    assert_eq!(sha(path), before, "failed link operations changed the file");
    ed.delete_link("/", "contig").expect("delete dataset link");
    ed.delete_link("/g", "sub").expect("delete group link");
    ed.close().expect("close");

    let findings = check_path(path);
    assert!(
        is_clean(&findings, false),
        "h5 check: {}",
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
    let f = h5fmt::File::open(path).expect("reopen");
    assert_eq!(
        f.root()
            .expect("root")
            .attr("title")
            .expect("title")
            .read_string()
            .expect("s"),
        "EDIT ME"
    );
    assert_eq!(
        f.dataset("/fa")
            .expect("fa")
            .attr("scale")
            .expect("scale")
            .read::<i32>()
            .expect("i"),
        [1, 2, 3]
    );
    let Some(out) = run_py(TREE, &[path.to_str().expect("utf-8")]) else {
        return;
    };
    let t: serde_json::Value = serde_json::from_str(&out).expect("json");
    assert_eq!(t["/"]["attrs"]["title"], "EDIT ME", "{t}");
    assert_eq!(t["/fa"]["attrs"]["scale"], serde_json::json!([1, 2, 3]));
    assert_eq!(t["/g"]["attrs"]["note"], "variable length");
    assert_eq!(t["/ea"]["attrs"]["a05"], 5);
    assert_eq!(
        t["/ea"]["attrs"]["a11"],
        serde_json::json!([11.0, 11.0, 11.0])
    );
    assert!(t["/ea"]["attrs"].get("a07").is_none());
    assert_eq!(t["/ea"]["attrs"].as_object().expect("attrs").len(), 11);
    assert_eq!(t["/newg"]["attrs"]["n"], 7);
    assert_eq!(t["/newg"]["links"], serde_json::json!(["data", "inner"]));
    let d = h5py_dump(&[path]).expect("dump");
    let d = &d[path.display().to_string()];
    let mut want: Vec<f64> = (0..25).map(f64::from).collect();
    want.extend([-2.0; 5]);
    assert_eq!(d["/newg/data"]["v"], serde_json::json!(want));
    assert_eq!(
        d["/g/c"]["v"],
        serde_json::json!([0.0, 0.0, 0.0, 0.0, 0.0, 5.0, 6.0, 0.0, 0.0, 7.0, 8.0, 0.0])
    );
    assert_eq!(t["/g"]["links"], serde_json::json!(["bt2", "c"]));
    let mut root: Vec<&str> = vec!["ea", "fa", "g", "implicit", "newg", "rows", "single"];
    if ours_w {
        root.retain(|n| *n != "implicit");
    }
    assert_eq!(t["/"]["links"], serde_json::json!(root));
}

#[test]
fn attrs_and_links_h5py_files() {
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("h5py_attrs_{libver}.h5"));
        if run_py(GEN, &[path.to_str().expect("utf-8"), libver]).is_none() {
            return;
        }
        attrs_and_links(&path, false);
    }
}

/// The same datasets as `GEN` (without the implicit index), written by our writer.
fn write_ours(path: &Path, format: h5fmt::Format) {
    let mut w = h5fmt::FileWriter::create_with(path, format).expect("create");
    let mut root = w.root();
    root.create_dataset("ea")
        .shape(&[10])
        .maxshape(&[None])
        .chunks(&[4])
        .deflate(4)
        .shuffle()
        .fill(-1.0f64)
        .write(&(0..10).map(|i| i as f64 * 1.5).collect::<Vec<_>>())
        .expect("ea");
    root.create_dataset("fa")
        .shape(&[10])
        .maxshape(&[Some(20)])
        .chunks(&[3])
        .fletcher32()
        .write(&(0..10).map(|i| i as i16).collect::<Vec<_>>())
        .expect("fa");
    root.create_dataset("single")
        .shape(&[6, 4])
        .maxshape(&[Some(6), Some(4)])
        .chunks(&[6, 4])
        .deflate(1)
        .write(&(0..24).map(|i| i as f32).collect::<Vec<_>>())
        .expect("single");
    root.create_dataset("rows")
        .shape(&[4, 3])
        .maxshape(&[None, Some(3)])
        .chunks(&[5, 3])
        .write(&(0..12).map(|i| i as f64).collect::<Vec<_>>())
        .expect("rows");
    root.create_dataset("contig")
        .shape(&[4, 5])
        .write(&(0..20).map(|i| i as f32).collect::<Vec<_>>())
        .expect("contig");
    root.set_attr("title", h5fmt::AttrValue::fixed_ascii("edit me"))
        .expect("title");
    let mut g = root.create_group("g").expect("g");
    g.create_dataset("bt2")
        .shape(&[5, 6])
        .maxshape(&[None, None])
        .chunks(&[2, 3])
        .write(&(0..30).collect::<Vec<i32>>())
        .expect("bt2");
    w.close().expect("close");
}

#[test]
fn edit_our_files() {
    for (i, format) in [
        h5fmt::Format::Earliest,
        h5fmt::Format::V18,
        h5fmt::Format::Latest,
    ]
    .into_iter()
    .enumerate()
    {
        let path = scratch(&format!("ours_{i}.h5"));
        write_ours(&path, format);
        let mut models = initial_models();
        models.remove("/implicit");
        assert_matches(&path, &models, &format!("{format:?}: as written"));
        edit_sequence(&path, models);
        let path = scratch(&format!("ours_attrs_{i}.h5"));
        write_ours(&path, format);
        attrs_and_links(&path, true);
    }
}

/// Bad arguments: typed errors, and the file stays byte-for-byte the same.
#[test]
fn bad_arguments_leave_the_file_unchanged() {
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("bad_{libver}.h5"));
        if run_py(GEN, &[path.to_str().expect("utf-8"), libver]).is_none() {
            return;
        }
        let before = sha(&path);
        let mut ed = FileEditor::open(&path).expect("open");
        let kind = |r: h5fmt::Result<()>| r.expect_err("must fail").kind();
        // Rank, maximum shape, element size, box bounds, data length.
        assert_eq!(kind(ed.resize("/fa", &[12, 1])), ErrorKind::Usage);
        assert_eq!(kind(ed.resize("/fa", &[21])), ErrorKind::Usage);
        assert_eq!(kind(ed.resize("/single", &[7, 4])), ErrorKind::Usage);
        assert_eq!(kind(ed.resize("/contig", &[5, 5])), ErrorKind::Usage);
        assert_eq!(
            kind(ed.append_raw("/rows", &[0u8; 8 * 4])),
            ErrorKind::Usage
        );
        assert_eq!(kind(ed.append("/ea", &[1.0f32])), ErrorKind::Usage);
        assert_eq!(kind(ed.append("/fa", &[1i16; 11])), ErrorKind::Usage);
        assert_eq!(
            kind(ed.write_box("/ea", &[8], &[3], &[0u8; 24])),
            ErrorKind::Usage
        );
        assert_eq!(
            kind(ed.write_box("/ea", &[0], &[3], &[0u8; 16])),
            ErrorKind::Usage
        );
        assert_eq!(
            kind(ed.write_box("/g/bt2", &[0], &[1], &[0u8; 4])),
            ErrorKind::Usage
        );
        assert_eq!(kind(ed.append("/nope", &[1.0f64])), ErrorKind::NotFound);
        // Names.
        assert_eq!(kind(ed.create_group("/", "g")), ErrorKind::Usage);
        assert_eq!(kind(ed.create_group("/", "a/b")), ErrorKind::Usage);
        assert_eq!(kind(ed.delete_link("/", "nope")), ErrorKind::NotFound);
        assert_eq!(kind(ed.delete_attr("/", "nope")), ErrorKind::NotFound);
        assert_eq!(
            kind(ed.set_attr(
                "/",
                "x",
                h5fmt::AttrValue::raw(h5fmt::Datatype::float_le(8), None, vec![0; 4])
            )),
            ErrorKind::Usage
        );
        ed.close().expect("close");
        assert_eq!(
            sha(&path),
            before,
            "{libver}: failed operations changed the file"
        );
    }
}

/// Many new links in one group: symbol table nodes split (earliest format),
/// link messages overflow into continuation chunks (latest); then deleting
/// most of them again.
#[test]
fn many_links() {
    for libver in ["earliest", "latest"] {
        let path = scratch(&format!("many_{libver}.h5"));
        if run_py(GEN, &[path.to_str().expect("utf-8"), libver]).is_none() {
            return;
        }
        let mut ed = FileEditor::open(&path).expect("open");
        // Names in an order that inserts at the front, the back and the middle.
        let mut names: Vec<String> = (0..60).map(|i| format!("n{:02}", (i * 37) % 60)).collect();
        names.push("aaa".into());
        names.push("zzz".into());
        for n in &names {
            ed.create_group("/", n).expect("create");
        }
        let findings = check_path(&path);
        assert!(
            is_clean(&findings, false),
            "{libver}: h5 check: {}",
            findings
                .iter()
                .map(|f| f.to_string())
                .collect::<Vec<_>>()
                .join("\n")
        );
        let mut want: Vec<String> = ["contig", "ea", "fa", "g", "implicit", "rows", "single"]
            .iter()
            .map(|s| s.to_string())
            .chain(names.iter().cloned())
            .collect();
        want.sort();
        let t: serde_json::Value =
            serde_json::from_str(&run_py(TREE, &[path.to_str().expect("utf-8")]).expect("py"))
                .expect("json");
        assert_eq!(t["/"]["links"], serde_json::json!(want), "{libver}");
        for n in names.iter().step_by(2) {
            ed.delete_link("/", n).expect("delete");
        }
        ed.close().expect("close");
        want.retain(|w| !names.iter().step_by(2).any(|n| n == w));
        let t: serde_json::Value =
            serde_json::from_str(&run_py(TREE, &[path.to_str().expect("utf-8")]).expect("py"))
                .expect("json");
        assert_eq!(
            t["/"]["links"],
            serde_json::json!(want),
            "{libver} after deletes"
        );
        let ours: Vec<String> = h5fmt::File::open(&path)
            .expect("open")
            .root()
            .expect("root")
            .member_names()
            .expect("names");
        let mut ours = ours;
        ours.sort();
        assert_eq!(ours, want);
        assert!(
            is_clean(&check_path(&path), false),
            "{libver}: h5 check after deletes"
        );
    }
}

/// A symbol-table group whose node names are out of order (found by the
/// read_write fuzz target on a mutated corpus file): a link inserted there
/// would be unfindable by name lookups, so the editor refuses to insert or
/// delete (`Corrupt`) and leaves the file as it was. The file is hand-made:
/// three groups `a`, `b`, `c` under the root of an earliest-format file,
/// then the first two entries of the root's symbol table node swapped.
#[test]
fn unsorted_symbol_table_is_refused() {
    let path = scratch("unsorted_stab.h5");
    let mut w = h5fmt::FileWriter::create_with(&path, h5fmt::Format::Earliest).expect("create");
    let mut root = w.root();
    for n in ["a", "b", "c"] {
        root.create_group(n).expect("group");
    }
    w.close().expect("close");
    let mut b = std::fs::read(&path).expect("read");
    // The root's node: "SNOD", version, reserved, 3 symbols; 40-byte entries.
    let at = b
        .windows(8)
        .position(|w| w[..4] == *b"SNOD" && w[6..8] == [3, 0])
        .expect("root SNOD");
    let e = at + 8;
    let first: Vec<u8> = b[e..e + 40].to_vec();
    b.copy_within(e + 40..e + 80, e);
    b[e + 40..e + 80].copy_from_slice(&first);
    std::fs::write(&path, &b).expect("write");
    let mut ed = FileEditor::open(&path).expect("open");
    let err = ed
        .create_group("/", "x")
        .expect_err("insert into an unsorted group");
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    let err = ed
        .delete_link("/", "c")
        .expect_err("delete from an unsorted group");
    assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    ed.close().expect("close");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b,
        "a refused edit changed the file"
    );
}

/// A chunk index holding a chunk far outside the dataspace (found by the
/// read_write fuzz target on a mutated corpus file: rebuilding the index
/// overflowed). Hand-made: a v1 B-tree chunk index of two chunks whose
/// second key (and the final key) are moved to 2^62; the editor refuses to
/// edit the dataset (`Corrupt`) and the file stays as it was.
#[test]
fn chunk_outside_dataspace_is_refused() {
    let path = scratch("chunk_outside.h5");
    let mut w = h5fmt::FileWriter::create_with(&path, h5fmt::Format::Earliest).expect("create");
    let mut root = w.root();
    root.create_dataset("d")
        .shape(&[8])
        .maxshape(&[None])
        .chunks(&[4])
        .write(&(0..8).collect::<Vec<i32>>())
        .expect("d");
    w.close().expect("close");
    let mut b = std::fs::read(&path).expect("read");
    // "TREE", type 1 (chunks), level 0, 2 entries, two siblings; keys of
    // 4 + 4 + 2 * 8 bytes (rank 1 plus the element dimension) between children.
    let at = b
        .windows(8)
        .position(|w| w[..4] == *b"TREE" && w[4..8] == [1, 0, 2, 0])
        .expect("chunk B-tree");
    let key = |i: usize| at + 24 + i * (24 + 8) + 8;
    assert_eq!(b[key(1)..key(1) + 8], 4u64.to_le_bytes());
    b[key(1)..key(1) + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
    b[key(2)..key(2) + 8].copy_from_slice(&((1u64 << 62) + 4).to_le_bytes());
    std::fs::write(&path, &b).expect("write");
    let mut ed = FileEditor::open(&path).expect("open");
    for r in [
        ed.resize("/d", &[12]),
        ed.append("/d", &[1i32, 2, 3, 4]),
        ed.write_box("/d", &[0], &[1], &[0; 4]),
    ] {
        let err = r.expect_err("edit of a dataset with a chunk outside it");
        assert_eq!(err.kind(), ErrorKind::Corrupt, "{err}");
    }
    ed.close().expect("close");
    assert_eq!(
        std::fs::read(&path).expect("read"),
        b,
        "a refused edit changed the file"
    );
}
