//! List columns and boolean columns of the upstream H5Col draft, read from
//! files written independently:
//!
//! * `tests/list_oracle.py` writes them with h5py following the draft's
//!   layout (every value type, empty and null lists, missing elements,
//!   nested lists, several chunks per level, reserved tails) and reports the
//!   values it wrote; it also writes damaged list columns, which must give
//!   errors, never panics;
//! * `tests/data/h5col_lists.h5` was written by h5col 0.4.0 itself, and
//!   `h5col_lists.json` is what h5col reads back (see `h5col_lists.py`).
//!
//! Each file is read through `ListColumn::read` (whole and by row ranges),
//! the Arrow export (schema, batches, projection) and `check`.

#![cfg(feature = "arrow")]

mod common;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type, UInt32Type,
    UInt64Type, UInt8Type,
};
use arrow_array::Array;
use arrow_schema::DataType;
use h5fmt::{File, Value};
use h5table::arrow::{batches, read_batch, ExportOptions};
use h5table::check::{check_file, Options, Severity};
use h5table::{Error, ListElements, ListSlice, Table, TableColumn};
use serde_json::{json, Value as J};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

/// The oracle's files and answers, made once per test process.
fn oracle() -> &'static (PathBuf, J) {
    static O: OnceLock<(PathBuf, J)> = OnceLock::new();
    O.get_or_init(|| {
        let dir = common::tmp("lists");
        std::fs::create_dir_all(&dir).unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/list_oracle.py");
        let out = Command::new(common::python())
            .arg(&script)
            .arg(&dir)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "list_oracle.py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        (dir, serde_json::from_slice(&out.stdout).unwrap())
    })
}

fn open(path: &Path, table: &str) -> Table {
    let f = File::open(path).unwrap();
    Table::open(&f.group(table).unwrap()).unwrap()
}

/// A decoded element as an oracle cell.
fn elem(v: &Value, missing: bool) -> J {
    if missing {
        return J::Null;
    }
    match v {
        Value::Int(i) => json!(i),
        Value::UInt(u) => json!(u),
        Value::F32(x) => json!(format!("{:x}", x.to_bits())),
        Value::F64(x) => json!(format!("{:x}", x.to_bits())),
        Value::Str(s) => json!(s),
        Value::RawStr(b) => json!(String::from_utf8_lossy(b)),
        Value::Enum { code, .. } => json!(*code == 1),
        other => panic!("unexpected element {other:?}"),
    }
}

/// Entry `i` of a list slice as an oracle cell.
fn entry(s: &ListSlice, i: usize) -> J {
    if s.missing[i] {
        return J::Null;
    }
    let r = s.range(i).unwrap();
    J::Array(
        r.map(|j| match &s.elements {
            ListElements::Values(v) => elem(&v.values[j], v.missing[j]),
            ListElements::Lists(inner) => entry(inner, j),
        })
        .collect(),
    )
}

fn rows_of(s: &ListSlice) -> Vec<J> {
    (0..s.len()).map(|i| entry(s, i)).collect()
}

/// Row `i` of an Arrow array as an oracle cell.
fn arrow_cell(a: &dyn Array, i: usize) -> J {
    if a.is_null(i) {
        return J::Null;
    }
    match a.data_type() {
        DataType::Int8 => json!(a.as_primitive::<Int8Type>().value(i)),
        DataType::Int16 => json!(a.as_primitive::<Int16Type>().value(i)),
        DataType::Int32 => json!(a.as_primitive::<Int32Type>().value(i)),
        DataType::Int64 => json!(a.as_primitive::<Int64Type>().value(i)),
        DataType::UInt8 => json!(a.as_primitive::<UInt8Type>().value(i)),
        DataType::UInt16 => json!(a.as_primitive::<UInt16Type>().value(i)),
        DataType::UInt32 => json!(a.as_primitive::<UInt32Type>().value(i)),
        DataType::UInt64 => json!(a.as_primitive::<UInt64Type>().value(i)),
        DataType::Float32 => json!(format!(
            "{:x}",
            a.as_primitive::<Float32Type>().value(i).to_bits()
        )),
        DataType::Float64 => json!(format!(
            "{:x}",
            a.as_primitive::<Float64Type>().value(i).to_bits()
        )),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => json!(a.as_string::<i64>().value(i)),
        DataType::List(_) => {
            let v = a.as_list::<i32>().value(i);
            J::Array((0..v.len()).map(|j| arrow_cell(v.as_ref(), j)).collect())
        }
        DataType::LargeList(_) => {
            let v = a.as_list::<i64>().value(i);
            J::Array((0..v.len()).map(|j| arrow_cell(v.as_ref(), j)).collect())
        }
        other => panic!("unexpected Arrow type {other}"),
    }
}

/// `LargeList(Int32)`-style short name of an Arrow type.
fn short(dt: &DataType) -> String {
    match dt {
        DataType::List(f) => format!("List({})", short(f.data_type())),
        DataType::LargeList(f) => format!("LargeList({})", short(f.data_type())),
        d => format!("{d:?}"),
    }
}

/// Every column of `table` read whole (our model), against `cols`.
fn compare_model(table: &Table, cols: &serde_json::Map<String, J>) {
    for c in table.all_columns() {
        let want = cols[c.name()]
            .get("rows")
            .unwrap_or(&cols[c.name()])
            .as_array()
            .unwrap();
        let got: Vec<J> = match c {
            TableColumn::List(l) => rows_of(&l.read(0..table.nrows()).unwrap()),
            TableColumn::Scalar(s) => {
                let sl = s.read(0..table.nrows()).unwrap();
                sl.values
                    .iter()
                    .zip(&sl.missing)
                    .map(|(v, m)| elem(v, *m))
                    .collect()
            }
        };
        assert_eq!(&got, want, "column {}", c.name());
    }
}

/// Every column through the Arrow export in batches of `batch` rows.
fn compare_arrow(table: &Table, cols: &serde_json::Map<String, J>, batch: u64) {
    let opts = ExportOptions {
        batch_rows: batch,
        ..Default::default()
    };
    let mut b = batches(table, None, 0..table.nrows(), &opts).unwrap();
    let schema = b.schema();
    let mut got: Vec<Vec<J>> = vec![Vec::new(); schema.fields().len()];
    while let Some(rb) = b.next_batch().unwrap() {
        for (k, col) in rb.columns().iter().enumerate() {
            got[k].extend((0..rb.num_rows()).map(|i| arrow_cell(col.as_ref(), i)));
        }
    }
    for (f, g) in schema.fields().iter().zip(&got) {
        let want = &cols[f.name()];
        let rows = want.get("rows").unwrap_or(want).as_array().unwrap();
        assert_eq!(g, rows, "Arrow column {}", f.name());
        if let Some(t) = want.get("arrow") {
            assert_eq!(short(f.data_type()), t.as_str().unwrap(), "{}", f.name());
        }
    }
}

#[test]
fn h5py_tables_read_as_written() {
    let (dir, exp) = oracle();
    for (file, t) in exp["tables"].as_object().unwrap() {
        let table = open(&dir.join(file), t["path"].as_str().unwrap());
        assert_eq!(table.nrows(), t["nrows"].as_u64().unwrap());
        let order: Vec<&str> = table.all_columns().iter().map(|c| c.name()).collect();
        let want: Vec<&str> = t["order"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(order, want, "{file}: logical order (column-order)");
        assert_eq!(table.ncols(), want.len());
        let cols = t["columns"].as_object().unwrap();
        compare_model(&table, cols);
        compare_arrow(&table, cols, 7);
        compare_arrow(&table, cols, 1 << 16);
        for c in table.list_columns() {
            if let Some(ty) = cols[c.name()].get("type") {
                assert_eq!(h5table::text::list_type_name(c), ty.as_str().unwrap());
            }
        }
    }
}

#[test]
fn row_ranges_and_projection() {
    let (dir, exp) = oracle();
    let t = &exp["tables"]["lists.h5"];
    let table = open(&dir.join("lists.h5"), t["path"].as_str().unwrap());
    let n = table.nrows();
    for r in [0..0, 0..1, 5..6, 10..100, 99..200, n - 7..n, 0..n] {
        for c in table.list_columns() {
            let want = &t["columns"][c.name()]["rows"].as_array().unwrap()
                [r.start as usize..r.end as usize];
            let got = rows_of(&c.read(r.clone()).unwrap());
            assert_eq!(got, want, "{} rows {r:?}", c.name());
        }
    }
    // Projection: list and scalar columns, in the order asked for.
    let names = ["tags", "id", "pairs", "flag"];
    let rb = read_batch(&table, Some(&names), 3..77, &ExportOptions::default()).unwrap();
    assert_eq!(rb.num_rows(), 74);
    for (k, name) in names.iter().enumerate() {
        assert_eq!(rb.schema().field(k).name(), name);
        let want = &t["columns"][*name]["rows"].as_array().unwrap()[3..77];
        let got: Vec<J> = (0..74)
            .map(|i| arrow_cell(rb.column(k).as_ref(), i))
            .collect();
        assert_eq!(got, want, "{name}");
    }
    // The list column's metadata.
    let ints = table.list_column("ints").unwrap();
    assert!(ints.nullable());
    assert_eq!(ints.units.as_deref(), Some("counts"));
    assert_eq!(ints.kind(), Some("OFFSETS"));
    assert!(!table.list_column("floats").unwrap().nullable());
    // Scalar-only operations name a list column as such.
    let e = table.column("ints").unwrap_err().to_string();
    assert!(e.contains("list column"), "{e}");
    // Text cells: JSON-like arrays, empty for a null list.
    let s = ints.read(0..n).unwrap();
    let want = t["columns"]["ints"]["rows"].as_array().unwrap();
    for (i, w) in want.iter().enumerate() {
        let cell = h5table::text::format_list_cell(&s, i);
        match w {
            J::Null => assert_eq!(cell, ""),
            J::Array(items) => {
                let text: Vec<String> = items
                    .iter()
                    .map(|x| match x {
                        J::Null => "null".to_string(),
                        x => x.to_string(),
                    })
                    .collect();
                assert_eq!(cell, format!("[{}]", text.join(", ")));
            }
            _ => unreachable!(),
        }
    }
    let tags = table.list_column("tags").unwrap().read(0..n).unwrap();
    let want = t["columns"]["tags"]["rows"].as_array().unwrap();
    for (i, w) in want.iter().enumerate() {
        let cell = h5table::text::format_list_cell(&tags, i);
        if !w.is_null() {
            // Strings as JSON string literals: the cell parses back as JSON.
            assert_eq!(&serde_json::from_str::<J>(&cell).unwrap(), w, "row {i}");
        }
    }
}

#[test]
fn h5col_written_table() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let exp: J =
        serde_json::from_slice(&std::fs::read(dir.join("h5col_lists.json")).unwrap()).unwrap();
    assert_eq!(exp["producer"], "h5col 0.4.0");
    let table = open(&dir.join("h5col_lists.h5"), exp["path"].as_str().unwrap());
    assert_eq!(table.nrows(), exp["nrows"].as_u64().unwrap());
    let order: Vec<&str> = table.all_columns().iter().map(|c| c.name()).collect();
    let want: Vec<&str> = exp["order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    assert_eq!(order, want);
    let cols = exp["columns"].as_object().unwrap();
    compare_model(&table, cols);
    compare_arrow(&table, cols, 6);
    // Types: uint64 offsets → LargeList; the boolean column → Boolean.
    let schema = h5table::arrow::schema(&table, None, &ExportOptions::default()).unwrap();
    let types: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| short(f.data_type()))
        .collect();
    assert_eq!(
        types,
        [
            "Int64",
            "LargeList(Int32)",
            "Boolean",
            "LargeList(LargeUtf8)",
            "LargeList(Float64)",
            "LargeList(LargeList(Int16))",
            "LargeList(Boolean)"
        ]
    );
    assert_eq!(
        schema.field(1).metadata().get("units").map(String::as_str),
        Some("mm")
    );
    let f = File::open(dir.join("h5col_lists.h5")).unwrap();
    let findings = check_file(&f, &Options::default()).unwrap();
    let errors: Vec<_> = findings
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
}

#[test]
fn check_calls_upstream_constructs_warnings() {
    let (dir, _) = oracle();
    let f = File::open(dir.join("lists.h5")).unwrap();
    let findings = check_file(&f, &Options::default()).unwrap();
    let errors: Vec<_> = findings
        .iter()
        .filter(|x| x.severity == Severity::Error)
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let lists = findings
        .iter()
        .filter(|x| x.message.contains("H5Col list column"))
        .count();
    assert_eq!(lists, 6, "{findings:#?}");
    assert!(
        findings
            .iter()
            .any(|x| x.path.ends_with("/flag") && x.message.contains("H5Col boolean column")),
        "{findings:#?}"
    );
    // --strict: HEP001 1.0 alone, where they are errors.
    let strict = check_file(
        &f,
        &Options {
            strict: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(strict.iter().any(|x| x.severity == Severity::Error));
    // uint32 OFFSETS and a uint8 MASK read, but break the draft's MUSTs.
    let f = File::open(dir.join("lenient.h5")).unwrap();
    let msgs: Vec<String> = check_file(&f, &Options::default())
        .unwrap()
        .into_iter()
        .filter(|x| x.severity == Severity::Error)
        .map(|x| x.message)
        .collect();
    assert!(msgs.iter().any(|m| m.contains("not uint64")), "{msgs:?}");
    assert!(
        msgs.iter().any(|m| m.contains("MASK has datatype")),
        "{msgs:?}"
    );
}

#[test]
fn damaged_list_columns_are_errors() {
    let (dir, exp) = oracle();
    let corrupt = exp["corrupt"].as_object().unwrap();
    assert!(corrupt.len() >= 10);
    for (file, c) in corrupt {
        let path = dir.join(file);
        let table = open(&path, c["path"].as_str().unwrap());
        let col = table.list_column(c["column"].as_str().unwrap()).unwrap();
        let n = table.nrows();
        let e = col.read(0..n).expect_err(file);
        match c["error"].as_str().unwrap() {
            "invalid" => assert!(
                matches!(&e, Error::Invalid { section, .. } if *section == h5table::list::SECTION),
                "{file}: {e}"
            ),
            "limit" => assert!(
                matches!(&e, Error::Hdf5(h) if h.kind() == h5fmt::ErrorKind::Limit),
                "{file}: {e}"
            ),
            other => panic!("{other}"),
        }
        // Every row range that covers the damage fails too, through Arrow as well.
        let mut b = batches(&table, None, 0..n, &ExportOptions::default()).unwrap();
        assert!(b.next_batch().is_err(), "{file}: Arrow export succeeded");
        // check names the problem (a span within the extents is conformant,
        // however large: only reading it is refused, by the read limit).
        if c["error"] == "limit" {
            continue;
        }
        let f = File::open(&path).unwrap();
        let findings = check_file(&f, &Options::default()).unwrap();
        assert!(
            findings
                .iter()
                .any(|x| x.severity == Severity::Error && x.section == h5table::list::SECTION),
            "{file}: {findings:#?}"
        );
    }
}
