//! `h5canon/1`: the canonical JSON dump of a file (see shared/conformance/CANON.md).

use std::path::Path;

/// The canonical dump of the file at `path`, as a JSON value.
///
/// # Errors
/// A one-line message naming the object path and what could not be read.
pub fn dump(path: &Path) -> Result<serde_json::Value, String> {
    Err(format!("{}: canonical dump not implemented yet", path.display()))
}
