//! The `toolrag` binary: the command line of the library ([`toolrag_cli::run_cli`]),
//! with mimalloc as the allocator.

use std::process::ExitCode;

/// mimalloc instead of the system allocator: a BM25 query builds and drops
/// about a hundred term scorers with their block buffers, and glibc's malloc
/// was a visible share of a query's time (BENCHMARKS.md, "Query latency").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    ExitCode::from(toolrag_cli::run_cli(std::env::args_os()))
}
