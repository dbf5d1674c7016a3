"""toolrag as a client-side tool search for the Anthropic Messages API.

Claude's tool search lets a request carry hundreds of tools with
``defer_loading: true``: Claude sees none of their schemas until a search
returns ``tool_reference`` blocks naming them. The search can run on your side
(a custom tool search): Claude calls an ordinary tool, ``tool_search`` here,
and the ``tool_result`` you send back holds one ``tool_reference`` per tool
found. This module builds those blocks from toolrag hits (the
``anthropic.types`` TypedDicts of the SDK: ``ToolParam``,
``ToolResultBlockParam``, ``ToolReferenceBlockParam``)::

    import anthropic
    import toolrag
    import toolrag.anthropic

    index = toolrag.Index.build(my_tools)
    client = anthropic.Anthropic()
    tools = [toolrag.anthropic.search_tool(), *toolrag.anthropic.deferred_tools(index)]
    messages = [{"role": "user", "content": "is it raining in Lima?"}]
    response = client.messages.create(model=MODEL, max_tokens=1024, tools=tools,
                                      messages=messages)
    results = toolrag.anthropic.respond(index, response, k=3)
    if results:   # Claude searched: answer with the tools found
        messages += [{"role": "assistant", "content": response.content},
                     {"role": "user", "content": results}]
        response = client.messages.create(model=MODEL, max_tokens=1024,
                                          tools=tools, messages=messages)

:func:`tool_search_tool_result` gives the same references in the shape of a
server tool search's ``tool_search_tool_result`` block.

Needs ``pip install "toolrag[anthropic]"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from typing import Any

from ._extras import missing_extra

try:
    from anthropic.types import (
        ContentBlock,
        Message,
        TextBlockParam,
        ToolParam,
        ToolReferenceBlockParam,
        ToolResultBlockParam,
        ToolSearchToolResultBlockParam,
        ToolUseBlock,
    )
    from anthropic.types.tool_search_tool_search_result_block_param import (
        ToolSearchToolSearchResultBlockParam,
    )
except ImportError as e:
    raise missing_extra("anthropic", "anthropic", e) from e

from ._index import Index, Mode
from ._native import Hit

__all__ = [
    "SEARCH_TOOL_NAME",
    "arespond",
    "deferred_tools",
    "queries",
    "respond",
    "search_tool",
    "tool_references",
    "tool_result",
    "tool_search_tool_result",
]

Namespaces = str | list[str] | tuple[str, ...] | None

#: The name of the tool search tool that :func:`search_tool` defines.
SEARCH_TOOL_NAME = "tool_search"

#: What Claude is told of the search tool.
SEARCH_TOOL_DESCRIPTION = (
    "Search the available tools. Most tools are not loaded yet: describe in a few "
    "words what you need to do (for example 'send an email' or 'weather in a "
    "city') and the best matching tools are loaded for you to call."
)

#: The text of a result when no tool matched (a tool result cannot be empty).
NO_MATCH = "No tools matched the query."


def search_tool(name: str = SEARCH_TOOL_NAME, description: str = SEARCH_TOOL_DESCRIPTION) -> ToolParam:
    """The custom tool search tool to put in ``tools``: Claude calls it with
    ``{"query": "..."}``.

        >>> toolrag.anthropic.search_tool()["input_schema"]["required"]
        ['query']
    """
    return {
        "name": name,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "description": "What the tool should do, in a few words.",
                }
            },
            "required": ["query"],
        },
    }


def deferred_tools(index: Index, *, defer_loading: bool = True) -> list[ToolParam]:
    """Every tool of ``index`` as an Anthropic tool definition, with
    ``defer_loading`` (Claude sees it only once a search references it).
    Every tool a ``tool_reference`` names must be in the request's ``tools``."""
    return [_tool_param(tool, defer_loading) for tool in index]


def _tool_param(tool: dict[str, Any], defer_loading: bool) -> ToolParam:
    param: ToolParam = {
        "name": tool["name"],
        "description": tool.get("description") or "",
        "input_schema": tool.get("inputSchema") or {"type": "object"},
    }
    if defer_loading:
        param["defer_loading"] = True
    return param


def tool_references(hits: Iterable[Hit]) -> list[ToolReferenceBlockParam]:
    """One ``{"type": "tool_reference", "tool_name": ...}`` block per hit, in
    rank order (a tool found twice is referenced once)."""
    names = dict.fromkeys(hit.name for hit in hits)
    return [{"type": "tool_reference", "tool_name": name} for name in names]


def tool_result(tool_use_id: str, hits: Iterable[Hit]) -> ToolResultBlockParam:
    """The ``tool_result`` block answering the search tool's ``tool_use``
    ``tool_use_id``: the hits as ``tool_reference`` blocks, or a text saying
    that nothing matched."""
    content: list[ToolReferenceBlockParam | TextBlockParam] = []
    content.extend(tool_references(hits))
    if not content:
        content.append({"type": "text", "text": NO_MATCH})
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}


def tool_search_tool_result(tool_use_id: str, hits: Iterable[Hit]) -> ToolSearchToolResultBlockParam:
    """The hits as a ``tool_search_tool_result`` block, the shape in which
    Claude's server-side tool search returns its references (``tool_use_id``
    is then that of a ``server_tool_use`` block)."""
    result: ToolSearchToolSearchResultBlockParam = {
        "type": "tool_search_tool_search_result",
        "tool_references": tool_references(hits),
    }
    return {
        "type": "tool_search_tool_result",
        "tool_use_id": tool_use_id,
        "content": result,
    }


def queries(response: Message | Sequence[ContentBlock], name: str = SEARCH_TOOL_NAME) -> list[tuple[str, str]]:
    """``(tool_use_id, query)`` for each call of the search tool ``name`` in a
    response (a ``Message`` or its ``content``)."""
    blocks = response.content if isinstance(response, Message) else response
    found: list[tuple[str, str]] = []
    for block in blocks:
        if isinstance(block, ToolUseBlock) and block.name == name:
            query = block.input.get("query")
            if not isinstance(query, str):
                many = block.input.get("queries")
                query = " ".join(q for q in many if isinstance(q, str)) if isinstance(many, list) else ""
            found.append((block.id, query))
    return found


def respond(
    index: Index,
    response: Message | Sequence[ContentBlock],
    k: int = 5,
    *,
    name: str = SEARCH_TOOL_NAME,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> list[ToolResultBlockParam]:
    """Runs every search Claude asked for in ``response`` and returns the
    ``tool_result`` blocks that answer them (empty when it asked for none):
    the content of the next user message, with the results of any other tool
    calls of that response. ``k``, ``mode`` and ``namespace`` are those of
    :meth:`toolrag.Index.search`."""
    return [
        tool_result(
            tool_use_id,
            index.search(query, k, mode=mode, namespace=namespace) if query.strip() else [],
        )
        for tool_use_id, query in queries(response, name)
    ]


async def arespond(
    index: Index,
    response: Message | Sequence[ContentBlock],
    k: int = 5,
    *,
    name: str = SEARCH_TOOL_NAME,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> list[ToolResultBlockParam]:
    """:func:`respond` for asyncio code (``AsyncAnthropic``): the searches run
    in worker threads while the event loop goes on."""

    async def one(tool_use_id: str, query: str) -> ToolResultBlockParam:
        hits = await index.asearch(query, k, mode=mode, namespace=namespace) if query.strip() else []
        return tool_result(tool_use_id, hits)

    return list(await asyncio.gather(*(one(i, q) for i, q in queries(response, name))))
