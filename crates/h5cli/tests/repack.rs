//! Repack conformance: `h5 repack` (our reader → our writer) of every test file that has a
//! reference dump (`testdata/` and `../shared/corpus`), then the reference dumper
//! (`h5canon.py`, libhdf5 via h5py) on the output must give the source's reference dump.
//!
//! Variants: `v18` (default options) on every file; `earliest`, `latest` and `gzip`
//! (`--filter gzip=4,shuffle`, where `layout`, `chunks` and `filters` are not compared) each
//! on a deterministic sample (every 4th file by sorted key, at offsets 1, 2, 3), to keep the
//! test within about three minutes on two cores. Repacks run on two threads; the outputs are
//! dumped by two Python processes (`tests/repack_canon.py`, many files per process).
//!
//! Files that cannot be repacked identically are listed, with a reason, in
//! `tests/repack_expected_failures.txt` as `VARIANT KEY<TAB>reason`, checked both ways: a
//! listed case that passes fails the test, and so does an unlisted one that fails.
//! `H5_UPDATE_XFAIL=1 cargo test -p h5cli --test repack` rewrites the list (keeping reasons).
//!
//! Needs the venv (`H5FMT_VENV`, set by `cargo xtask test` or `source /work/wt/pyenv.sh`);
//! without it the test prints a skip notice and passes.

mod common;

use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{cases, first_diff, Expect};
use h5cli::repack::{parse_filter, Options};
use h5fmt::Format;
use serde_json::Value;

const XFAIL_HEADER: &str = "\
# Repack cases whose output does not dump like the source. Checked both ways by
# tests/repack.rs. Format: VARIANT KEY<TAB>reason.
# Regenerate: H5_UPDATE_XFAIL=1 cargo test -p h5cli --test repack
";

fn xfail_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/repack_expected_failures.txt")
}

fn load_xfail() -> BTreeMap<String, String> {
    std::fs::read_to_string(xfail_path())
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once('\t') {
            Some((k, r)) => (k.trim().to_string(), r.trim().to_string()),
            None => (l.trim().to_string(), String::new()),
        })
        .collect()
}

struct Variant {
    name: &'static str,
    opts: Options,
    /// Every `every`-th case starting at `offset` (every = 1: all).
    every: usize,
    offset: usize,
}

fn variants() -> Vec<Variant> {
    let with = |format| Options {
        format,
        ..Options::default()
    };
    vec![
        Variant {
            name: "v18",
            opts: with(Format::V18),
            every: 1,
            offset: 0,
        },
        Variant {
            name: "earliest",
            opts: with(Format::Earliest),
            every: 4,
            offset: 1,
        },
        Variant {
            name: "latest",
            opts: with(Format::Latest),
            every: 4,
            offset: 2,
        },
        Variant {
            name: "gzip",
            opts: Options {
                filter: parse_filter("gzip=4,shuffle").unwrap(),
                ..Options::default()
            },
            every: 4,
            offset: 3,
        },
    ]
}

/// Files with more dataset bytes than this are skipped: the Python reference dumper takes
/// minutes over the 2^31-element (fill-only) datasets or the 2^24-element array elements of
/// a few corpus files.
const MAX_BYTES: u64 = 16 << 20;

/// Total bytes of the datasets reachable from the root (None when the file does not open
/// or walk: such a file is still repacked, and fails there).
fn total_bytes(path: &Path) -> Option<u64> {
    let f = h5fmt::File::open(path).ok()?;
    let mut seen = std::collections::BTreeSet::new();
    let mut queue = vec![f.root().ok()?];
    let mut total = 0u64;
    while let Some(g) = queue.pop() {
        for l in g.links().ok()? {
            let h5fmt::format::message::LinkTarget::Hard(a) = l.target else {
                continue;
            };
            if !seen.insert(a.0) {
                continue;
            }
            match f.object_at(a, &l.name).ok()? {
                h5fmt::Object::Group(sub) => queue.push(sub),
                h5fmt::Object::Dataset(d) => {
                    total = total.saturating_add(d.len().saturating_mul(d.dtype().size()))
                }
                h5fmt::Object::Datatype(_) => {}
            }
        }
    }
    Some(total)
}

struct Job {
    key: String,
    src: PathBuf,
    expected: PathBuf,
    out: PathBuf,
    variant: usize,
}

/// Remove the storage keys of every dataset (when the options change them).
fn strip_storage(v: &mut Value) {
    if let Some(objs) = v.get_mut("objects").and_then(Value::as_object_mut) {
        for o in objs.values_mut() {
            if let Some(m) = o.as_object_mut() {
                for k in ["layout", "chunks", "filters"] {
                    m.remove(k);
                }
            }
        }
    }
}

/// Dump `paths` with `repack_canon.py` in one Python process.
fn python_dumps(python: &Path, paths: &[PathBuf]) -> Vec<(Result<Value, String>, f64)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/repack_canon.py");
    let canon_dir = common::repo_root().join("../shared/conformance");
    let mut child = Command::new(python)
        .arg(&script)
        .arg(&canon_dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start python");
    let mut stdin = child.stdin.take().expect("stdin");
    let list: String = paths.iter().map(|p| format!("{}\n", p.display())).collect();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(list.as_bytes());
    });
    let stdout = child.stdout.take().expect("stdout");
    let mut out = Vec::new();
    for line in std::io::BufReader::new(stdout).lines() {
        let line = line.expect("read python output");
        let v: Value = serde_json::from_str(&line).expect("python output is JSON");
        let secs = v.get("secs").and_then(Value::as_f64).unwrap_or(0.0);
        out.push((
            match (v.get("ok"), v.get("err")) {
                (Some(d), _) => Ok(d.clone()),
                (_, Some(e)) => Err(e.as_str().unwrap_or("?").to_string()),
                _ => Err("bad record".into()),
            },
            secs,
        ));
    }
    let _ = writer.join();
    let status = child.wait().expect("python exit");
    assert!(status.success(), "repack_canon.py failed: {status}");
    assert_eq!(out.len(), paths.len(), "repack_canon.py stopped early");
    out
}

#[test]
fn repack_conformance() {
    let Some(venv) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) else {
        println!("repack: skipped: H5FMT_VENV is not set (run via cargo xtask test)");
        return;
    };
    let python = Path::new(&venv).join("bin/python");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();

    let all: Vec<_> = cases()
        .into_iter()
        .filter_map(|c| match c.expect {
            Expect::Canon(e) => Some((c.key, c.path, e)),
            Expect::Error(_) => None,
        })
        .collect();
    let (all, big): (Vec<_>, Vec<_>) = all
        .into_iter()
        .partition(|(_, src, _)| total_bytes(src).is_none_or(|n| n <= MAX_BYTES));
    let vars = variants();
    let mut jobs = Vec::new();
    for (vi, v) in vars.iter().enumerate() {
        for (i, (key, src, expected)) in all.iter().enumerate() {
            if i % v.every == v.offset % v.every {
                jobs.push(Job {
                    key: format!("{} {key}", v.name),
                    src: src.clone(),
                    expected: expected.clone(),
                    out: tmp.join(format!("{}-{i}.h5", v.name)),
                    variant: vi,
                });
            }
        }
    }

    // Repack on two threads; a panic is a hard failure.
    let mut times = vec![0f64; jobs.len()];
    let results: Vec<Result<(), String>> = {
        let next = std::sync::atomic::AtomicUsize::new(0);
        #[allow(clippy::type_complexity)]
        let slots: Vec<std::sync::Mutex<Option<(Result<(), String>, f64)>>> =
            jobs.iter().map(|_| std::sync::Mutex::new(None)).collect();
        std::thread::scope(|s| {
            for _ in 0..2 {
                s.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(j) = jobs.get(i) else { break };
                    let opts = &vars[j.variant].opts;
                    let t0 = std::time::Instant::now();
                    let r = std::panic::catch_unwind(|| {
                        // In memory, then written without the writer's fsync.
                        h5cli::repack::repack_to_bytes(&j.src, opts)
                            .and_then(|b| std::fs::write(&j.out, b).map_err(|e| e.to_string()))
                    })
                    .unwrap_or_else(|p| {
                        Err(format!(
                            "PANIC: {}",
                            p.downcast_ref::<String>()
                                .cloned()
                                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                                .unwrap_or_default()
                        ))
                    });
                    *slots[i].lock().unwrap() = Some((r, t0.elapsed().as_secs_f64()));
                });
            }
        });
        slots
            .into_iter()
            .enumerate()
            .map(|(i, m)| {
                let (r, t) = m.into_inner().unwrap().unwrap();
                times[i] = t;
                r
            })
            .collect()
    };

    // Dump the outputs with libhdf5: two Python processes, half of the files each.
    let ok_idx: Vec<usize> = (0..jobs.len()).filter(|&i| results[i].is_ok()).collect();
    let half = ok_idx.len().div_ceil(2);
    let (a, b) = ok_idx.split_at(half);
    let paths = |ix: &[usize]| ix.iter().map(|&i| jobs[i].out.clone()).collect::<Vec<_>>();
    let (pa, pb) = (paths(a), paths(b));
    let (da, db) = std::thread::scope(|s| {
        let ha = s.spawn(|| python_dumps(&python, &pa));
        let hb = s.spawn(|| python_dumps(&python, &pb));
        (ha.join().unwrap(), hb.join().unwrap())
    });
    let mut dumps: BTreeMap<usize, Result<Value, String>> = BTreeMap::new();
    let mut slow: Vec<(f64, &str)> = Vec::new();
    for (i, (d, secs)) in ok_idx.iter().zip(da.into_iter().chain(db)) {
        dumps.insert(*i, d);
        slow.push((secs + times[*i], &jobs[*i].key));
    }
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "slowest (repack + dump, s): {:?}",
        &slow[..slow.len().min(8)]
    );

    let xfail = load_xfail();
    let update = std::env::var("H5_UPDATE_XFAIL").is_ok_and(|v| v == "1");
    let mut problems = Vec::new();
    let mut new_list = BTreeMap::new();
    let mut counts: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
    for (i, j) in jobs.iter().enumerate() {
        let v = &vars[j.variant];
        let verdict: Result<(), String> = match &results[i] {
            Err(e) if e.starts_with("PANIC") => {
                problems.push(format!("{}: {e}", j.key));
                continue;
            }
            Err(e) => Err(format!("repack: {e}")),
            Ok(()) => match dumps.remove(&i) {
                Some(Ok(mut got)) => {
                    let mut want: Value =
                        serde_json::from_str(&std::fs::read_to_string(&j.expected).unwrap())
                            .unwrap();
                    if v.opts.changes_storage() {
                        strip_storage(&mut want);
                        strip_storage(&mut got);
                    }
                    match first_diff(&want, &got) {
                        None => Ok(()),
                        Some(d) => Err(format!("differs at {d}")),
                    }
                }
                Some(Err(e)) => Err(format!("libhdf5 cannot dump the output: {e}")),
                None => Err("no dump".into()),
            },
        };
        let c = counts.entry(v.name).or_default();
        let listed = xfail.get(&j.key);
        match verdict {
            Ok(()) => {
                c.0 += 1;
                if listed.is_some() {
                    problems.push(format!(
                        "{}: passes but is listed in repack_expected_failures.txt",
                        j.key
                    ));
                }
            }
            Err(why) => {
                c.1 += 1;
                let why: String = why.chars().take(300).collect();
                new_list.insert(j.key.clone(), listed.cloned().unwrap_or(why.clone()));
                if listed.is_none() {
                    problems.push(format!("{}: {why}", j.key));
                }
            }
        }
        let _ = std::fs::remove_file(&j.out);
    }
    for k in xfail.keys() {
        if !jobs.iter().any(|j| &j.key == k) && common::corpus_dir().is_some() {
            problems.push(format!("{k}: listed but not a test case"));
        }
    }
    let text = counts
        .iter()
        .map(|(n, (p, f))| format!("{n}: {p} passed, {f} expected failures"))
        .collect::<Vec<_>>()
        .join("; ");
    common::summary(
        "repack",
        &format!(
            "repack: {text}; {} files above {MAX_BYTES} dataset bytes skipped",
            big.len()
        ),
    );
    if update {
        let mut t = String::from(XFAIL_HEADER);
        for (k, r) in &new_list {
            t.push_str(&format!("{k}\t{r}\n"));
        }
        std::fs::write(xfail_path(), t).unwrap();
        println!("wrote {} entries", new_list.len());
        return;
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}

/// Values as PyTables and netCDF4 (their own libraries over libhdf5) read them, compared
/// between the source and the repacked file.
const APPS_PY: &str = r#"
import sys, numpy as np, tables, netCDF4

def same(a, b, what):
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b), what
        for x, y in zip(a, b):
            same(x, y, what)
        return
    if isinstance(a, np.ndarray) and a.dtype == object:
        assert len(a) == len(b), what
        for x, y in zip(a.ravel(), b.ravel()):
            same(x, y, what)
        return
    a, b = np.asarray(a), np.asarray(b)
    assert a.dtype == b.dtype and a.shape == b.shape, (what, a.dtype, b.dtype, a.shape, b.shape)
    assert a.tobytes() == b.tobytes(), what

def pytables(path):
    out = {}
    with tables.open_file(path) as f:
        for n in f.walk_nodes("/"):
            attrs = {k: n._v_attrs[k] for k in n._v_attrs._f_list("user")}
            out[n._v_pathname] = (type(n).__name__, attrs,
                                  n.read() if isinstance(n, tables.Leaf) else None)
    return out

def nc(path):
    with netCDF4.Dataset(path) as d:
        return ({k: (len(v), v.isunlimited()) for k, v in d.dimensions.items()},
                {k: d.getncattr(k) for k in d.ncattrs()},
                {k: (v.dimensions, v.dtype, {a: v.getncattr(a) for a in v.ncattrs()},
                     np.ma.getdata(v[:])) for k, v in d.variables.items()})

n = 0
for kind, src, out in (l.split("\t") for l in sys.stdin.read().splitlines()):
    if kind == "tables":
        a, b = pytables(src), pytables(out)
        assert sorted(a) == sorted(b), (out, sorted(a), sorted(b))
        for k in a:
            assert a[k][0] == b[k][0], (out, k)
            assert sorted(a[k][1]) == sorted(b[k][1]), (out, k)
            for an in a[k][1]:
                same(a[k][1][an], b[k][1][an], (out, k, an))
            if a[k][2] is not None:
                same(a[k][2], b[k][2], (out, k))
    else:
        (da, ga, va), (db, gb, vb) = nc(src), nc(out)
        assert da == db, (out, da, db)
        assert sorted(ga) == sorted(gb), out
        for k in ga:
            same(ga[k], gb[k], (out, k))
        assert sorted(va) == sorted(vb), out
        for k in va:
            assert va[k][0] == vb[k][0] and va[k][1] == vb[k][1], (out, k)
            assert sorted(va[k][2]) == sorted(vb[k][2]), (out, k)
            for an in va[k][2]:
                same(va[k][2][an], vb[k][2][an], (out, k, an))
            same(va[k][3], vb[k][3], (out, k))
    n += 1
print("compared", n)
"#;

#[test]
fn pytables_and_netcdf4_read_repacked_files() {
    let Some(venv) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) else {
        println!("repack apps: skipped: H5FMT_VENV is not set");
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack-apps");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let td = common::repo_root().join("testdata");
    let mut list = String::new();
    for (fname, format) in [
        ("earliest", Format::Earliest),
        ("v18", Format::V18),
        ("latest", Format::Latest),
    ] {
        for (kind, src) in [("tables", "pytables.h5"), ("netcdf4", "netcdf4.nc")] {
            let src = td.join(src);
            let out = tmp.join(format!(
                "{fname}-{}",
                src.file_name().unwrap().to_string_lossy()
            ));
            let opts = Options {
                format,
                ..Options::default()
            };
            h5cli::repack::repack(&src, &out, &opts).unwrap();
            list.push_str(&format!("{kind}\t{}\t{}\n", src.display(), out.display()));
        }
    }
    let mut child = Command::new(Path::new(&venv).join("bin/python"))
        .args(["-c", APPS_PY])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(list.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "PyTables/netCDF4 check failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("compared 6"), "{text}");
}

/// The writer's bad-argument errors: each is a `Usage` error, and nothing of the failed call
/// reaches the file (the bytes equal those of a file where the call was never made).
#[test]
fn bad_arguments_are_usage_errors_and_write_nothing() {
    use h5fmt::{AttrValue, Datatype, ErrorKind, FileWriter};
    fn good(fw: &mut FileWriter) {
        let mut root = fw.root();
        root.create_dataset("d").write(&[1i32, 2, 3, 4]).unwrap();
        root.create_group("g").unwrap();
        root.set_attr("a", 7i32).unwrap();
    }
    type Bad = (&'static str, fn(&mut FileWriter) -> h5fmt::Result<()>);
    let bads: Vec<Bad> = vec![
        ("name collision (dataset)", |fw| {
            fw.root().create_dataset("d").write(&[1i32]).map(|_| ())
        }),
        ("name collision (group)", |fw| {
            fw.root().create_group("g").map(|_| ())
        }),
        ("name collision (soft link)", |fw| {
            fw.root().link_soft("g", "/d")
        }),
        ("empty link name", |fw| {
            fw.root().create_dataset("").write(&[1i32]).map(|_| ())
        }),
        ("path ending in /", |fw| {
            fw.root().create_group("a/b/").map(|_| ())
        }),
        ("path through a dataset", |fw| {
            fw.root().create_group("d/b").map(|_| ())
        }),
        ("link name .", |fw| fw.root().create_group(".").map(|_| ())),
        ("empty attribute name", |fw| fw.root().set_attr("", 1i32)),
        ("rank mismatch: maxshape", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[2, 2])
                .maxshape(&[Some(2)])
                .chunks(&[1, 1])
                .write(&[1i32, 2, 3, 4])
                .map(|_| ())
        }),
        ("rank mismatch: chunks", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[2, 2])
                .chunks(&[1])
                .write(&[1i32, 2, 3, 4])
                .map(|_| ())
        }),
        ("element count differs from the shape", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[3])
                .write(&[1i32, 2, 3, 4])
                .map(|_| ())
        }),
        ("wrong element type: raw bytes not whole elements", |fw| {
            fw.root()
                .create_dataset("x")
                .dtype(Datatype::float_le(8))
                .shape(&[2])
                .write_raw(&[0u8; 12])
                .map(|_| ())
        }),
        ("wrong element type: raw bytes for a vlen string", |fw| {
            fw.root()
                .create_dataset("x")
                .dtype(Datatype::vlen_utf8())
                .shape(&[1])
                .write_raw(&[0u8; 16])
                .map(|_| ())
        }),
        ("wrong element type: attribute bytes", |fw| {
            fw.root().set_attr(
                "x",
                AttrValue::raw(Datatype::int_le(4, true), Some(vec![2]), vec![0u8; 6]),
            )
        }),
        ("shape past maxshape", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[5])
                .maxshape(&[Some(4)])
                .chunks(&[2])
                .write(&[1i32, 2, 3, 4, 5])
                .map(|_| ())
        }),
        ("chunk past a fixed maxshape", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[4])
                .maxshape(&[Some(4)])
                .chunks(&[8])
                .write(&[1i32, 2, 3, 4])
                .map(|_| ())
        }),
        ("unlimited dimension without chunks", |fw| {
            fw.root()
                .create_dataset("x")
                .shape(&[4])
                .maxshape(&[None])
                .write(&[1i32, 2, 3, 4])
                .map(|_| ())
        }),
        ("raw chunk outside the dataset", |fw| {
            fw.root()
                .create_dataset("x")
                .dtype(Datatype::int_le(4, true))
                .shape(&[4])
                .chunks(&[2])
                .write_raw_chunks(vec![h5fmt::write::RawChunk {
                    offsets: vec![4],
                    bytes: vec![0; 8],
                    filter_mask: 0,
                }])
                .map(|_| ())
        }),
        ("null dataspace with data", |fw| {
            fw.root()
                .create_dataset("x")
                .null_space()
                .write(&[1i32])
                .map(|_| ())
        }),
        ("committed datatype id that is not one", |fw| {
            fw.root()
                .create_dataset("x")
                .committed_dtype(h5fmt::ObjectId::ROOT)
                .write(&[1i32])
                .map(|_| ())
        }),
    ];
    for format in [Format::Earliest, Format::V18, Format::Latest] {
        let mut clean = FileWriter::in_memory_with(format);
        good(&mut clean);
        let clean = clean.finish().unwrap();
        for (what, bad) in &bads {
            let mut fw = FileWriter::in_memory_with(format);
            good(&mut fw);
            let e = bad(&mut fw).expect_err(what);
            assert_eq!(e.kind(), ErrorKind::Usage, "{what}: {e}");
            assert!(!e.to_string().is_empty());
            let bytes = fw.finish().unwrap();
            assert!(
                bytes == clean,
                "{format:?} {what}: the failed call changed the file"
            );
        }
    }
}

fn common_large() -> &'static str {
    let p = common::repo_root().join("testdata/attr_large_v108.h5");
    Box::leak(p.to_string_lossy().into_owned().into_boxed_str())
}

/// `h5 repack` with bad arguments: an error message, exit status 2 (1 for a source that cannot
/// be opened), no destination file.
#[test]
fn repack_cli_bad_arguments() {
    let exe = env!("CARGO_BIN_EXE_h5");
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack-cli");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let src = common::repo_root().join("testdata/attrs_v108.h5");
    let dst = tmp.join("out.h5");
    let s = src.to_str().unwrap();
    let d = dst.to_str().unwrap();
    // Usage errors exit 2; a source that cannot be opened is a file problem (1).
    let cases: Vec<(Vec<&str>, &str, i32)> = vec![
        (vec!["repack", s], "needs SRC and DST", 2),
        (vec!["repack", s, d, "--format", "v99"], "unknown format", 2),
        (vec!["repack", s, d, "--filter", "gzip=12"], "bad level", 2),
        (
            vec!["repack", s, d, "--filter", "snappy"],
            "unknown filter",
            2,
        ),
        (vec!["repack", s, d, "--chunk", "0,4"], "bad --chunk", 2),
        (
            vec!["repack", s, d, "--bogus"],
            "unexpected argument '--bogus'",
            2,
        ),
        (vec!["repack", s, d, "--format"], "a value is required", 2),
        (
            vec!["repack", "--format", "earliest", common_large(), d],
            "64 KiB",
            2,
        ),
        (vec!["repack", "/nonexistent/x.h5", d], "x.h5", 1),
    ];
    for (args, want, code) in cases {
        let out = Command::new(exe).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!dst.exists(), "{args:?} created the destination");
        assert_eq!(
            std::fs::read_dir(&tmp).unwrap().count(),
            0,
            "{args:?} left a file"
        );
    }
    let out = Command::new(exe)
        .args([
            "repack",
            s,
            d,
            "--format=latest",
            "--filter",
            "gzip=4,shuffle",
            "--chunk",
            "2",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let src_dump = h5cli::canon::dump(&src).unwrap();
    let dst_dump = h5cli::canon::dump(&dst).unwrap();
    let (mut a, mut b) = (src_dump, dst_dump);
    strip_storage(&mut a);
    strip_storage(&mut b);
    assert_eq!(first_diff(&a, &b), None);
}

/// Dense storage: a group of 20 links and an object of 12 attributes (one of 100 KiB) are
/// written densely (the link info / attribute info messages name a fractal heap) in V18 and
/// Latest, compactly in Earliest (where the large attribute is refused), and libhdf5's dump
/// equals the dump of what was written (our reader).
#[test]
fn dense_links_and_attributes() {
    use h5fmt::format::message::{AttributeInfo, LinkInfo};
    let Some(venv) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) else {
        println!("dense: skipped: H5FMT_VENV is not set");
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack-dense");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let mut paths = Vec::new();
    for format in [Format::Earliest, Format::V18, Format::Latest] {
        let mut fw = h5fmt::FileWriter::in_memory_with(format);
        let mut root = fw.root();
        let mut g = root.create_group("many").unwrap();
        for i in 0..20 {
            g.create_dataset(&format!("d{i:02}")).write(&[i]).unwrap();
        }
        g.link_soft("soft", "/many/d00").unwrap();
        for i in 0..12 {
            g.set_attr(&format!("a{i}"), i as f64).unwrap();
        }
        let big = g.set_attr("big", vec![7u8; 100 * 1024]);
        assert_eq!(big.is_err(), format == Format::Earliest, "{format:?}");
        let bytes = fw.finish().unwrap();
        let f = h5fmt::File::from_bytes(bytes.clone()).unwrap();
        let h = f.group("/many").unwrap();
        let dense = |k: u16| {
            h.header().find(k).map(|m| {
                let mut c = h5fmt::codec::Cursor::new(&m.data, 0);
                if k == h5fmt::format::message::kind::LINK_INFO {
                    !LinkInfo::decode(&mut c, f.ctx()).unwrap().heap.is_undef()
                } else {
                    !AttributeInfo::decode(&mut c, f.ctx())
                        .unwrap()
                        .heap
                        .is_undef()
                }
            })
        };
        let want = (format != Format::Earliest).then_some(true);
        assert_eq!(
            dense(h5fmt::format::message::kind::LINK_INFO),
            want,
            "{format:?}"
        );
        assert_eq!(
            dense(h5fmt::format::message::kind::ATTRIBUTE_INFO),
            want,
            "{format:?}"
        );
        assert_eq!(h.links().unwrap().len(), 21);
        assert_eq!(
            h.attrs().unwrap().len(),
            if want.is_some() { 13 } else { 12 }
        );
        let p = tmp.join(format!("{format:?}.h5"));
        std::fs::write(&p, bytes).unwrap();
        paths.push(p);
    }
    let dumps = python_dumps(&Path::new(&venv).join("bin/python"), &paths);
    for (p, (d, _)) in paths.iter().zip(dumps) {
        let theirs = d.unwrap_or_else(|e| panic!("{}: libhdf5: {e}", p.display()));
        let ours = h5cli::canon::dump(p).unwrap();
        assert_eq!(first_diff(&theirs, &ours), None, "{}", p.display());
        assert_eq!(
            theirs["objects"]["/many"]["links"]
                .as_object()
                .unwrap()
                .len(),
            21
        );
    }
}

/// Object references written through the writer API (`object_addr` pins a header address
/// before close) in every format: libhdf5 dereferences them to the right objects, including
/// a reference to an object created after the referring attribute was set and a committed
/// datatype used by a dataset.
#[test]
fn object_references_and_committed_types() {
    use h5fmt::format::datatype::RefKind;
    use h5fmt::write::ElementData;
    use h5fmt::{AttrValue, Datatype, FileWriter};
    let Some(venv) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) else {
        println!("references: skipped: H5FMT_VENV is not set");
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack-refs");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let mut paths = Vec::new();
    for format in [Format::Earliest, Format::V18, Format::Latest] {
        let mut fw = FileWriter::in_memory_with(format);
        let t = fw
            .root()
            .commit_datatype("t", Datatype::int_le(2, false))
            .unwrap();
        let d = fw
            .root()
            .create_dataset("d")
            .committed_dtype(t)
            .write_raw(&[1, 0, 2, 0])
            .unwrap();
        let g = fw.root().create_group("g").unwrap().id();
        let refs = |fw: &mut FileWriter, ids: &[h5fmt::ObjectId]| {
            let mut b = Vec::new();
            for id in ids {
                b.extend_from_slice(&fw.object_addr(*id).unwrap().0.to_le_bytes());
            }
            b
        };
        let rtype = Datatype::Reference {
            size: 8,
            kind: RefKind::Object1,
        };
        let bytes = refs(&mut fw, &[g, d, t]);
        fw.root()
            .create_dataset("refs")
            .dtype(rtype.clone())
            .shape(&[3])
            .write_file_bytes(bytes)
            .unwrap();
        let bytes = refs(&mut fw, &[h5fmt::ObjectId::ROOT]);
        fw.set_attr(
            g,
            "to_root",
            AttrValue {
                dtype: rtype,
                shape: None,
                data: ElementData::File(bytes),
            },
        )
        .unwrap();
        let p = tmp.join(format!("{format:?}.h5"));
        std::fs::write(&p, fw.finish().unwrap()).unwrap();
        paths.push(p);
    }
    let dumps = python_dumps(&Path::new(&venv).join("bin/python"), &paths);
    for (p, (d, _)) in paths.iter().zip(dumps) {
        let doc = d.unwrap_or_else(|e| panic!("{}: libhdf5: {e}", p.display()));
        let o = &doc["objects"];
        assert_eq!(
            o["/refs"]["data"],
            serde_json::json!(["/g", "/d", "/t"]),
            "{}",
            p.display()
        );
        assert_eq!(o["/g"]["attrs"]["to_root"]["data"], "/", "{}", p.display());
        assert_eq!(o["/t"]["kind"], "datatype");
        assert_eq!(o["/d"]["data"], serde_json::json!([1, 2]));
        let ours = h5cli::canon::dump(p).unwrap();
        assert_eq!(first_diff(&doc, &ours), None, "{}", p.display());
    }
}

/// `--filter nbit`, `scaleoffset=N` and `lz4` (alone and combined with
/// shuffle and gzip): h5py reads the output with the expected filter ids
/// in the expected order; values come back equal (integers under lossless
/// `scaleoffset=0` too); lossy scale-offset values (floats to N decimal
/// digits, integers to N bits) equal what libhdf5 itself stores with
/// h5py's `scaleoffset=N` on the same data; `nbit` leaves a string
/// dataset without it, `scaleoffset` refuses one (as libhdf5 does at
/// dataset creation); bad specs are refused.
#[test]
fn nbit_scaleoffset_and_lz4_filters() {
    const GEN: &str = r#"
import sys, h5py, numpy as np
with h5py.File(sys.argv[1], 'w') as f:
    f['i'] = (np.arange(3000, dtype='<i4') * 7) % 1000 - 300
    f['u'] = np.arange(2000, dtype='<u2')
    f['x'] = np.sin(np.arange(2500, dtype='<f8') / 7) * 100
    f['y'] = (np.cos(np.arange(1200, dtype='<f4') / 3) * 10).astype('<f4')
    if sys.argv[2] == 'str':
        f['s'] = np.array([b'ab', b'cd'], dtype='S2')
"#;
    const READ: &str = r#"
import sys, json, h5py, numpy as np
import hdf5plugin  # the lz4 filter
out = {}
with h5py.File(sys.argv[1], 'r') as f:
    for k in f:
        d = f[k]
        pl = d.id.get_create_plist()
        ids = [pl.get_filter(i)[0] for i in range(pl.get_nfilters())]
        out[k] = {'filters': ids, 'values': np.asarray(d[()]).astype('f8').tolist() if d.dtype.kind != 'S' else [x.decode() for x in d[()]]}
print(json.dumps(out))
"#;
    /// libhdf5's own scale-offset of the same data (h5py `scaleoffset=N`
    /// with the chunk shape repack gives: the whole dataset).
    const LIB_SO: &str = r#"
import sys, json, h5py, numpy as np
n = int(sys.argv[2])
out = {}
with h5py.File(sys.argv[1], 'r') as src, h5py.File(sys.argv[3], 'w') as f:
    for k in ('i', 'u', 'x', 'y'):
        a = src[k][()]
        f.create_dataset(k, data=a, chunks=a.shape, scaleoffset=n)
        out[k] = np.asarray(f[k][()]).astype('f8').tolist()
print(json.dumps(out))
"#;
    let Some(_) = common::python() else {
        println!("skipped: no venv");
        return;
    };
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR")).join("repack-nbit-so");
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(&tmp).unwrap();
    let src = tmp.join("src.h5");
    let src_s = tmp.join("src_str.h5");
    common::run_py(GEN, &[src.to_str().unwrap(), "num"]).expect("python");
    common::run_py(GEN, &[src_s.to_str().unwrap(), "str"]).expect("python");
    let read = |p: &Path| -> Value {
        serde_json::from_str(&common::run_py(READ, &[p.to_str().unwrap()]).expect("python"))
            .unwrap()
    };
    let orig = read(&src);
    let repack = |src: &Path, spec: &str, name: &str| -> Result<PathBuf, String> {
        let out = tmp.join(name);
        let opts = Options {
            format: Format::V18,
            filter: parse_filter(spec)?,
            chunk: None,
        };
        h5cli::repack::repack(src, &out, &opts).map(|_| out)
    };
    for (spec, ids) in [
        ("nbit", vec![5]),
        ("nbit,gzip=4,shuffle", vec![5, 2, 1]),
        ("lz4", vec![32004]),
        ("shuffle,lz4", vec![2, 32004]),
        ("scaleoffset=0", vec![6]),
        ("gzip=5,soff=0,shuffle", vec![6, 2, 1]),
    ] {
        let out = repack(&src, spec, "out.h5").unwrap_or_else(|e| panic!("{spec}: {e}"));
        let v = read(&out);
        for k in ["i", "u", "x", "y"] {
            assert_eq!(v[k]["filters"], serde_json::json!(ids), "{spec}: {k}");
            if spec.contains("scaleoffset") || spec.contains("soff") {
                if k == "i" || k == "u" {
                    assert!(v[k]["values"] == orig[k]["values"], "{spec}: {k}");
                }
            } else {
                assert!(v[k]["values"] == orig[k]["values"], "{spec}: {k}");
            }
        }
    }
    // Lossy floats: as libhdf5 stores them (D-scale 3 and 1).
    for n in [3, 1] {
        let out = repack(&src, &format!("scaleoffset={n}"), "so.h5").expect("repack");
        let v = read(&out);
        let lib = tmp.join("lib_so.h5");
        let theirs: Value = serde_json::from_str(
            &common::run_py(
                LIB_SO,
                &[src.to_str().unwrap(), &n.to_string(), lib.to_str().unwrap()],
            )
            .expect("python"),
        )
        .unwrap();
        // (Integers keep n bits: lossy too, as in libhdf5.)
        for k in ["i", "u", "x", "y"] {
            assert!(
                v[k]["values"] != orig[k]["values"],
                "scaleoffset={n}: {k} is lossy"
            );
            assert!(v[k]["values"] == theirs[k], "scaleoffset={n}: {k}");
        }
    }
    // Strings: nbit leaves them without it; scaleoffset refuses them.
    let out = repack(&src_s, "nbit,gzip=4", "nbit_s.h5").expect("nbit with strings");
    let v = read(&out);
    assert_eq!(v["s"]["filters"], serde_json::json!([1]));
    assert_eq!(v["s"]["values"], serde_json::json!(["ab", "cd"]));
    assert_eq!(v["i"]["filters"], serde_json::json!([5, 1]));
    let e = repack(&src_s, "scaleoffset=2", "so_s.h5").expect_err("refused");
    assert!(e.contains("/s") && e.contains("scaleoffset"), "{e}");
    for bad in [
        "nbit,scaleoffset=2",
        "scaleoffset",
        "soff=x",
        "nbit=3",
        "scaleoffset=-1",
        "nbit,nbit",
    ] {
        assert!(parse_filter(bad).is_err(), "{bad}");
    }
}
