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
use crate::format::datatype::{ByteOrder, Datatype, RefKind, StringPad};
use crate::format::selection::Selection;
use crate::{Addr, Ctx};
use alloc::boxed::Box;
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
    let size = element_size(dtype)?;
    let b = bytes.get(..size).ok_or_else(|| {
        Error::new(
            ErrorKind::Truncated,
            alloc::format!("element of {size} bytes from {} bytes", bytes.len()),
        )
    })?;
    decode_one(dtype, b, ctx, heap)
}

/// Decode `count` consecutive elements of `dtype` from `bytes`.
///
/// # Errors
/// As [`decode_element`]; `Truncated` when `bytes` holds fewer than `count` elements.
pub fn decode_elements(
    dtype: &Datatype,
    bytes: &[u8],
    count: u64,
    ctx: Ctx,
    heap: &dyn HeapResolver,
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
    let value_bytes = (n as u64).saturating_mul(core::mem::size_of::<Value>() as u64);
    if value_bytes > ctx.limits.max_read_bytes {
        return Err(Error::limit(alloc::format!(
            "decoding {count} elements needs {value_bytes} bytes (limit {})",
            ctx.limits.max_read_bytes
        )));
    }
    let data = bytes.get(..need).unwrap_or(&[]);
    if let Some(v) = decode_fast(dtype, data) {
        return Ok(v);
    }
    let mut out = Vec::with_capacity(n);
    for chunk in data.chunks_exact(size) {
        out.push(decode_one(dtype, chunk, ctx, heap)?);
    }
    Ok(out)
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
        } if u32::from(*precision) == size * 8 && *order != ByteOrder::Vax => {
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
            if b.len() % 2 != 0 {
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

fn decode_one(dtype: &Datatype, b: &[u8], ctx: Ctx, heap: &dyn HeapResolver) -> Result<Value> {
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
            Ok(string_value(b.get(..end).unwrap_or(&[]).to_vec()))
        }
        Datatype::Opaque { .. } => Ok(Value::Opaque(b.to_vec())),
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
                out.push((m.name.clone(), decode_one(&m.dtype, part, ctx, heap)?));
            }
            Ok(Value::Compound(out))
        }
        Datatype::Enum { base, members } => {
            let code = integer_code(base, b)?;
            let mut name = None;
            for m in members {
                if integer_code(base, &m.value).ok() == Some(code) {
                    name = Some(m.name.clone());
                    break;
                }
            }
            Ok(Value::Enum { code, name })
        }
        Datatype::Array { dims, base } => {
            let n = dims
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .unwrap_or(u64::MAX);
            let flat = decode_elements(base, b, n, ctx, heap)?;
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
            let v = decode_elements(base, &obj, u64::from(len), ctx, heap).map_err(|e| {
                if e.kind() == ErrorKind::Truncated {
                    Error::corrupt(
                        alloc::format!(
                            "variable-length sequence of {len} elements in a {}-byte heap object",
                            obj.len()
                        ),
                        addr.0,
                    )
                } else {
                    e
                }
            })?;
            Ok(Value::Vlen(v))
        }
        Datatype::VarLenString { .. } => {
            let mut cur = Cursor::new(b, 0);
            let len = cur.read_u32()?;
            let (addr, index) = heap_id(&mut cur, ctx)?;
            if len == 0 || is_null_addr(addr) {
                return Ok(Value::Str(String::new()));
            }
            let obj = heap.global_heap_object(addr, index)?;
            let s = usize::try_from(len)
                .ok()
                .and_then(|l| obj.get(..l))
                .ok_or_else(|| {
                    Error::corrupt(
                        alloc::format!(
                            "variable-length string of {len} bytes in a {}-byte heap object",
                            obj.len()
                        ),
                        addr.0,
                    )
                })?;
            Ok(string_value(s.to_vec()))
        }
        Datatype::Reference { kind, .. } => decode_reference(*kind, b, ctx, heap).map(Value::Ref),
        Datatype::Complex { base, size } => {
            let half = usize::try_from(size / 2).unwrap_or(usize::MAX);
            let (re, im) = (b.get(..half), b.get(half..));
            match (re, im) {
                (Some(re), Some(im)) if re.len() == im.len() => Ok(Value::Complex(
                    Box::new(decode_one(base, re, ctx, heap)?),
                    Box::new(decode_one(base, im, ctx, heap)?),
                )),
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
