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

    def __str__(self) -> str:
        # The message, also for the OSError subclasses, whose own str() is
        # "[Errno None] None: 'file'" once ``filename`` is set.
        return self.message


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


class FileMissing(Error, FileNotFoundError):
    """A file toolrag was given does not exist, such as the ``config=`` of
    :meth:`toolrag.Index.build`. ``path`` (and ``filename``) name it."""

    path: str


class MissingExtra(Error, ImportError):
    """An adapter was imported without its framework. ``extra`` is the
    package extra that installs it: ``pip install 'toolrag[<extra>]'``."""

    extra: str


class IncompatibleFramework(Error, RuntimeError):
    """The installed release of a framework cannot run with the adapter (a
    known break between two of its packages); the message says which
    versions work."""


class IndexCorrupted(Error):
    """An index file is damaged or was made by another version; ``path`` names
    the file when it is known. Rebuild the index."""

    path: str | None = None


class ModelMissing(Error):
    """The embedding model cannot be found or loaded. The message says where it
    was looked for and how to get one; ``Index.build(..., lexical_only=True)``
    builds without it."""


class PlanAborted(Error):
    """No plan the model proposed passed the gate, and the retry budget is spent.

    ``attempts`` is how many proposals were made (``1 + max_retry``);
    ``verdicts`` is every attempt's verdict, in order, each a dict with
    ``valid``, ``violations`` (``code``, ``path``, ``message``) and
    ``requiresApproval``; ``verdict`` is the last of them; ``history`` has
    each attempt's ``attempt``, ``answer`` (the model's text), ``verdict`` and
    ``seconds``.
    """

    attempts: int
    verdict: dict[str, Any]
    verdicts: list[dict[str, Any]]
    history: list[dict[str, Any]]

    def __init__(
        self,
        message: str,
        attempts: int = 0,
        verdicts: list[dict[str, Any]] | None = None,
        history: list[dict[str, Any]] | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message, **details)
        self.attempts = attempts
        self.verdicts = verdicts or []
        self.history = history or []
        if not hasattr(self, "verdict"):
            self.verdict = self.verdicts[-1] if self.verdicts else {}


class NoCandidates(Error, LookupError):
    """:meth:`toolrag.Index.plan` found no tool to offer the plan model: the
    filters (``namespace``) leave none, or nothing matches the request. The
    model is not asked, since a plan must cite at least one offered tool."""


class PlannerUnavailable(Error, ConnectionError):
    """The plan model could not be asked: it cannot be reached, it timed out,
    it answered an HTTP error, or it answered something that is no chat
    completion. No retry is spent on it.

    ``url`` is the endpoint that was posted to; ``reason`` is
    ``"unreachable"``, ``"timeout"``, ``"http"`` or ``"bad_response"``;
    ``status`` is the HTTP status when ``reason`` is ``"http"``, else ``None``.
    The message never holds the API key.
    """

    url: str | None = None
    reason: str | None = None
    status: int | None = None
