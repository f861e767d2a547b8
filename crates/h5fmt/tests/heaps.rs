//! Heaps and B-trees against real files of the shared corpus. Structure
//! addresses are found by scanning for signatures (the object header reader
//! is separate); expected values come from the h5py/libhdf5 canonical dumps
//! in `corpus/expected/` or from h5py (noted where used).

use h5fmt::codec::Cursor;
use h5fmt::data::HeapResolver;
use h5fmt::format::btree_v2::{decode_record, Record};
use h5fmt::format::symbol_table_node::{EntryCache, SymbolTableEntry};
use h5fmt::io::Storage;
use h5fmt::read::btree_v1::{chunk_records, group_entries};
use h5fmt::read::btree_v2::BTreeV2;
use h5fmt::read::fractal_heap::FractalHeap;
use h5fmt::read::global_heap::GlobalHeap;
use h5fmt::read::local_heap::LocalHeap;
use h5fmt::{Addr, Ctx, ErrorKind, Sizes};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");

fn bytes(rel: &str) -> Vec<u8> {
    std::fs::read(format!("{CORPUS}/files/{rel}")).unwrap()
}
fn storage(b: Vec<u8>) -> Storage {
    Storage::new(Arc::new(b))
}
fn find_all(b: &[u8], sig: &[u8]) -> Vec<u64> {
    b.windows(sig.len())
        .enumerate()
        .filter(|(_, w)| *w == sig)
        .map(|(i, _)| i as u64)
        .collect()
}

// ---- a minimal reader for the canonical JSON dumps (oracle) ----

struct Json<'a> {
    s: &'a [u8],
    i: usize,
}
impl<'a> Json<'a> {
    fn ws(&mut self) {
        while self.s.get(self.i).is_some_and(|c| c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    fn string(&mut self) -> String {
        self.ws();
        assert_eq!(self.s[self.i], b'"');
        self.i += 1;
        let mut out = Vec::new();
        loop {
            let c = self.s[self.i];
            self.i += 1;
            match c {
                b'"' => break,
                b'\\' => {
                    let e = self.s[self.i];
                    self.i += 1;
                    match e {
                        b'u' => {
                            let h = std::str::from_utf8(&self.s[self.i..self.i + 4]).unwrap();
                            self.i += 4;
                            let ch = char::from_u32(u32::from_str_radix(h, 16).unwrap())
                                .unwrap_or('\u{fffd}');
                            out.extend_from_slice(ch.to_string().as_bytes());
                        }
                        b'n' => out.push(b'\n'),
                        b't' => out.push(b'\t'),
                        other => out.push(other),
                    }
                }
                c => out.push(c),
            }
        }
        String::from_utf8(out).unwrap()
    }
    fn skip_value(&mut self) {
        self.ws();
        match self.s[self.i] {
            b'"' => {
                self.string();
            }
            b'{' | b'[' => {
                let mut depth = 0;
                loop {
                    self.ws();
                    match self.s[self.i] {
                        b'"' => {
                            self.string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => depth -= 1,
                        _ => {}
                    }
                    self.i += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            _ => {
                while !matches!(self.s[self.i], b',' | b'}' | b']') {
                    self.i += 1;
                }
            }
        }
    }
    /// Keys of the object starting at the cursor; returns them with each value's span.
    fn object(&mut self) -> Vec<(String, usize, usize)> {
        self.ws();
        assert_eq!(self.s[self.i], b'{');
        self.i += 1;
        let mut out = Vec::new();
        loop {
            self.ws();
            if self.s[self.i] == b'}' {
                self.i += 1;
                return out;
            }
            let k = self.string();
            self.ws();
            assert_eq!(self.s[self.i], b':');
            self.i += 1;
            self.ws();
            let start = self.i;
            self.skip_value();
            out.push((k, start, self.i));
            self.ws();
            if self.s[self.i] == b',' {
                self.i += 1;
            }
        }
    }
}

/// path → (link names, attribute names) from a canonical dump.
fn canon(rel: &str) -> BTreeMap<String, (BTreeSet<String>, BTreeSet<String>)> {
    let text = std::fs::read(format!("{CORPUS}/expected/{rel}.canon.json")).unwrap();
    let mut top = Json { s: &text, i: 0 };
    let mut out = BTreeMap::new();
    for (k, s, _) in top.object() {
        if k != "objects" {
            continue;
        }
        let mut objs = Json { s: &text, i: s };
        for (path, os, _) in objs.object() {
            let mut o = Json { s: &text, i: os };
            let mut links = BTreeSet::new();
            let mut attrs = BTreeSet::new();
            for (field, fs, _) in o.object() {
                let mut f = Json { s: &text, i: fs };
                if field == "links" {
                    links = f.object().into_iter().map(|x| x.0).collect();
                } else if field == "attrs" {
                    attrs = f.object().into_iter().map(|x| x.0).collect();
                }
            }
            out.insert(path, (links, attrs));
        }
    }
    out
}

// ---- old-style groups: superblock v0 root entry, v1 B-tree, SNOD, local heap ----

fn v0_root(b: &[u8]) -> (Ctx, SymbolTableEntry) {
    assert_eq!(&b[..8], b"\x89HDF\r\n\x1a\n");
    assert_eq!(b[8], 0, "superblock version 0");
    let sizes = Sizes {
        offsets: b[13],
        lengths: b[14],
    };
    let ctx = Ctx {
        sizes,
        ..Ctx::default()
    };
    let at = 24 + 4 * usize::from(sizes.offsets);
    let e = SymbolTableEntry::decode(&mut Cursor::new(&b[at..], at as u64), ctx).unwrap();
    (ctx, e)
}

/// Walk every group reachable through cached group entries; path → names.
fn walk_v1(
    st: &Storage,
    ctx: Ctx,
    path: &str,
    btree: Addr,
    heap: Addr,
    out: &mut BTreeMap<String, BTreeSet<String>>,
) {
    let lh = LocalHeap::read(st, ctx, heap).unwrap();
    let entries = group_entries(st, ctx, btree).unwrap();
    let mut names = BTreeSet::new();
    let mut prev: Option<String> = None;
    for e in entries {
        let name = lh.string_at(e.name_offset).unwrap();
        // Entries come in B-tree (name) order.
        if let Some(p) = &prev {
            assert!(p.as_str() < name.as_str(), "{p} before {name}");
        }
        prev = Some(name.clone());
        if let EntryCache::Group { btree, heap } = e.cache {
            let child = if path == "/" {
                format!("/{name}")
            } else {
                format!("{path}/{name}")
            };
            walk_v1(st, ctx, &child, btree, heap, out);
        }
        names.insert(name);
    }
    out.insert(path.to_string(), names);
}

fn check_v1_groups(rel: &str, min_groups: usize) {
    let b = bytes(rel);
    let (ctx, root) = v0_root(&b);
    let EntryCache::Group { btree, heap } = root.cache else {
        panic!("root entry without cache")
    };
    let st = storage(b);
    let mut got = BTreeMap::new();
    walk_v1(&st, ctx, "/", btree, heap, &mut got);
    let want = canon(rel);
    assert!(
        got.len() >= min_groups,
        "{rel}: reached {} groups",
        got.len()
    );
    for (path, names) in &got {
        assert_eq!(names, &want[path].0, "{rel}: links of {path}");
    }
}

#[test]
fn v1_groups_nested() {
    check_v1_groups("wrwilliams__hdf5/tools__testfiles__tgrp_comments.h5", 10);
    check_v1_groups("NCAS-CMS__pyfive/tests__data__groups.hdf5", 5);
}

#[test]
fn v1_groups_multilevel_btree() {
    // /large_group has 1000 links under a level-1 group B-tree node.
    check_v1_groups(
        "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_large_group_earliest.hdf5",
        2,
    );
}

#[test]
fn v1_groups_four_byte_sizes() {
    check_v1_groups("wrwilliams__hdf5/test__tsizeslheap.h5", 1);
}

// ---- dense storage: fractal heaps and v2 B-trees ----

/// Name of a link message (IV.A.2.g, version 1).
fn link_name(m: &[u8]) -> String {
    assert_eq!(m[0], 1, "link message version");
    let flags = m[1];
    let mut i = 2;
    if flags & 0x08 != 0 {
        i += 1;
    }
    if flags & 0x04 != 0 {
        i += 8;
    }
    if flags & 0x10 != 0 {
        i += 1;
    }
    let w = 1usize << (flags & 3);
    let mut n = 0usize;
    for k in 0..w {
        n |= usize::from(m[i + k]) << (8 * k);
    }
    i += w;
    String::from_utf8(m[i..i + n].to_vec()).unwrap()
}

/// Name of an attribute message (IV.A.2.m, versions 1–3).
fn attr_name(m: &[u8]) -> String {
    let n = usize::from(u16::from_le_bytes([m[2], m[3]]));
    let start = match m[0] {
        1 | 2 => 8,
        3 => 9,
        v => panic!("attribute message version {v}"),
    };
    let s = &m[start..start + n];
    String::from_utf8(s.strip_suffix(b"\0").unwrap_or(s).to_vec()).unwrap()
}

/// Open every fractal heap of the file; the one whose `get` works for all ids is the match.
fn heaps(st: &Storage, b: &[u8], ctx: Ctx) -> Vec<FractalHeap> {
    find_all(b, b"FRHP")
        .into_iter()
        .filter_map(|a| FractalHeap::open(st, ctx, Addr(a)).ok())
        .collect()
}

fn dense_names(rel: &str, rtype: u8, name_of: fn(&[u8]) -> String) -> Vec<(u64, Vec<String>)> {
    let b = bytes(rel);
    let ctx = Ctx::default();
    let st = storage(b.clone());
    let hs = heaps(&st, &b, ctx);
    assert!(!hs.is_empty());
    let mut out = Vec::new();
    for a in find_all(&b, b"BTHD") {
        let Ok(bt) = BTreeV2::open(&st, ctx, Addr(a)) else {
            continue;
        };
        if bt.record_type() != rtype {
            continue;
        }
        let recs = bt.records().unwrap();
        assert_eq!(recs.len() as u64, bt.header().total_records);
        let ids: Vec<Vec<u8>> =
            recs.iter()
                .map(|r| match decode_record(rtype, r, ctx, 0, 0).unwrap() {
                    Record::LinkName { heap_id, .. }
                    | Record::LinkCreationOrder { heap_id, .. } => heap_id.to_vec(),
                    Record::AttributeName { heap_id, .. }
                    | Record::AttributeCreationOrder { heap_id, .. } => heap_id.to_vec(),
                    r => panic!("unexpected record {r:?}"),
                })
                .collect();
        let heap = hs
            .iter()
            .find(|h| h.id_len() == ids[0].len() && ids.iter().all(|id| h.get(id).is_ok()))
            .expect("a heap holding every id");
        let names = ids
            .iter()
            .map(|id| name_of(&heap.get(id).unwrap()))
            .collect();
        out.push((a, names));
    }
    out
}

fn check_dense_links(rel: &str, min_trees: usize) {
    let want = canon(rel);
    let groups: Vec<&BTreeSet<String>> = want.values().map(|v| &v.0).collect();
    let trees = dense_names(rel, 5, link_name);
    assert!(
        trees.len() >= min_trees,
        "{rel}: {} name indexes",
        trees.len()
    );
    for (a, names) in trees {
        let set: BTreeSet<String> = names.iter().cloned().collect();
        assert_eq!(set.len(), names.len(), "duplicate names");
        assert!(
            groups.contains(&&set),
            "{rel}: names of index at {a:#x} match no group: {set:?}"
        );
    }
}

#[test]
fn dense_links_direct_root() {
    check_dense_links(
        "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_medium_group_latest.hdf5",
        1,
    );
    check_dense_links("NCAS-CMS__pyfive/tests__data__new_style_groups.hdf5", 1);
}

#[test]
fn dense_links_indirect_blocks_and_internal_nodes() {
    // 1000 links: a v2 B-tree of depth > 0 and a heap with a root indirect block.
    let rel = "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_large_group_latest.hdf5";
    let b = bytes(rel);
    let st = storage(b.clone());
    let bt = BTreeV2::open(&st, Ctx::default(), Addr(find_all(&b, b"BTHD")[0])).unwrap();
    assert!(bt.header().depth >= 1);
    assert_eq!(bt.header().total_records, 1000);
    let h = FractalHeap::open(&st, Ctx::default(), Addr(find_all(&b, b"FRHP")[0])).unwrap();
    assert!(h.header().root_rows > 0);
    check_dense_links(rel, 1);
}

#[test]
fn dense_links_creation_order_index() {
    let rel = "NCAS-CMS__pyfive/tests__data__new_style_groups.hdf5";
    let by_name = dense_names(rel, 5, link_name);
    let by_order = dense_names(rel, 6, link_name);
    assert_eq!(by_order.len(), 1);
    let a: BTreeSet<_> = by_name[0].1.iter().collect();
    let b: BTreeSet<_> = by_order[0].1.iter().collect();
    assert_eq!(a, b);
    // h5py (track_order) lists these groups in creation order: group0 … group8.
    let want: Vec<String> = (0..9).map(|i| format!("group{i}")).collect();
    assert_eq!(by_order[0].1, want);
}

#[test]
fn dense_attributes_with_indirect_heap_blocks() {
    let rel = "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_attribute_latest.hdf5";
    let want = canon(rel);
    let objs: Vec<&BTreeSet<String>> = want.values().map(|v| &v.1).collect();
    let trees = dense_names(rel, 8, attr_name);
    assert_eq!(trees.len(), 2);
    for (a, names) in trees {
        let set: BTreeSet<String> = names.into_iter().collect();
        assert!(
            objs.contains(&&set),
            "attribute names at {a:#x} match no object: {set:?}"
        );
    }
}

#[test]
fn huge_object_through_v2_btree() {
    // The 8200 × f64 attribute (65600 bytes) is larger than the heap's
    // managed objects: an indirectly accessed huge object (record type 1).
    let rel = "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_large_attribute.hdf5";
    let b = bytes(rel);
    let st = storage(b.clone());
    let ctx = Ctx::default();
    let heap = FractalHeap::open(&st, ctx, Addr(find_all(&b, b"FRHP")[0])).unwrap();
    let mut found = false;
    for a in find_all(&b, b"BTHD") {
        let bt = BTreeV2::open(&st, ctx, Addr(a)).unwrap();
        if bt.record_type() != 8 {
            continue;
        }
        for r in bt.records().unwrap() {
            let Record::AttributeName { heap_id, .. } = decode_record(8, &r, ctx, 0, 0).unwrap()
            else {
                panic!()
            };
            assert_eq!(heap_id[0] & 0x30, 0x10, "a huge heap id");
            let m = heap.get(&heap_id).unwrap();
            assert_eq!(attr_name(&m), "large_attribute");
            // h5py: values are 0.0, 1.0, … 8199.0; they end the message.
            let data = &m[m.len() - 8200 * 8..];
            for (i, c) in data.chunks(8).enumerate() {
                assert_eq!(f64::from_le_bytes(c.try_into().unwrap()), i as f64);
            }
            found = true;
        }
    }
    assert!(found);
}

// ---- global heap ----

#[test]
fn global_heap_vlen_strings() {
    let rel = "h5py__h5py/h5py__tests__data_files__vlen_string_dset.h5";
    let b = bytes(rel);
    let st = storage(b.clone());
    let gh = GlobalHeap::new(&st, Ctx::default());
    let coll = Addr(find_all(&b, b"GCOL")[0]);
    let mut objs = BTreeSet::new();
    for i in 1..=64u32 {
        match gh.global_heap_object(coll, i) {
            Ok(o) => {
                objs.insert(String::from_utf8(o).unwrap());
            }
            Err(e) => assert_eq!(e.kind(), ErrorKind::Corrupt),
        }
    }
    // The canonical dump's data: ["Parting", "is such", "sweet", "sorrow."].
    let want: BTreeSet<String> = ["Parting", "is such", "sweet", "sorrow."]
        .map(String::from)
        .into();
    assert_eq!(objs, want);
    assert_eq!(
        gh.global_heap_object(coll, 0).unwrap_err().kind(),
        ErrorKind::Corrupt
    );
}

// ---- chunk indexes ----

#[test]
fn v1_chunk_btree_two_levels() {
    // h5py: dataset1 (21, 16) int32, chunks (2, 2): 88 chunks of 16 bytes,
    // first (0,0) at 0xfb0, last (20,14) at 0x1520, Σ addresses 414656,
    // Σ chunk offsets 1496, filter masks 0.
    let b = bytes("NCAS-CMS__pyfive/tests__data__chunked.hdf5");
    let st = storage(b);
    let recs = chunk_records(&st, Ctx::default(), Addr(0x430), 2).unwrap();
    assert_eq!(recs.len(), 88);
    assert_eq!(recs[0].offsets, vec![0, 0]);
    assert_eq!(recs[0].addr, Addr(0xfb0));
    assert_eq!(recs[87].offsets, vec![20, 14]);
    assert_eq!(recs[87].addr, Addr(0x1520));
    assert_eq!(recs.iter().map(|r| r.addr.0).sum::<u64>(), 414_656);
    assert_eq!(
        recs.iter()
            .map(|r| r.offsets.iter().sum::<u64>())
            .sum::<u64>(),
        1496
    );
    assert!(recs.iter().all(|r| r.size == 16 && r.filter_mask == 0));
}

#[test]
fn v2_chunk_btrees() {
    // h5py: two (100, 100) int32 datasets, chunks (10, 10), 100 chunks each;
    // unfiltered Σ addresses 2445360; gzip Σ addresses 6066845, Σ sizes 18225;
    // Σ chunk offsets 9000 (scaled: 900).
    let b = bytes("NCAS-CMS__pyfive/tests__data__btreev2.hdf5");
    let st = storage(b);
    let ctx = Ctx::default();
    let t10 = BTreeV2::open(&st, ctx, Addr(0x1cf)).unwrap();
    assert_eq!(t10.record_type(), 10);
    let mut sum_addr = 0;
    let mut sum_off = 0;
    for r in t10.records().unwrap() {
        let Record::Chunk { addr, scaled } = decode_record(10, &r, ctx, 2, 0).unwrap() else {
            panic!()
        };
        sum_addr += addr.0;
        sum_off += scaled.iter().sum::<u64>();
    }
    assert_eq!((sum_addr, sum_off), (2_445_360, 900));
    let t11 = BTreeV2::open(&st, ctx, Addr(0x301)).unwrap();
    assert_eq!(t11.record_type(), 11);
    // Layout v4, 400-byte chunks: 1 + (8 + 8) / 8 = 3 bytes of chunk size.
    let n = h5fmt::format::btree_v2::chunk_size_len(4, 400, ctx.sizes);
    assert_eq!(n, 3);
    assert_eq!(usize::from(t11.header().record_size), 8 + n + 4 + 16);
    let (mut sa, mut ss, mut so, mut count) = (0, 0, 0, 0);
    let mut prev: Option<Vec<u64>> = None;
    for r in t11.records().unwrap() {
        let Record::FilteredChunk {
            addr,
            size,
            filter_mask,
            scaled,
        } = decode_record(11, &r, ctx, 2, n).unwrap()
        else {
            panic!()
        };
        assert_eq!(filter_mask, 0);
        if let Some(p) = &prev {
            assert!(p < &scaled, "records in key order");
        }
        prev = Some(scaled.clone());
        sa += addr.0;
        ss += size;
        so += scaled.iter().sum::<u64>();
        count += 1;
    }
    assert_eq!((count, sa, ss, so), (100, 6_066_845, 18_225, 900));
}

// ---- hostile inputs ----

#[test]
fn v1_btree_child_pointing_at_itself_is_a_cycle() {
    let mut b = vec![0u8; 0x100];
    let node = 0x40usize;
    // Group node, level 1, one entry, child = itself.
    let mut n = Vec::new();
    n.extend_from_slice(b"TREE\x00\x01\x01\x00");
    n.extend_from_slice(&u64::MAX.to_le_bytes());
    n.extend_from_slice(&u64::MAX.to_le_bytes());
    n.extend_from_slice(&0u64.to_le_bytes());
    n.extend_from_slice(&(node as u64).to_le_bytes());
    n.extend_from_slice(&8u64.to_le_bytes());
    b[node..node + n.len()].copy_from_slice(&n);
    let st = storage(b);
    let e = group_entries(&st, Ctx::default(), Addr(node as u64)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Cycle, "{e}");
    // The same node read as a chunk B-tree has the wrong node type.
    let e = chunk_records(&st, Ctx::default(), Addr(node as u64), 1).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}

#[test]
fn v2_btree_child_pointing_at_its_parent_is_a_cycle() {
    let rel = "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_large_group_latest.hdf5";
    let mut b = bytes(rel);
    let ctx = Ctx::default();
    let bthd = find_all(&b, b"BTHD")[0];
    let bt = BTreeV2::open(&storage(b.clone()), ctx, Addr(bthd)).unwrap();
    let h = *bt.header();
    let g = bt.geometry();
    let depth = usize::from(h.depth);
    let cum = if depth > 1 {
        g.levels[depth - 1].cum_size
    } else {
        0
    };
    let ptr = 8 + g.nrec_size + cum;
    let root = h.root.0 as usize;
    let n = usize::from(h.root_records);
    let first_ptr = root + 6 + n * usize::from(h.record_size);
    b[first_ptr..first_ptr + 8].copy_from_slice(&h.root.0.to_le_bytes());
    let end = first_ptr + (n + 1) * ptr;
    let sum = h5fmt::codec::lookup3(&b[root..end], 0);
    b[end..end + 4].copy_from_slice(&sum.to_le_bytes());
    let e = BTreeV2::open(&storage(b), ctx, Addr(bthd))
        .unwrap()
        .records()
        .unwrap_err();
    // The root seen again one level down: a cycle (or, were the visit not
    // recorded, a depth/record-count mismatch).
    assert_eq!(e.kind(), ErrorKind::Cycle, "{e}");
}

#[test]
fn truncated_nodes() {
    let b = bytes("NCAS-CMS__pyfive/tests__data__chunked.hdf5");
    // Cut the file inside the root chunk node.
    let st = storage(b[..0x440].to_vec());
    let e = chunk_records(&st, Ctx::default(), Addr(0x430), 2).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
    let b = bytes("NCAS-CMS__pyfive/tests__data__btreev2.hdf5");
    let st = storage(b[..0x1000 + 100].to_vec());
    let e = BTreeV2::open(&st, Ctx::default(), Addr(0x1cf))
        .unwrap()
        .records()
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
    let b = bytes("h5py__h5py/h5py__tests__data_files__vlen_string_dset.h5");
    let coll = find_all(&b, b"GCOL")[0] as usize;
    let st = storage(b[..coll + 64].to_vec());
    let e = GlobalHeap::new(&st, Ctx::default())
        .global_heap_object(Addr(coll as u64), 1)
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");
}

#[test]
fn bad_checksums() {
    let rel = "jamesmudd__jhdf/jhdf__src__test__resources__hdf5__test_large_group_latest.hdf5";
    let b = bytes(rel);
    let bthd = find_all(&b, b"BTHD")[0] as usize;
    let frhp = find_all(&b, b"FRHP")[0] as usize;
    let fhib = find_all(&b, b"FHIB")[0] as usize;
    let ctx = Ctx::default();
    // Header byte flips.
    let mut c = b.clone();
    c[bthd + 8] ^= 1;
    assert_eq!(
        BTreeV2::open(&storage(c), ctx, Addr(bthd as u64))
            .unwrap_err()
            .kind(),
        ErrorKind::Checksum
    );
    let mut c = b.clone();
    c[frhp + 12] ^= 1;
    assert_eq!(
        FractalHeap::open(&storage(c), ctx, Addr(frhp as u64))
            .unwrap_err()
            .kind(),
        ErrorKind::Checksum
    );
    // A record byte in the first leaf.
    let st = storage(b.clone());
    let bt = BTreeV2::open(&st, ctx, Addr(bthd as u64)).unwrap();
    let leaf = find_all(&b, b"BTLF")[0] as usize;
    let mut c = b.clone();
    c[leaf + 7] ^= 0x80;
    let bt2 = BTreeV2::open(&storage(c), ctx, Addr(bthd as u64)).unwrap();
    assert_eq!(bt2.records().unwrap_err().kind(), ErrorKind::Checksum);
    // An entry of the root indirect block, and a byte of a direct block.
    let ids: Vec<[u8; 7]> = bt
        .records()
        .unwrap()
        .iter()
        .map(|r| match decode_record(5, r, ctx, 0, 0).unwrap() {
            Record::LinkName { heap_id, .. } => heap_id,
            _ => panic!(),
        })
        .collect();
    let mut c = b.clone();
    c[fhib + 30] ^= 1;
    let h = FractalHeap::open(&storage(c), ctx, Addr(frhp as u64)).unwrap();
    assert_eq!(h.get(&ids[0]).unwrap_err().kind(), ErrorKind::Checksum);
    let fhdb = find_all(&b, b"FHDB")[0] as usize;
    let mut c = b.clone();
    c[fhdb + 40] ^= 1;
    let h = FractalHeap::open(&storage(c), ctx, Addr(frhp as u64)).unwrap();
    let errs: Vec<ErrorKind> = ids
        .iter()
        .filter_map(|id| h.get(id).err())
        .map(|e| e.kind())
        .collect();
    assert!(
        !errs.is_empty() && errs.iter().all(|k| *k == ErrorKind::Checksum),
        "{errs:?}"
    );
}

/// Every signature hit in every corpus file (real structures, stray bytes in
/// raw data, deliberately broken files) is decoded without panicking.
#[test]
fn no_panic_on_any_signature_hit() {
    let ctx = Ctx {
        limits: h5fmt::Limits::tight(),
        ..Ctx::default()
    };
    let mut opened = 0;
    for dir in std::fs::read_dir(format!("{CORPUS}/files")).unwrap() {
        for f in std::fs::read_dir(dir.unwrap().path()).unwrap() {
            let b = std::fs::read(f.unwrap().path()).unwrap();
            let st = storage(b.clone());
            for a in find_all(&b, b"BTHD") {
                if let Ok(bt) = BTreeV2::open(&st, ctx, Addr(a)) {
                    opened += 1;
                    let _ = bt.records();
                }
            }
            for a in find_all(&b, b"FRHP") {
                if let Ok(h) = FractalHeap::open(&st, ctx, Addr(a)) {
                    opened += 1;
                    for k in 0..64u64 {
                        let mut id = vec![0u8; h.id_len()];
                        for (i, x) in id.iter_mut().enumerate().skip(1) {
                            *x = (k.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (i * 5)) as u8;
                        }
                        id[0] = (k as u8 & 3) << 4;
                        let _ = h.get(&id);
                    }
                }
            }
            let gh = GlobalHeap::new(&st, ctx);
            for a in find_all(&b, b"GCOL") {
                for i in 0..4 {
                    let _ = gh.global_heap_object(Addr(a), i);
                }
            }
            for a in find_all(&b, b"TREE") {
                let _ = group_entries(&st, ctx, Addr(a));
                let _ = chunk_records(&st, ctx, Addr(a), 2);
            }
            for a in find_all(&b, b"HEAP") {
                let _ = LocalHeap::read(&st, ctx, Addr(a));
            }
        }
    }
    assert!(opened > 50, "{opened}");
}
