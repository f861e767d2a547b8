//! Reading global heap collections (`GCOL`), with a small cache.

use crate::codec::Cursor;
use crate::data::HeapResolver;
use crate::error::{Error, Result};
use crate::format::global_heap::{decode_collection_size, header_len, Collection, ObjectSpan};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::BTreeMap;
use alloc::rc::Rc;
use alloc::vec::Vec;
use core::cell::RefCell;

/// Collections kept in the cache at most.
const CACHE_COLLECTIONS: usize = 64;

#[derive(Debug)]
struct Cached {
    /// The collection's bytes; `None` when the file is in memory (mapped),
    /// where they are lent from the storage at `addr` instead of copied.
    bytes: Option<Vec<u8>>,
    addr: Addr,
    size: u64,
    objects: Vec<(u16, ObjectSpan)>,
}

/// A global heap reader over one file. Keeps the last few collections read
/// (it is therefore not `Sync`; make one per thread).
#[derive(Debug)]
pub struct GlobalHeap {
    st: Storage,
    ctx: Ctx,
    cache: RefCell<BTreeMap<u64, Rc<Cached>>>,
    /// The collection used last (consecutive elements mostly share one).
    last: RefCell<Option<(u64, Rc<Cached>)>>,
}

impl GlobalHeap {
    /// A reader over `st`.
    pub fn new(st: &Storage, ctx: Ctx) -> Self {
        GlobalHeap {
            st: st.clone(),
            ctx,
            cache: RefCell::new(BTreeMap::new()),
            last: RefCell::new(None),
        }
    }

    fn collection(&self, addr: Addr) -> Result<Rc<Cached>> {
        if let Some((a, c)) = &*self.last.borrow() {
            if *a == addr.0 {
                return Ok(c.clone());
            }
        }
        let c = self.collection_slow(addr)?;
        *self.last.borrow_mut() = Some((addr.0, c.clone()));
        Ok(c)
    }

    fn collection_slow(&self, addr: Addr) -> Result<Rc<Cached>> {
        if let Some(c) = self.cache.borrow().get(&addr.0) {
            return Ok(c.clone());
        }
        let hlen = header_len(self.ctx.sizes) as u64;
        let head = self.st.read(addr, hlen)?;
        let abs = self.st.absolute(addr, hlen)?;
        let size = decode_collection_size(&mut Cursor::new(&head, abs), self.ctx)?;
        if size > self.ctx.limits.max_metadata_block {
            return Err(Error::limit(alloc::format!(
                "global heap collection at {addr} of {size} bytes"
            )));
        }
        let (bytes, objects) = match self.st.slice(addr, size) {
            Some(mapped) => (
                None,
                Collection::decode_list(&mut Cursor::new(mapped, abs), self.ctx)?,
            ),
            None => {
                let bytes = self.st.read(addr, size)?;
                let objects = Collection::decode_list(&mut Cursor::new(&bytes, abs), self.ctx)?;
                (Some(bytes), objects)
            }
        };
        let c = Rc::new(Cached {
            bytes,
            addr,
            size,
            objects,
        });
        let mut cache = self.cache.borrow_mut();
        if cache.len() >= CACHE_COLLECTIONS {
            cache.pop_first();
        }
        cache.insert(addr.0, c.clone());
        Ok(c)
    }
}

impl GlobalHeap {
    /// The bytes of object `index` of the collection at `collection`, lent.
    fn object_bytes<R>(
        &self,
        collection: Addr,
        index: u32,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R> {
        let c = self.collection(collection)?;
        let all = self.collection_bytes(&c);
        Self::object_in(&c, all, collection, index, self.st.base()).map(f)
    }

    /// A cached collection's bytes (lent from the storage when mapped).
    fn collection_bytes<'a>(&'a self, c: &'a Cached) -> Option<&'a [u8]> {
        match &c.bytes {
            Some(b) => Some(b.as_slice()),
            None => self.st.slice(c.addr, c.size),
        }
    }

    /// Object `index` of `c`, whose bytes are `all`.
    fn object_in<'a>(
        c: &Cached,
        all: Option<&'a [u8]>,
        collection: Addr,
        index: u32,
        base: u64,
    ) -> Result<&'a [u8]> {
        let span = u16::try_from(index)
            .ok()
            .filter(|&i| i != 0)
            .and_then(|i| Collection::find(&c.objects, i));
        let Some(span) = span else {
            return Err(Error::corrupt(
                alloc::format!("global heap collection {collection} has no object {index}"),
                base.saturating_add(collection.0),
            ));
        };
        span.start
            .checked_add(span.len)
            .and_then(|end| all?.get(span.start..end))
            .ok_or_else(|| {
                Error::corrupt("global heap object outside its collection", collection.0)
            })
    }
}

impl HeapResolver for GlobalHeap {
    fn global_heap_object(&self, collection: Addr, index: u32) -> Result<Vec<u8>> {
        self.object_bytes(collection, index, <[u8]>::to_vec)
    }

    fn with_global_heap_prefix(
        &self,
        collection: Addr,
        index: u32,
        len: usize,
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        self.object_bytes(collection, index, |obj| f(obj.get(..len).unwrap_or(obj)))
    }

    fn with_global_heap_prefixes(
        &self,
        collection: Addr,
        objects: &[(u32, usize)],
        f: &mut dyn FnMut(&[u8]),
    ) -> Result<()> {
        // One lookup and one storage slice for the whole run.
        let c = self.collection(collection)?;
        let all = self.collection_bytes(&c);
        let base = self.st.base();
        for &(index, len) in objects {
            let obj = Self::object_in(&c, all, collection, index, base)?;
            f(obj.get(..len).unwrap_or(obj));
        }
        Ok(())
    }
}
