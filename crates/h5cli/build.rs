//! Lets the test binaries that embed Python (pyo3, `tests/crosscheck_h5py.rs`) find
//! `libpythonX.Y.so` at run time without `LD_LIBRARY_PATH`: an rpath to the library
//! directory of the interpreter pyo3 builds against (`PYO3_PYTHON`, else `python3`).
//! Only test targets get it; the `h5` binary and the library are unaffected.

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PYO3_PYTHON");
    let python = std::env::var("PYO3_PYTHON").unwrap_or_else(|_| "python3".into());
    let Ok(out) = Command::new(python)
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_config_var('LIBDIR') or '')",
        ])
        .output()
    else {
        return;
    };
    let libdir = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !libdir.is_empty() {
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{libdir}");
    }
}
