"""``python -m toolrag``: the same as the ``toolrag`` command."""

from ._cli import main

main()
