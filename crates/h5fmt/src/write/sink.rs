//! Where written bytes go: a `Vec<u8>` (no_std, WASM) or a file (std).

use crate::error::{Error, Result};
use alloc::boxed::Box;
use alloc::vec::Vec;

/// A random-access byte sink.
pub trait Sink {
    /// Write `data` at absolute `offset`, growing the sink (zero-filled) as needed.
    ///
    /// # Errors
    /// `Io` from the underlying storage.
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()>;
    /// Make everything written so far durable.
    ///
    /// # Errors
    /// `Io`.
    fn flush(&mut self) -> Result<()> {
        Ok(())
    }
    /// The bytes, for in-memory sinks.
    fn into_bytes(self: Box<Self>) -> Option<Vec<u8>> {
        None
    }
}

impl Sink for Vec<u8> {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        let start =
            usize::try_from(offset).map_err(|_| Error::limit("in-memory file above usize"))?;
        let end = start
            .checked_add(data.len())
            .ok_or_else(|| Error::limit("in-memory file above usize"))?;
        if self.len() < end {
            self.resize(end, 0);
        }
        if let Some(dst) = self.get_mut(start..end) {
            dst.copy_from_slice(data);
        }
        Ok(())
    }
    fn into_bytes(self: Box<Self>) -> Option<Vec<u8>> {
        Some(*self)
    }
}

/// A file on disk.
#[cfg(feature = "std")]
#[derive(Debug)]
pub struct FileSink {
    file: std::fs::File,
}

#[cfg(feature = "std")]
impl FileSink {
    /// Wrap an open, writable file.
    pub fn new(file: std::fs::File) -> Self {
        FileSink { file }
    }
}

#[cfg(feature = "std")]
impl Sink for FileSink {
    fn write_at(&mut self, offset: u64, data: &[u8]) -> Result<()> {
        #[cfg(unix)]
        let r = {
            // One positioned write (pwrite), no seek.
            use std::os::unix::fs::FileExt;
            self.file.write_all_at(data, offset)
        };
        #[cfg(not(unix))]
        let r = {
            use std::io::{Seek, SeekFrom, Write};
            self.file
                .seek(SeekFrom::Start(offset))
                .and_then(|_| self.file.write_all(data))
        };
        r.map_err(|e| Error::io(alloc::format!("write at {offset:#x}: {e}")))
    }
    fn flush(&mut self) -> Result<()> {
        self.file
            .sync_all()
            .map_err(|e| Error::io(alloc::format!("sync: {e}")))
    }
}
