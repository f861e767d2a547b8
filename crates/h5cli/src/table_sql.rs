//! `h5 table sql FILE "SELECT …"`: SQL over every HEP001 table of a file
//! (DataFusion, through `h5table-datafusion`).
//!
//! Each table is registered under its path without the leading slash, `/`
//! turned into `_` (`/run1/events` → `run1_events`), and under its full path
//! (quoted: `"/run1/events"`). Identifiers are case-sensitive, as HDF5 names
//! are. The result is CSV (RFC 4180, a header of column names, nulls as
//! empty cells), or a pretty table when stdout is a terminal.

use clap::ValueEnum;
use datafusion::arrow::array::RecordBatch;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::prelude::{SessionConfig, SessionContext};
use h5table_datafusion::datafusion;
use std::io::{IsTerminal, Write};

use crate::table::Status;

/// Output format of `h5 table sql`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFormat {
    /// RFC 4180 CSV with a header of column names (the default unless stdout is a terminal).
    Csv,
    /// A pretty-printed table (the default when stdout is a terminal).
    Table,
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_csv(
    batches: &[RecordBatch],
    schema: &datafusion::arrow::datatypes::Schema,
    out: &mut dyn Write,
) -> Result<(), String> {
    let header: Vec<String> = schema
        .fields()
        .iter()
        .map(|f| csv_field(f.name()))
        .collect();
    writeln!(out, "{}", header.join(",")).map_err(|e| e.to_string())?;
    let opts = FormatOptions::default().with_null("");
    for b in batches {
        let fmts = b
            .columns()
            .iter()
            .map(|c| ArrayFormatter::try_new(c.as_ref(), &opts))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.to_string())?;
        for r in 0..b.num_rows() {
            let row: Vec<String> = fmts
                .iter()
                .map(|f| csv_field(&f.value(r).to_string()))
                .collect();
            writeln!(out, "{}", row.join(",")).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

/// Run `query` over the tables of `file` and print the result to `out`.
///
/// # Errors
/// A message for unreadable files, tables DataFusion cannot represent, and
/// SQL errors (parse, planning, execution).
pub fn sql(
    file: &str,
    query: &str,
    format: Option<SqlFormat>,
    out: &mut dyn Write,
) -> Result<Status, String> {
    let format = format.unwrap_or(if std::io::stdout().is_terminal() {
        SqlFormat::Table
    } else {
        SqlFormat::Csv
    });
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the query runtime: {e}"))?;
    let (schema, batches) = rt.block_on(async {
        let cfg = SessionConfig::new()
            .set_bool("datafusion.sql_parser.enable_ident_normalization", false);
        let ctx = SessionContext::new_with_config(cfg);
        let opts = h5table_datafusion::ProviderOptions::default();
        let tables = h5table_datafusion::register_file(&ctx, file, &opts)
            .map_err(|e| format!("{file}: {e}"))?;
        if tables.is_empty() {
            return Err(format!("{file}: no HEP001 table in the file (§7.1)"));
        }
        let df = ctx.sql(query).await.map_err(|e| e.to_string())?;
        let schema = df.schema().as_arrow().clone();
        let batches = df.collect().await.map_err(|e| e.to_string())?;
        Ok::<_, String>((schema, batches))
    })?;
    match format {
        SqlFormat::Csv => write_csv(&batches, &schema, out)?,
        SqlFormat::Table => {
            let t = datafusion::arrow::util::pretty::pretty_format_batches(&batches)
                .map_err(|e| e.to_string())?;
            writeln!(out, "{t}").map_err(|e| e.to_string())?;
        }
    }
    Ok(0)
}
