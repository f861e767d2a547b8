//! `h5canon/1`: the canonical JSON dump of a file (see `shared/conformance/CANON.md`).
//!
//! Objects are walked breadth-first from `/`, links in byte order of their
//! names, and each object is described once, at the first path that reaches it.

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::data::{Reference, Value};
use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, RefKind, StringPad};
use h5fmt::format::message::{FillState, LinkTarget, SpaceKind};
use h5fmt::read::LayoutClass;
use h5fmt::{Addr, Attribute, Dataset, File, Object};
use serde_json::{json, Map, Value as Json};
use sha2::{Digest, Sha256};
use std::collections::{HashMap, VecDeque};
use std::path::Path;

/// Elements up to which `data` is written inline.
const INLINE_MAX: u64 = 64;
/// Bytes of compact JSON up to which `data` (and a fill value) is written inline.
const INLINE_MAX_BYTES: usize = 4096;
/// Raw bytes read per block when hashing a large dataset.
const BLOCK_BYTES: usize = 16 << 20;
/// Elements per block at most (bounds the memory of decoded values).
const BLOCK_MAX_ELEMS: usize = 1 << 20;

/// Whether elements of `t` refer to the global heap (vlen data, references),
/// so that equal bytes need not mean equal values.
fn has_heap_data(t: &Datatype) -> bool {
    match t {
        Datatype::VarLenSequence { .. }
        | Datatype::VarLenString { .. }
        | Datatype::Reference { .. } => true,
        Datatype::Compound { members, .. } => members.iter().any(|m| has_heap_data(&m.dtype)),
        Datatype::Array { base, .. }
        | Datatype::Enum { base, .. }
        | Datatype::Complex { base, .. } => has_heap_data(base),
        _ => false,
    }
}

/// The canonical dump of the file at `path`, as a JSON value.
///
/// # Errors
/// A one-line message naming the object path and what could not be read.
pub fn dump(path: &Path) -> Result<Json, String> {
    let file = File::open(path).map_err(|e| format!("/: cannot open file: {e}"))?;
    dump_file(&file)
}

/// The canonical dump of an open file.
///
/// # Errors
/// A one-line message naming the object path and what could not be read.
pub fn dump_file(file: &File) -> Result<Json, String> {
    let root = file.root().map_err(|e| named("/", &e.to_string()))?;
    let mut canon: HashMap<Addr, String> = HashMap::new();
    canon.insert(root.addr(), "/".to_string());
    let mut order: Vec<(String, Object)> = vec![("/".to_string(), Object::Group(root.clone()))];
    let mut links_of: HashMap<String, Vec<(String, LinkOut)>> = HashMap::new();
    let mut queue = VecDeque::from([("/".to_string(), root)]);
    let max_objects = file.ctx().limits.max_objects;
    while let Some((gpath, g)) = queue.pop_front() {
        let links = g
            .links()
            .map_err(|e| named(&gpath, &format!("cannot list links: {e}")))?;
        let mut outs = Vec::with_capacity(links.len());
        for l in links {
            let lpath = join(&gpath, &l.name);
            let out = match l.target {
                LinkTarget::Hard(addr) => {
                    if let std::collections::hash_map::Entry::Vacant(slot) = canon.entry(addr) {
                        if order.len() >= max_objects {
                            return Err(named(&lpath, "too many objects (limit)"));
                        }
                        let obj = file
                            .object_at(addr, &lpath)
                            .map_err(|e| named(&lpath, &format!("cannot resolve link: {e}")))?;
                        slot.insert(lpath.clone());
                        if let Object::Group(sub) = &obj {
                            queue.push_back((lpath.clone(), sub.clone()));
                        }
                        order.push((lpath.clone(), obj));
                    }
                    LinkOut::Hard(addr)
                }
                LinkTarget::Soft(s) => LinkOut::Json(json!({ "soft": s })),
                LinkTarget::External { file: f, path: p } => {
                    LinkOut::Json(json!({ "external": { "file": f, "path": p } }))
                }
                LinkTarget::UserDefined { class, .. } => {
                    return Err(named(
                        &lpath,
                        &format!("unsupported user-defined link type {class}"),
                    ))
                }
            };
            outs.push((l.name, out));
        }
        links_of.insert(gpath, outs);
    }

    // Each list costs well over 64 bytes: bound them like a read, and by
    // 2^24 whatever the limits (a document that large is no use to anyone).
    let cx = Canon {
        canon: &canon,
        max_lists: (file.ctx().limits.max_read_bytes / 64).min(1 << 24),
    };
    let mut objects = Map::new();
    for (p, obj) in &order {
        let desc = match obj {
            Object::Group(g) => {
                let mut lk = Map::new();
                for (name, out) in links_of.remove(p).unwrap_or_default() {
                    let v = match out {
                        LinkOut::Hard(a) => {
                            json!({ "hard": canon.get(&a).cloned().unwrap_or_default() })
                        }
                        LinkOut::Json(j) => j,
                    };
                    lk.insert(name, v);
                }
                let attrs = g.attrs().map_err(|e| named(p, &e.to_string()))?;
                json!({ "kind": "group", "attrs": cx.attrs(p, attrs)?, "links": lk })
            }
            Object::Dataset(d) => {
                let mut m = cx.dataset(p, d)?;
                let attrs = d.attrs().map_err(|e| named(p, &e.to_string()))?;
                m.insert("attrs".into(), cx.attrs(p, attrs)?);
                Json::Object(m)
            }
            Object::Datatype(t) => {
                let attrs = t.attrs().map_err(|e| named(p, &e.to_string()))?;
                json!({ "kind": "datatype", "attrs": cx.attrs(p, attrs)?,
                        "dtype": dtype_json(t.dtype()).map_err(|e| named(p, &e))? })
            }
        };
        objects.insert(p.clone(), desc);
    }
    Ok(json!({ "format": "h5canon/1", "objects": objects }))
}

enum LinkOut {
    Hard(Addr),
    Json(Json),
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Prefix `msg` with `path` unless the message already names it.
fn named(path: &str, msg: &str) -> String {
    if msg.starts_with(&format!("{path}:")) || msg.starts_with(&format!("{path} (")) {
        msg.to_string()
    } else {
        format!("{path}: {msg}")
    }
}

/// Append `s` as a JSON string literal (serde_json's escaping, as Python's
/// `json.dumps(ensure_ascii=False)`).
fn push_json_str(out: &mut String, s: &str) {
    out.push_str(&serde_json::to_string(s).unwrap_or_default());
}

/// Parse compact JSON text that we produced ourselves.
fn parse(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| format!("internal: {e}"))
}

/// The compact JSON text that `data_sha256` hashes (Python's
/// `json.dumps(v, separators=(",", ":"), ensure_ascii=False)`).
pub fn compact(v: &Json) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

/// Lowercase hex SHA-256 of the compact JSON of `v`.
pub fn sha_of(v: &Json) -> String {
    hex(&Sha256::digest(compact(v).as_bytes()))
}

fn hex(b: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(b.len() * 2);
    for x in b {
        let _ = write!(s, "{x:02x}");
    }
    s
}

fn order_str(o: ByteOrder) -> Result<&'static str, String> {
    match o {
        ByteOrder::Little => Ok("le"),
        ByteOrder::Big => Ok("be"),
        ByteOrder::Vax => Err("unsupported byte order (VAX)".into()),
    }
}

/// The DTYPE JSON of a datatype.
///
/// # Errors
/// For types h5canon/1 cannot represent (VAX order).
pub fn dtype_json(t: &Datatype) -> Result<Json, String> {
    Ok(match t {
        Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => {
            json!({"class": "int", "size": size, "order": order_str(*order)?, "signed": signed})
        }
        Datatype::Float { size, order, .. } => {
            if *order == ByteOrder::Vax {
                return Err("unsupported float byte order (VAX)".into());
            }
            let mut m = json!({"class": "float", "size": size, "order": order_str(*order)?});
            if !t.is_ieee_standard() {
                m["nonstandard"] = Json::Bool(true);
            }
            m
        }
        Datatype::Time { size, order, .. } => {
            json!({"class": "time", "size": size, "order": order_str(*order)?})
        }
        Datatype::String { size, pad, cset } => {
            json!({"class": "string", "size": size, "cset": cset_str(*cset), "pad": pad_str(*pad)})
        }
        Datatype::VarLenString { pad, cset, .. } => {
            json!({"class": "string", "size": "vlen", "cset": cset_str(*cset), "pad": pad_str(*pad)})
        }
        Datatype::Bitfield { size, order, .. } => {
            json!({"class": "bitfield", "size": size, "order": order_str(*order)?})
        }
        Datatype::Opaque { size, tag } => json!({"class": "opaque", "size": size, "tag": tag}),
        Datatype::Compound { size, members } => {
            let mut ms = Vec::with_capacity(members.len());
            for m in members {
                ms.push(json!({"name": m.name, "offset": m.offset, "type": dtype_json(&m.dtype)?}));
            }
            json!({"class": "compound", "size": size, "members": ms})
        }
        Datatype::Reference { kind, .. } => {
            let k = match kind {
                RefKind::Object1 => "object1",
                RefKind::Region1 => "region1",
                RefKind::Std => "std",
            };
            json!({"class": "ref", "kind": k})
        }
        Datatype::Enum { base, members } => {
            if !matches!(base.as_ref(), Datatype::Integer { .. }) {
                return Err("enum base is not an integer".into());
            }
            let mut ms = Vec::with_capacity(members.len());
            for m in members {
                let v =
                    h5fmt::data::decode::integer_code(base, &m.value).map_err(|e| e.to_string())?;
                ms.push(json!([m.name, int_json(v)]));
            }
            json!({"class": "enum", "base": dtype_json(base)?, "members": ms})
        }
        Datatype::VarLenSequence { base, .. } => {
            json!({"class": "vlen", "base": dtype_json(base)?})
        }
        Datatype::Array { dims, base } => {
            json!({"class": "array", "dims": dims, "base": dtype_json(base)?})
        }
        Datatype::Complex { size, base } => {
            let order = match base.as_ref() {
                Datatype::Float { order, .. } => order_str(*order)?,
                _ => return Err("complex base is not a float".into()),
            };
            json!({"class": "complex", "size": size, "order": order})
        }
    })
}

fn cset_str(c: CharSet) -> &'static str {
    match c {
        CharSet::Ascii => "ascii",
        CharSet::Utf8 => "utf8",
    }
}

fn pad_str(p: StringPad) -> &'static str {
    match p {
        StringPad::NullTerm => "nullterm",
        StringPad::NullPad => "nullpad",
        StringPad::SpacePad => "spacepad",
    }
}

fn int_json(v: i128) -> Json {
    if let Ok(x) = i64::try_from(v) {
        Json::from(x)
    } else if let Ok(x) = u64::try_from(v) {
        Json::from(x)
    } else {
        big_json(&v.to_string())
    }
}

/// A JSON number too large for 64 bits (serde_json's arbitrary precision).
fn big_json(digits: &str) -> Json {
    serde_json::from_str(digits).unwrap_or(Json::Null)
}

struct Canon<'a> {
    canon: &'a HashMap<Addr, String>,
    /// At most this many nested JSON lists per value (a shape such as
    /// `[2^40, 0]` holds no element but would build 2^40 empty lists).
    max_lists: u64,
}

impl Canon<'_> {
    fn obj_path_text(&self, a: Addr, out: &mut String) {
        match self.canon.get(&a) {
            Some(p) => push_json_str(out, p),
            None => out.push_str("{\"unreachable\":true}"),
        }
    }

    /// Append the compact JSON text of one element (what `data_sha256` hashes).
    /// Text is produced directly, never through a JSON tree, so that datasets
    /// of millions of elements cost little more than their text.
    fn write_value(&self, v: &Value, out: &mut String) -> Result<(), String> {
        use std::fmt::Write;
        match v {
            Value::Int(x) => {
                let _ = write!(out, "{x}");
            }
            Value::UInt(x) => {
                let _ = write!(out, "{x}");
            }
            Value::BigInt(x) => {
                let _ = write!(out, "{x}");
            }
            Value::BigUInt(x) | Value::NonStandardFloat(x) => {
                let _ = write!(out, "{x}");
            }
            Value::F16(b) => {
                let _ = write!(out, "\"0x{b:04x}\"");
            }
            Value::F32(f) => {
                let _ = write!(out, "\"0x{:08x}\"", f.to_bits());
            }
            Value::F64(f) => {
                let _ = write!(out, "\"0x{:016x}\"", f.to_bits());
            }
            Value::F128(b) => {
                let _ = write!(out, "\"0x{b:032x}\"");
            }
            Value::Str(s) => push_json_str(out, s),
            Value::RawStr(b) | Value::Opaque(b) => {
                out.push_str("{\"hex\":\"");
                out.push_str(&hex(b));
                out.push_str("\"}");
            }
            Value::Enum { code, .. } => {
                let _ = write!(out, "{code}");
            }
            Value::Compound(ms) => {
                out.push('[');
                for (k, (_, m)) in ms.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    self.write_value(m, out)?;
                }
                out.push(']');
            }
            Value::Array(xs) | Value::Vlen(xs) => {
                out.push('[');
                for (k, m) in xs.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    self.write_value(m, out)?;
                }
                out.push(']');
            }
            Value::Ref(r) => match r {
                Reference::Null => out.push_str("null"),
                Reference::Object(a) => self.obj_path_text(*a, out),
                Reference::Region { obj, region } => {
                    let Some((lo, hi)) = &region.bounds else {
                        return Err("region reference with an empty selection has no bounds".into());
                    };
                    out.push_str("{\"obj\":");
                    self.obj_path_text(*obj, out);
                    let _ = write!(out, ",\"npoints\":{},\"bounds\":", region.npoints);
                    out.push_str(&compact(&json!([lo, hi])));
                    out.push('}');
                }
                Reference::Attribute { obj, name } => {
                    out.push_str("{\"obj\":");
                    self.obj_path_text(*obj, out);
                    out.push_str(",\"attr\":");
                    push_json_str(out, name);
                    out.push('}');
                }
                Reference::External { .. } => out.push_str("{\"unreachable\":true}"),
            },
            // Time values are raw unsigned integers in h5canon/1.
            #[allow(clippy::cast_sign_loss)]
            Value::Time(t) => {
                let _ = write!(out, "{}", *t as u64);
            }
            Value::Complex(re, im) => {
                out.push('[');
                self.write_value(re, out)?;
                out.push(',');
                self.write_value(im, out)?;
                out.push(']');
            }
        }
        Ok(())
    }

    /// Append the nested lists of `flat` following `shape` (the bare element for a scalar).
    fn write_nest(&self, flat: &[Value], shape: &[u64], out: &mut String) -> Result<(), String> {
        match shape {
            [] => match flat.first() {
                Some(v) => self.write_value(v, out),
                None => Err("scalar dataspace without an element".into()),
            },
            [_] => {
                out.push('[');
                for (k, v) in flat.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    self.write_value(v, out)?;
                }
                out.push(']');
                Ok(())
            }
            [n, rest @ ..] => {
                // Saturating: a shape whose outer extent is 0 may have inner
                // extents whose product overflows (no element either way).
                let step = rest.iter().fold(1u64, |a, &d| a.saturating_mul(d));
                let step = usize::try_from(step).unwrap_or(usize::MAX);
                out.push('[');
                for i in 0..usize::try_from(*n).map_err(|_| "shape too large")? {
                    if i > 0 {
                        out.push(',');
                    }
                    let from = i.saturating_mul(step);
                    let part = flat.get(from..from.saturating_add(step)).unwrap_or(&[]);
                    self.write_nest(part, rest, out)?;
                }
                out.push(']');
                Ok(())
            }
        }
    }

    /// The compact JSON text of `flat` nested by `shape`.
    fn nest_text(&self, flat: &[Value], shape: &[u64]) -> Result<String, String> {
        // Lists written: 1 + d0 + d0*d1 + … (all but the innermost level); a
        // shape like [7e18, 0] has no elements but would take forever.
        let mut lists = 0u64;
        let mut level = 1u64;
        for &d in shape.iter().take(shape.len().saturating_sub(1)) {
            lists = lists.saturating_add(level);
            level = level.saturating_mul(d);
        }
        if shape.len() > 1 && lists.saturating_add(level) > self.max_lists {
            return Err("limit exceeded: shape needs too many nested lists".into());
        }
        let mut out = String::new();
        self.write_nest(flat, shape, &mut out)?;
        Ok(out)
    }

    fn attrs(&self, path: &str, attrs: Vec<Attribute>) -> Result<Json, String> {
        let mut out = Map::new();
        for a in attrs {
            let wher = format!("{path} (attribute {:?})", a.name());
            let dt = dtype_json(a.dtype()).map_err(|e| format!("{wher}: {e}"))?;
            let mut ent = Map::new();
            ent.insert("dtype".into(), dt);
            if a.space().kind == SpaceKind::Null {
                ent.insert("shape".into(), Json::Null);
                ent.insert("data".into(), Json::Null);
            } else {
                ent.insert("shape".into(), json!(a.shape()));
                let vals = a.read_values().map_err(|e| format!("{wher}: {e}"))?;
                let text = self
                    .nest_text(&vals, a.shape())
                    .map_err(|e| format!("{wher}: {e}"))?;
                if a.len() <= INLINE_MAX && text.len() <= INLINE_MAX_BYTES {
                    ent.insert("data".into(), parse(&text)?);
                }
                ent.insert(
                    "data_sha256".into(),
                    Json::String(hex(&Sha256::digest(text.as_bytes()))),
                );
            }
            if out.contains_key(a.name()) {
                return Err(format!("{path}: duplicate attribute name {:?}", a.name()));
            }
            out.insert(a.name().to_string(), Json::Object(ent));
        }
        Ok(Json::Object(out))
    }

    /// SHA-256 of the compact JSON of a whole (large) dataset, read in blocks
    /// of bounded size. A "unit" is the sub-array over dims `k..` that fits in a
    /// block; blocks are runs of units along dim `k-1`; brackets and commas
    /// between units come from the unit's position, so the hashed text is
    /// exactly the compact JSON of the nested list. Blocks whose elements are
    /// all equal (typically fill) reuse the text of one unit.
    fn stream_sha(&self, d: &Dataset, shape: &[u64]) -> Result<String, String> {
        let es = usize::try_from(d.dtype().size())
            .map_err(|_| "element too large")?
            .max(1);
        // Blocks bound memory; the limit bounds the total work a file can ask for.
        let total = shape.iter().try_fold(es as u64, |a, &n| a.checked_mul(n));
        let limit = d.file().ctx().limits.max_stream_bytes;
        if total.is_none_or(|t| t > limit) {
            return Err(format!(
                "limit exceeded: dataset of {shape:?} x {es} bytes exceeds the stream limit of {limit} bytes"
            ));
        }
        let block_elems = (BLOCK_BYTES / es).clamp(1, BLOCK_MAX_ELEMS) as u64;
        let ndim = shape.len();
        let mut k = ndim;
        let mut unit = 1u64;
        while k > 1 && unit * shape[k - 1] <= block_elems {
            unit *= shape[k - 1];
            k -= 1;
        }
        let outer = &shape[..k];
        let inner = &shape[k..];
        let per = (block_elems / unit).max(1);
        let mut strides = Vec::new();
        let mut acc = 1u64;
        for dd in (1..k).rev() {
            acc *= outer[dd];
            strides.push(acc);
        }
        let pointer_free = !has_heap_data(d.dtype());
        let heap = d.file().heap();
        let ctx = d.file().ctx();
        let mut h = Sha256::new();
        h.update("[".repeat(k).as_bytes());
        let mut q = 0u64;
        let mut idx = vec![0u64; k - 1];
        let mut cache: Option<(Vec<u8>, u64, String)> = None;
        loop {
            let mut j0 = 0u64;
            while j0 < outer[k - 1] {
                let mc = per.min(outer[k - 1] - j0);
                if q != 0 {
                    let w = strides.iter().filter(|&&st| q.is_multiple_of(st)).count();
                    h.update(format!("{},{}", "]".repeat(w), "[".repeat(w)).as_bytes());
                }
                let mut dims = Vec::with_capacity(ndim);
                for &i in &idx {
                    dims.push(SliceDim {
                        start: i,
                        stride: 1,
                        count: 1,
                        block: 1,
                    });
                }
                dims.push(SliceDim {
                    start: j0,
                    stride: 1,
                    count: mc,
                    block: 1,
                });
                for &n in inner {
                    dims.push(SliceDim::all(n));
                }
                let bytes = d
                    .read_slice_raw(&Selection::Hyperslab(dims))
                    .map_err(|e| e.to_string())?;
                let n = mc * unit;
                let first = bytes.get(..es).unwrap_or(&[]);
                // All elements equal ⇔ the buffer equals itself shifted by one element.
                let constant =
                    pointer_free && bytes.get(es..) == bytes.get(..bytes.len().saturating_sub(es));
                if constant {
                    let hit =
                        matches!(&cache, Some((b, m0, _)) if b.as_slice() == first && *m0 == mc);
                    if !hit {
                        let v =
                            h5fmt::data::decode::decode_elements(d.dtype(), first, 1, ctx, &heap)
                                .map_err(|e| e.to_string())?;
                        let one = v.first().ok_or("no element")?;
                        let flat =
                            vec![one.clone(); usize::try_from(unit).map_err(|_| "unit too large")?];
                        let ut = self.nest_text(&flat, inner)?;
                        let text =
                            vec![ut; usize::try_from(mc).map_err(|_| "block too large")?].join(",");
                        cache = Some((first.to_vec(), mc, text));
                    }
                    if let Some((_, _, text)) = &cache {
                        h.update(text.as_bytes());
                    }
                } else {
                    let vals =
                        h5fmt::data::decode::decode_elements(d.dtype(), &bytes, n, ctx, &heap)
                            .map_err(|e| e.to_string())?;
                    let step = usize::try_from(unit).map_err(|_| "unit too large")?;
                    let mut parts = Vec::with_capacity(vals.len() / step.max(1));
                    for u in vals.chunks(step.max(1)) {
                        parts.push(self.nest_text(u, inner)?);
                    }
                    h.update(parts.join(",").as_bytes());
                }
                q += mc;
                j0 += mc;
            }
            // Advance the outer index over dims [0, k-1).
            let mut dd = k.saturating_sub(1);
            loop {
                if dd == 0 {
                    h.update("]".repeat(k).as_bytes());
                    return Ok(hex(&h.finalize()));
                }
                dd -= 1;
                idx[dd] += 1;
                if idx[dd] < outer[dd] {
                    break;
                }
                idx[dd] = 0;
            }
        }
    }

    fn dataset(&self, p: &str, d: &Dataset) -> Result<Map<String, Json>, String> {
        let err = |e: String| named(p, &e);
        let mut m = Map::new();
        m.insert("kind".into(), json!("dataset"));
        m.insert("dtype".into(), dtype_json(d.dtype()).map_err(err)?);
        let space = d.space();
        let (shape, maxshape) = match space.kind {
            SpaceKind::Null => (Json::Null, Json::Null),
            SpaceKind::Scalar => (json!([]), Json::Null),
            SpaceKind::Simple => (json!(d.shape()), json!(d.maxshape())),
        };
        m.insert("shape".into(), shape);
        m.insert("maxshape".into(), maxshape);
        let layout = match d.layout_class() {
            LayoutClass::Compact => "compact",
            LayoutClass::Contiguous => "contiguous",
            LayoutClass::Chunked => "chunked",
            LayoutClass::Virtual => "virtual",
        };
        m.insert("layout".into(), json!(layout));
        if let h5fmt::format::message::Layout::Chunked(cl) = d.layout() {
            m.insert("chunks".into(), json!(cl.dims));
            let filters: Vec<Json> = d
                .filters()
                .filters
                .iter()
                .map(|f| json!([f.id, f.client_data]))
                .collect();
            m.insert("filters".into(), Json::Array(filters));
        }
        let heap = d.file().heap();
        let ctx = d.file().ctx();
        let fill = d.fill_value();
        let fill_json = match fill.state {
            FillState::Undefined => json!({"state": "undefined", "value": null}),
            FillState::Default | FillState::User => {
                let state = if fill.state == FillState::User {
                    "user"
                } else {
                    "default"
                };
                let bytes = d.fill_bytes();
                let vals = h5fmt::data::decode::decode_elements(d.dtype(), &bytes, 1, ctx, &heap)
                    .map_err(|e| named(p, &format!("cannot read fill value: {e}")))?;
                let text = self.nest_text(&vals, &[]).map_err(err)?;
                if text.len() <= INLINE_MAX_BYTES {
                    json!({"state": state, "value": parse(&text)?})
                } else {
                    json!({"state": state, "value_sha256": hex(&Sha256::digest(text.as_bytes()))})
                }
            }
        };
        m.insert("fill".into(), fill_json);
        if space.kind == SpaceKind::Null {
            m.insert("data".into(), Json::Null);
            return Ok(m);
        }
        // A virtual dataset's extent is what its sources currently fill (libhdf5
        // recomputes it on open), which can differ from the stored dataspace.
        let shape: Vec<u64> = if d.layout_class() == LayoutClass::Virtual {
            let s = h5fmt::read::vds::virtual_dims(d).map_err(|e| named(p, &e.to_string()))?;
            m.insert("shape".into(), json!(s));
            s
        } else {
            d.shape().to_vec()
        };
        let count: u64 = shape
            .iter()
            .try_fold(1u64, |a, &n| a.checked_mul(n))
            .ok_or_else(|| named(p, "cannot read data: element count overflows"))?;
        // The dump reads (or hashes) every element: bound that work by the
        // stream limit (a fixed bound, so the dump is the same on every
        // machine; a whole read below is also bounded by the read limit).
        let logical = count.saturating_mul(d.dtype().size().max(1));
        if logical > ctx.limits.max_stream_bytes {
            return Err(named(
                p,
                &format!(
                    "cannot read data: limit exceeded: dataset of {logical} bytes exceeds the stream limit of {} bytes",
                    ctx.limits.max_stream_bytes
                ),
            ));
        }
        if count > INLINE_MAX && d.layout_class() != LayoutClass::Virtual {
            let sha = self
                .stream_sha(d, &shape)
                .map_err(|e| named(p, &format!("cannot read data: {e}")))?;
            m.insert("data_sha256".into(), Json::String(sha));
            return Ok(m);
        }
        let raw = d
            .read_raw()
            .map_err(|e| named(p, &format!("cannot read data: {e}")))?;
        let vals = h5fmt::data::decode::decode_elements(d.dtype(), &raw, count, ctx, &heap)
            .map_err(|e| named(p, &format!("cannot read data: {e}")))?;
        drop(raw);
        let text = self.nest_text(&vals, &shape).map_err(err)?;
        drop(vals);
        if count <= INLINE_MAX && text.len() <= INLINE_MAX_BYTES {
            m.insert("data".into(), parse(&text)?);
        }
        m.insert(
            "data_sha256".into(),
            Json::String(hex(&Sha256::digest(text.as_bytes()))),
        );
        Ok(m)
    }
}

/// The part of a canonical document at or below `path` (`/`: all of it):
/// the objects whose canonical path is `path` or starts with `path/`.
///
/// # Errors
/// When no object of the document is at `path`.
pub fn subtree(mut doc: Json, path: &str) -> Result<Json, String> {
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return Ok(doc);
    }
    let prefix = format!("{path}/");
    if let Some(Json::Object(objects)) = doc.get_mut("objects") {
        if !objects.contains_key(path) {
            return Err(format!(
                "{path}: no such object (or not at its canonical path)"
            ));
        }
        objects.retain(|k, _| k == path || k.starts_with(&prefix));
    }
    Ok(doc)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shape whose outer extent is 0 holds no element, whatever the
    /// product of the inner extents (here past 2^64: a fuzz finding, an
    /// overflow panic). numpy nests it the same way: `np.empty((0, 2, 3))`
    /// lists as `[]`, `np.empty((1, 0, 5))` as `[[]]`.
    #[test]
    fn nested_lists_of_empty_shapes_with_huge_inner_extents() {
        let canon = HashMap::new();
        let cx = Canon {
            canon: &canon,
            max_lists: 1 << 20,
        };
        let big = 1u64 << 63;
        assert_eq!(cx.nest_text(&[], &[0, 2, big]).as_deref(), Ok("[]"));
        assert_eq!(cx.nest_text(&[], &[1, 0, big, 4]).as_deref(), Ok("[[]]"));
        assert_eq!(cx.nest_text(&[], &[2, 0, big]).as_deref(), Ok("[[],[]]"));
    }
}
