//! The one error type of the crate: a kind, a message, an absolute file offset
//! and the object path, where known.

use alloc::string::String;
use core::fmt;

/// What went wrong, kept apart so that a caller can skip an unsupported column
/// but never a corrupt one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The data ended before a structure did.
    Truncated,
    /// A structure violates the format specification.
    Corrupt,
    /// A stored checksum does not match the data.
    Checksum,
    /// Valid HDF5 that this library does not (yet) implement, e.g. a missing filter.
    Unsupported,
    /// A resource limit from [`crate::Limits`] would be exceeded.
    Limit,
    /// A cycle in structures that must not loop (continuation chains, B-tree siblings…).
    Cycle,
    /// The underlying storage failed.
    Io,
    /// The value cannot be represented in the requested type.
    Unrepresentable,
    /// The caller asked for something invalid (wrong path, wrong type, bad argument).
    Usage,
    /// A named object, attribute or link does not exist.
    NotFound,
}

impl ErrorKind {
    /// A short lowercase name of the kind, as printed in messages.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Truncated => "truncated",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::Checksum => "checksum mismatch",
            ErrorKind::Unsupported => "unsupported",
            ErrorKind::Limit => "limit exceeded",
            ErrorKind::Cycle => "cycle",
            ErrorKind::Io => "i/o error",
            ErrorKind::Unrepresentable => "unrepresentable",
            ErrorKind::Usage => "usage",
            ErrorKind::NotFound => "not found",
        }
    }
}

/// An error with its kind, a message, the absolute file offset and the object path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    kind: ErrorKind,
    message: String,
    offset: Option<u64>,
    path: Option<String>,
}

/// Result with [`Error`].
pub type Result<T, E = Error> = core::result::Result<T, E>;

impl Error {
    /// A new error of `kind` with `message` and no offset.
    #[cold]
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            offset: None,
            path: None,
        }
    }
    /// A new error of `kind` at absolute file offset `offset`.
    #[cold]
    pub fn at(kind: ErrorKind, message: impl Into<String>, offset: u64) -> Self {
        Error {
            kind,
            message: message.into(),
            offset: Some(offset),
            path: None,
        }
    }
    /// `Truncated` at `offset`.
    #[cold]
    pub fn truncated(message: impl Into<String>, offset: u64) -> Self {
        Self::at(ErrorKind::Truncated, message, offset)
    }
    /// `Corrupt` at `offset`.
    #[cold]
    pub fn corrupt(message: impl Into<String>, offset: u64) -> Self {
        Self::at(ErrorKind::Corrupt, message, offset)
    }
    /// `Checksum` at `offset`.
    #[cold]
    pub fn checksum(message: impl Into<String>, offset: u64) -> Self {
        Self::at(ErrorKind::Checksum, message, offset)
    }
    /// `Unsupported`, no offset.
    #[cold]
    pub fn unsupported(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unsupported, message)
    }
    /// `Limit`, no offset.
    #[cold]
    pub fn limit(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Limit, message)
    }
    /// `Cycle` at `offset`.
    #[cold]
    pub fn cycle(message: impl Into<String>, offset: u64) -> Self {
        Self::at(ErrorKind::Cycle, message, offset)
    }
    /// `Usage`, no offset.
    #[cold]
    pub fn usage(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Usage, message)
    }
    /// `NotFound`, no offset.
    #[cold]
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, message)
    }
    /// `Io`, no offset.
    #[cold]
    pub fn io(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Io, message)
    }
    /// `Unrepresentable`, no offset.
    #[cold]
    pub fn unrepresentable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unrepresentable, message)
    }

    /// Attach the object path, unless one is already known (the innermost wins).
    #[must_use]
    pub fn with_path(mut self, path: &str) -> Self {
        if self.path.is_none() {
            self.path = Some(String::from(path));
        }
        self
    }
    /// Attach an offset, unless one is already known.
    #[must_use]
    pub fn with_offset(mut self, offset: u64) -> Self {
        if self.offset.is_none() {
            self.offset = Some(offset);
        }
        self
    }
    /// Prefix the message with context, e.g. `"chunk [0, 4]"`.
    #[must_use]
    pub fn context(mut self, what: &str) -> Self {
        let mut m = String::from(what);
        m.push_str(": ");
        m.push_str(&self.message);
        self.message = m;
        self
    }

    /// The kind of error.
    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    /// The message without kind, offset or path.
    pub fn message(&self) -> &str {
        &self.message
    }
    /// The absolute file offset, where known.
    pub fn offset(&self) -> Option<u64> {
        self.offset
    }
    /// The object path, where known.
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(p) = &self.path {
            write!(f, "{p}: ")?;
        }
        write!(f, "{}: {}", self.kind.as_str(), self.message)?;
        if let Some(o) = self.offset {
            write!(f, " (at {o:#x})")?;
        }
        Ok(())
    }
}

impl core::error::Error for Error {}

#[cfg(feature = "std")]
impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        use alloc::string::ToString;
        Error::io(e.to_string())
    }
}
