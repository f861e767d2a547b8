//! Human-readable listings and dumps: `h5 ls`, `h5 dump`, `h5 dump --json`, `h5 cat`.
//!
//! Dataset values are read and printed in blocks of bounded size, so a dump
//! of a dataset of any size takes bounded memory.

use crate::cli::{bytes_bar, named, obj_err, Fail, Outcome};
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::data::{Reference, Value};
use h5fmt::format::datatype::{ByteOrder, Datatype};
use h5fmt::format::message::{Layout, LinkTarget, SpaceKind};
use h5fmt::read::LayoutClass;
use h5fmt::{Attribute, Dataset, File, Object};
use serde_json::{json, Map, Value as Json};
use std::collections::HashSet;
use std::io::Write;

/// Raw bytes read per block when streaming a dataset.
const BLOCK_BYTES: u64 = 1 << 20;
/// Elements per block at most (bounds the decoded values).
const BLOCK_ELEMS: u64 = 1 << 16;
/// Output line width of the text dump (as h5dump's default).
const WIDTH: usize = 80;

/// Bytes of repeated lines written at once by [`JsonRows::many`].
const BULK_BYTES: usize = 64 << 10;
/// Datasets of at least this many bytes get a progress bar (on a terminal).
const PROGRESS_BYTES: u64 = 64 << 20;
/// Group nesting followed at most.
const MAX_DEPTH: usize = 512;

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

/// An h5dump-style name of a datatype (its `Display`).
pub fn type_name(t: &Datatype) -> String {
    t.to_string()
}

/// A datatype as `h5 dump` prints it after `DATATYPE` on a line indented
/// by `indent`: strings and compounds over several lines as h5dump does
/// (so that lines stay short), other types on one.
pub fn dump_type(t: &Datatype, indent: &str) -> String {
    use h5fmt::format::datatype::{CharSet, StringPad};
    let inner = format!("{indent}   ");
    let string = |size: String, pad: &StringPad, cset: &CharSet| {
        let pad = match pad {
            StringPad::NullTerm => "H5T_STR_NULLTERM",
            StringPad::NullPad => "H5T_STR_NULLPAD",
            StringPad::SpacePad => "H5T_STR_SPACEPAD",
        };
        let cset = match cset {
            CharSet::Ascii => "H5T_CSET_ASCII",
            CharSet::Utf8 => "H5T_CSET_UTF8",
        };
        format!(
            "H5T_STRING {{\n{inner}STRSIZE {size};\n{inner}STRPAD {pad};\n\
             {inner}CSET {cset};\n{inner}CTYPE H5T_C_S1;\n{indent}}}"
        )
    };
    match t {
        Datatype::String { size, pad, cset } => string(size.to_string(), pad, cset),
        Datatype::VarLenString { pad, cset, .. } => string("H5T_VARIABLE".into(), pad, cset),
        Datatype::Compound { members, .. } => {
            let mut s = String::from("H5T_COMPOUND {\n");
            for m in members {
                s += &format!("{inner}{} {:?};\n", dump_type(&m.dtype, &inner), m.name);
            }
            s + indent + "}"
        }
        other => other.to_string(),
    }
}

/// A float as its shortest decimal text, in exponent form when that is
/// long (1e-300, not 0.000…0001).
fn float_text<F: std::fmt::Display + std::fmt::LowerExp>(x: F) -> String {
    let s = x.to_string();
    if s.len() > 16 {
        format!("{x:e}")
    } else {
        s
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
        Value::F32(f) => float_text(*f),
        Value::F64(f) => float_text(*f),
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

/// Blocks of a dataspace of `shape` for elements of `elem` bytes: hyperslabs
/// of at most 1 MiB and 65,536 elements (at least one element), in
/// row-major order, covering the dataspace once.
pub struct Blocks {
    shape: Vec<u64>,
    /// The dimension cut into ranges; dims before it take one index at a
    /// time, dims after it are whole.
    split: usize,
    /// Length of a range along `split`.
    step: u64,
    /// Current position: indices of the dims before `split`, then the start along `split`.
    pos: Vec<u64>,
    done: bool,
}

impl Blocks {
    /// The blocks of `shape` (an empty shape: one block, the scalar element).
    pub fn new(shape: &[u64], elem: u64) -> Self {
        let elem = elem.max(1);
        let max_elems = (BLOCK_BYTES / elem).clamp(1, BLOCK_ELEMS);
        let empty = shape.contains(&0);
        // The first dimension whose trailing sub-block fits in a block.
        let mut split = shape.len().saturating_sub(1);
        for j in 0..shape.len() {
            let inner: u64 = shape[j + 1..]
                .iter()
                .fold(1u64, |a, &d| a.saturating_mul(d));
            if inner <= max_elems {
                split = j;
                break;
            }
        }
        let inner: u64 = shape
            .get(split + 1..)
            .unwrap_or(&[])
            .iter()
            .fold(1u64, |a, &d| a.saturating_mul(d));
        let step = (max_elems / inner.max(1)).max(1);
        Blocks {
            shape: shape.to_vec(),
            split,
            step,
            pos: vec![0; shape.len().min(split + 1)],
            done: empty,
        }
    }
}

impl Iterator for Blocks {
    type Item = Selection;
    fn next(&mut self) -> Option<Selection> {
        if self.done {
            return None;
        }
        if self.shape.is_empty() {
            self.done = true;
            return Some(Selection::Hyperslab(Vec::new()));
        }
        let s = self.split;
        let mut dims = Vec::with_capacity(self.shape.len());
        for (i, &n) in self.shape.iter().enumerate() {
            dims.push(if i < s {
                SliceDim {
                    start: self.pos[i],
                    stride: 1,
                    count: 1,
                    block: 1,
                }
            } else if i == s {
                SliceDim {
                    start: self.pos[s],
                    stride: 1,
                    count: self.step.min(n - self.pos[s]),
                    block: 1,
                }
            } else {
                SliceDim::all(n)
            });
        }
        // Advance the odometer.
        self.pos[s] += self.step.min(self.shape[s] - self.pos[s]);
        if self.pos[s] >= self.shape[s] {
            self.pos[s] = 0;
            let mut i = s;
            loop {
                if i == 0 {
                    self.done = true;
                    break;
                }
                i -= 1;
                self.pos[i] += 1;
                if self.pos[i] < self.shape[i] {
                    break;
                }
                self.pos[i] = 0;
            }
        }
        Some(Selection::Hyperslab(dims))
    }
}

/// What [`for_each_block`] calls with each block: raw bytes, number of elements.
type BlockFn<'a> = dyn FnMut(&[u8], u64) -> Result<(), Fail> + 'a;

/// Read `d` block by block: `f(raw bytes, number of elements)` for each block in order.
fn for_each_block(d: &Dataset, progress: bool, f: &mut BlockFn<'_>) -> Result<(), Fail> {
    let elem = d.dtype().size();
    if d.space().kind == SpaceKind::Null {
        return Ok(());
    }
    let total = d.len().saturating_mul(elem);
    let bar = bytes_bar(progress && total >= PROGRESS_BYTES, total, d.path());
    for sel in Blocks::new(d.shape(), elem) {
        let n = sel.num_elements().unwrap_or(0);
        let raw = d
            .read_slice_raw(&sel)
            .map_err(|e| Fail::File(named(d.path(), e)))?;
        f(&raw, n)?;
        bar.inc(n.saturating_mul(elem));
    }
    bar.finish_and_clear();
    Ok(())
}

fn decode(
    file: &File,
    dtype: &Datatype,
    raw: &[u8],
    n: u64,
    what: &str,
) -> Result<Vec<Value>, Fail> {
    h5fmt::data::decode::decode_elements(dtype, raw, n, file.ctx(), &file.heap())
        .map_err(|e| Fail::File(named(what, e)))
}

/// `(size, signed)` of an integer type stored in whole bytes (1, 2, 4 or 8)
/// with all its bits significant: formatted straight from the bytes.
fn plain_int(t: &Datatype) -> Option<(usize, bool)> {
    match t {
        Datatype::Integer {
            size: size @ (1 | 2 | 4 | 8),
            order: ByteOrder::Little | ByteOrder::Big,
            signed,
            bit_offset: 0,
            precision,
        } if u32::from(*precision) == size * 8 => Some((*size as usize, *signed)),
        _ => None,
    }
}

/// A number type formatted straight from its (native-order) bytes.
#[derive(Clone, Copy)]
enum Plain {
    /// A whole-byte integer: size, signed.
    Int(usize, bool),
    F32,
    F64,
}

impl Plain {
    /// Whole-byte integers and IEEE f32/f64 (JSON text through
    /// [`Plain::push_json`]).
    fn of(t: &Datatype) -> Option<Plain> {
        if let Some((size, signed)) = plain_int(t) {
            return Some(Plain::Int(size, signed));
        }
        if !t.is_ieee_standard() {
            return None;
        }
        match t.size() {
            4 => Some(Plain::F32),
            8 => Some(Plain::F64),
            _ => None,
        }
    }

    fn size(self) -> usize {
        match self {
            Plain::Int(size, _) => size,
            Plain::F32 => 4,
            Plain::F64 => 8,
        }
    }

    /// Append the text of element `e` (exactly `size()` bytes).
    fn push(self, e: &[u8], out: &mut String) {
        match (self, e) {
            (Plain::Int(_, signed), _) => {
                let mut buf = [0u8; 24];
                out.push_str(int_text(e, signed, &mut buf));
            }
            (Plain::F32, &[a, b, c, d]) => {
                out.push_str(&float_text(f32::from_ne_bytes([a, b, c, d])))
            }
            (Plain::F64, &[a, b, c, d, e5, f6, g, h]) => {
                out.push_str(&float_text(f64::from_ne_bytes([a, b, c, d, e5, f6, g, h])))
            }
            _ => out.push('?'),
        }
    }

    /// Append the JSON of element `e`, as [`value_json`] writes it.
    fn push_json(self, e: &[u8], out: &mut String) {
        match (self, e) {
            (Plain::F32, &[a, b, c, d]) => {
                out.push_str(&float_json(f64::from(f32::from_ne_bytes([a, b, c, d]))).to_string())
            }
            (Plain::F64, &[a, b, c, d, e5, f6, g, h]) => out
                .push_str(&float_json(f64::from_ne_bytes([a, b, c, d, e5, f6, g, h])).to_string()),
            _ => self.push(e, out),
        }
    }
}

/// Where element texts go: one at a time, or a run of one text at once
/// (`rep` is the caller's scratch for that text, see [`Rows::push_repeat`]).
trait Sink {
    fn one(&mut self, text: &str) -> Result<(), Fail>;
    fn many(&mut self, text: &str, count: u64, rep: &mut String) -> Result<(), Fail>;
}

impl Sink for Rows<'_> {
    fn one(&mut self, text: &str) -> Result<(), Fail> {
        self.push(text)
    }
    fn many(&mut self, text: &str, count: u64, rep: &mut String) -> Result<(), Fail> {
        self.push_repeat(text, count, rep)
    }
}

/// The `"data"` array of `h5 dump --json`: values separated by ", ", in
/// lines of at most [`WIDTH`] columns that start with `prefix`.
struct JsonRows<'a> {
    out: &'a mut dyn Write,
    /// A newline and the indentation.
    prefix: String,
    line: String,
    first: bool,
    /// Whole lines of one run, repeated, written at once (see [`JsonRows::many`]).
    bulk: String,
}

impl<'a> JsonRows<'a> {
    fn new(out: &'a mut dyn Write, indent: &str) -> Self {
        JsonRows {
            out,
            prefix: format!("\n{indent}  "),
            line: String::new(),
            first: true,
            bulk: String::new(),
        }
    }

    /// The open line is full of a run's values and `lines` more lines of
    /// them follow: write it and `lines - 1` copies, and keep the last copy
    /// open, as that many [`Sink::one`] calls would (the lines of a run are
    /// all the same: billions of fill values are a memory copy per line).
    fn repeat_lines(&mut self, lines: u64) -> Result<(), Fail> {
        self.line.push(',');
        self.out.write_all(self.line.as_bytes())?;
        let per = (BULK_BYTES / self.line.len()).max(1);
        let mut left = usize::try_from(lines - 1).unwrap_or(usize::MAX);
        self.bulk.clear();
        for _ in 0..per.min(left) {
            self.bulk.push_str(&self.line);
        }
        while left > 0 {
            let n = per.min(left);
            self.out
                .write_all(&self.bulk.as_bytes()[..n * self.line.len()])?;
            left -= n;
        }
        self.line.pop();
        Ok(())
    }

    /// Whether the next value starts a new line.
    fn wraps(&self, len: usize) -> bool {
        self.first || self.line.len() + len + 2 > WIDTH
    }

    fn end(self) -> Result<(), Fail> {
        self.out.write_all(self.line.as_bytes())?;
        Ok(())
    }
}

impl Sink for JsonRows<'_> {
    fn one(&mut self, t: &str) -> Result<(), Fail> {
        let wrap = self.wraps(t.len());
        if !self.first {
            self.line.push(',');
        }
        if wrap {
            self.out.write_all(self.line.as_bytes())?;
            self.line.clear();
            self.line.push_str(&self.prefix);
        } else {
            self.line.push(' ');
        }
        self.line.push_str(t);
        self.first = false;
        Ok(())
    }

    fn many(&mut self, t: &str, mut count: u64, rep: &mut String) -> Result<(), Fail> {
        let len = t.len();
        while count > 0 {
            if count < 4 || !self.wraps(len) {
                self.one(t)?;
                count -= 1;
                continue;
            }
            // A new line: `t` and as many `, t` as fit.
            self.one(t)?;
            count -= 1;
            let mut k = 0u64;
            let mut width = self.line.len();
            while k < count && width + len + 2 <= WIDTH {
                width += len + 2;
                k += 1;
            }
            let body = k as usize * (len + 2);
            while rep.len() < body {
                rep.push_str(", ");
                rep.push_str(t);
            }
            self.line.push_str(&rep[..body]);
            count -= k;
            // Full (it took fewer than the run had left): the lines that
            // follow are this one again.
            let per_line = k + 1;
            if count >= 2 * per_line {
                let lines = count / per_line;
                self.repeat_lines(lines)?;
                count -= lines * per_line;
            }
        }
        Ok(())
    }
}

/// Plain numbers written run by run: a run of equal elements goes to
/// [`Sink::many`].
#[derive(Default)]
struct Runs {
    /// The element `text` and `rep` are for, and its text.
    elem: Vec<u8>,
    text: String,
    /// `text, ` repeated (see [`Rows::push_repeat`]).
    rep: String,
    /// `elem` repeated [`Runs::SPAN`] times, to compare spans at once.
    span: Vec<u8>,
}

impl Runs {
    /// Bytes compared at once.
    const SPAN: usize = 256;

    fn write(
        &mut self,
        p: Plain,
        json: bool,
        bytes: &[u8],
        rows: &mut dyn Sink,
    ) -> Result<(), Fail> {
        let es = p.size();
        let mut i = 0;
        while i + es <= bytes.len() {
            let e = &bytes[i..i + es];
            if e != self.elem.as_slice() {
                self.elem.clear();
                self.elem.extend_from_slice(e);
                self.text.clear();
                if json {
                    p.push_json(e, &mut self.text);
                } else {
                    p.push(e, &mut self.text);
                }
                self.rep.clear();
                self.span.clear();
            }
            // The run starting at `i`: whole spans compared at once.
            let mut j = i + es;
            if bytes.get(j..j + es) == Some(e) {
                if self.span.is_empty() {
                    self.span = e.repeat(Self::SPAN / es);
                }
                let w = self.span.len();
                while bytes.get(j..j + w) == Some(self.span.as_slice()) {
                    j += w;
                }
                while bytes.get(j..j + es) == Some(e) {
                    j += es;
                }
            }
            let count = ((j - i) / es) as u64;
            if count == 1 {
                rows.one(&self.text)?;
            } else {
                rows.many(&self.text, count, &mut self.rep)?;
            }
            i = j;
        }
        Ok(())
    }
}

/// A dataset of plain numbers `p` into `sink`, run by run.
fn plain_runs(
    d: &Dataset,
    progress: bool,
    p: Plain,
    json: bool,
    sink: &mut dyn Sink,
) -> Result<(), Fail> {
    let mut runs = Runs::default();
    for_each_block(d, progress, &mut |raw, _| {
        let mut bytes = raw.to_vec();
        h5fmt::data::convert::to_native_order(d.dtype(), &mut bytes)
            .map_err(|e| Fail::File(named(d.path(), e)))?;
        runs.write(p, json, &bytes, sink)
    })
}

/// The decimal digits of `v`, written at the end of `buf`; where they start.
fn digits_at_end(mut v: u64, buf: &mut [u8; 24]) -> usize {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    i
}

/// The decimal digits of `v`.
fn int_bytes(v: u64, buf: &mut [u8; 24]) -> &[u8] {
    let i = digits_at_end(v, buf);
    &buf[i..]
}

/// The decimal text of a native-order integer element of `e.len()` bytes.
fn int_text<'b>(e: &[u8], signed: bool, buf: &'b mut [u8; 24]) -> &'b str {
    let mut v = match *e {
        [a] => u64::from(a),
        [a, b] => u64::from(u16::from_ne_bytes([a, b])),
        [a, b, c, d] => u64::from(u32::from_ne_bytes([a, b, c, d])),
        [a, b, c, d, e5, f, g, h] => u64::from_ne_bytes([a, b, c, d, e5, f, g, h]),
        _ => return "?",
    };
    let bits = e.len() * 8;
    let neg = signed && (v >> (bits - 1)) & 1 == 1;
    if neg {
        // Two's complement magnitude within `bits`.
        let mask = if bits == 64 {
            u64::MAX
        } else {
            (1u64 << bits) - 1
        };
        v = ((!v) & mask).wrapping_add(1) & mask;
        if bits == 64 && v == 0 {
            v = 1 << 63;
        }
    }
    let mut i = digits_at_end(v, buf);
    if neg {
        i -= 1;
        buf[i] = b'-';
    }
    std::str::from_utf8(&buf[i..]).unwrap_or("?")
}

/// Elements of a block in text (or JSON) that are not plain numbers (those
/// go through [`plain_runs`]): arrays of plain numbers straight from the
/// bytes, the rest through [`Value`]s.
fn for_each_text(
    file: &File,
    d: &Dataset,
    raw: &[u8],
    n: u64,
    json: bool,
    f: &mut dyn FnMut(&str) -> Result<(), Fail>,
) -> Result<(), Fail> {
    let dtype = d.dtype();
    let native = |raw: &[u8]| -> Result<Vec<u8>, Fail> {
        let mut bytes = raw.to_vec();
        h5fmt::data::convert::to_native_order(dtype, &mut bytes)
            .map_err(|e| Fail::File(named(d.path(), e)))?;
        Ok(bytes)
    };
    // Arrays of plain numbers, as `value_text` writes them, without a
    // `Value` per number (an array element may hold millions).
    if let Datatype::Array { base, .. } = dtype {
        if let Some(p) = Plain::of(base) {
            let size = usize::try_from(dtype.size()).unwrap_or(0);
            if size > 0 && size.is_multiple_of(p.size()) {
                let bytes = native(raw)?;
                let sep = if json { "," } else { ", " };
                let mut text = String::new();
                for e in bytes.chunks_exact(size) {
                    text.clear();
                    text.push('[');
                    for (k, x) in e.chunks_exact(p.size()).enumerate() {
                        if k > 0 {
                            text.push_str(sep);
                        }
                        if json {
                            p.push_json(x, &mut text);
                        } else {
                            p.push(x, &mut text);
                        }
                    }
                    text.push(']');
                    f(&text)?;
                }
                return Ok(());
            }
        }
    }
    for v in decode(file, d.dtype(), raw, n, d.path())? {
        if json {
            f(&value_json(&v).to_string())?;
        } else {
            f(&value_text(&v))?;
        }
    }
    Ok(())
}

/// The text of the element at flat index `i` of `shape` as `(i0,i1,…)`,
/// appended to `out`.
fn push_coords(out: &mut String, shape: &[u64], mut i: u64) {
    if shape.is_empty() {
        out.push_str("(0)");
        return;
    }
    let mut c = [0u64; 32];
    let rank = shape.len().min(c.len());
    for k in (0..rank).rev() {
        let n = shape[k].max(1);
        c[k] = i % n;
        i /= n;
    }
    out.push('(');
    for (k, x) in c[..rank].iter().enumerate() {
        if k > 0 {
            out.push(',');
        }
        let mut buf = [0u8; 24];
        out.push_str(int_text(&x.to_ne_bytes(), false, &mut buf));
    }
    out.push(')');
}

/// Values written as h5dump does: lines of at most [`WIDTH`] columns, each
/// starting with the coordinates of its first element, a new line at the
/// start of each row of the last dimension.
struct Rows<'a> {
    out: &'a mut dyn Write,
    indent: String,
    shape: Vec<u64>,
    row: u64,
    next: u64,
    line: String,
}

impl<'a> Rows<'a> {
    fn new(out: &'a mut dyn Write, indent: &str, shape: &[u64]) -> Self {
        Rows {
            out,
            indent: indent.to_string(),
            row: shape.last().copied().unwrap_or(1).max(1),
            shape: shape.to_vec(),
            next: 0,
            line: String::new(),
        }
    }

    fn push(&mut self, text: &str) -> Result<(), Fail> {
        let row_start = self.next.is_multiple_of(self.row);
        // The line, ", ", the value and the "," that ends a line fit in WIDTH.
        if !self.line.is_empty() && (row_start || self.line.len() + 3 + text.len() > WIDTH) {
            self.line.push_str(",\n");
            self.out.write_all(self.line.as_bytes())?;
            self.line.clear();
        }
        if self.line.is_empty() {
            self.line.push_str(&self.indent);
            push_coords(&mut self.line, &self.shape, self.next);
            self.line.push_str(": ");
        } else {
            self.line.push_str(", ");
        }
        self.line.push_str(text);
        self.next += 1;
        Ok(())
    }

    /// `count` copies of `text`, as many [`Rows::push`] calls would write
    /// them, but a whole line at a time (large datasets are often long runs
    /// of one value: zeros, fill values).
    fn push_repeat(&mut self, text: &str, mut count: u64, rep: &mut String) -> Result<(), Fail> {
        let len = text.len();
        while count > 0 {
            let row_start = self.next.is_multiple_of(self.row);
            let opens = self.line.is_empty() || row_start || self.line.len() + 3 + len > WIDTH;
            if !opens || count < 4 {
                self.push(text)?;
                count -= 1;
                continue;
            }
            if !self.line.is_empty() {
                self.line.push_str(",\n");
                self.out.write_all(self.line.as_bytes())?;
                self.line.clear();
            }
            if self.line.is_empty() && count > 2 * WIDTH as u64 {
                count = self.repeat_lines(text, count, rep)?;
                if count < 4 {
                    continue;
                }
            }
            self.line.push_str(&self.indent);
            push_coords(&mut self.line, &self.shape, self.next);
            self.line.push_str(": ");
            let limit = count.min(self.row - self.next % self.row);
            let (mut k, mut width) = (1u64, self.line.len() + len);
            while k < limit && width + 3 + len <= WIDTH {
                width += 2 + len;
                k += 1;
            }
            // `k` is at most WIDTH / 2 here.
            let body = (k as usize) * (len + 2) - 2;
            while rep.len() < body {
                rep.push_str(text);
                rep.push_str(", ");
            }
            self.line.push_str(&rep[..body]);
            self.next += k;
            count -= k;
            if count > 0 {
                self.line.push_str(",\n");
                self.out.write_all(self.line.as_bytes())?;
                self.line.clear();
            }
        }
        Ok(())
    }

    /// The bulk of a long run of `text` (the line empty): every line that the run fills and
    /// outlasts, written as [`Rows::push_repeat`] writes them, but assembled in a local buffer
    /// with only the last coordinate formatted per line (a fill-only dataset of billions of
    /// elements is hundreds of millions of such lines). Returns the count left, which ends
    /// with a line of its own (at most one line's worth, or a run crossing no whole line).
    fn repeat_lines(&mut self, text: &str, mut count: u64, rep: &mut String) -> Result<u64, Fail> {
        let len = text.len();
        let unit = len + 2;
        let mut buf: Vec<u8> = Vec::with_capacity(1 << 16);
        // `indent(c0,c1,…,` for the row of `self.next`.
        let mut prefix: Vec<u8> = Vec::new();
        let mut prefix_row = u64::MAX;
        let mut digits = [0u8; 24];
        while count > 0 {
            let row = self.next / self.row;
            if row != prefix_row {
                prefix.clear();
                prefix.extend_from_slice(self.indent.as_bytes());
                let mut coords = String::new();
                push_coords(&mut coords, &self.shape, self.next);
                // Everything up to the last coordinate.
                let cut = coords.rfind([',', '(']).map_or(0, |p| p + 1);
                prefix.extend_from_slice(&coords.as_bytes()[..cut]);
                prefix_row = row;
            }
            let last = self.next % self.row;
            let last_text = int_bytes(last, &mut digits);
            // `prefix` + last coordinate + "): " + the first value.
            let width = prefix.len() + last_text.len() + 3 + len;
            let more = if width + 3 + len <= WIDTH {
                (WIDTH - 3 - len - width) / unit + 1
            } else {
                0
            };
            let limit = count.min(self.row - last);
            let k = (1 + more as u64).min(limit);
            if k >= count {
                // The run ends within this line: the caller writes it.
                break;
            }
            while rep.len() < k as usize * unit {
                rep.push_str(text);
                rep.push_str(", ");
            }
            buf.extend_from_slice(&prefix);
            buf.extend_from_slice(last_text);
            buf.extend_from_slice(b"): ");
            buf.extend_from_slice(&rep.as_bytes()[..k as usize * unit - 2]);
            buf.extend_from_slice(b",\n");
            self.next += k;
            count -= k;
            if buf.len() > (1 << 16) - 256 {
                self.out.write_all(&buf)?;
                buf.clear();
            }
        }
        self.out.write_all(&buf)?;
        Ok(count)
    }

    fn end(self) -> Result<(), Fail> {
        if !self.line.is_empty() {
            writeln!(self.out, "{}", self.line)?;
        }
        Ok(())
    }
}

/// Options of `h5 ls`.
#[derive(Debug, Clone, Default)]
pub struct LsOptions {
    /// Recurse into subgroups (depth first, full paths, as `h5ls -r`).
    pub recursive: bool,
    /// Type, layout, chunks, filters and compression ratio of datasets,
    /// their dimension scales, and PyTables' node class and `VERSION` of
    /// groups and datasets with PyTables' `CLASS` attribute.
    pub long: bool,
    /// JSON Lines output.
    pub json: bool,
}

/// The stored size of a dataset's data in bytes, where known.
fn stored_bytes(d: &Dataset) -> Option<u64> {
    match d.layout() {
        Layout::Compact { data } => Some(data.len() as u64),
        Layout::Contiguous { addr, size } => Some(if addr.is_undef() { 0 } else { *size }),
        Layout::Chunked(c) => {
            let es = usize::try_from(d.dtype().size()).ok()?;
            let recs = h5fmt::read::chunks::chunk_records(
                d.file().storage(),
                d.file().ctx(),
                c,
                &d.space().dims,
                d.space().max_dims_or_dims(),
                es,
                !d.filters().filters.is_empty(),
            )
            .ok()?;
            Some(recs.iter().map(|r| r.size).sum())
        }
        Layout::Virtual { .. } => None,
    }
}

fn filter_names(d: &Dataset) -> Vec<String> {
    d.filters()
        .filters
        .iter()
        .map(|f| {
            let name = h5fmt::filter::filter_name(f.id)
                .map(str::to_string)
                .or_else(|| f.name.clone())
                .unwrap_or_else(|| format!("filter {}", f.id));
            if f.client_data.is_empty() || f.id != 1 {
                name
            } else {
                format!("{name}({})", f.client_data[0])
            }
        })
        .collect()
}

fn layout_name(d: &Dataset) -> &'static str {
    match d.layout_class() {
        LayoutClass::Compact => "compact",
        LayoutClass::Contiguous => "contiguous",
        LayoutClass::Chunked => "chunked",
        LayoutClass::Virtual => "virtual",
    }
}

fn chunk_dims(d: &Dataset) -> Option<Vec<u64>> {
    match d.layout() {
        Layout::Chunked(c) => Some(c.dims.clone()),
        _ => None,
    }
}

fn ratio(d: &Dataset) -> Option<f64> {
    let stored = stored_bytes(d)?;
    let logical = d.len().saturating_mul(d.dtype().size());
    (stored > 0).then(|| logical as f64 / stored as f64)
}

/// PyTables' node class of `obj` and its `VERSION`, when `obj` carries a
/// `CLASS` string attribute PyTables registers (see
/// [`h5table::pytables::node_class_name`]).
fn pytables_class(obj: &Object) -> Option<(&'static str, Option<String>)> {
    let attr = |name: &str| match obj {
        Object::Group(g) => g.attr(name).ok(),
        Object::Dataset(d) => d.attr(name).ok(),
        Object::Datatype(_) => None,
    };
    let class = attr("CLASS")?.read_string().ok()?;
    let name = h5table::pytables::node_class_name(&class)?;
    Some((name, attr("VERSION").and_then(|a| a.read_string().ok())))
}

/// `  PyTables CLASS VERSION` for [`pytables_class`].
fn pytables_text(obj: &Object) -> String {
    match pytables_class(obj) {
        Some((name, Some(v))) => format!("  PyTables {name} {v}"),
        Some((name, None)) => format!("  PyTables {name}"),
        None => String::new(),
    }
}

fn ls_text(name: &str, obj: &Object, long: bool, names: &crate::dims::Names<'_>) -> String {
    match obj {
        Object::Group(_) if long => format!("{name:<24} Group{}", pytables_text(obj)),
        Object::Group(_) => format!("{name:<24} Group"),
        Object::Datatype(t) if long => format!("{name:<24} Type {}", type_name(t.dtype())),
        Object::Datatype(_) => format!("{name:<24} Type"),
        Object::Dataset(d) => {
            let mut s = format!(
                "{name:<24} Dataset {}",
                space_text(d.shape(), d.maxshape(), d.space().kind)
            );
            if long {
                s.push_str(&format!("  {}  {}", type_name(d.dtype()), layout_name(d)));
                if let Some(c) = chunk_dims(d) {
                    let c: Vec<String> = c.iter().map(u64::to_string).collect();
                    s.push_str(&format!(" {{{}}}", c.join(", ")));
                }
                let f = filter_names(d);
                if !f.is_empty() {
                    s.push_str(&format!("  filters {}", f.join(",")));
                }
                if let Some(r) = ratio(d) {
                    s.push_str(&format!("  ratio {r:.2}"));
                }
                s.push_str(&crate::dims::text(d, names));
                s.push_str(&pytables_text(obj));
            }
            s
        }
    }
}

/// `"pytables": {"class", "version"}` of [`pytables_class`] into `m`.
fn pytables_json(obj: &Object, m: &mut Map<String, Json>) {
    if let Some((name, version)) = pytables_class(obj) {
        m.insert(
            "pytables".into(),
            json!({"class": name, "version": version}),
        );
    }
}

fn ls_json(path: &str, obj: &Object, long: bool, names: &crate::dims::Names<'_>) -> Json {
    match obj {
        Object::Group(_) if long => {
            let mut m = Map::new();
            m.insert("path".into(), json!(path));
            m.insert("kind".into(), json!("group"));
            pytables_json(obj, &mut m);
            Json::Object(m)
        }
        Object::Group(_) => json!({"path": path, "kind": "group"}),
        Object::Datatype(t) => {
            json!({"path": path, "kind": "datatype", "dtype": type_name(t.dtype())})
        }
        Object::Dataset(d) => {
            let mut m = Map::new();
            m.insert("path".into(), json!(path));
            m.insert("kind".into(), json!("dataset"));
            m.insert("shape".into(), json!(d.shape()));
            m.insert("maxshape".into(), json!(d.maxshape()));
            m.insert("dtype".into(), json!(type_name(d.dtype())));
            if long {
                m.insert("layout".into(), json!(layout_name(d)));
                m.insert("chunks".into(), json!(chunk_dims(d)));
                m.insert("filters".into(), json!(filter_names(d)));
                m.insert("stored_bytes".into(), json!(stored_bytes(d)));
                m.insert("ratio".into(), ratio(d).map_or(Json::Null, float_json));
                crate::dims::json(d, names, &mut m);
                pytables_json(obj, &mut m);
            }
            Json::Object(m)
        }
    }
}

/// `h5 ls`: one line per member (a JSON object per line with `json`). An
/// object that cannot be read is marked and the listing goes on; the
/// outcome is then [`Outcome::Problems`].
///
/// # Errors
/// `File` when the start object cannot be read; `BrokenPipe`.
pub fn ls_with(
    file: &File,
    file_name: &str,
    path: &str,
    opts: &LsOptions,
    out: &mut dyn Write,
) -> Result<Outcome, Fail> {
    let start = file.object(path).map_err(|e| obj_err(file_name, path, e))?;
    let mut bad = 0usize;
    let names = crate::dims::Names::new(file);
    let emit = |out: &mut dyn Write, shown: &str, full: &str, obj: Result<&Object, String>| {
        let r = match (obj, opts.json) {
            (Ok(o), false) => writeln!(out, "{}", ls_text(shown, o, opts.long, &names)),
            (Ok(o), true) => writeln!(out, "{}", ls_json(full, o, opts.long, &names)),
            (Err(e), false) => writeln!(out, "{shown:<24} ** error: {} **", one_line(&e)),
            (Err(e), true) => writeln!(out, "{}", json!({"path": full, "error": e})),
        };
        r.map_err(Fail::from)
    };
    let Object::Group(g) = &start else {
        emit(out, path, path, Ok(&start))?;
        return Ok(Outcome::Clean);
    };
    if opts.recursive {
        emit(out, path, path, Ok(&start))?;
    }
    let mut seen = HashSet::new();
    seen.insert(g.addr());
    // Depth first: a stack of (group path, its links not yet shown, reversed).
    let mut stack: Vec<(String, Vec<h5fmt::read::Link>)> = Vec::new();
    match g.links() {
        Ok(mut l) => {
            l.reverse();
            stack.push((path.to_string(), l));
        }
        Err(e) => {
            bad += 1;
            emit(out, path, path, Err(format!("cannot list members: {e}")))?;
        }
    }
    while let Some((gpath, links)) = stack.last_mut() {
        let Some(l) = links.pop() else {
            stack.pop();
            continue;
        };
        let gpath = gpath.clone();
        let p = join(&gpath, &l.name);
        let shown = if opts.recursive {
            p.clone()
        } else {
            l.name.clone()
        };
        match l.target {
            LinkTarget::Hard(addr) => match file.object_at(addr, &p) {
                Ok(obj) => {
                    emit(out, &shown, &p, Ok(&obj))?;
                    if let Object::Group(sg) = &obj {
                        if opts.recursive && seen.insert(sg.addr()) {
                            if stack.len() >= MAX_DEPTH {
                                bad += 1;
                                emit(out, &shown, &p, Err("groups nested too deep".into()))?;
                                continue;
                            }
                            match sg.links() {
                                Ok(mut ls) => {
                                    ls.reverse();
                                    stack.push((p, ls));
                                }
                                Err(e) => {
                                    bad += 1;
                                    emit(
                                        out,
                                        &shown,
                                        &p,
                                        Err(format!("cannot list members: {e}")),
                                    )?;
                                }
                            }
                        }
                    }
                }
                Err(e) => {
                    bad += 1;
                    emit(out, &shown, &p, Err(e.to_string()))?;
                }
            },
            LinkTarget::Soft(t) => {
                if opts.json {
                    writeln!(
                        out,
                        "{}",
                        json!({"path": p, "kind": "soft_link", "target": t})
                    )?;
                } else {
                    writeln!(out, "{shown:<24} Soft Link {{{t}}}")?;
                }
            }
            LinkTarget::External { file: f, path: t } => {
                if opts.json {
                    writeln!(
                        out,
                        "{}",
                        json!({"path": p, "kind": "external_link", "file": f, "target": t})
                    )?;
                } else {
                    writeln!(out, "{shown:<24} External Link {{{f}/{t}}}")?;
                }
            }
            LinkTarget::UserDefined { class, .. } => {
                if opts.json {
                    writeln!(
                        out,
                        "{}",
                        json!({"path": p, "kind": "user_defined_link", "class": class})
                    )?;
                } else {
                    writeln!(out, "{shown:<24} User-defined Link (class {class})")?;
                }
            }
        }
    }
    if bad > 0 {
        out.flush()?;
        eprintln!("h5: {file_name}: {bad} object(s) could not be read");
        Ok(Outcome::Problems)
    } else {
        Ok(Outcome::Clean)
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Options of `h5 dump` (text and JSON).
#[derive(Debug, Clone, Default)]
pub struct DumpOptions {
    /// Types, shapes and attributes only, no dataset values.
    pub header_only: bool,
    /// A progress bar on stderr for large datasets (when stderr is a terminal).
    pub progress: bool,
}

struct Dumper<'a> {
    file: &'a File,
    opts: &'a DumpOptions,
    seen: HashSet<h5fmt::Addr>,
    bad: Vec<String>,
}

impl Dumper<'_> {
    fn problem(
        &mut self,
        out: &mut dyn Write,
        indent: &str,
        what: &str,
        e: &str,
    ) -> Result<(), Fail> {
        writeln!(out, "{indent}<error: {}>", one_line(e))?;
        self.bad.push(named(what, e));
        Ok(())
    }

    fn attrs(
        &mut self,
        out: &mut dyn Write,
        what: &str,
        attrs: h5fmt::Result<Vec<Attribute>>,
        indent: &str,
    ) -> Result<(), Fail> {
        let attrs = match attrs {
            Ok(a) => a,
            Err(e) => return self.problem(out, indent, what, &format!("attributes: {e}")),
        };
        for a in attrs {
            writeln!(out, "{indent}ATTRIBUTE \"{}\" {{", a.name())?;
            writeln!(
                out,
                "{indent}   DATATYPE  {}",
                dump_type(a.dtype(), &format!("{indent}   "))
            )?;
            writeln!(
                out,
                "{indent}   DATASPACE  {}",
                space_text(a.shape(), None, a.space().kind)
            )?;
            if !self.opts.header_only {
                match a.read_values() {
                    Ok(v) => {
                        writeln!(out, "{indent}   DATA {{")?;
                        let mut rows = Rows::new(out, &format!("{indent}   "), a.shape());
                        for x in &v {
                            rows.push(&value_text(x))?;
                        }
                        rows.end()?;
                        writeln!(out, "{indent}   }}")?;
                    }
                    Err(e) => {
                        let w = format!("{what} (attribute {:?})", a.name());
                        self.problem(out, &format!("{indent}   "), &w, &e.to_string())?;
                    }
                }
            }
            writeln!(out, "{indent}}}")?;
        }
        Ok(())
    }

    fn data(&mut self, out: &mut dyn Write, d: &Dataset, indent: &str) -> Result<(), Fail> {
        writeln!(out, "{indent}DATA {{")?;
        let file = self.file;
        let mut rows = Rows::new(out, indent, d.shape());
        let r = match Plain::of(d.dtype()) {
            Some(p) => plain_runs(d, self.opts.progress, p, false, &mut rows),
            None => for_each_block(d, self.opts.progress, &mut |raw, n| {
                for_each_text(file, d, raw, n, false, &mut |t| rows.push(t))
            }),
        };
        rows.end()?;
        match r {
            Err(Fail::File(e)) => self.problem(out, indent, d.path(), &e)?,
            Err(e) => return Err(e),
            Ok(()) => {}
        }
        writeln!(out, "{indent}}}")?;
        Ok(())
    }

    fn obj(
        &mut self,
        out: &mut dyn Write,
        obj: &Object,
        name: &str,
        indent: &str,
        depth: usize,
    ) -> Result<(), Fail> {
        let inner = format!("{indent}   ");
        match obj {
            Object::Group(g) => {
                writeln!(out, "{indent}GROUP \"{name}\" {{")?;
                if !self.seen.insert(g.addr()) {
                    writeln!(out, "{inner}HARDLINK to an object already shown")?;
                } else if depth > MAX_DEPTH {
                    self.problem(out, &inner, g.path(), "groups nested too deep")?;
                } else {
                    self.attrs(out, g.path(), g.attrs(), &inner)?;
                    match g.links() {
                        Err(e) => self.problem(
                            out,
                            &inner,
                            g.path(),
                            &format!("cannot list members: {e}"),
                        )?,
                        Ok(links) => {
                            for l in links {
                                let p = join(g.path(), &l.name);
                                match l.target {
                                    LinkTarget::Hard(addr) => match self.file.object_at(addr, &p) {
                                        Ok(child) => self.obj(out, &child, &l.name, &inner, depth + 1)?,
                                        Err(e) => self.problem(out, &inner, &p, &e.to_string())?,
                                    },
                                    LinkTarget::Soft(t) => writeln!(out, "{inner}SOFTLINK \"{}\" {{ LINKTARGET \"{t}\" }}", l.name)?,
                                    LinkTarget::External { file: f, path: t } => writeln!(
                                        out,
                                        "{inner}EXTERNAL_LINK \"{}\" {{ TARGETFILE \"{f}\" TARGETPATH \"{t}\" }}",
                                        l.name
                                    )?,
                                    LinkTarget::UserDefined { class, .. } => writeln!(out, "{inner}USERDEFINED_LINK \"{}\" {{ CLASS {class} }}", l.name)?,
                                }
                            }
                        }
                    }
                }
                writeln!(out, "{indent}}}")?;
            }
            Object::Dataset(d) => {
                writeln!(out, "{indent}DATASET \"{name}\" {{")?;
                writeln!(out, "{inner}DATATYPE  {}", dump_type(d.dtype(), &inner))?;
                writeln!(
                    out,
                    "{inner}DATASPACE  {}",
                    space_text(d.shape(), d.maxshape(), d.space().kind)
                )?;
                if !self.opts.header_only {
                    self.data(out, d, &inner)?;
                }
                self.attrs(out, d.path(), d.attrs(), &inner)?;
                writeln!(out, "{indent}}}")?;
            }
            Object::Datatype(t) => {
                writeln!(
                    out,
                    "{indent}DATATYPE \"{name}\" {}",
                    dump_type(t.dtype(), indent)
                )?;
            }
        }
        Ok(())
    }

    fn outcome(&self, file_name: &str) -> Outcome {
        if self.bad.is_empty() {
            return Outcome::Clean;
        }
        for b in &self.bad {
            eprintln!("h5: {file_name}: {b}");
        }
        Outcome::Problems
    }
}

/// `h5 dump`: h5dump-like text of the object at `path` and everything below
/// it, dataset values in lines of at most 80 columns, read block by block.
/// An object that cannot be read is marked (`<error: …>`) and the dump goes
/// on; the outcome is then [`Outcome::Problems`] (one line per problem on stderr).
///
/// # Errors
/// `File` when the object at `path` cannot be read; `BrokenPipe`.
pub fn dump_with(
    file: &File,
    file_name: &str,
    path: &str,
    opts: &DumpOptions,
    out: &mut dyn Write,
) -> Result<Outcome, Fail> {
    let obj = file.object(path).map_err(|e| obj_err(file_name, path, e))?;
    writeln!(out, "HDF5 \"{file_name}\" {{")?;
    let mut d = Dumper {
        file,
        opts,
        seen: HashSet::new(),
        bad: Vec::new(),
    };
    d.obj(out, &obj, path, "", 0)?;
    writeln!(out, "}}")?;
    out.flush()?;
    Ok(d.outcome(file_name))
}

/// A JSON string literal.
fn jstr(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

impl Dumper<'_> {
    fn attrs_json(&mut self, what: &str, attrs: h5fmt::Result<Vec<Attribute>>) -> Json {
        let mut m = Map::new();
        let attrs = match attrs {
            Ok(a) => a,
            Err(e) => {
                self.bad
                    .push(format!("{what}: attributes: {}", one_line(&e.to_string())));
                return json!({"error": e.to_string()});
            }
        };
        for a in attrs {
            let v = match a.read_values() {
                Ok(vals) if a.space().kind == SpaceKind::Scalar => {
                    vals.first().map(value_json).unwrap_or(Json::Null)
                }
                Ok(vals) => Json::Array(vals.iter().map(value_json).collect()),
                Err(e) => {
                    self.bad.push(format!(
                        "{what} (attribute {:?}): {}",
                        a.name(),
                        one_line(&e.to_string())
                    ));
                    json!({"error": e.to_string()})
                }
            };
            m.insert(a.name().to_string(), v);
        }
        Json::Object(m)
    }

    fn obj_json(
        &mut self,
        out: &mut dyn Write,
        obj: &Object,
        indent: &str,
        depth: usize,
    ) -> Result<(), Fail> {
        let inner = format!("{indent}  ");
        match obj {
            Object::Group(g) => {
                let first = self.seen.insert(g.addr());
                let attrs = self.attrs_json(g.path(), g.attrs());
                write!(out, "{{\n{inner}\"type\": \"group\",\n{inner}\"attrs\": {attrs},\n{inner}\"members\": {{")?;
                let mut n = 0;
                if first && depth <= MAX_DEPTH {
                    let links = match g.links() {
                        Ok(l) => l,
                        Err(e) => {
                            self.bad.push(format!(
                                "{}: cannot list members: {}",
                                g.path(),
                                one_line(&e.to_string())
                            ));
                            Vec::new()
                        }
                    };
                    for l in links {
                        let p = join(g.path(), &l.name);
                        write!(
                            out,
                            "{}\n{inner}  {}: ",
                            if n > 0 { "," } else { "" },
                            jstr(&l.name)
                        )?;
                        n += 1;
                        match l.target {
                            LinkTarget::Hard(addr) => match self.file.object_at(addr, &p) {
                                Ok(child) => {
                                    self.obj_json(out, &child, &format!("{inner}  "), depth + 1)?
                                }
                                Err(e) => {
                                    self.bad.push(named(&p, e.to_string()));
                                    write!(out, "{}", json!({"error": e.to_string()}))?;
                                }
                            },
                            LinkTarget::Soft(t) => write!(out, "{}", json!({"soft_link": t}))?,
                            LinkTarget::External { file: f, path: t } => {
                                write!(out, "{}", json!({"external_link": {"file": f, "path": t}}))?
                            }
                            LinkTarget::UserDefined { class, .. } => {
                                write!(out, "{}", json!({"user_defined_link": class}))?
                            }
                        }
                    }
                } else if first {
                    self.bad
                        .push(format!("{}: groups nested too deep", g.path()));
                }
                if n > 0 {
                    write!(out, "\n{inner}")?;
                }
                write!(out, "}}\n{indent}}}")?;
            }
            Object::Dataset(d) => {
                let attrs = self.attrs_json(d.path(), d.attrs());
                write!(
                    out,
                    "{{\n{inner}\"type\": \"dataset\",\n{inner}\"dtype\": {},\n{inner}\"shape\": {},\n{inner}\"attrs\": {attrs}",
                    jstr(&type_name(d.dtype())),
                    json!(d.shape())
                )?;
                if !self.opts.header_only {
                    write!(out, ",\n{inner}\"data\": [")?;
                    let file = self.file;
                    let mut rows = JsonRows::new(out, &inner);
                    let r = match Plain::of(d.dtype()) {
                        Some(p) => plain_runs(d, self.opts.progress, p, true, &mut rows),
                        None => for_each_block(d, self.opts.progress, &mut |raw, n| {
                            for_each_text(file, d, raw, n, true, &mut |t| rows.one(t))
                        }),
                    };
                    rows.end()?;
                    match r {
                        Err(Fail::File(e)) => {
                            self.bad.push(one_line(&e));
                            write!(out, "\n{inner}],\n{inner}\"error\": {}", jstr(&e))?;
                        }
                        Err(e) => return Err(e),
                        Ok(()) => write!(out, "\n{inner}]")?,
                    }
                }
                write!(out, "\n{indent}}}")?;
            }
            Object::Datatype(t) => {
                write!(
                    out,
                    "{}",
                    json!({"type": "datatype", "dtype": type_name(t.dtype())})
                )?;
            }
        }
        Ok(())
    }
}

/// `h5 dump --json`: a readable JSON tree with real numbers, written as it
/// is read (dataset values block by block). Objects that cannot be read get
/// an `"error"` member; the outcome is then [`Outcome::Problems`].
///
/// # Errors
/// `File` when the object at `path` cannot be read; `BrokenPipe`.
pub fn json_dump_to(
    file: &File,
    file_name: &str,
    path: &str,
    opts: &DumpOptions,
    out: &mut dyn Write,
) -> Result<Outcome, Fail> {
    let obj = file.object(path).map_err(|e| obj_err(file_name, path, e))?;
    let mut d = Dumper {
        file,
        opts,
        seen: HashSet::new(),
        bad: Vec::new(),
    };
    d.obj_json(out, &obj, "", 0)?;
    writeln!(out)?;
    out.flush()?;
    Ok(d.outcome(file_name))
}

/// `h5 cat`: the raw bytes of a dataset (or a numpy-style slice of it) in
/// native byte order; the whole dataset is streamed block by block.
///
/// # Errors
/// `Usage` for a bad slice; `File` for a dataset that cannot be read; `BrokenPipe`.
pub fn cat(
    file: &File,
    file_name: &str,
    path: &str,
    slice: Option<&str>,
    out: &mut dyn Write,
) -> Result<Outcome, Fail> {
    let d = file
        .dataset(path)
        .map_err(|e| obj_err(file_name, path, e))?;
    let native = |bytes: &mut [u8]| {
        h5fmt::data::convert::to_native_order(d.dtype(), bytes)
            .map_err(|e| obj_err(file_name, path, e))
    };
    match slice {
        Some(spec) => {
            let sel = Selection::parse(spec, d.shape())
                .map_err(|e| Fail::Usage(format!("--slice {spec}: {e}")))?;
            let mut bytes = d
                .read_slice_raw(&sel)
                .map_err(|e| obj_err(file_name, path, e))?;
            native(&mut bytes)?;
            out.write_all(&bytes)?;
        }
        None => {
            for_each_block(&d, false, &mut |raw, _| {
                let mut bytes = raw.to_vec();
                native(&mut bytes)?;
                out.write_all(&bytes)?;
                Ok(())
            })
            .map_err(|e| match e {
                Fail::File(m) => Fail::File(format!("{file_name}: {m}")),
                other => other,
            })?;
        }
    }
    Ok(Outcome::Clean)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs written a line at a time give the bytes that one `push` per
    /// element gives, for all shapes, value widths and run layouts tried.
    #[test]
    fn runs_write_what_pushes_write() {
        let mut seed = 0x2545_f491_4f6c_dd1du64;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for case in 0..400 {
            let rank = 1 + rnd(3) as usize;
            // Every eighth case: long rows and runs, whose bulk `Rows::repeat_lines` writes
            // (coordinates gaining digits mid-run, runs crossing rows).
            let wide = case % 8 == 7;
            let shape: Vec<u64> = (0..rank)
                .map(|k| match (wide, k + 1 == rank) {
                    (true, true) => 1 + rnd(3000),
                    (true, false) => 1 + rnd(4),
                    _ => 1 + rnd(if case % 2 == 0 { 50 } else { 7 }),
                })
                .collect();
            let total: u64 = shape.iter().product();
            let es = [1usize, 2, 4, 8][rnd(4) as usize];
            // Runs of a few values, of random lengths.
            let mut bytes = Vec::new();
            while (bytes.len() / es) < total as usize {
                let v = [0u64, 7, 123_456, u64::MAX][rnd(4) as usize];
                let long = rnd(3) == 0;
                let run = 1 + rnd(match (long, wide) {
                    (true, true) => 8000,
                    (true, false) => 300,
                    _ => 6,
                });
                for _ in 0..run {
                    bytes.extend_from_slice(&v.to_ne_bytes()[..es]);
                }
            }
            bytes.truncate(total as usize * es);
            let p = Plain::Int(es, rnd(2) == 0);
            let indent = " ".repeat(rnd(9) as usize);
            let mut want = Vec::new();
            let mut rows = Rows::new(&mut want, &indent, &shape);
            for e in bytes.chunks_exact(es) {
                let mut t = String::new();
                p.push(e, &mut t);
                rows.push(&t).unwrap();
            }
            rows.end().unwrap();
            let mut got = Vec::new();
            let mut rows = Rows::new(&mut got, &indent, &shape);
            let mut runs = Runs::default();
            // In blocks, as `for_each_block` hands them over.
            let cut = es * (1 + rnd(total) as usize);
            for block in bytes.chunks(cut) {
                runs.write(p, false, block, &mut rows).unwrap();
            }
            rows.end().unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap(),
                "case {case}: shape {shape:?}, {es}-byte elements"
            );
            // The same for the JSON array.
            let mut want = Vec::new();
            let mut rows = JsonRows::new(&mut want, &indent);
            for e in bytes.chunks_exact(es) {
                let mut t = String::new();
                p.push_json(e, &mut t);
                rows.one(&t).unwrap();
            }
            rows.end().unwrap();
            let mut got = Vec::new();
            let mut rows = JsonRows::new(&mut got, &indent);
            let mut runs = Runs::default();
            for block in bytes.chunks(cut) {
                runs.write(p, true, block, &mut rows).unwrap();
            }
            rows.end().unwrap();
            assert_eq!(
                String::from_utf8(got).unwrap(),
                String::from_utf8(want).unwrap(),
                "JSON case {case}: shape {shape:?}, {es}-byte elements"
            );
        }
    }

    fn cover(shape: &[u64], elem: u64) -> u64 {
        let mut next = 0u64;
        let mut total = 0u64;
        for sel in Blocks::new(shape, elem) {
            let n = sel.num_elements().unwrap();
            assert!(n >= 1 && n * elem <= BLOCK_BYTES.max(elem) && n <= BLOCK_ELEMS);
            // Blocks are in row-major order: each starts where the last ended.
            let (lo, _) = sel.bounds(shape.len());
            let mut flat = 0u64;
            for (k, &c) in lo.iter().enumerate() {
                flat = flat * shape[k] + c;
            }
            assert_eq!(flat, next, "{shape:?}");
            next += n;
            total += n;
        }
        total
    }

    #[test]
    fn blocks_cover_the_dataspace_in_order() {
        for shape in [
            vec![],
            vec![1],
            vec![1000],
            vec![3_000_000],
            vec![7, 300_000],
            vec![5, 3, 100_000],
            vec![2, 2, 2],
            vec![100_000, 3],
        ] {
            let n: u64 = shape.iter().product();
            assert_eq!(cover(&shape, 8), n, "{shape:?}");
        }
        assert_eq!(Blocks::new(&[0, 5], 8).count(), 0);
    }

    #[test]
    fn integers_formatted_from_bytes() {
        let mut buf = [0u8; 24];
        for v in [0i64, 1, -1, 42, -42, i64::MIN, i64::MAX] {
            assert_eq!(int_text(&v.to_ne_bytes(), true, &mut buf), v.to_string());
        }
        for v in [0u64, 9, 10, u64::MAX] {
            assert_eq!(int_text(&v.to_ne_bytes(), false, &mut buf), v.to_string());
        }
        for v in [i8::MIN, -1, 0, i8::MAX] {
            assert_eq!(int_text(&v.to_ne_bytes(), true, &mut buf), v.to_string());
        }
        assert_eq!(int_text(&[255], false, &mut buf), "255");
        for v in [i16::MIN, -300, i16::MAX] {
            assert_eq!(int_text(&v.to_ne_bytes(), true, &mut buf), v.to_string());
        }
        for v in [i32::MIN, -70_000, i32::MAX] {
            assert_eq!(int_text(&v.to_ne_bytes(), true, &mut buf), v.to_string());
        }
    }

    #[test]
    fn rows_wrap_and_start_each_row_on_a_new_line() {
        let mut buf = Vec::new();
        let mut r = Rows::new(&mut buf, "  ", &[2, 40]);
        for i in 0..80 {
            r.push(&i.to_string()).unwrap();
        }
        r.end().unwrap();
        let text = String::from_utf8(buf).unwrap();
        assert!(text.lines().all(|l| l.len() <= WIDTH), "{text}");
        assert!(
            text.lines().any(|l| l.starts_with("  (1,0): 40, 41")),
            "{text}"
        );
        assert!(text.ends_with("79\n"), "{text}");
    }
}
