//! Loading a metadata cache image (superblock extension message 0x0018) into
//! a [`Storage`] overlay, so that every later metadata read sees the cached
//! entries instead of the possibly stale bytes at their addresses. Read-only:
//! libhdf5 deletes the image on a read-write open; we never write.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::mdci::{CacheImage, MdciMessage};
use crate::format::message::kind;
use crate::format::superblock::Superblock;
use crate::io::{Overlay, Storage};
use crate::read::object_header::read_object_header;
use crate::Ctx;

/// The metadata cache image message of the superblock extension, if any.
///
/// # Errors
/// Decode errors of the superblock extension or the message.
pub fn find_message(st: &Storage, ctx: Ctx, sb: &Superblock) -> Result<Option<MdciMessage>> {
    let Some(ext) = sb.extension.defined() else {
        return Ok(None);
    };
    let header = read_object_header(st, ext, ctx)?;
    let Some(m) = header.find(kind::MDCI) else {
        return Ok(None);
    };
    Ok(Some(MdciMessage::decode(&mut m.cursor(), ctx)?))
}

/// Read and decode the cache image block the message points to.
///
/// # Errors
/// `Limit` when the block exceeds `max_metadata_block`; `Truncated`,
/// `Corrupt`, `Checksum`, `Unsupported` from the block.
pub fn load_image(st: &Storage, ctx: Ctx, msg: &MdciMessage) -> Result<CacheImage> {
    let abs = st.base().saturating_add(msg.addr.get());
    if msg.len > ctx.limits.max_metadata_block {
        return Err(Error::limit(alloc::format!(
            "metadata cache image of {} bytes exceeds the metadata block limit {}",
            msg.len,
            ctx.limits.max_metadata_block
        ))
        .with_offset(abs));
    }
    let bytes = st.read(msg.addr, msg.len)?;
    CacheImage::decode(&mut Cursor::new(&bytes, abs), ctx)
        .map_err(|e| e.context("metadata cache image"))
}

/// `st` with the file's metadata cache image applied as an overlay, or `st`
/// itself when the file has none.
///
/// # Errors
/// As [`find_message`] and [`load_image`]; `Corrupt` for two entries at
/// overlapping addresses.
pub fn apply(st: &Storage, ctx: Ctx, sb: &Superblock) -> Result<Storage> {
    let Some(msg) = find_message(st, ctx, sb)? else {
        return Ok(st.clone());
    };
    let image = load_image(st, ctx, &msg)?;
    let mut overlay = Overlay::new();
    for e in image.entries {
        let at = st.base().saturating_add(e.addr.get());
        if overlay.insert(e.addr.get(), e.image).is_some() {
            return Err(Error::corrupt(
                "two metadata cache image entries at one address",
                at,
            ));
        }
    }
    st.with_overlay(overlay)
}
