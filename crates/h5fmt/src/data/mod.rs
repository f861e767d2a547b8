//! Element layout and values: decoding raw element bytes of any datatype into
//! [`Value`]s, byte order, conversions.

pub mod convert;
pub mod decode;
pub mod hyperslab;
pub(crate) mod native;
pub mod record;
pub mod value;

pub use value::{Reference, Region, Value};

use crate::error::Result;
use crate::Addr;
use alloc::vec::Vec;

/// Access to the global heap, needed to decode variable-length data and references.
pub trait HeapResolver {
    /// The bytes of object `index` in the global heap collection at `collection`.
    ///
    /// # Errors
    /// Whatever reading the collection fails with.
    fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>>;

    /// Call `f` with the first `len` bytes of object `index` of the collection
    /// at `collection` (fewer when the object is shorter), without copying
    /// when the resolver can lend them. The default copies through
    /// [`HeapResolver::global_heap_object`].
    ///
    /// # Errors
    /// As [`HeapResolver::global_heap_object`].
    fn with_global_heap_prefix(
        &self,
        collection: Addr,
        index: u32,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        let obj = self.global_heap_object(collection, index)?;
        f(obj.get(..len).unwrap_or(&obj));
        Ok(())
    }

    /// Call `f` once per `(index, len)` of `objects`, in order, with the
    /// first `len` bytes of object `index` (fewer when the object is
    /// shorter), all of them in the collection at `collection`: a run of
    /// variable-length elements stored together. Resolvers that cache
    /// collections find the collection once for the whole run. The default
    /// calls [`HeapResolver::with_global_heap_prefix`] per object.
    ///
    /// # Errors
    /// As [`HeapResolver::global_heap_object`], for the first object that fails.
    fn with_global_heap_prefixes(
        &self,
        collection: Addr,
        objects: &[(u32, usize)],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        for &(index, len) in objects {
            self.with_global_heap_prefix(collection, index, len, f)?;
        }
        Ok(())
    }

    /// The current dimensions of the dataspace of the dataset whose object
    /// header is at `obj`. Needed only to decode region references whose
    /// selection is "all" (the selection does not store the extent). The
    /// default fails with `Unsupported`.
    ///
    /// # Errors
    /// Whatever reading the object header fails with; `Unsupported` by default.
    fn dataset_dims(&self, obj: Addr) -> Result<Vec<u64>> {
        Err(crate::Error::unsupported(alloc::format!(
            "dataspace of the dataset at {obj} (region reference selecting \"all\") without a file"
        )))
    }
}

/// A resolver for data that has no variable-length parts; fails on any heap access.
pub struct NoHeap;

impl HeapResolver for NoHeap {
    fn global_heap_object(&self, collection: Addr, _index: u32) -> Result<Vec<u8>> {
        Err(crate::Error::unsupported(alloc::format!(
            "global heap access (collection {collection}) without a file"
        )))
    }
}
