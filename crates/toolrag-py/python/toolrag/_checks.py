"""The docstring lint and the plan gate."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from . import _native, _runtime
from ._tools import prepare

Severity = Literal["error", "warn", "info"]


@dataclass(frozen=True)
class Location:
    """Where a finding is: a registry file with line and column, or
    ``tools[i]`` (no line) for a tool handed over in memory."""

    file: str
    line: int | None = None
    column: int | None = None

    def __str__(self) -> str:
        return self.file if self.line is None else f"{self.file}:{self.line}:{self.column}"


@dataclass(frozen=True)
class Finding:
    """One problem the lint found in a tool's definition.

    ``rule`` is the rule's name (``missing-examples``), ``code`` its code
    (``TR001``); ``toolrag rule <code>`` explains it.
    """

    rule: str
    code: str
    severity: Severity
    message: str
    location: Location
    tool: str
    #: A JSON pointer into the normalised tool (``/description``).
    pointer: str = ""

    def __str__(self) -> str:
        return f"{self.location}: {self.severity}[{self.code}] {self.tool}: {self.message} ({self.rule})"


def lint(
    tools: Any,
    *,
    config: str | os.PathLike[str] | None = None,
    lexical: bool = False,
    namespace: str = "tools",
    limits: Mapping[str, int] | None = None,
) -> list[Finding]:
    """Reviews tool definitions the way ``toolrag lint`` does: examples, edge
    cases, input formats, look-alike tools, poka-yoke parameters, poisoning.

    ``tools`` is what :meth:`toolrag.Index.build` takes. ``config`` is a
    ``toolrag.toml`` (its ``[lint]`` table). With ``lexical=True`` the
    look-alike check compares words instead of embeddings. ``limits`` is
    that of :meth:`toolrag.Index.build` (``--limit`` in the CLI).

        >>> import toolrag
        >>> findings = toolrag.lint([{"name": "read", "description": "Reads."}])
        >>> sorted({f.rule for f in findings})
        ['missing-edge-cases', 'missing-examples', 'missing-side-effect-annotations', 'vague-description']
        >>> print(findings[0])
        tools[0]: warn[TR001] tools/read: the tool has no example requests (missing-examples)
    """
    from ._index import _limits

    _runtime.ensure()
    items, paths = prepare(tools)
    raw = _native.lint(items, paths, None if config is None else os.fspath(config), namespace, lexical, _limits(limits))
    return [
        Finding(
            rule=d["name"],
            code=d["code"],
            severity=d["level"],
            message=d["message"],
            location=Location(
                d["location"]["file"],
                d["location"]["line"] or None,
                d["location"]["column"] or None,
            ),
            tool=d["toolId"],
            pointer=d.get("pointer", ""),
        )
        for d in raw
    ]


@dataclass(frozen=True)
class Violation:
    """One thing wrong with a plan: a stable ``code`` (``not-offered``), a JSON
    pointer ``path`` into the plan, and a ``message`` fit for a repair prompt."""

    code: str
    path: str
    message: str


@dataclass(frozen=True)
class Verdict:
    """The gate's answer on a plan."""

    #: True exactly when there are no violations.
    valid: bool
    violations: list[Violation] = field(default_factory=list)
    #: Cited tools that need a person's approval before they run (with an
    #: index): ``{"nodeId": ..., "reasons": [...]}``.
    requires_approval: list[dict[str, Any]] = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.valid


def gate(
    plan: dict[str, Any] | str,
    candidates: dict[str, Any] | list[dict[str, Any]] | None = None,
    *,
    index: Any = None,
) -> Verdict:
    """Checks a Khipu plan from the plan model: the schema, that every step and
    citation is a handle that was offered (``candidates``: what
    :meth:`toolrag.Index.khipu` returned, or its list), and the decision logic.

    ``plan`` is a dict or the model's raw text (text that is not JSON is a
    violation, not an exception). With ``index``, cited tools that are
    destructive or reach the open world are listed in ``requires_approval``.
    """
    text = plan if isinstance(plan, str) else json.dumps(plan, ensure_ascii=False)
    offered = None if candidates is None else json.dumps(candidates, ensure_ascii=False)
    native_index = None if index is None else index._ix
    raw = json.loads(_native.gate(text, offered, native_index))
    return Verdict(
        valid=raw["valid"],
        violations=[Violation(v["code"], v["path"], v["message"]) for v in raw["violations"]],
        requires_approval=raw.get("requiresApproval", []),
    )
