//! # The text toolrag embeds for each tool, for training a model
//!
//! Prints one JSON line per tool of a registry: its id, the text the index
//! embeds as its main vector ([`toolrag::registry::document_text`]) and its
//! example requests. `research/training/train-model` reads this, so that a model is
//! tuned on exactly the text it will see at index time.
//!
//! ```text
//! cargo run --release --example tool_texts -- REGISTRY... > texts.jsonl
//! ```
//!
//! Each line: `{"id", "text", "examples": [request, ...]}`.

use std::io::Write;
use std::path::PathBuf;

use serde_json::json;
use toolrag::registry::{document_text, LoadOptions, Registry};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    if paths.is_empty() {
        return Err("usage: tool_texts REGISTRY...".into());
    }
    let registry = Registry::load(&paths, &LoadOptions::default())?;
    let out = std::io::stdout();
    let mut out = out.lock();
    for tool in registry.tools() {
        let examples: Vec<&str> = tool.examples.iter().map(|e| e.request.as_str()).collect();
        writeln!(
            out,
            "{}",
            json!({"id": tool.id, "text": document_text(tool), "examples": examples})
        )?;
    }
    Ok(())
}
