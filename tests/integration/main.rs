//! All integration tests compile into this one binary (see Cargo.toml).

mod cjk;
mod cli_tools;
mod common;
mod config;
mod corrupt;
mod embed;
mod eval;
mod gate;
mod index;
mod lint;
mod lint_cli;
mod mcp;
mod mcp_import;
mod names;
mod query;
mod registry;
mod server;
mod transfer;
