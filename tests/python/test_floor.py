"""The floors the wheel declares are the ones it works on: a fresh venv on
the oldest Python it allows, with exactly the oldest onnxruntime it allows,
answers a hybrid search. The native code asks ONNX Runtime for its C API
version 24 (ort 2.0.0-rc.15, api-24, through fastembed): an older
onnxruntime cannot serve it, so the floor must not be below 1.24."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from conftest import TWO_TOOLS, run, wheel


def metadata() -> str:
    z = zipfile.ZipFile(wheel())
    return z.read(next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))).decode()


def floors() -> tuple[str, str]:
    """(the oldest Python, the oldest onnxruntime) the wheel declares."""
    meta = metadata()
    python = re.search(r"^Requires-Python: >=(\d+\.\d+)$", meta, re.M)
    ort = re.search(r"^Requires-Dist: onnxruntime>=([\d.]+)$", meta, re.M)
    assert python and ort, meta
    return python.group(1), ort.group(1)


def test_the_floors_are_what_the_native_code_needs() -> None:
    python, ort = floors()
    # onnxruntime has no 1.24 wheel for CPython 3.10: the wheel starts at 3.11.
    assert tuple(int(x) for x in ort.split(".")[:2]) >= (1, 24)
    assert python == "3.11"
    assert "-cp311-abi3-" in wheel().name


def oldest_python(version: str) -> str:
    if f"{sys.version_info[0]}.{sys.version_info[1]}" == version:
        return sys.executable
    found = shutil.which(f"python{version}")
    if not found:
        pytest.fail(f"no python{version} to test the wheel's oldest Python on")
    return found


@pytest.mark.slow
def test_hybrid_search_on_the_oldest_python_and_onnxruntime(tmp_path: Path) -> None:
    python, ort = floors()
    venv = tmp_path / "venv"
    subprocess.run([oldest_python(python), "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TOOLRAG", "ORT_", "PYTHON", "VIRTUAL_ENV"))}
    pip = [str(venv / "bin" / "pip"), "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*pip, str(wheel()), f"onnxruntime=={ort}"], check=True, env=env, cwd=tmp_path)
    script = TWO_TOOLS + textwrap.dedent(
        """
        import json, sys
        from importlib.metadata import version
        import toolrag
        index = toolrag.Index.build(tools)
        print(json.dumps({
            "python": "%d.%d" % sys.version_info[:2],
            "onnxruntime": version("onnxruntime"),
            "lexical_only": index.lexical_only,
            "hybrid": index.search("will it rain in Lima tomorrow?", k=1, mode="hybrid")[0].id,
            "dense": index.search("is it going to be sunny", k=1, mode="dense")[0].id,
        }))
        """
    )
    r = run([str(venv / "bin" / "python"), "-c", script], env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr.decode()
    out = json.loads(r.stdout)
    assert out["python"] == python and out["onnxruntime"] == ort, out
    assert out["lexical_only"] is False
    assert out["hybrid"] == out["dense"] == "tools/get_weather"
