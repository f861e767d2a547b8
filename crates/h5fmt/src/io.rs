//! Byte sources: `&[u8]`/`Vec<u8>` (no_std), files and mmap (std).

use crate::addr::Addr;
use crate::error::{Error, Result};
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use alloc::vec::Vec;

/// Random-access reads from a byte source.
pub trait ReadAt: Send + Sync {
    /// Total length in bytes.
    fn len(&self) -> u64;
    /// Whether the source is empty.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Fill `buf` from absolute position `pos`.
    ///
    /// # Errors
    /// `Truncated` past the end, `Io` on failure.
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()>;
    /// The whole source as one slice, when it is in memory (zero-copy reads).
    fn as_slice(&self) -> Option<&[u8]> {
        None
    }
}

/// A zero-filled buffer of `n` bytes, failing with `Limit` rather than
/// aborting when the allocator cannot provide it. With `std` the memory comes
/// from the zeroing allocator (fresh pages are not written twice) or from
/// this thread's buffers given back by [`recycle`].
///
/// # Errors
/// `Limit` when the allocation fails.
pub fn zeroed_buffer(n: usize) -> Result<Vec<u8>> {
    zeroed(n, false)
}

/// As [`zeroed_buffer`], for a large buffer filled by one big copy: on Linux
/// it asks for transparent huge pages, as numpy does, which turns hundreds of
/// thousands of page faults into a few hundred (5x faster contiguous reads
/// here). Chunk-by-chunk filling measured no gain from it, so only this
/// variant asks.
///
/// # Errors
/// `Limit` when the allocation fails.
pub fn large_buffer(n: usize) -> Result<Vec<u8>> {
    zeroed(n, true)
}

fn zeroed(n: usize, huge: bool) -> Result<Vec<u8>> {
    #[cfg(not(all(feature = "std", target_os = "linux")))]
    let _ = huge;
    #[cfg(feature = "std")]
    {
        if n == 0 {
            return Ok(Vec::new());
        }
        if let Some(mut v) = pool_take(n) {
            v.clear();
            v.resize(n, 0);
            return Ok(v);
        }
        let layout = core::alloc::Layout::array::<u8>(n)
            .map_err(|_| Error::limit(alloc::format!("cannot allocate {n} bytes")))?;
        // SAFETY: `layout` has a non-zero size.
        let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(Error::limit(alloc::format!("cannot allocate {n} bytes")));
        }
        #[cfg(target_os = "linux")]
        if huge {
            advise_huge(ptr, n);
        }
        // SAFETY: `ptr` was allocated by the global allocator with the layout
        // of `n` u8s and all `n` bytes are initialized (zero).
        Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
    }
    #[cfg(not(feature = "std"))]
    {
        let mut v = Vec::new();
        v.try_reserve_exact(n)
            .map_err(|_| Error::limit(alloc::format!("cannot allocate {n} bytes")))?;
        v.resize(n, 0);
        Ok(v)
    }
}

/// An empty `Vec` with room for `n` values, failing with `Limit` (naming
/// `what` and the size) rather than aborting when the allocator cannot
/// provide it: for capacities sized by file content. Reserving costs no pass
/// over the memory.
///
/// # Errors
/// `Limit` when the allocation fails or its size overflows.
pub fn try_vec<T>(n: usize, what: &str) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        Error::limit(alloc::format!(
            "cannot allocate {} bytes for {what}",
            (n as u128).saturating_mul(core::mem::size_of::<T>() as u128)
        ))
    })?;
    Ok(v)
}

/// A buffer of `n` bytes whose contents are unspecified (initialized, but
/// possibly left over from an earlier use on this thread), for outputs that
/// are overwritten or truncated to what was written: a buffer given back by
/// [`recycle`] is reused without being cleared first; otherwise it is a
/// fresh zeroed allocation (whose pages the kernel provides zeroed anyway).
///
/// # Errors
/// `Limit` when the allocation fails.
pub(crate) fn scratch_buffer(n: usize) -> Result<Vec<u8>> {
    #[cfg(feature = "std")]
    if let Some(mut v) = pool_take(n) {
        if v.len() >= n {
            v.truncate(n);
        } else {
            v.resize(n, 0);
        }
        return Ok(v);
    }
    zeroed(n, false)
}

/// Buffers at most this large are kept for reuse by [`recycle`].
#[cfg(feature = "std")]
const POOL_MAX_BYTES: usize = 16 << 20;
/// Buffers kept per thread.
#[cfg(feature = "std")]
const POOL_LEN: usize = 4;
/// Buffers, and bytes, kept process-wide by threads that ended (the chunk
/// decoding workers live for one read: what they recycled serves the next).
#[cfg(feature = "std")]
const SHARED_LEN: usize = 8;
#[cfg(feature = "std")]
const SHARED_MAX_BYTES: usize = 16 << 20;

/// A thread's recycled buffers; when the thread ends they move to [`SHARED`]
/// (within its bounds) instead of being freed.
#[cfg(feature = "std")]
struct Pool(Vec<Vec<u8>>);

#[cfg(feature = "std")]
impl Drop for Pool {
    fn drop(&mut self) {
        let Ok(mut shared) = SHARED.lock() else {
            return;
        };
        for v in self.0.drain(..) {
            shared_put(&mut shared, v);
        }
    }
}

#[cfg(feature = "std")]
static SHARED: std::sync::Mutex<Vec<Vec<u8>>> = std::sync::Mutex::new(Vec::new());

#[cfg(feature = "std")]
fn shared_put(shared: &mut Vec<Vec<u8>>, v: Vec<u8>) {
    let held: usize = shared.iter().map(Vec::capacity).sum();
    if shared.len() < SHARED_LEN && held.saturating_add(v.capacity()) <= SHARED_MAX_BYTES {
        shared.push(v);
    }
}

#[cfg(feature = "std")]
std::thread_local! {
    static POOL: core::cell::RefCell<Pool> = const { core::cell::RefCell::new(Pool(Vec::new())) };
}

#[cfg(feature = "std")]
fn pool_take(n: usize) -> Option<Vec<u8>> {
    if n > POOL_MAX_BYTES {
        return None;
    }
    let fits = |v: &Vec<u8>| v.capacity() >= n && v.capacity() <= n.saturating_mul(2);
    let local = POOL
        .try_with(|p| {
            let mut p = p.try_borrow_mut().ok()?;
            let i = p.0.iter().position(fits)?;
            Some(p.0.swap_remove(i))
        })
        .ok()
        .flatten();
    local.or_else(|| {
        let mut shared = SHARED.lock().ok()?;
        let i = shared.iter().position(fits)?;
        Some(shared.swap_remove(i))
    })
}

/// Give a buffer back for reuse by `scratch_buffer` and `zeroed_buffer`
/// (chunk decoding allocates and frees buffers of the same sizes over and
/// over; fresh pages from the kernel cost a page fault and a clear each, and
/// glibc clears a reused allocation for `calloc`). Kept by this thread, and
/// by the process (boundedly) after the thread ends.
pub fn recycle(v: Vec<u8>) {
    #[cfg(feature = "std")]
    {
        if v.capacity() == 0 || v.capacity() > POOL_MAX_BYTES {
            return;
        }
        let _ = POOL.try_with(|p| {
            if let Ok(mut p) = p.try_borrow_mut() {
                if p.0.len() < POOL_LEN {
                    p.0.push(v);
                }
            }
        });
    }
    #[cfg(not(feature = "std"))]
    drop(v);
}

#[cfg(all(feature = "std", target_os = "linux"))]
pub(crate) fn advise_huge(ptr: *mut u8, n: usize) {
    const HUGE: usize = 2 << 20;
    if n < 4 * HUGE {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE);
    let end = (ptr as usize + n) & !(HUGE - 1);
    if end > start {
        // SAFETY: [start, end) lies inside the allocation just made; the advice
        // only changes how the kernel backs those pages, not their contents.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

fn slice_read(data: &[u8], pos: u64, buf: &mut [u8]) -> Result<()> {
    let start = usize::try_from(pos).map_err(|_| Error::truncated("read past end of file", pos))?;
    let end = start
        .checked_add(buf.len())
        .ok_or_else(|| Error::truncated("read past end of file", pos))?;
    match data.get(start..end) {
        Some(s) => {
            buf.copy_from_slice(s);
            Ok(())
        }
        None => Err(Error::truncated(
            alloc::format!(
                "read of {} bytes past end of file ({} bytes)",
                buf.len(),
                data.len()
            ),
            pos,
        )),
    }
}

impl ReadAt for Vec<u8> {
    fn len(&self) -> u64 {
        self.as_slice().len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        slice_read(self, pos, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl ReadAt for Arc<[u8]> {
    fn len(&self) -> u64 {
        (**self).len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        slice_read(self, pos, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
}

impl ReadAt for &'static [u8] {
    fn len(&self) -> u64 {
        (**self).len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        slice_read(self, pos, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(self)
    }
}

/// A memory-mapped file (std).
#[cfg(feature = "std")]
pub struct MmapSource {
    map: memmap2::Mmap,
    /// The same file for positioned reads of large copies (no page faults on the map).
    file: Option<std::fs::File>,
}

/// Copies at least this large go through `pread` rather than the map: the
/// kernel copies from its page cache without faulting the map in page by page.
#[cfg(feature = "std")]
const PREAD_MIN: usize = 256 * 1024;

#[cfg(feature = "std")]
impl MmapSource {
    /// Map `file` read-only.
    ///
    /// # Errors
    /// `Io` when mapping fails.
    pub fn new(file: &std::fs::File) -> Result<Self> {
        // SAFETY: the map is read-only; a concurrent writer truncating the file
        // could fault, which is the documented risk of every mmap reader. Callers
        // that cannot accept it use `FileSource`.
        let map = unsafe { memmap2::Mmap::map(file) }?;
        Ok(MmapSource {
            map,
            file: file.try_clone().ok(),
        })
    }
}

#[cfg(feature = "std")]
impl ReadAt for MmapSource {
    fn len(&self) -> u64 {
        self.map.len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        #[cfg(unix)]
        if buf.len() >= PREAD_MIN {
            if let Some(f) = &self.file {
                let end = pos.checked_add(buf.len() as u64);
                if end.is_some_and(|e| e <= self.len()) && pread_parallel(f, pos, buf) {
                    return Ok(());
                }
            }
        }
        slice_read(&self.map, pos, buf)
    }
    fn as_slice(&self) -> Option<&[u8]> {
        Some(&self.map)
    }
}

/// The number of cores this process may use, asked once: on Linux,
/// `available_parallelism` reads the cgroup's CPU quota files on every call
/// (about 50 µs, paid by every chunked read).
#[cfg(feature = "std")]
pub(crate) fn cores() -> usize {
    static CORES: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CORES.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `pread` into `buf`, split across the cores for large reads: the kernel
/// then clears the fresh pages of `buf` and copies from its page cache on
/// several threads (those two are all of a large contiguous read's time).
/// The threads take pieces of `buf` in turn rather than one share each, so
/// a thread the scheduler holds back on a busy machine delays the read by
/// one piece, not by its whole share; pieces begin on huge-page boundaries
/// of `buf`, so no two threads fault one huge page at once (each would
/// clear it, one copy then thrown away). The calling thread is a worker.
#[cfg(all(feature = "std", unix))]
fn pread_parallel(f: &std::fs::File, pos: u64, buf: &mut [u8]) -> bool {
    use core::sync::atomic::{AtomicBool, Ordering};
    use std::os::unix::fs::FileExt;
    /// Bytes per thread at least: below, starting a thread costs about
    /// what it saves.
    const PART_MIN: usize = 8 << 20;
    /// Bytes per piece: a multiple of the 2 MiB huge page.
    const PIECE: usize = 4 << 20;
    let threads = cores().min(buf.len() / PART_MIN).min(8);
    if threads <= 1 {
        return f.read_exact_at(buf, pos).is_ok();
    }
    // The first piece ends at a huge-page boundary of `buf`'s memory.
    let head = PIECE - (buf.as_ptr() as usize % PIECE);
    let (first, rest) = buf.split_at_mut(head.min(buf.len()));
    let mut pieces: Vec<(u64, &mut [u8])> = Vec::with_capacity(rest.len() / PIECE + 2);
    pieces.push((pos, first));
    let mut at = pos.saturating_add(head as u64);
    for p in rest.chunks_mut(PIECE) {
        let len = p.len() as u64;
        pieces.push((at, p));
        at = at.saturating_add(len);
    }
    let queue = std::sync::Mutex::new(pieces.into_iter());
    let ok = AtomicBool::new(true);
    let work = || {
        while ok.load(Ordering::Relaxed) {
            // The lock is held only to take the next piece.
            let next = queue.lock().map(|mut q| q.next());
            let Ok(Some((at, dst))) = next else {
                if next.is_err() {
                    ok.store(false, Ordering::Relaxed);
                }
                return;
            };
            if f.read_exact_at(dst, at).is_err() {
                ok.store(false, Ordering::Relaxed);
            }
        }
    };
    std::thread::scope(|s| {
        let helpers: Vec<_> = (1..threads).map(|_| s.spawn(work)).collect();
        work();
        for h in helpers {
            if h.join().is_err() {
                ok.store(false, Ordering::Relaxed);
            }
        }
    });
    ok.into_inner()
}

/// A file read with positioned reads (std, unix `pread`).
#[cfg(feature = "std")]
pub struct FileSource {
    file: std::fs::File,
    len: u64,
}

#[cfg(feature = "std")]
impl FileSource {
    /// Wrap an open file.
    ///
    /// # Errors
    /// `Io` when its length cannot be read.
    pub fn new(file: std::fs::File) -> Result<Self> {
        let len = file.metadata()?.len();
        Ok(FileSource { file, len })
    }
}

#[cfg(feature = "std")]
impl ReadAt for FileSource {
    fn len(&self) -> u64 {
        self.len
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> Result<()> {
        let end = pos.checked_add(buf.len() as u64);
        if end.is_none_or(|e| e > self.len) {
            return Err(Error::truncated("read past end of file", pos));
        }
        #[cfg(unix)]
        {
            if pread_parallel(&self.file, pos, buf) {
                return Ok(());
            }
            // Failed (on some thread): once more on this one, for its error.
            use std::os::unix::fs::FileExt;
            self.file.read_exact_at(buf, pos)?;
            Ok(())
        }
        #[cfg(not(unix))]
        {
            let _ = (&self.file, buf);
            Err(Error::unsupported(
                "positioned reads need a unix platform; use mmap",
            ))
        }
    }
}

/// The file's bytes as the reader sees them: a source plus the superblock's
/// base address, with every read bounds-checked against the end of file and
/// the limits.
///
/// An optional overlay (a metadata cache image, see [`Storage::with_overlay`])
/// replaces the file's bytes at the addresses it covers.
#[derive(Clone)]
pub struct Storage {
    src: Arc<dyn ReadAt>,
    base: u64,
    len: u64,
    overlay: Option<Arc<Overlay>>,
}

/// Byte ranges that replace the file's bytes: relative address → bytes.
/// Ranges must not overlap (checked by [`Storage::with_overlay`]).
pub type Overlay = BTreeMap<u64, Vec<u8>>;

impl core::fmt::Debug for Storage {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Storage")
            .field("base", &self.base)
            .field("len", &self.len)
            .field("overlay_entries", &self.overlay.as_ref().map(|o| o.len()))
            .finish()
    }
}

impl Storage {
    /// A storage over `src` with base address 0.
    pub fn new(src: Arc<dyn ReadAt>) -> Self {
        let len = src.len();
        Storage {
            src,
            base: 0,
            len,
            overlay: None,
        }
    }
    /// The same source with another base address (the superblock's).
    #[must_use]
    pub fn with_base(&self, base: u64) -> Self {
        Storage {
            src: self.src.clone(),
            base,
            len: self.len,
            overlay: self.overlay.clone(),
        }
    }
    /// The same source and base with `overlay` applied: every read returns
    /// the overlay's bytes where its ranges (relative addresses) cover the
    /// requested range, the source's elsewhere. This is how a metadata cache
    /// image is served: its entries are the current metadata, the file's
    /// bytes at those addresses may be stale. An empty overlay is dropped.
    ///
    /// # Errors
    /// `Corrupt` when two ranges overlap or a range overflows the address
    /// space.
    pub fn with_overlay(&self, overlay: Overlay) -> Result<Self> {
        let mut prev_end: Option<u64> = None;
        for (&addr, bytes) in &overlay {
            if prev_end.is_some_and(|e| addr < e) {
                return Err(Error::corrupt(
                    "overlapping metadata cache image entries",
                    self.base.saturating_add(addr),
                ));
            }
            let end = addr
                .checked_add(bytes.len() as u64)
                .ok_or_else(|| Error::corrupt("cache image entry overflows", addr))?;
            prev_end = Some(end);
        }
        Ok(Storage {
            src: self.src.clone(),
            base: self.base,
            len: self.len,
            overlay: if overlay.is_empty() {
                None
            } else {
                Some(Arc::new(overlay))
            },
        })
    }
    /// The overlay in effect, if any.
    pub fn overlay(&self) -> Option<&Overlay> {
        self.overlay.as_deref()
    }
    /// Copy the overlay's bytes over `buf`, which holds the source's bytes
    /// at relative address `addr`.
    fn patch(&self, addr: u64, buf: &mut [u8]) {
        let Some(ov) = &self.overlay else {
            return;
        };
        let Some(end) = addr.checked_add(buf.len() as u64) else {
            return;
        };
        // Ranges do not overlap, so walking down from the last range that
        // starts before `end`, ends decrease too: stop at the first one that
        // ends at or before `addr`.
        for (&start, bytes) in ov.range(..end).rev() {
            let r_end = start.saturating_add(bytes.len() as u64);
            if r_end <= addr {
                break;
            }
            let lo = start.max(addr);
            let hi = r_end.min(end);
            let (Ok(src_from), Ok(src_to), Ok(dst_from), Ok(dst_to)) = (
                usize::try_from(lo - start),
                usize::try_from(hi - start),
                usize::try_from(lo - addr),
                usize::try_from(hi - addr),
            ) else {
                continue;
            };
            if let (Some(d), Some(s)) = (buf.get_mut(dst_from..dst_to), bytes.get(src_from..src_to))
            {
                d.copy_from_slice(s);
            }
        }
    }
    /// The overlay range holding all of `len` bytes at `addr`, `Ok(None)`
    /// when no range touches them, `Err(())` when one touches them only in part.
    fn overlay_slice(&self, addr: u64, len: u64) -> core::result::Result<Option<&[u8]>, ()> {
        let Some(ov) = &self.overlay else {
            return Ok(None);
        };
        let end = addr.checked_add(len).ok_or(())?;
        let Some((&start, bytes)) = ov.range(..end.max(addr.saturating_add(1))).next_back() else {
            return Ok(None);
        };
        let r_end = start.saturating_add(bytes.len() as u64);
        if r_end <= addr {
            return Ok(None);
        }
        if start <= addr && end <= r_end {
            let from = usize::try_from(addr - start).map_err(|_| ())?;
            let to = usize::try_from(end - start).map_err(|_| ())?;
            return bytes.get(from..to).map(Some).ok_or(());
        }
        Err(())
    }
    /// The base address added to every relative address.
    pub fn base(&self) -> u64 {
        self.base
    }
    /// Length of the underlying source in bytes.
    pub fn len(&self) -> u64 {
        self.len
    }
    /// Whether the source is empty.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Bytes from `addr` to the end of the source.
    pub fn available(&self, addr: Addr) -> u64 {
        match self.base.checked_add(addr.0) {
            Some(abs) => self.len.saturating_sub(abs),
            None => 0,
        }
    }
    /// The underlying source.
    pub fn source(&self) -> &Arc<dyn ReadAt> {
        &self.src
    }

    /// Absolute position of a relative address, checked for `len` bytes.
    ///
    /// # Errors
    /// `Corrupt` for the undefined address, `Truncated` past the end of file.
    pub fn absolute(&self, addr: Addr, len: u64) -> Result<u64> {
        if addr.is_undef() {
            return Err(Error::corrupt("read at the undefined address", u64::MAX));
        }
        let abs = self
            .base
            .checked_add(addr.0)
            .ok_or_else(|| Error::corrupt("address overflows", addr.0))?;
        match abs.checked_add(len) {
            Some(end) if end <= self.len => Ok(abs),
            _ => Err(Error::truncated(
                alloc::format!(
                    "{len} bytes at address {addr} lie past the end of file ({} bytes)",
                    self.len
                ),
                abs,
            )),
        }
    }

    /// Read exactly `len` bytes at relative address `addr`.
    ///
    /// # Errors
    /// `Truncated` past the end of file, `Io`.
    pub fn read(&self, addr: Addr, len: u64) -> Result<Vec<u8>> {
        let abs = self.absolute(addr, len)?;
        let n =
            usize::try_from(len).map_err(|_| Error::limit("read larger than the address space"))?;
        let mut buf = large_buffer(n)?;
        self.src.read_at(abs, &mut buf)?;
        self.patch(addr.0, &mut buf);
        Ok(buf)
    }

    /// As [`Storage::read`], into a reused buffer of this thread when one
    /// fits (no zero-fill before the read overwrites it).
    ///
    /// # Errors
    /// As [`Storage::read`].
    pub(crate) fn read_scratch(&self, addr: Addr, len: u64) -> Result<Vec<u8>> {
        let abs = self.absolute(addr, len)?;
        let n =
            usize::try_from(len).map_err(|_| Error::limit("read larger than the address space"))?;
        let mut buf = scratch_buffer(n)?;
        self.src.read_at(abs, &mut buf)?;
        self.patch(addr.0, &mut buf);
        Ok(buf)
    }

    /// Read into `buf` at relative address `addr`.
    ///
    /// # Errors
    /// `Truncated` past the end of file, `Io`.
    pub fn read_into(&self, addr: Addr, buf: &mut [u8]) -> Result<()> {
        let abs = self.absolute(addr, buf.len() as u64)?;
        self.src.read_at(abs, buf)?;
        self.patch(addr.0, buf);
        Ok(())
    }

    /// Read up to `max` bytes at `addr` (fewer at the end of the file), for
    /// structures whose size is only known after decoding their prefix.
    ///
    /// # Errors
    /// `Truncated` if `addr` itself is past the end of file.
    pub fn read_upto(&self, addr: Addr, max: u64) -> Result<Vec<u8>> {
        let avail = self.available(addr);
        if avail == 0 {
            return Err(Error::truncated(
                alloc::format!("address {addr} is past the end of file"),
                addr.0,
            ));
        }
        self.read(addr, max.min(avail))
    }

    /// Zero-copy view of `len` bytes at `addr`, when the source is in memory.
    pub fn slice(&self, addr: Addr, len: u64) -> Option<&[u8]> {
        let abs = self.absolute(addr, len).ok()?;
        if self.overlay.is_some() {
            match self.overlay_slice(addr.0, len) {
                Ok(Some(s)) => return Some(s),
                Ok(None) => {}
                // Partly covered: no single slice holds the bytes; callers
                // fall back to `read`, which patches.
                Err(()) => return None,
            }
        }
        let s = self.src.as_slice()?;
        let start = usize::try_from(abs).ok()?;
        let end = start.checked_add(usize::try_from(len).ok()?)?;
        s.get(start..end)
    }
}
