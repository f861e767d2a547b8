//! Editing existing HDF5 files in place, crash-safely (std only).
//!
//! [`FileEditor`] opens a file written by libhdf5 (any library version
//! bounds) or by [`crate::FileWriter`] read-write and changes it without
//! rewriting it:
//!
//! * chunked datasets grow, shrink (within their maximum shape) and take
//!   hyperslab (box) writes; contiguous datasets take box writes in place;
//! * attributes are added, overwritten and deleted; groups, datasets and
//!   links are created and deleted (an object whose last hard link goes
//!   is deleted with its storage, as libhdf5 does: see "Free space"), in
//!   compact storage, in symbol-table
//!   groups and in dense storage (fractal heap + v2 B-tree indexes, see
//!   `dense.rs`): dense sets are rebuilt copy-on-write at each commit and
//!   storage converts between compact and dense as libhdf5 does;
//! * attributes whose messages are shared in the file's SOHM heap are
//!   resolved, overwritten and deleted, dropping their references in the
//!   SOHM index (see "Shared attribute messages");
//! * [`FileEditor::flush`] is the commit point.
//!
//! # Crash safety
//!
//! Nothing the file refers to is overwritten before the commit: new and
//! changed chunks, the rebuilt chunk index, new object header continuation
//! chunks go to space at the end of the file (or to space freed by an
//! earlier, completed commit). The commit then writes, in this order, each
//! with one write call: the superblock with the new end-of-file address
//! (the file still means the old content, with unreferenced space at its
//! end), and for each changed object the one existing object header chunk
//! that changed (with its checksum). After every single write the file is
//! valid and means either the old or the new state of that object; finally
//! the file is `fsync`ed. When resizing moves the dataspace and the layout
//! messages into different chunks, the chunk that keeps the index a
//! superset of the extent is written first. A process killed at any moment
//! therefore leaves a file that libhdf5 and this crate open, holding
//! everything flushed before.
//!
//! Dense links and attributes follow the same rule: the new heap and
//! indexes are written to fresh space before the commit, the one header
//! chunk holding the link or attribute info message switches to them, and
//! the old heap and indexes are freed only after the commit. When a
//! compact ↔ dense conversion also adds or removes messages in other
//! chunks, the info message's chunk is written first when turning dense
//! (libhdf5 reads only the heap once the info message names one, so the
//! stale messages still in other chunks are ignored) and last when turning
//! compact (until then the info message names the old, intact heap). In
//! those intermediate states this crate's reader, which lists messages and
//! heap together, may show a link or attribute twice; libhdf5 does not.
//!
//! Dropped references to shared attribute messages (SOHM) follow it too:
//! the new index (list block or v2 B-tree) goes to fresh space, and the
//! master table naming it is rewritten in place (one write) after the
//! header chunks that no longer refer to the messages; a cut in between
//! leaves reference counts too high (a leak), never too low.
//!
//! The superblock's file-consistency flags are never set; a file whose
//! flags say that libhdf5 has it open for writing is refused.
//!
//! # Chunk indexes
//!
//! Chunk maps are loaded from any index the reader knows (v1 B-tree, single
//! chunk, implicit, fixed array, extensible array, v2 B-tree). On commit the
//! index is rebuilt copy-on-write **as the type it had**, in the layout
//! message version it had (3, 4 or 5) and with the creation parameters its
//! layout message names, so an edited `libver='latest'` file holds the
//! index libhdf5 itself would have there:
//!
//! * v1 B-tree: rebuilt with the file's indexed-storage K;
//! * single chunk: stays single-chunk (the one chunk is replaced);
//! * fixed array: sized by the maximum dims (which cannot change), its
//!   data block paged as the message's page bits say (libhdf5 pages above
//!   1024 entries);
//! * extensible array: the message's maximum-elements bits, index block
//!   elements, minimum data block elements and pointers and page bits;
//!   elements in libhdf5's order (the unlimited dimension first);
//! * v2 B-tree: record type 10 (unfiltered) or 11 (filtered), the
//!   message's node size and split/merge percentages;
//! * implicit: the chunks are addressed by their number over the maximum
//!   dims, so no chunk can move alone: a commit that changes such a dataset
//!   writes its whole storage (every chunk over the maximum dims, fill
//!   values where none is stored) to fresh space and switches the layout
//!   message to it. The index stays legal: libhdf5 uses it only for
//!   unfiltered datasets allocated early with fixed maximum dims, and edits
//!   change none of these.
//!
//! Datasets created by [`FileEditor::create_dataset`] get the index
//! libhdf5 2.0 gives a new dataset under the editor's library-version
//! bound ([`FileEditor::set_format`], h5py's `libver=` when opening r+),
//! through the writer's own choice (`write/chunked.rs`, `empty_layout`).
//! libhdf5 decides this by the bound alone, not by the file: with h5py's
//! default bound (`earliest`) it creates v1 B-tree indexes with layout
//! version 3 even in a `libver='latest'` file with superblock version 3,
//! so that is the editor's default too; under `v110`–`v114`
//! ([`crate::write::Format::Latest`]) it picks a single chunk, fixed array,
//! extensible array or v2 B-tree index with layout version 4, and under
//! `v200`/`latest` ([`crate::write::Format::V200`]) the same with layout
//! version 5 for filtered datasets. The index is created empty (undefined
//! address) and built at the first commit that stores a chunk.
//!
//! Filtered entries keep libhdf5's stored-size width: one byte more than
//! the unfiltered chunk size needs under layout version 4, "size of
//! lengths" under version 5 (the chunk size never changes, so neither does
//! the width). The new index is built with the writer's encoders
//! (`write/chunked.rs`, through its `IndexSink`) in fresh space before the
//! commit, like the chunks; the structures of the index it replaces (array
//! header, index/super/data blocks and pages, B-tree header and nodes, the
//! implicit storage) join the free list once the commit is done. Nodes of a
//! v1 B-tree libhdf5 wrote are not freed by a rebuild (only ones this
//! editor wrote); deleting the dataset frees them all.
//!
//! # Free space
//!
//! What a file says it occupies is trusted only so far: an extent to free
//! that is empty, starts inside the superblock, ends past the end of file
//! or overlaps space already free is leaked instead, and a file shorter
//! than its end-of-file address is not opened for editing (libhdf5 refuses
//! it too). Where two structures of a corrupt file claim the same bytes,
//! the editor protects what it holds: no free (of a deletion, a replaced
//! heap segment or node) is settled over the storage of a dataset it has
//! open (contiguous block, chunks, index structures), a header it has
//! staged, or a group B-tree node, symbol table node or heap header it
//! rewrites in place (a leak instead); and a dataset whose storage runs
//! past the end of file or overlaps free space or what the editor holds is
//! not opened for writing (`Corrupt`). It does not map the whole file,
//! though: deleting or replacing one of two overlapping structures frees
//! bytes the other still uses when the editor has not touched the other,
//! as with libhdf5 (`h5 check` reports such overlaps; check files of
//! unknown origin first).
//!
//! Space released by a commit (replaced and dropped chunks, B-tree nodes
//! this editor wrote, object header chunks, old heaps and dense indexes)
//! becomes free once the commit no longer refers to it, and later
//! allocations take it first-fit (raw data prefers raw data space,
//! metadata metadata space, as libhdf5 keeps them apart). Free space at the
//! end of the file is given back instead: the end-of-file address shrinks
//! and the file is truncated (libhdf5 shrinks its EOA the same way).
//!
//! **Deleting objects** (`delete.rs`). [`FileEditor::delete_link`]
//! commits staged edits first, then removes the link; when that was the
//! target's last hard link (its reference count: the v1 header's link
//! count, the v2 header's reference count message, else 1) the target is
//! deleted as libhdf5's `H5O_delete` does: its header chunks, a dataset's
//! contiguous block or every chunk and the chunk index structures (v1
//! B-tree nodes included, an implicit index's whole storage), dense
//! attribute storage (fractal heap header and blocks, name and
//! creation-order B-trees), a group's link storage (local heap, B-tree
//! nodes and `SNOD`s, or dense heap and B-trees; the heaps' huge objects
//! and huge-object B-trees and the heaps' free-space managers included);
//! every hard link the
//! deleted group held, and a dataset's committed datatype, drop one
//! reference of their target in turn, deleting it when that was its last
//! (members linked elsewhere only have their count decremented, their
//! header rewritten after the parent's). Raw data and huge heap objects
//! go to the raw data list (libhdf5 allocates huge objects as raw data),
//! the rest to the metadata list. A virtual dataset's mapping list leaves
//! its global heap collection (`H5HG_remove`): a collection left empty is
//! freed, any other is compacted and rewritten in place after the header
//! chunks (one write; a cut before it leaves the object, a leak). The
//! references the object's messages hold in the SOHM indexes are dropped
//! as libhdf5's `H5SM_delete` drops them (see "Shared attribute
//! messages"). Not freed, as libhdf5 does not free them either: global
//! heap objects (variable-length data) and external files; left in place
//! (a leak, never a double free) where libhdf5 would free them:
//! committed datatypes used by attributes, any structure that does not decode, and any extent that
//! passes the end of file or overlaps space already free or pending or
//! the managers' own structures. The group losing the link and the root group are never
//! deleted through a wrong reference count. Objects still named by object
//! references are deleted all the same, as libhdf5 does.
//!
//! **Persistent free space.** A file whose superblock extension holds a
//! File Space Info message (version 1) with the strategy "free-space
//! managers with aggregators" and persistence on — what h5py writes with
//! `fs_strategy='fsm', fs_persist=True` — lists its free space in
//! free-space managers (`FSHD` header + `FSSE` section list, simple
//! sections): slot 0 for metadata and slot 2 for raw data, the two lists
//! libhdf5's default driver keeps (`H5FD_FLMAP_DICHOTOMY`). The editor
//! loads their sections into its free lists at open (refusing managers
//! whose sections overlap each other or the managers, or pass the end of
//! file) and keeps the managers true at every write:
//!
//! * before a commit's in-place writes, when the live managers list space
//!   this commit took, new managers without it are written to fresh space
//!   and made live by rewriting the message (one write of the extension's
//!   header chunk, after the superblock's end of file covers them);
//! * after the commit's in-place writes, the space they released is listed
//!   by the next managers, switched in the same way. The end of file is
//!   written before that switch when it grows (the new managers lie past
//!   the old end) and after it when it shrinks (no live manager then lists
//!   space past the end of file); the file is truncated last.
//!
//! A manager never lists space the committed file uses, nor its own
//! structures; the space of the managers a switch replaces is listed by the
//! new ones (the same write frees and lists it). Sections below the
//! message's threshold are not listed (but are reused by the editor). New
//! managers take space from free sections at least their size plus the
//! threshold large, else at the end of file; their section lists may be
//! allocated a little larger than their sections need, and are then
//! zero-padded to that size, which the header gives as both the used and
//! the allocated size (libhdf5 caches a list at its allocated size but
//! loads it at its used size, and fails to close a read-write session that
//! changed a list whose two sizes differ: found by the kill test). The
//! message's "EOA before the managers" field gets the final end of file,
//! as libhdf5 1.14 and later write it. libhdf5 opening the file read-write
//! takes space from these managers, rewrites and relocates them at close.
//!
//! Not persisted: files without such a message (in particular superblock
//! version 0/1 files, which have no extension, and libhdf5's default,
//! non-persistent strategy): freed space is then reused only within the
//! session, as libhdf5 does. The editor does not add a File Space Info
//! message to a file that has none: that would switch libhdf5 to tracking
//! free space in the file on every later write (and older libraries that
//! do not know the message mark it unknown and stop updating it). New
//! files get one from [`crate::FileWriter::persist_free_space`] (the
//! message libhdf5 writes for `fs_strategy='fsm', fs_persist=True`, no
//! managers yet). Version 0 messages (libhdf5 1.10.0) and messages marked
//! unknown are left alone.
//!
//! **Paged aggregation** (`fs_strategy='page'`: a version 1 message with
//! the paged strategy and a page size). libhdf5 allocates such files in
//! pages (`H5MF__alloc_pagefs`), asserts that the end of file is a
//! multiple of the page size, and its page buffer (`page_buf_size=`)
//! caches whole pages as either metadata or raw data; a file allocated
//! the non-paged way (blocks crossing page boundaries, an unaligned end of
//! file) is misread through the page buffer (checked with h5py: a dataset
//! created that way "doesn't exist"). The editor therefore allocates as
//! libhdf5 does: a block smaller than a page lies inside one page holding
//! only blocks of its kind (metadata, or raw data with global heap
//! collections, as libhdf5 maps them), taken from freed space of that kind
//! or from a fresh page whose rest becomes free space of that kind; a block
//! of a page or more starts on a page boundary and owns its pages (the rest
//! of its last page is not reused); fresh pages come from the end of file,
//! which stays a multiple of the page size and is never shrunk. With
//! persistence on, the managers are kept untouched and stay true: the
//! editor does not load them, so it never takes the space they list, and
//! the space it frees is reused only within the session (left unlisted in
//! the file: a leak, never a double allocation); libhdf5 opening the file
//! read-write keeps using its managers. Tested with h5py
//! (`crates/h5cli/tests/edit_paged.rs`) for page sizes 512 and 4096,
//! persistence on and off, superblock versions 0 and 3, reading with and
//! without the page buffer and editing with it.
//!
//! # Shared attribute messages
//!
//! In files whose shared object header message table has an index for
//! attributes (libhdf5's `H5Pset_shared_mesg_index` with
//! `H5O_SHMESG_ATTR_FLAG`), attribute messages live once in the index's
//! fractal heap, referred to by header messages flagged shared and by dense
//! name-index records flagged shared, and counted by the index (`sohm.rs`
//! has the details). Such attributes are found by name through the SOHM
//! heap; overwriting or deleting one, in compact or dense storage, drops
//! one reference: the record's count is decremented, a record reaching 0
//! is removed (its heap object is left in the heap, a leak, unless the
//! index empties: then the index and its heap are deleted, as libhdf5
//! does), a B-tree index below its B-tree minimum becomes a list. Compact
//! ↔ dense conversions carry shared attributes as references (no count
//! changes). New attributes are written unshared: legal in any file,
//! libhdf5 reads them and deletes them without touching the index.
//! An attribute whose record is removed, and an unshared attribute that
//! is deleted or overwritten, drop the references of their own shared
//! datatype and dataspace in turn (`H5O__attr_delete`).
//!
//! Deleting a whole object drops every reference its header holds, in
//! every index of the table (attributes, datatypes, dataspaces, fill
//! values, filter pipelines): messages flagged shared (by heap id),
//! messages kept in full but flagged shareable (libhdf5 decodes them as
//! shared "here" and finds their record by content: the hash of the
//! encoding and the heap object's bytes; once a second object shares a
//! message, its record moves to the heap and the first object's full copy
//! counts as one reference), the shared datatype and dataspace of its
//! unshared attributes, its dense attributes likewise, and the records
//! that point into the deleted header itself (`H5SM_IN_OH`). References
//! that do not validate when staged are left (a leak). Checked against
//! twins where libhdf5 deletes the same objects: the indexes hold the same
//! records with the same counts (`edit_sohm.rs`).
//! The table, list or B-tree is validated in full before an edit is staged
//! (checksums, record type and size, counts against the table, unique heap
//! ids, a count above the references being dropped); otherwise the edit is
//! refused and the file is left unchanged. Tested with files libhdf5 makes
//! with list and B-tree indexes (`crates/h5cli/tests/edit_sohm.rs`).

mod delete;
mod dense;
mod dimscale;
mod header;
mod index;
mod objects;
mod sohm;
mod space;
pub use objects::NewDataset;

use crate::codec::Encoder;
use crate::error::{Error, Result};
use crate::format::btree_v1::{BTreeV1Node, Key, NODE_TYPE_CHUNK};
use crate::format::message::{
    kind, ChunkIndex, ChunkedLayout, Dataspace, FilterPipeline, Layout, SpaceKind,
};
use crate::read::File;
use crate::{Addr, Ctx, Limits};
use alloc::collections::{BTreeMap, BTreeSet};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec;
use alloc::vec::Vec;
use header::HeaderImage;
use std::os::unix::fs::FileExt;

/// Where a stored chunk is.
#[derive(Debug, Clone, Copy)]
struct Stored {
    addr: u64,
    size: u64,
    mask: u32,
}

/// How a chunked dataset's index is written back: as the type it had.
#[derive(Debug, Clone, PartialEq, Eq)]
enum IndexOut {
    BTreeV1,
    Single {
        filtered: bool,
    },
    /// All chunks over the maximum dims in one block, rewritten whole.
    Implicit,
    /// A fixed array, extensible array or v2 B-tree with these creation
    /// parameters (the address is that of the committed index).
    Rebuilt(ChunkIndex),
}

/// An open chunked dataset being edited.
#[derive(Debug)]
struct ChunkedDs {
    es: usize,
    dims: Vec<u64>,
    orig_dims: Vec<u64>,
    max: Vec<u64>,
    space_version: u8,
    chunk: Vec<u64>,
    pipeline: FilterPipeline,
    fill: Vec<u8>,
    map: BTreeMap<Vec<u64>, Stored>,
    /// Decoded chunks changed since the last write-out.
    cache: BTreeMap<Vec<u64>, Vec<u8>>,
    cache_bytes: usize,
    /// Chunk buffers already written out, reused for the next new chunks
    /// (appends then touch no fresh memory).
    spare: Vec<Vec<u8>>,
    out: IndexOut,
    /// The structures of the committed index (for an implicit index, its
    /// chunk storage), freed when a commit replaces them. A v1 B-tree
    /// libhdf5 wrote is not listed (its nodes are not freed).
    index_extents: Vec<(u64, u64)>,
    layout_version: u8,
    /// The layout message flags (v4/v5).
    layout_flags: u8,
    dirty: bool,
}

/// An open contiguous dataset.
#[derive(Debug)]
struct ContigDs {
    es: usize,
    dims: Vec<u64>,
    addr: u64,
    /// Bytes of storage the elements use (from `addr`).
    len: u64,
}

#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per open dataset
enum DsState {
    Chunked(ChunkedDs),
    Contig(ContigDs),
}

/// Spare chunk buffers kept per dataset.
const SPARE_BUFFERS: usize = 4;

/// A file opened read-write for in-place edits. See the module documentation.
pub struct FileEditor {
    file: std::fs::File,
    reader: File,
    ctx: Ctx,
    base: u64,
    sb_abs: u64,
    sb_image: Vec<u8>,
    sb_version: u8,
    istore_k: u16,
    eof: u64,
    committed_eof: u64,
    /// Free metadata space (and, below, raw data space): reusable now.
    free: Vec<(u64, u64)>,
    free_raw: Vec<(u64, u64)>,
    /// Space the next commit stops referring to: free after it.
    pending_free: Vec<(u64, u64)>,
    pending_free_raw: Vec<(u64, u64)>,
    /// Metadata the editor rewrites in place outside object headers (group
    /// B-tree nodes, symbol table nodes, local heap headers), as loaded or
    /// staged: a pending free that overlaps one is not settled, unless it
    /// is that structure's own extent (see `space::settle_free`).
    held: BTreeSet<(u64, u64)>,
    /// The end of file when the editor opened the file: storage a dataset
    /// of the file (not one in `created`) uses must end within it.
    open_eof: u64,
    /// Header addresses of the datasets the editor created.
    created: BTreeSet<u64>,
    /// The file's persistent free-space managers, kept up to date.
    persist: Option<space::Persist>,
    /// The file space page size of a paged aggregation file, else 0
    /// (space is then allocated in pages, see `space.rs`).
    page_size: u64,
    /// Raw data of at least `.0` bytes starts at a multiple of `.1` (see
    /// [`FileEditor::set_alignment`]).
    alignment: (u64, u64),
    headers: BTreeMap<u64, HeaderImage>,
    /// Headers in the order they were first touched (their in-place writes
    /// follow this order).
    dirty_order: Vec<u64>,
    /// Other in-place metadata writes of the next commit, in order.
    raw_writes: Vec<(u64, Vec<u8>)>,
    datasets: BTreeMap<u64, DsState>,
    /// Dense link or attribute sets being edited, by header address.
    dense_sets: BTreeMap<(u64, crate::write::dense::DenseKind), dense::DenseSet>,
    /// Header chunks to write first / last in the next commit (header
    /// address, chunk index): storage conversions.
    switch_first: Vec<(u64, usize)>,
    switch_last: Vec<(u64, usize)>,
    /// SOHM heap ids of shared attribute references the staged edits
    /// removed: one reference each is dropped from the index at the next
    /// commit (`sohm.rs`).
    sohm_drops: Vec<(u16, [u8; 8])>,
    /// Deleted object headers: SOHM index records pointing into them
    /// (messages shared "here") go at the next commit (`sohm.rs`).
    sohm_gone: Vec<u64>,
    /// Global heap objects of deleted objects (a virtual dataset's mapping
    /// list): (collection address, object index), removed from their
    /// collection after the next commit's header chunks (`delete.rs`).
    gheap_removals: Vec<(u64, u16)>,
    /// Dataset paths already resolved to their header address (cleared
    /// when links are deleted and at each commit).
    paths: BTreeMap<String, u64>,
    /// Datatypes of the datasets in `datasets`.
    dtypes: BTreeMap<u64, crate::Datatype>,
    /// Bytes of decoded chunks kept in memory before they are written out.
    pub cache_limit: usize,
    /// `fsync` at the commit (default true).
    pub sync: bool,
    /// The library-version lower bound new chunked datasets are created
    /// under (see [`FileEditor::set_format`]).
    format: crate::write::Format,
    write_budget: core::cell::Cell<Option<usize>>,
}

impl core::fmt::Debug for FileEditor {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("FileEditor")
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

/// The superblock v3 file-consistency flags libhdf5 sets while a writer
/// (bit 0) or a SWMR writer (bit 2) has the file open.
const SB_OPEN_FLAGS: u32 = 0x01 | 0x04;

fn usage(msg: impl Into<String>) -> Error {
    Error::usage(msg.into())
}

impl FileEditor {
    /// Open an existing file for editing.
    ///
    /// # Errors
    /// `Io`; decode errors of the superblock; `Unsupported` for files with a
    /// metadata cache image or marked open for writing by libhdf5.
    pub fn open(path: impl AsRef<std::path::Path>) -> Result<FileEditor> {
        Self::open_with_limits(path, Limits::default())
    }

    /// Open an existing file for editing, reading its structures under
    /// `limits` (the limits also bound chunk reads of the editor).
    ///
    /// # Errors
    /// As [`FileEditor::open`]; `Limit` when a structure exceeds `limits`.
    pub fn open_with_limits(
        path: impl AsRef<std::path::Path>,
        limits: Limits,
    ) -> Result<FileEditor> {
        let path = path.as_ref();
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| Error::io(alloc::format!("{}: {e}", path.display())))?;
        let reader = Self::make_reader(&file, limits)?;
        if reader.storage().overlay().is_some() {
            return Err(Error::unsupported(
                "editing a file with a metadata cache image",
            ));
        }
        let sb = reader.superblock().clone();
        if sb.version >= 3 && sb.flags & SB_OPEN_FLAGS != 0 {
            return Err(Error::unsupported(
                "the file is marked open for writing by libhdf5 (h5clear -s clears the mark)",
            ));
        }
        let ctx = reader.ctx();
        let sb_len = superblock_len(sb.version, ctx.sizes);
        let mut sb_image = vec![0u8; sb_len];
        file.read_exact_at(&mut sb_image, sb.sig_offset)?;
        if sb.version >= 2 {
            // The image patched at each commit must be the one the reader validated.
            let n = sb_image.len().saturating_sub(4);
            let stored = sb_image
                .get(n..)
                .and_then(|b| <[u8; 4]>::try_from(b).ok())
                .map(u32::from_le_bytes);
            if stored != Some(crate::codec::lookup3(sb_image.get(..n).unwrap_or(&[]), 0)) {
                return Err(Error::checksum("superblock checksum", sb.sig_offset));
            }
        }
        let mut istore_k = sb.indexed_storage_k;
        if let Some(ext) = sb.extension.defined() {
            let h = crate::read::object_header::read_object_header(reader.storage(), ext, ctx)?;
            if let Some(m) = h.find(0x13) {
                // B-tree 'K' values: version, indexed storage K, group internal K, leaf K.
                if let Some(k) = m.data.get(1..3) {
                    istore_k = u16::from_le_bytes([k[0], k[1]]);
                }
            }
        }
        if istore_k == 0 {
            return Err(Error::corrupt("indexed storage K of 0", sb.sig_offset));
        }
        let eof = sb.eof.get();
        // A file shorter than its end-of-file address is truncated: libhdf5
        // refuses to open it at all, and editing it would place new data
        // over whatever the missing part held.
        let len = file
            .metadata()
            .map_err(|e| Error::io(alloc::format!("{}: {e}", path.display())))?
            .len();
        if sb.base_address.checked_add(eof).is_none_or(|end| end > len) {
            return Err(Error::corrupt(
                alloc::format!(
                    "truncated file: end-of-file address {eof} is past the file's {len} bytes"
                ),
                sb.sig_offset,
            ));
        }
        // A file longer than its end-of-file address: the bytes past it are
        // either left over (a writer that stopped before truncating) or, in a
        // corrupt file, structures the reader follows (an address of 0 put
        // new header chunks over the superblock). New space starts after
        // every byte of the file, never over one.
        let eof = eof.max(len.saturating_sub(sb.base_address));
        let loaded = space::load(reader.storage(), ctx, sb.extension.defined(), eof)?;
        Ok(FileEditor {
            file,
            reader,
            ctx,
            base: sb.base_address,
            sb_abs: sb.sig_offset,
            sb_image,
            sb_version: sb.version,
            istore_k,
            eof,
            committed_eof: eof,
            free: loaded.meta,
            free_raw: loaded.raw,
            pending_free: Vec::new(),
            pending_free_raw: Vec::new(),
            held: BTreeSet::new(),
            open_eof: eof,
            created: BTreeSet::new(),
            persist: loaded.persist,
            page_size: loaded.page_size,
            alignment: (1, 1),
            headers: BTreeMap::new(),
            dirty_order: Vec::new(),
            raw_writes: Vec::new(),
            datasets: BTreeMap::new(),
            dense_sets: BTreeMap::new(),
            switch_first: Vec::new(),
            switch_last: Vec::new(),
            sohm_drops: Vec::new(),
            sohm_gone: Vec::new(),
            gheap_removals: Vec::new(),
            paths: BTreeMap::new(),
            dtypes: BTreeMap::new(),
            cache_limit: 64 << 20,
            sync: true,
            format: crate::write::Format::Earliest,
            write_budget: core::cell::Cell::new(None),
        })
    }

    fn make_reader(file: &std::fs::File, limits: Limits) -> Result<File> {
        let src = crate::io::FileSource::new(file.try_clone()?)?;
        File::from_source(Arc::new(src), limits)
    }

    /// The file as committed by the last [`FileEditor::flush`] (or as opened).
    pub fn reader(&self) -> &File {
        &self.reader
    }

    /// Align the raw data the editor allocates from now on (contiguous
    /// storage and chunks of at least `threshold` bytes start at a multiple
    /// of `alignment`), as [`crate::FileWriter::set_alignment`] does for new
    /// files; libhdf5's `H5Pset_alignment`. Ignored in a paged file, whose
    /// pages already align what they hold. The default `(1, 1)` aligns
    /// nothing.
    ///
    /// # Errors
    /// `Usage` when `alignment` is zero.
    pub fn set_alignment(&mut self, threshold: u64, alignment: u64) -> Result<()> {
        if alignment == 0 {
            return Err(usage("alignment must be at least 1"));
        }
        self.alignment = (threshold.max(1), alignment);
        Ok(())
    }

    /// Create later chunked datasets ([`FileEditor::create_dataset`]) as
    /// libhdf5 2.0 does when it opens a file read-write with this lower
    /// library-version bound (h5py's `libver=`): chunk index, layout
    /// message version and the fill value and filter pipeline message
    /// versions that come with them. libhdf5 decides these by the bound
    /// alone, not by what the file holds (checked with h5py against files
    /// of every superblock version):
    ///
    /// * [`Format::Earliest`](crate::write::Format::Earliest) (the default:
    ///   h5py opens files with `libver='earliest'`) and
    ///   [`Format::V18`](crate::write::Format::V18) (libhdf5 2.0's own
    ///   default bound): a v1 B-tree index, layout message version 3;
    /// * [`Format::Latest`](crate::write::Format::Latest) (`'v110'` to
    ///   `'v114'`): layout version 4 with the index libhdf5 picks — single
    ///   chunk when shape, maximum shape and chunk shape agree, else a fixed
    ///   array for fixed maximum dims, an extensible array for one unlimited
    ///   dimension, a v2 B-tree for more;
    /// * [`Format::V200`](crate::write::Format::V200) (`'v200'`, and
    ///   `'latest'` under libhdf5 2.0): as `Latest`, with layout version 5
    ///   for filtered datasets.
    ///
    /// Other objects and messages the editor creates are not affected.
    pub fn set_format(&mut self, format: crate::write::Format) {
        self.format = format;
    }

    /// The bound set by [`FileEditor::set_format`].
    pub fn format(&self) -> crate::write::Format {
        self.format
    }

    // ---- space ----

    /// Testing aid for crash ordering: every write after the next `n`
    /// fails (as if the process died between two writes) until lifted with
    /// `None`. The editor must be dropped after such a failure.
    #[doc(hidden)]
    pub fn fail_writes_after(&mut self, n: Option<usize>) {
        self.write_budget.set(n);
    }

    fn spend_write(&self) -> Result<()> {
        match self.write_budget.get() {
            Some(0) => Err(Error::io("simulated crash before this write")),
            Some(n) => {
                self.write_budget.set(Some(n - 1));
                Ok(())
            }
            None => Ok(()),
        }
    }

    fn write_at(&self, addr: u64, bytes: &[u8]) -> Result<()> {
        self.spend_write()?;
        let abs = self
            .base
            .checked_add(addr)
            .ok_or_else(|| usage("address overflows"))?;
        self.file.write_all_at(bytes, abs)?;
        Ok(())
    }

    fn read_at(&self, addr: u64, len: u64) -> Result<Vec<u8>> {
        let n = usize::try_from(len).map_err(|_| Error::limit("chunk too large"))?;
        if len > self.ctx.limits.max_read_bytes {
            return Err(Error::limit("chunk exceeds the read limit"));
        }
        let mut buf = vec![0u8; n];
        let abs = self
            .base
            .checked_add(addr)
            .ok_or_else(|| Error::corrupt("address overflows", addr))?;
        self.file
            .read_exact_at(&mut buf, abs)
            .map_err(|e| Error::truncated(alloc::format!("chunk read: {e}"), abs))?;
        Ok(buf)
    }

    fn header(&mut self, addr: u64) -> Result<&mut HeaderImage> {
        if !self.headers.contains_key(&addr) {
            let h = HeaderImage::load(self.reader.storage(), self.ctx, Addr(addr))?;
            self.headers.insert(addr, h);
        }
        if !self.dirty_order.contains(&addr) {
            self.dirty_order.push(addr);
        }
        self.headers
            .get_mut(&addr)
            .ok_or_else(|| usage("header vanished"))
    }

    /// Edit the (staged) header at `a` with an allocator of fresh space
    /// for new continuation chunks.
    fn with_header<R>(
        &mut self,
        a: u64,
        f: impl FnOnce(&mut HeaderImage, &mut dyn FnMut(u64) -> u64) -> R,
    ) -> Result<R> {
        self.header(a)?;
        // The header leaves the map while it is edited, so that the
        // allocator (free lists, end of file) can be borrowed beside it.
        let mut h = self
            .headers
            .remove(&a)
            .ok_or_else(|| usage("header vanished"))?;
        let r = {
            let mut alloc = |len: u64| self.alloc_header(len);
            f(&mut h, &mut alloc)
        };
        self.headers.insert(a, h);
        Ok(r)
    }

    // ---- datasets ----

    fn dataset_state(&mut self, path: &str) -> Result<u64> {
        if let Some(&a) = self.paths.get(path) {
            if self.datasets.contains_key(&a) {
                return Ok(a);
            }
        }
        let ds = self.reader.dataset(path)?;
        let addr = ds.addr().get();
        if self.datasets.contains_key(&addr) {
            self.paths.insert(path.into(), addr);
            return Ok(addr);
        }
        let es = usize::try_from(ds.dtype().size()).map_err(|_| usage("element size"))?;
        if es == 0 {
            return Err(Error::unsupported("elements of size 0"));
        }
        // Variable-length datasets are edited as their stored descriptors
        // (length, global heap collection, index): new elements are placed
        // with `put_varlen` first. Replaced heap objects are not freed
        // (libhdf5 does not free them either).
        let space = ds.space().clone();
        if space.kind != SpaceKind::Simple {
            return Err(Error::unsupported("editing a scalar or null dataset"));
        }
        // Validate the header we will rewrite, and the messages we re-encode.
        let h = self.header(addr)?;
        let Some((_, sm)) = h.find(kind::DATASPACE) else {
            return Err(Error::corrupt("dataset without dataspace message", addr));
        };
        if sm.flags & crate::format::message::flags::SHARED != 0 {
            return Err(Error::unsupported(
                "editing a dataset with a shared dataspace",
            ));
        }
        let space_version = sm.data.first().copied().unwrap_or(1);
        if space.dims.is_empty() {
            return Err(Error::unsupported("editing a rank-0 dataset"));
        }
        let state = match ds.layout().clone() {
            Layout::Chunked(c) => {
                if c.dims.len() != space.dims.len() || c.dims.contains(&0) {
                    return Err(Error::corrupt(
                        "chunk dimensions of the wrong rank or zero",
                        addr,
                    ));
                }
                if c.flags & crate::format::message::layout::FLAG_DONT_FILTER_PARTIAL_EDGE_CHUNKS
                    != 0
                {
                    return Err(Error::unsupported(
                        "editing a dataset whose partial edge chunks are not filtered",
                    ));
                }
                let pipeline = ds.filters().clone();
                for f in &pipeline.filters {
                    let encodable = matches!(f.id, 1..=3 | crate::filter::LZ4)
                        || (f.id == crate::filter::ZSTD && crate::filter::can_encode(f.id));
                    if !encodable {
                        return Err(Error::unsupported(alloc::format!(
                            "writing with filter {} ({})",
                            f.id,
                            crate::filter::filter_name(f.id).unwrap_or("unknown")
                        )));
                    }
                }
                let filtered = !pipeline.filters.is_empty();
                let records = crate::read::chunks::chunk_records(
                    self.reader.storage(),
                    self.ctx,
                    &c,
                    &space.dims,
                    space.max_dims_or_dims(),
                    es,
                    filtered,
                )?;
                let claimed = self.claimed_space();
                let mut map = BTreeMap::new();
                for r in records {
                    self.check_storage(&claimed, r.addr.get(), r.size, "a chunk", addr)?;
                    // Every chunk on the grid and inside the extent: the
                    // rebuilt index and resizes compute with these.
                    let outside = r.offsets.len() < c.dims.len()
                        || r.offsets
                            .iter()
                            .zip(&c.dims)
                            .zip(&space.dims)
                            .any(|((o, d), n)| o % d != 0 || o >= n);
                    if outside {
                        return Err(Error::corrupt(
                            "a chunk outside the dataspace or off the chunk grid",
                            addr,
                        ));
                    }
                    let scaled: Vec<u64> = r
                        .offsets
                        .iter()
                        .zip(&c.dims)
                        .map(|(o, d)| o / (*d).max(1))
                        .collect();
                    let old = map.insert(
                        scaled,
                        Stored {
                            addr: r.addr.get(),
                            size: r.size,
                            mask: r.filter_mask,
                        },
                    );
                    if old.is_some() {
                        return Err(Error::corrupt("a chunk stored twice", addr));
                    }
                }
                let out = match &c.index {
                    ChunkIndex::SingleChunk { filtered, .. } => IndexOut::Single {
                        filtered: filtered.is_some(),
                    },
                    ChunkIndex::BTreeV1 { .. } => IndexOut::BTreeV1,
                    ChunkIndex::Implicit { .. } => IndexOut::Implicit,
                    i => IndexOut::Rebuilt(i.clone()),
                };
                let index_extents = index::index_extents(
                    self.reader.storage(),
                    self.ctx,
                    &c,
                    space.max_dims_or_dims(),
                    chunk_len(&c.dims, es)? as u64,
                )?;
                DsState::Chunked(ChunkedDs {
                    es,
                    orig_dims: space.dims.clone(),
                    dims: space.dims.clone(),
                    max: space.max_dims_or_dims().to_vec(),
                    space_version,
                    chunk: c.dims.clone(),
                    pipeline,
                    fill: ds.fill_bytes(),
                    map,
                    cache: BTreeMap::new(),
                    cache_bytes: 0,
                    spare: Vec::new(),
                    out,
                    index_extents,
                    layout_version: c.layout_version,
                    layout_flags: c.flags,
                    dirty: false,
                })
            }
            Layout::Contiguous { addr: a, size } => {
                let need = space
                    .num_elements()
                    .and_then(|n| n.checked_mul(es as u64))
                    .ok_or_else(|| Error::corrupt("dataset size overflows", addr))?;
                if a.is_undef() {
                    return Err(Error::unsupported(
                        "writing to a contiguous dataset never allocated",
                    ));
                }
                if size < need || self.reader.storage().available(a) < need {
                    return Err(Error::corrupt("contiguous storage too small", addr));
                }
                if !ds.filters().filters.is_empty() {
                    return Err(Error::corrupt("contiguous dataset with filters", addr));
                }
                let claimed = self.claimed_space();
                self.check_storage(&claimed, a.get(), need, "contiguous storage", addr)?;
                DsState::Contig(ContigDs {
                    es,
                    dims: space.dims.clone(),
                    addr: a.get(),
                    len: need,
                })
            }
            _ => {
                return Err(Error::unsupported(
                    "editing compact, external or virtual datasets",
                ))
            }
        };
        self.datasets.insert(addr, state);
        self.dtypes.insert(addr, ds.dtype().clone());
        self.paths.insert(path.into(), addr);
        Ok(addr)
    }

    /// Free and pending-free space, sorted and coalesced. Storage of a
    /// live object never overlaps it, except in a corrupt file where two
    /// objects claim the same bytes and one of them was deleted.
    /// Free space and the space live objects use as far as the editor
    /// holds them (see `live_extents`), sorted and coalesced.
    fn claimed_space(&self) -> Vec<(u64, u64)> {
        let mut all = self.free_space();
        all.extend(self.live_extents());
        space::coalesce(&mut all);
        all
    }

    /// `Corrupt` unless a dataset's storage (`len` bytes at `at`) lies
    /// within the end of file and clear of `claimed` (free space: another
    /// object's, freed; a header chunk, a group structure or another open
    /// dataset's storage: two objects claiming the same bytes). Writes
    /// there would go over the other object, or over space allocated later
    /// at the end of file.
    fn check_storage(
        &self,
        claimed: &[(u64, u64)],
        at: u64,
        len: u64,
        what: &str,
        ds: u64,
    ) -> Result<()> {
        let eof = if self.created.contains(&ds) {
            self.eof
        } else {
            self.open_eof.min(self.eof)
        };
        if at.checked_add(len).is_none_or(|e| e > eof) {
            return Err(Error::corrupt(
                alloc::format!("{what} runs past the end of file"),
                ds,
            ));
        }
        if space::overlaps(claimed, at, len) {
            return Err(Error::corrupt(
                alloc::format!("{what} overlaps free space or another object's storage"),
                ds,
            ));
        }
        Ok(())
    }

    fn free_space(&self) -> Vec<(u64, u64)> {
        let mut all: Vec<(u64, u64)> = self
            .free
            .iter()
            .chain(&self.free_raw)
            .chain(&self.pending_free)
            .chain(&self.pending_free_raw)
            .copied()
            .collect();
        space::coalesce(&mut all);
        all
    }

    /// The current shape of dataset `path`, including uncommitted resizes.
    ///
    /// # Errors
    /// `NotFound`, decode errors.
    pub fn shape(&mut self, path: &str) -> Result<Vec<u64>> {
        let a = self.dataset_state(path)?;
        Ok(match self.datasets.get(&a) {
            Some(DsState::Chunked(c)) => c.dims.clone(),
            Some(DsState::Contig(c)) => c.dims.clone(),
            None => Vec::new(),
        })
    }

    /// Change the extent of chunked dataset `path` within its maximum shape.
    /// Chunks entirely outside the new extent are dropped; the elements of
    /// partial chunks outside it are reset to the fill value (as libhdf5
    /// does), so growing again shows fill values.
    ///
    /// # Errors
    /// `Usage` for a wrong rank or a size beyond the maximum shape, or for a
    /// dataset that is not chunked; decode errors.
    pub fn resize(&mut self, path: &str, new_dims: &[u64]) -> Result<()> {
        let a = self.dataset_state(path)?;
        let Some(DsState::Chunked(mut ds)) = self.datasets.remove(&a) else {
            if let Some(s) = self.datasets.remove(&a) {
                self.datasets.insert(a, s);
            }
            return Err(usage(alloc::format!(
                "{path}: only chunked datasets can be resized"
            )));
        };
        let r = self.resize_inner(&mut ds, path, new_dims);
        self.datasets.insert(a, DsState::Chunked(ds));
        r
    }

    fn resize_inner(&mut self, ds: &mut ChunkedDs, path: &str, new_dims: &[u64]) -> Result<()> {
        if new_dims.len() != ds.dims.len() {
            return Err(usage(alloc::format!(
                "{path}: rank {} given for a dataset of rank {}",
                new_dims.len(),
                ds.dims.len()
            )));
        }
        for (k, (&n, &m)) in new_dims.iter().zip(&ds.max).enumerate() {
            if m != Dataspace::UNLIMITED && n > m {
                return Err(usage(alloc::format!(
                    "{path}: dimension {k} of {n} exceeds the maximum {m}"
                )));
            }
        }
        let clen = chunk_len(&ds.chunk, ds.es)?;
        if new_dims == ds.dims.as_slice() {
            return Ok(());
        }
        // Shrinking: drop or trim chunks.
        if new_dims.iter().zip(&ds.dims).any(|(n, o)| n < o) {
            let keys: Vec<Vec<u64>> = ds.map.keys().chain(ds.cache.keys()).cloned().collect();
            for s in keys {
                let origin: Vec<u64> = s.iter().zip(&ds.chunk).map(|(a, b)| a * b).collect();
                if origin.iter().zip(new_dims).any(|(o, n)| o >= n) {
                    if let Some(st) = ds.map.remove(&s) {
                        self.release_chunk(ds, st);
                    }
                    if let Some(b) = ds.cache.remove(&s) {
                        ds.cache_bytes -= b.len();
                    }
                    continue;
                }
                let partial = origin
                    .iter()
                    .zip(&ds.chunk)
                    .zip(new_dims)
                    .any(|((o, c), n)| o.saturating_add(*c) > *n);
                if partial {
                    let mut buf = self.load_chunk(ds, &s, clen)?;
                    // Reset each slab beyond the new extent.
                    for k in 0..new_dims.len() {
                        let inside = new_dims[k] - origin[k];
                        if inside >= ds.chunk[k] {
                            continue;
                        }
                        let mut start = vec![0u64; ds.chunk.len()];
                        let mut count = ds.chunk.clone();
                        start[k] = inside;
                        count[k] = ds.chunk[k] - inside;
                        fill_box(&mut buf, &ds.chunk, &start, &count, &ds.fill);
                    }
                    self.put_chunk(ds, s, buf);
                }
            }
        }
        ds.dims = new_dims.to_vec();
        ds.dirty = true;
        self.maybe_spill(ds)
    }

    /// Write a box of elements into dataset `path`: `start` and `count` per
    /// dimension, `data` the raw bytes in the file's element format,
    /// row-major over the box. For variable-length datatypes the elements
    /// are in-file descriptors from [`FileEditor::put_varlen`].
    ///
    /// # Errors
    /// `Usage` for a wrong rank, a box outside the current extent or a wrong
    /// data length; decode and filter errors.
    pub fn write_box(
        &mut self,
        path: &str,
        start: &[u64],
        count: &[u64],
        data: &[u8],
    ) -> Result<()> {
        let a = self.dataset_state(path)?;
        let Some(state) = self.datasets.remove(&a) else {
            return Err(usage("dataset state vanished"));
        };
        let r = match &state {
            DsState::Chunked(_) => Ok(()),
            DsState::Contig(_) => Ok(()),
        };
        let mut state = state;
        let r = r.and_then(|()| match &mut state {
            DsState::Chunked(ds) => self.write_box_chunked(ds, path, start, count, data),
            DsState::Contig(ds) => self.write_box_contig(ds, path, start, count, data),
        });
        self.datasets.insert(a, state);
        r
    }

    fn check_box(
        dims: &[u64],
        es: usize,
        path: &str,
        start: &[u64],
        count: &[u64],
        data: &[u8],
    ) -> Result<()> {
        if start.len() != dims.len() || count.len() != dims.len() {
            return Err(usage(alloc::format!(
                "{path}: selection of rank {} for a dataset of rank {}",
                start.len().max(count.len()),
                dims.len()
            )));
        }
        for k in 0..dims.len() {
            let end = start[k].checked_add(count[k]);
            if end.is_none_or(|e| e > dims[k]) {
                return Err(usage(alloc::format!(
                    "{path}: selection beyond dimension {k} of size {}",
                    dims[k]
                )));
            }
        }
        let n = count
            .iter()
            .try_fold(es as u64, |acc, &c| acc.checked_mul(c))
            .ok_or_else(|| usage("selection too large"))?;
        if n != data.len() as u64 {
            return Err(usage(alloc::format!(
                "{path}: {} bytes given for a selection of {n} bytes",
                data.len()
            )));
        }
        Ok(())
    }

    fn write_box_contig(
        &mut self,
        ds: &mut ContigDs,
        path: &str,
        start: &[u64],
        count: &[u64],
        data: &[u8],
    ) -> Result<()> {
        Self::check_box(&ds.dims, ds.es, path, start, count, data)?;
        if count.contains(&0) {
            return Ok(());
        }
        let es = ds.es as u64;
        let mut src = 0usize;
        for_each_run(&ds.dims, start, count, &mut |off, run| {
            let n = usize::try_from(run * es).unwrap_or(0);
            let bytes = data.get(src..src + n).unwrap_or(&[]);
            src += n;
            self.write_at(ds.addr + off * es, bytes)
        })
    }

    fn write_box_chunked(
        &mut self,
        ds: &mut ChunkedDs,
        path: &str,
        start: &[u64],
        count: &[u64],
        data: &[u8],
    ) -> Result<()> {
        Self::check_box(&ds.dims, ds.es, path, start, count, data)?;
        if count.contains(&0) {
            return Ok(());
        }
        let clen = chunk_len(&ds.chunk, ds.es)?;
        let rank = ds.dims.len();
        let first: Vec<u64> = (0..rank).map(|k| start[k] / ds.chunk[k]).collect();
        let last: Vec<u64> = (0..rank)
            .map(|k| (start[k] + count[k] - 1) / ds.chunk[k])
            .collect();
        let mut s = first.clone();
        loop {
            let origin: Vec<u64> = s.iter().zip(&ds.chunk).map(|(a, b)| a * b).collect();
            // Intersection of the box with this chunk.
            let lo: Vec<u64> = (0..rank).map(|k| start[k].max(origin[k])).collect();
            let hi: Vec<u64> = (0..rank)
                .map(|k| (start[k] + count[k]).min(origin[k].saturating_add(ds.chunk[k])))
                .collect();
            let cnt: Vec<u64> = (0..rank).map(|k| hi[k] - lo[k]).collect();
            let whole = cnt == ds.chunk;
            let mut buf = if whole {
                vec![0u8; clen]
            } else {
                self.load_chunk(ds, &s, clen)?
            };
            let in_chunk: Vec<u64> = (0..rank).map(|k| lo[k] - origin[k]).collect();
            let in_box: Vec<u64> = (0..rank).map(|k| lo[k] - start[k]).collect();
            copy_box(
                &mut buf, &ds.chunk, &in_chunk, data, count, &in_box, &cnt, ds.es,
            );
            self.put_chunk(ds, s.clone(), buf);
            // Next chunk coordinate, row-major.
            let mut k = rank;
            loop {
                if k == 0 {
                    return self.maybe_spill(ds);
                }
                k -= 1;
                s[k] += 1;
                if s[k] <= last[k] {
                    break;
                }
                s[k] = first[k];
            }
        }
    }

    /// Write the elements of a selection (a strided/blocked hyperslab or a
    /// point list, as [`crate::data::hyperslab::Selection`]); `data` holds
    /// the selected elements row-major over the selection's output shape
    /// (points: in order).
    ///
    /// # Errors
    /// `Usage` for a selection outside the current extent or a wrong data
    /// length; as [`FileEditor::write_box`].
    pub fn write_selection(
        &mut self,
        path: &str,
        sel: &crate::data::hyperslab::Selection,
        data: &[u8],
    ) -> Result<()> {
        use crate::data::hyperslab::Selection;
        let dims = self.shape(path)?;
        let es = self.element_size(path)?;
        sel.check(&dims)?;
        let n = sel
            .num_elements()
            .and_then(|n| n.checked_mul(es as u64))
            .ok_or_else(|| usage("selection too large"))?;
        if n != data.len() as u64 {
            return Err(usage(alloc::format!(
                "{path}: {} bytes given for a selection of {n} bytes",
                data.len()
            )));
        }
        match sel {
            Selection::Points(points) => {
                let one = vec![1u64; dims.len()];
                for (i, p) in points.iter().enumerate() {
                    let b = data.get(i * es..(i + 1) * es).unwrap_or(&[]);
                    self.write_box(path, p, &one, b)?;
                }
                Ok(())
            }
            Selection::Hyperslab(sd) => {
                if sd.len() != dims.len() {
                    return Err(usage("selection rank differs from the dataset's"));
                }
                let out_shape = sel.out_shape();
                let runs: Vec<Vec<(u64, u64, u64)>> = sd
                    .iter()
                    .zip(&dims)
                    .map(|(s, &d)| s.runs_in(0, d))
                    .collect();
                if runs.iter().any(Vec::is_empty) {
                    return Ok(());
                }
                let mut pick = vec![0usize; dims.len()];
                loop {
                    let start: Vec<u64> = (0..dims.len()).map(|k| runs[k][pick[k]].0).collect();
                    let at: Vec<u64> = (0..dims.len()).map(|k| runs[k][pick[k]].1).collect();
                    let count: Vec<u64> = (0..dims.len()).map(|k| runs[k][pick[k]].2).collect();
                    let len = chunk_len(&count, es)?;
                    let mut part = vec![0u8; len];
                    let zero = vec![0u64; dims.len()];
                    copy_box(&mut part, &count, &zero, data, &out_shape, &at, &count, es);
                    self.write_box(path, &start, &count, &part)?;
                    let mut k = dims.len();
                    loop {
                        if k == 0 {
                            return Ok(());
                        }
                        k -= 1;
                        pick[k] += 1;
                        if pick[k] < runs[k].len() {
                            break;
                        }
                        pick[k] = 0;
                    }
                }
            }
        }
    }

    fn element_size(&mut self, path: &str) -> Result<usize> {
        let a = self.dataset_state(path)?;
        Ok(match self.datasets.get(&a) {
            Some(DsState::Chunked(c)) => c.es,
            Some(DsState::Contig(c)) => c.es,
            None => 0,
        })
    }

    /// Append `data` (whole rows, raw element bytes) along the first
    /// dimension of chunked dataset `path`: grows it and writes the rows.
    ///
    /// # Errors
    /// As [`FileEditor::resize`] and [`FileEditor::write_box`]; `Usage` when
    /// the data is not a whole number of rows.
    pub fn append_raw(&mut self, path: &str, data: &[u8]) -> Result<()> {
        let dims = self.shape(path)?;
        let a = self.dataset_state(path)?;
        let es = match self.datasets.get(&a) {
            Some(DsState::Chunked(c)) => c.es,
            _ => {
                return Err(usage(alloc::format!(
                    "{path}: only chunked datasets can grow"
                )))
            }
        };
        let Some((&first, rest)) = dims.split_first() else {
            return Err(usage("append to a rank-0 dataset"));
        };
        let row = rest
            .iter()
            .try_fold(es as u64, |acc, &c| acc.checked_mul(c))
            .ok_or_else(|| usage("row too large"))?;
        if row == 0 || !(data.len() as u64).is_multiple_of(row) {
            return Err(usage(alloc::format!(
                "{path}: {} bytes is not a whole number of rows of {row} bytes",
                data.len()
            )));
        }
        let n = data.len() as u64 / row;
        let mut new_dims = dims.clone();
        new_dims[0] = first
            .checked_add(n)
            .ok_or_else(|| usage("dimension overflows"))?;
        self.resize(path, &new_dims)?;
        let mut start = vec![0u64; dims.len()];
        start[0] = first;
        let mut count = dims.clone();
        count[0] = n;
        let r = self.write_box(path, &start, &count, data);
        if r.is_err() {
            // Leave the extent as it was.
            let _ = self.resize(path, &dims);
            return r;
        }
        self.write_completed(a, first, new_dims[0])
    }

    /// After an append of rows `from..to` along the first dimension, encode
    /// and write out (to fresh space, referenced only by the next commit)
    /// the cached chunks that the append completed: those it touched that
    /// lie entirely below `to`. Appends thus cost O(rows appended) and
    /// keep only the open edge chunk in memory; the index is written at
    /// the commit.
    fn write_completed(&mut self, a: u64, from: u64, to: u64) -> Result<()> {
        let Some(DsState::Chunked(mut ds)) = self.datasets.remove(&a) else {
            return Ok(());
        };
        let c0 = ds.chunk.first().copied().unwrap_or(1).max(1);
        let (lo, hi) = (from / c0, to / c0);
        let done: Vec<Vec<u64>> = ds
            .cache
            .keys()
            .filter(|s| s.first().is_some_and(|&k| k >= lo && k < hi))
            .cloned()
            .collect();
        let mut r = Ok(());
        for s in done {
            if let Some(raw) = ds.cache.remove(&s) {
                ds.cache_bytes -= raw.len();
                r = self.store_chunk(&mut ds, s, raw);
                if r.is_err() {
                    break;
                }
            }
        }
        self.datasets.insert(a, DsState::Chunked(ds));
        r
    }

    /// Append values of a native type along the first dimension.
    ///
    /// # Errors
    /// As [`FileEditor::append_raw`]; `Usage` when `T` does not match the
    /// dataset's element size.
    pub fn append<T: super::H5Type>(&mut self, path: &str, values: &[T]) -> Result<()> {
        self.check_type::<T>(path)?;
        match T::file_bytes(values) {
            Some(b) => self.append_raw(path, b),
            None => self.append_raw(path, &super::value::to_bytes(values)),
        }
    }

    /// Write values of a native type into a box.
    ///
    /// # Errors
    /// As [`FileEditor::write_box`]; `Usage` when `T` does not match.
    pub fn write<T: super::H5Type>(
        &mut self,
        path: &str,
        start: &[u64],
        count: &[u64],
        values: &[T],
    ) -> Result<()> {
        self.check_type::<T>(path)?;
        self.write_box(path, start, count, &super::value::to_bytes(values))
    }

    fn check_type<T: super::H5Type>(&mut self, path: &str) -> Result<()> {
        let a = self.dataset_state(path)?;
        let want = T::dtype();
        match self.dtypes.get(&a) {
            Some(d) if *d == want => Ok(()),
            Some(d) => Err(usage(alloc::format!(
                "{path}: values of type {want} given for a dataset of {d}"
            ))),
            None => Err(usage(alloc::format!(
                "{path}: values of type {want} given for a dataset of unknown type"
            ))),
        }
    }

    fn load_chunk(&self, ds: &mut ChunkedDs, s: &[u64], clen: usize) -> Result<Vec<u8>> {
        if let Some(b) = ds.cache.remove(s) {
            ds.cache_bytes -= b.len();
            return Ok(b);
        }
        match ds.map.get(s) {
            Some(st) => {
                let raw = self.read_at(st.addr, st.size)?;
                let out = if ds.pipeline.filters.is_empty() {
                    raw
                } else {
                    crate::filter::decode_chunk(&ds.pipeline, st.mask, raw, clen, ds.es)?
                };
                if out.len() != clen {
                    return Err(Error::corrupt("chunk decodes to the wrong size", st.addr));
                }
                Ok(out)
            }
            None => Ok(match ds.spare.pop() {
                Some(mut b) if b.len() == clen => {
                    fill_pattern(&mut b, &ds.fill);
                    b
                }
                _ => ds.fill.repeat(clen / ds.es.max(1)),
            }),
        }
    }

    fn put_chunk(&self, ds: &mut ChunkedDs, s: Vec<u64>, buf: Vec<u8>) {
        ds.cache_bytes += buf.len();
        if let Some(old) = ds.cache.insert(s, buf) {
            ds.cache_bytes -= old.len();
        }
        ds.dirty = true;
    }

    fn maybe_spill(&mut self, ds: &mut ChunkedDs) -> Result<()> {
        if ds.cache_bytes > self.cache_limit {
            self.write_out(ds)?;
        }
        Ok(())
    }

    /// Encode and write every cached chunk to fresh space (not yet referenced).
    fn write_out(&mut self, ds: &mut ChunkedDs) -> Result<()> {
        let cache = core::mem::take(&mut ds.cache);
        ds.cache_bytes = 0;
        for (s, raw) in cache {
            self.store_chunk(ds, s, raw)?;
        }
        Ok(())
    }

    /// Encode one decoded chunk, write it to fresh space and record it in
    /// the chunk map (the replaced chunk is freed after the commit).
    fn store_chunk(&mut self, ds: &mut ChunkedDs, s: Vec<u64>, raw: Vec<u8>) -> Result<()> {
        let (bytes, spare) = if ds.pipeline.filters.is_empty() {
            (raw, None)
        } else {
            let enc = crate::filter::encode_chunk_ref(&ds.pipeline, &raw, ds.es)?;
            (enc, Some(raw))
        };
        let size = bytes.len() as u64;
        if ds.out == IndexOut::BTreeV1 && u32::try_from(size).is_err() {
            return Err(usage("chunk of 4 GiB or more"));
        }
        let addr = self.alloc_raw(size);
        self.write_at(addr, &bytes)?;
        if let Some(old) = ds.map.insert(
            s,
            Stored {
                addr,
                size,
                mask: 0,
            },
        ) {
            // Replaced: free once the commit no longer refers to it.
            self.release_chunk(ds, old);
        }
        let buf = spare.unwrap_or(bytes);
        if ds.spare.len() < SPARE_BUFFERS && !buf.is_empty() {
            ds.spare.push(buf);
        }
        Ok(())
    }

    /// Free (after the next commit) a chunk that commit no longer refers
    /// to, unless it lies in an implicit index's storage, which is freed
    /// whole when a commit rewrites it.
    fn release_chunk(&mut self, ds: &ChunkedDs, st: Stored) {
        let inside = ds.out == IndexOut::Implicit
            && ds
                .index_extents
                .iter()
                .any(|&(a, l)| st.addr >= a && st.addr - a < l);
        if !inside {
            self.pending_free_raw.push((st.addr, st.size));
        }
    }

    /// Build the new index; return the layout message body.
    fn write_index(&mut self, ds: &mut ChunkedDs) -> Result<Vec<u8>> {
        let ctx = self.ctx;
        let layout = match ds.out.clone() {
            IndexOut::Single { filtered } => {
                let st = ds.map.get(&vec![0u64; ds.dims.len()]).copied();
                ChunkedLayout {
                    dims: ds.chunk.clone(),
                    element_size: ds.es as u64,
                    flags: if filtered {
                        crate::format::message::layout::FLAG_SINGLE_INDEX_WITH_FILTER
                    } else {
                        0
                    },
                    index: ChunkIndex::SingleChunk {
                        addr: st.map_or(Addr::UNDEF, |s| Addr(s.addr)),
                        filtered: filtered.then(|| st.map_or((0, 0), |s| (s.size, s.mask))),
                    },
                    layout_version: ds.layout_version,
                }
            }
            IndexOut::BTreeV1 => {
                let old = core::mem::take(&mut ds.index_extents);
                self.pending_free.extend(old);
                let root = if ds.map.is_empty() {
                    Addr::UNDEF
                } else {
                    self.write_btree(ds)?
                };
                ChunkedLayout {
                    dims: ds.chunk.clone(),
                    element_size: ds.es as u64,
                    flags: 0,
                    index: ChunkIndex::BTreeV1 { addr: root },
                    layout_version: 3,
                }
            }
            IndexOut::Rebuilt(template) => {
                let filtered = !ds.pipeline.filters.is_empty();
                let clen = chunk_len(&ds.chunk, ds.es)? as u64;
                let stored = ds
                    .map
                    .iter()
                    .map(|(s, st)| {
                        let offsets = s
                            .iter()
                            .zip(&ds.chunk)
                            .map(|(a, b)| a.checked_mul(*b))
                            .collect::<Option<Vec<u64>>>()
                            .ok_or_else(|| usage("chunk offset overflows"))?;
                        Ok(super::chunked::StoredChunk {
                            offsets,
                            addr: Addr(st.addr),
                            size: st.size,
                            filter_mask: st.mask,
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let g = super::chunked::IndexGeometry {
                    ctx,
                    chunks: &ds.chunk,
                    max_dims: &ds.max,
                    filtered,
                    size_len: super::chunked::size_field(
                        ds.layout_version,
                        ctx.sizes,
                        filtered,
                        clen,
                    ),
                };
                let mut sink = index::EditSink {
                    ed: self,
                    extents: Vec::new(),
                };
                let index = super::chunked::write_index(&mut sink, &g, &template, &stored)?;
                let extents = sink.extents;
                let old = core::mem::replace(&mut ds.index_extents, extents);
                self.pending_free.extend(old);
                ChunkedLayout {
                    dims: ds.chunk.clone(),
                    element_size: ds.es as u64,
                    flags: ds.layout_flags,
                    index,
                    layout_version: ds.layout_version,
                }
            }
            IndexOut::Implicit => {
                let addr = self.write_implicit(ds)?;
                ChunkedLayout {
                    dims: ds.chunk.clone(),
                    element_size: ds.es as u64,
                    flags: ds.layout_flags,
                    index: ChunkIndex::Implicit { addr },
                    layout_version: ds.layout_version,
                }
            }
        };
        let mut enc = Encoder::new();
        Layout::Chunked(layout).encode(&mut enc, ctx)?;
        Ok(enc.into_vec())
    }

    fn write_btree(&mut self, ds: &mut ChunkedDs) -> Result<Addr> {
        let ndims = ds.chunk.len() + 1;
        let key = |s: &[u64], size: u64, mask: u32| -> Result<Key> {
            let mut o = s
                .iter()
                .zip(&ds.chunk)
                .map(|(a, b)| a.checked_mul(*b))
                .collect::<Option<Vec<u64>>>()
                .ok_or_else(|| usage("chunk offset overflows"))?;
            o.push(0);
            Ok(Key::Chunk {
                size: u32::try_from(size).map_err(|_| usage("chunk of 4 GiB or more"))?,
                filter_mask: mask,
                offsets: o,
            })
        };
        let leaves = ds
            .map
            .iter()
            .map(|(s, st)| Ok((key(s, st.size, st.mask)?, Addr(st.addr))))
            .collect::<Result<Vec<_>>>()?;
        let last = ds.map.keys().next_back().cloned().unwrap_or_default();
        let end: Vec<u64> = last.iter().map(|a| a.saturating_add(1)).collect();
        let final_key = key(&end, 0, 0)?;
        let node_len =
            BTreeV1Node::encoded_len(NODE_TYPE_CHUNK, self.ctx.sizes, ndims, self.istore_k)? as u64;
        let cap = 2 * usize::from(self.istore_k);
        let mut extents = Vec::new();
        let (root, nodes) =
            super::chunked::build_btree(NODE_TYPE_CHUNK, leaves, final_key, cap, &mut || {
                let a = self.alloc(node_len);
                extents.push((a, node_len));
                Addr(a)
            });
        for (a, node) in &nodes {
            let mut enc = Encoder::new();
            node.encode(&mut enc, self.ctx, ndims, self.istore_k)?;
            self.write_at(a.get(), enc.as_bytes())?;
        }
        ds.index_extents = extents;
        Ok(root)
    }

    /// Rewrite an implicit index's storage (every chunk over the maximum
    /// dims, in row-major order of the chunk grid) to fresh space: the
    /// chunks of the map, fill values elsewhere. Returns its address.
    fn write_implicit(&mut self, ds: &mut ChunkedDs) -> Result<Addr> {
        let clen = chunk_len(&ds.chunk, ds.es)?;
        let n = index::implicit_chunks(&ds.chunk, &ds.max)?;
        let total = n
            .checked_mul(clen as u64)
            .ok_or_else(|| Error::limit("implicit index size overflows"))?;
        let counts: Vec<u64> = ds
            .max
            .iter()
            .zip(&ds.chunk)
            .map(|(m, c)| m.div_ceil((*c).max(1)))
            .collect();
        let base = self.alloc_raw(total);
        let fill = ds.fill.repeat(clen / ds.es.max(1));
        // Write in runs of about 4 MiB.
        let batch = (4usize << 20) / clen.max(1) + 1;
        let mut buf: Vec<u8> = Vec::new();
        let mut buf_at = base;
        let mut scaled = vec![0u64; counts.len()];
        let mut moved = Vec::new();
        for i in 0..n {
            match ds.map.get(&scaled) {
                Some(st) => {
                    if st.size != clen as u64 {
                        return Err(Error::corrupt("chunk of the wrong size", st.addr));
                    }
                    buf.extend_from_slice(&self.read_at(st.addr, st.size)?);
                    moved.push((i, scaled.clone(), *st));
                }
                None => buf.extend_from_slice(&fill),
            }
            if buf.len() >= batch * clen || i + 1 == n {
                self.write_at(buf_at, &buf)?;
                buf_at += buf.len() as u64;
                buf.clear();
            }
            for k in (0..scaled.len()).rev() {
                scaled[k] += 1;
                if scaled[k] < counts[k] {
                    break;
                }
                scaled[k] = 0;
            }
        }
        // The chunks now live in the new storage; the old storage and the
        // chunks written elsewhere since are freed after the commit.
        for (i, scaled, st) in moved {
            if let Some(m) = ds.map.get_mut(&scaled) {
                m.addr = base + i * clen as u64;
                m.mask = 0;
            }
            self.release_chunk(ds, st);
        }
        // Implicit storage is raw data.
        let old = core::mem::replace(&mut ds.index_extents, vec![(base, total)]);
        self.pending_free_raw.extend(old);
        Ok(Addr(base))
    }

    // ---- commit ----

    /// Commit every change: write pending chunks and indexes to fresh
    /// space, then the superblock's end of file, then each changed object
    /// header chunk in place (one write each), then `fsync`.
    ///
    /// # Errors
    /// `Io`; encode errors (the file then still holds the last commit).
    pub fn flush(&mut self) -> Result<()> {
        self.commit_dense()?;
        // The new SOHM index (fresh space); its master table is switched
        // after the header chunks that dropped the references.
        let sohm_table = self.commit_sohm()?;
        // Collections losing objects: rewritten in place after the header
        // chunks, or freed whole when emptied.
        let gheap_writes = self.commit_gheap();
        // Contiguous datasets stay open as they are (their writes went in
        // place): a deletion must still see the storage they use.
        let addrs: Vec<u64> = self
            .datasets
            .iter()
            .filter(|(_, st)| matches!(st, DsState::Chunked(_)))
            .map(|(a, _)| *a)
            .collect();
        // Dirty chunks in the order: (header addr, grow?) for in-place ordering.
        let mut order: Vec<(u64, bool, Option<usize>, Option<usize>)> = Vec::new();
        for a in addrs {
            let Some(DsState::Chunked(mut ds)) = self.datasets.remove(&a) else {
                continue;
            };
            let r = self.commit_dataset(a, &mut ds);
            let dirty_info = match r {
                Ok(v) => v,
                Err(e) => {
                    self.datasets.insert(a, DsState::Chunked(ds));
                    return Err(e);
                }
            };
            if let Some(info) = dirty_info {
                order.push(info);
            }
            self.datasets.insert(a, DsState::Chunked(ds));
        }
        // 1. Fresh header chunks.
        let mut fresh = Vec::new();
        let mut in_place = Vec::new();
        for a in &self.dirty_order {
            let Some(h) = self.headers.get_mut(a) else {
                continue;
            };
            // A v1 header's prefix counts the messages of all chunks.
            if h.version == 1 && h.chunks.iter().skip(1).any(|c| c.dirty) {
                if let Some(c) = h.chunks.first_mut() {
                    c.dirty = true;
                }
            }
            let info = order.iter().find(|o| o.0 == *a);
            let first = info
                .and_then(|o| if o.1 { o.3 } else { o.2 })
                .or_else(|| self.switch_first.iter().find(|s| s.0 == *a).map(|s| s.1));
            let last = self.switch_last.iter().find(|s| s.0 == *a).map(|s| s.1);
            let mut mine = Vec::new();
            for (ci, c) in h.chunks.iter().enumerate() {
                if !c.dirty {
                    continue;
                }
                if c.fresh {
                    fresh.push((c.addr, h.encode_chunk(ci)?));
                } else {
                    // Order: the dataset's superset chunk first; a v1 chunk 0
                    // touched only for its message count last.
                    let key = if first == Some(ci) {
                        0
                    } else if last == Some(ci) {
                        3
                    } else if ci == 0 && h.version == 1 {
                        2
                    } else {
                        1
                    };
                    mine.push((key, ci, c.addr, h.encode_chunk(ci)?));
                }
            }
            mine.sort_by_key(|m| (m.0, m.1));
            in_place.extend(mine.into_iter().map(|m| (m.2, m.3)));
        }
        for (addr, bytes) in &fresh {
            self.write_at(*addr, bytes)?;
        }
        // Free-space managers that still list space this commit uses are
        // replaced (new ones in fresh space now, switched after the
        // superblock, before anything refers to that space).
        let fsm = self.fsm_before_commit()?;
        // Space allocated but never written (e.g. a slot given back) must
        // still exist before the superblock claims it: libhdf5 refuses a
        // file shorter than its end-of-file address.
        let want_len = self.base.saturating_add(self.eof);
        if self.file.metadata()?.len() < want_len {
            self.file.set_len(want_len)?;
        }
        if self.sync
            && (!fresh.is_empty()
                || sohm_table.is_some()
                || self.eof != self.committed_eof
                || !self.raw_writes.is_empty()
                || fsm.is_some())
        {
            self.file.sync_data()?;
        }
        // 2. The superblock: new end of file; the managers.
        if self.eof != self.committed_eof {
            self.write_eof()?;
        }
        self.fsm_commit_switch(fsm)?;
        // 3. Other metadata in place (symbol tables, heaps), then object
        // header chunks, in the order the operations touched them.
        for (addr, bytes) in core::mem::take(&mut self.raw_writes) {
            self.write_at(addr, &bytes)?;
        }
        for (addr, bytes) in &in_place {
            self.write_at(*addr, bytes)?;
        }
        if let Some((addr, bytes)) = sohm_table {
            self.write_at(addr, &bytes)?;
        }
        for (addr, bytes) in &gheap_writes {
            self.write_at(*addr, bytes)?;
        }
        self.sohm_drops.clear();
        self.sohm_gone.clear();
        self.dirty_order.clear();
        self.switch_first.clear();
        self.switch_last.clear();
        if self.sync {
            self.file.sync_data()?;
        }
        self.committed_eof = self.eof;
        self.paths.clear();
        for h in self.headers.values_mut() {
            for c in &mut h.chunks {
                c.dirty = false;
                c.fresh = false;
            }
        }
        // 4. The freed space: recorded in the managers, or given back at
        // the end of file.
        self.persist_free_space()?;
        self.reader = Self::make_reader(&self.file, self.ctx.limits)?;
        for st in self.datasets.values_mut() {
            if let DsState::Chunked(c) = st {
                c.orig_dims = c.dims.clone();
            }
        }
        Ok(())
    }

    /// Write one dataset's pending chunks and index, and stage its header
    /// change. Returns (header, growing, dataspace chunk, layout chunk).
    #[allow(clippy::type_complexity)]
    fn commit_dataset(
        &mut self,
        a: u64,
        ds: &mut ChunkedDs,
    ) -> Result<Option<(u64, bool, Option<usize>, Option<usize>)>> {
        if !ds.dirty {
            return Ok(None);
        }
        self.write_out(ds)?;
        let layout = self.write_index(ds)?;
        let mut sp = Encoder::new();
        let max = ds.max.clone();
        Dataspace {
            kind: SpaceKind::Simple,
            dims: ds.dims.clone(),
            max_dims: Some(max),
        }
        .encode(&mut sp, self.ctx, ds.space_version)?;
        let growing = ds.dims.iter().zip(&ds.orig_dims).all(|(n, o)| n >= o);
        self.header(a)?;
        let mut h = self
            .headers
            .remove(&a)
            .ok_or_else(|| usage("header vanished"))?;
        let r = self.stage_dataset_header(&mut h, a, &layout, sp.as_bytes());
        self.headers.insert(a, h);
        let (sc, lc) = r?;
        ds.dirty = false;
        Ok(Some((a, growing, sc, lc)))
    }

    /// Replace the layout and dataspace messages of the dataset header `h`
    /// (at `a`, out of the map), new continuation chunks from the
    /// allocator. Returns the chunks then holding the two messages.
    fn stage_dataset_header(
        &mut self,
        h: &mut HeaderImage,
        a: u64,
        layout: &[u8],
        sp: &[u8],
    ) -> Result<(Option<usize>, Option<usize>)> {
        let (sloc, _) = h
            .find(kind::DATASPACE)
            .ok_or_else(|| Error::corrupt("dataset without dataspace", a))?;
        let (lloc, _) = h
            .find(kind::LAYOUT)
            .ok_or_else(|| Error::corrupt("dataset without layout", a))?;
        let mut alloc = |n: u64| self.alloc_header(n);
        h.replace(lloc, layout, &mut alloc);
        // The layout may have moved the dataspace to a new chunk: look again.
        let (sloc2, _) = h
            .find(kind::DATASPACE)
            .ok_or_else(|| Error::corrupt("dataset without dataspace", a))?;
        let _ = sloc;
        h.replace(sloc2, sp, &mut alloc);
        let sc = h.find(kind::DATASPACE).map(|(l, _)| l.0);
        let lc = h.find(kind::LAYOUT).map(|(l, _)| l.0);
        Ok((sc, lc))
    }

    /// Write the superblock with the current end of file.
    fn write_eof(&mut self) -> Result<()> {
        let img = patch_eof(&self.sb_image, self.sb_version, self.ctx.sizes, self.eof)?;
        self.spend_write()?;
        self.file.write_all_at(&img, self.sb_abs)?;
        self.sb_image = img;
        Ok(())
    }

    /// Commit and close.
    ///
    /// # Errors
    /// As [`FileEditor::flush`].
    pub fn close(mut self) -> Result<()> {
        self.flush()
    }
}

// ---- helpers ----

fn chunk_len(chunk: &[u64], es: usize) -> Result<usize> {
    chunk
        .iter()
        .try_fold(es as u64, |acc, &c| acc.checked_mul(c))
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::limit("chunk too large"))
}

/// Superblock length (v0/v1 include the root symbol table entry).
fn superblock_len(version: u8, sizes: crate::Sizes) -> usize {
    let o = usize::from(sizes.offsets);
    let l = usize::from(sizes.lengths);
    match version {
        0 => 24 + 4 * o + (l + o + 4 + 4 + 16),
        1 => 28 + 4 * o + (l + o + 4 + 4 + 16),
        _ => 12 + 4 * o + 4,
    }
}

/// The superblock image with its end-of-file address replaced (and the
/// checksum recomputed for v2/v3).
fn patch_eof(img: &[u8], version: u8, sizes: crate::Sizes, eof: u64) -> Result<Vec<u8>> {
    let o = usize::from(sizes.offsets);
    let at = match version {
        0 => 24 + 2 * o,
        1 => 28 + 2 * o,
        _ => 12 + 2 * o,
    };
    let mut out = img.to_vec();
    let mut enc = Encoder::new();
    enc.put_addr(Addr(eof), sizes);
    out.get_mut(at..at + o)
        .ok_or_else(|| usage("superblock image too short"))?
        .copy_from_slice(enc.as_bytes());
    if version >= 2 {
        let n = out.len() - 4;
        let sum = crate::codec::lookup3(out.get(..n).unwrap_or(&[]), 0);
        out.get_mut(n..)
            .ok_or_else(|| usage("superblock image too short"))?
            .copy_from_slice(&sum.to_le_bytes());
    }
    Ok(out)
}

/// Call `f(element offset, run length)` for each innermost run of the box
/// (`start`, `count`) of an array of shape `shape`, row-major.
fn for_each_run(
    shape: &[u64],
    start: &[u64],
    count: &[u64],
    f: &mut dyn FnMut(u64, u64) -> Result<()>,
) -> Result<()> {
    let rank = shape.len();
    if rank == 0 || count.contains(&0) {
        return Ok(());
    }
    // Merge trailing dimensions that the box covers entirely.
    let mut inner = rank - 1;
    let mut run = count[inner];
    while inner > 0 && count[inner] == shape[inner] && start[inner] == 0 {
        inner -= 1;
        run *= count[inner];
    }
    let mut idx = vec![0u64; inner];
    loop {
        let mut off = 0u64;
        for k in 0..rank {
            let i = if k < inner {
                start[k] + idx[k]
            } else {
                start[k]
            };
            off = off * shape[k] + i;
        }
        f(off, run)?;
        let mut k = inner;
        loop {
            if k == 0 {
                return Ok(());
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < count[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Copy the box `cnt` at `src_at` of `src` (shape `src_shape`) to `dst_at`
/// of `dst` (shape `dst_shape`).
#[allow(clippy::too_many_arguments)]
fn copy_box(
    dst: &mut [u8],
    dst_shape: &[u64],
    dst_at: &[u64],
    src: &[u8],
    src_shape: &[u64],
    src_at: &[u64],
    cnt: &[u64],
    es: usize,
) {
    // Walk element runs along the innermost dimension on both sides.
    let rank = cnt.len();
    let run = usize::try_from(cnt[rank - 1]).unwrap_or(0) * es;
    let mut idx = vec![0u64; rank - 1];
    loop {
        let mut so = 0u64;
        let mut d = 0u64;
        for k in 0..rank {
            let i = if k < rank - 1 { idx[k] } else { 0 };
            so = so * src_shape[k] + src_at[k] + i;
            d = d * dst_shape[k] + dst_at[k] + i;
        }
        let (so, d) = (
            usize::try_from(so).unwrap_or(0) * es,
            usize::try_from(d).unwrap_or(0) * es,
        );
        if let (Some(from), Some(to)) = (src.get(so..so + run), dst.get_mut(d..d + run)) {
            to.copy_from_slice(from);
        }
        let mut k = rank - 1;
        loop {
            if k == 0 {
                return;
            }
            k -= 1;
            idx[k] += 1;
            if idx[k] < cnt[k] {
                break;
            }
            idx[k] = 0;
        }
    }
}

/// Set the box (`start`, `count`) of `buf` (shape `shape`) to the fill element.
/// Fill `buf` with repetitions of the element `fill` (zero when empty).
fn fill_pattern(buf: &mut [u8], fill: &[u8]) {
    if fill.iter().all(|&b| b == 0) {
        buf.fill(0);
        return;
    }
    for el in buf.chunks_mut(fill.len()) {
        el.copy_from_slice(fill.get(..el.len()).unwrap_or(fill));
    }
}

fn fill_box(buf: &mut [u8], shape: &[u64], start: &[u64], count: &[u64], fill: &[u8]) {
    let es = fill.len();
    let _ = for_each_run(shape, start, count, &mut |off, run| {
        let (o, n) = (
            usize::try_from(off).unwrap_or(0) * es,
            usize::try_from(run).unwrap_or(0),
        );
        if let Some(dst) = buf.get_mut(o..o + n * es) {
            for e in dst.chunks_exact_mut(es.max(1)) {
                e.copy_from_slice(fill);
            }
        }
        Ok(())
    });
}
