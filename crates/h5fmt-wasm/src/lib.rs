//! HDF5 files in JavaScript: h5fmt's reader compiled to WebAssembly, exported with
//! `wasm-bindgen` and wrapped by the npm package in `js/` (`cargo xtask wasm-pkg`).
//!
//! ```js
//! const file = H5File.fromBytes(new Uint8Array(buffer));
//! const ds = file.get("/images");
//! ds.kind;   // "dataset"
//! ds.shape;  // [3, 4, 5]
//! ds.dtype;  // {class: "float", size: 4, order: "le"}
//! ds.read(); // Float32Array(60)
//! ds.readSlice("0, :2, :"); // Float32Array(10)
//! ```
//!
//! Every error of the reader (a malformed file, a bad path or selection, a limit) is thrown as
//! a JS `Error` carrying h5fmt's message; no input reaches a panic (the reader returns typed
//! errors, and this crate neither indexes nor unwraps).
//!
//! `dtype` objects follow the DTYPE form of h5canon/1 (the project's canonical dump,
//! `shared/conformance/CANON.md`): `{class: "int", size, order, signed}`,
//! `{class: "compound", size, members: [{name, offset, type}]}`, … so that a page and the
//! `h5 dump --canonical` output describe a type the same way.
//!
//! The crate uses `std` (wasm-bindgen's default, and dlmalloc as the allocator) and h5fmt
//! without `std`: h5fmt's `std` feature adds files, memory maps and threads, none of which a
//! browser has, and its pure-Rust codecs (miniz_oxide, ruzstd, lz4_flex) need no C.
#![deny(missing_docs)]

use h5fmt::data::decode::{decode_elements, integer_code};
use h5fmt::data::hyperslab::Selection;
use h5fmt::data::{Reference, Value};
use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, RefKind, StringPad};
use h5fmt::format::message::SpaceKind;
use h5fmt::{Attribute, Dataset, File, Limits, Object};
use js_sys::{Array, Object as JsObject, Reflect, Uint8Array};
use std::collections::BTreeMap;
use std::sync::Arc;
use wasm_bindgen::prelude::*;

mod remote;
mod table;
pub use remote::RangeCache;
pub use table::H5Table;

/// The most bytes one read may produce: a wasm32 module has at most 4 GiB of memory, and a
/// clear `Limit` error beats a failed allocation far into a read.
const MAX_READ_BYTES: u64 = 1 << 30;

fn js_err(e: &h5fmt::Error) -> JsError {
    JsError::new(&e.to_string())
}

fn limits() -> Limits {
    Limits {
        max_read_bytes: MAX_READ_BYTES,
        ..Limits::default()
    }
}

/// An open HDF5 file.
#[wasm_bindgen]
pub struct H5File {
    file: File,
}

#[wasm_bindgen]
impl H5File {
    /// Open a file held in memory (the bytes are copied into the module's memory).
    ///
    /// # Errors
    /// Thrown when no HDF5 signature is found or the superblock does not decode.
    #[wasm_bindgen(js_name = fromBytes)]
    pub fn from_bytes(bytes: &[u8]) -> Result<H5File, JsError> {
        let file = File::from_source(Arc::new(bytes.to_vec()), limits()).map_err(|e| js_err(&e))?;
        Ok(H5File { file })
    }

    /// Open a remote file through its block cache (see `remote`): the JS side runs this
    /// again after fetching what the cache reports missing.
    ///
    /// # Errors
    /// As [`H5File::from_bytes`], and a read of blocks not fetched yet.
    #[wasm_bindgen(js_name = fromCache)]
    pub fn from_cache(cache: &RangeCache) -> Result<H5File, JsError> {
        let file = File::from_source(cache.blocks.clone(), limits()).map_err(|e| js_err(&e))?;
        Ok(H5File { file })
    }

    /// The objects below the root group, each once (at the first path a depth-first walk of the
    /// hard links reaches it): `{name, path, kind, children}` nested, `children` on groups.
    ///
    /// # Errors
    /// Thrown when a group's links or an object header do not decode.
    pub fn tree(&self) -> Result<JsValue, JsError> {
        let root = self.file.root().map_err(|e| js_err(&e))?;
        let top = node("", "/", "group");
        let mut children: BTreeMap<String, Array> = BTreeMap::new();
        let top_children = Array::new();
        set(&top, "children", &top_children);
        children.insert("/".into(), top_children);
        for obj in root.walk() {
            let obj = obj.map_err(|e| js_err(&e))?;
            let path = obj.path();
            let (parent, name) = match path.rfind('/') {
                Some(0) => ("/", path.get(1..).unwrap_or("")),
                Some(i) => (path.get(..i).unwrap_or(""), path.get(i + 1..).unwrap_or("")),
                None => ("/", path),
            };
            let n = node(name, path, kind(&obj));
            if let Object::Group(_) = obj {
                let c = Array::new();
                set(&n, "children", &c);
                children.insert(path.to_string(), c);
            }
            if let Some(siblings) = children.get(parent) {
                siblings.push(&n);
            }
        }
        Ok(top.into())
    }

    /// The group, dataset or committed datatype at `path` (soft links followed).
    ///
    /// # Errors
    /// Thrown when a path component is missing or an object header does not decode.
    pub fn get(&self, path: &str) -> Result<H5Object, JsError> {
        let obj = self.file.object(path).map_err(|e| js_err(&e))?;
        Ok(H5Object { obj })
    }
}

fn node(name: &str, path: &str, kind: &str) -> JsObject {
    let o = JsObject::new();
    set(&o, "name", &name.into());
    set(&o, "path", &path.into());
    set(&o, "kind", &kind.into());
    o
}

fn kind(obj: &Object) -> &'static str {
    match obj {
        Object::Group(_) => "group",
        Object::Dataset(_) => "dataset",
        Object::Datatype(_) => "datatype",
    }
}

/// Set a property of a plain object (which cannot fail: no setter, not frozen).
fn set(o: &JsObject, key: &str, v: &JsValue) {
    let _ = Reflect::set(o, &JsValue::from_str(key), v);
}

/// A group, dataset or committed datatype of an [`H5File`].
#[wasm_bindgen]
pub struct H5Object {
    obj: Object,
}

#[wasm_bindgen]
impl H5Object {
    /// `"group"`, `"dataset"` or `"datatype"`.
    #[wasm_bindgen(getter)]
    pub fn kind(&self) -> String {
        kind(&self.obj).into()
    }

    /// The path this object was opened by.
    #[wasm_bindgen(getter)]
    pub fn path(&self) -> String {
        self.obj.path().into()
    }

    /// A dataset's current dimensions (`[]` for a scalar, `null` for a null dataspace);
    /// `undefined` for groups and datatypes.
    #[wasm_bindgen(getter)]
    pub fn shape(&self) -> JsValue {
        match &self.obj {
            Object::Dataset(d) => shape_js(d.space().kind, d.shape()),
            _ => JsValue::UNDEFINED,
        }
    }

    /// The datatype of a dataset or committed datatype as a JSON-compatible object (the DTYPE
    /// form of h5canon/1); `undefined` for groups.
    ///
    /// # Errors
    /// Thrown for types that form cannot describe (VAX byte order).
    #[wasm_bindgen(getter)]
    pub fn dtype(&self) -> Result<JsValue, JsError> {
        match &self.obj {
            Object::Dataset(d) => dtype_js(d.dtype()),
            Object::Datatype(t) => dtype_js(t.dtype()),
            Object::Group(_) => Ok(JsValue::UNDEFINED),
        }
    }

    /// The attributes: `{name: {dtype, shape, value}}`, `value` as [`H5Object::read`] gives
    /// it (`null` for a null dataspace).
    ///
    /// # Errors
    /// Thrown when an attribute does not decode.
    #[wasm_bindgen(getter)]
    pub fn attrs(&self) -> Result<JsValue, JsError> {
        let out = JsObject::new();
        for a in self.obj.attrs().map_err(|e| js_err(&e))? {
            set(&out, a.name(), &attr_js(&a)?);
        }
        Ok(out.into())
    }

    /// A dataset's values (row-major, flat): a typed array for integers of 1, 2, 4 or 8
    /// bytes (`BigInt64Array`/`BigUint64Array` for 8) and for floats (`Float32Array` for
    /// 2 and 4 bytes, `Float64Array` for 8), an `Array` of strings for strings, of objects
    /// for compounds, of nested values otherwise.
    ///
    /// # Errors
    /// Thrown when this is not a dataset, or on any read or decode error.
    pub fn read(&self) -> Result<JsValue, JsError> {
        let d = self.dataset()?;
        read_js(d, None)
    }

    /// The elements of a numpy-style selection such as `"0:100, ::2"` (row-major, flat; the
    /// same types as [`H5Object::read`]).
    ///
    /// # Errors
    /// Thrown for a selection that does not parse or fit the shape, and as [`H5Object::read`].
    #[wasm_bindgen(js_name = readSlice)]
    pub fn read_slice(&self, selection: &str) -> Result<JsValue, JsError> {
        let d = self.dataset()?;
        let sel = Selection::parse(selection, d.shape()).map_err(|e| js_err(&e))?;
        read_js(d, Some(&sel))
    }

    /// The absolute byte ranges (`[start, end, …]`) of the stored chunks a selection (`""`
    /// for all) touches, for a remote file to fetch them together before the read.
    ///
    /// # Errors
    /// Thrown when this is not a dataset, for a selection that does not parse, and when the
    /// chunk index does not decode.
    #[wasm_bindgen(js_name = chunkRanges)]
    pub fn chunk_ranges(&self, selection: &str) -> Result<Vec<f64>, JsError> {
        let d = self.dataset()?;
        let sel = Selection::parse(selection, d.shape()).map_err(|e| js_err(&e))?;
        remote::chunk_ranges(d, &sel).map_err(|e| js_err(&e))
    }

    /// A dataset's raw bytes: file element layout and byte order, row-major.
    ///
    /// # Errors
    /// Thrown when this is not a dataset, or on any read error.
    #[wasm_bindgen(js_name = readRaw)]
    pub fn read_raw(&self) -> Result<Uint8Array, JsError> {
        let raw = self.dataset()?.read_raw().map_err(|e| js_err(&e))?;
        Ok(Uint8Array::from(raw.as_slice()))
    }
}

impl H5Object {
    fn dataset(&self) -> Result<&Dataset, JsError> {
        match &self.obj {
            Object::Dataset(d) => Ok(d),
            other => Err(JsError::new(&format!(
                "{}: usage: a {} has no data",
                other.path(),
                kind(other)
            ))),
        }
    }
}

fn shape_js(space: SpaceKind, shape: &[u64]) -> JsValue {
    if space == SpaceKind::Null {
        return JsValue::NULL;
    }
    shape.iter().map(|&d| u64_js(d)).collect::<Array>().into()
}

/// A JS number when `v` is a safe integer, a `BigInt` otherwise.
fn u64_js(v: u64) -> JsValue {
    const SAFE: u64 = (1 << 53) - 1;
    if v <= SAFE {
        #[allow(clippy::cast_precision_loss)] // exact below 2^53
        JsValue::from_f64(v as f64)
    } else {
        js_sys::BigInt::from(v).into()
    }
}

fn i64_js(v: i64) -> JsValue {
    const SAFE: i64 = (1 << 53) - 1;
    if (-SAFE..=SAFE).contains(&v) {
        #[allow(clippy::cast_precision_loss)] // exact below 2^53
        JsValue::from_f64(v as f64)
    } else {
        js_sys::BigInt::from(v).into()
    }
}

fn i128_js(v: i128) -> JsValue {
    match i64::try_from(v) {
        Ok(x) => i64_js(x),
        Err(_) => js_sys::BigInt::from(v).into(),
    }
}

fn order_name(o: ByteOrder) -> Result<&'static str, JsError> {
    match o {
        ByteOrder::Little => Ok("le"),
        ByteOrder::Big => Ok("be"),
        ByteOrder::Vax => Err(JsError::new("unsupported: VAX byte order")),
    }
}

fn ordered(class: &str, size: u32, order: ByteOrder) -> Result<JsObject, JsError> {
    let o = JsObject::new();
    set(&o, "class", &class.into());
    set(&o, "size", &size.into());
    set(&o, "order", &order_name(order)?.into());
    Ok(o)
}

fn string_type(size: JsValue, cset: CharSet, pad: StringPad) -> JsObject {
    let o = JsObject::new();
    set(&o, "class", &"string".into());
    set(&o, "size", &size);
    let cset = match cset {
        CharSet::Ascii => "ascii",
        CharSet::Utf8 => "utf8",
    };
    set(&o, "cset", &cset.into());
    let pad = match pad {
        StringPad::NullTerm => "nullterm",
        StringPad::NullPad => "nullpad",
        StringPad::SpacePad => "spacepad",
    };
    set(&o, "pad", &pad.into());
    o
}

/// The DTYPE object of h5canon/1 for `t`.
fn dtype_js(t: &Datatype) -> Result<JsValue, JsError> {
    let o = match t {
        Datatype::Integer {
            size,
            order,
            signed,
            ..
        } => {
            let o = ordered("int", *size, *order)?;
            set(&o, "signed", &(*signed).into());
            o
        }
        Datatype::Float { size, order, .. } => {
            let o = ordered("float", *size, *order)?;
            if !t.is_ieee_standard() {
                set(&o, "nonstandard", &true.into());
            }
            o
        }
        Datatype::Time { size, order, .. } => ordered("time", *size, *order)?,
        Datatype::Bitfield { size, order, .. } => ordered("bitfield", *size, *order)?,
        Datatype::String { size, pad, cset } => string_type((*size).into(), *cset, *pad),
        Datatype::VarLenString { pad, cset, .. } => string_type("vlen".into(), *cset, *pad),
        Datatype::Opaque { size, tag } => {
            let o = JsObject::new();
            set(&o, "class", &"opaque".into());
            set(&o, "size", &(*size).into());
            set(&o, "tag", &tag.as_str().into());
            o
        }
        Datatype::Compound { size, members } => {
            let ms = Array::new();
            for m in members {
                let mo = JsObject::new();
                set(&mo, "name", &m.name.as_str().into());
                set(&mo, "offset", &m.offset.into());
                set(&mo, "type", &dtype_js(&m.dtype)?);
                ms.push(&mo);
            }
            let o = JsObject::new();
            set(&o, "class", &"compound".into());
            set(&o, "size", &(*size).into());
            set(&o, "members", &ms);
            o
        }
        Datatype::Reference { kind, .. } => {
            let o = JsObject::new();
            set(&o, "class", &"ref".into());
            let k = match kind {
                RefKind::Object1 => "object1",
                RefKind::Region1 => "region1",
                RefKind::Std => "std",
            };
            set(&o, "kind", &k.into());
            o
        }
        Datatype::Enum { base, members } => {
            let ms = Array::new();
            for m in members {
                let code = integer_code(base, &m.value).map_err(|e| js_err(&e))?;
                let pair = Array::of2(&m.name.as_str().into(), &i128_js(code));
                ms.push(&pair);
            }
            let o = JsObject::new();
            set(&o, "class", &"enum".into());
            set(&o, "base", &dtype_js(base)?);
            set(&o, "members", &ms);
            o
        }
        Datatype::VarLenSequence { base, .. } => {
            let o = JsObject::new();
            set(&o, "class", &"vlen".into());
            set(&o, "base", &dtype_js(base)?);
            o
        }
        Datatype::Array { dims, base } => {
            let o = JsObject::new();
            set(&o, "class", &"array".into());
            let ds: Array = dims.iter().map(|&d| u64_js(d)).collect();
            set(&o, "dims", &ds);
            set(&o, "base", &dtype_js(base)?);
            o
        }
        Datatype::Complex { size, base } => {
            let Datatype::Float { order, .. } = base.as_ref() else {
                return Err(JsError::new("unsupported: complex base is not a float"));
            };
            ordered("complex", *size, *order)?
        }
    };
    Ok(o.into())
}

fn attr_js(a: &Attribute) -> Result<JsValue, JsError> {
    let o = JsObject::new();
    set(&o, "dtype", &dtype_js(a.dtype())?);
    set(&o, "shape", &shape_js(a.space().kind, a.shape()));
    let value = if a.space().kind == SpaceKind::Null {
        JsValue::NULL
    } else {
        match numeric(a.dtype()) {
            Some(n) => typed_attr(a, n)?,
            None => values_js(a.read_values().map_err(|e| js_err(&e))?),
        }
    };
    set(&o, "value", &value);
    Ok(o.into())
}

/// The JS typed array a numeric type reads into.
#[derive(Clone, Copy)]
enum Numeric {
    I8,
    U8,
    I16,
    U16,
    I32,
    U32,
    I64,
    U64,
    F32,
    F64,
}

fn numeric(t: &Datatype) -> Option<Numeric> {
    match t {
        Datatype::Integer { size, signed, .. } => Some(match (size, signed) {
            (1, true) => Numeric::I8,
            (1, false) => Numeric::U8,
            (2, true) => Numeric::I16,
            (2, false) => Numeric::U16,
            (4, true) => Numeric::I32,
            (4, false) => Numeric::U32,
            (8, true) => Numeric::I64,
            (8, false) => Numeric::U64,
            _ => return None,
        }),
        Datatype::Float { size: 2 | 4, .. } if t.is_ieee_standard() => Some(Numeric::F32),
        Datatype::Float { size: 8, .. } if t.is_ieee_standard() => Some(Numeric::F64),
        _ => None,
    }
}

/// Convert a native vector to the typed array of `n`, mapping the h5fmt error.
macro_rules! typed {
    ($n:expr, $read:ident, $($arg:expr),*) => {
        match $n {
            Numeric::I8 => $read::<i8>($($arg),*).map(|v| js_sys::Int8Array::from(v.as_slice()).into()),
            Numeric::U8 => $read::<u8>($($arg),*).map(|v| Uint8Array::from(v.as_slice()).into()),
            Numeric::I16 => $read::<i16>($($arg),*).map(|v| js_sys::Int16Array::from(v.as_slice()).into()),
            Numeric::U16 => $read::<u16>($($arg),*).map(|v| js_sys::Uint16Array::from(v.as_slice()).into()),
            Numeric::I32 => $read::<i32>($($arg),*).map(|v| js_sys::Int32Array::from(v.as_slice()).into()),
            Numeric::U32 => $read::<u32>($($arg),*).map(|v| js_sys::Uint32Array::from(v.as_slice()).into()),
            Numeric::I64 => $read::<i64>($($arg),*).map(|v| js_sys::BigInt64Array::from(v.as_slice()).into()),
            Numeric::U64 => $read::<u64>($($arg),*).map(|v| js_sys::BigUint64Array::from(v.as_slice()).into()),
            Numeric::F32 => $read::<f32>($($arg),*).map(|v| js_sys::Float32Array::from(v.as_slice()).into()),
            Numeric::F64 => $read::<f64>($($arg),*).map(|v| js_sys::Float64Array::from(v.as_slice()).into()),
        }
    };
}

fn typed_attr(a: &Attribute, n: Numeric) -> Result<JsValue, JsError> {
    fn read<T: h5fmt::data::convert::H5Native>(a: &Attribute) -> h5fmt::Result<Vec<T>> {
        a.read::<T>()
    }
    let r: h5fmt::Result<JsValue> = typed!(n, read, a);
    r.map_err(|e| js_err(&e))
}

fn read_js(d: &Dataset, sel: Option<&Selection>) -> Result<JsValue, JsError> {
    if let Some(n) = numeric(d.dtype()) {
        fn read<T: h5fmt::data::convert::H5Native>(
            d: &Dataset,
            sel: Option<&Selection>,
        ) -> h5fmt::Result<Vec<T>> {
            match sel {
                Some(s) => d.read_slice::<T>(s),
                None => d.read::<T>(),
            }
        }
        let r: h5fmt::Result<JsValue> = typed!(n, read, d, sel);
        return r.map_err(|e| js_err(&e));
    }
    let values = match sel {
        None => d.read_values(),
        Some(s) => d.read_slice_raw(s).and_then(|raw| {
            let file = d.file();
            decode_elements(
                d.dtype(),
                &raw,
                s.num_elements().unwrap_or(0),
                file.ctx(),
                &file.heap(),
            )
            .map_err(|e| e.with_path(d.path()))
        }),
    }
    .map_err(|e| js_err(&e))?;
    Ok(values_js(values))
}

fn values_js(values: Vec<Value>) -> JsValue {
    values.into_iter().map(value_js).collect::<Array>().into()
}

/// One value of any type as a JS value: numbers (`BigInt` beyond 2^53), strings,
/// `Uint8Array` for opaque data and strings that are not UTF-8, objects for compounds,
/// arrays for array, variable-length and complex (`[re, im]`) values.
fn value_js(v: Value) -> JsValue {
    match v {
        Value::Int(x) | Value::Time(x) => i64_js(x),
        Value::UInt(x) => u64_js(x),
        Value::BigInt(x) => js_sys::BigInt::from(x).into(),
        Value::BigUInt(x) | Value::F128(x) | Value::NonStandardFloat(x) => {
            js_sys::BigInt::from(x).into()
        }
        Value::F16(b) => JsValue::from_f64(h5fmt::data::convert::f16_to_f64(b)),
        Value::F32(f) => JsValue::from_f64(f64::from(f)),
        Value::F64(f) => JsValue::from_f64(f),
        Value::Str(s) => JsValue::from_str(&s),
        Value::RawStr(b) | Value::Opaque(b) => Uint8Array::from(b.as_slice()).into(),
        Value::Enum { code, .. } => i128_js(code),
        Value::Compound(ms) => {
            let o = JsObject::new();
            for (name, m) in ms {
                set(&o, &name, &value_js(m));
            }
            o.into()
        }
        Value::Array(xs) | Value::Vlen(xs) => values_js(xs),
        Value::Complex(re, im) => Array::of2(&value_js(*re), &value_js(*im)).into(),
        Value::Ref(r) => ref_js(r),
    }
}

/// A reference: `null`, `{object}` (the target's header address), `{object, npoints,
/// bounds}` for a region, `{object, attr}` for an attribute, `{file}` for another file.
fn ref_js(r: Reference) -> JsValue {
    let o = JsObject::new();
    match r {
        Reference::Null => return JsValue::NULL,
        Reference::Object(a) => set(&o, "object", &u64_js(a.0)),
        Reference::Region { obj, region } => {
            set(&o, "object", &u64_js(obj.0));
            set(&o, "npoints", &u64_js(region.npoints));
            if let Some((lo, hi)) = region.bounds {
                let lo: Array = lo.iter().map(|&x| u64_js(x)).collect();
                let hi: Array = hi.iter().map(|&x| u64_js(x)).collect();
                set(&o, "bounds", &Array::of2(&lo, &hi));
            }
        }
        Reference::Attribute { obj, name } => {
            set(&o, "object", &u64_js(obj.0));
            set(&o, "attr", &name.as_str().into());
        }
        Reference::External { file } => set(&o, "file", &file.as_str().into()),
    }
    o.into()
}
