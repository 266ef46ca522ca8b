"""The verification report: the run of a subject's checks, budgets, gradient snapshots,
the environment, the test results read back, and their rendering (terminal, HTML, JSON,
Markdown).

Imports :mod:`gradcheck.run`, :mod:`gradcheck.catalog.bugs`, :mod:`gradcheck.check`,
:mod:`gradcheck.subject` and nothing above them.
"""
