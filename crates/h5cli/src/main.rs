//! The `h5` command: `ls`, `dump`, for HDF5 files, in pure Rust.

use std::path::Path;
use std::process::ExitCode;

const USAGE: &str = "usage:
  h5 ls [-r] FILE [PATH]          list a group's members (recursively with -r)
  h5 dump FILE [PATH]             readable text dump (like h5dump)
  h5 dump --json FILE [PATH]      readable JSON with real numbers
  h5 dump --canonical FILE        the h5canon/1 canonical JSON document
  h5 cat FILE PATH [--slice S]    raw native-endian bytes of a dataset (or a
                                  numpy-style slice such as 0:100,::2) to stdout
  h5 check [--strict] FILE        validate the file: one line per problem
                                  (ADDRESS PATH: finding), exit 0 only when clean
                                  (--strict: warnings count as problems)
  h5 table ls|schema|cat|query|check …
                                  HEP001 column tables (h5 table --help)
  h5 repack SRC DST [--format earliest|v18|latest|v200] [--filter SPEC] [--chunk DIMS]
                                  rewrite SRC as DST with this library's writer;
                                  SPEC: none | gzip=N,shuffle | zstd=N | lz4 | fletcher32
                                  | nbit | scaleoffset=N (comma-separated; N: integer
                                  bits, 0 = lossless, or float decimal digits);
                                  DIMS: chunk shape for datasets
                                  of that rank, e.g. 100,100";

/// One line to stdout; an error (a closed pipe, say) is returned, not a
/// panic as `println!` would give.
fn out_line(text: &str) -> Result<(), String> {
    use std::io::Write;
    writeln!(std::io::stdout().lock(), "{text}").map_err(|e| e.to_string())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            let one_line = e.split_whitespace().collect::<Vec<_>>().join(" ");
            eprintln!("h5: {one_line}");
            ExitCode::from(2)
        }
    }
}

fn run(args: &[String]) -> Result<(), String> {
    let (cmd, rest) = args.split_first().ok_or_else(|| USAGE.to_string())?;
    if cmd == "repack" {
        return repack(rest);
    }
    if cmd == "table" {
        return match h5cli::table::run(rest) {
            Ok(0) => Ok(()),
            Ok(code) => std::process::exit(i32::from(code)),
            Err(e) => Err(e),
        };
    }
    let mut flags: Vec<&str> = Vec::new();
    let mut pos: Vec<&str> = Vec::new();
    let mut slice: Option<&str> = None;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        if a == "--slice" {
            slice = Some(it.next().ok_or("--slice needs a value")?);
        } else if let Some(v) = a.strip_prefix("--slice=") {
            slice = Some(v);
        } else if a.starts_with('-') {
            flags.push(a);
        } else {
            pos.push(a);
        }
    }
    let has = |f: &str| flags.contains(&f);
    let file_arg = pos.first().ok_or_else(|| USAGE.to_string())?;
    let obj_path = pos.get(1).copied().unwrap_or("/");
    match cmd.as_str() {
        "ls" => {
            check_flags(&flags, &["-r", "--recursive"])?;
            let file = open(file_arg)?;
            h5cli::text::ls(
                &file,
                obj_path,
                has("-r") || has("--recursive"),
                &mut std::io::stdout().lock(),
            )
        }
        "dump" => {
            check_flags(&flags, &["--canonical", "--json"])?;
            if has("--canonical") {
                let v = h5cli::canon::dump(Path::new(file_arg))?;
                out_line(&serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?)
            } else if has("--json") {
                let file = open(file_arg)?;
                let v = h5cli::text::json_dump(&file, obj_path)?;
                out_line(&serde_json::to_string_pretty(&v).map_err(|e| e.to_string())?)
            } else {
                let file = open(file_arg)?;
                h5cli::text::dump(&file, file_arg, obj_path, &mut std::io::stdout().lock())
            }
        }
        "cat" => {
            check_flags(&flags, &[])?;
            let file = open(file_arg)?;
            let path = pos.get(1).ok_or_else(|| USAGE.to_string())?;
            let d = file.dataset(path).map_err(|e| e.to_string())?;
            let mut bytes = match slice {
                Some(spec) => {
                    let sel = h5fmt::data::hyperslab::Selection::parse(spec, d.shape())
                        .map_err(|e| e.to_string())?;
                    d.read_slice(&sel).map_err(|e| e.to_string())?
                }
                None => d.read_raw().map_err(|e| e.to_string())?,
            };
            h5fmt::data::convert::to_native_order(d.dtype(), &mut bytes)
                .map_err(|e| format!("{path}: {e}"))?;
            use std::io::Write;
            let mut out = std::io::stdout().lock();
            out.write_all(&bytes)
                .and_then(|()| out.flush())
                .map_err(|e| e.to_string())
        }
        "check" => {
            check_flags(&flags, &["--strict"])?;
            let findings = h5cli::check::check_path(Path::new(file_arg));
            for f in &findings {
                out_line(&f.to_string())?;
            }
            if h5cli::check::is_clean(&findings, has("--strict")) {
                Ok(())
            } else {
                Err(format!("{file_arg}: {} problem(s) found", findings.len()))
            }
        }
        "help" | "--help" | "-h" => {
            println!("{USAGE}");
            Ok(())
        }
        other => Err(format!("unknown command {other:?}\n{USAGE}")),
    }
}

fn check_flags(flags: &[&str], allowed: &[&str]) -> Result<(), String> {
    for f in flags {
        if !allowed.contains(f) {
            return Err(format!("unknown option {f}\n{USAGE}"));
        }
    }
    Ok(())
}

fn open(path: &str) -> Result<h5fmt::File, String> {
    h5fmt::File::open(path).map_err(|e| format!("{path}: {e}"))
}

fn repack(args: &[String]) -> Result<(), String> {
    let mut opts = h5cli::repack::Options::default();
    let mut pos: Vec<&str> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (a.as_str(), None),
        };
        let mut value = || -> Result<String, String> {
            match &inline {
                Some(v) => Ok(v.clone()),
                None => it.next().cloned().ok_or(format!("{flag} needs a value")),
            }
        };
        match flag {
            "--format" => opts.format = h5cli::repack::parse_format(&value()?)?,
            "--filter" => opts.filter = h5cli::repack::parse_filter(&value()?)?,
            "--chunk" => opts.chunk = Some(h5cli::repack::parse_chunk(&value()?)?),
            f if f.starts_with('-') => return Err(format!("unknown option {f}\n{USAGE}")),
            _ => pos.push(a),
        }
    }
    let [src, dst] = pos.as_slice() else {
        return Err(format!("repack needs SRC and DST\n{USAGE}"));
    };
    if std::fs::canonicalize(src).ok() == std::fs::canonicalize(dst).ok() && Path::new(dst).exists()
    {
        return Err("SRC and DST are the same file".into());
    }
    h5cli::repack::repack(Path::new(src), Path::new(dst), &opts).map(|_| ())
}
