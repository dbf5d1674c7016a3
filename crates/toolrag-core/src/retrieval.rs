//! Retrieval modes and the retrievers they use: the names shared by the CLI,
//! the HTTP API, `toolrag.toml` and the ranks of every hit.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The id of a retriever: the key of its evidence in every hit, of its list in
/// fusion and of its scores in an index's calibration. The set is open (a
/// searcher may register more retrievers), so the two built in are constants:
/// [`RetrieverId::LEXICAL`] and [`RetrieverId::DENSE`]. Serialised as its
/// name (`"lexical"`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RetrieverId(Cow<'static, str>);

impl RetrieverId {
    /// The BM25 retriever.
    pub const LEXICAL: RetrieverId = RetrieverId::from_static("lexical");
    /// The dense retriever.
    pub const DENSE: RetrieverId = RetrieverId::from_static("dense");

    /// The id named `name`, for a retriever defined outside this crate.
    pub const fn from_static(name: &'static str) -> RetrieverId {
        RetrieverId(Cow::Borrowed(name))
    }

    /// The id named `name`, read at run time.
    pub fn new(name: impl Into<String>) -> RetrieverId {
        RetrieverId(Cow::Owned(name.into()))
    }

    /// The id's name (`lexical`, `dense`).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for RetrieverId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which retrievers to use. Each mode is a set of retrievers (see
/// [`Mode::uses`]); the names are the same in the CLI, the HTTP API and
/// `toolrag.toml`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Every registered retriever (BM25 and dense), fused.
    #[default]
    Hybrid,
    /// BM25 only.
    Lexical,
    /// Dense vectors only.
    Dense,
}

impl Mode {
    /// Every mode, in the order the CLI lists them.
    pub const ALL: [Mode; 3] = [Mode::Hybrid, Mode::Lexical, Mode::Dense];
    /// The names of [`Mode::ALL`], for a CLI's possible values.
    pub const NAMES: [&'static str; 3] = ["hybrid", "lexical", "dense"];

    /// The name of the mode (`hybrid`, `lexical`, `dense`).
    pub fn name(self) -> &'static str {
        match self {
            Mode::Hybrid => "hybrid",
            Mode::Lexical => "lexical",
            Mode::Dense => "dense",
        }
    }

    /// Whether the retriever `id` takes part in this mode: lexical and dense
    /// modes are their one retriever, hybrid is every registered one.
    pub fn uses(self, id: &RetrieverId) -> bool {
        match self {
            Mode::Hybrid => true,
            Mode::Lexical => *id == RetrieverId::LEXICAL,
            Mode::Dense => *id == RetrieverId::DENSE,
        }
    }
}

impl std::fmt::Display for Mode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A mode name that is not one of [`Mode::NAMES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mode `{0}`: expected hybrid, lexical or dense")]
pub struct UnknownMode(pub String);

impl std::str::FromStr for Mode {
    type Err = UnknownMode;
    fn from_str(s: &str) -> Result<Mode, UnknownMode> {
        Mode::ALL
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| UnknownMode(s.to_string()))
    }
}
