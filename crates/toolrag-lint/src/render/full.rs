//! `full`: every diagnostic with its source line, in the style of rustc and
//! ruff (rendered by `annotate-snippets`), then a summary.

use std::collections::HashMap;
use std::io::{self, Write};
use std::ops::Range;
use std::path::{Path, PathBuf};

use annotate_snippets::{AnnotationKind, Level as SnippetLevel, Origin, Renderer, Snippet};

use super::{summary, RenderOptions};
use crate::{Diagnostic, Level};

/// Source files read once each; `None` when a file cannot be read.
#[derive(Default)]
struct Sources(HashMap<PathBuf, Option<String>>);

impl Sources {
    fn line(&mut self, file: &Path, line: u32) -> Option<&str> {
        let text = self
            .0
            .entry(file.to_path_buf())
            .or_insert_with(|| std::fs::read_to_string(file).ok())
            .as_deref()?;
        text.lines().nth(line.checked_sub(1)? as usize)
    }
}

/// The byte range of the token that starts at character `column` (1-based):
/// a quoted string, a word (a TOML key), or one character.
fn token_at(line: &str, column: u32) -> Range<usize> {
    let Some((start, first)) = line.char_indices().nth(column.saturating_sub(1) as usize) else {
        return line.len()..line.len();
    };
    let rest = &line[start..];
    let len = if first == '"' {
        rest[1..].find('"').map_or(rest.len(), |i| i + 2)
    } else if first.is_alphanumeric() || first == '_' {
        rest.find(|c: char| !(c.is_alphanumeric() || "_-.".contains(c)))
            .unwrap_or(rest.len())
    } else if first == '[' {
        let close = rest.find(']').unwrap_or(0);
        close + 1 + rest[close + 1..].chars().take_while(|&c| c == ']').count()
    } else {
        first.len_utf8()
    };
    start..start + len
}

pub(super) fn render(
    diagnostics: &[Diagnostic],
    opts: &RenderOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let renderer = if opts.color {
        Renderer::styled()
    } else {
        Renderer::plain()
    };
    let mut sources = Sources::default();
    for d in diagnostics {
        let level = match d.level {
            Level::Error => SnippetLevel::ERROR,
            Level::Info => SnippetLevel::INFO,
            _ => SnippetLevel::WARNING,
        };
        let path = d.location.file.to_string_lossy();
        let title = level.primary_title(d.message.as_str()).id(d.code.as_str());
        let group = match sources.line(&d.location.file, d.location.line) {
            Some(line) => title.element(
                Snippet::source(line)
                    .line_start(d.location.line as usize)
                    .path(path.as_ref())
                    .annotation(
                        AnnotationKind::Primary
                            .span(token_at(line, d.location.column))
                            .label(d.name.as_str()),
                    ),
            ),
            None => title.element(
                Origin::path(path.as_ref())
                    .line(d.location.line as usize)
                    .char_column(d.location.column as usize),
            ),
        };
        let group = group
            .element(SnippetLevel::NOTE.message(format!("tool `{}`", d.tool_id)))
            .element(
                SnippetLevel::HELP.message(format!("`toolrag rule {}` explains this rule", d.code)),
            );
        writeln!(out, "{}\n", renderer.render(&[group]))?;
    }
    writeln!(out, "{}", summary(diagnostics, opts.tools_checked))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_keys_strings_or_one_character() {
        let line = r#"name = "read_file""#;
        assert_eq!(&line[token_at(line, 1)], "name");
        assert_eq!(&line[token_at(line, 8)], "\"read_file\"");
        let table = "[[examples]]";
        assert_eq!(&table[token_at(table, 1)], "[[examples]]");
        assert_eq!(token_at("ab", 9), 2..2);
    }
}
