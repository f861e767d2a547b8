//! Fletcher-32 filter (id 3): a checksum appended to the chunk.
//!
//! libhdf5 stores the checksum little-endian in the last 4 bytes and, for
//! files from releases before 1.6.3, also accepts the value with the bytes of
//! each 16-bit half swapped.

use crate::codec::fletcher32;
use crate::error::{Error, ErrorKind, Result};
use alloc::vec::Vec;

pub(super) fn verify(mut data: Vec<u8>) -> Result<Vec<u8>> {
    let body_len = check(&data)?.len();
    data.truncate(body_len);
    Ok(data)
}

/// Verify the checksum at the end of `data`; return the body before it.
pub(super) fn check(data: &[u8]) -> Result<&[u8]> {
    let body_len = data
        .len()
        .checked_sub(4)
        .ok_or_else(|| super::corrupt("chunk shorter than its fletcher32 checksum"))?;
    let mut stored = [0u8; 4];
    if let Some(s) = data.get(body_len..) {
        stored.copy_from_slice(s);
    }
    let stored = u32::from_le_bytes(stored);
    let body = data.get(..body_len).unwrap_or(&[]);
    let sum = fletcher32(body);
    let b = sum.to_le_bytes();
    let reversed = u32::from_le_bytes([b[1], b[0], b[3], b[2]]);
    if stored != sum && stored != reversed {
        return Err(Error::new(
            ErrorKind::Checksum,
            alloc::format!("fletcher32 mismatch: stored {stored:#010x}, computed {sum:#010x}"),
        ));
    }
    Ok(body)
}

/// Append the Fletcher-32 checksum of `data`, little-endian.
pub(super) fn append(mut data: Vec<u8>) -> Vec<u8> {
    let sum = fletcher32(&data);
    data.extend_from_slice(&sum.to_le_bytes());
    data
}
