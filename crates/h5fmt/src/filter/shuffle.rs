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

/// Shuffle elements of `es` bytes: byte plane b holds byte b of every
/// element; trailing bytes that do not form an element stay as they are.
pub(super) fn shuffle(data: &[u8], es: usize) -> Vec<u8> {
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        return data.to_vec();
    }
    let mut out = alloc::vec![0u8; data.len()];
    match es {
        2 => shuffle_n::<2>(data, &mut out, n),
        4 => shuffle_n::<4>(data, &mut out, n),
        8 => shuffle_n::<8>(data, &mut out, n),
        16 => shuffle_n::<16>(data, &mut out, n),
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
    out
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
            for len in [0usize, 1, 7, 64 * es, 64 * es * 3 + 5, 1000 * es + 3] {
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
