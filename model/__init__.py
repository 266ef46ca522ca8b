"""model: a compact NumPy transformer with a hand-written backward for every part."""

from .anomaly import NonFiniteValueError
from .bench.perf import tune_allocator
from .config import ACTIVATION_NAMES, LOSS_NAMES, Config
from .transformer import ModelCache, Transformer

__all__ = [
    "ACTIVATION_NAMES",
    "LOSS_NAMES",
    "Config",
    "ModelCache",
    "NonFiniteValueError",
    "Transformer",
    "tune_allocator",
]
