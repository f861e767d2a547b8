//! Shuffle filter (id 2): bytes of each element were grouped by byte position.

use alloc::vec::Vec;

/// Undo the shuffle for elements of `es` bytes. Trailing bytes that do not
/// form a whole element were stored unshuffled and are kept as they are.
///
/// # Errors
/// `Limit` when the output buffer cannot be allocated.
pub(super) fn unshuffle(data: Vec<u8>, es: usize) -> crate::error::Result<Vec<u8>> {
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        return Ok(data);
    }
    let mut out = crate::io::zeroed_buffer(data.len())?;
    let body = n * es;
    match es {
        2 => unshuffle_n::<2>(&data, &mut out, n),
        4 => unshuffle_n::<4>(&data, &mut out, n),
        8 => unshuffle_n::<8>(&data, &mut out, n),
        16 => unshuffle_n::<16>(&data, &mut out, n),
        _ => {
            // Byte plane b holds byte b of every element.
            for (b, plane) in data.chunks_exact(n).take(es).enumerate() {
                for (dst, &src) in out.iter_mut().skip(b).step_by(es).zip(plane) {
                    *dst = src;
                }
            }
        }
    }
    if let (Some(dst), Some(src)) = (out.get_mut(body..), data.get(body..)) {
        dst.copy_from_slice(src);
    }
    crate::io::recycle(data);
    Ok(out)
}

/// Undo the shuffle of `data` into `out` (same length), returning `false`
/// (nothing written) when the lengths differ.
pub(super) fn unshuffle_into(data: &[u8], es: usize, out: &mut [u8]) -> bool {
    if data.len() != out.len() {
        return false;
    }
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        out.copy_from_slice(data);
        return true;
    }
    match es {
        2 => unshuffle_n::<2>(data, out, n),
        4 => unshuffle_n::<4>(data, out, n),
        8 => unshuffle_n::<8>(data, out, n),
        16 => unshuffle_n::<16>(data, out, n),
        _ => {
            for (b, plane) in data.chunks_exact(n).take(es).enumerate() {
                for (dst, &src) in out.iter_mut().skip(b).step_by(es).zip(plane) {
                    *dst = src;
                }
            }
        }
    }
    let body = n * es;
    if let (Some(dst), Some(src)) = (out.get_mut(body..), data.get(body..)) {
        dst.copy_from_slice(src);
    }
    true
}

/// Unshuffle `n` elements of `ES` bytes (the common sizes, unrolled): walk
/// the output in blocks of elements so every byte plane is read sequentially.
fn unshuffle_n<const ES: usize>(data: &[u8], out: &mut [u8], n: usize) {
    const BLOCK: usize = 256;
    let (Some(planes), Some(out)) = (data.get(..n * ES), out.get_mut(..n * ES)) else {
        return;
    };
    match ES {
        2 => return unshuffle_2(planes, out, n),
        4 => return unshuffle_4(planes, out, n),
        8 => return unshuffle_8(planes, out, n),
        _ => {}
    }
    let mut i = 0;
    for dst in out.chunks_mut(BLOCK * ES) {
        let m = dst.len() / ES;
        // Gather BLOCK elements' bytes plane by plane into a fixed-size tile
        // (bounds known at compile time), then write whole elements.
        let mut tile = [[0u8; ES]; BLOCK];
        for b in 0..ES {
            let at = b * n + i;
            if let Some(src) = planes.get(at..at + m) {
                for (t, &v) in tile.iter_mut().zip(src) {
                    t[b] = v;
                }
            }
        }
        for (el, t) in dst.chunks_exact_mut(ES).zip(&tile) {
            el.copy_from_slice(t);
        }
        i += m;
    }
}

/// 2-byte elements: zip the two planes (the loop vectorizes).
fn unshuffle_2(planes: &[u8], out: &mut [u8], n: usize) {
    let (p0, p1) = planes.split_at(n.min(planes.len()));
    for (d, (&a, &b)) in out.chunks_exact_mut(2).zip(p0.iter().zip(p1)) {
        d.copy_from_slice(&[a, b]);
    }
}

/// 4-byte elements: AVX2 (when present) for runs of 32, then zip the four
/// planes.
fn unshuffle_4(planes: &[u8], out: &mut [u8], n: usize) {
    let n = n.min(planes.len() / 4);
    let (p0, r) = planes.split_at(n);
    let (p1, r) = r.split_at(n);
    let (p2, r) = r.split_at(n);
    let p3 = r.get(..n).unwrap_or(&[]);
    let done = unshuffle_simd(&[p0, p1, p2, p3], out, n);
    for (d, ((&a, &b), (&c, &e))) in out
        .chunks_exact_mut(4)
        .skip(done)
        .zip(p0.iter().zip(p1).zip(p2.iter().zip(p3)).skip(done))
    {
        d.copy_from_slice(&[a, b, c, e]);
    }
}

/// Unshuffle 32 elements of 4 bytes per step: two rounds of AVX2 unpacks
/// (bytes, then byte pairs) within the 128-bit lanes, then the lanes put
/// in element order (the zip loop of [`unshuffle_4`] took 13 % of a
/// shuffled zstd int32 column scan).
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_4_avx2(p: &[&[u8]; 4], out: &mut [u8], n: usize) -> usize {
    use core::arch::x86_64::*;
    let steps = n / 32;
    if p.iter().any(|plane| plane.len() < steps * 32) || out.len() < steps * 128 {
        return 0;
    }
    for k in 0..steps {
        let at = k * 32;
        // SAFETY: every plane holds at least `steps * 32` bytes (checked
        // above), so the 32 bytes at `at` are in bounds; unaligned loads.
        let v: [__m256i; 4] =
            core::array::from_fn(|b| unsafe { _mm256_loadu_si256(p[b].as_ptr().add(at).cast()) });
        // Per lane (elements 0-15 and 16-31 of the step): bytes (0, 1) and
        // (2, 3) of the lane's elements 0-7 (lo) and 8-15 (hi).
        let t01l = _mm256_unpacklo_epi8(v[0], v[1]);
        let t01h = _mm256_unpackhi_epi8(v[0], v[1]);
        let t23l = _mm256_unpacklo_epi8(v[2], v[3]);
        let t23h = _mm256_unpackhi_epi8(v[2], v[3]);
        // Per lane: whole elements 0-3, 4-7, 8-11, 12-15 of the lane.
        let x0 = _mm256_unpacklo_epi16(t01l, t23l);
        let x1 = _mm256_unpackhi_epi16(t01l, t23l);
        let x2 = _mm256_unpacklo_epi16(t01h, t23h);
        let x3 = _mm256_unpackhi_epi16(t01h, t23h);
        let dst = out[k * 128..k * 128 + 128].as_mut_ptr();
        // SAFETY: `dst` points at 128 bytes of `out`; four 32-byte stores.
        unsafe {
            _mm256_storeu_si256(dst.cast(), _mm256_permute2x128_si256::<0x20>(x0, x1));
            _mm256_storeu_si256(
                dst.add(32).cast(),
                _mm256_permute2x128_si256::<0x20>(x2, x3),
            );
            _mm256_storeu_si256(
                dst.add(64).cast(),
                _mm256_permute2x128_si256::<0x31>(x0, x1),
            );
            _mm256_storeu_si256(
                dst.add(96).cast(),
                _mm256_permute2x128_si256::<0x31>(x2, x3),
            );
        }
    }
    steps * 32
}

/// Interleave the `s`-bit lanes selected by `m` of `a` and `b`: the first
/// result holds the even lanes of both, the second the odd lanes.
#[inline(always)]
fn interleave(a: u64, b: u64, s: u32, m: u64) -> (u64, u64) {
    ((a & m) | ((b & m) << s), ((a >> s) & m) | (b & !m))
}

/// Transpose the 8 x 8 byte matrix whose rows are the little-endian bytes
/// of `r`, in three rounds of lane interleaves on `u64`s (no lookups, no
/// byte-wise stores). Its own inverse: it turns eight byte-plane words
/// into eight elements and eight elements into eight plane words.
#[inline(always)]
fn transpose8(r: [u64; 8]) -> [u64; 8] {
    const M8: u64 = 0x00FF_00FF_00FF_00FF;
    const M16: u64 = 0x0000_FFFF_0000_FFFF;
    const M32: u64 = 0x0000_0000_FFFF_FFFF;
    // Bytes of planes (2q, 2q+1) paired per even / odd element.
    let (a0, b0) = interleave(r[0], r[1], 8, M8);
    let (a1, b1) = interleave(r[2], r[3], 8, M8);
    let (a2, b2) = interleave(r[4], r[5], 8, M8);
    let (a3, b3) = interleave(r[6], r[7], 8, M8);
    // Planes 0-3 (and 4-7) of elements 0 mod 4, 2 mod 4, 1 mod 4, 3 mod 4.
    let (c0, d0) = interleave(a0, a1, 16, M16);
    let (e0, f0) = interleave(b0, b1, 16, M16);
    let (c1, d1) = interleave(a2, a3, 16, M16);
    let (e1, f1) = interleave(b2, b3, 16, M16);
    // Whole elements.
    let (x0, x4) = interleave(c0, c1, 32, M32);
    let (x2, x6) = interleave(d0, d1, 32, M32);
    let (x1, x5) = interleave(e0, e1, 32, M32);
    let (x3, x7) = interleave(f0, f1, 32, M32);
    [x0, x1, x2, x3, x4, x5, x6, x7]
}

/// 8-byte elements: eight elements at a time, as an 8 x 8 byte-matrix
/// transpose (~3x the byte-gather loop).
fn unshuffle_8(planes: &[u8], out: &mut [u8], n: usize) {
    let n = n.min(planes.len() / 8);
    let mut p: [&[u8]; 8] = [&[]; 8];
    let mut rest = planes;
    for plane in &mut p {
        let (a, r) = rest.split_at(n);
        *plane = a;
        rest = r;
    }
    let word = |plane: &[u8], k: usize| -> u64 {
        let mut w = [0u8; 8];
        if let Some(s) = plane.get(k * 8..k * 8 + 8) {
            w.copy_from_slice(s);
        }
        u64::from_le_bytes(w)
    };
    let full = n / 8;
    // Elements already placed by the vector loop (a multiple of 8).
    let done = unshuffle_simd(&p, out, n);
    for (k, d) in out
        .chunks_exact_mut(64)
        .take(full)
        .enumerate()
        .skip(done / 8)
    {
        // Row i: elements 8k..8k+8 of byte plane i.
        let r: [u64; 8] = core::array::from_fn(|i| word(p[i], k));
        let [x0, x1, x2, x3, x4, x5, x6, x7] = transpose8(r);
        for (el, x) in d.chunks_exact_mut(8).zip([x0, x1, x2, x3, x4, x5, x6, x7]) {
            el.copy_from_slice(&x.to_le_bytes());
        }
    }
    let tail = full * 8;
    for (j, el) in out.chunks_exact_mut(8).enumerate().skip(tail) {
        for (dst, plane) in el.iter_mut().zip(&p) {
            if let Some(&v) = plane.get(j) {
                *dst = v;
            }
        }
    }
}

/// The vector part of [`unshuffle_4`] and [`unshuffle_8`] (`p` holds the
/// 4 or 8 byte planes): with AVX2 (detected at run time), 32 elements at a
/// time; returns how many elements it placed.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
fn unshuffle_simd(p: &[&[u8]], out: &mut [u8], n: usize) -> usize {
    if n < 32 || !std::is_x86_feature_detected!("avx2") {
        return 0;
    }
    // SAFETY: AVX2 is present (checked just above).
    match p {
        [a, b, c, d] => unsafe { unshuffle_4_avx2(&[a, b, c, d], out, n) },
        [a, b, c, d, e, f, g, h] => unsafe { unshuffle_8_avx2(&[a, b, c, d, e, f, g, h], out, n) },
        _ => 0,
    }
}

#[cfg(not(all(feature = "std", target_arch = "x86_64")))]
fn unshuffle_simd(_p: &[&[u8]], _out: &mut [u8], _n: usize) -> usize {
    0
}

/// Unshuffle 32 elements of 8 bytes per step with three rounds of AVX2
/// unpacks (bytes, then byte pairs, then 4-byte halves), each within the
/// two 128-bit lanes, and a final exchange of lanes. The scalar
/// [`transpose8`] does the same per 8 elements; this measured ~3x faster
/// on the zstd benchmark's 1 MiB chunks.
///
/// # Safety
/// The CPU must support AVX2.
#[cfg(all(feature = "std", target_arch = "x86_64"))]
#[target_feature(enable = "avx2")]
unsafe fn unshuffle_8_avx2(p: &[&[u8]; 8], out: &mut [u8], n: usize) -> usize {
    use core::arch::x86_64::*;
    let steps = n / 32;
    if p.iter().any(|plane| plane.len() < steps * 32) || out.len() < steps * 256 {
        return 0;
    }
    for k in 0..steps {
        let at = k * 32;
        // SAFETY: every plane holds at least `steps * 32` bytes (checked
        // above), so the 32 bytes at `at` are in bounds; unaligned loads.
        let v: [__m256i; 8] =
            core::array::from_fn(|b| unsafe { _mm256_loadu_si256(p[b].as_ptr().add(at).cast()) });
        // Per lane: bytes (b, b+1) of elements 0-7 (lo) and 8-15 (hi).
        let t01l = _mm256_unpacklo_epi8(v[0], v[1]);
        let t01h = _mm256_unpackhi_epi8(v[0], v[1]);
        let t23l = _mm256_unpacklo_epi8(v[2], v[3]);
        let t23h = _mm256_unpackhi_epi8(v[2], v[3]);
        let t45l = _mm256_unpacklo_epi8(v[4], v[5]);
        let t45h = _mm256_unpackhi_epi8(v[4], v[5]);
        let t67l = _mm256_unpacklo_epi8(v[6], v[7]);
        let t67h = _mm256_unpackhi_epi8(v[6], v[7]);
        // Per lane: bytes 0-3 (u) and 4-7 (w) of elements 0-3, 4-7, 8-11, 12-15.
        let u = [
            _mm256_unpacklo_epi16(t01l, t23l),
            _mm256_unpackhi_epi16(t01l, t23l),
            _mm256_unpacklo_epi16(t01h, t23h),
            _mm256_unpackhi_epi16(t01h, t23h),
        ];
        let w = [
            _mm256_unpacklo_epi16(t45l, t67l),
            _mm256_unpackhi_epi16(t45l, t67l),
            _mm256_unpacklo_epi16(t45h, t67h),
            _mm256_unpackhi_epi16(t45h, t67h),
        ];
        // Per lane: whole elements, two per vector: x[2j] holds elements
        // 4j, 4j+1 and x[2j+1] elements 4j+2, 4j+3 of the lane's 16.
        let mut x = [_mm256_setzero_si256(); 8];
        for j in 0..4 {
            x[2 * j] = _mm256_unpacklo_epi32(u[j], w[j]);
            x[2 * j + 1] = _mm256_unpackhi_epi32(u[j], w[j]);
        }
        // Lane 0 holds elements 0-15 of the step, lane 1 elements 16-31.
        let dst = out[k * 256..k * 256 + 256].as_mut_ptr();
        for j in 0..4 {
            let lo = _mm256_permute2x128_si256::<0x20>(x[2 * j], x[2 * j + 1]);
            let hi = _mm256_permute2x128_si256::<0x31>(x[2 * j], x[2 * j + 1]);
            // SAFETY: `dst` points at 256 bytes of `out`; the stores write
            // 32 bytes at offsets 32j and 128 + 32j.
            unsafe {
                _mm256_storeu_si256(dst.add(32 * j).cast(), lo);
                _mm256_storeu_si256(dst.add(128 + 32 * j).cast(), hi);
            }
        }
    }
    steps * 32
}

/// Shuffle elements of `es` bytes: byte plane b holds byte b of every
/// element; trailing bytes that do not form an element stay as they are.
pub(super) fn shuffle(data: &[u8], es: usize) -> Vec<u8> {
    let mut out = Vec::new();
    shuffle_into(data, es, &mut out);
    out
}

/// As [`shuffle`], into `out` (resized to `data`'s length; a buffer reused
/// across chunks of the same size is not cleared again).
pub(super) fn shuffle_into(data: &[u8], es: usize, out: &mut Vec<u8>) {
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        out.clear();
        out.extend_from_slice(data);
        return;
    }
    if out.len() != data.len() {
        out.resize(data.len(), 0);
    }
    match es {
        2 => shuffle_n::<2>(data, out, n),
        4 => shuffle_n::<4>(data, out, n),
        8 => shuffle_8(data, out, n),
        16 => shuffle_n::<16>(data, out, n),
        _ => {
            for (b, plane) in out.chunks_exact_mut(n).take(es).enumerate() {
                for (dst, &src) in plane.iter_mut().zip(data.iter().skip(b).step_by(es)) {
                    *dst = src;
                }
            }
        }
    }
    let body = n * es;
    if let (Some(dst), Some(src)) = (out.get_mut(body..), data.get(body..)) {
        dst.copy_from_slice(src);
    }
}

/// Shuffle `n` elements of 8 bytes: eight elements at a time, transposed
/// into one word of each byte plane ([`transpose8`]).
fn shuffle_8(data: &[u8], out: &mut [u8], n: usize) {
    let (Some(src), Some(planes)) = (data.get(..n * 8), out.get_mut(..n * 8)) else {
        return;
    };
    let full = n / 8;
    {
        let mut p: [&mut [u8]; 8] = Default::default();
        let mut rest = &mut *planes;
        for plane in &mut p {
            let (a, r) = rest.split_at_mut(n);
            *plane = a;
            rest = r;
        }
        for (k, block) in src.chunks_exact(64).take(full).enumerate() {
            let r: [u64; 8] = core::array::from_fn(|i| {
                let mut w = [0u8; 8];
                if let Some(b) = block.get(i * 8..i * 8 + 8) {
                    w.copy_from_slice(b);
                }
                u64::from_le_bytes(w)
            });
            for (plane, x) in p.iter_mut().zip(transpose8(r)) {
                if let Some(d) = plane.get_mut(k * 8..k * 8 + 8) {
                    d.copy_from_slice(&x.to_le_bytes());
                }
            }
        }
    }
    // The last n mod 8 elements byte by byte.
    for j in full * 8..n {
        for b in 0..8 {
            if let (Some(d), Some(&v)) = (planes.get_mut(b * n + j), src.get(j * 8 + b)) {
                *d = v;
            }
        }
    }
}

/// Shuffle `n` elements of `ES` bytes (the common sizes, unrolled): read the
/// input in blocks of whole elements into a fixed-size tile, then write each
/// byte plane's part of the block sequentially.
fn shuffle_n<const ES: usize>(data: &[u8], out: &mut [u8], n: usize) {
    const BLOCK: usize = 256;
    let (Some(src), Some(planes)) = (data.get(..n * ES), out.get_mut(..n * ES)) else {
        return;
    };
    let mut i = 0;
    for block in src.chunks(BLOCK * ES) {
        let m = block.len() / ES;
        let mut tile = [[0u8; ES]; BLOCK];
        for (t, el) in tile.iter_mut().zip(block.chunks_exact(ES)) {
            t.copy_from_slice(el);
        }
        for b in 0..ES {
            let at = b * n + i;
            if let Some(dst) = planes.get_mut(at..at + m) {
                for (d, t) in dst.iter_mut().zip(&tile) {
                    *d = t[b];
                }
            }
        }
        i += m;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshuffles_with_tail() {
        // Elements [1,2,3],[4,5,6] shuffled -> 1 4 2 5 3 6, plus a trailing byte 9.
        let v = unshuffle(alloc::vec![1, 4, 2, 5, 3, 6, 9], 3).unwrap();
        assert_eq!(v, [1, 2, 3, 4, 5, 6, 9]);
        assert_eq!(unshuffle(alloc::vec![7, 8], 4).unwrap(), [7, 8]);
    }

    #[test]
    fn shuffle_matches_definition() {
        for es in [1usize, 2, 3, 4, 8, 16] {
            for n in [0usize, 1, 2, 5, 255, 256, 257, 1000] {
                let v: Vec<u8> = (0..(n * es + 3)).map(|i| (i * 31 + i / 7) as u8).collect();
                let sh = shuffle(&v, es);
                let m = v.len() / es;
                let mut want = Vec::new();
                if es <= 1 || m <= 1 {
                    want = v.clone();
                } else {
                    for b in 0..es {
                        for i in 0..m {
                            want.push(v[i * es + b]);
                        }
                    }
                    want.extend_from_slice(&v[m * es..]);
                }
                assert_eq!(sh, want, "es {es} n {n}");
                assert_eq!(unshuffle(sh, es).unwrap(), v);
            }
        }
    }

    #[test]
    fn unshuffle_into_matches_unshuffle() {
        for es in [1usize, 3, 8] {
            let v: Vec<u8> = (0..(517 * es + 2)).map(|i| (i * 13) as u8).collect();
            let sh = shuffle(&v, es);
            let mut out = alloc::vec![0u8; v.len()];
            assert!(unshuffle_into(&sh, es, &mut out));
            assert_eq!(out, v);
            assert!(!unshuffle_into(&sh, es, &mut out[1..]));
        }
    }

    #[test]
    fn unshuffle_specialized_sizes_match_shuffle() {
        for es in [2usize, 3, 4, 8, 16] {
            for len in [
                0usize,
                1,
                7,
                64 * es,
                64 * es * 3 + 5,
                1000 * es + 3,
                8 * es + 1,
                17 * es,
                4097 * es,
            ] {
                let v: Vec<u8> = (0..len).map(|i| (i * 7 + i / 251) as u8).collect();
                assert_eq!(
                    unshuffle(shuffle(&v, es), es).unwrap(),
                    v,
                    "es {es} len {len}"
                );
            }
        }
    }
}
