//! Fixed array chunk index (spec III.G "Disk Format: Level 1G – Fixed Array
//! Index"): the header (`FAHD`, version 0), the data block (`FADB`, version 0)
//! and its data block pages. Also the chunk-index element shared with the
//! extensible array: a chunk address, or for filtered datasets an address, a
//! stored size and a filter mask.

use crate::codec::{lookup3, Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Client id of arrays whose elements are unfiltered chunk addresses.
pub const CLIENT_CHUNK: u8 = 0;
/// Client id of arrays whose elements are filtered chunk entries.
pub const CLIENT_FILTERED_CHUNK: u8 = 1;

/// One element of a fixed or extensible array chunk index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkEntry {
    /// Chunk address (UNDEF: not allocated).
    pub addr: Addr,
    /// Stored size in bytes (filtered entries only).
    pub size: Option<u64>,
    /// Filter mask (0 for unfiltered entries).
    pub filter_mask: u32,
}

/// Decode one chunk-index element of `entry_size` bytes for `client_id`.
///
/// # Errors
/// `Truncated`; `Corrupt` for an unknown client id or an entry size that does
/// not fit the client (a filtered entry's size field must be 1–8 bytes).
pub fn decode_entry(
    cur: &mut Cursor<'_>,
    ctx: Ctx,
    client_id: u8,
    entry_size: usize,
) -> Result<ChunkEntry> {
    let o = usize::from(ctx.sizes.offsets);
    match client_id {
        CLIENT_CHUNK => {
            if entry_size != o {
                return Err(cur.corrupt(alloc::format!(
                    "chunk entry of {entry_size} bytes, expected {o}"
                )));
            }
            Ok(ChunkEntry {
                addr: cur.read_addr(ctx.sizes)?,
                size: None,
                filter_mask: 0,
            })
        }
        CLIENT_FILTERED_CHUNK => {
            let n = entry_size
                .checked_sub(o + 4)
                .filter(|n| (1..=8).contains(n))
                .ok_or_else(|| {
                    cur.corrupt(alloc::format!("filtered chunk entry of {entry_size} bytes"))
                })?;
            let addr = cur.read_addr(ctx.sizes)?;
            let size = cur.read_uint(n)?;
            let filter_mask = cur.read_u32()?;
            Ok(ChunkEntry {
                addr,
                size: Some(size),
                filter_mask,
            })
        }
        c => Err(cur.corrupt(alloc::format!("unknown array client id {c}"))),
    }
}

/// Verify the lookup3 checksum that ends the window `data` (at absolute `base`).
///
/// # Errors
/// `Truncated` when shorter than 4 bytes, `Checksum` on mismatch.
pub fn verify_checksum(data: &[u8], base: u64, what: &str) -> Result<()> {
    let body_len = data.len().checked_sub(4).ok_or_else(|| {
        Error::truncated(alloc::format!("{what} is too short for its checksum"), base)
    })?;
    let mut cur = Cursor::new(data, base);
    cur.seek(body_len)?;
    let stored = cur.read_u32()?;
    let computed = lookup3(data.get(..body_len).unwrap_or(&[]), 0);
    if stored != computed {
        return Err(Error::checksum(
            alloc::format!("{what}: stored checksum {stored:#010x}, computed {computed:#010x}"),
            base,
        ));
    }
    Ok(())
}

/// The fixed array header (`FAHD`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedArrayHeader {
    /// Client id: 0 unfiltered chunks, 1 filtered chunks.
    pub client_id: u8,
    /// Size in bytes of one element.
    pub entry_size: u8,
    /// log2 of the number of elements in a data block page.
    pub page_bits: u8,
    /// Number of elements in the array.
    pub max_entries: u64,
    /// Address of the data block (UNDEF: nothing allocated yet).
    pub data_block: Addr,
}

impl FixedArrayHeader {
    /// Encoded size of the header for these sizes.
    pub fn encoded_size(ctx: Ctx) -> usize {
        4 + 4 + usize::from(ctx.sizes.lengths) + usize::from(ctx.sizes.offsets) + 4
    }

    /// Decode and checksum-verify the header; `cur` covers exactly
    /// [`Self::encoded_size`] bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` (signature, version), `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        verify_checksum(cur.rest(), cur.offset(), "fixed array header")?;
        cur.expect_signature(b"FAHD")?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(cur.unsupported(alloc::format!("fixed array header version {version}")));
        }
        let client_id = cur.read_u8()?;
        let entry_size = cur.read_u8()?;
        let page_bits = cur.read_u8()?;
        let max_entries = cur.read_len(ctx.sizes)?;
        let data_block = cur.read_addr(ctx.sizes)?;
        cur.read_u32()?;
        if client_id > CLIENT_FILTERED_CHUNK {
            return Err(cur.corrupt(alloc::format!("unknown fixed array client id {client_id}")));
        }
        if entry_size == 0 || page_bits >= 64 {
            return Err(cur.corrupt("fixed array entry size or page bits out of range"));
        }
        Ok(FixedArrayHeader {
            client_id,
            entry_size,
            page_bits,
            max_entries,
            data_block,
        })
    }

    /// Elements per data block page.
    pub fn page_entries(&self) -> u64 {
        1u64 << self.page_bits
    }

    /// Number of pages (0 when the data block is not paged).
    pub fn npages(&self) -> u64 {
        if self.max_entries > self.page_entries() {
            self.max_entries.div_ceil(self.page_entries())
        } else {
            0
        }
    }

    /// Size in bytes of the page-initialized bitmap (0 when not paged).
    pub fn bitmap_len(&self) -> u64 {
        self.npages().div_ceil(8)
    }

    /// Size of the data block: its prefix (with bitmap and checksum) plus, when
    /// not paged, the elements. Pages follow it.
    ///
    /// # Errors
    /// `Limit` on arithmetic overflow.
    pub fn data_block_size(&self, ctx: Ctx) -> Result<u64> {
        let prefix = 4 + 1 + 1 + u64::from(ctx.sizes.offsets) + 4;
        let body = if self.npages() > 0 {
            self.bitmap_len()
        } else {
            self.max_entries
                .checked_mul(u64::from(self.entry_size))
                .ok_or_else(|| Error::limit("fixed array size"))?
        };
        prefix
            .checked_add(body)
            .ok_or_else(|| Error::limit("fixed array size"))
    }

    /// Number of elements in page `page` (the last page may be short).
    pub fn page_len(&self, page: u64) -> u64 {
        let start = page.saturating_mul(self.page_entries());
        self.max_entries
            .saturating_sub(start)
            .min(self.page_entries())
    }

    /// Size in bytes of a full page including its checksum.
    pub fn page_size(&self) -> u64 {
        self.page_entries()
            .saturating_mul(u64::from(self.entry_size))
            .saturating_add(4)
    }
}

/// Bytes of the stored-size field of a filtered chunk entry for chunks of
/// `chunk_bytes` unfiltered bytes (layout version 4): one more than the
/// bytes needed for `chunk_bytes`, at most 8 — libhdf5's rule, which leaves
/// room for a filter that grows the chunk.
pub fn chunk_size_len(chunk_bytes: u64) -> usize {
    let log2 = 63u32.saturating_sub(chunk_bytes.max(1).leading_zeros());
    (1 + (log2 as usize + 8) / 8).min(8)
}

impl FixedArrayHeader {
    /// Encode the header with its checksum.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        let start = enc.len();
        enc.put_bytes(b"FAHD");
        enc.put_u8(0);
        enc.put_u8(self.client_id);
        enc.put_u8(self.entry_size);
        enc.put_u8(self.page_bits);
        enc.put_len(self.max_entries, ctx.sizes);
        enc.put_addr(self.data_block, ctx.sizes);
        enc.put_checksum_from(start);
    }
}

/// Encode an unpaged data block holding the encoded `entries`.
pub fn encode_data_block(enc: &mut Encoder, ctx: Ctx, client_id: u8, header: Addr, entries: &[u8]) {
    let start = enc.len();
    enc.put_bytes(b"FADB");
    enc.put_u8(0);
    enc.put_u8(client_id);
    enc.put_addr(header, ctx.sizes);
    enc.put_bytes(entries);
    enc.put_checksum_from(start);
}

/// Encode the data block of `hdr` holding the encoded `entries`
/// (`hdr.max_entries` elements of `hdr.entry_size` bytes): unpaged, or —
/// when `hdr.max_entries` exceeds a page — the prefix with the
/// page-initialized bitmap (every page set) followed by every page with its
/// checksum, as libhdf5 lays them out.
///
/// # Errors
/// `Usage` when `entries` is not `max_entries` whole elements.
pub fn encode_data_block_paged(
    enc: &mut Encoder,
    ctx: Ctx,
    hdr: &FixedArrayHeader,
    header: Addr,
    entries: &[u8],
) -> Result<()> {
    let es = usize::from(hdr.entry_size);
    if Some(entries.len() as u64) != hdr.max_entries.checked_mul(es as u64) {
        return Err(Error::usage(
            "fixed array entries are not max_entries elements",
        ));
    }
    let npages = hdr.npages();
    if npages == 0 {
        encode_data_block(enc, ctx, hdr.client_id, header, entries);
        return Ok(());
    }
    let start = enc.len();
    enc.put_bytes(b"FADB");
    enc.put_u8(0);
    enc.put_u8(hdr.client_id);
    enc.put_addr(header, ctx.sizes);
    let bitmap_len = usize::try_from(hdr.bitmap_len()).unwrap_or(0);
    let mut bitmap = alloc::vec![0u8; bitmap_len];
    for p in 0..usize::try_from(npages).unwrap_or(0) {
        if let Some(b) = bitmap.get_mut(p / 8) {
            *b |= 0x80 >> (p % 8);
        }
    }
    enc.put_bytes(&bitmap);
    enc.put_checksum_from(start);
    let page_bytes = usize::try_from(hdr.page_entries())
        .unwrap_or(usize::MAX)
        .saturating_mul(es);
    for page in entries.chunks(page_bytes.max(1)) {
        let ps = enc.len();
        enc.put_bytes(page);
        enc.put_checksum_from(ps);
    }
    Ok(())
}

/// A decoded fixed array data block (`FADB`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FixedArrayDataBlock {
    /// Page-initialized bitmap (paged blocks; bit `i`, most significant bit
    /// first, set when page `i` was written).
    pub page_bitmap: Vec<u8>,
    /// The elements (unpaged blocks only).
    pub entries: Vec<ChunkEntry>,
}

impl FixedArrayDataBlock {
    /// Decode and checksum-verify the data block; `cur` covers exactly
    /// `hdr.data_block_size(ctx)` bytes.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Checksum`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx, hdr: &FixedArrayHeader) -> Result<Self> {
        verify_checksum(cur.rest(), cur.offset(), "fixed array data block")?;
        cur.expect_signature(b"FADB")?;
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(cur.unsupported(alloc::format!("fixed array data block version {version}")));
        }
        let client_id = cur.read_u8()?;
        if client_id != hdr.client_id {
            return Err(cur.corrupt("fixed array data block client id differs from the header's"));
        }
        let _header_addr = cur.read_addr(ctx.sizes)?;
        if hdr.npages() > 0 {
            let n = usize::try_from(hdr.bitmap_len())
                .map_err(|_| cur.corrupt("page bitmap too large"))?;
            let page_bitmap = cur.read_bytes(n)?.to_vec();
            return Ok(FixedArrayDataBlock {
                page_bitmap,
                entries: Vec::new(),
            });
        }
        let entries = decode_entries(cur, ctx, hdr.client_id, hdr.entry_size, hdr.max_entries)?;
        Ok(FixedArrayDataBlock {
            page_bitmap: Vec::new(),
            entries,
        })
    }
}

/// Decode `count` consecutive elements (checked against the bytes left first).
///
/// # Errors
/// `Truncated`, `Corrupt`.
pub fn decode_entries(
    cur: &mut Cursor<'_>,
    ctx: Ctx,
    client_id: u8,
    entry_size: u8,
    count: u64,
) -> Result<Vec<ChunkEntry>> {
    let es = usize::from(entry_size);
    let n = cur.ensure_count(count, es)?;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        v.push(decode_entry(cur, ctx, client_id, es)?);
    }
    Ok(v)
}

/// Decode one data block page of `count` elements followed by its checksum;
/// `cur` covers exactly `count * entry_size + 4` bytes.
///
/// # Errors
/// `Truncated`, `Corrupt`, `Checksum`.
pub fn decode_page(
    cur: &mut Cursor<'_>,
    ctx: Ctx,
    client_id: u8,
    entry_size: u8,
    count: u64,
) -> Result<Vec<ChunkEntry>> {
    verify_checksum(cur.rest(), cur.offset(), "array data block page")?;
    decode_entries(cur, ctx, client_id, entry_size, count)
}

/// Whether bit `i` (most significant bit first) of `bitmap` is set.
pub fn bit_set(bitmap: &[u8], i: u64) -> bool {
    usize::try_from(i / 8)
        .ok()
        .and_then(|b| bitmap.get(b))
        .is_some_and(|byte| byte & (0x80 >> (i % 8)) != 0)
}
