//! Plumbing shared by the `h5` subcommands: outcomes, errors, progress.

use std::io::IsTerminal;

/// How a command ended when it ran to its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing to report (exit 0).
    Clean,
    /// The file has problems, or the files differ (exit 1).
    Problems,
}

/// Why a command stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fail {
    /// A usage error (exit 2): one line.
    Usage(String),
    /// A file that cannot be opened or read (exit 1): one line naming the file and object.
    File(String),
    /// Stdout was closed by the reader (`h5 dump big.h5 | head`): a quiet success.
    BrokenPipe,
}

impl From<std::io::Error> for Fail {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            Fail::BrokenPipe
        } else {
            Fail::File(format!("writing the output: {e}"))
        }
    }
}

/// A spinner with the elapsed time on stderr, when stderr is a terminal
/// (else a hidden bar that draws nothing).
pub fn spinner(msg: &str) -> indicatif::ProgressBar {
    if !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} ({elapsed})") {
        bar.set_style(style);
    }
    bar.set_message(msg.to_string());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    bar
}

/// A byte-count progress bar on stderr when `show` (and stderr is a terminal).
pub fn bytes_bar(show: bool, total: u64, msg: &str) -> indicatif::ProgressBar {
    if !show || !std::io::stderr().is_terminal() {
        return indicatif::ProgressBar::hidden();
    }
    let bar = indicatif::ProgressBar::new(total);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{msg} [{bar:30}] {bytes}/{total_bytes} ({eta})")
    {
        bar.set_style(style.progress_chars("=> "));
    }
    bar.set_message(msg.to_string());
    bar
}

/// `path: msg` on one line, the path once also when `msg` names it already.
pub fn named(path: &str, msg: impl std::fmt::Display) -> String {
    let msg = msg.to_string();
    let msg = msg.split_whitespace().collect::<Vec<_>>().join(" ");
    if msg.starts_with(&format!("{path}:")) || msg.starts_with(&format!("{path} (")) {
        msg
    } else {
        format!("{path}: {msg}")
    }
}

/// A file problem as one line: `FILE: PATH: error`.
pub fn obj_err(file_name: &str, path: &str, e: impl std::fmt::Display) -> Fail {
    Fail::File(format!("{file_name}: {}", named(path, e)))
}
