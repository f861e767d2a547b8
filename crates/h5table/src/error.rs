//! The error type of table operations.

use alloc::string::String;
use core::fmt;

/// A table operation's failure.
#[derive(Debug, Clone)]
pub enum Error {
    /// The HDF5 layer failed (I/O, corrupt or unsupported structures).
    Hdf5(h5fmt::Error),
    /// The group is not a HEP001 table (§7.1).
    NotATable {
        /// HDF5 path of the group.
        path: String,
    },
    /// The table's VERSION major exceeds the one implemented (§7.2).
    UnsupportedVersion {
        /// HDF5 path of the table group.
        path: String,
        /// The VERSION attribute as found.
        version: String,
    },
    /// The table breaks a rule of the specification so that it cannot be read.
    Invalid {
        /// HDF5 path of the offending object.
        path: String,
        /// Section of HEP001 that the rule is in, e.g. `"§7.3"`.
        section: &'static str,
        /// What is wrong.
        message: String,
    },
    /// A PyTables node whose `CLASS`, `VERSION` or pseudo-atom this crate
    /// does not know (reported, never read by analogy).
    Unrecognized {
        /// HDF5 path of the node.
        path: String,
        /// `CLASS`, when present.
        class: Option<String>,
        /// `VERSION`, when present.
        version: Option<String>,
        /// What is not known.
        why: String,
    },
    /// The caller asked for something impossible (unknown column, bad range…).
    Usage(String),
}

/// Result alias.
pub type Result<T> = core::result::Result<T, Error>;

impl Error {
    pub(crate) fn invalid(path: &str, section: &'static str, message: impl Into<String>) -> Self {
        Error::Invalid {
            path: path.into(),
            section,
            message: message.into(),
        }
    }
    pub(crate) fn usage(message: impl Into<String>) -> Self {
        Error::Usage(message.into())
    }
}

impl From<h5fmt::Error> for Error {
    fn from(e: h5fmt::Error) -> Self {
        Error::Hdf5(e)
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Hdf5(e) => write!(f, "{e}"),
            Error::NotATable { path } => write!(
                f,
                "{path}: not a HEP001 table (no CLASS attribute equal to COLUMN_TABLE, §7.1)"
            ),
            Error::UnsupportedVersion { path, version } => write!(
                f,
                "{path}: table VERSION {version:?} has a major version above 1, which this \
                 implementation does not read (§7.2)"
            ),
            Error::Invalid {
                path,
                section,
                message,
            } => write!(f, "{path}: {message} ({section})"),
            Error::Unrecognized { path, why, .. } => {
                write!(f, "{path}: not a PyTables node this reader knows: {why}")
            }
            Error::Usage(m) => write!(f, "{m}"),
        }
    }
}

#[cfg(feature = "std")]
impl std::error::Error for Error {}
