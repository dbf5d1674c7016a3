"""The index from Python: build from dicts and paths, search, khipu, update."""

from __future__ import annotations

import gc
import json
import os
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import toolrag

from conftest import SCHEMA, TOOLS


def test_build_from_dicts_finds_the_right_tool(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools)
    assert len(index) == 4
    assert not index.lexical_only, "the wheel's model should be used"
    assert index.model is not None and "tools" in index.model
    cases = {
        "is it going to rain in Lima tomorrow?": "tools/get_weather",
        "mail my landlord that the rent is paid": "tools/send_email",
        "put a dentist appointment on thursday at 3pm": "tools/create_calendar_event",
        "how many euros is 250 dollars": "tools/convert_currency",
    }
    for query, want in cases.items():
        hits = index.search(query, k=2)
        assert hits[0].id == want, (query, [h.id for h in hits])
        assert hits[0].score >= hits[1].score
        assert [h.rank for h in hits] == [1, 2]


def test_hit_carries_the_whole_tool(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools, namespace="weather-server")
    hit = index.search("weather in Paris", k=1)[0]
    assert hit.id == "weather-server/get_weather"
    assert hit.name == "get_weather"
    assert hit.server == hit.namespace == "weather-server"
    assert hit.handle == "tool://weather-server/get_weather"
    assert hit.source == "tools[0]"
    assert hit.tool["inputSchema"]["required"] == ["city"]
    assert hit.summary.startswith("Current weather for a city")
    assert "get_weather" in repr(hit)


def test_a_mapping_gives_ids(weather_tools: list[dict[str, Any]]) -> None:
    registry = {f"tool-{i}": t for i, t in enumerate(weather_tools)}
    index = toolrag.Index.build(registry)
    assert index.search("send an email", k=1)[0].id == "tool-1"
    assert "tool-3" in index and "nope" not in index
    assert [t["id"] for t in index] == ["tool-0", "tool-1", "tool-2", "tool-3"]


def test_mcp_tools_list_result_and_single_tool(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build({"tools": weather_tools[1:3]})
    assert len(index) == 2
    assert len(toolrag.Index.build(weather_tools[1])) == 1


def test_modes_and_namespaces(tools_index: toolrag.Index) -> None:
    modes: tuple[toolrag.Mode, ...] = ("lexical", "dense", "hybrid")
    for mode in modes:
        hits = tools_index.search("read the file /etc/hosts", k=3, mode=mode)
        assert hits[0].id == "filesystem/read_text_file", mode
    hits = tools_index.search("read the file /etc/hosts", k=5, namespace="git")
    assert hits and all(h.namespace == "git" for h in hits)
    hits = tools_index.search("read the file", k=5, namespace=["git", "shell"])
    assert {h.namespace for h in hits} <= {"git", "shell"}


def test_khipu_is_the_contract(tools_index: toolrag.Index) -> None:
    schema = json.loads(SCHEMA.read_text())
    offered = tools_index.khipu("read the file /etc/hosts", k=3)
    assert len(offered["candidates"]) == 3
    first = offered["candidates"][0]
    assert first["nodeId"] == "tool://filesystem/read_text_file"
    # A plan built on the offered set is valid against the schema and the gate.
    plan = {
        "planId": "plan-1",
        "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
        "provenance": "MODEL_PROPOSED",
        "query": "read the file /etc/hosts",
        "contentAccess": "HANDLES_ONLY",
        "candidates": offered["candidates"],
        "decision": "NAVIGATE",
        "steps": [{"action": "CITE", "nodeId": first["nodeId"], "rationale": "reads a file"}],
        "citedNodeIds": [first["nodeId"]],
        "groundedOnly": True,
        "brainBinding": {"protocol": "khipu-retrieval", "status": "NOT_RESOLVED", "note": "handles only"},
        "controllerBoundary": "the controller resolves handles",
        "abstainReason": None,
    }
    jsonschema.validate(plan, schema)
    verdict = toolrag.gate(plan, offered)
    assert verdict.valid and bool(verdict), verdict.violations
    # A plan that cites a tool that was not offered is caught.
    bad = dict(plan, citedNodeIds=["tool://shell/run_command"])
    bad["steps"] = [{"action": "CITE", "nodeId": "tool://shell/run_command", "rationale": "x"}]
    verdict = toolrag.gate(bad, offered)
    assert not verdict.valid
    assert "not-offered" in {v.code for v in verdict.violations}
    # Text that is not JSON is a violation, not an exception.
    assert toolrag.gate("```json\n{}", offered).violations[0].code == "invalid-json"


def test_gate_with_an_index_lists_approvals(tools_index: toolrag.Index) -> None:
    offered = tools_index.khipu("delete the file /tmp/x", k=3)
    node = offered["candidates"][0]["nodeId"]
    plan = {
        "planId": "p",
        "capabilityProfile": "SZL-Khipu-1.5B-BrainNavigator",
        "provenance": "MODEL_PROPOSED",
        "query": "delete the file /tmp/x",
        "contentAccess": "HANDLES_ONLY",
        "candidates": offered["candidates"],
        "decision": "NAVIGATE",
        "steps": [{"action": "CITE", "nodeId": node, "rationale": "deletes"}],
        "citedNodeIds": [node],
        "groundedOnly": True,
        "brainBinding": {"protocol": "khipu-retrieval", "status": "NOT_RESOLVED", "note": "handles only"},
        "controllerBoundary": "the controller resolves handles",
        "abstainReason": None,
    }
    verdict = toolrag.gate(plan, offered, index=tools_index)
    assert verdict.valid, verdict.violations
    assert verdict.requires_approval and verdict.requires_approval[0]["nodeId"] == node


def test_update_embeds_only_what_changed(tmp_path: Path, weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools[:3], tmp_path / "ix")
    assert index.report["new"] == 3
    more = [*weather_tools[:3], weather_tools[3]]
    report = index.update(more)
    assert report["new"] == 1 and report["changed"] == 0 and report["removed"] == 0
    assert report["reused_texts"] > 0
    assert len(index) == 4
    assert index.search("convert 10 dollars to yen", k=1)[0].id == "tools/convert_currency"
    # The index on disk is the updated one.
    again = toolrag.Index.open(tmp_path / "ix")
    assert len(again) == 4


def test_open_what_the_cli_built(cli_index: Path) -> None:
    index = toolrag.Index.open(cli_index)
    assert len(index) == len(list(index))
    assert index.search("list the files in /srv", k=1)[0].id == "filesystem/list_directory"
    assert index.get("tool://filesystem/read_text_file") is not None
    assert index.get("nope/nope") is None
    assert str(cli_index) in repr(index)


def test_a_temporary_index_is_removed_when_dropped(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools)
    folder = index.path
    assert os.path.isdir(folder)
    del index
    gc.collect()
    assert not os.path.exists(folder)


def test_lexical_only_needs_no_model(weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools, lexical_only=True)
    assert index.lexical_only and index.model is None
    assert index.search("email", k=1)[0].id == "tools/send_email"


def test_build_from_a_registry_path_reports_progress(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    index = toolrag.Index.build(TOOLS / "email", progress=True)
    assert {t["namespace"] for t in index} == {"email"}


def test_asearch_matches_search(tools_index: toolrag.Index) -> None:
    import asyncio

    queries = ["read the file /etc/hosts", "send a slack message", "git log of the last week"]

    async def main() -> list[list[str]]:
        results = await asyncio.gather(*(tools_index.asearch(q, k=3) for q in queries))
        return [[h.id for h in r] for r in results]

    got = asyncio.run(main())
    assert got == [[h.id for h in tools_index.search(q, k=3)] for q in queries]


def test_lint_finds_what_the_cli_finds() -> None:
    findings = toolrag.lint([{"name": "read", "description": "Reads."}])
    rules = {f.rule for f in findings}
    assert "missing-examples" in rules
    f = findings[0]
    assert f.tool == "tools/read" and f.location.file == "tools[0]" and f.location.line is None
    assert f.severity in ("error", "warn", "info")
    assert str(f).startswith("tools[0]: ")
    # The shipped registry passes its own lint.
    assert [f for f in toolrag.lint(TOOLS) if f.severity != "info"] == []
