//! Global heap collections (`GCOL`), spec III.E: version 1.
//!
//! Layout as libhdf5 writes it (`H5HGcache.c`): the collection header
//! (signature, version, 3 reserved bytes, collection size) padded to a
//! multiple of 8; then objects, each a header (index u16, reference count
//! u16, 4 reserved bytes, size) padded to a multiple of 8 followed by the
//! data padded to a multiple of 8. Object 0 is the free space; its size
//! counts its own header and it is not padded. A tail too short for an
//! object header is implied free space. libhdf5 2.0 rejects collections
//! smaller than 4096 bytes; this decoder accepts them.

use crate::addr::Sizes;
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::collections::BTreeMap;
use alloc::vec::Vec;

/// Round `x` up to a multiple of 8.
fn align8(x: u64) -> Option<u64> {
    x.checked_add(7).map(|v| v & !7)
}

/// Bytes of the collection header (padded).
pub fn header_len(sizes: Sizes) -> usize {
    (8 + usize::from(sizes.lengths) + 7) & !7
}

/// Bytes of an object header (padded).
pub fn object_header_len(sizes: Sizes) -> usize {
    (8 + usize::from(sizes.lengths) + 7) & !7
}

/// Decode the collection header and return the collection size (which
/// includes the header itself).
///
/// # Errors
/// `Truncated`; `Corrupt` for a bad signature, version, or a size smaller than the header.
pub fn decode_collection_size(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<u64> {
    cur.expect_signature(b"GCOL")?;
    let at = cur.offset();
    let version = cur.read_u8()?;
    if version != 1 {
        return Err(Error::corrupt(
            alloc::format!("global heap collection version {version}"),
            at,
        ));
    }
    cur.skip(3)?;
    let size_at = cur.offset();
    let size = cur.read_len(ctx.sizes)?;
    if size < header_len(ctx.sizes) as u64 {
        return Err(Error::corrupt(
            alloc::format!("global heap collection size {size} is too small"),
            size_at,
        ));
    }
    Ok(size)
}

/// Where one object's data lies in the collection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectSpan {
    /// Reference count.
    pub refcount: u16,
    /// Start of the data, relative to the collection's first byte.
    pub start: usize,
    /// Data length in bytes.
    pub len: usize,
}

/// A decoded collection: object index → data span.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Collection {
    /// Objects by index (object 0, the free space, is not listed).
    pub objects: BTreeMap<u16, ObjectSpan>,
}

impl Collection {
    /// Decode a whole collection; `cur` spans exactly the collection's bytes.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad header, an object that runs past the
    /// collection, or an index that appears twice.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let list = Self::decode_list(cur, ctx)?;
        Ok(Collection {
            objects: list.into_iter().collect(),
        })
    }

    /// Decode a whole collection into its objects sorted by index (cheaper
    /// than the map for readers that look objects up by index).
    ///
    /// # Errors
    /// As [`Collection::decode`].
    pub fn decode_list(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Vec<(u16, ObjectSpan)>> {
        let size = decode_collection_size(cur, ctx)?;
        let total = cur.data().len();
        if size != total as u64 {
            return Err(cur.corrupt(alloc::format!(
                "collection size {size} but {total} bytes given"
            )));
        }
        cur.seek(header_len(ctx.sizes))?;
        let ohdr = object_header_len(ctx.sizes);
        // Room for objects of 1 to 8 bytes (more grow the list); fallible: the size is the file's.
        let mut objects: Vec<(u16, ObjectSpan)> = Vec::new();
        let _ = objects.try_reserve(total / (ohdr + 8));
        let mut sorted = true;
        while cur.remaining() >= ohdr {
            let start = cur.pos();
            let at = cur.offset();
            let index = cur.read_u16()?;
            let refcount = cur.read_u16()?;
            cur.skip(4)?;
            let osize = cur.read_len(ctx.sizes)?;
            let next = if index == 0 {
                // Free space: its size includes its header; everything after is free too.
                break;
            } else {
                let span = align8(osize).and_then(|s| s.checked_add(ohdr as u64));
                let end = span
                    .and_then(|s| s.checked_add(start as u64))
                    .filter(|&e| e <= total as u64);
                let Some(end) = end else {
                    return Err(Error::corrupt(
                        alloc::format!(
                            "global heap object {index} of {osize} bytes runs past its collection"
                        ),
                        at,
                    ));
                };
                let len = usize::try_from(osize).map_err(|_| Error::corrupt("object size", at))?;
                if let Some(&(prev, _)) = objects.last() {
                    if index == prev {
                        return Err(twice(index, at));
                    }
                    sorted &= index > prev;
                }
                objects.push((
                    index,
                    ObjectSpan {
                        refcount,
                        start: start + ohdr,
                        len,
                    },
                ));
                usize::try_from(end).map_err(|_| Error::corrupt("object end", at))?
            };
            cur.seek(next)?;
        }
        if !sorted {
            objects.sort_by_key(|&(i, _)| i);
            if let Some(w) = objects.windows(2).find(|w| w[0].0 == w[1].0) {
                return Err(twice(w[0].0, cur.offset()));
            }
        }
        Ok(objects)
    }

    /// Look an object up in a list from [`Collection::decode_list`].
    pub fn find(list: &[(u16, ObjectSpan)], index: u16) -> Option<&ObjectSpan> {
        // Objects are usually numbered 1, 2, 3, ... in order.
        match list.get(usize::from(index).wrapping_sub(1)) {
            Some((i, span)) if *i == index => Some(span),
            _ => list
                .binary_search_by_key(&index, |&(i, _)| i)
                .ok()
                .and_then(|k| list.get(k))
                .map(|(_, s)| s),
        }
    }
}

fn twice(index: u16, at: u64) -> Error {
    Error::corrupt(
        alloc::format!("global heap object index {index} appears twice"),
        at,
    )
}

/// The smallest collection libhdf5 accepts (and allocates).
pub const MIN_COLLECTION_SIZE: usize = 4096;

/// Bytes that `objects` take in a collection (object headers and data, each
/// padded to 8), without the collection header and the free-space object.
pub fn objects_len(sizes: Sizes, object_sizes: impl IntoIterator<Item = usize>) -> usize {
    object_sizes
        .into_iter()
        .map(|n| object_header_len(sizes) + n.div_ceil(8) * 8)
        .sum()
}

/// Encode a collection of `size` bytes holding `objects` (index, data) with
/// reference count 0 (as libhdf5 writes variable-length data), the rest as
/// free-space object 0.
///
/// # Errors
/// `Usage` when the objects do not fit in `size`, or an index is 0.
pub fn encode_collection(
    enc: &mut Encoder,
    ctx: Ctx,
    size: usize,
    objects: &[(u16, &[u8])],
) -> Result<()> {
    let s = ctx.sizes;
    let used = header_len(s) + objects_len(s, objects.iter().map(|(_, d)| d.len()));
    if used > size || objects.iter().any(|(i, _)| *i == 0) {
        return Err(Error::usage(
            "global heap objects do not fit the collection",
        ));
    }
    let start = enc.len();
    enc.put_bytes(b"GCOL");
    enc.put_u8(1);
    enc.put_zeros(3);
    enc.put_len(size as u64, s);
    enc.put_zeros(start + header_len(s) - enc.len());
    for (index, data) in objects {
        enc.put_u16(*index);
        enc.put_u16(0);
        enc.put_u32(0);
        enc.put_len(data.len() as u64, s);
        enc.put_bytes(data);
        enc.put_zeros(data.len().div_ceil(8) * 8 - data.len());
    }
    let free = size - used;
    if free >= object_header_len(s) {
        enc.put_u16(0);
        enc.put_u16(0);
        enc.put_u32(0);
        enc.put_len(free as u64, s);
    }
    enc.put_zeros((start + size).saturating_sub(enc.len()));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec::Vec;

    fn collection(objs: &[(u16, &[u8])], size: usize) -> Vec<u8> {
        let mut b = Vec::new();
        b.extend_from_slice(b"GCOL\x01\0\0\0");
        b.extend_from_slice(&(size as u64).to_le_bytes());
        for (i, d) in objs {
            b.extend_from_slice(&i.to_le_bytes());
            b.extend_from_slice(&1u16.to_le_bytes());
            b.extend_from_slice(&[0; 4]);
            b.extend_from_slice(&(d.len() as u64).to_le_bytes());
            b.extend_from_slice(d);
            while b.len() % 8 != 0 {
                b.push(0);
            }
        }
        let free = size - b.len();
        if free >= 16 {
            b.extend_from_slice(&[0; 8]);
            b.extend_from_slice(&(free as u64).to_le_bytes());
        }
        b.resize(size, 0);
        b
    }

    #[test]
    fn decodes_hand_built_collection() {
        let b = collection(&[(1, b"hello"), (2, b""), (7, b"0123456789abcdef")], 128);
        let c = Collection::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(c.objects.len(), 3);
        let o = c.objects[&1];
        assert_eq!(&b[o.start..o.start + o.len], b"hello");
        assert_eq!(c.objects[&2].len, 0);
        let o = c.objects[&7];
        assert_eq!(&b[o.start..o.start + o.len], b"0123456789abcdef");
        // A tail shorter than an object header is implied free space.
        let b = collection(&[(1, b"hello")], 40);
        assert_eq!(
            Collection::decode(&mut Cursor::new(&b, 0), Ctx::default())
                .unwrap()
                .objects
                .len(),
            1
        );
    }

    #[test]
    fn rejects_overlong_object_and_duplicates() {
        let mut b = collection(&[(1, b"hello")], 64);
        b[24..32].copy_from_slice(&1000u64.to_le_bytes());
        let e = Collection::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
        let b = collection(&[(1, b"a"), (1, b"b")], 64);
        let e = Collection::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Corrupt);
    }
}
