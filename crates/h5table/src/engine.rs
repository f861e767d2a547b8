//! Evaluation of [`Query`] expressions: typed column kernels, predicates on
//! one column fused into one interval set, SQL three-valued logic, batches
//! that stop reading columns as soon as no row of the batch can match.

use crate::error::Result;
use crate::index::prune::{Candidates, ColumnIndexes, IndexPolicy, Predicate as PrunePred};
use crate::model::{Column, ColumnKind, Table};
use crate::query::{compare, matches, Expr, Literal, Op, Predicate, Query};
use crate::selection::{BitIter, Selection};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::format::datatype::{ByteOrder, Datatype};
use h5fmt::Value;

/// Rows per evaluation batch.
const BATCH: u64 = 1 << 16;

/// A union of inclusive integer intervals, sorted and disjoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct IntSet(pub Vec<(i128, i128)>);

impl IntSet {
    fn normalize(mut v: Vec<(i128, i128)>) -> Self {
        v.retain(|(a, b)| a <= b);
        v.sort_unstable();
        let mut out: Vec<(i128, i128)> = Vec::with_capacity(v.len());
        for (a, b) in v {
            match out.last_mut() {
                Some(last) if a <= last.1.saturating_add(1) => last.1 = last.1.max(b),
                _ => out.push((a, b)),
            }
        }
        IntSet(out)
    }
    fn intersect(&self, o: &IntSet) -> IntSet {
        let mut v = Vec::new();
        for &(a, b) in &self.0 {
            for &(c, d) in &o.0 {
                v.push((a.max(c), b.min(d)));
            }
        }
        IntSet::normalize(v)
    }
    #[inline]
    fn contains(&self, x: i128) -> bool {
        match self.0.as_slice() {
            [(a, b)] => *a <= x && x <= *b,
            r => r.iter().any(|(a, b)| *a <= x && x <= *b),
        }
    }
}

/// One float interval: bounds and whether each is included.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct FRange {
    lo: f64,
    lo_in: bool,
    hi: f64,
    hi_in: bool,
}

impl FRange {
    #[inline]
    fn contains(&self, x: f64) -> bool {
        (x > self.lo || (self.lo_in && x == self.lo))
            && (x < self.hi || (self.hi_in && x == self.hi))
    }
}

/// A union of float intervals (NaN is in none).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct FloatSet(pub Vec<FRange>);

impl FloatSet {
    fn intersect(&self, o: &FloatSet) -> FloatSet {
        let mut v = Vec::new();
        for a in &self.0 {
            for b in &o.0 {
                let (lo, lo_in) = if a.lo > b.lo {
                    (a.lo, a.lo_in)
                } else if b.lo > a.lo {
                    (b.lo, b.lo_in)
                } else {
                    (a.lo, a.lo_in && b.lo_in)
                };
                let (hi, hi_in) = if a.hi < b.hi {
                    (a.hi, a.hi_in)
                } else if b.hi < a.hi {
                    (b.hi, b.hi_in)
                } else {
                    (a.hi, a.hi_in && b.hi_in)
                };
                if lo < hi || (lo == hi && lo_in && hi_in) {
                    v.push(FRange {
                        lo,
                        lo_in,
                        hi,
                        hi_in,
                    });
                }
            }
        }
        FloatSet(v)
    }
    #[inline]
    fn contains(&self, x: f64) -> bool {
        match self.0.as_slice() {
            [r] => r.contains(x),
            rs => rs.iter().any(|r| r.contains(x)),
        }
    }
}

/// How a leaf reads its column.
#[derive(Debug, Clone, PartialEq)]
enum Test {
    /// `IS [NOT] NULL`.
    Null { negated: bool },
    /// Integer values (codes of categoricals and enums) in a set.
    Ints(IntSet),
    /// Float values in a set.
    Floats(FloatSet),
    /// Anything else, value by value.
    Generic(Predicate),
}

#[derive(Debug, Clone)]
enum Node {
    And(Vec<Node>),
    Or(Vec<Node>),
    Not(Box<Node>),
    Leaf { col: usize, test: Test },
}

/// Whether the column is read by the integer kernel: plain integers (not
/// categorical), of full precision and at most 8 bytes.
pub(crate) fn int_storage(c: &Column) -> Option<(u32, ByteOrder, bool)> {
    let dt = match c.dtype() {
        Datatype::Enum { base, .. } => base.as_ref(),
        d => d,
    };
    match dt {
        Datatype::Integer {
            size,
            order,
            signed,
            bit_offset: 0,
            precision,
        } if *size <= 8 && u32::from(*precision) == size * 8 && *order != ByteOrder::Vax => {
            Some((*size, *order, *signed))
        }
        _ => None,
    }
}

pub(crate) fn float_storage(c: &Column) -> Option<(u32, ByteOrder)> {
    match c.dtype() {
        Datatype::Float { size, order, .. }
            if matches!(size, 2 | 4 | 8)
                && c.dtype().is_ieee_standard()
                && *order != ByteOrder::Vax =>
        {
            Some((*size, *order))
        }
        _ => None,
    }
}

fn op_matches(o: Option<Ordering>, op: Op) -> bool {
    o.is_some_and(|o| match op {
        Op::Eq => o == Ordering::Equal,
        Op::Ne => o != Ordering::Equal,
        Op::Lt => o == Ordering::Less,
        Op::Le => o != Ordering::Greater,
        Op::Gt => o == Ordering::Greater,
        Op::Ge => o != Ordering::Less,
    })
}

/// The integer set of `v OP lit` over all integers `v`.
fn int_set(op: Op, lit: &Literal) -> IntSet {
    let (lo_val, exact) = match lit {
        Literal::Int(i) => (*i, true),
        Literal::Float(f) if f.is_nan() => return IntSet(Vec::new()),
        Literal::Float(f) => {
            if *f >= 1.7e38 {
                (i128::MAX, false)
            } else if *f <= -1.7e38 {
                (i128::MIN, false)
            } else {
                #[allow(clippy::cast_possible_truncation)]
                let t = *f as i128;
                #[allow(clippy::cast_precision_loss)]
                let exact = t as f64 == *f;
                // floor(f) for a non-integer f
                (if exact || *f > 0.0 { t } else { t - 1 }, exact)
            }
        }
        Literal::Str(_) => return IntSet(Vec::new()),
    };
    // With a non-integer f: v < f ⇔ v <= floor(f); v > f ⇔ v >= floor(f)+1.
    let fl = lo_val;
    let s = match (op, exact) {
        (Op::Eq, true) => vec![(fl, fl)],
        (Op::Eq, false) => vec![],
        (Op::Ne, true) => vec![
            (i128::MIN, fl.saturating_sub(1)),
            (fl.saturating_add(1), i128::MAX),
        ],
        (Op::Ne, false) => vec![(i128::MIN, i128::MAX)],
        (Op::Lt, true) => vec![(i128::MIN, fl.saturating_sub(1))],
        (Op::Lt | Op::Le, false) | (Op::Le, true) => vec![(i128::MIN, fl)],
        (Op::Gt, true) => vec![(fl.saturating_add(1), i128::MAX)],
        (Op::Gt | Op::Ge, false) => vec![(fl.saturating_add(1), i128::MAX)],
        (Op::Ge, true) => vec![(fl, i128::MAX)],
    };
    IntSet::normalize(s)
}

fn float_set(op: Op, lit: &Literal) -> FloatSet {
    #[allow(clippy::cast_precision_loss)]
    let x = match lit {
        Literal::Int(i) => *i as f64,
        Literal::Float(f) => *f,
        Literal::Str(_) => return FloatSet(Vec::new()),
    };
    // Large integer literals are not always exact as f64; fall back to the
    // exact generic comparison for them.
    if x.is_nan() {
        return FloatSet(Vec::new());
    }
    let r = |lo, lo_in, hi, hi_in| FRange {
        lo,
        lo_in,
        hi,
        hi_in,
    };
    let (ninf, inf) = (f64::NEG_INFINITY, f64::INFINITY);
    FloatSet(match op {
        Op::Eq => vec![r(x, true, x, true)],
        Op::Ne => vec![r(ninf, true, x, false), r(x, false, inf, true)],
        Op::Lt => vec![r(ninf, true, x, false)],
        Op::Le => vec![r(ninf, true, x, true)],
        Op::Gt => vec![r(x, false, inf, true)],
        Op::Ge => vec![r(x, true, inf, true)],
    })
}

fn float_exact(lit: &Literal) -> bool {
    match lit {
        #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
        Literal::Int(i) => (*i as f64) as i128 == *i,
        _ => true,
    }
}

/// The codes `0..n` (categorical) or enum member codes whose label satisfies the predicate.
fn code_set(c: &Column, p: &Predicate) -> Option<IntSet> {
    let labels: Vec<(i128, Value)> = if c.kind() == ColumnKind::Categorical {
        let cats = c.categories.as_ref()?;
        cats.labels
            .iter()
            .enumerate()
            .map(|(i, l)| (i as i128, l.clone()))
            .collect()
    } else if let Datatype::Enum { members, base } = c.dtype() {
        members
            .iter()
            .filter_map(|m| {
                let code = h5fmt::data::decode::integer_code(base, &m.value).ok()?;
                Some((
                    code,
                    Value::Enum {
                        code,
                        name: Some(m.name.clone()),
                    },
                ))
            })
            .collect()
    } else {
        return None;
    };
    let cmp = |v: &Value, l: &Literal| {
        if c.kind() == ColumnKind::Categorical {
            crate::query::compare_value(v, l)
        } else {
            compare(c, v, l)
        }
    };
    let ok = |v: &Value| match p {
        Predicate::Compare { op, value, .. } => op_matches(cmp(v, value), *op),
        Predicate::In { values, .. } => values.iter().any(|l| cmp(v, l) == Some(Ordering::Equal)),
        Predicate::Between { lo, hi, .. } => {
            op_matches(cmp(v, lo), Op::Ge) && op_matches(cmp(v, hi), Op::Le)
        }
        _ => false,
    };
    let codes: Vec<(i128, i128)> = labels
        .iter()
        .filter(|(_, v)| ok(v))
        .map(|(k, _)| (*k, *k))
        .collect();
    Some(IntSet::normalize(codes))
}

fn compile_leaf(c: &Column, p: &Predicate) -> Test {
    if let Predicate::IsNull { negated, .. } = p {
        return Test::Null { negated: *negated };
    }
    if matches!(p, Predicate::Prefix { .. }) {
        return Test::Generic(p.clone());
    }
    let categorical =
        c.kind() == ColumnKind::Categorical || matches!(c.dtype(), Datatype::Enum { .. });
    if categorical && int_storage(c).is_some() {
        if let Some(s) = code_set(c, p) {
            return Test::Ints(s);
        }
    }
    if !categorical && int_storage(c).is_some() {
        return Test::Ints(match p {
            Predicate::Compare { op, value, .. } => int_set(*op, value),
            Predicate::In { values, .. } => {
                let mut v = Vec::new();
                for l in values {
                    v.extend(int_set(Op::Eq, l).0);
                }
                IntSet::normalize(v)
            }
            Predicate::Between { lo, hi, .. } => {
                int_set(Op::Ge, lo).intersect(&int_set(Op::Le, hi))
            }
            _ => return Test::Generic(p.clone()),
        });
    }
    if float_storage(c).is_some() {
        let lits: Vec<&Literal> = match p {
            Predicate::Compare { value, .. } => vec![value],
            Predicate::In { values, .. } => values.iter().collect(),
            Predicate::Between { lo, hi, .. } => vec![lo, hi],
            _ => vec![],
        };
        if lits.iter().all(|l| float_exact(l)) {
            return Test::Floats(match p {
                Predicate::Compare { op, value, .. } => float_set(*op, value),
                Predicate::In { values, .. } => {
                    FloatSet(values.iter().flat_map(|l| float_set(Op::Eq, l).0).collect())
                }
                Predicate::Between { lo, hi, .. } => {
                    float_set(Op::Ge, lo).intersect(&float_set(Op::Le, hi))
                }
                _ => return Test::Generic(p.clone()),
            });
        }
    }
    Test::Generic(p.clone())
}

fn compile(e: &Expr, t: &Table, cols: &mut Vec<usize>) -> Result<Node> {
    Ok(match e {
        Expr::And(v) => {
            let mut parts = v
                .iter()
                .map(|x| compile(x, t, cols))
                .collect::<Result<Vec<_>>>()?;
            fuse(&mut parts);
            Node::And(parts)
        }
        Expr::Or(v) => Node::Or(
            v.iter()
                .map(|x| compile(x, t, cols))
                .collect::<Result<_>>()?,
        ),
        Expr::Not(x) => Node::Not(Box::new(compile(x, t, cols)?)),
        Expr::Pred(p) => {
            let c = t.column(p.column())?;
            let idx = t
                .columns()
                .iter()
                .position(|x| core::ptr::eq(x, c))
                .unwrap_or(0);
            if !cols.contains(&idx) {
                cols.push(idx);
            }
            Node::Leaf {
                col: idx,
                test: compile_leaf(c, p),
            }
        }
    })
}

/// Merge the integer / float sets of sibling leaves on the same column into one.
fn fuse(parts: &mut Vec<Node>) {
    let mut i = 0;
    while i < parts.len() {
        let mut j = i + 1;
        while j < parts.len() {
            let merged = match (&parts[i], &parts[j]) {
                (
                    Node::Leaf {
                        col: a,
                        test: Test::Ints(x),
                    },
                    Node::Leaf {
                        col: b,
                        test: Test::Ints(y),
                    },
                ) if a == b => Some(Node::Leaf {
                    col: *a,
                    test: Test::Ints(x.intersect(y)),
                }),
                (
                    Node::Leaf {
                        col: a,
                        test: Test::Floats(x),
                    },
                    Node::Leaf {
                        col: b,
                        test: Test::Floats(y),
                    },
                ) if a == b => Some(Node::Leaf {
                    col: *a,
                    test: Test::Floats(x.intersect(y)),
                }),
                _ => None,
            };
            if let Some(m) = merged {
                parts[i] = m;
                parts.remove(j);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
}

/// Per-thread buffers reused from batch to batch: one raw buffer per column.
#[derive(Default)]
pub(crate) struct Scratch {
    raw: Vec<Vec<u8>>,
}

/// One batch of rows and what has been read of it.
struct Batch<'t, 's> {
    table: &'t Table,
    start: u64,
    end: u64,
    /// Whether `scratch.raw[col]` holds this batch's rows.
    have: Vec<bool>,
    scratch: &'s mut Scratch,
    /// Decoded values and missing flags (generic tests, variable-length columns).
    values: Vec<Option<(Vec<Value>, Vec<bool>)>>,
}

impl Batch<'_, '_> {
    fn len(&self) -> usize {
        usize::try_from(self.end - self.start).unwrap_or(0)
    }
    fn words(&self) -> usize {
        self.len().div_ceil(64)
    }
    /// Read column `col`'s rows of the batch (file bytes) and, when
    /// `need_values` or the type is variable-length, decode them.
    fn load(&mut self, col: usize, need_values: bool) -> Result<()> {
        let c = &self.table.columns()[col];
        if !self.have[col] {
            let size = usize::try_from(c.dtype().size())
                .map_err(|_| crate::Error::usage("element too large"))?;
            if self.scratch.raw.len() < self.have.len() {
                self.scratch.raw.resize_with(self.have.len(), Vec::new);
            }
            let n = self.len().saturating_mul(size);
            let raw = &mut self.scratch.raw[col];
            if raw.len() != n {
                raw.clear();
                raw.try_reserve_exact(n)
                    .map_err(|_| crate::Error::usage("batch too large"))?;
                raw.resize(n, 0);
            }
            c.read_raw_into(self.start..self.end, raw)?;
            self.have[col] = true;
        }
        if (need_values || c.dtype().is_variable_length()) && self.values[col].is_none() {
            let file = c.dataset().file();
            let raw = &self.scratch.raw[col];
            let v = h5fmt::data::decode::decode_elements(
                c.dtype(),
                raw,
                self.end - self.start,
                file.ctx(),
                &file.heap(),
            )?;
            let m = c.missing_mask(raw, &v);
            self.values[col] = Some((v, m));
        }
        Ok(())
    }
}

/// Rows where the expression is true (`t`) and where it is false (`f`),
/// bit `i % 64` of word `i / 64` for row `start + i` of the batch; neither
/// means unknown (SQL NULL). No bit is set past the batch's end.
struct Tri {
    t: Vec<u64>,
    f: Vec<u64>,
}

/// Bits `0..len % 64` of the last of `ceil(len / 64)` words (all when `len`
/// is a multiple of 64).
fn last_mask(len: usize) -> u64 {
    match len % 64 {
        0 => u64::MAX,
        r => (1u64 << r) - 1,
    }
}

/// Whether every row of the batch is set (`last`: see [`last_mask`]).
fn is_full(v: &[u64], last: u64) -> bool {
    v.split_last()
        .is_none_or(|(l, rest)| *l == last && rest.iter().all(|x| *x == u64::MAX))
}

/// Bools to bits: `out[i / 64]` bit `i % 64` is `b[i]`.
fn pack_bools(b: &[bool], out: &mut [u64]) {
    for (w, c) in out.iter_mut().zip(b.chunks(64)) {
        let mut x = 0u64;
        for (j, &v) in c.iter().enumerate() {
            x |= u64::from(v) << j;
        }
        *w = x;
    }
}

/// 64 flags (each 0 or 1) as the bits of one word, flag `j` at bit `j`.
#[inline(always)]
fn pack64(m: &[u8; 64]) -> u64 {
    let mut w = 0u64;
    for (i, c) in m.chunks_exact(8).enumerate() {
        let mut a = [0u8; 8];
        a.copy_from_slice(c);
        // Byte i of `x` (0 or 1) lands on bit 56 + i of the product.
        let x = u64::from_le_bytes(a);
        w |= (x.wrapping_mul(0x0102_0408_1020_4080) >> 56) << (8 * i);
    }
    w
}

/// The test kernel: for each element of `raw` (`n` bytes each, read by
/// `load`), the bits of `hit && !miss` go to `t`, those of `!hit && !miss`
/// to `f`. Generic over the loader and the tests so that each instance is
/// a plain loop the compiler vectorises (see [`kernel`], which picks AVX2
/// when the CPU has it).
#[inline(always)]
fn kernel_body<T: Copy>(
    raw: &[u8],
    n: usize,
    load: impl Fn(&[u8]) -> T,
    hit: impl Fn(T) -> bool,
    miss: impl Fn(T) -> bool,
    t: &mut [u64],
    f: &mut [u64],
) {
    let mut hm = [0u8; 64];
    let mut mm = [0u8; 64];
    let blocks = raw.chunks_exact(64 * n);
    let tail = blocks.remainder();
    let mut k = 0;
    for block in blocks {
        for ((b, h), m) in block.chunks_exact(n).zip(hm.iter_mut()).zip(mm.iter_mut()) {
            let v = load(b);
            *h = u8::from(hit(v));
            *m = u8::from(miss(v));
        }
        let (h, ms) = (pack64(&hm), pack64(&mm));
        if let (Some(tw), Some(fw)) = (t.get_mut(k), f.get_mut(k)) {
            *tw = h & !ms;
            *fw = !h & !ms;
        }
        k += 1;
    }
    if !tail.is_empty() {
        hm = [0u8; 64];
        mm = [1u8; 64];
        for ((b, h), m) in tail.chunks_exact(n).zip(hm.iter_mut()).zip(mm.iter_mut()) {
            let v = load(b);
            *h = u8::from(hit(v));
            *m = u8::from(miss(v));
        }
        let (h, ms) = (pack64(&hm), pack64(&mm));
        if let (Some(tw), Some(fw)) = (t.get_mut(k), f.get_mut(k)) {
            *tw = h & !ms;
            *fw = !h & !ms;
        }
    }
}

/// [`kernel_body`] compiled for AVX2.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn kernel_avx2<T: Copy>(
    raw: &[u8],
    n: usize,
    load: impl Fn(&[u8]) -> T,
    hit: impl Fn(T) -> bool,
    miss: impl Fn(T) -> bool,
    t: &mut [u64],
    f: &mut [u64],
) {
    kernel_body(raw, n, load, hit, miss, t, f);
}

/// [`kernel_body`], with AVX2 when the CPU has it (wider compares, and
/// 64-bit integer compares, which baseline x86-64 lacks).
#[inline(always)]
fn kernel<T: Copy>(
    raw: &[u8],
    n: usize,
    load: impl Fn(&[u8]) -> T,
    hit: impl Fn(T) -> bool,
    miss: impl Fn(T) -> bool,
    t: &mut [u64],
    f: &mut [u64],
) {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: AVX2 is available (checked just above).
        unsafe { kernel_avx2(raw, n, load, hit, miss, t, f) };
        return;
    }
    kernel_body(raw, n, load, hit, miss, t, f);
}

/// Native integer storage types read by the integer kernel.
trait Prim: Copy + PartialOrd + PartialEq {
    const N: usize;
    fn load_le(b: &[u8]) -> Self;
    fn load_be(b: &[u8]) -> Self;
    fn to_i128(self) -> i128;
    fn clamp_from(x: i128) -> Self;
    const MIN: i128;
    const MAX: i128;
}

macro_rules! prim {
    ($($t:ty),*) => {$(
        impl Prim for $t {
            const N: usize = core::mem::size_of::<$t>();
            const MIN: i128 = <$t>::MIN as i128;
            const MAX: i128 = <$t>::MAX as i128;
            #[inline(always)]
            fn load_le(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_le_bytes(a)
            }
            #[inline(always)]
            fn load_be(b: &[u8]) -> Self {
                let mut a = [0u8; core::mem::size_of::<$t>()];
                a.copy_from_slice(b);
                <$t>::from_be_bytes(a)
            }
            #[inline(always)]
            fn to_i128(self) -> i128 { self as i128 }
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            fn clamp_from(x: i128) -> Self { x.clamp(<Self as Prim>::MIN, <Self as Prim>::MAX) as $t }
        }
    )*};
}
prim!(i8, i16, i32, i64, u8, u16, u32, u64);

/// Integer values in `set`, the fill value (when given) missing.
fn int_kernel<T: Prim>(
    raw: &[u8],
    big: bool,
    fill: Option<&[u8]>,
    set: &IntSet,
    t: &mut [u64],
    f: &mut [u64],
) {
    let load = if big { T::load_be } else { T::load_le };
    let fill = fill.filter(|b| b.len() == T::N).map(load);
    let (has_fill, fillv) = match fill {
        Some(v) => (true, v),
        None => (false, T::clamp_from(0)),
    };
    let miss = move |v: T| has_fill & (v == fillv);
    let single = match set.0.as_slice() {
        [] => Some(None),
        [(lo, hi)] if *lo <= T::MAX && *hi >= T::MIN => {
            Some(Some((T::clamp_from(*lo), T::clamp_from(*hi))))
        }
        [(_, _)] => Some(None),
        _ => None,
    };
    match (single, big) {
        (Some(Some((lo, hi))), false) => kernel(
            raw,
            T::N,
            T::load_le,
            move |v: T| (v >= lo) & (v <= hi),
            miss,
            t,
            f,
        ),
        (Some(Some((lo, hi))), true) => kernel(
            raw,
            T::N,
            T::load_be,
            move |v: T| (v >= lo) & (v <= hi),
            miss,
            t,
            f,
        ),
        (Some(None), _) => kernel(raw, T::N, load, |_| false, miss, t, f),
        (None, _) => kernel(
            raw,
            T::N,
            load,
            |v: T| set.contains(v.to_i128()),
            miss,
            t,
            f,
        ),
    }
}

fn float_kernel(
    raw: &[u8],
    size: u32,
    big: bool,
    fill: Option<(&[u8], bool)>,
    set: &FloatSet,
    t: &mut [u64],
    f: &mut [u64],
) {
    let (fill_bits, fill_nan) = match fill {
        Some((b, nan)) if b.len() == size as usize => (Some(b), nan),
        _ => (None, false),
    };
    macro_rules! go {
        ($bits:ty, $n:expr, $conv:expr) => {{
            let ld = |b: &[u8]| -> $bits {
                let mut a = [0u8; $n];
                a.copy_from_slice(b);
                if big {
                    <$bits>::from_be_bytes(a)
                } else {
                    <$bits>::from_le_bytes(a)
                }
            };
            let (has_fill, fb): (bool, $bits) = match fill_bits {
                Some(b) => (true, ld(b)),
                None => (false, 0),
            };
            let conv = $conv;
            let miss = move |bits: $bits| {
                if fill_nan {
                    let x: f64 = conv(bits);
                    x.is_nan()
                } else {
                    has_fill & (bits == fb)
                }
            };
            match set.0.as_slice() {
                [r] => {
                    let r = *r;
                    kernel(raw, $n, ld, move |b: $bits| r.contains(conv(b)), miss, t, f)
                }
                _ => kernel(raw, $n, ld, |b: $bits| set.contains(conv(b)), miss, t, f),
            }
        }};
    }
    // One interval of an f32 or f64 column: two inclusive compares at the
    // column's width (a strict bound is the inclusive one at the next
    // representable value; NaN fails both).
    if let (Some(single), false) = (inclusive_bounds(set, size), fill_nan) {
        macro_rules! interval {
            ($ft:ty, $bits:ty, $n:expr, $lo:expr, $hi:expr) => {{
                let ld = |b: &[u8]| -> $ft {
                    let mut a = [0u8; $n];
                    a.copy_from_slice(b);
                    <$ft>::from_bits(if big {
                        <$bits>::from_be_bytes(a)
                    } else {
                        <$bits>::from_le_bytes(a)
                    })
                };
                let (has_fill, fb): (bool, $bits) = match fill_bits {
                    Some(b) => (true, ld(b).to_bits()),
                    None => (false, 0),
                };
                let (lo, hi): ($ft, $ft) = ($lo, $hi);
                kernel(
                    raw,
                    $n,
                    ld,
                    move |x: $ft| (x >= lo) & (x <= hi),
                    move |x: $ft| has_fill & (x.to_bits() == fb),
                    t,
                    f,
                )
            }};
        }
        #[allow(clippy::cast_possible_truncation)]
        match (size, single) {
            (4, (lo, hi)) => interval!(f32, u32, 4, lo as f32, hi as f32),
            (_, (lo, hi)) => interval!(f64, u64, 8, lo, hi),
        }
        return;
    }
    match size {
        4 => go!(u32, 4, |b: u32| f64::from(f32::from_bits(b))),
        8 => go!(u64, 8, f64::from_bits),
        _ => go!(u16, 2, h5fmt::data::convert::f16_to_f64),
    }
}

/// The one interval of `set` as inclusive bounds that are values of the
/// column's float width (`size` 4 or 8), for a compare at that width: the
/// same values of the column fall in it. `None` for other sets and widths
/// (and for an empty interval at that width).
fn inclusive_bounds(set: &FloatSet, size: u32) -> Option<(f64, f64)> {
    let r = match (size, set.0.as_slice()) {
        (4, [_]) => *narrow_to_f32(set).0.first()?,
        (8, [r]) => *r,
        _ => return None,
    };
    #[allow(clippy::cast_possible_truncation)]
    let (lo, hi) = if size == 4 {
        let (lo, hi) = (r.lo as f32, r.hi as f32);
        (
            f64::from(if r.lo_in { lo } else { lo.next_up() }),
            f64::from(if r.hi_in { hi } else { hi.next_down() }),
        )
    } else {
        (
            if r.lo_in { r.lo } else { r.lo.next_up() },
            if r.hi_in { r.hi } else { r.hi.next_down() },
        )
    };
    (lo <= hi).then_some((lo, hi))
}

/// Evaluate `n` over the batch. With `need_f` false the caller uses only
/// the true rows: a conjunction then stops reading columns once no row of
/// the batch is true (rows it leaves false are false or unknown alike).
fn eval(n: &Node, b: &mut Batch<'_, '_>, need_f: bool) -> Result<Tri> {
    let nw = b.words();
    let last = last_mask(b.len());
    let full = |v: &mut Vec<u64>| {
        if let Some(x) = v.last_mut() {
            *x = last;
        }
    };
    Ok(match n {
        Node::And(parts) => {
            let mut t = vec![u64::MAX; nw];
            full(&mut t);
            let mut f = vec![0u64; nw];
            for p in parts {
                // Rows already false stay false: stop reading columns when all are.
                let none_true = t.iter().all(|x| *x == 0);
                if (none_true && !need_f) || is_full(&f, last) {
                    break;
                }
                let r = eval(p, b, need_f)?;
                for i in 0..nw {
                    t[i] &= r.t[i];
                    f[i] |= r.f[i];
                }
            }
            Tri { t, f }
        }
        Node::Or(parts) => {
            let mut t = vec![0u64; nw];
            let mut f = vec![u64::MAX; nw];
            full(&mut f);
            for p in parts {
                if is_full(&t, last) {
                    break;
                }
                let r = eval(p, b, true)?;
                for i in 0..nw {
                    t[i] |= r.t[i];
                    f[i] &= r.f[i];
                }
            }
            Tri { t, f }
        }
        Node::Not(x) => {
            let r = eval(x, b, true)?;
            Tri { t: r.f, f: r.t }
        }
        Node::Leaf { col, test } => {
            let col = *col;
            let c = &b.table.columns()[col];
            let generic = matches!(test, Test::Generic(_));
            b.load(col, generic)?;
            let len = b.len();
            let raw = &b.scratch.raw[col];
            let mut t = vec![0u64; nw];
            let mut f = vec![0u64; nw];
            match test {
                Test::Null { negated } => {
                    let computed;
                    let missing = match &b.values[col] {
                        Some((_, m)) => m,
                        None => {
                            computed = c.missing_mask_raw(raw);
                            &computed
                        }
                    };
                    let is_f: Vec<bool> = missing.iter().map(|m| *m == *negated).collect();
                    let is_t: Vec<bool> = is_f.iter().map(|x| !x).collect();
                    pack_bools(&is_t, &mut t);
                    pack_bools(&is_f, &mut f);
                    return Ok(Tri { t, f });
                }
                Test::Ints(set) => {
                    let (size, order, signed) = int_storage(c).expect("int kernel");
                    let big = order == ByteOrder::Big;
                    let fill = c.fill().value.as_ref().map(|_| c.fill().bytes.as_slice());
                    match (size, signed) {
                        (1, true) => int_kernel::<i8>(raw, big, fill, set, &mut t, &mut f),
                        (2, true) => int_kernel::<i16>(raw, big, fill, set, &mut t, &mut f),
                        (4, true) => int_kernel::<i32>(raw, big, fill, set, &mut t, &mut f),
                        (8, true) => int_kernel::<i64>(raw, big, fill, set, &mut t, &mut f),
                        (1, false) => int_kernel::<u8>(raw, big, fill, set, &mut t, &mut f),
                        (2, false) => int_kernel::<u16>(raw, big, fill, set, &mut t, &mut f),
                        (4, false) => int_kernel::<u32>(raw, big, fill, set, &mut t, &mut f),
                        (8, false) => int_kernel::<u64>(raw, big, fill, set, &mut t, &mut f),
                        _ => {
                            // 3-, 5-, 6-, 7-byte integers: the generic path.
                            let mut is_t = vec![false; len];
                            for (i, v) in int_values(raw, size, order, signed).enumerate() {
                                is_t[i] = set.contains(v);
                            }
                            let missing = c.missing_mask_raw(raw);
                            let mut is_f = vec![false; len];
                            for i in 0..len {
                                if missing[i] {
                                    is_t[i] = false;
                                } else {
                                    is_f[i] = !is_t[i];
                                }
                            }
                            pack_bools(&is_t, &mut t);
                            pack_bools(&is_f, &mut f);
                        }
                    }
                    return Ok(Tri { t, f });
                }
                Test::Floats(set) => {
                    let (size, order) = float_storage(c).expect("float kernel");
                    let fill = c
                        .fill()
                        .value
                        .as_ref()
                        .map(|_| (c.fill().bytes.as_slice(), c.fill().is_nan));
                    float_kernel(
                        raw,
                        size,
                        order == ByteOrder::Big,
                        fill,
                        set,
                        &mut t,
                        &mut f,
                    );
                    return Ok(Tri { t, f });
                }
                Test::Generic(p) => {
                    let (vals, missing) = b.values[col].as_ref().expect("values loaded");
                    // Missing rows are unknown: neither true nor false.
                    let mut is_t = vec![false; len];
                    let mut is_f = vec![false; len];
                    for (i, v) in vals.iter().enumerate().take(len) {
                        if !missing[i] {
                            is_t[i] = matches(p, c, v, false);
                            is_f[i] = !is_t[i];
                        }
                    }
                    pack_bools(&is_t, &mut t);
                    pack_bools(&is_f, &mut f);
                }
            }
            Tri { t, f }
        }
    })
}

fn int_values(
    raw: &[u8],
    size: u32,
    order: ByteOrder,
    signed: bool,
) -> impl Iterator<Item = i128> + '_ {
    let sz = size as usize;
    raw.chunks_exact(sz).map(move |b| {
        let mut v: u64 = 0;
        if order == ByteOrder::Big {
            for &x in b {
                v = (v << 8) | u64::from(x);
            }
        } else {
            for &x in b.iter().rev() {
                v = (v << 8) | u64::from(x);
            }
        }
        if signed && sz < 8 {
            let shift = 64 - 8 * sz as u32;
            #[allow(clippy::cast_possible_wrap)]
            let s = ((v << shift) as i64) >> shift;
            i128::from(s)
        } else if signed {
            #[allow(clippy::cast_possible_wrap)]
            let s = v as i64;
            i128::from(s)
        } else {
            i128::from(v)
        }
    })
}

/// How a query runs: which search indexes may narrow the rows (§16).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunOptions {
    /// Index policy; the default ignores indexes (they are untrusted).
    pub indexes: IndexPolicy,
}

/// What a run did: per pruned leaf, the indexes used and the rows left.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Explain {
    /// One line per step, for `h5 table query --explain`.
    pub lines: Vec<String>,
    /// Rows the scan evaluated (after pruning).
    pub rows_scanned: u64,
}

/// Whether the index predicates `preds` that [`prune_predicates`] gave for
/// `test` select exactly the rows satisfying it (their conjunction is the
/// test, not a wider bound): a single interval or a list of points, every
/// finite bound expressed.
fn preds_exact(c: &Column, test: &Test, preds: &[PrunePred]) -> bool {
    match test {
        Test::Ints(set) => {
            let rs = &set.0;
            if rs.is_empty() {
                return true;
            }
            if let [PrunePred::In(v)] = preds {
                return v.len() == rs.len() && rs.iter().all(|(a, b)| a == b);
            }
            if rs.len() != 1 {
                return false;
            }
            let (lo, hi) = rs[0];
            let want =
                usize::from(lo > i128::from(i64::MIN)) + usize::from(hi < i128::from(u64::MAX));
            want == preds.len() && !preds.is_empty()
        }
        Test::Floats(set) => {
            let narrowed;
            let rs = if matches!(c.dtype(), Datatype::Float { size: 4, .. }) {
                narrowed = narrow_to_f32(set);
                &narrowed.0
            } else {
                &set.0
            };
            if rs.is_empty() {
                return true;
            }
            if let [PrunePred::In(v)] = preds {
                return v.len() == rs.len() && rs.iter().all(|r| r.lo == r.hi);
            }
            match rs.as_slice() {
                [r] => {
                    (r.lo.is_finite() || r.lo_in)
                        && (r.hi.is_finite() || r.hi_in)
                        && !preds.is_empty()
                }
                _ => false,
            }
        }
        _ => false,
    }
}

/// The same set of `f32` values as `set` (whose bounds are `f64`), with
/// bounds that are `f32` values: an index compares at the column's width
/// and answers only for literals it can represent exactly. A bound between
/// two `f32`s moves inward to the nearer one inside the set and becomes
/// inclusive; a point that is no `f32` drops out.
fn narrow_to_f32(set: &FloatSet) -> FloatSet {
    let up = |x: f64| -> f64 {
        let f = x as f32;
        if f64::from(f) >= x {
            f64::from(f)
        } else {
            f64::from(f.next_up())
        }
    };
    let down = |x: f64| -> f64 {
        let f = x as f32;
        if f64::from(f) <= x {
            f64::from(f)
        } else {
            f64::from(f.next_down())
        }
    };
    let exact = |x: f64| x.is_infinite() || f64::from(x as f32) == x;
    let mut out = Vec::new();
    for r in &set.0 {
        let (lo, lo_in) = if exact(r.lo) {
            (r.lo, r.lo_in)
        } else {
            (up(r.lo), true)
        };
        let (hi, hi_in) = if exact(r.hi) {
            (r.hi, r.hi_in)
        } else {
            (down(r.hi), true)
        };
        if lo < hi || (lo == hi && lo_in && hi_in) {
            out.push(FRange {
                lo,
                lo_in,
                hi,
                hi_in,
            });
        }
    }
    FloatSet(out)
}

/// The index predicates a fused leaf implies, in the HEP001 index order
/// (categorical and enum leaves in code space).
fn prune_predicates(c: &Column, test: &Test) -> Vec<PrunePred> {
    let int = |x: i128| -> Option<Value> {
        if let Ok(v) = i64::try_from(x) {
            Some(Value::Int(v))
        } else {
            u64::try_from(x).ok().map(Value::UInt)
        }
    };
    match test {
        Test::Ints(set) => {
            let rs = &set.0;
            if rs.is_empty() {
                return vec![PrunePred::In(Vec::new())];
            }
            if rs.len() <= 64 && rs.iter().all(|(a, b)| a == b) {
                return vec![PrunePred::In(
                    rs.iter().filter_map(|(a, _)| int(*a)).collect(),
                )];
            }
            let (lo, hi) = (rs[0].0, rs[rs.len() - 1].1);
            let mut v = Vec::new();
            if lo > i128::from(i64::MIN) {
                v.extend(int(lo).map(PrunePred::Ge));
            }
            if hi < i128::from(u64::MAX) {
                v.extend(int(hi).map(PrunePred::Le));
            }
            v
        }
        Test::Floats(set) => {
            let narrowed;
            let rs = if matches!(c.dtype(), Datatype::Float { size: 4, .. }) {
                narrowed = narrow_to_f32(set);
                &narrowed.0
            } else {
                &set.0
            };
            if rs.is_empty() {
                return vec![PrunePred::In(Vec::new())];
            }
            if rs.iter().all(|r| r.lo == r.hi) {
                return vec![PrunePred::In(rs.iter().map(|r| Value::F64(r.lo)).collect())];
            }
            let (lo, lo_in) = rs
                .iter()
                .map(|r| (r.lo, r.lo_in))
                .fold((f64::INFINITY, true), |a, b| if b.0 < a.0 { b } else { a });
            let (hi, hi_in) =
                rs.iter()
                    .map(|r| (r.hi, r.hi_in))
                    .fold(
                        (f64::NEG_INFINITY, true),
                        |a, b| if b.0 > a.0 { b } else { a },
                    );
            let mut v = Vec::new();
            if lo.is_finite() {
                v.push(if lo_in {
                    PrunePred::Ge(Value::F64(lo))
                } else {
                    PrunePred::Gt(Value::F64(lo))
                });
            }
            if hi.is_finite() {
                v.push(if hi_in {
                    PrunePred::Le(Value::F64(hi))
                } else {
                    PrunePred::Lt(Value::F64(hi))
                });
            }
            v
        }
        Test::Generic(Predicate::Compare {
            op,
            value: Literal::Str(s),
            ..
        }) if c.kind() == ColumnKind::String => {
            let v = Value::Str(s.clone());
            match op {
                Op::Eq => vec![PrunePred::Eq(v)],
                Op::Lt => vec![PrunePred::Lt(v)],
                Op::Le => vec![PrunePred::Le(v)],
                Op::Gt => vec![PrunePred::Gt(v)],
                Op::Ge => vec![PrunePred::Ge(v)],
                Op::Ne => vec![],
            }
        }
        Test::Generic(Predicate::In { values, .. }) if c.kind() == ColumnKind::String => {
            let vs: Option<Vec<Value>> = values
                .iter()
                .map(|l| match l {
                    Literal::Str(s) => Some(Value::Str(s.clone())),
                    _ => None,
                })
                .collect();
            vs.map(|v| vec![PrunePred::In(v)]).unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// Candidate rows from the indexes: all, ranges, or a bitmap (bit `r % 64`
/// of word `r / 64` for row `r`).
enum Cands {
    All,
    Rows(Vec<core::ops::Range<u64>>),
    Bits(Vec<u64>),
}

impl Cands {
    fn count(&self, nrows: u64) -> u64 {
        match self {
            Cands::All => nrows,
            Cands::Rows(r) => r.iter().map(|x| x.end - x.start).sum(),
            Cands::Bits(w) => crate::selection::popcount(w),
        }
    }
    fn intersect(self, o: Cands) -> Cands {
        match (self, o) {
            (Cands::All, x) | (x, Cands::All) => x,
            (Cands::Rows(a), Cands::Rows(b)) => {
                match Candidates::Rows(a).intersect(Candidates::Rows(b)) {
                    Candidates::Rows(r) => Cands::Rows(r),
                    Candidates::All => Cands::All,
                }
            }
            (Cands::Bits(mut a), Cands::Bits(b)) => {
                for (x, y) in a.iter_mut().zip(b.iter().chain(core::iter::repeat(&0))) {
                    *x &= y;
                }
                Cands::Bits(a)
            }
            (Cands::Bits(mut w), Cands::Rows(r)) | (Cands::Rows(r), Cands::Bits(mut w)) => {
                let mut mask = vec![0u64; w.len()];
                for x in r {
                    set_range(&mut mask, x.start, x.end);
                }
                for (x, m) in w.iter_mut().zip(&mask) {
                    *x &= m;
                }
                Cands::Bits(w)
            }
        }
    }
}

/// Candidate rows of the expression from the indexes of its top-level AND
/// leaves, and whether they are exactly its rows (every leaf answered
/// exactly by an index: no scan needed).
fn candidates(
    node: &Node,
    table: &Table,
    opts: &RunOptions,
    explain: &mut Explain,
) -> Result<(Cands, bool)> {
    if opts.indexes == IndexPolicy::Ignore {
        explain
            .lines
            .push("indexes: ignored (--indexes ignore)".into());
        return Ok((Cands::All, false));
    }
    let leaves: Vec<&Node> = match node {
        Node::And(parts) => parts.iter().collect(),
        n @ Node::Leaf { .. } => vec![n],
        _ => Vec::new(),
    };
    let mut exact_all = !leaves.is_empty();
    let mut acc = Cands::All;
    for l in leaves {
        let Node::Leaf { col, test } = l else {
            exact_all = false;
            continue;
        };
        let c = &table.columns()[*col];
        let preds = prune_predicates(c, test);
        if preds.is_empty() {
            exact_all = false;
            continue;
        }
        if !matches!(acc, Cands::All) {
            let left = acc.count(table.nrows());
            if left <= 4 * BATCH {
                // Scanning what is left costs less than reading more indexes.
                explain.lines.push(format!(
                    "column {:?}: indexes not consulted, {left} candidate rows left to scan",
                    c.name()
                ));
                exact_all = false;
                continue;
            }
        }
        let leaf_exact = preds_exact(c, test, &preds);
        let idx = ColumnIndexes::open(table, c.name(), opts.indexes)?;
        for r in idx.rejected() {
            explain.lines.push(format!("index not used: {r}"));
        }
        if idx.is_empty() {
            explain
                .lines
                .push(format!("column {:?}: no usable index", c.name()));
            exact_all = false;
            continue;
        }
        let names: Vec<String> = idx
            .indexes()
            .map(|i| format!("{} {}", i.kind.as_str(), i.path))
            .collect();
        // A BITMAP answering exactly gives its bit rows as they are.
        if leaf_exact {
            if let Some(words) = idx.bitmap_words(&preds)? {
                let cand = Cands::Bits(words);
                explain.lines.push(format!(
                    "column {:?} {:?}: {} candidate rows of {}, exact ({})",
                    c.name(),
                    preds,
                    cand.count(table.nrows()),
                    table.nrows(),
                    names.join(", ")
                ));
                acc = acc.intersect(cand);
                continue;
            }
        }
        let (cand, exact) = idx.candidates_all(&preds)?;
        explain.lines.push(format!(
            "column {:?} {:?}: {} candidate rows of {}{} ({})",
            c.name(),
            preds,
            cand.count(table.nrows()),
            table.nrows(),
            if exact { ", exact" } else { "" },
            names.join(", ")
        ));
        acc = acc.intersect(match cand {
            Candidates::All => Cands::All,
            Candidates::Rows(r) => Cands::Rows(r),
        });
        exact_all &= leaf_exact && exact;
    }
    let exact = exact_all && !matches!(acc, Cands::All);
    Ok((acc, exact))
}

/// A window of rows to evaluate and the candidate ranges inside it.
struct Item {
    window: core::ops::Range<u64>,
    clip: Vec<core::ops::Range<u64>>,
}

/// The true rows of `it`'s window as words from its start (bit `i` is
/// row `window.start + i`), rows outside its candidate ranges cleared.
fn eval_item(node: &Node, table: &Table, it: &Item, scratch: &mut Scratch) -> Result<Vec<u64>> {
    let (start, end) = (it.window.start, it.window.end);
    let n = usize::try_from(end - start).unwrap_or(0);
    let mut out = vec![0u64; n.div_ceil(64)];
    let mut s = start;
    while s < end {
        let e = (s + BATCH).min(end);
        let ncols = table.columns().len();
        let mut b = Batch {
            table,
            start: s,
            end: e,
            have: vec![false; ncols],
            scratch: &mut *scratch,
            values: (0..ncols).map(|_| None).collect(),
        };
        let r = eval(node, &mut b, false)?;
        or_shifted(&mut out, s - start, &r.t);
        s = e;
    }
    if it.clip.len() > 1 {
        let mut mask = vec![0u64; out.len()];
        for c in &it.clip {
            set_range(&mut mask, c.start - start, c.end - start);
        }
        for (o, m) in out.iter_mut().zip(&mask) {
            *o &= m;
        }
    }
    Ok(out)
}

/// `dst |= src << at` over bit strings (word `i`, bit `j` = position `64 i + j`).
fn or_shifted(dst: &mut [u64], at: u64, src: &[u64]) {
    let (w, sh) = (usize::try_from(at / 64).unwrap_or(usize::MAX), at % 64);
    for (i, &x) in src.iter().enumerate() {
        if x == 0 {
            continue;
        }
        if let Some(d) = dst.get_mut(w + i) {
            *d |= x << sh;
        }
        if sh != 0 {
            if let Some(d) = dst.get_mut(w + i + 1) {
                *d |= x >> (64 - sh);
            }
        }
    }
}

/// Set bits `[a, b)` of a bit string.
fn set_range(words: &mut [u64], a: u64, b: u64) {
    let mut i = a;
    while i < b {
        let w = usize::try_from(i / 64).unwrap_or(usize::MAX);
        let lo = i % 64;
        let hi = (b - (i - lo)).min(64);
        let m = if hi == 64 {
            u64::MAX << lo
        } else {
            ((1u64 << hi) - 1) & (u64::MAX << lo)
        };
        if let Some(x) = words.get_mut(w) {
            *x |= m;
        }
        i = i - lo + hi;
    }
}

/// Evaluate `q` over rows `[0, NROWS)` of `table`: the rows where it is true.
pub(crate) fn select(q: &Query, table: &Table, opts: &RunOptions) -> Result<(Selection, Explain)> {
    let nrows = table.nrows();
    let mut cols = Vec::new();
    let node = compile(&q.expr, table, &mut cols)?;
    let mut explain = Explain::default();
    let (cands, exact) = candidates(&node, table, opts, &mut explain)?;
    let ranges: Vec<core::ops::Range<u64>> = match cands {
        Cands::All => core::iter::once(0..nrows).collect(),
        Cands::Bits(w) if exact => {
            let s = Selection::from_words(w, nrows);
            explain.lines.push(format!(
                "answered by the indexes: {} rows, no scan",
                s.count()
            ));
            return Ok((s, explain));
        }
        Cands::Bits(w) => Selection::from_words(w, nrows).ranges(),
        Cands::Rows(r) if exact => {
            // Every leaf answered exactly by an index: the candidates are the result.
            let mut rows = Vec::new();
            rows.try_reserve_exact(r.iter().map(|x| (x.end - x.start) as usize).sum())
                .map_err(|_| crate::Error::Usage("too many result rows".into()))?;
            for x in r {
                rows.extend(x);
            }
            explain.lines.push(format!(
                "answered by the indexes: {} rows, no scan",
                rows.len()
            ));
            return Ok((Selection::from_rows(rows, nrows), explain));
        }
        Cands::Rows(r) => r,
    };
    // Work items: one window per BATCH-aligned block holding candidate rows,
    // from its first to its last candidate; rows of the window that are not
    // candidates are dropped from the result (the index said they cannot match).
    let mut items: Vec<Item> = Vec::new();
    for r in ranges {
        let mut s = r.start;
        while s < r.end {
            let e = ((s / BATCH + 1) * BATCH).min(r.end);
            match items.last_mut() {
                Some(it) if it.window.start / BATCH == s / BATCH => {
                    it.window.end = e;
                    it.clip.push(s..e);
                }
                _ => items.push(Item {
                    window: s..e,
                    clip: core::iter::once(s..e).collect(),
                }),
            }
            s = e;
        }
    }
    explain.rows_scanned = items.iter().map(|r| r.window.end - r.window.start).sum();
    explain.lines.push(format!(
        "scan: {} of {} rows in {} batch(es)",
        explain.rows_scanned,
        nrows,
        items.len()
    ));
    let parts = par_map(items.len(), Scratch::default, |scratch, i| {
        eval_item(&node, table, &items[i], scratch)
    })?;
    let count: u64 = parts.iter().map(|p| crate::selection::popcount(p)).sum();
    // Few rows: listed; many: a bitmap of the table.
    if count.saturating_mul(64) < nrows {
        let mut rows = Vec::new();
        rows.try_reserve_exact(usize::try_from(count).unwrap_or(usize::MAX))
            .map_err(|_| crate::Error::Usage("too many result rows".into()))?;
        for (it, p) in items.iter().zip(&parts) {
            for (i, &w) in p.iter().enumerate() {
                rows.extend(BitIter(w).map(|j| it.window.start + 64 * i as u64 + u64::from(j)));
            }
        }
        return Ok((Selection::from_rows(rows, nrows), explain));
    }
    let nw = usize::try_from(nrows.div_ceil(64))
        .map_err(|_| crate::Error::Usage("too many rows".into()))?;
    let mut words = Vec::new();
    words
        .try_reserve_exact(nw)
        .map_err(|_| crate::Error::Usage("too many result rows".into()))?;
    words.resize(nw, 0u64);
    for (it, p) in items.iter().zip(&parts) {
        or_shifted(&mut words, it.window.start, p);
    }
    Ok((Selection::from_words(words, nrows), explain))
}

/// The number of cores, asked of the system once (on Linux
/// `available_parallelism` reads the cgroup quota files on every call,
/// a tenth of a query answered by an index).
#[cfg(feature = "std")]
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |x| x.get()))
}

/// `f(state, i)` for `i` in `0..n` on the available cores (items
/// interleaved over threads, each with its own `init()` state), results in
/// item order; the first error in item order is returned.
#[cfg(feature = "std")]
pub(crate) fn par_map<S, T: Send>(
    n: usize,
    init: impl Fn() -> S + Sync,
    f: impl Fn(&mut S, usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let threads = if n > 1 { cores().min(n) } else { 1 };
    if threads == 1 {
        let mut s = init();
        return (0..n).map(|i| f(&mut s, i)).collect();
    }
    type Part<T> = Result<Vec<(usize, T)>>;
    let (init, f) = (&init, &f);
    let work = move |t: usize| -> Part<T> {
        let mut s = init();
        let mut mine = Vec::new();
        for i in (t..n).step_by(threads) {
            mine.push((i, f(&mut s, i)?));
        }
        Ok(mine)
    };
    let parts: Vec<Part<T>> = std::thread::scope(|sc| {
        let handles: Vec<_> = (1..threads).map(|t| sc.spawn(move || work(t))).collect();
        let mut done = vec![work(0)];
        done.extend(handles.into_iter().map(|h| {
            h.join()
                .unwrap_or_else(|_| Err(crate::Error::Usage("query worker panicked".into())))
        }));
        done
    });
    let mut all: Vec<(usize, T)> = Vec::with_capacity(n);
    let mut first_err: Option<(usize, crate::Error)> = None;
    for (t, p) in parts.into_iter().enumerate() {
        match p {
            Ok(v) => all.extend(v),
            Err(e) => {
                // Items of thread `t` run in order: the failing one is the
                // first of its items not in the results.
                let done = all.iter().filter(|(i, _)| i % threads == t).count();
                let i = t + done * threads;
                if first_err.as_ref().is_none_or(|(j, _)| i < *j) {
                    first_err = Some((i, e));
                }
            }
        }
    }
    if let Some((_, e)) = first_err {
        return Err(e);
    }
    all.sort_unstable_by_key(|(i, _)| *i);
    Ok(all.into_iter().map(|(_, v)| v).collect())
}

/// Sequential [`par_map`] (no threads without std).
#[cfg(not(feature = "std"))]
pub(crate) fn par_map<S, T>(
    n: usize,
    init: impl Fn() -> S,
    f: impl Fn(&mut S, usize) -> Result<T>,
) -> Result<Vec<T>> {
    let mut s = init();
    (0..n).map(|i| f(&mut s, i)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_sets_of_float_literals() {
        assert_eq!(
            int_set(Op::Lt, &Literal::Float(2.5)).0,
            vec![(i128::MIN, 2)]
        );
        assert_eq!(
            int_set(Op::Gt, &Literal::Float(-2.5)).0,
            vec![(-2, i128::MAX)]
        );
        assert_eq!(
            int_set(Op::Ge, &Literal::Float(-2.0)).0,
            vec![(-2, i128::MAX)]
        );
        assert!(int_set(Op::Eq, &Literal::Float(0.5)).0.is_empty());
        assert_eq!(
            int_set(Op::Ne, &Literal::Int(3)).0,
            vec![(i128::MIN, 2), (4, i128::MAX)]
        );
        let both = int_set(Op::Ge, &Literal::Int(3)).intersect(&int_set(Op::Lt, &Literal::Int(7)));
        assert_eq!(both.0, vec![(3, 6)]);
        assert!(both.contains(6) && !both.contains(7) && !both.contains(2));
    }

    #[test]
    fn float_sets_exclude_nan_and_keep_bounds() {
        let s = float_set(Op::Ge, &Literal::Int(0)).intersect(&float_set(Op::Le, &Literal::Int(0)));
        assert!(
            s.contains(0.0) && s.contains(-0.0) && !s.contains(f64::NAN) && !s.contains(1e-300)
        );
        let ne = float_set(Op::Ne, &Literal::Float(1.5));
        assert!(!ne.contains(f64::NAN) && !ne.contains(1.5) && ne.contains(f64::INFINITY));
    }
}
