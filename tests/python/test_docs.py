"""Every ```python example of docs/python.md and README.md runs, so the docs
cannot go stale.

Each block runs with exec() in a fresh namespace, from the repository root (an
example may read tools/), against the installed wheel and the adapters'
frameworks. A block whose fence says ```python no-run is not run: only for
what cannot run here (it must still compile). The shell examples are run by
`cargo test --test integration docs_examples`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import REPO

DOCS = [REPO / "docs" / "python.md", REPO / "README.md"]

FENCE = re.compile(r"^(?P<indent>[ \t]*)```(?P<info>[^`\n]*)$")


@dataclass(frozen=True)
class Example:
    file: Path
    line: int  # of the opening fence, from 1
    run: bool
    code: str

    @property
    def where(self) -> str:
        return f"{self.file.relative_to(REPO)}:{self.line}"


def examples(path: Path, text: str | None = None) -> list[Example]:
    """The ```python blocks of a Markdown file (or of ``text``), in order."""
    found: list[Example] = []
    lines = (path.read_text() if text is None else text).splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        i += 1
        if m is None:
            continue
        words = m["info"].split()
        start, body = i, []
        while i < len(lines) and lines[i].strip() != "```":
            body.append(lines[i][len(m["indent"]) :])
            i += 1
        assert i < len(lines), f"{path}:{start}: a fence that is never closed"
        i += 1
        if words and words[0] == "python":
            flags = words[1:]
            assert set(flags) <= {"no-run"}, f"{path}:{start}: unknown flags {flags} (only no-run)"
            found.append(Example(path, start, "no-run" not in flags, "\n".join(body) + "\n"))
    return found


ALL = [example for path in DOCS for example in examples(path)]


def test_the_guide_has_examples() -> None:
    guide = [e for e in ALL if e.file.name == "python.md"]
    assert len(guide) >= 6, "docs/python.md: the quick start and one example per adapter"
    assert all(e.run for e in guide), "every example of docs/python.md runs"


def test_fences_are_parsed() -> None:
    text = "a\n```python\nx = 1\n```\n- item\n  ```python no-run\n  y = 2\n  ```\n```sh\nls\n```\n"
    found = examples(REPO / "x.md", text)
    assert [(e.line, e.run, e.code) for e in found] == [(2, True, "x = 1\n"), (6, False, "y = 2\n")]


@pytest.mark.parametrize("example", ALL, ids=[e.where for e in ALL])
def test_example_runs(example: Example, monkeypatch: pytest.MonkeyPatch) -> None:
    # Padded so that a traceback gives the line in the Markdown file.
    code = compile("\n" * example.line + example.code, str(example.file), "exec")
    if not example.run:
        return
    monkeypatch.chdir(REPO)
    namespace: dict[str, object] = {"__name__": f"docs_example_{example.line}"}
    exec(code, namespace)
