//! Tables to and from other formats, for `h5 table cat --format
//! parquet|json` and `h5 table import|append --from FILE`.
//!
//! Export goes through [`h5table::arrow`] (see its module documentation for
//! the HDF5 → Arrow mapping): a projection and row range of a table,
//! batch by batch, to
//! * Parquet ([`write_parquet`], [`write_parquet_file`]): the `parquet`
//!   crate's `ArrowWriter`, zstd level 3 by default; the Arrow schema
//!   (field metadata included) is stored in the file, so that Arrow readers
//!   get dictionaries, Float16 and the metadata back;
//! * JSON lines ([`write_json_lines`]): one object per row, keys in column
//!   order, missing values `null`.
//!
//! Import reads a CSV ([`read_csv`]) or Parquet ([`read_parquet`]) file as
//! Arrow record batches of a bounded number of rows.

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Float16Type, Float32Type, Float64Type, Int16Type, Int32Type, Int64Type, Int8Type, UInt16Type,
    UInt32Type, UInt64Type, UInt8Type,
};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int64Array, RecordBatch, RecordBatchReader,
    StringArray,
};
use arrow_schema::{ArrowError, DataType, Field, Schema, SchemaRef};
use h5table::arrow::{batches, ExportOptions};
use h5table::Table;
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use std::fmt;
use std::fs::File;
use std::io::{BufRead, BufReader, Write};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// A failure of an export or import.
#[derive(Debug)]
pub struct TableIoError(pub String);

impl fmt::Display for TableIoError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TableIoError {}

impl From<h5table::Error> for TableIoError {
    fn from(e: h5table::Error) -> Self {
        TableIoError(e.to_string())
    }
}
impl From<ParquetError> for TableIoError {
    fn from(e: ParquetError) -> Self {
        TableIoError(format!("parquet: {e}"))
    }
}
impl From<ArrowError> for TableIoError {
    fn from(e: ArrowError) -> Self {
        TableIoError(format!("arrow: {e}"))
    }
}
impl From<std::io::Error> for TableIoError {
    fn from(e: std::io::Error) -> Self {
        TableIoError(format!("I/O: {e}"))
    }
}

/// Result alias.
pub type Result<T> = std::result::Result<T, TableIoError>;

/// Parquet compression of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParquetCompression {
    /// Zstandard at a level (1–22).
    Zstd(i32),
    /// Snappy.
    Snappy,
    /// None.
    None,
}

/// Options of a Parquet export.
#[derive(Debug, Clone)]
pub struct ParquetOptions {
    /// Compression (default zstd level 3).
    pub compression: ParquetCompression,
    /// Rows read from the table per batch (and at most per row group).
    pub batch_rows: u64,
    /// Rows per row group at most.
    pub row_group_rows: usize,
}

impl Default for ParquetOptions {
    fn default() -> Self {
        ParquetOptions {
            compression: ParquetCompression::Zstd(3),
            batch_rows: 65_536,
            row_group_rows: 1 << 20,
        }
    }
}

/// `rows` of `table` (all rows when `None`), checked against NROWS.
fn row_range(table: &Table, rows: Option<Range<u64>>) -> Range<u64> {
    rows.unwrap_or(0..table.nrows())
}

/// Write rows `rows` (all when `None`) of the columns `columns` (all, in
/// logical order, when `None`) of `table` to `out` as one Parquet file.
/// Returns the number of rows written.
///
/// # Errors
/// Unknown columns, rows past NROWS, unreadable columns (see
/// [`h5table::arrow::ColumnExport::array`]), Parquet and I/O errors.
pub fn write_parquet<W: Write + Send>(
    table: &Table,
    columns: Option<&[&str]>,
    rows: Option<Range<u64>>,
    out: W,
    opts: &ParquetOptions,
) -> Result<u64> {
    let rows = row_range(table, rows);
    let export = ExportOptions {
        batch_rows: opts.batch_rows.max(1),
        ..Default::default()
    };
    let mut reader = batches(table, columns, rows, &export)?;
    let mut writer = parquet_writer(out, reader.schema(), opts)?;
    let mut n = 0u64;
    while let Some(batch) = reader.next_batch()? {
        n += batch.num_rows() as u64;
        writer.write(&batch)?;
    }
    writer.close()?;
    Ok(n)
}

fn parquet_writer<W: Write + Send>(
    out: W,
    schema: SchemaRef,
    opts: &ParquetOptions,
) -> Result<ArrowWriter<W>> {
    let compression = match opts.compression {
        ParquetCompression::Zstd(l) => Compression::ZSTD(ZstdLevel::try_new(l)?),
        ParquetCompression::Snappy => Compression::SNAPPY,
        ParquetCompression::None => Compression::UNCOMPRESSED,
    };
    let props = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(opts.row_group_rows.max(1)))
        .build();
    Ok(ArrowWriter::try_new(out, schema, Some(props))?)
}

/// Record batches of `schema` (a query's answer) to `out` as one Parquet
/// file. Returns the number of rows written.
///
/// # Errors
/// Parquet and I/O errors.
pub fn write_batches_parquet<W: Write + Send>(
    schema: SchemaRef,
    batches: &[RecordBatch],
    out: W,
    opts: &ParquetOptions,
) -> Result<u64> {
    let mut writer = parquet_writer(out, schema, opts)?;
    let mut n = 0u64;
    for batch in batches {
        n += batch.num_rows() as u64;
        writer.write(batch)?;
    }
    writer.close()?;
    Ok(n)
}

/// [`write_parquet`] to a new file at `path` (written next to it and
/// renamed into place, so that a failed export leaves no partial file).
///
/// # Errors
/// As [`write_parquet`].
pub fn write_parquet_file(
    table: &Table,
    columns: Option<&[&str]>,
    rows: Option<Range<u64>>,
    path: &Path,
    opts: &ParquetOptions,
) -> Result<u64> {
    let tmp = path.with_extension("parquet.partial");
    let res = (|| {
        let f = File::create(&tmp)?;
        let n = write_parquet(table, columns, rows, std::io::BufWriter::new(f), opts)?;
        std::fs::rename(&tmp, path)?;
        Ok(n)
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

/// Write rows `rows` (all when `None`) of `columns` (all when `None`) of
/// `table` to `out` as JSON lines: one object per row, keys in column
/// order. Missing values are `null`; integers and floats are JSON numbers
/// (floats in the shortest form that reads back at the column's width),
/// except NaN and infinities, which JSON lacks: the strings `"NaN"`,
/// `"Infinity"`, `"-Infinity"`. Strings are JSON strings, binary and opaque
/// values hex strings, categoricals and enums their label or member name,
/// the §6 boolean `true`/`false`, compounds objects of their members, list
/// columns arrays of their elements (a null list `null`).
/// Returns the number of rows written.
///
/// # Errors
/// As [`write_parquet`].
pub fn write_json_lines<W: Write>(
    table: &Table,
    columns: Option<&[&str]>,
    rows: Option<Range<u64>>,
    out: W,
) -> Result<u64> {
    let rows = row_range(table, rows);
    let mut reader = batches(table, columns, rows, &ExportOptions::default())?;
    let keys = json_keys(&reader.schema());
    let mut w = std::io::BufWriter::new(out);
    let mut n = 0u64;
    while let Some(batch) = reader.next_batch()? {
        n += json_lines(&keys, &batch, &mut w)?;
    }
    w.flush()?;
    Ok(n)
}

/// Record batches of `schema` (a query's answer) to `out` as JSON lines, as
/// [`write_json_lines`]. Returns the number of rows written.
///
/// # Errors
/// Arrow types a table never has (dates, decimals, lists, …; convert them
/// first); I/O errors.
pub fn write_batches_json_lines<W: Write>(
    schema: &Schema,
    batches: &[RecordBatch],
    out: W,
) -> Result<u64> {
    let keys = json_keys(schema);
    let mut w = std::io::BufWriter::new(out);
    let mut n = 0u64;
    for batch in batches {
        n += json_lines(&keys, batch, &mut w)?;
    }
    w.flush()?;
    Ok(n)
}

/// Each field name as a JSON string.
fn json_keys(schema: &Schema) -> Vec<Vec<u8>> {
    schema
        .fields()
        .iter()
        .map(|f| serde_json::to_vec(f.name()).unwrap_or_default())
        .collect()
}

/// One JSON object per row of `batch`.
fn json_lines<W: Write>(keys: &[Vec<u8>], batch: &RecordBatch, w: &mut W) -> Result<u64> {
    for i in 0..batch.num_rows() {
        w.write_all(b"{")?;
        for (k, (key, col)) in keys.iter().zip(batch.columns()).enumerate() {
            if k > 0 {
                w.write_all(b",")?;
            }
            w.write_all(key)?;
            w.write_all(b":")?;
            json_cell(w, col.as_ref(), i)?;
        }
        w.write_all(b"}\n")?;
    }
    Ok(batch.num_rows() as u64)
}

fn json_float<W: Write>(w: &mut W, x: f64, text: impl fmt::Debug) -> std::io::Result<()> {
    if x.is_nan() {
        w.write_all(b"\"NaN\"")
    } else if x.is_infinite() {
        w.write_all(if x > 0.0 {
            b"\"Infinity\""
        } else {
            b"\"-Infinity\""
        })
    } else {
        write!(w, "{text:?}")
    }
}

fn hex<W: Write>(w: &mut W, b: &[u8]) -> std::io::Result<()> {
    w.write_all(b"\"")?;
    for x in b {
        write!(w, "{x:02x}")?;
    }
    w.write_all(b"\"")
}

/// Cell `i` of `a` as JSON.
fn json_cell<W: Write>(w: &mut W, a: &dyn Array, i: usize) -> Result<()> {
    if a.is_null(i) {
        w.write_all(b"null")?;
        return Ok(());
    }
    match a.data_type() {
        DataType::Int8 => write!(w, "{}", a.as_primitive::<Int8Type>().value(i))?,
        DataType::Int16 => write!(w, "{}", a.as_primitive::<Int16Type>().value(i))?,
        DataType::Int32 => write!(w, "{}", a.as_primitive::<Int32Type>().value(i))?,
        DataType::Int64 => write!(w, "{}", a.as_primitive::<Int64Type>().value(i))?,
        DataType::UInt8 => write!(w, "{}", a.as_primitive::<UInt8Type>().value(i))?,
        DataType::UInt16 => write!(w, "{}", a.as_primitive::<UInt16Type>().value(i))?,
        DataType::UInt32 => write!(w, "{}", a.as_primitive::<UInt32Type>().value(i))?,
        DataType::UInt64 => write!(w, "{}", a.as_primitive::<UInt64Type>().value(i))?,
        DataType::Float16 => {
            let x = a.as_primitive::<Float16Type>().value(i).to_f32();
            json_float(w, f64::from(x), x)?
        }
        DataType::Float32 => {
            let x = a.as_primitive::<Float32Type>().value(i);
            json_float(w, f64::from(x), x)?
        }
        DataType::Float64 => {
            let x = a.as_primitive::<Float64Type>().value(i);
            json_float(w, x, x)?
        }
        DataType::Boolean => w.write_all(if a.as_boolean().value(i) {
            b"true"
        } else {
            b"false"
        })?,
        DataType::Utf8 => serde_json::to_writer(&mut *w, a.as_string::<i32>().value(i))
            .map_err(|e| TableIoError(e.to_string()))?,
        DataType::LargeUtf8 => serde_json::to_writer(&mut *w, a.as_string::<i64>().value(i))
            .map_err(|e| TableIoError(e.to_string()))?,
        DataType::Binary => hex(w, a.as_binary::<i32>().value(i))?,
        DataType::LargeBinary => hex(w, a.as_binary::<i64>().value(i))?,
        DataType::FixedSizeBinary(_) => hex(w, a.as_fixed_size_binary().value(i))?,
        DataType::Dictionary(k, _) if **k == DataType::Int32 => {
            let d = a.as_dictionary::<Int32Type>();
            let key = usize::try_from(d.keys().value(i))
                .map_err(|_| TableIoError("negative dictionary key".into()))?;
            json_cell(w, d.values().as_ref(), key)?
        }
        DataType::List(_) | DataType::LargeList(_) => {
            let items = match a.data_type() {
                DataType::List(_) => a.as_list::<i32>().value(i),
                _ => a.as_list::<i64>().value(i),
            };
            w.write_all(b"[")?;
            for j in 0..items.len() {
                if j > 0 {
                    w.write_all(b",")?;
                }
                json_cell(w, items.as_ref(), j)?;
            }
            w.write_all(b"]")?;
        }
        DataType::Struct(fields) => {
            let s = a.as_struct();
            w.write_all(b"{")?;
            for (k, (f, c)) in fields.iter().zip(s.columns()).enumerate() {
                if k > 0 {
                    w.write_all(b",")?;
                }
                serde_json::to_writer(&mut *w, f.name())
                    .map_err(|e| TableIoError(e.to_string()))?;
                w.write_all(b":")?;
                json_cell(w, c.as_ref(), i)?;
            }
            w.write_all(b"}")?;
        }
        DataType::Utf8View => serde_json::to_writer(&mut *w, a.as_string_view().value(i))
            .map_err(|e| TableIoError(e.to_string()))?,
        DataType::BinaryView => hex(w, a.as_binary_view().value(i))?,
        other => return Err(TableIoError(format!("no JSON form for Arrow type {other}"))),
    }
    Ok(())
}

/// The record batches of a Parquet file, `batch_rows` rows at a time.
///
/// # Errors
/// I/O errors opening the file; Parquet errors reading its metadata
/// (errors reading the data come from the iterator).
pub fn read_parquet(path: &Path, batch_rows: usize) -> Result<Box<dyn RecordBatchReader + Send>> {
    let f = File::open(path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)?
        .with_batch_size(batch_rows.max(1))
        .build()?;
    Ok(Box::new(reader))
}

/// Options of a CSV import.
#[derive(Debug, Clone)]
pub struct CsvOptions {
    /// Rows per batch.
    pub batch_rows: usize,
    /// Rows looked at to infer each column's type.
    pub infer_rows: usize,
    /// Field delimiter.
    pub delimiter: u8,
}

impl Default for CsvOptions {
    fn default() -> Self {
        CsvOptions {
            batch_rows: 65_536,
            infer_rows: 10_000,
            delimiter: b',',
        }
    }
}

/// The inferred type of a CSV column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CsvType {
    Int,
    Float,
    Bool,
    Str,
}

/// A CSV file (RFC 4180, with a header row) as Arrow record batches.
///
/// Column types are inferred from the first `infer_rows` data rows: `Int64`
/// when every non-empty cell is an integer, else `Float64` when every one
/// is a number (`nan`, `inf`, `-inf` included, as `h5 table cat` prints
/// them), else `Boolean` for `true`/`false`, else `Utf8`. Empty cells are
/// nulls (the form `h5 table cat --format csv` gives missing values), in
/// string columns too. A later cell that does not parse as its column's
/// type is an error naming the line.
pub struct CsvBatches {
    lines: CsvRecords,
    schema: SchemaRef,
    types: Vec<CsvType>,
    pending: std::vec::IntoIter<Vec<String>>,
    batch_rows: usize,
    line: u64,
    failed: bool,
}

impl fmt::Debug for CsvBatches {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CsvBatches")
            .field("schema", &self.schema)
            .finish()
    }
}

/// RFC 4180 records from a byte stream.
struct CsvRecords {
    input: Box<dyn BufRead + Send>,
    delimiter: u8,
    buf: Vec<u8>,
}

impl CsvRecords {
    /// The next record's fields, `None` at the end.
    fn next_record(&mut self) -> Result<Option<Vec<String>>> {
        self.buf.clear();
        if self.input.read_until(b'\n', &mut self.buf)? == 0 {
            return Ok(None);
        }
        // A quoted field may span lines: read on while quotes are unbalanced.
        while self.buf.iter().filter(|&&b| b == b'"').count() % 2 == 1 {
            if self.input.read_until(b'\n', &mut self.buf)? == 0 {
                return Err(TableIoError("CSV: unterminated quoted field".into()));
            }
        }
        while matches!(self.buf.last(), Some(b'\n' | b'\r')) {
            self.buf.pop();
        }
        let mut fields = Vec::new();
        let mut cur = Vec::new();
        let mut quoted = false;
        let mut i = 0;
        let b = &self.buf;
        while i < b.len() {
            let c = b[i];
            if quoted {
                if c == b'"' {
                    if b.get(i + 1) == Some(&b'"') {
                        cur.push(b'"');
                        i += 1;
                    } else {
                        quoted = false;
                    }
                } else {
                    cur.push(c);
                }
            } else if c == b'"' {
                quoted = true;
            } else if c == self.delimiter {
                fields.push(utf8(std::mem::take(&mut cur))?);
            } else {
                cur.push(c);
            }
            i += 1;
        }
        fields.push(utf8(cur)?);
        Ok(Some(fields))
    }
}

fn utf8(b: Vec<u8>) -> Result<String> {
    String::from_utf8(b).map_err(|_| TableIoError("CSV: a field is not UTF-8".into()))
}

fn parse_float(s: &str) -> Option<f64> {
    match s {
        "nan" | "NaN" => Some(f64::NAN),
        "inf" | "Infinity" => Some(f64::INFINITY),
        "-inf" | "-Infinity" => Some(f64::NEG_INFINITY),
        _ => s.parse().ok(),
    }
}

fn infer(cells: impl Iterator<Item = String>) -> CsvType {
    let mut t = CsvType::Int;
    let mut any = false;
    for c in cells {
        if c.is_empty() {
            continue;
        }
        any = true;
        let fits = |t: CsvType| match t {
            CsvType::Int => c.parse::<i64>().is_ok(),
            CsvType::Float => parse_float(&c).is_some(),
            CsvType::Bool => matches!(c.as_str(), "true" | "false"),
            CsvType::Str => true,
        };
        while !fits(t) {
            t = match t {
                CsvType::Int => CsvType::Float,
                CsvType::Float => CsvType::Bool,
                _ => CsvType::Str,
            };
        }
    }
    if any {
        t
    } else {
        CsvType::Str
    }
}

/// A CSV file as batches (see [`CsvBatches`]).
///
/// # Errors
/// I/O errors, a missing header, malformed records.
pub fn read_csv(path: &Path, opts: &CsvOptions) -> Result<CsvBatches> {
    let f = File::open(path)?;
    csv_batches(Box::new(BufReader::with_capacity(1 << 20, f)), opts)
}

/// [`read_csv`] over any byte stream.
///
/// # Errors
/// As [`read_csv`].
pub fn csv_batches(input: Box<dyn BufRead + Send>, opts: &CsvOptions) -> Result<CsvBatches> {
    let mut lines = CsvRecords {
        input,
        delimiter: opts.delimiter,
        buf: Vec::new(),
    };
    let header = lines
        .next_record()?
        .ok_or_else(|| TableIoError("CSV: no header row".into()))?;
    let mut head = Vec::new();
    let mut line = 1u64;
    while head.len() < opts.infer_rows.max(1) {
        match lines.next_record()? {
            Some(r) => {
                line += 1;
                if r.len() != header.len() {
                    return Err(TableIoError(format!(
                        "CSV line {line}: {} fields, the header has {}",
                        r.len(),
                        header.len()
                    )));
                }
                head.push(r)
            }
            None => break,
        }
    }
    let types: Vec<CsvType> = (0..header.len())
        .map(|k| infer(head.iter().map(|r| r[k].clone())))
        .collect();
    let fields: Vec<Field> = header
        .iter()
        .zip(&types)
        .map(|(name, t)| {
            let dt = match t {
                CsvType::Int => DataType::Int64,
                CsvType::Float => DataType::Float64,
                CsvType::Bool => DataType::Boolean,
                CsvType::Str => DataType::Utf8,
            };
            Field::new(name, dt, true)
        })
        .collect();
    Ok(CsvBatches {
        lines,
        schema: Arc::new(Schema::new(fields)),
        types,
        pending: head.into_iter(),
        batch_rows: opts.batch_rows.max(1),
        line: 1,
        failed: false,
    })
}

impl CsvBatches {
    /// The next batch, `None` at the end.
    ///
    /// # Errors
    /// I/O errors, malformed records, cells that do not parse as their
    /// column's type.
    pub fn next_batch(&mut self) -> Result<Option<RecordBatch>> {
        let mut rows = Vec::with_capacity(self.batch_rows);
        while rows.len() < self.batch_rows {
            let r = match self.pending.next() {
                Some(r) => r,
                None => match self.lines.next_record()? {
                    Some(r) => r,
                    None => break,
                },
            };
            self.line += 1;
            if r.len() != self.types.len() {
                return Err(TableIoError(format!(
                    "CSV line {}: {} fields, the header has {}",
                    self.line,
                    r.len(),
                    self.types.len()
                )));
            }
            rows.push(r);
        }
        if rows.is_empty() {
            return Ok(None);
        }
        let first_line = self.line + 1 - rows.len() as u64;
        let bad = |k: usize, i: usize| {
            TableIoError(format!(
                "CSV line {}: {:?} in column {:?} is not a {:?}",
                first_line + i as u64,
                rows[i][k],
                self.schema.field(k).name(),
                self.types[k]
            ))
        };
        let mut arrays: Vec<ArrayRef> = Vec::with_capacity(self.types.len());
        for (k, t) in self.types.iter().enumerate() {
            let cells = rows.iter().map(|r| r[k].as_str());
            let a: ArrayRef = match t {
                CsvType::Int => {
                    let mut v = Vec::with_capacity(rows.len());
                    for (i, c) in cells.enumerate() {
                        v.push(if c.is_empty() {
                            None
                        } else {
                            Some(c.parse::<i64>().map_err(|_| bad(k, i))?)
                        });
                    }
                    Arc::new(Int64Array::from(v))
                }
                CsvType::Float => {
                    let mut v = Vec::with_capacity(rows.len());
                    for (i, c) in cells.enumerate() {
                        v.push(if c.is_empty() {
                            None
                        } else {
                            Some(parse_float(c).ok_or_else(|| bad(k, i))?)
                        });
                    }
                    Arc::new(Float64Array::from(v))
                }
                CsvType::Bool => {
                    let mut v = Vec::with_capacity(rows.len());
                    for (i, c) in cells.enumerate() {
                        v.push(match c {
                            "" => None,
                            "true" => Some(true),
                            "false" => Some(false),
                            _ => return Err(bad(k, i)),
                        });
                    }
                    Arc::new(BooleanArray::from(v))
                }
                CsvType::Str => Arc::new(StringArray::from_iter(
                    cells.map(|c| (!c.is_empty()).then_some(c)),
                )),
            };
            arrays.push(a);
        }
        Ok(Some(RecordBatch::try_new(self.schema.clone(), arrays)?))
    }
}

impl Iterator for CsvBatches {
    type Item = std::result::Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        match self.next_batch() {
            Ok(b) => b.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(ArrowError::ExternalError(Box::new(e))))
            }
        }
    }
}

impl RecordBatchReader for CsvBatches {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}
