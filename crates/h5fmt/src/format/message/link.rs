//! Link message (0x0006), IV.A.2.g.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::{Addr, Ctx};
use alloc::string::String;
use alloc::vec::Vec;

/// Link class: hard.
pub const CLASS_HARD: u8 = 0;
/// Link class: soft.
pub const CLASS_SOFT: u8 = 1;
/// Link class: external (the first user-defined class, 64).
pub const CLASS_EXTERNAL: u8 = 64;
/// Smallest class of other user-defined links.
pub const CLASS_USER_MIN: u8 = 65;

/// Where a link points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkTarget {
    /// Hard link to an object header.
    Hard(Addr),
    /// Soft link to a path.
    Soft(String),
    /// External link: file name and object path.
    External {
        /// File name.
        file: String,
        /// Path in that file.
        path: String,
    },
    /// Another user-defined link class (reported, not followed).
    UserDefined {
        /// Link class (≥ 65).
        class: u8,
        /// Raw link data.
        data: Vec<u8>,
    },
}

/// A link message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// Link name.
    pub name: String,
    /// Creation order, when stored.
    pub creation_order: Option<u64>,
    /// Target.
    pub target: LinkTarget,
}

impl Link {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 {
            return Err(Error::corrupt(
                alloc::format!("link message version {version}"),
                at,
            ));
        }
        let flags_at = cur.offset();
        let flags = cur.read_u8()?;
        if flags & !0x1f != 0 {
            return Err(Error::corrupt(
                alloc::format!("link message flags {flags:#x}"),
                flags_at,
            ));
        }
        let class_at = cur.offset();
        let class = if flags & 0x08 != 0 {
            cur.read_u8()?
        } else {
            CLASS_HARD
        };
        let creation_order = if flags & 0x04 != 0 {
            Some(cur.read_u64()?)
        } else {
            None
        };
        let charset = if flags & 0x10 != 0 { cur.read_u8()? } else { 0 };
        if charset > 1 {
            return Err(cur.corrupt(alloc::format!("link name character set {charset}")));
        }
        let len_at = cur.offset();
        let name_len = cur.read_uint(1usize << (flags & 0x03))?;
        if name_len == 0 {
            return Err(Error::corrupt("link name length is zero", len_at));
        }
        let n =
            usize::try_from(name_len).map_err(|_| Error::corrupt("link name length", len_at))?;
        let name = String::from_utf8_lossy(cur.read_bytes(n)?).into_owned();
        let target = match class {
            CLASS_HARD => LinkTarget::Hard(cur.read_addr(ctx.sizes)?),
            CLASS_SOFT => {
                let len = usize::from(cur.read_u16()?);
                let path = cur.read_bytes(len)?;
                LinkTarget::Soft(String::from_utf8_lossy(path).into_owned())
            }
            CLASS_EXTERNAL => {
                let len = usize::from(cur.read_u16()?);
                let data = cur.sub(len)?;
                // Like libhdf5, which only looks inside when traversing, keep a
                // malformed external link as raw user-defined data.
                match parse_external(data.clone()) {
                    Some((file, path)) => LinkTarget::External { file, path },
                    None => LinkTarget::UserDefined {
                        class: CLASS_EXTERNAL,
                        data: data.data().to_vec(),
                    },
                }
            }
            c if c >= CLASS_USER_MIN => {
                let len = usize::from(cur.read_u16()?);
                LinkTarget::UserDefined {
                    class: c,
                    data: cur.read_bytes(len)?.to_vec(),
                }
            }
            c => return Err(Error::corrupt(alloc::format!("link class {c}"), class_at)),
        };
        Ok(Link {
            name,
            creation_order,
            target,
        })
    }
}

/// External link data: a version/flags byte (version 0 in the upper nibble, no
/// flags defined), then the NUL-terminated file name and object path.
fn parse_external(mut data: Cursor<'_>) -> Option<(String, String)> {
    let vf = data.read_u8().ok()?;
    if vf != 0 {
        return None;
    }
    let file = String::from_utf8_lossy(data.read_cstr().ok()?).into_owned();
    let path = String::from_utf8_lossy(data.read_cstr().ok()?).into_owned();
    Some((file, path))
}

impl Link {
    /// Encode the message body (version 1). The name is flagged UTF-8 when
    /// it is not plain ASCII; the link class is stored unless hard.
    ///
    /// # Errors
    /// `Usage` for an empty name or a soft/external target longer than 65535 bytes.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx) -> Result<()> {
        let name = self.name.as_bytes();
        if name.is_empty() {
            return Err(Error::usage("empty link name"));
        }
        let width: u8 = match name.len() {
            0..=0xff => 0,
            0x100..=0xffff => 1,
            _ => 2,
        };
        let class = match &self.target {
            LinkTarget::Hard(_) => CLASS_HARD,
            LinkTarget::Soft(_) => CLASS_SOFT,
            LinkTarget::External { .. } => CLASS_EXTERNAL,
            LinkTarget::UserDefined { class, .. } => *class,
        };
        let utf8 = !self.name.is_ascii();
        let mut flags = width;
        if class != CLASS_HARD {
            flags |= 0x08;
        }
        if self.creation_order.is_some() {
            flags |= 0x04;
        }
        if utf8 {
            flags |= 0x10;
        }
        enc.put_u8(1);
        enc.put_u8(flags);
        if class != CLASS_HARD {
            enc.put_u8(class);
        }
        if let Some(c) = self.creation_order {
            enc.put_u64(c);
        }
        if utf8 {
            enc.put_u8(1);
        }
        enc.put_uint(name.len() as u64, 1usize << width);
        enc.put_bytes(name);
        let put16 = |enc: &mut Encoder, b: &[u8]| -> Result<()> {
            let n = u16::try_from(b.len())
                .map_err(|_| Error::usage("link value longer than 65535 bytes"))?;
            enc.put_u16(n);
            enc.put_bytes(b);
            Ok(())
        };
        match &self.target {
            LinkTarget::Hard(a) => enc.put_addr(*a, ctx.sizes),
            LinkTarget::Soft(p) => put16(enc, p.as_bytes())?,
            LinkTarget::External { file, path } => {
                let mut v = Vec::with_capacity(file.len() + path.len() + 3);
                v.push(0);
                v.extend_from_slice(file.as_bytes());
                v.push(0);
                v.extend_from_slice(path.as_bytes());
                v.push(0);
                put16(enc, &v)?;
            }
            LinkTarget::UserDefined { data, .. } => put16(enc, data)?,
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn dec(b: &[u8]) -> Result<Link> {
        Link::decode(&mut Cursor::new(b, 0), Ctx::default())
    }

    #[test]
    fn hard_with_creation_order() {
        let mut b = alloc::vec![1u8, 0x04 | 0x10];
        b.extend_from_slice(&5u64.to_le_bytes());
        b.push(1); // UTF-8
        b.push(3);
        b.extend_from_slice(b"abc");
        b.extend_from_slice(&0x1234u64.to_le_bytes());
        let l = dec(&b).unwrap();
        assert_eq!(l.name, "abc");
        assert_eq!(l.creation_order, Some(5));
        assert_eq!(l.target, LinkTarget::Hard(Addr(0x1234)));
    }

    #[test]
    fn soft_external_user() {
        let mut b = alloc::vec![1u8, 0x08 | 0x01, CLASS_SOFT, 2, 0, b'x', b'y', 3, 0];
        b.extend_from_slice(b"/ab");
        assert_eq!(dec(&b).unwrap().target, LinkTarget::Soft("/ab".into()));

        let mut b = alloc::vec![1u8, 0x08, CLASS_EXTERNAL, 1, b'e'];
        let data = b"\0f.h5\0/g/d\0";
        b.extend_from_slice(&(data.len() as u16).to_le_bytes());
        b.extend_from_slice(data);
        let l = dec(&b).unwrap();
        assert_eq!(
            l.target,
            LinkTarget::External {
                file: "f.h5".into(),
                path: "/g/d".into()
            }
        );

        let mut b = alloc::vec![1u8, 0x08, 70, 1, b'u', 2, 0, 9, 8];
        assert_eq!(
            dec(&b).unwrap().target,
            LinkTarget::UserDefined {
                class: 70,
                data: alloc::vec![9, 8]
            }
        );
        b[2] = 5;
        assert_eq!(dec(&b).unwrap_err().kind(), ErrorKind::Corrupt);
    }

    #[test]
    fn malformed_external_is_kept_raw() {
        let b = alloc::vec![1u8, 0x08, CLASS_EXTERNAL, 1, b'e', 2, 0, 0x10, b'x'];
        assert_eq!(
            dec(&b).unwrap().target,
            LinkTarget::UserDefined {
                class: CLASS_EXTERNAL,
                data: alloc::vec![0x10, b'x']
            }
        );
    }

    #[test]
    fn bad() {
        assert!(dec(&[2, 0, 1, b'a']).is_err());
        assert!(dec(&[1, 0, 0]).is_err()); // zero-length name
        assert_eq!(
            dec(&[1, 0, 5, b'a']).unwrap_err().kind(),
            ErrorKind::Truncated
        );
        assert!(dec(&[1, 0x20, 1, b'a']).is_err());
    }
}
