"""Command line: ``gradcheck report``, ``gradcheck --help``, ``gradcheck --version``."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from . import __version__

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gradcheck",
        description="Verify hand-written backpropagation in NumPy.",
    )
    p.add_argument("--version", action="version", version=f"gradcheck {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    r = sub.add_parser(
        "report",
        help="verify the reference model and write an HTML (and JSON) report",
        description="Run the verification of the reference model and write a "
        "self-contained HTML report plus a JSON file beside it.",
    )
    r.add_argument(
        "--out", default="reports/verification.html", metavar="PATH",
        help="where to write the HTML (default: %(default)s); the JSON goes beside it",
    )
    r.add_argument("--quick", action="store_true", help="a smaller run (about a minute)")
    r.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    r.add_argument("--no-progress", action="store_true", help="do not show progress")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gradcheck`` command; returns the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "report":
        if args.seed < 0:
            parser.error("--seed must be a non-negative integer")
        if not args.out.endswith((".html", ".htm")):
            parser.error(f"--out must name an .html file, got {args.out!r}")
        from .verify import run_verification

        ok = run_verification(
            out=args.out, quick=args.quick, seed=args.seed, progress=not args.no_progress
        )
        return 0 if ok else 1
    parser.error(f"unknown command {args.command!r}")  # pragma: no cover
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
