//! `sarif`: a SARIF 2.1.0 log built from the typed model of `serde-sarif`,
//! in the shape GitHub code scanning accepts (`github/codeql-action/upload-sarif`)
//! and `Sarif.Multitool validate --rule-kind "Sarif;Gh"` passes without a
//! warning: every rule has a `helpUri` (its page under `docs/rules/`), tags,
//! a precision and, for the security rules, a `security-severity`; file URIs
//! are relative to `%SRCROOT%` (the working directory) and percent-escaped.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::Path;

use serde_sarif::sarif;

use crate::{rules, Diagnostic, Level};

/// The `$schema` GitHub's documentation uses for SARIF 2.1.0.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn sarif_level(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warn => "warning",
        Level::Info => "note",
        Level::Ignore => "none",
    }
}

/// Where the rule pages are: `docs/rules/<CODE>.md` of toolrag's repository.
/// A build can point them elsewhere with `TOOLRAG_REPOSITORY_URL`.
pub const REPOSITORY_URL: &str = match option_env!("TOOLRAG_REPOSITORY_URL") {
    Some(url) => url,
    None => "https://github.com/your-org/toolrag",
};

/// The base id of URIs relative to the working directory, the checkout's
/// root in CI (the name GitHub's documentation uses).
pub const SRCROOT: &str = "%SRCROOT%";

/// The page documenting the rule `code` (`docs/rules/TR005.md`).
pub fn help_uri(code: &str) -> String {
    format!("{REPOSITORY_URL}/blob/main/docs/rules/{code}.md")
}

/// Percent-escapes a path for a URI: every byte but the unreserved
/// characters of RFC 3986 (letters, digits, `-._~`) and `/`, so that `#`,
/// `?`, `%`, `:` and `,` in a file name stay part of the path.
fn escape_path(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for b in path.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~' | b'/') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The URI of a directory, ending in `/`: `file:///home/me/repo/`.
fn directory_uri(dir: &Path) -> String {
    let mut s = file_uri(dir);
    if !s.ends_with('/') {
        s.push('/');
    }
    s
}

/// A `file://` URI for an absolute path.
fn file_uri(path: &Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    let s = if s.starts_with('/') {
        s
    } else {
        format!("/{s}")
    };
    format!("file://{}", escape_path(&s))
}

/// A file path as a SARIF artifact location: relative to [`SRCROOT`] (with
/// that base id) when the file lies under `root`, otherwise an absolute
/// `file://` URI.
fn artifact_location(path: &Path, root: Option<&Path>) -> sarif::ArtifactLocation {
    let absolute = if path.is_absolute() {
        Some(path.to_path_buf())
    } else {
        root.map(|r| r.join(path))
    };
    let relative = match (root, &absolute) {
        (Some(r), Some(a)) => a.strip_prefix(r).ok().map(Path::to_path_buf),
        _ => None,
    }
    .filter(|p| !p.as_os_str().is_empty())
    .map(|p| clean(&p));
    match (relative, absolute) {
        (Some(rel), _) => sarif::ArtifactLocation::builder()
            .uri(escape_path(&rel))
            .uri_base_id(SRCROOT)
            .build(),
        (None, Some(abs)) => sarif::ArtifactLocation::builder()
            .uri(file_uri(&abs))
            .build(),
        // A relative path with no known root: as written, escaped.
        (None, None) => sarif::ArtifactLocation::builder()
            .uri(escape_path(&clean(path)))
            .build(),
    }
}

/// A relative path with `/` separators and without `.` components.
fn clean(path: &Path) -> String {
    path.components()
        .filter(|c| !matches!(c, std::path::Component::CurDir))
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

/// How code scanning should file a rule's findings: tags, precision and, for
/// the security rules, a `security-severity` (0-10, as CVSS).
fn rule_properties(r: &crate::RuleInfo) -> sarif::PropertyBag {
    let (tags, precision, security): (&[&str], &str, Option<&str>) = match r.name {
        "missing-examples" => (&["docstring", "examples"], "high", None),
        "missing-edge-cases" => (&["docstring", "edge-cases"], "high", None),
        "undocumented-parameter" => (&["docstring", "schema"], "very-high", None),
        "missing-input-format" => (&["docstring", "schema"], "medium", None),
        "relative-path-parameter" => (
            &["security", "schema", "paths", "external/cwe/cwe-22"],
            "high",
            Some("6.5"),
        ),
        "defaulted-path-parameter" => (&["schema", "paths"], "high", None),
        "invalid-example-arguments" => (&["examples", "schema"], "very-high", None),
        "unknown-boundary-target" => (&["docstring", "boundaries"], "very-high", None),
        "confusable-tools" => (&["retrieval", "boundaries"], "medium", None),
        "hidden-instructions" => (
            &[
                "security",
                "tool-poisoning",
                "prompt-injection",
                "external/cwe/cwe-74",
            ],
            "high",
            Some("8.0"),
        ),
        "missing-side-effect-annotations" => (&["annotations", "safety"], "high", None),
        "duplicate-tool-name" => (&["naming", "correctness"], "very-high", None),
        "invalid-tool-name" => (&["naming", "correctness"], "very-high", None),
        "vague-description" => (&["docstring"], "medium", None),
        "oversized-description" => (&["docstring", "context-budget"], "high", None),
        "invalid-input-schema" => (&["schema", "correctness"], "very-high", None),
        "deprecated-without-replacement" => (&["deprecation"], "very-high", None),
        _ => (&["docstring"], "medium", None),
    };
    let mut more = BTreeMap::new();
    more.insert("precision".to_string(), serde_json::Value::from(precision));
    if let Some(severity) = security {
        more.insert(
            "security-severity".to_string(),
            serde_json::Value::from(severity),
        );
    }
    sarif::PropertyBag::builder()
        .tags(tags.iter().map(|t| t.to_string()).collect::<Vec<_>>())
        .additional_properties(more)
        .build()
}

fn rule_descriptor(r: &crate::RuleInfo) -> sarif::ReportingDescriptor {
    let doc = r.doc_text();
    sarif::ReportingDescriptor::builder()
        .id(r.code)
        .name(r.name)
        .short_description(&r.summary.to_string())
        .full_description(&r.summary.to_string())
        .help_uri(help_uri(r.code))
        .help(
            sarif::MultiformatMessageString::builder()
                .text(doc.clone())
                .markdown(doc)
                .build(),
        )
        .default_configuration(
            sarif::ReportingConfiguration::builder()
                .level(serde_json::Value::from(sarif_level(r.default_level)))
                .build(),
        )
        .properties(rule_properties(r))
        .build()
}

fn result(d: &Diagnostic, rule_index: Option<usize>, root: Option<&Path>) -> sarif::Result {
    let region = sarif::Region::builder()
        .start_line(i64::from(d.location.line))
        .start_column(i64::from(d.location.column))
        .build();
    let location = sarif::Location::builder()
        .physical_location(
            sarif::PhysicalLocation::builder()
                .artifact_location(artifact_location(&d.location.file, root))
                .region(region)
                .build(),
        )
        .logical_locations(vec![sarif::LogicalLocation::builder()
            .fully_qualified_name(d.tool_id.clone())
            .kind("function")
            .build()])
        .build();
    // Stable across line moves: the same finding on the same tool part.
    let mut fingerprints = BTreeMap::new();
    fingerprints.insert(
        "toolrag/v1".to_string(),
        format!("{}:{}:{}", d.code, d.tool_id, d.pointer),
    );
    let builder = sarif::Result::builder()
        .rule_id(d.code.to_string())
        .level(match d.level {
            Level::Error => sarif::ResultLevel::Error,
            Level::Info => sarif::ResultLevel::Note,
            _ => sarif::ResultLevel::Warning,
        })
        .message(&format!("{} (tool `{}`)", d.message, d.tool_id))
        .locations(vec![location])
        .partial_fingerprints(fingerprints);
    match rule_index {
        Some(i) => builder.rule_index(i as i64).build(),
        None => builder.build(),
    }
}

/// The SARIF log for `diagnostics`, with every rule described in the driver
/// and file URIs relative to the working directory (the `SRCROOT` base).
pub fn to_sarif(diagnostics: &[Diagnostic]) -> sarif::Sarif {
    let root = std::env::current_dir().ok();
    to_sarif_relative_to(diagnostics, root.as_deref())
}

/// The SARIF log for `diagnostics`, with the URIs of files under `root`
/// relative to it (base id [`SRCROOT`]) and the others absolute. `root` is
/// absolute; `None` leaves relative paths as written.
pub fn to_sarif_relative_to(diagnostics: &[Diagnostic], root: Option<&Path>) -> sarif::Sarif {
    let root = root.filter(|r| r.is_absolute());
    let all: Vec<&crate::RuleInfo> = rules().collect();
    let results: Vec<sarif::Result> = diagnostics
        .iter()
        .map(|d| result(d, all.iter().position(|r| d.code == r.code), root))
        .collect();
    let driver = sarif::ToolComponent::builder()
        .name("toolrag")
        .full_name(concat!("toolrag ", env!("CARGO_PKG_VERSION")))
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .information_uri(REPOSITORY_URL)
        .rules(all.iter().map(|r| rule_descriptor(r)).collect::<Vec<_>>())
        .build();
    let mut bases = BTreeMap::new();
    if let Some(r) = root {
        bases.insert(
            SRCROOT.to_string(),
            sarif::ArtifactLocation::builder()
                .uri(directory_uri(r))
                .build(),
        );
    }
    let run = sarif::Run::builder()
        .tool(driver)
        .results(results)
        .invocations(vec![sarif::Invocation::builder()
            .execution_successful(true)
            .build()])
        .column_kind(serde_json::Value::from("unicodeCodePoints"))
        .build();
    let run = if bases.is_empty() {
        run
    } else {
        sarif::Run {
            original_uri_base_ids: Some(bases),
            ..run
        }
    };
    sarif::Sarif::builder()
        .schema(SCHEMA)
        .version(serde_json::Value::from("2.1.0"))
        .runs(vec![run])
        .build()
}

pub(super) fn render(diagnostics: &[Diagnostic], out: &mut dyn Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut *out, &to_sarif(diagnostics))?;
    writeln!(out)
}
