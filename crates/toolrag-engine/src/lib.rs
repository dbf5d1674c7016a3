//! # toolrag-engine
//!
//! The retrieval engine, with no server, async runtime or command line in its
//! dependency tree. Its modules are floors, each importing only those below:
//!
//! 1. [`index`]: the on-disk generation (manifest, BM25 postings and
//!    impacts, dense vectors, the HNSW graph), read and verified;
//! 2. [`search`]: the read path (retrievers, fusion, names, calibration,
//!    the decision) over an opened generation ([`Searcher`]);
//! 3. [`learn`]: learning from use (the usage log, the learnt requests of
//!    `learnt.json`), which reads nothing of the index;
//! 4. [`build`](mod@build): the write path, which writes a generation (with each
//!    tool's learnt requests) and measures its calibration with the search's
//!    retrievers;
//! 5. [`eval`] (recall, MRR and the abstain curves of labelled requests) and
//!    [`live`] (the live, hot-swapped index that every server reads).
//!
//! It knows nothing of HTTP: the limits, request checks, error statuses and
//! connection handling of the HTTP front ends are `toolrag-serve`'s, a crate
//! above this one. It makes no network call.
#![warn(missing_docs)]

pub mod build;
pub mod eval;
pub mod index;
pub mod learn;
pub mod live;
pub mod search;

pub use build::{build, BuildModel, BuildOptions, BuildProgress, BuildReport};
pub use search::{Hit, SearchConfig, SearchRequest, SearchResult, Searcher};
