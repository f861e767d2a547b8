//! Conformance: our `h5canon/1` dump equals the reference's (libhdf5 via h5canon.py) on every
//! file of `testdata/` and of the shared corpus, except those listed in
//! `tests/expected_failures.txt` (a list that can only shrink); and on files the reference
//! itself cannot read (`.error`), our dump returns — Ok or Err — without panicking or hanging.
//!
//! `H5_UPDATE_XFAIL=1 cargo test -p h5cli --test conformance` rewrites the list with the
//! current failures (keeping the reasons of entries that still fail).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;

use common::{bounded_dump, cases, first_diff, Expect, Outcome};
use serde_json::json;

fn xfail_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/expected_failures.txt")
}

const XFAIL_HEADER: &str = "\
# Files whose canonical dump does not (yet) equal the reference's. Checked both ways by
# tests/conformance.rs: a listed file that passes fails the test (remove it: the list only
# shrinks); an unlisted file that fails fails the test. Format: key<TAB>reason.
# Keys: testdata/<file> or corpus/<owner__repo>/<file> (under ../shared/corpus/files).
# Regenerate: H5_UPDATE_XFAIL=1 cargo xtask test   (or: cargo test -p h5cli --test conformance)
";

fn load_xfail() -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(xfail_path()).unwrap_or_default();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((k, r)) => (k.trim().to_string(), r.trim().to_string()),
            None => (l.trim().to_string(), String::new()),
        })
        .collect()
}

enum Verdict {
    Pass,
    /// Wrong or failed dump: may be an expected failure.
    Fail(String),
    /// Panic or hang: never acceptable.
    Hard(String),
}

fn check(path: &std::path::Path, expected: &std::path::Path) -> Verdict {
    let want: serde_json::Value = match std::fs::read_to_string(expected)
        .map_err(|e| e.to_string())
        .and_then(|t| serde_json::from_str(&t).map_err(|e| e.to_string()))
    {
        Ok(v) => v,
        Err(e) => return Verdict::Hard(format!("cannot read {}: {e}", expected.display())),
    };
    match bounded_dump(path, common::time_limit()) {
        Outcome::Done(Ok(got)) => match first_diff(&want, &got) {
            None => Verdict::Pass,
            Some(d) => Verdict::Fail(format!("differs at {d}")),
        },
        Outcome::Done(Err(e)) => Verdict::Fail(format!(
            "error: {}",
            e.lines().next().unwrap_or("(empty message)")
        )),
        Outcome::Panicked(m) => Verdict::Hard(format!("PANIC: {m}")),
        Outcome::TimedOut(d) => Verdict::Hard(format!("TIMEOUT after {}s", d.as_secs())),
    }
}

#[test]
fn conformance() {
    let all = cases();
    let canon: Vec<_> = all
        .iter()
        .filter_map(|c| match &c.expect {
            Expect::Canon(e) => Some((c, e)),
            Expect::Error(_) => None,
        })
        .collect();
    let corpus_present = common::corpus_dir().is_some();
    if !corpus_present {
        println!("warning: ../shared/corpus not found: only testdata/ is checked");
    }
    assert!(
        canon.iter().any(|(c, _)| c.key.starts_with("testdata/")),
        "no testdata/*.h5 with testdata/expected/*.canon.json found (run `cargo xtask bless`)"
    );

    let xfail = load_xfail();
    let update = std::env::var("H5_UPDATE_XFAIL").is_ok_and(|v| v == "1");
    let mut problems: Vec<String> = Vec::new(); // list mismatches
    let mut hard: Vec<String> = Vec::new(); // panics, hangs, unreadable expectations
    let mut new_list: BTreeMap<String, String> = BTreeMap::new();
    let (mut passed, mut xfailed) = (0usize, 0usize);
    for (case, expected) in &canon {
        let listed = xfail.get(&case.key);
        match check(&case.path, expected) {
            Verdict::Pass => {
                passed += 1;
                if listed.is_some() {
                    problems.push(format!(
                        "{}: passes but is listed in expected_failures.txt: remove it from the list",
                        case.key
                    ));
                }
            }
            Verdict::Fail(why) => {
                let reason = match listed {
                    Some(r) => r.clone(),
                    None => format!("not yet triaged: {why}"),
                };
                new_list.insert(case.key.clone(), reason);
                if listed.is_some() {
                    xfailed += 1;
                } else {
                    problems.push(format!("{}: {why}", case.key));
                }
            }
            Verdict::Hard(why) => hard.push(format!("{}: {why}", case.key)),
        }
    }
    // Entries naming files that are gone (or now have a `.error` expectation) are stale.
    for key in xfail.keys() {
        let known = canon.iter().any(|(c, _)| &c.key == key);
        if !known && (corpus_present || !key.starts_with("corpus/")) {
            problems.push(format!(
                "{key}: listed in expected_failures.txt but not a test file: remove it from the list"
            ));
        }
    }
    if update {
        if !corpus_present {
            // Keep the corpus entries we could not check.
            for (k, r) in &xfail {
                if k.starts_with("corpus/") {
                    new_list.insert(k.clone(), r.clone());
                }
            }
        }
        let mut text = String::from(XFAIL_HEADER);
        for (k, r) in &new_list {
            text.push_str(&format!("{k}\t{r}\n"));
        }
        std::fs::write(xfail_path(), text).expect("write expected_failures.txt");
        println!(
            "H5_UPDATE_XFAIL=1: wrote {} entries to {}",
            new_list.len(),
            xfail_path().display()
        );
        problems.clear();
    }
    problems.extend(hard);

    let testdata = canon
        .iter()
        .filter(|(c, _)| c.key.starts_with("testdata/"))
        .count();
    common::summary(
        "conformance",
        &format!(
            "conformance: {passed} passed, {xfailed} expected failures, {} unexpected, {} total \
             ({testdata} testdata, {} corpus)",
            problems.len(),
            canon.len(),
            canon.len() - testdata
        ),
    );
    for p in &problems {
        println!("  {p}");
    }
    assert!(
        problems.is_empty(),
        "{} conformance problem(s), first: {}",
        problems.len(),
        problems[0]
    );
}

#[test]
fn error_files_do_not_panic_or_hang() {
    let errs: Vec<_> = cases()
        .into_iter()
        .filter(|c| matches!(c.expect, Expect::Error(_)))
        .collect();
    let (mut ok, mut err) = (0usize, 0usize);
    let mut problems = Vec::new();
    for c in &errs {
        match bounded_dump(&c.path, common::time_limit()) {
            Outcome::Done(Ok(_)) => ok += 1,
            Outcome::Done(Err(_)) => err += 1,
            Outcome::Panicked(m) => problems.push(format!("{}: PANIC: {m}", c.key)),
            Outcome::TimedOut(d) => {
                problems.push(format!("{}: TIMEOUT after {}s", c.key, d.as_secs()))
            }
        }
    }
    common::summary(
        "conformance_errors",
        &format!(
            "reference-unreadable files: {} total, {ok} dumped, {err} refused cleanly, \
             {} panicked or hung",
            errs.len(),
            problems.len()
        ),
    );
    for p in &problems {
        println!("  {p}");
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn diff_reports_first_path() {
    let e = json!({"objects": {"/dset": {"data": [1, 2, 3, 4]}, "/": {"kind": "group"}}});
    let a = json!({"objects": {"/": {"kind": "group"}, "/dset": {"data": [1, 2, 3, 5]}}});
    assert_eq!(
        first_diff(&e, &a).as_deref(),
        Some("/objects//dset/data/3: expected 4, got 5")
    );
    assert_eq!(first_diff(&e, &e.clone()), None);
    let b = json!({"objects": {"/": {"kind": "group"}}});
    assert!(first_diff(&e, &b)
        .unwrap_or_default()
        .starts_with("/objects//dset: missing"));
    assert!(first_diff(&b, &e)
        .unwrap_or_default()
        .starts_with("/objects//dset: unexpected"));
    assert_eq!(
        first_diff(&json!([1, 2]), &json!([1, 2, 3])).as_deref(),
        Some("/: expected 2 elements, got 3")
    );
    assert_eq!(
        first_diff(&json!({"a": 1}), &json!({"a": 1.0})).as_deref(),
        Some("/a: expected 1, got 1.0")
    );
    // Key order does not matter.
    let x: serde_json::Value = serde_json::from_str(r#"{"a":1,"b":[2]}"#).unwrap_or_default();
    let y: serde_json::Value = serde_json::from_str(r#"{"b":[2],"a":1}"#).unwrap_or_default();
    assert_eq!(first_diff(&x, &y), None);
}
