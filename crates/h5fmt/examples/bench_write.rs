//! Write-timing harness for `cargo xtask bench write` (not a test).
//!
//! `bench_write MODE OUT REPS [INPUT]` writes OUT once as a warm-up and then
//! `REPS` times (`-`: once per line of stdin, see `common::timed_runs`),
//! printing one line per timed write: `seconds bytes
//! cpu_seconds` (wall time, bytes of the file, user + system CPU time of the
//! process, all threads). MODE is `contiguous`, `gzip` (chunks of 131072,
//! gzip 4 + shuffle), `zstd` (chunks of 131072, zstd 3 + shuffle) — each
//! writing the f64 values of the raw little-endian file INPUT as dataset
//! `data` — `meta` (10,000 groups of 10 scalar i64 attributes each), or
//! `append`: an empty 1-D dataset of compound rows {t: i64, x: f64, y: f32}
//! (20 bytes, unlimited, chunks of 10,000 rows) grown by 1,000 appends of
//! 1,000 rows each through [`FileEditor::append_raw`] (h5py: `d.resize`
//! and `d[n:] = batch`), then closed.
//!
//! The input values are held in a buffer advised for huge pages, as numpy
//! holds h5py's (see `numpy_like_buffer`).
//!
//! Every timed write creates the file, writes and closes it, like h5py's
//! `with h5py.File(OUT, 'w')` block. The sink writes with `pwrite` and does
//! not `fsync` at close (h5py does not either; `FileWriter::create` does).

use h5fmt::format::datatype::{CompoundMember, Datatype};
use h5fmt::write::{Format, Sink};
use h5fmt::{FileEditor, FileWriter};
use std::os::unix::fs::FileExt;

mod common;

/// A file sink without the `fsync` of `FileWriter::create`'s sink.
struct NoSyncFile(std::fs::File);

impl Sink for NoSyncFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> h5fmt::Result<()> {
        self.0
            .write_all_at(data, offset)
            .map_err(|e| h5fmt::Error::io(format!("write: {e}")))
    }
}

/// An empty vector with room for `n` values, held the way numpy holds the
/// h5py side's input: numpy advises transparent huge pages
/// (`madvise(MADV_HUGEPAGE)`) for arrays of 4 MiB and more on Linux
/// (`numpy._core.multiarray._get_madvise_hugepage()` is true here, and the
/// array's mapping shows `AnonHugePages`), which makes the kernel's copy
/// out of it in `pwrite` cheaper. The same buffer for both sides.
fn numpy_like_buffer(n: usize) -> Vec<f64> {
    let mut v: Vec<f64> = Vec::with_capacity(n);
    let len = n * 8;
    if len >= 4 << 20 {
        let start = (v.as_mut_ptr() as usize + 4095) & !4095;
        let end = (v.as_mut_ptr() as usize + len) & !4095;
        // SAFETY: advice on whole pages inside the vector's own allocation.
        unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
    }
    v
}

const CHUNK: u64 = 131072;
/// Rows appended in total, per batch, and rows per chunk (`append`).
const ROWS: usize = 1_000_000;
const BATCH: usize = 1000;
const ROW_CHUNK: u64 = 10_000;

/// The `append` row type: {t: <i8, x: <f8, y: <f4}, packed (numpy's layout).
fn row_type() -> Datatype {
    let m = |name: &str, offset, dtype| CompoundMember {
        name: name.into(),
        offset,
        dtype,
    };
    Datatype::Compound {
        size: 20,
        members: vec![
            m("t", 0, Datatype::int_le(8, true)),
            m("x", 8, Datatype::float_le(8)),
            m("y", 16, Datatype::float_le(4)),
        ],
    }
}

/// The rows appended: t = i, x = i / 4, y = (i mod 1000) / 2 (all exact).
fn rows() -> Vec<u8> {
    let mut out = Vec::with_capacity(ROWS * 20);
    for i in 0..ROWS {
        out.extend_from_slice(&(i as i64).to_le_bytes());
        out.extend_from_slice(&(i as f64 * 0.25).to_le_bytes());
        out.extend_from_slice(&((i % 1000) as f32 * 0.5).to_le_bytes());
    }
    out
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: bench_write contiguous|gzip|zstd|meta|append OUT REPS [INPUT]");
        std::process::exit(2);
    }
    let (mode, out) = (args[0].as_str(), args[1].as_str());
    let reps = args[2].as_str();
    let values: Vec<f64> = match args.get(3) {
        Some(p) => {
            // Read straight into the advised buffer, as numpy's `fromfile`
            // does (an intermediate copy left most of it without huge pages).
            use std::io::Read;
            let mut f = std::fs::File::open(p).expect("input");
            let n = f.metadata().expect("input").len() as usize / 8;
            let mut v = numpy_like_buffer(n);
            v.resize(n, 0.0);
            // SAFETY: f64 has no invalid bit patterns; the byte view covers
            // exactly the vector's initialised elements.
            let bytes =
                unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), n * 8) };
            f.read_exact(bytes).expect("input");
            if cfg!(target_endian = "big") {
                for x in &mut v {
                    *x = f64::from_le_bytes(x.to_ne_bytes());
                }
            }
            v
        }
        None => Vec::new(),
    };
    let rows = if mode == "append" { rows() } else { Vec::new() };
    let once = || -> u64 {
        let file = std::fs::File::create(out).expect("create");
        let mut fw = FileWriter::with_sink(Box::new(NoSyncFile(file)), Format::default());
        let mut root = fw.root();
        match mode {
            "contiguous" => {
                root.create_dataset("data").write(&values).expect("write");
            }
            "gzip" => {
                root.create_dataset("data")
                    .chunks(&[CHUNK])
                    .shuffle()
                    .deflate(4)
                    .write(&values)
                    .expect("write");
            }
            "zstd" => {
                root.create_dataset("data")
                    .chunks(&[CHUNK])
                    .shuffle()
                    .zstd(3)
                    .write(&values)
                    .expect("write");
            }
            "append" => {
                root.create_dataset("data")
                    .dtype(row_type())
                    .shape(&[0])
                    .maxshape(&[None])
                    .chunks(&[ROW_CHUNK])
                    .create()
                    .expect("create");
                fw.close().expect("close");
                let mut ed = FileEditor::open(out).expect("open");
                ed.sync = false;
                for batch in rows.chunks(BATCH * 20) {
                    ed.append_raw("/data", batch).expect("append");
                }
                ed.close().expect("close");
                return std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
            }
            "meta" => {
                for i in 0..10_000i64 {
                    let mut g = root.create_group(&format!("g{i}")).expect("group");
                    for j in 0..10 {
                        g.set_attr(&format!("a{j}"), i * 10 + j).expect("attr");
                    }
                }
            }
            m => panic!("mode {m}"),
        }
        fw.close().expect("close");
        std::fs::metadata(out).map(|m| m.len()).unwrap_or(0)
    };
    common::timed_runs(reps, once);
}
