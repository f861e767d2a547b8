//! `cargo xtask wasm-pkg` (the npm package of `crates/h5fmt-wasm`) and `cargo xtask wasm-test`
//! (every testdata file read through it under Node, compared with the native reader).

use super::{
    cargo, debian_cargo, ensure_venv, ensure_wasm_toolchain, output, repo_root, run, wasm_linker, R,
};
use serde_json::Value as Json;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

/// The package's files written by hand (the rest is wasm-bindgen's output).
const JS_FILES: &[&str] = &["package.json", "index.js", "index.d.ts"];

/// The viewer page's files (`js/viewer`, copied to `viewer/` in the package).
const VIEWER_FILES: &[&str] = &["index.html", "viewer.js", "viewer.css"];

/// wasm-opt flags: the features rustc's wasm32 target emits (wasm-opt would otherwise
/// refuse bulk-memory or sign-extension instructions), then -O3 (measured smaller than -Oz
/// after gzip, and faster).
const WASM_OPT_FLAGS: &[&str] = &[
    "--enable-bulk-memory",
    "--enable-nontrapping-float-to-int",
    "--enable-sign-ext",
    "--enable-mutable-globals",
    "--enable-reference-types",
    "--enable-multivalue",
    "-O3",
];

/// The TypeScript that checks `index.d.ts` (wasm-test).
const TYPESCRIPT: &str = "typescript@5";

/// The binaryen release on npm whose wasm-opt shrinks the module.
const BINARYEN: &str = "binaryen@132.0.0";

/// Build the package into `target/wasm-pkg/h5fmt-wasm`; its directory.
pub(super) fn task_wasm_pkg() -> R<PathBuf> {
    let started = Instant::now();
    ensure_wasm_toolchain()?;
    let root = repo_root();
    let krate = root.join("crates").join("h5fmt-wasm");
    let target = root.join("target").join("wasm-pkg");
    run(debian_cargo(&krate)
        .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", wasm_linker())
        // A panic traps either way (panic=abort); without the panic machinery and its
        // messages, which nothing shows, the gzipped module is 11 KB (4 %) smaller.
        .env(
            "CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUSTFLAGS",
            "-Zunstable-options -Cpanic=immediate-abort",
        )
        .args([
            "build",
            "--release",
            "--locked",
            "-Z",
            "build-std=std,panic_abort",
            "--target",
            "wasm32-unknown-unknown",
            "--target-dir",
        ])
        .arg(&target))?;
    let module = target.join("wasm32-unknown-unknown/release/h5fmt_wasm.wasm");

    let version = locked_version(&krate.join("Cargo.lock"), "wasm-bindgen")?;
    let bindgen = ensure_wasm_bindgen(&root, &version)?;
    let pkg = target.join("h5fmt-wasm");
    if pkg.exists() {
        fs::remove_dir_all(&pkg).map_err(|e| format!("{}: {e}", pkg.display()))?;
    }
    run(Command::new(&bindgen)
        .args(["--target", "web", "--out-name", "h5fmt_wasm", "--out-dir"])
        .arg(&pkg)
        .arg(&module))?;
    let wasm = pkg.join("h5fmt_wasm_bg.wasm");
    let bindgen_gz = gzip_size(&wasm)?;
    let opt = wasm_opt(&root, &wasm)?;
    for f in JS_FILES {
        fs::copy(krate.join("js").join(f), pkg.join(f))
            .map_err(|e| format!("copy {f} into {}: {e}", pkg.display()))?;
    }
    // The viewer page (static files loading ../index.js).
    let viewer = pkg.join("viewer");
    fs::create_dir_all(&viewer).map_err(|e| format!("{}: {e}", viewer.display()))?;
    for f in VIEWER_FILES {
        fs::copy(krate.join("js/viewer").join(f), viewer.join(f))
            .map_err(|e| format!("copy viewer/{f} into {}: {e}", pkg.display()))?;
    }
    let raw = fs::metadata(&wasm).map_err(|e| e.to_string())?.len();
    let gz = gzip_size(&wasm)?;
    println!("wasm-pkg: {} (wasm-bindgen {version})", pkg.display());
    println!(
        "wasm-pkg: h5fmt_wasm_bg.wasm {raw} bytes, {gz} gzipped (gzip -9n){}",
        if opt {
            format!("; {bindgen_gz} gzipped before wasm-opt")
        } else {
            " (no wasm-opt)".into()
        }
    );
    println!("wasm-pkg: {:.1} s", started.elapsed().as_secs_f64());
    Ok(pkg)
}

/// The version of `name` in a Cargo.lock.
fn locked_version(lock: &Path, name: &str) -> R<String> {
    let text = fs::read_to_string(lock).map_err(|e| format!("{}: {e}", lock.display()))?;
    let mut lines = text.lines();
    while let Some(l) = lines.next() {
        if l.trim() == format!("name = \"{name}\"") {
            if let Some(v) = lines
                .next()
                .and_then(|v| v.trim().strip_prefix("version = "))
            {
                return Ok(v.trim_matches('"').to_string());
            }
        }
    }
    Err(format!("{}: no package {name}", lock.display()))
}

/// `wasm-bindgen` of exactly `version` (the schema of the module's custom section must match
/// the library's), installed from crates.io under `target/wasm-tools` when missing.
fn ensure_wasm_bindgen(root: &Path, version: &str) -> R<PathBuf> {
    let dir = root
        .join("target")
        .join("wasm-tools")
        .join(format!("wasm-bindgen-{version}"));
    let bin = dir.join("bin").join("wasm-bindgen");
    if output(Command::new(&bin).arg("--version"))
        .is_ok_and(|v| v.trim() == format!("wasm-bindgen {version}"))
    {
        return Ok(bin);
    }
    let install = |locked: bool| {
        let mut c = Command::new(cargo());
        c.args(["install", "wasm-bindgen-cli", "--version"])
            .arg(format!("={version}"))
            .arg("--root")
            .arg(&dir)
            .arg("--target-dir")
            .arg(root.join("target").join("wasm-tools").join("build"));
        if locked {
            c.arg("--locked");
        }
        run(&mut c)
    };
    // The crate's own lock file names versions a registry mirror may not have (webpki-roots
    // 1.0.11 was missing here): fall back to a fresh resolution.
    if let Err(e) = install(true) {
        eprintln!("wasm-pkg: `--locked` install failed ({e}); resolving afresh");
        install(false)?;
    }
    Ok(bin)
}

/// Shrink `wasm` in place with npm binaryen's wasm-opt when npm is there; whether it ran.
fn wasm_opt(root: &Path, wasm: &Path) -> R<bool> {
    let npm_dir = root.join("target").join("wasm-tools").join("npm");
    let bin = npm_dir.join("node_modules/.bin/wasm-opt");
    if !bin.exists() {
        if output(Command::new("npm").arg("--version")).is_err() {
            println!("wasm-pkg: no npm, no wasm-opt");
            return Ok(false);
        }
        fs::create_dir_all(&npm_dir).map_err(|e| e.to_string())?;
        run(Command::new("npm")
            .current_dir(&npm_dir)
            .args(["install", "--no-audit", "--no-fund", "--prefix"])
            .arg(&npm_dir)
            .arg(BINARYEN))?;
    }
    let tmp = wasm.with_extension("opt.wasm");
    run(Command::new(&bin)
        .args(WASM_OPT_FLAGS)
        .arg(wasm)
        .arg("-o")
        .arg(&tmp))?;
    fs::rename(&tmp, wasm).map_err(|e| e.to_string())?;
    Ok(true)
}

fn gzip_size(path: &Path) -> R<usize> {
    let out = Command::new("gzip")
        .args(["-9", "-n", "-c"])
        .arg(path)
        .output()
        .map_err(|e| format!("gzip: {e}"))?;
    if !out.status.success() {
        return Err(format!("gzip {} failed", path.display()));
    }
    Ok(out.stdout.len())
}

/// Differences between the package and the native (`std`) reader that are by design, as
/// the start of `diff`'s line: raw data in an external file cannot be read without `std`
/// (a page has no file system); both sides must still report an error.
const EXPECTED_DIFFS: &[&str] = &[
    "/testdata/external_raw.h5/objects//ext/read_error: native \"/ext: i/o error: external file",
];

/// The files `wasm-test` corrupts byte by byte (their first 4 KiB; ~10 s under Node).
const CORRUPTED: &[&str] = &[
    "wasm_smoke.h5",
    "complex_v200.h5",
    "dtypes_v110.h5",
    "attrs_v110.h5",
    "datasets_v110.h5",
];

/// The size budget of the gzipped module (issue 17: ≤ 300 KB for the reader).
const MAX_GZIPPED: usize = 300_000;

/// A HEP001 table file of the shared corpus (h5col) corrupted too, when the corpus is there.
const CORRUPTED_TABLE: &str = "c25_version_1_10.h5";

/// Build the package, summarize every HDF5 file of `testdata/` through it under Node and
/// with the native reader (`crates/h5cli/examples/wasm_summary.rs`), and compare.
pub(super) fn task_wasm_test() -> R {
    let pkg = task_wasm_pkg()?;
    let gz = gzip_size(&pkg.join("h5fmt_wasm_bg.wasm"))?;
    if gz > MAX_GZIPPED {
        return Err(format!(
            "the gzipped module is {gz} bytes, over the budget of {MAX_GZIPPED} (issue 17)"
        ));
    }
    let root = repo_root();
    let mut files = Vec::new();
    hdf5_files(&root, Path::new("testdata"), &mut files)?;
    files.sort();
    if files.is_empty() {
        return Err("no HDF5 files under testdata/".into());
    }
    let native = output(
        Command::new(cargo())
            .current_dir(&root)
            .args([
                "run",
                "-q",
                "-p",
                "h5cli",
                "--example",
                "wasm_summary",
                "--",
            ])
            .args(&files),
    )?;
    let node = output(node_test(&root, "summary.mjs", &pkg).args(&files))?;
    let parse = |what: &str, text: &str| {
        serde_json::from_str::<Json>(text).map_err(|e| format!("{what} summary: {e}"))
    };
    let (native, node) = (parse("native", &native)?, parse("node", &node)?);
    let mut diffs = Vec::new();
    diff("", &native, &node, &mut diffs);
    // Differences by design, each still an error on both sides.
    diffs.retain(|d| !EXPECTED_DIFFS.iter().any(|x| d.starts_with(x)));
    let (mut objects, mut datasets) = (0, 0);
    for s in native.as_object().into_iter().flat_map(|m| m.values()) {
        for o in s["objects"]
            .as_object()
            .into_iter()
            .flat_map(|m| m.values())
        {
            objects += 1;
            datasets += usize::from(o.get("raw_sha256").is_some());
        }
    }
    if !diffs.is_empty() {
        for d in diffs.iter().take(40) {
            eprintln!("  {d}");
        }
        return Err(format!(
            "{} differences between the package under Node and the native reader",
            diffs.len()
        ));
    }
    let hep001 = super::shared_dir().join("hep001").join("files");
    // No trap on malformed input: single-byte corruptions of files with every datatype
    // class, attribute storage and chunk index among them.
    let corrupt = output(
        node_test(&root, "corrupt.mjs", &pkg)
            .args(CORRUPTED.iter().map(|f| Path::new("testdata").join(f)))
            .args(Some(hep001.join(CORRUPTED_TABLE)).filter(|p| p.exists())),
    )?;
    print!("wasm-test: {corrupt}");
    // Lazy reads over HTTP Range requests and from the file system, of a big chunked file
    // h5py writes (and reads the window of, as the oracle).
    let big = root.join("target").join("wasm-test");
    let (big_h5, big_json) = (big.join("big.h5"), big.join("big.json"));
    let script = root.join("crates/h5fmt-wasm/js/test/make_big.py");
    if !big_json.exists() || newer(&script, &big_json) {
        let venv = ensure_venv()?;
        fs::create_dir_all(&big).map_err(|e| e.to_string())?;
        run(Command::new(&venv.python)
            .arg(&script)
            .arg(&big_h5)
            .arg(&big_json))?;
    }
    let remote = output(
        node_test(&root, "remote.mjs", &pkg)
            .arg(&big_h5)
            .arg(&big_json)
            .arg(Path::new("testdata").join("datasets_v110.h5")),
    )?;
    print!("{}", remote.replace("remote: ", "wasm-test: remote: "));
    // HEP001 tables against the public conformance corpus (h5col/h5py files, numpy answers).
    let corpus = hep001;
    if corpus.is_dir() {
        let tables = output(node_test(&root, "tables.mjs", &pkg).arg(&corpus))?;
        print!("wasm-test: {tables}");
    } else {
        println!(
            "wasm-test: tables: skipped ({} not found)",
            corpus.display()
        );
    }
    check_types(&root, &pkg)?;
    // The browser branch of the loader, in Debian's headless Chromium when it is installed.
    if Path::new("/usr/bin/chromium").exists() {
        let browser = output(
            node_test(&root, "browser.mjs", &pkg)
                .arg(Path::new("testdata").join("datasets_v110.h5"))
                .arg("/chunked_gzip_shuffle"),
        )?;
        print!("wasm-test: {browser}");
        viewer_test(&root, &pkg, &big_h5, &corpus)?;
    } else {
        println!("wasm-test: browser: skipped (apt-get install chromium to run it)");
    }
    println!(
        "wasm-test: {} files, {objects} objects, {datasets} datasets' bytes: the package under Node \
         ({}) matches the native reader",
        files.len(),
        output(Command::new("node").arg("--version"))?.trim()
    );
    Ok(())
}

/// The viewer page (`js/viewer`) in headless Chromium (`js/test/viewer.mjs`) against h5py's
/// answers (`js/test/viewer_oracle.py`) and the HEP001 corpus; screenshots in
/// `target/wasm-test/viewer`.
fn viewer_test(root: &Path, pkg: &Path, big_h5: &Path, corpus: &Path) -> R {
    if !corpus.is_dir() {
        println!(
            "wasm-test: viewer: skipped ({} not found)",
            corpus.display()
        );
        return Ok(());
    }
    let out = root.join("target").join("wasm-test").join("viewer");
    fs::create_dir_all(&out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (tree_file, line) = (Path::new("testdata").join("dtypes_v110.h5"), "/random_f64");
    let oracle = output(
        Command::new(&ensure_venv()?.python)
            .current_dir(root)
            .arg(root.join("crates/h5fmt-wasm/js/test/viewer_oracle.py"))
            .arg(big_h5)
            .arg(&tree_file)
            .arg(line),
    )?;
    let oracle_json = out.join("oracle.json");
    fs::write(&oracle_json, oracle).map_err(|e| format!("{}: {e}", oracle_json.display()))?;
    let viewer = output(
        node_test(root, "viewer.mjs", pkg)
            .arg(big_h5)
            .arg(&tree_file)
            .arg(Path::new("testdata").join("datasets_v110.h5"))
            .arg(corpus)
            .arg(&oracle_json)
            .arg(&out),
    )?;
    print!("{}", viewer.replace("viewer: ", "wasm-test: viewer: "));
    println!(
        "wasm-test: viewer: screenshots in {}",
        out.strip_prefix(root).unwrap_or(&out).display()
    );
    Ok(())
}

/// `tsc --strict` on `js/test/types.ts` next to the package's `index.d.ts` (TypeScript from
/// npm under `target/wasm-tools`).
fn check_types(root: &Path, pkg: &Path) -> R {
    let npm_dir = root.join("target").join("wasm-tools").join("npm");
    let tsc = npm_dir.join("node_modules/.bin/tsc");
    if !tsc.exists() {
        fs::create_dir_all(&npm_dir).map_err(|e| e.to_string())?;
        run(Command::new("npm").current_dir(&npm_dir).args([
            "install",
            "--no-audit",
            "--no-fund",
            TYPESCRIPT,
        ]))?;
    }
    let dir = root.join("target").join("wasm-test").join("types");
    fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    for f in ["package.json", "index.d.ts", "h5fmt_wasm.d.ts"] {
        fs::copy(pkg.join(f), dir.join(f)).map_err(|e| format!("copy {f}: {e}"))?;
    }
    fs::copy(
        root.join("crates/h5fmt-wasm/js/test/types.ts"),
        dir.join("types.ts"),
    )
    .map_err(|e| format!("copy types.ts: {e}"))?;
    run(Command::new(&tsc).current_dir(&dir).args([
        "--noEmit",
        "--strict",
        "--module",
        "nodenext",
        "--moduleResolution",
        "nodenext",
        "--target",
        "es2022",
        "types.ts",
    ]))?;
    println!("wasm-test: index.d.ts: js/test/types.ts type-checks with tsc --strict");
    Ok(())
}

/// `node crates/h5fmt-wasm/js/test/SCRIPT PKG …`, run from the repository root.
fn node_test(root: &Path, script: &str, pkg: &Path) -> Command {
    let mut c = Command::new("node");
    c.current_dir(root)
        .arg(root.join("crates/h5fmt-wasm/js/test").join(script))
        .arg(pkg);
    c
}

/// Whether `a` was modified after `b`.
fn newer(a: &Path, b: &Path) -> bool {
    let t = |p: &Path| fs::metadata(p).and_then(|m| m.modified()).ok();
    t(a) > t(b)
}

/// The HDF5 files (`.h5`, `.hdf5`, `.nc`) below `dir` (relative to `root`).
fn hdf5_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> R {
    let full = root.join(dir);
    for e in fs::read_dir(&full).map_err(|e| format!("{}: {e}", full.display()))? {
        let p = dir.join(e.map_err(|e| e.to_string())?.file_name());
        if root.join(&p).is_dir() {
            hdf5_files(root, &p, out)?;
        } else if p
            .extension()
            .is_some_and(|x| x == "h5" || x == "hdf5" || x == "nc")
        {
            out.push(p);
        }
    }
    Ok(())
}

/// Where `want` (native) and `got` (Node) differ, one line each.
fn diff(at: &str, want: &Json, got: &Json, out: &mut Vec<String>) {
    match (want, got) {
        (Json::Object(w), Json::Object(g)) => {
            for (k, wv) in w {
                let sub = format!("{at}/{k}");
                match g.get(k) {
                    Some(gv) => diff(&sub, wv, gv, out),
                    None => out.push(format!("{sub}: missing under Node (native: {wv})")),
                }
            }
            for (k, gv) in g {
                if !w.contains_key(k) {
                    out.push(format!("{at}/{k}: only under Node: {gv}"));
                }
            }
        }
        (Json::Array(w), Json::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(&format!("{at}[{i}]"), wv, gv, out);
            }
        }
        _ if want == got => {}
        // 3 and 3.0: serde_json keeps them apart, JSON (and JS) does not.
        (Json::Number(w), Json::Number(g)) if w.as_f64() == g.as_f64() => {}
        _ => out.push(format!("{at}: native {want}, Node {got}")),
    }
}
