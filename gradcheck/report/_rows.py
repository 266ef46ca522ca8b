"""The report's typed results: built once by :mod:`gradcheck.report.verify`, rendered by the HTML
report, the JSON file and the command line alike through their ``to_dict()``.

The section rows keep the display keys the report has always written (``"false
alarms"``, ``"hint given"``...); :meth:`CatalogRow.machine_dict` gives the same row under
machine keys for the JSON's ``catalog``. The code reads the attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

__all__ = ["CRITERION_STATUSES", "CatalogRow", "Criterion", "FaultRow", "Section"]

#: What a criterion can be: ``met``, ``not met``, ``not run`` (needs a test run),
#: ``not measured`` (a busy machine), ``not applicable`` (the subject does not declare it).
CRITERION_STATUSES = ("met", "not met", "not run", "not measured", "not applicable")


@dataclass(frozen=True)
class Criterion:
    """One of the report's criteria 1-12: its status, the figure behind it and how it was
    measured."""

    id: int
    name: str
    status: str
    figure: str
    how: str

    def __post_init__(self) -> None:
        if self.status not in CRITERION_STATUSES:
            raise ValueError(f"Criterion.status must be one of {CRITERION_STATUSES}, got "
                             f"{self.status!r}")

    @classmethod
    def judged(cls, cid: int, name: str, met: bool | None, figure: str, how: str
               ) -> Criterion:
        """``met`` / ``not met`` from ``met``; ``not run`` when it is None."""
        status = "not run" if met is None else ("met" if met else "not met")
        return cls(cid, name, status, figure, how)

    @classmethod
    def not_applicable(cls, cid: int, name: str, why: str) -> Criterion:
        return cls(cid, name, "not applicable", why, "the subject does not declare it")

    def lost_to(self, note: str) -> Criterion:
        """This criterion, not met because a fault (``note``) took away its evidence."""
        lost = self.status in ("not applicable", "not run", "met")
        if not lost:
            return replace(self, status="not met", figure=f"{self.figure}; {note}")
        return replace(self, status="not met", figure=note,
                       how="no evidence: what measures it gave no result (see the cases "
                           "that gave no result)")

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "status": self.status,
                "figure": self.figure, "how": self.how}


@dataclass(frozen=True)
class CatalogRow:
    """One bug of the checker's catalog against its correct twin, in one dtype.

    ``caught`` of ``seeds`` seeds flagged the bug, ``false_alarms`` flagged the correct
    twin; ``hint`` is the first hint given and ``hint_verdict`` whether the hints name
    the bug's class (``named``, ``partly``, ``none``, ``misleading``).
    """

    bug: str
    dtype: str
    caught: int
    seeds: int
    false_alarms: int
    hint: str
    hint_verdict: str

    @property
    def verdict(self) -> str:
        """``caught`` (at every seed, with no false alarm) or ``missed``."""
        return "caught" if self.caught == self.seeds and self.false_alarms == 0 else "missed"

    def to_dict(self) -> dict[str, Any]:
        return {"bug": self.bug, "dtype": self.dtype, "caught": f"{self.caught}/{self.seeds}",
                "false alarms": self.false_alarms, "verdict": self.verdict,
                "hint given": self.hint, "hint names the class": self.hint_verdict}

    def machine_dict(self) -> dict[str, Any]:
        """The row under machine keys, its counts as integers (the JSON's ``catalog``)."""
        return {"bug": self.bug, "dtype": self.dtype, "caught": self.caught,
                "seeds": self.seeds, "false_alarms": self.false_alarms,
                "verdict": self.verdict, "hint": self.hint, "hint_verdict": self.hint_verdict}


@dataclass(frozen=True)
class FaultRow:
    """A case or task that gave no result: ``status`` ``error``, ``crashed`` or
    ``timeout``."""

    case: str
    status: str
    message: str
    type: str = ""
    where: str = ""
    signal: str = ""

    @classmethod
    def of(cls, case: str, fault: Any) -> FaultRow:
        """From a :class:`gradcheck.run._pool.Fault`."""
        return cls(case, fault.status, fault.message, fault.type, fault.where, fault.signal)

    @property
    def note(self) -> str:
        return f"{self.case}: {self.status} ({self.message})"

    def to_dict(self) -> dict[str, Any]:
        return {"case": self.case, "status": self.status, "message": self.message,
                "type": self.type, "where": self.where, "signal": self.signal}


@dataclass(frozen=True)
class Section:
    """A table of the report: a heading, a paragraph, and rows of ``columns``."""

    id: str
    title: str
    text: str = ""
    columns: Sequence[str] = ()
    rows: Sequence[Mapping[str, Any]] = field(default_factory=tuple)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "title": self.title, "text": self.text,
                               "rows": [dict(r) for r in self.rows]}
        if self.columns:
            out["columns"] = list(self.columns)
        return out
