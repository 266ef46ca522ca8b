"""What ``check_layer`` says when it cannot check: keyword arguments of the wrong kind,
and the result of code that raised (or called ``exit()``) while it was observed."""

from __future__ import annotations

import re
from typing import Any

from ..read._loss_read import more_than_dout
from ..read._observe import backward_named
from ..read._protocol import ProtocolError, UserCodeError
from ._gradients import plain_result
from ._options import Options
from ._result import CheckResult

__all__ = ["error_result", "exit_result", "names_given"]


def names_given(forward: Any, backward: Any, output: Any, wrt: Any) -> None:
    """A ``TypeError`` naming the keyword when one is not a name (a list for ``output=``,
    a float in ``wrt=``)."""
    for key, value in (("forward", forward), ("backward", backward), ("output", output)):
        if value is not None and not isinstance(value, str):
            raise TypeError(f"check_layer: {key}= must be one name or path (a str), got "
                            f"{type(value).__name__} {value!r}" + (
                                "; a layer with several outputs is checked through "
                                "check_vjp on a forward returning them all" if key ==
                                "output" else ""))
    items = [wrt] if isinstance(wrt, (int, str)) else wrt if isinstance(wrt, (list, tuple)) \
        else None
    if wrt is not None and (items is None or not all(isinstance(k, (int, str)) for k in items)):
        raise TypeError("check_layer: wrt= takes input positions (0, 'x0'), the forward's "
                        f"argument names or parameter names, one or a list; got {wrt!r}")


def error_result(exc: UserCodeError | ProtocolError, seed: int, name: str,
                  kind: str) -> CheckResult:
    if isinstance(exc, ProtocolError):
        at = [plain_result(exc.at[0], exc.at[1], exc.status, exc.message)] if exc.at else []
        return CheckResult(passed=False, status=exc.status, message=exc.message, inputs=at,
                           method="", mode="", evaluations=1, backward_calls=0, seed=seed,
                           name=name, kind=kind)
    hint = exc.advice
    if not hint and exc.ours and isinstance(exc.exc, TypeError) and re.search(
            r"takes 1 positional argument but \d+ were given", exc.text):
        hint = ("; it takes no input: it reads what it works on from the object (set there "
                "by the caller), which check_layer cannot observe; check it through functions "
                "that set those attributes and call it: check_vjp(fwd, bwd, [x])")
    elif not hint and exc.ours and isinstance(exc.exc, TypeError) and "were given" in exc.text:
        hint = ("; check_layer gives the forward every input, positionally: pass only the "
                "forward's own arguments (the targets of a cost it never computes are not); "
                "when its backward takes the rest, the targets of a loss no method of it "
                "computes, give that loss: check_layer(net, x, y, loss=lambda output, y: "
                "...)")
    elif not hint and exc.ours and isinstance(exc.exc, TypeError) and "missing" in exc.text \
            and backward_named(exc.what.rsplit(".", 1)[-1]) and "." in exc.what:
        hint = more_than_dout(exc.what, targets=True)
    elif not hint and exc.ours and isinstance(exc.exc, TypeError) and "missing" in exc.text:
        hint = ("; check_layer passes its inputs to the forward positionally: give every "
                "argument it takes, e.g. check_layer(layer, x, True) for a training flag")
    res = CheckResult(passed=False, status="error",
                      message=f"{exc.what} raised {exc.type}: {exc.text}{hint}", inputs=[],
                      method="", mode="", evaluations=1, backward_calls=0, seed=seed,
                      name=name, kind=kind)
    res.error, res.exception = exc.as_dict(), exc.exc
    return res




def exit_result(layer: Any, exc: SystemExit, opts: Options) -> CheckResult:
    """The ``error`` result of a layer whose code called ``exit()`` where it was
    observed (an error handler's ``sys.exit(1)``): never the end of the caller."""
    res = error_result(UserCodeError(f"{type(layer).__name__}'s code", exc), opts.seed,
                       opts.name, "layer")
    res.message += ("; it called exit() (SystemExit), which ends the reading: raise an "
                    "exception instead, or name its methods (forward=, backward=)")
    return res
