//! The lexical retriever: BM25 over the precomputed impact lists.
//!
//! tantivy analyses the query (the same analyser the build indexed with), and
//! [`ImpactIndex`] scores it: each term's posting list holds every tool's whole
//! boosted BM25 for that term, computed from tantivy's statistics when the
//! generation was built. Nothing else scores lexically.

use std::path::Path;

use tantivy::tokenizer::TextAnalyzer;

use super::fusion::{Fusion, Normalise, Ranked};
use super::retriever::{Keep, Retriever};
use crate::index::impact::{self, ImpactIndex};
use crate::index::lexical::{analyzer, FieldBoosts, MAX_QUERY_TERMS};
use crate::index::Manifest;
use toolrag_core::error::{Error, Result};
use toolrag_core::retrieval::RetrieverId;

/// BM25 over the impacts of one generation.
pub struct LexicalRetriever {
    analyzer: TextAnalyzer,
    impacts: ImpactIndex,
}

impl std::fmt::Debug for LexicalRetriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalRetriever")
            .field("impacts", &self.impacts)
            .finish()
    }
}

impl LexicalRetriever {
    /// Opens the impacts of the generation folder `gen`. A generation without
    /// them (built by an older toolrag) is refused as
    /// [`Error::IncompatibleIndex`]: rebuild it.
    pub fn open(gen: &Path) -> Result<LexicalRetriever> {
        let path = gen.join(impact::FILE);
        let impacts = ImpactIndex::open(&path)?.ok_or_else(|| Error::IncompatibleIndex {
            path: gen.to_path_buf(),
            found: format!("no {}", impact::FILE),
            expected: format!("the precomputed BM25 impacts ({})", impact::FILE),
        })?;
        Ok(LexicalRetriever {
            analyzer: analyzer(),
            impacts,
        })
    }

    /// The best BM25 score of `list` divided by the square root of the
    /// query's analysed terms.
    pub fn score_per_term(&self, query: &str, list: &Ranked) -> f32 {
        let terms = self.analyse(query).len().max(1) as f32;
        list.first().map_or(0.0, |x| x.1 / terms.sqrt())
    }

    /// The precomputed impacts this retriever scores with.
    pub fn impacts(&self) -> &ImpactIndex {
        &self.impacts
    }

    /// The analysed terms of `text`, distinct, at most [`MAX_QUERY_TERMS`].
    pub fn analyse(&self, text: &str) -> Vec<String> {
        terms(&mut self.analyzer.clone(), text)
    }

    /// [`LexicalRetriever::analyse`] without an opened index.
    #[cfg(test)]
    pub(crate) fn analyse_with(text: &str) -> Vec<String> {
        terms(&mut analyzer(), text)
    }
}

/// The distinct analysed terms of `text`, at most [`MAX_QUERY_TERMS`].
fn terms(a: &mut TextAnalyzer, text: &str) -> Vec<String> {
    let mut stream = a.token_stream(text);
    let mut out: Vec<String> = Vec::new();
    while let Some(tok) = stream.next() {
        if !out.iter().any(|t| t == &tok.text) {
            out.push(tok.text.clone());
            if out.len() == MAX_QUERY_TERMS {
                break;
            }
        }
    }
    out
}

/// The id returned by reference ([`RetrieverId::LEXICAL`]).
static ID: RetrieverId = RetrieverId::LEXICAL;

impl Retriever for LexicalRetriever {
    fn id(&self) -> &RetrieverId {
        &ID
    }

    fn normalise(&self) -> Normalise {
        Normalise::ByTop
    }

    fn weight(&self, fusion: &Fusion) -> f32 {
        1.0 - fusion.dense_share()
    }

    fn retrieve(
        &self,
        query: &str,
        depth: usize,
        keep: Option<Keep<'_>>,
    ) -> Result<Vec<(u32, f32)>> {
        let terms = self.analyse(query);
        Ok(self.impacts.search(&terms, depth, keep))
    }
}

/// Checks that `boosts` are the ones the index in `manifest` was built with:
/// the impacts bake them in, so other boosts need a rebuild, never a slower
/// query path.
pub fn check_boosts(dir: &Path, manifest: &Manifest, boosts: &FieldBoosts) -> Result<()> {
    if manifest.boosts == *boosts {
        return Ok(());
    }
    Err(Error::IncompatibleIndex {
        path: dir.to_path_buf(),
        found: format!("BM25 field boosts {:?}", manifest.boosts),
        expected: format!("BM25 field boosts {boosts:?} (boosts are a build setting)"),
    })
}
