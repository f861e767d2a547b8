//! A small WHERE language over a table and its scan evaluator.
//!
//! `pred AND pred …` with `col OP literal` (`=`, `!=`/`<>`, `<`, `<=`, `>`, `>=`),
//! `col IN (lit, …)`, `col IS NULL`, `col IS NOT NULL`. Strings are written in
//! single quotes (`''` escapes one), odd column names in double quotes (`""`
//! escapes one); keywords are case-insensitive.
//!
//! Semantics are SQL's three-valued logic over HEP001's model: a missing row
//! (§8.5) never satisfies a comparison or `IN`; a NaN that is not the fill
//! compares false; strings compare byte-wise as UTF-8 with their padding
//! stripped (§10.5); categorical columns compare by label, enums by member name
//! (or by code against a number).
//!
//! ```no_run
//! # let file = h5fmt::File::open("t.h5")?;
//! let table = h5table::Table::open(&file.group("/events")?)?;
//! let q = h5table::query::Query::parse("energy >= 100 AND label IN ('muon', 'pion')")?;
//! let rows: Vec<u64> = q.run(&table)?;
//! # Ok::<(), h5table::Error>(())
//! ```

pub use crate::engine::{Explain, RunOptions};
use crate::error::{Error, Result};
pub use crate::index::prune::IndexPolicy;
use crate::model::{Column, ColumnKind, Table};
use crate::selection::Selection;
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use core::cmp::Ordering;
use h5fmt::Value;

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `=`
    Eq,
    /// `!=` or `<>`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

/// A literal of the WHERE language.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// An integer (any width up to 128 bits).
    Int(i128),
    /// A number with a fraction or an exponent (or too large for `Int`).
    Float(f64),
    /// A quoted string.
    Str(String),
}

/// One predicate on one column.
#[derive(Debug, Clone, PartialEq)]
pub enum Predicate {
    /// `col OP literal`.
    Compare {
        /// Column name.
        column: String,
        /// Operator.
        op: Op,
        /// Right-hand side.
        value: Literal,
    },
    /// `col IN (…)`.
    In {
        /// Column name.
        column: String,
        /// The set.
        values: Vec<Literal>,
    },
    /// `col IS NULL` (`negated`: `IS NOT NULL`).
    IsNull {
        /// Column name.
        column: String,
        /// `IS NOT NULL`.
        negated: bool,
    },
    /// `col BETWEEN lo AND hi` (both inclusive).
    Between {
        /// Column name.
        column: String,
        /// Lower bound.
        lo: Literal,
        /// Upper bound.
        hi: Literal,
    },
    /// `col LIKE 'prefix%'`: strings starting with `prefix` (byte-wise).
    Prefix {
        /// Column name.
        column: String,
        /// The prefix.
        prefix: String,
    },
}

/// A boolean expression over predicates.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    /// All must hold.
    And(Vec<Expr>),
    /// Any must hold.
    Or(Vec<Expr>),
    /// Negation (SQL: NOT of unknown is unknown).
    Not(Box<Expr>),
    /// One predicate.
    Pred(Predicate),
}

impl Predicate {
    /// The column the predicate reads.
    pub fn column(&self) -> &str {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull { column, .. }
            | Predicate::Between { column, .. }
            | Predicate::Prefix { column, .. } => column,
        }
    }
}

/// A parsed WHERE expression.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The expression.
    pub expr: Expr,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Ident(String),
    Quoted(String),
    Str(String),
    Num(String),
    Op(Op),
    LParen,
    RParen,
    Comma,
}

fn tokenize(s: &str) -> Result<Vec<Tok>> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    let bad = |m: String| Error::usage(format!("--where {s:?}: {m}"));
    while i < b.len() {
        let c = b[i];
        if c.is_whitespace() {
            i += 1;
        } else if c == '(' {
            out.push(Tok::LParen);
            i += 1;
        } else if c == ')' {
            out.push(Tok::RParen);
            i += 1;
        } else if c == ',' {
            out.push(Tok::Comma);
            i += 1;
        } else if c == '\'' || c == '"' {
            let q = c;
            let mut text = String::new();
            i += 1;
            loop {
                match b.get(i) {
                    None => return Err(bad(format!("unterminated {q}…{q}"))),
                    Some(&x) if x == q => {
                        if b.get(i + 1) == Some(&q) {
                            text.push(q);
                            i += 2;
                        } else {
                            i += 1;
                            break;
                        }
                    }
                    Some(&x) => {
                        text.push(x);
                        i += 1;
                    }
                }
            }
            out.push(if q == '\'' {
                Tok::Str(text)
            } else {
                Tok::Quoted(text)
            });
        } else if "=<>!".contains(c) {
            let two: String = b[i..(i + 2).min(b.len())].iter().collect();
            let (op, n) = match two.as_str() {
                "<=" => (Op::Le, 2),
                ">=" => (Op::Ge, 2),
                "!=" | "<>" => (Op::Ne, 2),
                "==" => (Op::Eq, 2),
                _ => match c {
                    '=' => (Op::Eq, 1),
                    '<' => (Op::Lt, 1),
                    '>' => (Op::Gt, 1),
                    _ => return Err(bad(format!("unexpected {c:?}"))),
                },
            };
            out.push(Tok::Op(op));
            i += n;
        } else if c.is_ascii_digit()
            || ((c == '-' || c == '+' || c == '.')
                && b.get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.'))
        {
            let start = i;
            i += 1;
            while i < b.len() {
                let d = b[i];
                let exp_sign = (d == '-' || d == '+') && matches!(b[i - 1], 'e' | 'E');
                if d.is_ascii_alphanumeric() || d == '.' || exp_sign {
                    i += 1;
                } else {
                    break;
                }
            }
            out.push(Tok::Num(b[start..i].iter().collect()));
        } else if c.is_alphanumeric() || c == '_' {
            let start = i;
            while i < b.len() && (b[i].is_alphanumeric() || b[i] == '_' || b[i] == '.') {
                i += 1;
            }
            out.push(Tok::Ident(b[start..i].iter().collect()));
        } else {
            return Err(bad(format!("unexpected {c:?}")));
        }
    }
    Ok(out)
}

fn parse_number(s: &str) -> Option<Literal> {
    if let Ok(i) = s.parse::<i128>() {
        return Some(Literal::Int(i));
    }
    let lower = s.to_ascii_lowercase();
    if lower.contains("inf") || lower.contains("nan") {
        return None;
    }
    s.parse::<f64>().ok().map(Literal::Float)
}

struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    expr: &'a str,
}

impl Parser<'_> {
    fn bad(&self, m: &str) -> Error {
        Error::usage(format!("--where {:?}: {m}", self.expr))
    }
    fn kw(&self, k: &str) -> bool {
        matches!(self.toks.get(self.i), Some(Tok::Ident(s)) if s.eq_ignore_ascii_case(k))
    }
    fn literal(&mut self) -> Result<Literal> {
        let lit = match self.toks.get(self.i) {
            Some(Tok::Str(s)) => Literal::Str(s.clone()),
            Some(Tok::Num(n)) => {
                parse_number(n).ok_or_else(|| self.bad(&format!("{n:?} is not a number")))?
            }
            _ => return Err(self.bad("expected a literal ('text' or a number)")),
        };
        self.i += 1;
        Ok(lit)
    }
    fn or(&mut self) -> Result<Expr> {
        let mut parts = vec![self.and()?];
        while self.kw("OR") {
            self.i += 1;
            parts.push(self.and()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expr::Or(parts)
        })
    }
    fn and(&mut self) -> Result<Expr> {
        let mut parts = vec![self.not()?];
        while self.kw("AND") {
            self.i += 1;
            parts.push(self.not()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expr::And(parts)
        })
    }
    fn not(&mut self) -> Result<Expr> {
        if self.kw("NOT") {
            self.i += 1;
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        if self.toks.get(self.i) == Some(&Tok::LParen) {
            self.i += 1;
            let e = self.or()?;
            if self.toks.get(self.i) != Some(&Tok::RParen) {
                return Err(self.bad("expected )"));
            }
            self.i += 1;
            return Ok(e);
        }
        self.predicate()
    }
    fn predicate(&mut self) -> Result<Expr> {
        let column = match self.toks.get(self.i) {
            Some(Tok::Ident(s)) | Some(Tok::Quoted(s)) => s.clone(),
            _ => return Err(self.bad("expected a column name")),
        };
        self.i += 1;
        let negated_kw = self.kw("NOT")
            && matches!(self.toks.get(self.i + 1), Some(Tok::Ident(k)) if ["IN", "BETWEEN", "LIKE"].iter().any(|w| k.eq_ignore_ascii_case(w)));
        if negated_kw {
            self.i += 1;
        }
        let p = if let Some(Tok::Op(op)) = self.toks.get(self.i) {
            let op = *op;
            self.i += 1;
            Predicate::Compare {
                column,
                op,
                value: self.literal()?,
            }
        } else if self.kw("IN") {
            self.i += 1;
            if self.toks.get(self.i) != Some(&Tok::LParen) {
                return Err(self.bad("expected ( after IN"));
            }
            self.i += 1;
            let mut values = Vec::new();
            loop {
                values.push(self.literal()?);
                match self.toks.get(self.i) {
                    Some(Tok::Comma) => self.i += 1,
                    Some(Tok::RParen) => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(self.bad("expected , or ) in the IN list")),
                }
            }
            Predicate::In { column, values }
        } else if self.kw("BETWEEN") {
            self.i += 1;
            let lo = self.literal()?;
            if !self.kw("AND") {
                return Err(self.bad("expected AND in BETWEEN … AND …"));
            }
            self.i += 1;
            let hi = self.literal()?;
            Predicate::Between { column, lo, hi }
        } else if self.kw("LIKE") {
            self.i += 1;
            match self.literal()? {
                Literal::Str(s) if s.ends_with('%') && !s[..s.len() - 1].contains(['%', '_']) => {
                    Predicate::Prefix {
                        column,
                        prefix: s[..s.len() - 1].into(),
                    }
                }
                _ => {
                    return Err(self.bad("LIKE takes a prefix pattern 'text%' (no other wildcards)"))
                }
            }
        } else if self.kw("IS") {
            self.i += 1;
            let negated = self.kw("NOT");
            if negated {
                self.i += 1;
            }
            if !self.kw("NULL") {
                return Err(self.bad("expected NULL after IS [NOT]"));
            }
            self.i += 1;
            Predicate::IsNull { column, negated }
        } else {
            return Err(
                self.bad("expected an operator, IN, BETWEEN, LIKE or IS after the column name")
            );
        };
        let e = Expr::Pred(p);
        Ok(if negated_kw {
            Expr::Not(Box::new(e))
        } else {
            e
        })
    }
}

impl Query {
    /// Parse a WHERE expression: predicates joined by `AND`, `OR`, `NOT` and
    /// parentheses (`NOT` binds tightest, then `AND`, then `OR`).
    ///
    /// # Errors
    /// `Usage` naming what is malformed.
    pub fn parse(expr: &str) -> Result<Query> {
        let mut p = Parser {
            toks: tokenize(expr)?,
            i: 0,
            expr,
        };
        let e = p.or()?;
        if p.i != p.toks.len() {
            return Err(
                p.bad("unexpected text after the expression (predicates are joined by AND / OR)")
            );
        }
        Ok(Query { expr: e })
    }

    /// The matching row positions in `[0, NROWS)`, in increasing order.
    ///
    /// # Errors
    /// `Usage` for an unknown column; read errors.
    pub fn run(&self, table: &Table) -> Result<Vec<u64>> {
        Ok(self.select(table, &RunOptions::default())?.0.into_rows())
    }

    /// [`Query::run`] under options (the search-index policy), with what the
    /// run did (indexes used, candidate and scanned rows).
    ///
    /// # Errors
    /// As [`Query::run`]. An index that cannot be used never fails the query.
    pub fn run_with(&self, table: &Table, opts: &RunOptions) -> Result<(Vec<u64>, Explain)> {
        let (s, explain) = self.select(table, opts)?;
        Ok((s.into_rows(), explain))
    }

    /// [`Query::run_with`] as a [`Selection`]: what a count
    /// ([`Selection::count`], a popcount when many rows match) or an
    /// aggregate ([`Column::sum`]) needs, without listing the rows.
    ///
    /// # Errors
    /// As [`Query::run`].
    pub fn select(&self, table: &Table, opts: &RunOptions) -> Result<(Selection, Explain)> {
        crate::engine::select(self, table, opts)
    }
}

/// Whether one cell satisfies a predicate.
pub fn matches(p: &Predicate, c: &Column, v: &Value, missing: bool) -> bool {
    match p {
        Predicate::IsNull { negated, .. } => missing != *negated,
        _ if missing => false,
        Predicate::Compare { op, value, .. } => compare(c, v, value).is_some_and(|o| match op {
            Op::Eq => o == Ordering::Equal,
            Op::Ne => o != Ordering::Equal,
            Op::Lt => o == Ordering::Less,
            Op::Le => o != Ordering::Greater,
            Op::Gt => o == Ordering::Greater,
            Op::Ge => o != Ordering::Less,
        }),
        Predicate::In { values, .. } => values
            .iter()
            .any(|l| compare(c, v, l) == Some(Ordering::Equal)),
        Predicate::Between { lo, hi, .. } => {
            compare(c, v, lo).is_some_and(|o| o != Ordering::Less)
                && compare(c, v, hi).is_some_and(|o| o != Ordering::Greater)
        }
        Predicate::Prefix { prefix, .. } => {
            string_bytes(c, v).is_some_and(|b| b.starts_with(prefix.as_bytes()))
        }
    }
}

fn string_bytes<'v>(c: &'v Column, v: &'v Value) -> Option<&'v [u8]> {
    let v = if c.kind() == ColumnKind::Categorical {
        let code = crate::text::as_code(v)?;
        c.categories
            .as_ref()?
            .labels
            .get(usize::try_from(code).ok()?)?
    } else {
        v
    };
    match v {
        Value::Str(s) => Some(s.as_bytes()),
        Value::RawStr(b) => Some(b),
        Value::Enum { name: Some(n), .. } => Some(n.as_bytes()),
        _ => None,
    }
}

#[derive(Debug, Clone, Copy)]
enum Num {
    Int(i128),
    Float(f64),
}

fn cmp_int_float(i: i128, f: f64) -> Option<Ordering> {
    if f.is_nan() {
        return None;
    }
    if f >= 1.7e38 {
        return Some(Ordering::Less);
    }
    if f <= -1.7e38 {
        return Some(Ordering::Greater);
    }
    // Truncation toward zero (no `floor` without std); |f| < 2^127 here.
    #[allow(clippy::cast_possible_truncation)]
    let t = f as i128;
    #[allow(clippy::cast_precision_loss)]
    if t as f64 == f {
        return Some(i.cmp(&t));
    }
    // f is not an integer: i < f exactly when i <= floor(f).
    let floor = if f > 0.0 { t } else { t - 1 };
    Some(if i <= floor {
        Ordering::Less
    } else {
        Ordering::Greater
    })
}

fn cmp_num(a: Num, b: Num) -> Option<Ordering> {
    match (a, b) {
        (Num::Int(x), Num::Int(y)) => Some(x.cmp(&y)),
        (Num::Float(x), Num::Float(y)) => x.partial_cmp(&y),
        (Num::Int(x), Num::Float(y)) => cmp_int_float(x, y),
        (Num::Float(x), Num::Int(y)) => cmp_int_float(y, x).map(Ordering::reverse),
    }
}

fn num_of(v: &Value) -> Option<Num> {
    Some(match v {
        Value::Int(i) => Num::Int(i128::from(*i)),
        Value::UInt(u) => Num::Int(i128::from(*u)),
        Value::BigInt(i) => Num::Int(*i),
        Value::BigUInt(u) => Num::Int(i128::try_from(*u).ok()?),
        Value::F16(b) => Num::Float(h5fmt::data::convert::f16_to_f64(*b)),
        Value::F32(x) => Num::Float(f64::from(*x)),
        Value::F64(x) => Num::Float(*x),
        _ => return None,
    })
}

/// Compare a cell with a literal under the rules of the module doc; `None`
/// when they cannot be compared (which satisfies no predicate).
pub fn compare(c: &Column, v: &Value, lit: &Literal) -> Option<Ordering> {
    if c.kind() == ColumnKind::Categorical {
        let cats = c.categories.as_ref()?;
        let code = crate::text::as_code(v)?;
        let label = cats.labels.get(usize::try_from(code).ok()?)?;
        return compare_value(label, lit);
    }
    compare_value(v, lit)
}

/// [`compare`] without a column: a value against a literal.
pub fn compare_value(v: &Value, lit: &Literal) -> Option<Ordering> {
    match (v, lit) {
        (Value::Enum { name, code }, Literal::Str(s)) => {
            let _ = code;
            Some(name.as_deref()?.as_bytes().cmp(s.as_bytes()))
        }
        (Value::Enum { code, .. }, Literal::Int(i)) => Some(code.cmp(i)),
        (Value::Str(a), Literal::Str(s)) => Some(a.as_bytes().cmp(s.as_bytes())),
        (Value::RawStr(a), Literal::Str(s)) => Some(a.as_slice().cmp(s.as_bytes())),
        (Value::Opaque(a), Literal::Str(s)) => {
            let want = parse_hex(s)?;
            Some(a.as_slice().cmp(want.as_slice()))
        }
        (_, Literal::Int(i)) => cmp_num(num_of(v)?, Num::Int(*i)),
        (_, Literal::Float(f)) => cmp_num(num_of(v)?, Num::Float(*f)),
        _ => None,
    }
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    let s = s.trim();
    let s = s.strip_prefix("0x").unwrap_or(s);
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl core::fmt::Display for Literal {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        match self {
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => write!(f, "{x}"),
            Literal::Str(s) => write!(f, "'{}'", s.replace('\'', "''")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_grammar() {
        let q =
            Query::parse(r#""q""uote" = 3 AND x in ('a''b', -1.5e3) and y IS not null"#).unwrap();
        let pred = Expr::Pred;
        assert_eq!(
            q.expr,
            Expr::And(vec![
                pred(Predicate::Compare {
                    column: "q\"uote".into(),
                    op: Op::Eq,
                    value: Literal::Int(3)
                }),
                pred(Predicate::In {
                    column: "x".into(),
                    values: vec![Literal::Str("a'b".into()), Literal::Float(-1500.0)]
                }),
                pred(Predicate::IsNull {
                    column: "y".into(),
                    negated: true
                }),
            ])
        );
        let q = Query::parse("NOT (a < 1 OR b BETWEEN 2 AND 3) AND c NOT IN (1) OR s LIKE 'ab%'")
            .unwrap();
        assert_eq!(
            q.expr,
            Expr::Or(vec![
                Expr::And(vec![
                    Expr::Not(Box::new(Expr::Or(vec![
                        pred(Predicate::Compare {
                            column: "a".into(),
                            op: Op::Lt,
                            value: Literal::Int(1)
                        }),
                        pred(Predicate::Between {
                            column: "b".into(),
                            lo: Literal::Int(2),
                            hi: Literal::Int(3)
                        }),
                    ]))),
                    Expr::Not(Box::new(pred(Predicate::In {
                        column: "c".into(),
                        values: vec![Literal::Int(1)]
                    }))),
                ]),
                pred(Predicate::Prefix {
                    column: "s".into(),
                    prefix: "ab".into()
                }),
            ])
        );
        assert!(Query::parse("s LIKE '%a'").is_err());
        assert!(Query::parse("(a = 1").is_err());
        assert!(Query::parse("x = ").is_err());
        assert!(Query::parse("x IN (1, 2").is_err());
        assert!(Query::parse("x = 1 y = 2").is_err());
        assert!(Query::parse("'x' = 1").is_err());
    }

    #[test]
    fn mixed_number_comparisons_are_exact() {
        let big = Value::UInt(18_446_744_073_709_551_000);
        assert_eq!(
            compare_value(&big, &Literal::Int(18_446_744_073_709_551_000)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare_value(&Value::Int(3), &Literal::Float(2.5)),
            Some(Ordering::Greater)
        );
        assert_eq!(
            compare_value(&Value::Int(2), &Literal::Float(2.5)),
            Some(Ordering::Less)
        );
        assert_eq!(compare_value(&Value::F64(f64::NAN), &Literal::Int(0)), None);
        assert_eq!(
            compare_value(&Value::F32(-0.0), &Literal::Int(0)),
            Some(Ordering::Equal)
        );
        assert_eq!(
            compare_value(&Value::Str("é".into()), &Literal::Str("z".into())),
            Some(Ordering::Greater)
        );
    }
}
