//! wasm smoke module: h5fmt's `no_std` core linked into a `.wasm` that node can run.
//!
//! Exports `alloc(len) -> ptr` for the host to place a file's bytes, and
//! `probe(ptr, len) -> i32`: the superblock version of the HDF5 file in those bytes, or
//! `-1` when no signature is found at 0/512/1024/…, or `-(10 + ErrorKind as i32)` when the
//! superblock does not decode.
#![no_std]

extern crate alloc;

use alloc::vec::Vec;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

use h5fmt::codec::Cursor;
use h5fmt::format::superblock::{Superblock, SIGNATURE};
use h5fmt::Ctx;

/// A bump allocator over `memory.grow` (never frees; a smoke test needs little).
struct Bump(UnsafeCell<usize>);

// SAFETY: wasm32-unknown-unknown without atomics is single-threaded.
unsafe impl Sync for Bump {}

unsafe impl GlobalAlloc for Bump {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        const PAGE: usize = 65536;
        // SAFETY: single-threaded, see above.
        let next = unsafe { &mut *self.0.get() };
        if *next == 0 {
            *next = core::arch::wasm32::memory_size(0) * PAGE;
        }
        let start = (*next + layout.align() - 1) & !(layout.align() - 1);
        let Some(end) = start.checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        let have = core::arch::wasm32::memory_size(0) * PAGE;
        if end > have {
            let pages = (end - have).div_ceil(PAGE);
            if core::arch::wasm32::memory_grow(0, pages) == usize::MAX {
                return core::ptr::null_mut();
            }
        }
        *next = end;
        start as *mut u8
    }
    unsafe fn dealloc(&self, _ptr: *mut u8, _layout: Layout) {}
}

#[global_allocator]
static ALLOC: Bump = Bump(UnsafeCell::new(0));

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    core::arch::wasm32::unreachable()
}

/// Room for `len` bytes, for the host to write into.
#[no_mangle]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    let mut v: Vec<u8> = Vec::with_capacity(len);
    let p = v.as_mut_ptr();
    core::mem::forget(v);
    p
}

/// The superblock version of the HDF5 file in `ptr[..len]` (see the module docs).
///
/// # Safety
/// `ptr[..len]` must be memory returned by [`alloc`] and written by the host.
#[no_mangle]
pub unsafe extern "C" fn probe(ptr: *const u8, len: usize) -> i32 {
    // SAFETY: the caller's contract.
    let bytes = unsafe { core::slice::from_raw_parts(ptr, len) };
    let mut at = 0usize;
    while at < bytes.len() {
        if bytes.get(at..at + 8) == Some(&SIGNATURE[..]) {
            let Some(rest) = bytes.get(at..) else {
                return -1;
            };
            let mut cur = Cursor::new(rest, at as u64);
            return match Superblock::decode(&mut cur, Ctx::default()) {
                Ok(sb) => i32::from(sb.version),
                Err(e) => -(10 + e.kind() as i32),
            };
        }
        at = if at == 0 { 512 } else { at.saturating_mul(2) };
    }
    -1
}
