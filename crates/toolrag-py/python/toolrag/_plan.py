"""The plan model in the loop: the result of :meth:`toolrag.Index.plan`."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any

from ._errors import InvalidInput

#: The environment variable the plan model's API key is read from.
API_KEY_VAR = "TOOLRAG_PLANNER_API_KEY"


@dataclass(frozen=True)
class Plan:
    """A plan the gate passed: the same as ``toolrag plan --format json``
    prints, and each attempt.

    ``plan`` is the whole Khipu plan: the model's ``decision``, ``steps``,
    ``citedNodeIds`` and ``abstainReason``, and what toolrag filled in from
    what it offered (``provenance`` ``MODEL_PROPOSED``, the ``candidates``,
    the ``query``). An ABSTAIN plan with its reason is a plan. ``attempts``
    counts the proposals, the accepted one included; ``verdict`` is the gate's
    (``valid``, ``violations``, ``requiresApproval``: the cited tools that wait
    for a person's approval); ``history`` has each attempt's ``attempt``,
    ``answer`` (the model's text), ``verdict`` and ``seconds``, the accepted
    one last.
    """

    plan: dict[str, Any]
    attempts: int
    verdict: dict[str, Any]
    history: list[dict[str, Any]]

    @property
    def decision(self) -> str:
        """``"NAVIGATE"`` or ``"ABSTAIN"``."""
        return str(self.plan.get("decision"))

    @property
    def cited(self) -> list[str]:
        """The handles the plan cites (``tool://<id>``), in order."""
        return [str(h) for h in self.plan.get("citedNodeIds") or []]


def check(planner: str, max_retry: int, timeout: float) -> None:
    """Refuses what ``toolrag plan`` refuses, before anything is sent."""
    if not isinstance(planner, str) or not planner:
        raise InvalidInput("planner is required: the plan model's URL, such as http://127.0.0.1:8080/v1")
    if isinstance(max_retry, bool) or not isinstance(max_retry, int) or max_retry < 0:
        raise InvalidInput(f"max_retry must be a whole number of repairs, 0 or more, not {max_retry!r}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise InvalidInput(f"timeout must be a number of seconds, not {timeout!r}")


def api_key(given: str | None) -> str | None:
    """The key to send: ``given``, else ``TOOLRAG_PLANNER_API_KEY``, else none."""
    if given is not None:
        return given or None
    return os.environ.get(API_KEY_VAR) or None


def from_json(text: str) -> Plan:
    """The :class:`Plan` of the native answer."""
    v: dict[str, Any] = json.loads(text)
    return Plan(plan=v["plan"], attempts=int(v["attempts"]), verdict=v["verdict"], history=v["history"])
