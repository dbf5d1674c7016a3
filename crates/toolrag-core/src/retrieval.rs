//! Retrieval modes and the retrievers they use: the names shared by the CLI,
//! the HTTP API, `toolrag.toml` and the ranks of every hit.

use serde::{Deserialize, Serialize};

/// The id of the BM25 retriever, as [`Mode::uses`] and the ranks name it.
pub const LEXICAL: &str = "lexical";
/// The id of the dense retriever, as [`Mode::uses`] and the ranks name it.
pub const DENSE: &str = "dense";

/// Which retrievers to use. Each mode is a set of retrievers (see
/// [`Mode::retrievers`]); the names are the same in the CLI, the HTTP API and
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
    pub fn uses(self, id: &str) -> bool {
        match self {
            Mode::Hybrid => true,
            Mode::Lexical => id == LEXICAL,
            Mode::Dense => id == DENSE,
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
