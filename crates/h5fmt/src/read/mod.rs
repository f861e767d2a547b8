//! The lazy high-level read API: [`File`], [`Group`], [`Dataset`], [`Attribute`].
//! This is the only layer that follows addresses.

pub mod btree_v1;
pub mod btree_v2;
#[cfg(feature = "std")]
pub mod chunk_cache;
pub mod chunk_select;
pub mod chunks;
pub mod dimscale;
pub mod fractal_heap;
pub mod global_heap;
pub mod local_heap;
pub mod mdci;
pub mod object_header;
pub mod sohm;
pub mod vds;

mod api;
mod typed;
mod walk;

pub use dimscale::{DimensionRef, ScaleRef};
pub use typed::compound_member;
pub use walk::Walk;

pub use api::{
    Attribute, Dataset, File, FileHeap, Group, LayoutClass, Link, NamedDatatype, Object,
};
