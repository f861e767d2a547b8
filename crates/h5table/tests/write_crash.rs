//! Every write point of every `TableEditor` operation: the editor is made
//! to fail at its n-th write (as if the process died there), for n = 0, 1,
//! … until the operation completes. After each cut the file must open in
//! our reader and in h5py with the table as it was before the operation
//! (NROWS and rows `[0, NROWS)`), or as it is after it.

mod common;

use h5fmt::format::datatype::{CharSet, Datatype, StringPad};
use h5fmt::{File, FileEditor, FileWriter, Value};
use h5table::write::{ColumnData, ColumnSpec, TableEditor, TableWriter};
use h5table::Table;
use std::path::{Path, PathBuf};
use std::process::Command;

const T: &str = "/t";

/// NROWS and the values of `a`, `f`, `s` (the columns no operation drops).
type Rows = (u64, Vec<Value>, Vec<Value>, Vec<Value>);

fn rows(path: &Path) -> Rows {
    let file = File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let t = Table::open(&file.group(T).unwrap()).unwrap();
    let n = t.nrows();
    let col = |c: &str| t.column(c).unwrap().read(0..n).unwrap().values;
    (n, col("a"), col("f"), col("s"))
}

fn base(path: &Path) {
    let mut w = FileWriter::create(path).unwrap();
    TableWriter::new()
        .column(ColumnSpec::new("a", Datatype::int_le(8, true)).chunk(4))
        .column(
            ColumnSpec::new("f", Datatype::float_le(8))
                .chunk(3)
                .deflate(1),
        )
        .column(ColumnSpec::new("s", Datatype::vlen_utf8()).chunk(2))
        .column(
            ColumnSpec::new("k", Datatype::int_le(1, true))
                .chunk(4)
                .categorical("ks"),
        )
        .column(ColumnSpec::new(
            "fx",
            Datatype::String {
                size: 3,
                pad: StringPad::NullPad,
                cset: CharSet::Ascii,
            },
        ))
        .categories(
            "ks",
            Datatype::int_le(4, true),
            ColumnData::Int32(vec![10, 20]),
            false,
        )
        .index_columns(&["k", "a"])
        .write_at(
            &mut w,
            T,
            &[
                ("a", ColumnData::Int64(vec![1, 2, 3, 4, 5])),
                ("f", ColumnData::Float64(vec![0.5, 1.5, 2.5, 3.5, 4.5])),
                ("s", ColumnData::strs(&["a", "b", "c", "d", "e"])),
                ("k", ColumnData::Int8(vec![0, 1, 0, 1, 0])),
                ("fx", ColumnData::strs(&["x", "y", "z", "u", "v"])),
            ],
        )
        .unwrap();
    w.close().unwrap();
}

type Op = fn(&mut TableEditor<'_>) -> h5table::Result<()>;

fn ops() -> Vec<(&'static str, Op)> {
    vec![
        ("append", |t| {
            t.append(&[
                ("a", ColumnData::Int64(vec![6, 7, 8])),
                ("f", ColumnData::Float64(vec![5.5, 6.5, 7.5])),
                ("s", ColumnData::strs(&["ff", "gg", "hh"])),
                ("k", ColumnData::Int8(vec![1, 1, 0])),
                ("fx", ColumnData::strs(&["p", "q", "r"])),
            ])
        }),
        ("truncate", |t| t.truncate(2)),
        ("update", |t| {
            t.update("s", 1, ColumnData::strs(&["B", "C"]))
        }),
        ("reserve", |t| t.reserve(9)),
        ("add_column", |t| {
            t.add_column(
                ColumnSpec::new("n", Datatype::int_le(2, false)).chunk(2),
                Some(ColumnData::UInt16(vec![9, 8, 7, 6, 5])),
            )
        }),
        ("drop_index_column", |t| t.drop_column("k")),
        ("drop_column", |t| t.drop_column("fx")),
    ]
}

const H5PY: &str = r#"
import sys, h5py
for p in sys.argv[1:]:
    with h5py.File(p, 'r') as f:
        t = f['/t']
        n = int(t.attrs['NROWS'])
        a = [int(x) for x in t['a'][:n]]
        fl = [float(x) for x in t['f'][:n]]
        s = [x.decode() for x in t['s'][:n]]
        print(p, n, a, fl, s)
"#;

#[test]
fn every_write_point_of_every_operation_leaves_the_old_or_the_new_table() {
    let py = common::python();
    let dir = common::tmp("crash");
    std::fs::create_dir_all(&dir).unwrap();
    let src = dir.join("base.h5");
    base(&src);
    let before = rows(&src);
    let mut files: Vec<(PathBuf, Rows, Rows)> = Vec::new();
    for (name, op) in ops() {
        // The complete operation, for the state after it.
        let done = dir.join(format!("{name}-done.h5"));
        std::fs::copy(&src, &done).unwrap();
        {
            let mut ed = FileEditor::open(&done).unwrap();
            let mut t = TableEditor::open(&mut ed, T).unwrap();
            op(&mut t).unwrap();
        }
        let after = rows(&done);
        let mut n = 0usize;
        loop {
            let p = dir.join(format!("{name}-cut{n}.h5"));
            std::fs::copy(&src, &p).unwrap();
            let ok = {
                let mut ed = FileEditor::open(&p).unwrap();
                ed.fail_writes_after(Some(n));
                let mut t = TableEditor::open(&mut ed, T).unwrap();
                op(&mut t).is_ok()
            };
            let got = rows(&p);
            assert!(
                got == before || got == after,
                "{name}, cut before write {n}: the table is neither the old nor the new one\n\
                 got    {got:?}\nbefore {before:?}\nafter  {after:?}"
            );
            files.push((p, before.clone(), after.clone()));
            if ok {
                break;
            }
            n += 1;
            assert!(n < 10_000, "{name}: never completes");
        }
        eprintln!("{name}: {n} write points");
    }
    // h5py opens every cut file with the old or the new rows.
    let fmt = |r: &Rows| {
        let v = |x: &[Value]| -> String {
            let items: Vec<String> = x
                .iter()
                .map(|v| match v {
                    Value::Int(i) => i.to_string(),
                    Value::F64(f) => format!("{f:?}"),
                    Value::Str(s) => format!("'{s}'"),
                    o => format!("{o:?}"),
                })
                .collect();
            format!("[{}]", items.join(", "))
        };
        format!("{} {} {} {}", r.0, v(&r.1), v(&r.2), v(&r.3))
    };
    for batch in files.chunks(150) {
        let out = Command::new(&py)
            .arg("-c")
            .arg(H5PY)
            .args(batch.iter().map(|(p, _, _)| p))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "h5py: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        for (l, (p, b, a)) in text.lines().zip(batch) {
            let rest = l.strip_prefix(&format!("{} ", p.display())).unwrap();
            assert!(
                rest == fmt(b) || rest == fmt(a),
                "{}: h5py sees {rest}\nbefore {}\nafter  {}",
                p.display(),
                fmt(b),
                fmt(a)
            );
        }
        assert_eq!(text.lines().count(), batch.len());
    }
    let _ = std::fs::remove_dir_all(&dir);
}
