//! Virtual datasets written by `FileWriter` (`DatasetBuilder::virtual_mappings`
//! / `virtual_block`): libhdf5 (h5py) reads them as numpy computes them from
//! the sources, our reader agrees, and `h5 check` finds nothing.
//!
//! Needs the venv (`H5FMT_VENV`, or `/work/main/.venv`); without it the libhdf5
//! part is skipped.

use h5fmt::format::selection::{RegularDim, Selection, UNLIMITED};
use h5fmt::format::vds::{VdsBlock, VdsMapping, SAME_FILE};
use h5fmt::write::Format;
use h5fmt::{Datatype, ErrorKind, FileWriter, Object};
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

fn reg(dims: &[(u64, u64, u64, u64)]) -> Selection {
    Selection::Regular(
        dims.iter()
            .map(|&(start, stride, count, block)| RegularDim {
                start,
                stride,
                count,
                block,
            })
            .collect(),
    )
}

fn map(file: &str, dataset: &str, source: Selection, virtual_sel: Selection) -> VdsMapping {
    VdsMapping {
        file: file.into(),
        dataset: dataset.into(),
        source,
        virtual_sel,
    }
}

/// The source file in a subdirectory: `/o` (4×6, 100 + i) and `/ou` (5,
/// unlimited, 500 + i).
fn write_other(path: &Path) {
    let mut fw = FileWriter::create_with(path, Format::V18).unwrap();
    let mut root = fw.root();
    let o: Vec<i32> = (0..24).map(|i| 100 + i).collect();
    root.create_dataset("o").shape(&[4, 6]).write(&o).unwrap();
    let ou: Vec<i32> = (0..5).map(|i| 500 + i).collect();
    root.create_dataset("ou")
        .shape(&[5])
        .maxshape(&[None])
        .chunks(&[2])
        .write(&ou)
        .unwrap();
    fw.close().unwrap();
}

fn mappings() -> Vec<VdsMapping> {
    vec![
        // row 0 ← all of /a (same file)
        map(
            SAME_FILE,
            "/a",
            Selection::All,
            reg(&[(0, 1, 1, 1), (0, 1, 1, 10)]),
        ),
        // rows 1..3, columns 0..3 ← /o[1:3, 0:6:2] (other file)
        map(
            "src/other.h5",
            "/o",
            reg(&[(1, 1, 2, 1), (0, 2, 3, 1)]),
            Selection::Blocks {
                rank: 2,
                corners: vec![1, 0, 2, 2],
            },
        ),
        // three single-element blocks of /b (same file, relative path)
        // onto three others, in row-major order on both sides
        map(
            SAME_FILE,
            "b",
            Selection::Blocks {
                rank: 2,
                corners: vec![2, 3, 2, 3, 0, 1, 0, 1, 1, 0, 1, 0],
            },
            Selection::Blocks {
                rank: 2,
                corners: vec![3, 0, 3, 0, 4, 4, 4, 4, 3, 9, 3, 9],
            },
        ),
        // row 5 ← /ou[0:unlimited] (other file), unlimited in dimension 1
        map(
            "src/other.h5",
            "/ou",
            reg(&[(0, 1, UNLIMITED, 1)]),
            reg(&[(5, 1, 1, 1), (0, 1, UNLIMITED, 1)]),
        ),
    ]
}

fn one() -> Vec<VdsMapping> {
    vec![map(SAME_FILE, "/a", Selection::All, reg(&[(0, 1, 1, 3)]))]
}

fn write_vds(path: &Path, format: Format) {
    let mut fw = FileWriter::create_with(path, format).unwrap();
    let mut root = fw.root();
    let a: Vec<i32> = (0..10).map(|i| 7 * i).collect();
    root.create_dataset("a").write(&a).unwrap();
    let b: Vec<i32> = (0..12).map(|i| 1000 + i).collect();
    root.create_dataset("b").shape(&[3, 4]).write(&b).unwrap();
    root.create_dataset("v")
        .dtype(Datatype::int_le(4, true))
        .shape(&[6, 10])
        .maxshape(&[Some(6), None])
        .fill(-1i32)
        .virtual_mappings(mappings())
        .create()
        .unwrap();
    // The same list given as encoded bytes (validated by decoding).
    let block = VdsBlock {
        version: 0,
        mappings: mappings(),
    };
    let mut g = root.create_group("g").unwrap();
    g.create_dataset("raw")
        .dtype(Datatype::int_le(4, true))
        .shape(&[6, 10])
        .maxshape(&[Some(6), None])
        .fill(-1i32)
        .virtual_block(block.encode(h5fmt::Ctx::default()).unwrap())
        .create()
        .unwrap();
    fw.close().unwrap();
}

const EXPECT: &str = r#"
import sys, h5py, numpy as np
a = np.arange(10) * 7
o = np.arange(24).reshape(4, 6) + 100
b = np.arange(12).reshape(3, 4) + 1000
ou = np.arange(5) + 500
exp = np.full((6, 10), -1, dtype="i4")
exp[0, :] = a
exp[1:3, 0:3] = o[1:3, 0:6:2]
for (sr, sc), (vr, vc) in zip([(0, 1), (1, 0), (2, 3)], [(3, 0), (3, 9), (4, 4)]):
    exp[vr, vc] = b[sr, sc]
exp[5, 0:5] = ou
with h5py.File(sys.argv[1], "r") as f:
    for name in ["v", "g/raw"]:
        d = f[name]
        assert d.is_virtual, name
        assert d.maxshape == (6, None), d.maxshape
        got = d[()]
        assert got.dtype == np.dtype("<i4"), got.dtype
        assert np.array_equal(got, exp), (name, got.tolist(), exp.tolist())
        srcs = d.virtual_sources()
        assert len(srcs) == 4, srcs
        assert srcs[1].file_name == sys.argv[2], (srcs[1], sys.argv[2])
        assert srcs[0].file_name == ".", srcs[0]
print("OK")
"#;

#[test]
fn libhdf5_reads_written_virtual_datasets() {
    let dir = std::env::temp_dir().join(format!("h5cli-write-vds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    write_other(&dir.join("src/other.h5"));
    for format in [Format::Earliest, Format::V18, Format::Latest, Format::V200] {
        let path = dir.join(format!("vds_{format:?}.h5"));
        write_vds(&path, format);

        // Our reader: the same values.
        let f = h5fmt::File::open(&path).unwrap();
        for name in ["v", "g/raw"] {
            let Object::Dataset(d) = f.object(name).unwrap() else {
                panic!("{name} is not a dataset")
            };
            assert_eq!(
                h5fmt::read::vds::virtual_dims(&d).unwrap(),
                vec![6, 10],
                "{format:?} {name}"
            );
            let raw = h5fmt::read::vds::read_virtual(&d).unwrap();
            let v: Vec<i32> = raw
                .chunks_exact(4)
                .map(|c| i32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(&v[..10], &[0, 7, 14, 21, 28, 35, 42, 49, 56, 63]);
            assert_eq!(&v[50..56], &[500, 501, 502, 503, 504, -1]);
        }
        let findings = h5cli::check::check_path(&path);
        assert!(
            h5cli::check::is_clean(&findings, true),
            "{format:?}: {findings:?}"
        );

        let Some(py) = python() else {
            eprintln!("skipping the libhdf5 check: no python venv");
            continue;
        };
        let out = Command::new(&py)
            .arg("-c")
            .arg(EXPECT)
            .arg(&path)
            .arg("src/other.h5")
            .output()
            .unwrap();
        assert!(
            out.status.success() && out.stdout.starts_with(b"OK"),
            "{format:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Run the libhdf5 check of `EXPECT` on `path`, whose other-file mappings
/// must name `other`.
fn libhdf5_check(path: &Path, other: &str) {
    let Some(py) = python() else {
        eprintln!("skipping the libhdf5 check: no python venv");
        return;
    };
    let out = Command::new(&py)
        .arg("-c")
        .arg(EXPECT)
        .arg(path)
        .arg(other)
        .output()
        .unwrap();
    assert!(
        out.status.success() && out.stdout.starts_with(b"OK"),
        "{}: {}{}",
        path.display(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `h5 repack` writes virtual datasets virtual: same mappings, `"."` kept,
/// the relative other-file name rewritten to reach the same file from the
/// destination (relative from another directory, unchanged in the same
/// one, absolute when the destination is not known); libhdf5 reads the
/// values numpy expects from every output.
#[test]
fn repack_keeps_virtual_datasets_virtual() {
    let dir = std::env::temp_dir().join(format!("h5cli-repack-vds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::create_dir_all(dir.join("out/deeper")).unwrap();
    std::fs::create_dir_all(dir.join("bytes")).unwrap();
    write_other(&dir.join("src/other.h5"));
    let src = dir.join("vds.h5");
    write_vds(&src, Format::V18);
    let canon = std::fs::canonicalize(&dir).unwrap();
    let abs = format!("{}/src/other.h5", canon.display());
    let mut outputs = Vec::new();
    for (format, dst, other) in [
        (
            Format::V18,
            dir.join("out/deeper/r.h5"),
            "../../src/other.h5",
        ),
        (Format::V200, dir.join("same.h5"), "src/other.h5"),
        (Format::Earliest, dir.join("out/e.h5"), "../src/other.h5"),
    ] {
        let opts = h5cli::repack::Options {
            format,
            ..Default::default()
        };
        h5cli::repack::repack(&src, &dst, &opts).unwrap();
        outputs.push((dst, other.to_string(), format));
    }
    let bytes = h5cli::repack::repack_to_bytes(&src, &Default::default()).unwrap();
    let b = dir.join("bytes/b.h5");
    std::fs::write(&b, bytes).unwrap();
    outputs.push((b, abs, Format::V18));
    for (path, other, format) in outputs {
        let f = h5fmt::File::open(&path).unwrap();
        for name in ["v", "g/raw"] {
            let Object::Dataset(d) = f.object(name).unwrap() else {
                panic!("{name} is not a dataset")
            };
            let block = h5fmt::read::vds::mapping_block(&d).unwrap();
            assert_eq!(block.version, u8::from(format == Format::V200));
            let want: Vec<VdsMapping> = mappings()
                .into_iter()
                .map(|mut m| {
                    if m.file != SAME_FILE {
                        m.file = other.clone();
                    }
                    m
                })
                .collect();
            assert_eq!(block.mappings, want, "{}", path.display());
        }
        let findings = h5cli::check::check_path(&path);
        assert!(
            h5cli::check::is_clean(&findings, true),
            "{}: {findings:?}",
            path.display()
        );
        libhdf5_check(&path, &other);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_virtual_datasets_are_refused_and_write_nothing() {
    let base = || {
        let mut fw = FileWriter::in_memory();
        fw.root().create_dataset("a").write(&[1i32, 2, 3]).unwrap();
        fw
    };
    let i4 = Datatype::int_le(4, true);
    type Case = Box<dyn Fn(h5fmt::write::DatasetBuilder<'_>) -> h5fmt::Result<h5fmt::ObjectId>>;
    let good_block = VdsBlock {
        version: 0,
        mappings: one(),
    }
    .encode(h5fmt::Ctx::default())
    .unwrap();
    let mut flipped = good_block.clone();
    flipped[12] ^= 1;
    let flipped2 = flipped.clone();
    let cases: Vec<(Case, ErrorKind)> = vec![
        (
            Box::new(|b| b.shape(&[3]).chunks(&[3]).virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.shape(&[3]).deflate(4).virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.shape(&[3]).compact().virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.virtual_mappings(one()).write(&[1i32, 2, 3])),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.shape(&[]).virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        // virtual selection beyond the shape, of the wrong rank, unlimited
        // in a limited dimension
        (
            Box::new(|b| b.shape(&[2]).virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.shape(&[3, 1]).virtual_mappings(one()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| {
                b.shape(&[3])
                    .virtual_mappings(vec![map(
                        SAME_FILE,
                        "/a",
                        Selection::All,
                        reg(&[(0, 1, UNLIMITED, 1)]),
                    )])
                    .create()
            }),
            ErrorKind::Usage,
        ),
        // point selections (libhdf5 refuses to open such datasets)
        (
            Box::new(|b| {
                b.shape(&[3])
                    .virtual_mappings(vec![map(
                        SAME_FILE,
                        "/a",
                        Selection::Points {
                            rank: 1,
                            coords: vec![0],
                        },
                        Selection::Points {
                            rank: 1,
                            coords: vec![2],
                        },
                    )])
                    .create()
            }),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| b.shape(&[3]).virtual_mappings(Vec::new()).create()),
            ErrorKind::Usage,
        ),
        (
            Box::new(|b| {
                b.shape(&[3])
                    .virtual_mappings(vec![map("", "/a", Selection::All, Selection::All)])
                    .create()
            }),
            ErrorKind::Usage,
        ),
        // encoded bytes that do not decode: checksum, truncation
        (
            Box::new(move |b| b.shape(&[3]).virtual_block(flipped.clone()).create()),
            ErrorKind::Checksum,
        ),
        (
            Box::new(move |b| {
                b.shape(&[3])
                    .virtual_block(flipped2[..20].to_vec())
                    .create()
            }),
            ErrorKind::Truncated,
        ),
    ];
    let clean = base().finish().unwrap();
    for (i, (case, kind)) in cases.into_iter().enumerate() {
        let mut fw = base();
        let e = case(fw.root().create_dataset("v").dtype(i4.clone())).unwrap_err();
        assert_eq!(e.kind(), kind, "case {i}: {e}");
        // Nothing was written: the file is the one without the attempt.
        assert_eq!(fw.finish().unwrap(), clean, "case {i}");
    }
    // The same block accepted.
    let mut fw = base();
    fw.root()
        .create_dataset("v")
        .dtype(i4)
        .shape(&[3])
        .virtual_block(good_block)
        .create()
        .unwrap();
    let bytes = fw.finish().unwrap();
    let f = h5fmt::File::from_bytes(bytes).unwrap();
    let Object::Dataset(d) = f.object("v").unwrap() else {
        panic!()
    };
    assert_eq!(
        h5fmt::read::vds::read_virtual(&d).unwrap(),
        [1i32, 2, 3]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect::<Vec<_>>()
    );
}
