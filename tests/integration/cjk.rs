//! Chinese text, lexically: a lexical-only index of the Chinese set
//! (`tests/golden/zh`), whose tools are described in Chinese, finds the tool a
//! Chinese request asks for. Before CJK runs were cut into bigrams, a run of
//! Chinese was one term and these requests found nothing. No model needed.

use std::sync::OnceLock;

use toolrag::index::{build, BuildOptions};
use toolrag::registry::{LoadOptions, Registry};
use toolrag::search::{Mode, SearchConfig, SearchRequest, Searcher};

use crate::common::root;

/// A lexical-only searcher over `tests/golden/zh/tools.jsonl`, built once.
fn searcher() -> &'static Searcher {
    static S: OnceLock<(tempfile::TempDir, Searcher)> = OnceLock::new();
    &S.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let reg = Registry::load(
            &[root().join("tests/golden/zh/tools.jsonl")],
            &LoadOptions::default(),
        )
        .unwrap();
        build(reg, None, &BuildOptions::new(dir.path()), &|_| {}).unwrap();
        let s = Searcher::open(dir.path(), None, SearchConfig::default()).unwrap();
        (dir, s)
    })
    .1
}

fn lexical(query: &str) -> Vec<String> {
    searcher()
        .search(&SearchRequest {
            query: query.into(),
            k: 5,
            mode: Mode::Lexical,
            ..Default::default()
        })
        .unwrap()
        .hits
        .into_iter()
        .map(|h| h.id)
        .collect()
}

#[test]
fn a_chinese_request_finds_the_tool_described_in_chinese_first() {
    // Requests of tests/golden/zh/queries.jsonl with their labels.
    for (query, tool) in [
        ("读取一下配置文件 config.yaml 的内容", "read_file"),
        ("北京明天天气怎么样", "maps_weather"),
        (
            "规划一条从西湖到杭州东站的驾车路线",
            "maps_direction_driving",
        ),
        ("我的顺丰快递到哪了，单号SF1234567890", "track_express"),
        ("把这段话翻译成英文", "translate_text"),
        ("识别这张发票图片上的文字", "ocr_image"),
        ("查询数据库里订单表最近十条记录", "execute_sql"),
    ] {
        let hits = lexical(query);
        assert_eq!(
            hits.first().map(String::as_str),
            Some(tool),
            "{query}: {hits:?}"
        );
    }
}

#[test]
fn latin_words_glued_to_chinese_still_match() {
    // `SQL` and `MySQL` are glued to Chinese in the request and in the tool's
    // description ("在MySQL数据库上执行SQL查询语句").
    let hits = lexical("用SQL查数据库");
    assert_eq!(
        hits.first().map(String::as_str),
        Some("execute_sql"),
        "{hits:?}"
    );
    let hits = lexical("执行MySQL语句");
    assert_eq!(
        hits.first().map(String::as_str),
        Some("execute_sql"),
        "{hits:?}"
    );
}
