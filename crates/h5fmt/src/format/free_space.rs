//! Free-space manager structures, spec III.H "Disk Format: Level 1H -
//! Free-space Index": the free-space manager header (`FSHD`, version 0)
//! and the free-space section list (`FSSE`, version 0), both with lookup3
//! checksums; and the File Space Info message (type 0x0017, spec IV.A.2.x,
//! versions 0 and 1) of the superblock extension, which names the
//! persistent free-space managers of the file. Encoders for the three
//! (file client, version 1 message) serve the editor's persistent free space.

use crate::codec::{lookup3, Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// Free-space manager header signature.
pub const FSHD_SIGNATURE: [u8; 4] = *b"FSHD";
/// Free-space section list signature.
pub const FSSE_SIGNATURE: [u8; 4] = *b"FSSE";

/// The File Space Info message (0x0017).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpaceInfo {
    /// Message version (0 or 1).
    pub version: u8,
    /// File space strategy. Version 1: 0 free-space managers with
    /// aggregators, 1 paged aggregation, 2 aggregators only, 3 none.
    /// Version 0 (1.10.0): 1 all persistent, 2 all, 3 aggregators and
    /// the driver, 4 the driver.
    pub strategy: u8,
    /// Whether free space is persistent (managers stored in the file).
    pub persist: bool,
    /// Smallest free-space section tracked.
    pub threshold: u64,
    /// File space page size (version 1; paged aggregation).
    pub page_size: u64,
    /// Page-end metadata threshold (version 1).
    pub page_end_threshold: u16,
    /// End of allocated space before the managers' own structures were
    /// allocated (version 1).
    pub eoa_before_fsm: Addr,
    /// The managers' header addresses: version 1 with persistence, 12 (six
    /// small-page or non-paged memory types, then six large-page ones);
    /// version 0 with strategy 1, the six memory types.
    pub managers: Vec<Addr>,
}

impl FileSpaceInfo {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for an unknown version or strategy.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        let mut m = FileSpaceInfo {
            version,
            strategy: 0,
            persist: false,
            threshold: 0,
            page_size: 0,
            page_end_threshold: 0,
            eoa_before_fsm: Addr::UNDEF,
            managers: Vec::new(),
        };
        match version {
            0 => {
                m.strategy = cur.read_u8()?;
                m.threshold = cur.read_len(ctx.sizes)?;
                match m.strategy {
                    1 => {
                        m.persist = true;
                        for _ in 0..6 {
                            m.managers.push(cur.read_addr(ctx.sizes)?);
                        }
                    }
                    2..=4 => {}
                    s => {
                        return Err(Error::corrupt(
                            alloc::format!("file space strategy {s} (message version 0)"),
                            at,
                        ))
                    }
                }
            }
            1 => {
                m.strategy = cur.read_u8()?;
                if m.strategy > 3 {
                    return Err(Error::corrupt(
                        alloc::format!("file space strategy {}", m.strategy),
                        at,
                    ));
                }
                m.persist = cur.read_u8()? != 0;
                m.threshold = cur.read_len(ctx.sizes)?;
                m.page_size = cur.read_len(ctx.sizes)?;
                m.page_end_threshold = cur.read_u16()?;
                m.eoa_before_fsm = cur.read_addr(ctx.sizes)?;
                if m.persist {
                    for _ in 0..12 {
                        m.managers.push(cur.read_addr(ctx.sizes)?);
                    }
                }
            }
            v => {
                return Err(Error::corrupt(
                    alloc::format!("file space info message version {v}"),
                    at,
                ))
            }
        }
        Ok(m)
    }

    /// Encode a version 1 message (the form libhdf5 1.10.1 and later
    /// write): with persistence, the 12 manager addresses follow.
    ///
    /// # Errors
    /// `Usage` for another version, or a persistent message without 12
    /// manager addresses.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) -> Result<()> {
        if self.version != 1 {
            return Err(Error::usage(
                "only file space info message version 1 is written",
            ));
        }
        if self.persist && self.managers.len() != 12 {
            return Err(Error::usage(
                "a persistent file space info message names 12 managers",
            ));
        }
        enc.put_u8(1);
        enc.put_u8(self.strategy);
        enc.put_u8(u8::from(self.persist));
        enc.put_len(self.threshold, ctx.sizes);
        enc.put_len(self.page_size, ctx.sizes);
        enc.put_u16(self.page_end_threshold);
        enc.put_addr(self.eoa_before_fsm, ctx.sizes);
        if self.persist {
            for a in &self.managers {
                enc.put_addr(*a, ctx.sizes);
            }
        }
        Ok(())
    }
}

/// A free-space manager header (`FSHD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSpaceHeader {
    /// Client: 0 fractal heap, 1 file.
    pub client: u8,
    /// Bytes of free space tracked.
    pub total_space: u64,
    /// Sections tracked.
    pub total_sections: u64,
    /// Sections stored in the section list.
    pub serial_sections: u64,
    /// Sections not stored (rebuilt by the client).
    pub ghost_sections: u64,
    /// Section classes of the client.
    pub num_classes: u16,
    /// Shrink percent of the section list allocation.
    pub shrink_percent: u16,
    /// Expand percent of the section list allocation.
    pub expand_percent: u16,
    /// log2 of the size of the address space the sections are in.
    pub address_bits: u16,
    /// Largest section tracked.
    pub max_section_size: u64,
    /// Address of the section list (`FSSE`).
    pub sections_addr: Addr,
    /// Bytes of the section list in use (its checksum ends there).
    pub sections_used: u64,
    /// Bytes allocated for the section list.
    pub sections_alloc: u64,
}

/// The minimum bytes that hold `n` (libhdf5's encoding of variable-size
/// section fields): floor(log2 n) / 8 + 1, 1 for 0.
pub fn limit_enc_size(n: u64) -> usize {
    let log2 = 63u32.saturating_sub(n.leading_zeros());
    (log2 / 8 + 1) as usize
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

impl FreeSpaceHeader {
    /// Encoded size of a header.
    pub fn encoded_len(ctx: Ctx) -> usize {
        let (o, l) = (
            usize::from(ctx.sizes.offsets),
            usize::from(ctx.sizes.lengths),
        );
        4 + 1 + 1 + 4 * l + 2 * 4 + l + o + 2 * l + 4
    }

    /// Encode the header with its checksum.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        let s = ctx.sizes;
        let start = enc.len();
        enc.put_bytes(&FSHD_SIGNATURE);
        enc.put_u8(0);
        enc.put_u8(self.client);
        enc.put_len(self.total_space, s);
        enc.put_len(self.total_sections, s);
        enc.put_len(self.serial_sections, s);
        enc.put_len(self.ghost_sections, s);
        enc.put_u16(self.num_classes);
        enc.put_u16(self.shrink_percent);
        enc.put_u16(self.expand_percent);
        enc.put_u16(self.address_bits);
        enc.put_len(self.max_section_size, s);
        enc.put_addr(self.sections_addr, s);
        enc.put_len(self.sections_used, s);
        enc.put_len(self.sections_alloc, s);
        enc.put_checksum_from(start);
    }

    /// Decode a header; `cur` starts at `FSHD` and holds at least
    /// [`FreeSpaceHeader::encoded_len`] bytes. The checksum is verified first.
    ///
    /// # Errors
    /// `Truncated`, `Checksum`; `Corrupt` for a bad signature, version,
    /// client or a used size beyond the allocated one.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let mut c = cur.sub(Self::encoded_len(ctx))?;
        verify_checksum(c.data(), c.base(), "free-space manager header")?;
        c.expect_signature(&FSHD_SIGNATURE)?;
        let at = c.offset();
        let version = c.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("free-space manager header version {version}"),
                at,
            ));
        }
        let client = c.read_u8()?;
        if client > 1 {
            return Err(Error::corrupt(
                alloc::format!("free-space manager client {client}"),
                at.saturating_add(1),
            ));
        }
        let s = ctx.sizes;
        let h = FreeSpaceHeader {
            client,
            total_space: c.read_len(s)?,
            total_sections: c.read_len(s)?,
            serial_sections: c.read_len(s)?,
            ghost_sections: c.read_len(s)?,
            num_classes: c.read_u16()?,
            shrink_percent: c.read_u16()?,
            expand_percent: c.read_u16()?,
            address_bits: c.read_u16()?,
            max_section_size: c.read_len(s)?,
            sections_addr: c.read_addr(s)?,
            sections_used: c.read_len(s)?,
            sections_alloc: c.read_len(s)?,
        };
        if h.sections_used > h.sections_alloc {
            return Err(Error::corrupt(
                alloc::format!(
                    "free-space section list uses {} bytes of {} allocated",
                    h.sections_used,
                    h.sections_alloc
                ),
                at,
            ));
        }
        if h.serial_sections.saturating_add(h.ghost_sections) != h.total_sections {
            return Err(Error::corrupt(
                alloc::format!(
                    "free-space manager: {} serialized and {} ghost sections but {} in all",
                    h.serial_sections,
                    h.ghost_sections,
                    h.total_sections
                ),
                at,
            ));
        }
        if h.address_bits > 64 {
            return Err(Error::corrupt(
                alloc::format!("free-space address space of 2^{} bytes", h.address_bits),
                at,
            ));
        }
        Ok(h)
    }
}

/// One free-space section.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FreeSection {
    /// Offset in the client's address space (the file: a relative address;
    /// a fractal heap: an offset in the heap's space).
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// Section class (file client: 0 simple, 1 small page, 2 large page;
    /// fractal heap client: 0 single, 1 first row, 2 normal row, 3
    /// indirect).
    pub class: u8,
    /// The class data of a fractal heap's first-row and indirect sections.
    pub heap_rows: Option<HeapRows>,
}

/// Class data of a fractal heap's first-row (1) and indirect (3) free
/// sections: a run of empty blocks of one indirect block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeapRows {
    /// Heap offset of the indirect block holding the empty blocks.
    pub block_offset: u64,
    /// Row of the first empty block.
    pub row: u16,
    /// Column of the first empty block.
    pub col: u16,
    /// Number of empty blocks.
    pub entries: u16,
}

/// Decode the section list (`FSSE`) of header `hdr` at `hdr_addr`, of the
/// file client or of a fractal heap client: `cur` starts at `FSSE` and
/// holds at least `hdr.sections_used` bytes. The checksum (at the end of
/// the used bytes) is verified first.
///
/// # Errors
/// `Truncated`, `Checksum`; `Corrupt` for a bad signature, version, header
/// back-pointer, an unknown client or section class, or counts that
/// disagree with the header.
pub fn decode_sections(
    cur: &mut Cursor<'_>,
    hdr: &FreeSpaceHeader,
    hdr_addr: Addr,
    ctx: Ctx,
) -> Result<Vec<FreeSection>> {
    let used = usize::try_from(hdr.sections_used)
        .map_err(|_| cur.corrupt("free-space section list size"))?;
    let mut c = cur.sub(used)?;
    verify_checksum(c.data(), c.base(), "free-space section list")?;
    let body_end = used - 4;
    c.expect_signature(&FSSE_SIGNATURE)?;
    let at = c.offset();
    let version = c.read_u8()?;
    if version != 0 {
        return Err(Error::corrupt(
            alloc::format!("free-space section list version {version}"),
            at,
        ));
    }
    let back = c.read_addr(ctx.sizes)?;
    if back != hdr_addr {
        return Err(Error::corrupt(
            alloc::format!(
                "free-space section list names header {} instead of {}",
                back.0,
                hdr_addr.0
            ),
            at.saturating_add(1),
        ));
    }
    // Client 1: the file (classes 0-2, no class data); client 0: a fractal
    // heap (classes 0-3; first-row and indirect sections carry the indirect
    // block's heap offset, row, column and number of entries).
    let heap = match hdr.client {
        0 => true,
        1 => false,
        c => {
            return Err(Error::corrupt(
                alloc::format!("free-space manager client {c}"),
                at,
            ))
        }
    };
    let max_class = if heap { 3 } else { 2 };
    let count_len = limit_enc_size(hdr.serial_sections);
    let size_len = limit_enc_size(hdr.max_section_size);
    let off_len = usize::from(hdr.address_bits).div_ceil(8).max(1);
    // Each section takes at least its offset and its class byte.
    c.ensure_count(hdr.serial_sections, off_len + 1)?;
    let mut out = Vec::new();
    while (out.len() as u64) < hdr.serial_sections && c.pos() < body_end {
        let set_at = c.offset();
        let n = c.read_uint(count_len)?;
        let size = c.read_uint(size_len)?;
        if n == 0 || size == 0 {
            return Err(Error::corrupt(
                alloc::format!("free-space section set of {n} sections of {size} bytes"),
                set_at,
            ));
        }
        if (out.len() as u64).saturating_add(n) > hdr.serial_sections {
            return Err(Error::corrupt(
                "more free-space sections than the header counts",
                set_at,
            ));
        }
        for _ in 0..n {
            let offset = c.read_uint(off_len)?;
            let class_at = c.offset();
            let class = c.read_u8()?;
            if class > max_class {
                return Err(Error::corrupt(
                    alloc::format!("free-space section class {class}"),
                    class_at,
                ));
            }
            let heap_rows = if heap && (class == 1 || class == 3) {
                Some(HeapRows {
                    block_offset: c.read_uint(off_len)?,
                    row: c.read_u16()?,
                    col: c.read_u16()?,
                    entries: c.read_u16()?,
                })
            } else {
                None
            };
            out.push(FreeSection {
                offset,
                size,
                class,
                heap_rows,
            });
        }
    }
    if c.pos() > body_end {
        return Err(Error::corrupt(
            "free-space sections run into the checksum",
            c.offset(),
        ));
    }
    if (out.len() as u64) != hdr.serial_sections {
        return Err(Error::corrupt(
            alloc::format!(
                "free-space section list holds {} sections, the header counts {}",
                out.len(),
                hdr.serial_sections
            ),
            at,
        ));
    }
    Ok(out)
}

/// Encoded size of a file client's section list holding `n` sections in
/// `sets` distinct sizes, under header `hdr` (its serial section count and
/// maximum section size fix the field widths).
pub fn file_sections_len(hdr: &FreeSpaceHeader, n: u64, sets: u64, ctx: Ctx) -> u64 {
    let count_len = limit_enc_size(hdr.serial_sections) as u64;
    let size_len = limit_enc_size(hdr.max_section_size) as u64;
    let off_len = u64::from(hdr.address_bits).div_ceil(8).max(1);
    let prefix = 4 + 1 + u64::from(ctx.sizes.offsets) + 4;
    prefix
        .saturating_add(sets.saturating_mul(count_len + size_len))
        .saturating_add(n.saturating_mul(off_len + 1))
}

/// Encode the section list of a file client (`FSSE`, version 0) for the
/// header `hdr` at `hdr_addr`: `sections` as (offset, size, class), written
/// in sets of equal size, smallest size first, each set by offset. The
/// header's serial section count must be the number of sections.
///
/// # Errors
/// `Usage` when the count disagrees with the header or a section's offset
/// or size does not fit its field.
pub fn encode_file_sections(
    enc: &mut Encoder,
    hdr: &FreeSpaceHeader,
    hdr_addr: Addr,
    sections: &[(u64, u64, u8)],
    ctx: Ctx,
) -> Result<()> {
    if sections.len() as u64 != hdr.serial_sections {
        return Err(Error::usage("section count differs from the header's"));
    }
    let count_len = limit_enc_size(hdr.serial_sections);
    let size_len = limit_enc_size(hdr.max_section_size);
    let off_len = usize::from(hdr.address_bits).div_ceil(8).max(1);
    let fits = |v: u64, n: usize| n >= 8 || v >> (8 * n) == 0;
    let mut sorted: Vec<(u64, u64, u8)> = sections.to_vec();
    sorted.sort_by_key(|&(o, l, _)| (l, o));
    let start = enc.len();
    enc.put_bytes(&FSSE_SIGNATURE);
    enc.put_u8(0);
    enc.put_addr(hdr_addr, ctx.sizes);
    let mut i = 0;
    while let Some(&(_, size, _)) = sorted.get(i) {
        let n = sorted[i..].iter().take_while(|s| s.1 == size).count();
        if !fits(size, size_len) || size > hdr.max_section_size {
            return Err(Error::usage("free-space section larger than the maximum"));
        }
        enc.put_uint(n as u64, count_len);
        enc.put_uint(size, size_len);
        for &(off, _, class) in &sorted[i..i + n] {
            if !fits(off, off_len) {
                return Err(Error::usage("free-space section offset too large"));
            }
            enc.put_uint(off, off_len);
            enc.put_u8(class);
        }
        i += n;
    }
    enc.put_checksum_from(start);
    Ok(())
}
