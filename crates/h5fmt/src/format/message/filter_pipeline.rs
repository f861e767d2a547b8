//! Filter pipeline message (0x000B), IV.A.2.l: versions 1 and 2.

use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::Ctx;
use alloc::string::String;
use alloc::vec::Vec;

/// libhdf5's maximum number of filters in a pipeline (`H5Z_MAX_NFILTERS`).
pub const MAX_FILTERS: usize = 32;

/// One filter of a pipeline.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    /// Filter id (1 deflate, 2 shuffle, 3 fletcher32, 4 szip, 5 nbit, 6 scaleoffset, ≥ 256 registered).
    pub id: u16,
    /// Optional name.
    pub name: Option<String>,
    /// Flags (bit 0: optional).
    pub flags: u16,
    /// Client data values.
    pub client_data: Vec<u32>,
}

impl Filter {
    /// Whether the filter is optional (may be skipped per chunk via the filter mask).
    pub fn is_optional(&self) -> bool {
        self.flags & 1 != 0
    }
}

/// A dataset's filter pipeline, in the order filters are applied on write.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FilterPipeline {
    /// Filters.
    pub filters: Vec<Filter>,
}

impl FilterPipeline {
    /// Decode the message body.
    ///
    /// # Errors
    /// `Truncated`, `Corrupt`.
    pub fn decode(cur: &mut Cursor<'_>, ctx: Ctx) -> Result<Self> {
        let _ = ctx;
        let at = cur.offset();
        let version = cur.read_u8()?;
        if version != 1 && version != 2 {
            return Err(Error::corrupt(
                alloc::format!("filter pipeline version {version}"),
                at,
            ));
        }
        let n_at = cur.offset();
        let n = cur.read_u8()?;
        if usize::from(n) > MAX_FILTERS {
            return Err(Error::corrupt(
                alloc::format!("{n} filters in a pipeline (at most {MAX_FILTERS})"),
                n_at,
            ));
        }
        if version == 1 {
            cur.skip(6)?;
        }
        // Each filter description is at least 6 bytes.
        let n = cur.ensure_count(u64::from(n), 6)?;
        let mut filters = Vec::with_capacity(n);
        for _ in 0..n {
            let id = cur.read_u16()?;
            let name_len = if version == 1 || id >= 256 {
                usize::from(cur.read_u16()?)
            } else {
                0
            };
            let flags = cur.read_u16()?;
            let nvalues = cur.read_u16()?;
            let name = if name_len > 0 {
                let name_at = cur.offset();
                let raw = cur.read_bytes(name_len)?;
                if version == 1 && name_len % 8 != 0 {
                    return Err(Error::corrupt(
                        "filter name not padded to a multiple of 8",
                        name_at,
                    ));
                }
                let text = raw.split(|&b| b == 0).next().unwrap_or(&[]);
                // A name field of NULs is no name.
                (!text.is_empty()).then(|| String::from_utf8_lossy(text).into_owned())
            } else {
                None
            };
            let count = cur.ensure_count(u64::from(nvalues), 4)?;
            let mut client_data = Vec::with_capacity(count);
            for _ in 0..count {
                client_data.push(cur.read_u32()?);
            }
            if version == 1 && nvalues % 2 == 1 {
                cur.skip(4)?;
            }
            filters.push(Filter {
                id,
                name,
                flags,
                client_data,
            });
        }
        Ok(FilterPipeline { filters })
    }
}

impl FilterPipeline {
    /// Encode the message body in `version` 1 (names padded to 8 bytes,
    /// client data padded to an even count) or 2 (names only for filter
    /// ids ≥ 256, no padding).
    ///
    /// # Errors
    /// `Usage` for more than 32 filters or more than 65535 client values.
    pub fn encode(&self, enc: &mut Encoder, ctx: Ctx, version: u8) -> Result<()> {
        let _ = ctx;
        if self.filters.len() > MAX_FILTERS {
            return Err(Error::usage("more than 32 filters"));
        }
        enc.put_u8(version);
        #[allow(clippy::cast_possible_truncation)] // ≤ 32
        enc.put_u8(self.filters.len() as u8);
        if version == 1 {
            enc.put_zeros(6);
        }
        for f in &self.filters {
            enc.put_u16(f.id);
            let name = f.name.as_deref().unwrap_or("");
            let with_name = version == 1 || f.id >= 256;
            let name_field = if !with_name || name.is_empty() {
                0
            } else if version == 1 {
                (name.len() + 1).div_ceil(8) * 8
            } else {
                name.len() + 1
            };
            if with_name {
                let n =
                    u16::try_from(name_field).map_err(|_| Error::usage("filter name too long"))?;
                enc.put_u16(n);
            }
            enc.put_u16(f.flags);
            let nvalues = u16::try_from(f.client_data.len())
                .map_err(|_| Error::usage("more than 65535 filter client values"))?;
            enc.put_u16(nvalues);
            if name_field > 0 {
                enc.put_bytes(name.as_bytes());
                enc.put_zeros(name_field - name.len());
            }
            for &c in &f.client_data {
                enc.put_u32(c);
            }
            if version == 1 && nvalues % 2 == 1 {
                enc.put_zeros(4);
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v1_padded() {
        let mut b = alloc::vec![1u8, 2, 0, 0, 0, 0, 0, 0];
        // deflate, name "deflate\0" (8), 1 client value + padding
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&8u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(b"deflate\0");
        b.extend_from_slice(&6u32.to_le_bytes());
        b.extend_from_slice(&0u32.to_le_bytes());
        // shuffle without name, 2 values
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&2u16.to_le_bytes());
        b.extend_from_slice(&4u32.to_le_bytes());
        b.extend_from_slice(&5u32.to_le_bytes());
        let mut c = Cursor::new(&b, 0);
        let p = FilterPipeline::decode(&mut c, Ctx::default()).unwrap();
        assert!(c.is_empty());
        assert_eq!(p.filters.len(), 2);
        assert_eq!(p.filters[0].name.as_deref(), Some("deflate"));
        assert!(p.filters[0].is_optional());
        assert_eq!(p.filters[0].client_data, [6]);
        assert_eq!(p.filters[1].client_data, [4, 5]);
        assert_eq!(p.filters[1].name, None);
    }

    #[test]
    fn v2_names_only_for_registered() {
        let mut b = alloc::vec![2u8, 2];
        b.extend_from_slice(&1u16.to_le_bytes()); // id < 256: no name length
        b.extend_from_slice(&0u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&9u32.to_le_bytes());
        b.extend_from_slice(&32015u16.to_le_bytes()); // zstd
        b.extend_from_slice(&5u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(&1u16.to_le_bytes());
        b.extend_from_slice(b"zstd\0");
        b.extend_from_slice(&3u32.to_le_bytes());
        let p = FilterPipeline::decode(&mut Cursor::new(&b, 0), Ctx::default()).unwrap();
        assert_eq!(p.filters[0].id, 1);
        assert_eq!(p.filters[0].client_data, [9]);
        assert_eq!(p.filters[1].id, 32015);
        assert_eq!(p.filters[1].name.as_deref(), Some("zstd"));
        assert_eq!(p.filters[1].client_data, [3]);
        assert!(FilterPipeline::decode(&mut Cursor::new(&[2, 33], 0), Ctx::default()).is_err());
        assert!(
            FilterPipeline::decode(&mut Cursor::new(&[2, 1, 1, 0], 0), Ctx::default()).is_err()
        );
    }
}
