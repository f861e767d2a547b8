//! Our side of `cargo xtask bench table`: one operation, a warm-up then
//! `reps` timed runs; prints each run's seconds on one line (`t <secs>`).
//! With `serve` for `reps`, times one run per line read from stdin until it
//! ends (`cargo xtask bench table` alternates ours and the reference so).
//!
//! ```text
//! bench_table arrow-col FILE TABLE COLUMN [reps]   Arrow export of one column, all rows, one batch
//! bench_table cat-parquet FILE TABLE OUT [reps]    `h5 table cat --format parquet` (zstd)
//! bench_table read-parquet FILE [reps]             Parquet → Arrow batches (the import reader)
//! ```

#[allow(dead_code)]
#[path = "../src/table_io.rs"]
mod table_io;

use std::time::Instant;

fn main() {
    if let Err(e) = real_main() {
        eprintln!("bench_table: {e}");
        std::process::exit(1);
    }
}

fn open(path: &str, table: &str) -> Result<h5table::Table, Box<dyn std::error::Error>> {
    let file = h5fmt::File::open(path)?;
    Ok(h5table::Table::open(&file.group(table)?)?)
}

fn real_main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| -> Result<&str, String> {
        args.get(i)
            .map(String::as_str)
            .ok_or_else(|| format!("missing argument {i}; see the source for usage"))
    };
    // `None`: serve.
    let reps_at = |i: usize| match args.get(i).map(String::as_str) {
        Some("serve") => None,
        r => Some(r.and_then(|r| r.parse().ok()).unwrap_or(5usize)),
    };
    let mut op: Box<dyn FnMut() -> Result<u64, Box<dyn std::error::Error>>>;
    let reps;
    match arg(0)? {
        "arrow-col" => {
            let table = open(arg(1)?, arg(2)?)?;
            let col = arg(3)?.to_string();
            reps = reps_at(4);
            op = Box::new(move || {
                let opts = h5table::arrow::ExportOptions {
                    batch_rows: table.nrows().max(1),
                    ..Default::default()
                };
                let b = h5table::arrow::read_batch(&table, Some(&[&col]), 0..table.nrows(), &opts)?;
                Ok(b.num_rows() as u64)
            });
        }
        "cat-parquet" => {
            let table = open(arg(1)?, arg(2)?)?;
            let out = std::path::PathBuf::from(arg(3)?);
            reps = reps_at(4);
            op = Box::new(move || {
                Ok(table_io::write_parquet_file(
                    &table,
                    None,
                    None,
                    &out,
                    &table_io::ParquetOptions::default(),
                )?)
            });
        }
        "read-parquet" => {
            let path = std::path::PathBuf::from(arg(1)?);
            reps = reps_at(2);
            op = Box::new(move || {
                let mut n = 0u64;
                for b in table_io::read_parquet(&path, 1 << 16)? {
                    n += b?.num_rows() as u64;
                }
                Ok(n)
            });
        }
        other => return Err(format!("unknown mode {other:?}").into()),
    }
    let rows = op()?; // warm-up
    println!("rows {rows}");
    let mut timed = || -> Result<(), Box<dyn std::error::Error>> {
        let t = Instant::now();
        op()?;
        println!("t {:.6}", t.elapsed().as_secs_f64());
        Ok(())
    };
    match reps {
        Some(reps) => (0..reps).try_for_each(|_| timed()),
        None => std::io::stdin().lines().try_for_each(|l| {
            l?;
            timed()
        }),
    }
}
