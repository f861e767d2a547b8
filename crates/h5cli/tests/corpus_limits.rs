//! Every file of `../shared/corpus` and `testdata/` through `h5 ls -r`, `h5 dump`,
//! `h5 dump --json`, `h5 check` and `h5 repack`, each as its own process under a 4 GiB
//! address-space cap (`RLIMIT_AS`) with its output thrown away: none may end by a signal
//! (a crash, an abort on a failed allocation) or take more than 60 s. An exit status of
//! 1 or 2 (a reported problem) is fine: many corpus files are broken on purpose.
//!
//! The corpus holds datasets of 2^30–2^32 elements (mostly fill), whose dumps are
//! gigabytes of text: they are what the time bound is about.

mod common;

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const CAP: u64 = 4 << 30;
const LIMIT: Duration = Duration::from_secs(60);

const COMMANDS: [&[&str]; 5] = [
    &["ls", "-r"],
    &["dump"],
    &["dump", "--json"],
    &["check"],
    &["repack"],
];

fn files() -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut dirs = vec![common::repo_root().join("testdata")];
    if let Some(c) = common::corpus_dir() {
        dirs.push(c.join("files"));
    }
    while let Some(d) = dirs.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "expected") {
                    dirs.push(p);
                }
            } else if !p
                .extension()
                .is_some_and(|x| x == "md" || x == "json" || x == "txt" || x == "py")
            {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// What one run gave: the time, and the signal that ended it if one did.
struct Run {
    what: String,
    took: Duration,
    signal: Option<i32>,
    timed_out: bool,
}

fn run(file: &Path, args: &[&str], scratch: &Path) -> Run {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_h5"));
    cmd.args(args).arg(file);
    if args == ["repack"] {
        let _ = std::fs::remove_file(scratch);
        cmd.arg(scratch);
    }
    cmd.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only an async-signal-safe call between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: CAP,
                rlim_max: CAP,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let what = format!("h5 {} {}", args.join(" "), file.display());
    let t = Instant::now();
    let mut child = cmd.spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if t.elapsed() > LIMIT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    let took = t.elapsed();
    let _ = std::fs::remove_file(scratch);
    Run {
        what,
        took,
        signal: status.and_then(|s| s.signal()),
        timed_out: status.is_none(),
    }
}

#[test]
fn no_signal_and_under_a_minute_under_a_4_gib_cap() {
    let files = files();
    assert!(
        files.len() >= 20,
        "too few test files found ({}): is ../shared beside the repository?",
        files.len()
    );
    let jobs: Vec<(usize, usize)> = (0..files.len())
        .flat_map(|f| (0..COMMANDS.len()).map(move |c| (f, c)))
        .collect();
    let next = AtomicUsize::new(0);
    let runs = Mutex::new(Vec::new());
    let scratch_dir = Path::new(env!("CARGO_TARGET_TMPDIR"));
    std::thread::scope(|s| {
        for w in 0..2 {
            let (jobs, files, next, runs) = (&jobs, &files, &next, &runs);
            let scratch = scratch_dir.join(format!("corpus_limits_{}_{w}.h5", std::process::id()));
            s.spawn(move || loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&(f, c)) = jobs.get(i) else {
                    break;
                };
                let r = run(&files[f], COMMANDS[c], &scratch);
                runs.lock().unwrap().push(r);
            });
        }
    });
    let mut runs = runs.into_inner().unwrap();
    runs.sort_by_key(|r| std::cmp::Reverse(r.took));
    let bad: Vec<String> = runs
        .iter()
        .filter(|r| r.signal.is_some() || r.timed_out)
        .map(|r| {
            if r.timed_out {
                format!("{}: more than {LIMIT:?}", r.what)
            } else {
                format!("{}: ended by signal {:?}", r.what, r.signal)
            }
        })
        .collect();
    let slowest: Vec<String> = runs
        .iter()
        .take(3)
        .map(|r| format!("{:.1}s {}", r.took.as_secs_f64(), r.what))
        .collect();
    common::summary(
        "corpus_limits",
        &format!(
            "corpus limits: {} runs ({} files x {} commands) under a 4 GiB cap, {} ended by a \
             signal or over 60 s; slowest: {}",
            runs.len(),
            files.len(),
            COMMANDS.len(),
            bad.len(),
            slowest.join("; ")
        ),
    );
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
