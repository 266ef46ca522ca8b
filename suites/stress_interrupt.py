"""Stress: Ctrl-C at random moments of ``gradcheck report`` and ``gradcheck diff``.

Not a test (pytest does not collect it; it takes minutes). Beside two processes that
keep both cores busy, each run starts a command in a session of its own, waits a drawn
moment (start-up, cases, budgets, snapshot, writing; a diff's worker start, checks,
timing), sends SIGINT (to the whole group, as a terminal's Ctrl-C, or to the command
alone, drawn) and measures how long the command takes to end, its exit status, the
processes of its session still alive when it ended and the files it left::

    PYTHONPATH=. python suites/stress_interrupt.py --runs 50 --seed 0

Every draw comes from ``numpy.random.default_rng(--seed)``. The exit status is 0 when
every interrupted run ended within ``--limit`` seconds (default 2) with status 130 (or
killed by the SIGINT itself during the interpreter's start-up, which a shell shows as
130 too), no "Traceback", no process and no file left.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suites._procs import alive_in_group  # noqa: E402
from suites.test_diff import SPEC, _repo  # noqa: E402  (the scratch repository)


@dataclass
class Outcome:
    command: str
    moment: float
    group: bool
    status: int | None = None
    seconds: float = float("nan")
    left_processes: int = 0
    #: the command lines of the processes left (what they were, for the report)
    left_what: tuple[str, ...] = ()
    left_files: tuple[str, ...] = ()
    traceback: bool = False
    #: the last lines of a traceback (where it came from)
    traceback_tail: str = ""
    finished_first: bool = False

    @property
    def completed(self) -> bool:
        """The SIGINT came after the work: the verdict's status and its whole output."""
        return self.status in (0, 1) and bool(self.left_files) and all(
            f.startswith("out/") and not f.startswith("out/.") for f in self.left_files)

    def ok(self, limit: float) -> bool:
        # -2: killed by the SIGINT itself, before gradcheck's code ran (the interpreter's
        # start-up, importing gradcheck); a shell shows it as exit status 130 too
        interrupted = (self.status in (130, -2) and not self.left_files
                       and not self.traceback)
        return self.finished_first or (self.seconds <= limit and not self.left_processes
                                       and (interrupted or self.completed))


def _command(kind: str, work: Path, repo: Path) -> tuple[list[str], Path]:
    if kind == "report":
        return ([sys.executable, "-m", "gradcheck.cli", "report", "--quick", "--jobs", "2",
                 "--out", str(work / "out" / "v.html")], ROOT)
    return ([sys.executable, "-m", "gradcheck.cli", "diff", "HEAD", "--subject", SPEC,
             "--quick", "--json", str(work / "out" / "d.json")], repo)


def run_once(kind: str, moment: float, group: bool, work: Path, repo: Path) -> Outcome:
    """One command, interrupted ``moment`` seconds after its start."""
    (work / "out").mkdir()
    (work / "tmp").mkdir()
    argv, cwd = _command(kind, work, repo)
    env = {**os.environ, "TMPDIR": str(work / "tmp"),
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    res = Outcome(kind, moment, group)
    with open(work / "stderr", "w+") as err, subprocess.Popen(
            argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err,
            start_new_session=True) as proc:
        try:
            time.sleep(moment)
            if proc.poll() is not None:
                res.finished_first, res.status = True, proc.returncode
                return res
            t0 = time.monotonic()
            if group:
                os.killpg(proc.pid, signal.SIGINT)
            else:
                proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                pass
            res.seconds = time.monotonic() - t0
            res.status = proc.poll()
            left = alive_in_group(proc.pid)
            res.left_processes, res.left_what = len(left), tuple(map(_cmdline, left))
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the session
            except ProcessLookupError:
                pass
            proc.wait()
        err.seek(0)
        text = err.read()
        res.traceback = "Traceback" in text
        if res.traceback:
            res.traceback_tail = " | ".join(text.strip().splitlines()[-4:])
    res.left_files = tuple(sorted(str(p.relative_to(work)) for p in
                                  [*(work / "out").iterdir(), *(work / "tmp").iterdir()]))
    return res


def _cmdline(pid: int) -> str:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return f"{pid} (ended)"
    return f"{pid}: " + raw.replace(b"\0", b" ").decode(errors="replace").strip()[:120]


def _cpu() -> str:
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return "unknown CPU"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--report-span", type=float, default=18.0,
                    help="moments of a report are drawn in [0, this) seconds")
    ap.add_argument("--diff-span", type=float, default=2.0,
                    help="moments of a diff are drawn in [0, this) seconds")
    ap.add_argument("--no-busy", action="store_true", help="no busy processes beside")
    ap.add_argument("--commands", default="report,diff",
                    help="the commands run in turn (report, diff or both)")
    args = ap.parse_args()
    if not set(args.commands.split(",")) <= {"report", "diff"}:
        ap.error(f"--commands: report, diff or both, got {args.commands!r}")
    rng = np.random.default_rng(args.seed)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the finally stops the busy
    # a background job of a shell starts with SIGINT ignored, and so would the commands:
    # a handler (reset to the default by exec) gives them the terminal's disposition
    signal.signal(signal.SIGINT, signal.default_int_handler)
    busy = [] if args.no_busy else [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    outcomes = []
    try:
        with tempfile.TemporaryDirectory(prefix="stress-") as scratch:
            (Path(scratch) / "git").mkdir()
            repo = _repo(Path(scratch) / "git")
            for k in range(args.runs):
                kinds = args.commands.split(",")
                kind = kinds[k % len(kinds)]
                span = args.report_span if kind == "report" else args.diff_span
                moment = float(rng.uniform(0.0, span))
                group = bool(rng.random() < 0.5)
                work = Path(scratch) / f"run{k}"
                work.mkdir()
                o = run_once(kind, moment, group, work, repo)
                outcomes.append(o)
                print(f"{k:3d} {kind:6s} at {moment:6.2f} s "
                      f"{'group' if group else 'parent'}: "
                      + ("finished before the interrupt" if o.finished_first else
                         f"completed (exit {o.status} in {o.seconds:.2f} s, "
                         f"{o.left_processes} process(es) left, {list(o.left_files)})"
                         if o.completed else
                         f"exit {o.status} in {o.seconds:.2f} s, {o.left_processes} "
                         f"process(es) left {list(o.left_what)}, files left "
                         f"{list(o.left_files)}"
                         + (", TRACEBACK" if o.traceback else "")), flush=True)
    finally:
        for b in busy:
            b.kill()
            b.wait()
    hit = [o for o in outcomes if not o.finished_first]
    good = [o for o in hit if o.ok(args.limit)]
    done = [o for o in good if o.completed]
    print(f"\n{_cpu()}, {os.cpu_count()} logical CPUs; "
          f"{'no busy process' if args.no_busy else 'two busy processes'} beside")
    print(f"{len(hit)} of {len(outcomes)} runs interrupted ({len(outcomes) - len(hit)} had "
          f"finished first); {len(good)} ended within {args.limit:g} s with no process "
          f"left: {len(good) - len(done)} with exit 130 and no file left, {len(done)} "
          f"after their work (the SIGINT came while the interpreter exited: the verdict's "
          f"status and the whole output)")
    for o in hit:
        if not o.ok(args.limit):
            print(f"NOT OK: {o}")
    early = [o for o in hit if o.status == -2]
    print(f"exit statuses: {sorted({o.status for o in hit}, key=str)}; "
          f"{len(early)} killed by SIGINT during start-up (-2, 130 in a shell; "
          f"{sum(o.traceback for o in early)} of them printed Python's KeyboardInterrupt "
          "traceback: the SIGINT came while the interpreter imported, before the "
          "command's handler), "
          f"{sum(o.traceback for o in hit if o.status != -2)} other run(s) printed a "
          "traceback")
    if hit:
        secs = sorted(o.seconds for o in hit)
        print(f"time to end after SIGINT: median {secs[len(secs) // 2]:.2f} s, "
              f"max {secs[-1]:.2f} s")
    return 0 if len(good) == len(hit) else 1


if __name__ == "__main__":
    sys.exit(main())
