"""``gradcheck diff BASE``: regression-check a change of backprop code against a revision.

The working tree (or ``head=REV``) is compared with ``BASE``, any git revision. BASE is
written out in a temporary folder (``git archive``: the user's tree, index and ``.git``
are never touched) and removed afterwards, also on Ctrl-C. Each revision's subject runs
in its own worker process with that revision's folder first on ``sys.path`` and the
running gradcheck (:mod:`gradcheck.diff._diffworker`). Three comparisons, per case:

correctness
    every layer case (each dtype) and every model case of the level is checked at both
    revisions: ``ok -> ok``, ``ok -> fail`` (a regression, named with the input or
    parameter and the hint), ``fail -> ok`` (a fix), ``fail -> fail``; a case only at
    HEAD is ``new`` (and a regression if it fails), one only at BASE ``removed``.
    A case that raises, kills its worker or runs past ``case_timeout`` is ``error``,
    ``crashed`` or ``timeout`` at that revision (the worker is replaced; the others
    still run): bad at HEAD only is a regression, at BASE only a fix.
values
    each layer case's output and gradients at a fixed seed (seeded cotangent) and each
    snapshot case are computed at both revisions and compared with the dtype tolerances
    of ``gradcheck compare`` (:func:`gradcheck.report.snapshot.compare_arrays`); drift is named
    by case, array and worst index. Drift of a case whose check went ``fail -> ok`` (for
    snapshot cases: when any check went ``fail -> ok``) is part of the fix.
speed
    every layer case's forward and backward and every model case's training step are
    timed in both workers in turn (A B A B ..., both pinned to one core, after a warm-up
    and a calibration that makes one run last at least a millisecond; a sample is the
    least of five runs), by the CPU time of the worker's thread with one BLAS thread, so
    that a neighbour's load moves neither side. The figure is the median of the per-pair
    ratios HEAD/BASE with its standard error (as in
    :mod:`gradcheck.report.budgets`); a case is ``slower`` when ``median - 3 se`` exceeds
    ``max_slowdown``, ``faster`` when ``median + 3 se`` is below ``1 / max_slowdown``.
    Where wall time exceeds CPU time by more than a quarter, the row says the machine
    was busy. A call whose time changed by less than :data:`SPEED_FLOOR` a call is
    ``too fast`` to time: its ratio counts NumPy calls or memory layout, not work, and is
    never a regression; nor is
    the slowdown of a case whose check went from bad to ``ok`` (part of the fix). A case
    that is a fault (``error``, ``crashed``, ``timeout``) at either revision is not
    timed. ``speed=False`` (``--no-speed``) skips the phase.

A subject missing at BASE (written today, or untracked) is imported from HEAD's file
(or the working tree's) with BASE's code first on ``sys.path``; the result says so.
Each worker seeds the global generators of the user's code (``np.random.seed``,
``random.seed``) before building a case. A check regression and the drift of the same
case count as one regression (the drift is its evidence).

The verdict is ``fail`` (exit status 1) on a regression, drift outside a fix, or a
slowdown; :class:`DiffError` (exit status 2) when the diff cannot run, including when a
module of the repository was imported from outside the revision's folder (a
``PYTHONPATH`` entry or an editable install that still points into the working tree).
A subject whose module lies outside the repository (a folder of checks on
``PYTHONPATH``) is imported from there at both revisions, and the repository's modules
its cases import from each revision; it is refused only when, at a revision, its cases
imported no module of the repository (both sides would run the same code).
"""

from __future__ import annotations

import math
import os
import re
import statistics
import subprocess  # noqa: S404 - git with fixed arguments, no shell
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..report.budgets import gate
from ..run._interrupt import deferred_interrupt, stop_tracker
from ..run._pool import DEFAULT_CASE_TIMEOUT, FAULT_STATUSES, Fault
from ..subject import DEFAULT_SUBJECT
from ._changes import _case_changes, _fixed_by, _value_drift
from ._diffworker import WorkerError
from ._result import (
    _LABEL_LIMIT,
    DIFF_LEVELS,
    SPEED_FLOOR,
    CaseChange,
    DiffError,
    DiffResult,
    NotComputed,
    SpeedChange,
    ValueDrift,
)
from ._revision import Revision, RevisionError, materialised, repo_root
from ._worker import Worker, WorkerFault, relabelled

__all__ = ["DIFF_LEVELS", "SPEED_FLOOR", "CaseChange", "DiffError", "DiffResult",
           "NotComputed", "SpeedChange", "ValueDrift", "run_diff", "subject_form_error"]

# -- validation --------------------------------------------------------------------------------
def _validate(level: str, seed: int, max_slowdown: float, case_timeout: float,
              speed_floor: float, subject: str | None) -> None:
    if subject is not None and (why := subject_form_error(subject)):
        raise ValueError(why)
    if level not in DIFF_LEVELS:
        raise ValueError(f"level must be one of {', '.join(DIFF_LEVELS)}, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if isinstance(max_slowdown, bool) or not isinstance(max_slowdown, (int, float)) \
            or not max_slowdown > 1.0:
        raise ValueError(f"max_slowdown must be a number > 1 (inf: never a regression), "
                         f"got {max_slowdown!r}")
    if isinstance(case_timeout, bool) or not isinstance(case_timeout, (int, float)) \
            or not case_timeout > 0:
        raise ValueError(f"case_timeout must be a positive number of seconds (inf: no "
                         f"limit), got {case_timeout!r}")
    if isinstance(speed_floor, bool) or not isinstance(speed_floor, (int, float)) \
            or not 0 <= speed_floor < math.inf:
        raise ValueError(f"speed_floor must be a finite number of seconds >= 0, got "
                         f"{speed_floor!r}")


def subject_form_error(spec: str) -> str:
    """Why ``spec`` is not of the form ``MODULE:NAME`` ('' when it is): checked before
    any worker starts."""
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        return f"--subject must look like MODULE:NAME, got {spec!r}"
    return ""


def run_diff(
    base: str, *, head: str | None = None, subject: str | None = None,
    level: str = "default", seed: int = 0, max_slowdown: float = 1.25,
    case_timeout: float = DEFAULT_CASE_TIMEOUT, cwd: Path | None = None,
    progress: Callable[[str], None] | None = None, speed: bool = True,
    speed_floor: float = SPEED_FLOOR,
) -> DiffResult:
    """Compare the subject at ``head`` (default: the working tree) with ``base``.

    Parameters
    ----------
    base, head : str
        Git revisions (a branch, ``HEAD~1``, ``origin/main``, a commit id).
    subject : str, optional
        ``MODULE:NAME`` of a :class:`~gradcheck.Subject` (default: the installed
        default subject), imported at each revision from the folder of ``cwd``; missing
        at BASE: HEAD's file (or the working tree's) runs against BASE's code.
    level : str
        ``quick``, ``default`` or ``full``: the model cases and timed pairs of that
        level (:data:`DIFF_LEVELS`).
    seed : int
        Of every check, of the values' inputs and cotangents, of ``np.random``.
    max_slowdown : float
        HEAD/BASE time ratio beyond which (and beyond the noise) a case is slower
        (``inf``: timed, never a regression).
    case_timeout : float
        Seconds a case may take (``inf``: no limit): past it, or when its worker dies,
        the case is ``timeout`` or ``crashed`` at that revision.
    cwd, progress : path, callable, optional
        A folder in the git working tree (default: the current one); called per phase.
    speed, speed_floor : bool, float
        False: no timing (``--no-speed``); the CPU seconds a call under which, at both
        revisions, it is ``too fast`` to time (:data:`SPEED_FLOOR`).

    Raises
    ------
    DiffError
        Not a git tree, an unknown revision, a subject that cannot be loaded at HEAD,
        or the code under test not read from each revision.
    ValueError
        A bad option (a subject not of the form ``MODULE:NAME`` included)."""
    _validate(level, seed, max_slowdown, case_timeout, speed_floor, subject)
    say = progress or (lambda _s: None)
    t0 = time.perf_counter()
    spec = subject or DEFAULT_SUBJECT
    try:
        cwd = Path(cwd or os.getcwd()).resolve()
        root = repo_root(cwd)
        with ExitStack() as stack:
            stack.callback(stop_tracker)  # last: after the workers are stopped
            b, h, base_w, head_w = _start(stack, (root, cwd), (base, head), spec,
                                          case_timeout, say)
            result = DiffResult(b.name, b.commit, h.name, h.commit, spec, level, seed,
                                float(max_slowdown), float(case_timeout),
                                speed_floor=float(speed_floor), timed=bool(speed))
            _run(result, base_w, head_w, _TreeFiles(root, cwd), say)
    except (RevisionError, WorkerError, WorkerFault) as exc:
        raise DiffError(str(exc)) from None
    result.seconds = time.perf_counter() - t0
    return result


def _start(stack: ExitStack, where: tuple[Path, Path], revs: tuple[str, str | None],
           spec: str, case_timeout: float, say: Callable[[str], None]
           ) -> tuple[Revision, Revision, Worker, Worker]:
    """BASE written out (and HEAD, when a revision), and a worker for each; all of it
    undone when ``stack`` closes. ``where``: the repository's root and the folder the
    diff was started in."""
    root, cwd = where
    say(f"writing out {revs[0]} in a temporary folder")
    b = stack.enter_context(materialised(root, revs[0]))
    h = (stack.enter_context(materialised(root, revs[1])) if revs[1]
         else Revision("working tree", _head_commit(root), root))
    temp = {str(b.root): "BASE:", **({str(h.root): "HEAD:"} if revs[1] else {})}
    base_w, head_w = (_worker(stack, label, rev, root, cwd, spec, case_timeout, temp)
                      for label, rev in (("BASE", b), ("HEAD", h)))
    return b, h, base_w, head_w


def _worker(stack: ExitStack, label: str, rev: Revision, root: Path, cwd: Path, spec: str,
            case_timeout: float, temp: dict[str, str]) -> Worker:
    """The worker process of one revision, stopped when ``stack`` closes; the paths of
    the temporary folders in its answers read ``BASE:file.py:LINE``."""
    with deferred_interrupt():  # a started worker is one the stack stops
        w = Worker(label, rev.root, rev.root / cwd.relative_to(root), spec, root,
                   float(case_timeout))
        # politely at the end of a run; at once on an interruption or an error
        stack.push(lambda kind, _exc, _tb: w.close(politely=kind is None))
    for folder, name in temp.items():
        w.relabel[folder + os.sep] = name
        w.relabel[str(Path(folder).resolve()) + os.sep] = name
    return w


@dataclass(frozen=True)
class _TreeFiles:
    """The working tree, where a subject's module is looked for when a revision has
    none."""

    root: Path
    cwd: Path

    def module_file(self, spec: str) -> Path | None:
        """The working tree's file of the subject's module (None: not there)."""
        parts = spec.partition(":")[0].split(".")
        for folder in (self.cwd, self.root):
            for path in (folder.joinpath(*parts).with_suffix(".py"),
                         folder.joinpath(*parts, "__init__.py")):
                if path.is_file():
                    return path
        return None

    def label(self, file: str) -> str:
        path = Path(file)
        return str(path.relative_to(self.root)) if path.is_relative_to(self.root) else file


def _head_commit(root: Path) -> str:
    def git(*args: str) -> str:
        out = subprocess.run(["git", "--no-optional-locks", *args], cwd=root,  # noqa: S603, S607
                             capture_output=True, text=True, timeout=60, check=False)
        return out.stdout.strip()

    commit = git("rev-parse", "HEAD") or "no commit yet"
    dirty = git("status", "--porcelain", "--untracked-files=no")
    return commit + (" + uncommitted changes" if dirty else "")


# -- the run -----------------------------------------------------------------------------------
def _both(base: Worker, head: Worker, op: str, *args: Any) -> tuple[Any, Any]:
    """The same operation in both workers at once (for the untimed phases)."""
    base.send(op, *args)
    head.send(op, *args)
    setup = op in ("load", "prepare", "pin")
    return base.recv(setup=setup), head.recv(setup=setup)


def _answer(w: Worker) -> Any:
    """The worker's answer, or the :class:`Fault` of a worker that died or hung (it is
    replaced by a new one in the same state)."""
    try:
        return w.recv()
    except WorkerFault as exc:
        _restart(w)
        return exc.fault


def _restart(w: Worker) -> None:
    try:
        w.restart()
    except (WorkerFault, WorkerError) as exc:
        raise WorkerError(f"the {w.label} worker could not be started again after a "
                          f"fault: {exc}") from None


def _fault_summary(fault: Fault, seed: int) -> dict[str, Any]:
    return {"passed": False, "status": fault.status, "message": fault.message,
            "seed": seed, "hint": "", "inputs": [], "signal": fault.signal}


def _checks(result: DiffResult, base: Worker, head: Worker, base_keys: list[tuple[str, str]],
            head_keys: list[tuple[str, str]], say: Callable[[str], None]
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each case's check at both revisions at once; a worker that dies or hangs on a
    case gives that case its fault and is replaced."""
    sb: dict[str, Any] = {}
    sh: dict[str, Any] = {}
    for kind, name in head_keys + [k for k in base_keys if k not in head_keys]:
        sides = [(w, out) for w, out, keys in ((base, sb, base_keys), (head, sh, head_keys))
                 if (kind, name) in keys]
        for w, _ in sides:
            w.send("check", kind, name, result.seed)
        for w, out in sides:
            got = _answer(w)
            if isinstance(got, Fault):
                say(f"{name} at {w.label}: {got.describe()}")
                got = _fault_summary(got, result.seed)
            out[f"{kind}:{name}"] = got
    return sb, sh


def _load_both(result: DiffResult, base: Worker, head: Worker, tree: _TreeFiles,
               say: Callable[[str], None]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Import the subject in both workers; a subject missing at BASE (or at ``--head``)
    is borrowed from HEAD (or the working tree). Raises DiffError when it cannot run."""
    say(f"importing {result.subject} at both revisions")
    ib, ih = _both(base, head, "load", result.level, result.seed)
    head_note = ""
    if ih["status"] == "missing" and ih["module"] and result.head != "working tree" \
            and (file := tree.module_file(result.subject)):
        ih = head.call("load", result.level, result.seed, str(file))
        result.head_subject = "borrowed"
        head_note = (f"the subject is not in {result.head} either: the working tree's "
                     f"{tree.label(str(file))} ran at both revisions")
    if ih["status"] != "ok":
        raise DiffError(_unloadable(result, ib, ih, tree))
    if ib["status"] == "missing" and ib["module"]:
        ib = _borrow(result, base, head, ih, tree)
    if head_note:  # after BASE's note, in the order of the revisions
        result.notes.append(head_note)
    elif ib["status"] == "error":  # BASE's own subject: its cases are new
        ib = _unbuilt(result, "the subject could not be imported at BASE",
                      f"the subject cannot be imported at {result.base}: {ib['message']}; "
                      f"every case is new: {result.base} was not checked")
    for rev, info in ((result.base, ib), (result.head, ih)):
        _refuse_strays(rev, info.get("strays", []))
    result.environment = {"BASE blas": str(ib.get("blas", "")), "HEAD blas": ih["blas"]}
    if ib["status"] == "missing":
        result.notes.append(f"the subject is new: {ib['message']} at {result.base}, and its "
                            "module is BASE's code: BASE was not checked")
        result.base_checked = False
        result.base_unchecked = "the subject is new in a module of BASE's code"
        ib = {**ib, "layers": [], "models": [], "snapshots": []}
    return ib, ih


def _unloadable(result: DiffResult, ib: dict[str, Any], ih: dict[str, Any],
                tree: _TreeFiles) -> str:
    """The one line of a subject that cannot be imported at HEAD: where (HEAD, or both
    revisions when BASE failed alike), and ``PYTHONPATH=src`` when the missing module
    lies in the repository's ``src/`` folder."""
    where = ("at both revisions" if ib["status"] == ih["status"] and
             ib["message"] == ih["message"] else f"at {result.head}")
    line = f"--subject {result.subject}: {ih['message']} ({where})"
    found = re.search(r"no module named '([\w.]+)'", ih["message"])
    top = found.group(1).split(".")[0] if found else ""
    src = tree.root / "src"
    if top and ((src / top).is_dir() or (src / f"{top}.py").is_file()):
        line += (f"; {top} is in {tree.label(str(src))}/: run with "
                 f"PYTHONPATH={os.path.relpath(src, tree.cwd)}")
    return line


def _borrow(result: DiffResult, base: Worker, head: Worker, ih: dict[str, Any],
            tree: _TreeFiles) -> dict[str, Any]:
    """Run HEAD's (or the working tree's) subject file in the BASE worker, with BASE's
    code first on ``sys.path``; a subject that cannot be imported there makes every
    case ``error`` at BASE."""
    file = ih["file"]
    source = (f"the working tree's {tree.label(file)}" if Path(file).is_relative_to(tree.root)
              else f"{result.head}'s {relabelled(file, dict.fromkeys(head.relabel, ''))}")
    result.base_subject, result.subject_file = "borrowed", source
    ib = base.call("load", result.level, result.seed, file)
    if ib["status"] == "ok":
        result.notes.append(f"the subject is not in {result.base}: {source} ran against "
                            f"{result.base}'s code")
        return dict(ib)
    return _unbuilt(result, "the subject could not be imported with BASE's code",
                    f"the subject ({source}) cannot be imported with {result.base}'s code: "
                    f"{ib['message']}; every case is new: {result.base} was not checked. "
                    f"To compare the other cases at {result.base}, import names "
                    f"{result.base} lacks inside the case's factories (e.g. inside inputs= "
                    "or a lambda)")


def _unbuilt(result: DiffResult, short: str, note: str) -> dict[str, Any]:
    """The BASE side of a subject that cannot be imported there: no case; every case of
    HEAD is ``new`` (not a fix: nothing ran at BASE), ``note`` says why once, and the
    result is marked ``base_checked=False`` (``short``: the headline's reason)."""
    result.notes.append(note)
    result.base_checked, result.base_unchecked = False, short
    return {"status": "unbuilt", "message": note, "layers": [], "models": [],
            "snapshots": [], "inside": True, "strays": []}


def _refuse_strays(rev: str, strays: list[str]) -> None:
    """DiffError when a module of the repository came from outside the revision."""
    if strays:
        raise DiffError(f"at {rev}, {strays[0]} was imported from the working tree, not "
                        "from the revision (a PYTHONPATH entry or an editable install "
                        "points into the repository): nothing compared")


def _outside_subject(result: DiffResult, infos: tuple[dict[str, Any], dict[str, Any]],
                     imports: tuple[dict[str, Any], dict[str, Any]]) -> None:
    """A subject whose module lies outside the repository (a folder of checks on
    ``PYTHONPATH``) declares cases; the code under test is the repository's modules its
    cases imported, from each revision. A note names them; DiffError when, at a
    revision, they imported none: both sides run the same code there."""
    outside = [(rev, info["file"], got["own"]) for rev, info, got in
               zip((result.base, result.head), infos, imports, strict=True)
               if info["status"] == "ok" and not info["inside"]]
    for rev, file, own in outside:
        if not own:
            raise DiffError(f"at {rev}, the subject's module is {file}, outside the "
                            "repository, and its cases imported no module of the "
                            "repository: both sides would run the same code (import the "
                            "code under test from the repository in the subject, or name "
                            "a module of this repository with --subject MODULE:NAME)")
    for file in dict.fromkeys(f for _, f, _ in outside):
        revs = " and ".join(r for r, f, _ in outside if f == file)
        names = sorted({n for _, f, own in outside if f == file for n in own})
        shown = ", ".join(names[:4]) + (f" and {len(names) - 4} more" if names[4:] else "")
        result.notes.append(f"the subject's module {file} is outside the repository: it "
                            f"ran at {revs}, each with that revision's code ({shown})")


def _run(result: DiffResult, base: Worker, head: Worker, tree: _TreeFiles,
         say: Callable[[str], None]) -> None:
    ib, ih = _load_both(result, base, head, tree, say)
    keys = {"layer": (ib["layers"], ih["layers"]), "model": (ib["models"], ih["models"])}
    say("checking every layer and model case at both revisions (in parallel)")
    base_keys = [(k, n) for k, (bs, _) in keys.items() for n in bs]
    head_keys = [(k, n) for k, (_, hs) in keys.items() for n in hs]
    sb, sh = _checks(result, base, head, base_keys, head_keys, say)
    imports = _both(base, head, "imports")
    for rev, got in zip((result.base, result.head), imports, strict=True):
        _refuse_strays(rev, got["strays"])  # a case may import more of the repository
    _outside_subject(result, (ib, ih), imports)
    result.cases = _case_changes(sb, sh, base_keys, head_keys)
    bad = {(c.kind, c.case): c for c in result.cases if {c.base, c.head} & set(FAULT_STATUSES)}
    say("computing values (outputs, gradients, snapshot cases) at both revisions")
    for (_kind, name), c in bad.items():
        if {c.base, c.head} & {"crashed", "timeout"}:
            result.notes.append(f"{name}: values not compared (its check crashed or "
                                "timed out)")
    common = [kn for kn in head_keys if kn in base_keys and ib["status"] == "ok"]
    vb, vh = _values(base, head, _value_keys(common, bad) + [
        f"snapshot:{n}" for n in ih["snapshots"] if n in ib["snapshots"]], result.seed)
    result.values, result.compared_arrays = _value_drift(vb, vh, result)
    if not result.timed:
        return
    timed = [kn for kn in common if kn not in bad]
    for kind, name in (kn for kn in common if kn in bad):
        result.notes.append(f"{name}: not timed ({bad[kind, name].change}: a case that "
                            "is a fault at a revision is not timed)")
    result.speed = _speed(result, base, head, timed, say)


def _value_keys(common: list[tuple[str, str]], bad: dict[tuple[str, str], CaseChange]
                ) -> list[str]:
    """The layer cases whose values are computed: at both revisions, and neither
    crashed nor timed out."""
    return [f"layer:{n}" for k, n in common if k == "layer" and not (
        (k, n) in bad and {bad[k, n].base, bad[k, n].head} & {"crashed", "timeout"})]


def _values(base: Worker, head: Worker, keys: list[str], seed: int
            ) -> tuple[dict[str, Any], dict[str, Any]]:
    """``key -> ("ok", arrays, computed dtypes) | ("error", message)`` at both revisions."""
    vb: dict[str, Any] = {}
    vh: dict[str, Any] = {}
    for key in keys:
        base.send("value", key, seed)
        head.send("value", key, seed)
        for w, out in ((base, vb), (head, vh)):
            got = _answer(w)
            out[key] = ("error", got.describe()) if isinstance(got, Fault) else got
    return vb, vh


# -- speed -------------------------------------------------------------------------------------
def median_se(ratios: list[float]) -> tuple[float, float]:
    """Median of the pair ratios and its standard error ``1.2533 * 1.4826 * MAD /
    sqrt(n)`` (the estimate of :func:`gradcheck.report.budgets.ratio_interleaved`)."""
    med = statistics.median(ratios)
    mad = statistics.median(abs(r - med) for r in ratios)
    return med, 1.2533 * 1.4826 * mad / math.sqrt(len(ratios))


def _speed(result: DiffResult, base: Worker, head: Worker, keys: list[tuple[str, str]],
           say: Callable[[str], None]) -> list[SpeedChange]:
    timers = []
    for kind, name in keys:
        base.send("prepare", [(kind, name)], result.seed)
        head.send("prepare", [(kind, name)], result.seed)
        fb, fh = _answer(base), _answer(head)
        why = [f"at {w}: {f.describe() if isinstance(f, Fault) else f[name]}"
               for w, f in (("BASE", fb), ("HEAD", fh)) if isinstance(f, Fault) or f]
        if why:
            result.notes.append(f"{name}: not timed ({'; '.join(why)})")
            continue
        parts = ("forward", "backward") if kind == "layer" else ("training step",)
        timers += [(name, part) for part in parts]
    pairs, sample, reps = DIFF_LEVELS[result.level]
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else [None]
    _both(base, head, "pin", cpus[0])
    say(f"timing {len(timers)} calls side by side ({pairs} pairs each, A B A B)")
    fixed = _fixed_by(result.cases)
    out = []
    for name, part in timers:
        try:
            row = _time_pair(base, head, name, part, (pairs, sample, reps),
                             (result.max_slowdown, result.speed_floor))
        except (WorkerFault, WorkerError) as exc:  # the timed call raised, or died
            result.notes.append(f"{name} {part}: not timed (at {exc})")
            for w in (base, head):
                if not w.proc.is_alive():
                    _restart(w)
            continue
        row.part_of_fix, row.fixed_by = name in fixed, fixed.get(name, "")
        out.append(row)
    return out


def _time_pair(base: Worker, head: Worker, name: str, part: str,
               level: tuple[int, float, int], limits: tuple[float, float]) -> SpeedChange:
    """One call timed in both workers in turn; ``limits``: the max slowdown and the
    speed floor (seconds a call)."""
    pairs, sample, reps = level
    max_slowdown, floor = limits
    key = f"{name} {part}"
    calls = max(base.call("calibrate", key, sample), head.call("calibrate", key, sample))
    base.call("time", key, calls)  # warm-up at the calibrated size
    head.call("time", key, calls)
    ratios, cpu_b, cpu_h, busy = [], [], [], []
    for _ in range(pairs):
        cb, wb = base.call("time", key, calls, reps)
        ch, wh = head.call("time", key, calls, reps)
        ratios.append(ch / max(cb, 1e-12))
        cpu_b.append(cb / calls)
        cpu_h.append(ch / calls)
        busy += [wb, wh]
    med, se = median_se(ratios)
    per_b, per_h = statistics.median(cpu_b), statistics.median(cpu_h)
    status = _speed_status(med, se, abs(per_h - per_b) < floor, max_slowdown)
    return SpeedChange(name, part, med, se, pairs, calls, per_b, per_h, status,
                       statistics.median(busy) > 1.25, gated=not math.isinf(max_slowdown))


def _speed_status(med: float, se: float, small: bool, max_slowdown: float) -> str:
    """``slower`` (the median beyond the limit by 3 standard errors), ``faster`` (below
    its inverse by as much) or ``same``; ``too fast`` in place of slower or faster when
    the change a call is ``small`` (under the floor). Under ``max_slowdown=inf`` the
    labels follow :data:`_LABEL_LIMIT` (the row is then not gated)."""
    limit = _LABEL_LIMIT if math.isinf(max_slowdown) else max_slowdown
    moved = ("slower" if not gate(med, se, limit)
             else "faster" if med + 3.0 * se < 1.0 / limit else "same")
    return "too fast" if small and moved != "same" else moved
