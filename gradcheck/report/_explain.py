"""A failing model check explained by a failing layer check of the same subject.

A wrong layer backward makes the gradient of every parameter below it wrong, so one
bug fails the model check in many parameters. When a layer check of the subject fails
too, the report says which model failures it explains, from what the code does:

1. the layer case's check runs under a profile hook: the user functions it calls, and
   how deep (the case's own ``fwd`` is 1, a model function it wraps 2); functions a
   passing case runs too are left out (unless that leaves none);
2. the model's loss runs under the hook: the user functions it calls. The layer's
   calls in the model are those of its shallowest functions that the model calls;
3. the model's backward (``loss_and_grads``) must run the failing check's backward: of
   the lines the check executed in its functions that the forward does not call, the
   model executes every one in the functions it calls, and at least one (a model that
   calls a correct backward of its own, or runs another branch, is not explained);
4. a failing parameter sits below the layer when the layer's inputs in the model
   change as that parameter is perturbed (the loss run again, the parameter restored
   bit for bit), and the layer's check failed in such an input (not only in its own
   parameters): its gradient comes through the layer's backward, bug included.

A failing parameter explained by several failing layers is given the one whose check
runs the fewest functions (the activation before the feed-forward before the block).
Nothing observed, nothing claimed: the hint pointing at the failing layer nearest the
output stays.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass, field
from types import CodeType
from typing import Any

import numpy as np

from ..check._model_check import _TWIN, NEAREST, failure_message
from ..check._result import CheckResult
from ..read._trace import Seen, inputs_at, lines_run, user_codes
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
                      ) -> tuple[list[tuple[int, str, str, list[int]]], list[tuple[int, str]]]:
    """``(case index, dtype, label, positions of its failing inputs)`` of each layer
    check whose gradient is wrong, one per case (its first failing dtype), and ``(case
    index, dtype)`` of each case that passed in every dtype, in the subject's order;
    ``layers`` holds the report's layer results with their case index and dtype."""
    wrong: dict[int, tuple[int, str, str, list[int]]] = {}
    failed = {k for k, _, r in layers if not r.passed}
    passing: dict[int, tuple[int, str]] = {}
    for k, dtype, r in layers:
        if not r.passed and r.status in _WRONG and k not in wrong:
            bad = [j for j, i in enumerate(r.inputs) if not i.passed]
            wrong[k] = (k, dtype, r.name, bad)
        elif k not in failed and k not in passing:
            passing[k] = (k, dtype)
    return list(wrong.values()), list(passing.values())


@dataclass(frozen=True)
class _Layer:
    """A failing layer case as the model runs it."""

    label: str
    size: int  # user functions its check runs: fewer is more specific
    entry: frozenset[CodeType]  # its shallowest functions that the model calls
    bad: frozenset[int]  # positions of the inputs its check failed in


def explain_task(subject: Subject, level: str, model: int,
                 layers: list[tuple[int, str, str, list[int]]], passing: list[tuple[int, str]],
                 failing: list[str], seed: int) -> dict[str, Explanation]:
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
        forward = set(user_codes(run))  # the user functions the model's loss calls
        sound = set().union(*(_codes(subject, k, dtype, seed) for k, dtype in passing))
        cands = []
        for k, dtype, label, bad in layers:
            every = _codes(subject, k, dtype, seed)
            codes = _suspect(every, sound)
            lay = _in_model(label, codes, forward, bad, len(codes)) or _in_model(
                label, every, forward, bad, len(codes))  # its own functions: backward only
            if lay is not None and set(codes) - forward:
                cands.append((lay, _cheap(subject, k, dtype, seed), set(codes) - forward))
        # the model's backward, line traced once in every candidate's backward functions
        theirs = lines_run(lambda: built.loss_and_grads(*batch),
                           set().union(*(back for _, _, back in cands))) if cands else set()
        placed = [lay for lay, check, back in cands
                  if _runs_its_backward(lines_run(check, back), theirs)]
        placing = _placed(run, placed, [n for n in failing if n in params], params, seed)
    found: dict[str, tuple[int, Explanation]] = {}
    for lay in placed:
        at = placing[lay.label]
        for name in failing:
            own = name in at.own and _explains_own(lay, at, name)
            below = name in at.below and bool(lay.bad & at.inputs)
            if (own or below) and (name not in found or lay.size < found[name][0]):
                found[name] = (lay.size, Explanation(lay.label, own))
    return {n: e for n, (_, e) in found.items()}


def _explains_own(lay: _Layer, at: _Placing, name: str) -> bool:
    """A parameter of the layer is explained when its check failed in that parameter
    (received at the same position among the array arguments), or, for a parameter the
    layer holds rather than receives, in some parameter."""
    where = at.positions.get(name)
    if where is not None:
        return where in lay.bad
    return bool(lay.bad - at.inputs)


def _runs_its_backward(mine: set[tuple[CodeType, int]],
                       theirs: set[tuple[CodeType, int]]) -> bool:
    """Does the model's backward run the failing check's backward? Of the lines the
    check ran (``mine``) in its functions that the model's forward does not call, those
    in the functions the model's backward calls: at least one, and the model ran them
    all (``theirs``)."""
    called = {c for c, _ in theirs}
    needed = {(c, n) for c, n in mine if c in called}
    return bool(needed) and needed <= theirs


def _codes(subject: Subject, k: int, dtype: str, seed: int) -> dict[CodeType, int]:
    """The user functions case ``k``'s check runs, once it has run once untraced (what
    a first run imports is not the case's code)."""
    check = _cheap(subject, k, dtype, seed)
    check()
    return user_codes(check)


def _cheap(subject: Subject, k: int, dtype: str, seed: int) -> Callable[[], Any]:
    """Case ``k``'s check in directional mode: the same code run, a few evaluations."""
    case = subject.layers[k]
    cheap = dataclasses.replace(case, options={**case.options, "mode": "directional"})
    return lambda: cheap.check(dtype, seed)


def _suspect(codes: dict[CodeType, int], sound: set[CodeType]) -> dict[CodeType, int]:
    """A failing case's functions that no passing case runs: where its bug is; all of
    them when the passing cases run every one (the bug is in a branch of shared code)."""
    left = {c: d for c, d in codes.items() if c not in sound}
    return left or codes


def _in_model(label: str, codes: dict[CodeType, int], forward: set[CodeType],
              bad: list[int], size: int) -> _Layer | None:
    """The layer whose check runs ``codes``, placed by its shallowest functions that
    the model's ``forward`` calls (None: it calls none of them)."""
    used = [c for c in codes if c in forward]
    if not used:
        return None
    top = min(codes[c] for c in used)
    return _Layer(label, size, frozenset(c for c in used if codes[c] == top), frozenset(bad))


@dataclass
class _Placing:
    """Where the model's failing parameters sit with respect to one layer."""

    below: set[str] = field(default_factory=set)  # its inputs move with them
    own: set[str] = field(default_factory=set)  # its outputs move with them, not its inputs
    inputs: set[int] = field(default_factory=set)  # positions of its inputs
    positions: dict[str, int] = field(default_factory=dict)  # of parameters it receives


def _placed(run: Callable[[], None], layers: list[_Layer], names: list[str],
            params: dict[str, np.ndarray], seed: int) -> dict[str, _Placing]:
    """For each layer: the parameters among ``names`` whose perturbation changes its
    inputs in the model (below it), or its outputs and not its inputs (its own). What
    differs between two plain runs says nothing."""
    codes = set().union(*(lay.entry for lay in layers)) if layers else set()
    base = inputs_at(run, codes, params)
    steady = _changed(base, inputs_at(run, codes, params))
    out = {lay.label: _Placing() for lay in layers}
    for lay in layers:
        mine = [s for s in base if s.code in lay.entry]
        out[lay.label].inputs = {k for s in mine for k, _ in s.inputs}
        out[lay.label].positions = {n: k for s in mine for n, k in s.params.items()}
    rng = np.random.default_rng(seed)
    for name in names:
        p = params[name]
        kept = p.copy()
        try:
            p += (0.01 * (np.abs(p) + 1) * rng.choice([-1.0, 1.0], p.shape)).astype(p.dtype)
            moved = _changed(base, inputs_at(run, codes, params))
        finally:
            np.copyto(p, kept)
        if moved is None or steady is None:  # other calls: no evidence either way
            continue
        # a layer call whose inputs moved has the parameter below it; one whose outputs
        # moved and not its inputs, as its own (calls unsteady between plain runs: none)
        for lay in layers:
            for s, (i0, o0), (i1, o1) in zip(base, steady, moved, strict=True):
                if s.code not in lay.entry or i0 or o0:
                    continue
                if i1:
                    out[lay.label].below.add(name)
                elif o1:
                    out[lay.label].own.add(name)
    return out


def _changed(a: list[Seen], b: list[Seen]) -> list[tuple[bool, bool]] | None:
    """Call by call: did ``b``'s inputs, and its outputs, differ from ``a``'s? (None:
    not the same calls)"""
    if [s.code for s in a] != [s.code for s in b]:
        return None
    return [(not _same([v for _, v in x.inputs], [v for _, v in y.inputs])
             or [k for k, _ in x.inputs] != [k for k, _ in y.inputs],
             not _same(x.outputs, y.outputs)) for x, y in zip(a, b, strict=True)]


def _same(xs: list[np.ndarray], ys: list[np.ndarray]) -> bool:
    return len(xs) == len(ys) and all(
        u.shape == v.shape and np.array_equal(u, v, equal_nan=True)
        for u, v in zip(xs, ys, strict=True))


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

