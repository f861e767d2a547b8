//! The editor's free space and its persistent form: the file's own
//! free-space managers as libhdf5 writes them (a File Space Info message in
//! the superblock extension naming one `FSHD` + `FSSE` pair per tracked
//! memory type). See the module documentation of `edit` ("Free space").

use super::header::HeaderImage;
use super::FileEditor;
use crate::codec::{Cursor, Encoder};
use crate::error::{Error, Result};
use crate::format::free_space::{
    decode_sections, encode_file_sections, file_sections_len, FileSpaceInfo, FreeSpaceHeader,
};
use crate::format::message::{flags, kind};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::vec::Vec;

/// File space strategy of a version 1 File Space Info message: free-space
/// managers with aggregators (libhdf5's `H5F_FSPACE_STRATEGY_FSM_AGGR`).
const STRATEGY_FSM_AGGR: u8 = 0;
/// Paged aggregation.
const STRATEGY_PAGE: u8 = 1;
/// Manager slots libhdf5 uses with its default (sec2) driver: metadata of
/// every kind maps to the superblock type (slot 0), raw data and global
/// heaps to the raw data type (slot 2) (`H5FD_FLMAP_DICHOTOMY`).
const SLOT_META: usize = 0;
const SLOT_RAW: usize = 2;
/// libhdf5's section list shrink / expand percentages (`H5MF_FSPACE_*`).
const SHRINK_PERCENT: u16 = 80;
const EXPAND_PERCENT: u16 = 120;
/// Section classes the file client declares (simple, small page, large page).
const FILE_CLASSES: u16 = 3;

/// The persistent free-space managers of the file being edited.
#[derive(Debug)]
pub(super) struct Persist {
    /// The superblock extension's header (holding the File Space Info message).
    ext: HeaderImage,
    info: FileSpaceInfo,
    /// Sections the live managers list: (address, size, raw data?), sorted.
    listed: Vec<(u64, u64, bool)>,
    /// Space of the live managers' own structures (headers, section lists).
    structs: Vec<(u64, u64)>,
    address_bits: u16,
    max_section: u64,
}

/// A manager image staged for a switch.
pub(super) struct Staged {
    managers: Vec<Addr>,
    listed: Vec<(u64, u64, bool)>,
    structs: Vec<(u64, u64)>,
}

/// Sort by address and merge touching or overlapping extents.
pub(super) fn coalesce(list: &mut Vec<(u64, u64)>) {
    list.retain(|e| e.1 > 0);
    list.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(list.len());
    for &(a, l) in list.iter() {
        if let Some(last) = out.last_mut() {
            let end = last.0.saturating_add(last.1);
            if a <= end {
                last.1 = a.saturating_add(l).max(end) - last.0;
                continue;
            }
        }
        out.push((a, l));
    }
    *list = out;
}

/// Whether `[a, a + l)` overlaps an extent of `sorted` (sorted by address
/// and coalesced, as [`coalesce`] leaves it).
pub(super) fn overlaps(sorted: &[(u64, u64)], a: u64, l: u64) -> bool {
    let end = a.saturating_add(l);
    let i = sorted.partition_point(|&(b, m)| b.saturating_add(m) <= a);
    l > 0 && sorted.get(i).is_some_and(|&(b, _)| b < end)
}

/// What [`load`] found: the managers (if kept up to date by the editor),
/// the free metadata and raw data sections, and whether the file uses
/// paged aggregation.
pub(super) struct Loaded {
    pub persist: Option<Persist>,
    pub meta: Vec<(u64, u64)>,
    pub raw: Vec<(u64, u64)>,
    /// The page size of a paged aggregation file, else 0.
    pub page_size: u64,
}

/// Read the File Space Info message of the superblock extension at `ext`
/// and, for persistent non-paged free space, every manager's sections.
///
/// # Errors
/// Decode errors of the message and managers; `Corrupt` for sections that
/// overlap each other or the managers, or lie beyond the end of file.
pub(super) fn load(st: &Storage, ctx: Ctx, ext: Option<Addr>, eof: u64) -> Result<Loaded> {
    let mut out = Loaded {
        persist: None,
        meta: Vec::new(),
        raw: Vec::new(),
        page_size: 0,
    };
    let Some(ext) = ext else { return Ok(out) };
    let img = HeaderImage::load(st, ctx, ext)?;
    let Some((_, m)) = img.find(kind::FSINFO) else {
        return Ok(out);
    };
    // libhdf5 ignores a message marked as written by software that did not
    // know it; so does the editor (and leaves it alone).
    if m.flags & flags::WAS_UNKNOWN != 0 {
        return Ok(out);
    }
    let info = FileSpaceInfo::decode(&mut Cursor::new(&m.data, ext.0), ctx)?;
    if info.version == 1 && info.strategy == STRATEGY_PAGE {
        // libhdf5 refuses page sizes below 512 bytes.
        if info.page_size < 512 {
            return Err(Error::corrupt("file space page size below 512", ext.0));
        }
        out.page_size = info.page_size;
    }
    if info.version != 1 || info.strategy != STRATEGY_FSM_AGGR || !info.persist {
        return Ok(out);
    }
    let hlen = FreeSpaceHeader::encoded_len(ctx) as u64;
    let mut structs = Vec::new();
    let mut listed = Vec::new();
    let (mut bits, mut max) = default_bits(ctx);
    for (slot, a) in info.managers.iter().enumerate() {
        let Some(a) = a.defined() else { continue };
        let b = st.read(a, hlen)?;
        let hdr = FreeSpaceHeader::decode(&mut Cursor::new(&b, a.0), ctx)?;
        if hdr.client != 1 {
            return Err(Error::corrupt(
                "file free-space manager of another client",
                a.0,
            ));
        }
        structs.push((a.0, hlen));
        (bits, max) = (hdr.address_bits, hdr.max_section_size);
        if let Some(s) = hdr.sections_addr.defined() {
            let b = st.read(s, hdr.sections_used)?;
            let secs = decode_sections(&mut Cursor::new(&b, s.0), &hdr, a, ctx)?;
            structs.push((s.0, hdr.sections_alloc));
            for sec in secs {
                if sec.class != 0 {
                    return Err(Error::corrupt(
                        "a paged free-space section in a non-paged file",
                        s.0,
                    ));
                }
                listed.push((sec.offset, sec.size, slot == SLOT_RAW));
            }
        }
    }
    listed.sort_unstable();
    // No two extents (sections, manager structures) may overlap, none may
    // pass the end of file.
    let mut all: Vec<(u64, u64)> = listed.iter().map(|s| (s.0, s.1)).collect();
    all.extend(structs.iter().copied());
    all.sort_unstable();
    let mut end = 0u64;
    for &(a, l) in &all {
        let e = a
            .checked_add(l)
            .ok_or_else(|| Error::corrupt("free-space section overflows", a))?;
        if a < end || e > eof {
            return Err(Error::corrupt(
                "free-space section overlapping other free space or past the end of file",
                a,
            ));
        }
        end = e;
    }
    for &(a, l, raw) in &listed {
        if raw {
            out.raw.push((a, l));
        } else {
            out.meta.push((a, l));
        }
    }
    out.persist = Some(Persist {
        ext: img,
        info,
        listed,
        structs,
        address_bits: bits,
        max_section: max,
    });
    Ok(out)
}

/// libhdf5's address-space bits and largest section for the file's size
/// of offsets: 2^(8·offsets − 1) − 1 bytes.
fn default_bits(ctx: Ctx) -> (u16, u64) {
    let bits = (u16::from(ctx.sizes.offsets) * 8).saturating_sub(1).min(63);
    (bits, (1u64 << bits) - 1)
}

impl FileEditor {
    /// Allocate `n` bytes of metadata: first fit in the free space, else at
    /// the end of file.
    pub(super) fn alloc(&mut self, n: u64) -> u64 {
        if self.page_size > 0 {
            return self.alloc_paged(n, false);
        }
        self.take_free(false, n, 0).unwrap_or_else(|| self.bump(n))
    }

    /// First fit for `n` bytes (leaving sections of at least `more` bytes
    /// or none) in the free space of one kind, then of the other (raw data
    /// first when `raw`).
    fn take_free(&mut self, raw: bool, n: u64, more: u64) -> Option<u64> {
        let (first, second) = if raw {
            (&mut self.free_raw, &mut self.free)
        } else {
            (&mut self.free, &mut self.free_raw)
        };
        take_first(first, n, more).or_else(|| take_first(second, n, more))
    }

    /// Allocate `n` bytes of raw data (chunks, contiguous storage).
    pub(super) fn alloc_raw(&mut self, n: u64) -> u64 {
        if self.page_size > 0 {
            return self.alloc_paged(n, true);
        }
        let (threshold, align) = self.alignment;
        if align > 1 && n >= threshold {
            // First fit of an aligned start, raw data space first; else at
            // the end of file rounded up (the gap stays unused).
            if let Some(a) = take_aligned(&mut self.free_raw, n, align)
                .or_else(|| take_aligned(&mut self.free, n, align))
            {
                return a;
            }
            let a = self.eof.div_ceil(align).saturating_mul(align);
            self.eof = a.saturating_add(n);
            return a;
        }
        self.take_free(true, n, 0).unwrap_or_else(|| self.bump(n))
    }

    /// Allocate `n` bytes for a global heap collection: raw data space in
    /// a paged file (libhdf5 maps global heaps to the raw data type, and a
    /// page holds one type), metadata space otherwise.
    pub(super) fn alloc_gheap(&mut self, n: u64) -> u64 {
        if self.page_size > 0 {
            self.alloc_paged(n, true)
        } else {
            self.alloc(n)
        }
    }

    /// Space for a new object header chunk: at the end of file, or as small
    /// metadata in a paged file.
    pub(super) fn alloc_header(&mut self, n: u64) -> u64 {
        if self.page_size > 0 {
            self.alloc_paged(n, false)
        } else {
            self.bump(n)
        }
    }

    /// Paged aggregation, as libhdf5 allocates (`H5MF__alloc_pagefs`): a
    /// block smaller than a page is "small" and lies inside one page that
    /// holds only blocks of its kind (metadata or raw data), taken from the
    /// free space of that kind or from a fresh page whose rest becomes free
    /// space of that kind; a block of a page or more is "large" and starts
    /// on a page boundary, in whole pages of its own (the rest of its last
    /// page is not reused). Fresh pages come from the end of file, which
    /// stays a multiple of the page size.
    fn alloc_paged(&mut self, n: u64, raw: bool) -> u64 {
        let p = self.page_size;
        let n = n.max(1);
        let list = if raw {
            &mut self.free_raw
        } else {
            &mut self.free
        };
        if n < p {
            if let Some(a) = take_in_page(list, n, p) {
                return a;
            }
            let a = self.new_pages(p);
            let list = if raw {
                &mut self.free_raw
            } else {
                &mut self.free
            };
            list.push((a + n, p - n));
            return a;
        }
        if let Some(a) = take_aligned(list, n, p) {
            return a;
        }
        self.new_pages(n.div_ceil(p).saturating_mul(p))
    }

    /// `len` bytes (whole pages) at the end of file, rounded up to a page
    /// boundary first.
    fn new_pages(&mut self, len: u64) -> u64 {
        let p = self.page_size.max(1);
        let a = self.eof.div_ceil(p).saturating_mul(p);
        self.eof = a.saturating_add(len);
        a
    }

    fn bump(&mut self, n: u64) -> u64 {
        let a = self.eof;
        self.eof += n;
        a
    }

    /// Space for a manager structure: from a section at least `n` + the
    /// threshold large (so no section disappears and no manager becomes
    /// empty), else at the end of file.
    fn alloc_fsm(&mut self, n: u64, threshold: u64) -> u64 {
        self.take_free(false, n, threshold.max(1))
            .unwrap_or_else(|| self.bump(n))
    }

    /// Whether the live managers list space that is no longer free (the
    /// editor allocated it since they were written).
    pub(super) fn fsm_stale(&self) -> bool {
        let Some(p) = &self.persist else {
            return false;
        };
        p.listed.iter().any(|&(a, l, _)| {
            !self
                .free
                .iter()
                .chain(&self.free_raw)
                .any(|&(b, m)| b <= a && a.saturating_add(l) <= b.saturating_add(m))
        })
    }

    /// Merge the pending frees of a completed commit into the free lists,
    /// and give free space at the end of file back (the end of file
    /// shrinks), as libhdf5 does.
    pub(super) fn settle_free(&mut self) {
        let meta = core::mem::take(&mut self.pending_free);
        let raw = core::mem::take(&mut self.pending_free_raw);
        if meta.is_empty() && raw.is_empty() {
            return;
        }
        // Extents taken from a file's structures are only as good as the
        // file: one that is empty, starts inside the superblock, ends past
        // the end of file or overlaps space already free (a corrupt file's
        // heap at address 0, two structures claiming the same bytes) is
        // not freed (leaked, never handed out twice or over the superblock).
        // Nor is one that overlaps storage a live object still uses, as far
        // as the editor holds it (open datasets, staged headers, structures
        // it rewrites in place): only a corrupt file has two structures
        // claim the same bytes, and freeing them would let the next
        // allocation overwrite the live one (a group's heap data segment
        // inside its own B-tree node, replaced when the heap grows). A held
        // structure freed whole (a split symbol table node) is released.
        for e in &meta {
            self.held.remove(e);
        }
        let live = self.live_extents();
        let sb_end = self.sb_image.len() as u64;
        let eof = self.eof;
        let structs: Vec<(u64, u64)> = self
            .persist
            .as_ref()
            .map_or_else(Vec::new, |p| p.structs.clone());
        for (list, raw_list) in [(meta, false), (raw, true)] {
            for (a, l) in list {
                let Some(end) = a.checked_add(l).filter(|_| l > 0) else {
                    continue;
                };
                let hit = |&(b, m): &(u64, u64)| a < b.saturating_add(m) && b < end;
                if a < sb_end
                    || end > eof
                    || overlaps(&live, a, l)
                    || self.free.iter().any(hit)
                    || self.free_raw.iter().any(hit)
                    || structs.iter().any(hit)
                {
                    continue;
                }
                if raw_list {
                    self.free_raw.push((a, l));
                } else {
                    self.free.push((a, l));
                }
            }
        }
        coalesce(&mut self.free);
        coalesce(&mut self.free_raw);
        if self.page_size > 0 {
            return;
        }
        loop {
            let eof = self.eof;
            let at_end = |l: &Vec<(u64, u64)>| {
                l.last()
                    .filter(|e| e.0.saturating_add(e.1) == eof)
                    .map(|e| e.0)
            };
            if let Some(a) = at_end(&self.free) {
                self.free.pop();
                self.eof = a;
            } else if let Some(a) = at_end(&self.free_raw) {
                self.free_raw.pop();
                self.eof = a;
            } else {
                break;
            }
        }
    }

    /// Whether the live managers differ from what the free lists say.
    pub(super) fn fsm_differs(&self) -> bool {
        let Some(p) = &self.persist else {
            return false;
        };
        p.listed != self.wanted_sections(p.info.threshold, &[])
    }

    /// The sections the managers should list: the free lists (and `extra`
    /// metadata space), merged, at least the threshold large.
    fn wanted_sections(&self, threshold: u64, extra: &[(u64, u64)]) -> Vec<(u64, u64, bool)> {
        let mut meta = self.free.clone();
        meta.extend_from_slice(extra);
        coalesce(&mut meta);
        let mut raw = self.free_raw.clone();
        coalesce(&mut raw);
        let mut out: Vec<(u64, u64, bool)> = meta
            .into_iter()
            .map(|(a, l)| (a, l, false))
            .chain(raw.into_iter().map(|(a, l)| (a, l, true)))
            .filter(|s| s.1 >= threshold.max(1))
            .collect();
        out.sort_unstable();
        out
    }

    /// Build new managers for the current free lists in fresh space (taken
    /// from the free lists or the end of file) and write them. The space of
    /// the live managers is listed too: it is released by the switch that
    /// makes the new ones live. Returns what [`FileEditor::fsm_switch`]
    /// needs.
    fn fsm_build(&mut self) -> Result<Option<Staged>> {
        let Some(p) = &self.persist else {
            return Ok(None);
        };
        let (threshold, bits, max) = (p.info.threshold, p.address_bits, p.max_section);
        let old = p.structs.clone();
        let ctx = self.ctx;
        let hlen = FreeSpaceHeader::encoded_len(ctx) as u64;
        let hdr_for = |n: u64| FreeSpaceHeader {
            client: 1,
            total_space: 0,
            total_sections: n,
            serial_sections: n,
            ghost_sections: 0,
            num_classes: FILE_CLASSES,
            shrink_percent: SHRINK_PERCENT,
            expand_percent: EXPAND_PERCENT,
            address_bits: bits,
            max_section_size: max,
            sections_addr: Addr::UNDEF,
            sections_used: 0,
            sections_alloc: 0,
        };
        // Size each manager for the sections before the allocations of the
        // new structures, each of which may split one section in two (where
        // it separates free space from an old structure): four more at most.
        let before = self.wanted_sections(threshold, &old);
        let mut places = [None, None];
        for (k, raw) in [false, true].into_iter().enumerate() {
            let n = before.iter().filter(|s| s.2 == raw).count() as u64;
            if n == 0 {
                continue;
            }
            let bound = n + 4;
            let alloc = file_sections_len(&hdr_for(bound), bound, bound, ctx);
            let h = self.alloc_fsm(hlen, threshold);
            let s = self.alloc_fsm(alloc, threshold);
            places[k] = Some((h, s, alloc));
        }
        let after = self.wanted_sections(threshold, &old);
        let mut writes = Vec::new();
        let mut managers = alloc::vec![Addr::UNDEF; 12];
        let mut structs = Vec::new();
        for (k, raw) in [false, true].into_iter().enumerate() {
            let Some((h, s, alloc)) = places[k] else {
                continue;
            };
            let secs: Vec<(u64, u64, u8)> = after
                .iter()
                .filter(|x| x.2 == raw)
                .map(|x| (x.0, x.1, 0))
                .collect();
            let n = secs.len() as u64;
            let mut hdr = hdr_for(n);
            hdr.total_space = secs.iter().map(|x| x.1).fold(0u64, u64::saturating_add);
            hdr.sections_addr = Addr(s);
            hdr.sections_alloc = alloc;
            let mut se = Encoder::new();
            encode_file_sections(&mut se, &hdr, Addr(h), &secs, ctx)?;
            if se.len() as u64 > alloc || n == 0 {
                return Err(Error::usage("free-space section list outgrew its space"));
            }
            // libhdf5 loads a section list as its "used" bytes but keeps
            // it in its cache at the allocated size, and fails (at the
            // close of a read-write session that changes the list: "size
            // of entry changed") when the two differ; it writes them equal,
            // the list zero-padded with the checksum in the last four
            // bytes. So does the editor.
            let mut list = se.into_vec();
            list.truncate(list.len().saturating_sub(4));
            let full =
                usize::try_from(alloc).map_err(|_| Error::usage("free-space section list size"))?;
            list.resize(full.saturating_sub(4), 0);
            let sum = crate::codec::lookup3(&list, 0);
            list.extend_from_slice(&sum.to_le_bytes());
            hdr.sections_used = alloc;
            let mut he = Encoder::new();
            hdr.encode(&mut he, ctx);
            writes.push((h, he.into_vec()));
            writes.push((s, list));
            managers[if raw { SLOT_RAW } else { SLOT_META }] = Addr(h);
            structs.push((h, hlen));
            structs.push((s, alloc));
        }
        for (a, b) in &writes {
            self.write_at(*a, b)?;
        }
        Ok(Some(Staged {
            managers,
            listed: after,
            structs,
        }))
    }

    /// Make staged managers live: rewrite the File Space Info message in
    /// the superblock extension (one write of its chunk), naming them and
    /// the end of file `eof`. The old managers' space joins the free list.
    fn fsm_switch(&mut self, st: Staged, eof: u64) -> Result<()> {
        let ctx = self.ctx;
        let Some(p) = &mut self.persist else {
            return Ok(());
        };
        let mut info = p.info.clone();
        info.managers = st.managers;
        info.eoa_before_fsm = Addr(eof);
        let mut enc = Encoder::new();
        info.encode(&mut enc, ctx)?;
        let Some((loc, m)) = p.ext.find(kind::FSINFO) else {
            return Err(Error::usage("file space info message vanished"));
        };
        if m.data.len() < enc.len() || m.data.len() > enc.len().div_ceil(8) * 8 {
            return Err(Error::unsupported(
                "a file space info message of another size",
            ));
        }
        let mut bytes = enc.into_vec();
        bytes.resize(m.data.len(), 0);
        p.ext.replace(loc, &bytes, &mut |_| 0);
        let chunk = p.ext.encode_chunk(loc.0)?;
        let addr = p
            .ext
            .chunks
            .get(loc.0)
            .map(|c| c.addr)
            .ok_or_else(|| Error::usage("extension chunk vanished"))?;
        p.info = info;
        p.listed = st.listed;
        let old = core::mem::replace(&mut p.structs, st.structs);
        self.write_at(addr, &chunk)?;
        self.free.extend(old);
        coalesce(&mut self.free);
        Ok(())
    }

    /// Before the in-place writes of a commit: when the live managers list
    /// space this commit uses, write managers without it (returned for
    /// [`FileEditor::fsm_switch`] right after the superblock).
    pub(super) fn fsm_before_commit(&mut self) -> Result<Option<Staged>> {
        if !self.fsm_stale() {
            return Ok(None);
        }
        self.fsm_build()
    }

    /// Switch staged managers (see [`FileEditor::fsm_before_commit`]) at
    /// the end of file the superblock now holds.
    pub(super) fn fsm_commit_switch(&mut self, st: Option<Staged>) -> Result<()> {
        match st {
            Some(st) => {
                let eof = self.eof;
                self.fsm_switch(st, eof)
            }
            None => Ok(()),
        }
    }

    /// After a commit: record the freed space (managers listing it, the end
    /// of file shrunk by free space at its end), each step crash-ordered:
    /// new managers are written to fresh space; the superblock's end of
    /// file is written before the switch when it grows, after it when it
    /// shrinks (no live manager then lists space past the end of file);
    /// the file is truncated last.
    pub(super) fn persist_free_space(&mut self) -> Result<()> {
        let committed = self.committed_eof;
        self.settle_free();
        let staged = if self.fsm_differs() {
            self.fsm_build()?
        } else {
            None
        };
        let eof = self.eof;
        if staged.is_none() && eof == committed {
            return Ok(());
        }
        let want_len = self.base.saturating_add(eof);
        if self.file.metadata()?.len() < want_len {
            self.file.set_len(want_len)?;
        }
        if self.sync && staged.is_some() {
            self.file.sync_data()?;
        }
        if eof > committed {
            self.write_eof()?;
            if let Some(st) = staged {
                self.fsm_switch(st, eof)?;
            }
        } else {
            if let Some(st) = staged {
                self.fsm_switch(st, eof)?;
            }
            if eof != committed {
                self.write_eof()?;
            }
        }
        if self.sync {
            self.file.sync_data()?;
        }
        if self.file.metadata()?.len() > want_len {
            self.file.set_len(want_len)?;
        }
        self.committed_eof = eof;
        Ok(())
    }
}

/// Take `n` bytes from the front of the first extent of `list` holding at
/// least `n + more` bytes.
fn take_first(list: &mut Vec<(u64, u64)>, n: u64, more: u64) -> Option<u64> {
    let need = n.checked_add(more)?;
    let i = list.iter().position(|&(_, l)| l >= need)?;
    let (a, l) = *list.get(i)?;
    if l == n {
        list.remove(i);
    } else if let Some(e) = list.get_mut(i) {
        *e = (a + n, l - n);
    }
    Some(a)
}

/// Take `n` (less than the page size `p`) bytes from the first section
/// that holds them inside one page; the section's rest stays free.
fn take_in_page(list: &mut Vec<(u64, u64)>, n: u64, p: u64) -> Option<u64> {
    let (i, s) = list.iter().enumerate().find_map(|(i, &(a, l))| {
        let end = a.checked_add(l)?;
        let last = a.checked_add(n)? - 1;
        let s = if a / p == last / p {
            a
        } else {
            a.div_ceil(p).checked_mul(p)?
        };
        (s.checked_add(n)? <= end).then_some((i, s))
    })?;
    split_out(list, i, s, n);
    Some(s)
}

/// Take `n` bytes starting on a page boundary from the first section that
/// holds them, with the rest of their last page as far as the section
/// goes (that rest is never handed out: a page holding the end of a large
/// block holds nothing else, and what lies past the section, such as the
/// fragment libhdf5's large-block manager lists, is not the editor's).
fn take_aligned(list: &mut Vec<(u64, u64)>, n: u64, p: u64) -> Option<u64> {
    let (i, s, take) = list.iter().enumerate().find_map(|(i, &(a, l))| {
        let end = a.checked_add(l)?;
        let s = a.div_ceil(p).checked_mul(p)?;
        (s.checked_add(n)? <= end).then(|| {
            let span = n.div_ceil(p).saturating_mul(p);
            (i, s, span.min(end - s))
        })
    })?;
    split_out(list, i, s, take);
    Some(s)
}

/// Remove `[s, s + n)` from section `i` (which holds it), keeping the
/// parts before and after.
fn split_out(list: &mut Vec<(u64, u64)>, i: usize, s: u64, n: u64) {
    let Some(&(a, l)) = list.get(i) else { return };
    list.remove(i);
    let (end, cut) = (a + l, s + n);
    if s > a {
        list.push((a, s - a));
    }
    if end > cut {
        list.push((cut, end - cut));
    }
}
