//! The typed fast path of the index builders (numeric columns) writes
//! exactly what the generic `Value` path writes: random tables of every
//! integer width and signedness, float16/32/64 and enums, little- and
//! big-endian, with NaN (several payloads), ±0, ±inf, subnormals and fill
//! values (non-NaN, NaN, −0) among the data, random chunking; every index
//! family built, then rows appended (incremental CHUNK_MINMAX/CHUNK_BLOOM,
//! rebuilt SORTED_ROWS/BITMAP), the index datasets compared byte for byte;
//! also each column's families built together (`build_indexes`, one read).

mod common;

use h5fmt::data::Reference;
use h5fmt::format::datatype::{ByteOrder, Datatype, EnumMember};
use h5fmt::{FileEditor, FileWriter, Object};
use h5table::write::{
    force_generic_index_paths, kind_allowed, ColumnData, ColumnSpec, FillSpec, IndexSpec,
    TableEditor, TableWriter,
};
use h5table::Table;
use std::path::Path;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

const TABLE: &str = "/t";

fn with_order(d: Datatype, big: bool) -> Datatype {
    let o = if big {
        ByteOrder::Big
    } else {
        ByteOrder::Little
    };
    match d {
        Datatype::Integer {
            size,
            signed,
            bit_offset,
            precision,
            ..
        } => Datatype::Integer {
            size,
            order: o,
            signed,
            bit_offset,
            precision,
        },
        Datatype::Float { size, layout, .. } => Datatype::Float {
            size,
            order: o,
            layout,
        },
        d => d,
    }
}

/// A column: its datatype, element size, bit pool (values drawn from it)
/// and fill bit pattern.
struct Col {
    name: String,
    dtype: Datatype,
    size: usize,
    big: bool,
    pool: Vec<u64>,
    fill: u64,
    chunk: u64,
}

fn float_pool(size: usize) -> Vec<u64> {
    match size {
        2 => vec![
            0x0000, 0x8000, 0x7e00, 0xfe00, 0x7c01, 0x7c00, 0xfc00, 0x0001, 0x8001, 0x3c00, 0xbc00,
            0x4200, 0x3e00, 0x7bff,
        ],
        4 => [
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            2.5,
            -2.5,
            f32::INFINITY,
            f32::NEG_INFINITY,
            f32::MIN_POSITIVE / 4.0,
            -f32::MIN_POSITIVE / 4.0,
            f32::MAX,
            3.0,
        ]
        .iter()
        .map(|x| u64::from(x.to_bits()))
        .chain([0x7fc0_0000, 0xffc0_0001, 0x7f80_0001])
        .collect(),
        _ => [
            0.0f64,
            -0.0,
            1.0,
            -1.0,
            2.5,
            -2.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            5e-324,
            -5e-324,
            f64::MAX,
            1e300,
            3.0,
        ]
        .iter()
        .map(|x| x.to_bits())
        .chain([
            0x7ff8_0000_0000_0000,
            0xfff8_0000_0000_0001,
            0x7ff0_0000_0000_0001,
        ])
        .collect(),
    }
}

fn int_pool(rng: &mut Rng, size: usize, signed: bool) -> Vec<u64> {
    let mask = u64::MAX >> (64 - 8 * size as u32);
    let mut p: Vec<u64> = vec![0, 1, mask, mask >> 1, (mask >> 1) + 1, 2, mask - 1];
    for _ in 0..rng.below(12) {
        p.push(rng.next() & mask);
    }
    if signed {
        p.push(mask & (-3i64) as u64);
    }
    p
}

fn columns(rng: &mut Rng, nrows: u64) -> Vec<Col> {
    let mut out = Vec::new();
    let chunk = |rng: &mut Rng| match rng.below(5) {
        0 => 1,
        1 => 3,
        2 => 7,
        3 => 64,
        _ => nrows + 5,
    };
    for size in [1usize, 2, 4, 8] {
        for signed in [false, true] {
            for big in [false, true] {
                let pool = int_pool(rng, size, signed);
                let fill = pool[rng.below(pool.len() as u64) as usize];
                out.push(Col {
                    name: format!(
                        "{}{}{}",
                        if signed { "i" } else { "u" },
                        size * 8,
                        if big { "be" } else { "le" }
                    ),
                    dtype: with_order(Datatype::int_le(size as u32, signed), big),
                    size,
                    big,
                    pool,
                    fill,
                    chunk: chunk(rng),
                });
            }
        }
    }
    for size in [2usize, 4, 8] {
        for big in [false, true] {
            let pool = float_pool(size);
            // Fills: a regular value, -0, a NaN (several payloads), +inf.
            let fill = pool[rng.below(pool.len() as u64) as usize];
            out.push(Col {
                name: format!("f{}{}", size * 8, if big { "be" } else { "le" }),
                dtype: with_order(Datatype::float_le(size as u32), big),
                size,
                big,
                pool,
                fill,
                chunk: chunk(rng),
            });
        }
    }
    let m = |n: &str, v: u8| EnumMember {
        name: n.into(),
        value: vec![v],
    };
    out.push(Col {
        name: "color".into(),
        dtype: Datatype::Enum {
            base: Box::new(Datatype::int_le(1, true)),
            members: vec![m("RED", 0), m("GREEN", 1), m("BLUE", 5), m("MISSING", 0x80)],
        },
        size: 1,
        big: false,
        pool: vec![0, 1, 5, 0x80],
        fill: 0x80,
        chunk: chunk(rng),
    });
    out.push(Col {
        name: "flag".into(),
        dtype: Datatype::bool_enum(),
        size: 1,
        big: false,
        pool: vec![0, 1, 0x7f, 2],
        fill: 0x7f,
        chunk: chunk(rng),
    });
    out
}

fn bytes_of(c: &Col, bits: u64) -> Vec<u8> {
    if c.big {
        bits.to_be_bytes()[8 - c.size..].to_vec()
    } else {
        bits.to_le_bytes()[..c.size].to_vec()
    }
}

fn data(rng: &mut Rng, cols: &[Col], n: u64) -> Vec<(String, ColumnData)> {
    cols.iter()
        .map(|c| {
            // Some columns draw from few values (long ties), some from all.
            let k = 1 + rng.below(c.pool.len() as u64);
            let raw: Vec<u8> = (0..n)
                .flat_map(|_| {
                    let bits = if rng.below(7) == 0 {
                        c.fill
                    } else {
                        c.pool[rng.below(k) as usize]
                    };
                    bytes_of(c, bits)
                })
                .collect();
            (c.name.clone(), ColumnData::Raw(raw))
        })
        .collect()
}

fn specs(rng: &mut Rng) -> Vec<IndexSpec> {
    vec![
        IndexSpec::minmax(),
        IndexSpec::sorted(),
        IndexSpec::bitmap(),
        IndexSpec::ChunkBloom {
            fpr: [0.01, 0.2, 0.5][rng.below(3) as usize],
            seed: rng.next() as u32,
        },
    ]
}

/// Every dataset of the table's SEARCH_INDEXES: (name, shape, bytes,
/// attributes), object references in attributes shown as the name of their
/// target (addresses depend on the order the datasets were written in).
fn indexes(path: &Path) -> Vec<(String, Vec<u64>, Vec<u8>, String)> {
    let f = h5fmt::File::open(path).unwrap();
    let g = f.group(&format!("{TABLE}/SEARCH_INDEXES")).unwrap();
    let mut sets = Vec::new();
    for l in g.links().unwrap() {
        let Ok(Object::Dataset(ds)) = g.member(&l.name) else {
            panic!("{} is not a dataset", l.name)
        };
        sets.push((l.name.clone(), ds));
    }
    let mut out = Vec::new();
    for (name, ds) in &sets {
        let mut attrs: Vec<String> = ds
            .attrs()
            .unwrap()
            .iter()
            .map(|a| {
                let mut v = format!("{}={:?}", a.name(), a.read_values().unwrap());
                for (n, d) in &sets {
                    v = v.replace(
                        &format!("{:?}", Reference::Object(d.addr())),
                        &format!("Object({n})"),
                    );
                }
                v
            })
            .collect();
        attrs.sort();
        out.push((
            name.clone(),
            ds.shape().to_vec(),
            ds.read_raw().unwrap(),
            attrs.join(" "),
        ));
    }
    out.sort();
    out
}

/// Build every family of `specs` each column admits: one `build_index`
/// at a time, or (`together`) all of a column's with one `build_indexes`
/// (one read of the column shared by them).
fn build(path: &Path, generic: bool, together: bool, specs: &[IndexSpec]) {
    force_generic_index_paths(generic);
    let mut ed = FileEditor::open(path).unwrap();
    ed.sync = false;
    let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
    let file = h5fmt::File::open(path).unwrap();
    let t = Table::open(&file.group(TABLE).unwrap()).unwrap();
    for c in t.columns() {
        let ok: Vec<IndexSpec> = specs
            .iter()
            .copied()
            .filter(|s| kind_allowed(&s.kind(), c.dtype()))
            .collect();
        if together {
            te.build_indexes(c.name(), &ok).unwrap();
        } else {
            for s in ok {
                te.build_index(c.name(), s).unwrap();
            }
        }
    }
    drop(te);
    ed.close().unwrap();
    force_generic_index_paths(false);
}

fn append(path: &Path, generic: bool, rows: &[(String, ColumnData)]) {
    force_generic_index_paths(generic);
    let mut ed = FileEditor::open(path).unwrap();
    ed.sync = false;
    let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
    let rows: Vec<(&str, ColumnData)> = rows.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
    te.append(&rows).unwrap();
    drop(te);
    ed.close().unwrap();
    force_generic_index_paths(false);
}

fn compare(fast: &Path, generic: &Path, what: &str) {
    let (a, b) = (indexes(fast), indexes(generic));
    assert_eq!(a.len(), b.len(), "{what}: index count");
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x.0, y.0, "{what}: names");
        assert_eq!(x.1, y.1, "{what}: shape of {}", x.0);
        assert!(x.2 == y.2, "{what}: bytes of {} differ", x.0);
        assert_eq!(x.3, y.3, "{what}: attributes of {}", x.0);
    }
}

#[test]
fn typed_and_generic_index_builds_write_the_same_bytes() {
    for seed in 1..=8u64 {
        let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        let n = [0, 1, 9, 40, 150, 333][rng.below(6) as usize];
        let cols = columns(&mut rng, n);
        let mut tw = TableWriter::new();
        for c in &cols {
            tw = tw.column(
                ColumnSpec::new(&c.name, c.dtype.clone())
                    .chunk(c.chunk)
                    .fill(FillSpec::Raw(bytes_of(c, c.fill))),
            );
        }
        let fast = common::tmp(&format!("typed_fast_{seed}.h5"));
        let generic = common::tmp(&format!("typed_generic_{seed}.h5"));
        let together = common::tmp(&format!("typed_together_{seed}.h5"));
        let mut w = FileWriter::create(&fast).unwrap();
        let rows = data(&mut rng, &cols, n);
        let rows_ref: Vec<(&str, ColumnData)> =
            rows.iter().map(|(n, d)| (n.as_str(), d.clone())).collect();
        tw.write_at(&mut w, TABLE, &rows_ref).unwrap();
        w.close().unwrap();
        std::fs::copy(&fast, &generic).unwrap();
        std::fs::copy(&fast, &together).unwrap();
        let specs = specs(&mut rng);
        build(&fast, false, false, &specs);
        build(&generic, true, false, &specs);
        build(&together, false, true, &specs);
        compare(&fast, &generic, &format!("seed {seed}, {n} rows, built"));
        compare(
            &together,
            &generic,
            &format!("seed {seed}, {n} rows, built together"),
        );
        for step in 0..2 {
            let k = rng.below(90);
            let more = data(&mut rng, &cols, k);
            append(&fast, false, &more);
            append(&generic, true, &more);
            compare(
                &fast,
                &generic,
                &format!("seed {seed}, {n} rows, append {step} of {k}"),
            );
        }
        let _ = std::fs::remove_file(&fast);
        let _ = std::fs::remove_file(&generic);
        let _ = std::fs::remove_file(&together);
    }
}
