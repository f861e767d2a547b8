//! Values as text: what `h5 table cat` prints in its cells.

use crate::list::{ListColumn, ListElements, ListSlice, ListValues};
use crate::model::{Column, ColumnKind};
use alloc::format;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt::Write;
use h5fmt::data::value::Reference;
use h5fmt::Value;

/// Shortest text that reads back as the same `f64`.
pub fn format_f64(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// Shortest text that reads back as the same `f32`.
pub fn format_f32(x: f32) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        }
    } else {
        format!("{x:?}")
    }
}

/// Lower-case hex of bytes.
pub fn hex(b: &[u8]) -> String {
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

/// A value as text, whatever its column: numbers in shortest round-trip
/// form, strings as they are, enums by member name, opaque bytes in hex,
/// compounds and arrays as `(a, b, …)`.
pub fn format_value(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::UInt(u) => u.to_string(),
        Value::BigInt(i) => i.to_string(),
        Value::BigUInt(u) => u.to_string(),
        Value::F16(b) => format_f32(h5fmt::data::convert::f16_to_f64(*b) as f32),
        Value::F32(x) => format_f32(*x),
        Value::F64(x) => format_f64(*x),
        Value::F128(b) | Value::NonStandardFloat(b) => format!("0x{b:x}"),
        Value::Str(s) => s.clone(),
        Value::RawStr(b) => String::from_utf8_lossy(b).into_owned(),
        Value::Opaque(b) => hex(b),
        Value::Enum { code, name } => name.clone().unwrap_or_else(|| code.to_string()),
        Value::Compound(fields) => {
            let parts: Vec<String> = fields.iter().map(|(_, v)| format_value(v)).collect();
            format!("({})", parts.join(", "))
        }
        Value::Array(items) | Value::Vlen(items) => {
            let parts: Vec<String> = items.iter().map(format_value).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Ref(r) => match r {
            Reference::Null => "null".into(),
            Reference::Object(a) => format!("object 0x{:x}", a.0),
            Reference::Region { obj, .. } => format!("region of 0x{:x}", obj.0),
            Reference::Attribute { obj, name } => format!("attribute {name:?} of 0x{:x}", obj.0),
            Reference::External { file } => format!("external {file:?}"),
        },
        Value::Time(t) => t.to_string(),
        Value::Complex(re, im) => format!("({}, {})", format_value(re), format_value(im)),
    }
}

/// The integer code of an integer value.
pub fn as_code(v: &Value) -> Option<i128> {
    match v {
        Value::Int(i) => Some(i128::from(*i)),
        Value::UInt(u) => Some(i128::from(*u)),
        Value::BigInt(i) => Some(*i),
        Value::BigUInt(u) => i128::try_from(*u).ok(),
        Value::Enum { code, .. } => Some(*code),
        _ => None,
    }
}

/// A cell of `column` as `h5 table cat` prints it: empty when missing, a
/// categorical code as its label, everything else as [`format_value`].
pub fn format_cell(column: &Column, v: &Value, missing: bool) -> String {
    if missing {
        return String::new();
    }
    if column.kind() == ColumnKind::Categorical {
        if let Some(cats) = &column.categories {
            if let Some(label) = as_code(v)
                .and_then(|c| usize::try_from(c).ok())
                .and_then(|i| cats.labels.get(i))
            {
                return format_value(label);
            }
        }
    }
    format_value(v)
}

/// A string as a JSON string literal (quotes, backslashes and control
/// characters escaped).
pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Entry `i` of a list column slice as `h5 table cat` prints it: empty for
/// a null list, else `[e0, e1, …]` with numbers as [`format_value`], strings
/// as JSON string literals, a missing element as `null`, and nested lists
/// nested (`[[1, 2], [], null]`).
pub fn format_list_cell(slice: &ListSlice, i: usize) -> String {
    if slice.missing.get(i).copied().unwrap_or(true) {
        return String::new();
    }
    let mut out = String::new();
    push_list(&mut out, slice, i);
    out
}

fn push_list(out: &mut String, slice: &ListSlice, i: usize) {
    if slice.missing.get(i).copied().unwrap_or(true) {
        out.push_str("null");
        return;
    }
    out.push('[');
    for (k, j) in slice.range(i).unwrap_or(0..0).enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        match &slice.elements {
            ListElements::Lists(inner) => push_list(out, inner, j),
            ListElements::Values(v) => match (v.values.get(j), v.missing.get(j)) {
                (Some(_), Some(true)) | (None, _) => out.push_str("null"),
                (Some(Value::Str(s)), _) => out.push_str(&json_string(s)),
                (Some(Value::RawStr(b)), _) => {
                    out.push_str(&json_string(&String::from_utf8_lossy(b)))
                }
                (Some(x), _) => out.push_str(&format_value(x)),
            },
        }
    }
    out.push(']');
}

/// The type of a list column, as `h5 table schema` prints it:
/// `list<float32>`, `list<string>` (a `STRING_VALUES` group),
/// `list<list<int16>>`; `list<?>` when the column cannot be read.
pub fn list_type_name(column: &ListColumn) -> String {
    fn level(l: &crate::list::ListLevel) -> String {
        let inner = match l.values() {
            ListValues::Leaf(c) => dtype_name(c.dtype()),
            ListValues::Strings(_) => "string".into(),
            ListValues::Lists(n) => level(n),
        };
        format!("list<{inner}>")
    }
    match column.layout() {
        Ok(l) => level(l),
        Err(_) => "list<?>".into(),
    }
}

/// A short name of a datatype, numpy-like: `int32`, `>float64`, `string[8,nullpad,utf8]`,
/// `vlen-string[utf8]`, `enum[int8]{…}`, `opaque[8]`, `compound{x:float32,…}`.
pub fn dtype_name(dt: &h5fmt::Datatype) -> String {
    use h5fmt::format::datatype::{ByteOrder, CharSet, StringPad};
    let be = |o: &ByteOrder| if *o == ByteOrder::Big { ">" } else { "" };
    let cs = |c: &CharSet| if *c == CharSet::Utf8 { "utf8" } else { "ascii" };
    match dt {
        h5fmt::Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => format!(
            "{}{}int{}",
            be(order),
            if *signed { "" } else { "u" },
            size * 8
        ),
        h5fmt::Datatype::Float { size, order, .. } => format!("{}float{}", be(order), size * 8),
        h5fmt::Datatype::String { size, pad, cset } => {
            let p = match pad {
                StringPad::NullTerm => "nullterm",
                StringPad::NullPad => "nullpad",
                StringPad::SpacePad => "spacepad",
            };
            format!("string[{size},{p},{}]", cs(cset))
        }
        h5fmt::Datatype::VarLenString { cset, .. } => format!("vlen-string[{}]", cs(cset)),
        h5fmt::Datatype::Enum { base, members } => {
            let names: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            format!("enum[{}]{{{}}}", dtype_name(base), names.join(","))
        }
        h5fmt::Datatype::Opaque { size, tag } if tag.is_empty() => format!("opaque[{size}]"),
        h5fmt::Datatype::Opaque { size, tag } => format!("opaque[{size},{tag:?}]"),
        h5fmt::Datatype::Compound { members, .. } => {
            let f: Vec<String> = members
                .iter()
                .map(|m| format!("{}:{}", m.name, dtype_name(&m.dtype)))
                .collect();
            format!("compound{{{}}}", f.join(","))
        }
        h5fmt::Datatype::Array { dims, base } => format!("array{dims:?}[{}]", dtype_name(base)),
        h5fmt::Datatype::VarLenSequence { base, .. } => format!("vlen[{}]", dtype_name(base)),
        h5fmt::Datatype::Reference { .. } => "reference".into(),
        h5fmt::Datatype::Bitfield { size, .. } => format!("bitfield[{size}]"),
        h5fmt::Datatype::Time { size, .. } => format!("time[{size}]"),
        h5fmt::Datatype::Complex { base, .. } => format!("complex[{}]", dtype_name(base)),
    }
}
