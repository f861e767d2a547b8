//! `h5fmt` — the HDF5 file format in pure Rust.
//!
//! Reads files written by libhdf5 (superblock v0–v3, object header v1/v2, every
//! group storage form, every datatype class) without linking any C. The core is
//! `#![no_std]` + `alloc`; the `std` feature (default) adds files and mmap.
//!
//! ```ignore
//! # #[cfg(feature = "std")] {
//! let file = h5fmt::File::open("data.h5").unwrap();
//! for name in file.root().unwrap().member_names().unwrap() {
//!     println!("{name}");
//! }
//! # }
//! ```
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
pub use read::{Attribute, Dataset, File, Group, Link, Object};
#[cfg(feature = "std")]
pub use write::edit::FileEditor;
pub use write::{AttrValue, FileWriter, Format, GroupWriter, H5Type, ObjectId};
