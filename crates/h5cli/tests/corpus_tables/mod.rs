//! Every row table of the shared corpus (`../shared/corpus/files`: each
//! compound dataset with `CLASS = "TABLE"`, PyTables' and libhdf5_hl's
//! H5TB alike) through `h5 table import … --to`, `h5 table check --strict`
//! and `h5 table export --as pytables` / `--as h5tb`: each export, read back
//! by PyTables and by `H5TBread_table`, must hold the values PyTables (a
//! PyTables table) or h5py (an H5TB table) reads from the source
//! (tests/row_tables.py `read_many`, one call for all sources and one for
//! all exports), and the source's `TITLE`. The fills `rowtable` reads from a PyTables source are
//! checked against PyTables' column defaults on the way.

use super::arrow_canon::canon;
use super::{dir, h5, python};
use h5table::rowtable::{is_row_table, Flavor, RowTable};
use serde_json::{json, Value as J};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// LZO, PyTables' filter 305: neither we nor PyTables' wheel decode it.
const LZO: u16 = 305;

/// The tables that do not round-trip, each `(file, table, why, what our
/// error says)`: none since nested compounds became compound columns.
const NOT_ROUND_TRIPPED: &[(&str, &str, &str, &str)] = &[];

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus/files")
}

/// Every corpus file, sorted.
fn files() -> Vec<PathBuf> {
    let mut out = vec![];
    for d in std::fs::read_dir(corpus()).unwrap() {
        for f in std::fs::read_dir(d.unwrap().path()).unwrap() {
            out.push(f.unwrap().path());
        }
    }
    out.sort();
    out
}

/// `(tables, LZO tables, files holding a table)` of the corpus; each table
/// as (file, path).
type Found = (Vec<(PathBuf, String)>, Vec<(PathBuf, String)>, usize);

fn row_tables(files: &[PathBuf]) -> Found {
    let (mut tables, mut lzo, mut holding) = (vec![], vec![], 0);
    for file in files {
        let Ok(f) = h5fmt::File::open(file) else {
            continue;
        };
        let Ok(root) = f.root() else { continue };
        let mut any = false;
        for obj in root.walk().flatten() {
            let h5fmt::Object::Dataset(ds) = obj else {
                continue;
            };
            if !is_row_table(&ds) {
                continue;
            }
            any = true;
            let entry = (file.clone(), ds.path().to_string());
            if ds.filters().filters.iter().any(|f| f.id == LZO) {
                lzo.push(entry);
            } else {
                tables.push(entry);
            }
        }
        holding += usize::from(any);
    }
    (tables, lzo, holding)
}

/// `row_tables.py read_many` of `jobs` (file, path, how).
fn read_many(jobs: &[(String, String, &str)]) -> Vec<J> {
    let mut child = Command::new(python())
        .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/row_tables.py"))
        .arg("read_many")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(&json!(jobs)).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "row_tables.py read_many: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let reads: Vec<J> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(reads.len(), jobs.len());
    reads
}

/// Import, strict check and both exports of table `k`; the two exported
/// files, or the first failing step's message.
fn convert(k: usize, file: &Path, path: &str) -> Result<[PathBuf; 2], String> {
    let d = dir().join("corpus_tables");
    let hep = d.join(format!("{k}_hep.h5"));
    let (pt, tb) = (d.join(format!("{k}_pt.h5")), d.join(format!("{k}_tb.h5")));
    for f in [&hep, &pt, &tb] {
        let _ = std::fs::remove_file(f);
    }
    let run = |args: &[&str], step: &str| {
        let o = h5(args);
        match o.status.success() {
            true => Ok(()),
            false => Err(format!(
                "{step}: {}{}",
                String::from_utf8_lossy(&o.stderr),
                String::from_utf8_lossy(&o.stdout)
            )),
        }
    };
    let src = format!("{}:{path}", file.display());
    let t = format!("{}:/t", hep.display());
    run(&["table", "import", &src, "--to", &t], "import")?;
    run(
        &["table", "check", "--strict", hep.to_str().unwrap()],
        "check",
    )?;
    for (as_, out) in [("pytables", &pt), ("h5tb", &tb)] {
        let dst = format!("{}:/t", out.display());
        run(&["table", "export", &t, "--as", as_, &dst], as_)?;
    }
    Ok([pt, tb])
}

/// Equal JSON values, numbers compared as numbers (Python and serde_json
/// spell some floats differently). A boolean `b` (PyTables' `BoolCol`)
/// equals the number 0 or 1: HEP001 stores booleans as uint8 (§8.5), and
/// the exports keep that type.
fn same(a: &J, b: &J) -> bool {
    match (a, b) {
        (J::Number(x), J::Bool(v)) | (J::Bool(v), J::Number(x)) => {
            x.as_u64() == Some(u64::from(*v))
        }
        (J::Number(x), J::Number(y)) => match (x.as_i64(), y.as_i64(), x.as_u64(), y.as_u64()) {
            (Some(p), Some(q), ..) => p == q,
            (.., Some(p), Some(q)) => p == q,
            _ => x.as_f64() == y.as_f64(),
        },
        (J::Array(x), J::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q))
        }
        (J::Object(x), J::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
        }
        _ => a == b,
    }
}

/// Column-by-column equality whatever the column order (PyTables orders a
/// table's columns by offset, the exports by declaration).
fn assert_same_columns(got: &J, want: &J, what: &str) {
    let (g, w) = (got.as_object().unwrap(), want.as_object().unwrap());
    let mut gk: Vec<_> = g.keys().collect();
    let mut wk: Vec<_> = w.keys().collect();
    gk.sort();
    wk.sort();
    assert_eq!(gk, wk, "{what}: columns");
    for (name, wv) in w {
        let (ga, wa) = (g[name].as_array().unwrap(), wv.as_array().unwrap());
        assert_eq!(ga.len(), wa.len(), "{what}: {name}: rows");
        if let Some(i) = (0..wa.len()).find(|&i| !same(&ga[i], &wa[i])) {
            panic!("{what}: {name} row {i}: {} vs {}", ga[i], wa[i]);
        }
    }
}

/// Our fills of a PyTables source against PyTables' column defaults (an
/// array column's default is one element, repeated in ours). PyTables reads
/// the `FIELD_<n>_FILL`s only when `FIELD_0_FILL` exists (else its defaults
/// are its own, not the file's).
fn assert_fills(file: &Path, path: &str, want: &J, what: &str) {
    let f = h5fmt::File::open(file).unwrap();
    let ds = f.dataset(path).unwrap();
    if ds.attr("FIELD_0_FILL").is_err() {
        return;
    }
    let rt = RowTable::open(&ds).unwrap();
    assert_eq!(rt.flavor(), Flavor::PyTables, "{what}");
    for (name, w) in want.as_object().unwrap() {
        let field = rt.fields().iter().find(|f| &f.name == name).unwrap();
        let got = canon(field.fill.as_ref().expect("a fill").as_ref(), 0);
        let ok = match (&got, w) {
            (J::Array(g), w) if !w.is_array() => g.iter().all(|x| same(x, w)),
            _ => same(&got, w),
        };
        assert!(ok, "{what}: fill of {name}: ours {got}, PyTables {w}");
    }
}

#[test]
fn every_corpus_row_table_round_trips_through_hep001() {
    let t0 = std::time::Instant::now();
    let files = files();
    let (tables, lzo, holding) = row_tables(&files);
    std::fs::create_dir_all(dir().join("corpus_tables")).unwrap();
    // Two workers: each table is four short `h5` runs.
    let results: Vec<Result<[PathBuf; 2], String>> = std::thread::scope(|s| {
        let half = tables.len().div_ceil(2);
        let workers: Vec<_> = tables
            .chunks(half.max(1))
            .enumerate()
            .map(|(w, part)| {
                s.spawn(move || {
                    part.iter()
                        .enumerate()
                        .map(|(i, (f, p))| convert(w * half + i, f, p))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| w.join().unwrap())
            .collect()
    });
    let short = |f: &Path| {
        f.strip_prefix(corpus())
            .unwrap()
            .to_string_lossy()
            .to_string()
    };
    let mut jobs = vec![];
    let mut excluded = vec![];
    for ((file, path), r) in tables.iter().zip(&results) {
        let known = NOT_ROUND_TRIPPED
            .iter()
            .find(|(f, p, ..)| *f == short(file) && p == path);
        match (r, known) {
            (Ok(_), Some(_)) => panic!(
                "{}:{path} round-trips: drop it from NOT_ROUND_TRIPPED",
                short(file)
            ),
            (Err(e), Some((_, _, why, says))) => {
                assert!(e.contains(says), "{}:{path}: {e}", short(file));
                excluded.push(format!("{}:{path}: {why}", short(file)));
            }
            (Err(e), None) => panic!("{}:{path}: {e}", short(file)),
            (Ok([pt, tb]), None) => {
                let s = |p: &Path| p.to_str().unwrap().to_string();
                jobs.push((s(file), path.clone(), "source"));
                jobs.push((s(pt), "/t".to_string(), "pt"));
                jobs.push((s(tb), "/t".to_string(), "tb"));
            }
        }
    }
    let reads = read_many(&jobs);
    let (mut rows, mut by) = (0u64, std::collections::BTreeMap::new());
    for (job, read) in jobs.chunks(3).zip(reads.chunks(3)) {
        let what = format!("{}:{}", job[0].0, job[0].1);
        let [src, pt, tb] = read else { unreachable!() };
        assert!(
            src.get("error").is_none(),
            "{what}: oracle: {}",
            src["error"]
        );
        *by.entry(src["reader"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
        for (back, how) in [
            (pt, "--as pytables (PyTables)"),
            (tb, "--as h5tb (H5TBread_table)"),
        ] {
            assert!(
                back.get("error").is_none(),
                "{what} {how}: {}",
                back["error"]
            );
            assert_eq!(back["nrows"], src["nrows"], "{what} {how}: rows");
            assert_same_columns(&back["columns"], &src["columns"], &format!("{what} {how}"));
        }
        assert_eq!(pt["title"], src["title"], "{what}: TITLE");
        assert_eq!(tb["attrs"]["TITLE"]["value"], src["title"], "{what}: TITLE");
        if let Some(fills) = src.get("fills") {
            assert_fills(Path::new(&job[0].0), &job[0].1, fills, &what);
        }
        rows += src["nrows"].as_u64().unwrap();
    }
    let round_tripped = jobs.len() / 3;
    println!(
        "corpus row tables: {} files scanned, {holding} hold row tables; {} tables: \
         {round_tripped} round-tripped ({rows} rows; source read by {by:?}), {} skipped \
         (LZO, filter {LZO}), {} not round-tripped; {:.1} s",
        files.len(),
        tables.len() + lzo.len(),
        lzo.len(),
        excluded.len(),
        t0.elapsed().as_secs_f64()
    );
    for (f, p) in &lzo {
        println!("  skipped (LZO): {}:{p}", short(f));
    }
    for e in &excluded {
        println!("  not round-tripped: {e}");
    }
    assert_eq!(excluded.len(), NOT_ROUND_TRIPPED.len(), "{excluded:#?}");
    // What the corpus held when this test was written: a table lost by the walk fails here.
    assert!(
        round_tripped >= 59 && lzo.len() == 15,
        "{round_tripped} tables, {} LZO",
        lzo.len()
    );
}
