//! The lexical side of the write path: one tantivy document per tool, the
//! fields BM25 weighs with per-field boosts, and the analyser (a tokenizer that
//! splits identifiers and cuts CJK text into bigrams, then lowercasing and
//! stemming).
//!
//! tantivy is the analyser, the statistics and the document store; it does not
//! score queries. [`super::impact`] reads this index once at build time and
//! turns it into the impact lists that the lexical retriever
//! ([`crate::search::lexical`]) scores with.

use std::path::Path;

use tantivy::schema::{
    Field, IndexRecordOption, NumericOptions, Schema, TextFieldIndexing, TextOptions, STRING,
};
use tantivy::tokenizer::{
    LowerCaser, RemoveLongFilter, Stemmer, TextAnalyzer, Token, TokenStream, Tokenizer,
};
use tantivy::{Index, TantivyDocument};

use toolrag_core::error::{Error, Result};
use toolrag_core::registry::{parameter_texts, split_identifier, term_parts, ToolDef};

/// The name the analyzer is registered under.
const ANALYZER: &str = "toolrag";

/// The most distinct terms a query contributes; longer queries are cut, so a
/// megabyte of text cannot build a megabyte query.
pub const MAX_QUERY_TERMS: usize = 64;

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
        // The description and parameters are in `all` already; their own
        // fields bought nothing on the dev datasets or the golden set
        // (BENCHMARKS.md, "What each change bought"), so they are off by
        // default. Boosts are baked into the impacts at build time.
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
/// Runs of Chinese, Japanese and Korean characters, which have no spaces
/// between words, become overlapping character bigrams (`读取README文件` →
/// `读取`, `README`, `文件`; `查询天气` → `查询`, `询天`, `天气`), as
/// Elasticsearch's `cjk` analyser does.
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
        term_parts(text, |from, to| push(from, to, &mut self.tokens));
        IdentTokenStream {
            tokens: &mut self.tokens,
            next: 0,
        }
    }
}

/// The analyser of every text field and of queries.
pub(crate) fn analyzer() -> TextAnalyzer {
    TextAnalyzer::builder(IdentTokenizer::default())
        .filter(RemoveLongFilter::limit(48))
        .filter(LowerCaser)
        .filter(Stemmer::new(tantivy::tokenizer::Language::English))
        .build()
}

/// A tantivy (or its I/O) error as an index error; a write that failed for
/// lack of space is [`Error::DiskFull`], told by the I/O error's kind.
pub(crate) fn terr<E: std::fmt::Display + 'static>(e: E) -> Error {
    let any: &dyn std::any::Any = &e;
    if let Some(tantivy::TantivyError::IoError(io)) = any.downcast_ref::<tantivy::TantivyError>() {
        if crate::index::is_disk_full(io) {
            return Error::DiskFull(e.to_string());
        }
    }
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
        let mut all = toolrag_core::registry::document_text(t);
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
    fn the_tokenizer_splits_as_split_identifier() {
        for text in [
            "getHTTPCode_v2.list",
            "read_text_files utf8 math.sum#283188eb",
            "XMLHttpRequest2Go ÀÉtéÉ ǅemo ß-straße",
            "a/b kebab-case  __x__ 12ab34 A1B2",
            "",
            "…—",
        ] {
            let mut t = IdentTokenizer::default();
            let mut s = t.token_stream(text);
            let mut raw = vec![];
            while let Some(tok) = s.next() {
                assert_eq!(&text[tok.offset_from..tok.offset_to], tok.text);
                raw.push(tok.text.to_lowercase());
            }
            assert_eq!(raw, split_identifier(text), "{text}");
        }
    }

    #[test]
    fn non_latin_text_tokenises() {
        assert_eq!(tokens("Tôi cần xe"), ["tôi", "cần", "xe"]);
    }

    /// The raw tokens of `text` (before lowercasing and stemming) with their
    /// byte offsets, checking that each token's text is its slice of `text`
    /// and that positions count up from 0.
    fn raw_tokens(text: &str) -> Vec<(String, usize, usize)> {
        let mut t = IdentTokenizer::default();
        let mut s = t.token_stream(text);
        let mut out = vec![];
        while let Some(tok) = s.next() {
            assert_eq!(&text[tok.offset_from..tok.offset_to], tok.text, "{text}");
            assert_eq!(tok.position, out.len(), "{text}");
            out.push((tok.text.clone(), tok.offset_from, tok.offset_to));
        }
        out
    }

    fn texts(text: &str) -> Vec<String> {
        raw_tokens(text).into_iter().map(|t| t.0).collect()
    }

    #[test]
    fn chinese_runs_become_overlapping_bigrams_with_offsets() {
        // Each of these characters is three bytes in UTF-8.
        assert_eq!(
            raw_tokens("查询天气"),
            [
                ("查询".to_string(), 0, 6),
                ("询天".to_string(), 3, 9),
                ("天气".to_string(), 6, 12)
            ]
        );
        // The analyser (lowercasing, stemming) leaves them as they are.
        assert_eq!(tokens("查询天气"), ["查询", "询天", "天气"]);
        assert_eq!(texts("读取文件"), ["读取", "取文", "文件"]);
        // A lone character stays a unigram; CJK punctuation separates.
        assert_eq!(texts("查"), ["查"]);
        assert_eq!(texts("天，气。"), ["天", "气"]);
        assert_eq!(
            texts("根据城市名称查询天气。返回「实时」天气"),
            [
                "根据", "据城", "城市", "市名", "名称", "称查", "查询", "询天", "天气", "返回",
                "实时", "天气"
            ]
        );
        // Extension B (four bytes) and compatibility ideographs count.
        assert_eq!(
            raw_tokens("𠮷野家"),
            [("𠮷野".to_string(), 0, 7), ("野家".to_string(), 4, 10)]
        );
        assert_eq!(texts("\u{F900}\u{F901}"), ["\u{F900}\u{F901}"]);
    }

    #[test]
    fn mixed_latin_and_cjk_text_splits_at_the_script_change() {
        assert_eq!(
            raw_tokens("读取README文件"),
            [
                ("读取".to_string(), 0, 6),
                ("README".to_string(), 6, 12),
                ("文件".to_string(), 12, 18)
            ]
        );
        assert_eq!(
            texts("用getHTTPCode查询2024年的天气 utf8"),
            [
                "用", "get", "HTTP", "Code", "查询", "2024", "年的", "的天", "天气", "utf", "8"
            ]
        );
        assert_eq!(
            tokens("上传PDF文件到S3"),
            ["上传", "pdf", "文件", "件到", "s", "3"]
        );
        // split_identifier cuts at the same places and keeps a CJK run whole.
        assert_eq!(
            split_identifier("读取README文件"),
            ["读取", "readme", "文件"]
        );
        assert_eq!(split_identifier("查询天气"), ["查询天气"]);
    }

    #[test]
    fn japanese_and_korean_runs_become_bigrams() {
        // Hiragana, Katakana (with the prolonged sound mark) and kanji in one run.
        assert_eq!(
            texts("ファイルを読む"),
            ["ファ", "ァイ", "イル", "ルを", "を読", "読む"]
        );
        assert_eq!(texts("データ"), ["デー", "ータ"]);
        // The Katakana middle dot and Japanese punctuation separate.
        assert_eq!(
            texts("コピー・ペースト。"),
            ["コピ", "ピー", "ペー", "ース", "スト"]
        );
        // Halfwidth Katakana.
        assert_eq!(texts("ﾃﾞｰﾀ"), ["ﾃﾞ", "ﾞｰ", "ｰﾀ"]);
        // Hangul syllables: spaces separate words, each word is bigrammed.
        assert_eq!(texts("날씨 조회"), ["날씨", "조회"]);
        assert_eq!(texts("파일을 읽기"), ["파일", "일을", "읽기"]);
        assert_eq!(
            tokens("서울 날씨를 알려줘"),
            ["서울", "날씨", "씨를", "알려", "려줘"]
        );
        // Hangul jamo.
        assert_eq!(texts("ㄱㄴㄷ"), ["ㄱㄴ", "ㄴㄷ"]);
    }
}
