//! Validation of tables against HEP001's MUSTs (§5–§13), as structured findings.

use alloc::string::String;

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Tolerated when reading leniently (e.g. h5col's deprecated `H5T_STD_REF_OBJ`
    /// references, a NULLPAD `CLASS`); an error under `--strict`.
    Warning,
    /// Breaks a MUST: the table is not conformant.
    Error,
}

/// One problem found in a table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// HDF5 path of the offending object (table group, column, attribute owner).
    pub path: String,
    /// The HEP001 section of the rule, e.g. `"§12"`.
    pub section: &'static str,
    /// Warning or error.
    pub severity: Severity,
    /// What is wrong, in one line.
    pub message: String,
}

impl core::fmt::Display for Finding {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        let s = match self.severity {
            Severity::Warning => "warning",
            Severity::Error => "error",
        };
        write!(f, "{s}: {}: {} ({})", self.path, self.message, self.section)
    }
}
