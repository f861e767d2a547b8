//! Independent oracles for the index computations: numpy's stable argsort
//! (SORTED_ROWS, §10.5), and file-level mutations made with h5py that
//! verification must catch (a Bloom bit a value needs, a min/max, a bitmap
//! bit) or must refuse structurally (attributes a family requires).

mod index_common;

use h5table::check::Severity;
use h5table::index::{sorted, verify_table, ColumnIndexes, IndexPolicy};
use index_common::{hep001, run_python, tables};
use std::path::{Path, PathBuf};

const ARGSORT: &str = r#"
import sys, json, h5py, numpy as np
out = []
for line in sys.stdin:
    f, tp, col = line.rstrip('\n').split('\t')
    g = h5py.File(f, 'r')[tp]
    n = int(g.attrs['NROWS'])
    d = g[col]
    a = d[:n]
    fill = d.fillvalue
    idx = np.arange(n)
    if a.dtype.kind == 'f':
        nan = np.isnan(a)
        fillm = np.zeros(n, bool) if np.isnan(fill) else ((a == fill) & ~nan)
        keys = a
    elif a.dtype.kind in 'iu':
        nan = np.zeros(n, bool)
        fillm = a == fill
        keys = a
    else:
        # strings: bytes (h5py strips the padding of fixed-length strings)
        conv = lambda x: x.encode('utf-8') if isinstance(x, str) else bytes(x)
        keys = np.array([conv(x) for x in a] + [b''], dtype=object)[:n]
        fv = conv(fill) if not isinstance(fill, np.ndarray) else bytes(fill)
        nan = np.zeros(n, bool)
        fillm = np.array([k == fv for k in keys], bool)
    reg = ~nan & ~fillm
    order = idx[reg][np.argsort(keys[reg], kind='stable')]
    perm = np.concatenate([order, idx[fillm], idx[nan]]).tolist()
    out.append({'perm': perm, 'nan': int(nan.sum()), 'fill': int(fillm.sum())})
print(json.dumps(out))
"#;

#[test]
fn sorted_rows_match_numpy_stable_argsort() {
    let files = hep001().join("files");
    let cases: &[(&str, &str, &str)] = &[
        ("c02_ints.h5", "/ints", "i16"),
        ("c02_ints.h5", "/ints", "u32"),
        ("c02_ints.h5", "/ints", "i64"),
        ("c03_floats.h5", "/floats", "f64"),
        ("c03_floats.h5", "/floats", "f32"),
        ("c03_floats.h5", "/floats", "f16"),
        ("c04_nan_fill.h5", "/nan", "a"),
        ("c04_nan_fill.h5", "/nan", "b"),
        ("c05_custom_fill.h5", "/custom", "i16"),
        ("c05_custom_fill.h5", "/custom", "f32"),
        ("c19_bigendian.h5", "/be", "be_f64"),
        ("c19_bigendian.h5", "/be", "be_i32"),
        ("c06_fixed_strings.h5", "/strings", "a_sp"),
        ("c06_fixed_strings.h5", "/strings", "u_nt"),
        ("c06_fixed_strings.h5", "/strings", "a_np"),
        ("c07_vlen_strings.h5", "/vlen", "v_utf8"),
        ("c08_enum.h5", "/enums", "nbool"),
    ];
    let input: String = cases
        .iter()
        .map(|(f, t, c)| format!("{}\t{t}\t{c}\n", files.join(f).display()))
        .collect();
    let out = run_python(ARGSORT, &input);
    let want: Vec<serde_json::Value> = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(want.len(), cases.len());
    for ((f, tp, c), w) in cases.iter().zip(want) {
        let t = tables(&files.join(f))
            .into_iter()
            .find(|t| t.path() == *tp)
            .unwrap();
        let s = t.column(c).unwrap().read(0..t.nrows()).unwrap();
        let got = sorted::compute(&s, t.nrows());
        let perm: Vec<u64> = w["perm"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x.as_u64().unwrap())
            .collect();
        assert_eq!(got.perm, perm, "{f}:{tp}/{c}");
        assert_eq!(got.nan_tail_length, w["nan"].as_u64().unwrap(), "{f} {c}");
        assert_eq!(got.fill_tail_length, w["fill"].as_u64().unwrap(), "{f} {c}");
    }
}

/// A copy of a corpus file in a fresh temporary directory, removed on drop.
struct Scratch {
    dir: PathBuf,
    file: PathBuf,
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.file
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn scratch_copy(name: &str, tag: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("h5table-index-{}-{tag}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join(name);
    std::fs::copy(hep001().join("files").join(name), &file).unwrap();
    Scratch { dir, file }
}

/// Run an h5py edit (`g` is the table group, opened r+) on a file.
fn h5py_edit(file: &Path, table: &str, body: &str) {
    let script = format!(
        "import sys, h5py, numpy as np, mmh3\nh = h5py.File(sys.argv[1], 'r+')\ng = h[{table:?}]\n{body}\nh.close()\n"
    );
    let out = std::process::Command::new(index_common::python())
        .args(["-c", &script, file.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "h5py edit failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn errors(file: &Path) -> Vec<h5table::check::Finding> {
    let t = &tables(file)[0];
    verify_table(t)
        .unwrap()
        .into_iter()
        .filter(|f| f.severity == Severity::Error)
        .collect()
}

#[test]
fn flipped_bloom_bit_a_value_needs_is_detected() {
    // Clear, in chunk 0 of the int32 filter, the first bit of row 0's value;
    // h5py computes the bit with mmh3 itself (exact integer arithmetic).
    let f = scratch_copy("c28_bloom_matrix.h5", "bloom");
    assert!(errors(&f).is_empty());
    h5py_edit(
        &f,
        "/bloom",
        r#"
d = g['SEARCH_INDEXES/i32__chunk_bloom']
v = int(g['i32'][0])
ha, hb = mmh3.hash64(v.to_bytes(4, 'little', signed=True), seed=int(d.attrs['seed']), x64arch=True, signed=False)
bit = ha % int(d.attrs['m_bits'])
row = d[0]
assert row[bit >> 3] & (1 << (bit & 7))
row[bit >> 3] &= ~np.uint8(1 << (bit & 7))
d[0] = row
"#,
    );
    let e = errors(&f);
    assert_eq!(e.len(), 1, "{e:#?}");
    assert!(e[0].path.ends_with("/SEARCH_INDEXES/i32__chunk_bloom"));
    assert!(e[0].section.contains("§10.7") && e[0].section.contains("§16"));
    assert!(e[0].message.contains("chunk 0") && e[0].message.contains("false negative"));
    // Verify refuses it; Trust would use it.
    let t = &tables(&f)[0];
    assert!(ColumnIndexes::open(t, "i32", IndexPolicy::Verify)
        .unwrap()
        .is_empty());
    assert!(!ColumnIndexes::open(t, "i32", IndexPolicy::Trust)
        .unwrap()
        .is_empty());
}

#[test]
fn extra_bloom_bits_are_a_warning_not_tampering() {
    let f = scratch_copy("c28_bloom_matrix.h5", "bloom-extra");
    h5py_edit(
        &f,
        "/bloom",
        r#"
d = g['SEARCH_INDEXES/u16__chunk_bloom']
row = d[0]
row[:] = 0xff
d[0] = row
"#,
    );
    assert!(errors(&f).is_empty());
    let t = &tables(&f)[0];
    let all = verify_table(t).unwrap();
    assert!(
        all.iter().any(|w| w.severity == Severity::Warning
            && w.path.ends_with("u16__chunk_bloom")
            && w.message.contains("false positives")),
        "{all:#?}"
    );
    assert!(!ColumnIndexes::open(t, "u16", IndexPolicy::Verify)
        .unwrap()
        .is_empty());
}

#[test]
fn edited_minmax_and_bitmap_are_detected() {
    let f = scratch_copy("c02_ints.h5", "ints");
    assert!(errors(&f).is_empty());
    h5py_edit(
        &f,
        "/ints",
        r#"
m = g['SEARCH_INDEXES/i64__chunk_minmax']
e = m[3]
e['min'] = e['min'] + 1
m[3] = e
b = g['SEARCH_INDEXES/u8__bitmap']
r = b[2]
r[5] ^= 0x10
b[2] = r
"#,
    );
    let e = errors(&f);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e.iter().any(|x| x.path.ends_with("i64__chunk_minmax")
        && x.message.contains("chunk 3")
        && x.section.contains("§10.4")));
    assert!(e.iter().any(|x| x.path.ends_with("u8__bitmap")
        && x.message.contains("row 44")
        && x.section.contains("§10.6")));
}

#[test]
fn residue_past_nrows_is_permitted() {
    // Truncate NROWS logically (§11.4) and keep the indexes' tokens in step:
    // the stored entries past the new data-bearing chunks, SORTED_ROWS
    // entries past NROWS and bitmap bits past NROWS are residue. The SORTED
    // permutation of a prefix differs, so only families whose entries are
    // per-chunk or per-row stay valid: CHUNK_MINMAX and CHUNK_BLOOM of whole
    // chunks, and the BITMAP.
    let f = scratch_copy("c02_ints.h5", "residue");
    h5py_edit(
        &f,
        "/ints",
        r#"
g.attrs.modify('NROWS', np.uint64(500))
for name in ['i8__chunk_minmax', 'i64__chunk_minmax', 'u64__chunk_minmax', 'u8__bitmap']:
    g['SEARCH_INDEXES/' + name].attrs.modify('SOURCE_NROWS', np.uint64(500))
"#,
    );
    let t = &tables(&f)[0];
    assert_eq!(t.nrows(), 500);
    let all = verify_table(t).unwrap();
    let errs: Vec<_> = all
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    assert!(errs.is_empty(), "{errs:#?}");
    // The two SORTED_ROWS indexes still claim 777 rows: stale, ignored.
    let stale: Vec<_> = all.iter().filter(|x| x.message.contains("stale")).collect();
    assert_eq!(stale.len(), 2, "{all:#?}");
}

#[test]
fn missing_or_wrong_attributes_are_structural_findings() {
    let f = scratch_copy("c03_floats.h5", "attrs");
    h5py_edit(
        &f,
        "/floats",
        r#"
s = g['SEARCH_INDEXES/f64__sorted_rows']
del s.attrs['nan_tail_length']
b = g['SEARCH_INDEXES/f64__chunk_bloom']
b.attrs.modify('m_bits', np.uint64(1000))
"#,
    );
    let e = errors(&f);
    assert_eq!(e.len(), 2, "{e:#?}");
    assert!(e.iter().any(|x| x.path.ends_with("f64__sorted_rows")
        && x.section == "§12, §10.5"
        && x.message.contains("nan_tail_length")));
    assert!(e.iter().any(|x| x.path.ends_with("f64__chunk_bloom")
        && x.section == "§12, §10.7"
        && x.message.contains("m_bits")));
    let t = &tables(&f)[0];
    let ci = ColumnIndexes::open(t, "f64", IndexPolicy::Trust).unwrap();
    assert!(ci.is_empty());
    assert_eq!(ci.rejected().len(), 2);
}

#[test]
fn corrupted_files_never_panic() {
    // Flip bytes all over copies of index-bearing corpus files: discovery,
    // verification and pruning must return findings or errors, not panic.
    let names = [
        "c02_ints.h5",
        "c06_fixed_strings.h5",
        "c14_prealloc_tail.h5",
        "c28_bloom_matrix.h5",
    ];
    let mut s: u64 = 0x1234_5678_9abc_def1;
    let mut next = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        s
    };
    let mut opened = 0;
    for name in names {
        let orig = std::fs::read(hep001().join("files").join(name)).unwrap();
        for _ in 0..40 {
            let mut b = orig.clone();
            for _ in 0..8 {
                let i = (next() % b.len() as u64) as usize;
                b[i] ^= 1 << (next() % 8);
            }
            let Ok(file) = h5fmt::File::from_bytes(b) else {
                continue;
            };
            let Ok(paths) = h5table::find_tables(&file) else {
                continue;
            };
            for p in paths {
                let Ok(g) = file.group(&p) else { continue };
                let Ok(t) = h5table::Table::open(&g) else {
                    continue;
                };
                opened += 1;
                let _ = verify_table(&t);
                for c in t.columns() {
                    for pol in [IndexPolicy::Trust, IndexPolicy::Verify] {
                        if let Ok(ci) = ColumnIndexes::open(&t, c.name(), pol) {
                            let _ =
                                ci.candidates(&h5table::index::Predicate::Ge(h5fmt::Value::Int(3)));
                        }
                    }
                }
            }
        }
    }
    assert!(opened > 20, "{opened}");
}

#[test]
fn unknown_kind_is_listed_and_ignored() {
    let f = scratch_copy("c02_ints.h5", "unknown-kind");
    h5py_edit(
        &f,
        "/ints",
        r#"
s = g['SEARCH_INDEXES/i16__sorted_rows']
del s.attrs['KIND']
s.attrs['KIND'] = np.bytes_(b'ZORDER_CURVE')
"#,
    );
    let t = &tables(&f)[0];
    let d = h5table::index::discover(t).unwrap();
    let i = d
        .indexes
        .iter()
        .find(|i| i.name == "i16__sorted_rows")
        .unwrap();
    assert_eq!(
        i.kind,
        h5table::index::IndexKind::Unknown("ZORDER_CURVE".into())
    );
    assert!(!i.usable());
    assert!(errors(&f).is_empty());
    assert!(ColumnIndexes::open(t, "i16", IndexPolicy::Trust)
        .unwrap()
        .is_empty());
}

#[test]
fn generation_mismatch_makes_every_index_stale() {
    let f = scratch_copy("c02_ints.h5", "generation");
    h5py_edit(&f, "/ints", "g.attrs.modify('GENERATION', np.uint64(1))");
    let t = &tables(&f)[0];
    assert_eq!(t.generation, Some(1));
    let d = h5table::index::discover(t).unwrap();
    assert!(d
        .indexes
        .iter()
        .all(|i| matches!(i.validity, h5table::index::Validity::Stale { .. })));
    let all = verify_table(t).unwrap();
    assert_eq!(all.len(), d.indexes.len(), "{all:#?}");
    assert!(all.iter().all(|x| x.severity == Severity::Warning));
    for c in ["i8", "i16", "u8", "u32", "u64", "i64"] {
        assert!(ColumnIndexes::open(t, c, IndexPolicy::Trust)
            .unwrap()
            .is_empty());
    }
}

#[test]
fn wrong_shapes_and_types_are_findings() {
    // Point each index of c02 at every other dataset of the table (columns,
    // other indexes, the values dataset): verification must report it
    // (structure or content), never pass it and never panic.
    use h5table::index::verify::verify_index;
    let t = &tables(&hep001().join("files").join("c02_ints.h5"))[0];
    let d = h5table::index::discover(t).unwrap();
    let mut others: Vec<h5fmt::Dataset> = t.columns().iter().map(|c| c.dataset().clone()).collect();
    others.extend(d.indexes.iter().map(|i| i.dataset.clone()));
    let file = t.group().file().clone();
    for p in &d.accompanying {
        if let Ok(h5fmt::Object::Dataset(ds)) = file.object(p) {
            others.push(*ds);
        }
    }
    let mut n = 0;
    for info in &d.indexes {
        let col = t.column(info.column.as_deref().unwrap()).unwrap();
        let s = col.read(0..t.nrows()).unwrap();
        assert!(verify_index(t, col, info, &s).is_empty());
        for o in &others {
            if o.addr() == info.dataset.addr() {
                continue;
            }
            let mut bad = info.clone();
            bad.dataset = o.clone();
            let f = verify_index(t, col, &bad, &s);
            assert!(
                f.iter().any(|x| x.severity == Severity::Error),
                "{} as {}: {f:#?}",
                o.path(),
                info.name
            );
            n += 1;
        }
    }
    assert!(n > 50);
}
