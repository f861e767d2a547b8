//! Read-write: open → modify → close → re-read.
//!
//! Input: `[8 op bytes][file bytes]`. Each op byte picks an edit (low
//! nibble) and its target among the objects the reader found (high nibble).
//! The file bytes go to a per-process temporary file; a read-only open must
//! leave them unchanged; then [`FileEditor`] applies the edits, flushes and
//! closes, and the reader re-opens the result under [`Limits::tight`] and
//! walks it. Errors are fine (typed); panics are findings. When every edit
//! and the flush returned `Ok`, the re-opened file must open and show the
//! edits (attributes read back equal, deleted attributes gone, created
//! objects exist, shapes and written boxes as requested), and when the
//! original file walked cleanly, so must the edited one.

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::format::message::{Dataspace, LinkTarget};
use h5fmt::read::LayoutClass;
use h5fmt::write::edit::NewDataset;
use h5fmt::{AttrValue, Datatype, FileEditor, Limits, Object};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// Number of op bytes before the file bytes.
pub const OPS: usize = 8;

/// Objects the reader found at most.
const MAX_OBJECTS: usize = 64;
/// Largest chunk (decoded) an edit may load, and largest box or row written.
const MAX_EDIT_BYTES: u64 = 256 << 10;

#[derive(Debug, Clone)]
enum Kind {
    Group,
    Chunked {
        es: u64,
        chunk_bytes: u64,
        max: Vec<u64>,
    },
    Contig {
        es: u64,
    },
    Other,
}

#[derive(Debug, Clone)]
struct Obj {
    path: String,
    /// Identity for expectations: the address for existing objects, the
    /// path for created ones.
    key: String,
    kind: Kind,
    attrs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq)]
enum Exp {
    /// Attribute with these raw bytes and shape.
    Attr {
        raw: Vec<u8>,
        shape: Vec<u64>,
    },
    /// A variable-length string attribute.
    StrAttr(String),
    NoAttr,
    Exists,
    Shape(Vec<u64>),
    Data {
        start: Vec<u64>,
        count: Vec<u64>,
        bytes: Vec<u8>,
    },
}

fn child(parent: &str, name: &str) -> String {
    format!("{}/{}", parent.trim_end_matches('/'), name)
}

fn under(p: &str, gone: &str) -> bool {
    p == gone || p.starts_with(&format!("{gone}/"))
}

/// Objects reachable by hard links (bounded), with what the edits need.
fn discover(f: &h5fmt::File) -> Vec<Obj> {
    let Ok(root) = f.root() else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    let mut queue = std::collections::VecDeque::from([(String::from("/"), root.addr().0)]);
    seen.insert(root.addr().0);
    while let Some((path, addr)) = queue.pop_front() {
        if out.len() >= MAX_OBJECTS {
            break;
        }
        let Ok(o) = f.object(&path) else { continue };
        if o.addr().0 != addr {
            // The path names another object (a corrupt file's links with
            // empty or repeated names): edits and checks by this path would
            // not meet this object.
            continue;
        }
        // A name carried by two attributes (a corrupt file) is left out:
        // an edit reaches the first, as libhdf5's does, and the other stays
        // visible, so no expectation about the name could hold.
        let names: Vec<String> = o
            .attrs()
            .map(|v| v.iter().map(|a| a.name().to_string()).collect())
            .unwrap_or_default();
        let attrs = names
            .iter()
            .filter(|n| names.iter().filter(|m| m == n).count() == 1)
            .cloned()
            .collect();
        let kind = match &o {
            Object::Group(g) => {
                for l in g.links().unwrap_or_default() {
                    if let LinkTarget::Hard(a) = l.target {
                        if seen.len() < 4 * MAX_OBJECTS && seen.insert(a.0) {
                            queue.push_back((child(&path, &l.name), a.0));
                        }
                    }
                }
                Kind::Group
            }
            Object::Dataset(d) => {
                let es = d.dtype().size();
                if d.dtype().is_variable_length() || es == 0 {
                    Kind::Other
                } else {
                    match (d.layout_class(), d.layout()) {
                        (LayoutClass::Chunked, h5fmt::format::message::Layout::Chunked(c)) => {
                            Kind::Chunked {
                                es,
                                chunk_bytes: c
                                    .dims
                                    .iter()
                                    .try_fold(es, |a, &b| a.checked_mul(b))
                                    .unwrap_or(u64::MAX),
                                max: d
                                    .maxshape()
                                    .unwrap_or_else(|| d.shape().iter().map(|&n| Some(n)).collect())
                                    .iter()
                                    .map(|m| m.unwrap_or(Dataspace::UNLIMITED))
                                    .collect(),
                            }
                        }
                        (LayoutClass::Contiguous, _) => Kind::Contig { es },
                        _ => Kind::Other,
                    }
                }
            }
            Object::Datatype(_) => Kind::Other,
        };
        out.push(Obj {
            path,
            key: format!("@{addr}"),
            kind,
            attrs,
        });
    }
    out
}

/// Open read-only under tight limits.
fn reread(path: &std::path::Path) -> h5fmt::Result<h5fmt::File> {
    h5fmt::File::open_with_limits(path, Limits::tight())
}

fn temp_path() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    std::env::temp_dir().join(format!("h5fuzz-rw-{}-{n}.h5", std::process::id()))
}

/// Removes the temporary file on every exit (also on a panic).
struct Temp(PathBuf);
impl Drop for Temp {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Bytes of a box inside `dims` chosen by `sel`, and the box; `None` when empty.
fn pick_box(dims: &[u64], es: u64, sel: u8) -> Option<(Vec<u64>, Vec<u64>, Vec<u8>)> {
    let mut start = Vec::new();
    let mut count = Vec::new();
    for (k, &n) in dims.iter().enumerate() {
        if n == 0 {
            return None;
        }
        let s = (u64::from(sel) >> (k % 4)) % n;
        let c = (n - s).min(1 + u64::from(sel) % 4);
        start.push(s);
        count.push(c);
    }
    let len = count.iter().try_fold(es, |a, &b| a.checked_mul(b))?;
    if len > MAX_EDIT_BYTES {
        return None;
    }
    let len = usize::try_from(len).ok()?;
    let bytes = (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(sel))
        .collect();
    Some((start, count, bytes))
}

/// Applies the edits; the expectations (by key) when all of them succeeded.
struct Session {
    ed: FileEditor,
    objs: Vec<Obj>,
    exp: BTreeMap<String, (String, String, Exp)>,
    all_ok: bool,
}

impl Session {
    fn ok<T>(&mut self, r: h5fmt::Result<T>) -> Option<T> {
        match r {
            Ok(v) => Some(v),
            Err(_) => {
                self.all_ok = false;
                None
            }
        }
    }

    fn pick(&self, sel: u8, f: impl Fn(&Obj) -> bool) -> Option<Obj> {
        let c: Vec<&Obj> = self.objs.iter().filter(|o| f(o)).collect();
        if c.is_empty() {
            return None;
        }
        c.get(usize::from(sel) % c.len()).map(|o| (*o).clone())
    }

    fn expect(&mut self, slot: String, path: &str, name: &str, e: Exp) {
        self.exp
            .insert(slot, (path.to_string(), name.to_string(), e));
    }

    fn set_attr(&mut self, o: &Obj, name: &str, v: AttrValue, e: Exp) {
        if {
            let r = self.ed.set_attr(&o.path, name, v);
            self.ok(r)
        }
        .is_some()
        {
            self.expect(format!("a{}:{name}", o.key), &o.path, name, e);
            if let Some(m) = self.objs.iter_mut().find(|m| m.key == o.key) {
                if !m.attrs.iter().any(|a| a == name) {
                    m.attrs.push(name.to_string());
                }
            }
        }
    }

    /// Keys of the known objects reachable by hard links from `path` (the
    /// object itself included), in the file as the editor sees it; `None`
    /// when more than a bounded number of objects lie below it.
    fn reachable_keys(&self, path: &str) -> Option<Vec<String>> {
        let f = self.ed.reader();
        let start = f.object(path).ok()?.addr().0;
        let mut seen = std::collections::BTreeSet::from([start]);
        let mut queue = vec![start];
        while let Some(a) = queue.pop() {
            let Ok(Object::Group(g)) = f.object_at(h5fmt::Addr(a), "") else {
                continue;
            };
            for l in g.links().unwrap_or_default() {
                if let LinkTarget::Hard(t) = l.target {
                    if seen.insert(t.0) {
                        if seen.len() > 4 * MAX_OBJECTS {
                            return None;
                        }
                        queue.push(t.0);
                    }
                }
            }
        }
        let addr_of = |m: &Obj| match m.key.strip_prefix('@') {
            Some(a) => a.parse().ok(),
            None => f.object(&m.path).ok().map(|o| o.addr().0),
        };
        Some(
            self.objs
                .iter()
                .filter(|m| addr_of(m).is_some_and(|a| seen.contains(&a)))
                .map(|m| m.key.clone())
                .collect(),
        )
    }

    fn op(&mut self, i: usize, b: u8) {
        let sel = b >> 4;
        let any = |_: &Obj| true;
        let group = |o: &Obj| matches!(o.kind, Kind::Group);
        let chunked = |o: &Obj| matches!(o.kind, Kind::Chunked { chunk_bytes, .. } if chunk_bytes <= MAX_EDIT_BYTES);
        match b & 0x0F {
            1 => {
                if let Some(o) = self.pick(sel, any) {
                    let v = i64::from(b) * 1_000_003 - 7;
                    let e = Exp::Attr {
                        raw: v.to_le_bytes().to_vec(),
                        shape: vec![],
                    };
                    self.set_attr(&o, &format!("fz{i}"), v.into(), e);
                }
            }
            2 => {
                if let Some(o) = self.pick(sel, any) {
                    let v = vec![f64::from(b), -0.5, 1e300];
                    let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    let e = Exp::Attr {
                        raw,
                        shape: vec![3],
                    };
                    self.set_attr(&o, &format!("fz{i}"), v.into(), e);
                }
            }
            3 | 4 => {
                let Some(o) = self.pick(sel, |o| !o.attrs.is_empty()) else {
                    return;
                };
                let Some(name) = o.attrs.get(usize::from(b) % o.attrs.len()).cloned() else {
                    return;
                };
                if b & 0x0F == 3 {
                    let v = [i32::from(b), 2, 3, 4];
                    let raw = v.iter().flat_map(|x| x.to_le_bytes()).collect();
                    let e = Exp::Attr {
                        raw,
                        shape: vec![4],
                    };
                    self.set_attr(&o, &name, v.into(), e);
                } else if {
                    let r = self.ed.delete_attr(&o.path, &name);
                    self.ok(r)
                }
                .is_some()
                {
                    self.expect(format!("a{}:{name}", o.key), &o.path, &name, Exp::NoAttr);
                    if let Some(m) = self.objs.iter_mut().find(|m| m.key == o.key) {
                        m.attrs.retain(|a| *a != name);
                    }
                }
            }
            5 => {
                let Some(p) = self.pick(sel, group) else {
                    return;
                };
                let name = format!("fzg{i}");
                if {
                    let r = self.ed.create_group(&p.path, &name);
                    self.ok(r)
                }
                .is_some()
                {
                    let path = child(&p.path, &name);
                    self.expect(format!("g{path}"), &path, "", Exp::Exists);
                    self.objs.push(Obj {
                        key: path.clone(),
                        path,
                        kind: Kind::Group,
                        attrs: vec![],
                    });
                }
            }
            6 | 7 => {
                let Some(p) = self.pick(sel, group) else {
                    return;
                };
                let name = format!("fzd{i}");
                let (spec, kind) = if b & 0x0F == 6 {
                    let shape = [2, 1 + u64::from(sel % 3)];
                    (
                        NewDataset::new(Datatype::int_le(4, true), &shape),
                        Kind::Contig { es: 4 },
                    )
                } else {
                    (
                        NewDataset::new(Datatype::float_le(8), &[u64::from(sel % 2)])
                            .maxshape(&[None])
                            .chunks(&[4]),
                        Kind::Chunked {
                            es: 8,
                            chunk_bytes: 32,
                            max: vec![Dataspace::UNLIMITED],
                        },
                    )
                };
                if {
                    let r = self.ed.create_dataset(&p.path, &name, &spec);
                    self.ok(r)
                }
                .is_some()
                {
                    let path = child(&p.path, &name);
                    self.expect(
                        format!("s{path}"),
                        &path,
                        "",
                        Exp::Shape(spec.shape.clone()),
                    );
                    self.objs.push(Obj {
                        key: path.clone(),
                        path,
                        kind,
                        attrs: vec![],
                    });
                }
            }
            8 | 9 => {
                let Some(o) = self.pick(sel, chunked) else {
                    return;
                };
                let Kind::Chunked { es, max, .. } = &o.kind else {
                    return;
                };
                let r = self.ed.shape(&o.path);
                let Some(dims) = self.ok(r) else {
                    return;
                };
                let Some((&first, rest)) = dims.split_first() else {
                    return;
                };
                let mut nd = dims.clone();
                let m0 = max.first().copied().unwrap_or(first);
                if b & 0x0F == 8 {
                    let rows = 1 + u64::from(sel % 3);
                    let row = rest.iter().try_fold(*es, |a, &c| a.checked_mul(c));
                    let Some(len) = row
                        .and_then(|r| r.checked_mul(rows))
                        .filter(|&l| l > 0 && l <= MAX_EDIT_BYTES)
                    else {
                        return;
                    };
                    if m0 != Dataspace::UNLIMITED && first.saturating_add(rows) > m0 {
                        return;
                    }
                    let data: Vec<u8> = (0..len).map(|k| (k as u8) ^ b).collect();
                    let r = self.ed.append_raw(&o.path, &data);
                    // An extent that would pass 2^64 - 1 must be refused.
                    let Some(grown) = first.checked_add(rows) else {
                        assert!(r.is_err(), "append past a 2^64 extent accepted");
                        self.all_ok = false;
                        return;
                    };
                    nd[0] = grown;
                    if self.ok(r).is_some() {
                        self.exp.remove(&format!("d{}", o.key));
                        self.expect(format!("s{}", o.key), &o.path, "", Exp::Shape(nd));
                    }
                } else {
                    nd[0] = if sel.is_multiple_of(2) {
                        let g = first.saturating_add(1 + u64::from(sel % 5));
                        if m0 == Dataspace::UNLIMITED {
                            g
                        } else {
                            g.min(m0)
                        }
                    } else {
                        first / 2
                    };
                    if {
                        let r = self.ed.resize(&o.path, &nd);
                        self.ok(r)
                    }
                    .is_some()
                    {
                        self.exp.remove(&format!("d{}", o.key));
                        self.expect(format!("s{}", o.key), &o.path, "", Exp::Shape(nd));
                    }
                }
            }
            10 | 11 => {
                let want_chunked = b & 0x0F == 10;
                let Some(o) = self.pick(sel, |o| {
                    if want_chunked {
                        chunked(o)
                    } else {
                        matches!(o.kind, Kind::Contig { .. })
                    }
                }) else {
                    return;
                };
                let es = match o.kind {
                    Kind::Chunked { es, .. } | Kind::Contig { es } => es,
                    _ => return,
                };
                let r = self.ed.shape(&o.path);
                let Some(dims) = self.ok(r) else {
                    return;
                };
                let Some((start, count, bytes)) = pick_box(&dims, es, b) else {
                    return;
                };
                let r = self.ed.write_box(&o.path, &start, &count, &bytes);
                if self.ok(r).is_some() {
                    let e = Exp::Data {
                        start,
                        count,
                        bytes,
                    };
                    self.expect(format!("d{}", o.key), &o.path, "", e);
                }
            }
            12 => {
                let Some(o) = self.pick(sel, |o| o.path != "/") else {
                    return;
                };
                let Some((parent, name)) = o.path.rsplit_once('/') else {
                    return;
                };
                let parent = if parent.is_empty() { "/" } else { parent };
                // Everything reachable from the object goes with it when
                // the file understates reference counts or lets two groups
                // share a symbol table (a corrupt file; libhdf5 deletes them
                // too): nothing is expected of those any more.
                let doomed = self.reachable_keys(&o.path);
                if {
                    let r = self.ed.delete_link(parent, name);
                    self.ok(r)
                }
                .is_some()
                {
                    let gone = o.path.clone();
                    let Some(shared) = doomed else {
                        // Too much below it to tell: expect nothing.
                        self.all_ok = false;
                        return;
                    };
                    let of = |slot: &str, k: &str| {
                        slot.get(1..)
                            .and_then(|r| r.strip_prefix(k))
                            .is_some_and(|r| r.is_empty() || r.starts_with(':'))
                    };
                    self.exp.retain(|slot, (p, _, _)| {
                        !under(p, &gone) && !shared.iter().any(|k| of(slot, k))
                    });
                    self.objs
                        .retain(|m| !under(&m.path, &gone) && !shared.contains(&m.key));
                }
            }
            13 => {
                if let Some(o) = self.pick(sel, any) {
                    let s = format!("vlen {i} {b}");
                    self.set_attr(&o, &format!("fz{i}"), s.as_str().into(), Exp::StrAttr(s));
                }
            }
            14 => {
                if let Some(o) = self.pick(sel, any) {
                    let s = format!("fixed{b}");
                    let v = AttrValue::fixed_ascii(&s);
                    let e = Exp::Attr {
                        raw: s.into_bytes(),
                        shape: vec![],
                    };
                    self.set_attr(&o, &format!("fz{i}"), v, e);
                }
            }
            15 => {
                // The last object (often one created by an earlier op).
                if let Some(o) = self.objs.last().cloned() {
                    let v = u16::from(b);
                    let e = Exp::Attr {
                        raw: v.to_le_bytes().to_vec(),
                        shape: vec![],
                    };
                    self.set_attr(&o, &format!("fz{i}"), v.into(), e);
                }
            }
            _ => {}
        }
    }
}

/// Check one expectation against the re-opened file; a description of the
/// difference when it does not hold.
fn verify(f: &h5fmt::File, path: &str, name: &str, e: &Exp) -> Result<(), String> {
    let o = f.object(path).map_err(|x| format!("{path}: {x}"))?;
    let attr = |name: &str| {
        o.attrs()
            .map_err(|x| format!("{path} attributes: {x}"))
            .map(|v| v.into_iter().find(|a| a.name() == name))
    };
    match e {
        Exp::Exists => Ok(()),
        Exp::NoAttr => match attr(name)? {
            None => Ok(()),
            Some(_) => Err(format!("{path}: deleted attribute {name} still there")),
        },
        Exp::Attr { raw, shape } => {
            let a = attr(name)?.ok_or_else(|| format!("{path}: attribute {name} missing"))?;
            if a.raw().get(..raw.len()) != Some(raw.as_slice()) || a.shape() != shape.as_slice() {
                return Err(format!(
                    "{path}: attribute {name} reads {:?} shape {:?}, wrote {raw:?} shape {shape:?}",
                    a.raw(),
                    a.shape()
                ));
            }
            Ok(())
        }
        Exp::StrAttr(s) => {
            let a = attr(name)?.ok_or_else(|| format!("{path}: attribute {name} missing"))?;
            let v = a.read_values().map_err(|x| format!("{path}/{name}: {x}"))?;
            if v != [h5fmt::Value::Str(s.clone())] {
                return Err(format!("{path}: attribute {name} reads {v:?}, wrote {s:?}"));
            }
            Ok(())
        }
        Exp::Shape(dims) => {
            let Object::Dataset(d) = o else {
                return Err(format!("{path}: not a dataset"));
            };
            if d.shape() != dims.as_slice() {
                return Err(format!("{path}: shape {:?}, requested {dims:?}", d.shape()));
            }
            Ok(())
        }
        Exp::Data {
            start,
            count,
            bytes,
        } => {
            let Object::Dataset(d) = o else {
                return Err(format!("{path}: not a dataset"));
            };
            let sel = Selection::Hyperslab(
                start
                    .iter()
                    .zip(count)
                    .map(|(&s, &c)| SliceDim {
                        start: s,
                        stride: 1,
                        count: c,
                        block: 1,
                    })
                    .collect(),
            );
            let got = d.read_slice_raw(&sel).map_err(|x| format!("{path}: {x}"))?;
            if got != *bytes {
                return Err(format!(
                    "{path}: box at {start:?} {count:?} reads other bytes"
                ));
            }
            Ok(())
        }
    }
}

/// How far one input got (for the smoke test's coverage assertions).
#[derive(Debug, Default, Clone, Copy)]
pub struct Outcome {
    /// The editor opened the file.
    pub opened: bool,
    /// Every edit, the flush and the close returned `Ok`.
    pub all_ok: bool,
    /// Expectations verified on the re-opened file.
    pub verified: usize,
}

/// Op bytes, then the file.
pub fn run(data: &[u8]) {
    run_outcome(data);
}

/// [`run`], telling how far the input got.
pub fn run_outcome(data: &[u8]) -> Outcome {
    let mut out = Outcome::default();
    let (ops, file) = data.split_at(data.len().min(OPS));
    if file.is_empty() {
        return out;
    }
    let tmp = Temp(temp_path());
    let path = tmp.0.clone();
    if std::fs::write(&path, file).is_err() {
        return out;
    }
    // Read-only: never changes the bytes.
    let before = reread(&path);
    let walked = before
        .as_ref()
        .map(|f| super::whole_file::walk_with(f, false).is_ok())
        .unwrap_or(false);
    let objs = before.as_ref().map(discover).unwrap_or_default();
    drop(before);
    assert!(
        std::fs::read(&path).ok().as_deref() == Some(file),
        "a read-only open changed the file"
    );
    let ed = match FileEditor::open_with_limits(&path, Limits::tight()) {
        Ok(ed) => ed,
        Err(_) => {
            assert!(
                std::fs::read(&path).ok().as_deref() == Some(file),
                "a refused editor open changed the file"
            );
            return out;
        }
    };
    out.opened = true;
    let mut s = Session {
        ed,
        objs,
        exp: BTreeMap::new(),
        all_ok: true,
    };
    s.ed.sync = false;
    s.ed.cache_limit = 1 << 20;
    for (i, &b) in ops.iter().enumerate() {
        s.op(i, b);
    }
    let Session {
        mut ed,
        exp,
        mut all_ok,
        ..
    } = s;
    all_ok &= ed.flush().is_ok();
    all_ok &= ed.close().is_ok();
    let after = reread(&path);
    if !all_ok {
        if let Ok(f) = after {
            let _ = super::whole_file::walk_with(&f, false);
        }
        return out;
    }
    out.all_ok = true;
    let f = match after {
        Ok(f) => f,
        Err(e) => panic!("the edited file does not open: {e}"),
    };
    for (path, name, e) in exp.values() {
        if let Err(msg) = verify(&f, path, name, e) {
            panic!("edit lost: {msg}");
        }
        out.verified += 1;
    }
    let w = super::whole_file::walk_with(&f, false);
    if walked {
        if let Err(e) = w {
            panic!("the file walked before the edits but not after: {e}");
        }
    }
    out
}

/// A seed for `file`: a fixed mix of edits.
pub fn seed(file: &[u8], variant: u8) -> Vec<u8> {
    let sets: [[u8; OPS]; 4] = [
        [0x01, 0x13, 0x25, 0x36, 0x47, 0x58, 0x6A, 0x7B],
        [0x02, 0x14, 0x29, 0x3A, 0x4D, 0x5E, 0x6F, 0x0C],
        [0x05, 0x17, 0x2F, 0x38, 0x4A, 0x51, 0x63, 0x74],
        [0x0B, 0x1A, 0x28, 0x39, 0x4C, 0x06, 0x11, 0x22],
    ];
    let mut v = sets[usize::from(variant) % sets.len()].to_vec();
    v.extend_from_slice(file);
    v
}
