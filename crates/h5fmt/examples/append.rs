//! Append 10^6 f64 rows in batches of 1000 to an unlimited chunked dataset
//! with [`h5fmt::FileEditor`], flushing at the end; prints the time.
//!
//! `cargo run --release -p h5fmt --example append -- [OUT.h5] [ROWS] [BATCH]`

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
    let mut done = 0u64;
    while done < rows {
        let n = batch.min(rows - done);
        let v: Vec<f64> = (done..done + n).map(|i| i as f64).collect();
        ed.append("/x", &v)?;
        done += n;
    }
    ed.close()?;
    println!(
        "appended {rows} rows in batches of {batch}: {:.3} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}
