//! File addresses, the sizes context (size of offsets / lengths) and the decode context.

use crate::limits::Limits;
use core::fmt;

/// A file address relative to the superblock's base address. The undefined
/// address (all bits set, in whatever width the file uses) is normalized to
/// [`Addr::UNDEF`].
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Addr(pub u64);

impl Addr {
    /// The undefined address.
    pub const UNDEF: Addr = Addr(u64::MAX);
    /// Whether this is the undefined address.
    pub fn is_undef(self) -> bool {
        self.0 == u64::MAX
    }
    /// `None` for the undefined address.
    pub fn defined(self) -> Option<Addr> {
        if self.is_undef() {
            None
        } else {
            Some(self)
        }
    }
    /// The raw value.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Debug for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_undef() {
            f.write_str("Addr(UNDEF)")
        } else {
            write!(f, "Addr({:#x})", self.0)
        }
    }
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_undef() {
            f.write_str("UNDEF")
        } else {
            write!(f, "{:#x}", self.0)
        }
    }
}

/// The file's "size of offsets" and "size of lengths" (2, 4 or 8 bytes each).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sizes {
    /// Bytes in an address.
    pub offsets: u8,
    /// Bytes in a length.
    pub lengths: u8,
}

impl Default for Sizes {
    fn default() -> Self {
        Sizes {
            offsets: 8,
            lengths: 8,
        }
    }
}

/// The decode context passed by value to every decoder.
#[derive(Debug, Clone, Copy, Default)]
pub struct Ctx {
    /// Sizes of offsets and lengths.
    pub sizes: Sizes,
    /// Resource limits.
    pub limits: Limits,
}
