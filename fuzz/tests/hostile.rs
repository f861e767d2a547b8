//! The hostile regression corpus: every file under `testdata/hostile/<class>/`
//! gives exactly the outcome listed in `testdata/hostile/EXPECTED.tsv` (the
//! error kind of the whole-file walk under `Limits::tight()`, or `ok`), and
//! the canonical dump of it never panics. The table is exhaustive both ways.
//! `H5_HOSTILE_PRINT=1` prints the actual outcomes in table form.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn hostile_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/hostile")
}

fn files() -> Vec<String> {
    let root = hostile_dir();
    let mut out = Vec::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d)
            .expect("read testdata/hostile")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.parent() != Some(root.as_path()) {
                let rel = p.strip_prefix(&root).expect("under root");
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

fn outcome(bytes: &[u8]) -> String {
    let r = h5fuzz::whole_file::open(bytes).and_then(|f| {
        // The canonical dump must not panic either (its result may differ in
        // wording, not in whether it fails).
        let dump = h5cli::canon::dump_file(&f);
        let walk = h5fuzz::whole_file::walk(&f);
        // They agree, except that the dump may refuse to build a JSON
        // document beyond the limits for data the walk never materializes
        // (e.g. 2^40 empty lists for a shape [2^40, 0]).
        let dump_limit = dump.as_ref().is_err_and(|e| e.contains("limit"));
        assert!(
            dump.is_ok() == walk.is_ok() || (walk.is_ok() && dump_limit),
            "dump {dump:?} and walk {walk:?} disagree"
        );
        walk
    });
    match r {
        Ok(()) => "ok".to_string(),
        Err(e) => format!("{:?}", e.kind()),
    }
}

#[test]
fn hostile_files_give_their_expected_outcome() {
    let table = std::fs::read_to_string(hostile_dir().join("EXPECTED.tsv")).unwrap_or_default();
    let expected: BTreeMap<String, String> = table
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| {
            let mut it = l.split('\t');
            Some((it.next()?.to_string(), it.next()?.trim().to_string()))
        })
        .collect();
    let print = std::env::var_os("H5_HOSTILE_PRINT").is_some();
    let mut failures = Vec::new();
    let listed: Vec<String> = files();
    for f in &listed {
        let bytes = std::fs::read(hostile_dir().join(f)).expect("read hostile file");
        let got =
            std::panic::catch_unwind(|| outcome(&bytes)).unwrap_or_else(|_| "PANIC".to_string());
        if print {
            println!("{f}\t{got}");
        }
        match expected.get(f) {
            None => failures.push(format!("{f}: not in EXPECTED.tsv (got {got})")),
            Some(want) if *want != got => failures.push(format!("{f}: expected {want}, got {got}")),
            _ => {}
        }
    }
    for f in expected.keys() {
        if !listed.contains(f) {
            failures.push(format!("{f}: listed in EXPECTED.tsv but missing"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(listed.len() >= 5, "hostile corpus is missing");
}
