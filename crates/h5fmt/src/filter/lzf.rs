//! LZF filter (registered id 32000): Marc Lehmann's LZF format, as written by
//! h5py's filter. A control byte below 32 starts a literal run of `ctrl + 1`
//! bytes; otherwise its top three bits are a length (7 = extended by the next
//! byte) and the low five bits with the next byte a back-reference distance.

use crate::error::{Error, Result};
use alloc::vec::Vec;

pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    let mut out: Vec<u8> = Vec::new();
    out.try_reserve(bound.min(data.len().saturating_mul(4).max(64)))
        .map_err(|_| Error::limit("cannot allocate the lzf output"))?;
    let mut i = 0usize;
    let next = |i: &mut usize| -> Result<usize> {
        let b = data
            .get(*i)
            .copied()
            .ok_or_else(|| super::corrupt("lzf stream is truncated"))?;
        *i += 1;
        Ok(usize::from(b))
    };
    while i < data.len() {
        let ctrl = next(&mut i)?;
        if ctrl < 32 {
            let n = ctrl + 1;
            let lit = data
                .get(i..i + n)
                .ok_or_else(|| super::corrupt("lzf literal run is truncated"))?;
            if out.len() + n > bound {
                return Err(too_long(bound));
            }
            out.extend_from_slice(lit);
            i += n;
        } else {
            let mut len = ctrl >> 5;
            if len == 7 {
                len += next(&mut i)?;
            }
            len += 2;
            let dist = ((ctrl & 0x1f) << 8) + next(&mut i)? + 1;
            let start = out.len().checked_sub(dist).ok_or_else(|| {
                super::corrupt("lzf back-reference before the start of the output")
            })?;
            if out.len() + len > bound {
                return Err(too_long(bound));
            }
            // Overlapping copies repeat the pattern, so copy byte by byte.
            for k in start..start + len {
                let b = out.get(k).copied().unwrap_or(0);
                out.push(b);
            }
        }
    }
    Ok(out)
}

fn too_long(bound: usize) -> Error {
    Error::limit(alloc::format!("lzf output exceeds {bound} bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_and_backref() {
        // "abc" literal, then back-reference distance 3 length 6 -> "abcabcabc".
        let v = decode(&[2, b'a', b'b', b'c', (4 << 5), 2], 100).unwrap();
        assert_eq!(v, b"abcabcabc");
        assert!(decode(&[2, b'a', b'b', b'c', (4 << 5), 2], 5).is_err());
        assert!(decode(&[(1 << 5), 9], 100).is_err());
        assert!(decode(&[5, b'a'], 100).is_err());
    }
}
