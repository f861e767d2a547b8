//! Decoding raw element bytes into [`Value`]s.
//!
//! The rules are those of the h5canon/1 canonical dump (what libhdf5's
//! conversions yield):
//! - integers, bitfields and enum codes are the `precision` bits at
//!   `bit_offset`, sign-extended when signed;
//! - IEEE floats keep their exact bits (NaN payloads, signed zeros); floats of
//!   any other layout become the unsigned integer of all their bytes, byte
//!   order resolved;
//! - fixed-length strings lose trailing padding only (NULs for nullterm and
//!   nullpad, spaces for spacepad), variable-length strings are kept as stored;
//! - variable-length data and region/new-style references are fetched from the
//!   global heap through a [`HeapResolver`].

use crate::codec::Cursor;
use crate::data::value::{Reference, Region};
use crate::data::{HeapResolver, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::format::datatype::{ByteOrder, Datatype, EnumMember, RefKind, StringPad};
use crate::format::selection::Selection;
use crate::{Addr, Ctx};
use alloc::boxed::Box;
use alloc::collections::BTreeMap;
use alloc::string::String;
use alloc::vec::Vec;

/// Decode one element of `dtype` from `bytes` (exactly `dtype.size()` bytes).
///
/// # Errors
/// `Truncated` when `bytes` is short, `Corrupt`/`Unsupported` from the heap or type.
pub fn decode_element(
    dtype: &Datatype,
    bytes: &[u8],
    ctx: Ctx,
    heap: &dyn HeapResolver,
) -> Result<Value> {
    decode_element_in(dtype, bytes, ctx, heap, &Budget::new(ctx))
}

/// [`decode_element`] charging `budget`.
pub(crate) fn decode_element_in(
    dtype: &Datatype,
    bytes: &[u8],
    ctx: Ctx,
    heap: &dyn HeapResolver,
    budget: &Budget,
) -> Result<Value> {
    let size = element_size(dtype)?;
    let b = bytes.get(..size).ok_or_else(|| {
        Error::new(
            ErrorKind::Truncated,
            alloc::format!("element of {size} bytes from {} bytes", bytes.len()),
        )
    })?;
    decode_one(dtype, b, ctx, heap, budget)
}

/// Decode `count` consecutive elements of `dtype` from `bytes`.
///
/// What the values take in memory (with their strings, byte strings and
/// member names, and the heap objects references are decoded from) is
/// bounded by `Limits::max_read_bytes`: elements can share one heap object,
/// so the values are not bounded by the size of `bytes`.
///
/// # Errors
/// As [`decode_element`]; `Truncated` when `bytes` holds fewer than `count`
/// elements; `Limit` past the read limit.
pub fn decode_elements(
    dtype: &Datatype,
    bytes: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
) -> Result<Vec<Value>> {
    decode_elements_in(dtype, bytes, count, ctx, heap, &Budget::new(ctx))
}

/// [`decode_elements`] charging `budget`.
pub(crate) fn decode_elements_in(
    dtype: &Datatype,
    bytes: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
    budget: &Budget,
) -> Result<Vec<Value>> {
    let size = element_size(dtype)?;
    let n = usize::try_from(count).map_err(|_| Error::limit(alloc::format!("{count} elements")))?;
    let need = n
        .checked_mul(size)
        .filter(|&need| need <= bytes.len())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Truncated,
                alloc::format!(
                    "{count} elements of {size} bytes do not fit in {} bytes",
                    bytes.len()
                ),
            )
        })?;
    budget.charge_values(count)?;
    let data = bytes.get(..need).unwrap_or(&[]);
    if let Some(v) = decode_fast(dtype, data) {
        return Ok(v);
    }
    let mut out = crate::io::try_vec(n, "decoded elements")?;
    for chunk in data.chunks_exact(size) {
        out.push(decode_one(dtype, chunk, ctx, heap, budget)?);
    }
    Ok(out)
}

/// The bytes of variable-length strings, concatenated: string `i` is
/// `data[offsets[i]..offsets[i + 1]]` (bytes as stored: no padding removed,
/// not checked as UTF-8). What [`decode_vlen_strings`] and
/// `Dataset::read_vlen_strings` return, for readers that want one buffer
/// rather than a `String` per element (columnar formats such as Arrow).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct VarBytes {
    /// All strings' bytes, back to back.
    pub data: Vec<u8>,
    /// `count + 1` offsets into `data`, starting at 0.
    pub offsets: Vec<u64>,
}

impl VarBytes {
    /// The number of strings.
    pub fn len(&self) -> usize {
        self.offsets.len().saturating_sub(1)
    }
    /// Whether there are no strings.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// The bytes of string `i`, `None` past the end.
    pub fn get(&self, i: usize) -> Option<&[u8]> {
        let a = usize::try_from(*self.offsets.get(i)?).ok()?;
        let b = usize::try_from(*self.offsets.get(i + 1)?).ok()?;
        self.data.get(a..b)
    }
}

/// Call `f` with the bytes of each of the `count` variable-length strings
/// whose descriptors (length, heap collection address, object index) are
/// `raw` (file bytes of a `VarLenString` dataset or attribute), in order,
/// lent from the heap reader without a copy or a `Value`. A null descriptor
/// (zero length or undefined address) is the empty string. The bytes are
/// as stored, exactly what [`decode_elements`] would put in a
/// `Value::Str`/`Value::RawStr`.
///
/// The total string length is charged against `Limits::max_read_bytes`,
/// as [`decode_elements`] charges it.
///
/// # Errors
/// `Usage` when `dtype` is not a variable-length string; `Truncated` when
/// `raw` holds fewer than `count` descriptors; `Corrupt` for a heap object
/// shorter than its descriptor's length or missing; `Limit` past the read limit.
pub fn for_each_vlen_string(
    dtype: &Datatype,
    raw: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
    f: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    if !matches!(dtype, Datatype::VarLenString { .. }) {
        return Err(Error::usage(
            "for_each_vlen_string on a type that is not a variable-length string",
        ));
    }
    let size = element_size(dtype)?;
    let n = usize::try_from(count).map_err(|_| Error::limit(alloc::format!("{count} elements")))?;
    let need = n
        .checked_mul(size)
        .filter(|&need| need <= raw.len())
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Truncated,
                alloc::format!(
                    "{count} string descriptors of {size} bytes do not fit in {} bytes",
                    raw.len()
                ),
            )
        })?;
    let budget = Budget::new(ctx);
    // Consecutive strings in one collection are looked up as one run.
    let mut run: Vec<(u32, usize)> = Vec::new();
    let mut run_addr = Addr::UNDEF;
    for b in raw.get(..need).unwrap_or(&[]).chunks_exact(size) {
        let (len, addr, index) = vlen_descriptor(b, ctx)?;
        if len == 0 || is_null_addr(addr) {
            flush_strings(heap, run_addr, &mut run, f)?;
            f(&[]);
            continue;
        }
        if addr != run_addr || run.len() >= RUN_MAX {
            flush_strings(heap, run_addr, &mut run, f)?;
            run_addr = addr;
        }
        budget.charge(u64::from(len))?;
        run.push((index, usize::try_from(len).unwrap_or(usize::MAX)));
    }
    flush_strings(heap, run_addr, &mut run, f)
}

/// Strings per heap lookup at most in [`for_each_vlen_string`].
const RUN_MAX: usize = 4096;

/// The strings `run` of collection `addr` to `f`, in order; empties `run`.
fn flush_strings(
    heap: &dyn HeapResolver,
    addr: Addr,
    run: &mut Vec<(u32, usize)>,
    f: &mut dyn FnMut(&[u8]),
) -> Result<()> {
    if run.is_empty() {
        return Ok(());
    }
    let (mut k, mut short) = (0usize, None);
    heap.with_global_heap_prefixes(addr, run, &mut |obj| {
        let want = run.get(k).map_or(0, |&(_, l)| l);
        k += 1;
        match short {
            Some(_) => {}
            None if obj.len() == want => f(obj),
            None => short = Some((want, obj.len())),
        }
    })?;
    run.clear();
    if let Some((len, got)) = short {
        return Err(Error::corrupt(
            alloc::format!("variable-length string of {len} bytes in a {got}-byte heap object"),
            addr.0,
        ));
    }
    Ok(())
}

/// A variable-length descriptor: length, heap collection address, object
/// index (the common 8-byte-address case without a cursor).
#[inline(always)]
fn vlen_descriptor(b: &[u8], ctx: Ctx) -> Result<(u32, Addr, u32)> {
    let so = usize::from(ctx.sizes.offsets);
    if so == 8 {
        if let (Some(l), Some(a), Some(i)) = (b.get(0..4), b.get(4..12), b.get(12..16)) {
            let len = u32::from_le_bytes(l.try_into().unwrap_or([0; 4]));
            let addr = u64::from_le_bytes(a.try_into().unwrap_or([0; 8]));
            let index = u32::from_le_bytes(i.try_into().unwrap_or([0; 4]));
            return Ok((len, Addr(addr), index));
        }
    }
    let mut cur = Cursor::new(b, 0);
    let len = cur.read_u32()?;
    let (addr, index) = heap_id(&mut cur, ctx)?;
    Ok((len, addr, index))
}

/// The total length in bytes of the `count` variable-length strings whose
/// descriptors are `raw` (null descriptors count 0), read from the
/// descriptors alone: what [`for_each_vlen_string`] will produce, to
/// reserve buffers or choose offset widths before reading the heap.
///
/// # Errors
/// As [`for_each_vlen_string`], without heap errors.
pub fn vlen_strings_len(dtype: &Datatype, raw: &[u8], count: u64, ctx: Ctx) -> Result<u64> {
    if !matches!(dtype, Datatype::VarLenString { .. }) {
        return Err(Error::usage(
            "vlen_strings_len on a type that is not a variable-length string",
        ));
    }
    let size = element_size(dtype)?;
    let n = usize::try_from(count).map_err(|_| Error::limit(alloc::format!("{count} elements")))?;
    let data = n
        .checked_mul(size)
        .and_then(|need| raw.get(..need))
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Truncated,
                alloc::format!(
                    "{count} string descriptors of {size} bytes do not fit in {} bytes",
                    raw.len()
                ),
            )
        })?;
    let mut total = 0u64;
    for b in data.chunks_exact(size) {
        let (len, addr, _) = vlen_descriptor(b, ctx)?;
        if !is_null_addr(addr) {
            total += u64::from(len);
        }
    }
    Ok(total)
}

/// The `count` variable-length strings whose descriptors are `raw`, as one
/// byte buffer and offsets (see [`for_each_vlen_string`]).
///
/// # Errors
/// As [`for_each_vlen_string`].
pub fn decode_vlen_strings(
    dtype: &Datatype,
    raw: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
) -> Result<VarBytes> {
    let n = usize::try_from(count).unwrap_or(0);
    let total = vlen_strings_len(dtype, raw, count, ctx)?;
    let mut out = VarBytes {
        data: crate::io::try_vec(
            usize::try_from(total.min(ctx.limits.max_read_bytes)).unwrap_or(0),
            "variable-length strings",
        )?,
        offsets: crate::io::try_vec(n.min(raw.len()) + 1, "string offsets")?,
    };
    out.offsets.push(0);
    let (data, offsets) = (&mut out.data, &mut out.offsets);
    for_each_vlen_string(dtype, raw, count, ctx, heap, &mut |s| {
        data.extend_from_slice(s);
        offsets.push(data.len() as u64);
    })?;
    Ok(out)
}

/// The bytes one decode may still produce (`Limits::max_read_bytes` at the
/// start), charged for every value, string, byte string and member name,
/// and every heap object a reference or sequence is decoded from. One per
/// thread: the threads of one decode each draw their budget from a shared
/// [`BudgetPool`] in slices, so that they do not contend for one counter.
#[derive(Debug)]
pub(crate) struct Budget<'p> {
    limit: u64,
    left: core::cell::Cell<u64>,
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    pool: Option<&'p BudgetPool>,
    #[cfg(not(all(feature = "std", target_has_atomic = "64")))]
    pool: core::marker::PhantomData<&'p ()>,
    /// Member index by code of each enum type with many members met so far
    /// (keyed by the address of its member list): one lookup per element
    /// instead of a scan of the members.
    enums: core::cell::RefCell<BTreeMap<usize, BTreeMap<i128, usize>>>,
}

/// What one decode's threads draw their [`Budget`]s from.
#[cfg(all(feature = "std", target_has_atomic = "64"))]
#[derive(Debug)]
pub(crate) struct BudgetPool {
    limit: u64,
    left: core::sync::atomic::AtomicU64,
}

/// A thread draws at least this much from the pool at a time.
#[cfg(all(feature = "std", target_has_atomic = "64"))]
const BUDGET_SLICE: u64 = 256 * 1024;

#[cfg(all(feature = "std", target_has_atomic = "64"))]
impl BudgetPool {
    /// The read limit of `ctx`.
    pub(crate) fn new(ctx: Ctx) -> Self {
        let limit = ctx.limits.max_read_bytes;
        BudgetPool {
            limit,
            left: limit.into(),
        }
    }

    /// Take `n` bytes, or as many as are left (at least `need`).
    fn draw(&self, need: u64, want: u64) -> Option<u64> {
        use core::sync::atomic::Ordering::Relaxed;
        let mut got = 0;
        self.left
            .fetch_update(Relaxed, Relaxed, |l| {
                got = want.min(l);
                (got >= need).then(|| l - got)
            })
            .ok()
            .map(|_| got)
    }

    /// A budget drawing from this pool (for one thread).
    pub(crate) fn budget(&self) -> Budget<'_> {
        Budget {
            limit: self.limit,
            left: 0.into(),
            pool: Some(self),
            enums: Default::default(),
        }
    }
}

impl Budget<'_> {
    /// The read limit of `ctx`, for one thread.
    pub(crate) fn new(ctx: Ctx) -> Self {
        Budget {
            limit: ctx.limits.max_read_bytes,
            left: ctx.limits.max_read_bytes.into(),
            pool: Default::default(),
            enums: Default::default(),
        }
    }

    /// The index of the first member of `members` whose value is `code`.
    fn enum_member(&self, base: &Datatype, members: &[EnumMember], code: i128) -> Option<usize> {
        let scan = || {
            members
                .iter()
                .position(|m| integer_code(base, &m.value).ok() == Some(code))
        };
        if members.len() <= 8 {
            return scan();
        }
        let mut enums = self.enums.borrow_mut();
        let map = enums.entry(members.as_ptr() as usize).or_insert_with(|| {
            let mut map = BTreeMap::new();
            for (i, m) in members.iter().enumerate() {
                if let Ok(c) = integer_code(base, &m.value) {
                    map.entry(c).or_insert(i);
                }
            }
            map
        });
        // A hit is checked (the key is an address); a miss scans, as
        // codes without a member are rare.
        match map.get(&code).copied() {
            Some(i)
                if members
                    .get(i)
                    .is_some_and(|m| integer_code(base, &m.value).ok() == Some(code)) =>
            {
                Some(i)
            }
            _ => scan(),
        }
    }

    /// Take `n` bytes, or `Limit` when fewer are left.
    pub(crate) fn charge(&self, n: u64) -> Result<()> {
        let left = self.left.get();
        if let Some(l) = left.checked_sub(n) {
            self.left.set(l);
            return Ok(());
        }
        #[cfg(all(feature = "std", target_has_atomic = "64"))]
        if let Some(pool) = self.pool {
            let need = n - left;
            if let Some(got) = pool.draw(need, need.max(BUDGET_SLICE)) {
                self.left.set(left + got - n);
                return Ok(());
            }
        }
        Err(Error::limit(alloc::format!(
            "decoded values take more than the read limit of {} bytes",
            self.limit
        )))
    }

    /// Take the room of `count` values.
    pub(crate) fn charge_values(&self, count: u64) -> Result<()> {
        self.charge(count.saturating_mul(core::mem::size_of::<Value>() as u64))
    }
}

/// The integer code of an integer, bitfield or enum element (an enum member
/// value, for instance): the `precision` bits at `bit_offset`, sign-extended
/// when signed.
///
/// # Errors
/// `Usage` for other types, `Truncated` when `bytes` is short,
/// `Unrepresentable` for unsigned 128-bit values above `i128::MAX`.
pub fn integer_code(dtype: &Datatype, bytes: &[u8]) -> Result<i128> {
    match dtype {
        Datatype::Enum { base, .. } => integer_code(base, bytes),
        Datatype::Integer { .. } | Datatype::Bitfield { .. } => {
            let size = element_size(dtype)?;
            let b = bytes
                .get(..size)
                .ok_or_else(|| Error::new(ErrorKind::Truncated, "integer element is short"))?;
            match int_bits(dtype, b)? {
                IntBits::Signed(v) => Ok(v),
                IntBits::Unsigned(v) => i128::try_from(v)
                    .map_err(|_| Error::unrepresentable("128-bit code above i128::MAX")),
            }
        }
        _ => Err(Error::usage("integer code of a non-integer type")),
    }
}

fn element_size(dtype: &Datatype) -> Result<usize> {
    match usize::try_from(dtype.size()) {
        Ok(0) => Err(Error::usage("datatype of size 0")),
        Ok(s) => Ok(s),
        Err(_) => Err(Error::limit("datatype larger than the address space")),
    }
}

/// Tight loops for the common fixed-size numeric cases; `None` otherwise.
fn decode_fast(dtype: &Datatype, data: &[u8]) -> Option<Vec<Value>> {
    fn map<const N: usize>(data: &[u8], f: impl Fn([u8; N]) -> Value) -> Vec<Value> {
        data.chunks_exact(N)
            .map(|c| f(c.try_into().unwrap_or([0; N])))
            .collect()
    }
    let be = |o: &ByteOrder| *o == ByteOrder::Big;
    match dtype {
        Datatype::Integer {
            size,
            order,
            signed,
            bit_offset: 0,
            precision,
        } if u64::from(*precision) == u64::from(*size) * 8 && *order != ByteOrder::Vax => {
            let big = be(order);
            Some(match (size, signed) {
                (1, true) => map::<1>(data, |a| Value::Int(i64::from(a[0] as i8))),
                (1, false) => map::<1>(data, |a| Value::UInt(u64::from(a[0]))),
                (2, true) => map::<2>(data, |a| {
                    Value::Int(i64::from(if big {
                        i16::from_be_bytes(a)
                    } else {
                        i16::from_le_bytes(a)
                    }))
                }),
                (2, false) => map::<2>(data, |a| {
                    Value::UInt(u64::from(if big {
                        u16::from_be_bytes(a)
                    } else {
                        u16::from_le_bytes(a)
                    }))
                }),
                (4, true) => map::<4>(data, |a| {
                    Value::Int(i64::from(if big {
                        i32::from_be_bytes(a)
                    } else {
                        i32::from_le_bytes(a)
                    }))
                }),
                (4, false) => map::<4>(data, |a| {
                    Value::UInt(u64::from(if big {
                        u32::from_be_bytes(a)
                    } else {
                        u32::from_le_bytes(a)
                    }))
                }),
                (8, true) => map::<8>(data, |a| {
                    Value::Int(if big {
                        i64::from_be_bytes(a)
                    } else {
                        i64::from_le_bytes(a)
                    })
                }),
                (8, false) => map::<8>(data, |a| {
                    Value::UInt(if big {
                        u64::from_be_bytes(a)
                    } else {
                        u64::from_le_bytes(a)
                    })
                }),
                _ => return None,
            })
        }
        Datatype::Float { size, order, .. } if dtype.is_ieee_standard() => {
            let big = be(order);
            Some(match size {
                2 => map::<2>(data, |a| {
                    Value::F16(if big {
                        u16::from_be_bytes(a)
                    } else {
                        u16::from_le_bytes(a)
                    })
                }),
                4 => map::<4>(data, |a| {
                    Value::F32(f32::from_bits(if big {
                        u32::from_be_bytes(a)
                    } else {
                        u32::from_le_bytes(a)
                    }))
                }),
                8 => map::<8>(data, |a| {
                    Value::F64(f64::from_bits(if big {
                        u64::from_be_bytes(a)
                    } else {
                        u64::from_le_bytes(a)
                    }))
                }),
                _ => return None,
            })
        }
        _ => None,
    }
}

/// The unsigned integer of `b` (at most 16 bytes) in byte order `order`.
/// VAX order stores 16-bit little-endian words most significant first.
fn uint_of(b: &[u8], order: ByteOrder) -> Result<u128> {
    if b.len() > 16 {
        return Err(Error::unsupported(alloc::format!(
            "{}-byte numbers",
            b.len()
        )));
    }
    Ok(match order {
        ByteOrder::Little => b.iter().rev().fold(0u128, |a, &x| (a << 8) | u128::from(x)),
        ByteOrder::Big => b.iter().fold(0u128, |a, &x| (a << 8) | u128::from(x)),
        ByteOrder::Vax => {
            if !b.len().is_multiple_of(2) {
                return Err(Error::unsupported("VAX byte order of an odd size"));
            }
            // words in order of decreasing significance, each little-endian
            b.chunks_exact(2).fold(0u128, |a, w| {
                let lo = w.first().copied().unwrap_or(0);
                let hi = w.get(1).copied().unwrap_or(0);
                (a << 16) | (u128::from(hi) << 8) | u128::from(lo)
            })
        }
    })
}

enum IntBits {
    Signed(i128),
    Unsigned(u128),
}

/// The `precision` bits at `bit_offset` of an integer or bitfield element,
/// sign-extended when signed.
fn int_bits(dtype: &Datatype, b: &[u8]) -> Result<IntBits> {
    let (order, signed, off, prec) = match dtype {
        Datatype::Integer {
            order,
            signed,
            bit_offset,
            precision,
            ..
        } => (*order, *signed, *bit_offset, *precision),
        Datatype::Bitfield {
            order,
            bit_offset,
            precision,
            ..
        } => (*order, false, *bit_offset, *precision),
        _ => return Err(Error::usage("not an integer type")),
    };
    let raw = uint_of(b, order)?;
    let off = u32::from(off);
    let prec = u32::from(prec);
    if prec == 0 || off.saturating_add(prec) > 128 {
        return Err(Error::corrupt(
            alloc::format!("integer bit offset {off} and precision {prec}"),
            0,
        ));
    }
    let v = raw.checked_shr(off).unwrap_or(0);
    let mask = if prec >= 128 {
        u128::MAX
    } else {
        (1u128 << prec) - 1
    };
    let v = v & mask;
    if signed {
        let negative = (v >> (prec - 1)) & 1 == 1;
        let ext = if negative { v | !mask } else { v };
        Ok(IntBits::Signed(ext as i128))
    } else {
        Ok(IntBits::Unsigned(v))
    }
}

fn string_value(bytes: Vec<u8>) -> Value {
    match String::from_utf8(bytes) {
        Ok(s) => Value::Str(s),
        Err(e) => Value::RawStr(e.into_bytes()),
    }
}

/// Global heap id (collection address, object index) inside an element.
fn heap_id(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<(Addr, u32)> {
    let addr = cur.read_addr(ctx.sizes)?;
    let index = cur.read_u32()?;
    Ok((addr, index))
}

fn is_null_addr(a: Addr) -> bool {
    a.0 == 0 || a.is_undef()
}

fn decode_one(
    dtype: &Datatype,
    b: &[u8],
    ctx: Ctx,
    heap: &dyn HeapResolver,
    budget: &Budget,
) -> Result<Value> {
    match dtype {
        Datatype::Integer { size, .. } => Ok(match int_bits(dtype, b)? {
            IntBits::Signed(v) if *size <= 8 => Value::Int(v as i64),
            IntBits::Signed(v) => Value::BigInt(v),
            IntBits::Unsigned(v) if *size <= 8 => Value::UInt(v as u64),
            IntBits::Unsigned(v) => Value::BigUInt(v),
        }),
        Datatype::Bitfield { size, .. } => Ok(match int_bits(dtype, b)? {
            IntBits::Unsigned(v) if *size <= 8 => Value::UInt(v as u64),
            IntBits::Unsigned(v) => Value::BigUInt(v),
            IntBits::Signed(v) => Value::BigInt(v),
        }),
        Datatype::Float { size, order, .. } => {
            let bits = uint_of(b, *order)?;
            if dtype.is_ieee_standard() {
                Ok(match size {
                    2 => Value::F16(bits as u16),
                    4 => Value::F32(f32::from_bits(bits as u32)),
                    8 => Value::F64(f64::from_bits(bits as u64)),
                    _ => Value::F128(bits),
                })
            } else {
                Ok(Value::NonStandardFloat(bits))
            }
        }
        Datatype::Time { size, order, .. } => {
            if *size > 8 {
                return Err(Error::unsupported(alloc::format!(
                    "time values of {size} bytes"
                )));
            }
            Ok(Value::Time(uint_of(b, *order)? as u64 as i64))
        }
        Datatype::String { pad, .. } => {
            let strip = if *pad == StringPad::SpacePad { b' ' } else { 0 };
            let end = b.iter().rposition(|&c| c != strip).map_or(0, |i| i + 1);
            budget.charge(end as u64)?;
            Ok(string_value(b.get(..end).unwrap_or(&[]).to_vec()))
        }
        Datatype::Opaque { .. } => {
            budget.charge(b.len() as u64)?;
            Ok(Value::Opaque(b.to_vec()))
        }
        Datatype::Compound { members, .. } => {
            let mut out = Vec::with_capacity(members.len());
            for m in members {
                let off = usize::try_from(m.offset).unwrap_or(usize::MAX);
                let sz = element_size(&m.dtype)?;
                let part = off
                    .checked_add(sz)
                    .and_then(|end| b.get(off..end))
                    .ok_or_else(|| {
                        Error::corrupt(
                            alloc::format!("compound member {:?} outside the element", m.name),
                            0,
                        )
                    })?;
                budget.charge((core::mem::size_of::<(String, Value)>() + m.name.len()) as u64)?;
                out.push((
                    m.name.clone(),
                    decode_one(&m.dtype, part, ctx, heap, budget)?,
                ));
            }
            Ok(Value::Compound(out))
        }
        Datatype::Enum { base, members } => {
            let code = integer_code(base, b)?;
            let mut name = None;
            if let Some(m) = budget
                .enum_member(base, members, code)
                .and_then(|i| members.get(i))
            {
                budget.charge(m.name.len() as u64)?;
                name = Some(m.name.clone());
            }
            Ok(Value::Enum { code, name })
        }
        Datatype::Array { dims, base } => {
            let n = dims
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .unwrap_or(u64::MAX);
            let flat = decode_elements_in(base, b, n, ctx, heap, budget)?;
            Ok(nest(flat, dims))
        }
        Datatype::VarLenSequence { base, .. } => {
            let mut cur = Cursor::new(b, 0);
            let len = cur.read_u32()?;
            let (addr, index) = heap_id(&mut cur, ctx)?;
            if len == 0 || is_null_addr(addr) {
                return Ok(Value::Vlen(Vec::new()));
            }
            let obj = heap.global_heap_object(addr, index)?;
            budget.charge(obj.len() as u64)?;
            // A short object is the heap's fault, not the element bytes'.
            let short = |e: Error| {
                if e.kind() != ErrorKind::Truncated {
                    return e;
                }
                let msg = alloc::format!(
                    "variable-length sequence of {len} elements in a {}-byte heap object",
                    obj.len()
                );
                Error::corrupt(msg, addr.0)
            };
            let v =
                decode_elements_in(base, &obj, u64::from(len), ctx, heap, budget).map_err(short)?;
            Ok(Value::Vlen(v))
        }
        Datatype::VarLenString { .. } => {
            let mut cur = Cursor::new(b, 0);
            let len = cur.read_u32()?;
            let (addr, index) = heap_id(&mut cur, ctx)?;
            if len == 0 || is_null_addr(addr) {
                return Ok(Value::Str(String::new()));
            }
            budget.charge(u64::from(len))?;
            let want = usize::try_from(len).unwrap_or(usize::MAX);
            let mut got: Option<core::result::Result<Vec<u8>, usize>> = None;
            heap.with_global_heap_prefix(addr, index, want, &mut |obj| {
                got = Some(if obj.len() == want {
                    Ok(obj.to_vec())
                } else {
                    Err(obj.len())
                });
            })?;
            match got {
                Some(Ok(bytes)) => Ok(string_value(bytes)),
                other => Err(Error::corrupt(
                    alloc::format!(
                        "variable-length string of {len} bytes in a {}-byte heap object",
                        match other {
                            Some(Err(n)) => n,
                            _ => 0,
                        }
                    ),
                    addr.0,
                )),
            }
        }
        Datatype::Reference { kind, .. } => {
            decode_reference(*kind, b, ctx, heap, budget).map(Value::Ref)
        }
        Datatype::Complex { base, size } => {
            let half = usize::try_from(size / 2).unwrap_or(usize::MAX);
            let (re, im) = (b.get(..half), b.get(half..));
            match (re, im) {
                (Some(re), Some(im)) if re.len() == im.len() => {
                    budget.charge_values(2)?;
                    Ok(Value::Complex(
                        Box::new(decode_one(base, re, ctx, heap, budget)?),
                        Box::new(decode_one(base, im, ctx, heap, budget)?),
                    ))
                }
                _ => Err(Error::corrupt("complex number of odd size", 0)),
            }
        }
    }
}

/// Nest a flat row-major list following `dims` (a bare element for no dims).
fn nest(flat: Vec<Value>, dims: &[u64]) -> Value {
    match dims {
        [] => flat.into_iter().next().unwrap_or(Value::Array(Vec::new())),
        [_] => Value::Array(flat),
        [d0, rest @ ..] => {
            let step = rest.iter().fold(1u64, |a, &d| a.saturating_mul(d));
            let step = usize::try_from(step).unwrap_or(usize::MAX);
            let mut it = flat.into_iter();
            let mut out = Vec::new();
            for _ in 0..*d0 {
                let chunk: Vec<Value> = it.by_ref().take(step).collect();
                if chunk.is_empty() {
                    break;
                }
                out.push(nest(chunk, rest));
            }
            Value::Array(out)
        }
    }
}

/// A region from a decoded selection; `obj` is the dataset the selection applies to.
fn region_of(sel: &Selection, obj: Addr, heap: &dyn HeapResolver) -> Result<Region> {
    let dims;
    let extent = if *sel == Selection::All {
        dims = heap.dataset_dims(obj)?;
        Some(dims.as_slice())
    } else {
        None
    };
    Ok(Region {
        npoints: sel.npoints(extent)?,
        bounds: sel.bounds(extent)?,
    })
}

/// An object address from a reference token (the address, little-endian, in
/// the first "size of offsets" bytes).
fn token_addr(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Addr> {
    let n = usize::from(cur.read_u8()?);
    let token = cur.sub(n)?;
    if n < usize::from(ctx.sizes.offsets) {
        return Err(token.corrupt(alloc::format!("object token of {n} bytes")));
    }
    let mut t = token;
    t.read_addr(ctx.sizes)
}

fn decode_reference(
    kind: RefKind,
    b: &[u8],
    ctx: Ctx,
    heap: &dyn HeapResolver,
    budget: &Budget,
) -> Result<Reference> {
    let mut cur = Cursor::new(b, 0);
    match kind {
        RefKind::Object1 => {
            let a = cur.read_addr(ctx.sizes)?;
            Ok(if a.0 == 0 {
                Reference::Null
            } else {
                Reference::Object(a)
            })
        }
        RefKind::Region1 => {
            let (addr, index) = heap_id(&mut cur, ctx)?;
            if addr.0 == 0 {
                return Ok(Reference::Null);
            }
            if addr.is_undef() {
                return Err(Error::corrupt(
                    "region reference with an undefined heap address",
                    0,
                ));
            }
            let blob = heap.global_heap_object(addr, index)?;
            budget.charge(blob.len() as u64)?;
            let mut c = Cursor::new(&blob, 0);
            let obj = c.read_addr(ctx.sizes)?;
            let sel = Selection::decode(&mut c, ctx)?;
            Ok(Reference::Region {
                obj,
                region: region_of(&sel, obj, heap)?,
            })
        }
        RefKind::Std => {
            let rtype = cur.read_u8()?;
            let flags = cur.read_u8()?;
            if rtype == 0 {
                if b.iter().all(|&x| x == 0) {
                    return Ok(Reference::Null);
                }
                return Err(Error::corrupt("reference of type 0 that is not null", 0));
            }
            let external = flags & 1 != 0;
            if rtype == 2 && !external {
                // Stored directly in the element: token size, token.
                return Ok(Reference::Object(token_addr(&mut cur, ctx)?));
            }
            let len = cur.read_u32()?;
            let (addr, index) = heap_id(&mut cur, ctx)?;
            if is_null_addr(addr) {
                return Err(Error::corrupt("reference with a null heap address", 0));
            }
            let blob = heap.global_heap_object(addr, index)?;
            budget.charge(blob.len() as u64)?;
            let body = usize::try_from(len)
                .ok()
                .and_then(|l| blob.get(..l))
                .ok_or_else(|| {
                    Error::corrupt(
                        alloc::format!(
                            "encoded reference of {len} bytes in a {}-byte heap object",
                            blob.len()
                        ),
                        addr.0,
                    )
                })?;
            let mut c = Cursor::new(body, 0);
            let obj = token_addr(&mut c, ctx)?;
            if external {
                let n = usize::from(c.read_u16()?);
                let name = c.read_bytes(n)?;
                let file = String::from_utf8(name.to_vec()).map_err(|_| {
                    Error::unrepresentable("external reference file name is not UTF-8")
                })?;
                return Ok(Reference::External { file });
            }
            match rtype {
                3 => {
                    let sel_len = c.read_u32()?;
                    let _rank = c.read_u32()?;
                    let mut s = c.sub(usize::try_from(sel_len).unwrap_or(usize::MAX))?;
                    let sel = Selection::decode(&mut s, ctx)?;
                    Ok(Reference::Region {
                        obj,
                        region: region_of(&sel, obj, heap)?,
                    })
                }
                4 => {
                    let n = usize::from(c.read_u16()?);
                    let name = c.read_bytes(n)?;
                    let name = String::from_utf8(name.to_vec()).map_err(|_| {
                        Error::unrepresentable("referenced attribute name is not UTF-8")
                    })?;
                    Ok(Reference::Attribute { obj, name })
                }
                t => Err(Error::corrupt(alloc::format!("reference type {t}"), 0)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    //! Element bytes come from numpy (`np.array([...], dtype=...).tobytes()`),
    //! expected values from numpy / h5py. Reference elements and their global
    //! heap objects were read out of files written by h5py 3.16 / libhdf5 2.0
    //! (old-style region references with `libver` "earliest" and "latest";
    //! `H5T_STD_REF` through `H5Rcreate_*` + `H5Dwrite` via ctypes); the
    //! expected regions are `H5Sget_select_npoints`/`H5Sget_select_bounds`
    //! of the dereferenced selections, as printed by h5py and h5canon.py.
    use super::*;
    use crate::data::NoHeap;
    use crate::format::datatype::{CharSet, CompoundMember, EnumMember, FloatLayout};
    use alloc::collections::BTreeMap;
    use alloc::vec;

    fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    #[derive(Default)]
    struct Heap {
        objects: BTreeMap<(u64, u32), Vec<u8>>,
        dims: BTreeMap<u64, Vec<u64>>,
    }
    impl HeapResolver for Heap {
        fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>> {
            self.objects
                .get(&(collection.0, index))
                .cloned()
                .ok_or_else(|| Error::corrupt("no such heap object", collection.0))
        }
        fn dataset_dims(&self, obj: Addr) -> Result<Vec<u64>> {
            self.dims
                .get(&obj.0)
                .cloned()
                .ok_or_else(|| Error::not_found("no dataset"))
        }
    }

    fn int(size: u32, order: ByteOrder, signed: bool) -> Datatype {
        Datatype::Integer {
            size,
            order,
            signed,
            bit_offset: 0,
            precision: (size * 8) as u16,
        }
    }
    fn ieee(size: u32, order: ByteOrder) -> Datatype {
        let (e, m, bias) = match size {
            2 => (5, 10, 15),
            4 => (8, 23, 127),
            _ => (11, 52, 1023),
        };
        let bits = (size * 8) as u8;
        Datatype::Float {
            size,
            order,
            layout: FloatLayout {
                sign_pos: bits - 1,
                bit_offset: 0,
                precision: bits as u16,
                exp_pos: m,
                exp_size: e,
                mant_pos: 0,
                mant_size: m,
                exp_bias: bias,
                norm: 2,
            },
        }
    }
    fn all(t: &Datatype, b: &[u8], n: u64) -> Vec<Value> {
        decode_elements(t, b, n, Ctx::default(), &NoHeap).unwrap()
    }

    #[test]
    fn integers() {
        // np.array([-2, 7, -2147483648], dtype='>i4')
        let b = hex("fffffffe0000000780000000");
        assert_eq!(
            all(&int(4, ByteOrder::Big, true), &b, 3),
            [Value::Int(-2), Value::Int(7), Value::Int(-2147483648)]
        );
        assert_eq!(
            all(&int(4, ByteOrder::Big, false), &b, 1),
            [Value::UInt(0xffff_fffe)]
        );
        // the generic path agrees with the fast path
        assert_eq!(
            decode_element(&int(4, ByteOrder::Big, true), &b, Ctx::default(), &NoHeap).unwrap(),
            Value::Int(-2)
        );
        // 12 bits at offset 4 of a <i4 holding 0x0abcffdf: (0xffd sign-extended) = -3
        let t = Datatype::Integer {
            size: 4,
            order: ByteOrder::Little,
            signed: true,
            bit_offset: 4,
            precision: 12,
        };
        assert_eq!(all(&t, &hex("dfffbc0a"), 1), [Value::Int(-3)]);
        let t = Datatype::Integer {
            size: 4,
            order: ByteOrder::Little,
            signed: false,
            bit_offset: 4,
            precision: 12,
        };
        assert_eq!(all(&t, &hex("dfffbc0a"), 1), [Value::UInt(0xffd)]);
        // 3-byte and 16-byte integers
        assert_eq!(
            all(&int(3, ByteOrder::Little, true), &hex("feffff"), 1),
            [Value::Int(-2)]
        );
        assert_eq!(
            all(&int(16, ByteOrder::Big, true), &[0xff; 16], 1),
            [Value::BigInt(-1)]
        );
        assert_eq!(
            all(&int(16, ByteOrder::Little, false), &[0xff; 16], 1),
            [Value::BigUInt(u128::MAX)]
        );
        // bitfield
        let t = Datatype::Bitfield {
            size: 2,
            order: ByteOrder::Big,
            bit_offset: 0,
            precision: 16,
        };
        assert_eq!(all(&t, &hex("1234"), 1), [Value::UInt(0x1234)]);
    }

    #[test]
    fn floats() {
        // np.array([1.5, -0.0, np.inf], dtype='>f8')
        let v = all(
            &ieee(8, ByteOrder::Big),
            &hex("3ff800000000000080000000000000007ff0000000000000"),
            3,
        );
        assert_eq!(v[0], Value::F64(1.5));
        assert!(matches!(v[1], Value::F64(x) if x.to_bits() == 0x8000_0000_0000_0000));
        assert_eq!(v[2], Value::F64(f64::INFINITY));
        // np.array([1.5, -2.0], dtype='<f2').view('<u2') == [15872, 49152]
        assert_eq!(
            all(&ieee(2, ByteOrder::Little), &hex("003e00c0"), 2),
            [Value::F16(15872), Value::F16(49152)]
        );
        // NaN payload kept
        let v = all(&ieee(4, ByteOrder::Little), &hex("0100c07f"), 1);
        assert!(matches!(v[0], Value::F32(x) if x.to_bits() == 0x7fc0_0001));
        // np.longdouble(1.0) (x87, 16 bytes, 6 bytes of padding): nonstandard,
        // the little-endian integer of all 16 bytes
        let ld = Datatype::Float {
            size: 16,
            order: ByteOrder::Little,
            layout: FloatLayout {
                sign_pos: 79,
                bit_offset: 0,
                precision: 80,
                exp_pos: 64,
                exp_size: 15,
                mant_pos: 0,
                mant_size: 64,
                exp_bias: 16383,
                norm: 0,
            },
        };
        assert_eq!(
            all(&ld, &hex("0000000000000080ff3f17a9067f0000"), 1),
            [Value::NonStandardFloat(
                0x0000_7f06_a917_3fff_8000_0000_0000_0000
            )]
        );
        // VAX order: 16-bit little-endian words, most significant word first
        let Datatype::Float { layout, .. } = ieee(4, ByteOrder::Little) else {
            unreachable!()
        };
        let vax = Datatype::Float {
            size: 4,
            order: ByteOrder::Vax,
            layout,
        };
        assert_eq!(
            all(&vax, &hex("3412 7856".replace(' ', "").as_str()), 1),
            [Value::NonStandardFloat(0x1234_5678)]
        );
        // complex: np.array([1+2j], dtype='<c8')
        let c = Datatype::Complex {
            size: 8,
            base: Box::new(ieee(4, ByteOrder::Little)),
        };
        assert_eq!(
            all(&c, &hex("0000803f00000040"), 1),
            [Value::Complex(
                Box::new(Value::F32(1.0)),
                Box::new(Value::F32(2.0))
            )]
        );
    }

    #[test]
    fn strings_time_opaque() {
        let s = |pad| Datatype::String {
            size: 5,
            pad,
            cset: CharSet::Ascii,
        };
        // nullterm "a\0b\0\0": only trailing NULs go, the embedded one stays
        assert_eq!(
            all(&s(StringPad::NullTerm), b"a\0b\0\0", 1),
            [Value::Str("a\0b".into())]
        );
        assert_eq!(
            all(&s(StringPad::NullPad), b"abc\0\0", 1),
            [Value::Str("abc".into())]
        );
        // spacepad strips spaces only
        assert_eq!(
            all(&s(StringPad::SpacePad), b"ab \0 ", 1),
            [Value::Str("ab \0".into())]
        );
        assert_eq!(
            all(&s(StringPad::NullPad), b"\xff\xfe\0\0\0", 1),
            [Value::RawStr(vec![0xff, 0xfe])]
        );
        let t = Datatype::Time {
            size: 8,
            order: ByteOrder::Big,
            precision: 64,
        };
        assert_eq!(
            all(&t, &hex("00000000499602d2"), 1),
            [Value::Time(1_234_567_890)]
        );
        let o = Datatype::Opaque {
            size: 3,
            tag: "t".into(),
        };
        assert_eq!(
            all(&o, &[1, 2, 3, 4, 5, 6], 2),
            [Value::Opaque(vec![1, 2, 3]), Value::Opaque(vec![4, 5, 6])]
        );
    }

    #[test]
    fn compound_enum_array() {
        // np.dtype([('a','<i4'),('bb','>f8'),('c','S3')]) element (7, 2.5, b'xy')
        let t = Datatype::Compound {
            size: 15,
            members: vec![
                CompoundMember {
                    name: "a".into(),
                    offset: 0,
                    dtype: int(4, ByteOrder::Little, true),
                },
                CompoundMember {
                    name: "bb".into(),
                    offset: 4,
                    dtype: ieee(8, ByteOrder::Big),
                },
                CompoundMember {
                    name: "c".into(),
                    offset: 12,
                    dtype: Datatype::String {
                        size: 3,
                        pad: StringPad::NullPad,
                        cset: CharSet::Ascii,
                    },
                },
            ],
        };
        let b = hex("07000000400400000000000078790000");
        assert_eq!(
            all(&t, &b[..15], 1),
            [Value::Compound(vec![
                ("a".into(), Value::Int(7)),
                ("bb".into(), Value::F64(2.5)),
                ("c".into(), Value::Str("xy".into())),
            ])]
        );
        // enum_dtype({'RED':0,'GREEN':1,'BLUE':42}, basetype='i1')
        let e = Datatype::Enum {
            base: Box::new(int(1, ByteOrder::Little, true)),
            members: vec![
                EnumMember {
                    name: "BLUE".into(),
                    value: vec![42],
                },
                EnumMember {
                    name: "GREEN".into(),
                    value: vec![1],
                },
                EnumMember {
                    name: "RED".into(),
                    value: vec![0],
                },
            ],
        };
        assert_eq!(
            all(&e, &[1, 42, 9], 3),
            [
                Value::Enum {
                    code: 1,
                    name: Some("GREEN".into())
                },
                Value::Enum {
                    code: 42,
                    name: Some("BLUE".into())
                },
                Value::Enum {
                    code: 9,
                    name: None
                },
            ]
        );
        assert_eq!(integer_code(&e, &[42]).unwrap(), 42);
        // ('<u1', (2, 3)) holding np.arange(6)
        let a = Datatype::Array {
            dims: vec![2, 3],
            base: Box::new(int(1, ByteOrder::Little, false)),
        };
        let u = |v: &[u64]| Value::Array(v.iter().map(|&x| Value::UInt(x)).collect());
        assert_eq!(
            all(&a, &[0, 1, 2, 3, 4, 5], 1),
            [Value::Array(vec![u(&[0, 1, 2]), u(&[3, 4, 5])])]
        );
    }

    #[test]
    fn variable_length() {
        let mut heap = Heap::default();
        heap.objects.insert((0x800, 1), hex("0100feff0300"));
        heap.objects
            .insert((0x800, 2), "héllo\0".as_bytes().to_vec());
        let seq = Datatype::VarLenSequence {
            size: 16,
            base: Box::new(int(2, ByteOrder::Little, true)),
        };
        // [len 3, collection 0x800, index 1], then a null sequence
        let b = hex("0300000000080000000000000100000000000000000000000000000000000000");
        let v = decode_elements(&seq, &b[..32], 2, Ctx::default(), &heap).unwrap();
        assert_eq!(
            v,
            [
                Value::Vlen(vec![Value::Int(1), Value::Int(-2), Value::Int(3)]),
                Value::Vlen(vec![])
            ]
        );
        // a length larger than the heap object is corrupt
        let b = hex("0400000000080000000000000100000000");
        let e = decode_element(&seq, &b, Ctx::default(), &heap).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
        // vlen string: the bytes as stored (6 = "héllo" in UTF-8), no stripping
        let s = Datatype::VarLenString {
            size: 16,
            pad: StringPad::NullTerm,
            cset: CharSet::Utf8,
        };
        let b = hex("06000000000800000000000002000000");
        assert_eq!(
            decode_element(&s, &b, Ctx::default(), &heap).unwrap(),
            Value::Str("héllo".into())
        );
        let b = hex("07000000000800000000000002000000");
        assert_eq!(
            decode_element(&s, &b, Ctx::default(), &heap).unwrap(),
            Value::Str("héllo\0".into())
        );
        // without a heap: fails, but a null string does not need one
        assert!(decode_element(
            &s,
            &hex("06000000000800000000000002000000"),
            Ctx::default(),
            &NoHeap
        )
        .is_err());
        assert_eq!(
            decode_element(&s, &[0; 16], Ctx::default(), &NoHeap).unwrap(),
            Value::Str(String::new())
        );
    }

    fn reg(npoints: u64, lo: &[u64], hi: &[u64]) -> Region {
        Region {
            npoints,
            bounds: Some((lo.to_vec(), hi.to_vec())),
        }
    }

    #[test]
    fn old_references() {
        let obj = Datatype::Reference {
            size: 8,
            kind: RefKind::Object1,
        };
        assert_eq!(
            all(&obj, &hex("b3000000000000000000000000000000"), 2),
            [
                Value::Ref(Reference::Object(Addr(0xb3))),
                Value::Ref(Reference::Null)
            ]
        );
        let t = Datatype::Reference {
            size: 12,
            kind: RefKind::Region1,
        };
        // libver="latest": selection versions 2/3 with 2-byte encoding
        let mut heap = Heap::default();
        let blobs = [
            "b300000000000000020000000300000001020200000001000100010002000000020002000100", // d.regionref[1:3, 0:4:2]
            "b30000000000000003000000010000000000000000000000",                             // all
            "b300000000000000010000000200000002020000000300000004000300010009000900", // points (0,4),(3,1),(9,9)
            "b30000000000000000000000010000000000000000000000",                       // none
            "b3000000000000000200000003000000000202000000020000000000010001000500050005000700", // 2 blocks
        ];
        for (i, b) in blobs.iter().enumerate() {
            heap.objects.insert((0xb20, i as u32 + 1), hex(b));
        }
        heap.dims.insert(0xb3, vec![10, 10]);
        let mut elems = Vec::new();
        for i in 1..=5u8 {
            elems.extend(hex("200b000000000000"));
            elems.extend([i, 0, 0, 0]);
        }
        elems.extend([0; 12]);
        let v = decode_elements(&t, &elems, 6, Ctx::default(), &heap).unwrap();
        let r = |region| {
            Value::Ref(Reference::Region {
                obj: Addr(0xb3),
                region,
            })
        };
        assert_eq!(
            v,
            [
                r(reg(4, &[1, 0], &[2, 2])),
                r(reg(100, &[0, 0], &[9, 9])),
                r(reg(3, &[0, 1], &[9, 9])),
                r(Region {
                    npoints: 0,
                    bounds: None
                }),
                r(reg(7, &[0, 0], &[5, 7])),
                Value::Ref(Reference::Null),
            ]
        );
        // libver="earliest": version 1 selections (hyperslabs as block lists)
        let mut heap = Heap::default();
        heap.objects.insert((0xb20, 1), hex("20030000000000000200000001000000000000002800000002000000020000000100000000000000020000000000000001000000020000000200000002000000"));
        heap.objects.insert((0xb20, 3), hex("2003000000000000010000000100000000000000200000000200000003000000000000000400000003000000010000000900000009000000"));
        heap.objects.insert((0xb20, 5), hex("20030000000000000200000001000000000000002800000002000000020000000000000000000000010000000100000005000000050000000500000007000000"));
        let one = |i: u8| {
            let mut e = hex("200b000000000000");
            e.extend([i, 0, 0, 0]);
            decode_element(&t, &e, Ctx::default(), &heap).unwrap()
        };
        let r = |region| {
            Value::Ref(Reference::Region {
                obj: Addr(0x320),
                region,
            })
        };
        assert_eq!(one(1), r(reg(4, &[1, 0], &[2, 2])));
        assert_eq!(one(3), r(reg(3, &[0, 1], &[9, 9])));
        assert_eq!(one(5), r(reg(7, &[0, 0], &[5, 7])));
    }

    #[test]
    fn std_references() {
        let t = Datatype::Reference {
            size: 18,
            kind: RefKind::Std,
        };
        let mut heap = Heap::default();
        heap.objects.insert((0x8fa, 1), hex("083601000000000000170000000200000001000000020000000202000000020000000400030001000000000000000000000000000000000000"));
        heap.objects
            .insert((0x8fa, 2), hex("08b30000000000000004006e6f7465"));
        heap.objects.insert(
            (0x8fa, 3),
            hex("083601000000000000100000000200000003000000010000000000000000000000"),
        );
        heap.dims.insert(0x136, vec![4, 5]);
        let elems = hex(concat!(
            "020008b30000000000000000000000000000", // object /g, stored inline
            "030039000000fa0800000000000001000000", // region: points (0,4),(3,1) of /d
            "04000f000000fa0800000000000002000000", // attribute "note" of /g
            "000000000000000000000000000000000000", // null
            "030021000000fa0800000000000003000000", // region: all of /d (4x5)
        ));
        let v = decode_elements(&t, &elems, 5, Ctx::default(), &heap).unwrap();
        assert_eq!(
            v,
            [
                Value::Ref(Reference::Object(Addr(0xb3))),
                Value::Ref(Reference::Region {
                    obj: Addr(0x136),
                    region: reg(2, &[0, 1], &[3, 4])
                }),
                Value::Ref(Reference::Attribute {
                    obj: Addr(0xb3),
                    name: "note".into()
                }),
                Value::Ref(Reference::Null),
                Value::Ref(Reference::Region {
                    obj: Addr(0x136),
                    region: reg(20, &[0, 0], &[3, 4])
                }),
            ]
        );
        // an external reference (flag 1): token, then the file name (hand-built per H5R__encode)
        heap.objects
            .insert((0x8fa, 4), hex("08b300000000000000050066696c6568"));
        let e = hex("020110000000fa0800000000000004000000");
        assert_eq!(
            decode_element(&t, &e, Ctx::default(), &heap).unwrap(),
            Value::Ref(Reference::External {
                file: "fileh".into()
            })
        );
    }

    #[test]
    fn size_checks() {
        let t = int(4, ByteOrder::Little, true);
        let e = decode_elements(&t, &[0; 7], 2, Ctx::default(), &NoHeap).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        let e = decode_elements(&t, &[0; 8], u64::MAX, Ctx::default(), &NoHeap).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::Truncated | ErrorKind::Limit));
        assert_eq!(
            decode_element(&t, &[1, 0], Ctx::default(), &NoHeap)
                .unwrap_err()
                .kind(),
            ErrorKind::Truncated
        );
        // a zero-sized type (only constructible by hand) is refused, not looped on
        let z = Datatype::String {
            size: 0,
            pad: StringPad::NullPad,
            cset: CharSet::Ascii,
        };
        assert!(decode_elements(&z, &[], 1 << 40, Ctx::default(), &NoHeap).is_err());
        // a compound member outside the element is an error, not a panic
        let c = Datatype::Compound {
            size: 2,
            members: vec![CompoundMember {
                name: "x".into(),
                offset: 1,
                dtype: int(4, ByteOrder::Little, true),
            }],
        };
        assert!(decode_element(&c, &[0; 2], Ctx::default(), &NoHeap).is_err());
    }

    /// Elements sharing one heap object, and compound members sharing
    /// bytes, make values far larger than the element bytes: what they take
    /// is charged against the read limit, across the whole decode.
    #[test]
    fn shared_heap_objects_and_overlapping_members_are_bounded() {
        let mut ctx = Ctx::default();
        let mut heap = Heap::default();
        heap.objects.insert((0x800, 1), vec![7; 4000]);
        let seq = Datatype::VarLenSequence {
            size: 16,
            base: Box::new(int(1, ByteOrder::Little, false)),
        };
        // 50 elements, each the same 4000-element sequence: 200 000 values.
        let one = hex("a00f0000000800000000000001000000");
        let elems: Vec<u8> = one.iter().copied().cycle().take(16 * 50).collect();
        let per_value = core::mem::size_of::<Value>() as u64;
        // Each element alone fits the limit; all of them do not.
        ctx.limits.max_read_bytes = 60_000 * per_value;
        let e = decode_elements(&seq, &elems, 50, ctx, &heap).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(decode_elements(&seq, &elems, 10, ctx, &heap).is_ok());
        ctx.limits.max_read_bytes = 250_000 * per_value;
        let v = decode_elements(&seq, &elems, 50, ctx, &heap).unwrap();
        assert_eq!(v.len(), 50);
        assert!(matches!(&v[49], Value::Vlen(x) if x.len() == 4000));
        // Vlen strings: the string bytes are charged.
        let s = Datatype::VarLenString {
            size: 16,
            pad: StringPad::NullTerm,
            cset: CharSet::Ascii,
        };
        ctx.limits.max_read_bytes = 20 * 4000;
        let e = decode_elements(&s, &elems, 50, ctx, &heap).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        // 300 one-byte members all at offset 0 of a one-byte compound.
        let members: Vec<CompoundMember> = (0..300)
            .map(|i| CompoundMember {
                name: alloc::format!("m{i}"),
                offset: 0,
                dtype: int(1, ByteOrder::Little, false),
            })
            .collect();
        let c = Datatype::Compound { size: 1, members };
        ctx.limits.max_read_bytes = 1 << 20;
        let e = decode_elements(&c, &[0; 100], 100, ctx, &NoHeap).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
        assert!(decode_elements(&c, &[0; 100], 10, ctx, &NoHeap).is_ok());
    }

    /// Budgets drawn from one pool never take more than the limit together,
    /// and leave at most one slice each unused when they run out.
    #[cfg(all(feature = "std", target_has_atomic = "64"))]
    #[test]
    fn pool_budgets_share_the_limit() {
        let mut ctx = Ctx::default();
        ctx.limits.max_read_bytes = 5 << 20;
        let pool = BudgetPool::new(ctx);
        let (a, b) = (pool.budget(), pool.budget());
        let (mut taken, mut step) = (0u64, 1u64);
        loop {
            step = (step * 7919) % 9973 + 1;
            let who = if step % 3 == 0 { &a } else { &b };
            if who.charge(step).is_err() {
                break;
            }
            taken += step;
        }
        assert!(taken <= 5 << 20, "{taken}");
        assert!(taken + 2 * BUDGET_SLICE + 9973 >= 5 << 20, "{taken}");
        // A charge larger than a slice draws exactly what it needs.
        let pool = BudgetPool::new(ctx);
        let c = pool.budget();
        assert!(c.charge(5 << 20).is_ok());
        assert!(c.charge(1).is_err());
        assert!(pool.budget().charge(1).is_err());
    }

    /// Fuzz regression (datatype target): an integer of ~4 GiB made the
    /// fast-path check `precision == size * 8` overflow.
    #[test]
    fn huge_integer_size_does_not_overflow() {
        let t = Datatype::Integer {
            size: 0xffff_ff1e,
            order: ByteOrder::Little,
            signed: false,
            bit_offset: 0,
            precision: 32,
        };
        let ctx = Ctx::default();
        let r = decode_elements(&t, &[], 0, ctx, &crate::data::NoHeap);
        assert!(r.map(|v| v.is_empty()).unwrap_or(true));
        let r = decode_elements(&t, &[0; 16], 1, ctx, &crate::data::NoHeap);
        assert!(r.is_err());
    }
}
