//! Typed reads on top of the raw ones: one member of a compound type at a
//! time (`"a.b"` for nested members, as numpy's `arr["a"]["b"]`), and, with
//! the `ndarray` feature, results shaped as `ndarray::ArrayD`.

use crate::data::convert::{convert_slice, H5Native};
use crate::data::record::{read_records_from, H5Record, RecordCx};
use crate::data::Value;
use crate::error::{Error, Result};
use crate::format::datatype::Datatype;
use crate::read::{Attribute, Dataset};
use alloc::format;
use alloc::vec::Vec;

/// Byte offset and type of the member at `path` (`.`-separated names) of a
/// compound type.
///
/// # Errors
/// `Usage` when the type is not compound or a name is missing.
pub fn compound_member<'a>(dtype: &'a Datatype, path: &str) -> Result<(u64, &'a Datatype)> {
    let mut offset = 0u64;
    let mut cur = dtype;
    for name in path.split('.') {
        let Datatype::Compound { members, .. } = cur else {
            return Err(Error::usage(format!(
                "{path:?}: the type holding {name:?} is not compound"
            )));
        };
        let m = members
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| Error::usage(format!("no compound member named {name:?}")))?;
        offset = offset.saturating_add(u64::from(m.offset));
        cur = &m.dtype;
    }
    Ok((offset, cur))
}

/// The bytes of one member taken out of every element of `raw`.
fn extract(raw: &[u8], elem: u64, offset: u64, len: u64) -> Result<Vec<u8>> {
    let bad = || Error::corrupt("compound member outside its element", 0);
    let elem = usize::try_from(elem).map_err(|_| bad())?;
    let start = usize::try_from(offset).map_err(|_| bad())?;
    let len = usize::try_from(len).map_err(|_| bad())?;
    let end = start
        .checked_add(len)
        .filter(|&e| e <= elem)
        .ok_or_else(bad)?;
    if elem == 0 {
        return Ok(Vec::new());
    }
    let mut out = crate::io::try_vec(
        (raw.len() / elem).saturating_mul(len),
        "compound member bytes",
    )?;
    for e in raw.chunks_exact(elem) {
        out.extend_from_slice(e.get(start..end).ok_or_else(bad)?);
    }
    Ok(out)
}

/// Raw member bytes and the member type of a compound read.
fn member_bytes<'a>(
    dtype: &'a Datatype,
    raw: &[u8],
    path: &str,
) -> Result<(Vec<u8>, &'a Datatype)> {
    let (offset, mdt) = compound_member(dtype, path)?;
    Ok((extract(raw, dtype.size(), offset, mdt.size())?, mdt))
}

impl Dataset {
    /// One member of a compound dataset as native numbers (`"a.b"` names a
    /// member of a nested compound), converted like [`Dataset::read`].
    ///
    /// # Errors
    /// `Usage` for a missing member or a non-compound dataset;
    /// `Unrepresentable` when the member's type or a value does not fit `T`;
    /// read errors.
    pub fn read_field<T: H5Native>(&self, field: &str) -> Result<Vec<T>> {
        let raw = self.read_raw()?;
        let (bytes, mdt) =
            member_bytes(self.dtype(), &raw, field).map_err(|e| e.with_path(self.path()))?;
        convert_slice(mdt, &bytes).map_err(|e| e.with_path(self.path()))
    }

    /// One member of a compound dataset decoded into values (strings,
    /// variable-length data, references, nested types).
    ///
    /// # Errors
    /// As [`Dataset::read_field`], plus element decode errors.
    pub fn read_field_values(&self, field: &str) -> Result<Vec<Value>> {
        let raw = self.read_raw()?;
        let (bytes, mdt) =
            member_bytes(self.dtype(), &raw, field).map_err(|e| e.with_path(self.path()))?;
        self.file()
            .decode_values(mdt, &bytes, self.len())
            .map_err(|e| e.with_path(self.path()))
    }

    /// The whole dataset read into `T`s (row-major, flat): structs with
    /// `#[derive(H5Compound)]` (feature `derive`), numbers, strings, arrays;
    /// see [`H5Record`]. Compound members are matched by name: the file's
    /// member order, offsets, byte orders and extra members do not matter.
    ///
    /// # Errors
    /// `Usage` for a member `T` needs and the file's type lacks;
    /// `Unrepresentable` for a type or value that does not convert; as
    /// [`Dataset::read_raw`]. All carry the dataset's path.
    pub fn read_records<T: H5Record + Send>(&self) -> Result<Vec<T>> {
        // Plan first: a missing member fails before any data is read.
        T::plan(self.dtype()).map_err(|e| e.with_path(self.path()))?;
        let raw = self.read_raw()?;
        self.records_of(&raw, self.len())
    }

    /// `count` elements of `raw` read into `T`s, on several threads when
    /// there are many; the `T`s and the strings and values they hold are
    /// charged to one budget of `Limits::max_read_bytes`.
    fn records_of<T: H5Record + Send>(&self, raw: &[u8], count: u64) -> Result<Vec<T>> {
        let (file, dtype) = (self.file(), self.dtype());
        let ctx = file.ctx();
        file.decode_split(dtype, raw, count, |part, n, first, heap, budget| {
            let cx = RecordCx::with_budget(ctx, heap, budget);
            read_records_from(dtype, part, n, &cx, first)
        })
        .map_err(|e| e.with_path(self.path()))
    }

    /// A selection read into `T`s (row-major in the selection's
    /// `Selection::out_shape`), as [`Dataset::read_records`].
    ///
    /// # Errors
    /// As [`Dataset::read_records`] and [`Dataset::read_slice_raw`].
    pub fn read_records_slice<T: H5Record + Send>(
        &self,
        sel: &crate::data::hyperslab::Selection,
    ) -> Result<Vec<T>> {
        T::plan(self.dtype()).map_err(|e| e.with_path(self.path()))?;
        let raw = self.read_slice_raw(sel)?;
        let count = sel
            .num_elements()
            .ok_or_else(|| Error::limit("selection size overflows").with_path(self.path()))?;
        self.records_of(&raw, count)
    }

    /// The whole dataset as an `ndarray` of the dataset's shape (a scalar
    /// dataset gives a 0-dimensional array), converted like [`Dataset::read`].
    ///
    /// # Errors
    /// As [`Dataset::read`].
    #[cfg(feature = "ndarray")]
    pub fn read_array<T: H5Native>(&self) -> Result<ndarray::ArrayD<T>> {
        let v = self.read::<T>()?;
        shaped(self.shape(), v).map_err(|e| e.with_path(self.path()))
    }

    /// A selection as an `ndarray` whose shape is the selection's block
    /// shape (`Selection::out_shape`), converted like [`Dataset::read`].
    ///
    /// # Errors
    /// As [`Dataset::read_slice_raw`]; `Unrepresentable` for a type `T` cannot hold.
    #[cfg(feature = "ndarray")]
    pub fn read_slice_array<T: H5Native>(
        &self,
        sel: &crate::data::hyperslab::Selection,
    ) -> Result<ndarray::ArrayD<T>> {
        let v = self.read_slice::<T>(sel)?;
        shaped(&sel.out_shape(), v).map_err(|e| e.with_path(self.path()))
    }
}

impl Attribute {
    /// One member of a compound attribute as native numbers.
    ///
    /// # Errors
    /// As [`Dataset::read_field`].
    pub fn read_field<T: H5Native>(&self, field: &str) -> Result<Vec<T>> {
        let (bytes, mdt) = member_bytes(self.dtype(), self.raw(), field)?;
        convert_slice(mdt, &bytes)
    }

    /// The attribute as an `ndarray` of its shape.
    ///
    /// # Errors
    /// As [`Attribute::read`].
    #[cfg(feature = "ndarray")]
    pub fn read_array<T: H5Native>(&self) -> Result<ndarray::ArrayD<T>> {
        shaped(self.shape(), self.read::<T>()?)
    }
}

#[cfg(feature = "ndarray")]
fn shaped<T>(shape: &[u64], v: Vec<T>) -> Result<ndarray::ArrayD<T>> {
    let dims = shape
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| Error::limit("dimension above usize")))
        .collect::<Result<Vec<usize>>>()?;
    ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(&dims), v)
        .map_err(|e| Error::corrupt(format!("element count does not match the shape: {e}"), 0))
}
