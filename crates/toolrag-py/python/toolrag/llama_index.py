"""toolrag as the tool retriever of a LlamaIndex agent.

LlamaIndex agents (``FunctionAgent``, ``ReActAgent``, ``CodeActAgent``,
``AgentWorkflow``) take a ``tool_retriever``, an ``ObjectRetriever`` of tools,
instead of (or besides) ``tools``: before each step they retrieve the tools for
the user's message and offer only those to the LLM. :class:`ToolRetriever` is
one, searching a toolrag index and handing back your own tool objects::

    import toolrag.llama_index
    from llama_index.core.agent.workflow import FunctionAgent

    tools = [get_weather, send_email, read_file]   # FunctionTools or functions
    retriever = toolrag.llama_index.ToolRetriever.from_tools(tools, k=3)
    agent = FunctionAgent(tool_retriever=retriever, llm=llm)
    response = await agent.run("is it raining in Lima?")

With an index you built (or opened) yourself, give it with the same tools:
``ToolRetriever(index, tools, k=3)``. ``tools`` is a list (tools are matched by
name) or a mapping of id to tool (matched by id, for an index built from that
mapping).

Needs ``pip install "toolrag[llama-index]"``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ._extras import missing_extra

try:
    from llama_index.core.base.base_retriever import BaseRetriever
    from llama_index.core.objects import ObjectRetriever
    from llama_index.core.objects.base_node_mapping import BaseObjectNodeMapping
    from llama_index.core.postprocessor.types import BaseNodePostprocessor
    from llama_index.core.schema import BaseNode, NodeWithScore, QueryBundle, TextNode
    from llama_index.core.tools import BaseTool, FunctionTool
except ImportError as e:
    raise missing_extra("llama_index", "llama-index", e) from e

from ._index import Index, Mode
from ._native import Hit

__all__ = ["ToolNodeRetriever", "ToolRetriever"]

Namespaces = str | list[str] | tuple[str, ...] | None
ToolLike = BaseTool | Callable[..., Any]

#: The node metadata key that carries the tool's id.
ID_KEY = "toolrag_id"


def _as_tool(tool: ToolLike) -> BaseTool:
    """A LlamaIndex tool; a plain function becomes a ``FunctionTool``, as the
    agents' own ``tools=`` does."""
    if isinstance(tool, BaseTool):
        return tool
    if callable(tool):
        return FunctionTool.from_defaults(tool)
    raise TypeError(f"a {type(tool).__name__} is not a LlamaIndex tool: give BaseTools or functions")


def _node(tool: Mapping[str, Any], score: float | None) -> NodeWithScore:
    text = str(tool.get("description") or tool.get("summary") or tool["name"])
    node = TextNode(
        id_=str(tool["id"]),
        text=f"{tool['name']}: {text}",
        metadata={
            ID_KEY: tool["id"],
            "name": tool["name"],
            "namespace": tool.get("namespace"),
        },
    )
    return NodeWithScore(node=node, score=score)


class ToolNodeRetriever(BaseRetriever):
    """A LlamaIndex retriever over a toolrag index: one ``TextNode`` per tool
    found (``id_`` the tool's id, ``metadata`` its ``toolrag_id``, ``name`` and
    ``namespace``), scored by toolrag. :class:`ToolRetriever` maps the nodes
    back to tool objects.

    A query that is exactly the name of a tool always returns that tool:
    LlamaIndex agents look a called tool up again by retrieving with its name.
    """

    def __init__(
        self,
        index: Index,
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        namespace: Namespaces = None,
    ) -> None:
        super().__init__()
        self._index = index
        self._k = k
        self._mode: Mode = mode
        self._namespace = namespace
        self._ids_by_name: dict[str, str] = {}
        for tool in index:
            self._ids_by_name.setdefault(tool["name"], tool["id"])

    def _nodes(self, query: str, hits: list[Hit]) -> list[NodeWithScore]:
        nodes = [_node(hit.tool, hit.score) for hit in hits]
        named = self._ids_by_name.get(query.strip())
        if named is not None and all(hit.id != named for hit in hits):
            tool = self._index.get(named)
            if tool is not None:
                nodes = [_node(tool, None), *nodes][: max(self._k, 1)]
        return nodes

    def _retrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        hits = self._index.search(query, self._k, mode=self._mode, namespace=self._namespace)
        return self._nodes(query, hits)

    async def _aretrieve(self, query_bundle: QueryBundle) -> list[NodeWithScore]:
        query = query_bundle.query_str
        hits = await self._index.asearch(query, self._k, mode=self._mode, namespace=self._namespace)
        return self._nodes(query, hits)


class _ToolNodeMapping(BaseObjectNodeMapping[BaseTool]):
    """Tool ids to the user's tool objects."""

    def __init__(self, tools_by_id: dict[str, BaseTool]) -> None:
        self._tools = tools_by_id

    @classmethod
    def from_objects(cls, objs: Sequence[BaseTool], *args: Any, **kwargs: Any) -> _ToolNodeMapping:
        return cls({str(tool.metadata.name): tool for tool in objs})

    def validate_object(self, obj: BaseTool) -> None:
        if not isinstance(obj, BaseTool):
            raise ValueError(f"not a LlamaIndex tool: {obj!r}")

    @property
    def obj_node_mapping(self) -> dict[Any, Any]:
        return self._tools

    def _add_object(self, obj: BaseTool) -> None:
        self._tools[str(obj.metadata.name)] = obj

    def to_node(self, obj: BaseTool) -> TextNode:
        name = str(obj.metadata.name)
        return TextNode(
            id_=name,
            text=f"{name}: {obj.metadata.description}",
            metadata={ID_KEY: name, "name": name},
        )

    def _from_node(self, node: BaseNode) -> BaseTool:
        id = node.metadata.get(ID_KEY, node.node_id)
        try:
            return self._tools[id]
        except KeyError:
            raise KeyError(f"tool {id!r} is in the index but not among the tools the ToolRetriever was given") from None

    def persist(self, persist_dir: str = "", obj_node_mapping_fname: str = "") -> None:
        raise NotImplementedError(
            "a ToolRetriever keeps tool objects in memory: persist the toolrag "
            "index (Index.build(tools, path)) and give the tools again"
        )


def _tools_by_id(index: Index, tools: Sequence[ToolLike] | Mapping[str, ToolLike]) -> dict[str, BaseTool]:
    by_id: dict[str, BaseTool] = {}
    missing: list[str] = []
    if isinstance(tools, Mapping):
        given = {str(key): _as_tool(tool) for key, tool in tools.items()}
        for tool in index:
            if tool["id"] in given:
                by_id[tool["id"]] = given[tool["id"]]
            else:
                missing.append(tool["id"])
    else:
        by_name: dict[str, BaseTool] = {}
        for t in tools:
            converted = _as_tool(t)
            by_name.setdefault(str(converted.metadata.name), converted)
        for tool in index:
            if tool["name"] in by_name:
                by_id[tool["id"]] = by_name[tool["name"]]
            else:
                missing.append(tool["id"])
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3])
        more = f" and {len(missing) - 3} more" if len(missing) > 3 else ""
        how = "id" if isinstance(tools, Mapping) else "name"
        raise ValueError(
            f"the index has tools that are not among the tools given (by {how}): "
            f"{shown}{more}; build the index from these tools "
            "(ToolRetriever.from_tools(tools))"
        )
    return by_id


class ToolRetriever(ObjectRetriever[BaseTool]):
    """An ``ObjectRetriever`` of tools for LlamaIndex agents' ``tool_retriever``.

    ``index`` is a toolrag index of ``tools``; ``tools`` the tool objects to
    hand back: a list (matched by name) or a mapping of id to tool (matched by
    id). Plain functions become ``FunctionTool``\\ s. ``k``, ``mode`` and
    ``namespace`` are those of :meth:`toolrag.Index.search`.

        >>> retriever = ToolRetriever.from_tools([get_weather, send_email], k=1)  # doctest: +SKIP
        >>> [t.metadata.name for t in retriever.retrieve("rain in Lima?")]      # doctest: +SKIP
        ['get_weather']

    Raises ``ValueError`` when the index has a tool that ``tools`` lacks.
    """

    def __init__(
        self,
        index: Index,
        tools: Sequence[ToolLike] | Mapping[str, ToolLike],
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        namespace: Namespaces = None,
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
    ) -> None:
        super().__init__(
            retriever=ToolNodeRetriever(index, k, mode=mode, namespace=namespace),
            object_node_mapping=_ToolNodeMapping(_tools_by_id(index, tools)),
            node_postprocessors=node_postprocessors,
        )
        self.index = index

    @classmethod
    def from_tools(
        cls,
        tools: Sequence[ToolLike] | Mapping[str, ToolLike],
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        node_postprocessors: list[BaseNodePostprocessor] | None = None,
        **build: Any,
    ) -> ToolRetriever:
        """Builds a toolrag index of ``tools`` (``build`` goes to
        :meth:`toolrag.Index.build`: ``path``, ``namespace``, ``model``, ...)
        and retrieves from it."""
        converted: Sequence[BaseTool] | Mapping[str, BaseTool]
        if isinstance(tools, Mapping):
            converted = {key: _as_tool(tool) for key, tool in tools.items()}
        else:
            converted = [_as_tool(tool) for tool in tools]
        index = Index.build(converted, **build)
        return cls(
            index,
            converted,
            k,
            mode=mode,
            node_postprocessors=node_postprocessors,
        )
