//! `h5 table …`: HEP001 column tables from the command line.

use clap::{Parser, Subcommand, ValueEnum};
use h5table::check::{Finding, Severity};
use h5table::{Column, Table};
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
    },
    /// Rows matching a WHERE expression: `col OP literal` (= < <= > >=), `col IN (…)`,
    /// `col IS [NOT] NULL`, joined by AND.
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
    /// SQL over every table of FILE (DataFusion): a table is named by its path without the
    /// leading slash, `/` turned into `_` (and by its full path, quoted). CSV output, or a
    /// pretty table when stdout is a terminal.
    #[cfg(feature = "sql")]
    Sql {
        /// The HDF5 file.
        file: String,
        /// The query, e.g. "SELECT label, count(*) FROM events GROUP BY label".
        query: String,
        /// Output format (default: csv, or table when stdout is a terminal).
        #[arg(long, value_enum)]
        format: Option<crate::table_sql::SqlFormat>,
    },
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// RFC 4180 CSV with a header of column names.
    Csv,
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
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let r = match cli.cmd {
        Cmd::Ls { file } => ls(&file, &mut out),
        Cmd::Schema { spec } => schema(&spec, &mut out),
        Cmd::Cat {
            spec,
            columns,
            rows,
            format: Format::Csv,
        } => cat_csv(&spec, columns.as_deref(), rows.as_deref(), &mut out),
        Cmd::Query {
            spec,
            where_,
            rows: _,
            count,
        } => query(&spec, &where_, count, &mut out),
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
        } => crate::table_sql::sql(&file, &query, format, &mut out),
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
            Ok(t) => w(
                out,
                &format!("{path} {} {}\n", t.nrows(), t.columns().len()),
            )?,
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
    for c in t.columns() {
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

fn select<'t>(t: &'t Table, columns: Option<&[String]>) -> Result<Vec<&'t Column>, String> {
    match columns {
        None => Ok(t.columns().iter().collect()),
        Some(names) => names
            .iter()
            .map(|n| t.column(n).map_err(|e| e.to_string()))
            .collect(),
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
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
            .map(|c| {
                c.read(at..stop)
                    .map_err(|e| format!("{}: {e}", c.dataset().path()))
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut text = String::new();
        for r in 0..usize::try_from(stop - at).unwrap_or(0) {
            for (j, (c, s)) in cols.iter().zip(&slices).enumerate() {
                if j > 0 {
                    text.push(',');
                }
                let cell = h5table::text::format_cell(c, &s.values[r], s.missing[r]);
                text.push_str(&csv_field(&cell));
            }
            text.push('\n');
        }
        w(out, &text)?;
        at = stop;
    }
    Ok(0)
}

fn query(spec: &str, expr: &str, count: bool, out: &mut dyn Write) -> Result<Status, String> {
    let t = open_table(spec)?;
    let q = h5table::query::Query::parse(expr).map_err(|e| e.to_string())?;
    let rows = q.run(&t).map_err(|e| e.to_string())?;
    if count {
        w(out, &format!("{}\n", rows.len()))?;
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
