//! `h5fmt` — the HDF5 file format in pure Rust: read, write and edit in
//! place, without libhdf5.
//!
//! It reads files written by libhdf5 (superblock v0–v3, object header v1/v2,
//! every group storage form, every datatype class, every chunk index, the
//! standard filters), and writes files libhdf5 and h5py read back. The core
//! is `#![no_std]` + `alloc`; the `std` feature (default) adds files, memory
//! maps and threads.
//!
//! # Reading
//! [`File`] opens a file; paths reach [`Group`]s, [`Dataset`]s and their
//! [`Attribute`]s. Numbers read as any native type `T` with
//! [`Dataset::read`] (converted from the file's type, range-checked), parts
//! with a numpy-style [`data::hyperslab::Selection`], single values with
//! [`Dataset::read_scalar`]; other types as [`Value`]s or raw bytes.
//!
//! ```
//! use h5fmt::data::hyperslab::Selection;
//! # fn main() -> h5fmt::Result<()> {
//! # let mut w = h5fmt::FileWriter::in_memory();
//! # let v: Vec<f32> = (0..60).map(|i| i as f32).collect();
//! # w.root().create_dataset("images").shape(&[3, 4, 5]).write(&v)?;
//! # w.root().set_attr("instrument", "camera 2")?;
//! # let bytes = w.finish()?;
//! let file = h5fmt::File::from_bytes(bytes)?; // or File::open("data.h5")
//! for obj in file.root()?.walk() {
//!     let obj = obj?;
//!     println!("{} {:?}", obj.path(), obj);
//! }
//! let images = file.dataset("/images")?;
//! println!("{} {:?}", images.dtype(), images.shape()); // H5T_IEEE_F32LE [3, 4, 5]
//! let first = images.read_slice::<f64>(&Selection::parse("0, :2, :", images.shape())?)?;
//! assert_eq!(first.len(), 10);
//! let who = file.root()?.attr("instrument")?.read_string()?;
//! assert_eq!(who, "camera 2");
//! # Ok(()) }
//! ```
//!
//! # Writing
//! [`FileWriter`] builds a new file: groups, datasets (contiguous, chunked
//! with filters, compact, virtual), attributes, links, committed types.
//! `#[derive(H5Compound)]` (feature `derive`) maps structs to compound
//! types. [`FileEditor`] changes an existing file in place: append, resize,
//! overwrite boxes, add or delete objects and attributes.
//!
//! ```
//! # fn main() -> h5fmt::Result<()> {
//! let mut w = h5fmt::FileWriter::in_memory(); // or FileWriter::create("out.h5")
//! let mut root = w.root();
//! root.create_dataset("runs/1/adc")
//!     .shape(&[2, 3])
//!     .chunks(&[1, 3])
//!     .deflate(4)
//!     .write(&[1u16, 2, 3, 4, 5, 6])?;
//! root.set_attr("version", 2i32)?;
//! let bytes = w.finish()?; // close() for a file on disk
//! let back = h5fmt::File::from_bytes(bytes)?;
//! assert_eq!(back.dataset("runs/1/adc")?.read::<u16>()?, [1, 2, 3, 4, 5, 6]);
//! # Ok(()) }
//! ```
//!
//! # Features
//! - `std` (default): files, memory maps, threads.
//! - `c-codecs` (default): deflate and zstd through libdeflate and libzstd
//!   (C, faster). Without it (`default-features = false, features =
//!   ["std"]`) nothing is C and every filter still decodes and encodes
//!   (zlib-rs, ruzstd).
//! - `ndarray`: `Dataset::read_array` and `DatasetBuilder::write_array`
//!   with `ndarray` arrays (re-exported as `h5fmt::ndarray`).
//! - `derive`: `#[derive(H5Compound)]`.
//!
//! Every read of untrusted bytes gives a value or an [`Error`], never a
//! panic; memory is bounded by [`Limits`].
#![no_std]
#![deny(missing_docs)]
#![forbid(unsafe_op_in_unsafe_fn)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod addr;
pub mod codec;
pub mod data;
pub mod error;
pub mod filter;
pub mod format;
pub mod io;
pub mod limits;
pub mod read;
pub mod write;

pub use addr::{Addr, Ctx, Sizes};
pub use data::value::Value;
pub use error::{Error, ErrorKind, Result};
pub use format::datatype::Datatype;
pub use limits::Limits;
/// The `ndarray` crate (the version `read_array` and `write_array` use).
#[cfg(feature = "ndarray")]
pub use ndarray;
pub use read::{Attribute, Dataset, File, Group, Link, Object};
#[cfg(feature = "std")]
pub use write::edit::FileEditor;
pub use write::{AttrValue, FileWriter, Format, GroupWriter, H5Type, ObjectId};

pub use data::record::H5Record;
/// `#[derive(H5Compound)]` (feature `derive`): a struct with named fields as
/// an HDF5 compound type, written with [`H5Type`] and read with
/// [`Dataset::read_records`] ([`H5Record`]).
///
/// ```
/// use h5fmt::{H5Compound, H5Type};
/// #[derive(Clone, Copy, H5Compound)]
/// pub struct P {
///     pub x: f64,
///     #[h5(name = "y value")]
///     pub(crate) y: [i16; 2],
/// }
/// let h5fmt::Datatype::Compound { size, members } = P::dtype() else { panic!() };
/// assert_eq!((size, members[1].name.as_str(), members[1].offset), (12, "y value", 8));
/// ```
///
/// What it refuses, each with a compile error:
/// ```compile_fail
/// #[derive(h5fmt::H5Compound)]
/// enum E { A, B }
/// ```
/// ```compile_fail
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct T(f64, f64);
/// ```
/// ```compile_fail
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct G<T: Copy> { x: T }
/// ```
/// ```compile_fail
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct Unit;
/// ```
/// ```compile_fail
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct Dup { a: f64, #[h5(name = "a")] b: f64 }
/// ```
/// ```compile_fail
/// #[derive(Clone, Copy, h5fmt::H5Compound)]
/// struct Unknown { #[h5(rename = "z")] a: f64 }
/// ```
/// A `String` field needs `#[h5(read_only)]` (it is not `Copy`, and `put`
/// cannot write the global heap):
/// ```compile_fail
/// #[derive(h5fmt::H5Compound)]
/// struct S { s: String }
/// ```
/// ```
/// #[derive(h5fmt::H5Compound)]
/// #[h5(read_only)]
/// struct S { s: String, n: u8 }
/// ```
#[cfg(feature = "derive")]
pub use h5fmt_derive::H5Compound;

/// Paths the code generated by `#[derive(H5Compound)]` names (not a public API).
#[doc(hidden)]
pub mod __private {
    pub use alloc::vec::Vec;
}
