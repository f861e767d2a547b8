//! Datatype message (0x0003), spec section IV.A.2.d: versions 1–5, every class.

use crate::codec::Cursor;
use crate::error::Result;
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

impl Datatype {
    /// Decode a datatype message body (also used nested inside compound,
    /// enum, array, vlen and complex types, and inside attribute messages).
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported`, `Limit` (nesting).
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        Err(cur.unsupported("datatype decoding is not implemented yet"))
    }

    /// Size in bytes of one element in the file.
    pub fn size(&self) -> u64 {
        0
    }
}
