//! Shared by the Arrow tests: the Python oracle and canonical cells of Arrow arrays.
#![allow(dead_code)]

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::Array;
use arrow_schema::DataType;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The venv's Python: `$H5FMT_VENV/bin/python`, else `/work/main/.venv/bin/python`.
/// Panics (the test fails) when neither exists.
pub fn python() -> PathBuf {
    let mut tried = Vec::new();
    if let Ok(v) = std::env::var("H5FMT_VENV") {
        let p = PathBuf::from(v).join("bin/python");
        if p.exists() {
            return p;
        }
        tried.push(p);
    }
    let p = PathBuf::from("/work/main/.venv/bin/python");
    if p.exists() {
        return p;
    }
    tried.push(p);
    panic!("no oracle Python (tried {tried:?}); run `cargo xtask venv` or set H5FMT_VENV");
}

/// Run a Python script file with arguments, returning its stdout (panics on failure).
pub fn run_python(script: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new(python())
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{} {args:?} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// h5py's reading of a table (see `arrow_oracle.py`).
pub fn oracle(file: &Path, table: &str, expected: Option<&Path>) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/arrow_oracle.py");
    let mut args = vec![file.to_str().unwrap(), table];
    if let Some(e) = expected {
        args.push(e.to_str().unwrap());
    }
    serde_json::from_slice(&run_python(&script, &args)).expect("oracle JSON")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Canonical cells (as `arrow_oracle.py` writes them) of an Arrow array.
pub fn cells(a: &dyn Array) -> Vec<Value> {
    (0..a.len()).map(|i| cell(a, i)).collect()
}

/// Canonical cell `i` of an Arrow array.
pub fn cell(a: &dyn Array, i: usize) -> Value {
    if a.is_null(i) {
        return Value::Null;
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
        DataType::Float16 => json!(format!(
            "{:x}",
            a.as_primitive::<Float16Type>().value(i).to_bits()
        )),
        DataType::Float32 => json!(format!(
            "{:x}",
            a.as_primitive::<Float32Type>().value(i).to_bits()
        )),
        DataType::Float64 => json!(format!(
            "{:x}",
            a.as_primitive::<Float64Type>().value(i).to_bits()
        )),
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => json!(a.as_string::<i64>().value(i)),
        DataType::Binary => json!(hex(a.as_binary::<i32>().value(i))),
        DataType::FixedSizeBinary(_) => json!(hex(a.as_fixed_size_binary().value(i))),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::Dictionary(k, _) if **k == DataType::Int32 => {
            let d = a.as_dictionary::<Int32Type>();
            let key = d.keys().value(i) as usize;
            cell(d.values().as_ref(), key)
        }
        DataType::Struct(_) => {
            let s = a.as_struct();
            Value::Array(s.columns().iter().map(|c| cell(c.as_ref(), i)).collect())
        }
        other => panic!("no canonical cell for Arrow type {other}"),
    }
}
