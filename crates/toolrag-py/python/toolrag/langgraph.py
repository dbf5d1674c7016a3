"""toolrag as the tool retriever of a LangGraph agent (langgraph-bigtool).

`langgraph-bigtool <https://github.com/langchain-ai/langgraph-bigtool>`_'s
``create_agent(llm, tool_registry, retrieve_tools_function=...,
retrieve_tools_coroutine=...)`` starts the model with one tool,
``retrieve_tools(query)``, and binds the tools whose registry ids it returns.
:func:`retrievers` gives that pair of functions, searching a toolrag index; the
index must be built from the same ``tool_registry`` (a mapping of id to tool),
so that the ids it returns are the registry's keys::

    import toolrag
    import toolrag.langgraph
    from langgraph_bigtool import create_agent

    tool_registry = {"weather": get_weather, "email": send_email}   # id -> tool
    index = toolrag.Index.build(tool_registry)        # ids = the registry's keys
    retrieve, aretrieve = toolrag.langgraph.retrievers(index, k=3)
    agent = create_agent(
        llm, tool_registry,
        retrieve_tools_function=retrieve, retrieve_tools_coroutine=aretrieve,
    ).compile()

or, in one call, ``toolrag.langgraph.create_agent(llm, tool_registry, k=3)``.

Needs ``pip install "toolrag[langgraph]"``.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from ._errors import IncompatibleFramework
from ._extras import missing_extra

try:
    import langchain_core  # noqa: F401
    import langgraph.prebuilt  # noqa: F401
    import langgraph_bigtool  # type: ignore[import-untyped]  # noqa: F401
except ImportError as e:
    raise missing_extra("langgraph", "langgraph", e) from e

from ._index import Index, Mode

if TYPE_CHECKING:
    from langchain_core.language_models import LanguageModelLike
    from langgraph.graph import StateGraph

__all__ = ["async_retriever", "create_agent", "retriever", "retrievers"]

#: The description the model sees for the ``retrieve_tools`` tool.
RETRIEVE_TOOLS_DESCRIPTION = (
    "Find the tools for a task. Describe in a few words what you need to do "
    "(for example 'send an email' or 'weather forecast for a city'); the best "
    "matching tools become available to call right after."
)

Namespaces = str | list[str] | tuple[str, ...] | None


def _check_framework() -> None:
    """Refuses a known-broken pairing of LangGraph packages before it fails
    in the middle of an agent's run: langgraph-bigtool (0.0.3) calls
    ``ToolNode.inject_tool_args``, which langgraph-prebuilt 1.0.2 renamed."""
    from langgraph.prebuilt import ToolNode

    if hasattr(ToolNode, "inject_tool_args"):
        return

    def of(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "?"

    raise IncompatibleFramework(
        f"langgraph-bigtool {of('langgraph-bigtool')} calls ToolNode.inject_tool_args, which "
        f"langgraph-prebuilt {of('langgraph-prebuilt')} no longer has (1.0.2 renamed it): this is a break "
        "between the two LangGraph packages, not in toolrag. Until a langgraph-bigtool release follows "
        "the rename, use langgraph-prebuilt 1.0.1: pip install 'langgraph-prebuilt==1.0.1' 'langgraph==1.0.1'"
    )


def _check_registry(index: Index, tool_registry: Mapping[str, Any] | None) -> None:
    if tool_registry is None:
        return
    missing = [tool["id"] for tool in index if tool["id"] not in tool_registry]
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        raise ValueError(
            f"the index has tools that are not in tool_registry: {shown}{more}; "
            "build it with toolrag.Index.build(tool_registry) so that its ids are "
            "the registry's keys"
        )


def retriever(
    index: Index,
    k: int = 5,
    *,
    tool_registry: Mapping[str, Any] | None = None,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> Callable[[str], list[str]]:
    """The ``retrieve_tools_function`` for ``langgraph_bigtool.create_agent``:
    ``retrieve_tools(query) -> [tool id, ...]``, the ids of the top ``k`` tools.

    Build ``index`` with ``toolrag.Index.build(tool_registry)``: the ids are
    then the registry's keys, which is what bigtool looks the tools up by. Given
    ``tool_registry``, this checks that (``ValueError`` otherwise). ``mode`` and
    ``namespace`` are those of :meth:`toolrag.Index.search`.

        >>> retrieve = toolrag.langgraph.retriever(index, k=2)  # doctest: +SKIP
        >>> retrieve("email my landlord")                       # doctest: +SKIP
        ['email', 'calendar']
    """
    _check_registry(index, tool_registry)

    def retrieve_tools(query: str) -> list[str]:
        return [hit.id for hit in index.search(query, k, mode=mode, namespace=namespace)]

    retrieve_tools.__doc__ = RETRIEVE_TOOLS_DESCRIPTION
    return retrieve_tools


def async_retriever(
    index: Index,
    k: int = 5,
    *,
    tool_registry: Mapping[str, Any] | None = None,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> Callable[[str], Coroutine[Any, Any, list[str]]]:
    """The ``retrieve_tools_coroutine`` for ``langgraph_bigtool.create_agent``:
    :func:`retriever` for ``agent.ainvoke``, searching in a worker thread so
    the event loop goes on meanwhile."""
    _check_registry(index, tool_registry)

    async def retrieve_tools(query: str) -> list[str]:
        hits = await index.asearch(query, k, mode=mode, namespace=namespace)
        return [hit.id for hit in hits]

    retrieve_tools.__doc__ = RETRIEVE_TOOLS_DESCRIPTION
    return retrieve_tools


def retrievers(
    index: Index,
    k: int = 5,
    *,
    tool_registry: Mapping[str, Any] | None = None,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> tuple[Callable[[str], list[str]], Callable[[str], Coroutine[Any, Any, list[str]]]]:
    """``(retriever(...), async_retriever(...))``: both functions bigtool takes,
    so that the agent runs with ``invoke`` and ``ainvoke`` alike::

        retrieve, aretrieve = toolrag.langgraph.retrievers(index, k=3)
        builder = langgraph_bigtool.create_agent(
            llm, tool_registry,
            retrieve_tools_function=retrieve, retrieve_tools_coroutine=aretrieve,
        )
    """
    options: dict[str, Any] = {
        "tool_registry": tool_registry,
        "mode": mode,
        "namespace": namespace,
    }
    return retriever(index, k, **options), async_retriever(index, k, **options)


def create_agent(
    llm: LanguageModelLike,
    tool_registry: Mapping[str, Any],
    *,
    index: Index | None = None,
    k: int = 5,
    mode: Mode = "hybrid",
    namespace: Namespaces = None,
) -> StateGraph[Any]:
    """``langgraph_bigtool.create_agent`` with toolrag retrieving the tools.

    ``tool_registry`` maps ids to tools (LangChain tools or plain functions);
    ``index`` defaults to ``toolrag.Index.build(tool_registry)``. Returns the
    graph builder: ``.compile()`` it (with a checkpointer, if you like)::

        agent = toolrag.langgraph.create_agent(llm, tool_registry, k=3).compile()
        agent.invoke({"messages": "email my landlord that the rent is paid"})
    """
    # langgraph-bigtool ships no type information.
    from langgraph_bigtool import create_agent as bigtool_create_agent

    _check_framework()

    if index is None:
        index = Index.build(tool_registry)
    retrieve, aretrieve = retrievers(index, k, tool_registry=tool_registry, mode=mode, namespace=namespace)
    builder: StateGraph[Any] = bigtool_create_agent(
        llm,
        dict(tool_registry),
        retrieve_tools_function=retrieve,
        retrieve_tools_coroutine=aretrieve,
    )
    return builder
