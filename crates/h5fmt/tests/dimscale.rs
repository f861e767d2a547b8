//! Dimension scales (H5DS): files made by h5py's `dims` API (which calls
//! libhdf5's H5DS) read by us as h5py reports them; files we write and edit
//! read by h5py's `dims` as an h5py-made twin of the same operations
//! (scales, labels, `REFERENCE_LIST` records and the attribute types); the
//! netCDF-4 files of the shared corpus; broken attributes give typed errors.

mod common;

use h5fmt::read::dimscale::{DIMENSION_LABELS, DIMENSION_LIST, REFERENCE_LIST};
use h5fmt::{Addr, ErrorKind, File, FileEditor, FileWriter, Object};
use std::collections::BTreeMap;
use std::path::Path;

/// For every dataset of `FILE` (sorted by path), one line as h5py's `dims`
/// API sees it: `path|scale|name|scales per dim|labels|REFERENCE_LIST`.
/// With a second argument, the types of the H5DS attributes too.
const REPORT: &str = r#"
import sys, h5py
f = h5py.File(sys.argv[1], 'r')
types = len(sys.argv) > 2
def tdesc(t):
    c = t.get_class()
    if c == h5py.h5t.STRING:
        if t.is_variable_str():
            return 'vstr(%d,%d)' % (t.get_cset(), t.get_strpad())
        return 'str(%d,%d,%d)' % (t.get_size(), t.get_cset(), t.get_strpad())
    if c == h5py.h5t.COMPOUND:
        return 'cmp%d{%s}' % (t.get_size(), ','.join('%s@%d:%s' % (t.get_member_name(i).decode(), t.get_member_offset(i), tdesc(t.get_member_type(i))) for i in range(t.get_nmembers())))
    if c == h5py.h5t.VLEN:
        return 'vlen(%s)' % tdesc(t.get_super())
    if c == h5py.h5t.REFERENCE:
        return 'ref%d' % t.get_size()
    if c == h5py.h5t.INTEGER:
        return 'int%d%s' % (t.get_size(), 'u' if t.get_sign() == 0 else 's')
    return 'class%d' % c
out = []
def visit(name, o):
    if not isinstance(o, h5py.Dataset):
        return
    n = o.ndim
    scale = o.is_scale
    nm = h5py.h5ds.get_scale_name(o.id) if scale else None
    nm = '-' if nm is None else nm.decode()
    dims = ';'.join(','.join(s.name for s in o.dims[i].values()) for i in range(n))
    labels = ';'.join(o.dims[i].label for i in range(n))
    refs = ''
    if 'REFERENCE_LIST' in o.attrs:
        refs = ';'.join('%s:%d' % (f[r].name, i) for r, i in o.attrs['REFERENCE_LIST'])
    line = '%s|%d|%s|%s|%s|%s' % (o.name, scale, nm, dims, labels, refs)
    if types:
        ts = []
        for a in ('CLASS', 'NAME', 'DIMENSION_LIST', 'REFERENCE_LIST', 'DIMENSION_LABELS'):
            if a in o.attrs:
                aid = o.attrs.get_id(a)
                ts.append('%s=%s%s' % (a, tdesc(aid.get_type()), aid.shape))
        line += '|' + ' '.join(ts)
    out.append(line)
f.visititems(visit)
for l in sorted(out):
    print(l)
"#;

fn python() -> std::path::PathBuf {
    common::python().expect(
        "no Python venv: set H5FMT_VENV (cargo xtask test) or create /work/main/.venv \
         (cargo xtask venv); this test needs h5py as its oracle",
    )
}

fn h5py_report(py: &Path, file: &Path, types: bool) -> String {
    let mut args = vec![file.as_os_str().to_owned()];
    if types {
        args.push("types".into());
    }
    common::run_py(py, REPORT, &args)
}

/// The same lines as [`REPORT`] (without types), from our reader.
fn our_report(file: &Path) -> String {
    let f = File::open(file).unwrap();
    let mut paths: BTreeMap<Addr, String> = BTreeMap::new();
    let mut datasets = Vec::new();
    for o in f.root().unwrap().walk() {
        let o = o.unwrap();
        paths.insert(o.addr(), o.path().to_string());
        if let Object::Dataset(d) = o {
            datasets.push(*d);
        }
    }
    let name = |a: &Addr| paths.get(a).cloned().unwrap_or_else(|| format!("?{a}"));
    let mut lines = Vec::new();
    for d in &datasets {
        let rank = d.shape().len();
        let scale = d.is_dimension_scale().unwrap();
        // h5py's `h5ds.get_scale_name` gives b"" for a scale without NAME.
        let nm = if scale {
            d.scale_name().unwrap().unwrap_or_default()
        } else {
            "-".into()
        };
        // h5py lists `ndim` dimensions (none for a scalar); we list H5DS's.
        let scales = d.dimension_scales().unwrap();
        let dims: Vec<String> = scales
            .iter()
            .take(rank)
            .map(|l| {
                l.iter()
                    .map(|s| name(&s.addr))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .collect();
        let labels = d.dimension_labels().unwrap();
        let refs: Vec<String> = d
            .scale_references()
            .unwrap()
            .iter()
            .map(|r| format!("{}:{}", name(&r.dataset), r.dim))
            .collect();
        lines.push(format!(
            "{}|{}|{}|{}|{}|{}",
            d.path(),
            u8::from(scale),
            nm,
            dims.join(";"),
            labels[..rank.min(labels.len())].join(";"),
            refs.join(";")
        ));
    }
    lines.sort();
    lines.iter().map(|l| format!("{l}\n")).collect()
}

/// The operations of every write test, as h5py code (run on an h5py file).
const H5PY_OPS: &str = r#"
import sys, h5py, numpy as np
f = h5py.File(sys.argv[1], 'w')
d = f.create_dataset('data', data=np.zeros((3, 4, 2)))
e = f.create_dataset('grp/other', data=np.zeros(4))
x = f.create_dataset('x', data=np.arange(3.0))
y = f.create_dataset('y', data=np.arange(4.0))
z = f.create_dataset('grp/z', data=np.arange(4.0))
w = f.create_dataset('w', data=np.arange(2.0))
x.make_scale('x axis')
y.make_scale('')
z.make_scale('zed')
d.dims[0].attach_scale(x)
d.dims[0].attach_scale(x)
d.dims[1].attach_scale(y)
d.dims[1].attach_scale(z)
d.dims[1].attach_scale(x)
e.dims[0].attach_scale(y)
e.dims[0].attach_scale(z)
d.dims[2].attach_scale(w)
d.dims[1].detach_scale(y)
d.dims[0].detach_scale(x)
d.dims[2].detach_scale(w)
d.dims[2].attach_scale(w)
d.dims[1].label = 'lon'
d.dims[2].label = 'level'
d.dims[2].label = ''
e.dims[0].label = 'east'
f.close()
"#;

/// The same operations through [`FileWriter`].
fn write_ops(path: &Path) {
    let mut w = FileWriter::create(path).unwrap();
    let mut root = w.root();
    let d = root
        .create_dataset("data")
        .shape(&[3, 4, 2])
        .write(&[0f64; 24])
        .unwrap();
    let e = root.create_dataset("grp/other").write(&[0f64; 4]).unwrap();
    let x = root.create_dataset("x").write(&[0.0f64, 1.0, 2.0]).unwrap();
    let y = root
        .create_dataset("y")
        .write(&[0.0f64, 1.0, 2.0, 3.0])
        .unwrap();
    let z = root
        .create_dataset("grp/z")
        .write(&[0.0f64, 1.0, 2.0, 3.0])
        .unwrap();
    let ws = root.create_dataset("w").write(&[0.0f64, 1.0]).unwrap();
    w.set_dimension_scale(x, Some("x axis")).unwrap();
    w.set_dimension_scale(y, Some("")).unwrap();
    w.set_dimension_scale(z, Some("zed")).unwrap();
    w.attach_dimension_scale(d, x, 0).unwrap();
    w.attach_dimension_scale(d, x, 0).unwrap();
    w.attach_dimension_scale(d, y, 1).unwrap();
    w.attach_dimension_scale(d, z, 1).unwrap();
    w.attach_dimension_scale(d, x, 1).unwrap();
    w.attach_dimension_scale(e, y, 0).unwrap();
    w.attach_dimension_scale(e, z, 0).unwrap();
    w.attach_dimension_scale(d, ws, 2).unwrap();
    w.detach_dimension_scale(d, y, 1).unwrap();
    w.detach_dimension_scale(d, x, 0).unwrap();
    w.detach_dimension_scale(d, ws, 2).unwrap();
    w.attach_dimension_scale(d, ws, 2).unwrap();
    w.set_dimension_label(d, 1, "lon").unwrap();
    w.set_dimension_label(d, 2, "level").unwrap();
    w.set_dimension_label(d, 2, "").unwrap();
    w.set_dimension_label(e, 0, "east").unwrap();
    assert!(w.detach_dimension_scale(d, y, 1).is_err(), "y is detached");
    assert!(w.attach_dimension_scale(d, d, 0).is_err(), "own scale");
    assert!(
        w.attach_dimension_scale(d, x, 3).is_err(),
        "dim out of range"
    );
    assert!(
        w.attach_dimension_scale(x, y, 0).is_err(),
        "a scale has no scales"
    );
    w.close().unwrap();
}

#[test]
fn h5py_dims_read_by_us() {
    let py = python();
    let p = common::tmp("dimscale", "h5py_ops.h5");
    common::run_py(&py, H5PY_OPS, &[&p]);
    let theirs = h5py_report(&py, &p, false);
    assert!(theirs.contains("/x,/grp/z"), "{theirs}");
    assert_eq!(our_report(&p), theirs);
}

#[test]
fn written_by_us_as_h5py_writes() {
    let py = python();
    let twin = common::tmp("dimscale", "twin.h5");
    common::run_py(&py, H5PY_OPS, &[&twin]);
    let ours = common::tmp("dimscale", "ours.h5");
    write_ops(&ours);
    assert_eq!(h5py_report(&py, &ours, true), h5py_report(&py, &twin, true));
    assert_eq!(our_report(&ours), h5py_report(&py, &twin, false));
}
