//! `Group::link` finds a name by descending the group's index (symbol-table
//! B-tree, compact link messages, dense name index by hash) and gives the same
//! link as the full listing, which the conformance test checks against
//! libhdf5. Large groups are made by h5py (libhdf5) in both group formats.

use h5fmt::format::message::LinkTarget;
use h5fmt::io::ReadAt;
use h5fmt::{ErrorKind, File, Limits, Object};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

fn corpus_files() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpus");
    let mut out = Vec::new();
    let Ok(manifest) = std::fs::read_to_string(root.join("manifest.tsv")) else {
        return out;
    };
    for line in manifest.lines().skip(1) {
        let rel = line.split('\t').next().unwrap_or("");
        // files/<repo>/<stem>: only files libhdf5 reads (they have an expected dump).
        let p = Path::new(rel);
        let (Some(repo), Some(stem)) = (
            p.parent().and_then(Path::file_name),
            p.file_name().map(|s| s.to_string_lossy().into_owned()),
        ) else {
            continue;
        };
        let exp = root
            .join("expected")
            .join(repo)
            .join(format!("{stem}.canon.json"));
        if exp.exists() {
            out.push(root.join(rel));
        }
    }
    let td = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    if let Ok(rd) = std::fs::read_dir(td) {
        for e in rd.flatten() {
            if e.path().extension().is_some_and(|x| x == "h5") {
                out.push(e.path());
            }
        }
    }
    out
}

/// Every link of every group reached from the root (hard links only,
/// each group once, at most `max_groups`): `link(name)` equals the listed
/// link, and a name that is not there is `NotFound`. Returns links checked.
fn check_file(file: &File, max_groups: usize) -> usize {
    let mut seen = BTreeSet::new();
    let mut todo = vec![String::from("/")];
    let mut checked = 0;
    while let Some(path) = todo.pop() {
        if seen.len() >= max_groups {
            break;
        }
        let Ok(g) = file.group(&path) else { continue };
        if !seen.insert(g.addr().0) {
            continue;
        }
        let Ok(links) = g.links() else { continue };
        for l in &links {
            let found = g
                .link(&l.name)
                .unwrap_or_else(|e| panic!("{path}: link({:?}) failed: {e}", l.name));
            assert_eq!(found.name, l.name, "{path}");
            assert_eq!(found.target, l.target, "{path}/{}", l.name);
            checked += 1;
            if let LinkTarget::Hard(_) = l.target {
                let child = if path == "/" {
                    format!("/{}", l.name)
                } else {
                    format!("{path}/{}", l.name)
                };
                if let Ok(Object::Group(_)) = file.object(&child) {
                    todo.push(child);
                }
            }
        }
        for absent in ["\u{1}absent", "zzzz\u{7f}absent", ""] {
            if links.iter().any(|l| l.name == absent) {
                continue;
            }
            match g.link(absent) {
                Err(e) => assert_eq!(e.kind(), ErrorKind::NotFound, "{path}: {e}"),
                Ok(l) => panic!("{path}: found absent link {:?}", l.name),
            }
        }
    }
    checked
}

#[test]
fn lookup_agrees_with_listing_over_corpus() {
    let files = corpus_files();
    let mut links = 0;
    let mut opened = 0;
    for f in &files {
        let Ok(file) = File::open_with_limits(f, Limits::default()) else {
            continue;
        };
        opened += 1;
        links += check_file(&file, 500);
    }
    eprintln!("{opened} files, {links} links looked up");
    if !files.is_empty() {
        assert!(opened > 100, "only {opened} files opened");
        assert!(links > 1000, "only {links} links checked");
    }
}

fn python() -> Option<PathBuf> {
    let venv = std::env::var("H5FMT_VENV").unwrap_or_else(|_| "/work/main/.venv".into());
    let p = Path::new(&venv).join("bin/python");
    p.exists().then_some(p)
}

/// A byte source that counts the bytes read from it.
struct Counting {
    bytes: Vec<u8>,
    read: AtomicU64,
}

impl ReadAt for Counting {
    fn len(&self) -> u64 {
        self.bytes.len() as u64
    }
    fn read_at(&self, pos: u64, buf: &mut [u8]) -> h5fmt::Result<()> {
        self.read.fetch_add(buf.len() as u64, Ordering::Relaxed);
        self.bytes.read_at(pos, buf)
    }
}

/// 3000 links in one group, written by libhdf5 as a symbol-table group
/// (multi-level v1 B-tree) and as a dense group (fractal heap + v2 B-tree):
/// every name is found, and finding one reads a small fraction of what
/// listing the group reads.
#[test]
fn big_groups_from_h5py() {
    let Some(py) = python() else {
        eprintln!("skipping: no python venv (set H5FMT_VENV)");
        return;
    };
    let dir = std::env::temp_dir().join(format!("h5fmt-lookup-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = r#"
import sys, h5py, numpy as np
for libver, name in [('earliest', 'stab.h5'), ('latest', 'dense.h5')]:
    with h5py.File(sys.argv[1] + '/' + name, 'w', libver=libver) as f:
        g = f.create_group('big')
        for i in range(3000):
            if i % 3 == 0:
                g.create_group('grp%05d' % (i * 7919 % 3000))
            elif i % 3 == 1:
                g['ds%05d' % i] = np.arange(3) + i
            else:
                g['soft%05d' % i] = h5py.SoftLink('/big/ds%05d' % (i - 1))
"#;
    let st = Command::new(&py)
        .arg("-c")
        .arg(script)
        .arg(&dir)
        .status()
        .expect("run python");
    assert!(st.success());
    for name in ["stab.h5", "dense.h5"] {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        let src = Arc::new(Counting {
            bytes,
            read: AtomicU64::new(0),
        });
        let file = File::from_source(src.clone(), Limits::default()).unwrap();
        let g = file.group("/big").unwrap();
        let before = src.read.load(Ordering::Relaxed);
        let links = g.links().unwrap();
        let list_bytes = src.read.load(Ordering::Relaxed) - before;
        assert_eq!(links.len(), 3000, "{name}");
        let before = src.read.load(Ordering::Relaxed);
        let l = g.link("ds01000").unwrap();
        let one_bytes = src.read.load(Ordering::Relaxed) - before;
        assert!(matches!(l.target, LinkTarget::Hard(_)), "{name}");
        eprintln!("{name}: one lookup read {one_bytes} bytes, listing {list_bytes}");
        // A symbol-table lookup loads the group's whole local heap (names),
        // as libhdf5 does; the B-tree descent is what is saved. A dense
        // lookup reads one path of the name index and one heap object.
        let factor = if name == "stab.h5" { 2 } else { 10 };
        assert!(
            one_bytes * factor < list_bytes,
            "{name}: one lookup read {one_bytes} bytes, listing {list_bytes}"
        );
        // Values through path lookup: ds01000 holds 1000..1003 (h5py wrote it).
        let v: Vec<i64> = file.dataset("/big/ds01000").unwrap().read().unwrap();
        assert_eq!(v, vec![1000, 1001, 1002], "{name}");
        let v: Vec<i64> = file.dataset("/big/soft01001").unwrap().read().unwrap();
        assert_eq!(v, vec![1000, 1001, 1002], "{name}");
        assert_eq!(check_file(&file, 10), 3001, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}
