//! The pai binary: parse, run, map the outcome to an exit code.
fn main() {
    std::process::exit(pai::cli::main());
}
