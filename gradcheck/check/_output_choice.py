"""A forward returning nothing that stored several arrays, any of which may be its output
(``output`` beside ``activatedOutput``): the check under each. Wrong under every one
(each a gradient verdict) is that verdict, the nearest shown; right under every one is a
pass; right under some only is no verdict, since which one the caller reads cannot be
observed (the message says which passed)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ..read._discovery import LayerConventionError
from ..read._protocol import OutputChoice
from ._layer_errors import error_result
from ._options import Options
from ._result import CheckResult

__all__ = ["each_output"]


def each_output(choice: OutputChoice, run: Callable[[str], CheckResult], opts: Options
                ) -> CheckResult:
    """The result of the reading above; ``run(path)`` checks with ``output=path``."""
    results: list[tuple[str, CheckResult]] = []
    for path in choice.paths:
        try:
            results.append((path, run(path)))
        except LayerConventionError:  # read that way, an array is left unread
            continue
    complete = len(results) == len(choice.paths)
    named = ", ".join(choice.paths)
    if complete and all(res.passed for _, res in results):
        res = results[0][1]
        res.notes.append(f"the output may be any of {named}: the gradients are right under "
                         "each")
        return res
    if complete and all(res.status in ("mismatch", "shape-mismatch") for _, res in results):
        path, res = min(results, key=lambda pr: max(
            (i.max_abs_error for i in pr[1].inputs), default=np.inf))
        res.notes.append(f"the output may be any of {named}: the gradient is wrong under "
                         f"each (shown: {path}, the nearest)")
        return res
    passing = [p for p, res in results if res.passed]
    if passing:
        failing = ", ".join(p for p in choice.paths if p not in passing)
        choice.message = (choice.message.rstrip(".") + f". It passes with output="
                          f"{passing[0]!r} and not with {failing}: which one your code "
                          "reads cannot be observed.")
    return error_result(choice, opts.seed, opts.name, "layer")
