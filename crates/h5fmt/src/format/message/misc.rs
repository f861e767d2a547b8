//! Small messages: comment (0x000D), modification times (0x000E, 0x0012),
//! B-tree 'K' values (0x0013), reference count (0x0016), shared message table (0x000F).

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::string::String;

/// Object comment.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Comment {
    /// The text.
    pub text: String,
}

impl Comment {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let text = match cur.rest().iter().position(|&b| b == 0) {
            Some(_) => cur.read_cstr()?,
            // libhdf5 always writes the NUL; tolerate its absence.
            None => cur.read_bytes(cur.remaining())?,
        };
        Ok(Comment {
            text: String::from_utf8_lossy(text).into_owned(),
        })
    }
}

/// Modification time in seconds since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ModificationTime {
    /// Seconds since 1970-01-01 UTC.
    pub seconds: u64,
}

impl ModificationTime {
    /// Decode the new message (0x0012).
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 {
            return Err(Error::corrupt(
                alloc::format!("modification time message version {version}"),
                at,
            ));
        }
        cur.skip(3)?;
        Ok(ModificationTime {
            seconds: u64::from(cur.read_u32()?),
        })
    }

    /// Decode the old message (0x000E): the UTC time as the 14 ASCII digits
    /// `YYYYMMDDhhmmss`, then 2 reserved bytes.
    ///
    /// # Errors
    /// `Truncated`; `Corrupt` for non-digits or an impossible date.
    pub fn decode_old(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let digits = cur.read_bytes(14)?;
        let mut fields = [0u32; 6];
        let widths = [4usize, 2, 2, 2, 2, 2];
        let mut it = digits.iter();
        for (f, w) in fields.iter_mut().zip(widths) {
            for _ in 0..w {
                let d = it.next().copied().unwrap_or(0);
                if !d.is_ascii_digit() {
                    return Err(Error::corrupt(
                        "old modification time is not ASCII digits",
                        at,
                    ));
                }
                *f = *f * 10 + u32::from(d - b'0');
            }
        }
        let [year, month, day, hour, minute, second] = fields;
        if !(1..=12).contains(&month)
            || !(1..=31).contains(&day)
            || hour > 23
            || minute > 59
            || second > 60
        {
            return Err(Error::corrupt("old modification time out of range", at));
        }
        let days = days_from_civil(i64::from(year), month, day);
        let secs =
            days * 86_400 + i64::from(hour) * 3600 + i64::from(minute) * 60 + i64::from(second);
        let seconds = u64::try_from(secs)
            .map_err(|_| Error::corrupt("old modification time before 1970", at))?;
        Ok(ModificationTime { seconds })
    }
}

/// Shared message table message (0x000F, in the superblock extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SohmTableMessage {
    /// Address of the master table (SMTB).
    pub table: Addr,
    /// Number of indexes.
    pub num_indexes: u8,
}

impl SohmTableMessage {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("shared message table message version {version}"),
                at,
            ));
        }
        let table = cur.read_addr(ctx.sizes)?;
        let num_indexes = cur.read_u8()?;
        Ok(SohmTableMessage { table, num_indexes })
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let m = i64::from(m);
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// B-tree 'K' values message (0x0013, in the superblock extension).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BTreeK {
    /// Indexed storage (chunk B-tree) internal node K.
    pub indexed_storage_internal_k: u16,
    /// Group internal node K.
    pub group_internal_k: u16,
    /// Group leaf node K.
    pub group_leaf_k: u16,
}

impl BTreeK {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("B-tree K message version {version}"),
                at,
            ));
        }
        Ok(BTreeK {
            indexed_storage_internal_k: cur.read_u16()?,
            group_internal_k: cur.read_u16()?,
            group_leaf_k: cur.read_u16()?,
        })
    }
}

/// Object reference count message (0x0016, v2 object headers).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RefCount {
    /// The reference count.
    pub count: u32,
}

impl RefCount {
    /// Decode.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 0 {
            return Err(Error::corrupt(
                alloc::format!("reference count message version {version}"),
                at,
            ));
        }
        Ok(RefCount {
            count: cur.read_u32()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times() {
        let ctx = Ctx::default();
        let t = ModificationTime::decode(&mut Cursor::new(&[1, 0, 0, 0, 0x10, 0x27, 0, 0], 0), ctx)
            .unwrap();
        assert_eq!(t.seconds, 10_000);
        assert!(
            ModificationTime::decode(&mut Cursor::new(&[2, 0, 0, 0, 0, 0, 0, 0], 0), ctx).is_err()
        );
        // 2001-09-09 01:46:40 UTC = 1_000_000_000
        let t =
            ModificationTime::decode_old(&mut Cursor::new(b"20010909014640\0\0", 0), ctx).unwrap();
        assert_eq!(t.seconds, 1_000_000_000);
        let t =
            ModificationTime::decode_old(&mut Cursor::new(b"19700101000000\0\0", 0), ctx).unwrap();
        assert_eq!(t.seconds, 0);
        assert!(
            ModificationTime::decode_old(&mut Cursor::new(b"2001090901464x\0\0", 0), ctx).is_err()
        );
        assert!(ModificationTime::decode_old(&mut Cursor::new(b"20011309014640", 0), ctx).is_err());
    }

    #[test]
    fn others() {
        let ctx = Ctx::default();
        assert_eq!(
            Comment::decode(&mut Cursor::new(b"hi\0\0", 0), ctx)
                .unwrap()
                .text,
            "hi"
        );
        let mut b = alloc::vec![0u8];
        b.extend_from_slice(&0x77u64.to_le_bytes());
        b.push(3);
        assert_eq!(
            SohmTableMessage::decode(&mut Cursor::new(&b, 0), ctx).unwrap(),
            SohmTableMessage {
                table: Addr(0x77),
                num_indexes: 3
            }
        );
        let k = BTreeK::decode(&mut Cursor::new(&[0, 32, 0, 16, 0, 4, 0], 0), ctx).unwrap();
        assert_eq!(
            (
                k.indexed_storage_internal_k,
                k.group_internal_k,
                k.group_leaf_k
            ),
            (32, 16, 4)
        );
        assert_eq!(
            RefCount::decode(&mut Cursor::new(&[0, 2, 0, 0, 0], 0), ctx)
                .unwrap()
                .count,
            2
        );
        assert!(RefCount::decode(&mut Cursor::new(&[1, 2, 0, 0, 0], 0), ctx).is_err());
    }
}
