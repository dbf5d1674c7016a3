"""toolrag: the tools an agent needs for a request, out of hundreds.

Build an index of tools, search it, hand the top-k to the plan model as a
Khipu candidate set, and check the plan that comes back::

    import toolrag

    index = toolrag.Index.build("tools/")            # or a list of tool dicts
    hits = index.search("read the file /etc/hosts", k=5)
    offered = index.khipu("read the file /etc/hosts", k=5)
    verdict = toolrag.gate(plan_from_the_model, offered)

Or let toolrag ask the plan model (any OpenAI-compatible chat server), gate
its plan and repair it::

    plan = index.plan("read the file /etc/hosts", planner="http://127.0.0.1:8080/v1")
    print(plan.decision, plan.cited, plan.attempts)

Lint tool definitions the way a senior engineer reviews them::

    for finding in toolrag.lint("tools/"):
        print(finding)

The ``toolrag`` command that comes with the package is the same program as the
Rust binary. Adapters for agent frameworks live in ``toolrag.langgraph``,
``toolrag.llama_index``, ``toolrag.pydantic_ai``, ``toolrag.anthropic`` and
``toolrag.openai``.
"""

from __future__ import annotations

from ._checks import Finding, Location, Verdict, Violation, gate, lint
from ._errors import (
    Error,
    FileMissing,
    IncompatibleFramework,
    IndexCorrupted,
    IndexNotFound,
    InvalidInput,
    InvalidRegistry,
    MissingExtra,
    ModelMissing,
    NoCandidates,
    PlanAborted,
    PlannerUnavailable,
)
from ._index import Index, Mode
from ._native import Hit
from ._native import version as _version
from ._plan import Plan

__version__: str = _version()

__all__ = [
    "Error",
    "FileMissing",
    "Finding",
    "Hit",
    "IncompatibleFramework",
    "Index",
    "IndexCorrupted",
    "IndexNotFound",
    "InvalidInput",
    "InvalidRegistry",
    "Location",
    "MissingExtra",
    "Mode",
    "ModelMissing",
    "NoCandidates",
    "Plan",
    "PlanAborted",
    "PlannerUnavailable",
    "Verdict",
    "Violation",
    "gate",
    "lint",
]
