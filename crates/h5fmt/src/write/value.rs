//! Rust values → HDF5 element bytes: the [`H5Type`] trait for numbers and
//! booleans, and [`AttrValue`] for attribute values of any type.

use crate::format::datatype::{CharSet, Datatype, StringPad};
use alloc::string::String;
use alloc::vec::Vec;

/// A Rust type with a fixed HDF5 representation (little-endian, as libhdf5
/// writes native types on the machines people use).
pub trait H5Type: Copy {
    /// The file datatype.
    fn dtype() -> Datatype;
    /// Append the element's bytes.
    fn put(&self, out: &mut Vec<u8>);
    /// The file bytes of `values` without a copy, when their memory layout
    /// is the file's (primitive numbers on little-endian machines); `None`
    /// (the default) when they must be encoded with [`H5Type::put`].
    fn file_bytes(values: &[Self]) -> Option<&[u8]>
    where
        Self: Sized,
    {
        let _ = values;
        None
    }
}

/// The bytes of a slice of primitive numbers, on little-endian machines.
macro_rules! le_bytes_fn {
    () => {
        fn file_bytes(values: &[Self]) -> Option<&[u8]> {
            if cfg!(target_endian = "little") {
                // SAFETY: primitive numbers have no padding bytes and no
                // invalid bit patterns; u8 has alignment 1; the length is
                // the slice's size in bytes and the borrow keeps it alive.
                Some(unsafe {
                    core::slice::from_raw_parts(
                        values.as_ptr().cast::<u8>(),
                        core::mem::size_of_val(values),
                    )
                })
            } else {
                None
            }
        }
    };
}

macro_rules! int_type {
    ($($t:ty => $size:expr, $signed:expr;)*) => {$(
        impl H5Type for $t {
            fn dtype() -> Datatype {
                Datatype::int_le($size, $signed)
            }
            fn put(&self, out: &mut Vec<u8>) {
                out.extend_from_slice(&self.to_le_bytes());
            }
            le_bytes_fn!();
        }
    )*};
}

int_type! {
    i8 => 1, true; i16 => 2, true; i32 => 4, true; i64 => 8, true;
    u8 => 1, false; u16 => 2, false; u32 => 4, false; u64 => 8, false;
}

impl H5Type for f32 {
    fn dtype() -> Datatype {
        Datatype::float_le(4)
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    le_bytes_fn!();
}

impl H5Type for f64 {
    fn dtype() -> Datatype {
        Datatype::float_le(8)
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.to_le_bytes());
    }
    le_bytes_fn!();
}

/// `bool` is h5py's (and HEP001's) enum: base `H5T_STD_I8LE`, FALSE=0, TRUE=1.
impl H5Type for bool {
    fn dtype() -> Datatype {
        Datatype::bool_enum()
    }
    fn put(&self, out: &mut Vec<u8>) {
        out.push(u8::from(*self));
    }
}

/// A type that can be a member of a derived compound type
/// (`#[derive(H5Compound)]`, feature `derive`): every [`H5Type`], and fixed
/// arrays `[T; N]` of members (an HDF5 array datatype of `N` elements;
/// nested arrays nest). Arrays are not [`H5Type`]s themselves, because a
/// Rust array given as a value (`AttrValue::from([1, 2, 3])`) is a
/// one-dimensional dataspace of elements, not one element.
pub trait H5Member {
    /// The member's file datatype.
    fn member_dtype() -> Datatype;
    /// Append the member's bytes.
    fn put_member(&self, out: &mut Vec<u8>);
}

impl<T: H5Type> H5Member for T {
    fn member_dtype() -> Datatype {
        T::dtype()
    }
    fn put_member(&self, out: &mut Vec<u8>) {
        self.put(out);
    }
}

/// `[T; N]` is an array of dims `[N]`; `[[T; M]; N]` one of dims `[N, M]`
/// (as numpy's subarray of shape `(N, M)`), and so on.
impl<T: H5Member, const N: usize> H5Member for [T; N] {
    fn member_dtype() -> Datatype {
        match T::member_dtype() {
            Datatype::Array { mut dims, base } => {
                dims.insert(0, N as u64);
                Datatype::Array { dims, base }
            }
            inner => Datatype::Array {
                dims: alloc::vec![N as u64],
                base: alloc::boxed::Box::new(inner),
            },
        }
    }
    fn put_member(&self, out: &mut Vec<u8>) {
        for v in self {
            v.put_member(out);
        }
    }
}

/// A packed compound datatype of `members` (name, datatype) in this order:
/// each member's offset is the sum of the sizes before it, the size the sum
/// of all (numpy's layout of a structured dtype built from a list, which
/// h5py writes). The datatype of `#[derive(H5Compound)]`.
pub fn compound_dtype(members: &[(&str, Datatype)]) -> Datatype {
    let mut offset = 0u32;
    let mut out = Vec::with_capacity(members.len());
    for (name, dtype) in members {
        out.push(crate::format::datatype::CompoundMember {
            name: String::from(*name),
            offset,
            dtype: dtype.clone(),
        });
        offset = offset.saturating_add(u32::try_from(dtype.size()).unwrap_or(u32::MAX));
    }
    Datatype::Compound {
        size: offset,
        members: out,
    }
}

/// Encode a slice of [`H5Type`] values.
pub fn to_bytes<T: H5Type>(values: &[T]) -> Vec<u8> {
    let mut out = Vec::with_capacity(core::mem::size_of_val(values));
    for v in values {
        v.put(&mut out);
    }
    out
}

/// Element data before it is placed in the file.
#[derive(Debug, Clone, PartialEq)]
pub enum ElementData {
    /// Raw element bytes in the file's layout.
    Raw(Vec<u8>),
    /// Variable-length elements (strings or sequences): each the bytes of
    /// the string, or the packed elements of the sequence. They go to the
    /// global heap; the element stored in place is (length, heap id).
    VarLen(Vec<Vec<u8>>),
    /// Element bytes exactly as stored in this file: variable-length
    /// descriptors and references already point at objects of the file
    /// being written ([`crate::FileWriter::put_global_heap_object`],
    /// [`crate::FileWriter::object_addr`]). Used to copy data between files.
    File(Vec<u8>),
}

/// A value for an attribute (or a dataset): datatype, shape and data.
#[derive(Debug, Clone, PartialEq)]
pub struct AttrValue {
    /// The file datatype.
    pub dtype: Datatype,
    /// `None` for a scalar, else the dimensions.
    pub shape: Option<Vec<u64>>,
    /// The elements.
    pub data: ElementData,
}

impl AttrValue {
    /// A value from raw element bytes.
    pub fn raw(dtype: Datatype, shape: Option<Vec<u64>>, bytes: Vec<u8>) -> Self {
        AttrValue {
            dtype,
            shape,
            data: ElementData::Raw(bytes),
        }
    }
    /// A fixed-length ASCII string of exactly its length, NUL-padded (what
    /// h5py writes for `numpy.bytes_`).
    pub fn fixed_ascii(s: &str) -> Self {
        AttrValue::raw(
            Datatype::String {
                size: u32::try_from(s.len().max(1)).unwrap_or(u32::MAX),
                pad: StringPad::NullPad,
                cset: CharSet::Ascii,
            },
            None,
            if s.is_empty() {
                alloc::vec![0]
            } else {
                s.as_bytes().to_vec()
            },
        )
    }
    /// Variable-length sequences of `T` (`h5py.vlen_dtype(T)`), one dimension.
    pub fn vlen<T: H5Type>(seqs: &[Vec<T>]) -> Self {
        AttrValue {
            dtype: Datatype::VarLenSequence {
                size: 16,
                base: alloc::boxed::Box::new(T::dtype()),
            },
            shape: Some(alloc::vec![seqs.len() as u64]),
            data: ElementData::VarLen(seqs.iter().map(|s| to_bytes(s)).collect()),
        }
    }
    /// `H5T_STD_REF` object references (HDF5 1.12+, what HEP001 and
    /// libhdf5 2.0 write) to the objects whose headers are at `targets`, in
    /// a file whose addresses are `size_of_offsets` bytes (8 in files this
    /// crate writes; [`crate::Ctx`]`.sizes.offsets` of a file opened).
    /// A one-dimensional value of `targets.len()` elements, or a scalar
    /// when `scalar` (then exactly one target is required, else `None`).
    /// [`Addr::UNDEF`](crate::Addr::UNDEF) makes a null reference.
    ///
    /// Each element is `size_of_offsets + 10` bytes: reference type 2
    /// (`H5R_OBJECT2`), flags 0, the token size, the header address
    /// (little-endian), zero padding. Writers resolve object ids or paths
    /// for you: [`crate::FileWriter::set_attr_object_refs`],
    /// [`crate::FileEditor::set_attr_object_refs`].
    pub fn object_refs(
        targets: &[crate::Addr],
        size_of_offsets: u8,
        scalar: bool,
    ) -> Option<AttrValue> {
        if scalar && targets.len() != 1 {
            return None;
        }
        if !matches!(size_of_offsets, 2 | 4 | 8) {
            return None;
        }
        let so = usize::from(size_of_offsets);
        let size = so + 10;
        let mut bytes = Vec::with_capacity(size * targets.len());
        for t in targets {
            let start = bytes.len();
            if t.is_undef() {
                bytes.resize(start + size, 0);
                continue;
            }
            bytes.push(2);
            bytes.push(0);
            bytes.push(size_of_offsets);
            bytes.extend_from_slice(&t.get().to_le_bytes()[..so]);
            bytes.resize(start + size, 0);
        }
        Some(AttrValue::raw(
            Datatype::Reference {
                size: u32::try_from(size).unwrap_or(u32::MAX),
                kind: crate::format::datatype::RefKind::Std,
            },
            if scalar {
                None
            } else {
                Some(alloc::vec![targets.len() as u64])
            },
            bytes,
        ))
    }
    /// Number of elements the shape describes.
    pub fn num_elements(&self) -> Option<u64> {
        match &self.shape {
            None => Some(1),
            Some(d) => d.iter().try_fold(1u64, |a, &x| a.checked_mul(x)),
        }
    }
}

impl<T: H5Type> From<T> for AttrValue {
    fn from(v: T) -> Self {
        AttrValue::raw(T::dtype(), None, to_bytes(&[v]))
    }
}

impl<T: H5Type> From<&[T]> for AttrValue {
    fn from(v: &[T]) -> Self {
        AttrValue::raw(T::dtype(), Some(alloc::vec![v.len() as u64]), to_bytes(v))
    }
}

impl<T: H5Type> From<Vec<T>> for AttrValue {
    fn from(v: Vec<T>) -> Self {
        AttrValue::from(v.as_slice())
    }
}

impl<T: H5Type, const N: usize> From<[T; N]> for AttrValue {
    fn from(v: [T; N]) -> Self {
        AttrValue::from(&v[..])
    }
}

/// A `&str` is a scalar variable-length UTF-8 string (h5py's `str`).
impl From<&str> for AttrValue {
    fn from(s: &str) -> Self {
        AttrValue {
            dtype: Datatype::vlen_utf8(),
            shape: None,
            data: ElementData::VarLen(alloc::vec![s.as_bytes().to_vec()]),
        }
    }
}

impl From<String> for AttrValue {
    fn from(s: String) -> Self {
        AttrValue::from(s.as_str())
    }
}

/// A slice of strings is a 1-D variable-length UTF-8 string array.
impl From<&[&str]> for AttrValue {
    fn from(v: &[&str]) -> Self {
        AttrValue {
            dtype: Datatype::vlen_utf8(),
            shape: Some(alloc::vec![v.len() as u64]),
            data: ElementData::VarLen(v.iter().map(|s| s.as_bytes().to_vec()).collect()),
        }
    }
}

impl From<Vec<String>> for AttrValue {
    fn from(v: Vec<String>) -> Self {
        AttrValue {
            dtype: Datatype::vlen_utf8(),
            shape: Some(alloc::vec![v.len() as u64]),
            data: ElementData::VarLen(v.into_iter().map(String::into_bytes).collect()),
        }
    }
}
