//! Human-readable listings and dumps: `h5 ls`, `h5 dump`, `h5 dump --json`.

use h5fmt::data::{Reference, Value};
use h5fmt::format::datatype::{ByteOrder, Datatype, RefKind};
use h5fmt::format::message::{LinkTarget, SpaceKind};
use h5fmt::{Attribute, File, Object};
use serde_json::{json, Map, Value as Json};
use std::collections::HashSet;
use std::io::Write;

fn io(e: std::io::Error) -> String {
    e.to_string()
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// A dataspace as `{d0/max0, d1/max1}` (`Inf` for unlimited).
fn space_text(shape: &[u64], max: Option<Vec<Option<u64>>>, kind: SpaceKind) -> String {
    match kind {
        SpaceKind::Null => "NULL".into(),
        SpaceKind::Scalar => "SCALAR".into(),
        SpaceKind::Simple => {
            let max = max.unwrap_or_default();
            let parts: Vec<String> = shape
                .iter()
                .enumerate()
                .map(|(i, d)| match max.get(i) {
                    Some(Some(m)) if m == d => d.to_string(),
                    Some(Some(m)) => format!("{d}/{m}"),
                    Some(None) => format!("{d}/Inf"),
                    None => d.to_string(),
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
    }
}

/// `h5 ls`: one line per member: name, kind, dataspace.
///
/// # Errors
/// A one-line message naming the object path.
pub fn ls(file: &File, path: &str, recursive: bool, out: &mut dyn Write) -> Result<(), String> {
    let start = file.object(path).map_err(|e| e.to_string())?;
    let Object::Group(g) = start else {
        writeln!(out, "{}", line(path, &start)).map_err(io)?;
        return Ok(());
    };
    let mut seen = HashSet::new();
    seen.insert(g.addr());
    let mut stack = vec![(path.to_string(), g)];
    while let Some((gpath, g)) = stack.pop() {
        let links = g.links().map_err(|e| e.to_string())?;
        let mut subgroups = Vec::new();
        for l in links {
            let p = join(&gpath, &l.name);
            let shown = if recursive { p.clone() } else { l.name.clone() };
            match l.target {
                LinkTarget::Hard(addr) => {
                    let obj = file.object_at(addr, &p).map_err(|e| e.to_string())?;
                    writeln!(out, "{}", line(&shown, &obj)).map_err(io)?;
                    if let Object::Group(sg) = obj {
                        if recursive && seen.insert(sg.addr()) {
                            subgroups.push((p, sg));
                        }
                    }
                }
                LinkTarget::Soft(t) => {
                    writeln!(out, "{shown:<24} Soft Link {{{t}}}").map_err(io)?
                }
                LinkTarget::External { file: f, path: t } => {
                    writeln!(out, "{shown:<24} External Link {{{f}/{t}}}").map_err(io)?
                }
                LinkTarget::UserDefined { class, .. } => {
                    writeln!(out, "{shown:<24} User-defined Link (class {class})").map_err(io)?
                }
            }
        }
        subgroups.reverse();
        stack.extend(subgroups);
    }
    Ok(())
}

fn line(name: &str, obj: &Object) -> String {
    match obj {
        Object::Group(_) => format!("{name:<24} Group"),
        Object::Dataset(d) => {
            format!(
                "{name:<24} Dataset {}",
                space_text(d.shape(), d.maxshape(), d.space().kind)
            )
        }
        Object::Datatype(_) => format!("{name:<24} Type"),
    }
}

/// An h5dump-style name of a datatype.
pub fn type_name(t: &Datatype) -> String {
    let ord = |o: &ByteOrder| match o {
        ByteOrder::Little => "LE",
        ByteOrder::Big => "BE",
        ByteOrder::Vax => "VAX",
    };
    match t {
        Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => {
            format!(
                "H5T_STD_{}{}{}",
                if *signed { "I" } else { "U" },
                size * 8,
                ord(order)
            )
        }
        Datatype::Float { size, order, .. } => format!("H5T_IEEE_F{}{}", size * 8, ord(order)),
        Datatype::Time { size, .. } => format!("H5T_TIME ({size} bytes)"),
        Datatype::String { size, pad, cset } => {
            format!("H5T_STRING {{ STRSIZE {size}; {pad:?}; {cset:?} }}")
        }
        Datatype::VarLenString { pad, cset, .. } => {
            format!("H5T_STRING {{ STRSIZE H5T_VARIABLE; {pad:?}; {cset:?} }}")
        }
        Datatype::Bitfield { size, order, .. } => format!("H5T_STD_B{}{}", size * 8, ord(order)),
        Datatype::Opaque { size, tag } => format!("H5T_OPAQUE {{ {size} bytes, tag {tag:?} }}"),
        Datatype::Compound { members, .. } => {
            let ms: Vec<String> = members
                .iter()
                .map(|m| format!("{} \"{}\"", type_name(&m.dtype), m.name))
                .collect();
            format!("H5T_COMPOUND {{ {} }}", ms.join("; "))
        }
        Datatype::Reference { kind, .. } => match kind {
            RefKind::Object1 => "H5T_STD_REF_OBJ".into(),
            RefKind::Region1 => "H5T_STD_REF_DSETREG".into(),
            RefKind::Std => "H5T_STD_REF".into(),
        },
        Datatype::Enum { base, members } => {
            let ms: Vec<&str> = members.iter().map(|m| m.name.as_str()).collect();
            format!("H5T_ENUM {{ {}; {} }}", type_name(base), ms.join(", "))
        }
        Datatype::VarLenSequence { base, .. } => format!("H5T_VLEN {{ {} }}", type_name(base)),
        Datatype::Array { dims, base } => {
            let d: Vec<String> = dims.iter().map(u64::to_string).collect();
            format!("H5T_ARRAY {{ [{}] {} }}", d.join("]["), type_name(base))
        }
        Datatype::Complex { size, .. } => format!("H5T_COMPLEX ({size} bytes)"),
    }
}

/// A value as readable text.
pub fn value_text(v: &Value) -> String {
    match v {
        Value::Int(x) => x.to_string(),
        Value::UInt(x) => x.to_string(),
        Value::BigInt(x) => x.to_string(),
        Value::BigUInt(x) | Value::NonStandardFloat(x) => x.to_string(),
        Value::F16(b) => format!("{}", h5fmt::data::convert::f16_to_f64(*b)),
        Value::F32(f) => format!("{f}"),
        Value::F64(f) => format!("{f}"),
        Value::F128(b) => format!("0x{b:032x}"),
        Value::Str(s) => format!("{s:?}"),
        Value::RawStr(b) => format!("{:?}", String::from_utf8_lossy(b)),
        Value::Opaque(b) => b
            .iter()
            .map(|x| format!("{x:02x}"))
            .collect::<Vec<_>>()
            .join(":"),
        Value::Enum { code, name } => name.clone().unwrap_or_else(|| code.to_string()),
        Value::Compound(ms) => {
            let parts: Vec<String> = ms
                .iter()
                .map(|(n, v)| format!("{n}: {}", value_text(v)))
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Array(xs) | Value::Vlen(xs) => {
            format!(
                "[{}]",
                xs.iter().map(value_text).collect::<Vec<_>>().join(", ")
            )
        }
        Value::Ref(r) => match r {
            Reference::Null => "NULL".into(),
            Reference::Object(a) => format!("OBJECT {a}"),
            Reference::Region { obj, region } => {
                format!("REGION {obj} ({} points)", region.npoints)
            }
            Reference::Attribute { obj, name } => format!("ATTRIBUTE {obj} {name:?}"),
            Reference::External { file } => format!("EXTERNAL {file:?}"),
        },
        Value::Time(t) => t.to_string(),
        Value::Complex(re, im) => format!("{}+{}i", value_text(re), value_text(im)),
    }
}

/// A value as JSON with real numbers.
pub fn value_json(v: &Value) -> Json {
    match v {
        Value::Int(x) => json!(x),
        Value::UInt(x) => json!(x),
        Value::BigInt(x) => Json::String(x.to_string()),
        Value::BigUInt(x) | Value::NonStandardFloat(x) => Json::String(x.to_string()),
        Value::F16(b) => float_json(h5fmt::data::convert::f16_to_f64(*b)),
        Value::F32(f) => float_json(f64::from(*f)),
        Value::F64(f) => float_json(*f),
        Value::F128(b) => Json::String(format!("0x{b:032x}")),
        Value::Str(s) => json!(s),
        Value::RawStr(b) => Json::String(String::from_utf8_lossy(b).into_owned()),
        Value::Opaque(b) => Json::String(b.iter().map(|x| format!("{x:02x}")).collect()),
        Value::Enum { code, name } => match name {
            Some(n) => json!(n),
            None => Json::String(code.to_string()),
        },
        Value::Compound(ms) => {
            let mut m = Map::new();
            for (n, v) in ms {
                m.insert(n.clone(), value_json(v));
            }
            Json::Object(m)
        }
        Value::Array(xs) | Value::Vlen(xs) => Json::Array(xs.iter().map(value_json).collect()),
        Value::Ref(_) => Json::String(value_text(v)),
        Value::Time(t) => json!(t),
        Value::Complex(re, im) => json!([value_json(re), value_json(im)]),
    }
}

fn float_json(f: f64) -> Json {
    if f.is_finite() {
        serde_json::Number::from_f64(f).map_or(Json::Null, Json::Number)
    } else {
        Json::String(format!("{f}"))
    }
}

fn values_text(vals: &[Value]) -> String {
    vals.iter().map(value_text).collect::<Vec<_>>().join(", ")
}

fn write_attrs(out: &mut dyn Write, attrs: &[Attribute], indent: &str) -> Result<(), String> {
    for a in attrs {
        writeln!(out, "{indent}ATTRIBUTE \"{}\" {{", a.name()).map_err(io)?;
        writeln!(out, "{indent}   DATATYPE  {}", type_name(a.dtype())).map_err(io)?;
        writeln!(
            out,
            "{indent}   DATASPACE  {}",
            space_text(a.shape(), None, a.space().kind)
        )
        .map_err(io)?;
        match a.read_values() {
            Ok(v) => writeln!(out, "{indent}   DATA {{ {} }}", values_text(&v)).map_err(io)?,
            Err(e) => writeln!(out, "{indent}   DATA <error: {e}>").map_err(io)?,
        }
        writeln!(out, "{indent}}}").map_err(io)?;
    }
    Ok(())
}

/// `h5 dump`: h5dump-like text of the object at `path` and everything below it.
///
/// # Errors
/// A one-line message naming the object path.
pub fn dump(file: &File, file_name: &str, path: &str, out: &mut dyn Write) -> Result<(), String> {
    writeln!(out, "HDF5 \"{file_name}\" {{").map_err(io)?;
    let obj = file.object(path).map_err(|e| e.to_string())?;
    let mut seen = HashSet::new();
    dump_obj(file, &obj, path, "", &mut seen, out)?;
    writeln!(out, "}}").map_err(io)?;
    Ok(())
}

fn dump_obj(
    file: &File,
    obj: &Object,
    name: &str,
    indent: &str,
    seen: &mut HashSet<h5fmt::Addr>,
    out: &mut dyn Write,
) -> Result<(), String> {
    let inner = format!("{indent}   ");
    match obj {
        Object::Group(g) => {
            writeln!(out, "{indent}GROUP \"{name}\" {{").map_err(io)?;
            if !seen.insert(g.addr()) {
                writeln!(out, "{inner}HARDLINK to an object already shown").map_err(io)?;
            } else {
                write_attrs(out, &g.attrs().map_err(|e| e.to_string())?, &inner)?;
                for l in g.links().map_err(|e| e.to_string())? {
                    let p = join(g.path(), &l.name);
                    match l.target {
                        LinkTarget::Hard(addr) => {
                            let child = file.object_at(addr, &p).map_err(|e| e.to_string())?;
                            dump_obj(file, &child, &l.name, &inner, seen, out)?;
                        }
                        LinkTarget::Soft(t) => {
                            writeln!(out, "{inner}SOFTLINK \"{}\" {{ LINKTARGET \"{t}\" }}", l.name).map_err(io)?
                        }
                        LinkTarget::External { file: f, path: t } => writeln!(
                            out,
                            "{inner}EXTERNAL_LINK \"{}\" {{ TARGETFILE \"{f}\" TARGETPATH \"{t}\" }}",
                            l.name
                        )
                        .map_err(io)?,
                        LinkTarget::UserDefined { class, .. } => {
                            writeln!(out, "{inner}USERDEFINED_LINK \"{}\" {{ CLASS {class} }}", l.name).map_err(io)?
                        }
                    }
                }
            }
            writeln!(out, "{indent}}}").map_err(io)?;
        }
        Object::Dataset(d) => {
            writeln!(out, "{indent}DATASET \"{name}\" {{").map_err(io)?;
            writeln!(out, "{inner}DATATYPE  {}", type_name(d.dtype())).map_err(io)?;
            writeln!(
                out,
                "{inner}DATASPACE  {}",
                space_text(d.shape(), d.maxshape(), d.space().kind)
            )
            .map_err(io)?;
            match d.read_values() {
                Ok(v) => writeln!(out, "{inner}DATA {{ {} }}", values_text(&v)).map_err(io)?,
                Err(e) => writeln!(out, "{inner}DATA <error: {e}>").map_err(io)?,
            }
            write_attrs(out, &d.attrs().map_err(|e| e.to_string())?, &inner)?;
            writeln!(out, "{indent}}}").map_err(io)?;
        }
        Object::Datatype(t) => {
            writeln!(out, "{indent}DATATYPE \"{name}\" {}", type_name(t.dtype())).map_err(io)?;
        }
    }
    Ok(())
}

fn attrs_json(attrs: &[Attribute]) -> Result<Json, String> {
    let mut m = Map::new();
    for a in attrs {
        let vals = a.read_values().map_err(|e| e.to_string())?;
        let v = if a.space().kind == SpaceKind::Scalar {
            vals.first().map(value_json).unwrap_or(Json::Null)
        } else {
            Json::Array(vals.iter().map(value_json).collect())
        };
        m.insert(a.name().to_string(), v);
    }
    Ok(Json::Object(m))
}

/// `h5 dump --json`: a readable JSON tree with real numbers (flat data lists).
///
/// # Errors
/// A one-line message naming the object path.
pub fn json_dump(file: &File, path: &str) -> Result<Json, String> {
    let obj = file.object(path).map_err(|e| e.to_string())?;
    let mut seen = HashSet::new();
    obj_json(file, &obj, &mut seen)
}

fn obj_json(file: &File, obj: &Object, seen: &mut HashSet<h5fmt::Addr>) -> Result<Json, String> {
    match obj {
        Object::Group(g) => {
            let mut members = Map::new();
            if seen.insert(g.addr()) {
                for l in g.links().map_err(|e| e.to_string())? {
                    let p = join(g.path(), &l.name);
                    let v = match l.target {
                        LinkTarget::Hard(addr) => {
                            let child = file.object_at(addr, &p).map_err(|e| e.to_string())?;
                            obj_json(file, &child, seen)?
                        }
                        LinkTarget::Soft(t) => json!({"soft_link": t}),
                        LinkTarget::External { file: f, path: t } => {
                            json!({"external_link": {"file": f, "path": t}})
                        }
                        LinkTarget::UserDefined { class, .. } => {
                            json!({"user_defined_link": class})
                        }
                    };
                    members.insert(l.name, v);
                }
            }
            Ok(
                json!({"type": "group", "attrs": attrs_json(&g.attrs().map_err(|e| e.to_string())?)?, "members": members}),
            )
        }
        Object::Dataset(d) => {
            let vals = d.read_values().map_err(|e| e.to_string())?;
            Ok(json!({
                "type": "dataset",
                "dtype": type_name(d.dtype()),
                "shape": d.shape(),
                "attrs": attrs_json(&d.attrs().map_err(|e| e.to_string())?)?,
                "data": vals.iter().map(value_json).collect::<Vec<_>>(),
            }))
        }
        Object::Datatype(t) => Ok(json!({"type": "datatype", "dtype": type_name(t.dtype())})),
    }
}
