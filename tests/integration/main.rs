//! All integration tests compile into this one binary (see Cargo.toml).

mod cjk;
mod cli_teaches;
mod cli_tools;
mod common;
mod config;
mod corrupt;
mod embed;
mod eval;
mod gate;
mod hardening;
mod index;
mod jsonrpc_errors;
mod lint;
mod lint_cli;
mod lint_real_servers;
mod lint_rule_docs;
mod lint_sarif;
mod mcp;
mod mcp_gateway;
mod mcp_import;
mod names;
mod query;
mod registry;
mod schemathesis;
mod server;
mod transfer;
