//! Files written by `FileWriter` in each format preset, read back by our
//! reader and by libhdf5 (through h5py, the independent oracle).

use h5fmt::format::message::{ChunkIndex, Layout};
use h5fmt::write::{AttrValue, Format, GroupOptions};
use h5fmt::{Datatype, FileWriter};
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

const FORMATS: [Format; 4] = [Format::Earliest, Format::V18, Format::Latest, Format::V200];

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

/// A JSON description of the file from h5py: every object by path with its
/// kind, shape, dtype string, values (as lists), attributes, links.
const DUMP: &str = r#"
import sys, json, h5py, numpy as np
def val(v):
    if isinstance(v, bytes): return v.decode('utf-8', 'replace')
    if isinstance(v, np.ndarray):
        if v.dtype.kind == 'O' or v.dtype.kind == 'S':
            return [val(x) for x in v.tolist()] if v.ndim else val(v[()])
        if v.dtype.fields is not None:
            return [[val(x) for x in row] for row in v.tolist()] if v.ndim else [val(x) for x in v.tolist()]
        return v.tolist()
    if isinstance(v, (np.generic,)): return v.item()
    if isinstance(v, (list, tuple)): return [val(x) for x in v]
    return v
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    def visit(name, obj):
        d = {'attrs': {k: val(obj.attrs[k]) for k in obj.attrs}, 'nattrs': len(obj.attrs)}
        if isinstance(obj, h5py.Dataset):
            d.update(kind='dataset', shape=list(obj.shape), dtype=str(obj.dtype),
                     maxshape=[m if m is not None else -1 for m in obj.maxshape] if obj.maxshape is not None else None,
                     chunks=list(obj.chunks) if obj.chunks else None,
                     compression=obj.compression, shuffle=obj.shuffle, fletcher32=obj.fletcher32,
                     fill=val(obj.fillvalue), value=val(obj[()]))
        else:
            links = {}
            for k in obj:
                l = obj.get(k, getlink=True)
                links[k] = type(l).__name__ + ('' if isinstance(l, h5py.HardLink) else ':' + (l.path if not isinstance(l, h5py.ExternalLink) else l.filename + ':' + l.path))
            d.update(kind='group', links=links, order=list(obj.keys()))
        out['/' + name] = d
    visit('', f)
    f.visititems(visit)
    out['#order'] = {g: list(f[g].keys()) for g in ['/'] if g in f}
print(json.dumps(out).replace('NaN', '"NaN"'))
"#;

fn h5py_dump(path: &Path) -> Option<serde_json::Value> {
    let py = match python() {
        Some(p) => p,
        None => {
            eprintln!("skipping h5py check: no python venv (set H5FMT_VENV)");
            return None;
        }
    };
    let out = Command::new(py)
        .arg("-c")
        .arg(DUMP)
        .arg(path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py failed on {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("h5fmt-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn build(format: Format) -> FileWriter {
    let mut fw = FileWriter::in_memory_with(format);
    {
        let mut root = fw.root();
        root.set_attr("title", "hello ✓").unwrap();
        root.set_attr("version", 3i32).unwrap();
        root.set_attr("scale", [1.5f64, -2.0]).unwrap();
        root.set_attr("flag", true).unwrap();
        root.set_attr("fixed", AttrValue::fixed_ascii("abc"))
            .unwrap();
        root.set_attr("names", &["x", "yy", ""][..]).unwrap();
        root.set_attr("seq", AttrValue::vlen(&[vec![1i32, 2, 3], vec![], vec![7]]))
            .unwrap();
        let mut g = root.create_group("grp").unwrap();
        g.set_attr("u", 7u16).unwrap();
        let mut sub = g.create_group("sub").unwrap();
        sub.create_dataset("d").write(&[1u8, 2, 3]).unwrap();
    }
    let mut root = fw.root();
    root.create_dataset("ints")
        .shape(&[2, 3])
        .write(&[1i32, 2, 3, 4, 5, -6])
        .unwrap();
    root.create_dataset("floats")
        .write(&[0.5f32, 1.5, f32::NAN])
        .unwrap();
    root.create_dataset("compact")
        .compact()
        .write(&[9u64, 8, 7])
        .unwrap();
    root.create_dataset("scalar")
        .shape(&[])
        .write(&[42i16])
        .unwrap();
    root.create_dataset("strings")
        .write_strings(&["alpha", "βeta", ""])
        .unwrap();
    let data: Vec<f64> = (0..1000).map(|i| i as f64 * 0.25).collect();
    root.create_dataset("chunked")
        .shape(&[10, 100])
        .chunks(&[3, 40])
        .write(&data)
        .unwrap();
    root.create_dataset("gzip")
        .shape(&[10, 100])
        .chunks(&[4, 100])
        .shuffle()
        .deflate(4)
        .fletcher32()
        .write(&data)
        .unwrap();
    let big: Vec<i32> = (0..20000).collect();
    root.create_dataset("many_chunks")
        .chunks(&[100])
        .write(&big)
        .unwrap();
    root.create_dataset("single")
        .shape(&[4, 5])
        .chunks(&[4, 5])
        .deflate(1)
        .write(&[3u32; 20])
        .unwrap();
    root.create_dataset("ext")
        .shape(&[5])
        .maxshape(&[None])
        .chunks(&[2])
        .fill(-1i64)
        .write(&[1i64, 2, 3, 4, 5])
        .unwrap();
    root.create_dataset("empty")
        .dtype(Datatype::float_le(8))
        .shape(&[4])
        .fill_value(&2.5f64.to_le_bytes())
        .create()
        .unwrap();
    let grp = fw.root().create_group("g2").unwrap().id();
    let mut root = fw.root();
    root.link_hard("g2_alias", grp).unwrap();
    root.link_soft("soft", "/grp/sub").unwrap();
    fw
}

#[test]
fn presets_read_back_by_h5py_and_our_reader() {
    for format in FORMATS {
        let mut fw = build(format);
        if format != Format::Earliest {
            fw.root()
                .link_external("ext_link", "other.h5", "/x")
                .unwrap();
            let mut root = fw.root();
            let mut o = root
                .create_group_with("ordered", GroupOptions { track_order: true })
                .unwrap();
            for n in ["zeta", "alpha", "mid"] {
                o.create_group(n).unwrap();
            }
        }
        let bytes = fw.finish().unwrap();
        let path = tmp(&format!("presets_{format:?}.h5"));
        std::fs::write(&path, &bytes).unwrap();

        // Our reader.
        let f = h5fmt::File::from_bytes(bytes.clone()).unwrap();
        assert_eq!(
            f.superblock().version,
            match format {
                Format::Earliest => 0,
                Format::V18 => 2,
                Format::Latest | Format::V200 => 3,
            }
        );
        let ints = f.dataset("/ints").unwrap();
        assert_eq!(ints.shape(), &[2, 3]);
        assert_eq!(ints.read::<i32>().unwrap(), vec![1, 2, 3, 4, 5, -6]);
        let ch = f.dataset("/chunked").unwrap();
        let back = ch.read::<f64>().unwrap();
        assert_eq!(back.len(), 1000);
        assert!(back.iter().enumerate().all(|(i, v)| *v == i as f64 * 0.25));
        assert_eq!(f.dataset("/gzip").unwrap().read::<f64>().unwrap(), back);
        assert_eq!(
            f.dataset("/many_chunks").unwrap().read::<i32>().unwrap(),
            (0..20000).collect::<Vec<i32>>()
        );
        assert_eq!(
            f.dataset("/grp/sub/d").unwrap().read::<u8>().unwrap(),
            vec![1, 2, 3]
        );
        // The chunk index libhdf5 would choose for each preset.
        let index = |p: &str| match f.dataset(p).unwrap().layout() {
            Layout::Chunked(c) => c.index.clone(),
            l => panic!("{p}: not chunked: {l:?}"),
        };
        match format {
            Format::Latest | Format::V200 => {
                assert!(matches!(index("/chunked"), ChunkIndex::FixedArray { .. }));
                assert!(matches!(index("/gzip"), ChunkIndex::FixedArray { .. }));
                assert!(matches!(
                    index("/many_chunks"),
                    ChunkIndex::FixedArray { .. }
                ));
                assert!(matches!(
                    index("/single"),
                    ChunkIndex::SingleChunk {
                        filtered: Some(_),
                        ..
                    }
                ));
            }
            _ => {
                for p in ["/chunked", "/gzip", "/many_chunks", "/single", "/ext"] {
                    assert!(matches!(index(p), ChunkIndex::BTreeV1 { .. }), "{p}");
                }
            }
        }
        let g2 = f.object("/g2").unwrap().addr();
        assert_eq!(f.object("/g2_alias").unwrap().addr(), g2);

        // libhdf5 through h5py.
        let Some(j) = h5py_dump(&path) else { continue };
        let o = |p: &str| &j[p];
        let root = o("/");
        assert_eq!(root["attrs"]["title"], "hello ✓", "{format:?}");
        // H5Oget_info's count, which needs the attribute info message in v2 headers.
        assert_eq!(root["nattrs"], 7, "{format:?}");
        assert_eq!(root["attrs"]["version"], 3);
        assert_eq!(root["attrs"]["scale"], serde_json::json!([1.5, -2.0]));
        assert_eq!(root["attrs"]["flag"], true);
        assert_eq!(root["attrs"]["fixed"], "abc");
        assert_eq!(root["attrs"]["names"], serde_json::json!(["x", "yy", ""]));
        assert_eq!(
            root["attrs"]["seq"],
            serde_json::json!([[1, 2, 3], [], [7]])
        );
        assert_eq!(o("/grp")["attrs"]["u"], 7);
        assert_eq!(o("/grp/sub/d")["value"], serde_json::json!([1, 2, 3]));
        assert_eq!(
            o("/ints")["value"],
            serde_json::json!([[1, 2, 3], [4, 5, -6]])
        );
        assert_eq!(o("/ints")["dtype"], "int32");
        assert_eq!(o("/floats")["dtype"], "float32");
        assert_eq!(o("/compact")["value"], serde_json::json!([9, 8, 7]));
        assert_eq!(o("/scalar")["value"], 42);
        assert_eq!(o("/scalar")["shape"], serde_json::json!([]));
        assert_eq!(
            o("/strings")["value"],
            serde_json::json!(["alpha", "βeta", ""])
        );
        let flat: Vec<f64> = (0..1000).map(|i| i as f64 * 0.25).collect();
        let rows: Vec<Vec<f64>> = flat.chunks(100).map(<[f64]>::to_vec).collect();
        assert_eq!(o("/chunked")["value"], serde_json::json!(rows));
        assert_eq!(o("/chunked")["chunks"], serde_json::json!([3, 40]));
        assert_eq!(o("/gzip")["value"], serde_json::json!(rows));
        assert_eq!(o("/gzip")["compression"], "gzip");
        assert_eq!(o("/gzip")["shuffle"], true);
        assert_eq!(o("/gzip")["fletcher32"], true);
        assert_eq!(
            o("/many_chunks")["value"],
            serde_json::json!((0..20000).collect::<Vec<i32>>())
        );
        assert_eq!(
            o("/single")["value"],
            serde_json::json!(vec![vec![3; 5]; 4])
        );
        assert_eq!(o("/ext")["maxshape"], serde_json::json!([-1]));
        assert_eq!(o("/ext")["fill"], -1);
        assert_eq!(o("/ext")["value"], serde_json::json!([1, 2, 3, 4, 5]));
        assert_eq!(
            o("/empty")["value"],
            serde_json::json!([2.5, 2.5, 2.5, 2.5])
        );
        assert_eq!(o("/empty")["fill"], 2.5);
        assert_eq!(o("/")["links"]["soft"], "SoftLink:/grp/sub");
        assert_eq!(o("/")["links"]["g2_alias"], "HardLink");
        if format != Format::Earliest {
            assert_eq!(o("/")["links"]["ext_link"], "ExternalLink:other.h5:/x");
            // Creation order is kept: h5py lists tracked groups in that order.
            assert_eq!(
                o("/ordered")["order"],
                serde_json::json!(["zeta", "alpha", "mid"])
            );
        }
    }
}

#[test]
fn large_groups_split_symbol_table_nodes_and_btree_levels() {
    // 300 links: 38 symbol table nodes of 8 entries (Earliest), i.e. a
    // two-level group B-tree with internal K = 16; compact link messages
    // otherwise.
    for format in FORMATS {
        let mut fw = FileWriter::in_memory_with(format);
        let mut root = fw.root();
        let mut g = root.create_group("big").unwrap();
        let mut names: Vec<String> = (0..300)
            .map(|i| format!("m{:03}", (i * 7919) % 300))
            .collect();
        for (i, n) in names.iter().enumerate() {
            if i % 2 == 0 {
                g.create_group(n).unwrap();
            } else {
                g.create_dataset(n).write(&[i as u32]).unwrap();
            }
        }
        let bytes = fw.finish().unwrap();
        names.sort();
        let f = h5fmt::File::from_bytes(bytes.clone()).unwrap();
        let mut ours = f.group("/big").unwrap().member_names().unwrap();
        ours.sort();
        assert_eq!(ours, names);
        let path = tmp(&format!("big_{format:?}.h5"));
        std::fs::write(&path, &bytes).unwrap();
        if let Some(j) = h5py_dump(&path) {
            let order: Vec<String> = serde_json::from_value(j["/big"]["order"].clone()).unwrap();
            assert_eq!(order, names, "{format:?}");
            // m001 is member i = 179 (119 · 179 ≡ 1 mod 300), a dataset holding 179.
            assert_eq!(
                j["/big/m001"]["value"],
                serde_json::json!([179]),
                "{format:?}"
            );
        }
    }
}

#[test]
fn create_on_disk() {
    let path = tmp("on_disk.h5");
    let mut fw = FileWriter::create(&path).unwrap();
    assert_eq!(fw.format(), Format::V18);
    fw.root().create_dataset("x").write(&[1.0f64, 2.0]).unwrap();
    fw.close().unwrap();
    let f = h5fmt::File::open(&path).unwrap();
    assert_eq!(f.superblock().version, 2);
    assert_eq!(
        f.dataset("/x").unwrap().read::<f64>().unwrap(),
        vec![1.0, 2.0]
    );
    if let Some(j) = h5py_dump(&path) {
        assert_eq!(j["/x"]["value"], serde_json::json!([1.0, 2.0]));
    }
}

#[test]
fn bad_arguments_are_clear_errors_and_change_nothing() {
    use h5fmt::ErrorKind::Usage;
    for format in FORMATS {
        let mut fw = FileWriter::in_memory_with(format);
        fw.root().create_dataset("a").write(&[1i32]).unwrap();
        let before = format!("{fw:?}");
        let mut root = fw.root();
        let e = |r: h5fmt::Result<h5fmt::ObjectId>| r.unwrap_err().kind();
        assert_eq!(
            e(root.create_dataset("a").write(&[2i32])),
            Usage,
            "name collision"
        );
        assert_eq!(
            e(root.create_dataset("").write(&[2i32])),
            Usage,
            "empty name"
        );
        assert_eq!(
            e(root.create_dataset("x/y").shape(&[3]).write(&[2i32])),
            Usage,
            "count, in a new group"
        );
        assert_eq!(
            e(root.create_dataset("a/y").write(&[2i32])),
            Usage,
            "a is a dataset"
        );
        assert_eq!(
            e(root.create_dataset("x/y/").write(&[2i32])),
            Usage,
            "empty name"
        );
        assert_eq!(root.create_group("x//").unwrap_err().kind(), Usage);
        assert_eq!(
            e(root.create_dataset("b").shape(&[2, 2]).write(&[1i32, 2, 3])),
            Usage,
            "count"
        );
        assert_eq!(
            e(root
                .create_dataset("b")
                .shape(&[4])
                .chunks(&[2, 2])
                .write(&[1i32, 2, 3, 4])),
            Usage,
            "chunk rank"
        );
        assert_eq!(
            e(root
                .create_dataset("b")
                .shape(&[4])
                .maxshape(&[Some(4), None])
                .write(&[1i32; 4])),
            Usage,
            "maxshape rank"
        );
        assert_eq!(
            e(root
                .create_dataset("b")
                .shape(&[4])
                .maxshape(&[Some(3)])
                .write(&[1i32; 4])),
            Usage,
            "maxshape below shape"
        );
        assert_eq!(
            e(root
                .create_dataset("b")
                .shape(&[4])
                .maxshape(&[None])
                .write(&[1i32; 4])),
            Usage,
            "unlimited without chunks"
        );
        assert_eq!(
            e(root.create_dataset("b").deflate(4).write(&[1i32; 4])),
            Usage,
            "filter without chunks"
        );
        assert_eq!(root.create_group("a").unwrap_err().kind(), Usage);
        assert_eq!(root.link_soft("a", "/x").unwrap_err().kind(), Usage);
        assert_eq!(root.set_attr("", 1u8).unwrap_err().kind(), Usage);
        assert_eq!(
            root.set_attr(
                "r",
                AttrValue::raw(Datatype::int_le(4, true), Some(vec![2]), vec![0; 4])
            )
            .unwrap_err()
            .kind(),
            Usage
        );
        assert_eq!(format!("{fw:?}"), before, "{format:?}: the file changed");
        let bytes = fw.finish().unwrap();
        let f = h5fmt::File::from_bytes(bytes).unwrap();
        assert_eq!(f.root().unwrap().member_names().unwrap(), vec!["a"]);
        assert!(f.root().unwrap().attrs().unwrap().is_empty());
    }
}

#[test]
fn attribute_overwrite_keeps_one() {
    let mut fw = FileWriter::in_memory();
    let mut root = fw.root();
    root.set_attr("n", 1u8).unwrap();
    root.set_attr("n", "now a string").unwrap();
    let f = h5fmt::File::from_bytes(fw.finish().unwrap()).unwrap();
    let attrs = f.root().unwrap().attrs().unwrap();
    assert_eq!(attrs.len(), 1);
    assert!(matches!(
        f.root().unwrap().attr("n").unwrap().dtype(),
        Datatype::VarLenString { .. }
    ));
}

/// HDF5 2.0's complex class (datatype message version 5): complex64 and
/// complex128 datasets and a complex attribute, in every preset, read by
/// libhdf5 2.0 as numpy complex numbers with the values written.
#[test]
fn complex_numbers_read_by_libhdf5() {
    let pairs: Vec<(f64, f64)> = vec![(1.0, -2.0), (3.5, 0.0), (-0.25, 1e30), (0.0, -0.0)];
    let c128 = Datatype::Complex {
        size: 16,
        base: Box::new(Datatype::float_le(8)),
    };
    let c64 = Datatype::Complex {
        size: 8,
        base: Box::new(Datatype::float_le(4)),
    };
    let bytes128: Vec<u8> = pairs
        .iter()
        .flat_map(|&(r, i)| [r.to_le_bytes(), i.to_le_bytes()].concat())
        .collect();
    let bytes64: Vec<u8> = pairs
        .iter()
        .flat_map(|&(r, i)| [(r as f32).to_le_bytes(), (i as f32).to_le_bytes()].concat())
        .collect();
    for format in FORMATS {
        let path = tmp(&format!("complex_{format:?}.h5"));
        let mut fw = FileWriter::create_with(&path, format).unwrap();
        {
            let mut root = fw.root();
            root.create_dataset("c128")
                .dtype(c128.clone())
                .shape(&[4])
                .write_raw(&bytes128)
                .unwrap();
            root.create_dataset("c64")
                .dtype(c64.clone())
                .shape(&[2, 2])
                .chunks(&[1, 2])
                .deflate(4)
                .write_raw(&bytes64)
                .unwrap();
        }
        fw.close().unwrap();
        // Our reader.
        let f = h5fmt::File::open(&path).unwrap();
        assert_eq!(f.dataset("/c128").unwrap().read_raw().unwrap(), bytes128);
        assert_eq!(f.dataset("/c64").unwrap().read_raw().unwrap(), bytes64);
        // libhdf5.
        let Some(py) = python() else {
            eprintln!("skipping h5py check: no python venv (set H5FMT_VENV)");
            return;
        };
        let out = Command::new(py)
            .arg("-c")
            .arg(
                "import sys, json, h5py\n\
                 with h5py.File(sys.argv[1], 'r') as f:\n\
                 \x20   print(json.dumps({k: [str(f[k].dtype), [[z.real, z.imag] for z in f[k][()].ravel().tolist()]] for k in f}))",
            )
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let want = |dtype: &str, narrow: bool| {
            let vals: Vec<serde_json::Value> = pairs
                .iter()
                .map(|&(r, i)| {
                    let (r, i) = if narrow {
                        (f64::from(r as f32), f64::from(i as f32))
                    } else {
                        (r, i)
                    };
                    serde_json::json!([r, i])
                })
                .collect();
            serde_json::json!([dtype, vals])
        };
        assert_eq!(got["c128"], want("complex128", false), "{format:?}");
        assert_eq!(got["c64"], want("complex64", true), "{format:?}");
        std::fs::remove_file(&path).ok();
    }
}

/// h5py's view of a file for the API conveniences test: `visititems` order,
/// `ds[()]` of the scalars, `h5dump -H`'s datatypes (one line each) and the
/// shapes and values of two datasets.
const CONVENIENCES: &str = r#"
import sys, json, subprocess, shutil, h5py, re
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    names = []
    f.visititems(lambda n, o: names.append('/' + n))
    out['walk'] = names
    out['scalar'] = float(f['s'][()])
    out['attr'] = int(f.attrs['v'])
    out['deep'] = f['x/y/z'][...].tolist()
    if 'arr' in f:
        out['arr'] = [list(f['arr'].shape), f['arr'][...].ravel().tolist()]
types = {}
if shutil.which('h5dump'):
    text = subprocess.run(['h5dump', '-H', sys.argv[2]], capture_output=True, text=True, check=True).stdout
    for m in re.finditer(r'DATASET "([^"]+)" \{\s*DATATYPE\s+(H5T_[A-Z0-9_]+)(?:\s*\{(.*?)\})?', text, re.S):
        name, cls, body = m.group(1), m.group(2), m.group(3) or ''
        if cls == 'H5T_STRING':
            kv = dict(re.findall(r'(STRSIZE|STRPAD|CSET) ([A-Z0-9_]+);', body))
            types[name] = 'H5T_STRING { STRSIZE %s; %s; %s }' % (kv['STRSIZE'], kv['STRPAD'], kv['CSET'])
        else:
            types[name] = cls
out['types'] = types
print(json.dumps(out))
"#;

/// A writer dropped without `close` still finishes the file; paths create
/// their intermediate groups; `walk` visits what h5py's `visititems`
/// visits, in its order; `read_scalar` reads what `ds[()]` reads;
/// `write_array` writes numpy's shape and order; `Datatype`'s `Display` is
/// h5dump's datatype name (libhdf5's h5dump, when installed).
#[test]
fn api_conveniences_match_h5py_and_h5dump() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let path = tmp("conveniences.h5");
    {
        let mut w = FileWriter::create(&path).unwrap();
        let mut root = w.root();
        root.set_attr("v", 7u16).unwrap();
        root.create_group("a/b/c").unwrap();
        root.create_group("a/b/d").unwrap();
        root.create_dataset("x/y/z").write(&[1.5f64, -2.0]).unwrap();
        root.create_dataset("s").shape(&[]).write(&[42i16]).unwrap();
        assert!(root.create_dataset("s/t").write(&[1u8]).is_err()); // "s" is not a group
        #[cfg(feature = "ndarray")]
        {
            let a = h5fmt::ndarray::Array2::from_shape_fn((3, 2), |(i, j)| (10 * i + j) as i32);
            root.create_dataset("arr").write_array(&a.t()).unwrap();
        }
        // Dropped without close().
    }
    // A file with every string padding and charset, written by h5py, for
    // the datatype names.
    let types = tmp("types.h5");
    let script = r#"
import sys, h5py, numpy as np
from h5py import h5t
with h5py.File(sys.argv[1], 'w') as f:
    for t in ['<i1', '<u2', '>i4', '<u8', '>f4', '<f8', '>u8', '<i8']:
        f.create_dataset('n' + t.replace('<', 'le').replace('>', 'be'), data=np.zeros(2, t))
    f.create_dataset('vstr', data=['a', 'bc'], dtype=h5py.string_dtype())
    for pad, pn in [(h5t.STR_NULLTERM, 'nt'), (h5t.STR_NULLPAD, 'np'), (h5t.STR_SPACEPAD, 'sp')]:
        for cset, cn in [(h5t.CSET_ASCII, 'a'), (h5t.CSET_UTF8, 'u')]:
            tid = h5t.C_S1.copy(); tid.set_size(5); tid.set_strpad(pad); tid.set_cset(cset)
            sid = h5py.h5s.create_simple((1,))
            h5py.h5d.create(f.id, ('s_' + pn + cn).encode(), tid, sid)
"#;
    common::run_py(&py, script, &[&types]);
    let want: serde_json::Value =
        serde_json::from_str(&common::run_py(&py, CONVENIENCES, &[&path, &types])).unwrap();

    let file = h5fmt::File::open(&path).unwrap();
    let walk: Vec<String> = file
        .root()
        .unwrap()
        .walk()
        .map(|o| o.unwrap().path().to_string())
        .collect();
    let want_walk: Vec<String> = serde_json::from_value(want["walk"].clone()).unwrap();
    assert!(want_walk.len() >= 8, "{want_walk:?}");
    assert_eq!(walk, want_walk);
    assert_eq!(
        file.dataset("s").unwrap().read_scalar::<f64>().unwrap(),
        want["scalar"].as_f64().unwrap()
    );
    assert!(file.dataset("x/y/z").unwrap().read_scalar::<f64>().is_err()); // two elements
    let v: u64 = file
        .root()
        .unwrap()
        .attr("v")
        .unwrap()
        .read_scalar()
        .unwrap();
    assert_eq!(v, want["attr"].as_u64().unwrap());
    assert_eq!(
        serde_json::json!(file.dataset("x/y/z").unwrap().read::<f64>().unwrap()),
        want["deep"]
    );
    #[cfg(feature = "ndarray")]
    {
        let arr = file.dataset("arr").unwrap();
        assert_eq!(
            serde_json::json!([arr.shape(), arr.read::<i64>().unwrap()]),
            want["arr"]
        );
    }

    let names = want["types"].as_object().unwrap();
    if names.is_empty() {
        eprintln!("h5dump not installed: datatype names not checked");
    } else {
        assert_eq!(names.len(), 15, "{names:?}");
        let tf = h5fmt::File::open(&types).unwrap();
        for (name, want) in names {
            let got = tf.dataset(name).unwrap().dtype().to_string();
            assert_eq!(&got, want.as_str().unwrap(), "{name}");
        }
    }
    let _ = std::fs::remove_file(&path);
    let _ = std::fs::remove_file(&types);
}

/// `set_alignment(1, 8)` (libhdf5's `H5Pset_alignment`, Daf's H5DF files):
/// every contiguous dataset's raw data starts at a multiple of 8, as libhdf5
/// reports the offset (`DatasetID.get_offset`), and the values are intact.
#[test]
fn aligned_contiguous_storage() {
    for format in FORMATS {
        let path = tmp(&format!("aligned_{format:?}.h5"));
        let mut fw = FileWriter::create_with(&path, format).unwrap();
        fw.set_alignment(1, 8).unwrap();
        assert!(fw.set_alignment(1, 0).is_err());
        {
            let mut root = fw.root();
            // Odd sizes so that unaligned allocation would leave odd offsets.
            root.create_dataset("a").write(&[1u8, 2, 3]).unwrap();
            root.create_dataset("b").write(&[1.5f64, -2.0]).unwrap();
            root.create_dataset("c").write(&[7u8]).unwrap();
            root.create_dataset("d").write(&[9i32, 10, 11]).unwrap();
        }
        fw.close().unwrap();
        let Some(py) = python() else {
            eprintln!("skipping h5py check: no python venv (set H5FMT_VENV)");
            return;
        };
        let out = Command::new(py)
            .arg("-c")
            .arg(
                "import sys, json, h5py\n\
                 with h5py.File(sys.argv[1], 'r') as f:\n\
                 \x20   print(json.dumps({k: [f[k].id.get_offset(), f[k][()].tolist()] for k in f}))",
            )
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        for (k, want) in [
            ("a", serde_json::json!([1, 2, 3])),
            ("b", serde_json::json!([1.5, -2.0])),
            ("c", serde_json::json!([7])),
            ("d", serde_json::json!([9, 10, 11])),
        ] {
            assert_eq!(got[k][0].as_u64().unwrap() % 8, 0, "{format:?} {k}: {got}");
            assert_eq!(got[k][1], want, "{format:?} {k}");
        }
    }
}
