"""Turning what users hold into tool definitions the native side reads.

Tools can be a registry path (any format the CLI reads), a list of dicts
(OpenAI functions, MCP ``Tool``s, Anthropic tools, native JSONL lines), a
mapping of id to tool, or framework tool objects: LangChain/LangGraph
``BaseTool``, LlamaIndex tools, PydanticAI ``Tool``, MCP SDK ``Tool`` and any
pydantic model of a tool.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any, Union

from ._errors import InvalidRegistry

#: What :meth:`toolrag.Index.build`, :meth:`toolrag.Index.update` and
#: :func:`toolrag.lint` accept as tools.
ToolsLike = Union[str, "os.PathLike[str]", Iterable[Any], Mapping[str, Any]]


def to_dict(tool: Any) -> dict[str, Any]:
    """One tool as a JSON-able dict, whatever it is. Raises ``TypeError``."""
    if isinstance(tool, Mapping):
        return dict(tool)
    module = type(tool).__module__ or ""
    # LangChain / LangGraph tools (BaseTool, StructuredTool, @tool).
    if module.startswith(("langchain", "langgraph")) or hasattr(tool, "args_schema"):
        from langchain_core.utils.function_calling import convert_to_openai_tool

        converted: dict[str, Any] = convert_to_openai_tool(tool)
        return converted
    # LlamaIndex tools: FunctionTool, QueryEngineTool, ...
    metadata = getattr(tool, "metadata", None)
    if module.startswith("llama_index") and metadata is not None and hasattr(metadata, "to_openai_tool"):
        converted = metadata.to_openai_tool(skip_length_check=True)
        return dict(converted)
    # PydanticAI Tool: its definition is built by its own schema generator.
    if module.startswith("pydantic_ai"):
        schema = getattr(getattr(tool, "function_schema", None), "json_schema", None)
        if schema is None:
            # PydanticAI ToolDefinition: what a toolset hands a model (and a
            # ToolSearch strategy); its schema is already JSON Schema.
            schema = getattr(tool, "parameters_json_schema", None)
        if schema is not None:
            return {
                "name": tool.name,
                "description": getattr(tool, "description", None) or "",
                "parameters": schema,
            }
    # A plain function, as LangGraph, LlamaIndex and PydanticAI take for a tool:
    # its schema comes from the first of their schema generators installed.
    import inspect

    if inspect.isfunction(tool) or inspect.ismethod(tool):
        try:
            from langchain_core.utils.function_calling import convert_to_openai_tool
        except ImportError:
            pass
        else:
            return dict(convert_to_openai_tool(tool))
        try:
            from pydantic_ai import Tool
        except ImportError:
            pass
        else:
            return to_dict(Tool(tool))
        try:
            from llama_index.core.tools import FunctionTool
        except ImportError:
            pass
        else:
            return to_dict(FunctionTool.from_defaults(tool))
        raise TypeError(
            f"function {tool.__name__!r} needs a schema: install langchain-core, pydantic-ai-slim "
            "or llama-index-core, or give its definition as a dict"
        )
    # MCP SDK types.Tool, and any other pydantic model of a tool.
    dump = getattr(tool, "model_dump", None)
    if callable(dump):
        dumped = dump(by_alias=True, exclude_none=True, mode="json")
        if isinstance(dumped, dict):
            return dumped
    raise TypeError(
        f"a {type(tool).__name__} is not a tool definition: give a dict (OpenAI function, "
        "MCP Tool or Anthropic tool), a framework tool object, or a registry path"
    )


def prepare(tools: Any) -> tuple[list[dict[str, Any]] | None, list[str] | None]:
    """The tools as ``(dicts, None)`` or ``(None, paths)`` for the native side,
    which reads the dicts as they are (a value that is not JSON, such as a set,
    is an :class:`InvalidRegistry` naming ``tools[i]``)."""
    if isinstance(tools, (str, os.PathLike)):
        return None, [os.fspath(tools)]
    if isinstance(tools, Mapping) and isinstance(tools.get("tools"), list):
        # An MCP tools/list result, or an Anthropic request's tools.
        tools = tools["tools"]
    elif isinstance(tools, Mapping) and (isinstance(tools.get("name"), str) or "function" in tools):
        # One tool on its own.
        tools = [tools]
    if isinstance(tools, Mapping):
        items: list[Any] = []
        for key, tool in tools.items():
            d = _one(tool, f"tools[{key!r}]")
            d.setdefault("id", str(key))
            items.append(d)
        return items, None
    if isinstance(tools, (bytes, bytearray)) or not isinstance(tools, Iterable):
        raise InvalidRegistry(
            f"tools must be a registry path, a list of tool definitions or a mapping of id to tool, "
            f"not {type(tools).__name__}",
            errors=[],
        )
    items = list(tools)
    if items and all(isinstance(t, (str, os.PathLike)) for t in items):
        return None, [os.fspath(t) for t in items]
    return [_one(t, f"tools[{i}]") for i, t in enumerate(items)], None


def _one(tool: Any, where: str) -> dict[str, Any]:
    try:
        return to_dict(tool)
    except TypeError as e:
        raise InvalidRegistry(f"{where}: {e}", errors=[_err(where, str(e))]) from None


def _err(where: str, message: str) -> dict[str, Any]:
    return {"file": where, "line": None, "column": None, "message": message}
