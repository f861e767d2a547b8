//! Reading a whole object header: prefix, chunks, continuation chain.

use crate::error::{Error, Result};
use crate::format::object_header::ObjectHeader;
use crate::io::Storage;
use crate::{Addr, Ctx};

/// Read the object header at `addr`, following continuation messages (cycles
/// detected), verifying v2 checksums.
///
/// # Errors
/// `Truncated`, `Corrupt`, `Checksum`, `Cycle`, `Limit`.
pub fn read_object_header(st: &Storage, addr: Addr, ctx: Ctx) -> Result<ObjectHeader> {
    let _ = (st, ctx);
    Err(Error::unsupported(alloc::format!(
        "object header at {addr}: not implemented yet"
    )))
}
