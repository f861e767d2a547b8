//! Writing PyTables nodes through [`FileEditor`]: the file's root
//! attributes, groups, `Array`, `CArray`, `EArray` and `VLArray` (with its
//! pseudo-atoms), with the system attributes PyTables 3 writes (read back
//! by [`crate::pytables`]):
//!
//! | node | `CLASS` | `VERSION` | also |
//! |---|---|---|---|
//! | root | `GROUP` | `1.0` | `TITLE`, `PYTABLES_FORMAT_VERSION "2.1"` |
//! | group | `GROUP` | `1.0` | `TITLE` |
//! | Array | `ARRAY` | `2.4` | `TITLE`, `FLAVOR "numpy"`; contiguous |
//! | CArray | `CARRAY` | `1.1` | `TITLE`; chunked |
//! | EArray | `EARRAY` | `1.1` | `TITLE`, `EXTDIM` (int32); chunked, the extendable dimension unlimited |
//! | VLArray | `VLARRAY` | `1.4` | `TITLE`, `PSEUDOATOM` for a pseudo-atom; rank 1, chunked, unlimited |
//!
//! Strings are NUL-terminated UTF-8 exactly as long as their text (an
//! empty one: one ASCII NUL, which reads back as `""` as PyTables' own
//! null-dataspace empty string does).
//!
//! ```
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use h5fmt::format::datatype::Datatype;
//! use h5table::pytables::{walk, ArrayKind, Node};
//! use h5table::write::pytables::{create_array, init_file, ArraySpec};
//! let path = std::env::temp_dir().join(format!("h5table-pytables-{}.h5", std::process::id()));
//! h5fmt::FileWriter::create(&path)?.close()?;
//! let mut ed = h5fmt::FileEditor::open(&path)?;
//! init_file(&mut ed, "an example")?;
//! let spec = ArraySpec::new(ArrayKind::EArray, Datatype::int_le(4, true), &[3]);
//! let data: Vec<u8> = [1i32, 2, 3].iter().flat_map(|x| x.to_le_bytes()).collect();
//! create_array(&mut ed, "/", "x", &spec, &data)?;
//! ed.close()?;
//! // Read back: every node PyTables would list, classified.
//! let file = h5fmt::File::open(&path)?;
//! for (node_path, node) in walk(&file)? {
//!     if let Node::Array(a) = node? {
//!         assert_eq!((node_path.as_str(), a.shape()), ("/x", &[3u64][..]));
//!     }
//! }
//! # std::fs::remove_file(&path)?;
//! # Ok(()) }
//! ```

use crate::error::{Error, Result};
use crate::pytables::{ArrayKind, PseudoAtom};
use alloc::boxed::Box;
use alloc::format;
use alloc::string::String;
use alloc::vec;
use alloc::vec::Vec;
use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, StringPad};
use h5fmt::write::edit::NewDataset;
use h5fmt::{AttrValue, FileEditor};

/// A string attribute as PyTables writes it.
pub fn str_attr(s: &str) -> AttrValue {
    // A one-byte ASCII NUL reads back as ""; a UTF-8 one would read as "\0".
    let (size, cset, mut bytes) = if s.is_empty() {
        (1, CharSet::Ascii, Vec::new())
    } else {
        (s.len(), CharSet::Utf8, s.as_bytes().to_vec())
    };
    bytes.resize(size, 0);
    AttrValue::raw(
        Datatype::String {
            size: u32::try_from(size).unwrap_or(u32::MAX),
            pad: StringPad::NullTerm,
            cset,
        },
        None,
        bytes,
    )
}

fn hdf5(path: &str, e: h5fmt::Error) -> Error {
    Error::invalid(path, "PyTables", format!("{e}"))
}

/// `path`'s system attributes: `CLASS`, `VERSION`, `TITLE` (and `FLAVOR`).
///
/// # Errors
/// HDF5 errors setting them, naming `path`.
pub fn set_system_attrs(
    ed: &mut FileEditor,
    path: &str,
    class: &str,
    version: &str,
    title: &str,
    flavor: Option<&str>,
) -> Result<()> {
    for (k, v) in [("CLASS", class), ("VERSION", version), ("TITLE", title)]
        .into_iter()
        .chain(flavor.map(|f| ("FLAVOR", f)))
    {
        ed.set_attr(path, k, str_attr(v))
            .map_err(|e| hdf5(path, e))?;
    }
    Ok(())
}

/// Make the file a PyTables file: the root group's system attributes and
/// `PYTABLES_FORMAT_VERSION "2.1"` (what PyTables 3 writes).
///
/// # Errors
/// HDF5 errors.
pub fn init_file(ed: &mut FileEditor, title: &str) -> Result<()> {
    set_system_attrs(ed, "/", "GROUP", "1.0", title, None)?;
    ed.set_attr("/", "PYTABLES_FORMAT_VERSION", str_attr("2.1"))
        .map_err(|e| hdf5("/", e))
}

fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

/// Create group `parent/name` with its system attributes.
///
/// # Errors
/// HDF5 errors (an existing name among them), naming the group.
pub fn create_group(ed: &mut FileEditor, parent: &str, name: &str, title: &str) -> Result<()> {
    let path = join(parent, name);
    ed.create_group(parent, name).map_err(|e| hdf5(&path, e))?;
    set_system_attrs(ed, &path, "GROUP", "1.0", title, None)
}

/// An `Array`, `CArray` or `EArray` to create.
#[derive(Debug, Clone)]
pub struct ArraySpec {
    /// The class.
    pub kind: ArrayKind,
    /// The atom's datatype (fixed size).
    pub dtype: Datatype,
    /// The shape (rank ≥ 1).
    pub shape: Vec<u64>,
    /// `EArray`: the extendable dimension (default 0).
    pub extdim: usize,
    /// Chunk shape (`CArray`, `EArray`); default about 64 KiB, whole rows
    /// of the other dimensions.
    pub chunks: Option<Vec<u64>>,
    /// Deflate (zlib) level, with shuffle (`CArray`, `EArray`).
    pub deflate: Option<u8>,
    /// `TITLE`.
    pub title: String,
}

impl ArraySpec {
    /// A `kind` array of `dtype` and `shape`, no title, default chunks.
    pub fn new(kind: ArrayKind, dtype: Datatype, shape: &[u64]) -> Self {
        ArraySpec {
            kind,
            dtype,
            shape: shape.to_vec(),
            extdim: 0,
            chunks: None,
            deflate: None,
            title: String::new(),
        }
    }
}

/// Chunk dimensions of about 64 KiB: every dimension whole but `along`,
/// which takes what is left (at least 1).
fn default_chunks(shape: &[u64], esize: u64, along: usize) -> Vec<u64> {
    let rest: u64 = shape
        .iter()
        .enumerate()
        .filter(|&(i, _)| i != along)
        .map(|(_, &d)| d.max(1))
        .fold(esize.max(1), u64::saturating_mul);
    shape
        .iter()
        .enumerate()
        .map(|(i, &d)| {
            if i == along {
                (65_536 / rest).max(1)
            } else {
                d.max(1)
            }
        })
        .collect()
}

/// Create `parent/name` as `spec` holding `data` (raw elements, row-major).
///
/// # Errors
/// [`Error::Usage`] for a rank-0 shape, an `extdim` past the rank, data of
/// the wrong length; HDF5 errors naming the node.
pub fn create_array(
    ed: &mut FileEditor,
    parent: &str,
    name: &str,
    spec: &ArraySpec,
    data: &[u8],
) -> Result<()> {
    let path = join(parent, name);
    let rank = spec.shape.len();
    if rank == 0 {
        return Err(Error::usage(format!(
            "{path}: rank-0 arrays are not written"
        )));
    }
    let elems = spec.shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d));
    let want = elems.and_then(|n| n.checked_mul(spec.dtype.size()));
    if want != Some(data.len() as u64) {
        return Err(Error::usage(format!(
            "{path}: {} bytes of data for shape {:?} of {}-byte elements",
            data.len(),
            spec.shape,
            spec.dtype.size()
        )));
    }
    let extendable = spec.kind == ArrayKind::EArray;
    if extendable && spec.extdim >= rank {
        return Err(Error::usage(format!(
            "{path}: EXTDIM {} past rank {rank}",
            spec.extdim
        )));
    }
    let mut ds = NewDataset::new(spec.dtype.clone(), &spec.shape);
    if spec.kind != ArrayKind::Array {
        let along = if extendable { spec.extdim } else { 0 };
        ds = ds.chunks(
            &spec
                .chunks
                .clone()
                .unwrap_or_else(|| default_chunks(&spec.shape, spec.dtype.size(), along)),
        );
        if extendable {
            let max: Vec<Option<u64>> = (0..rank)
                .map(|i| (i != spec.extdim).then(|| spec.shape.get(i).copied().unwrap_or(0)))
                .collect();
            ds = ds.maxshape(&max);
        }
        if let Some(level) = spec.deflate {
            ds = ds.shuffle().deflate(level);
        }
    }
    ed.create_dataset(parent, name, &ds)
        .map_err(|e| hdf5(&path, e))?;
    if !data.is_empty() {
        ed.write_box(&path, &vec![0; rank], &spec.shape, data)
            .map_err(|e| hdf5(&path, e))?;
    }
    let (version, flavor) = match spec.kind {
        ArrayKind::Array => ("2.4", Some("numpy")),
        ArrayKind::CArray | ArrayKind::EArray => ("1.1", None),
    };
    set_system_attrs(ed, &path, spec.kind.class(), version, &spec.title, flavor)?;
    if extendable {
        let d = i32::try_from(spec.extdim).map_err(|_| Error::usage("EXTDIM too large"))?;
        ed.set_attr(&path, "EXTDIM", d)
            .map_err(|e| hdf5(&path, e))?;
    }
    Ok(())
}

/// A `VLArray`'s atom.
#[derive(Debug, Clone)]
pub enum VlAtom {
    /// Rows of elements of this (fixed-size) datatype.
    Plain(Datatype),
    /// A pseudo-atom.
    Pseudo(PseudoAtom),
}

/// Rows per heap collection written at once (under `put_varlen`'s 65534).
const VL_BATCH: usize = 16_384;

/// Create `parent/name` as a `VLArray` of `rows`: for a plain atom each
/// row is its packed elements (raw bytes, a multiple of the atom's size);
/// for `vlstring` and `object` the row's bytes; for `vlunicode` the row's
/// text as UTF-8 (stored as UCS-4, little-endian `uint32`).
///
/// # Errors
/// [`Error::Usage`] for a row that is not whole elements or not UTF-8;
/// HDF5 errors naming the node.
pub fn create_vlarray(
    ed: &mut FileEditor,
    parent: &str,
    name: &str,
    atom: &VlAtom,
    title: &str,
    rows: &[Vec<u8>],
) -> Result<()> {
    let path = join(parent, name);
    let uint = |size: u32| Datatype::Integer {
        size,
        order: ByteOrder::Little,
        signed: false,
        bit_offset: 0,
        precision: u16::try_from(size * 8).unwrap_or(u16::MAX),
    };
    let base = match atom {
        VlAtom::Plain(dt) => dt.clone(),
        VlAtom::Pseudo(PseudoAtom::VlUnicode) => uint(4),
        VlAtom::Pseudo(PseudoAtom::VlString | PseudoAtom::Object) => uint(1),
    };
    let dtype = Datatype::VarLenSequence {
        size: 16,
        base: Box::new(base.clone()),
    };
    let esize = usize::try_from(base.size()).unwrap_or(usize::MAX).max(1);
    let mut packed = Vec::with_capacity(rows.len());
    for (i, r) in rows.iter().enumerate() {
        packed.push(match atom {
            VlAtom::Pseudo(PseudoAtom::VlUnicode) => core::str::from_utf8(r)
                .map_err(|e| Error::usage(format!("{path}: row {i} is not UTF-8: {e}")))?
                .chars()
                .flat_map(|c| u32::from(c).to_le_bytes())
                .collect(),
            _ if !r.len().is_multiple_of(esize) => {
                return Err(Error::usage(format!(
                    "{path}: row {i} of {} bytes is not whole {esize}-byte elements",
                    r.len()
                )))
            }
            _ => r.clone(),
        });
    }
    let ds = NewDataset::new(dtype.clone(), &[0])
        .maxshape(&[None])
        .chunks(&[1024]);
    ed.create_dataset(parent, name, &ds)
        .map_err(|e| hdf5(&path, e))?;
    for batch in packed.chunks(VL_BATCH) {
        let descriptors = ed.put_varlen(&dtype, batch).map_err(|e| hdf5(&path, e))?;
        ed.append_raw(&path, &descriptors)
            .map_err(|e| hdf5(&path, e))?;
    }
    set_system_attrs(ed, &path, "VLARRAY", "1.4", title, None)?;
    if let VlAtom::Pseudo(p) = atom {
        let kind = match p {
            PseudoAtom::VlString => "vlstring",
            PseudoAtom::VlUnicode => "vlunicode",
            PseudoAtom::Object => "object",
        };
        ed.set_attr(&path, "PSEUDOATOM", str_attr(kind))
            .map_err(|e| hdf5(&path, e))?;
    }
    Ok(())
}
