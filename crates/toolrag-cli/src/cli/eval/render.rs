//! The text, Markdown and check renderings of an eval report.

use std::io::Write;

use crate::cli::table::Column;
use std::path::Path;

use toolrag::eval::{Check, EvalReport, Means, ModeReport};

fn fmt_opt(v: Option<f64>) -> String {
    v.filter(|x| x.is_finite())
        .map_or("-".into(), |x| format!("{x:.3}"))
}

const HEADER: [&str; 13] = [
    "mode", "R@1", "R@5", "R@10", "nDCG@10", "MRR@10", "C@10", "n", "abst-P", "abst-R", "AUROC",
    "p50 ms", "p95 ms",
];

/// The cells of one table row: a mode's means, abstain and latency.
fn cells(name: &str, means: &Means, mode: Option<&ModeReport>) -> Vec<String> {
    let m = &means.metrics;
    let mut row = vec![name.to_string()];
    row.extend(
        [
            m.recall_at_1,
            m.recall_at_5,
            m.recall_at_10,
            m.ndcg_at_10,
            m.mrr_at_10,
            m.complete_at_10,
        ]
        .map(|x| fmt_opt(Some(x))),
    );
    row.push(means.n.to_string());
    if let Some(r) = mode {
        row.push(fmt_opt(r.abstain.precision));
        row.push(fmt_opt(r.abstain.recall));
        row.push(fmt_opt(r.scores.abstain.as_ref().map(|a| a.auroc)));
        row.push(format!("{:.1}", r.latency.p50_ms));
        row.push(format!("{:.1}", r.latency.p95_ms));
    }
    row
}

/// Rows per kind and per subset, when the file has more than one of either.
fn slice_rows(report: &EvalReport) -> Vec<Vec<String>> {
    let mut rows = vec![];
    for r in &report.modes {
        for (label, slices) in [("kind", &r.scores.by_kind), ("subset", &r.scores.by_subset)] {
            if slices.len() > 1 {
                for (k, means) in slices {
                    rows.push(cells(&format!("{} {label}={k}", r.mode), means, None));
                }
            }
        }
    }
    rows
}

/// The metrics table: the first column (the mode) left-aligned, the numbers
/// right-aligned, through the one table writer.
fn write_table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) -> std::io::Result<()> {
    let columns: Vec<Column> = header
        .iter()
        .enumerate()
        .map(|(i, h)| {
            if i == 0 {
                Column::left(h)
            } else {
                Column::right(h)
            }
        })
        .collect();
    crate::cli::table::write_table(out, &columns, "  ", rows)
}

fn summary_line(report: &EvalReport) -> String {
    let answerable: usize = report.kinds.values().sum();
    let mut kinds: Vec<(&String, &usize)> = report.kinds.iter().collect();
    kinds.sort();
    let kinds: Vec<String> = kinds.iter().map(|(k, n)| format!("{n} {k}")).collect();
    format!(
        "{} queries ({answerable} answerable: {}; {} none) over {} tools, k = {}",
        report.queries,
        kinds.join(", "),
        report.none,
        report.tools,
        report.k
    )
}

pub(super) fn write_text(
    out: &mut dyn Write,
    report: &EvalReport,
    file: &Path,
) -> std::io::Result<()> {
    writeln!(out, "{}: {}\n", file.display(), summary_line(report))?;
    let rows: Vec<Vec<String>> = report
        .modes
        .iter()
        .map(|r| cells(&r.mode.to_string(), &r.scores.all, Some(r)))
        .collect();
    write_table(out, &HEADER, &rows)?;
    let slices = slice_rows(report);
    if !slices.is_empty() {
        writeln!(out)?;
        write_table(out, &HEADER[..8], &slices)?;
    }
    if !report.modes.is_empty() {
        writeln!(out)?;
        for r in &report.modes {
            let a = &r.abstain;
            write!(
                out,
                "{}: ABSTAIN on {} of {} none and {} of {} answerable",
                r.mode,
                a.abstained_none,
                a.n_none,
                a.abstained - a.abstained_none,
                r.queries.len() - a.n_none
            )?;
            if let Some(b) = r.scores.abstain.as_ref().and_then(|t| t.best_youden) {
                write!(
                    out,
                    "; best confidence threshold (Youden) {:.3} keeps {:.3} of answerable, abstains on {:.3} of none",
                    b.threshold, b.answerable_kept, b.none_abstained
                )?;
            }
            writeln!(out)?;
        }
    }
    Ok(())
}

pub(super) fn write_markdown(out: &mut dyn Write, report: &EvalReport) -> std::io::Result<()> {
    let row = |cells: &[String]| format!("| {} |", cells.join(" | "));
    let header: Vec<String> = HEADER.iter().map(|h| h.to_string()).collect();
    writeln!(out, "{}\n", summary_line(report))?;
    writeln!(out, "{}", row(&header))?;
    writeln!(out, "|{}", "---|".repeat(HEADER.len()))?;
    for r in &report.modes {
        writeln!(
            out,
            "{}",
            row(&cells(&r.mode.to_string(), &r.scores.all, Some(r)))
        )?;
    }
    let slices = slice_rows(report);
    if !slices.is_empty() {
        writeln!(out, "\n{}", row(&header[..8]))?;
        writeln!(out, "|{}", "---|".repeat(8))?;
        for s in &slices {
            writeln!(out, "{}", row(s))?;
        }
    }
    Ok(())
}

/// Each threshold's verdict, then the queries behind every missed one.
pub(super) fn write_check(out: &mut dyn Write, check: &Check) -> std::io::Result<()> {
    for p in &check.passed {
        writeln!(
            out,
            "check ({}): {} = {:.4} >= {}: ok",
            check.mode, p.threshold.metric, p.value, p.threshold.min
        )?;
    }
    for f in &check.failed {
        let t = &f.threshold;
        let value = fmt_opt(f.value);
        writeln!(
            out,
            "check ({}): {} = {value} < {}: FAILED; {} quer{} count against it:",
            check.mode,
            t.metric,
            t.min,
            f.failing.len(),
            if f.failing.len() == 1 { "y" } else { "ies" }
        )?;
        for q in &f.failing {
            let text: String = q.query.chars().take(100).collect();
            writeln!(out, "  {} (line {}): {text:?}", q.id, q.line)?;
            if q.expected.is_empty() {
                writeln!(
                    out,
                    "    expected: ABSTAIN (out of scope), got {:?}",
                    q.decision
                )?;
            } else {
                let expected: Vec<String> = q
                    .expected
                    .iter()
                    .zip(&q.found_at)
                    .map(|(g, at)| {
                        let rank = at.map_or("not retrieved".into(), |r| format!("rank {r}"));
                        format!("{} ({rank})", g.join(" | "))
                    })
                    .collect();
                writeln!(out, "    expected:  {}", expected.join(", "))?;
            }
            let top: Vec<&str> = q.ranked.iter().take(5).map(String::as_str).collect();
            writeln!(out, "    retrieved: {}", top.join(", "))?;
        }
    }
    Ok(())
}
