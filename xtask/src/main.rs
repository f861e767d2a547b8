//! Developer tasks. `cargo xtask test` is the one test command.

fn main() {
    let task = std::env::args().nth(1).unwrap_or_default();
    match task.as_str() {
        "test" => {
            let ok = std::process::Command::new(env!("CARGO"))
                .args(["test", "--workspace"])
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            std::process::exit(if ok { 0 } else { 1 });
        }
        _ => {
            eprintln!("usage: cargo xtask test");
            std::process::exit(2);
        }
    }
}
