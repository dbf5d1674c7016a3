//! Precomputed BM25 impacts: for every term, each tool's whole lexical score
//! for that term (the boosted BM25 of every field, summed, exactly as the
//! tantivy query scores it), so that a query reads one posting list per term
//! instead of one per term and field.
//!
//! The index is immutable once built, so each term's contribution to a tool's
//! score is fixed: the build asks tantivy for it (its [`Bm25Weight`] with the
//! index's own statistics and field norms) and stores it quantised to 16 bits.
//! A query then adds impacts term at a time into one score slot per tool. A
//! query with few postings tracks the slots it touches and stops reading the
//! postings of common terms as soon as they can no longer lift a tool into
//! the top `limit` (MaxScore): their impacts are only looked up for the tools
//! already in contention. A query whose postings reach a good share of the
//! tools adds them all and reads the slots once, in order, skipping chunks
//! whose best slot is below a bound on the `limit`-th best score: streaming
//! the common lists costs less than looking up thousands of candidates in
//! them. Either way the result is the same top `limit` as summing every
//! posting.
//!
//! # File layout (`impacts.bin`, little-endian)
//!
//! ```text
//! header (index::codec, kind IMPACTS: magic "TRIMPACT", version, payload length)
//! u32 tools | u32 terms | f32 scale | u32 0 | u64 pairs
//! u32 × terms   end of each term's bytes in the term blob (terms sorted)
//! u64 × terms   end of each term's postings in the pair arrays
//! u16 × terms   each term's largest impact
//! term blob
//! u32 × pairs   tool ordinals, ascending within a term
//! u16 × pairs   impacts; a tool's score is the sum of its impacts × scale
//! ```

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use tantivy::postings::Postings;
use tantivy::query::{Bm25StatisticsProvider, Bm25Weight};
use tantivy::schema::IndexRecordOption;
use tantivy::{DocSet, Index, Term, TERMINATED};

use super::codec::IMPACTS;
use super::lexical::{terr, weighted_fields, FieldBoosts};
use super::topk::kth_largest;
use toolrag_core::error::{Error, Result};

/// The impacts file in a generation folder.
pub const FILE: &str = "impacts.bin";

/// Computes the impacts of the tantivy index in `lexical_dir`, scored with
/// `boosts`, and writes them to `out`.
pub(crate) fn write(lexical_dir: &Path, boosts: &FieldBoosts, out: &Path) -> Result<()> {
    let index = Index::open_in_dir(lexical_dir).map_err(terr)?;
    let reader = index.reader().map_err(terr)?;
    let searcher = reader.searcher();
    let total_docs = searcher.total_num_docs().map_err(terr)?;
    let (_, fields) = super::lexical::schema();
    // Every field's score for a term, per tool, summed over fields.
    let mut scores: BTreeMap<Vec<u8>, Vec<(u32, f32)>> = BTreeMap::new();
    for (field, boost) in weighted_fields(&fields, boosts) {
        let tokens = searcher.total_num_tokens(field).map_err(terr)?;
        let average = tokens as f32 / total_docs.max(1) as f32;
        for segment in searcher.segment_readers() {
            let inverted = segment.inverted_index(field).map_err(terr)?;
            let norms = segment.get_fieldnorms_reader(field).map_err(terr)?;
            let ords = segment.fast_fields().u64("ord").map_err(terr)?;
            let mut stream = inverted.terms().stream().map_err(terr)?;
            while stream.advance() {
                let key = stream.key();
                let df = searcher
                    .doc_freq(&Term::from_field_bytes(field, key))
                    .map_err(terr)?;
                let weight = Bm25Weight::for_one_term_without_explain(df, total_docs, average)
                    .boost_by(boost);
                let mut postings = inverted
                    .read_postings_from_terminfo(stream.value(), IndexRecordOption::WithFreqs)
                    .map_err(terr)?;
                let list = scores.entry(key.to_vec()).or_default();
                while postings.doc() != TERMINATED {
                    let doc = postings.doc();
                    let ord = ords.first(doc).unwrap_or(0) as u32;
                    list.push((
                        ord,
                        weight.score(norms.fieldnorm_id(doc), postings.term_freq()),
                    ));
                    postings.advance();
                }
            }
        }
    }
    // Merge each term's fields per tool.
    let mut global_max = 0f32;
    for list in scores.values_mut() {
        list.sort_by_key(|p| p.0);
        list.dedup_by(|later, kept| {
            if later.0 == kept.0 {
                kept.1 += later.1;
                true
            } else {
                false
            }
        });
        for p in list.iter() {
            global_max = global_max.max(p.1);
        }
    }
    let scale = if global_max > 0.0 {
        global_max / f32::from(u16::MAX)
    } else {
        1.0
    };
    let quantise = |s: f32| -> u16 { (s / scale).round().clamp(1.0, f32::from(u16::MAX)) as u16 };

    let pairs: usize = scores.values().map(Vec::len).sum();
    let mut term_ends = Vec::with_capacity(scores.len());
    let mut post_ends = Vec::with_capacity(scores.len());
    let mut maxes = Vec::with_capacity(scores.len());
    let mut blob = Vec::new();
    let mut docs = Vec::with_capacity(pairs);
    let mut imps = Vec::with_capacity(pairs);
    for (term, list) in &scores {
        blob.extend_from_slice(term);
        term_ends.push(blob.len() as u32);
        let mut max = 0u16;
        for &(ord, s) in list {
            let q = quantise(s);
            max = max.max(q);
            docs.push(ord);
            imps.push(q);
        }
        post_ends.push(docs.len() as u64);
        maxes.push(max);
    }
    drop(scores);

    let file = std::fs::File::create(out).map_err(|e| Error::io(out, e))?;
    let mut w = std::io::BufWriter::new(file);
    let io = |e| Error::io(out, e);
    let payload =
        24 + term_ends.len() as u64 * (4 + 8 + 2) + blob.len() as u64 + pairs as u64 * (4 + 2);
    IMPACTS.write_header(&mut w, payload).map_err(io)?;
    w.write_all(&(total_docs as u32).to_le_bytes())
        .map_err(io)?;
    w.write_all(&(term_ends.len() as u32).to_le_bytes())
        .map_err(io)?;
    w.write_all(&scale.to_le_bytes()).map_err(io)?;
    w.write_all(&0u32.to_le_bytes()).map_err(io)?;
    w.write_all(&(pairs as u64).to_le_bytes()).map_err(io)?;
    for x in &term_ends {
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    for x in &post_ends {
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    for x in &maxes {
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    w.write_all(&blob).map_err(io)?;
    for x in &docs {
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    for x in &imps {
        w.write_all(&x.to_le_bytes()).map_err(io)?;
    }
    w.into_inner()
        .map_err(|e| Error::io(out, e.into_error()))?
        .sync_all()
        .map_err(io)?;
    Ok(())
}

/// The precomputed impacts of an index, in memory.
pub struct ImpactIndex {
    tools: u32,
    scale: f32,
    term_ends: Vec<u32>,
    post_ends: Vec<u64>,
    maxes: Vec<u16>,
    blob: Vec<u8>,
    docs: Vec<u32>,
    imps: Vec<u16>,
}

impl std::fmt::Debug for ImpactIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ImpactIndex")
            .field("tools", &self.tools)
            .field("terms", &self.maxes.len())
            .field("pairs", &self.docs.len())
            .finish()
    }
}

/// Reads little-endian values off the front of a byte slice.
struct Cursor<'a> {
    bytes: &'a [u8],
    path: &'a Path,
}

impl<'a> Cursor<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.bytes.len() < n {
            return Err(Error::Index(format!("{}: truncated", self.path.display())));
        }
        let (head, tail) = self.bytes.split_at(n);
        self.bytes = tail;
        Ok(head)
    }
    /// `n` little-endian values of `N` bytes each.
    fn many<const N: usize, T>(&mut self, n: usize, from: fn([u8; N]) -> T) -> Result<Vec<T>> {
        let bytes = self.take(n.checked_mul(N).ok_or_else(|| self.bad())?)?;
        Ok(bytes
            .chunks_exact(N)
            .map(|c| from(c.try_into().expect("N bytes")))
            .collect())
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(self.many(1, u32::from_le_bytes)?[0])
    }
    fn bad(&self) -> Error {
        Error::Index(format!("{}: malformed", self.path.display()))
    }
}

/// Per-thread buffers of a search, kept between queries: one score slot per
/// tool (zeroed again after each query), the tools touched, room to select.
#[derive(Default)]
struct Scratch {
    acc: Vec<u32>,
    touched: Vec<u32>,
    scores: Vec<u32>,
    /// The largest slot of each chunk of slots.
    maxima: Vec<u32>,
}

thread_local! {
    static SCRATCH: RefCell<Scratch> = RefCell::new(Scratch::default());
}

/// One query term's postings.
struct List<'a> {
    docs: &'a [u32],
    imps: &'a [u16],
    max: u32,
}

impl ImpactIndex {
    /// Reads `path`; `Ok(None)` when the index has no impacts file (built by
    /// an older version), which the lexical retriever refuses as incompatible.
    pub fn open(path: &Path) -> Result<Option<ImpactIndex>> {
        let bytes = match std::fs::read(path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(path, e)),
        };
        let mut c = Cursor {
            bytes: IMPACTS.payload(path, &bytes)?,
            path,
        };
        let tools = c.u32()?;
        let terms = c.u32()? as usize;
        let scale = f32::from_bits(c.u32()?);
        c.u32()?;
        let pairs = usize::try_from(c.many(1, u64::from_le_bytes)?[0]).map_err(|_| c.bad())?;
        let term_ends = c.many(terms, u32::from_le_bytes)?;
        let post_ends = c.many(terms, u64::from_le_bytes)?;
        let maxes = c.many(terms, u16::from_le_bytes)?;
        let blob_len = term_ends.last().copied().unwrap_or(0) as usize;
        let blob = c.take(blob_len)?.to_vec();
        let docs = c.many(pairs, u32::from_le_bytes)?;
        let imps = c.many(pairs, u16::from_le_bytes)?;
        let ordered = term_ends.windows(2).all(|w| w[0] <= w[1])
            && post_ends.windows(2).all(|w| w[0] <= w[1])
            && post_ends.last().is_none_or(|&e| e as usize == pairs)
            && docs.iter().all(|&d| d < tools);
        if !ordered || !c.bytes.is_empty() || !scale.is_finite() {
            return Err(c.bad());
        }
        Ok(Some(ImpactIndex {
            tools,
            scale,
            term_ends,
            post_ends,
            maxes,
            blob,
            docs,
            imps,
        }))
    }

    fn term(&self, i: usize) -> &[u8] {
        let from = if i == 0 {
            0
        } else {
            self.term_ends[i - 1] as usize
        };
        &self.blob[from..self.term_ends[i] as usize]
    }

    fn list(&self, term: &str) -> Option<List<'_>> {
        let i = binary_search_by(self.maxes.len(), |i| self.term(i).cmp(term.as_bytes()))?;
        let from = if i == 0 {
            0
        } else {
            self.post_ends[i - 1] as usize
        };
        let to = self.post_ends[i] as usize;
        Some(List {
            docs: &self.docs[from..to],
            imps: &self.imps[from..to],
            max: u32::from(self.maxes[i]),
        })
    }

    /// How many terms the index holds.
    pub fn terms(&self) -> usize {
        self.maxes.len()
    }

    /// An analysed term's statistics: `(document frequency, largest impact)`,
    /// the number of tools it occurs in and the most it adds to any tool's
    /// score; `None` for a term no tool has.
    pub fn term_stats(&self, term: &str) -> Option<(u32, f32)> {
        self.list(term)
            .map(|l| (l.docs.len() as u32, l.max as f32 * self.scale))
    }

    /// The top `limit` tools for these (distinct, analysed) terms, by the sum
    /// of their impacts: `(tool ordinal, score)`, best first, ties by ordinal.
    /// Only tools that `keep` accepts are returned.
    pub fn search(
        &self,
        terms: &[String],
        limit: usize,
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Vec<(u32, f32)> {
        let mut lists: Vec<List<'_>> = terms.iter().filter_map(|t| self.list(t)).collect();
        if limit == 0 || lists.is_empty() {
            return vec![];
        }
        // Rare terms weigh most and have short lists: read them first.
        lists.sort_by(|a, b| b.max.cmp(&a.max).then(a.docs.len().cmp(&b.docs.len())));
        // rest[i]: the most that lists i.. can still add to any tool.
        let mut rest = vec![0u32; lists.len() + 1];
        for i in (0..lists.len()).rev() {
            rest[i] = rest[i + 1] + lists[i].max;
        }
        let kept = |d: u32| keep.is_none_or(|k| k(d));
        let postings: usize = lists.iter().map(|l| l.docs.len()).sum();
        SCRATCH.with(|s| {
            let s = &mut *s.borrow_mut();
            s.fit(self.tools as usize);
            let q = Query {
                lists: &lists,
                rest: &rest,
                limit,
                kept: &kept,
                all_kept: keep.is_none(),
            };
            let (mut cands, read) = if postings >= self.tools as usize / DENSE_SHARE {
                (s.accumulate_dense(&q), lists.len())
            } else {
                s.accumulate_sparse(&q)
            };
            if read < lists.len() {
                // The lookups gallop forward: candidates in tool order.
                cands.sort_unstable_by_key(|c| c.0);
                for (j, list) in lists.iter().enumerate().skip(read) {
                    // Scores only grow: the candidates' current k-th best
                    // is a floor for the final one, and a candidate that
                    // cannot reach it with the lists left is out.
                    if cands.len() > limit {
                        let theta = kth_largest(&mut s.scores, cands.iter().map(|c| c.1), limit);
                        cands.retain(|c| c.1 + rest[j] >= theta);
                    }
                    add_by_lookup(&mut cands, list);
                }
            }
            let by_score = |a: &(u32, u32), b: &(u32, u32)| b.1.cmp(&a.1).then(a.0.cmp(&b.0));
            if cands.len() > limit {
                cands.select_nth_unstable_by(limit - 1, by_score);
                cands.truncate(limit);
            }
            cands.sort_unstable_by(by_score);
            cands
                .into_iter()
                .map(|(d, score)| (d, score as f32 * self.scale))
                .collect()
        })
    }
}

/// Queries whose postings number at least the tools divided by this add
/// every posting into the score slots without tracking which they touched,
/// and then read all the slots once: cheaper when a good share of the tools
/// is touched.
const DENSE_SHARE: usize = 8;

/// How many kept tools a filtered dense accumulation reads to bound the
/// `limit`-th best score.
const FILTERED_SAMPLE: usize = 4096;

/// One query's lists in reading order, with what each suffix can add.
struct Query<'q, 'a> {
    lists: &'q [List<'a>],
    rest: &'q [u32],
    limit: usize,
    kept: &'q dyn Fn(u32) -> bool,
    /// Whether `kept` accepts every tool.
    all_kept: bool,
}

impl Scratch {
    /// Sizes the buffers for an index of `tools` tools.
    fn fit(&mut self, tools: usize) {
        if self.acc.len() != tools {
            self.acc = vec![0; tools];
            // One slot more than tools: the sparse loop writes the next
            // slot before it knows whether the tool is new.
            self.touched = vec![0; tools + 1];
        }
    }

    /// Adds the lists' impacts, tracking the tools touched, until the lists
    /// left can no longer lift a tool not yet touched into the top `limit`
    /// (MaxScore). Returns the tools still in contention with their partial
    /// scores (in no order), and how many lists were read; the score slots
    /// are left zero.
    fn accumulate_sparse(&mut self, q: &Query<'_, '_>) -> (Vec<(u32, u32)>, usize) {
        let Scratch {
            acc,
            touched,
            scores,
            ..
        } = self;
        let mut n = 0usize;
        let mut theta = 0u32;
        let mut read = q.lists.len();
        for (i, list) in q.lists.iter().enumerate() {
            // Before a list at least as long as what has been touched, see
            // whether it (and the rest) can still matter to a tool not yet
            // touched: the cost of the check is then no more than the
            // reading it may save.
            if i > 0 && list.docs.len() >= n && n >= q.limit {
                let kept = touched[..n].iter().filter(|&&d| (q.kept)(d));
                theta = kth_largest(scores, kept.map(|&d| acc[d as usize]), q.limit);
                if q.rest[i] < theta {
                    read = i;
                    break;
                }
            }
            // Branch-free: a tool is new when its slot is still zero (every
            // impact is at least 1).
            for (&d, &w) in list.docs.iter().zip(list.imps) {
                let slot = &mut acc[d as usize];
                touched[n] = d;
                n += usize::from(*slot == 0);
                *slot += u32::from(w);
            }
        }
        let touched = &touched[..n];
        let cands: Vec<(u32, u32)> = touched
            .iter()
            .map(|&d| (d, acc[d as usize]))
            .filter(|&(d, score)| score + q.rest[read] >= theta && (q.kept)(d))
            .collect();
        for &d in touched {
            acc[d as usize] = 0;
        }
        (cands, read)
    }

    /// The tools that can make the top `limit`, for queries that touch a
    /// good share of the tools: every list is added in full, without
    /// tracking which slots it touches (a skipped long list would cost more
    /// in scattered lookups than reading it), then the slots are read once,
    /// in tool order, and zeroed. Returns every tool at or above a lower
    /// bound of the `limit`-th best score.
    fn accumulate_dense(&mut self, q: &Query<'_, '_>) -> Vec<(u32, u32)> {
        let Scratch {
            acc,
            scores,
            maxima,
            ..
        } = self;
        for list in q.lists {
            for (&d, &w) in list.docs.iter().zip(list.imps) {
                acc[d as usize] += u32::from(w);
            }
        }
        const CHUNK: usize = 16;
        maxima.clear();
        maxima.extend(
            acc.chunks(CHUNK)
                .map(|c| c.iter().fold(0, |m, &a| m.max(a))),
        );
        // A bound on the `limit`-th best: with every tool kept, the
        // `limit`-th best chunk maximum (each such chunk holds a tool that
        // high); otherwise the `limit`-th best of the first kept tools.
        let theta = if q.all_kept {
            kth_largest(scores, maxima.iter().copied(), q.limit)
        } else {
            let first = acc
                .iter()
                .enumerate()
                .filter(|&(d, &a)| a > 0 && (q.kept)(d as u32))
                .take(FILTERED_SAMPLE)
                .map(|(_, &a)| a);
            kth_largest(scores, first, q.limit)
        }
        .max(1);
        let mut cands = Vec::new();
        for (c, (chunk, &max)) in acc.chunks(CHUNK).zip(maxima.iter()).enumerate() {
            if max >= theta {
                for (j, &a) in chunk.iter().enumerate() {
                    let d = (c * CHUNK + j) as u32;
                    if a >= theta && (q.kept)(d) {
                        cands.push((d, a));
                    }
                }
            }
        }
        acc.fill(0);
        cands
    }
}

/// Adds `list`'s impacts to the candidates (sorted by tool) that it holds,
/// finding each by galloping forward from the previous one.
fn add_by_lookup(cands: &mut [(u32, u32)], list: &List<'_>) {
    let docs = list.docs;
    let mut at = 0usize;
    for c in cands.iter_mut() {
        if at >= docs.len() {
            break;
        }
        // Gallop: find a bound past the candidate, then search within it.
        let mut step = 1usize;
        let mut hi = at;
        while hi < docs.len() && docs[hi] < c.0 {
            at = hi;
            hi += step;
            step *= 2;
        }
        let hi = hi.min(docs.len());
        let pos = at + docs[at..hi].partition_point(|&d| d < c.0);
        if pos < docs.len() && docs[pos] == c.0 {
            c.1 += u32::from(list.imps[pos]);
            at = pos + 1;
        } else {
            at = pos;
        }
    }
}

/// The index in `0..n` at which `cmp` is `Equal`, with `cmp` ordered.
fn binary_search_by(n: usize, cmp: impl Fn(usize) -> std::cmp::Ordering) -> Option<usize> {
    let (mut lo, mut hi) = (0usize, n);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match cmp(mid) {
            std::cmp::Ordering::Less => lo = mid + 1,
            std::cmp::Ordering::Greater => hi = mid,
            std::cmp::Ordering::Equal => return Some(mid),
        }
    }
    None
}

#[cfg(test)]
mod tests;
