//! Shared by the timing harnesses `bench_read` and `bench_write` (not an
//! example of its own: no `main.rs`).

use std::io::BufRead;
use std::time::Instant;

/// User + system CPU seconds of this process (all threads).
pub fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: valid pointer to a rusage.
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// Run `once` as a warm-up, then timed: `reps` times (a number), or with
/// `reps` = `-` once per line read from stdin, after printing `ready`, so
/// that `cargo xtask bench` can alternate our runs with h5py's on a machine
/// whose speed drifts. Each timed run prints `seconds bytes cpu_seconds`.
///
/// With `-`, every timed run follows an untimed one at once: on this VM,
/// memory freed more than a second or two earlier has been handed back to
/// the host (free page reporting) and costs host page faults when touched
/// again, so a run that follows the other side's long run would pay for the
/// pause; back-to-back runs, as with a number of runs, do not.
pub fn timed_runs(reps: &str, mut once: impl FnMut() -> u64) {
    let timed = |once: &mut dyn FnMut() -> u64| {
        let (t, c) = (Instant::now(), cpu_seconds());
        let n = once();
        let wall = t.elapsed().as_secs_f64();
        println!("{wall:.6} {n} {:.6}", cpu_seconds() - c);
    };
    once();
    if reps == "-" {
        println!("ready");
        for line in std::io::stdin().lock().lines() {
            if line.is_err() {
                break;
            }
            once();
            timed(&mut once);
        }
    } else {
        let reps: usize = reps.parse().expect("REPS: a number or -");
        for _ in 0..reps {
            timed(&mut once);
        }
    }
}
