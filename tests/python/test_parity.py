"""The wheel against the Rust binary: the same rankings, the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import toolrag

from conftest import TOOLS, console_script, golden_queries, run, rust_binary, rust_env, wheel_env


@pytest.mark.parametrize("mode", ["lexical", "hybrid"])
def test_search_matches_the_cli(
    tools_index: toolrag.Index, cli_index: Path, mode: toolrag.Mode, tmp_path: Path
) -> None:
    """Every golden request: the same ids in the same order, scores within 1e-6."""
    queries = golden_queries()
    batch = tmp_path / "q.jsonl"
    batch.write_text("".join(json.dumps({"id": q["id"], "query": q["query"]}) + "\n" for q in queries))
    r = run(
        [str(rust_binary()), "query", "--batch", str(batch), "--index", str(cli_index), "-k", "10", "--mode", mode],
        rust_env(),
    )
    assert r.returncode == 0, r.stderr.decode()
    cli = {row["id"]: row for row in map(json.loads, r.stdout.decode().splitlines())}
    assert len(cli) == len(queries)
    for q in queries:
        hits = tools_index.search(q["query"], k=10, mode=mode)
        want = cli[q["id"]]
        assert [h.id for h in hits] == want["ranked"], q["query"]
        for h, s in zip(hits, want["scores"], strict=True):
            assert abs(h.score - s) <= 1e-6, (q["query"], h.id, h.score, s)


def test_khipu_output_is_byte_identical(cli_index: Path) -> None:
    args = ["query", "move the meeting with Ana to friday", "-k", "5", "--index", str(cli_index), "--format", "khipu"]
    rust = run([str(rust_binary()), *args], rust_env())
    wheel = run([console_script(), *args], wheel_env())
    assert rust.returncode == wheel.returncode == 0, (rust.stderr, wheel.stderr)
    assert wheel.stdout == rust.stdout
    # And the API gives the same set.
    index = toolrag.Index.open(cli_index)
    assert index.khipu("move the meeting with Ana to friday", k=5) == json.loads(rust.stdout)


def test_lint_sarif_is_byte_identical(tmp_path: Path) -> None:
    registry = Path(__file__).resolve().parents[1] / "fixtures" / "mcp-reference"
    target = registry if registry.is_dir() else TOOLS
    args = ["lint", str(target), "--format", "sarif"]
    rust = run([str(rust_binary()), *args], rust_env(), cwd=tmp_path)
    wheel = run([console_script(), *args], wheel_env(), cwd=tmp_path)
    assert rust.returncode == wheel.returncode, (rust.stderr, wheel.stderr)
    assert wheel.stdout == rust.stdout
    assert json.loads(wheel.stdout)["version"] == "2.1.0"


def test_help_exit_codes_and_errors_are_the_binary_s(tmp_path: Path) -> None:
    for args in (["--help"], ["query", "--help"], ["--version"], ["nope"], ["query", "x", "--index", str(tmp_path)]):
        rust = run([str(rust_binary()), *args], rust_env(), cwd=tmp_path)
        wheel = run([console_script(), *args], wheel_env(), cwd=tmp_path)
        assert (wheel.returncode, wheel.stdout, wheel.stderr) == (rust.returncode, rust.stdout, rust.stderr), args


def test_python_m_toolrag_is_the_cli(tmp_path: Path) -> None:
    import sys

    r = run([sys.executable, "-m", "toolrag", "--version"], wheel_env(), cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.decode().startswith("toolrag ")
