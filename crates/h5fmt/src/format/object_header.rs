//! Object headers, spec IV.A: version 1 and version 2 (`OHDR`/`OCHK`) prefixes
//! and message lists. Continuations are followed by [`crate::read::object_header`].
//!
//! * v1 prefix (IV.A.1.a): version 1, reserved, number of messages (u16),
//!   reference count (u32), header size (u32), padded to 16 bytes so that the
//!   message area is 8-byte aligned. Messages: type u16, size u16, flags u8,
//!   3 reserved bytes, body (size a multiple of 8).
//! * v2 prefix (IV.A.1.b): `OHDR`, version 2, flags (bits 0–1 width of the
//!   chunk-0 size, bit 2 creation order tracked, bit 3 indexed, bit 4
//!   attribute phase-change values stored, bit 5 times stored), optional
//!   times and phase-change values, chunk-0 size; then messages (type u8,
//!   size u16, flags u8, creation order u16 when tracked), a gap smaller than a
//!   message header, and a lookup3 checksum. Continuation chunks: `OCHK`,
//!   messages, gap, checksum.

use crate::codec::{lookup3, Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::message::{kind, Message};
use alloc::vec::Vec;

/// v2 object header signature.
pub const OHDR_SIGNATURE: [u8; 4] = *b"OHDR";
/// v2 continuation chunk signature.
pub const OCHK_SIGNATURE: [u8; 4] = *b"OCHK";
/// Size of the v1 prefix including the alignment padding.
pub const V1_PREFIX_SIZE: usize = 16;
/// Largest possible v2 prefix (signature, version, flags, times, phase change, 8-byte size).
pub const V2_MAX_PREFIX_SIZE: usize = 4 + 1 + 1 + 16 + 4 + 8;

/// v2 header flag: attribute creation order is tracked (messages carry it).
pub const FLAG_ATTR_CRT_ORDER_TRACKED: u8 = 0x04;
/// v2 header flag: attribute creation order is indexed.
pub const FLAG_ATTR_CRT_ORDER_INDEXED: u8 = 0x08;
/// v2 header flag: non-default attribute storage phase-change values stored.
pub const FLAG_ATTR_PHASE_CHANGE: u8 = 0x10;
/// v2 header flag: access/modification/change/birth times stored.
pub const FLAG_TIMES: u8 = 0x20;
const V2_FLAGS_ALL: u8 = 0x3f;

/// The highest message type this library knows (libhdf5 2.0 knows 0x00–0x18).
pub const MAX_KNOWN_MESSAGE_TYPE: u16 = 0x18;

/// Object times stored in a v2 header (seconds since the epoch).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Times {
    /// Access time.
    pub access: u32,
    /// Modification time.
    pub modification: u32,
    /// Change time.
    pub change: u32,
    /// Birth time.
    pub birth: u32,
}

/// A fully read object header: all messages of all chunks, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectHeader {
    /// Header version (1 or 2).
    pub version: u8,
    /// v2 flags (0 for v1).
    pub flags: u8,
    /// Object reference count (1 when not stored).
    pub refcount: u32,
    /// Messages in order, NIL and continuation messages included.
    pub messages: Vec<Message>,
    /// v2 times, when stored.
    pub times: Option<Times>,
    /// v2 attribute phase-change values (max compact, min dense), when stored.
    pub attr_phase_change: Option<(u16, u16)>,
}

impl ObjectHeader {
    /// The first message of `kind`.
    pub fn find(&self, kind: u16) -> Option<&Message> {
        self.messages.iter().find(|m| m.kind == kind)
    }
    /// All messages of `kind`.
    pub fn all(&self, kind: u16) -> impl Iterator<Item = &Message> {
        self.messages.iter().filter(move |m| m.kind == kind)
    }
}

/// The v1 prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V1Prefix {
    /// Total number of messages over all chunks (not enforced, as in libhdf5).
    pub num_messages: u16,
    /// Object reference count.
    pub refcount: u32,
    /// Size of the first chunk's message area.
    pub header_size: u32,
}

impl V1Prefix {
    /// Decode the 16-byte v1 prefix.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` version.
    pub fn decode(cur: &mut Cursor<'_>) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 {
            return Err(Error::corrupt(
                alloc::format!("object header version {version}"),
                at,
            ));
        }
        let _reserved = cur.read_u8()?;
        let num_messages = cur.read_u16()?;
        let refcount = cur.read_u32()?;
        let header_size = cur.read_u32()?;
        cur.skip(4)?; // alignment of the message area
        Ok(V1Prefix {
            num_messages,
            refcount,
            header_size,
        })
    }
}

/// The v2 prefix (everything before the first message).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct V2Prefix {
    /// Header flags.
    pub flags: u8,
    /// Times, when stored.
    pub times: Option<Times>,
    /// Attribute phase-change values, when stored.
    pub attr_phase_change: Option<(u16, u16)>,
    /// Size of chunk 0's message area (messages and gap, without checksum).
    pub chunk0_size: u64,
    /// Length of the prefix in bytes.
    pub prefix_len: usize,
}

impl V2Prefix {
    /// Decode the v2 prefix; `cur` starts at `OHDR`.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>) -> Result<Self> {
        let start = cur.pos();
        cur.expect_signature(&OHDR_SIGNATURE)?;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 2 {
            return Err(Error::corrupt(
                alloc::format!("object header version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !V2_FLAGS_ALL != 0 {
            return Err(Error::corrupt(
                alloc::format!("object header flags {flags:#x}"),
                flags_at,
            ));
        }
        let times = if flags & FLAG_TIMES != 0 {
            Some(Times {
                access: cur.read_u32()?,
                modification: cur.read_u32()?,
                change: cur.read_u32()?,
                birth: cur.read_u32()?,
            })
        } else {
            None
        };
        let attr_phase_change = if flags & FLAG_ATTR_PHASE_CHANGE != 0 {
            Some((cur.read_u16()?, cur.read_u16()?))
        } else {
            None
        };
        let chunk0_size = cur.read_uint(1usize << (flags & 0x03))?;
        let prefix_len = cur.pos().saturating_sub(start);
        Ok(V2Prefix {
            flags,
            times,
            attr_phase_change,
            chunk0_size,
            prefix_len,
        })
    }
}

impl ObjectHeader {
    /// Encoded size of the single-chunk header written by [`ObjectHeader::encode`].
    pub fn encoded_len(&self) -> usize {
        let msgs = self.messages_len();
        if self.version == 1 {
            V1_PREFIX_SIZE + msgs
        } else {
            self.v2_prefix_len(msgs) + msgs + 4
        }
    }

    fn messages_len(&self) -> usize {
        let hdr = if self.version == 1 {
            8
        } else if self.flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0 {
            6
        } else {
            4
        };
        self.messages
            .iter()
            .map(|m| {
                hdr + if self.version == 1 {
                    m.data.len().div_ceil(8) * 8
                } else {
                    m.data.len()
                }
            })
            .sum()
    }

    fn v2_size_width(msgs: usize) -> u8 {
        match msgs {
            0..=0xff => 0,
            0x100..=0xffff => 1,
            0x1_0000..=0xffff_ffff => 2,
            _ => 3,
        }
    }

    fn v2_prefix_len(&self, msgs: usize) -> usize {
        6 + if self.times.is_some() { 16 } else { 0 }
            + if self.attr_phase_change.is_some() {
                4
            } else {
                0
            }
            + (1usize << Self::v2_size_width(msgs))
    }

    /// Encode the header as one chunk: the v1 prefix and 8-byte aligned
    /// messages, or `OHDR`, the v2 prefix (flags from `self.flags`, the
    /// chunk-size width chosen here), messages and the lookup3 checksum.
    /// Continuation messages are not generated: one chunk holds everything.
    ///
    /// # Errors
    /// `Usage` for a message body above 65535 bytes (65528 in v1), a v1
    /// header above 4 GiB, or a version other than 1 and 2.
    pub fn encode(&self, enc: &mut Encoder) -> Result<()> {
        let msgs = self.messages_len();
        let start = enc.len();
        let limit = if self.version == 1 { 0xfff8 } else { 0xffff };
        if self.messages.iter().any(|m| m.data.len() > limit) {
            return Err(Error::usage("object header message larger than 64 KiB"));
        }
        match self.version {
            1 => {
                let size =
                    u32::try_from(msgs).map_err(|_| Error::usage("object header above 4 GiB"))?;
                let n = u16::try_from(self.messages.len())
                    .map_err(|_| Error::usage("more than 65535 messages"))?;
                enc.put_u8(1);
                enc.put_u8(0);
                enc.put_u16(n);
                enc.put_u32(self.refcount);
                enc.put_u32(size);
                enc.put_zeros(4);
                for m in &self.messages {
                    let padded = m.data.len().div_ceil(8) * 8;
                    enc.put_u16(m.kind);
                    #[allow(clippy::cast_possible_truncation)] // ≤ 0xfff8, checked above
                    enc.put_u16(padded as u16);
                    enc.put_u8(m.flags);
                    enc.put_zeros(3);
                    enc.put_bytes(&m.data);
                    enc.put_zeros(padded - m.data.len());
                }
            }
            2 => {
                let width = Self::v2_size_width(msgs);
                let mut flags =
                    (self.flags & !0x03 & !FLAG_TIMES & !FLAG_ATTR_PHASE_CHANGE) | width;
                if self.times.is_some() {
                    flags |= FLAG_TIMES;
                }
                if self.attr_phase_change.is_some() {
                    flags |= FLAG_ATTR_PHASE_CHANGE;
                }
                enc.put_bytes(&OHDR_SIGNATURE);
                enc.put_u8(2);
                enc.put_u8(flags);
                if let Some(t) = self.times {
                    enc.put_u32(t.access);
                    enc.put_u32(t.modification);
                    enc.put_u32(t.change);
                    enc.put_u32(t.birth);
                }
                if let Some((a, b)) = self.attr_phase_change {
                    enc.put_u16(a);
                    enc.put_u16(b);
                }
                enc.put_uint(msgs as u64, 1usize << width);
                for m in &self.messages {
                    #[allow(clippy::cast_possible_truncation)] // v2 message types are < 256
                    enc.put_u8(m.kind as u8);
                    #[allow(clippy::cast_possible_truncation)] // ≤ 0xffff, checked above
                    enc.put_u16(m.data.len() as u16);
                    enc.put_u8(m.flags);
                    if flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0 {
                        enc.put_u16(m.creation_order.unwrap_or(0));
                    }
                    enc.put_bytes(&m.data);
                }
                enc.put_checksum_from(start);
            }
            v => return Err(Error::usage(alloc::format!("object header version {v}"))),
        }
        debug_assert_eq!(enc.len() - start, self.encoded_len());
        Ok(())
    }
}

impl ObjectHeader {
    /// Size of the first chunk written by [`ObjectHeader::encode_split`]:
    /// the prefix and one continuation message (v1: 16 + 8 + body; v2:
    /// `OHDR`, version, flags, one-byte chunk size, 4 + body, checksum).
    pub fn split_stub_len(version: u8, sizes: crate::Sizes) -> usize {
        let body = usize::from(sizes.offsets) + usize::from(sizes.lengths);
        if version == 1 {
            V1_PREFIX_SIZE + 8 + body.div_ceil(8) * 8
        } else {
            4 + 1 + 1 + 1 + 4 + body + 4
        }
    }

    /// Size of the continuation block written by [`ObjectHeader::encode_split`].
    pub fn split_block_len(&self) -> usize {
        let msgs = self.messages_len();
        if self.version == 1 {
            msgs
        } else {
            4 + msgs + 4
        }
    }

    /// Encode the header as two chunks: a fixed-size first chunk holding
    /// only a continuation message (so that the header's address can be
    /// chosen before its messages are known) and a continuation block at
    /// `block` with all messages (v1: the aligned messages; v2: `OCHK`,
    /// messages, checksum). Returns (first chunk, block).
    ///
    /// # Errors
    /// As [`ObjectHeader::encode`]; `Usage` for v2 headers with times, attribute
    /// phase-change values or tracked attribute creation order (the stub
    /// is written without them).
    pub fn encode_split(
        &self,
        block: crate::Addr,
        sizes: crate::Sizes,
    ) -> Result<(Vec<u8>, Vec<u8>)> {
        let mut whole = Encoder::new();
        self.encode(&mut whole)?;
        let whole = whole.into_vec();
        let msgs = self.messages_len();
        let block_len = self.split_block_len() as u64;
        let body_len = usize::from(sizes.offsets) + usize::from(sizes.lengths);
        let mut stub = Encoder::new();
        let mut blk = Encoder::new();
        if self.version == 1 {
            let n = u16::try_from(self.messages.len() + 1)
                .map_err(|_| Error::usage("more than 65535 messages"))?;
            let padded = body_len.div_ceil(8) * 8;
            stub.put_u8(1);
            stub.put_u8(0);
            stub.put_u16(n);
            stub.put_u32(self.refcount);
            #[allow(clippy::cast_possible_truncation)] // a few dozen bytes
            stub.put_u32((8 + padded) as u32);
            stub.put_zeros(4);
            stub.put_u16(kind::CONTINUATION);
            #[allow(clippy::cast_possible_truncation)] // a few dozen bytes
            stub.put_u16(padded as u16);
            stub.put_u8(0);
            stub.put_zeros(3);
            stub.put_addr(block, sizes);
            stub.put_len(block_len, sizes);
            stub.put_zeros(padded - body_len);
            blk.put_bytes(whole.get(V1_PREFIX_SIZE..).unwrap_or_default());
        } else {
            if self.times.is_some()
                || self.attr_phase_change.is_some()
                || self.flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0
            {
                return Err(Error::usage(
                    "split object header with times, phase change or attribute creation order",
                ));
            }
            let start = stub.len();
            stub.put_bytes(&OHDR_SIGNATURE);
            stub.put_u8(2);
            stub.put_u8(self.flags & !0x03);
            #[allow(clippy::cast_possible_truncation)] // a few dozen bytes
            stub.put_u8((4 + body_len) as u8);
            #[allow(clippy::cast_possible_truncation)] // message type < 256
            stub.put_u8(kind::CONTINUATION as u8);
            #[allow(clippy::cast_possible_truncation)] // a few dozen bytes
            stub.put_u16(body_len as u16);
            stub.put_u8(0);
            stub.put_addr(block, sizes);
            stub.put_len(block_len, sizes);
            stub.put_checksum_from(start);
            let prefix = self.v2_prefix_len(msgs);
            blk.put_bytes(b"OCHK");
            blk.put_bytes(whole.get(prefix..prefix + msgs).unwrap_or_default());
            blk.put_checksum_from(0);
        }
        Ok((stub.into_vec(), blk.into_vec()))
    }
}

/// Verify the lookup3 checksum stored in the last 4 bytes of a v2 chunk
/// (`OHDR` or `OCHK` through the gap); `base` is the chunk's absolute offset.
///
/// # Errors
/// `Truncated` when shorter than 4 bytes, `Checksum` on mismatch.
pub fn verify_chunk_checksum(chunk: &[u8], base: u64) -> Result<()> {
    let n = chunk
        .len()
        .checked_sub(4)
        .ok_or_else(|| Error::truncated("object header chunk without checksum", base))?;
    let (body, sum) = chunk.split_at(n);
    let mut sc = Cursor::new(sum, base.saturating_add(n as u64));
    let stored = sc.read_u32()?;
    let computed = lookup3(body, 0);
    if stored != computed {
        return Err(Error::checksum(
            alloc::format!(
                "object header chunk checksum {stored:#010x}, computed {computed:#010x}"
            ),
            base.saturating_add(n as u64),
        ));
    }
    Ok(())
}

/// Decode the messages of one chunk's message area (`cur` covers exactly the
/// messages and gap, no prefix, signature or checksum), appending to `out`.
/// `version` is the header version; `header_flags` the v2 flags (creation
/// order field present when bit 2 is set). At most `max_messages` messages in
/// `out` in total.
///
/// # Errors
/// `Truncated`, `Corrupt`, `Limit`, `Unsupported` (unknown message type
/// marked "fail if unknown").
pub fn decode_messages(
    cur: &mut Cursor<'_>,
    version: u8,
    header_flags: u8,
    max_messages: usize,
    out: &mut Vec<Message>,
) -> Result<()> {
    let hdr_size = match version {
        1 => 8,
        _ if header_flags & FLAG_ATTR_CRT_ORDER_TRACKED != 0 => 6,
        _ => 4,
    };
    while cur.remaining() >= hdr_size {
        let at = cur.offset();
        let (kind, size, flags, creation_order) = if version == 1 {
            let kind = cur.read_u16()?;
            let size = cur.read_u16()?;
            let flags = cur.read_u8()?;
            cur.skip(3)?;
            if size % 8 != 0 {
                return Err(Error::corrupt(
                    alloc::format!("v1 message size {size} is not a multiple of 8"),
                    at,
                ));
            }
            (kind, size, flags, None)
        } else {
            let kind = u16::from(cur.read_u8()?);
            let size = cur.read_u16()?;
            let flags = cur.read_u8()?;
            let co = if hdr_size == 6 {
                Some(cur.read_u16()?)
            } else {
                None
            };
            (kind, size, flags, co)
        };
        if flags & crate::format::message::flags::SHARED != 0
            && flags & crate::format::message::flags::DONT_SHARE != 0
        {
            return Err(Error::corrupt(
                "message flagged both shared and not shareable",
                at,
            ));
        }
        // Only these types can be shared (libhdf5 refuses a header whose
        // message of another known type is flagged shareable; flagged
        // shared, its body would be misread as a shared-message reference).
        use crate::format::message::kind as k;
        const SHAREABLE: [u16; 6] = [
            k::DATASPACE,
            k::DATATYPE,
            k::FILL_VALUE_OLD,
            k::FILL_VALUE,
            k::FILTER_PIPELINE,
            k::ATTRIBUTE,
        ];
        let share_bits =
            crate::format::message::flags::SHARED | crate::format::message::flags::SHAREABLE;
        if kind <= MAX_KNOWN_MESSAGE_TYPE && flags & share_bits != 0 && !SHAREABLE.contains(&kind) {
            return Err(Error::corrupt(
                alloc::format!(
                    "message type {kind:#x} flagged shared or shareable (flags {flags:#04x}): a type that cannot be shared"
                ),
                at,
            ));
        }
        if kind > MAX_KNOWN_MESSAGE_TYPE
            && flags & crate::format::message::flags::FAIL_IF_UNKNOWN_ALWAYS != 0
        {
            return Err(Error::unsupported(alloc::format!(
                "unknown object header message type {kind:#06x} marked \"fail if unknown\""
            ))
            .with_offset(at));
        }
        if out.len() >= max_messages {
            return Err(Error::limit(alloc::format!(
                "more than {max_messages} object header messages"
            ))
            .with_offset(at));
        }
        let offset = cur.offset();
        let body = cur.read_bytes(usize::from(size))?;
        out.push(Message {
            kind,
            flags,
            creation_order,
            data: body.to_vec(),
            offset,
        });
    }
    // What is left is a gap (v2) or padding (v1), smaller than a message header.
    Ok(())
}

/// Whether `m` is a continuation message.
pub fn is_continuation(m: &Message) -> bool {
    m.kind == kind::CONTINUATION
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    #[test]
    fn v1_messages() {
        let mut b = Vec::new();
        // dataspace-ish message of 8 bytes
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&[1, 0, 0, 0]);
        b.extend_from_slice(&[9; 8]);
        // NIL of 0
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        let mut out = Vec::new();
        decode_messages(&mut Cursor::new(&b, 100), 1, 0, 10, &mut out).unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].kind, 1);
        assert_eq!(out[0].flags, 1);
        assert_eq!(out[0].offset, 108);
        assert_eq!(out[0].data, [9; 8]);
        assert_eq!(out[1].kind, 0);
        // limit
        let mut out = Vec::new();
        let e = decode_messages(&mut Cursor::new(&b, 100), 1, 0, 1, &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        // unaligned size
        let mut bad = b.clone();
        bad[2] = 7;
        assert!(decode_messages(&mut Cursor::new(&bad, 0), 1, 0, 10, &mut Vec::new()).is_err());
    }

    #[test]
    fn v2_messages_gap_and_creation_order() {
        let mut b = Vec::new();
        b.extend_from_slice(&[0x0c, 3, 0, 0x00, 7, 0, 1, 2, 3]);
        b.extend_from_slice(&[0, 0]); // gap smaller than a 6-byte header
        let mut out = Vec::new();
        decode_messages(
            &mut Cursor::new(&b, 0),
            2,
            FLAG_ATTR_CRT_ORDER_TRACKED,
            10,
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].kind, 0x0c);
        assert_eq!(out[0].creation_order, Some(7));
        assert_eq!(out[0].data, [1, 2, 3]);
        assert_eq!(out[0].offset, 6);
    }

    #[test]
    fn unknown_fail_flag() {
        let b = [0x40u8, 0, 0, 0x80];
        let e = decode_messages(&mut Cursor::new(&b, 0), 2, 0, 10, &mut Vec::new()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert!(e.message().contains("0x0040"));
        // without the flag: kept as a raw message
        let b = [0x40u8, 0, 0, 0x00];
        let mut out = Vec::new();
        decode_messages(&mut Cursor::new(&b, 0), 2, 0, 10, &mut out).unwrap();
        assert_eq!(out[0].kind, 0x40);
    }

    #[test]
    fn v2_prefix() {
        let mut b = Vec::new();
        b.extend_from_slice(b"OHDR");
        b.extend_from_slice(&[2, 0x20 | 0x10 | 0x01]);
        for t in [1u32, 2, 3, 4] {
            b.extend_from_slice(&t.to_le_bytes());
        }
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&6u16.to_le_bytes());
        b.extend_from_slice(&0x1234u16.to_le_bytes());
        let p = V2Prefix::decode(&mut Cursor::new(&b, 0)).unwrap();
        assert_eq!(p.times.unwrap().birth, 4);
        assert_eq!(p.attr_phase_change, Some((8, 6)));
        assert_eq!(p.chunk0_size, 0x1234);
        assert_eq!(p.prefix_len, b.len());
        let mut bad = b.clone();
        bad[5] |= 0x40;
        assert!(V2Prefix::decode(&mut Cursor::new(&bad, 0)).is_err());
    }

    #[test]
    fn checksum() {
        let mut b = b"OCHKabc".to_vec();
        let s = lookup3(&b, 0);
        b.extend_from_slice(&s.to_le_bytes());
        verify_chunk_checksum(&b, 0).unwrap();
        b[5] = 0;
        assert_eq!(
            verify_chunk_checksum(&b, 0).unwrap_err().kind(),
            ErrorKind::Checksum
        );
        assert!(verify_chunk_checksum(&[1, 2], 0).is_err());
    }
    #[test]
    fn split_headers_decode_like_single_chunk_ones() {
        // A header split into a stub chunk (one continuation message) and a
        // continuation block reads back, through the object header reader,
        // as the same messages; the stub has the advertised size.
        use crate::io::Storage;
        use crate::Addr;
        for version in [1u8, 2] {
            let h = ObjectHeader {
                version,
                flags: 0,
                refcount: 3,
                messages: alloc::vec![
                    Message {
                        kind: kind::DATASPACE,
                        flags: 0,
                        creation_order: None,
                        data: alloc::vec![2, 1, 0, 1, 5, 0, 0, 0, 0, 0, 0, 0],
                        offset: 0,
                    },
                    Message {
                        kind: kind::DATATYPE,
                        flags: 1,
                        creation_order: None,
                        data: alloc::vec![0x10, 0x08, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0],
                        offset: 0,
                    },
                ],
                times: None,
                attr_phase_change: None,
            };
            let sizes = crate::Sizes::default();
            let stub_at = 64u64;
            let stub_len = ObjectHeader::split_stub_len(version, sizes);
            let block_at = stub_at + stub_len as u64 + 8;
            let (stub, block) = h.encode_split(Addr(block_at), sizes).unwrap();
            assert_eq!(stub.len(), stub_len);
            assert_eq!(block.len(), h.split_block_len());
            let mut file = alloc::vec![0u8; block_at as usize];
            file[stub_at as usize..stub_at as usize + stub.len()].copy_from_slice(&stub);
            file.extend_from_slice(&block);
            let st = Storage::new(alloc::sync::Arc::new(file));
            let got = crate::read::object_header::read_object_header(
                &st,
                Addr(stub_at),
                crate::Ctx::default(),
            )
            .unwrap();
            let kinds: Vec<u16> = got
                .messages
                .iter()
                .map(|m| m.kind)
                .filter(|&k| k != kind::CONTINUATION && k != kind::NIL)
                .collect();
            assert_eq!(kinds, [kind::DATASPACE, kind::DATATYPE], "v{version}");
            let dt = got.find(kind::DATATYPE).unwrap();
            assert_eq!(
                dt.data[..12],
                h.messages[1].data,
                "v{version} (v1 pads to 8)"
            );
            if version == 1 {
                assert_eq!(got.refcount, 3); // v2 keeps it in a reference count message
            }
        }
    }
}
