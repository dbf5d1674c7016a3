//! `json`: an array with one flat object per diagnostic.

use std::io::{self, Write};

use serde::Serialize;

use crate::{Diagnostic, Level};

/// The JSON shape of a diagnostic: flat, with the location spread out, in
/// camelCase like every JSON toolrag writes.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct JsonDiagnostic<'a> {
    code: &'a str,
    name: &'a str,
    level: Level,
    tool_id: &'a str,
    file: String,
    line: u32,
    column: u32,
    message: &'a str,
    pointer: &'a str,
}

pub(super) fn render(diagnostics: &[Diagnostic], out: &mut dyn Write) -> io::Result<()> {
    let rows: Vec<JsonDiagnostic<'_>> = diagnostics
        .iter()
        .map(|d| JsonDiagnostic {
            code: d.code.as_str(),
            name: &d.name,
            level: d.level,
            tool_id: &d.tool_id,
            file: d.location.file.to_string_lossy().into_owned(),
            line: d.location.line,
            column: d.location.column,
            message: &d.message,
            pointer: &d.pointer,
        })
        .collect();
    serde_json::to_writer_pretty(&mut *out, &rows)?;
    writeln!(out)
}
