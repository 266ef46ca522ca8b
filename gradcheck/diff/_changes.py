"""What changed between the revisions: a case's check (a regression, a fix, a check
that could not run), and the values of a case that drifted or could not be computed."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..report.snapshot import Drift, compare_arrays
from ..run._pool import FAULT_STATUSES
from ._result import CaseChange, DiffResult, NotComputed, ValueDrift

__all__: list[str] = []

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


def _fixed_by(cases: list[CaseChange]) -> dict[str, str]:
    """Case name -> the fix its slowdown and drift are part of: the case's own, when its
    check went from bad to ``ok``, else those of the other dtypes of the same layer case
    (``softmax [float64]`` -> ``softmax [float32]``: one change of the code fixed the
    layer; its other dtype pays the same cost). A case whose check is a regression is
    never part of a fix."""
    fixed = [c for c in cases if c.fixed]
    out = {c.case: c.case for c in fixed}
    for c in cases:
        if c.case in out or c.regression or c.kind != "layer":
            continue
        layer = _layer_name(c.case)
        same = [f.case for f in fixed if f.kind == "layer" and _layer_name(f.case) == layer]
        if same:
            out[c.case] = ", ".join(same)
    return out


def _layer_name(case: str) -> str:
    """``softmax [float32]`` -> ``softmax`` (a layer case's name without its dtype)."""
    name, sep, _dtype = case.rpartition(" [")
    return name if sep and case.endswith("]") else case


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
def _nonfinite(d: Drift, base: dict[str, Any], head: dict[str, Any]) -> Drift:
    """A ``non-finite`` row that names the revision with the NaN/Inf (the snapshot
    comparison's wording, "where there was none", assumes it is the new side)."""
    if d.status != "non-finite" or d.parameter not in base or d.parameter not in head:
        return d
    a = np.asarray(base[d.parameter])[d.worst_index]
    b = np.asarray(head[d.parameter])[d.worst_index]
    if np.isfinite(a) and not np.isfinite(b):
        d.detail = f"{b} at HEAD where BASE has {a:.6g}"
    elif np.isfinite(b) and not np.isfinite(a):
        d.detail = f"{a} at BASE where HEAD has {b:.6g}"
    else:
        d.detail = f"{a} at BASE, {b} at HEAD"
    return d


def _value_drift(vb: dict[str, Any], vh: dict[str, Any], result: DiffResult
                 ) -> tuple[list[ValueDrift], int]:
    """Compare the values; drift of a fixed case is part of the fix, that of a case
    whose check is a regression its evidence."""
    fixed = _fixed_by(result.cases)
    regressed = {f"{c.kind}:{c.case}" for c in result.cases if c.regression}
    any_fix = ", ".join(sorted(c.case for c in result.fixes))
    rows: list[ValueDrift] = []
    compared = 0
    for key in [k for k in vh if k in vb]:
        (sb, *rb), (sh, *rh) = vb[key], vh[key]
        case = key.split(":", 1)[1]
        if sb != "ok" or sh != "ok":
            result.not_computed.append(_not_computed(case, (sb, rb), (sh, rh),
                                                     key in regressed))
            continue
        drifts = [_nonfinite(d, rb[0], rh[0]) for d in
                  compare_arrays(case, rb[0], rh[0], computed={**rb[1], **rh[1]})]
        compared += len(drifts)
        by = fixed.get(case, "") if key.startswith("layer:") else any_fix
        rows += [ValueDrift(d, bool(by), by, evidence=key in regressed)
                 for d in drifts if not d.ok]
    return rows, compared


def _not_computed(case: str, base: tuple[str, list[Any]], head: tuple[str, list[Any]],
                  evidence: bool) -> NotComputed:
    """The values of ``case`` raised at one revision or both (``(status, rest)`` of each
    side, the message first in ``rest``)."""
    bad = [(rev, rest[0]) for rev, (status, rest) in (("BASE", base), ("HEAD", head))
           if status != "ok"]
    if len(bad) == 1:
        return NotComputed(case, bad[0][0], f"computing them raised {bad[0][1]}", evidence)
    return NotComputed(case, "both", "; ".join(f"at {rev}: computing them raised {why}"
                                               for rev, why in bad), evidence)
