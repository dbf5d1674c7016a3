//! The `toolrag` binary: a thin shell over the library. It alone owns exit
//! codes and error printing.

mod cli;

use std::io::ErrorKind;
use std::process::ExitCode;

/// mimalloc instead of the system allocator: a BM25 query builds and drops
/// about a hundred term scorers with their block buffers, and glibc's malloc
/// was a visible share of a query's time (BENCHMARKS.md, "Query latency").
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Returns mimalloc's freed pages to the operating system. The library cannot
/// know the binary's allocator; the index build tells when it has just freed a
/// lot (`BuildProgress::MemoryFreed`), and `toolrag index` calls this then.
pub(crate) fn release_allocator_memory() {
    // SAFETY: mi_collect only frees mimalloc's own unused pages.
    unsafe {
        libmimalloc_sys::mi_collect(true);
    }
}

fn main() -> ExitCode {
    let args = cli::parse();
    init_tracing(args.verbose);
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`toolrag tools list | head`) is not an error.
            let broken_pipe = err.chain().any(|e| {
                e.downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| {
                        e.downcast_ref::<serde_json::Error>()
                            .and_then(serde_json::Error::io_error_kind)
                    })
                    == Some(ErrorKind::BrokenPipe)
            });
            if broken_pipe {
                return ExitCode::SUCCESS;
            }
            eprintln!("toolrag: {err:#}");
            ExitCode::from(2)
        }
    }
}

fn init_tracing(verbose: u8) {
    use tracing_subscriber::EnvFilter;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("TOOLRAG_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // No colour codes in a log file or a pipe (an MCP client's log view).
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .init();
}
