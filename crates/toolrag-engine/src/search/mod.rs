//! The read path: a [`Searcher`] opens an index once, as an immutable snapshot,
//! and answers concurrent queries with its [`Retriever`]s (BM25 and dense by
//! default), fused.
//!
//! A search runs: filter → retrieve with each retriever of the mode → fuse →
//! names and deprecation → pins → decide.

pub mod calibration;
mod clauses;
mod config;
pub mod dense;
mod deprecation;
mod fusion;
pub mod khipu;
pub mod lexical;
mod names;
mod request;
mod retriever;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use calibration::{Calibration, CalibrationSummary, Calibrator};
pub use clauses::clause_spans;
pub use fusion::{fuse, Fusion, List, Normalise, Ranked, DEFAULT_DENSE_WEIGHT};
pub use names::MAX_NAMED_PER_TOKEN;
pub use request::{
    Decision, Evidence, Hit, Mode, RetrieverEvidence, RetrieverId, SearchRequest, SearchResult,
    UnknownMode, DEFAULT_K,
};
pub use retriever::{Keep, Retriever};
pub use toolrag_core::registry::may_be_destructive;

use crate::index::dense::DenseOptions;
use crate::index::{current_generation, Manifest, ModelInfo};
use toolrag_core::error::{Error, Result};
use toolrag_core::registry::cut_chars;
use toolrag_core::registry::ToolDef;
use toolrag_embed::Embedder;

pub use config::{SearchConfig, DEFAULT_ABSTAIN_BELOW, MAX_DEPTH, MAX_QUERY_CACHE};
pub use toolrag_core::MAX_QUERY_CHARS;

/// One retriever's list for one search.
type Retrieved<'s> = (&'s dyn Retriever, Vec<(u32, f32)>);

/// An opened index: immutable, shareable across threads.
pub struct Searcher {
    dir: PathBuf,
    manifest: Manifest,
    tools: Vec<ToolDef>,
    /// Tool ordinal by id, for handles and pins.
    by_id: std::collections::HashMap<String, u32>,
    /// The registered retrievers, in fusion order: lexical first, then dense.
    retrievers: Vec<Arc<dyn Retriever>>,
    /// The dense retriever, also in `retrievers`, for [`Searcher::embed_query`].
    dense: Option<Arc<dense::DenseRetriever>>,
    /// The lexical retriever, also in `retrievers`, for `min-lexical`.
    lexical: Arc<lexical::LexicalRetriever>,
    /// The registry's noise, from the generation's calibration.
    calibrator: Calibrator,
    /// The step after fusion: exact names and deprecation.
    names: names::Names,
    config: SearchConfig,
}

impl std::fmt::Debug for Searcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Searcher")
            .field("dir", &self.dir)
            .field("tools", &self.tools.len())
            .field(
                "retrievers",
                &self.retrievers.iter().map(|r| r.id()).collect::<Vec<_>>(),
            )
            .finish()
    }
}

impl Searcher {
    /// Opens the live generation of the index in `dir`. Pass the embedder to
    /// enable dense and hybrid modes; it must be the model the index was built
    /// with, or opening fails with [`Error::IncompatibleIndex`], as it does for
    /// a generation without the BM25 impacts; a `config` with a bad number is
    /// refused naming the key ([`SearchConfig::validate`]).
    pub fn open(
        dir: &Path,
        embedder: Option<Arc<dyn Embedder>>,
        config: SearchConfig,
    ) -> Result<Searcher> {
        Searcher::open_tuned(dir, embedder, config, DenseOptions::default())
    }

    /// [`Searcher::open`] with the dense index's engine tuning (`dense_options`),
    /// which is no user setting: the defaults are right for every index.
    /// Benchmarks use it to compare the configured scan with an exact one.
    pub fn open_tuned(
        dir: &Path,
        embedder: Option<Arc<dyn Embedder>>,
        config: SearchConfig,
        dense_options: DenseOptions,
    ) -> Result<Searcher> {
        config.validate()?;
        let gen = current_generation(dir)?;
        let manifest = Manifest::read(&gen)?;
        if let Some(e) = &embedder {
            let info = ModelInfo::of(e.as_ref());
            manifest.check_model(dir, &info)?;
        }
        let tools: Vec<ToolDef> = crate::index::read_tools(&gen)?;
        if tools.len() != manifest.counts.tools {
            return Err(Error::Index(format!(
                "tools.json has {} tools, the manifest {}",
                tools.len(),
                manifest.counts.tools
            )));
        }
        let lexical = Arc::new(lexical::LexicalRetriever::open(&gen)?);
        let mut retrievers: Vec<Arc<dyn Retriever>> = vec![lexical.clone()];
        let dense = match embedder {
            Some(e) if !manifest.lexical_only => Some(Arc::new(dense::DenseRetriever::open(
                &gen,
                tools.len(),
                e,
                &config,
                dense_options,
            )?)),
            _ => None,
        };
        if let Some(d) = &dense {
            retrievers.push(d.clone());
        }
        let calibration = match calibration::read(&gen)? {
            Some(c) if dense.is_none() || c.retrievers.contains(&RetrieverId::DENSE) => c,
            _ => {
                // Built before calibration was stored, or measured without
                // the dense side: measure now (about a second with the model).
                tracing::warn!(
                    "{}: the index holds no calibration for these retrievers; measuring it now \
                     (rebuild the index to store it)",
                    gen.display()
                );
                calibration::measure(&lexical, dense.as_deref(), None)?
            }
        };
        let calibrator = Calibrator::new(&calibration);
        let by_id = tools
            .iter()
            .enumerate()
            .map(|(i, t)| (t.id.clone(), i as u32))
            .collect();
        let names = names::Names::new(&tools);
        Ok(Searcher {
            dir: gen,
            manifest,
            tools,
            by_id,
            retrievers,
            dense,
            lexical,
            calibrator,
            names,
            config,
        })
    }

    /// Registers one more retriever, fused after the others in hybrid mode.
    /// Its id must not be one already registered.
    pub fn with_retriever(mut self, retriever: Arc<dyn Retriever>) -> Result<Searcher> {
        if self.retriever(retriever.id()).is_some() {
            return Err(Error::InvalidInput(format!(
                "a retriever `{}` is registered already",
                retriever.id()
            )));
        }
        self.retrievers.push(retriever);
        Ok(self)
    }

    /// The registered retriever `id`.
    pub fn retriever(&self, id: &RetrieverId) -> Option<&dyn Retriever> {
        self.retrievers
            .iter()
            .find(|r| r.id() == id)
            .map(|r| r.as_ref())
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

    /// The registry's noise, as measured by its calibration.
    pub fn calibrator(&self) -> &Calibrator {
        &self.calibrator
    }

    /// Whether dense and hybrid modes are available.
    pub fn has_dense(&self) -> bool {
        self.dense.is_some()
    }

    /// The tool with this id or handle.
    pub fn tool(&self, id: &str) -> Option<&ToolDef> {
        let id = id
            .strip_prefix(toolrag_core::registry::HANDLE_SCHEME)
            .unwrap_or(id);
        self.by_id.get(id).map(|&o| &self.tools[o as usize])
    }

    /// The embeddings of `query`: the whole request, then one per clause when
    /// clause vectors are on. From the LRU cache when the query was seen before.
    pub fn embed_query(&self, query: &str) -> Result<Arc<Vec<Vec<f32>>>> {
        self.dense
            .as_ref()
            .ok_or_else(|| Error::InvalidInput("dense search needs the embedding model".into()))?
            .embed_query(query)
    }

    /// Answers one request: filter → retrieve with each retriever of the
    /// mode → fuse → names and deprecation → pins → decide.
    pub fn search(&self, req: &SearchRequest) -> Result<SearchResult> {
        let query = cut_chars(req.query.trim(), MAX_QUERY_CHARS);
        if query.is_empty() {
            return Err(Error::InvalidInput("the query is empty".into()));
        }
        let pins = self.pins(req)?;
        let mode = self.serving_mode(req.mode)?;
        let k = req.k.min(self.tools.len());
        let depth = self.config.depth.max(k);
        let keep = self.keep(req);
        let keep: Option<Keep<'_>> = req.is_filtered().then_some(&keep as Keep<'_>);

        let lists = self.retrieve(mode, query, depth, keep)?;
        let ranked = self.fuse(&lists);
        let step = self.names.apply(query, ranked, keep);
        let ranked = &step.ranked;
        let mut hits = self.hits(ranked, &lists, &pins, k);
        step.annotate(&mut hits, |id| self.ordinal(id));
        let (confidence, decision, abstain_reason) =
            self.decide(mode, query, ranked, &lists, step.named);
        Ok(SearchResult {
            query: req.query.clone(),
            mode,
            hits,
            decision,
            abstain_reason,
            confidence,
        })
    }

    /// The ordinal and card of the tool with this id.
    fn ordinal(&self, id: &str) -> Option<(u32, &ToolDef)> {
        let &o = self.by_id.get(id)?;
        Some((o, &self.tools[o as usize]))
    }

    /// The ordinals of the pinned tools, each once; an unknown one is an error.
    fn pins(&self, req: &SearchRequest) -> Result<Vec<u32>> {
        let mut pins = Vec::new();
        for p in &req.pin {
            let id = p
                .strip_prefix(toolrag_core::registry::HANDLE_SCHEME)
                .unwrap_or(p);
            if req.visible.as_ref().is_some_and(|v| !v.contains(id)) {
                continue;
            }
            let ord = *self
                .by_id
                .get(id)
                .ok_or_else(|| Error::InvalidInput(format!("unknown pinned tool `{p}`")))?;
            if !pins.contains(&ord) {
                pins.push(ord);
            }
        }
        Ok(pins)
    }

    /// The mode this searcher can serve for `asked`: hybrid falls back to
    /// lexical without a dense side; dense without one is an error.
    fn serving_mode(&self, asked: Mode) -> Result<Mode> {
        match asked {
            Mode::Hybrid if !self.has_dense() => Ok(Mode::Lexical),
            Mode::Dense if !self.has_dense() => {
                Err(Error::InvalidInput(if self.manifest.lexical_only {
                    "this index is lexical-only: rebuild it with the model for dense search".into()
                } else {
                    "dense search needs the embedding model, and the index was opened without it"
                        .into()
                }))
            }
            m => Ok(m),
        }
    }

    fn keep(&self, req: &SearchRequest) -> impl Fn(u32) -> bool + '_ {
        let namespaces = req.namespaces.clone();
        let tags = req.tags.clone();
        let (read_only, no_destructive) = (req.read_only, req.exclude_destructive);
        let visible = req.visible.clone();
        move |ord: u32| {
            let Some(t) = self.tools.get(ord as usize) else {
                return false;
            };
            visible.as_ref().is_none_or(|v| v.contains(&t.id))
                && (namespaces.is_empty() || namespaces.contains(&t.namespace))
                && (tags.is_empty() || t.tags.iter().any(|x| tags.contains(x)))
                && (!read_only || t.annotations.is_read_only())
                && (!no_destructive || !may_be_destructive(t))
        }
    }

    /// Each of the mode's retrievers' lists, in registration order.
    fn retrieve<'s>(
        &'s self,
        mode: Mode,
        query: &str,
        depth: usize,
        keep: Option<Keep<'_>>,
    ) -> Result<Vec<Retrieved<'s>>> {
        self.retrievers
            .iter()
            .filter(|r| mode.uses(r.id()))
            .map(|r| Ok((r.as_ref(), r.retrieve(query, depth, keep)?)))
            .collect()
    }

    /// A retriever's calibrated evidence on its list (see [`calibration`]),
    /// against the English noise.
    fn evidence(&self, r: &dyn Retriever, list: &[(u32, f32)]) -> f32 {
        list.first()
            .map_or(0.0, |x| self.calibrator.evidence(r.id(), x.1))
    }

    /// One list is the ranking as it is; several are fused.
    fn fuse(&self, lists: &[Retrieved<'_>]) -> Vec<(u32, f32)> {
        if let [(_, only)] = lists {
            return only.clone();
        }
        let fusion = self.config.fusion;
        let tagged: Vec<List<'_>> = lists
            .iter()
            .map(|(r, ranked)| List {
                retriever: r.id(),
                normalise: r.normalise(),
                weight: r.weight(&fusion),
                evidence: self.evidence(*r, ranked),
                ranked,
                floor: self.calibrator.noise_level(r.id()),
            })
            .collect();
        fuse(fusion, &tagged)
    }

    /// The confidence of a search: the largest of the retrievers'
    /// calibrated shares (how many unrelated calibration requests score
    /// below this request's best), so that one retriever standing out from
    /// the registry's noise is enough; retrievers the calibration did not
    /// measure are left out. `shares` holds each list's share, in the order
    /// of `lists` ([`Calibrator::list_share`]). Leave-one-dataset-out chose
    /// the largest share over the fusion weights' mix: at the threshold the
    /// other sets choose, the worst held-out set keeps 0.969 of its
    /// answerable requests, against 0.948 (BENCHMARKS.md, "Abstain").
    fn confidence(
        &self,
        calibrator: &Calibrator,
        lists: &[Retrieved<'_>],
        shares: &[Option<f32>],
    ) -> f32 {
        lists
            .iter()
            .zip(shares)
            .filter(|((r, _), _)| calibrator.knows(r.id()))
            .map(|(_, share)| share.unwrap_or(0.0))
            .fold(0.0f32, f32::max)
            .clamp(0.0, 1.0)
    }

    /// The top `k` of `ranked`, with each retriever's evidence; pinned tools
    /// that did not make it take the last places, with score 0.
    fn hits(
        &self,
        ranked: &[(u32, f32)],
        lists: &[Retrieved<'_>],
        pins: &[u32],
        k: usize,
    ) -> Vec<Hit> {
        let hit = |ord: u32, score: f32, pinned: bool| -> Hit {
            let t = &self.tools[ord as usize];
            let mut retrievers = RetrieverEvidence::default();
            for (r, list) in lists {
                if let Some(i) = list.iter().position(|(o, _)| *o == ord) {
                    retrievers.insert(r.id().clone(), Evidence::new(i as u32 + 1, list[i].1));
                }
            }
            Hit {
                id: t.id.clone(),
                score,
                retrievers,
                pinned,
                summary: t.summary.clone(),
                note: None,
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
        hits
    }

    /// The confidence of `lists` against `calibrator`'s noise, and whether
    /// the retrievers agree: each puts the same tool first with a share
    /// above [`calibration::AGREEMENT`].
    fn judge(&self, calibrator: &Calibrator, lists: &[Retrieved<'_>]) -> (f32, bool) {
        let shares: Vec<Option<f32>> = lists
            .iter()
            .map(|(r, l)| calibrator.list_share(r.id(), l))
            .collect();
        let confidence = self.confidence(calibrator, lists, &shares);
        let firsts: Vec<Option<u32>> = lists
            .iter()
            .zip(&shares)
            .map(|((_, l), share)| {
                l.first()
                    .filter(|_| share.is_none_or(|s| s > calibration::AGREEMENT))
                    .map(|x| x.0)
            })
            .collect();
        let agree =
            lists.len() > 1 && firsts[0].is_some() && firsts.iter().all(|f| *f == firsts[0]);
        (confidence, agree)
    }

    /// The confidence ([`Searcher::confidence`]) and the decision taken on
    /// it: NAVIGATE when the request `named` a tool exactly, when the
    /// retrievers put the same tool first, each better than
    /// [`calibration::AGREEMENT`] of the calibration requests, or when the
    /// confidence reaches `abstain-below`; ABSTAIN otherwise, and when an
    /// absolute floor (`min-dense`, `min-lexical`) is set and missed. A
    /// request the English noise abstains on, reliably in a calibrated
    /// language, is judged again against that language's noise
    /// ([`Calibrator::for_language`]) and navigates if that says so.
    fn decide(
        &self,
        mode: Mode,
        query: &str,
        ranked: &[(u32, f32)],
        lists: &[Retrieved<'_>],
        named: bool,
    ) -> (f32, Decision, Option<String>) {
        if lists.is_empty() {
            return (0.0, Decision::Abstain, Some("no retriever ran".into()));
        }
        if ranked.is_empty() {
            return (
                0.0,
                Decision::Abstain,
                Some("no tool in the index matches any word of the request".into()),
            );
        }
        let (confidence, agree) = self.judge(&self.calibrator, lists);
        if named {
            return (confidence, Decision::Navigate, None);
        }
        if let Some(reason) = self.below_absolute_floor(mode, query, lists) {
            return (confidence, Decision::Abstain, Some(reason));
        }
        let threshold = self.config.abstain_below;
        if agree || confidence >= threshold {
            return (confidence, Decision::Navigate, None);
        }
        // The English noise abstains: a second opinion in the request's
        // own language, when it is one that was calibrated.
        let mut language = None;
        let mut confidence = confidence;
        if let Some(own) = self.calibrator.for_language(query) {
            let (c, agree) = self.judge(own, lists);
            if agree || c >= threshold {
                return (c, Decision::Navigate, None);
            }
            if c > confidence {
                (confidence, language) = (c, own.language());
            }
        }
        let misses: Vec<String> = ranked
            .iter()
            .take(3)
            .map(|(o, s)| format!("tool://{} ({s:.2})", self.tools[*o as usize].id))
            .collect();
        (
            confidence,
            Decision::Abstain,
            Some(format!(
                "no tool is close enough: the best matches score above only {:.0}% of the \
                 unrelated calibration requests{} on this registry (abstain-below {:.0}%); \
                 nearest misses: {}",
                confidence * 100.0,
                language
                    .map(|l| format!(" in its language ({l})"))
                    .unwrap_or_default(),
                threshold * 100.0,
                misses.join(", ")
            )),
        )
    }

    /// The reason to ABSTAIN when `min-dense` or `min-lexical` is set and
    /// the search's best raw score misses it.
    fn below_absolute_floor(
        &self,
        mode: Mode,
        query: &str,
        lists: &[Retrieved<'_>],
    ) -> Option<String> {
        let list = |id: &RetrieverId| lists.iter().find(|(r, _)| r.id() == id).map(|(_, l)| l);
        match mode {
            Mode::Lexical => {
                let l = list(&RetrieverId::LEXICAL)?;
                let per_term = self.lexical.score_per_term(query, l);
                let min = self.config.min_lexical;
                (per_term < min).then(|| {
                    format!("no tool is close enough: best BM25 per query term {per_term:.2} is below min-lexical {min:.2}")
                })
            }
            Mode::Dense | Mode::Hybrid => {
                let best = list(&RetrieverId::DENSE)?.first().map_or(0.0, |x| x.1);
                let min = self.config.min_dense;
                (best < min).then(|| {
                    format!("no tool is close enough: best cosine {best:.2} is below min-dense {min:.2}")
                })
            }
        }
    }
}

impl toolrag_core::registry::ToolResolver for Searcher {
    fn resolve(&self, node_id: &str) -> Option<&ToolDef> {
        self.tool(node_id)
    }
}
