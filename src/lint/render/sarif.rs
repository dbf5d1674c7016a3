//! `sarif`: a SARIF 2.1.0 log built from the typed model of `serde-sarif`,
//! in the shape GitHub code scanning accepts (`github/codeql-action/upload-sarif`).

use std::collections::BTreeMap;
use std::io::{self, Write};

use serde_sarif::sarif;

use crate::lint::{rules, Diagnostic, Level};

/// The `$schema` GitHub's documentation uses for SARIF 2.1.0.
const SCHEMA: &str = "https://json.schemastore.org/sarif-2.1.0.json";

fn sarif_level(level: Level) -> &'static str {
    match level {
        Level::Error => "error",
        Level::Warn => "warning",
        Level::Ignore => "none",
    }
}

/// A file path as a SARIF URI: relative paths stay relative (to the
/// repository root, for code scanning); absolute ones become `file://` URIs.
fn uri(path: &std::path::Path) -> String {
    let s = path.to_string_lossy().replace('\\', "/");
    let s = s.strip_prefix("./").unwrap_or(&s).replace(' ', "%20");
    if s.starts_with('/') {
        format!("file://{s}")
    } else {
        s
    }
}

fn rule_descriptor(r: &crate::lint::RuleInfo) -> sarif::ReportingDescriptor {
    let doc = r.doc_text();
    sarif::ReportingDescriptor::builder()
        .id(r.code)
        .name(r.name)
        .short_description(&r.summary.to_string())
        .full_description(&r.summary.to_string())
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
        .build()
}

fn result(d: &Diagnostic, rule_index: Option<usize>) -> sarif::Result {
    let region = sarif::Region::builder()
        .start_line(i64::from(d.location.line))
        .start_column(i64::from(d.location.column))
        .build();
    let location = sarif::Location::builder()
        .physical_location(
            sarif::PhysicalLocation::builder()
                .artifact_location(
                    sarif::ArtifactLocation::builder()
                        .uri(uri(&d.location.file))
                        .build(),
                )
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

/// The SARIF log for `diagnostics`, with every rule described in the driver.
pub fn to_sarif(diagnostics: &[Diagnostic]) -> sarif::Sarif {
    let all: Vec<&crate::lint::RuleInfo> = rules().collect();
    let results: Vec<sarif::Result> = diagnostics
        .iter()
        .map(|d| result(d, all.iter().position(|r| d.code == r.code)))
        .collect();
    let driver = sarif::ToolComponent::builder()
        .name("toolrag")
        .version(env!("CARGO_PKG_VERSION"))
        .semantic_version(env!("CARGO_PKG_VERSION"))
        .rules(all.iter().map(|r| rule_descriptor(r)).collect::<Vec<_>>())
        .build();
    let run = sarif::Run::builder()
        .tool(driver)
        .results(results)
        .invocations(vec![sarif::Invocation::builder()
            .execution_successful(true)
            .build()])
        .build();
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
