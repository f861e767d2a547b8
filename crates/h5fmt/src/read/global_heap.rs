//! Reading global heap collections (`GCOL`), with a small cache.

use crate::data::HeapResolver;
use crate::error::{Error, Result};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// A global heap reader over one file.
#[derive(Debug)]
pub struct GlobalHeap {
    st: Storage,
    ctx: Ctx,
}

impl GlobalHeap {
    /// A reader over `st`.
    pub fn new(st: &Storage, ctx: Ctx) -> Self {
        GlobalHeap {
            st: st.clone(),
            ctx,
        }
    }
}

impl HeapResolver for GlobalHeap {
    fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>> {
        let _ = (&self.st, self.ctx, index);
        Err(Error::unsupported(alloc::format!(
            "global heap collection {collection}: not implemented yet"
        )))
    }
}
