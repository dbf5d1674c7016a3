"""Threads share one index: the same answers as one thread, and the GIL is
released while embedding, building and searching (speed is measured in
scripts/bench-python, not here)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import toolrag

from conftest import TOOLS, golden_queries


def test_eight_threads_get_the_answers_of_one(tools_index: toolrag.Index) -> None:
    queries = [q["query"] for q in golden_queries(80)]
    want = {q: [(h.id, h.score) for h in tools_index.search(q, k=5)] for q in queries}

    def one(q: str) -> tuple[str, list[tuple[str, float]]]:
        return q, [(h.id, h.score) for h in tools_index.search(q, k=5)]

    with ThreadPoolExecutor(8) as pool:
        got = dict(pool.map(one, queries * 3))
    assert got == want


def test_update_while_threads_search(tmp_path: Any, weather_tools: list[dict[str, Any]]) -> None:
    index = toolrag.Index.build(weather_tools[:2], tmp_path / "ix")
    stop = threading.Event()
    errors: list[BaseException] = []

    def searcher() -> None:
        while not stop.is_set():
            try:
                hits = index.search("send an email", k=1)
                assert hits[0].id == "tools/send_email"
            except BaseException as e:  # noqa: BLE001 - reported below
                errors.append(e)
                return

    threads = [threading.Thread(target=searcher) for _ in range(4)]
    for t in threads:
        t.start()
    for n in range(3, 5):
        index.update(weather_tools[:n])
    stop.set()
    for t in threads:
        t.join()
    assert errors == []
    assert len(index) == 4


def test_the_gil_is_released_while_building() -> None:
    """Python code runs on the main thread while another thread builds."""
    done = threading.Event()

    def build() -> None:
        toolrag.Index.build(TOOLS)
        done.set()

    t = threading.Thread(target=build)
    t.start()
    spins = 0
    while not done.is_set():
        spins += 1
    t.join()
    # Holding the GIL for the whole build would leave the loop a handful of
    # switch intervals (5 ms each); released, it spins freely.
    assert spins > 100_000, spins
