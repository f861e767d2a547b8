//! Fuzz target logic. Each `run` takes arbitrary bytes and must return
//! (never panic, never hang, never allocate without bound). The shims in
//! `fuzz_targets/` call these under libFuzzer; the tests here call them on
//! seeds and pseudo-random bytes so that plain `cargo test` exercises them.

use h5fmt::codec::Cursor;
use h5fmt::{Ctx, Limits, Sizes};

/// Decode contexts chosen by the first input byte, so the fuzzer explores
/// every size-of-offsets/lengths combination under tight limits.
pub fn ctx_from(byte: u8) -> Ctx {
    let sizes = [2u8, 4, 8];
    let offsets = sizes[usize::from(byte % 3)];
    let lengths = sizes[usize::from((byte / 3) % 3)];
    Ctx {
        sizes: Sizes { offsets, lengths },
        limits: Limits::tight(),
    }
}

/// One message decoder per type number, all on the same bytes.
pub mod message {
    use super::*;
    use h5fmt::format::message::*;

    /// First byte: context; second: message type; rest: body.
    pub fn run(data: &[u8]) {
        let [c, kind, body @ ..] = data else { return };
        let ctx = ctx_from(*c);
        let mut cur = Cursor::new(body, 0);
        let _ = match kind % 24 {
            0x01 => Dataspace::decode(&mut cur, ctx).map(drop),
            0x02 => LinkInfo::decode(&mut cur, ctx).map(drop),
            0x03 => h5fmt::Datatype::decode(&mut cur, ctx).map(drop),
            0x04 => FillValue::decode_old(&mut cur, ctx).map(drop),
            0x05 => FillValue::decode(&mut cur, ctx).map(drop),
            0x06 => Link::decode(&mut cur, ctx).map(drop),
            0x07 => ExternalFiles::decode(&mut cur, ctx).map(drop),
            0x08 => Layout::decode(&mut cur, ctx).map(drop),
            0x0A => GroupInfo::decode(&mut cur, ctx).map(drop),
            0x0B => FilterPipeline::decode(&mut cur, ctx).map(drop),
            0x0C => AttributeMessage::decode(&mut cur, ctx).map(drop),
            0x0D => misc::Comment::decode(&mut cur, ctx).map(drop),
            0x0F => misc::SohmTableMessage::decode(&mut cur, ctx).map(drop),
            0x10 => Continuation::decode(&mut cur, ctx).map(drop),
            0x11 => SymbolTableMessage::decode(&mut cur, ctx).map(drop),
            0x12 => misc::ModificationTime::decode(&mut cur, ctx).map(drop),
            0x15 => AttributeInfo::decode(&mut cur, ctx).map(drop),
            _ => SharedMessage::decode(&mut cur, ctx).map(drop),
        };
    }
}

/// The datatype decoder plus element decoding of whatever it yields.
pub mod datatype {
    use super::*;

    /// First byte: context; then a datatype message; the rest is element data.
    pub fn run(data: &[u8]) {
        let [c, body @ ..] = data else { return };
        let ctx = ctx_from(*c);
        let mut cur = Cursor::new(body, 0);
        if let Ok(t) = h5fmt::Datatype::decode(&mut cur, ctx) {
            let rest = cur.rest();
            let size = t.size().max(1);
            let count = (rest.len() as u64 / size).min(64);
            let _ =
                h5fmt::data::decode::decode_elements(&t, rest, count, ctx, &h5fmt::data::NoHeap);
        }
    }
}

/// The superblock decoder.
pub mod superblock {
    use super::*;

    /// The bytes are a file prefix.
    pub fn run(data: &[u8]) {
        let mut cur = Cursor::new(data, 0);
        let _ = h5fmt::format::superblock::Superblock::decode(&mut cur, ctx_from(0));
    }
}

/// Filter pipeline decoding of one chunk.
pub mod filter {
    use h5fmt::format::message::{Filter, FilterPipeline};

    /// First byte picks the filter, second the expected size (KiB), the rest is the chunk.
    pub fn run(data: &[u8]) {
        let [f, n, chunk @ ..] = data else { return };
        let ids = [1u16, 2, 3, 5, 6, 32000, 32001, 32004, 32008, 32015, 307];
        let id = ids[usize::from(*f) % ids.len()];
        let cd = match id {
            2 => vec![4],
            1 => vec![6],
            _ => vec![],
        };
        let p = FilterPipeline {
            filters: vec![Filter {
                id,
                name: None,
                flags: 0,
                client_data: cd,
            }],
        };
        let expected = usize::from(*n) * 1024;
        let _ = h5fmt::filter::decode_chunk(&p, 0, chunk.to_vec(), expected, 4);
    }
}

/// Whole file: open, walk every object, read every attribute and dataset,
/// under tight limits (the canonical dump does all of that).
pub mod whole_file {
    use std::sync::Arc;

    /// The bytes are a whole file.
    pub fn run(data: &[u8]) {
        let src: Arc<dyn h5fmt::io::ReadAt> = Arc::new(data.to_vec());
        if let Ok(f) = h5fmt::File::from_source(src, h5fmt::Limits::tight()) {
            let _ = h5cli::canon::dump_file(&f);
        }
    }
}

#[cfg(test)]
mod tests {
    /// xorshift64*: deterministic pseudo-random bytes without a dependency.
    fn rng(seed: u64) -> impl FnMut() -> u64 {
        let mut s = seed | 1;
        move || {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            s.wrapping_mul(0x2545_f491_4f6c_dd1d)
        }
    }

    fn random_inputs(n: usize, max_len: usize) -> Vec<Vec<u8>> {
        let mut r = rng(0x5eed);
        (0..n)
            .map(|_| {
                let len = (r() as usize) % max_len;
                (0..len).map(|_| r() as u8).collect()
            })
            .collect()
    }

    fn corpus_files(limit: usize) -> Vec<Vec<u8>> {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../shared/corpus/files");
        let mut out = Vec::new();
        let Ok(owners) = std::fs::read_dir(dir) else {
            return out;
        };
        let mut paths: Vec<_> = owners
            .flatten()
            .flat_map(|o| {
                std::fs::read_dir(o.path())
                    .into_iter()
                    .flatten()
                    .flatten()
                    .map(|e| e.path())
            })
            .collect();
        paths.sort();
        for p in paths {
            if let Ok(b) = std::fs::read(&p) {
                if b.len() < 64 * 1024 {
                    out.push(b);
                }
            }
            if out.len() >= limit {
                break;
            }
        }
        out
    }

    #[test]
    fn message_smoke() {
        for d in random_inputs(20_000, 96) {
            super::message::run(&d);
        }
    }

    #[test]
    fn datatype_smoke() {
        for d in random_inputs(20_000, 128) {
            super::datatype::run(&d);
        }
    }

    #[test]
    fn superblock_smoke() {
        for mut d in random_inputs(5_000, 128) {
            if d.len() > 8 {
                d[..8].copy_from_slice(&h5fmt::format::superblock::SIGNATURE);
                d[8] %= 4;
            }
            super::superblock::run(&d);
        }
    }

    #[test]
    fn filter_smoke() {
        for d in random_inputs(5_000, 512) {
            super::filter::run(&d);
        }
    }

    #[test]
    fn whole_file_smoke_with_bit_flips() {
        let mut r = rng(42);
        for f in corpus_files(40) {
            super::whole_file::run(&f);
            for _ in 0..10 {
                let mut m = f.clone();
                let i = (r() as usize) % m.len();
                m[i] ^= 1 << (r() % 8);
                super::whole_file::run(&m);
            }
        }
    }
}
