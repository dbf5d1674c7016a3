//! Output formats, one file per renderer: `full` (source snippets, like rustc
//! and ruff), `concise` (one line each), `json`, `sarif` (SARIF 2.1.0 for
//! GitHub code scanning) and `github` (workflow annotation commands).

mod concise;
mod full;
mod github;
mod json;
mod sarif;

use std::io::{self, Write};

use serde::{Deserialize, Serialize};

use super::Diagnostic;

pub use sarif::to_sarif;

/// An output format for diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// Each diagnostic with its source line, file:line:col and rule; a summary.
    Full,
    /// One line per diagnostic: `file:line:col: level[code] message`; a summary.
    Concise,
    /// A JSON array, one object per diagnostic.
    Json,
    /// A SARIF 2.1.0 log, for GitHub code scanning and other SARIF viewers.
    Sarif,
    /// GitHub Actions workflow commands (`::error file=...::message`).
    Github,
}

/// How to render.
#[derive(Debug, Clone, Default)]
pub struct RenderOptions {
    /// Use ANSI colours (`full` and `concise` only).
    pub color: bool,
    /// How many tools were checked, for the summary line.
    pub tools_checked: usize,
}

/// Writes `diagnostics` to `out` in `format`.
pub fn render(
    format: OutputFormat,
    diagnostics: &[Diagnostic],
    opts: &RenderOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        OutputFormat::Full => full::render(diagnostics, opts, out),
        OutputFormat::Concise => concise::render(diagnostics, opts, out),
        OutputFormat::Json => json::render(diagnostics, out),
        OutputFormat::Sarif => sarif::render(diagnostics, out),
        OutputFormat::Github => github::render(diagnostics, out),
    }
}

/// The closing line of the human formats: counts, or that all checks passed.
fn summary(diagnostics: &[Diagnostic], tools_checked: usize) -> String {
    let (errors, warnings) = super::count_levels(diagnostics);
    let notes = diagnostics.len() - errors - warnings;
    let plural = |n: usize, w: &str| format!("{n} {w}{}", if n == 1 { "" } else { "s" });
    let tools = plural(tools_checked, "tool");
    if diagnostics.is_empty() {
        return format!("All checks passed ({tools} checked).");
    }
    let mut ids: Vec<&str> = diagnostics.iter().map(|d| d.tool_id.as_str()).collect();
    ids.sort_unstable();
    ids.dedup();
    let notes = if notes == 0 {
        String::new()
    } else {
        format!(" (and {})", plural(notes, "note"))
    };
    format!(
        "Found {} and {}{notes} in {} ({tools} checked).",
        plural(errors, "error"),
        plural(warnings, "warning"),
        plural(ids.len(), "tool"),
    )
}
