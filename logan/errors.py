"""Errors a user can act on: the CLI prints their message, never a traceback."""


class LoganError(ValueError):
    """A problem with the user's input or options, explained in the message."""


class FormatError(LoganError):
    """A format string that cannot be compiled."""
