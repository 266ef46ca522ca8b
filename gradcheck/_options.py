"""The options every check takes, their defaults, and the one validator they share.

``check_vjp``, ``check_layer``, ``check_loss`` and ``check_model`` accept the same
keyword-only options; :func:`validate_options` checks them all up front and says exactly
which argument is wrong and what was expected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["DEFAULT_RTOL", "METHODS", "MODES", "NOISE_ULPS", "SAFETY", "Options",
           "validate_options"]

MODES = ("auto", "full", "sampled", "directional")
METHODS = ("auto", "central", "richardson", "complex")

#: Default relative tolerance by dtype.  float64 catches a relative error of 1e-6.
DEFAULT_RTOL: dict[str, float] = {"float64": 1e-7, "float32": 2e-5, "float16": 1e-2}
#: Multiplier on the estimated error of the numerical derivative that gives ``atol``.
SAFETY = 8.0
#: Rounding error assumed per changed output, in units of eps times its magnitude.
NOISE_ULPS = 2.0


@dataclass(frozen=True)
class Options:
    """Validated options of one check (see :func:`gradcheck.check_vjp` for each)."""

    seed: int = 0
    mode: str = "auto"
    method: str = "auto"
    atol: float | None = None
    rtol: float | None = None
    directions: int = 4
    samples: int = 64
    budget: int = 20_000
    localise: bool = True
    full_threshold: int = 0
    name: str = ""


def _int_at_least(label: str, value: Any, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{label} must be an integer >= {low}, got {value!r}")
    return int(value)


def _tolerance(label: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{label} must be a float or None, got {type(value).__name__}")
    if not math.isfinite(float(value)) or float(value) < 0:
        raise ValueError(f"{label} must be finite and >= 0, got {value!r}")
    return float(value)


def validate_options(**options: Any) -> Options:
    """Check every keyword option and return them as :class:`Options`.

    Raises
    ------
    TypeError
        For an unknown option or a value of the wrong type.
    ValueError
        For a value out of range, naming the option and what was expected.
    """
    known = {f for f in Options.__dataclass_fields__}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; expected some of "
                        f"{', '.join(sorted(known))}")
    o = {**Options().__dict__, **options}
    seed = o["seed"]
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if o["mode"] not in MODES:
        raise ValueError(f"mode must be one of {', '.join(MODES)}; got {o['mode']!r}")
    if o["method"] not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}; got {o['method']!r}")
    if not isinstance(o["localise"], bool):
        raise TypeError(f"localise must be True or False, got {o['localise']!r}")
    if not isinstance(o["name"], str):
        raise TypeError(f"name must be a string, got {type(o['name']).__name__}")
    return Options(
        seed=int(seed), mode=str(o["mode"]), method=str(o["method"]),
        atol=_tolerance("atol", o["atol"]), rtol=_tolerance("rtol", o["rtol"]),
        directions=_int_at_least("directions", o["directions"], 1),
        samples=_int_at_least("samples", o["samples"], 1),
        budget=_int_at_least("budget", o["budget"], 1),
        localise=o["localise"],
        full_threshold=_int_at_least("full_threshold", o["full_threshold"], 0),
        name=o["name"],
    )
