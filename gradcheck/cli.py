"""Command line: ``gradcheck report | snapshot | compare | diff``, ``--help``, ``--version``."""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ._startup import starting_interrupt
from ._version import __version__
from .subject import DEFAULT_SUBJECT

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="gradcheck",
        description="Verify hand-written backpropagation in NumPy.",
    )
    p.add_argument("--version", action="version", version=f"gradcheck {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    _report_parser(sub)
    s = sub.add_parser(
        "snapshot",
        help="record a subject's snapshot cases (its loss and gradients, say) into a "
        "directory",
        description="Record the subject's snapshot cases (Subject.snapshot_cases; the "
        "default subject's: its loss and every parameter gradient in fixed cases): one .npz "
        "per case and a manifest.json with shapes, dtypes and sha256.",
    )
    s.add_argument("--out", required=True, metavar="DIR", help="snapshot directory")
    _subject_option(s)
    c = sub.add_parser(
        "compare",
        help="recompute a subject's snapshot cases and compare with a snapshot",
        description="Exit status 0 when every array agrees within tolerance, 1 when "
        "anything drifted (named with its max abs/rel difference and worst index), 2 when "
        "the snapshot cannot be read.",
    )
    c.add_argument("directory", metavar="DIR", help="snapshot directory")
    for dtype, (rtol, atol) in (("float64", (1e-9, 1e-12)), ("float32", (1e-4, 1e-6))):
        c.add_argument(f"--rtol-{dtype}", type=float, default=rtol, metavar="X",
                       help=f"relative tolerance for {dtype} (default %(default)g)")
        c.add_argument(f"--atol-{dtype}", type=float, default=atol, metavar="X",
                       help=f"absolute tolerance for {dtype} (default %(default)g)")
    c.add_argument("--json", metavar="PATH", help="also write the comparison as JSON")
    _subject_option(c)
    _diff_parser(sub)
    return p


def _report_parser(sub: Any) -> None:
    """The options of ``gradcheck report``."""
    r = sub.add_parser(
        "report",
        help=f"verify a subject (default: {DEFAULT_SUBJECT}) and write an HTML (and JSON) "
        "report",
        description=f"Run the verification of a subject (default: {DEFAULT_SUBJECT}) and write a "
        "self-contained HTML report plus a JSON file beside it. The verdict is PASS, FAIL "
        "or INCOMPLETE (nothing failed, but a criterion that needs a test run was not "
        "run, or a budget was not measured on a busy machine); the exit status is 1 on "
        "FAIL (and on INCOMPLETE with --strict), 2 on bad arguments, a subject that cannot "
        "be loaded or an error of gradcheck itself (one line, no report), 130 when "
        "interrupted, else 0. A case "
        "that raises, crashes or runs past --case-timeout is a status in the report "
        "(error, crashed, timeout), not the end of the run.",
    )
    r.add_argument(
        "--out", default="reports/verification.html", metavar="PATH",
        help="where to write the HTML (default: %(default)s); the JSON goes beside it",
    )
    size = r.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true",
                      help="a smoke run of every section (about 30 s on 2 cores)")
    size.add_argument("--full", action="store_true",
                      help="every configuration, the whole training grid, every budget "
                      "(at most 5 minutes on 2 cores); the default checks a representative "
                      "set in about a minute")
    r.add_argument("--with-tests", action="store_true",
                   help="run the test suites first (coverage, test results), so that one "
                   "command gives all 12 criteria")
    r.add_argument("--strict", action="store_true",
                   help="exit 1 on an incomplete verdict too (a criterion not run)")
    r.add_argument("--jobs", type=int, default=None, metavar="N",
                   help="worker processes, each with one BLAS thread (default: the number "
                   "of cores, at most 2)")
    r.add_argument("--seed", type=int, default=0, help="seed of every random draw (default 0)")
    r.add_argument("--snapshots", metavar="DIR", default=None,
                   help="a snapshot directory to compare the subject with (default: the "
                   "subject's snapshot_dir, if it declares one)")
    r.add_argument("--case-timeout", type=float, default=None, metavar="SECONDS",
                   help="time limit of each layer or model case, which runs in a process "
                   "of its own (default 300; the slowest case of the default subject "
                   "took 20 s on a busy 2-core machine); a case past it gets status "
                   "'timeout', one that raises 'error', one whose process dies 'crashed', "
                   "and the others still run. The subject's training runs and budgets get "
                   "ten times as long. 'inf' means no limit")
    r.add_argument("--markdown", metavar="PATH", default=None,
                   help="also append a short Markdown summary (verdict, what failed with "
                   "hint and seed, criteria not met) to PATH, created if missing: "
                   "--markdown \"$GITHUB_STEP_SUMMARY\" in a GitHub Actions step. Appended "
                   "in one write, not atomically; the HTML and JSON are replaced atomically")
    r.add_argument("--no-progress", action="store_true", help="do not show progress")
    _subject_option(r)


def _subject_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--subject", metavar="MODULE:NAME", default=None,
                   help=f"the gradcheck.Subject to verify (default: {DEFAULT_SUBJECT})")


def _load(spec: str | None) -> tuple[str, object]:
    """``(spec, Subject)``; a bad spec prints one line and exits with status 2."""
    from .subject import SubjectError, load_subject

    spec = spec or DEFAULT_SUBJECT
    if "" not in sys.path and "." not in sys.path:
        sys.path.insert(0, "")  # MODULE may be a file in the current folder, as for python -m
    try:
        return spec, load_subject(spec)
    except SubjectError as exc:
        print(f"gradcheck: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def _cases(spec: str | None) -> Any:
    _, subject = _load(spec)
    cases = getattr(subject, "snapshot_cases", None)
    if cases is None:
        print(f"gradcheck: the subject {spec or DEFAULT_SUBJECT} declares no "
              "snapshot_cases", file=sys.stderr)
        raise SystemExit(2)
    return cases


def _diff_parser(sub: Any) -> None:
    d = sub.add_parser(
        "diff",
        help="regression-check the working tree against a git revision (correctness, "
        "values, speed side by side)",
        description=f"Check every layer and model case of a subject (default: "
        f"{DEFAULT_SUBJECT or 'none installed'}) at BASE and at the working tree (or "
        "--head REV), compare their values with "
        "the dtype tolerances of compare, and time every forward, backward and training "
        "step in both revisions alternately. BASE is written out in a temporary folder, "
        "removed afterwards. Exit status 0: no regression; 1: a check that went ok -> fail "
        "(or ok -> error, crashed, timeout), "
        "drift outside a fix, or a slowdown; 2: cannot run (not a git tree, unknown "
        "revision, bad subject, the repository's code imported from outside a "
        "revision's folder, or a subject outside the repository whose cases import none "
        "of it). A subject missing at BASE runs against BASE's code; one outside the "
        "repository (on PYTHONPATH) runs at both, with each revision's code.",
    )
    d.add_argument("base", metavar="BASE", help="a git revision: a branch, HEAD~1, "
                   "origin/main, a commit id")
    d.add_argument("--head", metavar="REV", default=None,
                   help="compare this revision instead of the working tree")
    size = d.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="the subject's quick model cases, "
                      "fewer timed pairs")
    size.add_argument("--full", action="store_true", help="the subject's full model cases, "
                      "more timed pairs")
    d.add_argument("--max-slowdown", type=float, default=1.25, metavar="X",
                   help="HEAD/BASE time ratio beyond which (beyond the noise) a case is a "
                   "regression (default %(default)g; inf: timed, never a regression)")
    d.add_argument("--no-speed", action="store_true", help="do not time anything")
    d.add_argument("--speed-floor", type=float, default=None, metavar="SECONDS",
                   help="a call whose CPU time changed by less than this is 'too fast' to "
                   "time: reported, never a regression (default 2e-05)")
    d.add_argument("--seed", type=int, default=0, help="seed of the checks and values "
                   "(default 0)")
    d.add_argument("--case-timeout", type=float, default=None, metavar="SECONDS",
                   help="time limit of each case's check, values and timed runs at each "
                   "revision (default: as gradcheck report, 300; 'inf' means no limit). A "
                   "case past it gets status 'timeout' at that revision, one whose process "
                   "dies 'crashed' (with the signal or exit status), one that raises "
                   "'error'; its worker is replaced and the other cases still run. Bad at "
                   "HEAD only: a regression; at BASE only: a fix")
    d.add_argument("--json", metavar="PATH", help="also write the result as JSON")
    d.add_argument("--markdown", metavar="PATH", help="also append a short Markdown summary "
                   "to PATH (created if missing; appended, as $GITHUB_STEP_SUMMARY expects, "
                   "in one write, not atomically)")
    d.add_argument("--html", metavar="PATH", help="also write an HTML page")
    d.add_argument("--no-progress", action="store_true", help="do not show progress")
    _subject_option(d)
    d.set_defaults(diff_parser=d)  # its own usage line for the option errors of _diff


def _diff(args: Any, top: argparse.ArgumentParser) -> int:
    from .diff.run import DiffError, run_diff, subject_form_error

    parser = getattr(args, "diff_parser", top)
    if args.subject is not None and (why := subject_form_error(args.subject)):
        parser.error(why)
    if args.seed < 0:
        parser.error("--seed must be a non-negative integer")
    if not args.max_slowdown > 1.0:
        parser.error("--max-slowdown must be a number > 1 (inf: never a regression)")
    from .diff.run import SPEED_FLOOR

    floor = SPEED_FLOOR if args.speed_floor is None else args.speed_floor
    if not 0 <= floor < float("inf"):
        parser.error("--speed-floor must be a finite number of seconds >= 0")
    from .run._pool import DEFAULT_CASE_TIMEOUT

    limit = DEFAULT_CASE_TIMEOUT if args.case_timeout is None else args.case_timeout
    if not limit > 0:
        parser.error("--case-timeout must be a positive number of seconds")

    def say(text: str) -> None:
        if not args.no_progress:
            print(f"gradcheck diff: {text}", file=sys.stderr, flush=True)

    try:
        result = run_diff(args.base, head=args.head, subject=args.subject,
                          level="quick" if args.quick else "full" if args.full else "default",
                          seed=args.seed, max_slowdown=args.max_slowdown,
                          case_timeout=limit, progress=say, speed=not args.no_speed,
                          speed_floor=floor)
    except DiffError as exc:
        print(f"gradcheck diff: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("gradcheck diff: interrupted (temporary folders removed)", file=sys.stderr)
        return 130
    wrote = _diff_files(args, result)
    from .diff._diffrender import render_text

    _print_quietly(render_text(result))
    if wrote:  # whatever the progress setting: where the result is
        print(f"gradcheck diff: {'; '.join(wrote)} ({result.verdict.upper()})",
              file=sys.stderr, flush=True)
    return result.exit_code


def _diff_files(args: Any, result: Any) -> list[str]:
    """Write the diff's --json, --markdown and --html (before printing: a closed pipe on
    stdout must not lose them): rendered first, then written in one step that Ctrl-C
    does not cut. What was written, as the lines that say so."""
    from .diff._diffrender import render_diff_html, render_markdown
    from .report.render import to_json
    from .run._interrupt import deferred_interrupt
    from .run._io import append_text, write_all_atomic

    files: dict[Path, bytes] = {}
    if args.json:
        files[Path(args.json)] = (to_json(result.to_dict()) + "\n").encode("utf-8")
    if args.html:
        files[Path(args.html)] = render_diff_html(result).encode("utf-8")
    summary = render_markdown(result) if args.markdown else ""
    with deferred_interrupt():
        write_all_atomic(files)
        if args.markdown:
            append_text(Path(args.markdown), summary)
    return ([f"wrote {p}" for p in files]
            + ([f"appended to {args.markdown}"] if args.markdown else []))


def _print_quietly(text: str) -> None:
    """Print ``text``; a reader that closed the pipe (``| head``) ends the output
    quietly: the rest goes to ``os.devnull``, so that neither this print nor the flush
    at exit raises ``BrokenPipeError`` (the exit status stays the verdict's)."""
    try:
        print(text, flush=True)
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def _report(parser: argparse.ArgumentParser, args: argparse.Namespace, jobs: int) -> int:
    """``gradcheck report``: the exit status of its verdict; 130 when interrupted."""
    from .report.verify import run_verification
    from .run._pool import DEFAULT_CASE_TIMEOUT

    limit = DEFAULT_CASE_TIMEOUT if args.case_timeout is None else args.case_timeout
    if not limit > 0:
        parser.error("--case-timeout must be a positive number of seconds")
    spec, _subject = _load(args.subject)
    try:
        verdict = run_verification(
            out=args.out, level="quick" if args.quick else "full" if args.full else "default",
            seed=args.seed, progress=not args.no_progress, jobs=jobs,
            with_tests=args.with_tests, subject=spec, snapshots=args.snapshots,
            case_timeout=limit, markdown=args.markdown,
        )
    except KeyboardInterrupt as exc:
        from .report.verify import REPORT_WRITTEN

        done = (f"the report was written ({args.out})" if str(exc) == REPORT_WRITTEN
                else "no report was written")
        print(f"gradcheck report: interrupted; the workers were stopped and {done}",
              file=sys.stderr)
        return 130
    except Exception as exc:  # gradcheck's own failure: one line, never a traceback
        if os.environ.get("GRADCHECK_TRACEBACK"):
            raise
        from .run._pool import fault_of

        print(f"gradcheck report: internal error, no report written: "
              f"{fault_of(exc).describe()} (GRADCHECK_TRACEBACK=1 shows the traceback)",
              file=sys.stderr)
        return 2
    if verdict == "fail" or (verdict == "incomplete" and args.strict):
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``gradcheck`` command; returns the exit status (130 when
    interrupted, at any moment: the commands stop their workers and remove their
    temporary files before the interruption reaches here)."""
    if signal.getsignal(signal.SIGINT) is starting_interrupt:  # Python's handler again
        signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        code = _main(argv)
        if argv is None:  # done: a Ctrl-C while the interpreter exits changes nothing
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        return code
    except KeyboardInterrupt:
        if argv is None:  # the process's own command: already ending
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        print("gradcheck: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
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
        jobs = args.jobs if args.jobs is not None else max(1, min(2, os.cpu_count() or 1))
        if jobs < 1:
            parser.error("--jobs must be a positive integer")
        return _report(parser, args, jobs)
    if args.command == "snapshot":
        from .report.snapshot import snapshot

        cases = _cases(args.subject)
        manifest = snapshot(Path(args.out), cases)
        print(f"wrote {len(manifest['cases'])} cases to {args.out}")
        return 0
    if args.command == "compare":
        from .report.snapshot import SnapshotError, compare

        tol = {}
        for dtype in ("float64", "float32"):
            rtol = getattr(args, f"rtol_{dtype}")
            atol = getattr(args, f"atol_{dtype}")
            if not (rtol >= 0 and atol >= 0):
                parser.error(f"--rtol-{dtype} and --atol-{dtype} must be >= 0")
            tol[dtype] = (rtol, atol)
        if not Path(args.directory).is_dir():
            parser.error(f"{args.directory}: no such snapshot directory")
        cases = _cases(args.subject)
        try:
            result = compare(Path(args.directory), tol, cases)
        except SnapshotError as exc:
            print(f"gradcheck compare: {exc}", file=sys.stderr)
            return 2
        print(result.report())
        if args.json:
            from .report.render import write_json

            write_json(Path(args.json), result.to_dict())
        return 0 if result.passed else 1
    if args.command != "diff":  # pragma: no cover - argparse knows the commands
        parser.error(f"unknown command {args.command!r}")
    return _diff(args, parser)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
