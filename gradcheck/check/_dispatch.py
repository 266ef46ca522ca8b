"""Which check each input gets: every element, a sample, or joint directions.

:func:`run_checks` sends the inputs whose mode is ``full`` or ``sampled`` to a
per-input :class:`~gradcheck.check._modes.InputChecker` and checks all those in
``directional`` mode together along joint directions (:mod:`gradcheck.check._joint`), except
inputs whose analytic gradient is all zero: those get directions of their own.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from ._joint import joint_checks
from ._modes import InputChecker
from ._numeric import Runner, resolve_method
from ._options import Options
from ._result import InputResult

__all__ = ["run_checks"]


def run_checks(
    runner: Runner,
    checked: list[int],
    opts: Options,
    *,
    mode_for: Callable[[int], str],
    method: str,
) -> list[InputResult]:
    """Run the checks chosen by ``mode_for``; one result per input in ``checked``."""
    methods = {i: resolve_method(method, runner.arrays[i].dtype) for i in checked}
    by_input: dict[int, InputResult] = {}
    joint: list[int] = []
    for i in checked:
        arr = runner.arrays[i]
        mode = mode_for(i)
        g = runner.grads[i]
        if arr.size and mode == "directional" and g is not None and np.any(g):
            joint.append(i)
            continue
        ic = InputChecker(runner, i, methods[i])
        if arr.size == 0:
            pass
        elif mode == "directional":
            # An all-zero gradient gets directions of its own: in the joint ones its
            # input may have too small a share for "no gradient at all" to show.
            ic.directional_and_localise(opts)
        elif mode == "full":
            ic.check_full()
        else:
            m = min(opts.samples, arr.size)
            idx = np.sort(runner.rng.choice(arr.size, size=m, replace=False))
            ic.check_elements(idx)
            ic.res.miss_probability = 1.0 - m / arr.size
        by_input[i] = ic.finish(mode)
    by_input.update(joint_checks(runner, joint, opts, methods))
    return [by_input[i] for i in checked]
