//! The read path: a [`Searcher`] opens an index once, as an immutable snapshot,
//! and answers concurrent queries with hybrid BM25 + dense retrieval.

mod clauses;
mod fusion;
pub mod khipu;
mod request;

use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub use clauses::clause_spans;
pub use fusion::{fuse, Fusion};
pub use request::{Decision, Hit, Mode, SearchRequest, SearchResult};

use crate::embed::Embedder;
use crate::error::{Error, Result};
use crate::index::dense::DenseIndex;
use crate::index::lexical::{LexicalFilter, LexicalIndex};
use crate::index::{current_generation, Manifest, ModelInfo};
use crate::registry::cut_chars;
use crate::registry::ToolDef;

/// Queries are cut to this many characters before anything else.
pub const MAX_QUERY_CHARS: usize = 4096;

/// Tuning of retrieval and abstaining.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default, rename_all = "kebab-case", deny_unknown_fields)]
pub struct SearchConfig {
    /// How deep each retriever goes before fusion.
    pub depth: usize,
    /// How hybrid mode fuses.
    pub fusion: Fusion,
    /// Also search with one vector per clause of a multi-clause request.
    pub clause_vectors: bool,
    /// Subtracted from a clause vector's similarity, so the whole request wins ties.
    pub clause_penalty: f32,
    /// How deep each clause vector searches (0: as deep as the request).
    pub clause_depth: usize,
    /// How many query embeddings to keep in the LRU cache (0: no cache).
    pub query_cache: usize,
    /// BM25 field boosts; `None` uses the ones recorded in the index.
    pub boosts: Option<crate::index::lexical::FieldBoosts>,
    /// ABSTAIN when the best tool's dense cosine is below this (dense/hybrid).
    /// 0.30 keeps 90% of answerable golden requests and abstains on about half
    /// of the out-of-scope ones (BENCHMARKS.md, "Abstain").
    pub min_dense: f32,
    /// ABSTAIN when the best BM25 score per query term is below this (lexical).
    /// BM25 scores do not separate out-of-scope requests (measured AUROC below
    /// 0.5 on the golden set), so the default only abstains when nothing matches.
    pub min_lexical: f32,
    /// Up to this many tools, BM25 scores a query's term clauses as a plain
    /// union; above it, with tantivy's block-max WAND (see
    /// [`crate::index::lexical::UNION_MAX_DOCS`]).
    pub union_max_docs: u64,
    /// Dense search scans every vector exactly up to this many points and
    /// walks the HNSW graph above (see
    /// [`crate::index::dense::EXACT_MAX_POINTS`]).
    pub exact_max_points: usize,
    /// Above `exact_max_points`, dense search scans one-bit codes up to this
    /// many points and walks the HNSW graph above (see
    /// [`crate::index::dense::SCAN_MAX_POINTS`]).
    pub scan_max_points: usize,
    /// The HNSW candidate list size per query vector; 0 picks it from the
    /// search depth.
    pub hnsw_ef: usize,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            depth: 50,
            fusion: Fusion::default(),
            clause_vectors: true,
            clause_penalty: 0.0,
            clause_depth: 10,
            query_cache: 1024,
            boosts: None,
            min_dense: 0.30,
            min_lexical: 0.0,
            union_max_docs: crate::index::lexical::UNION_MAX_DOCS,
            exact_max_points: crate::index::dense::EXACT_MAX_POINTS,
            scan_max_points: crate::index::dense::SCAN_MAX_POINTS,
            hnsw_ef: 0,
        }
    }
}

/// An opened index: immutable, shareable across threads.
pub struct Searcher {
    dir: PathBuf,
    manifest: Manifest,
    tools: Vec<ToolDef>,
    /// Tool ordinal by id, for handles and pins.
    by_id: std::collections::HashMap<String, u32>,
    /// Dense points per tool on average (tool text plus examples), rounded
    /// up, 1 to 3: how much deeper than the search depth the dense side asks
    /// for points, so that a tool's several points do not crowd others out.
    points_per_tool: usize,
    lexical: LexicalIndex,
    dense: Option<DenseIndex>,
    embedder: Option<Arc<dyn Embedder>>,
    cache: Mutex<lru::LruCache<String, Arc<Vec<Vec<f32>>>>>,
    config: SearchConfig,
}

impl std::fmt::Debug for Searcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher")
            .field("dir", &self.dir)
            .field("tools", &self.tools.len())
            .field("dense", &self.dense.is_some())
            .finish()
    }
}

impl Searcher {
    /// Opens the live generation of the index in `dir`. Pass the embedder to
    /// enable dense and hybrid modes; it must be the model the index was built
    /// with, or opening fails with [`Error::IncompatibleIndex`].
    pub fn open(
        dir: &Path,
        embedder: Option<Arc<dyn Embedder>>,
        config: SearchConfig,
    ) -> Result<Searcher> {
        let gen = current_generation(dir)?;
        let manifest = Manifest::read(&gen)?;
        if let Some(e) = &embedder {
            let info = ModelInfo {
                id: e.model_id().to_string(),
                dimension: e.dimension(),
                sha256: e.fingerprint().to_string(),
            };
            manifest.check_model(dir, &info)?;
        }
        let tools_path = gen.join("tools.json");
        let bytes = std::fs::read(&tools_path).map_err(|e| Error::io(&tools_path, e))?;
        let tools: Vec<ToolDef> = serde_json::from_slice(&bytes)
            .map_err(|e| Error::Index(format!("{}: {e}", tools_path.display())))?;
        if tools.len() != manifest.counts.tools {
            return Err(Error::Index(format!(
                "tools.json has {} tools, the manifest {}",
                tools.len(),
                manifest.counts.tools
            )));
        }
        // The impacts were computed with the build's boosts; other boosts
        // from the configuration are scored by tantivy field by field.
        let boosts = config.boosts.unwrap_or(manifest.boosts);
        let impacts = if boosts == manifest.boosts {
            crate::index::impact::ImpactIndex::open(&gen.join(crate::index::impact::FILE))?
        } else {
            None
        };
        let lexical =
            LexicalIndex::open(&gen.join("lexical"), boosts, config.union_max_docs, impacts)?;
        let dense = if manifest.lexical_only || embedder.is_none() {
            None
        } else {
            Some(DenseIndex::open(
                &gen,
                crate::index::dense::DenseOptions {
                    exact_max_points: config.exact_max_points,
                    scan_max_points: config.scan_max_points,
                    ef: config.hnsw_ef,
                },
            )?)
        };
        let by_id = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i as u32))
            .collect();
        let points_per_tool = dense
            .as_ref()
            .map_or(1, |d| d.points().len().div_ceil(tools.len().max(1)))
            .clamp(1, 3);
        Ok(Searcher {
            dir: gen,
            manifest,
            tools,
            by_id,
            points_per_tool,
            lexical,
            dense,
            embedder,
            cache: Mutex::new(lru::LruCache::new(
                NonZeroUsize::new(config.query_cache.max(1)).expect("non-zero"),
            )),
            config,
        })
    }

    /// The generation folder this searcher reads.
    pub fn generation(&self) -> &Path {
        &self.dir
    }

    /// The index manifest.
    pub fn manifest(&self) -> &Manifest {
        &self.manifest
    }

    /// All tools, in ordinal order.
    pub fn tools(&self) -> &[ToolDef] {
        &self.tools
    }

    /// Whether dense and hybrid modes are available.
    pub fn has_dense(&self) -> bool {
        self.dense.is_some() && self.embedder.is_some()
    }

    /// The tool with this id or handle.
    pub fn tool(&self, id: &str) -> Option<&ToolDef> {
        let id = id
            .strip_prefix(crate::registry::HANDLE_SCHEME)
            .unwrap_or(id);
        self.by_id.get(id).map(|&o| &self.tools[o as usize])
    }

    /// The embeddings of `query`: the whole request, then one per clause when
    /// clause vectors are on. From the LRU cache when the query was seen before.
    pub fn embed_query(&self, query: &str) -> Result<Arc<Vec<Vec<f32>>>> {
        let e = self
            .embedder
            .as_ref()
            .ok_or_else(|| Error::InvalidInput("dense search needs the embedding model".into()))?;
        if let Some(v) = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(query)
        {
            return Ok(v.clone());
        }
        let spans = if self.config.clause_vectors {
            clause_spans(query)
        } else {
            vec![]
        };
        let v = Arc::new(e.embed_query_parts(query, &spans)?);
        if self.config.query_cache == 0 {
            return Ok(v);
        }
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .put(query.to_string(), v.clone());
        Ok(v)
    }

    fn keep(&self, req: &SearchRequest) -> impl Fn(u32) -> bool + '_ {
        let namespaces = req.namespaces.clone();
        let tags = req.tags.clone();
        let (read_only, no_destructive) = (req.read_only, req.exclude_destructive);
        move |ord: u32| {
            let Some(t) = self.tools.get(ord as usize) else {
                return false;
            };
            (namespaces.is_empty() || namespaces.contains(&t.namespace))
                && (tags.is_empty() || t.tags.iter().any(|x| tags.contains(x)))
                && (!read_only || t.annotations.is_read_only())
                && (!no_destructive || !may_be_destructive(t))
        }
    }

    /// Answers one request.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResult> {
        let query = cut_chars(req.query.trim(), MAX_QUERY_CHARS);
        if query.is_empty() {
            return Err(Error::InvalidInput("the query is empty".into()));
        }
        let mut pins = Vec::new();
        for p in &req.pin {
            let id = p.strip_prefix(crate::registry::HANDLE_SCHEME).unwrap_or(p);
            let ord = *self
                .by_id
                .get(id)
                .ok_or_else(|| Error::InvalidInput(format!("unknown pinned tool `{p}`")))?;
            if !pins.contains(&ord) {
                pins.push(ord);
            }
        }
        let mode = match req.mode {
            Mode::Hybrid if !self.has_dense() => Mode::Lexical,
            Mode::Dense if !self.has_dense() => {
                return Err(Error::InvalidInput(if self.manifest.lexical_only {
                    "this index is lexical-only: rebuild it with the model for dense search".into()
                } else {
                    "dense search needs the embedding model (see --model-dir)".into()
                }))
            }
            m => m,
        };
        let k = req.k.min(self.tools.len());
        let depth = self.config.depth.max(k);
        let keep = self.keep(req);
        let keep_dyn: &dyn Fn(u32) -> bool = &keep;
        let filtered = !req.namespaces.is_empty()
            || !req.tags.is_empty()
            || req.read_only
            || req.exclude_destructive;

        let lexical: Vec<(u32, f32)> = if mode == Mode::Dense {
            vec![]
        } else {
            let lf = LexicalFilter {
                namespaces: &req.namespaces,
                tags: &req.tags,
            };
            // tantivy cannot filter on annotations: ask it for more and
            // filter after. The impact search filters as it ranks.
            let extra = if (req.read_only || req.exclude_destructive) && !self.lexical.has_impacts()
            {
                4
            } else {
                1
            };
            let mut l =
                self.lexical
                    .search(query, depth * extra, &lf, filtered.then_some(keep_dyn))?;
            if filtered {
                l.retain(|(o, _)| keep(*o));
            }
            l.truncate(depth);
            l
        };
        let dense: Vec<(u32, f32)> = if mode == Mode::Lexical {
            vec![]
        } else {
            let vectors = self.embed_query(query)?;
            let d = self.dense.as_ref().expect("has_dense checked");
            // Several points per tool (examples) and several query vectors
            // (clauses): look deeper by the points a tool has on average,
            // keep each tool's best similarity.
            let mut best: std::collections::HashMap<u32, f32> = std::collections::HashMap::new();
            let clause_depth = match self.config.clause_depth {
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
            let found = d.search_many(&queries, filtered.then_some(keep_dyn));
            for (i, hits) in found.into_iter().enumerate() {
                let penalty = if i == 0 {
                    0.0
                } else {
                    self.config.clause_penalty
                };
                for (p, sim) in hits {
                    let tool = d.points()[p].tool;
                    let s = sim - penalty;
                    let e = best.entry(tool).or_insert(f32::MIN);
                    if s > *e {
                        *e = s;
                    }
                }
            }
            let mut best: Vec<(u32, f32)> = best.into_iter().collect();
            best.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
            best.truncate(depth);
            best
        };
        let ranked: Vec<(u32, f32)> = match mode {
            Mode::Lexical => lexical.clone(),
            Mode::Dense => dense.clone(),
            Mode::Hybrid => fuse(self.config.fusion, &lexical, &dense),
        };
        let confidence = self.confidence(mode, query, &lexical, &dense);
        let hit = |ord: u32, score: f32, pinned: bool| -> Hit {
            let t = &self.tools[ord as usize];
            let lr = lexical.iter().position(|(o, _)| *o == ord);
            let dr = dense.iter().position(|(o, _)| *o == ord);
            Hit {
                id: t.id.clone(),
                score,
                lexical_rank: lr.map(|r| r as u32 + 1),
                lexical_score: lr.map(|r| lexical[r].1),
                dense_rank: dr.map(|r| r as u32 + 1),
                dense_score: dr.map(|r| dense[r].1),
                pinned,
                summary: t.summary.clone(),
            }
        };
        let missing_pins: Vec<u32> = pins
            .iter()
            .copied()
            .filter(|p| !ranked.iter().take(k).any(|(o, _)| o == p))
            .collect();
        let room = k.saturating_sub(missing_pins.len());
        let mut hits: Vec<Hit> = ranked
            .iter()
            .take(room)
            .map(|&(o, s)| hit(o, s, pins.contains(&o)))
            .collect();
        hits.extend(missing_pins.iter().map(|&o| hit(o, 0.0, true)));

        let (decision, abstain_reason) = self.decide(mode, confidence, &ranked, &lexical, &dense);
        Ok(SearchResult {
            query: req.query.clone(),
            mode,
            hits,
            decision,
            abstain_reason,
            confidence,
        })
    }

    /// The evidence that the best tool fits: the best dense cosine (dense and
    /// hybrid), or the best BM25 score per query term (lexical).
    fn confidence(
        &self,
        mode: Mode,
        query: &str,
        lexical: &[(u32, f32)],
        dense: &[(u32, f32)],
    ) -> f32 {
        match mode {
            Mode::Lexical => {
                let terms = self.lexical.analyse(query).len().max(1) as f32;
                lexical.first().map_or(0.0, |x| x.1 / terms.sqrt())
            }
            _ => dense.first().map_or(0.0, |x| x.1),
        }
    }

    fn decide(
        &self,
        mode: Mode,
        confidence: f32,
        ranked: &[(u32, f32)],
        lexical: &[(u32, f32)],
        dense: &[(u32, f32)],
    ) -> (Decision, Option<String>) {
        if ranked.is_empty() {
            return (
                Decision::Abstain,
                Some("no tool in the index matches any word of the request".into()),
            );
        }
        let (threshold, what) = match mode {
            Mode::Lexical => (self.config.min_lexical, "BM25 per query term"),
            _ => (self.config.min_dense, "cosine"),
        };
        if confidence >= threshold {
            return (Decision::Navigate, None);
        }
        let source = if mode == Mode::Lexical {
            lexical
        } else {
            dense
        };
        let misses: Vec<String> = source
            .iter()
            .take(3)
            .map(|(o, s)| format!("tool://{} ({s:.2})", self.tools[*o as usize].id))
            .collect();
        (
            Decision::Abstain,
            Some(format!(
                "no tool is close enough: best {what} {confidence:.2} is below {threshold:.2}; nearest misses: {}",
                misses.join(", ")
            )),
        )
    }
}

/// Whether a tool is, or may be, destructive: per MCP, a tool that is not
/// read-only is assumed destructive unless it says otherwise.
pub fn may_be_destructive(t: &ToolDef) -> bool {
    match (t.annotations.read_only_hint, t.annotations.destructive_hint) {
        (_, Some(true)) => true,
        (Some(true), _) => false,
        (_, Some(false)) => false,
        _ => true,
    }
}
