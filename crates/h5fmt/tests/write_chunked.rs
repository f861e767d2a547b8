//! Chunked datasets written by `FileWriter`: every chunk index × filter
//! pipeline × shape (1-D and 3-D with partial edge chunks), read back by
//! libhdf5 through h5py (values and the chunk index type it reports through
//! `H5Dget_chunk_index_type`) and by our reader.

mod common;
use common::{python, run_py};
use h5fmt::format::message::{ChunkIndex, Layout};
use h5fmt::write::Format;
use h5fmt::FileWriter;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

/// For every dataset: libhdf5's chunk index type (0 v1 B-tree, 1 single,
/// 2 implicit, 3 fixed array, 4 extensible array, 5 v2 B-tree), the
/// filters, and the values flattened in row-major order.
const READ: &str = r#"
import sys, json, ctypes, glob, os, h5py, hdf5plugin, numpy as np
lib = ctypes.CDLL(glob.glob(os.path.join(os.path.dirname(h5py.__file__), '..', 'h5py.libs', 'libhdf5-*'))[0])
lib.H5Dget_chunk_index_type.argtypes = [ctypes.c_int64, ctypes.POINTER(ctypes.c_int)]
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    for name, ds in f.items():
        t = ctypes.c_int(-1)
        rc = lib.H5Dget_chunk_index_type(ds.id.id, ctypes.byref(t))
        p = ds.id.get_create_plist()
        filters = [p.get_filter(i)[0] for i in range(p.get_nfilters())]
        out[name] = {'index': t.value if rc >= 0 else -1, 'filters': filters,
                     'shape': list(ds.shape), 'values': ds[()].ravel().tolist()}
print(json.dumps(out))
"#;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Filters {
    None,
    GzipShuffle,
    Fletcher32,
    Zstd,
    Lz4,
}

const FILTERS: [Filters; 5] = [
    Filters::None,
    Filters::GzipShuffle,
    Filters::Fletcher32,
    Filters::Zstd,
    Filters::Lz4,
];

impl Filters {
    fn ids(self) -> Vec<u64> {
        match self {
            Filters::None => vec![],
            Filters::GzipShuffle => vec![2, 1],
            Filters::Fletcher32 => vec![3],
            Filters::Zstd => vec![32015],
            Filters::Lz4 => vec![32004],
        }
    }
}

/// One dataset of the matrix.
struct Case {
    name: String,
    shape: Vec<u64>,
    maxshape: Option<Vec<Option<u64>>>,
    chunks: Vec<u64>,
    filters: Filters,
    /// libhdf5's index type number expected.
    index: i64,
    /// Early allocation.
    early: bool,
}

fn value(i: usize) -> f64 {
    (i as f64) * 0.5 - 1000.0 + ((i * 7919) % 13) as f64
}

fn write_case(fw: &mut FileWriter, c: &Case) {
    let n: u64 = c.shape.iter().product();
    let data: Vec<f64> = (0..n as usize).map(value).collect();
    let mut root = fw.root();
    let mut b = root
        .create_dataset(&c.name)
        .shape(&c.shape)
        .chunks(&c.chunks);
    if let Some(m) = &c.maxshape {
        b = b.maxshape(m);
    }
    if c.early {
        b = b.early_alloc();
    }
    b = match c.filters {
        Filters::None => b,
        Filters::GzipShuffle => b.shuffle().deflate(4),
        Filters::Fletcher32 => b.fletcher32(),
        Filters::Zstd => b.zstd(3),
        Filters::Lz4 => b.lz4(),
    };
    b.write(&data).unwrap();
}

fn index_of(layout: &Layout) -> i64 {
    match layout {
        Layout::Chunked(c) => match c.index {
            ChunkIndex::BTreeV1 { .. } => 0,
            ChunkIndex::SingleChunk { .. } => 1,
            ChunkIndex::Implicit { .. } => 2,
            ChunkIndex::FixedArray { .. } => 3,
            ChunkIndex::ExtensibleArray { .. } => 4,
            ChunkIndex::BTreeV2 { .. } => 5,
        },
        _ => -1,
    }
}

fn check_file(path: &Path, cases: &[Case]) {
    // Our reader.
    let f = h5fmt::File::open(path).unwrap();
    for c in cases {
        let ds = f.dataset(&format!("/{}", c.name)).unwrap();
        assert_eq!(index_of(ds.layout()), c.index, "{}: our index type", c.name);
        let v: Vec<f64> = ds.read::<f64>().unwrap();
        assert_eq!(
            v.len() as u64,
            c.shape.iter().product::<u64>(),
            "{}",
            c.name
        );
        for (i, x) in v.iter().enumerate() {
            assert_eq!(*x, value(i), "{}: our value {i}", c.name);
        }
    }
    // libhdf5.
    let Some(py) = python() else {
        eprintln!("skipping h5py check: no python venv (set H5FMT_VENV)");
        return;
    };
    let out = run_py(&py, READ, &[path]);
    let got: BTreeMap<String, serde_json::Value> = serde_json::from_str(&out).unwrap();
    assert_eq!(got.len(), cases.len());
    for c in cases {
        let g = &got[&c.name];
        assert_eq!(
            g["index"].as_i64(),
            Some(c.index),
            "{}: libhdf5's index type",
            c.name
        );
        let filters: Vec<u64> = g["filters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(filters, c.filters.ids(), "{}: filters", c.name);
        let shape: Vec<u64> = g["shape"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(shape, c.shape, "{}", c.name);
        let vals = g["values"].as_array().unwrap();
        assert_eq!(
            vals.len() as u64,
            c.shape.iter().product::<u64>(),
            "{}",
            c.name
        );
        for (i, x) in vals.iter().enumerate() {
            assert_eq!(x.as_f64(), Some(value(i)), "{}: libhdf5 value {i}", c.name);
        }
    }
}

fn tmp(name: &str) -> PathBuf {
    common::tmp("wchunk", name)
}

fn run(format: Format, cases: &[Case], file: &str) {
    let path = tmp(file);
    let mut fw = FileWriter::create_with(&path, format).unwrap();
    for c in cases {
        write_case(&mut fw, c);
    }
    fw.close().unwrap();
    check_file(&path, cases);
    std::fs::remove_file(&path).ok();
}

/// Shape variants per index kind: (label, shape, maxshape, chunks, libhdf5 index).
type Variant = (
    &'static str,
    Vec<u64>,
    Option<Vec<Option<u64>>>,
    Vec<u64>,
    i64,
);

fn latest_variants() -> Vec<Variant> {
    vec![
        ("single1", vec![100], None, vec![100], 1),
        ("fixed1", vec![1000], None, vec![64], 3),
        ("fixed1_max", vec![100], Some(vec![Some(300)]), vec![100], 3),
        ("ea1", vec![1000], Some(vec![None]), vec![64], 4),
        ("ea1_one", vec![10], Some(vec![None]), vec![64], 4),
        ("single3", vec![7, 9, 11], None, vec![7, 9, 11], 1),
        ("fixed3", vec![7, 9, 11], None, vec![3, 4, 5], 3),
        ("fixed3_rows", vec![7, 9, 11], None, vec![2, 9, 11], 3),
        (
            "fixed3_max",
            vec![7, 9, 11],
            Some(vec![Some(8), Some(9), Some(20)]),
            vec![3, 4, 5],
            3,
        ),
        (
            "ea3_mid",
            vec![7, 9, 11],
            Some(vec![Some(7), None, Some(11)]),
            vec![3, 4, 5],
            4,
        ),
        (
            "ea3_first",
            vec![7, 9, 11],
            Some(vec![None, Some(9), Some(12)]),
            vec![3, 4, 5],
            4,
        ),
        (
            "bt2_3",
            vec![7, 9, 11],
            Some(vec![None, Some(9), None]),
            vec![3, 4, 5],
            5,
        ),
        (
            "bt2_3all",
            vec![7, 9, 11],
            Some(vec![None, None, None]),
            vec![3, 4, 5],
            5,
        ),
    ]
}

fn cases(variants: Vec<Variant>, filters: &[Filters]) -> Vec<Case> {
    let mut out = Vec::new();
    for (label, shape, maxshape, chunks, index) in variants {
        let early = label.starts_with("implicit");
        for &f in filters {
            out.push(Case {
                name: format!("{label}_{f:?}"),
                shape: shape.clone(),
                maxshape: maxshape.clone(),
                chunks: chunks.clone(),
                filters: f,
                // Filtered early-allocated datasets get a fixed array.
                index: if early && f != Filters::None {
                    3
                } else {
                    index
                },
                early,
            });
        }
    }
    out
}

#[test]
fn latest_indexes_times_filters() {
    run(
        Format::Latest,
        &cases(latest_variants(), &FILTERS),
        "latest.h5",
    );
}

/// h5py writes the same datasets with `libver=('v200', 'v200')`: JSON
/// `[[name, shape, maxshape (null = unlimited), chunks, filter], ...]`.
const WRITE_V200: &str = r#"
import sys, json, h5py, hdf5plugin, numpy as np
cases = json.loads(sys.argv[2])
with h5py.File(sys.argv[1], 'w', libver=('v200', 'v200')) as f:
    for name, shape, maxshape, chunks, filt in cases:
        kw = {}
        if filt == 'GzipShuffle': kw = dict(compression='gzip', compression_opts=4, shuffle=True)
        elif filt == 'Fletcher32': kw = dict(fletcher32=True)
        elif filt == 'Zstd': kw = dict(**hdf5plugin.Zstd(clevel=3))
        elif filt == 'Lz4': kw = dict(**hdf5plugin.LZ4())
        n = int(np.prod(shape))
        i = np.arange(n)
        v = (i * 0.5 - 1000.0 + ((i * 7919) % 13)).reshape(shape)
        f.create_dataset(name, data=v, maxshape=tuple(maxshape) if maxshape else None,
                         chunks=tuple(chunks), **kw)
"#;

/// `Format::V200`: every layout-4 index × filter read back by libhdf5, and
/// the layout message version and index type of each dataset equal those
/// of the same dataset written by libhdf5 2.0 with `libver='v200'`.
#[test]
fn v200_layout_versions_as_libhdf5() {
    let cases = cases(latest_variants(), &FILTERS);
    let ours = tmp("v200.h5");
    let mut fw = FileWriter::create_with(&ours, Format::V200).unwrap();
    for c in &cases {
        write_case(&mut fw, c);
    }
    fw.close().unwrap();
    check_file(&ours, &cases);
    let Some(py) = python() else {
        eprintln!("skipping libhdf5 comparison: no python venv (set H5FMT_VENV)");
        return;
    };
    let spec: Vec<serde_json::Value> = cases
        .iter()
        .map(|c| {
            serde_json::json!([
                c.name,
                c.shape,
                c.maxshape
                    .as_ref()
                    .unwrap_or(&c.shape.iter().map(|&d| Some(d)).collect()),
                c.chunks,
                format!("{:?}", c.filters)
            ])
        })
        .collect();
    let theirs = tmp("v200-libhdf5.h5");
    run_py(
        &py,
        WRITE_V200,
        &[
            theirs.as_os_str(),
            serde_json::Value::Array(spec).to_string().as_ref(),
        ],
    );
    let (a, b) = (
        h5fmt::File::open(&ours).unwrap(),
        h5fmt::File::open(&theirs).unwrap(),
    );
    let mut fives = 0;
    for c in &cases {
        let p = format!("/{}", c.name);
        let (da, db) = (a.dataset(&p).unwrap(), b.dataset(&p).unwrap());
        let version = |l: &Layout| match l {
            Layout::Chunked(c) => c.layout_version,
            _ => 0,
        };
        assert_eq!(
            (index_of(da.layout()), version(da.layout())),
            (index_of(db.layout()), version(db.layout())),
            "{}: (index, layout version) ours vs libhdf5",
            c.name
        );
        fives += usize::from(version(db.layout()) == 5);
        assert_eq!(
            da.read::<f64>().unwrap(),
            db.read::<f64>().unwrap(),
            "{}",
            c.name
        );
    }
    // The comparison covers both versions.
    assert!(
        fives > 0 && fives < cases.len(),
        "{fives} of {}",
        cases.len()
    );
    std::fs::remove_file(&ours).ok();
    std::fs::remove_file(&theirs).ok();
}

#[test]
fn v1_btree_times_filters() {
    let variants: Vec<Variant> = vec![
        ("v1_1", vec![1000], Some(vec![None]), vec![64], 0),
        ("v1_3", vec![7, 9, 11], None, vec![3, 4, 5], 0),
        (
            "v1_3u",
            vec![7, 9, 11],
            Some(vec![None, None, None]),
            vec![3, 4, 5],
            0,
        ),
    ];
    run(Format::V18, &cases(variants, &FILTERS), "v18.h5");
}

/// Indexes of many chunks: extensible arrays with super blocks (5000
/// chunks) and with paged data blocks (140,000 chunks), paged fixed arrays
/// (5000 chunks), v2 B-trees of depth 1 and 2.
#[test]
fn large_indexes() {
    let variants: Vec<Variant> = vec![
        ("ea_5000", vec![20000], Some(vec![None]), vec![4], 4),
        ("fa_5000", vec![20000], None, vec![4], 3),
        ("fa_5000_3", vec![50, 20, 20], None, vec![1, 2, 2], 3),
        (
            "bt2_d1",
            vec![10, 10, 12],
            Some(vec![None, None, None]),
            vec![1, 2, 3],
            5,
        ),
        (
            "bt2_d2",
            vec![40, 40, 10],
            Some(vec![None, None, Some(10)]),
            vec![1, 1, 2],
            5,
        ),
    ];
    run(
        Format::Latest,
        &cases(variants, &[Filters::None, Filters::GzipShuffle]),
        "large.h5",
    );
    let paged: Vec<Variant> = vec![("ea_paged", vec![140_000], Some(vec![None]), vec![1], 4)];
    run(Format::Latest, &cases(paged, &[Filters::None]), "paged.h5");
}

/// Datasets created without data: incremental allocation leaves the index
/// empty; early allocation writes fill-value chunks (implicit index for
/// `Format::Latest`). libhdf5 reads the fill value everywhere.
#[test]
fn created_without_data_read_as_fill() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    for format in [Format::V18, Format::Latest] {
        let path = tmp(&format!("empty-{format:?}.h5"));
        let mut fw = FileWriter::create_with(&path, format).unwrap();
        let mut root = fw.root();
        type Shape = (&'static str, bool, Option<Vec<Option<u64>>>);
        let shapes: [Shape; 4] = [
            ("lazy", false, None),
            ("early", true, None),
            ("lazy_unlim", false, Some(vec![None, Some(9)])),
            ("early_max", true, Some(vec![Some(10), Some(12)])),
        ];
        for (name, early, max) in &shapes {
            let mut b = root
                .create_dataset(name)
                .dtype(h5fmt::Datatype::float_le(8))
                .shape(&[7, 9])
                .chunks(&[3, 4])
                .fill(-2.5f64);
            if let Some(m) = max {
                b = b.maxshape(m);
            }
            if *early {
                b = b.early_alloc();
            }
            b.create().unwrap();
        }
        fw.close().unwrap();
        let out = Command::new(&py)
            .arg("-c")
            .arg(READ)
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: BTreeMap<String, serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        for (name, early, _) in &shapes {
            let g = &got[*name];
            let vals = g["values"].as_array().unwrap();
            assert_eq!(vals.len(), 63, "{name}");
            assert!(
                vals.iter().all(|v| v.as_f64() == Some(-2.5)),
                "{format:?} {name}"
            );
            let want = match (format, *early, *name) {
                (Format::V18, ..) => 0,
                (_, true, _) => 2,
                (_, false, "lazy") => 3,
                _ => 4,
            };
            assert_eq!(g["index"].as_i64(), Some(want), "{format:?} {name}");
        }
        let f = h5fmt::File::open(&path).unwrap();
        for (name, ..) in &shapes {
            let v: Vec<f64> = f.dataset(name).unwrap().read::<f64>().unwrap();
            assert!(v.iter().all(|&x| x == -2.5), "{format:?} {name}: ours");
        }
        std::fs::remove_file(&path).ok();
    }
}

/// libhdf5 extends our indexes in place: resizing and writing more chunks
/// into extensible arrays (with super blocks and paged data blocks) and v2
/// B-trees of depth ≥ 1 (node splits), then reading everything back.
#[test]
fn libhdf5_appends_to_our_indexes() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let path = tmp("append.h5");
    let mut fw = FileWriter::create_with(&path, Format::Latest).unwrap();
    let mut root = fw.root();
    let d: Vec<i32> = (0..140_000).collect();
    root.create_dataset("ea_paged")
        .shape(&[140_000])
        .maxshape(&[None])
        .chunks(&[1])
        .write(&d)
        .unwrap();
    root.create_dataset("ea_f")
        .shape(&[140_000])
        .maxshape(&[None])
        .chunks(&[20])
        .deflate(1)
        .write(&d)
        .unwrap();
    root.create_dataset("bt2")
        .shape(&[400, 350])
        .maxshape(&[None, None])
        .chunks(&[3, 3])
        .write(&d)
        .unwrap();
    root.create_dataset("bt2f")
        .shape(&[400, 350])
        .maxshape(&[None, None])
        .chunks(&[3, 3])
        .zstd(1)
        .fletcher32()
        .write(&d)
        .unwrap();
    fw.close().unwrap();
    let script = r#"
import sys, h5py, hdf5plugin, numpy as np
p = sys.argv[1]
with h5py.File(p, 'a') as f:
    for n in ['ea_paged', 'ea_f']:
        d = f[n]; d.resize((200000,)); d[140000:] = np.arange(140000, 200000)
    for n in ['bt2', 'bt2f']:
        d = f[n]; d.resize((500, 400)); d[400:, :] = 7; d[:, 350:] = 9
with h5py.File(p, 'r') as f:
    for n in ['ea_paged', 'ea_f']:
        assert (f[n][...] == np.arange(200000)).all(), n
    for n in ['bt2', 'bt2f']:
        a = f[n][...]
        assert (a[:400, :350] == np.arange(140000).reshape(400, 350)).all(), n
        assert (a[400:, :350] == 7).all() and (a[:, 350:] == 9).all(), n
print('ok')
"#;
    let out = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).trim() == "ok",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Our reader reads libhdf5's extended indexes too.
    let f = h5fmt::File::open(&path).unwrap();
    let v: Vec<i32> = f.dataset("/ea_paged").unwrap().read::<i32>().unwrap();
    assert!(v.iter().enumerate().all(|(i, &x)| x == i as i32));
    let v: Vec<i32> = f.dataset("/bt2f").unwrap().read::<i32>().unwrap();
    assert_eq!(v.len(), 500 * 400);
    assert_eq!((v[0], v[349], v[350], v[400 * 400]), (0, 349, 9, 7));
    std::fs::remove_file(&path).ok();
}

/// Pre-filtered chunks with per-chunk filter masks: a deflate+shuffle
/// dataset whose middle chunk is stored with deflate skipped (mask bit 1,
/// shuffled only) and whose last chunk skips both filters (mask 0b11, raw),
/// as libhdf5 stores chunks an optional filter could not compress. libhdf5
/// reads every chunk back, and so do we; a mask naming a filter the
/// pipeline does not have is refused.
#[test]
fn raw_chunks_with_filter_masks() {
    use h5fmt::format::message::{Filter, FilterPipeline};
    use h5fmt::write::RawChunk;
    let pipeline = |ids: &[(u16, Vec<u32>)]| FilterPipeline {
        filters: ids
            .iter()
            .map(|(id, cd)| Filter {
                id: *id,
                name: None,
                flags: 1, // optional, as libhdf5 marks deflate and shuffle
                client_data: cd.clone(),
            })
            .collect(),
    };
    let full = pipeline(&[(2, vec![4]), (1, vec![4])]);
    let values: Vec<i32> = (0..12).map(|i| i * 1000 - 7).collect();
    let bytes = |r: std::ops::Range<usize>| -> Vec<u8> {
        values[r].iter().flat_map(|v| v.to_le_bytes()).collect()
    };
    let chunk0 = h5fmt::filter::encode_chunk(&full, bytes(0..4), 4).unwrap();
    let chunk1 = h5fmt::filter::encode_chunk(&pipeline(&[(2, vec![4])]), bytes(4..8), 4).unwrap();
    let chunk2 = bytes(8..12);
    let path = tmp("raw_masks.h5");
    let mut fw = FileWriter::create_with(&path, Format::Latest).unwrap();
    let raw = vec![
        RawChunk {
            offsets: vec![0],
            bytes: chunk0,
            filter_mask: 0,
        },
        RawChunk {
            offsets: vec![4],
            bytes: chunk1,
            filter_mask: 0b10,
        },
        RawChunk {
            offsets: vec![8],
            bytes: chunk2.clone(),
            filter_mask: 0b11,
        },
    ];
    fw.root()
        .create_dataset("masked")
        .dtype(h5fmt::Datatype::int_le(4, true))
        .shape(&[12])
        .chunks(&[4])
        .filters(full.clone())
        .write_raw_chunks(raw)
        .unwrap();
    let e = fw
        .root()
        .create_dataset("bad")
        .dtype(h5fmt::Datatype::int_le(4, true))
        .shape(&[4])
        .chunks(&[4])
        .filters(full)
        .write_raw_chunks(vec![RawChunk {
            offsets: vec![0],
            bytes: chunk2,
            filter_mask: 0b100,
        }])
        .unwrap_err();
    assert_eq!(e.kind(), h5fmt::ErrorKind::Usage);
    fw.close().unwrap();
    let ours: Vec<i32> = h5fmt::File::open(&path)
        .unwrap()
        .dataset("/masked")
        .unwrap()
        .read()
        .unwrap();
    assert_eq!(ours, values);
    let Some(py) = python() else {
        eprintln!("skipping the h5py check: no python venv");
        return;
    };
    let text = run_py(
        &py,
        "import sys, h5py; f = h5py.File(sys.argv[1], 'r'); d = f['masked']; \
         print(list(d.id.get_chunk_info(i).filter_mask for i in range(3))); \
         print(list(int(x) for x in d[...])); print('bad' in f)",
        &[&path],
    );
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "[0, 2, 3]");
    let want: Vec<String> = values.iter().map(|v| v.to_string()).collect();
    assert_eq!(lines[1], format!("[{}]", want.join(", ")));
    assert_eq!(lines[2], "False", "a refused dataset left no link");
}

/// Chunks whose leading byte planes hold no LZ77 matches (shuffled noisy
/// floats, random integers) take our deflate encoder's literal-block path,
/// and a constant chunk does not. libhdf5 reads every value back, and our
/// compressed storage is no larger than what libhdf5 (zlib, level 4)
/// writes for the same data and filters.
#[test]
fn literal_deflate_chunks_read_by_libhdf5() {
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut rnd = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let n = 300_000usize;
    let noisy64: Vec<f64> = (0..n)
        .map(|i| {
            let noise = (rnd() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
            (((i as f64 / 5000.0).sin() * 1000.0 + noise * 4.0) * 1000.0).round() / 1000.0
        })
        .collect();
    let random64: Vec<u64> = (0..n).map(|_| rnd()).collect();
    let noisy32: Vec<f32> = (0..n)
        .map(|i| (i as f32 * 0.01).cos() * 50.0 + (rnd() % 1000) as f32 * 1e-4)
        .collect();
    let constant = vec![2.5f64; n];
    let path = tmp("literal_deflate.h5");
    let mut fw = FileWriter::create_with(&path, Format::default()).unwrap();
    {
        let mut root = fw.root();
        fn gz(b: h5fmt::write::DatasetBuilder<'_>) -> h5fmt::write::DatasetBuilder<'_> {
            b.chunks(&[131_072]).shuffle().deflate(4)
        }
        gz(root.create_dataset("noisy64")).write(&noisy64).unwrap();
        gz(root.create_dataset("random64"))
            .write(&random64)
            .unwrap();
        gz(root.create_dataset("noisy32")).write(&noisy32).unwrap();
        gz(root.create_dataset("constant"))
            .write(&constant)
            .unwrap();
    }
    fw.close().unwrap();
    let f = h5fmt::File::open(&path).unwrap();
    assert_eq!(
        f.dataset("/noisy64").unwrap().read::<f64>().unwrap(),
        noisy64
    );
    assert_eq!(
        f.dataset("/random64").unwrap().read::<u64>().unwrap(),
        random64
    );
    assert_eq!(
        f.dataset("/noisy32").unwrap().read::<f32>().unwrap(),
        noisy32
    );
    let Some(py) = python() else {
        eprintln!("skipping the h5py check: no python venv");
        return;
    };
    // The same values as raw little-endian files, for h5py to compare.
    let raw = |name: &str, bytes: Vec<u8>| {
        let p = tmp(&format!("literal_{name}.bin"));
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let bins = [
        raw(
            "noisy64",
            noisy64.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        raw(
            "random64",
            random64.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        raw(
            "noisy32",
            noisy32.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
        raw(
            "constant",
            constant.iter().flat_map(|v| v.to_le_bytes()).collect(),
        ),
    ];
    let script = r#"
import sys, h5py, numpy as np
ours, theirs = sys.argv[1], sys.argv[2]
names = [("noisy64", "<f8"), ("random64", "<u8"), ("noisy32", "<f4"), ("constant", "<f8")]
with h5py.File(ours, "r") as f, h5py.File(theirs, "w") as g:
    for (name, dt), bin_path in zip(names, sys.argv[3:]):
        want = np.fromfile(bin_path, dtype=dt)
        got = f[name][...]
        assert got.dtype == np.dtype(dt) and np.array_equal(got, want), name
        h = g.create_dataset(name, data=want, chunks=(131072,), compression="gzip",
                             compression_opts=4, shuffle=True)
        print(name, f[name].id.get_storage_size(), h.id.get_storage_size())
"#;
    let theirs = tmp("literal_deflate_h5py.h5");
    let args: Vec<&Path> = [path.as_path(), theirs.as_path()]
        .into_iter()
        .chain(bins.iter().map(PathBuf::as_path))
        .collect();
    let text = run_py(&py, script, &args);
    assert_eq!(text.lines().count(), 4, "{text}");
    for line in text.lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (ours, theirs): (f64, f64) = (f[1].parse().unwrap(), f[2].parse().unwrap());
        assert!(
            ours <= theirs * 1.01 + 512.0,
            "{}: ours {ours} bytes, libhdf5 {theirs}",
            f[0]
        );
    }
    for p in bins.iter().chain([&path, &theirs]) {
        std::fs::remove_file(p).ok();
    }
}
