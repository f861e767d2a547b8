//! On-disk structures of the HDF5 File Format Specification 4.0, one file per
//! structure. Decoders get bytes (a [`crate::codec::Cursor`]) and a [`crate::Ctx`];
//! they never do I/O. Following addresses is the job of [`crate::read`].

pub mod btree_v1;
pub mod btree_v2;
pub mod datatype;
pub mod extensible_array;
pub mod fixed_array;
pub mod fractal_heap;
pub mod free_space;
pub mod global_heap;
pub mod local_heap;
pub mod mdci;
pub mod message;
pub mod object_header;
pub mod selection;
pub mod sohm;
pub mod superblock;
pub mod symbol_table_node;
pub mod vds;
