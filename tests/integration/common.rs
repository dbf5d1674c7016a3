//! Shared helpers: paths to fixtures, the shipped registry and the real model.

use std::path::PathBuf;
use std::sync::OnceLock;

use toolrag::embed::{EmbedOptions, FastEmbedder, ModelDir};

/// The repository, which the first call makes the tests' working directory.
///
/// These tests are crates/toolrag-cli's, and cargo runs them in that folder;
/// but fixtures are named relative to the repository (so that snapshots and
/// messages show stable paths), so a test that names one in-process calls
/// this first. Every test wants the same working directory, so moving there
/// once, whichever test comes first, is safe.
pub fn root() -> PathBuf {
    static ROOT: OnceLock<PathBuf> = OnceLock::new();
    ROOT.get_or_init(|| {
        let cli = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let root = cli.ancestors().nth(2).expect("crates/toolrag-cli");
        std::env::set_current_dir(root).expect("the repository is a folder");
        root.to_path_buf()
    })
    .clone()
}

/// A program the test setup (`make test`'s prerequisites) installed under the
/// repository; a missing one fails with the command that installs it, it
/// never skips.
pub fn installed(rel: &str, how: &str) -> PathBuf {
    let p = root().join(rel);
    assert!(p.exists(), "{} is missing: run `{how}`", p.display());
    p
}

pub fn fixture(rel: &str) -> PathBuf {
    root().join("tests/fixtures").join(rel)
}

pub fn shipped_tools() -> PathBuf {
    root().join("tools")
}

/// The `id` of every line of a JSON Lines registry, in file order.
pub fn jsonl_ids(path: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["id"]
                .as_str()
                .expect("every line has an id")
                .to_string()
        })
        .collect()
}

pub fn model_dir() -> ModelDir {
    // `make test` fetches the model first; a missing model fails, it never skips.
    // The default model, as the binary chooses it with no --model.
    ModelDir::select(Some(&root().join("models")), &Default::default())
        .expect("the model is in models/ (run scripts/fetch-model)")
}

/// The published model (`--model minilm`), for tests that copy its files.
pub fn published_model_dir() -> ModelDir {
    ModelDir::open(&root().join("models")).expect("the published model is in models/")
}

/// One real embedder shared by the tests of this binary (loading costs ~0.3 s).
pub fn embedder() -> &'static FastEmbedder {
    static E: OnceLock<FastEmbedder> = OnceLock::new();
    E.get_or_init(|| {
        FastEmbedder::load(&model_dir(), &EmbedOptions::default()).expect("model loads")
    })
}

/// Runs `cmd`, which must succeed (its stderr is the failure message), and
/// parses its standard output as JSON.
pub fn stdout_json<T: serde::de::DeserializeOwned>(cmd: &mut assert_cmd::Command) -> T {
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

pub fn toolrag() -> assert_cmd::Command {
    let mut c = assert_cmd::Command::cargo_bin("toolrag").unwrap();
    c.current_dir(root());
    c
}

/// The published model (`--model minilm`), loaded on its own.
pub fn published_embedder() -> FastEmbedder {
    FastEmbedder::load(&published_model_dir(), &EmbedOptions::default()).expect("model loads")
}

/// The search settings `research/eval/lodo --model minilm` chose for the
/// published model (calibrated fusion with dense weight 0.5, ABSTAIN below
/// 0.86: today's rule, on the larger share), for the tests that show
/// mechanisms on that model's cosines.
pub fn published_config() -> toolrag::search::SearchConfig {
    let mut c = toolrag::search::SearchConfig::default();
    c.fusion = toolrag::search::Fusion::Calibrated { dense_weight: 0.5 };
    c.abstain_below = 0.86;
    c
}

/// A new embedder of its own, for tests that hand one to a `Searcher`.
pub fn fresh_embedder() -> FastEmbedder {
    FastEmbedder::load(&model_dir(), &EmbedOptions::default()).expect("model loads")
}

/// Runs `python tests/SCRIPT SCENARIO --binary <this build's toolrag> --dir
/// <temp>` in the venv of `make mcp-client` and returns the one JSON line it
/// prints; on failure, panics with its output and every `*.log` it left.
pub fn python_scenario(script: &str, name: &str) -> serde_json::Value {
    let python = installed("target/mcp-venv/bin/python", "make mcp-client");
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(python)
        .current_dir(root())
        .arg(root().join("tests").join(script))
        .arg(name)
        .arg("--binary")
        .arg(env!("CARGO_BIN_EXE_toolrag"))
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("python runs");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let logs: String = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().extension().is_some_and(|x| x == "log"))
        .map(|e| {
            format!(
                "--- {}\n{}",
                e.path().display(),
                std::fs::read_to_string(e.path()).unwrap_or_default()
            )
        })
        .collect();
    assert!(
        out.status.success(),
        "scenario {name} of {script} failed:\n{stdout}\n{}\n{logs}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_str(stdout.trim()).expect("one JSON line")
}

/// One index of `tools/` built with the real model, shared by the tests of
/// this binary that only read it (`toolrag plan`'s, with and without a real
/// plan model).
pub fn tools_index() -> &'static std::path::Path {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let reg = toolrag::Registry::load(&[shipped_tools()], &Default::default()).unwrap();
        let e = fresh_embedder();
        let opts = toolrag::index::BuildOptions::new(dir.path());
        toolrag::index::build(
            reg,
            Some(toolrag::index::BuildModel::Loaded(&e)),
            &opts,
            &|_| {},
        )
        .unwrap();
        dir
    })
    .path()
}
