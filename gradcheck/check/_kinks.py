"""Directions that leave the outputs at kinks out of the comparison.

A random direction over a ReLU, an ``abs``, a clip or a max-pool input whose elements
sit near their non-differentiable points crosses some of them: the difference quotient
of ``phi = sum(y * dy)`` then mixes both sides of every kink crossed, and the
comparison can say nothing (today's "kink" verdict) or, for a kink it did not
recognise, cries wolf. With many elements at kinks, every direction crosses some.

When the forward has several outputs and the backward can be called again, the kinks
are found on the output side, at no cost that grows with their number: along the
direction, every output is sampled at steps ``h``, ``h/2`` and ``h/4`` (six
evaluations). A smooth output's second difference ``c(s) = y(x+sv) - 2y(x) + y(x-sv)``
shrinks as ``s^2`` (``c(h) = 4 c(h/2)`` up to ``O(h^4)``); one that crosses a kink
shrinks linearly or drops to zero, and fails that ratio for at least one of the two
pairs of steps wherever the kink sits. Those outputs get a zero cotangent: ``phi'`` is
``phi`` without them, smooth along the direction, and the backward called with that
cotangent gives its exact gradient (a vector-Jacobian product is linear in ``dy``).
A wrong gradient on the smooth part is caught whatever share of outputs sits at kinks;
the outputs left out are counted (:attr:`~gradcheck.InputResult.kink_outputs`).

Where that is not possible (one scalar output, as for a loss or :func:`check_model`, or
every output at a kink), the direction is replaced by sparser ones, over a quarter of
its elements, then a quarter of that..., until one meets no kink: with a share ``p`` of
the elements at kinks, ``m`` elements miss them all with probability ``(1 - p)^m``.
A direction none of whose replacements met no kink is skipped; an input none of whose
directions could be compared is ``inconclusive``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._numeric import F64, Runner, Stencil
from ._options import NOISE_ULPS

__all__ = ["Compared", "Out", "can_mask", "direction_compare", "masked_compare"]

Out = tuple[float, float, float, float, float, bool]
Parts = dict[int, NDArray[np.floating[Any]]]

#: ``|c(s) - 4 c(s/2)| <= slack |c(s)|`` reads as smooth, by the lead dtype's size: a
#: smooth output departs from 4 by ``O((h v / L)^2)`` for a length scale ``L``, tiny
#: at float64's steps. The slack is tight because a kink's share ``delta`` of ``c``
#: moves the difference quotient by ``delta / 2h`` however large the smooth curvature
#: beside it (a linear layer after a ReLU), while an output wrongly left out costs
#: coverage only.
_RATIO_SLACK = {8: 1e-3, 4: 0.05}
_FLOOR_ULPS = 16.0 * NOISE_ULPS  # rounding of a second difference of four values
_SPARSE_TRIES = 10  # sparser directions tried in place of one that met a kink


def can_mask(runner: Runner) -> bool:
    """Whether outputs can be left out: several outputs and a callable backward."""
    return runner.vjp is not None and runner.y0.size > 1


@dataclass
class Compared:
    """One direction's comparison.

    ``parts`` is the direction actually compared: the one asked for, or a sparser one
    (``kept`` of its elements) where every output of the asked one met a kink.
    """

    ok: bool
    out: Out
    parts: Parts
    kink_outputs: int = 0
    kept: int = 0
    met_kinks: int = 0  # fuller directions tried first, which met a kink

    def note(self, total: int) -> str:
        """What a sparser direction means, for the input's message."""
        return (f"{self.met_kinks} direction(s) met kinks and were replaced by sparser "
                f"ones (over {self.kept} of {total} elements)") if self.kept else ""

    @property
    def kink(self) -> bool:
        return self.out[5]


def direction_compare(runner: Runner, lead: int, method: str, parts: Parts,
                      magnitude: float) -> Compared:
    """Compare along ``parts``, leaving out outputs at kinks, or else elements.

    The plain comparison of :meth:`Runner.compare` first; where it fails or meets a
    kink, and outputs can be left out, the comparison without the outputs at kinks
    (:func:`masked_compare`) decides; once a direction met such outputs, the later ones
    go to it directly. A direction that still meets a kink (a scalar output, or
    every output at one) is replaced by sparser ones (:func:`_sparser`).
    """
    first = _plain_or_masked(runner, lead, method, parts, magnitude)
    if not first.kink:
        return first
    return _sparser(runner, lead, method, parts, magnitude, first)


def _plain_or_masked(runner: Runner, lead: int, method: str, parts: Parts,
                     magnitude: float) -> Compared:
    if not (runner.kinky and can_mask(runner)):
        seen: list[Stencil] = []

        def probe(h: float) -> Stencil:
            seen.append(runner.joint(parts, h))
            return seen[-1]

        out = runner.compare(lead, probe, magnitude, method)
        ok = (not out[5]) and out[2] <= out[3] + out[4] * abs(out[1])
        if not can_mask(runner):
            return Compared(ok or out[5], out, parts)
        # A pass at the first comparison stands; one that needed smaller steps, or a
        # first Richardson pair whose one-sided differences show a kink, may owe it to
        # an error estimate that the kinks inflated.
        if ok and len(seen) == (1 if method == "central" else 2) and not _gap_kink(seen):
            return Compared(True, out, parts)
    h = runner.step(lead, "central" if method == "central" else "richardson", magnitude)
    out, left_out = masked_compare(runner, lead, parts, h)
    if left_out:
        runner.kinky = True
    ok = out[5] or out[2] <= out[3] + out[4] * abs(out[1])
    return Compared(ok, out, parts, left_out)


def _sparser(runner: Runner, lead: int, method: str, parts: Parts, magnitude: float,
             first: Compared) -> Compared:
    """Directions over a random quarter of the elements, then a quarter of that (a
    half below 64 elements)..., until one meets no kink (at most
    :data:`_SPARSE_TRIES`); ``first`` if none did.

    With a share ``p`` of the elements at kinks, a direction over ``m`` of them misses
    every kink with probability ``(1 - p)^m``. The next direction starts at twice the
    size that worked (``runner.sparse_from``).
    """
    sizes = [parts[i].size for i in parts]
    total = sum(sizes)
    m = min(2 * runner.sparse_from or total // 4, total // 4)
    for tried in range(1, _SPARSE_TRIES + 1):
        if m < 1:
            break
        sub: Parts = {}
        for (i, v), size in zip(parts.items(), sizes, strict=True):
            # every input keeps its share, and at least one element
            keep = np.zeros(size, dtype=bool)
            keep[runner.rng.choice(size, size=min(size, max(1, m * size // total)),
                                   replace=False)] = True
            sub[i] = np.where(keep.reshape(v.shape), v, v.dtype.type(0))
        got = _plain_or_masked(runner, lead, method, sub, magnitude)
        if not got.kink:
            runner.sparse_from = m
            got.kept, got.met_kinks = m, tried
            got.kink_outputs = max(got.kink_outputs, first.kink_outputs)
            return got
        m = m // 4 if m > 64 else m // 2
    return first


def _gap_kink(seen: list[Stencil]) -> bool:
    """The kink test of :meth:`Runner.compare` on the first two stencils: for a smooth
    function the gap between the one-sided differences shrinks linearly with the step."""
    if len(seen) < 2:
        return False
    s1, s2 = seen[0], seen[1]
    gap1, gap2 = s1.dplus - s1.dminus, s2.dplus - s2.dminus
    dev = abs(gap1 - 2.0 * gap2)
    return dev > 0.25 * max(abs(gap1), abs(gap2)) and dev > 4.0 * (s1.noise + s2.noise)


def _smooth(c_big: F64, c_small: F64, floor: F64, slack: float) -> NDArray[np.bool_]:
    """Outputs whose second difference shrinks as the square of the step."""
    dev = np.abs(c_big - 4.0 * c_small)
    return dev <= slack * np.abs(c_big) + floor


def masked_compare(runner: Runner, lead: int, parts: Parts, h: float) -> tuple[Out, int]:
    """The comparison along ``parts`` without the outputs that cross a kink.

    Returns ``(out, left_out)``; ``out`` is a kink (``out[5]``) when every output
    with a non-zero cotangent sits at a kink.
    """
    steps = (h, h / 2.0, h / 4.0)
    runs = [runner.joint_outputs(parts, s) for s in steps]
    y0 = runner.y0.reshape(-1)
    eps = max(runner.eps(i) for i in parts)
    floor = _FLOOR_ULPS * eps * np.maximum(np.abs(y0), runner.y_rms)
    curv = [yp.reshape(-1) + ym.reshape(-1) - 2.0 * y0 for yp, ym, _m in runs]
    finite = np.logical_and.reduce([np.isfinite(c) for c in curv])
    slack = _RATIO_SLACK.get(runner.arrays[lead].dtype.itemsize, 0.25)
    smooth = (_smooth(curv[0], curv[1], floor, slack) & _smooth(curv[1], curv[2], floor, slack)
              & finite)
    dy = runner.dy.reshape(-1)
    left_out = int(np.count_nonzero(~smooth & (dy != 0)))
    if not finite.all():
        names = "+".join(runner.names[i] for i in parts)
        runner.nonfinite.append(f"{names} (direction)")
    dym = np.where(smooth, dy, 0.0)
    if not np.any(dym):
        return (0.0, 0.0, 0.0, 0.0, 0.0, True), left_out
    grads = runner.vjp(dym) if left_out else runner.grads  # type: ignore[misc]
    d, noise, a = [], [], []
    for s, (yp, ym, moved) in zip(steps, runs, strict=True):
        wide = np.maximum(np.abs(yp.reshape(-1)) + np.abs(ym.reshape(-1)), runner.y_rms)
        w = wide * np.abs(dym)
        d.append(float(np.dot(yp.reshape(-1) - ym.reshape(-1), dym)) / (2.0 * s))
        noise.append(NOISE_ULPS * eps * float(np.sqrt(np.dot(w, w))) / (2.0 * s))
        a.append(sum(float(np.dot(g.reshape(-1), (xp.astype(np.float64) - xm).reshape(-1)))
                     for i, (xp, xm) in moved.items()
                     if (g := grads[i]) is not None) / (2.0 * s))
    r1, r2 = (4.0 * d[1] - d[0]) / 3.0, (4.0 * d[2] - d[1]) / 3.0
    analytic = (4.0 * a[2] - a[1]) / 3.0
    err = abs(r1 - r2) / 15.0 + 3.0 * max(noise[1], noise[2])
    atol, rtol, _tol = runner.tolerance(lead, err, r2)
    return (analytic, r2, abs(analytic - r2), atol, rtol, False), left_out
