//! The dynamic value tree for data of any datatype.

use crate::Addr;
use alloc::boxed::Box;
use alloc::string::String;
use alloc::vec::Vec;

/// A dataspace selection carried by a region reference.
#[derive(Debug, Clone, PartialEq)]
pub struct Region {
    /// Number of selected points.
    pub npoints: u64,
    /// Bounding box (low corner, high corner), `None` for an empty selection.
    pub bounds: Option<(Vec<u64>, Vec<u64>)>,
}

/// The target of a reference value.
#[derive(Debug, Clone, PartialEq)]
pub enum Reference {
    /// The null reference.
    Null,
    /// An object, by object header address.
    Object(Addr),
    /// A region of a dataset.
    Region {
        /// Dataset object header address.
        obj: Addr,
        /// The selection.
        region: Region,
    },
    /// An attribute of an object.
    Attribute {
        /// Object header address.
        obj: Addr,
        /// Attribute name.
        name: String,
    },
    /// A reference into another file (new-style references only).
    External {
        /// File name.
        file: String,
    },
}

/// One decoded value of any HDF5 datatype.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// Signed integer up to 64 bits.
    Int(i64),
    /// Unsigned integer up to 64 bits (also bitfields).
    UInt(u64),
    /// Signed integer wider than 64 bits.
    BigInt(i128),
    /// Unsigned integer wider than 64 bits.
    BigUInt(u128),
    /// IEEE binary16, as its bits.
    F16(u16),
    /// IEEE binary32.
    F32(f32),
    /// IEEE binary64.
    F64(f64),
    /// IEEE binary128, as its bits.
    F128(u128),
    /// A float that is not an IEEE layout: the unsigned integer of all its bytes
    /// (byte order resolved).
    NonStandardFloat(u128),
    /// A string that is valid UTF-8 (trailing padding removed for fixed-length strings).
    Str(String),
    /// A string whose bytes are not valid UTF-8.
    RawStr(Vec<u8>),
    /// Opaque bytes.
    Opaque(Vec<u8>),
    /// Enumeration: integer code and member name (if the code names a member).
    Enum {
        /// The integer code.
        code: i128,
        /// The member name.
        name: Option<String>,
    },
    /// Compound: members in declaration order.
    Compound(Vec<(String, Value)>),
    /// Array element: nested lists following the array's dims.
    Array(Vec<Value>),
    /// Variable-length sequence.
    Vlen(Vec<Value>),
    /// Reference.
    Ref(Reference),
    /// Time (raw value).
    Time(i64),
    /// Complex number: real and imaginary parts (floats).
    Complex(Box<Value>, Box<Value>),
}
