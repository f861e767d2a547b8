//! Append 10^6 f64 rows in batches of 1000 to an unlimited chunked dataset
//! with [`h5fmt::FileEditor`], flushing at the end; prints the time.
//!
//! `cargo run --release -p h5fmt --example append -- [OUT.h5] [ROWS] [BATCH] [FLUSH_EVERY]`
//! (`FLUSH_EVERY` batches per commit; default 0: one commit at the end;
//! `H5FMT_NOSYNC=1` commits without `fsync`).

use h5fmt::write::{FileWriter, Format};
use h5fmt::FileEditor;
use std::time::Instant;

fn main() -> h5fmt::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .cloned()
        .unwrap_or_else(|| "/tmp/h5fmt_append.h5".into());
    let rows: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let batch: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1000);
    let every: u64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(0);
    let mut w = FileWriter::create_with(&path, Format::V18)?;
    w.root()
        .create_dataset("x")
        .dtype(h5fmt::Datatype::float_le(8))
        .shape(&[0])
        .maxshape(&[None])
        .chunks(&[batch.max(1)])
        .create()?;
    w.close()?;
    let t = Instant::now();
    let mut ed = FileEditor::open(&path)?;
    // H5FMT_NOSYNC=1: commits without fsync (what libhdf5's H5Fflush does).
    ed.sync = std::env::var_os("H5FMT_NOSYNC").is_none();
    let ed_sync = ed.sync;
    let mut done = 0u64;
    while done < rows {
        let n = batch.min(rows - done);
        let v: Vec<f64> = (done..done + n).map(|i| i as f64).collect();
        ed.append("/x", &v)?;
        done += n;
        if every > 0 && (done / batch.max(1)).is_multiple_of(every) {
            ed.flush()?;
        }
    }
    ed.close()?;
    println!(
        "appended {rows} rows in batches of {batch}, a commit every {every} batches (0: at the end), fsync {}: {:.3} s",
        ed_sync,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
