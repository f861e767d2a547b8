//! Metadata cache images (superblock extension message 0x0018 and the `MDCI`
//! block): the block decoder on hand-built bytes laid out as libhdf5's
//! `H5Cimage.c` writes them, the storage overlay, and a real corpus file whose
//! root object header exists only in the image (on disk it is all zeros).
//! Expected values: the file's `h5canon/1` dump (h5py 3.16 / libhdf5 2.0) and,
//! for the dataset values, h5py (`f["DSET"][i, j] == i * j`, checked by hand).

use h5fmt::codec::{lookup3, Cursor};
use h5fmt::format::mdci::{CacheImage, MdciMessage, ENTRY_IN_LRU};
use h5fmt::io::{Overlay, Storage};
use h5fmt::read::LayoutClass;
use h5fmt::{Addr, Ctx, ErrorKind, File, Sizes};
use serde_json::Value as J;
use std::sync::Arc;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus");
const MDC_FILE: &str = "wrwilliams__hdf5/tools__test__misc__testfiles__h5clear_mdc_image.h5";

fn ctx(offsets: u8, lengths: u8) -> Ctx {
    Ctx {
        sizes: Sizes { offsets, lengths },
        ..Ctx::default()
    }
}

/// A cache image block with sizes 8/8 holding `entries` (address, image,
/// parents), checksummed; `tweak` may change the bytes before the checksum.
fn block(entries: &[(u64, &[u8], &[u64])], tweak: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend_from_slice(b"MDCI");
    b.push(0); // version
    b.push(0); // flags
    b.extend_from_slice(&0u64.to_le_bytes()); // data length, patched below
    b.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (i, (addr, image, parents)) in entries.iter().enumerate() {
        b.push(5); // type id (object header)
        b.push(ENTRY_IN_LRU | if parents.is_empty() { 0 } else { 0x08 });
        b.push(1); // ring
        b.push(0); // age
        b.extend_from_slice(&0u16.to_le_bytes()); // fd children
        b.extend_from_slice(&0u16.to_le_bytes()); // dirty fd children
        b.extend_from_slice(&(parents.len() as u16).to_le_bytes());
        b.extend_from_slice(&(i as i32).to_le_bytes()); // LRU rank
        b.extend_from_slice(&addr.to_le_bytes());
        b.extend_from_slice(&(image.len() as u64).to_le_bytes());
        for p in *parents {
            b.extend_from_slice(&p.to_le_bytes());
        }
        b.extend_from_slice(image);
    }
    let total = (b.len() + 4) as u64;
    b[6..14].copy_from_slice(&total.to_le_bytes());
    tweak(&mut b);
    let sum = lookup3(&b, 0);
    b.extend_from_slice(&sum.to_le_bytes());
    b
}

#[test]
fn block_decodes_entries() {
    let b = block(&[(0x30, b"abcdef", &[]), (0x100, b"XY", &[0x30])], |_| {});
    let img = CacheImage::decode(&mut Cursor::new(&b, 0x5000), ctx(8, 8)).unwrap();
    assert_eq!(img.entries.len(), 2);
    assert_eq!(img.entries[0].addr, Addr(0x30));
    assert_eq!(img.entries[0].image, b"abcdef");
    assert_eq!(img.entries[0].type_id, 5);
    assert_eq!(img.entries[0].lru_rank, 0);
    assert_eq!(img.entries[1].addr, Addr(0x100));
    assert_eq!(img.entries[1].image, b"XY");
    assert_eq!(img.entries[1].fd_parents, vec![Addr(0x30)]);
}

#[test]
fn block_rejects_bad_checksum_and_counts() {
    let mut b = block(&[(0x30, b"abcdef", &[])], |_| {});
    let n = b.len();
    b[n - 1] ^= 1;
    let e = CacheImage::decode(&mut Cursor::new(&b, 0), ctx(8, 8)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Checksum);

    // Entry count larger than the bytes can hold (checksum still valid).
    let b = block(&[(0x30, b"abcdef", &[])], |b| {
        b[14..18].copy_from_slice(&1000u32.to_le_bytes())
    });
    let e = CacheImage::decode(&mut Cursor::new(&b, 0), ctx(8, 8)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");

    // Entry size past the end of the block.
    let b = block(&[(0x30, b"abcdef", &[])], |b| {
        let at = 18 + 16 + 8;
        b[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes())
    });
    let e = CacheImage::decode(&mut Cursor::new(&b, 0), ctx(8, 8)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Truncated, "{e}");

    // Data length larger than the block.
    let b = block(&[(0x30, b"abcdef", &[])], |b| {
        b[6..14].copy_from_slice(&9999u64.to_le_bytes())
    });
    let e = CacheImage::decode(&mut Cursor::new(&b, 0), ctx(8, 8)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");

    // Wrong signature.
    let b = block(&[(0x30, b"abcdef", &[])], |b| b[0] = b'X');
    assert!(CacheImage::decode(&mut Cursor::new(&b, 0), ctx(8, 8)).is_err());

    // Every truncation fails cleanly.
    let b = block(&[(0x30, b"abcdef", &[]), (0x100, b"XY", &[0x30])], |_| {});
    for cut in 0..b.len() {
        assert!(CacheImage::decode(&mut Cursor::new(&b[..cut], 0), ctx(8, 8)).is_err());
    }
}

#[test]
fn message_decodes() {
    // The corpus file's message body: version 0, address 0x5620, size 0x58b.
    let body = [
        0u8, 0x20, 0x56, 0, 0, 0, 0, 0, 0, 0x8b, 0x05, 0, 0, 0, 0, 0, 0,
    ];
    let m = MdciMessage::decode(&mut Cursor::new(&body, 0), ctx(8, 8)).unwrap();
    assert_eq!((m.addr, m.len), (Addr(0x5620), 0x58b));
    let mut bad = body;
    bad[0] = 1;
    let e = MdciMessage::decode(&mut Cursor::new(&bad, 0), ctx(8, 8)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}

#[test]
fn storage_overlay_patches_reads() {
    let file: Vec<u8> = (0u8..64).collect();
    let st = Storage::new(Arc::new(file.clone())).with_base(4);
    let mut ov = Overlay::new();
    ov.insert(10, vec![0xAA; 4]); // absolute 14..18
    ov.insert(20, vec![0xBB; 2]); // absolute 24..26
    let st = st.with_overlay(ov).unwrap();
    assert_eq!(st.read(Addr(10), 4).unwrap(), vec![0xAA; 4]);
    assert_eq!(st.read(Addr(11), 2).unwrap(), vec![0xAA; 2]);
    assert_eq!(st.slice(Addr(11), 2).unwrap(), &[0xAA, 0xAA]);
    // Spanning: file bytes around, overlay bytes inside.
    let mut want = file[12..30].to_vec();
    want[2..6].fill(0xAA);
    want[12..14].fill(0xBB);
    assert_eq!(st.read(Addr(8), 18).unwrap(), want);
    assert!(st.slice(Addr(8), 18).is_none());
    let mut buf = [0u8; 18];
    st.read_into(Addr(8), &mut buf).unwrap();
    assert_eq!(&buf[..], &want[..]);
    // Untouched ranges read the file.
    assert_eq!(st.read(Addr(0), 6).unwrap(), file[4..10].to_vec());
    assert_eq!(st.slice(Addr(14), 6).unwrap(), &file[18..24]);
    assert_eq!(st.read(Addr(30), 4).unwrap(), file[34..38].to_vec());
    // The overlay survives a change of base.
    assert_eq!(st.with_base(4).read(Addr(20), 2).unwrap(), vec![0xBB; 2]);

    let mut bad = Overlay::new();
    bad.insert(10, vec![0; 4]);
    bad.insert(12, vec![0; 4]);
    let e = Storage::new(Arc::new(file)).with_overlay(bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
}

fn expected() -> J {
    let p = format!("{CORPUS}/expected/{MDC_FILE}.canon.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

#[test]
fn corpus_file_served_from_cache_image() {
    let path = format!("{CORPUS}/files/{MDC_FILE}");
    let exp = expected();
    let f = File::open(&path).unwrap();
    assert!(f.storage().overlay().is_some_and(|o| o.len() == 4));

    let root = f.root().unwrap();
    let mut names = root.member_names().unwrap();
    names.sort();
    let mut want: Vec<String> = exp["objects"]["/"]["links"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    want.sort();
    assert_eq!(names, want);

    let d = f.dataset("/DSET").unwrap();
    let ed = &exp["objects"]["/DSET"];
    let shape: Vec<u64> = ed["shape"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(d.shape(), &shape[..]);
    assert_eq!(ed["layout"], "chunked");
    assert_eq!(d.layout_class(), LayoutClass::Chunked);
    let vals: Vec<i32> = d.read().unwrap();
    assert_eq!(vals.len(), 50 * 100);
    for (k, v) in vals.iter().enumerate() {
        let (i, j) = (k / 100, k % 100);
        assert_eq!(*v as usize, i * j, "DSET[{i}, {j}]");
    }
}

#[test]
fn corpus_file_without_the_image_is_stale() {
    // The same bytes with the message type patched to NIL: the root object
    // header is read from disk, where it is zeros.
    let mut b = std::fs::read(format!("{CORPUS}/files/{MDC_FILE}")).unwrap();
    // v2 superblock extension header at 0x52d; its only message starts after
    // the 4+1+1+16 byte prefix and the 1-byte chunk size (22): type at 0x544.
    // The chunk's checksum follows at 0x55a.
    assert_eq!(b[0x544], 0x18);
    let stored = u32::from_le_bytes(b[0x55a..0x55e].try_into().unwrap());
    assert_eq!(lookup3(&b[0x52d..0x55a], 0), stored);
    b[0x544] = 0;
    let sum = lookup3(&b[0x52d..0x55a], 0);
    b[0x55a..0x55e].copy_from_slice(&sum.to_le_bytes());
    let f = File::from_bytes(b).unwrap();
    assert!(f.storage().overlay().is_none());
    assert!(f.root().is_err());
}

const TESTDATA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata");

#[test]
fn generated_file_with_cache_image() {
    // testdata/generate.py `gen_mdc_image`; libhdf5 reads it back the same
    // (testdata/expected/mdc_image_v200.h5.canon.json, checked by h5cli's
    // conformance test). Values as written by the generator.
    let f = File::open(format!("{TESTDATA}/mdc_image_v200.h5")).unwrap();
    assert!(f.storage().overlay().is_some());
    let mut names = f.root().unwrap().member_names().unwrap();
    names.sort();
    assert_eq!(names, ["chunked", "grp", "ints"]);
    let ints: Vec<i32> = f.dataset("/ints").unwrap().read().unwrap();
    assert_eq!(ints, (0..24).collect::<Vec<i32>>());
    let ch = f.dataset("/chunked").unwrap();
    assert_eq!(ch.layout_class(), LayoutClass::Chunked);
    let v: Vec<f64> = ch.read().unwrap();
    assert_eq!(v, (0..1000).map(|i| f64::from(i) * 0.5).collect::<Vec<_>>());
    let sub = f.group("/grp/sub").unwrap();
    assert_eq!(sub.member_names().unwrap(), ["s"]);
    let a: Vec<i16> = sub.attr("a").unwrap().read().unwrap();
    assert_eq!(a, [7]);
}

#[test]
fn generated_dense_group_with_cache_image() {
    // libhdf5 2.0 itself fails on this file ("non-parent entry has children");
    // the values are the generator's: grp/dNN = [NN, NN, NN] as u16.
    let f = File::open(format!("{TESTDATA}/mdc_image_dense_v200.h5")).unwrap();
    assert!(f.storage().overlay().is_some());
    let g = f.group("/grp").unwrap();
    let mut names = g.member_names().unwrap();
    names.sort();
    let want: Vec<String> = (0..20).map(|i| format!("d{i:02}")).collect();
    assert_eq!(names, want);
    for i in 0..20u16 {
        let v: Vec<u16> = f.dataset(&format!("/grp/d{i:02}")).unwrap().read().unwrap();
        assert_eq!(v, [i, i, i]);
    }
}
