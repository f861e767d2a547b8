//! The native side of `cargo xtask wasm-test`: a JSON summary of each file given, which the
//! WebAssembly package (`crates/h5fmt-wasm`, read under Node) must reproduce.
//!
//! ```text
//! cargo run -p h5cli --example wasm_summary -- FILE... > native.json
//! ```
//!
//! For each file (opened from its bytes, as a page would, with the package's 1 GiB read limit):
//! `{"error": TEXT}` when it does not open or walk, else `{"objects": {PATH: OBJECT}}` for
//! every object of a depth-first walk, with `kind`, `shape`, `dtype` (h5canon/1 DTYPE, as
//! `h5 dump --canonical` prints it), attribute `dtype`s and `shape`s, and for datasets the
//! SHA-256 of the raw bytes, of the numbers as the package's typed array holds them
//! (little-endian `i8`…`u64`, `f32` for 2- and 4-byte floats, `f64`), or of the JSON list of
//! strings. Integers beyond 2^53 are written as strings (JS numbers hold no more).
use h5fmt::data::convert::H5Native;
use h5fmt::data::decode::decode_elements;
use h5fmt::data::hyperslab::Selection;
use h5fmt::data::Value;
use h5fmt::format::datatype::Datatype;
use h5fmt::format::message::SpaceKind;
use h5fmt::{Attribute, Dataset, File, Limits, Object};
use serde_json::{json, Map, Value as Json};
use sha2::{Digest, Sha256};
use std::sync::Arc;

/// `crates/h5fmt-wasm`'s `MAX_READ_BYTES`.
const MAX_READ_BYTES: u64 = 1 << 30;

fn main() {
    let mut out = Map::new();
    for path in std::env::args().skip(1) {
        let summary = match std::fs::read(&path) {
            Ok(bytes) => summarize(bytes),
            Err(e) => json!({ "error": format!("cannot read: {e}") }),
        };
        out.insert(path, summary);
    }
    println!("{}", Json::Object(out));
}

fn summarize(bytes: Vec<u8>) -> Json {
    let limits = Limits {
        max_read_bytes: MAX_READ_BYTES,
        ..Limits::default()
    };
    let file = match File::from_source(Arc::new(bytes), limits) {
        Ok(f) => f,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let root = match file.root() {
        Ok(r) => r,
        Err(e) => return json!({ "error": e.to_string() }),
    };
    let mut objects = Map::new();
    for obj in root.walk() {
        match obj {
            Ok(o) => {
                objects.insert(o.path().to_string(), object(&o));
            }
            Err(e) => return json!({ "error": e.to_string() }),
        }
    }
    json!({ "objects": objects })
}

fn object(o: &Object) -> Json {
    let mut m = Map::new();
    let kind = match o {
        Object::Group(_) => "group",
        Object::Dataset(_) => "dataset",
        Object::Datatype(_) => "datatype",
    };
    m.insert("kind".into(), kind.into());
    match attrs(o) {
        Ok(am) => {
            m.insert("attrs".into(), Json::Object(am));
        }
        Err(e) => {
            m.insert("attrs_error".into(), e.to_string().into());
        }
    }
    match o {
        Object::Dataset(d) => dataset(d, &mut m),
        Object::Datatype(t) => {
            m.insert("dtype".into(), dtype(t.dtype()));
        }
        Object::Group(_) => {}
    }
    Json::Object(m)
}

/// Attribute types, shapes and the SHA-256 of their values as the package's `attrs` gives
/// them (which fails with the first attribute that does not decode).
fn attrs(o: &Object) -> h5fmt::Result<Map<String, Json>> {
    let mut am = Map::new();
    for a in o.attrs()? {
        let mut m = Map::new();
        m.insert("dtype".into(), dtype(a.dtype()));
        m.insert("shape".into(), shape(a.space().kind, a.shape()));
        if a.space().kind != SpaceKind::Null {
            if let Some(h) = typed(&Source::Attr(&a)) {
                m.insert("value_sha256".into(), h?.into());
            }
        }
        am.insert(a.name().to_string(), Json::Object(m));
    }
    Ok(am)
}

/// What the package reads values from.
enum Source<'a> {
    /// A dataset, or a selection of it.
    Dataset(&'a Dataset, Option<&'a Selection>),
    /// An attribute.
    Attr(&'a Attribute),
}

impl Source<'_> {
    fn dtype(&self) -> &Datatype {
        match self {
            Source::Dataset(d, _) => d.dtype(),
            Source::Attr(a) => a.dtype(),
        }
    }

    fn read<T: H5Native>(&self) -> h5fmt::Result<Vec<T>> {
        match self {
            Source::Dataset(d, Some(s)) => d.read_slice::<T>(s),
            Source::Dataset(d, None) => d.read::<T>(),
            Source::Attr(a) => a.read::<T>(),
        }
    }

    fn values(&self) -> h5fmt::Result<Vec<Value>> {
        match self {
            Source::Dataset(d, None) => d.read_values(),
            Source::Dataset(d, Some(sel)) => {
                let raw = d.read_slice_raw(sel)?;
                let file = d.file();
                let count = sel.num_elements().unwrap_or(0);
                decode_elements(d.dtype(), &raw, count, file.ctx(), &file.heap())
                    .map_err(|e| e.with_path(d.path()))
            }
            Source::Attr(a) => a.read_values(),
        }
    }
}

fn dataset(d: &Dataset, m: &mut Map<String, Json>) {
    m.insert("dtype".into(), dtype(d.dtype()));
    m.insert("shape".into(), shape(d.space().kind, d.shape()));
    match d.read_raw() {
        Ok(raw) => {
            m.insert("raw_sha256".into(), sha(&raw).into());
        }
        Err(e) => {
            m.insert("read_error".into(), e.to_string().into());
            return;
        }
    }
    put(m, "typed", typed(&Source::Dataset(d, None)));
    // A strided selection along the first dimension, as `readSlice("::2")`.
    if !d.shape().is_empty() {
        match Selection::parse(SLICE, d.shape()) {
            Ok(sel) => put(m, "slice", typed(&Source::Dataset(d, Some(&sel)))),
            Err(e) => put(m, "slice", Some(Err(e))),
        }
    }
}

/// The selection whose values `slice_sha256` hashes.
const SLICE: &str = "::2";

/// `NAME_sha256` or `NAME_error` for a hash or its error.
fn put(m: &mut Map<String, Json>, name: &str, r: Option<h5fmt::Result<String>>) {
    match r {
        Some(Ok(h)) => {
            m.insert(format!("{name}_sha256"), h.into());
        }
        Some(Err(e)) => {
            m.insert(format!("{name}_error"), e.to_string().into());
        }
        None => {}
    }
}

/// The SHA-256 of the values of `src` as the package gives them: the bytes of its typed
/// array for numbers, the JSON of its list of strings; for other types only whether they
/// decode.
fn typed(src: &Source<'_>) -> Option<h5fmt::Result<String>> {
    let t = src.dtype();
    match t {
        Datatype::Integer { size, signed, .. } => match (size, signed) {
            (1, true) => le(src, i8::to_le_bytes),
            (1, false) => le(src, u8::to_le_bytes),
            (2, true) => le(src, i16::to_le_bytes),
            (2, false) => le(src, u16::to_le_bytes),
            (4, true) => le(src, i32::to_le_bytes),
            (4, false) => le(src, u32::to_le_bytes),
            (8, true) => le(src, i64::to_le_bytes),
            (8, false) => le(src, u64::to_le_bytes),
            _ => src.values().err().map(Err),
        },
        Datatype::Float { size: 2 | 4, .. } if t.is_ieee_standard() => le(src, f32::to_le_bytes),
        Datatype::Float { size: 8, .. } if t.is_ieee_standard() => le(src, f64::to_le_bytes),
        Datatype::String { .. } | Datatype::VarLenString { .. } => Some(src.values().map(|vs| {
            sha(Json::Array(vs.iter().map(string).collect())
                .to_string()
                .as_bytes())
        })),
        // The package decodes every other type into values.
        _ => src.values().err().map(Err),
    }
}

/// SHA-256 of the little-endian bytes of the numbers of `src`.
fn le<T: H5Native, const N: usize>(
    src: &Source<'_>,
    bytes: fn(T) -> [u8; N],
) -> Option<h5fmt::Result<String>> {
    Some(src.read::<T>().map(|vs| {
        let mut h = Sha256::new();
        for v in vs {
            h.update(bytes(v));
        }
        hex(&h.finalize())
    }))
}

/// A string element as the package gives it: a JS string, or `{"hex"}` for bytes that are not
/// UTF-8 (the package's `Uint8Array`, hex-encoded by the Node side).
fn string(v: &Value) -> Json {
    match v {
        Value::Str(s) => s.as_str().into(),
        Value::RawStr(b) => json!({ "hex": hex(b) }),
        other => format!("{other:?}").into(),
    }
}

fn shape(space: SpaceKind, dims: &[u64]) -> Json {
    if space == SpaceKind::Null {
        return Json::Null;
    }
    dims.iter().map(|&d| big(d.into())).collect()
}

/// The DTYPE JSON, with integers beyond 2^53 as strings; `null` when it has none.
fn dtype(t: &Datatype) -> Json {
    h5cli::canon::dtype_json(t).map_or(Json::Null, bigs)
}

fn bigs(v: Json) -> Json {
    match v {
        Json::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(x), _) => big(i128::from(x)),
            (None, Some(x)) => big(i128::from(x)),
            _ => Json::String(n.to_string()),
        },
        Json::Array(xs) => xs.into_iter().map(bigs).collect(),
        Json::Object(m) => m.into_iter().map(|(k, x)| (k, bigs(x))).collect(),
        other => other,
    }
}

fn big(x: i128) -> Json {
    const SAFE: i128 = (1 << 53) - 1;
    if (-SAFE..=SAFE).contains(&x) {
        Json::from(i64::try_from(x).unwrap_or_default())
    } else {
        Json::String(x.to_string())
    }
}

fn sha(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
