//! The `h5 table` commands scored by `../shared/hep001/check.py` on the shared
//! HEP001 corpus (tables written by h5col and libhdf5, expected answers computed
//! with numpy from the generators' arrays), plus the CLI's answers to bad input.

use std::path::PathBuf;
use std::process::Command;

fn hep001_dir() -> PathBuf {
    let d = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/hep001");
    assert!(
        d.join("check.py").exists(),
        "{} is missing: the HEP001 corpus must be beside the repository",
        d.display()
    );
    d
}

fn h5(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .output()
        .expect("run h5")
}

#[test]
fn check_py_scores_every_corpus_file() {
    let dir = hep001_dir();
    let out = Command::new("python3")
        .arg(dir.join("check.py"))
        .args(["--h5", env!("CARGO_BIN_EXE_h5"), "--verbose"])
        .output()
        .expect("run check.py");
    let text = String::from_utf8_lossy(&out.stdout);
    // Summary for `cargo xtask test` (libtest hides passing tests' output).
    let summary = text
        .lines()
        .filter(|l| !l.starts_with("PASS"))
        .collect::<Vec<_>>()
        .join("\n");
    let tmp = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target/tmp");
    let _ = std::fs::create_dir_all(&tmp);
    let _ = std::fs::write(
        tmp.join("hep001.summary"),
        format!("hep001 check.py:\n{summary}\n"),
    );
    assert!(
        out.status.success(),
        "check.py failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn file(name: &str) -> String {
    hep001_dir().join("files").join(name).display().to_string()
}

#[test]
fn bad_input_gives_one_clear_line_and_a_nonzero_exit() {
    // a group that is not a table
    let spec = format!("{}:/", file("n01_class_absent.h5"));
    let o = h5(&["table", "cat", &spec]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("not a HEP001 table") && err.contains("§7.1"),
        "{err}"
    );
    assert!(o.stdout.is_empty());
    // a MAJOR 2 table is refused
    let spec = format!("{}:/t", file("n04_version_2.h5"));
    let o = h5(&["table", "cat", &spec]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("§7.2"));
    // an unknown column
    let spec = format!("{}:/my_table", file("c01_minimal.h5"));
    let o = h5(&["table", "cat", &spec, "--columns", "ts,nope"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("\"nope\""));
    // a malformed query is a usage error
    let o = h5(&["table", "query", &spec, "--where", "ts >"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected a literal"));
    // an unknown flag is a usage error (exit 2)
    let o = h5(&["table", "cat", &spec, "--bogus"]);
    assert_eq!(o.status.code(), Some(2));
    // help is on stdout, exit 0
    let o = h5(&["table", "--help"]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("check"));
}

#[test]
fn cat_rows_and_columns_select_a_window() {
    let spec = format!("{}:/my_table", file("c01_minimal.h5"));
    let all = h5(&["table", "cat", &spec]);
    assert!(all.status.success());
    let all = String::from_utf8(all.stdout).unwrap();
    let lines: Vec<&str> = all.lines().collect();
    let o = h5(&[
        "table",
        "cat",
        &spec,
        "--rows",
        "10:13",
        "--columns",
        "energy,row_id",
    ]);
    let part = String::from_utf8(o.stdout).unwrap();
    let plines: Vec<&str> = part.lines().collect();
    assert_eq!(plines[0], "energy,row_id");
    assert_eq!(plines.len(), 4);
    let header: Vec<&str> = lines[0].split(',').collect();
    let (ie, ir) = (
        header.iter().position(|h| *h == "energy").unwrap(),
        header.iter().position(|h| *h == "row_id").unwrap(),
    );
    for k in 0..3 {
        let full: Vec<&str> = lines[11 + k].split(',').collect();
        assert_eq!(plines[1 + k], format!("{},{}", full[ie], full[ir]));
    }
}

/// Every query of the corpus under each index policy: `verify` and `trust` give the expected
/// rows on conformant files (their indexes are correct), `verify` also on tampered ones (the
/// tampered index is rejected), and the default ignores indexes.
#[test]
fn corpus_queries_under_every_index_policy() {
    use h5table::query::{IndexPolicy, Query, RunOptions};
    use sha2::{Digest, Sha256};
    let dir = hep001_dir().join("files");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".expected.json"))
        .collect();
    names.sort();
    let (mut runs, mut pruned) = (0, 0);
    for name in names {
        let exp: serde_json::Value =
            serde_json::from_slice(&std::fs::read(dir.join(&name)).unwrap()).unwrap();
        let tampered = exp["category"] == "tampered";
        let file = h5fmt::File::open(dir.join(exp["file"].as_str().unwrap())).unwrap();
        for (path, t) in exp["tables"].as_object().unwrap() {
            let Some(qs) = t["queries"].as_array() else {
                continue;
            };
            if qs.is_empty() {
                continue;
            }
            let table = h5table::Table::open(&file.group(path).unwrap()).unwrap();
            for q in qs {
                let w = q["where"].as_str().unwrap();
                let parsed = Query::parse(w).unwrap();
                let policies: &[IndexPolicy] = if tampered {
                    &[IndexPolicy::Ignore, IndexPolicy::Verify]
                } else {
                    &[IndexPolicy::Ignore, IndexPolicy::Verify, IndexPolicy::Trust]
                };
                for &p in policies {
                    let (rows, plan) = parsed.run_with(&table, &RunOptions { indexes: p }).unwrap();
                    let text = rows
                        .iter()
                        .map(u64::to_string)
                        .collect::<Vec<_>>()
                        .join("\n");
                    let digest = format!("{:x}", Sha256::digest(text.as_bytes()));
                    assert_eq!(
                        rows.len() as u64,
                        q["count"].as_u64().unwrap(),
                        "{name} {path} [{w}] {p:?}"
                    );
                    assert_eq!(
                        digest,
                        q["sha256"].as_str().unwrap(),
                        "{name} {path} [{w}] {p:?}"
                    );
                    runs += 1;
                    if plan.rows_scanned < table.nrows() {
                        pruned += 1;
                    }
                }
            }
        }
    }
    println!("{runs} query runs, {pruned} pruned by an index");
    assert!(runs >= 480 && pruned > 100, "{runs} runs, {pruned} pruned");
}
