//! The `h5` command: list, dump, print, check, diff and repack HDF5 files, in pure Rust.
//!
//! Exit status: 0 fine, 1 the file has problems (check findings, a corrupt or
//! truncated object met on the way, a file that cannot be opened, differences
//! found by `diff`), 2 a usage error.

use clap::{CommandFactory, Parser, Subcommand};
use h5cli::cli::{Fail, Outcome};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Inspect, validate and rewrite HDF5 files (pure Rust, no libhdf5).
#[derive(Parser, Debug)]
#[command(
    name = "h5",
    version,
    propagate_version = true,
    arg_required_else_help = true,
    after_help = "Exit status: 0 fine, 1 the file has problems (findings, a corrupt object, a file \
                  that cannot be opened, differences), 2 usage errors."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// List the members of a group (recursively with -r, depth first, like `h5ls -r`).
    Ls {
        /// Recurse into subgroups.
        #[arg(short, long)]
        recursive: bool,
        /// Also show type, layout, chunking, filters and compression ratio of datasets,
        /// their dimension scales (`scale "NAME"`, `dimN SCALE,… "LABEL"`), and the
        /// PyTables node class and VERSION of objects with PyTables' CLASS attribute
        /// (`PyTables EArray 1.1`).
        #[arg(short, long)]
        long: bool,
        /// One JSON object per line (JSON Lines) instead of text.
        #[arg(long)]
        json: bool,
        /// The HDF5 file.
        file: PathBuf,
        /// The group (or object) to list.
        #[arg(default_value = "/")]
        path: String,
    },
    /// Dump an object and everything below it (text like h5dump, or JSON).
    Dump {
        /// Readable JSON with real numbers (streamed).
        #[arg(long, conflicts_with = "canonical")]
        json: bool,
        /// The h5canon/1 canonical JSON document (the objects at or below PATH).
        #[arg(long)]
        canonical: bool,
        /// Header only: types, shapes and attributes, no dataset values.
        #[arg(short = 'H', long = "header")]
        header: bool,
        /// The object to dump (same as the positional PATH).
        #[arg(
            short = 'd',
            long = "dataset",
            value_name = "PATH",
            conflicts_with = "path"
        )]
        dataset: Option<String>,
        /// The HDF5 file.
        file: PathBuf,
        /// The object to dump.
        path: Option<String>,
    },
    /// Write the raw native-endian bytes of a dataset (or a slice) to stdout.
    Cat {
        /// The HDF5 file.
        file: PathBuf,
        /// The dataset.
        path: String,
        /// A numpy-style slice, e.g. 0:100,::2.
        #[arg(long, value_name = "S")]
        slice: Option<String>,
        /// Write binary data even when stdout is a terminal.
        #[arg(short, long)]
        force: bool,
    },
    /// Validate the file: one line per problem (ADDRESS PATH: finding); exit 0 only when clean.
    Check {
        /// Warnings count as problems.
        #[arg(long)]
        strict: bool,
        /// One JSON object per finding (JSON Lines), then a summary object.
        #[arg(long)]
        json: bool,
        /// The HDF5 file.
        file: PathBuf,
    },
    /// Compare two files (or the objects at PATH): structure, attributes, values; exit 1 on
    /// differences.
    Diff {
        /// The first file.
        a: PathBuf,
        /// The second file.
        b: PathBuf,
        /// Compare only the object at this path (and below).
        path: Option<String>,
        /// Numbers differ when |a - b| > DELTA.
        #[arg(long, value_name = "DELTA", conflicts_with = "relative")]
        delta: Option<f64>,
        /// Numbers differ when |a - b| / |a| > REL.
        #[arg(long, value_name = "REL")]
        relative: Option<f64>,
        /// Print every differing element, not only a count per object.
        #[arg(short, long)]
        verbose: bool,
        /// Print nothing; the exit status tells.
        #[arg(short, long, conflicts_with = "verbose")]
        quiet: bool,
    },
    /// Rewrite SRC as DST with this library's writer.
    Repack {
        /// The file to read.
        src: Option<PathBuf>,
        /// The file to write (replaced only when the repack succeeds).
        dst: Option<PathBuf>,
        /// File format: earliest | v18 | latest | v200.
        #[arg(long, value_parser = h5cli::repack::parse_format)]
        format: Option<h5fmt::Format>,
        /// Filters: none | gzip=N,shuffle | zstd=N | lz4 | fletcher32 | nbit | scaleoffset=N
        /// (comma-separated; N: integer bits, 0 = lossless, or float decimal digits).
        #[arg(long, value_name = "SPEC", value_parser = h5cli::repack::parse_filter)]
        filter: Option<h5cli::repack::FilterChoice>,
        /// Chunk shape for datasets of that rank, e.g. 100,100.
        #[arg(long, value_name = "DIMS", value_parser = parse_chunk)]
        chunk: Option<ChunkDims>,
    },
    /// HEP001 column tables: list, describe, print, query, validate.
    Table(h5cli::table::TableCli),
    /// Print a shell completion script (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
}

/// A `--chunk` value (one argument holding all the dims, not one per dim).
#[derive(Debug, Clone)]
struct ChunkDims(Vec<u64>);

fn parse_chunk(s: &str) -> Result<ChunkDims, String> {
    h5cli::repack::parse_chunk(s).map(ChunkDims)
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            // Help and version on stdout with exit 0, usage errors on stderr with 2
            // (clap's own rule).
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    match run(cli) {
        Ok(Outcome::Clean) => ExitCode::SUCCESS,
        Ok(Outcome::Problems) => ExitCode::from(1),
        Err(Fail::BrokenPipe) => ExitCode::SUCCESS,
        Err(Fail::Usage(msg)) => {
            eprintln!("h5: {}", one_line(&msg));
            ExitCode::from(2)
        }
        Err(Fail::File(msg)) => {
            eprintln!("h5: {}", one_line(&msg));
            ExitCode::from(1)
        }
    }
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn usage(msg: impl std::fmt::Display) -> Fail {
    Fail::Usage(msg.to_string())
}

fn open(path: &Path) -> Result<h5fmt::File, Fail> {
    h5fmt::File::open(path).map_err(|e| Fail::File(format!("{}: {e}", path.display())))
}

/// Open for one pass over the data (dump, cat, diff): positioned reads, so
/// that the pages read do not stay resident as a memory map's would.
fn open_streaming(path: &Path) -> Result<h5fmt::File, Fail> {
    h5fmt::File::open_unmapped(path, h5fmt::Limits::default())
        .map_err(|e| Fail::File(format!("{}: {e}", path.display())))
}

fn run(cli: Cli) -> Result<Outcome, Fail> {
    let stdout = std::io::stdout();
    match cli.cmd {
        Cmd::Ls {
            recursive,
            long,
            json,
            file,
            path,
        } => {
            let f = open(&file)?;
            let mut out = std::io::BufWriter::new(stdout.lock());
            let opts = h5cli::text::LsOptions {
                recursive,
                long,
                json,
            };
            let r = h5cli::text::ls_with(&f, &file.display().to_string(), &path, &opts, &mut out);
            finish(r, &mut out)
        }
        Cmd::Dump {
            json,
            canonical,
            header,
            dataset,
            file,
            path,
        } => {
            let path = dataset.or(path).unwrap_or_else(|| "/".to_string());
            let name = file.display().to_string();
            let f = open_streaming(&file)?;
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = if canonical {
                if header {
                    return Err(usage("--canonical and -H cannot be used together"));
                }
                let v =
                    h5cli::canon::dump_file(&f).map_err(|e| Fail::File(format!("{name}: {e}")))?;
                let v = h5cli::canon::subtree(v, &path)
                    .map_err(|e| Fail::File(format!("{name}: {e}")))?;
                let text =
                    serde_json::to_string_pretty(&v).map_err(|e| Fail::File(e.to_string()))?;
                writeln!(out, "{text}")
                    .map_err(Fail::from)
                    .map(|()| Outcome::Clean)
            } else {
                let opts = h5cli::text::DumpOptions {
                    header_only: header,
                    progress: std::io::stderr().is_terminal(),
                };
                if json {
                    h5cli::text::json_dump_to(&f, &name, &path, &opts, &mut out)
                } else {
                    h5cli::text::dump_with(&f, &name, &path, &opts, &mut out)
                }
            };
            finish(r, &mut out)
        }
        Cmd::Cat {
            file,
            path,
            slice,
            force,
        } => {
            if !force && stdout.is_terminal() {
                return Err(usage(
                    "cat writes binary data: redirect stdout to a file or a pipe, or pass --force",
                ));
            }
            let f = open_streaming(&file)?;
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = h5cli::text::cat(
                &f,
                &file.display().to_string(),
                &path,
                slice.as_deref(),
                &mut out,
            );
            finish(r, &mut out)
        }
        Cmd::Check { strict, json, file } => {
            let bar = h5cli::cli::spinner(&format!("checking {}", file.display()));
            let findings = h5cli::check::check_path(&file);
            bar.finish_and_clear();
            let clean = h5cli::check::is_clean(&findings, strict);
            let mut out = std::io::BufWriter::new(stdout.lock());
            let r = (|| -> Result<Outcome, Fail> {
                for f in &findings {
                    if json {
                        let j = h5cli::check::finding_json(f);
                        writeln!(out, "{}", serde_json::to_string(&j).unwrap_or_default())?;
                    } else {
                        writeln!(out, "{f}")?;
                    }
                }
                if json {
                    let summary = serde_json::json!({
                        "file": file.display().to_string(),
                        "findings": findings.len(),
                        "clean": clean,
                        "strict": strict,
                    });
                    writeln!(out, "{summary}")?;
                }
                Ok(if clean {
                    Outcome::Clean
                } else {
                    Outcome::Problems
                })
            })();
            let r = finish(r, &mut out)?;
            if r == Outcome::Problems && !json {
                eprintln!(
                    "h5: {}: {} problem(s) found",
                    file.display(),
                    findings.len()
                );
            }
            Ok(r)
        }
        Cmd::Diff {
            a,
            b,
            path,
            delta,
            relative,
            verbose,
            quiet,
        } => {
            let fa = open_streaming(&a)?;
            let fb = open_streaming(&b)?;
            let opts = h5cli::diff::Options {
                delta,
                relative,
                verbose,
                quiet,
            };
            let mut out = std::io::BufWriter::new(stdout.lock());
            let (na, nb) = (a.display().to_string(), b.display().to_string());
            let r = h5cli::diff::diff(
                (&fa, &na),
                (&fb, &nb),
                path.as_deref().unwrap_or("/"),
                &opts,
                &mut out,
            );
            finish(r, &mut out)
        }
        Cmd::Repack {
            src,
            dst,
            format,
            filter,
            chunk,
        } => {
            let (Some(src), Some(dst)) = (src, dst) else {
                return Err(usage("repack needs SRC and DST (h5 repack --help)"));
            };
            let mut opts = h5cli::repack::Options::default();
            if let Some(f) = format {
                opts.format = f;
            }
            if let Some(f) = filter {
                opts.filter = f;
            }
            opts.chunk = chunk.map(|c| c.0);
            if std::fs::canonicalize(&src).ok() == std::fs::canonicalize(&dst).ok() && dst.exists()
            {
                return Err(usage("SRC and DST are the same file"));
            }
            // A source that cannot be opened is a file problem (1); what the
            // writer refuses with these options is a usage error (2).
            drop(open(&src)?);
            let bar = h5cli::cli::spinner(&format!("repacking {}", src.display()));
            let r = h5cli::repack::repack(&src, &dst, &opts);
            bar.finish_and_clear();
            r.map(|_| Outcome::Clean).map_err(Fail::Usage)
        }
        Cmd::Table(t) => match h5cli::table::run_parsed(t) {
            Ok(0) => Ok(Outcome::Clean),
            Ok(_) => Ok(Outcome::Problems),
            Err(e) => Err(Fail::Usage(e)),
        },
        Cmd::Completions { shell } => {
            let mut cmd = Cli::command();
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut cmd, "h5", &mut buf);
            let mut out = stdout.lock();
            out.write_all(&buf)
                .and_then(|()| out.flush())
                .map_err(Fail::from)?;
            Ok(Outcome::Clean)
        }
    }
}

/// Flush `out` after a command; a closed pipe is a quiet success.
fn finish(r: Result<Outcome, Fail>, out: &mut dyn Write) -> Result<Outcome, Fail> {
    let flushed = out.flush().map_err(Fail::from);
    match (r, flushed) {
        (Err(Fail::BrokenPipe), _) | (_, Err(Fail::BrokenPipe)) => Err(Fail::BrokenPipe),
        (Err(e), _) => Err(e),
        (Ok(_), Err(e)) => Err(e),
        (Ok(o), Ok(())) => Ok(o),
    }
}
