"""``check_grad``: the gradient of a scalar function, checked as a vector-Jacobian
product of one output."""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any

import numpy as np

from ._core import check_vjp
from ._leaves import input_names
from ._result import CheckResult

__all__ = ["check_grad"]


def check_grad(
    f: Callable[..., Any],
    grad: Callable[..., Any],
    x: Any,
    *args: Any,
    seed: int = 0,
    **options: Any,
) -> CheckResult:
    """Check the gradient of a scalar function.

    Parameters
    ----------
    f : callable
        ``f(x, *args) -> float``.
    grad : callable
        ``grad(x, *args) -> ndarray`` of the shape of ``x``.
    x : array_like
        The point; results name it as ``f`` names its parameter (``x0`` if unnamed).
    *args
        Constants given to ``f`` and ``grad`` after the point (targets, labels), as
        they are: ``check_grad(loss, loss_grad, pred, target)``.
    seed : int
    **options
        As for :func:`check_vjp`.

    Returns
    -------
    CheckResult
    """

    try:
        y0 = np.asarray(f(np.array(x, copy=True), *copy.deepcopy(args)))
    except Exception:  # the check itself reports it, as status "error"
        y0 = np.zeros(())
    if y0.ndim != 0 and y0.size != 1:
        raise ValueError(f"check_grad: f must return a scalar, got shape {y0.shape}")

    def fwd(x_: Any) -> tuple[Any, Any]:  # the point as given: f may write into x_
        given = copy.deepcopy(x_)
        return np.asarray(f(x_, *copy.deepcopy(args))).reshape(()), given

    unit: list[str] = []

    def bwd(dy: np.ndarray, x_: Any) -> tuple[Any]:  # a point that is a list of arrays too
        g = grad(copy.deepcopy(x_), *copy.deepcopy(args))
        return (type(g)(np.asarray(a) * dy for a in g) if isinstance(g, (list, tuple))
                else _unit(np.asarray(g), np.shape(x_), unit) * dy,)

    fwd.loss_of_point = True  # type: ignore[attr-defined]  # (writes_elsewhere)
    # the input is named as f names it (x0 when f's signature cannot be read)
    fwd.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [inspect.Parameter(input_names(f, 1)[0], inspect.Parameter.POSITIONAL_ONLY)])
    res = check_vjp(fwd, bwd, [x], seed=seed, **options)
    res.notes += unit[:1]
    return res


def _unit(g: np.ndarray, shape: tuple[int, ...], unit: list[str]) -> np.ndarray:
    """A gradient laid out with other size-1 axes than the point (``(n,)`` for ``(n, 1)``,
    as a gradient handed to ``scipy.optimize`` is): reshaped, with a note; no step
    broadcasts it here, so its elements are the point's, in order."""
    if g.shape == shape or g.size != int(np.prod(shape)) or [d for d in g.shape if d != 1] != [
            d for d in shape if d != 1]:
        return g
    unit.append(f"the gradient has shape {g.shape}, the point {shape}: compared after "
                "reshaping (size-1 axes only)")
    return g.reshape(shape)
