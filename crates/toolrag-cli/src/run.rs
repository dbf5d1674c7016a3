//! The `toolrag` command line as a function: what the binary's `main` does,
//! callable by any front end that embeds the library (the Python wheel's
//! `toolrag` console script), so each front end is the same program.

use std::ffi::OsString;
use std::io::{ErrorKind, Write};
use std::process::ExitCode;

/// Runs the `toolrag` command line on `args` (the first is the program name,
/// as in `std::env::args_os`) and returns its exit status: 0 on success, 1
/// when a command found problems (lint findings, a failed server), 2 on an
/// error (printed on stderr as `toolrag: ...`).
///
/// It sets up logging on stderr (`-v`, `TOOLRAG_LOG`) the first time it is
/// called in a process, and flushes stdout before it returns.
///
/// ```no_run
/// let status = toolrag_cli::run_cli(["toolrag", "query", "read the file /etc/hosts", "--index", "index"]);
/// std::process::exit(i32::from(status));
/// ```
pub fn run_cli<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let status = match crate::cli::parse_from(args) {
        Ok(cli) => {
            let telemetry = init_tracing(cli.verbose);
            let status = match crate::cli::run(cli) {
                Ok(code) => exit_status(code),
                Err(err) => report(&err),
            };
            if let Some(t) = telemetry {
                t.shutdown();
            }
            status
        }
        Err(status) => status,
    };
    let _ = std::io::stdout().flush();
    status
}

/// The number behind an [`ExitCode`] (which has no getter).
fn exit_status(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|n| ExitCode::from(*n) == code)
        .unwrap_or(1)
}

/// Prints a command's error and returns its status: 2, or 0 for a closed
/// pipe (`toolrag tools list | head` is not an error).
fn report(err: &anyhow::Error) -> u8 {
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
        return 0;
    }
    eprintln!("toolrag: {err:#}");
    if let Some(hint) = err
        .chain()
        .find_map(|e| e.downcast_ref::<toolrag::Error>())
        .and_then(hint)
    {
        eprintln!("  {hint}");
    }
    2
}

/// What to do next, in this command line's words: the library's errors say
/// what is wrong, each front end how to mend it.
fn hint(err: &toolrag::Error) -> Option<String> {
    use toolrag::Error;
    Some(match err {
        Error::ModelNotFound { .. } => {
            "Fetch it with `scripts/fetch-model` (or `make models`) in a checkout, \
             or name a models folder with --model-dir or $TOOLRAG_MODEL_DIR; \
             `--mode lexical` (query) and --lexical-only (index, serve, mcp) work without a model."
                .into()
        }
        Error::ModelCorrupt { .. } => "Re-fetch it with `scripts/fetch-model`.".into(),
        Error::IncompatibleIndex { .. } | Error::Corrupt { .. } => {
            "Rebuild it with `toolrag index`.".into()
        }
        Error::NoIndex { path } => {
            format!("Build one with `toolrag index --out {}`.", path.display())
        }
        Error::BuildFailed { .. } => "Run `toolrag index` again once this is fixed.".into(),
        _ => return None,
    })
}

/// Logging on stderr, set up once per process (a second call, or a host
/// that set its own subscriber, keeps the first), and traces over OTLP when
/// the environment asks for them ([`crate::telemetry`]): the exporter is
/// returned, to be shut down when the command ends.
fn init_tracing(verbose: u8) -> Option<crate::telemetry::Telemetry> {
    use tracing_subscriber::filter::{EnvFilter, Targets};
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::Layer;
    let default = match verbose {
        0 => "warn",
        1 => "info",
        2 => "debug",
        _ => "trace",
    };
    let filter = EnvFilter::try_from_env("TOOLRAG_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let log = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        // No colour codes in a log file or a pipe (an MCP client's log view).
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_target(false)
        .with_filter(filter);
    let (telemetry, traces, failure) = match crate::telemetry::Telemetry::from_env() {
        Ok(Some((t, layer))) => (
            Some(t),
            // The spans of the MCP servers, whatever the log level.
            Some(
                layer.with_filter(Targets::new().with_target("toolrag_mcp", tracing::Level::INFO)),
            ),
            None,
        ),
        Ok(None) => (None, None, None),
        Err(e) => (None, None, Some(e)),
    };
    let installed = tracing_subscriber::registry()
        .with(log)
        .with(traces)
        .try_init()
        .is_ok();
    if let Some(e) = failure {
        tracing::warn!("{e}");
    }
    if installed {
        telemetry
    } else {
        // A subscriber was there already: nothing would feed this exporter.
        if let Some(t) = telemetry {
            t.shutdown();
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_read_back() {
        assert_eq!(exit_status(ExitCode::SUCCESS), 0);
        assert_eq!(exit_status(ExitCode::from(1)), 1);
        assert_eq!(exit_status(ExitCode::from(2)), 2);
    }

    #[test]
    fn usage_errors_return_clap_status() {
        assert_eq!(run_cli(["toolrag", "--no-such-flag"]), 2);
        assert_eq!(run_cli(["toolrag", "--version"]), 0);
    }
}
