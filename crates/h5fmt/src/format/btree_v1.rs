//! Version 1 B-tree nodes (`TREE`), spec III.A.1: node type 0 (group nodes,
//! keys are local-heap offsets of link names, leaf children are `SNOD` nodes)
//! and node type 1 (raw data chunks, keys are chunk size, filter mask and
//! `rank + 1` element offsets, leaf children are chunk addresses).
//!
//! Only the used entries are decoded (`Entries Used` children and one key
//! more); a node's full on-disk size (2K entries) is never needed to read it.

use crate::addr::Sizes;
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Node type of group B-trees.
pub const NODE_TYPE_GROUP: u8 = 0;
/// Node type of raw data chunk B-trees.
pub const NODE_TYPE_CHUNK: u8 = 1;

/// A key of a v1 B-tree node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Key {
    /// Type 0: offset of a link name in the group's local heap.
    Group {
        /// Local heap offset.
        heap_offset: u64,
    },
    /// Type 1: a chunk's stored size, filter mask and element offsets.
    Chunk {
        /// Stored (possibly filtered) chunk size in bytes.
        size: u32,
        /// Filter mask: bit i set means filter i was skipped.
        filter_mask: u32,
        /// `rank + 1` offsets in elements; the last is the offset in the
        /// element-size dimension (always 0).
        offsets: Vec<u64>,
    },
}

/// A decoded v1 B-tree node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BTreeV1Node {
    /// Node type (0 group, 1 chunk).
    pub node_type: u8,
    /// Level: 0 for leaves.
    pub level: u8,
    /// Left sibling (UNDEF when none).
    pub left: Addr,
    /// Right sibling (UNDEF when none).
    pub right: Addr,
    /// `children.len() + 1` keys; key i is left of child i.
    pub keys: Vec<Key>,
    /// Child addresses (sub-nodes at level > 0; `SNOD` nodes or chunks at level 0).
    pub children: Vec<Addr>,
}

impl BTreeV1Node {
    /// Bytes before the first key: signature, type, level, entries used, two siblings.
    pub fn prefix_len(sizes: Sizes) -> usize {
        8 + 2 * usize::from(sizes.offsets)
    }

    /// Size of one key for `node_type`; `chunk_dims` is the number of
    /// offsets in a chunk key (dataspace rank + 1), ignored for groups.
    ///
    /// # Errors
    /// `Corrupt` for an unknown node type, `Limit` for an absurd `chunk_dims`.
    pub fn key_len(node_type: u8, sizes: Sizes, chunk_dims: usize) -> Result<usize> {
        match node_type {
            NODE_TYPE_GROUP => Ok(usize::from(sizes.lengths)),
            NODE_TYPE_CHUNK => chunk_dims
                .checked_mul(8)
                .and_then(|n| n.checked_add(8))
                .ok_or_else(|| Error::limit("chunk key dimensionality too large")),
            t => Err(Error::unsupported(alloc::format!(
                "v1 B-tree node type {t}"
            ))),
        }
    }

    /// Number of bytes of a node with `entries` used entries.
    ///
    /// # Errors
    /// As [`BTreeV1Node::key_len`].
    pub fn used_len(node_type: u8, sizes: Sizes, chunk_dims: usize, entries: u16) -> Result<u64> {
        let key = Self::key_len(node_type, sizes, chunk_dims)? as u64;
        let e = u64::from(entries);
        let n = (e + 1)
            .checked_mul(key)
            .and_then(|k| k.checked_add(e.checked_mul(u64::from(sizes.offsets))?))
            .and_then(|k| k.checked_add(Self::prefix_len(sizes) as u64))
            .ok_or_else(|| Error::limit("v1 B-tree node size overflows"))?;
        Ok(n)
    }

    /// Peek at a node prefix (at least [`BTreeV1Node::prefix_len`] bytes):
    /// returns `(node_type, level, entries_used)`.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature.
    pub fn peek(prefix: &[u8], base: u64) -> Result<(u8, u8, u16)> {
        let mut cur = Cursor::new(prefix, base);
        cur.expect_signature(b"TREE")?;
        Ok((cur.read_u8()?, cur.read_u8()?, cur.read_u16()?))
    }

    /// Decode a node. `chunk_dims` is the number of offsets in a chunk key
    /// (dataspace rank + 1); it is ignored for group nodes.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for a bad signature; `Unsupported` for an unknown node type.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx, chunk_dims: usize) -> Result<Self> {
        cur.expect_signature(b"TREE")?;
        let node_type = cur.read_u8()?;
        let level = cur.read_u8()?;
        let entries = cur.read_u16()?;
        let left = cur.read_addr(ctx.sizes)?;
        let right = cur.read_addr(ctx.sizes)?;
        let key_len = Self::key_len(node_type, ctx.sizes, chunk_dims)
            .map_err(|e| e.with_offset(cur.offset()))?;
        let entry_len = key_len.saturating_add(usize::from(ctx.sizes.offsets));
        let n = cur.ensure_count(u64::from(entries), entry_len)?;
        let mut keys = Vec::with_capacity(n + 1);
        let mut children = Vec::with_capacity(n);
        for i in 0..=n {
            keys.push(Self::decode_key(cur, ctx, node_type, chunk_dims)?);
            if i < n {
                children.push(cur.read_addr(ctx.sizes)?);
            }
        }
        Ok(BTreeV1Node {
            node_type,
            level,
            left,
            right,
            keys,
            children,
        })
    }

    fn decode_key(cur: &mut Cursor<'_>, ctx: Ctx, node_type: u8, chunk_dims: usize) -> Result<Key> {
        if node_type == NODE_TYPE_GROUP {
            return Ok(Key::Group {
                heap_offset: cur.read_len(ctx.sizes)?,
            });
        }
        let size = cur.read_u32()?;
        let filter_mask = cur.read_u32()?;
        let n = cur.ensure_count(chunk_dims as u64, 8)?;
        let mut offsets = Vec::with_capacity(n);
        for _ in 0..n {
            offsets.push(cur.read_u64()?);
        }
        Ok(Key::Chunk {
            size,
            filter_mask,
            offsets,
        })
    }
}

impl BTreeV1Node {
    /// On-disk size of a node with room for `2 * k` children (libhdf5
    /// allocates and reads the full node).
    ///
    /// # Errors
    /// As [`BTreeV1Node::key_len`].
    pub fn encoded_len(node_type: u8, sizes: Sizes, chunk_dims: usize, k: u16) -> Result<usize> {
        let key = Self::key_len(node_type, sizes, chunk_dims)?;
        let e = 2 * usize::from(k);
        Ok(Self::prefix_len(sizes) + (e + 1) * key + e * usize::from(sizes.offsets))
    }

    /// Encode the node padded to its full size for `2 * k` children.
    ///
    /// # Errors
    /// `Usage` when keys and children do not match (`children + 1` keys of
    /// the node's type) or there are more than `2 * k` children.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, chunk_dims: usize, k: u16) -> Result<()> {
        if self.keys.len() != self.children.len() + 1 || self.children.len() > 2 * usize::from(k) {
            return Err(Error::usage(
                "v1 B-tree node keys/children mismatch or over capacity",
            ));
        }
        let start = enc.len();
        enc.put_bytes(b"TREE");
        enc.put_u8(self.node_type);
        enc.put_u8(self.level);
        #[allow(clippy::cast_possible_truncation)] // ≤ 2K, checked above
        enc.put_u16(self.children.len() as u16);
        enc.put_addr(self.left, ctx.sizes);
        enc.put_addr(self.right, ctx.sizes);
        for (i, key) in self.keys.iter().enumerate() {
            match key {
                Key::Group { heap_offset } if self.node_type == NODE_TYPE_GROUP => {
                    enc.put_len(*heap_offset, ctx.sizes);
                }
                Key::Chunk {
                    size,
                    filter_mask,
                    offsets,
                } if self.node_type == NODE_TYPE_CHUNK && offsets.len() == chunk_dims => {
                    enc.put_u32(*size);
                    enc.put_u32(*filter_mask);
                    for &o in offsets {
                        enc.put_u64(o);
                    }
                }
                _ => return Err(Error::usage("v1 B-tree key of the wrong type")),
            }
            if let Some(c) = self.children.get(i) {
                enc.put_addr(*c, ctx.sizes);
            }
        }
        let end = start + Self::encoded_len(self.node_type, ctx.sizes, chunk_dims, k)?;
        enc.put_zeros(end.saturating_sub(enc.len()));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_hand_built_chunk_node() {
        // Type 1, level 0, 1 entry, rank 1 (2 key offsets), 8-byte addresses.
        let mut b = alloc::vec::Vec::new();
        b.extend_from_slice(b"TREE\x01\x00\x01\x00");
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&u64::MAX.to_le_bytes());
        b.extend_from_slice(&40u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0x800u64.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        b.extend_from_slice(&10u64.to_le_bytes());
        b.extend_from_slice(&0u64.to_le_bytes());
        assert_eq!(
            BTreeV1Node::used_len(1, Sizes::default(), 2, 1).unwrap(),
            b.len() as u64
        );
        let n = BTreeV1Node::decode(&mut Cursor::new(&b, 0), Ctx::default(), 2).unwrap();
        assert_eq!(n.node_type, 1);
        assert_eq!(n.children, alloc::vec![Addr(0x800)]);
        assert_eq!(
            n.keys[0],
            Key::Chunk {
                size: 40,
                filter_mask: 0,
                offsets: alloc::vec![0, 0]
            }
        );
        assert_eq!(
            n.keys[1],
            Key::Chunk {
                size: 0,
                filter_mask: 0,
                offsets: alloc::vec![10, 0]
            }
        );
        let e = BTreeV1Node::decode(&mut Cursor::new(&b[..b.len() - 1], 0), Ctx::default(), 2)
            .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Truncated);
    }
}
