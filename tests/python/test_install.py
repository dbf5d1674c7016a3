"""The wheel in a fresh venv outside the checkout, with no models/ folder and
no toolrag environment variables: what a user gets from `pip install`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, TOOLS, TWO_TOOLS, run, rust_binary, rust_env, wheel


@pytest.fixture(scope="module")
def fresh_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("fresh")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLRAG", "ORT_", "PYTHON", "VIRTUAL_ENV"))}
    # onnxruntime comes from the package registry, as for any user.
    subprocess.run(
        [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check", str(wheel())],
        check=True,
        env=env,
        cwd=root,
    )
    return venv


def clean_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(("TOOLRAG", "ORT_", "PYTHON", "VIRTUAL_ENV"))}


def test_the_wheel_carries_what_it_needs() -> None:
    import zipfile

    names = zipfile.ZipFile(wheel()).namelist()
    for f in ("model.onnx", "tokenizer.json", "config.json", "special_tokens_map.json", "tokenizer_config.json"):
        assert f"toolrag/models/minilm-tools/{f}" in names
    assert "toolrag/py.typed" in names and "toolrag/_native.pyi" in names
    assert not [n for n in names if "libonnxruntime" in n], "ONNX Runtime comes from its own wheel"
    meta = next(n for n in names if n.endswith("METADATA"))
    text = zipfile.ZipFile(wheel()).read(meta).decode()
    assert "Requires-Dist: onnxruntime" in text


def test_a_fresh_venv_builds_searches_and_matches_the_binary(fresh_venv: Path, tmp_path: Path) -> None:
    work = tmp_path / "elsewhere"
    work.mkdir()
    assert not (work / "models").exists()
    script = TWO_TOOLS + textwrap.dedent(
        """
        import json, sys, toolrag
        index = toolrag.Index.build(tools)
        assert not index.lexical_only
        found = index.search("will it rain in Lima tomorrow?", k=1)[0].id
        try:
            toolrag.Index.build([{"name": 7}])
            bad = "no error"
        except toolrag.InvalidRegistry as e:
            bad = e.errors[0]["file"]
        print(json.dumps({"found": found, "bad": bad, "file": toolrag.__file__}))
        """
    )
    r = run([str(fresh_venv / "bin" / "python"), "-c", script], clean_env(), cwd=work)
    assert r.returncode == 0, r.stderr.decode()
    out = json.loads(r.stdout)
    assert out["found"] == "tools/get_weather"
    assert out["bad"] == "tools[0]"
    assert str(REPO) not in out["file"]

    # The console script gives the binary's bytes for the same index.
    ix = tmp_path / "ix"
    r = run([str(fresh_venv / "bin" / "toolrag"), "index", str(TOOLS), "--out", str(ix)], clean_env(), cwd=work)
    assert r.returncode == 0, r.stderr.decode()
    args = ["query", "what is on my calendar tomorrow", "-k", "4", "--index", str(ix), "--format", "khipu"]
    wheel_out = run([str(fresh_venv / "bin" / "toolrag"), *args], clean_env(), cwd=work)
    rust_out = run([str(rust_binary()), *args], rust_env(), cwd=work)
    assert wheel_out.returncode == rust_out.returncode == 0, (wheel_out.stderr, rust_out.stderr)
    assert wheel_out.stdout == rust_out.stdout
