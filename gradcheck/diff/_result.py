"""What ``gradcheck diff`` found, as typed results: a case's check at both revisions
(:class:`CaseChange`), values that drifted (:class:`ValueDrift`) or could not be computed
(:class:`NotComputed`), a call's speed (:class:`SpeedChange`), and the whole
:class:`DiffResult`, with the levels and the speed floor they are measured by."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ..check._json import plain
from ..report.snapshot import Drift
from ..run._pool import DEFAULT_CASE_TIMEOUT

__all__ = ["DIFF_LEVELS", "SPEED_FLOOR", "CaseChange", "DiffError", "DiffResult",
           "NotComputed", "SpeedChange", "ValueDrift"]

#: Per level: timed pairs per call, the CPU seconds one run lasts at least, and the runs
#: of which a sample is the least.
DIFF_LEVELS: dict[str, tuple[int, float, int]] = {
    "quick": (7, 0.001, 3), "default": (15, 0.001, 5), "full": (21, 0.002, 5)}

#: Thread CPU seconds a call: a call whose time changed by less than this between the
#: revisions is ``too fast`` to time (reported, never a regression), however large the
#: ratio. Two effects of that size are not work: on tiny inputs one NumPy call costs
#: 0.5-1.3 us of dispatch (on a Xeon: ``x * 2`` on a 4x5 array 0.5 us, ``np.where``
#: 1.3 us), so a fix that adds a mask moves a 2 us call by 1.5-3x; and where a worker's
#: arrays lie in memory moves calls of 16-50 us, unchanged code, by 4-14 us (1.3-1.7x)
#: between two processes, steadily within each (the heap layout is drawn anew at each
#: timed run, which narrows this, but not to nothing). A twelve-times slower backward of
#: 4 us (+46 us) is still gated.
SPEED_FLOOR = 20e-6

#: The limit by which rows are labelled ``slower``/``faster`` when ``max_slowdown`` is
#: ``inf`` (timed, never gated): the default limit, so that a 10x slowdown still reads
#: ``slower (not gated)``, not ``same``.
_LABEL_LIMIT = 1.25


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
    """An array that differs between the revisions beyond its dtype's tolerance.

    ``part_of_fix``: the case's check went from bad to ``ok`` (``fixed_by`` names it);
    ``evidence``: the case's check is a regression, of which this drift is the evidence
    (counted once, with the check)."""

    drift: Drift
    part_of_fix: bool = False
    fixed_by: str = ""
    evidence: bool = False

    def line(self) -> str:
        return self.drift.line() + (f" (part of the fix: {self.fixed_by})"
                                    if self.part_of_fix else "")


@dataclass
class NotComputed:
    """A case whose values could not be computed at a revision (computing them raised):
    counted apart from the arrays compared, never as drift, alike in both directions.

    ``at``: ``BASE``, ``HEAD`` or ``both``; ``reason``: what was raised, per revision;
    ``evidence``: the case's check is a regression, of which this is the evidence
    (counted once, with the check). Not computed at HEAD only, with no check regression
    to explain it (a snapshot case that now raises), is a regression of its own."""

    case: str
    at: str
    reason: str
    evidence: bool = False

    @property
    def regression(self) -> bool:
        return self.at == "HEAD" and not self.evidence

    def line(self) -> str:
        return f"{self.case}: values not computed at {self.at} ({self.reason})"


@dataclass
class SpeedChange:
    """One timed call: HEAD over BASE thread CPU time, median of the pair ratios.

    ``status``: ``slower`` or ``faster`` (beyond the noise and the limit), ``same``, or
    ``too fast`` (its time a call changed by less than :data:`SPEED_FLOOR`: never
    gated);
    ``part_of_fix``: the case's check went from bad to ``ok``, so its slowdown is part
    of the fix, not a regression."""

    case: str
    part: str
    ratio: float
    se: float
    pairs: int
    calls: int
    base_seconds: float
    head_seconds: float
    status: str  # slower, faster, same, too fast
    busy: bool = False
    part_of_fix: bool = False
    #: False under ``max_slowdown=inf``: labelled by the default limit, never a regression
    gated: bool = True
    #: the fixed case(s) whose fix this slowdown is part of (the case itself, or another
    #: dtype of the same layer case)
    fixed_by: str = ""

    @property
    def label(self) -> str:
        return f"{self.case} {self.part}"

    @property
    def regression(self) -> bool:
        return self.status == "slower" and self.gated and not self.part_of_fix

    @property
    def verdict(self) -> str:
        """The status as the tables show it (naming the fixed case when it is another
        dtype of this one)."""
        if not self.part_of_fix:
            return self.status + (" (not gated)" if self.status == "slower"
                                  and not self.gated else "")
        other = self.fixed_by and self.fixed_by != self.case
        return self.status + (f" (part of the fix: {self.fixed_by})" if other
                              else " (part of the fix)")


@dataclass
class DiffResult:
    """Everything ``gradcheck diff`` found; rendered by :mod:`gradcheck.diff._diffrender`."""

    base: str
    base_commit: str
    head: str
    head_commit: str
    subject: str
    level: str
    seed: int
    max_slowdown: float
    case_timeout: float = DEFAULT_CASE_TIMEOUT
    #: ``ok``, or ``borrowed``: missing at BASE, HEAD's file (or the working tree's)
    #: ran against BASE's code (``subject_file`` names it)
    base_subject: str = "ok"
    subject_file: str = ""
    #: ``borrowed``: missing at ``--head`` as well, the working tree's file ran there
    head_subject: str = "ok"
    #: False when no case could be checked at BASE (the subject could not be imported
    #: there, or is new in a module of BASE's code); ``base_unchecked`` says why, and
    #: every case is ``new``
    base_checked: bool = True
    base_unchecked: str = ""
    speed_floor: float = SPEED_FLOOR
    timed: bool = True  # False: --no-speed
    cases: list[CaseChange] = field(default_factory=list)
    values: list[ValueDrift] = field(default_factory=list)
    compared_arrays: int = 0
    #: cases whose values could not be computed at a revision (not drift)
    not_computed: list[NotComputed] = field(default_factory=list)
    speed: list[SpeedChange] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    environment: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def regressions(self) -> list[str]:
        """One line per regression: checks (with the drift of the same case as their
        evidence), drift outside a fix, slowdowns."""
        out = []
        for c in (c for c in self.cases if c.regression):
            drift = [v.drift.parameter for v in self.values
                     if v.evidence and v.drift.case == c.case]
            lost = [n.at for n in self.not_computed if n.evidence and n.case == c.case]
            out.append(f"{c.case}: {c.change}: {c.detail}".rstrip(": ")
                       + (f" [values drifted: {', '.join(drift)}]" if drift else "")
                       + (f" [values not computed at {lost[0]}]" if lost else ""))
        out += [v.line() for v in self.values if not (v.part_of_fix or v.evidence)]
        out += [n.line() for n in self.not_computed if n.regression]
        out += [f"{s.label}: {s.ratio:.2f}x slower (+- {s.se:.2f}, limit "
                f"{self.max_slowdown:g})" for s in self.speed if s.regression]
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
                        "fixed_by": v.fixed_by, "evidence": v.evidence} for v in self.values]
        d["speed"] = [{**asdict(s), "regression": s.regression} for s in self.speed]
        d.update(verdict=self.verdict, regressions=self.regressions,
                 fixes=[c.case for c in self.fixes])
        return dict(plain(d))
