//! The build script: links the `pai` binary with packed relative relocations (`DT_RELR`) when
//! this system's linker and C library support them.
//!
//! A position-independent Rust binary carries a 24-byte relocation for every pointer in its
//! data (34,000 for pai: 824 KB), which the dynamic loader reads whole at every start; packed,
//! they take 10 KB. Those pages count in the peak RSS of every command.
//! Packed relocations need binutils 2.38 or lld to link and glibc 2.36 to start, so a small C
//! program full of such pointers is linked with the flag and run first, and the flag is used
//! only when that program starts. Building for another system than this one leaves it out.

use std::path::PathBuf;
use std::process::Command;

const FLAG: &str = "-Wl,-z,pack-relative-relocs";

fn main() {
    println!("cargo:rerun-if-changed=src/build.rs");
    println!("cargo:rerun-if-env-changed=CC");
    if packs_relocations() {
        println!("cargo:rustc-link-arg-bins={FLAG}");
    }
}

/// Whether a program linked with [`FLAG`] links without a word from the linker (one that does
/// not know the flag only warns) and starts.
fn packs_relocations() -> bool {
    let var = |key: &str| std::env::var(key).unwrap_or_default();
    if var("CARGO_CFG_TARGET_OS") != "linux"
        || var("CARGO_CFG_TARGET_ENV") != "gnu"
        || var("HOST") != var("TARGET")
    {
        return false;
    }
    let Some(out) = std::env::var_os("OUT_DIR").map(PathBuf::from) else {
        return false;
    };
    let (source, program) = (out.join("relr_probe.c"), out.join("relr_probe"));
    let pointers: Vec<String> = (0..64).map(|i| format!("&values[{i}]")).collect();
    let text = format!(
        "static int values[64];\nint *pointers[] = {{{}}};\n\
         int main(void) {{ return pointers[63] != &values[63]; }}\n",
        pointers.join(", ")
    );
    if std::fs::write(&source, text).is_err() {
        return false;
    }
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let linked = Command::new(cc)
        .args(["-fPIE", "-pie", FLAG, "-o"])
        .arg(&program)
        .arg(&source)
        .output()
        .is_ok_and(|o| o.status.success() && o.stderr.is_empty());
    linked && Command::new(&program).status().is_ok_and(|s| s.success())
}
