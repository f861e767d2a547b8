//! Resource bounds as a value, threaded through every decoder.

/// Bounds on what a file may make the reader do. Every allocation sized from
/// file data is checked against the bytes that remain or against one of these.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Maximum dataspace rank.
    pub max_rank: usize,
    /// Maximum object header chunks (continuations) per object header.
    pub max_header_chunks: usize,
    /// Maximum messages per object header.
    pub max_messages: usize,
    /// Maximum B-tree depth (v1 and v2) and fractal-heap indirect depth.
    pub max_btree_depth: usize,
    /// Maximum nesting of datatypes (compound/array/vlen/enum inside each other).
    pub max_datatype_nesting: usize,
    /// Maximum soft/external link hops when resolving one path.
    pub max_link_hops: usize,
    /// Maximum size in bytes of one metadata block read from the file.
    pub max_metadata_block: u64,
    /// Maximum size in bytes of one decoded (decompressed) chunk.
    pub max_chunk_bytes: u64,
    /// Maximum bytes of decoded data materialized by one read call. The
    /// default is [`default_max_read_bytes`]: half the memory this process
    /// may use (with `std`), 1 TiB without `std`.
    pub max_read_bytes: u64,
    /// Maximum bytes of data one streamed pass over a dataset may visit
    /// (hashing for the canonical dump, block-by-block checks): bounds work,
    /// not memory, so unlike `max_read_bytes` it is the same on every machine.
    pub max_stream_bytes: u64,
    /// Upper bound in bytes of each dataset's chunk cache (std; see
    /// `Dataset::chunk_cache`): its budget starts at the smaller of this and
    /// 4 MiB.
    pub cache_bytes: u64,
    /// Maximum number of objects visited by one walk of the file.
    pub max_objects: usize,
    /// Maximum number of entries (links, attributes, chunks, heap objects) in one index.
    pub max_index_entries: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: 65_536,
            max_messages: 1 << 20,
            max_btree_depth: 64,
            max_datatype_nesting: 32,
            max_link_hops: 40,
            max_metadata_block: 1 << 32,
            max_chunk_bytes: 1 << 32,
            max_read_bytes: default_max_read_bytes(),
            max_stream_bytes: 1 << 40,
            cache_bytes: 64 << 20,
            max_objects: 1 << 26,
            max_index_entries: 1 << 40,
        }
    }
}

impl Limits {
    /// No limits beyond what the data itself bounds.
    pub fn unlimited() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: usize::MAX,
            max_messages: usize::MAX,
            max_btree_depth: 1024,
            max_datatype_nesting: 1024,
            max_link_hops: 1024,
            max_metadata_block: u64::MAX,
            max_chunk_bytes: u64::MAX,
            max_read_bytes: u64::MAX,
            max_stream_bytes: u64::MAX,
            cache_bytes: 64 << 20,
            max_objects: usize::MAX,
            max_index_entries: u64::MAX,
        }
    }
    /// Tight limits for fuzzing: small enough that no input can exhaust memory or time.
    pub fn tight() -> Self {
        Limits {
            max_rank: 32,
            max_header_chunks: 256,
            max_messages: 4096,
            max_btree_depth: 16,
            max_datatype_nesting: 16,
            max_link_hops: 8,
            max_metadata_block: 16 << 20,
            max_chunk_bytes: 16 << 20,
            max_read_bytes: 64 << 20,
            max_stream_bytes: 64 << 20,
            cache_bytes: 4 << 20,
            max_objects: 10_000,
            max_index_entries: 1 << 20,
        }
    }
}

/// The default `Limits::max_read_bytes`: half of the memory this process can
/// use, the smallest of physical memory (`sysconf(_SC_PHYS_PAGES) ×
/// _SC_PAGE_SIZE`), the cgroup memory limit (`/sys/fs/cgroup/memory.max`, or
/// v1's `memory/memory.limit_in_bytes`) and the address-space limit
/// (`RLIMIT_AS`), computed once per process. Without `std`, or where none of
/// these can be read, 1 TiB.
///
/// Why half: on Linux a large allocation "succeeds" (overcommit) and the
/// process is killed when the pages are touched, so the bound has to come
/// before the allocation. One read materializes its result plus transient
/// buffers (decoded chunks per worker thread, a conversion's source), and
/// the caller usually holds other data too; half leaves room for that while
/// still admitting any dataset that could reasonably be read whole. Larger
/// reads fail with `Limit`; read them in slices, or raise the limit.
pub fn default_max_read_bytes() -> u64 {
    #[cfg(feature = "std")]
    {
        static ONCE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
        *ONCE.get_or_init(|| usable_memory().map_or(FALLBACK_READ_BYTES, |m| m / 2))
    }
    #[cfg(not(feature = "std"))]
    FALLBACK_READ_BYTES
}

/// `max_read_bytes` when the machine's memory is unknown (no `std`).
const FALLBACK_READ_BYTES: u64 = 1 << 40;

/// The memory this process may use: the smallest known bound, if any.
#[cfg(feature = "std")]
fn usable_memory() -> Option<u64> {
    [
        physical_memory(),
        cgroup_memory_limit(),
        address_space_limit(),
    ]
    .into_iter()
    .flatten()
    .filter(|&m| m > 0)
    .min()
}

#[cfg(all(feature = "std", unix))]
fn physical_memory() -> Option<u64> {
    // SAFETY: `sysconf` has no preconditions; it returns -1 for unknown names.
    let (pages, page) = unsafe {
        (
            libc::sysconf(libc::_SC_PHYS_PAGES),
            libc::sysconf(libc::_SC_PAGE_SIZE),
        )
    };
    let pages = u64::try_from(pages).ok()?;
    let page = u64::try_from(page).ok()?;
    pages.checked_mul(page)
}

#[cfg(all(feature = "std", not(unix)))]
fn physical_memory() -> Option<u64> {
    None
}

/// The cgroup (v2, else v1) memory limit of this process's namespace root,
/// when one is set ("max" and v1's huge "unlimited" value read as none).
#[cfg(feature = "std")]
fn cgroup_memory_limit() -> Option<u64> {
    [
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
    ]
    .iter()
    .find_map(|p| std::fs::read_to_string(p).ok())
    .and_then(|s| s.trim().parse::<u64>().ok())
    .filter(|&m| m < 1 << 60)
}

#[cfg(all(feature = "std", unix))]
fn address_space_limit() -> Option<u64> {
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `r` is a valid, writable `rlimit`.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut r) } != 0 || r.rlim_cur == libc::RLIM_INFINITY
    {
        return None;
    }
    #[allow(clippy::useless_conversion, reason = "rlim_t is not u64 on every unix")]
    u64::try_from(r.rlim_cur).ok()
}

#[cfg(all(feature = "std", not(unix)))]
fn address_space_limit() -> Option<u64> {
    None
}

#[cfg(all(test, feature = "std"))]
mod tests {
    use super::*;

    #[test]
    fn default_read_limit_is_half_of_usable_memory() {
        let limit = Limits::default().max_read_bytes;
        assert_eq!(limit, default_max_read_bytes());
        // Independent oracle: /proc/meminfo's MemTotal (Linux), in kB.
        #[cfg(target_os = "linux")]
        {
            let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap();
            let kb: u64 = meminfo
                .lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
                .unwrap();
            assert!(limit <= kb * 1024 / 2, "{limit} > half of MemTotal {kb} kB");
            assert!(limit >= 1 << 20, "{limit}");
        }
    }
}
