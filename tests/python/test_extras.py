"""The adapters' extras, as a new user meets them: an adapter imported
without its framework names the extra to install; installing an extra never
downgrades a framework the user has; a known-broken framework release is
named in the error."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from typing import Any

import pytest

from conftest import wheel

#: Each adapter, its extra, and the modules that make up its framework.
ADAPTERS = [
    ("anthropic", "anthropic", ["anthropic"]),
    ("openai", "openai", ["openai"]),
    ("pydantic_ai", "pydantic-ai", ["pydantic_ai"]),
    ("llama_index", "llama-index", ["llama_index", "llama_index.core"]),
    ("langgraph", "langgraph", ["langgraph_bigtool"]),
    ("langgraph", "langgraph", ["langgraph", "langgraph.prebuilt"]),
]


@pytest.mark.parametrize(("adapter", "extra", "hidden"), ADAPTERS)
def test_an_adapter_without_its_framework_names_the_extra(adapter: str, extra: str, hidden: list[str]) -> None:
    # A module set to None in sys.modules cannot be imported: the framework
    # is as good as not installed, in a child so this process keeps it.
    script = f"""
import json, sys
for m in {hidden!r}:
    sys.modules[m] = None
import toolrag
try:
    import toolrag.{adapter}
    print(json.dumps({{"raised": None}}))
except ImportError as e:
    print(json.dumps({{
        "raised": type(e).__name__,
        "toolrag_error": isinstance(e, toolrag.Error),
        "missing_extra": isinstance(e, toolrag.MissingExtra),
        "extra": getattr(e, "extra", None),
        "message": str(e),
    }}))
"""
    r = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["raised"] == "MissingExtra", out
    assert out["toolrag_error"] and out["missing_extra"] and out["extra"] == extra
    assert f"pip install 'toolrag[{extra}]'" in out["message"], out["message"]


def _extras_requirements() -> dict[str, list[str]]:
    names = zipfile.ZipFile(wheel()).namelist()
    meta = zipfile.ZipFile(wheel()).read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
    extras: dict[str, list[str]] = {}
    for line in meta.splitlines():
        m = re.match(r"Requires-Dist: (.+?) ; extra == ['\"]?([\w-]+)['\"]?", line)
        if m:
            extras.setdefault(m.group(2), []).append(m.group(1))
    return extras


def test_the_extras_never_downgrade_what_a_user_has() -> None:
    extras = _extras_requirements()
    assert set(extras) >= {"langgraph", "llama-index", "pydantic-ai", "anthropic", "openai"}, extras
    for extra, requirements in extras.items():
        for req in requirements:
            specifiers = re.findall(r"(<=|<|==|~=|!=|>=|>|===)", req)
            # A lower bound only: pip then keeps a newer release the user has.
            assert specifiers and set(specifiers) == {">="}, f"[{extra}] {req}"


def test_a_broken_framework_release_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from langgraph.prebuilt import ToolNode

    import toolrag.langgraph

    # langgraph-prebuilt 1.0.2 renamed ToolNode.inject_tool_args, which
    # langgraph-bigtool 0.0.3 calls: the adapter says so before the agent runs.
    monkeypatch.delattr(ToolNode, "inject_tool_args")
    registry: dict[str, Any] = {"weather": {"name": "get_weather", "description": "Current weather for a city."}}
    with pytest.raises(toolrag.IncompatibleFramework) as e:
        toolrag.langgraph.create_agent(None, registry)  # type: ignore[arg-type]
    assert isinstance(e.value, toolrag.Error)
    message = str(e.value)
    assert "langgraph-bigtool" in message and "langgraph-prebuilt" in message and "inject_tool_args" in message
    assert "pip install 'langgraph-prebuilt==1.0.1'" in message
