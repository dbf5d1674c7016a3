"""``Index.plan`` and ``Index.aplan`` against the scripted OpenAI-compatible
server (tests/planner_scripted.py): a repaired plan, a spent budget, a planner
that cannot be asked, an ABSTAIN plan, concurrent plans, and the key."""

from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

import toolrag

from conftest import REPO

REQUEST = "show me what I changed in my git working tree"
SCRIPTED = REPO / "tests" / "planner_scripted.py"


class Scripted:
    """The scripted plan model in a subprocess, on a free port."""

    def __init__(self, answers: list[dict[str, Any]], folder: Path) -> None:
        folder.mkdir(parents=True)
        script = folder / "script.json"
        script.write_text(json.dumps(answers))
        self.log = folder / "requests.jsonl"
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPTED), str(script), str(self.log)], stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        self.url = self.proc.stdout.readline().strip()
        assert self.url.startswith("http://"), self.url

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def close(self) -> None:
        self.proc.kill()
        self.proc.wait()


@pytest.fixture
def scripted(tmp_path: Path) -> Iterator[Callable[[list[dict[str, Any]]], Scripted]]:
    started: list[Scripted] = []

    def start(answers: list[dict[str, Any]]) -> Scripted:
        s = Scripted(answers, tmp_path / f"scripted-{len(started)}")
        started.append(s)
        return s

    yield start
    for s in started:
        s.close()


@pytest.fixture(scope="module")
def good(tools_index: toolrag.Index) -> str:
    """The first handle offered for :data:`REQUEST`."""
    handle: str = tools_index.khipu(REQUEST, k=5)["candidates"][0]["nodeId"]
    return handle


def navigate(handle: str, sleep: float = 0.0) -> dict[str, Any]:
    answer: dict[str, Any] = {
        "plan": {
            "decision": "NAVIGATE",
            "steps": [{"action": "CITE", "nodeId": handle, "rationale": "it answers the request"}],
            "citedNodeIds": [handle],
            "abstainReason": None,
        }
    }
    if sleep:
        answer["sleep"] = sleep
    return answer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def test_a_citation_not_offered_is_repaired(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted], good: str
) -> None:
    model = scripted([navigate("tool://nowhere/made_up"), navigate(good)])
    plan = tools_index.plan(REQUEST, planner=model.url)
    assert isinstance(plan, toolrag.Plan)
    assert (plan.attempts, plan.decision, plan.cited) == (2, "NAVIGATE", [good])
    assert plan.verdict["valid"] is True
    assert plan.plan["provenance"] == "MODEL_PROPOSED"
    assert [a["verdict"]["valid"] for a in plan.history] == [False, True]
    assert plan.history[0]["verdict"]["violations"][0]["code"] == "not-offered"
    assert len(model.requests()) == 2


def test_no_candidates_raises_before_the_model_is_asked(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted]
) -> None:
    model = scripted([{"content": "never read"}])
    with pytest.raises(toolrag.NoCandidates, match="nothing to plan over") as e:
        tools_index.plan(REQUEST, planner=model.url, namespace="no-such-namespace")
    assert isinstance(e.value, toolrag.Error) and isinstance(e.value, LookupError)
    assert model.requests() == [], "the plan model is not asked without candidates"


def test_a_bad_planner_url_raises_planner_unavailable_quickly(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted]
) -> None:
    url = f"http://127.0.0.1:{free_port()}/v1"
    started = time.monotonic()
    with pytest.raises(toolrag.PlannerUnavailable) as e:
        tools_index.plan(REQUEST, planner=url, max_retry=2)
    assert time.monotonic() - started < 10
    assert isinstance(e.value, toolrag.Error) and isinstance(e.value, ConnectionError)
    assert (e.value.reason, e.value.status) == ("unreachable", None)
    assert e.value.url == f"{url}/chat/completions"
    assert url in str(e.value)

    model = scripted([{"status": 503, "body": "loading model"}])
    with pytest.raises(toolrag.PlannerUnavailable, match="HTTP 503") as e:
        tools_index.plan(REQUEST, planner=model.url, max_retry=2)
    assert (e.value.reason, e.value.status) == ("http", 503)
    assert len(model.requests()) == 1, "no retry is spent on a broken planner"

    model = scripted([{"sleep": 5.0, "content": "late"}])
    started = time.monotonic()
    with pytest.raises(toolrag.PlannerUnavailable) as e:
        tools_index.plan(REQUEST, planner=model.url, timeout=1.0)
    assert e.value.reason == "timeout"
    assert time.monotonic() - started < 4


def test_a_spent_budget_raises_plan_aborted_with_every_verdict(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted]
) -> None:
    model = scripted([navigate("tool://nowhere/made_up")])
    with pytest.raises(toolrag.PlanAborted) as e:
        tools_index.plan(REQUEST, planner=model.url, max_retry=2)
    err = e.value
    assert isinstance(err, toolrag.Error)
    assert err.attempts == 3
    assert len(err.verdicts) == 3 and len(err.history) == 3
    for v in err.verdicts:
        assert v["valid"] is False
        assert v["violations"][0]["code"] == "not-offered"
    assert err.verdict == err.verdicts[-1]
    assert "3 attempt(s)" in str(err)
    assert len(model.requests()) == 3


def test_an_abstain_plan_is_a_plan(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted]
) -> None:
    reason = "no offered tool books flights"
    model = scripted([{"plan": {"decision": "ABSTAIN", "steps": [], "citedNodeIds": [], "abstainReason": reason}}])
    plan = tools_index.plan("book me a flight to Lima", planner=model.url, k=3)
    assert isinstance(plan, toolrag.Plan)
    assert (plan.decision, plan.cited, plan.attempts) == ("ABSTAIN", [], 1)
    assert plan.plan["abstainReason"] == reason
    assert len(plan.plan["candidates"]) == 3


def test_concurrent_plans_land_from_threads_and_asyncio(
    tools_index: toolrag.Index, scripted: Callable[[list[dict[str, Any]]], Scripted], good: str
) -> None:
    # Each answer takes 1 s: eight plans one after the other take 8.
    model = scripted([navigate(good, sleep=1.0)])

    def one(_: int) -> toolrag.Plan:
        return tools_index.plan(REQUEST, planner=model.url)

    started = time.monotonic()
    with ThreadPoolExecutor(8) as pool:
        plans = list(pool.map(one, range(8)))
    threads = time.monotonic() - started
    assert [(p.attempts, p.cited) for p in plans] == [(1, [good])] * 8
    assert threads < 6, f"the plans did not run at once: {threads:.1f} s"

    async def gather() -> list[toolrag.Plan]:
        return await asyncio.gather(*(tools_index.aplan(REQUEST, planner=model.url) for _ in range(8)))

    started = time.monotonic()
    plans = asyncio.run(gather())
    gathered = time.monotonic() - started
    assert [(p.attempts, p.cited) for p in plans] == [(1, [good])] * 8
    assert gathered < 6, f"the plans did not run at once: {gathered:.1f} s"
    assert len(model.requests()) == 16


def test_the_key_is_sent_and_never_shown(
    tools_index: toolrag.Index,
    scripted: Callable[[list[dict[str, Any]]], Scripted],
    good: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = "sk-test-0e5a7c3b-never-show-me"
    monkeypatch.setenv("TOOLRAG_PLANNER_API_KEY", key)
    model = scripted([navigate(good), {"status": 401, "body": "bad key"}, navigate(good)])
    tools_index.plan(REQUEST, planner=model.url)
    with pytest.raises(toolrag.PlannerUnavailable) as e:
        tools_index.plan(REQUEST, planner=model.url)
    assert key not in str(e.value) and key not in repr(e.value)
    tools_index.plan(REQUEST, planner=model.url, api_key="sk-given")  # the argument wins
    sent = [r["headers"]["authorization"] for r in model.requests()]
    assert sent == [f"Bearer {key}", f"Bearer {key}", "Bearer sk-given"]


def test_bad_options_are_refused_before_anything_is_sent(tools_index: toolrag.Index) -> None:
    cases: list[tuple[dict[str, Any], str]] = [
        ({"planner": "127.0.0.1:8080"}, "http:// or https://"),
        ({"planner": "http://127.0.0.1:9/v1", "max_retry": -1}, "max_retry"),
        ({"planner": "http://127.0.0.1:9/v1", "timeout": 0}, "timeout"),
        ({"planner": "http://127.0.0.1:9/v1", "k": 0}, "k must be at least 1"),
        ({"planner": "http://127.0.0.1:9/v1", "prompt": " "}, "prompt is empty"),
    ]
    for kwargs, says in cases:
        with pytest.raises(toolrag.InvalidInput, match=says):
            tools_index.plan(REQUEST, **kwargs)
