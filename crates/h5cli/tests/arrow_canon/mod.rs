//! One Arrow value as the JSON the Python oracles write (tests/row_tables.py,
//! tests/anndata_oracle.py): null → `null`, NaN → `"nan"`, ±infinity →
//! `"inf"`/`"-inf"`, a dictionary value as its label, a fixed-size list as
//! an array, a struct as an object.

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::Array;
use arrow_schema::DataType;
use serde_json::{json, Value as J};

/// A float in the oracles' form.
pub fn float(x: f64) -> J {
    if x.is_nan() {
        json!("nan")
    } else if x.is_infinite() {
        json!(if x > 0.0 { "inf" } else { "-inf" })
    } else {
        json!(x)
    }
}

/// Row `i` of `a`.
pub fn canon(a: &dyn Array, i: usize) -> J {
    if a.is_null(i) {
        return J::Null;
    }
    macro_rules! p {
        ($t:ty) => {
            json!(a.as_primitive::<$t>().value(i))
        };
    }
    match a.data_type() {
        DataType::Int8 => p!(Int8Type),
        DataType::Int16 => p!(Int16Type),
        DataType::Int32 => p!(Int32Type),
        DataType::Int64 => p!(Int64Type),
        DataType::UInt8 => p!(UInt8Type),
        DataType::UInt16 => p!(UInt16Type),
        DataType::UInt32 => p!(UInt32Type),
        DataType::UInt64 => p!(UInt64Type),
        DataType::Float32 => float(f64::from(a.as_primitive::<Float32Type>().value(i))),
        DataType::Float64 => float(a.as_primitive::<Float64Type>().value(i)),
        DataType::Boolean => json!(a.as_boolean().value(i)),
        DataType::Utf8 => json!(a.as_string::<i32>().value(i)),
        DataType::Dictionary(..) => {
            let d = a.as_any_dictionary();
            canon(d.values().as_ref(), d.normalized_keys()[i])
        }
        DataType::FixedSizeList(..) => {
            let v = a.as_fixed_size_list().value(i);
            J::Array((0..v.len()).map(|j| canon(v.as_ref(), j)).collect())
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            J::Object(
                fields
                    .iter()
                    .zip(s.columns())
                    .map(|(f, c)| (f.name().clone(), canon(c.as_ref(), i)))
                    .collect(),
            )
        }
        t => panic!("unexpected Arrow type {t}"),
    }
}
