//! Tables written by `h5table::write`, read back by h5py/numpy/libhdf5 (the
//! oracle) and by our own `Table::open`. Expected values come from the
//! input data; missing rows from numpy's canonical missing test.

mod common;

use common::{dump, line, tmp, values};
use h5fmt::format::datatype::{CharSet, CompoundMember, Datatype, EnumMember, StringPad};
use h5fmt::{File, FileEditor, FileWriter, Value};
use h5table::write::{ColumnData, ColumnSpec, FillSpec, Scalar, TableEditor, TableWriter};
use h5table::Table;

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| (*x).to_owned()).collect()
}

fn enum_dt() -> Datatype {
    Datatype::Enum {
        base: Box::new(Datatype::int_le(1, true)),
        members: vec![
            EnumMember {
                name: "RED".into(),
                value: vec![0],
            },
            EnumMember {
                name: "GREEN".into(),
                value: vec![1],
            },
            EnumMember {
                name: "MISSING".into(),
                value: vec![0x80],
            },
        ],
    }
}

fn compound_dt() -> Datatype {
    Datatype::Compound {
        size: 12,
        members: vec![
            CompoundMember {
                name: "a".into(),
                offset: 0,
                dtype: Datatype::int_le(4, true),
            },
            CompoundMember {
                name: "b".into(),
                offset: 4,
                dtype: Datatype::float_le(8),
            },
        ],
    }
}

fn fixed(size: u32, pad: StringPad, cset: CharSet) -> Datatype {
    Datatype::String { size, pad, cset }
}

fn compound_bytes(v: &[(i32, f64)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (a, b) in v {
        out.extend_from_slice(&a.to_le_bytes());
        out.extend_from_slice(&b.to_le_bytes());
    }
    out
}

fn missing(m: &[usize], n: usize) -> Vec<bool> {
    (0..n).map(|i| m.contains(&i)).collect()
}

/// Every type family, categories (one shared), index columns, NaN and
/// non-NaN fills, a preallocated tail, in a nested group.
fn families() -> (TableWriter, Vec<(&'static str, ColumnData)>) {
    let tw = TableWriter::new()
        .title("Families — ü")
        .description("every column family")
        .units_vocabulary("UDUNITS-2")
        .column(
            ColumnSpec::new("id", Datatype::int_le(8, false))
                .chunk(4)
                .description("row id"),
        )
        .column(
            ColumnSpec::new("i8", Datatype::int_le(1, true))
                .chunk(3)
                .deflate(6),
        )
        .column(
            ColumnSpec::new("i16", Datatype::int_le(2, true))
                .shuffle()
                .deflate(1),
        )
        .column(ColumnSpec::new("i32", Datatype::int_le(4, true)).zstd(3))
        .column(ColumnSpec::new("i64", Datatype::int_le(8, true)).lz4())
        .column(ColumnSpec::new("u8", Datatype::int_le(1, false)))
        .column(ColumnSpec::new("u16", Datatype::int_le(2, false)))
        .column(ColumnSpec::new("u32", Datatype::int_le(4, false)).chunk(2))
        .column(ColumnSpec::new("f16", Datatype::float_le(2)).fill(FillSpec::NaN))
        .column(ColumnSpec::new("f32", Datatype::float_le(4)).units("MeV"))
        .column(ColumnSpec::new("f64nan", Datatype::float_le(8)).fill(FillSpec::NaN))
        .column(
            ColumnSpec::new("f64rng", Datatype::float_le(8))
                .fill(FillSpec::Value(Scalar::Float(-1.0)))
                .valid_range(Scalar::Float(0.0), Scalar::Float(100.0)),
        )
        .column(ColumnSpec::new(
            "s_nt",
            fixed(6, StringPad::NullTerm, CharSet::Ascii),
        ))
        .column(ColumnSpec::new(
            "s_np",
            fixed(8, StringPad::NullPad, CharSet::Utf8),
        ))
        .column(
            ColumnSpec::new("s_sp", fixed(4, StringPad::SpacePad, CharSet::Ascii))
                .fill(FillSpec::Str("??".into())),
        )
        .column(ColumnSpec::new("vs", Datatype::vlen_utf8()).chunk(2))
        .column(ColumnSpec::new("color", enum_dt()))
        .column(
            ColumnSpec::new("flag", Datatype::int_le(1, false))
                .fill(FillSpec::Value(Scalar::Int(2))),
        )
        .column(
            ColumnSpec::new(
                "blob",
                Datatype::Opaque {
                    size: 3,
                    tag: "bytes".into(),
                },
            )
            .fill(FillSpec::Raw(vec![0xff, 0xff, 0xff])),
        )
        .column(
            ColumnSpec::new("pair", compound_dt())
                .fill(FillSpec::Raw(compound_bytes(&[(-1, -1.0)]))),
        )
        .column(ColumnSpec::new("home", Datatype::int_le(1, true)).categorical("teams"))
        .column(ColumnSpec::new("away", Datatype::int_le(2, true)).categorical("teams"))
        .column(ColumnSpec::new("year", Datatype::int_le(1, false)).categorical("years"))
        .categories(
            "teams",
            Datatype::vlen_utf8(),
            ColumnData::strs(&["Basel", "Genève", "Zürich"]),
            false,
        )
        .categories(
            "years",
            Datatype::int_le(4, true),
            ColumnData::Int32(vec![1999, 2024]),
            true,
        )
        .index_columns(&["id", "home"])
        .reserve(5);
    let n = 5;
    let rows = vec![
        ("id", ColumnData::UInt64(vec![10, 11, 12, 13, 14])),
        (
            "i8",
            ColumnData::Int8(vec![-128, -1, 0, 5, 127]).with_missing(missing(&[1], n)),
        ),
        ("i16", ColumnData::Int16(vec![-32768, 1, 2, 3, 32767])),
        (
            "i32",
            ColumnData::Int64(vec![i64::from(i32::MIN), 0, 7, 8, i64::from(i32::MAX)]),
        ),
        (
            "i64",
            ColumnData::Int64(vec![i64::MIN, -5, 0, 1, i64::MAX]).with_missing(missing(&[2], n)),
        ),
        ("u8", ColumnData::UInt8(vec![0, 1, 2, 254, 3])),
        (
            "u16",
            ColumnData::UInt16(vec![0, 65534, 2, 3, 4]).with_missing(missing(&[4], n)),
        ),
        ("u32", ColumnData::UInt32(vec![0, 1, 4_294_967_294, 3, 4])),
        (
            "f16",
            ColumnData::Float16(vec![0x3800, 0x3e00, 0xc000, 0, 0]).with_missing(missing(&[3], n)),
        ),
        (
            "f32",
            ColumnData::Float32(vec![1.5, -2.25, 0.0, 1e10, 3.0]).with_missing(missing(&[2], n)),
        ),
        (
            "f64nan",
            ColumnData::Float64(vec![0.5, 0.0, 2.5, -7.0, 1e300]).with_missing(missing(&[1], n)),
        ),
        (
            "f64rng",
            ColumnData::Float64(vec![0.0, 50.0, 100.0, 0.0, 99.5]).with_missing(missing(&[3], n)),
        ),
        (
            "s_nt",
            ColumnData::Str(vec![
                Some("ab".into()),
                None,
                Some("cdefg".into()),
                Some("x".into()),
                Some("yz".into()),
            ]),
        ),
        (
            "s_np",
            ColumnData::Str(vec![
                Some("ü".into()),
                Some("12345678".into()),
                None,
                Some("é".into()),
                Some("q".into()),
            ]),
        ),
        (
            "s_sp",
            ColumnData::Str(vec![
                Some("ab".into()),
                Some("".into()),
                Some("abcd".into()),
                None,
                Some("z".into()),
            ]),
        ),
        (
            "vs",
            ColumnData::Str(vec![
                Some("hello".into()),
                None,
                Some("Zürich 🚀".into()),
                Some("x".into()),
                Some("long ".repeat(20)),
            ]),
        ),
        (
            "color",
            ColumnData::Str(vec![
                Some("RED".into()),
                Some("GREEN".into()),
                None,
                Some("GREEN".into()),
                Some("RED".into()),
            ]),
        ),
        (
            "flag",
            ColumnData::UInt8(vec![0, 1, 0, 1, 1]).with_missing(missing(&[4], n)),
        ),
        (
            "blob",
            ColumnData::Raw(vec![1, 2, 3, 0, 0, 0, 0xff, 0xff, 0xff, 4, 5, 6, 7, 8, 9]),
        ),
        (
            "pair",
            ColumnData::Raw(compound_bytes(&[
                (1, 0.5),
                (2, 1.5),
                (-1, -1.0),
                (3, 2.5),
                (4, 3.5),
            ])),
        ),
        (
            "home",
            ColumnData::Int8(vec![0, 1, 2, 0, 0]).with_missing(missing(&[3], n)),
        ),
        ("away", ColumnData::Int16(vec![2, 2, 1, 0, 1])),
        (
            "year",
            ColumnData::UInt8(vec![0, 1, 1, 0, 0]).with_missing(missing(&[0], n)),
        ),
    ];
    (tw, rows)
}

fn expected_family_values() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        ("id", vec!["10", "11", "12", "13", "14"]),
        ("i8", vec!["-128", "M", "0", "5", "127"]),
        ("i16", vec!["-32768", "1", "2", "3", "32767"]),
        ("i32", vec!["-2147483648", "0", "7", "8", "2147483647"]),
        (
            "i64",
            vec![
                "-9223372036854775808",
                "-5",
                "M",
                "1",
                "9223372036854775807",
            ],
        ),
        ("u8", vec!["0", "1", "2", "254", "3"]),
        ("u16", vec!["0", "65534", "2", "3", "M"]),
        ("u32", vec!["0", "1", "4294967294", "3", "4"]),
        ("f16", vec!["0.5", "1.5", "-2.0", "M", "0.0"]),
        ("f32", vec!["1.5", "-2.25", "M", "10000000000.0", "3.0"]),
        ("f64nan", vec!["0.5", "M", "2.5", "-7.0", "1e+300"]),
        ("f64rng", vec!["0.0", "50.0", "100.0", "M", "99.5"]),
        ("s_nt", vec!["ab", "M", "cdefg", "x", "yz"]),
        ("s_np", vec!["ü", "12345678", "M", "é", "q"]),
        ("s_sp", vec!["ab", "", "abcd", "M", "z"]),
        ("color", vec!["0", "1", "M", "1", "0"]),
        ("flag", vec!["0", "1", "0", "1", "M"]),
        ("blob", vec!["010203", "000000", "M", "040506", "070809"]),
        ("pair", vec!["1;0.5", "2;1.5", "M", "3;2.5", "4;3.5"]),
        ("home", vec!["0", "1", "2", "M", "0"]),
        ("away", vec!["2", "2", "1", "0", "1"]),
        ("year", vec!["M", "1", "1", "0", "0"]),
    ]
}

fn check_table_attrs(lines: &[String], t: &str, nrows: u64) {
    assert_eq!(
        line(lines, &format!("A {t} CLASS")),
        format!("A {t} CLASS STRING 13 NULLTERM ASCII scalar COLUMN_TABLE")
    );
    assert_eq!(
        line(lines, &format!("A {t} VERSION")),
        format!("A {t} VERSION STRING 3 NULLPAD ASCII scalar 1.0")
    );
    assert_eq!(
        line(lines, &format!("A {t} NROWS")),
        format!("A {t} NROWS <u8 8 - - scalar {nrows}")
    );
}

#[test]
fn every_family_new_file_reads_back_in_h5py_and_ours() {
    let (tw, rows) = families();
    let path = tmp("families.h5");
    let mut w = FileWriter::create(&path).unwrap();
    tw.write_at(&mut w, "/runs/2024/t", &rows).unwrap();
    w.close().unwrap();

    let t = "/runs/2024/t";
    let lines = dump(&path, t);
    check_table_attrs(&lines, t, 5);
    assert_eq!(
        line(&lines, &format!("A {t} GENERATION")),
        format!("A {t} GENERATION <u8 8 - - scalar 0")
    );
    assert_eq!(
        line(&lines, &format!("A {t} TITLE")),
        format!("A {t} TITLE STRING 15 NULLPAD UTF8 scalar Families — ü")
    );
    assert_eq!(
        line(&lines, &format!("A {t} description")),
        format!("A {t} description STRING 19 NULLPAD UTF8 scalar every column family")
    );
    assert_eq!(
        line(&lines, &format!("A {t} _index")),
        format!("A {t} _index STRING 2 NULLPAD UTF8 scalar id")
    );
    assert_eq!(
        line(&lines, &format!("A {t} INDEX_COLUMNS")),
        format!("A {t} INDEX_COLUMNS STDREF 64 - - 2 {t}/id,{t}/home")
    );
    let order = line(&lines, &format!("A {t} column-order"));
    let names: Vec<&str> = families().1.iter().map(|(n, _)| *n).collect();
    assert_eq!(
        order,
        format!(
            "A {t} column-order STRING 6 NULLPAD UTF8 {} {}",
            names.len(),
            names.join(",")
        )
    );
    // Categories: references, shared code book, ordered booleans.
    for (col, cat) in [("home", "teams"), ("away", "teams"), ("year", "years")] {
        assert_eq!(
            line(&lines, &format!("A {t}/{col} CATEGORIES")),
            format!("A {t}/{col} CATEGORIES STDREF 64 - - scalar {t}/CATEGORIES/{cat}")
        );
    }
    assert_eq!(
        line(&lines, &format!("A {t}/CATEGORIES/teams ordered")),
        format!("A {t}/CATEGORIES/teams ordered ENUM 1 signed=1 FALSE=0,TRUE=1 scalar 0")
    );
    assert_eq!(
        line(&lines, &format!("A {t}/CATEGORIES/years ordered")),
        format!("A {t}/CATEGORIES/years ordered ENUM 1 signed=1 FALSE=0,TRUE=1 scalar 1")
    );
    assert_eq!(line(&lines, "K\tteams"), "K\tteams\tBasel\tGenève\tZürich");
    assert_eq!(line(&lines, "K\tyears"), "K\tyears\t1999\t2024");
    assert_eq!(
        line(&lines, &format!("A {t}/f64rng valid_min")),
        format!("A {t}/f64rng valid_min <f8 8 - - scalar 0.0")
    );
    assert_eq!(
        line(&lines, &format!("A {t}/f64rng valid_max")),
        format!("A {t}/f64rng valid_max <f8 8 - - scalar 100.0")
    );
    assert_eq!(
        line(&lines, &format!("A {t}/f32 units")),
        format!("A {t}/f32 units STRING 3 NULLPAD UTF8 scalar MeV")
    );
    // Columns: datatypes, extents (5 rows + 5 reserved, rounded to the
    // longest chunk), chunks, filters, fill values (Table 1 by default).
    let c = |n: &str| line(&lines, &format!("C {n}")).to_owned();
    let longest = 65536u64; // default chunk of 1-byte columns (64 KiB, capped)
    let ext = 10u64.div_ceil(longest) * longest;
    assert_eq!(c("id"), format!("C id <u8 {ext} 4 - 18446744073709551615"));
    assert_eq!(c("i8"), format!("C i8 |i1 {ext} 3 gzip -127"));
    assert_eq!(
        c("i16"),
        format!("C i16 <i2 {ext} 32768 gzip,shuffle -32767")
    );
    assert_eq!(c("i32"), format!("C i32 <i4 {ext} 16384 32015 -2147483647"));
    assert_eq!(
        c("i64"),
        format!("C i64 <i8 {ext} 8192 32004 -9223372036854775807")
    );
    assert_eq!(c("u8"), format!("C u8 |u1 {ext} 65536 - 255"));
    assert_eq!(c("u16"), format!("C u16 <u2 {ext} 32768 - 65535"));
    assert_eq!(c("u32"), format!("C u32 <u4 {ext} 2 - 4294967295"));
    assert_eq!(c("f16"), format!("C f16 <f2 {ext} 32768 - nan"));
    assert_eq!(
        c("f32"),
        format!("C f32 <f4 {ext} 16384 - 9.969209968386869e+36")
    );
    assert_eq!(c("f64nan"), format!("C f64nan <f8 {ext} 8192 - nan"));
    assert_eq!(c("f64rng"), format!("C f64rng <f8 {ext} 8192 - -1.0"));
    assert_eq!(c("s_nt"), format!("C s_nt |S6 {ext} 10922 - "));
    // libhdf5 converts space padding to numpy's NUL padding (spaces stripped).
    assert_eq!(c("s_sp"), format!("C s_sp |S4 {ext} 16384 - ??"));
    assert_eq!(c("vs"), format!("C vs |O {ext} 2 - "));
    assert_eq!(c("color"), format!("C color |i1 {ext} 65536 - -128"));
    assert_eq!(c("blob"), format!("C blob |V3 {ext} 21845 - ffffff"));
    assert_eq!(c("pair"), format!("C pair compound {ext} 5461 - -1;-1.0"));
    for (name, want) in expected_family_values() {
        assert_eq!(values(&lines, name), s(&want), "column {name}");
    }
    let vs = values(&lines, "vs");
    assert_eq!(
        vs,
        vec![
            "hello".to_owned(),
            "M".into(),
            "Zürich 🚀".into(),
            "x".into(),
            "long ".repeat(20)
        ]
    );

    // Our reader.
    let file = File::open(&path).unwrap();
    let table = Table::open(&file.group(t).unwrap()).unwrap();
    assert_eq!(table.nrows(), 5);
    assert_eq!(table.generation, Some(0));
    assert_eq!(table.index_columns, s(&["id", "home"]));
    assert_eq!(table.index_name.as_deref(), Some("id"));
    assert_eq!(table.title.as_deref(), Some("Families — ü"));
    let names_read: Vec<&str> = table.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names_read, names);
    let home = table.column("home").unwrap();
    let cats = home.categories.as_ref().unwrap();
    assert_eq!(
        cats.labels,
        vec![
            Value::Str("Basel".into()),
            Value::Str("Genève".into()),
            Value::Str("Zürich".into())
        ]
    );
    assert_eq!(cats.ordered, Some(false));
    let sl = table.column("f64nan").unwrap().read(0..5).unwrap();
    assert_eq!(sl.missing, missing(&[1], 5));
    let sl = table.column("vs").unwrap().read(0..5).unwrap();
    assert_eq!(sl.missing, missing(&[1], 5));
    assert_eq!(sl.values[2], Value::Str("Zürich 🚀".into()));
    let sl = table.column("i8").unwrap().read(0..5).unwrap();
    assert_eq!(sl.values[0], Value::Int(-128));
    assert_eq!(table.column("id").unwrap().extent(), ext);
}

#[test]
fn root_table_empty_and_custom_vlen_fill() {
    let path = tmp("root.h5");
    let mut w = FileWriter::create(&path).unwrap();
    TableWriter::new()
        .column(ColumnSpec::new("x", Datatype::int_le(4, true)).chunk(8))
        .column(ColumnSpec::new("name", Datatype::vlen_utf8()).fill(FillSpec::Str("n/a".into())))
        .write_at(&mut w, "/", &[])
        .unwrap();
    w.close().unwrap();
    let lines = dump(&path, "/");
    check_table_attrs(&lines, "/", 0);
    assert_eq!(line(&lines, "C x"), "C x <i4 0 8 - -2147483647");
    assert_eq!(line(&lines, "C name"), "C name |O 0 4096 - n/a");
    assert!(lines.iter().all(|l| !l.contains("INDEX_COLUMNS")));
    let file = File::open(&path).unwrap();
    let t = Table::open(&file.root().unwrap()).unwrap();
    assert_eq!(t.nrows(), 0);
    assert_eq!(t.columns().len(), 2);
}

#[test]
fn bad_declarations_and_data_are_refused_before_writing() {
    let ok = || ColumnSpec::new("x", Datatype::int_le(4, true));
    type Case = (TableWriter, Vec<(&'static str, ColumnData)>, &'static str);
    let cases: Vec<Case> = vec![
        (
            TableWriter::new().column(ColumnSpec::new("NROWS", Datatype::int_le(4, true))),
            vec![],
            "reserved",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("valid_min", Datatype::int_le(4, true))),
            vec![],
            "reserved",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("a/b", Datatype::int_le(4, true))),
            vec![],
            "invalid column name",
        ),
        (
            TableWriter::new().column(ok()),
            vec![("x", ColumnData::Float64(vec![1.0]))],
            "does not fit",
        ),
        (
            TableWriter::new().column(ok()),
            vec![("y", ColumnData::Int32(vec![1]))],
            "no data given",
        ),
        (
            TableWriter::new()
                .column(ok())
                .column(ColumnSpec::new("y", Datatype::int_le(4, true))),
            vec![
                ("x", ColumnData::Int32(vec![1])),
                ("y", ColumnData::Int32(vec![1, 2])),
            ],
            "rows",
        ),
        (
            TableWriter::new().column(ok()),
            vec![("x", ColumnData::Int32(vec![-2147483647]))],
            "fill value",
        ),
        (
            TableWriter::new().column(ok()),
            vec![("x", ColumnData::Int64(vec![1 << 40]))],
            "does not fit",
        ),
        (
            TableWriter::new().column(
                ok().fill(FillSpec::Value(Scalar::Int(5)))
                    .valid_range(Scalar::Int(0), Scalar::Int(10)),
            ),
            vec![],
            "strictly outside",
        ),
        (
            TableWriter::new()
                .column(ok().fill(FillSpec::Value(Scalar::Int(1))).categorical("c"))
                .categories(
                    "c",
                    Datatype::int_le(4, true),
                    ColumnData::Int32(vec![7, 8]),
                    false,
                ),
            vec![],
            "valid category code",
        ),
        (
            TableWriter::new().column(ok().categorical("c")).categories(
                "c",
                Datatype::int_le(4, true),
                ColumnData::Int32(vec![7, 8]),
                false,
            ),
            vec![("x", ColumnData::Int32(vec![2]))],
            "category code",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("h", Datatype::float_le(2))),
            vec![],
            "float16",
        ),
        (
            TableWriter::new().column(ColumnSpec::new(
                "s",
                fixed(2, StringPad::NullPad, CharSet::Ascii),
            )),
            vec![("s", ColumnData::strs(&["abc"]))],
            "longer",
        ),
        (
            TableWriter::new().column(ColumnSpec::new(
                "s",
                fixed(4, StringPad::NullPad, CharSet::Ascii),
            )),
            vec![("s", ColumnData::strs(&["é"]))],
            "ASCII",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("e", enum_dt())),
            vec![("e", ColumnData::strs(&["BLUE"]))],
            "member",
        ),
        (
            TableWriter::new().column(ok()).index_columns(&["nope"]),
            vec![],
            "index column",
        ),
        (TableWriter::new().column(ok().chunk(0)), vec![], "chunk"),
        (TableWriter::new(), vec![], "at least one column"),
    ];
    for (tw, rows, needle) in cases {
        let mut w = FileWriter::in_memory();
        let err = tw.write_at(&mut w, "/t", &rows).unwrap_err().to_string();
        assert!(err.contains(needle), "{err:?} should mention {needle:?}");
        // Nothing was created: the group is still free.
        assert!(
            w.root().create_group("t").is_ok(),
            "{needle}: the file changed"
        );
    }
}

fn editor_base(path: &std::path::Path) {
    let mut w = FileWriter::create(path).unwrap();
    w.root().create_group("other").unwrap();
    TableWriter::new()
        .column(ColumnSpec::new("id", Datatype::int_le(8, false)).chunk(4))
        .column(
            ColumnSpec::new("v", Datatype::float_le(8))
                .chunk(3)
                .deflate(4),
        )
        .column(ColumnSpec::new("s", fixed(4, StringPad::NullPad, CharSet::Utf8)).chunk(2))
        .column(ColumnSpec::new("vs", Datatype::vlen_utf8()).chunk(4))
        .column(
            ColumnSpec::new("c", Datatype::int_le(1, true))
                .chunk(4)
                .categorical("cats"),
        )
        .categories(
            "cats",
            fixed(1, StringPad::NullPad, CharSet::Ascii),
            ColumnData::strs(&["a", "b"]),
            true,
        )
        .index_columns(&["id", "c"])
        .write_at(
            &mut w,
            "/g/t",
            &[
                ("id", ColumnData::UInt64(vec![1, 2, 3])),
                ("v", ColumnData::Float64(vec![0.5, 1.5, 2.5])),
                ("s", ColumnData::strs(&["a", "bb", "ccc"])),
                ("vs", ColumnData::strs(&["x", "yy", "zzz"])),
                ("c", ColumnData::Int8(vec![0, 1, 0])),
            ],
        )
        .unwrap();
    w.close().unwrap();
}

#[test]
fn editor_append_reserve_truncate_update_add_drop() {
    let path = tmp("edit.h5");
    editor_base(&path);
    let t = "/g/t";
    let mut ed = FileEditor::open(&path).unwrap();
    {
        let mut te = TableEditor::open(&mut ed, t).unwrap();
        assert_eq!(te.nrows(), 3);
        te.append(&[
            ("id", ColumnData::UInt64(vec![4, 5])),
            (
                "v",
                ColumnData::Float64(vec![3.5, 0.0]).with_missing(vec![false, true]),
            ),
            ("s", ColumnData::Str(vec![Some("dddd".into()), None])),
            ("vs", ColumnData::Str(vec![None, Some("wörld".into())])),
            (
                "c",
                ColumnData::Int8(vec![1, 0]).with_missing(vec![true, false]),
            ),
        ])
        .unwrap();
        assert_eq!((te.nrows(), te.extent(), te.generation()), (5, 5, 1));
        te.reserve(3).unwrap();
        assert_eq!((te.nrows(), te.extent()), (5, 8));
        te.append(&[
            ("id", ColumnData::UInt64(vec![6])),
            ("v", ColumnData::Float64(vec![6.5])),
            ("s", ColumnData::strs(&["e"])),
            ("vs", ColumnData::strs(&["f"])),
            ("c", ColumnData::Int8(vec![1])),
        ])
        .unwrap();
        assert_eq!((te.nrows(), te.extent(), te.generation()), (6, 8, 2));
        te.update("v", 1, ColumnData::Float64(vec![-1.25, 9.0]))
            .unwrap();
        te.update("vs", 0, ColumnData::strs(&["X"])).unwrap();
        te.truncate(5).unwrap();
        assert_eq!((te.nrows(), te.extent(), te.generation()), (5, 8, 5));
        te.add_column(
            ColumnSpec::new("n", Datatype::int_le(2, true))
                .chunk(4)
                .units("m"),
            None,
        )
        .unwrap();
        te.add_column(
            ColumnSpec::new("c2", Datatype::int_le(1, false)).categorical("cats"),
            Some(ColumnData::UInt8(vec![1, 1, 0, 0, 1])),
        )
        .unwrap();
        te.drop_column("s").unwrap();
        te.drop_column("id").unwrap();
        // Errors leave the table as it is.
        assert!(te.append(&[("v", ColumnData::Float64(vec![1.0]))]).is_err());
        assert!(te.update("nope", 0, ColumnData::Int8(vec![1])).is_err());
        assert!(te
            .update("v", 4, ColumnData::Float64(vec![1.0, 2.0]))
            .is_err());
        assert!(te.truncate(9).is_err());
        assert!(te
            .add_column(ColumnSpec::new("TITLE", Datatype::int_le(1, true)), None)
            .is_err());
        assert!(te
            .add_column(ColumnSpec::new("v", Datatype::int_le(1, true)), None)
            .is_err());
        assert!(te.drop_column("zzz").is_err());
        assert_eq!(te.nrows(), 5);
    }
    drop(ed);

    let lines = dump(&path, t);
    check_table_attrs(&lines, t, 5);
    assert_eq!(
        line(&lines, &format!("A {t} GENERATION")),
        format!("A {t} GENERATION <u8 8 - - scalar 9")
    );
    assert_eq!(
        line(&lines, &format!("A {t} column-order")),
        format!("A {t} column-order STRING 2 NULLPAD UTF8 5 v,vs,c,n,c2")
    );
    assert_eq!(
        line(&lines, &format!("A {t} INDEX_COLUMNS")),
        format!("A {t} INDEX_COLUMNS STDREF 64 - - 1 {t}/c")
    );
    assert_eq!(
        line(&lines, &format!("A {t} _index")),
        format!("A {t} _index STRING 1 NULLPAD UTF8 scalar c")
    );
    assert_eq!(
        line(&lines, &format!("A {t}/c2 CATEGORIES")),
        format!("A {t}/c2 CATEGORIES STDREF 64 - - scalar {t}/CATEGORIES/cats")
    );
    assert_eq!(
        line(&lines, &format!("A {t}/n units")),
        format!("A {t}/n units STRING 1 NULLPAD UTF8 scalar m")
    );
    assert_eq!(values(&lines, "v"), s(&["0.5", "-1.25", "9.0", "3.5", "M"]));
    assert_eq!(values(&lines, "vs"), s(&["X", "yy", "zzz", "M", "wörld"]));
    assert_eq!(values(&lines, "c"), s(&["0", "1", "0", "M", "0"]));
    assert_eq!(values(&lines, "n"), s(&["M", "M", "M", "M", "M"]));
    assert_eq!(values(&lines, "c2"), s(&["1", "1", "0", "0", "1"]));
    assert_eq!(line(&lines, "C n"), "C n <i2 8 4 - -32767");
    assert_eq!(
        line(&lines, "C v"),
        "C v <f8 8 3 gzip 9.969209968386869e+36"
    );
    assert!(lines
        .iter()
        .all(|l| !l.starts_with("C s ") && !l.starts_with("C id ")));

    let file = File::open(&path).unwrap();
    let table = Table::open(&file.group(t).unwrap()).unwrap();
    assert_eq!(table.nrows(), 5);
    assert_eq!(table.generation, Some(9));
    assert_eq!(table.index_columns, s(&["c"]));
    let names: Vec<&str> = table.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["v", "vs", "c", "n", "c2"]);
    let c2 = table.column("c2").unwrap();
    assert_eq!(c2.categories.as_ref().unwrap().ordered, Some(true));
}

#[test]
fn editor_creates_tables_in_existing_files_and_drops_categories() {
    let path = tmp("create_in.h5");
    editor_base(&path);
    let mut ed = FileEditor::open(&path).unwrap();
    TableWriter::new()
        .title("made by the editor")
        .column(
            ColumnSpec::new("k", Datatype::int_le(4, false))
                .chunk(2)
                .shuffle()
                .deflate(2),
        )
        .column(
            ColumnSpec::new("lab", Datatype::int_le(1, true))
                .chunk(2)
                .categorical("L"),
        )
        .categories(
            "L",
            Datatype::int_le(2, true),
            ColumnData::Int16(vec![100, 200, 300]),
            false,
        )
        .index_columns(&["k"])
        .reserve(1)
        .create_in(
            &mut ed,
            "/other/new/t2",
            &[
                ("k", ColumnData::UInt32(vec![7, 8, 9])),
                (
                    "lab",
                    ColumnData::Int8(vec![2, 0, 1]).with_missing(vec![false, true, false]),
                ),
            ],
        )
        .unwrap();
    // Refusals leave the file as it is.
    let before = std::fs::read(&path).unwrap();
    for (tw, p) in [
        (
            TableWriter::new().column(ColumnSpec::new("k", Datatype::int_le(4, false))),
            "/other/new/t2",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("k", Datatype::int_le(4, false))),
            "/g",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("k", Datatype::int_le(4, false))),
            "/g/t/v",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("CLASS", Datatype::int_le(4, false))),
            "/other/x",
        ),
        (
            TableWriter::new().column(ColumnSpec::new("k", Datatype::vlen_utf8())),
            "/other/x",
        ),
    ] {
        let rows: &[(&str, ColumnData)] = if p == "/other/x" {
            &[
                ("k", ColumnData::strs(&["a", "b"])),
                ("zz", ColumnData::strs(&["a"])),
            ]
        } else {
            &[]
        };
        assert!(tw.create_in(&mut ed, p, rows).is_err(), "{p}");
    }
    assert_eq!(
        std::fs::read(&path).unwrap(),
        before,
        "a refusal changed the file"
    );
    {
        let mut te = TableEditor::open(&mut ed, "/other/new/t2").unwrap();
        te.drop_column("lab").unwrap();
    }
    drop(ed);
    let t = "/other/new/t2";
    let lines = dump(&path, t);
    check_table_attrs(&lines, t, 3);
    assert_eq!(
        line(&lines, &format!("A {t} TITLE")),
        format!("A {t} TITLE STRING 18 NULLPAD UTF8 scalar made by the editor")
    );
    assert_eq!(
        line(&lines, &format!("A {t} INDEX_COLUMNS")),
        format!("A {t} INDEX_COLUMNS STDREF 64 - - 1 {t}/k")
    );
    assert_eq!(values(&lines, "k"), s(&["7", "8", "9"]));
    assert_eq!(line(&lines, "C k"), "C k <u4 4 2 gzip,shuffle 4294967295");
    // The categories dataset and its group went with their only column.
    assert!(lines
        .iter()
        .all(|l| !l.contains("CATEGORIES") && !l.starts_with("K")));
    let file = File::open(&path).unwrap();
    let table = Table::open(&file.group(t).unwrap()).unwrap();
    assert_eq!(table.nrows(), 3);
    assert!(file.object("/other/new/t2/CATEGORIES").is_err());
}

#[test]
fn editor_refuses_non_tables_bad_nrows_and_version_2() {
    // A group that is not a table; NROWS of the wrong type.
    let path = tmp("refuse.h5");
    let mut w = FileWriter::create(&path).unwrap();
    let g = w.root().create_group("plain").unwrap().id();
    w.set_attr(g, "x", 1u8).unwrap();
    let bad = w.root().create_group("badnrows").unwrap().id();
    w.group(bad)
        .unwrap()
        .create_dataset("a")
        .write(&[1i32])
        .unwrap();
    w.set_attr(bad, "CLASS", h5fmt::AttrValue::fixed_ascii("COLUMN_TABLE"))
        .unwrap();
    w.set_attr(bad, "VERSION", h5fmt::AttrValue::fixed_ascii("1.0"))
        .unwrap();
    w.set_attr(bad, "NROWS", 1i64).unwrap();
    w.close().unwrap();
    let before = std::fs::read(&path).unwrap();
    let mut ed = FileEditor::open(&path).unwrap();
    let e = TableEditor::open(&mut ed, "/plain").unwrap_err();
    assert!(matches!(e, h5table::Error::NotATable { .. }), "{e}");
    let e = TableEditor::open(&mut ed, "/badnrows").unwrap_err();
    assert!(e.to_string().contains("NROWS"), "{e}");
    assert!(TableEditor::open(&mut ed, "/nope").is_err());
    drop(ed);
    assert_eq!(std::fs::read(&path).unwrap(), before);

    // VERSION 2.0 (a libhdf5-written corpus file).
    let src = "/work/shared/hep001/files/n04_version_2.h5";
    if std::path::Path::new(src).exists() {
        let path = tmp("v2.h5");
        std::fs::copy(src, &path).unwrap();
        let before = std::fs::read(&path).unwrap();
        let file = File::open(&path).unwrap();
        let tables = h5table::find_tables(&file).unwrap();
        drop(file);
        let mut ed = FileEditor::open(&path).unwrap();
        for t in &tables {
            let e = TableEditor::open(&mut ed, t).unwrap_err();
            assert!(
                matches!(e, h5table::Error::UnsupportedVersion { .. }),
                "{e}"
            );
        }
        drop(ed);
        assert_eq!(std::fs::read(&path).unwrap(), before);
    }
}

#[test]
fn editor_appends_to_libhdf5_written_tables() {
    // A corpus table written by h5col/libhdf5 with search indexes: append
    // maintains them (or deletes those it cannot grow, §11.2 step 4) before
    // it commits NROWS; whatever remains is current and verifies clean.
    let src = "/work/shared/hep001/files/c01_minimal.h5";
    let path = tmp("c01.h5");
    std::fs::copy(src, &path).unwrap();
    let t = "/my_table";
    let before = dump(&path, t);
    let n: u64 = line(&before, &format!("A {t} NROWS"))
        .rsplit(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let mut ed = FileEditor::open(&path).unwrap();
    {
        let mut te = TableEditor::open(&mut ed, t).unwrap();
        te.append(&[
            ("row_id", ColumnData::UInt64(vec![999_999])),
            ("ts", ColumnData::Int64(vec![42])),
            ("energy", ColumnData::Float32(vec![0.25])),
            ("label", ColumnData::Int8(vec![2])),
        ])
        .unwrap();
    }
    drop(ed);
    let after = dump(&path, t);
    assert_eq!(
        line(&after, &format!("A {t} NROWS")),
        format!("A {t} NROWS <u8 8 - - scalar {}", n + 1)
    );
    for (col, want) in [
        ("row_id", "999999"),
        ("ts", "42"),
        ("energy", "0.25"),
        ("label", "2"),
    ] {
        let v = values(&after, col);
        let old = values(&before, col);
        assert_eq!(v.len() as u64, n + 1);
        assert_eq!(&v[..old.len()], old.as_slice(), "{col}: old rows unchanged");
        assert_eq!(v.last().unwrap(), want);
    }
    assert!(after.iter().any(|l| l.contains("INDEX_COLUMNS STDREF")));
    let file = h5fmt::File::open(&path).unwrap();
    let table = h5table::Table::open(&file.group(t).unwrap()).unwrap();
    let findings = h5table::index::verify_table(&table).unwrap();
    assert!(findings.is_empty(), "{findings:#?}");
    for i in h5table::index::discover(&table).unwrap().indexes {
        assert_eq!(i.validity, h5table::index::Validity::Current, "{}", i.path);
    }
}

#[test]
fn editor_vlen_zstd_lz4_columns_in_existing_files() {
    let path = tmp("vlen_edit.h5");
    editor_base(&path);
    let mut ed = FileEditor::open(&path).unwrap();
    TableWriter::new()
        .column(
            ColumnSpec::new("vs", Datatype::vlen_utf8())
                .chunk(2)
                .fill(FillSpec::Str("n/a".into())),
        )
        .column(
            ColumnSpec::new("z", Datatype::int_le(4, true))
                .chunk(3)
                .zstd(5),
        )
        .column(
            ColumnSpec::new("l", Datatype::float_le(4))
                .chunk(3)
                .shuffle()
                .lz4(),
        )
        .column(
            ColumnSpec::new("c", Datatype::int_le(1, false))
                .chunk(3)
                .categorical("names"),
        )
        .categories(
            "names",
            Datatype::vlen_utf8(),
            ColumnData::strs(&["zero", "один"]),
            false,
        )
        .create_in(
            &mut ed,
            "/t3",
            &[
                (
                    "vs",
                    ColumnData::Str(vec![Some("a".into()), None, Some("ç".into())]),
                ),
                ("z", ColumnData::Int32(vec![1, 2, 3])),
                ("l", ColumnData::Float32(vec![0.5, 1.5, 2.5])),
                ("c", ColumnData::UInt8(vec![1, 0, 1])),
            ],
        )
        .unwrap();
    {
        let mut te = TableEditor::open(&mut ed, "/t3").unwrap();
        te.append(&[
            (
                "vs",
                ColumnData::Str(vec![None, Some("long string ".repeat(10))]),
            ),
            ("z", ColumnData::Int32(vec![4, 5])),
            (
                "l",
                ColumnData::Float32(vec![3.5, 4.5]).with_missing(vec![true, false]),
            ),
            ("c", ColumnData::UInt8(vec![0, 0])),
        ])
        .unwrap();
        te.add_column(
            ColumnSpec::new("w", Datatype::vlen_utf8()).chunk(4),
            Some(ColumnData::strs(&["p", "q", "r", "s", "t"])),
        )
        .unwrap();
        te.update("vs", 1, ColumnData::strs(&["B"])).unwrap();
    }
    drop(ed);
    let lines = dump(&path, "/t3");
    check_table_attrs(&lines, "/t3", 5);
    assert_eq!(line(&lines, "C vs"), "C vs |O 5 2 - n/a");
    assert_eq!(line(&lines, "C z"), "C z <i4 5 3 32015 -2147483647");
    assert_eq!(
        line(&lines, "C l"),
        "C l <f4 5 3 32004,shuffle 9.969209968386869e+36"
    );
    assert_eq!(
        values(&lines, "vs"),
        vec![
            "a".to_owned(),
            "B".into(),
            "ç".into(),
            "M".into(),
            "long string ".repeat(10)
        ]
    );
    assert_eq!(values(&lines, "z"), s(&["1", "2", "3", "4", "5"]));
    assert_eq!(values(&lines, "l"), s(&["0.5", "1.5", "2.5", "M", "4.5"]));
    assert_eq!(values(&lines, "w"), s(&["p", "q", "r", "s", "t"]));
    assert_eq!(line(&lines, "K\tnames"), "K\tnames\tzero\tодин");
    let file = File::open(&path).unwrap();
    let t = Table::open(&file.group("/t3").unwrap()).unwrap();
    assert_eq!(t.nrows(), 5);
    let c = t.column("c").unwrap();
    assert_eq!(
        c.categories.as_ref().unwrap().labels[1],
        Value::Str("один".into())
    );
}

#[test]
fn editor_appends_to_every_family_of_new_files() {
    // zstd, lz4, opaque, compound, vlen columns written by FileWriter.
    let (tw, rows) = families();
    let path = tmp("families_append.h5");
    let mut w = FileWriter::create(&path).unwrap();
    tw.write_at(&mut w, "/t", &rows).unwrap();
    w.close().unwrap();
    let mut ed = FileEditor::open(&path).unwrap();
    let mut te = TableEditor::open(&mut ed, "/t").unwrap();
    let err = te.append(&rows[..3]).unwrap_err().to_string();
    assert!(err.contains("no data given"), "{err}");
    te.append(&rows).unwrap();
    drop(ed);
    let lines = dump(&path, "/t");
    for (name, want) in expected_family_values() {
        let mut twice = s(&want);
        twice.extend(s(&want));
        assert_eq!(values(&lines, name), twice, "column {name}");
    }
}

#[test]
fn editor_appends_missing_rows_to_every_corpus_table() {
    // Tables written by h5col/libhdf5 (every family, layouts, filters,
    // big-endian columns, preallocated tails): append one all-missing row.
    // h5py sees the old rows unchanged and the new row missing by numpy's
    // test; a table the editor cannot write is refused unchanged.
    let dir = std::path::Path::new("/work/shared/hep001/files");
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| {
            let n = e.ok()?.file_name().into_string().ok()?;
            (n.starts_with('c') && n.ends_with(".h5")).then_some(n)
        })
        .collect();
    names.sort();
    assert!(names.len() > 10, "corpus missing");
    let (mut appended, mut refused) = (0, 0);
    for name in names {
        let path = tmp(&format!("corpus-{name}"));
        std::fs::copy(dir.join(&name), &path).unwrap();
        let tables = {
            let f = File::open(&path).unwrap();
            h5table::find_tables(&f).unwrap()
        };
        for t in tables {
            let before = std::fs::read(&path).unwrap();
            let (rows, nrows): (Vec<(String, ColumnData)>, u64) = {
                let f = File::open(&path).unwrap();
                let table = Table::open(&f.group(&t).unwrap()).unwrap();
                let rows = table
                    .columns()
                    .iter()
                    .map(|c| {
                        let d = match c.dtype() {
                            Datatype::VarLenString { .. } => ColumnData::Str(vec![None]),
                            dt => ColumnData::Raw(vec![0; dt.size() as usize])
                                .with_missing(vec![true]),
                        };
                        (c.name().to_owned(), d)
                    })
                    .collect();
                (rows, table.nrows())
            };
            let old = dump(&path, &t);
            let rows_ref: Vec<(&str, ColumnData)> =
                rows.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
            let mut ed = FileEditor::open(&path).unwrap();
            let r = TableEditor::open(&mut ed, &t).and_then(|mut te| te.append(&rows_ref));
            drop(ed);
            match r {
                Err(e) => {
                    assert!(
                        matches!(e, h5table::Error::Usage(_)),
                        "{name}:{t}: unexpected error {e}"
                    );
                    assert_eq!(std::fs::read(&path).unwrap(), before, "{name}:{t}: {e}");
                    eprintln!("refused {name}:{t}: {e}");
                    refused += 1;
                }
                Ok(()) => {
                    let new = dump(&path, &t);
                    assert_eq!(
                        line(&new, &format!("A {t} NROWS")),
                        format!("A {t} NROWS <u8 8 - - scalar {}", nrows + 1),
                        "{name}"
                    );
                    for (c, _) in &rows {
                        let (o, n) = (values(&old, c), values(&new, c));
                        assert_eq!(&n[..o.len()], o.as_slice(), "{name}:{t}/{c}: old rows");
                        assert_eq!(n.len(), o.len() + 1, "{name}:{t}/{c}");
                        assert_eq!(n.last().unwrap(), "M", "{name}:{t}/{c}: new row missing");
                    }
                    appended += 1;
                }
            }
        }
    }
    eprintln!("corpus tables appended to: {appended}, refused unchanged: {refused}");
    assert!(appended > 10);
}
