//! `h5 check`: every valid file passes (corpus files with an expected dump,
//! `testdata/*.h5`), and injected corruption of each class on copies of
//! valid corpus files gives the expected finding.

use h5cli::check::{check_bytes, check_path, is_clean, Finding};
use h5fmt::format::message::{kind, ChunkIndex, Layout, SymbolTableMessage};
use h5fmt::{File, Object};
use std::path::{Path, PathBuf};

fn corpus_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus")
}

fn corpus(rel: &str) -> Vec<u8> {
    std::fs::read(corpus_root().join("files").join(rel)).expect("corpus file")
}

/// Valid files that `h5 check` does not pass, with the reason.
const EXPECTED_FAILURES: &[(&str, &str)] = &[];

fn show(f: &[Finding]) -> String {
    f.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join("\n")
}

fn has(f: &[Finding], needle: &str) -> bool {
    f.iter()
        .any(|x| !x.warning && x.to_string().contains(needle))
}

#[test]
fn valid_files_pass() {
    let root = corpus_root();
    let mut files: Vec<(String, PathBuf)> = Vec::new();
    if let Ok(owners) = std::fs::read_dir(root.join("expected")) {
        for o in owners.flatten() {
            for e in std::fs::read_dir(o.path()).into_iter().flatten().flatten() {
                let name = e.file_name().to_string_lossy().to_string();
                if let Some(stem) = name.strip_suffix(".canon.json") {
                    let rel = format!("{}/{stem}", o.file_name().to_string_lossy());
                    files.push((rel.clone(), root.join("files").join(&rel)));
                }
            }
        }
    }
    let testdata = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    for e in std::fs::read_dir(&testdata).into_iter().flatten().flatten() {
        if e.path().extension().is_some_and(|x| x == "h5") {
            files.push((e.path().display().to_string(), e.path()));
        }
    }
    files.sort();
    let mut bad = Vec::new();
    for (rel, path) in &files {
        let findings = check_path(path);
        let clean = is_clean(&findings, false);
        let expected_bad = EXPECTED_FAILURES.iter().any(|(f, _)| f == rel);
        if clean == expected_bad {
            bad.push(format!(
                "{rel}: {} (expected {})\n{}",
                if clean { "clean" } else { "findings" },
                if expected_bad { "failure" } else { "clean" },
                show(&findings)
            ));
        }
    }
    if files.is_empty() {
        eprintln!("shared corpus not found; nothing checked");
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The first object header of a v2-header file: flip a byte of its checksum.
#[test]
fn flipped_checksum_is_found() {
    let mut b = corpus("jamesmudd__jhdf/jhdf__src__test__resources__hdf5__utf8-fixed-length.hdf5");
    assert!(is_clean(&check_bytes(b.clone()), false));
    let at = b.windows(4).position(|w| w == b"OHDR").expect("OHDR");
    let p = h5fmt::format::object_header::V2Prefix::decode(&mut h5fmt::codec::Cursor::new(
        &b[at..],
        at as u64,
    ))
    .expect("prefix");
    let sum = at + p.prefix_len + p.chunk0_size as usize;
    b[sum] ^= 0x01;
    let f = check_bytes(b);
    assert!(has(&f, "checksum mismatch"), "{}", show(&f));
}

/// A truncated file: the superblock's EOF address is past the end.
#[test]
fn truncation_is_found() {
    let mut b = corpus("wrwilliams__hdf5/tools__testfiles__tobjref.h5");
    b.truncate(b.len() - 100);
    let f = check_bytes(b);
    assert!(has(&f, "past the end of the file"), "{}", show(&f));
}

fn chunk_tree(b: &[u8], path: &str) -> (u64, usize) {
    let f = File::from_bytes(b.to_vec()).expect("open");
    let Object::Dataset(d) = f.object(path).expect("object") else {
        panic!("not a dataset")
    };
    let Layout::Chunked(cl) = d.layout() else {
        panic!("not chunked")
    };
    let ChunkIndex::BTreeV1 { addr } = cl.index else {
        panic!("not a v1 B-tree")
    };
    (addr.0, d.shape().len())
}

const CHUNKED: &str = "wrwilliams__hdf5/tools__testfiles__vds__1_a.h5";

/// Byte offset of child `i` in a v1 chunk B-tree leaf (8-byte offsets).
fn child_at(node: u64, rank: usize, i: usize) -> usize {
    let key = 8 + (rank + 1) * 8;
    node as usize + 24 + key * (i + 1) + 8 * i
}

fn key_at(node: u64, rank: usize, i: usize) -> usize {
    let key = 8 + (rank + 1) * 8;
    node as usize + 24 + (key + 8) * i
}

#[test]
fn chunk_tree_child_past_eof_is_found() {
    let mut b = corpus(CHUNKED);
    assert!(
        is_clean(&check_bytes(b.clone()), false),
        "{}",
        show(&check_bytes(b.clone()))
    );
    let (node, rank) = chunk_tree(&b, "/source_dset");
    let c = child_at(node, rank, 1);
    let past = (b.len() as u64 + 4096).to_le_bytes();
    b[c..c + 8].copy_from_slice(&past);
    let f = check_bytes(b);
    assert!(has(&f, "runs past the end of the file"), "{}", show(&f));
}

#[test]
fn overlapping_chunks_are_found() {
    let mut b = corpus(CHUNKED);
    let (node, rank) = chunk_tree(&b, "/source_dset");
    let c0 = child_at(node, rank, 0);
    let c1 = child_at(node, rank, 1);
    let first: [u8; 8] = b[c0..c0 + 8].try_into().unwrap();
    b[c1..c1 + 8].copy_from_slice(&first);
    let f = check_bytes(b);
    assert!(has(&f, "overlaps chunk"), "{}", show(&f));
}

#[test]
fn chunk_outside_dataspace_is_found() {
    let mut b = corpus(CHUNKED);
    let (node, rank) = chunk_tree(&b, "/source_dset");
    // The last chunk's key: its offset in dimension 1 (fixed size 2).
    let k = key_at(node, rank, 4);
    let off = k + 8 + 8;
    b[off..off + 8].copy_from_slice(&1_000_000u64.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "outside the dataspace"), "{}", show(&f));
}

#[test]
fn chunk_keys_out_of_order_are_found() {
    let mut b = corpus(CHUNKED);
    let (node, rank) = chunk_tree(&b, "/source_dset");
    let (k1, k2) = (key_at(node, rank, 1) + 8, key_at(node, rank, 2) + 8);
    let a: [u8; 8] = b[k1..k1 + 8].try_into().unwrap();
    let c: [u8; 8] = b[k2..k2 + 8].try_into().unwrap();
    b[k1..k1 + 8].copy_from_slice(&c);
    b[k2..k2 + 8].copy_from_slice(&a);
    let f = check_bytes(b);
    assert!(has(&f, "chunk B-tree out of order"), "{}", show(&f));
}

#[test]
fn bad_sibling_link_is_found() {
    let mut b = corpus(CHUNKED);
    let (node, _) = chunk_tree(&b, "/source_dset");
    let left = node as usize + 8;
    b[left..left + 8].copy_from_slice(&0x40u64.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "left sibling"), "{}", show(&f));
}

#[test]
fn contiguous_size_too_small_is_found() {
    let mut b =
        corpus("jamesmudd__jhdf/jhdf__src__test__resources__hdf5__multidim_string_datasest.hdf5");
    assert!(is_clean(&check_bytes(b.clone()), false));
    let f = File::from_bytes(b.clone()).expect("open");
    let o = f.object("/test").expect("test");
    let m = o.header().find(kind::LAYOUT).expect("layout message");
    let body = m.offset as usize;
    assert_eq!((b[body], b[body + 1]), (3, 1), "layout v3, contiguous");
    b[body + 10..body + 18].copy_from_slice(&1u64.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "contiguous storage holds 1 bytes"), "{}", show(&f));
}

#[test]
fn group_names_out_of_order_are_found() {
    let mut b = corpus("wrwilliams__hdf5/tools__testfiles__tobjref.h5");
    assert!(is_clean(&check_bytes(b.clone()), false));
    let f = File::from_bytes(b.clone()).expect("open");
    let o = f.object("/Group1").expect("Group1");
    let m = o.header().find(kind::SYMBOL_TABLE).expect("symbol table");
    let stab = SymbolTableMessage::decode(&mut m.cursor(), f.ctx()).expect("stab");
    let heap =
        h5fmt::read::local_heap::LocalHeap::read(f.storage(), f.ctx(), stab.heap).expect("heap");
    let _ = heap;
    // Rename "Dataset1" (sorted first) to "Zataset1" in the heap's data.
    let at = b
        .windows(9)
        .position(|w| w == b"Dataset1\0")
        .expect("name in the heap");
    b[at] = b'Z';
    let f = check_bytes(b);
    assert!(has(&f, "group B-tree out of order"), "{}", show(&f));
}

#[test]
fn hard_link_past_eof_is_found() {
    let mut b = corpus("wrwilliams__hdf5/tools__testfiles__tobjref.h5");
    let f = File::from_bytes(b.clone()).expect("open");
    let addr = f.object("/Group1/Dataset2").expect("Dataset2").addr().0;
    // Every symbol table entry naming it: its object header address field.
    let pat = addr.to_le_bytes();
    let mut n = 0;
    for i in 0..b.len() - 16 {
        if b[i + 8..i + 16] == pat && i % 8 == 0 {
            b[i + 8..i + 16].copy_from_slice(&(1u64 << 40).to_le_bytes());
            n += 1;
        }
    }
    assert!(n > 0);
    let f = check_bytes(b);
    assert!(
        f.iter()
            .any(|x| !x.warning && x.path.starts_with("/Group1")),
        "{}",
        show(&f)
    );
}

#[test]
fn dangling_object_reference_is_found() {
    let mut b = corpus("wrwilliams__hdf5/tools__testfiles__tobjref.h5");
    let f = File::from_bytes(b.clone()).expect("open");
    let Object::Dataset(d) = f.object("/Dataset3").expect("Dataset3") else {
        panic!("not a dataset")
    };
    assert!(d.dtype().has_references());
    let Layout::Contiguous { addr, .. } = d.layout() else {
        panic!("not contiguous")
    };
    let at = addr.0 as usize;
    b[at..at + 8].copy_from_slice(&0x40u64.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "does not name an object"), "{}", show(&f));
}

/// A reference count below the number of hard links: a warning, an error
/// only under `--strict`.
#[test]
fn low_reference_count_is_a_strict_warning() {
    let mut b = corpus("wrwilliams__hdf5/tools__testfiles__tobjref.h5");
    let f = File::from_bytes(b.clone()).expect("open");
    let o = f.object("/Group1/Dataset1").expect("Dataset1");
    assert_eq!(o.header().version, 1);
    let at = o.addr().0 as usize + 4; // v1 prefix: version, reserved, count, refcount
    assert_eq!(b[at..at + 4], 1u32.to_le_bytes());
    b[at..at + 4].copy_from_slice(&0u32.to_le_bytes());
    let f = check_bytes(b);
    assert!(
        f.iter()
            .any(|x| x.warning && x.message.contains("reference count 0")),
        "{}",
        show(&f)
    );
    assert!(is_clean(&f, false) && !is_clean(&f, true), "{}", show(&f));
}

/// Every hostile file whose whole-file walk fails is reported by `h5 check`
/// (and checking never panics).
#[test]
fn hostile_files_are_not_clean() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/hostile");
    let table = std::fs::read_to_string(dir.join("EXPECTED.tsv")).expect("EXPECTED.tsv");
    let mut n = 0;
    for line in table.lines().filter(|l| !l.starts_with('#')) {
        let Some((file, outcome)) = line.split_once('\t') else {
            continue;
        };
        let f = check_path(&dir.join(file));
        if outcome.trim() != "ok" {
            assert!(!is_clean(&f, false), "{file}: clean\n{}", show(&f));
            n += 1;
        }
    }
    assert!(n >= 5);
}

/// The shared-message master table (`SMTB`, reached through the superblock
/// extension) with one flipped byte under its checksum.
#[test]
fn sohm_table_checksum_is_found() {
    let mut b = corpus("wrwilliams__hdf5/tools__test__h5stat__testfiles__h5stat_tsohm.h5");
    assert!(is_clean(&check_bytes(b.clone()), false));
    let at = b.windows(4).position(|w| w == b"SMTB").expect("SMTB");
    b[at + 4] ^= 0x01;
    let f = check_bytes(b);
    assert!(has(&f, "SOHM master table checksum"), "{}", show(&f));
}

fn testdata_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(name)
}

fn testdata(name: &str) -> Vec<u8> {
    std::fs::read(testdata_path(name)).expect("testdata file")
}

/// Recompute the lookup3 checksum stored in the last 4 bytes of `b[at..at + len]`.
fn reseal(b: &mut [u8], at: usize, len: usize) {
    let sum = h5fmt::codec::lookup3(&b[at..at + len - 4], 0);
    b[at + len - 4..at + len].copy_from_slice(&sum.to_le_bytes());
}

/// The file free-space managers of a testdata file made by libhdf5
/// (`fs_persist=True`): (header offset, header, its sections), decoded from
/// the file space info message.
fn managers(
    b: &[u8],
) -> Vec<(
    usize,
    h5fmt::format::free_space::FreeSpaceHeader,
    Vec<h5fmt::format::free_space::FreeSection>,
)> {
    use h5fmt::codec::Cursor;
    use h5fmt::format::free_space::{decode_sections, FileSpaceInfo, FreeSpaceHeader};
    let f = File::from_bytes(b.to_vec()).expect("open");
    let ctx = f.ctx();
    let ext = f.superblock().extension;
    let h = h5fmt::read::object_header::read_object_header(f.storage(), ext, ctx).expect("ext");
    let m = h.find(kind::FSINFO).expect("file space info message");
    let info = FileSpaceInfo::decode(&mut Cursor::new(&m.data, 0), ctx).expect("fsinfo");
    assert!(info.persist);
    let mut out = Vec::new();
    for a in info.managers.iter().filter_map(|a| a.defined()) {
        let at = a.0 as usize;
        let hdr = FreeSpaceHeader::decode(&mut Cursor::new(&b[at..], a.0), ctx).expect("FSHD");
        let s = hdr.sections_addr.0 as usize;
        let secs =
            decode_sections(&mut Cursor::new(&b[s..], s as u64), &hdr, a, ctx).expect("FSSE");
        out.push((at, hdr, secs));
    }
    out
}

/// Both free-space testdata files (libhdf5, `fs_persist=True`, datasets
/// deleted): managers with sections that add up to the total the header
/// tracks (written independently by libhdf5), and `h5 check` clean. The
/// canonical dump against h5py is in `conformance.rs` (testdata/expected).
#[test]
fn free_space_managers_decode_and_pass() {
    for name in ["freespace_fsm_v110.h5", "freespace_page_v110.h5"] {
        let b = testdata(name);
        let ms = managers(&b);
        assert!(!ms.is_empty(), "{name}: no free-space manager");
        let n: usize = ms.iter().map(|(_, _, s)| s.len()).sum();
        assert!(n > 0, "{name}: no free-space section");
        for (_, hdr, secs) in &ms {
            assert_eq!(hdr.client, 1);
            assert_eq!(secs.len() as u64, hdr.serial_sections);
            assert_eq!(secs.iter().map(|s| s.size).sum::<u64>(), hdr.total_space);
            for s in secs {
                assert!(s.offset + s.size <= b.len() as u64, "{name}: {s:?}");
            }
        }
        let f = check_bytes(b);
        assert!(is_clean(&f, true), "{name}: {}", show(&f));
    }
}

/// A flipped byte under the `FSHD` checksum is reported with its address.
#[test]
fn free_space_header_checksum_is_found() {
    for name in ["freespace_fsm_v110.h5", "freespace_page_v110.h5"] {
        let mut b = testdata(name);
        let (at, _, _) = managers(&b)[0].clone();
        b[at + 8] ^= 0x40; // total space tracked
        let f = check_bytes(b);
        assert!(
            has(&f, "free-space manager header checksum"),
            "{}",
            show(&f)
        );
        assert!(f
            .iter()
            .any(|x| x.addr.is_some_and(|a| a > at as u64 && a < at as u64 + 82)));
    }
}

/// `FSSE` corruption: a flipped byte (checksum); a wrong back-pointer to
/// the header and a section over an allocated structure, each with the
/// checksum recomputed.
#[test]
fn free_space_section_list_corruption_is_found() {
    for name in ["freespace_fsm_v110.h5", "freespace_page_v110.h5"] {
        let orig = testdata(name);
        let ms = managers(&orig);
        let (hat, hdr, secs) = ms
            .iter()
            .find(|(_, _, s)| !s.is_empty())
            .expect("sections")
            .clone();
        let s = hdr.sections_addr.0 as usize;
        let used = hdr.sections_used as usize;

        let mut b = orig.clone();
        b[s + used - 5] ^= 0x01;
        let f = check_bytes(b);
        assert!(has(&f, "free-space section list checksum"), "{}", show(&f));

        let mut b = orig.clone();
        b[s + 5] ^= 0x08; // header address (size of offsets 8)
        reseal(&mut b, s, used);
        let f = check_bytes(b);
        assert!(has(&f, "names header"), "{}", show(&f));

        // The first section moved onto the free-space header itself.
        let file = File::from_bytes(orig.clone()).expect("open");
        assert!(hat > 0);
        let mut b = orig.clone();
        let count_len = h5fmt::format::free_space::limit_enc_size(hdr.serial_sections);
        let size_len = h5fmt::format::free_space::limit_enc_size(hdr.max_section_size);
        let off_len = usize::from(hdr.address_bits).div_ceil(8);
        let off_at = s + 4 + 1 + usize::from(file.ctx().sizes.offsets) + count_len + size_len;
        let target = (hat as u64).to_le_bytes();
        b[off_at..off_at + off_len].copy_from_slice(&target[..off_len]);
        reseal(&mut b, s, used);
        let f = check_bytes(b);
        assert!(
            f.iter().any(|x| {
                let t = x.to_string();
                t.contains("overlaps")
                    && (t.contains("free-space section [") || t.contains("free-space section of"))
            }),
            "{} (sections {secs:?})",
            show(&f)
        );
    }
}

/// Header address of `path` in `b` and the offset of its first v1 message
/// (v1 object header: 16-byte prefix, messages 8-aligned after it).
fn v1_header(b: &[u8], path: &str) -> (usize, usize) {
    let f = File::from_bytes(b.to_vec()).expect("open");
    let a = f.object(path).expect("object").addr().0 as usize;
    assert_eq!(b[a], 1, "{path}: a version 1 object header");
    (a, a + 16)
}

/// The v1 messages of the header at `a`: (offset of the message's 8-byte
/// prefix, type, size).
fn v1_messages(b: &[u8], a: usize) -> Vec<(usize, u16, usize)> {
    let n = u16::from_le_bytes([b[a + 2], b[a + 3]]) as usize;
    let len = u32::from_le_bytes(b[a + 8..a + 12].try_into().unwrap()) as usize;
    let (mut at, end) = (a + 16, a + 16 + len);
    let mut out = Vec::new();
    while out.len() < n && at + 8 <= end {
        let t = u16::from_le_bytes([b[at], b[at + 1]]);
        let s = u16::from_le_bytes([b[at + 2], b[at + 3]]) as usize;
        out.push((at, t, s));
        at += 8 + s;
    }
    out
}

/// The symbol-table message of group `path`: (B-tree, local heap).
fn group_stab(b: &[u8], path: &str) -> (usize, usize) {
    let f = File::from_bytes(b.to_vec()).expect("open");
    let g = f.group(path).expect("group");
    let m = g
        .header()
        .find(kind::SYMBOL_TABLE)
        .expect("symbol table message");
    let s = SymbolTableMessage::decode(&mut h5fmt::codec::Cursor::new(&m.data, 0), f.ctx())
        .expect("stab");
    (s.btree.0 as usize, s.heap.0 as usize)
}

/// Signatures: a v1 B-tree node's `TREE` and a local heap's `HEAP` (no
/// checksum guards them in a superblock-v0 file).
#[test]
fn bad_signatures_are_found() {
    let good = testdata("groups_earliest.h5");
    assert!(is_clean(&check_bytes(good.clone()), false));
    let (tree, heap) = group_stab(&good, "/few");
    for (at, what) in [(tree, "TREE"), (heap, "HEAP")] {
        assert_eq!(&good[at..at + 4], what.as_bytes());
        let mut b = good.clone();
        b[at + 1] ^= 0x20;
        let f = check_bytes(b);
        assert!(has(&f, "signature"), "{what}: {}", show(&f));
    }
}

/// Versions: an object header of version 7 and a dataspace message of
/// version 9.
#[test]
fn bad_versions_are_found() {
    let good = testdata("datasets_earliest.h5");
    assert!(is_clean(&check_bytes(good.clone()), false));
    let (a, _) = v1_header(&good, "/chunked");
    let mut b = good.clone();
    b[a] = 7;
    let f = check_bytes(b);
    assert!(has(&f, "version byte 7"), "{}", show(&f));
    let msgs = v1_messages(&good, a);
    let &(at, _, _) = msgs
        .iter()
        .find(|m| m.1 == kind::DATASPACE)
        .expect("dataspace message");
    let mut b = good.clone();
    b[at + 8] = 9;
    let f = check_bytes(b);
    assert!(has(&f, "version 9"), "{}", show(&f));
}

/// Object header message sizes and flags: a message whose size runs past
/// its header; the shared flag on a type that cannot be shared (the
/// layout: libhdf5 refuses such a header); an unknown message type (a
/// warning) then also flagged "fail if unknown" (an error: libhdf5 refuses
/// the object), in place of the header's null message.
#[test]
fn bad_message_sizes_and_flags_are_found() {
    let good = testdata("datasets_earliest.h5");
    let (a, _) = v1_header(&good, "/chunked");
    let msgs = v1_messages(&good, a);
    let (at, _, _) = msgs[0];
    let mut b = good.clone();
    b[at + 2..at + 4].copy_from_slice(&0xfff0u16.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "/chunked: cannot read object"), "{}", show(&f));
    let &(at, _, _) = msgs
        .iter()
        .find(|m| m.1 == kind::LAYOUT)
        .expect("layout message");
    let mut b = good.clone();
    b[at + 4] |= 0x02;
    let f = check_bytes(b);
    assert!(has(&f, "a type that cannot be shared"), "{}", show(&f));
    let &(at, _, _) = msgs.iter().find(|m| m.1 == 0).expect("null message");
    let mut b = good.clone();
    b[at..at + 2].copy_from_slice(&0x00f0u16.to_le_bytes());
    let f = check_bytes(b.clone());
    assert!(
        is_clean(&f, false),
        "an unknown type alone is a warning: {}",
        show(&f)
    );
    b[at + 4] = 0x80;
    let f = check_bytes(b);
    assert!(has(&f, "marked \"fail if unknown\""), "{}", show(&f));
}

/// Heap free lists: the local heap's free list pointing past its data
/// segment.
#[test]
fn bad_local_heap_free_list_is_found() {
    let good = testdata("groups_earliest.h5");
    let (_, heap) = group_stab(&good, "/few");
    // HEAP, version, 3 reserved, data segment size (8), free list head (8).
    let size = u64::from_le_bytes(good[heap + 8..heap + 16].try_into().unwrap());
    let mut b = good.clone();
    b[heap + 16..heap + 24].copy_from_slice(&(size + 64).to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "free"), "{}", show(&f));
}

/// Dataspace/datatype/layout consistency: a chunked layout whose rank
/// disagrees with the dataspace's, and a datatype of size 0.
#[test]
fn inconsistent_layout_and_datatype_are_found() {
    let good = testdata("datasets_earliest.h5");
    let (a, _) = v1_header(&good, "/chunked");
    let msgs = v1_messages(&good, a);
    let &(at, _, _) = msgs
        .iter()
        .find(|m| m.1 == kind::LAYOUT)
        .expect("layout message");
    // Layout v3, class 2 (chunked): dimensionality (rank + 1) at byte 2.
    assert_eq!((good[at + 8], good[at + 9]), (3, 2));
    let mut b = good.clone();
    b[at + 10] += 1;
    let f = check_bytes(b);
    assert!(has(&f, "/chunked"), "{}", show(&f));
    let &(at, _, _) = msgs
        .iter()
        .find(|m| m.1 == kind::DATATYPE)
        .expect("datatype message");
    let mut b = good.clone();
    b[at + 8 + 4..at + 8 + 8].copy_from_slice(&0u32.to_le_bytes());
    let f = check_bytes(b);
    assert!(has(&f, "/chunked"), "{}", show(&f));
}

mod common;

/// A dense attribute set (100 attributes, every third deleted) and a dense
/// group (100 links, every second deleted) written by libhdf5: their
/// fractal heaps keep free-space managers with sections.
const GEN_HEAP_FS: &str = r#"
import sys, h5py
with h5py.File(sys.argv[1], 'w', libver='latest') as f:
    g = f.create_group('g')
    for i in range(100):
        g.attrs['a%03d' % i] = i
    for i in range(0, 100, 3):
        del g.attrs['a%03d' % i]
    h = f.create_group('h')
    for i in range(100):
        h.create_group('x%03d' % i)
    for i in range(0, 100, 2):
        del h['x%03d' % i]
"#;

/// The free-space manager of the fractal heap behind `/g`'s dense
/// attributes: (header offset, header, section list offset, sections).
fn heap_manager(
    b: &[u8],
) -> (
    usize,
    h5fmt::format::free_space::FreeSpaceHeader,
    usize,
    Vec<h5fmt::format::free_space::FreeSection>,
) {
    use h5fmt::codec::Cursor;
    use h5fmt::format::free_space::{decode_sections, FreeSpaceHeader};
    use h5fmt::format::message::AttributeInfo;
    let f = File::from_bytes(b.to_vec()).expect("open");
    let ctx = f.ctx();
    let g = f.group("/g").expect("g");
    let m = g
        .header()
        .find(kind::ATTRIBUTE_INFO)
        .expect("attribute info");
    let info = AttributeInfo::decode(&mut Cursor::new(&m.data, 0), ctx).expect("info");
    let heap =
        h5fmt::read::fractal_heap::FractalHeap::open(f.storage(), ctx, info.heap).expect("heap");
    let a = heap.header().free_space_manager;
    assert!(!a.is_undef(), "libhdf5 kept a free-space manager");
    let at = a.0 as usize;
    let hdr = FreeSpaceHeader::decode(&mut Cursor::new(&b[at..], a.0), ctx).expect("FSHD");
    let s = hdr.sections_addr.0 as usize;
    let secs = decode_sections(&mut Cursor::new(&b[s..], s as u64), &hdr, a, ctx).expect("FSSE");
    (at, hdr, s, secs)
}

/// Fractal heap free-space managers (client 0) written by libhdf5 decode
/// and pass; a single section moved onto a direct block's header, and a
/// manager whose client is the file, are found.
#[test]
fn fractal_heap_free_space_is_checked() {
    let path = common::scratch("h5cli_check", "heap_fs.h5");
    let Some(_) = common::run_py(GEN_HEAP_FS, &[path.to_str().expect("utf-8")]) else {
        println!("skipped: no python");
        return;
    };
    let good = std::fs::read(&path).expect("read");
    let f = check_bytes(good.clone());
    assert!(is_clean(&f, true), "{}", show(&f));
    let (hdr_at, hdr, s_at, secs) = heap_manager(&good);
    assert_eq!(hdr.client, 0);
    assert!(hdr.serial_sections > 0);
    assert_eq!(secs.iter().map(|s| s.size).sum::<u64>(), hdr.total_space);
    let single = secs
        .iter()
        .position(|s| s.class == 0)
        .expect("a single section");
    // The section list: FSSE, version, header address (8), then the first
    // set's count and size fields, then (offset, class[, data]) records.
    let count_len = h5fmt::format::free_space::limit_enc_size(hdr.serial_sections);
    let size_len = h5fmt::format::free_space::limit_enc_size(hdr.max_section_size);
    let off_len = usize::from(hdr.address_bits).div_ceil(8);
    // Walk the sets to the record of section `single`.
    let le = |at: usize, n: usize| (0..n).fold(0u64, |v, i| v | u64::from(good[at + i]) << (8 * i));
    let (mut at, mut i, mut rec) = (s_at + 13, 0, None);
    while rec.is_none() {
        let n = le(at, count_len) as usize;
        at += count_len + size_len;
        for _ in 0..n {
            if i == single {
                rec = Some(at);
            }
            let class = good[at + off_len];
            at += off_len
                + 1
                + if class == 1 || class == 3 {
                    off_len + 6
                } else {
                    0
                };
            i += 1;
        }
    }
    let rec = rec.expect("record");
    assert_eq!(le(rec, off_len), secs[single].offset);
    let mut b = good.clone();
    b[rec..rec + off_len].fill(0);
    reseal(&mut b, s_at, hdr.sections_used as usize);
    let f = check_bytes(b);
    assert!(
        has(&f, "is not inside the data of a direct block"),
        "{}",
        show(&f)
    );
    let mut b = good.clone();
    b[hdr_at + 5] = 1;
    reseal(&mut b, hdr_at, fshd_len(&good));
    let f = check_bytes(b);
    assert!(has(&f, "not a fractal heap"), "{}", show(&f));
}

/// Bytes of a free-space manager header in the file `b`.
fn fshd_len(b: &[u8]) -> usize {
    let f = File::from_bytes(b.to_vec()).expect("open");
    h5fmt::format::free_space::FreeSpaceHeader::encoded_len(f.ctx())
}

/// The datasets and attributes libhdf5 cannot read, one `path` or
/// `path@attr` per line (file written by argv[1]).
const UNREADABLE: &str = r#"
import sys, h5py
out = []
with h5py.File(sys.argv[1], 'r') as f:
    def visit(name, o):
        p = '/' + name
        if isinstance(o, h5py.Dataset):
            try:
                o[()]
            except Exception:
                out.append(p)
        for a in o.attrs:
            try:
                o.attrs[a]
            except Exception:
                out.append(p + '@' + a)
    visit('', f)
    f.visititems(visit)
print('\n'.join(sorted(out)))
"#;

/// Variable-length data whose global heap objects are gone: the first
/// object of every heap collection gets an index no descriptor names. The
/// datasets libhdf5 (h5py) then fails to read are exactly the ones `h5
/// check` reports, and the untouched file stays clean.
#[test]
fn missing_global_heap_objects_are_found() {
    let good = testdata("dtypes_v110.h5");
    assert!(is_clean(&check_bytes(good.clone()), false));
    let mut b = good.clone();
    let mut n = 0;
    let mut at = 0;
    while let Some(p) = b[at..].windows(4).position(|w| w == b"GCOL") {
        let c = at + p;
        // Signature, version, 3 reserved, 8-byte size; then object 1's index.
        if b[c + 4] == 1 && u16::from_le_bytes([b[c + 16], b[c + 17]]) != 0 {
            b[c + 16..c + 18].copy_from_slice(&0x7777u16.to_le_bytes());
            n += 1;
        }
        at = c + 4;
    }
    assert!(n > 0, "no global heap collection");
    let path = common::scratch("check_gcol", "gone.h5");
    std::fs::write(&path, &b).expect("write");
    let Some(out) = common::run_py(UNREADABLE, &[path.to_str().expect("utf-8")]) else {
        eprintln!("no venv: skipped");
        return;
    };
    // What h5py cannot read in the good file either (opaque tagged data) is not the heap's.
    let orig = testdata_path("dtypes_v110.h5");
    let before = common::run_py(UNREADABLE, &[orig.to_str().expect("utf-8")]).expect("venv");
    let want: Vec<&str> = out
        .lines()
        .filter(|l| !l.is_empty() && !before.lines().any(|b| b == *l))
        .collect();
    assert!(!want.is_empty(), "libhdf5 reads everything");
    let f = check_bytes(b);
    let mut got: Vec<String> = f
        .iter()
        .filter(|x| !x.warning)
        .map(|x| match x.message.split_once("attribute \"") {
            Some((_, rest)) => format!("{}@{}", x.path, rest.split('"').next().unwrap_or_default()),
            None => x.path.clone(),
        })
        .collect();
    got.sort();
    got.dedup();
    assert_eq!(got, want, "{}", show(&f));
}
