//! Seed corpus builder: `seeds TARGET OUT_DIR SRC...` writes seed inputs for
//! fuzz target TARGET, made from the HDF5 files under the SRC directories,
//! into OUT_DIR (one file per seed, named by index).

use h5fmt::{File, Object};
use std::path::{Path, PathBuf};

const MAX_FILE: usize = 64 * 1024;

fn files(srcs: &[String]) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack: Vec<PathBuf> = srcs.iter().map(PathBuf::from).collect();
    while let Some(d) = stack.pop() {
        if d.is_file() {
            out.push(d);
            continue;
        }
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.extension().is_some_and(|x| {
                ["h5", "hdf5", "he5", "nc", "hdf"].contains(&&*x.to_string_lossy())
            }) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// Objects reachable by hard links (bounded).
fn objects(f: &File) -> Vec<Object> {
    let Ok(root) = f.root() else { return vec![] };
    let mut out = vec![Object::Group(root.clone())];
    let mut seen = std::collections::BTreeSet::from([root.addr().0]);
    let mut queue = vec![root];
    while let Some(g) = queue.pop() {
        let Ok(links) = g.links() else { continue };
        for l in links {
            if let h5fmt::format::message::LinkTarget::Hard(a) = l.target {
                if seen.insert(a.0) && seen.len() < 200 {
                    if let Ok(o) = f.object_at(a, &l.name) {
                        if let Object::Group(s) = &o {
                            queue.push(s.clone());
                        }
                        out.push(o);
                    }
                }
            }
        }
    }
    out
}

fn positions(hay: &[u8], sig: &[u8]) -> Vec<usize> {
    hay.windows(sig.len())
        .enumerate()
        .filter(|(_, w)| *w == sig)
        .map(|(i, _)| i)
        .take(16)
        .collect()
}

fn struct_seed(ctx: u8, param: u8, addr: usize, bytes: &[u8]) -> Vec<u8> {
    let mut v = vec![ctx, param];
    v.extend_from_slice(&(addr as u32).to_le_bytes());
    v.extend_from_slice(bytes);
    v
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [target, out, srcs @ ..] = &args[..] else {
        eprintln!("usage: seeds TARGET OUT_DIR SRC...");
        std::process::exit(2);
    };
    let out = Path::new(out);
    std::fs::create_dir_all(out).expect("create output directory");
    let mut seeds: Vec<Vec<u8>> = Vec::new();
    let sig: Option<&[u8]> = match target.as_str() {
        "btree_v1" => Some(b"TREE"),
        "btree_v2" => Some(b"BTHD"),
        "local_heap" => Some(b"HEAP"),
        "global_heap" => Some(b"GCOL"),
        "fractal_heap" => Some(b"FRHP"),
        "fixed_array" => Some(b"FAHD"),
        "extensible_array" => Some(b"EAHD"),
        _ => None,
    };
    for p in files(srcs) {
        let Ok(bytes) = std::fs::read(&p) else {
            continue;
        };
        if bytes.len() > MAX_FILE || !bytes.starts_with(&h5fmt::format::superblock::SIGNATURE) {
            continue;
        }
        let Ok(f) = File::from_bytes(bytes.clone()) else {
            continue;
        };
        let c = h5fuzz::ctx_byte(f.ctx().sizes);
        match target.as_str() {
            "whole_file" | "differential" => seeds.push(bytes.clone()),
            "read_write" => {
                for v in 0..2 {
                    seeds.push(h5fuzz::read_write::seed(
                        &bytes,
                        v + (seeds.len() % 2) as u8 * 2,
                    ));
                }
            }
            "superblock" => seeds.push(bytes.iter().take(512).copied().collect()),
            "object_header" => {
                for o in objects(&f) {
                    seeds.push(struct_seed(c, 0, o.addr().0 as usize, &bytes));
                }
            }
            "message" | "datatype" | "roundtrip" => {
                if target == "roundtrip" {
                    let sig = f.superblock().sig_offset as usize;
                    let mut v = vec![c, 0xFF];
                    v.extend(bytes.iter().skip(sig).take(512));
                    seeds.push(v);
                }
                for o in objects(&f) {
                    for m in &o.header().messages {
                        if target != "datatype" {
                            let mut v = vec![c, (m.kind % 24) as u8];
                            v.extend_from_slice(&m.data);
                            seeds.push(v);
                        } else if m.kind == 3 {
                            let mut v = vec![c];
                            v.extend_from_slice(&m.data);
                            seeds.push(v);
                        }
                    }
                }
            }
            _ => {
                if let Some(sig) = sig {
                    for at in positions(&bytes, sig) {
                        if target == "btree_v1" {
                            let node_type = bytes.get(at + 4).copied().unwrap_or(0);
                            let params: &[u8] = if node_type == 0 { &[0] } else { &[1, 2, 3] };
                            for &r in params {
                                seeds.push(struct_seed(c, r, at, &bytes));
                            }
                        } else {
                            seeds.push(struct_seed(c, 2, at, &bytes));
                        }
                    }
                }
            }
        }
    }
    if target == "selection" {
        let w = |v: &[u32]| v.iter().flat_map(|x| x.to_le_bytes()).collect::<Vec<u8>>();
        seeds.push([vec![8u8, 10], w(&[3, 1, 0, 0])].concat());
        seeds.push([vec![8u8, 10], w(&[0, 1, 0, 0])].concat());
        seeds.push([vec![8u8, 10], w(&[1, 1, 0, 24, 2, 2, 0, 0, 3, 4])].concat());
        seeds.push([vec![8u8, 10], w(&[2, 1, 0, 28, 2, 1, 0, 0, 3, 4])].concat());
    }
    seeds.sort();
    seeds.dedup();
    for (i, s) in seeds.iter().take(2000).enumerate() {
        std::fs::write(out.join(format!("seed-{i:05}")), s).expect("write seed");
    }
    println!(
        "{}: {} seeds in {}",
        target,
        seeds.len().min(2000),
        out.display()
    );
}
