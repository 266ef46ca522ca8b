"""How the readings' tests state a verdict: a pass, or a mismatch in exactly the named
inputs and parameters (a correct subject and its broken twin)."""

import gradcheck


def failing(res: gradcheck.CheckResult) -> list[str]:
    """The names of the inputs and parameters that did not pass, in the result's order."""
    return [i.name for i in res.inputs if not i.passed]


def expect(res: gradcheck.CheckResult, names: list[str] | None) -> None:
    """A pass (``names`` None), or a mismatch in exactly ``names``."""
    if names is None:
        assert res.passed, res.report()
    else:
        assert res.status == "mismatch" and failing(res) == names, res.report()
