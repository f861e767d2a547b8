//! Developer tasks. `cargo xtask test` is the one test command (CI runs it);
//! `cargo xtask test-sql` covers the DataFusion crates, which CI's budget leaves out.
//!
//! Plain std Rust; shells out to `python3`, `cargo`, `apt-get` and `node`.

use std::env;
use std::ffi::OsString;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

/// Exact versions that install on the project's machines (CPython 3.11, x86_64 Linux).
/// h5py 3.16.0 bundles libhdf5 2.0.0, the reference for `h5canon.py`.
const REQUIREMENTS: &[&str] = &[
    "h5py==3.16.0",
    "numpy==2.4.6",
    "hdf5plugin==7.1.0",
    "tables==3.11.1",
    "netCDF4==1.7.5.1.post1",
    "mmh3==5.3.1",
    "pyarrow==26.0.1",
    "polars==2.1.0",
    // anndata dataframes (crates/h5cli/tests/anndata.rs); pulls pandas, scipy, zarr.
    "anndata==0.12.19",
];

/// Debian packages that give `/usr/bin/rustc` + `/usr/bin/cargo` able to build `core`/`alloc`
/// for wasm32 from source, and the wasm linker.
const WASM_APT: &[&str] = &["rustc-web", "cargo-web", "rust-web-src", "lld"];

const USAGE: &str = "usage: cargo xtask <task>

tasks:
  test            the one test command: venv, fmt, clippy, test, pure, nostd, wasm (CI runs this);
                  builds no DataFusion (h5table-datafusion is excluded, h5cli's `sql` is off)
  test-sql        clippy -D warnings and the tests of h5table-datafusion and of `h5 table sql`
                  (h5cli --features sql: the issue-15 benchmark queries vs DataFusion over the
                  Parquet copy). A first build of DataFusion takes ~30 CPU-minutes
  venv            create/reuse the Python venv at .venv (h5py, numpy, hdf5plugin, tables, netCDF4)
  gen-testdata    regenerate testdata/*.h5 with testdata/generate.py (real HDF5 software)
  bless           regenerate testdata/expected/*.canon.json with ../shared/conformance/h5canon.py
  pure            the pure-Rust std build (h5fmt without `c-codecs`): check that its build
                  tree has no C compiler crate (cc, cmake, pkg-config, bindgen) and no `-sys`
                  crate but pure-Rust ones, then run h5fmt's filter, codec and chunked-read
                  tests in it (all filters decoded and written, checked against h5py)
  nostd           build h5fmt without default features and check nothing enables `std`
  wasm            build h5fmt for wasm32-unknown-unknown (installs Debian rustc-web if missing),
                  then run the wasm smoke module under node if node is present
  wasm-pkg        the npm package of crates/h5fmt-wasm in target/wasm-pkg/h5fmt-wasm: release
                  build with Debian's toolchain, wasm-bindgen-cli of the version in its
                  Cargo.lock (installed under target/wasm-tools when missing), wasm-opt from
                  npm binaryen; prints the gzipped .wasm size
  wasm-test       wasm-pkg, then every HDF5 file of testdata/ read through the package under
                  Node and compared with the native reader, range reads, HEP001 tables, and
                  the viewer page in headless Chromium (not part of `test`)
  embedded        build xtask/embedded (h5fmt reading a dataset from an HDF5 image in flash)
                  for thumbv7em-none-eabihf with Debian's toolchain, print its flash and RAM
                  use, run it in QEMU's netduinoplus2 (Cortex-M4F) and check its result
                  against h5py (installs qemu-system-arm; not part of `test`)
  doc             cargo doc --workspace --no-deps --all-features with RUSTDOCFLAGS=-D warnings
                  (broken intra-doc links fail; builds DataFusion's docs too), then
                  cargo test --doc of h5fmt and h5table (`cargo xtask test` runs the doctests)
  crosscheck F..  diff h5canon.py's dump and ours (`h5 dump --canonical`) for each file
  soak            crash-safety soak: SIGKILL an editing FileEditor child (appends, creates,
                  deletes, resizes, attributes) many times, over the kill test's six h5py
                  templates (default, latest, fsm persist, paged), and check every file with
                  our reader, h5 check --strict, h5py and a libhdf5 r+ edit of persist files
                  (SOAK_KILLS, default 2000; `cargo xtask test` runs 300)
  bench [read|write] [NAME..]
                  read and write benchmarks, ours vs h5py on the same data (generated into
                  target/bench; read NAME: contiguous, gzip, zstd, windows, strings, each also
                  with the pure-Rust build (no `c-codecs`); write NAME:
                  contiguous, gzip, zstd, meta; default all of both). Slow: minutes.

environment:
  H5FMT_VENV      use this venv instead of <repo>/.venv
  H5FMT_PYTHON    the python used to create the venv (default: python3.11, else python3)
  XTASK_SKIP      comma-separated steps of `test` to skip (venv,fmt,clippy,test,pure,nostd,wasm)
  BENCH_REPS      timed reads/writes per benchmark after the warm-up (default 5)
  BENCH_WRITE_DIR where the write benchmarks write their files (default target/bench; a tmpfs
                  such as /dev/shm keeps disk writeback out of the times)";

mod bench_table;
mod embedded;
mod wasm_pkg;

fn main() -> ExitCode {
    let args: Vec<String> = env::args().skip(1).collect();
    let Some(task) = args.first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let rest = &args[1..];
    let result = match task.as_str() {
        "test" => task_test(),
        "test-sql" => task_test_sql(),
        "venv" => ensure_venv().map(|v| println!("venv ready: {}", v.dir.display())),
        "gen-testdata" => task_gen_testdata(),
        "bless" => task_bless(),
        "pure" => ensure_venv().and_then(|v| task_pure(Some(&v), true)),
        "nostd" => task_nostd(),
        "wasm" => task_wasm(),
        "wasm-pkg" => wasm_pkg::task_wasm_pkg().map(drop),
        "wasm-test" => wasm_pkg::task_wasm_test(),
        "embedded" => embedded::task_embedded(),
        "crosscheck" => task_crosscheck(rest),
        "doc" => task_doc(),
        "bench" if rest.first().map(String::as_str) == Some("query") => task_bench_query(),
        "bench" => task_bench(rest),
        "soak" => task_soak(),
        "-h" | "--help" | "help" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown task `{other}`\n\n{USAGE}")),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("xtask {task}: FAILED: {e}");
            ExitCode::FAILURE
        }
    }
}

type R<T = ()> = Result<T, String>;

fn repo_root() -> PathBuf {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().unwrap_or(manifest).to_path_buf()
}

fn shared_dir() -> PathBuf {
    repo_root().join("..").join("shared")
}

fn cargo() -> OsString {
    env::var_os("CARGO").unwrap_or_else(|| "cargo".into())
}

/// Run a command, echoing it; error when it cannot start or exits non-zero.
fn run(cmd: &mut Command) -> R {
    eprintln!("+ {}", show(cmd));
    let status = cmd
        .status()
        .map_err(|e| format!("cannot run `{}`: {e}", show(cmd)))?;
    if status.success() {
        Ok(())
    } else {
        Err(format!("`{}` exited with {status}", show(cmd)))
    }
}

/// Run a command and return its stdout.
fn output(cmd: &mut Command) -> R<String> {
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run `{}`: {e}", show(cmd)))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` exited with {}: {}",
            show(cmd),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn show(cmd: &Command) -> String {
    let mut s = cmd.get_program().to_string_lossy().into_owned();
    for a in cmd.get_args() {
        s.push(' ');
        s.push_str(&a.to_string_lossy());
    }
    s
}

// ---------------------------------------------------------------------------------------------
// venv

struct Venv {
    dir: PathBuf,
    python: PathBuf,
    /// `sys.base_prefix` of the venv's interpreter (PYTHONHOME for embedding).
    home: String,
    /// `<venv>/lib/pythonX.Y/site-packages`.
    site: String,
    /// Directory of `libpythonX.Y.so` (for the embedded interpreter at run time).
    libdir: String,
}

impl Venv {
    /// Environment for pyo3 builds and embedded-Python tests.
    fn apply(&self, cmd: &mut Command) {
        cmd.env("PYO3_PYTHON", &self.python)
            .env("PYTHONHOME", &self.home)
            .env("PYTHONPATH", &self.site)
            .env("H5FMT_VENV", &self.dir);
        let mut ld = OsString::from(&self.libdir);
        if let Some(old) = env::var_os("LD_LIBRARY_PATH").filter(|o| !o.is_empty()) {
            ld.push(":");
            ld.push(old);
        }
        cmd.env("LD_LIBRARY_PATH", ld);
    }
}

fn venv_dir() -> PathBuf {
    env::var_os("H5FMT_VENV")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join(".venv"))
}

fn base_python() -> OsString {
    if let Some(p) = env::var_os("H5FMT_PYTHON").filter(|p| !p.is_empty()) {
        return p;
    }
    for cand in ["python3.11", "python3"] {
        let ok = Command::new(cand)
            .args(["-c", "import venv, sys; assert sys.version_info >= (3, 9)"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false);
        if ok {
            return cand.into();
        }
    }
    "python3".into()
}

fn ensure_venv() -> R<Venv> {
    let dir = venv_dir();
    let python = dir.join("bin").join("python");
    let stamp = dir.join(".xtask-requirements");
    let want = REQUIREMENTS.join("\n") + "\n";
    let fresh = python.exists() && fs::read_to_string(&stamp).ok().as_deref() == Some(&want);
    if !fresh {
        if !python.exists() {
            run(Command::new(base_python()).arg("-m").arg("venv").arg(&dir))?;
        }
        let mut pip = Command::new(&python);
        pip.args([
            "-m",
            "pip",
            "install",
            "--disable-pip-version-check",
            "--no-input",
            "--progress-bar",
            "off",
        ])
        .args(REQUIREMENTS);
        run(&mut pip)?;
        fs::write(&stamp, &want).map_err(|e| format!("{}: {e}", stamp.display()))?;
    }
    let info = output(Command::new(&python).args([
        "-c",
        "import sys, sysconfig, site; \
         print(sys.base_prefix); \
         print(sysconfig.get_paths()['purelib']); \
         print(sysconfig.get_config_var('LIBDIR') or '')",
    ]))?;
    let mut lines = info.lines().map(str::to_owned);
    let home = lines.next().unwrap_or_default();
    let site = lines.next().unwrap_or_default();
    let libdir = lines.next().unwrap_or_default();
    let dir = fs::canonicalize(&dir).unwrap_or(dir);
    Ok(Venv {
        python: dir.join("bin").join("python"),
        dir,
        home,
        site,
        libdir,
    })
}

// ---------------------------------------------------------------------------------------------
// test data

fn task_gen_testdata() -> R {
    let v = ensure_venv()?;
    let td = repo_root().join("testdata");
    run(Command::new(&v.python)
        .arg(td.join("generate.py"))
        .arg(&td)
        .current_dir(&td))
}

/// Files in `testdata/` that are HDF5 files to dump (not the generator, docs or expectations).
fn testdata_files() -> R<Vec<PathBuf>> {
    let td = repo_root().join("testdata");
    let mut files = Vec::new();
    for e in fs::read_dir(&td).map_err(|e| format!("{}: {e}", td.display()))? {
        let p = e.map_err(|e| e.to_string())?.path();
        let ext = p.extension().and_then(|x| x.to_str()).unwrap_or("");
        if p.is_file() && matches!(ext, "h5" | "hdf5" | "nc") {
            files.push(p);
        }
    }
    files.sort();
    Ok(files)
}

fn task_bless() -> R {
    let v = ensure_venv()?;
    let h5canon = shared_dir().join("conformance").join("h5canon.py");
    if !h5canon.exists() {
        return Err(format!("{} not found", h5canon.display()));
    }
    let exp = repo_root().join("testdata").join("expected");
    fs::create_dir_all(&exp).map_err(|e| e.to_string())?;
    // Remove old expectations so renamed/removed files leave nothing behind.
    for e in fs::read_dir(&exp).map_err(|e| e.to_string())? {
        let p = e.map_err(|e| e.to_string())?.path();
        let name = p.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name.ends_with(".canon.json") || name.ends_with(".error") {
            fs::remove_file(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        }
    }
    let (mut ok, mut err) = (0, 0);
    for f in testdata_files()? {
        let name = f.file_name().and_then(|n| n.to_str()).unwrap_or_default();
        let out = Command::new(&v.python)
            .arg(&h5canon)
            .arg(&f)
            .output()
            .map_err(|e| format!("cannot run h5canon.py: {e}"))?;
        if out.status.success() {
            fs::write(exp.join(format!("{name}.canon.json")), &out.stdout)
                .map_err(|e| e.to_string())?;
            ok += 1;
        } else {
            let msg = String::from_utf8_lossy(&out.stderr);
            let line = msg.lines().last().unwrap_or("").trim();
            eprintln!("  {name}: reference cannot dump it: {line}");
            fs::write(exp.join(format!("{name}.error")), format!("{line}\n"))
                .map_err(|e| e.to_string())?;
            err += 1;
        }
    }
    println!("bless: {ok} .canon.json, {err} .error in {}", exp.display());
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// pure-Rust std build

/// Features of h5fmt's pure-Rust std build: `std` without `c-codecs`.
const PURE_FEATURES: &[&str] = &["--no-default-features", "--features", "std"];

/// Crates whose presence in a build tree means C code is compiled or linked.
const C_BUILD_CRATES: &[&str] = &["cc", "cmake", "pkg-config", "bindgen", "vcpkg"];

/// `-sys` crates that are pure Rust (no build script compiling C, no native
/// library): bzip2 ported to Rust.
const PURE_SYS_CRATES: &[&str] = &["libbz2-rs-sys"];

/// The integration tests run in the pure build: every filter decoded against
/// libhdf5/hdf5plugin vectors (`filters`), corrupt chunks (`corrupt_chunks`),
/// every chunk index × filter written by h5py and read (`chunked_matrix`),
/// typed reads of the corpus (`typed_reads`), and every filter written by us
/// and read back by h5py (`write_chunked`, `write_roundtrip`). The rest of
/// h5fmt's tests (metadata, heaps, threads: no codec) and its unit tests
/// (a second compile of the crate) run only in the default build.
// The codec tests only (CI stays under 30 minutes; `corrupt_chunks`,
// `chunked_matrix` and `typed_reads` also pass in the pure build).
const PURE_TESTS: &[&str] = &["filters", "write_chunked", "write_roundtrip"];

/// The pure-Rust build check; with `tests`, h5fmt's codec tests in that
/// build too (`cargo xtask pure`, and `cargo xtask test` unless
/// `XTASK_PURE_TESTS=0`: their second compile of h5fmt costs about two CPU-minutes).
fn task_pure(venv: Option<&Venv>, tests: bool) -> R {
    let root = repo_root();
    let tree = |krate: &str, features: &[&str]| {
        output(
            Command::new(cargo())
                .current_dir(&root)
                .args([
                    "tree",
                    "-p",
                    krate,
                    "-e",
                    "build,normal",
                    "--prefix",
                    "none",
                ])
                .args(features),
        )
    };
    for krate in ["h5fmt", "h5table"] {
        let bad = c_build_crates(&tree(krate, PURE_FEATURES)?);
        if !bad.is_empty() {
            return Err(format!(
                "{krate} --no-default-features --features std builds C: {}",
                bad.join(", ")
            ));
        }
    }
    // The check sees C builds where there are some: the default build has libdeflate's and libzstd's.
    let default = c_build_crates(&tree("h5fmt", &[])?);
    if !default.iter().any(|c| c == "cc") {
        return Err(format!(
            "expected `cc` in h5fmt's default build tree (libdeflate-sys, zstd-sys), found only {default:?}"
        ));
    }
    if !tests {
        println!(
            "pure: h5fmt and h5table without `c-codecs` build no C (pure-Rust -sys crates \
             allowed: {}); `cargo xtask pure` runs the codec tests in that build",
            PURE_SYS_CRATES.join(", ")
        );
        return Ok(());
    }
    let mut c = Command::new(cargo());
    c.current_dir(&root)
        .args(["test", "-p", "h5fmt", "--no-fail-fast"])
        .args(PURE_FEATURES);
    for t in PURE_TESTS {
        c.args(["--test", t]);
    }
    if let Some(v) = venv {
        v.apply(&mut c);
    }
    run(&mut c)?;
    println!(
        "pure: h5fmt and h5table without `c-codecs` build no C (pure-Rust -sys crates allowed: {}); \
         h5fmt's codec tests pass in that build",
        PURE_SYS_CRATES.join(", ")
    );
    Ok(())
}

/// The crates of a `cargo tree --prefix none` listing that compile or link C:
/// C build helpers, and `-sys` crates other than the pure-Rust ones.
fn c_build_crates(tree: &str) -> Vec<String> {
    let mut bad: Vec<String> = tree
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| {
            C_BUILD_CRATES.contains(name)
                || (name.ends_with("-sys") && !PURE_SYS_CRATES.contains(name))
        })
        .map(str::to_string)
        .collect();
    bad.sort_unstable();
    bad.dedup();
    bad
}

/// The documentation: every crate with every feature, warnings (broken
/// links included) as errors; then the doctests.
fn task_doc() -> R {
    let root = repo_root();
    run(Command::new(cargo())
        .current_dir(&root)
        .env("RUSTDOCFLAGS", "-D warnings")
        .args(["doc", "--workspace", "--no-deps", "--all-features"]))?;
    run(Command::new(cargo()).current_dir(&root).args([
        "test",
        "-p",
        "h5fmt",
        "-p",
        "h5table",
        "--features",
        "h5fmt/ndarray,h5fmt/derive,h5table/arrow",
        "--doc",
    ]))
}

// ---------------------------------------------------------------------------------------------
// no_std and wasm

fn task_nostd() -> R {
    let root = repo_root();
    // `check`, not `build`: whether the crates compile without `std` is a type-check
    // question (the wasm step links h5fmt's no_std build for real), and code generation
    // of three feature sets cost CI minutes.
    run(Command::new(cargo()).current_dir(&root).args([
        "check",
        "-p",
        "h5fmt",
        "--no-default-features",
    ]))?;
    // The derive macro's generated code names only `::h5fmt` and `core` paths.
    run(Command::new(cargo()).current_dir(&root).args([
        "check",
        "-p",
        "h5fmt",
        "--no-default-features",
        "--features",
        "derive",
    ]))?;
    // HEP001 tables are read without std too (WASM pages, embedded consumers).
    run(Command::new(cargo()).current_dir(&root).args([
        "check",
        "-p",
        "h5table",
        "--no-default-features",
    ]))?;
    for krate in ["h5fmt", "h5table"] {
        check_no_std_tree(&root, krate)?;
    }
    println!("nostd: h5fmt type-checks without default features (also with `derive`), and so does h5table; no `std` feature in their trees");
    Ok(())
}

fn check_no_std_tree(root: &Path, krate: &str) -> R {
    let tree = output(Command::new(cargo()).current_dir(root).args([
        "tree",
        "-p",
        krate,
        "--no-default-features",
        "-e",
        "features,normal",
        "--prefix",
        "none",
        "--target",
        "all",
    ]))?;
    let bad: Vec<&str> = tree
        .lines()
        .filter(|l| l.contains("feature \"std\""))
        .collect();
    if !bad.is_empty() {
        let mut uniq = bad.clone();
        uniq.sort_unstable();
        uniq.dedup();
        return Err(format!(
            "{krate}: `std` is enabled without default features:\n  {}",
            uniq.join("\n  ")
        ));
    }
    Ok(())
}

/// Install Debian `packages` when `probe` is not on PATH.
fn ensure_apt(probe: &str, packages: &[&str]) -> R {
    if Command::new(probe).arg("--version").output().is_ok() {
        return Ok(());
    }
    eprintln!("installing Debian {} (for {probe})", packages.join(" "));
    run(Command::new("apt-get")
        .arg("update")
        .env("DEBIAN_FRONTEND", "noninteractive"))?;
    run(Command::new("apt-get")
        .args(["install", "-y", "--no-install-recommends"])
        .args(packages)
        .env("DEBIAN_FRONTEND", "noninteractive"))
}

fn have_wasm_toolchain() -> bool {
    Path::new("/usr/bin/rustc").exists()
        && Path::new("/usr/bin/cargo").exists()
        && (Path::new("/usr/bin/wasm-ld").exists() || Path::new("/usr/bin/rust-lld").exists())
        && output(Command::new("/usr/bin/rustc").args(["--print", "sysroot"]))
            .map(|s| {
                Path::new(s.trim())
                    .join("lib/rustlib/src/rust/library/core")
                    .exists()
            })
            .unwrap_or(false)
}

fn ensure_wasm_toolchain() -> R {
    if have_wasm_toolchain() {
        return Ok(());
    }
    eprintln!("wasm: installing Debian {}", WASM_APT.join(" "));
    let mut update = Command::new("apt-get");
    update
        .arg("update")
        .env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut update)?;
    let mut install = Command::new("apt-get");
    install
        .args(["install", "-y", "--no-install-recommends"])
        .args(WASM_APT)
        .env("DEBIAN_FRONTEND", "noninteractive");
    run(&mut install)?;
    if have_wasm_toolchain() {
        Ok(())
    } else {
        Err("Debian rustc-web/cargo-web/rust-web-src/lld installed but not usable".into())
    }
}

/// `cargo build --release -Z build-std=core,alloc --target TARGET --target-dir DIR` of the
/// crate at `dir` with Debian's toolchain.
fn debian_build_std(dir: &Path, target: &str, target_dir: &Path) -> Command {
    let mut c = debian_cargo(dir);
    c.args([
        "build",
        "--release",
        "-Z",
        "build-std=core,alloc",
        "--target",
        target,
    ])
    .arg("--target-dir")
    .arg(target_dir);
    c
}

/// A `/usr/bin/cargo` command with the environment of the outer (rustup) cargo removed.
fn debian_cargo(root: &Path) -> Command {
    let mut c = Command::new("/usr/bin/cargo");
    c.current_dir(root)
        .env("RUSTC", "/usr/bin/rustc")
        .env("RUSTC_BOOTSTRAP", "1")
        .env_remove("RUSTUP_TOOLCHAIN")
        .env_remove("RUSTDOC")
        .env_remove("RUSTC_WRAPPER")
        .env_remove("RUSTC_WORKSPACE_WRAPPER")
        .env_remove("CARGO")
        .env_remove("CARGO_TARGET_DIR")
        .env_remove("RUSTFLAGS")
        .env_remove("CARGO_ENCODED_RUSTFLAGS");
    c
}

fn task_wasm() -> R {
    ensure_wasm_toolchain()?;
    let root = repo_root();
    eprintln!(
        "wasm: {} / {}",
        output(Command::new("/usr/bin/rustc").arg("--version"))?.trim(),
        output(Command::new("/usr/bin/cargo").arg("--version"))?.trim()
    );
    // The smoke cdylib links h5fmt's no_std build for wasm32 (release), so when it runs, a
    // separate debug build of h5fmt alone (core and alloc compiled a second time) adds nothing.
    if wasm_smoke(&root)? {
        println!(
            "wasm: h5fmt (no_std + alloc) builds for wasm32-unknown-unknown and runs under node"
        );
        return Ok(());
    }
    run(debian_cargo(&root).args([
        "build",
        "-Z",
        "build-std=core,alloc",
        "--target",
        "wasm32-unknown-unknown",
        "-p",
        "h5fmt",
        "--no-default-features",
        "--target-dir",
        "target/wasm",
    ]))?;
    println!("wasm: h5fmt (no_std + alloc) builds for wasm32-unknown-unknown");
    Ok(())
}

/// The linker of wasm32 modules: Debian's `wasm-ld` (package lld), else rustc's own.
fn wasm_linker() -> &'static str {
    if Path::new("/usr/bin/wasm-ld").exists() {
        "/usr/bin/wasm-ld"
    } else {
        "rust-lld"
    }
}

/// Build `xtask/wasm-smoke` (a cdylib over h5fmt) and run it under node, if both are there;
/// whether it ran.
fn wasm_smoke(root: &Path) -> Result<bool, String> {
    let smoke = root.join("xtask").join("wasm-smoke");
    if !smoke.join("Cargo.toml").exists() {
        return Ok(false);
    }
    let Ok(node) = output(Command::new("node").arg("--version")) else {
        println!("wasm smoke: skipped (no node)");
        return Ok(false);
    };
    run(debian_build_std(
        &smoke,
        "wasm32-unknown-unknown",
        &root.join("target").join("wasm"),
    )
    .env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER", wasm_linker()))?;
    let wasm = root.join("target/wasm/wasm32-unknown-unknown/release/h5fmt_wasm_smoke.wasm");
    let sample = root.join("testdata").join("wasm_smoke.h5");
    eprintln!("wasm smoke: node {}", node.trim());
    run(Command::new("node")
        .arg(smoke.join("run.mjs"))
        .arg(&wasm)
        .arg(&sample))?;
    Ok(true)
}

// ---------------------------------------------------------------------------------------------
// crosscheck

fn task_crosscheck(files: &[String]) -> R {
    if files.is_empty() {
        return Err("usage: cargo xtask crosscheck FILE...".into());
    }
    let v = ensure_venv()?;
    let root = repo_root();
    let h5canon = shared_dir().join("conformance").join("h5canon.py");
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-q",
        "-p",
        "h5cli",
    ]))?;
    let h5 = root.join("target").join("release").join("h5");
    let tmp = env::temp_dir().join(format!("xtask-crosscheck-{}", std::process::id()));
    fs::create_dir_all(&tmp).map_err(|e| e.to_string())?;
    let mut bad = 0;
    for f in files {
        let reference = Command::new(&v.python)
            .arg(&h5canon)
            .arg("--compact")
            .arg(f)
            .output()
            .map_err(|e| e.to_string())?;
        let ours = Command::new(&h5)
            .args(["dump", "--canonical"])
            .arg(f)
            .output()
            .map_err(|e| e.to_string())?;
        let (a, b) = (tmp.join("ref.json"), tmp.join("ours.json"));
        fs::write(&a, &reference.stdout).map_err(|e| e.to_string())?;
        fs::write(&b, &ours.stdout).map_err(|e| e.to_string())?;
        let verdict = match (reference.status.success(), ours.status.success()) {
            (false, false) => "both fail".to_string(),
            (false, true) => format!(
                "reference fails ({}), ours succeeds",
                String::from_utf8_lossy(&reference.stderr).trim()
            ),
            (true, false) => format!(
                "ours fails: {}",
                String::from_utf8_lossy(&ours.stderr).trim()
            ),
            (true, true) => {
                let diff = output(
                    Command::new(&v.python)
                        .arg("-c")
                        .arg(JSON_DIFF_PY)
                        .arg(&a)
                        .arg(&b),
                )?;
                diff.trim().to_string()
            }
        };
        if verdict != "equal" {
            bad += 1;
        }
        println!("{f}: {verdict}");
    }
    let _ = fs::remove_dir_all(&tmp);
    println!("crosscheck: {} equal, {bad} differ", files.len() - bad);
    if bad == 0 {
        Ok(())
    } else {
        Err(format!("{bad} file(s) differ"))
    }
}

const JSON_DIFF_PY: &str = r#"
import json, sys
a = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
def diff(x, y, path):
    if type(x) != type(y):
        return f"{path or '/'}: expected {json.dumps(x)[:200]}, got {json.dumps(y)[:200]}"
    if isinstance(x, dict):
        for k in sorted(set(x) | set(y)):
            if k not in y: return f"{path}/{k}: missing"
            if k not in x: return f"{path}/{k}: unexpected"
            d = diff(x[k], y[k], f"{path}/{k}")
            if d: return d
        return None
    if isinstance(x, list):
        for i, (p, q) in enumerate(zip(x, y)):
            d = diff(p, q, f"{path}/{i}")
            if d: return d
        if len(x) != len(y): return f"{path}: expected {len(x)} items, got {len(y)}"
        return None
    return None if x == y else f"{path or '/'}: expected {json.dumps(x)[:200]}, got {json.dumps(y)[:200]}"
print(diff(a, b, "") or "equal")
"#;

// ---------------------------------------------------------------------------------------------
// test

fn summaries(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "summary"))
        .collect();
    v.sort();
    v
}

/// The DataFusion crate: left to `cargo xtask test-sql` (its first build alone takes ~30
/// CPU-minutes, CI's budget for everything).
const SQL_CRATE: &str = "h5table-datafusion";

/// `cargo xtask test-sql`: clippy and the tests of everything that builds DataFusion.
fn task_test_sql() -> R {
    let root = repo_root();
    let venv = ensure_venv()?;
    let total = Instant::now();
    // One feature set for every command below, so that DataFusion is built once.
    let sql = |what: &[&str]| {
        let mut c = Command::new(cargo());
        c.current_dir(&root).args(what);
        venv.apply(&mut c);
        c
    };
    run(&mut sql(&[
        "clippy",
        "-p",
        SQL_CRATE,
        "-p",
        "h5cli",
        "--all-targets",
        "--features",
        "h5cli/sql",
        "--",
        "-D",
        "warnings",
    ]))?;
    // Both packages in each command: h5cli's dependencies (serde_json's features, parquet)
    // unify into DataFusion's, and the crate's tests alone would build a second DataFusion.
    run(&mut sql(&[
        "test",
        "-p",
        SQL_CRATE,
        "-p",
        "h5cli",
        "--features",
        "h5cli/sql",
        "--no-fail-fast",
        "--lib",
        // h5table-datafusion's tests and h5cli's `h5 table sql` tests (the rest of h5cli's
        // run in `cargo xtask test`).
        "--test",
        "corpus",
        "--test",
        "table_sql",
    ]))?;
    run(&mut sql(&[
        "test",
        "-p",
        SQL_CRATE,
        "-p",
        "h5cli",
        "--features",
        "h5cli/sql",
        "--doc",
    ]))?;
    println!("test-sql: ok ({:.1}s)", total.elapsed().as_secs_f64());
    Ok(())
}

fn task_test() -> R {
    let root = repo_root();
    let skip: Vec<String> = env::var("XTASK_SKIP")
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect();
    let total = Instant::now();
    let mut results: Vec<(&str, Option<R>, Duration)> = Vec::new();
    let mut venv: Option<Venv> = None;

    let mut step = |name: &'static str, f: &mut dyn FnMut() -> R| {
        if skip.iter().any(|s| s == name) {
            println!("\n==> {name}: skipped (XTASK_SKIP)");
            results.push((name, None, Duration::ZERO));
            return;
        }
        println!("\n==> {name}");
        let t = Instant::now();
        let r = f();
        let d = t.elapsed();
        match &r {
            Ok(()) => println!("<== {name}: ok ({:.1}s)", d.as_secs_f64()),
            Err(e) => println!("<== {name}: FAILED ({:.1}s): {e}", d.as_secs_f64()),
        }
        results.push((name, Some(r), d));
    };

    step("venv", &mut || {
        venv = Some(ensure_venv()?);
        Ok(())
    });
    let with_venv = |cmd: &mut Command| {
        if let Some(v) = &venv {
            v.apply(cmd);
        }
    };
    step("fmt", &mut || {
        run(Command::new(cargo())
            .current_dir(&root)
            .args(["fmt", "--all", "--", "--check"]))
    });
    step("clippy", &mut || {
        let mut c = Command::new(cargo());
        c.current_dir(&root).args([
            "clippy",
            "--workspace",
            "--exclude",
            SQL_CRATE,
            "--all-targets",
            "--features",
            "h5fmt/ndarray,h5fmt/derive",
            "--",
            "-D",
            "warnings",
        ]);
        with_venv(&mut c);
        run(&mut c)
    });
    step("test", &mut || {
        // `h5 diff` is checked against Debian's h5diff (crates/h5cli/tests/cli.rs).
        ensure_apt("h5diff", &["hdf5-tools"])?;
        let Some(v) = &venv else {
            return Err("no venv: the Python cross-checks cannot run".into());
        };
        let tmp = root.join("target").join("tmp");
        for f in summaries(&tmp) {
            let _ = fs::remove_file(f);
        }
        let mut c = Command::new(cargo());
        c.current_dir(&root).args([
            "test",
            "--workspace",
            "--exclude",
            SQL_CRATE,
            "--no-fail-fast",
            "--features",
            "h5fmt/ndarray,h5fmt/derive",
        ]);
        v.apply(&mut c);
        let r = run(&mut c);
        // Summaries the integration tests leave (libtest hides passing tests' output).
        for f in summaries(&tmp) {
            if let Ok(t) = fs::read_to_string(&f) {
                print!("{t}");
            }
        }
        r
    });
    step("pure", &mut || {
        let tests = !std::env::var("XTASK_PURE_TESTS").is_ok_and(|v| v == "0");
        task_pure(venv.as_ref(), tests)
    });
    step("nostd", &mut task_nostd);
    step("wasm", &mut task_wasm);

    println!(
        "\n==> summary ({:.1}s total)",
        total.elapsed().as_secs_f64()
    );
    let (mut passed, mut failed, mut skipped) = (0, 0, 0);
    for (name, r, d) in &results {
        let what = match r {
            None => {
                skipped += 1;
                "skipped".to_string()
            }
            Some(Ok(())) => {
                passed += 1;
                "ok".to_string()
            }
            Some(Err(e)) => {
                failed += 1;
                format!("FAILED: {}", e.lines().next().unwrap_or(""))
            }
        };
        println!("  {name:<7} {:>7.1}s  {what}", d.as_secs_f64());
    }
    println!("steps: {passed} passed, {failed} failed, {skipped} skipped");
    if failed == 0 {
        Ok(())
    } else {
        Err(format!("{failed} step(s) failed"))
    }
}

// ---------------------------------------------------------------------------------------------
// bench

/// (name, file, dataset, mode) of each benchmark.
const BENCHES: &[(&str, &str, &str, &str)] = &[
    ("contiguous", "contiguous.h5", "data", "full"),
    ("gzip", "gzip.h5", "data", "full"),
    ("zstd", "zstd.h5", "data", "full"),
    ("windows", "windows.h5", "image", "windows"),
    ("strings", "strings.h5", "strings", "strings"),
];

/// Run two timing harnesses (started with REPS `-`: a warm-up, `ready`, then
/// per line of stdin an untimed and a timed run) in alternation: each warms
/// up in turn, then `reps` rounds each time one run of both, the side going
/// first alternating. The machine's speed drifts over seconds (shared
/// host), so timing all of one side's runs and then all of the other's
/// skews the ratio; alternating exposes both to the same drift. The untimed
/// run before each timed one keeps the pause of the other side's run out
/// of the time (see `timed_runs` in h5fmt's examples/common). Returns each
/// side's output lines.
fn alternate(ours: &mut Command, theirs: &mut Command, reps: usize) -> R<(String, String)> {
    let mut outs = alternate_all(&mut [ours, theirs], reps)?.into_iter();
    match (outs.next(), outs.next()) {
        (Some(a), Some(b)) => Ok((a, b)),
        _ => Err("alternate: missing output".into()),
    }
}

/// [`alternate`] for any number of sides: round k starts with side k mod n
/// and runs the others in order after it.
fn alternate_all(cmds: &mut [&mut Command], reps: usize) -> R<Vec<String>> {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Child, ChildStdout, Stdio};
    struct Side {
        child: Child,
        lines: BufReader<ChildStdout>,
        what: String,
        out: String,
    }
    fn next_line(s: &mut Side) -> R<String> {
        let mut l = String::new();
        match s.lines.read_line(&mut l) {
            Ok(n) if n > 0 => Ok(l),
            Ok(_) => Err(format!("{}: ended early", s.what)),
            Err(e) => Err(format!("{}: {e}", s.what)),
        }
    }
    fn start(cmd: &mut Command) -> R<Side> {
        let what = show(cmd);
        eprintln!("+ {what}");
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{what}: {e}"))?;
        let stdout = child.stdout.take().ok_or("no stdout")?;
        let mut s = Side {
            child,
            lines: BufReader::new(stdout),
            what,
            out: String::new(),
        };
        // Warm-up done when it says so; the other side starts after.
        while next_line(&mut s)?.trim() != "ready" {}
        Ok(s)
    }
    let mut sides = Vec::with_capacity(cmds.len());
    for cmd in cmds.iter_mut() {
        sides.push(start(cmd)?);
    }
    let n = sides.len();
    for round in 0..reps {
        for k in (0..n).map(|i| (round + i) % n) {
            let s = &mut sides[k];
            let stdin = s.child.stdin.as_mut().ok_or("no stdin")?;
            stdin
                .write_all(b"go\n")
                .and_then(|()| stdin.flush())
                .map_err(|e| format!("{}: {e}", s.what))?;
            let l = next_line(s)?;
            s.out.push_str(&l);
        }
    }
    for s in &mut sides {
        drop(s.child.stdin.take());
        let st = s.child.wait().map_err(|e| format!("{}: {e}", s.what))?;
        if !st.success() {
            return Err(format!("{}: {st}", s.what));
        }
    }
    Ok(sides.into_iter().map(|s| s.out).collect())
}

/// Times of the `seconds bytes` lines a timing run prints; the byte count of the last.
fn parse_times(out: &str) -> R<(Vec<f64>, u64)> {
    let mut times = Vec::new();
    let mut bytes = 0;
    for l in out.lines() {
        let mut it = l.split_whitespace();
        let (Some(t), Some(b)) = (it.next(), it.next()) else {
            continue;
        };
        times.push(t.parse::<f64>().map_err(|e| format!("`{l}`: {e}"))?);
        bytes = b.parse::<u64>().map_err(|e| format!("`{l}`: {e}"))?;
    }
    if times.is_empty() {
        return Err(format!("no timings in output:\n{out}"));
    }
    Ok((times, bytes))
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        (s[n / 2 - 1] + s[n / 2]) / 2.0
    }
}

fn task_soak() -> R {
    let root = repo_root();
    let venv = ensure_venv()?;
    let kills = env::var("SOAK_KILLS").unwrap_or_else(|_| "2000".into());
    let mut cmd = Command::new(cargo());
    cmd.current_dir(&root)
        .args([
            "test",
            "-p",
            "h5cli",
            "--test",
            "edit",
            "kill_test",
            "--",
            "--exact",
            "--nocapture",
        ])
        .env("H5_EDIT_KILLS", kills);
    venv.apply(&mut cmd);
    run(&mut cmd)
}

/// HEP001 query benchmark: a 10-million-row table, six queries, ours (with and
/// without search indexes) against polars on a Parquet copy, same run.
fn task_bench_query() -> R {
    let root = repo_root();
    let v = ensure_venv()?;
    let dir = root.join("target").join("bench").join("query");
    let script = root.join("xtask").join("bench").join("table_query.py");
    let reps = env::var("BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5usize);
    let rows = env::var("BENCH_ROWS").unwrap_or_else(|_| "10000000".into());
    let meta = dir.join("meta.json");
    let stale = fs::read_to_string(&meta)
        .ok()
        .is_none_or(|m| !m.contains(&format!("\"nrows\": {rows}")) || !m.contains("\"layout\": 4"));
    if stale {
        println!("generating {rows} rows in {} …", dir.display());
        run(Command::new(&v.python)
            .arg(&script)
            .arg("gen")
            .arg(&dir)
            .arg(&rows))?;
    }
    let qfile = dir.join("queries.json");
    let q = output(
        Command::new(&v.python)
            .arg(&script)
            .arg("queries")
            .arg(&dir),
    )?;
    fs::write(&qfile, q).map_err(|e| e.to_string())?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "h5table",
        "--example",
        "bench_query",
    ]))?;
    let exe = root.join("target/release/examples/bench_query");
    // Our indexes, built by h5table into copies of the tables (timed).
    println!(
        "\nindex builds ({rows} rows; a column's indexes built together; sizes in MB, logical):"
    );
    println!(
        "{:<6} {:<34} {:>8} {:>10} {:>10}",
        "data", "index", "secs", "index MB", "column MB"
    );
    for var in ["t", "tz"] {
        let out = output(
            Command::new(&exe)
                .arg("build")
                .arg(dir.join(format!("{var}.h5")))
                .arg(dir.join(format!("{var}_idx.h5")))
                .arg("/t")
                .env("BENCH_ALL_KINDS", "label"),
        )?;
        let mut total = 0.0;
        for l in out.lines() {
            let j: serde_json::Value = serde_json::from_str(l).map_err(|e| e.to_string())?;
            let t = j["secs"].as_f64().unwrap_or(f64::NAN);
            if let Some(b) = j["build"].as_str() {
                total += t;
                println!("{var:<6} {b:<34} {t:>8.3}");
            } else if let Some(c) = j["build_all_kinds"].as_str() {
                println!(
                    "{var:<6} {:<34} {t:>8.3}",
                    format!("{c}: all four kinds, rebuilt")
                );
            } else if let Some(n) = j["size"].as_str() {
                println!(
                    "{var:<6} {n:<34} {:>8} {:>10.1} {:>10.1}",
                    "",
                    j["index_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6,
                    j["column_bytes"].as_f64().unwrap_or(f64::NAN) / 1e6
                );
            }
            if j["build_all_kinds"].is_null() && j["size"].is_null() && j["build"].is_null() {
                return Err(format!("bench_query build: unexpected line {l}"));
            }
        }
        println!("{var:<6} {:<34} {total:>8.3}", "the six (first builds)");
    }
    let polars = output(
        Command::new(&v.python)
            .arg(&script)
            .arg("polars")
            .arg(&dir)
            .arg(reps.to_string()),
    )?;
    let polars: serde_json::Value = serde_json::from_str(&polars).map_err(|e| e.to_string())?;
    println!(
        "\n{:<6} {:<6} {:>10} {:>10} {:>8} {:>10} {:>8}  results",
        "data", "query", "polars s", "ignore s", "ratio", "trust s", "ratio"
    );
    for var in ["t", "tz"] {
        let mut ours: std::collections::BTreeMap<(String, String), (f64, f64)> = Default::default();
        for (policy, file) in [
            ("ignore", format!("{var}.h5")),
            ("trust", format!("{var}_idx.h5")),
        ] {
            let out = output(
                Command::new(&exe)
                    .arg(dir.join(file))
                    .arg("/t")
                    .arg(&qfile)
                    .arg(reps.to_string())
                    .arg(policy),
            )?;
            for l in out.lines() {
                let j: serde_json::Value = serde_json::from_str(l).map_err(|e| e.to_string())?;
                ours.insert(
                    (
                        j["query"].as_str().unwrap_or("").into(),
                        j["policy"].as_str().unwrap_or("").into(),
                    ),
                    (
                        j["secs"].as_f64().unwrap_or(f64::NAN),
                        j["result"].as_f64().unwrap_or(f64::NAN),
                    ),
                );
            }
        }
        for qn in ["Q1", "Q2", "Q3", "Q4", "Q5", "Q6"] {
            let p = &polars[format!("{var}/{qn}")];
            let ps = p["secs"].as_f64().unwrap_or(f64::NAN);
            let pr = p["result"].as_f64().unwrap_or(f64::NAN);
            let (is, ir) = ours
                .get(&(qn.into(), "ignore".into()))
                .copied()
                .unwrap_or((f64::NAN, f64::NAN));
            let (ts, tr) = ours
                .get(&(qn.into(), "trust".into()))
                .copied()
                .unwrap_or((f64::NAN, f64::NAN));
            let agree = |x: f64| {
                (x - pr).abs() <= 1e-6 * pr.abs().max(1.0) * if qn == "Q3" { 100.0 } else { 1.0 }
            };
            println!(
                "{var:<6} {qn:<6} {ps:>10.4} {is:>10.4} {:>7.2}x {ts:>10.4} {:>7.2}x  {}",
                ps / is,
                ps / ts,
                if agree(ir) && agree(tr) {
                    "equal".to_string()
                } else {
                    format!("DIFFER: polars {pr} ours {ir} / {tr}")
                }
            );
        }
    }
    println!("(ratio = polars time / our time: > 1 means we are faster; median of {reps} after a warm-up)");
    Ok(())
}

fn task_bench(args: &[String]) -> R {
    let (read, write, names) = match args.first().map(String::as_str) {
        Some("table") => return bench_table::task_bench_table(&args[1..]),
        Some("read") => (true, false, &args[1..]),
        Some("write") => (false, true, &args[1..]),
        _ => (true, true, args),
    };
    if read {
        task_bench_read(names)?;
    }
    if write {
        task_bench_write(names)?;
    }
    Ok(())
}

/// Write benchmarks: (name, mode of `bench_write` / `bench.py write`).
const WRITE_BENCHES: &[&str] = &["contiguous", "gzip", "zstd", "meta", "append"];

fn task_bench_write(names: &[String]) -> R {
    let root = repo_root();
    let v = ensure_venv()?;
    let dir = root.join("target").join("bench");
    let script = root.join("xtask").join("bench").join("bench.py");
    let reps: usize = env::var("BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    run(Command::new(&v.python)
        .arg(&script)
        .arg("gen")
        .arg(&dir)
        .arg("write"))?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "h5fmt",
        "--example",
        "bench_write",
    ]))?;
    let ours_bin = root
        .join("target")
        .join("release")
        .join("examples")
        .join("bench_write");
    let input = dir.join("series.f64");
    // Where the written files go: BENCH_WRITE_DIR (e.g. a tmpfs such as
    // /dev/shm, so that disk writeback of other sessions does not dominate
    // the times), else target/bench.
    let out_dir = env::var_os("BENCH_WRITE_DIR").map_or_else(|| dir.clone(), PathBuf::from);
    fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
    let input_mb = fs::metadata(&input).map(|m| m.len()).unwrap_or(0) as f64 / 1e6;
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut rows = Vec::new();
    for &mode in WRITE_BENCHES {
        if !names.is_empty() && !names.iter().any(|n| n == mode) {
            continue;
        }
        let extra: Vec<&Path> = if mode == "meta" || mode == "append" {
            vec![]
        } else {
            vec![input.as_path()]
        };
        let out_ours = out_dir.join(format!("written-ours-{mode}.h5"));
        let out_py = out_dir.join(format!("written-h5py-{mode}.h5"));
        let mut ours = Command::new(&ours_bin);
        ours.arg(mode).arg(&out_ours).arg("-").args(&extra);
        let mut py = Command::new(&v.python);
        py.arg(&script)
            .arg("write")
            .arg(mode)
            .arg(&out_py)
            .arg("-")
            .args(&extra);
        let (log_ours, log_py) = alternate(&mut ours, &mut py, reps)?;
        let t_ours = parse_write_times(&log_ours)?;
        let t_py = parse_write_times(&log_py)?;
        // Our file must hold what was written (read back by h5py).
        run(Command::new(&v.python)
            .arg(&script)
            .arg("check")
            .arg(&out_ours)
            .arg(mode)
            .args(&extra))?;
        let col = |t: &[(f64, u64, f64)], k: usize| -> Vec<f64> {
            t.iter().map(|r| if k == 0 { r.0 } else { r.2 }).collect()
        };
        let (wo, wp) = (median(&col(&t_ours, 0)), median(&col(&t_py, 0)));
        let (co, cp) = (median(&col(&t_ours, 1)), median(&col(&t_py, 1)));
        let size = |t: &[(f64, u64, f64)]| t.last().map_or(0, |r| r.1) as f64 / 1e6;
        eprintln!("  {mode}: ours {t_ours:?}, h5py {t_py:?}");
        rows.push(format!(
            "| {mode:<10} | {:>8.1} | {:>8.1} | {:>8.1} | {:>9.3} | {:>9.3} | {:>8.2}x | {:>8.3} | {:>8.3} | {:>8.2}x |",
            match mode {
                "meta" => 0.0,
                "append" => 20.0, // 10^6 rows of 20 bytes
                _ => input_mb,
            },
            size(&t_ours),
            size(&t_py),
            wo,
            wp,
            wp / wo,
            co,
            cp,
            cp / co,
        ));
    }
    println!(
        "\nwrite benchmarks: {cpus} CPUs; median of {reps} writes after a warm-up, alternating ours and h5py (create, write, close; no fsync on either side)\n"
    );
    println!(
        "| benchmark  | data MB  | ours MB  | h5py MB  | ours (s)  | h5py (s)  | speedup  | ours CPU | h5py CPU | CPU ratio |"
    );
    println!(
        "|------------|---------:|---------:|---------:|----------:|----------:|---------:|---------:|---------:|----------:|"
    );
    for r in rows {
        println!("{r}");
    }
    Ok(())
}

/// `seconds bytes cpu_seconds` lines of a write timing run.
fn parse_write_times(out: &str) -> R<Vec<(f64, u64, f64)>> {
    let mut v = Vec::new();
    for l in out.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        let [t, b, c] = f.as_slice() else { continue };
        let e = |x: String| format!("`{l}`: {x}");
        v.push((
            t.parse::<f64>().map_err(|x| e(x.to_string()))?,
            b.parse::<u64>().map_err(|x| e(x.to_string()))?,
            c.parse::<f64>().map_err(|x| e(x.to_string()))?,
        ));
    }
    if v.is_empty() {
        return Err(format!("no timings in output:\n{out}"));
    }
    Ok(v)
}

fn task_bench_read(names: &[String]) -> R {
    let root = repo_root();
    let v = ensure_venv()?;
    let dir = root.join("target").join("bench");
    let script = root.join("xtask").join("bench").join("bench.py");
    let reps: usize = env::var("BENCH_REPS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(5);
    run(Command::new(&v.python).arg(&script).arg("gen").arg(&dir))?;
    let ours_bin = root
        .join("target")
        .join("release")
        .join("examples")
        .join("bench_read");
    // The pure-Rust build (no `c-codecs`) first, kept under another name:
    // both builds uplift the example to the same path.
    run(Command::new(cargo())
        .current_dir(&root)
        .args([
            "build",
            "--release",
            "-p",
            "h5fmt",
            "--example",
            "bench_read",
        ])
        .args(PURE_FEATURES))?;
    let pure_bin = dir.join("bench_read_pure");
    fs::copy(&ours_bin, &pure_bin).map_err(|e| format!("{}: {e}", pure_bin.display()))?;
    run(Command::new(cargo()).current_dir(&root).args([
        "build",
        "--release",
        "-p",
        "h5fmt",
        "--example",
        "bench_read",
    ]))?;
    let versions = output(Command::new(&v.python).args([
        "-c",
        "import h5py, hdf5plugin, numpy; \
         print(f'h5py {h5py.__version__}, libhdf5 {h5py.version.hdf5_version}, \
         hdf5plugin {hdf5plugin.version}, numpy {numpy.__version__}')",
    ]))?;
    let rustc = output(Command::new("rustc").arg("--version")).unwrap_or_default();
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let windows = dir.join("windows.txt");
    let mut rows = Vec::new();
    for &(name, file, dset, mode) in BENCHES {
        if !names.is_empty() && !names.iter().any(|n| n == name) {
            continue;
        }
        let path = dir.join(file);
        let extra: Vec<&Path> = if mode == "windows" {
            vec![windows.as_path()]
        } else {
            vec![]
        };
        let mut ours = Command::new(&ours_bin);
        ours.arg(&path).arg(dset).arg(mode).arg("-").args(&extra);
        let mut raw = Command::new(&ours_bin);
        raw.arg(&path)
            .arg(dset)
            .arg(format!("{mode}-raw"))
            .arg("-")
            .args(&extra);
        let mut py = Command::new(&v.python);
        py.arg(&script)
            .arg("time")
            .arg(&path)
            .arg(dset)
            .arg(mode)
            .arg("-")
            .args(&extra);
        let mut pure = Command::new(&pure_bin);
        pure.arg(&path).arg(dset).arg(mode).arg("-").args(&extra);
        let logs = alternate_all(&mut [&mut ours, &mut raw, &mut py, &mut pure], reps)?;
        let [log_ours, log_raw, log_py, log_pure] = &logs[..] else {
            return Err("bench: missing output".into());
        };
        let (t_ours, b_ours) = parse_times(log_ours)?;
        let (t_raw, b_raw) = parse_times(log_raw)?;
        let (t_py, b_py) = parse_times(log_py)?;
        let (t_pure, b_pure) = parse_times(log_pure)?;
        if mode != "strings" && (b_ours != b_py || b_raw != b_py || b_pure != b_py) {
            return Err(format!(
                "{name}: we read {b_ours} bytes typed, {b_raw} raw and {b_pure} typed with \
                 the pure-Rust codecs, h5py {b_py}"
            ));
        }
        let (mo, mr, mp, mu) = (
            median(&t_ours),
            median(&t_raw),
            median(&t_py),
            median(&t_pure),
        );
        let mb = if mode == "strings" {
            fs::metadata(&path).map(|m| m.len()).unwrap_or(0)
        } else {
            b_ours
        } as f64
            / 1e6;
        eprintln!("  {name}: typed {t_ours:?}, raw {t_raw:?}, h5py {t_py:?}, pure {t_pure:?}");
        rows.push(format!(
            "| {name:<10} | {:>8.1} | {:>9.3} | {:>9.3} | {:>9.3} | {:>9.3} | {:>9.2} | {:>8.2}x | {:>9.2}x | {:>9.0} | {:>9.0} |",
            mb,
            mo,
            mr,
            mu,
            mp,
            mo / mr,
            mp / mo,
            mp / mu,
            mb / mo,
            mb / mp
        ));
    }
    println!(
        "\n{cpus} CPUs; {}; {}; median of {reps} reads after a warm-up, alternating ours (typed, raw, typed with the pure-Rust codecs) and h5py (open + read)\n",
        rustc.trim(),
        versions.trim()
    );
    println!(
        "| benchmark  |       MB | typed (s) |   raw (s) |  pure (s) |  h5py (s) | typed/raw | speedup  | pure spd.  | typed MB/s | h5py MB/s |"
    );
    println!(
        "|------------|---------:|----------:|----------:|----------:|----------:|----------:|---------:|-----------:|----------:|----------:|"
    );
    for r in rows {
        println!("{r}");
    }
    println!(
        "\n(typed: `read::<T>` / `read_slice::<T>` / `read_records::<String>`; raw: `read_raw` / \
         `read_slice_raw` / `read_vlen_strings`; pure: typed, built without `c-codecs` (zlib-rs inflate, \
         ruzstd); speedup = h5py / typed, pure spd. = h5py / pure; MB = bytes returned, for strings the file size)"
    );
    Ok(())
}
