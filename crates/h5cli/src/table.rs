//! `h5 table …`: HEP001 column tables from the command line.

use clap::{Parser, Subcommand, ValueEnum};
use h5table::check::{Finding, Severity};
use h5table::{ListSlice, Table, TableColumn};
use std::io::Write;

/// HEP001 column tables: list, describe, print, query, validate.
#[derive(Parser, Debug)]
#[command(
    name = "h5 table",
    about = "HEP001 column tables: list, describe, print, query, validate"
)]
pub struct TableCli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// One line per HEP001 table group: PATH NROWS NCOLS.
    Ls {
        /// The HDF5 file.
        file: String,
    },
    /// The columns of a table: name, datatype, kind, fill value, attributes.
    Schema {
        /// FILE:/table/path (the path may be left out when the file holds one table).
        spec: String,
    },
    /// Print rows [0, NROWS) (or a range) of a table.
    Cat {
        /// FILE:/table/path.
        spec: String,
        /// Only these columns, comma-separated, in this order.
        #[arg(long, value_delimiter = ',')]
        columns: Option<Vec<String>>,
        /// A row range START:END (either side may be left out).
        #[arg(long)]
        rows: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = Format::Csv)]
        format: Format,
        /// Write to this file instead of standard output (Parquet is never written to a terminal).
        #[arg(long, short = 'o')]
        output: Option<std::path::PathBuf>,
    },
    /// Create a table from a CSV or Parquet file (created when missing; one §11 append per batch),
    /// or, with --to, from an HDF5 Table (H5TB), a PyTables Table or an anndata dataframe
    /// (`.h5ad` `/obs`, `/var`): `import SRC.h5:/t --to OUT.h5:/t`.
    Import {
        /// OUT.h5:/table/path (the table must not exist yet); with --to, the source SRC.h5:/table.
        spec: String,
        /// The data: a .csv or .parquet file.
        #[arg(long, required_unless_present = "to", conflicts_with = "to")]
        from: Option<std::path::PathBuf>,
        /// OUT.h5:/table/path of the new HEP001 table, when SPEC is an H5TB or PyTables table or
        /// an anndata dataframe.
        #[arg(long)]
        to: Option<String>,
        /// Rows per chunk of each column.
        #[arg(long, default_value_t = 65_536)]
        chunk_rows: u64,
        /// Compression of each column: zstd, deflate, lz4 or none.
        #[arg(long, default_value = "zstd")]
        compress: String,
        /// Rows per append (and per read of the input).
        #[arg(long, default_value_t = 262_144)]
        batch_rows: usize,
    },
    /// Write a table as a row-oriented compound dataset (an HDF5 Table (H5TB) or a PyTables
    /// Table) or as an anndata dataframe group.
    Export {
        /// IN.h5:/table/path.
        spec: String,
        /// The convention: h5tb, pytables or anndata.
        #[arg(long = "as", value_enum)]
        as_: RowAs,
        /// OUT.h5:/path of the new dataset (the file is created when missing).
        out: String,
        /// Rows per read and append.
        #[arg(long, default_value_t = 65_536)]
        batch_rows: u64,
    },
    /// Append the rows of a CSV or Parquet file to an existing table (columns by name).
    Append {
        /// FILE.h5:/table/path.
        spec: String,
        /// The data: a .csv or .parquet file.
        #[arg(long)]
        from: std::path::PathBuf,
        /// Rows per append (and per read of the input).
        #[arg(long, default_value_t = 262_144)]
        batch_rows: usize,
    },
    /// Rows matching a WHERE expression: `col OP literal` (= != < <= > >=), `col IN (…)`,
    /// `col BETWEEN a AND b`, `col LIKE 'prefix%'`, `col IS [NOT] NULL`, with AND, OR, NOT, ( ).
    Query {
        /// FILE:/table/path.
        spec: String,
        /// The predicate, e.g. "x >= 3 AND name IN ('a', 'b')".
        #[arg(long = "where")]
        where_: String,
        /// Print the matching row positions, one per line (the default).
        #[arg(long)]
        rows: bool,
        /// Print only the number of matching rows.
        #[arg(long, conflicts_with = "rows")]
        count: bool,
        /// Print the matching rows' values as CSV (with --columns: only those).
        #[arg(long, value_enum, conflicts_with_all = ["rows", "count"])]
        format: Option<Format>,
        /// Columns for --format, comma-separated.
        #[arg(long, value_delimiter = ',', requires = "format")]
        columns: Option<Vec<String>>,
        /// Search indexes: ignore (default: indexes are untrusted), verify (use only indexes
        /// equal to their recomputation), trust (use them as stored).
        #[arg(long, value_enum, default_value_t = Indexes::Ignore)]
        indexes: Indexes,
        /// Print the plan to stderr: indexes used, candidate and scanned rows.
        #[arg(long)]
        explain: bool,
    },
    /// Validate every table in the file against HEP001: exit 0 conformant, 1 not.
    Check {
        /// The HDF5 file.
        file: String,
        /// Refuse what lenient mode only warns about (H5T_STD_REF_OBJ references, a CLASS not
        /// declared null-terminated).
        #[arg(long)]
        strict: bool,
        /// Recompute every search index from its column and report a wrong one.
        #[arg(long)]
        verify_indexes: bool,
    },
    /// SQL over every table of FILE (DataFusion): SELECT … FROM t, where `/t` is named `t`
    /// and `/run1/events` `run1_events` (or, quoted, "/run1/events").
    #[cfg(feature = "sql")]
    #[command(after_help = SQL_HELP)]
    Sql {
        /// The HDF5 file.
        file: String,
        /// The query, e.g. "SELECT label, count(*) FROM events GROUP BY label".
        query: String,
        /// Output format (default: table when stdout is a terminal, else csv).
        #[arg(long, value_enum)]
        format: Option<crate::table_sql::SqlFormat>,
        /// Write to this file instead of standard output (Parquet is never written to a terminal).
        #[arg(long, short = 'o')]
        output: Option<std::path::PathBuf>,
        /// Search indexes for the filters pushed to h5table: ignore (default: indexes are
        /// untrusted), verify (use only indexes equal to their recomputation), trust (as stored).
        #[arg(long, value_enum, default_value_t = Indexes::Ignore)]
        indexes: Indexes,
    },
}

/// `h5 table sql --help`: names, examples, exit status.
#[cfg(feature = "sql")]
const SQL_HELP: &str = "\
Table names: every HEP001 table of FILE is registered under its path without the leading
slash, each further '/' turned into '_' (/t -> t, /run1/events -> run1_events), and under
its full path, quoted (\"/run1/events\"). If two paths give the same name, the first table
keeps it and the other is reachable by its quoted path. Names are case-sensitive, as in
HDF5; SQL keywords and functions are not. Filters on columns (=, <, IN, BETWEEN, LIKE
'p%', IS NULL, AND/OR/NOT) run in h5table's engine, which reads only matching rows. Only
queries run: CREATE, INSERT, COPY and SET are refused.

Examples:
  h5 table sql run.h5 \"SELECT label, count(*), avg(energy) FROM events GROUP BY label\"
  h5 table sql run.h5 \"SELECT * FROM events WHERE ts BETWEEN 100 AND 200 LIMIT 10\"
  h5 table sql run.h5 'SELECT count(*) FROM \"/run1/events\" WHERE id = 42' --indexes verify
  h5 table sql run.h5 \"SELECT * FROM events WHERE energy > 100\" --format parquet -o hi.parquet

Exit status: 0 answered, 1 the file cannot be read, 2 a usage error (SQL syntax, an unknown
table or column: the error lists the table names).";

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Indexes {
    /// Never consult a search index.
    Ignore,
    /// Use an index only after recomputing it from its column.
    Verify,
    /// Use indexes as stored.
    Trust,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum RowAs {
    /// What libhdf5's H5TBmake_table writes.
    H5tb,
    /// What PyTables writes for a Table.
    Pytables,
    /// An anndata dataframe group (what `adata.obs` / `anndata.io.write_elem` write).
    Anndata,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// RFC 4180 CSV with a header of column names.
    Csv,
    /// Apache Parquet (zstd), the table's Arrow schema stored in the file.
    Parquet,
    /// JSON lines: one object per row, missing values null.
    Json,
}

/// Exit status of a table command: 0 fine, 1 the file has problems (check findings).
pub type Status = u8;

/// Run `h5 table ARGS…` (`args` without the leading `table`).
///
/// # Errors
/// A one-line message for usage errors and unreadable files or tables.
pub fn run(args: &[String]) -> Result<Status, String> {
    let cli = match TableCli::try_parse_from(
        std::iter::once("h5 table".to_string()).chain(args.iter().cloned()),
    ) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(
                e.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                let _ = e.print();
                return Ok(0);
            }
            return Err(e.render().to_string().trim_end().to_string());
        }
    };
    run_parsed(cli)
}

/// Run an already parsed `h5 table` command (the top-level `h5` parser's subcommand).
/// Problems with the file are printed to stderr and give `Ok(1)`.
///
/// # Errors
/// A usage error found after parsing (`h5 table sql`: the SQL), for exit status 2.
pub fn run_parsed(cli: TableCli) -> Result<Status, String> {
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = match cli.cmd {
        Cmd::Ls { file } => ls(&file, &mut out),
        Cmd::Schema { spec } => schema(&spec, &mut out),
        Cmd::Cat {
            spec,
            columns,
            rows,
            format: Format::Csv,
            output: None,
        } => cat_csv(&spec, columns.as_deref(), rows.as_deref(), &mut out),
        Cmd::Cat {
            spec,
            columns,
            rows,
            format,
            output,
        } => cat_other(
            &spec,
            columns.as_deref(),
            rows.as_deref(),
            format,
            output.as_deref(),
            &mut out,
        ),
        Cmd::Import {
            spec,
            from: None,
            to: Some(to),
            chunk_rows,
            compress,
            batch_rows,
        } => import_rows(&spec, &to, chunk_rows, compress, batch_rows),
        Cmd::Import {
            spec,
            from,
            chunk_rows,
            compress,
            batch_rows,
            ..
        } => match from {
            Some(from) => import(&spec, &from, chunk_rows, compress, batch_rows, false),
            None => Err("h5 table import: --from or --to is required".into()),
        },
        Cmd::Export {
            spec,
            as_,
            out,
            batch_rows,
        } => export_rows(&spec, as_, &out, batch_rows),
        Cmd::Append {
            spec,
            from,
            batch_rows,
        } => import(&spec, &from, 0, String::new(), batch_rows, true),
        Cmd::Query {
            spec,
            where_,
            rows: _,
            count,
            format,
            columns,
            indexes,
            explain,
        } => {
            let policy = policy(indexes);
            if matches!(format, Some(Format::Parquet | Format::Json)) {
                return Err("h5 table query --format: csv only (use --rows and h5 table cat for other formats)".into());
            }
            let how = QueryOut {
                count,
                csv: format.is_some(),
                columns,
                policy,
                explain,
            };
            query(&spec, &where_, &how, &mut out)
        }
        Cmd::Check {
            file,
            strict,
            verify_indexes,
        } => check(&file, strict, verify_indexes, &mut out),
        #[cfg(feature = "sql")]
        Cmd::Sql {
            file,
            query,
            format,
            output,
            indexes,
        } => {
            let opts = crate::table_sql::SqlOptions {
                format,
                output,
                indexes: policy(indexes),
            };
            match crate::table_sql::sql(&file, &query, &opts, &mut out) {
                Ok(s) => Ok(s),
                Err(crate::table_sql::SqlError::File(m)) => Err(m),
                // Exit status 2 (the `h5` parser's usage errors).
                Err(crate::table_sql::SqlError::Usage(m)) => {
                    drop(out.flush());
                    return Err(m);
                }
            }
        }
    };
    let flushed = out.flush().map_err(|e| e.to_string());
    match (r, flushed) {
        (Err(e), _) | (Ok(_), Err(e)) if is_broken_pipe(&e) => Ok(0),
        (Err(e), _) | (Ok(_), Err(e)) => {
            eprintln!("h5: {}", e.split_whitespace().collect::<Vec<_>>().join(" "));
            Ok(1)
        }
        (Ok(s), Ok(())) => Ok(s),
    }
}

fn policy(indexes: Indexes) -> h5table::query::IndexPolicy {
    match indexes {
        Indexes::Ignore => h5table::query::IndexPolicy::Ignore,
        Indexes::Verify => h5table::query::IndexPolicy::Verify,
        Indexes::Trust => h5table::query::IndexPolicy::Trust,
    }
}

fn is_broken_pipe(e: &str) -> bool {
    e.contains("Broken pipe")
}

fn open_file(path: &str) -> Result<h5fmt::File, String> {
    h5fmt::File::open(path).map_err(|e| format!("{path}: {e}"))
}

/// Split `FILE:/table/path`; a bare FILE means its only table.
fn open_table(spec: &str) -> Result<Table, String> {
    let (file_path, table_path) = match spec.rfind(":/") {
        Some(i) if std::path::Path::new(&spec[..i]).exists() => (&spec[..i], Some(&spec[i + 1..])),
        _ => (spec, None),
    };
    let file = open_file(file_path)?;
    let table_path = match table_path {
        Some(p) => p.to_string(),
        None => {
            let all = h5table::find_tables(&file).map_err(|e| format!("{file_path}: {e}"))?;
            match all.as_slice() {
                [one] => one.clone(),
                [] => return Err(format!("{file_path}: no HEP001 table in the file (§7.1)")),
                _ => {
                    return Err(format!(
                        "{file_path}: {} tables; name one as {file_path}:/path ({})",
                        all.len(),
                        all.join(", ")
                    ))
                }
            }
        }
    };
    let group = file
        .group(&table_path)
        .map_err(|e| format!("{file_path}:{table_path}: {e}"))?;
    Table::open(&group).map_err(|e| format!("{file_path}: {e}"))
}

fn w(out: &mut dyn Write, s: &str) -> Result<(), String> {
    out.write_all(s.as_bytes()).map_err(|e| e.to_string())
}

fn ls(file: &str, out: &mut dyn Write) -> Result<Status, String> {
    let f = open_file(file)?;
    for path in h5table::find_tables(&f).map_err(|e| format!("{file}: {e}"))? {
        let group = f.group(&path).map_err(|e| format!("{file}:{path}: {e}"))?;
        match Table::open(&group) {
            Ok(t) => w(out, &format!("{path} {} {}\n", t.nrows(), t.ncols()))?,
            // Listed all the same (it is a table group by §7.1); `h5 table check` says why.
            Err(e) => {
                w(out, &format!("{path} ? ?\n"))?;
                eprintln!("h5: {file}: {e}");
            }
        }
    }
    Ok(0)
}

fn schema(spec: &str, out: &mut dyn Write) -> Result<Status, String> {
    let t = open_table(spec)?;
    w(
        out,
        &format!(
            "table {}  VERSION {}  NROWS {}\n",
            t.path(),
            t.version(),
            t.nrows()
        ),
    )?;
    if let Some(title) = &t.title {
        w(out, &format!("  TITLE {title:?}\n"))?;
    }
    if !t.index_columns.is_empty() {
        w(
            out,
            &format!("  INDEX_COLUMNS {}\n", t.index_columns.join(", ")),
        )?;
    }
    for col in t.all_columns() {
        let c = match col {
            TableColumn::Scalar(c) => c,
            TableColumn::List(l) => {
                let mut line = format!(
                    "  {:<20} {:<12} List",
                    l.name(),
                    h5table::text::list_type_name(l)
                );
                match l.layout() {
                    Ok(_) => {
                        line.push_str(if l.nullable() {
                            "  nullable"
                        } else {
                            "  not nullable"
                        });
                        let leaf = l.layout().ok().and_then(|x| x.leaf());
                        if let Some(v) = leaf.and_then(|c| c.fill().value.as_ref()) {
                            line.push_str(&format!(
                                "  element fill {}",
                                h5table::text::format_value(v)
                            ));
                        }
                    }
                    Err(e) => line.push_str(&format!("  unreadable: {e}")),
                }
                if let Some(u) = &l.units {
                    line.push_str(&format!("  units {u:?}"));
                }
                line.push('\n');
                w(out, &line)?;
                continue;
            }
        };
        let fill = match &c.fill().value {
            Some(v) => h5table::text::format_value(v),
            None => "(none)".into(),
        };
        let mut line = format!(
            "  {:<20} {:<12} {:?}  fill {}",
            c.name(),
            h5table::text::dtype_name(c.dtype()),
            c.kind(),
            fill
        );
        if let Some(cats) = &c.categories {
            line.push_str(&format!(
                "  categories {} ({} labels{})",
                cats.path,
                cats.labels.len(),
                if cats.ordered == Some(true) {
                    ", ordered"
                } else {
                    ""
                }
            ));
        }
        if let Some(u) = &c.units {
            line.push_str(&format!("  units {u:?}"));
        }
        line.push('\n');
        w(out, &line)?;
    }
    Ok(0)
}

fn parse_rows(spec: Option<&str>, nrows: u64) -> Result<(u64, u64), String> {
    let Some(s) = spec else { return Ok((0, nrows)) };
    let (a, b) = s
        .split_once(':')
        .ok_or_else(|| format!("--rows {s:?}: expected START:END"))?;
    let num = |x: &str, d: u64| -> Result<u64, String> {
        if x.trim().is_empty() {
            Ok(d)
        } else {
            x.trim()
                .parse()
                .map_err(|_| format!("--rows {s:?}: {x:?} is not a row number"))
        }
    };
    let (a, b) = (num(a, 0)?.min(nrows), num(b, nrows)?.min(nrows));
    Ok((a, b.max(a)))
}

fn select<'t>(t: &'t Table, columns: Option<&[String]>) -> Result<Vec<TableColumn<'t>>, String> {
    match columns {
        None => Ok(t.all_columns()),
        Some(names) => names
            .iter()
            .map(|n| t.any_column(n).map_err(|e| e.to_string()))
            .collect(),
    }
}

/// Rows `rows` of a column of either kind, read for printing.
enum Cells {
    Scalar(h5table::ColumnSlice),
    List(ListSlice),
}

fn read_cells(c: &TableColumn<'_>, rows: std::ops::Range<u64>) -> Result<Cells, String> {
    match c {
        TableColumn::Scalar(c) => c
            .read(rows)
            .map(Cells::Scalar)
            .map_err(|e| format!("{}: {e}", c.dataset().path())),
        TableColumn::List(l) => l
            .read(rows)
            .map(Cells::List)
            .map_err(|e| format!("{}: {e}", l.group().path())),
    }
}

/// Cell `r` of `cells` (of column `c`) as CSV text (unquoted).
fn cell_text(c: &TableColumn<'_>, cells: &Cells, r: usize) -> String {
    match (c, cells) {
        (TableColumn::Scalar(c), Cells::Scalar(s)) => {
            h5table::text::format_cell(c, &s.values[r], s.missing[r])
        }
        (_, Cells::List(s)) => h5table::text::format_list_cell(s, r),
        _ => String::new(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn cat_other(
    spec: &str,
    columns: Option<&[String]>,
    rows: Option<&str>,
    format: Format,
    output: Option<&std::path::Path>,
    out: &mut dyn Write,
) -> Result<Status, String> {
    use std::io::IsTerminal;
    let t = open_table(spec)?;
    let (start, end) = parse_rows(rows, t.nrows())?;
    let names: Option<Vec<&str>> = columns.map(|c| c.iter().map(String::as_str).collect());
    let cols = names.as_deref();
    let e = |x: crate::table_io::TableIoError| x.0;
    match (format, output) {
        (Format::Parquet, Some(path)) => {
            crate::table_io::write_parquet_file(
                &t,
                cols,
                Some(start..end),
                path,
                &Default::default(),
            )
            .map_err(e)?;
        }
        (Format::Parquet, None) => {
            if std::io::stdout().is_terminal() {
                return Err(
                    "Parquet is binary: give --output FILE or redirect standard output".into(),
                );
            }
            let so = std::io::BufWriter::new(std::io::stdout());
            crate::table_io::write_parquet(&t, cols, Some(start..end), so, &Default::default())
                .map_err(e)?;
        }
        (Format::Csv, Some(path)) => {
            let f = std::fs::File::create(path).map_err(|x| format!("{}: {x}", path.display()))?;
            let mut f = std::io::BufWriter::new(f);
            cat_csv(spec, columns, rows, &mut f)?;
            f.flush().map_err(|x| format!("{}: {x}", path.display()))?;
        }
        (Format::Csv, None) => return cat_csv(spec, columns, rows, out),
        (_, Some(path)) => {
            let f = std::fs::File::create(path).map_err(|x| format!("{}: {x}", path.display()))?;
            crate::table_io::write_json_lines(
                &t,
                cols,
                Some(start..end),
                std::io::BufWriter::new(f),
            )
            .map_err(e)?;
        }
        (_, None) => {
            crate::table_io::write_json_lines(&t, cols, Some(start..end), out).map_err(e)?;
        }
    }
    Ok(0)
}

fn import_rows(
    src: &str,
    to: &str,
    chunk_rows: u64,
    compress: String,
    batch_rows: usize,
) -> Result<Status, String> {
    let mut opts = crate::table_import::ImportOptions {
        chunk_rows,
        compress,
        ..Default::default()
    };
    let (src_file, src_path) = crate::table_rows::split_spec(src)?;
    let file = h5fmt::File::open(src_file).map_err(|e| format!("{}: {e}", src_file.display()))?;
    let n = if crate::table_anndata::is_dataframe(&file, src_path) {
        crate::table_anndata::import(src_file, &file, src_path, to, &mut opts, batch_rows as u64)?
    } else {
        crate::table_rows::import(src, to, &mut opts, batch_rows as u64, &|_| {})?
    };
    eprintln!("h5: imported {n} rows into {to}");
    Ok(0)
}

fn export_rows(spec: &str, as_: RowAs, out: &str, batch_rows: u64) -> Result<Status, String> {
    let table = open_table(spec)?;
    let flavor = match as_ {
        RowAs::H5tb => crate::table_rows::RowFlavor::H5tb,
        RowAs::Pytables => crate::table_rows::RowFlavor::PyTables,
        RowAs::Anndata => {
            let n = crate::table_anndata::export(&table, out, batch_rows)?;
            eprintln!("h5: exported {n} rows to {out}");
            return Ok(0);
        }
    };
    let n = crate::table_rows::export(&table, out, flavor, batch_rows)?;
    eprintln!("h5: exported {n} rows to {out}");
    Ok(0)
}

fn import(
    spec: &str,
    from: &std::path::Path,
    chunk_rows: u64,
    compress: String,
    batch_rows: usize,
    append: bool,
) -> Result<Status, String> {
    use std::io::IsTerminal;
    let (file, path) = match spec.rfind(":/") {
        Some(i) => (std::path::Path::new(&spec[..i]), &spec[i + 1..]),
        None => return Err(format!("{spec}: expected FILE.h5:/table/path")),
    };
    let ext = from
        .extension()
        .and_then(|e| e.to_str())
        .unwrap_or("")
        .to_ascii_lowercase();
    let e = |x: crate::table_io::TableIoError| format!("{}: {}", from.display(), x.0);
    let reader: Box<dyn arrow_array::RecordBatchReader + Send> = match ext.as_str() {
        "parquet" | "pq" => crate::table_io::read_parquet(from, batch_rows).map_err(e)?,
        "csv" | "txt" => {
            let opts = crate::table_io::CsvOptions {
                batch_rows,
                ..Default::default()
            };
            Box::new(crate::table_io::read_csv(from, &opts).map_err(e)?)
        }
        _ => {
            return Err(format!(
                "{}: expected a .csv or .parquet file",
                from.display()
            ))
        }
    };
    let bar = std::io::stderr().is_terminal().then(|| {
        crate::cli::spinner(if append {
            "appending rows"
        } else {
            "importing rows"
        })
    });
    let progress = |n: u64| {
        if let Some(b) = &bar {
            b.set_position(n);
        }
    };
    let n = if append {
        crate::table_import::append(file, path, reader, &progress)?
    } else {
        let opts = crate::table_import::ImportOptions {
            chunk_rows,
            compress,
            ..Default::default()
        };
        crate::table_import::import(file, path, reader, &opts, &progress)?
    };
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    eprintln!(
        "h5: {} {n} rows into {}:{path}",
        if append { "appended" } else { "imported" },
        file.display()
    );
    Ok(0)
}

/// Rows per read when streaming a table.
const BATCH: u64 = 65_536;

fn cat_csv(
    spec: &str,
    columns: Option<&[String]>,
    rows: Option<&str>,
    out: &mut dyn Write,
) -> Result<Status, String> {
    let t = open_table(spec)?;
    let cols = select(&t, columns)?;
    let (start, end) = parse_rows(rows, t.nrows())?;
    let header: Vec<String> = cols.iter().map(|c| csv_field(c.name())).collect();
    w(out, &(header.join(",") + "\n"))?;
    let mut at = start;
    while at < end {
        let stop = (at + BATCH).min(end);
        let slices = cols
            .iter()
            .map(|c| read_cells(c, at..stop))
            .collect::<Result<Vec<_>, _>>()?;
        let mut text = String::new();
        for r in 0..usize::try_from(stop - at).unwrap_or(0) {
            for (j, (c, s)) in cols.iter().zip(&slices).enumerate() {
                if j > 0 {
                    text.push(',');
                }
                text.push_str(&csv_field(&cell_text(c, s, r)));
            }
            text.push('\n');
        }
        w(out, &text)?;
        at = stop;
    }
    Ok(0)
}

struct QueryOut {
    count: bool,
    csv: bool,
    columns: Option<Vec<String>>,
    policy: h5table::query::IndexPolicy,
    explain: bool,
}

fn query(spec: &str, expr: &str, how: &QueryOut, out: &mut dyn Write) -> Result<Status, String> {
    let t = open_table(spec)?;
    let q = h5table::query::Query::parse(expr).map_err(|e| e.to_string())?;
    let opts = h5table::query::RunOptions {
        indexes: how.policy,
    };
    let (rows, plan) = q.run_with(&t, &opts).map_err(|e| e.to_string())?;
    if how.explain {
        for l in &plan.lines {
            eprintln!("plan: {l}");
        }
        eprintln!("plan: {} matching row(s)", rows.len());
    }
    if how.count {
        w(out, &format!("{}\n", rows.len()))?;
    } else if how.csv {
        let cols = select(&t, how.columns.as_deref())?;
        write_rows_csv(&cols, &rows, out)?;
    } else {
        let mut text = String::new();
        for r in rows {
            text.push_str(&r.to_string());
            text.push('\n');
        }
        w(out, &text)?;
    }
    Ok(0)
}

/// The given rows (increasing) of `cols` as CSV, reading only the batches that hold them.
fn write_rows_csv(
    cols: &[TableColumn<'_>],
    rows: &[u64],
    out: &mut dyn Write,
) -> Result<(), String> {
    let header: Vec<String> = cols.iter().map(|c| csv_field(c.name())).collect();
    w(out, &(header.join(",") + "\n"))?;
    let mut i = 0;
    while i < rows.len() {
        let start = rows[i];
        let end = start + BATCH;
        let j = i + rows[i..].partition_point(|&r| r < end);
        let stop = rows[j - 1] + 1;
        let slices = cols
            .iter()
            .map(|c| read_cells(c, start..stop))
            .collect::<Result<Vec<_>, _>>()?;
        let mut text = String::new();
        for &r in &rows[i..j] {
            let k = usize::try_from(r - start).unwrap_or(0);
            for (n, (c, s)) in cols.iter().zip(&slices).enumerate() {
                if n > 0 {
                    text.push(',');
                }
                text.push_str(&csv_field(&cell_text(c, s, k)));
            }
            text.push('\n');
        }
        w(out, &text)?;
        i = j;
    }
    Ok(())
}

fn check(file: &str, strict: bool, verify: bool, out: &mut dyn Write) -> Result<Status, String> {
    let f = open_file(file)?;
    let opts = h5table::check::Options {
        strict,
        verify_indexes: verify,
    };
    let findings: Vec<Finding> =
        h5table::check::check_file(&f, &opts).map_err(|e| format!("{file}: {e}"))?;
    let mut bad = false;
    for x in &findings {
        if x.severity == Severity::Error {
            bad = true;
        }
        w(out, &format!("{x}\n"))?;
    }
    if !bad {
        w(out, &format!("{file}: conformant\n"))?;
    }
    Ok(u8::from(bad))
}
