//! Virtual datasets end to end, against files written by h5py / libhdf5 2.0
//! (`tests/vds/gen.py`) and the bytes h5py read back from them
//! (`tests/vds/*.bin`, listed in `tests/vds/expected.tsv`).

use h5fmt::read::vds::virtual_dims;
use h5fmt::{ErrorKind, File};
use std::path::PathBuf;

fn dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vds"))
}

struct Row {
    file: String,
    dataset: String,
    shape: Vec<u64>,
    bin: String,
}

fn rows(file: &str) -> Vec<Row> {
    let text = std::fs::read_to_string(dir().join("expected.tsv")).unwrap();
    text.lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f[0] == file).then(|| Row {
                file: f[0].to_string(),
                dataset: f[1].to_string(),
                shape: if f[2].is_empty() {
                    vec![]
                } else {
                    f[2].split('x').map(|x| x.parse().unwrap()).collect()
                },
                bin: f[3].to_string(),
            })
        })
        .collect()
}

/// Every dataset of `file` listed in expected.tsv reads as h5py read it.
fn check_file(file: &str, min_rows: usize) {
    let rows = rows(file);
    assert!(
        rows.len() >= min_rows,
        "{file}: expected.tsv has {} rows",
        rows.len()
    );
    let f = File::open(dir().join(file)).unwrap();
    for r in rows {
        let ds = f.dataset(&r.dataset).unwrap();
        let want = std::fs::read(dir().join(&r.bin)).unwrap();
        if matches!(ds.layout(), h5fmt::format::message::Layout::Virtual { .. }) {
            assert_eq!(
                virtual_dims(&ds).unwrap(),
                r.shape,
                "{}:{} extent",
                r.file,
                r.dataset
            );
        } else {
            assert_eq!(ds.shape(), r.shape.as_slice());
        }
        let got = ds
            .read_raw()
            .unwrap_or_else(|e| panic!("{}:{}: {e}", r.file, r.dataset));
        assert_eq!(got, want, "{}:{} bytes", r.file, r.dataset);
    }
}

#[test]
fn vds_same_file_mappings() {
    // concatenation, strides on both sides, 2-D windows, 2-D → 1-D, a VDS of a
    // VDS, an irregular hyperslab union, unlimited mappings of a resizable
    // VDS (extent 5 rows, not the stored 1); gaps read as the fill value.
    check_file("vds_same.h5", 8);
}

#[test]
fn vds_other_files_and_missing_sources() {
    // Two source files (one chunked+gzip), a missing file and a missing
    // dataset (fill 99), plus an external link to a source's dataset.
    check_file("vds_other.h5", 2);
}

#[test]
fn vds_version_1_heap_block() {
    // libver v200: version-1 block with shared names and the same-file flag.
    check_file("vds_v1.h5", 2);
}

#[test]
fn vds_unlimited_mapping_follows_source_extent() {
    // The source grew from 3 to 5 rows after the VDS was written: the extent
    // (9 rows with the stride-2 mapping) and data follow it as in libhdf5.
    check_file("vds_unlim.h5", 1);
}

#[test]
fn vds_printf_mapping() {
    // vds_printf_%b.h5, blocks of 2 rows every 3 rows, until the first missing file.
    check_file("vds_printf.h5", 1);
}

#[test]
fn vds_read_slice_of_virtual() {
    let f = File::open(dir().join("vds_same.h5")).unwrap();
    let ds = f.dataset("/grid").unwrap();
    let sel = h5fmt::data::hyperslab::Selection::parse("1:5:2,2:8:3", ds.shape()).unwrap();
    let got = ds.read_slice_raw(&sel).unwrap();
    let all = std::fs::read(dir().join("vds_same__grid.bin")).unwrap();
    let mut want = Vec::new();
    for i in [1usize, 3] {
        for j in [2usize, 5] {
            let k = (i * 8 + j) * 8;
            want.extend_from_slice(&all[k..k + 8]);
        }
    }
    assert_eq!(got, want);
}

#[test]
fn vds_from_bytes_same_file_sources() {
    // Without a path, same-file sources still work; other files are missing (fill).
    let bytes = std::fs::read(dir().join("vds_same.h5")).unwrap();
    let f = File::from_bytes(bytes).unwrap();
    let got = f.dataset("/concat").unwrap().read_raw().unwrap();
    let want = std::fs::read(dir().join("vds_same__concat.bin")).unwrap();
    assert_eq!(got, want);
}

#[test]
fn vds_nesting_is_bounded() {
    // With no hops allowed, a VDS whose source is a VDS fails with Limit
    // instead of recursing.
    let limits = h5fmt::Limits {
        max_link_hops: 0,
        ..Default::default()
    };
    let f = File::open_with_limits(dir().join("vds_same.h5"), limits).unwrap();
    let e = f.dataset("/nested").unwrap().read_raw().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    // one level is fine
    assert!(f.dataset("/concat").unwrap().read_raw().is_ok());
}

#[test]
fn vds_external_link_missing_file_is_not_found() {
    let f = File::open(dir().join("vds_other.h5")).unwrap();
    assert!(f.object("/ext").is_ok());
    let e = f.object("/ext/nothing").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
}

/// The libhdf5 tools' VDS test files in the shared corpus: their sources'
/// names were flattened, so every source is missing. libhdf5 reports an extent
/// of 0 in the unlimited dimension; every element of a limited VDS is fill.
#[test]
fn vds_corpus_files_with_missing_sources() {
    let corpus = PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../../shared/corpus"
    ));
    let manifest = match std::fs::read_to_string(corpus.join("manifest.tsv")) {
        Ok(m) => m,
        Err(_) => return, // corpus not available
    };
    let mut seen = 0;
    for line in manifest.lines().skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if !f
            .last()
            .is_some_and(|x| x.split(',').any(|t| t == "virtual"))
        {
            continue;
        }
        let rel = f[0];
        let canon = corpus
            .join("expected")
            .join(rel.trim_start_matches("files/"))
            .with_extension("h5.canon.json");
        let Ok(canon) = std::fs::read_to_string(&canon) else {
            continue;
        };
        let file = File::open(corpus.join(rel)).unwrap();
        // Pull (path, shape, data_sha256) of each dataset out of the dump.
        let starts: Vec<usize> = canon.match_indices("{\"kind\":").map(|(i, _)| i).collect();
        for (k, &pos) in starts.iter().enumerate() {
            let chunk = &canon[pos..starts.get(k + 1).copied().unwrap_or(canon.len())];
            if !chunk.starts_with("{\"kind\":\"dataset\"")
                || !chunk.contains("\"layout\":\"virtual\"")
            {
                continue;
            }
            // The object's key precedes it: `"/path":{"kind":...`.
            let head = &canon[..pos - 2];
            let path = &head[head.rfind('"').unwrap() + 1..];
            let shape_s = chunk.split("\"shape\":[").nth(1).unwrap();
            let shape: Vec<u64> = shape_s[..shape_s.find(']').unwrap()]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().unwrap())
                .collect();
            let ds = file.dataset(path).unwrap();
            assert_eq!(virtual_dims(&ds).unwrap(), shape, "{rel}:{path}");
            let raw = ds.read_raw().unwrap();
            let n: u64 = shape.iter().product();
            assert_eq!(raw.len() as u64, n * ds.dtype().size(), "{rel}:{path}");
            let fill = ds.fill_bytes();
            assert!(
                raw.chunks(fill.len()).all(|c| c == fill.as_slice()),
                "{rel}:{path}: not all fill"
            );
            seen += 1;
        }
    }
    assert!(seen >= 5, "only {seen} corpus VDS datasets checked");
}
