//! CHUNK_BLOOM arithmetic (§10.7): the corpus's 48 known answers, and the
//! MurmurHash3 crate against Python's `mmh3` on random inputs.

mod index_common;

use h5fmt::data::decode::decode_element;
use h5fmt::data::NoHeap;
use h5fmt::format::datatype::{ByteOrder, CharSet, Datatype, StringPad};
use h5fmt::{Ctx, Value};
use h5table::index::bloom::{insert, BloomParams};
use h5table::index::order::{bloom_positions, canonical_bytes, murmur3_x64_128};
use index_common::{hep001, hex, run_python, unhex};

fn big(mut t: Datatype) -> Datatype {
    match &mut t {
        Datatype::Integer { order, .. } | Datatype::Float { order, .. } => *order = ByteOrder::Big,
        _ => unreachable!(),
    }
    t
}

/// The datatype a golden vector's `dtype` names.
fn dtype_of(name: &str) -> Datatype {
    let (base, be) = match name.strip_suffix("be") {
        Some(b) if !name.starts_with("string") => (b, true),
        _ => (name, false),
    };
    let t = match base {
        "int8" => Datatype::int_le(1, true),
        "int16" => Datatype::int_le(2, true),
        "int32" => Datatype::int_le(4, true),
        "int64" => Datatype::int_le(8, true),
        "uint8" => Datatype::int_le(1, false),
        "uint16" => Datatype::int_le(2, false),
        "uint32" => Datatype::int_le(4, false),
        "uint64" => Datatype::int_le(8, false),
        "float16" => Datatype::float_le(2),
        "float32" => Datatype::float_le(4),
        "float64" => Datatype::float_le(8),
        "string(vlen,cset=utf-8)" => Datatype::vlen_utf8(),
        "opaque(3)" => Datatype::Opaque {
            size: 3,
            tag: "t".into(),
        },
        b if b.starts_with("bool") => Datatype::bool_enum(),
        s if s.starts_with("string(fixed=") => {
            let inner = &s["string(".len()..s.len() - 1];
            let mut size = 0;
            let mut cset = CharSet::Ascii;
            let mut pad = StringPad::NullTerm;
            for part in inner.split(',') {
                let (k, v) = part.split_once('=').unwrap();
                match (k, v) {
                    ("fixed", n) => size = n.parse().unwrap(),
                    ("cset", "ascii") => cset = CharSet::Ascii,
                    ("cset", "utf-8") => cset = CharSet::Utf8,
                    ("pad", "nullterm") => pad = StringPad::NullTerm,
                    ("pad", "nullpad") => pad = StringPad::NullPad,
                    ("pad", "spacepad") => pad = StringPad::SpacePad,
                    other => panic!("unknown string part {other:?}"),
                }
            }
            Datatype::String { size, pad, cset }
        }
        other => panic!("unknown golden dtype {other:?}"),
    };
    if be {
        big(t)
    } else {
        t
    }
}

#[test]
fn golden_bloom_vectors() {
    let text = std::fs::read_to_string(hep001().join("golden_bloom.json")).unwrap();
    let g: serde_json::Value = serde_json::from_str(&text).unwrap();
    let vectors = g["vectors"].as_array().unwrap();
    assert_eq!(vectors.len(), 48, "the corpus lists 48 vectors");
    let mut checked_filters = 0;
    for (i, v) in vectors.iter().enumerate() {
        let what = format!("vector {i} ({} {})", v["dtype"], v["value"]);
        let dtype = dtype_of(v["dtype"].as_str().unwrap());
        let stored = unhex(v["stored_hex"].as_str().unwrap());
        // Decode the stored bytes as the file would (byte order, padding).
        let value = match &dtype {
            Datatype::VarLenString { .. } => Value::Str(String::from_utf8(stored).unwrap()),
            _ => decode_element(&dtype, &stored, Ctx::default(), &NoHeap).unwrap(),
        };
        let canon = canonical_bytes(&dtype, &value);
        let k = v["k"].as_u64().unwrap() as u16;
        let m_bits = v["m_bits"].as_u64().unwrap();
        let seed = v["seed"].as_u64().unwrap() as u32;
        let want_bits: Vec<u64> = v["bits"]
            .as_array()
            .unwrap()
            .iter()
            .map(|b| b.as_u64().unwrap())
            .collect();
        match v["canonical_hex"].as_str() {
            None => {
                // NaN: never inserted, never queried.
                assert_eq!(canon, None, "{what}");
                assert!(want_bits.is_empty(), "{what}");
                continue;
            }
            Some(c) => assert_eq!(canon.as_deref().map(hex).as_deref(), Some(c), "{what}"),
        }
        let canon = canon.unwrap();
        let (ha, hb) = murmur3_x64_128(&canon, seed);
        assert_eq!(ha.to_string(), v["h_a"].as_str().unwrap(), "{what} h_a");
        assert_eq!(hb.to_string(), v["h_b"].as_str().unwrap(), "{what} h_b");
        assert_eq!(
            bloom_positions(&canon, k, m_bits, seed),
            want_bits,
            "{what} bits"
        );
        if let Some(w) = v.get("bits_if_u64_wrapping") {
            let wrapping: Vec<u64> = (0..u64::from(k))
                .map(|i| ha.wrapping_add(i.wrapping_mul(hb)) % m_bits)
                .collect();
            let w: Vec<u64> = w
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_u64().unwrap())
                .collect();
            assert_eq!(wrapping, w, "{what}: the wrapping reading, for contrast");
            assert_ne!(want_bits, w, "{what}: the two readings differ here");
        }
        if let Some(f) = v["filter_hex"].as_str() {
            let p = BloomParams { k, m_bits, seed };
            let mut filter = vec![0u8; p.m_bytes()];
            insert(&mut filter, &canon, p);
            assert_eq!(hex(&filter), f, "{what} filter");
            checked_filters += 1;
        }
    }
    assert!(checked_filters > 0);
}

#[test]
fn murmur_smhasher_verification_and_hello() {
    // SMHasher's verification value for MurmurHash3_x64_128: hash keys
    // {0}, {0,1}, … {0..254} with seed 256 − len, hash the concatenated
    // 16-byte digests with seed 0, take the first 4 bytes little-endian.
    let mut all = Vec::new();
    let mut key = Vec::new();
    for i in 0..256u32 {
        let (a, b) = murmur3_x64_128(&key, 256 - i);
        all.extend_from_slice(&a.to_le_bytes());
        all.extend_from_slice(&b.to_le_bytes());
        key.push(i as u8);
    }
    let (a, _) = murmur3_x64_128(&all, 0);
    assert_eq!(a as u32, 0x6384_BA69);
    let (a, b) = murmur3_x64_128(b"hello", 0);
    assert_eq!((a, b), (0xcbd8_a7b3_41bd_9b02, 0x5b1e_906a_48ae_1d19));
}

#[test]
fn murmur_matches_python_mmh3() {
    // xorshift64*: deterministic random inputs of every length 0..=80, a few
    // long ones, and seeds including 0 and u32::MAX.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let mut cases: Vec<(u32, Vec<u8>)> = Vec::new();
    let lens: Vec<usize> = (0..=80).chain([127, 128, 129, 255, 1000, 4099]).collect();
    for (i, &len) in lens.iter().enumerate() {
        for j in 0..3 {
            let seed = match (i + j) % 5 {
                0 => 0,
                1 => u32::MAX,
                _ => next() as u32,
            };
            let data: Vec<u8> = (0..len).map(|_| next() as u8).collect();
            cases.push((seed, data));
        }
    }
    let input: String = cases
        .iter()
        .map(|(seed, d)| format!("{seed} {}\n", hex(d)))
        .collect();
    let script = r#"
import sys, mmh3
for line in sys.stdin:
    seed, _, h = line.strip().partition(' ')
    a, b = mmh3.hash64(bytes.fromhex(h), seed=int(seed), x64arch=True, signed=False)
    print(a, b)
"#;
    let out = run_python(script, &input);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), cases.len());
    for ((seed, d), line) in cases.iter().zip(lines) {
        let (a, b) = murmur3_x64_128(d, *seed);
        assert_eq!(
            format!("{a} {b}"),
            line,
            "len {} seed {seed} data {}",
            d.len(),
            hex(d)
        );
    }
}
