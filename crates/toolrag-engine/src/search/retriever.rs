//! What a retriever is: something that ranks the tools of one index
//! generation for a query.
//!
//! A retriever has an id (the key of its evidence in each [`super::Hit`]),
//! says how fusion normalises its scores and how much they weigh, and returns
//! `(tool ordinal, score)` best first. The built-in ones are
//! [`super::lexical::LexicalRetriever`] and [`super::dense::DenseRetriever`];
//! adding another is one file implementing this trait plus
//! [`super::Searcher::with_retriever`]. How much a retriever's list counts on
//! a query follows the registry's calibration ([`super::calibration`]).

use super::fusion::{Fusion, Normalise};
use toolrag_core::error::Result;
use toolrag_core::retrieval::RetrieverId;

/// A filter on tool ordinals: `true` keeps the tool.
pub type Keep<'a> = &'a dyn Fn(u32) -> bool;

/// One ranking of the tools. Implementations must be deterministic: the same
/// query, depth and filter give the same list.
pub trait Retriever: Send + Sync {
    /// The retriever's id (`lexical`, `dense`): the key of its evidence in
    /// hits and of its list in fusion. Unique within a searcher.
    fn id(&self) -> &RetrieverId;

    /// How fusion brings this retriever's scores to a common scale.
    fn normalise(&self) -> Normalise;

    /// The factor of this retriever's normalised scores in weighted fusion
    /// (ignored by RRF). 1 unless the retriever says otherwise.
    fn weight(&self, fusion: &Fusion) -> f32 {
        let _ = fusion;
        1.0
    }

    /// The top `depth` tools for `query` (already trimmed and cut to
    /// [`super::MAX_QUERY_CHARS`]): `(tool ordinal, score)`, best first, ties
    /// by ordinal. With `keep`, only tools it accepts, and still `depth` of
    /// them when there are.
    fn retrieve(
        &self,
        query: &str,
        depth: usize,
        keep: Option<Keep<'_>>,
    ) -> Result<Vec<(u32, f32)>>;
}
