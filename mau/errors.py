"""Errors that the CLI turns into one clear line (no traceback)."""


class MauError(Exception):
    """An error whose message is complete: it names the field and the fix."""


class ConfigError(MauError):
    """Bad config or data file."""
