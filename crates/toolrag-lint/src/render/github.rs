//! `github`: GitHub Actions workflow commands, which show up as annotations on
//! the lines of a pull request.
//! <https://docs.github.com/actions/reference/workflow-commands-for-github-actions>

use std::io::{self, Write};

use crate::{Diagnostic, Level};

/// Escapes a command's message (`%`, CR and LF).
fn escape_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Escapes a command property, which also may not hold `:` or `,`.
fn escape_property(s: &str) -> String {
    escape_data(s).replace(':', "%3A").replace(',', "%2C")
}

pub(super) fn render(diagnostics: &[Diagnostic], out: &mut dyn Write) -> io::Result<()> {
    for d in diagnostics {
        let command = match d.level {
            Level::Error => "error",
            Level::Info => "notice",
            _ => "warning",
        };
        writeln!(
            out,
            "::{command} title={},file={},line={},col={}::{}",
            escape_property(&format!("{} {}", d.code, d.name)),
            escape_property(&d.location.file.to_string_lossy()),
            d.location.line,
            d.location.column,
            escape_data(&format!("{}: {}", d.tool_id, d.message)),
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_and_data_are_escaped() {
        assert_eq!(escape_property("a:b,c%"), "a%3Ab%2Cc%25");
        assert_eq!(escape_data("x\ny: z"), "x%0Ay: z");
    }
}
