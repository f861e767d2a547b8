//! Write-timing harness for `cargo xtask bench write` (not a test).
//!
//! `bench_write MODE OUT REPS [INPUT]` writes OUT once as a warm-up and then
//! `REPS` times, printing one line per timed write: `seconds bytes
//! cpu_seconds` (wall time, bytes of the file, user + system CPU time of the
//! process, all threads). MODE is `contiguous`, `gzip` (chunks of 131072,
//! gzip 4 + shuffle), `zstd` (chunks of 131072, zstd 3 + shuffle) — each
//! writing the f64 values of the raw little-endian file INPUT as dataset
//! `data` — or `meta` (10,000 groups of 10 scalar i64 attributes each).
//!
//! Every timed write creates the file, writes and closes it, like h5py's
//! `with h5py.File(OUT, 'w')` block. The sink writes with `pwrite` and does
//! not `fsync` at close (h5py does not either; `FileWriter::create` does).

use h5fmt::write::{Format, Sink};
use h5fmt::FileWriter;
use std::os::unix::fs::FileExt;
use std::time::Instant;

/// A file sink without the `fsync` of `FileWriter::create`'s sink.
struct NoSyncFile(std::fs::File);

impl Sink for NoSyncFile {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> h5fmt::Result<()> {
        self.0
            .write_all_at(data, offset)
            .map_err(|e| h5fmt::Error::io(format!("write: {e}")))
    }
}

/// User + system CPU seconds of this process (all threads).
fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

const CHUNK: u64 = 131072;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 3 {
        eprintln!("usage: bench_write contiguous|gzip|zstd|meta OUT REPS [INPUT]");
        std::process::exit(2);
    }
    let (mode, out) = (args[0].as_str(), args[1].as_str());
    let reps: usize = args[2].parse().expect("REPS");
    let values: Vec<f64> = match args.get(3) {
        Some(p) => std::fs::read(p)
            .expect("input")
            .chunks_exact(8)
            .map(|b| f64::from_le_bytes(b.try_into().unwrap()))
            .collect(),
        None => Vec::new(),
    };
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
    once();
    for _ in 0..reps {
        let (t, c) = (Instant::now(), cpu_seconds());
        let n = once();
        println!(
            "{:.6} {n} {:.6}",
            t.elapsed().as_secs_f64(),
            cpu_seconds() - c
        );
    }
}
