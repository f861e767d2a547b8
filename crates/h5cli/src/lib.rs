//! Library part of the `h5` command: the canonical dump and the text dumps,
//! reusable by tests.
#![deny(missing_docs)]

pub mod canon;
pub mod check;
pub mod cli;
pub mod diff;
mod dims;
pub mod repack;
pub mod table;
pub mod table_anndata;
pub mod table_import;
pub mod table_io;
pub mod table_rows;
#[cfg(feature = "sql")]
pub mod table_sql;
pub mod text;
