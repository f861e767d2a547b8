//! A bounded cache of decoded chunks (std), one per [`crate::Dataset`], like
//! libhdf5's raw-data chunk cache (`rdcc`): repeated or overlapping
//! selections do not decode the same chunk twice while it stays cached.

use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;
use std::sync::Mutex;

/// Cache budget of a dataset when [`crate::Limits::cache_bytes`] does not
/// ask for less: 4 MiB (libhdf5's default is 1 MiB).
pub const DEFAULT_CHUNK_CACHE_BYTES: u64 = 4 << 20;

/// Counters of a [`ChunkCache`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChunkCacheStats {
    /// Chunks served from the cache.
    pub hits: u64,
    /// Chunks looked up and not found (then decoded).
    pub misses: u64,
    /// Chunks held now.
    pub entries: usize,
    /// Decoded bytes held now.
    pub bytes: usize,
}

#[derive(Debug, Default)]
struct Inner {
    budget: usize,
    used: usize,
    tick: u64,
    hits: u64,
    misses: u64,
    /// Chunk address → (last use, decoded bytes).
    map: BTreeMap<u64, (u64, Arc<Vec<u8>>)>,
    /// Addresses of chunks read once and not kept (see
    /// [`ChunkCache::seen_before`]), oldest first.
    ghosts: alloc::collections::VecDeque<u64>,
}

/// Addresses remembered by [`ChunkCache::seen_before`].
const GHOSTS: usize = 64;

/// Decoded chunks keyed by their address in the file, least recently used
/// evicted first, never holding more than its budget in bytes (a chunk
/// larger than the budget is not kept). Shared by the clones of a dataset.
#[derive(Debug, Default)]
pub struct ChunkCache {
    inner: Mutex<Inner>,
}

impl ChunkCache {
    /// An empty cache holding at most `budget` bytes (0 disables it).
    pub fn new(budget: u64) -> Self {
        let c = ChunkCache::default();
        c.set_budget(budget);
        c
    }

    /// The budget in bytes.
    pub fn budget(&self) -> u64 {
        self.with(|i| i.budget as u64).unwrap_or(0)
    }

    /// Change the budget, evicting what no longer fits (0 empties and
    /// disables the cache).
    pub fn set_budget(&self, budget: u64) {
        self.with(|i| {
            i.budget = usize::try_from(budget).unwrap_or(usize::MAX);
            i.evict_to(i.budget);
        });
    }

    /// Hit/miss counters and current size.
    pub fn stats(&self) -> ChunkCacheStats {
        self.with(|i| ChunkCacheStats {
            hits: i.hits,
            misses: i.misses,
            entries: i.map.len(),
            bytes: i.used,
        })
        .unwrap_or_default()
    }

    /// Drop every cached chunk (the counters stay).
    pub fn clear(&self) {
        self.with(|i| i.evict_to(0));
    }

    /// Whether chunks of `len` bytes can be kept at all.
    pub(crate) fn admits(&self, len: usize) -> bool {
        self.with(|i| len <= i.budget).unwrap_or(false)
    }

    /// The cached chunk at `addr` if it holds at least its first `len`
    /// bytes (a reader may have decoded only a chunk's first rows; counted
    /// as a hit or a miss).
    pub(crate) fn get(&self, addr: u64, len: usize) -> Option<Arc<Vec<u8>>> {
        self.with(|i| {
            i.tick += 1;
            let tick = i.tick;
            match i.map.get_mut(&addr) {
                Some((t, d)) if d.len() >= len => {
                    *t = tick;
                    let d = d.clone();
                    i.hits += 1;
                    Some(d)
                }
                _ => {
                    i.misses += 1;
                    None
                }
            }
        })
        .flatten()
    }

    /// Whether a chunk at `addr` is cached (not counted as a hit or miss).
    pub(crate) fn contains(&self, addr: u64) -> bool {
        self.with(|i| i.map.contains_key(&addr)).unwrap_or(false)
    }

    /// Whether the chunk at `addr` was asked about before (and is still
    /// remembered, among the last 64 addresses); if not, remembers it.
    /// Single-element reads (a binary search's probes, each in another
    /// chunk) keep a chunk only when it is read a second time: the first
    /// read decodes into a reused buffer instead of a fresh one that the
    /// cache would hold (fresh pages cost a fault and a clear each).
    pub(crate) fn seen_before(&self, addr: u64) -> bool {
        self.with(|i| {
            if let Some(k) = i.ghosts.iter().position(|&a| a == addr) {
                i.ghosts.remove(k);
                return true;
            }
            if i.ghosts.len() >= GHOSTS {
                i.ghosts.pop_front();
            }
            i.ghosts.push_back(addr);
            false
        })
        .unwrap_or(true)
    }

    /// Keep the decoded chunk at `addr`, evicting the least recently used
    /// ones to stay within the budget; a chunk over the budget is dropped.
    pub(crate) fn insert(&self, addr: u64, data: Arc<Vec<u8>>) {
        self.with(|i| {
            let len = data.len();
            if len > i.budget {
                return;
            }
            if let Some((_, old)) = i.map.remove(&addr) {
                i.used -= old.len();
            }
            i.evict_to(i.budget - len);
            i.tick += 1;
            let tick = i.tick;
            i.used += len;
            i.map.insert(addr, (tick, data));
        });
    }

    fn with<T>(&self, f: impl FnOnce(&mut Inner) -> T) -> Option<T> {
        // A poisoned lock only means another reader panicked mid-update of
        // counters; the map itself is always consistent.
        let mut g = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        Some(f(&mut g))
    }
}

impl Inner {
    /// Evict least recently used chunks until at most `target` bytes are held.
    fn evict_to(&mut self, target: usize) {
        while self.used > target {
            let Some((&addr, _)) = self.map.iter().min_by_key(|(_, (t, _))| *t) else {
                self.used = 0;
                return;
            };
            if let Some((_, d)) = self.map.remove(&addr) {
                self.used = self.used.saturating_sub(d.len());
                // No reader holds it any more: its buffer serves the next decode.
                if let Ok(v) = Arc::try_unwrap(d) {
                    crate::io::recycle(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lru_within_budget() {
        let c = ChunkCache::new(10);
        c.insert(1, Arc::new(alloc::vec![1; 4]));
        c.insert(2, Arc::new(alloc::vec![2; 4]));
        assert!(c.get(1, 4).is_some()); // 1 is now the most recent
        c.insert(3, Arc::new(alloc::vec![3; 4])); // evicts 2
        assert!(c.get(2, 0).is_none());
        assert_eq!(
            c.get(3, 4).as_deref().map(Vec::as_slice),
            Some(&[3u8; 4][..])
        );
        assert!(c.get(1, 1).is_some());
        // A chunk of which fewer bytes are cached than asked for is a miss.
        assert!(c.get(1, 5).is_none());
        c.insert(4, Arc::new(alloc::vec![4; 11])); // over budget: not kept
        assert!(c.get(4, 0).is_none());
        let s = c.stats();
        assert_eq!((s.entries, s.bytes, s.hits, s.misses), (2, 8, 3, 3));
        c.set_budget(5);
        assert_eq!(c.stats().entries, 1);
        // Second reads of a chunk are told apart from first ones, within
        // the last 64 addresses remembered.
        assert!(!c.seen_before(7));
        assert!(c.seen_before(7));
        assert!(!c.seen_before(7));
        for a in 100..100 + GHOSTS as u64 {
            assert!(!c.seen_before(a));
        }
        assert!(!c.seen_before(7)); // forgotten
        assert!(c.seen_before(100 + GHOSTS as u64 - 1));
        c.set_budget(0);
        assert_eq!(c.stats().bytes, 0);
        assert!(!c.admits(1));
    }
}
