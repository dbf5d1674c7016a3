"""toolrag as the search behind PydanticAI's tool search.

A PydanticAI tool made with ``defer_loading=True`` stays hidden from the model
until a search finds it. The ``ToolSearch`` capability runs that search; its
``strategy`` may be a function ``(ctx, queries, tools) -> [tool name, ...]``.
:func:`search_fn` is one that asks toolrag, and :func:`tool_search` the
capability around it::

    import toolrag.pydantic_ai
    from pydantic_ai import Agent, Tool

    tools = [Tool(get_weather, defer_loading=True), Tool(send_email, defer_loading=True)]
    agent = Agent(
        "anthropic:claude-sonnet-4-6",
        tools=tools,
        capabilities=[toolrag.pydantic_ai.tool_search(k=3)],
    )

Without an index, the search indexes the deferred tools it is given on its
first call (and again when they change). With one, give an index built from
the same tools: ``toolrag.pydantic_ai.tool_search(toolrag.Index.build(tools))``
-- tools are matched by name, and tools of the index that are not deferred
tools of the run are never returned.

On Anthropic and OpenAI Responses models, PydanticAI runs this function through
the provider's client-executed tool search; on others the model calls a
``search_tools`` tool. Needs ``pip install "toolrag[pydantic-ai]"``.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ._extras import missing_extra

try:
    from pydantic_ai import RunContext
    from pydantic_ai.capabilities import ToolSearch
    from pydantic_ai.tools import ToolDefinition
except ImportError as e:
    raise missing_extra("pydantic_ai", "pydantic-ai", e) from e

from ._index import Index, Mode

__all__ = ["search_fn", "tool_search"]

Namespaces = str | list[str] | tuple[str, ...] | None
SearchFn = Callable[[RunContext[Any], Sequence[str], Sequence[ToolDefinition]], Coroutine[Any, Any, list[str]]]

#: Reciprocal rank fusion constant, to merge the results of several queries.
_RRF_K = 60


def _definition(tool: ToolDefinition) -> dict[str, Any]:
    return {
        "name": tool.name,
        "description": tool.description or "",
        "parameters": tool.parameters_json_schema,
    }


class _CorpusIndex:
    """An index of the deferred tools a search is handed, built on first use
    and updated when they change."""

    def __init__(self, build: dict[str, Any]) -> None:
        self._build = build
        self._lock = threading.Lock()
        self._index: Index | None = None
        self._key: tuple[tuple[str, str, str], ...] = ()

    def get(self, tools: Sequence[ToolDefinition]) -> Index:
        definitions = sorted((_definition(t) for t in tools), key=lambda d: d["name"])
        key = tuple((d["name"], d["description"], json.dumps(d["parameters"], sort_keys=True)) for d in definitions)
        with self._lock:
            if self._index is None:
                self._index = Index.build(definitions, **self._build)
            elif key != self._key:
                self._index.update(definitions, namespace=self._build.get("namespace", "tools"))
            self._key = key
            return self._index


def search_fn(
    index: Index | None = None,
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
    **build: Any,
) -> SearchFn:
    """A ``ToolSearch`` strategy: ``async (ctx, queries, tools) -> [name, ...]``,
    the names of the ``k`` deferred tools that toolrag ranks best for the
    queries (the results of several queries merged by reciprocal rank).

    ``index`` is a toolrag index of the deferred tools (tools are matched by
    name). Without one, the tools the search is handed are indexed on the first
    call, with ``build`` going to :meth:`toolrag.Index.build` (``model``,
    ``config``, ...), and updated when they change. ``mode`` and ``namespace``
    are those of :meth:`toolrag.Index.search`.

        >>> from pydantic_ai.capabilities import ToolSearch
        >>> capability = ToolSearch(strategy=toolrag.pydantic_ai.search_fn(k=3))  # doctest: +SKIP
    """
    corpus = _CorpusIndex(build)  # used without an index

    async def toolrag_search(
        ctx: RunContext[Any],
        queries: Sequence[str],
        tools: Sequence[ToolDefinition],
    ) -> list[str]:
        names = {tool.name for tool in tools}
        queries = [q for q in queries if q.strip()]
        if not names or not queries:
            return []
        if index is not None:
            searched = index
        else:
            searched = await asyncio.to_thread(corpus.get, tools)
        # Deep enough that k deferred tools remain once the others are dropped.
        depth = k + max(0, len(searched) - len(names))
        fused: dict[str, float] = {}
        for query in queries:
            hits = await searched.asearch(query, depth, mode=mode, namespace=namespace)
            rank = 0
            for hit in hits:
                if hit.name in names:
                    rank += 1
                    fused[hit.name] = fused.get(hit.name, 0.0) + 1.0 / (_RRF_K + rank)
        return sorted(fused, key=lambda name: -fused[name])[:k]

    return toolrag_search


def tool_search(
    index: Index | None = None,
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
    tool_description: str | None = None,
    parameter_description: str | None = None,
    **build: Any,
) -> ToolSearch[Any]:
    """The ``ToolSearch`` capability searching with toolrag (:func:`search_fn`),
    at most ``k`` tools a search. ``tool_description`` and
    ``parameter_description`` are what the model is told of the search tool and
    its ``queries``, as in ``ToolSearch``.

        >>> agent = Agent(model, tools=deferred_tools,                      # doctest: +SKIP
        ...               capabilities=[toolrag.pydantic_ai.tool_search(k=3)])
    """
    return ToolSearch(
        strategy=search_fn(index, k, mode=mode, namespace=namespace, **build),
        max_results=k,
        tool_description=tool_description,
        parameter_description=parameter_description,
    )
