"""The repository's .pre-commit-hooks.yaml, run by pre-commit itself on a
temporary git repository that uses this one by path."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, run


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    proj = tmp_path / "project"
    (proj / "tools" / "weather").mkdir(parents=True)
    git(proj, "init", "-q")
    git(proj, "config", "user.email", "t@example.com")
    git(proj, "config", "user.name", "t")
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, check=True)
    rev = head.stdout.strip()
    (proj / ".pre-commit-config.yaml").write_text(
        f"repos:\n  - repo: {REPO}\n    rev: {rev}\n    hooks:\n      - id: toolrag-lint\n"
    )
    return proj


def precommit(proj: Path, tmp_path: Path) -> subprocess.CompletedProcess[bytes]:
    env = dict(os.environ)
    env["PRE_COMMIT_HOME"] = str(tmp_path / "pre-commit-home")
    # The hook runs the `toolrag` of the environment pre-commit runs in: the wheel's.
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"
    pc = Path(sys.executable).parent / "pre-commit"
    return run([str(pc), "run", "--all-files"], env, cwd=proj)


def test_a_good_registry_passes_and_a_bad_one_fails(project: Path, tmp_path: Path) -> None:
    shutil.copytree(REPO / "tools", project / "tools", dirs_exist_ok=True)
    git(project, "add", "-A")
    r = precommit(project, tmp_path)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    assert "toolrag lint" in r.stdout.decode() and "Passed" in r.stdout.decode()

    (project / "tools" / "weather" / "now.toml").write_text('name = "now"\nsummary = "Weather."\n')
    git(project, "add", "-A")
    r = precommit(project, tmp_path)
    out = r.stdout.decode()
    assert r.returncode == 1, out
    assert "Failed" in out and "tools/weather/now.toml" in out and "weather/now" in out
