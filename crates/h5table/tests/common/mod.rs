//! h5py as the oracle of the writing tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

/// `$H5FMT_VENV/bin/python`, else `/work/main/.venv/bin/python` when it
/// exists; otherwise the test fails (it must not pass without its oracle).
pub fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    assert!(
        p.exists(),
        "no Python venv at {venv}: set H5FMT_VENV (cargo xtask test) or run `cargo xtask venv`; \
         these tests need h5py/numpy as their oracle"
    );
    p
}

/// A scratch file path for this test process.
pub fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h5table-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// Dump a table as h5py/numpy/libhdf5 see it, one fact per line:
///
/// * `A <obj> <attr> <class> <size> <pad> <cset> <shape> <value>` for the
///   attributes of the table group, its columns and its categories
///   (strings decoded, references resolved by libhdf5 to object names,
///   `STDREF` as the class of an `H5T_STD_REF` attribute);
/// * `C <name> <numpy dtype> <extent> <chunks> <filters> <fill>` per column;
/// * `V <name> <v0> <v1> …` (tab-separated) the values of rows
///   `[0, NROWS)`, `M` where numpy's canonical missing test (§8.5) says
///   missing;
/// * `K <name> …` the values of a categories dataset.
pub const DUMP: &str = r#"
import ctypes, os, sys, math, h5py, hdf5plugin, numpy as np
from h5py import h5a, h5t
def _lib():
    for line in open('/proc/self/maps'):
        p = line.split()[-1]; b = os.path.basename(p)
        if b.startswith('libhdf5') and '.so' in b and '_hl' not in b:
            return p
    raise SystemExit('libhdf5 not mapped')
L = ctypes.CDLL(_lib())
hid = ctypes.c_int64
for n, r, a in [
    ("H5Aopen_by_name", hid, [hid, ctypes.c_char_p, ctypes.c_char_p, hid, hid]),
    ("H5Aget_space", hid, [hid]), ("H5Aget_type", hid, [hid]),
    ("H5Sget_simple_extent_npoints", ctypes.c_int64, [hid]),
    ("H5Aread", ctypes.c_int, [hid, hid, ctypes.c_void_p]),
    ("H5Rget_type", ctypes.c_int, [ctypes.c_void_p]),
    ("H5Ropen_object", hid, [ctypes.c_void_p, hid, hid]),
    ("H5Iget_name", ctypes.c_ssize_t, [hid, ctypes.c_char_p, ctypes.c_size_t]),
    ("H5Rdestroy", ctypes.c_int, [ctypes.c_void_p]),
    ("H5Oclose", ctypes.c_int, [hid]), ("H5Aclose", ctypes.c_int, [hid]),
    ("H5Sclose", ctypes.c_int, [hid]), ("H5Tclose", ctypes.c_int, [hid]),
    ("H5Tequal", ctypes.c_int, [hid, hid]),
]:
    f_ = getattr(L, n); f_.restype = r; f_.argtypes = a
STD_REF = hid.in_dll(L, "H5T_STD_REF_g").value
STD_REF_OBJ = hid.in_dll(L, "H5T_STD_REF_OBJ_g").value

f = h5py.File(sys.argv[1], 'r')
tpath = sys.argv[2]
t = f[tpath]

def refs(objpath, name):
    a = L.H5Aopen_by_name(f.id.id, objpath.encode(), name.encode(), 0, 0)
    assert a >= 0
    ty = L.H5Aget_type(a)
    std = L.H5Tequal(ty, STD_REF) > 0
    obj = L.H5Tequal(ty, STD_REF_OBJ) > 0
    L.H5Tclose(ty)
    s = L.H5Aget_space(a); n = L.H5Sget_simple_extent_npoints(s); L.H5Sclose(s)
    if not std:
        L.H5Aclose(a)
        return ('OBJREF' if obj else 'BADREF'), []
    buf = ctypes.create_string_buffer(64 * max(n, 1))
    assert L.H5Aread(a, STD_REF, buf) >= 0
    out = []
    for i in range(n):
        p = ctypes.addressof(buf) + 64 * i
        if L.H5Rget_type(p) <= 0:
            out.append('-'); continue
        o = L.H5Ropen_object(p, 0, 0); assert o >= 0
        nb = ctypes.create_string_buffer(4096); L.H5Iget_name(o, nb, 4096)
        out.append(nb.value.decode()); L.H5Oclose(o); L.H5Rdestroy(p)
    L.H5Aclose(a)
    return 'STDREF', out

PADS = {h5t.STR_NULLTERM: 'NULLTERM', h5t.STR_NULLPAD: 'NULLPAD', h5t.STR_SPACEPAD: 'SPACEPAD'}
CSETS = {h5t.CSET_ASCII: 'ASCII', h5t.CSET_UTF8: 'UTF8'}

def fmt(x, dt):
    if dt.subdtype is not None:
        dt = dt.subdtype[0]
    if isinstance(x, np.ndarray) and x.ndim > 0:
        return '[' + ';'.join(fmt(y, dt) for y in x) + ']'
    if dt.names:
        return ';'.join(fmt(x[n], dt[n]) for n in dt.names)
    if h5py.check_string_dtype(dt) is not None and dt.kind == 'O':
        return x.decode() if isinstance(x, bytes) else str(x)
    if dt.kind in 'iu':
        return str(int(x))
    if dt.kind == 'f':
        v = float(x)
        return 'nan' if math.isnan(v) else repr(v)
    if dt.kind == 'S':
        return bytes(x).decode('utf-8')
    if dt.kind == 'V':
        return bytes(x).hex()
    if dt.kind == 'b':
        return str(bool(x))
    return repr(x)

def read_all(obj):
    try:
        return obj[()]
    except Exception:
        # Tagged opaque (also inside compounds): read in the dataset's own type.
        allv = np.empty(obj.shape, dtype=obj.dtype)
        obj.id.read(h5py.h5s.ALL, h5py.h5s.ALL, allv, mtype=obj.id.get_type())
        return allv

def attr_lines(obj):
    for name in sorted(obj.attrs.keys()):
        aid = h5a.open(obj.id, name.encode())
        ty = aid.get_type()
        cls = ty.get_class()
        shape = 'scalar' if aid.shape == () else 'x'.join(str(d) for d in aid.shape)
        if cls == h5t.REFERENCE:
            kind, names = refs(obj.name, name)
            print('A', obj.name, name, kind, ty.get_size(), '-', '-', shape, ','.join(names))
            continue
        if cls == h5t.STRING and not ty.is_variable_str():
            v = obj.attrs[name]
            vals = [v] if aid.shape == () else list(v)
            print('A', obj.name, name, 'STRING', ty.get_size(), PADS[ty.get_strpad()],
                  CSETS[ty.get_cset()], shape, ','.join(bytes(s).decode() for s in vals))
            continue
        if cls == h5t.ENUM:
            base = ty.get_super()
            members = ','.join('%s=%d' % (ty.get_member_name(i).decode(), ty.get_member_value(i))
                               for i in range(ty.get_nmembers()))
            v = obj.attrs[name]
            print('A', obj.name, name, 'ENUM', ty.get_size(), 'signed=%d' % int(base.get_sign() == h5t.SGN_2),
                  members, shape, int(v))
            continue
        v = obj.attrs[name]
        dt = v.dtype
        try:
            val = fmt(v if aid.shape == () else v.flat[0], dt)
        except Exception:
            val = '?'
        print('A', obj.name, name, dt.str, ty.get_size(), '-', '-', shape, val)

nrows = int(t.attrs['NROWS'])
attr_lines(t)
for name in t:
    obj = t[name]
    if isinstance(obj, h5py.Group):
        for cn in obj:
            d = obj[cn]
            attr_lines(d)
            print('K', cn, *[fmt(x, d.dtype) for x in read_all(d)], sep='\t')
        continue
    attr_lines(obj)
    dt = obj.dtype
    try:
        fv = obj.fillvalue
    except Exception:
        # h5py has no conversion for tagged opaque fills: read it as stored.
        Lf = L.H5Pget_fill_value; Lf.restype = ctypes.c_int; Lf.argtypes = [hid, hid, ctypes.c_void_p]
        tid = obj.id.get_type()
        dcpl = obj.id.get_create_plist()
        buf = ctypes.create_string_buffer(tid.get_size())
        assert Lf(dcpl.id, tid.id, buf) >= 0
        fv = np.frombuffer(buf.raw, dtype=dt)[0]
    filters = ','.join(sorted(str(k) for k in obj._filters.keys())) or '-'
    print('C', name, dt.str if not dt.names else 'compound', obj.shape[0], obj.chunks[0] if obj.chunks else '-',
          filters, 'M' if fv is None else fmt(fv, dt))
    vals = read_all(obj)[:nrows]
    out = []
    for x in vals:
        if dt.kind == 'f' and dt.subdtype is None and math.isnan(float(fv)):
            miss = math.isnan(float(x))
        elif dt.kind == 'O':
            miss = x == fv
        else:
            # Bit equality (§8.5), in the column's own byte order.
            miss = np.asarray(x, dtype=dt).tobytes() == np.asarray(fv, dtype=dt).tobytes()
        out.append('M' if miss else fmt(x, dt))
    print('V', name, *out, sep='\t')
"#;

/// Run [`DUMP`] on table `table` of `file`; its lines.
pub fn dump(file: &Path, table: &str) -> Vec<String> {
    let out = Command::new(python())
        .arg("-c")
        .arg(DUMP)
        .arg(file)
        .arg(table)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("utf-8")
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The dump line starting with `prefix` (exactly one).
pub fn line<'a>(lines: &'a [String], prefix: &str) -> &'a str {
    let m: Vec<&String> = lines
        .iter()
        .filter(|l| {
            l.starts_with(prefix)
                && (l.len() == prefix.len() || matches!(l.as_bytes()[prefix.len()], b' ' | b'\t'))
        })
        .collect();
    assert_eq!(
        m.len(),
        1,
        "lines starting with {prefix:?}: {m:?}\nall:\n{}",
        lines.join("\n")
    );
    m[0]
}

/// The values of column `name`, as dumped.
pub fn values(lines: &[String], name: &str) -> Vec<String> {
    let l = line(lines, &format!("V\t{name}"));
    l.split('\t').skip(2).map(str::to_owned).collect()
}
