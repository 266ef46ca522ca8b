"""Result objects of the gradient checker.

Every check returns a :class:`CheckResult`; the pytest plugin, the command line and the
HTML report all render these objects (through :meth:`CheckResult.to_dict`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ._json import plain

__all__ = ["STATUSES", "CheckResult", "ElementReport", "GradientMismatch", "InputResult"]

#: Every status a check can end with, and what it means.
STATUSES: dict[str, str] = {
    "ok": "the analytic gradient matches the numerical one everywhere it was checked",
    "mismatch": "at least one checked element (or direction) is outside the tolerance",
    "inconclusive": "nothing could be compared for an input (every element or direction "
                    "sat at a kink), or nothing at all was compared: no evidence, no pass",
    "shape-mismatch": "the backward returned the wrong number of gradients or a wrong shape",
    "non-finite": "NaN or Inf in the output, a gradient, or a numerical derivative",
    "nondeterministic": "two calls with the same arguments gave different results",
    "mutation": "the forward or backward modified its inputs, or the backward its cache",
    "bad-protocol": "the forward or backward did not follow the (y, cache) / grads protocol",
    "aliasing": "the backward handed out views of arrays that it changed afterwards",
    "error": "the forward or backward raised an exception (type, message and the innermost "
             "frame of the user's code are in the result)",
}


class GradientMismatch(AssertionError):
    """Raised by :func:`gradcheck.assert_vjp` when a check does not pass.

    Subclasses :class:`AssertionError` so that a plain pytest test reports it as a
    test failure. Its message opens with :meth:`CheckResult.headline` (the hint first,
    then the failing input, the check's name and the seed: what pytest's one-line
    summary shows), followed by the readable table of :meth:`CheckResult.report`.
    """

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        super().__init__(f"{result.headline()}\n{result.report()}")


# Shown as ``gradcheck.GradientMismatch`` (its public name) in tracebacks.
GradientMismatch.__module__ = "gradcheck"


@dataclass
class ElementReport:
    """One checked element (or direction) of one input.

    Attributes
    ----------
    input : str
        Name of the input (``"x0"``, ``"x1"``... or a parameter name).
    index : tuple of int
        Index of the element; empty for a direction.
    analytic, numeric : float
        The backward's value and the finite-difference estimate.
    error : float
        ``|analytic - numeric|``.
    tolerance : float
        ``atol + rtol * |numeric|`` used for this element.
    kind : str
        ``"element"``, ``"direction"``, ``"kink"``, or ``"screened"`` (an element that
        failed the first comparison and was not re-examined at smaller steps, because
        enough failures of its input had been confirmed already).
    """

    input: str
    index: tuple[int, ...]
    analytic: float
    numeric: float
    error: float
    tolerance: float
    kind: str = "element"

    @property
    def failed(self) -> bool:
        """Whether the element is outside its tolerance (kinks never fail)."""
        if self.kind == "kink":
            return False
        return not (self.error <= self.tolerance)

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        return {
            "input": self.input,
            "index": [int(i) for i in self.index],
            "analytic": plain(float(self.analytic)),
            "numeric": plain(float(self.numeric)),
            "error": plain(float(self.error)),
            "tolerance": plain(float(self.tolerance)),
            "kind": self.kind,
            "failed": self.failed,
        }


@dataclass
class InputResult:
    """Outcome of the check of one input tensor (or one model parameter).

    Attributes
    ----------
    name : str
        ``"x0"``, ``"x1"``... for :func:`check_vjp`, the parameter name for
        :func:`check_model`.
    shape : tuple of int
    dtype : str
    status : str
        ``"ok"``, ``"mismatch"``, ``"inconclusive"`` (every element or direction sat at
        a kink: nothing compared), ``"non-finite"``, ``"constant"`` (no gradient
        returned and none expected) or ``"skipped"`` (integer input).
    mode : str
        ``"full"``, ``"sampled"`` or ``"directional"`` as used for this input.
    max_abs_error, max_rel_error : float
        Over the checked elements or directions (kinks excluded).
    atol, rtol : float
        The tolerance actually used: ``|a - n| <= atol + rtol * |n|``; ``atol`` is the
        largest per-element absolute tolerance (derived from the estimated error of the
        numerical derivative unless the user gave one).
    checked : int
        Number of elements (or directions) compared.
    kinks : int
        Elements (or directions) skipped because their stencil straddles a
        non-differentiable point.
    kink_outputs : int
        Directional mode: outputs found at kinks along a direction and left out of its
        comparison (the most in one direction); the smooth outputs were compared.
    worst : list of ElementReport
        The worst elements, failures first.
    miss_probability : float or None
        Directional mode: the probability that a gradient wrong by a relative 1e-4 in
        a random direction would have passed all directions. Sampled mode: the
        probability that a single wrong element was not among the samples.
    detectable_rel_error : float or None
        Directional mode: the relative error (in a random direction) that the
        directions catch with probability 0.99.
    hint : str
        A pattern in the error, if one was recognised.
    localised : bool
        Whether elementwise localisation ran after a directional failure.
    joint : bool
        Directional mode: the directions spanned this input and the other directional
        inputs together (each input's part scaled to that input).
    """

    name: str
    shape: tuple[int, ...]
    dtype: str
    status: str = "ok"
    mode: str = "full"
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0
    atol: float = 0.0
    rtol: float = 0.0
    checked: int = 0
    kinks: int = 0
    kink_outputs: int = 0
    worst: list[ElementReport] = field(default_factory=list)
    miss_probability: float | None = None
    detectable_rel_error: float | None = None
    hint: str = ""
    localised: bool = False
    gradient_norm: float | None = None
    message: str = ""
    joint: bool = False

    @property
    def passed(self) -> bool:
        """Whether this input passed (constant and integer inputs pass)."""
        return self.status in ("ok", "constant", "skipped")

    @property
    def differentiated(self) -> bool:
        """Whether this input was given to be differentiated (not a constant or an
        integer input)."""
        return self.status not in ("constant", "skipped")

    @property
    def compared(self) -> bool:
        """Whether something of it was compared (an empty array passes vacuously)."""
        empty = bool(self.shape) and 0 in self.shape
        return self.checked > 0 or (empty and self.status == "ok")

    def to_dict(self) -> dict[str, Any]:
        """Plain-JSON form."""
        out: dict[str, Any] = {
            "name": self.name,
            "shape": [int(s) for s in self.shape],
            "dtype": self.dtype,
            "status": self.status,
            "passed": self.passed,
            "mode": self.mode,
            "max_abs_error": plain(float(self.max_abs_error)),
            "max_rel_error": plain(float(self.max_rel_error)),
            "atol": plain(float(self.atol)),
            "rtol": plain(float(self.rtol)),
            "checked": int(self.checked),
            "kinks": int(self.kinks),
            "kink_outputs": int(self.kink_outputs),
            "compared": self.compared,
            "worst": [w.to_dict() for w in self.worst],
            "miss_probability": plain(self.miss_probability),
            "detectable_rel_error": plain(self.detectable_rel_error),
            "hint": self.hint,
            "localised": self.localised,
            "joint": self.joint,
            "gradient_norm": plain(self.gradient_norm),
            "message": self.message,
        }
        return out


@dataclass
class CheckResult:
    """Outcome of :func:`gradcheck.check_vjp`, :func:`~gradcheck.check_grad` or
    :func:`~gradcheck.check_model`.

    Attributes
    ----------
    passed : bool
    status : str
        One of :data:`STATUSES`.
    message : str
        One line saying what happened.
    inputs : list of InputResult
        One per input tensor or model parameter.
    method : str
        ``"central"``, ``"richardson"`` or ``"complex"`` (the method actually used).
    mode : str
        ``"full"``, ``"sampled"``, ``"directional"`` or ``"mixed"``.
    evaluations : int
        Calls of the forward (or loss) spent on finite differences and checks.
    backward_calls : int
    seed : int
    notes : list of str
        Things the user should know (complex step rejected, gradient ignored...).
    name : str
        A label for reports.
    kind : str
        ``"vjp"``, ``"layer"``, ``"loss"`` or ``"model"``: which entry point made it.
    error : dict or None
        Status ``error``: ``{"in", "type", "message", "where"}`` of the exception the
        user's code raised (``where``: the innermost frame of the user's code).
    exception : BaseException or None
        That exception itself (not serialised); ``assert_*`` chain to it.
    tensors_checked, tensors_total, coverage
        Properties: the inputs (or parameters) given to be differentiated, how many of
        them were actually compared, and ``"checked 3/3 tensors"``; in the JSON too.
    """

    passed: bool
    status: str
    message: str
    inputs: list[InputResult]
    method: str
    mode: str
    evaluations: int
    backward_calls: int
    seed: int
    notes: list[str] = field(default_factory=list)
    name: str = ""
    kind: str = "vjp"
    error: dict[str, str] | None = None
    exception: BaseException | None = field(default=None, repr=False, compare=False)

    @property
    def kinks(self) -> int:
        """Kinks skipped over all inputs."""
        return sum(i.kinks for i in self.inputs)

    @property
    def tensors_total(self) -> int:
        """Inputs (or parameters) given to be differentiated."""
        return sum(1 for i in self.inputs if i.differentiated)

    @property
    def tensors_checked(self) -> int:
        """Of those, the ones actually compared (at least one element or direction)."""
        return sum(1 for i in self.inputs if i.differentiated and i.compared)

    @property
    def coverage(self) -> str:
        """``"checked 11/11 tensors"``: tensors compared out of those to differentiate;
        for a layer, parameters and inputs that ``wrt`` left out count in the total
        (``"checked 1/3 tensors (2 held constant by wrt: W, b)"``), since a layer's
        parameters are found, not listed by the user."""
        held = [i.name for i in self.inputs if self.kind == "layer"
                and i.status == "constant" and i.message.startswith("not in wrt")]
        text = f"checked {self.tensors_checked}/{self.tensors_total + len(held)} tensors"
        return text + (f" ({len(held)} held constant by wrt: {', '.join(held)})" if held
                       else "")

    def _coverage_line(self) -> str:
        """The coverage, or ``nothing checked: <status>`` when a check stopped early."""
        if self.tensors_checked == 0 and self.status not in ("ok", "mismatch", "inconclusive"):
            return f"nothing checked: {self.status}"
        return self.coverage

    @property
    def hint(self) -> str:
        """The first hint found on a failing input, if any."""
        for inp in self.inputs:
            if inp.hint and not inp.passed:
                return inp.hint
        return ""

    def headline(self) -> str:
        """One line, the most useful part first: the hint of the first failing input
        (when one was recognised), the input, the status, the check's name and the
        seed; for a passing check, ``gradient check PASSED name``."""
        if self.passed:
            return f"gradient check PASSED {self.name}".rstrip()
        failing = [i for i in self.inputs if not i.passed]
        bad = next((i for i in failing if i.hint), failing[0] if failing else None)
        where = (f"{bad.name} {bad.status}" if bad is not None else self.status)
        where += f" in {self.name}" if self.name else ""
        if self.hint:
            return f"hint: {self.hint} ({where}, seed={self.seed})"
        return f"gradient check FAILED: {where}: {self.message} (seed={self.seed})"

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON types only (safe for ``json.dumps`` and for pytest-xdist)."""
        return {
            "name": self.name,
            "kind": self.kind,
            "passed": bool(self.passed),
            "status": self.status,
            "message": self.message,
            "method": self.method,
            "mode": self.mode,
            "evaluations": int(self.evaluations),
            "backward_calls": int(self.backward_calls),
            "seed": int(self.seed),
            "kinks": int(self.kinks),
            "tensors_checked": self.tensors_checked,
            "tensors_total": self.tensors_total,
            "coverage": self.coverage,
            "hint": self.hint,
            "notes": list(self.notes),
            "error": dict(self.error) if self.error else None,
            "inputs": [i.to_dict() for i in self.inputs],
        }

    def report(self, *, max_rows: int = 8) -> str:
        """A short human-readable report: verdict, per-input line, worst elements."""
        head = "PASSED" if self.passed else "FAILED"
        lines = [
            f"gradient check {head} [{self.status}] {self.name}".rstrip(),
            f"  {self.message}",
            f"  {self._coverage_line()}; "
            + "".join(f"{k}={v} " for k, v in (("method", self.method), ("mode", self.mode))
                      if v)  # (no method when nothing was compared)
            + f"evaluations={self.evaluations} seed={self.seed} (rerun with seed={self.seed} "
            "to reproduce)",
        ]
        if self.error and self.error.get("where"):
            lines.append(f"  at {self.error['where']}")
        for inp in self.inputs:
            extra = ""
            if inp.miss_probability is not None:
                extra = f" p_miss(1e-4)={inp.miss_probability:.1e}"
            if inp.detectable_rel_error is not None:
                extra += f" catches_rel>={inp.detectable_rel_error:.1e}"
            lines.append(
                f"  {inp.name} {inp.shape} {inp.dtype}: {inp.status} ({inp.mode}, "
                f"checked={inp.checked}, kinks={inp.kinks}, "
                + (f"kink_outputs={inp.kink_outputs}, " if inp.kink_outputs else "")
                + f"max_abs={inp.max_abs_error:.3e}, "
                f"max_rel={inp.max_rel_error:.3e}, atol={inp.atol:.2e}, rtol={inp.rtol:.1e})"
                + extra
            )
            if inp.message:
                lines.append(f"    {inp.message}")
            if inp.hint:
                lines.append(f"    hint: {inp.hint}")
        rows = [w for inp in self.inputs if not inp.passed for w in inp.worst][:max_rows]
        if rows:
            lines.append(
                f"  {'input':<10} {'index':<14} {'analytic':>13} {'numeric':>13} "
                f"{'error':>10} {'tolerance':>10}"
            )
            for w in rows:
                idx = str(tuple(int(i) for i in w.index)) if w.index else "direction"
                lines.append(
                    f"  {w.input:<10} {idx:<14} {w.analytic:>13.6g} {w.numeric:>13.6g} "
                    f"{w.error:>10.3e} {w.tolerance:>10.3e}"
                    + ("  (kink)" if w.kind == "kink" else "")
                )
        for note in self.notes:
            lines.append(f"  note: {note}")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.report()
