"""toolrag as a client-executed tool search for the OpenAI Responses API.

With a ``{"type": "tool_search", "execution": "client"}`` tool in a request,
the model asks for tools with a ``tool_search_call`` item and your code answers
with a ``tool_search_output`` item that loads the tools found. This module runs
that search on a toolrag index and builds the items (the ``openai.types.
responses`` TypedDicts of the SDK: ``ToolSearchToolParam``,
``FunctionToolParam``, ``ResponseToolSearchOutputItemParamParam``)::

    import openai
    import toolrag
    import toolrag.openai

    index = toolrag.Index.build(my_tools)
    client = openai.OpenAI()
    tools = [toolrag.openai.search_tool(), *toolrag.openai.deferred_tools(index)]
    items = [{"role": "user", "content": "is it raining in Lima?"}]
    response = client.responses.create(model=MODEL, tools=tools, input=items)
    outputs = toolrag.openai.respond(index, response, k=3)
    if outputs:   # the model searched: load the tools found
        items += [*response.output, *outputs]
        response = client.responses.create(model=MODEL, tools=tools, input=items)

Needs ``pip install "toolrag[openai]"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from ._extras import missing_extra

try:
    from openai.types.responses import (
        FunctionToolParam,
        Response,
        ResponseOutputItem,
        ResponseToolSearchCall,
        ResponseToolSearchOutputItemParamParam,
        ToolSearchToolParam,
    )
except ImportError as e:
    raise missing_extra("openai", "openai", e) from e

from ._index import Index, Mode
from ._native import Hit

__all__ = [
    "arespond",
    "deferred_tools",
    "function_tool",
    "queries",
    "respond",
    "search_tool",
    "tool_search_output",
]

Namespaces = str | list[str] | tuple[str, ...] | None

#: What the model is told of the search tool.
SEARCH_TOOL_DESCRIPTION = (
    "Search the available tools. Most tools are not loaded yet: describe in a few "
    "words what you need to do (for example 'send an email' or 'weather in a "
    "city') and the best matching tools are loaded for you to call."
)


def search_tool(description: str = SEARCH_TOOL_DESCRIPTION) -> ToolSearchToolParam:
    """The client-executed ``tool_search`` tool to put in ``tools``: the model
    calls it with ``{"query": "..."}``.

        >>> toolrag.openai.search_tool()["execution"]
        'client'
    """
    return {
        "type": "tool_search",
        "execution": "client",
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words.",
                }
            },
            "required": ["query"],
            "additionalProperties": False,
        },
    }


def function_tool(
    tool: dict[str, Any], *, defer_loading: bool = True, strict: bool | None = False
) -> FunctionToolParam:
    """A toolrag tool definition (a hit's ``tool``, or an item of an index) as
    a Responses ``function`` tool. ``strict`` is off by default: strict mode
    needs every property required and no additional ones."""
    param: FunctionToolParam = {
        "type": "function",
        "name": tool["name"],
        "description": tool.get("description") or "",
        "parameters": tool.get("inputSchema") or {"type": "object", "properties": {}},
        "strict": strict,
    }
    if defer_loading:
        param["defer_loading"] = True
    return param


def deferred_tools(index: Index, *, defer_loading: bool = True, strict: bool | None = False) -> list[FunctionToolParam]:
    """Every tool of ``index`` as a ``function`` tool with ``defer_loading``:
    declared in the request, its schema loaded only when a search finds it."""
    return [function_tool(t, defer_loading=defer_loading, strict=strict) for t in index]


def tool_search_output(
    call_id: str | None,
    hits: Iterable[Hit],
    *,
    defer_loading: bool = True,
    strict: bool | None = False,
) -> ResponseToolSearchOutputItemParamParam:
    """The ``tool_search_output`` item answering the ``tool_search_call``
    ``call_id``: it loads the hits' tools (each once, in rank order).
    ``defer_loading`` and ``strict`` should be those the tools were declared
    with in the request (see :func:`deferred_tools`)."""
    seen: set[str] = set()
    tools: list[FunctionToolParam] = []
    for hit in hits:
        if hit.name not in seen:
            seen.add(hit.name)
            tools.append(function_tool(hit.tool, defer_loading=defer_loading, strict=strict))
    return {
        "type": "tool_search_output",
        "execution": "client",
        "call_id": call_id,
        "status": "completed",
        "tools": tools,
    }


def queries(
    response: Response | Sequence[ResponseOutputItem],
) -> list[tuple[str | None, str]]:
    """``(call_id, query)`` for each client-executed ``tool_search_call`` in a
    response (a ``Response`` or its ``output``)."""
    items = response.output if isinstance(response, Response) else response
    found: list[tuple[str | None, str]] = []
    for item in items:
        if isinstance(item, ResponseToolSearchCall) and item.execution == "client":
            args = item.arguments if isinstance(item.arguments, dict) else {}
            query = args.get("query")
            if not isinstance(query, str):
                many = args.get("queries")
                query = " ".join(q for q in many if isinstance(q, str)) if isinstance(many, list) else ""
            found.append((item.call_id or item.id, query))
    return found


def respond(
    index: Index,
    response: Response | Sequence[ResponseOutputItem],
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
    defer_loading: bool = True,
    strict: bool | None = False,
) -> list[ResponseToolSearchOutputItemParamParam]:
    """Runs every tool search the model asked for in ``response`` and returns
    the ``tool_search_output`` items answering them (empty when it asked for
    none): append them, after ``response.output``, to the next request's
    ``input``. ``k``, ``mode`` and ``namespace`` are those of
    :meth:`toolrag.Index.search`."""
    return [
        tool_search_output(
            call_id,
            index.search(query, k, mode=mode, namespace=namespace) if query.strip() else [],
            defer_loading=defer_loading,
            strict=strict,
        )
        for call_id, query in queries(response)
    ]


async def arespond(
    index: Index,
    response: Response | Sequence[ResponseOutputItem],
    k: int = 5,
    *,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
    defer_loading: bool = True,
    strict: bool | None = False,
) -> list[ResponseToolSearchOutputItemParamParam]:
    """:func:`respond` for asyncio code (``AsyncOpenAI``): the searches run in
    worker threads while the event loop goes on."""

    async def one(call_id: str | None, query: str) -> ResponseToolSearchOutputItemParamParam:
        hits = await index.asearch(query, k, mode=mode, namespace=namespace) if query.strip() else []
        return tool_search_output(call_id, hits, defer_loading=defer_loading, strict=strict)

    return list(await asyncio.gather(*(one(c, q) for c, q in queries(response))))
