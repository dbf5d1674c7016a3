"""Fixtures of the Python tests: the installed wheel (``import toolrag``), the
repository's registry and golden queries, and the Rust binary to compare with.

``make python-test`` runs them in target/py-test-venv, where the wheel from
target/wheels is installed; they never import the package from the source tree.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOLS = REPO / "tools"
GOLDEN = REPO / "tests" / "golden" / "tools-queries.jsonl"
SCHEMA = REPO / "spec" / "khipu-plan.schema.json"
# Two tools, as a line of Python that starts the scripts run in a fresh venv (no conftest there).
TWO_TOOLS = (
    'tools = [{"name": "get_weather", "description": "Current weather for a city.", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}, '
    '{"name": "send_email", "description": "Send an email to one recipient.", '
    '"parameters": {"type": "object", "properties": {"to": {"type": "string"}}}}]\n'
)


def pytest_configure(config: pytest.Config) -> None:
    # `make python-test` runs the slow tests too; `-m "not slow"` leaves them out.
    config.addinivalue_line("markers", "slow: a test of many seconds (a fresh venv, a large build)")


def rust_binary() -> Path:
    """The Rust binary to compare with: TOOLRAG_BIN, else target/release or target/debug."""
    env = os.environ.get("TOOLRAG_BIN")
    if env:
        return Path(env)
    for profile in ("release", "debug"):
        p = REPO / "target" / profile / "toolrag"
        if p.is_file():
            return p
    raise RuntimeError("no Rust binary: run `cargo build --bin toolrag` (make python-test does)")


def rust_env() -> dict[str, str]:
    """The Rust binary's environment: the repository's models/ (scripts/fetch-model)."""
    env = dict(os.environ)
    env["TOOLRAG_MODEL_DIR"] = str(REPO / "models")
    env.pop("ORT_DYLIB_PATH", None)
    return env


def wheel() -> Path:
    """The wheel in target/wheels (``make wheel``)."""
    wheels = sorted((REPO / "target" / "wheels").glob("toolrag-*.whl"))
    assert wheels, "no wheel: run `make wheel`"
    return wheels[-1]


def console_script() -> str:
    """The wheel's ``toolrag`` console script, next to this interpreter."""
    import sys

    script = Path(sys.executable).parent / "toolrag"
    assert script.is_file(), f"the wheel's console script is not installed: {script}"
    return str(script)


def wheel_env() -> dict[str, str]:
    """An environment where nothing points at the repository's models."""
    env = dict(os.environ)
    for var in ("TOOLRAG_MODEL_DIR", "ORT_DYLIB_PATH"):
        env.pop(var, None)
    return env


def run(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, timeout=600)


def golden_queries(n: int | None = None) -> list[dict[str, Any]]:
    lines = [json.loads(x) for x in GOLDEN.read_text().splitlines() if x.strip()]
    return lines if n is None else lines[:n]


@pytest.fixture(scope="session")
def cli_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tools/ indexed by the Rust binary."""
    out = tmp_path_factory.mktemp("cli-index")
    r = run([str(rust_binary()), "index", str(TOOLS), "--out", str(out)], rust_env())
    assert r.returncode == 0, r.stderr.decode()
    return out


@pytest.fixture(scope="session")
def tools_index(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """tools/ indexed by the Python API."""
    import toolrag

    out = tmp_path_factory.mktemp("py-index")
    yield toolrag.Index.build(TOOLS, out)


@pytest.fixture
def weather_tools() -> list[dict[str, Any]]:
    """A few tools in the three dict shapes users hold: OpenAI, MCP, Anthropic."""
    return [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Current weather for a city: temperature, rain and wind.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name, e.g. Lima"}},
                    "required": ["city"],
                },
            },
        },
        {
            "name": "send_email",
            "description": "Send an email to one recipient with a subject and a body.",
            "inputSchema": {
                "type": "object",
                "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}},
                "required": ["to", "body"],
            },
        },
        {
            "name": "create_calendar_event",
            "description": "Create an event in the user's calendar at a date and time.",
            "input_schema": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "start": {"type": "string", "format": "date-time"}},
                "required": ["title", "start"],
            },
        },
        {
            "name": "convert_currency",
            "description": "Convert an amount of money from one currency to another at today's rate.",
            "parameters": {
                "type": "object",
                "properties": {"amount": {"type": "number"}, "from": {"type": "string"}, "to": {"type": "string"}},
            },
        },
    ]


@pytest.fixture(scope="session")
def have_wheel_models() -> bool:
    import toolrag

    return (Path(toolrag.__file__).parent / "models" / "minilm-tools" / "model.onnx").is_file()


def which(name: str) -> str | None:
    return shutil.which(name)
