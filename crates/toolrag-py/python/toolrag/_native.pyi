"""Typed stubs of the native extension (Rust, PyO3). Users import ``toolrag``."""

from os import PathLike
from typing import Any

def run_cli(argv: list[str]) -> int: ...
def version() -> str: ...
def default_model_name() -> str: ...
def lint(
    tools: list[dict[str, Any]] | None,
    paths: list[str] | None,
    config: str | None,
    namespace: str,
    lexical: bool,
    limits: list[tuple[str, int]],
) -> list[dict[str, Any]]: ...
def gate(plan_json: str, offered_json: str | None, index: Index | None) -> str: ...

class Index:
    @staticmethod
    def build(
        tools: list[dict[str, Any]] | None,
        paths: list[str] | None,
        path: str | None,
        config: str | None,
        model: str | None,
        namespace: str,
        progress: bool,
        lexical_only: bool,
        limits: list[tuple[str, int]],
    ) -> tuple[Index, dict[str, Any]]: ...
    @staticmethod
    def open(path: str, config: str | None, model: str | None) -> Index: ...
    def search(self, request: str, k: int, mode: str, namespaces: list[str]) -> list[Hit]: ...
    def khipu(self, request: str, k: int, mode: str, namespaces: list[str]) -> dict[str, Any]: ...
    def plan(
        self,
        request: str,
        k: int,
        mode: str,
        namespaces: list[str],
        url: str,
        model: str | None,
        api_key: str | None,
        max_retry: int,
        timeout: float,
        prompt: str | None,
        constrain: bool,
    ) -> str: ...
    def update(
        self,
        tools: list[dict[str, Any]] | None,
        paths: list[str] | None,
        namespace: str,
        progress: bool,
        limits: list[tuple[str, int]],
    ) -> dict[str, Any]: ...
    def tools_json(self) -> str: ...
    def tool_json(self, id: str) -> str | None: ...
    def has(self, id: str) -> bool: ...
    def __len__(self) -> int: ...
    @property
    def path(self) -> PathLike[str]: ...
    @property
    def lexical_only(self) -> bool: ...
    @property
    def model_id(self) -> str | None: ...

class Hit:
    """One tool found by a search."""

    @property
    def id(self) -> str:
        """The tool's id, ``<namespace>/<name>`` unless its definition gives one."""
    @property
    def name(self) -> str:
        """The name the tool is called by."""
    @property
    def namespace(self) -> str:
        """The tool's namespace: its MCP server, folder or file."""
    @property
    def server(self) -> str:
        """The MCP server (or registry namespace) the tool belongs to."""
    @property
    def score(self) -> float:
        """The fused score; higher is better."""
    @property
    def rank(self) -> int:
        """The rank, from 1."""
    @property
    def summary(self) -> str:
        """The first sentence of the description."""
    @property
    def pinned(self) -> bool:
        """Whether the tool is in the result because it is pinned."""
    @property
    def source(self) -> str | None:
        """Where the tool was read from: ``file:line:column``, or ``tools[i]``."""
    @property
    def handle(self) -> str:
        """The tool's handle, ``tool://<id>``."""
    @property
    def tool(self) -> dict[str, Any]:
        """The tool's full, normalised definition."""
    def tool_json(self) -> str: ...
