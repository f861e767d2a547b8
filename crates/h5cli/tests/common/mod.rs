//! Shared helpers of the h5cli integration tests: where the test files are, running a dump
//! with a time bound and panic capture, a JSON difference finder, the h5py venv's Python and
//! per-process scratch files.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::Value;

/// The repository root (`crates/h5cli/../..`).
pub fn repo_root() -> PathBuf {
    let r = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::fs::canonicalize(&r).unwrap_or(r)
}

/// `../shared/corpus` beside the repository, when present.
pub fn corpus_dir() -> Option<PathBuf> {
    let d = repo_root().join("../shared/corpus");
    d.join("files").is_dir().then_some(d)
}

/// What a test file is expected to give.
#[derive(Debug)]
pub enum Expect {
    /// The reference dump (`.canon.json`).
    Canon(PathBuf),
    /// The reference could not dump it (`.error`): we must return without panicking.
    Error(PathBuf),
}

/// One test file.
#[derive(Debug)]
pub struct Case {
    /// The name used in `expected_failures.txt`: `testdata/<file>` or `corpus/<dir>/<file>`.
    pub key: String,
    /// The HDF5 file.
    pub path: PathBuf,
    /// Its expectation.
    pub expect: Expect,
}

/// Every test file with an expectation: `testdata/*` with `testdata/expected/<name>.canon.json`
/// or `.error`, and every corpus file with one in `../shared/corpus/expected`.
pub fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    let td = repo_root().join("testdata");
    collect(&td, &td.join("expected"), "testdata", &mut out);
    if let Some(c) = corpus_dir() {
        collect(&c.join("files"), &c.join("expected"), "corpus", &mut out);
    }
    out.sort_by(|a, b| a.key.cmp(&b.key));
    out
}

fn collect(files: &Path, expected: &Path, prefix: &str, out: &mut Vec<Case>) {
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(files.join(&rel)) else {
            continue;
        };
        for e in rd.flatten() {
            let name = e.file_name();
            let r = rel.join(&name);
            let p = files.join(&r);
            if p.is_dir() {
                if r != Path::new("expected") {
                    stack.push(r);
                }
                continue;
            }
            let name = name.to_string_lossy();
            let canon = expected.join(&rel).join(format!("{name}.canon.json"));
            let error = expected.join(&rel).join(format!("{name}.error"));
            let expect = if canon.is_file() {
                Expect::Canon(canon)
            } else if error.is_file() {
                Expect::Error(error)
            } else {
                continue;
            };
            let key = format!("{prefix}/{}", r.to_string_lossy().replace('\\', "/"));
            out.push(Case {
                key,
                path: p,
                expect,
            });
        }
    }
}

/// How one bounded dump ended.
pub enum Outcome {
    /// The dump returned.
    Done(Result<Value, String>),
    /// It panicked, with this message.
    Panicked(String),
    /// It did not return within the time bound.
    TimedOut(Duration),
}

/// `h5cli::canon::dump(path)` on its own thread, with panics caught and a time bound.
/// A dump that times out is left running (its thread is detached).
pub fn bounded_dump(path: &Path, limit: Duration) -> Outcome {
    let (tx, rx) = mpsc::channel();
    let p = path.to_path_buf();
    let spawned = std::thread::Builder::new()
        .name(format!("dump {}", path.display()))
        .spawn(move || {
            let r = std::panic::catch_unwind(|| h5cli::canon::dump(&p));
            let _ = tx.send(r);
        });
    if let Err(e) = spawned {
        return Outcome::Done(Err(format!("cannot spawn a thread: {e}")));
    }
    match rx.recv_timeout(limit) {
        Ok(Ok(r)) => Outcome::Done(r),
        Ok(Err(payload)) => Outcome::Panicked(panic_message(payload.as_ref())),
        Err(mpsc::RecvTimeoutError::Timeout) => Outcome::TimedOut(limit),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            Outcome::Panicked("thread ended without a result".into())
        }
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = p.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = p.downcast_ref::<String>() {
        s.clone()
    } else {
        "(non-string panic payload)".into()
    }
}

/// Print a summary line and leave it in `target/tmp/<name>.summary` for `cargo xtask test`
/// to show (libtest hides the output of passing tests).
pub fn summary(name: &str, text: &str) {
    println!("{text}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("{name}.summary")),
        format!("{text}\n"),
    );
}

/// The time bound per file: `H5_TEST_TIMEOUT_SECS` or 180 s. It detects hangs,
/// not slowness: a few corpus datasets hold 2^31 (fill) elements whose text is
/// hashed in full, which takes tens of seconds on a loaded 2-core machine.
pub fn time_limit() -> Duration {
    let secs = std::env::var("H5_TEST_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(180);
    Duration::from_secs(secs)
}

/// The first difference between `expected` and `actual`, as `path: what`, or `None` when
/// they are equal as JSON values. Paths join object keys and list indices with `/` as they
/// are (so a dataset `/dset`'s third element is `/objects//dset/data/3`).
pub fn first_diff(expected: &Value, actual: &Value) -> Option<String> {
    let mut path = String::new();
    diff_at(expected, actual, &mut path)
}

fn diff_at(e: &Value, a: &Value, path: &mut String) -> Option<String> {
    let here = |p: &str| {
        if p.is_empty() {
            "/".to_string()
        } else {
            p.to_string()
        }
    };
    match (e, a) {
        (Value::Object(eo), Value::Object(ao)) => {
            let mut keys: Vec<&String> = eo.keys().chain(ao.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let len = path.len();
                path.push('/');
                path.push_str(k);
                let d = match (eo.get(k), ao.get(k)) {
                    (Some(x), Some(y)) => diff_at(x, y, path),
                    (Some(x), None) => Some(format!("{path}: missing (expected {})", short(x))),
                    (None, Some(y)) => Some(format!("{path}: unexpected {}", short(y))),
                    (None, None) => None,
                };
                if d.is_some() {
                    return d;
                }
                path.truncate(len);
            }
            None
        }
        (Value::Array(ea), Value::Array(aa)) => {
            for (i, (x, y)) in ea.iter().zip(aa.iter()).enumerate() {
                let len = path.len();
                path.push_str(&format!("/{i}"));
                if let Some(d) = diff_at(x, y, path) {
                    return Some(d);
                }
                path.truncate(len);
            }
            (ea.len() != aa.len()).then(|| {
                format!(
                    "{}: expected {} elements, got {}",
                    here(path),
                    ea.len(),
                    aa.len()
                )
            })
        }
        _ if e == a => None,
        _ => Some(format!(
            "{}: expected {}, got {}",
            here(path),
            short(e),
            short(a)
        )),
    }
}

fn short(v: &Value) -> String {
    let s = v.to_string();
    if s.chars().count() > 120 {
        let t: String = s.chars().take(117).collect();
        format!("{t}...")
    } else {
        s
    }
}

/// The venv's Python (`$H5FMT_VENV/bin/python`), if there is one.
pub fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

/// Run `script` with `args` under the venv's Python and return its
/// standard output; `None` without a venv. Panics when the script fails.
pub fn run_py(script: &str, args: &[&str]) -> Option<String> {
    let py = python()?;
    let out = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "python failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8(out.stdout).expect("utf-8"))
}

/// How long a libhdf5 child ([`run_py_bounded`]) may go without progress:
/// `H5_LIBHDF5_TIMEOUT_SECS` or 60 s.
pub fn libhdf5_time_limit() -> Duration {
    let secs = std::env::var("H5_LIBHDF5_TIMEOUT_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(60);
    Duration::from_secs(secs)
}

/// Where [`run_py_bounded`] keeps the files of a libhdf5 child that hung.
pub fn hang_dir() -> PathBuf {
    Path::new(env!("CARGO_TARGET_TMPDIR")).join("libhdf5_hangs")
}

/// [`run_py`] with a time bound, for scripts in which libhdf5 edits or
/// reads files the tests made (libhdf5 can loop forever, e.g. closing a
/// file whose free-space managers lead it round in circles,
/// HDFGroup/hdf5#5121): the child is killed when it prints nothing on its
/// standard error for [`libhdf5_time_limit`]. A script reports progress
/// there, one line a step; a line `@file <path>` names the file it works
/// on from then. On a timeout the test fails naming the kept copies (in
/// [`hang_dir`]) of the file it was working on (else of every one of
/// `files`): as the killed child left it and, for one of `files` (the
/// files the script may change), as it was before the run.
pub fn run_py_bounded(script: &str, args: &[&str], files: &[&Path]) -> Option<String> {
    use std::io::{BufRead, Read};
    use std::process::Stdio;
    let py = python()?;
    let before: Vec<(PathBuf, Option<Vec<u8>>)> = files
        .iter()
        .map(|p| (p.to_path_buf(), std::fs::read(p).ok()))
        .collect();
    let limit = libhdf5_time_limit();
    let mut child = std::process::Command::new(py)
        .arg("-c")
        .arg(script)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python");
    let mut stdout = child.stdout.take().expect("stdout");
    let stderr = child.stderr.take().expect("stderr");
    let out_thread = std::thread::spawn(move || {
        let mut b = Vec::new();
        let _ = stdout.read_to_end(&mut b);
        b
    });
    let (tx, rx) = mpsc::channel::<String>();
    let err_thread = std::thread::spawn(move || {
        for line in std::io::BufReader::new(stderr).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut lines: Vec<String> = Vec::new();
    let mut hung = false;
    loop {
        match rx.recv_timeout(limit) {
            Ok(l) => lines.push(l),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                hung = true;
                break;
            }
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    if hung {
        let _ = child.kill();
        let _ = child.wait();
        drop(rx);
        let _ = err_thread.join();
        let _ = out_thread.join();
        let current = lines
            .iter()
            .rev()
            .find_map(|l| l.strip_prefix("@file "))
            .map(PathBuf::from);
        let dir = hang_dir();
        std::fs::create_dir_all(&dir).expect("hang dir");
        let tag = format!(
            "{}_{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        );
        let mut kept = Vec::new();
        let mut keep = |p: &Path, bytes: Option<&[u8]>, what: &str| {
            let name = p.file_name().map_or("file".into(), |n| n.to_string_lossy());
            let to = dir.join(format!("{tag}_{what}_{name}"));
            let ok = match bytes {
                Some(b) => std::fs::write(&to, b).is_ok(),
                None => std::fs::copy(p, &to).is_ok(),
            };
            if ok {
                kept.push(format!("{} ({what})", to.display()));
            }
        };
        let chosen: Vec<PathBuf> = match &current {
            Some(c) => vec![c.clone()],
            None => files.iter().map(|p| p.to_path_buf()).collect(),
        };
        for p in &chosen {
            keep(p, None, "as_left");
            if let Some((_, Some(b))) = before.iter().find(|(q, _)| q == p) {
                keep(p, Some(b), "before");
            }
        }
        let tail: Vec<&str> = lines
            .iter()
            .rev()
            .take(8)
            .rev()
            .map(String::as_str)
            .collect();
        panic!(
            "libhdf5 hung: the Python child made no progress for {} s{} and was killed; kept: \
             [{}]; its last progress lines: [{}]",
            limit.as_secs(),
            current.map_or(String::new(), |c| format!(" working on {}", c.display())),
            kept.join(", "),
            tail.join(" | ")
        );
    }
    let status = child.wait().expect("wait python");
    let _ = err_thread.join();
    let out = out_thread.join().expect("stdout reader");
    assert!(
        status.success(),
        "python failed ({status}): {}",
        lines.join("\n")
    );
    Some(String::from_utf8(out).expect("utf-8"))
}

/// [`run_py_bounded`] whose `files` are those of `args` that name existing
/// files: every Python child of the editing tests runs under the time bound.
pub fn run_lib(script: &str, args: &[&str]) -> Option<String> {
    let files: Vec<&Path> = args.iter().map(Path::new).filter(|p| p.is_file()).collect();
    run_py_bounded(script, args, &files)
}

/// A path `name` in a per-process scratch directory `<tmp>/<prefix>_<pid>`.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("{prefix}_{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir.join(name)
}

/// `h5 check` finds no error in the file at `path` (and, `strict`, no
/// warning: a cut commit may leave space written past the end-of-file
/// address).
pub fn assert_checks(path: &Path, strict: bool) {
    use h5cli::check::{check_path, is_clean};
    let findings = check_path(path);
    assert!(
        is_clean(&findings, strict),
        "h5 check {}: {}",
        path.display(),
        findings
            .iter()
            .map(|f| f.to_string())
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// `h5 check` finds no error in the file at `path` (warnings allowed).
pub fn assert_clean(path: &Path) {
    assert_checks(path, false);
}

/// The file's length in bytes.
pub fn len(p: &Path) -> u64 {
    std::fs::metadata(p).expect("metadata").len()
}

/// `[f(0), f(1), ..., f(n - 1)]` as a JSON list.
pub fn ints(n: usize, f: impl Fn(usize) -> f64) -> Value {
    serde_json::json!((0..n).map(f).collect::<Vec<f64>>())
}

/// Run `script` with `paths` as arguments under the venv's Python and
/// return the JSON list it prints (one element a path). Panics without a
/// venv.
pub fn py_list(script: &str, paths: &[&Path]) -> Vec<Value> {
    let args: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let s = run_py(script, &args).expect("python");
    serde_json::from_str::<Value>(&s)
        .expect("json")
        .as_array()
        .expect("array")
        .clone()
}

/// A small deterministic generator (xorshift).
pub struct Rng(pub u64);

impl Rng {
    /// The next value.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        let span = (hi - lo) as u64 + 1;
        lo + (self.next() % span) as i64
    }

    /// In `0..n` (`0` for `n == 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Extents `(offset, size)` in a file.
pub type Extents = Vec<(u64, u64)>;

/// The File Space Info message of the file `f` (in its superblock
/// extension), decoded by our reader, and its message flags.
pub fn fs_info_of(f: &h5fmt::File) -> (h5fmt::format::free_space::FileSpaceInfo, u8) {
    use h5fmt::codec::Cursor;
    use h5fmt::format::free_space::FileSpaceInfo;
    let ctx = f.ctx();
    let h =
        h5fmt::read::object_header::read_object_header(f.storage(), f.superblock().extension, ctx)
            .expect("extension");
    let m = h
        .find(h5fmt::format::message::kind::FSINFO)
        .expect("file space info");
    let info = FileSpaceInfo::decode(&mut Cursor::new(&m.data, 0), ctx).expect("fsinfo");
    (info, m.flags)
}

/// The file's persistent free-space managers, as decoded by our reader:
/// (slot, sections (offset, size)) and the extents of their structures.
/// `exact_lists`: also assert each section list's sizes add up to its
/// header's total, and its used and allocated sizes are equal (libhdf5
/// writes them equal, and cannot rewrite a list whose two sizes differ).
pub fn fs_managers(path: &Path, exact_lists: bool) -> (Vec<(usize, Extents)>, Extents) {
    use h5fmt::codec::Cursor;
    use h5fmt::format::free_space::{decode_sections, FreeSpaceHeader};
    let b = std::fs::read(path).expect("read");
    let f = h5fmt::File::from_bytes(b.clone()).expect("open");
    let ctx = f.ctx();
    let (info, _) = fs_info_of(&f);
    assert!(info.persist);
    let mut out = Vec::new();
    let mut structs = Vec::new();
    for (slot, a) in info.managers.iter().enumerate() {
        let Some(a) = a.defined() else { continue };
        let at = a.0 as usize;
        let hdr = FreeSpaceHeader::decode(&mut Cursor::new(&b[at..], a.0), ctx).expect("FSHD");
        let s = hdr.sections_addr.0 as usize;
        let secs =
            decode_sections(&mut Cursor::new(&b[s..], s as u64), &hdr, a, ctx).expect("FSSE");
        if exact_lists {
            assert_eq!(secs.iter().map(|x| x.size).sum::<u64>(), hdr.total_space);
            assert_eq!(
                hdr.sections_used,
                hdr.sections_alloc,
                "{}: manager {slot}: section list used and allocated sizes differ",
                path.display()
            );
        }
        structs.push((a.0, FreeSpaceHeader::encoded_len(ctx) as u64));
        structs.push((hdr.sections_addr.0, hdr.sections_alloc));
        out.push((slot, secs.iter().map(|x| (x.offset, x.size)).collect()));
    }
    (out, structs)
}

/// The bytes the managers list as free ([`fs_managers`] with `exact_lists`).
pub fn all_free(path: &Path, exact_lists: bool) -> u64 {
    fs_managers(path, exact_lists)
        .0
        .iter()
        .flat_map(|m| m.1.iter().map(|s| s.1))
        .sum()
}

/// No section of `managers` overlaps another or the managers' `structs`
/// (panics naming `what`).
pub fn assert_sections_disjoint(managers: &[(usize, Extents)], structs: Extents, what: &str) {
    let mut ext: Vec<(u64, u64)> = managers.iter().flat_map(|m| m.1.clone()).collect();
    ext.extend(structs);
    ext.sort();
    for w in ext.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0, "{what}: {w:?} overlap");
    }
}

/// The cut test's runs: for n = 0, 1, ..., copy `template` to `path(n)`,
/// open it (no syncs), run `setup`, let writes fail after the `n`-th and
/// run `op`, until `op` succeeds. Returns the cut files (where `op`
/// failed) and the file where it succeeded. Panics with `never` when `n`
/// reaches `limit`.
pub fn cut_runs_after(
    template: &Path,
    path: impl Fn(usize) -> PathBuf,
    limit: usize,
    never: &str,
    mut setup: impl FnMut(&mut h5fmt::FileEditor),
    mut op: impl FnMut(&mut h5fmt::FileEditor) -> h5fmt::Result<()>,
) -> (Vec<PathBuf>, PathBuf) {
    let mut cuts = Vec::new();
    let mut n = 0usize;
    let done = loop {
        let p = path(n);
        std::fs::copy(template, &p).expect("copy");
        let mut ed = h5fmt::FileEditor::open(&p).expect("open");
        ed.sync = false;
        setup(&mut ed);
        ed.fail_writes_after(Some(n));
        let r = op(&mut ed);
        drop(ed);
        if r.is_ok() {
            break p;
        }
        cuts.push(p);
        n += 1;
        assert!(n < limit, "{never}");
    };
    (cuts, done)
}

/// [`cut_runs_after`] without a setup.
pub fn cut_runs(
    template: &Path,
    path: impl Fn(usize) -> PathBuf,
    limit: usize,
    never: &str,
    op: impl FnMut(&mut h5fmt::FileEditor) -> h5fmt::Result<()>,
) -> (Vec<PathBuf>, PathBuf) {
    cut_runs_after(template, path, limit, never, |_| {}, op)
}

/// The index type and everything in the layout message but addresses.
pub fn layout_key(
    l: &h5fmt::format::message::ChunkedLayout,
) -> (String, h5fmt::format::message::ChunkIndex, u8, u8, Vec<u64>) {
    let (kind, index) = match &l.index {
        h5fmt::format::message::ChunkIndex::BTreeV1 { .. } => (
            "btree1",
            h5fmt::format::message::ChunkIndex::BTreeV1 {
                addr: h5fmt::Addr::UNDEF,
            },
        ),
        h5fmt::format::message::ChunkIndex::SingleChunk { filtered, .. } => (
            "single",
            h5fmt::format::message::ChunkIndex::SingleChunk {
                addr: h5fmt::Addr::UNDEF,
                filtered: filtered.map(|_| (0, 0)),
            },
        ),
        h5fmt::format::message::ChunkIndex::Implicit { .. } => (
            "implicit",
            h5fmt::format::message::ChunkIndex::Implicit {
                addr: h5fmt::Addr::UNDEF,
            },
        ),
        h5fmt::format::message::ChunkIndex::FixedArray { page_bits, .. } => (
            "farray",
            h5fmt::format::message::ChunkIndex::FixedArray {
                addr: h5fmt::Addr::UNDEF,
                page_bits: *page_bits,
            },
        ),
        h5fmt::format::message::ChunkIndex::ExtensibleArray {
            max_bits,
            index_elements,
            min_pointers,
            min_elements,
            page_bits,
            ..
        } => (
            "earray",
            h5fmt::format::message::ChunkIndex::ExtensibleArray {
                addr: h5fmt::Addr::UNDEF,
                max_bits: *max_bits,
                index_elements: *index_elements,
                min_pointers: *min_pointers,
                min_elements: *min_elements,
                page_bits: *page_bits,
            },
        ),
        h5fmt::format::message::ChunkIndex::BTreeV2 {
            node_size,
            split_percent,
            merge_percent,
            ..
        } => (
            "btree2",
            h5fmt::format::message::ChunkIndex::BTreeV2 {
                addr: h5fmt::Addr::UNDEF,
                node_size: *node_size,
                split_percent: *split_percent,
                merge_percent: *merge_percent,
            },
        ),
    };
    (
        kind.to_string(),
        index,
        l.layout_version,
        l.flags,
        l.dims.clone(),
    )
}
