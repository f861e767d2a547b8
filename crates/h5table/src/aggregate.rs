//! Aggregates of a column under a [`Selection`]: the column is read in
//! blocks of whole chunks, in parallel, and only the blocks holding
//! selected rows are read.

use crate::engine::{float_storage, int_storage, par_map};
use crate::error::{Error, Result};
use crate::model::{Column, ColumnKind};
use crate::selection::{BitIter, Selection};
use alloc::vec::Vec;
use h5fmt::format::datatype::ByteOrder;

/// Rows per block read at least (a whole number of chunks).
const BLOCK_ROWS: u64 = 1 << 16;

impl Column {
    /// The sum of the column's values at the selected rows, accumulated in
    /// `f64` (in row order within blocks of whole chunks, then the block
    /// sums in order: the result does not depend on the thread count),
    /// missing rows (§8.5) skipped (SQL `SUM`; `0.0`
    /// when no row counts). A NaN that is not the column's missing value
    /// makes the sum NaN.
    ///
    /// # Errors
    /// `Usage` for a column that is not of plain numbers (integers or IEEE
    /// floats; not categorical, enum or string), or a selection of another
    /// row count than the column's extent allows; read errors.
    pub fn sum(&self, sel: &Selection) -> Result<f64> {
        if self.kind() == ColumnKind::Categorical
            || matches!(self.dtype(), h5fmt::Datatype::Enum { .. })
        {
            return Err(Error::usage(alloc::format!(
                "column {:?}: sum of a categorical or enum column",
                self.name()
            )));
        }
        let conv = Conv::of(self).ok_or_else(|| {
            Error::usage(alloc::format!(
                "column {:?}: sum needs a column of integers or IEEE floats",
                self.name()
            ))
        })?;
        if sel.nrows() > self.extent() {
            return Err(Error::usage(alloc::format!(
                "a selection of {} rows on column {:?} of extent {}",
                sel.nrows(),
                self.name(),
                self.extent()
            )));
        }
        let span = sel.span();
        if span.is_empty() {
            return Ok(0.0);
        }
        let step = match self.chunk_len() {
            Some(c) if c > 0 => c.saturating_mul((BLOCK_ROWS / c).max(1)),
            _ => BLOCK_ROWS,
        };
        let first_block = span.start / step;
        let nblocks = usize::try_from(span.end.div_ceil(step) - first_block)
            .map_err(|_| Error::usage("too many rows"))?;
        let size = conv.size;
        let fill = match &self.fill().value {
            None => Fill::None,
            Some(_) if self.fill().is_nan => Fill::Nan,
            Some(_) => match self.fill().bytes.get(..size) {
                Some(b) if self.fill().bytes.len() == size => Fill::Bits(conv.bits(b)),
                _ => Fill::None,
            },
        };
        let parts = par_map(
            nblocks,
            || (Vec::<u8>::new(), Vec::<u64>::new()),
            |(raw, words), i| {
                let b = first_block + i as u64;
                let rows = (b * step).max(span.start)..((b + 1) * step).min(span.end);
                let first = sel.words_in(rows.clone(), words);
                if words.iter().all(|w| *w == 0) {
                    return Ok(0.0);
                }
                let n = usize::try_from(rows.end - rows.start)
                    .ok()
                    .and_then(|n| n.checked_mul(size))
                    .ok_or_else(|| Error::usage("block too large"))?;
                if raw.len() != n {
                    raw.clear();
                    raw.try_reserve_exact(n)
                        .map_err(|_| Error::usage("block too large"))?;
                    raw.resize(n, 0);
                }
                self.read_raw_into(rows.clone(), raw)?;
                let skip = rows.start - first;
                let s = match (conv.kind, conv.size, conv.big) {
                    (Kind::Float, 4, false) => sum_selected(raw, 4, words, skip, fill, |e| {
                        let b = u32::from_le_bytes([e[0], e[1], e[2], e[3]]);
                        (u64::from(b), f64::from(f32::from_bits(b)))
                    }),
                    (Kind::Float, 8, false) => sum_selected(raw, 8, words, skip, fill, |e| {
                        let mut a = [0u8; 8];
                        a.copy_from_slice(e);
                        let b = u64::from_le_bytes(a);
                        (b, f64::from_bits(b))
                    }),
                    _ => sum_selected(raw, size, words, skip, fill, |e| {
                        (conv.bits(e), conv.value(e))
                    }),
                };
                Ok(s)
            },
        )?;
        Ok(parts.into_iter().sum())
    }
}

/// The missing value of a column (§8.5), as the bit pattern of an element.
#[derive(Clone, Copy)]
enum Fill {
    None,
    Nan,
    Bits(u64),
}

/// The sum over the set bits of `words` (bit `j` of word `i`: element
/// `64 i + j - skip` of `raw`, `size` bytes each) of `read(element).1`,
/// missing elements skipped (by bit pattern `read(element).0`, or NaN).
#[inline(always)]
fn sum_selected(
    raw: &[u8],
    size: usize,
    words: &[u64],
    skip: u64,
    fill: Fill,
    read: impl Fn(&[u8]) -> (u64, f64),
) -> f64 {
    let mut s = 0f64;
    for (k, &w) in words.iter().enumerate() {
        for j in BitIter(w) {
            let r = (64 * k as u64 + u64::from(j)).wrapping_sub(skip);
            let at = usize::try_from(r)
                .unwrap_or(usize::MAX)
                .saturating_mul(size);
            let Some(e) = raw.get(at..at.saturating_add(size)) else {
                continue;
            };
            let (bits, v) = read(e);
            let missing = match fill {
                Fill::None => false,
                Fill::Nan => v.is_nan(),
                Fill::Bits(b) => bits == b,
            };
            if !missing {
                s += v;
            }
        }
    }
    s
}

/// How one stored number becomes an `f64`.
#[derive(Clone, Copy)]
struct Conv {
    size: usize,
    big: bool,
    kind: Kind,
}

#[derive(Clone, Copy)]
enum Kind {
    Signed,
    Unsigned,
    Float,
}

impl Conv {
    fn of(c: &Column) -> Option<Conv> {
        if let Some((size, order)) = float_storage(c) {
            return Some(Conv {
                size: size as usize,
                big: order == ByteOrder::Big,
                kind: Kind::Float,
            });
        }
        let (size, order, signed) = int_storage(c)?;
        Some(Conv {
            size: size as usize,
            big: order == ByteOrder::Big,
            kind: if signed { Kind::Signed } else { Kind::Unsigned },
        })
    }

    /// The element's bits as an unsigned number.
    #[inline]
    fn bits(&self, e: &[u8]) -> u64 {
        let mut a = [0u8; 8];
        let n = self.size.min(8).min(e.len());
        if self.big {
            a[8 - n..].copy_from_slice(&e[..n]);
            u64::from_be_bytes(a)
        } else {
            a[..n].copy_from_slice(&e[..n]);
            u64::from_le_bytes(a)
        }
    }

    #[inline]
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_wrap)]
    fn value(&self, e: &[u8]) -> f64 {
        let n = self.size.min(8);
        let mut bits = self.bits(e);
        match self.kind {
            Kind::Float => match n {
                2 => h5fmt::data::convert::f16_to_f64(bits as u16),
                4 => f64::from(f32::from_bits(bits as u32)),
                _ => f64::from_bits(bits),
            },
            Kind::Unsigned => bits as f64,
            Kind::Signed => {
                let shift = 64 - 8 * n as u32;
                bits <<= shift;
                ((bits as i64) >> shift) as f64
            }
        }
    }
}
