"""Errors that the CLI turns into one clear line (no traceback), and the exit codes of the CLI."""

EXIT_ERROR = 2  # a MauError: one line on stderr
# a run of matches that ended with failed matches (within --max-failures): its folder holds fewer matches than
# planned, so ``mau collect ... && mau dataset ...`` must not go on; rerun with --resume to play them
EXIT_FAILED_MATCHES = 3


class MauError(Exception):
    """An error whose message is complete: it names the field and the fix."""


class ConfigError(MauError):
    """Bad config or data file."""
