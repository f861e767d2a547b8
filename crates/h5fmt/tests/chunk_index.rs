//! Chunk indexes (fixed array, extensible array, implicit, single chunk) and
//! chunked-dataset assembly against corpus files, with h5py's chunk records
//! and data as the oracle (`vectors/gen_chunk_index.py`). The index
//! structures are found by scanning the file for their signatures.

use h5fmt::format::message::{ChunkIndex, ChunkedLayout, Filter, FilterPipeline};
use h5fmt::io::Storage;
use h5fmt::read::chunks::{chunk_records, read_all, ChunkRecord, ChunkedRead};
use h5fmt::{Addr, Ctx};
use std::sync::Arc;

const CORPUS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../../shared/corpus/files/");
const TSV: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/chunk_index.tsv");

fn fnv64(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x100_0000_01b3);
    }
    h
}

fn nums(s: &str) -> Vec<u64> {
    s.split(',')
        .map(|v| {
            if v == "-1" {
                u64::MAX
            } else {
                v.parse().unwrap()
            }
        })
        .collect()
}

fn pipeline(s: &str) -> FilterPipeline {
    if s == "-" {
        return FilterPipeline::default();
    }
    FilterPipeline {
        filters: s
            .split('|')
            .map(|f| {
                let p: Vec<&str> = f.split(':').collect();
                Filter {
                    id: p[0].parse().unwrap(),
                    name: None,
                    flags: p[1].parse().unwrap(),
                    client_data: p[2]
                        .split(',')
                        .filter(|x| !x.is_empty())
                        .map(|x| x.parse().unwrap())
                        .collect(),
                }
            })
            .collect(),
    }
}

fn hex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn render(mut recs: Vec<ChunkRecord>) -> String {
    recs.sort_by(|a, b| a.offsets.cmp(&b.offsets));
    let v: Vec<String> = recs
        .iter()
        .map(|r| {
            let o: Vec<String> = r.offsets.iter().map(u64::to_string).collect();
            format!(
                "{}:{}:{}:{}",
                o.join(","),
                r.addr.get(),
                r.size,
                r.filter_mask
            )
        })
        .collect();
    if v.len() > 64 {
        format!("n={};fnv={:016x}", v.len(), fnv64(v.join(";").as_bytes()))
    } else {
        v.join(";")
    }
}

fn positions(bytes: &[u8], sig: &[u8; 4]) -> Vec<u64> {
    bytes
        .windows(4)
        .enumerate()
        .filter(|(_, w)| w == sig)
        .map(|(i, _)| i as u64)
        .collect()
}

struct Case {
    file: String,
    name: String,
    kind: String,
    dims: Vec<u64>,
    max: Vec<u64>,
    chunk: Vec<u64>,
    es: usize,
    pipeline: FilterPipeline,
    fill: Vec<u8>,
    digest: String,
    records: String,
}

fn cases() -> Vec<Case> {
    std::fs::read_to_string(TSV)
        .unwrap()
        .lines()
        .filter(|l| !l.is_empty())
        .map(|l| {
            let c: Vec<&str> = l.split('\t').collect();
            Case {
                file: c[0].into(),
                name: c[1].into(),
                kind: c[2].into(),
                dims: nums(c[3]),
                max: nums(c[4]),
                chunk: nums(c[5]),
                es: c[6].parse().unwrap(),
                pipeline: pipeline(c[7]),
                fill: hex(c[8]),
                digest: c[9].into(),
                records: c.get(10).copied().unwrap_or("").into(),
            }
        })
        .collect()
}

fn layout(case: &Case, index: ChunkIndex) -> ChunkedLayout {
    ChunkedLayout {
        dims: case.chunk.clone(),
        element_size: 0,
        layout_version: 4,
        flags: 0,
        index,
    }
}

/// The candidate indexes of a case: every FA/EA header in the file, or the
/// single/implicit index built from h5py's first chunk address.
fn candidates(case: &Case, bytes: &[u8]) -> Vec<ChunkIndex> {
    match case.kind.as_str() {
        "fa" => positions(bytes, b"FAHD")
            .into_iter()
            .map(|a| ChunkIndex::FixedArray {
                addr: Addr(a),
                page_bits: 0,
            })
            .collect(),
        "ea" => positions(bytes, b"EAHD")
            .into_iter()
            .map(|a| ChunkIndex::ExtensibleArray {
                addr: Addr(a),
                max_bits: 0,
                index_elements: 0,
                min_pointers: 0,
                min_elements: 0,
                page_bits: 0,
            })
            .collect(),
        "single" | "implicit" => {
            let first = case.records.split(';').next().unwrap();
            let addr = Addr(first.split(':').nth(1).unwrap().parse().unwrap());
            let size: u64 = first.split(':').nth(2).unwrap().parse().unwrap();
            if case.kind == "single" {
                let filtered = if case.pipeline.filters.is_empty() {
                    None
                } else {
                    Some((size, 0))
                };
                vec![ChunkIndex::SingleChunk { addr, filtered }]
            } else {
                vec![ChunkIndex::Implicit { addr }]
            }
        }
        k => panic!("kind {k}"),
    }
}

#[test]
fn chunk_records_and_data_match_h5py() {
    let all = cases();
    assert_eq!(all.len(), 51);
    let mut kinds = std::collections::BTreeMap::new();
    for case in &all {
        let bytes = std::fs::read(format!("{CORPUS}{}", case.file)).unwrap();
        let st = Storage::new(Arc::new(bytes.clone()));
        let ctx = Ctx::default();
        let filtered = !case.pipeline.filters.is_empty();
        let mut matched = None;
        for index in candidates(case, &bytes) {
            let lay = layout(case, index);
            let Ok(recs) = chunk_records(&st, ctx, &lay, &case.dims, &case.max, case.es, filtered)
            else {
                continue;
            };
            if render(recs) == case.records {
                matched = Some(lay);
                break;
            }
        }
        let lay = matched.unwrap_or_else(|| {
            panic!(
                "{} {}: no index matches h5py's records",
                case.file, case.name
            )
        });
        *kinds.entry(case.kind.clone()).or_insert(0) += 1;
        if case.digest == "-" {
            continue;
        }
        let req = ChunkedRead {
            layout: &lay,
            pipeline: &case.pipeline,
            dims: &case.dims,
            max_dims: &case.max,
            element_size: case.es,
            fill: &case.fill,
        };
        let data = read_all(&st, ctx, &req).unwrap_or_else(|e| panic!("{}: {e}", case.name));
        assert_eq!(
            data.len() as u64,
            case.dims.iter().product::<u64>() * case.es as u64
        );
        assert_eq!(
            format!("{:016x}", fnv64(&data)),
            case.digest,
            "{} {}",
            case.file,
            case.name
        );
    }
    assert!(
        kinds["fa"] >= 15 && kinds["ea"] >= 14 && kinds["single"] >= 12 && kinds["implicit"] >= 2,
        "{kinds:?}"
    );
}

#[test]
fn corrupted_index_is_an_error_not_a_panic() {
    let case = cases()
        .into_iter()
        .find(|c| c.name == "fixed_array/int16_five_page")
        .unwrap();
    let bytes = std::fs::read(format!("{CORPUS}{}", case.file)).unwrap();
    let st = Storage::new(Arc::new(bytes.clone()));
    let lay = candidates(&case, &bytes)
        .into_iter()
        .map(|i| layout(&case, i))
        .find(|l| {
            chunk_records(
                &st,
                Ctx::default(),
                l,
                &case.dims,
                &case.max,
                case.es,
                false,
            )
            .is_ok_and(|r| render(r) == case.records)
        })
        .unwrap();
    let ChunkIndex::FixedArray { addr, .. } = lay.index else {
        unreachable!()
    };
    // Flip one byte at a time in the 28-byte header: each
    // must be caught (checksums) without panicking.
    for off in 0..28u64 {
        let mut bad = bytes.clone();
        bad[(addr.get() + off) as usize] ^= 0x11;
        let st = Storage::new(Arc::new(bad));
        let r = chunk_records(
            &st,
            Ctx::default(),
            &lay,
            &case.dims,
            &case.max,
            case.es,
            false,
        );
        assert!(r.is_err(), "header byte {off} flipped went unnoticed");
    }
    // A file truncated inside its last chunk: the error names the chunk.
    let recs = chunk_records(
        &st,
        Ctx::default(),
        &lay,
        &case.dims,
        &case.max,
        case.es,
        false,
    )
    .unwrap();
    let last = recs.iter().max_by_key(|r| r.addr).unwrap().clone();
    let st = Storage::new(Arc::new(bytes[..last.addr.get() as usize + 1].to_vec()));
    let req = ChunkedRead {
        layout: &lay,
        pipeline: &case.pipeline,
        dims: &case.dims,
        max_dims: &case.max,
        element_size: case.es,
        fill: &case.fill,
    };
    let e = read_all(&st, Ctx::default(), &req).unwrap_err();
    assert_eq!(e.kind(), h5fmt::ErrorKind::Truncated, "{e}");
    let want = format!("chunk [{}, {}]", last.offsets[0], last.offsets[1]);
    assert!(e.message().contains(&want), "{e}");
    // The read limit is checked before allocating.
    let mut ctx = Ctx::default();
    ctx.limits.max_read_bytes = 100;
    let e = read_all(&Storage::new(Arc::new(bytes)), ctx, &req).unwrap_err();
    assert_eq!(e.kind(), h5fmt::ErrorKind::Limit);
}
