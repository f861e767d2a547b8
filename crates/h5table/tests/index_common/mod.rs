//! Shared helpers of the index tests: the HEP001 corpus and the Python oracle.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The repository root.
pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// `../shared/hep001` beside the repository. Panics when it is missing: the
/// index tests are meaningless without the corpus.
pub fn hep001() -> PathBuf {
    let d = repo_root().join("../shared/hep001");
    assert!(
        d.join("files").is_dir(),
        "the HEP001 corpus is missing: expected {}",
        d.display()
    );
    d
}

/// The corpus files whose name starts with `prefix`, sorted.
pub fn corpus_files(prefix: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(hep001().join("files"))
        .expect("read corpus dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|x| x == "h5")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with(prefix))
        })
        .collect();
    v.sort();
    assert!(!v.is_empty(), "no corpus file starts with {prefix:?}");
    v
}

/// The expected answers of a corpus file.
pub fn expected(h5: &std::path::Path) -> serde_json::Value {
    let p = h5.with_extension("expected.json");
    let t = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    serde_json::from_str(&t).expect("expected.json parses")
}

/// The Python of the project venv with h5py, numpy and mmh3:
/// `$H5FMT_VENV/bin/python`, else `<repo>/.venv/bin/python`, else
/// `/work/main/.venv/bin/python`. Panics when none has the modules: an
/// oracle test must not pass without its oracle.
pub fn python() -> PathBuf {
    let mut cands = Vec::new();
    if let Some(v) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(v).join("bin/python"));
    }
    cands.push(repo_root().join(".venv/bin/python"));
    cands.push(PathBuf::from("/work/main/.venv/bin/python"));
    for c in &cands {
        let ok = Command::new(c)
            .args(["-c", "import h5py, numpy, mmh3"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if ok {
            return c.clone();
        }
    }
    panic!(
        "no Python with h5py, numpy and mmh3 among {cands:?}: run `cargo xtask venv` \
         (or set H5FMT_VENV)"
    );
}

/// Run a Python script with `stdin`, returning its stdout (panics on failure).
pub fn run_python(script: &str, stdin: &str) -> String {
    use std::io::Write;
    let mut child = Command::new(python())
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn python");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let out = child.wait_with_output().expect("python runs");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Lower-case hex.
pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Bytes of a hex string.
pub fn unhex(s: &str) -> Vec<u8> {
    (0..s.len() / 2)
        .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Every table of a corpus file, opened.
pub fn tables(path: &std::path::Path) -> Vec<h5table::Table> {
    let f = h5fmt::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    h5table::find_tables(&f)
        .unwrap()
        .into_iter()
        .map(|p| h5table::Table::open(&f.group(&p).unwrap()).unwrap())
        .collect()
}
