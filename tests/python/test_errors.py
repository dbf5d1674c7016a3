"""Bad input: a clear exception of toolrag's hierarchy, never a crash."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

import toolrag

from conftest import TOOLS


def test_the_hierarchy() -> None:
    for cls in (
        toolrag.InvalidRegistry,
        toolrag.InvalidInput,
        toolrag.IndexNotFound,
        toolrag.IndexCorrupted,
        toolrag.ModelMissing,
        toolrag.FileMissing,
        toolrag.MissingExtra,
        toolrag.IncompatibleFramework,
        toolrag.PlanAborted,
        toolrag.PlannerUnavailable,
        toolrag.NoCandidates,
    ):
        assert issubclass(cls, toolrag.Error)
        assert cls.__name__ in toolrag.__all__
    assert issubclass(toolrag.InvalidRegistry, ValueError)
    assert issubclass(toolrag.InvalidInput, ValueError)
    assert issubclass(toolrag.IndexNotFound, FileNotFoundError)
    assert issubclass(toolrag.FileMissing, FileNotFoundError)
    assert issubclass(toolrag.MissingExtra, ImportError)


def test_a_malformed_tool_names_its_position_and_field(weather_tools: list[dict[str, Any]]) -> None:
    bad = [
        weather_tools[0],
        {"name": 3, "description": "x"},
        {"description": "no name"},
        {"name": "s", "parameters": "not a schema"},
    ]
    with pytest.raises(toolrag.InvalidRegistry) as e:
        toolrag.Index.build(bad)
    errors = e.value.errors
    assert [x["file"] for x in errors] == ["tools[1]", "tools[2]", "tools[3]"]
    assert "`name`" in errors[0]["message"] and "expected a string" in errors[0]["message"]
    assert "missing field `name`" in errors[1]["message"]
    assert "tool `s`" in errors[2]["message"] and "JSON Schema object" in errors[2]["message"]
    assert all(x["line"] is None for x in errors)
    assert "tools[1]" in str(e.value)


def test_a_bad_registry_file_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "broken.jsonl"
    f.write_text('{"name": "ok", "description": "fine"}\n{"name": "x", "parameters": [1]}\n')
    with pytest.raises(toolrag.InvalidRegistry) as e:
        toolrag.Index.build(f)
    assert e.value.errors[0]["file"] == str(f)
    assert e.value.errors[0]["line"] == 2


def test_duplicate_ids_and_non_tools(weather_tools: list[dict[str, Any]]) -> None:
    with pytest.raises(toolrag.InvalidRegistry, match="duplicate tool id"):
        toolrag.Index.build([weather_tools[1], weather_tools[1]])
    with pytest.raises(toolrag.InvalidRegistry, match=r"tools\[1\]: a object is not a tool"):
        toolrag.Index.build([weather_tools[1], object()])
    with pytest.raises(toolrag.InvalidRegistry, match="not JSON"):
        toolrag.Index.build([{"name": "x", "description": "y", "tags": {1, 2}}])
    with pytest.raises(toolrag.InvalidRegistry, match="not int"):
        toolrag.Index.build(42)
    with pytest.raises(toolrag.InvalidRegistry, match=r"tools\[0\]: a list is not a tool"):
        toolrag.lint([[1, 2]])


def test_a_missing_index_folder(tmp_path: Path) -> None:
    with pytest.raises(toolrag.IndexNotFound) as e:
        toolrag.Index.open(tmp_path / "nowhere")
    # Python's own hint, not the command line's.
    assert "toolrag.Index.build(" in str(e.value) and "toolrag index" not in str(e.value)
    assert e.value.path == str(tmp_path / "nowhere")


def _copy_index(tmp_path: Path) -> tuple[Path, Path]:
    src = tmp_path / "ix"
    toolrag.Index.build(TOOLS / "git", src)
    gens = [p for p in src.iterdir() if p.is_dir()]
    assert len(gens) == 1
    files = sorted(
        (p for p in gens[0].rglob("*") if p.is_file() and p.stat().st_size > 64), key=lambda p: -p.stat().st_size
    )
    return src, files[0]


def test_a_truncated_index_file(tmp_path: Path) -> None:
    src, victim = _copy_index(tmp_path)
    data = victim.read_bytes()
    victim.write_bytes(data[: len(data) // 2])
    with pytest.raises(toolrag.IndexCorrupted) as e:
        toolrag.Index.open(src)
    assert victim.name in str(e.value)


def test_a_flipped_byte(tmp_path: Path) -> None:
    src, victim = _copy_index(tmp_path)
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    with pytest.raises(toolrag.IndexCorrupted) as e:
        toolrag.Index.open(src)
    assert victim.name in str(e.value)


def test_queries_empty_huge_and_wrong(tools_index: toolrag.Index) -> None:
    for empty in ("", "   \n\t"):
        with pytest.raises(toolrag.InvalidInput, match="empty"):
            tools_index.search(empty)
    huge = "read the file /etc/hosts " * 45_000  # about 1 MB
    assert len(huge) > 1_000_000
    hits = tools_index.search(huge, k=3)
    assert len(hits) == 3
    assert tools_index.khipu(huge, k=1)["candidates"]
    with pytest.raises(toolrag.InvalidInput, match="k must be at least 1"):
        tools_index.search("x", k=0)
    with pytest.raises(toolrag.InvalidInput, match="mode"):
        tools_index.search("x", mode="fuzzy")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        tools_index.search(None)
    # Every bad k is toolrag's InvalidInput (a ValueError), never OverflowError.
    for bad_k in (-1, -(2**70), "3", 2.5, True):
        with pytest.raises(toolrag.InvalidInput, match="k must be") as e:
            tools_index.search("x", k=bad_k)  # type: ignore[arg-type]
        assert isinstance(e.value, ValueError) and not isinstance(e.value, OverflowError)
        with pytest.raises(toolrag.InvalidInput, match="k must be"):
            tools_index.khipu("x", k=bad_k)  # type: ignore[arg-type]
    # A k over the number of tools is every tool, however large.
    assert len(tools_index.search("read a file", k=2**70)) == len(tools_index)


def test_a_bad_config_names_file_and_key(tmp_path: Path, weather_tools: list[dict[str, Any]]) -> None:
    cfg = tmp_path / "toolrag.toml"
    cfg.write_text("[search]\nabstain-belw = 0.3\n")
    with pytest.raises(toolrag.InvalidInput) as e:
        toolrag.Index.build(weather_tools, config=cfg)
    assert str(cfg) in str(e.value) and "abstain-belw" in str(e.value)


def test_a_missing_model_says_how_to_get_one(weather_tools: list[dict[str, Any]], tmp_path: Path) -> None:
    with pytest.raises(toolrag.ModelMissing, match="choose one of minilm, minilm-tools") as e:
        toolrag.Index.build(weather_tools, model="no-such-model")
    assert "reinstall" not in str(e.value)
    empty = tmp_path / "my-model"
    empty.mkdir()
    with pytest.raises(toolrag.ModelMissing) as e:
        toolrag.Index.build(weather_tools, model=empty)
    assert "model.onnx" in str(e.value) and "model=" in str(e.value)


def test_lexical_index_after_the_model_is_gone(tmp_path: Path) -> None:
    shutil.copytree(TOOLS / "git", tmp_path / "git")
    index = toolrag.Index.build(tmp_path / "git", tmp_path / "ix", lexical_only=True)
    assert toolrag.Index.open(tmp_path / "ix", model="no-such-model").lexical_only
    assert index.search("show the commit log", k=1)[0].namespace == "git"


def test_a_missing_config_file_is_a_file_not_found_error(tmp_path: Path, weather_tools: list[dict[str, Any]]) -> None:
    missing = tmp_path / "nope" / "toolrag.toml"
    for call in (
        lambda: toolrag.Index.build(weather_tools, config=missing, lexical_only=True),
        lambda: toolrag.lint(weather_tools, config=missing, lexical=True),
    ):
        with pytest.raises(toolrag.FileMissing) as e:
            call()
        assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, toolrag.Error)
        assert e.value.path == str(missing) and e.value.filename == str(missing)
        assert str(missing) in str(e.value) and "configuration" in str(e.value)


def test_a_file_as_the_index_path_says_so(tmp_path: Path, weather_tools: list[dict[str, Any]]) -> None:
    f = tmp_path / "index.json"
    f.write_text("{}")
    with pytest.raises(toolrag.InvalidInput) as e:
        toolrag.Index.build(weather_tools, f, lexical_only=True)
    assert f"{f} is a file: an index is a folder" in str(e.value)
    assert "live generation" not in str(e.value) and "toolrag index" not in str(e.value)
    with pytest.raises(toolrag.InvalidInput, match="is a file: an index is a folder"):
        toolrag.Index.open(f)
    assert f.read_text() == "{}"


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("", "is empty"),
        ("read file", 'contains " "'),
        ("../../etc/passwd", 'contains "/"'),
        ("x" * 65, "has 65 characters"),
        ("café", 'contains "é"'),
    ],
)
def test_the_build_refuses_tool_names_lint_calls_errors(name: str, why: str) -> None:
    tools = [
        {"name": "fine", "description": "A tool with a good name."},
        {"name": name, "description": "A tool with a bad name."},
    ]
    # lint reports the name as an error (TR013, invalid-tool-name)...
    findings = toolrag.lint(tools, lexical=True)
    assert [f.severity for f in findings if f.rule == "invalid-tool-name"] == ["error"]
    # ... and the build refuses it, by position, instead of an id like `tools/`.
    for call in (
        lambda: toolrag.Index.build(tools, lexical_only=True),
        lambda: toolrag.Index.build([tools[0]], lexical_only=True).update(tools),
    ):
        with pytest.raises(toolrag.InvalidRegistry) as e:
            call()
        assert [x["file"] for x in e.value.errors] == ["tools[1]"]
        assert why in e.value.errors[0]["message"], e.value.errors[0]["message"]
        assert "^[A-Za-z0-9_.-]{1,64}$" in e.value.errors[0]["message"]


def test_limits_are_set_as_the_cli_sets_them(tmp_path: Path) -> None:
    tools = [{"name": "huge", "description": "Reads a file. " + "x" * 70_000}]
    with pytest.raises(toolrag.InvalidRegistry) as e:
        toolrag.Index.build(tools, lexical_only=True)
    message = e.value.errors[0]["message"]
    assert "over the limit description-bytes of 65536" in message
    # Python's hint, not the CLI's flag.
    assert 'raise it with limits={"description-bytes": N}' in message and "--limit" not in str(e.value)
    assert e.value.errors[0]["limit"] == "description-bytes"

    index = toolrag.Index.build(tools, lexical_only=True, limits={"description-bytes": 100_000})
    assert len(index) == 1
    assert index.update(tools, limits={"description_bytes": 100_000})["tools"] == 1
    with pytest.raises(toolrag.InvalidRegistry, match="limits="):
        index.update(tools)
    findings = toolrag.lint(tools, lexical=True, limits={"description-bytes": 100_000})
    assert findings and all(f.tool == "tools/huge" for f in findings)
    with pytest.raises(toolrag.InvalidRegistry, match="limits="):
        toolrag.lint(tools, lexical=True)

    # A registry file, with every limit the CLI's --limit names.
    f = tmp_path / "many.jsonl"
    f.write_text("".join(f'{{"name": "t{i}", "description": "Tool {i}."}}\n' for i in range(5)))
    with pytest.raises(toolrag.InvalidRegistry, match="tools-per-file"):
        toolrag.Index.build(f, lexical_only=True, limits={"tools-per-file": 3})
    with pytest.raises(toolrag.InvalidRegistry, match="file-bytes"):
        toolrag.Index.build(f, lexical_only=True, limits={"file-bytes": 10})
    assert len(toolrag.Index.build(f, lexical_only=True, limits={"tools-per-file": 5, "schema-depth": 8})) == 5

    for bad, match in (
        ({"descripton-bytes": 1}, "unknown limit"),
        ({"description-bytes": -1}, "whole number"),
        ({"description-bytes": "lots"}, "whole number"),
        ([("description-bytes", 1)], "must be a dict"),
    ):
        with pytest.raises(toolrag.InvalidInput, match=match):
            toolrag.Index.build(tools, lexical_only=True, limits=bad)  # type: ignore[arg-type]
