"""The one JSON cleaner: any result, report or snapshot data -> standard JSON types.

NumPy scalars and arrays become Python numbers and lists, tuples lists, dict keys
strings, and non-finite floats the strings ``"nan"``, ``"inf"``, ``"-inf"`` (standard JSON
has no literal for them). Results sent from pytest-xdist workers go through it too.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["plain"]


def plain(value: Any) -> Any:
    """``value`` with every part converted to a standard JSON type."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return float(value)
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "tolist") and callable(value.tolist):  # NumPy scalars and arrays
        return plain(value.tolist())
    if hasattr(value, "item") and callable(value.item):
        return plain(value.item())
    return str(value)
