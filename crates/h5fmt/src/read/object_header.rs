//! Reading a whole object header: prefix, chunks, continuation chain.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::message::continuation::Continuation;
use crate::format::message::kind;
use crate::format::message::misc::RefCount;
use crate::format::message::Message;
use crate::format::object_header::{
    decode_messages, verify_chunk_checksum, ObjectHeader, Times, V1Prefix, V2Prefix,
    OCHK_SIGNATURE, OHDR_SIGNATURE, V1_PREFIX_SIZE, V2_MAX_PREFIX_SIZE,
};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;

fn check_block(len: u64, ctx: Ctx, at: u64) -> Result<()> {
    if len > ctx.limits.max_metadata_block {
        return Err(Error::limit(alloc::format!(
            "object header chunk of {len} bytes exceeds the metadata block limit {}",
            ctx.limits.max_metadata_block
        ))
        .with_offset(at));
    }
    Ok(())
}

/// Read the object header at `addr`, following continuation messages (cycles
/// detected), verifying v2 checksums. Every message's `offset` is the
/// absolute file offset of its body.
///
/// # Errors
/// `Truncated`, `Corrupt`, `Checksum`, `Cycle`, `Limit`, `Unsupported` (an
/// unknown message type flagged "fail if unknown").
pub fn read_object_header(st: &Storage, addr: Addr, ctx: Ctx) -> Result<ObjectHeader> {
    let h = read_header_chunks(st, addr, ctx)?;
    let mut refcount = h.v1_refcount;
    let messages: Vec<Message> = h.chunks.into_iter().flat_map(|c| c.messages).collect();
    if h.version == 2 {
        refcount = 1;
        if let Some(m) = messages.iter().find(|m| m.kind == kind::REF_COUNT) {
            refcount = RefCount::decode(&mut m.cursor(), ctx)
                .map_err(|e| e.context(&alloc::format!("object header at {addr}")))?
                .count;
        }
    }
    Ok(ObjectHeader {
        version: h.version,
        flags: h.flags,
        refcount,
        messages,
        times: h.times,
        attr_phase_change: h.attr_phase_change,
    })
}

/// One chunk of an object header as stored.
#[derive(Debug, Clone)]
pub struct StoredChunk {
    /// Address of the chunk's first byte (the prefix, for chunk 0).
    pub addr: Addr,
    /// Bytes before the message area: the v1 or v2 prefix for chunk 0,
    /// `OCHK` for v2 continuation chunks, nothing for v1 ones.
    pub prefix: Vec<u8>,
    /// Bytes of the message area (messages and gap; no checksum).
    pub area_len: usize,
    /// The chunk's messages, NIL ones included.
    pub messages: Vec<Message>,
}

/// An object header chunk by chunk, in the order libhdf5 reads them (chunk
/// 0, then continuations breadth-first in the order they are found).
#[derive(Debug, Clone)]
pub struct HeaderChunks {
    /// 1 or 2.
    pub version: u8,
    /// v2 header flags (0 for v1).
    pub flags: u8,
    /// The v1 prefix's reference count (1 for v2: see the message).
    pub v1_refcount: u32,
    /// v2 times, when stored.
    pub times: Option<Times>,
    /// v2 attribute phase change values, when stored.
    pub attr_phase_change: Option<(u16, u16)>,
    /// The chunks.
    pub chunks: Vec<StoredChunk>,
}

/// Read and validate every chunk of the object header at `addr`
/// (checksums, continuation cycles, chunk, block and message limits),
/// keeping which chunk each message lives in.
///
/// # Errors
/// As [`read_object_header`].
pub fn read_header_chunks(st: &Storage, addr: Addr, ctx: Ctx) -> Result<HeaderChunks> {
    chunks_inner(st, addr, ctx).map_err(|e| e.context(&alloc::format!("object header at {addr}")))
}

fn chunks_inner(st: &Storage, addr: Addr, ctx: Ctx) -> Result<HeaderChunks> {
    let abs = st.absolute(addr, 1)?;
    let head = st.read_upto(addr, V2_MAX_PREFIX_SIZE as u64)?;
    let mut messages = Vec::new();
    let mut h = if head.starts_with(&OHDR_SIGNATURE) {
        let prefix = V2Prefix::decode(&mut Cursor::new(&head, abs))?;
        let total = (prefix.prefix_len as u64)
            .checked_add(prefix.chunk0_size)
            .and_then(|t| t.checked_add(4))
            .ok_or_else(|| Error::corrupt("object header chunk size overflows", abs))?;
        check_block(total, ctx, abs)?;
        let chunk = st.read(addr, total)?;
        verify_chunk_checksum(&chunk, abs)?;
        let end = chunk.len().saturating_sub(4);
        let area = chunk.get(prefix.prefix_len..end).unwrap_or(&[]);
        let area_abs = abs.saturating_add(prefix.prefix_len as u64);
        decode_messages(
            &mut Cursor::new(area, area_abs),
            2,
            prefix.flags,
            ctx.limits.max_messages,
            &mut messages,
        )?;
        HeaderChunks {
            version: 2,
            flags: prefix.flags,
            v1_refcount: 1,
            times: prefix.times,
            attr_phase_change: prefix.attr_phase_change,
            chunks: alloc::vec![StoredChunk {
                addr,
                prefix: chunk.get(..prefix.prefix_len).unwrap_or(&[]).to_vec(),
                area_len: area.len(),
                messages,
            }],
        }
    } else {
        let prefix =
            V1Prefix::decode(&mut Cursor::new(&head, abs)).map_err(|e| match head.first() {
                Some(&v) if v != 1 => Error::corrupt(
                    alloc::format!("not an object header (version byte {v})"),
                    abs,
                ),
                _ => e,
            })?;
        let size = u64::from(prefix.header_size);
        check_block(size, ctx, abs)?;
        let area_addr = Addr(
            addr.get()
                .checked_add(V1_PREFIX_SIZE as u64)
                .ok_or_else(|| Error::corrupt("address overflows", abs))?,
        );
        let area = st.read(area_addr, size)?;
        let area_abs = abs.saturating_add(V1_PREFIX_SIZE as u64);
        decode_messages(
            &mut Cursor::new(&area, area_abs),
            1,
            0,
            ctx.limits.max_messages,
            &mut messages,
        )?;
        HeaderChunks {
            version: 1,
            flags: 0,
            v1_refcount: prefix.refcount,
            times: None,
            attr_phase_change: None,
            chunks: alloc::vec![StoredChunk {
                addr,
                prefix: head.get(..V1_PREFIX_SIZE).unwrap_or(&[]).to_vec(),
                area_len: area.len(),
                messages,
            }],
        }
    };

    // Follow continuations breadth-first, in the order they were found (as libhdf5 does).
    let mut visited = BTreeSet::from([addr.get()]);
    let mut total = h.chunks.first().map_or(0, |c| c.messages.len());
    let mut next = 0usize;
    while let Some(c) = h.chunks.get(next) {
        next += 1;
        let mut conts = Vec::new();
        for m in c.messages.iter().filter(|m| m.kind == kind::CONTINUATION) {
            conts.push(Continuation::decode(&mut m.cursor(), ctx)?);
        }
        for cont in conts {
            let cabs = st.absolute(cont.addr, cont.len)?;
            if !visited.insert(cont.addr.get()) {
                return Err(Error::cycle("object header continuation chain loops", cabs));
            }
            if h.chunks.len() >= ctx.limits.max_header_chunks {
                return Err(Error::limit(alloc::format!(
                    "more than {} object header chunks",
                    ctx.limits.max_header_chunks
                ))
                .with_offset(cabs));
            }
            check_block(cont.len, ctx, cabs)?;
            let chunk = st.read(cont.addr, cont.len)?;
            let (prefix, area): (&[u8], &[u8]) = if h.version == 1 {
                (&[], &chunk)
            } else {
                Cursor::new(&chunk, cabs).expect_signature(&OCHK_SIGNATURE)?;
                verify_chunk_checksum(&chunk, cabs)?;
                let end = chunk.len().saturating_sub(4);
                (&OCHK_SIGNATURE, chunk.get(4..end).unwrap_or(&[]))
            };
            let mut messages = Vec::new();
            decode_messages(
                &mut Cursor::new(area, cabs.saturating_add(prefix.len() as u64)),
                h.version,
                h.flags,
                ctx.limits.max_messages.saturating_sub(total),
                &mut messages,
            )?;
            total = total.saturating_add(messages.len());
            h.chunks.push(StoredChunk {
                addr: cont.addr,
                prefix: prefix.to_vec(),
                area_len: area.len(),
                messages,
            });
        }
    }
    Ok(h)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::lookup3;
    use crate::io::ReadAt;
    use crate::ErrorKind;
    use alloc::sync::Arc;

    fn storage(b: Vec<u8>) -> Storage {
        let src: Arc<dyn ReadAt> = Arc::new(b);
        Storage::new(src)
    }

    fn v1_msg(b: &mut Vec<u8>, kind: u16, body: &[u8]) {
        b.extend_from_slice(&kind.to_le_bytes());
        b.extend_from_slice(&(body.len() as u16).to_le_bytes());
        b.extend_from_slice(&[0, 0, 0, 0]);
        b.extend_from_slice(body);
    }

    fn cont_body(addr: u64, len: u64) -> Vec<u8> {
        let mut c = addr.to_le_bytes().to_vec();
        c.extend_from_slice(&len.to_le_bytes());
        c
    }

    /// A v1 header at 0 whose only message continues at `cont_to`, and a
    /// continuation chunk at 64 holding a NIL message and, optionally, a
    /// continuation back to `back`.
    fn v1_file(cont_to: u64, back: Option<u64>) -> Vec<u8> {
        let mut area = Vec::new();
        v1_msg(&mut area, kind::CONTINUATION, &cont_body(cont_to, 40));
        let mut b = alloc::vec![1u8, 0, 2, 0, 1, 0, 0, 0];
        b.extend_from_slice(&(area.len() as u32).to_le_bytes());
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&area);
        b.resize(64, 0);
        let mut chunk = Vec::new();
        match back {
            Some(a) => v1_msg(&mut chunk, kind::CONTINUATION, &cont_body(a, 40)),
            None => v1_msg(&mut chunk, kind::NIL, &[0; 16]),
        }
        v1_msg(&mut chunk, kind::DATASPACE, &[1, 0, 0, 0, 0, 0, 0, 0]);
        b.extend_from_slice(&chunk);
        b
    }

    #[test]
    fn v1_with_continuation() {
        let st = storage(v1_file(64, None));
        let h = read_object_header(&st, Addr(0), Ctx::default()).unwrap();
        assert_eq!(h.version, 1);
        assert_eq!(h.refcount, 1);
        let kinds: Vec<u16> = h.messages.iter().map(|m| m.kind).collect();
        assert_eq!(kinds, [kind::CONTINUATION, kind::NIL, kind::DATASPACE]);
        assert_eq!(h.messages[2].offset, 64 + 24 + 8);
    }

    #[test]
    fn cycles_and_limits() {
        let e = read_object_header(&storage(v1_file(64, Some(64))), Addr(0), Ctx::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cycle);
        let e = read_object_header(&storage(v1_file(64, Some(0))), Addr(0), Ctx::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Cycle);
        let mut ctx = Ctx::default();
        ctx.limits.max_header_chunks = 1;
        let e = read_object_header(&storage(v1_file(64, None)), Addr(0), ctx).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit);
        let e = read_object_header(&storage(v1_file(1 << 20, None)), Addr(0), Ctx::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        let e = read_object_header(&storage(v1_file(64, None)), Addr(1 << 20), Ctx::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Truncated);
        let e = read_object_header(&storage(alloc::vec![0u8; 32]), Addr(0), Ctx::default())
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn v2_with_ochk() {
        // OHDR with a refcount message and a continuation to an OCHK at 100.
        let mut msgs = Vec::new();
        msgs.extend_from_slice(&[kind::REF_COUNT as u8, 5, 0, 0, 0, 3, 0, 0, 0]);
        msgs.extend_from_slice(&[kind::CONTINUATION as u8, 16, 0, 0]);
        msgs.extend_from_slice(&cont_body(100, 4 + 4 + 2 + 4));
        msgs.extend_from_slice(&[0, 0]); // gap
        let mut b = b"OHDR".to_vec();
        b.extend_from_slice(&[2, 0, msgs.len() as u8]);
        b.extend_from_slice(&msgs);
        let s = lookup3(&b, 0);
        b.extend_from_slice(&s.to_le_bytes());
        b.resize(100, 0);
        let mut ochk = b"OCHK".to_vec();
        ochk.extend_from_slice(&[kind::COMMENT as u8, 2, 0, 0, b'x', 0]);
        let s = lookup3(&ochk, 0);
        ochk.extend_from_slice(&s.to_le_bytes());
        b.extend_from_slice(&ochk);
        let h = read_object_header(&storage(b.clone()), Addr(0), Ctx::default()).unwrap();
        assert_eq!(h.version, 2);
        assert_eq!(h.refcount, 3);
        assert_eq!(h.messages.len(), 3);
        assert_eq!(h.messages[2].kind, kind::COMMENT);
        assert_eq!(h.messages[2].offset, 108);
        // corrupt the continuation chunk
        let mut bad = b.clone();
        bad[105] ^= 1;
        let e = read_object_header(&storage(bad), Addr(0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checksum);
        // corrupt chunk 0
        let mut bad = b;
        bad[8] ^= 1;
        let e = read_object_header(&storage(bad), Addr(0), Ctx::default()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checksum);
    }
}
