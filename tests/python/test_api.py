"""The Python API's shape: the build report in snake_case, one name
(``request``) for the request across search, khipu and plan, and the old
``query=`` still working with a DeprecationWarning."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from typing import Any

import pytest

import toolrag

REPORT_KEYS = {
    "tools",
    "new",
    "changed",
    "removed",
    "reused",
    "embedded_texts",
    "reused_texts",
    "lexical_only",
    "seconds",
    "embed_seconds",
    "graph",
    "generation",
}


def test_the_build_report_is_snake_case(tmp_path: Path, weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools[:3], tmp_path / "ix")
    assert set(index.report) == REPORT_KEYS
    assert index.report["tools"] == 3 and index.report["lexical_only"] is False
    assert index.report["embedded_texts"] > 0 and index.report["reused_texts"] == 0
    assert isinstance(index.report["seconds"], float) and isinstance(index.report["generation"], str)
    report = index.update(weather_tools)
    assert set(report) == REPORT_KEYS and report is index.report
    assert report["new"] == 1 and report["reused_texts"] > 0


def test_one_name_for_the_request(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools)
    text = "will it rain in Lima?"
    by_position = [h.id for h in index.search(text, 2)]
    assert [h.id for h in index.search(request=text, k=2)] == by_position
    assert index.khipu(request=text, k=2)["candidates"][0]["nodeId"].endswith(by_position[0])
    assert [h.id for h in asyncio.run(index.asearch(request=text, k=2))] == by_position

    # The old name still works, and says it is old.
    with pytest.warns(DeprecationWarning, match="request"):
        assert [h.id for h in index.search(query=text, k=2)] == by_position
    with pytest.warns(DeprecationWarning, match="request"):
        assert [h.id for h in asyncio.run(index.asearch(query=text, k=2))] == by_position
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        index.search(text, 2)
    with pytest.raises(TypeError, match="both"):
        index.search(text, query=text)
    with pytest.raises(TypeError, match="request"):
        index.search()


def test_tools_cross_as_python_objects_as_json_would_carry_them() -> None:
    import json
    import math

    tool = {
        "name": "pick",
        "description": "Pick one of the given options.",
        "parameters": {
            "type": "object",
            "properties": {
                "option": {"type": "string", "enum": ("a", "b")},
                "n": {
                    "type": "integer",
                    "maximum": 2**70,
                    "x-labels": {3: "three", 2.5: "half", True: "yes", None: "no"},
                },
            },
        },
    }
    index = toolrag.Index.build([tool], lexical_only=True)
    got = index.get("tools/pick")
    assert got is not None
    # What the dict would have been through json.dumps and json.loads.
    expected = json.loads(json.dumps(tool))
    assert got["inputSchema"] == expected["parameters"]
    assert list(index) == [got] and "tools/pick" in index and "tools/nope" not in index
    assert isinstance(index.khipu("pick an option", k=1), dict)

    for bad, why in (({1, 2}, "Object of type set is not JSON serializable"), (math.nan, "not JSON compliant")):
        with pytest.raises(toolrag.InvalidRegistry) as e:
            toolrag.Index.build(
                [tool, {**tool, "name": "bad", "parameters": {"type": "object", "default": bad}}], lexical_only=True
            )
        assert e.value.errors[0]["file"] == "tools[1]"
        assert e.value.errors[0]["message"].startswith("tool `bad`: not JSON: ") and why in str(e.value)
