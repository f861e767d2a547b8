//! Typed reads checked against h5py (libhdf5): every numeric member of every
//! compound dataset in `testdata/` read with `read_field` equals numpy's
//! `ds[...][a][b]`, and (feature `ndarray`) `read_array` has h5py's shape and
//! values; `read` / `read_slice` into every native number type, of
//! contiguous, compact, unwritten and chunked (filtered, partial edge
//! chunks, fill) datasets in either byte order, equal numpy's `astype`.

use h5fmt::{Datatype, File, Object};
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn testdata() -> Vec<PathBuf> {
    let td = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let mut v: Vec<PathBuf> = std::fs::read_dir(td)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "h5"))
        .collect();
    v.sort();
    v
}

/// For each dataset: shape, and for compound datasets each numeric leaf
/// member (dotted path) with its values flattened as floats; for numeric
/// datasets the flattened values.
const DUMP: &str = r#"
import sys, json, math, h5py, numpy as np
def num(x):
    x = float(x)
    return x if math.isfinite(x) else str(x)
def leaves(dt, prefix):
    for name in dt.names:
        sub = dt.fields[name][0]
        p = prefix + name
        if sub.names is not None:
            yield from leaves(sub, p + '.')
        elif sub.kind in 'iufb' and sub.shape == ():
            yield p
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    def visit(name, obj):
        if not isinstance(obj, h5py.Dataset) or obj.shape is None:
            return
        try:
            data = obj[()]
        except Exception:
            return
        d = {'shape': list(obj.shape)}
        dt = obj.dtype
        if dt.names is not None:
            fields = {}
            for p in leaves(dt, ''):
                v = data
                for part in p.split('.'):
                    v = v[part]
                fields[p] = [num(x) for x in np.asarray(v).ravel()]
            d['fields'] = fields
        elif dt.kind in 'iuf':
            d['values'] = [num(x) for x in np.asarray(data).ravel()]
        out['/' + name] = d
    f.visititems(visit)
print(json.dumps(out))
"#;

fn same(a: f64, b: &J) -> bool {
    match b {
        J::Number(n) => {
            let b = n.as_f64().unwrap();
            a == b || (a - b).abs() <= 1e-6 * b.abs().max(1e-300)
        }
        J::String(s) if s == "nan" => a.is_nan(),
        J::String(s) if s == "inf" => a == f64::INFINITY,
        J::String(s) if s == "-inf" => a == f64::NEG_INFINITY,
        _ => false,
    }
}

#[test]
fn fields_and_arrays_match_h5py() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let mut fields = 0;
    #[cfg_attr(not(feature = "ndarray"), allow(unused_mut))]
    let mut arrays = 0;
    for path in testdata() {
        // libhdf5 2.0 cannot visit these (read-only open of a metadata cache
        // image: "non-parent entry has children"); conformance covers them.
        if path
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with("mdc_image"))
        {
            continue;
        }
        let out = Command::new(&py)
            .arg("-c")
            .arg(DUMP)
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}: {}",
            path.display(),
            String::from_utf8_lossy(&out.stderr)
        );
        let want: J = serde_json::from_slice(&out.stdout).unwrap();
        let file = File::open(&path).unwrap();
        for (ds_path, d) in want.as_object().unwrap() {
            let Ok(Object::Dataset(ds)) = file.object(ds_path) else {
                continue;
            };
            if let Some(fs) = d.get("fields").and_then(J::as_object) {
                assert!(matches!(ds.dtype(), Datatype::Compound { .. }));
                for (field, vals) in fs {
                    let got: Vec<f64> = ds
                        .read_field(field)
                        .unwrap_or_else(|e| panic!("{ds_path}[{field}]: {e}"));
                    let vals = vals.as_array().unwrap();
                    assert_eq!(got.len(), vals.len(), "{ds_path}[{field}]");
                    for (g, w) in got.iter().zip(vals) {
                        assert!(same(*g, w), "{ds_path}[{field}]: {g} vs {w}");
                    }
                    let values = ds.read_field_values(field).unwrap();
                    assert_eq!(values.len(), vals.len(), "{ds_path}[{field}]");
                    fields += 1;
                }
                assert!(ds.read_field::<f64>("no_such_member").is_err());
            }
            #[cfg(feature = "ndarray")]
            if let Some(vals) = d.get("values").and_then(J::as_array) {
                let shape: Vec<usize> = d["shape"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap() as usize)
                    .collect();
                let a = ds.read_array::<f64>().unwrap();
                assert_eq!(a.shape(), &shape[..], "{ds_path}");
                for (g, w) in a.iter().zip(vals) {
                    assert!(same(*g, w), "{ds_path}: {g} vs {w}");
                }
                arrays += 1;
            }
        }
    }
    eprintln!("{fields} compound members, {arrays} ndarray datasets checked");
    assert!(fields >= 8, "only {fields} compound members found");
    #[cfg(feature = "ndarray")]
    assert!(arrays >= 20, "only {arrays} ndarray datasets");
}

/// Writes datasets of many layouts, byte orders and types with h5py, and for
/// each the bytes numpy gives for `ds[...].astype(T)` and for selections
/// `ds[...][idx].astype(T)`, per target type `T` (`null` where our
/// conversion refuses: a value outside `T`'s range, or floats to integers).
const TYPED: &str = r#"
import sys, os, json, h5py, hdf5plugin, numpy as np
out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rng = np.random.default_rng(18)
TARGETS = {'i8': 'i1', 'i16': 'i2', 'i32': 'i4', 'i64': 'i8',
           'u8': 'u1', 'u16': 'u2', 'u32': 'u4', 'u64': 'u8', 'f32': 'f4', 'f64': 'f8'}
def ints(shape, lo, hi, dt):
    return rng.integers(lo, hi, size=shape).astype(dt)
def floats(shape, dt):
    return (rng.normal(size=shape) * 1000).astype(dt)
cases = []
path = os.path.join(out, 'typed.h5')
with h5py.File(path, 'w') as f:
    def add(name, data=None, **kw):
        d = f.create_dataset(name, data=data, **kw)
        cases.append(name)
    # contiguous: same type, byte-swapped, widening, narrowing; the three large ones (over
    # 16 MiB read or returned) are read, or converted, on several threads
    add('contig_f8le', floats((2_100_003,), '<f8'))
    add('contig_f8be', floats((2_500_003,), '>f8'))
    add('contig_i4be_big', ints((2_100_001,), -2**31, 2**31, '>i4'))
    add('contig_i2be_2d', ints((997, 1501), -30000, 30000, '>i2'))
    add('contig_u1', ints((100_000,), 0, 256, 'u1'))
    add('contig_i8be', ints((5000,), -2**62, 2**62, '>i8'))
    add('contig_u4be_small', ints((777,), 0, 1000, '>u4'))
    add('contig_f4be_3d', floats((7, 13, 11), '>f4'))
    add('contig_f2', floats((999,), '<f2') / 1000)
    # compact (small data in the object header)
    dcpl = h5py.h5p.create(h5py.h5p.DATASET_CREATE)
    dcpl.set_layout(h5py.h5d.COMPACT)
    sp = h5py.h5s.create_simple((6, 5))
    did = h5py.h5d.create(f.id, b'compact_i4be', h5py.h5t.STD_I32BE, sp, dcpl=dcpl)
    h5py.Dataset(did)[...] = ints((6, 5), -1000, 1000, '>i4')
    cases.append('compact_i4be')
    # never written: all fill
    add('unwritten_i2be', shape=(40, 30), dtype='>i2', fillvalue=-7)
    # chunked: partial edge chunks, filters, unwritten chunks (fill), byte orders
    d = f.create_dataset('chunk_f4be_gzip', shape=(203, 101), dtype='>f4', chunks=(32, 24),
                         compression='gzip', shuffle=True, fillvalue=2.5)
    d[:100] = floats((100, 101), '>f4')
    d[150:, 50:] = floats((53, 51), '>f4')
    cases.append('chunk_f4be_gzip')
    d = f.create_dataset('chunk_i1_zstd', shape=(50_000,), dtype='i1', chunks=(4096,),
                         fillvalue=-3, **hdf5plugin.Zstd(clevel=3))
    d[:30_000] = ints((30_000,), -128, 128, 'i1')
    cases.append('chunk_i1_zstd')
    add('chunk_f8le_full', floats((64, 48, 10), '<f8'), chunks=(16, 48, 10), compression='gzip')
    add('chunk_u2be_3d', ints((9, 17, 23), 0, 65536, '>u2'), chunks=(4, 5, 6))
    add('chunk_i8le_big', ints((200_000,), -2**40, 2**40, '<i8'), chunks=(8192,), compression='gzip')
    add('enum_i1', np.array([0, 1, 1, 0, 2] * 7, dtype='i1'),
        dtype=h5py.enum_dtype({'a': 0, 'b': 1, 'c': 2}, basetype='i1'))
manifest = {'file': 'typed.h5', 'cases': []}
with h5py.File(path, 'r') as f:
    for k, name in enumerate(cases):
        d = f[name]
        full = d[...]
        def convert(a, tname):
            want = np.dtype(TARGETS[tname])
            if a.dtype.kind == 'f' and want.kind != 'f':
                return None
            if a.dtype.kind in 'iu' and want.kind in 'iu' and a.size:
                info = np.iinfo(want)
                if int(a.min()) < info.min or int(a.max()) > info.max:
                    return None
            return a.astype(want.newbyteorder('<')).tobytes()
        def write(stem, a):
            res = {}
            for t in TARGETS:
                b = convert(a, t)
                if b is None:
                    res[t] = None
                else:
                    fn = f'{stem}__{t}.bin'
                    with open(os.path.join(out, fn), 'wb') as fh:
                        fh.write(b)
                    res[t] = fn
            if a.dtype.kind == 'f':
                # read_astype: numpy's truncating astype where every value is finite and
                # in the integer's range (elsewhere numpy's result is undefined; ours an error)
                tr = np.trunc(a.astype('f8'))
                for t, code in TARGETS.items():
                    want = np.dtype(code)
                    if want.kind == 'f':
                        continue
                    info = np.iinfo(want)
                    if a.size == 0 or (np.isfinite(tr).all() and tr.min() >= info.min
                                       and tr.max() <= info.max):
                        fn = f'{stem}__cast_{t}.bin'
                        with open(os.path.join(out, fn), 'wb') as fh:
                            fh.write(a.astype(want.newbyteorder('<')).tobytes())
                        res['cast_' + t] = fn
                    else:
                        res['cast_' + t] = None
            return res
        case = {'dataset': name, 'shape': list(full.shape), 'full': write(f'{k}_full', full), 'slabs': []}
        for s in range(3):
            dims = []
            for n in full.shape:
                start = int(rng.integers(0, n))
                block = int(rng.choice([1, 1, 2]))
                stride = int(rng.integers(block, block + 4))
                if n - start < block:
                    block = 1
                count = int(rng.integers(1, max(1, (n - start - block) // stride + 1) + 1))
                dims.append([start, stride, count, block])
            idx = [np.array([st + i * sd + j for i in range(c) for j in range(b)], dtype=np.int64)
                   for st, sd, c, b in dims]
            sub = full[np.ix_(*idx)] if full.ndim else full
            case['slabs'].append({'dims': dims, 'want': write(f'{k}_s{s}', sub)})
        pts = [[int(rng.integers(0, n)) for n in full.shape] for _ in range(5)]
        sub = np.array([full[tuple(p)] for p in pts], dtype=full.dtype)
        case['points'] = {'coords': pts, 'want': write(f'{k}_p', sub)}
        manifest['cases'].append(case)
with open(os.path.join(out, 'manifest.json'), 'w') as fh:
    json.dump(manifest, fh)
"#;

/// The little-endian bytes of a typed read, for comparison with numpy's.
trait LeBytes: h5fmt::data::convert::H5Native + std::fmt::Debug {
    fn le(v: &[Self]) -> Vec<u8>;
}

macro_rules! le_bytes {
    ($($t:ty),*) => {$(
        impl LeBytes for $t {
            fn le(v: &[Self]) -> Vec<u8> {
                v.iter().flat_map(|x| x.to_le_bytes()).collect()
            }
        }
    )*};
}
le_bytes!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

/// Check `read::<T>` (and `read_slice::<T>` of `sels`) against numpy's
/// bytes, or, where numpy's are `null`, that it fails as converting the raw
/// bytes with `convert_slice` does (the same kind and message).
fn check_typed<T: LeBytes>(
    ds: &h5fmt::Dataset,
    dir: &Path,
    full: &J,
    sels: &[(h5fmt::data::hyperslab::Selection, &J)],
    what: &str,
) -> usize {
    use h5fmt::data::convert::convert_slice;
    let name = T::NAME;
    let expect =
        |got: h5fmt::Result<Vec<T>>, want: &J, raw: h5fmt::Result<Vec<u8>>, ctx: &str| match want
            .as_str()
        {
            Some(file) => {
                let want = std::fs::read(dir.join(file)).unwrap();
                let got = got.unwrap_or_else(|e| panic!("{what} {ctx} as {name}: {e}"));
                assert!(
                    T::le(&got) == want,
                    "{what} {ctx} as {name}: differs from numpy"
                );
            }
            None => {
                let e = got
                    .err()
                    .unwrap_or_else(|| panic!("{what} {ctx} as {name}: accepted"));
                let old = convert_slice::<T>(ds.dtype(), &raw.unwrap()).unwrap_err();
                assert_eq!(e.kind(), h5fmt::ErrorKind::Unrepresentable, "{what} {ctx}");
                assert_eq!(
                    e.to_string(),
                    old.with_path(ds.path()).to_string(),
                    "{what} {ctx} as {name}"
                );
            }
        };
    expect(ds.read::<T>(), &full[name], ds.read_raw(), "read");
    #[cfg(feature = "ndarray")]
    if let Some(file) = full[name].as_str() {
        let a = ds.read_array::<T>().unwrap();
        assert_eq!(a.shape().len(), ds.shape().len(), "{what}");
        let v: Vec<T> = a.iter().copied().collect();
        assert!(
            T::le(&v) == std::fs::read(dir.join(file)).unwrap(),
            "{what} read_array"
        );
    }
    for (sel, want) in sels {
        let ctx = format!("{sel:?}");
        expect(
            ds.read_slice::<T>(sel),
            &want[name],
            ds.read_slice_raw(sel),
            &ctx,
        );
        #[cfg(feature = "ndarray")]
        if want[name].is_string() {
            let a = ds.read_slice_array::<T>(sel).unwrap();
            let shape: Vec<usize> = sel.out_shape().iter().map(|&n| n as usize).collect();
            assert_eq!(a.shape(), &shape[..], "{what} {ctx}");
        }
    }
    1 + sels.len()
}

#[test]
fn typed_reads_match_numpy_astype() {
    use h5fmt::data::hyperslab::{Selection, SliceDim};
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("typed_reads");
    let _ = std::fs::remove_dir_all(&dir);
    let out = Command::new(&py)
        .arg("-c")
        .arg(TYPED)
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let manifest: J =
        serde_json::from_str(&std::fs::read_to_string(dir.join("manifest.json")).unwrap()).unwrap();
    let file = File::open(dir.join(manifest["file"].as_str().unwrap())).unwrap();
    let unmapped = File::open_unmapped(
        dir.join(manifest["file"].as_str().unwrap()),
        h5fmt::Limits::default(),
    )
    .unwrap();
    let (mut reads, mut refused) = (0, 0);
    let (mut casts, mut cast_refused) = (0, 0);
    for case in manifest["cases"].as_array().unwrap() {
        let what = case["dataset"].as_str().unwrap();
        let ds = file.dataset(what).unwrap();
        let mut sels = Vec::new();
        for s in case["slabs"].as_array().unwrap() {
            let dims = s["dims"]
                .as_array()
                .unwrap()
                .iter()
                .map(|d| {
                    let v: Vec<u64> = d
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|x| x.as_u64().unwrap())
                        .collect();
                    SliceDim {
                        start: v[0],
                        stride: v[1],
                        count: v[2],
                        block: v[3],
                    }
                })
                .collect();
            sels.push((Selection::Hyperslab(dims), &s["want"]));
        }
        let p = &case["points"];
        let coords = p["coords"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| {
                c.as_array()
                    .unwrap()
                    .iter()
                    .map(|x| x.as_u64().unwrap())
                    .collect()
            })
            .collect();
        sels.push((Selection::Points(coords), &p["want"]));
        let full = &case["full"];
        refused += full
            .as_object()
            .unwrap()
            .iter()
            .filter(|(k, v)| v.is_null() && !k.starts_with("cast_"))
            .count();
        if matches!(ds.dtype(), Datatype::Float { .. }) {
            for (c, r) in [
                check_astype::<i8>(&ds, &dir, full, &sels, what),
                check_astype::<i16>(&ds, &dir, full, &sels, what),
                check_astype::<i32>(&ds, &dir, full, &sels, what),
                check_astype::<i64>(&ds, &dir, full, &sels, what),
                check_astype::<u8>(&ds, &dir, full, &sels, what),
                check_astype::<u16>(&ds, &dir, full, &sels, what),
                check_astype::<u32>(&ds, &dir, full, &sels, what),
                check_astype::<u64>(&ds, &dir, full, &sels, what),
            ] {
                casts += c;
                cast_refused += r;
            }
        }
        reads += check_typed::<i8>(&ds, &dir, full, &sels, what);
        reads += check_typed::<i16>(&ds, &dir, full, &sels, what);
        reads += check_typed::<i32>(&ds, &dir, full, &sels, what);
        reads += check_typed::<i64>(&ds, &dir, full, &sels, what);
        reads += check_typed::<u8>(&ds, &dir, full, &sels, what);
        reads += check_typed::<u16>(&ds, &dir, full, &sels, what);
        reads += check_typed::<u32>(&ds, &dir, full, &sels, what);
        reads += check_typed::<u64>(&ds, &dir, full, &sels, what);
        reads += check_typed::<f32>(&ds, &dir, full, &sels, what);
        reads += check_typed::<f64>(&ds, &dir, full, &sels, what);
        if what.starts_with("contig_") && ds.len() > 2_000_000 {
            // The large reads again through positioned reads instead of the map.
            let ds = unmapped.dataset(what).unwrap();
            reads += check_typed::<f64>(&ds, &dir, full, &[], what);
        }
    }
    eprintln!(
        "{reads} typed reads match numpy ({refused} full reads refused as numpy's would not fit)"
    );
    assert!(
        reads >= 500 && refused >= 40,
        "{reads} reads, {refused} refused"
    );
    eprintln!("read_astype: {casts} float-to-integer reads match numpy's astype, {cast_refused} refused (a value NaN, infinite or out of range)");
    assert!(
        casts >= 30 && cast_refused >= 30,
        "read_astype: {casts} matched, {cast_refused} refused"
    );
}

/// `read_astype::<T>` (and `read_slice_astype`) of a float dataset against
/// numpy's `astype` bytes (`cast_T`), or, where those are `null` (a value
/// NaN, infinite or outside `T`), an `Unrepresentable` error. Returns
/// (reads matched, reads refused).
fn check_astype<T: LeBytes>(
    ds: &h5fmt::Dataset,
    dir: &Path,
    full: &J,
    sels: &[(h5fmt::data::hyperslab::Selection, &J)],
    what: &str,
) -> (usize, usize) {
    let key = format!("cast_{}", T::NAME);
    let (mut matched, mut refused) = (0, 0);
    let mut expect = |got: h5fmt::Result<Vec<T>>, want: &J, ctx: &str| match want.as_str() {
        Some(file) => {
            let got = got.unwrap_or_else(|e| panic!("{what} {ctx} astype {key}: {e}"));
            assert!(
                T::le(&got) == std::fs::read(dir.join(file)).unwrap(),
                "{what} {ctx} astype {key}: differs from numpy"
            );
            matched += 1;
        }
        None => {
            let e = got
                .err()
                .unwrap_or_else(|| panic!("{what} {ctx} astype {key}: accepted"));
            assert_eq!(e.kind(), h5fmt::ErrorKind::Unrepresentable, "{what} {ctx}");
            refused += 1;
        }
    };
    assert!(
        ds.read::<T>().is_err(),
        "{what}: read::<{}> took floats",
        T::NAME
    );
    expect(ds.read_astype::<T>(), &full[&key], "read");
    for (sel, want) in sels {
        expect(
            ds.read_slice_astype::<T>(sel),
            &want[&key],
            &format!("{sel:?}"),
        );
    }
    (matched, refused)
}
