//! `H5T_STD_REF` object references written by [`FileWriter`] and
//! [`FileEditor`]: libhdf5 (through ctypes on h5py's bundled library)
//! resolves each to the right object, and our reader decodes each to the
//! target's header address.

mod common;

use h5fmt::data::value::Reference;
use h5fmt::format::datatype::{Datatype, RefKind};
use h5fmt::write::edit::NewDataset;
use h5fmt::write::Format;
use h5fmt::{Addr, File, FileEditor, FileWriter, Value};
use std::path::Path;

/// Prints, for `FILE OBJ ATTR`, `rank;is_std_ref;name,name,...` (`-` for a
/// null reference) as libhdf5 resolves the references.
const RESOLVE: &str = r#"
import ctypes, os, sys, h5py
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
    ("H5Sget_simple_extent_ndims", ctypes.c_int, [hid]),
    ("H5Aread", ctypes.c_int, [hid, hid, ctypes.c_void_p]),
    ("H5Rget_type", ctypes.c_int, [ctypes.c_void_p]),
    ("H5Ropen_object", hid, [ctypes.c_void_p, hid, hid]),
    ("H5Iget_name", ctypes.c_ssize_t, [hid, ctypes.c_char_p, ctypes.c_size_t]),
    ("H5Rdestroy", ctypes.c_int, [ctypes.c_void_p]),
    ("H5Oclose", ctypes.c_int, [hid]), ("H5Aclose", ctypes.c_int, [hid]),
    ("H5Sclose", ctypes.c_int, [hid]), ("H5Tclose", ctypes.c_int, [hid]),
    ("H5Tequal", ctypes.c_int, [hid, hid]),
]:
    f = getattr(L, n); f.restype = r; f.argtypes = a
STD_REF = hid.in_dll(L, "H5T_STD_REF_g").value
f = h5py.File(sys.argv[1], 'r')
a = L.H5Aopen_by_name(f.id.id, sys.argv[2].encode(), sys.argv[3].encode(), 0, 0)
assert a >= 0, 'open attribute'
t = L.H5Aget_type(a)
is_std = L.H5Tequal(t, STD_REF) > 0
L.H5Tclose(t)
s = L.H5Aget_space(a)
n = L.H5Sget_simple_extent_npoints(s); rank = L.H5Sget_simple_extent_ndims(s)
L.H5Sclose(s)
buf = ctypes.create_string_buffer(64 * n)
assert L.H5Aread(a, STD_REF, buf) >= 0, 'H5Aread'
names = []
for i in range(n):
    p = ctypes.addressof(buf) + 64 * i
    if L.H5Rget_type(p) <= 0:
        names.append('-'); continue
    o = L.H5Ropen_object(p, 0, 0)
    assert o >= 0, 'H5Ropen_object'
    nb = ctypes.create_string_buffer(1024)
    L.H5Iget_name(o, nb, 1024)
    names.append(nb.value.decode())
    L.H5Oclose(o); L.H5Rdestroy(p)
L.H5Aclose(a)
print('%d;%d;%s' % (rank, int(is_std), ','.join(names)))
"#;

fn python() -> std::path::PathBuf {
    common::python().expect(
        "no Python venv: set H5FMT_VENV (cargo xtask test) or create /work/main/.venv \
         (cargo xtask venv); this test needs h5py as its oracle",
    )
}

fn resolve(py: &Path, file: &Path, obj: &str, attr: &str) -> String {
    common::run_py(
        py,
        RESOLVE,
        &[file.as_os_str(), obj.as_ref(), attr.as_ref()],
    )
    .trim()
    .to_string()
}

fn our_refs(file: &File, obj: &str, attr: &str) -> (Datatype, Vec<Option<Addr>>) {
    let a = file
        .object(obj)
        .unwrap()
        .attrs()
        .unwrap()
        .into_iter()
        .find(|a| a.name() == attr)
        .unwrap();
    let refs = a
        .read_values()
        .unwrap()
        .into_iter()
        .map(|v| match v {
            Value::Ref(Reference::Object(x)) => Some(x),
            Value::Ref(Reference::Null) => None,
            other => panic!("not an object reference: {other:?}"),
        })
        .collect();
    (a.dtype().clone(), refs)
}

fn addr(file: &File, path: &str) -> Option<Addr> {
    Some(file.object(path).unwrap().addr())
}

fn write_file(path: &Path, format: Format) {
    let mut w = FileWriter::create_with(path, format).unwrap();
    let t = w.root().create_group("t").unwrap().id();
    let x = w
        .group(t)
        .unwrap()
        .create_dataset("x")
        .write(&[1i32, 2, 3])
        .unwrap();
    let y = w
        .group(t)
        .unwrap()
        .create_dataset("y")
        .write(&[1.5f64])
        .unwrap();
    let g = w.root().create_group("g").unwrap().id();
    // A target created after the reference is set.
    w.set_attr_object_refs(t, "FWD", &[x], true).unwrap();
    let z = w
        .group(g)
        .unwrap()
        .create_dataset("z")
        .write(&[7u8])
        .unwrap();
    w.set_attr_object_refs(t, "INDEX_COLUMNS", &[y, z, x], false)
        .unwrap();
    w.set_attr_object_refs(x, "CATEGORIES", &[g], true).unwrap();
    w.set_attr_object_refs(t, "SELF", &[t, ObjectIdRoot::ROOT], false)
        .unwrap();
    w.set_attr_object_refs(t, "EMPTY", &[], false).unwrap();
    assert!(w.set_attr_object_refs(t, "BAD", &[x, y], true).is_err());
    w.close().unwrap();
}

use h5fmt::write::ObjectId as ObjectIdRoot;

#[test]
fn writer_and_editor_references_resolve_in_libhdf5_and_our_reader() {
    let py = python();
    for format in [Format::V18, Format::Earliest, Format::Latest] {
        let path = common::tmp("std-refs", &format!("refs-{format:?}.h5"));
        write_file(&path, format);
        assert_eq!(
            resolve(&py, &path, "/t", "INDEX_COLUMNS"),
            "1;1;/t/y,/g/z,/t/x"
        );
        assert_eq!(resolve(&py, &path, "/t/x", "CATEGORIES"), "0;1;/g");
        assert_eq!(resolve(&py, &path, "/t", "FWD"), "0;1;/t/x");
        assert_eq!(resolve(&py, &path, "/t", "SELF"), "1;1;/t,/");
        assert_eq!(resolve(&py, &path, "/t", "EMPTY"), "1;1;");
        {
            let file = File::open(&path).unwrap();
            let (dt, refs) = our_refs(&file, "/t", "INDEX_COLUMNS");
            assert_eq!(
                dt,
                Datatype::Reference {
                    size: 18,
                    kind: RefKind::Std
                }
            );
            assert_eq!(
                refs,
                [
                    addr(&file, "/t/y"),
                    addr(&file, "/g/z"),
                    addr(&file, "/t/x")
                ]
            );
            assert_eq!(our_refs(&file, "/t/x", "CATEGORIES").1, [addr(&file, "/g")]);
        }

        // The editor: references to objects of the file as opened and to
        // objects created in the same session; a null reference.
        let mut ed = FileEditor::open(&path).unwrap();
        ed.create_group("/t", "CATS").unwrap();
        ed.create_dataset(
            "/t/CATS",
            "labels",
            &NewDataset::new(Datatype::int_le(4, true), &[2]),
        )
        .unwrap();
        ed.set_attr_object_refs("/t/y", "CATEGORIES", &["/t/CATS/labels"], true)
            .unwrap();
        ed.set_attr_object_refs("/t", "INDEX_COLUMNS", &["/t/x", "/g/z"], false)
            .unwrap();
        assert!(ed
            .set_attr_object_refs("/t", "MISSING", &["/nope"], false)
            .is_err());
        let undef = h5fmt::write::AttrValue::object_refs(&[Addr::UNDEF], 8, true).unwrap();
        ed.set_attr("/g", "NULLREF", undef).unwrap();
        ed.flush().unwrap();
        drop(ed);
        assert_eq!(
            resolve(&py, &path, "/t/y", "CATEGORIES"),
            "0;1;/t/CATS/labels"
        );
        assert_eq!(resolve(&py, &path, "/t", "INDEX_COLUMNS"), "1;1;/t/x,/g/z");
        assert_eq!(resolve(&py, &path, "/g", "NULLREF"), "0;1;-");
        let file = File::open(&path).unwrap();
        assert_eq!(
            our_refs(&file, "/t/y", "CATEGORIES").1,
            [addr(&file, "/t/CATS/labels")]
        );
        assert_eq!(
            our_refs(&file, "/t", "INDEX_COLUMNS").1,
            [addr(&file, "/t/x"), addr(&file, "/g/z")]
        );
        assert_eq!(our_refs(&file, "/g", "NULLREF").1, [None]);
    }
}
