//! Recompute every search index of a table from its column and report the
//! ones that do not describe rows `[0, NROWS)` (§12 item 9, §16).
//!
//! What counts as wrong, per family:
//! * `CHUNK_MINMAX`: any field of an entry of a data-bearing chunk that
//!   differs from the recomputation (`min`/`max` compared under the HEP001
//!   order, so `-0` and `+0` agree). Entries past the data-bearing chunks are
//!   residue (§11.1) and are not read.
//! * `SORTED_ROWS`: any of the first NROWS entries, or a tail length, that
//!   differs from the stable permutation. Entries past NROWS are residue.
//! * `BITMAP`: any bit of a row `< NROWS` that differs from the recomputation
//!   over the stored values. Bits past NROWS are residue.
//! * `CHUNK_BLOOM`: a false negative (a value of the chunk with a bit unset)
//!   is tampering; bits set beyond the recomputation with the stored
//!   parameters only cause false positives and are a warning (see
//!   [`super::bloom`]).
//!
//! Wrong content is an error citing `§12, §10.x, §16`; a structural problem
//! of the index dataset (rank, datatype, missing attributes, too short) an
//! error citing `§12, §10.x`. Stale indexes (validity tokens not matching
//! the table) are treated as absent: a warning, and no verification.

use super::bloom::{self, BloomParams};
use super::{bitmap, chunk_count, chunk_ranges, discover, finding, minmax, sorted, warning};
use super::{IndexInfo, IndexKind, Validity};
use crate::check::Finding;
use crate::error::Result;
use crate::model::{Column, ColumnSlice, Table};
use alloc::collections::BTreeMap;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// At most this many content findings are reported per index.
const MAX_PER_INDEX: usize = 8;

/// Verify every search index of the table: the structural findings of
/// [`discover`] followed by, for each usable index, the comparison of its
/// stored content with a recomputation from its column.
///
/// # Errors
/// HDF5 errors listing the table's `SEARCH_INDEXES` group. A column that
/// cannot be read is a warning finding (its indexes are then unverified).
pub fn verify_table(table: &Table) -> Result<Vec<Finding>> {
    let d = discover(table)?;
    let mut out = d.findings;
    let mut slices: BTreeMap<String, core::result::Result<ColumnSlice, String>> = BTreeMap::new();
    for info in &d.indexes {
        if matches!(info.kind, IndexKind::Unknown(_)) {
            continue;
        }
        let Some(cname) = &info.column else { continue };
        if let Validity::Stale { reason } = &info.validity {
            out.push(warning(
                &info.path,
                "§11.2",
                format!("stale search index ({reason}): treated as absent, not verified"),
            ));
            continue;
        }
        let Ok(col) = table.column(cname) else {
            continue;
        };
        let slice = slices
            .entry(cname.clone())
            .or_insert_with(|| col.read(0..table.nrows()).map_err(|e| format!("{e}")));
        match slice {
            Ok(s) => out.extend(verify_index(table, col, info, s)),
            Err(e) => out.push(warning(
                &info.path,
                "§16",
                format!("column {cname:?} cannot be read, the index is not verified: {e}"),
            )),
        }
    }
    Ok(out)
}

/// Verify one index against its column's rows `[0, NROWS)` (`slice`, read
/// with [`Column::read`]). Returns the findings (empty when it is correct).
pub fn verify_index(
    table: &Table,
    col: &Column,
    info: &IndexInfo,
    slice: &ColumnSlice,
) -> Vec<Finding> {
    let nrows = table.nrows();
    if (slice.values.len() as u64) < nrows || (slice.missing.len() as u64) < nrows {
        return alloc::vec![warning(
            &info.path,
            "§16",
            format!(
                "only {} of the {nrows} rows of column {:?} were given: not verified",
                slice.values.len().min(slice.missing.len()),
                col.name()
            ),
        )];
    }
    let chunk_len = col.chunk_len();
    let nchunks = chunk_count(nrows, chunk_len);
    let fill = col.fill().value.as_ref();
    let fill_is_nan = col.fill().is_nan;
    let kind = &info.kind;
    let path = info.path.as_str();
    let structure = |m: String| {
        alloc::vec![finding(
            path,
            kind.structure_sections(),
            format!("{} index: {m}", kind.as_str())
        )]
    };
    let tampered = |m: String| {
        finding(
            path,
            kind.tamper_sections(),
            format!(
                "{} index does not describe column {:?}: {m}",
                kind.as_str(),
                col.name()
            ),
        )
    };
    let mut out = Vec::new();
    match kind {
        IndexKind::ChunkMinMax => {
            let stored = match minmax::load(info, col.dtype()) {
                Ok(s) => s,
                Err(m) => return structure(m),
            };
            if (stored.len() as u64) < nchunks {
                return structure(format!(
                    "it has {} entries, fewer than the column's {nchunks} data-bearing chunks",
                    stored.len()
                ));
            }
            let computed = minmax::compute(slice, nrows, chunk_len, fill);
            let ranges = chunk_ranges(nrows, chunk_len);
            let bad: Vec<(usize, String)> = computed
                .iter()
                .enumerate()
                .filter_map(|(c, e)| minmax::diff(&stored[c], e, fill_is_nan).map(|m| (c, m)))
                .collect();
            for (c, m) in bad.iter().take(MAX_PER_INDEX) {
                let r = &ranges[*c];
                out.push(tampered(format!(
                    "chunk {c} (rows {}..{}): {m}",
                    r.start, r.end
                )));
            }
            if bad.len() > MAX_PER_INDEX {
                out.push(tampered(format!(
                    "and {} more wrong chunks",
                    bad.len() - MAX_PER_INDEX
                )));
            }
        }
        IndexKind::SortedRows => {
            let stored = match sorted::load(info, nrows) {
                Ok(s) => s,
                Err(m) => return structure(m),
            };
            let computed = sorted::compute(slice, nrows);
            if let Some(m) = sorted::diff(&stored, &computed, nrows) {
                out.push(tampered(m));
            }
        }
        IndexKind::Bitmap => {
            let stored = match bitmap::load(info, col.dtype(), nrows) {
                Ok(s) => s,
                Err(m) => return structure(m),
            };
            let computed = bitmap::compute(slice, nrows, &stored.values);
            if let Some(m) = bitmap::diff(&stored, &computed, nrows) {
                out.push(tampered(m));
            }
            if info.params.exhaustive == Some(true) {
                if let Some(r) = bitmap::first_unlisted(&stored, slice, nrows) {
                    out.push(warning(
                        path,
                        "§10.6",
                        format!(
                            "BITMAP claims exhaustive = true, but row {r}'s value is not among \
                             its values; the claim is ignored"
                        ),
                    ));
                }
            }
        }
        IndexKind::ChunkBloom => {
            let stored = match bloom::load(info, nchunks) {
                Ok(s) => s,
                Err(m) => return structure(m),
            };
            if let Some((c, r)) =
                bloom::first_false_negative(&stored, col.dtype(), slice, nrows, chunk_len)
            {
                out.push(tampered(format!(
                    "chunk {c}: the value of row {r} ({}) has a bit unset in the filter (a false \
                     negative)",
                    crate::text::format_value(&slice.values[r as usize])
                )));
            } else {
                let computed = bloom::compute(col.dtype(), slice, nrows, chunk_len, stored.params);
                if let Some((c, extra)) = bloom::first_extra_bits(&stored, &computed, nchunks) {
                    let BloomParams { k, m_bits, seed } = stored.params;
                    out.push(warning(
                        path,
                        "§10.7",
                        format!(
                            "CHUNK_BLOOM filter of chunk {c} differs from the recomputation with \
                             k = {k}, m_bits = {m_bits}, seed = {seed} ({extra} extra bits set): \
                             only false positives, no value is missed"
                        ),
                    ));
                }
            }
        }
        IndexKind::Unknown(_) => {}
    }
    out
}
