//! `#[derive(H5Compound)]` against h5py (libhdf5) as the oracle.
//!
//! Reading: h5py writes compound datasets whose members are in another
//! order than the struct's fields, big-endian, with an extra member, a
//! nested compound, an array member, a fixed-length and a variable-length
//! string, contiguous and chunked + gzip; every value is a function of the
//! row index, computed by the same formula here. Writing: we write
//! `Vec<Struct>` (new file, then appended with `FileEditor::append`) and the
//! Python script checks h5py's dtype (names, numpy formats, packed offsets)
//! and values against the same formula.
#![cfg(feature = "derive")]

mod common;
use common::{python, run_py};
use h5fmt::data::hyperslab::Selection;
use h5fmt::{ErrorKind, File, FileEditor, FileWriter, H5Compound, H5Type};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    common::tmp("derive", name)
}

/// h5py writes the files the read tests read. Row `i` holds:
/// extra = -i, b = i*0.5 - 3, a = (i*7) % 65536, inner.q = -i**3,
/// inner.p = i/4, arr = [i, i+1, -i], fixed = b"f%d" % i,
/// vs = "vlen-%d-✓" % i, in member orders unlike the struct's.
const WRITE_PY: &str = r#"
import sys, h5py, numpy as np
inner = np.dtype([('q', '>i8'), ('p', '<f4')])
full = np.dtype([('extra', '<i4'), ('b', '>f8'), ('fixed', 'S8'), ('a', '<u2'),
                 ('vs', h5py.string_dtype()), ('inner', inner), ('arr', '>i4', (3,))])
def rows(n):
    d = np.zeros(n, dtype=full)
    for i in range(n):
        d[i] = (-i, i * 0.5 - 3, b'f%d' % i, (i * 7) % 65536, 'vlen-%d-\u2713' % i,
                (-(i ** 3), i / 4), (i, i + 1, -i))
    return d
with h5py.File(sys.argv[1], 'w') as f:
    f.create_dataset('contig', data=rows(20))
    f.create_dataset('chunked', data=rows(50), chunks=(7,), compression='gzip')
    m = rows(24).reshape(4, 6)
    f.create_dataset('matrix', data=m, chunks=(3, 4), compression='gzip', shuffle=True)
    f['contig'].attrs.create('rec', rows(3))
    # No 'inner' member.
    f.create_dataset('no_inner', data=np.zeros(3, dtype=[('a', '<u2'), ('b', '<f8')]))
    # 'a' does not fit a u16 in row 1.
    big = np.zeros(2, dtype=[('a', '<i8'), ('b', '<f8')])
    big['a'] = [5, 70000]
    f.create_dataset('big', data=big)
    f.create_dataset('plain', data=np.arange(5, dtype='<i4'))
    # A 2x2 array member and a bool member.
    mt = np.zeros(3, dtype=[('flag', '?'), ('m', '<i2', (2, 2))])
    for i in range(3):
        mt[i] = (i % 2 == 1, [[i, -i], [2 * i, 3]])
    f.create_dataset('mat', data=mt)
"#;

#[derive(Clone, Copy, Debug, PartialEq, H5Compound)]
struct Inner {
    p: f64,
    q: i64,
}

/// Read-only (a `String` is not `Copy`): the fields in another order than
/// the file's members, wider types, no `extra`.
#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct Rec {
    /// Doc comments on fields are fine.
    pub a: u32,
    pub(crate) b: f64,
    inner: Inner,
    arr: [i64; 3],
    #[h5(name = "fixed")]
    fixed_s: String,
    vs: String,
}

fn rec(i: i64) -> Rec {
    Rec {
        a: ((i * 7) % 65536) as u32,
        b: i as f64 * 0.5 - 3.0,
        inner: Inner {
            p: i as f64 / 4.0,
            q: -(i * i * i),
        },
        arr: [i, i + 1, -i],
        fixed_s: format!("f{i}"),
        vs: format!("vlen-{i}-✓"),
    }
}

#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct Small {
    a: u16,
}

#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct FloatAsInt {
    b: i32,
}

#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct WrongLen {
    arr: [i64; 4],
}

#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct Mat {
    flag: bool,
    m: [[i32; 2]; 2],
}

#[derive(Debug, PartialEq, H5Compound)]
#[h5(read_only)]
struct FlatMat {
    m: [i16; 4],
}

#[test]
fn read_h5py_compounds() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let path = tmp("read.h5");
    run_py(&py, WRITE_PY, &[&path]);
    let f = File::open(&path).unwrap();

    for (name, n) in [("contig", 20), ("chunked", 50)] {
        let ds = f.dataset(name).unwrap();
        let got: Vec<Rec> = ds.read_records().unwrap();
        let want: Vec<Rec> = (0..n).map(rec).collect();
        assert_eq!(got, want, "{name}");
    }
    // Contiguous and chunked layouts really are what the test means.
    assert_eq!(
        f.dataset("contig").unwrap().layout_class(),
        h5fmt::read::LayoutClass::Contiguous
    );
    assert!(!f.dataset("chunked").unwrap().filters().filters.is_empty());

    // A selection of a 2-D chunked dataset: rows 1..3, columns 1, 3, 5.
    let ds = f.dataset("matrix").unwrap();
    let sel = Selection::parse("1:3,1::2", ds.shape()).unwrap();
    let got: Vec<Rec> = ds.read_records_slice(&sel).unwrap();
    let want: Vec<Rec> = [1, 3, 5, 1, 3, 5]
        .iter()
        .zip([1, 1, 1, 2, 2, 2])
        .map(|(&c, r)| rec(r * 6 + c))
        .collect();
    assert_eq!(got, want);

    // The attribute.
    let a = ds_attr(&f, "contig", "rec");
    assert_eq!(
        a.read_records::<Rec>().unwrap(),
        (0..3).map(rec).collect::<Vec<_>>()
    );

    // Members alone: numbers and nested structs are records too.
    let ds = f.dataset("contig").unwrap();
    assert_eq!(
        f.dataset("plain").unwrap().read_records::<i64>().unwrap(),
        vec![0, 1, 2, 3, 4]
    );
    assert_eq!(
        f.dataset("plain").unwrap().read_records::<f32>().unwrap(),
        vec![0.0, 1.0, 2.0, 3.0, 4.0]
    );
    let vals: Vec<h5fmt::Value> = ds.read_records().unwrap();
    assert_eq!(vals, ds.read_values().unwrap());

    // A 2x2 array member as [[T; 2]; 2] and as [T; 4]; a bool.
    let ds = f.dataset("mat").unwrap();
    let got: Vec<Mat> = ds.read_records().unwrap();
    let want: Vec<Mat> = (0..3)
        .map(|i| Mat {
            flag: i % 2 == 1,
            m: [[i, -i], [2 * i, 3]],
        })
        .collect();
    assert_eq!(got, want);
    let got: Vec<FlatMat> = ds.read_records().unwrap();
    assert_eq!(got[2], FlatMat { m: [2, -2, 4, 3] });
}

fn ds_attr(f: &File, ds: &str, name: &str) -> h5fmt::Attribute {
    f.dataset(ds).unwrap().attr(name).unwrap()
}

#[test]
fn read_errors_are_errors() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let path = tmp("errors.h5");
    run_py(&py, WRITE_PY, &[&path]);
    let f = File::open(&path).unwrap();

    // A member the struct needs and the file lacks: named, with the path.
    let e = f
        .dataset("no_inner")
        .unwrap()
        .read_records::<Rec>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Usage, "{e}");
    assert!(e.message().contains("\"inner\""), "{e}");
    assert_eq!(e.path(), Some("/no_inner"));

    // Narrowing that does not fit: the element and member are named.
    let e = f
        .dataset("big")
        .unwrap()
        .read_records::<Small>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unrepresentable, "{e}");
    assert!(e.message().contains("element 1"), "{e}");
    assert!(e.message().contains("\"a\""), "{e}");
    assert!(e.message().contains("70000"), "{e}");
    assert_eq!(e.path(), Some("/big"));
    // ... while a type that holds it reads.
    #[derive(Debug, PartialEq, H5Compound)]
    #[h5(read_only)]
    struct Wide {
        a: u32,
    }
    assert_eq!(
        f.dataset("big").unwrap().read_records::<Wide>().unwrap(),
        vec![Wide { a: 5 }, Wide { a: 70000 }]
    );

    // A float member into an integer field.
    let e = f
        .dataset("contig")
        .unwrap()
        .read_records::<FloatAsInt>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unrepresentable, "{e}");
    assert!(e.message().contains("\"b\""), "{e}");

    // An array member of another length.
    let e = f
        .dataset("contig")
        .unwrap()
        .read_records::<WrongLen>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unrepresentable, "{e}");

    // A struct from a non-compound dataset.
    let e = f
        .dataset("plain")
        .unwrap()
        .read_records::<Inner>()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unrepresentable, "{e}");
    assert_eq!(e.path(), Some("/plain"));

    // A string field from a number, a number from a string.
    #[derive(Debug, H5Compound)]
    #[h5(read_only)]
    struct StrFromNum {
        #[allow(dead_code)]
        a: String,
    }
    assert!(f
        .dataset("contig")
        .unwrap()
        .read_records::<StrFromNum>()
        .is_err());
    #[derive(Debug, H5Compound)]
    #[h5(read_only)]
    struct NumFromStr {
        #[allow(dead_code)]
        vs: f64,
    }
    assert!(f
        .dataset("contig")
        .unwrap()
        .read_records::<NumFromStr>()
        .is_err());
}

/// Written by us; the members of a packed numpy dtype built from a list.
#[derive(Clone, Copy, Debug, PartialEq, H5Compound)]
struct Out {
    id: u32,
    x: f64,
    #[h5(name = "pos vec")]
    pos: [f32; 3],
    flag: bool,
    inner: Inner,
    small: i8,
    m: [[u16; 3]; 2],
    r#type: u8,
}

fn out(i: u32) -> Out {
    let k = i as u16;
    Out {
        id: i * 3,
        x: f64::from(i) * 1.25 - 7.0,
        pos: [i as f32, -(i as f32), 0.5],
        flag: i.is_multiple_of(3),
        inner: Inner {
            p: f64::from(i) / 8.0,
            q: -i64::from(i) * 1_000_000_007,
        },
        small: (i % 200) as i8,
        m: [[k, k + 1, k + 2], [100, 200, k * 2]],
        r#type: (i % 256) as u8,
    }
}

/// h5py reads what we wrote: dtype equal to the numpy one (names, formats,
/// packed offsets), values by the same formula.
const CHECK_PY: &str = r#"
import sys, h5py, numpy as np
inner = np.dtype([('p', '<f8'), ('q', '<i8')])
want = np.dtype([('id', '<u4'), ('x', '<f8'), ('pos vec', '<f4', (3,)), ('flag', '?'),
                 ('inner', inner), ('small', 'i1'), ('m', '<u2', (2, 3)), ('type', 'u1')])
assert want.itemsize == 4 + 8 + 12 + 1 + 16 + 1 + 12 + 1
def expect(i):
    k = i % 65536
    return (i * 3, i * 1.25 - 7.0, (i, -i, 0.5), i % 3 == 0, (i / 8.0, -i * 1000000007),
            (i % 200) - 256 * ((i % 200) >= 128), [[k, k + 1, k + 2], [100, 200, 2 * k]], i % 256)
with h5py.File(sys.argv[1], 'r') as f:
    for name, n in [('plain', 40), ('gz', 300), ('grown', 40 + 25)]:
        ds = f[name]
        assert ds.dtype == want, (name, ds.dtype, want)
        assert ds.dtype.names == want.names
        assert [ds.dtype.fields[k][1] for k in want.names] == [want.fields[k][1] for k in want.names]
        got = ds[()]
        assert got.shape == (n,), (name, got.shape)
        exp = np.array([expect(i) for i in range(n)], dtype=want)
        for field in want.names:
            assert np.array_equal(got[field], exp[field]), (name, field, got[field][:4], exp[field][:4])
    assert f['gz'].compression == 'gzip' and f['gz'].chunks == (64,)
    a = f['plain'].attrs['one']
    assert a.dtype == want and a.shape == (2,), (a.dtype, a.shape)
    exp = np.array([expect(5), expect(6)], dtype=want)
    for field in want.names:
        assert np.array_equal(a[field], exp[field]), ('attr', field)
print('ok')
"#;

#[test]
fn write_records_h5py_reads() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let path = tmp("write.h5");
    let recs: Vec<Out> = (0..300).map(out).collect();
    {
        let mut fw = FileWriter::create(&path).unwrap();
        let mut root = fw.root();
        let id = root.create_dataset("plain").write(&recs[..40]).unwrap();
        let _ = id;
        root.create_dataset("gz")
            .chunks(&[64])
            .deflate(4)
            .write(&recs)
            .unwrap();
        root.create_dataset("grown")
            .shape(&[40])
            .maxshape(&[None])
            .chunks(&[16])
            .write(&recs[..40])
            .unwrap();
        fw.close().unwrap();
    }
    {
        let mut ed = FileEditor::open(&path).unwrap();
        ed.append("grown", &recs[40..65]).unwrap();
        ed.set_attr(
            "plain",
            "one",
            h5fmt::AttrValue::from(&[out(5), out(6)][..]),
        )
        .unwrap();
        ed.close().unwrap();
    }
    assert_eq!(run_py(&py, CHECK_PY, &[&path]).trim(), "ok");

    // And we read our own back.
    let f = File::open(&path).unwrap();
    let got: Vec<Out> = f.dataset("gz").unwrap().read_records().unwrap();
    assert_eq!(got, recs);
    let got: Vec<Out> = f.dataset("grown").unwrap().read_records().unwrap();
    assert_eq!(got, recs[..65]);
}

#[test]
fn derived_dtype_is_packed_in_field_order() {
    let h5fmt::Datatype::Compound { size, members } = Out::dtype() else {
        panic!("not compound");
    };
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["id", "x", "pos vec", "flag", "inner", "small", "m", "type"]
    );
    let offsets: Vec<u32> = members.iter().map(|m| m.offset).collect();
    assert_eq!(offsets, [0, 4, 12, 24, 25, 41, 42, 54]);
    assert_eq!(size, 55);
    let mut bytes = Vec::new();
    out(1).put(&mut bytes);
    assert_eq!(bytes.len(), 55);
    assert_eq!(&bytes[..4], &3u32.to_le_bytes());
}

/// Member names from escaped and raw string literals; field types holding
/// commas and `->` (split correctly: each is one field).
#[test]
fn macro_parses_names_and_types() {
    type Pair<A, B> = <(A, B) as Second>::T;
    trait Second {
        type T;
    }
    impl<A, B> Second for (A, B) {
        type T = B;
    }
    #[derive(Clone, Copy, H5Compound)]
    struct Names {
        #[h5(name = "tab\there \u{2713} \"q\" \\ \x41\
                     continued")]
        a: u8,
        #[h5(name = r#"raw "x" \n"#)]
        b: Pair<u8, i16>,
        /// A doc comment and another attribute before the h5 one.
        #[allow(dead_code)]
        #[h5(name = "c")]
        pub(crate) r#struct: [[f32; 2]; 1],
    }
    let h5fmt::Datatype::Compound { size, members } = Names::dtype() else {
        panic!("not compound");
    };
    let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(
        names,
        ["tab\there ✓ \"q\" \\ Acontinued", "raw \"x\" \\n", "c"]
    );
    assert_eq!(size, 1 + 2 + 8);
    assert_eq!(
        members[2].dtype,
        h5fmt::Datatype::Array {
            dims: vec![1, 2],
            base: Box::new(h5fmt::Datatype::float_le(4))
        }
    );
}
