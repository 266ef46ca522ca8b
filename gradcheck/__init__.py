"""gradcheck: verify hand-written backpropagation in NumPy.

The public API::

    res = gradcheck.check_vjp(fwd, bwd, inputs, seed=0)   # layer protocol (y, cache) / grads
    gradcheck.assert_vjp(fwd, bwd, inputs)               # raises GradientMismatch
    res = gradcheck.check_grad(f, grad, x)               # scalar function
    res = gradcheck.check_model(model, tokens, targets)  # every parameter of a model
    res = gradcheck.check_model(m32, tokens, targets, twin=m64)  # float32 vs float64 twin
    res = gradcheck.check_layer(layer, x)                # a layer object (forward/backward)
    res = gradcheck.check_loss(softmax_loss, scores, y)  # loss, dx = fn(x, *constants)
    res = gradcheck.check_elementwise(f, f.gradient, x)  # f(x) and its derivative f'(x)

Names are loaded on first use, so that the pytest plugin (``gradcheck.plugin``) can be
imported without NumPy work at plugin-load time.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._startup import install_if_command
from ._version import __version__

install_if_command()  # the command's own process only: a Ctrl-C while it imports

_EXPORTS = {
    "DEFAULT_RTOL": ".check._options",
    "Options": ".check._options",
    "assert_vjp": ".check._core",
    "check_grad": ".check._grad",
    "check_vjp": ".check._core",
    "check_model": ".check._model_check",
    "check_layer": ".check._layer",
    "assert_layer": ".check._layer",
    "check_loss": ".check._loss",
    "assert_loss": ".check._loss",
    "LayerConventionError": ".check._layer",
    "check_elementwise": ".check._elementwise",
    "assert_elementwise": ".check._elementwise",
    "Subject": ".subject",
    "LayerCase": ".subject",
    "ElementwiseCase": ".subject",
    "ModelCase": ".subject",
    "TrainingRun": ".subject",
    "STATUSES": ".check._result",
    "CheckResult": ".check._result",
    "ElementReport": ".check._result",
    "GradientMismatch": ".check._result",
    "InputResult": ".check._result",
}

__all__ = [
    "DEFAULT_RTOL",
    "STATUSES",
    "CheckResult",
    "ElementReport",
    "ElementwiseCase",
    "GradientMismatch",
    "InputResult",
    "LayerCase",
    "LayerConventionError",
    "ModelCase",
    "Options",
    "Subject",
    "TrainingRun",
    "__version__",
    "assert_elementwise",
    "assert_layer",
    "assert_loss",
    "assert_vjp",
    "check_elementwise",
    "check_grad",
    "check_layer",
    "check_loss",
    "check_model",
    "check_vjp",
]

if TYPE_CHECKING:
    from .check._core import assert_vjp, check_vjp
    from .check._elementwise import assert_elementwise, check_elementwise
    from .check._grad import check_grad
    from .check._layer import LayerConventionError, assert_layer, check_layer
    from .check._loss import assert_loss, check_loss
    from .check._model_check import check_model
    from .check._options import DEFAULT_RTOL, Options
    from .check._result import STATUSES, CheckResult, ElementReport, GradientMismatch, InputResult
    from .subject import ElementwiseCase, LayerCase, ModelCase, Subject, TrainingRun


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gradcheck' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
