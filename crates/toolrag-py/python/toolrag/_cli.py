"""The ``toolrag`` console script: the Rust command line, run in this process."""

from __future__ import annotations

import signal
import sys


def main() -> None:
    """Runs ``toolrag`` with this process's arguments and exits with its status."""
    from . import _native, _runtime

    _runtime.ensure()
    # Ctrl-C stops the command as it stops the binary: Python's own handler
    # would only set a flag that nothing reads while Rust runs.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    sys.stdout.flush()
    sys.exit(_native.run_cli(["toolrag", *sys.argv[1:]]))


if __name__ == "__main__":
    main()
