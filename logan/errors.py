"""Errors a user can act on, and the exit statuses of the `logan` command.

The CLI prints an error's message on one line, never a traceback (docs/reliability.md).
"""

EXIT_OK = 0
EXIT_FAILURE = 1  # logan could not finish: the store cannot be written, the disk is full
EXIT_USAGE = 2  # a bad option, or input logan cannot read: nothing, or nothing more, was done
EXIT_PARTIAL = 3  # done, but part of the input was skipped or rejected past the allowed share


class LoganError(ValueError):
    """A problem with the user's input or options, explained in the message."""


class FormatError(LoganError):
    """A format string that cannot be compiled."""


class StoreError(LoganError):
    """A store that cannot be used now (another process writes it, the disk is full): not
    the user's input, so the command fails with EXIT_FAILURE."""


def interrupted(exc: BaseException) -> bool:
    """Whether `exc` is Ctrl-C (or a SIGTERM made one). A signal that lands while DuckDB runs
    a query ends that query with RuntimeError('Query interrupted'), not KeyboardInterrupt."""
    if isinstance(exc, KeyboardInterrupt):
        return True
    return isinstance(exc, RuntimeError) and str(exc) == "Query interrupted"
