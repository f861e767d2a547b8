//! Writing search indexes: for every family × column datatype family the
//! spec allows, the index h5table writes equals the one computed
//! independently by numpy/mmh3 (`index_write_oracle.py`) byte for byte,
//! and `index::verify_table` is clean, after building and after every
//! append, truncate and update.

mod common;

use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, EnumMember, StringPad};
use h5fmt::{FileEditor, FileWriter, ObjectId};
use h5table::check::Severity;
use h5table::index::{discover, verify_table, IndexKind, Validity};
use h5table::write::{
    kind_allowed, AppendIndexes, ColumnData, ColumnSpec, FillSpec, IndexSpec, Scalar, TableEditor,
    TableWriter,
};
use h5table::Table;
use std::path::Path;
use std::process::Command;

const FPR: f64 = 0.02;

fn enum_dt() -> Datatype {
    let m = |n: &str, v: u8| EnumMember {
        name: n.into(),
        value: vec![v],
    };
    Datatype::Enum {
        base: Box::new(Datatype::int_le(1, true)),
        members: vec![m("RED", 0), m("GREEN", 1), m("BLUE", 5), m("MISSING", 0x80)],
    }
}

fn fixed(size: u32, pad: StringPad) -> Datatype {
    Datatype::String {
        size,
        pad,
        cset: CharSet::Ascii,
    }
}

fn i32be() -> Datatype {
    match Datatype::int_le(4, true) {
        Datatype::Integer {
            size,
            signed,
            bit_offset,
            precision,
            ..
        } => Datatype::Integer {
            size,
            order: ByteOrder::Big,
            signed,
            bit_offset,
            precision,
        },
        d => d,
    }
}

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const F64S: [f64; 9] = [
    -0.0,
    0.0,
    1.5,
    -2.25,
    f64::NAN,
    f64::INFINITY,
    f64::NEG_INFINITY,
    3.0,
    1e-300,
];
const STRS: [&str; 6] = ["a", "ab", "abc", "b", "zz", "a b"];

/// The columns: (spec, vlen fill for the oracle).
fn specs() -> Vec<ColumnSpec> {
    let c = |n: &str, d: Datatype| ColumnSpec::new(n, d).chunk(4);
    vec![
        c("i8", Datatype::int_le(1, true)),
        c("i16", Datatype::int_le(2, true)),
        c("i32", Datatype::int_le(4, true)),
        c("i64", Datatype::int_le(8, true)),
        c("u8", Datatype::int_le(1, false)),
        c("u16", Datatype::int_le(2, false)),
        c("u32", Datatype::int_le(4, false)),
        c("u64", Datatype::int_le(8, false)),
        c("i32be", i32be()),
        c("f16", Datatype::float_le(2)).fill(FillSpec::NaN),
        c("f32", Datatype::float_le(4)),
        c("f64", Datatype::float_le(8)).fill(FillSpec::Value(Scalar::Float(-1.0))),
        c("f64nan", Datatype::float_le(8)).fill(FillSpec::NaN),
        c("s_nt", fixed(4, StringPad::NullTerm)),
        c("s_np", fixed(4, StringPad::NullPad)),
        c("s_sp", fixed(4, StringPad::SpacePad)).fill(FillSpec::Str("??".into())),
        c("vs", Datatype::vlen_utf8()).fill(FillSpec::Str("n/a".into())),
        c("color", enum_dt()),
        c("flag", Datatype::bool_enum()).fill(FillSpec::Raw(vec![0x7f])),
        c(
            "op",
            Datatype::Opaque {
                size: 3,
                tag: "bytes3".into(),
            },
        )
        .fill(FillSpec::Raw(vec![0xff, 0xff, 0xff])),
    ]
}

fn f16_bits(x: f64) -> u16 {
    if x.is_nan() {
        return 0x7e00;
    }
    match x {
        v if v == f64::INFINITY => 0x7c00,
        v if v == f64::NEG_INFINITY => 0xfc00,
        v if v == 0.0 => {
            if v.is_sign_negative() {
                0x8000
            } else {
                0
            }
        }
        1.5 => 0x3e00,
        -2.25 => 0xc080,
        3.0 => 0x4200,
        _ => 0x0001, // a subnormal
    }
}

/// `n` rows of random data for every column, about 1/6 missing.
fn rows(rng: &mut Rng, n: usize) -> Vec<(&'static str, ColumnData)> {
    let mut miss = || -> Vec<bool> { (0..n).map(|_| rng.below(6) == 0).collect() };
    let m: Vec<Vec<bool>> = (0..20).map(|_| miss()).collect();
    let mut r = Rng(n as u64 * 7919 + 13);
    let mut ints =
        |lo: i64, span: u64| -> Vec<i64> { (0..n).map(|_| lo + r.below(span) as i64).collect() };
    let i8v: Vec<i8> = ints(-100, 10).iter().map(|&x| x as i8).collect();
    let i16v: Vec<i16> = ints(-300, 50).iter().map(|&x| x as i16).collect();
    let i32v: Vec<i32> = ints(-5, 12).iter().map(|&x| x as i32).collect();
    let i64v: Vec<i64> = ints(i64::MIN / 2, 40);
    let u8v: Vec<u8> = ints(0, 9).iter().map(|&x| x as u8).collect();
    let u16v: Vec<u16> = ints(1000, 30).iter().map(|&x| x as u16).collect();
    let u32v: Vec<u32> = ints(7, 5).iter().map(|&x| x as u32).collect();
    let u64v: Vec<u64> = ints(0, 1000)
        .iter()
        .map(|&x| x as u64 * 1_000_003)
        .collect();
    let be: Vec<i32> = ints(-3, 7).iter().map(|&x| x as i32).collect();
    let fl: Vec<f64> = ints(0, F64S.len() as u64)
        .iter()
        .map(|&i| F64S[i as usize])
        .collect();
    let fl2: Vec<f64> = ints(0, F64S.len() as u64)
        .iter()
        .map(|&i| F64S[i as usize])
        .collect();
    let st = |v: Vec<i64>| -> Vec<Option<String>> {
        v.iter()
            .map(|&i| Some(STRS[i as usize].to_owned()))
            .collect()
    };
    let s1 = st(ints(0, 6));
    let s2 = st(ints(0, 6));
    let s3 = st(ints(0, 6));
    let s4 = st(ints(0, 6));
    let colors: Vec<i8> = ints(0, 3).iter().map(|&i| [0, 1, 5][i as usize]).collect();
    let flags: Vec<u8> = ints(0, 2).iter().map(|&x| x as u8).collect();
    let op: Vec<u8> = ints(0, 4)
        .iter()
        .flat_map(|&i| [[0u8, 0, 1], [0, 1, 0], [9, 9, 9], [0, 0, 0]][i as usize])
        .collect();
    let mk = |d: ColumnData, k: usize| d.with_missing(m[k].clone());
    // With a NaN fill every NaN is missing.
    let nanmk = |d: ColumnData, k: usize, v: &[f64]| {
        d.with_missing(m[k].iter().zip(v).map(|(a, x)| *a || x.is_nan()).collect())
    };
    vec![
        ("i8", mk(ColumnData::Int8(i8v), 0)),
        ("i16", mk(ColumnData::Int16(i16v), 1)),
        ("i32", mk(ColumnData::Int32(i32v), 2)),
        ("i64", mk(ColumnData::Int64(i64v), 3)),
        ("u8", mk(ColumnData::UInt8(u8v), 4)),
        ("u16", mk(ColumnData::UInt16(u16v), 5)),
        ("u32", mk(ColumnData::UInt32(u32v), 6)),
        ("u64", mk(ColumnData::UInt64(u64v), 7)),
        ("i32be", mk(ColumnData::Int32(be), 8)),
        (
            "f16",
            nanmk(
                ColumnData::Float16(fl.iter().map(|&x| f16_bits(x)).collect()),
                9,
                &fl,
            ),
        ),
        (
            "f32",
            mk(
                ColumnData::Float32(fl2.iter().map(|&x| x as f32).collect()),
                10,
            ),
        ),
        ("f64", mk(ColumnData::Float64(fl.clone()), 11)),
        ("f64nan", nanmk(ColumnData::Float64(fl2.clone()), 12, &fl2)),
        ("s_nt", mk(ColumnData::Str(s1), 13)),
        ("s_np", mk(ColumnData::Str(s2), 14)),
        ("s_sp", mk(ColumnData::Str(s3), 15)),
        ("vs", mk(ColumnData::Str(s4), 16)),
        ("color", mk(ColumnData::Int8(colors), 17)),
        // Booleans have no missing member: every row holds a value.
        ("flag", ColumnData::UInt8(flags)),
        ("op", mk(ColumnData::Raw(op), 19)),
    ]
}

const FILLS: &str = r#"{"vs": "n/a", "op_hex": "ffffff", "flag_hex": "7f"}"#;
const TABLE: &str = "/t";

fn kinds() -> Vec<IndexSpec> {
    vec![
        IndexSpec::minmax(),
        IndexSpec::sorted(),
        IndexSpec::bitmap(),
        IndexSpec::ChunkBloom { fpr: FPR, seed: 7 },
    ]
}

/// Run the oracle; returns the number of indexes it found correct.
fn oracle(path: &Path, check_size: bool) -> usize {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/index_write_oracle.py");
    let mut cmd = Command::new(common::python());
    cmd.arg(script).arg(path).arg(TABLE).arg(FILLS);
    if check_size {
        cmd.arg(FPR.to_string());
    }
    let out = cmd.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "oracle failed: {}\n{stdout}",
        String::from_utf8_lossy(&out.stderr)
    );
    let bad: Vec<&str> = stdout.lines().filter(|l| !l.starts_with("OK")).collect();
    assert!(bad.is_empty(), "oracle disagrees:\n{}", bad.join("\n"));
    stdout.lines().count()
}

/// `verify_table` reports nothing, and every index is current.
fn verified(path: &Path) -> usize {
    let file = h5fmt::File::open(path).unwrap();
    let t = Table::open(&file.group(TABLE).unwrap()).unwrap();
    let f = verify_table(&t).unwrap();
    assert!(f.is_empty(), "verify_table: {f:#?}");
    let d = discover(&t).unwrap();
    for i in &d.indexes {
        assert_eq!(i.validity, Validity::Current, "{}", i.path);
    }
    d.indexes.len()
}

fn make(path: &Path, n: usize, seed: u64) {
    let mut tw = TableWriter::new();
    for s in specs() {
        tw = tw.column(s);
    }
    let mut w = FileWriter::create(path).unwrap();
    let rows = rows(&mut Rng(seed), n);
    tw.write_at(&mut w, TABLE, &rows).unwrap();
    w.close().unwrap();
}

/// Build every allowed index; returns how many.
fn build_all(path: &Path) -> usize {
    let mut ed = FileEditor::open(path).unwrap();
    let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
    let file = h5fmt::File::open(path).unwrap();
    let t = Table::open(&file.group(TABLE).unwrap()).unwrap();
    let mut built = 0;
    for c in t.columns() {
        for k in kinds() {
            if kind_allowed(&k.kind(), c.dtype()) {
                te.build_index(c.name(), k).unwrap();
                built += 1;
            } else {
                let e = te.build_index(c.name(), k).unwrap_err();
                assert!(e.to_string().contains("not permitted"), "{e}");
            }
        }
    }
    built
}

#[test]
fn every_family_and_datatype_matches_numpy_after_build_append_truncate_update() {
    let path = common::tmp("idx_all.h5");
    make(&path, 23, 1);
    // TableWriter::write puts the table at the root.
    let built = build_all(&path);
    assert_eq!(
        built,
        20 * 3 + 19,
        "bloom refused on the non-boolean enum only"
    );
    assert_eq!(verified(&path), built);
    assert_eq!(oracle(&path, true), built);

    let mut rng = Rng(99);
    let steps: Vec<&str> = vec![
        "append",
        "append",
        "truncate",
        "update",
        "append",
        "truncate0",
        "append",
        "update",
    ];
    for (i, step) in steps.iter().enumerate() {
        {
            let mut ed = FileEditor::open(&path).unwrap();
            let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
            let n = te.nrows();
            match *step {
                "append" => {
                    let k = 1 + rng.below(11) as usize;
                    te.append(&rows(&mut rng, k)).unwrap();
                }
                "truncate" => te.truncate(n - 1 - rng.below(n.min(6))).unwrap(),
                "truncate0" => te.truncate(0).unwrap(),
                _ => {
                    let k = (1 + rng.below(5)).min(n);
                    let start = rng.below(n - k + 1);
                    for (name, data) in rows(&mut rng, k as usize) {
                        te.update(name, start, data).unwrap();
                    }
                }
            }
        }
        assert_eq!(verified(&path), built, "after step {i} ({step})");
        assert_eq!(oracle(&path, false), built, "after step {i} ({step})");
    }
}

#[test]
fn append_can_drop_sorted_and_bitmap_and_drop_index_unlinks() {
    let path = common::tmp("idx_drop.h5");
    make(&path, 9, 5);
    let built = build_all(&path);
    {
        let mut ed = FileEditor::open(&path).unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        te.set_append_indexes(AppendIndexes::Drop);
        te.append(&rows(&mut Rng(3), 6)).unwrap();
    }
    // Only CHUNK_MINMAX (20) and CHUNK_BLOOM (19) remain.
    assert_eq!(verified(&path), 39);
    assert_eq!(oracle(&path, false), 39);
    {
        let mut ed = FileEditor::open(&path).unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        te.drop_index("i32", IndexKind::ChunkBloom).unwrap();
        te.drop_index("vs", IndexKind::ChunkMinMax).unwrap();
        let e = te.build_index("vs", IndexSpec::bloom()).unwrap_err();
        assert!(e.to_string().contains("already"), "{e}");
        te.build_index("i32", IndexSpec::sorted()).unwrap();
        te.add_column(ColumnSpec::new("extra", Datatype::int_le(2, true)), None)
            .unwrap();
        te.drop_column("u8").unwrap();
    }
    let n = verified(&path);
    assert_eq!(n, 39 - 2 + 1 - 2);
    assert_eq!(oracle(&path, false), n);
    let _ = built;
}

#[test]
fn create_in_builds_requested_indexes_and_refuses_forbidden_ones() {
    let path = common::tmp("idx_create_in.h5");
    FileWriter::create(&path).unwrap().close().unwrap();
    let mut ed = FileEditor::open(&path).unwrap();
    let bad = TableWriter::new().column(ColumnSpec::new("c", enum_dt()).index(IndexSpec::bloom()));
    let e = bad
        .create_in(&mut ed, TABLE, &[("c", ColumnData::Int8(vec![0]))])
        .unwrap_err();
    assert!(e.to_string().contains("not permitted"), "{e}");
    let tw = TableWriter::new()
        .column(
            ColumnSpec::new("x", Datatype::int_le(4, true))
                .chunk(3)
                .index(IndexSpec::minmax())
                .index(IndexSpec::sorted())
                .index(IndexSpec::bitmap())
                .index(IndexSpec::ChunkBloom { fpr: FPR, seed: 7 }),
        )
        .column(
            ColumnSpec::new("y", Datatype::float_le(8))
                .chunk(2)
                .index(IndexSpec::minmax()),
        );
    tw.create_in(
        &mut ed,
        TABLE,
        &[
            ("x", ColumnData::Int32(vec![5, -1, 5, 7, 0, -1, 2])),
            (
                "y",
                ColumnData::Float64(vec![0.5, f64::NAN, -0.0, 0.0, 2.0, 1.0, -3.0]),
            ),
        ],
    )
    .unwrap();
    drop(ed);
    assert_eq!(verified(&path), 5);
    assert_eq!(oracle(&path, true), 5);
    // TableWriter::write refuses index requests.
    let mut w = FileWriter::in_memory();
    let e = tw
        .write(
            &mut w,
            ObjectId::ROOT,
            &[
                ("x", ColumnData::Int32(vec![1])),
                ("y", ColumnData::Float64(vec![1.0])),
            ],
        )
        .unwrap_err();
    assert!(e.to_string().contains("search indexes"), "{e}");
    let _ = Severity::Error;
}

#[test]
fn stale_and_untokened_indexes_are_rebuilt_and_orphans_replaced() {
    let path = common::tmp("idx_stale.h5");
    make(&path, 17, 11);
    let built = build_all(&path);
    {
        let mut ed = FileEditor::open(&path).unwrap();
        // A crash left these stale / a producer wrote this without tokens,
        // with wrong content.
        ed.set_attr(
            "/t/SEARCH_INDEXES/i32.SORTED_ROWS",
            "SOURCE_GENERATION",
            77u64,
        )
        .unwrap();
        ed.write_box(
            "/t/SEARCH_INDEXES/i32.SORTED_ROWS",
            &[0],
            &[1],
            &5u64.to_le_bytes(),
        )
        .unwrap();
        ed.set_attr("/t/SEARCH_INDEXES/f64.CHUNK_MINMAX", "SOURCE_NROWS", 3u64)
            .unwrap();
        ed.delete_attr("/t/SEARCH_INDEXES/vs.BITMAP", "SOURCE_GENERATION")
            .unwrap();
        ed.delete_attr("/t/SEARCH_INDEXES/vs.BITMAP", "SOURCE_NROWS")
            .unwrap();
        ed.flush().unwrap();
    }
    {
        let file = h5fmt::File::open(&path).unwrap();
        let t = Table::open(&file.group(TABLE).unwrap()).unwrap();
        let stale = discover(&t)
            .unwrap()
            .indexes
            .iter()
            .filter(|i| i.validity != Validity::Current)
            .count();
        assert_eq!(stale, 3);
    }
    {
        let mut ed = FileEditor::open(&path).unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        assert_eq!(te.rebuild_stale_indexes().unwrap(), 3);
        assert_eq!(te.rebuild_stale_indexes().unwrap(), 0);
    }
    assert_eq!(verified(&path), built);
    assert_eq!(oracle(&path, false), built);
    // An orphan left by a build killed before linking is replaced.
    {
        let mut ed = FileEditor::open(&path).unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        te.drop_index("u16", IndexKind::Bitmap).unwrap();
    }
    {
        let mut ed = FileEditor::open(&path).unwrap();
        ed.create_dataset(
            "/t/SEARCH_INDEXES",
            "u16.BITMAP",
            &h5fmt::write::edit::NewDataset::new(Datatype::int_le(1, false), &[1, 1]),
        )
        .unwrap();
        ed.flush().unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        te.build_index("u16", IndexSpec::bitmap()).unwrap();
    }
    assert_eq!(verified(&path), built);
    assert_eq!(oracle(&path, false), built);
}
