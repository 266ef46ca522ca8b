"""The options every check takes, their defaults, and the one validator they share.

``check_vjp`` (and ``check_grad``), ``check_layer``, ``check_loss`` and ``check_model``
accept the same keyword-only options with the same defaults (the fields of
:class:`Options`); :func:`validate_options` checks them all up front and says exactly
which argument is wrong and what was expected. Two options steer mode ``"auto"`` and
apply where that mode works by them (:data:`APPLIES_TO`): ``budget`` to the checks of
functions and layers, ``full_threshold`` to ``check_model``; given to another entry
point, either is an error that says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["APPLIES_TO", "DEFAULT_RTOL", "ENTRY_POINTS", "METHODS", "MODES", "NOISE_ULPS",
           "SAFETY", "Options", "check_applies", "validate_options"]

MODES = ("auto", "full", "sampled", "directional")
METHODS = ("auto", "central", "richardson", "complex")

#: Default relative tolerance by dtype.  float64 catches a relative error of 1e-6.
DEFAULT_RTOL: dict[str, float] = {"float64": 1e-7, "float32": 2e-5, "float16": 1e-2}
#: Multiplier on the estimated error of the numerical derivative that gives ``atol``.
SAFETY = 8.0
#: Rounding error assumed per changed output, in units of eps times its magnitude.
NOISE_ULPS = 2.0

#: The entry points that take these options.
ENTRY_POINTS = ("check_vjp", "check_grad", "check_layer", "check_loss", "check_model")
#: Options that apply to some entry points only (every other option applies to all).
APPLIES_TO: dict[str, tuple[str, ...]] = {
    "budget": ("check_vjp", "check_grad", "check_layer", "check_loss"),
    "full_threshold": ("check_model",),
}
_WHY = {
    "budget": "mode 'auto' of check_model checks tensors of at most full_threshold "
              "elements element by element",
    "full_threshold": "mode 'auto' of {entry} checks every element while "
                      "2 * elements <= budget",
}


@dataclass(frozen=True)
class Options:
    """The keyword-only options every check takes, with their defaults.

    Attributes
    ----------
    seed : int
        Seeds the ``numpy.random.Generator`` of the cotangent ``dy``, the directions and
        the samples; printed in every failure message.
    mode : {"auto", "full", "sampled", "directional"}
        ``full``: every element (elements the forward keeps apart, such as the rows of
        a LayerNorm, move together, each credited with its own outputs; one that does
        not pass at once is judged alone). ``sampled``: ``samples`` random elements
        per input. ``directional``: at most ``directions`` random directions spanning
        all inputs (or parameter tensors) together, 2 evaluations each; after two,
        only those whose stated probability of missing a relative 1e-4 error is above
        1e-6 stay in them. ``auto``: ``full`` while ``2 * elements <= budget``
        (``check_model``: tensors of at most ``full_threshold`` elements in full, the
        others along joint directions).
    method : {"auto", "central", "richardson", "complex"}
        ``central`` (2 evaluations per element, failures re-examined with Richardson
        extrapolation and kink detection), ``richardson`` (4), ``auto`` (``central``
        for float64, ``richardson`` for narrower floats), ``complex`` (the complex
        step, used only once it agrees with finite differences; not for models).
    atol, rtol : float or None
        Override the tolerance ``|a - n| <= atol + rtol * |n|``; by default ``atol``
        comes from the estimated error of each numerical derivative and ``rtol`` from
        the dtype (:data:`DEFAULT_RTOL`).
    directions, samples : int
        See ``mode``.
    budget : int
        Evaluations mode ``auto`` may spend on a full check (functions and layers).
    full_threshold : int
        ``check_model`` only: see ``mode``; 0 checks every tensor jointly.
    localise : bool
        After a directional failure, bisect the inputs down to the wrong ones, then
        find their wrong elements.
    name : str
        A label for reports.
    """

    seed: int = 0
    mode: str = "auto"
    method: str = "auto"
    atol: float | None = None
    rtol: float | None = None
    directions: int = 6
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


def check_applies(entry: str, options: Any) -> None:
    """Raise ``TypeError`` if an option in ``options`` does not apply to ``entry``."""
    for key in sorted(set(options) & set(APPLIES_TO)):
        if entry not in APPLIES_TO[key]:
            raise TypeError(f"{entry}: option {key} applies to {', '.join(APPLIES_TO[key])} "
                            f"only ({_WHY[key].format(entry=entry)})")


def validate_options(entry: str = "check_vjp", /, **options: Any) -> Options:
    """Check every keyword option of ``entry`` and return them as :class:`Options`.

    Raises
    ------
    TypeError
        For an unknown option, an option that does not apply to ``entry``
        (:data:`APPLIES_TO`) or a value of the wrong type.
    ValueError
        For a value out of range, naming the option and what was expected.
    """
    if entry not in ENTRY_POINTS:
        raise ValueError(f"entry must be one of {', '.join(ENTRY_POINTS)}; got {entry!r}")
    known = {f for f in Options.__dataclass_fields__}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"unknown option(s) {', '.join(unknown)}; expected some of "
                        f"{', '.join(sorted(known))}")
    check_applies(entry, options)
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
