//! The Arrow export of a large table written by h5py (vlen strings read on
//! several threads, batches across chunks), projections and row ranges, and
//! string columns holding bytes that are not UTF-8.
#![cfg(feature = "arrow")]

mod arrow_common;

use arrow_array::Array;
use arrow_common::{cells, oracle, python};
use h5table::arrow::{batches, read_batch, schema, ExportOptions, StringMode};
use std::process::Command;

const SCRIPT: &str = r#"
import sys, h5py, numpy as np
n = 300_000
rng = np.random.default_rng(3)
words = ['', 'alpha', 'Zürich ✓', '日本語', 'x' * 300]
with h5py.File(sys.argv[1], 'w') as f:
    g = f.create_group('t')
    g.attrs['CLASS'] = np.bytes_('COLUMN_TABLE')
    g.attrs['VERSION'] = np.bytes_('1.0')
    g.attrs['NROWS'] = np.uint64(n - 5)
    v = [words[i % 5] + str(i) for i in range(n)]
    g.create_dataset('v', data=v, dtype=h5py.string_dtype('utf-8'), chunks=(10_000,),
                     compression='gzip')
    x = rng.normal(size=n)
    x[::7] = -9999.0
    g.create_dataset('x', data=x, chunks=(4096,), fillvalue=-9999.0)
    g.create_dataset('fs', data=np.array([('s%d' % (i % 1000)).encode() for i in range(n)], dtype='S6'))
    g.attrs['column-order'] = np.array([b'v', b'x', b'fs'], dtype='S2')
    h = f.create_group('bad')
    h.attrs['CLASS'] = np.bytes_('COLUMN_TABLE')
    h.attrs['VERSION'] = np.bytes_('1.0')
    h.attrs['NROWS'] = np.uint64(4)
    h.create_dataset('a', data=[b'ok', b'caf\xe9', b'', b'\xff\xfe'], dtype=h5py.string_dtype('ascii'))
    h.create_dataset('f', data=np.array([b'ok', b'caf\xe9', b'', b'x'], dtype='S4'))
"#;

#[test]
fn large_table_matches_h5py() {
    let dir = std::env::temp_dir().join(format!("h5table-arrow-large-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("large.h5");
    let st = Command::new(python())
        .arg("-c")
        .arg(SCRIPT)
        .arg(&path)
        .status()
        .unwrap();
    assert!(st.success());
    let file = h5fmt::File::open(&path).unwrap();
    let table = h5table::Table::open(&file.group("/t").unwrap()).unwrap();
    let want = oracle(&path, "/t", None);
    let nrows = table.nrows();
    assert_eq!(nrows, 299_995);
    // Whole table in large batches (the threaded string path) and odd batches.
    for batch_rows in [200_000u64, 65_537] {
        let opts = ExportOptions {
            batch_rows,
            ..Default::default()
        };
        let mut got = vec![Vec::new(); 3];
        for b in batches(&table, None, 0..nrows, &opts).unwrap() {
            let b = b.unwrap();
            for (k, c) in b.columns().iter().enumerate() {
                got[k].extend(cells(c.as_ref()));
            }
        }
        for (k, name) in ["v", "x", "fs"].iter().enumerate() {
            let w = want["columns"][name]["cells"].as_array().unwrap();
            assert_eq!(got[k].len(), w.len(), "{name}");
            let bad = got[k].iter().zip(w).position(|(g, w)| g != w);
            assert_eq!(bad, None, "{name} (batch {batch_rows}) first differing row");
        }
        let nulls = got[1].iter().filter(|c| c.is_null()).count();
        assert_eq!(nulls, (nrows as usize).div_ceil(7));
    }
    // A projection in another order over a row range.
    let opts = ExportOptions::default();
    let b = read_batch(&table, Some(&["fs", "v"]), 150_000..290_000, &opts).unwrap();
    assert_eq!(b.num_rows(), 140_000);
    assert_eq!(b.schema().field(0).name(), "fs");
    let v = cells(b.column(1).as_ref());
    let w = want["columns"]["v"]["cells"].as_array().unwrap();
    assert_eq!(v[..], w[150_000..290_000]);
    // Rows past NROWS and unknown columns are usage errors.
    assert!(read_batch(&table, None, 0..nrows + 1, &opts).is_err());
    assert!(schema(&table, Some(&["nope"]), &opts).is_err());
    // Empty range: an empty batch with the schema.
    let e = read_batch(&table, None, 10..10, &opts).unwrap();
    assert_eq!((e.num_rows(), e.num_columns()), (0, 3));

    // Not UTF-8: an error naming the row in Utf8 mode, the bytes in Binary mode.
    let bad = h5table::Table::open(&file.group("/bad").unwrap()).unwrap();
    for col in ["a", "f"] {
        let e = read_batch(&bad, Some(&[col]), 0..4, &opts).unwrap_err();
        assert!(e.to_string().contains("row 1"), "{col}: {e}");
        let bin = ExportOptions {
            strings: StringMode::Binary,
            ..Default::default()
        };
        let b = read_batch(&bad, Some(&[col]), 0..4, &bin).unwrap();
        let c = b.column(0);
        assert_eq!(c.len(), 4);
        let got = cells(c.as_ref());
        assert_eq!(got[1], serde_json::json!("636166e9"));
    }
    let _ = std::fs::remove_dir_all(&dir);
}
