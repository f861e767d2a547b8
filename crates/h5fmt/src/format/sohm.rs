//! Shared object header message structures, spec III.H: the master table
//! (`SMTB`, version 0 index headers) and the shared message record list
//! (`SMLI`), both with lookup3 checksums; and the shared message record,
//! also the record of v2 B-tree type 7 (SOHM indexes stored as B-trees).

use crate::codec::{lookup3, Cursor};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Master table signature.
pub const SMTB_SIGNATURE: [u8; 4] = *b"SMTB";
/// Record list signature.
pub const SMLI_SIGNATURE: [u8; 4] = *b"SMLI";

/// Index kind: a list (`SMLI`) or a v2 B-tree (record type 7).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SohmIndexKind {
    /// Records kept in a `SMLI` list block.
    List,
    /// Records kept in a version 2 B-tree.
    BTree,
}

/// One index of the master table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SohmIndex {
    /// List or B-tree.
    pub kind: SohmIndexKind,
    /// Bit set of message types stored in this index: bit n set = message
    /// type n (libhdf5's `H5O_SHMESG_*_FLAG`: 1 << 1 dataspace, 1 << 3
    /// datatype, 1 << 5 fill value, 1 << 11 filter pipeline, 1 << 12 attribute).
    pub message_types: u16,
    /// Minimum message size to be shared.
    pub min_message_size: u32,
    /// Above this many messages the list becomes a B-tree.
    pub list_cutoff: u16,
    /// Below this many messages the B-tree becomes a list.
    pub btree_cutoff: u16,
    /// Number of messages currently stored.
    pub num_messages: u16,
    /// Address of the `SMLI` list or of the v2 B-tree header.
    pub index_addr: Addr,
    /// Fractal heap holding the shared messages.
    pub heap_addr: Addr,
}

impl SohmIndex {
    /// Encoded size of one index header.
    pub fn encoded_len(ctx: Ctx) -> usize {
        1 + 1 + 2 + 4 + 2 + 2 + 2 + 2 * usize::from(ctx.sizes.offsets)
    }
}

/// The shared object header message master table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SohmTable {
    /// The indexes, in order.
    pub indexes: Vec<SohmIndex>,
}

impl SohmTable {
    /// Encoded size of a table with `num_indexes` indexes.
    pub fn encoded_len(num_indexes: u8, ctx: Ctx) -> usize {
        4 + usize::from(num_indexes) * SohmIndex::encoded_len(ctx) + 4
    }

    /// Decode a master table with `num_indexes` indexes (from the shared
    /// message table message); `cur` starts at `SMTB` and must hold at least
    /// [`SohmTable::encoded_len`] bytes. The checksum is verified first.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, num_indexes: u8, ctx: Ctx) -> Result<Self> {
        let len = Self::encoded_len(num_indexes, ctx);
        let mut c = cur.sub(len)?;
        verify_checksum(c.data(), c.base(), "SOHM master table")?;
        c.expect_signature(&SMTB_SIGNATURE)?;
        let mut indexes = Vec::with_capacity(usize::from(num_indexes));
        for _ in 0..num_indexes {
            let at = c.offset();
            let version = c.read_u8()?;
            if version != 0 {
                return Err(Error::corrupt(
                    alloc::format!("SOHM index version {version}"),
                    at,
                ));
            }
            let kind_at = c.offset();
            let kind = match c.read_u8()? {
                0 => SohmIndexKind::List,
                1 => SohmIndexKind::BTree,
                k => {
                    return Err(Error::corrupt(
                        alloc::format!("SOHM index type {k}"),
                        kind_at,
                    ))
                }
            };
            indexes.push(SohmIndex {
                kind,
                message_types: c.read_u16()?,
                min_message_size: c.read_u32()?,
                list_cutoff: c.read_u16()?,
                btree_cutoff: c.read_u16()?,
                num_messages: c.read_u16()?,
                index_addr: c.read_addr(ctx.sizes)?,
                heap_addr: c.read_addr(ctx.sizes)?,
            });
        }
        Ok(SohmTable { indexes })
    }
}

impl SohmTable {
    /// Encode the master table (signature, index headers, checksum): the
    /// exact inverse of [`SohmTable::decode`].
    pub fn encode(&self, ctx: Ctx) -> Vec<u8> {
        let mut e = crate::codec::Encoder::new();
        e.put_bytes(&SMTB_SIGNATURE);
        for i in &self.indexes {
            e.put_u8(0);
            e.put_u8(match i.kind {
                SohmIndexKind::List => 0,
                SohmIndexKind::BTree => 1,
            });
            e.put_u16(i.message_types);
            e.put_u32(i.min_message_size);
            e.put_u16(i.list_cutoff);
            e.put_u16(i.btree_cutoff);
            e.put_u16(i.num_messages);
            e.put_addr(i.index_addr, ctx.sizes);
            e.put_addr(i.heap_addr, ctx.sizes);
        }
        let sum = lookup3(e.as_bytes(), 0);
        e.put_u32(sum);
        e.into_vec()
    }
}

/// Encode a record list (`SMLI`) block of `list_size` bytes holding the
/// record slots `slots` (each [`SohmRecord::encoded_len`] bytes, as read):
/// signature, the slots, the checksum, zeros up to `list_size` (libhdf5
/// allocates the block for its maximum number of records).
///
/// # Errors
/// `Usage` when a slot has the wrong size or the records do not fit.
pub fn encode_list(slots: &[Vec<u8>], list_size: usize, ctx: Ctx) -> Result<Vec<u8>> {
    let slot = SohmRecord::encoded_len(ctx);
    if slots.iter().any(|s| s.len() != slot) {
        return Err(Error::usage("SOHM record slot of the wrong size"));
    }
    let mut b = Vec::with_capacity(list_size);
    b.extend_from_slice(&SMLI_SIGNATURE);
    for s in slots {
        b.extend_from_slice(s);
    }
    let sum = lookup3(&b, 0);
    b.extend_from_slice(&sum.to_le_bytes());
    if b.len() > list_size {
        return Err(Error::usage("SOHM records do not fit the list block"));
    }
    b.resize(list_size, 0);
    Ok(b)
}

/// Where a shared message record points.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SohmLocation {
    /// In the index's fractal heap.
    Heap {
        /// Number of objects sharing the message.
        refcount: u32,
        /// Fractal heap id (8 bytes).
        heap_id: [u8; 8],
    },
    /// Still in an object header (not yet moved to the heap).
    ObjectHeader {
        /// Message type.
        message_type: u8,
        /// Index of the message within that header (creation index).
        index: u16,
        /// Object header address.
        addr: Addr,
    },
}

/// A shared message record (in a `SMLI` list or a type-7 v2 B-tree).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SohmRecord {
    /// Hash of the message (lookup3 of the encoded message).
    pub hash: u32,
    /// Location.
    pub location: SohmLocation,
}

impl SohmRecord {
    /// The fixed on-disk size of a record slot: location byte, hash, and the
    /// larger of the two location forms (`H5SM_SOHM_ENTRY_SIZE`).
    pub fn encoded_len(ctx: Ctx) -> usize {
        let heap = 4 + 8;
        let oh = 1 + 1 + 2 + usize::from(ctx.sizes.offsets);
        1 + 4 + heap.max(oh)
    }

    /// Decode one record (without the slot padding).
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` location.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let loc = cur.read_u8()?;
        let hash = cur.read_u32()?;
        let location = match loc {
            0 => SohmLocation::Heap {
                refcount: cur.read_u32()?,
                heap_id: cur.read_array::<8>()?,
            },
            1 => {
                let _reserved = cur.read_u8()?;
                let message_type = cur.read_u8()?;
                let index = cur.read_u16()?;
                SohmLocation::ObjectHeader {
                    message_type,
                    index,
                    addr: cur.read_addr(ctx.sizes)?,
                }
            }
            l => {
                return Err(Error::corrupt(
                    alloc::format!("shared message record location {l}"),
                    at,
                ))
            }
        };
        Ok(SohmRecord { hash, location })
    }
}

/// A shared message record list (`SMLI`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SohmList {
    /// The records in order.
    pub records: Vec<SohmRecord>,
}

impl SohmList {
    /// Decode a list holding `num_messages` records (from its index header);
    /// `cur` starts at `SMLI`. The checksum follows the last record and is
    /// verified first.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, num_messages: u16, ctx: Ctx) -> Result<Self> {
        let slot = SohmRecord::encoded_len(ctx);
        let len = usize::from(num_messages)
            .checked_mul(slot)
            .and_then(|n| n.checked_add(8))
            .ok_or_else(|| cur.corrupt("SOHM list size overflows"))?;
        let mut c = cur.sub(len)?;
        verify_checksum(c.data(), c.base(), "SOHM record list")?;
        c.expect_signature(&SMLI_SIGNATURE)?;
        let mut records = Vec::with_capacity(usize::from(num_messages));
        for _ in 0..num_messages {
            let mut s = c.sub(slot)?;
            records.push(SohmRecord::decode(&mut s, ctx)?);
        }
        Ok(SohmList { records })
    }
}

fn verify_checksum(block: &[u8], base: u64, what: &str) -> Result<()> {
    let n = block
        .len()
        .checked_sub(4)
        .ok_or_else(|| Error::truncated(alloc::format!("{what} too short"), base))?;
    let (body, sum) = block.split_at(n);
    let stored = Cursor::new(sum, base).read_u32()?;
    let computed = lookup3(body, 0);
    if stored != computed {
        return Err(Error::checksum(
            alloc::format!("{what} checksum {stored:#010x}, computed {computed:#010x}"),
            base.saturating_add(n as u64),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn with_sum(mut b: Vec<u8>) -> Vec<u8> {
        let s = lookup3(&b, 0);
        b.extend_from_slice(&s.to_le_bytes());
        b
    }

    #[test]
    fn table() {
        let mut b = b"SMTB".to_vec();
        b.extend_from_slice(&[0, 0]);
        b.extend_from_slice(&0x0002u16.to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&50u16.to_le_bytes());
        b.extend_from_slice(&40u16.to_le_bytes());
        b.extend_from_slice(&3u16.to_le_bytes());
        b.extend_from_slice(&0x1000u64.to_le_bytes());
        b.extend_from_slice(&0x2000u64.to_le_bytes());
        let b = with_sum(b);
        assert_eq!(b.len(), SohmTable::encoded_len(1, Ctx::default()));
        let t = SohmTable::decode(&mut Cursor::new(&b, 0), 1, Ctx::default()).unwrap();
        assert_eq!(t.encode(Ctx::default()), b);
        assert_eq!(t.indexes.len(), 1);
        let i = t.indexes[0];
        assert_eq!(i.kind, SohmIndexKind::List);
        assert_eq!(i.message_types, 2);
        assert_eq!(i.min_message_size, 40);
        assert_eq!(i.num_messages, 3);
        assert_eq!(i.index_addr, Addr(0x1000));
        assert_eq!(i.heap_addr, Addr(0x2000));
        let mut bad = b.clone();
        bad[9] = 1;
        assert_eq!(
            SohmTable::decode(&mut Cursor::new(&bad, 0), 1, Ctx::default())
                .unwrap_err()
                .kind(),
            ErrorKind::Checksum
        );
    }

    #[test]
    fn list() {
        let ctx = Ctx::default();
        assert_eq!(SohmRecord::encoded_len(ctx), 17);
        let mut b = b"SMLI".to_vec();
        // heap record
        b.push(0);
        b.extend_from_slice(&0xdeadbeefu32.to_le_bytes());
        b.extend_from_slice(&2u32.to_le_bytes());
        b.extend_from_slice(&[1, 2, 3, 4, 5, 6, 7, 8]);
        // object header record
        b.push(1);
        b.extend_from_slice(&7u32.to_le_bytes());
        b.extend_from_slice(&[0, 3]);
        b.extend_from_slice(&5u16.to_le_bytes());
        b.extend_from_slice(&0x300u64.to_le_bytes());
        let b = with_sum(b);
        let l = SohmList::decode(&mut Cursor::new(&b, 0), 2, ctx).unwrap();
        assert_eq!(l.records[0].hash, 0xdeadbeef);
        assert_eq!(
            l.records[0].location,
            SohmLocation::Heap {
                refcount: 2,
                heap_id: [1, 2, 3, 4, 5, 6, 7, 8]
            }
        );
        assert_eq!(
            l.records[1].location,
            SohmLocation::ObjectHeader {
                message_type: 3,
                index: 5,
                addr: Addr(0x300)
            }
        );
        assert!(SohmList::decode(&mut Cursor::new(&b, 0), 3, ctx).is_err());
        let slots: Vec<Vec<u8>> = alloc::vec![b[4..21].to_vec(), b[21..38].to_vec()];
        let enc = encode_list(&slots, b.len() + 17, ctx).unwrap();
        assert_eq!(&enc[..b.len()], &b[..]);
        assert_eq!(&enc[b.len()..], &[0u8; 17][..]);
        assert!(encode_list(&slots, b.len() - 1, ctx).is_err());
    }
}
