//! Replays every saved fuzz finding that is not a whole file:
//! `fuzz/regressions/<target>/<name>` through target `<target>` (no panic).
//! Whole-file findings live in `testdata/hostile/` (see `hostile.rs`).

#[test]
fn saved_findings_replay_without_panic() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("regressions");
    let mut n = 0;
    for t in std::fs::read_dir(&root)
        .expect("fuzz/regressions")
        .flatten()
    {
        let target = t.file_name().to_string_lossy().to_string();
        for f in std::fs::read_dir(t.path()).expect("target dir").flatten() {
            let data = std::fs::read(f.path()).expect("read");
            assert!(
                h5fuzz::run_target(&target, &data),
                "unknown target {target}"
            );
            n += 1;
        }
    }
    assert!(n > 0);
}
