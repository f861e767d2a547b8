//! The Arrow export of every table of the public HEP001 corpus
//! (`/work/shared/hep001/files/c*.h5`, or `$HEP001_FILES`) against h5py +
//! numpy reading the same columns (`arrow_oracle.py`): every cell, null
//! exactly where the canonical missing test says missing, and the missing
//! counts of the corpus's expected answers.
#![cfg(feature = "arrow")]

mod arrow_common;

use arrow_common::{cells, oracle};
use h5table::arrow::{batches, ExportOptions};
use std::path::PathBuf;

fn corpus() -> PathBuf {
    PathBuf::from(
        std::env::var("HEP001_FILES").unwrap_or_else(|_| "/work/shared/hep001/files".into()),
    )
}

#[test]
fn corpus_tables_match_h5py() {
    let dir = corpus();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("corpus {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.extension().is_some_and(|x| x == "h5")
                && p.file_name()
                    .and_then(|n| n.to_str())
                    .is_some_and(|n| n.starts_with('c'))
        })
        .collect();
    files.sort();
    assert!(files.len() >= 20, "corpus too small: {}", files.len());
    let mut tables = 0;
    let mut columns = 0;
    for path in &files {
        let expected_path = path.with_extension("expected.json");
        let expected: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&expected_path).unwrap()).unwrap();
        let file = h5fmt::File::open(path).unwrap();
        for tpath in h5table::find_tables(&file).unwrap() {
            let table = h5table::Table::open(&file.group(&tpath).unwrap()).unwrap();
            let want = oracle(path, &tpath, Some(&expected_path));
            // Odd batch sizes: batch boundaries inside chunks.
            let opts = ExportOptions {
                batch_rows: 37,
                ..Default::default()
            };
            let reader = batches(&table, None, 0..table.nrows(), &opts).unwrap();
            let schema = reader.schema();
            let names: Vec<String> = table.columns().iter().map(|c| c.name().into()).collect();
            let got_names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
            assert_eq!(
                got_names, names,
                "{tpath}: field order is the logical order"
            );
            let mut got: Vec<Vec<serde_json::Value>> = vec![Vec::new(); names.len()];
            let mut nbatches = 0;
            for b in reader {
                let b = b.unwrap_or_else(|e| panic!("{}:{tpath}: {e}", path.display()));
                assert_eq!(b.schema(), schema);
                for (k, col) in b.columns().iter().enumerate() {
                    got[k].extend(cells(col.as_ref()));
                }
                nbatches += 1;
            }
            assert_eq!(nbatches, table.nrows().div_ceil(37));
            let exp_cols = expected["tables"][&tpath]["columns"].as_array().cloned();
            for (k, name) in names.iter().enumerate() {
                let w = &want["columns"][name]["cells"];
                let w = w
                    .as_array()
                    .unwrap_or_else(|| panic!("oracle lacks {name}"));
                assert_eq!(got[k].len(), w.len(), "{}:{tpath}/{name}", path.display());
                for (i, (g, w)) in got[k].iter().zip(w).enumerate() {
                    assert_eq!(
                        g,
                        w,
                        "{}:{tpath}/{name} row {i} (type {})",
                        path.display(),
                        schema.field(k).data_type()
                    );
                }
                if let Some(ec) = exp_cols
                    .as_ref()
                    .and_then(|cs| cs.iter().find(|c| c["name"] == name.as_str()))
                {
                    if let Some(m) = ec["missing"].as_u64() {
                        let nulls = got[k].iter().filter(|c| c.is_null()).count() as u64;
                        assert_eq!(nulls, m, "{}:{tpath}/{name}: missing count", path.display());
                    }
                }
                columns += 1;
            }
            tables += 1;
        }
    }
    assert!(
        tables >= 20 && columns >= 60,
        "{tables} tables, {columns} columns"
    );
    eprintln!("{tables} tables, {columns} columns compared with h5py");
}

/// Rows confined to the last chunk of a column whose chunk B-tree (v1) has
/// more than one level: libhdf5's right key of the last child equals that
/// chunk's offset (the pruned walk once skipped it and read fill values).
#[test]
fn btree_v1_last_chunk_rows() {
    let file = h5fmt::File::open(corpus().join("c16_layouts_filters.h5")).unwrap();
    let table = h5table::Table::open(&file.group("/layouts").unwrap()).unwrap();
    let col = table.column("f").unwrap();
    let all = col.read_raw(0..2000).unwrap();
    for lo in 1990..2000u64 {
        assert_eq!(
            col.read_raw(lo..2000).unwrap(),
            all[lo as usize * 4..],
            "rows {lo}..2000"
        );
    }
}
