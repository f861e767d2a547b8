//! A set of rows of a table, as a query selects them: a bitmap of
//! `ceil(NROWS / 64)` words when many rows match (what a `BITMAP` index
//! row or a scan produces: counting is a popcount), the sorted row numbers
//! when few do. [`Column::sum`](crate::Column::sum) aggregates a column
//! under one without listing its rows.

use alloc::vec::Vec;
use core::ops::Range;

/// Rows of `[0, nrows)`: a query's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    nrows: u64,
    repr: Repr,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Repr {
    /// Increasing, distinct rows below `nrows`.
    Rows(Vec<u64>),
    /// Bit `r % 64` of word `r / 64` set for row `r`; no bit at or past `nrows`.
    Bits(Vec<u64>),
}

impl Selection {
    /// No row of `[0, nrows)`.
    pub fn empty(nrows: u64) -> Selection {
        Selection {
            nrows,
            repr: Repr::Rows(Vec::new()),
        }
    }

    /// The rows of `rows` (increasing and distinct; rows at or past `nrows`
    /// are dropped).
    pub fn from_rows(mut rows: Vec<u64>, nrows: u64) -> Selection {
        rows.retain(|&r| r < nrows);
        debug_assert!(rows.windows(2).all(|w| w[0] < w[1]));
        Selection {
            nrows,
            repr: Repr::Rows(rows),
        }
    }

    /// The rows whose bit is set in `words` (bit `r % 64` of word `r / 64`);
    /// words and bits at or past `nrows` are dropped.
    pub fn from_words(mut words: Vec<u64>, nrows: u64) -> Selection {
        let n = usize::try_from(nrows.div_ceil(64)).unwrap_or(usize::MAX);
        words.truncate(n);
        let r = nrows % 64;
        if words.len() == n && r != 0 {
            if let Some(last) = words.last_mut() {
                *last &= (1u64 << r) - 1;
            }
        }
        Selection {
            nrows,
            repr: Repr::Bits(words),
        }
    }

    /// The table's row count the selection is of.
    pub fn nrows(&self) -> u64 {
        self.nrows
    }

    /// The number of selected rows.
    pub fn count(&self) -> u64 {
        match &self.repr {
            Repr::Rows(r) => r.len() as u64,
            Repr::Bits(w) => popcount(w),
        }
    }

    /// Whether no row is selected.
    pub fn is_empty(&self) -> bool {
        match &self.repr {
            Repr::Rows(r) => r.is_empty(),
            Repr::Bits(w) => w.iter().all(|&x| x == 0),
        }
    }

    /// Whether row `row` is selected.
    pub fn contains(&self, row: u64) -> bool {
        match &self.repr {
            Repr::Rows(r) => r.binary_search(&row).is_ok(),
            Repr::Bits(w) => usize::try_from(row / 64)
                .ok()
                .and_then(|i| w.get(i))
                .is_some_and(|x| x >> (row % 64) & 1 == 1),
        }
    }

    /// The selected rows, increasing.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        let (rows, words) = match &self.repr {
            Repr::Rows(r) => (r.as_slice(), &[][..]),
            Repr::Bits(w) => (&[][..], w.as_slice()),
        };
        rows.iter().copied().chain(
            words
                .iter()
                .enumerate()
                .flat_map(|(i, &w)| BitIter(w).map(move |b| (i as u64) * 64 + u64::from(b))),
        )
    }

    /// The selected rows, increasing, as a vector.
    pub fn into_rows(self) -> Vec<u64> {
        match self.repr {
            Repr::Rows(r) => r,
            Repr::Bits(w) => {
                let mut out = Vec::with_capacity(usize::try_from(popcount(&w)).unwrap_or(0));
                for (i, &x) in w.iter().enumerate() {
                    out.extend(BitIter(x).map(|b| (i as u64) * 64 + u64::from(b)));
                }
                out
            }
        }
    }

    /// The selected rows of `rows`, as `(first row, bits)` words: bit `j`
    /// of the `i`-th word is row `first + 64 i + j`, `first` being
    /// `rows.start` rounded down to a multiple of 64 (bits outside `rows`
    /// cleared). What an aggregate reading the column block by block
    /// consumes.
    pub fn words_in(&self, rows: Range<u64>, out: &mut Vec<u64>) -> u64 {
        out.clear();
        let rows = rows.start..rows.end.min(self.nrows);
        if rows.start >= rows.end {
            return rows.start & !63;
        }
        let first = rows.start & !63;
        let n = usize::try_from((rows.end - first).div_ceil(64)).unwrap_or(0);
        match &self.repr {
            Repr::Bits(w) => {
                let a = usize::try_from(first / 64).unwrap_or(usize::MAX);
                out.extend(w.iter().skip(a).take(n));
                out.resize(n, 0);
            }
            Repr::Rows(r) => {
                out.resize(n, 0);
                let i = r.partition_point(|&x| x < rows.start);
                for &x in r[i..].iter().take_while(|&&x| x < rows.end) {
                    let k = usize::try_from((x - first) / 64).unwrap_or(0);
                    if let Some(wd) = out.get_mut(k) {
                        *wd |= 1u64 << ((x - first) % 64);
                    }
                }
            }
        }
        // Clear the bits before `rows.start` and at or past `rows.end`.
        if let Some(w) = out.first_mut() {
            *w &= u64::MAX << (rows.start - first);
        }
        let tail = (rows.end - first) % 64;
        if tail != 0 {
            if let Some(w) = out.last_mut() {
                *w &= (1u64 << tail) - 1;
            }
        }
        first
    }

    /// The runs of consecutive selected rows.
    pub fn ranges(&self) -> Vec<Range<u64>> {
        let mut out: Vec<Range<u64>> = Vec::new();
        for r in self.iter() {
            match out.last_mut() {
                Some(last) if last.end == r => last.end = r + 1,
                _ => out.push(r..r + 1),
            }
        }
        out
    }

    /// The smallest range holding every selected row (empty when none is).
    pub(crate) fn span(&self) -> Range<u64> {
        match &self.repr {
            Repr::Rows(r) => match (r.first(), r.last()) {
                (Some(&a), Some(&b)) => a..b + 1,
                _ => 0..0,
            },
            Repr::Bits(w) => {
                let first = w.iter().position(|&x| x != 0);
                let last = w.iter().rposition(|&x| x != 0);
                match (first, last) {
                    (Some(a), Some(b)) => {
                        let lo = a as u64 * 64 + u64::from(w[a].trailing_zeros());
                        let hi = b as u64 * 64 + 64 - u64::from(w[b].leading_zeros());
                        lo..hi
                    }
                    _ => 0..0,
                }
            }
        }
    }
}

/// Set bits of `words`.
pub(crate) fn popcount(words: &[u64]) -> u64 {
    words.iter().map(|w| u64::from(w.count_ones())).sum()
}

/// The positions of the set bits of one word, increasing.
pub(crate) struct BitIter(pub u64);

impl Iterator for BitIter {
    type Item = u32;
    #[inline]
    fn next(&mut self) -> Option<u32> {
        if self.0 == 0 {
            return None;
        }
        let b = self.0.trailing_zeros();
        self.0 &= self.0 - 1;
        Some(b)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn rows_and_bits_agree() {
        let rows: Vec<u64> = vec![0, 3, 63, 64, 65, 127, 128, 199];
        let mut w = vec![0u64; 4];
        for &r in &rows {
            w[(r / 64) as usize] |= 1 << (r % 64);
        }
        w[3] |= 1 << 63; // row 255, past nrows = 200: dropped
        let a = Selection::from_rows(rows.clone(), 200);
        let b = Selection::from_words(w, 200);
        assert_eq!(a.count(), 8);
        assert_eq!(b.count(), 8);
        assert_eq!(b.iter().collect::<Vec<_>>(), rows);
        assert_eq!(b.clone().into_rows(), rows);
        assert_eq!(a.ranges(), b.ranges());
        assert_eq!(a.ranges(), vec![0..1, 3..4, 63..66, 127..129, 199..200]);
        assert_eq!(a.span(), 0..200);
        assert_eq!(b.span(), 0..200);
        for r in 0..260 {
            assert_eq!(a.contains(r), rows.contains(&r), "{r}");
            assert_eq!(b.contains(r), rows.contains(&r), "{r}");
        }
        let (mut x, mut y) = (Vec::new(), Vec::new());
        for (lo, hi) in [(0, 200), (3, 64), (64, 65), (65, 190), (10, 10), (150, 300)] {
            let fa = a.words_in(lo..hi, &mut x);
            let fb = b.words_in(lo..hi, &mut y);
            assert_eq!((fa, &x), (fb, &y), "{lo}..{hi}");
            let got: Vec<u64> = x
                .iter()
                .enumerate()
                .flat_map(|(i, &w)| BitIter(w).map(move |j| fa + 64 * i as u64 + u64::from(j)))
                .collect();
            let want: Vec<u64> = rows
                .iter()
                .copied()
                .filter(|r| (lo..hi).contains(r))
                .collect();
            assert_eq!(got, want, "{lo}..{hi}");
        }
        assert!(Selection::empty(5).is_empty());
        assert_eq!(Selection::empty(5).span(), 0..0);
    }
}
