//! `toolrag index --mcp-config`: tools imported from live MCP servers, real
//! reference servers (npm and PyPI, installed by `make mcp-client
//! mcp-servers`) and the fixture server of `tests/mcp_fixture_server.py`.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use toolrag::registry::{LoadOptions, ToolDef};
use toolrag::{Registry, SearchConfig, Searcher};

use crate::common::{installed, root, toolrag};

fn python() -> PathBuf {
    installed("target/mcp-venv/bin/python", "make mcp-client")
}

fn fixture_server() -> String {
    root()
        .join("tests/mcp_fixture_server.py")
        .display()
        .to_string()
}

/// `toolrag index --mcp-config CONFIG --out OUT` with `extra` flags.
fn index(config: &Path, out: &Path, extra: &[&str]) -> Output {
    toolrag()
        .arg("index")
        .arg("--mcp-config")
        .arg(config)
        .arg("--out")
        .arg(out)
        .arg("--json")
        .args(extra)
        .output()
        .unwrap()
}

fn report(o: &Output) -> serde_json::Value {
    serde_json::from_slice(&o.stdout).unwrap_or_else(|e| {
        panic!(
            "{e}: {}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    })
}

fn tools_of(out: &Path) -> Vec<ToolDef> {
    Searcher::open(out, None, SearchConfig::default())
        .unwrap()
        .tools()
        .to_vec()
}

/// A tool without where it was read from, to compare a live tool with a
/// saved one.
fn unlocated(mut t: ToolDef) -> ToolDef {
    t.source.location = toolrag::registry::Location::file_start("");
    t.source.spans.clear();
    t
}

fn write_config(dir: &Path, name: &str, config: serde_json::Value) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, serde_json::to_string_pretty(&config).unwrap()).unwrap();
    path
}

#[test]
fn real_servers_are_indexed_as_their_saved_tools_list_and_a_rerun_embeds_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let time = installed("target/mcp-venv/bin/mcp-server-time", "make mcp-client");
    let memory = installed(
        "target/mcp-npm/node_modules/.bin/mcp-server-memory",
        "make mcp-servers",
    );
    let config = write_config(
        dir.path(),
        "claude_desktop_config.json",
        serde_json::json!({"mcpServers": {
            "time": {"command": time, "args": ["--local-timezone", "UTC"]},
            "memory": {"command": memory,
                       "env": {"MEMORY_FILE_PATH": dir.path().join("memory.jsonl")}},
        }}),
    );
    let out = dir.path().join("index");
    let first = index(&config, &out, &[]);
    let stderr = String::from_utf8_lossy(&first.stderr);
    assert!(first.status.success(), "{stderr}");
    assert!(stderr.contains("server `time` (mcp-time "), "{stderr}");
    let r = report(&first);
    assert_eq!(r["tools"], 11, "{r}");
    assert_eq!(r["new"], 11, "{r}");
    assert_eq!(r["lexicalOnly"], false, "{r}");

    // Exactly the tools of their tools/list saved to files named after the
    // servers, by the official Python client (scripts/capture-mcp-tools).
    let saved_dir = dir.path().join("saved");
    let capture = Command::new(python())
        .arg(root().join("scripts/capture-mcp-tools"))
        .arg(&config)
        .arg("--out")
        .arg(&saved_dir)
        .output()
        .unwrap();
    assert!(
        capture.status.success(),
        "{}",
        String::from_utf8_lossy(&capture.stderr)
    );
    let live = tools_of(&out);
    let saved = Registry::load(
        &[saved_dir.join("memory.json"), saved_dir.join("time.json")],
        &LoadOptions::default(),
    )
    .unwrap();
    assert_eq!(live.len(), saved.len());
    for t in &live {
        let s = saved
            .get(&t.id)
            .unwrap_or_else(|| panic!("{} was not saved", t.id));
        assert_eq!(unlocated(t.clone()), unlocated(s.clone()), "{}", t.id);
        assert_eq!(t.source.location.file, config, "{}", t.id);
    }
    let now = live
        .iter()
        .find(|t| t.id == "time/get_current_time")
        .unwrap();
    assert!(now.annotations.is_read_only());
    assert_eq!(
        now.output_schema.as_ref().unwrap()["title"],
        "TimeResult",
        "{now:?}"
    );
    let delete = live
        .iter()
        .find(|t| t.id == "memory/delete_entities")
        .unwrap();
    assert_eq!(delete.annotations.destructive_hint, Some(true));

    // Nothing changed: nothing is embedded again.
    let second = index(&config, &out, &[]);
    assert!(
        second.status.success(),
        "{}",
        String::from_utf8_lossy(&second.stderr)
    );
    let r = report(&second);
    assert_eq!(
        (&r["reused"], &r["new"], &r["changed"], &r["embeddedTexts"]),
        (
            &serde_json::json!(11),
            &serde_json::json!(0),
            &serde_json::json!(0),
            &serde_json::json!(0)
        ),
        "{r}"
    );
}

/// The fixture server on streamable HTTP, killed when dropped.
pub(crate) struct HttpServer {
    child: Child,
    port: u16,
}

impl HttpServer {
    /// Starts it with these extra arguments (`--tools N`, `--header NAME=VALUE`).
    pub(crate) fn start(extra: &[&str]) -> HttpServer {
        let mut child = Command::new(python())
            .arg(fixture_server())
            .arg("http")
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .parse()
            .unwrap_or_else(|_| panic!("the fixture server printed {line:?}, not its port"));
        HttpServer { child, port }
    }

    /// Its MCP endpoint.
    pub(crate) fn url(&self) -> String {
        format!("http://127.0.0.1:{}/mcp", self.port)
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn vscode_stdio_and_http_servers_are_paged_through() {
    let server = HttpServer::start(&["--header", "X-Fixture-Token=sesame"]);
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "mcp.json",
        serde_json::json!({"inputs": [], "servers": {
            "paged": {"type": "stdio", "command": python(),
                      "args": [fixture_server(), "stdio", "--tools", "23", "--page-size", "5"]},
            "remote": {"type": "http", "url": server.url(),
                       "headers": {"X-Fixture-Token": "sesame"}},
        }}),
    );
    let out = dir.path().join("index");
    let o = index(&config, &out, &["--lexical-only"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "{stderr}");
    assert_eq!(report(&o)["tools"], 23 + 25, "{stderr}");
    let tools = tools_of(&out);
    for (server, count) in [("paged", 23), ("remote", 25)] {
        let mine: Vec<&ToolDef> = tools.iter().filter(|t| t.namespace == server).collect();
        assert_eq!(mine.len(), count, "{server}");
        for (i, t) in mine.iter().enumerate() {
            assert_eq!(t.id, format!("{server}/fixture_tool_{i:02}"));
            assert_eq!(t.title.as_deref(), Some(&*format!("Fixture tool {i}")));
            assert_eq!(t.output_schema.is_some(), i % 2 == 0, "{}", t.id);
            assert_eq!(t.annotations.destructive_hint, Some(i % 4 == 1), "{}", t.id);
            match &t.meta {
                Some(meta) => assert_eq!(meta["fixture/index"], i, "{}", t.id),
                None => assert_ne!(i % 3, 0, "{} lost its _meta", t.id),
            }
        }
    }

    // Without the header the server refuses: reported by name, exit 1.
    let config = write_config(
        dir.path(),
        "no-header.json",
        serde_json::json!({"servers": {"remote": {"type": "http", "url": server.url()}}}),
    );
    let o = index(&config, &dir.path().join("other"), &["--lexical-only"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("server `remote`") && stderr.contains("401 Unauthorized"),
        "{stderr}"
    );
    assert!(stderr.contains("every MCP server failed"), "{stderr}");
}

#[test]
fn failing_servers_are_reported_by_name_with_their_stderr_and_the_others_indexed() {
    let dir = tempfile::tempdir().unwrap();
    let config = write_config(
        dir.path(),
        "claude_desktop_config.json",
        serde_json::json!({"mcpServers": {
            "crashes": {"command": "sh",
                        "args": ["-c", "echo 'starting'; echo 'boom: cannot open the database' >&2; exit 3"]},
            "silent": {"command": "sh",
                       "args": ["-c", "echo 'waiting for nothing' >&2; exec sleep 60"]},
            "missing": {"command": "/nonexistent/mcp-server"},
            "good": {"command": python(), "args": [fixture_server(), "stdio", "--tools", "3"]},
        }}),
    );
    let out = dir.path().join("index");
    let started = std::time::Instant::now();
    // Long enough for the Python fixture server to start on a busy machine.
    let o = index(&config, &out, &["--lexical-only", "--mcp-timeout", "8"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        started.elapsed().as_secs() < 30,
        "the timeout held: {stderr}"
    );
    for expected in [
        "server `crashes` (",
        "boom: cannot open the database",
        "server `silent` (",
        "no answer within 8 s",
        "waiting for nothing",
        "server `missing` (",
        "cannot start `/nonexistent/mcp-server`",
        "some MCP servers failed",
    ] {
        assert!(stderr.contains(expected), "no {expected:?} in:\n{stderr}");
    }
    // The failure names where the server is configured.
    let config_name = config.display().to_string();
    assert!(
        stderr.contains(&format!("server `crashes` ({config_name}:3:")),
        "{stderr}"
    );
    assert_eq!(report(&o)["tools"], 3);
    let ids: Vec<String> = tools_of(&out).into_iter().map(|t| t.id).collect();
    assert_eq!(
        ids,
        [
            "good/fixture_tool_00",
            "good/fixture_tool_01",
            "good/fixture_tool_02"
        ]
    );
}

#[test]
fn mcp_config_errors_name_the_file_and_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("claude_desktop_config.json");
    std::fs::write(
        &bad,
        "{\n  \"mcpServers\": {\n    \"time\": {\"command\": \"x\",}\n  }\n}\n",
    )
    .unwrap();
    let o = index(&bad, &dir.path().join("index"), &["--lexical-only"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3:", bad.display())) && stderr.contains("invalid JSON"),
        "{stderr}"
    );

    std::fs::write(
        &bad,
        "{\n  \"servers\": {\n    \"remote\": {\"type\": \"http\"}\n  }\n}\n",
    )
    .unwrap();
    let o = index(&bad, &dir.path().join("index"), &["--lexical-only"]);
    let stderr = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("{}:3:5: server `remote`", bad.display()))
            && stderr.contains("needs a `url`"),
        "{stderr}"
    );
    assert!(!dir.path().join("index").exists());
}
