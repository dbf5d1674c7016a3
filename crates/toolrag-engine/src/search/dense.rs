//! The dense retriever: the request (and each of its clauses) embedded by the
//! model the index was built with, the nearest points of the dense index, and
//! each tool's best similarity.

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::{Arc, Mutex};

use super::clauses::clause_spans;
use super::fusion::{Fusion, Normalise};
use super::retriever::{Keep, Retriever};
use super::SearchConfig;
use crate::index::dense::{DenseIndex, DenseOptions, PointKind};
use toolrag_core::error::{Error, Result};
use toolrag_core::retrieval::RetrieverId;
use toolrag_embed::Embedder;

/// Query embeddings by query text.
type Cache = Mutex<lru::LruCache<String, Arc<Vec<Vec<f32>>>>>;

/// Dense retrieval over one generation's vectors.
pub struct DenseRetriever {
    index: DenseIndex,
    /// `None` for a retriever that only searches vectors it is given (the
    /// build's calibration).
    embedder: Option<Arc<dyn Embedder>>,
    cache: Cache,
    /// Dense points per tool on average (tool text plus examples), rounded
    /// up, 1 to 3: how much deeper than the search depth the dense side asks
    /// for points, so that a tool's several points do not crowd others out.
    points_per_tool: usize,
    clause_vectors: bool,
    clause_penalty: f32,
    clause_depth: usize,
    query_cache: usize,
}

impl std::fmt::Debug for DenseRetriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DenseRetriever")
            .field("index", &self.index)
            .field("points_per_tool", &self.points_per_tool)
            .finish()
    }
}

impl DenseRetriever {
    /// Opens the dense index of the generation folder `gen` of an index of
    /// `tools` tools, searched with `embedder` (checked against the manifest
    /// by the caller), tuned by `config` and, inside the index, by `options`.
    pub fn open(
        gen: &Path,
        tools: usize,
        embedder: Arc<dyn Embedder>,
        config: &SearchConfig,
        options: DenseOptions,
    ) -> Result<DenseRetriever> {
        let mut r = DenseRetriever::open_without_model(gen, tools, config, options)?;
        r.embedder = Some(embedder);
        Ok(r)
    }

    /// [`DenseRetriever::open`] without a model: it searches only the
    /// vectors it is given ([`DenseRetriever::retrieve_vectors`]).
    pub fn open_without_model(
        gen: &Path,
        tools: usize,
        config: &SearchConfig,
        options: DenseOptions,
    ) -> Result<DenseRetriever> {
        let index = DenseIndex::open(gen, options)?;
        let points_per_tool = index.points().len().div_ceil(tools.max(1)).clamp(1, 3);
        Ok(DenseRetriever {
            index,
            cache: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(config.query_cache.max(1)).unwrap_or(NonZeroUsize::MIN),
            )),
            points_per_tool,
            embedder: None,
            clause_vectors: config.clause_vectors,
            clause_penalty: config.clause_penalty,
            clause_depth: config.clause_depth,
            query_cache: config.query_cache,
        })
    }

    /// The embeddings of `query`: the whole request, then one per clause when
    /// clause vectors are on. From the LRU cache when the query was seen before.
    pub fn embed_query(&self, query: &str) -> Result<Arc<Vec<Vec<f32>>>> {
        if let Some(v) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(query)
        {
            return Ok(v.clone());
        }
        let spans = if self.clause_vectors {
            clause_spans(query)
        } else {
            vec![]
        };
        let embedder = self
            .embedder
            .as_ref()
            .ok_or_else(|| Error::InvalidInput("dense search needs the embedding model".into()))?;
        let v = Arc::new(embedder.embed_query_parts(query, &spans)?);
        if self.query_cache == 0 {
            return Ok(v);
        }
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(query.to_string(), v.clone());
        Ok(v)
    }
}

/// The id returned by reference ([`RetrieverId::DENSE`]).
static ID: RetrieverId = RetrieverId::DENSE;

impl Retriever for DenseRetriever {
    fn id(&self) -> &RetrieverId {
        &ID
    }

    fn normalise(&self) -> Normalise {
        Normalise::ByRange
    }

    fn weight(&self, fusion: &Fusion) -> f32 {
        fusion.dense_share()
    }

    /// Several points per tool (examples) and several query vectors
    /// (clauses): looks deeper by the points a tool has on average and keeps
    /// each tool's best similarity; a clause's is lowered by the clause penalty.
    fn retrieve(
        &self,
        query: &str,
        depth: usize,
        keep: Option<Keep<'_>>,
    ) -> Result<Vec<(u32, f32)>> {
        let vectors = self.embed_query(query)?;
        Ok(self.retrieve_vectors(&vectors, depth, keep))
    }
}

impl DenseRetriever {
    /// [`Retriever::retrieve`] for a request already embedded: `vectors` is
    /// the whole request, then one vector per clause.
    pub fn retrieve_vectors(
        &self,
        vectors: &[Vec<f32>],
        depth: usize,
        keep: Option<Keep<'_>>,
    ) -> Vec<(u32, f32)> {
        let clause_depth = match self.clause_depth {
            0 => depth,
            c => c.min(depth),
        };
        let queries: Vec<(&[f32], usize)> = vectors
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let d = if i == 0 { depth } else { clause_depth };
                (v.as_slice(), d * self.points_per_tool)
            })
            .collect();
        let found = self.index.search_many(&queries, keep);
        let mut best: HashMap<u32, f32> = HashMap::new();
        let mut learnt: HashMap<u32, f32> = HashMap::new();
        let mut floor = f32::MAX;
        for (i, hits) in found.into_iter().enumerate() {
            let penalty = if i == 0 { 0.0 } else { self.clause_penalty };
            for (p, sim) in hits {
                let point = &self.index.points()[p];
                let s = sim - penalty;
                if i == 0 {
                    floor = floor.min(sim);
                }
                let slot = if point.kind == PointKind::Learnt {
                    &mut learnt
                } else {
                    &mut best
                };
                let e = slot.entry(point.tool).or_insert(f32::MIN);
                if s > *e {
                    *e = s;
                }
            }
        }
        // A learnt request counts together with the tool's own texts: the
        // tool scores the mean of its own similarity and its best learnt
        // one, when that is more than its own (the description and the usage
        // count alike; weighting a request by the calls that taught it lost
        // R@1 on two real-server sets, research/LOG.md). A request that only
        // shares a name or a path with another tool's learnt request then
        // cannot take that tool's place by itself. A tool whose own texts
        // were not found is at most at the floor of what was found.
        for (tool, l) in learnt {
            let own = best.get(&tool).copied().unwrap_or(floor.min(l));
            let mixed = (own + l) / 2.0;
            if mixed > own {
                best.insert(tool, mixed);
            }
        }
        crate::index::topk::top(best.into_iter().collect(), depth)
    }
}
