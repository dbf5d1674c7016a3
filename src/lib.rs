//! # toolrag
//!
//! A Tool-RAG retrieval index. An agent with hundreds or thousands of tools
//! should not put all of them into its planner's prompt; toolrag returns the
//! handful that fit a request, as a candidate handle set in the shape of the
//! Khipu plan contract.
//!
//! It does three things:
//! - **lint** tool docstrings for examples, edge cases, input formats, boundaries
//!   with look-alike tools and poka-yoke signatures;
//! - **index** a registry with hybrid BM25 and dense vectors;
//! - **retrieve** the top-k tools for a request.
//!
//! ## A tour: registry → index → search → gate
//!
//! Load a registry, build a lexical-only index of it (no model needed),
//! search it, and check a plan that cites what the search offered. With the
//! embedding model, pass a [`BuildModel`] to [`index::build`] and an
//! [`embed::Embedder`] to [`Searcher::open`] for hybrid search.
//!
//! ```
//! use toolrag::search::khipu;
//! use toolrag::{gate, BuildOptions, LoadOptions, Mode, Registry, SearchConfig, SearchRequest, Searcher};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let ns = dir.path().join("filesystem");
//! # std::fs::create_dir(&ns).unwrap();
//! # std::fs::write(ns.join("read_text_file.toml"), r#"
//! # name = "read_text_file"
//! # summary = "Read a UTF-8 text file."
//! # description = "Reads a text file at an absolute path."
//! # "#).unwrap();
//! # std::fs::write(ns.join("list_directory.toml"), r#"
//! # name = "list_directory"
//! # summary = "List the entries of a directory."
//! # description = "Lists the files and folders in a directory at an absolute path."
//! # "#).unwrap();
//! # let out = tempfile::tempdir().unwrap();
//! // 1. The registry: every tool, normalised.
//! let registry = Registry::load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
//! let tool = registry.get("filesystem/read_text_file").unwrap();
//! assert_eq!(tool.handle(), "tool://filesystem/read_text_file");
//!
//! // 2. The index: without a model, BM25 only.
//! let opts = BuildOptions::new(out.path());
//! toolrag::index::build(registry, None, &opts, &|_| {})?;
//!
//! // 3. The search: the top-k tools, as a Khipu candidate set.
//! let searcher = Searcher::open(out.path(), None, SearchConfig::default())?;
//! let mut request = SearchRequest::new("read the text file /etc/hosts");
//! request.k = 2;
//! request.mode = Mode::Lexical;
//! let result = searcher.search(&request)?;
//! assert_eq!(result.hits[0].id, "filesystem/read_text_file");
//! let offered = khipu::candidate_set(&result, |id| searcher.tool(id)).candidates;
//!
//! // 4. The gate: a plan that cites an offered tool passes.
//! let plan = serde_json::json!({
//!     "planId": "plan-1",
//!     "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
//!     "provenance": "MODEL_PROPOSED",
//!     "query": "read the text file /etc/hosts",
//!     "contentAccess": "HANDLES_ONLY",
//!     "candidates": offered,
//!     "decision": "NAVIGATE",
//!     "steps": [{ "action": "CITE", "nodeId": "tool://filesystem/read_text_file",
//!                 "rationale": "reads a text file" }],
//!     "citedNodeIds": ["tool://filesystem/read_text_file"],
//!     "groundedOnly": true,
//!     "brainBinding": { "protocol": "khipu-retrieval", "status": "NOT_RESOLVED",
//!                       "note": "handles only" },
//!     "controllerBoundary": "the controller resolves handles",
//!     "abstainReason": null
//! });
//! let verdict = gate::check(&plan, Some(&offered));
//! assert!(verdict.valid, "{:?}", verdict.violations);
//! # Ok::<(), toolrag::Error>(())
//! ```
//!
//! ## The crates
//!
//! This crate is a facade over the library crates of the workspace; depend
//! on a smaller crate to take less:
//!
//! | module here | crate | what |
//! |---|---|---|
//! | [`registry`], [`khipu`] | `toolrag-core` | errors, tools and their loaders, the Khipu contract |
//! | [`embed`] | `toolrag-embed` | the embedding model |
//! | [`index`], [`search`], [`eval`] | `toolrag-engine` | build, search, evaluate (no async runtime) |
//! | [`serve`] | `toolrag-engine` | the live index every server reads |
//! | [`lint`] | `toolrag-lint` | the docstring review |
//! | [`gate`] | `toolrag-gate` | the plan check |
//! | [`planner`] | `toolrag-planner` | the plan model's client: ask, gate, repair |
//! | [`config`] | this crate | `toolrag.toml`, every table's keys checked in one place |
//! | [`app`] | this crate | what every front end does alike: the model choice, build and open, progress |
//!
//! The front ends are crates of their own, above this one: the command line
//! (`toolrag-cli`, the `toolrag` binary), the serving core (`toolrag-serve`),
//! the HTTP API (`toolrag-http`, axum), the MCP server (`toolrag-mcp`, rmcp),
//! the gateway (`toolrag-gateway`) and the Python extension (`toolrag-py`).
//! This crate takes no command line, server, async runtime or MCP.
#![warn(missing_docs)]

pub mod app;
pub mod config;

/// The README's Rust example, compiled and run by `cargo test --doc`.
#[doc = include_str!("../README.md")]
#[cfg(doctest)]
pub struct ReadmeExample;

pub use toolrag_core::{khipu, registry};
pub use toolrag_embed as embed;
pub use toolrag_engine::{eval, learn, search};
pub use toolrag_gate as gate;
pub use toolrag_lint as lint;
pub use toolrag_planner as planner;

/// Serving: the live index every server reads (the engine's
/// [`LiveIndex`](serve::LiveIndex), reloaded when a build publishes a new
/// generation). The serving core of the HTTP front ends (limits, request
/// checks, errors, the OpenAPI document, the connection loop) is
/// `toolrag-serve`, a front end's crate (axum, tokio), not re-exported here.
pub mod serve {
    pub use toolrag_engine::live::*;
}

/// The index: building a generation ([`index::build`]) and the files
/// it is made of.
pub mod index {
    pub use toolrag_engine::build::*;
    pub use toolrag_engine::index::*;
}

pub use toolrag_core::{Error, ErrorKind, LoadOptions, Registry, Result, ToolDef};
pub use toolrag_engine::build::{build, BuildModel, BuildOptions};
pub use toolrag_engine::search::{Mode, SearchConfig, SearchRequest, SearchResult, Searcher};
pub use toolrag_gate::{Gate, Verdict};
