"""The errors a module raises. A `ModuleError` is the user's mistake (bad input, a parameter out
of range): it is shown as `<ClassName>: <message>`, without a traceback; the named subclasses
carry the error names of the original designer. Anything else is shown with its traceback.
"""
from __future__ import annotations


class ModuleError(Exception):
    """An error a module raises on bad input; shown to the user as `<ClassName>: <message>`."""


class InvalidDatasetError(ModuleError):
    pass


class NotInRangeValueError(ModuleError):
    pass


class InvalidModelDirectoryError(ModuleError):
    pass


class InvalidTransformationDirectoryError(ModuleError):
    pass


class NotLabeledDatasetError(ModuleError):
    pass


class InvalidInputTypeError(ModuleError):
    pass


class DistributedLaunchError(ModuleError):
    """A distributed job could not start, or one of its processes failed or was lost."""


class Cancelled(Exception):
    """The user cancelled the run while this node was working (raised by ctx.check_cancelled())."""


def prefixed(module_label: str, text: str) -> str:
    """`<module label>: <text>`, the shape of every error message a user reads; the text alone
    when no label is given (a training process run from its command line)."""
    return f"{module_label}: {text}" if module_label else text


def labelled(error: ModuleError, module_label: str) -> ModuleError:
    """The same error, its message prefixed with the module's label: what a module raises again
    when a lower layer (training) refuses its input without knowing which module asked."""
    return type(error)(prefixed(module_label, str(error)))


class CommandFailed(ModuleError):
    """A component's command exited with an error: the message holds its exit code and the last
    lines of its output (the end of a traceback)."""

    def __init__(self, message: str, exit_code: int | None = None, tail: str = ""):
        super().__init__(message)
        self.exit_code = exit_code
        self.tail = tail


class CommandTimedOut(ModuleError):
    """A component's command ran past its Timeout (a run setting) and was ended."""


class EmptyOutput(ModuleError):
    """A component's command finished but wrote nothing to one of its output folders."""
