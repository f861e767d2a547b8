//! Attribute message (0x000C), IV.A.2.m: versions 1–3.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::datatype::Datatype;
use crate::format::message::dataspace::Dataspace;
use crate::format::message::shared::SharedMessage;
use crate::Ctx;
use alloc::string::String;
use alloc::vec::Vec;

/// The datatype of an attribute: inline, or shared (a committed datatype or a SOHM entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MaybeShared<T> {
    /// Stored in the message.
    Inline(T),
    /// A reference to a shared message.
    Shared(SharedMessage),
}

/// An attribute message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttributeMessage {
    /// Name.
    pub name: String,
    /// Datatype.
    pub dtype: MaybeShared<Datatype>,
    /// Dataspace.
    pub space: MaybeShared<Dataspace>,
    /// Raw data (number of elements × datatype size).
    pub data: Vec<u8>,
}

impl AttributeMessage {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    ///
    /// The raw data is exactly `elements × datatype size` bytes when the
    /// datatype is inline; when it is shared its size is unknown here, and
    /// `data` holds every remaining byte of the message (for v1 messages this
    /// may include alignment padding): the caller truncates it once it has
    /// resolved the datatype.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let raw = RawAttribute::decode(cur, ctx)?;
        let dtype = match raw.dtype {
            MaybeShared::Shared(s) => MaybeShared::Shared(s),
            MaybeShared::Inline(mut c) => MaybeShared::Inline(Datatype::decode(&mut c, ctx)?),
        };
        let mut data_cur = raw.data;
        let data = match (&dtype, &raw.space) {
            (MaybeShared::Inline(dt), MaybeShared::Inline(space)) => {
                let n = space
                    .num_elements()
                    .and_then(|e| e.checked_mul(dt.size()))
                    .ok_or_else(|| data_cur.corrupt("attribute data size overflows"))?;
                let n = usize::try_from(n).map_err(|_| data_cur.corrupt("attribute data size"))?;
                data_cur.read_bytes(n)?.to_vec()
            }
            _ => data_cur.rest().to_vec(),
        };
        Ok(AttributeMessage {
            name: raw.name,
            dtype,
            space: raw.space,
            data,
        })
    }
}

impl AttributeMessage {
    /// Encode the message body in `version` 1 (earliest format: fields padded
    /// to 8 bytes, datatype message version ≥ 1, dataspace version 1) or 3
    /// (character set of the name stored, no padding, datatype message
    /// version ≥ 3, dataspace version 2). Shared datatypes and dataspaces are
    /// not written.
    ///
    /// # Errors
    /// `Usage` for a shared datatype or dataspace, an empty name, data of
    /// another size than elements × datatype size, or a field above 64 KiB;
    /// errors of the datatype and dataspace encoders.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, version: u8) -> Result<()> {
        let (MaybeShared::Inline(dt), MaybeShared::Inline(space)) = (&self.dtype, &self.space)
        else {
            return Err(Error::usage(
                "writing attributes with shared datatype or dataspace",
            ));
        };
        if self.name.is_empty() || self.name.as_bytes().contains(&0) {
            return Err(Error::usage("attribute name empty or containing NUL"));
        }
        let expect = space.num_elements().and_then(|n| n.checked_mul(dt.size()));
        if expect != Some(self.data.len() as u64) {
            return Err(Error::usage(alloc::format!(
                "attribute {:?}: {} data bytes for {:?} expected",
                self.name,
                self.data.len(),
                expect
            )));
        }
        let (dt_version, mut space_version) = if version == 1 { (1, 1) } else { (3, 2) };
        if space.kind == crate::format::message::SpaceKind::Null {
            // Version 1 dataspaces cannot be null; libhdf5 writes version 2.
            space_version = 2;
        }
        let mut dt_enc = Encoder::new();
        dt.encode(&mut dt_enc, ctx, dt_version)?;
        let mut ds_enc = Encoder::new();
        space.encode(&mut ds_enc, ctx, space_version)?;
        let field =
            |n: usize| u16::try_from(n).map_err(|_| Error::usage("attribute field above 64 KiB"));
        let name_size = field(self.name.len() + 1)?;
        let pad = |enc: &mut Encoder, n: usize| {
            if version == 1 {
                enc.put_zeros(n.div_ceil(8) * 8 - n);
            }
        };
        enc.put_u8(if version == 1 { 1 } else { 3 });
        enc.put_u8(0);
        enc.put_u16(name_size);
        enc.put_u16(field(dt_enc.len())?);
        enc.put_u16(field(ds_enc.len())?);
        if version != 1 {
            enc.put_u8(u8::from(!self.name.is_ascii()));
        }
        enc.put_cstr(&self.name);
        pad(enc, self.name.len() + 1);
        enc.put_bytes(dt_enc.as_bytes());
        pad(enc, dt_enc.len());
        enc.put_bytes(ds_enc.as_bytes());
        pad(enc, ds_enc.len());
        enc.put_bytes(&self.data);
        Ok(())
    }
}

/// Attribute flag (v2/v3): the datatype is shared.
pub const FLAG_DATATYPE_SHARED: u8 = 0x01;
/// Attribute flag (v2/v3): the dataspace is shared.
pub const FLAG_DATASPACE_SHARED: u8 = 0x02;

/// An attribute message with everything but the datatype decoded: the
/// datatype is left as a cursor over exactly its encoded bytes (or a shared
/// reference), the data as a cursor over everything after the dataspace.
#[derive(Debug, Clone)]
pub struct RawAttribute<'a> {
    /// Message version (1–3).
    pub version: u8,
    /// Name (without the NUL).
    pub name: String,
    /// Name character set (v3; 0 ASCII, 1 UTF-8).
    pub charset: u8,
    /// Datatype bytes, or a shared-message reference.
    pub dtype: MaybeShared<Cursor<'a>>,
    /// Dataspace.
    pub space: MaybeShared<Dataspace>,
    /// The bytes following the dataspace (the raw data, possibly with padding).
    pub data: Cursor<'a>,
}

impl<'a> RawAttribute<'a> {
    /// Decode an attribute message body up to (not including) the datatype.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'a>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if !(1..=3).contains(&version) {
            return Err(Error::corrupt(
                alloc::format!("attribute message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        let flags = if version == 1 { 0 } else { flags };
        if flags & !(FLAG_DATATYPE_SHARED | FLAG_DATASPACE_SHARED) != 0 {
            return Err(Error::corrupt(
                alloc::format!("attribute flags {flags:#x}"),
                flags_at,
            ));
        }
        let name_size = usize::from(cur.read_u16()?);
        let dtype_size = usize::from(cur.read_u16()?);
        let space_size = usize::from(cur.read_u16()?);
        let charset = if version >= 3 { cur.read_u8()? } else { 0 };
        let pad = |n: usize| if version == 1 { n.div_ceil(8) * 8 } else { n };

        let name_field = cur.read_bytes(pad(name_size))?;
        let name_bytes = name_field.get(..name_size).unwrap_or(&[]);
        // The stored size counts the terminating NUL; stop at the first NUL.
        let name = name_bytes.split(|&b| b == 0).next().unwrap_or(&[]);
        let name = String::from_utf8_lossy(name).into_owned();

        let mut dt_field = cur.sub(pad(dtype_size))?;
        let dt_cur = dt_field.sub(dtype_size)?;
        let dtype = if flags & FLAG_DATATYPE_SHARED != 0 {
            MaybeShared::Shared(SharedMessage::decode(&mut dt_cur.clone(), ctx)?)
        } else {
            MaybeShared::Inline(dt_cur)
        };

        let mut ds_field = cur.sub(pad(space_size))?;
        let mut ds_cur = ds_field.sub(space_size)?;
        let space = if flags & FLAG_DATASPACE_SHARED != 0 {
            MaybeShared::Shared(SharedMessage::decode(&mut ds_cur, ctx)?)
        } else {
            MaybeShared::Inline(Dataspace::decode(&mut ds_cur, ctx)?)
        };
        let data = cur.sub(cur.remaining())?;
        Ok(RawAttribute {
            version,
            name,
            charset,
            dtype,
            space,
            data,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::message::dataspace::SpaceKind;
    use crate::format::message::shared::SharedTarget;
    use crate::Addr;

    fn space_v1_scalar() -> Vec<u8> {
        alloc::vec![1u8, 0, 0, 0, 0, 0, 0, 0]
    }

    #[test]
    fn v1_padding() {
        let dt = [0x10u8, 0, 0, 0, 4, 0, 0, 0, 0, 0, 32, 0]; // 12 bytes, padded to 16
        let ds = space_v1_scalar();
        let mut b = alloc::vec![1u8, 0];
        b.extend_from_slice(&5u16.to_le_bytes()); // "temp\0"
        b.extend_from_slice(&(dt.len() as u16).to_le_bytes());
        b.extend_from_slice(&(ds.len() as u16).to_le_bytes());
        b.extend_from_slice(b"temp\0\0\0\0");
        b.extend_from_slice(&dt);
        b.extend_from_slice(&[0; 4]);
        b.extend_from_slice(&ds);
        b.extend_from_slice(&[1, 2, 3, 4]);
        let r = RawAttribute::decode(&mut Cursor::new(&b, 0x100), Ctx::default()).unwrap();
        assert_eq!(r.version, 1);
        assert_eq!(r.name, "temp");
        let MaybeShared::Inline(dtc) = &r.dtype else {
            panic!()
        };
        assert_eq!(dtc.data(), dt);
        assert_eq!(dtc.base(), 0x100 + 8 + 8);
        let MaybeShared::Inline(space) = &r.space else {
            panic!()
        };
        assert_eq!(space.kind, SpaceKind::Scalar);
        assert_eq!(r.data.data(), [1, 2, 3, 4]);
    }

    #[test]
    fn v3_shared_datatype_and_charset() {
        let mut shared = alloc::vec![3u8, 2];
        shared.extend_from_slice(&0x4321u64.to_le_bytes());
        let ds = alloc::vec![2u8, 1, 0, 1, 3, 0, 0, 0, 0, 0, 0, 0];
        let mut b = alloc::vec![3u8, FLAG_DATATYPE_SHARED];
        b.extend_from_slice(&3u16.to_le_bytes());
        b.extend_from_slice(&(shared.len() as u16).to_le_bytes());
        b.extend_from_slice(&(ds.len() as u16).to_le_bytes());
        b.push(1);
        b.extend_from_slice(b"\xc3\xa9\0");
        b.extend_from_slice(&shared);
        b.extend_from_slice(&ds);
        b.extend_from_slice(&[9; 6]);
        let r = RawAttribute::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(r.name, "\u{e9}");
        assert_eq!(r.charset, 1);
        let MaybeShared::Shared(s) = r.dtype else {
            panic!()
        };
        assert_eq!(s.target, SharedTarget::ObjectHeader(Addr(0x4321)));
        let MaybeShared::Inline(space) = &r.space else {
            panic!()
        };
        assert_eq!(space.dims, [3]);
        assert_eq!(r.data.data().len(), 6);
        // with a shared datatype the full message decodes without the datatype decoder
        let a = AttributeMessage::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(a.data, [9; 6]);
        assert!(matches!(a.dtype, MaybeShared::Shared(_)));
    }

    #[test]
    fn v2_truncated_and_flags() {
        let mut b = alloc::vec![2u8, 0x04, 2, 0, 0, 0, 0, 0, b'a', 0];
        assert!(RawAttribute::decode(&mut Cursor::new(&b, 0), Ctx::default()).is_err());
        b[1] = 0;
        // zero-sized datatype and dataspace: the dataspace decode fails on no bytes
        assert!(RawAttribute::decode(&mut Cursor::new(&b, 0), Ctx::default()).is_err());
        assert!(RawAttribute::decode(&mut Cursor::new(&[4, 0], 0), Ctx::default()).is_err());
    }
}
