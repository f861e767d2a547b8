//! Dimension scales in existing files: [`FileEditor`] operations that keep
//! a dataset's `DIMENSION_LIST` and its scales' `REFERENCE_LIST` consistent,
//! as libhdf5's `H5DSattach_scale` / `H5DSdetach_scale` / `H5DSset_label`
//! do (see [`crate::write::dimscale`] for the rules and types).
//!
//! Each operation first commits what is staged ([`FileEditor::flush`]), so
//! that it reads the attributes as they are, then stages its attribute
//! changes like [`FileEditor::set_attr`]; a check that fails leaves both
//! sides as they were.

use super::FileEditor;
use crate::error::{Error, Result};
use crate::read::dimscale::{
    DIMENSION_LABELS, DIMENSION_LIST, DIMENSION_SCALE_CLASS, REFERENCE_LIST,
};
use crate::read::{Dataset, DimensionRef};
use crate::write::dimscale::{
    attach_to, dimension_list_value, h5ds_refuses, labels_value, lt_string, reference_list_value,
    swap_remove_first,
};
use crate::Addr;
use alloc::string::ToString;
use alloc::vec::Vec;

impl FileEditor {
    fn h5ds_dataset(&self, path: &str) -> Result<Dataset> {
        self.reader.dataset(path)
    }

    fn has_attr(d: &Dataset, name: &str) -> Result<bool> {
        Ok(d.attrs()?.iter().any(|a| a.name() == name))
    }

    /// Make the dataset at `path` a dimension scale (`H5DSset_scale`):
    /// `CLASS` = `"DIMENSION_SCALE"`, and `NAME` = `name` when given.
    ///
    /// # Errors
    /// `NotFound`; `Usage` when it is not a dataset or has scales attached;
    /// as [`FileEditor::set_attr`].
    pub fn set_dimension_scale(&mut self, path: &str, name: Option<&str>) -> Result<()> {
        self.flush()?;
        let d = self.h5ds_dataset(path)?;
        if Self::has_attr(&d, DIMENSION_LIST)? {
            return Err(
                Error::usage("a dataset with scales attached cannot be a scale").with_path(path),
            );
        }
        self.set_attr(path, "CLASS", lt_string(DIMENSION_SCALE_CLASS))?;
        if let Some(n) = name {
            self.set_attr(path, "NAME", lt_string(n))?;
        }
        Ok(())
    }

    /// The checks of attach and detach: both datasets, not the same, the
    /// dataset not a scale, `dim` in range. The two datasets and the rank.
    fn h5ds_pair(
        &mut self,
        dataset: &str,
        scale: &str,
        dim: u32,
    ) -> Result<(Dataset, Dataset, usize)> {
        self.flush()?;
        let d = self.h5ds_dataset(dataset)?;
        let s = self.h5ds_dataset(scale)?;
        if d.addr() == s.addr() {
            return Err(Error::usage("a dataset cannot be its own scale").with_path(dataset));
        }
        if d.is_dimension_scale()? {
            return Err(Error::usage("a dimension scale cannot have scales").with_path(dataset));
        }
        let rank = d.shape().len().max(1);
        if usize::try_from(dim).map_or(true, |i| i >= rank) {
            return Err(
                Error::usage(alloc::format!("dimension {dim} out of range (rank {rank})"))
                    .with_path(dataset),
            );
        }
        Ok((d, s, rank))
    }

    fn scale_lists(d: &Dataset) -> Result<Vec<Vec<Addr>>> {
        Ok(d.dimension_scales()?
            .into_iter()
            .map(|l| l.into_iter().map(|s| s.addr).collect())
            .collect())
    }

    fn records(s: &Dataset) -> Result<Vec<(Addr, u32)>> {
        Ok(s.scale_references()?
            .into_iter()
            .map(|DimensionRef { dataset, dim }| (dataset, dim))
            .collect())
    }

    /// Attach the scale at `scale` to dimension `dim` of the dataset at
    /// `dataset` (`H5DSattach_scale`): the dataset's `DIMENSION_LIST` lists
    /// the scale (once), the scale's `REFERENCE_LIST` gets a record, and a
    /// scale that is not one yet gets `CLASS` = `"DIMENSION_SCALE"`.
    ///
    /// ```
    /// # fn main() -> h5fmt::Result<()> {
    /// # let dir = std::env::temp_dir().join(format!("h5fmt-doc-attach-{}", std::process::id()));
    /// # std::fs::create_dir_all(&dir)?;
    /// # let path = dir.join("f.h5");
    /// let mut w = h5fmt::FileWriter::create(&path)?;
    /// w.root().create_dataset("t").write(&[0.0f64, 1.0])?;
    /// w.root().create_dataset("d").write(&[7i32, 8])?;
    /// w.close()?;
    ///
    /// let mut e = h5fmt::FileEditor::open(&path)?;
    /// e.attach_dimension_scale("/d", "/t", 0)?;
    /// e.set_dimension_label("/d", 0, "time")?;
    /// e.close()?;
    ///
    /// let f = h5fmt::File::open(&path)?;
    /// let d = f.dataset("/d")?;
    /// assert_eq!(d.dimension_scales()?[0][0].addr, f.dataset("/t")?.addr());
    /// assert_eq!(d.dimension_labels()?, ["time"]);
    /// assert_eq!(f.dataset("/t")?.scale_references()?[0].dataset, d.addr());
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    /// `NotFound`; `Usage` when either is not a dataset, they are the same,
    /// `dataset` is a scale, an image, palette or table (its `CLASS`),
    /// `scale` has scales attached, or `dim` is out of range; `Corrupt` for broken H5DS attributes; as
    /// [`FileEditor::set_attr`].
    pub fn attach_dimension_scale(&mut self, dataset: &str, scale: &str, dim: u32) -> Result<()> {
        let (d, s, _) = self.h5ds_pair(dataset, scale, dim)?;
        let class = d.attrs()?.into_iter().find(|a| a.name() == "CLASS");
        if class.is_some_and(|a| h5ds_refuses(a.dtype(), a.raw())) {
            return Err(
                Error::usage("an image, palette or table cannot have scales").with_path(dataset),
            );
        }
        if Self::has_attr(&s, DIMENSION_LIST)? {
            return Err(
                Error::usage("a dataset with scales attached cannot be a scale").with_path(scale),
            );
        }
        let offsets = self.ctx.sizes.offsets;
        let mut lists = Self::scale_lists(&d)?;
        let before = lists.clone();
        attach_to(
            &mut lists,
            usize::try_from(dim).unwrap_or(usize::MAX),
            s.addr(),
        );
        let mut recs = Self::records(&s)?;
        recs.push((d.addr(), dim));
        let is_scale = s.is_dimension_scale()?;
        if lists != before || !Self::has_attr(&d, DIMENSION_LIST)? {
            self.set_attr(
                dataset,
                DIMENSION_LIST,
                dimension_list_value(&lists, offsets),
            )?;
        }
        self.set_attr(scale, REFERENCE_LIST, reference_list_value(&recs, offsets))?;
        if !is_scale {
            self.set_attr(scale, "CLASS", lt_string(DIMENSION_SCALE_CLASS))?;
        }
        Ok(())
    }

    /// Detach the scale at `scale` from dimension `dim` of the dataset at
    /// `dataset` (`H5DSdetach_scale`): one entry goes from each side (the
    /// last moved into its place); a `DIMENSION_LIST` left without scales
    /// and an empty `REFERENCE_LIST` are deleted.
    ///
    /// # Errors
    /// `NotFound` when the scale is not attached to that dimension; as
    /// [`FileEditor::attach_dimension_scale`].
    pub fn detach_dimension_scale(&mut self, dataset: &str, scale: &str, dim: u32) -> Result<()> {
        let (d, s, _) = self.h5ds_pair(dataset, scale, dim)?;
        let offsets = self.ctx.sizes.offsets;
        let mut lists = Self::scale_lists(&d)?;
        let mut recs = Self::records(&s)?;
        let in_list = lists
            .get_mut(usize::try_from(dim).unwrap_or(usize::MAX))
            .is_some_and(|l| swap_remove_first(l, &s.addr()));
        if !in_list || !swap_remove_first(&mut recs, &(d.addr(), dim)) {
            return Err(Error::not_found(alloc::format!(
                "{scale} is not attached to dimension {dim}"
            ))
            .with_path(dataset));
        }
        if lists.iter().all(Vec::is_empty) {
            self.delete_attr(dataset, DIMENSION_LIST)?;
        } else {
            self.set_attr(
                dataset,
                DIMENSION_LIST,
                dimension_list_value(&lists, offsets),
            )?;
        }
        if recs.is_empty() {
            self.delete_attr(scale, REFERENCE_LIST)?;
        } else {
            self.set_attr(scale, REFERENCE_LIST, reference_list_value(&recs, offsets))?;
        }
        Ok(())
    }

    /// Set the label of dimension `dim` of the dataset at `path`
    /// (`H5DSset_label`, attribute `DIMENSION_LABELS`; `""` clears it).
    ///
    /// # Errors
    /// `NotFound`; `Usage` when `dim` is out of range or the label holds a
    /// NUL; `Corrupt` for a broken `DIMENSION_LABELS`.
    pub fn set_dimension_label(&mut self, path: &str, dim: u32, label: &str) -> Result<()> {
        self.flush()?;
        let d = self.h5ds_dataset(path)?;
        if label.contains('\0') {
            return Err(Error::usage("a label cannot contain NUL"));
        }
        let mut labels = d.dimension_labels()?;
        let Some(slot) = usize::try_from(dim).ok().and_then(|i| labels.get_mut(i)) else {
            return Err(
                Error::usage(alloc::format!("dimension {dim} out of range")).with_path(path)
            );
        };
        *slot = label.to_string();
        self.set_attr(path, DIMENSION_LABELS, labels_value(&labels))
    }
}
