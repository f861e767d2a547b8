//! Reading a whole object header: prefix, chunks, continuation chain.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::message::continuation::Continuation;
use crate::format::message::kind;
use crate::format::message::misc::RefCount;
use crate::format::object_header::{
    decode_messages, verify_chunk_checksum, ObjectHeader, V1Prefix, V2Prefix, OCHK_SIGNATURE,
    OHDR_SIGNATURE, V1_PREFIX_SIZE, V2_MAX_PREFIX_SIZE,
};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::{BTreeSet, VecDeque};
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
    read_inner(st, addr, ctx).map_err(|e| e.context(&alloc::format!("object header at {addr}")))
}

fn read_inner(st: &Storage, addr: Addr, ctx: Ctx) -> Result<ObjectHeader> {
    let abs = st.absolute(addr, 1)?;
    let head = st.read_upto(addr, V2_MAX_PREFIX_SIZE as u64)?;
    let mut messages = Vec::new();
    let mut visited = BTreeSet::new();
    visited.insert(addr.get());

    let (version, flags, mut refcount, times, attr_phase_change) =
        if head.starts_with(&OHDR_SIGNATURE) {
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
            (
                2u8,
                prefix.flags,
                1u32,
                prefix.times,
                prefix.attr_phase_change,
            )
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
            (1u8, 0u8, prefix.refcount, None, None)
        };

    // Follow continuations breadth-first, in the order they were found (as libhdf5 does).
    let mut queue: VecDeque<Continuation> = VecDeque::new();
    let mut scanned = 0usize;
    let mut chunks = 1usize;
    loop {
        for m in messages.get(scanned..).unwrap_or(&[]) {
            if m.kind == kind::CONTINUATION {
                queue.push_back(Continuation::decode(&mut m.cursor(), ctx)?);
            }
        }
        scanned = messages.len();
        let Some(cont) = queue.pop_front() else { break };
        let cabs = st.absolute(cont.addr, cont.len)?;
        if !visited.insert(cont.addr.get()) {
            return Err(Error::cycle("object header continuation chain loops", cabs));
        }
        chunks += 1;
        if chunks > ctx.limits.max_header_chunks {
            return Err(Error::limit(alloc::format!(
                "more than {} object header chunks",
                ctx.limits.max_header_chunks
            ))
            .with_offset(cabs));
        }
        check_block(cont.len, ctx, cabs)?;
        let chunk = st.read(cont.addr, cont.len)?;
        if version == 1 {
            decode_messages(
                &mut Cursor::new(&chunk, cabs),
                1,
                0,
                ctx.limits.max_messages,
                &mut messages,
            )?;
        } else {
            let mut c = Cursor::new(&chunk, cabs);
            c.expect_signature(&OCHK_SIGNATURE)?;
            verify_chunk_checksum(&chunk, cabs)?;
            let end = chunk.len().saturating_sub(4);
            let area = chunk.get(4..end).unwrap_or(&[]);
            decode_messages(
                &mut Cursor::new(area, cabs.saturating_add(4)),
                2,
                flags,
                ctx.limits.max_messages,
                &mut messages,
            )?;
        }
    }

    if version == 2 {
        if let Some(m) = messages.iter().find(|m| m.kind == kind::REF_COUNT) {
            refcount = RefCount::decode(&mut m.cursor(), ctx)?.count;
        }
    }
    Ok(ObjectHeader {
        version,
        flags,
        refcount,
        messages,
        times,
        attr_phase_change,
    })
}
