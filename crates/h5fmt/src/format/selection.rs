//! Not yet implemented.
