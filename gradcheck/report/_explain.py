"""A failing model check explained by a failing layer check of the same subject.

A wrong layer backward makes the gradient of every parameter below it wrong, so one
bug fails the model check in many parameters. When a layer check of the subject fails
too, the report says which model failures it explains, from what the code does:

1. the layer case's check runs under a profile hook: the user functions it calls, and
   how deep (the case's own ``fwd`` is 1, a model function it wraps 2);
2. the model's loss runs under the hook: every call of a user function and the
   parameter arrays it received. The layer's calls in the model are those of its
   shallowest functions that the model calls; the parameters received inside them are
   the layer's own;
3. a failing parameter sits below the layer when the layer's inputs in the model
   change as that parameter is perturbed (the loss run again, the parameter restored
   bit for bit): its gradient comes through the layer's backward, bug included.

A failing parameter explained by several failing layers is given the one whose check
runs the fewest functions (the activation before the feed-forward before the block).
Nothing observed, nothing claimed: the hint pointing at the failing layer nearest the
output stays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import CodeType

import numpy as np

from ..check._model_check import _TWIN, NEAREST, failure_message
from ..check._result import CheckResult
from ..read._trace import Call, inputs_at, user_calls, user_codes
from ..subject import Subject

__all__ = ["Explanation", "annotate", "explain_task", "explaining_layers"]

#: Layer statuses that are a wrong gradient (a fault or a protocol error explains nothing).
_WRONG = ("mismatch", "shape-mismatch", "non-finite")


@dataclass(frozen=True)
class Explanation:
    """A failing layer check explaining one model parameter's failure: the layer's own
    parameter (``own``) or one below it."""

    layer: str
    own: bool


def explaining_layers(layers: list[tuple[int, str, CheckResult]]
                      ) -> tuple[list[tuple[int, str, str]], list[tuple[int, str]]]:
    """``(case index, dtype, label)`` of each layer check whose gradient is wrong, one
    per case (its first failing dtype), and ``(case index, dtype)`` of each case that
    passed in every dtype, in the subject's order; ``layers`` holds the report's layer
    results with their case index and dtype."""
    wrong: dict[int, tuple[int, str, str]] = {}
    failed = {k for k, _, r in layers if not r.passed}
    passing: dict[int, tuple[int, str]] = {}
    for k, dtype, r in layers:
        if not r.passed and r.status in _WRONG and k not in wrong:
            wrong[k] = (k, dtype, r.name)
        elif k not in failed and k not in passing:
            passing[k] = (k, dtype)
    return list(wrong.values()), list(passing.values())


@dataclass(frozen=True)
class _Layer:
    """A failing layer case as the model runs it."""

    label: str
    size: int  # user functions its check runs: fewer is more specific
    entry: frozenset[CodeType]  # its shallowest functions that the model calls
    own: frozenset[str]  # parameters received inside those calls


def explain_task(subject: Subject, level: str, model: int, layers: list[tuple[int, str, str]],
                 passing: list[tuple[int, str]], failing: list[str], seed: int
                 ) -> dict[str, Explanation]:
    """Which of model case ``model``'s ``failing`` parameters the failing layer cases
    ``layers`` explain (see the module's doc); the functions the ``passing`` cases run
    are not where a failing case's bug is (unless they are all it runs). Run in a case
    process of the report."""
    built, batch = subject.models(level, seed)[model].build()
    params = {n: a for n, a in built.params.items()
              if isinstance(a, np.ndarray) and a.dtype.kind == "f"}

    def run() -> None:
        built.loss(*batch)

    with np.errstate(all="ignore"):
        calls = user_calls(run, params)
        sound = set().union(*(_codes(subject, k, dtype, seed) for k, dtype in passing))
        placed = [lay for k, dtype, label in layers
                  if (lay := _in_model(label, _suspect(_codes(subject, k, dtype, seed), sound),
                                       calls))]
        below = _below(run, placed, [n for n in failing if n in params], params, seed)
    found: dict[str, tuple[int, Explanation]] = {}
    for lay in placed:
        for name in failing:
            own = name in lay.own
            if (own or name in below[lay.label]) and (
                    name not in found or lay.size < found[name][0]):
                found[name] = (lay.size, Explanation(lay.label, own))
    return {n: e for n, (_, e) in found.items()}


def _codes(subject: Subject, k: int, dtype: str, seed: int) -> dict[CodeType, int]:
    case = subject.layers[k]
    return user_codes(lambda: case.check(dtype, seed))


def _suspect(codes: dict[CodeType, int], sound: set[CodeType]) -> dict[CodeType, int]:
    """A failing case's functions that no passing case runs: where its bug is; all of
    them when the passing cases run every one (the bug is in a branch of shared code)."""
    left = {c: d for c, d in codes.items() if c not in sound}
    return left or codes


def _in_model(label: str, codes: dict[CodeType, int], calls: list[Call]) -> _Layer | None:
    """The layer whose check runs ``codes``, as the model's ``calls`` run it (None: the
    model runs none of its functions)."""
    used = [c for c in calls if c.code in codes]
    if not used:
        return None
    top = min(codes[c.code] for c in used)
    mine = [c for c in used if codes[c.code] == top]
    own = {p for m in mine for c in calls if m.start <= c.start and c.end <= m.end
           for p in c.params}
    return _Layer(label, len(codes), frozenset(c.code for c in mine), frozenset(own))


def _below(run: Callable[[], None], layers: list[_Layer], names: list[str],
           params: dict[str, np.ndarray], seed: int) -> dict[str, set[str]]:
    """For each layer, the parameters among ``names`` whose perturbation changes the
    layer's inputs in the model (inputs that differ between two plain runs say
    nothing)."""
    codes = set().union(*(lay.entry for lay in layers)) if layers else set()
    base = inputs_at(run, codes, params)
    steady = _same_calls(base, inputs_at(run, codes, params)) or []
    out: dict[str, set[str]] = {lay.label: set() for lay in layers}
    rng = np.random.default_rng(seed)
    for name in names:
        p = params[name]
        kept = p.copy()
        try:
            p += (0.01 * (np.abs(p) + 1) * rng.choice([-1.0, 1.0], p.shape)).astype(p.dtype)
            moved = _same_calls(base, inputs_at(run, codes, params))
        finally:
            np.copyto(p, kept)
        if moved is None:  # the model ran other calls: no evidence either way
            continue
        for lay in layers:
            if any(code in lay.entry and ok and not same
                   for (code, _), ok, same in zip(base, steady, moved, strict=False)):
                out[lay.label].add(name)
    return out


def _same_calls(a: list[tuple[CodeType, list[np.ndarray]]],
                b: list[tuple[CodeType, list[np.ndarray]]]) -> list[bool] | None:
    """Call by call: did ``b``'s call receive the same inputs as ``a``'s? (None: not
    the same calls)"""
    if [c for c, _ in a] != [c for c, _ in b]:
        return None
    return [len(x) == len(y) and all(u.shape == v.shape and np.array_equal(u, v, equal_nan=True)
                                     for u, v in zip(x, y, strict=True))
            for (_, x), (_, y) in zip(a, b, strict=True)]


def annotate(result: CheckResult, found: dict[str, Explanation]) -> None:
    """Each failing parameter of the model ``result`` that a failing layer check
    explains says so in its hint (in place of the pointer to the layer nearest the
    output), and a note lists the layers that explain the check."""
    named: dict[str, list[str]] = {}
    for r in result.inputs:
        e = found.get(r.name.removesuffix(_TWIN))
        if e is None or r.passed or r.status != "mismatch":
            continue
        why = ("a parameter of that layer" if e.own else "its inputs depend on this "
               "parameter, so its backward's error reaches it")
        where = f"explained by the failing layer check {e.layer} ({why})"
        kept = [h for h in r.hint.split("; ") if h and NEAREST not in h]
        r.hint = "; ".join([*kept, f"{where}: fix that layer first"])
        r.message = failure_message(r)
        named.setdefault(e.layer, []).append(r.name)
    for layer, names in named.items():
        result.notes.append(f"explained by the failing layer check {layer}: "
                            f"{', '.join(names)}")

