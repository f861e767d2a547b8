//! `h5 diff A B [PATH]`: compare two files like h5diff: the objects present in
//! each, their kinds, datatypes and shapes, their attributes and dataset
//! values (numbers within `--delta` or `--relative`). Values are compared
//! block by block, in bounded memory.

use crate::cli::{obj_err, Fail, Outcome};
use crate::text::{type_name, value_text, Blocks};
use h5fmt::data::{Reference, Value};
use h5fmt::format::message::LinkTarget;
use h5fmt::{Addr, Attribute, Dataset, File, Object};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Write;

/// Options of `h5 diff`.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Numbers differ when `|a - b| > delta`.
    pub delta: Option<f64>,
    /// Numbers differ when `|a - b| / |a| > relative`.
    pub relative: Option<f64>,
    /// Print each differing element.
    pub verbose: bool,
    /// Print nothing.
    pub quiet: bool,
}

/// What a path names in one file.
enum Entry {
    Obj(Object),
    Link(String),
}

/// The objects and links at and below `path`, by path (each object once, at
/// the first path that reaches it in depth-first order).
fn walk(file: &File, path: &str) -> Result<BTreeMap<String, Entry>, String> {
    let mut map = BTreeMap::new();
    let start = file.object(path).map_err(|e| format!("{path}: {e}"))?;
    let mut seen = HashSet::new();
    let mut stack = vec![(path.to_string(), start)];
    while let Some((p, obj)) = stack.pop() {
        if let Object::Group(g) = &obj {
            if seen.insert(g.addr()) {
                let links = g.links().map_err(|e| format!("{p}: {e}"))?;
                for l in links.into_iter().rev() {
                    let cp = if p == "/" {
                        format!("/{}", l.name)
                    } else {
                        format!("{p}/{}", l.name)
                    };
                    match l.target {
                        LinkTarget::Hard(addr) => {
                            let child = file
                                .object_at(addr, &cp)
                                .map_err(|e| format!("{cp}: {e}"))?;
                            if let Object::Group(cg) = &child {
                                if seen.contains(&cg.addr()) {
                                    continue;
                                }
                            }
                            stack.push((cp, child));
                        }
                        LinkTarget::Soft(t) => {
                            map.insert(cp, Entry::Link(format!("soft link {t}")));
                        }
                        LinkTarget::External { file: f, path: t } => {
                            map.insert(cp, Entry::Link(format!("external link {f}:{t}")));
                        }
                        LinkTarget::UserDefined { class, .. } => {
                            map.insert(cp, Entry::Link(format!("user-defined link {class}")));
                        }
                    }
                }
            }
        }
        map.insert(p, Entry::Obj(obj));
    }
    Ok(map)
}

fn kind(o: &Object) -> &'static str {
    match o {
        Object::Group(_) => "group",
        Object::Dataset(_) => "dataset",
        Object::Datatype(_) => "datatype",
    }
}

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Int(x) => Some(*x as f64),
        Value::UInt(x) => Some(*x as f64),
        Value::F16(b) => Some(h5fmt::data::convert::f16_to_f64(*b)),
        Value::F32(f) => Some(f64::from(*f)),
        Value::F64(f) => Some(*f),
        _ => None,
    }
}

struct Differ<'a> {
    opts: &'a Options,
    names: (&'a str, &'a str),
    /// The path of each object by address, in each file: references are
    /// compared by the objects they point to, as h5diff does.
    targets: (HashMap<Addr, String>, HashMap<Addr, String>),
    out: &'a mut dyn Write,
    differences: u64,
}

impl Differ<'_> {
    fn say(&mut self, text: &str) -> Result<(), Fail> {
        if !self.opts.quiet {
            writeln!(self.out, "{text}")?;
        }
        Ok(())
    }

    fn same_value(&self, a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Compound(x), Value::Compound(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .zip(y)
                        .all(|((n1, v1), (n2, v2))| n1 == n2 && self.same_value(v1, v2))
            }
            (Value::Array(x), Value::Array(y)) | (Value::Vlen(x), Value::Vlen(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(v1, v2)| self.same_value(v1, v2))
            }
            (Value::Ref(x), Value::Ref(y)) => self.same_ref(x, y),
            _ => match (number(a), number(b)) {
                (Some(x), Some(y)) => {
                    if x.is_nan() || y.is_nan() {
                        return x.is_nan() && y.is_nan();
                    }
                    let d = (x - y).abs();
                    if let Some(delta) = self.opts.delta {
                        d <= delta
                    } else if let Some(rel) = self.opts.relative {
                        if x == 0.0 {
                            y == 0.0
                        } else {
                            d / x.abs() <= rel
                        }
                    } else {
                        a == b || x == y
                    }
                }
                _ => a == b,
            },
        }
    }

    fn same_ref(&self, a: &Reference, b: &Reference) -> bool {
        let (ta, tb) = (&self.targets.0, &self.targets.1);
        let same = |x: &Addr, y: &Addr| match (ta.get(x), tb.get(y)) {
            (Some(p), Some(q)) => p == q,
            _ => false,
        };
        match (a, b) {
            (Reference::Null, Reference::Null) => true,
            (Reference::Object(x), Reference::Object(y)) => same(x, y),
            (Reference::Region { obj: x, region: r }, Reference::Region { obj: y, region: q }) => {
                same(x, y) && r == q
            }
            (
                Reference::Attribute { obj: x, name: n },
                Reference::Attribute { obj: y, name: m },
            ) => same(x, y) && n == m,
            _ => a == b,
        }
    }

    /// Compare two runs of values; the count of differing elements.
    fn values(&mut self, what: &str, first: u64, a: &[Value], b: &[Value]) -> Result<u64, Fail> {
        let mut n = 0;
        for (i, (x, y)) in a.iter().zip(b).enumerate() {
            if !self.same_value(x, y) {
                n += 1;
                if self.opts.verbose {
                    let i = first + i as u64;
                    self.say(&format!(
                        "{what}[{i}]: {} <> {}",
                        value_text(x),
                        value_text(y)
                    ))?;
                }
            }
        }
        Ok(n)
    }

    fn attrs(
        &mut self,
        path: &str,
        a: h5fmt::Result<Vec<Attribute>>,
        b: h5fmt::Result<Vec<Attribute>>,
    ) -> Result<(), Fail> {
        let a = a.map_err(|e| obj_err(self.names.0, path, format!("attributes: {e}")))?;
        let b = b.map_err(|e| obj_err(self.names.1, path, format!("attributes: {e}")))?;
        let bm: BTreeMap<&str, &Attribute> = b.iter().map(|x| (x.name(), x)).collect();
        let am: BTreeMap<&str, &Attribute> = a.iter().map(|x| (x.name(), x)).collect();
        for (name, x) in &am {
            let what = format!("{path} (attribute {name:?})");
            let Some(y) = bm.get(name) else {
                self.differences += 1;
                self.say(&format!("only in the first file: {what}"))?;
                continue;
            };
            if type_name(x.dtype()) != type_name(y.dtype()) || x.shape() != y.shape() {
                self.differences += 1;
                self.say(&format!(
                    "{what}: not comparable ({} {:?} vs {} {:?})",
                    type_name(x.dtype()),
                    x.shape(),
                    type_name(y.dtype()),
                    y.shape()
                ))?;
                continue;
            }
            let va = x
                .read_values()
                .map_err(|e| obj_err(self.names.0, &what, e))?;
            let vb = y
                .read_values()
                .map_err(|e| obj_err(self.names.1, &what, e))?;
            let n = self.values(&what, 0, &va, &vb)?;
            if n > 0 {
                self.differences += n;
                self.say(&format!("{what}: {n} differences"))?;
            }
        }
        for name in bm.keys().filter(|k| !am.contains_key(*k)) {
            self.differences += 1;
            self.say(&format!(
                "only in the second file: {path} (attribute {name:?})"
            ))?;
        }
        Ok(())
    }

    fn dataset(&mut self, path: &str, a: &Dataset, b: &Dataset) -> Result<(), Fail> {
        let (ta, tb) = (type_name(a.dtype()), type_name(b.dtype()));
        if a.shape() != b.shape() || a.space().kind != b.space().kind {
            self.differences += 1;
            return self.say(&format!(
                "{path}: not comparable: shapes {:?} and {:?}",
                a.shape(),
                b.shape()
            ));
        }
        let numeric = |t: &h5fmt::format::datatype::Datatype| {
            matches!(
                t,
                h5fmt::format::datatype::Datatype::Integer { .. }
                    | h5fmt::format::datatype::Datatype::Float { .. }
            )
        };
        if ta != tb && !(numeric(a.dtype()) && numeric(b.dtype())) {
            self.differences += 1;
            return self.say(&format!("{path}: not comparable: types {ta} and {tb}"));
        }
        if a.space().kind == h5fmt::format::message::SpaceKind::Null {
            return Ok(());
        }
        let elem = a.dtype().size().max(b.dtype().size());
        let (fa, fb) = (a.file(), b.file());
        let mut n = 0u64;
        let mut at = 0u64;
        for sel in Blocks::new(a.shape(), elem) {
            let k = sel.num_elements().unwrap_or(0);
            let ra = a
                .read_slice_raw(&sel)
                .map_err(|e| obj_err(self.names.0, path, e))?;
            let rb = b
                .read_slice_raw(&sel)
                .map_err(|e| obj_err(self.names.1, path, e))?;
            if ta == tb
                && ra == rb
                && !a.dtype().is_variable_length()
                && !a.dtype().has_references()
            {
                at += k;
                continue;
            }
            let va = h5fmt::data::decode::decode_elements(a.dtype(), &ra, k, fa.ctx(), &fa.heap())
                .map_err(|e| obj_err(self.names.0, path, e))?;
            let vb = h5fmt::data::decode::decode_elements(b.dtype(), &rb, k, fb.ctx(), &fb.heap())
                .map_err(|e| obj_err(self.names.1, path, e))?;
            n += self.values(path, at, &va, &vb)?;
            at += k;
        }
        if n > 0 {
            self.differences += n;
            self.say(&format!("{path}: {n} differences found"))?;
        }
        Ok(())
    }
}

/// Compare the objects at and below `path` in two files. The outcome is
/// [`Outcome::Problems`] when they differ.
///
/// # Errors
/// `File` when an object cannot be read; `BrokenPipe`.
pub fn diff(
    (a, a_name): (&File, &str),
    (b, b_name): (&File, &str),
    path: &str,
    opts: &Options,
    out: &mut dyn Write,
) -> Result<Outcome, Fail> {
    let ma = walk(a, path).map_err(|e| Fail::File(format!("{a_name}: {e}")))?;
    let mb = walk(b, path).map_err(|e| Fail::File(format!("{b_name}: {e}")))?;
    // Reference targets anywhere in the files, not only below `path`.
    let targets = |file: &File, m: &BTreeMap<String, Entry>| -> HashMap<Addr, String> {
        let all = if path == "/" {
            None
        } else {
            walk(file, "/").ok()
        };
        let mut t = HashMap::new();
        for (p, e) in all.as_ref().unwrap_or(m) {
            if let Entry::Obj(o) = e {
                t.entry(o.addr()).or_insert_with(|| p.clone());
            }
        }
        t
    };
    let mut d = Differ {
        opts,
        names: (a_name, b_name),
        targets: (targets(a, &ma), targets(b, &mb)),
        out,
        differences: 0,
    };
    for (p, ea) in &ma {
        let Some(eb) = mb.get(p) else {
            d.differences += 1;
            d.say(&format!("only in the first file: {p}"))?;
            continue;
        };
        match (ea, eb) {
            (Entry::Link(x), Entry::Link(y)) => {
                if x != y {
                    d.differences += 1;
                    d.say(&format!("{p}: {x} <> {y}"))?;
                }
            }
            (Entry::Obj(x), Entry::Obj(y)) => {
                if kind(x) != kind(y) {
                    d.differences += 1;
                    d.say(&format!(
                        "{p}: not comparable: a {} and a {}",
                        kind(x),
                        kind(y)
                    ))?;
                    continue;
                }
                if let (Object::Dataset(x), Object::Dataset(y)) = (x, y) {
                    d.dataset(p, x, y)?;
                }
                if let (Object::Datatype(x), Object::Datatype(y)) = (x, y) {
                    if type_name(x.dtype()) != type_name(y.dtype()) {
                        d.differences += 1;
                        d.say(&format!("{p}: named datatypes differ"))?;
                    }
                }
                d.attrs(p, x.attrs(), y.attrs())?;
            }
            _ => {
                d.differences += 1;
                d.say(&format!("{p}: a link in one file, an object in the other"))?;
            }
        }
    }
    for p in mb.keys().filter(|p| !ma.contains_key(*p)) {
        d.differences += 1;
        d.say(&format!("only in the second file: {p}"))?;
    }
    if d.differences > 0 {
        d.say(&format!("{} differences found", d.differences))?;
        Ok(Outcome::Problems)
    } else {
        Ok(Outcome::Clean)
    }
}
