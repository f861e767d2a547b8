//! Dimension scales (the HDF5 Dimension Scales specification, libhdf5's
//! H5DS API), read side: which datasets are scales, which scales are
//! attached to which dimension of a dataset, the dimension labels, and the
//! back references a scale keeps.
//!
//! The attributes, as libhdf5's H5DS writes them (and h5py's `dims` and
//! netCDF-4 through it):
//!
//! - on a scale: `CLASS` = `"DIMENSION_SCALE"` (fixed-length string),
//!   optionally `NAME` (its scale name), and once attached `REFERENCE_LIST`:
//!   a 1-D compound {`dataset`: object reference, `dimension`: integer},
//!   one record per (dataset, dimension) it is attached to;
//! - on a dataset: `DIMENSION_LIST`, a 1-D variable-length sequence of
//!   object references, one element per dimension (one for a scalar), and
//!   `DIMENSION_LABELS`, a 1-D string array, one label per dimension (the
//!   specification's table calls it `DIMENSION_LABELLIST`; libhdf5 writes
//!   and reads `DIMENSION_LABELS`, which is what is read here).
//!
//! A broken attribute (wrong type or shape, a reference to no dataset) is a
//! [`ErrorKind::Corrupt`] error naming the dataset and the attribute.

use super::api::{Attribute, Dataset, File, Object};
use crate::data::{Reference, Value};
use crate::error::{Error, ErrorKind, Result};
use crate::format::datatype::{Datatype, RefKind};
use crate::Addr;
use alloc::format;
use alloc::string::String;
use alloc::vec::Vec;

/// The `CLASS` value of a dimension scale.
pub const DIMENSION_SCALE_CLASS: &str = "DIMENSION_SCALE";
/// The dataset attribute listing the scales of each dimension.
pub const DIMENSION_LIST: &str = "DIMENSION_LIST";
/// The scale attribute listing the (dataset, dimension) pairs it is attached to.
pub const REFERENCE_LIST: &str = "REFERENCE_LIST";
/// The dataset attribute holding one label per dimension.
pub const DIMENSION_LABELS: &str = "DIMENSION_LABELS";

/// A dimension scale attached to a dimension of a dataset: the object
/// header address of the scale dataset (what its object reference holds).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ScaleRef {
    /// Object header address of the scale dataset.
    pub addr: Addr,
}

impl ScaleRef {
    /// The scale dataset, named `path` in errors (a scale's path is not
    /// stored with the reference).
    ///
    /// # Errors
    /// Decode errors of its object header; `Corrupt` when it is not a dataset.
    pub fn open(&self, file: &File, path: &str) -> Result<Dataset> {
        match file.object_at(self.addr, path)? {
            Object::Dataset(d) => Ok(*d),
            _ => Err(
                Error::corrupt("a dimension scale reference names no dataset", self.addr.0)
                    .with_path(path),
            ),
        }
    }
}

/// One record of a scale's `REFERENCE_LIST`: the scale is attached to
/// dimension `dim` of the dataset whose header is at `dataset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct DimensionRef {
    /// Object header address of the dataset.
    pub dataset: Addr,
    /// The dimension index.
    pub dim: u32,
}

/// A `Corrupt` error about attribute `attr` of `ds`.
#[cold]
fn bad(ds: &Dataset, attr: &str, what: impl core::fmt::Display) -> Error {
    Error::new(ErrorKind::Corrupt, format!("attribute {attr:?}: {what}")).with_path(ds.path())
}

/// The attribute `name` of `ds`, `None` when it has none.
fn find(ds: &Dataset, name: &str) -> Result<Option<Attribute>> {
    Ok(ds.attrs()?.into_iter().find(|a| a.name() == name))
}

/// The number of dimensions H5DS counts for `ds`: its rank, 1 for a scalar.
fn h5ds_rank(ds: &Dataset) -> usize {
    ds.shape().len().max(1)
}

/// The values of a 1-D attribute of `n` elements, else a `Corrupt` error.
fn one_d_values(ds: &Dataset, a: &Attribute, n: Option<usize>) -> Result<Vec<Value>> {
    let len = a.shape().first().copied();
    if a.shape().len() != 1 || n.is_some_and(|n| len != Some(n as u64)) {
        return Err(bad(
            ds,
            a.name(),
            format!(
                "shape {:?} where one element per dimension ({}) is expected",
                a.shape(),
                n.unwrap_or(0)
            ),
        ));
    }
    a.read_values()
        .map_err(|e| bad(ds, a.name(), format!("does not decode: {e}")))
}

/// The object a reference value names (a dataset, checked).
fn referenced_dataset(ds: &Dataset, attr: &str, v: &Value, what: &str) -> Result<Addr> {
    let addr = match v {
        Value::Ref(Reference::Object(a)) => *a,
        Value::Ref(Reference::Null) => {
            return Err(bad(ds, attr, format!("{what} is a null reference")))
        }
        other => {
            return Err(bad(
                ds,
                attr,
                format!("{what} is not an object reference: {other:?}"),
            ))
        }
    };
    match ds.file().object_at(addr, "") {
        Ok(Object::Dataset(_)) => Ok(addr),
        Ok(_) => Err(bad(
            ds,
            attr,
            format!("{what} refers to {addr}, which is not a dataset"),
        )),
        Err(e) => Err(bad(
            ds,
            attr,
            format!("{what} refers to {addr}, which does not open: {e}"),
        )),
    }
}

fn is_object_ref(t: &Datatype) -> bool {
    matches!(
        t,
        Datatype::Reference {
            kind: RefKind::Object1 | RefKind::Std,
            ..
        }
    )
}

fn is_string(t: &Datatype) -> bool {
    matches!(t, Datatype::String { .. } | Datatype::VarLenString { .. })
}

fn string_of(v: Value) -> Option<String> {
    match v {
        Value::Str(s) => Some(s),
        Value::RawStr(b) => Some(String::from_utf8_lossy(&b).into_owned()),
        _ => None,
    }
}

/// The string value of attribute `name` of `ds` (its first element),
/// `None` when there is no such attribute.
fn scalar_string(ds: &Dataset, name: &str) -> Result<Option<String>> {
    let Some(a) = find(ds, name)? else {
        return Ok(None);
    };
    if !is_string(a.dtype()) {
        return Err(bad(ds, name, "not a string"));
    }
    let v = a
        .read_values()
        .map_err(|e| bad(ds, name, format!("does not decode: {e}")))?;
    Ok(v.into_iter().next().and_then(string_of))
}

impl Dataset {
    /// Whether this dataset is a dimension scale: it has a string `CLASS`
    /// attribute `"DIMENSION_SCALE"` (as libhdf5's `H5DSis_scale`; a `CLASS`
    /// of another type, which other conventions may use, is no scale, as
    /// there).
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// let x = w.root().create_dataset("x").write(&[0.0f64, 0.5, 1.0])?;
    /// w.set_dimension_scale(x, Some("distance"))?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// let x = file.dataset("/x")?;
    /// assert!(x.is_dimension_scale()?);
    /// assert_eq!(x.scale_name()?.as_deref(), Some("distance"));
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// Attribute decode errors.
    pub fn is_dimension_scale(&self) -> Result<bool> {
        if find(self, "CLASS")?.is_some_and(|a| !is_string(a.dtype())) {
            return Ok(false);
        }
        let class = scalar_string(self, "CLASS")?;
        Ok(class.as_deref() == Some(DIMENSION_SCALE_CLASS))
    }

    /// The scale name (its `NAME` attribute), `None` when it has none.
    /// Any dataset may have a `NAME`; this reads it whether or not the
    /// dataset is a scale.
    ///
    /// # Errors
    /// `Corrupt` when `NAME` is not a string; attribute decode errors.
    pub fn scale_name(&self) -> Result<Option<String>> {
        scalar_string(self, "NAME")
    }

    /// The scales attached to each dimension (`DIMENSION_LIST`), in stored
    /// order: one list per dimension (one for a scalar dataset), all empty
    /// when the dataset has no `DIMENSION_LIST`. Each reference is checked to
    /// name a dataset.
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// let mut w = h5fmt::FileWriter::in_memory();
    /// let mut root = w.root();
    /// let t = root.create_dataset("t").write(&[0.0f64, 1.0])?;
    /// let d = root.create_dataset("d").shape(&[2, 3]).write(&[0i32; 6])?;
    /// w.set_dimension_scale(t, Some("time"))?;
    /// w.attach_dimension_scale(d, t, 0)?;
    /// w.set_dimension_label(d, 1, "channel")?;
    /// let file = h5fmt::File::from_bytes(w.finish()?)?;
    /// let d = file.dataset("/d")?;
    /// let scales = d.dimension_scales()?;
    /// assert_eq!(scales.len(), 2);
    /// assert_eq!(scales[0][0].addr, file.dataset("/t")?.addr());
    /// assert!(scales[1].is_empty());
    /// assert_eq!(d.dimension_labels()?, ["", "channel"]);
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `Corrupt` when `DIMENSION_LIST` is not a 1-D variable-length sequence
    /// of object references with one element per dimension, or a reference
    /// is null or names no dataset; attribute decode errors.
    pub fn dimension_scales(&self) -> Result<Vec<Vec<ScaleRef>>> {
        let rank = h5ds_rank(self);
        let Some(a) = find(self, DIMENSION_LIST)? else {
            return Ok((0..rank).map(|_| Vec::new()).collect());
        };
        match a.dtype() {
            Datatype::VarLenSequence { base, .. } if is_object_ref(base) => {}
            t => {
                return Err(bad(
                    self,
                    DIMENSION_LIST,
                    format!("type {t} is not a variable-length sequence of object references"),
                ))
            }
        }
        let values = one_d_values(self, &a, Some(rank))?;
        let mut out = Vec::with_capacity(rank);
        for (i, v) in values.into_iter().enumerate() {
            let Value::Vlen(refs) = v else {
                return Err(bad(
                    self,
                    DIMENSION_LIST,
                    format!("dimension {i}: not a sequence"),
                ));
            };
            let mut scales = Vec::with_capacity(refs.len().min(1024));
            for r in &refs {
                let addr = referenced_dataset(self, DIMENSION_LIST, r, &format!("dimension {i}"))?;
                scales.push(ScaleRef { addr });
            }
            out.push(scales);
        }
        Ok(out)
    }

    /// The dimension labels (`DIMENSION_LABELS`): one per dimension (one
    /// for a scalar dataset), `""` for a dimension without one (also a
    /// null string), all `""` when the dataset has no labels — what h5py's
    /// `dims[i].label` returns.
    ///
    /// # Errors
    /// `Corrupt` when `DIMENSION_LABELS` is not a 1-D string array with one
    /// element per dimension; attribute decode errors.
    pub fn dimension_labels(&self) -> Result<Vec<String>> {
        let rank = h5ds_rank(self);
        let Some(a) = find(self, DIMENSION_LABELS)? else {
            return Ok((0..rank).map(|_| String::new()).collect());
        };
        if !is_string(a.dtype()) {
            return Err(bad(
                self,
                DIMENSION_LABELS,
                format!("type {} is not a string", a.dtype()),
            ));
        }
        one_d_values(self, &a, Some(rank))?
            .into_iter()
            .enumerate()
            .map(|(i, v)| {
                string_of(v).ok_or_else(|| {
                    bad(self, DIMENSION_LABELS, format!("label {i} is not a string"))
                })
            })
            .collect()
    }

    /// The (dataset, dimension) pairs this scale is attached to
    /// (`REFERENCE_LIST`), in stored order; empty when it has none. Each
    /// dataset reference is checked to name a dataset.
    ///
    /// # Errors
    /// `Corrupt` when `REFERENCE_LIST` is not a 1-D compound with an
    /// object-reference member `dataset` and an integer member `dimension`,
    /// or a record is null, negative or names no dataset; attribute decode
    /// errors.
    pub fn scale_references(&self) -> Result<Vec<DimensionRef>> {
        let Some(a) = find(self, REFERENCE_LIST)? else {
            return Ok(Vec::new());
        };
        let ok = match a.dtype() {
            Datatype::Compound { members, .. } => {
                let member = |n: &str| members.iter().find(|m| m.name == n).map(|m| &m.dtype);
                member("dataset").is_some_and(is_object_ref)
                    && matches!(member("dimension"), Some(Datatype::Integer { .. }))
            }
            _ => false,
        };
        if !ok {
            return Err(bad(
                self,
                REFERENCE_LIST,
                format!(
                    "type {} is not a compound of an object reference \"dataset\" and an integer \"dimension\"",
                    a.dtype()
                ),
            ));
        }
        let values = one_d_values(self, &a, None)?;
        let mut out = Vec::with_capacity(values.len());
        for (k, v) in values.into_iter().enumerate() {
            let Value::Compound(fields) = v else {
                return Err(bad(
                    self,
                    REFERENCE_LIST,
                    format!("record {k} is not a compound"),
                ));
            };
            let field = |n: &str| fields.iter().find(|(name, _)| name == n).map(|(_, v)| v);
            let what = format!("record {k}");
            let dataset = match field("dataset") {
                Some(r) => referenced_dataset(self, REFERENCE_LIST, r, &what)?,
                None => return Err(bad(self, REFERENCE_LIST, format!("{what} has no dataset"))),
            };
            let dim = match field("dimension") {
                Some(Value::Int(i)) => u32::try_from(*i).ok(),
                Some(Value::UInt(u)) => u32::try_from(*u).ok(),
                _ => None,
            }
            .ok_or_else(|| bad(self, REFERENCE_LIST, format!("{what}: bad dimension index")))?;
            out.push(DimensionRef { dataset, dim });
        }
        Ok(out)
    }
}
