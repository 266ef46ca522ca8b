"""The version of gradcheck, in one place (the package root and the environment probe read it)."""

__version__ = "0.1.0"
