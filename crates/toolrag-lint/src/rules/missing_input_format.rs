use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::rule::{declare_rule, CheckContext, Findings, Rule};
use crate::schema::{self, Property};
use crate::text::shows_example;
use toolrag_core::registry::{split_identifier, ToolDef};

declare_rule! {
    /// ## What it does
    /// Checks string parameters whose name or description says they hold a
    /// date, a time, an id, a URL or an email address, and reports those that
    /// have neither a `format`, a `pattern`, an `enum`, schema `examples`, an
    /// example value in the tool's examples, nor an example in the description
    /// ("e.g. 2024-05-01", "like 'C024BE91L'", "in YYYY-MM-DD").
    ///
    /// Paths are left to `relative-path-parameter`, which asks for more: a
    /// schema that only accepts absolute paths.
    ///
    /// ## Why is this bad?
    /// "The date of the meeting" can be `2024-05-01`, `May 1st`, `tomorrow` or
    /// `01/05/2024`; "the channel id" can be a name or an opaque id. The model
    /// picks one, and the tool fails or, worse, misreads it. A `format` or a
    /// `pattern` turns the guess into a contract that validation can check.
    ///
    /// ## Example
    /// ```toml
    /// [input_schema.properties.start]
    /// type = "string"
    /// description = "Start date of the event."
    /// ```
    ///
    /// Use instead:
    /// ```toml
    /// [input_schema.properties.start]
    /// type = "string"
    /// format = "date-time"
    /// description = "Start of the event, RFC 3339, like 2024-05-01T09:00:00+02:00."
    /// ```
    pub(crate) struct MissingInputFormat {
        code: "TR004",
        name: "missing-input-format",
        level: Warn,
        summary: "A date, time, id, URL or email parameter has no format, pattern, enum or example value.",
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    Date,
    Time,
    Id,
    Url,
    Email,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Date => "a date",
            Kind::Time => "a time",
            Kind::Id => "an id",
            Kind::Url => "a URL",
            Kind::Email => "an email address",
        }
    }

    fn fix(self) -> &'static str {
        match self {
            Kind::Date => "format = \"date\" or \"date-time\"",
            Kind::Time => "format = \"date-time\" or \"time\"",
            Kind::Id => "a pattern (such as \"^[0-9]+$\") or an example id",
            Kind::Url => "format = \"uri\"",
            Kind::Email => "format = \"email\"",
        }
    }
}

/// The head of a description naming what the value is: "The start date ...",
/// "Id of the ...", "URL to fetch".
static HEAD: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"(?i)^(the\s+|a\s+|an\s+)?([\w'-]+\s+){0,2}?(?P<noun>date|datetime|timestamp|id|identifier|uuid|url|uri|link|email\s+address(es)?|e-mail\s+address(es)?)\b",
    )
    .expect("valid regex")
});

fn kind_of(p: &Property<'_>) -> Option<Kind> {
    let words = split_identifier(p.name);
    let last = words.last().map(String::as_str)?;
    let has = |set: &[&str]| words.iter().any(|w| set.contains(&w.as_str()));
    if has(&[
        "date",
        "dates",
        "datetime",
        "timestamp",
        "birthday",
        "birthdate",
        "dob",
        "deadline",
    ]) || (words.len() > 1 && last == "at")
    {
        return Some(Kind::Date);
    }
    if matches!(last, "time" | "times") {
        return Some(Kind::Time);
    }
    if matches!(last, "id" | "ids" | "uuid" | "guid") {
        return Some(Kind::Id);
    }
    if has(&[
        "url", "urls", "uri", "uris", "href", "link", "links", "endpoint", "webhook",
    ]) {
        return Some(Kind::Url);
    }
    if matches!(last, "email" | "emails")
        || (has(&["email", "emails"]) && matches!(last, "address" | "addresses"))
    {
        return Some(Kind::Email);
    }
    let noun = HEAD
        .captures(p.description())?
        .name("noun")?
        .as_str()
        .to_lowercase();
    Some(match noun.as_str() {
        "date" | "datetime" | "timestamp" => Kind::Date,
        "id" | "identifier" | "uuid" => Kind::Id,
        "url" | "uri" | "link" => Kind::Url,
        _ => Kind::Email,
    })
}

/// Whether the schema says what the string looks like.
fn constrained(s: &Value) -> bool {
    ["format", "pattern", "enum", "const", "examples", "example"]
        .iter()
        .any(|k| s.get(k).is_some())
}

impl Rule for MissingInputFormat {
    fn check_tool<'t>(&self, tool: &'t ToolDef, _cx: &CheckContext<'t>, out: &mut Findings<'t>) {
        for p in schema::properties(tool) {
            let Some(strings) = p.string_schema() else {
                continue;
            };
            if schema::is_path_property(&p) {
                continue;
            }
            let Some(kind) = kind_of(&p) else {
                continue;
            };
            if constrained(strings)
                || constrained(p.schema)
                || shows_example(p.description())
                || !p.example_values(tool).is_empty()
            {
                continue;
            }
            out.push(
                tool,
                p.pointer.clone(),
                format!(
                    "parameter `{}` holds {} but has no format, pattern, enum or example value; add {}",
                    p.name,
                    kind.noun(),
                    kind.fix()
                ),
            );
        }
    }
}
