"""The index: build, open, search, plan, update."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import warnings
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from . import _native, _plan, _runtime
from ._errors import InvalidInput
from ._native import Hit
from ._plan import Plan
from ._tools import prepare

Mode = Literal["hybrid", "lexical", "dense"]


def _namespaces(namespace: str | list[str] | tuple[str, ...] | None) -> list[str]:
    if namespace is None:
        return []
    if isinstance(namespace, str):
        return [namespace]
    return list(namespace)


def _path(p: str | os.PathLike[str] | None) -> str | None:
    return None if p is None else os.fspath(p)


#: The load limits, as ``toolrag --limit NAME=VALUE`` names them.
LIMIT_NAMES = ("file-bytes", "description-bytes", "schema-bytes", "schema-depth", "tools-per-file")


def _limits(limits: Mapping[str, int] | None) -> list[tuple[str, int]]:
    """``limits`` as the native side takes them: ``(name, value)`` pairs, the
    names as the CLI's ``--limit`` takes them (``description_bytes`` is
    ``description-bytes``)."""
    if limits is None:
        return []
    if not isinstance(limits, Mapping):
        raise InvalidInput(f"limits must be a dict of limit name to a whole number, not {type(limits).__name__}")
    out: list[tuple[str, int]] = []
    for name, value in limits.items():
        key = str(name).replace("_", "-")
        if key not in LIMIT_NAMES:
            raise InvalidInput(f"unknown limit {name!r}; the limits are {', '.join(LIMIT_NAMES)}")
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise InvalidInput(f"the limit {name!r} must be a whole number from 0, not {value!r}")
        out.append((key, min(value, 2**64 - 1)))
    return out


def _k(k: object) -> int:
    """``k`` checked: a whole number from 1 (``toolrag.InvalidInput`` otherwise,
    never ``OverflowError`` or ``TypeError``)."""
    if isinstance(k, bool) or not isinstance(k, int):
        raise InvalidInput(f"k must be a whole number, not {type(k).__name__}")
    if k < 1:
        raise InvalidInput(f"k must be at least 1, not {k}")
    return min(k, sys.maxsize)


def _request(request: str | None, query: str | None, method: str) -> str:
    """The request of ``search``/``asearch``, whose argument was once called
    ``query``: that name still works, with a ``DeprecationWarning``."""
    if query is not None:
        if request is not None:
            raise TypeError(f"{method}() got both request and query; query is the old name of request")
        warnings.warn(
            f"Index.{method}(query=...) is deprecated: the argument is now called request, as in khipu() and plan()",
            DeprecationWarning,
            stacklevel=3,
        )
        return query
    if request is None:
        raise TypeError(f"{method}() missing 1 required argument: 'request'")
    return request


class Index:
    """An index of tools, open for search.

    Build one from tools, or open one that ``toolrag index`` (or
    :meth:`Index.build` with a ``path``) wrote::

        >>> import toolrag
        >>> index = toolrag.Index.build([
        ...     {"name": "get_weather", "description": "Current weather for a city.",
        ...      "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}},
        ...     {"name": "send_email", "description": "Send an email to one recipient.",
        ...      "parameters": {"type": "object", "properties": {"to": {"type": "string"}}}},
        ... ])
        >>> [hit.id for hit in index.search("is it raining in Lima?", k=1)]
        ['tools/get_weather']
        >>> len(index)
        2

    Searching releases the GIL: threads can share one index.
    """

    __slots__ = ("_ix", "report")

    _ix: _native.Index
    #: The report of the last build or update: tools, new, changed, removed,
    #: reused, embedded_texts, reused_texts, lexical_only, seconds,
    #: embed_seconds, graph, generation.
    report: dict[str, Any]

    def __init__(self, native: _native.Index, report: dict[str, Any] | None = None) -> None:
        """Use :meth:`build` or :meth:`open`."""
        self._ix = native
        self.report = report or {}

    @classmethod
    def build(
        cls,
        tools: Any,
        path: str | os.PathLike[str] | None = None,
        *,
        config: str | os.PathLike[str] | None = None,
        progress: bool = False,
        model: str | os.PathLike[str] | None = None,
        namespace: str = "tools",
        lexical_only: bool = False,
        limits: Mapping[str, int] | None = None,
    ) -> Index:
        """Builds an index of ``tools`` and opens it.

        ``tools`` is a registry path (a folder or a file in any format the
        ``toolrag`` command reads), a list of tool dicts (OpenAI functions, MCP
        ``Tool`` objects, Anthropic tools), a mapping of id to tool, or
        framework tool objects (LangChain, LlamaIndex, PydanticAI, MCP SDK).
        Tools without an id get ``<namespace>/<name>``.

        ``path`` is the index folder; with ``None`` the index lives in a
        temporary folder removed when the index is dropped. ``config`` is a
        ``toolrag.toml`` (unlike the CLI, a library call does not read
        ``./toolrag.toml`` on its own: without ``config``, the defaults);
        ``model`` a shipped model name or a model folder, as ``--model`` in
        the CLI; ``progress`` shows a progress bar on stderr. ``limits``
        raises what one registry file may hold, as ``--limit`` does in the CLI:
        ``{"description-bytes": 1_000_000}`` (also ``schema-bytes``,
        ``schema-depth``, ``tools-per-file``, ``file-bytes``).

        Ctrl-C stops the build within a second: ``KeyboardInterrupt`` is
        raised and nothing is published (an index already in ``path`` stays
        as it was).

        Raises :class:`toolrag.InvalidRegistry` (every bad tool, by position
        and field, including a tool name that ``toolrag lint`` calls an error),
        :class:`toolrag.ModelMissing`, :class:`toolrag.FileMissing` (no such
        ``config`` file), :class:`toolrag.InvalidInput` (``path`` is a file).
        """
        _runtime.ensure()
        items, paths = prepare(tools)
        native, report = _native.Index.build(
            items,
            paths,
            _path(path),
            _path(config),
            _path(model),
            namespace,
            progress,
            lexical_only,
            _limits(limits),
        )
        return cls(native, report)

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        *,
        config: str | os.PathLike[str] | None = None,
        model: str | os.PathLike[str] | None = None,
    ) -> Index:
        """Opens the index in ``path``, checking every file against its manifest.

        Raises :class:`toolrag.IndexNotFound` when there is none and
        :class:`toolrag.IndexCorrupted` (naming the file) when a file is damaged.
        """
        _runtime.ensure()
        return cls(_native.Index.open(os.fspath(path), _path(config), _path(model)))

    def search(
        self,
        request: str | None = None,
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        namespace: str | list[str] | tuple[str, ...] | None = None,
        query: str | None = None,
    ) -> list[Hit]:
        """The top ``k`` tools for ``request``, best first. (``query=`` is the
        argument's old name: it still works, with a ``DeprecationWarning``.)

        ``mode`` is ``"hybrid"`` (BM25 and dense, fused), ``"lexical"`` (BM25)
        or ``"dense"``; ``namespace`` keeps only tools of that namespace (or
        those namespaces). Each :class:`Hit` has ``id``, ``name``, ``score``,
        ``rank``, ``server``, ``source`` and ``tool`` (the full definition)::

            >>> hit = index.search("email my landlord", k=1)[0]   # doctest: +SKIP
            >>> hit.name, hit.tool["inputSchema"]["properties"]   # doctest: +SKIP
        """
        return self._ix.search(_request(request, query, "search"), _k(k), mode, _namespaces(namespace))

    async def asearch(
        self,
        request: str | None = None,
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        namespace: str | list[str] | tuple[str, ...] | None = None,
        query: str | None = None,
    ) -> list[Hit]:
        """:meth:`search` for asyncio code: runs in a worker thread, so the
        event loop goes on while the request is embedded."""
        request = _request(request, query, "asearch")
        return await asyncio.to_thread(self.search, request, k, mode=mode, namespace=namespace)

    def khipu(
        self,
        request: str,
        k: int = 5,
        *,
        mode: Mode = "hybrid",
        namespace: str | list[str] | tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        """The Khipu candidate handle set for ``request``: the dict that
        ``toolrag query --format khipu`` prints, valid against the plan
        contract. Give it to the plan model, then check its plan with
        :func:`toolrag.gate`."""
        return self._ix.khipu(request, _k(k), mode, _namespaces(namespace))

    def plan(
        self,
        request: str,
        *,
        planner: str,
        model: str | None = None,
        max_retry: int = 2,
        k: int = 5,
        mode: Mode = "hybrid",
        namespace: str | list[str] | tuple[str, ...] | None = None,
        timeout: float = 120.0,
        prompt: str | None = None,
        constrain: bool = True,
        api_key: str | None = None,
    ) -> Plan:
        """Asks a plan model for a Khipu plan over the tools retrieved for
        ``request``, gates it, and repairs it: the loop of ``toolrag plan``.

        The top ``k`` tools are retrieved as :meth:`khipu` retrieves them.
        ``planner`` is the base URL of an OpenAI-compatible chat server
        (llama.cpp's server, llama-cpp-python, vLLM, Ollama, LM Studio, TGI or
        a hosted API; toolrag posts to ``{planner}/chat/completions``), and
        ``model`` the request's ``model`` field. The model is asked only for
        the decision, the steps, the cited handles and the reason to abstain;
        toolrag fills in the rest of the plan, and the gate checks all of it.
        On a violation the gate's feedback goes back to the model, up to
        ``max_retry`` repairs. ``timeout`` bounds each call, in seconds;
        ``prompt`` replaces the system prompt; ``constrain=False`` sends no
        ``response_format`` schema. The API key is ``api_key``, else
        ``TOOLRAG_PLANNER_API_KEY``; it is sent as a bearer token, never shown.

        Returns a :class:`toolrag.Plan`. Raises :class:`toolrag.PlanAborted`
        (with every attempt's verdict) when no proposal passed,
        :class:`toolrag.PlannerUnavailable` when the plan model cannot be
        reached, times out or answers an HTTP error (at once, with no retry
        spent), :class:`toolrag.NoCandidates` when the retrieval offers no
        tool (the model is not asked), and :class:`toolrag.InvalidInput` for a
        bad option. The GIL is released while it runs: threads can plan at
        once on one index.
        """
        _plan.check(planner, max_retry, timeout)
        text = self._ix.plan(
            request,
            _k(k),
            mode,
            _namespaces(namespace),
            planner,
            model,
            _plan.api_key(api_key),
            max_retry,
            float(timeout),
            prompt,
            constrain,
        )
        return _plan.from_json(text)

    async def aplan(
        self,
        request: str,
        *,
        planner: str,
        model: str | None = None,
        max_retry: int = 2,
        k: int = 5,
        mode: Mode = "hybrid",
        namespace: str | list[str] | tuple[str, ...] | None = None,
        timeout: float = 120.0,
        prompt: str | None = None,
        constrain: bool = True,
        api_key: str | None = None,
    ) -> Plan:
        """:meth:`plan` for asyncio code: runs in a worker thread, so the
        event loop goes on while the plan model thinks."""
        return await asyncio.to_thread(
            self.plan,
            request,
            planner=planner,
            model=model,
            max_retry=max_retry,
            k=k,
            mode=mode,
            namespace=namespace,
            timeout=timeout,
            prompt=prompt,
            constrain=constrain,
            api_key=api_key,
        )

    def update(
        self,
        tools: Any,
        *,
        namespace: str = "tools",
        progress: bool = False,
        limits: Mapping[str, int] | None = None,
    ) -> dict[str, Any]:
        """Rebuilds the index from ``tools`` (the whole new set, as for
        :meth:`build`), embedding only new and changed tools, and switches to
        it; searches running meanwhile finish on the old one. Returns the build
        report (``new``, ``changed``, ``removed``, ``embedded_texts``, ...).
        Ctrl-C stops it; the index stays as it was."""
        items, paths = prepare(tools)
        self.report = self._ix.update(items, paths, namespace, progress, _limits(limits))
        return self.report

    def get(self, id: str) -> dict[str, Any] | None:
        """The definition of tool ``id`` (or its ``tool://`` handle), or ``None``."""
        text = self._ix.tool_json(id)
        if text is None:
            return None
        tool: dict[str, Any] = json.loads(text)
        return tool

    @property
    def path(self) -> str:
        """The index folder."""
        return os.fspath(self._ix.path)

    @property
    def lexical_only(self) -> bool:
        """Whether the index was built without the embedding model (BM25 only)."""
        return self._ix.lexical_only

    @property
    def model(self) -> str | None:
        """The id of the model the index was built with, or ``None``."""
        return self._ix.model_id

    def __len__(self) -> int:
        return len(self._ix)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        """Every tool's definition, in index order."""
        tools: list[dict[str, Any]] = json.loads(self._ix.tools_json())
        return iter(tools)

    def __contains__(self, id: object) -> bool:
        return isinstance(id, str) and self._ix.has(id)

    def __repr__(self) -> str:
        kind = "lexical-only" if self.lexical_only else "hybrid"
        return f"<toolrag.Index of {len(self)} tools ({kind}) at {self.path!r}>"
