//! The kill test: a child process appends, truncates, updates and
//! preallocates a table in a loop through `TableEditor`, recording each
//! state it is about to commit (`P`) and each committed one (`C`) in a side
//! file; the parent SIGKILLs it at random moments, ≥ 300 times, and after
//! each kill checks that the file opens in our reader with NROWS and rows
//! `[0, NROWS)` equal to the last committed state or the pending one that
//! follows it. Every killed file is kept and checked again by h5py at the
//! end (values compared with the side file's states).
//!
//! Columns `a`, `f` and `s` carry all four search indexes (12 in all):
//! after every kill, every index that is current by its validity tokens
//! must verify clean (`index::verify_table`) for rows `[0, NROWS)`, and
//! when the child was killed between operations all 12 must be current.

mod common;

use h5fmt::format::datatype::Datatype;
use h5fmt::{File, FileEditor, FileWriter, Value};
use h5table::check::Severity;
use h5table::index::{discover, verify_table, Validity};
use h5table::write::{ColumnData, ColumnSpec, IndexSpec, TableEditor, TableWriter};
use h5table::Table;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const TABLE: &str = "/k/t";

/// One table state: column `a` (i64), `f` (f64), `s` (vlen string).
#[derive(Debug, Clone, PartialEq)]
struct State {
    a: Vec<i64>,
    f: Vec<f64>,
    s: Vec<String>,
}

impl State {
    fn encode(&self) -> String {
        let a: Vec<String> = self.a.iter().map(i64::to_string).collect();
        let f: Vec<String> = self.f.iter().map(|x| format!("{x:?}")).collect();
        format!("{}|{}|{}", a.join(","), f.join(","), self.s.join(","))
    }
    fn decode(t: &str) -> State {
        let mut it = t.split('|');
        let part = |p: Option<&str>| -> Vec<String> {
            match p.unwrap_or("") {
                "" => Vec::new(),
                x => x.split(',').map(str::to_owned).collect(),
            }
        };
        let a = part(it.next()).iter().map(|x| x.parse().unwrap()).collect();
        let f = part(it.next()).iter().map(|x| x.parse().unwrap()).collect();
        let s = part(it.next());
        State { a, f, s }
    }
}

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

/// Every current index verifies clean; returns (current, all) counts.
fn check_indexes(path: &Path) -> Result<(usize, usize), String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let g = file.group(TABLE).map_err(|e| e.to_string())?;
    let t = Table::open(&g).map_err(|e| e.to_string())?;
    let d = discover(&t).map_err(|e| e.to_string())?;
    let findings = verify_table(&t).map_err(|e| e.to_string())?;
    let errors: Vec<_> = findings
        .iter()
        .filter(|f| f.severity == Severity::Error)
        .collect();
    if !errors.is_empty() {
        return Err(format!("verify_table: {errors:#?}"));
    }
    let current = d
        .indexes
        .iter()
        .filter(|i| i.validity == Validity::Current)
        .count();
    Ok((current, d.indexes.len()))
}

/// Why the indexes of the file at `path` are not current, one per line.
fn stale_reasons(path: &Path) -> String {
    let file = File::open(path).unwrap();
    let t = Table::open(&file.group(TABLE).unwrap()).unwrap();
    let d = discover(&t).unwrap();
    let mut out = format!("table NROWS {} GENERATION {:?}", t.nrows(), t.generation);
    for i in &d.indexes {
        out.push_str(&format!("\n  {}: {:?}", i.path, i.validity));
    }
    out
}

fn read_state(path: &Path) -> Result<State, String> {
    let file = File::open(path).map_err(|e| e.to_string())?;
    let g = file.group(TABLE).map_err(|e| e.to_string())?;
    let t = Table::open(&g).map_err(|e| e.to_string())?;
    let n = t.nrows();
    let col = |name: &str| -> Result<Vec<Value>, String> {
        Ok(t.column(name)
            .map_err(|e| e.to_string())?
            .read(0..n)
            .map_err(|e| e.to_string())?
            .values)
    };
    let a = col("a")?
        .into_iter()
        .map(|v| match v {
            Value::Int(i) => Ok(i),
            o => Err(format!("a: {o:?}")),
        })
        .collect::<Result<_, _>>()?;
    let f = col("f")?
        .into_iter()
        .map(|v| match v {
            Value::F64(x) => Ok(x),
            o => Err(format!("f: {o:?}")),
        })
        .collect::<Result<_, _>>()?;
    let s = col("s")?
        .into_iter()
        .map(|v| match v {
            Value::Str(x) => Ok(x),
            o => Err(format!("s: {o:?}")),
        })
        .collect::<Result<_, _>>()?;
    Ok(State { a, f, s })
}

/// The accepted states of a side file: the last committed one, and the
/// pending one after it, if any.
fn accepted(side: &Path) -> (State, Option<State>) {
    let text = std::fs::read_to_string(side).unwrap();
    let mut committed = None;
    let mut pending = None;
    // A line the kill cut short (no newline yet) was never logged.
    for l in text
        .split_inclusive('\n')
        .filter_map(|l| l.strip_suffix('\n'))
    {
        if let Some(x) = l.strip_prefix("C ") {
            committed = Some(State::decode(x));
            pending = None;
        } else if let Some(x) = l.strip_prefix("P ") {
            pending = Some(State::decode(x));
        }
    }
    (committed.expect("a committed state"), pending)
}

/// The child: mutate the table forever, logging states.
#[test]
#[ignore = "the child process of kill_test_300_random_sigkills"]
fn kill_child() {
    let Ok(path) = std::env::var("H5TABLE_KILL_FILE") else {
        return;
    };
    let side = PathBuf::from(std::env::var("H5TABLE_KILL_SIDE").unwrap());
    let seed: u64 = std::env::var("H5TABLE_KILL_SEED").unwrap().parse().unwrap();
    let (mut state, _) = accepted(&side);
    let mut log = std::fs::OpenOptions::new()
        .append(true)
        .open(&side)
        .unwrap();
    let mut note = |tag: &str, s: &State| {
        // One write(2) per line: `writeln!` on a `File` writes its pieces
        // separately, and a kill between them left "C " (an empty state).
        log.write_all(format!("{tag} {}\n", s.encode()).as_bytes())
            .unwrap();
        log.sync_data().unwrap();
    };
    let mut rng = Rng(seed | 1);
    let mut ed = FileEditor::open(&path).unwrap();
    let mut counter = seed % 1_000_000 * 1000;
    // A kill during an operation may leave stale indexes, and `reserve`
    // touches none: repair what the last kill left first (an operation of
    // its own, pending, as an application would after a crash).
    {
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        note("P", &state);
        te.rebuild_stale_indexes().unwrap();
        drop(te);
        note("C", &state);
    }
    loop {
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        let n = state.a.len() as u64;
        let op = rng.below(10);
        let mut next = state.clone();
        if op < 5 || n == 0 {
            let k = 1 + rng.below(12);
            let mut a = Vec::new();
            for _ in 0..k {
                counter += 1;
                a.push(counter as i64);
            }
            let f: Vec<f64> = a.iter().map(|x| *x as f64 * 0.5).collect();
            let s: Vec<String> = a.iter().map(|x| format!("v{x}")).collect();
            next.a.extend(&a);
            next.f.extend(&f);
            next.s.extend(s.iter().cloned());
            note("P", &next);
            let names = te.column_names();
            let mut rows = vec![
                ("a", ColumnData::Int64(a)),
                ("f", ColumnData::Float64(f)),
                ("s", ColumnData::Str(s.into_iter().map(Some).collect())),
            ];
            for x in names.iter().filter(|n| n.starts_with("extra")) {
                rows.push((x.as_str(), ColumnData::Int16(vec![7; k as usize])));
            }
            te.append(&rows).unwrap();
        } else if op < 7 {
            let to = rng.below(n + 1);
            next.a.truncate(to as usize);
            next.f.truncate(to as usize);
            next.s.truncate(to as usize);
            note("P", &next);
            te.truncate(to).unwrap();
        } else if op < 9 {
            let start = rng.below(n);
            let k = 1 + rng.below((n - start).min(5));
            let mut a = Vec::new();
            for _ in 0..k {
                counter += 1;
                a.push(-(counter as i64));
            }
            for (i, v) in a.iter().enumerate() {
                next.a[start as usize + i] = *v;
            }
            note("P", &next);
            te.update("a", start, ColumnData::Int64(a)).unwrap();
        } else if rng.below(2) == 0 {
            // Preallocation changes no row: nothing pending.
            te.reserve(1 + rng.below(20)).unwrap();
        } else {
            // Adding or dropping a column changes none of a, f, s, but its
            // commit changes GENERATION (and so the index tokens): pending.
            note("P", &next);
            let names = te.column_names();
            match names.iter().find(|n| n.starts_with("extra")) {
                Some(x) => te.drop_column(x).unwrap(),
                None => te
                    .add_column(
                        ColumnSpec::new(&format!("extra{counter}"), Datatype::int_le(2, true))
                            .chunk(3),
                        Some(ColumnData::Int16(vec![7; te.nrows() as usize])),
                    )
                    .unwrap(),
            }
        }
        drop(te);
        state = next;
        note("C", &state);
    }
}

const H5PY_CHECK: &str = r#"
import sys, h5py, math
for p in sys.argv[1:]:
    with h5py.File(p, 'r') as f:
        t = f['/k/t']
        n = int(t.attrs['NROWS'])
        a = [str(int(x)) for x in t['a'][:n]]
        fl = [repr(float(x)) for x in t['f'][:n]]
        s = [x.decode() if isinstance(x, bytes) else x for x in t['s'][:n]]
        print(p, n, ','.join(a) + '|' + ','.join(fl) + '|' + ','.join(s))
"#;

#[test]
fn kill_test_300_random_sigkills() {
    let py = common::python();
    let top = common::tmp("kill");
    let _ = std::fs::remove_dir_all(&top);
    let kills = std::env::var("H5TABLE_KILLS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300usize);
    // Two chains (each its own table file) at once: most of a kill's time is the wait before
    // the SIGKILL, so two overlap on two cores.
    let chains: Vec<ChainStats> = std::thread::scope(|sc| {
        let handles: Vec<_> = (0..2)
            .map(|c| {
                let (py, top) = (&py, &top);
                let n = kills / 2 + (kills % 2) * usize::from(c == 0);
                sc.spawn(move || kill_chain(py, &top.join(format!("chain{c}")), c, n))
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    let sum = |f: fn(&ChainStats) -> usize| chains.iter().map(f).sum::<usize>();
    eprintln!(
        "{kills} kills in {} chains: {} saw a new state; {} during an operation \
         ({} of those after its NROWS commit); indexes all current after \
         {}, some stale by their tokens after {}",
        chains.len(),
        sum(|c| c.moved),
        sum(|c| c.mid_op),
        sum(|c| c.mid_op_new),
        sum(|c| c.current_seen),
        sum(|c| c.stale_seen),
    );
    let _ = std::fs::remove_dir_all(&top);
}

/// What one chain of kills saw.
struct ChainStats {
    moved: usize,
    mid_op: usize,
    mid_op_new: usize,
    current_seen: usize,
    stale_seen: usize,
}

/// `kills` kills of children editing one table file in `dir`, each child continuing the
/// file the last one left.
fn kill_chain(py: &Path, dir: &Path, chain: usize, kills: usize) -> ChainStats {
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("t.h5");
    let mut w = FileWriter::create(&path).unwrap();
    TableWriter::new()
        .column(ColumnSpec::new("a", Datatype::int_le(8, true)).chunk(4))
        .column(
            ColumnSpec::new("f", Datatype::float_le(8))
                .chunk(7)
                .deflate(3),
        )
        .column(ColumnSpec::new("s", Datatype::vlen_utf8()).chunk(5))
        .write_at(&mut w, TABLE, &[])
        .unwrap();
    w.close().unwrap();
    {
        let mut ed = FileEditor::open(&path).unwrap();
        let mut te = TableEditor::open(&mut ed, TABLE).unwrap();
        for c in ["a", "f", "s"] {
            for k in [
                IndexSpec::minmax(),
                IndexSpec::sorted(),
                IndexSpec::bitmap(),
                IndexSpec::bloom(),
            ] {
                te.build_index(c, k).unwrap();
            }
        }
    }
    assert_eq!(check_indexes(&path), Ok((12, 12)));
    let (mut stale_seen, mut current_seen) = (0, 0);
    let mut known = State {
        a: vec![],
        f: vec![],
        s: vec![],
    };
    let exe = std::env::current_exe().unwrap();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15 ^ u64::from(std::process::id()) ^ (chain as u64) << 32);
    let mut snapshots: Vec<(PathBuf, State, Option<State>)> = Vec::new();
    let mut moved = 0;
    let (mut mid_op, mut mid_op_new) = (0, 0);
    for i in 0..kills {
        let side = dir.join("side.txt");
        std::fs::write(&side, format!("C {}\n", known.encode())).unwrap();
        let mut child = Command::new(&exe)
            .args([
                "--exact",
                "kill_child",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env("H5TABLE_KILL_FILE", &path)
            .env("H5TABLE_KILL_SIDE", &side)
            .env(
                "H5TABLE_KILL_SEED",
                (rng.next() % 1_000_000_007).to_string(),
            )
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // Wait for the child to start working (the machine may be loaded),
        // then kill it at a random moment of its work.
        let start_len = std::fs::metadata(&side).map(|m| m.len()).unwrap_or(0);
        let t0 = std::time::Instant::now();
        while std::fs::metadata(&side).map(|m| m.len()).unwrap_or(0) == start_len
            && t0.elapsed() < Duration::from_secs(60)
            && matches!(child.try_wait(), Ok(None))
        {
            std::thread::sleep(Duration::from_millis(1));
        }
        // Index maintenance (four indexes on three columns, unoptimised test
        // build) makes each operation take tens of milliseconds.
        std::thread::sleep(Duration::from_millis(rng.below(400)));
        if let Ok(Some(status)) = child.try_wait() {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                e.read_to_string(&mut err).unwrap();
            }
            panic!("kill {i}: the child ended by itself ({status}):\n{err}");
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        let (committed, pending) = accepted(&side);
        let got = read_state(&path).unwrap_or_else(|e| panic!("kill {i}: our reader: {e}"));
        if got != committed && Some(&got) != pending.as_ref() {
            panic!(
                "kill {i}: the file holds neither the committed nor the pending state\n\
                 file      {got:?}\ncommitted {committed:?}\npending   {pending:?}"
            );
        }
        let (cur, all) = check_indexes(&path).unwrap_or_else(|e| panic!("kill {i}: {e}"));
        assert_eq!(all, 12, "kill {i}: indexes lost");
        if pending.is_none() && cur != 12 {
            panic!(
                "kill {i}: between operations every index is current, {cur} of 12 are: {}",
                stale_reasons(&path)
            );
        }
        if cur < 12 {
            stale_seen += 1;
        } else {
            current_seen += 1;
        }
        if got != known {
            moved += 1;
        }
        if pending.is_some() {
            mid_op += 1;
            if Some(&got) == pending.as_ref() {
                mid_op_new += 1;
            }
        }
        known = got;
        let snap = dir.join(format!("kill{i}.h5"));
        std::fs::copy(&path, &snap).unwrap();
        snapshots.push((snap, committed, pending));
        if snapshots.len() == 50 {
            h5py_check_snapshots(py, &mut snapshots);
        }
    }
    assert!(
        moved > kills / 4,
        "chain {chain}: the child made too little progress: {moved} changes in {kills} kills"
    );
    h5py_check_snapshots(py, &mut snapshots);
    ChainStats {
        moved,
        mid_op,
        mid_op_new,
        current_seen,
        stale_seen,
    }
}

/// h5py reads every killed file with the same rows as an accepted state;
/// the snapshots are deleted once checked (the file grows with every
/// index rebuild, and 300 copies would take gigabytes).
fn h5py_check_snapshots(py: &Path, snapshots: &mut Vec<(PathBuf, State, Option<State>)>) {
    for batch in snapshots.chunks(100) {
        let args: Vec<&Path> = batch.iter().map(|(p, _, _)| p.as_path()).collect();
        let out = Command::new(py)
            .arg("-c")
            .arg(H5PY_CHECK)
            .args(&args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "h5py failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), batch.len());
        for (l, (p, committed, pending)) in lines.iter().zip(batch) {
            let mut it = l.splitn(3, ' ');
            assert_eq!(it.next().unwrap(), p.to_str().unwrap());
            let n: usize = it.next().unwrap().parse().unwrap();
            let st = State::decode(it.next().unwrap());
            assert_eq!(st.a.len(), n);
            assert!(
                &st == committed || Some(&st) == pending.as_ref(),
                "{}: h5py sees {st:?}\ncommitted {committed:?}\npending {pending:?}",
                p.display()
            );
        }
    }
    for (p, _, _) in snapshots.drain(..) {
        let _ = std::fs::remove_file(p);
    }
}
