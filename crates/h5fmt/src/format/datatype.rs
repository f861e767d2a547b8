//! Datatype message (0x0003), spec section IV.A.2.d: versions 1–5, every class
//! (fixed-point, floating-point, time, string, bitfield, opaque, compound,
//! reference, enumeration, variable-length, array, and the complex class of
//! HDF5 2.0).
//!
//! Version differences handled here: version 1 compound members carry an
//! explicit array description (dimensionality, permutation, four dimension
//! sizes); versions 1 and 2 pad compound/enum member names to multiples of 8
//! bytes; version 3 packs names and encodes compound member offsets in the
//! fewest bytes that can hold the compound size, drops the reserved bytes and
//! permutation indices of arrays, and adds the VAX byte order for floats;
//! version 4 adds the revised (`H5T_STD_REF`) reference types; version 5 adds
//! complex numbers.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// Byte order of an atomic type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ByteOrder {
    /// Little-endian.
    Little,
    /// Big-endian.
    Big,
    /// VAX mixed order (floats only).
    Vax,
}

/// Padding of fixed-length strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StringPad {
    /// NUL-terminated.
    NullTerm,
    /// NUL-padded.
    NullPad,
    /// Space-padded.
    SpacePad,
}

/// Character set of strings and names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CharSet {
    /// US-ASCII.
    Ascii,
    /// UTF-8.
    Utf8,
}

/// Reference flavour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefKind {
    /// `H5T_STD_REF_OBJ`: an object header address.
    Object1,
    /// `H5T_STD_REF_DSETREG`: a global-heap id of (object, selection).
    Region1,
    /// `H5T_STD_REF` (HDF5 ≥ 1.12): an encoded reference in the global heap.
    Std,
}

/// Floating-point bit layout (fields of the floating-point class properties).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct FloatLayout {
    /// Bit position of the sign bit.
    pub sign_pos: u8,
    /// Bit offset of the first significant bit.
    pub bit_offset: u16,
    /// Number of significant bits.
    pub precision: u16,
    /// Bit position of the exponent.
    pub exp_pos: u8,
    /// Exponent size in bits.
    pub exp_size: u8,
    /// Bit position of the mantissa.
    pub mant_pos: u8,
    /// Mantissa size in bits.
    pub mant_size: u8,
    /// Exponent bias.
    pub exp_bias: u32,
    /// Mantissa normalization: 0 none, 1 msb always set, 2 msb implied.
    pub norm: u8,
}

/// One member of a compound type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct CompoundMember {
    /// Member name.
    pub name: String,
    /// Byte offset within the compound element.
    pub offset: u32,
    /// Member type.
    pub dtype: Datatype,
}

/// One member of an enum type.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EnumMember {
    /// Member name.
    pub name: String,
    /// Raw value bytes, in the base type's size and byte order.
    pub value: Vec<u8>,
}

/// An HDF5 datatype as stored in the file.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Datatype {
    /// Fixed-point (class 0).
    Integer {
        /// Size in bytes.
        size: u32,
        /// Byte order.
        order: ByteOrder,
        /// Signed (two's complement).
        signed: bool,
        /// Bit offset of the first significant bit.
        bit_offset: u16,
        /// Number of significant bits.
        precision: u16,
    },
    /// Floating-point (class 1).
    Float {
        /// Size in bytes.
        size: u32,
        /// Byte order.
        order: ByteOrder,
        /// Bit layout.
        layout: FloatLayout,
    },
    /// Time (class 2).
    Time {
        /// Size in bytes.
        size: u32,
        /// Byte order.
        order: ByteOrder,
        /// Bit precision.
        precision: u16,
    },
    /// Fixed-length string (class 3).
    String {
        /// Size in bytes.
        size: u32,
        /// Padding.
        pad: StringPad,
        /// Character set.
        cset: CharSet,
    },
    /// Bitfield (class 4).
    Bitfield {
        /// Size in bytes.
        size: u32,
        /// Byte order.
        order: ByteOrder,
        /// Bit offset.
        bit_offset: u16,
        /// Bit precision.
        precision: u16,
    },
    /// Opaque (class 5).
    Opaque {
        /// Size in bytes.
        size: u32,
        /// ASCII tag.
        tag: String,
    },
    /// Compound (class 6).
    Compound {
        /// Size in bytes.
        size: u32,
        /// Members in declaration (message) order.
        members: Vec<CompoundMember>,
    },
    /// Reference (class 7).
    Reference {
        /// Size in bytes in the file.
        size: u32,
        /// Flavour.
        kind: RefKind,
    },
    /// Enumeration (class 8).
    Enum {
        /// Integer base type.
        base: Box<Datatype>,
        /// Members in declaration order.
        members: Vec<EnumMember>,
    },
    /// Variable-length sequence (class 9, type 0).
    VarLenSequence {
        /// Size in bytes in the file (4 + size of offsets + 4).
        size: u32,
        /// Element type.
        base: Box<Datatype>,
    },
    /// Variable-length string (class 9, type 1).
    VarLenString {
        /// Size in bytes in the file (4 + size of offsets + 4).
        size: u32,
        /// Padding.
        pad: StringPad,
        /// Character set.
        cset: CharSet,
    },
    /// Array (class 10).
    Array {
        /// Dimensions.
        dims: Vec<u64>,
        /// Element type.
        base: Box<Datatype>,
    },
    /// Complex number (class 11, HDF5 2.0).
    Complex {
        /// Size in bytes of the whole number.
        size: u32,
        /// Float type of each part.
        base: Box<Datatype>,
    },
}

/// Datatype classes (low four bits of the first byte of the message).
mod class {
    pub const INTEGER: u8 = 0;
    pub const FLOAT: u8 = 1;
    pub const TIME: u8 = 2;
    pub const STRING: u8 = 3;
    pub const BITFIELD: u8 = 4;
    pub const OPAQUE: u8 = 5;
    pub const COMPOUND: u8 = 6;
    pub const REFERENCE: u8 = 7;
    pub const ENUM: u8 = 8;
    pub const VLEN: u8 = 9;
    pub const ARRAY: u8 = 10;
    pub const COMPLEX: u8 = 11;
}

/// Largest rank of an array datatype (libhdf5's `H5S_MAX_RANK`).
const MAX_ARRAY_RANK: usize = 32;

/// The fixed part of every datatype message: version, class, 24 flag bits, size.
struct Header {
    version: u8,
    class: u8,
    flags: u32,
    size: u32,
    /// Absolute offset of the message start, for errors.
    at: u64,
}

impl Datatype {
    /// Decode a datatype message body (also used nested inside compound,
    /// enum, array, vlen and complex types, and inside attribute messages).
    ///
    /// Consumes exactly the bytes of the (possibly nested) message. The sizes
    /// of variable-length and reference types are those they occupy in the
    /// file (computed from `ctx.sizes`, as libhdf5 does), whatever the message
    /// says.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported`, `Limit` (nesting),
    /// `Unrepresentable` (a member name, enum name or opaque tag that is not UTF-8).
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        decode_at(cur, ctx, 0)
    }

    /// Size in bytes of one element in the file.
    pub fn size(&self) -> u64 {
        match self {
            Datatype::Integer { size, .. }
            | Datatype::Float { size, .. }
            | Datatype::Time { size, .. }
            | Datatype::String { size, .. }
            | Datatype::Bitfield { size, .. }
            | Datatype::Opaque { size, .. }
            | Datatype::Compound { size, .. }
            | Datatype::Reference { size, .. }
            | Datatype::VarLenSequence { size, .. }
            | Datatype::VarLenString { size, .. }
            | Datatype::Complex { size, .. } => u64::from(*size),
            Datatype::Enum { base, .. } => base.size(),
            Datatype::Array { dims, base } => dims
                .iter()
                .fold(base.size(), |acc, &d| acc.saturating_mul(d)),
        }
    }

    /// Whether this type contains a variable-length type (sequence or string)
    /// anywhere, i.e. whether its elements point into the global heap.
    pub fn is_variable_length(&self) -> bool {
        match self {
            Datatype::VarLenSequence { .. } | Datatype::VarLenString { .. } => true,
            Datatype::Compound { members, .. } => {
                members.iter().any(|m| m.dtype.is_variable_length())
            }
            Datatype::Enum { base, .. }
            | Datatype::Array { base, .. }
            | Datatype::Complex { base, .. } => base.is_variable_length(),
            _ => false,
        }
    }

    /// Whether this type contains a reference type anywhere.
    pub fn has_references(&self) -> bool {
        match self {
            Datatype::Reference { .. } => true,
            Datatype::Compound { members, .. } => members.iter().any(|m| m.dtype.has_references()),
            Datatype::Enum { base, .. }
            | Datatype::Array { base, .. }
            | Datatype::Complex { base, .. }
            | Datatype::VarLenSequence { base, .. } => base.has_references(),
            _ => false,
        }
    }

    /// Whether this is a floating-point type with exactly an IEEE 754 layout:
    /// binary16, binary32, binary64 or binary128 in little- or big-endian byte
    /// order, i.e. size 2/4/8/16 bytes, bit offset 0, precision of all the
    /// bits, sign at the top bit, exponent of 5/8/11/15 bits right below it
    /// with bias 15/127/1023/16383, mantissa of 10/23/52/112 bits at bit 0,
    /// and an implied leading mantissa bit.
    ///
    /// Every other float (VAX order, x87 80-bit long doubles in 16 bytes,
    /// bfloat16, reduced precision…) is "nonstandard": the canonical dump
    /// writes its values as the unsigned integer of all its bytes.
    /// Returns `false` for types that are not floats.
    pub fn is_ieee_standard(&self) -> bool {
        let Datatype::Float {
            size,
            order,
            layout,
        } = self
        else {
            return false;
        };
        if *order == ByteOrder::Vax {
            return false;
        }
        let (exp_size, mant_size, bias) = match size {
            2 => (5u8, 10u8, 15u32),
            4 => (8, 23, 127),
            8 => (11, 52, 1023),
            16 => (15, 112, 16383),
            _ => return false,
        };
        let bits = size * 8;
        layout.bit_offset == 0
            && u32::from(layout.precision) == bits
            && u32::from(layout.sign_pos) == bits - 1
            && layout.exp_pos == mant_size
            && layout.exp_size == exp_size
            && layout.mant_pos == 0
            && layout.mant_size == mant_size
            && layout.exp_bias == bias
            && layout.norm == 2
    }
}

/// Names of members, enum values and opaque tags: bytes up to the first NUL, as UTF-8.
fn utf8_name(bytes: &[u8], what: &str, at: u64) -> Result<String> {
    let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
    let b = bytes.get(..end).unwrap_or(bytes);
    match core::str::from_utf8(b) {
        Ok(s) => Ok(String::from(s)),
        Err(_) => {
            Err(Error::unrepresentable(alloc::format!("{what} is not valid UTF-8")).with_offset(at))
        }
    }
}

/// Read a NUL-terminated name; in versions 1 and 2 the name field (with its
/// NUL) is padded to a multiple of 8 bytes.
fn read_name(cur: &mut Cursor<'_>, version: u8, what: &str) -> Result<String> {
    let at = cur.offset();
    let raw = cur.read_cstr()?;
    if version < 3 {
        // Field length = smallest multiple of 8 that holds the name and its NUL.
        let field = raw.len() / 8 * 8 + 8;
        cur.skip(field - raw.len() - 1)?;
    }
    utf8_name(raw, what, at)
}

/// Bytes needed to encode offsets within a compound of `size` bytes
/// (version 3 compound member offsets).
fn offset_width(size: u32) -> usize {
    match size {
        0..=0xff => 1,
        0x100..=0xffff => 2,
        0x1_0000..=0xff_ffff => 3,
        _ => 4,
    }
}

fn byte_order(flags: u32) -> ByteOrder {
    if flags & 1 != 0 {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    }
}

fn string_pad(v: u32, cur: &Cursor<'_>) -> Result<StringPad> {
    match v {
        0 => Ok(StringPad::NullTerm),
        1 => Ok(StringPad::NullPad),
        2 => Ok(StringPad::SpacePad),
        _ => Err(cur.unsupported(alloc::format!("string padding type {v}"))),
    }
}

fn char_set(v: u32, cur: &Cursor<'_>) -> Result<CharSet> {
    match v {
        0 => Ok(CharSet::Ascii),
        1 => Ok(CharSet::Utf8),
        _ => Err(cur.unsupported(alloc::format!("string character set {v}"))),
    }
}

/// Check that `offset`/`precision` describe bits inside an element of `size` bytes.
fn check_bits(h: &Header, offset: u16, precision: u16, what: &str) -> Result<()> {
    let bits = u64::from(h.size) * 8;
    if precision == 0 || u64::from(offset) + u64::from(precision) > bits {
        return Err(Error::corrupt(
            alloc::format!(
                "{what}: bit offset {offset} + precision {precision} outside {} bytes",
                h.size
            ),
            h.at,
        ));
    }
    Ok(())
}

fn decode_at(cur: &mut Cursor<'_>, ctx: Ctx, depth: usize) -> Result<Datatype> {
    if depth > ctx.limits.max_datatype_nesting {
        return Err(Error::limit(alloc::format!(
            "datatype nested more than {} levels",
            ctx.limits.max_datatype_nesting
        ))
        .with_offset(cur.offset()));
    }
    let at = cur.offset();
    let b0 = cur.read_u8()?;
    let f = cur.read_array::<3>()?;
    let flags = u32::from(f[0]) | (u32::from(f[1]) << 8) | (u32::from(f[2]) << 16);
    let size = cur.read_u32()?;
    let h = Header {
        version: b0 >> 4,
        class: b0 & 0x0f,
        flags,
        size,
        at,
    };
    if h.version == 0 || h.version > 5 {
        return Err(Error::corrupt(
            alloc::format!("datatype message version {}", h.version),
            at,
        ));
    }
    if h.size == 0 {
        return Err(Error::corrupt("datatype of size 0", at));
    }
    let dt = match h.class {
        class::INTEGER => {
            let bit_offset = cur.read_u16()?;
            let precision = cur.read_u16()?;
            check_bits(&h, bit_offset, precision, "integer")?;
            Datatype::Integer {
                size,
                order: byte_order(flags),
                signed: flags & 0x08 != 0,
                bit_offset,
                precision,
            }
        }
        class::BITFIELD => {
            let bit_offset = cur.read_u16()?;
            let precision = cur.read_u16()?;
            check_bits(&h, bit_offset, precision, "bitfield")?;
            Datatype::Bitfield {
                size,
                order: byte_order(flags),
                bit_offset,
                precision,
            }
        }
        class::FLOAT => decode_float(cur, &h)?,
        class::TIME => {
            let precision = cur.read_u16()?;
            Datatype::Time {
                size,
                order: byte_order(flags),
                precision,
            }
        }
        class::STRING => Datatype::String {
            size,
            pad: string_pad(flags & 0x0f, cur)?,
            cset: char_set((flags >> 4) & 0x0f, cur)?,
        },
        class::OPAQUE => {
            let n = usize::try_from(flags & 0xff).unwrap_or(usize::MAX);
            let tag_at = cur.offset();
            let raw = cur.read_bytes(n)?;
            Datatype::Opaque {
                size,
                tag: utf8_name(raw, "opaque tag", tag_at)?,
            }
        }
        class::COMPOUND => decode_compound(cur, &h, ctx, depth)?,
        class::REFERENCE => {
            let rtype = flags & 0x0f;
            let addr = u32::from(ctx.sizes.offsets);
            let (kind, disk) = match rtype {
                0 => (RefKind::Object1, addr),
                1 => (RefKind::Region1, addr + 4),
                2..=4 => {
                    let v = (flags >> 4) & 0x0f;
                    if v != 1 {
                        return Err(
                            cur.unsupported(alloc::format!("reference encoding version {v}"))
                        );
                    }
                    // encoded size (4) + reference header (2) + global heap id (address + 4)
                    (RefKind::Std, addr + 10)
                }
                _ => return Err(Error::corrupt(alloc::format!("reference type {rtype}"), at)),
            };
            Datatype::Reference { size: disk, kind }
        }
        class::ENUM => decode_enum(cur, &h, ctx, depth)?,
        class::VLEN => {
            let kind = flags & 0x0f;
            let disk = 4 + u32::from(ctx.sizes.offsets) + 4;
            match kind {
                0 => {
                    let base = decode_at(cur, ctx, depth + 1)?;
                    Datatype::VarLenSequence {
                        size: disk,
                        base: Box::new(base),
                    }
                }
                1 => {
                    let pad = string_pad((flags >> 4) & 0x0f, cur)?;
                    let cset = char_set((flags >> 8) & 0x0f, cur)?;
                    // The base type (a character type) is stored but carries nothing new.
                    decode_at(cur, ctx, depth + 1)?;
                    Datatype::VarLenString {
                        size: disk,
                        pad,
                        cset,
                    }
                }
                _ => return Err(cur.unsupported(alloc::format!("variable-length type {kind}"))),
            }
        }
        class::ARRAY => decode_array(cur, &h, ctx, depth)?,
        class::COMPLEX => {
            if flags & 1 == 0 {
                return Err(cur.unsupported("heterogeneous complex number type"));
            }
            let form = (flags >> 1) & 3;
            if form != 0 {
                return Err(cur.unsupported(alloc::format!(
                    "complex number form {form} (only rectangular)"
                )));
            }
            let base = decode_at(cur, ctx, depth + 1)?;
            if !matches!(base, Datatype::Float { .. }) {
                return Err(Error::corrupt(
                    "complex number whose parts are not floats",
                    at,
                ));
            }
            if base.size().checked_mul(2) != Some(u64::from(size)) {
                return Err(Error::corrupt(
                    alloc::format!(
                        "complex number of {size} bytes with {}-byte parts",
                        base.size()
                    ),
                    at,
                ));
            }
            Datatype::Complex {
                size,
                base: Box::new(base),
            }
        }
        c => {
            return Err(Error::corrupt(
                alloc::format!("unknown datatype class {c}"),
                at,
            ))
        }
    };
    Ok(dt)
}

fn decode_float(cur: &mut Cursor<'_>, h: &Header) -> Result<Datatype> {
    let f = h.flags;
    let order = match (f & 1 != 0, h.version >= 3 && f & 0x40 != 0) {
        (false, false) => ByteOrder::Little,
        (true, false) => ByteOrder::Big,
        (true, true) => ByteOrder::Vax,
        (false, true) => return Err(cur.unsupported("reserved floating-point byte order")),
    };
    let norm = ((f >> 4) & 3) as u8;
    if norm == 3 {
        return Err(cur.unsupported("reserved floating-point mantissa normalization"));
    }
    let sign_pos = ((f >> 8) & 0xff) as u8;
    let bit_offset = cur.read_u16()?;
    let precision = cur.read_u16()?;
    let exp_pos = cur.read_u8()?;
    let exp_size = cur.read_u8()?;
    let mant_pos = cur.read_u8()?;
    let mant_size = cur.read_u8()?;
    let exp_bias = cur.read_u32()?;
    check_bits(h, bit_offset, precision, "float")?;
    let bits = u64::from(h.size) * 8;
    let fits = |pos: u8, len: u8| u64::from(pos) + u64::from(len) <= bits;
    if exp_size == 0
        || mant_size == 0
        || !fits(exp_pos, exp_size)
        || !fits(mant_pos, mant_size)
        || u64::from(sign_pos) >= bits
    {
        return Err(Error::corrupt(
            "floating-point fields outside the element",
            h.at,
        ));
    }
    Ok(Datatype::Float {
        size: h.size,
        order,
        layout: FloatLayout {
            sign_pos,
            bit_offset,
            precision,
            exp_pos,
            exp_size,
            mant_pos,
            mant_size,
            exp_bias,
            norm,
        },
    })
}

fn decode_compound(cur: &mut Cursor<'_>, h: &Header, ctx: Ctx, depth: usize) -> Result<Datatype> {
    let n = h.flags & 0xffff;
    if n == 0 {
        return Err(Error::corrupt("compound datatype without members", h.at));
    }
    // Smallest member: a 1-byte name, a 1-byte offset and an 8-byte type header.
    let n = cur.ensure_count(u64::from(n), 10)?;
    let mut members = Vec::with_capacity(n);
    for _ in 0..n {
        let m_at = cur.offset();
        let name = read_name(cur, h.version, "compound member name")?;
        let offset = if h.version >= 3 {
            let v = cur.read_uint(offset_width(h.size))?;
            u32::try_from(v).map_err(|_| Error::corrupt("compound member offset", m_at))?
        } else {
            cur.read_u32()?
        };
        let mut dims = Vec::new();
        if h.version == 1 {
            let ndims = cur.read_u8()?;
            if ndims > 4 {
                return Err(Error::corrupt(
                    alloc::format!("compound member of {ndims} dimensions"),
                    m_at,
                ));
            }
            cur.skip(3 + 4 + 4)?; // reserved, permutation, reserved
            for i in 0..4u8 {
                let d = cur.read_u32()?;
                if i < ndims {
                    if d == 0 {
                        return Err(Error::corrupt(
                            "compound member array dimension of size 0",
                            m_at,
                        ));
                    }
                    dims.push(u64::from(d));
                }
            }
        }
        let mut dtype = decode_at(cur, ctx, depth + 1)?;
        if !dims.is_empty() {
            dtype = Datatype::Array {
                dims,
                base: Box::new(dtype),
            };
        }
        let end = u64::from(offset).checked_add(dtype.size());
        if end.is_none_or(|e| e > u64::from(h.size)) {
            return Err(Error::corrupt(
                alloc::format!(
                    "compound member {name:?} at offset {offset} ({} bytes) outside the {}-byte compound",
                    dtype.size(),
                    h.size
                ),
                m_at,
            ));
        }
        members.push(CompoundMember {
            name,
            offset,
            dtype,
        });
    }
    Ok(Datatype::Compound {
        size: h.size,
        members,
    })
}

fn decode_enum(cur: &mut Cursor<'_>, h: &Header, ctx: Ctx, depth: usize) -> Result<Datatype> {
    let n = u64::from(h.flags & 0xffff);
    let base = decode_at(cur, ctx, depth + 1)?;
    if !matches!(base, Datatype::Integer { .. }) {
        return Err(cur.unsupported("enumeration whose base type is not an integer"));
    }
    let vsize = base.size();
    if vsize != u64::from(h.size) {
        return Err(Error::corrupt(
            "enumeration size differs from its base type's",
            h.at,
        ));
    }
    let vsize = usize::try_from(vsize).map_err(|_| cur.corrupt("enumeration size"))?;
    // Each member needs at least a 1-byte name and its value.
    let n = cur.ensure_count(n, vsize.saturating_add(1))?;
    let mut names = Vec::with_capacity(n);
    for _ in 0..n {
        names.push(read_name(cur, h.version, "enumeration member name")?);
    }
    let mut members = Vec::with_capacity(n);
    for name in names {
        let value = cur.read_bytes(vsize)?.to_vec();
        members.push(EnumMember { name, value });
    }
    Ok(Datatype::Enum {
        base: Box::new(base),
        members,
    })
}

fn decode_array(cur: &mut Cursor<'_>, h: &Header, ctx: Ctx, depth: usize) -> Result<Datatype> {
    let ndims = usize::from(cur.read_u8()?);
    if ndims > MAX_ARRAY_RANK.min(ctx.limits.max_rank) {
        return Err(Error::corrupt(
            alloc::format!("array datatype of rank {ndims}"),
            h.at,
        ));
    }
    if h.version < 3 {
        cur.skip(3)?;
    }
    let mut dims = Vec::with_capacity(ndims);
    for _ in 0..ndims {
        let d = cur.read_u32()?;
        if d == 0 {
            return Err(Error::corrupt("array dimension of size 0", h.at));
        }
        dims.push(u64::from(d));
    }
    if h.version < 3 {
        cur.skip(ndims * 4)?; // permutation indices (never implemented by libhdf5)
    }
    let base = decode_at(cur, ctx, depth + 1)?;
    let total = dims
        .iter()
        .try_fold(base.size(), |acc, &d| acc.checked_mul(d));
    if total.is_none_or(|t| t > u64::from(u32::MAX)) {
        return Err(Error::corrupt("array datatype larger than 4 GiB", h.at));
    }
    Ok(Datatype::Array {
        dims,
        base: Box::new(base),
    })
}

// ---------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------

impl Datatype {
    /// The lowest message version that can describe this type: 1 for most
    /// classes, 2 for arrays and anything containing one (libhdf5 upgrades
    /// the enclosing type with its members), 5 for complex numbers.
    pub fn min_version(&self) -> u8 {
        match self {
            Datatype::Array { base, .. } => base.min_version().max(2),
            Datatype::Complex { .. } => 5,
            Datatype::Compound { members, .. } => members
                .iter()
                .map(|m| m.dtype.min_version())
                .max()
                .unwrap_or(1),
            Datatype::Enum { base, .. } | Datatype::VarLenSequence { base, .. } => {
                base.min_version()
            }
            Datatype::Reference {
                kind: RefKind::Std, ..
            } => 4,
            _ => 1,
        }
    }

    /// Encoded size of the message written by [`Datatype::encode`] with
    /// the same `version`.
    ///
    /// # Errors
    /// As [`Datatype::encode`].
    pub fn encoded_len(&self, ctx: Ctx, version: u8) -> Result<usize> {
        let mut enc = Encoder::new();
        self.encode(&mut enc, ctx, version)?;
        Ok(enc.len())
    }

    /// Encode the datatype message. `version` is the lowest version the file
    /// format preset allows (1 for the earliest format, 3 from 1.8 on); each
    /// (nested) type is written with `max(version, self.min_version())`, as
    /// libhdf5 does.
    ///
    /// # Errors
    /// `Unsupported` for what this encoder does not write (VAX floats
    /// with version < 3),
    /// `Usage` for inconsistent types (an enum whose values do not have the
    /// base type's size, an opaque tag of 256 bytes or more, a compound
    /// member name containing NUL).
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, version: u8) -> Result<()> {
        let v = version.max(self.min_version()).min(5);
        let header = |enc: &mut Encoder, class: u8, flags: u32, size: u32| {
            enc.put_u8((v << 4) | class);
            enc.put_uint(u64::from(flags & 0x00ff_ffff), 3);
            enc.put_u32(size);
        };
        let order_bit = |o: &ByteOrder| u32::from(*o != ByteOrder::Little);
        match self {
            Datatype::Integer {
                size,
                order,
                signed,
                bit_offset,
                precision,
            } => {
                header(
                    enc,
                    class::INTEGER,
                    order_bit(order) | (u32::from(*signed) << 3),
                    *size,
                );
                enc.put_u16(*bit_offset);
                enc.put_u16(*precision);
            }
            Datatype::Bitfield {
                size,
                order,
                bit_offset,
                precision,
            } => {
                header(enc, class::BITFIELD, order_bit(order), *size);
                enc.put_u16(*bit_offset);
                enc.put_u16(*precision);
            }
            Datatype::Float {
                size,
                order,
                layout,
            } => {
                let mut flags = u32::from(layout.norm & 3) << 4 | u32::from(layout.sign_pos) << 8;
                match order {
                    ByteOrder::Little => {}
                    ByteOrder::Big => flags |= 1,
                    ByteOrder::Vax => {
                        if v < 3 {
                            return Err(Error::unsupported(
                                "VAX byte order needs datatype message version 3",
                            ));
                        }
                        flags |= 1 | 0x40;
                    }
                }
                header(enc, class::FLOAT, flags, *size);
                enc.put_u16(layout.bit_offset);
                enc.put_u16(layout.precision);
                enc.put_u8(layout.exp_pos);
                enc.put_u8(layout.exp_size);
                enc.put_u8(layout.mant_pos);
                enc.put_u8(layout.mant_size);
                enc.put_u32(layout.exp_bias);
            }
            Datatype::Time {
                size,
                order,
                precision,
            } => {
                header(enc, class::TIME, order_bit(order), *size);
                enc.put_u16(*precision);
            }
            Datatype::String { size, pad, cset } => {
                header(
                    enc,
                    class::STRING,
                    pad_bits(*pad) | cset_bits(*cset) << 4,
                    *size,
                );
            }
            Datatype::Opaque { size, tag } => {
                let field = tag.len().div_ceil(8) * 8;
                if field > 255 || tag.as_bytes().contains(&0) {
                    return Err(Error::usage(
                        "opaque tag must be shorter than 256 bytes, without NUL",
                    ));
                }
                #[allow(clippy::cast_possible_truncation)] // checked just above
                header(enc, class::OPAQUE, field as u32, *size);
                enc.put_bytes(tag.as_bytes());
                enc.put_zeros(field - tag.len());
            }
            Datatype::Compound { size, members } => {
                let n = u32::try_from(members.len())
                    .ok()
                    .filter(|&n| (1..=0xffff).contains(&n))
                    .ok_or_else(|| Error::usage("a compound type needs 1 to 65535 members"))?;
                header(enc, class::COMPOUND, n, *size);
                for m in members {
                    put_name(enc, &m.name, v)?;
                    if v >= 3 {
                        enc.put_uint(u64::from(m.offset), offset_width(*size));
                        m.dtype.encode(enc, ctx, version)?;
                    } else {
                        enc.put_u32(m.offset);
                        if v == 1 {
                            // Version 1 array description: no dimensions.
                            enc.put_zeros(1 + 3 + 4 + 4 + 16);
                        }
                        m.dtype.encode(enc, ctx, version)?;
                    }
                }
            }
            Datatype::Reference { kind, .. } => {
                // H5T_STD_REF is stored as type 2 (H5R_OBJECT2) with encoding
                // version 1 in bits 4-7, whatever the references hold.
                let t = match kind {
                    RefKind::Object1 => 0,
                    RefKind::Region1 => 1,
                    RefKind::Std => 2 | (1 << 4),
                };
                let disk = match kind {
                    RefKind::Region1 => u32::from(ctx.sizes.offsets) + 4,
                    RefKind::Std => u32::from(ctx.sizes.offsets) + 10,
                    RefKind::Object1 => u32::from(ctx.sizes.offsets),
                };
                header(enc, class::REFERENCE, t, disk);
            }
            Datatype::Enum { base, members } => {
                let n = u32::try_from(members.len())
                    .ok()
                    .filter(|&n| n <= 0xffff)
                    .ok_or_else(|| Error::usage("an enum type has at most 65535 members"))?;
                let vsize = base.size();
                let size = u32::try_from(vsize).map_err(|_| Error::usage("enum base size"))?;
                header(enc, class::ENUM, n, size);
                base.encode(enc, ctx, version)?;
                for m in members {
                    put_name(enc, &m.name, v)?;
                }
                for m in members {
                    if m.value.len() as u64 != vsize {
                        return Err(Error::usage(alloc::format!(
                            "enum member {:?} has {} value bytes, the base type {}",
                            m.name,
                            m.value.len(),
                            vsize
                        )));
                    }
                    enc.put_bytes(&m.value);
                }
            }
            Datatype::VarLenSequence { base, .. } => {
                header(enc, class::VLEN, 0, vlen_disk_size(ctx));
                base.encode(enc, ctx, version)?;
            }
            Datatype::VarLenString { pad, cset, .. } => {
                let flags = 1 | pad_bits(*pad) << 4 | cset_bits(*cset) << 8;
                header(enc, class::VLEN, flags, vlen_disk_size(ctx));
                // The base type libhdf5 writes: an unsigned 8-bit character.
                Datatype::Integer {
                    size: 1,
                    order: ByteOrder::Little,
                    signed: false,
                    bit_offset: 0,
                    precision: 8,
                }
                .encode(enc, ctx, version)?;
            }
            Datatype::Array { dims, base } => {
                let size = u32::try_from(self.size())
                    .map_err(|_| Error::usage("array datatype larger than 4 GiB"))?;
                if dims.is_empty() || dims.len() > MAX_ARRAY_RANK || dims.contains(&0) {
                    return Err(Error::usage(
                        "array datatype rank 1..=32, no zero dimension",
                    ));
                }
                header(enc, class::ARRAY, 0, size);
                #[allow(clippy::cast_possible_truncation)] // rank ≤ 32
                enc.put_u8(dims.len() as u8);
                if v < 3 {
                    enc.put_zeros(3);
                }
                for &d in dims {
                    let d = u32::try_from(d)
                        .map_err(|_| Error::usage("array dimension larger than 2^32"))?;
                    enc.put_u32(d);
                }
                if v < 3 {
                    for i in 0..dims.len() {
                        #[allow(clippy::cast_possible_truncation)] // rank ≤ 32
                        enc.put_u32(i as u32);
                    }
                }
                base.encode(enc, ctx, version)?;
            }
            Datatype::Complex { size, base } => {
                header(enc, class::COMPLEX, 1, *size);
                base.encode(enc, ctx, version)?;
            }
        }
        Ok(())
    }
}

fn vlen_disk_size(ctx: Ctx) -> u32 {
    4 + u32::from(ctx.sizes.offsets) + 4
}

fn pad_bits(p: StringPad) -> u32 {
    match p {
        StringPad::NullTerm => 0,
        StringPad::NullPad => 1,
        StringPad::SpacePad => 2,
    }
}

fn cset_bits(c: CharSet) -> u32 {
    match c {
        CharSet::Ascii => 0,
        CharSet::Utf8 => 1,
    }
}

/// Write a member name: NUL-terminated, padded to a multiple of 8 bytes
/// before version 3 (the mirror of [`read_name`]).
fn put_name(enc: &mut Encoder, name: &str, version: u8) -> Result<()> {
    if name.is_empty() || name.as_bytes().contains(&0) {
        return Err(Error::usage(alloc::format!(
            "member name {name:?} is empty or contains NUL"
        )));
    }
    enc.put_cstr(name);
    if version < 3 {
        let field = name.len() / 8 * 8 + 8;
        enc.put_zeros(field - name.len() - 1);
    }
    Ok(())
}

/// Constructors of the common types, as libhdf5 describes them.
impl Datatype {
    /// A little-endian integer of `size` bytes (`H5T_STD_I*LE` / `U*LE`).
    pub fn int_le(size: u32, signed: bool) -> Datatype {
        #[allow(clippy::cast_possible_truncation)] // sizes are 1..=16 bytes
        Datatype::Integer {
            size,
            order: ByteOrder::Little,
            signed,
            bit_offset: 0,
            precision: (size * 8) as u16,
        }
    }
    /// An IEEE 754 little-endian float of 2, 4 or 8 bytes (`H5T_IEEE_F*LE`).
    /// Other sizes give binary64.
    pub fn float_le(size: u32) -> Datatype {
        let (size, exp_size, mant_size, bias) = match size {
            2 => (2u32, 5u8, 10u8, 15u32),
            4 => (4, 8, 23, 127),
            _ => (8, 11, 52, 1023),
        };
        #[allow(clippy::cast_possible_truncation)] // sizes of at most 8 bytes
        Datatype::Float {
            size,
            order: ByteOrder::Little,
            layout: FloatLayout {
                sign_pos: (size * 8 - 1) as u8,
                bit_offset: 0,
                precision: (size * 8) as u16,
                exp_pos: mant_size,
                exp_size,
                mant_pos: 0,
                mant_size,
                exp_bias: bias,
                norm: 2,
            },
        }
    }
    /// A variable-length UTF-8 string (what h5py writes for `str`).
    pub fn vlen_utf8() -> Datatype {
        Datatype::VarLenString {
            size: 16,
            pad: StringPad::NullTerm,
            cset: CharSet::Utf8,
        }
    }
    /// The boolean enum of h5py and HEP001: base `H5T_STD_I8LE`, FALSE=0, TRUE=1.
    pub fn bool_enum() -> Datatype {
        Datatype::Enum {
            base: Box::new(Datatype::int_le(1, true)),
            members: alloc::vec![
                EnumMember {
                    name: String::from("FALSE"),
                    value: alloc::vec![0],
                },
                EnumMember {
                    name: String::from("TRUE"),
                    value: alloc::vec![1],
                },
            ],
        }
    }
}

/// The datatype in libhdf5's names, on one line, as `h5dump` prints it
/// in short: `H5T_STD_I32LE`, `H5T_IEEE_F64BE`,
/// `H5T_STRING { STRSIZE 8; H5T_STR_NULLPAD; H5T_CSET_UTF8 }`,
/// `H5T_COMPOUND { H5T_STD_I64LE "id"; H5T_IEEE_F32LE "x" }`,
/// `H5T_ENUM { H5T_STD_I8LE; FALSE, TRUE }` …
///
/// ```
/// use h5fmt::format::datatype::Datatype;
/// assert_eq!(Datatype::int_le(4, true).to_string(), "H5T_STD_I32LE");
/// assert_eq!(Datatype::float_le(8).to_string(), "H5T_IEEE_F64LE");
/// assert_eq!(
///     Datatype::vlen_utf8().to_string(),
///     "H5T_STRING { STRSIZE H5T_VARIABLE; H5T_STR_NULLTERM; H5T_CSET_UTF8 }"
/// );
/// ```
impl core::fmt::Display for Datatype {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let ord = |o: &ByteOrder| match o {
            ByteOrder::Little => "LE",
            ByteOrder::Big => "BE",
            ByteOrder::Vax => "VAX",
        };
        let pad = |p: &StringPad| match p {
            StringPad::NullTerm => "H5T_STR_NULLTERM",
            StringPad::NullPad => "H5T_STR_NULLPAD",
            StringPad::SpacePad => "H5T_STR_SPACEPAD",
        };
        let cset = |c: &CharSet| match c {
            CharSet::Ascii => "H5T_CSET_ASCII",
            CharSet::Utf8 => "H5T_CSET_UTF8",
        };
        match self {
            Datatype::Integer {
                size,
                order,
                signed,
                ..
            } => {
                let s = if *signed { "I" } else { "U" };
                write!(f, "H5T_STD_{s}{}{}", u64::from(*size) * 8, ord(order))
            }
            Datatype::Float { size, order, .. } => {
                write!(f, "H5T_IEEE_F{}{}", u64::from(*size) * 8, ord(order))
            }
            Datatype::Time { size, order, .. } => {
                write!(f, "H5T_TIME_{}{}", u64::from(*size) * 8, ord(order))
            }
            Datatype::String {
                size,
                pad: p,
                cset: c,
            } => {
                write!(
                    f,
                    "H5T_STRING {{ STRSIZE {size}; {}; {} }}",
                    pad(p),
                    cset(c)
                )
            }
            Datatype::VarLenString {
                pad: p, cset: c, ..
            } => write!(
                f,
                "H5T_STRING {{ STRSIZE H5T_VARIABLE; {}; {} }}",
                pad(p),
                cset(c)
            ),
            Datatype::Bitfield { size, order, .. } => {
                write!(f, "H5T_STD_B{}{}", u64::from(*size) * 8, ord(order))
            }
            Datatype::Opaque { size, tag } => {
                write!(f, "H5T_OPAQUE {{ {size} bytes; OPAQUE_TAG {tag:?} }}")
            }
            Datatype::Compound { members, .. } => {
                f.write_str("H5T_COMPOUND { ")?;
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    write!(f, "{} {:?}", m.dtype, m.name)?;
                }
                f.write_str(" }")
            }
            Datatype::Reference { kind, .. } => f.write_str(match kind {
                RefKind::Object1 => "H5T_STD_REF_OBJ",
                RefKind::Region1 => "H5T_STD_REF_DSETREG",
                RefKind::Std => "H5T_STD_REF",
            }),
            Datatype::Enum { base, members } => {
                write!(f, "H5T_ENUM {{ {base}; ")?;
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    f.write_str(&m.name)?;
                }
                f.write_str(" }")
            }
            Datatype::VarLenSequence { base, .. } => write!(f, "H5T_VLEN {{ {base} }}"),
            Datatype::Array { dims, base } => {
                f.write_str("H5T_ARRAY { ")?;
                for d in dims {
                    write!(f, "[{d}]")?;
                }
                write!(f, " {base} }}")
            }
            Datatype::Complex { base, .. } => write!(f, "H5T_COMPLEX {{ {base} }}"),
        }
    }
}

#[cfg(test)]
mod tests {
    //! Test vectors: unless said otherwise, the bytes are the datatype message
    //! that libhdf5 2.0 writes, obtained with h5py 3.16 as
    //! `h5py.h5t.py_create(np.dtype(...), logical=True).encode()[2:]` (the
    //! first two bytes of `H5Tencode` output are its own header), or read
    //! from the object header of a file written with `libver="latest"`
    //! (message version 5). Expected fields were checked against h5py's
    //! `TypeID` getters (`get_order`, `get_precision`, `get_fields`...).
    use super::*;
    use crate::{ErrorKind, Limits};
    use alloc::vec;

    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len() / 2)
            .map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16).unwrap())
            .collect()
    }

    fn dec(h: &str) -> Datatype {
        let b = hex(h);
        let mut c = Cursor::new(&b, 0);
        let t = Datatype::decode(&mut c, Ctx::default()).unwrap();
        assert_eq!(c.remaining(), 0, "message not fully consumed");
        t
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

    #[test]
    fn integers() {
        assert_eq!(
            dec("100800000400000000002000"),
            int(4, ByteOrder::Little, true)
        ); // <i4
        assert_eq!(
            dec("100100000200000000001000"),
            int(2, ByteOrder::Big, false)
        ); // >u2
           // H5T_STD_I32LE with set_precision(12), set_offset(4)
        assert_eq!(
            dec("100800000400000004000c00"),
            Datatype::Integer {
                size: 4,
                order: ByteOrder::Little,
                signed: true,
                bit_offset: 4,
                precision: 12
            }
        );
        // H5T_STD_B16BE
        assert_eq!(
            dec("140100000200000000001000"),
            Datatype::Bitfield {
                size: 2,
                order: ByteOrder::Big,
                bit_offset: 0,
                precision: 16
            }
        );
    }

    #[test]
    fn floats() {
        let f2 = dec("11200f0002000000000010000a05000a0f000000"); // <f2
        assert_eq!(
            f2,
            Datatype::Float {
                size: 2,
                order: ByteOrder::Little,
                layout: FloatLayout {
                    sign_pos: 15,
                    bit_offset: 0,
                    precision: 16,
                    exp_pos: 10,
                    exp_size: 5,
                    mant_pos: 0,
                    mant_size: 10,
                    exp_bias: 15,
                    norm: 2
                }
            }
        );
        assert!(f2.is_ieee_standard());
        let f4 = dec("11211f000400000000002000170800177f000000"); // >f4
        assert!(matches!(
            f4,
            Datatype::Float {
                size: 4,
                order: ByteOrder::Big,
                ..
            }
        ));
        assert!(f4.is_ieee_standard());
        assert!(dec("11203f000800000000004000340b0034ff030000").is_ieee_standard()); // <f8
        assert!(dec("11207f001000000000008000700f0070ff3f0000").is_ieee_standard()); // H5T_IEEE_F128LE
                                                                                     // x87 long double (np.longdouble): 80 bits in 16 bytes, msb set, not implied
        let ld = dec("11004f001000000000005000400f0040ff3f0000");
        let Datatype::Float {
            size: 16, layout, ..
        } = &ld
        else {
            panic!("{ld:?}")
        };
        assert_eq!(
            (
                layout.precision,
                layout.sign_pos,
                layout.mant_size,
                layout.norm
            ),
            (80, 79, 64, 0)
        );
        assert!(!ld.is_ieee_standard());
        assert!(!int(4, ByteOrder::Little, true).is_ieee_standard());
    }

    #[test]
    fn vax_order_only_from_version_3() {
        // Hand-built per spec: VAX F-float, bits 0 and 6 set, sign at 31,
        // exponent 23/8, mantissa 0/23, bias 129, msb implied.
        let vax = "31611f00040000000000200017080017810000 00".replace(' ', "");
        let t = dec(&vax);
        assert!(matches!(
            t,
            Datatype::Float {
                order: ByteOrder::Vax,
                ..
            }
        ));
        assert!(!t.is_ieee_standard());
        // The same flags in a version 1 message: bit 6 is not a byte-order bit.
        let t = dec(&vax.replacen("31", "11", 1));
        assert!(matches!(
            t,
            Datatype::Float {
                order: ByteOrder::Big,
                ..
            }
        ));
        // Bit 6 without bit 0 is reserved.
        let b = hex(&vax.replacen("3161", "3160", 1));
        let e = Datatype::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
    }

    #[test]
    fn time_string_opaque() {
        // H5T_UNIX_D32BE, H5T_UNIX_D64LE
        assert_eq!(
            dec("12010000040000002000"),
            Datatype::Time {
                size: 4,
                order: ByteOrder::Big,
                precision: 32
            }
        );
        assert_eq!(
            dec("12000000080000004000"),
            Datatype::Time {
                size: 8,
                order: ByteOrder::Little,
                precision: 64
            }
        );
        // C_S1 with size 5, space padded, UTF-8
        assert_eq!(
            dec("1312000005000000"),
            Datatype::String {
                size: 5,
                pad: StringPad::SpacePad,
                cset: CharSet::Utf8
            }
        );
        // opaque of 7 bytes tagged "mytag" (tag NUL-padded to 8)
        assert_eq!(
            dec("15080000070000006d79746167000000"),
            Datatype::Opaque {
                size: 7,
                tag: "mytag".into()
            }
        );
    }

    #[test]
    fn compound_v1() {
        // np.dtype([('a','<i4'),('bb','>f8'),('c','S3')]): version 1, names padded
        // to 8, each member with 28 bytes of (unused) array information.
        let t = dec("160300000f000000610000000000000000000000000000000000000000000000000000000000000000000000000000001008000004000000000020006262000000000000040000000000000000000000000000000000000000000000000000000000000011213f000800000000004000340b0034ff03000063000000000000000c000000000000000000000000000000000000000000000000000000000000001301000003000000");
        let Datatype::Compound { size: 15, members } = &t else {
            panic!("{t:?}")
        };
        let names: Vec<_> = members
            .iter()
            .map(|m| (m.name.as_str(), m.offset))
            .collect();
        assert_eq!(names, [("a", 0), ("bb", 4), ("c", 12)]);
        assert_eq!(members[0].dtype, int(4, ByteOrder::Little, true));
        assert!(matches!(
            members[1].dtype,
            Datatype::Float {
                size: 8,
                order: ByteOrder::Big,
                ..
            }
        ));
        assert_eq!(
            members[2].dtype,
            Datatype::String {
                size: 3,
                pad: StringPad::NullPad,
                cset: CharSet::Ascii
            }
        );
        assert_eq!(t.size(), 15);
    }

    #[test]
    fn compound_v1_array_member() {
        // Hand-built per spec (old libraries): member "m" at offset 0, 2-D
        // array field 2x3 of <u1 given through the dimensionality fields.
        let mut b = hex("1601000006000000"); // v1 compound, 1 member, size 6
        b.extend(hex("6d00000000000000")); // "m" padded to 8
        b.extend(hex("00000000")); // offset
        b.extend(hex("02000000")); // dimensionality 2, reserved
        b.extend(hex("0000000000000000")); // permutation, reserved
        b.extend(hex("02000000030000000000000000000000")); // dims 2, 3, (unused) 0, 0
        b.extend(hex("100000000100000000000800")); // <u1
        let mut c = Cursor::new(&b, 0);
        let t = Datatype::decode(&mut c, Ctx::default()).unwrap();
        assert!(c.is_empty());
        let Datatype::Compound { members, .. } = &t else {
            panic!()
        };
        assert_eq!(
            members[0].dtype,
            Datatype::Array {
                dims: vec![2, 3],
                base: Box::new(int(1, ByteOrder::Little, false))
            }
        );
    }

    #[test]
    fn compound_v2_with_array_member() {
        // np.dtype([('x','<i2',(2,3)),('y','u1')]): version 2 compound, version 2 array
        let t = dec("260200000d0000007800000000000000000000002a0000000c000000020000000200000003000000000000000100000010080000020000000000100079000000000000000c000000100000000100000000000800");
        let Datatype::Compound { size: 13, members } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(
            members[0].dtype,
            Datatype::Array {
                dims: vec![2, 3],
                base: Box::new(int(2, ByteOrder::Little, true))
            }
        );
        assert_eq!((members[1].name.as_str(), members[1].offset), ("y", 12));
    }

    #[test]
    fn compound_v5_packed_names_and_offsets() {
        // libver="latest": [('a','<i4'),('bb','>f8',(2,)),('c','S3')], 1-byte offsets
        let t = dec("5603000017000000610000100800000400000000002000626200045a00000010000000010200000011213f000800000000004000340b0034ff0300006300141301000003000000");
        let Datatype::Compound { size: 23, members } = &t else {
            panic!("{t:?}")
        };
        let names: Vec<_> = members
            .iter()
            .map(|m| (m.name.as_str(), m.offset))
            .collect();
        assert_eq!(names, [("a", 0), ("bb", 4), ("c", 20)]);
        assert!(matches!(&members[1].dtype, Datatype::Array { dims, .. } if dims == &[2]));
        // itemsize 302 with a member at 300: 2-byte offsets
        let t =
            dec("560200002e0100006100000010080000040000000000200062002c01100800000200000000001000");
        let Datatype::Compound { members, .. } = &t else {
            panic!()
        };
        assert_eq!(members[1].offset, 300);
    }

    #[test]
    fn enums() {
        // enum_dtype({'RED':0,'GREEN':1,'BLUE':42}, basetype='i1'), version 1
        let t = dec("1803000001000000100800000100000000000800424c554500000000475245454e00000052454400000000002a0100");
        let Datatype::Enum { base, members } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(**base, int(1, ByteOrder::Little, true));
        let m: Vec<_> = members
            .iter()
            .map(|m| (m.name.as_str(), m.value.clone()))
            .collect();
        assert_eq!(
            m,
            [("BLUE", vec![42]), ("GREEN", vec![1]), ("RED", vec![0])]
        );
        assert_eq!(t.size(), 1);
        // basetype '>i2', libver="latest" (version 5, names not padded)
        let t = dec(
            "5803000002000000100900000200000000001000424c554500475245454e0052454400002a00010000",
        );
        let Datatype::Enum { base, members } = &t else {
            panic!("{t:?}")
        };
        assert_eq!(**base, int(2, ByteOrder::Big, true));
        assert_eq!(members[0].value, [0, 42]);
        assert_eq!(members[2].name, "RED");
    }

    #[test]
    fn arrays_and_vlen() {
        // np.dtype(('<f4',(2,3))): version 2 with permutation indices
        let t = dec("2a00000018000000020000000200000003000000000000000100000011201f000400000000002000170800177f000000");
        assert!(
            matches!(&t, Datatype::Array { dims, base } if dims == &[2, 3] && base.size() == 4)
        );
        assert_eq!(t.size(), 24);
        // ('<u1',(2,3)) with libver="latest": no reserved bytes, no permutation
        let t = dec("5a00000006000000020200000003000000100000000100000000000800");
        assert_eq!(
            t,
            Datatype::Array {
                dims: vec![2, 3],
                base: Box::new(int(1, ByteOrder::Little, false))
            }
        );
        // vlen_dtype('<i2'): size in the message is libhdf5's memory size; in the file 4+8+4
        let t = dec("1900000010000000100800000200000000001000");
        assert_eq!(
            t,
            Datatype::VarLenSequence {
                size: 16,
                base: Box::new(int(2, ByteOrder::Little, true))
            }
        );
        assert!(t.is_variable_length());
        // string_dtype('utf-8'), string_dtype('ascii')
        let t = dec("1901010008000000100000000100000000000800");
        assert_eq!(
            t,
            Datatype::VarLenString {
                size: 16,
                pad: StringPad::NullTerm,
                cset: CharSet::Utf8
            }
        );
        let t = dec("1901000008000000100000000100000000000800");
        assert_eq!(
            t,
            Datatype::VarLenString {
                size: 16,
                pad: StringPad::NullTerm,
                cset: CharSet::Ascii
            }
        );
        let c = Datatype::Compound {
            size: 20,
            members: vec![CompoundMember {
                name: "v".into(),
                offset: 4,
                dtype: t,
            }],
        };
        assert!(c.is_variable_length());
        assert!(!int(4, ByteOrder::Little, true).is_variable_length());
    }

    #[test]
    fn references_and_complex() {
        // H5T_STD_REF_OBJ, H5T_STD_REF_DSETREG
        assert_eq!(
            dec("1700000008000000"),
            Datatype::Reference {
                size: 8,
                kind: RefKind::Object1
            }
        );
        assert_eq!(
            dec("170100000c000000"),
            Datatype::Reference {
                size: 12,
                kind: RefKind::Region1
            }
        );
        // H5T_STD_REF as stored in a file (version 4, type 2 = object, encoding version 1, 18 bytes)
        assert_eq!(
            dec("4712000012000000"),
            Datatype::Reference {
                size: 18,
                kind: RefKind::Std
            }
        );
        // and the encoder writes exactly those bytes (from any preset version)
        for v in [1, 3] {
            let mut e = Encoder::new();
            Datatype::Reference {
                size: 18,
                kind: RefKind::Std,
            }
            .encode(&mut e, Ctx::default(), v)
            .unwrap();
            assert_eq!(e.as_bytes(), hex("4712000012000000").as_slice());
        }
        // with 4-byte addresses the file sizes shrink accordingly
        let ctx = Ctx {
            sizes: crate::Sizes {
                offsets: 4,
                lengths: 4,
            },
            ..Ctx::default()
        };
        let b = hex("170100000c000000");
        assert_eq!(
            Datatype::decode(&mut Cursor::new(&b, 0), ctx).unwrap(),
            Datatype::Reference {
                size: 8,
                kind: RefKind::Region1
            }
        );
        // H5T_COMPLEX_IEEE_F32LE (HDF5 2.0): version 5, class 11, homogeneous, rectangular
        let t = dec("5b0100000800000011201f000400000000002000170800177f000000");
        let Datatype::Complex { size: 8, base } = &t else {
            panic!("{t:?}")
        };
        assert!(base.is_ieee_standard());
        let t = dec("5b0100001000000011213f000800000000004000340b0034ff030000"); // F64BE
        assert!(
            matches!(&t, Datatype::Complex { size: 16, base } if matches!(**base, Datatype::Float { order: ByteOrder::Big, .. }))
        );
    }

    fn err(h: &str, ctx: Ctx) -> ErrorKind {
        let b = hex(h);
        Datatype::decode(&mut Cursor::new(&b, 0), ctx)
            .unwrap_err()
            .kind()
    }

    #[test]
    fn rejects_bad_messages() {
        let c = Ctx::default();
        assert_eq!(
            err("100800000400000000002000"[..20].as_ref(), c),
            ErrorKind::Truncated
        );
        assert_eq!(err("000800000400000000002000", c), ErrorKind::Corrupt); // version 0
        assert_eq!(err("100800000000000000002000", c), ErrorKind::Corrupt); // size 0
        assert_eq!(err("100800000400000010002000", c), ErrorKind::Corrupt); // offset+precision > 32
        assert_eq!(err("1c0000000400000000", c), ErrorKind::Corrupt); // class 12
        assert_eq!(err("170f000008000000", c), ErrorKind::Corrupt); // reference type 15
        assert_eq!(err("1600000008000000", c), ErrorKind::Corrupt); // compound without members
                                                                    // 65535 compound members announced in a few bytes: refused before allocating
        assert_eq!(
            err("16ffff0008000000610000000000000000000000", c),
            ErrorKind::Truncated
        );
        // member outside the compound
        assert_eq!(
            err("5601000002000000610000100800000400000000002000", c),
            ErrorKind::Corrupt
        );
        // array of 2^32-1 x 2^32-1 elements
        assert_eq!(
            err(
                "5a0000000100000002ffffffffffffffff100000000100000000000800",
                c
            ),
            ErrorKind::Corrupt
        );
        // nesting: arrays of arrays beyond the limit
        let mut b = Vec::new();
        for _ in 0..40 {
            b.extend(hex("5a000000010000000101000000"));
        }
        b.extend(hex("100000000100000000000800"));
        let tight = Ctx {
            limits: Limits::tight(),
            ..Ctx::default()
        };
        let e = Datatype::decode(&mut Cursor::new(&b, 0), tight).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
    }
}

#[cfg(all(test, feature = "std"))]
mod corpus_tests {
    //! Datatype messages of real files of the shared corpus, at byte offsets
    //! found by searching each file for the message libhdf5 re-encodes
    //! (`dset.id.get_type().encode()[2:]`, a unique match), or for the
    //! version 1 compound header behind an object header message of type 3.
    //! Expected fields are h5py's view of the same types (and the expected
    //! h5canon dumps of the corpus).
    use super::*;
    use alloc::vec;
    use std::string::ToString;

    fn at(file: &str, offset: usize, len: usize) -> Datatype {
        let path = std::format!(
            "{}/../../../shared/corpus/files/{file}",
            env!("CARGO_MANIFEST_DIR")
        );
        let raw = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut c = Cursor::new(&raw[offset..offset + len], offset as u64);
        Datatype::decode(&mut c, Ctx::default()).unwrap()
    }

    fn members(t: &Datatype) -> Vec<(std::string::String, u32, Datatype)> {
        let Datatype::Compound { members, .. } = t else {
            panic!("{t:?}")
        };
        members
            .iter()
            .map(|m| (m.name.to_string(), m.offset, m.dtype.clone()))
            .collect()
    }

    fn int(size: u32, signed: bool) -> Datatype {
        Datatype::Integer {
            size,
            order: ByteOrder::Little,
            signed,
            bit_offset: 0,
            precision: (size * 8) as u16,
        }
    }

    #[test]
    fn old_compound_with_array_fields() {
        // libhdf5 test file tarrold.h5: version 1 compounds written by HDF5 1.4
        let t = at("wrwilliams__hdf5/test__tarrold.h5", 768, 172);
        assert_eq!(t.size(), 12);
        let m = members(&t);
        assert_eq!((m[0].0.as_str(), m[0].1, &m[0].2), ("i", 0, &int(2, true)));
        assert!(m[1].2.is_ieee_standard() && m[1].1 == 4);
        assert_eq!((m[2].1, &m[2].2), (8, &int(4, true)));
        // Dataset2: f and l are 4-element array fields given by the v1 dimension fields
        let t = at("wrwilliams__hdf5/test__tarrold.h5", 5768, 232);
        assert_eq!(t.size(), 44);
        let m = members(&t);
        let names: Vec<_> = m.iter().map(|x| (x.0.as_str(), x.1)).collect();
        assert_eq!(names, [("i", 0), ("f", 4), ("l", 20), ("d", 36)]);
        assert!(
            matches!(&m[1].2, Datatype::Array { dims, base } if dims == &[4] && base.is_ieee_standard())
        );
        assert_eq!(
            m[2].2,
            Datatype::Array {
                dims: vec![4],
                base: Box::new(int(4, true))
            }
        );
        assert!(matches!(&m[3].2, Datatype::Float { size: 8, .. }));
    }

    #[test]
    fn vax_partial_precision_long_double_half_time() {
        // tvms.h5: VAX-order double, fields (63, 52, 11, 0, 52), bias 1025
        let t = at("wrwilliams__hdf5/tools__testfiles__tvms.h5", 832, 20);
        let Datatype::Float {
            size: 8,
            order: ByteOrder::Vax,
            layout,
        } = &t
        else {
            panic!("{t:?}")
        };
        assert_eq!(
            (
                layout.sign_pos,
                layout.exp_pos,
                layout.exp_size,
                layout.mant_pos,
                layout.mant_size,
                layout.exp_bias
            ),
            (63, 52, 11, 0, 52, 1025)
        );
        assert!(!t.is_ieee_standard());
        // h5repack_filters.h5 dset_nbit: 31-bit signed integer in 4 bytes
        let t = at(
            "wrwilliams__hdf5/tools__test__h5repack__testfiles__h5repack_filters.h5",
            22460,
            12,
        );
        assert_eq!(
            t,
            Datatype::Integer {
                size: 4,
                order: ByteOrder::Little,
                signed: true,
                bit_offset: 0,
                precision: 31
            }
        );
        // tldouble.h5: x87 long double in 16 bytes (nonstandard)
        let t = at("wrwilliams__hdf5/tools__testfiles__tldouble.h5", 856, 20);
        assert!(matches!(t, Datatype::Float { size: 16, .. }) && !t.is_ieee_standard());
        // PyTables float.h5: float16
        let t = at("PyTables__PyTables/tables__tests__float.h5", 872, 20);
        assert!(
            matches!(
                t,
                Datatype::Float {
                    size: 2,
                    order: ByteOrder::Little,
                    ..
                }
            ) && t.is_ieee_standard()
        );
        // PyTables times-nested-be.h5: {nested: {t64: time be 8}, t32: time be 4}
        let t = at(
            "PyTables__PyTables/tables__tests__times-nested-be.h5",
            1016,
            156,
        );
        assert_eq!(t.size(), 12);
        let m = members(&t);
        assert_eq!((m[1].0.as_str(), m[1].1), ("t32", 8));
        assert!(matches!(
            m[1].2,
            Datatype::Time {
                size: 4,
                order: ByteOrder::Big,
                ..
            }
        ));
        let inner = members(&m[0].2);
        assert_eq!((inner[0].0.as_str(), inner[0].1), ("t64", 0));
        assert!(matches!(
            inner[0].2,
            Datatype::Time {
                size: 8,
                order: ByteOrder::Big,
                ..
            }
        ));
    }
}

#[cfg(test)]
mod encode_tests {
    //! Expected bytes are what libhdf5 2.0 encodes for the same types
    //! (`h5py.h5t.py_create(dtype, logical=True).encode()[2:]`, h5py 3.16).
    use super::tests::hex;
    use super::*;
    use alloc::vec;

    fn enc(t: &Datatype, version: u8) -> Vec<u8> {
        let mut e = Encoder::new();
        t.encode(&mut e, Ctx::default(), version).unwrap();
        let b = e.into_vec();
        assert_eq!(t.encoded_len(Ctx::default(), version).unwrap(), b.len());
        // And our decoder reads it back to the same type.
        let mut c = Cursor::new(&b, 0);
        assert_eq!(&Datatype::decode(&mut c, Ctx::default()).unwrap(), t);
        assert_eq!(c.remaining(), 0);
        b
    }

    #[test]
    fn matches_libhdf5_bytes() {
        assert_eq!(
            enc(&Datatype::bool_enum(), 1),
            hex("180200000100000010080000010000000000080046414c534500000054525545000000000001")
        );
        assert_eq!(
            enc(&Datatype::float_le(2), 1),
            hex("11200f0002000000000010000a05000a0f000000")
        );
        assert_eq!(
            enc(
                &Datatype::Opaque {
                    size: 7,
                    tag: String::new()
                },
                1
            ),
            hex("1500000007000000")
        );
        let compound = Datatype::Compound {
            size: 20,
            members: vec![
                CompoundMember {
                    name: "a".into(),
                    offset: 0,
                    dtype: Datatype::int_le(4, true),
                },
                CompoundMember {
                    name: "b".into(),
                    offset: 4,
                    dtype: Datatype::Array {
                        dims: vec![2],
                        base: Box::new(Datatype::float_le(8)),
                    },
                },
            ],
        };
        assert_eq!(
            enc(&compound, 1),
            hex("26020000140000006100000000000000000000001008000004000000000020006200000000000000040000002a0000001000000001000000020000000000000011203f000800000000004000340b0034ff030000")
        );
        assert_eq!(
            enc(
                &Datatype::Reference {
                    size: 8,
                    kind: RefKind::Object1
                },
                1
            ),
            hex("1700000008000000")
        );
    }

    #[test]
    fn version_3_round_trips() {
        for t in [
            Datatype::bool_enum(),
            Datatype::vlen_utf8(),
            Datatype::VarLenSequence {
                size: 16,
                base: Box::new(Datatype::int_le(2, false)),
            },
            Datatype::String {
                size: 5,
                pad: StringPad::SpacePad,
                cset: CharSet::Utf8,
            },
            Datatype::Bitfield {
                size: 2,
                order: ByteOrder::Big,
                bit_offset: 0,
                precision: 16,
            },
            Datatype::Complex {
                size: 16,
                base: Box::new(Datatype::float_le(8)),
            },
        ] {
            let b = enc(&t, 3);
            assert_eq!(b[0] >> 4, t.min_version().max(3));
        }
    }
}
