//! Deflate encoding (RFC 1950 zlib stream of RFC 1951 blocks) that skips
//! the LZ77 match search where it cannot pay.
//!
//! Shuffled floating-point chunks begin with the byte planes of the noisy
//! low-order mantissa bits. A match finder spends most of its time there
//! (libdeflate's level 4 runs at ~120 MB/s on such planes against ~400–1000
//! MB/s on the exponent planes) and finds nothing: what compresses is the
//! skewed byte distribution, which Huffman coding alone captures. So the
//! chunk is probed segment by segment with a cheap match counter; the
//! leading segments whose bytes matches would barely cover are written as
//! literal-only dynamic Huffman blocks (or stored blocks when those are
//! smaller), and everything from the first segment with matches on is left
//! to the regular encoder, whose raw deflate stream follows after a byte
//! alignment. The result is one ordinary zlib stream.

use alloc::vec::Vec;

/// Bytes per probed segment and per literal block.
const SEG: usize = 1 << 16;
/// A segment is coded as literals when matches cover at most 1/2^6 of it.
const COVERED_SHIFT: u32 = 6;
/// Deflate's window: matches reach at most this far back.
const WINDOW: usize = 32 * 1024;

/// The length of the leading part of `data` (whole segments) in which
/// LZ77 matches of 4 or more bytes within the window cover at most 1/64 of
/// each segment's bytes. Greedy, one hash probe per position, as a fast
/// match finder would find them; matches into earlier segments count.
pub(super) fn literal_prefix(data: &[u8]) -> usize {
    const BITS: u32 = 12;
    let mut table = alloc::vec![u32::MAX; 1 << BITS];
    let word = |i: usize| -> Option<u32> {
        data.get(i..i + 4)
            .map(|w| u32::from_le_bytes([w[0], w[1], w[2], w[3]]))
    };
    let mut i = 0usize;
    let mut seg_start = 0usize;
    while seg_start < data.len() {
        let seg_end = (seg_start + SEG).min(data.len());
        let limit = (seg_end - seg_start) >> COVERED_SHIFT;
        let mut covered = 0usize;
        // Stop as soon as the matches found decide it (data with matches
        // everywhere costs a few hundred bytes of probing, not a segment).
        while i < seg_end && covered <= limit {
            let Some(w) = word(i) else {
                i = seg_end;
                break;
            };
            let h = (w.wrapping_mul(0x9E37_79B1) >> (32 - BITS)) as usize;
            let cand = table[h] as usize;
            table[h] = i as u32;
            if cand < i && i - cand <= WINDOW && word(cand) == Some(w) {
                let mut len = 4;
                while len < 258 && data.get(i + len).is_some_and(|&b| data[cand + len] == b) {
                    len += 1;
                }
                covered += len;
                i += len;
            } else {
                i += 1;
            }
        }
        if covered > limit {
            return seg_start;
        }
        seg_start = seg_end;
    }
    data.len()
}

/// Writes bits least significant first, as deflate packs them.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter<'_> {
    /// Append the low `len` (≤ 32) bits of `v`.
    #[inline(always)]
    fn put(&mut self, v: u32, len: u32) {
        self.acc |= u64::from(v) << self.n;
        self.n += len;
        if self.n >= 32 {
            self.out.extend_from_slice(&(self.acc as u32).to_le_bytes());
            self.acc >>= 32;
            self.n -= 32;
        }
    }

    /// Pad with zero bits to a byte boundary and write out what is held.
    fn align(&mut self) {
        let bytes = self.n.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.acc = 0;
        self.n = 0;
    }
}

/// Huffman code lengths, at most `limit` bits, for `freq` (into `lens`;
/// zero for unused symbols). At least two symbols get a length, so the code
/// is complete, as every inflater accepts. When the optimal code is too
/// deep, the frequencies are halved (kept non-zero) and the code rebuilt.
fn code_lengths(freq: &[u32], limit: u8, lens: &mut [u8]) {
    let mut f: Vec<u64> = freq.iter().map(|&x| u64::from(x)).collect();
    let used = f.iter().filter(|&&x| x > 0).count();
    // Pad to two symbols (the first unused ones).
    for x in f
        .iter_mut()
        .filter(|x| **x == 0)
        .take(2usize.saturating_sub(used))
    {
        *x = 1;
    }
    loop {
        let depth = huffman_depths(&f);
        if depth.iter().all(|&d| d <= u32::from(limit)) {
            for (l, d) in lens.iter_mut().zip(depth) {
                *l = d as u8;
            }
            return;
        }
        for x in f.iter_mut().filter(|x| **x > 0) {
            *x = (*x >> 1) | 1;
        }
    }
}

/// Depth of each symbol in a Huffman tree for `f` (zero when unused).
fn huffman_depths(f: &[u64]) -> Vec<u32> {
    use alloc::collections::BinaryHeap;
    use core::cmp::Reverse;
    // Nodes 0..n are the symbols, then the merged nodes.
    let mut parent: Vec<usize> = alloc::vec![usize::MAX; f.len()];
    let mut heap: BinaryHeap<Reverse<(u64, usize)>> = f
        .iter()
        .enumerate()
        .filter(|(_, &w)| w > 0)
        .map(|(s, &w)| Reverse((w, s)))
        .collect();
    while heap.len() > 1 {
        let (Some(Reverse((wa, a))), Some(Reverse((wb, b)))) = (heap.pop(), heap.pop()) else {
            break;
        };
        let node = parent.len();
        parent.push(usize::MAX);
        parent[a] = node;
        parent[b] = node;
        heap.push(Reverse((wa + wb, node)));
    }
    (0..f.len())
        .map(|s| {
            if f[s] == 0 {
                return 0;
            }
            let (mut d, mut x) = (0, s);
            while parent[x] != usize::MAX {
                x = parent[x];
                d += 1;
            }
            d
        })
        .collect()
}

/// Canonical codes (RFC 1951 3.2.2) for `lens`, bit-reversed for output.
fn canonical_codes(lens: &[u8]) -> Vec<u32> {
    let mut count = [0u32; 16];
    for &l in lens {
        count[usize::from(l)] += 1;
    }
    count[0] = 0;
    let mut next = [0u32; 16];
    let mut code = 0;
    for bits in 1..16 {
        code = (code + count[bits - 1]) << 1;
        next[bits] = code;
    }
    lens.iter()
        .map(|&l| {
            if l == 0 {
                return 0;
            }
            let c = next[usize::from(l)];
            next[usize::from(l)] += 1;
            c.reverse_bits() >> (32 - u32::from(l))
        })
        .collect()
}

/// Order in which the code-length code's lengths are sent.
const CL_ORDER: [usize; 19] = [
    16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15,
];

/// A literal-only block for `seg`: a dynamic Huffman block (257 literal /
/// length codes, two one-bit distance codes that are never used), or stored
/// blocks when those are smaller.
fn literal_block(w: &mut BitWriter, seg: &[u8], last: bool) {
    let mut freq = [0u32; 257];
    for &b in seg {
        freq[usize::from(b)] += 1;
    }
    freq[256] = 1;
    let mut lens = [0u8; 257 + 2];
    code_lengths(&freq, 15, &mut lens[..257]);
    lens[257] = 1;
    lens[258] = 1;
    // Run-length code the lengths: (symbol, extra bits value, extra bit count).
    let mut rle: Vec<(u8, u8, u8)> = Vec::new();
    let mut k = 0;
    while k < lens.len() {
        let v = lens[k];
        let mut run = lens[k..].iter().take_while(|&&x| x == v).count();
        k += run;
        if v == 0 {
            while run >= 11 {
                let r = run.min(138);
                rle.push((18, (r - 11) as u8, 7));
                run -= r;
            }
            if run >= 3 {
                rle.push((17, (run - 3) as u8, 3));
                run = 0;
            }
        } else {
            rle.push((v, 0, 0));
            run -= 1;
            while run >= 3 {
                let r = run.min(6);
                rle.push((16, (r - 3) as u8, 2));
                run -= r;
            }
        }
        rle.extend(core::iter::repeat_n((v, 0, 0), run));
    }
    let mut cl_freq = [0u32; 19];
    for &(s, _, _) in &rle {
        cl_freq[usize::from(s)] += 1;
    }
    let mut cl_lens = [0u8; 19];
    code_lengths(&cl_freq, 7, &mut cl_lens);
    let cl_codes = canonical_codes(&cl_lens);
    let ncl = CL_ORDER
        .iter()
        .rposition(|&s| cl_lens[s] != 0)
        .map_or(4, |p| (p + 1).max(4));
    let codes = canonical_codes(&lens[..257]);
    // Size in bits of the Huffman block against stored blocks.
    let header: u64 = 3
        + 5
        + 5
        + 4
        + 3 * ncl as u64
        + rle
            .iter()
            .map(|&(s, _, x)| u64::from(cl_lens[usize::from(s)]) + u64::from(x))
            .sum::<u64>();
    let body: u64 = freq
        .iter()
        .zip(&lens)
        .map(|(&f, &l)| u64::from(f) * u64::from(l))
        .sum();
    let pieces = seg.len().div_ceil(0xFFFF).max(1) as u64;
    if header + body >= (seg.len() as u64 + 5 * pieces) * 8 {
        stored_blocks(w, seg, last);
        return;
    }
    w.put(u32::from(last), 1);
    w.put(2, 2);
    w.put(0, 5); // HLIT: 257 codes
    w.put(1, 5); // HDIST: 2 codes
    w.put(ncl as u32 - 4, 4);
    for &s in &CL_ORDER[..ncl] {
        w.put(u32::from(cl_lens[s]), 3);
    }
    for &(s, x, xb) in &rle {
        let s = usize::from(s);
        w.put(cl_codes[s], u32::from(cl_lens[s]));
        w.put(u32::from(x), u32::from(xb));
    }
    // Literal codes, two per write (each at most 15 bits).
    let sym: [(u32, u32); 256] = core::array::from_fn(|b| (codes[b], u32::from(lens[b])));
    let mut pairs = seg.chunks_exact(2);
    for p in &mut pairs {
        let (c0, l0) = sym[usize::from(p[0])];
        let (c1, l1) = sym[usize::from(p[1])];
        w.put(c0 | (c1 << l0), l0 + l1);
    }
    for &b in pairs.remainder() {
        let (c, l) = sym[usize::from(b)];
        w.put(c, l);
    }
    w.put(codes[256], u32::from(lens[256]));
}

/// `seg` as stored blocks of at most 65,535 bytes.
fn stored_blocks(w: &mut BitWriter, seg: &[u8], last: bool) {
    let n = seg.len().div_ceil(0xFFFF).max(1);
    for (i, piece) in seg
        .chunks(0xFFFF)
        .chain(seg.is_empty().then_some(&[][..]))
        .enumerate()
    {
        w.put(u32::from(last && i + 1 == n), 1);
        w.put(0, 2);
        w.align();
        let len = piece.len() as u16;
        w.out.extend_from_slice(&len.to_le_bytes());
        w.out.extend_from_slice(&(!len).to_le_bytes());
        w.out.extend_from_slice(piece);
    }
}

/// Adler-32 (RFC 1950) of `data`.
#[cfg(not(feature = "std"))]
pub(super) fn adler32(data: &[u8]) -> u32 {
    // The largest run of sums that cannot overflow u32 before the modulo.
    const NMAX: usize = 5552;
    let (mut a, mut b) = (1u32, 0u32);
    for block in data.chunks(NMAX) {
        for &x in block {
            a += u32::from(x);
            b += a;
        }
        a %= 65521;
        b %= 65521;
    }
    (b << 16) | a
}

#[cfg(feature = "c-codecs")]
pub(super) fn adler32(data: &[u8]) -> u32 {
    libdeflater::adler32(data)
}

#[cfg(all(feature = "std", not(feature = "c-codecs")))]
pub(super) fn adler32(data: &[u8]) -> u32 {
    zlib_rs::adler32::adler32(1, data)
}

/// Encode `data` as a zlib stream at `level` into `out` (cleared first):
/// literal blocks for its [`literal_prefix`], then `raw_deflate` (which
/// appends a raw deflate stream of the bytes it is given to the vector) for
/// the rest. `None` (`out` then holds anything) when that prefix is empty,
/// the chunk is smaller than one segment or `raw_deflate` fails: the
/// caller's regular encoder then does all of it.
pub(super) fn encode(
    data: &[u8],
    level: u8,
    out: &mut Vec<u8>,
    raw_deflate: &mut dyn FnMut(&[u8], &mut Vec<u8>) -> bool,
) -> Option<usize> {
    if level == 0 || data.len() < SEG {
        return None;
    }
    let prefix = literal_prefix(data);
    if prefix == 0 {
        return None;
    }
    out.clear();
    // CMF: deflate, 32 KiB window; FLG: the level class and check bits.
    let flevel: u8 = match level {
        1 => 0,
        2..=5 => 1,
        6 => 2,
        _ => 3,
    };
    let mut flg = flevel << 6;
    flg += (31 - ((0x78u16 << 8 | u16::from(flg)) % 31) as u8) % 31;
    out.extend_from_slice(&[0x78, flg]);
    let whole = prefix == data.len();
    {
        let mut w = BitWriter {
            out: &mut *out,
            acc: 0,
            n: 0,
        };
        let segs = prefix.div_ceil(SEG);
        for (i, seg) in data[..prefix].chunks(SEG).enumerate() {
            literal_block(&mut w, seg, whole && i + 1 == segs);
        }
        if !whole {
            // An empty stored block aligns to a byte, where the rest starts.
            stored_blocks(&mut w, &[], false);
        }
        w.align();
    }
    if !whole && !raw_deflate(&data[prefix..], out) {
        return None;
    }
    out.extend_from_slice(&adler32(data).to_be_bytes());
    Some(out.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shuffled f64 values of a noisy signal (rounded to 3 decimals), as in
    /// the write benchmark: five noisy low planes, then compressible ones.
    fn shuffled_noisy(n: usize) -> Vec<u8> {
        let mut state = 0x1234_5678_9abc_def0u64;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64 - 0.5
        };
        let vals: Vec<[u8; 8]> = (0..n)
            .map(|i| {
                let v = ((i as f64 / 5000.0).sin() * 1000.0 + rnd() * 3.0) * 1000.0;
                (v.round() / 1000.0).to_le_bytes()
            })
            .collect();
        (0..8)
            .flat_map(|b| vals.iter().map(move |v| v[b]))
            .collect()
    }

    fn raw_miniz(data: &[u8], out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&miniz_oxide::deflate::compress_to_vec(data, 4));
        true
    }

    fn inflate(z: &[u8]) -> Vec<u8> {
        miniz_oxide::inflate::decompress_to_vec_zlib(z).expect("valid zlib stream")
    }

    #[test]
    fn noisy_planes_are_literals_and_the_stream_inflates() {
        let data = shuffled_noisy(131_072);
        let p = literal_prefix(&data);
        // The five noisy planes (and the near-random sixth) at least, not the
        // exponent planes.
        assert!(p >= 5 * 131_072 && p < data.len(), "prefix {p}");
        let mut out = Vec::new();
        let n = encode(&data, 4, &mut out, &mut raw_miniz).expect("split");
        assert_eq!(n, out.len());
        assert_eq!((u16::from(out[0]) << 8 | u16::from(out[1])) % 31, 0);
        assert_eq!(inflate(&out), data);
        // No worse than the match-finding encoder on the whole chunk.
        let plain = miniz_oxide::deflate::compress_to_vec_zlib(&data, 4).len();
        assert!(n as f64 <= plain as f64 * 1.01, "{n} vs {plain}");
    }

    #[test]
    fn random_bytes_are_stored_and_repetitive_data_is_left_alone() {
        let mut x = 7u32;
        let random: Vec<u8> = (0..200_000)
            .map(|_| {
                x = x.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
                (x >> 24) as u8
            })
            .collect();
        assert_eq!(literal_prefix(&random), random.len());
        let mut out = Vec::new();
        encode(&random, 6, &mut out, &mut raw_miniz).expect("all literal");
        assert_eq!(inflate(&out), random);
        // Stored: barely larger than the data.
        assert!(out.len() < random.len() + 64, "{}", out.len());
        // Text-like data with matches everywhere: not ours to encode.
        let text: Vec<u8> = (0..100_000u32)
            .map(|i| b"abcdefgh"[(i % 8) as usize] ^ (i / 4096) as u8)
            .collect();
        assert_eq!(literal_prefix(&text), 0);
        assert!(encode(&text, 4, &mut out, &mut raw_miniz).is_none());
        // Too small for a segment: not ours either.
        assert!(encode(&random[..1000], 4, &mut out, &mut raw_miniz).is_none());
    }

    #[test]
    fn skewed_literals_get_length_limited_complete_codes() {
        // Fibonacci frequencies would need a depth of ~25 unlimited.
        let mut freq = [0u32; 257];
        let (mut a, mut b) = (1u32, 1u32);
        for f in freq.iter_mut().take(30) {
            *f = a;
            (a, b) = (b, a + b);
        }
        let mut lens = [0u8; 257];
        code_lengths(&freq, 15, &mut lens);
        assert!(lens.iter().all(|&l| l <= 15));
        let kraft: f64 = lens
            .iter()
            .filter(|&&l| l > 0)
            .map(|&l| 0.5f64.powi(i32::from(l)))
            .sum();
        assert!((kraft - 1.0).abs() < 1e-12, "kraft {kraft}");
        // One used symbol still gets a complete two-symbol code.
        let mut one = [0u32; 19];
        one[8] = 40;
        let mut l19 = [0u8; 19];
        code_lengths(&one, 7, &mut l19);
        assert_eq!(l19.iter().filter(|&&l| l == 1).count(), 2);
        // A block of a skewed, match-free byte stream round-trips.
        let mut x = 99u32;
        let skew: Vec<u8> = (0..70_000)
            .map(|_| {
                x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                ((x >> 16) % 251) as u8 & ((x >> 8) as u8 | 0x0f)
            })
            .collect();
        let mut out = alloc::vec![0x78, 0x01];
        let mut w = BitWriter {
            out: &mut out,
            acc: 0,
            n: 0,
        };
        literal_block(&mut w, &skew, true);
        w.align();
        out.extend_from_slice(&adler32(&skew).to_be_bytes());
        assert_eq!(inflate(&out), skew);
    }

    #[test]
    fn adler32_matches_known_values() {
        // RFC 1950's "Wikipedia" example and the empty string.
        assert_eq!(adler32(b"Wikipedia"), 0x11E6_0398);
        assert_eq!(adler32(b""), 1);
        let long = alloc::vec![0xffu8; 100_000];
        assert_eq!(adler32(&long), miniz_adler(&long));
    }

    /// Data made of pieces: random bytes, skewed random bytes, runs of one
    /// byte, and copies of earlier data (matches at any distance).
    fn pieces(spec: &[(u8, u32, u32)], seed: u64) -> Vec<u8> {
        let mut state = seed | 1;
        let mut rnd = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        let mut v: Vec<u8> = Vec::new();
        for &(kind, len, dist) in spec {
            let len = len as usize;
            match kind % 4 {
                0 => v.extend((0..len).map(|_| rnd() as u8)),
                1 => v.extend((0..len).map(|_| (rnd() as u8) & (rnd() as u8) & 0x3f)),
                2 => v.extend(core::iter::repeat_n(rnd() as u8, len)),
                _ => {
                    let d = (dist as usize % (v.len() + 1)).max(1);
                    for _ in 0..len {
                        let b = v.len().checked_sub(d).map_or(7, |i| v[i]);
                        v.push(b);
                    }
                }
            }
        }
        v
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        #[test]
        fn any_data_round_trips(
            spec in proptest::collection::vec((0u8..4, 0u32..90_000, 0u32..70_000), 0..8),
            seed in proptest::prelude::any::<u64>(),
            level in 1u8..10,
        ) {
            let data = pieces(&spec, seed);
            let mut out = Vec::new();
            if let Some(n) = encode(&data, level, &mut out, &mut raw_miniz) {
                proptest::prop_assert_eq!(n, out.len());
                proptest::prop_assert_eq!(inflate(&out), data.clone());
                #[cfg(feature = "std")]
                proptest::prop_assert_eq!(
                    crate::filter::deflate::decode(&out, data.len()).unwrap(),
                    data.clone()
                );
            }
            // Through the filter's own encoder (the split or the plain path).
            let z = crate::filter::deflate::encode(&data, level);
            proptest::prop_assert_eq!(inflate(&z), data);
        }
    }

    fn miniz_adler(d: &[u8]) -> u32 {
        let z = miniz_oxide::deflate::compress_to_vec_zlib(d, 1);
        u32::from_be_bytes(z[z.len() - 4..].try_into().unwrap())
    }
}
