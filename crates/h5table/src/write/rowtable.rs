//! Appending rows to a row-oriented compound table in an existing file
//! (see `crate::rowtable`, feature `arrow`, for reading), as libhdf5_hl's
//! `H5TBappend_records` does: the dataset grows along its one dimension and
//! the rows are written after the last one. A PyTables `Table` (one with
//! `NROWS`) gets its rows after the extent too — PyTables appends at
//! `Table.nrows`, which it reads from the extent, never from `NROWS` (see
//! `crate::rowtable`) — and `NROWS` is set to the new extent after the rows
//! are flushed, as PyTables' own commit. The editor is flushed first (the
//! table's attributes are read as committed).

use crate::error::{Error, Result};
use crate::pytables::string_attr;
use alloc::format;
use h5fmt::{Datatype, FileEditor};

/// Append `rows` (whole rows, raw bytes in the dataset's compound layout,
/// byte order and member offsets as stored) to table `path`; returns the
/// new row count.
///
/// # Errors
/// [`Error::Invalid`] naming the dataset when it is not `CLASS "TABLE"` on a
/// rank-1 compound dataset, or its `NROWS` is not an integer within the
/// extent; [`Error::Usage`] when `rows` is not a whole number of rows; HDF5
/// errors (a dataset that is not chunked and extendable among them).
pub fn append_records(ed: &mut FileEditor, path: &str, rows: &[u8]) -> Result<u64> {
    let bad = |m: alloc::string::String| Error::invalid(path, "row table", m);
    // The reader sees the file as of the last flush: make it this one.
    ed.flush()?;
    let ds = ed.reader().dataset(path)?;
    match string_attr(path, "CLASS", ds.attr("CLASS"))?.as_deref() {
        Some("TABLE") => {}
        other => return Err(bad(format!("CLASS is {other:?}, not \"TABLE\""))),
    }
    let Datatype::Compound { size, .. } = ds.dtype() else {
        return Err(bad(format!("datatype {} is not a compound", ds.dtype())));
    };
    let &[extent] = ds.shape() else {
        return Err(bad(format!("rank {}, not 1", ds.shape().len())));
    };
    let row = usize::try_from(*size).unwrap_or(usize::MAX).max(1);
    if !rows.len().is_multiple_of(row) {
        return Err(Error::usage(format!(
            "{path}: {} bytes are not whole {row}-byte rows",
            rows.len()
        )));
    }
    let n = (rows.len() / row) as u64;
    let pytables = match ds.attr("NROWS") {
        Err(_) => false,
        Ok(a) => {
            (matches!(a.dtype(), Datatype::Integer { .. }) && a.len() == 1)
                .then(|| a.read_scalar::<i64>().ok())
                .flatten()
                .and_then(|v| u64::try_from(v).ok())
                .filter(|&v| v <= extent)
                .ok_or_else(|| bad(format!("NROWS is not an integer in [0, {extent}]")))?;
            true
        }
    };
    if !pytables {
        ed.append_raw(path, rows)?;
        return Ok(extent + n);
    }
    let start = extent;
    let end = start
        .checked_add(n)
        .ok_or_else(|| Error::usage("row count overflows"))?;
    if end > extent {
        ed.resize(path, &[end])?;
    }
    if n > 0 {
        ed.write_box(path, &[start], &[n], rows)?;
    }
    // The rows are durable before NROWS names them.
    ed.flush()?;
    let end_i = i64::try_from(end).map_err(|_| Error::usage("row count overflows"))?;
    ed.set_attr(path, "NROWS", end_i)?;
    Ok(end)
}
