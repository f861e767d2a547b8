//! Placeholder; replaced by the real API.

/// An open HDF5 file.
#[derive(Debug)]
pub struct File;
/// A group.
#[derive(Debug)]
pub struct Group;
/// A dataset.
#[derive(Debug)]
pub struct Dataset;
/// An attribute.
#[derive(Debug)]
pub struct Attribute;
/// Any object.
#[derive(Debug)]
pub struct Object;
/// A link.
#[derive(Debug)]
pub struct Link;
