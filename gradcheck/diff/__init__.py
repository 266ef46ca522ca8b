"""``gradcheck diff``: a subject's checks run at two revisions in worker processes, and
what changed (verdicts, values, speed) rendered.

Imports :mod:`gradcheck.report.render`, :mod:`gradcheck.run`, :mod:`gradcheck.subject` and
below.
"""
