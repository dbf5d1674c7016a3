//! # toolrag-cli
//!
//! The `toolrag` command line, over the `toolrag` facade and the front-end
//! crates (`toolrag-http`, `toolrag-mcp`, `toolrag-auth`). It is a library
//! too ([`run_cli`]), so that the `toolrag` binary and the Python wheel's
//! `toolrag` console script are one program, and its progress bar
//! ([`progress::TerminalProgress`]) is the one the Python `progress=True`
//! draws.
#![warn(missing_docs)]

mod cli;
pub mod progress;
mod run;
mod telemetry;

pub use run::run_cli;
