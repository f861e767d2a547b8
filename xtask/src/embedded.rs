//! `cargo xtask embedded`: h5fmt on a Cortex-M4F. Builds `xtask/embedded` (a bare-metal
//! program reading a dataset from an HDF5 image in flash) for `thumbv7em-none-eabihf` with
//! Debian's toolchain (`-Z build-std=core,alloc`, linked by `ld.lld` with
//! `xtask/embedded/memory.x`), prints its flash and RAM use from the ELF's sections, then
//! runs it in QEMU's `netduinoplus2` (an STM32F405; Debian's `qemu-system-arm`, installed
//! when missing) and checks the sum it leaves in RAM against h5py's sum of the same dataset.

use super::{
    debian_build_std, ensure_apt, ensure_venv, ensure_wasm_toolchain, output, repo_root, run, R,
};
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

const TARGET: &str = "thumbv7em-none-eabihf";
/// The dataset the program sums, in `testdata/datasets_v108.h5`.
const DATASET: &str = "chunked_all_filters";

pub(crate) fn task_embedded() -> R {
    ensure_wasm_toolchain()?;
    let root = repo_root();
    let dir = root.join("xtask").join("embedded");
    let target_dir = root.join("target").join("embedded");
    let script = dir.join("memory.x");
    run(debian_build_std(&dir, TARGET, &target_dir).env(
        "RUSTFLAGS",
        format!(
            "-C link-arg=-T{} -C linker=ld.lld -C linker-flavor=ld.lld",
            script.display()
        ),
    ))?;
    let elf = target_dir
        .join(TARGET)
        .join("release")
        .join("h5fmt-embedded-example");
    let bytes = fs::read(&elf).map_err(|e| format!("{}: {e}", elf.display()))?;
    let sections = sections(&bytes).ok_or("not an ELF32 file")?;
    let size = |names: &[&str]| -> u64 {
        sections
            .iter()
            .filter(|(n, _, _)| names.contains(&n.as_str()))
            .map(|s| s.2)
            .sum()
    };
    let flash = size(&[".vector_table", ".text", ".rodata", ".data"]);
    let ram = size(&[".data", ".bss"]);
    let image = fs::metadata(root.join("testdata/datasets_v108.h5"))
        .map_err(|e| e.to_string())?
        .len();
    println!(
        "embedded: {TARGET}: flash {flash} bytes (code {} + constants {}, of which the HDF5 image {image}), \
         RAM {ram} bytes (.data + .bss, the allocator's 64 KiB arena included; the stack takes the rest of 128 KiB)",
        size(&[".text"]),
        size(&[".rodata"])
    );
    ensure_apt("qemu-system-arm", &["qemu-system-arm"])?;
    let (sum, peak) = run_qemu(&elf)?;
    let venv = ensure_venv()?;
    let want = output(Command::new(&venv.python).args([
        "-c",
        &format!(
            "import h5py; print(int(h5py.File('{}', 'r')['{DATASET}'][...].sum()))",
            root.join("testdata/datasets_v108.h5").display()
        ),
    ]))?;
    let want: i64 = want.trim().parse().map_err(|e| format!("h5py: {e}"))?;
    if sum != want {
        return Err(format!(
            "embedded: the program's sum of /{DATASET} is {sum}, h5py's {want}"
        ));
    }
    println!(
        "embedded: under QEMU netduinoplus2 (Cortex-M4F) the program read /{DATASET} \
         (shuffle + deflate + Fletcher-32, big-endian i64) from flash: sum {sum} = h5py's; \
         allocator high-water mark {peak} bytes"
    );
    Ok(())
}

/// Run the ELF in QEMU, read `PEAK` (u32 at 0x2000_0000) and `SUM` (i64 at 0x2000_0008)
/// through the monitor after the program has had time to finish.
fn run_qemu(elf: &Path) -> R<(i64, u32)> {
    let mut child = Command::new("qemu-system-arm")
        .args(["-M", "netduinoplus2", "-display", "none", "-serial", "none"])
        .args(["-monitor", "stdio", "-kernel"])
        .arg(elf)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("qemu-system-arm: {e}"))?;
    let mut stdin = child.stdin.take().ok_or("qemu stdin")?;
    std::thread::sleep(Duration::from_secs(3));
    let sent = stdin
        .write_all(b"xp /4wx 0x20000000\n")
        .and_then(|()| stdin.flush());
    std::thread::sleep(Duration::from_secs(1));
    let _ = stdin.write_all(b"quit\n");
    drop(stdin);
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    sent.map_err(|e| format!("qemu monitor: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.contains("20000000:"))
        .ok_or_else(|| format!("qemu: no memory dump in {text:?}"))?;
    let words: Vec<u32> = line
        .split_whitespace()
        .filter_map(|w| w.strip_prefix("0x"))
        .filter_map(|w| u32::from_str_radix(w, 16).ok())
        .collect();
    let [peak, _, lo, hi] = words[..] else {
        return Err(format!("qemu: unexpected dump {line:?}"));
    };
    Ok(((i64::from(hi) << 32) | i64::from(lo), peak))
}

/// (name, address, size) of each section of an ELF32 little-endian file.
fn sections(b: &[u8]) -> Option<Vec<(String, u64, u64)>> {
    let u16_at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32_at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    if b.get(..5)? != b"\x7fELF\x01" {
        return None;
    }
    let shoff = u32_at(0x20)? as usize;
    let shentsize = usize::from(u16_at(0x2e)?);
    let shnum = usize::from(u16_at(0x30)?);
    let shstrndx = usize::from(u16_at(0x32)?);
    let header = |i: usize| shoff + i * shentsize;
    let strtab = u32_at(header(shstrndx) + 0x10)? as usize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let h = header(i);
        let name_at = strtab + u32_at(h)? as usize;
        let name = b.get(name_at..)?;
        let name = &name[..name.iter().position(|&c| c == 0)?];
        out.push((
            String::from_utf8_lossy(name).into_owned(),
            u64::from(u32_at(h + 0x0c)?),
            u64::from(u32_at(h + 0x14)?),
        ));
    }
    Some(out)
}
