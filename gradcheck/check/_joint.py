"""Directions that span every input at once, and localisation when one fails.

One random direction moves all checked inputs together, each input's part scaled to
that input (``max(1, max|x|)``, the step a per-input direction would take), so a
directional check costs ``2 * directions`` evaluations whatever the number of inputs
(or of model parameter tensors). When a direction fails, the inputs are bisected: each
half gets a direction of its own, failing halves are split again, and a single failing
input is then localised to its elements by :meth:`InputChecker.localise`. Each direction
is compared by :func:`gradcheck.check._kinks.direction_compare` (outputs at kinks left out, or
sparser directions); one that still meets a kink is no evidence and another is drawn.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import NDArray

from ._kinks import direction_compare
from ._modes import InputChecker, inconclusive, miss_figures
from ._numeric import Runner
from ._options import Options
from ._result import ElementReport, InputResult

__all__ = ["MISS_TARGET", "joint_checks"]

Out = tuple[float, float, float, float, float, bool]

#: Joint directions stop early once every input's stated probability of missing a
#: relative error of 1e-4 is at most this.
MISS_TARGET = 1e-6
_REL = 1e-4  # the relative error the miss probability is stated for


def _rms(v: NDArray[np.floating[Any]]) -> float:
    flat = v.reshape(-1)  # a float32 dot: plenty for a statistic, and no copy
    return float(np.sqrt(float(np.dot(flat, flat)) / flat.size)) if flat.size else 0.0


class JointCheck:
    """Joint directions over ``members`` (indices into ``runner.arrays``)."""

    def __init__(self, runner: Runner, members: list[int], method: dict[int, str],
                 opts: Options) -> None:
        self.r = runner
        self.members = members
        self.method = method
        self.opts = opts
        self.scale = {i: max(1.0, float(np.max(np.abs(runner.arrays[i]))))
                      for i in members}
        self.gnorms: dict[int, float] = {}
        self.kink_outputs = 0  # the most outputs at kinks left out of one direction
        self.met_kinks = 0  # directions replaced by sparser ones
        self.sparse = ""  # what the last sparser direction was

    # -- one direction -------------------------------------------------------------------
    def draw(self, members: list[int]) -> dict[int, NDArray[np.floating[Any]]]:
        """A random direction over ``members``, each part scaled to its input.

        Entries are uniform on ``[-scale/2, scale/2]`` (RMS ``0.29 scale``, that of a
        Gaussian direction normalised to ``max|v| = scale``, which the truncation error of
        the differences along a direction of many elements needs): symmetric and continuous (no two
        entries cancel exactly, unlike random signs), and several times cheaper to draw
        than Gaussians; over many elements ``e.u`` is Gaussian all the same.
        """
        parts: dict[int, NDArray[np.floating[Any]]] = {}
        for i in members:
            # float32 is plenty for a direction: the analytic side uses the displacement
            # actually applied, whatever its rounding.
            z = self.r.rng.random(self.r.arrays[i].shape, dtype=np.float32)
            z -= np.float32(0.5)
            z *= np.float32(self.scale[i])
            parts[i] = z
        return parts

    def compare(self, parts: dict[int, NDArray[np.floating[Any]]]) -> tuple[bool, Out]:
        """Compare the analytic and numerical derivative along ``parts``."""
        members = list(parts)
        # The narrowest dtype sets the step, the method and the tolerance.
        lead = max(members, key=self.r.eps)
        got = direction_compare(self.r, lead, self.method[lead], parts, 1.0)
        self.kink_outputs = max(self.kink_outputs, got.kink_outputs)
        self.met_kinks += got.met_kinks
        if got.kept:
            self.sparse = got.note(sum(p.size for p in parts.values()))
        parts.update(got.parts)  # the direction compared (sparser where kinks forced it)
        return got.ok, got.out

    # -- the whole check -----------------------------------------------------------------
    def run(self) -> dict[int, InputResult]:
        """Up to ``directions`` joint directions; on a failure, find the wrong inputs.

        After two directions over all inputs, the next ones span only the inputs whose
        stated probability of missing a relative error of 1e-4 is still above
        :data:`MISS_TARGET` (inputs with a zero gradient have none); they stop when
        there are none left.
        """
        rows: list[tuple[dict[int, float], Out]] = []
        failed: list[Out] = []
        active = list(self.members)
        compared = 0
        # A direction that met a kink it could not leave out is no evidence: another
        # one is drawn in its place, up to twice the number asked for.
        for _attempt in range(2 * self.opts.directions):
            if compared >= self.opts.directions:
                break
            parts = self.draw(active)
            ok, out = self.compare(parts)
            rows.append(({i: _rms(v) for i, v in parts.items()}, out))
            if out[5]:
                continue
            compared += 1
            if not ok:
                failed.append(out)
            if compared >= 2 and not failed:
                active = [i for i in self.members if not self._confident(i, rows)]
                if not active:
                    break
        results = {i: self._passed_result(i, rows) for i in self.members}
        if failed and self.opts.localise:
            self._bisect(self.members, failed[0], results)
        elif failed:
            for i in self.members:
                res = results[i]
                res.status = "mismatch"
                res.message = ("a joint direction failed; localisation is off, so the "
                               "wrong input is not known")
        return results

    def _gnorm(self, i: int) -> float:
        if i not in self.gnorms:
            g = self.r.grads[i]
            self.gnorms[i] = float(np.linalg.norm(g)) if g is not None else 0.0
        return self.gnorms[i]

    def _confident(self, i: int, rows: list[tuple[dict[int, float], Out]]) -> bool:
        """Whether input ``i`` needs no more directions: its stated miss probability is
        within the target, or a relative 1e-4 error of its gradient is below the
        absolute noise floor of the differences (a gradient that is zero but for
        rounding: more directions cannot resolve it)."""
        gnorm = self._gnorm(i)
        if gnorm == 0:
            return True
        rows = [(s, out) for s, out in rows if not out[5]]  # kinks say nothing
        # (sparser directions, forced by kinks, are below the floor for their size only)
        if not self.sparse and any(_REL * gnorm * s[i] < out[3] for s, out in rows
                                  if s.get(i)):
            return True
        mine = [(s[i], out[3] + out[4] * abs(out[1])) for s, out in rows if s.get(i)]
        p, _ = miss_figures(gnorm, [t for _s, t in mine], [s for s, _t in mine])
        return p is not None and p <= MISS_TARGET

    def _passed_result(self, i: int, rows: list[tuple[dict[int, float], Out]]
                       ) -> InputResult:
        """What the joint directions say about input ``i``."""
        arr = self.r.arrays[i]
        res = InputResult(name=self.r.names[i], shape=tuple(arr.shape), dtype=arr.dtype.name,
                          mode="directional", joint=len(self.members) > 1)
        g = self.r.grads[i]
        tols, scales = [], []
        for rms, (a, n, error, atol, rtol, kink) in rows:
            if not rms.get(i):
                continue  # a later direction over the other inputs only
            tol = atol + rtol * abs(n)
            res.worst.append(ElementReport(res.name, (), a, n, error, tol,
                                           "kink" if kink else "direction"))
            if kink:
                res.kinks += 1
                continue
            res.checked += 1
            res.atol, res.rtol = max(res.atol, atol), rtol
            res.max_abs_error = max(res.max_abs_error, error)
            res.max_rel_error = max(res.max_rel_error,
                                    error / max(abs(a), abs(n)) if max(abs(a), abs(n)) else 0.0)
            tols.append(tol)
            scales.append(rms[i])
        gnorm = self._gnorm(i)
        res.miss_probability, res.detectable_rel_error = miss_figures(gnorm, tols, scales)
        res.gradient_norm = gnorm if g is not None else None
        res.kink_outputs = self.kink_outputs
        res.kinks += self.met_kinks
        notes = []
        if res.joint:
            notes.append(f"directions shared with {len(self.members) - 1} other input(s)")
        if self.kink_outputs:
            notes.append(f"up to {self.kink_outputs} output(s) at kinks left out of a "
                         "direction")
        if self.sparse:
            notes.append(self.sparse)
        res.message = "; ".join(notes)
        inconclusive(res, "directional")
        return res

    def _bisect(self, members: list[int], evidence: Out, results: dict[int, InputResult]
                ) -> None:
        """Find the failing inputs among ``members``, which failed along a direction."""
        if len(members) == 1:
            self._localise(members[0], evidence, results)
            return
        half = len(members) // 2
        halves = [members[:half], members[half:]]
        for _attempt in range(2):  # a second direction each if neither half failed
            failing = []
            for part in halves:
                ok, out = self.compare(self.draw(part))
                if not ok:
                    failing.append((part, out))
            for part, out in failing:
                self._bisect(part, out, results)
            if failing:
                return
        a, n, error, atol, rtol, _k = evidence
        for i in members:
            res = results[i]
            res.status = "mismatch"
            res.message = (
                f"a joint direction over {', '.join(self.r.names[j] for j in members)} "
                f"failed (analytic {a:.6g}, numerical {n:.6g}, error {error:.2e} > tolerance "
                f"{atol + rtol * abs(n):.2e}) but none of its halves did: the error is not "
                "pinned to one input"
            )

    def _localise(self, i: int, evidence: Out, results: dict[int, InputResult]) -> None:
        """Input ``i`` alone failed along a direction: find its wrong elements."""
        ic = InputChecker(self.r, i, self.method[i])
        ic._record((), evidence, "direction")
        ic.localise()
        res = ic.finish("directional")
        res.kink_outputs = max(res.kink_outputs, self.kink_outputs)
        res.joint = len(self.members) > 1
        res.miss_probability = results[i].miss_probability
        res.detectable_rel_error = results[i].detectable_rel_error
        results[i] = res


def joint_checks(runner: Runner, members: list[int], opts: Options,
                 method: dict[int, str]) -> dict[int, InputResult]:
    """Directional check of ``members`` along joint directions; results by input."""
    if not members:
        return {}
    return JointCheck(runner, members, method, opts).run()

