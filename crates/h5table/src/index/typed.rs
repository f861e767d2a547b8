//! Typed fast paths of the index builders for fixed-size numeric columns:
//! integers of 1, 2, 4 or 8 bytes (signed or not, either byte order),
//! IEEE `float16`/`float32`/`float64` (either byte order), and enumerations
//! over such integers (ordered by code, §10.5).
//!
//! The column's file bytes are decoded piece by piece straight into `u64`
//! bit patterns, never into a [`h5fmt::Value`] per row. Every function here
//! gives exactly what the generic [`Value`](h5fmt::Value) path of
//! [`super::minmax`], [`super::sorted`], [`super::bitmap`] and
//! [`super::bloom`] (and of `write::index`) gives:
//!
//! * order: integers and enum codes arithmetically, floats numerically with
//!   `-0 == +0` ([`Numeric::key`] maps each value to a `u64` whose unsigned
//!   order is that order);
//! * NaN: never ordered, never equal, never hashed;
//! * missing: the canonical test (§8.5) — no user-defined fill: nothing is
//!   missing; a NaN fill: the NaN rows; otherwise the rows whose file bytes
//!   equal the fill's ([`Missing`]);
//! * Bloom keys: the canonical little-endian bytes at the column's width,
//!   `-0` normalised (§10.7).

use super::bloom::BloomParams;
use super::chunk_range;
use super::order::{is_boolean, BloomHasher};
use super::sorted::SortedRows;
use crate::error::{Error, Result};
use crate::model::Column;
use alloc::format;
use alloc::vec::Vec;
use core::ops::Range;
use h5fmt::format::datatype::{ByteOrder, Datatype};

/// Rows decoded per read when a column is read piecewise (rounded to whole
/// chunks of a chunked column).
const PIECE_ROWS: u64 = 1 << 20;

/// How the file bytes of a fixed-size numeric column map to HEP001 keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Numeric {
    size: usize,
    big: bool,
    family: Family,
    /// An enumeration: its Bloom key exists only for the boolean's 0 and 1
    /// (§10.7 admits no other enum).
    enumeration: bool,
    boolean: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Family {
    Unsigned,
    Signed,
    Float,
}

impl Numeric {
    /// The fast-path view of `dtype`, when it has one: plain integers
    /// (offset 0, full precision) of 1, 2, 4 or 8 bytes, IEEE floats of 2,
    /// 4 or 8 bytes, enums over such integers; little or big endian.
    pub fn of(dtype: &Datatype) -> Option<Numeric> {
        match dtype {
            Datatype::Integer {
                size,
                order,
                signed,
                bit_offset: 0,
                precision,
            } if matches!(size, 1 | 2 | 4 | 8)
                && u32::from(*precision) == size * 8
                && *order != ByteOrder::Vax =>
            {
                Some(Numeric {
                    size: *size as usize,
                    big: *order == ByteOrder::Big,
                    family: if *signed {
                        Family::Signed
                    } else {
                        Family::Unsigned
                    },
                    enumeration: false,
                    boolean: false,
                })
            }
            Datatype::Float { size, order, .. }
                if dtype.is_ieee_standard() && matches!(size, 2 | 4 | 8) =>
            {
                Some(Numeric {
                    size: *size as usize,
                    big: *order == ByteOrder::Big,
                    family: Family::Float,
                    enumeration: false,
                    boolean: false,
                })
            }
            Datatype::Enum { base, .. } if matches!(**base, Datatype::Integer { .. }) => {
                Numeric::of(base).map(|n| Numeric {
                    enumeration: true,
                    boolean: is_boolean(dtype),
                    ..n
                })
            }
            _ => None,
        }
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        self.size
    }

    fn width(&self) -> u32 {
        self.size as u32 * 8
    }

    fn mask(&self) -> u64 {
        u64::MAX >> (64 - self.width())
    }

    /// The bit pattern of one element given as its file bytes (`size` bytes).
    pub fn bits(&self, b: &[u8]) -> u64 {
        let mut v = [0u8; 8];
        let n = self.size.min(b.len());
        if self.big {
            v[8 - n..].copy_from_slice(&b[..n]);
            u64::from_be_bytes(v)
        } else {
            v[..n].copy_from_slice(&b[..n]);
            u64::from_le_bytes(v)
        }
    }

    /// The file bytes of a bit pattern (the inverse of [`Numeric::bits`]).
    pub fn file_bytes(&self, bits: u64) -> Vec<u8> {
        if self.big {
            bits.to_be_bytes()[8 - self.size..].to_vec()
        } else {
            bits.to_le_bytes()[..self.size].to_vec()
        }
    }

    /// Decode file bytes (whole elements) into bit patterns, appended to
    /// `out` (which is cleared first).
    ///
    /// # Errors
    /// `Limit` when the buffer cannot be allocated.
    pub fn decode_into(&self, raw: &[u8], out: &mut Vec<u64>) -> Result<()> {
        out.clear();
        let n = raw.len() / self.size;
        reserve(out, n)?;
        macro_rules! run {
            ($t:ty, $n:literal, $from:ident) => {
                out.extend(
                    raw.chunks_exact($n).map(|c| {
                        u64::from(<$t>::$from(<[u8; $n]>::try_from(c).unwrap_or([0; $n])))
                    }),
                )
            };
        }
        match (self.size, self.big) {
            (1, _) => out.extend(raw.iter().map(|&b| u64::from(b))),
            (2, false) => run!(u16, 2, from_le_bytes),
            (2, true) => run!(u16, 2, from_be_bytes),
            (4, false) => run!(u32, 4, from_le_bytes),
            (4, true) => run!(u32, 4, from_be_bytes),
            (8, false) => run!(u64, 8, from_le_bytes),
            _ => run!(u64, 8, from_be_bytes),
        }
        Ok(())
    }

    /// Whether a bit pattern is an IEEE NaN (never, for integers).
    #[inline]
    pub fn is_nan(&self, bits: u64) -> bool {
        if self.family != Family::Float {
            return false;
        }
        let (exp, man) = match self.size {
            2 => (0x7c00, 0x03ff),
            4 => (0x7f80_0000, 0x007f_ffff),
            _ => (0x7ff0_0000_0000_0000, 0x000f_ffff_ffff_ffff),
        };
        bits & exp == exp && bits & man != 0
    }

    /// The bit pattern with `-0` replaced by `+0` (floats; integers unchanged).
    #[inline]
    pub fn normalise(&self, bits: u64) -> u64 {
        if self.family == Family::Float && bits & (self.mask() >> 1) == 0 {
            0
        } else {
            bits
        }
    }

    /// A key of at most `8 · size` bits whose unsigned order is the HEP001
    /// order of the (non-NaN) values, equal exactly when the values are
    /// (`-0` and `+0` share a key).
    #[inline]
    pub fn key(&self, bits: u64) -> u64 {
        let sign = 1u64 << (self.width() - 1);
        match self.family {
            Family::Unsigned => bits,
            Family::Signed => bits ^ sign,
            Family::Float => {
                let b = self.normalise(bits);
                if b & sign != 0 {
                    !b & self.mask()
                } else {
                    b | sign
                }
            }
        }
    }

    /// The canonical Bloom key of a non-missing, non-NaN value (§10.7):
    /// little-endian bytes at the column's width, `-0` normalised; `None`
    /// for enum codes other than the boolean's 0 and 1.
    #[inline]
    fn canonical(&self, bits: u64) -> Option<[u8; 8]> {
        if self.enumeration && !(self.boolean && bits <= 1) {
            return None;
        }
        Some(self.normalise(bits).to_le_bytes())
    }
}

/// The canonical missing test (§8.5) of a numeric column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    /// No user-defined fill: no row is missing.
    Never,
    /// A NaN fill: the NaN rows are missing.
    Nan,
    /// The rows with exactly this bit pattern are missing.
    Bits(u64),
}

/// A column with a fast path: its [`Numeric`] view and missing test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Typed {
    /// How its bytes map to keys.
    pub num: Numeric,
    /// Its missing test.
    pub missing: Missing,
}

impl Typed {
    /// The fast path of a column, if its datatype has one (see
    /// [`Numeric::of`]).
    pub fn of(col: &Column) -> Option<Typed> {
        let num = Numeric::of(col.dtype())?;
        let fill = col.fill();
        let missing = if fill.value.is_none() {
            Missing::Never
        } else if fill.is_nan {
            Missing::Nan
        } else if fill.bytes.is_empty() {
            Missing::Never
        } else if fill.bytes.len() == num.size {
            Missing::Bits(num.bits(&fill.bytes))
        } else {
            return None;
        };
        Some(Typed { num, missing })
    }

    /// Whether a value (its bit pattern, and whether it is NaN) is missing.
    #[inline]
    pub fn is_missing(&self, bits: u64, nan: bool) -> bool {
        match self.missing {
            Missing::Never => false,
            Missing::Nan => nan,
            Missing::Bits(f) => bits == f,
        }
    }
}

fn too_large(what: &str) -> Error {
    Error::Hdf5(h5fmt::Error::limit(format!("{what}: cannot allocate")))
}

fn reserve<T>(v: &mut Vec<T>, n: usize) -> Result<()> {
    v.try_reserve(n).map_err(|_| too_large("index build"))
}

fn push<T>(v: &mut Vec<T>, x: T) -> Result<()> {
    if v.len() == v.capacity() {
        reserve(v, 1)?;
    }
    v.push(x);
    Ok(())
}

fn to_usize(n: u64) -> Result<usize> {
    usize::try_from(n).map_err(|_| too_large("index build"))
}

/// Where the typed builders get a column's bit patterns: read from the
/// column piece by piece, or from rows read once (by [`load`]) and shared
/// by the indexes built on the column together.
#[derive(Clone, Copy)]
pub struct Src<'a> {
    col: &'a Column,
    t: Typed,
    /// Rows `[first, first + bits.len())`, already decoded.
    rows: Option<(u64, &'a [u64])>,
}

impl<'a> Src<'a> {
    /// Read rows from `col` as they are needed.
    pub fn new(col: &'a Column, t: Typed) -> Src<'a> {
        Src { col, t, rows: None }
    }

    /// Rows `[first, first + bits.len())` are `bits` (from [`load`]); other
    /// rows are read from `col`.
    pub fn with_rows(col: &'a Column, t: Typed, first: u64, bits: &'a [u64]) -> Src<'a> {
        Src {
            col,
            t,
            rows: Some((first, bits)),
        }
    }

    /// The column.
    pub fn column(&self) -> &'a Column {
        self.col
    }

    /// The typed view.
    pub fn typed(&self) -> &Typed {
        &self.t
    }

    /// The loaded bit patterns of rows `rows`, when they are loaded.
    fn loaded(&self, rows: &Range<u64>) -> Option<&'a [u64]> {
        let (first, bits) = self.rows?;
        let a = usize::try_from(rows.start.checked_sub(first)?).ok()?;
        let b = usize::try_from(rows.end.checked_sub(first)?).ok()?;
        bits.get(a..b)
    }
}

/// The bit patterns of rows `rows` of a column, read in pieces of whole
/// chunks and decoded into one vector.
///
/// # Errors
/// Errors reading the column; `Limit` when memory runs out.
pub fn load(col: &Column, t: &Typed, rows: Range<u64>) -> Result<Vec<u64>> {
    let mut out: Vec<u64> = Vec::new();
    reserve(&mut out, to_usize(rows.end.saturating_sub(rows.start))?)?;
    let src = Src::new(col, *t);
    for_each_piece(&src, rows, |_, bits| {
        reserve(&mut out, bits.len())?;
        out.extend_from_slice(bits);
        Ok(())
    })?;
    Ok(out)
}

/// Call `f(first_row, bits)` for consecutive pieces of rows `rows`, each
/// a whole number of the column's chunks (but the last) and at most about
/// [`PIECE_ROWS`] rows, `bits` holding one bit pattern per row.
fn for_each_piece(
    src: &Src,
    rows: Range<u64>,
    mut f: impl FnMut(u64, &[u64]) -> Result<()>,
) -> Result<()> {
    let col = src.col;
    let step = match col.chunk_len() {
        Some(c) if c > 0 => c.saturating_mul((PIECE_ROWS / c).max(1)),
        _ => PIECE_ROWS,
    };
    let loaded = src.loaded(&rows);
    let mut bits = Vec::new();
    let mut start = rows.start;
    while start < rows.end {
        let end = (start / step)
            .saturating_add(1)
            .saturating_mul(step)
            .min(rows.end);
        match loaded {
            Some(all) => {
                let a = (start - rows.start) as usize;
                let b = (end - rows.start) as usize;
                f(start, &all[a..b])?;
            }
            None => {
                let raw = col.read_raw(start..end)?;
                src.t.num.decode_into(&raw, &mut bits)?;
                drop(raw);
                f(start, &bits)?;
            }
        }
        start = end;
    }
    Ok(())
}

/// Call `f(chunk, first_row, bits)` for the rows of data-bearing chunks
/// `chunks` (rows `[0, nrows)`), a chunk's rows split over calls when they
/// span pieces (a contiguous column's single chunk), in row order.
fn for_each_chunk_part(
    src: &Src,
    nrows: u64,
    chunks: Range<u64>,
    mut f: impl FnMut(u64, u64, &[u64]) -> Result<()>,
) -> Result<()> {
    if chunks.is_empty() {
        return Ok(());
    }
    let cl = src.col.chunk_len();
    let first = chunk_range(chunks.start, nrows, cl).start;
    let last = chunk_range(chunks.end - 1, nrows, cl).end;
    for_each_piece(src, first..last, |start, bits| {
        let end = start + bits.len() as u64;
        let mut r = start;
        while r < end {
            let c = match cl {
                Some(l) if l > 0 => r / l,
                _ => 0,
            };
            let stop = chunk_range(c, nrows, cl).end.clamp(r + 1, end);
            f(c, r, &bits[(r - start) as usize..(stop - start) as usize])?;
            r = stop;
        }
        Ok(())
    })
}

/// One `CHUNK_MINMAX` entry of a numeric column, extremes as bit patterns
/// (of the first row attaining them, so of `-0` and `+0` whichever comes
/// first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChunkStats {
    /// The least non-missing, non-NaN value; `None` when there is none.
    pub min: Option<u64>,
    /// The greatest one.
    pub max: Option<u64>,
    /// NaN values.
    pub nan_count: u64,
    /// Missing values.
    pub fill_count: u64,
    /// Rows.
    pub n: u64,
}

/// The `CHUNK_MINMAX` statistics of chunks `chunks` of rows `[0, nrows)`.
///
/// # Errors
/// Errors reading the column; `Limit` when memory runs out.
pub fn minmax(src: &Src, nrows: u64, chunks: Range<u64>) -> Result<Vec<ChunkStats>> {
    let t = src.t;
    let num = t.num;
    let mut out: Vec<ChunkStats> = Vec::new();
    reserve(&mut out, to_usize(chunks.end - chunks.start)?)?;
    let base = chunks.start;
    // (min key, max key) of the current chunk.
    let mut keys = (0u64, 0u64);
    for_each_chunk_part(src, nrows, chunks, |c, _, bits| {
        let i = (c - base) as usize;
        if out.len() <= i {
            out.push(ChunkStats::default());
        }
        let e = &mut out[i];
        e.n += bits.len() as u64;
        for &b in bits {
            let nan = num.is_nan(b);
            let miss = t.is_missing(b, nan);
            e.nan_count += u64::from(nan);
            e.fill_count += u64::from(miss);
            if nan || miss {
                continue;
            }
            let k = num.key(b);
            if e.min.is_none() {
                e.min = Some(b);
                e.max = Some(b);
                keys = (k, k);
            } else if k < keys.0 {
                e.min = Some(b);
                keys.0 = k;
            } else if k > keys.1 {
                e.max = Some(b);
                keys.1 = k;
            }
        }
        Ok(())
    })?;
    Ok(out)
}

/// The `SORTED_ROWS` permutation of rows `[0, nrows)` (§10.5): ordered
/// values by key, ties by increasing row, then the fill tail, then the NaN
/// tail.
///
/// The ordered rows are sorted (stably, by key) as one `u64` each,
/// `(key − least key) << row_bits | row`, when the key range and the row
/// numbers fit in 64 bits together; as `(key, row)` pairs otherwise.
///
/// # Errors
/// Errors reading the column; `Limit` when memory runs out.
pub fn sorted_rows(src: &Src, nrows: u64) -> Result<SortedRows> {
    let owned;
    let bits: &[u64] = match src.loaded(&(0..nrows)) {
        Some(b) => b,
        None => {
            owned = load(src.col, &src.t, 0..nrows)?;
            &owned
        }
    };
    let (t, num) = (src.t, src.t.num);
    let n = bits.len();
    // Tail rows in row order, NaN ones flagged in the top bit.
    const NAN: u64 = 1 << 63;
    let mut tails: Vec<u64> = Vec::new();
    let mut order = KeyRange::default();
    for (r, &b) in (0u64..).zip(bits) {
        let nan = num.is_nan(b);
        if nan || t.is_missing(b, nan) {
            push(&mut tails, r | if nan { NAN } else { 0 })?;
        } else {
            order.add(num.key(b));
        }
    }
    let ordered_rows = n - tails.len();
    let row_bits = 64 - (n as u64).saturating_sub(1).leading_zeros();
    let key_bits = if ordered_rows == 0 {
        0
    } else {
        64 - (order.hi - order.lo).leading_zeros()
    };
    let mut sorted: Vec<u64> = Vec::new();
    reserve(&mut sorted, n)?;
    if key_bits + row_bits <= 64 {
        for (r, &b) in (0u64..).zip(bits) {
            let nan = num.is_nan(b);
            if !(nan || t.is_missing(b, nan)) {
                sorted.push((num.key(b) - order.lo).checked_shl(row_bits).unwrap_or(0) | r);
            }
        }
        // Stably by the key bits alone: rows come in increasing order.
        let range = KeyRange {
            lo: 0,
            hi: order.hi.saturating_sub(order.lo),
            last: 0,
            ordered: order.ordered,
        };
        radix_sort(&mut sorted, |x| x.checked_shr(row_bits).unwrap_or(0), range)?;
        let mask = u64::MAX.checked_shr(64 - row_bits).unwrap_or(0);
        for x in &mut sorted {
            *x &= mask;
        }
    } else {
        let mut v: Vec<(u64, u64)> = Vec::new();
        reserve(&mut v, ordered_rows)?;
        for (r, &b) in (0u64..).zip(bits) {
            let nan = num.is_nan(b);
            if !(nan || t.is_missing(b, nan)) {
                v.push((num.key(b), r));
            }
        }
        radix_sort(&mut v, |x| x.0, order)?;
        sorted.extend(v.iter().map(|x| x.1));
    }
    let nan = tails.iter().filter(|&&x| x & NAN != 0).count();
    let fill = tails.len() - nan;
    sorted.extend(tails.iter().filter(|&&x| x & NAN == 0));
    sorted.extend(tails.iter().filter(|&&x| x & NAN != 0).map(|x| x & !NAN));
    Ok(SortedRows {
        perm: sorted,
        nan_tail_length: nan as u64,
        fill_tail_length: fill as u64,
    })
}

/// A stable radix sort of `v` by `key(x)`: equal keys keep their order.
///
/// MSD: the elements are distributed by the top bits (at most 12) of the
/// bits in which their keys differ, stably, then each bucket is sorted the
/// same way by the bits below, down to buckets of a few elements (insertion
/// sort). Keys equal in a bucket end its recursion at once, so few distinct
/// values cost one pass; spread-out keys give buckets that stay in cache
/// after the first pass.
fn radix_sort<T: Copy + Default>(
    v: &mut Vec<T>,
    key: impl Fn(&T) -> u64 + Copy,
    range: KeyRange,
) -> Result<()> {
    let n = v.len();
    let KeyRange {
        lo, hi, ordered, ..
    } = range;
    if n < 2 || ordered {
        return Ok(());
    }
    let mut tmp: Vec<T> = Vec::new();
    reserve(&mut tmp, n)?;
    tmp.resize(n, T::default());
    // The first level scatters into `tmp`, which then holds the result.
    let bits = 64 - (lo ^ hi).leading_zeros();
    let shift = scatter(v, &mut tmp, key, bits, &mut Vec::new());
    let mut start = 0;
    let mut counts = Vec::new();
    bucket_sizes(&tmp, key, shift, &mut counts);
    for c in counts {
        let (a, scratch) = (&mut tmp[start..start + c], &mut v[start..start + c]);
        if c > 1 << 14 {
            lsd_in(a, scratch, key, shift);
        } else {
            sort_in(a, scratch, key, shift);
        }
        start += c;
    }
    core::mem::swap(v, &mut tmp);
    Ok(())
}

/// Sort `a` stably by bits `[0, bits)` of the key, LSD, 11 bits per pass,
/// skipping the digits equal in every key; `scratch` (as long) as working
/// space. For slices too large for the cache, where each MSD level would
/// cost more passes over memory.
fn lsd_in<T: Copy>(a: &mut [T], scratch: &mut [T], key: impl Fn(&T) -> u64, bits: u32) {
    const D: u32 = 11;
    const B: usize = 1 << D;
    let n = a.len();
    let passes = bits.div_ceil(D) as usize;
    let mut hist = alloc::vec![[0usize; B]; passes];
    for x in a.iter() {
        let k = key(x);
        for (p, h) in hist.iter_mut().enumerate() {
            h[(k >> (p as u32 * D)) as usize & (B - 1)] += 1;
        }
    }
    // Whether the data is in `scratch`.
    let mut moved = false;
    let mut off = alloc::vec![0usize; B];
    for (p, h) in hist.iter().enumerate() {
        if h.contains(&n) {
            continue;
        }
        let mut sum = 0;
        for (o, &c) in off.iter_mut().zip(h) {
            *o = sum;
            sum += c;
        }
        let (from, to): (&[T], &mut [T]) = if moved {
            (&*scratch, &mut *a)
        } else {
            (&*a, &mut *scratch)
        };
        let shift = p as u32 * D;
        for x in from {
            let d = (key(x) >> shift) as usize & (B - 1);
            to[off[d]] = *x;
            off[d] += 1;
        }
        moved = !moved;
    }
    if moved {
        a.copy_from_slice(scratch);
    }
}

/// The least and greatest of a sequence of keys, and whether it is
/// non-decreasing (gathered as the keys are produced).
#[derive(Debug, Clone, Copy)]
struct KeyRange {
    lo: u64,
    hi: u64,
    last: u64,
    ordered: bool,
}

impl Default for KeyRange {
    fn default() -> Self {
        KeyRange {
            lo: u64::MAX,
            hi: 0,
            last: 0,
            ordered: true,
        }
    }
}

impl KeyRange {
    #[inline]
    fn add(&mut self, k: u64) {
        self.ordered &= self.last <= k;
        self.last = k;
        self.lo = self.lo.min(k);
        self.hi = self.hi.max(k);
    }
    #[cfg(test)]
    fn of<T>(v: &[T], key: impl Fn(&T) -> u64) -> KeyRange {
        let mut r = KeyRange::default();
        for x in v {
            r.add(key(x));
        }
        r
    }
}

/// The lengths of the runs of equal `key >> shift` in `a` (sorted by it).
fn bucket_sizes<T>(a: &[T], key: impl Fn(&T) -> u64, shift: u32, out: &mut Vec<usize>) {
    out.clear();
    let mut i = 0;
    while i < a.len() {
        let d = key(&a[i]).checked_shr(shift).unwrap_or(0);
        let mut j = i + 1;
        while j < a.len() && key(&a[j]).checked_shr(shift).unwrap_or(0) == d {
            j += 1;
        }
        out.push(j - i);
        i = j;
    }
}

/// Distribute `src` into `dst` stably by the top digit of bits `[0, bits)`
/// of the key (as many bits as suit `src`'s length, at most 12); returns
/// the digit's shift (the bits left to sort within each bucket).
fn scatter<T: Copy>(
    src: &[T],
    dst: &mut [T],
    key: impl Fn(&T) -> u64,
    bits: u32,
    offsets: &mut Vec<usize>,
) -> u32 {
    let log = usize::BITS - src.len().leading_zeros();
    let d = bits.min(12).min(log.max(4));
    let shift = bits - d;
    let mask = (1usize << d) - 1;
    offsets.clear();
    offsets.resize(1 << d, 0);
    for x in src {
        offsets[(key(x) >> shift) as usize & mask] += 1;
    }
    let mut sum = 0;
    for o in offsets.iter_mut() {
        let c = *o;
        *o = sum;
        sum += c;
    }
    for x in src {
        let b = (key(x) >> shift) as usize & mask;
        dst[offsets[b]] = *x;
        offsets[b] += 1;
    }
    shift
}

/// Sort `a` stably by bits `[0, bits)` of the key (the bits above are equal
/// throughout `a`), `scratch` (as long) as working space.
fn sort_in<T: Copy>(a: &mut [T], scratch: &mut [T], key: impl Fn(&T) -> u64 + Copy, bits: u32) {
    if a.len() <= 32 {
        // Stable insertion sort.
        for i in 1..a.len() {
            let x = a[i];
            let k = key(&x);
            let mut j = i;
            while j > 0 && key(&a[j - 1]) > k {
                a[j] = a[j - 1];
                j -= 1;
            }
            a[j] = x;
        }
        return;
    }
    let (mut lo, mut hi) = (u64::MAX, 0u64);
    for x in a.iter() {
        let k = key(x);
        lo = lo.min(k);
        hi = hi.max(k);
    }
    let mask = u64::MAX.checked_shr(64 - bits).unwrap_or(0);
    let varying = 64 - ((lo ^ hi) & mask).leading_zeros();
    if varying == 0 {
        return;
    }
    let mut offsets = Vec::new();
    let shift = scatter(a, scratch, key, varying, &mut offsets);
    a.copy_from_slice(scratch);
    let mut counts = Vec::new();
    bucket_sizes(a, |x| key(x) & mask, shift, &mut counts);
    let mut start = 0;
    for c in counts {
        if c > 1 {
            sort_in(
                &mut a[start..start + c],
                &mut scratch[start..start + c],
                key,
                shift,
            );
        }
        start += c;
    }
}

/// A `BITMAP` of a numeric column: the distinct non-missing, non-NaN values
/// in the HEP001 order, each as the file bytes of its first row, and one bit
/// row per value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedBitmap {
    /// `K · size` bytes: the values' file bytes, in order.
    pub values: Vec<u8>,
    /// `K`.
    pub k: usize,
    /// Bytes per bit row, `ceil(nrows / 8)`.
    pub row_bytes: usize,
    /// `K × row_bytes` bytes, row-major.
    pub bits: Vec<u8>,
}

/// The `BITMAP` of rows `[0, nrows)`: every non-NaN row, missing or not,
/// marks the listed value it equals (a missing `-0` marks a listed `+0`);
/// only non-missing rows list values.
///
/// # Errors
/// `Usage` when there are more than `max_values` distinct values; errors
/// reading the column; `Limit` when memory runs out.
pub fn bitmap(src: &Src, nrows: u64, max_values: usize) -> Result<TypedBitmap> {
    struct Entry {
        key: u64,
        first: Option<u64>,
        bits: Vec<u8>,
    }
    let (t, col) = (src.t, src.col);
    let num = t.num;
    let row_bytes = to_usize(nrows.div_ceil(8))?;
    let mut map = KeyMap::new();
    let mut entries: Vec<Entry> = Vec::new();
    let mut listed = 0usize;
    let mut last: Option<(u64, usize)> = None;
    for_each_piece(src, 0..nrows, |start, bits| {
        for (r, &b) in (start..).zip(bits) {
            let nan = num.is_nan(b);
            if nan {
                continue;
            }
            let key = num.key(b);
            let id = match last {
                Some((k, id)) if k == key => id,
                _ => {
                    let id = match map.get(key) {
                        Some(id) => id,
                        None => {
                            let mut row = Vec::new();
                            reserve(&mut row, row_bytes)?;
                            row.resize(row_bytes, 0);
                            push(
                                &mut entries,
                                Entry {
                                    key,
                                    first: None,
                                    bits: row,
                                },
                            )?;
                            map.insert(key, entries.len() - 1)?;
                            entries.len() - 1
                        }
                    };
                    last = Some((key, id));
                    id
                }
            };
            let e = &mut entries[id];
            if e.first.is_none() && !t.is_missing(b, nan) {
                e.first = Some(b);
                listed += 1;
                if listed > max_values {
                    return Err(Error::Usage(format!(
                        "column {:?} has more than {max_values} distinct values, the most a \
                         BITMAP index is built for",
                        col.name()
                    )));
                }
            }
            e.bits[(r / 8) as usize] |= 1 << (r % 8);
        }
        Ok(())
    })?;
    drop(map);
    entries.retain(|e| e.first.is_some());
    entries.sort_unstable_by_key(|e| e.key);
    let k = entries.len();
    let mut values = Vec::new();
    reserve(&mut values, k * num.size)?;
    let mut bits = Vec::new();
    reserve(
        &mut bits,
        k.checked_mul(row_bytes)
            .ok_or_else(|| too_large("BITMAP"))?,
    )?;
    for e in entries {
        values.extend(num.file_bytes(e.first.unwrap_or(0)));
        bits.extend_from_slice(&e.bits);
    }
    Ok(TypedBitmap {
        values,
        k,
        row_bytes,
        bits,
    })
}

/// The distinct Bloom keys of each data-bearing chunk of a range (§10.7:
/// non-missing, non-NaN values, `-0` normalised to `+0`, as bit patterns),
/// gathered in one pass; a chunk's filter depends only on this set.
#[derive(Debug, Clone, Default)]
pub struct BloomKeys {
    /// The first chunk.
    first: u64,
    /// `keys[ends[i − 1] .. ends[i]]` are chunk `first + i`'s keys.
    ends: Vec<usize>,
    keys: Vec<u64>,
}

impl BloomKeys {
    /// The largest number of distinct keys in one chunk.
    pub fn max_distinct(&self) -> u64 {
        let mut prev = 0;
        let mut best = 0;
        for &e in &self.ends {
            best = best.max(e - prev);
            prev = e;
        }
        best as u64
    }
}

/// The [`BloomKeys`] of chunks `chunks` of rows `[0, nrows)`.
///
/// # Errors
/// Errors reading the column; `Limit` when memory runs out.
pub fn bloom_keys(src: &Src, nrows: u64, chunks: Range<u64>) -> Result<BloomKeys> {
    let (t, num) = (src.t, src.t.num);
    let mut out = BloomKeys {
        first: chunks.start,
        ends: Vec::new(),
        keys: Vec::new(),
    };
    reserve(&mut out.ends, to_usize(chunks.end - chunks.start)?)?;
    let mut set = KeySet::default();
    // The chunk whose keys `set` holds.
    let mut cur = chunks.start;
    let mut last: Option<u64> = None;
    let flush = |set: &mut KeySet, out: &mut BloomKeys, upto: u64| -> Result<()> {
        // Chunks before `upto` not yet closed: the first gets the set.
        while (out.ends.len() as u64) < upto - out.first {
            set.drain_into(&mut out.keys)?;
            push(&mut out.ends, out.keys.len())?;
        }
        Ok(())
    };
    for_each_chunk_part(src, nrows, chunks.clone(), |c, _, bits| {
        if c != cur {
            flush(&mut set, &mut out, c)?;
            last = None;
            cur = c;
        }
        for &b in bits {
            let nan = num.is_nan(b);
            if nan || t.is_missing(b, nan) || num.canonical(b).is_none() {
                continue;
            }
            let k = num.normalise(b);
            if last != Some(k) {
                set.insert(k)?;
                last = Some(k);
            }
        }
        Ok(())
    })?;
    flush(&mut set, &mut out, chunks.end)?;
    Ok(out)
}

/// The Bloom filters (`m_bits / 8` bytes each, in order) of the chunks of
/// `keys`.
///
/// # Errors
/// `Limit` when memory runs out.
pub fn bloom_filters(num: &Numeric, keys: &BloomKeys, params: BloomParams) -> Result<Vec<u8>> {
    let m = params.m_bytes();
    let mut out = Vec::new();
    let len = keys
        .ends
        .len()
        .checked_mul(m)
        .ok_or_else(|| too_large("CHUNK_BLOOM"))?;
    reserve(&mut out, len)?;
    out.resize(len, 0);
    if m == 0 {
        return Ok(out);
    }
    let hasher = BloomHasher::new(params.k, params.m_bits, params.seed);
    let size = num.size;
    let fill = |filters: &mut [u8], ends: &[usize], mut start: usize| {
        for (f, &end) in filters.chunks_exact_mut(m).zip(ends) {
            for &k in keys.keys.get(start..end).unwrap_or(&[]) {
                let key = k.to_le_bytes();
                hasher.for_each_position(&key[..size], |g| {
                    if let Some(x) = f.get_mut((g / 8) as usize) {
                        *x |= 1 << (g % 8);
                    }
                });
            }
            start = end;
        }
    };
    // Two halves on two threads when there is enough to hash.
    let half = keys.ends.len() / 2;
    #[cfg(feature = "std")]
    if keys.keys.len() >= 1 << 20 && half > 0 {
        let (f0, f1) = out.split_at_mut(half * m);
        let (e0, e1) = keys.ends.split_at(half);
        let mid = e0.last().copied().unwrap_or(0);
        let fill = &fill;
        std::thread::scope(|s| {
            let h = s.spawn(move || fill(f1, e1, mid));
            fill(f0, e0, 0);
            h.join()
        })
        .map_err(|_| Error::Usage("CHUNK_BLOOM: a hashing thread panicked".into()))?;
        return Ok(out);
    }
    let _ = half;
    fill(&mut out, &keys.ends, 0);
    Ok(out)
}

/// A set of `u64` keys: open addressing, linear probing, at most half
/// full; the key `u64::MAX` marks empty slots, its own presence is a flag.
#[derive(Default)]
struct KeySet {
    slots: Vec<u64>,
    len: usize,
    has_max: bool,
}

impl KeySet {
    fn len(&self) -> usize {
        self.len + usize::from(self.has_max)
    }
    #[cfg(test)]
    fn clear(&mut self) {
        self.slots.iter_mut().for_each(|s| *s = u64::MAX);
        self.len = 0;
        self.has_max = false;
    }
    /// Append the keys (in no particular order) to `out` and empty the set.
    fn drain_into(&mut self, out: &mut Vec<u64>) -> Result<()> {
        reserve(out, self.len())?;
        if self.len > 0 {
            for s in &mut self.slots {
                if *s != u64::MAX {
                    out.push(*s);
                    *s = u64::MAX;
                }
            }
        }
        if self.has_max {
            out.push(u64::MAX);
        }
        self.len = 0;
        self.has_max = false;
        Ok(())
    }
    fn insert(&mut self, key: u64) -> Result<()> {
        if key == u64::MAX {
            self.has_max = true;
            return Ok(());
        }
        if 2 * (self.len + 1) > self.slots.len() {
            let cap = (self.slots.len() * 2).max(64);
            let mut slots = Vec::new();
            reserve(&mut slots, cap)?;
            slots.resize(cap, u64::MAX);
            let old = core::mem::replace(&mut self.slots, slots);
            self.len = 0;
            for k in old {
                if k != u64::MAX {
                    self.put(k);
                }
            }
        }
        self.put(key);
        Ok(())
    }
    #[inline]
    fn put(&mut self, key: u64) {
        let mask = self.slots.len() - 1;
        let mut s = mix(key) & mask;
        loop {
            let k = self.slots[s];
            if k == key {
                return;
            }
            if k == u64::MAX {
                self.slots[s] = key;
                self.len += 1;
                return;
            }
            s = (s + 1) & mask;
        }
    }
}

/// MurmurHash3's 64-bit finaliser, as a slot index.
#[inline]
fn mix(key: u64) -> usize {
    let mut k = key;
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^= k >> 33;
    k as usize
}

/// A map from `u64` keys to `usize` ids: open addressing, linear probing,
/// at most half full.
struct KeyMap {
    keys: Vec<u64>,
    ids: Vec<usize>,
    len: usize,
}

const EMPTY: usize = usize::MAX;

impl KeyMap {
    fn new() -> KeyMap {
        KeyMap {
            keys: Vec::new(),
            ids: Vec::new(),
            len: 0,
        }
    }
    #[inline]
    fn slot(&self, key: u64) -> usize {
        mix(key) & (self.keys.len() - 1)
    }
    fn get(&self, key: u64) -> Option<usize> {
        if self.keys.is_empty() {
            return None;
        }
        let mut s = self.slot(key);
        loop {
            match self.ids[s] {
                EMPTY => return None,
                id if self.keys[s] == key => return Some(id),
                _ => s = (s + 1) & (self.keys.len() - 1),
            }
        }
    }
    /// Insert `key → id` unless `key` is present.
    fn insert(&mut self, key: u64, id: usize) -> Result<()> {
        if 2 * (self.len + 1) > self.keys.len() {
            self.grow()?;
        }
        let mut s = self.slot(key);
        loop {
            match self.ids[s] {
                EMPTY => {
                    self.keys[s] = key;
                    self.ids[s] = id;
                    self.len += 1;
                    return Ok(());
                }
                _ if self.keys[s] == key => return Ok(()),
                _ => s = (s + 1) & (self.keys.len() - 1),
            }
        }
    }
    fn grow(&mut self) -> Result<()> {
        let cap = (self.keys.len() * 2).max(64);
        let mut keys = Vec::new();
        let mut ids = Vec::new();
        reserve(&mut keys, cap)?;
        reserve(&mut ids, cap)?;
        keys.resize(cap, 0);
        ids.resize(cap, EMPTY);
        let old_keys = core::mem::replace(&mut self.keys, keys);
        let old_ids = core::mem::replace(&mut self.ids, ids);
        self.len = 0;
        for (k, id) in old_keys.into_iter().zip(old_ids) {
            if id != EMPTY {
                self.insert(k, id)?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn radix_sorts_stably() {
        let mut s = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s
        };
        type Gen = fn(u64) -> u64;
        let gens: [Gen; 4] = [
            |r| r % 300 * 0x0101_0101_0000,
            |r| r,
            |r| r >> 40,
            // Skewed: most keys in one MSD bucket.
            |r| if r % 10 == 0 { r } else { r % 1000 },
        ];
        for n in [0usize, 1, 5000, 200_000] {
            for g in gens {
                let mut v: Vec<(u64, u64)> = (0..n as u64).map(|i| (g(rnd()), i)).collect();
                let mut w = v.clone();
                w.sort_by_key(|x| x.0);
                let r = KeyRange::of(&v, |x| x.0);
                radix_sort(&mut v, |x| x.0, r).unwrap();
                assert!(v == w, "n = {n}");
            }
        }
    }

    #[test]
    fn bloom_filters_split_over_threads_equal_one_by_one() {
        // Enough keys for the two-thread path: each filter equal to the
        // keys inserted one by one (`bloom::insert`).
        let num = Numeric::of(&Datatype::int_le(8, false)).unwrap();
        let mut keys = BloomKeys::default();
        let mut s = 0x2545_f491_4f6c_dd1du64;
        for c in 0..60usize {
            for _ in 0..(c * 1237 % 30_000 + 20_000) {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                keys.keys.push(s % 1_000_003);
            }
            keys.ends.push(keys.keys.len());
        }
        assert!(keys.keys.len() >= 1 << 20);
        let p = BloomParams {
            k: 5,
            m_bits: 8 * 4096,
            seed: 99,
        };
        let got = bloom_filters(&num, &keys, p).unwrap();
        let m = p.m_bytes();
        let mut start = 0;
        for (c, &end) in keys.ends.iter().enumerate() {
            let mut want = alloc::vec![0u8; m];
            for k in &keys.keys[start..end] {
                super::super::bloom::insert(&mut want, &k.to_le_bytes(), p);
            }
            assert!(got[c * m..(c + 1) * m] == want[..], "chunk {c}");
            start = end;
        }
    }

    #[test]
    fn keymap() {
        let mut m = KeyMap::new();
        for k in 0..1000u64 {
            m.insert(k * 7919, k as usize).unwrap();
        }
        m.insert(0, 5).unwrap();
        assert_eq!(m.len, 1000);
        assert_eq!(m.get(7919 * 3), Some(3));
        assert_eq!(m.get(0), Some(0));
        assert_eq!(m.get(1), None);
        let mut s = KeySet::default();
        for k in (0..1000u64).chain([u64::MAX, 5, u64::MAX]) {
            s.insert(k.wrapping_mul(0x9e37_79b9_7f4a_7c15)).unwrap();
        }
        assert_eq!(s.len(), 1001);
        s.clear();
        assert_eq!(s.len(), 0);
        s.insert(3).unwrap();
        assert_eq!(s.len(), 1);
    }
}
