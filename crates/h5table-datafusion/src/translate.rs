//! DataFusion logical [`Expr`] → h5table [`Query`] translation.
//!
//! Only what the h5table engine evaluates with the same answer as SQL is
//! translated: `column OP literal` (either side), `IN (literals)`,
//! `BETWEEN`, `IS [NOT] NULL`, `LIKE 'prefix%'`, a bare boolean column, and
//! `AND` / `OR` / `NOT` over those. A column may be wrapped in a lossless
//! cast (the type coercions DataFusion inserts, e.g. `Float32` → `Float64`,
//! a dictionary to its values); a lossy cast (`Int64` → `Float64`) is not
//! translated. Anything else gives `None` (the filter stays DataFusion's).

use datafusion::arrow::datatypes::{DataType, Schema};
use datafusion::logical_expr::expr::InList;
use datafusion::logical_expr::{Between, BinaryExpr, Expr, Like, Operator};
use datafusion::scalar::ScalarValue;
use h5table::query::{Expr as QExpr, Literal, Op, Predicate, Query};

/// What literals a column can be compared with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// Integers (compared exactly with integer and float literals).
    Int,
    /// Floats.
    Float,
    /// UTF-8 strings, categorical labels, enum member names (byte-wise).
    Utf8,
    /// The HEP001 boolean enum (`FALSE = 0`, `TRUE = 1`).
    Bool,
    /// Anything else: only `IS [NOT] NULL`.
    Other,
}

fn class_of(dt: &DataType) -> Class {
    use DataType::*;
    match dt {
        Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 => Class::Int,
        Float16 | Float32 | Float64 => Class::Float,
        Utf8 | LargeUtf8 | Utf8View => Class::Utf8,
        Boolean => Class::Bool,
        Dictionary(_, v) => class_of(v),
        _ => Class::Other,
    }
}

/// The exact value range of an integer type.
fn int_range(dt: &DataType) -> Option<(i128, i128)> {
    use DataType::*;
    Some(match dt {
        Int8 => (i8::MIN.into(), i8::MAX.into()),
        Int16 => (i16::MIN.into(), i16::MAX.into()),
        Int32 => (i32::MIN.into(), i32::MAX.into()),
        Int64 => (i64::MIN.into(), i64::MAX.into()),
        UInt8 => (0, u8::MAX.into()),
        UInt16 => (0, u16::MAX.into()),
        UInt32 => (0, u32::MAX.into()),
        UInt64 => (0, u64::MAX.into()),
        _ => return None,
    })
}

/// Whether casting `from` to `to` keeps every value (so comparing the cast
/// value is comparing the stored value).
fn lossless(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    match (from, to) {
        (Dictionary(_, v), t) => lossless(v, t),
        (f, Dictionary(_, v)) => lossless(f, v),
        (Utf8, LargeUtf8 | Utf8View) => true,
        (Float16, Float32 | Float64) | (Float32, Float64) => true,
        (f, Float64) => int_range(f).is_some_and(|(lo, hi)| lo >= -(1 << 53) && hi <= 1 << 53),
        (f, Float32) => int_range(f).is_some_and(|(lo, hi)| lo >= -(1 << 24) && hi <= 1 << 24),
        (f, t) => match (int_range(f), int_range(t)) {
            (Some((a, b)), Some((c, d))) => a >= c && b <= d,
            _ => false,
        },
    }
}

/// Translates filters against one table schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Translator<'a> {
    /// The provider's schema (HEP001 columns, maybe the row-number column).
    pub schema: &'a Schema,
    /// The virtual row-number column, never translated.
    pub row_column: Option<&'a str>,
}

impl Translator<'_> {
    /// The whole filter as a query, or `None` when any part is not exact.
    pub fn query(&self, e: &Expr) -> Option<Query> {
        Some(Query {
            expr: self.expr(e)?,
        })
    }

    /// A conjunction of filters as one query (`None` for no filter).
    pub fn conjunction(&self, filters: &[Expr]) -> Option<Option<Query>> {
        let mut parts = Vec::with_capacity(filters.len());
        for f in filters {
            parts.push(self.expr(f)?);
        }
        Some(match parts.len() {
            0 => None,
            1 => parts.pop().map(|expr| Query { expr }),
            _ => Some(Query {
                expr: QExpr::And(parts),
            }),
        })
    }

    /// A column reference (through lossless casts): name and stored type.
    fn column(&self, e: &Expr) -> Option<(String, DataType)> {
        match e {
            Expr::Column(c) => {
                if self.row_column == Some(c.name.as_str()) {
                    return None;
                }
                let f = self.schema.field_with_name(&c.name).ok()?;
                Some((c.name.clone(), f.data_type().clone()))
            }
            Expr::Cast(c) => {
                let (n, dt) = self.column(&c.expr)?;
                lossless(&dt, c.field.data_type()).then_some((n, dt))
            }
            Expr::TryCast(c) => {
                let (n, dt) = self.column(&c.expr)?;
                lossless(&dt, c.field.data_type()).then_some((n, dt))
            }
            _ => None,
        }
    }

    fn pred(p: Predicate, negated: bool) -> QExpr {
        let e = QExpr::Pred(p);
        if negated {
            QExpr::Not(Box::new(e))
        } else {
            e
        }
    }

    fn expr(&self, e: &Expr) -> Option<QExpr> {
        match e {
            Expr::BinaryExpr(BinaryExpr { left, op, right }) => match op {
                Operator::And | Operator::Or => {
                    let mut parts = Vec::new();
                    for side in [left, right] {
                        match (self.expr(side)?, op) {
                            (QExpr::And(v), Operator::And) | (QExpr::Or(v), Operator::Or) => {
                                parts.extend(v)
                            }
                            (x, _) => parts.push(x),
                        }
                    }
                    Some(if *op == Operator::And {
                        QExpr::And(parts)
                    } else {
                        QExpr::Or(parts)
                    })
                }
                _ => {
                    let op = cmp_op(*op)?;
                    self.compare(left, op, right)
                        .or_else(|| self.compare(right, flip(op), left))
                }
            },
            Expr::Not(inner) => Some(QExpr::Not(Box::new(self.expr(inner)?))),
            Expr::IsNull(inner) | Expr::IsNotNull(inner) => {
                let (column, _) = self.column(inner)?;
                Some(QExpr::Pred(Predicate::IsNull {
                    column,
                    negated: matches!(e, Expr::IsNotNull(_)),
                }))
            }
            Expr::Between(Between {
                expr,
                negated,
                low,
                high,
            }) => {
                let (column, dt) = self.column(expr)?;
                let lo = literal(class_of(&dt), low)?;
                let hi = literal(class_of(&dt), high)?;
                Some(Self::pred(Predicate::Between { column, lo, hi }, *negated))
            }
            Expr::InList(InList {
                expr,
                list,
                negated,
            }) => {
                let (column, dt) = self.column(expr)?;
                if list.is_empty() {
                    return None;
                }
                let values = list
                    .iter()
                    .map(|l| literal(class_of(&dt), l))
                    .collect::<Option<Vec<_>>>()?;
                Some(Self::pred(Predicate::In { column, values }, *negated))
            }
            Expr::Like(Like {
                negated,
                expr,
                pattern,
                escape_char,
                case_insensitive,
            }) => {
                if *case_insensitive || escape_char.is_some() {
                    return None;
                }
                let (column, dt) = self.column(expr)?;
                if class_of(&dt) != Class::Utf8 {
                    return None;
                }
                let Literal::Str(p) = literal(Class::Utf8, pattern)? else {
                    return None;
                };
                let prefix = p.strip_suffix('%')?;
                if prefix.contains(['%', '_', '\\']) {
                    return None;
                }
                Some(Self::pred(
                    Predicate::Prefix {
                        column,
                        prefix: prefix.to_string(),
                    },
                    *negated,
                ))
            }
            Expr::Column(_) => {
                let (column, dt) = self.column(e)?;
                (class_of(&dt) == Class::Bool).then_some(QExpr::Pred(Predicate::Compare {
                    column,
                    op: Op::Eq,
                    value: Literal::Int(1),
                }))
            }
            _ => None,
        }
    }

    fn compare(&self, col: &Expr, op: Op, lit: &Expr) -> Option<QExpr> {
        let (column, dt) = self.column(col)?;
        let value = literal(class_of(&dt), lit)?;
        Some(QExpr::Pred(Predicate::Compare { column, op, value }))
    }
}

fn cmp_op(op: Operator) -> Option<Op> {
    Some(match op {
        Operator::Eq => Op::Eq,
        Operator::NotEq => Op::Ne,
        Operator::Lt => Op::Lt,
        Operator::LtEq => Op::Le,
        Operator::Gt => Op::Gt,
        Operator::GtEq => Op::Ge,
        _ => return None,
    })
}

/// `a OP b` ⇔ `b flip(OP) a`.
fn flip(op: Op) -> Op {
    match op {
        Op::Lt => Op::Gt,
        Op::Le => Op::Ge,
        Op::Gt => Op::Lt,
        Op::Ge => Op::Le,
        o => o,
    }
}

/// A non-null literal a column of `class` is compared with exactly.
fn literal(class: Class, e: &Expr) -> Option<Literal> {
    let Expr::Literal(v, _) = e else {
        return None;
    };
    scalar(class, v)
}

fn scalar(class: Class, v: &ScalarValue) -> Option<Literal> {
    use ScalarValue as S;
    if let S::Dictionary(_, inner) = v {
        return scalar(class, inner);
    }
    match class {
        Class::Int | Class::Float => Some(match v {
            S::Int8(Some(x)) => Literal::Int((*x).into()),
            S::Int16(Some(x)) => Literal::Int((*x).into()),
            S::Int32(Some(x)) => Literal::Int((*x).into()),
            S::Int64(Some(x)) => Literal::Int((*x).into()),
            S::UInt8(Some(x)) => Literal::Int((*x).into()),
            S::UInt16(Some(x)) => Literal::Int((*x).into()),
            S::UInt32(Some(x)) => Literal::Int((*x).into()),
            S::UInt64(Some(x)) => Literal::Int((*x).into()),
            S::Float16(Some(x)) if !x.is_nan() => Literal::Float(x.to_f64()),
            S::Float32(Some(x)) if !x.is_nan() => Literal::Float((*x).into()),
            S::Float64(Some(x)) if !x.is_nan() => Literal::Float(*x),
            _ => return None,
        }),
        Class::Utf8 => match v {
            S::Utf8(Some(s)) | S::LargeUtf8(Some(s)) | S::Utf8View(Some(s)) => {
                Some(Literal::Str(s.clone()))
            }
            _ => None,
        },
        Class::Bool => match v {
            S::Boolean(Some(b)) => Some(Literal::Int(i128::from(*b))),
            _ => None,
        },
        Class::Other => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::datatypes::Field;
    use datafusion::logical_expr::{cast, col, lit};

    fn schema() -> Schema {
        Schema::new(vec![
            Field::new("i64", DataType::Int64, true),
            Field::new("f32", DataType::Float32, true),
            Field::new(
                "label",
                DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
                true,
            ),
            Field::new("_row", DataType::UInt64, false),
        ])
    }

    #[test]
    fn translates_and_refuses() {
        let s = schema();
        let t = Translator {
            schema: &s,
            row_column: Some("_row"),
        };
        assert!(t.query(&col("i64").gt(lit(5i64))).is_some());
        assert!(t.query(&lit(5i64).lt(col("i64"))).is_some());
        assert!(t
            .query(&col("label").eq(lit("muon")).and(col("f32").is_null()))
            .is_some());
        assert!(t.query(&col("label").like(lit("mu%"))).is_some());
        assert!(t.query(&col("label").like(lit("m_u%"))).is_none());
        assert!(t.query(&col("_row").gt(lit(5u64))).is_none());
        // Int64 -> Float64 loses precision: not exact.
        assert!(t
            .query(&cast(col("i64"), DataType::Float64).gt(lit(1.5)))
            .is_none());
        assert!(t
            .query(&cast(col("f32"), DataType::Float64).gt(lit(1.5)))
            .is_some());
        assert!(t
            .query(&col("i64").eq(lit(ScalarValue::Int64(None))))
            .is_none());
    }

    #[test]
    fn lossless_casts() {
        assert!(lossless(&DataType::Int32, &DataType::Float64));
        assert!(!lossless(&DataType::Int64, &DataType::Float64));
        assert!(lossless(&DataType::UInt32, &DataType::Int64));
        assert!(!lossless(&DataType::Int8, &DataType::UInt64));
        assert!(lossless(&DataType::Float32, &DataType::Float64));
    }
}
