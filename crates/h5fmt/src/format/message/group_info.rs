//! Group info message (0x000A), IV.A.2.k.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;

/// Compact/dense thresholds and size estimates of a new-style group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GroupInfo {
    /// Maximum links stored compactly, when stored.
    pub max_compact: Option<u16>,
    /// Minimum links stored densely, when stored.
    pub min_dense: Option<u16>,
    /// Estimated number of entries, when stored.
    pub est_entries: Option<u16>,
    /// Estimated link name length, when stored.
    pub est_name_len: Option<u16>,
}

impl GroupInfo {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("group info message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !0x03 != 0 {
            return Err(Error::corrupt(
                alloc::format!("group info flags {flags:#x}"),
                flags_at,
            ));
        }
        let mut info = GroupInfo::default();
        if flags & 0x01 != 0 {
            info.max_compact = Some(cur.read_u16()?);
            info.min_dense = Some(cur.read_u16()?);
        }
        if flags & 0x02 != 0 {
            info.est_entries = Some(cur.read_u16()?);
            info.est_name_len = Some(cur.read_u16()?);
        }
        Ok(info)
    }
}

impl GroupInfo {
    /// Encode the message body (version 0); the phase-change pair and the
    /// estimates are each stored only when both values are set.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) {
        let _ = ctx;
        let phase = self.max_compact.zip(self.min_dense);
        let est = self.est_entries.zip(self.est_name_len);
        enc.put_u8(0);
        enc.put_u8(u8::from(phase.is_some()) | (u8::from(est.is_some()) << 1));
        if let Some((a, b)) = phase {
            enc.put_u16(a);
            enc.put_u16(b);
        }
        if let Some((a, b)) = est {
            enc.put_u16(a);
            enc.put_u16(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags() {
        let ctx = Ctx::default();
        assert_eq!(
            GroupInfo::decode(&mut Cursor::new(&[0, 0], 0), ctx).unwrap(),
            GroupInfo::default()
        );
        let g =
            GroupInfo::decode(&mut Cursor::new(&[0, 3, 8, 0, 6, 0, 4, 0, 8, 0], 0), ctx).unwrap();
        assert_eq!(
            (g.max_compact, g.min_dense, g.est_entries, g.est_name_len),
            (Some(8), Some(6), Some(4), Some(8))
        );
        assert!(GroupInfo::decode(&mut Cursor::new(&[0, 1, 8], 0), ctx).is_err());
        assert!(GroupInfo::decode(&mut Cursor::new(&[1, 0], 0), ctx).is_err());
    }
}
