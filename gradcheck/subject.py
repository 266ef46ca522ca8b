"""A subject: one declaration of what to verify, handed to the report, the snapshots,
the budgets, the fuzzing and the pytest suites.

The tools know no model of their own: they receive a :class:`Subject` as an argument. A
subject declares layer cases (functional ``fwd``/``bwd``, layer objects, or element-wise
``f``/``f.gradient``, each with an input factory), optionally a model with a batch
factory, a training run, the timings and memory of its forwards (with the table of their
thresholds and the report's tables of them), snapshot cases and the folder of their
recorded snapshot, its own code and test commands. What it does not declare is "not
applicable" in the report, with the reason: never a failure, never silently missing,
never another subject's values. :data:`DEFAULT_SUBJECT` names the subject of every
command run without ``--subject`` (declared as an entry point by the distribution that
ships it).

Example
-------
>>> SUBJECT = Subject(
...     name="my layers",
...     layers=[LayerCase("dense", inputs=lambda rng, dt: [rng.standard_normal((4, 3))
...                                                       .astype(dt)],
...                       layer=lambda rng, dt: Dense(3, 2, rng, dt))],
... )
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["DEFAULT_SUBJECT", "BudgetSection", "ElementwiseCase", "LayerCase", "ModelCase",
           "Subject", "SubjectError", "TrainingRun", "load_subject"]

#: Entry-point group in which a distribution names its default subject (``default``).
SUBJECT_GROUP = "gradcheck.subjects"


def _installed_default() -> str:
    """``MODULE:NAME`` of the installed default subject, or ``""`` when none is declared
    (this project declares its reference model in ``pyproject.toml``)."""
    from importlib.metadata import entry_points

    found = [ep.value for ep in entry_points(group=SUBJECT_GROUP) if ep.name == "default"]
    return found[0] if found else ""


#: ``MODULE:NAME`` of the subject of every command run without ``--subject``: the entry
#: point ``default`` of the group :data:`SUBJECT_GROUP`; ``""`` when none is installed.
DEFAULT_SUBJECT = _installed_default()

Inputs = Callable[[np.random.Generator, np.dtype[Any]], Any]


class SubjectError(Exception):
    """``MODULE:NAME`` does not name a :class:`Subject`; the message says why."""


@dataclass(frozen=True)
class LayerCase:
    """One layer to check, in each of ``dtypes``.

    Attributes
    ----------
    name : str
    inputs : callable
        ``(rng, dtype) -> inputs`` for :func:`~gradcheck.check_vjp` (a list or dict), or
        the positional inputs (a list) of ``layer.forward``.
    fwd, bwd : callable, optional
        The functional protocol ``y, cache = fwd(*inputs)``, ``grads = bwd(dy, cache)``.
    layer : callable, optional
        ``(rng, dtype) -> layer object`` for :func:`~gradcheck.check_layer` (instead of
        ``fwd``/``bwd``); ``forward``/``backward`` name its methods.
    wrt : optional
        As for :func:`~gradcheck.check_vjp`.
    dtypes : tuple of str
    options : mapping
        Further options of the check (``rtol``, ``mode``...).
    """

    name: str
    inputs: Inputs
    fwd: Callable[..., Any] | None = None
    bwd: Callable[..., Any] | None = None
    layer: Callable[[np.random.Generator, np.dtype[Any]], Any] | None = None
    forward: str = "forward"
    backward: str = "backward"
    wrt: Any = None
    dtypes: tuple[str, ...] = ("float64", "float32")
    options: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        functional = self.fwd is not None and self.bwd is not None
        if functional == (self.layer is not None):
            raise TypeError(f"LayerCase {self.name!r}: give fwd and bwd, or layer (not both)")

    def check(self, dtype: str, seed: int = 0) -> Any:
        """Run the check in ``dtype``; the inputs are drawn from ``default_rng(seed)``."""
        from .check._core import check_vjp
        from .check._layer import check_layer

        rng = np.random.default_rng(seed)
        dt = np.dtype(dtype)
        inputs = self.inputs(rng, dt)
        label = f"{self.name} [{dtype}]"
        opts = {"seed": seed, "name": label, **self.options}
        if self.layer is not None:
            layer = self.layer(rng, dt)
            return check_layer(layer, *inputs, forward=self.forward, backward=self.backward,
                               wrt=self.wrt, **opts)
        if self.fwd is None or self.bwd is None:  # pragma: no cover - __post_init__
            raise TypeError(f"LayerCase {self.name!r} has neither fwd/bwd nor layer")
        return check_vjp(self.fwd, self.bwd, inputs, wrt=self.wrt, **opts)


class _ElementwiseForward:
    """``y, cache = fwd(*xs)`` of an element-wise ``f``: the cache is a copy of the
    arguments."""

    def __init__(self, f: Callable[..., Any]) -> None:
        self.f = f

    def __call__(self, *xs: Any) -> tuple[Any, list[Any]]:
        return self.f(*xs), [np.array(x, copy=True) if isinstance(x, np.ndarray) else x
                             for x in xs]


class _ElementwiseBackward:
    """``grads = bwd(dy, cache)`` of an element-wise derivative ``df``: ``dy * df(*xs)``
    for the argument ``wrt``, ``None`` (a constant) for the others."""

    def __init__(self, df: Callable[..., Any], wrt: int) -> None:
        self.df, self.wrt = df, wrt

    def __call__(self, dy: Any, xs: list[Any]) -> list[Any]:
        grads: list[Any] = [None] * len(xs)
        grads[self.wrt] = np.asarray(self.df(*xs)) * dy
        return grads


@dataclass(frozen=True)
class ElementwiseCase(LayerCase):
    """An element-wise function and its derivative, ``f(x)`` and ``f.gradient(x)``, as
    the activation and loss objects of from-scratch libraries write them; checked with
    :func:`~gradcheck.check_elementwise`. Give ``f`` and ``df`` by keyword::

        ElementwiseCase("sigmoid", inputs=lambda rng, dt: [rng.standard_normal((4, 5))
                                                          .astype(dt)], f=Sigmoid())

    Attributes
    ----------
    f : callable
        ``y = f(*inputs)``; element ``i`` of ``y`` depends on element ``i`` of
        ``inputs[wrt]`` only.
    df : callable, optional
        ``df(*inputs)``: ``d y[i] / d inputs[wrt][i]`` (default: ``f.gradient``).
    wrt : int
        The input to differentiate (default 0; the others are constants, such as the
        targets of a loss ``f(y, y_pred)`` with ``wrt=1``).

    ``fwd`` and ``bwd`` are set from them (``dy * df(*inputs)``), so that every tool
    that runs a layer case (values, timings and NaN/Inf fuzzing) runs this one too.
    """

    f: Callable[..., Any] | None = None
    df: Callable[..., Any] | None = None

    def __post_init__(self) -> None:
        if self.fwd is not None or self.bwd is not None or self.layer is not None:
            raise TypeError(f"ElementwiseCase {self.name!r}: give f= (and df=) by keyword, "
                            "not fwd, bwd or layer")
        if not callable(self.f):
            raise TypeError(f"ElementwiseCase {self.name!r}: f must be callable, got "
                            f"{type(self.f).__name__}")
        df = self.df if self.df is not None else getattr(self.f, "gradient", None)
        if not callable(df):
            raise TypeError(f"ElementwiseCase {self.name!r}: give df= (the element-wise "
                            f"derivative); {getattr(self.f, '__name__', type(self.f).__name__)}"
                            " has no gradient method")
        wrt = 0 if self.wrt is None else self.wrt
        if isinstance(wrt, bool) or not isinstance(wrt, int) or wrt < 0:
            raise TypeError(f"ElementwiseCase {self.name!r}: wrt must be the index of one "
                            f"input, got {self.wrt!r}")
        for name, value in (("df", df), ("wrt", wrt), ("fwd", _ElementwiseForward(self.f)),
                            ("bwd", _ElementwiseBackward(df, wrt))):
            object.__setattr__(self, name, value)

    def check(self, dtype: str, seed: int = 0) -> Any:
        """Run :func:`~gradcheck.check_elementwise` in ``dtype`` (inputs drawn from
        ``default_rng(seed)``)."""
        from .check._elementwise import check_elementwise

        inputs = self.inputs(np.random.default_rng(seed), np.dtype(dtype))
        if self.f is None or self.df is None:  # pragma: no cover - __post_init__
            raise TypeError(f"ElementwiseCase {self.name!r} has no f or df")
        return check_elementwise(self.f, self.df, *inputs, wrt=self.wrt, seed=seed,
                                 name=f"{self.name} [{dtype}]", **self.options)


@dataclass(frozen=True)
class ModelCase:
    """One model to check with :func:`~gradcheck.check_model`.

    ``build()`` returns ``(model, batch)``: an object with ``params`` / ``loss`` /
    ``loss_and_grads`` and the arguments of ``loss``. ``twin()``, for a float32 model,
    returns the same model in float64 (any parameter values: the float32 model's are
    copied in) to check the float32 gradients against (``check_model(twin=...)``).
    """

    name: str
    build: Callable[[], tuple[Any, tuple[Any, ...]]]
    options: Mapping[str, Any] = field(default_factory=dict)
    twin: Callable[[], Any] | None = None

    def check(self, seed: int = 0) -> Any:
        from .check._model_check import check_model
        from .check._twin import with_values_of

        model, batch = self.build()
        options = {"full_threshold": 10**6, **self.options}
        narrow = any(np.asarray(v).dtype.itemsize < 8 for v in model.params.values())
        if self.twin is not None and narrow:
            options["twin"] = with_values_of(self.twin(), model)
        return check_model(model, *batch, seed=seed, name=self.name, **options)


@dataclass(frozen=True)
class TrainingRun:
    """One training run's losses per epoch (criteria 1 and 2).

    ``stress`` marks a run meant to provoke NaN/Inf (a huge learning rate): it counts
    for criterion 2 (parameters stay finite), not for criterion 1 (the loss falls).
    """

    label: str
    losses: Sequence[float]
    finite: bool
    refused_steps: int = 0
    stress: bool = False

    @property
    def reduction(self) -> float:
        if len(self.losses) < 2 or self.losses[0] == 0:
            return 0.0
        return 1.0 - float(self.losses[-1]) / float(self.losses[0])


@dataclass(frozen=True)
class BudgetSection:
    """A table of the report built from some of the subject's budget results.

    Attributes
    ----------
    id, title : str
        The section's anchor and heading.
    budgets : sequence of str
        The names of the :class:`~gradcheck.report.budgets.BudgetResult` rows it shows, in the
        order the budgets were measured.
    row : callable
        ``BudgetResult -> mapping`` of column -> value (the columns are those of the
        first row).
    text : str
        The paragraph above the table; ``{cpu}``, ``{blas}``, ``{blas_core_type}`` and
        the other keys of :func:`gradcheck.report.render.environment` are filled in.
    empty : callable, optional
        ``() -> str``: the text when no budget of the section was measured; without it
        the section is left out then.
    """

    id: str
    title: str
    budgets: Sequence[str]
    row: Callable[[Any], Mapping[str, Any]]
    text: str = ""
    empty: Callable[[], str] | None = None


@dataclass(frozen=True)
class Subject:
    """What to verify. Every field but ``name`` is optional.

    Attributes
    ----------
    name : str
    layers : sequence of LayerCase
        Checked in every dtype they list (criterion 4); :class:`ElementwiseCase` for an
        element-wise ``f`` and its derivative.
    model : callable, optional
        ``dtype -> model`` (``params``, ``loss``, ``loss_and_grads``), with ``batch``:
        ``(model, rng) -> tuple of loss arguments``. Checked in both dtypes unless
        ``model_cases`` says otherwise (criteria 3 and 4).
    batch : callable, optional
    model_cases : callable, optional
        ``(level, seed) -> sequence of ModelCase`` (levels ``quick``, ``default``,
        ``full``): the configurations to check at each level of the report.
    training : callable, optional
        ``(level, seed) -> sequence of TrainingRun`` (criteria 1 and 2).
    budgets : callable, optional
        ``level -> list of BudgetResult`` (criteria 5 to 9), measured with the tools of
        :mod:`gradcheck.report.budgets`.
    budget_table : str, optional
        The TOML table of the budgets' thresholds (name -> ``criterion``, ``title``,
        ``threshold``; :func:`gradcheck.report.budgets.load_budgets` reads it; relative paths
        from the folder of the subject's module). Criterion N (5 to 9) of the report is
        judged on the budgets the table assigns to N; without a table, on the gated
        results whose ``criterion`` is N.
    budget_sections : sequence of BudgetSection
        Further tables of the report made of budget results (speed comparisons, the
        cost of a check, tokens per second...).
    snapshot_cases : mapping, optional
        name -> ``() -> (arrays, description)``: the fixed cases ``gradcheck snapshot``
        records and ``gradcheck compare`` recomputes.
    snapshot_dir : str, optional
        The folder of the subject's recorded snapshot that ``gradcheck report`` compares
        with when no ``--snapshots`` is given (relative: from the folder of the
        subject's module).
    flow : callable, optional
        ``seed -> list of str``: parameters that receive an all-zero gradient where they
        should not (criterion 3, beside the flow audit of the model checks).
    description : str
    code : sequence of str, optional
        The files and folders of the subject's own code that coverage (criterion 10)
        and the security scan (criterion 11) look at; relative paths are relative to
        the folder of the module that defines the subject. Default: that module's
        file alone.
    security_select, security_ignore : sequence of str
        ruff rule codes (or prefixes) of the security scan, and those left out
        (default: the bandit rules ``S``, without ``S101``, the use of ``assert``).
    test_commands : sequence of sequence of str, optional
        The commands of the subject's test run (criteria 10 and 12), as argument lists
        run in ``test_dir`` by ``gradcheck report --with-tests``. ``{python}`` is this
        interpreter, ``{reports}`` the report's folder, and an argument ``{cov}``
        becomes ``--cov=PATH`` for each path of ``code``. They must write
        ``{reports}/coverage.json`` (``--cov-report=json:...``) and
        ``{reports}/junit.xml`` (more ``junit-*.xml`` files are added up). Without
        them criteria 10 and 12 are not applicable.
    test_dir : str, optional
        Where the test commands run (relative: from the folder of the subject's
        module; default: the current directory), and what the relative file names in
        ``coverage.json`` are relative to.
    """

    name: str
    layers: Sequence[LayerCase] = ()
    model: Callable[[str], Any] | None = None
    batch: Callable[[Any, np.random.Generator], tuple[Any, ...]] | None = None
    model_cases: Callable[[str, int], Sequence[ModelCase]] | None = None
    training: Callable[[str, int], Sequence[TrainingRun]] | None = None
    budgets: Callable[[str], list[Any]] | None = None
    budget_table: str | None = None
    budget_sections: Sequence[BudgetSection] = ()
    snapshot_cases: Mapping[str, Callable[[], tuple[dict[str, np.ndarray], dict[str, Any]]]] \
        | None = None
    flow: Callable[[int], list[str]] | None = None
    description: str = ""
    code: Sequence[str] | None = None
    security_select: Sequence[str] = ("S",)
    security_ignore: Sequence[str] = ("S101",)
    test_commands: Sequence[Sequence[str]] | None = None
    test_dir: str | None = None
    snapshot_dir: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError("Subject.name must be a non-empty string")
        for case in self.layers:
            if not isinstance(case, LayerCase):
                raise TypeError(f"Subject.layers must hold LayerCase objects, got "
                                f"{type(case).__name__}")
        if (self.model is None) != (self.batch is None) and self.model_cases is None:
            raise TypeError("Subject: give model and batch together")
        _check_strings("code", self.code, allow_none=True)
        _check_strings("security_select", self.security_select)
        _check_strings("security_ignore", self.security_ignore)
        if self.test_commands is not None:
            if isinstance(self.test_commands, str) or not self.test_commands:
                raise TypeError("Subject.test_commands must be a non-empty sequence of "
                                "argument lists, such as [['{python}', '-m', 'pytest']]")
            for k, cmd in enumerate(self.test_commands):
                _check_strings(f"test_commands[{k}]", cmd)
                if not cmd:
                    raise TypeError(f"Subject.test_commands[{k}] is empty")
        for label in ("test_dir", "snapshot_dir", "budget_table"):
            value = getattr(self, label)
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Subject.{label} must be a string, got "
                                f"{type(value).__name__}")
        for section in self.budget_sections:
            if not isinstance(section, BudgetSection):
                raise TypeError(f"Subject.budget_sections must hold BudgetSection objects, "
                                f"got {type(section).__name__}")

    def models(self, level: str, seed: int = 0) -> list[ModelCase]:
        """The model cases of ``level``: ``model_cases(level)``, or the model in both
        dtypes."""
        if self.model_cases is not None:
            return list(self.model_cases(level, seed))
        if self.model is None or self.batch is None:
            return []
        make, batch = self.model, self.batch

        def build(dtype: str) -> Callable[[], tuple[Any, tuple[Any, ...]]]:
            def run() -> tuple[Any, tuple[Any, ...]]:
                m = make(dtype)
                return m, tuple(batch(m, np.random.default_rng(seed)))
            return run

        return [ModelCase(f"{self.name} model [float64]", build("float64")),
                ModelCase(f"{self.name} model [float32]", build("float32"),
                          twin=lambda: make("float64"))]


def _check_strings(label: str, value: Any, *, allow_none: bool = False) -> None:
    """``value`` is a sequence (not a string) of strings."""
    if value is None and allow_none:
        return
    if isinstance(value, str) or not isinstance(value, Sequence) or \
            not all(isinstance(v, str) for v in value):
        raise TypeError(f"Subject.{label} must be a list or tuple of strings, got {value!r}")


def load_subject(spec: str) -> Subject:
    """The :class:`Subject` named by ``"MODULE:NAME"`` (such as :data:`DEFAULT_SUBJECT`).

    Raises
    ------
    SubjectError
        With a one-line reason: malformed, no such module, no such attribute, not a
        Subject.
    """
    if spec == "":
        raise SubjectError(f"no subject named (--subject MODULE:NAME) and no default "
                           f"subject installed (entry point 'default' in {SUBJECT_GROUP!r})")
    if not isinstance(spec, str) or spec.count(":") != 1 or not all(spec.split(":")):
        raise SubjectError(f"--subject must look like MODULE:NAME, got {spec!r}")
    module_name, attr = spec.split(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise SubjectError(f"no module named {exc.name!r} (from {spec!r}); is it on "
                           "sys.path, or installed?") from None
    except Exception as exc:
        raise SubjectError(f"importing {module_name!r} raised {type(exc).__name__}: {exc}") \
            from None
    if not hasattr(module, attr):
        raise SubjectError(f"module {module_name!r} has no attribute {attr!r}")
    subject = getattr(module, attr)
    if not isinstance(subject, Subject):
        raise SubjectError(f"{spec} is a {type(subject).__name__}, not a gradcheck.Subject")
    return subject
