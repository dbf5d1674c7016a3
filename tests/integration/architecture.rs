//! The floors of ARCHITECTURE.md, checked: the crate graph, no circle between
//! the top-level modules of any crate, no source file over 600 lines, and no
//! path that only the team has.
//!
//! The module check reads the source as text: every `crate::name` (and, in a
//! file directly under `src/` or a `src/name/mod.rs`, every `super::name`)
//! outside the unit tests is an edge from the file's top-level module to
//! `name` when `name` is a top-level module of the same crate.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::common::root;

/// Every `src/` of the house: the root package's and each crate's.
fn source_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![root().join("src")];
    let mut crates: Vec<PathBuf> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path().join("src"))
        .filter(|p| p.is_dir())
        .collect();
    crates.sort();
    dirs.extend(crates);
    dirs
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| e.unwrap().into_path())
        .filter(|p| p.extension().is_some_and(|x| x == "rs"))
        .collect()
}

/// The top-level modules of the crate whose root is `src` (files and folders
/// beside lib.rs / main.rs).
fn top_modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|p| {
            let name = p.file_stem()?.to_str()?.to_string();
            let module = p.is_dir() || p.extension().is_some_and(|x| x == "rs");
            (module && name != "lib" && name != "main").then_some(name)
        })
        .collect()
}

/// The module graph of one crate: top-level module → the ones it imports.
fn module_graph(src: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let modules = top_modules(src);
    let path_re = regex::Regex::new(r"\b(crate|super)::").unwrap();
    let mut graph: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for file in rust_files(src) {
        let rel = file.strip_prefix(src).unwrap();
        let parts: Vec<&str> = rel.iter().map(|p| p.to_str().unwrap()).collect();
        let top = parts[0].trim_end_matches(".rs").to_string();
        // Unit tests (a `tests.rs` or `tests/` beside the code) may reach anywhere.
        let is_test = parts.iter().any(|p| *p == "tests" || *p == "tests.rs");
        if !modules.contains(&top) || is_test {
            continue;
        }
        // `super::` names a sibling only from a top-level file or a mod.rs.
        let super_is_root = parts.len() == 1 || (parts.len() == 2 && parts[1] == "mod.rs");
        let text = std::fs::read_to_string(&file).unwrap();
        let body = text
            .split("#[cfg(test)]\nmod tests")
            .next()
            .unwrap_or_default();
        let code: Vec<&str> = body
            .lines()
            .map(|line| line.split("//").next().unwrap_or_default())
            .collect();
        let code = code.join("\n");
        for m in path_re.find_iter(&code) {
            if m.as_str().starts_with("super") && !super_is_root {
                continue;
            }
            for name in heads(&code[m.end()..]) {
                if name != top && modules.contains(&name) {
                    graph.entry(top.clone()).or_default().insert(name);
                }
            }
        }
    }
    graph
}

/// The first segment of each path a `use` names after `crate::`: `a` for
/// `a::b`, and `a`, `c` for `{a::{b, x}, c}` (only the group's own items).
fn heads(rest: &str) -> Vec<String> {
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let Some(group) = rest.strip_prefix('{') else {
        return vec![ident(rest)];
    };
    let (mut depth, mut item, mut out) = (0usize, String::new(), Vec::new());
    for c in group.chars() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => break,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                out.push(ident(&item));
                item.clear();
                continue;
            }
            _ => {}
        }
        item.push(c);
    }
    out.push(ident(&item));
    out
}

/// A circle through `graph`, as the modules on it, if there is one.
fn find_circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
    ) -> Option<Vec<String>> {
        if let Some(i) = path.iter().position(|p| p == node) {
            let mut circle = path[i..].to_vec();
            circle.push(node.to_string());
            return Some(circle);
        }
        if done.contains(node) {
            return None;
        }
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, path, done) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(node.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|n| visit(n, graph, &mut Vec::new(), &mut done))
}

#[test]
fn no_crate_has_a_module_circle() {
    for src in source_dirs() {
        let graph = module_graph(&src);
        if let Some(circle) = find_circle(&graph) {
            panic!(
                "{}: the top-level modules import each other in a circle: {}",
                src.display(),
                circle.join(" → ")
            );
        }
    }
}

#[test]
fn the_circle_check_finds_a_circle() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.path().join("a.rs"), "use crate::b::X;\n").unwrap();
    std::fs::create_dir(dir.path().join("b")).unwrap();
    std::fs::write(dir.path().join("b/mod.rs"), "use super::{a::{Y, b}, c};\n").unwrap();
    let circle = find_circle(&module_graph(dir.path())).expect("a → b → a");
    assert_eq!(circle.len(), 3, "{circle:?}");
}

/// Files allowed over the limit until they are split, each a debt to pay:
/// none today. The test fails if a listed file is under the limit already.
const OVER_600_UNTIL_SPLIT: &[&str] = &[];

#[test]
fn no_source_file_is_over_600_lines() {
    let mut long = Vec::new();
    for known in OVER_600_UNTIL_SPLIT {
        let n = std::fs::read_to_string(root().join(known))
            .unwrap()
            .lines()
            .count();
        assert!(
            n > 600,
            "{known} has {n} lines: take it off OVER_600_UNTIL_SPLIT"
        );
    }
    for src in source_dirs() {
        for file in rust_files(&src) {
            let rel = file
                .strip_prefix(root())
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if OVER_600_UNTIL_SPLIT.contains(&rel.as_str()) {
                continue;
            }
            let n = std::fs::read_to_string(&file).unwrap().lines().count();
            if n > 600 {
                long.push(format!("{} ({n} lines)", file.display()));
            }
        }
    }
    assert!(long.is_empty(), "split these: {long:#?}");
}

/// The toolrag crates each crate may depend on: the floors of ARCHITECTURE.md.
const FLOORS: &[(&str, &[&str])] = &[
    ("toolrag-core", &[]),
    // Who a request comes from: below the HTTP front ends, above nothing.
    ("toolrag-auth", &[]),
    ("toolrag-embed", &["toolrag-core"]),
    ("toolrag-engine", &["toolrag-core", "toolrag-embed"]),
    ("toolrag-gate", &["toolrag-core"]),
    ("toolrag-lint", &["toolrag-core", "toolrag-embed"]),
    // The plan model's client: the gate's loop over an OpenAI-compatible
    // chat server (blocking HTTP, no async runtime).
    ("toolrag-planner", &["toolrag-core", "toolrag-gate"]),
    // The serving core of the two HTTP front ends (limits, checks, errors and
    // statuses, the OpenAPI document, the connection loop): above the
    // engine, whose live index it does not hold, and below both front ends.
    ("toolrag-serve", &["toolrag-core", "toolrag-engine"]),
    (
        "toolrag-http",
        &[
            "toolrag-core",
            "toolrag-engine",
            "toolrag-gate",
            "toolrag-planner",
            "toolrag-serve",
        ],
    ),
    // The MCP server over the index, its transports, the MCP client of
    // upstream servers: it knows nothing of the gateway.
    (
        "toolrag-mcp",
        &[
            "toolrag-auth",
            "toolrag-core",
            "toolrag-engine",
            "toolrag-serve",
        ],
    ),
    // The gateway: above the MCP server (its search tools, transports,
    // shared state and upstream client), with the lint's poisoning check and
    // the gate's approval rule.
    (
        "toolrag-gateway",
        &[
            "toolrag-auth",
            "toolrag-core",
            "toolrag-embed",
            "toolrag-engine",
            "toolrag-gate",
            "toolrag-lint",
            "toolrag-mcp",
        ],
    ),
    // The command line (the `toolrag` binary): the facade, and the front
    // ends it runs (the HTTP API, the MCP server and gateway, their auth).
    (
        "toolrag-cli",
        &[
            "toolrag",
            "toolrag-auth",
            "toolrag-http",
            "toolrag-mcp",
            "toolrag-gateway",
        ],
    ),
    // The Python extension is a front end over the facade (`toolrag`, the
    // root package) and its application layer; it runs the command line as
    // the console script and draws its progress bar.
    ("toolrag-py", &["toolrag", "toolrag-cli"]),
];

/// The crates the facade (the root package, `toolrag`) re-exports: the
/// library crates, none of the front ends.
const FACADE_FLOOR: &[&str] = &[
    "toolrag-core",
    "toolrag-embed",
    "toolrag-engine",
    "toolrag-gate",
    "toolrag-lint",
    "toolrag-planner",
];

/// What the front ends take and the facade does not, beyond [`FRONT_END_ONLY`]:
/// traces' export, a terminal's progress bar, an allocator.
const NOT_IN_THE_FACADE: &[&str] = &[
    "opentelemetry",
    "opentelemetry_sdk",
    "opentelemetry-otlp",
    "tracing-opentelemetry",
    "tracing-subscriber",
    "indicatif",
    "mimalloc",
    "libmimalloc-sys",
];

/// The crates below the front ends never take a server, an async runtime,
/// MCP or a command line; but for the two the HTTP front ends stand on, auth
/// and the serving core, which take a server and a runtime (the serving core
/// never MCP or a command line: see below).
const FRONT_END_ONLY: &[&str] = &[
    "axum",
    "tokio",
    "rmcp",
    "clap",
    "hyper",
    "tower-http",
    "anyhow",
];

fn dependencies(manifest: &Path) -> BTreeSet<String> {
    let text = std::fs::read_to_string(manifest).unwrap();
    let doc: toml::Table = toml::from_str(&text).unwrap();
    let mut names = BTreeSet::new();
    let mut add = |t: Option<&toml::Value>| {
        if let Some(t) = t.and_then(toml::Value::as_table) {
            names.extend(t.keys().cloned());
        }
    };
    add(doc.get("dependencies"));
    if let Some(targets) = doc.get("target").and_then(toml::Value::as_table) {
        for t in targets.values() {
            add(t.get("dependencies"));
        }
    }
    names
}

#[test]
fn the_crate_graph_is_the_architecture() {
    let mut seen = BTreeSet::new();
    for (name, allowed) in FLOORS {
        let deps = dependencies(&root().join("crates").join(name).join("Cargo.toml"));
        let ours: BTreeSet<&str> = deps
            .iter()
            .map(String::as_str)
            .filter(|d| d.starts_with("toolrag"))
            .collect();
        let extra: Vec<&&str> = ours.iter().filter(|d| !allowed.contains(*d)).collect();
        assert!(extra.is_empty(), "{name} may not depend on {extra:?}");
        if !matches!(
            *name,
            "toolrag-auth"
                | "toolrag-serve"
                | "toolrag-http"
                | "toolrag-mcp"
                | "toolrag-gateway"
                | "toolrag-cli"
                | "toolrag-py"
        ) {
            let heavy: Vec<&String> = deps
                .iter()
                .filter(|d| FRONT_END_ONLY.contains(&d.as_str()))
                .collect();
            assert!(heavy.is_empty(), "{name} depends on {heavy:?}");
        }
        seen.insert(name.to_string());
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(on_disk, seen, "every crate has its floor here");
}

/// The facade takes the library crates only: no command line, server,
/// async runtime, MCP, or anything else a front end brings.
#[test]
fn the_facade_takes_no_front_end() {
    let deps = dependencies(&root().join("Cargo.toml"));
    let ours: Vec<&String> = deps
        .iter()
        .filter(|d| d.starts_with("toolrag") && !FACADE_FLOOR.contains(&d.as_str()))
        .collect();
    assert!(ours.is_empty(), "the facade may not depend on {ours:?}");
    let heavy: Vec<&String> = deps
        .iter()
        .filter(|d| FRONT_END_ONLY.contains(&d.as_str()) || NOT_IN_THE_FACADE.contains(&d.as_str()))
        .collect();
    assert!(heavy.is_empty(), "the facade depends on {heavy:?}");
}

/// The two HTTP front ends stand on the serving core, and on nothing of each
/// other; the engine knows nothing of serving over HTTP.
#[test]
fn the_http_front_ends_share_the_serving_core_and_not_each_other() {
    let deps = |name: &str| dependencies(&root().join("crates").join(name).join("Cargo.toml"));
    for (front, other) in [
        ("toolrag-http", "toolrag-mcp"),
        ("toolrag-mcp", "toolrag-http"),
    ] {
        let ours = deps(front);
        assert!(
            ours.contains("toolrag-serve"),
            "{front} is not on toolrag-serve"
        );
        assert!(!ours.contains(other), "{front} depends on {other}");
    }
    let serve = deps("toolrag-serve");
    assert!(
        !serve
            .iter()
            .any(|d| d == "toolrag-http" || d == "toolrag-mcp"),
        "toolrag-serve is below the front ends: {serve:?}"
    );
    let heavy: Vec<&String> = serve
        .iter()
        .filter(|d| ["rmcp", "clap", "anyhow"].contains(&d.as_str()))
        .collect();
    assert!(heavy.is_empty(), "toolrag-serve depends on {heavy:?}");
    assert!(
        !deps("toolrag-engine").contains("toolrag-serve"),
        "the engine is below the serving core"
    );
}

#[test]
fn no_path_outside_the_repository_is_taught() {
    let mut files: Vec<PathBuf> = source_dirs().iter().flat_map(|d| rust_files(d)).collect();
    files.push(root().join("README.md"));
    if root().join("docs").is_dir() {
        files.extend(
            walkdir::WalkDir::new(root().join("docs"))
                .into_iter()
                .map(|e| e.unwrap().into_path())
                .filter(|p| p.extension().is_some_and(|x| x == "md")),
        );
    }
    let shared = ["..", "shared"].join("/");
    let found: Vec<String> = files
        .iter()
        .filter(|f| {
            std::fs::read_to_string(f)
                .unwrap_or_default()
                .contains(&shared)
        })
        .map(|f| f.display().to_string())
        .collect();
    assert!(found.is_empty(), "these name {shared}: {found:#?}");
}
