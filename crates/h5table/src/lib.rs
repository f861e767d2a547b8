//! HEP001 column tables on [`h5fmt`]: discovery, columns, missing values,
//! categories, index columns, validation, queries, and (with `std`) writing.
//!
//! A HEP001 table is an HDF5 group carrying `CLASS = "COLUMN_TABLE"`, one
//! rank-1 dataset per column, and `NROWS`, the table's single commit point
//! (rows `[0, NROWS)` are the data; anything past it is reserved storage).
//! The list columns and boolean columns of the newer upstream draft (HEP001
//! "H5Col", 2026-07, which h5col 0.4.0 writes) are read too: see [`list`].
//!
//! ```no_run
//! let file = h5fmt::File::open("events.h5")?;
//! for path in h5table::find_tables(&file)? {
//!     let table = h5table::Table::open(&file.group(&path)?)?;
//!     println!("{path}: {} rows, {} columns", table.nrows(), table.columns().len());
//!     let first = &table.columns()[0];
//!     let slice = first.read(0..table.nrows().min(10))?;
//!     for (v, missing) in slice.values.iter().zip(&slice.missing) {
//!         println!("{}", if *missing { "<missing>".into() } else { h5table::text::format_value(v) });
//!     }
//! }
//! # Ok::<(), h5table::Error>(())
//! ```
//!
//! Reading works without `std` (the crate is `#![no_std]` + `alloc`).
#![no_std]
#![deny(missing_docs)]

extern crate alloc;
#[cfg(feature = "std")]
extern crate std;

pub mod aggregate;
#[cfg(feature = "arrow")]
pub mod anndata;
#[cfg(feature = "arrow")]
pub mod arrow;
pub mod check;
#[cfg(feature = "std")]
pub mod daf;
pub(crate) mod engine;
pub mod error;
pub mod index;
pub mod list;
pub mod model;
pub mod pytables;
pub mod query;
#[cfg(feature = "arrow")]
pub mod rowtable;
pub mod selection;
pub mod text;
#[cfg(feature = "std")]
pub mod write;

pub use error::{Error, Result};
pub use list::{ListColumn, ListElements, ListSlice};
pub use model::{
    find_tables, Categories, Column, ColumnKind, ColumnSlice, Fill, Table, TableColumn,
    CLASS_VALUE, RESERVED_NAMES,
};
pub use selection::Selection;
