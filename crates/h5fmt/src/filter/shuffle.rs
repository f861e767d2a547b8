//! Shuffle filter (id 2): bytes of each element were grouped by byte position.

use alloc::vec::Vec;

/// Undo the shuffle for elements of `es` bytes. Trailing bytes that do not
/// form a whole element were stored unshuffled and are kept as they are.
pub(super) fn unshuffle(data: Vec<u8>, es: usize) -> Vec<u8> {
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        return data;
    }
    let mut out = alloc::vec![0u8; data.len()];
    let body = n * es;
    // Byte plane b holds byte b of every element.
    for (b, plane) in data.chunks_exact(n).take(es).enumerate() {
        for (dst, &src) in out.iter_mut().skip(b).step_by(es).zip(plane) {
            *dst = src;
        }
    }
    if let (Some(dst), Some(src)) = (out.get_mut(body..), data.get(body..)) {
        dst.copy_from_slice(src);
    }
    out
}

/// Shuffle elements of `es` bytes: byte plane b holds byte b of every
/// element; trailing bytes that do not form an element stay as they are.
pub(super) fn shuffle(data: &[u8], es: usize) -> Vec<u8> {
    let n = data.len().checked_div(es).unwrap_or(0);
    if es <= 1 || n <= 1 {
        return data.to_vec();
    }
    let mut out = Vec::with_capacity(data.len());
    for b in 0..es {
        out.extend(data.iter().skip(b).step_by(es).take(n));
    }
    out.extend_from_slice(data.get(n * es..).unwrap_or(&[]));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unshuffles_with_tail() {
        // Elements [1,2,3],[4,5,6] shuffled -> 1 4 2 5 3 6, plus a trailing byte 9.
        let v = unshuffle(alloc::vec![1, 4, 2, 5, 3, 6, 9], 3);
        assert_eq!(v, [1, 2, 3, 4, 5, 6, 9]);
        assert_eq!(unshuffle(alloc::vec![7, 8], 4), [7, 8]);
    }
}
