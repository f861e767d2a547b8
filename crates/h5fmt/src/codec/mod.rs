//! Bounds-checked byte cursors, the encoder that mirrors them, and the
//! checksums of the format.

pub mod checksum;
pub mod cursor;
pub mod encoder;

pub use checksum::{fletcher32, lookup3};
pub use cursor::Cursor;
pub use encoder::Encoder;
