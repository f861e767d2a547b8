//! Dimension scales, write side: the attribute values libhdf5's H5DS writes
//! (shared by [`FileWriter`] and the editor) and the [`FileWriter`]
//! operations. See [`crate::read::dimscale`] for the attributes.
//!
//! The types are H5DS's: `CLASS` and `NAME` are scalar NUL-terminated ASCII
//! strings of their length + 1 (`H5LTset_attribute_string`),
//! `DIMENSION_LIST` a 1-D vlen of `H5T_STD_REF_OBJ` (one element per
//! dimension), `REFERENCE_LIST` a 1-D compound of 16 bytes {`dataset`:
//! `H5T_STD_REF_OBJ` at 0, `dimension`: `H5T_STD_U32LE` at 8},
//! `DIMENSION_LABELS` a 1-D vlen ASCII string (null for a dimension without
//! a label).
//!
//! Operations follow `H5DSattach_scale` / `H5DSdetach_scale`: a scale is
//! listed once per dimension (attaching it again leaves `DIMENSION_LIST`
//! as it is, but H5DS still appends a `REFERENCE_LIST` record, and so does
//! this); detaching removes one entry from each side by moving the last
//! entry into its place; an empty `DIMENSION_LIST` or `REFERENCE_LIST` is
//! deleted.

use super::value::{AttrValue, ElementData};
use super::{FileWriter, NodeKind, ObjectId};
use crate::error::{Error, Result};
use crate::format::datatype::{CharSet, CompoundMember, Datatype, RefKind, StringPad};
use crate::format::message::attribute::MaybeShared;
use crate::read::dimscale::{
    DIMENSION_LABELS, DIMENSION_LIST, DIMENSION_SCALE_CLASS, REFERENCE_LIST,
};
use crate::Addr;
use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};
use alloc::vec::Vec;

/// A scalar NUL-terminated ASCII string of `s.len() + 1` bytes, as
/// `H5LTset_attribute_string` writes it.
pub(crate) fn lt_string(s: &str) -> AttrValue {
    let mut bytes = s.as_bytes().to_vec();
    bytes.push(0);
    AttrValue::raw(
        Datatype::String {
            size: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            pad: StringPad::NullTerm,
            cset: CharSet::Ascii,
        },
        None,
        bytes,
    )
}

/// `H5T_STD_REF_OBJ` in a file whose addresses are `offsets` bytes.
fn ref_obj(offsets: u8) -> Datatype {
    Datatype::Reference {
        size: u32::from(offsets),
        kind: RefKind::Object1,
    }
}

/// The bytes of an old-style object reference: the header address.
fn ref_bytes(a: Addr, offsets: u8, out: &mut Vec<u8>) {
    let b = a.get().to_le_bytes();
    out.extend_from_slice(b.get(..usize::from(offsets)).unwrap_or(&b));
}

/// `DIMENSION_LIST` holding `lists` (the scale header addresses per dimension).
pub(crate) fn dimension_list_value(lists: &[Vec<Addr>], offsets: u8) -> AttrValue {
    AttrValue {
        dtype: Datatype::VarLenSequence {
            size: 4 + u32::from(offsets) + 4,
            base: alloc::boxed::Box::new(ref_obj(offsets)),
        },
        shape: Some(alloc::vec![lists.len() as u64]),
        data: ElementData::VarLen(
            lists
                .iter()
                .map(|l| {
                    let mut b = Vec::with_capacity(l.len() * usize::from(offsets));
                    for a in l {
                        ref_bytes(*a, offsets, &mut b);
                    }
                    b
                })
                .collect(),
        ),
    }
}

/// `REFERENCE_LIST` holding `records` (dataset header address, dimension).
pub(crate) fn reference_list_value(records: &[(Addr, u32)], offsets: u8) -> AttrValue {
    let size = (u32::from(offsets) + 4).div_ceil(8) * 8;
    let dtype = Datatype::Compound {
        size,
        members: alloc::vec![
            CompoundMember {
                name: "dataset".into(),
                offset: 0,
                dtype: ref_obj(offsets),
            },
            CompoundMember {
                name: "dimension".into(),
                offset: u32::from(offsets),
                dtype: Datatype::int_le(4, false),
            },
        ],
    };
    let rec = usize::try_from(size).unwrap_or(16);
    let mut bytes = Vec::with_capacity(records.len() * rec);
    for (a, dim) in records {
        let start = bytes.len();
        ref_bytes(*a, offsets, &mut bytes);
        bytes.extend_from_slice(&dim.to_le_bytes());
        bytes.resize(start + rec, 0);
    }
    AttrValue::raw(dtype, Some(alloc::vec![records.len() as u64]), bytes)
}

/// `DIMENSION_LABELS` holding `labels` (`""` is written as a null string).
pub(crate) fn labels_value(labels: &[String]) -> AttrValue {
    AttrValue {
        dtype: Datatype::VarLenString {
            size: 16,
            pad: StringPad::NullTerm,
            cset: CharSet::Ascii,
        },
        shape: Some(alloc::vec![labels.len() as u64]),
        data: ElementData::VarLen(labels.iter().map(|s| s.as_bytes().to_vec()).collect()),
    }
}

/// Whether H5DS refuses to attach scales to a dataset whose `CLASS`
/// attribute has datatype `dtype` and element bytes `data` (libhdf5's
/// `H5DS_is_reserved`): a `CLASS` that is not a string, or a fixed-length
/// string not NUL-terminated, fails the attach; a NUL-terminated one marks
/// an image, a palette or a table when its text (up to the first NUL)
/// agrees with `IMAGE`, `PALETTE` or `TABLE` over the shorter of the two —
/// so an empty `CLASS` or `"TAB"` is reserved too. A variable-length
/// string is not reserved: libhdf5 compares the bytes of its in-memory
/// pointer, not its text, which in practice matches nothing.
pub(crate) fn h5ds_refuses(dtype: &Datatype, data: &[u8]) -> bool {
    match dtype {
        Datatype::String { pad, .. } => {
            if *pad != StringPad::NullTerm {
                return true;
            }
            let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
            let text = &data[..end];
            [&b"IMAGE"[..], b"PALETTE", b"TABLE"].iter().any(|c| {
                let n = c.len().min(text.len());
                text[..n] == c[..n]
            })
        }
        Datatype::VarLenString { .. } => false,
        _ => true,
    }
}

/// The scale lists of `lists` after attaching `scale` to `dim` (H5DS: a
/// scale already listed for that dimension is not listed again).
pub(crate) fn attach_to<T: PartialEq + Copy>(lists: &mut [Vec<T>], dim: usize, scale: T) {
    if let Some(l) = lists.get_mut(dim) {
        if !l.contains(&scale) {
            l.push(scale);
        }
    }
}

/// Remove the first `x` of `v` by moving the last element into its place
/// (H5DS's order); whether one was found.
pub(crate) fn swap_remove_first<T: PartialEq>(v: &mut Vec<T>, x: &T) -> bool {
    match v.iter().position(|e| e == x) {
        Some(i) => {
            v.swap_remove(i);
            true
        }
        None => false,
    }
}

/// Dimension-scale attributes kept by a [`FileWriter`] until close, so that
/// the variable-length ones are placed in the global heap once.
#[derive(Debug, Default)]
pub(crate) struct DimScales {
    /// Per dataset: the scales of each dimension.
    lists: BTreeMap<ObjectId, Vec<Vec<ObjectId>>>,
    /// Per dataset: the label of each dimension.
    labels: BTreeMap<ObjectId, Vec<String>>,
    /// Per scale: its (dataset, dimension) records.
    refs: BTreeMap<ObjectId, Vec<(ObjectId, u32)>>,
}

impl FileWriter {
    /// The rank H5DS counts for dataset `id` (1 for a scalar), or `Usage`.
    fn h5ds_rank(&self, id: ObjectId) -> Result<usize> {
        match self.nodes.get(id.0).map(|n| &n.kind) {
            Some(NodeKind::Dataset(d)) => Ok(d.space.dims.len().max(1)),
            _ => Err(Error::usage("not a dataset of this file")),
        }
    }

    /// Whether `id` has a `CLASS` for which H5DS refuses scales ([`h5ds_refuses`]).
    fn reserved(&self, id: ObjectId) -> bool {
        self.nodes.get(id.0).is_some_and(|n| {
            n.attrs.iter().any(|a| {
                a.name == "CLASS"
                    && match &a.dtype {
                        MaybeShared::Inline(t) => h5ds_refuses(t, &a.data),
                        MaybeShared::Shared(_) => true,
                    }
            })
        })
    }

    fn scales_marked(&self, id: ObjectId) -> bool {
        self.nodes.get(id.0).is_some_and(|n| {
            n.attrs.iter().any(|a| {
                a.name == "CLASS"
                    && a.data.get(..DIMENSION_SCALE_CLASS.len())
                        == Some(DIMENSION_SCALE_CLASS.as_bytes())
            })
        })
    }

    /// Make dataset `id` a dimension scale (`H5DSset_scale`): attribute
    /// `CLASS` = `"DIMENSION_SCALE"`, and `NAME` = `name` when given.
    ///
    /// # Errors
    /// `Usage` when `id` is not a dataset or already has scales attached
    /// (a scale cannot have scales); as [`FileWriter::set_attr`].
    pub fn set_dimension_scale(&mut self, id: ObjectId, name: Option<&str>) -> Result<()> {
        self.h5ds_rank(id)?;
        if self.dims.lists.contains_key(&id) {
            return Err(Error::usage(
                "a dataset with scales attached cannot be a scale",
            ));
        }
        self.set_attr(id, "CLASS", lt_string(DIMENSION_SCALE_CLASS))?;
        if let Some(n) = name {
            self.set_attr(id, "NAME", lt_string(n))?;
        }
        Ok(())
    }

    /// Attach scale `scale` to dimension `dim` of dataset `dataset`
    /// (`H5DSattach_scale`): `DIMENSION_LIST` of the dataset lists the
    /// scale (once), `REFERENCE_LIST` of the scale gets a record, and a
    /// scale that is not one yet gets `CLASS` = `"DIMENSION_SCALE"`.
    ///
    /// # Errors
    /// `Usage` when either is not a dataset, they are the same, `dataset`
    /// is a scale or a (fixed-string `CLASS`) image, palette or table, `scale` has scales attached, or `dim` is out of range.
    pub fn attach_dimension_scale(
        &mut self,
        dataset: ObjectId,
        scale: ObjectId,
        dim: u32,
    ) -> Result<()> {
        let rank = self.h5ds_rank(dataset)?;
        self.h5ds_rank(scale)?;
        let d = usize::try_from(dim).unwrap_or(usize::MAX);
        if dataset == scale {
            return Err(Error::usage("a dataset cannot be its own scale"));
        }
        if self.scales_marked(dataset) {
            return Err(Error::usage("a dimension scale cannot have scales"));
        }
        if self.reserved(dataset) {
            return Err(Error::usage(
                "an image, palette or table cannot have scales",
            ));
        }
        if self.dims.lists.contains_key(&scale) {
            return Err(Error::usage(
                "a dataset with scales attached cannot be a scale",
            ));
        }
        if d >= rank {
            return Err(Error::usage(alloc::format!(
                "dimension {dim} out of range (rank {rank})"
            )));
        }
        // Fix both header addresses now: the references need them.
        self.object_addr(dataset)?;
        self.object_addr(scale)?;
        if !self.scales_marked(scale) {
            self.set_attr(scale, "CLASS", lt_string(DIMENSION_SCALE_CLASS))?;
        }
        let lists = self
            .dims
            .lists
            .entry(dataset)
            .or_insert_with(|| (0..rank).map(|_| Vec::new()).collect());
        attach_to(lists, d, scale);
        self.dims
            .refs
            .entry(scale)
            .or_default()
            .push((dataset, dim));
        Ok(())
    }

    /// Detach scale `scale` from dimension `dim` of dataset `dataset`
    /// (`H5DSdetach_scale`): one entry goes from each side; a
    /// `DIMENSION_LIST` without scales and an empty `REFERENCE_LIST` are
    /// not written.
    ///
    /// # Errors
    /// `Usage` when the scale is not attached to that dimension.
    pub fn detach_dimension_scale(
        &mut self,
        dataset: ObjectId,
        scale: ObjectId,
        dim: u32,
    ) -> Result<()> {
        let d = usize::try_from(dim).unwrap_or(usize::MAX);
        let attached = self
            .dims
            .lists
            .get(&dataset)
            .and_then(|l| l.get(d))
            .is_some_and(|l| l.contains(&scale))
            && self
                .dims
                .refs
                .get(&scale)
                .is_some_and(|r| r.contains(&(dataset, dim)));
        if !attached {
            return Err(Error::usage("the scale is not attached to that dimension"));
        }
        if let Some(lists) = self.dims.lists.get_mut(&dataset) {
            if let Some(l) = lists.get_mut(d) {
                swap_remove_first(l, &scale);
            }
            if lists.iter().all(Vec::is_empty) {
                self.dims.lists.remove(&dataset);
            }
        }
        if let Some(r) = self.dims.refs.get_mut(&scale) {
            swap_remove_first(r, &(dataset, dim));
            if r.is_empty() {
                self.dims.refs.remove(&scale);
            }
        }
        Ok(())
    }

    /// Set the label of dimension `dim` of dataset `id` (`H5DSset_label`,
    /// attribute `DIMENSION_LABELS`; `""` removes a label).
    ///
    /// # Errors
    /// `Usage` when `id` is not a dataset or `dim` is out of range.
    pub fn set_dimension_label(&mut self, id: ObjectId, dim: u32, label: &str) -> Result<()> {
        let rank = self.h5ds_rank(id)?;
        let d = usize::try_from(dim).unwrap_or(usize::MAX);
        if d >= rank {
            return Err(Error::usage(alloc::format!(
                "dimension {dim} out of range (rank {rank})"
            )));
        }
        if label.contains('\0') {
            return Err(Error::usage("a label cannot contain NUL"));
        }
        let labels = self
            .dims
            .labels
            .entry(id)
            .or_insert_with(|| (0..rank).map(|_| String::new()).collect());
        if let Some(l) = labels.get_mut(d) {
            *l = label.to_string();
        }
        Ok(())
    }

    /// Write the kept dimension-scale attributes (before the metadata).
    pub(super) fn write_dimension_scales(&mut self) -> Result<()> {
        let dims = core::mem::take(&mut self.dims);
        let offsets = self.ctx.sizes.offsets;
        for (id, lists) in &dims.lists {
            let mut addrs = Vec::with_capacity(lists.len());
            for l in lists {
                let mut a = Vec::with_capacity(l.len());
                for s in l {
                    a.push(self.object_addr(*s)?);
                }
                addrs.push(a);
            }
            self.set_attr(*id, DIMENSION_LIST, dimension_list_value(&addrs, offsets))?;
        }
        for (id, recs) in &dims.refs {
            let mut r = Vec::with_capacity(recs.len());
            for (d, dim) in recs {
                r.push((self.object_addr(*d)?, *dim));
            }
            self.set_attr(*id, REFERENCE_LIST, reference_list_value(&r, offsets))?;
        }
        for (id, labels) in &dims.labels {
            self.set_attr(*id, DIMENSION_LABELS, labels_value(labels))?;
        }
        Ok(())
    }
}
