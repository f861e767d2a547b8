//! Shared message encoding (message flag bit 1), IV.A.2 "shared messages":
//! versions 1–3.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::{Addr, Ctx};

/// Shared-message type (v3): in the SOHM heap (`H5O_SHARE_TYPE_SOHM`).
pub const SHARE_TYPE_SOHM: u8 = 1;
/// Shared-message type (v3): in another object header (`H5O_SHARE_TYPE_COMMITTED`).
pub const SHARE_TYPE_COMMITTED: u8 = 2;

/// Where a shared message really lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SharedTarget {
    /// In another object header (committed datatype): its address.
    ObjectHeader(Addr),
    /// In the shared-object-header-message heap: the 8-byte fractal heap id.
    SohmHeap([u8; 8]),
}

/// A shared-message reference.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SharedMessage {
    /// Encoding version (1–3).
    pub version: u8,
    /// Target.
    pub target: SharedTarget,
}

impl SharedMessage {
    /// Decode a shared-message reference body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        let target = match version {
            1 => {
                // type byte (unused), 6 reserved bytes, then the old symbol
                // table entry form: a length-sized field libhdf5 skips, then
                // the object header address.
                cur.skip(1 + 6)?;
                cur.skip(usize::from(ctx.sizes.lengths))?;
                SharedTarget::ObjectHeader(cur.read_addr(ctx.sizes)?)
            }
            2 => {
                // The type byte is ignored: version 2 only shares committed datatypes.
                let _kind = cur.read_u8()?;
                SharedTarget::ObjectHeader(cur.read_addr(ctx.sizes)?)
            }
            3 => {
                let kind_at = cur.offset();
                match cur.read_u8()? {
                    SHARE_TYPE_SOHM => SharedTarget::SohmHeap(cur.read_array::<8>()?),
                    SHARE_TYPE_COMMITTED => SharedTarget::ObjectHeader(cur.read_addr(ctx.sizes)?),
                    k => {
                        return Err(Error::corrupt(
                            alloc::format!("shared message type {k}"),
                            kind_at,
                        ))
                    }
                }
            }
            v => {
                return Err(Error::corrupt(
                    alloc::format!("shared message encoding version {v}"),
                    at,
                ))
            }
        };
        Ok(SharedMessage { version, target })
    }
}

impl SharedMessage {
    /// Encode a reference to a committed datatype at `addr`: version 2
    /// (type byte, address; what libhdf5 writes for the earliest format) or
    /// version 3 (type 2, address).
    pub fn encode_committed(enc: &mut crate::codec::Encoder, ctx: Ctx, version: u8, addr: Addr) {
        enc.put_u8(if version >= 3 { 3 } else { 2 });
        enc.put_u8(SHARE_TYPE_COMMITTED);
        enc.put_addr(addr, ctx.sizes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        let ctx = Ctx::default();
        let mut b = alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0];
        b.extend_from_slice(&0u64.to_le_bytes());
        b.extend_from_slice(&0x320u64.to_le_bytes());
        let mut c = Cursor::new(&b, 0);
        let s = SharedMessage::decode(&mut c, ctx).unwrap();
        assert_eq!(s.target, SharedTarget::ObjectHeader(Addr(0x320)));
        assert!(c.is_empty());

        let mut b = alloc::vec![2u8, 0];
        b.extend_from_slice(&0x40u64.to_le_bytes());
        assert_eq!(
            SharedMessage::decode(&mut Cursor::new(&b, 0), ctx)
                .unwrap()
                .target,
            SharedTarget::ObjectHeader(Addr(0x40))
        );

        let b = [3u8, SHARE_TYPE_SOHM, 1, 2, 3, 4, 5, 6, 7, 8];
        let s = SharedMessage::decode(&mut Cursor::new(&b, 0), ctx).unwrap();
        assert_eq!(
            (s.version, s.target),
            (3, SharedTarget::SohmHeap([1, 2, 3, 4, 5, 6, 7, 8]))
        );
        let mut b = alloc::vec![3u8, SHARE_TYPE_COMMITTED];
        b.extend_from_slice(&0x99u64.to_le_bytes());
        assert_eq!(
            SharedMessage::decode(&mut Cursor::new(&b, 0), ctx)
                .unwrap()
                .target,
            SharedTarget::ObjectHeader(Addr(0x99))
        );
        assert!(SharedMessage::decode(&mut Cursor::new(&[3, 0, 0], 0), ctx).is_err());
        assert!(SharedMessage::decode(&mut Cursor::new(&[4, 2], 0), ctx).is_err());
    }
}
