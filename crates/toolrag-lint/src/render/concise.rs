//! `concise`: one line per diagnostic, then a summary.

use std::io::{self, Write};

use super::{summary, RenderOptions};
use crate::{Diagnostic, Level};

pub(super) fn render(
    diagnostics: &[Diagnostic],
    opts: &RenderOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    for d in diagnostics {
        let (level, on, off) = match (d.level, opts.color) {
            (Level::Error, true) => ("error", "\x1b[1;31m", "\x1b[0m"),
            (Level::Error, false) => ("error", "", ""),
            (Level::Info, true) => ("info", "\x1b[1;36m", "\x1b[0m"),
            (Level::Info, false) => ("info", "", ""),
            (_, true) => ("warning", "\x1b[1;33m", "\x1b[0m"),
            (_, false) => ("warning", "", ""),
        };
        writeln!(
            out,
            "{}: {on}{level}[{}]{off} {}: {} [{}]",
            d.location, d.code, d.tool_id, d.message, d.name
        )?;
    }
    writeln!(out, "{}", summary(diagnostics, opts.tools_checked))
}
