//! Files written by h5fmt's `FileWriter`: libhdf5's canonical dump
//! (`shared/conformance/h5canon.py`, the reference) must equal ours.

use h5fmt::write::{AttrValue, Format, GroupOptions};
use h5fmt::{Datatype, FileWriter};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn h5canon() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/conformance/h5canon.py")
}

fn write(format: Format, path: &Path) {
    let mut fw = FileWriter::create_with(path, format).unwrap();
    let mut root = fw.root();
    root.set_attr("title", "canon ✓").unwrap();
    root.set_attr("ints", [1i64, -2, 3]).unwrap();
    root.set_attr("ok", false).unwrap();
    root.set_attr("fixed", AttrValue::fixed_ascii("exact"))
        .unwrap();
    root.set_attr("seq", AttrValue::vlen(&[vec![1.5f32], vec![]]))
        .unwrap();
    {
        let mut g = root.create_group("g").unwrap();
        g.create_dataset("u8")
            .shape(&[2, 2])
            .write(&[1u8, 2, 3, 4])
            .unwrap();
        g.set_attr("n", 5u32).unwrap();
    }
    let data: Vec<i32> = (0..5000).map(|i| i * 3 - 7).collect();
    root.create_dataset("chunked")
        .shape(&[50, 100])
        .chunks(&[16, 32])
        .shuffle()
        .deflate(6)
        .write(&data)
        .unwrap();
    root.create_dataset("ext")
        .shape(&[3])
        .maxshape(&[None])
        .chunks(&[2])
        .fill(9u16)
        .write(&[1u16, 2, 3])
        .unwrap();
    root.create_dataset("strings")
        .write_strings(&["a", "", "ünï"])
        .unwrap();
    root.create_dataset("unwritten")
        .dtype(Datatype::int_le(4, true))
        .shape(&[3])
        .fill_value(&(-5i32).to_le_bytes())
        .create()
        .unwrap();
    root.link_soft("soft", "/g/u8").unwrap();
    if format != Format::Earliest {
        root.link_external("ext_link", "elsewhere.h5", "/x")
            .unwrap();
        let mut o = root
            .create_group_with("ordered", GroupOptions { track_order: true })
            .unwrap();
        o.create_group("b").unwrap();
        o.create_group("a").unwrap();
    }
    fw.close().unwrap();
}

#[test]
fn canonical_dumps_equal_libhdf5s() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5cli-write-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for format in [Format::Earliest, Format::V18, Format::Latest] {
        let path = dir.join(format!("canon_{format:?}.h5"));
        write(format, &path);
        let out = Command::new(&py)
            .arg(h5canon())
            .arg("--compact")
            .arg(&path)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{format:?}: h5canon.py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let reference: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        let ours = h5cli::canon::dump(&path).unwrap();
        assert_eq!(ours, reference, "{format:?}: canonical dumps differ");
    }
}
