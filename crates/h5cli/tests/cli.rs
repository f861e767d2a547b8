//! The `h5` command as a user meets it: help, version, completions, exit
//! statuses (0 fine, 1 the file has problems, 2 usage errors), one-line
//! errors naming the file and object, `ls` order and marks, `dump` rows,
//! `-H`/`-d`, streaming in bounded memory, a closed pipe, `check --json`,
//! `diff`.

mod common;

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn h5(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run h5")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn scratch(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&d).unwrap();
    d.join(format!("{}-{name}", std::process::id()))
}

fn testdata(name: &str) -> String {
    common::repo_root()
        .join("testdata")
        .join(name)
        .to_string_lossy()
        .into_owned()
}

#[test]
fn every_command_reads_the_test_files() {
    for name in [
        "groups_v110.h5",
        "datasets_v108.h5",
        "dtypes_v200.h5",
        "attrs_earliest.h5",
    ] {
        let f = testdata(name);
        for args in [
            vec!["ls", "-r", "-l", f.as_str()],
            vec!["ls", "--json", f.as_str()],
            vec!["dump", f.as_str()],
            vec!["dump", "-H", f.as_str()],
            vec!["dump", "--json", f.as_str()],
            vec!["check", f.as_str()],
            vec!["diff", f.as_str(), f.as_str()],
        ] {
            let o = h5(&args);
            assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        }
        let j = h5(&["dump", "--json", &f]);
        serde_json::from_slice::<serde_json::Value>(&j.stdout).expect(name);
    }
}

/// A small file: /a/x (1-D 1000 f64, chunked gzip), /a/b/y (2-D i32), /c (3 u8),
/// attributes on / and /a/x, a soft link.
fn small_file(name: &str) -> String {
    let p = scratch(name);
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        root.set_attr("title", "cli test").unwrap();
        let mut a = root.create_group("a").unwrap();
        let xs: Vec<f64> = (0..1000).map(|i| i as f64 * 0.5).collect();
        a.create_dataset("x")
            .shape(&[1000])
            .chunks(&[100])
            .deflate(4)
            .write(&xs)
            .unwrap();
        let mut b = a.create_group("b").unwrap();
        let ys: Vec<i32> = (0..60).collect();
        b.create_dataset("y").shape(&[3, 20]).write(&ys).unwrap();
    }
    {
        let mut root = w.root();
        root.create_dataset("c")
            .shape(&[3])
            .write(&[1u8, 2, 3])
            .unwrap();
        root.link_soft("s", "/a/x").unwrap();
    }
    w.close().unwrap();
    p.to_string_lossy().into_owned()
}

const SUBCOMMANDS: &[&str] = &[
    "ls",
    "dump",
    "cat",
    "check",
    "diff",
    "repack",
    "table",
    "completions",
];

#[test]
fn help_is_multi_line_on_stdout_with_exit_0() {
    let mut cases: Vec<Vec<&str>> = vec![vec!["--help"], vec!["-h"], vec!["help"]];
    for c in SUBCOMMANDS {
        cases.push(vec!["help", c]);
        cases.push(vec![c, "--help"]);
    }
    cases.push(vec!["table", "cat", "--help"]);
    cases.push(vec!["help", "table", "check"]);
    for args in cases {
        let o = h5(&args);
        let out = text(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        assert!(out.lines().count() >= 4, "{args:?}: {out}");
        assert!(out.contains("Usage:"), "{args:?}: {out}");
    }
    // The top-level help names every subcommand.
    let top = text(&h5(&["--help"]).stdout);
    for c in SUBCOMMANDS {
        assert!(top.contains(c), "{c} missing from\n{top}");
    }
}

#[test]
fn version_on_stdout() {
    for args in [vec!["--version"], vec!["-V"], vec!["dump", "--version"]] {
        let o = h5(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        let out = text(&o.stdout);
        assert!(
            out.starts_with("h5") && out.contains(env!("CARGO_PKG_VERSION")),
            "{args:?}: {out}"
        );
    }
}

#[test]
fn completions_for_each_shell() {
    for shell in ["bash", "zsh", "fish"] {
        let o = h5(&["completions", shell]);
        assert_eq!(o.status.code(), Some(0), "{shell}");
        let out = text(&o.stdout);
        assert!(out.contains("h5") && out.contains("repack"), "{shell}");
    }
    assert_eq!(h5(&["completions", "tcsh-ish"]).status.code(), Some(2));
}

#[test]
fn usage_errors_exit_2_with_a_message() {
    let f = small_file("usage.h5");
    let cases: Vec<Vec<&str>> = vec![
        vec![],
        vec!["frobnicate"],
        vec!["ls"],
        vec!["ls", &f, "--bogus"],
        vec!["dump"],
        vec!["dump", &f, "--bogus"],
        vec!["dump", "--json", "--canonical", &f],
        vec!["dump", &f, "/a", "-d", "/a"],
        vec!["cat", &f],
        vec!["cat", &f, "/c", "--slice"],
        vec!["check"],
        vec!["check", &f, "--bogus"],
        vec!["diff", &f],
        vec!["diff", &f, &f, "--delta", "x"],
        vec!["repack", &f],
        vec!["table"],
        vec!["table", "bogus"],
        vec!["completions"],
    ];
    for args in cases {
        let o = h5(&args);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {}", text(&o.stderr));
        assert!(!o.stderr.is_empty(), "{args:?}");
    }
    // A bad slice is a usage error too, and names the slice.
    let o = h5(&["cat", &f, "/c", "--slice", "7"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--slice"));
}

#[test]
fn a_missing_file_exits_1_with_one_line_naming_it() {
    let missing = "/nonexistent/dir/missing.h5";
    let f = small_file("missing.h5");
    let dst = scratch("missing-out.h5");
    let d = dst.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        vec!["ls", missing],
        vec!["ls", "-r", missing],
        vec!["dump", missing],
        vec!["dump", "--json", missing],
        vec!["dump", "--canonical", missing],
        vec!["cat", missing, "/x"],
        vec!["check", missing],
        vec!["check", "--json", missing],
        vec!["diff", missing, &f],
        vec!["diff", &f, missing],
        vec!["repack", missing, d],
        vec!["table", "ls", missing],
    ];
    for args in cases {
        let o = h5(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        if args[0] != "check" {
            assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
            assert!(err.contains("missing.h5"), "{args:?}: {err}");
        }
    }
    assert!(!dst.exists());
}

#[test]
fn a_missing_object_exits_1_naming_file_and_object() {
    let f = small_file("noobj.h5");
    for args in [
        vec!["ls", &f, "/nope"],
        vec!["dump", &f, "/nope"],
        vec!["dump", "--json", &f, "/nope"],
        vec!["dump", "--canonical", &f, "/nope"],
        vec!["dump", "-d", "/nope", &f],
        vec!["cat", &f, "/nope"],
        vec!["diff", &f, &f, "/nope"],
    ] {
        let o = h5(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.contains("/nope") && err.contains("noobj.h5"),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn ls_recursive_is_depth_first_with_full_paths() {
    let f = small_file("ls.h5");
    let o = h5(&["ls", "-r", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let names: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(names, ["/", "/a", "/a/b", "/a/b/y", "/a/x", "/c", "/s"]);
    // Not recursive: the members' names.
    let o = h5(&["ls", &f, "/a"]);
    let names: Vec<String> = text(&o.stdout)
        .lines()
        .map(|l| l.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(names, ["b", "x"]);
    // Long: type, layout, chunks, filters, ratio.
    let o = h5(&["ls", "-l", &f, "/a"]);
    let out = text(&o.stdout);
    let x = out.lines().find(|l| l.starts_with("x ")).unwrap();
    for want in [
        "Dataset {1000}",
        "H5T_IEEE_F64LE",
        "chunked {100}",
        "deflate",
        "ratio",
    ] {
        assert!(x.contains(want), "{want}: {x}");
    }
    // JSON Lines.
    let o = h5(&["ls", "-r", "-l", "--json", &f]);
    assert_eq!(o.status.code(), Some(0));
    let lines: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let x = lines.iter().find(|v| v["path"] == "/a/x").unwrap();
    assert_eq!(x["kind"], "dataset");
    assert_eq!(x["shape"], serde_json::json!([1000]));
    assert_eq!(x["chunks"], serde_json::json!([100]));
    assert!(x["ratio"].as_f64().unwrap() > 1.0);
    assert_eq!(x["filters"][0].as_str().unwrap().get(..7), Some("deflate"));
}

#[test]
fn dump_rows_fit_80_columns_and_header_only_has_no_data() {
    let f = small_file("dump.h5");
    let o = h5(&["dump", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    assert!(out.lines().all(|l| l.len() <= 80), "a long line");
    assert!(out.lines().count() > 50);
    assert!(out.contains("(0): 0, 0.5, 1, 1.5"), "{out}");
    // Each row of a 2-D dataset starts a line with its coordinates.
    assert!(out.contains("(1,0): 20, 21"), "{out}");
    assert!(out.contains("(2,0): 40, 41"), "{out}");
    let o = h5(&["dump", "-H", &f]);
    let head = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0));
    assert!(head.contains("DATASET \"x\"") && head.contains("H5T_IEEE_F64LE"));
    assert!(!head.contains("DATA {"), "{head}");
    // -d PATH is the positional PATH, for text, JSON and canonical dumps.
    for mode in [vec![], vec!["--json"], vec!["--canonical"]] {
        let mut a = vec!["dump"];
        a.extend(&mode);
        let mut by_d = a.clone();
        by_d.extend(["-d", "/a/b", f.as_str()]);
        let mut by_pos = a.clone();
        by_pos.extend([f.as_str(), "/a/b"]);
        let (x, y) = (h5(&by_d), h5(&by_pos));
        assert_eq!(x.status.code(), Some(0), "{mode:?}: {}", text(&x.stderr));
        assert_eq!(x.stdout, y.stdout, "{mode:?}");
        let s = text(&x.stdout);
        assert!(s.contains('y'), "{mode:?}: {s}");
        assert!(!s.contains("0.5"), "{mode:?}: /a/x leaked into {s}");
    }
    let canon: serde_json::Value =
        serde_json::from_slice(&h5(&["dump", "--canonical", &f, "/a/b"]).stdout).unwrap();
    let keys: Vec<&String> = canon["objects"].as_object().unwrap().keys().collect();
    assert_eq!(keys, ["/a/b", "/a/b/y"]);
    // The streamed JSON is one valid document with the data.
    let j: serde_json::Value = serde_json::from_slice(&h5(&["dump", "--json", &f]).stdout).unwrap();
    let x = &j["members"]["a"]["members"]["x"];
    assert_eq!(x["data"].as_array().unwrap().len(), 1000);
    assert_eq!(x["data"][3], serde_json::json!(1.5));
    assert_eq!(j["attrs"]["title"], "cli test");
    let jh: serde_json::Value =
        serde_json::from_slice(&h5(&["dump", "--json", "-H", &f]).stdout).unwrap();
    assert!(jh["members"]["a"]["members"]["x"].get("data").is_none());
}

#[test]
fn a_truncated_file_exits_1() {
    let p = scratch("trunc.h5");
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        let big: Vec<f64> = (0..100_000).map(f64::from).collect();
        root.create_dataset("big").write(&big).unwrap();
    }
    w.close().unwrap();
    let len = std::fs::metadata(&p).unwrap().len();
    let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
    f.set_len(len / 2).unwrap();
    drop(f);
    let s = p.to_str().unwrap();
    for args in [
        vec!["ls", "-r", s],
        vec!["dump", s],
        vec!["dump", "--json", s],
        vec!["dump", "--canonical", s],
        vec!["cat", s, "/big"],
        vec!["check", s],
    ] {
        let o = h5(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains("trunc.h5"), "{args:?}: {err}");
        assert!(
            err.lines().all(|l| l.starts_with("h5: ")),
            "{args:?}: {err}"
        );
    }
}

#[test]
fn a_corrupt_chunk_is_marked_and_the_dump_goes_on() {
    let p = scratch("corrupt.h5");
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        let xs: Vec<u64> = (0..1_000_000u64)
            .map(|i| i.wrapping_mul(0x9e37_79b9_7f4a_7c15))
            .collect();
        root.create_dataset("a_bad")
            .shape(&[1_000_000])
            .chunks(&[10_000])
            .fletcher32()
            .write(&xs)
            .unwrap();
        root.create_dataset("b_good").write(&[1i32, 2, 3]).unwrap();
    }
    w.close().unwrap();
    let mut bytes = std::fs::read(&p).unwrap();
    let mid = bytes.len() / 2;
    for b in &mut bytes[mid..mid + 64] {
        *b ^= 0xff;
    }
    std::fs::write(&p, &bytes).unwrap();
    let s = p.to_str().unwrap();
    for args in [
        vec!["dump", s],
        vec!["dump", "--json", s],
        vec!["cat", s, "/a_bad"],
    ] {
        let o = h5(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {err}");
        assert!(
            err.contains("corrupt.h5") && err.contains("/a_bad"),
            "{args:?}: {err}"
        );
    }
    // The dump goes on past the bad dataset.
    let out = text(&h5(&["dump", s]).stdout);
    assert!(
        out.contains("<error:") && out.contains("DATASET \"b_good\""),
        "{out}"
    );
    let j: serde_json::Value = serde_json::from_slice(&h5(&["dump", "--json", s]).stdout).unwrap();
    assert!(j["members"]["a_bad"]["error"].is_string());
    assert_eq!(j["members"]["b_good"]["data"], serde_json::json!([1, 2, 3]));
    // check finds it too, in text and JSON.
    let o = h5(&["check", s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stdout));
    let o = h5(&["check", "--json", s]);
    assert_eq!(o.status.code(), Some(1));
    let lines: Vec<serde_json::Value> = text(&o.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let last = lines.last().unwrap();
    assert_eq!(last["clean"], false);
    assert!(last["findings"].as_u64().unwrap() >= 1);
    assert!(lines[0]["message"].is_string() && lines[0]["severity"].is_string());
}

#[test]
fn check_json_of_a_clean_file() {
    let f = small_file("clean.h5");
    let o = h5(&["check", "--json", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    let v: serde_json::Value = serde_json::from_str(text(&o.stdout).trim()).unwrap();
    assert_eq!(v["clean"], true);
    assert_eq!(v["findings"], 0);
    assert_eq!(h5(&["check", &f]).status.code(), Some(0));
}

#[test]
fn cat_writes_native_bytes_and_refuses_a_terminal() {
    let f = small_file("cat.h5");
    let o = h5(&["cat", &f, "/a/b/y"]);
    assert_eq!(o.status.code(), Some(0));
    let want: Vec<u8> = (0..60i32).flat_map(i32::to_ne_bytes).collect();
    assert_eq!(o.stdout, want);
    let o = h5(&["cat", &f, "/a/b/y", "--slice", "1,0:2"]);
    let want: Vec<u8> = [20i32, 21].iter().flat_map(|x| x.to_ne_bytes()).collect();
    assert_eq!(o.stdout, want);
    // stdout a terminal: refused without --force.
    let (master, slave) = pty();
    let o = Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(["cat", &f, "/c"])
        .stdout(Stdio::from(slave.try_clone().unwrap()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2), "{}", text(&o.stderr));
    assert!(text(&o.stderr).contains("--force"));
    let o = Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(["cat", "--force", &f, "/c"])
        .stdout(Stdio::from(slave))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    drop(master);
}

/// A pseudo-terminal (master, slave).
fn pty() -> (std::fs::File, std::fs::File) {
    use std::os::fd::FromRawFd;
    let (mut m, mut s) = (0, 0);
    // SAFETY: openpty writes two fresh descriptors, which we own from here on.
    let r = unsafe {
        libc::openpty(
            &mut m,
            &mut s,
            std::ptr::null_mut(),
            std::ptr::null(),
            std::ptr::null(),
        )
    };
    assert_eq!(r, 0, "openpty");
    // SAFETY: as above.
    unsafe { (std::fs::File::from_raw_fd(m), std::fs::File::from_raw_fd(s)) }
}

#[test]
fn repack_and_table_keep_working() {
    let f = small_file("repack-src.h5");
    let dst = scratch("repack-dst.h5");
    let d = dst.to_str().unwrap();
    let o = h5(&["repack", &f, d, "--format", "latest", "--filter", "zstd=3"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = h5(&["diff", &f, d]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stdout));
    let o = h5(&["repack", &f, d, "--chunk=50", "--filter=gzip=1"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let o = h5(&["ls", "-l", d, "/a"]);
    assert!(
        text(&o.stdout).contains("chunked {50}"),
        "{}",
        text(&o.stdout)
    );
    assert_eq!(h5(&["diff", &f, d]).status.code(), Some(0));
    assert_eq!(h5(&["repack", &f, &f]).status.code(), Some(2));
    // `h5 table` is a subcommand of the same parser.
    let o = h5(&["table", "ls", &f]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

#[test]
fn diff_finds_structure_attribute_and_value_differences() {
    let a = small_file("diff-a.h5");
    assert_eq!(h5(&["diff", &a, &a]).status.code(), Some(0));
    let p = scratch("diff-b.h5");
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        root.set_attr("title", "other").unwrap();
        let mut g = root.create_group("a").unwrap();
        let xs: Vec<f64> = (0..1000)
            .map(|i| i as f64 * 0.5 + if i == 7 { 0.01 } else { 0.0 })
            .collect();
        g.create_dataset("x").shape(&[1000]).write(&xs).unwrap();
    }
    w.close().unwrap();
    let b = p.to_str().unwrap();
    let o = h5(&["diff", &a, b]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(1), "{out}");
    for want in [
        "only in the first file: /a/b",
        "/c",
        "\"title\"",
        "/a/x: 1 differences",
    ] {
        assert!(out.contains(want), "{want}: {out}");
    }
    // Values only, with a tolerance.
    let o = h5(&["diff", &a, b, "/a/x"]);
    assert_eq!(o.status.code(), Some(1));
    let o = h5(&["diff", "-v", &a, b, "/a/x"]);
    assert!(text(&o.stdout).contains("/a/x[7]: 3.5 <> 3.51"));
    assert_eq!(
        h5(&["diff", "--delta", "0.02", &a, b, "/a/x"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        h5(&["diff", "--delta", "0.001", &a, b, "/a/x"])
            .status
            .code(),
        Some(1)
    );
    assert_eq!(
        h5(&["diff", "--relative", "0.01", &a, b, "/a/x"])
            .status
            .code(),
        Some(0)
    );
    let o = h5(&["diff", "-q", &a, b]);
    assert_eq!(o.status.code(), Some(1));
    assert!(o.stdout.is_empty());
}

/// Write a file with one 1-D f64 dataset of `mb` MB (chunked or contiguous).
fn big_file(name: &str, mb: u64, chunked: bool) -> PathBuf {
    let p = scratch(name);
    let n = mb * 1_000_000 / 8;
    let xs: Vec<f64> = (0..n).map(|i| (i % 1000) as f64).collect();
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        let b = root.create_dataset("big").shape(&[n]);
        let b = if chunked { b.chunks(&[1 << 17]) } else { b };
        b.write(&xs).unwrap();
    }
    w.close().unwrap();
    p
}

/// Run `h5 ARGS` with stdout to /dev/null; its exit code and peak RSS in bytes.
///
/// The peak is the child's `VmHWM` (/proc/PID/status), read every 5 ms until it
/// exits; it is monotonic, so the last reading is the peak up to the last
/// 5 ms. (`wait4`'s `ru_maxrss` is no good here: a child started by vfork
/// inherits the high-water mark of the test process, which held the 200 MB
/// it wrote.)
fn run_measured(args: &[&str]) -> (Option<i32>, u64) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_h5"))
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak = 0u64;
    loop {
        if let Ok(s) = std::fs::read_to_string(&status_file) {
            if let Some(kb) = s
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            {
                peak = peak.max(kb * 1024);
            }
        }
        if let Some(st) = child.try_wait().unwrap() {
            return (st.code(), peak);
        }
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

#[test]
fn dump_of_a_200_mb_dataset_stays_under_100_mb_rss() {
    for chunked in [false, true] {
        let p = big_file(&format!("big-{chunked}.h5"), 200, chunked);
        let s = p.to_str().unwrap();
        // The JSON dump reads as the text dump does: measured on the chunked file only.
        let modes: &[&[&str]] = if chunked {
            &[&["dump"], &["dump", "--json"], &["cat"]]
        } else {
            &[&["dump"], &["cat"]]
        };
        for mode in modes {
            let mut args = mode.to_vec();
            args.push(s);
            if mode[0] == "cat" {
                args.push("/big");
            }
            let t = std::time::Instant::now();
            let (code, rss) = run_measured(&args);
            println!(
                "h5 {} ({}): peak RSS {:.1} MB, {:.1} s",
                mode.join(" "),
                if chunked { "chunked" } else { "contiguous" },
                rss as f64 / 1e6,
                t.elapsed().as_secs_f64()
            );
            assert_eq!(code, Some(0), "{args:?}");
            assert!(rss < 100_000_000, "{args:?}: peak RSS {rss} bytes");
        }
        std::fs::remove_file(&p).unwrap();
    }
}

#[test]
fn a_closed_pipe_ends_quietly_with_exit_0() {
    let p = big_file("pipe.h5", 20, true);
    let s = p.to_str().unwrap();
    for mode in [
        vec!["dump"],
        vec!["dump", "--json"],
        vec!["ls", "-r"],
        vec!["cat"],
    ] {
        let mut args = mode.clone();
        args.push(s);
        if mode[0] == "cat" {
            args.push("/big");
        }
        let mut child = Command::new(env!("CARGO_BIN_EXE_h5"))
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Read a little, as `head -c 100` would, then close the pipe.
        let mut stdout = child.stdout.take().unwrap();
        let mut buf = [0u8; 100];
        let _ = stdout.read(&mut buf).unwrap();
        drop(stdout);
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", text(&o.stderr));
        assert!(o.stderr.is_empty(), "{args:?}: {}", text(&o.stderr));
    }
    std::fs::remove_file(&p).unwrap();
}

/// `h5 diff`'s verdict (exit 0 or 1) against h5diff's (Debian's hdf5-tools) on
/// file pairs of `testdata/`, the corpus and files written here with known
/// differences and tolerances. Pairs h5diff cannot read (exit 2: libhdf5 2.0
/// files, filters missing from Debian's build) are left out.
#[test]
fn diff_agrees_with_h5diff() {
    assert!(
        Command::new("h5diff").arg("--version").output().is_ok(),
        "no h5diff on PATH: `cargo xtask test` installs Debian's hdf5-tools (apt-get install -y hdf5-tools)"
    );
    let td = |n: &str| testdata(n);
    let mut pairs: Vec<(String, String, Vec<&str>)> = Vec::new();
    for (a, b) in [
        ("attrs_earliest.h5", "attrs_v108.h5"),
        ("attrs_v108.h5", "attrs_v110.h5"),
        ("datasets_earliest.h5", "datasets_v108.h5"),
        ("datasets_v108.h5", "datasets_v110.h5"),
        ("dtypes_earliest.h5", "dtypes_v108.h5"),
        ("dtypes_v108.h5", "dtypes_v110.h5"),
        ("groups_earliest.h5", "groups_v110.h5"),
        ("freespace_fsm_v110.h5", "freespace_page_v110.h5"),
        ("attrs_v108.h5", "datasets_v108.h5"),
        ("groups_v108.h5", "dtypes_v108.h5"),
        ("attrs_v108.h5", "attr_large_v108.h5"),
    ] {
        pairs.push((td(a), td(b), vec![]));
    }
    if let Some(c) = common::corpus_dir() {
        let dir = c.join("files/jamesmudd__jhdf");
        let mut names: Vec<String> = std::fs::read_dir(&dir)
            .map(|r| {
                r.filter_map(|e| e.ok())
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        for n in &names {
            if let Some(stem) = n.strip_suffix("_earliest.hdf5") {
                let latest = format!("{stem}_latest.hdf5");
                if names.contains(&latest) {
                    let p = |x: &str| dir.join(x).to_string_lossy().into_owned();
                    pairs.push((p(n), p(&latest), vec![]));
                }
            }
        }
        let p = |x: &str| {
            dir.join(format!("jhdf__src__test__resources__hdf5__{x}.hdf5"))
                .to_string_lossy()
                .into_owned()
        };
        pairs.push((p("test_file"), p("test_file2"), vec![]));
        pairs.push((
            p("test_attribute_earliest"),
            p("test_enum_datasets_latest"),
            vec![],
        ));
    } else {
        println!("no corpus beside the repository: testdata pairs only");
    }
    // Values differing by known amounts, with tolerances.
    let write = |name: &str, bump: f64| {
        let p = scratch(name);
        let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
        {
            let mut root = w.root();
            let xs: Vec<f64> = (0..500)
                .map(|i| 1.0 + f64::from(i) * 0.1 + if i % 7 == 3 { bump } else { 0.0 })
                .collect();
            root.create_dataset("v")
                .shape(&[50, 10])
                .write(&xs)
                .unwrap();
        }
        w.close().unwrap();
        p.to_string_lossy().into_owned()
    };
    let (a, b) = (write("tol-a.h5", 0.0), write("tol-b.h5", 0.004));
    for opts in [
        vec![],
        vec!["-d", "0.01"],
        vec!["-d", "0.001"],
        vec!["-p", "0.01"],
        vec!["-p", "0.0001"],
    ] {
        pairs.push((a.clone(), b.clone(), opts));
    }
    let mut compared = 0;
    let mut disagree = Vec::new();
    for (a, b, opts) in &pairs {
        let theirs = Command::new("h5diff")
            .args(opts)
            .args([a, b])
            .output()
            .unwrap();
        let verdict = theirs.status.code();
        if verdict == Some(2) {
            println!("h5diff cannot compare {a} {b}: left out");
            continue;
        }
        let ours_opts: Vec<&str> = opts
            .iter()
            .map(|o| match *o {
                "-d" => "--delta",
                "-p" => "--relative",
                x => x,
            })
            .collect();
        let mut args = vec!["diff", "-q"];
        args.extend(&ours_opts);
        args.extend([a.as_str(), b.as_str()]);
        let ours = h5(&args);
        compared += 1;
        if ours.status.code() != verdict {
            disagree.push(format!(
                "{a} {b} {opts:?}: h5diff {verdict:?}, ours {:?} {}",
                ours.status.code(),
                text(&ours.stderr)
            ));
        }
    }
    println!("h5 diff agrees with h5diff on {compared} pairs");
    assert!(disagree.is_empty(), "{disagree:#?}");
    assert!(compared >= 20, "only {compared} pairs compared");
}

#[test]
fn ls_marks_an_unreadable_object_and_goes_on() {
    let p = scratch("badobj.h5");
    let mut w = h5fmt::write::FileWriter::create(&p).unwrap();
    {
        let mut root = w.root();
        root.create_dataset("a").write(&[1i32]).unwrap();
        root.create_dataset("b").write(&[2i32]).unwrap();
        let mut g = root.create_group("c").unwrap();
        g.create_dataset("d").write(&[3i32]).unwrap();
    }
    w.close().unwrap();
    // Break the signature of /b's object header (v2: "OHDR").
    let addr = h5fmt::File::open(&p)
        .unwrap()
        .dataset("/b")
        .unwrap()
        .addr()
        .0 as usize;
    let mut bytes = std::fs::read(&p).unwrap();
    assert_eq!(&bytes[addr..addr + 4], b"OHDR");
    bytes[addr..addr + 4].copy_from_slice(b"XXXX");
    std::fs::write(&p, &bytes).unwrap();
    let s = p.to_str().unwrap();
    let o = h5(&["ls", "-r", s]);
    assert_eq!(o.status.code(), Some(1), "{}", text(&o.stderr));
    let out = text(&o.stdout);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 5, "{out}");
    assert!(
        lines[2].starts_with("/b") && lines[2].contains("error"),
        "{out}"
    );
    assert!(lines[4].starts_with("/c/d"), "{out}");
    let err = text(&o.stderr);
    assert!(
        err.contains("badobj.h5") && err.contains("1 object"),
        "{err}"
    );
    // JSON Lines: an "error" member.
    let o = h5(&["ls", "-r", "--json", s]);
    assert_eq!(o.status.code(), Some(1));
    let b: serde_json::Value =
        serde_json::from_str(text(&o.stdout).lines().nth(2).unwrap()).unwrap();
    assert_eq!(b["path"], "/b");
    assert!(b["error"].is_string());
    // The dump goes on too.
    let o = h5(&["dump", s]);
    assert_eq!(o.status.code(), Some(1));
    assert!(text(&o.stdout).contains("DATASET \"d\""));
}

/// A valid fill-only dataset of 2^40 doubles (8 TiB read whole; made by h5py,
/// testdata/hostile/make.py) under a 4 GiB address-space cap: each command
/// streams it (its first values are the fill value 1.5 h5py reads) or refuses
/// it with exit 1 and a message naming it, and never ends by a signal.
#[test]
fn a_dataset_larger_than_memory_streams_or_is_refused_never_a_signal() {
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    // A valid, never-written chunked dataset of 2^40 doubles (fill 1.5), made
    // here: files in testdata/ are all dumped whole by corpus_limits.
    let f = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("fill_only_2e40_doubles.h5");
    let f = f.to_str().unwrap();
    if common::run_py(
        "import sys, h5py\n\
         with h5py.File(sys.argv[1], 'w', libver='earliest') as f:\n\
         \x20   f.create_dataset('huge', shape=(1 << 40,), dtype='f8', chunks=(1 << 16,), fillvalue=1.5)",
        &[f],
    )
    .is_none()
    {
        eprintln!("skipping: no python venv");
        return;
    }
    for args in [
        vec!["dump", f],
        vec!["dump", "--json", f],
        vec!["dump", "--canonical", f],
        vec!["cat", f, "/huge"],
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_h5"));
        cmd.args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // SAFETY: only async-signal-safe `setrlimit` runs between fork and exec.
        unsafe {
            cmd.pre_exec(|| {
                let cap = libc::rlimit {
                    rlim_cur: 4 << 30,
                    rlim_max: 4 << 30,
                };
                if libc::setrlimit(libc::RLIMIT_AS, &cap) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().unwrap();
        // Up to 64 KiB of output, then the pipe is closed (as `head` would).
        let mut out = Vec::new();
        child
            .stdout
            .take()
            .unwrap()
            .take(64 << 10)
            .read_to_end(&mut out)
            .unwrap();
        let t = std::time::Instant::now();
        let status = loop {
            if let Some(st) = child.try_wait().unwrap() {
                break st;
            }
            if t.elapsed().as_secs() > 60 {
                child.kill().unwrap();
                panic!("{args:?}: still running 60 s after its output was closed");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        assert_eq!(status.signal(), None, "{args:?}: {err}");
        match status.code() {
            Some(0) if args[0] == "cat" => {
                assert_eq!(out.len(), 64 << 10, "{args:?}");
                assert!(out.chunks(8).all(|c| c == 1.5f64.to_ne_bytes()), "{args:?}");
            }
            Some(0) => assert!(text(&out).contains("1.5"), "{args:?}: {}", text(&out)),
            Some(1) => assert!(
                err.contains("huge") && err.contains("limit"),
                "{args:?}: {err}"
            ),
            c => panic!("{args:?}: exit {c:?}: {err}"),
        }
    }
}
