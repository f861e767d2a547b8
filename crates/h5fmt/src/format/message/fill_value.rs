//! Fill value messages: old (0x0004) and new (0x0005, versions 1–3), IV.A.2.e/f.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::vec::Vec;

/// Allocation time "late" (the old message's implied value).
pub const ALLOC_TIME_LATE: u8 = 2;
/// Fill time "if set" (the old message's implied value).
pub const FILL_TIME_IFSET: u8 = 2;
/// Version 3 flag: the fill value is undefined.
pub const V3_FLAG_UNDEFINED: u8 = 0x10;
/// Version 3 flag: a fill value size and value follow.
pub const V3_FLAG_HAVE_VALUE: u8 = 0x20;
const V3_FLAGS_ALL: u8 = 0x03 | (0x03 << 2) | V3_FLAG_UNDEFINED | V3_FLAG_HAVE_VALUE;

/// What `H5Pfill_value_defined` would report.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FillState {
    /// No fill value defined.
    Undefined,
    /// The library default (all-zero element).
    Default,
    /// A user-defined value.
    User,
}

/// A fill value message, old or new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FillValue {
    /// Message version (0 for the old message).
    pub version: u8,
    /// Space allocation time: 1 early, 2 late, 3 incremental (0 unknown/old).
    pub alloc_time: u8,
    /// Fill write time: 0 on allocation, 1 never, 2 if set.
    pub fill_time: u8,
    /// Defined state.
    pub state: FillState,
    /// The value bytes when `state` is `User`.
    pub value: Option<Vec<u8>>,
}

impl FillValue {
    /// What libhdf5 reports for a dataset with *neither* fill value message:
    /// undefined (`H5D__open_oid` maps the default size 0 to -1 when no new
    /// message exists). Allocation time is left 0: libhdf5 derives it from the
    /// layout (early for compact, late for contiguous, incremental otherwise).
    pub fn absent() -> Self {
        FillValue {
            version: 0,
            alloc_time: 0,
            fill_time: FILL_TIME_IFSET,
            state: FillState::Undefined,
            value: None,
        }
    }

    /// Decode an old fill value message (0x0004). As in libhdf5 (and
    /// `H5D__open_oid`), a size of 0 means "undefined"; a positive size, a
    /// user-defined value. Allocation time is reported as late and fill time as
    /// "if set", the values libhdf5 assumes.
    ///
    /// # Errors
    /// `Truncated`.
    pub fn decode_old(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let size = cur.read_u32()?;
        let value = if size > 0 {
            let n = usize::try_from(size).map_err(|_| cur.corrupt("fill value size"))?;
            Some(cur.read_bytes(n)?.to_vec())
        } else {
            None
        };
        // libhdf5 (H5O__fill_old_decode) maps size 0 to "undefined" (-1).
        let state = if value.is_some() {
            FillState::User
        } else {
            FillState::Undefined
        };
        Ok(FillValue {
            version: 0,
            alloc_time: ALLOC_TIME_LATE,
            fill_time: FILL_TIME_IFSET,
            state,
            value,
        })
    }
    /// Decode a new fill value message (0x0005). `state` is what
    /// `H5Pfill_value_defined` reports for a dataset whose header holds this
    /// message: v1/v2 — "defined" byte 0 → undefined, else size 0 → default,
    /// size > 0 → user (size -1 → undefined); v3 — flag 0x10 → undefined,
    /// flag 0x20 with a non-empty value → user, otherwise default.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`, `Unsupported` version.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        match version {
            1 | 2 => {
                let alloc_time = cur.read_u8()?;
                let fill_time = cur.read_u8()?;
                let defined = cur.read_u8()?;
                if defined == 0 {
                    // No size field: libhdf5 sets size -1, i.e. undefined.
                    return Ok(FillValue {
                        version,
                        alloc_time,
                        fill_time,
                        state: FillState::Undefined,
                        value: None,
                    });
                }
                let size_at = cur.offset();
                // libhdf5 decodes the size as a signed 32-bit value.
                let size = cur.read_u32()? as i32;
                let (state, value) = match size {
                    -1 => (FillState::Undefined, None),
                    0 => (FillState::Default, None),
                    n if n > 0 => {
                        let n = usize::try_from(n)
                            .map_err(|_| Error::corrupt("fill value size", size_at))?;
                        (FillState::User, Some(cur.read_bytes(n)?.to_vec()))
                    }
                    n => {
                        return Err(Error::corrupt(
                            alloc::format!("fill value size {n}"),
                            size_at,
                        ))
                    }
                };
                Ok(FillValue {
                    version,
                    alloc_time,
                    fill_time,
                    state,
                    value,
                })
            }
            3 => {
                let flags_at = cur.offset();
                let flags = cur.read_u8()?;
                if flags & !V3_FLAGS_ALL != 0 {
                    return Err(Error::corrupt(
                        alloc::format!("fill value flags {flags:#x}"),
                        flags_at,
                    ));
                }
                let alloc_time = flags & 0x03;
                let fill_time = (flags >> 2) & 0x03;
                let undefined = flags & V3_FLAG_UNDEFINED != 0;
                let have = flags & V3_FLAG_HAVE_VALUE != 0;
                let (state, value) = if undefined {
                    if have {
                        return Err(Error::corrupt(
                            "fill value both undefined and present",
                            flags_at,
                        ));
                    }
                    (FillState::Undefined, None)
                } else if have {
                    let size = cur.read_u32()?;
                    let n = usize::try_from(size).map_err(|_| cur.corrupt("fill value size"))?;
                    let bytes = cur.read_bytes(n)?;
                    // A zero-sized value leaves no buffer: libhdf5 then reports the default.
                    if n == 0 {
                        (FillState::Default, None)
                    } else {
                        (FillState::User, Some(bytes.to_vec()))
                    }
                } else {
                    (FillState::Default, None)
                };
                Ok(FillValue {
                    version,
                    alloc_time,
                    fill_time,
                    state,
                    value,
                })
            }
            v => Err(Error::corrupt(
                alloc::format!("fill value message version {v}"),
                at,
            )),
        }
    }
}

impl FillValue {
    /// Encode a new fill value message (0x0005) in `self.version` 2 or 3
    /// (version 1 is written as 2).
    ///
    /// # Errors
    /// `Usage` for a user state without a value, or a value of 4 GiB or more.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) -> Result<()> {
        let _ = ctx;
        let value = match self.state {
            FillState::User => Some(
                self.value
                    .as_deref()
                    .ok_or_else(|| Error::usage("user-defined fill value without bytes"))?,
            ),
            _ => None,
        };
        let size = value
            .map(|v| u32::try_from(v.len()).map_err(|_| Error::usage("fill value of 4 GiB")))
            .transpose()?;
        if self.version >= 3 {
            let mut flags = (self.alloc_time & 3) | ((self.fill_time & 3) << 2);
            match self.state {
                FillState::Undefined => flags |= V3_FLAG_UNDEFINED,
                FillState::User => flags |= V3_FLAG_HAVE_VALUE,
                FillState::Default => {}
            }
            enc.put_u8(3);
            enc.put_u8(flags);
            if let (Some(v), Some(n)) = (value, size) {
                enc.put_u32(n);
                enc.put_bytes(v);
            }
        } else {
            enc.put_u8(2);
            enc.put_u8(self.alloc_time);
            enc.put_u8(self.fill_time);
            match self.state {
                FillState::Undefined => enc.put_u8(0),
                FillState::Default => {
                    enc.put_u8(1);
                    enc.put_u32(0);
                }
                FillState::User => {
                    enc.put_u8(1);
                    if let (Some(v), Some(n)) = (value, size) {
                        enc.put_u32(n);
                        enc.put_bytes(v);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn new(b: &[u8]) -> Result<FillValue> {
        FillValue::decode(&mut Cursor::new(b, 0), Ctx::default())
    }

    #[test]
    fn old_message() {
        let f = FillValue::decode_old(
            &mut Cursor::new(&[4, 0, 0, 0, 1, 2, 3, 4], 0),
            Ctx::default(),
        )
        .unwrap();
        assert_eq!(f.state, FillState::User);
        assert_eq!(f.value.as_deref(), Some(&[1u8, 2, 3, 4][..]));
        assert_eq!(f.alloc_time, ALLOC_TIME_LATE);
        let f = FillValue::decode_old(&mut Cursor::new(&[0, 0, 0, 0], 0), Ctx::default()).unwrap();
        assert_eq!(f.state, FillState::Undefined);
        assert!(
            FillValue::decode_old(&mut Cursor::new(&[4, 0, 0, 0, 1], 0), Ctx::default()).is_err()
        );
    }

    #[test]
    fn v1_v2() {
        // not defined: no size field
        let f = new(&[2, 2, 2, 0]).unwrap();
        assert_eq!(f.state, FillState::Undefined);
        // defined, size 0 → default
        let f = new(&[2, 1, 0, 1, 0, 0, 0, 0]).unwrap();
        assert_eq!(
            (f.state, f.alloc_time, f.fill_time),
            (FillState::Default, 1, 0)
        );
        // defined, with a value
        let f = new(&[1, 3, 2, 1, 2, 0, 0, 0, 0xaa, 0xbb]).unwrap();
        assert_eq!(f.state, FillState::User);
        assert_eq!(f.value.as_deref(), Some(&[0xaau8, 0xbb][..]));
        // size -1
        assert_eq!(
            new(&[2, 2, 2, 1, 0xff, 0xff, 0xff, 0xff]).unwrap().state,
            FillState::Undefined
        );
        assert_eq!(
            new(&[2, 2, 2, 1, 0xfe, 0xff, 0xff, 0xff])
                .unwrap_err()
                .kind(),
            ErrorKind::Corrupt
        );
        assert_eq!(
            new(&[2, 2, 2, 1, 9, 0, 0, 0, 1]).unwrap_err().kind(),
            ErrorKind::Truncated
        );
    }

    #[test]
    fn v3() {
        // alloc late (2), fill time ifset (2): 0x02 | 0x08
        let f = new(&[3, 0x0a]).unwrap();
        assert_eq!(
            (f.state, f.alloc_time, f.fill_time),
            (FillState::Default, 2, 2)
        );
        let f = new(&[3, 0x0a | V3_FLAG_UNDEFINED]).unwrap();
        assert_eq!(f.state, FillState::Undefined);
        let f = new(&[3, 0x01 | V3_FLAG_HAVE_VALUE, 1, 0, 0, 0, 7]).unwrap();
        assert_eq!(
            (f.state, f.alloc_time, f.fill_time),
            (FillState::User, 1, 0)
        );
        assert_eq!(f.value.as_deref(), Some(&[7u8][..]));
        assert_eq!(
            new(&[3, V3_FLAG_HAVE_VALUE, 0, 0, 0, 0]).unwrap().state,
            FillState::Default
        );
        assert!(new(&[3, V3_FLAG_HAVE_VALUE | V3_FLAG_UNDEFINED]).is_err());
        assert!(new(&[3, 0x40]).is_err());
        assert!(new(&[4, 0]).is_err());
        assert_eq!(FillValue::absent().state, FillState::Undefined);
    }
}
