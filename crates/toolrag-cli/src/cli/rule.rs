//! `toolrag rule`: explain one lint rule, or list them all.

use std::io::Write;
use std::process::ExitCode;

use clap::Args;
use toolrag::lint;

use super::ListFormat;

/// What `toolrag rule --help` adds after the options.
const RULE_HELP: &str = "\
Examples:
  toolrag rule
  toolrag rule TR005
  toolrag rule hidden-instructions
  toolrag rule --format json";

/// Explain a lint rule (by code or name), or list every rule.
#[derive(Debug, Args)]
#[command(after_long_help = RULE_HELP)]
pub struct RuleArgs {
    /// A rule code (TR005) or name (relative-path-parameter). Omit it to list
    /// every rule.
    rule: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = ListFormat::Text)]
    format: ListFormat,
}

pub fn run(args: RuleArgs) -> anyhow::Result<ExitCode> {
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let selected: Vec<&lint::RuleInfo> = match &args.rule {
        Some(key) => vec![lint::find_rule(key)
            .ok_or_else(|| anyhow::anyhow!("no lint rule `{key}`; `toolrag rule` lists them"))?],
        None => lint::rules().collect(),
    };
    match (args.format, &args.rule) {
        (ListFormat::Json, _) => {
            let rows: Vec<serde_json::Value> = selected
                .iter()
                .map(|r| {
                    serde_json::json!({
                        "code": r.code, "name": r.name, "level": r.default_level,
                        "summary": r.summary, "doc": r.doc_text(),
                    })
                })
                .collect();
            serde_json::to_writer_pretty(&mut out, &rows)?;
            writeln!(out)?;
        }
        (ListFormat::Text, Some(_)) => {
            let r = selected[0];
            writeln!(out, "# {} ({})\n", r.name, r.code)?;
            writeln!(out, "Default level: {}\n", r.default_level)?;
            writeln!(out, "{}", r.doc_text())?;
        }
        (ListFormat::Text, None) => {
            let w = selected.iter().map(|r| r.name.len()).max().unwrap_or(4);
            writeln!(out, "{:6} {:w$} {:6} SUMMARY", "CODE", "NAME", "LEVEL")?;
            for r in &selected {
                writeln!(
                    out,
                    "{:6} {:w$} {:6} {}",
                    r.code, r.name, r.default_level, r.summary
                )?;
            }
            writeln!(out, "\n`toolrag rule <CODE|NAME>` explains one rule.")?;
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
