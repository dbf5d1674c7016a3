"""The errors of an adapter whose framework is not installed, or is a release
the adapter cannot run with."""

from __future__ import annotations

from ._errors import MissingExtra


def missing_extra(adapter: str, extra: str, cause: ImportError) -> MissingExtra:
    """The error for ``toolrag.<adapter>`` imported without what the extra
    ``extra`` installs (or with a release too old to have what it imports)."""
    missing = cause.name or str(cause)
    return MissingExtra(
        f"toolrag.{adapter} needs its framework, which is not installed or too old ({missing}): "
        f"pip install 'toolrag[{extra}]'",
        extra=extra,
        name=cause.name,
    )
