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

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn run_py(script: &str, args: &[&str]) -> Option<String> {
    let py = python()?;
    let out = Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("utf-8"))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h5fmt_edit_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
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
        findings.iter().map(|f| f.to_string()).collect::<Vec<_>>().join("\n")
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
                ed.write_box(name, &[9], &[4], &m.bytes(&vals(4, 70.0))).expect("box");
                m.write(&[9], &[4], &vals(4, 70.0));
            }
            "/single" => {
                ed.write_box(name, &[1, 1], &[2, 2], &m.bytes(&vals(4, 9.5))).expect("box");
                m.write(&[1, 1], &[2, 2], &vals(4, 9.5));
            }
            "/contig" => {
                ed.write_box(name, &[1, 2], &[3, 2], &m.bytes(&vals(6, -3.0))).expect("box");
                m.write(&[1, 2], &[3, 2], &vals(6, -3.0));
            }
            _ => {}
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
        ed.append_raw("/rows", &models["/rows"].bytes(&v)).expect("append");
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
    ed.append_raw("/ea", &models["/ea"].bytes(&v)).expect("append after reopen");
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
        edit_sequence(&path, models);
    }
}
