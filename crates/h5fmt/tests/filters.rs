//! Filter decoding against vectors written by libhdf5 / hdf5plugin
//! (see `vectors/gen.py`): stored chunk bytes in, numpy's decoded bytes out.

use h5fmt::filter::decode_chunk;
use h5fmt::format::message::{Filter, FilterPipeline};
use h5fmt::ErrorKind;

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/");

struct Vector {
    name: String,
    mask: u32,
    element_size: usize,
    pipeline: FilterPipeline,
    input: Vec<u8>,
    output: Vec<u8>,
}

fn vectors() -> Vec<Vector> {
    let tsv = std::fs::read_to_string(format!("{DIR}vectors.tsv")).unwrap();
    tsv.lines()
        .filter(|l| !l.is_empty())
        .map(|line| {
            let cols: Vec<&str> = line.split('\t').collect();
            let filters = cols[3..]
                .iter()
                .map(|f| {
                    let parts: Vec<&str> = f.split(':').collect();
                    Filter {
                        id: parts[0].parse().unwrap(),
                        name: None,
                        flags: parts[1].parse().unwrap(),
                        client_data: parts[2]
                            .split(',')
                            .filter(|s| !s.is_empty())
                            .map(|s| s.parse().unwrap())
                            .collect(),
                    }
                })
                .collect();
            let name = cols[0].to_string();
            Vector {
                input: std::fs::read(format!("{DIR}{name}.in")).unwrap(),
                output: std::fs::read(format!("{DIR}{name}.out")).unwrap(),
                mask: cols[1].parse().unwrap(),
                element_size: cols[2].parse().unwrap(),
                pipeline: FilterPipeline { filters },
                name,
            }
        })
        .collect()
}

fn get(name: &str) -> Vector {
    vectors()
        .into_iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

#[test]
fn every_vector_decodes_to_the_libhdf5_result() {
    let all = vectors();
    assert!(all.len() >= 19);
    for v in all {
        let got = decode_chunk(
            &v.pipeline,
            v.mask,
            v.input.clone(),
            v.output.len(),
            v.element_size,
        )
        .unwrap_or_else(|e| panic!("{}: {e}", v.name));
        assert_eq!(got, v.output, "{}", v.name);
    }
}

#[test]
fn each_filter_kind_is_covered() {
    let ids: std::collections::BTreeSet<u16> = vectors()
        .iter()
        .flat_map(|v| v.pipeline.filters.iter().map(|f| f.id))
        .collect();
    for id in [
        1, 2, 3, 4, 5, 6, 307, 32000, 32001, 32004, 32008, 32015, 32026,
    ] {
        assert!(ids.contains(&id), "no vector for filter {id}");
    }
}

#[test]
fn fletcher32_mismatch_is_a_checksum_error() {
    for name in ["fletcher32", "deflate_fletcher32"] {
        let v = get(name);
        let mut bad = v.input.clone();
        bad[3] ^= 0x40;
        let e = decode_chunk(&v.pipeline, v.mask, bad, v.output.len(), v.element_size).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Checksum, "{name}: {e}");
        assert!(e.message().contains("fletcher32"), "{e}");
    }
}

#[test]
fn masked_filter_is_skipped() {
    // Skipping deflate (bit 0) on a deflated chunk yields the raw stream, which is too short.
    let v = get("deflate");
    let raw = decode_chunk(&v.pipeline, 1, v.input.clone(), v.output.len(), 4).unwrap();
    assert_eq!(raw, v.input);
}

#[test]
fn truncated_deflate_stream_is_an_error() {
    let v = get("deflate");
    for cut in [0, 1, 2, 5, v.input.len() / 2, v.input.len() - 1] {
        let e =
            decode_chunk(&v.pipeline, 0, v.input[..cut].to_vec(), v.output.len(), 4).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Corrupt, "cut {cut}: {e}");
        assert!(e.message().contains("filter 1 (deflate)"), "{e}");
    }
}

#[test]
fn output_larger_than_expected_is_a_limit_error() {
    for name in [
        "deflate",
        "zstd",
        "bzip2",
        "lz4",
        "lzf",
        "scaleoffset_int",
        "nbit_int",
        "szip_nn_i32",
        "szip_nn_2d_pad",
        "bitshuffle_none",
        "bitshuffle_lz4",
        "bitshuffle_zstd_f64",
        "blosc_blosclz_shuffle",
        "blosc_zlib_shuffle",
        "blosc_blosclz_blocks_f64",
        "blosc2_blosclz_2d",
        "blosc2_lz4_1d_blocks",
        "blosc2_zlib_3d_pad",
        "blosc2_zeros_f8",
        "blosc2_memcpy",
    ] {
        let v = get(name);
        let e = decode_chunk(
            &v.pipeline,
            v.mask,
            v.input.clone(),
            v.output.len() - 1,
            v.element_size,
        )
        .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Limit, "{name}: {e}");
    }
}

#[test]
fn hostile_lz4_headers_fail_without_allocating() {
    let v = get("lz4_blocks");
    // Original size claims 2^60 bytes: rejected against the bound before allocating.
    let mut huge = v.input.clone();
    huge[..8].copy_from_slice(&(1u64 << 60).to_be_bytes());
    let e = decode_chunk(&v.pipeline, 0, huge, v.output.len(), 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    // A block's compressed size points past the end.
    let mut bad = v.input.clone();
    bad[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    let e = decode_chunk(&v.pipeline, 0, bad, v.output.len(), 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
    // Zero block size, truncated header.
    let mut zero = v.input.clone();
    zero[8..12].copy_from_slice(&0u32.to_be_bytes());
    assert!(decode_chunk(&v.pipeline, 0, zero, v.output.len(), 4).is_err());
    assert!(decode_chunk(&v.pipeline, 0, v.input[..7].to_vec(), v.output.len(), 4).is_err());
    // Garbage inside a block (LZ4 has no checksum: it may decode, but must not panic).
    let mut junk = v.input.clone();
    for b in junk.iter_mut().skip(16).take(40) {
        *b = 0xff;
    }
    let _ = decode_chunk(&v.pipeline, 0, junk, v.output.len(), 4);
}

#[test]
fn garbage_never_panics() {
    // Every vector's pipeline fed with every truncation and a few corruptions of its input.
    for v in vectors() {
        for cut in 0..v.input.len().min(64) {
            let _ = decode_chunk(
                &v.pipeline,
                v.mask,
                v.input[..cut].to_vec(),
                v.output.len(),
                v.element_size,
            );
        }
        for i in (0..v.input.len()).step_by(7) {
            let mut bad = v.input.clone();
            bad[i] = bad[i].wrapping_add(0x5b);
            let _ = decode_chunk(&v.pipeline, v.mask, bad, v.output.len(), v.element_size);
        }
    }
}

#[test]
fn unknown_filters_are_unsupported() {
    let p = |id| FilterPipeline {
        filters: vec![Filter {
            id,
            name: None,
            flags: 0,
            client_data: vec![],
        }],
    };
    // szip without its client data is a corrupt pipeline, named as szip.
    let e = decode_chunk(&p(4), 0, vec![1, 2, 3], 16, 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt);
    assert!(e.message().contains("szip"), "{e}");
    let e = decode_chunk(&p(31999), 0, vec![1, 2, 3], 16, 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("31999"), "{e}");
    let e = decode_chunk(&p(32013), 0, vec![1, 2, 3], 16, 4).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("zfp"), "{e}");
}

#[test]
fn truncated_szip_streams_are_errors() {
    for name in [
        "szip_nn_i32",
        "szip_ec_i16_be",
        "szip_nn_f64_be",
        "szip_nn_2d_pad",
    ] {
        let v = get(name);
        for cut in [0, 3, 4, 5, v.input.len() / 2, v.input.len() - 1] {
            let e = decode_chunk(
                &v.pipeline,
                v.mask,
                v.input[..cut].to_vec(),
                v.output.len(),
                v.element_size,
            )
            .unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Corrupt, "{name} cut {cut}: {e}");
            assert!(e.message().contains("filter 4 (szip)"), "{e}");
        }
    }
}

#[test]
fn szip_bit_flips_never_panic() {
    for v in vectors().into_iter().filter(|v| v.name.starts_with("szip")) {
        for i in 4..v.input.len() {
            for bit in [0x01u8, 0x10, 0x80] {
                let mut bad = v.input.clone();
                bad[i] ^= bit;
                if let Ok(out) =
                    decode_chunk(&v.pipeline, v.mask, bad, v.output.len(), v.element_size)
                {
                    assert_eq!(out.len(), v.output.len());
                }
            }
        }
    }
}

#[test]
fn hostile_bitshuffle_headers_fail_cleanly() {
    let v = get("bitshuffle_lz4");
    let run = |d: Vec<u8>| decode_chunk(&v.pipeline, 0, d, v.output.len(), 4);
    let mut huge = v.input.clone();
    huge[..8].copy_from_slice(&(1u64 << 60).to_be_bytes());
    assert_eq!(run(huge).unwrap_err().kind(), ErrorKind::Limit);
    for block in [0u32, 4, 12, u32::MAX] {
        let mut bad = v.input.clone();
        bad[8..12].copy_from_slice(&block.to_be_bytes());
        assert!(run(bad).is_err(), "block {block}");
    }
    let mut bad = v.input.clone();
    bad[12..16].copy_from_slice(&u32::MAX.to_be_bytes());
    assert_eq!(run(bad).unwrap_err().kind(), ErrorKind::Corrupt);
    for cut in [0, 11, 12, 15, v.input.len() / 2, v.input.len() - 1] {
        let e = run(v.input[..cut].to_vec()).unwrap_err();
        assert!(e.message().contains("filter 32008 (bitshuffle)"), "{e}");
    }
}

#[test]
fn hostile_blosc_frames_fail_cleanly() {
    let v = get("blosc_blosclz_blocks_f64");
    let run = |d: Vec<u8>| decode_chunk(&v.pipeline, 0, d, v.output.len(), 8);
    // Decoded size beyond the bound; frame size beyond the data; zero block size.
    let mut huge = v.input.clone();
    huge[4..8].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(run(huge).unwrap_err().kind(), ErrorKind::Limit);
    let mut long = v.input.clone();
    long[12..16].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(run(long).unwrap_err().kind(), ErrorKind::Corrupt);
    let mut zero = v.input.clone();
    zero[8..12].copy_from_slice(&0u32.to_le_bytes());
    assert!(run(zero).is_err());
    // A block start pointing past the frame.
    let mut start = v.input.clone();
    start[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(run(start).unwrap_err().kind(), ErrorKind::Corrupt);
    // Snappy (codec 2) is named as unsupported.
    let mut snappy = v.input.clone();
    snappy[2] = (snappy[2] & 0x1f) | (2 << 5);
    let e = run(snappy).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    for cut in [0, 15, 16, 19, v.input.len() / 2, v.input.len() - 1] {
        let e = run(v.input[..cut].to_vec()).unwrap_err();
        assert!(e.message().contains("filter 32001 (blosc)"), "{e}");
    }
}

#[test]
fn hostile_blosc2_frames_fail_cleanly() {
    let v = get("blosc2_lz4_1d_blocks");
    let run = |d: Vec<u8>| decode_chunk(&v.pipeline, 0, d, v.output.len(), 4);
    let hlen = usize::try_from(u32::from_be_bytes(v.input[11..15].try_into().unwrap())).unwrap();
    // Not a frame; frame size beyond the data.
    let mut magic = v.input.clone();
    magic[3] = b'x';
    assert_eq!(run(magic).unwrap_err().kind(), ErrorKind::Corrupt);
    let mut long = v.input.clone();
    long[16..24].copy_from_slice(&u64::MAX.to_be_bytes());
    assert_eq!(run(long).unwrap_err().kind(), ErrorKind::Corrupt);
    // The chunk claims more than the bound: rejected before allocating.
    let mut huge = v.input.clone();
    huge[hlen + 4..hlen + 8].copy_from_slice(&i32::MAX.to_le_bytes());
    assert_eq!(run(huge).unwrap_err().kind(), ErrorKind::Limit);
    // A block start past the chunk; a negative stored size.
    let mut start = v.input.clone();
    start[hlen + 32..hlen + 36].copy_from_slice(&i32::MAX.to_le_bytes());
    assert_eq!(run(start).unwrap_err().kind(), ErrorKind::Corrupt);
    let mut neg = v.input.clone();
    neg[hlen + 12..hlen + 16].copy_from_slice(&(-1i32).to_le_bytes());
    assert_eq!(run(neg).unwrap_err().kind(), ErrorKind::Corrupt);
    // Variable-length blocks and user-defined codecs are named as unsupported.
    let mut vl = v.input.clone();
    vl[hlen + 30] = 1;
    assert_eq!(run(vl).unwrap_err().kind(), ErrorKind::Unsupported);
    let mut ud = v.input.clone();
    ud[hlen + 2] = (ud[hlen + 2] & 0x1f) | (6 << 5);
    let e = run(ud).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported, "{e}");
    for cut in [
        0,
        10,
        24,
        hlen,
        hlen + 31,
        v.input.len() / 2,
        v.input.len() - 1,
    ] {
        let e = run(v.input[..cut].to_vec()).unwrap_err();
        assert!(e.message().contains("filter 32026 (blosc2)"), "{e}");
    }
    // b2nd: a shape that differs from the filter's chunk shape.
    let v = get("blosc2_zlib_3d_pad");
    let mut p = v.pipeline.clone();
    p.filters[0].client_data[9] = 8;
    let e = decode_chunk(&p, 0, v.input.clone(), v.output.len(), 8).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Corrupt, "{e}");
}

#[test]
fn blosc2_bit_flips_never_panic() {
    for v in vectors()
        .into_iter()
        .filter(|v| v.name.starts_with("blosc2"))
    {
        for i in 0..v.input.len().min(400) {
            for bit in [0x01u8, 0x08, 0x80] {
                let mut bad = v.input.clone();
                bad[i] ^= bit;
                if let Ok(out) =
                    decode_chunk(&v.pipeline, v.mask, bad, v.output.len(), v.element_size)
                {
                    assert!(out.len() <= v.output.len());
                }
            }
        }
    }
}
