"""A Ctrl-C while the ``gradcheck`` command is still importing: nothing has started and
nothing needs cleaning, so it ends at once with status 130 rather than a traceback from
the middle of an import. Installed only in the command's own process (``python -m
gradcheck.cli``, or the ``gradcheck`` script), never in one that imports the package;
:func:`gradcheck.cli.main` puts Python's handler back before any work starts.
"""

from __future__ import annotations

import os
import signal
import sys
from typing import Any

__all__ = ["install_if_command", "starting_interrupt"]


def starting_interrupt(signum: int, frame: Any) -> None:
    """End the starting command with 130, printing nothing."""
    os._exit(130)


def install_if_command() -> None:
    """Install :func:`starting_interrupt` when this process is the command itself."""
    argv = list(getattr(sys, "orig_argv", []))
    by_module = "-m" in argv[:-1] and argv[argv.index("-m") + 1] == "gradcheck.cli"
    by_script = bool(sys.argv) and os.path.basename(sys.argv[0]) == "gradcheck"
    if (by_module or by_script) and signal.getsignal(signal.SIGINT) is \
            signal.default_int_handler:
        signal.signal(signal.SIGINT, starting_interrupt)
