//! `h5 table import` / `append` / `cat --format parquet` round trips, with
//! pyarrow as the oracle: pyarrow writes the input Parquet (and CSV), our
//! export is read back by pyarrow and compared value by value, nulls included.

use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> PathBuf {
    let venv = std::env::var("H5FMT_VENV")
        .unwrap_or_else(|_| concat!(env!("CARGO_MANIFEST_DIR"), "/../../.venv").into());
    let p = PathBuf::from(venv).join("bin/python");
    assert!(
        p.exists(),
        "{} missing: run `cargo xtask venv`",
        p.display()
    );
    p
}

fn py(script: &str, args: &[&Path]) -> String {
    let out = Command::new(python())
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "python: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn h5(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .unwrap()
}

/// `h5 table import H5F:/t --from SRC --batch-rows BATCH`, then `h5 table check H5F`
/// (with `--strict` when `strict`); both must succeed.
fn import_and_check(h5f: &Path, src: &Path, batch: &str, strict: bool) {
    let spec = format!("{}:/t", h5f.display());
    let from = src.to_str().unwrap();
    let o = h5(&[
        "table",
        "import",
        &spec,
        "--from",
        from,
        "--batch-rows",
        batch,
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let mut check = vec!["table", "check", h5f.to_str().unwrap()];
    if strict {
        check.insert(2, "--strict");
    }
    let o = h5(&check);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
}

const MAKE: &str = r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng(5)
n = 70000
def nulls(a, p):
    m = rng.random(n) < p
    return pa.array(a, mask=m)
t = pa.table({
    "i8": nulls(rng.integers(-100, 100, n).astype(np.int8), 0.1),
    "i64": nulls(rng.integers(-2**62, 2**62, n), 0.0),
    "u32": nulls(rng.integers(0, 2**32 - 1, n).astype(np.uint32), 0.05),
    "u64": pa.array(rng.integers(0, 2**63, n).astype(np.uint64) * 2),
    "f32": nulls(rng.normal(size=n).astype(np.float32), 0.1),
    "f64": nulls(np.where(rng.random(n) < 0.01, np.nan, rng.normal(size=n)), 0.1),
    "flag": nulls(rng.random(n) < 0.5, 0.2),
    "name": pa.array([None if rng.random() < 0.1 else "s%d_é" % rng.integers(0, 5000) for _ in range(n)]),
})
pq.write_table(t, sys.argv[1], row_group_size=20000)
import pyarrow.csv as pcsv; pcsv.write_csv(t.slice(0, 1000), sys.argv[2])
"#;

const COMPARE: &str = r#"
import sys, pyarrow as pa, pyarrow.parquet as pq, pyarrow.compute as pc
a = pq.read_table(sys.argv[1])
b = pq.read_table(sys.argv[2])
reps = int(sys.argv[3].name if hasattr(sys.argv[3], "name") else sys.argv[3])
assert b.num_rows == a.num_rows * reps, (a.num_rows, b.num_rows)
assert b.column_names == a.column_names, b.column_names
for name in a.column_names:
    x = pa.concat_arrays([a[name].combine_chunks()] * reps)
    y = b[name].combine_chunks()
    if pa.types.is_boolean(x.type):
        y = pc.cast(y, pa.bool_())  # booleans are uint8 0/1 columns (HEP001 §8.5)
    elif x.type != y.type:
        raise SystemExit("%s: type %s, want %s" % (name, y.type, x.type))
    assert x.null_count == y.null_count, (name, x.null_count, y.null_count)
    norm = lambda v: "nan" if isinstance(v, float) and v != v else v
    xs, ys = [norm(v) for v in x.to_pylist()], [norm(v) for v in y.to_pylist()]
    bad = [i for i in range(len(xs)) if xs[i] != ys[i]]
    assert not bad, (name, bad[:3], [xs[i] for i in bad[:3]], [ys[i] for i in bad[:3]])
print("ok", b.num_rows)
"#;

#[test]
fn parquet_import_export_round_trip() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("table_import");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (src, csv, h5f, back) = (
        dir.join("in.parquet"),
        dir.join("in.csv"),
        dir.join("t.h5"),
        dir.join("out.parquet"),
    );
    py(MAKE, &[&src, &csv]);
    let spec = format!("{}:/runs/t", h5f.display());
    let o = h5(&[
        "table",
        "import",
        &spec,
        "--from",
        src.to_str().unwrap(),
        "--batch-rows",
        "30000",
        "--chunk-rows",
        "8192",
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // the result is a conformant table of 70000 rows
    let o = h5(&["table", "check", h5f.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stdout));
    let o = h5(&["table", "ls", h5f.to_str().unwrap()]);
    assert_eq!(String::from_utf8_lossy(&o.stdout).trim(), "/runs/t 70000 8");
    let o = h5(&[
        "table",
        "cat",
        &spec,
        "--format",
        "parquet",
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let one = Path::new("1");
    assert!(py(COMPARE, &[&src, &back, one]).starts_with("ok 70000"));
    // append the same rows again: NROWS doubles, values follow
    let o = h5(&["table", "append", &spec, "--from", src.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = h5(&[
        "table",
        "cat",
        &spec,
        "--format",
        "parquet",
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    assert!(py(COMPARE, &[&src, &back, Path::new("2")]).starts_with("ok 140000"));
    // a second import to the same path is refused, the file unchanged
    let before = std::fs::read(&h5f).unwrap();
    let o = h5(&["table", "import", &spec, "--from", src.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("already"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(std::fs::read(&h5f).unwrap(), before);
    // CSV import: the first 1000 rows, types inferred
    let spec2 = format!("{}:/from_csv", h5f.display());
    let o = h5(&["table", "import", &spec2, "--from", csv.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = h5(&[
        "table",
        "cat",
        &spec2,
        "--rows",
        "0:3",
        "--columns",
        "i64,name",
    ]);
    let got = String::from_utf8(o.stdout).unwrap();
    let want = py(
        "import sys, pyarrow.parquet as pq; t = pq.read_table(sys.argv[1]).slice(0, 3).to_pylist()\nprint('i64,name'); [print('%s,%s' % (r['i64'], r['name'] or '')) for r in t]",
        &[&src],
    );
    assert_eq!(got, want);
}

/// Timestamps (naive and with a time zone, every unit) import as int64
/// counts with UDUNITS-2 `units`, dictionaries as strings: h5py reads the
/// columns pyarrow wrote, and the Parquet export gives the counts back.
#[test]
fn timestamp_and_dictionary_import() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("table_import_ts");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let (src, h5f, back) = (
        dir.join("in.parquet"),
        dir.join("t.h5"),
        dir.join("out.parquet"),
    );
    py(
        r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
rng = np.random.default_rng(9)
n = 5000
m = lambda p: rng.random(n) < p
t = pa.table({
    "s": pa.array(rng.integers(-2**40, 2**40, n), type=pa.timestamp("s"), mask=m(0.1)),
    "ms": pa.array(rng.integers(0, 2**50, n), type=pa.timestamp("ms", tz="Europe/Paris")),
    "us": pa.array(rng.integers(0, 2**60, n), type=pa.timestamp("us", tz="UTC"), mask=m(0.2)),
    "ns": pa.array(rng.integers(-2**62, 2**62, n), type=pa.timestamp("ns")),
    "cat": pa.DictionaryArray.from_arrays(
        pa.array(rng.integers(0, 3, n).astype(np.int8), mask=m(0.3)), pa.array(["a", "bé", "c"])),
})
pq.write_table(t, sys.argv[1], row_group_size=1500)
"#,
        &[&src],
    );
    let spec = format!("{}:/t", h5f.display());
    import_and_check(&h5f, &src, "2000", false);
    let o = h5(&[
        "table",
        "cat",
        &spec,
        "--format",
        "parquet",
        "-o",
        back.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let out = py(
        r#"
import sys, hdf5plugin, h5py, numpy as np, pyarrow as pa, pyarrow.parquet as pq, pyarrow.compute as pc  # zstd filter
a = pq.read_table(sys.argv[1])
b = pq.read_table(sys.argv[3])
words = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
with h5py.File(sys.argv[2], "r") as f:
    g = f["t"]
    for name in words:
        x = a[name].combine_chunks()
        unit = words[x.type.unit]  # Parquet stores timestamp[s] as milliseconds
        d = g[name]
        assert d.dtype == np.dtype("<i8"), (name, d.dtype)
        fill = d.fillvalue
        assert fill == np.iinfo(np.int64).min + 1, (name, fill)
        want = np.where(x.is_null().to_numpy(zero_copy_only=False), fill,
                        x.view(pa.int64()).fill_null(0).to_numpy())
        assert (d[:] == want).all(), name
        utc = " UTC" if x.type.tz else ""
        text = lambda v: v.decode() if isinstance(v, bytes) else v
        assert text(d.attrs["units"]) == unit + " since 1970-01-01 00:00:00" + utc, d.attrs["units"]
        assert text(d.attrs["units_vocabulary"]) == "UDUNITS-2"
        y = b[name].combine_chunks()
        assert y.type == pa.int64(), y.type
        assert y.equals(x.view(pa.int64())), name
    labels = [v.decode() for v in g["cat"][:]]
    want = [v or "" for v in a["cat"].to_pylist()]
    assert labels == want
    assert b["cat"].combine_chunks().equals(pc.cast(a["cat"].combine_chunks(), pa.string()))
print("ok")
"#,
        &[&src, &h5f, &back],
    );
    assert_eq!(out.trim(), "ok");
}

/// A struct column (numbers, a boolean, a timestamp, a fixed-size list and
/// a nested struct, some rows null) imports as one compound column that
/// `h5 table check --strict` accepts and h5py reads field by field as
/// pyarrow wrote it, a null row as the whole fill record. A null field in a
/// non-null struct, a string field and a row equal to the fill record are
/// refused, naming the column.
#[test]
fn struct_columns_import_as_compounds() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("table_import_struct");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    py(
        r#"
import sys, numpy as np, pyarrow as pa, pyarrow.parquet as pq
d = sys.argv[1]
rng = np.random.default_rng(12)
n = 3000
inner = pa.StructArray.from_arrays(
    [pa.array(rng.integers(-100, 100, n).astype(np.int8)), pa.array(rng.normal(size=n))], ["z", "w"])
s = pa.StructArray.from_arrays([
    pa.array(rng.integers(-2**31, 2**31 - 1, n).astype(np.int32)),
    pa.array(rng.normal(size=n).astype(np.float32)),
    pa.array(rng.random(n) < 0.5),
    pa.array(rng.integers(0, 2**50, n), type=pa.timestamp("us")),
    pa.FixedSizeListArray.from_arrays(pa.array(rng.integers(0, 60000, 2 * n).astype(np.uint16)), 2),
    inner], ["a", "f", "flag", "ts", "pair", "inner"], mask=pa.array(rng.random(n) < 0.1))
pq.write_table(pa.table({"id": np.arange(n), "s": s}), d + "/ok.parquet", row_group_size=1000)
child_null = pa.StructArray.from_arrays([pa.array([1, None, 3]), pa.array([0.5, 1.5, 2.5])], ["a", "b"])
pq.write_table(pa.table({"s": child_null}), d + "/child_null.parquet")
text = pa.StructArray.from_arrays([pa.array([1, 2]), pa.array(["x", "y"])], ["a", "name"])
pq.write_table(pa.table({"s": text}), d + "/text.parquet")
# Row 1 is the fill record: int64 and float64 Table 1 sentinels.
fill = pa.StructArray.from_arrays(
    [pa.array([1, -2**63 + 1]), pa.array([0.5, 9.969209968386869e+36])], ["a", "b"])
pq.write_table(pa.table({"s": fill}), d + "/fill.parquet")
pq.write_table(pa.table({"s": fill.slice(0, 1)}), d + "/first.parquet")
"#,
        &[&dir],
    );
    let (h5f, src) = (dir.join("t.h5"), dir.join("ok.parquet"));
    import_and_check(&h5f, &src, "700", true);
    let out = py(
        r#"
import sys, hdf5plugin, h5py, numpy as np, pyarrow.parquet as pq
a = pq.read_table(sys.argv[1])["s"].combine_chunks()
with h5py.File(sys.argv[2], "r") as f:
    d = f["t/s"]
    assert d.dtype.names == ("a", "f", "flag", "ts", "pair", "inner"), d.dtype
    assert d.dtype["inner"].names == ("z", "w") and d.dtype["pair"].shape == (2,), d.dtype
    rows, fill = d[:], d.fillvalue
    w = np.zeros((), d.dtype)  # each field's own fill: Table 1 sentinels, 2 for a boolean
    w["a"], w["f"], w["flag"], w["ts"] = -2**31 + 1, 9.969209968386869e+36, 2, -2**63 + 1
    w["pair"] = 65535; w["inner"]["z"] = -127; w["inner"]["w"] = 9.969209968386869e+36
    assert fill.tobytes() == w.tobytes(), fill
    for i, v in enumerate(a.to_pylist()):
        r = rows[i]
        if v is None:
            assert r.tobytes() == fill.tobytes(), i
            continue
        assert r["a"] == v["a"] and r["f"] == np.float32(v["f"]) and r["flag"] == int(v["flag"]), i
        assert r["ts"] == a.field("ts")[i].value and list(r["pair"]) == v["pair"], i
        assert r["inner"]["z"] == v["inner"]["z"] and r["inner"]["w"] == v["inner"]["w"], i
print("ok", a.null_count)
"#,
        &[&src, &h5f],
    );
    assert!(out.starts_with("ok "), "{out}");
    for (file, want) in [
        (
            "child_null",
            "column \"s\": field \"a\": row 1 is null inside a non-null struct",
        ),
        ("text", "column \"s\": field \"name\": Utf8 inside a struct"),
        ("fill", "column \"s\": row 1 holds the fill value"),
    ] {
        let out = format!("{}:/t", dir.join(format!("{file}.h5")).display());
        let src = dir.join(format!("{file}.parquet"));
        let o = h5(&["table", "import", &out, "--from", src.to_str().unwrap()]);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{file}: {err}");
        assert!(err.contains(want), "{file}: {err}");
    }
    // `h5 table append` checks against the table's own fill record.
    let out = format!("{}:/t", dir.join("append.h5").display());
    let from = |f: &str| dir.join(f).to_str().unwrap().to_string();
    let o = h5(&["table", "import", &out, "--from", &from("first.parquet")]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = h5(&["table", "append", &out, "--from", &from("fill.parquet")]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{err}");
    assert!(
        err.contains("column \"s\": row 1 holds the fill value"),
        "{err}"
    );
}
