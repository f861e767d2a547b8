//! Walking version 2 B-trees (`BTHD`/`BTIN`/`BTLF`).
//!
//! The walk is an in-order traversal from the root; node addresses are
//! recorded (a node reached twice is a `Cycle`), each child's record count is
//! checked against the capacity of its depth, the depth against
//! `ctx.limits.max_btree_depth` and the number of records against
//! `ctx.limits.max_index_entries`.

use crate::codec::Cursor;
use crate::error::{Error, Result};
use crate::format::btree_v2::{decode_internal, decode_leaf, BTreeV2Header, Geometry};
use crate::io::Storage;
use crate::{Addr, Ctx};
use alloc::collections::BTreeSet;
use alloc::vec::Vec;
use core::cmp::Ordering;

/// Decides whether to descend into a child, given the records bounding its
/// keys (see [`BTreeV2::records_pruned`]).
pub type Descend<'a> = dyn FnMut(Option<&[u8]>, Option<&[u8]>) -> bool + 'a;

/// State of one [`BTreeV2::records_pruned`] walk.
struct Pruned<'a> {
    descend: &'a mut Descend<'a>,
    keep: &'a mut dyn FnMut(&[u8]) -> bool,
    visited: &'a mut BTreeSet<u64>,
    out: &'a mut Vec<Vec<u8>>,
}

/// An opened v2 B-tree.
#[derive(Debug, Clone)]
pub struct BTreeV2 {
    st: Storage,
    ctx: Ctx,
    addr: Addr,
    hdr: BTreeV2Header,
    geom: Geometry,
}

impl BTreeV2 {
    /// Open the B-tree whose header is at `addr`.
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`; `Limit` for a tree deeper than
    /// `ctx.limits.max_btree_depth` or nodes larger than `max_metadata_block`.
    pub fn open(st: &Storage, ctx: Ctx, addr: Addr) -> Result<Self> {
        let len = BTreeV2Header::encoded_len(ctx.sizes) as u64;
        let raw = st.read(addr, len)?;
        let abs = st.absolute(addr, len)?;
        let hdr = BTreeV2Header::decode(&mut Cursor::new(&raw, abs), ctx)?;
        if u64::from(hdr.node_size) > ctx.limits.max_metadata_block {
            return Err(Error::limit(alloc::format!(
                "v2 B-tree nodes of {} bytes",
                hdr.node_size
            )));
        }
        let geom = hdr.geometry(ctx).map_err(|e| e.with_offset(abs))?;
        Ok(BTreeV2 {
            st: st.clone(),
            ctx,
            addr,
            hdr,
            geom,
        })
    }
    /// Record type of this tree.
    pub fn record_type(&self) -> u8 {
        self.hdr.record_type
    }
    /// The decoded header.
    pub fn header(&self) -> &BTreeV2Header {
        &self.hdr
    }
    /// Node capacities per depth.
    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    /// Whether the tree has a root node (`Corrupt` when it has none but
    /// counts records).
    fn has_root(&self) -> Result<bool> {
        if !self.hdr.root.is_undef() {
            return Ok(true);
        }
        if self.hdr.total_records != 0 {
            return Err(Error::corrupt(
                alloc::format!(
                    "v2 B-tree at {}: no root but {} records",
                    self.addr,
                    self.hdr.total_records
                ),
                self.st.base().saturating_add(self.addr.0),
            ));
        }
        Ok(false)
    }

    /// Every record's raw bytes, in key order (in-order traversal).
    ///
    /// # Errors
    /// `Corrupt`, `Checksum`, `Truncated`, `Cycle`, `Limit`.
    pub fn records(&self) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if !self.has_root()? {
            return Ok(out);
        }
        let mut visited = BTreeSet::new();
        let depth = usize::from(self.hdr.depth);
        self.walk(
            self.hdr.root,
            depth,
            u64::from(self.hdr.root_records),
            &mut visited,
            &mut out,
        )?;
        Ok(out)
    }

    /// The records whose key compares `Equal` under `cmp` (a record's key
    /// ordered against the key looked for), visiting only the nodes on the
    /// search paths: O(depth) node reads for distinct keys.
    ///
    /// # Errors
    /// As [`BTreeV2::records`].
    pub fn find(&self, cmp: &mut dyn FnMut(&[u8]) -> Ordering) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if self.hdr.root.is_undef() {
            return Ok(out);
        }
        let mut visited = BTreeSet::new();
        self.search(
            self.hdr.root,
            usize::from(self.hdr.depth),
            u64::from(self.hdr.root_records),
            cmp,
            &mut visited,
            &mut out,
        )?;
        Ok(out)
    }

    /// The records `keep` accepts, in key order, descending only into the
    /// children `descend(lower, upper)` admits, where `lower` and `upper`
    /// are the records bounding the child's keys (exclusive; `None` where
    /// unbounded: at the ends of the root, inherited by the outermost
    /// children of each node). For range and box queries.
    ///
    /// # Errors
    /// As [`BTreeV2::records`].
    pub fn records_pruned(
        &self,
        descend: &mut Descend<'_>,
        keep: &mut dyn FnMut(&[u8]) -> bool,
    ) -> Result<Vec<Vec<u8>>> {
        let mut out = Vec::new();
        if !self.has_root()? {
            return Ok(out);
        }
        let mut visited = BTreeSet::new();
        let mut walk = Pruned {
            descend,
            keep,
            visited: &mut visited,
            out: &mut out,
        };
        self.prune(
            &mut walk,
            self.hdr.root,
            usize::from(self.hdr.depth),
            u64::from(self.hdr.root_records),
            (None, None),
        )?;
        Ok(out)
    }

    fn prune(
        &self,
        w: &mut Pruned<'_>,
        addr: Addr,
        depth: usize,
        nrec: u64,
        (lower, upper): (Option<&[u8]>, Option<&[u8]>),
    ) -> Result<()> {
        let (records, children) = self.node(addr, depth, nrec, w.visited)?;
        let keep = |w: &mut Pruned<'_>, r: &Vec<u8>| -> Result<()> {
            if (w.keep)(r) {
                w.out.push(r.clone());
                if w.out.len() as u64 > self.ctx.limits.max_index_entries {
                    return Err(Error::limit(alloc::format!(
                        "more than {} records in one v2 B-tree",
                        self.ctx.limits.max_index_entries
                    )));
                }
            }
            Ok(())
        };
        if depth == 0 {
            for r in &records {
                keep(w, r)?;
            }
            return Ok(());
        }
        for (i, child) in children.iter().enumerate() {
            // Child i holds the keys between record i-1 and record i.
            let lo = match i.checked_sub(1) {
                None => lower,
                Some(k) => records.get(k).map(Vec::as_slice),
            };
            let hi = records.get(i).map(Vec::as_slice).or(upper);
            if (w.descend)(lo, hi) {
                self.prune(w, child.addr, depth - 1, child.records, (lo, hi))?;
            }
            if let Some(r) = records.get(i) {
                keep(w, r)?;
            }
        }
        Ok(())
    }

    /// Addresses of every node (root, internal, leaf) in walk order; each
    /// node occupies `header().node_size` bytes. For validators.
    ///
    /// # Errors
    /// As [`BTreeV2::records`].
    pub fn node_addrs(&self) -> Result<Vec<Addr>> {
        let mut out = Vec::new();
        if self.hdr.root.is_undef() {
            return Ok(out);
        }
        let mut visited = BTreeSet::new();
        let mut todo = alloc::vec![(
            self.hdr.root,
            usize::from(self.hdr.depth),
            u64::from(self.hdr.root_records)
        )];
        while let Some((addr, depth, nrec)) = todo.pop() {
            let (_, children) = self.node(addr, depth, nrec, &mut visited)?;
            out.push(addr);
            if out.len() as u64 > self.ctx.limits.max_index_entries {
                return Err(Error::limit("too many v2 B-tree nodes"));
            }
            for c in children {
                todo.push((c.addr, depth.saturating_sub(1), c.records));
            }
        }
        Ok(out)
    }

    /// Read and decode one node after the checks every visit makes.
    fn node(
        &self,
        addr: Addr,
        depth: usize,
        nrec: u64,
        visited: &mut BTreeSet<u64>,
    ) -> Result<(Vec<Vec<u8>>, Vec<crate::format::btree_v2::ChildPointer>)> {
        let at = self.st.base().saturating_add(addr.0);
        if addr.is_undef() {
            return Err(Error::corrupt(
                "v2 B-tree node at the undefined address",
                at,
            ));
        }
        if !visited.insert(addr.0) {
            return Err(Error::cycle(
                alloc::format!("v2 B-tree node at {addr} reached twice"),
                at,
            ));
        }
        let level = self.geom.level(depth).map_err(|e| e.with_offset(at))?;
        if nrec > level.max_records {
            return Err(Error::corrupt(
                alloc::format!(
                    "v2 B-tree node at {addr}: {nrec} records, at most {} fit",
                    level.max_records
                ),
                at,
            ));
        }
        let raw = self.st.read(addr, u64::from(self.hdr.node_size))?;
        let mut cur = Cursor::new(&raw, at);
        if depth == 0 {
            return Ok((decode_leaf(&mut cur, &self.hdr, nrec)?, Vec::new()));
        }
        decode_internal(&mut cur, &self.hdr, &self.geom, depth, nrec, self.ctx.sizes)
    }

    fn search(
        &self,
        addr: Addr,
        depth: usize,
        nrec: u64,
        cmp: &mut dyn FnMut(&[u8]) -> Ordering,
        visited: &mut BTreeSet<u64>,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        let (records, children) = self.node(addr, depth, nrec, visited)?;
        let order: Vec<Ordering> = records.iter().map(|r| cmp(r)).collect();
        if depth > 0 {
            for (i, child) in children.iter().enumerate() {
                // Child i holds the keys between record i-1 and record i.
                let lower_ok = i == 0 || order.get(i - 1) != Some(&Ordering::Greater);
                let upper_ok = order.get(i).is_none_or(|o| *o != Ordering::Less);
                if lower_ok && upper_ok {
                    self.search(child.addr, depth - 1, child.records, cmp, visited, out)?;
                }
                if order.get(i) == Some(&Ordering::Equal) {
                    if let Some(r) = records.get(i) {
                        out.push(r.clone());
                    }
                }
            }
        } else {
            for (r, o) in records.iter().zip(&order) {
                if *o == Ordering::Equal {
                    out.push(r.clone());
                }
            }
        }
        if out.len() as u64 > self.ctx.limits.max_index_entries {
            return Err(Error::limit("too many equal keys in one v2 B-tree"));
        }
        Ok(())
    }

    fn walk(
        &self,
        addr: Addr,
        depth: usize,
        nrec: u64,
        visited: &mut BTreeSet<u64>,
        out: &mut Vec<Vec<u8>>,
    ) -> Result<()> {
        let added = (out.len() as u64).saturating_add(nrec);
        if added > self.ctx.limits.max_index_entries {
            return Err(Error::limit(alloc::format!(
                "more than {} records in one v2 B-tree",
                self.ctx.limits.max_index_entries
            )));
        }
        let (records, children) = self.node(addr, depth, nrec, visited)?;
        if depth == 0 {
            out.extend(records);
            return Ok(());
        }
        let mut recs = records.into_iter();
        for (i, child) in children.iter().enumerate() {
            self.walk(child.addr, depth - 1, child.records, visited, out)?;
            if i < children.len() - 1 {
                if let Some(r) = recs.next() {
                    out.push(r);
                }
            }
        }
        Ok(())
    }
}
