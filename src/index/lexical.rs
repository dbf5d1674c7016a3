//! The lexical side: one tantivy document per tool, BM25 over separate fields
//! with per-field boosts, and a tokenizer that splits identifiers.

use std::path::Path;

use tantivy::query::{
    BooleanQuery, BoostQuery, ConstScoreQuery, DisjunctionMaxQuery, Occur, Query, TermQuery,
};
use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy::{Index, IndexReader, ReloadPolicy, TantivyDocument, Term};

use crate::error::{Error, Result};
use crate::registry::{parameter_texts, split_identifier, ToolDef};

/// The name the analyzer is registered under.
const ANALYZER: &str = "toolrag";

/// The most distinct terms a query contributes; longer queries are cut, so a
/// megabyte of text cannot build a megabyte query.
pub const MAX_QUERY_TERMS: usize = 64;

/// Up to this many documents, a query's term clauses are scored as a plain
/// union; above it, as a boolean query, which tantivy runs with block-max WAND.
/// WAND re-sorts dozens of term scorers at every pivot and skipped too little
/// to pay for it at every size measured: lexical p50 with 600 bfcl queries was
/// 0.36 vs 1.11 ms at 3,258 tools (bfcl), 0.4 vs 1.0 ms at 10k and 1.6 vs
/// 4.0 ms at 100k synthetic tools (BENCHMARKS.md, "What each change bought").
/// So the union is used at every size; `search.unionMaxDocs` can bring WAND
/// back for a registry large enough to measure otherwise.
pub const UNION_MAX_DOCS: u64 = u64::MAX;

/// Per-field BM25 boosts. Chosen by measurement on the dev datasets; see
/// BENCHMARKS.md.
#[derive(Debug, Clone, Copy, serde::Serialize, serde::Deserialize, PartialEq)]
pub struct FieldBoosts {
    /// The tool name (split into words) and title.
    pub name: f32,
    /// The one-line summary.
    pub summary: f32,
    /// The description prose.
    pub description: f32,
    /// Parameter names and descriptions.
    pub params: f32,
    /// Example requests.
    pub examples: f32,
    /// Tags.
    pub tags: f32,
    /// The namespace.
    pub namespace: f32,
    /// Everything above in one field (the tool's document text, example
    /// requests, tags and namespace), so BM25 sees the tool's whole vocabulary
    /// with one length normalisation.
    #[serde(default)]
    pub all: f32,
}

impl Default for FieldBoosts {
    fn default() -> Self {
        // Every query term becomes one clause per field with a boost above
        // zero, so each field costs latency. The description and parameters
        // are in `all` already; their own fields bought nothing on the dev
        // datasets or the golden set and cost a third of the lexical p50
        // (BENCHMARKS.md, "What each change bought"), so they are off by
        // default and can be turned on in toolrag.toml.
        FieldBoosts {
            name: 0.5,
            summary: 0.5,
            description: 0.0,
            params: 0.0,
            examples: 0.5,
            tags: 0.5,
            namespace: 0.25,
            all: 1.0,
        }
    }
}

/// The fields of the tantivy schema.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fields {
    pub ord: Field,
    pub name: Field,
    pub summary: Field,
    pub description: Field,
    pub params: Field,
    pub examples: Field,
    pub tags: Field,
    pub namespace: Field,
    pub all: Field,
    pub namespace_raw: Field,
    pub tag_raw: Field,
}

pub(crate) fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let text = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(ANALYZER)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        ord: b.add_u64_field("ord", NumericOptions::default().set_stored().set_fast()),
        name: b.add_text_field("name", text.clone()),
        summary: b.add_text_field("summary", text.clone()),
        description: b.add_text_field("description", text.clone()),
        params: b.add_text_field("params", text.clone()),
        examples: b.add_text_field("examples", text.clone()),
        tags: b.add_text_field("tags", text.clone()),
        namespace: b.add_text_field("namespace", text.clone()),
        all: b.add_text_field("all", text),
        namespace_raw: b.add_text_field("namespace_raw", STRING),
        tag_raw: b.add_text_field("tag_raw", STRING),
    };
    (b.build(), fields)
}

/// The text fields a query searches, with their boosts (those above zero).
pub(crate) fn weighted_fields(f: &Fields, b: &FieldBoosts) -> Vec<(Field, f32)> {
    [
        (f.name, b.name),
        (f.summary, b.summary),
        (f.description, b.description),
        (f.params, b.params),
        (f.examples, b.examples),
        (f.tags, b.tags),
        (f.namespace, b.namespace),
        (f.all, b.all),
    ]
    .into_iter()
    .filter(|&(_, boost)| boost > 0.0)
    .collect()
}

/// Splits text into words, and words into identifier parts (`snake_case`,
/// `camelCase`, `dotted.names`, letters and digits), keeping byte offsets.
#[derive(Clone, Default)]
pub struct IdentTokenizer {
    tokens: Vec<Token>,
}

/// The token stream of [`IdentTokenizer`].
pub struct IdentTokenStream<'a> {
    tokens: &'a mut [Token],
    next: usize,
}

impl TokenStream for IdentTokenStream<'_> {
    fn advance(&mut self) -> bool {
        self.next += 1;
        self.next <= self.tokens.len()
    }
    fn token(&self) -> &Token {
        &self.tokens[self.next - 1]
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.tokens[self.next - 1]
    }
}

impl Tokenizer for IdentTokenizer {
    type TokenStream<'a> = IdentTokenStream<'a>;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> IdentTokenStream<'a> {
        self.tokens.clear();
        let mut position = 0;
        let mut push = |from: usize, to: usize, tokens: &mut Vec<Token>| {
            tokens.push(Token {
                offset_from: from,
                offset_to: to,
                position,
                text: text[from..to].to_string(),
                position_length: 1,
            });
            position += 1;
        };
        let chars: Vec<(usize, char)> = text.char_indices().collect();
        let mut i = 0;
        while i < chars.len() {
            if !chars[i].1.is_alphanumeric() {
                i += 1;
                continue;
            }
            let mut start = i;
            let mut j = i + 1;
            while j < chars.len() && chars[j].1.is_alphanumeric() {
                let (p, c) = (chars[j - 1].1, chars[j].1);
                let next_lower = chars.get(j + 1).is_some_and(|n| n.1.is_lowercase());
                let boundary = (p.is_lowercase() && c.is_uppercase())
                    || (p.is_uppercase() && c.is_uppercase() && next_lower)
                    || (p.is_alphabetic() && c.is_numeric())
                    || (p.is_numeric() && c.is_alphabetic());
                if boundary {
                    push(chars[start].0, chars[j].0, &mut self.tokens);
                    start = j;
                }
                j += 1;
            }
            let end = chars.get(j).map_or(text.len(), |c| c.0);
            push(chars[start].0, end, &mut self.tokens);
            i = j;
        }
        IdentTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(IdentTokenizer::default())
        .filter(RemoveLongFilter::limit(48))
        .filter(LowerCaser)
        .filter(Stemmer::new(tantivy::tokenizer::Language::English))
        .build()
}

/// A tantivy (or its I/O) error as an index error.
pub(crate) fn terr(e: impl std::fmt::Display) -> Error {
    Error::Index(e.to_string())
}

/// Writes the lexical index of `tools` into `dir`.
pub(crate) fn write(dir: &Path, tools: &[ToolDef]) -> Result<()> {
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let (schema, f) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(terr)?;
    index.tokenizers().register(ANALYZER, analyzer());
    let mut writer = index
        .writer_with_num_threads::<TantivyDocument>(1, 64 * 1024 * 1024)
        .map_err(terr)?;
    for (ord, t) in tools.iter().enumerate() {
        let mut doc = TantivyDocument::default();
        doc.add_u64(f.ord, ord as u64);
        let words = split_identifier(&t.name).join(" ");
        doc.add_text(
            f.name,
            format!("{} {}", words, t.title.as_deref().unwrap_or("")),
        );
        doc.add_text(f.summary, &t.summary);
        if t.description != t.summary {
            doc.add_text(f.description, &t.description);
        }
        for (name, desc) in parameter_texts(t) {
            doc.add_text(f.params, format!("{name} {desc}"));
        }
        for e in &t.examples {
            doc.add_text(f.examples, &e.request);
        }
        for tag in &t.tags {
            doc.add_text(f.tags, tag);
            doc.add_text(f.tag_raw, tag);
        }
        doc.add_text(f.namespace, &t.namespace);
        doc.add_text(f.namespace_raw, &t.namespace);
        let mut all = crate::registry::document_text(t);
        for e in &t.examples {
            all.push(' ');
            all.push_str(&e.request);
        }
        for tag in &t.tags {
            all.push(' ');
            all.push_str(tag);
        }
        all.push(' ');
        all.push_str(&t.namespace);
        doc.add_text(f.all, all);
        writer.add_document(doc).map_err(terr)?;
    }
    writer.commit().map_err(terr)?;
    writer.wait_merging_threads().map_err(terr)?;
    Ok(())
}

/// An opened lexical index, ready for concurrent queries.
pub struct LexicalIndex {
    index: Index,
    reader: IndexReader,
    fields: Fields,
    boosts: FieldBoosts,
    union_max_docs: u64,
    /// The precomputed impacts, when the index has them for these boosts.
    impacts: Option<super::impact::ImpactIndex>,
}

impl std::fmt::Debug for LexicalIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LexicalIndex")
            .field("boosts", &self.boosts)
            .field("impacts", &self.impacts)
            .finish()
    }
}

/// Restricts lexical hits to some namespaces and tags.
#[derive(Debug, Default, Clone)]
pub struct LexicalFilter<'a> {
    /// Any of these namespaces (empty: all).
    pub namespaces: &'a [String],
    /// Any of these tags (empty: all).
    pub tags: &'a [String],
}

impl LexicalIndex {
    /// Opens the lexical index in `dir`, scoring as a plain union up to
    /// `union_max_docs` documents and with block-max WAND above (see
    /// [`UNION_MAX_DOCS`]). With `impacts` (computed for these boosts), a
    /// query reads those instead of scoring every field (see
    /// [`super::impact`]); the ranking is the same.
    pub fn open(
        dir: &Path,
        boosts: FieldBoosts,
        union_max_docs: u64,
        impacts: Option<super::impact::ImpactIndex>,
    ) -> Result<LexicalIndex> {
        let index = Index::open_in_dir(dir).map_err(terr)?;
        index.tokenizers().register(ANALYZER, analyzer());
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(terr)?;
        let (_, fields) = schema();
        Ok(LexicalIndex {
            index,
            reader,
            fields,
            boosts,
            union_max_docs,
            impacts,
        })
    }

    /// The analysed terms of `text`, distinct, at most [`MAX_QUERY_TERMS`].
    pub fn analyse(&self, text: &str) -> Vec<String> {
        let mut a = self
            .index
            .tokenizers()
            .get(ANALYZER)
            .expect("registered on open");
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

    /// The top `limit` tools for `text` by boosted BM25: `(tool ordinal, score)`.
    /// User text is plain text: no query syntax is interpreted.
    ///
    /// `filter` restricts the tantivy query; `keep` restricts the impact
    /// search (see [`LexicalIndex::open`]), which has no fields to filter on.
    /// Pass both for the same restriction.
    pub fn search(
        &self,
        text: &str,
        limit: usize,
        filter: &LexicalFilter<'_>,
        keep: Option<&dyn Fn(u32) -> bool>,
    ) -> Result<Vec<(u32, f32)>> {
        if limit == 0 {
            return Ok(vec![]);
        }
        let terms = self.analyse(text);
        if terms.is_empty() {
            return Ok(vec![]);
        }
        if let Some(impacts) = &self.impacts {
            return Ok(impacts.search(&terms, limit, keep));
        }
        let f = &self.fields;
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for term in &terms {
            for (field, boost) in weighted_fields(f, &self.boosts) {
                let q = TermQuery::new(
                    Term::from_field_text(field, term),
                    IndexRecordOption::WithFreqs,
                );
                should.push((Occur::Should, Box::new(BoostQuery::new(Box::new(q), boost))));
            }
        }
        let searcher = self.reader.searcher();
        let text_query: Box<dyn Query> = if searcher.num_docs() <= self.union_max_docs {
            // A dis-max with tie-breaker 1 scores the sum of its clauses, as the
            // boolean query does, but runs as a plain union instead of
            // block-max WAND (see UNION_MAX_DOCS).
            let clauses = should.into_iter().map(|(_, q)| q).collect();
            Box::new(DisjunctionMaxQuery::with_tie_breaker(clauses, 1.0))
        } else {
            Box::new(BooleanQuery::new(should))
        };
        let query: Box<dyn Query> = if filter.namespaces.is_empty() && filter.tags.is_empty() {
            text_query
        } else {
            let mut must: Vec<(Occur, Box<dyn Query>)> = vec![(Occur::Must, text_query)];
            for (values, field) in [
                (filter.namespaces, f.namespace_raw),
                (filter.tags, f.tag_raw),
            ] {
                if values.is_empty() {
                    continue;
                }
                let any: Vec<(Occur, Box<dyn Query>)> = values
                    .iter()
                    .map(|v| {
                        let q: Box<dyn Query> = Box::new(TermQuery::new(
                            Term::from_field_text(field, v),
                            IndexRecordOption::Basic,
                        ));
                        (Occur::Should, q)
                    })
                    .collect();
                // A filter restricts and must not score: BM25 of the
                // namespace or tag term would add to every kept tool's score
                // (and not always the same amount), which the impact search
                // does not do.
                must.push((
                    Occur::Must,
                    Box::new(ConstScoreQuery::new(Box::new(BooleanQuery::new(any)), 0.0)),
                ));
            }
            Box::new(BooleanQuery::new(must))
        };
        let top = searcher
            .search(
                &query,
                &tantivy::collector::TopDocs::with_limit(limit).order_by_score(),
            )
            .map_err(terr)?;
        // One "ord" column per segment, opened once per search, not per hit.
        let mut columns: Vec<Option<tantivy::columnar::Column<u64>>> =
            vec![None; searcher.segment_readers().len()];
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let slot = &mut columns[addr.segment_ord as usize];
            if slot.is_none() {
                *slot = Some(
                    searcher
                        .segment_reader(addr.segment_ord)
                        .fast_fields()
                        .u64("ord")
                        .map_err(terr)?,
                );
            }
            let ord = slot
                .as_ref()
                .and_then(|c| c.first(addr.doc_id))
                .unwrap_or(0);
            out.push((ord as u32, score));
        }
        Ok(out)
    }

    /// Whether queries read precomputed impacts.
    pub fn has_impacts(&self) -> bool {
        self.impacts.is_some()
    }

    /// The number of documents.
    pub fn len(&self) -> u64 {
        self.reader.searcher().num_docs()
    }

    /// Whether the index holds no documents.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(text: &str) -> Vec<String> {
        let mut a = analyzer();
        let mut s = a.token_stream(text);
        let mut out = vec![];
        while let Some(t) = s.next() {
            out.push(t.text.clone());
        }
        out
    }

    #[test]
    fn identifiers_are_split_lowercased_and_stemmed() {
        assert_eq!(
            tokens("getHTTPCode read_text_files utf8"),
            ["get", "http", "code", "read", "text", "file", "utf", "8"]
        );
        assert_eq!(tokens("math.sum#283188eb"), ["math", "sum", "283188", "eb"]);
        // No stop-word list: short tool words survive.
        assert_eq!(tokens("cd to the up dir"), ["cd", "to", "the", "up", "dir"]);
    }

    #[test]
    fn non_latin_text_tokenises() {
        assert_eq!(tokens("Tôi cần xe"), ["tôi", "cần", "xe"]);
    }
}
