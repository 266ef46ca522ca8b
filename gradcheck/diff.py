"""``gradcheck diff BASE``: regression-check a change of backprop code against a revision.

The working tree (or ``head=REV``) is compared with ``BASE``, any git revision. BASE is
written out in a temporary folder (``git archive``: the user's tree, index and ``.git``
are never touched) and removed afterwards, also on Ctrl-C. Each revision's subject runs
in its own worker process with that revision's folder first on ``sys.path`` and the
running gradcheck (:mod:`gradcheck._diffworker`). Three comparisons, per case:

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
    of ``gradcheck compare`` (:func:`gradcheck.snapshot.compare_arrays`); drift is named
    by case, array and worst index. Drift of a case whose check went ``fail -> ok`` (for
    snapshot cases: when any check went ``fail -> ok``) is part of the fix.
speed
    every layer case's forward and backward and every model case's training step are
    timed in both workers in turn (A B A B ..., both pinned to one core, after a warm-up
    and a calibration that makes one run last at least a millisecond; a sample is the
    least of five runs), by the CPU time of the worker's thread with one BLAS thread, so
    that a neighbour's load moves neither side. The figure is the median of the per-pair
    ratios HEAD/BASE with its standard error (as in
    :mod:`gradcheck.budgets`); a case is ``slower`` when ``median - 3 se`` exceeds
    ``max_slowdown``, ``faster`` when ``median + 3 se`` is below ``1 / max_slowdown``.
    Where wall time exceeds CPU time by more than a quarter, the row says the machine
    was busy.

The verdict is ``fail`` (exit status 1) on a regression, drift outside a fix, or a
slowdown; :class:`DiffError` (exit status 2) when the diff cannot run.
"""

from __future__ import annotations

import math
import os
import statistics
import subprocess  # noqa: S404 - git with fixed arguments, no shell
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ._diffworker import Worker, WorkerError, WorkerFault
from ._json import plain
from ._pool import DEFAULT_CASE_TIMEOUT, FAULT_STATUSES, Fault
from ._revision import Revision, RevisionError, materialised, repo_root
from .budgets import gate
from .snapshot import Drift, compare_arrays
from .subject import DEFAULT_SUBJECT

__all__ = ["DIFF_LEVELS", "CaseChange", "DiffError", "DiffResult", "SpeedChange",
           "ValueDrift", "run_diff"]

#: Per level: timed pairs per call, the CPU seconds one run lasts at least, and the runs
#: of which a sample is the least.
DIFF_LEVELS: dict[str, tuple[int, float, int]] = {
    "quick": (7, 0.001, 3), "default": (15, 0.001, 5), "full": (21, 0.002, 5)}


class DiffError(Exception):
    """The diff cannot run (not a git tree, unknown revision, bad subject): one line."""


@dataclass
class CaseChange:
    """A layer or model case's check at both revisions.

    ``base`` and ``head`` are ``ok``, ``fail``, ``absent``, or the case's fault at that
    revision: ``error`` (it raised), ``crashed`` (its worker died: the signal or exit
    status), ``timeout`` (past ``case_timeout``); ``change`` is ``BASE -> HEAD``
    (``ok -> fail``, ``ok -> crashed``, ``fail -> ok``...), ``new`` or ``removed``;
    ``detail`` names the failing inputs or parameters and the hint, or the fault. A
    case is a regression when it is bad (fail or a fault) at HEAD only, a fix when it is
    bad at BASE and ``ok`` at HEAD.
    """

    kind: str
    case: str
    base: str
    head: str
    change: str
    regression: bool
    fixed: bool
    detail: str = ""
    base_detail: str = ""
    seed: int = 0


@dataclass
class ValueDrift:
    """An array that differs between the revisions beyond its dtype's tolerance."""

    drift: Drift
    part_of_fix: bool = False
    fixed_by: str = ""

    def line(self) -> str:
        return self.drift.line() + (f" (part of the fix: {self.fixed_by})"
                                    if self.part_of_fix else "")


@dataclass
class SpeedChange:
    """One timed call: HEAD over BASE thread CPU time, median of the pair ratios."""

    case: str
    part: str
    ratio: float
    se: float
    pairs: int
    calls: int
    base_seconds: float
    head_seconds: float
    status: str  # slower, faster, same
    busy: bool = False

    @property
    def label(self) -> str:
        return f"{self.case} {self.part}"


@dataclass
class DiffResult:
    """Everything ``gradcheck diff`` found; rendered by :mod:`gradcheck._diffrender`."""

    base: str
    base_commit: str
    head: str
    head_commit: str
    subject: str
    level: str
    seed: int
    max_slowdown: float
    case_timeout: float = DEFAULT_CASE_TIMEOUT
    base_subject: str = "ok"  # or "missing"
    cases: list[CaseChange] = field(default_factory=list)
    values: list[ValueDrift] = field(default_factory=list)
    compared_arrays: int = 0
    speed: list[SpeedChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def regressions(self) -> list[str]:
        """One line per regression: checks, drift outside a fix, slowdowns."""
        out = [f"{c.case}: {c.change}: {c.detail}" for c in self.cases if c.regression]
        out += [v.line() for v in self.values if not v.part_of_fix]
        out += [f"{s.label}: {s.ratio:.2f}x slower (+- {s.se:.2f}, limit "
                f"{self.max_slowdown:g})" for s in self.speed if s.status == "slower"]
        return out

    @property
    def fixes(self) -> list[CaseChange]:
        return [c for c in self.cases if c.fixed]

    @property
    def verdict(self) -> str:
        return "fail" if self.regressions else "pass"

    @property
    def exit_code(self) -> int:
        return 1 if self.regressions else 0

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only."""
        d = {k: v for k, v in asdict(self).items() if k != "values"}
        d["values"] = [{**asdict(v.drift), "part_of_fix": v.part_of_fix,
                        "fixed_by": v.fixed_by} for v in self.values]
        d.update(verdict=self.verdict, regressions=self.regressions,
                 fixes=[c.case for c in self.fixes])
        return dict(plain(d))


# -- validation --------------------------------------------------------------------------------
def _validate(level: str, seed: int, max_slowdown: float, case_timeout: float) -> None:
    if level not in DIFF_LEVELS:
        raise ValueError(f"level must be one of {', '.join(DIFF_LEVELS)}, got {level!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if not (isinstance(max_slowdown, (int, float)) and math.isfinite(max_slowdown)
            and max_slowdown > 1.0):
        raise ValueError(f"max_slowdown must be a finite number > 1, got {max_slowdown!r}")
    if isinstance(case_timeout, bool) or not isinstance(case_timeout, (int, float)) \
            or not case_timeout > 0:
        raise ValueError(f"case_timeout must be a positive number of seconds (inf: no "
                         f"limit), got {case_timeout!r}")


def run_diff(
    base: str, *, head: str | None = None, subject: str | None = None,
    level: str = "default", seed: int = 0, max_slowdown: float = 1.25,
    case_timeout: float = DEFAULT_CASE_TIMEOUT, cwd: Path | None = None,
    progress: Callable[[str], None] | None = None,
) -> DiffResult:
    """Compare the subject at ``head`` (default: the working tree) with ``base``.

    Parameters
    ----------
    base, head : str
        Git revisions (a branch, ``HEAD~1``, ``origin/main``, a commit id).
    subject : str, optional
        ``MODULE:NAME`` of a :class:`~gradcheck.Subject` (default: the installed
        default subject), imported at each revision from the folder that corresponds to ``cwd``.
    level : str
        ``quick``, ``default`` or ``full``: the subject's model cases of that level, and
        the timed pairs (:data:`DIFF_LEVELS`).
    seed : int
        Of every check and of the values' inputs and cotangents.
    max_slowdown : float
        HEAD/BASE time ratio beyond which (and beyond the noise) a case is slower.
    case_timeout : float
        Seconds each request to a revision's worker may take (a case's check, its
        values, a timed run; ``inf``: no limit). A worker past it is stopped, one that
        dies is replaced, and the case gets status ``timeout`` or ``crashed`` at that
        revision; the other cases still run.
    cwd : path, optional
        A folder inside the git working tree (default: the current folder).

    Raises
    ------
    DiffError
        Not a git working tree, unknown revision, a subject that cannot be loaded at
        HEAD or at BASE (a subject *missing* at BASE is new, not an error).
    ValueError
        A bad option.
    """
    _validate(level, seed, max_slowdown, case_timeout)
    say = progress or (lambda _s: None)
    t0 = time.perf_counter()
    spec = subject or DEFAULT_SUBJECT
    try:
        cwd = Path(cwd or os.getcwd()).resolve()
        root = repo_root(cwd)
        with ExitStack() as stack:
            say(f"writing out {base} in a temporary folder")
            b = stack.enter_context(materialised(root, base))
            h = (stack.enter_context(materialised(root, head)) if head
                 else Revision("working tree", _head_commit(root), root))
            base_w, head_w = (_worker(stack, label, rev, root, cwd, spec, case_timeout)
                              for label, rev in (("BASE", b), ("HEAD", h)))
            result = DiffResult(b.name, b.commit, h.name, h.commit, spec, level, seed,
                                float(max_slowdown), float(case_timeout))
            _run(result, base_w, head_w, say)
    except (RevisionError, WorkerError, WorkerFault) as exc:
        raise DiffError(str(exc)) from None
    result.seconds = time.perf_counter() - t0
    return result


def _worker(stack: ExitStack, label: str, rev: Revision, root: Path, cwd: Path, spec: str,
            case_timeout: float) -> Worker:
    """The worker process of one revision, stopped when ``stack`` closes."""
    w = Worker(label, rev.root, rev.root / cwd.relative_to(root), spec, [root, cwd],
               float(case_timeout))
    stack.callback(w.close)
    return w


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
    return base.recv(), head.recv()


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


def _run(result: DiffResult, base: Worker, head: Worker, say: Callable[[str], None]) -> None:
    say(f"importing {result.subject} at both revisions")
    ib, ih = _both(base, head, "load", result.level, result.seed)
    if ih["status"] != "ok":
        raise DiffError(f"--subject {result.subject}: {ih['message']} (at {result.head})")
    if ib["status"] == "error":
        raise DiffError(f"--subject {result.subject}: {ib['message']} (at {result.base})")
    if not ih["inside"]:
        result.notes.append(f"the subject's module {ih['file']} is not in the repository: "
                            "both revisions may run the same code")
    result.environment = {"BASE blas": str(ib.get("blas", "")), "HEAD blas": ih["blas"]}
    if ib["status"] == "missing" or (not ib["inside"] and ih["inside"]):
        result.base_subject = "missing"
        result.notes.append(f"the subject is new: not in {result.base} "
                            f"({ib.get('message') or 'imported from outside the revision'})")
        ib = {"layers": [], "models": [], "snapshots": []}
    keys = {"layer": (ib["layers"], ih["layers"]), "model": (ib["models"], ih["models"])}
    say("checking every layer and model case at both revisions (in parallel)")
    base_keys = [(k, n) for k, (bs, _) in keys.items() for n in bs]
    head_keys = [(k, n) for k, (_, hs) in keys.items() for n in hs]
    result.cases = _case_changes(*_checks(result, base, head, base_keys, head_keys, say),
                                 base_keys, head_keys)
    if result.base_subject == "ok":
        say("computing values (outputs, gradients, snapshot cases) at both revisions")
        gone = {(c.kind, c.case) for c in result.cases
                if {c.base, c.head} & {"crashed", "timeout"}}
        for _kind, name in sorted(gone):
            result.notes.append(f"{name}: values and speed not compared (its check "
                                "crashed or timed out)")
        vkeys = [f"layer:{n}" for k, n in head_keys if k == "layer" and (k, n) not in gone]
        vb, vh = _values(base, head, vkeys + [f"snapshot:{n}" for n in ih["snapshots"]
                                              if n in ib["snapshots"]], result.seed)
        result.values, result.compared_arrays = _value_drift(vb, vh, result)
        common = [kn for kn in head_keys if kn in base_keys and kn not in gone]
        result.speed = _speed(result, base, head, common, say)


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


# -- correctness ---------------------------------------------------------------------------------
def _describe(s: dict[str, Any]) -> str:
    """The failing inputs or parameters of a check summary, with the hint."""
    if s["passed"]:
        return ""
    parts = []
    for i in s["inputs"][:4]:
        where = f" at {tuple(i['worst'])}" if i["worst"] else ""
        parts.append(f"{i['name']} {i['status']}{where} (max rel {i['max_rel']:.2e})"
                     + (f", hint: {i['hint']}" if i["hint"] else ""))
    more = len(s["inputs"]) - 4
    text = "; ".join(parts) + (f"; and {more} more" if more > 0 else "")
    return (text or f"[{s['status']}] {s['message']}") + f" (seed {s['seed']})"


_BAD = {"fail", *FAULT_STATUSES}


def _state(s: dict[str, Any] | None) -> str:
    """``absent``, ``ok``, a fault's status (``error``, ``crashed``, ``timeout``) or
    ``fail``."""
    if s is None:
        return "absent"
    if s["passed"]:
        return "ok"
    return s["status"] if s["status"] in FAULT_STATUSES else "fail"


def _case_changes(sb: dict[str, Any], sh: dict[str, Any], base_keys: list[tuple[str, str]],
                  head_keys: list[tuple[str, str]]) -> list[CaseChange]:
    out = []
    for kind, name in head_keys + [k for k in base_keys if k not in head_keys]:
        b, h = sb.get(f"{kind}:{name}"), sh.get(f"{kind}:{name}")
        bs, hs = _state(b), _state(h)
        change = "new" if b is None else "removed" if h is None else f"{bs} -> {hs}"
        out.append(CaseChange(
            kind, name, bs, hs, change, regression=hs in _BAD and bs not in _BAD,
            fixed=bs in _BAD and hs == "ok", detail=_describe(h) if h else "",
            base_detail=_describe(b) if b else "", seed=int((h or b or {}).get("seed", 0))))
    order = {"new": 1, "removed": 4}
    out.sort(key=lambda c: (not c.regression, not c.fixed, c.head == "ok" and c.base == "ok",
                            order.get(c.change, 2)))
    return out


# -- values -------------------------------------------------------------------------------------
def _value_drift(vb: dict[str, Any], vh: dict[str, Any], result: DiffResult
                 ) -> tuple[list[ValueDrift], int]:
    fixed = {f"{c.kind}:{c.case}" for c in result.cases if c.fixed}
    any_fix = ", ".join(sorted(c.case for c in result.fixes))
    rows: list[ValueDrift] = []
    compared = 0
    for key in [k for k in vh if k in vb]:
        (sb, *rb), (sh, *rh) = vb[key], vh[key]
        case = key.split(":", 1)[1]
        if sb != "ok" or sh != "ok":
            if sh != "ok" and sb == "ok":
                drifts = [Drift(case, "*", "error", detail=f"computing it raised {rh[0]}")]
            else:
                result.notes.append(f"values of {case} not compared: "
                                    f"{rb[0] if sb != 'ok' else rh[0]} (at BASE)")
                continue
        else:
            drifts = compare_arrays(case, rb[0], rh[0], computed={**rb[1], **rh[1]})
            compared += len(drifts)
        by = (case if key in fixed else "") if key.startswith("layer:") else any_fix
        rows += [ValueDrift(d, bool(by), by) for d in drifts if not d.ok]
    return rows, compared


# -- speed -------------------------------------------------------------------------------------
def median_se(ratios: list[float]) -> tuple[float, float]:
    """Median of the pair ratios and its standard error ``1.2533 * 1.4826 * MAD /
    sqrt(n)`` (the estimate of :func:`gradcheck.budgets.ratio_interleaved`)."""
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
    out = []
    for name, part in timers:
        try:
            out.append(_time_pair(base, head, name, part, (pairs, sample, reps),
                                  result.max_slowdown))
        except WorkerFault as exc:
            result.notes.append(f"{name} {part}: not timed (at {exc})")
            for w in (base, head):
                if not w.proc.is_alive():
                    _restart(w)
    return out


def _time_pair(base: Worker, head: Worker, name: str, part: str,
               level: tuple[int, float, int], max_slowdown: float) -> SpeedChange:
    pairs, sample, reps = level
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
    status = ("slower" if not gate(med, se, max_slowdown)
              else "faster" if med + 3.0 * se < 1.0 / max_slowdown else "same")
    return SpeedChange(name, part, med, se, pairs, calls, statistics.median(cpu_b),
                       statistics.median(cpu_h), status, statistics.median(busy) > 1.25)
