//! Mutation stress: thousands of files made by bit flips, byte insertions,
//! truncations and splices of real HDF5 files (testdata and the shared
//! corpus), each opened, walked and fully read under tight `Limits` in a
//! child process with a memory cap and a timeout. Expected: 0 panics,
//! 0 aborts, 0 timeouts, 0 memory-cap kills.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const MEMORY_CAP_KIB: u64 = 2 * 1024 * 1024;
const TIMEOUT: Duration = Duration::from_secs(60);
const BATCH: usize = 40;

fn rng(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed | 1;
    move || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

fn sources() -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut paths: Vec<PathBuf> = Vec::new();
    let mut stack = vec![
        root.join("../testdata"),
        root.join("../../shared/corpus/files"),
    ];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p
                .extension()
                .is_some_and(|x| x == "h5" || x == "hdf5" || x == "he5" || x == "nc")
            {
                paths.push(p);
            }
        }
    }
    paths.sort();
    paths
        .into_iter()
        .filter_map(|p| std::fs::read(p).ok())
        .filter(|b| b.len() <= 256 * 1024 && b.len() >= 64)
        .collect()
}

fn mutate(src: &[Vec<u8>], r: &mut impl FnMut() -> u64) -> Vec<u8> {
    let pick = |r: &mut dyn FnMut() -> u64| &src[(r() as usize) % src.len()];
    let mut f = pick(r).clone();
    let n = 1 + (r() % 8) as usize;
    for _ in 0..n {
        let len = f.len().max(1);
        match r() % 6 {
            0 | 1 => {
                let i = (r() as usize) % len;
                if let Some(b) = f.get_mut(i) {
                    *b ^= 1 << (r() % 8);
                }
            }
            2 => {
                let i = (r() as usize) % len;
                if let Some(b) = f.get_mut(i) {
                    *b = [0u8, 0xff, 0x7f, 0x80, 1][(r() % 5) as usize];
                }
            }
            3 => {
                let i = (r() as usize) % (f.len() + 1);
                let k = 1 + (r() % 16) as usize;
                let ins: Vec<u8> = (0..k).map(|_| r() as u8).collect();
                f.splice(i..i, ins);
            }
            4 => {
                let keep = (r() as usize) % len;
                f.truncate(keep.max(8));
            }
            _ => {
                let other = pick(r);
                let a = (r() as usize) % len;
                let b = (r() as usize) % other.len().max(1);
                let k = ((r() as usize) % 512)
                    .min(other.len() - b)
                    .min(f.len() - a.min(f.len()));
                if a + k <= f.len() {
                    f[a..a + k].copy_from_slice(&other[b..b + k]);
                }
            }
        }
    }
    f
}

enum Outcome {
    Ok,
    Failed(String),
}

fn run_child(files: &[PathBuf]) -> Outcome {
    let exe = env!("CARGO_BIN_EXE_mutate_child");
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(format!("ulimit -v {MEMORY_CAP_KIB} && exec \"$0\" \"$@\""))
        .arg(exe)
        .args(files)
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn child");
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if status.success() {
                    return Outcome::Ok;
                }
                let mut err = String::new();
                if let Some(mut e) = child.stderr.take() {
                    use std::io::Read;
                    let _ = e.read_to_string(&mut err);
                }
                return Outcome::Failed(format!(
                    "{status}: {}",
                    err.lines().take(3).collect::<Vec<_>>().join(" | ")
                ));
            }
            Ok(None) if start.elapsed() > TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Outcome::Failed("timeout".into());
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(e) => return Outcome::Failed(e.to_string()),
        }
    }
}

#[test]
fn mutated_files_never_crash_hang_or_blow_memory() {
    let src = sources();
    assert!(!src.is_empty(), "no source files found for mutation");
    let count: usize = std::env::var("H5_STRESS_FILES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2000);
    let seed: u64 = std::env::var("H5_STRESS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x4844_4635);
    let dir = std::env::temp_dir().join(format!("h5stress-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut r = rng(seed);
    let mut files = Vec::with_capacity(count);
    for i in 0..count {
        let p = dir.join(format!("m{i:05}.h5"));
        std::fs::write(&p, mutate(&src, &mut r)).unwrap();
        files.push(p);
    }
    let mut failures = Vec::new();
    for batch in files.chunks(BATCH) {
        if let Outcome::Failed(_) = run_child(batch) {
            // Narrow it down to the files that fail on their own.
            for f in batch {
                if let Outcome::Failed(why) = run_child(std::slice::from_ref(f)) {
                    let keep = std::env::temp_dir().join(format!(
                        "h5stress-fail-{}",
                        f.file_name().unwrap().to_string_lossy()
                    ));
                    let _ = std::fs::copy(f, &keep);
                    failures.push(format!("{} ({why})", keep.display()));
                }
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    println!(
        "mutation stress: {count} files from {} sources, {} failures",
        src.len(),
        failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {count} mutated files crashed, hung or blew the memory cap:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
