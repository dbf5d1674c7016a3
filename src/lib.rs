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
//! ## A tour: load a registry
//!
//! ```
//! use toolrag::registry::{LoadOptions, Registry};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let ns = dir.path().join("filesystem");
//! # std::fs::create_dir(&ns).unwrap();
//! # std::fs::write(ns.join("read_text_file.toml"), r#"
//! # name = "read_text_file"
//! # summary = "Read a UTF-8 text file."
//! # description = "Reads a text file at an absolute path."
//! # "#).unwrap();
//! let registry = Registry::load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
//! let tool = registry.get("filesystem/read_text_file").unwrap();
//! assert_eq!(tool.handle(), "tool://filesystem/read_text_file");
//! # Ok::<(), toolrag::Error>(())
//! ```
#![warn(missing_docs)]

pub mod config;
pub mod embed;
mod error;
pub mod eval;
pub mod gate;
pub mod index;
pub mod lint;
pub mod mcp;
pub mod registry;
pub mod search;
pub mod server;

pub use error::{Error, LoadError, LoadErrors, Location, Result};
pub use registry::{Registry, ToolDef};
