//! I/O patterns: how many reads, and how many bytes, opening a file and
//! reading a little of it costs. The source is a counting `ReadAt` that does
//! not expose its bytes as one slice, so every byte the reader needs goes
//! through `read_at` (as with `FileSource`). Files are written by h5py
//! (`io_pattern/gen.py`); the data read is checked against the formula the
//! generator used.
//!
//! Bounds, and why (each structure should cost one read, plus one for a
//! prefix where the size is only known from it; a few reads of slack):
//! - Opening a file and listing its 81-member root group. v1.h5: superblock
//!   (signature probe + block: 2), root object header (2), the group's B-tree
//!   node (1), local heap (header + data: 2) and the 20 symbol-table nodes
//!   libhdf5 wrote (4 entries each, one read each): 27, so N = 28 (it was 46
//!   before nodes were read in one go). latest.h5: superblock (2), root
//!   object header (2), fractal heap header (2), v2 B-tree header and leaf
//!   (2), heap root indirect block (1) and its 3 direct blocks (3): 12, so
//!   N = 16 (it was 172 when every link re-read its heap blocks). Bytes: all
//!   metadata, ≤ 64 KiB (the file holds ~10 MB of chunks).
//! - Reading a 10 x 10 window inside one chunk of a 4096-chunk dataset with a
//!   v1 B-tree index (three levels as libhdf5 wrote it, nodes ≤ 4 KiB) reads
//!   the stored chunk plus one root-to-leaf path: ≤ 8 reads and ≤ the
//!   chunk's stored size + 16 KiB. Reading the whole index instead (as before
//!   the walk was pruned to the selection) takes 76 reads and ~300 KB.
//! - Reading a 10 x 10 window inside one chunk through each layout-4 chunk
//!   index (`indexes.h5` and latest.h5's `big`) reads only the index parts
//!   that can hold that chunk, plus the chunk:
//!   - fixed array, paged (latest.h5 `big`: 4096 entries of 20 bytes in 4
//!     pages of 1024): header, data block prefix with the page bitmap, the
//!     one page holding the entry, the chunk: 4 reads, ≤ the chunk + 21 KiB
//!     (the page is 20 KiB). Reading every page (before the walk was pruned)
//!     took 7 reads and 83 KB.
//!   - fixed array, unpaged (`fa_small`, 256 entries): header, the whole
//!     data block (at most one page by construction; 256 entries of 8 bytes),
//!     the chunk: 3 reads, ≤ the chunk + 3 KiB (as before: a check of the
//!     values and of the bound).
//!   - implicit (`implicit`, 4096 chunks of 512 bytes, no index structure):
//!     the chunk only: 1 read of 512 bytes, with the index-entry limit set
//!     to 1000 — the box's chunks are enumerated, not the grid's (before,
//!     enumerating all 4096 failed that limit).
//!   - extensible array (`ea`: 66560 chunk slots, 16384 + 544 allocated;
//!     libhdf5's parameters: 4 elements in the index block, data blocks of
//!     16 elements and up, pages of 1024): header, index block, the super
//!     block holding the data block's address, the data block (unpaged: at
//!     most 1024 entries of 8 bytes, read whole), the chunk: 5 reads, ≤ the
//!     chunk + 10 KiB. A chunk of the first super blocks, whose data block
//!     addresses sit in the index block: 4 reads, ≤ the chunk + 2 KiB. The
//!     whole index (before) took 44 reads and 58 KB.
//!   - extensible array, paged (`ea_paged`: the chunk lies in super block
//!     13, data blocks of 2048 entries in 2 pages): header, index block,
//!     super block (with the page bitmaps), data block prefix, the one page,
//!     the chunk: 6 reads, ≤ the chunk + 10 KiB (the page is 8 KiB). The
//!     whole (sparse) index took 9 reads and 26 KB.
//!   - v2 B-tree (`bt2`: 4096 chunks, gzip, record type 11, nodes of 2 KiB,
//!     depth 2 as libhdf5 wrote it): header, root, one internal node, one
//!     leaf, the chunk: 5 reads, ≤ the chunk + 7 KiB. Reading every node
//!     (before) took 77 reads and 154 KB.
//! - Reading an overlapping window again is served by the dataset's chunk
//!   cache: no chunk is decoded twice (hit/miss counters).

use h5fmt::data::hyperslab::{Selection, SliceDim};
use h5fmt::io::ReadAt;
use h5fmt::{File, Limits};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

struct Counting {
    data: Vec<u8>,
    reads: AtomicU64,
    bytes: AtomicU64,
}

impl Counting {
    fn take(&self) -> (u64, u64) {
        (
            self.reads.swap(0, Ordering::SeqCst),
            self.bytes.swap(0, Ordering::SeqCst),
        )
    }
}

impl ReadAt for Counting {
    fn len(&self) -> u64 {
        self.data.len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> h5fmt::Result<()> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.bytes.fetch_add(buf.len() as u64, Ordering::SeqCst);
        self.data.read_at(pos, buf)
    }
    // No `as_slice`: nothing is read without `read_at`.
}

fn python() -> Option<PathBuf> {
    let mut cands = Vec::new();
    if let Some(v) = std::env::var_os("H5FMT_VENV").filter(|v| !v.is_empty()) {
        cands.push(PathBuf::from(v).join("bin").join("python"));
    }
    cands.push(PathBuf::from("/work/main/.venv/bin/python"));
    cands.into_iter().find(|p| p.exists())
}

/// Generate the files once per test binary run; `None` (skip) without h5py.
fn files() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        let Some(py) = python() else {
            println!("io_pattern: SKIPPED (no Python venv with h5py; set H5FMT_VENV)");
            return None;
        };
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("io_pattern");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/io_pattern/gen.py");
        let st = Command::new(&py)
            .arg(script)
            .arg(&dir)
            .status()
            .expect("run gen.py");
        assert!(st.success(), "gen.py failed: {st}");
        Some(dir)
    })
    .clone()
}

fn open(path: &Path) -> (File, Arc<Counting>) {
    open_with(path, Limits::default())
}

fn open_with(path: &Path, limits: Limits) -> (File, Arc<Counting>) {
    let src = Arc::new(Counting {
        data: std::fs::read(path).unwrap(),
        reads: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let f = File::from_source(src.clone(), limits).unwrap();
    (f, src)
}

fn window(r0: u64, c0: u64, h: u64, w: u64) -> Selection {
    Selection::Hyperslab(vec![
        SliceDim {
            start: r0,
            stride: 1,
            count: h,
            block: 1,
        },
        SliceDim {
            start: c0,
            stride: 1,
            count: w,
            block: 1,
        },
    ])
}

fn expected(r0: u64, c0: u64, h: u64, w: u64) -> Vec<u8> {
    expected_where(r0, c0, h, w, &|_| true)
}

/// As [`expected`], with 0 (the fill value) in the rows not `written`.
fn expected_where(r0: u64, c0: u64, h: u64, w: u64, written: &dyn Fn(u64) -> bool) -> Vec<u8> {
    let mut v = Vec::with_capacity((h * w * 2) as usize);
    for r in r0..r0 + h {
        let on = written(r);
        for c in c0..c0 + w {
            let x = if on { ((7 * r + c) % 65536) as u16 } else { 0 };
            v.extend_from_slice(&x.to_le_bytes());
        }
    }
    v
}

#[test]
fn open_and_list_root() {
    let Some(dir) = files() else { return };
    for name in ["v1.h5", "latest.h5"] {
        let (f, src) = open(&dir.join(name));
        let names = f.root().unwrap().member_names().unwrap();
        assert_eq!(names.len(), 81, "{name}: {names:?}");
        assert!(names.iter().any(|n| n == "big"), "{name}");
        let (reads, bytes) = src.take();
        println!("{name}: open + list root: {reads} reads, {bytes} bytes");
        let n = if name == "v1.h5" { 28 } else { 16 };
        assert!(
            reads <= n,
            "{name}: {reads} reads to open and list the root"
        );
        // Metadata only: far below the file's size (the chunks are ~10 MB).
        assert!(bytes <= 64 << 10, "{name}: {bytes} bytes to list the root");
    }
}

#[test]
fn one_chunk_reads_chunk_and_index_path() {
    let Some(dir) = files() else { return };
    let (f, src) = open(&dir.join("v1.h5"));
    let ds = f.dataset("big").unwrap();
    src.take();
    // Rows 1000..1010, columns 2000..2010: inside chunk (960, 1984).
    let got = ds.read_slice_raw(&window(1000, 2000, 10, 10)).unwrap();
    assert_eq!(got, expected(1000, 2000, 10, 10));
    let (reads, bytes) = src.take();
    // The stored size of that chunk, from the full index.
    let chunk = match ds.layout() {
        h5fmt::format::message::Layout::Chunked(cl) => {
            let recs = h5fmt::read::chunks::chunk_records(
                f.storage(),
                f.ctx(),
                cl,
                ds.shape(),
                ds.shape(),
                2,
                true,
            )
            .unwrap();
            assert_eq!(recs.len(), 4096);
            recs.iter()
                .find(|r| r.offsets == [960, 1984])
                .expect("chunk (960, 1984)")
                .size
        }
        other => panic!("not chunked: {other:?}"),
    };
    src.take();
    println!("one chunk: {reads} reads, {bytes} bytes (chunk {chunk} bytes)");
    assert!(reads <= 8, "{reads} reads for one chunk");
    assert!(
        bytes <= chunk + (16 << 10),
        "{bytes} bytes read for a chunk of {chunk} bytes"
    );
    // Again: the chunk comes from the cache, only the index path is read.
    let hits = ds.chunk_cache().stats().hits;
    let again = ds.read_slice_raw(&window(1002, 2001, 5, 5)).unwrap();
    assert_eq!(again, expected(1002, 2001, 5, 5));
    let (_, bytes) = src.take();
    assert_eq!(ds.chunk_cache().stats().hits, hits + 1);
    assert!(bytes <= 16 << 10, "{bytes} bytes read for a cached chunk");
}

#[test]
fn windows_match_and_cache_avoids_redecoding() {
    let Some(dir) = files() else { return };
    for name in ["v1.h5", "latest.h5"] {
        let (f, src) = open(&dir.join(name));
        let ds = f.dataset("big").unwrap();
        src.take();
        // 4 x 4 chunks of 8 KiB = 128 KiB: well inside the default budget.
        let w = (1000, 3000, 200, 190);
        let got = ds.read_slice_raw(&window(w.0, w.1, w.2, w.3)).unwrap();
        assert_eq!(got, expected(w.0, w.1, w.2, w.3), "{name}");
        let (reads, _) = src.take();
        // h5py wrote the chunks row by row, so the 4 chunks of each of the
        // window's 4 chunk rows lie back to back: 4 reads for 16 chunks, plus
        // the index (v1: three levels, a few nodes; fixed array: header, data
        // block and its pages).
        println!("{name}: 4 x 4-chunk window: {reads} reads");
        assert!(
            reads <= 4 + 12,
            "{name}: {reads} reads for 16 chunks in 4 runs"
        );
        let first = ds.chunk_cache().stats();
        assert_eq!((first.hits, first.misses), (0, 16), "{name}: {first:?}");
        src.take();
        // An overlapping window, shifted up a row and right a column: same
        // chunks, and the bottom chunk row's rows decoded so far cover it.
        let got = ds
            .read_slice_raw(&window(w.0 - 1, w.1 + 1, w.2, w.3))
            .unwrap();
        assert_eq!(got, expected(w.0 - 1, w.1 + 1, w.2, w.3), "{name}");
        let second = ds.chunk_cache().stats();
        assert_eq!((second.hits, second.misses), (16, 16), "{name}: {second:?}");
        let (_, bytes) = src.take();
        println!("{name}: cached window: {bytes} bytes read");
        // Shifted down a row: the window's last chunk row needs a row more
        // than was decoded of its 4 chunks (only their first rows were), so
        // those 4 are decoded again; the other 12 come from the cache.
        let got = ds.read_slice_raw(&window(w.0 + 1, w.1, w.2, w.3)).unwrap();
        assert_eq!(got, expected(w.0 + 1, w.1, w.2, w.3), "{name}");
        let third = ds.chunk_cache().stats();
        assert_eq!((third.hits, third.misses), (28, 20), "{name}: {third:?}");
        // Disabled cache: every chunk is decoded again.
        ds.chunk_cache().set_budget(0);
        let got = ds.read_slice_raw(&window(w.0, w.1, w.2, w.3)).unwrap();
        assert_eq!(got, expected(w.0, w.1, w.2, w.3), "{name}");
        assert_eq!(ds.chunk_cache().stats().misses, 36, "{name}");
        // Whole-dataset windows across many B-tree leaves agree too.
        for &(r0, c0, h, w) in &[(0, 0, 70, 70), (4000, 4000, 96, 96), (63, 4031, 130, 65)] {
            let got = ds.read_slice_raw(&window(r0, c0, h, w)).unwrap();
            assert_eq!(got, expected(r0, c0, h, w), "{name} {r0} {c0}");
        }
    }
}

/// Rows of `indexes.h5`'s `ea` that the generator wrote.
fn ea_written(r: u64) -> bool {
    r < 16_384 || (130_000..130_512).contains(&r) || (262_144..266_240).contains(&r)
}

/// Rows of `indexes.h5`'s `ea_paged` that the generator wrote.
fn ea_paged_written(r: u64) -> bool {
    (2_097_152..2_129_920).contains(&r)
}

/// The stored size of the chunk at `offsets`, from the full index.
fn stored_chunk_size(f: &File, ds: &h5fmt::Dataset, offsets: &[u64]) -> u64 {
    let h5fmt::format::message::Layout::Chunked(cl) = ds.layout() else {
        panic!("{}: not chunked", ds.path());
    };
    let max: Vec<u64> = ds
        .maxshape()
        .unwrap_or_default()
        .iter()
        .map(|m| m.unwrap_or(u64::MAX))
        .collect();
    let recs = h5fmt::read::chunks::chunk_records(
        f.storage(),
        f.ctx(),
        cl,
        ds.shape(),
        &max,
        2,
        !ds.filters().filters.is_empty(),
    )
    .unwrap();
    recs.iter()
        .find(|r| r.offsets == offsets)
        .unwrap_or_else(|| panic!("{}: no chunk at {offsets:?}", ds.path()))
        .size
}

#[test]
fn one_chunk_per_chunk_index() {
    use h5fmt::format::message::{ChunkIndex, Layout};
    let Some(dir) = files() else { return };
    struct Case {
        file: &'static str,
        name: &'static str,
        kind: &'static str,
        /// Top-left corner of the 10 x 10 window.
        at: (u64, u64),
        /// Element offsets of the chunk holding it.
        chunk_at: [u64; 2],
        max_reads: u64,
        /// Bytes allowed beyond the chunk's stored size.
        max_index_bytes: u64,
        /// `Limits::max_index_entries`.
        entries: u64,
    }
    let case = |file, name, kind, at, chunk_at, max_reads, max_index_bytes, entries| Case {
        file,
        name,
        kind,
        at,
        chunk_at,
        max_reads,
        max_index_bytes,
        entries,
    };
    const ANY: u64 = 1 << 40; // the default index-entry limit
    #[rustfmt::skip]
    let cases = [
        case("latest.h5", "big", "fa", (1000, 2000), [960, 1984], 4, 21 << 10, ANY),
        case("indexes.h5", "fa_small", "fa", (100, 34), [96, 32], 3, 3 << 10, ANY),
        case("indexes.h5", "implicit", "implicit", (500, 802), [496, 800], 1, 0, 1000),
        case("indexes.h5", "ea", "ea", (264_995, 18), [264_992, 16], 5, 10 << 10, ANY),
        case("indexes.h5", "ea", "ea", (100, 40), [96, 32], 4, 2 << 10, ANY),
        case("indexes.h5", "ea_paged", "ea", (2_120_003, 3), [2_120_000, 0], 6, 10 << 10, ANY),
        case("indexes.h5", "bt2", "bt2", (500, 802), [496, 800], 5, 7 << 10, ANY),
    ];
    for c in cases {
        let Case {
            file,
            name,
            kind,
            at: (r0, c0),
            chunk_at,
            max_reads,
            max_index_bytes,
            entries,
        } = c;
        let limits = Limits {
            max_index_entries: entries,
            ..Limits::default()
        };
        let (f, src) = open_with(&dir.join(file), limits);
        let ds = f.dataset(name).unwrap();
        let Layout::Chunked(cl) = ds.layout() else {
            panic!("{name}: not chunked")
        };
        let got_kind = match cl.index {
            ChunkIndex::FixedArray { .. } => "fa",
            ChunkIndex::Implicit { .. } => "implicit",
            ChunkIndex::ExtensibleArray { .. } => "ea",
            ChunkIndex::BTreeV2 { .. } => "bt2",
            _ => "other",
        };
        assert_eq!(got_kind, kind, "{name}: {:?}", cl.index);
        src.take();
        let written: &dyn Fn(u64) -> bool = match name {
            "ea" => &ea_written,
            "ea_paged" => &ea_paged_written,
            _ => &|_| true,
        };
        let got = ds.read_slice_raw(&window(r0, c0, 10, 10)).unwrap();
        assert_eq!(got, expected_where(r0, c0, 10, 10, written), "{name}");
        let (reads, bytes) = src.take();
        let chunk = if entries == ANY {
            stored_chunk_size(&f, &ds, &chunk_at)
        } else {
            16 * 16 * 2
        };
        src.take();
        println!("{file}/{name} ({kind}): one chunk: {reads} reads, {bytes} bytes (chunk {chunk})");
        assert!(reads <= max_reads, "{name}: {reads} reads for one chunk");
        assert!(
            bytes <= chunk + max_index_bytes,
            "{name}: {bytes} bytes read for a chunk of {chunk} bytes"
        );
    }
}

#[test]
fn whole_datasets_of_every_index() {
    let Some(dir) = files() else { return };
    let (f, _src) = open(&dir.join("indexes.h5"));
    for name in ["fa_small", "implicit", "ea", "bt2"] {
        let ds = f.dataset(name).unwrap();
        let (rows, cols) = (ds.shape()[0], ds.shape()[1]);
        let written: &dyn Fn(u64) -> bool = if name == "ea" { &ea_written } else { &|_| true };
        let all = ds.read_raw().unwrap();
        assert!(
            all == expected_where(0, 0, rows, cols, written),
            "{name}: whole dataset differs"
        );
        // Windows across chunk boundaries, and one reaching the last chunk.
        for &(r0, c0, h, w) in &[(5, 7, 40, 33), (rows - 37, cols - 29, 37, 29)] {
            let got = ds.read_slice_raw(&window(r0, c0, h, w)).unwrap();
            assert_eq!(
                got,
                expected_where(r0, c0, h, w, written),
                "{name} {r0} {c0}"
            );
        }
    }
    let ea = f.dataset("ea").unwrap();
    for &(r0, c0, h, w) in &[
        (129_990, 3, 40, 61),
        (65_530, 0, 300, 64),
        (262_100, 10, 200, 40),
    ] {
        let got = ea.read_slice_raw(&window(r0, c0, h, w)).unwrap();
        assert_eq!(
            got,
            expected_where(r0, c0, h, w, &ea_written),
            "ea {r0} {c0}"
        );
    }
}
