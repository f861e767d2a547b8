//! Property test of the writer: random trees of groups, datasets (every
//! numeric type, bool, variable-length strings; rank 0–3; contiguous,
//! compact and chunked with deflate/shuffle/fletcher32) and attributes,
//! written in each format preset, read back by our reader and by h5py
//! (libhdf5), both equal to the tree that was written.

use h5fmt::data::value::Value;
use h5fmt::write::{AttrValue, Format, GroupWriter};
use h5fmt::{File, FileWriter, Object};
use proptest::prelude::*;
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::Command;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ty {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F32,
    F64,
    Bool,
    Str,
}

const TYPES: [Ty; 12] = [
    Ty::I8,
    Ty::I16,
    Ty::I32,
    Ty::I64,
    Ty::U8,
    Ty::U16,
    Ty::U32,
    Ty::U64,
    Ty::F32,
    Ty::F64,
    Ty::Bool,
    Ty::Str,
];

/// Values of one dataset or attribute, already in the written type's range.
#[derive(Debug, Clone, PartialEq)]
enum Vals {
    Int(Vec<i128>),
    Float(Vec<f64>),
    Str(Vec<String>),
}

#[derive(Debug, Clone)]
enum Lay {
    Contiguous,
    Compact,
    Chunked {
        chunks: Vec<u64>,
        deflate: Option<u8>,
        shuffle: bool,
        fletcher: bool,
    },
}

#[derive(Debug, Clone)]
struct Ds {
    ty: Ty,
    shape: Vec<u64>,
    seed: u64,
    lay: Lay,
}

#[derive(Debug, Clone)]
struct At {
    ty: Ty,
    /// `None`: scalar.
    len: Option<u64>,
    seed: u64,
}

#[derive(Debug, Clone)]
struct Grp {
    attrs: Vec<At>,
    datasets: Vec<Ds>,
    groups: Vec<Grp>,
}

/// xorshift64*: values from a seed, so that proptest shrinks structure.
fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn values(ty: Ty, n: u64, seed: u64) -> Vals {
    let mut r = rng(seed);
    let n = n as usize;
    let (lo, hi): (i128, i128) = match ty {
        Ty::I8 => (i8::MIN.into(), i8::MAX.into()),
        Ty::I16 => (i16::MIN.into(), i16::MAX.into()),
        Ty::I32 => (i32::MIN.into(), i32::MAX.into()),
        Ty::I64 => (i64::MIN.into(), i64::MAX.into()),
        Ty::U8 => (0, u8::MAX.into()),
        Ty::U16 => (0, u16::MAX.into()),
        Ty::U32 => (0, u32::MAX.into()),
        Ty::U64 => (0, u64::MAX.into()),
        Ty::Bool => (0, 1),
        Ty::F32 | Ty::F64 => {
            return Vals::Float(
                (0..n)
                    .map(|i| {
                        let x = match i % 5 {
                            0 => 0.0,
                            1 => -1.5,
                            _ => (r() as i64 as f64) / (1u64 << (r() % 60)) as f64,
                        };
                        if ty == Ty::F32 {
                            f64::from(x as f32)
                        } else {
                            x
                        }
                    })
                    .collect(),
            )
        }
        Ty::Str => {
            const CHARS: [&str; 8] = ["a", "Z", "0", " ", "é", "ü", "日本", "\u{1F600}"];
            return Vals::Str(
                (0..n)
                    .map(|_| {
                        let len = (r() % 6) as usize;
                        (0..len).map(|_| CHARS[(r() % 8) as usize]).collect()
                    })
                    .collect(),
            );
        }
    };
    Vals::Int(
        (0..n)
            .map(|i| match i % 4 {
                0 => lo,
                1 => hi,
                _ => lo + (r() as i128).rem_euclid(hi - lo + 1),
            })
            .collect(),
    )
}

fn ints<T: TryFrom<i128>>(v: &[i128]) -> Vec<T>
where
    T::Error: std::fmt::Debug,
{
    v.iter().map(|&x| T::try_from(x).unwrap()).collect()
}

fn attr_value(ty: Ty, vals: &Vals, scalar: bool) -> AttrValue {
    macro_rules! num {
        ($v:expr) => {
            if scalar {
                AttrValue::from($v[0])
            } else {
                AttrValue::from($v)
            }
        };
    }
    match (ty, vals) {
        (Ty::I8, Vals::Int(v)) => num!(ints::<i8>(v)),
        (Ty::I16, Vals::Int(v)) => num!(ints::<i16>(v)),
        (Ty::I32, Vals::Int(v)) => num!(ints::<i32>(v)),
        (Ty::I64, Vals::Int(v)) => num!(ints::<i64>(v)),
        (Ty::U8, Vals::Int(v)) => num!(ints::<u8>(v)),
        (Ty::U16, Vals::Int(v)) => num!(ints::<u16>(v)),
        (Ty::U32, Vals::Int(v)) => num!(ints::<u32>(v)),
        (Ty::U64, Vals::Int(v)) => num!(ints::<u64>(v)),
        (Ty::Bool, Vals::Int(v)) => {
            let b: Vec<bool> = v.iter().map(|&x| x != 0).collect();
            num!(b)
        }
        (Ty::F32, Vals::Float(v)) => {
            let f: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            num!(f)
        }
        (Ty::F64, Vals::Float(v)) => num!(v.clone()),
        (Ty::Str, Vals::Str(v)) => {
            if scalar {
                AttrValue::from(v[0].as_str())
            } else {
                AttrValue::from(v.clone())
            }
        }
        _ => unreachable!(),
    }
}

fn write_ds(g: &mut GroupWriter<'_>, name: &str, d: &Ds) {
    let n: u64 = d.shape.iter().product();
    let vals = values(d.ty, n, d.seed);
    let mut b = g.create_dataset(name).shape(&d.shape);
    match &d.lay {
        Lay::Contiguous => {}
        Lay::Compact => b = b.compact(),
        Lay::Chunked {
            chunks,
            deflate,
            shuffle,
            fletcher,
        } => {
            b = b.chunks(chunks);
            if *shuffle {
                b = b.shuffle();
            }
            if let Some(l) = deflate {
                b = b.deflate(*l);
            }
            if *fletcher {
                b = b.fletcher32();
            }
        }
    }
    let r = match (d.ty, &vals) {
        (Ty::I8, Vals::Int(v)) => b.write(&ints::<i8>(v)),
        (Ty::I16, Vals::Int(v)) => b.write(&ints::<i16>(v)),
        (Ty::I32, Vals::Int(v)) => b.write(&ints::<i32>(v)),
        (Ty::I64, Vals::Int(v)) => b.write(&ints::<i64>(v)),
        (Ty::U8, Vals::Int(v)) => b.write(&ints::<u8>(v)),
        (Ty::U16, Vals::Int(v)) => b.write(&ints::<u16>(v)),
        (Ty::U32, Vals::Int(v)) => b.write(&ints::<u32>(v)),
        (Ty::U64, Vals::Int(v)) => b.write(&ints::<u64>(v)),
        (Ty::Bool, Vals::Int(v)) => b.write(&v.iter().map(|&x| x != 0).collect::<Vec<_>>()),
        (Ty::F32, Vals::Float(v)) => b.write(&v.iter().map(|&x| x as f32).collect::<Vec<_>>()),
        (Ty::F64, Vals::Float(v)) => b.write(v),
        (Ty::Str, Vals::Str(v)) => {
            b.write_strings(&v.iter().map(String::as_str).collect::<Vec<_>>())
        }
        _ => unreachable!(),
    };
    r.unwrap_or_else(|e| panic!("write {name}: {e}"));
}

fn name(prefix: &str, i: usize, seed: u64) -> String {
    const SUFFIX: [&str; 6] = ["", "_x", " sp", "é", "-1", "日"];
    format!("{prefix}{i}{}", SUFFIX[(seed % 6) as usize])
}

fn write_group(g: &mut GroupWriter<'_>, spec: &Grp) {
    for (i, a) in spec.attrs.iter().enumerate() {
        let vals = values(a.ty, a.len.unwrap_or(1), a.seed);
        g.set_attr(
            &name("a", i, a.seed),
            attr_value(a.ty, &vals, a.len.is_none()),
        )
        .unwrap();
    }
    for (i, d) in spec.datasets.iter().enumerate() {
        write_ds(g, &name("d", i, d.seed), d);
    }
    for (i, sub) in spec.groups.iter().enumerate() {
        let mut c = g.create_group(&format!("g{i}")).unwrap();
        write_group(&mut c, sub);
    }
}

/// The expected content: path → (shape or None for attributes-only
/// entries, values, attributes name → values).
type Expect = Vec<(String, Option<Vec<u64>>, Option<Vals>, Vec<(String, Vals)>)>;

fn expect(path: &str, spec: &Grp, out: &mut Expect) {
    let attrs = spec
        .attrs
        .iter()
        .enumerate()
        .map(|(i, a)| {
            (
                name("a", i, a.seed),
                values(a.ty, a.len.unwrap_or(1), a.seed),
            )
        })
        .collect();
    out.push((path.to_string(), None, None, attrs));
    let join = |n: &str| {
        if path == "/" {
            format!("/{n}")
        } else {
            format!("{path}/{n}")
        }
    };
    for (i, d) in spec.datasets.iter().enumerate() {
        let n: u64 = d.shape.iter().product();
        out.push((
            join(&name("d", i, d.seed)),
            Some(d.shape.clone()),
            Some(values(d.ty, n, d.seed)),
            Vec::new(),
        ));
    }
    for (i, sub) in spec.groups.iter().enumerate() {
        expect(&join(&format!("g{i}")), sub, out);
    }
}

fn ours(v: &[Value]) -> Vals {
    if v.iter().all(|x| matches!(x, Value::Str(_))) && !v.is_empty() {
        return Vals::Str(
            v.iter()
                .map(|x| match x {
                    Value::Str(s) => s.clone(),
                    _ => unreachable!(),
                })
                .collect(),
        );
    }
    if v.iter().any(|x| matches!(x, Value::F32(_) | Value::F64(_))) {
        return Vals::Float(
            v.iter()
                .map(|x| match x {
                    Value::F32(f) => f64::from(*f),
                    Value::F64(f) => *f,
                    other => panic!("mixed {other:?}"),
                })
                .collect(),
        );
    }
    Vals::Int(
        v.iter()
            .map(|x| match x {
                Value::Int(i) => i128::from(*i),
                Value::UInt(u) => i128::from(*u),
                Value::Enum { code, .. } => *code,
                other => panic!("unexpected {other:?}"),
            })
            .collect(),
    )
}

/// Compare with a tolerance of nothing: the same kind and the same values,
/// where an empty list matches any kind.
fn same(a: &Vals, b: &Vals) -> bool {
    let empty = |v: &Vals| match v {
        Vals::Int(x) => x.is_empty(),
        Vals::Float(x) => x.is_empty(),
        Vals::Str(x) => x.is_empty(),
    };
    (empty(a) && empty(b)) || a == b
}

fn from_json(v: &J) -> Vals {
    let a = v.as_array().unwrap();
    if a.iter().any(J::is_string) {
        return Vals::Str(a.iter().map(|x| x.as_str().unwrap().to_string()).collect());
    }
    if a.iter().any(|x| x.is_f64()) {
        return Vals::Float(a.iter().map(|x| x.as_f64().unwrap()).collect());
    }
    Vals::Int(
        a.iter()
            .map(|x| match x {
                J::Bool(b) => i128::from(*b),
                J::Number(n) => n
                    .as_i64()
                    .map(i128::from)
                    .or(n.as_u64().map(i128::from))
                    .unwrap(),
                other => panic!("{other}"),
            })
            .collect(),
    )
}

const DUMP: &str = r#"
import sys, json, h5py, numpy as np
def flat(v):
    a = np.asarray(v)
    out = []
    for x in a.ravel().tolist():
        if isinstance(x, bytes): x = x.decode('utf-8')
        out.append(x)
    return out
res = {}
with h5py.File(sys.argv[1], 'r') as f:
    def visit(name, obj):
        d = {'attrs': {k: flat(obj.attrs[k]) for k in obj.attrs}}
        if isinstance(obj, h5py.Dataset):
            d['shape'] = list(obj.shape)
            d['values'] = flat(obj[()])
        res['/' + name if name else '/'] = d
    visit('', f)
    f.visititems(visit)
print(json.dumps(res))
"#;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn check(format: Format, spec: &Grp, case: usize) {
    let mut w = FileWriter::in_memory_with(format);
    write_group(&mut w.root(), spec);
    let bytes = w.finish().unwrap();
    let mut want = Expect::new();
    expect("/", spec, &mut want);

    // Our reader.
    let file = File::from_bytes(bytes.clone()).unwrap();
    for (path, shape, vals, attrs) in &want {
        let obj = file.object(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        if let (Some(shape), Some(vals), Object::Dataset(ds)) = (shape, vals, &obj) {
            assert_eq!(ds.shape(), &shape[..], "{path}");
            let got = ours(&ds.read_values().unwrap());
            assert!(same(&got, vals), "{path}: ours {got:?} != {vals:?}");
        }
        let got_attrs = match &obj {
            Object::Group(g) => g.attrs().unwrap(),
            Object::Dataset(d) => d.attrs().unwrap(),
            _ => Vec::new(),
        };
        assert_eq!(got_attrs.len(), attrs.len(), "{path}: attribute count");
        for (n, v) in attrs {
            let a = got_attrs.iter().find(|a| a.name() == n).unwrap();
            let got = ours(&a.read_values().unwrap());
            assert!(same(&got, v), "{path}@{n}: ours {got:?} != {v:?}");
        }
    }

    // libhdf5.
    let Some(py) = python() else { return };
    let tmp = std::env::temp_dir().join(format!("h5fmt-prop-{}-{case}.h5", std::process::id()));
    std::fs::write(&tmp, &bytes).unwrap();
    let out = Command::new(py)
        .arg("-c")
        .arg(DUMP)
        .arg(&tmp)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py failed on {format:?} case {case}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    std::fs::remove_file(&tmp).ok();
    let dump: J = serde_json::from_slice(&out.stdout).unwrap();
    let objects = dump.as_object().unwrap();
    assert_eq!(objects.len(), want.len(), "object count: {dump}");
    for (path, shape, vals, attrs) in &want {
        let d = &dump[path.as_str()];
        assert!(!d.is_null(), "h5py has no {path}");
        if let (Some(shape), Some(vals)) = (shape, vals) {
            let s: Vec<u64> = d["shape"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_u64().unwrap())
                .collect();
            assert_eq!(&s, shape, "{path}");
            let got = from_json(&d["values"]);
            assert!(same(&got, vals), "{path}: h5py {got:?} != {vals:?}");
        }
        let ha = d["attrs"].as_object().unwrap();
        assert_eq!(ha.len(), attrs.len(), "{path}: h5py attribute count");
        for (n, v) in attrs {
            let got = from_json(&ha[n.as_str()]);
            assert!(same(&got, v), "{path}@{n}: h5py {got:?} != {v:?}");
        }
    }
}

fn ty() -> impl Strategy<Value = Ty> {
    (0..TYPES.len()).prop_map(|i| TYPES[i])
}

fn dataset() -> impl Strategy<Value = Ds> {
    (
        ty(),
        prop::collection::vec(1u64..7, 0..4),
        any::<u64>(),
        0u8..4,
        any::<[bool; 3]>(),
        any::<u64>(),
    )
        .prop_map(|(ty, shape, seed, lay, flags, cseed)| {
            let lay = match lay {
                0 => Lay::Contiguous,
                1 => Lay::Compact,
                // Chunking needs rank >= 1; strings take no shuffle/deflate
                // variation beyond what libhdf5 allows (all are allowed).
                _ if shape.is_empty() => Lay::Contiguous,
                _ => {
                    let mut r = rng(cseed);
                    Lay::Chunked {
                        chunks: shape.iter().map(|&d| 1 + r() % d).collect(),
                        deflate: flags[0].then_some((cseed % 10) as u8),
                        shuffle: flags[1],
                        fletcher: flags[2],
                    }
                }
            };
            Ds {
                ty,
                shape,
                seed,
                lay,
            }
        })
}

fn attr() -> impl Strategy<Value = At> {
    (ty(), prop::option::of(1u64..6), any::<u64>()).prop_map(|(ty, len, seed)| At { ty, len, seed })
}

fn group() -> impl Strategy<Value = Grp> {
    let leaf = (
        prop::collection::vec(attr(), 0..4),
        prop::collection::vec(dataset(), 0..4),
    )
        .prop_map(|(attrs, datasets)| Grp {
            attrs,
            datasets,
            groups: Vec::new(),
        });
    leaf.prop_recursive(2, 12, 3, |inner| {
        (
            prop::collection::vec(attr(), 0..4),
            prop::collection::vec(dataset(), 0..3),
            prop::collection::vec(inner, 0..3),
        )
            .prop_map(|(attrs, datasets, groups)| Grp {
                attrs,
                datasets,
                groups,
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn random_trees_round_trip(spec in group(), fmt in 0usize..3, case in any::<u32>()) {
        let format = [Format::Earliest, Format::V18, Format::Latest][fmt];
        check(format, &spec, case as usize);
    }
}
