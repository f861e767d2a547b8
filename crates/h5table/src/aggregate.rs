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
    /// `f64` in row order, missing rows (§8.5) skipped (SQL `SUM`; `0.0`
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
        let fill = self
            .fill()
            .value
            .as_ref()
            .map(|_| (self.fill().bytes.clone(), self.fill().is_nan));
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
                raw.clear();
                raw.try_reserve_exact(n)
                    .map_err(|_| Error::usage("block too large"))?;
                raw.resize(n, 0);
                self.read_raw_into(rows.clone(), raw)?;
                let mut s = 0f64;
                for (k, &w) in words.iter().enumerate() {
                    for j in BitIter(w) {
                        let r = first + 64 * k as u64 + u64::from(j);
                        let at = usize::try_from(r - rows.start).unwrap_or(usize::MAX) * size;
                        let Some(e) = raw.get(at..at + size) else {
                            continue;
                        };
                        let missing = match &fill {
                            Some((_, true)) => conv.value(e).is_nan(),
                            Some((fb, false)) => e == fb.as_slice(),
                            None => false,
                        };
                        if !missing {
                            s += conv.value(e);
                        }
                    }
                }
                Ok(s)
            },
        )?;
        Ok(parts.into_iter().sum())
    }
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

    #[inline]
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_wrap)]
    fn value(&self, e: &[u8]) -> f64 {
        let mut a = [0u8; 8];
        let n = self.size.min(8);
        let mut bits = if self.big {
            a[8 - n..].copy_from_slice(&e[..n]);
            u64::from_be_bytes(a)
        } else {
            a[..n].copy_from_slice(&e[..n]);
            u64::from_le_bytes(a)
        };
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
