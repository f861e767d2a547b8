//! Properties of the index computations and pruning on synthetic columns
//! (random values with NaN, ±0, fills; random chunking and Bloom
//! parameters): SORTED_ROWS is the stable §10.5 permutation, and every
//! family's candidates contain every row that matches.

use h5fmt::format::datatype::{CharSet, Datatype, StringPad};
use h5fmt::Value;
use h5table::index::bloom::{self, BloomParams};
use h5table::index::order::{cmp_values, is_nan, row_class, RowClass};
use h5table::index::{bitmap, chunk_count, chunk_range, minmax, sorted, Predicate};
use h5table::ColumnSlice;
use std::cmp::Ordering;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const FILL_F: f64 = 9.969_209_968_386_869e36;

/// A random column: (dtype, slice, fill, fill_is_nan).
fn column(rng: &mut Rng, family: u64, n: usize) -> (Datatype, ColumnSlice, Option<Value>, bool) {
    let mut values = Vec::with_capacity(n);
    let mut missing = Vec::with_capacity(n);
    match family {
        // float64, non-NaN fill
        0 | 1 => {
            let nan_fill = family == 1;
            for _ in 0..n {
                let v = match rng.below(10) {
                    0 => f64::NAN,
                    1 => -0.0,
                    2 => 0.0,
                    3 if !nan_fill => FILL_F,
                    4 => f64::INFINITY,
                    _ => (rng.below(21) as f64 - 10.0) / 2.0,
                };
                missing.push(if nan_fill {
                    v.is_nan()
                } else {
                    v.to_bits() == FILL_F.to_bits()
                });
                values.push(Value::F64(v));
            }
            let fill = if nan_fill { f64::NAN } else { FILL_F };
            (
                Datatype::float_le(8),
                ColumnSlice { values, missing },
                Some(Value::F64(fill)),
                nan_fill,
            )
        }
        // int16 with fill -32767
        2 => {
            for _ in 0..n {
                let v = if rng.below(8) == 0 {
                    -32767
                } else {
                    rng.below(15) as i64 - 7
                };
                missing.push(v == -32767);
                values.push(Value::Int(v));
            }
            (
                Datatype::int_le(2, true),
                ColumnSlice { values, missing },
                Some(Value::Int(-32767)),
                false,
            )
        }
        // fixed strings, fill ""
        _ => {
            let words = ["", "a", "ab", "abc", "b", "ba", "z", "\u{e9}", "e\u{301}"];
            for _ in 0..n {
                let w = words[rng.below(words.len() as u64) as usize];
                missing.push(w.is_empty());
                values.push(Value::Str(w.into()));
            }
            let dt = Datatype::String {
                size: 8,
                pad: StringPad::NullPad,
                cset: CharSet::Utf8,
            };
            (
                dt,
                ColumnSlice { values, missing },
                Some(Value::Str(String::new())),
                false,
            )
        }
    }
}

fn matches(v: &Value, missing: bool, p: &Predicate) -> bool {
    if missing || is_nan(v) {
        return false;
    }
    let c = |l: &Value| cmp_values(v, l);
    match p {
        Predicate::Eq(l) => c(l) == Some(Ordering::Equal),
        Predicate::Lt(l) => c(l) == Some(Ordering::Less),
        Predicate::Le(l) => matches!(c(l), Some(Ordering::Less | Ordering::Equal)),
        Predicate::Gt(l) => c(l) == Some(Ordering::Greater),
        Predicate::Ge(l) => matches!(c(l), Some(Ordering::Greater | Ordering::Equal)),
        Predicate::In(ls) => ls.iter().any(|l| c(l) == Some(Ordering::Equal)),
    }
}

#[test]
fn sorted_rows_is_the_stable_hep001_permutation() {
    let mut rng = Rng(0xdead_beef_1234_5678);
    for round in 0..200 {
        let n = rng.below(120) as usize;
        let (_, s, _, _) = column(&mut rng, round % 4, n);
        let got = sorted::compute(&s, n as u64);
        let mut seen = vec![false; n];
        for &r in &got.perm {
            assert!(!seen[r as usize]);
            seen[r as usize] = true;
        }
        assert_eq!(got.perm.len(), n);
        let cls = |r: u64| row_class(&s.values[r as usize], s.missing[r as usize]);
        let nan = got
            .perm
            .iter()
            .filter(|&&r| cls(r) == RowClass::Nan)
            .count() as u64;
        let fill = got
            .perm
            .iter()
            .filter(|&&r| cls(r) == RowClass::Fill)
            .count() as u64;
        assert_eq!((got.nan_tail_length, got.fill_tail_length), (nan, fill));
        for w in got.perm.windows(2) {
            let (a, b) = (w[0], w[1]);
            let (ca, cb) = (cls(a), cls(b));
            assert!(ca <= cb);
            if ca == cb {
                let o = if ca == RowClass::Value {
                    cmp_values(&s.values[a as usize], &s.values[b as usize]).unwrap()
                } else {
                    Ordering::Equal
                };
                assert!(
                    o == Ordering::Less || (o == Ordering::Equal && a < b),
                    "{a} {b}"
                );
            }
        }
    }
}

#[test]
fn every_family_keeps_every_matching_row() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut narrowed = 0;
    let mut total = 0;
    for round in 0..300 {
        let n = rng.below(200) as usize;
        let family = round % 4;
        let (dt, s, fill, fill_is_nan) = column(&mut rng, family, n);
        let nrows = n as u64;
        let chunk_len = if rng.below(4) == 0 {
            None
        } else {
            Some(1 + rng.below(40))
        };
        let nchunks = chunk_count(nrows, chunk_len);
        let mm = minmax::compute(&s, nrows, chunk_len, fill.as_ref());
        assert_eq!(mm.len() as u64, nchunks);
        let srt = sorted::compute(&s, nrows);
        let params = BloomParams {
            k: 1 + rng.below(6) as u16,
            m_bits: 8 * (1 + rng.below(64)),
            seed: rng.next() as u32,
        };
        let bl = bloom::compute(&dt, &s, nrows, chunk_len, params);
        // Bitmap over the distinct non-missing, non-NaN values: exhaustive.
        let mut distinct: Vec<Value> = Vec::new();
        for (v, m) in s.values.iter().zip(&s.missing) {
            if !*m
                && !is_nan(v)
                && !distinct
                    .iter()
                    .any(|d| cmp_values(d, v) == Some(Ordering::Equal))
            {
                distinct.push(v.clone());
            }
        }
        let bm = bitmap::compute(&s, nrows, &distinct);
        // Literals: values of the column (their -0/+0 twins included), the
        // fill, NaN, and values outside the data.
        let mut lits: Vec<Value> = (0..4)
            .filter_map(|_| s.values.get(rng.below(n as u64) as usize).cloned())
            .collect();
        if let Some(f) = &fill {
            lits.push(f.clone());
        }
        match family {
            0 | 1 => lits.extend([
                Value::F64(-0.0),
                Value::F64(f64::NAN),
                Value::F64(100.0),
                Value::Int(2),
            ]),
            2 => lits.extend([Value::Int(0), Value::Int(99), Value::Int(-100)]),
            _ => lits.extend([Value::Str("aa".into()), Value::Str("e".into())]),
        }
        let mut preds: Vec<Predicate> = Vec::new();
        for l in &lits {
            preds.extend([
                Predicate::Eq(l.clone()),
                Predicate::Lt(l.clone()),
                Predicate::Le(l.clone()),
                Predicate::Gt(l.clone()),
                Predicate::Ge(l.clone()),
            ]);
        }
        preds.push(Predicate::In(lits.iter().take(3).cloned().collect()));
        preds.push(Predicate::In(Vec::new()));
        for p in &preds {
            let want: Vec<u64> = (0..nrows)
                .filter(|&r| matches(&s.values[r as usize], s.missing[r as usize], p))
                .collect();
            let in_chunks = |cs: &[u64], r: u64| {
                cs.iter()
                    .any(|&c| chunk_range(c, nrows, chunk_len).contains(&r))
            };
            let mmc = minmax::candidate_chunks(&mm, nchunks, fill_is_nan, p);
            let blc = bloom::candidate_chunks(&bl, &dt, nchunks, p);
            let mut value_at = |r: u64| -> Result<Value, ()> { Ok(s.values[r as usize].clone()) };
            let src = sorted::candidate_rows(&srt, nrows, p, &mut value_at).unwrap();
            let bmc = bitmap::candidate_rows(&bm, true, nrows, p);
            for &r in &want {
                assert!(in_chunks(&mmc, r), "minmax dropped row {r} for {p:?}");
                assert!(in_chunks(&blc, r), "bloom dropped row {r} for {p:?}");
                if let Some(rows) = &src {
                    assert!(
                        rows.binary_search(&r).is_ok(),
                        "sorted dropped row {r} for {p:?}"
                    );
                }
                if let Some(rows) = &bmc {
                    assert!(
                        rows.binary_search(&r).is_ok(),
                        "bitmap dropped row {r} for {p:?}"
                    );
                }
            }
            // SORTED_ROWS and an exhaustive BITMAP answer exactly when they answer.
            if let Some(rows) = &src {
                assert_eq!(rows, &want, "sorted exact for {p:?}");
            }
            if let Some(rows) = &bmc {
                assert_eq!(rows, &want, "bitmap exact for {p:?}");
            }
            total += 1;
            if (mmc.len() as u64) < nchunks {
                narrowed += 1;
            }
        }
    }
    assert!(
        narrowed * 10 > total,
        "minmax narrowed {narrowed} of {total}"
    );
}
