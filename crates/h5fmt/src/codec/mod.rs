//! Bounds-checked byte cursors and the checksums of the format.

pub mod checksum;
pub mod cursor;

pub use checksum::{fletcher32, lookup3};
pub use cursor::Cursor;
