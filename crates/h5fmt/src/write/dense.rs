//! Dense link and attribute storage (spec III.G fractal heaps, III.A.2
//! version 2 B-trees, IV.A.2.c/IV.A.2.v link and attribute info messages):
//! the messages go to a fractal heap and a v2 B-tree indexes them by the
//! lookup3 hash of their names (record type 5 for links, 8 for attributes).
//!
//! libhdf5 switches a group or an object to dense storage when it has more
//! than 8 links or attributes (`max_compact`, the default of the group info
//! message and of the object creation property list) or, for attributes,
//! when one does not fit an object header message (64 KiB). Every heap
//! written here is one direct block and every index one leaf: storage for
//! up to 64 KiB of link messages (7-byte heap ids) and 16 MiB of attribute
//! messages (8-byte heap ids).

use super::FileWriter;
use crate::codec::{lookup3, Encoder};
use crate::error::{Error, Result};
use crate::format::fractal_heap::encode_single_block_heap;
use crate::Addr;
use alloc::vec::Vec;

/// Links or attributes beyond this count are stored densely (libhdf5's default).
pub(super) const MAX_COMPACT: usize = 8;
/// Heap id length of dense links (`H5G_DENSE_FHEAP_ID_LEN`).
pub(super) const LINK_ID_LEN: u16 = 7;
/// Heap id length of dense attributes (`H5O_FHEAP_ID_LEN`).
pub(super) const ATTR_ID_LEN: u16 = 8;
/// v2 B-tree record type of the link name index.
const REC_LINK_NAME: u8 = 5;
/// v2 B-tree record type of the attribute name index.
const REC_ATTR_NAME: u8 = 8;

/// The largest direct block for an id length (4-byte offsets, then the
/// length field: 2 bytes up to 64 KiB, 3 bytes up to 16 MiB).
pub(super) fn max_block(id_len: u16) -> u64 {
    if id_len >= 8 {
        1 << 24
    } else {
        1 << 16
    }
}

/// Whether `messages` (with `offsets`-byte addresses) fit one heap block.
pub(super) fn fits(messages_len: usize, id_len: u16, offsets: u8) -> bool {
    (5 + usize::from(offsets) + 4 + messages_len) as u64 <= max_block(id_len)
}

/// Write the heap of `objects` and return (heap header address, ids).
fn write_heap(fw: &mut FileWriter, objects: &[&[u8]], id_len: u16) -> Result<(Addr, Vec<Vec<u8>>)> {
    let sizes = fw.ctx.sizes;
    let need =
        5 + u64::from(sizes.offsets) + 4 + objects.iter().map(|o| o.len() as u64).sum::<u64>();
    let block = need.next_power_of_two().max(512);
    if block > max_block(id_len) {
        return Err(Error::unsupported(
            "dense storage larger than one heap block",
        ));
    }
    let hdr_len = {
        // Header size: encode once with placeholder addresses.
        let (h, _, _) = encode_single_block_heap(sizes, Addr(0), Addr(0), block, id_len, objects)?;
        h.len() as u64
    };
    let hdr = fw.alloc(hdr_len);
    let blk = fw.alloc(block);
    let (h, b, ids) = encode_single_block_heap(sizes, hdr, blk, block, id_len, objects)?;
    fw.sink.write_at(hdr.get(), &h)?;
    fw.sink.write_at(blk.get(), &b)?;
    Ok((hdr, ids))
}

/// Write a v2 B-tree of one leaf holding `records` (sorted) and return its
/// header address (UNDEF root when there are no records).
fn write_btree(
    fw: &mut FileWriter,
    record_type: u8,
    record_size: u16,
    records: &[Vec<u8>],
) -> Result<Addr> {
    let sizes = fw.ctx.sizes;
    let n = u16::try_from(records.len())
        .map_err(|_| Error::unsupported("more than 65535 dense entries"))?;
    let node_size = (10 + records.len() * usize::from(record_size)).max(512);
    let node_size32 = u32::try_from(node_size).map_err(|_| Error::usage("B-tree node size"))?;
    let leaf = if records.is_empty() {
        Addr::UNDEF
    } else {
        let a = fw.alloc(node_size as u64);
        let mut e = Encoder::with_capacity(node_size);
        e.put_bytes(b"BTLF");
        e.put_u8(0);
        e.put_u8(record_type);
        for r in records {
            e.put_bytes(r);
        }
        e.put_checksum_from(0);
        e.put_zeros(node_size - e.len());
        fw.sink.write_at(a.get(), e.as_bytes())?;
        a
    };
    let mut h = Encoder::new();
    h.put_bytes(b"BTHD");
    h.put_u8(0);
    h.put_u8(record_type);
    h.put_u32(node_size32);
    h.put_u16(record_size);
    h.put_u16(0); // depth: the root is a leaf
    h.put_u8(100); // split percent
    h.put_u8(40); // merge percent
    h.put_addr(leaf, sizes);
    h.put_u16(n);
    h.put_len(records.len() as u64, sizes);
    h.put_checksum_from(0);
    let a = fw.alloc(h.len() as u64);
    fw.sink.write_at(a.get(), h.as_bytes())?;
    Ok(a)
}

/// Write dense link storage for `(name, encoded link message)` pairs;
/// returns (heap, name index).
pub(super) fn write_links(fw: &mut FileWriter, links: &[(&str, Vec<u8>)]) -> Result<(Addr, Addr)> {
    let objs: Vec<&[u8]> = links.iter().map(|(_, m)| m.as_slice()).collect();
    let (heap, ids) = write_heap(fw, &objs, LINK_ID_LEN)?;
    let mut recs: Vec<(u32, &str, Vec<u8>)> = links
        .iter()
        .zip(ids)
        .map(|((name, _), id)| {
            let hash = lookup3(name.as_bytes(), 0);
            let mut r = Vec::with_capacity(11);
            r.extend_from_slice(&hash.to_le_bytes());
            r.extend_from_slice(&id);
            (hash, *name, r)
        })
        .collect();
    recs.sort_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
    let recs: Vec<Vec<u8>> = recs.into_iter().map(|r| r.2).collect();
    let index = write_btree(fw, REC_LINK_NAME, 4 + LINK_ID_LEN, &recs)?;
    Ok((heap, index))
}

/// Write dense attribute storage for `(name, encoded attribute message)`
/// pairs; returns (heap, name index).
pub(super) fn write_attrs(fw: &mut FileWriter, attrs: &[(&str, Vec<u8>)]) -> Result<(Addr, Addr)> {
    let objs: Vec<&[u8]> = attrs.iter().map(|(_, m)| m.as_slice()).collect();
    let (heap, ids) = write_heap(fw, &objs, ATTR_ID_LEN)?;
    let mut recs: Vec<(u32, &str, Vec<u8>)> = attrs
        .iter()
        .zip(ids)
        .map(|((name, _), id)| {
            let hash = lookup3(name.as_bytes(), 0);
            let mut r = Vec::with_capacity(17);
            r.extend_from_slice(&id);
            r.push(0); // message flags
            r.extend_from_slice(&0u32.to_le_bytes()); // creation order
            r.extend_from_slice(&hash.to_le_bytes());
            (hash, *name, r)
        })
        .collect();
    recs.sort_by(|a, b| (a.0, a.1.as_bytes()).cmp(&(b.0, b.1.as_bytes())));
    let recs: Vec<Vec<u8>> = recs.into_iter().map(|r| r.2).collect();
    let index = write_btree(fw, REC_ATTR_NAME, ATTR_ID_LEN + 1 + 4 + 4, &recs)?;
    Ok((heap, index))
}
