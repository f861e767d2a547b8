//! Search indexes of the HEP001 corpus: discovery matches the expected
//! answers, every index of the conformant files recomputes equal to what is
//! stored, the tampered files are caught, and pruning never drops a row.

mod index_common;

use h5table::check::Severity;
use h5table::index::order::{cmp_values, is_nan};
use h5table::index::{
    self, discover, verify_table, Candidates, ColumnIndexes, IndexKind, IndexPolicy, Predicate,
    Validity,
};
use h5table::Table;
use index_common::{corpus_files, expected, tables};
use std::cmp::Ordering;

/// Discovery lists exactly the expected indexes, with their parameters.
#[test]
fn discovery_matches_expected() {
    let mut n = 0;
    for f in corpus_files("c").into_iter().chain(corpus_files("t")) {
        let exp = expected(&f);
        for t in tables(&f) {
            let d = discover(&t).unwrap();
            let want = exp["tables"][t.path()]["search_indexes"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            assert_eq!(
                d.indexes.len(),
                want.len(),
                "{}:{} index count",
                f.display(),
                t.path()
            );
            for w in &want {
                let name = w["dataset"].as_str().unwrap();
                let i = d
                    .indexes
                    .iter()
                    .find(|i| i.name == name)
                    .unwrap_or_else(|| panic!("{}: no index {name}", f.display()));
                assert_eq!(i.column.as_deref(), w["column"].as_str(), "{name}");
                assert_eq!(i.kind.as_str(), w["kind"].as_str().unwrap(), "{name}");
                assert_eq!(i.validity, Validity::Current, "{name}");
                if i.kind == IndexKind::ChunkBloom {
                    assert_eq!(i.params.k.map(u64::from), w["k"].as_u64(), "{name} k");
                    assert_eq!(i.params.m_bits, w["m_bits"].as_u64(), "{name} m_bits");
                    assert_eq!(i.params.seed.map(u64::from), w["seed"].as_u64(), "{name}");
                    assert_eq!(i.params.hash_family.as_deref(), Some(index::HASH_FAMILY));
                }
                if i.kind == IndexKind::Bitmap {
                    assert!(i.params.values.is_some(), "{name} VALUES resolves");
                }
                n += 1;
            }
            let errors: Vec<_> = d
                .findings
                .iter()
                .filter(|f| f.severity == Severity::Error)
                .collect();
            assert!(errors.is_empty(), "{}: {errors:?}", f.display());
        }
    }
    assert!(n > 70, "only {n} indexes checked");
}

/// Every index of every conformant file recomputes equal to what is stored.
#[test]
fn conformant_indexes_verify_clean() {
    let mut n = 0;
    for f in corpus_files("c") {
        for t in tables(&f) {
            let findings = verify_table(&t).unwrap();
            assert!(
                findings.is_empty(),
                "{}:{}: {:#?}",
                f.display(),
                t.path(),
                findings
            );
            n += discover(&t).unwrap().indexes.len();
        }
    }
    assert!(n > 70);
}

fn tamper_case(file: &str, dataset: &str, family: &str, needle: &str) {
    let f = index_common::hep001().join("files").join(file);
    let t = &tables(&f)[0];
    let findings = verify_table(t).unwrap();
    let errors: Vec<_> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    assert_eq!(errors.len(), 1, "{findings:#?}");
    let e = errors[0];
    assert_eq!(e.path, format!("{}/SEARCH_INDEXES/{dataset}", t.path()));
    for s in ["§12", family, "§16"] {
        assert!(e.section.contains(s), "{e:?} cites {s}");
    }
    assert!(e.message.contains(needle), "{}", e);
    // The other (untampered) indexes of the corpus file: none.
}

#[test]
fn tampered_minmax_detected() {
    // Chunk 6's max lowered from 150 to 99.
    tamper_case(
        "t01_tampered_minmax.h5",
        "x__chunk_minmax",
        "§10.4",
        "chunk 6 (rows 600..700): max is 99",
    );
}

#[test]
fn tampered_sorted_detected() {
    // Entries 10 and 900 swapped.
    tamper_case(
        "t02_tampered_sorted.h5",
        "id__sorted_rows",
        "§10.5",
        "rank 10",
    );
}

#[test]
fn values_dataset_with_kind_is_structural_finding() {
    let f = index_common::hep001()
        .join("files")
        .join("n19_values_has_kind.h5");
    let t = &tables(&f)[0];
    let d = discover(t).unwrap();
    assert!(
        d.findings.iter().any(|f| f.severity == Severity::Error
            && f.section.contains("§10.6")
            && f.section.contains("§12")
            && f.message.contains("KIND")),
        "{:#?}",
        d.findings
    );
}

/// SQL semantics of a row: not missing, not NaN, and the comparison holds.
fn matches(v: &h5fmt::Value, missing: bool, p: &Predicate) -> bool {
    if missing || is_nan(v) {
        return false;
    }
    let c = |lit: &h5fmt::Value| cmp_values(v, lit);
    match p {
        Predicate::Eq(l) => c(l) == Some(Ordering::Equal),
        Predicate::Lt(l) => c(l) == Some(Ordering::Less),
        Predicate::Le(l) => matches!(c(l), Some(Ordering::Less | Ordering::Equal)),
        Predicate::Gt(l) => c(l) == Some(Ordering::Greater),
        Predicate::Ge(l) => matches!(c(l), Some(Ordering::Greater | Ordering::Equal)),
        Predicate::In(ls) => ls.iter().any(|l| c(l) == Some(Ordering::Equal)),
    }
}

fn predicates_for(t: &Table, col: &str) -> Vec<Predicate> {
    let c = t.column(col).unwrap();
    let s = c.read(0..t.nrows()).unwrap();
    let mut lits: Vec<h5fmt::Value> = Vec::new();
    let n = s.values.len();
    for i in [0, 1, 7, n / 3, n / 2, n.saturating_sub(1)] {
        if let Some(v) = s.values.get(i) {
            lits.push(v.clone());
        }
    }
    if let Some(f) = &c.fill().value {
        lits.push(f.clone());
    }
    lits.push(h5fmt::Value::Int(0));
    lits.push(h5fmt::Value::F64(-0.0));
    lits.push(h5fmt::Value::Str("zzz".into()));
    let mut preds = Vec::new();
    for l in &lits {
        preds.push(Predicate::Eq(l.clone()));
        preds.push(Predicate::Lt(l.clone()));
        preds.push(Predicate::Le(l.clone()));
        preds.push(Predicate::Gt(l.clone()));
        preds.push(Predicate::Ge(l.clone()));
    }
    preds.push(Predicate::In(lits.iter().take(3).cloned().collect()));
    preds
}

/// Under Trust and Verify, candidates keep every matching row, stay within
/// [0, NROWS), and do narrow something somewhere.
#[test]
fn pruning_is_conservative_on_the_corpus() {
    let mut narrowed = 0;
    let mut checked = 0;
    for f in corpus_files("c") {
        for t in tables(&f) {
            let d = discover(&t).unwrap();
            let mut cols: Vec<String> = d.indexes.iter().filter_map(|i| i.column.clone()).collect();
            cols.sort();
            cols.dedup();
            for col in cols {
                let s = t.column(&col).unwrap().read(0..t.nrows()).unwrap();
                for policy in [IndexPolicy::Trust, IndexPolicy::Verify] {
                    let ci = ColumnIndexes::open(&t, &col, policy).unwrap();
                    assert!(ci.rejected().is_empty(), "{:?}", ci.rejected());
                    assert!(!ci.is_empty());
                    for p in predicates_for(&t, &col) {
                        let cand = ci.candidates(&p).unwrap();
                        if let Candidates::Rows(rs) = &cand {
                            assert!(rs.iter().all(|r| r.start < r.end && r.end <= t.nrows()));
                        }
                        for (r, (v, m)) in s.values.iter().zip(&s.missing).enumerate() {
                            if matches(v, *m, &p) {
                                assert!(
                                    cand.contains(r as u64),
                                    "{}:{} {col} {policy:?} {p:?} dropped row {r}",
                                    f.display(),
                                    t.path()
                                );
                            }
                        }
                        if cand.count(t.nrows()) < t.nrows() {
                            narrowed += 1;
                        }
                        checked += 1;
                    }
                }
                let ignore = ColumnIndexes::open(&t, &col, IndexPolicy::Ignore).unwrap();
                assert!(ignore.is_empty());
            }
        }
    }
    assert!(checked > 1000, "{checked}");
    assert!(narrowed > checked / 4, "{narrowed} of {checked}");
}

/// t01 under Trust would skip row 650 for `x >= 120`; Verify refuses the
/// tampered index and keeps it; Ignore keeps everything.
#[test]
fn tampered_index_is_not_trusted_under_verify() {
    let f = index_common::hep001()
        .join("files")
        .join("t01_tampered_minmax.h5");
    let t = &tables(&f)[0];
    let s = t.column("x").unwrap().read(650..651).unwrap();
    let v = s.values[0].clone();
    assert!(!s.missing[0]);
    let p = Predicate::Eq(v);
    let trust = ColumnIndexes::open(t, "x", IndexPolicy::Trust).unwrap();
    assert!(
        !trust.candidates(&p).unwrap().contains(650),
        "the tamper bites under Trust"
    );
    let verify = ColumnIndexes::open(t, "x", IndexPolicy::Verify).unwrap();
    assert!(verify.is_empty());
    assert_eq!(verify.rejected().len(), 1);
    assert_eq!(verify.candidates(&p).unwrap(), Candidates::All);
    let ignore = ColumnIndexes::open(t, "x", IndexPolicy::Ignore).unwrap();
    assert_eq!(ignore.candidates(&p).unwrap(), Candidates::All);
}

#[test]
fn inexact_literals_are_not_pruned() {
    let f = index_common::hep001().join("files").join("c03_floats.h5");
    let t = &tables(&f)[0];
    let ci = ColumnIndexes::open(t, "f32", IndexPolicy::Trust).unwrap();
    assert!(!ci.is_empty());
    // 0.1 is not a float32: an engine casting it (numpy) and one comparing
    // in f64 disagree, so no pruning.
    assert_eq!(
        ci.candidates(&Predicate::Eq(h5fmt::Value::F64(0.1)))
            .unwrap(),
        Candidates::All
    );
    assert_eq!(
        ci.candidates(&Predicate::Lt(h5fmt::Value::F64(0.1)))
            .unwrap(),
        Candidates::All
    );
    // Nothing is below -inf: every chunk is pruned.
    assert_eq!(
        ci.candidates(&Predicate::Lt(h5fmt::Value::F32(f32::NEG_INFINITY)))
            .unwrap(),
        Candidates::Rows(vec![])
    );
    let f = index_common::hep001()
        .join("files")
        .join("c06_fixed_strings.h5");
    let t = &tables(&f)[0];
    let ci = ColumnIndexes::open(t, "a_sp", IndexPolicy::Trust).unwrap();
    assert_eq!(
        ci.candidates(&Predicate::Lt(h5fmt::Value::Str("gamma ".into())))
            .unwrap(),
        Candidates::All
    );
}
