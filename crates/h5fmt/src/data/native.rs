//! Typed reads at the speed of raw ones: output buffers of plain numbers
//! that the readers fill as bytes, and bulk conversion kernels from file
//! elements (either byte order, integers of 1/2/4/8 bytes, IEEE floats of
//! 2/4/8 bytes) to native numbers, straight loops over fixed-size elements
//! that the compiler vectorises.
//!
//! A [`Conv`] converts exactly as [`crate::data::convert::convert_slice`]
//! does; a value out of `T`'s range makes it fail with `Unrepresentable`,
//! and the typed readers then redo the read through `convert_slice`, whose
//! error (naming the first element that does not fit) is the one reported.

use crate::data::convert::{f16_to_f64, H5Native};
use crate::error::{Error, Result};
use crate::format::datatype::{ByteOrder, Datatype};
use alloc::format;
use alloc::vec::Vec;
use core::mem::size_of;

/// Plain numbers: no padding, any bit pattern is a value, all zero bytes
/// are zero.
///
/// # Safety
/// Only for the primitive integer and float types ([`bytes_mut`] and
/// [`zeroed_vec`] rely on the properties above).
pub(crate) unsafe trait Pod: Copy + Send + Sync + 'static {}

/// A number type that typed reads fill directly (the primitive numbers
/// that implement [`H5Native`]).
pub(crate) trait Native: Pod + H5Native {
    /// The file element kind that is this type in native byte order.
    const SRC: Src;
    /// Whether this is a float type.
    const FLOAT: bool;
    /// The kernel converting `src` elements (big-endian when `big`) to `Self`.
    fn kernel(src: Src, big: bool) -> Kernel;
    /// The same in place, when `src` elements are as large as `Self`.
    fn in_place(src: Src, big: bool) -> InPlace;
}

/// `v`'s memory as bytes, for readers that write file bytes straight into it.
pub(crate) fn bytes_mut<P: Pod>(v: &mut [P]) -> &mut [u8] {
    let len = core::mem::size_of_val(v);
    // SAFETY: `P: Pod` has no padding, so its `len` bytes are initialized,
    // and accepts any bit pattern, so writes through the view leave valid
    // `P`s; the view borrows `v` mutably for as long as it lives, and u8 has
    // no alignment requirement.
    unsafe { core::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), len) }
}

/// `n` zeros from the zeroing allocator (fresh pages are not written until
/// the read writes them), failing with `Limit` instead of aborting; with
/// `huge`, on Linux, backed by transparent huge pages like
/// [`crate::io::large_buffer`].
///
/// # Errors
/// `Limit` when the allocation fails.
pub(crate) fn zeroed_vec<P: Pod>(n: usize, huge: bool) -> Result<Vec<P>> {
    #[cfg(not(all(feature = "std", target_os = "linux")))]
    let _ = huge;
    if n == 0 {
        return Ok(Vec::new());
    }
    let fail = || {
        Error::limit(format!(
            "cannot allocate {n} elements of {} bytes",
            size_of::<P>()
        ))
    };
    let layout = core::alloc::Layout::array::<P>(n).map_err(|_| fail())?;
    // SAFETY: the layout's size is not zero (`n` > 0, and no `Pod` type is
    // zero-sized).
    let ptr = unsafe { alloc::alloc::alloc_zeroed(layout) }.cast::<P>();
    if ptr.is_null() {
        return Err(fail());
    }
    #[cfg(all(feature = "std", target_os = "linux"))]
    if huge {
        crate::io::advise_huge(ptr.cast::<u8>(), layout.size());
    }
    // SAFETY: `ptr` comes from the global allocator with the layout of `n`
    // `P`s, and all its bytes are zero, a valid `P` (`Pod`).
    Ok(unsafe { Vec::from_raw_parts(ptr, n, n) })
}

/// Converts the elements of `src` into `dst` (as many as both hold); `false`
/// when a value does not fit the target type (what was written is then
/// meaningless).
pub(crate) type Kernel = fn(&[u8], &mut [u8]) -> bool;

/// A [`Kernel`] converting elements in place into elements of the same size.
pub(crate) type InPlace = fn(&mut [u8]) -> bool;

/// A file element kind the kernels read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Src {
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    F16,
    F32,
    F64,
}

impl Src {
    fn size(self) -> usize {
        match self {
            Src::I8 | Src::U8 => 1,
            Src::I16 | Src::U16 | Src::F16 => 2,
            Src::I32 | Src::U32 | Src::F32 => 4,
            Src::I64 | Src::U64 | Src::F64 => 8,
        }
    }

    fn is_float(self) -> bool {
        matches!(self, Src::F16 | Src::F32 | Src::F64)
    }

    fn int(size: u32, signed: bool) -> Option<Src> {
        Some(match (size, signed) {
            (1, true) => Src::I8,
            (2, true) => Src::I16,
            (4, true) => Src::I32,
            (8, true) => Src::I64,
            (1, false) => Src::U8,
            (2, false) => Src::U16,
            (4, false) => Src::U32,
            (8, false) => Src::U64,
            _ => return None,
        })
    }
}

/// How file elements become output elements: sizes, and the kernel (none
/// when the bytes are the same, a plain copy).
#[derive(Clone, Copy)]
pub struct Conv {
    src: usize,
    dst: usize,
    kernel: Option<Kernel>,
    in_place: Option<InPlace>,
}

impl core::fmt::Debug for Conv {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Conv")
            .field("src", &self.src)
            .field("dst", &self.dst)
            .field("identity", &self.kernel.is_none())
            .finish()
    }
}

impl Conv {
    /// Elements of `size` bytes copied as they are.
    pub fn identity(size: usize) -> Conv {
        Conv {
            src: size,
            dst: size,
            kernel: None,
            in_place: None,
        }
    }

    /// Bytes of one file element.
    pub fn src_size(&self) -> usize {
        self.src
    }

    /// Bytes of one output element.
    pub fn dst_size(&self) -> usize {
        self.dst
    }

    /// Whether output bytes are the file bytes (so readers may decode
    /// straight into the output).
    pub fn is_identity(&self) -> bool {
        self.kernel.is_none()
    }

    /// The conversion of `dtype`'s elements to `T`, when a kernel does it
    /// (`None`: leave it to `convert_slice`: other integer widths, partial
    /// precision or bit offsets, non-IEEE floats, floats to integers, and
    /// every non-numeric type).
    pub(crate) fn plan<T: Native>(dtype: &Datatype) -> Option<Conv> {
        // An enum converts as its integer base type (as `convert_slice`).
        let storage = match dtype {
            Datatype::Enum { base, .. } => base.as_ref(),
            other => other,
        };
        let full = |size: u32, bit_offset: u16, precision: u16| {
            bit_offset == 0 && u32::from(precision) == size.saturating_mul(8)
        };
        // `convert_slice` reads every order but big-endian as little-endian.
        let (src, order) = match storage {
            Datatype::Integer {
                size,
                order,
                signed,
                bit_offset,
                precision,
            } if full(*size, *bit_offset, *precision) => (Src::int(*size, *signed)?, *order),
            Datatype::Bitfield {
                size,
                order,
                bit_offset,
                precision,
            } if full(*size, *bit_offset, *precision) => (Src::int(*size, false)?, *order),
            Datatype::Float { size, order, .. } if storage.is_ieee_standard() => (
                match size {
                    2 => Src::F16,
                    4 => Src::F32,
                    8 => Src::F64,
                    _ => return None,
                },
                *order,
            ),
            _ => return None,
        };
        if src.is_float() && !T::FLOAT {
            return None;
        }
        let big = order == ByteOrder::Big;
        let native = src.size() == 1 || big == cfg!(target_endian = "big");
        if src == T::SRC && native {
            return Some(Conv::identity(src.size()));
        }
        Some(Conv {
            src: src.size(),
            dst: size_of::<T>(),
            kernel: Some(T::kernel(src, big)),
            in_place: (src.size() == size_of::<T>()).then(|| T::in_place(src, big)),
        })
    }

    /// Convert the file elements `src` into `dst`, which holds as many
    /// output elements.
    ///
    /// # Errors
    /// `Corrupt` when the lengths disagree; `Unrepresentable` when a value
    /// does not fit the output type.
    pub fn run(&self, src: &[u8], dst: &mut [u8]) -> Result<()> {
        let n = src.len().checked_div(self.src).unwrap_or(0);
        if n.checked_mul(self.src) != Some(src.len()) || n.checked_mul(self.dst) != Some(dst.len())
        {
            return Err(Error::corrupt(
                format!(
                    "conversion of {} bytes of {}-byte elements into {} bytes of {}-byte elements",
                    src.len(),
                    self.src,
                    dst.len(),
                    self.dst
                ),
                0,
            ));
        }
        match self.kernel {
            None => {
                dst.copy_from_slice(src);
                Ok(())
            }
            Some(k) if k(src, dst) => Ok(()),
            Some(_) => Err(Error::unrepresentable(
                "a value does not fit the output type",
            )),
        }
    }

    /// Whether output elements are as large as file elements, so that
    /// readers can put file bytes where the output goes and convert them
    /// there ([`Conv::run_in_place`]).
    pub fn same_size(&self) -> bool {
        self.src == self.dst
    }

    /// Convert file elements in place into output elements of the same
    /// size (see [`Conv::same_size`]): for data just read or decoded into
    /// the output, still in the cache, this costs far less than a separate
    /// pass.
    ///
    /// # Errors
    /// `Corrupt` when the sizes differ or `buf` is not whole elements; as
    /// [`Conv::run`].
    pub fn run_in_place(&self, buf: &mut [u8]) -> Result<()> {
        if self.kernel.is_none() {
            return Ok(());
        }
        let in_place = self.in_place.filter(|_| self.same_size());
        let Some(in_place) =
            in_place.filter(|_| self.src > 0 && buf.len().is_multiple_of(self.src))
        else {
            return Err(Error::corrupt(
                format!(
                    "conversion in place of {} bytes of {}-byte into {}-byte elements",
                    buf.len(),
                    self.src,
                    self.dst
                ),
                0,
            ));
        };
        if in_place(buf) {
            Ok(())
        } else {
            Err(Error::unrepresentable(
                "a value does not fit the output type",
            ))
        }
    }

    /// Fill `dst` (whole output elements, all zero bytes) with the
    /// conversion of the one file element `elem`: nothing to do when that
    /// is zero bytes, else one element converted and then copied in
    /// doubling runs (memcpy speed, no per-element work).
    ///
    /// # Errors
    /// As [`Conv::run`].
    pub fn fill(&self, elem: &[u8], dst: &mut [u8]) -> Result<()> {
        let mut one = [0u8; 8];
        let first = match one.get_mut(..self.dst) {
            Some(first) => {
                self.run(elem, first)?;
                &*first
            }
            None => return Ok(()), // output elements are at most 8 bytes
        };
        if first.iter().all(|&b| b == 0) {
            return Ok(());
        }
        fill_pattern(dst, first);
        Ok(())
    }
}

/// Repeat `elem` over `dst` (whole elements; a partial last one is left).
pub(crate) fn fill_pattern(dst: &mut [u8], elem: &[u8]) {
    let e = elem.len();
    if e == 0 || dst.len() < e {
        return;
    }
    let whole = dst.len() - dst.len() % e;
    let Some(dst) = dst.get_mut(..whole) else {
        return;
    };
    if let Some(d) = dst.get_mut(..e) {
        d.copy_from_slice(elem);
    }
    let mut done = e;
    while done < whole {
        let n = done.min(whole - done);
        dst.copy_within(..n, done);
        done += n;
    }
}

/// A file element: its bytes and how they load.
trait Load: Copy {
    type Bytes: Copy + Default + AsMut<[u8]>;
    fn from_le(b: Self::Bytes) -> Self;
    fn from_be(b: Self::Bytes) -> Self;
}

/// An output element: its native bytes.
trait Store: Copy {
    type Bytes: AsRef<[u8]>;
    fn to_ne(self) -> Self::Bytes;
}

/// A value conversion: the result (unspecified when it does not fit) and
/// whether it fits, computed without branches so that the loops vectorise.
trait Cvt<D> {
    fn cvt(self) -> (D, bool);
}

/// IEEE binary16 bits.
#[derive(Clone, Copy)]
struct F16(u16);

macro_rules! plain {
    ($($t:ty),*) => {$(
        impl Load for $t {
            type Bytes = [u8; size_of::<$t>()];
            #[inline(always)]
            fn from_le(b: Self::Bytes) -> Self { <$t>::from_le_bytes(b) }
            #[inline(always)]
            fn from_be(b: Self::Bytes) -> Self { <$t>::from_be_bytes(b) }
        }
        impl Store for $t {
            type Bytes = [u8; size_of::<$t>()];
            #[inline(always)]
            fn to_ne(self) -> Self::Bytes { self.to_ne_bytes() }
        }
        // SAFETY: a primitive number (see `Pod`).
        unsafe impl Pod for $t {}
    )*};
}
plain!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

impl Load for F16 {
    type Bytes = [u8; 2];
    #[inline(always)]
    fn from_le(b: [u8; 2]) -> Self {
        F16(u16::from_le_bytes(b))
    }
    #[inline(always)]
    fn from_be(b: [u8; 2]) -> Self {
        F16(u16::from_be_bytes(b))
    }
}

// Integer to integer: checked (`try_from`, as `H5Native::from_i128`).
macro_rules! cvt_int {
    ($($s:ty),*) => {$( cvt_int!(@ $s; i8, i16, i32, i64, u8, u16, u32, u64); )*};
    (@ $s:ty; $($d:ty),*) => {$(
        impl Cvt<$d> for $s {
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation, clippy::cast_possible_wrap, clippy::cast_sign_loss, clippy::cast_lossless)]
            fn cvt(self) -> ($d, bool) {
                // The range test as comparisons in i128 (what `try_from`
                // does), branch-free.
                let v = self as i128;
                (self as $d, v >= <$d>::MIN as i128 && v <= <$d>::MAX as i128)
            }
        }
    )*};
}
cvt_int!(i8, i16, i32, i64, u8, u16, u32, u64);

// Integer or float to float: `as` (`from_i128`/`from_f64` of f32 and f64;
// an integer converts to the nearest float in one rounding either way, and
// f32 -> f64 is exact).
macro_rules! cvt_float {
    ($($s:ty),*) => {$(
        impl Cvt<f32> for $s {
            #[inline(always)]
            #[allow(clippy::cast_possible_truncation, clippy::cast_precision_loss, clippy::cast_lossless)]
            fn cvt(self) -> (f32, bool) { (self as f32, true) }
        }
        impl Cvt<f64> for $s {
            #[inline(always)]
            #[allow(clippy::cast_precision_loss, clippy::cast_lossless)]
            fn cvt(self) -> (f64, bool) { (self as f64, true) }
        }
    )*};
}
cvt_float!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);

// Floats to integers never convert (`from_f64` of an integer type is
// `None`); `Conv::plan` leaves them to `convert_slice`.
macro_rules! cvt_never {
    ($($s:ty),*) => {$( cvt_never!(@ $s; i8, i16, i32, i64, u8, u16, u32, u64); )*};
    (@ $s:ty; $($d:ty),*) => {$(
        impl Cvt<$d> for $s {
            #[inline(always)]
            fn cvt(self) -> ($d, bool) { (0, false) }
        }
    )*};
}
cvt_never!(f32, f64, F16);

impl Cvt<f32> for F16 {
    #[inline(always)]
    #[allow(clippy::cast_possible_truncation)]
    fn cvt(self) -> (f32, bool) {
        (f16_to_f64(self.0) as f32, true)
    }
}

impl Cvt<f64> for F16 {
    #[inline(always)]
    fn cvt(self) -> (f64, bool) {
        (f16_to_f64(self.0), true)
    }
}

/// The kernel for one source type, target type and byte order: compiled
/// for AVX2 too (std, x86-64), used when the CPU has it (byte swaps become
/// `vpshufb` on 32 bytes, conversions 256-bit wide; the x86-64 baseline has
/// no byte shuffle).
fn kernel<S: Load + Cvt<D>, D: Store, const BIG: bool>(src: &[u8], dst: &mut [u8]) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { kernel_avx2::<S, D, BIG>(src, dst) };
    }
    kernel_loop::<S, D, BIG>(src, dst)
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
fn kernel_avx2<S: Load + Cvt<D>, D: Store, const BIG: bool>(src: &[u8], dst: &mut [u8]) -> bool {
    kernel_loop::<S, D, BIG>(src, dst)
}

/// As [`kernel`], in place (`false` when the sizes differ).
fn in_place<S: Load + Cvt<D>, D: Store, const BIG: bool>(buf: &mut [u8]) -> bool {
    #[cfg(all(feature = "std", target_arch = "x86_64"))]
    if std::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2.
        return unsafe { in_place_avx2::<S, D, BIG>(buf) };
    }
    in_place_loop::<S, D, BIG>(buf)
}

#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
fn in_place_avx2<S: Load + Cvt<D>, D: Store, const BIG: bool>(buf: &mut [u8]) -> bool {
    in_place_loop::<S, D, BIG>(buf)
}

#[inline(always)]
fn in_place_loop<S: Load + Cvt<D>, D: Store, const BIG: bool>(buf: &mut [u8]) -> bool {
    let size = size_of::<S::Bytes>();
    if size != size_of::<D::Bytes>() {
        return false;
    }
    let mut ok = true;
    for e in buf.chunks_exact_mut(size) {
        let mut b = S::Bytes::default();
        b.as_mut().copy_from_slice(e);
        let v = if BIG { S::from_be(b) } else { S::from_le(b) };
        let (x, fits) = v.cvt();
        e.copy_from_slice(x.to_ne().as_ref());
        ok &= fits;
    }
    ok
}

#[inline(always)]
fn kernel_loop<S: Load + Cvt<D>, D: Store, const BIG: bool>(src: &[u8], dst: &mut [u8]) -> bool {
    let ss = size_of::<S::Bytes>();
    let ds = size_of::<D::Bytes>();
    let mut ok = true;
    for (s, d) in src.chunks_exact(ss).zip(dst.chunks_exact_mut(ds)) {
        let mut b = S::Bytes::default();
        b.as_mut().copy_from_slice(s);
        let v = if BIG { S::from_be(b) } else { S::from_le(b) };
        let (x, fits) = v.cvt();
        d.copy_from_slice(x.to_ne().as_ref());
        ok &= fits;
    }
    ok
}

/// `$f::<S, $t, big>` for the source type `S` of `$src`.
macro_rules! by_src {
    ($src:expr, $big:expr, $f:ident, $t:ty) => {{
        macro_rules! pick {
            ($s:ty) => {
                if $big {
                    $f::<$s, $t, true>
                } else {
                    $f::<$s, $t, false>
                }
            };
        }
        match $src {
            Src::I8 => pick!(i8),
            Src::I16 => pick!(i16),
            Src::I32 => pick!(i32),
            Src::I64 => pick!(i64),
            Src::U8 => pick!(u8),
            Src::U16 => pick!(u16),
            Src::U32 => pick!(u32),
            Src::U64 => pick!(u64),
            Src::F16 => pick!(F16),
            Src::F32 => pick!(f32),
            Src::F64 => pick!(f64),
        }
    }};
}

macro_rules! native {
    ($($t:ty => $src:ident, $float:expr);* $(;)?) => {$(
        impl Native for $t {
            const SRC: Src = Src::$src;
            const FLOAT: bool = $float;
            fn kernel(src: Src, big: bool) -> Kernel {
                by_src!(src, big, kernel, $t)
            }
            fn in_place(src: Src, big: bool) -> InPlace {
                by_src!(src, big, in_place, $t)
            }
        }
    )*};
}
native! {
    i8 => I8, false; i16 => I16, false; i32 => I32, false; i64 => I64, false;
    u8 => U8, false; u16 => U16, false; u32 => U32, false; u64 => U64, false;
    f32 => F32, true; f64 => F64, true;
}

/// `v` as a value of type `B` when `A` and `B` are the same type (a safe
/// downcast, no copy).
pub(crate) fn same_type<A: 'static, B: 'static>(v: A) -> Option<B> {
    let mut v = Some(v);
    (&mut v as &mut dyn core::any::Any)
        .downcast_mut::<Option<B>>()
        .and_then(Option::take)
}

/// Call `$body` with `$p` the [`Native`] type that is `$t`, when `$t` is one
/// (evaluating to `Some(result as the caller's type)`), else `None`.
macro_rules! with_native {
    ($t:ty, |$p:ident| $body:expr) => {{
        use core::any::TypeId;
        let id = TypeId::of::<$t>();
        let mut out = None;
        with_native!(@ id, out, $p, $body; i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
        out
    }};
    (@ $id:ident, $out:ident, $p:ident, $body:expr; $($n:ty),*) => {$(
        if $out.is_none() && $id == TypeId::of::<$n>() {
            type $p = $n;
            $out = Some($body);
        }
    )*};
}
pub(crate) use with_native;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::convert::convert_slice;
    use alloc::vec;

    fn int(size: u32, order: ByteOrder, signed: bool) -> Datatype {
        Datatype::Integer {
            size,
            order,
            signed,
            bit_offset: 0,
            precision: (size * 8) as u16,
        }
    }

    /// Every kernel agrees with `convert_slice`: same values where it
    /// succeeds, a failure where it fails.
    fn agree<T: Native>(dt: &Datatype, raw: &[u8]) {
        let Some(conv) = Conv::plan::<T>(dt) else {
            return;
        };
        let n = raw.len() / conv.src_size();
        let mut out = zeroed_vec::<T>(n, false).unwrap();
        let got = conv.run(raw, bytes_mut(&mut out));
        match convert_slice::<T>(dt, raw) {
            Ok(mut want) => {
                assert!(got.is_ok(), "{dt:?} -> {}", T::NAME);
                // Bits, so that NaNs compare.
                assert_eq!(
                    bytes_mut(&mut out),
                    bytes_mut(&mut want),
                    "{dt:?} -> {}",
                    T::NAME
                );
            }
            Err(_) => assert!(got.is_err(), "{dt:?} -> {}: accepted", T::NAME),
        }
    }

    #[test]
    fn kernels_match_convert_slice() {
        // Bytes that make edge values in every width: 0, 1, -1, min, max.
        let mut raw = vec![];
        for v in [
            0u64,
            1,
            u64::MAX,
            0x80,
            0x7f,
            0x8000,
            0x7fff,
            0x8000_0000,
            0x7fff_ffff,
        ] {
            raw.extend_from_slice(&v.to_le_bytes());
            raw.extend_from_slice(&v.to_be_bytes());
        }
        raw.extend_from_slice(&1.5f64.to_le_bytes());
        raw.extend_from_slice(&(-3.25f32).to_be_bytes());
        raw.extend_from_slice(&f32::NAN.to_le_bytes());
        raw.extend_from_slice(&f64::INFINITY.to_be_bytes());
        raw.extend_from_slice(&0x3c00u16.to_le_bytes()); // f16 1.0
        raw.extend_from_slice(&0xfbffu16.to_le_bytes()); // f16 -65504
        for order in [ByteOrder::Little, ByteOrder::Big] {
            let mut types = vec![];
            for size in [1, 2, 4, 8] {
                types.push(int(size, order, true));
                types.push(int(size, order, false));
            }
            for size in [2, 4, 8] {
                let mut f = Datatype::float_le(size);
                if let Datatype::Float { order: o, .. } = &mut f {
                    *o = order;
                }
                types.push(f);
            }
            for dt in &types {
                // Each value on its own (so a misfit is found per value) and all together.
                let es = dt.size() as usize;
                for one in raw.chunks_exact(es) {
                    agree::<i8>(dt, one);
                    agree::<i16>(dt, one);
                    agree::<i32>(dt, one);
                    agree::<i64>(dt, one);
                    agree::<u8>(dt, one);
                    agree::<u16>(dt, one);
                    agree::<u32>(dt, one);
                    agree::<u64>(dt, one);
                    agree::<f32>(dt, one);
                    agree::<f64>(dt, one);
                }
                let all = &raw[..raw.len() / es * es];
                agree::<i64>(dt, all);
                agree::<f64>(dt, all);
            }
        }
    }

    #[test]
    fn plan_leaves_the_rest_to_convert_slice() {
        let partial = Datatype::Integer {
            size: 2,
            order: ByteOrder::Little,
            signed: true,
            bit_offset: 3,
            precision: 9,
        };
        assert!(Conv::plan::<i32>(&partial).is_none());
        assert!(Conv::plan::<i32>(&int(3, ByteOrder::Little, true)).is_none());
        let f = Datatype::float_le(8);
        assert!(Conv::plan::<i64>(&f).is_none());
        assert!(Conv::plan::<f64>(&f).unwrap().is_identity());
        assert!(!Conv::plan::<f32>(&f).unwrap().is_identity());
        let native = if cfg!(target_endian = "big") {
            ByteOrder::Big
        } else {
            ByteOrder::Little
        };
        assert!(Conv::plan::<u16>(&int(2, native, false))
            .unwrap()
            .is_identity());
        assert!(!Conv::plan::<i16>(&int(2, native, false))
            .unwrap()
            .is_identity());
    }

    #[test]
    fn in_place_equals_run() {
        let raw: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i * 7919).to_be_bytes())
            .collect();
        for conv in [
            Conv::plan::<u32>(&int(4, ByteOrder::Big, false)).unwrap(),
            Conv::plan::<f32>(&int(4, ByteOrder::Big, false)).unwrap(),
            Conv::plan::<i32>(&int(4, ByteOrder::Big, false)).unwrap(),
        ] {
            let mut want = vec![0u8; raw.len()];
            conv.run(&raw, &mut want).unwrap();
            let mut got = raw.clone();
            conv.run_in_place(&mut got).unwrap();
            assert_eq!(got, want);
        }
        let mut big = (u32::MAX).to_be_bytes().to_vec();
        let conv = Conv::plan::<i32>(&int(4, ByteOrder::Big, false)).unwrap();
        assert!(conv.run_in_place(&mut big).is_err());
        let widen = Conv::plan::<i64>(&int(4, ByteOrder::Big, false)).unwrap();
        assert!(widen.run_in_place(&mut big).is_err());
    }

    #[test]
    fn fill_repeats_the_converted_element() {
        let conv = Conv::plan::<i64>(&int(2, ByteOrder::Big, true)).unwrap();
        let mut out = vec![0u8; 5 * 8];
        conv.fill(&(-2i16).to_be_bytes(), &mut out).unwrap();
        let want: Vec<u8> = (0..5).flat_map(|_| (-2i64).to_ne_bytes()).collect();
        assert_eq!(out, want);
        let conv = Conv::plan::<u8>(&int(2, ByteOrder::Big, true)).unwrap();
        assert!(conv.fill(&(-2i16).to_be_bytes(), &mut out).is_err());
    }

    #[test]
    fn same_type_downcasts_only_the_same_type() {
        assert_eq!(same_type::<Vec<f64>, Vec<f64>>(vec![1.0]), Some(vec![1.0]));
        assert_eq!(same_type::<Vec<f64>, Vec<f32>>(vec![1.0]), None);
        assert_eq!(with_native!(u16, |P| size_of::<P>()), Some(2));
        assert_eq!(with_native!(bool, |P| size_of::<P>()), None);
    }
}
