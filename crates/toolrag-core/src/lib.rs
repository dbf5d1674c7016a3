//! # toolrag-core
//!
//! What every other toolrag crate stands on, and nothing heavy:
//! - [`error`]: the one [`Error`] type, with user errors (a bad file, with its
//!   line) apart from internal ones (a damaged index names its file);
//! - [`registry`]: tools ([`ToolDef`]), their loaders for every registry format
//!   ([`Registry::load`]), names, handles and side-effect annotations;
//! - [`khipu`]: the Khipu plan contract's types (candidates, decision, mode);
//! - [`settings`]: what settings types share ([`settings::ConfigError`], the
//!   TOML helpers that name a bad key).
//!
//! ```
//! use toolrag_core::{LoadOptions, Registry};
//!
//! let dir = tempfile::tempdir()?;
//! std::fs::create_dir(dir.path().join("time"))?;
//! std::fs::write(
//!     dir.path().join("time/now.toml"),
//!     "name = \"now\"\nsummary = \"The current time.\"\ndescription = \"Returns the time now.\"\n",
//! )?;
//! let registry = Registry::load(&[dir.path().to_path_buf()], &LoadOptions::default())?;
//! assert_eq!(registry.get("time/now").unwrap().handle(), "tool://time/now");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]

pub mod error;
pub mod khipu;
pub mod registry;
pub mod retrieval;
pub mod settings;

pub use error::{Error, ErrorKind, LoadError, LoadErrors, Location, Result};
pub use registry::{LoadOptions, Registry, ToolDef};

/// Queries are cut to this many characters before anything else. The one
/// query-length cap of toolrag: front ends validate against it too.
pub const MAX_QUERY_CHARS: usize = 4096;
