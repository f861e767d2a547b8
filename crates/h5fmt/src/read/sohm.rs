//! Shared object header messages (SOHM): finding a shared message's body in
//! the fractal heap of the SOHM index that holds its message type.

use crate::error::{Error, Result};
use crate::format::message::kind;
use crate::format::message::misc::SohmTableMessage;
use crate::format::sohm::{SohmIndex, SohmTable};
use crate::format::superblock::Superblock;
use crate::io::Storage;
use crate::read::fractal_heap::FractalHeap;
use crate::read::object_header::read_object_header;
use crate::Ctx;
use alloc::vec::Vec;

/// The SOHM indexes of a file (from the superblock extension's table message).
#[derive(Debug, Clone)]
pub struct SohmIndexes {
    indexes: Vec<SohmIndex>,
}

impl SohmIndexes {
    /// Load the SOHM master table, when the file has a superblock extension
    /// with a shared message table message.
    ///
    /// # Errors
    /// Decode errors of the superblock extension or the master table.
    pub fn load(st: &Storage, ctx: Ctx, sb: &Superblock) -> Result<Option<Self>> {
        let Some(ext) = sb.extension.defined() else {
            return Ok(None);
        };
        let header = read_object_header(st, ext, ctx)?;
        let Some(m) = header.find(kind::SOHM_TABLE) else {
            return Ok(None);
        };
        let msg = SohmTableMessage::decode(&mut m.cursor(), ctx)?;
        let len = SohmTable::encoded_len(msg.num_indexes, ctx) as u64;
        let bytes = st.read(msg.table, len)?;
        let abs = st.base().saturating_add(msg.table.get());
        let table = SohmTable::decode(
            &mut crate::codec::Cursor::new(&bytes, abs),
            msg.num_indexes,
            ctx,
        )?;
        Ok(Some(SohmIndexes {
            indexes: table.indexes,
        }))
    }

    /// The body of a message of type `msg_kind` stored in the SOHM heap under `id`.
    ///
    /// # Errors
    /// `Corrupt` when no index holds that message type; heap errors.
    pub fn get(&self, st: &Storage, ctx: Ctx, msg_kind: u16, id: &[u8; 8]) -> Result<Vec<u8>> {
        let bit = 1u32.checked_shl(u32::from(msg_kind)).unwrap_or(0);
        let index = self
            .indexes
            .iter()
            .find(|i| u32::from(i.message_types) & bit != 0)
            .ok_or_else(|| {
                Error::corrupt(
                    alloc::format!("no SOHM index holds messages of type {msg_kind}"),
                    0,
                )
            })?;
        let heap = FractalHeap::open(st, ctx, index.heap_addr)?;
        heap.get(id)
    }
}
