"""gradcheck: verify hand-written backpropagation in NumPy.

The public API::

    res = gradcheck.check_vjp(fwd, bwd, inputs, seed=0)   # layer protocol (y, cache) / grads
    gradcheck.assert_vjp(fwd, bwd, inputs)               # raises GradientMismatch
    res = gradcheck.check_grad(f, grad, x)               # scalar function
    res = gradcheck.check_model(model, tokens, targets)  # every parameter of a model
"""

from ._core import DEFAULT_RTOL, assert_vjp, check_grad, check_vjp
from ._model_check import check_model
from ._result import STATUSES, CheckResult, ElementReport, GradientMismatch, InputResult

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_RTOL",
    "STATUSES",
    "CheckResult",
    "ElementReport",
    "GradientMismatch",
    "InputResult",
    "__version__",
    "assert_vjp",
    "check_grad",
    "check_model",
    "check_vjp",
]
