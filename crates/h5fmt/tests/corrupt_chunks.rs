//! Corrupt chunk data in files written by h5py (libhdf5): a damaged deflate
//! stream, a wrong fletcher32 checksum, a chunk that inflates past its size
//! and a chunk cut off by the end of the file each give a typed error naming
//! the dataset and the chunk's coordinates, never a panic; the other chunks
//! still read. Chunk positions come from libhdf5 (`get_chunk_info`).

use h5fmt::{ErrorKind, File};
use serde_json::Value as J;
use std::path::{Path, PathBuf};
use std::process::Command;

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

const MAKE: &str = r#"
import sys, json, zlib, h5py, numpy as np
path = sys.argv[1]
d = np.random.default_rng(1).random((64, 64))
with h5py.File(path, 'w', libver='earliest') as f:
    f.create_dataset('gz', data=d, chunks=(16, 16), compression='gzip')
    f.create_dataset('fl', data=d, chunks=(16, 16), fletcher32=True)
    f.create_dataset('bomb', data=d, chunks=(16, 16), compression='gzip')
    f.create_dataset('tail', data=d, chunks=(16, 16), compression='gzip')
out = {}
with h5py.File(path, 'r') as f:
    for n in f:
        ds = f[n]
        out[n] = [dict(offset=list(c.chunk_offset), addr=c.byte_offset, size=c.size)
                  for c in (ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))]
# A zlib stream inflating to twice a chunk (16*16 f8 = 2048 bytes).
out['bomb_stream'] = zlib.compress(bytes(2 * 16 * 16 * 8), 9).hex()
print(json.dumps(out))
"#;

/// Run generator `script` (h5py) on a temporary file: its JSON output, the
/// file's bytes and its path; `None` without a Python venv.
fn make(script: &str, name: &str) -> Option<(J, Vec<u8>, PathBuf)> {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return None;
    };
    let path = std::env::temp_dir().join(format!("h5fmt-{name}-{}.h5", std::process::id()));
    let out = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let info: J = serde_json::from_slice(&out.stdout).unwrap();
    let bytes = std::fs::read(&path).unwrap();
    Some((info, bytes, path))
}

fn chunk(info: &J, ds: &str, i: usize) -> (Vec<u64>, usize, usize) {
    let c = &info[ds][i];
    let off = c["offset"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_u64().unwrap())
        .collect();
    (
        off,
        c["addr"].as_u64().unwrap() as usize,
        c["size"].as_u64().unwrap() as usize,
    )
}

fn coords(off: &[u64]) -> String {
    let parts: Vec<String> = off.iter().map(u64::to_string).collect();
    format!("chunk [{}]", parts.join(", "))
}

/// Read `ds` from `bytes`: the error's kind, and that it names the dataset
/// and the chunk.
fn expect_error(bytes: Vec<u8>, ds: &str, off: &[u64], kinds: &[ErrorKind]) {
    let file = File::from_bytes(bytes).expect("open");
    let e = file
        .dataset(&format!("/{ds}"))
        .unwrap()
        .read_raw()
        .expect_err("corrupt chunk must be an error");
    let text = e.to_string();
    assert!(
        kinds.contains(&e.kind()),
        "/{ds}: kind {:?}: {text}",
        e.kind()
    );
    assert!(text.contains(&format!("/{ds}")), "no dataset path: {text}");
    assert!(text.contains(&coords(off)), "no {}: {text}", coords(off));
}

#[test]
fn corrupt_chunks_are_named_errors() {
    let Some((info, good, path)) = make(MAKE, "corrupt") else {
        return;
    };
    std::fs::remove_file(&path).ok();
    let want: Vec<f64> = File::from_bytes(good.clone())
        .unwrap()
        .dataset("/gz")
        .unwrap()
        .read()
        .unwrap();
    assert_eq!(want.len(), 64 * 64);

    // A damaged deflate stream (the middle of chunk 5 overwritten).
    let (off, addr, size) = chunk(&info, "gz", 5);
    let mut b = good.clone();
    for x in &mut b[addr + size / 3..addr + size / 3 + 64] {
        *x ^= 0x5a;
    }
    // (Garbage may inflate to more than the chunk: a `Limit` error then.)
    expect_error(
        b.clone(),
        "gz",
        &off,
        &[ErrorKind::Corrupt, ErrorKind::Checksum, ErrorKind::Limit],
    );
    // The other datasets of the damaged file still read.
    let f = File::from_bytes(b).unwrap();
    let v: Vec<f64> = f.dataset("/fl").unwrap().read().unwrap();
    assert_eq!(v, want);

    // A wrong fletcher32 checksum (one data byte of chunk 2 flipped).
    let (off, addr, _) = chunk(&info, "fl", 2);
    let mut b = good.clone();
    b[addr + 100] ^= 0x01;
    expect_error(b, "fl", &off, &[ErrorKind::Checksum]);

    // A chunk that inflates to twice the chunk size (a zlib stream from
    // Python's zlib) in the place of chunk 3's stream.
    let (off, addr, size) = chunk(&info, "bomb", 3);
    let hex = info["bomb_stream"].as_str().unwrap();
    let mut z: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert!(z.len() <= size, "bomb stream of {} > {size}", z.len());
    z.resize(size, 0);
    let mut b = good.clone();
    b[addr..addr + size].copy_from_slice(&z);
    expect_error(b, "bomb", &off, &[ErrorKind::Limit, ErrorKind::Corrupt]);

    // The file cut inside the last chunk of the last dataset (its address
    // now lies partly past the end of the file).
    let last = info["tail"].as_array().unwrap().len() - 1;
    let (off, addr, size) = chunk(&info, "tail", last);
    assert_eq!(addr + size, good.len(), "the last chunk ends the file");
    let mut b = good.clone();
    b.truncate(addr + size / 2);
    expect_error(b, "tail", &off, &[ErrorKind::Truncated, ErrorKind::Corrupt]);
}

const MAKE_MANY: &str = r#"
import sys, json, zlib, h5py, numpy as np
path = sys.argv[1]
rng = np.random.default_rng(2)
with h5py.File(path, 'w', libver='latest') as f:
    f.create_dataset('rows', data=rng.random(16 * 4096), chunks=(4096,), compression='gzip')
    f.create_dataset('tiles', data=rng.random((256, 256)), chunks=(64, 64), compression='gzip')
out = {}
with h5py.File(path, 'r') as f:
    for n in f:
        ds = f[n]
        out[n] = [dict(offset=list(c.chunk_offset), addr=c.byte_offset, size=c.size)
                  for c in (ds.id.get_chunk_info(i) for i in range(ds.id.get_num_chunks()))]
out['bomb_stream'] = zlib.compress(bytes(4 * 4096 * 8), 9).hex()
print(json.dumps(out))
"#;

/// Several bad chunks decoded on several threads: the error is always that
/// of the first bad chunk in chunk order (a checksum mismatch), never that
/// of a later one (inflating past the chunk, `Limit`) that another thread
/// happened to finish first — from memory and from a file on disk alike
/// (found by the differential fuzz target).
#[test]
fn first_bad_chunk_is_reported_whatever_the_timing() {
    let Some((info, mut b, path)) = make(MAKE_MANY, "corrupt-many") else {
        return;
    };
    let hex = info["bomb_stream"].as_str().unwrap();
    let bomb: Vec<u8> = (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    let mut firsts = Vec::new();
    for ds in ["rows", "tiles"] {
        let n = info[ds].as_array().unwrap().len();
        // Chunk 3: its adler32 broken. Every chunk after it: a bomb.
        let (off, addr, size) = chunk(&info, ds, 3);
        b[addr + size - 1] ^= 0xff;
        firsts.push((ds, off));
        for i in 4..n {
            let (_, addr, size) = chunk(&info, ds, i);
            assert!(bomb.len() <= size);
            b[addr..addr + bomb.len()].copy_from_slice(&bomb);
        }
    }
    std::fs::write(&path, &b).unwrap();
    for _ in 0..25 {
        for f in [
            File::from_bytes(b.clone()).unwrap(),
            File::open(&path).unwrap(),
        ] {
            for (ds, off) in &firsts {
                let e = f
                    .dataset(&format!("/{ds}"))
                    .unwrap()
                    .read_raw()
                    .expect_err("bad chunks");
                let text = e.to_string();
                assert!(
                    matches!(e.kind(), ErrorKind::Corrupt | ErrorKind::Checksum),
                    "/{ds}: {:?}: {text}",
                    e.kind()
                );
                assert!(text.contains(&coords(off)), "not {}: {text}", coords(off));
            }
        }
    }
    std::fs::remove_file(&path).ok();
}
