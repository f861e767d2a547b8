//! `h5 table sql FILE "SELECT …"`: SQL over every HEP001 table of a file
//! (DataFusion, through `h5table-datafusion`; h5cli feature `sql`).
//!
//! Table names: each table is registered under its path without the leading
//! slash, each further `/` turned into `_` (`/t` → `t`, `/run1/events` →
//! `run1_events`), and under its full path, which SQL needs quoted
//! (`"/run1/events"`). When two paths give the same name (`/a_b`, `/a/b`),
//! the first table in file order keeps it and the other is reachable by its
//! quoted path. Identifiers are case-sensitive, as HDF5 names are
//! (`SELECT Energy` and `SELECT energy` name different columns); function
//! names and keywords are not. An unknown table is a usage error that lists
//! the names registered.
//!
//! Only queries run: DDL (`CREATE …`), DML (`INSERT`, `COPY … TO`) and
//! statements (`SET`) are refused, so a query never writes a file.
//!
//! Filters the h5table engine evaluates exactly are pushed down to it (see
//! `h5table_datafusion`); search indexes narrow the rows only under
//! `--indexes verify|trust`.
//!
//! Output: an aligned text table (arrow's pretty printer) when standard
//! output is a terminal, else RFC 4180 CSV (a header of column names, nulls
//! as empty cells); `--format csv|json|parquet|table` and `-o FILE` as for
//! `h5 table cat`. Exit status: 0 answered, 1 the file cannot be read (or
//! the query fails while reading it), 2 a usage error (SQL syntax, an
//! unknown table or column, a type error, a statement that is not a query).

use clap::ValueEnum;
use datafusion::arrow::array::{Array, ArrayRef, RecordBatch, StringArray};
use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::error::ArrowError;
use datafusion::arrow::util::display::{ArrayFormatter, FormatOptions};
use datafusion::error::DataFusionError;
use datafusion::execution::context::SQLOptions;
use datafusion::prelude::{SessionConfig, SessionContext};
use h5table_datafusion::datafusion;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::Arc;

use crate::table::Status;

/// Output format of `h5 table sql`.
#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SqlFormat {
    /// An aligned text table (the default when stdout is a terminal).
    Table,
    /// RFC 4180 CSV with a header of column names, nulls as empty cells (the default otherwise).
    Csv,
    /// JSON lines: one object per row, nulls as null (as `h5 table cat --format json`).
    Json,
    /// Apache Parquet (zstd), to -o FILE or a pipe.
    Parquet,
}

/// What `h5 table sql` does besides the query.
#[derive(Debug, Clone, Default)]
pub struct SqlOptions {
    /// Output format (`None`: [`SqlFormat::Table`] to a terminal, else CSV).
    pub format: Option<SqlFormat>,
    /// Write here instead of standard output.
    pub output: Option<PathBuf>,
    /// Which search indexes pushed-down filters may use.
    pub indexes: h5table_datafusion::IndexPolicy,
}

/// Why `h5 table sql` failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SqlError {
    /// The query or the options are wrong (exit 2).
    Usage(String),
    /// The file or a table cannot be read, or writing the output failed (exit 1).
    File(String),
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SqlError::Usage(m) | SqlError::File(m) => f.write_str(m),
        }
    }
}

fn file_err(e: impl std::fmt::Display) -> SqlError {
    SqlError::File(e.to_string())
}

/// A DataFusion error as usage (the query is wrong) or file (reading failed).
fn classify(e: DataFusionError) -> SqlError {
    let usage = matches!(
        e.find_root(),
        DataFusionError::SQL(..)
            | DataFusionError::Plan(_)
            | DataFusionError::SchemaError(..)
            | DataFusionError::NotImplemented(_)
            | DataFusionError::Configuration(_)
    );
    let msg = e.to_string();
    if usage {
        SqlError::Usage(msg)
    } else {
        SqlError::File(msg)
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_csv(batches: &[RecordBatch], schema: &Schema, out: &mut dyn Write) -> Result<(), String> {
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
        let mut text = String::new();
        for r in 0..b.num_rows() {
            for (j, f) in fmts.iter().enumerate() {
                if j > 0 {
                    text.push(',');
                }
                text.push_str(&csv_field(&f.value(r).to_string()));
            }
            text.push('\n');
        }
        out.write_all(text.as_bytes()).map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// Whether `h5 table cat --format json` writes this type natively.
fn json_native(t: &DataType) -> bool {
    use DataType::*;
    match t {
        Boolean | Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | UInt64 | Float16
        | Float32 | Float64 | Utf8 | LargeUtf8 | Utf8View | Binary | LargeBinary | BinaryView
        | FixedSizeBinary(_) => true,
        Dictionary(k, v) => **k == Int32 && json_native(v),
        Struct(fields) => fields.iter().all(|f| json_native(f.data_type())),
        _ => false,
    }
}

/// The answer with each column of a type JSON lines has no form for (dates,
/// decimals, lists, …) replaced by its Arrow display strings.
fn json_ready(
    schema: &SchemaRef,
    batches: &[RecordBatch],
) -> Result<(SchemaRef, Vec<RecordBatch>), String> {
    if schema.fields().iter().all(|f| json_native(f.data_type())) {
        return Ok((schema.clone(), batches.to_vec()));
    }
    let fields: Vec<Field> = schema
        .fields()
        .iter()
        .map(|f| {
            if json_native(f.data_type()) {
                f.as_ref().clone()
            } else {
                Field::new(f.name(), DataType::Utf8, f.is_nullable())
            }
        })
        .collect();
    let out_schema = Arc::new(Schema::new(fields));
    let opts = FormatOptions::default();
    let batches = batches
        .iter()
        .map(|b| {
            let cols = b
                .columns()
                .iter()
                .map(|c| {
                    if json_native(c.data_type()) {
                        return Ok(c.clone());
                    }
                    let f = ArrayFormatter::try_new(c.as_ref(), &opts)?;
                    // Logical nulls: a `NULL` literal's array has no null buffer.
                    let nulls = c.logical_nulls();
                    let s: StringArray = (0..c.len())
                        .map(|i| {
                            let null = nulls.as_ref().is_some_and(|n| n.is_null(i));
                            (!null).then(|| f.value(i).to_string())
                        })
                        .collect();
                    Ok(Arc::new(s) as ArrayRef)
                })
                .collect::<Result<Vec<_>, ArrowError>>()?;
            RecordBatch::try_new(out_schema.clone(), cols)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| e.to_string())?;
    Ok((out_schema, batches))
}

/// Write the answer in `format` to `out`.
fn write_answer(
    format: SqlFormat,
    schema: &SchemaRef,
    batches: &[RecordBatch],
    out: &mut dyn Write,
) -> Result<(), String> {
    match format {
        SqlFormat::Csv => write_csv(batches, schema, out),
        SqlFormat::Table => {
            let t = datafusion::arrow::util::pretty::pretty_format_batches_with_schema(
                schema.clone(),
                batches,
            )
            .map_err(|e| e.to_string())?;
            writeln!(out, "{t}").map_err(|e| e.to_string())
        }
        SqlFormat::Json => {
            let (schema, batches) = json_ready(schema, batches)?;
            crate::table_io::write_batches_json_lines(&schema, &batches, out)
                .map(|_| ())
                .map_err(|e| e.0)
        }
        SqlFormat::Parquet => {
            // The answer is in memory already; so is its Parquet form (the
            // writer wants a `Send` sink, which a locked stdout is not).
            let mut buf = Vec::new();
            crate::table_io::write_batches_parquet(
                schema.clone(),
                batches,
                &mut buf,
                &Default::default(),
            )
            .map_err(|e| e.0)?;
            out.write_all(&buf).map_err(|e| e.to_string())
        }
    }
}

/// `name ("/path")` for every table, for an error naming an unknown table.
fn registered(tables: &[(String, Vec<String>)]) -> String {
    tables
        .iter()
        .map(|(path, names)| {
            let bare: Vec<&str> = names
                .iter()
                .filter(|n| *n != path)
                .map(String::as_str)
                .collect();
            if bare.is_empty() {
                format!("\"{path}\"")
            } else {
                format!("{} (\"{path}\")", bare.join(", "))
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Run `query` over the tables of `file` and print the answer to `out` (or
/// to `opts.output`).
///
/// # Errors
/// [`SqlError::Usage`] for SQL errors (syntax, unknown table or column,
/// types, statements that are not queries) and impossible options (Parquet
/// to a terminal); [`SqlError::File`] for unreadable files, tables DataFusion
/// cannot represent, read errors during the query and output errors.
pub fn sql(
    file: &str,
    query: &str,
    opts: &SqlOptions,
    out: &mut dyn Write,
) -> Result<Status, SqlError> {
    let to_terminal = opts.output.is_none() && std::io::stdout().is_terminal();
    let format = opts.format.unwrap_or(if to_terminal {
        SqlFormat::Table
    } else {
        SqlFormat::Csv
    });
    if format == SqlFormat::Parquet && to_terminal {
        return Err(SqlError::Usage(
            "Parquet is binary: give --output FILE or redirect standard output".into(),
        ));
    }
    // Opened once here for the same message as the other commands give.
    drop(h5fmt::File::open(file).map_err(|e| file_err(format!("{file}: {e}")))?);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| file_err(format!("cannot start the query runtime: {e}")))?;
    let (schema, batches) = rt.block_on(async {
        let cfg = SessionConfig::new()
            .set_bool("datafusion.sql_parser.enable_ident_normalization", false);
        let ctx = SessionContext::new_with_config(cfg);
        let popts = h5table_datafusion::ProviderOptions {
            indexes: opts.indexes,
            ..Default::default()
        };
        let tables = h5table_datafusion::register_file(&ctx, file, &popts)
            .map_err(|e| file_err(format!("{file}: {e}")))?;
        if tables.is_empty() {
            return Err(file_err(format!(
                "{file}: no HEP001 table in the file (§7.1)"
            )));
        }
        let read_only = SQLOptions::new()
            .with_allow_ddl(false)
            .with_allow_dml(false)
            .with_allow_statements(false);
        let df = ctx
            .sql_with_options(query, read_only)
            .await
            .map_err(|e| match classify(e) {
                SqlError::Usage(m) if m.contains("table '") && m.contains("not found") => {
                    SqlError::Usage(format!("{m}; {file} has: {}", registered(&tables)))
                }
                other => other,
            })?;
        let schema: SchemaRef = Arc::new(df.schema().as_arrow().clone());
        let batches = df.collect().await.map_err(classify)?;
        Ok::<_, SqlError>((schema, batches))
    })?;
    match &opts.output {
        None => write_answer(format, &schema, &batches, out).map_err(SqlError::File)?,
        Some(path) => {
            // Written next to the destination and renamed into place: a failed
            // write leaves no partial file.
            let mut tmp = path.clone().into_os_string();
            tmp.push(".partial");
            let tmp = PathBuf::from(tmp);
            let r = (|| {
                let f = std::fs::File::create(&tmp).map_err(|e| e.to_string())?;
                let mut w = std::io::BufWriter::new(f);
                write_answer(format, &schema, &batches, &mut w)?;
                w.flush().map_err(|e| e.to_string())?;
                drop(w);
                std::fs::rename(&tmp, path).map_err(|e| e.to_string())
            })();
            if let Err(e) = r {
                let _ = std::fs::remove_file(&tmp);
                return Err(SqlError::File(format!("{}: {e}", path.display())));
            }
        }
    }
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_names() {
        let t = vec![
            ("/t".to_string(), vec!["t".to_string(), "/t".to_string()]),
            ("/a_b".to_string(), vec!["a_b".into(), "/a_b".into()]),
            ("/a/b".to_string(), vec!["/a/b".into()]),
        ];
        assert_eq!(registered(&t), r#"t ("/t"), a_b ("/a_b"), "/a/b""#);
    }

    #[test]
    fn errors_are_classified() {
        assert!(matches!(
            classify(DataFusionError::Plan("x".into())),
            SqlError::Usage(_)
        ));
        assert!(matches!(
            classify(DataFusionError::Execution("x".into())),
            SqlError::File(_)
        ));
        let io = std::io::Error::other("disk");
        assert!(matches!(
            classify(DataFusionError::Context(
                "scan".into(),
                Box::new(DataFusionError::External(Box::new(io)))
            )),
            SqlError::File(_)
        ));
    }
}
