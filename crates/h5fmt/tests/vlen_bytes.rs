//! `Dataset::read_vlen_strings` / `decode_vlen_strings`: variable-length
//! strings of a selection as one byte buffer and offsets, against h5py
//! writing them (UTF-8 and ASCII, empty strings, multi-byte characters,
//! strings longer than a heap collection, chunked + deflate and contiguous
//! layouts, hyperslab and point selections).
#![cfg(feature = "std")]

use h5fmt::data::decode::{decode_elements, decode_vlen_strings};
use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::Value;
use std::path::PathBuf;
use std::process::Command;

fn python() -> PathBuf {
    let mut tried = Vec::new();
    for venv in [
        std::env::var("H5FMT_VENV").ok(),
        Some("/work/main/.venv".into()),
    ]
    .into_iter()
    .flatten()
    {
        let p = PathBuf::from(venv).join("bin/python");
        if p.exists() {
            return p;
        }
        tried.push(p);
    }
    panic!("no oracle Python (tried {tried:?}); run `cargo xtask venv` or set H5FMT_VENV");
}

const SCRIPT: &str = r#"
import sys, json, h5py, numpy as np
rng = np.random.default_rng(7)
words = ['', 'a', 'héllo', 'Zürich ✓', 'x' * 5000, '日本語テキスト', 'tab\tmid']
vals = [words[i % len(words)] + ('' if i % 5 else str(i)) for i in range(3000)]
ascii_vals = [('row%d' % i) * (i % 4) for i in range(3000)]
with h5py.File(sys.argv[1], 'w') as f:
    f.create_dataset('u_chunked', data=vals, dtype=h5py.string_dtype('utf-8'),
                     chunks=(128,), compression='gzip')
    f.create_dataset('u_contig', data=vals, dtype=h5py.string_dtype('utf-8'))
    f.create_dataset('a_chunked', data=ascii_vals, dtype=h5py.string_dtype('ascii'),
                     chunks=(100,))
with h5py.File(sys.argv[1], 'r') as f:
    out = {}
    for n in ['u_chunked', 'u_contig', 'a_chunked']:
        out[n] = [v.hex() for v in f[n][()]]  # bytes as stored
    json.dump(out, sys.stdout)
"#;

#[test]
fn vlen_strings_as_one_buffer_match_h5py() {
    let dir = std::env::temp_dir().join(format!("h5fmt-vlenbytes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("v.h5");
    let out = Command::new(python())
        .arg("-c")
        .arg(SCRIPT)
        .arg(&path)
        .output()
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let want: std::collections::BTreeMap<String, Vec<String>> =
        serde_json::from_slice(&out.stdout).unwrap();
    let file = h5fmt::File::open(&path).unwrap();
    for (name, rows) in &want {
        let ds = file.dataset(&format!("/{name}")).unwrap();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02x}")).collect::<String>();
        // The whole dataset and several row ranges (inside one chunk, across chunks).
        for (start, count) in [(0u64, 3000u64), (5, 7), (120, 300), (2999, 1), (1000, 0)] {
            let sel = Selection::Hyperslab(vec![SliceDim {
                start,
                stride: 1,
                count,
                block: 1,
            }]);
            let vb = ds.read_vlen_strings(&sel).unwrap();
            assert_eq!(vb.len(), count as usize, "{name} {start}+{count}");
            assert_eq!(vb.offsets.first(), Some(&0));
            for i in 0..count as usize {
                assert_eq!(
                    hex(vb.get(i).unwrap()),
                    rows[start as usize + i],
                    "{name} row {}",
                    start as usize + i
                );
            }
            // The same bytes as the per-value decode.
            let raw = ds.read_slice_raw(&sel).unwrap();
            let values =
                decode_elements(ds.dtype(), &raw, count, file.ctx(), &file.heap()).unwrap();
            let again =
                decode_vlen_strings(ds.dtype(), &raw, count, file.ctx(), &file.heap()).unwrap();
            assert_eq!(again, vb);
            for (i, v) in values.iter().enumerate() {
                let b: &[u8] = match v {
                    Value::Str(s) => s.as_bytes(),
                    Value::RawStr(b) => b,
                    other => panic!("{other:?}"),
                };
                assert_eq!(b, vb.get(i).unwrap());
            }
        }
        // A strided selection.
        let sel = Selection::Hyperslab(vec![SliceDim {
            start: 3,
            stride: 10,
            count: 200,
            block: 2,
        }]);
        let vb = ds.read_vlen_strings(&sel).unwrap();
        assert_eq!(vb.len(), 400);
        for k in 0..200 {
            for j in 0..2 {
                let row = 3 + 10 * k + j;
                assert_eq!(
                    hex(vb.get(2 * k + j).unwrap()),
                    rows[row],
                    "{name} row {row}"
                );
            }
        }
    }
    // Not a vlen string type: a usage error, no panic.
    let ds = file.dataset("/u_chunked").unwrap();
    let e = decode_vlen_strings(
        &h5fmt::Datatype::int_le(4, true),
        &[0; 8],
        2,
        file.ctx(),
        &file.heap(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), h5fmt::ErrorKind::Usage);
    // Short descriptors: truncated.
    let e = decode_vlen_strings(ds.dtype(), &[0; 8], 2, file.ctx(), &file.heap()).unwrap_err();
    assert_eq!(e.kind(), h5fmt::ErrorKind::Truncated);
    let _ = std::fs::remove_dir_all(&dir);
}
