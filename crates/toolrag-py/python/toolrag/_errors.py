"""toolrag's exceptions. Every error the library raises is a :class:`Error`."""

from __future__ import annotations

from typing import Any


class Error(Exception):
    """Something toolrag could not do. The message says what, and how to fix it."""

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        for key, value in details.items():
            setattr(self, key, value)


class InvalidRegistry(Error, ValueError):
    """A tool definition is invalid.

    ``errors`` lists every problem, not only the first: each a dict with
    ``file`` (a registry file, or ``tools[i]`` for the i-th tool handed over
    in memory), ``line`` and ``column`` (``None`` in memory) and ``message``
    (which names the tool and the field).
    """

    errors: list[dict[str, Any]]

    def __init__(self, message: str, errors: list[dict[str, Any]] | None = None, **details: Any) -> None:
        super().__init__(message, **details)
        self.errors = errors or []


class InvalidInput(Error, ValueError):
    """A request or an option is invalid: an empty query, ``k=0``, an unknown
    mode, a bad ``toolrag.toml`` (with its file, line and key)."""


class IndexNotFound(Error, FileNotFoundError):
    """There is no index in the folder: build one with :meth:`toolrag.Index.build`
    or ``toolrag index``. ``path`` is the folder."""

    path: str


class IndexCorrupted(Error):
    """An index file is damaged or was made by another version; ``path`` names
    the file when it is known. Rebuild the index."""

    path: str | None = None


class ModelMissing(Error):
    """The embedding model cannot be found or loaded. The message says where it
    was looked for and how to get one; ``Index.build(..., lexical_only=True)``
    builds without it."""
