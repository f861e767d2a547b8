//! h5fmt on a microcontroller: a Cortex-M4F (`thumbv7em-none-eabihf`) program that
//! reads a chunked dataset (shuffle + deflate + Fletcher-32, big-endian `i64`) from an
//! HDF5 file image kept in flash, without copying the image into RAM, with a
//! fixed-size allocator over a static arena. `cargo xtask embedded` builds it with
//! Debian's toolchain and prints its flash and RAM sizes.
//!
//! After reset it copies `.data`, zeroes `.bss`, runs [`run`] and leaves the sum of
//! the dataset's values in `SUM` (or `i64::MIN` on an error) and the allocator's
//! high-water mark in `PEAK`, for a debugger to read.
#![no_std]
#![no_main]

extern crate alloc;

use alloc::sync::Arc;
use core::alloc::{GlobalAlloc, Layout};
use core::cell::UnsafeCell;

/// The file image, in flash (`.rodata`): a testdata file written by h5py.
static FILE: &[u8] = include_bytes!("../../../testdata/datasets_v108.h5");

/// Bytes of RAM the allocator hands out.
const ARENA_BYTES: usize = 64 * 1024;

/// A bump allocator over a static arena that takes back the most recent
/// allocation when it is freed (most of a read's temporaries are freed in
/// reverse order); never more than [`ARENA_BYTES`].
struct Arena {
    mem: UnsafeCell<[u8; ARENA_BYTES]>,
    next: UnsafeCell<usize>,
    peak: UnsafeCell<usize>,
}

// SAFETY: one core, no interrupts use the allocator.
unsafe impl Sync for Arena {}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: single-threaded (see the `Sync` impl).
        let next = unsafe { &mut *self.next.get() };
        let base = self.mem.get() as usize;
        let start = (base + *next + layout.align() - 1) & !(layout.align() - 1);
        let Some(end) = (start - base).checked_add(layout.size()) else {
            return core::ptr::null_mut();
        };
        if end > ARENA_BYTES {
            return core::ptr::null_mut();
        }
        *next = end;
        // SAFETY: as above.
        let peak = unsafe { &mut *self.peak.get() };
        *peak = (*peak).max(end);
        start as *mut u8
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: single-threaded (see the `Sync` impl).
        let next = unsafe { &mut *self.next.get() };
        let off = ptr as usize - self.mem.get() as usize;
        if off + layout.size() == *next {
            *next = off;
        }
    }
}

#[global_allocator]
static ALLOC: Arena = Arena {
    mem: UnsafeCell::new([0; ARENA_BYTES]),
    next: UnsafeCell::new(0),
    peak: UnsafeCell::new(0),
};

/// The result, for a debugger: the sum of `/chunked_all_filters`.
#[no_mangle]
static mut SUM: i64 = 0;
/// The allocator's high-water mark in bytes after [`run`].
#[no_mangle]
static mut PEAK: usize = 0;

/// Open the image in flash and sum the values of `/chunked_all_filters`.
fn run() -> h5fmt::Result<i64> {
    let src: Arc<dyn h5fmt::io::ReadAt> = Arc::new(FILE);
    let file = h5fmt::File::from_source(src, h5fmt::Limits::tight())?;
    let h5fmt::Object::Dataset(d) = file.object("/chunked_all_filters")? else {
        return Err(h5fmt::Error::not_found("not a dataset"));
    };
    Ok(d.read::<i64>()?
        .iter()
        .copied()
        .fold(0i64, i64::wrapping_add))
}

extern "C" {
    static mut __sbss: u32;
    static mut __ebss: u32;
    static mut __sdata: u32;
    static mut __edata: u32;
    static __sidata: u32;
}

/// The reset handler (the vector table's second word, see `memory.x`).
///
/// # Safety
/// Called once by the hardware after reset, before anything else runs.
#[no_mangle]
pub unsafe extern "C" fn reset() -> ! {
    // SAFETY: CPACR is the architectural coprocessor access register of ARMv7-M; full
    // access to CP10/CP11 turns the FPU on before any code may use it (eabihf code does).
    unsafe {
        let cpacr = 0xE000_ED88 as *mut u32;
        cpacr.write_volatile(cpacr.read_volatile() | (0xF << 20));
        core::arch::asm!("dsb", "isb");
    }
    // SAFETY: the linker script's symbols bound `.bss` and `.data` (word aligned), and
    // nothing has used either yet.
    unsafe {
        let mut p = &raw mut __sbss;
        while p < &raw mut __ebss {
            p.write_volatile(0);
            p = p.add(1);
        }
        let (mut d, mut s) = (&raw mut __sdata, &raw const __sidata);
        while d < &raw mut __edata {
            d.write_volatile(s.read());
            d = d.add(1);
            s = s.add(1);
        }
    }
    let sum = run().unwrap_or(i64::MIN);
    // SAFETY: single-threaded; the statics are only written here.
    unsafe {
        (&raw mut SUM).write_volatile(sum);
        (&raw mut PEAK).write_volatile(*ALLOC.peak.get());
    }
    loop {
        core::hint::spin_loop();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo<'_>) -> ! {
    loop {
        core::hint::spin_loop();
    }
}
