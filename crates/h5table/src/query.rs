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

use crate::error::{Error, Result};
use crate::model::{Column, ColumnKind, Table};
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
}

impl Predicate {
    /// The column the predicate reads.
    pub fn column(&self) -> &str {
        match self {
            Predicate::Compare { column, .. }
            | Predicate::In { column, .. }
            | Predicate::IsNull { column, .. } => column,
        }
    }
}

/// A conjunction of predicates.
#[derive(Debug, Clone, PartialEq)]
pub struct Query {
    /// The predicates, all of which a row must satisfy.
    pub predicates: Vec<Predicate>,
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

impl Query {
    /// Parse a WHERE expression.
    ///
    /// # Errors
    /// `Usage` naming what is malformed.
    pub fn parse(expr: &str) -> Result<Query> {
        let toks = tokenize(expr)?;
        let bad = |m: &str| Error::usage(format!("--where {expr:?}: {m}"));
        let kw = |t: Option<&Tok>, k: &str| matches!(t, Some(Tok::Ident(s)) if s.eq_ignore_ascii_case(k));
        let literal = |t: Option<&Tok>| -> Result<Literal> {
            match t {
                Some(Tok::Str(s)) => Ok(Literal::Str(s.clone())),
                Some(Tok::Num(n)) => {
                    parse_number(n).ok_or_else(|| bad(&format!("{n:?} is not a number")))
                }
                _ => Err(bad("expected a literal ('text' or a number)")),
            }
        };
        let mut preds = Vec::new();
        let mut i = 0;
        loop {
            let column = match toks.get(i) {
                Some(Tok::Ident(s)) | Some(Tok::Quoted(s)) => s.clone(),
                _ => return Err(bad("expected a column name")),
            };
            i += 1;
            match toks.get(i) {
                Some(Tok::Op(op)) => {
                    let value = literal(toks.get(i + 1))?;
                    preds.push(Predicate::Compare {
                        column,
                        op: *op,
                        value,
                    });
                    i += 2;
                }
                t if kw(t, "IN") => {
                    i += 1;
                    if toks.get(i) != Some(&Tok::LParen) {
                        return Err(bad("expected ( after IN"));
                    }
                    i += 1;
                    let mut values = Vec::new();
                    loop {
                        values.push(literal(toks.get(i))?);
                        i += 1;
                        match toks.get(i) {
                            Some(Tok::Comma) => i += 1,
                            Some(Tok::RParen) => {
                                i += 1;
                                break;
                            }
                            _ => return Err(bad("expected , or ) in the IN list")),
                        }
                    }
                    preds.push(Predicate::In { column, values });
                }
                t if kw(t, "IS") => {
                    i += 1;
                    let negated = kw(toks.get(i), "NOT");
                    if negated {
                        i += 1;
                    }
                    if !kw(toks.get(i), "NULL") {
                        return Err(bad("expected NULL after IS [NOT]"));
                    }
                    i += 1;
                    preds.push(Predicate::IsNull { column, negated });
                }
                _ => return Err(bad("expected an operator, IN or IS after the column name")),
            }
            match toks.get(i) {
                None => break,
                t if kw(t, "AND") => i += 1,
                _ => return Err(bad("expected AND between predicates")),
            }
        }
        Ok(Query { predicates: preds })
    }

    /// Evaluate by scanning the columns the predicates name, rows `[0, NROWS)`;
    /// the matching row positions in increasing order.
    ///
    /// # Errors
    /// `Usage` for an unknown column or a literal the column cannot compare
    /// with; read errors.
    pub fn run(&self, table: &Table) -> Result<Vec<u64>> {
        let cols: Vec<&Column> = self
            .predicates
            .iter()
            .map(|p| table.column(p.column()))
            .collect::<Result<_>>()?;
        const BATCH: u64 = 1 << 16;
        let n = table.nrows();
        let mut out = Vec::new();
        let mut at = 0;
        while at < n {
            let stop = (at + BATCH).min(n);
            let len = usize::try_from(stop - at).unwrap_or(0);
            let mut keep = vec![true; len];
            for (p, c) in self.predicates.iter().zip(&cols) {
                let s = c.read(at..stop)?;
                for (r, k) in keep.iter_mut().enumerate() {
                    if *k {
                        *k = matches(p, c, &s.values[r], s.missing[r]);
                    }
                }
            }
            out.extend(
                keep.iter()
                    .enumerate()
                    .filter(|(_, k)| **k)
                    .map(|(r, _)| at + r as u64),
            );
            at = stop;
        }
        Ok(out)
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

fn compare_value(v: &Value, lit: &Literal) -> Option<Ordering> {
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

/// [`compare`] without a column: a value against a literal.
pub fn compare_value_pub(v: &Value, lit: &Literal) -> Option<Ordering> {
    compare_value(v, lit)
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
        assert_eq!(
            q.predicates,
            vec![
                Predicate::Compare {
                    column: "q\"uote".into(),
                    op: Op::Eq,
                    value: Literal::Int(3)
                },
                Predicate::In {
                    column: "x".into(),
                    values: vec![Literal::Str("a'b".into()), Literal::Float(-1500.0)]
                },
                Predicate::IsNull {
                    column: "y".into(),
                    negated: true
                },
            ]
        );
        assert!(Query::parse("x = ").is_err());
        assert!(Query::parse("x IN (1, 2").is_err());
        assert!(Query::parse("x = 1 OR y = 2").is_err());
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
