//! The pai binary: parse, run, map the outcome to an exit code.
fn main() {
    pai::heap::tune_allocator();
    std::process::exit(pai::cli::main());
}
