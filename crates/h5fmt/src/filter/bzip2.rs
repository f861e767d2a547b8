//! bzip2 filter (registered id 307): one bzip2 stream, decoded with the
//! pure-Rust `libbz2-rs-sys`.

use crate::error::{Error, Result};
use alloc::vec::Vec;

pub(super) fn decode(data: &[u8], bound: usize) -> Result<Vec<u8>> {
    let mut out = super::alloc_zeroed(bound)?;
    let mut dest_len =
        u32::try_from(bound).map_err(|_| Error::limit("bzip2 output larger than 4 GiB"))?;
    let src_len =
        u32::try_from(data.len()).map_err(|_| Error::limit("bzip2 input larger than 4 GiB"))?;
    // SAFETY: `out` is valid for `dest_len` writable bytes and `data` for
    // `src_len` readable bytes; the function writes at most `dest_len` bytes
    // and stores the count written in `dest_len`. The source is only read.
    let rc = unsafe {
        libbz2_rs_sys::BZ2_bzBuffToBuffDecompress(
            out.as_mut_ptr().cast(),
            &mut dest_len,
            data.as_ptr().cast_mut().cast(),
            src_len,
            0,
            0,
        )
    };
    match rc {
        libbz2_rs_sys::BZ_OK => {
            let n = usize::try_from(dest_len).unwrap_or(0).min(bound);
            out.truncate(n);
            Ok(out)
        }
        libbz2_rs_sys::BZ_OUTBUFF_FULL => Err(Error::limit(alloc::format!(
            "bzip2 output exceeds {bound} bytes"
        ))),
        libbz2_rs_sys::BZ_UNEXPECTED_EOF => Err(super::corrupt("bzip2 stream is truncated")),
        libbz2_rs_sys::BZ_MEM_ERROR => Err(Error::limit("bzip2 could not allocate its state")),
        rc => Err(super::corrupt(alloc::format!(
            "invalid bzip2 stream (code {rc})"
        ))),
    }
}
