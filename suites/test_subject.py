"""The reference model's tests generated from its subject, as a user's would be."""

from gradcheck.subject_tests import *  # noqa: F403
